//! [`FluidNetwork`]: the event-driven fluid model. Between events every flow
//! moves at a constant rate; at each event (a flow joins or finishes, a
//! circuit comes up, the policy's wake-up) the coflow policy decides paths,
//! caps and circuits, and rates are recomputed by max-min water-filling
//! ([`super::levels`]) over the links of [`super::links`], or, for a policy
//! that orders coflows, class by class in its order
//! ([`super::class_levels`]). The next event is
//! the earliest of: a flow's finish at its rate, a circuit's end of dark
//! time, the policy's wake-up. Nothing ticks; nothing reads a clock.
//!
//! Flows that share a route and a cap (same path, source, destination and
//! cap) get the same max-min rate, so they are kept together in a *bundle*
//! whose service (bytes each member has received while in it) is counted
//! once, as processor-sharing simulators do with virtual time. A member
//! finishes when the service reaches the value recorded at its join plus its
//! size. With 150 racks a bundle holds all flows of one rack pair, however
//! many coflows they serve. A capped flow is a bundle of its own: a policy
//! that caps flows (Varys, Aalo) gives each its own rate, and changes it at
//! every call, so the cap changes in place without a lookup. Bundles
//! bottlenecked at the same link share its service clock
//! ([`super::clocks`]), so an event that changes the link's
//! level but not the bundle's bottleneck does not touch the bundle. A policy
//! that changes a flow's plan moves it to another bundle (O(log)).
//!
//! The policy reads progress on demand ([`ocslab_core::coflow::Progress`], answered from the
//! bundles' counters for the flows it asks about) and is called only at the
//! events its [`Triggers`] name and at its own wake-up; at other events its
//! last decision stands and only rates are recomputed.
//!
//! One job per file: [`bundles`] (flows sharing a rate, and
//! progress read from them), `circuits` (the fluid optical switch: the
//! circuit log and the events a change raises), `decide` (asking the policy
//! and carrying out its decision by the rules of
//! [`ocslab_core::coflow::carry_out`]), `solve` (rates and link clocks);
//! here, flows joining and finishing, events, and the totals.

mod bundles;
mod circuits;
mod decide;
mod rotor;
mod solve;

use super::clocks::{Clock, NextFinishes};
use super::finish_queue::FinishQueue;
use super::levels::{Changes, SolveStats};
use super::links::{LinkId, LinkKind};
use super::pairs::PairFlows;
use super::prefetch::prefetch;
use super::rates::{Rates, Sharing};
use super::slots::{Slot, Slots};
use super::usage::LinkUsage;
use super::{CircuitRecord, NetError, NetEvent, NetStats, NetTimeline};
pub(crate) use bundles::OcsShare;
use bundles::{sent_since_join, Bundle, BundleIndex, BundleKey, FlowProgress, LiveProgress, SAME_EVENT};
use circuits::{circuit_event, FluidOcs};
use decide::default_key;
use ocslab_core::coflow::id_index::IdIndex;
use ocslab_core::coflow::view::FlowTable;
use ocslab_core::coflow::{
    self, Arrivals, CoflowPolicy, CoflowView, Departures, FabricParams, NetView, PairKey, PairPlans, Triggers,
};
use ocslab_core::model::coflow::{CoflowId, FlowId, FlowSpec};
use ocslab_core::{Bps, Bytes, Nanos, Topology};
use solve::eta;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};

