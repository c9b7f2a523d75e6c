//! Aalo's Discretized Coflow-Aware Least-Attained Service (D-CLAS), from
//! Chowdhury & Stoica, "Efficient Coflow Scheduling Without Prior
//! Knowledge", SIGCOMM'15, Sec. 4 (Pseudocode 1).
//!
//! Non-clairvoyant: a coflow's priority falls as the bytes it has sent grow.
//! There are K = 10 queues; queue q holds coflows that have sent less than
//! Q_q = 10 MB·10^q (and at least Q_{q-1}); the last queue has no limit.
//! Queues are served in strict priority, coflows inside one queue in FIFO
//! order (arrival, then id), and a coflow's flows share max-min fairly what
//! the coflows before it left (MB = 2^20 bytes, as in CoflowSim). A coflow
//! moves down when it crosses its queue's limit: the policy asks to be
//! woken at the first such crossing.
//!
//! `aalo-split` ([`Aalo::as_dark`]) runs D-CLAS as CoflowSim's
//! `CoflowSimulatorDark` does, the simulator behind the paper's FB2010
//! figures: each link's residual is split equally among the coflow's flows
//! on it, each flow taking its smallest part
//! ([`PriorityFill::split_flows`]); queues move only at coflow arrivals and
//! completions (and when a flow joins a coflow: it needs a rate), with no
//! wake-up at a crossing; a coflow moves down once it
//! has sent more than its queue's limit, to the end of the next queue; and
//! each queue is served in the order its coflows entered it.
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
    /// Whether it runs as CoflowSim's `DARK` does (`aalo-split`, see the module's doc).
    as_dark: bool,
    /// Its queues, when it does.
    dark: DarkQueues,
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

impl Aalo {
    /// D-CLAS as CoflowSim's `DARK` runs it (`aalo-split`).
    pub fn as_dark() -> Aalo {
        Aalo {
            as_dark: true,
            ..Aalo::default()
        }
    }
}

impl CoflowPolicy for Aalo {
    fn name(&self) -> &'static str {
        if self.as_dark {
            "aalo-split"
        } else {
            "aalo"
        }
    }
    fn triggers(&self) -> Triggers {
        // Coflow arrivals and completions (and flows joining a coflow);
        // queue crossings come through wake_at.
        Triggers::COFLOW_EVENTS
    }
    fn decide(&mut self, now: Nanos, view: &NetView, progress: &dyn Progress) -> Decision {
        let scale = view.fabric.scale;
        let mut plans = self.spare.take();
        // aalo-split's queues move at coflow events only; in between its
        // plans stand, and no progress need be read.
        if self.as_dark && self.held.still(view, &mut plans) {
            return Decision {
                plans,
                ..Decision::default()
            };
        }
        let sent: BTreeMap<CoflowId, f64> = view
            .coflows
            .iter()
            .map(|(&id, c)| (id, progress.sent_bytes(id, c)))
            .collect();
        let queues: Vec<u32> = if self.as_dark {
            self.dark.update(&sent, scale)
        } else {
            let queues: Vec<u32> = sent.values().map(|&s| queue_of(s, scale)).collect();
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
            queues
        };
        let mut order: Vec<(u32, Nanos, CoflowId, &CoflowView)> = view
            .coflows
            .iter()
            .zip(&queues)
            .map(|((&id, c), &q)| (q, c.arrival, id, c))
            .collect();
        if self.as_dark {
            // Served in the order they entered their queues.
            order.sort_unstable_by_key(|&(_, _, id, _)| self.dark.rank(id));
        } else {
            order.sort_unstable_by_key(|&(q, arrival, id, _)| (q, arrival, id));
        }
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
            if self.as_dark {
                self.fill.split_flows(&mut residual, flows, rates);
            } else {
                self.fill.fill_flows(&mut residual, flows, rates);
            }
            if let Some(&(first, _)) = rates.get(start) {
                spans.push((first, start..rates.len()));
            }
            let rate: f64 = rates[start..].iter().map(|&(_, r)| r).sum();
            let crossing = limit_of(q, scale)
                .zip(sent.get(&id))
                .filter(|_| rate > 0.0)
                .map(|(limit, &sent)| now + Nanos(((limit - sent).max(0.0) / rate * 1e9).ceil() as u64 + 1));
            if !self.as_dark {
                wake_at = wake_at.into_iter().chain(crossing).min();
            }
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

/// D-CLAS's queues as CoflowSim's `DARK` keeps them
/// (`CoflowSimulatorDark.updateJobOrder`): a coflow joins the end of the
/// first queue when it arrives, and moves to the end of the next queue
/// when, at an update, it has sent more than its queue's limit; each queue
/// is served in the order its coflows entered it.
#[derive(Clone, Debug, Default)]
struct DarkQueues {
    /// Each queue's coflows, in the order they entered it.
    queues: Vec<Vec<CoflowId>>,
    /// Each coflow's place in service order, as of the last update.
    rank: BTreeMap<CoflowId, usize>,
}

impl DarkQueues {
    /// Drops the coflows that left, adds those of `sent` that are new (in
    /// id order), moves each that has sent more than its queue's limit
    /// down, and returns each coflow's queue in id order.
    fn update(&mut self, sent: &BTreeMap<CoflowId, f64>, scale: f64) -> Vec<u32> {
        self.queues.resize(QUEUES as usize, Vec::new());
        for q in &mut self.queues {
            q.retain(|c| sent.contains_key(c));
        }
        self.queues[0].extend(sent.keys().filter(|c| !self.rank.contains_key(c)));
        let mut queue_of = BTreeMap::new();
        for q in 0..QUEUES as usize {
            let limit = limit_of(q as u32, scale);
            let (stay, go): (Vec<CoflowId>, Vec<CoflowId>) = std::mem::take(&mut self.queues[q])
                .into_iter()
                .partition(|c| limit.is_none_or(|limit| sent[c] <= limit));
            self.queues[q] = stay;
            if let Some(next) = self.queues.get_mut(q + 1) {
                next.extend(go);
            }
            queue_of.extend(self.queues[q].iter().map(|&c| (c, q as u32)));
        }
        self.rank = self
            .queues
            .iter()
            .flatten()
            .enumerate()
            .map(|(i, &c)| (c, i))
            .collect();
        queue_of.into_values().collect()
    }

    /// The place of `coflow` in service order.
    fn rank(&self, coflow: CoflowId) -> usize {
        self.rank.get(&coflow).copied().unwrap_or(usize::MAX)
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
