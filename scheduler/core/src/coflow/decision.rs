//! What a coflow policy decides: a [`Decision`] per scheduling instant.
//!
//! Every field can be carried out by both drivers:
//! - the simulator applies it to its fluid model;
//! - the emulation driver turns a [`FlowPlan`] into agent instructions (route
//!   over EPS, or mark the socket for the OCS table and use the circuit of
//!   port `w`; pace at `cap`, or let TCP share when `cap` is `None`), a
//!   [`CircuitSetup`] into OCS filter changes (the OCS applies the dark time δ
//!   itself), and `wake_at` into a timer.
//!
//! Per-flow plans are complete: each decision lists every flow it plans.
//! Pair plans ([`PairPlan`]) *stand*: a driver keeps one table of them from
//! call to call, and a decision carries only the pairs whose plan changed
//! since the policy's previous decision ([`Decision::pair_changes`]), so a
//! call that changes a few reservations costs a few entries, however many
//! pairs are planned.

use crate::coflow::sorted_table::SortedTable;
use crate::coflow::view::Path;
use crate::model::coflow::{CoflowId, FlowId};
use crate::{Bps, Nanos};
use serde::Serialize;

/// How one flow is to be sent until the next decision.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FlowPlan {
    /// EPS, a circuit, or wait.
    pub path: Path,
    /// A pacing rate; `None` lets the flow take what max-min fair sharing
    /// (TCP) gives it on its path.
    pub cap: Option<Bps>,
}

impl FlowPlan {
    /// EPS at whatever fair sharing gives.
    pub const EPS: FlowPlan = FlowPlan {
        path: Path::Eps,
        cap: None,
    };
    /// Do not send.
    pub const WAIT: FlowPlan = FlowPlan {
        path: Path::Wait,
        cap: None,
    };

    /// EPS paced at `rate_bytes_per_s` (rounded down to whole bits per
    /// second, so that a feasible set of rates stays feasible); a rate of 0 waits.
    pub fn eps_paced(rate_bytes_per_s: f64) -> FlowPlan {
        let bps = (rate_bytes_per_s * 8.0).floor();
        if bps < 1.0 {
            return FlowPlan::WAIT;
        }
        FlowPlan {
            path: Path::Eps,
            cap: Some(Bps(bps as u64)),
        }
    }

    /// Whether a flow following it may send (it neither waits nor is
    /// paced at 0).
    pub fn moves(&self) -> bool {
        self.path != Path::Wait && self.cap != Some(Bps(0))
    }

    /// Over the circuit on `port`, sharing it as TCP would.
    pub fn ocs(port: u32) -> FlowPlan {
        FlowPlan {
            path: Path::Ocs { port },
            cap: None,
        }
    }
}

/// Set up a circuit from `src_rack` to `dst_rack` on port (wavelength)
/// `port`. Any other circuit using the sending side of `(src_rack, port)` or
/// the receiving side of `(dst_rack, port)` is torn down; both sides stay
/// dark for δ. Asking for a circuit that is already up (or coming up) is a no-op.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct CircuitSetup {
    /// Sending rack.
    pub src_rack: u32,
    /// Receiving rack.
    pub dst_rack: u32,
    /// Port index on both racks.
    pub port: u32,
}

/// A change to the standing plan of coflow `coflow`'s flows from rack
/// `src_rack` to rack `dst_rack` (Sunflow decides per rack pair: a circuit
/// reservation serves all of them). The plan covers the pair's active flows
/// and those that join it later, until a later change replaces or clears it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct PairPlan {
    /// The coflow.
    pub coflow: CoflowId,
    /// Sending rack.
    pub src_rack: u32,
    /// Receiving rack.
    pub dst_rack: u32,
    /// The plan of each of those flows from now on, or `None`: the pair has
    /// no plan any more (its flows go over EPS with no cap, as unplanned
    /// flows do) and leaves the table.
    pub plan: Option<FlowPlan>,
}

/// A coflow's flows between two racks: (coflow, source rack, destination
/// rack), in the order pair tables are kept.
pub type PairKey = (CoflowId, u32, u32);

impl PairPlan {
    /// The plan `plan` for `pair` (`None`: the pair has no plan any more).
    pub fn new((coflow, src_rack, dst_rack): PairKey, plan: Option<FlowPlan>) -> PairPlan {
        PairPlan {
            coflow,
            src_rack,
            dst_rack,
            plan,
        }
    }

