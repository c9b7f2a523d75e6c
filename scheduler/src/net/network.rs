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
//! many coflows they serve. Bundles bottlenecked at the same link share its
//! service clock ([`super::clocks`]), so an event that changes the link's
//! level but not the bundle's bottleneck does not touch the bundle. A policy
//! that changes a flow's plan moves it to another bundle (O(log)).
//!
//! The policy reads progress on demand ([`Progress`], answered from the
//! bundles' counters for the flows it asks about) and is called only at the
//! events its [`Triggers`] name and at its own wake-up; at other events its
//! last decision stands and only rates are recomputed.

use super::class_levels::ClassId;
use super::clocks::{drop_stale, Clock, NextFinishes};
use super::fasthash::FastMap;
use super::levels::{Bottleneck, Changes, SolveStats};
use super::links::{LinkId, LinkMap, Links};
use super::maxmin::Demand;
use super::pairs::PairFlows;
use super::prefetch::prefetch;
use super::rates::Rates;
use super::slots::{Slot, Slots};
use super::usage::LinkUsage;
use super::{CircuitRecord, NetError, NetEvent, NetStats, NetTimeline};
use crate::coflow::id_index::IdIndex;
use crate::coflow::view::FlowTable;
use crate::coflow::{
    self, Arrivals, CircuitSetup, CircuitView, CoflowPolicy, CoflowView, Departures, FabricParams, FlowPlan,
    FlowView, NetView, PairKey, PairPlan, PairPlans, Path, Progress, Triggers,
};
use crate::model::coflow::{CoflowId, FlowId, FlowSpec};
use ocslab_emulator::{Bps, Bytes, HostId, Nanos, Topology};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};

/// What makes flows share a rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct BundleKey {
    path: Path,
    src: HostId,
    dst: HostId,
    /// The pacing cap in bits per second, or [`BundleKey::UNCAPPED`]: a
    /// sentinel, not an `Option`, so that the key stays 40 bytes and shares
    /// a cache line with the bundle's members.
    cap_bps: u64,
    /// The flows' class when rates are solved class by class (their
    /// coflow's, [`super::class_levels`]), or [`BundleKey::NO_CLASS`].
    class: ClassId,
}

impl BundleKey {
    const UNCAPPED: u64 = u64::MAX;
    const NO_CLASS: ClassId = ClassId::MAX;

    fn new(path: Path, src: HostId, dst: HostId, cap: Option<Bps>, class: Option<ClassId>) -> BundleKey {
        BundleKey {
            path,
            src,
            dst,
            cap_bps: cap.map_or(Self::UNCAPPED, |c| c.0.min(Self::UNCAPPED - 1)),
            class: class.unwrap_or(Self::NO_CLASS),
        }
    }

    /// The pacing cap, if any.
    fn cap(&self) -> Option<Bps> {
        (self.cap_bps != Self::UNCAPPED).then_some(Bps(self.cap_bps))
    }

    /// The class, if any.
    fn class(&self) -> Option<ClassId> {
        (self.class != Self::NO_CLASS).then_some(self.class)
    }
}

/// Flows with one key. Its service (bytes each member has received while
/// in it) is `offset` plus the clock of the link it is bottlenecked at
/// ([`super::clocks`]), or, off any link clock (held by its cap, or not
/// moving), grows at `rate` from `base` at `base_time`. Either way it is kept
/// lazily: an event costs nothing for a bundle whose bottleneck it leaves alone.
///
/// Laid out for the cache: what an event reads of a bundle (its service,
/// first finish, generation, members count, dirty flag) fills the first
/// 64-byte line, its members' heap and key the second.
#[derive(Clone, Debug, Default)]
#[repr(C, align(64))]
struct Bundle {
    /// The link clock it runs on, if any.
    clock: Option<LinkId>,
    offset: f64,
    base: f64,
    base_time: Nanos,
    rate: f64,
    /// The smallest finish among members (infinite when empty).
    min_finish: f64,
    /// Bumped whenever its finish time is recomputed: older heap entries are stale.
    generation: u32,
    /// Members, not counting stale entries.
    count: u32,
    /// Whether its demand (members, route) must be handed to the rate
    /// solver again; during a rate update, whether the update took it.
    dirty: bool,
    /// Members, first finish first: (service at which it finishes, as f64
    /// bits: order-preserving for >= 0; id; slot; the slot's stamp when it
    /// joined). Entries whose stamp is not their slot's are stale: the
    /// member left ([`Slots`]).
    members: BinaryHeap<Reverse<Member>>,
    key: Option<BundleKey>,
}

