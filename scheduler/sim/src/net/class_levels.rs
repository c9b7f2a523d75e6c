//! Strict priority between classes of slots, max-min fairness inside each
//! ([`ClassLevels`]): the rates of a policy that orders coflows
//! ([`ocslab_core::coflow::CoflowPolicy::orders_coflows`]). FIFO, the baseline of
//! Varys (Chowdhury, Zhong & Stoica, SIGCOMM'14, Sec. 7) and Orchestra,
//! serves coflows in arrival order: each coflow's flows share max-min
//! fairly what the coflows before it left.
//!
//! A class is one coflow. Classes are served in the policy's order, then
//! the coflows it does not name in id order; each class's slots get the
//! max-min fair rates on what the classes before it left of every link.
//! Each class keeps its own max-min solver ([`LinkLevels`], with the
//! host-pair matrix where the fabric allows it), whose link capacities are
//! what its turn finds: a class solved again resumes from its last solve
//! as the shared solver does, from the first freeze that its own slots'
//! changes or its links' new capacities reach.
//!
//! As in [`super::levels`], the allocation is held as levels: a slot's
//! rate is the level of the link where its class's filling froze it (or
//! its cap). The same link has a level per class, so a class has a block of
//! *class links* of its own, `class × links + link`, and the fluid network
//! keeps one service clock per class link: an event that changes a level
//! rebases one clock, whatever the number of bundles on it.
//!
//! ## Keeping a class's last solve
//!
//! A solve walks the classes in order, but solves a class again only if it
//! must. When none of its slots changed, its last allocation is still the
//! max-min fair one if (1) each link where it froze flows (its bottlenecks,
//! saturated by it) has, bit for bit, the capacity it had then, and (2) each
//! of its other links still has at least what the class uses of it: the
//! allocation is then feasible and every flow still has a saturated link on
//! which no flow of its class gets more, which characterizes the max-min
//! fair allocation, and that allocation is unique (Bertsekas & Gallager,
//! *Data Networks*, Sec. 6.5.2). Under FIFO most events change the first
//! coflows' rates only where they do not saturate a link, which the coflows
//! behind them see as more or less room on links they do not saturate
//! either; such a class costs a comparison per link instead of a solve.

use super::fasthash::FastMap;
use super::levels::{Bottleneck, Changes, LinkLevels, SolveStats};
use super::links::HostPairs;
use super::links::LinkId;
use super::maxmin::Demand;
use ocslab_core::model::coflow::CoflowId;

/// A class's handle: its class links are `class × links + link`.
pub type ClassId = u32;

/// In a class's list of local slots: the local slot is free.
const FREE: u32 = u32::MAX;

/// One class: its solver, its slots, and its links' loads.
#[derive(Clone, Debug)]
struct Class {
    /// Its coflow; `None` while the handle is free.
    coflow: Option<CoflowId>,
    /// Max-min rates of its slots, by local slot, on the capacity its turn finds.
    solver: LinkLevels,
    /// The (network's) slot at each local slot, or [`FREE`].
    slots: Vec<u32>,
    free: Vec<u32>,
    /// Slots in it.
    members: u32,
    /// Whether a slot joined, left or changed demand since its last solve.
    dirty: bool,
    /// The binding links its slots cross, as of its last solve.
    links: Vec<LinkId>,
    /// Its load on every link, as of its last solve (added into [`ClassLevels::loads`]).
    load: Vec<f64>,
}

