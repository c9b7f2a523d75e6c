//! Max-min fair rates kept as one *level* per link ([`LinkLevels`]).
//!
//! In a max-min fair allocation every flow has a bottleneck: a saturated
//! link on which no flow gets more than it does (Bertsekas & Gallager,
//! *Data Networks*, Sec. 6.5.2), or its own cap. Call the rate of the flows
//! bottlenecked at link `l` its level `λ_l`; then a flow's rate is
//! `min(cap, min over its links of λ_l)`, the level of the link where
//! progressive filling froze it. So the allocation is held by the links
//! (a few hundred numbers) plus one bottleneck per slot, and an event that
//! moves thousands of rates but no bottleneck changes only link levels: the
//! fluid network keeps one service clock per link (`super::clocks`),
//! and a bundle whose bottleneck stays put costs nothing.
//!
//! Each solve is a full progressive filling over the current demands, on
//! per-link lists of the slots that cross each link, kept up to date as
//! demands change (no adjacency is rebuilt): the link with the smallest
//! share (remaining capacity ÷ unfrozen flows) or the smallest unmet cap
//! freezes its flows at that share, charging every link they cross; links
//! wait sorted by their starting shares, updated lazily (freezing only
//! raises other links' shares, so a stale key is too small: the share is
//! recomputed only when the link's turn comes, and if it rose the link
//! moves to a heap by share, where the same holds). Most links lose their
//! flows before their turn and are passed over at no cost, where a heap
//! would sift each one out. Ties go to the lower link id, and between a
//! link's share and an equal cap to the cap, so results never depend on
//! iteration order; they equal [`super::maxmin::max_min`]'s up to float
//! rounding (the property test below). The cap first: a policy whose caps
//! fill a link exactly (Varys' MADD gives its bottleneck flows all of it)
//! then leaves every slot at its cap, and the departures until its next
//! call take the fast path (`LinkLevels::solve_departures_at_caps`). The
//! call itself, which moves thousands of caps, needs no filling either
//! when every demand is capped and the caps fit on every link, kept as
//! exact sums of whole bits per second per link (`fit.rs`,
//! `LinkLevels::solve_at_caps`): the caps are then the max-min allocation.
//!
//! A freeze sums the weights it takes on each other link, then charges
//! each link once (level × weight). So when no demand is capped and the
//! matrix holds none, a solve can freeze links from the slots grouped by
//! bottleneck instead (`rows.rs`): the same arithmetic, work per nonzero of
//! a row rather than per slot, and a pass over a link's list only when a
//! slot sits in the wrong row.
//!
//! When every demand is in the matrix (below), a solve starts where the
//! last one's freeze order stops holding (`freeze_log`, `resume.rs`) and
//! goes on along that order as long as it still holds (each freeze the
//! smallest share among the next few links of the order, its (level,
//! link id) never below the last one's, as the heap takes them, no link
//! left over its capacity), which ~95 % of FB2010's solves do; the others
//! go back and fill with the heap. New capacities on host links (a
//! class's solver gets them from the classes before it) are resumed
//! across as well.
//!
//! On a fabric whose ToR links never bind, the uncapped demands between
//! two hosts are kept as a host × host matrix ([`super::pair_matrix`])
//! instead of list entries, and freezing a NIC charges a whole row of it in
//! one pass ([`LinkLevels::with_host_pairs`]).
//!
//! A change that reaches only links nothing else binds (a circuit coming
//! up or going down, a flow leaving it: the slots of one OCS port, whose
//! NICs are far from full) is solved on those links alone (`local.rs`),
//! when the result is provably the max-min fair allocation; otherwise the
//! solve fills in full.
//!
//! Links that can never bind (a ToR uplink at least as fast as its rack's
//! NICs, [`super::links::LinkMap::binding`]) stay in the paths so that their
//! load is known (the utilization series read it), but take no part in the
//! filling.

mod caps;
mod fit;
mod local;
mod resume;
mod rows;

use super::freeze_log::FreezeLog;
use super::links::HostPairs;
use super::links::{LinkId, Links};
use super::maxmin::{share, share_key, top_link, Demand, ShareHeap};
use super::pair_matrix::PairMatrix;
use caps::CapOrder;
use fit::CapSums;
use rows::Rows;
use std::cmp::Reverse;

/// What sets a slot's rate after a solve.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bottleneck {
    /// The level of this link.
    Link(LinkId),
    /// Its own cap.
    Cap,
    /// It has no demand (it does not move).
    Idle,
}

pub use ocslab_core::outcome::SolveStats;

