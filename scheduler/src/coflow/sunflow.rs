//! Sunflow, as the issue and Co-scheduler (Li & Shen, ToN 2022, Sec. III-B
//! and V) describe it, after Huang, Sun & Ng, "Sunflow: Efficient Optical
//! Circuit Scheduling for Coflows", CoNEXT'16.
//!
//! Elephants (flows that [`NetView::may_use_ocs`]: their coflow's bytes
//! between their racks reach the threshold) go over circuits, so a
//! reservation carries all flows of that coflow's rack pair;
//! everything else over EPS with fair sharing. At each call:
//!
//! ```text
//! demand[c][i→j] = remaining bytes of c's elephants from rack i to rack j
//! drop reservations whose demand is done            -- held until then: non-preemptive
//! order coflows by T(C) of their remaining demand (eq. 2 / 15), then arrival, then id
//! for c in order:                                   -- shortest coflow first
//!   for (i→j) in c's pairs, largest demand first, not yet reserved:
//!     w = a port with sending side (i,w) and receiving side (j,w) both unreserved,
//!         preferring one where the circuit i→j already exists (no δ to pay)
//!     if w: reserve (i,w),(j,w) for c's i→j; set up circuit i→j on w unless it exists
//! elephants of reserved pairs: over their circuit (they move once it is up, δ later)
//! other elephants: wait
//! ```
//!
//! The plans are per (coflow, rack pair) ([`PairPlan`]), so the network
//! applies only the pairs whose plan changed.
//!
//! A reservation lasts δ (if the circuit is new) + bytes/rate, i.e. until the
//! pair's demand is done; lower-priority coflows take ports the higher ones
//! leave idle (work conservation), and keep them until done even if a
//! shorter coflow arrives. Only the affected ports go dark (not-all-stop).
//! One circuit per pair at a time.
//!
//! When it is called ([`Sunflow::triggers`]): when elephants arrive (a
//! coflow's new rack pair, more flows for a reserved one, or a pair crossing
//! the elephant threshold) and when a coflow's last elephant of a rack pair
//! leaves (its reservation ends). Nothing else changes the decision: after
//! a call, every pair left without a reservation found no free port, and
//! ports are freed only when a reservation ends, so a call in between would
//! keep the same reservations, circuits and plans whatever the coflows'
//! order; mice do not enter it, and a circuit coming up changes no input
//! (the network starts the flows waiting on it by itself).

use crate::coflow::lower_bound::ocs_lower_bound;
use crate::coflow::{
    Arrivals, CircuitSetup, CoflowPolicy, Decision, Departures, FlowPlan, NetView, PairPlan, Progress,
    Triggers,
};
use crate::model::coflow::CoflowId;
use ocslab_emulator::{Bytes, Nanos};
use std::collections::{BTreeMap, BTreeSet};

/// A port pair held for one coflow's demand from `src` to `dst`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Reservation {
    /// The coflow.
    pub coflow: CoflowId,
    /// Receiving rack.
    pub dst: u32,
}

/// Sunflow over the OCS, EPS for the rest.
#[derive(Clone, Debug, Default)]
pub struct Sunflow {
    /// Reservations by sending side (rack, port).
    reservations: BTreeMap<(u32, u32), Reservation>,
}

impl Sunflow {
    /// Current reservations, keyed by sending side (rack, port).
    pub fn reservations(&self) -> &BTreeMap<(u32, u32), Reservation> {
        &self.reservations
    }
}

type Demand = BTreeMap<CoflowId, BTreeMap<(u32, u32), f64>>;

