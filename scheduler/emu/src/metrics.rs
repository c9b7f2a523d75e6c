//! What was measured on the wire: per-flow and per-coflow records built
//! from the agents' own timestamps, FCT and CCT percentiles (hdrhistogram),
//! and bytes over OCS vs EPS read from the kernel's link counters of the
//! crossbar ports and the ToR uplinks (not from what the scheduler meant,
//! so a mis-routed flow shows up as a gap between the two).
//!
//! Times are experiment time (ns since the run's start on the box's
//! monotonic clock, which every agent shares).
//!
//! - FCT of a flow: sender's first byte → receiver's last byte.
//! - CCT of a coflow ([`WireCoflow::cct`]): its first flow's arrival in the
//!   network (when the scheduler asked for it) → its last byte received;
//!   this includes any wait for a circuit (δ), as T(C) does.
//! - Wire CCT ([`WireCoflow::cct_wire`]): first byte sent → last byte
//!   received, the "from first byte sent to last byte received".

use hdrhistogram::Histogram;
use ocslab_agent::protocol as wire;
use ocslab_core::model::coflow::{CoflowId, FlowId};
use ocslab_core::outcome::LinkSeries;
use ocslab_emulator::fabric::FabricCounters;
use ocslab_emulator::{Bytes, HostId, Nanos};
use serde::Serialize;
use std::collections::BTreeMap;

/// One flow as measured.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WireFlow {
    /// The flow.
    pub flow: FlowId,
    /// Its coflow.
    pub coflow: CoflowId,
    /// Sender.
    pub src: HostId,
    /// Receiver.
    pub dst: HostId,
    /// Payload bytes asked for.
    pub bytes: Bytes,
    /// Payload bytes the receiver got.
    pub bytes_received: Bytes,
    /// How the sender marked it (`eps` or `ocs`).
    pub marked: Option<wire::Path>,
    /// When the scheduler asked for it.
    pub requested: Nanos,
    /// Sender's first byte.
    pub start: Nanos,
    /// Receiver's first payload byte.
    pub first_byte: Nanos,
    /// Receiver's last payload byte.
    pub end: Nanos,
    /// All bytes arrived and the CRC matched the content's.
    pub verified: bool,
    /// Whether the engine still needed it (false: its attempt was killed or lost).
    pub useful: bool,
}

impl WireFlow {
    /// Flow completion time: first byte sent → last byte received.
    pub fn fct(&self) -> Nanos {
        self.end.saturating_sub(self.start)
    }
}

/// One coflow as measured.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WireCoflow {
    /// The coflow.
    pub coflow: CoflowId,
    /// Flows measured.
    pub flows: u32,
    /// Payload bytes.
    pub bytes: Bytes,
    /// First flow requested.
    pub arrival: Nanos,
    /// First byte sent.
    pub first_byte: Nanos,
    /// Last byte received.
    pub last_byte: Nanos,
    /// Every flow verified.
    pub verified: bool,
}

impl WireCoflow {
    /// Arrival → last byte received.
    pub fn cct(&self) -> Nanos {
        self.last_byte.saturating_sub(self.arrival)
    }
    /// First byte sent → last byte received.
    pub fn cct_wire(&self) -> Nanos {
        self.last_byte.saturating_sub(self.first_byte)
    }
}

/// Percentiles of a distribution of durations, in seconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Percentiles {
    /// Samples.
    pub count: u64,
    /// Mean.
    pub mean_s: f64,
    /// Median.
    pub p50_s: f64,
    /// 90th percentile.
    pub p90_s: f64,
    /// 95th percentile.
    pub p95_s: f64,
    /// 99th percentile.
    pub p99_s: f64,
    /// Largest.
    pub max_s: f64,
}

impl Percentiles {
    /// Percentiles of `values` (microsecond resolution, 3 significant
    /// digits, up to a day; longer values count as a day).
    pub fn of(values: impl IntoIterator<Item = Nanos>) -> Percentiles {
        const DAY_US: u64 = 86_400_000_000;
        let Ok(mut h) = Histogram::<u64>::new_with_bounds(1, DAY_US, 3) else {
            return Percentiles::default();
        };
        for v in values {
            h.saturating_record((v.0 / 1000).max(1));
        }
        if h.is_empty() {
            return Percentiles::default();
        }
        let s = |us: u64| us as f64 / 1e6;
        Percentiles {
            count: h.len(),
            mean_s: h.mean() / 1e6,
            p50_s: s(h.value_at_quantile(0.50)),
            p90_s: s(h.value_at_quantile(0.90)),
            p95_s: s(h.value_at_quantile(0.95)),
            p99_s: s(h.value_at_quantile(0.99)),
            max_s: s(h.max()),
        }
    }
}