/// The fluid network: flows, links, circuits and the coflow policy.
pub struct FluidNetwork {
    view: NetView,
    policy: Box<dyn CoflowPolicy>,
    /// The events after which the policy is called (its [`CoflowPolicy::triggers`]).
    triggers: Triggers,
    /// Active flows per (coflow, source rack, destination rack): to tell
    /// when a coflow's rack pair is done, and which flows a pair plan moves.
    /// Kept only for a policy that is ever called (its triggers are not
    /// [`Triggers::NEVER`]); for one that is not, neither these nor the
    /// pairs a flow joined since the last call are kept.
    pairs: PairFlows,
    /// The standing pair plans: each decision's changes are applied to them.
    pair_planned: PairPlans,
    /// The flows that joined since the last call, with their pair: they
    /// wait over EPS until then, and then follow their pair's plan. (A pair
    /// with a plan has crossed the elephant threshold, so a flow joining it
    /// makes none of its earlier flows elephants: they stay where its plan
    /// put them.)
    stale: Vec<(PairKey, FlowId)>,
    now: Nanos,
    wake_at: Option<Nanos>,
    /// When the policy was last asked.
    asked_at: Option<Nanos>,
    bundles: Vec<Bundle>,
    bundle_of: BundleIndex,
    free_bundles: Vec<usize>,
    /// Bundles emptied since the last rate solve, reused only after it.
    emptied: Vec<usize>,
    /// Bundles whose demand must be handed to the solver again.
    dirty: Vec<usize>,
    /// Each bundle's service over circuits, indexed as `bundles`.
    shares: Vec<OcsShare>,
    /// Bundles whose route changes with circuits, by source rack: those on
    /// a circuit path, and under a schedule every bundle between racks.
    ocs_bundles: BTreeMap<u32, BTreeSet<usize>>,
    /// The sending racks of the circuits set up, torn down or come up
    /// since the last solve: only their bundles' routes can have changed.
    circuits_changed: Vec<u32>,
    /// Finish times of the first members of bundles off any link clock.
    finishes: FinishQueue,
    /// One service clock per link.
    clocks: Vec<Clock>,
    /// Next finish on each link clock, by link id, only up to the last
    /// link that can bind: no bundle is ever bottlenecked at a link after it.
    clock_next: NextFinishes,
    /// The earliest of `clock_next`, as of the last refresh.
    first_clock_finish: Option<Nanos>,
    /// The clocks due at the event being processed (kept to reuse its buffer).
    clocks_now: Vec<usize>,
    /// Clocks whose next finish must be recomputed before the next event.
    clocks_due: Vec<LinkId>,
    slots: Slots,
    /// The slot of each active flow.
    slot_of: IdIndex,
    /// Bundles with a member due at the event being processed, and those
    /// members' slots (kept to reuse their buffers).
    due: Vec<usize>,
    done: Vec<u32>,
    /// The ids of the flows being added (kept to reuse its buffer).
    adding: Vec<FlowId>,
    /// Flows whose plan at the last call was not the default (EPS, no
    /// cap), in id order; some may have left since (ids are not reused).
    planned: Vec<FlowId>,
    /// The same for the call under way (kept to reuse its buffer).
    planning: Vec<FlowId>,
    /// Bytes of each coflow's finished flows.
    coflow_done_bytes: BTreeMap<CoflowId, f64>,
    /// Coflows with no active flow, kept so that a later flow resumes them.
    dormant: BTreeMap<CoflowId, CoflowView>,
    pending: Vec<NetEvent>,
    stats: NetStats,
    /// The optical switch: every circuit's life.
    ocs: FluidOcs,
    /// The time-flow schedule the circuits follow, if any ([`rotor`]).
    rotor: Option<rotor::Rotor>,
    usage: LinkUsage,
    rates: Rates,
    /// What the last solve changed (kept to reuse its buffers).
    changes: Changes,
    /// With `Some(q)`, flows that finish within a step of `q` (from time
    /// zero) are taken out at the step's end, all at once
    /// ([`FluidNetwork::with_completion_quantum`]).
    completion_quantum: Option<Nanos>,
    /// Whether flows left or circuits changed since the rates were last
    /// solved ([`FluidNetwork::settle`]).
    rates_stale: bool,
    /// Per link id, whether it is down ([`FluidNetwork::set_link`]); empty
    /// until a link first goes down.
    down: Vec<bool>,
}

impl FluidNetwork {
    /// A network for `topo` whose coflows are scheduled by the policy named
    /// `coflow_policy` (see [`ocslab_core::coflow::by_name`]).
    pub fn new(topo: &Topology, coflow_policy: &str) -> Result<FluidNetwork, coflow::UnknownPolicy> {
        Ok(FluidNetwork::with_policy(topo, coflow::by_name(coflow_policy)?))
    }

    /// A network for `topo` driven by `policy`.
    pub fn with_policy(topo: &Topology, policy: Box<dyn CoflowPolicy>) -> FluidNetwork {
        let mut net = FluidNetwork::on_fabric(FabricParams::from(topo), policy);
        if let Some(schedule) = &topo.ocs_schedule {
            net.follow_schedule(schedule.clone());
        }
        net
    }

