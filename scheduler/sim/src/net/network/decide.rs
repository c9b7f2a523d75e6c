//! The policy's part of the fluid network: asking the coflow policy at a
//! scheduling instant and carrying out its [`ocslab_core::coflow::Decision`]
//! by the rules both drivers share ([`ocslab_core::coflow::carry_out`]):
//! circuits through the network's [`super::circuits::FluidOcs`], each flow
//! moved to the bundle of the plan it follows.

use super::super::prefetch::{prefetch, READ_AHEAD};
use super::{BundleKey, FluidNetwork, LiveProgress};
use crate::net::rates::Rates;
use ocslab_core::coflow::view::Path;
use ocslab_core::coflow::{set_up_circuits, FabricParams, FlowPlan, FlowView, PairPlan};
use ocslab_core::model::coflow::{FlowId, FlowSpec};
use ocslab_core::Bps;

impl FluidNetwork {
    /// Asks the policy and applies its decision (paths, caps, circuits, wake-up).
    pub(super) fn ask_policy(&mut self) {
        let now = self.now;
        let progress = LiveProgress {
            now,
            bundles: &self.bundles,
            shares: &self.shares,
            clocks: &self.clocks,
            slots: &self.slots,
            slot_of: &self.slot_of,
            done_bytes: &self.coflow_done_bytes,
        };
        let decision = self.policy.decide(now, &self.view, &progress);
        self.stats.policy_calls += 1;
        self.stats.flow_plans += decision.plans.len() as u64;
        self.asked_at = Some(now);
        self.wake_at = decision.wake_at.filter(|&t| t > now);
        // Under a schedule the circuits are the schedule's ([`super::rotor`]).
        if self.rotor.is_none() {
            let made = set_up_circuits(
                &mut self.view.circuits,
                &self.view.fabric,
                &decision.circuits,
                now,
                &mut self.ocs,
            );
            self.stats.reconfigurations += made;
        }
        self.circuits_changed.append(&mut self.ocs.changed);
        self.pending.append(&mut self.ocs.events);
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
        let classless = !self.rates.by_classes();
        for (i, &(id, plan)) in decision.plans.iter().enumerate() {
            self.read_ahead(&decision.plans, i);
            let Some(f) = self.view.flows.get(&id) else {
                continue;
            };
            // A plan the flow already follows moves nothing (most of
            // Varys' and Aalo's plans at a call: the flows they keep waiting).
            if classless && follows(f, plan.admissible(f, &fabric)) {
                if f.path != Path::Eps || f.cap.is_some() {
                    planned.push(id);
                }
                continue;
            }
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
        self.policy.recycle(decision);
    }

    /// Asks for what moving the flows of `plans[i..]` will read a few
    /// flows ahead: the slot, then the bundle key (a wide coflow's flows
    /// are scattered over both).
    fn read_ahead(&self, plans: &[(FlowId, FlowPlan)], i: usize) {
        if let Some(ix) = plans
            .get(i + 2 * READ_AHEAD)
            .and_then(|&(f, _)| self.slot_of.get(f))
        {
            prefetch(&self.slots[ix]);
        }
        if let Some(ix) = plans.get(i + READ_AHEAD).and_then(|&(f, _)| self.slot_of.get(f)) {
            prefetch(&self.bundles[self.slots[ix].bundle].key);
        }
    }

    /// Applies a decision's pair plan changes to the standing pair plans
    /// ([`ocslab_core::coflow::Decision`]). Only pairs whose plan is not what it
    /// was move their flows (a pair that lost its plan goes back to EPS, no
    /// cap), and of the others only the flows that joined since the last
    /// call ([`FluidNetwork::stale`]), in flow-id order as per-flow plans
    /// do. A pair whose plan stands costs nothing.
    fn apply_pair_plans(&mut self, changes: &[PairPlan]) {
        let changed = self.pair_planned.apply(changes);
        let fabric = self.view.fabric;
        let mut moves: Vec<(FlowId, BundleKey)> = Vec::new();
        for (key, id) in std::mem::take(&mut self.stale) {
            if let (Some(plan), Some(f)) = (self.pair_planned.get(key), self.view.flows.get(&id)) {
                moves.push((id, plan_key(&fabric, &mut self.rates, f, plan)));
            }
        }
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
}

/// The bundle key of flow `f` under `plan`: a circuit only for an
/// elephant and an existing port, EPS otherwise; in its coflow's class if
/// `rates` are solved by classes. A bundle's cap is per unit of weight, so
/// a cap on a flow of weight w is shared by its w.
fn plan_key(fabric: &FabricParams, rates: &mut Rates, f: &FlowView, plan: FlowPlan) -> BundleKey {
    let plan = plan.admissible(f, fabric);
    let weight = u64::from(f.spec.shares());
    BundleKey::new(
        plan.path,
        f.spec.src,
        f.spec.dst,
        plan.cap.map(|c| Bps(c.0 / weight)),
        rates.class_of(f.spec.coflow),
    )
}

/// Whether flow `f` follows `plan` (admissible) already: its bundle's
/// key is the one [`plan_key`] makes of `plan`, as [`FluidNetwork::move_flow`]
/// keeps `f.path` and `f.cap` (the bundle's cap per unit of weight times the
/// weight), when rates are not solved by classes.
fn follows(f: &FlowView, plan: FlowPlan) -> bool {
    let weight = u64::from(f.spec.shares());
    f.path == plan.path && f.cap == plan.cap.map(|c| Bps((c.0 / weight).saturating_mul(weight)))
}

/// The key of a flow no policy has planned: EPS, no cap (in its
/// coflow's class if `rates` are solved by classes).
pub(super) fn default_key(rates: &mut Rates, spec: &FlowSpec) -> BundleKey {
    BundleKey::new(Path::Eps, spec.src, spec.dst, None, rates.class_of(spec.coflow))
}
