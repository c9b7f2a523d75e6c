//! Max-min fair rates kept up to date from event to event, recomputing only
//! what an event can change ([`IncrementalMaxMin`]).
//!
//! Progressive filling (Bertsekas & Gallager, *Data Networks*, Sec. 6.5.2)
//! raises a common water level; a flow freezes when the first of its links
//! saturates (or it reaches its cap), at the level of that moment, and the
//! levels at which flows freeze only grow. Take a flow `e` that leaves (or a
//! bundle that loses members) and let `θ` be its rate before. Below the
//! level `θ` nothing changes:
//!
//! - `e` was still unfrozen up to `θ`, so none of its links saturated below
//!   `θ`; without (part of) `e` their load is lower, so they still do not;
//! - every other link carries the same flows at the same rates up to `θ`,
//!   so it saturates (or not) below `θ` exactly as before.
//!
//! Hence every flow whose rate was below `θ` keeps it, and only the flows
//! at `θ` or above need water-filling again, on what the others leave of
//! each link (capacity − their load). With several departures at one
//! instant `θ` is the smallest of their rates. An arrival, or a flow that
//! changes route or cap, can lower rates at any level, so it triggers a
//! full solve. Flows that leave are mostly the fast ones (they finish
//! first), so a departure usually re-fills a small part of the fabric.
//!
//! A full solve is [`WaterFill::fill`] over all demands in slot order, the
//! same numbers as [`super::maxmin::max_min`]; a partial one differs from
//! it only by float rounding (the residual capacities are computed in
//! another order). The property test below checks both on random events.

use super::maxmin::{Demand, WaterFill};

/// Rate of a slot with no demand (not moving).
const IDLE: f64 = -1.0;

/// How the solves went, for benchmarks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SolveStats {
    /// Solves over every demand (after an arrival or a change of route).
    pub full: u64,
    /// Solves over the demands at or above the departures' rates.
    pub partial: u64,
    /// Demands water-filled, summed over all solves.
    pub demands_filled: u64,
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
    water: WaterFill,
    subset: Vec<u32>,
    demands: Vec<Demand>,
    rates: Vec<f64>,
    residual: Vec<f64>,
    changed: Vec<u32>,
    stats: SolveStats,
}

impl IncrementalMaxMin {
    /// No demands yet, on links of `capacity` (bytes per second).
    pub fn new(capacity: &[f64]) -> IncrementalMaxMin {
        IncrementalMaxMin {
            capacity: capacity.to_vec(),
            load: vec![0.0; capacity.len()],
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
            }
        }
    }

    /// Recomputes rates after the changes since the last call. Returns the
    /// slots whose demand or rate changed, in slot order.
    pub fn solve(&mut self) -> &[u32] {
        self.changed.clear();
        if self.pending_list.is_empty() {
            return &self.changed;
        }
        // The lowest level a change can reach; -inf: all of them (full solve).
        let mut floor = f64::INFINITY;
        for &s in &self.pending_list {
            let s = s as usize;
            match (&self.solved[s], &self.demand[s]) {
                (None, None) => {}
                (None, Some(_)) => floor = f64::NEG_INFINITY,
                (Some(old), new) => {
                    let departure = new
                        .is_none_or(|n| n.links == old.links && n.cap == old.cap && n.weight <= old.weight);
                    floor = floor.min(if departure {
                        self.rate[s]
                    } else {
                        f64::NEG_INFINITY
                    });
                }
            }
        }
        self.subset.clear();
        let mut moving = 0usize;
        for (s, &r) in self.rate.iter().enumerate() {
            if self.pending[s] {
                if self.demand[s].is_some() {
                    self.subset.push(s as u32);
                }
            } else if r >= 0.0 {
                moving += 1;
                if r >= floor {
                    self.subset.push(s as u32);
                }
            }
        }
        let full = 2 * self.subset.len() > moving + self.pending_list.len();
        if full {
            self.stats.full += 1;
            self.subset.clear();
            self.subset.extend(
                (0..self.demand.len())
                    .filter(|&s| self.demand[s].is_some())
                    .map(|s| s as u32),
            );
            self.load.iter_mut().for_each(|l| *l = 0.0);
        } else {
            self.stats.partial += 1;
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
            let total = r * f64::from(d.weight);
            for &l in d.links.as_slice() {
                self.load[l as usize] += total;
            }
            if self.pending[s] || self.rate[s].to_bits() != r.to_bits() {
                self.changed.push(s as u32);
            }
            self.rate[s] = r;
        }
        for &s in &self.pending_list {
            let s = s as usize;
            if self.demand[s].is_none() {
                self.rate[s] = IDLE;
                self.changed.push(s as u32);
            }
            self.solved[s] = self.demand[s];
            self.pending[s] = false;
        }
        self.pending_list.clear();
        self.changed.sort_unstable();
        &self.changed
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

    /// Random arrivals, departures (bundles that shrink or empty) and
    /// changes of route: after every solve each slot's rate equals the
    /// from-scratch max-min rate, and full solves are bit-identical to it.
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
            for step in 0..300 {
                for _ in 0..rng.random_range(1..=3) {
                    let s = rng.random_range(0..slots);
                    let next = match (current[s], rng.random_range(0..10)) {
                        (Some(d), 0..=5) if d.weight > 1 => Some(Demand {
                            weight: d.weight - rng.random_range(1..d.weight),
                            ..d
                        }),
                        (Some(_), 0..=6) => None,
                        (None, 0..=3) | (Some(_), _) => Some(demand(&mut rng, links)),
                        (None, _) => None,
                    };
                    current[s] = next;
                    inc.set(s, next);
                }
                let before = inc.stats();
                inc.solve();
                let was_full = inc.stats().full > before.full;
                partial_seen += usize::from(!was_full);
                let live: Vec<usize> = (0..slots).filter(|&s| current[s].is_some()).collect();
                let ds: Vec<Demand> = live.iter().filter_map(|&s| current[s]).collect();
                let want = max_min(&capacity, &ds);
                for (&s, &w) in live.iter().zip(&want) {
                    let got = inc.rate(s);
                    if was_full {
                        assert_eq!(got.to_bits(), w.to_bits(), "seed {seed} step {step} slot {s}");
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
        assert_eq!(
            inc.stats(),
            SolveStats {
                full: 1,
                partial: 1,
                demands_filled: 5
            }
        );
    }
}
