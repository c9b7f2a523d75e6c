//! Link utilization over time, as the results folder plots it: the bytes
//! each ToR's EPS uplink and downlink and each OCS port (sending side)
//! carried, counted into equal time bins; and their current utilization,
//! the load samples a network-aware task scheduler reads.
//!
//! The fluid model moves bytes at constant rates between events, so the
//! bytes a link carries in a bin are exact: each stretch `[from, to)` at a
//! constant rate is split over the bins it overlaps. A bin's utilization is
//! its bytes ÷ (link rate × bin width), the mean over the bin, which is what
//! a sampler reading a link's byte counter at the bin edges would report.
//!
//! Memory is bounded: bins start [`FIRST_BIN`] wide, and when a run outgrows
//! [`MAX_BINS`] bins, neighbours are merged pairwise (the width doubles), so
//! any run length ends with between `MAX_BINS / 2` and `MAX_BINS` bins and
//! no byte is lost. Recording a stretch costs O(links busy × bins crossed).

use super::links::LinkKind;
use ocslab_core::coflow::FabricParams;
pub use ocslab_core::outcome::{link_name, LinkSeries};
use ocslab_core::Nanos;

/// Width of the bins at the start of a run.
pub const FIRST_BIN: Nanos = Nanos(10_000_000);

/// Most bins kept per link before neighbours are merged.
pub const MAX_BINS: usize = 4096;

/// The bytes the tracked links carried, per time bin.
#[derive(Clone, Debug)]
pub struct LinkUsage {
    racks: u32,
    ports: u32,
    links: Vec<LinkKind>,
    capacity: Vec<f64>,
    /// Current rate of each link, bytes per second.
    rate: Vec<f64>,
    /// Bytes per bin per link, bin-major (bin `b` of link `i` at
    /// `b · links + i`): a stretch within one bin adds to one contiguous row.
    bins: Vec<f64>,
    width: u64,
    /// Bytes each link has carried since time 0.
    carried: Vec<f64>,
    /// The time the links have been advanced to.
    now: Nanos,
    /// When the last mean was taken, and what each link had carried then.
    sampled: (Nanos, Vec<f64>),
}

impl LinkUsage {
    /// Tracks the EPS uplink (ToR → core) of every rack, then every
    /// downlink (core → ToR), then the sending side of every OCS port of `fabric`.
    pub fn new(fabric: &FabricParams) -> LinkUsage {
        let mut links = Vec::new();
        let mut capacity = Vec::new();
        for r in 0..fabric.racks {
            links.push(LinkKind::TorUp(r));
            capacity.push(fabric.uplink_rate.bytes_per_sec());
        }
        for r in 0..fabric.racks {
            links.push(LinkKind::TorDown(r));
            capacity.push(fabric.uplink_rate.bytes_per_sec());
        }
        for r in 0..fabric.racks {
            for port in 0..fabric.ocs_ports {
                links.push(LinkKind::OcsPort { rack: r, port });
                capacity.push(fabric.ocs_port_rate.bytes_per_sec());
            }
        }
        LinkUsage {
            racks: fabric.racks,
            ports: fabric.ocs_ports,
            rate: vec![0.0; links.len()],
            carried: vec![0.0; links.len()],
            now: Nanos::ZERO,
            sampled: (Nanos::ZERO, vec![0.0; links.len()]),
            bins: Vec::new(),
            links,
            capacity,
            width: FIRST_BIN.0,
        }
    }

    /// The index of `link` among the tracked links, if it is tracked.
    pub fn index(&self, link: LinkKind) -> Option<usize> {
        let (racks, ports) = (self.racks, self.ports);
        match link {
            LinkKind::TorUp(r) if r < racks => Some(r as usize),
            LinkKind::TorDown(r) if r < racks => Some((racks + r) as usize),
            LinkKind::OcsPort { rack, port } if rack < racks && port < ports => {
                Some((2 * racks + rack * ports + port) as usize)
            }
            _ => None,
        }
    }