/// What a solve changed: slots in slot order, links in id order.
#[derive(Clone, Debug, Default)]
pub struct Changes {
    /// Slots whose demand or bottleneck changed (a slot whose bottleneck
    /// stayed put only moved if its link's level did).
    pub slots: Vec<u32>,
    /// Links whose level changed.
    pub links: Vec<LinkId>,
}

/// A slot as the list of one of its binding links holds it: everything a
/// freeze needs, so that a link's list is read in order and the slot's own
/// record is not visited.
#[derive(Clone, Copy, Debug)]
struct Entry {
    slot: u32,
    weight: u32,
    links: Links,
    capped: bool,
    /// Whether this link was the slot's bottleneck at the last solve.
    here: bool,
}

impl Entry {
    /// The entry of `slot` with demand `d`, not (yet) bottlenecked here.
    fn of(slot: u32, d: Demand) -> Entry {
        Entry {
            slot,
            weight: d.weight,
            links: d.links,
            capped: d.cap.is_finite(),
            here: false,
        }
    }
}

/// Max-min fair rates of a changing set of demands, one per *slot* (a
/// bundle of identical flows), on fixed link capacities. Change demands with
/// [`LinkLevels::set`], then call [`LinkLevels::solve`]; read a slot's rate
/// with [`LinkLevels::rate`], its bottleneck with [`LinkLevels::bottleneck`],
/// a link's level with [`LinkLevels::level`] and its load with [`LinkLevels::load`].
#[derive(Clone, Debug, Default)]
pub struct LinkLevels {
    capacity: Vec<f64>,
    binds: Vec<bool>,
    /// One past the last link that binds: the links after it never have
    /// a level, a residual or a count that a solve reads.
    bind_end: usize,
    demand: Vec<Option<Demand>>,
    /// Slots crossing each binding link, in no particular order.
    on_link: Vec<Vec<Entry>>,
    /// Where each slot sits in the list of each of its links (by path position).
    at: Vec<[u32; 4]>,
    /// Capped slots by (cap, slot).
    capped: CapOrder,
    /// Whether every demand is capped and the caps fit, per link in whole
    /// bits per second ([`LinkLevels::solve_at_caps`]).
    cap_sums: CapSums,
    /// Whether solves may take that short way (always, but in tests that
    /// compare with fillings).
    at_caps: bool,
    /// Σ weight of the slots on each link.
    weight: Vec<f64>,
    /// The slots between two hosts, on a fabric whose ToR links never bind.
    pairs: Option<PairMatrix>,
    /// The order in which the last solve froze the matrix's links, for the
    /// next solve to resume from ([`super::freeze_log`]).
    log: FreezeLog,
    /// Whether solves resume from the log (always, but in tests that
    /// compare with solves from scratch).
    resume: bool,
    /// Slots with a demand that the matrix does not hold.
    listed: usize,
    /// Scratch: the freezes a resumed solve runs again.
    again: Vec<(LinkId, f64)>,
    /// The slots by bottleneck ([`rows`]), and whether solves may freeze
    /// from them (always, but in tests that compare with fillings over slots).
    rows: Rows,
    by_rows: bool,
    /// Scratch of a freeze over slots: the weight frozen on each other
    /// link, and the links with some.
    taken: Vec<u64>,
    touched: Vec<LinkId>,
    /// Scratch: the last solve's freezes from the resume point on, which a
    /// resumed solve tries to follow, and the links it picks from.
    suffix: Vec<(LinkId, f64)>,
    candidates: Vec<LinkId>,
    bottleneck: Vec<Bottleneck>,
    /// Per link: the rate of the slots bottlenecked there (infinite if none).
    level: Vec<f64>,
    /// Per link: Σ rate × weight of the slots crossing it.
    load: Vec<f64>,
    /// Slots set since the last solve.
    pending: Vec<u32>,
    is_pending: Vec<bool>,
    /// The demands the pending slots had at the last solve, each with its
    /// slot, in `pending`'s order (slots that had none are left out).
    solved: Vec<(u32, Demand)>,
    /// Whether the last solve froze no link: every slot is at its cap.
    all_capped: bool,
    /// Whether a link's capacity changed since the last solve.
    recapacitated: bool,
    // Scratch space of a solve.
    residual: Vec<f64>,
    /// Unfrozen flows per link (whole numbers, as f64 for the matrix passes).
    count: Vec<f64>,
    share: Vec<f64>,
    /// Whether a link's share is older than its residual and count: kept
    /// only while the heap is filling (`filling`), as only its lazy entries
    /// need it (a filling computes every share afresh when it starts).
    stale: Vec<bool>,
    filling: bool,
    new_level: Vec<f64>,
    /// The epoch (solve) in which a capped slot froze.
    frozen: Vec<u32>,
    /// The epoch in which a link froze its slots: a slot crossing a link
    /// frozen in this epoch is frozen.
    link_frozen: Vec<u32>,
    epoch: u32,
    heap: ShareHeap,
    /// The links a filling starts with, by their starting shares (as
    /// `share_key`), and the first not yet taken: a link whose share
    /// rose before its turn moves to `heap` at its current share.
    by_share: Vec<(u64, LinkId)>,
    by_share_next: usize,
    /// The links that hold no row, by their shares at the start of a
    /// filling from the rows (as `share_key`), and the first that has not
    /// joined `heap`.
    rowless: Vec<(u64, LinkId)>,
    rowless_next: usize,
    /// Whether each link is in `rowless`.
    queued: Vec<bool>,
    /// Scratch of [`LinkLevels::order_rowless`]: the links whose key
    /// changed or that joined, and the merged order.
    rekeyed: Vec<(u64, LinkId)>,
    merged: Vec<(u64, LinkId)>,
    changes: Changes,
    stats: SolveStats,
    /// Whether solves may stay on the links the changes reach
    /// ([`local`]), and their scratch.
    solves_locally: bool,
    local: local::Local,
}

