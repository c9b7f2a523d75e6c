//! Sincronia: Agarwal, Rajakrishnan, Narayan, Agarwal, Shmoys & Vahdat,
//! "Sincronia: Near-Optimal Network Design for Coflows", SIGCOMM'18.
//!
//! Given the "right" order of coflows, any rate allocation that keeps to
//! the order (a coflow's flows never wait for a later coflow's) is within
//! 4× of the optimal average CCT. The order comes from BSSI,
//! Bottleneck-Select-Scale-Iterate (the paper's Algorithm 1), which fills
//! the order from the last place to the first:
//!
//! ```text
//! w[c] = 1 for every unfinished coflow c
//! for k = |C| down to 1:
//!     b = the most loaded link: argmax_l Σ_c d[c][l]       -- bottleneck
//!     f = argmin over c with d[c][b] > 0 of w[c] / d[c][b] -- select: the largest
//!     σ[k] = f                                               -- (weighted) coflow on b goes last
//!     w[c] -= w[f] · d[c][b] / d[f][b] for every other c    -- scale
//!     C = C \ {f}                                           -- iterate
//! ```
//!
//! The rates keep to the order by strict priority between coflows
//! ([`Decision::order`]: max-min fair sharing inside a coflow, on what the
//! earlier ones leave), which the fluid network solves at every event and
//! the emulation driver paces.
//!
//! - `d[c][l]` is coflow `c`'s bytes left on link `l` divided by `l`'s
//!   capacity (seconds), over each flow's EPS path: the paper's ingress and
//!   egress ports of a big switch when the ports are all alike, and any
//!   link of ocslab's fabric (NICs, ToR uplinks and downlinks) otherwise.
//! - Ties, which the paper leaves open: the lowest link id is the
//!   bottleneck, and of coflows with equal `w / d` the later arrival (then
//!   the larger id) goes last. Coflows with no bytes on any link go first,
//!   by arrival.
//! - When: the order is computed again when a coflow arrives, gains flows or
//!   completes (the paper orders "periodically"; at coflow events is what
//!   its online evaluation does), and held in between, so a call at any
//!   other event changes nothing.

use crate::coflow::flow_paths::FlowPaths;
use crate::coflow::{CoflowPolicy, CoflowView, Decision, NetView, Progress, Triggers};
use crate::model::coflow::CoflowId;
use crate::net::links::LinkId;
use crate::{Bytes, Nanos};
use std::collections::BTreeMap;

/// BSSI order, strict priority in it.
#[derive(Clone, Debug, Default)]
pub struct Sincronia {
    /// The order of the last computation.
    order: Vec<CoflowId>,
    /// Each active coflow's known bytes then (flows joining change them).
    known: BTreeMap<CoflowId, Bytes>,
    /// Each active coflow's flows as a computation last read them.
    paths: FlowPaths,
    /// Scratch: one coflow's demand per link and the links it touches.
    demand: Vec<(f64, bool)>,
    touched: Vec<LinkId>,
}

/// The BSSI order of `coflows`, each given with its demand per link
/// (seconds of the link's capacity) and listed by arrival: first served first.
pub fn bssi(coflows: &[(CoflowId, Vec<(LinkId, f64)>)]) -> Vec<CoflowId> {
    let n = coflows.len();
    let mut on_link: BTreeMap<LinkId, Vec<(usize, f64)>> = BTreeMap::new();
    for (k, (_, demand)) in coflows.iter().enumerate() {
        for &(l, d) in demand.iter().filter(|(_, d)| *d > 0.0) {
            on_link.entry(l).or_default().push((k, d));
        }
    }
    let mut total: BTreeMap<LinkId, f64> = on_link
        .iter()
        .map(|(&l, cs)| (l, cs.iter().map(|&(_, d)| d).sum()))
        .collect();
    let mut weight = vec![1.0f64; n];
    let mut left = vec![true; n];
    let mut last_first: Vec<usize> = Vec::with_capacity(n);
    // Bottleneck: the most loaded link, the lowest id of equals.
    let bottleneck = |total: &BTreeMap<LinkId, f64>| {
        total
            .iter()
            .filter(|(_, &t)| t > 0.0)
            .fold(None, |best: Option<(LinkId, f64)>, (&l, &t)| match best {
                Some((_, bt)) if bt >= t => best,
                _ => Some((l, t)),
            })
            .map(|(l, _)| l)
    };
    while let Some(b) = bottleneck(&total) {
        // Select: the smallest w / d on b, the latest of equals.
        let on_b = &on_link[&b];
        let Some((f, d_f)) = on_b.iter().filter(|&&(c, _)| left[c]).fold(
            None,
            |best: Option<(usize, f64)>, &(c, d)| match best {
                Some((bc, bd)) if weight[bc] / bd < weight[c] / d => best,
                _ => Some((c, d)),
            },
        ) else {
            total.remove(&b);
            continue;
        };
        last_first.push(f);
        left[f] = false;
        // Scale the others on b.
        let w_f = weight[f];
        for &(c, d) in on_b {
            if left[c] {
                weight[c] -= w_f * d / d_f;
            }
        }
        for &(l, d) in coflows[f].1.iter().filter(|(_, d)| *d > 0.0) {
            if let Some(t) = total.get_mut(&l) {
                *t -= d;
                if *t <= 1e-12 {
                    *t = 0.0;
                }
            }
        }
    }
    // Coflows with no demand first, by arrival; then the BSSI order.
    let mut order: Vec<CoflowId> = (0..n).filter(|&c| left[c]).map(|c| coflows[c].0).collect();
    order.extend(last_first.iter().rev().map(|&c| coflows[c].0));
    order
}

