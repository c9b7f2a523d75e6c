//! Bundles: flows that share a route and a cap get the same max-min rate,
//! so they are kept together and their service (bytes each member received
//! while in the bundle) is counted once. Here are the bundle, its key, the
//! index from key to bundle, and the progress of a member read from them.

use super::super::class_levels::ClassId;
use super::super::clocks::Clock;
use super::super::fasthash::FastMap;
use super::super::links::LinkId;
use super::super::prefetch::{prefetch, Window, READ_AHEAD};
use super::super::slots::{Slot, Slots};
use super::eta;
use ocslab_core::coflow::id_index::IdIndex;
use ocslab_core::coflow::{CoflowView, FabricParams, FlowView, NetView, Path, Progress};
use ocslab_core::model::coflow::{CoflowId, FlowId};
use ocslab_core::{Bps, HostId, Nanos};
use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::collections::BinaryHeap;

/// What makes flows share a rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) struct BundleKey {
    pub(super) path: Path,
    pub(super) src: HostId,
    pub(super) dst: HostId,
    /// The pacing cap in bits per second, or [`BundleKey::UNCAPPED`]: a
    /// sentinel, not an `Option`, so that the key stays 40 bytes and shares
    /// a cache line with the bundle's members.
    pub(super) cap_bps: u64,
    /// The flows' class when rates are solved class by class (their
    /// coflow's, [`crate::net::class_levels`]), or [`BundleKey::NO_CLASS`].
    pub(super) class: ClassId,
}

impl BundleKey {
    pub(super) const UNCAPPED: u64 = u64::MAX;
    pub(super) const NO_CLASS: ClassId = ClassId::MAX;

    pub(super) fn new(
        path: Path,
        src: HostId,
        dst: HostId,
        cap: Option<Bps>,
        class: Option<ClassId>,
    ) -> BundleKey {
        BundleKey {
            path,
            src,
            dst,
            cap_bps: cap.map_or(Self::UNCAPPED, |c| c.0.min(Self::UNCAPPED - 1)),
            class: class.unwrap_or(Self::NO_CLASS),
        }
    }

    /// The pacing cap, if any.
    pub(super) fn cap(&self) -> Option<Bps> {
        (self.cap_bps != Self::UNCAPPED).then_some(Bps(self.cap_bps))
    }

    /// The class, if any.
    pub(super) fn class(&self) -> Option<ClassId> {
        (self.class != Self::NO_CLASS).then_some(self.class)
    }
}

/// Flows with one key. Its service (bytes each member has received while
/// in it) is `offset` plus the clock of the link it is bottlenecked at
/// ([`crate::net::clocks`]), or, off any link clock (held by its cap, or not
/// moving), grows at `rate` from `base` at `base_time`. Either way it is kept
/// lazily: an event costs nothing for a bundle whose bottleneck it leaves alone.
///
/// Laid out for the cache: what an event reads of a bundle (its service,
/// first finish, generation, members count, dirty flag) fills the first
/// 64-byte line, its members' heap and key the second.
#[derive(Clone, Debug, Default)]
#[repr(C, align(64))]
pub(super) struct Bundle {
    /// The link clock it runs on, if any.
    pub(super) clock: Option<LinkId>,
    pub(super) offset: f64,
    pub(super) base: f64,
    pub(super) base_time: Nanos,
    pub(super) rate: f64,
    /// The smallest finish among members (infinite when empty).
    pub(super) min_finish: f64,
    /// Bumped whenever its finish time is recomputed: older heap entries are stale.
    pub(super) generation: u32,
    /// Members, not counting stale entries.
    pub(super) count: u32,
    /// Σ weight of those members: the flows it stands for in the rate solve.
    pub(super) weight: u32,
    /// Whether its demand (members, route) must be handed to the rate
    /// solver again; during a rate update, whether the update took it.
    pub(super) dirty: bool,
    /// Whether it is routed over a circuit now.
    pub(super) on_circuit: bool,
    /// Whether it ever was: only then is its [`OcsShare`] read.
    pub(super) had_circuit: bool,
    /// Members, first finish first: (service at which it finishes, as f64
    /// bits: order-preserving for >= 0; id; slot; the slot's stamp when it
    /// joined). Entries whose stamp is not their slot's are stale: the
    /// member left ([`Slots`]).
    pub(super) members: BinaryHeap<Reverse<Member>>,
    pub(super) key: Option<BundleKey>,
}