impl LinkLevels {
    /// How far ahead in the last solve's order [`LinkLevels::follow_last_order`]
    /// looks for the next link to freeze. On FB2010 the new order, step by
    /// step, took the first of the links left in the old one in 52 % of
    /// the solves, never more than the second in 89 %, the fourth in 94 %
    /// (2, 4 and 8 time the same).
    const FOLLOW_AHEAD: usize = 4;

    /// No demands yet, on links of `capacity` (bytes per second), of which
    /// those with `binds[l] == false` never limit a rate.
    pub fn new(capacity: &[f64], binds: &[bool]) -> LinkLevels {
        let n = capacity.len();
        let binds: Vec<bool> = (0..n).map(|l| binds.get(l).copied().unwrap_or(true)).collect();
        LinkLevels {
            capacity: capacity.to_vec(),
            cap_sums: CapSums::new(capacity, &binds),
            at_caps: true,
            bind_end: binds.iter().rposition(|&b| b).map_or(0, |l| l + 1),
            binds,
            on_link: vec![Vec::new(); n],
            weight: vec![0.0; n],
            level: vec![f64::INFINITY; n],
            load: vec![0.0; n],
            residual: capacity.to_vec(),
            count: vec![0.0; n],
            share: vec![0.0; n],
            stale: vec![false; n],
            new_level: vec![f64::INFINITY; n],
            link_frozen: vec![0; n],
            rows: Rows::new(n),
            by_rows: true,
            taken: vec![0; n],
            queued: vec![false; n],
            ..LinkLevels::default()
        }
    }

    /// Like [`LinkLevels::new`], on a fabric whose ToR links never bind
    /// (all in `binds` but the host links): the uncapped demands from one
    /// host's NIC up to another's NIC down are kept as a host × host matrix
    /// ([`super::pair_matrix`]), the rest in per-link lists.
    pub fn with_host_pairs(capacity: &[f64], binds: &[bool], layout: HostPairs) -> LinkLevels {
        LinkLevels {
            pairs: Some(PairMatrix::new(layout)),
            log: FreezeLog::new(layout.hosts as usize),
            resume: true,
            ..LinkLevels::new(capacity, binds)
        }
    }

    /// With `every = Some(k)`: solves resume from the last one's order,
    /// with a snapshot every `k` freezes; `None`: every solve starts from
    /// scratch.
    #[cfg(test)]
    fn resuming(mut self, every: Option<usize>) -> LinkLevels {
        if let (Some(k), Some(pairs)) = (every, self.pairs.as_ref()) {
            self.log = FreezeLog::with_snapshots_every(pairs.layout().hosts as usize, k);
        }
        self.resume = every.is_some();
        self
    }

    /// Lets solves stay on the links the changes reach when that gives
    /// the max-min fair rates (`levels/local.rs`); off by default, as it updates
    /// loads by difference, and a class's solver feeds its loads to the
    /// next class.
    pub fn solving_locally(mut self) -> LinkLevels {
        self.solves_locally = true;
        self
    }

    /// With `false`, no solve takes the short way of caps that fit
    /// ([`LinkLevels::solve_at_caps`]).
    #[cfg(test)]
    fn solving_at_caps(mut self, at_caps: bool) -> LinkLevels {
        self.at_caps = at_caps;
        self
    }

    /// With `false`, every solve fills over slots, never from the rows.
    #[cfg(test)]
    fn solving_by_rows(mut self, by_rows: bool) -> LinkLevels {
        self.by_rows = by_rows;
        self
    }

