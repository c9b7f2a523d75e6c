//! Varys: Smallest-Effective-Bottleneck-First ordering with
//! Minimum-Allocation-for-Desired-Duration rates, from Chowdhury, Zhong &
//! Stoica, "Efficient Coflow Scheduling with Varys", SIGCOMM'14, Sec. 5.1-5.3
//! (Pseudocode 1), clairvoyant (flow sizes known), without deadlines.
//!
//! 1. SEBF: a coflow's effective bottleneck Γ is the longest any link needs
//!    to carry its remaining bytes alone: Γ = max_l (bytes of C on l) / cap(l).
//!    Coflows are served in increasing Γ (ties: arrival, then id).
//! 2. MADD: in that order, on what earlier coflows left (residual capacity
//!    rem(l)), Γ' = max_l (bytes of C on l) / rem(l), and each flow gets
//!    rate = remaining / Γ', so all its flows finish together at Γ' and the
//!    coflow takes no more than it needs. A coflow with a saturated link gets
//!    nothing now.
//! 3. Work conservation: what is left is handed out again in SEBF order,
//!    max-min fairly inside each coflow ("backfilling").
//!
//! All flows over EPS, paced at the computed rates.
//!
//! When: Varys reschedules when a coflow arrives and when one completes
//! (Sec. 5.3; CoflowSim's SEBF recomputes rates only in `afterJobAdmission`
//! and `afterJobDeparture` too), and here also when a flow of a known
//! coflow arrives (it needs a rate). Between those events the rates stand
//! ([`HeldPlans`]): a flow that finishes before its coflow leaves its
//! bandwidth idle until the next coflow event, as in the paper.

use crate::coflow::held::HeldPlans;
use crate::coflow::priority::PriorityFill;
use crate::coflow::{CoflowPolicy, Decision, FlowPlan, FlowView, NetView, Progress, Triggers};
use crate::model::coflow::{CoflowId, FlowId};
use crate::net::links::LinkId;
use crate::Nanos;
use std::collections::BTreeMap;

/// SEBF + MADD over EPS.
#[derive(Clone, Debug, Default)]
pub struct Varys {
    fill: PriorityFill,
    load: Vec<f64>,
    touched: Vec<LinkId>,
    held: HeldPlans,
}

impl Varys {
    /// Bytes of a coflow's remaining `flows` (with their remaining bytes) on
    /// each link (into `self.load`, links listed in `self.touched`).
    fn load_of(&mut self, view: &NetView, flows: &[(&FlowView, f64)]) {
        if self.load.len() != view.links.len() {
            self.load = vec![0.0; view.links.len()];
        }
        for &l in &self.touched {
            self.load[l as usize] = 0.0;
        }
        self.touched.clear();
        for &(f, remaining) in flows {
            for &l in view.links.eps_path(f.spec.src, f.spec.dst).as_slice() {
                if self.load[l as usize] == 0.0 {
                    self.touched.push(l);
                }
                self.load[l as usize] += remaining.max(f64::MIN_POSITIVE);
            }
        }
    }

    /// The time a coflow with `flows` needs alone on links of capacity `cap`: its Γ (seconds).
    fn bottleneck(&mut self, view: &NetView, flows: &[(&FlowView, f64)], cap: &[f64]) -> f64 {
        self.load_of(view, flows);
        self.touched
            .iter()
            .map(|&l| {
                let c = cap[l as usize];
                if c <= 0.0 {
                    f64::INFINITY
                } else {
                    self.load[l as usize] / c
                }
            })
            .fold(0.0, f64::max)
    }
}

impl CoflowPolicy for Varys {
    fn name(&self) -> &'static str {
        "varys"
    }
    fn triggers(&self) -> Triggers {
        // Coflow arrivals and completions (and flows joining a coflow); at
        // any other event the held rates stand.
        Triggers::COFLOW_EVENTS
    }
    fn decide(&mut self, _now: Nanos, view: &NetView, progress: &dyn Progress) -> Decision {
        let plans = match self.held.still(view) {
            Some(plans) => plans,
            None => {
                let plans = self.schedule_now(view, progress);
                self.held.hold(view, &plans);
                plans
            }
        };
        Decision {
            plans,
            ..Decision::default()
        }
    }
}

impl Varys {
    /// SEBF order, MADD rates and backfilling for the flows of `view` now,
    /// in flow-id order.
    fn schedule_now(&mut self, view: &NetView, progress: &dyn Progress) -> Vec<(FlowId, FlowPlan)> {
        let capacity = view.links.capacities();
        // Each coflow's flows with their remaining bytes, read once.
        let coflows: BTreeMap<CoflowId, Vec<(&FlowView, f64)>> = view
            .coflows
            .keys()
            .map(|&id| {
                let flows = view.flows_of(id).map(|f| (f, progress.remaining_bytes(f)));
                (id, flows.collect())
            })
            .collect();
        let mut order: Vec<(f64, Nanos, CoflowId)> = coflows
            .iter()
            .map(|(&id, flows)| {
                (
                    self.bottleneck(view, flows, capacity),
                    view.coflows[&id].arrival,
                    id,
                )
            })
            .collect();
        order.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        let order: Vec<CoflowId> = order.into_iter().map(|(_, _, id)| id).collect();

        // MADD on the residual capacity, coflow after coflow.
        let mut residual = capacity.to_vec();
        let mut rates: BTreeMap<FlowId, f64> = BTreeMap::new();
        for c in &order {
            let flows = &coflows[c];
            let gamma = self.bottleneck(view, flows, &residual);
            if !(gamma.is_finite() && gamma > 0.0) {
                continue;
            }
            for &(f, remaining) in flows {
                let r = remaining / gamma;
                for &l in view.links.eps_path(f.spec.src, f.spec.dst).as_slice() {
                    residual[l as usize] = (residual[l as usize] - r).max(0.0);
                }
                rates.insert(f.spec.id, r);
            }
        }
        // Work conservation: hand out what is left in the same order.
        let mut extra = Vec::with_capacity(view.flows.len());
        self.fill.fill_in_order(view, &order, &mut residual, &mut extra);
        for (f, r) in extra {
            *rates.entry(f).or_default() += r;
        }
        rates
            .into_iter()
            .map(|(f, r)| (f, FlowPlan::eps_paced(r)))
            .collect()
    }
}
