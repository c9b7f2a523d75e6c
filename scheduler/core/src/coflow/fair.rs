//! Per-flow fair sharing: every flow over EPS, no pacing, so flows share
//! each link max-min fairly, as long-lived TCP flows do. The baseline of
//! coflow papers (Varys, Aalo: "per-flow fairness").

use crate::coflow::{CoflowPolicy, Decision, NetView, Progress, Triggers};
use crate::Nanos;

/// Per-flow max-min fair sharing over EPS.
#[derive(Clone, Copy, Debug, Default)]
pub struct Fair;

impl CoflowPolicy for Fair {
    fn name(&self) -> &'static str {
        "fair"
    }
    fn triggers(&self) -> Triggers {
        Triggers::NEVER // the decision is always the same: nothing planned
    }
    fn decide(&mut self, _now: Nanos, _view: &NetView, _progress: &dyn Progress) -> Decision {
        Decision::default()
    }
}
