//! A schedule held between the events that change it: Varys and Aalo
//! compute per-flow rates when a coflow arrives or completes (Aalo also
//! when a coflow crosses a queue threshold) and keep them in between
//! (Varys, SIGCOMM'14, Sec. 5.3; Aalo, SIGCOMM'15, Sec. 4-5; CoflowSim's
//! `afterJobAdmission` / `afterJobDeparture`). A call at any other event
//! (the emulation driver calls at every flow event) returns the held
//! plans of the flows still active, so the decision does not depend on how
//! often the policy is asked.

use crate::coflow::{FlowPlan, NetView};
use crate::model::coflow::{CoflowId, FlowId};
use std::cmp::Ordering;

/// The plans computed at the last coflow event, and the coflows they were computed for.
#[derive(Clone, Debug, Default)]
pub struct HeldPlans {
    /// The active coflows at that event, in id order.
    coflows: Vec<CoflowId>,
    /// Every flow's plan, in flow-id order.
    plans: Vec<(FlowId, FlowPlan)>,
    /// Whether anything is held.
    valid: bool,
}

impl HeldPlans {
    /// Holds `plans` (any order), computed for the flows and coflows of `view`.
    pub fn hold(&mut self, view: &NetView, plans: &[(FlowId, FlowPlan)]) {
        self.coflows.clear();
        self.coflows.extend(view.coflows.keys().copied());
        self.plans.clear();
        self.plans.extend_from_slice(plans);
        if !self.plans.is_sorted_by_key(|&(f, _)| f) {
            self.plans.sort_unstable_by_key(|&(f, _)| f);
        }
        self.valid = true;
    }

    /// Forgets the held plans (the next call recomputes).
    pub fn clear(&mut self) {
        self.valid = false;
    }

    /// Puts into `out` (cleared first) the held plans of the flows active
    /// in `view`, in flow-id order, and returns true, if no coflow arrived
    /// or completed since they were computed, every active flow has one
    /// (no flow arrived) and one of them moves; returns false otherwise
    /// (recompute). The last condition keeps the network live: when every
    /// flow the plans served has left before its coflow completed, the
    /// held rates would leave the rest waiting with no coflow event to
    /// come. O(active flows + held plans), one merge walk.
    pub fn still(&self, view: &NetView, out: &mut Vec<(FlowId, FlowPlan)>) -> bool {
        out.clear();
        if !self.valid || !self.coflows.iter().copied().eq(view.coflows.keys().copied()) {
            return false;
        }
        out.reserve(view.flows.len());
        let mut held = self.plans.iter().peekable();
        let mut moves = view.flows.is_empty();
        for &id in view.flows.keys() {
            loop {
                match held.peek().map(|&&(f, _)| f.cmp(&id)) {
                    // A flow that has left since.
                    Some(Ordering::Less) => {
                        held.next();
                    }
                    Some(Ordering::Equal) => {
                        if let Some(&(f, plan)) = held.next() {
                            moves |= plan.moves();
                            out.push((f, plan));
                        }
                        break;
                    }
                    // A flow that arrived since: not planned.
                    Some(Ordering::Greater) | None => return false,
                }
            }
        }
        moves
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coflow::{FabricParams, NetView};
    use crate::model::coflow::FlowSpec;
    use crate::{Bps, Bytes, HostId, Nanos};

    fn view(flows: &[(u64, u64)]) -> NetView {
        let mut v = NetView::new(FabricParams {
            racks: 2,
            hosts_per_rack: 1,
            host_rate: Bps(8_000_000),
            uplink_rate: Bps(8_000_000),
            ocs_ports: 0,
            ocs_port_rate: Bps(0),
            reconfig_delay: Nanos::ZERO,
            elephant_threshold: Bytes(u64::MAX),
            scale: 1.0,
        });
        for &(id, coflow) in flows {
            let spec = FlowSpec {
                id: FlowId(id),
                coflow: CoflowId(coflow),
                src: HostId::new(0, 0),
                dst: HostId::new(1, 0),
                bytes: Bytes(1000),
                weight: 1,
            };
            v.insert_flow(spec, Nanos::ZERO);
        }
        v
    }

    /// What [`HeldPlans::still`] gives, if anything.
    fn still(held: &HeldPlans, view: &NetView) -> Option<Vec<(FlowId, FlowPlan)>> {
        let mut out = vec![(FlowId(99), FlowPlan::EPS)];
        held.still(view, &mut out).then_some(out)
    }

    #[test]
    fn held_plans_stand_until_a_coflow_or_flow_arrives_or_a_coflow_completes() {
        let plan = |r: f64| FlowPlan::eps_paced(r);
        let mut held = HeldPlans::default();
        let all = view(&[(1, 1), (2, 1), (3, 2)]);
        assert_eq!(still(&held, &all), None, "nothing held yet");
        held.hold(
            &all,
            &[
                (FlowId(3), plan(3.0)),
                (FlowId(1), plan(1.0)),
                (FlowId(2), plan(2.0)),
            ],
        );
        assert_eq!(
            still(&held, &all),
            Some(vec![
                (FlowId(1), plan(1.0)),
                (FlowId(2), plan(2.0)),
                (FlowId(3), plan(3.0))
            ])
        );
        // Flow 1 left, coflow 1 still active: the others keep their plans.
        let left = view(&[(2, 1), (3, 2)]);
        assert_eq!(
            still(&held, &left),
            Some(vec![(FlowId(2), plan(2.0)), (FlowId(3), plan(3.0))])
        );
        // Coflow 1 completed, a coflow arrived, a flow of a known coflow arrived.
        assert_eq!(still(&held, &view(&[(3, 2)])), None);
        assert_eq!(still(&held, &view(&[(1, 1), (2, 1), (3, 2), (4, 3)])), None);
        assert_eq!(still(&held, &view(&[(1, 1), (2, 1), (3, 2), (4, 2)])), None);
        held.clear();
        assert_eq!(still(&held, &all), None);
    }

    #[test]
    fn held_plans_that_leave_every_active_flow_waiting_are_recomputed() {
        // Flow 1 was served, flows 2 and 3 held back. While flow 1 is
        // active the plans stand; once it has left (its coflow still
        // active) nothing held moves, and the policy must look again.
        let mut held = HeldPlans::default();
        let all = view(&[(1, 1), (2, 1), (3, 2)]);
        held.hold(
            &all,
            &[
                (FlowId(1), FlowPlan::eps_paced(1.0)),
                (FlowId(2), FlowPlan::WAIT),
                (FlowId(3), FlowPlan::eps_paced(0.0)),
            ],
        );
        assert!(still(&held, &all).is_some());
        assert_eq!(still(&held, &view(&[(2, 1), (3, 2)])), None);
    }
}
