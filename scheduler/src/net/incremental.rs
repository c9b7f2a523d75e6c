//! Max-min fair rates kept up to date from event to event, recomputing only
//! what an event can change ([`IncrementalMaxMin`]).
//!
//! Progressive filling (Bertsekas & Gallager, *Data Networks*, Sec. 6.5.2)
//! raises a common water level `x`; a flow freezes when the first of its
//! links saturates (or it reaches its cap), at the level of that moment, and
//! the levels at which flows freeze only grow. At level `x` a link carries
//! `A_l(x) = Σ w_f·min(r_f, x)` over its flows (final rates `r_f`, `w_f`
//! identical flows each) and saturates at the first `x` with `A_l(x) = C_l`.
//!
//! **The floor.** Between two solves some slots change. Split what changed
//! into flows that *leave* (a bundle empties or loses members, or its old
//! route or cap is given up), flows that *arrive* (a new bundle, members
//! joining one, or a new route or cap) and flows that *stay* (the members a
//! bundle keeps on the same route and cap); `U` is every unchanged flow
//! plus those that stay, at their old rates. Let
//!
//! - `θ` = the smallest old rate of a leaving flow, and
//! - `θ'` = the smallest, over the arriving flows, of their cap and, over
//!   each link `l` they cross, of the root `x_l` of
//!   `Σ_{f∈U on l} w_f·min(r_f, x) + W_l·x = C_l`, `W_l` the arriving weight on `l`.
//!
//! Below the floor `φ = min(θ, θ')` the new progressive filling freezes
//! the same flows of `U` at the same levels as the old one, and freezes no
//! arriving flow. By induction on the level `x < φ`, with the frozen sets
//! equal so far, the new load is `B_l(x) = Σ_{f∈U on l} w_f·min(r_f, x) + W_l·x`
//! and the old one `A_l(x)`:
//!
//! - a link with arriving flows: `B_l(x) < C_l` for `x < x_l`, and `φ ≤ x_l`;
//!   the arriving flows also stay below their caps;
//! - a link with leaving flows but no arriving ones: the leaving flows were
//!   unfrozen up to `θ ≥ φ`, so `A_l(x) < C_l` below `φ`, and
//!   `B_l(x) ≤ A_l(x)` (only flows went away);
//! - any other link: `B_l = A_l`, so it saturates exactly where it did.
//!
//! A flow of `U` with old rate `r_f < φ` froze at a link that saturated at
//! `r_f`; by the cases above that link had neither arriving nor leaving
//! flows, so it saturates at `r_f` again (or the flow is at its cap again).
//! So every flow whose rate was below `φ` keeps it; every other flow (of `U`
//! at `φ` or above, or arriving) is at least `φ` and is water-filled again
//! on what the kept flows leave of each link (capacity − their load; the
//! remaining shares are all ≥ `φ`, so this continues the same filling).
//!
//! Any lower bound of `φ` is also a valid floor. The solver counts the
//! members that stay in a bundle on a link with arrivals as arriving too
//! (`w·x ≥ w·min(r, x)`, so the root only gets smaller). Per link it first
//! takes the cheap lower bounds `C_l / (W_U + W_l)` and
//! `(C_l − load_U) / W_l`; only when they are below the floor found so far
//! does it take Newton steps from them (`B` is concave, so every step stays
//! a lower bound of the root), stopping at the root or once above the floor.
//! A route or cap change is a departure from the old plus an arrival on the
//! new. So an arrival no longer forces a full solve; on a fabric where every
//! link is busy (FB2010) its floor is still low, though, and most bundles
//! are filled again anyway.
//!
//! **No scan of idle slots.** Moving slots sit in buckets by rate (16 per
//! octave, a bitmap of non-empty buckets), so the part at or above the
//! floor is a range of buckets plus a filter of the first one.
//!
//! **Float noise is not a change.** A partial solve computes residuals in
//! another order than a full one, so rates that did not really change come
//! out a few ulps off. A new rate within [`NOISE`] (relative) of the old one
//! keeps the old value, which spares the network re-basing the bundle and
//! pushing a new finish time. Every kept rate is within [`NOISE`] of the
//! value this solve computed; the link loads are summed from the rates
//! actually kept; a full solve (at least every [`FULL_EVERY`] solves, or
//! when a partial one would cover more than half of the moving slots)
//! recomputes every rate from the capacities and every load from scratch,
//! so neither rates nor loads drift over a long run.
//!
//! A full solve is [`WaterFill::fill`] over all demands in slot order, the
//! same numbers as [`super::maxmin::max_min`] but for rates kept within
//! [`NOISE`]; a partial one differs by float rounding besides. The property
//! test below checks both on random events.

