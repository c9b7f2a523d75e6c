//! [`FixedRateNetwork`]: a network without contention — every flow moves at
//! one fixed rate however many others run, entirely over EPS. It is the
//! test double of the simulation driver (hand-worked times are easy: a
//! flow of B bytes takes B ÷ rate; one of weight w stands for w flows and
//! moves at w × rate), and as the experiment network model
//! `uncontended` it separates compute from network effects: JCTs under it
//! are what an ideal, never-congested fabric would give.

use super::NetworkModel;
use crate::net::{Fabric, NetEvent, NetStats};
use ocslab_core::model::coflow::{CoflowId, FlowId, FlowSpec};
use ocslab_core::{Bps, Nanos, Topology};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A flow in flight, ordered by finish time then issue order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct InFlight {
    finish: Nanos,
    seq: u64,
    flow: FlowId,
    coflow: CoflowId,
    started: Nanos,
    bytes: u64,
    cross_rack: bool,
}

/// Every flow at `rate`, no sharing, no circuits.
#[derive(Debug)]
pub struct FixedRateNetwork {
    rate: Bps,
    heap: BinaryHeap<Reverse<InFlight>>,
    seq: u64,
    now: Nanos,
    stats: NetStats,
}

impl FixedRateNetwork {
    /// Every flow at `rate` (must be > 0).
    pub fn new(rate: Bps) -> FixedRateNetwork {
        FixedRateNetwork {
            rate: Bps(rate.0.max(1)),
            heap: BinaryHeap::new(),
            seq: 0,
            now: Nanos::ZERO,
            stats: NetStats::default(),
        }
    }

    /// Every flow at the topology's host NIC rate (a flow can never beat its NICs).
    pub fn for_topology(topo: &Topology) -> FixedRateNetwork {
        FixedRateNetwork::new(topo.host_rate)
    }

    /// The fabric every flow takes.
    pub fn fabric(&self) -> Fabric {
        Fabric::Eps
    }
}

impl NetworkModel for FixedRateNetwork {
    fn add_flows(&mut self, now: Nanos, flows: &[FlowSpec]) {
        let now = now.max(self.now);
        for f in flows {
            let rate = Bps(self.rate.0.saturating_mul(u64::from(f.shares())));
            let d = rate.time_to_send(f.bytes).unwrap_or(Nanos::ZERO);
            self.seq += 1;
            self.heap.push(Reverse(InFlight {
                finish: now + d,
                seq: self.seq,
                flow: f.id,
                coflow: f.coflow,
                started: now,
                bytes: f.bytes.0,
                cross_rack: f.src.rack != f.dst.rack,
            }));
        }
    }

    fn next_event_at(&self) -> Option<Nanos> {
        self.heap.peek().map(|Reverse(f)| f.finish)
    }

    fn advance_to(&mut self, now: Nanos) -> Vec<NetEvent> {
        self.now = self.now.max(now);
        let mut out = Vec::new();
        while let Some(Reverse(f)) = self.heap.peek().copied() {
            if f.finish > now {
                break;
            }
            self.heap.pop();
            let b = ocslab_core::Bytes(f.bytes);
            self.stats.eps_bytes += b;
            if f.cross_rack {
                self.stats.cross_rack_bytes += b;
            }
            out.push(NetEvent::FlowDone {
                flow: f.flow,
                coflow: f.coflow,
                started: f.started,
                at: f.finish,
                eps_bytes: b,
                ocs_bytes: ocslab_core::Bytes(0),
            });
        }
        out
    }

    fn stats(&self) -> &NetStats {
        &self.stats
    }
}
