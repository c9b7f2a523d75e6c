//! Aalo's Discretized Coflow-Aware Least-Attained Service (D-CLAS), from
//! Chowdhury & Stoica, "Efficient Coflow Scheduling Without Prior
//! Knowledge", SIGCOMM'15, Sec. 4 (Pseudocode 1).
//!
//! Non-clairvoyant: a coflow's priority falls as the bytes it has sent grow.
//! There are K = 10 queues; queue q holds coflows that have sent less than
//! Q_q = 10 MB·10^q (and at least Q_{q-1}); the last queue has no limit.
//! Queues are served in strict priority, coflows inside one queue in FIFO
//! order (arrival, then id), and a coflow's flows share max-min fairly what
//! the coflows before it left — as CoflowSim's `CoflowSimulatorDark` does
//! (MB = 2^20 bytes there and here). A coflow moves down when it crosses its
//! queue's limit: the policy asks to be woken at the first such crossing.
//!
//! When: the coordinator reorders coflows when one arrives, when one
//! completes and when one crosses a queue limit (Sec. 4-5; CoflowSim's
//! `CoflowSimulatorDark` recomputes in `afterJobAdmission` and
//! `afterJobDeparture`, and moves coflows between queues there); here also
//! when a flow of a known coflow arrives (it needs a rate). Between those
//! events the rates stand ([`HeldPlans`]). The crossing is foreseen from
//! the rates set: a wake-up at which no coflow has changed queue (one of
//! its flows finished, so it sends slower than foreseen) only re-arms the
//! wake-up from the rates still standing.

use crate::coflow::flow_paths::FlowPaths;
use crate::coflow::held::HeldPlans;
use crate::coflow::priority::PriorityFill;
use crate::coflow::{CoflowPolicy, CoflowView, Decision, FlowPlan, NetView, Progress, SparePlans, Triggers};
use crate::model::coflow::{CoflowId, FlowId};
use crate::Nanos;
use std::collections::BTreeMap;
use std::ops::Range;

/// Number of queues (K).
pub const QUEUES: u32 = 10;
/// Limit of the first queue, nominal bytes (10 MB, MB = 2^20).
pub const FIRST_LIMIT: f64 = 10.0 * 1_048_576.0;
/// Each queue's limit is this times the previous one's (E).
pub const MULTIPLIER: f64 = 10.0;

/// The D-CLAS queue of a coflow that has sent `sent` bytes, with queue
/// limits divided by `scale`. A byte of slack absorbs fluid rounding at the
/// crossing instant.
pub fn queue_of(sent: f64, scale: f64) -> u32 {
    let mut limit = FIRST_LIMIT / scale;
    let mut q = 0;
    while q + 1 < QUEUES && sent + 1.0 >= limit {
        q += 1;
        limit *= MULTIPLIER;
    }
    q
}

/// The limit of queue `q` (bytes sent at which a coflow leaves it), divided by `scale`.
pub fn limit_of(q: u32, scale: f64) -> Option<f64> {
    (q + 1 < QUEUES).then(|| FIRST_LIMIT / scale * MULTIPLIER.powi(q as i32))
}

/// D-CLAS over EPS.
#[derive(Clone, Debug, Default)]
pub struct Aalo {
    fill: PriorityFill,
    /// Each active coflow's flows as a call last read them.
    paths: FlowPaths,
    held: HeldPlans,
    /// Each active coflow's queue when the held plans were computed, in id order.
    queues: Vec<u32>,
    /// The wake-up asked for with them.
    wake_at: Option<Nanos>,
    /// Scratch: every active flow's rate.
    rates: Vec<(FlowId, f64)>,
    /// Scratch: each coflow's first flow and span of `rates`.
    spans: Vec<(FlowId, Range<usize>)>,
    spare: SparePlans,
}

