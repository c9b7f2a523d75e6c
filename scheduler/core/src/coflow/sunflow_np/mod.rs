//! `sunflow-np`: Sunflow as Co-scheduler (Li & Shen, ToN 2022, Sec. III-B
//! and V) describes and uses it: "shortest Coflow first (shortest lower
//! bound CCT)" and "the Coflow with higher priority uses the circuits
//! non-preemptively". A reservation, once made, is held until its rack
//! pair's demand is done, whatever arrives meanwhile. Sunflow as its
//! authors run it (re-planned at every arrival and completion, preemptive
//! between coflows) is [`super::sunflow`]; the Co-scheduler experiments use
//! this reading, as that paper did.
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
//! The plans are per (coflow, rack pair) ([`PairPlan`]) and a decision
//! carries only those that changed since the last one
//! ([`Decision::pair_changes`]), so the network moves only the flows of
//! pairs that got or lost a port.
//!
//! A call costs what changed, not O(elephants) nor O(waiting pairs):
//! - The policy keeps each coflow's pairs (their flows and remaining bytes)
//!   from call to call (`demand`), with the row and column sums of t_ij
//!   that give its T(C) in O(racks). Waiting pairs do not move, so their
//!   bytes stand (as read when the pair was last read; the network's
//!   counter for a flow that changed bundles since may differ in the last
//!   bit). It follows a coflow by what changed (`follow`): the elephants
//!   that joined (the ids above the highest it saw) go to their pairs, and
//!   when fewer elephants are active than it keeps, its reserved pairs are
//!   checked for departures (a pair with none left is done: its
//!   reservation ends). It reads a coflow whole only when it cannot follow
//!   it: flows it saw as mice became elephants (once per rack pair), or
//!   elephants left that it cannot find.
//! - Only pairs with a port free on both sides at the start of the greedy
//!   pass can get one in it (ports are only taken during the pass), and
//!   after a pass no waiting pair has one; sides are freed only when
//!   reservations end. So the candidates are the pairs that started waiting
//!   since the last pass, and the waiting pairs from a rack whose sending
//!   side was freed to a rack with a matching free receiving side, or the
//!   other way round (`waiting`): the same reservations as the full pass.
//! - Reserved pairs move, so a coflow's T(C) is known only within bounds
//!   from its kept sums (`demand::CoflowDemand::bounds`); its reserved
//!   pairs are read again (the old full pass read every one at every call)
//!   only when its bounds overlap another candidate coflow's, which is
//!   when the order of the two could depend on them. The order is then
//!   the exact (T(C), arrival, id) order.
//!
//! A reservation lasts δ (if the circuit is new) + bytes/rate, i.e. until the
//! pair's demand is done; lower-priority coflows take ports the higher ones
//! leave idle (work conservation), and keep them until done even if a
//! shorter coflow arrives. Only the affected ports go dark (not-all-stop).
//! One circuit per pair at a time.
//!
//! When it is called ([`SunflowNp::triggers`]): when elephants arrive (a
//! coflow's new rack pair, more flows for a reserved one, or a pair crossing
//! the elephant threshold) and when a coflow's last elephant of a rack pair
//! leaves (its reservation ends). Nothing else changes the decision: after
//! a call, every pair left without a reservation found no free port, and
//! ports are freed only when a reservation ends, so a call in between would
//! keep the same reservations, circuits and plans whatever the coflows'
//! order; mice do not enter it, and a circuit coming up changes no input
//! (the network starts the flows waiting on it by itself).

mod demand;
mod follow;
#[cfg(test)]
mod follow_tests;
mod ports;
mod waiting;

use crate::coflow::decision::PairPlans;
use crate::coflow::{CircuitSetup, CoflowPolicy, Decision, FlowPlan, NetView, PairPlan, Progress, Triggers};
use crate::model::coflow::{CoflowId, FlowId};
use crate::Nanos;
use demand::CoflowDemand;
use follow::follow;
use ports::PortSides;
use std::collections::btree_map::Entry;
use std::collections::BTreeMap;
use waiting::Waiting;

