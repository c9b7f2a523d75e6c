//! Link utilization over time with real bytes: a thread that reads the
//! fabric's kernel byte counters at an interval ([`Sampler`]), and the pure
//! bookkeeping that turns successive readings into utilization samples
//! ([`UtilizationRecorder`]).
//!
//! The recorder produces the shape the fluid model's
//! the simulator's `LinkUsage` gives the results folder — one
//! [`LinkSeries`] per link, the EPS uplinks (ToR → core) of every rack, then
//! the downlinks (core → ToR), then the sending side of every OCS port, each
//! sample `(t, u)` the *mean* utilization over the interval since the
//! previous sample — and, for each reading, the [`LinkLoad`]s the engine
//! receives as [`ocslab_core::engine::Event::LoadSample`] (what the simulation
//! driver feeds from the fluid rates).
//!
//! What a counter counts: the bytes of the frames the kernel passed on that
//! veth (Ethernet header included, TCP ACKs included), read at the ToR end
//! of each uplink and at the crossbar end of each OCS port. Utilization is
//! bytes ÷ (the link's shaped rate × the interval between the two readings'
//! own timestamps), so a reading that comes late does not inflate it; it is
//! capped at 1 (framing overheads the htb shaper does not count can push a
//! saturated link a little above its rate).
//!
//! Reading the counters is a netlink dump per namespace (a few hundred µs
//! for `lab.toml`), done on the sampler's own thread so the control loop
//! never waits for it.

use ocslab_core::engine::{Link, LinkLoad};
use ocslab_core::net::links::LinkKind;
use ocslab_core::outcome::{link_name, LinkSeries};
use ocslab_emulator::fabric::{CounterReader, FabricCounters};
use ocslab_emulator::{Bps, Nanos, Topology};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio::sync::mpsc as tmpsc;

/// What the sampling thread sends.
#[derive(Clone, Debug)]
pub enum SamplerReport {
    /// One reading of every counter.
    Counters(FabricCounters),
    /// Reading failed; the thread stopped.
    Failed(String),
}