    /// The pair it is about.
    pub fn pair(&self) -> PairKey {
        (self.coflow, self.src_rack, self.dst_rack)
    }
}

/// A policy's decision at one instant.
///
/// What a flow does until the next decision:
/// - if its (coflow, source rack, destination rack) has a standing pair
///   plan, that plan;
/// - else its entry in `plans`, if any;
/// - else EPS with no cap (fair sharing), so "all fair" is the empty decision.
///
/// A policy uses one kind of plan or the other for a given flow.
///
/// **Pair plans are a delta.** A driver starts with an empty table of
/// standing pair plans and applies each decision's `pair_changes` to it, in
/// order (a later entry for the same pair wins; `plan: None` removes the
/// pair). A policy puts in `pair_changes` only what changed since its
/// previous decision, so a driver must carry out every decision it gets,
/// in the order it gets them, and one policy instance serves one driver.
/// A decision that changes nothing has no pair changes (the standing plans
/// hold). Repeating a pair's current plan is allowed and changes nothing.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Decision {
    /// Per-flow plans: every flow the policy plans this way, each time.
    pub plans: Vec<(FlowId, FlowPlan)>,
    /// Changes to the standing per-(coflow, rack pair) plans since the
    /// policy's previous decision.
    pub pair_changes: Vec<PairPlan>,
    /// Strict priority between coflows, first served first, from a policy
    /// that [orders coflows](crate::coflow::CoflowPolicy::orders_coflows)
    /// (empty otherwise): the flows of each coflow listed share max-min
    /// fairly what the coflows before it left of every link; coflows not
    /// listed follow, by id. A flow's own plan (path, cap) still holds
    /// inside its coflow. Complete each time, as per-flow plans are. The
    /// fluid network solves these rates again at every event (class by
    /// class, `ocslab_scheduler::net::class_levels`); the emulation driver paces each
    /// flow that has no plan of its own at them
    /// ([`crate::coflow::priority::paced_in_order`]).
    pub order: Vec<CoflowId>,
    /// Circuits to set up now.
    pub circuits: Vec<CircuitSetup>,
    /// Call the policy again at this time even if nothing else happens
    /// (e.g. when a coflow will cross an Aalo queue threshold).
    pub wake_at: Option<Nanos>,
}

/// The per-flow plan buffer of a decision a policy got back
/// ([`crate::coflow::CoflowPolicy::recycle`]), kept for its next decision.
#[derive(Clone, Debug, Default)]
pub struct SparePlans(Vec<(FlowId, FlowPlan)>);

impl SparePlans {
    /// An empty buffer, with the capacity of the largest kept.
    pub fn take(&mut self) -> Vec<(FlowId, FlowPlan)> {
        let mut plans = std::mem::take(&mut self.0);
        plans.clear();
        plans
    }

    /// Keeps `decision`'s plan buffer if it is the larger.
    pub fn keep(&mut self, decision: Decision) {
        if decision.plans.capacity() > self.0.capacity() {
            self.0 = decision.plans;
        }
    }
}

/// The standing pair plans a driver keeps: the table [`Decision::pair_changes`]
/// are applied to, by (coflow, source rack, destination rack).
///
/// A [`SortedTable`] in pair order, each pair packed into one `u128`
/// (`pack`): a probe reads 16 bytes and compares once. A re-plan changes
/// every pair of the coflows it plans (tens of thousands at once on
/// FB2010), so a large batch of changes is sorted and merged with the
/// table in one pass; a small one (a call between plans: a few pairs'
/// circuit came or went) is applied in place.
#[derive(Clone, Debug, Default)]
pub struct PairPlans(SortedTable<u128, FlowPlan>);

/// A pair as one number whose order is the pair's: coflow, then source
/// rack, then destination rack.
fn pack((coflow, src, dst): PairKey) -> u128 {
    (u128::from(coflow.0) << 64) | (u128::from(src) << 32) | u128::from(dst)
}

/// The pair [`pack`] made `key` of.
fn unpack(key: u128) -> PairKey {
    (CoflowId((key >> 64) as u64), (key >> 32) as u32, key as u32)
}

impl PartialEq for PairPlans {
    fn eq(&self, other: &PairPlans) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for PairPlans {}

impl PairPlans {
    /// Applies `changes` in order and returns the pairs whose plan is not
    /// what it was before (a pair set and cleared again, or set to the plan
    /// it had, is not listed), in pair order, each with its plan now
    /// (`None`: no plan).
    pub fn apply(&mut self, changes: &[PairPlan]) -> Vec<(PairKey, Option<FlowPlan>)> {
        if changes.len().saturating_mul(8) < self.0.len() {
            self.apply_in_place(changes)
        } else {
            self.apply_merged(changes)
        }
    }