    /// A network on `fabric` driven by `policy`.
    pub fn on_fabric(fabric: FabricParams, policy: Box<dyn CoflowPolicy>) -> FluidNetwork {
        let view = NetView::new(fabric);
        let usage = LinkUsage::new(&fabric);
        let rates = Rates::new(&view.links, Sharing::of(policy.as_ref()));
        let triggers = policy.triggers();
        FluidNetwork {
            triggers,
            policy,
            pairs: PairFlows::default(),
            pair_planned: PairPlans::default(),
            stale: Vec::new(),
            now: Nanos::ZERO,
            wake_at: None,
            asked_at: None,
            bundles: Vec::new(),
            bundle_of: BundleIndex::new(&fabric),
            free_bundles: Vec::new(),
            emptied: Vec::new(),
            dirty: Vec::new(),
            shares: Vec::new(),
            ocs_bundles: BTreeMap::new(),
            circuits_changed: Vec::new(),
            finishes: FinishQueue::default(),
            clocks: vec![Clock::default(); view.links.len()],
            clock_next: NextFinishes::new(rates.bind_end()),
            first_clock_finish: None,
            clocks_now: Vec::new(),
            clocks_due: Vec::new(),
            // A policy that is called reads a view holding every active
            // flow: the slots need only the ids.
            slots: if triggers == Triggers::NEVER {
                Slots::default()
            } else {
                Slots::ids_only()
            },
            slot_of: IdIndex::default(),
            due: Vec::new(),
            done: Vec::new(),
            adding: Vec::new(),
            planned: Vec::new(),
            planning: Vec::new(),
            coflow_done_bytes: BTreeMap::new(),
            dormant: BTreeMap::new(),
            pending: Vec::new(),
            stats: NetStats::default(),
            ocs: FluidOcs::default(),
            rotor: None,
            changes: Changes::default(),
            rates,
            view,
            usage,
            completion_quantum: None,
            rates_stale: false,
            down: Vec::new(),
        }
    }

    /// Takes `link` down or brings it back at `now` (the time of the last
    /// advance). While it is down, flows whose route crosses it wait, as
    /// TCP flows across a dead cable stall: a flow on the EPS, and one on a
    /// circuit through a port that is down, until it is back. The coflow
    /// policy is not told (as the emulated lab's scheduler is not): its
    /// plans stand. A link the fabric does not have is ignored.
    pub fn set_link(&mut self, now: Nanos, link: LinkKind, up: bool) {
        debug_assert_eq!(now, self.now, "set_link at the time of the last advance");
        let Some(id) = self.view.links.id(link) else {
            return;
        };
        if self.down.is_empty() {
            self.down = vec![false; self.view.links.len()];
        }
        if self.down[id as usize] != up {
            return;
        }
        self.down[id as usize] = !up;
        // Rare: every moving bundle takes its route again.
        for b in 0..self.bundles.len() {
            if self.bundles[b].key.is_some() && self.bundles[b].count > 0 {
                self.mark_dirty(b);
            }
        }
        self.rates_stale = true;
        self.settle();
    }

    /// Flow completions are handled at the end of the step of `quantum`
    /// they fall in (steps counted from time zero), as CoflowSim's
    /// simulator handles everything at the end of its 8 ms step
    /// (`Constants.SIMULATION_QUANTA`). A finished flow's rate then stays
    /// in effect (its bandwidth unused by others) until the step ends, so
    /// every flow finishes up to `quantum` late, and the flows that finish
    /// in one step cost one rate solve instead of one each. Circuits,
    /// schedule slots, policy wake-ups and flow arrivals keep their exact
    /// times. `None` (the default): every completion at its own time.
    pub fn with_completion_quantum(mut self, quantum: Option<Nanos>) -> FluidNetwork {
        self.completion_quantum = quantum.filter(|q| q.0 > 0);
        self
    }

    /// Flows join the network at `now` (`now` is never before the last advance).
    ///
    /// # Panics
    /// If a flow names a host outside the topology or reuses the id of an
    /// active flow: the engine builds flows from the same validated topology,
    /// so either is a bug in the caller. Use [`FluidNetwork::try_add_flows`]
    /// for flows from elsewhere.
    pub fn add_flows(&mut self, now: Nanos, flows: &[FlowSpec]) {
        if let Err(e) = self.try_add_flows(now, flows) {
            panic!("FluidNetwork::add_flows: {e}");
        }
    }

    /// Like [`FluidNetwork::add_flows`], but the rates are solved only at
    /// the next [`FluidNetwork::settle`], add or advance (the policy is
    /// asked at once): the simulation driver adds the flows of all of an
    /// instant's events, then settles once.
    ///
    /// # Panics
    /// As [`FluidNetwork::add_flows`].
    pub fn add_flows_unsettled(&mut self, now: Nanos, flows: &[FlowSpec]) {
        if let Err(e) = self.add(now, flows, false) {
            panic!("FluidNetwork::add_flows_unsettled: {e}");
        }
    }

    /// Like [`FluidNetwork::add_flows`], but returns an error (and adds
    /// none of the flows) if one is invalid.
    pub fn try_add_flows(&mut self, now: Nanos, flows: &[FlowSpec]) -> Result<(), NetError> {
        self.add(now, flows, true)
    }