/// A port pair held for one coflow's demand from `src` to `dst`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Reservation {
    /// The coflow.
    pub coflow: CoflowId,
    /// Receiving rack.
    pub dst: u32,
}

/// Non-preemptive Sunflow over the OCS, EPS for the rest.
#[derive(Clone, Debug, Default)]
pub struct SunflowNp {
    /// Reservations by sending side (rack, port).
    reservations: BTreeMap<(u32, u32), Reservation>,
    /// The elephants of each active coflow, per rack pair.
    coflows: BTreeMap<CoflowId, CoflowDemand>,
    /// Pairs without a reservation.
    waiting: Waiting,
    /// The pair plans as the driver holds them after the last decision
    /// ([`Decision::pair_changes`] are relative to them).
    plans: PairPlans,
    /// Changes to `plans` made during the current call, in order.
    changes: Vec<PairPlan>,
    /// The (sending rack, receiving rack) of reservations ended during
    /// the current call.
    freed: Vec<(u32, u32)>,
    /// Calls so far, this one included.
    calls: u64,
}

/// A candidate coflow's T(C) during a pass: within `[low, high]`, exact
/// when `read` (its reserved pairs were read at this call).
#[derive(Clone, Copy, Debug)]
struct Priority {
    low: Nanos,
    high: Nanos,
    read: bool,
}

/// A waiting pair that may get a port: its coflow's priority (T(C),
/// arrival, id), its bytes left, and its racks.
type Candidate = ((Nanos, Nanos, CoflowId), f64, (u32, u32));

impl SunflowNp {
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
    /// again, as a call without kept state would, checks every waiting
    /// pair for a free port and reads every candidate coflow's T(C). For
    /// tests of the kept state (the fluid network's, in the simulator).
    #[doc(hidden)]
    pub fn forget_demand(&mut self) {
        for d in self.coflows.values_mut() {
            *d = CoflowDemand::default();
        }
        self.waiting.clear();
    }

