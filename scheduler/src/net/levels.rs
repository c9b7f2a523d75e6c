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
//! wait in a heap by share, updated lazily (freezing only raises other
//! links' shares, so a stale entry is too small: the share is recomputed,
//! and the entry pushed again, only when it reaches the top). Ties go to the lower link id, so results never depend
//! on iteration order; they equal [`super::maxmin::max_min`]'s up to float
//! rounding (the property test below).
//!
//! When every demand is in the matrix (below), a solve starts where the
//! last one's freeze order stops holding (`freeze_log`) and
//! goes on along that order as long as it still holds (each freeze the
//! smallest share among the next few links of the order, levels never
//! falling, no link left over its capacity), which ~95 % of FB2010's
//! solves do; the others go back and fill with the heap.
//!
//! On a fabric whose ToR links never bind, the uncapped demands between
//! two hosts are kept as a host × host matrix ([`super::pair_matrix`])
//! instead of list entries, and freezing a NIC charges a whole row of it in
//! one pass ([`LinkLevels::with_host_pairs`]).
//!
//! Links that can never bind (a ToR uplink at least as fast as its rack's
//! NICs, [`super::links::LinkMap::binding`]) stay in the paths so that their
//! load is known (the utilization series read it), but take no part in the
//! filling.

use super::freeze_log::FreezeLog;
use super::links::HostPairs;
use super::links::{LinkId, Links};
use super::maxmin::{share, share_key, top_link, Demand, ShareHeap};
use super::pair_matrix::PairMatrix;
use std::cmp::Reverse;
use std::collections::BTreeSet;

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

