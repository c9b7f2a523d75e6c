//! Sunflow as its authors' simulator runs it: Huang, Sun & Ng, "Sunflow:
//! Efficient Optical Circuit Scheduling for Coflows", CoNEXT'16, and
//! `SchedulerSunflow` in github.com/sunnyxhuang/sunflow (`src/`).
//!
//! The paper decides preemption at two levels: the subflows of one coflow
//! never preempt each other, while between coflows a policy decides, the
//! paper's being shortest coflow first. The simulator carries that out by
//! planning again from scratch whenever the set of coflows changes, so a
//! short coflow that arrives takes the ports a long one holds:
//!
//! ```text
//! at a coflow's arrival or completion:             -- CoflowArriveCallBack, CoflowFinishCallBack
//!   order coflows by α = the most bytes left at any one port (stable)
//!   re-plan
//! at the end of a plan, if demand is left: re-plan -- SCHEDULE_END
//! re-plan:                                         -- ComputeReservations
//!   layer[c] = c's bytes left per rack pair, for the pairs no earlier coflow has bytes on
//!   reservations = solver::reserve(layers)         -- greedy for the first, gaps for the rest
//! at each reservation's start (plan time):         -- ORDER_CIRCUIT
//!   set up its circuits; a circuit using one of their port sides goes down
//! at all times:                                    -- RateControlBySortedCoflows, SetFlowPath
//!   a rack pair's circuit carries the first coflow (in order) with bytes on that pair
//! ```
//!
//! Only elephants ([`NetView::may_use_ocs`]) enter it: on a hybrid fabric
//! mice go over EPS with fair sharing, on a fabric of circuits only (the
//! simulator's, with an elephant threshold of 0) every flow between racks
//! is an elephant. An elephant without a circuit waits.
//!
//! Where ocslab's reading differs from the authors' code:
//! - A circuit still in its dark time when a new plan asks for it again
//!   comes up when it would have; their simulator forgets it at the re-plan
//!   and starts its δ again.
//! - Flows of a rack pair share its circuit max-min fairly rather than in
//!   proportion to their bytes left; the pair finishes at the same time.
//! - Coflows of equal α keep their previous order (theirs sorts with a
//!   comparator that is not a strict order, which may swap equals).
//!
//! When it is called ([`Sunflow::triggers`]): at elephant arrivals, when a
//! coflow's last elephant between two racks leaves (the next coflow with
//! bytes on that pair takes its circuit; if it was the coflow's last
//! elephant, the coflows are ordered again and a plan made), and at its
//! `wake_at` (the next reservation's start, or the plan's end). A call at
//! any other event finds nothing changed and changes nothing.
//!
//! Cost: the policy keeps each coflow's elephants per rack pair with their
//! bytes left. A plan reads whole only the coflows that are new or gained
//! elephants, and the bytes of the pairs a circuit carried since the last
//! plan (no other pair moved); then it orders, layers and reserves (the
//! solver looks only at the port sides a layer can use). A call that does
//! not plan looks at the pairs with a circuit only when a coflow gained
//! flows or has fewer active elephants than it kept, and at those pairs
//! only where such a coflow holds the circuit.

mod pairs;
mod rack_set;
pub mod solver;
#[cfg(test)]
mod solver_props;

use crate::coflow::decision::{PairKey, PairPlans};
use crate::coflow::{
    set_up_circuits, CircuitSetup, CircuitSwitch, CircuitView, CoflowPolicy, Decision, FabricParams,
    FlowPlan, FlowView, NetView, PairPlan, Progress, Triggers,
};
use crate::model::coflow::{CoflowId, FlowId};
use crate::net::fasthash::FastMap;
use crate::HostId;
use crate::{Bytes, Nanos};
use pairs::Pairs;
use solver::{Circuits, PairDemand};
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

/// A coflow's elephants between two racks.
#[derive(Clone, Debug, Default)]
struct Pair {
    /// The active ones.
    flows: Vec<FlowId>,
    /// Their bytes left, as last read (they change only while the pair's
    /// circuit carries them).
    bytes: f64,
    /// Of those, the most that one host of the pair sends or receives.
    busiest_host: f64,
}

