//! Coflow schedulers: pure policies that decide, at each scheduling instant,
//! each flow's path (EPS, or the circuit on OCS port `w` of its racks), its
//! pacing rate (or none: share as TCP does), which circuits to set up, and
//! when to be asked again.
//!
//! A policy implements [`CoflowPolicy`]: `schedule(now, &NetView) ->
//! Decision`. It has no clock and does no I/O: time is an argument, the
//! network is a [`NetView`] (a snapshot: fabric parameters, active flows with
//! their progress, active coflows, circuits), and the answer is plain data.
//! The same policy therefore drives the fluid simulator ([`crate::net`]) and
//! the kernel fabric (the emulation driver); see [`decision`] for how each
//! part of a [`Decision`] is carried out on both. Progress (bytes left and
//! sent) is read on demand through [`Progress`]. Each policy says which
//! events can change its decision ([`CoflowPolicy::triggers`]): the fluid
//! network calls it at those events and at its own `wake_at` only (the
//! emulation driver calls it at every flow and circuit event); never on a tick.
//!
//! Policies are chosen by name from one table, [`by_name`]:
//!
//! | name      | module        | what                                                     |
//! |-----------|---------------|----------------------------------------------------------|
//! | `fair`    | [`fair`]      | per-flow max-min fair sharing (what TCP gives)           |
//! | `fifo`    | [`fifo`]      | coflows in arrival order, strict priority                |
//! | `varys`   | [`varys`]     | SEBF order + MADD rates (Chowdhury et al., SIGCOMM'14)   |
//! | `aalo`    | [`aalo`]      | D-CLAS priority queues (Chowdhury & Stoica, SIGCOMM'15)  |
//! | `sunflow` | [`sunflow`]   | circuits for elephants, re-planned at arrivals and completions, smallest busiest port first (CoNEXT'16) |
//! | `sunflow-np` | [`sunflow_np`] | Sunflow as Co-scheduler uses it: shortest T(C) first, reservations held (non-preemptive) |
//! | `sincronia` | [`sincronia`] | BSSI order, strict priority in it (Agarwal et al., SIGCOMM'18) |
//!
//! [`lower_bound`] holds T(C) (Co-scheduler eqs. 1, 2 and 15) and the EPS
//! isolation bound.

pub mod aalo;
pub mod carry_out;
#[cfg(test)]
mod decide_tests;
pub mod decision;
pub mod fair;
pub mod fifo;
pub mod flow_paths;
pub mod held;
pub mod id_index;
pub mod id_table;
pub mod java_random;
pub mod lower_bound;
pub mod priority;
pub mod sincronia;
pub mod sorted_table;
pub mod sunflow;
pub mod sunflow_np;
pub mod varys;
pub mod view;

pub use carry_out::{plan_of, set_up_circuits, CircuitSwitch};
pub use decision::{CircuitSetup, Decision, FlowPlan, PairKey, PairPlan, PairPlans, SparePlans};
pub use view::{CircuitView, CoflowView, FabricParams, FlowView, NetView, Path, Progress, StoredProgress};

use crate::Nanos;

/// A coflow scheduler. Pure: no clock, no I/O, no access to the network but
/// the view it is lent.
///
/// Contract:
/// - `schedule` returns the plan until the next call: per-flow plans in
///   full ([`Decision::plans`]), pair plans as changes to the standing ones
///   ([`Decision::pair_changes`]; the driver applies every decision, in
///   order). Flows neither listed nor covered by a standing pair plan go
///   over EPS with no cap.
/// - A [`FlowPlan`] with [`Path::Ocs`] is only honoured for flows that
///   [`NetView::may_use_ocs`] (elephants: flows between racks whose coflow
///   has, so far, at least the elephant threshold between those two racks);
///   the network sends any other flow over EPS. A flow on a circuit moves only while that
///   circuit is up.
/// - Caps are pacing rates; a set of caps the links can carry is applied as
///   given, otherwise flows share max-min fairly under their caps.
/// - [`Decision::circuits`] are set up at once; the network applies the
///   dark time δ on both affected port sides (not-all-stop: other ports keep
///   running) and reports when the circuit is up.
/// - Under a topology's time-flow schedule (`[ocs.schedule]`, followed by
///   the fluid network) the circuits are the schedule's: circuit requests
///   are ignored, and a flow between racks crosses a circuit of its rack
///   pair while one is up and EPS otherwise, whatever its path's port.
/// - [`Decision::wake_at`] asks for a call at that time even if nothing else
///   happens; the network also calls at the events the policy's
///   [`CoflowPolicy::triggers`] name (the emulation driver at every flow
///   and circuit event). A call at any other event must change nothing
///   (the same per-flow plans and circuits, no pair plan changes), so
///   that skipping it changes nothing.
pub trait CoflowPolicy: Send {
    /// The name in [`by_name`].
    fn name(&self) -> &'static str;
    /// Whether this policy puts elephants on circuits (so its lower bound is
    /// the hybrid one: T(C) for elephants over the OCS, the EPS bound for the rest).
    fn uses_ocs(&self) -> bool {
        false
    }
    /// Whether its decisions order coflows ([`Decision::order`]): the
    /// fluid network then keeps each coflow's flows apart and solves
    /// strict priority between them at every event, so the policy need only
    /// be called when the order can change.
    fn orders_coflows(&self) -> bool {
        false
    }
    /// Whether each link is split equally among the flows that cross it
    /// (a flow gets the smallest of its links' `capacity ÷ flows`, and
    /// what it cannot use stays idle), as CoflowSim's `FAIR` computes
    /// per-flow fair sharing, instead of max-min fairly. Only the fluid
    /// network can share this way; the kernel fabric shares as TCP does.
    fn splits_links_equally(&self) -> bool {
        false
    }
    /// The events after which this policy's decision may differ from its
    /// last one; the network may skip calling it at any other event (its own
    /// `wake_at` always calls it). The default is every event.
    fn triggers(&self) -> Triggers {
        Triggers::EVERY_EVENT
    }
    /// The plan from `now` on, given the network as it is at `now`, with
    /// progress as stored in the view ([`StoredProgress`]).
    fn schedule(&mut self, now: Nanos, view: &NetView) -> Decision {
        self.decide(now, view, &StoredProgress)
    }
    /// The plan from `now` on, given the network as it is at `now` and its
    /// progress read through `progress` (the view's own progress fields may be stale).
    fn decide(&mut self, now: Nanos, view: &NetView, progress: &dyn Progress) -> Decision;
    /// Takes back a decision the driver has carried out, so that the next
    /// one can reuse its buffers: the plans of every active flow run to a
    /// megabyte on FB2010, and a fresh buffer that size costs a page fault
    /// per 4 KiB touched. The default drops it.
    fn recycle(&mut self, _decision: Decision) {}
}