impl CoflowPolicy for Sunflow {
    fn name(&self) -> &'static str {
        "sunflow"
    }
    fn uses_ocs(&self) -> bool {
        true
    }
    fn triggers(&self) -> Triggers {
        Triggers {
            arrivals: Arrivals::Elephants,
            departures: Departures::ElephantPairDone,
            circuit_up: false,
        }
    }
    fn decide(&mut self, _now: Nanos, view: &NetView, progress: &dyn Progress) -> Decision {
        let fabric = &view.fabric;
        let mut demand: Demand = BTreeMap::new();
        for f in view.flows.values().filter(|f| f.elephant) {
            *demand
                .entry(f.spec.coflow)
                .or_default()
                .entry((f.spec.src.rack, f.spec.dst.rack))
                .or_default() += progress.remaining_bytes(f);
        }
        let open = |c: CoflowId, i: u32, j: u32| demand.get(&c).and_then(|d| d.get(&(i, j))).is_some();
        self.reservations.retain(|&(i, _), r| open(r.coflow, i, r.dst));

        let mut order: Vec<(Nanos, Nanos, CoflowId)> = demand
            .iter()
            .map(|(&c, pairs)| {
                let bytes = pairs
                    .iter()
                    .map(|(&k, &b)| (k, Bytes(b.ceil() as u64)))
                    .collect::<BTreeMap<_, _>>();
                let t = ocs_lower_bound(
                    &bytes,
                    fabric.ocs_port_rate,
                    fabric.reconfig_delay,
                    fabric.ocs_ports,
                )
                .unwrap_or(Nanos(u64::MAX));
                let arrival = view.coflows.get(&c).map_or(Nanos::ZERO, |v| v.arrival);
                (t, arrival, c)
            })
            .collect();
        order.sort();

        let mut tx_busy: BTreeSet<(u32, u32)> = self.reservations.keys().copied().collect();
        let mut rx_busy: BTreeSet<(u32, u32)> =
            self.reservations.iter().map(|(&(_, w), r)| (r.dst, w)).collect();
        let mut served: BTreeSet<(CoflowId, u32, u32)> = self
            .reservations
            .iter()
            .map(|(&(i, _), r)| (r.coflow, i, r.dst))
            .collect();
        let mut circuits = Vec::new();
        for &(_, _, c) in &order {
            let mut pairs: Vec<((u32, u32), f64)> = demand[&c].iter().map(|(&k, &b)| (k, b)).collect();
            pairs.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            for ((i, j), _) in pairs {
                if served.contains(&(c, i, j)) {
                    continue;
                }
                let free: Vec<u32> = (0..fabric.ocs_ports)
                    .filter(|&w| !tx_busy.contains(&(i, w)) && !rx_busy.contains(&(j, w)))
                    .collect();
                let Some(&w) = free
                    .iter()
                    .find(|&&w| view.circuit(i, j, w).is_some())
                    .or(free.first())
                else {
                    continue;
                };
                tx_busy.insert((i, w));
                rx_busy.insert((j, w));
                served.insert((c, i, j));
                self.reservations
                    .insert((i, w), Reservation { coflow: c, dst: j });
            }
        }
        // Circuits for every reservation that has none (new ones, or lost ones).
        let mut port_of: BTreeMap<(CoflowId, u32, u32), u32> = BTreeMap::new();
        for (&(i, w), r) in &self.reservations {
            port_of.insert((r.coflow, i, r.dst), w);
            if view.circuit(i, r.dst, w).is_none() {
                circuits.push(CircuitSetup {
                    src_rack: i,
                    dst_rack: r.dst,
                    port: w,
                });
            }
        }
        // One plan per (coflow, rack pair) with elephants: its circuit, or wait.
        let pair_plans = demand
            .iter()
            .flat_map(|(&c, pairs)| pairs.keys().map(move |&(i, j)| (c, i, j)))
            .map(|(coflow, src_rack, dst_rack)| PairPlan {
                coflow,
                src_rack,
                dst_rack,
                plan: port_of
                    .get(&(coflow, src_rack, dst_rack))
                    .map_or(FlowPlan::WAIT, |&w| FlowPlan::ocs(w)),
            })
            .collect();
        Decision {
            pair_plans,
            circuits,
            plans: Vec::new(),
            wake_at: None,
        }
    }
}