/// Scratch space of [`Pair::read`]: bytes per sending and per receiving
/// host of one pair (a rack holds a few hosts).
#[derive(Clone, Debug, Default)]
struct HostBytes {
    sends: Vec<(HostId, f64)>,
    receives: Vec<(HostId, f64)>,
}

impl Pair {
    /// Reads the bytes left of its flows in `view`.
    fn read(&mut self, view: &NetView, progress: &dyn Progress, hosts: &mut HostBytes) {
        let HostBytes { sends, receives } = hosts;
        sends.clear();
        receives.clear();
        let add =
            |hosts: &mut Vec<(HostId, f64)>, h: HostId, b: f64| match hosts.iter_mut().find(|(x, _)| *x == h)
            {
                Some((_, sum)) => *sum += b,
                None => hosts.push((h, b)),
            };
        self.bytes = 0.0;
        for f in self.flows.iter().filter_map(|id| view.flows.get(id)) {
            let left = progress.remaining_bytes(f);
            self.bytes += left;
            add(sends, f.spec.src, left);
            add(receives, f.spec.dst, left);
        }
        self.busiest_host = sends
            .iter()
            .chain(receives.iter())
            .map(|&(_, b)| b)
            .fold(0.0, f64::max);
    }

    /// What the pair asks of the solver: the time it needs on its circuit
    /// (its bytes at the port rate, or its busiest host's at the NIC rate
    /// when that is longer: the reference simulator's racks have no NICs,
    /// ocslab's hosts may be slower than a circuit), rounded up to whole
    /// nanoseconds so that no reservation ends before its bytes do, and
    /// given as bytes at the port rate.
    fn demand(&self, fabric: &FabricParams) -> f64 {
        let port = fabric.ocs_port_rate.bytes_per_sec();
        let nic = fabric.host_rate.bytes_per_sec();
        let mut secs = self.bytes / port;
        if nic > 0.0 {
            secs = secs.max(self.busiest_host / nic);
        }
        if !secs.is_finite() || secs <= 0.0 {
            return self.bytes;
        }
        // Float noise of an exact quotient does not cost a nanosecond.
        let ns = (secs * 1e9 - 1e-6).ceil().max(1.0);
        ns * 1e-9 * port
    }
}

/// What the policy keeps of a coflow with elephants.
#[derive(Clone, Debug, Default)]
struct Kept {
    /// Its bytes known at the last call (flows that joined change it).
    known: Bytes,
    /// Its active elephants, by (source rack, destination rack).
    pairs: Pairs,
    /// How many there are.
    elephants: usize,
    /// Elephants joined since it was read: read it whole at the next plan.
    stale: bool,
}

impl Kept {
    /// Coflow `id`'s elephants in `view`, with their bytes left.
    fn read(
        id: CoflowId,
        known: Bytes,
        view: &NetView,
        progress: &dyn Progress,
        hosts: &mut HostBytes,
    ) -> Kept {
        let mut elephants = 0;
        let mut pairs = Pairs::of(view.flows_of(id).filter(|f| f.elephant).map(|f| {
            elephants += 1;
            ((f.spec.src.rack, f.spec.dst.rack), f.spec.id)
        }));
        for p in pairs.iter_mut() {
            p.read(view, progress, hosts);
        }
        Kept {
            known,
            pairs,
            elephants,
            stale: false,
        }
    }

    /// Whether `f` is one of its kept elephants.
    fn holds(&self, f: &FlowView) -> bool {
        self.pairs
            .get((f.spec.src.rack, f.spec.dst.rack))
            .is_some_and(|p| p.flows.contains(&f.spec.id))
    }
}