/// Which flow arrivals can change a policy's decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrivals {
    /// None.
    Never,
    /// Arrivals of flows that may use a circuit ([`FlowView::elephant`]),
    /// including the one that makes its coflow's rack pair cross the
    /// elephant threshold (its earlier flows become elephants with it).
    Elephants,
    /// Every arrival.
    Every,
}

/// Which flow departures can change a policy's decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Departures {
    /// None.
    Never,
    /// The departure of a coflow's last active elephant between two racks
    /// (the rack pair's demand is done).
    ElephantPairDone,
    /// The departure of a coflow's last active flow (the coflow is done,
    /// until more of its flows arrive).
    CoflowDone,
    /// Every departure.
    Every,
}

/// The events after which a policy wants to be called
/// ([`CoflowPolicy::triggers`]); between them its last decision stands (flows
/// that arrive in between go over EPS uncapped, as unplanned flows do).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Triggers {
    /// Flow arrivals.
    pub arrivals: Arrivals,
    /// Flow departures.
    pub departures: Departures,
    /// A circuit coming up (its dark time over).
    pub circuit_up: bool,
}

impl Triggers {
    /// Every flow arrival and departure and every circuit coming up.
    pub const EVERY_EVENT: Triggers = Triggers {
        arrivals: Arrivals::Every,
        departures: Departures::Every,
        circuit_up: true,
    };
    /// Every flow arrival and departure, not circuits: policies whose rates
    /// depend on the set of active flows but that never use circuits.
    pub const EVERY_FLOW: Triggers = Triggers {
        arrivals: Arrivals::Every,
        departures: Departures::Every,
        circuit_up: false,
    };
    /// Every flow arrival and a coflow's completion (its last active flow
    /// leaving), not circuits: policies that recompute their schedule at
    /// coflow events only, as Varys and Aalo do (Varys, SIGCOMM'14, Sec.
    /// 5.3; CoflowSim's `afterJobAdmission`/`afterJobDeparture`).
    pub const COFLOW_EVENTS: Triggers = Triggers {
        arrivals: Arrivals::Every,
        departures: Departures::CoflowDone,
        circuit_up: false,
    };
    /// Arrivals of elephants and the end of a coflow's elephants between
    /// two racks, not circuits: circuit schedulers whose plans are per
    /// rack pair and which time their own circuits (`wake_at`), as
    /// Sunflow does.
    pub const ELEPHANT_PAIRS: Triggers = Triggers {
        arrivals: Arrivals::Elephants,
        departures: Departures::ElephantPairDone,
        circuit_up: false,
    };
    /// Nothing: a policy whose decision never changes.
    pub const NEVER: Triggers = Triggers {
        arrivals: Arrivals::Never,
        departures: Departures::Never,
        circuit_up: false,
    };
}

/// The names [`by_name`] knows, in the order reports list them.
pub const POLICY_NAMES: [&str; 10] = [
    "fair",
    "fair-split",
    "fifo",
    "varys",
    "sebf",
    "aalo",
    "aalo-split",
    "sincronia",
    "sunflow",
    "sunflow-np",
];

/// A coflow policy name that is not in the table.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown coflow scheduler {name:?}: expected one of fair, fair-split, fifo, varys, sebf, aalo, aalo-split, sincronia, sunflow, sunflow-np")]
pub struct UnknownPolicy {
    /// The name given.
    pub name: String,
}

/// The policy called `name` (see [`POLICY_NAMES`]).
pub fn by_name(name: &str) -> Result<Box<dyn CoflowPolicy>, UnknownPolicy> {
    Ok(match name {
        "fair" => Box::new(fair::Fair),
        "fair-split" => Box::new(fair::FairSplit),
        "fifo" => Box::new(fifo::Fifo),
        "varys" => Box::new(varys::Varys::default()),
        "sebf" => Box::new(varys::Varys::as_coflowsim()),
        "aalo" => Box::new(aalo::Aalo::default()),
        "aalo-split" => Box::new(aalo::Aalo::as_dark()),
        "sincronia" => Box::new(sincronia::Sincronia::default()),
        "sunflow" => Box::new(sunflow::Sunflow::default()),
        "sunflow-np" => Box::new(sunflow_np::SunflowNp::default()),
        _ => {
            return Err(UnknownPolicy {
                name: name.to_string(),
            })
        }
    })
}