/// Strict priority between classes, max-min fair rates inside each, for a
/// changing set of slots (bundles of identical flows) on fixed link
/// capacities: [`ClassLevels::set`] a slot's demand and class,
/// [`ClassLevels::set_order`] the classes' order, then
/// [`ClassLevels::solve`]; read rates, bottlenecks (class links), levels
/// and loads as from [`LinkLevels`].
#[derive(Clone, Debug, Default)]
pub struct ClassLevels {
    capacity: Vec<f64>,
    binds: Vec<bool>,
    /// The host-pair layout each class's solver keeps its matrix by, if any.
    pairs: Option<HostPairs>,
    classes: Vec<Class>,
    of_coflow: FastMap<CoflowId, ClassId>,
    /// Handles of classes let go, to be reused (with their solvers).
    free: Vec<ClassId>,
    /// The coflows in service order, as the policy last gave them.
    order: Vec<CoflowId>,
    /// Whether the order changed since the last solve.
    reordered: bool,
    /// Per slot: its class and its local slot there.
    class: Vec<Option<ClassId>>,
    local: Vec<u32>,
    pending: Vec<u32>,
    is_pending: Vec<bool>,
    /// Per link: Σ rate × weight of the slots crossing it.
    load: Vec<f64>,
    // Scratch space of a solve.
    residual: Vec<f64>,
    sequence: Vec<ClassId>,
    in_sequence: Vec<bool>,
    unordered: Vec<(CoflowId, ClassId)>,
    local_changes: Changes,
    stats: SolveStats,
}

impl ClassLevels {
    /// Most hosts for which each class keeps a host-pair matrix (its rows
    /// and columns take 8 × hosts² bytes).
    const MATRIX_HOSTS: u32 = 256;

    /// No slots yet, on links of `capacity` (bytes per second), of which
    /// those with `binds[l] == false` never limit a rate; each class's
    /// solver keeps its host pairs as a matrix if `pairs` is given (and the
    /// hosts are few enough).
    pub fn new(capacity: &[f64], binds: &[bool], pairs: Option<HostPairs>) -> ClassLevels {
        let n = capacity.len();
        ClassLevels {
            capacity: capacity.to_vec(),
            binds: (0..n).map(|l| binds.get(l).copied().unwrap_or(true)).collect(),
            pairs: pairs.filter(|p| p.hosts <= Self::MATRIX_HOSTS),
            load: vec![0.0; n],
            residual: capacity.to_vec(),
            ..ClassLevels::default()
        }
    }

    fn links(&self) -> usize {
        self.capacity.len()
    }

    /// The class of `coflow`'s slots (a new one if it has none). A class
    /// that no slot joins by the next solve is let go then.
    pub fn class_of(&mut self, coflow: CoflowId) -> ClassId {
        if let Some(&c) = self.of_coflow.get(&coflow) {
            return c;
        }
        let c = match self.free.pop() {
            Some(c) => c,
            None => {
                let solver = match self.pairs {
                    Some(p) => LinkLevels::with_host_pairs(&self.capacity, &self.binds, p),
                    None => LinkLevels::new(&self.capacity, &self.binds),
                };
                self.classes.push(Class {
                    coflow: None,
                    solver,
                    slots: Vec::new(),
                    free: Vec::new(),
                    members: 0,
                    dirty: false,
                    links: Vec::new(),
                    load: vec![0.0; self.capacity.len()],
                });
                self.in_sequence.push(false);
                (self.classes.len() - 1) as ClassId
            }
        };
        self.classes[c as usize].coflow = Some(coflow);
        self.of_coflow.insert(coflow, c);
        c
    }

    /// The coflows in service order, highest priority first: each class
    /// takes its max-min share of what the ones before it left; the
    /// classes of coflows not named follow in coflow-id order. Rates change
    /// at the next solve.
    pub fn set_order(&mut self, order: &[CoflowId]) {
        if self.order != order {
            self.order.clear();
            self.order.extend_from_slice(order);
            self.reordered = true;
        }
    }