/// The bundle of each key in use. Nearly every flow of a trace replay
/// takes the default key (EPS, no cap) of its host pair, so those are
/// found in a vector by host pair (no hashing, one small array), as long
/// as the fabric's host pairs number at most [`BundleIndex::MAX_PAIRS`];
/// other keys are hashed.
#[derive(Clone, Debug, Default)]
struct BundleIndex {
    hosts_per_rack: u32,
    hosts: usize,
    /// The bundle of each host pair's default key (src × hosts + dst), or
    /// `u32::MAX`; empty when the fabric has too many host pairs.
    default: Vec<u32>,
    /// The other keys' bundles (all keys when `default` is empty).
    other: FastMap<BundleKey, usize>,
}

impl BundleIndex {
    /// Most host pairs whose default keys are held in a vector (16 MB).
    const MAX_PAIRS: usize = 1 << 22;

    fn new(fabric: &FabricParams) -> BundleIndex {
        let hosts = fabric.racks as usize * fabric.hosts_per_rack as usize;
        let pairs = hosts.saturating_mul(hosts);
        BundleIndex {
            hosts_per_rack: fabric.hosts_per_rack,
            hosts,
            default: if pairs <= Self::MAX_PAIRS {
                vec![u32::MAX; pairs]
            } else {
                Vec::new()
            },
            other: FastMap::default(),
        }
    }

    /// Where `key`'s bundle is held in `default`, if it is held there.
    fn pair(&self, key: &BundleKey) -> Option<usize> {
        if key.path != Path::Eps
            || key.cap_bps != BundleKey::UNCAPPED
            || key.class().is_some()
            || self.default.is_empty()
        {
            return None;
        }
        let host = |h: HostId| h.rack as usize * self.hosts_per_rack as usize + h.host as usize;
        Some(host(key.src) * self.hosts + host(key.dst))
    }

    fn get(&self, key: &BundleKey) -> Option<usize> {
        match self.pair(key) {
            Some(p) => Some(self.default[p])
                .filter(|&b| b != u32::MAX)
                .map(|b| b as usize),
            None => self.other.get(key).copied(),
        }
    }

    fn insert(&mut self, key: BundleKey, b: usize) {
        match self.pair(&key) {
            Some(p) => self.default[p] = b as u32,
            None => {
                self.other.insert(key, b);
            }
        }
    }

    fn remove(&mut self, key: &BundleKey) {
        match self.pair(key) {
            Some(p) => self.default[p] = u32::MAX,
            None => {
                self.other.remove(key);
            }
        }
    }
}

/// A bundle's member entry: (finish as f64 bits, id, slot, stamp).
type Member = (u64, FlowId, u32, u32);

impl Bundle {
    /// The flow in slot `ix` (stamp `stamp`) joins, done at service `finish`.
    fn insert(&mut self, finish: f64, id: FlowId, ix: u32, stamp: u32) {
        self.members.push(Reverse((finish.to_bits(), id, ix, stamp)));
        self.count += 1;
        self.min_finish = self.min_finish.min(finish);
    }
    /// A member left (its slot's stamp moved on, so its entry is stale):
    /// drops stale entries from the front (all of them when they outnumber
    /// the members), and takes the first finish from what is left.
    fn remove(&mut self, slots: &Slots) {
        self.count -= 1;
        let live = |&(_, _, ix, stamp): &Member| slots[ix].stamp == stamp;
        if self.count == 0 {
            self.members.clear();
        } else if self.members.len() > 2 * self.count as usize + 16 {
            self.members.retain(|Reverse(m)| live(m));
        }
        // An entry per member and none stale: the front is live.
        while self.members.len() > self.count as usize
            && self.members.peek().is_some_and(|Reverse(m)| !live(m))
        {
            self.members.pop();
        }
        self.min_finish = self
            .members
            .peek()
            .map_or(f64::INFINITY, |Reverse((bits, ..))| f64::from_bits(*bits));
    }
    /// Service at `now` (not before its last change).
    fn service(&self, clocks: &[Clock], now: Nanos) -> f64 {
        match self.clock {
            Some(l) => self.offset + clocks[l as usize].value(now),
            None if self.rate > 0.0 => self.base + self.rate * (now - self.base_time).as_secs_f64(),
            None => self.base,
        }
    }
    /// Each member's rate.
    fn rate(&self, clocks: &[Clock]) -> f64 {
        self.clock.map_or(self.rate, |l| clocks[l as usize].level())
    }
    /// How close to `finish` its service must be at `now` for the member to
    /// count as done: [`done_within`] of the larger of the numbers the
    /// service is computed from (on a link clock, the clock's value too).
    fn slack(&self, clocks: &[Clock], now: Nanos, finish: f64) -> f64 {
        let scale = self.clock.map_or(0.0, |l| clocks[l as usize].value(now).abs());
        done_within(finish.abs().max(scale))
    }
    /// When its first member finishes at its current rate ([`eta`]), if it moves.
    fn first_finish(&self, clocks: &[Clock], now: Nanos) -> Option<Nanos> {
        let remaining = self.min_finish - self.service(clocks, now);
        let slack = self.slack(clocks, now, self.min_finish);
        eta(now, remaining, slack, self.rate(clocks))
    }
}