impl CoflowPolicy for Aalo {
    fn name(&self) -> &'static str {
        "aalo"
    }
    fn triggers(&self) -> Triggers {
        // Coflow arrivals and completions (and flows joining a coflow);
        // queue crossings come through wake_at.
        Triggers::COFLOW_EVENTS
    }
    fn decide(&mut self, now: Nanos, view: &NetView, progress: &dyn Progress) -> Decision {
        let scale = view.fabric.scale;
        let sent: BTreeMap<CoflowId, f64> = view
            .coflows
            .iter()
            .map(|(&id, c)| (id, progress.sent_bytes(id, c)))
            .collect();
        let queues: Vec<u32> = sent.values().map(|&s| queue_of(s, scale)).collect();
        let mut plans = self.spare.take();
        if queues == self.queues && self.held.still(view, &mut plans) {
            if self.wake_at.is_none_or(|t| t <= now) {
                self.wake_at = rearm(now, view, &plans, &sent, scale);
            }
            return Decision {
                plans,
                wake_at: self.wake_at,
                ..Decision::default()
            };
        }
        let mut order: Vec<(u32, Nanos, CoflowId, &CoflowView)> = view
            .coflows
            .iter()
            .zip(&queues)
            .map(|((&id, c), &q)| (q, c.arrival, id, c))
            .collect();
        order.sort_unstable_by_key(|&(q, arrival, id, _)| (q, arrival, id));
        let mut residual = view.links.capacities().to_vec();
        let rates = &mut self.rates;
        rates.clear();
        // Coflow after coflow in queue order, each one's total rate kept
        // to tell when it crosses its queue's limit.
        let mut wake_at: Option<Nanos> = None;
        let spans = &mut self.spans;
        spans.clear();
        self.paths.keep_active(view);
        for &(q, _, id, c) in &order {
            let start = rates.len();
            let flows = self.paths.active(view, id, c);
            self.fill.fill_flows(&mut residual, flows, rates);
            if let Some(&(first, _)) = rates.get(start) {
                spans.push((first, start..rates.len()));
            }
            let rate: f64 = rates[start..].iter().map(|&(_, r)| r).sum();
            let crossing = limit_of(q, scale)
                .zip(sent.get(&id))
                .filter(|_| rate > 0.0)
                .map(|(limit, &sent)| now + Nanos(((limit - sent).max(0.0) / rate * 1e9).ceil() as u64 + 1));
            wake_at = wake_at.into_iter().chain(crossing).min();
        }
        // In flow-id order, as they are held (and as a driver finds the
        // flows: ids arrive in sequence). Each coflow's flows come in id
        // order; coflows whose ids do not interleave (a trace's) need
        // only be put in order of their first flow.
        spans.sort_unstable_by_key(|(first, _)| *first);
        plans.clear();
        for (_, span) in spans.iter() {
            plans.extend(
                rates[span.clone()]
                    .iter()
                    .map(|&(f, r)| (f, FlowPlan::eps_paced(r))),
            );
        }
        if !plans.is_sorted_by_key(|&(f, _)| f) {
            plans.sort_unstable_by_key(|&(f, _)| f);
        }
        rates.clear();
        self.held.hold(view, &plans);
        self.queues = queues;
        self.wake_at = wake_at;
        Decision {
            plans,
            wake_at,
            ..Decision::default()
        }
    }
    fn recycle(&mut self, decision: Decision) {
        self.spare.keep(decision);
    }
}

/// The first time a coflow reaches its queue's limit at the rates of the
/// standing `plans` (flow-id order, one per flow of `view`), having sent `sent`.
fn rearm(
    now: Nanos,
    view: &NetView,
    plans: &[(FlowId, FlowPlan)],
    sent: &BTreeMap<CoflowId, f64>,
    scale: f64,
) -> Option<Nanos> {
    let mut rate: BTreeMap<CoflowId, f64> = BTreeMap::new();
    for (f, (_, plan)) in view.flows.values().zip(plans) {
        if let Some(cap) = plan.cap {
            *rate.entry(f.spec.coflow).or_default() += cap.bytes_per_sec();
        }
    }
    rate.iter()
        .filter_map(|(id, &r)| {
            let sent = *sent.get(id)?;
            let limit = limit_of(queue_of(sent, scale), scale)?;
            (r > 0.0).then(|| now + Nanos(((limit - sent).max(0.0) / r * 1e9).ceil() as u64 + 1))
        })
        .min()
}
