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

use crate::coflow::flow_paths::FlowPaths;
use crate::coflow::held::HeldPlans;
use crate::coflow::priority::PriorityFill;
use crate::coflow::{CoflowPolicy, Decision, FlowPlan, NetView, Progress, SparePlans, Triggers};
use crate::model::coflow::{CoflowId, FlowId};
use crate::net::links::{LinkId, Links};
use crate::Nanos;
use std::ops::Range;

/// SEBF + MADD over EPS.
#[derive(Clone, Debug, Default)]
pub struct Varys {
    held: HeldPlans,
    /// Scratch, reused from call to call: every active flow, coflow after
    /// coflow (coflows and their flows in id order), as one vector.
    flows: Vec<Planned>,
    /// Each coflow's arrival, span of `flows` and span of `loads`, in id order.
    coflows: Vec<(CoflowId, Nanos, Range<usize>, Range<usize>)>,
    /// Every coflow's bytes left per link it crosses, coflow after coflow.
    loads: Vec<(LinkId, f64)>,
    /// Scratch of [`Varys::link_loads`], per link.
    load: Vec<f64>,
    /// Each active coflow's flows as a call last read them.
    paths: FlowPaths,
    fill: PriorityFill,
    spare: SparePlans,
}

/// A flow as one call plans it.
#[derive(Clone, Copy, Debug)]
struct Planned {
    id: FlowId,
    links: Links,
    remaining: f64,
    /// Its MADD rate plus what backfilling gave it (bytes per second).
    rate: f64,
}

impl Varys {
    /// Appends to `out` the bytes the coflow with `flows` has left on each
    /// link it crosses, links in the order its flows first cross them
    /// (`load` is scratch, zero on entry and on return).
    fn link_loads(load: &mut Vec<f64>, flows: &[Planned], links: usize, out: &mut Vec<(LinkId, f64)>) {
        if load.len() != links {
            *load = vec![0.0; links];
        }
        let start = out.len();
        for f in flows {
            for &l in f.links.as_slice() {
                if load[l as usize] == 0.0 {
                    out.push((l, 0.0));
                }
                load[l as usize] += f.remaining.max(f64::MIN_POSITIVE);
            }
        }
        for (l, bytes) in &mut out[start..] {
            *bytes = std::mem::take(&mut load[*l as usize]);
        }
    }

    /// The time a coflow with `loads` (bytes per link) needs alone on
    /// links of capacity `cap`: its Γ (seconds).
    fn bottleneck(loads: &[(LinkId, f64)], cap: &[f64]) -> f64 {
        loads
            .iter()
            .map(|&(l, bytes)| {
                let c = cap[l as usize];
                if c <= 0.0 {
                    f64::INFINITY
                } else {
                    bytes / c
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
        let mut plans = self.spare.take();
        if !self.held.still(view, &mut plans) {
            self.schedule_now(view, progress, &mut plans);
            self.held.hold(view, &plans);
        }
        Decision {
            plans,
            ..Decision::default()
        }
    }
    fn recycle(&mut self, decision: Decision) {
        self.spare.keep(decision);
    }
}

impl Varys {
    /// SEBF order, MADD rates and backfilling for the flows of `view` now,
    /// into `plans` (cleared first) in flow-id order.
    fn schedule_now(&mut self, view: &NetView, progress: &dyn Progress, plans: &mut Vec<(FlowId, FlowPlan)>) {
        let capacity = view.links.capacities();
        // Each coflow's flows with their routes and remaining bytes, read once.
        self.flows.clear();
        self.coflows.clear();
        self.loads.clear();
        self.paths.keep_active(view);
        for (&id, c) in &view.coflows {
            let (start, loads_start) = (self.flows.len(), self.loads.len());
            let active = self.paths.remaining(view, id, c, progress);
            self.flows.extend(active.map(|(id, links, remaining)| Planned {
                id,
                links,
                remaining,
                rate: 0.0,
            }));
            let span = start..self.flows.len();
            Self::link_loads(
                &mut self.load,
                &self.flows[span.clone()],
                capacity.len(),
                &mut self.loads,
            );
            self.coflows
                .push((id, c.arrival, span, loads_start..self.loads.len()));
        }
        let mut order: Vec<(f64, Nanos, CoflowId, usize)> = self
            .coflows
            .iter()
            .enumerate()
            .map(|(i, (id, arrival, _, loads))| {
                let gamma = Self::bottleneck(&self.loads[loads.clone()], capacity);
                (gamma, *arrival, *id, i)
            })
            .collect();
        order.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));

        // MADD on the residual capacity, coflow after coflow.
        let mut residual = capacity.to_vec();
        for &(_, _, _, i) in &order {
            let (_, _, span, loads) = self.coflows[i].clone();
            let gamma = Self::bottleneck(&self.loads[loads], &residual);
            if !(gamma.is_finite() && gamma > 0.0) {
                continue;
            }
            for f in &mut self.flows[span] {
                let r = f.remaining / gamma;
                for &l in f.links.as_slice() {
                    residual[l as usize] = (residual[l as usize] - r).max(0.0);
                }
                f.rate = r;
            }
        }
        // Work conservation: what is left goes out again in the same
        // order, max-min fairly inside each coflow.
        for &(_, _, _, i) in &order {
            let flows = &mut self.flows[self.coflows[i].2.clone()];
            let extra = self.fill.fill_one(&mut residual, flows.iter().map(|f| f.links));
            for (f, &r) in flows.iter_mut().zip(extra) {
                f.rate += r;
            }
        }
        plans.clear();
        plans.extend(self.flows.iter().map(|f| (f.id, FlowPlan::eps_paced(f.rate))));
        plans.sort_unstable_by_key(|&(id, _)| id);
    }
}