    /// The host pair of demand `d`, if the matrix holds it: uncapped, and
    /// bound only by a NIC up and a NIC down.
    fn pair_of(&self, d: &Demand) -> Option<(u32, u32)> {
        let pairs = self.pairs.as_ref()?;
        let links = d.links.as_slice();
        let binding = links.iter().filter(|&&l| self.binds[l as usize]).count();
        (d.cap == f64::INFINITY && binding == 2)
            .then(|| pairs.layout().pair_of(links))
            .flatten()
            .filter(|&(i, j)| self.binds[i as usize] && self.binds[(pairs.layout().hosts + j) as usize])
    }

    /// Slot `slot` now has `demand` (`None`: it does not move). Rates
    /// change at the next [`LinkLevels::solve`].
    pub fn set(&mut self, slot: usize, demand: Option<Demand>) {
        if slot >= self.demand.len() {
            let n = slot + 1;
            self.demand.resize(n, None);
            self.at.resize(n, [0; 4]);
            self.bottleneck.resize(n, Bottleneck::Idle);
            self.is_pending.resize(n, false);
            self.frozen.resize(n, 0);
        }
        if self.demand[slot] == demand {
            return;
        }
        if !self.is_pending[slot] {
            self.is_pending[slot] = true;
            self.pending.push(slot as u32);
            self.solved.extend(self.demand[slot].map(|d| (slot as u32, d)));
        }
        match (self.demand[slot], demand) {
            (Some(old), Some(new)) if self.reweighs(slot, old, new) || self.recaps(slot, old, new) => {}
            (old, new) => {
                if let Some(old) = old {
                    self.detach(slot, old);
                }
                if let Some(new) = new {
                    self.attach(slot, new);
                }
            }
        }
        self.demand[slot] = demand;
    }

    /// Slot `slot`, in the matrix with demand `old`, has as many flows as
    /// `new` says on the same route (flows of its bundle left or joined):
    /// its weight changes in place, and its NICs are touched as gaining
    /// flows only if it gained some, which lets the next solve resume later
    /// ([`FreezeLog::resume_point`]). Returns false, changing nothing, if
    /// `new` differs from `old` in more than its weight or the slot is not
    /// in the matrix.
    fn reweighs(&mut self, slot: usize, old: Demand, new: Demand) -> bool {
        let Some(pairs) = self.pairs.as_mut() else {
            return false;
        };
        if old.links != new.links || old.cap.to_bits() != new.cap.to_bits() || !pairs.holds(slot) {
            return false;
        }
        let (i, j) = pairs.reweigh(slot, old.weight, new.weight);
        let grew = new.weight > old.weight;
        self.log.touch(i, grew);
        self.log.touch(pairs.layout().hosts + j, grew);
        // Whole numbers: the same sums as taking off `old` and adding `new`.
        let delta = f64::from(new.weight) - f64::from(old.weight);
        for &l in new.links.as_slice() {
            self.weight[l as usize] += delta;
        }
        true
    }

    /// Slot `slot`, capped at `old`, is capped at `new` on the same route
    /// with the same weight (Varys and Aalo change caps at every call):
    /// its list entries stay as they are (they record that it is capped,
    /// not the cap) and only its place among the capped slots moves.
    /// Returns false, changing nothing, if `new` differs from `old` in more
    /// than a finite cap.
    fn recaps(&mut self, slot: usize, old: Demand, new: Demand) -> bool {
        if old.links != new.links || old.weight != new.weight || !old.cap.is_finite() || !new.cap.is_finite()
        {
            return false;
        }
        self.capped.drop_one();
        self.capped.insert(new.cap.max(0.0), slot as u32);
        self.cap_sums.recap(&old, &new);
        true
    }

    fn attach(&mut self, slot: usize, d: Demand) {
        self.cap_sums.add(&d);
        let entry = Entry::of(slot as u32, d);
        let pair = self.pair_of(&d);
        match (pair, self.pairs.as_mut()) {
            (Some((i, j)), Some(pairs)) => {
                pairs.add(slot, (i, j), d.weight);
                self.log.touch(i, true);
                self.log.touch(pairs.layout().hosts + j, true);
            }
            _ => self.listed += 1,
        }
        for (k, &l) in d.links.as_slice().iter().enumerate() {
            let li = l as usize;
            self.weight[li] += f64::from(d.weight);
            if self.binds[li] && pair.is_none() {
                self.at[slot][k] = self.on_link[li].len() as u32;
                self.on_link[li].push(entry);
            }
        }
        if d.cap.is_finite() {
            self.capped.insert(d.cap.max(0.0), slot as u32);
        }
        if pair.is_none() {
            let rowed = self.pairs.is_none() && !d.cap.is_finite() && d.weight > 0;
            match rowed.then(|| self.first_guess(&d)).flatten() {
                Some(k) => self.rows.add(slot, k, d.links.as_slice(), d.weight),
                None => self.rows.unplaced(true),
            }
        }
    }

