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
use crate::coflow::decision::PairPlans;
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

/// A coflow's rack pair without a reservation: (sending rack, coflow,
/// receiving rack), or (receiving rack, coflow, sending rack) in the index by
/// receiving rack.
type WaitingPair = (u32, CoflowId, u32);

/// Sunflow over the OCS, EPS for the rest.
#[derive(Clone, Debug, Default)]
pub struct Sunflow {
    /// Reservations by sending side (rack, port).
    reservations: BTreeMap<(u32, u32), Reservation>,
    /// The elephants of each active coflow, per rack pair.
    coflows: BTreeMap<CoflowId, CoflowDemand>,
    /// Pairs without a reservation, by (source rack, coflow, destination rack).
    waiting: BTreeSet<WaitingPair>,
    /// The same pairs by (destination rack, coflow, source rack).
    waiting_into: BTreeSet<WaitingPair>,
    /// Pairs put in `waiting` since the last greedy pass (by source rack):
    /// the only waiting pairs, besides those at a rack whose port side was
    /// freed, that may have a port free on both sides.
    new_waiting: Vec<WaitingPair>,
    /// The pair plans as the driver holds them after the last decision
    /// ([`Decision::pair_changes`] are relative to them).
    plans: PairPlans,
    /// Changes to `plans` made during the current call, in order.
    changes: Vec<PairPlan>,
    /// The (sending rack, receiving rack) of reservations ended during
    /// the current call.
    freed: Vec<(u32, u32)>,
}

/// One coflow's elephants as last read, with the row and column sums of
/// `t_ij` (Co-scheduler eq. 1) that give its T(C) (eq. 2 / 15).
#[derive(Clone, Debug, Default)]
struct CoflowDemand {
    /// Its bytes so far ([`crate::coflow::CoflowView::known_bytes`]) when
    /// read: flows joined if it grew. `None`: read it again.
    known: Option<Bytes>,
    /// Its active flows (elephants and mice) after the last call.
    active: usize,
    /// Its rack pairs with active elephants.
    pairs: BTreeMap<(u32, u32), PairDemand>,
    /// Those of `pairs` that hold a reservation.
    reserved: BTreeSet<(u32, u32)>,
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
        self.reserved.remove(&k);
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

    /// The pair plans of its last decision, as the driver holds them.
    pub fn pair_plans(&self) -> &PairPlans {
        &self.plans
    }

    /// Forgets what it keeps of the coflows' demand (not the reservations,
    /// nor the plans the driver holds): its next call reads every elephant
    /// again, as a call without kept state would, and walks every waiting
    /// pair. For tests of the kept state.
    #[cfg(test)]
    pub(crate) fn forget_demand(&mut self) {
        for d in self.coflows.values_mut() {
            *d = CoflowDemand::default();
        }
        self.waiting.clear();
        self.waiting_into.clear();
        self.new_waiting.clear();
    }

    /// Pair (i, c, j) waits for a port.
    fn wait(&mut self, (i, c, j): WaitingPair) {
        if self.waiting.insert((i, c, j)) {
            self.waiting_into.insert((j, c, i));
            self.new_waiting.push((i, c, j));
        }
    }

    /// Pair (i, c, j) no longer waits (it got a port, or it is gone).
    fn unwait(&mut self, (i, c, j): WaitingPair) {
        if self.waiting.remove(&(i, c, j)) {
            self.waiting_into.remove(&(j, c, i));
        }
    }

    /// Coflow `c`'s plans, from its pairs (after it was read again): a plan
    /// per pair, and none for pairs it no longer has.
    fn replan(&mut self, c: CoflowId) {
        let Some(d) = self.coflows.get(&c) else { return };
        let plan = |p: &PairDemand| p.port.map_or(FlowPlan::WAIT, FlowPlan::ocs);
        let dropped = self
            .plans
            .of_coflow(c)
            .filter(|(k, _)| !d.pairs.contains_key(k))
            .map(|((i, j), _)| (i, j, None));
        let kept = d.pairs.iter().map(|(&(i, j), p)| (i, j, Some(plan(p))));
        let changes = dropped.chain(kept).map(|(src_rack, dst_rack, plan)| PairPlan {
            coflow: c,
            src_rack,
            dst_rack,
            plan,
        });
        self.changes.extend(changes);
    }

    /// The plan of pair (c, i, j) from now on: `Some(plan)`, or `None` to drop it.
    fn set_plan(&mut self, coflow: CoflowId, src_rack: u32, dst_rack: u32, plan: Option<FlowPlan>) {
        self.changes.push(PairPlan {
            coflow,
            src_rack,
            dst_rack,
            plan,
        });
    }

    /// Ends the reservation of coflow `c`'s pair (i, j) on port `w`: its
    /// port sides are free for this call's pass.
    fn end_reservation(&mut self, c: CoflowId, (i, j): (u32, u32), w: u32) {
        if self.reservations.get(&(i, w)) == Some(&Reservation { coflow: c, dst: j }) {
            self.reservations.remove(&(i, w));
            self.freed.push((i, j));
        }
    }

