//! FIFO coflow scheduling: coflows in arrival order (ties by id), strict
//! priority between them, max-min fair sharing among one coflow's flows on
//! what earlier coflows left. All flows over EPS. The FIFO baseline of
//! Varys (Chowdhury, Zhong & Stoica, SIGCOMM'14, Sec. 7) and Orchestra.

use crate::coflow::priority::PriorityFill;
use crate::coflow::{CoflowPolicy, Decision, FlowPlan, NetView, Progress, Triggers};
use crate::model::coflow::CoflowId;
use ocslab_emulator::Nanos;

/// FIFO across coflows, fair within one.
#[derive(Clone, Debug, Default)]
pub struct Fifo {
    fill: PriorityFill,
}

impl CoflowPolicy for Fifo {
    fn name(&self) -> &'static str {
        "fifo"
    }
    fn triggers(&self) -> Triggers {
        // Arrival order and the set of active flows; no progress, no circuits.
        Triggers::EVERY_FLOW
    }
    fn decide(&mut self, _now: Nanos, view: &NetView, _progress: &dyn Progress) -> Decision {
        let mut order: Vec<(Nanos, CoflowId)> = view.coflows.iter().map(|(&id, c)| (c.arrival, id)).collect();
        order.sort();
        let order: Vec<CoflowId> = order.into_iter().map(|(_, id)| id).collect();
        let mut residual = view.links.capacities().to_vec();
        let mut rates = Vec::with_capacity(view.flows.len());
        self.fill.fill_in_order(view, &order, &mut residual, &mut rates);
        Decision {
            plans: rates
                .into_iter()
                .map(|(f, r)| (f, FlowPlan::eps_paced(r)))
                .collect(),
            ..Decision::default()
        }
    }
}
