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
//!
//! `sebf` ([`Varys::as_coflowsim`]) runs Varys as CoflowSim's `SEBF` does
//! (`CoflowSimulator.updateRatesDynamicAlpha`), the flow-level simulator
//! Varys' authors released (github.com/coflow/coflowsim). MADD is the
//! same; the rest differs:
//! - Order: each coflow keeps its place from its arrival, by Γ of all its
//!   bytes then (`Job.alpha`, `SEBFComparator`); ties by arrival.
//! - A coflow with bytes on a full link (below [`FULL`] left) is skipped by
//!   MADD. The skipped coflows then share what is left as one coflow whose
//!   links are split equally among its flows
//!   (`updateRatesFairShare`, [`PriorityFill::split_flows`]).
//! - What is still left goes out greedily, flow by flow in id order (each
//!   takes all its path has free), coflow by coflow in order of deadline:
//!   arrival + Γ at arrival × a multiplier in [1, 2) drawn from Java's
//!   `new Random(17)` in order of arrival (`Job.calcAlphaDeadline`,
//!   `Simulator.mergeTasksByRack`), ties in SEBF order.
//!
//! A trace's coflow comes with all its flows; a coflow whose flows join
//! later (a job's shuffle) keeps the Γ and deadline of those it came with.

use crate::coflow::flow_paths::FlowPaths;
use crate::coflow::held::HeldPlans;
use crate::coflow::java_random::JavaRandom;
use crate::coflow::priority::{PriorityFill, FULL};
use crate::coflow::{CoflowPolicy, Decision, FlowPlan, NetView, Progress, SparePlans, Triggers};
use crate::model::coflow::{CoflowId, FlowId};
use crate::net::links::{LinkId, Links};
use crate::Nanos;
use std::collections::BTreeMap;
use std::ops::Range;

