//! Per-flow fair sharing: every flow over EPS, no pacing, so flows share
//! each link max-min fairly, as long-lived TCP flows do. The baseline of
//! coflow papers (Varys, Aalo: "per-flow fairness").
//!
//! [`FairSplit`] is per-flow fairness as CoflowSim (Chowdhury,
//! github.com/coflow/coflowsim) computes it for those papers' FB2010
//! figures (`FlowSimulator.fairShare`): each port is split equally among
//! its flows, and a flow moves at the smaller of its two ports' shares.
//! What a flow cannot use of a share is not handed to the others, so a
//! port can stay partly idle where max-min would fill it. The fluid
//! network alone can share links this way
//! ([`CoflowPolicy::splits_links_equally`]).

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

/// Per-flow fair sharing as CoflowSim's `FAIR` computes it: every link
/// split equally among its flows (see the module's doc).
#[derive(Clone, Copy, Debug, Default)]
pub struct FairSplit;

impl CoflowPolicy for FairSplit {
    fn name(&self) -> &'static str {
        "fair-split"
    }
    fn splits_links_equally(&self) -> bool {
        true
    }
    fn triggers(&self) -> Triggers {
        Triggers::NEVER // the network splits the links; nothing to plan
    }
    fn decide(&mut self, _now: Nanos, _view: &NetView, _progress: &dyn Progress) -> Decision {
        Decision::default()
    }
}