/// Bytes on the fabric's own links during the run (kernel counters, frames
/// with headers, both directions of TCP: ACKs of OCS flows come back over EPS).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FabricBytes {
    /// Bytes sent up each rack's EPS uplink (ToR → core), by rack.
    pub eps_uplink: Vec<u64>,
    /// Bytes the OCS delivered to each rack (over all its ports), by rack.
    pub ocs_delivered: Vec<u64>,
    /// Sum of `eps_uplink`.
    pub eps_bytes: u64,
    /// Sum of `ocs_delivered`.
    pub ocs_bytes: u64,
    /// Cross-rack payload the senders marked for EPS.
    pub intended_eps_cross_rack: Bytes,
    /// Payload the senders marked for circuits.
    pub intended_ocs: Bytes,
    /// Share of the cross-rack bytes that crossed on a circuit, on the
    /// wire: `ocs_bytes` ÷ (`eps_bytes` + `ocs_bytes`) (the summary's
    /// `ocs_share` of an emulated run).
    pub ocs_share: f64,
    /// The same share of the payload as the senders marked it:
    /// `intended_ocs` ÷ (`intended_eps_cross_rack` + `intended_ocs`). It is
    /// a little above `ocs_share` (the ACKs of circuit flows return over
    /// EPS); far above it means marked packets took EPS.
    pub ocs_share_marked: f64,
}

impl FabricBytes {
    /// The difference between two counter readings, with the intended split.
    pub fn between(before: &FabricCounters, after: &FabricCounters, flows: &[WireFlow]) -> FabricBytes {
        let racks = after.uplinks.len();
        let mut eps_uplink = vec![0u64; racks];
        for u in &after.uplinks {
            let b = before
                .uplinks
                .iter()
                .find(|x| x.rack == u.rack)
                .map_or(0, |x| x.up_bytes);
            if let Some(slot) = eps_uplink.get_mut(u.rack as usize) {
                *slot = u.up_bytes.saturating_sub(b);
            }
        }
        let mut ocs_delivered = vec![0u64; racks];
        for p in &after.ocs_ports {
            let b = before
                .ocs_ports
                .iter()
                .find(|x| x.rack == p.rack && x.port == p.port)
                .map_or(0, |x| x.to_rack_bytes);
            if let Some(slot) = ocs_delivered.get_mut(p.rack as usize) {
                *slot += p.to_rack_bytes.saturating_sub(b);
            }
        }
        let mut intended_eps_cross_rack = Bytes(0);
        let mut intended_ocs = Bytes(0);
        for f in flows {
            match f.marked {
                Some(wire::Path::Ocs) => intended_ocs += f.bytes_received,
                _ if f.src.rack != f.dst.rack => intended_eps_cross_rack += f.bytes_received,
                _ => {}
            }
        }
        let share = |eps: u64, ocs: u64| {
            if eps + ocs > 0 {
                ocs as f64 / (eps + ocs) as f64
            } else {
                0.0
            }
        };
        let (eps_bytes, ocs_bytes) = (eps_uplink.iter().sum(), ocs_delivered.iter().sum());
        FabricBytes {
            eps_bytes,
            ocs_bytes,
            ocs_share: share(eps_bytes, ocs_bytes),
            ocs_share_marked: share(intended_eps_cross_rack.0, intended_ocs.0),
            eps_uplink,
            ocs_delivered,
            intended_eps_cross_rack,
            intended_ocs,
        }
    }
}

/// Everything measured on the wire in one run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct WireReport {
    /// Per flow, in the order they finished.
    pub flows: Vec<WireFlow>,
    /// Per coflow, by id.
    pub coflows: Vec<WireCoflow>,
    /// Flow completion times.
    pub fct: Percentiles,
    /// Coflow completion times (arrival → last byte).
    pub cct: Percentiles,
    /// Flows whose bytes all arrived with the right checksum.
    pub verified_flows: u64,
    /// Flows that arrived short or with a wrong checksum.
    pub corrupt_flows: u64,
    /// Flows abandoned because an end's host died.
    pub lost_flows: u64,
    /// Sends issued again after a send failed at an end (connection broken,
    /// cut short, wrong checksum; [`super::resend`]).
    pub resent_flows: u64,
    /// Bytes over the fabric's links.
    pub fabric: FabricBytes,
    /// Agents declared dead.
    pub dead_hosts: Vec<HostId>,
    /// Circuit events from the OCS (up and down).
    pub circuit_events: u64,
    /// Wall time of the run, seconds.
    pub wall_s: f64,
    /// Utilization of the EPS uplinks, downlinks and OCS ports over the
    /// run, sampled from the kernel counters ([`super::sampler`]).
    #[serde(skip)]
    pub links: Vec<LinkSeries>,
}