use super::maxmin::{Demand, WaterFill};

/// Rate of a slot with no demand (not moving).
const IDLE: f64 = -1.0;

/// A new rate within this (relative) of the old one is float noise: the
/// old one is kept. Partial and full solves of one allocation differ by
/// about 1e-15 relative (residuals summed in another order); 1e-12 moves a
/// finish time 1000 s away by at most 1 ns.
pub const NOISE: f64 = 1e-12;

/// A full solve happens at least this often (in solves), which bounds how
/// long float noise and kept rates can accumulate in the link loads.
pub const FULL_EVERY: u32 = 1024;

/// A partial solve that would cover more than `FULL_SHARE_NUM /
/// FULL_SHARE_DEN` of the moving slots is done in full instead (it costs
/// about as much, and resets the loads).
const FULL_SHARE_NUM: usize = 1;
const FULL_SHARE_DEN: usize = 2;

/// Arrival roots are lowered by this (relative), so that the float error
/// of the walk cannot put the floor above the exact root.
const ROOT_MARGIN: f64 = 1e-12;

/// How the solves went, for benchmarks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SolveStats {
    /// Solves over every demand (a partial one would cover more than half, or
    /// [`FULL_EVERY`] solves since the last full one).
    pub full: u64,
    /// Solves over the demands at or above the floor of the changes.
    pub partial: u64,
    /// Demands water-filled, summed over all solves.
    pub demands_filled: u64,
    /// Slots reported changed (demand or rate), summed over all solves.
    pub changed: u64,
    /// Rates recomputed within [`NOISE`] of the old one, so kept (not reported changed).
    pub kept_as_noise: u64,
    /// Arrival roots computed by a walk over a link's flows.
    pub roots_walked: u64,
}

/// Bucket of a rate: its f64 bits shifted (rates are >= 0, so this keeps
/// their order); 16 buckets per octave.
const BUCKET_SHIFT: u32 = 48;
const BUCKETS: usize = 1 << (63 - BUCKET_SHIFT);
const NOWHERE: u32 = u32::MAX;

/// The moving slots, bucketed by rate, so that the slots at or above a
/// level are a range of buckets.
#[derive(Clone, Debug)]
struct RateBuckets {
    slots: Vec<Vec<u32>>,
    /// Bit `b` set when bucket `b` is not empty.
    nonempty: Vec<u64>,
    /// Per slot: (bucket, index in it), or `NOWHERE`.
    at: Vec<(u32, u32)>,
    len: usize,
}

impl Default for RateBuckets {
    fn default() -> RateBuckets {
        RateBuckets {
            slots: vec![Vec::new(); BUCKETS],
            nonempty: vec![0; BUCKETS / 64],
            at: Vec::new(),
            len: 0,
        }
    }
}

impl RateBuckets {
    fn key(rate: f64) -> usize {
        if rate > 0.0 {
            ((rate.to_bits() >> BUCKET_SHIFT) as usize).min(BUCKETS - 1)
        } else {
            0
        }
    }

    /// Puts `slot` in the bucket of `rate` (moving it if it is elsewhere).
    fn put(&mut self, slot: u32, rate: f64) {
        let key = RateBuckets::key(rate);
        if self.at.len() <= slot as usize {
            self.at.resize(slot as usize + 1, (NOWHERE, 0));
        }
        let (b, _) = self.at[slot as usize];
        if b as usize == key {
            return;
        }
        self.remove(slot);
        let bucket = &mut self.slots[key];
        self.at[slot as usize] = (key as u32, bucket.len() as u32);
        bucket.push(slot);
        self.nonempty[key / 64] |= 1 << (key % 64);
        self.len += 1;
    }