/// How the solves went, for benchmarks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SolveStats {
    /// Solves.
    pub solves: u64,
    /// Demands water-filled, summed over all solves.
    pub demands_filled: u64,
    /// Slots reported changed (demand set since the last solve, or a
    /// bottleneck that moved), summed over all solves.
    pub bottlenecks_moved: u64,
    /// Links frozen (each solve's freezes, summed), when every demand was
    /// in the matrix.
    pub freezes: u64,
    /// Of those, the freezes a solve repeated from the last one's order
    /// instead of finding them (`net::freeze_log`).
    pub freezes_repeated: u64,
    /// Solves that only took departed slots off their links, every slot
    /// being at its cap.
    pub departures_at_caps: u64,
    /// Resumed solves that froze the rest of the links by following the
    /// last one's order (`LinkLevels::follow_last_order`), and those that
    /// tried and went back to the heap.
    pub orders_followed: u64,
    /// See `orders_followed`.
    pub orders_left: u64,
    /// Under strict priority between classes ([`super::class_levels`]):
    /// classes filled again, summed over all solves.
    pub classes_filled: u64,
    /// Classes whose last filling was kept (nothing on their links
    /// changed), summed over all solves.
    pub classes_kept: u64,
}

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
    /// Capped slots by (cap as f64 bits, slot).
    capped: BTreeSet<(u64, u32)>,
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
    /// The demand each pending slot had at the last solve, in `pending`'s order.
    solved: Vec<Option<Demand>>,
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
    changes: Changes,
    stats: SolveStats,
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
            self.solved.push(self.demand[slot]);
        }
        match (self.demand[slot], demand) {
            (Some(old), Some(new)) if self.reweighs(slot, old, new) => {}
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

    fn attach(&mut self, slot: usize, d: Demand) {
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
            self.capped.insert((d.cap.max(0.0).to_bits(), slot as u32));
        }
    }

    fn detach(&mut self, slot: usize, d: Demand) {
        let paired = match self.pairs.as_mut() {
            Some(pairs) if pairs.holds(slot) => {
                let (i, j) = pairs.remove(slot, d.weight);
                self.log.touch(i, false);
                self.log.touch(pairs.layout().hosts + j, false);
                true
            }
            _ => {
                self.listed -= 1;
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
            self.capped.remove(&(d.cap.max(0.0).to_bits(), slot as u32));
        }
    }

    /// Link `link` now has `capacity` (bytes per second; a link that never
    /// binds still never limits a rate). Rates change at the next
    /// [`LinkLevels::solve`], which starts from scratch: the last solve's
    /// order was found with the old capacity.
    pub fn set_capacity(&mut self, link: LinkId, capacity: f64) {
        let l = link as usize;
        if self.capacity[l].to_bits() != capacity.to_bits() {
            self.capacity[l] = capacity;
            self.log.invalidate();
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
            self.fill();
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
        // Each list entry says whether its link is the slot's bottleneck.
        for i in 0..self.changes.slots.len() {
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
        // Built in one pass (heapify), not pushed link by link.
        let mut heap = std::mem::take(&mut self.heap).into_vec();
        for l in 0..self.bind_end {
            if self.binds[l] && self.count[l] > 0.0 {
                self.share[l] = share(self.residual[l], self.count[l]);
                self.stale[l] = false;
                heap.push(Reverse(share_key(self.share[l], l as LinkId)));
            }
        }
        self.heap = ShareHeap::from(heap);
        // Taken out for the loop (freezing never changes it).
        let capped = std::mem::take(&mut self.capped);
        let mut caps = capped.iter().peekable();
        self.filling = true;
        loop {
            // The bottleneck link: smallest share, then smallest id.
            let (count, shares, stale, residual) =
                (&self.count, &mut self.share, &mut self.stale, &self.residual);
            let best = top_link(&mut self.heap, |l| {
                if stale[l] && count[l] > 0.0 {
                    shares[l] = share(residual[l], count[l]);
                    stale[l] = false;
                }
                (count[l] > 0.0).then(|| shares[l])
            });
            while caps
                .next_if(|&&(_, s)| self.frozen[s as usize] == self.epoch)
                .is_some()
            {}
            let cap = caps.peek().map(|&&(bits, s)| (f64::from_bits(bits), s));
            match (best, cap) {
                (None, None) => break,
                (Some((share, link)), c) if c.is_none_or(|(cv, _)| share <= cv) => {
                    self.freeze_link(link, share)
                }
                (_, Some((cv, s))) => {
                    if let Some(d) = self.demand[s as usize] {
                        if self.bottleneck[s as usize] != Bottleneck::Cap {
                            self.bottleneck[s as usize] = Bottleneck::Cap;
                            self.changes.slots.push(s);
                        }
                        self.freeze(Entry::of(s, d), cv, LinkId::MAX);
                    }
                }
                (Some(_), None) => unreachable!("the guard above takes every link when there is no cap"),
            }
        }
        self.filling = false;
        self.capped = capped;
    }

    /// A solve after the last one left every slot at its cap and slots
    /// only left since (Varys and Aalo between coflow events: one flow
    /// leaves at a time): every slot stays at its cap, so the departed
    /// slots' loads are taken off their links and nothing else changes.
    /// Each link's share, wherever a filling would compare it with a cap, is
    /// at least what it was at the last solve (a residual no smaller,
    /// fewer flows), when it was above that cap; rounding is monotone, so
    /// this holds in floating point too. Loads differ from a filling's by
    /// rounding until the next full solve (they feed only the utilization
    /// series).
    fn solve_departures_at_caps(&mut self) {
        for (&s, before) in self.pending.iter().zip(&self.solved) {
            if let Some(d) = before {
                let total = d.cap.max(0.0) * u64::from(d.weight) as f64;
                for &l in d.links.as_slice() {
                    self.load[l as usize] = (self.load[l as usize] - total).max(0.0);
                }
            }
            self.is_pending[s as usize] = false;
            self.bottleneck[s as usize] = Bottleneck::Idle;
            self.changes.slots.push(s);
        }
        self.pending.clear();
        self.solved.clear();
        self.changes.slots.sort_unstable();
        self.stats.solves += 1;
        self.stats.departures_at_caps += 1;
        self.stats.bottlenecks_moved += self.changes.slots.len() as u64;
    }

    /// Brings the solver's state to where the last solve's order stops
    /// holding ([`FreezeLog`]), and keeps the rest of that order for
    /// [`LinkLevels::follow_last_order`]. Returns the freeze the state was
    /// restored at ([`LinkLevels::restore`]).
    fn resume_last_order(&mut self) -> usize {
        let Some(pairs) = self.pairs.as_ref() else {
            return 0;
        };
        let point = self
            .log
            .resume_point(&self.capacity, &self.weight, &self.binds, pairs);
        self.stats.freezes_repeated += point as u64;
        self.suffix.clear();
        self.suffix.extend_from_slice(self.log.order_from(point));
        self.again.clear();
        let from = self.log.snapshot_at_or_before(point).map_or(0, |(at, ..)| at);
        self.again
            .extend_from_slice(&self.log.order_before(point)[from..]);
        self.restore(from);
        from
    }

    /// From the snapshot the log took before freeze `from` (or from
    /// scratch at 0), whose links are marked frozen as they were, the
    /// freezes kept in `again` are run again.
    fn restore(&mut self, from: usize) {
        let Some(pairs) = self.pairs.as_mut() else { return };
        if let Some((at, residual, charged)) = self.log.snapshot_at_or_before(from) {
            debug_assert_eq!(at, from);
            let n = residual.len();
            self.residual[..n].copy_from_slice(residual);
            for ((c, w), ch) in self.count[..n].iter_mut().zip(&self.weight[..n]).zip(charged) {
                *c = w - ch;
            }
            for &(link, share) in self.log.order_before(at) {
                pairs.mark_frozen(link, share);
                self.new_level[link as usize] = share;
                self.link_frozen[link as usize] = self.epoch;
            }
        }
        self.log.restart_at(from);
        let again = std::mem::take(&mut self.again);
        for &(link, share) in &again {
            self.freeze_link(link, share);
        }
        self.again = again;
    }

    /// Finishes a resumed solve without the heap, if the last solve's
    /// order still holds: the links freeze in that order, each picked as
    /// the smallest share (then the lowest id) among the next
    /// [`LinkLevels::FOLLOW_AHEAD`] of it that still carry flows. Returns
    /// false, the state spoilt, if the levels so found ever fall, or if a
    /// link that did not freeze ends with flows or over its capacity; the
    /// solve then goes back to the resume point and fills with the heap.
    ///
    /// When it returns true, each freeze took the smallest share of all the
    /// unfrozen links, as the heap would have. Say link `q` had a smaller
    /// share than the level `s` of the link frozen at some step. Freezing a
    /// link at a level above `q`'s share lowers that share (or leaves it),
    /// and every later level is at least `s`, so `q` would have frozen
    /// below `s`, or ended over its capacity, and the check would have
    /// failed. So the rates are the max-min fair ones; on FB2010 ~95 % of
    /// resumed solves end this way.
    fn follow_last_order(&mut self) -> bool {
        let Some(hosts) = self.pairs.as_ref().map(|p| 2 * p.layout().hosts as usize) else {
            return false;
        };
        let epoch = self.epoch;
        let mut candidates = std::mem::take(&mut self.candidates);
        candidates.clear();
        let mut next = 0;
        let mut last = f64::NEG_INFINITY;
        let followed = loop {
            let count = &self.count;
            candidates.retain(|&l| count[l as usize] > 0.0);
            while candidates.len() < Self::FOLLOW_AHEAD && next < self.suffix.len() {
                let l = self.suffix[next].0;
                next += 1;
                if count[l as usize] > 0.0 {
                    candidates.push(l);
                }
            }
            let best = candidates
                .iter()
                .map(|&l| (share(self.residual[l as usize], self.count[l as usize]), l))
                .min_by_key(|&(s, l)| share_key(s, l));
            let Some((level, link)) = best else {
                break true;
            };
            if level < last {
                break false;
            }
            last = level;
            self.freeze_link(link, level);
        };
        self.candidates = candidates;
        followed
            && (0..hosts).all(|l| {
                !self.binds[l]
                    || self.link_frozen[l] == epoch
                    || (self.count[l] == 0.0 && self.residual[l] >= 0.0)
            })
    }

    /// Whether solves log their freezes for the next to resume from:
    /// every demand is in the matrix.
    fn logging(&self) -> bool {
        self.pairs.is_some() && self.listed == 0
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
                self.freeze(*e, share, link);
            }
        }
        self.on_link[li] = list;
        // What is left of its capacity (for the loads of the matrix's links).
        self.residual[li] -= share * self.count[li];
        self.count[li] = 0.0;
        self.load[li] += share * weight_here as f64;
    }

    /// Freezes the slot of `e` at `rate`, charging its links but `by`
    /// (the link freezing it, which sums its own load).
    fn freeze(&mut self, e: Entry, rate: f64, by: LinkId) {
        if e.capped {
            self.frozen[e.slot as usize] = self.epoch;
        }
        self.stats.demands_filled += 1;
        let w = u64::from(e.weight);
        let total = rate * w as f64;
        for &l in e.links.as_slice() {
            if l == by {
                continue;
            }
            let li = l as usize;
            self.load[li] += total;
            if self.binds[li] {
                // Its share is recomputed when it reaches the top of the heap.
                self.residual[li] -= total;
                self.count[li] = (self.count[li] - w as f64).max(0.0);
                self.stale[li] = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::links::Links;
    use crate::net::maxmin::max_min;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// One to four links, as paths are (NIC up, [ToR up, ToR down,] NIC
    /// down); capped if none of them binds (a rate must be finite).
    fn demand(rng: &mut ChaCha8Rng, binds: &[bool]) -> Demand {
        let n = rng.random_range(1..=4usize);
        let mut ids: Vec<u32> = (0..n).map(|_| rng.random_range(0..binds.len() as u32)).collect();
        ids.sort_unstable();
        ids.dedup();
        let mut d = Demand::new(Links::new(&ids).expect("at most 4 links"));
        d.weight = rng.random_range(1..=5);
        if rng.random_bool(0.1) || !ids.iter().any(|&l| binds[l as usize]) {
            d.cap = rng.random_range(1.0..50.0);
        }
        d
    }

    /// Random arrivals, departures, shrinking bundles and changes of route,
    /// 300 steps of `demand`s on `capacity`, some links of which never bind:
    /// after every solve each slot's rate equals the from-scratch max-min
    /// rate (computed on the binding links only), each slot's rate is its
    /// bottleneck's level, each link's load is the sum over the slots
    /// crossing it, and the slots reported changed are exactly those whose
    /// bottleneck or demand changed.
    fn check_random_events(
        seed: u64,
        rng: &mut ChaCha8Rng,
        mut lv: LinkLevels,
        capacity: &[f64],
        binds: &[bool],
        mut demand: impl FnMut(&mut ChaCha8Rng) -> Demand,
    ) {
        let links = capacity.len();
        let slots = 30usize;
        let mut current: Vec<Option<Demand>> = vec![None; slots];
        let mut before: Vec<Bottleneck> = vec![Bottleneck::Idle; slots];
        for step in 0..300 {
            let mut set = BTreeSet::new();
            for _ in 0..rng.random_range(1..=3) {
                let s = rng.random_range(0..slots);
                let next = match (current[s], rng.random_range(0..10)) {
                    (Some(d), 0..=5) if d.weight > 1 => Some(Demand {
                        weight: d.weight - rng.random_range(1..d.weight),
                        ..d
                    }),
                    (Some(_), 0..=6) => None,
                    (None, 0..=3) | (Some(_), _) => Some(demand(rng)),
                    (None, _) => None,
                };
                if current[s] != next {
                    set.insert(s as u32);
                }
                current[s] = next;
                lv.set(s, next);
            }
            let mut c = Changes::default();
            lv.solve(&mut c);
            let changed = c.slots;
            // The reference: max-min over the binding links only.
            let live: Vec<usize> = (0..slots).filter(|&s| current[s].is_some()).collect();
            let ds: Vec<Demand> = live
                .iter()
                .filter_map(|&s| current[s])
                .map(|d| {
                    let kept: Vec<u32> = d
                        .links
                        .as_slice()
                        .iter()
                        .copied()
                        .filter(|&l| binds[l as usize])
                        .collect();
                    Demand {
                        links: Links::new(&kept).expect("at most 4"),
                        ..d
                    }
                })
                .collect();
            let want = max_min(capacity, &ds);
            let mut load = vec![0.0; links];
            for (&s, &w) in live.iter().zip(&want) {
                let got = lv.rate(s);
                assert!(
                    (got - w).abs() <= 1e-9 * w.abs().max(1.0),
                    "seed {seed} step {step} slot {s}: {got} != {w}"
                );
                let d = current[s].expect("live");
                match lv.bottleneck(s) {
                    Bottleneck::Link(l) => {
                        assert!(binds[l as usize] && d.links.as_slice().contains(&l));
                        assert_eq!(got.to_bits(), lv.level(l).to_bits());
                    }
                    Bottleneck::Cap => assert_eq!(got, d.cap),
                    Bottleneck::Idle => panic!("seed {seed} step {step}: live slot {s} idle"),
                }
                for &l in d.links.as_slice() {
                    load[l as usize] += got * f64::from(d.weight);
                }
            }
            for (l, &b) in load.iter().enumerate() {
                let a = lv.load(l as LinkId);
                assert!(
                    (a - b).abs() <= 1e-9 * b.abs().max(1.0),
                    "seed {seed} step {step}: load of link {l}: {a} != {b}"
                );
            }
            for s in (0..slots).filter(|&s| current[s].is_none()) {
                assert_eq!(lv.rate(s), 0.0);
            }
            let expect: Vec<u32> = (0..slots as u32)
                .filter(|&s| set.contains(&s) || lv.bottleneck(s as usize) != before[s as usize])
                .collect();
            assert_eq!(changed, expect, "seed {seed} step {step}");
            before = (0..slots).map(|s| lv.bottleneck(s)).collect();
        }
    }

    /// Random link sets (one to four links per demand, some links never binding).
    #[test]
    fn levels_equal_from_scratch_max_min_on_random_events() {
        for seed in 0..20u64 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let links = rng.random_range(2..12u32);
            let capacity: Vec<f64> = (0..links).map(|_| rng.random_range(10.0..200.0)).collect();
            let binds: Vec<bool> = (0..links).map(|_| rng.random_bool(0.8)).collect();
            let lv = LinkLevels::new(&capacity, &binds);
            check_random_events(seed, &mut rng, lv, &capacity, &binds.clone(), |rng| {
                demand(rng, &binds)
            });
        }
    }

    /// A big switch as [`super::super::links::LinkMap`] lays it out: 6 hosts
    /// in 3 racks (NIC up 0..6, NIC down 6..12, ToR up 12..15 and down
    /// 15..18, which never bind) and 3 circuit links 18..21. Host-to-host
    /// demands (held by the matrix) mix with capped ones and ones over a
    /// circuit (held in lists), so both kinds charge the same NICs.
    #[test]
    fn levels_with_host_pairs_equal_from_scratch_max_min() {
        let layout = HostPairs {
            hosts: 6,
            hosts_per_rack: 2,
            tor_up: 12,
            tor_down: 15,
        };
        for seed in 0..20u64 {
            let mut rng = ChaCha8Rng::seed_from_u64(100 + seed);
            let capacity: Vec<f64> = (0..21).map(|_| rng.random_range(10.0..200.0)).collect();
            let binds: Vec<bool> = (0..21).map(|l| !(12..18).contains(&l)).collect();
            let lv = LinkLevels::with_host_pairs(&capacity, &binds, layout);
            check_random_events(seed, &mut rng, lv, &capacity, &binds, big_switch_demand);
        }
    }

    /// The 6-host big switch of `levels_with_host_pairs_equal_from_scratch_max_min`.
    const SIX_HOSTS: HostPairs = HostPairs {
        hosts: 6,
        hosts_per_rack: 2,
        tor_up: 12,
        tor_down: 15,
    };

    /// A demand on [`SIX_HOSTS`]: host to host over EPS (mostly), over a
    /// circuit (links 18..21) or capped.
    fn big_switch_demand(rng: &mut ChaCha8Rng) -> Demand {
        let (i, j) = (rng.random_range(0..6u32), rng.random_range(0..6u32));
        let (ri, rj) = (i / 2, j / 2);
        let ids: Vec<u32> = match rng.random_range(0..10) {
            0..=1 => vec![i, 18 + rng.random_range(0..3), 6 + j],
            _ if ri == rj => vec![i, 6 + j],
            _ => vec![i, 12 + ri, 15 + rj, 6 + j],
        };
        let mut d = Demand::new(Links::new(&ids).expect("at most 4 links"));
        d.weight = rng.random_range(1..=5);
        if rng.random_bool(0.15) {
            d.cap = rng.random_range(1.0..50.0);
        }
        d
    }

    /// Capacities that change between solves (as a class's do under strict
    /// priority, `super::super::class_levels`), some to nothing, with and
    /// without the host-pair matrix, between changes of demand: every solve
    /// gives the from-scratch max-min rates on the capacities of the time,
    /// even one where only a capacity changed.
    #[test]
    fn capacity_changes_give_from_scratch_max_min_rates() {
        let binds: Vec<bool> = (0..21).map(|l| !(12..18).contains(&l)).collect();
        for seed in 0..10u64 {
            for matrix in [false, true] {
                let mut rng = ChaCha8Rng::seed_from_u64(500 + seed);
                let mut capacity: Vec<f64> = (0..21).map(|_| rng.random_range(10.0..200.0)).collect();
                let mut lv = if matrix {
                    LinkLevels::with_host_pairs(&capacity, &binds, SIX_HOSTS)
                } else {
                    LinkLevels::new(&capacity, &binds)
                };
                let mut current: Vec<Option<Demand>> = vec![None; 20];
                for step in 0..200 {
                    if step < 20 || rng.random_bool(0.5) {
                        let s = rng.random_range(0..current.len());
                        current[s] = rng.random_bool(0.8).then(|| big_switch_demand(&mut rng));
                        lv.set(s, current[s]);
                    } else {
                        for _ in 0..rng.random_range(1..=3) {
                            let l = rng.random_range(0..21u32);
                            let c = if rng.random_bool(0.2) {
                                0.0
                            } else {
                                rng.random_range(1.0..200.0)
                            };
                            capacity[l as usize] = c;
                            lv.set_capacity(l, c);
                            assert_eq!(lv.capacity(l), c);
                        }
                    }
                    lv.solve(&mut Changes::default());
                    let live: Vec<usize> = (0..current.len()).filter(|&s| current[s].is_some()).collect();
                    let ds: Vec<Demand> = live
                        .iter()
                        .filter_map(|&s| current[s])
                        .map(|d| Demand {
                            links: d.links.filtered(|l| binds[l as usize]),
                            ..d
                        })
                        .collect();
                    let binding: Vec<f64> = (0..21)
                        .map(|l| if binds[l] { capacity[l] } else { f64::INFINITY })
                        .collect();
                    for (&s, want) in live.iter().zip(max_min(&binding, &ds)) {
                        let got = lv.rate(s);
                        assert!(
                            (got - want).abs() <= 1e-9 * want.abs().max(1.0),
                            "seed {seed} matrix {matrix} step {step} slot {s}: {got} != {want}"
                        );
                    }
                }
            }
        }
    }

    /// On a big switch of 24 ports, where every demand is in the matrix,
    /// solves that resume from the last one's order (a snapshot every 3
    /// freezes, so restores and re-runs happen at every depth) and then
    /// follow it where it holds give every rate, bottleneck, level, load
    /// and change report bit for bit as solves from scratch do, and do
    /// repeat freezes.
    #[test]
    fn resumed_solves_equal_solves_from_scratch_bit_for_bit() {
        let n = 24u32;
        let layout = HostPairs {
            hosts: n,
            hosts_per_rack: 1,
            tor_up: 2 * n,
            tor_down: 3 * n,
        };
        let links = 4 * n as usize;
        let binds: Vec<bool> = (0..links).map(|l| l < 2 * n as usize).collect();
        for seed in 0..6u64 {
            let mut rng = ChaCha8Rng::seed_from_u64(900 + seed);
            let capacity: Vec<f64> = (0..links).map(|_| rng.random_range(10.0..200.0)).collect();
            let mut resumed = LinkLevels::with_host_pairs(&capacity, &binds, layout).resuming(Some(3));
            let mut scratch = LinkLevels::with_host_pairs(&capacity, &binds, layout).resuming(None);
            let slots = 300usize;
            let mut current: Vec<Option<Demand>> = vec![None; slots];
            for step in 0..400 {
                // Mostly one or two bundles change, sometimes a burst (an arrival).
                let changes = if rng.random_bool(0.1) {
                    40
                } else {
                    rng.random_range(1..=2)
                };
                for _ in 0..changes {
                    let s = rng.random_range(0..slots);
                    current[s] = match current[s] {
                        // Flows of its bundle finish, or more join it.
                        Some(d) if rng.random_bool(0.5) => Some(Demand {
                            weight: match d.weight {
                                w if w > 1 && rng.random_bool(0.6) => w - 1,
                                w => w + rng.random_range(1..=3),
                            },
                            ..d
                        }),
                        Some(_) if rng.random_bool(0.5) => None,
                        _ => {
                            let (i, j) = (rng.random_range(0..n), rng.random_range(0..n));
                            let ids = if i == j {
                                vec![i, n + j]
                            } else {
                                vec![i, 2 * n + i, 3 * n + j, n + j]
                            };
                            let mut d = Demand::new(Links::new(&ids).expect("2 or 4 links"));
                            d.weight = rng.random_range(1..=4);
                            Some(d)
                        }
                    };
                    resumed.set(s, current[s]);
                    scratch.set(s, current[s]);
                }
                let (mut a, mut b) = (Changes::default(), Changes::default());
                resumed.solve(&mut a);
                scratch.solve(&mut b);
                let why = format!("seed {seed}, step {step}");
                assert_eq!(a.slots, b.slots, "{why}: changed slots");
                assert_eq!(a.links, b.links, "{why}: changed links");
                for s in 0..slots {
                    assert_eq!(
                        resumed.rate(s).to_bits(),
                        scratch.rate(s).to_bits(),
                        "{why}: rate of {s}"
                    );
                    assert_eq!(
                        resumed.bottleneck(s),
                        scratch.bottleneck(s),
                        "{why}: bottleneck of {s}"
                    );
                }
                for l in 0..links as LinkId {
                    assert_eq!(
                        resumed.level(l).to_bits(),
                        scratch.level(l).to_bits(),
                        "{why}: level {l}"
                    );
                    assert_eq!(
                        resumed.load(l).to_bits(),
                        scratch.load(l).to_bits(),
                        "{why}: load {l}"
                    );
                }
            }
            let (a, b) = (resumed.stats(), scratch.stats());
            assert_eq!(a.freezes, b.freezes, "seed {seed}: the same freezes");
            assert_eq!(b.freezes_repeated, 0);
            // Both ends of a resumed solve were taken: following the last
            // order to the end, and going back to the heap when it broke.
            assert!(a.orders_followed > 0 && a.orders_left > 0, "seed {seed}: {a:?}");
            assert_eq!(
                a.orders_followed + a.orders_left + 1,
                a.solves,
                "seed {seed}: all but the first resumed"
            );
            assert!(
                a.freezes_repeated * 5 > a.freezes,
                "seed {seed}: {} of {} freezes repeated",
                a.freezes_repeated,
                a.freezes
            );
        }
    }

    /// Slots mostly capped below their fair share (Varys' and Aalo's
    /// rates), arriving and leaving: after every solve each slot's rate and
    /// bottleneck are bit for bit those of a solve from scratch of the same
    /// demands, loads agree to rounding, and the solves that only saw
    /// departures with every slot at its cap took the short way and
    /// reported only the departed slots.
    #[test]
    fn departures_at_caps_keep_every_rate() {
        for seed in 0..10u64 {
            let mut rng = ChaCha8Rng::seed_from_u64(700 + seed);
            let capacity: Vec<f64> = (0..8).map(|_| rng.random_range(20.0..40.0)).collect();
            let binds = vec![true; 8];
            let mut lv = LinkLevels::new(&capacity, &binds);
            let slots = 40usize;
            let mut current: Vec<Option<Demand>> = vec![None; slots];
            for step in 0..200 {
                let departures = rng.random_bool(0.6);
                let mut left = Vec::new();
                for _ in 0..rng.random_range(1..=2) {
                    let live: Vec<usize> = (0..slots).filter(|&s| current[s].is_some()).collect();
                    let s = match live.len() {
                        n if departures && n > 0 => live[rng.random_range(0..n)],
                        _ => rng.random_range(0..slots),
                    };
                    let next = match current[s] {
                        Some(_) if departures => None,
                        Some(d) => Some(d),
                        None if departures => None,
                        None => {
                            let mut d = demand(&mut rng, &binds);
                            // Now and then one that a link binds.
                            d.cap = if rng.random_bool(0.05) {
                                f64::INFINITY
                            } else {
                                rng.random_range(0.0..2.0)
                            };
                            Some(d)
                        }
                    };
                    if current[s].is_some() && next.is_none() {
                        left.push(s as u32);
                    }
                    current[s] = next;
                    lv.set(s, next);
                }
                let short_ways = lv.stats().departures_at_caps;
                let mut c = Changes::default();
                lv.solve(&mut c);
                let mut fresh = LinkLevels::new(&capacity, &binds);
                for (s, d) in current.iter().enumerate() {
                    fresh.set(s, *d);
                }
                fresh.solve(&mut Changes::default());
                let why = format!("seed {seed}, step {step}");
                for (s, d) in current.iter().enumerate() {
                    assert_eq!(
                        lv.rate(s).to_bits(),
                        fresh.rate(s).to_bits(),
                        "{why}: rate of {s}"
                    );
                    if d.is_some() {
                        assert_eq!(lv.bottleneck(s), fresh.bottleneck(s), "{why}: bottleneck of {s}");
                    }
                }
                for l in 0..8 {
                    assert!((lv.load(l) - fresh.load(l)).abs() < 1e-9, "{why}: load of {l}");
                }
                if lv.stats().departures_at_caps > short_ways {
                    left.sort_unstable();
                    left.dedup();
                    assert_eq!(c.slots, left, "{why}: only the departed slots are reported");
                    assert!(c.links.is_empty());
                }
            }
            assert!(
                lv.stats().departures_at_caps > 50,
                "seed {seed}: {:?}",
                lv.stats()
            );
        }
    }

    #[test]
    fn a_departure_moves_levels_not_bottlenecks() {
        // Link 0 (cap 1) carries a and b; link 1 (cap 10) carries b, c, d.
        // a = b = 0.5 at link 0; c = d = 4.75 at link 1. When d leaves, link
        // 1's level rises to 9.5: c's rate changes, but no bottleneck moves,
        // so only the departed slot and link 1 are reported.
        let l = |ids: &[u32]| Demand::new(Links::new(ids).expect("links"));
        let mut lv = LinkLevels::new(&[1.0, 10.0], &[true, true]);
        lv.set(0, Some(l(&[0])));
        lv.set(1, Some(l(&[0, 1])));
        lv.set(2, Some(l(&[1])));
        lv.set(3, Some(l(&[1])));
        let mut c = Changes::default();
        lv.solve(&mut c);
        assert_eq!((lv.rate(0), lv.rate(1), lv.rate(2)), (0.5, 0.5, 4.75));
        assert_eq!(lv.bottleneck(1), Bottleneck::Link(0));
        lv.set(3, None);
        lv.solve(&mut c);
        assert_eq!(c.slots, vec![3]);
        assert_eq!(c.links, vec![1]);
        assert_eq!((lv.rate(1), lv.rate(2), lv.rate(3)), (0.5, 9.5, 0.0));
        assert_eq!(lv.load(1), 10.0);
    }
}
