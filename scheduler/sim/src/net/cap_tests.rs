//! Tests of pacing caps ([`FlowPlan::cap`]): each capped flow moves at its
//! own cap, whatever other flows between the same hosts are capped at, and
//! a new cap on one of them leaves the others where they were.

use super::handover_tests::{fabric, flow, ms, run};
use super::FluidNetwork;
use ocslab_core::coflow::{CoflowPolicy, Decision, FlowPlan, NetView, Progress};
use ocslab_core::model::coflow::FlowId;
use ocslab_core::Nanos;

/// Paces every flow at 120 kB/s over EPS, and flow 1 at 240 kB/s once
/// flow 3 has joined.
struct FasterOnceThreeJoins;

impl CoflowPolicy for FasterOnceThreeJoins {
    fn name(&self) -> &'static str {
        "faster-once-three-joins"
    }
    fn decide(&mut self, _now: Nanos, view: &NetView, _progress: &dyn Progress) -> Decision {
        let three = view.flows.get(&FlowId(3)).is_some();
        Decision {
            plans: view
                .flows
                .keys()
                .map(|&id| {
                    let rate = if id == FlowId(1) && three {
                        240_000.0
                    } else {
                        120_000.0
                    };
                    (id, FlowPlan::eps_paced(rate))
                })
                .collect(),
            ..Decision::default()
        }
    }
}

#[test]
fn flows_capped_alike_between_two_hosts_keep_their_own_caps() {
    // Flows 1 and 2 (360 kB each, rack 0 → rack 1) both at 120 kB/s; at
    // 1 s flow 3 (120 kB, same racks) joins and flow 1 goes to 240 kB/s
    // for its last 240 kB. The uplinks (1 MB/s) never bind: every flow
    // moves at its cap. Flow 1 is done at 2 s, flow 3 at 2 s, flow 2 at 3 s.
    let mut net = FluidNetwork::on_fabric(fabric(), Box::new(FasterOnceThreeJoins));
    net.add_flows(Nanos::ZERO, &[flow(1, 0, 1, 360_000), flow(2, 0, 1, 360_000)]);
    let mut done = Vec::new();
    while let Some(t) = net.next_event_at().filter(|&t| t < ms(1_000)) {
        done.extend(super::handover_tests::done(net.advance_to(t)));
    }
    assert!(done.is_empty(), "{done:?}");
    net.add_flows(ms(1_000), &[flow(3, 0, 1, 120_000)]);
    done.extend(run(&mut net));
    done.sort();
    assert_eq!(
        done,
        [
            (1, ms(2_000), 360_000, 0),
            (2, ms(3_000), 360_000, 0),
            (3, ms(2_000), 120_000, 0)
        ]
    );
}
