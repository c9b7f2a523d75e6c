//! Every link split equally among the flows that cross it ([`LinkSplit`]):
//! the per-flow fair sharing of CoflowSim's `FAIR`
//! (`FlowSimulator.fairShare`, github.com/coflow/coflowsim), the baseline
//! of the Varys and Aalo papers' FB2010 figures.
//!
//! A link of capacity `C` crossed by `n` flows offers each of them `C / n`
//! (its *level*), and a flow moves at the smallest level on its path, or
//! at its cap if that is lower. What a flow cannot use of a link's share
//! is not handed to the others, so unlike max-min fairness
//! ([`super::levels`]) the allocation is not work-conserving: a link whose
//! flows are held back elsewhere stays partly idle.
//!
//! The allocation is held as [`super::levels`] holds it: one level per
//! link and one bottleneck per slot (a bundle of identical flows). A slot
//! joining or leaving changes the levels of its own links only, so a solve
//! looks again only at the slots on those links.

use super::levels::{Bottleneck, Changes, SolveStats};
use super::links::LinkId;
use super::maxmin::Demand;

/// The level of a link of capacity `capacity` crossed by `flows` flows.
fn level_of(capacity: f64, flows: u64) -> f64 {
    if flows == 0 {
        f64::INFINITY
    } else {
        capacity / flows as f64
    }
}

/// Equal per-flow shares of every link for a changing set of demands,
/// one per *slot*: [`LinkSplit::set`] demands, then [`LinkSplit::solve`];
/// read rates, bottlenecks, levels and loads as from
/// [`super::levels::LinkLevels`].
#[derive(Clone, Debug, Default)]
pub struct LinkSplit {
    capacity: Vec<f64>,
    binds: Vec<bool>,
    demand: Vec<Option<Demand>>,
    bottleneck: Vec<Bottleneck>,
    /// The per-flow rate each slot's flows were given at the last solve.
    rate: Vec<f64>,
    /// Slots crossing each binding link, in no particular order, and
    /// where each slot sits in the list of each of its links (by path position).
    on_link: Vec<Vec<u32>>,
    at: Vec<[u32; 4]>,
    /// Flows crossing each link.
    flows: Vec<u64>,
    /// Per link: its share of each of its flows (infinite if none or if
    /// it never binds).
    level: Vec<f64>,
    /// Per link: Σ rate × weight of the slots crossing it.
    load: Vec<f64>,
    /// Slots set, and binding links whose flows changed, since the last solve.
    pending: Vec<u32>,
    is_pending: Vec<bool>,
    touched: Vec<LinkId>,
    is_touched: Vec<bool>,
    /// Scratch of a solve: whether each changed link's level rose.
    rose: Vec<bool>,
    stats: SolveStats,
}

impl LinkSplit {
    /// No demands yet, on links of `capacity` (bytes per second), of
    /// which those with `binds[l] == false` never limit a rate.
    pub fn new(capacity: &[f64], binds: &[bool]) -> LinkSplit {
        let n = capacity.len();
        LinkSplit {
            capacity: capacity.to_vec(),
            binds: (0..n).map(|l| binds.get(l).copied().unwrap_or(true)).collect(),
            on_link: vec![Vec::new(); n],
            flows: vec![0; n],
            level: vec![f64::INFINITY; n],
            load: vec![0.0; n],
            is_touched: vec![false; n],
            ..LinkSplit::default()
        }
    }

    /// Slot `slot` now has `demand` (`None`: it does not move). Rates
    /// change at the next [`LinkSplit::solve`].
    pub fn set(&mut self, slot: usize, demand: Option<Demand>) {
        if slot >= self.demand.len() {
            let n = slot + 1;
            self.demand.resize(n, None);
            self.bottleneck.resize(n, Bottleneck::Idle);
            self.rate.resize(n, 0.0);
            self.at.resize(n, [0; 4]);
            self.is_pending.resize(n, false);
        }
        if self.demand[slot] == demand {
            return;
        }
        if !std::mem::replace(&mut self.is_pending[slot], true) {
            self.pending.push(slot as u32);
        }
        if let Some(old) = self.demand[slot] {
            self.detach(slot, old);
        }
        if let Some(new) = demand {
            self.attach(slot, new);
        }
        self.demand[slot] = demand;
    }

    /// Puts `slot`, with demand `d`, on its links (its load comes at the next solve).
    fn attach(&mut self, slot: usize, d: Demand) {
        for (k, &l) in d.links.as_slice().iter().enumerate() {
            let li = l as usize;
            self.flows[li] += u64::from(d.weight);
            if self.binds[li] {
                self.at[slot][k] = self.on_link[li].len() as u32;
                self.on_link[li].push(slot as u32);
                self.touch(l);
            }
        }
    }