/// A flow's progress at one instant, from its slot and its bundle's counter.
struct FlowProgress {
    sent_eps: f64,
    sent_ocs: f64,
    remaining: f64,
    rate: f64,
}

impl FlowProgress {
    /// Progress at `now` of a flow on `path` whose place is `s`.
    fn of(bundles: &[Bundle], clocks: &[Clock], s: &Slot, path: Path, now: Nanos) -> FlowProgress {
        let b = &bundles[s.bundle];
        let service = b.service(clocks, now);
        let here = service - s.joined;
        let (sent_eps, sent_ocs) = match path {
            Path::Ocs { .. } => (s.sent_eps, s.sent_ocs + here),
            Path::Eps => (s.sent_eps + here, s.sent_ocs),
            Path::Wait => (s.sent_eps, s.sent_ocs),
        };
        FlowProgress {
            sent_eps,
            sent_ocs,
            remaining: (s.finish - service).max(0.0),
            rate: b.rate(clocks),
        }
    }
}

/// [`Progress`] read from the network's bundles at `now`, for the flows a policy asks about.
struct LiveProgress<'a> {
    now: Nanos,
    bundles: &'a [Bundle],
    clocks: &'a [Clock],
    slots: &'a Slots,
    slot_of: &'a IdIndex,
    done_bytes: &'a BTreeMap<CoflowId, f64>,
    flows: &'a FlowTable,
}

impl LiveProgress<'_> {
    fn of(&self, f: &FlowView) -> Option<FlowProgress> {
        let s = &self.slots[self.slot_of.get(f.spec.id)?];
        Some(FlowProgress::of(self.bundles, self.clocks, s, f.path, self.now))
    }
}

impl Progress for LiveProgress<'_> {
    fn remaining_bytes(&self, flow: &FlowView) -> f64 {
        self.of(flow).map_or(flow.remaining_bytes, |p| p.remaining)
    }
    fn sent_bytes(&self, id: CoflowId, coflow: &CoflowView) -> f64 {
        let mut sent = self.done_bytes.get(&id).copied().unwrap_or(0.0);
        for f in coflow.flows.iter().filter_map(|f| self.flows.get(f)) {
            if let Some(p) = self.of(f) {
                sent += p.sent_eps + p.sent_ocs;
            }
        }
        sent
    }
}

/// Service within this of a member's finish counts as done (fluid rounding).
fn done_within(finish: f64) -> f64 {
    1e-6 + finish * 1e-12
}

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
    /// Pairs a flow joined since the last call: their plan is applied again
    /// (the new flow waits over EPS until then, and may have made the pair's
    /// flows elephants).
    stale_pairs: BTreeSet<PairKey>,
    now: Nanos,
    wake_at: Option<Nanos>,
    bundles: Vec<Bundle>,
    bundle_of: BundleIndex,
    free_bundles: Vec<usize>,
    /// Bundles emptied since the last rate solve, reused only after it.
    emptied: Vec<usize>,
    /// Bundles whose demand must be handed to the solver again.
    dirty: Vec<usize>,
    /// Bundles on a circuit path (their route changes with circuits).
    ocs_bundles: BTreeSet<usize>,
    /// Whether a circuit was set up, torn down or came up since the last solve.
    circuits_changed: bool,
    /// Finish times of the first members of bundles off any link clock:
    /// (time, bundle, generation); entries whose generation is not the
    /// bundle's are stale.
    finishes: BinaryHeap<Reverse<(Nanos, usize, u32)>>,
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
    circuit_log: Vec<CircuitRecord>,
    open_circuits: BTreeMap<(u32, u32), usize>,
    usage: LinkUsage,
    rates: Rates,
    /// What the last solve changed (kept to reuse its buffers).
    changes: Changes,
}

impl FluidNetwork {
    /// A network for `topo` whose coflows are scheduled by the policy named
    /// `coflow_policy` (see [`crate::coflow::by_name`]).
    pub fn new(topo: &Topology, coflow_policy: &str) -> anyhow::Result<FluidNetwork> {
        Ok(FluidNetwork::with_policy(topo, coflow::by_name(coflow_policy)?))
    }

