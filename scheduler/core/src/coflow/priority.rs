//! Strict priority between coflows, max-min fairness inside one: the rate
//! allocation Aalo uses, Varys' backfilling, and the pacing by which the
//! emulation driver carries out a coflow order ([`paced_in_order`], FIFO's
//! decisions). Coflows are served in the given order; each takes the
//! max-min fair rates of its EPS flows on what the coflows before it left
//! of every link. (The fluid network solves a coflow order itself, class
//! by class: `ocslab_scheduler::net::class_levels`.)

use crate::coflow::{FlowPlan, NetView};
use crate::model::coflow::{CoflowId, FlowId};
use crate::net::links::Links;
use crate::net::maxmin::{Demand, WaterFill};
use std::collections::BTreeSet;

/// The per-flow plans that carry out a decision's coflow `order`
/// ([`crate::coflow::Decision::order`]) for a driver that paces flows: the
/// coflows listed, then those not listed by id, one after the other, each
/// flow over EPS paced at its max-min share of what the coflows before its
/// own left.
pub fn paced_in_order(view: &NetView, order: &[CoflowId]) -> Vec<(FlowId, FlowPlan)> {
    let mut listed = BTreeSet::new();
    let mut all: Vec<CoflowId> = order.iter().copied().filter(|&c| listed.insert(c)).collect();
    all.extend(view.coflows.keys().copied().filter(|c| !listed.contains(c)));
    let mut residual = view.links.capacities().to_vec();
    let mut rates = Vec::with_capacity(view.flows.len());
    PriorityFill::default().fill_in_order(view, &all, &mut residual, &mut rates);
    rates
        .into_iter()
        .map(|(f, r)| (f, FlowPlan::eps_paced(r)))
        .collect()
}

/// Below this many bytes per second of residual a link counts as full in
/// [`PriorityFill::split_flows`] and in `sebf`'s MADD and greedy fill
/// ([`crate::coflow::varys`]), as a port below CoflowSim's
/// `Constants.ZERO` (a thousandth of a bit per second) does.
pub const FULL: f64 = 1e-3;