    /// Takes `slot`, with demand `d`, off its links: its flows, its
    /// place in their lists and its load.
    fn detach(&mut self, slot: usize, d: Demand) {
        let load = std::mem::take(&mut self.rate[slot]) * f64::from(d.weight);
        for (k, &l) in d.links.as_slice().iter().enumerate() {
            let li = l as usize;
            self.flows[li] -= u64::from(d.weight);
            self.load[li] = (self.load[li] - load).max(0.0);
            if self.binds[li] {
                let i = self.at[slot][k] as usize;
                self.on_link[li].swap_remove(i);
                if let Some(&moved) = self.on_link[li].get(i) {
                    let m = moved as usize;
                    let pos = self.demand[m]
                        .and_then(|dm| dm.links.as_slice().iter().position(|&x| x == l))
                        .expect("a slot listed on a link crosses it");
                    self.at[m][pos] = i as u32;
                }
                self.touch(l);
            }
        }
    }

    fn touch(&mut self, l: LinkId) {
        if !std::mem::replace(&mut self.is_touched[l as usize], true) {
            self.touched.push(l);
        }
    }

    /// The per-flow rate of `slot` as of the last solve (0 if it does not move).
    pub fn rate(&self, slot: usize) -> f64 {
        self.rate.get(slot).copied().unwrap_or(0.0)
    }

    /// What set the rate of `slot` at the last solve: a link, its cap, or nothing.
    pub fn bottleneck(&self, slot: usize) -> Bottleneck {
        self.bottleneck.get(slot).copied().unwrap_or(Bottleneck::Idle)
    }

    /// The share of each flow on `link` (infinite if none cross it, or it never binds).
    pub fn level(&self, link: LinkId) -> f64 {
        self.level[link as usize]
    }

    /// One past the last link a slot can be bottlenecked at.
    pub fn bind_end(&self) -> usize {
        self.capacity.len()
    }

    /// Every link's load (Σ rate × weight of the slots crossing it), by id.
    pub fn loads(&self) -> &[f64] {
        &self.load
    }

    /// Solves so far.
    pub fn stats(&self) -> SolveStats {
        self.stats
    }

    /// Recomputes the levels of the links whose flows changed, and the
    /// bottleneck and rate of every slot on them, and writes what changed
    /// to `changes` (cleared first): slots whose demand or bottleneck
    /// changed, in slot order, and links whose level changed, in id order.
    pub fn solve(&mut self, changes: &mut Changes) {
        changes.slots.clear();
        changes.links.clear();
        if self.pending.is_empty() && self.touched.is_empty() {
            return;
        }
        let mut rose = std::mem::take(&mut self.rose);
        rose.clear();
        for &l in &self.touched {
            let li = l as usize;
            self.is_touched[li] = false;
            let level = level_of(self.capacity[li], self.flows[li]);
            if level.to_bits() != self.level[li].to_bits() {
                rose.push(level > self.level[li]);
                self.level[li] = level;
                changes.links.push(l);
            }
        }
        self.touched.clear();
        // Slots set since the last solve are reported whatever their bottleneck.
        let pending = std::mem::take(&mut self.pending);
        for &s in &pending {
            self.is_pending[s as usize] = false;
            self.rebottleneck(s as usize);
        }
        changes.slots.extend_from_slice(&pending);
        self.pending = pending;
        self.pending.clear();
        // A link whose level rose can only change the slots it held: any
        // other slot on it moves at most at its old level, and on a tie
        // its bottleneck has the lower id. One whose level fell may take
        // any slot on it.
        for (&l, &rose) in changes.links.iter().zip(&rose) {
            for i in 0..self.on_link[l as usize].len() {
                let s = self.on_link[l as usize][i] as usize;
                if rose && self.bottleneck[s] != Bottleneck::Link(l) {
                    continue;
                }
                if self.rebottleneck(s) {
                    changes.slots.push(s as u32);
                }
            }
        }
        self.rose = rose;
        changes.slots.sort_unstable();
        changes.slots.dedup();
        changes.links.sort_unstable();
        self.stats.solves += 1;
        self.stats.bottlenecks_moved += changes.slots.len() as u64;
    }