    /// [`PairPlans::apply`] one change at a time, by binary search.
    fn apply_in_place(&mut self, changes: &[PairPlan]) -> Vec<(PairKey, Option<FlowPlan>)> {
        // Each change with the plan it replaced; a stable sort keeps a
        // pair's changes in the order they were made.
        let mut made: Vec<(PairKey, Option<FlowPlan>, Option<FlowPlan>)> = changes
            .iter()
            .map(|c| (c.pair(), self.0.set(pack(c.pair()), c.plan), c.plan))
            .collect();
        made.sort_by_key(|&(pair, _, _)| pair);
        self.0.compact_if_sparse();
        // A pair's plan before its first change, and after its last.
        made.chunk_by(|a, b| a.0 == b.0)
            .filter_map(|group| {
                let (pair, old, _) = group[0];
                let now = group[group.len() - 1].2;
                (now != old).then_some((pair, now))
            })
            .collect()
    }

    /// [`PairPlans::apply`] as one merge of the sorted changes (each
    /// pair's last) with the table.
    fn apply_merged(&mut self, changes: &[PairPlan]) -> Vec<(PairKey, Option<FlowPlan>)> {
        let mut last: Vec<(PairKey, usize, Option<FlowPlan>)> = changes
            .iter()
            .enumerate()
            .map(|(i, c)| (c.pair(), i, c.plan))
            .collect();
        last.sort_unstable_by_key(|&(pair, i, _)| (pair, std::cmp::Reverse(i)));
        last.dedup_by_key(|&mut (pair, _, _)| pair);
        let mut merged = Vec::with_capacity(self.0.len() + last.len());
        let mut changed = Vec::new();
        let mut news = last.into_iter().peekable();
        for (key, had) in self.0.take_entries() {
            let pair = unpack(key);
            while let Some((new, _, plan)) = news.next_if(|&(new, _, _)| new < pair) {
                if let Some(plan) = plan {
                    changed.push((new, Some(plan)));
                    merged.push((pack(new), plan));
                }
            }
            let now = match news.next_if(|&(new, _, _)| new == pair) {
                Some((_, _, plan)) => {
                    if plan != Some(had) {
                        changed.push((pair, plan));
                    }
                    plan
                }
                None => Some(had),
            };
            if let Some(now) = now {
                merged.push((key, now));
            }
        }
        for (new, _, plan) in news {
            if let Some(plan) = plan {
                changed.push((new, Some(plan)));
                merged.push((pack(new), plan));
            }
        }
        self.0 = SortedTable::from_sorted(merged);
        changed
    }

    /// Applies `changes` as [`PairPlans::apply`] does and returns what a
    /// decision carries to a driver that holds the same table: the pairs
    /// whose plan is not what it was, each with its plan now.
    pub fn apply_changes(&mut self, changes: &[PairPlan]) -> Vec<PairPlan> {
        self.apply(changes)
            .into_iter()
            .map(|(pair, plan)| PairPlan::new(pair, plan))
            .collect()
    }

    /// The standing plan of `pair` (coflow, source rack, destination rack), if any.
    pub fn get(&self, pair: PairKey) -> Option<FlowPlan> {
        self.0.get(pack(pair)).copied()
    }

    /// How many pairs have a plan.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether no pair has a plan.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The standing plans, in pair order.
    pub fn iter(&self) -> impl Iterator<Item = (PairKey, FlowPlan)> + '_ {
        self.0.iter().map(|(k, &p)| (unpack(k), p))
    }