    /// Slot `slot` now has `demand` (`None`: it does not move) and belongs
    /// to `class` (`None`: to none, the slot is let go). Rates change at the
    /// next [`ClassLevels::solve`].
    pub fn set(&mut self, slot: usize, demand: Option<Demand>, class: Option<ClassId>) {
        if slot >= self.class.len() {
            self.class.resize(slot + 1, None);
            self.local.resize(slot + 1, FREE);
            self.is_pending.resize(slot + 1, false);
        }
        if self.class[slot] != class {
            if let Some(old) = self.class[slot] {
                let cl = &mut self.classes[old as usize];
                let local = self.local[slot];
                cl.solver.set(local as usize, None);
                cl.slots[local as usize] = FREE;
                cl.free.push(local);
                cl.members -= 1;
                cl.dirty = true;
                self.local[slot] = FREE;
            }
            if let Some(new) = class {
                let cl = &mut self.classes[new as usize];
                let local = cl.free.pop().unwrap_or_else(|| {
                    cl.slots.push(FREE);
                    (cl.slots.len() - 1) as u32
                });
                cl.slots[local as usize] = slot as u32;
                cl.members += 1;
                self.local[slot] = local;
            }
            self.class[slot] = class;
        } else if class.is_none() {
            return;
        }
        if let Some(c) = class {
            let cl = &mut self.classes[c as usize];
            cl.solver.set(self.local[slot] as usize, demand);
            cl.dirty = true;
        }
        if !self.is_pending[slot] {
            self.is_pending[slot] = true;
            self.pending.push(slot as u32);
        }
    }

    /// The class of `slot` and its local slot there.
    fn place(&self, slot: usize) -> Option<(&Class, usize, usize)> {
        let c = (*self.class.get(slot)?)? as usize;
        Some((&self.classes[c], c, self.local[slot] as usize))
    }

    /// The per-flow rate of `slot` as of the last solve (0 if it does not move).
    pub fn rate(&self, slot: usize) -> f64 {
        self.place(slot)
            .map_or(0.0, |(cl, _, local)| cl.solver.rate(local))
    }

    /// What set the rate of `slot` at the last solve: a class link, its
    /// cap, or nothing.
    pub fn bottleneck(&self, slot: usize) -> Bottleneck {
        let Some((cl, c, local)) = self.place(slot) else {
            return Bottleneck::Idle;
        };
        match cl.solver.bottleneck(local) {
            Bottleneck::Link(l) => Bottleneck::Link(self.class_link(c, l)),
            b => b,
        }
    }

    /// Class `c`'s own copy of link `l`.
    fn class_link(&self, c: usize, l: LinkId) -> LinkId {
        (c * self.links()) as LinkId + l
    }

    /// The rate of the slots bottlenecked at class link `link` (infinite if none).
    pub fn level(&self, link: LinkId) -> f64 {
        let n = self.links();
        let (c, l) = (link as usize / n, link as usize % n);
        self.classes[c].solver.level(l as LinkId)
    }

    /// One past the last class link: a slot is only ever bottlenecked
    /// before it (it grows as classes are added).
    pub fn bind_end(&self) -> usize {
        self.classes.len() * self.links()
    }

    /// The loads of all links (not class links), by id.
    pub fn loads(&self) -> &[f64] {
        &self.load
    }

    /// Solves so far: the classes' solvers' figures added up, with the
    /// classes solved and kept.
    pub fn stats(&self) -> SolveStats {
        let mut s = self.stats;
        for cl in &self.classes {
            let t = cl.solver.stats();
            s.demands_filled += t.demands_filled;
            s.freezes += t.freezes;
            s.freezes_repeated += t.freezes_repeated;
            s.departures_at_caps += t.departures_at_caps;
            s.solves_at_caps += t.solves_at_caps;
            s.orders_followed += t.orders_followed;
            s.orders_left += t.orders_left;
            s.row_solves += t.row_solves;
            s.row_moves += t.row_moves;
        }
        s
    }

    /// Recomputes the allocation after the changes since the last call and
    /// writes what changed to `changes` (cleared first): slots whose demand
    /// or bottleneck changed, in slot order, and class links whose level
    /// changed, in id order.
    pub fn solve(&mut self, changes: &mut Changes) {
        changes.slots.clear();
        changes.links.clear();
        if self.pending.is_empty() && !self.reordered {
            return;
        }
        self.reordered = false;
        let mut sequence = std::mem::take(&mut self.sequence);
        self.service_order(&mut sequence);
        self.residual.copy_from_slice(&self.capacity);
        for &c in &sequence {
            if !self.keeps_last_solve(c) {
                self.solve_class(c, changes);
            }
            let cl = &self.classes[c as usize];
            for &l in &cl.links {
                let r = &mut self.residual[l as usize];
                *r = (*r - cl.solver.load(l)).max(0.0);
            }
        }
        self.sequence = sequence;
        // Slots set since the last solve are reported whatever their bottleneck.
        for &s in &self.pending {
            self.is_pending[s as usize] = false;
        }
        changes.slots.append(&mut self.pending);
        changes.slots.sort_unstable();
        changes.slots.dedup();
        changes.links.sort_unstable();
        self.let_go_of_empty_classes();
        self.stats.solves += 1;
        self.stats.bottlenecks_moved += changes.slots.len() as u64;
    }