    /// Sets `slot`'s bottleneck and rate from its links' levels and its
    /// cap (the cap first on a tie, then the lowest link id), and moves
    /// its load on its links; returns whether its bottleneck changed. A
    /// slot with no demand was taken off its links, load and all, when it
    /// was set.
    fn rebottleneck(&mut self, slot: usize) -> bool {
        let (bottleneck, rate) = match self.demand[slot] {
            None => (Bottleneck::Idle, 0.0),
            Some(d) => {
                let mut best = (Bottleneck::Cap, d.cap.max(0.0));
                for &l in d.links.as_slice() {
                    let level = self.level[l as usize];
                    let wins = match best.0 {
                        Bottleneck::Link(b) => level < best.1 || (level == best.1 && l < b),
                        _ => level < best.1,
                    };
                    if wins {
                        best = (Bottleneck::Link(l), level);
                    }
                }
                let old = std::mem::replace(&mut self.rate[slot], best.1);
                if old.to_bits() != best.1.to_bits() {
                    let moved = (best.1 - old) * f64::from(d.weight);
                    for &l in d.links.as_slice() {
                        let load = &mut self.load[l as usize];
                        *load = (*load + moved).max(0.0);
                    }
                }
                best
            }
        };
        debug_assert_eq!(self.rate[slot], rate);
        std::mem::replace(&mut self.bottleneck[slot], bottleneck) != bottleneck
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::handover_tests::{fabric, flow, ms, run};
    use crate::net::links::Links;
    use crate::net::FluidNetwork;
    use ocslab_core::coflow::by_name;
    use ocslab_core::Nanos;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn on(links: &[LinkId]) -> Demand {
        Demand::new(Links::new(links).expect("at most 4 links"))
    }

    fn solve(s: &mut LinkSplit) -> Changes {
        let mut c = Changes::default();
        s.solve(&mut c);
        c
    }

    /// Links 0 and 1 of 12. a crosses both, b link 0, c and d link 1.
    /// - Link 0 offers 12 / 2 = 6 a flow, link 1 12 / 3 = 4: a gets 4
    ///   (link 1), b 6 (link 0), c and d 4. Link 0 carries 10 of its 12:
    ///   max-min would give b 8.
    /// - d leaves: link 1 offers 6, a ties at 6 on both links and takes
    ///   link 0 (the lower id); both links are full.
    /// - a capped at 2 is held by its cap, and still counts on its links.
    #[test]
    fn each_flow_gets_its_smallest_equal_share_and_the_rest_stays_idle() {
        let mut s = LinkSplit::new(&[12.0, 12.0], &[true, true]);
        s.set(0, Some(on(&[0, 1])));
        s.set(1, Some(on(&[0])));
        s.set(2, Some(on(&[1])));
        s.set(3, Some(on(&[1])));
        let c = solve(&mut s);
        assert_eq!(c.slots, [0, 1, 2, 3]);
        assert_eq!(c.links, [0, 1]);
        assert_eq!(
            (0..4).map(|i| s.rate(i)).collect::<Vec<_>>(),
            [4.0, 6.0, 4.0, 4.0]
        );
        assert_eq!(s.bottleneck(0), Bottleneck::Link(1));
        assert_eq!(s.bottleneck(1), Bottleneck::Link(0));
        assert_eq!(s.loads(), [10.0, 12.0]);

        s.set(3, None);
        let c = solve(&mut s);
        assert_eq!(c.links, [1], "link 0 keeps its two flows");
        assert_eq!(c.slots, [0, 3], "a's bottleneck moved, d left");
        assert_eq!([s.rate(0), s.rate(1), s.rate(2), s.rate(3)], [6.0, 6.0, 6.0, 0.0]);
        assert_eq!(s.bottleneck(0), Bottleneck::Link(0));
        assert_eq!(s.bottleneck(3), Bottleneck::Idle);
        assert_eq!(s.loads(), [12.0, 12.0]);

        s.set(
            0,
            Some(Demand {
                cap: 2.0,
                ..on(&[0, 1])
            }),
        );
        let c = solve(&mut s);
        assert_eq!(c.slots, [0]);
        assert!(c.links.is_empty(), "a capped flow still takes its share's place");
        assert_eq!([s.rate(0), s.rate(1), s.rate(2)], [2.0, 6.0, 6.0]);
        assert_eq!(s.bottleneck(0), Bottleneck::Cap);
        assert_eq!(s.loads(), [8.0, 8.0]);
    }

    /// A slot of weight 3 counts as three flows on each of its links.
    #[test]
    fn a_bundle_counts_each_of_its_flows() {
        let mut s = LinkSplit::new(&[8.0], &[true]);
        s.set(
            0,
            Some(Demand {
                weight: 3,
                ..on(&[0])
            }),
        );
        s.set(1, Some(on(&[0])));
        solve(&mut s);
        assert_eq!([s.rate(0), s.rate(1)], [2.0, 2.0]);
        assert_eq!(s.loads(), [8.0]);
    }

    /// Random arrivals, departures and changes of weight, cap and route
    /// on six links (one never binds): after every solve each slot's rate
    /// and bottleneck are what the definition gives from scratch, each
    /// link's load is the sum over the slots crossing it, and the slots
    /// reported are exactly those set since the last solve or whose
    /// bottleneck moved.
    #[test]
    fn incremental_solves_equal_the_definition_on_random_events() {
        let capacity = [10.0, 7.0, 13.0, 4.0, 9.0, 1.0];
        let binds = [true, true, true, true, true, false];
        for seed in 0..40 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let mut s = LinkSplit::new(&capacity, &binds);
            let slots = 24;
            let mut demand: Vec<Option<Demand>> = vec![None; slots];
            let mut before = vec![Bottleneck::Idle; slots];
            for _ in 0..200 {
                let mut set = Vec::new();
                for _ in 0..rng.random_range(1..4) {
                    let i = rng.random_range(0..slots);
                    let d = rng.random_bool(0.7).then(|| {
                        let mut ids: Vec<LinkId> = (0..rng.random_range(1..=4))
                            .map(|_| rng.random_range(0..6))
                            .collect();
                        ids.sort_unstable();
                        ids.dedup();
                        let mut d = on(&ids);
                        d.weight = rng.random_range(1..=4);
                        if rng.random_bool(0.2) || ids == [5] {
                            d.cap = rng.random_range(0.5..6.0);
                        }
                        d
                    });
                    s.set(i, d);
                    if demand[i] != d {
                        set.push(i as u32);
                    }
                    demand[i] = d;
                }
                let c = solve(&mut s);
                let flows = |l: usize| -> u64 {
                    demand
                        .iter()
                        .flatten()
                        .filter(|d| d.links.as_slice().contains(&(l as LinkId)))
                        .map(|d| u64::from(d.weight))
                        .sum()
                };
                let mut expected_changed = set.clone();
                for i in 0..slots {
                    let (want_b, want_r) = match demand[i] {
                        None => (Bottleneck::Idle, 0.0),
                        Some(d) => {
                            let mut best = (Bottleneck::Cap, d.cap);
                            for &l in d.links.as_slice() {
                                let li = l as usize;
                                let level = if binds[li] {
                                    capacity[li] / flows(li) as f64
                                } else {
                                    f64::INFINITY
                                };
                                let wins = match best.0 {
                                    Bottleneck::Link(b) => level < best.1 || (level == best.1 && l < b),
                                    _ => level < best.1,
                                };
                                if wins {
                                    best = (Bottleneck::Link(l), level);
                                }
                            }
                            best
                        }
                    };
                    assert_eq!(s.bottleneck(i), want_b, "seed {seed}, slot {i}");
                    assert_eq!(s.rate(i), want_r, "seed {seed}, slot {i}");
                    if want_b != before[i] {
                        expected_changed.push(i as u32);
                    }
                    before[i] = want_b;
                }
                expected_changed.sort_unstable();
                expected_changed.dedup();
                assert_eq!(c.slots, expected_changed, "seed {seed}");
                for (l, &load) in s.loads().iter().enumerate() {
                    let want: f64 = (0..slots)
                        .filter(|&i| demand[i].is_some_and(|d| d.links.as_slice().contains(&(l as LinkId))))
                        .map(|i| s.rate(i) * f64::from(demand[i].map_or(0, |d| d.weight)))
                        .sum();
                    assert!(
                        (load - want).abs() <= 1e-9 * want.max(1.0),
                        "seed {seed}, link {l}: {load} vs {want}"
                    );
                }
            }
        }
    }