/// Sunflow, re-planned at every arrival and completion.
#[derive(Clone, Debug, Default)]
pub struct Sunflow {
    /// Coflows with elephants, in priority order.
    order: Vec<CoflowId>,
    /// Their elephants.
    coflows: BTreeMap<CoflowId, Kept>,
    /// Active coflows without elephants, with their bytes known when last read.
    mice: BTreeMap<CoflowId, Bytes>,
    /// Rack pairs with a circuit at some time since the last plan (those
    /// it had, and those set up since): their coflows' bytes are read
    /// again at the next (the others' have not moved).
    moved: BTreeSet<(u32, u32)>,
    /// Active flows at the last call.
    active: usize,
    /// Per rack pair, the coflows with elephants on it, in priority order:
    /// the first owns the pair's circuit.
    owners: FastMap<(u32, u32), Vec<CoflowId>>,
    /// Circuits of the current plan, by when they are set up; those before
    /// `next_setup` are done.
    setups: Vec<(Nanos, CircuitSetup)>,
    next_setup: usize,
    /// When the current plan ends (`None`: no plan).
    plan_end: Option<Nanos>,
    /// The pair plans as the driver holds them.
    plans: PairPlans,
    /// Plans made so far.
    replans: u64,
    /// Scratch space of reading a pair's bytes.
    hosts: HostBytes,
    /// Scratch space of a plan: one layer of pairs per coflow.
    layers: Vec<Vec<PairDemand>>,
}

/// A switch that notes the rack pairs whose circuit changed, and the
/// setups that were carried out (not those already up or coming up).
#[derive(Default)]
struct Changed {
    pairs: BTreeSet<(u32, u32)>,
    made: Vec<CircuitSetup>,
}

impl CircuitSwitch for Changed {
    fn tear_down(&mut self, _now: Nanos, c: &CircuitView) {
        self.pairs.insert((c.src_rack, c.dst_rack));
    }
    fn set_up(&mut self, _now: Nanos, c: &CircuitView) {
        self.pairs.insert((c.src_rack, c.dst_rack));
        self.made.push(CircuitSetup {
            src_rack: c.src_rack,
            dst_rack: c.dst_rack,
            port: c.port,
        });
    }
}

impl Sunflow {
    /// Plans made so far (at arrivals, completions and plan ends).
    pub fn replans(&self) -> u64 {
        self.replans
    }

    /// The coflows with elephants, in the order they were last given.
    pub fn order(&self) -> &[CoflowId] {
        &self.order
    }