    /// The row a slot with demand `d` joins until a solve says otherwise:
    /// its binding link of lowest level at the last solve, or, where none
    /// had a level, of lowest capacity per flow (`None`: it crosses no
    /// binding link).
    fn first_guess(&self, d: &Demand) -> Option<LinkId> {
        let key = |l: LinkId| {
            let l = l as usize;
            if self.level[l].is_finite() {
                (0, self.level[l])
            } else {
                (1, self.capacity[l] / self.weight[l].max(1.0))
            }
        };
        d.links
            .as_slice()
            .iter()
            .copied()
            .filter(|&l| self.binds[l as usize])
            .min_by(|&a, &b| {
                key(a)
                    .partial_cmp(&key(b))
                    .unwrap_or(std::cmp::Ordering::Equal)
                    .then(a.cmp(&b))
            })
    }

    fn detach(&mut self, slot: usize, d: Demand) {
        self.cap_sums.remove(&d);
        let paired = match self.pairs.as_mut() {
            Some(pairs) if pairs.holds(slot) => {
                let (i, j) = pairs.remove(slot, d.weight);
                self.log.touch(i, false);
                self.log.touch(pairs.layout().hosts + j, false);
                true
            }
            _ => {
                self.listed -= 1;
                if self.rows.remove(slot, d.links.as_slice(), d.weight).is_none() {
                    self.rows.unplaced(false);
                }
                false
            }
        };
        for (k, &l) in d.links.as_slice().iter().enumerate() {
            let li = l as usize;
            self.weight[li] -= f64::from(d.weight);
            if !self.binds[li] || paired {
                continue;
            }
            let i = self.at[slot][k] as usize;
            let list = &mut self.on_link[li];
            list.swap_remove(i);
            if let Some(moved) = list.get(i) {
                // The slot that took its place: find which of its links this is.
                if let Some(km) = moved.links.as_slice().iter().position(|&x| x == l) {
                    self.at[moved.slot as usize][km] = i as u32;
                }
            }
        }
        if d.cap.is_finite() {
            self.capped.drop_one();
        }
    }

    /// Link `link` now has `capacity` (bytes per second; a link that never
    /// binds still never limits a rate). Rates change at the next
    /// [`LinkLevels::solve`]. The next solve resumes the last one's order
    /// across a new capacity on a host link (`FreezeLog::recapacitate`),
    /// which a class's solver sees at most events (the classes before it
    /// left more or less of its links); a new capacity on any other link
    /// starts it from scratch.
    pub fn set_capacity(&mut self, link: LinkId, capacity: f64) {
        let l = link as usize;
        if self.capacity[l].to_bits() != capacity.to_bits() {
            let lowered = capacity < self.capacity[l];
            self.capacity[l] = capacity;
            self.cap_sums.set_capacity(link, capacity, self.binds[l]);
            if !(self.pairs.is_some() && self.log.recapacitate(link, lowered)) {
                self.log.invalidate();
            }
            self.all_capped = false;
            self.recapacitated = true;
        }
    }

    /// The capacity of `link`.
    pub fn capacity(&self, link: LinkId) -> f64 {
        self.capacity[link as usize]
    }

    /// Whether some slot crosses `link`.
    pub fn in_use(&self, link: LinkId) -> bool {
        self.weight[link as usize] > 0.0
    }

    /// The per-flow rate of `slot` as of the last solve (0 if it does not move).
    pub fn rate(&self, slot: usize) -> f64 {
        match self.bottleneck.get(slot) {
            Some(Bottleneck::Link(l)) => self.level[*l as usize],
            Some(Bottleneck::Cap) => self.demand[slot].map_or(0.0, |d| d.cap.max(0.0)),
            _ => 0.0,
        }
    }

    /// What set the rate of `slot` at the last solve.
    pub fn bottleneck(&self, slot: usize) -> Bottleneck {
        self.bottleneck.get(slot).copied().unwrap_or(Bottleneck::Idle)
    }

    /// The rate of the slots bottlenecked at `link` (infinite if none).
    pub fn level(&self, link: LinkId) -> f64 {
        self.level[link as usize]
    }

    /// Σ rate × weight of the slots crossing `link` as of the last solve.
    pub fn load(&self, link: LinkId) -> f64 {
        self.load[link as usize]
    }

    /// One past the last link that can bind: no slot is ever bottlenecked
    /// at a link after it.
    pub fn bind_end(&self) -> usize {
        self.bind_end
    }

    /// The loads of all links, by id.
    pub fn loads(&self) -> &[f64] {
        &self.load
    }

    /// Solves so far.
    pub fn stats(&self) -> SolveStats {
        self.stats
    }