    /// A network for `topo` driven by `policy`.
    pub fn with_policy(topo: &Topology, policy: Box<dyn CoflowPolicy>) -> FluidNetwork {
        FluidNetwork::on_fabric(FabricParams::from(topo), policy)
    }

    /// A network on `fabric` driven by `policy`.
    pub fn on_fabric(fabric: FabricParams, policy: Box<dyn CoflowPolicy>) -> FluidNetwork {
        let view = NetView::new(fabric);
        let usage = LinkUsage::new(&fabric);
        let rates = Rates::new(&view.links, policy.orders_coflows());
        FluidNetwork {
            triggers: policy.triggers(),
            policy,
            pairs: PairFlows::default(),
            pair_planned: PairPlans::default(),
            stale_pairs: BTreeSet::new(),
            now: Nanos::ZERO,
            wake_at: None,
            bundles: Vec::new(),
            bundle_of: BundleIndex::new(&fabric),
            free_bundles: Vec::new(),
            emptied: Vec::new(),
            dirty: Vec::new(),
            ocs_bundles: BTreeSet::new(),
            circuits_changed: false,
            finishes: BinaryHeap::new(),
            clocks: vec![Clock::default(); view.links.len()],
            clock_next: NextFinishes::new(rates.bind_end()),
            first_clock_finish: None,
            clocks_now: Vec::new(),
            clocks_due: Vec::new(),
            slots: Slots::default(),
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
            circuit_log: Vec::new(),
            open_circuits: BTreeMap::new(),
            changes: Changes::default(),
            rates,
            view,
            usage,
        }
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

    /// Like [`FluidNetwork::add_flows`], but returns an error (and adds
    /// none of the flows) if one is invalid.
    pub fn try_add_flows(&mut self, now: Nanos, flows: &[FlowSpec]) -> Result<(), NetError> {
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
                self.stale_pairs.insert(pair);
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
            let finish = joined + spec.bytes.0 as f64;
            let ix = self.slots.add(
                Slot {
                    bundle: b,
                    joined,
                    finish,
                    sent_eps: 0.0,
                    sent_ocs: 0.0,
                    pair: pair_ix,
                    stamp: 0,
                },
                spec.clone(),
                self.now,
            );
            self.slot_of.insert(spec.id, ix);
            self.bundles[b].insert(finish, spec.id, ix, self.slots[ix].stamp);
            self.mark_dirty(b);
        }
        if !flows.is_empty() {
            self.reschedule(ask);
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
        let completion = self.finishes.peek().map(|e| e.0 .0);
        let on_clock = self.first_clock_finish;
        [completion, on_clock, circuit, self.wake_at]
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
        events.append(&mut self.pending);
        while let Some(t) = self.next_event_at().filter(|&t| t <= now) {
            self.move_to(t);
            self.process(events);
        }
        if now > self.now {
            self.move_to(now);
        }
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
            let p = FlowProgress::of(&self.bundles, &self.clocks, s, f.path, now);
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
            .filter(|&ix| self.slot_of.get(self.slots.flow(ix).0.id) == Some(ix))
            .map(|ix| self.slots.flow(ix).clone())
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
        &self.circuit_log
    }

    /// The bytes the EPS uplinks and OCS ports carried so far, per time bin.
    pub fn usage(&self) -> &LinkUsage {
        &self.usage
    }

    /// The circuits and link utilization from 0 to `end` (at least the
    /// time the network has been moved to), for the results folder's plots.
    pub fn timeline(&self, end: Nanos) -> NetTimeline {
        NetTimeline {
            circuits: self.circuit_log.clone(),
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
                self.bundles.len() - 1
            }
        };
        self.bundle_of.insert(key, b);
        if matches!(key.path, Path::Ocs { .. }) {
            self.ocs_bundles.insert(b);
        }
        b
    }