impl CoflowPolicy for Sincronia {
    fn name(&self) -> &'static str {
        "sincronia"
    }
    fn orders_coflows(&self) -> bool {
        true
    }
    fn triggers(&self) -> Triggers {
        Triggers::COFLOW_EVENTS
    }
    fn decide(&mut self, _now: Nanos, view: &NetView, progress: &dyn Progress) -> Decision {
        let same = view.coflows.len() == self.known.len()
            && view
                .coflows
                .iter()
                .all(|(id, c)| self.known.get(id) == Some(&c.known_bytes));
        if !same {
            let capacity = view.links.capacities();
            let mut by_arrival: Vec<(Nanos, CoflowId, &CoflowView)> =
                view.coflows.iter().map(|(&id, c)| (c.arrival, id, c)).collect();
            by_arrival.sort_unstable_by_key(|&(arrival, id, _)| (arrival, id));
            self.paths.keep_active(view);
            let (paths, demand, touched) = (&mut self.paths, &mut self.demand, &mut self.touched);
            demand.resize(capacity.len(), (0.0, false));
            let demands: Vec<(CoflowId, Vec<(LinkId, f64)>)> = by_arrival
                .into_iter()
                .map(|(_, id, c)| {
                    for (_, path, left) in paths.remaining(view, id, c, progress) {
                        for &l in path.as_slice() {
                            let cap = capacity[l as usize];
                            let d = if cap > 0.0 { left / cap } else { f64::INFINITY };
                            let on = &mut demand[l as usize];
                            if !on.1 {
                                *on = (0.0, true);
                                touched.push(l);
                            }
                            on.0 += d;
                        }
                    }
                    touched.sort_unstable();
                    let on = touched
                        .iter()
                        .map(|&l| (l, std::mem::replace(&mut demand[l as usize], (0.0, false)).0))
                        .collect();
                    touched.clear();
                    (id, on)
                })
                .collect();
            self.order = bssi(&demands);
            self.known = view.coflows.iter().map(|(&id, c)| (id, c.known_bytes)).collect();
        }
        Decision {
            order: self.order.clone(),
            ..Decision::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(id: u64, demand: &[(LinkId, f64)]) -> (CoflowId, Vec<(LinkId, f64)>) {
        (CoflowId(id), demand.to_vec())
    }

    /// Worked by hand: X (id 1) needs 1 s on each of links 0, 1, 2; Y1, Y2,
    /// Y3 (ids 2-4) need 1.1 s on link 0, 1, 2 alone. Smallest bottleneck
    /// first would serve X first (Γ = 1 < 1.1): CCTs 1, 2.1, 2.1, 2.1,
    /// sum 7.3.
    /// - k = 4: loads 2.1, 2.1, 2.1: b = link 0; w/d: X 1/1, Y1 1/1.1: Y1 last;
    ///   X's weight 1 − 1/1.1 = 0.0909.
    /// - k = 3: loads 1, 2.1, 2.1: b = link 1; X 0.0909/1 < Y2 1/1.1: X third.
    /// - k = 2: loads 0, 1.1, 1.1: b = link 1: Y2. k = 1: Y3.
    ///
    /// Y3, Y2, X, Y1 in strict priority: CCTs 1.1, 1.1, 2.1 (X's link-0 flow
    /// goes at once, its others after Y2 and Y3), 2.1 (Y1 after X on link
    /// 0): sum 6.4.
    #[test]
    fn bssi_orders_the_hand_worked_example() {
        let order = bssi(&[
            c(1, &[(0, 1.0), (1, 1.0), (2, 1.0)]),
            c(2, &[(0, 1.1)]),
            c(3, &[(1, 1.1)]),
            c(4, &[(2, 1.1)]),
        ]);
        assert_eq!(order, vec![CoflowId(4), CoflowId(3), CoflowId(1), CoflowId(2)]);
    }

    /// On one link BSSI is shortest first; equal ones keep their arrival
    /// order, and a coflow with nothing left goes first.
    #[test]
    fn on_one_link_bssi_is_shortest_first() {
        let order = bssi(&[
            c(1, &[(0, 3.0)]),
            c(2, &[(0, 1.0)]),
            c(3, &[(0, 2.0)]),
            c(4, &[(0, 1.0)]),
            c(5, &[]),
        ]);
        let ids: Vec<u64> = order.iter().map(|c| c.0).collect();
        assert_eq!(ids, vec![5, 2, 4, 3, 1]);
    }
}
