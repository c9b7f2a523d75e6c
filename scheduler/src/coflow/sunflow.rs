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
//! A call costs what changed, not O(elephants): the policy keeps each
//! coflow's pairs (their flows and remaining bytes) from call to call, with
//! the row and column sums of t_ij that give its T(C) in O(racks).
//! Waiting pairs do not move, so their bytes stand (as read when the pair
//! was last read; the network's counter for a flow that changed bundles
//! since may differ in the last bit); reserved pairs (on their circuits)
//! are read again at every call; a coflow is read again whole when flows
//! joined it, or when more of its flows left than its reserved pairs
//! account for. Only pairs with a free sending side at their source rack
//! and a free receiving side at their destination rack at the start of the
//! greedy pass can get a port in it (ports are only taken during the
//! pass), so the pass walks those candidates only, in the order above: the
//! same reservations as the full pass.
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

use crate::coflow::lower_bound::{ocs_bound_of_longest, ocs_pair_time};
use crate::coflow::{
    Arrivals, CircuitSetup, CoflowPolicy, Decision, Departures, FabricParams, FlowPlan, NetView, PairPlan,
    Progress, Triggers,
};
use crate::model::coflow::{CoflowId, FlowId};
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
    /// The elephants of each active coflow, per rack pair.
    coflows: BTreeMap<CoflowId, CoflowDemand>,
    /// Pairs without a reservation, by (source rack, coflow, destination rack).
    waiting: BTreeSet<(u32, CoflowId, u32)>,
    /// One plan per pair of `coflows`, sorted by (coflow, source, destination).
    plans: Vec<PairPlan>,
}

/// One coflow's elephants as last read, with the row and column sums of
/// `t_ij` (Co-scheduler eq. 1) that give its T(C) (eq. 2 / 15).
#[derive(Clone, Debug, Default)]
struct CoflowDemand {
    /// Its bytes so far ([`crate::coflow::CoflowView::known_bytes`]) when read: flows joined if it grew.
    known: Bytes,
    /// Its active flows (elephants and mice) after the last call.
    active: usize,
    /// Its rack pairs with active elephants.
    pairs: BTreeMap<(u32, u32), PairDemand>,
    /// Σ_j t_ij per sending rack i, and Σ_i t_ij per receiving rack j (ns).
    rows: BTreeMap<u32, u128>,
    cols: BTreeMap<u32, u128>,
    /// Pairs whose t_ij is unbounded (bytes and no circuit rate).
    unbounded: usize,
}

/// A coflow's active elephants from one rack to another.
#[derive(Clone, Debug, Default, PartialEq)]
struct PairDemand {
    /// Their ids, in id order.
    flows: Vec<FlowId>,
    /// Their remaining bytes (summed in id order).
    bytes: f64,
    /// Its t_ij as counted in the row and column sums (`None`: unbounded);
    /// counted from the moment the pair is built.
    t: Option<u128>,
    /// The port reserved for them, if any.
    port: Option<u32>,
}

/// t_ij of a pair with `bytes` left (rounded up to whole bytes).
fn pair_time(fabric: &FabricParams, bytes: f64) -> Option<u128> {
    ocs_pair_time(
        Bytes(bytes.ceil() as u64),
        fabric.ocs_port_rate,
        fabric.reconfig_delay,
    )
}

impl CoflowDemand {
    /// Counts (`add`) or uncounts pair (i, j)'s t_ij in the sums.
    fn count(&mut self, (i, j): (u32, u32), t: Option<u128>, add: bool) {
        if i == j {
            return;
        }
        match t {
            None if add => self.unbounded += 1,
            None => self.unbounded -= 1,
            Some(t) => {
                for sum in [self.rows.entry(i).or_default(), self.cols.entry(j).or_default()] {
                    *sum = if add { *sum + t } else { *sum - t };
                }
            }
        }
    }

    /// Pair `k` now has `bytes` left.
    fn set_bytes(&mut self, fabric: &FabricParams, k: (u32, u32), bytes: f64) {
        let t = pair_time(fabric, bytes);
        let Some(p) = self.pairs.get_mut(&k) else { return };
        let old = std::mem::replace(&mut p.t, t);
        p.bytes = bytes;
        self.count(k, old, false);
        self.count(k, t, true);
    }

    /// Pair `k` is done.
    fn remove(&mut self, k: (u32, u32)) {
        if let Some(p) = self.pairs.remove(&k) {
            self.count(k, p.t, false);
        }
    }

    /// T(C) of its remaining demand (eq. 2 / 15; unbounded: `u64::MAX` ns).
    fn bound(&self, fabric: &FabricParams) -> Nanos {
        if self.unbounded > 0 {
            return Nanos(u64::MAX);
        }
        let longest = self
            .rows
            .values()
            .chain(self.cols.values())
            .copied()
            .max()
            .unwrap_or(0);
        ocs_bound_of_longest(longest, fabric.ocs_ports).unwrap_or(Nanos(u64::MAX))
    }
}