    /// Takes `slot` out (no-op if it is in no bucket).
    fn remove(&mut self, slot: u32) {
        let Some(&(b, i)) = self.at.get(slot as usize) else {
            return;
        };
        if b == NOWHERE {
            return;
        }
        let bucket = &mut self.slots[b as usize];
        bucket.swap_remove(i as usize);
        if let Some(&moved) = bucket.get(i as usize) {
            self.at[moved as usize].1 = i;
        }
        if bucket.is_empty() {
            self.nonempty[b as usize / 64] &= !(1 << (b % 64));
        }
        self.at[slot as usize] = (NOWHERE, 0);
        self.len -= 1;
    }

    /// Calls `f` on every slot whose bucket is that of `floor` or higher
    /// (a superset of the slots with rate >= `floor`).
    fn for_each_from(&self, floor: f64, mut f: impl FnMut(u32)) {
        let first = RateBuckets::key(floor);
        let mut word = first / 64;
        let mut bits = self.nonempty[word] & (!0u64 << (first % 64));
        loop {
            while bits != 0 {
                let b = word * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                self.slots[b].iter().for_each(|&s| f(s));
            }
            word += 1;
            if word == self.nonempty.len() {
                return;
            }
            bits = self.nonempty[word];
        }
    }
}

/// Max-min fair rates of a changing set of demands, one per *slot* (a
/// bundle of identical flows in the network), on fixed link capacities.
/// Change demands with [`IncrementalMaxMin::set`], then call
/// [`IncrementalMaxMin::solve`]; read rates with [`IncrementalMaxMin::rate`].
#[derive(Clone, Debug, Default)]
pub struct IncrementalMaxMin {
    capacity: Vec<f64>,
    /// Current demand per slot.
    demand: Vec<Option<Demand>>,
    /// Demand per slot at the last solve.
    solved: Vec<Option<Demand>>,
    /// Per-flow rate per slot at the last solve ([`IDLE`] with no demand).
    rate: Vec<f64>,
    /// Whether the slot changed since the last solve (its load is then out of `load`).
    pending: Vec<bool>,
    pending_list: Vec<u32>,
    /// Per link: Σ rate × weight of the solved, not pending slots crossing it.
    load: Vec<f64>,
    /// Per link: Σ weight of the solved, not pending slots crossing it.
    weight: Vec<u64>,
    /// Per link: the solved slots crossing it (pending ones included).
    on_link: Vec<Vec<u32>>,
    /// Per slot and position in its solved links: its index in that link's `on_link`.
    link_pos: Vec<[u32; 4]>,
    /// Slots with a solved demand, by rate.
    buckets: RateBuckets,
    solves_since_full: u32,
    water: WaterFill,
    subset: Vec<u32>,
    demands: Vec<Demand>,
    rates: Vec<f64>,
    residual: Vec<f64>,
    changed: Vec<u32>,
    /// Per link, during a solve: the arriving weight and whether a root is needed.
    arriving: Vec<(u64, bool)>,
    arrival_links: Vec<u32>,
    walk: Vec<(f64, u32)>,
    stats: SolveStats,
}

impl IncrementalMaxMin {
    /// No demands yet, on links of `capacity` (bytes per second).
    pub fn new(capacity: &[f64]) -> IncrementalMaxMin {
        IncrementalMaxMin {
            capacity: capacity.to_vec(),
            load: vec![0.0; capacity.len()],
            weight: vec![0; capacity.len()],
            on_link: vec![Vec::new(); capacity.len()],
            arriving: vec![(0, false); capacity.len()],
            water: WaterFill::new(capacity.len()),
            ..IncrementalMaxMin::default()
        }
    }