    /// Each tracked link's utilization now (its current rate ÷ its capacity).
    pub fn current(&self) -> impl Iterator<Item = (LinkKind, f64)> + '_ {
        self.links.iter().enumerate().map(|(i, &l)| {
            let cap = self.capacity[i];
            (l, if cap > 0.0 { self.rate[i] / cap } else { 0.0 })
        })
    }

    /// Each tracked link's mean utilization since the previous call (or
    /// since time 0), up to the time the links were advanced to: what a
    /// reading of byte counters gives, as the emulator's sampler does.
    pub fn mean_since_last(&mut self) -> Vec<(LinkKind, f64)> {
        let (at, before) = &self.sampled;
        let span = self.now.0.saturating_sub(at.0) as f64 / 1e9;
        let means = self
            .links
            .iter()
            .enumerate()
            .map(|(i, &l)| {
                let cap = self.capacity[i];
                let u = match (cap > 0.0, span > 0.0) {
                    (false, _) => 0.0,
                    (true, true) => (self.carried[i] - before[i]) / (cap * span),
                    (true, false) => self.rate[i] / cap,
                };
                (l, u)
            })
            .collect();
        self.sampled = (self.now, self.carried.clone());
        means
    }

    /// Sets the current rate of every tracked link, in tracking order
    /// (uplinks, downlinks, OCS ports: the order of their ids in
    /// [`super::links::LinkMap`] from [`super::links::LinkMap::first_tracked`]).
    pub fn set_rates(&mut self, bytes_per_s: &[f64]) {
        for (r, &new) in self.rate.iter_mut().zip(bytes_per_s) {
            *r = new.max(0.0);
        }
    }

    /// The links carried their current rates from `from` to `to`.
    pub fn advance(&mut self, from: Nanos, to: Nanos) {
        if to <= from {
            return;
        }
        let span_s = (to.0 - from.0) as f64 / 1e9;
        for (c, rate) in self.carried.iter_mut().zip(&self.rate) {
            *c += rate * span_s;
        }
        self.now = to;
        while to.0.div_ceil(self.width) as usize > MAX_BINS {
            self.coarsen();
        }
        let (w, n) = (self.width, self.links.len());
        // The bins up to the last one this stretch reaches.
        let reach = to.0.div_ceil(w) as usize;
        if self.bins.len() < reach * n {
            self.bins.resize(reach * n, 0.0);
        }
        // The stretch bin by bin (mostly one), every link within it (an
        // idle link adds 0).
        let mut t = from.0;
        while t < to.0 {
            let b = (t / w) as usize;
            let edge = ((b as u64 + 1) * w).min(to.0);
            let span = (edge - t) as f64;
            for (bytes, rate) in self.bins[b * n..(b + 1) * n].iter_mut().zip(&self.rate) {
                *bytes += rate * span / 1e9;
            }
            t = edge;
        }
    }

    /// Bytes of link `i` in bin `b` (0 past the bins kept).
    fn bytes(&self, b: usize, i: usize) -> f64 {
        self.bins.get(b * self.links.len() + i).copied().unwrap_or(0.0)
    }

    /// Bins kept (rows of `bins`).
    fn bins_kept(&self) -> usize {
        self.bins.len() / self.links.len().max(1)
    }

    /// Merges neighbouring bins: the width doubles.
    fn coarsen(&mut self) {
        let (n, rows) = (self.links.len(), self.bins_kept());
        for b in 0..rows.div_ceil(2) {
            for i in 0..n {
                let second = if 2 * b + 1 < rows {
                    self.bins[(2 * b + 1) * n + i]
                } else {
                    0.0
                };
                self.bins[b * n + i] = self.bins[2 * b * n + i] + second;
            }
        }
        self.bins.truncate(rows.div_ceil(2) * n);
        self.width *= 2;
    }

    /// The current bin width.
    pub fn bin_width(&self) -> Nanos {
        Nanos(self.width)
    }

    /// Each tracked link's utilization from 0 to `end`, one sample per bin
    /// (the last one ends at `end`).
    pub fn series(&self, end: Nanos) -> Vec<LinkSeries> {
        let w = self.width;
        let nbins = end.0.div_ceil(w) as usize;
        self.links
            .iter()
            .enumerate()
            .map(|(i, &link)| {
                let cap = self.capacity[i];
                let samples = (0..nbins)
                    .map(|b| {
                        let start = b as u64 * w;
                        let stop = ((b as u64 + 1) * w).min(end.0);
                        let bytes = self.bytes(b, i);
                        let span = (stop - start) as f64 / 1e9;
                        let u = if cap > 0.0 && span > 0.0 {
                            bytes / (cap * span)
                        } else {
                            0.0
                        };
                        (Nanos(stop), u)
                    })
                    .collect();
                LinkSeries {
                    link,
                    name: link_name(link),
                    capacity_bytes_per_s: cap,
                    samples,
                    bytes: (0..self.bins_kept()).map(|b| self.bytes(b, i)).sum(),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::FluidNetwork;
    use ocslab_core::model::coflow::{CoflowId, FlowId, FlowSpec};
    use ocslab_core::{Bps, Bytes, HostId};

    fn fabric() -> FabricParams {
        FabricParams {
            racks: 2,
            hosts_per_rack: 2,
            host_rate: Bps(8_000_000),
            uplink_rate: Bps(8_000_000),
            ocs_ports: 1,
            ocs_port_rate: Bps(80_000_000),
            reconfig_delay: Nanos::ZERO,
            elephant_threshold: Bytes(0),
            scale: 1.0,
        }
    }

    #[test]
    fn a_mean_covers_the_time_since_the_previous_one_as_a_counter_reading_does() {
        let mut u = LinkUsage::new(&fabric());
        let uplink = |v: &[(LinkKind, f64)]| v[0].1;
        // r0's uplink (1 MB/s) full for 100 ms, then idle for 100 ms.
        u.set_rates(&[1e6, 0.0, 0.0, 0.0, 0.0, 0.0]);
        u.advance(Nanos::ZERO, Nanos::from_millis(100));
        u.set_rates(&[0.0; 6]);
        u.advance(Nanos::from_millis(100), Nanos::from_millis(200));
        let first = u.mean_since_last();
        assert!((uplink(&first) - 0.5).abs() < 1e-12, "{first:?}");
        assert_eq!(
            u.current().next(),
            Some((LinkKind::TorUp(0), 0.0)),
            "idle at the instant"
        );
        // Then a quarter of it for 50 ms: the next mean starts at 200 ms.
        u.set_rates(&[0.25e6, 0.0, 0.0, 0.0, 0.0, 0.0]);
        u.advance(Nanos::from_millis(200), Nanos::from_millis(250));
        let second = u.mean_since_last();
        assert!((uplink(&second) - 0.25).abs() < 1e-12, "{second:?}");
        assert!(second[1..].iter().all(|&(_, m)| m == 0.0), "{second:?}");
        // Asked again at the same time: the rate then.
        assert!((uplink(&u.mean_since_last()) - 0.25).abs() < 1e-12);
    }

    #[test]
    fn tracks_uplinks_downlinks_then_ocs_ports() {
        let u = LinkUsage::new(&fabric());
        assert_eq!(u.index(LinkKind::TorUp(1)), Some(1));
        assert_eq!(u.index(LinkKind::TorDown(0)), Some(2));
        assert_eq!(u.index(LinkKind::OcsPort { rack: 1, port: 0 }), Some(5));
        assert_eq!(u.index(LinkKind::OcsPort { rack: 0, port: 1 }), None);
        assert_eq!(u.index(LinkKind::TorUp(2)), None);
        let names: Vec<String> = u.series(Nanos::ZERO).into_iter().map(|s| s.name).collect();
        assert_eq!(
            names,
            [
                "r0 EPS uplink",
                "r1 EPS uplink",
                "r0 EPS downlink",
                "r1 EPS downlink",
                "r0 OCS port 0",
                "r1 OCS port 0"
            ]
        );
    }

    #[test]
    fn current_utilization_is_rate_over_capacity() {
        let mut u = LinkUsage::new(&fabric());
        set(
            &mut u,
            &[
                (LinkKind::TorDown(1), 250_000.0),
                (LinkKind::OcsPort { rack: 0, port: 0 }, 5_000_000.0),
            ],
        );
        let now: Vec<(LinkKind, f64)> = u.current().filter(|&(_, x)| x > 0.0).collect();
        assert_eq!(
            now,
            [
                (LinkKind::TorDown(1), 0.25),
                (LinkKind::OcsPort { rack: 0, port: 0 }, 0.5)
            ]
        );
    }

    #[test]
    fn a_stretch_is_split_exactly_over_the_bins_it_crosses() {
        // Uplink of rack 0: 1 MB/s. Half its rate from 5 ms to 25 ms.
        let mut u = LinkUsage::new(&fabric());
        set(&mut u, &[(LinkKind::TorUp(0), 500_000.0)]);
        u.advance(Nanos::from_millis(5), Nanos::from_millis(25));
        let s = &u.series(Nanos::from_millis(30))[0];
        let got: Vec<(u64, f64)> = s.samples.iter().map(|&(t, x)| (t.0 / 1_000_000, x)).collect();
        assert_eq!(got.len(), 3);
        assert_eq!((got[0].0, got[1].0, got[2].0), (10, 20, 30));
        assert!((got[0].1 - 0.25).abs() < 1e-12, "{got:?}");
        assert!((got[1].1 - 0.5).abs() < 1e-12, "{got:?}");
        assert!((got[2].1 - 0.25).abs() < 1e-12, "{got:?}");
        assert!((s.bytes - 10_000.0).abs() < 1e-6);
        // The OCS port carried nothing.
        assert!(u.series(Nanos::from_millis(30))[4]
            .samples
            .iter()
            .all(|&(_, x)| x == 0.0));
    }

    #[test]
    fn the_last_bin_is_averaged_over_its_part_before_the_end() {
        let mut u = LinkUsage::new(&fabric());
        set(&mut u, &[(LinkKind::OcsPort { rack: 1, port: 0 }, 10_000_000.0)]);
        u.advance(Nanos::ZERO, Nanos::from_millis(15));
        let s = &u.series(Nanos::from_millis(15))[5];
        assert_eq!(s.samples.len(), 2);
        assert_eq!(s.samples[1].0, Nanos::from_millis(15));
        assert!((s.samples[1].1 - 1.0).abs() < 1e-12);
    }

    #[test]
    fn long_runs_merge_bins_without_losing_bytes() {
        let mut u = LinkUsage::new(&fabric());
        set(&mut u, &[(LinkKind::TorUp(1), 1_000_000.0)]);
        let end = Nanos::from_millis(10 * MAX_BINS as u64 * 3);
        u.advance(Nanos::ZERO, end);
        assert_eq!(u.bin_width(), Nanos(FIRST_BIN.0 * 4));
        let s = &u.series(end)[1];
        assert!(s.samples.len() <= MAX_BINS && s.samples.len() > MAX_BINS / 2);
        assert!(s.samples.iter().all(|&(_, x)| (x - 1.0).abs() < 1e-9));
        assert!((s.bytes - end.as_secs_f64() * 1e6).abs() < 1e-3);
    }

    fn flow(id: u64, src: (u32, u32), dst: (u32, u32), bytes: u64) -> FlowSpec {
        FlowSpec {
            id: FlowId(id),
            coflow: CoflowId(id),
            src: HostId::new(src.0, src.1),
            dst: HostId::new(dst.0, dst.1),
            bytes: Bytes(bytes),
            weight: 1,
        }
    }

    /// Sets the rates of `links` and every other tracked link's to 0, as
    /// the fluid network sets them after a solve.
    fn set(u: &mut LinkUsage, links: &[(LinkKind, f64)]) {
        let mut rates = vec![0.0; u.links.len()];
        for &(l, r) in links {
            rates[u.index(l).expect("tracked link")] = r;
        }
        u.set_rates(&rates);
    }

    fn run(net: &mut FluidNetwork) -> Nanos {
        while let Some(t) = net.next_event_at() {
            net.advance_to(t);
        }
        net.now()
    }

    #[test]
    fn the_fluid_network_counts_cross_rack_eps_bytes_on_the_senders_uplink() {
        // Uplink 1 MB/s: a 50 kB flow r0 -> r1 keeps it busy for 50 ms; an
        // intra-rack flow crosses no uplink.
        let mut net = FluidNetwork::on_fabric(fabric(), ocslab_core::coflow::by_name("fair").expect("fair"));
        net.add_flows(
            Nanos::ZERO,
            &[flow(1, (0, 0), (1, 0), 50_000), flow(2, (1, 0), (1, 1), 20_000)],
        );
        let end = run(&mut net);
        assert_eq!(end, Nanos::from_millis(50));
        let t = net.timeline(end);
        for l in [0, 3] {
            // r0's uplink and r1's downlink
            assert!((t.links[l].bytes - 50_000.0).abs() < 1.0, "{:?}", t.links[l]);
            assert!(t.links[l].samples.iter().all(|&(_, u)| (u - 1.0).abs() < 1e-6));
        }
        assert!([1, 2, 4, 5].iter().all(|&l| t.links[l].bytes == 0.0));
        assert!(t.circuits.is_empty());
    }

    #[test]
    fn the_fluid_network_counts_circuit_bytes_on_the_senders_ocs_port() {
        let mut f = fabric();
        f.elephant_threshold = Bytes(1_000);
        f.reconfig_delay = Nanos::from_millis(1);
        let mut net = FluidNetwork::on_fabric(f, ocslab_core::coflow::by_name("sunflow").expect("sunflow"));
        net.add_flows(Nanos::ZERO, &[flow(1, (1, 0), (0, 1), 400_000)]);
        let end = run(&mut net);
        let t = net.timeline(end);
        let port = &t.links[5];
        assert_eq!(port.name, "r1 OCS port 0");
        let moved = port.bytes + t.links[1].bytes;
        assert!((moved - 400_000.0).abs() < 1.0, "{t:?}");
        assert!(
            port.bytes > 0.0,
            "sunflow sends an elephant over a circuit: {t:?}"
        );
        assert_eq!(t.circuits.len() as u64, net.stats().reconfigurations);
        assert_eq!((t.circuits[0].src_rack, t.circuits[0].dst_rack), (1, 0));
    }

    #[test]
    fn rates_reset_between_stretches() {
        let mut u = LinkUsage::new(&fabric());
        set(&mut u, &[(LinkKind::TorUp(0), 1_000_000.0)]);
        u.advance(Nanos::ZERO, Nanos::from_millis(10));
        set(&mut u, &[]);
        u.advance(Nanos::from_millis(10), Nanos::from_millis(20));
        let s = &u.series(Nanos::from_millis(20))[0];
        assert_eq!(s.samples.iter().map(|x| x.1).collect::<Vec<_>>(), [1.0, 0.0]);
    }
}