/// Scratch space for [`PriorityFill::fill_in_order`], reusable across calls.
#[derive(Clone, Debug, Default)]
pub struct PriorityFill {
    water: WaterFill,
    links: usize,
    demands: Vec<Demand>,
    ids: Vec<FlowId>,
    rates: Vec<f64>,
    /// Scratch of [`PriorityFill::split_flows`]: the routes, and the
    /// coflow's flows on each link.
    routes: Vec<Links>,
    count: Vec<u32>,
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
        for &c in order {
            let flows = view
                .flows_of(c)
                .map(|f| (f.spec.id, view.links.eps_path(f.spec.src, f.spec.dst)));
            self.fill_flows(residual, flows, out);
        }
    }

    /// Pushes onto `out` one `(flow, rate)` per flow of `flows` (one
    /// coflow's, as (id, EPS path)): their max-min fair rates on
    /// `residual`, which is reduced by what they take. One step of
    /// [`PriorityFill::fill_in_order`] for a caller that keeps the routes.
    pub fn fill_flows(
        &mut self,
        residual: &mut [f64],
        flows: impl IntoIterator<Item = (FlowId, Links)>,
        out: &mut Vec<(FlowId, f64)>,
    ) {
        let mut ids = std::mem::take(&mut self.ids);
        ids.clear();
        let routes = flows.into_iter().map(|(id, links)| {
            ids.push(id);
            links
        });
        let rates = self.fill_one(residual, routes);
        out.extend(ids.iter().copied().zip(rates.iter().copied()));
        self.ids = ids;
    }

    /// Pushes onto `out` one `(flow, rate)` per flow of `flows`, the links
    /// of one coflow split as CoflowSim's `DARK` splits a coflow's ports
    /// (`CoflowSimulatorDark.updateRates`): each link's `residual` goes
    /// in equal parts to the flows crossing it that have room on every
    /// link (a flow with a full link gets 0 and takes no part), and each
    /// flow takes the smallest of its parts. `residual` is then reduced by
    /// what they take. Unlike max-min, what a flow cannot use of a part is
    /// left to the coflows after it.
    pub fn split_flows(
        &mut self,
        residual: &mut [f64],
        flows: impl IntoIterator<Item = (FlowId, Links)>,
        out: &mut Vec<(FlowId, f64)>,
    ) {
        self.count.resize(residual.len(), 0);
        self.routes.clear();
        let start = out.len();
        for (id, links) in flows {
            out.push((id, 0.0));
            self.routes.push(links);
        }
        // Subtraction leaves crumbs on a link its flows fill exactly: below
        // a thousandth of a byte per second a link is full, as below
        // CoflowSim's `Constants.ZERO` (a thousandth of a bit) a port is.
        let has_room = |links: &Links| links.as_slice().iter().all(|&l| residual[l as usize] > FULL);
        for links in self.routes.iter().filter(|l| has_room(l)) {
            for &l in links.as_slice() {
                self.count[l as usize] += 1;
            }
        }
        for (links, (_, rate)) in self.routes.iter().zip(&mut out[start..]) {
            if has_room(links) {
                *rate = links
                    .as_slice()
                    .iter()
                    .map(|&l| residual[l as usize] / f64::from(self.count[l as usize]))
                    .fold(f64::INFINITY, f64::min);
            }
        }
        for (links, &(_, rate)) in self.routes.iter().zip(&out[start..]) {
            for &l in links.as_slice() {
                self.count[l as usize] = 0;
                residual[l as usize] = (residual[l as usize] - rate).max(0.0);
            }
        }
    }

    /// The max-min fair rates of one coflow's flows, one per route of
    /// `routes` (same order), on `residual` (bytes per second per link,
    /// reduced by what they take): one step of [`PriorityFill::fill_in_order`]
    /// for a caller that has the routes at hand.
    pub fn fill_one(&mut self, residual: &mut [f64], routes: impl IntoIterator<Item = Links>) -> &[f64] {
        if self.links != residual.len() {
            self.water = WaterFill::new(residual.len());
            self.links = residual.len();
        }
        self.demands.clear();
        self.demands.extend(routes.into_iter().map(Demand::new));
        self.water.fill(residual, &self.demands, &mut self.rates);
        &self.rates
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coflow::FabricParams;
    use crate::model::coflow::FlowSpec;
    use crate::{Bps, Bytes, HostId, Nanos};

    /// Three racks of one host, NICs at 10 MB/s; A (coflow 1): a1 h0 -> h1,
    /// a2 h0 -> h2; B (coflow 2): b1 h2 -> h1, b2 h0 -> h1.
    fn view() -> NetView {
        let mut v = NetView::new(FabricParams {
            racks: 3,
            hosts_per_rack: 1,
            host_rate: Bps(80_000_000),
            uplink_rate: Bps(80_000_000),
            ocs_ports: 0,
            ocs_port_rate: Bps(0),
            reconfig_delay: Nanos::ZERO,
            elephant_threshold: Bytes(u64::MAX),
            scale: 1.0,
        });
        for (id, coflow, src, dst) in [(1, 1, 0, 1), (2, 1, 0, 2), (3, 2, 2, 1), (4, 2, 0, 1)] {
            let spec = FlowSpec {
                id: FlowId(id),
                coflow: CoflowId(coflow),
                src: HostId::new(src, 0),
                dst: HostId::new(dst, 0),
                bytes: Bytes(1_000_000),
                weight: 1,
            };
            v.insert_flow(spec, Nanos::ZERO);
        }
        v
    }

    #[test]
    fn an_order_is_paced_coflow_after_coflow_then_the_rest_by_id() {
        let mb = |r: f64| FlowPlan::eps_paced(r * 1e6);
        // A then B: a1 and a2 share h0's NIC up (5 MB/s each); b2 finds it
        // full and waits; b1 gets what a1 left of h1's NIC down (5).
        let plans = paced_in_order(&view(), &[CoflowId(1), CoflowId(2)]);
        let want = [(1, mb(5.0)), (2, mb(5.0)), (3, mb(5.0)), (4, FlowPlan::WAIT)];
        assert_eq!(plans, want.map(|(f, p)| (FlowId(f), p)));
        // Only B named: B first (b1 and b2 share h1's NIC down, 5 each),
        // then A, not named: a1 finds h1's NIC down full, a2 gets the 5 B
        // left of h0's NIC up. Nothing named: by id, A then B.
        let plans = paced_in_order(&view(), &[CoflowId(2)]);
        let want = [(3, mb(5.0)), (4, mb(5.0)), (1, FlowPlan::WAIT), (2, mb(5.0))];
        assert_eq!(plans, want.map(|(f, p)| (FlowId(f), p)));
        assert_eq!(
            paced_in_order(&view(), &[]),
            paced_in_order(&view(), &[CoflowId(1), CoflowId(2)])
        );
    }

    /// Links 0 and 1 of 12, link 2 of 6. One coflow: a over 0 and 2, b
    /// over 0, c over 1 and 2, d over 1. Each link halves: a and c get 3
    /// (link 2), b and d 6, and links 0 and 1 keep 3 each (max-min would
    /// give b and d 9). The next coflow's e over link 2 (full) gets 0 and
    /// takes no part of link 0, where f gets what is left. A link left
    /// with crumbs of rounding is full.
    #[test]
    fn split_flows_halves_each_link_and_leaves_what_a_flow_cannot_use() {
        let mut fill = PriorityFill::default();
        let mut split = |residual: &mut Vec<f64>, flows: &[(u64, &[u32])]| {
            let mut out = Vec::new();
            let flows = flows
                .iter()
                .map(|&(f, l)| (FlowId(f), Links::new(l).expect("at most 4 links")));
            fill.split_flows(residual, flows, &mut out);
            out
        };
        let mut residual = vec![12.0, 12.0, 6.0];
        let out = split(&mut residual, &[(1, &[0, 2]), (2, &[0]), (3, &[1, 2]), (4, &[1])]);
        assert_eq!(
            out,
            [
                (FlowId(1), 3.0),
                (FlowId(2), 6.0),
                (FlowId(3), 3.0),
                (FlowId(4), 6.0)
            ]
        );
        assert_eq!(residual, [3.0, 3.0, 0.0]);
        let out = split(&mut residual, &[(5, &[0, 2]), (6, &[0])]);
        assert_eq!(out, [(FlowId(5), 0.0), (FlowId(6), 3.0)]);
        let mut residual = vec![1e-6, 3.0];
        let out = split(&mut residual, &[(7, &[0, 1]), (8, &[1])]);
        assert_eq!(out, [(FlowId(7), 0.0), (FlowId(8), 3.0)]);
    }
}