    /// Reads `view` for what changed since the last call: whether an
    /// elephant joined, whether a coflow's elephants are all done; notes
    /// the rack pairs whose owner changed in `dirty` and the (coflow, rack
    /// pair)s that are done in `gone`.
    fn changes(
        &mut self,
        view: &NetView,
        dirty: &mut Vec<(u32, u32)>,
        gone: &mut Vec<PairKey>,
    ) -> (bool, bool) {
        let mut arrived = false;
        let mut finished = false;
        // Coflows gone, and flows that joined: an elephant among them if a
        // coflow has more active elephants than it kept (every kept one
        // that left is found below).
        let mut joined = false;
        // The kept coflows that may have lost an elephant since they were
        // last looked at (in id order): gone, joined by flows, or with
        // fewer active elephants than kept; each with how many of its kept
        // elephants left (`None`: not known). Every active elephant of a
        // coflow that is not stale is kept, so that is the difference of
        // the counts.
        let mut lost: Vec<(CoflowId, Option<usize>)> = Vec::new();
        let left = |kept: &Kept, active: usize| kept.elephants.checked_sub(active);
        for (&id, kept) in &mut self.coflows {
            match view.coflows.get(&id) {
                None => {
                    finished = true;
                    lost.push((id, Some(kept.elephants)));
                }
                Some(cv) if cv.known_bytes != kept.known => {
                    joined = true;
                    kept.known = cv.known_bytes;
                    // By identity: an elephant may have left as another
                    // joined, leaving the count as it was.
                    if view.flows_of(id).any(|f| f.elephant && !kept.holds(f)) {
                        kept.stale = true;
                        arrived = true;
                        lost.push((id, None));
                    } else {
                        lost.push((id, left(kept, cv.elephants())));
                    }
                }
                Some(cv) if cv.elephants() != kept.elephants => lost.push((id, left(kept, cv.elephants()))),
                Some(_) => {}
            }
        }
        // Coflows without elephants so far: read again when flows join.
        self.mice.retain(|id, _| view.coflows.contains_key(id));
        for (&id, cv) in &view.coflows {
            if self.coflows.contains_key(&id) || self.mice.get(&id) == Some(&cv.known_bytes) {
                continue;
            }
            joined = true;
            if view.flows_of(id).any(|f| f.elephant) {
                arrived = true; // read whole at the plan
            } else {
                self.mice.insert(id, cv.known_bytes);
            }
        }
        // With no flow joined and as many active as at the last call, none
        // left either.
        let active = view.flows.len();
        if !joined && active == std::mem::replace(&mut self.active, active) {
            return (arrived, finished);
        }
        // Elephants only leave while their pair's circuit carries them,
        // and only the coflows in `lost` lost any: the search ends when
        // every one that left is found.
        let mut unfound: Option<usize> = lost.iter().map(|&(_, n)| n).sum();
        if unfound == Some(0) {
            return (arrived, finished);
        }
        let mut carrying: Vec<(u32, u32)> =
            view.circuits.values().map(|c| (c.src_rack, c.dst_rack)).collect();
        carrying.sort_unstable();
        carrying.dedup();
        for pair in carrying {
            if unfound == Some(0) {
                break;
            }
            let Some(chain) = self.owners.get_mut(&pair) else {
                continue;
            };
            while let Some(&c) = chain.first() {
                let Ok(at) = lost.binary_search_by_key(&c, |&(id, _)| id) else {
                    break;
                };
                let missing = &mut lost[at].1;
                if *missing == Some(0) {
                    break;
                }
                let Some(kept) = self.coflows.get_mut(&c) else {
                    chain.remove(0);
                    continue;
                };
                let Some(p) = kept.pairs.get_mut(pair) else {
                    chain.remove(0);
                    continue;
                };
                let before = p.flows.len();
                p.flows.retain(|id| view.flows.contains_key(id));
                let found = before - p.flows.len();
                kept.elephants -= found;
                if let Some(m) = missing {
                    *m = m.saturating_sub(found);
                }
                if let Some(u) = &mut unfound {
                    *u = u.saturating_sub(found);
                }
                if !p.flows.is_empty() {
                    break;
                }
                kept.pairs.remove(pair);
                chain.remove(0);
                dirty.push(pair);
                gone.push((c, pair.0, pair.1));
                finished |= kept.pairs.is_empty();
            }
        }
        (arrived, finished)
    }