    /// Ends coflow `c`'s reservations whose pair `keep` rejects.
    fn end_reservations_of(&mut self, c: CoflowId, keep: impl Fn((u32, u32)) -> bool) {
        let ended: Vec<((u32, u32), u32)> = self
            .reservations
            .iter()
            .filter(|(&(i, _), r)| r.coflow == c && !keep((i, r.dst)))
            .map(|(&(i, w), r)| ((i, r.dst), w))
            .collect();
        for (k, w) in ended {
            self.end_reservation(c, k, w);
        }
    }

    /// Brings the per-coflow demand up to date with `view` (see the module
    /// doc); ends the reservations whose pair is done.
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
                        self.unwait((i, id, j));
                    }
                }
            }
            self.end_reservations_of(id, |_| false);
            let dropped: Vec<(u32, u32)> = self.plans.of_coflow(id).map(|(k, _)| k).collect();
            for (i, j) in dropped {
                self.set_plan(id, i, j, None);
            }
        }
        for (&id, cv) in &view.coflows {
            let fresh = match self.coflows.get_mut(&id) {
                None => true,
                // Flows joined.
                Some(c) if c.known != Some(cv.known_bytes) => true,
                // None joined nor left: its pairs stand (reserved ones move,
                // and are read again only if its T(C) is needed).
                Some(c) if c.active == cv.flows.len() => false,
                // Flows left: those of reserved pairs may have (waiting ones
                // do not move); if more left, mice did: read it again.
                Some(c) => {
                    let mut left = 0;
                    let mut done = Vec::new();
                    for &k in &c.reserved {
                        let Some(p) = c.pairs.get_mut(&k) else { continue };
                        let before = p.flows.len();
                        p.flows.retain(|id| view.flows.contains_key(id));
                        left += before - p.flows.len();
                        if p.flows.is_empty() {
                            done.push((k, p.port));
                        }
                    }
                    for &(k, _) in &done {
                        c.remove(k);
                    }
                    let again = c.active.saturating_sub(cv.flows.len()) > left;
                    c.active = cv.flows.len();
                    for ((i, j), port) in done {
                        if let Some(w) = port {
                            self.end_reservation(id, (i, j), w);
                        }
                        self.set_plan(id, i, j, None);
                    }
                    again
                }
            };
            if !fresh {
                continue;
            }
            let old = self.coflows.remove(&id).unwrap_or_default();
            let mut d = CoflowDemand {
                known: Some(cv.known_bytes),
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
            // Reservations of pairs it no longer has end.
            self.end_reservations_of(id, |k| d.pairs.contains_key(&k));
            let keys: Vec<(u32, u32)> = d.pairs.keys().copied().collect();
            for k in keys {
                let was = old.pairs.get(&k);
                let Some(p) = d.pairs.get_mut(&k) else { continue };
                let held = Reservation { coflow: id, dst: k.1 };
                p.port = (0..fabric.ocs_ports).find(|&w| self.reservations.get(&(k.0, w)) == Some(&held));
                let bytes = match was {
                    // Same flows, waiting: they have not moved.
                    Some(o) if o.flows == p.flows && o.port.is_none() => o.bytes,
                    _ => remaining(&p.flows),
                };
                if p.port.is_some() {
                    d.reserved.insert(k);
                }
                p.bytes = bytes;
                p.t = pair_time(&fabric, bytes);
                let t = p.t;
                d.count(k, t, true);
            }
            // Pairs that waited and no longer do (a pair that still waits
            // stays, and is not new: no port of its racks was free).
            for (&(i, j), p) in &old.pairs {
                if p.port.is_none() && d.pairs.get(&(i, j)).is_none_or(|n| n.port.is_some()) {
                    self.unwait((i, id, j));
                }
            }
            for (&(i, j), p) in &d.pairs {
                if p.port.is_none() {
                    self.wait((i, id, j));
                }
            }
            // Kept even with no elephants, so that it is not read again at every call.
            self.coflows.insert(id, d);
            self.replan(id);
        }
    }

    /// Coflow `c`'s T(C) and arrival, its reserved pairs' bytes read
    /// again first (they move; its waiting pairs do not).
    fn priority(&mut self, c: CoflowId, view: &NetView, progress: &dyn Progress) -> (Nanos, Nanos) {
        let fabric = view.fabric;
        let arrival = view.coflows.get(&c).map_or(Nanos::ZERO, |v| v.arrival);
        let Some(d) = self.coflows.get_mut(&c) else {
            return (Nanos(u64::MAX), arrival);
        };
        let reserved: Vec<(u32, u32)> = d.reserved.iter().copied().collect();
        for k in reserved {
            let Some(p) = d.pairs.get(&k) else { continue };
            let bytes = p
                .flows
                .iter()
                .filter_map(|id| view.flows.get(id))
                .fold(0.0, |sum, f| sum + progress.remaining_bytes(f));
            d.set_bytes(&fabric, k, bytes);
        }
        (d.bound(&fabric), arrival)
    }
}