impl WireReport {
    /// Builds coflow records and percentiles from `flows`.
    pub fn new(flows: Vec<WireFlow>, lost_flows: u64) -> WireReport {
        let mut by: BTreeMap<CoflowId, WireCoflow> = BTreeMap::new();
        for f in &flows {
            let c = by.entry(f.coflow).or_insert(WireCoflow {
                coflow: f.coflow,
                flows: 0,
                bytes: Bytes(0),
                arrival: f.requested,
                first_byte: f.start,
                last_byte: f.end,
                verified: true,
            });
            c.flows += 1;
            c.bytes += f.bytes_received;
            c.arrival = c.arrival.min(f.requested);
            c.first_byte = c.first_byte.min(f.start);
            c.last_byte = c.last_byte.max(f.end);
            c.verified &= f.verified;
        }
        let coflows: Vec<WireCoflow> = by.into_values().collect();
        WireReport {
            fct: Percentiles::of(flows.iter().map(WireFlow::fct)),
            cct: Percentiles::of(coflows.iter().map(WireCoflow::cct)),
            verified_flows: flows.iter().filter(|f| f.verified).count() as u64,
            corrupt_flows: flows.iter().filter(|f| !f.verified).count() as u64,
            lost_flows,
            flows,
            coflows,
            ..WireReport::default()
        }
    }

    /// The coflow `id`.
    pub fn coflow(&self, id: CoflowId) -> Option<&WireCoflow> {
        self.coflows.iter().find(|c| c.coflow == id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(id: u64, coflow: u64, requested: u64, start: u64, end: u64, ok: bool) -> WireFlow {
        WireFlow {
            flow: FlowId(id),
            coflow: CoflowId(coflow),
            src: HostId::new(0, 0),
            dst: HostId::new(1, 0),
            bytes: Bytes(100),
            bytes_received: Bytes(100),
            marked: Some(wire::Path::Eps),
            requested: Nanos(requested),
            start: Nanos(start),
            first_byte: Nanos(start),
            end: Nanos(end),
            verified: ok,
            useful: true,
        }
    }

    #[test]
    fn a_coflow_spans_its_first_arrival_to_its_last_byte() {
        let r = WireReport::new(
            vec![
                flow(1, 7, 100, 150, 1_000, true),
                flow(2, 7, 120, 130, 2_000, true),
                flow(3, 8, 0, 10, 20, false),
            ],
            0,
        );
        let c = r.coflow(CoflowId(7)).unwrap();
        assert_eq!(
            (c.cct(), c.cct_wire(), c.bytes),
            (Nanos(1_900), Nanos(1_870), Bytes(200))
        );
        assert!(c.verified);
        assert!(!r.coflow(CoflowId(8)).unwrap().verified);
        assert_eq!((r.verified_flows, r.corrupt_flows), (2, 1));
    }

    #[test]
    fn the_ocs_share_counts_cross_rack_bytes_only_on_the_wire_and_as_marked() {
        use ocslab_emulator::fabric::{OcsPortCounters, UplinkCounters};
        let reading = |up: u64, ocs: u64| FabricCounters {
            at: Nanos::ZERO,
            uplinks: vec![
                UplinkCounters {
                    rack: 0,
                    up_bytes: up,
                    down_bytes: 0,
                },
                UplinkCounters {
                    rack: 1,
                    up_bytes: 0,
                    down_bytes: up,
                },
            ],
            ocs_ports: vec![OcsPortCounters {
                rack: 1,
                port: 0,
                from_rack_bytes: 0,
                to_rack_bytes: ocs,
            }],
        };
        let mut intra = flow(1, 1, 0, 0, 1, true);
        intra.dst = HostId::new(0, 1);
        intra.bytes_received = Bytes(1_000_000); // never on an uplink or a port
        let mut ocs = flow(2, 1, 0, 0, 1, true);
        ocs.marked = Some(wire::Path::Ocs);
        ocs.bytes_received = Bytes(300);
        let eps = flow(3, 1, 0, 0, 1, true); // 100 B from rack 0 to rack 1
        let f = FabricBytes::between(&reading(1_000, 5_000), &reading(1_100, 5_300), &[intra, ocs, eps]);
        assert_eq!((f.eps_bytes, f.ocs_bytes), (100, 300));
        assert_eq!(f.ocs_share, 0.75);
        // One EPS flow of 100 B across racks, 300 B marked for a circuit.
        assert_eq!(f.ocs_share_marked, 0.75);
        assert_eq!(f.intended_eps_cross_rack, Bytes(100));
    }

    #[test]
    fn percentiles_are_close_to_exact() {
        let p = Percentiles::of((1..=1000).map(Nanos::from_millis));
        assert_eq!(p.count, 1000);
        assert!((p.p50_s - 0.5).abs() < 0.001, "{p:?}");
        assert!((p.p99_s - 0.99).abs() < 0.001, "{p:?}");
        assert!((p.max_s - 1.0).abs() < 0.001, "{p:?}");
    }
}