impl Sunflow {
    /// Current reservations, keyed by sending side (rack, port).
    pub fn reservations(&self) -> &BTreeMap<(u32, u32), Reservation> {
        &self.reservations
    }

    /// Forgets what it keeps of the coflows' demand (not the reservations):
    /// its next call reads every elephant again, as a call without kept
    /// state would. For tests of the kept state.
    #[cfg(test)]
    pub(crate) fn forget_demand(&mut self) {
        self.coflows.clear();
        self.waiting.clear();
        self.plans.clear();
    }

    /// Where coflow `c`'s plans are (or would go) in `self.plans`.
    fn plan_range(&self, c: CoflowId) -> std::ops::Range<usize> {
        let start = self.plans.partition_point(|p| p.coflow < c);
        let end = self.plans.partition_point(|p| p.coflow <= c);
        start..end
    }

    /// Coflow `c`'s plans, from its pairs (after it was read again).
    fn replan(&mut self, c: CoflowId) {
        let range = self.plan_range(c);
        let new: Vec<PairPlan> = self
            .coflows
            .get(&c)
            .into_iter()
            .flat_map(|d| d.pairs.iter())
            .map(|(&(src_rack, dst_rack), p)| PairPlan {
                coflow: c,
                src_rack,
                dst_rack,
                plan: p.port.map_or(FlowPlan::WAIT, FlowPlan::ocs),
            })
            .collect();
        self.plans.splice(range, new);
    }

    /// The plan of pair (c, i, j): `Some(plan)`, or `None` to drop it.
    fn set_plan(&mut self, c: CoflowId, i: u32, j: u32, plan: Option<FlowPlan>) {
        let key = (c, i, j);
        let found = self
            .plans
            .binary_search_by_key(&key, |p| (p.coflow, p.src_rack, p.dst_rack));
        match (found, plan) {
            (Ok(at), Some(plan)) => self.plans[at].plan = plan,
            (Ok(at), None) => {
                self.plans.remove(at);
            }
            (Err(at), Some(plan)) => self.plans.insert(
                at,
                PairPlan {
                    coflow: c,
                    src_rack: i,
                    dst_rack: j,
                    plan,
                },
            ),
            (Err(_), None) => {}
        }
    }

    /// Brings the per-coflow demand up to date with `view` (see the module doc).
    fn sync(&mut self, view: &NetView, progress: &dyn Progress) {
        let fabric = view.fabric;
        let remaining = |ids: &[FlowId]| {
            ids.iter()
                .filter_map(|id| view.flows.get(id))
                .fold(0.0, |sum, f| sum + progress.remaining_bytes(f))
        };
        // Coflows with no active flow left.
        let gone: Vec<CoflowId> = self
            .coflows
            .keys()
            .filter(|id| !view.coflows.contains_key(id))
            .copied()
            .collect();
        for id in gone {
            if let Some(c) = self.coflows.remove(&id) {
                for (&(i, j), p) in &c.pairs {
                    if p.port.is_none() {
                        self.waiting.remove(&(i, id, j));
                    }
                }
            }
            let range = self.plan_range(id);
            self.plans.drain(range);
        }
        // Reserved pairs move: read them again; a pair with no flow left is done.
        let mut left: BTreeMap<CoflowId, usize> = BTreeMap::new();
        let reserved: Vec<(CoflowId, u32, u32)> = self
            .reservations
            .iter()
            .map(|(&(i, _), r)| (r.coflow, i, r.dst))
            .collect();
        for (c, i, j) in reserved {
            let Some(d) = self.coflows.get_mut(&c) else {
                continue;
            };
            let Some(p) = d.pairs.get_mut(&(i, j)) else {
                continue;
            };
            let before = p.flows.len();
            p.flows.retain(|id| view.flows.contains_key(id));
            *left.entry(c).or_default() += before - p.flows.len();
            if p.flows.is_empty() {
                d.remove((i, j));
                self.set_plan(c, i, j, None);
            } else {
                let bytes = remaining(&p.flows);
                d.set_bytes(&fabric, (i, j), bytes);
            }
        }
        // Coflows that gained flows, or lost more than their reserved pairs did: read again.
        for (&id, cv) in &view.coflows {
            let fresh = match self.coflows.get_mut(&id) {
                None => true,
                Some(c) => {
                    let again = c.known != cv.known_bytes
                        || c.active.saturating_sub(cv.flows.len()) > left.get(&id).copied().unwrap_or(0);
                    c.active = cv.flows.len();
                    again
                }
            };
            if !fresh {
                continue;
            }
            let old = self.coflows.remove(&id).unwrap_or_default();
            let mut d = CoflowDemand {
                known: cv.known_bytes,
                active: cv.flows.len(),
                ..CoflowDemand::default()
            };
            for f in view.flows_of(id).filter(|f| f.elephant) {
                d.pairs
                    .entry((f.spec.src.rack, f.spec.dst.rack))
                    .or_default()
                    .flows
                    .push(f.spec.id);
            }
            for (&(i, j), p) in &old.pairs {
                if p.port.is_none() {
                    self.waiting.remove(&(i, id, j));
                }
            }
            let keys: Vec<(u32, u32)> = d.pairs.keys().copied().collect();
            for k in keys {
                let was = old.pairs.get(&k);
                let Some(p) = d.pairs.get_mut(&k) else { continue };
                let held = Reservation { coflow: id, dst: k.1 };
                p.port = (0..fabric.ocs_ports).find(|&w| self.reservations.get(&(k.0, w)) == Some(&held));
                let bytes = match was {
                    // Same flows: waiting ones have not moved, reserved ones were just read.
                    Some(o) if o.flows == p.flows => o.bytes,
                    _ => remaining(&p.flows),
                };
                if p.port.is_none() {
                    self.waiting.insert((k.0, id, k.1));
                }
                p.bytes = bytes;
                p.t = pair_time(&fabric, bytes);
                let t = p.t;
                d.count(k, t, true);
            }
            // Kept even with no elephants, so that it is not read again at every call.
            self.coflows.insert(id, d);
            self.replan(id);
        }
    }
}

