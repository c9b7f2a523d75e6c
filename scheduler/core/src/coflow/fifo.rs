//! FIFO coflow scheduling: coflows in arrival order (ties by id), strict
//! priority between them, max-min fair sharing among one coflow's flows on
//! what earlier coflows left. All flows over EPS. The FIFO baseline of
//! Varys (Chowdhury, Zhong & Stoica, SIGCOMM'14, Sec. 7) and Orchestra.
//!
//! The policy only orders coflows ([`Decision::order`]); the drivers turn
//! the order into rates: the fluid network solves strict priority between
//! coflows at every event (`ocslab_scheduler::net::class_levels`), so the rates
//! stay work-conserving as flows leave, and the emulation driver paces
//! each flow at its rate ([`crate::coflow::priority::paced_in_order`]).
//! The order changes only when a coflow arrives or completes.

use crate::coflow::{CoflowPolicy, Decision, NetView, Progress, Triggers};
use crate::model::coflow::CoflowId;
use crate::Nanos;

/// FIFO across coflows, fair within one.
#[derive(Clone, Debug, Default)]
pub struct Fifo;

impl CoflowPolicy for Fifo {
    fn name(&self) -> &'static str {
        "fifo"
    }
    fn orders_coflows(&self) -> bool {
        true
    }
    fn triggers(&self) -> Triggers {
        // The order changes when a coflow arrives or completes.
        Triggers::COFLOW_EVENTS
    }
    fn decide(&mut self, _now: Nanos, view: &NetView, _progress: &dyn Progress) -> Decision {
        let mut order: Vec<(Nanos, CoflowId)> = view.coflows.iter().map(|(&id, c)| (c.arrival, id)).collect();
        order.sort_unstable();
        Decision {
            order: order.into_iter().map(|(_, id)| id).collect(),
            ..Decision::default()
        }
    }
}