    /// Slot `slot` now has `demand` (`None`: it does not move). Rates
    /// change at the next [`IncrementalMaxMin::solve`].
    pub fn set(&mut self, slot: usize, demand: Option<Demand>) {
        if slot >= self.demand.len() {
            self.demand.resize(slot + 1, None);
            self.solved.resize(slot + 1, None);
            self.rate.resize(slot + 1, IDLE);
            self.pending.resize(slot + 1, false);
            self.link_pos.resize(slot + 1, [0; 4]);
        }
        if !self.pending[slot] {
            if self.solved[slot] == demand {
                return;
            }
            self.unload(slot);
            self.pending[slot] = true;
            self.pending_list.push(slot as u32);
        }
        self.demand[slot] = demand;
    }

    /// The per-flow rate of `slot` as of the last solve (0 if it does not move).
    pub fn rate(&self, slot: usize) -> f64 {
        self.rate.get(slot).copied().unwrap_or(IDLE).max(0.0)
    }

    /// Counts of full and partial solves so far.
    pub fn stats(&self) -> SolveStats {
        self.stats
    }

    /// Takes the solved load of `slot` off its links.
    fn unload(&mut self, slot: usize) {
        if let Some(d) = self.solved[slot] {
            let r = self.rate[slot] * f64::from(d.weight);
            for &l in d.links.as_slice() {
                self.load[l as usize] -= r;
                self.weight[l as usize] -= u64::from(d.weight);
            }
        }
    }

    /// The lowest level the pending changes can reach (module doc), or a
    /// lower bound of it; `-inf` when nothing is known.
    fn floor(&mut self) -> f64 {
        let mut floor = f64::INFINITY;
        for i in 0..self.pending_list.len() {
            let s = self.pending_list[i] as usize;
            let (old, new) = (self.solved[s], self.demand[s]);
            let Some(new) = new else {
                if old.is_some() {
                    floor = floor.min(self.rate[s]);
                }
                continue;
            };
            let arrives = match old {
                Some(o) if o.links == new.links && o.cap == new.cap => {
                    if new.weight < o.weight {
                        floor = floor.min(self.rate[s]);
                    }
                    new.weight > o.weight
                }
                Some(_) => {
                    floor = floor.min(self.rate[s]);
                    true
                }
                None => true,
            };
            if arrives {
                floor = floor.min(new.cap);
            }
            // Members that stay count as arriving on links with arrivals (module doc).
            for &l in new.links.as_slice() {
                let a = &mut self.arriving[l as usize];
                if a.0 == 0 {
                    self.arrival_links.push(l);
                }
                a.0 += u64::from(new.weight);
                a.1 |= arrives;
            }
        }
        for i in 0..self.arrival_links.len() {
            let l = self.arrival_links[i] as usize;
            let (w_new, needed) = std::mem::take(&mut self.arriving[l]);
            if !needed {
                continue;
            }
            let (c, w_new) = (self.capacity[l], w_new as f64);
            let cheap = (c / (self.weight[l] as f64 + w_new)).max((c - self.load[l]) / w_new);
            if cheap * (1.0 - ROOT_MARGIN) < floor {
                let root = self.arrival_root(l, w_new, cheap.max(0.0), floor) * (1.0 - ROOT_MARGIN);
                floor = floor.min(root.max(0.0));
            }
        }
        self.arrival_links.clear();
        floor
    }

    /// A lower bound of the root `x` of `B(x) = Σ w·min(r, x) + w_new·x = C_l`
    /// over the solved, not pending slots on link `l`, starting from the
    /// lower bound `x`: the root itself if it is below `floor`, else some
    /// value at or above `floor`. `B` is concave and piecewise linear, so
    /// Newton steps from below (slope: the weight still unfrozen at `x`)
    /// stay below the root and reach it after at most one step per kink.
    fn arrival_root(&mut self, l: usize, w_new: f64, mut x: f64, floor: f64) -> f64 {
        self.stats.roots_walked += 1;
        self.walk.clear();
        for &s in &self.on_link[l] {
            let s = s as usize;
            if let (false, Some(d)) = (self.pending[s], self.solved[s]) {
                self.walk.push((self.rate[s], d.weight));
            }
        }
        let c = self.capacity[l];
        while x < floor {
            let (mut fixed, mut open) = (0.0, w_new);
            for &(r, w) in &self.walk {
                if r < x {
                    fixed += r * f64::from(w);
                } else {
                    open += f64::from(w);
                }
            }
            let next = (c - fixed) / open;
            if next <= x {
                break;
            }
            x = next;
        }
        x
    }

