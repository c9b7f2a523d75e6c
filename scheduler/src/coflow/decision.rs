//! What a coflow policy decides: a [`Decision`] per scheduling instant.
//!
//! Every field can be carried out by both drivers:
//! - the simulator applies it to its fluid model;
//! - the emulation driver turns a [`FlowPlan`] into agent instructions (route
//!   over EPS, or mark the socket for the OCS table and use the circuit of
//!   port `w`; pace at `cap`, or let TCP share when `cap` is `None`), a
//!   [`CircuitSetup`] into OCS filter changes (the OCS applies the dark time δ
//!   itself), and `wake_at` into a timer.

use crate::coflow::view::Path;
use crate::model::coflow::{CoflowId, FlowId};
use ocslab_emulator::{Bps, Nanos};
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

/// One plan for all active flows of coflow `coflow` from rack `src_rack` to
/// rack `dst_rack`: what a circuit reservation serves (Sunflow decides per
/// rack pair). The fluid network keeps each pair's current plan, so a plan
/// repeated unchanged from one decision to the next costs nothing to apply;
/// the emulation driver expands it into per-flow plans.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct PairPlan {
    /// The coflow.
    pub coflow: CoflowId,
    /// Sending rack.
    pub src_rack: u32,
    /// Receiving rack.
    pub dst_rack: u32,
    /// The plan of each of those flows.
    pub plan: FlowPlan,
}

/// A policy's decision at one instant. Flows listed neither in `plans` nor
/// (through their coflow and racks) in `pair_plans` go over EPS with no cap
/// (fair sharing), so "all fair" is the empty decision. A flow covered by a
/// pair plan takes that plan; `plans` is for the other flows (a policy uses
/// one kind or the other for a given flow).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Decision {
    /// Per-flow plans.
    pub plans: Vec<(FlowId, FlowPlan)>,
    /// Per-(coflow, rack pair) plans, at most one per pair.
    pub pair_plans: Vec<PairPlan>,
    /// Circuits to set up now.
    pub circuits: Vec<CircuitSetup>,
    /// Call the policy again at this time even if nothing else happens
    /// (e.g. when a coflow will cross an Aalo queue threshold).
    pub wake_at: Option<Nanos>,
}
