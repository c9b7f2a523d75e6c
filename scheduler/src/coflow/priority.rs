//! Strict priority between coflows, max-min fairness inside one: the rate
//! allocation FIFO and Aalo use, and Varys' backfilling. Coflows are served
//! in the given order; each takes the max-min fair rates of its EPS flows on
//! what the coflows before it left of every link.

use crate::coflow::NetView;
use crate::model::coflow::{CoflowId, FlowId};
use crate::net::maxmin::{Demand, WaterFill};

/// Scratch space for [`PriorityFill::fill_in_order`], reusable across calls.
#[derive(Clone, Debug, Default)]
pub struct PriorityFill {
    water: WaterFill,
    links: usize,
    demands: Vec<Demand>,
    ids: Vec<FlowId>,
    rates: Vec<f64>,
}

impl PriorityFill {
    /// Pushes onto `out` one `(flow, rate)` per flow of the coflows in
    /// `order`: each flow's max-min share of `residual` (bytes per second per
    /// link, reduced as it is used), coflow after coflow in `order`.
    pub fn fill_in_order(
        &mut self,
        view: &NetView,
        order: &[CoflowId],
        residual: &mut [f64],
        out: &mut Vec<(FlowId, f64)>,
    ) {
        if self.links != view.links.len() {
            self.water = WaterFill::new(view.links.len());
            self.links = view.links.len();
        }
        for &c in order {
            self.demands.clear();
            self.ids.clear();
            for f in view.flows_of(c) {
                self.ids.push(f.spec.id);
                self.demands
                    .push(Demand::new(view.links.eps_path(f.spec.src, f.spec.dst)));
            }
            self.water.fill(residual, &self.demands, &mut self.rates);
            out.extend(self.ids.iter().copied().zip(self.rates.iter().copied()));
        }
    }
}
