//! Tests of [`FluidNetwork::set_link`]: flows whose route crosses a link
//! that is down wait, keep what they sent, and go on when it is back;
//! flows elsewhere do not notice. Worked by hand on the fabric of the
//! handover tests (EPS uplinks 1 MB/s, OCS ports 5 MB/s, δ = 10 ms).

use super::handover_tests::{done, fabric, flow, link_bytes, ms, run};
use super::links::LinkKind;
use super::FluidNetwork;
use ocslab_core::coflow::{self, CircuitSetup, CoflowPolicy, Decision, FlowPlan, NetView, Progress};
use ocslab_core::Nanos;

#[test]
fn a_flow_across_a_down_uplink_waits_and_one_elsewhere_does_not_notice() {
    // A (1 MB, r0 -> r1) and B (500 kB, r1 -> r2) at 1 MB/s each on their
    // own uplinks. Rack 0's uplink is down from 200 ms to 500 ms: A has
    // sent 200 kB, waits 300 ms, and its other 800 kB end at 1.3 s. B
    // crosses r1's uplink and r2's downlink only: done at 500 ms.
    let mut net = FluidNetwork::on_fabric(fabric(), coflow::by_name("fair").expect("fair"));
    net.add_flows(Nanos::ZERO, &[flow(1, 0, 1, 1_000_000), flow(2, 1, 2, 500_000)]);
    let mut finished = done(net.advance_to(ms(200)));
    net.set_link(ms(200), LinkKind::TorUp(0), false);
    // Taking it down twice changes nothing.
    net.set_link(ms(200), LinkKind::TorUp(0), false);
    finished.extend(done(net.advance_to(ms(500))));
    net.set_link(ms(500), LinkKind::TorUp(0), true);
    finished.extend(run(&mut net));
    assert_eq!(finished, [(2, ms(500), 500_000, 0), (1, ms(1300), 1_000_000, 0)]);
    let up0 = link_bytes(&net, LinkKind::TorUp(0));
    assert!((up0 - 1_000_000.0).abs() < 1e-3, "r0's uplink carried {up0} B");
    // Nothing moved over it while it was down: its utilization samples
    // over the window are zero.
    let i = net.usage().index(LinkKind::TorUp(0)).expect("tracked");
    let series = &net.timeline(net.now()).links[i];
    let mut prev = Nanos::ZERO;
    let mut in_window = 0;
    for &(t, u) in &series.samples {
        if prev >= ms(200) && t <= ms(500) {
            assert_eq!(u, 0.0, "{:?}", series.samples);
            in_window += 1;
        }
        prev = t;
    }
    assert!(in_window > 0, "{:?}", series.samples);
}

/// Asks for the circuit r0 -> r1 on port 0 at once and plans every flow
/// onto it once it is up (EPS until then).
struct OntoTheCircuit;

impl CoflowPolicy for OntoTheCircuit {
    fn name(&self) -> &'static str {
        "onto-the-circuit"
    }
    fn uses_ocs(&self) -> bool {
        true
    }
    fn decide(&mut self, now: Nanos, view: &NetView, _progress: &dyn Progress) -> Decision {
        let mut d = Decision::default();
        match view.circuit(0, 1, 0) {
            None => d.circuits.push(CircuitSetup {
                src_rack: 0,
                dst_rack: 1,
                port: 0,
            }),
            Some(c) if c.is_up(now) => {
                d.plans = view.flows.keys().map(|&id| (id, FlowPlan::ocs(0))).collect();
            }
            Some(_) => {}
        }
        d
    }
}

#[test]
fn a_flow_on_a_circuit_through_a_down_port_waits_for_the_port() {
    // EPS 0-10 ms at 1 MB/s: 10 kB; on the circuit from 10 ms at 5 MB/s:
    // 50 kB by 20 ms, when rack 0's OCS port goes down for 100 ms. The
    // policy's plan stands (it is not told), so the flow waits; from
    // 120 ms its 940 kB take 188 ms: done at 308 ms (208 ms unperturbed).
    let mut net = FluidNetwork::on_fabric(fabric(), Box::new(OntoTheCircuit));
    net.add_flows(Nanos::ZERO, &[flow(1, 0, 1, 1_000_000)]);
    let port = LinkKind::OcsPort { rack: 0, port: 0 };
    let mut finished = done(net.advance_to(ms(20)));
    net.set_link(ms(20), port, false);
    finished.extend(done(net.advance_to(ms(120))));
    net.set_link(ms(120), port, true);
    finished.extend(run(&mut net));
    assert_eq!(finished, [(1, ms(308), 10_000, 990_000)]);
}