    /// Brings the kept coflows up to date (gone ones out, new and stale
    /// ones read whole, the bytes of pairs a circuit carried read again);
    /// with `resort`, orders the coflows again by α; then plans from `now`.
    fn replan(&mut self, now: Nanos, view: &NetView, progress: &dyn Progress, resort: bool) {
        self.replans += 1;
        let fabric = view.fabric;
        let mut coflows = std::mem::take(&mut self.coflows);
        coflows.retain(|id, k| view.coflows.contains_key(id) && !k.stale && !k.pairs.is_empty());
        let mut moved = std::mem::take(&mut self.moved);
        moved.extend(view.circuits.values().map(|c| (c.src_rack, c.dst_rack)));
        for pair in moved {
            for c in self.owners.get(&pair).into_iter().flatten() {
                let Some(p) = coflows.get_mut(c).and_then(|k| k.pairs.get_mut(pair)) else {
                    continue;
                };
                p.read(view, progress, &mut self.hosts);
            }
        }
        self.moved
            .extend(view.circuits.values().map(|c| (c.src_rack, c.dst_rack)));
        for (&id, cv) in &view.coflows {
            if coflows.contains_key(&id) || self.mice.get(&id) == Some(&cv.known_bytes) {
                continue;
            }
            let k = Kept::read(id, cv.known_bytes, view, progress, &mut self.hosts);
            if k.pairs.is_empty() {
                self.mice.insert(id, cv.known_bytes);
            } else {
                self.mice.remove(&id);
                coflows.insert(id, k);
            }
        }
        // The order: kept coflows as they were, new ones after by arrival.
        self.order.retain(|c| coflows.contains_key(c));
        let known: BTreeSet<CoflowId> = self.order.iter().copied().collect();
        let mut new: Vec<CoflowId> = coflows.keys().copied().filter(|c| !known.contains(c)).collect();
        new.sort_by_key(|c| (view.coflows.get(c).map_or(Nanos::ZERO, |v| v.arrival), *c));
        self.order.extend(new);
        if resort {
            // α: the most bytes left at one sending or receiving rack.
            let racks = fabric.racks as usize;
            let mut send = vec![0.0f64; racks];
            let mut receive = vec![0.0f64; racks];
            let mut alpha = |k: &Kept| {
                for ((i, j), p) in k.pairs.iter() {
                    send[i as usize % racks] += p.bytes;
                    receive[j as usize % racks] += p.bytes;
                }
                let mut most = 0.0f64;
                for (i, j) in k.pairs.keys() {
                    let (i, j) = (i as usize % racks, j as usize % racks);
                    most = most.max(send[i]).max(receive[j]);
                    send[i] = 0.0;
                    receive[j] = 0.0;
                }
                most
            };
            let alphas: BTreeMap<CoflowId, f64> = coflows.iter().map(|(&c, k)| (c, alpha(k))).collect();
            self.order.sort_by(|a, b| alphas[a].total_cmp(&alphas[b]));
        }
        // The chains rebuilt in those already allocated, and one layer per
        // coflow: the pairs it owns (it comes first in their chains), in
        // pair order.
        for chain in self.owners.values_mut() {
            chain.clear();
        }
        let mut layers = std::mem::take(&mut self.layers);
        layers.resize_with(self.order.len(), Vec::new);
        for (layer, &c) in layers.iter_mut().zip(&self.order) {
            layer.clear();
            for ((src, dst), p) in coflows[&c].pairs.iter() {
                let chain = self.owners.entry((src, dst)).or_default();
                if chain.is_empty() {
                    layer.push(PairDemand {
                        src,
                        dst,
                        bytes: p.demand(&fabric),
                    });
                }
                chain.push(c);
            }
        }
        self.owners.retain(|_, chain| !chain.is_empty());
        self.coflows = coflows;
        let plan = solver::reserve(
            &layers,
            Circuits {
                racks: fabric.racks,
                ports: fabric.ocs_ports,
                rate: fabric.ocs_port_rate.bytes_per_sec(),
                delta: fabric.reconfig_delay.as_secs_f64(),
            },
        );
        self.layers = layers;
        self.setups.clear();
        self.next_setup = 0;
        self.setups.extend(plan.reserved.iter().map(|r| {
            let setup = CircuitSetup {
                src_rack: r.src,
                dst_rack: r.dst,
                port: r.port,
            };
            (now + Nanos::from_secs_f64(r.start), setup)
        }));
        self.plan_end = (!plan.reserved.is_empty()).then(|| now + Nanos::from_secs_f64(plan.horizon));
    }

    /// The plan of coflow `c`'s flows on `pair` given the circuits as they
    /// will be: over the pair's circuit if `c` owns the pair and it has one.
    fn plan_of(
        &self,
        c: CoflowId,
        pair: (u32, u32),
        circuits: &BTreeMap<(u32, u32), CircuitView>,
        ports: u32,
    ) -> FlowPlan {
        if self.owners.get(&pair).and_then(|o| o.first()) != Some(&c) {
            return FlowPlan::WAIT;
        }
        (0..ports)
            .find(|&w| circuits.get(&(pair.0, w)).is_some_and(|v| v.dst_rack == pair.1))
            .map_or(FlowPlan::WAIT, FlowPlan::ocs)
    }
}