    /// Coflow `c`'s plans, from its pairs (after it was read again): a plan
    /// per pair, and none for pairs it no longer has. Only those that differ
    /// from the driver's are listed (one walk over both, in pair order),
    /// unless `c`'s plans already changed during this call (then all are).
    fn replan(&mut self, c: CoflowId) {
        let Some(d) = self.coflows.get(&c) else { return };
        let plan = |p: &demand::PairDemand| Some(p.port.map_or(FlowPlan::WAIT, FlowPlan::ocs));
        let all = self.changes.iter().any(|p| p.coflow == c);
        let mut held = self.plans.of_coflow(c).peekable();
        let mut changes = Vec::new();
        for (&k, p) in &d.pairs {
            while let Some((gone, _)) = held.next_if(|&(h, _)| h < k) {
                changes.push((gone, None));
            }
            let now = plan(p);
            let before = held.next_if(|&(h, _)| h == k).map(|(_, plan)| plan);
            if all || before != now {
                changes.push((k, now));
            }
        }
        changes.extend(held.map(|(gone, _)| (gone, None)));
        let changes = changes.into_iter().map(|((src_rack, dst_rack), plan)| PairPlan {
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
        // One walk over the kept coflows and the view's, both in id order:
        // coflows gone, coflows to read again, and what the others' flows
        // that joined and left changed (`follow`).
        let (mut gone, mut fresh, mut done, mut changed) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut kept = self.coflows.iter_mut().peekable();
        for (&id, cv) in &view.coflows {
            while let Some((&k, _)) = kept.next_if(|(&k, _)| k < id) {
                gone.push(k);
            }
            let Some((_, c)) = kept.next_if(|(&k, _)| k == id) else {
                fresh.push(id);
                continue;
            };
            match follow(c, id, cv, view, progress, &mut self.waiting) {
                None => fresh.push(id),
                Some(f) => {
                    done.extend(f.done.into_iter().map(|(k, w)| (id, k, Some(w))));
                    changed.extend(f.dropped.into_iter().map(|k| (id, k, None)));
                    changed.extend(f.added.into_iter().map(|k| (id, k, Some(FlowPlan::WAIT))));
                }
            }
        }
        gone.extend(kept.map(|(&k, _)| k));
        for id in gone {
            if let Some(c) = self.coflows.remove(&id) {
                for (&(i, j), p) in &c.pairs {
                    if p.port.is_none() {
                        self.waiting.remove((i, j, id));
                    }
                }
            }
            self.end_reservations_of(id, |_| false);
            let dropped: Vec<(u32, u32)> = self.plans.of_coflow(id).map(|(k, _)| k).collect();
            for (i, j) in dropped {
                self.set_plan(id, i, j, None);
            }
        }
        for (id, (i, j), port) in done {
            if let Some(w) = port {
                self.end_reservation(id, (i, j), w);
            }
            self.set_plan(id, i, j, None);
        }
        for (id, (i, j), plan) in changed {
            self.set_plan(id, i, j, plan);
        }
        for id in fresh {
            let Some(cv) = view.coflows.get(&id) else { continue };
            let old = self.coflows.remove(&id).unwrap_or_default();
            let mut flows: BTreeMap<(u32, u32), Vec<FlowId>> = BTreeMap::new();
            for f in view.flows_of(id).filter(|f| f.elephant) {
                flows
                    .entry((f.spec.src.rack, f.spec.dst.rack))
                    .or_default()
                    .push(f.spec.id);
            }
            // Reservations of pairs it no longer has end.
            self.end_reservations_of(id, |k| flows.contains_key(&k));
            let mut d = CoflowDemand::new(cv, self.calls);
            for (k, ids) in flows {
                let held = Reservation { coflow: id, dst: k.1 };
                let port = (0..fabric.ocs_ports).find(|&w| self.reservations.get(&(k.0, w)) == Some(&held));
                let bytes = match old.pairs.get(&k) {
                    // Same flows, waiting: they have not moved.
                    Some(o) if o.flows == ids && o.port.is_none() => o.bytes,
                    _ => remaining(&ids),
                };
                d.insert(&fabric, k, ids, bytes, port);
            }
            // Pairs that waited and no longer do (a pair that still waits
            // stays, and is not new: no port of its racks was free).
            for (&(i, j), p) in &old.pairs {
                if p.port.is_none() && d.pairs.get(&(i, j)).is_none_or(|n| n.port.is_some()) {
                    self.waiting.remove((i, j, id));
                }
            }
            for (&(i, j), p) in &d.pairs {
                if p.port.is_none() {
                    self.waiting.insert((i, j, id));
                }
            }
            // Kept even with no elephants, so that it is not read again at every call.
            self.coflows.insert(id, d);
            self.replan(id);
        }
    }

    /// Coflow `c`'s T(C) now: its reserved pairs' bytes read again (they
    /// move; its waiting pairs do not).
    fn read_bound(&mut self, c: CoflowId, view: &NetView, progress: &dyn Progress) -> Nanos {
        let fabric = view.fabric;
        let Some(d) = self.coflows.get_mut(&c) else {
            return Nanos(u64::MAX);
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
        d.read_in = self.calls;
        d.bound(&fabric)
    }

    /// The candidate coflows' T(C), read exactly wherever the bounds of two
    /// of them overlap (or touch), so that ordering by `low` gives the
    /// (T(C), arrival, id) order: coflows whose bounds overlap no other's
    /// are apart from all of them whatever their exact T(C).
    fn order(&mut self, coflows: &mut BTreeMap<CoflowId, Priority>, view: &NetView, progress: &dyn Progress) {
        loop {
            let mut by_low: Vec<(Nanos, Nanos, bool, CoflowId)> =
                coflows.iter().map(|(&c, p)| (p.low, p.high, p.read, c)).collect();
            by_low.sort_unstable();
            // Runs of coflows whose bounds chain into each other.
            let mut to_read = Vec::new();
            let mut run: Vec<(bool, CoflowId)> = Vec::new();
            let mut reach = Nanos::ZERO;
            for (low, high, read, c) in by_low {
                if !run.is_empty() && low > reach {
                    if run.len() > 1 {
                        to_read.extend(run.iter().filter(|(read, _)| !read).map(|&(_, c)| c));
                    }
                    run.clear();
                }
                reach = if run.is_empty() { high } else { reach.max(high) };
                run.push((read, c));
            }
            if run.len() > 1 {
                to_read.extend(run.iter().filter(|(read, _)| !read).map(|&(_, c)| c));
            }
            if to_read.is_empty() {
                return;
            }
            for c in to_read {
                let t = self.read_bound(c, view, progress);
                coflows.insert(
                    c,
                    Priority {
                        low: t,
                        high: t,
                        read: true,
                    },
                );
            }
        }
    }
}

impl CoflowPolicy for SunflowNp {
    fn name(&self) -> &'static str {
        "sunflow-np"
    }
    fn uses_ocs(&self) -> bool {
        true
    }
    fn triggers(&self) -> Triggers {
        Triggers::ELEPHANT_PAIRS
    }
    fn decide(&mut self, _now: Nanos, view: &NetView, progress: &dyn Progress) -> Decision {
        let fabric = view.fabric;
        let ports = fabric.ocs_ports;
        self.calls += 1;
        self.sync(view, progress);

        // Candidates: waiting pairs with a port free on both sides now (see
        // the module doc): new ones, and those the freed sides may serve.
        let mut sides = PortSides::of(fabric.racks, ports, &self.reservations);
        let mut maybe = self.waiting.take_new();
        let (mut freed_tx, mut freed_rx): (Vec<u32>, Vec<u32>) = self.freed.drain(..).unzip();
        for racks in [&mut freed_tx, &mut freed_rx] {
            racks.sort_unstable();
            racks.dedup();
        }
        let free = |i: u32, j: u32| sides.free(i, j).next().is_some();
        for &i in &freed_tx {
            self.waiting.leaving(i, |j| free(i, j), &mut maybe);
        }
        for &j in &freed_rx {
            self.waiting.entering(j, |i| free(i, j), &mut maybe);
        }
        maybe.retain(|&(i, j, _)| free(i, j));
        maybe.sort_unstable();
        maybe.dedup();
        let mut priorities: BTreeMap<CoflowId, Priority> = BTreeMap::new();
        for &(_, _, c) in &maybe {
            let (Entry::Vacant(e), Some(d)) = (priorities.entry(c), self.coflows.get(&c)) else {
                continue;
            };
            // A coflow read at this call has its T(C) exactly.
            let read = d.read_in == self.calls;
            let (low, high) = if read {
                let t = d.bound(&fabric);
                (t, t)
            } else {
                d.bounds(&fabric)
            };
            e.insert(Priority { low, high, read });
        }
        self.order(&mut priorities, view, progress);
        let mut candidates: Vec<Candidate> = Vec::with_capacity(maybe.len());
        for (i, j, c) in maybe {
            let (Some(p), Some(d)) = (priorities.get(&c), self.coflows.get(&c)) else {
                continue;
            };
            let Some(pair) = d.pairs.get(&(i, j)) else {
                continue;
            };
            let arrival = view.coflows.get(&c).map_or(Nanos::ZERO, |v| v.arrival);
            candidates.push(((p.low, arrival, c), pair.bytes, (i, j)));
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
            self.waiting.remove((i, j, c));
            if let Some(d) = self.coflows.get_mut(&c) {
                d.reserve((i, j), w);
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
        let pair_changes = self.plans.apply_changes(&self.changes);
        self.changes.clear();
        Decision {
            pair_changes,
            circuits,
            ..Decision::default()
        }
    }
}