    /// Recomputes the allocation after the changes since the last call and
    /// writes what changed to `changes` (cleared first).
    pub fn solve(&mut self, changes: &mut Changes) {
        std::mem::swap(&mut self.changes, changes);
        self.solve_into();
        std::mem::swap(&mut self.changes, changes);
    }

    fn solve_into(&mut self) {
        self.changes.slots.clear();
        self.changes.links.clear();
        let recapacitated = std::mem::take(&mut self.recapacitated);
        if self.pending.is_empty() && !recapacitated {
            return;
        }
        if self.all_capped && self.pending.iter().all(|&s| self.demand[s as usize].is_none()) {
            self.solve_departures_at_caps();
            return;
        }
        if self.at_caps && self.all_capped && !recapacitated && self.cap_sums.fit() {
            self.solve_at_caps();
            return;
        }
        if self.solves_locally && !recapacitated && self.solve_locally() {
            return;
        }
        self.begin_filling();
        // Every demand in the matrix: the last solve's order is reused, up
        // to the resume point and then, if it still holds, to the end.
        if self.logging() && self.resume && self.log.is_valid() {
            let from = self.resume_last_order();
            if self.follow_last_order() {
                self.stats.orders_followed += 1;
            } else {
                self.stats.orders_left += 1;
                self.begin_filling();
                self.restore(from);
                self.fill();
            }
        } else {
            self.log.restart_at(0);
            if self.by_rows && self.pairs.is_none() && self.rows.all_placed() {
                self.fill_rows();
            } else {
                self.fill();
                self.follow_into_rows();
            }
        }
        let logged = self.logging();
        if logged {
            self.stats.freezes += self.log.freezes() as u64;
        }
        self.log.end(logged);
        self.settle_pairs();
        for &s in &self.pending {
            let s = s as usize;
            self.is_pending[s] = false;
            match self.pairs.as_ref().and_then(|p| p.bottleneck(s)) {
                Some(l) => self.bottleneck[s] = Bottleneck::Link(l),
                None if self.demand[s].is_none() => self.bottleneck[s] = Bottleneck::Idle,
                None => {}
            }
            self.changes.slots.push(s as u32);
        }
        self.pending.clear();
        self.solved.clear();
        self.changes.slots.sort_unstable();
        self.changes.slots.dedup();
        // Each list entry says whether its link is the slot's bottleneck
        // (none to update when the matrix holds every demand).
        let lists = if self.logging() {
            0
        } else {
            self.changes.slots.len()
        };
        for i in 0..lists {
            let s = self.changes.slots[i] as usize;
            let Some(d) = self.demand[s] else { continue };
            if self.pairs.as_ref().is_some_and(|p| p.holds(s)) {
                continue;
            }
            for (k, &l) in d.links.as_slice().iter().enumerate() {
                if self.binds[l as usize] {
                    let here = self.bottleneck[s] == Bottleneck::Link(l);
                    self.on_link[l as usize][self.at[s][k] as usize].here = here;
                }
            }
        }
        let mut all_capped = true;
        let links = &mut self.changes.links;
        let end = self.bind_end;
        for (l, (level, &new)) in self.level[..end].iter_mut().zip(&self.new_level).enumerate() {
            all_capped &= new.is_infinite();
            if level.to_bits() != new.to_bits() {
                *level = new;
                links.push(l as LinkId);
            }
        }
        self.all_capped = all_capped;
        self.stats.solves += 1;
        self.stats.bottlenecks_moved += self.changes.slots.len() as u64;
    }