    /// On the handover fabric (1 MB/s ToR links), A: r0 → r1 (1 MB) and
    /// B: r0 → r2, C and D: r1 → r2 (3 MB each). r2's downlink offers its
    /// three flows 1/3 MB/s; r0's uplink offers A and B 1/2. Split equally,
    /// A moves at 1/2 (done at 2 s) and a sixth of r0's uplink stays idle;
    /// max-min gives A the 2/3 that B leaves (done at 1.5 s). B, C and D
    /// get 1/3 throughout in both, and are done at 9 s.
    #[test]
    fn fair_split_leaves_idle_what_max_min_hands_on() {
        let flows = [
            flow(1, 0, 1, 1_000_000),
            flow(2, 0, 2, 3_000_000),
            flow(3, 1, 2, 3_000_000),
            flow(4, 1, 2, 3_000_000),
        ];
        let finish = |policy: &str| {
            let mut net = FluidNetwork::on_fabric(fabric(), by_name(policy).expect("known policy"));
            net.add_flows(Nanos::ZERO, &flows);
            let mut done: Vec<(u64, Nanos)> = run(&mut net).into_iter().map(|(f, at, ..)| (f, at)).collect();
            done.sort();
            done
        };
        let nine = ms(9_000);
        assert_eq!(
            finish("fair-split"),
            [(1, ms(2_000)), (2, nine), (3, nine), (4, nine)]
        );
        assert_eq!(finish("fair"), [(1, ms(1_500)), (2, nine), (3, nine), (4, nine)]);
    }
}