/// A waiting pair that may get a port: its coflow's priority (T(C),
/// arrival, id), its bytes left, and its racks.
type Candidate = ((Nanos, Nanos, CoflowId), f64, (u32, u32));

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
        let fabric = view.fabric;
        let ports = fabric.ocs_ports;
        self.sync(view, progress);
        let coflows = &self.coflows;
        self.reservations.retain(|&(i, _), r| {
            coflows
                .get(&r.coflow)
                .is_some_and(|c| c.pairs.contains_key(&(i, r.dst)))
        });

        // Candidates: waiting pairs with a port free on both sides now.
        let mut tx_busy: BTreeSet<(u32, u32)> = self.reservations.keys().copied().collect();
        let mut rx_busy: BTreeSet<(u32, u32)> =
            self.reservations.iter().map(|(&(_, w), r)| (r.dst, w)).collect();
        let mut candidates: Vec<Candidate> = Vec::new();
        for i in (0..fabric.racks).filter(|&i| (0..ports).any(|w| !tx_busy.contains(&(i, w)))) {
            let from_i = self
                .waiting
                .range((i, CoflowId(u64::MIN), u32::MIN)..=(i, CoflowId(u64::MAX), u32::MAX));
            for &(_, c, j) in from_i {
                if !(0..ports).any(|w| !tx_busy.contains(&(i, w)) && !rx_busy.contains(&(j, w))) {
                    continue;
                }
                let Some(d) = self.coflows.get(&c) else { continue };
                let Some(p) = d.pairs.get(&(i, j)) else { continue };
                let arrival = view.coflows.get(&c).map_or(Nanos::ZERO, |v| v.arrival);
                candidates.push(((d.bound(&fabric), arrival, c), p.bytes, (i, j)));
            }
        }
        // Shortest coflow first (T(C), arrival, id), then its pairs by demand, largest first.
        candidates.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)).then(a.2.cmp(&b.2)));

        for ((_, _, c), _, (i, j)) in candidates {
            let mut free = (0..ports).filter(|&w| !tx_busy.contains(&(i, w)) && !rx_busy.contains(&(j, w)));
            let first = free.clone().next();
            let Some(w) = free.find(|&w| view.circuit(i, j, w).is_some()).or(first) else {
                continue;
            };
            tx_busy.insert((i, w));
            rx_busy.insert((j, w));
            self.reservations
                .insert((i, w), Reservation { coflow: c, dst: j });
            self.waiting.remove(&(i, c, j));
            if let Some(p) = self.coflows.get_mut(&c).and_then(|d| d.pairs.get_mut(&(i, j))) {
                p.port = Some(w);
            }
            self.set_plan(c, i, j, Some(FlowPlan::ocs(w)));
        }
        // Circuits for every reservation that has none (new ones, or lost ones).
        let circuits = self
            .reservations
            .iter()
            .filter(|(&(i, w), r)| view.circuit(i, r.dst, w).is_none())
            .map(|(&(i, w), r)| CircuitSetup {
                src_rack: i,
                dst_rack: r.dst,
                port: w,
            })
            .collect();
        Decision {
            pair_plans: self.plans.clone(),
            circuits,
            plans: Vec::new(),
            wake_at: None,
        }
    }
}