    /// The classes in service order: those of the ordered coflows, then
    /// the others by coflow id.
    fn service_order(&mut self, sequence: &mut Vec<ClassId>) {
        sequence.clear();
        for coflow in &self.order {
            if let Some(&c) = self.of_coflow.get(coflow) {
                if !std::mem::replace(&mut self.in_sequence[c as usize], true) {
                    sequence.push(c);
                }
            }
        }
        self.unordered.clear();
        for (c, cl) in self.classes.iter().enumerate() {
            match cl.coflow {
                Some(coflow) if !self.in_sequence[c] => self.unordered.push((coflow, c as ClassId)),
                _ => {}
            }
        }
        self.unordered.sort_unstable();
        sequence.extend(self.unordered.iter().map(|&(_, c)| c));
        for &c in sequence.iter() {
            self.in_sequence[c as usize] = false;
        }
    }

    /// Whether class `c`'s last solve stands (see the module's doc): none
    /// of its slots changed, each link it froze flows at has the capacity
    /// it had then, bit for bit, and each other link at least what the
    /// class uses of it.
    fn keeps_last_solve(&mut self, c: ClassId) -> bool {
        let cl = &self.classes[c as usize];
        let stands = !cl.dirty
            && cl.links.iter().all(|&l| {
                let r = self.residual[l as usize];
                if cl.solver.level(l).is_finite() {
                    r.to_bits() == cl.solver.capacity(l).to_bits()
                } else {
                    r >= cl.solver.load(l)
                }
            });
        if stands {
            self.stats.classes_kept += 1;
        }
        stands
    }

    /// Solves class `c` on what its turn finds, and adds what changed to `changes`.
    fn solve_class(&mut self, c: ClassId, changes: &mut Changes) {
        let n = self.links();
        let base = c as usize * n;
        let cl = &mut self.classes[c as usize];
        if cl.dirty {
            for l in 0..n as LinkId {
                if self.binds[l as usize] && cl.solver.in_use(l) {
                    cl.solver.set_capacity(l, self.residual[l as usize]);
                }
            }
        } else {
            // Its slots, so the links they cross, are as at its last solve.
            for &l in &cl.links {
                cl.solver.set_capacity(l, self.residual[l as usize]);
            }
        }
        cl.solver.solve(&mut self.local_changes);
        self.stats.classes_recapacitated += u64::from(!cl.dirty);
        cl.dirty = false;
        self.stats.classes_filled += 1;
        for &s in &self.local_changes.slots {
            let slot = cl.slots[s as usize];
            if slot != FREE {
                changes.slots.push(slot);
            }
        }
        changes
            .links
            .extend(self.local_changes.links.iter().map(|&l| (base as LinkId) + l));
        cl.links.clear();
        for (l, (mine, &now)) in cl.load.iter_mut().zip(cl.solver.loads()).enumerate() {
            if self.binds[l] && cl.solver.in_use(l as LinkId) {
                cl.links.push(l as LinkId);
            }
            if mine.to_bits() != now.to_bits() {
                self.load[l] = (self.load[l] - *mine + now).max(0.0);
                *mine = now;
            }
        }
    }