    /// Adds `flows` at `now`, then solves the rates if `settle`.
    fn add(&mut self, now: Nanos, flows: &[FlowSpec], settle: bool) -> Result<(), NetError> {
        let f = &self.view.fabric;
        for spec in flows {
            for h in [spec.src, spec.dst] {
                if h.rack >= f.racks || h.host >= f.hosts_per_rack {
                    return Err(NetError::UnknownHost {
                        flow: spec.id,
                        host: h,
                    });
                }
            }
            if self.slot_of.get(spec.id).is_some() {
                return Err(NetError::DuplicateFlow(spec.id));
            }
        }
        let ids = &mut self.adding;
        ids.clear();
        ids.extend(flows.iter().map(|spec| spec.id));
        ids.sort_unstable();
        if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
            return Err(NetError::DuplicateFlow(w[0]));
        }
        if now > self.now {
            let mut events = std::mem::take(&mut self.pending);
            self.advance_into(now, &mut events);
            self.pending = events;
        }
        let mut ask = false;
        let viewed = self.policy_is_called();
        for spec in flows {
            let mut pair_ix = None;
            if viewed {
                if !self.view.coflows.contains_key(&spec.coflow) {
                    if let Some(c) = self.dormant.remove(&spec.coflow) {
                        self.view.coflows.insert(spec.coflow, c);
                    }
                }
                self.view.insert_flow(spec.clone(), self.now);
                // It joins over EPS, as unplanned flows do, until the next call.
                let pair = (spec.coflow, spec.src.rack, spec.dst.rack);
                self.stale.push((pair, spec.id));
                pair_ix = Some(self.pairs.join(pair, spec.id));
            }
            ask |= match self.triggers.arrivals {
                Arrivals::Never => false,
                Arrivals::Elephants => self.view.flows.get(&spec.id).is_some_and(|f| f.elephant),
                Arrivals::Every => true,
            };
            let key = default_key(&mut self.rates, spec);
            let b = self.bundle_for(key);
            let joined = self.bundles[b].service(&self.clocks, self.now);
            let weight = spec.shares();
            let finish = joined + spec.bytes.0 as f64 / f64::from(weight);
            let ix = self.slots.add(
                Slot {
                    bundle: b,
                    joined,
                    joined_ocs: self.bundles[b].ocs_service(&self.shares[b], joined),
                    finish,
                    sent_eps: 0.0,
                    sent_ocs: 0.0,
                    pair: pair_ix,
                    stamp: 0,
                    weight,
                },
                spec.clone(),
                self.now,
            );
            self.slot_of.insert(spec.id, ix);
            self.bundles[b].insert(finish, spec.id, ix, self.slots[ix].stamp, weight);
            self.mark_dirty(b);
        }
        if !flows.is_empty() {
            if ask {
                self.ask_policy();
            }
            self.rates_stale = true;
            if settle {
                self.settle();
            }
        }
        Ok(())
    }

    /// When the next event (a flow finishing, a circuit coming up, a policy
    /// wake-up) will happen if no flow is added; `None` when idle.
    pub fn next_event_at(&self) -> Option<Nanos> {
        let circuit = self
            .view
            .circuits
            .values()
            .map(|c| c.up_at)
            .filter(|&t| t > self.now)
            .min();
        let step_end = |t| crate::step_end(t, self.completion_quantum);
        let completion = self.finishes.peek().map(|(t, _)| step_end(t));
        let on_clock = self.first_clock_finish.map(step_end);
        [completion, on_clock, circuit, self.wake_at, self.next_slot_at()]
            .into_iter()
            .flatten()
            .min()
    }

    /// Moves the network to `now`, returning what happened on the way, in time order.
    pub fn advance_to(&mut self, now: Nanos) -> Vec<NetEvent> {
        let mut events = Vec::new();
        self.advance_into(now, &mut events);
        events
    }

    /// Like [`FluidNetwork::advance_to`], but appends what happened to
    /// `events` (a caller's buffer, reused from call to call).
    pub fn advance_into(&mut self, now: Nanos, events: &mut Vec<NetEvent>) {
        self.advance_unsettled_into(now, events);
        self.settle();
    }

    /// Like [`FluidNetwork::advance_into`], but if what happened last
    /// happened at `now`, the rates are solved only at the next
    /// [`FluidNetwork::settle`], [`FluidNetwork::add_flows`] or advance,
    /// so that the departures of an instant and the arrivals its events
    /// cause cost one solve, not two (the policy is still asked at once).
    /// Until then, [`FluidNetwork::next_event_at`] and the loads are those
    /// of the last solve.
    pub fn advance_unsettled_into(&mut self, now: Nanos, events: &mut Vec<NetEvent>) {
        events.append(&mut self.pending);
        loop {
            self.settle();
            let Some(t) = self.next_event_at().filter(|&t| t <= now) else {
                break;
            };
            self.move_to(t);
            self.process(events);
            if t == now {
                return;
            }
        }
        if now > self.now {
            self.move_to(now);
        }
    }

    /// Solves the rates if flows left since the last solve. If that leaves
    /// flows that can never move (nothing due: no finish, circuit, slot or
    /// wake-up), the policy is asked again, once per instant: what its last
    /// decision held back may move now that the flows it served have left.
    /// (Varys holds its rates between coflow events, so when a coflow's
    /// served flows finish before the coflow does, the rest would
    /// otherwise wait forever.)
    pub fn settle(&mut self) {
        if self.rates_stale {
            self.update_rates();
        }
        if self.stuck() {
            self.ask_policy();
            self.rates_stale = true;
            self.update_rates();
        }
    }

    /// Whether flows are left with nothing due, and the policy (which is
    /// called) has not been asked at this instant.
    fn stuck(&self) -> bool {
        if !self.policy_is_called() || self.asked_at == Some(self.now) || self.view.flows.is_empty() {
            return false;
        }
        // The cheap parts of `next_event_at` first: it also scans the circuits.
        let due = self.finishes.peek().is_some()
            || self.first_clock_finish.is_some()
            || self.wake_at.is_some()
            || self.next_slot_at().is_some();
        !due && self.next_event_at().is_none()
    }

    /// Totals so far (bytes count when their flow finishes).
    pub fn stats(&self) -> &NetStats {
        &self.stats
    }

    /// The network as the policy sees it. Per-flow progress (remaining and
    /// sent bytes, rate, finish time) and coflows' bytes sent in it are as of
    /// the last [`FluidNetwork::sync_progress`] (policies read progress on
    /// demand instead); call that first for their values now. For a policy
    /// that is never called (triggers [`Triggers::NEVER`], as `fair`) the
    /// network keeps no view as it runs: the view's flows and coflows are
    /// those [`FluidNetwork::sync_progress`] last built.
    pub fn view(&self) -> &NetView {
        &self.view
    }

    /// Brings per-flow progress and coflows' bytes sent in the view up to
    /// date (O(active flows); policies do not need it). For a policy that
    /// is never called, first builds the view from the active flows, in id
    /// order: a coflow's known and sent bytes then count only its active
    /// flows, and its arrival is its earliest active flow's start.
    pub fn sync_progress(&mut self) {
        if !self.policy_is_called() {
            self.build_view();
        }
        let now = self.now;
        for c in self.view.coflows.iter_mut() {
            c.1.sent_bytes = self.coflow_done_bytes.get(c.0).copied().unwrap_or(0.0);
        }
        let NetView { flows, coflows, .. } = &mut self.view;
        for f in flows.values_mut() {
            let Some(ix) = self.slot_of.get(f.spec.id) else {
                continue;
            };
            let s = &self.slots[ix];
            let p = FlowProgress::of(&self.bundles, &self.shares, &self.clocks, s, now);
            f.sent_eps_bytes = p.sent_eps;
            f.sent_ocs_bytes = p.sent_ocs;
            f.remaining_bytes = p.remaining;
            f.rate_bytes_per_s = p.rate;
            let slack = self.bundles[s.bundle].slack(&self.clocks, now, s.finish);
            f.eta = eta(now, p.remaining, slack, p.rate);
            if let Some(c) = coflows.get_mut(&f.spec.coflow) {
                c.sent_bytes += p.sent_eps + p.sent_ocs;
            }
        }
    }

    /// For a policy that is never called (the network keeps no view for
    /// it): the view of the active flows, from their slots.
    fn build_view(&mut self) {
        let mut active: Vec<(FlowSpec, Nanos)> = (0..self.slots.len())
            .filter(|&ix| self.slot_of.get(self.slots.id(ix)) == Some(ix))
            .filter_map(|ix| self.slots.flow(ix).cloned())
            .collect();
        active.sort_by_key(|(spec, _)| spec.id);
        self.view.flows = FlowTable::default();
        self.view.coflows.clear();
        for (spec, started) in active {
            let coflow = spec.coflow;
            self.view.insert_flow(spec, started);
            if let Some(c) = self.view.coflows.get_mut(&coflow) {
                c.arrival = c.arrival.min(started);
            }
        }
    }

    /// The time the network has been moved to.
    pub fn now(&self) -> Nanos {
        self.now
    }

    /// The coflow policy's name.
    pub fn policy_name(&self) -> &'static str {
        self.policy.name()
    }

    /// Whether the policy puts elephants on circuits.
    pub fn policy_uses_ocs(&self) -> bool {
        self.policy.uses_ocs()
    }

    /// Every circuit set up so far, in set-up order, for timelines and plots.
    pub fn circuit_log(&self) -> &[CircuitRecord] {
        &self.ocs.log
    }

    /// The bytes the EPS uplinks and OCS ports carried so far, per time bin.
    pub fn usage(&self) -> &LinkUsage {
        &self.usage
    }

    /// The same, to take a mean from ([`LinkUsage::mean_since_last`]).
    pub fn usage_mut(&mut self) -> &mut LinkUsage {
        &mut self.usage
    }

    /// The circuits and link utilization from 0 to `end` (at least the
    /// time the network has been moved to), for the results folder's plots.
    pub fn timeline(&self, end: Nanos) -> NetTimeline {
        NetTimeline {
            circuits: self.ocs.log.clone(),
            links: self.usage.series(end.max(self.now)),
        }
    }

    /// How the rate solver has worked so far (solves, bundles filled, bottlenecks moved).
    pub fn solve_stats(&self) -> SolveStats {
        self.rates.stats()
    }

    /// The bundle for `key`, created if need be.
    fn bundle_for(&mut self, key: BundleKey) -> usize {
        if let Some(b) = self.bundle_of.get(&key) {
            return b;
        }
        let fresh = Bundle {
            key: Some(key),
            min_finish: f64::INFINITY,
            base_time: self.now,
            ..Bundle::default()
        };
        let b = match self.free_bundles.pop() {
            Some(b) => {
                if self.bundles[b].had_circuit {
                    self.shares[b] = OcsShare::default();
                }
                let old = &mut self.bundles[b];
                let (generation, mut members) = (old.generation, std::mem::take(&mut old.members));
                members.clear();
                self.bundles[b] = Bundle {
                    generation,
                    members,
                    ..fresh
                };
                b
            }
            None => {
                self.bundles.push(fresh);
                self.shares.push(OcsShare::default());
                self.bundles.len() - 1
            }
        };
        self.bundle_of.insert(key, b);
        if self.follows_circuits(key) {
            self.ocs_bundles.entry(key.src.rack).or_default().insert(b);
        }
        b
    }

    /// Bundle `b`'s members or route changed: its rate and finish time are
    /// recomputed at the next [`FluidNetwork::update_rates`].
    fn mark_dirty(&mut self, b: usize) {
        Self::mark(&mut self.bundles, &mut self.dirty, b);
    }

    /// [`FluidNetwork::mark_dirty`] on the two fields it changes, for a
    /// caller that holds another field borrowed.
    fn mark(bundles: &mut [Bundle], dirty: &mut Vec<usize>, b: usize) {
        if !bundles[b].dirty {
            bundles[b].dirty = true;
            dirty.push(b);
        }
    }

    /// Takes the flow in slot `ix` out of its bundle (recording in the
    /// slot what it sent there; its `finish` is then the bytes it has
    /// left); the bundle is freed after the next rate solve if it is empty.
    fn leave(&mut self, ix: u32) {
        let now = self.now;
        let s = &mut self.slots[ix];
        s.stamp = s.stamp.wrapping_add(1);
        let b = &mut self.bundles[s.bundle];
        let service = b.service(&self.clocks, now);
        let (here, here_ocs) = sent_since_join(s, service, b, &self.shares[s.bundle]);
        s.sent_ocs += here_ocs;
        s.sent_eps += here - here_ocs;
        s.finish = (s.finish - service).max(0.0); // now: service remaining
        let (bundle, weight) = (s.bundle, s.weight);
        b.remove(&self.slots, weight);
        if b.count == 0 {
            if let Some(k) = b.key {
                self.bundle_of.remove(&k);
            }
            self.emptied.push(bundle);
        }
        self.mark_dirty(bundle);
    }

    /// Moves flow `id` to the bundle of `key` (no-op if it is there). A
    /// flow alone in its bundle whose path stays takes the bundle along
    /// (the bundle is keyed anew, its service running on), as when a
    /// policy that caps every flow (Varys, Aalo) changes the caps: nothing
    /// leaves or joins a bundle, only the bundle's demand changes.
    fn move_flow(&mut self, id: FlowId, key: BundleKey) {
        let Some(ix) = self.slot_of.get(id) else {
            return;
        };
        let here = self.slots[ix].bundle;
        let Some(old) = self.bundles[here].key.filter(|&k| k != key) else {
            return;
        };
        self.stats.flows_replanned += 1;
        if old.path == key.path && self.bundles[here].count == 1 && self.bundle_of.get(&key).is_none() {
            self.bundle_of.remove(&old);
            self.bundle_of.insert(key, here);
            self.bundles[here].key = Some(key);
            self.mark_dirty(here);
        } else {
            self.leave(ix);
            let b = self.bundle_for(key);
            let joined = self.bundles[b].service(&self.clocks, self.now);
            let joined_ocs = self.bundles[b].ocs_service(&self.shares[b], joined);
            let s = &mut self.slots[ix];
            s.bundle = b;
            s.joined = joined;
            s.joined_ocs = joined_ocs;
            s.finish += joined; // it held the service left
            let (finish, stamp, weight) = (s.finish, s.stamp, s.weight);
            self.bundles[b].insert(finish, id, ix, stamp, weight);
            self.mark_dirty(b);
        }
        let weight = u64::from(self.slots[ix].weight);
        if let Some(f) = self.view.flows.get_mut(&id) {
            f.path = key.path;
            f.cap = key.cap().map(|c| Bps(c.0.saturating_mul(weight)));
        }
    }

    /// Flows move at their rates from `self.now` to `t` (no event in
    /// between); bundles' service is kept lazily, so only link usage is recorded.
    fn move_to(&mut self, t: Nanos) {
        if t > self.now {
            self.settle();
            self.usage.advance(self.now, t);
        }
        self.now = t;
        self.catch_up_schedule();
    }

    /// Handles what happens at `self.now`, then asks the policy again.
    fn process(&mut self, events: &mut Vec<NetEvent>) {
        let now = self.now;
        let mut due = std::mem::take(&mut self.due);
        due.clear();
        // Bundles whose first finish comes within `SAME_EVENT` too
        // ([`Bundle::done_at_event`]).
        while let Some((t, b)) = self.finishes.peek() {
            if t > now + SAME_EVENT {
                break;
            }
            self.finishes.pop();
            due.push(b);
        }
        self.due_on_clocks(&mut due);
        due.sort_unstable();
        due.dedup();
        // The due members, taken off their bundles' lists (in finish order
        // per bundle); they leave the bundles below.
        let mut done = std::mem::take(&mut self.done);
        done.clear();
        for &b in &due {
            let bundle = &mut self.bundles[b];
            let service = bundle.service(&self.clocks, now);
            // With no stale entry (no member ever moved out) the slots need
            // not be read here: `finish` reads them with the flows' specs.
            let all_live = bundle.members.len() == bundle.count as usize;
            while let Some(&Reverse((bits, _, ix, stamp))) = bundle.members.peek() {
                let finish = f64::from_bits(bits);
                if all_live || self.slots[ix].stamp == stamp {
                    if !bundle.done_at_event(&self.clocks, now, finish, finish - service) {
                        break;
                    }
                    done.push(ix);
                    // `finish` reads both a little later: their loads overlap.
                    prefetch(&self.slots[ix]);
                    if let Some(flow) = self.slots.flow(ix) {
                        prefetch(flow);
                    }
                }
                bundle.members.pop();
            }
        }
        for &b in &due {
            // Its finish time is recomputed whether or not a member left.
            self.mark_dirty(b);
        }
        self.due = due;
        // Simultaneous completions in flow-id order, whichever bundles
        // they were in: the engine's reaction (the flows it starts, their
        // ids) then does not depend on how bundles were numbered.
        done.sort_unstable_by_key(|&ix| self.slots.id(ix));
        let mut ask = false;
        for &ix in &done {
            ask |= self.finish(ix, events);
        }
        self.done = done;
        for c in self.view.circuits.values().filter(|c| c.up_at == now) {
            self.circuits_changed.push(c.src_rack);
            ask |= self.triggers.circuit_up;
            if self.rotor.is_none() {
                events.push(circuit_event(now, c, true));
            }
        }
        if self.next_slot_at() == Some(now) {
            self.start_slot();
            ask |= self.triggers.circuit_up;
        }
        if self.wake_at.is_some_and(|t| t <= now) {
            self.wake_at = None;
            ask = true;
        }
        if ask {
            self.ask_policy();
        }
        self.rates_stale = true;
        events.append(&mut self.pending);
    }

    /// Adds to `due` the bundles on link clocks whose first member is done
    /// now ([`Bundle::done_at_event`]); those clocks' next finishes are recomputed
    /// at the next refresh.
    fn due_on_clocks(&mut self, due: &mut Vec<usize>) {
        let now = self.now;
        let within = now + SAME_EVENT;
        if self.first_clock_finish.is_none_or(|t| t > within) {
            return;
        }
        let mut clocks = std::mem::take(&mut self.clocks_now);
        clocks.clear();
        self.clock_next.take_due(within, &mut clocks);
        for &li in &clocks {
            let l = li as LinkId;
            // The bundles on this clock whose first member is due.
            while let Some(&Reverse((_, b, g))) = self.clocks[li].finishes.peek() {
                let b = b as usize;
                let bundle = &self.bundles[b];
                if bundle.generation == g && bundle.clock == Some(l) {
                    let remaining = bundle.min_finish - bundle.service(&self.clocks, now);
                    if !bundle.done_at_event(&self.clocks, now, bundle.min_finish, remaining) {
                        break;
                    }
                    due.push(b);
                }
                self.clocks[li].finishes.pop();
            }
            Self::clock_due(&mut self.clocks, &mut self.clocks_due, l);
        }
        self.clocks_now = clocks;
    }

    /// The flow in slot `ix` is done (its bundle entry is already off the
    /// list): it leaves, and its event is recorded. Returns whether its
    /// departure is one the policy wants to be called at.
    fn finish(&mut self, ix: u32, events: &mut Vec<NetEvent>) -> bool {
        self.leave(ix);
        let s = self.slots[ix];
        let (spec, started) = self.flow_in(ix);
        self.slots.remove(ix);
        let id = spec.id;
        self.slot_of.remove(id);
        let ask = self.policy_is_called() && self.forget(&spec, s.pair);
        let size = spec.bytes;
        let (eps, ocs) = if s.sent_ocs < 0.5 {
            (size, Bytes(0))
        } else if s.sent_eps < 0.5 {
            (Bytes(0), size)
        } else {
            let eps = (s.sent_eps.round() as u64).min(size.0);
            (Bytes(eps), Bytes(size.0 - eps))
        };
        self.stats.eps_bytes += eps;
        self.stats.ocs_bytes += ocs;
        self.stats.flows_done += 1;
        if spec.src.rack != spec.dst.rack {
            self.stats.cross_rack_bytes += size;
        }
        events.push(NetEvent::FlowDone {
            flow: id,
            coflow: spec.coflow,
            started,
            at: self.now,
            eps_bytes: eps,
            ocs_bytes: ocs,
        });
        ask
    }

    /// The flow in slot `ix` and when it started: from the slot or, if the
    /// slots keep only ids, from the policy view.
    fn flow_in(&self, ix: u32) -> (FlowSpec, Nanos) {
        if let Some(flow) = self.slots.flow(ix) {
            return flow.clone();
        }
        let id = self.slots.id(ix);
        match self.view.flows.get(&id) {
            Some(f) => (f.spec.clone(), f.started),
            None => unreachable!("flow {id:?} is active but not in the view"),
        }
    }

    /// Whether the policy is ever called (its triggers are not
    /// [`Triggers::NEVER`]). Only then does the network keep what the
    /// policy reads: the view's flows and coflows, each coflow's finished
    /// bytes, the flows of each rack pair.
    fn policy_is_called(&self) -> bool {
        self.triggers != Triggers::NEVER
    }

    /// Takes finished flow `spec` (in rack pair `pair` of
    /// [`FluidNetwork::pairs`]) out of what the policy reads; returns
    /// whether its departure is one the policy wants to be called at.
    fn forget(&mut self, spec: &FlowSpec, pair: Option<u32>) -> bool {
        let id = spec.id;
        let elephant = self.view.flows.remove(&id).is_some_and(|f| f.elephant);
        let key = (spec.coflow, spec.src.rack, spec.dst.rack);
        let pair_done = pair.is_none_or(|p| self.pairs.leave(p, key, id));
        let ask = match self.triggers.departures {
            Departures::Never => false,
            // All active flows of a coflow's rack pair are elephants or none are.
            Departures::ElephantPairDone => pair_done && elephant,
            // Its coflow still lists it: the coflow is done if it is the last.
            Departures::CoflowDone => self
                .view
                .coflows
                .get(&spec.coflow)
                .is_none_or(|c| c.flows.len() <= 1),
            Departures::Every => true,
        };
        *self.coflow_done_bytes.entry(spec.coflow).or_default() += spec.bytes.0 as f64;
        if let Some(c) = self.view.leave_coflow(spec.coflow, &id, elephant) {
            self.dormant.insert(spec.coflow, c);
        }
        ask
    }
}

#[cfg(test)]
mod layout_tests {
    use super::*;

    #[test]
    fn a_bundle_is_two_cache_lines() {
        assert_eq!(std::mem::size_of::<Bundle>(), 128);
        assert_eq!(std::mem::offset_of!(Bundle, members), 64);
    }
}