impl CoflowPolicy for Sunflow {
    fn name(&self) -> &'static str {
        "sunflow"
    }
    fn uses_ocs(&self) -> bool {
        true
    }
    fn triggers(&self) -> Triggers {
        Triggers::ELEPHANT_PAIRS
    }
    fn decide(&mut self, now: Nanos, view: &NetView, progress: &dyn Progress) -> Decision {
        let fabric = view.fabric;
        let mut dirty: Vec<(u32, u32)> = Vec::new();
        let mut gone: Vec<PairKey> = Vec::new();
        let (arrived, finished) = self.changes(view, &mut dirty, &mut gone);
        let ended = self.plan_end.is_some_and(|end| now >= end) && !self.coflows.is_empty();
        let mut changes: Vec<PairPlan> = Vec::new();
        let replanned = arrived || finished || ended;
        if replanned {
            self.replan(now, view, progress, arrived || finished);
            // Plans of pairs that are done or gone leave the table; new
            // pairs get theirs below. Both tables are in (coflow, pair)
            // order: one pass through both finds them.
            let mut planned = self.plans.iter().map(|(key, _)| key).peekable();
            for (&c, k) in &self.coflows {
                for (i, j) in k.pairs.keys() {
                    let key = (c, i, j);
                    while let Some(gone) = planned.next_if(|&p| p < key) {
                        changes.push(PairPlan::new(gone, None));
                    }
                    if planned.next_if_eq(&key).is_none() {
                        dirty.push((i, j));
                    }
                }
            }
            changes.extend(planned.map(|gone| PairPlan::new(gone, None)));
            // Owners may have changed; only a pair with a circuit can have
            // a plan other than waiting.
            dirty.extend(view.circuits.values().map(|c| (c.src_rack, c.dst_rack)));
        } else {
            // Pairs that are done leave the table.
            changes.extend(gone.into_iter().map(|pair| PairPlan::new(pair, None)));
        }
        // Reservations that start now; those whose circuit is already up
        // (or coming up) need no setup.
        let due = self.setups[self.next_setup..].partition_point(|&(at, _)| at <= now);
        let starting: Vec<CircuitSetup> = self.setups[self.next_setup..][..due]
            .iter()
            .map(|&(_, setup)| setup)
            .collect();
        self.next_setup += due;
        // The circuits as they will be (a copy only if some are set up).
        let mut changed = Changed::default();
        let mut after = Cow::Borrowed(&view.circuits);
        if !starting.is_empty() {
            set_up_circuits(after.to_mut(), &fabric, &starting, now, &mut changed);
        }
        dirty.extend(changed.pairs);
        dirty.sort_unstable();
        dirty.dedup();
        self.moved
            .extend(changed.made.iter().map(|c| (c.src_rack, c.dst_rack)));
        let circuits = changed.made;
        for pair in dirty {
            let Some(chain) = self.owners.get(&pair) else {
                continue;
            };
            // Between plans a chain only loses its head, and every coflow
            // behind the head waits: only the head's plan can change.
            let planned = if replanned { chain.len() } else { 1 };
            debug_assert!(
                chain[planned.min(chain.len())..]
                    .iter()
                    .all(|&c| self.plans.get((c, pair.0, pair.1)) == Some(FlowPlan::WAIT)),
                "a coflow behind the head of {pair:?} has a plan other than waiting"
            );
            for &c in chain.iter().take(planned) {
                let plan = self.plan_of(c, pair, &after, fabric.ocs_ports);
                changes.push(PairPlan::new((c, pair.0, pair.1), Some(plan)));
            }
        }
        let pair_changes = self.plans.apply_changes(&changes);
        let wake_at = self
            .setups
            .get(self.next_setup)
            .map(|&(at, _)| at)
            .into_iter()
            .chain(self.plan_end)
            .filter(|&t| t > now)
            .min();
        Decision {
            pair_changes,
            circuits,
            wake_at,
            ..Decision::default()
        }
    }
}

#[cfg(test)]
mod tests;