    /// Recomputes rates after the changes since the last call. Returns the
    /// slots whose demand or rate changed, in slot order.
    pub fn solve(&mut self) -> &[u32] {
        self.changed.clear();
        if self.pending_list.is_empty() {
            return &self.changed;
        }
        let floor = self.floor();
        self.subset.clear();
        let mut full = floor == f64::NEG_INFINITY || self.solves_since_full + 1 >= FULL_EVERY;
        if !full {
            let (pending, rate, subset) = (&self.pending, &self.rate, &mut self.subset);
            self.buckets.for_each_from(floor, |s| {
                if !pending[s as usize] && rate[s as usize] >= floor {
                    subset.push(s);
                }
            });
            let arriving = self
                .pending_list
                .iter()
                .filter(|&&s| self.demand[s as usize].is_some());
            self.subset.extend(arriving);
            full = FULL_SHARE_DEN * self.subset.len()
                > FULL_SHARE_NUM * (self.buckets.len + self.pending_list.len());
        }
        if full {
            self.stats.full += 1;
            self.solves_since_full = 0;
            self.subset.clear();
            let (pending, subset) = (&self.pending, &mut self.subset);
            self.buckets.for_each_from(0.0, |s| {
                if !pending[s as usize] {
                    subset.push(s);
                }
            });
            let arriving = self
                .pending_list
                .iter()
                .filter(|&&s| self.demand[s as usize].is_some());
            self.subset.extend(arriving);
            self.load.iter_mut().for_each(|l| *l = 0.0);
            self.weight.iter_mut().for_each(|w| *w = 0);
            // Slot order: the same numbers as `max_min` over the live slots.
            self.subset.sort_unstable();
        } else {
            self.stats.partial += 1;
            self.solves_since_full += 1;
            for i in 0..self.subset.len() {
                let s = self.subset[i] as usize;
                if !self.pending[s] {
                    self.unload(s);
                }
            }
        }
        self.stats.demands_filled += self.subset.len() as u64;
        self.residual.clear();
        self.residual
            .extend(
                self.capacity
                    .iter()
                    .zip(&self.load)
                    .map(|(&c, &l)| if full { c } else { (c - l).max(0.0) }),
            );
        self.demands.clear();
        self.demands
            .extend(self.subset.iter().filter_map(|&s| self.demand[s as usize]));
        self.water
            .fill(&mut self.residual, &self.demands, &mut self.rates);
        for (&s, (&r, d)) in self.subset.iter().zip(self.rates.iter().zip(&self.demands)) {
            let s = s as usize;
            let old = self.rate[s];
            let r = if old >= 0.0 && (r - old).abs() <= NOISE * old {
                self.stats.kept_as_noise += u64::from(r.to_bits() != old.to_bits());
                old
            } else {
                r
            };
            let total = r * f64::from(d.weight);
            for &l in d.links.as_slice() {
                self.load[l as usize] += total;
                self.weight[l as usize] += u64::from(d.weight);
            }
            if self.pending[s] || old.to_bits() != r.to_bits() {
                self.changed.push(s as u32);
            }
            self.rate[s] = r;
            self.buckets.put(s as u32, r);
        }
        for i in 0..self.pending_list.len() {
            let s = self.pending_list[i] as usize;
            if self.demand[s].is_none() {
                self.rate[s] = IDLE;
                self.buckets.remove(s as u32);
                self.changed.push(s as u32);
            }
            let (old, new) = (self.solved[s], self.demand[s]);
            if old.map(|d| d.links) != new.map(|d| d.links) {
                if let Some(d) = old {
                    self.leave_links(s, d);
                }
                if let Some(d) = new {
                    self.join_links(s, d);
                }
            }
            self.solved[s] = new;
            self.pending[s] = false;
        }
        self.pending_list.clear();
        self.changed.sort_unstable();
        self.stats.changed += self.changed.len() as u64;
        &self.changed
    }