/// The bundle of each key in use. Nearly every flow of a trace replay
/// takes the default key (EPS, no cap) of its host pair, so those are
/// found in a vector by host pair (no hashing, one small array), as long
/// as the fabric's host pairs number at most [`BundleIndex::MAX_PAIRS`];
/// other uncapped keys are hashed. Capped keys are not held: a capped flow
/// keeps a bundle of its own ([`BundleIndex::holds`]).
#[derive(Clone, Debug, Default)]
pub(super) struct BundleIndex {
    pub(super) hosts_per_rack: u32,
    pub(super) hosts: usize,
    /// The bundle of each host pair's default key (src × hosts + dst), or
    /// `u32::MAX`; empty when the fabric has too many host pairs.
    pub(super) default: Vec<u32>,
    /// The other keys' bundles (all keys when `default` is empty).
    pub(super) other: FastMap<BundleKey, usize>,
}

impl BundleIndex {
    /// Most host pairs whose default keys are held in a vector (16 MB).
    pub(super) const MAX_PAIRS: usize = 1 << 22;

    pub(super) fn new(fabric: &FabricParams) -> BundleIndex {
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

    /// Whether bundles of `key` are held at all: not those of a capped key.
    /// Flows with one cap share a rate as much as uncapped ones do, but a
    /// policy that caps flows gives each its own cap and changes them all
    /// at every call (Varys, Aalo): so each capped flow is a bundle of its
    /// own, and a new cap is written into its key in place, where a held
    /// key would cost a lookup, a removal and an insertion.
    pub(super) fn holds(key: &BundleKey) -> bool {
        key.cap_bps == BundleKey::UNCAPPED
    }

    /// Where `key`'s bundle is held in `default`, if it is held there.
    pub(super) fn pair(&self, key: &BundleKey) -> Option<usize> {
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

    pub(super) fn get(&self, key: &BundleKey) -> Option<usize> {
        if !Self::holds(key) {
            return None;
        }
        match self.pair(key) {
            Some(p) => Some(self.default[p])
                .filter(|&b| b != u32::MAX)
                .map(|b| b as usize),
            None => self.other.get(key).copied(),
        }
    }

    pub(super) fn insert(&mut self, key: BundleKey, b: usize) {
        if !Self::holds(&key) {
            return;
        }
        match self.pair(&key) {
            Some(p) => self.default[p] = b as u32,
            None => {
                self.other.insert(key, b);
            }
        }
    }

    pub(super) fn remove(&mut self, key: &BundleKey) {
        if !Self::holds(key) {
            return;
        }
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
    /// The flow in slot `ix` (stamp `stamp`, weight `weight`) joins, done
    /// at service `finish`.
    pub(super) fn insert(&mut self, finish: f64, id: FlowId, ix: u32, stamp: u32, weight: u32) {
        if self.members.capacity() == 0 {
            // Room for one: most bundles of a wide shuffle, one host pair
            // each, never hold more (a vector's first growth makes room
            // for four).
            self.members.reserve_exact(1);
        }
        self.members.push(Reverse((finish.to_bits(), id, ix, stamp)));
        self.count += 1;
        self.weight += weight;
        self.min_finish = self.min_finish.min(finish);
    }
    /// A member of weight `weight` left (its slot's stamp moved on, so its
    /// entry is stale): drops stale entries from the front (all of them
    /// when they outnumber the members), and takes the first finish from
    /// what is left.
    pub(super) fn remove(&mut self, slots: &Slots, weight: u32) {
        self.count -= 1;
        self.weight -= weight;
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
    pub(super) fn service(&self, clocks: &[Clock], now: Nanos) -> f64 {
        match self.clock {
            Some(l) => self.offset + clocks[l as usize].value(now),
            None if self.rate > 0.0 => self.base + self.rate * (now - self.base_time).as_secs_f64(),
            None => self.base,
        }
    }
    /// Its service over circuits when its service is `service` (`share`
    /// is read only if it was ever on a circuit: a bundle's first cache
    /// line answers for the others).
    pub(super) fn ocs_service(&self, share: &OcsShare, service: f64) -> f64 {
        if self.had_circuit {
            share.at(service, self.on_circuit)
        } else {
            0.0
        }
    }
    /// Each member's rate per unit of weight.
    pub(super) fn rate(&self, clocks: &[Clock]) -> f64 {
        self.clock.map_or(self.rate, |l| clocks[l as usize].level())
    }
    /// How close to `finish` its service must be at `now` for the member to
    /// count as done: [`done_within`] of the larger of the numbers the
    /// service is computed from (on a link clock, the clock's value too).
    pub(super) fn slack(&self, clocks: &[Clock], now: Nanos, finish: f64) -> f64 {
        let scale = self.clock.map_or(0.0, |l| clocks[l as usize].value(now).abs());
        done_within(finish.abs().max(scale))
    }
    /// Whether a member whose service is `remaining` short of `finish` is
    /// done at an event at `now`: within [`Bundle::slack`] of its finish,
    /// or finishing less than [`SAME_EVENT`] after the event at the
    /// bundle's rate.
    ///
    /// Event times are whole nanoseconds, each rounded up from the finish
    /// it stands for, and every flow moves at its old rate until the
    /// rounded time. So two finishes that coincide in exact arithmetic land
    /// a few nanoseconds apart, one more for each rate change the flows
    /// went through. Taking only the first, the event would leave the other
    /// a crumb of bytes, and if it took that flow's rate away (a coflow
    /// ahead of it in a strict order taking what the finished flow freed on
    /// its link), the flow would wait with its crumb for as long as the
    /// rate stayed away (0.08 B for 150 ms in a case of `reference_tests`
    /// without this rule).
    pub(super) fn done_at_event(&self, clocks: &[Clock], now: Nanos, finish: f64, remaining: f64) -> bool {
        let slack = self.slack(clocks, now, finish);
        remaining <= slack || remaining - slack < self.rate(clocks) * SAME_EVENT.as_secs_f64()
    }
    /// When its first member finishes at its current rate ([`eta`]), if it moves.
    pub(super) fn first_finish(&self, clocks: &[Clock], now: Nanos) -> Option<Nanos> {
        let remaining = self.min_finish - self.service(clocks, now);
        let slack = self.slack(clocks, now, self.min_finish);
        eta(now, remaining, slack, self.rate(clocks))
    }
}

/// How much of a bundle's service it received over a circuit. A bundle's
/// route can change between EPS and a circuit while its key stays (under a
/// time-flow schedule, a flow between racks crosses a circuit of its rack
/// pair only while one is up), so its members' bytes are split by this
/// second counter: the service received while routed over a circuit. Kept
/// beside the bundles (indexed alike), off their cache lines; whether the
/// bundle is on a circuit now is its own [`Bundle::on_circuit`].
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct OcsShare {
    /// Service over circuits before the current stretch on one.
    base: f64,
    /// The bundle's service when the current stretch on a circuit began.
    from: f64,
}

impl OcsShare {
    /// Service over circuits when the bundle's service is `service`, and it
    /// is on a circuit (`on`) or not.
    pub(super) fn at(&self, service: f64, on: bool) -> f64 {
        if on {
            self.base + (service - self.from)
        } else {
            self.base
        }
    }
    /// The bundle's route changes onto a circuit (`on`) or off one, when
    /// its service is `service`.
    pub(super) fn switch(&mut self, on: bool, service: f64) {
        if on {
            self.from = service;
        } else {
            self.base += service - self.from;
        }
    }
}

/// A flow's progress at one instant, from its slot and its bundle's counter.
pub(super) struct FlowProgress {
    pub(super) sent_eps: f64,
    pub(super) sent_ocs: f64,
    pub(super) remaining: f64,
    pub(super) rate: f64,
}

impl FlowProgress {
    /// Progress at `now` of the flow whose place is `s`.
    pub(super) fn of(
        bundles: &[Bundle],
        shares: &[OcsShare],
        clocks: &[Clock],
        s: &Slot,
        now: Nanos,
    ) -> FlowProgress {
        let b = &bundles[s.bundle];
        let service = b.service(clocks, now);
        let (here, here_ocs) = sent_since_join(s, service, b, &shares[s.bundle]);
        let w = f64::from(s.weight);
        FlowProgress {
            sent_eps: s.sent_eps + here - here_ocs,
            sent_ocs: s.sent_ocs + here_ocs,
            remaining: remaining_at(s, service),
            rate: b.rate(clocks) * w,
        }
    }
}

/// The bytes the flow in slot `s` has left when its bundle's service is `service`.
fn remaining_at(s: &Slot, service: f64) -> f64 {
    (s.finish - service).max(0.0) * f64::from(s.weight)
}

/// The bytes the flow in slot `s` received in `bundle` (its bundle, whose
/// share is `share`) since it joined, when the bundle's service is
/// `service`: (in all, over circuits), its weight times the service.
pub(super) fn sent_since_join(s: &Slot, service: f64, bundle: &Bundle, share: &OcsShare) -> (f64, f64) {
    let here = (service - s.joined).max(0.0);
    let ocs = (bundle.ocs_service(share, service) - s.joined_ocs).clamp(0.0, here);
    let w = f64::from(s.weight);
    (here * w, ocs * w)
}

/// [`Progress`] read from the network's bundles at `now`, for the flows a policy asks about.
pub(super) struct LiveProgress<'a> {
    pub(super) now: Nanos,
    pub(super) bundles: &'a [Bundle],
    pub(super) shares: &'a [OcsShare],
    pub(super) clocks: &'a [Clock],
    pub(super) slots: &'a Slots,
    pub(super) slot_of: &'a IdIndex,
    pub(super) done_bytes: &'a BTreeMap<CoflowId, f64>,
}

impl LiveProgress<'_> {
    pub(super) fn of(&self, f: &FlowView) -> Option<FlowProgress> {
        let s = &self.slots[self.slot_of.get(f.spec.id)?];
        Some(FlowProgress::of(
            self.bundles,
            self.shares,
            self.clocks,
            s,
            self.now,
        ))
    }

    /// Asks for slot `far` and for the bundle of slot `near`: a loop over
    /// flows whose slot and then bundle are a cache miss apart asks for
    /// the slot [`READ_AHEAD`] × 2 flows ahead and for the bundle
    /// [`READ_AHEAD`] flows ahead, so the misses overlap.
    fn ask_ahead(&self, far: Option<u32>, near: Option<u32>) {
        if let Some(ix) = far {
            prefetch(&self.slots[ix]);
        }
        if let Some(ix) = near {
            prefetch(&self.bundles[self.slots[ix].bundle]);
        }
    }

    /// Calls `each(i, slot)` for the `i`-th of `slots` in turn (`None`: the
    /// flow has no slot), asking for the slots and bundles of the next
    /// ones ahead ([`LiveProgress::ask_ahead`]).
    fn for_each_slot(
        &self,
        slots: impl Iterator<Item = Option<u32>>,
        mut each: impl FnMut(usize, Option<&Slot>),
    ) {
        let mut at = Window::new(slots);
        let mut i = 0;
        while let Some(here) = at.at(i) {
            self.ask_ahead(
                at.at(i + 2 * READ_AHEAD).flatten(),
                at.at(i + READ_AHEAD).flatten(),
            );
            at.slide();
            each(i, here.map(|ix| &self.slots[ix]));
            i += 1;
        }
    }

    /// Bytes left of the flow in slot `s`.
    fn remaining_in(&self, s: &Slot) -> f64 {
        remaining_at(s, self.bundles[s.bundle].service(self.clocks, self.now))
    }
}

impl Progress for LiveProgress<'_> {
    fn remaining_bytes(&self, flow: &FlowView) -> f64 {
        self.of(flow).map_or(flow.remaining_bytes, |p| p.remaining)
    }
    /// With the slots and bundles of the next flows asked for ahead
    /// ([`LiveProgress::ask_ahead`]).
    fn remaining_bytes_of(&self, flows: &[&FlowView], out: &mut Vec<f64>) {
        let slots = flows.iter().map(|f| self.slot_of.get(f.spec.id));
        self.for_each_slot(slots, |i, s| {
            out.push(s.map_or(flows[i].remaining_bytes, |s| self.remaining_in(s)))
        });
    }
    /// Read ahead as [`Progress::remaining_bytes_of`] is; a flow without a
    /// slot has left the network (its view, if any, says what is left).
    fn remaining_bytes_by_id(&self, view: &NetView, ids: &[FlowId], out: &mut Vec<Option<f64>>) {
        let slots = ids.iter().map(|&id| self.slot_of.get(id));
        self.for_each_slot(slots, |i, s| {
            out.push(match s {
                Some(s) => Some(self.remaining_in(s)),
                None => view.flows.get(&ids[i]).map(|f| f.remaining_bytes),
            })
        });
    }
    /// Read ahead as [`Progress::remaining_bytes_of`] is. Every flow with
    /// a slot is in the flow table (both are set at its arrival and
    /// cleared at its finish), so the slots alone name the active flows.
    fn sent_bytes(&self, id: CoflowId, coflow: &CoflowView) -> f64 {
        let mut sent = self.done_bytes.get(&id).copied().unwrap_or(0.0);
        let slots = coflow.flows.iter().map(|&f| self.slot_of.get(f));
        self.for_each_slot(slots, |_, s| {
            if let Some(s) = s {
                let p = FlowProgress::of(self.bundles, self.shares, self.clocks, s, self.now);
                sent += p.sent_eps + p.sent_ocs;
            }
        });
        sent
    }
}

/// Service within this of a member's finish counts as done (fluid rounding).
pub(super) fn done_within(finish: f64) -> f64 {
    1e-6 + finish * 1e-12
}

/// Finishes this close after an event are taken at it ([`Bundle::done_at_event`]).
pub(super) const SAME_EVENT: Nanos = Nanos(100);