/// SEBF + MADD over EPS.
#[derive(Clone, Debug, Default)]
pub struct Varys {
    /// CoflowSim's order and work conservation (`sebf`), when set.
    coflowsim: Option<Admissions>,
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

/// What `sebf` fixes when a coflow arrives: its Γ then and its
/// deadline, for every active coflow; and the draws of the deadlines.
#[derive(Clone, Debug)]
struct Admissions {
    /// (Γ at arrival, deadline) in seconds, by coflow.
    coflows: BTreeMap<CoflowId, (f64, f64)>,
    /// CoflowSim's `deadlineGen`.
    draws: JavaRandom,
}

impl Default for Admissions {
    fn default() -> Admissions {
        Admissions {
            coflows: BTreeMap::new(),
            draws: JavaRandom::new(17),
        }
    }
}

impl Varys {
    /// Varys as CoflowSim's `SEBF` runs it (`sebf`, see the module's doc).
    pub fn as_coflowsim() -> Varys {
        Varys {
            coflowsim: Some(Admissions::default()),
            ..Varys::default()
        }
    }

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
        if self.coflowsim.is_some() {
            "sebf"
        } else {
            "varys"
        }
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
    /// SEBF order, MADD rates and work conservation for the flows of
    /// `view` now, into `plans` (cleared first) in flow-id order.
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
        if let Some(admissions) = &mut self.coflowsim {
            admissions.admit(&self.coflows, &self.loads, capacity);
        }
        // SEBF: by Γ of what is left (the paper), or of all at arrival (CoflowSim).
        let mut order: Vec<(f64, Nanos, CoflowId, usize)> = self
            .coflows
            .iter()
            .enumerate()
            .map(|(i, (id, arrival, _, loads))| {
                let gamma = match &self.coflowsim {
                    Some(admissions) => admissions.coflows[id].0,
                    None => Self::bottleneck(&self.loads[loads.clone()], capacity),
                };
                (gamma, *arrival, *id, i)
            })
            .collect();
        order.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));

        // MADD on the residual capacity, coflow after coflow.
        let mut residual = capacity.to_vec();
        let mut skipped = Vec::new();
        for &(_, _, _, i) in &order {
            let (_, _, span, loads) = self.coflows[i].clone();
            let loads = &self.loads[loads];
            if self.coflowsim.is_some() && loads.iter().any(|&(l, _)| residual[l as usize] <= FULL) {
                skipped.push(i);
                continue;
            }
            let gamma = Self::bottleneck(loads, &residual);
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
        match &self.coflowsim {
            Some(admissions) => {
                let by_deadline = admissions.by_deadline(&order);
                self.share_spare_as_coflowsim(&skipped, &by_deadline, &mut residual);
            }
            None => {
                // Work conservation: what is left goes out again in the same
                // order, max-min fairly inside each coflow.
                for &(_, _, _, i) in &order {
                    let flows = &mut self.flows[self.coflows[i].2.clone()];
                    let extra = self.fill.fill_one(&mut residual, flows.iter().map(|f| f.links));
                    for (f, &r) in flows.iter_mut().zip(extra) {
                        f.rate += r;
                    }
                }
            }
        }
        plans.clear();
        plans.extend(self.flows.iter().map(|f| (f.id, FlowPlan::eps_paced(f.rate))));
        plans.sort_unstable_by_key(|&(id, _)| id);
    }

    /// CoflowSim's work conservation: the coflows MADD `skipped` (indices
    /// into `coflows`) split `residual` as one coflow; then, coflow by
    /// coflow `by_deadline`, each flow takes all its path has free.
    fn share_spare_as_coflowsim(&mut self, skipped: &[usize], by_deadline: &[usize], residual: &mut [f64]) {
        let mut split = Vec::new();
        let flows = skipped
            .iter()
            .flat_map(|&i| self.flows[self.coflows[i].2.clone()].iter())
            .map(|f| (f.id, f.links));
        self.fill.split_flows(residual, flows, &mut split);
        let skipped_flows = skipped.iter().flat_map(|&i| self.coflows[i].2.clone());
        for (k, (_, rate)) in skipped_flows.zip(split) {
            self.flows[k].rate = rate;
        }
        for &i in by_deadline {
            for f in &mut self.flows[self.coflows[i].2.clone()] {
                let links = f.links.as_slice();
                let free = links
                    .iter()
                    .map(|&l| residual[l as usize])
                    .fold(f64::INFINITY, f64::min);
                // (A flow that crosses no link has no capacity to take.)
                if free > FULL && free.is_finite() {
                    f.rate += free;
                    for &l in links {
                        residual[l as usize] -= free;
                    }
                }
            }
        }
    }
}

impl Admissions {
    /// Forgets the coflows gone, and fixes Γ (on links of `capacity`) and
    /// the deadline of each coflow seen for the first time, drawing their
    /// multipliers in order of arrival, then id.
    fn admit(
        &mut self,
        coflows: &[(CoflowId, Nanos, Range<usize>, Range<usize>)],
        loads: &[(LinkId, f64)],
        capacity: &[f64],
    ) {
        self.coflows
            .retain(|id, _| coflows.binary_search_by_key(id, |c| c.0).is_ok());
        let mut new: Vec<(Nanos, CoflowId, f64)> = coflows
            .iter()
            .filter(|c| !self.coflows.contains_key(&c.0))
            .map(|(id, arrival, _, l)| (*arrival, *id, Varys::bottleneck(&loads[l.clone()], capacity)))
            .collect();
        new.sort_by_key(|&(arrival, id, _)| (arrival, id));
        for (arrival, id, gamma) in new {
            let multiplier = 1.0 + self.draws.next_double();
            self.coflows
                .insert(id, (gamma, arrival.as_secs_f64() + gamma * multiplier));
        }
    }

    /// The coflows of SEBF `order` (their indices, the last field), by
    /// deadline; ties keep their order, as Java's stable sort does.
    fn by_deadline(&self, order: &[(f64, Nanos, CoflowId, usize)]) -> Vec<usize> {
        let mut by: Vec<(f64, usize)> = order
            .iter()
            .map(|&(_, _, id, i)| (self.coflows[&id].1, i))
            .collect();
        by.sort_by(|a, b| a.0.total_cmp(&b.0));
        by.into_iter().map(|(_, i)| i).collect()
    }
}