    /// A filling starts: a new epoch, every link at its capacity with all
    /// its flows unfrozen, no level, no load.
    fn begin_filling(&mut self) {
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            // Wrapped: no stamp may look like this solve's.
            self.frozen.iter_mut().for_each(|f| *f = 0);
            self.link_frozen.iter_mut().for_each(|f| *f = 0);
            self.epoch = 1;
        }
        let end = self.bind_end;
        self.residual[..end].copy_from_slice(&self.capacity[..end]);
        self.count[..end].copy_from_slice(&self.weight[..end]);
        self.load.iter_mut().for_each(|l| *l = 0.0);
        self.new_level[..end].iter_mut().for_each(|l| *l = f64::INFINITY);
        self.heap.clear();
        if let Some(pairs) = self.pairs.as_mut() {
            pairs.begin();
        }
    }

    /// Progressive filling from the current state: the link of smallest
    /// share, or the smallest unmet cap, freezes, until no flow is left.
    fn fill(&mut self) {
        self.order_by_share();
        // Taken out for the loop (freezing never changes it).
        let mut capped = std::mem::take(&mut self.capped);
        let mut caps = capped
            .sorted(|bits, s| capped_at(&self.demand, bits, s))
            .iter()
            .peekable();
        self.filling = true;
        loop {
            // The bottleneck link: smallest share, then smallest id. A cap
            // equal to that share is met first: its slot is held by its
            // cap, and the link's level is left to the slots that need it.
            let best = self.next_link_by_share();
            // Passed: caps met already and stale entries.
            while caps
                .next_if(|&&(bits, s)| {
                    self.frozen[s as usize] == self.epoch || !capped_at(&self.demand, bits, s)
                })
                .is_some()
            {}
            let cap = caps.peek().map(|&&(bits, s)| (f64::from_bits(bits), s));
            match (best, cap) {
                (None, None) => break,
                (Some((share, link)), c) if c.is_none_or(|(cv, _)| share < cv) => {
                    self.freeze_link(link, share)
                }
                (_, Some((cv, s))) => {
                    if let Some(d) = self.demand[s as usize] {
                        if self.bottleneck[s as usize] != Bottleneck::Cap {
                            self.bottleneck[s as usize] = Bottleneck::Cap;
                            self.changes.slots.push(s);
                        }
                        self.freeze_at_cap(Entry::of(s, d), cv);
                    }
                }
                (Some(_), None) => unreachable!("the guard above takes every link when there is no cap"),
            }
        }
        self.filling = false;
        self.capped = capped;
    }

    /// Every binding link with flows, by its share (then id), into
    /// `by_share`: one sort, where a heap would pay a sift for each link
    /// it gives up, and most links give up before their turn comes (their
    /// flows froze elsewhere).
    fn order_by_share(&mut self) {
        let mut order = std::mem::take(&mut self.by_share);
        order.clear();
        self.starting_shares(|_, _| true, |key| order.push(key));
        order.sort_unstable();
        self.by_share = order;
        self.by_share_next = 0;
    }

    /// The link of smallest current share (then lowest id) that still has
    /// flows, with that share, from `by_share` and the heap together. The
    /// link stays where it is until a call finds it without flows (frozen),
    /// as the top of a heap would. Shares only rise, so a link in
    /// `by_share` whose key is still its share comes before every link
    /// after it there; one whose share rose moves to the heap.
    fn next_link_by_share(&mut self) -> Option<(f64, LinkId)> {
        loop {
            let top = self.next_link();
            let Some(&key) = self.by_share.get(self.by_share_next) else {
                return top;
            };
            if top.is_some_and(|(share, link)| share_key(share, link) < key) {
                return top;
            }
            let l = key.1 as usize;
            if self.count[l] > 0.0 {
                self.refresh_share(l);
                let now = share_key(self.share[l], key.1);
                if now == key {
                    return Some((self.share[l], key.1));
                }
                self.heap.push(Reverse(now));
            }
            self.by_share_next += 1;
        }
    }

    /// The binding links with flows that `of` takes, in the heap, by their
    /// shares; built in one pass (heapify), not pushed link by link. Every
    /// binding link with flows has its share brought up to date.
    fn build_heap_of(&mut self, of: impl Fn(&LinkLevels, LinkId) -> bool) {
        let mut heap = std::mem::take(&mut self.heap).into_vec();
        self.starting_shares(of, |key| heap.push(Reverse(key)));
        self.heap = ShareHeap::from(heap);
    }

    /// Brings every binding link with flows' share up to date, as a
    /// filling starts, and gives `push` the key (`share_key`) of each that
    /// `of` takes, in link order.
    fn starting_shares(
        &mut self,
        of: impl Fn(&LinkLevels, LinkId) -> bool,
        mut push: impl FnMut((u64, LinkId)),
    ) {
        for l in 0..self.bind_end {
            if self.binds[l] && self.count[l] > 0.0 {
                self.share[l] = share(self.residual[l], self.count[l]);
                self.stale[l] = false;
                if of(self, l as LinkId) {
                    push(share_key(self.share[l], l as LinkId));
                }
            }
        }
    }

    /// Brings link `l`'s share up to date if freezing changed it since.
    fn refresh_share(&mut self, l: usize) {
        if self.stale[l] {
            self.share[l] = share(self.residual[l], self.count[l]);
            self.stale[l] = false;
        }
    }

    /// The link of smallest share (then lowest id) that still has flows,
    /// with that share.
    fn next_link(&mut self) -> Option<(f64, LinkId)> {
        let (count, shares, stale, residual) =
            (&self.count, &mut self.share, &mut self.stale, &self.residual);
        top_link(&mut self.heap, |l| {
            if stale[l] && count[l] > 0.0 {
                shares[l] = share(residual[l], count[l]);
                stale[l] = false;
            }
            (count[l] > 0.0).then(|| shares[l])
        })
    }

    /// After the filling, the matrix's part: the pairs whose bottleneck
    /// moved are reported (and their slots' bottlenecks set), and the load
    /// of the host links, whose residual is now what nothing took, and of
    /// the ToR links the pairs cross, is completed.
    fn settle_pairs(&mut self) {
        let Some(pairs) = self.pairs.as_mut() else { return };
        let (bottleneck, changed) = (&mut self.bottleneck, &mut self.changes.slots);
        pairs.moved(|s, l| {
            if bottleneck[s as usize] != Bottleneck::Link(l) {
                bottleneck[s as usize] = Bottleneck::Link(l);
                changed.push(s);
            }
        });
        pairs.settle_loads(&self.capacity, &self.residual, &mut self.load);
    }

    /// Link `link` is the bottleneck at `share`: every slot on it that no
    /// earlier link or cap froze freezes at that share.
    fn freeze_link(&mut self, link: LinkId, share: f64) {
        let li = link as usize;
        if self.logging() {
            self.log
                .record(link, share, &self.residual, &self.count, &self.weight);
        }
        self.new_level[li] = share;
        self.link_frozen[li] = self.epoch;
        if let Some(pairs) = self.pairs.as_mut() {
            let other = pairs.freeze(link, share, &mut self.residual, &mut self.count);
            if let Some(other) = other.filter(|_| self.filling) {
                self.stale[other].fill(true);
            }
        }
        let list = std::mem::take(&mut self.on_link[li]);
        // What the slots frozen here add to this link, summed apart (every
        // entry would otherwise wait on the last one's store).
        let mut weight_here = 0u64;
        for e in &list {
            let frozen_before = e
                .links
                .as_slice()
                .iter()
                .any(|&k| k != link && self.link_frozen[k as usize] == self.epoch)
                || (e.capped && self.frozen[e.slot as usize] == self.epoch);
            if !frozen_before {
                if !e.here {
                    self.bottleneck[e.slot as usize] = Bottleneck::Link(link);
                    self.changes.slots.push(e.slot);
                }
                weight_here += u64::from(e.weight);
                self.take(*e, link);
            }
        }
        self.on_link[li] = list;
        self.charge_taken(share);
        // What is left of its capacity (for the loads of the matrix's links).
        self.residual[li] -= share * self.count[li];
        self.count[li] = 0.0;
        self.load[li] += share * weight_here as f64;
    }

    /// The slot of `e` freezes: its weight is added to what each of its
    /// links but `by` (the link freezing it, which sums its own load) is
    /// charged at [`LinkLevels::charge_taken`].
    fn take(&mut self, e: Entry, by: LinkId) {
        if e.capped {
            self.frozen[e.slot as usize] = self.epoch;
        }
        self.stats.demands_filled += 1;
        for &l in e.links.as_slice() {
            if l == by {
                continue;
            }
            if self.taken[l as usize] == 0 {
                self.touched.push(l);
            }
            self.taken[l as usize] += u64::from(e.weight);
        }
    }

    /// The slot of `e` freezes at its cap `rate`, charging each of its
    /// links what [`LinkLevels::take`] and [`LinkLevels::charge_taken`]
    /// would for it alone.
    fn freeze_at_cap(&mut self, e: Entry, rate: f64) {
        self.frozen[e.slot as usize] = self.epoch;
        self.stats.demands_filled += 1;
        let w = f64::from(e.weight);
        let total = rate * w;
        for &l in e.links.as_slice() {
            let li = l as usize;
            self.load[li] += total;
            if self.binds[li] {
                self.residual[li] -= total;
                self.count[li] = (self.count[li] - w).max(0.0);
                self.stale[li] = true;
            }
        }
    }

    /// The slots taken since the last call froze at `rate`: each link
    /// they cross is charged `rate` times the weight taken on it, one
    /// product per link as a freeze from the rows charges it.
    fn charge_taken(&mut self, rate: f64) {
        for &l in &self.touched {
            let li = l as usize;
            let w = std::mem::take(&mut self.taken[li]) as f64;
            let total = rate * w;
            self.load[li] += total;
            if self.binds[li] {
                // Its share is recomputed when it reaches the top of the heap.
                self.residual[li] -= total;
                self.count[li] = (self.count[li] - w).max(0.0);
                self.stale[li] = true;
            }
        }
        self.touched.clear();
    }
}

/// Whether slot `s`'s demand is capped at the cap whose f64 bits are
/// `bits` (a [`CapOrder`] entry that is not stale).
fn capped_at(demand: &[Option<Demand>], bits: u64, s: u32) -> bool {
    demand[s as usize].is_some_and(|d| d.cap.is_finite() && d.cap.max(0.0).to_bits() == bits)
}

#[cfg(test)]
mod tests;