/// A thread reading the fabric's counters every `interval` until dropped.
#[derive(Debug)]
pub struct Sampler {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Sampler {
    /// Starts reading `reader` every `interval` (the first reading one
    /// interval from now: the caller holds the baseline), sending each
    /// reading to `tx`. The thread ends when the sampler is dropped, when
    /// `tx`'s receiver is gone, or after a failed reading.
    pub fn start(
        mut reader: CounterReader,
        interval: Duration,
        tx: tmpsc::UnboundedSender<SamplerReport>,
    ) -> std::io::Result<Sampler> {
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("counter-sampler".into())
            .spawn(move || {
                let mut next = Instant::now() + interval;
                loop {
                    // Waits for the next tick or a stop, whichever comes first.
                    let now = Instant::now();
                    match stopped.recv_timeout(next.saturating_duration_since(now)) {
                        Err(mpsc::RecvTimeoutError::Timeout) => {}
                        Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => return,
                    }
                    let report = match reader.read() {
                        Ok(c) => SamplerReport::Counters(c),
                        Err(e) => SamplerReport::Failed(e.to_string()),
                    };
                    let failed = matches!(report, SamplerReport::Failed(_));
                    if tx.send(report).is_err() || failed {
                        return;
                    }
                    next += interval;
                    let now = Instant::now();
                    if next < now {
                        // Fell more than a tick behind (a loaded box): skip, do not burst.
                        next = now + interval;
                    }
                }
            })?;
        Ok(Sampler {
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Which counter of a reading a tracked link is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Counter {
    /// `uplinks[rack].up_bytes`.
    Up(u32),
    /// `uplinks[rack].down_bytes`.
    Down(u32),
    /// `ocs_ports[(rack, port)].from_rack_bytes`.
    OcsFromRack(u32, u32),
}

impl Counter {
    fn read(self, c: &FabricCounters) -> Option<u64> {
        match self {
            Counter::Up(r) => c.uplinks.iter().find(|u| u.rack == r).map(|u| u.up_bytes),
            Counter::Down(r) => c.uplinks.iter().find(|u| u.rack == r).map(|u| u.down_bytes),
            Counter::OcsFromRack(r, p) => c
                .ocs_ports
                .iter()
                .find(|o| o.rack == r && o.port == p)
                .map(|o| o.from_rack_bytes),
        }
    }

    fn engine_link(self) -> Link {
        match self {
            Counter::Up(r) => Link::RackUp(r),
            Counter::Down(r) => Link::RackDown(r),
            Counter::OcsFromRack(rack, port) => Link::OcsPort { rack, port },
        }
    }
}

/// Successive counter readings turned into per-link utilization samples.
#[derive(Clone, Debug)]
pub struct UtilizationRecorder {
    counters: Vec<Counter>,
    series: Vec<LinkSeries>,
    /// The previous reading and its experiment time.
    prev: Option<(Nanos, FabricCounters)>,
}

impl UtilizationRecorder {
    /// Tracks the links of `topo` in the simulator's `LinkUsage`'s
    /// order: every rack's EPS uplink, every downlink, every OCS port.
    pub fn new(topo: &Topology) -> UtilizationRecorder {
        let mut counters = Vec::new();
        let mut kinds = Vec::new();
        let mut rates: Vec<Bps> = Vec::new();
        for r in 0..topo.racks {
            counters.push(Counter::Up(r));
            kinds.push(LinkKind::TorUp(r));
            rates.push(topo.uplink_rate);
        }
        for r in 0..topo.racks {
            counters.push(Counter::Down(r));
            kinds.push(LinkKind::TorDown(r));
            rates.push(topo.uplink_rate);
        }
        for r in 0..topo.racks {
            for p in 0..topo.ocs_ports_per_rack {
                counters.push(Counter::OcsFromRack(r, p));
                kinds.push(LinkKind::OcsPort { rack: r, port: p });
                rates.push(topo.ocs_port_rate);
            }
        }
        let series = kinds
            .into_iter()
            .zip(rates)
            .map(|(link, rate)| LinkSeries {
                link,
                name: link_name(link),
                capacity_bytes_per_s: rate.bytes_per_sec(),
                samples: Vec::new(),
                bytes: 0.0,
            })
            .collect();
        UtilizationRecorder {
            counters,
            series,
            prev: None,
        }
    }

    /// Adds a reading taken at experiment time `t`. The first reading is
    /// the baseline and gives nothing; each later one gives every tracked
    /// link's mean utilization since the previous reading (one sample per
    /// link, and the same as engine [`LinkLoad`]s). A reading not later
    /// than the previous one is ignored.
    pub fn record(&mut self, t: Nanos, reading: FabricCounters) -> Vec<LinkLoad> {
        let Some((t0, prev)) = self.prev.take() else {
            self.prev = Some((t, reading));
            return Vec::new();
        };
        let dt = reading.at.saturating_sub(prev.at).as_secs_f64();
        if dt <= 0.0 || t <= t0 {
            self.prev = Some((t0, prev));
            return Vec::new();
        }
        let mut loads = Vec::with_capacity(self.counters.len());
        for (c, s) in self.counters.iter().zip(self.series.iter_mut()) {
            let (Some(now), Some(before)) = (c.read(&reading), c.read(&prev)) else {
                continue;
            };
            let bytes = now.saturating_sub(before) as f64;
            let u = if s.capacity_bytes_per_s > 0.0 {
                (bytes / (s.capacity_bytes_per_s * dt)).min(1.0)
            } else {
                0.0
            };
            s.bytes += bytes;
            s.samples.push((t, u));
            loads.push(LinkLoad {
                link: c.engine_link(),
                utilization: u,
            });
        }
        self.prev = Some((t, reading));
        loads
    }

    /// Every tracked link's samples so far.
    pub fn series(&self) -> Vec<LinkSeries> {
        self.series.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ocslab_emulator::fabric::{OcsPortCounters, UplinkCounters};
    use ocslab_emulator::Bytes;

    fn topo() -> Topology {
        Topology::builder("t", 2, 1)
            .slots_per_host(1)
            .host_rate(Bps(80_000_000))
            .uplink_rate(Bps(8_000_000))
            .ocs(1, Bps(80_000_000), Nanos::from_millis(1), Bytes(1_000_000))
            .build()
            .expect("valid topology")
    }

    fn reading(at_ms: u64, up0: u64, down1: u64, ocs0: u64) -> FabricCounters {
        FabricCounters {
            at: Nanos::from_millis(at_ms),
            uplinks: vec![
                UplinkCounters {
                    rack: 0,
                    up_bytes: up0,
                    down_bytes: 0,
                },
                UplinkCounters {
                    rack: 1,
                    up_bytes: 0,
                    down_bytes: down1,
                },
            ],
            ocs_ports: vec![
                OcsPortCounters {
                    rack: 0,
                    port: 0,
                    from_rack_bytes: ocs0,
                    to_rack_bytes: 0,
                },
                OcsPortCounters {
                    rack: 1,
                    port: 0,
                    from_rack_bytes: 0,
                    to_rack_bytes: ocs0,
                },
            ],
        }
    }

    #[test]
    fn links_come_in_the_fluid_models_order_with_its_names() {
        let r = UtilizationRecorder::new(&topo());
        let names: Vec<String> = r.series().into_iter().map(|s| s.name).collect();
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
    fn a_sample_is_the_mean_utilization_since_the_previous_reading() {
        let mut r = UtilizationRecorder::new(&topo());
        // Uplinks at 8 Mbit/s = 1 MB/s, OCS ports at 10 MB/s.
        assert!(r.record(Nanos::ZERO, reading(1_000, 100, 0, 0)).is_empty());
        // 500 ms later: 250 kB up r0 (50%), 500 kB down r1 (100%), 1 MB over the OCS (20%).
        let loads = r.record(
            Nanos::from_millis(500),
            reading(1_500, 250_100, 500_000, 1_000_000),
        );
        let u = |link: Link| loads.iter().find(|l| l.link == link).map(|l| l.utilization);
        assert_eq!(u(Link::RackUp(0)), Some(0.5));
        assert_eq!(u(Link::RackDown(1)), Some(1.0));
        assert_eq!(u(Link::RackUp(1)), Some(0.0));
        assert_eq!(u(Link::OcsPort { rack: 0, port: 0 }), Some(0.2));
        // 350 kB in the next 250 ms (the readings' own interval) is above the rate: capped at 100%.
        r.record(
            Nanos::from_millis(750),
            reading(1_750, 600_100, 500_000, 1_000_000),
        );
        let s = r.series();
        assert_eq!(
            s[0].samples,
            vec![(Nanos::from_millis(500), 0.5), (Nanos::from_millis(750), 1.0)]
        );
        assert_eq!(s[0].bytes, 600_000.0);
        assert_eq!(s[3].samples[0], (Nanos::from_millis(500), 1.0));
        assert_eq!(s[4].samples[0], (Nanos::from_millis(500), 0.2));
    }

    #[test]
    fn a_reading_that_is_not_later_is_ignored() {
        let mut r = UtilizationRecorder::new(&topo());
        r.record(Nanos::ZERO, reading(1_000, 0, 0, 0));
        assert!(r.record(Nanos::ZERO, reading(1_000, 10, 0, 0)).is_empty());
        assert_eq!(
            r.record(Nanos::from_millis(100), reading(1_100, 50_000, 0, 0))
                .len(),
            6
        );
        assert_eq!(r.series()[0].samples, vec![(Nanos::from_millis(100), 0.5)]);
    }
}