    /// Classes with no slot left go back to the free handles, with their
    /// solvers (which hold no demand, so no level, by now).
    fn let_go_of_empty_classes(&mut self) {
        for c in 0..self.classes.len() {
            let cl = &mut self.classes[c];
            let Some(coflow) = cl.coflow.filter(|_| cl.members == 0) else {
                continue;
            };
            debug_assert!(cl.links.is_empty(), "an empty class keeps links");
            self.of_coflow.remove(&coflow);
            cl.coflow = None;
            self.free.push(c as ClassId);
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
    use std::collections::BTreeSet;

    fn on(links: &[LinkId]) -> Demand {
        Demand::new(Links::new(links).expect("at most 4 links"))
    }

    fn solve(cl: &mut ClassLevels) -> Changes {
        let mut c = Changes::default();
        cl.solve(&mut c);
        c
    }

    /// Links 0 and 1 of 10, link 2 of 4. Coflow 1: a over links 0 and 2.
    /// Coflow 2: b over link 0, c over link 1.
    /// - 1 before 2: a gets 4 (link 2 full), b what a left of link 0 (6),
    ///   c all of link 1 (10).
    /// - 2 before 1: b and c get 10 each, and a nothing (link 0 is full).
    /// - No order: coflows follow in id order, as 1 before 2.
    #[test]
    fn the_first_coflow_takes_its_share_and_the_next_what_is_left() {
        let mut cl = ClassLevels::new(&[10.0, 10.0, 4.0], &[true; 3], None);
        let (one, two) = (cl.class_of(CoflowId(1)), cl.class_of(CoflowId(2)));
        cl.set(0, Some(on(&[0, 2])), Some(one));
        cl.set(1, Some(on(&[0])), Some(two));
        cl.set(2, Some(on(&[1])), Some(two));
        let link = |c: ClassId, l: LinkId| Bottleneck::Link(c * 3 + l);

        cl.set_order(&[CoflowId(1), CoflowId(2)]);
        let changes = solve(&mut cl);
        assert_eq!(changes.slots, [0, 1, 2]);
        assert_eq!([cl.rate(0), cl.rate(1), cl.rate(2)], [4.0, 6.0, 10.0]);
        assert_eq!(cl.bottleneck(0), link(one, 2));
        assert_eq!(cl.bottleneck(1), link(two, 0));
        assert_eq!(cl.bottleneck(2), link(two, 1));
        assert_eq!(cl.level(two * 3), 6.0);
        assert_eq!(cl.loads(), [10.0, 10.0, 4.0]);

        cl.set_order(&[CoflowId(2), CoflowId(1)]);
        let changes = solve(&mut cl);
        assert_eq!([cl.rate(0), cl.rate(1), cl.rate(2)], [0.0, 10.0, 10.0]);
        assert_eq!(cl.bottleneck(0), link(one, 0), "a is held at link 0, full");
        assert_eq!(changes.slots, [0], "only a's bottleneck moved");
        assert_eq!(cl.loads(), [10.0, 10.0, 0.0]);

        cl.set_order(&[]);
        solve(&mut cl);
        assert_eq!([cl.rate(0), cl.rate(1), cl.rate(2)], [4.0, 6.0, 10.0]);
    }

    /// Link 0 of 10, link 1 of 2. Coflow 1: a over link 0, capped at 5.
    /// Coflow 2: b over links 0 and 1, held by link 1 at 2.
    /// a's cap moving to 6 leaves 4 on link 0, still at least b's 2: coflow
    /// 2 keeps its last solve. At 9 only 1 is left: coflow 2 is solved
    /// again, b gets 1 at link 0.
    #[test]
    fn a_class_keeps_its_solve_while_only_its_unsaturated_links_move() {
        let mut cl = ClassLevels::new(&[10.0, 2.0], &[true; 2], None);
        let (one, two) = (cl.class_of(CoflowId(1)), cl.class_of(CoflowId(2)));
        let capped = |cap: f64| Demand { cap, ..on(&[0]) };
        cl.set(0, Some(capped(5.0)), Some(one));
        cl.set(1, Some(on(&[0, 1])), Some(two));
        cl.set_order(&[CoflowId(1), CoflowId(2)]);
        solve(&mut cl);
        assert_eq!([cl.rate(0), cl.rate(1)], [5.0, 2.0]);
        let before = cl.stats();

        cl.set(0, Some(capped(6.0)), Some(one));
        let changes = solve(&mut cl);
        assert_eq!([cl.rate(0), cl.rate(1)], [6.0, 2.0]);
        assert_eq!(changes.slots, [0]);
        let after = cl.stats();
        assert_eq!(after.classes_filled - before.classes_filled, 1, "coflow 1 only");
        assert_eq!(after.classes_kept - before.classes_kept, 1, "coflow 2 kept");
        assert_eq!(cl.loads(), [8.0, 2.0]);

        cl.set(0, Some(capped(9.0)), Some(one));
        let changes = solve(&mut cl);
        assert_eq!([cl.rate(0), cl.rate(1)], [9.0, 1.0]);
        assert_eq!(cl.bottleneck(1), Bottleneck::Link(two * 2));
        assert_eq!(changes.slots, [0, 1]);
        assert_eq!(cl.stats().classes_filled - after.classes_filled, 2);
        assert_eq!(
            cl.stats().classes_recapacitated - after.classes_recapacitated,
            1,
            "coflow 2 for link 0's new capacity alone"
        );
        assert_eq!(after.classes_recapacitated, before.classes_recapacitated);
    }

    /// Random slots joining, leaving, changing demand and moving between
    /// coflows, and random orders, on random links (some never binding):
    /// after every solve each slot's rate equals the from-scratch strict
    /// priority one (each coflow's max-min rates on what the coflows before
    /// it left), each rate is its bottleneck's level (a link of its own
    /// coflow's class), loads are the sums over the slots, and every slot
    /// whose rate changed was reported, or sits at a class link reported.
    #[test]
    fn class_levels_equal_strict_priority_from_scratch() {
        for seed in 0..30u64 {
            let mut rng = ChaCha8Rng::seed_from_u64(700 + seed);
            let n = rng.random_range(2..8u32);
            let capacity: Vec<f64> = (0..n).map(|_| rng.random_range(10.0..100.0)).collect();
            let binds: Vec<bool> = (0..n).map(|_| rng.random_bool(0.8)).collect();
            let mut cl = ClassLevels::new(&capacity, &binds, None);
            let slots = 24usize;
            let mut current: Vec<Option<(Demand, u64)>> = vec![None; slots];
            let mut order: Vec<CoflowId> = Vec::new();
            let mut before: Vec<(f64, Bottleneck)> = vec![(0.0, Bottleneck::Idle); slots];
            let mut levels_before: Vec<f64> = Vec::new();
            for step in 0..300 {
                let mut set = BTreeSet::new();
                for _ in 0..rng.random_range(1..=3) {
                    let s = rng.random_range(0..slots);
                    current[s] = match (current[s], rng.random_range(0..10)) {
                        (Some((d, c)), 0..=3) if d.weight > 1 => Some((
                            Demand {
                                weight: d.weight - 1,
                                ..d
                            },
                            c,
                        )),
                        (Some(_), 0..=5) => None,
                        _ => {
                            let k = rng.random_range(1..=3usize);
                            let mut ids: Vec<u32> = (0..k).map(|_| rng.random_range(0..n)).collect();
                            ids.sort_unstable();
                            ids.dedup();
                            let mut d = on(&ids);
                            d.weight = rng.random_range(1..=3);
                            if rng.random_bool(0.1) || !ids.iter().any(|&l| binds[l as usize]) {
                                d.cap = rng.random_range(1.0..30.0);
                            }
                            Some((d, rng.random_range(0..5)))
                        }
                    };
                    let (demand, class) = match current[s] {
                        Some((d, c)) => (Some(d), Some(cl.class_of(CoflowId(c)))),
                        None => (None, None),
                    };
                    cl.set(s, demand, class);
                    set.insert(s as u32);
                }
                if rng.random_bool(0.2) {
                    order = (0..5u64).filter(|_| rng.random_bool(0.7)).map(CoflowId).collect();
                    for i in (1..order.len()).rev() {
                        order.swap(i, rng.random_range(0..=i));
                    }
                    cl.set_order(&order);
                }
                let changes = solve(&mut cl);

                // The reference: coflows in order, then the rest by id.
                let mut sequence: Vec<u64> = order.iter().map(|c| c.0).collect();
                sequence.extend((0..5).filter(|c| !order.contains(&CoflowId(*c))));
                let mut residual: Vec<f64> = (0..n as usize)
                    .map(|l| if binds[l] { capacity[l] } else { f64::INFINITY })
                    .collect();
                let mut want = vec![0.0; slots];
                for c in sequence {
                    let members: Vec<usize> = (0..slots)
                        .filter(|&s| current[s].is_some_and(|(_, k)| k == c))
                        .collect();
                    let ds: Vec<Demand> = members
                        .iter()
                        .filter_map(|&s| current[s])
                        .map(|(d, _)| Demand {
                            links: d.links.filtered(|l| binds[l as usize]),
                            ..d
                        })
                        .collect();
                    let rates = max_min(&residual, &ds);
                    for ((&s, r), d) in members.iter().zip(rates).zip(&ds) {
                        want[s] = r;
                        for &l in d.links.as_slice() {
                            residual[l as usize] = (residual[l as usize] - r * f64::from(d.weight)).max(0.0);
                        }
                    }
                }
                let mut load = vec![0.0; n as usize];
                for s in 0..slots {
                    let got = cl.rate(s);
                    assert!(
                        (got - want[s]).abs() <= 1e-9 * want[s].max(1.0),
                        "seed {seed} step {step} slot {s}: {got} != {}",
                        want[s]
                    );
                    let Some((d, c)) = current[s] else {
                        assert_eq!(cl.bottleneck(s), Bottleneck::Idle);
                        continue;
                    };
                    match cl.bottleneck(s) {
                        Bottleneck::Link(v) => {
                            let class = cl.of_coflow[&CoflowId(c)];
                            assert_eq!(v / n, class, "seed {seed} step {step}: its own class");
                            assert!(d.links.as_slice().contains(&(v % n)) && binds[(v % n) as usize]);
                            assert_eq!(got.to_bits(), cl.level(v).to_bits());
                        }
                        Bottleneck::Cap => assert_eq!(got, d.cap),
                        Bottleneck::Idle => panic!("seed {seed} step {step}: slot {s} idle"),
                    }
                    for &l in d.links.as_slice() {
                        load[l as usize] += got * f64::from(d.weight);
                    }
                    // Unreported, it keeps its bottleneck, whose level tells its rate.
                    if !changes.slots.contains(&(s as u32)) {
                        assert_eq!(cl.bottleneck(s), before[s].1, "seed {seed} step {step} slot {s}");
                        if got != before[s].0 {
                            let Bottleneck::Link(v) = before[s].1 else {
                                panic!("seed {seed} step {step}: slot {s} moved off a link unreported")
                            };
                            assert!(changes.links.contains(&v), "seed {seed} step {step}: link {v}");
                        }
                    }
                }
                for (l, (&a, &b)) in cl.loads().iter().zip(&load).enumerate() {
                    assert!(
                        (a - b).abs() <= 1e-9 * b.max(1.0),
                        "seed {seed} step {step}: load of {l}: {a} != {b}"
                    );
                }
                for (v, &old) in levels_before.iter().enumerate() {
                    let now = cl.level(v as LinkId);
                    if now.to_bits() != old.to_bits() {
                        assert!(
                            changes.links.contains(&(v as LinkId)),
                            "seed {seed} step {step}: level {v}"
                        );
                    }
                }
                for &s in &set {
                    assert!(
                        changes.slots.contains(&s),
                        "seed {seed} step {step}: slot {s} set"
                    );
                }
                before = (0..slots).map(|s| (cl.rate(s), cl.bottleneck(s))).collect();
                levels_before = (0..cl.bind_end() as LinkId).map(|v| cl.level(v)).collect();
            }
            assert!(
                cl.stats().classes_kept > 0,
                "seed {seed}: some class kept its solve"
            );
        }
    }
}