    /// Bundle `b`'s members or route changed: its rate and finish time are
    /// recomputed at the next [`FluidNetwork::update_rates`].
    fn mark_dirty(&mut self, b: usize) {
        if !self.bundles[b].dirty {
            self.bundles[b].dirty = true;
            self.dirty.push(b);
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
        let here = (service - s.joined).max(0.0);
        match b.key.map(|k| k.path) {
            Some(Path::Ocs { .. }) => s.sent_ocs += here,
            Some(Path::Eps) => s.sent_eps += here,
            _ => {}
        }
        s.finish = (s.finish - service).max(0.0); // now: bytes remaining
        let bundle = s.bundle;
        b.remove(&self.slots);
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
        if old.path == key.path && self.bundles[here].count == 1 && self.bundle_of.get(&key).is_none() {
            self.bundle_of.remove(&old);
            self.bundle_of.insert(key, here);
            self.bundles[here].key = Some(key);
            self.mark_dirty(here);
        } else {
            self.leave(ix);
            let b = self.bundle_for(key);
            let joined = self.bundles[b].service(&self.clocks, self.now);
            let s = &mut self.slots[ix];
            s.bundle = b;
            s.joined = joined;
            s.finish += joined; // it held the bytes left
            let (finish, stamp) = (s.finish, s.stamp);
            self.bundles[b].insert(finish, id, ix, stamp);
            self.mark_dirty(b);
        }
        if let Some(f) = self.view.flows.get_mut(&id) {
            f.path = key.path;
            f.cap = key.cap();
        }
    }

    /// Flows move at their rates from `self.now` to `t` (no event in
    /// between); bundles' service is kept lazily, so only link usage is recorded.
    fn move_to(&mut self, t: Nanos) {
        if t > self.now {
            self.usage.advance(self.now, t);
        }
        self.now = t;
    }

    /// Handles what happens at `self.now`, then asks the policy again.
    fn process(&mut self, events: &mut Vec<NetEvent>) {
        let now = self.now;
        let mut due = std::mem::take(&mut self.due);
        due.clear();
        while let Some(&Reverse((t, b, generation))) = self.finishes.peek() {
            if t > now {
                break;
            }
            self.finishes.pop();
            if self.bundles[b].generation == generation {
                due.push(b);
            }
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
                    if finish - service > bundle.slack(&self.clocks, now, finish) {
                        break;
                    }
                    done.push(ix);
                    // `finish` reads both a little later: their loads overlap.
                    prefetch(&self.slots[ix]);
                    prefetch(self.slots.flow(ix));
                }
                bundle.members.pop();
            }
        }
        for &b in &due {
            // Its finish time is recomputed whether or not a member left.
            self.mark_dirty(b);
        }
        self.due = due;
        let mut ask = false;
        for &ix in &done {
            ask |= self.finish(ix, events);
        }
        self.done = done;
        for c in self.view.circuits.values().filter(|c| c.up_at == now) {
            self.circuits_changed = true;
            ask |= self.triggers.circuit_up;
            events.push(NetEvent::Circuit {
                at: now,
                src_rack: c.src_rack,
                dst_rack: c.dst_rack,
                port: c.port,
                up: true,
            });
        }
        if self.wake_at.is_some_and(|t| t <= now) {
            self.wake_at = None;
            ask = true;
        }
        self.reschedule(ask);
        events.append(&mut self.pending);
    }

    /// Adds to `due` the bundles on link clocks whose first member is done
    /// now; those clocks' next finishes are recomputed at the next refresh.
    fn due_on_clocks(&mut self, due: &mut Vec<usize>) {
        let now = self.now;
        if self.first_clock_finish.is_none_or(|t| t > now) {
            return;
        }
        let mut clocks = std::mem::take(&mut self.clocks_now);
        clocks.clear();
        self.clock_next.take_due(now, &mut clocks);
        for &li in &clocks {
            let l = li as LinkId;
            // The bundles on this clock whose first member is due.
            while let Some(&Reverse((_, b, g))) = self.clocks[li].finishes.peek() {
                let bundle = &self.bundles[b];
                if bundle.generation == g && bundle.clock == Some(l) {
                    let remaining = bundle.min_finish - bundle.service(&self.clocks, now);
                    if remaining > bundle.slack(&self.clocks, now, bundle.min_finish) {
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
        let (spec, started) = self.slots.flow(ix).clone();
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
        if let Some(c) = self.view.coflows.get_mut(&spec.coflow) {
            c.flows.remove(&id);
            if c.flows.is_empty() {
                if let Some(c) = self.view.coflows.remove(&spec.coflow) {
                    self.dormant.insert(spec.coflow, c);
                }
            }
        }
        ask
    }

    /// Asks the policy if `ask` (an event it is triggered by) and applies its
    /// decision, then recomputes rates and finish times.
    fn reschedule(&mut self, ask: bool) {
        if ask {
            self.ask_policy();
        }
        self.update_rates();
    }

    /// Asks the policy and applies its decision (paths, caps, circuits, wake-up).
    fn ask_policy(&mut self) {
        let now = self.now;
        let progress = LiveProgress {
            now,
            bundles: &self.bundles,
            clocks: &self.clocks,
            slots: &self.slots,
            slot_of: &self.slot_of,
            done_bytes: &self.coflow_done_bytes,
            flows: &self.view.flows,
        };
        let decision = self.policy.decide(now, &self.view, &progress);
        self.stats.policy_calls += 1;
        self.wake_at = decision.wake_at.filter(|&t| t > now);
        for setup in &decision.circuits {
            self.set_up(*setup);
        }
        self.apply_pair_plans(&decision.pair_changes);
        if self.policy.orders_coflows() {
            self.rates.set_order(&decision.order);
        } else if !decision.order.is_empty() {
            tracing::warn!(
                policy = self.policy.name(),
                "a policy that does not order coflows gave an order; ignored"
            );
        }
        let fabric = self.view.fabric;
        let mut planned = std::mem::take(&mut self.planning);
        planned.clear();
        for &(id, plan) in &decision.plans {
            let Some(f) = self.view.flows.get(&id) else {
                continue;
            };
            let key = plan_key(&fabric, &mut self.rates, f, plan);
            if key != default_key(&mut self.rates, &f.spec) {
                planned.push(id);
            }
            self.move_flow(id, key);
        }
        if !planned.is_sorted() {
            planned.sort_unstable();
        }
        planned.dedup();
        // Flows planned at the last call and not at this one go back to
        // the default, in id order, unless a pair plan covers them.
        let pair_planned = &self.pair_planned;
        let covered = |f: &FlowView| {
            let key = (f.spec.coflow, f.spec.src.rack, f.spec.dst.rack);
            pair_planned.get(key).is_some()
        };
        let mut now = planned.iter().peekable();
        let back: Vec<FlowId> = self
            .planned
            .iter()
            .copied()
            .filter(|id| {
                while now.next_if(|&&n| n < *id).is_some() {}
                now.peek() != Some(&id)
            })
            .filter(|id| self.view.flows.get(id).is_some_and(|f| !covered(f)))
            .collect();
        for id in back {
            if let Some(f) = self.view.flows.get(&id) {
                let key = default_key(&mut self.rates, &f.spec);
                self.move_flow(id, key);
            }
        }
        self.planning = std::mem::replace(&mut self.planned, planned);
    }

    /// Applies a decision's pair plan changes to the standing pair plans
    /// ([`crate::coflow::Decision`]). Only pairs whose plan is not what it
    /// was, and pairs a flow joined since the last call
    /// ([`FluidNetwork::stale_pairs`]) and that have a plan, move their
    /// flows (a pair that lost its plan goes back to EPS, no cap), in
    /// flow-id order as per-flow plans do. A pair whose plan stands costs
    /// nothing.
    fn apply_pair_plans(&mut self, changes: &[PairPlan]) {
        let mut changed = self.pair_planned.apply(changes);
        for key in std::mem::take(&mut self.stale_pairs) {
            if let Some(plan) = self.pair_planned.get(key) {
                changed.push((key, Some(plan)));
            }
        }
        let fabric = self.view.fabric;
        let mut moves: Vec<(FlowId, BundleKey)> = Vec::new();
        for (key, plan) in changed {
            let Some(flows) = self.pairs.get(&key) else {
                continue;
            };
            for id in flows {
                if let Some(f) = self.view.flows.get(id) {
                    let to = match plan {
                        Some(p) => plan_key(&fabric, &mut self.rates, f, p),
                        None => default_key(&mut self.rates, &f.spec),
                    };
                    moves.push((*id, to));
                }
            }
        }
        moves.sort_by_key(|&(id, _)| id);
        moves.dedup_by_key(|&mut (id, _)| id);
        for (id, key) in moves {
            self.move_flow(id, key);
        }
    }

    fn set_up(&mut self, s: CircuitSetup) {
        let f = &self.view.fabric;
        if s.src_rack >= f.racks || s.dst_rack >= f.racks || s.src_rack == s.dst_rack || s.port >= f.ocs_ports
        {
            tracing::warn!(?s, "policy asked for an impossible circuit; ignored");
            return;
        }
        if self.view.circuit(s.src_rack, s.dst_rack, s.port).is_some() {
            return;
        }
        if let Some(old) = self.view.circuits.remove(&(s.src_rack, s.port)) {
            self.tear_down(old);
        }
        let into = self
            .view
            .circuit_into(s.dst_rack, s.port)
            .map(|c| (c.src_rack, c.port));
        if let Some(key) = into {
            if let Some(old) = self.view.circuits.remove(&key) {
                self.tear_down(old);
            }
        }
        let up_at = self.now + self.view.fabric.reconfig_delay;
        self.circuits_changed = true;
        self.view.circuits.insert(
            (s.src_rack, s.port),
            CircuitView {
                src_rack: s.src_rack,
                dst_rack: s.dst_rack,
                port: s.port,
                up_at,
            },
        );
        self.stats.reconfigurations += 1;
        self.open_circuits
            .insert((s.src_rack, s.port), self.circuit_log.len());
        self.circuit_log.push(CircuitRecord {
            src_rack: s.src_rack,
            dst_rack: s.dst_rack,
            port: s.port,
            requested_at: self.now,
            up_at,
            down_at: None,
        });
        if up_at == self.now {
            self.pending.push(NetEvent::Circuit {
                at: up_at,
                src_rack: s.src_rack,
                dst_rack: s.dst_rack,
                port: s.port,
                up: true,
            });
        }
    }

    fn tear_down(&mut self, old: CircuitView) {
        self.circuits_changed = true;
        if let Some(i) = self.open_circuits.remove(&(old.src_rack, old.port)) {
            self.circuit_log[i].down_at = Some(self.now);
        }
        if old.is_up(self.now) {
            self.pending.push(NetEvent::Circuit {
                at: self.now,
                src_rack: old.src_rack,
                dst_rack: old.dst_rack,
                port: old.port,
                up: false,
            });
        }
    }

    /// Hands the changed bundles' demands to the max-min solver; rebases
    /// the clocks of the links whose level changed, moves the bundles whose
    /// bottleneck changed to their new clock (or off clocks), and
    /// recomputes the finish of those and of the bundles whose members
    /// changed. A bundle whose bottleneck stayed put is not touched.
    fn update_rates(&mut self) {
        let now = self.now;
        if std::mem::take(&mut self.circuits_changed) {
            let ocs: Vec<usize> = self.ocs_bundles.iter().copied().collect();
            ocs.into_iter().for_each(|b| self.mark_dirty(b));
        }
        // Each bundle once: the dirty ones, then those the solve moved.
        // A bundle stays dirty until the end: it tells the ones already taken.
        let mut touched = std::mem::take(&mut self.dirty);
        for &b in &touched {
            let bundle = &self.bundles[b];
            let (demand, class) = match bundle.key {
                Some(k) if bundle.count > 0 => {
                    let demand = route(&self.view.links, &self.view.circuits, k, now).map(|links| Demand {
                        links,
                        cap: k.cap().map_or(f64::INFINITY, Bps::bytes_per_sec),
                        weight: bundle.count,
                    });
                    (demand, k.class())
                }
                _ => (None, None),
            };
            self.rates.set(b, demand, class);
        }
        let mut changes = std::mem::take(&mut self.changes);
        self.rates.solve(&mut changes);
        // Classes (with their class links) come and go with coflows.
        let end = self.rates.bind_end();
        self.clock_next.grow(end);
        if end > self.clocks.len() {
            self.clocks.resize(end, Clock::default());
        }
        for &l in &changes.links {
            self.clocks[l as usize].set_level(now, self.rates.level(l));
            Self::clock_due(&mut self.clocks, &mut self.clocks_due, l);
        }
        for &b in &changes.slots {
            let b = b as usize;
            self.rehome(b);
            if !self.bundles[b].dirty {
                self.bundles[b].dirty = true;
                touched.push(b);
            }
        }
        self.changes = changes;
        for &b in &touched {
            let bundle = &mut self.bundles[b];
            bundle.dirty = false;
            bundle.generation = bundle.generation.wrapping_add(1);
            if !bundle.min_finish.is_finite() {
                continue;
            }
            match bundle.clock {
                Some(l) => {
                    let (at, generation) = (bundle.min_finish - bundle.offset, bundle.generation);
                    let bundles = &self.bundles;
                    self.clocks[l as usize].push_finish(at, b, generation, |b, g| {
                        bundles[b].generation == g && bundles[b].clock == Some(l)
                    });
                    Self::clock_due(&mut self.clocks, &mut self.clocks_due, l);
                }
                None => {
                    if let Some(t) = bundle.first_finish(&self.clocks, now) {
                        self.finishes.push(Reverse((t, b, bundle.generation)));
                    }
                }
            }
        }
        touched.clear();
        self.dirty = touched;
        self.refresh_clocks();
        self.usage
            .set_rates(&self.rates.loads()[self.view.links.first_tracked() as usize..]);
        let mut emptied = std::mem::take(&mut self.emptied);
        for &b in &emptied {
            if let Some(k) = self.bundles[b].key.take() {
                if matches!(k.path, Path::Ocs { .. }) {
                    self.ocs_bundles.remove(&b);
                }
            }
            self.free_bundles.push(b);
        }
        emptied.clear();
        self.emptied = emptied;
        // Stale entries dropped when they outnumber the bundles, and the
        // first entry current, for next_event_at.
        let bundles = &self.bundles;
        drop_stale(&mut self.finishes, 4 * bundles.len() + 4096, |&(_, b, g)| {
            bundles[b].generation == g
        });
    }

    /// Bundle `b`'s bottleneck (or demand) changed at the last solve: it
    /// leaves its clock with the service it has, and joins the clock of its
    /// new bottleneck link, or runs on its own at its cap (or stands still).
    fn rehome(&mut self, b: usize) {
        let now = self.now;
        let service = self.bundles[b].service(&self.clocks, now);
        if let Some(l) = self.bundles[b].clock.take() {
            self.clocks[l as usize].detach(now);
            Self::clock_due(&mut self.clocks, &mut self.clocks_due, l);
        }
        let bundle = &mut self.bundles[b];
        match self.rates.bottleneck(b) {
            Bottleneck::Link(l) => {
                let clock = &mut self.clocks[l as usize];
                clock.attach();
                bundle.clock = Some(l);
                bundle.offset = service - clock.value(now);
            }
            Bottleneck::Cap | Bottleneck::Idle => {
                bundle.base = service;
                bundle.base_time = now;
                bundle.rate = self.rates.rate(b);
            }
        }
    }

    /// Clock `l`'s next finish must be recomputed (once, however often this
    /// is said before [`FluidNetwork::refresh_clocks`]).
    fn clock_due(clocks: &mut [Clock], due: &mut Vec<LinkId>, l: LinkId) {
        let clock = &mut clocks[l as usize];
        if !clock.due {
            clock.due = true;
            due.push(l);
        }
    }

    /// Recomputes the next finish of every clock in `clocks_due`, and the
    /// earliest of all clocks' (for next_event_at).
    fn refresh_clocks(&mut self) {
        let now = self.now;
        let due = std::mem::take(&mut self.clocks_due);
        for &l in &due {
            let li = l as usize;
            let bundles = &self.bundles;
            let clock = &mut self.clocks[li];
            clock.due = false;
            drop_stale(&mut clock.finishes, usize::MAX, |&(_, b, g)| {
                bundles[b].generation == g && bundles[b].clock == Some(l)
            });
            let first = clock.finishes.peek().map(|&Reverse((_, b, _))| b);
            // The first of the clock's bundles moves at the clock's level.
            let next = first
                .and_then(|b| bundles[b].first_finish(&self.clocks, now))
                .unwrap_or(NextFinishes::NONE);
            self.clock_next.set(li, next);
        }
        self.clocks_due = due;
        self.clocks_due.clear();
        self.first_clock_finish = self.clock_next.settle();
    }
}

/// The bundle key of flow `f` under `plan`: a circuit only for an
/// elephant and an existing port, EPS otherwise; in its coflow's class if
/// `rates` are solved by classes.
fn plan_key(fabric: &FabricParams, rates: &mut Rates, f: &FlowView, plan: FlowPlan) -> BundleKey {
    let path = match plan.path {
        Path::Ocs { port } if port < fabric.ocs_ports && f.elephant => plan.path,
        Path::Ocs { .. } => Path::Eps,
        p => p,
    };
    BundleKey::new(
        path,
        f.spec.src,
        f.spec.dst,
        plan.cap,
        rates.class_of(f.spec.coflow),
    )
}

/// The key of a flow no policy has planned: EPS, no cap (in its
/// coflow's class if `rates` are solved by classes).
fn default_key(rates: &mut Rates, spec: &FlowSpec) -> BundleKey {
    BundleKey::new(Path::Eps, spec.src, spec.dst, None, rates.class_of(spec.coflow))
}

/// When a member with `remaining` bytes to its finish counts as done at
/// `rate`, counted from `now`: the first nanosecond at which at most
/// `slack` ([`Bundle::slack`]) is left, the test [`FluidNetwork::process`] applies. Rounding up the exact quotient instead
/// would turn float noise (63963136 B / 125 MB/s * 1e9 = 511705088.00000006)
/// into a finish 1 ns late, and split events that happen together.
fn eta(now: Nanos, remaining: f64, slack: f64, rate: f64) -> Option<Nanos> {
    if remaining <= slack {
        Some(now)
    } else if rate > 0.0 {
        let ns = ((remaining - slack) / rate * 1e9).ceil();
        Some(now + Nanos(ns.min(u64::MAX as f64) as u64))
    } else {
        None
    }
}

/// The links the flows of bundle `key` cross at `now`, or `None` if they do
/// not move (waiting, or their circuit is not up).
fn route(
    links: &LinkMap,
    circuits: &BTreeMap<(u32, u32), CircuitView>,
    key: BundleKey,
    now: Nanos,
) -> Option<Links> {
    match key.path {
        Path::Eps => Some(links.eps_route(key.src, key.dst)),
        Path::Wait => None,
        Path::Ocs { port } => circuits
            .get(&(key.src.rack, port))
            .filter(|c| c.dst_rack == key.dst.rack && c.is_up(now))
            .map(|_| links.ocs_path(key.src, key.dst, port)),
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