    /// The standing plans of `coflow`'s pairs, by (source rack, destination rack).
    pub fn of_coflow(&self, coflow: CoflowId) -> impl Iterator<Item = ((u32, u32), FlowPlan)> + '_ {
        self.0
            .iter_from(pack((coflow, 0, 0)))
            .map(|(k, &p)| (unpack(k), p))
            .take_while(move |&((c, _, _), _)| c == coflow)
            .map(|((_, i, j), p)| ((i, j), p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spare_plans_come_back_empty_with_the_largest_buffer_kept() {
        let mut spare = SparePlans::default();
        let plans = |n: u64| Decision {
            plans: (0..n).map(|i| (FlowId(i), FlowPlan::EPS)).collect(),
            ..Decision::default()
        };
        spare.keep(plans(100));
        spare.keep(plans(10));
        let buffer = spare.take();
        assert!(
            buffer.is_empty() && buffer.capacity() >= 100,
            "{}",
            buffer.capacity()
        );
        assert_eq!(spare.take().capacity(), 0, "taken once");
    }

    #[test]
    fn only_pairs_whose_plan_changed_are_reported_in_pair_order() {
        let (a, b, c, d) = (
            (CoflowId(2), 0, 1),
            (CoflowId(1), 3, 4),
            (CoflowId(1), 0, 2),
            (CoflowId(3), 1, 0),
        );
        let mut plans = PairPlans::default();
        plans.apply(&[
            PairPlan::new(a, Some(FlowPlan::WAIT)),
            PairPlan::new(d, Some(FlowPlan::WAIT)),
        ]);
        let changed = plans.apply(&[
            // Set to the plan it had, then changed: listed with the last.
            PairPlan::new(a, Some(FlowPlan::WAIT)),
            PairPlan::new(a, Some(FlowPlan::ocs(1))),
            // Set, then cleared again: it had none, so not listed.
            PairPlan::new(b, Some(FlowPlan::ocs(0))),
            PairPlan::new(b, None),
            // New.
            PairPlan::new(c, Some(FlowPlan::ocs(0))),
            // Changed, then back to what it was: not listed.
            PairPlan::new(d, None),
            PairPlan::new(d, Some(FlowPlan::WAIT)),
        ]);
        assert_eq!(
            changed,
            vec![(c, Some(FlowPlan::ocs(0))), (a, Some(FlowPlan::ocs(1)))]
        );
        assert_eq!(plans.len(), 3);
        assert_eq!(plans.get(b), None);
        assert_eq!(plans.get(d), Some(FlowPlan::WAIT));
    }

    /// Batches of every size, small ones applied in place and large ones
    /// merged, against a map that applies each change in turn: the same
    /// table, and exactly the pairs whose plan differs from before.
    #[test]
    fn batches_applied_in_place_or_merged_match_changes_made_one_by_one() {
        use rand::{Rng, SeedableRng};
        use std::collections::BTreeMap;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let plans_to_pick = [FlowPlan::WAIT, FlowPlan::ocs(0), FlowPlan::ocs(1), FlowPlan::EPS];
        let mut table = PairPlans::default();
        let mut model: BTreeMap<PairKey, FlowPlan> = BTreeMap::new();
        let (mut in_place, mut merged) = (0, 0);
        for _ in 0..2_000 {
            let n = if rng.random_bool(0.8) {
                rng.random_range(0..4)
            } else {
                rng.random_range(0..300)
            };
            let changes: Vec<PairPlan> = (0..n)
                .map(|_| {
                    let pair = (
                        CoflowId(rng.random_range(0..8)),
                        rng.random_range(0..6),
                        rng.random_range(0..6),
                    );
                    let plan = rng
                        .random_bool(0.7)
                        .then(|| plans_to_pick[rng.random_range(0..4)]);
                    PairPlan::new(pair, plan)
                })
                .collect();
            if n * 8 < table.len() {
                in_place += 1;
            } else {
                merged += 1;
            }
            let before = model.clone();
            for c in &changes {
                match c.plan {
                    Some(p) => model.insert(c.pair(), p),
                    None => model.remove(&c.pair()),
                };
            }
            let mut want: Vec<(PairKey, Option<FlowPlan>)> = before
                .keys()
                .chain(model.keys())
                .copied()
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .filter(|k| before.get(k) != model.get(k))
                .map(|k| (k, model.get(&k).copied()))
                .collect();
            want.sort_by_key(|&(k, _)| k);
            assert_eq!(table.apply(&changes), want);
            assert!(table.iter().eq(model.iter().map(|(&k, &p)| (k, p))));
            assert_eq!(table.len(), model.len());
            for c in 0..8 {
                let of: Vec<_> = table.of_coflow(CoflowId(c)).collect();
                let want: Vec<_> = model
                    .range((CoflowId(c), 0, 0)..=(CoflowId(c), u32::MAX, u32::MAX))
                    .map(|(&(_, i, j), &p)| ((i, j), p))
                    .collect();
                assert_eq!(of, want);
            }
        }
        assert!(
            in_place > 500 && merged > 100,
            "{in_place} in place, {merged} merged"
        );
    }
}