/// Which port sides are reserved, during a greedy pass: the sending side
/// (rack, port) and the receiving side (rack, port), one flag per side.
struct PortSides {
    ports: u32,
    tx: Vec<bool>,
    rx: Vec<bool>,
}

impl PortSides {
    /// The sides `reservations` hold, on `racks` racks of `ports` ports.
    fn of(racks: u32, ports: u32, reservations: &BTreeMap<(u32, u32), Reservation>) -> PortSides {
        let n = racks as usize * ports as usize;
        let mut sides = PortSides {
            ports,
            tx: vec![false; n],
            rx: vec![false; n],
        };
        for (&(i, w), r) in reservations {
            sides.take(i, r.dst, w);
        }
        sides
    }

    fn at(&self, rack: u32, port: u32) -> usize {
        rack as usize * self.ports as usize + port as usize
    }

    /// The ports whose sending side at `i` and receiving side at `j` are
    /// both free, in port order (a rack outside the fabric has none).
    fn free(&self, i: u32, j: u32) -> impl Iterator<Item = u32> + Clone + '_ {
        (0..self.ports).filter(move |&w| {
            self.tx.get(self.at(i, w)) == Some(&false) && self.rx.get(self.at(j, w)) == Some(&false)
        })
    }

    /// Port `w`'s sending side at `i` and receiving side at `j` are taken.
    fn take(&mut self, i: u32, j: u32, w: u32) {
        let (t, r) = (self.at(i, w), self.at(j, w));
        if let Some(side) = self.tx.get_mut(t) {
            *side = true;
        }
        if let Some(side) = self.rx.get_mut(r) {
            *side = true;
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
        // Reservations whose pair is done ended in `sync`; their port sides are free.
        let (mut freed_tx, mut freed_rx): (Vec<u32>, Vec<u32>) = self.freed.drain(..).unzip();

        // Candidates: waiting pairs with a port free on both sides now. After
        // the last pass no waiting pair had one, and sides are freed only
        // when reservations end, so they are among the pairs that started
        // waiting since then and the waiting pairs from a rack whose
        // sending side was freed or into one whose receiving side was.
        let mut sides = PortSides::of(fabric.racks, ports, &self.reservations);
        let mut maybe: Vec<WaitingPair> = std::mem::take(&mut self.new_waiting);
        maybe.retain(|k| self.waiting.contains(k));
        for racks in [&mut freed_tx, &mut freed_rx] {
            racks.sort_unstable();
            racks.dedup();
        }
        let at_rack = |r: u32| (r, CoflowId(u64::MIN), u32::MIN)..=(r, CoflowId(u64::MAX), u32::MAX);
        for &i in &freed_tx {
            maybe.extend(self.waiting.range(at_rack(i)).copied());
        }
        for &j in &freed_rx {
            maybe.extend(self.waiting_into.range(at_rack(j)).map(|&(j, c, i)| (i, c, j)));
        }
        maybe.sort_unstable();
        maybe.dedup();
        let mut priorities: BTreeMap<CoflowId, (Nanos, Nanos)> = BTreeMap::new();
        let mut candidates: Vec<Candidate> = Vec::new();
        for (i, c, j) in maybe {
            if sides.free(i, j).next().is_none() {
                continue;
            }
            let (bound, arrival) = match priorities.get(&c) {
                Some(&p) => p,
                None => {
                    let p = self.priority(c, view, progress);
                    priorities.insert(c, p);
                    p
                }
            };
            let Some(p) = self.coflows.get(&c).and_then(|d| d.pairs.get(&(i, j))) else {
                continue;
            };
            candidates.push(((bound, arrival, c), p.bytes, (i, j)));
        }
        // Shortest coflow first (T(C), arrival, id), then its pairs by demand, largest first.
        candidates.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)).then(a.2.cmp(&b.2)));

        for ((_, _, c), _, (i, j)) in candidates {
            let port = {
                let mut free = sides.free(i, j);
                let first = free.clone().next();
                free.find(|&w| view.circuit(i, j, w).is_some()).or(first)
            };
            let Some(w) = port else { continue };
            sides.take(i, j, w);
            self.reservations
                .insert((i, w), Reservation { coflow: c, dst: j });
            self.unwait((i, c, j));
            if let Some(d) = self.coflows.get_mut(&c) {
                if let Some(p) = d.pairs.get_mut(&(i, j)) {
                    p.port = Some(w);
                    d.reserved.insert((i, j));
                }
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
        let pair_changes = self
            .plans
            .apply(&self.changes)
            .into_iter()
            .map(|((coflow, src_rack, dst_rack), plan)| PairPlan {
                coflow,
                src_rack,
                dst_rack,
                plan,
            })
            .collect();
        self.changes.clear();
        Decision {
            pair_changes,
            circuits,
            plans: Vec::new(),
            wake_at: None,
        }
    }
}