    /// Records that `slot` (with solved demand `d`) crosses its links.
    fn join_links(&mut self, slot: usize, d: Demand) {
        for (k, &l) in d.links.as_slice().iter().enumerate() {
            let list = &mut self.on_link[l as usize];
            self.link_pos[slot][k] = list.len() as u32;
            list.push(slot as u32);
        }
    }

    /// Undoes [`IncrementalMaxMin::join_links`].
    fn leave_links(&mut self, slot: usize, d: Demand) {
        for (k, &l) in d.links.as_slice().iter().enumerate() {
            let i = self.link_pos[slot][k] as usize;
            let list = &mut self.on_link[l as usize];
            list.swap_remove(i);
            if let Some(&moved) = list.get(i) {
                let m = moved as usize;
                let links = self.solved[m].map(|d| d.links).unwrap_or_default();
                // The position of `l` in the moved slot's links (its first
                // such position still pointing at the end of the list).
                let end = list.len() as u32;
                if let Some(j) = links
                    .as_slice()
                    .iter()
                    .enumerate()
                    .position(|(j, &x)| x == l && self.link_pos[m][j] == end)
                {
                    self.link_pos[m][j] = i as u32;
                }
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

    fn demand(rng: &mut ChaCha8Rng, links: u32) -> Demand {
        // Two or three links, as EPS paths are (NIC up, [ToR up, ToR down,] NIC down).
        let n = rng.random_range(1..=3usize);
        let mut ids: Vec<u32> = (0..n).map(|_| rng.random_range(0..links)).collect();
        ids.sort_unstable();
        ids.dedup();
        let mut d = Demand::new(Links::new(&ids).expect("at most 4 links"));
        d.weight = rng.random_range(1..=5);
        if rng.random_bool(0.1) {
            d.cap = rng.random_range(1.0..50.0);
        }
        d
    }

    /// Random arrivals, departures (bundles that shrink or empty), bundles
    /// that grow, changes of route and of cap: after every solve each slot's
    /// rate equals the from-scratch max-min rate (within float rounding),
    /// and arrivals are solved partially too.
    #[test]
    fn incremental_equals_from_scratch_on_random_events() {
        for seed in 0..20u64 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let links = rng.random_range(2..12u32);
            let capacity: Vec<f64> = (0..links).map(|_| rng.random_range(10.0..200.0)).collect();
            let slots = 30usize;
            let mut current: Vec<Option<Demand>> = vec![None; slots];
            let mut inc = IncrementalMaxMin::new(&capacity);
            let mut partial_seen = 0;
            let mut partial_with_arrival = 0;
            for step in 0..300 {
                let mut arrival = false;
                for _ in 0..rng.random_range(1..=3) {
                    let s = rng.random_range(0..slots);
                    let next = match (current[s], rng.random_range(0..12)) {
                        // Members leave.
                        (Some(d), 0..=4) if d.weight > 1 => Some(Demand {
                            weight: d.weight - rng.random_range(1..d.weight),
                            ..d
                        }),
                        // Members join.
                        (Some(d), 5..=7) => Some(Demand {
                            weight: d.weight + rng.random_range(1..=4),
                            ..d
                        }),
                        // A new cap (or none).
                        (Some(d), 8) => Some(Demand {
                            cap: if d.cap.is_finite() {
                                f64::INFINITY
                            } else {
                                rng.random_range(1.0..50.0)
                            },
                            ..d
                        }),
                        (Some(_), 0..=4 | 9) => None,
                        // A new route, or an arrival.
                        (None, 0..=3) | (Some(_), _) => Some(demand(&mut rng, links)),
                        (None, _) => None,
                    };
                    arrival |= next.is_some_and(|n| current[s].is_none_or(|c| c.weight < n.weight));
                    current[s] = next;
                    inc.set(s, next);
                }
                let before = inc.stats();
                inc.solve();
                let was_full = inc.stats().full > before.full;
                partial_seen += usize::from(!was_full);
                partial_with_arrival += usize::from(!was_full && arrival);
                let live: Vec<usize> = (0..slots).filter(|&s| current[s].is_some()).collect();
                let ds: Vec<Demand> = live.iter().filter_map(|&s| current[s]).collect();
                let want = max_min(&capacity, &ds);
                for (&s, &w) in live.iter().zip(&want) {
                    let got = inc.rate(s);
                    if was_full {
                        // The same computation, but for rates kept as noise.
                        assert!(
                            got.to_bits() == w.to_bits() || (got - w).abs() <= NOISE * got,
                            "seed {seed} step {step} slot {s}: {got} != {w}"
                        );
                    } else {
                        assert!(
                            (got - w).abs() <= 1e-9 * w.abs().max(1.0),
                            "seed {seed} step {step} slot {s}: {got} != {w}"
                        );
                    }
                }
                for s in (0..slots).filter(|&s| current[s].is_none()) {
                    assert_eq!(inc.rate(s), 0.0);
                }
            }
            assert!(partial_seen > 0, "seed {seed}: no partial solve was exercised");
            assert!(
                partial_with_arrival > 0,
                "seed {seed}: no arrival was solved partially"
            );
        }
    }

    #[test]
    fn a_departure_refills_only_the_flows_at_or_above_its_rate() {
        // Link 0 (cap 1) carries a and b; link 1 (cap 10) carries b, c, d.
        // Rates: a = b = 0.5 (link 0), c = d = 4.75. When d leaves (rate
        // 4.75), a and b are below it and keep their rates: only c is re-filled.
        let l = |ids: &[u32]| Demand::new(Links::new(ids).expect("links"));
        let mut inc = IncrementalMaxMin::new(&[1.0, 10.0]);
        inc.set(0, Some(l(&[0])));
        inc.set(1, Some(l(&[0, 1])));
        inc.set(2, Some(l(&[1])));
        inc.set(3, Some(l(&[1])));
        inc.solve();
        assert_eq!((inc.rate(0), inc.rate(2)), (0.5, 4.75));
        inc.set(3, None);
        let changed = inc.solve().to_vec();
        assert_eq!(changed, vec![2, 3]);
        assert_eq!((inc.rate(1), inc.rate(2), inc.rate(3)), (0.5, 9.5, 0.0));
        let stats = inc.stats();
        assert_eq!((stats.full, stats.partial, stats.demands_filled), (1, 1, 5));
    }

    #[test]
    fn an_arrival_refills_only_the_flows_at_or_above_its_level() {
        // Link 0 (cap 1) carries a and b at 0.5; link 1 (cap 10) carries c
        // alone at 10, link 2 (cap 4) carries d alone at 4. e arrives on
        // link 1: the root of min(10, x) + x = 10 is 5, so a and b (0.5) and
        // d (4) keep their rates without being filled again; c and e get 5.
        let l = |ids: &[u32]| Demand::new(Links::new(ids).expect("links"));
        let mut inc = IncrementalMaxMin::new(&[1.0, 10.0, 4.0]);
        inc.set(0, Some(l(&[0])));
        inc.set(1, Some(l(&[0])));
        inc.set(2, Some(l(&[1])));
        inc.set(3, Some(l(&[2])));
        inc.solve();
        let walked = inc.stats().roots_walked;
        inc.set(4, Some(l(&[1])));
        let changed = inc.solve().to_vec();
        assert_eq!(changed, vec![2, 4]);
        assert_eq!(
            (inc.rate(0), inc.rate(2), inc.rate(3), inc.rate(4)),
            (0.5, 5.0, 4.0, 5.0)
        );
        let stats = inc.stats();
        assert_eq!((stats.full, stats.partial, stats.demands_filled), (1, 1, 6));
        assert_eq!(stats.roots_walked, walked + 1, "the root on link 1 was walked");
    }
}
