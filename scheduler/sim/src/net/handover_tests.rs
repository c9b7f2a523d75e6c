//! Tests of [`FluidNetwork`] when flows change bundles under way: served on
//! EPS, moved onto a circuit when it comes up, moved back when it goes
//! down, joined by another flow. Each case is small enough to compute by
//! hand; every flow must deliver exactly its bytes over EPS + OCS, and
//! finish at the hand-computed nanosecond.

use super::links::LinkKind;
use super::{FluidNetwork, NetEvent};
use ocslab_core::coflow::{
    self, CircuitSetup, CoflowPolicy, Decision, FabricParams, FlowPlan, NetView, Progress,
};
use ocslab_core::model::coflow::{CoflowId, FlowId, FlowSpec};
use ocslab_core::{Bps, Bytes, HostId, Nanos};

/// Three racks of one host; EPS uplinks 1 MB/s, one OCS port per rack at
/// 5 MB/s, δ = 10 ms; hosts (10 MB/s) never limit.
pub(super) fn fabric() -> FabricParams {
    FabricParams {
        racks: 3,
        hosts_per_rack: 1,
        host_rate: Bps(80_000_000),
        uplink_rate: Bps(8_000_000),
        ocs_ports: 1,
        ocs_port_rate: Bps(40_000_000),
        reconfig_delay: Nanos::from_millis(10),
        elephant_threshold: Bytes(0),
        scale: 1.0,
    }
}

/// Sends every flow over EPS until the circuit r0 → r1 (asked for at the
/// first call) is up, then over it; from `down_at` on, replaces that
/// circuit by r0 → r2 (tearing it down) and sends everything over EPS.
pub(super) struct EpsThenCircuit {
    pub(super) down_at: Option<Nanos>,
}

impl CoflowPolicy for EpsThenCircuit {
    fn name(&self) -> &'static str {
        "eps-then-circuit"
    }
    fn uses_ocs(&self) -> bool {
        true
    }
    fn decide(&mut self, now: Nanos, view: &NetView, _progress: &dyn Progress) -> Decision {
        let (dst, on_circuit) = match self.down_at {
            Some(t) if now >= t => (2, false),
            _ => (1, true),
        };
        let mut d = Decision {
            wake_at: self.down_at.filter(|&t| t > now),
            ..Decision::default()
        };
        match view.circuit(0, dst, 0) {
            None => d.circuits.push(CircuitSetup {
                src_rack: 0,
                dst_rack: dst,
                port: 0,
            }),
            Some(c) if on_circuit && c.is_up(now) => {
                d.plans = view.flows.keys().map(|&id| (id, FlowPlan::ocs(0))).collect();
            }
            Some(_) => {}
        }
        d
    }
}

pub(super) fn flow(id: u64, src_rack: u32, dst_rack: u32, bytes: u64) -> FlowSpec {
    FlowSpec {
        id: FlowId(id),
        coflow: CoflowId(id),
        src: HostId::new(src_rack, 0),
        dst: HostId::new(dst_rack, 0),
        bytes: Bytes(bytes),
        weight: 1,
    }
}

/// (flow, finished at, EPS bytes, OCS bytes) of the flows done in `events`
/// (also used by the trigger tests).
pub(super) fn done(events: Vec<NetEvent>) -> Vec<(u64, Nanos, u64, u64)> {
    events
        .into_iter()
        .filter_map(|e| match e {
            NetEvent::FlowDone {
                flow,
                at,
                eps_bytes,
                ocs_bytes,
                ..
            } => Some((flow.0, at, eps_bytes.0, ocs_bytes.0)),
            NetEvent::Circuit { .. } => None,
        })
        .collect()
}

/// Runs `net` until idle; the flows done on the way.
pub(super) fn run(net: &mut FluidNetwork) -> Vec<(u64, Nanos, u64, u64)> {
    let mut out = Vec::new();
    while let Some(t) = net.next_event_at() {
        out.extend(done(net.advance_to(t)));
    }
    out
}

/// Bytes the link carried, as the utilization record counts them.
pub(super) fn link_bytes(net: &FluidNetwork, link: LinkKind) -> f64 {
    let i = net.usage().index(link).expect("tracked link");
    net.timeline(net.now()).links[i].bytes
}

pub(super) fn ms(x: u64) -> Nanos {
    Nanos::from_millis(x)
}

#[test]
fn a_flow_moved_from_eps_onto_a_circuit_delivers_its_bytes_and_finishes_on_time() {
    // A (1 MB) alone on EPS for 5 ms: 5,000 B. B (20 kB) joins: 0.5 MB/s
    // each for 5 ms, 2,500 B each. At 10 ms the circuit is up and both move
    // onto it at 2.5 MB/s each: B's 17,500 B take 7 ms (done at 17 ms); A
    // then has 975,000 B left at 5 MB/s: 195 ms (done at 212 ms).
    let policy = Box::new(EpsThenCircuit { down_at: None });
    let mut net = FluidNetwork::on_fabric(fabric(), policy);
    net.add_flows(Nanos::ZERO, &[flow(1, 0, 1, 1_000_000)]);
    let mut finished = done(net.advance_to(ms(5)));
    net.add_flows(ms(5), &[flow(2, 0, 1, 20_000)]);
    finished.extend(run(&mut net));
    assert_eq!(
        finished,
        [(2, ms(17), 2_500, 17_500), (1, ms(212), 7_500, 992_500)]
    );
    let eps = link_bytes(&net, LinkKind::TorUp(0));
    let ocs = link_bytes(&net, LinkKind::OcsPort { rack: 0, port: 0 });
    assert!((eps - 10_000.0).abs() < 1e-3, "EPS uplink carried {eps} B");
    assert!((ocs - 1_010_000.0).abs() < 1e-3, "OCS port carried {ocs} B");
    assert_eq!(net.stats().eps_bytes, Bytes(10_000));
    assert_eq!(net.stats().ocs_bytes, Bytes(1_010_000));
}

#[test]
fn a_flow_whose_circuit_goes_down_keeps_what_it_sent_and_goes_on_over_eps() {
    // EPS 0-10 ms at 1 MB/s: 10,000 B; circuit 10-50 ms at 5 MB/s: 200,000 B;
    // torn down at 50 ms, back on EPS: 790,000 B take 790 ms (done at 840 ms).
    let policy = Box::new(EpsThenCircuit {
        down_at: Some(ms(50)),
    });
    let mut net = FluidNetwork::on_fabric(fabric(), policy);
    net.add_flows(Nanos::ZERO, &[flow(1, 0, 1, 1_000_000)]);
    assert_eq!(run(&mut net), [(1, ms(840), 800_000, 200_000)]);
    let ocs = link_bytes(&net, LinkKind::OcsPort { rack: 0, port: 0 });
    assert!((ocs - 200_000.0).abs() < 1e-3, "OCS port carried {ocs} B");
    let log = net.circuit_log();
    assert_eq!(log.len(), 2);
    assert_eq!((log[0].dst_rack, log[0].down_at), (1, Some(ms(50))));
}

#[test]
fn a_finish_on_a_whole_nanosecond_is_not_pushed_one_nanosecond_late() {
    // 63,963,136 B at 1 Gbit/s take exactly 511,705,088 ns, but the float
    // quotient is 511705088.00000006: rounding it up made the flow finish
    // 1 ns late, and split departures that happen together (Sunflow then
    // assigns ports differently). Circuit up at 10 ms.
    let mut f = fabric();
    f.ocs_port_rate = Bps(1_000_000_000);
    f.host_rate = Bps(10_000_000_000);
    f.elephant_threshold = Bytes(1_000_000);
    let policy = coflow::by_name("sunflow").expect("sunflow");
    let mut net = FluidNetwork::on_fabric(f, policy);
    net.add_flows(
        Nanos::ZERO,
        &[flow(1, 0, 1, 63_963_136), flow(2, 1, 2, 63_963_136)],
    );
    let end = ms(10) + Nanos(511_705_088);
    assert_eq!(run(&mut net), [(1, end, 0, 63_963_136), (2, end, 0, 63_963_136)]);
}

/// Caps every flow at 1 MB/s until `at`, then at 2 MB/s (a policy that
/// re-caps flows alone in their bundles, as Varys and Aalo do).
struct Recap {
    at: Nanos,
}

impl CoflowPolicy for Recap {
    fn name(&self) -> &'static str {
        "recap"
    }
    fn decide(&mut self, now: Nanos, view: &NetView, _progress: &dyn Progress) -> Decision {
        let rate = if now < self.at { 1e6 } else { 2e6 };
        Decision {
            plans: view
                .flows
                .keys()
                .map(|&id| (id, FlowPlan::eps_paced(rate)))
                .collect(),
            wake_at: Some(self.at).filter(|&t| t > now),
            ..Decision::default()
        }
    }
}

#[test]
fn a_flow_recapped_alone_in_its_bundle_keeps_what_it_sent() {
    // A (5 MB, r0 -> r1) and B (3 MB, r1 -> r2), each alone in its bundle,
    // on links of 10 MB/s (the uplinks raised from 1 MB/s): 1 MB/s until
    // 1 s (1 MB each), then 2 MB/s: A's 4 MB left take 2 s (done at 3 s),
    // B's 2 MB 1 s (done at 2 s).
    let fabric = FabricParams {
        uplink_rate: Bps(80_000_000),
        ..fabric()
    };
    let mut net = FluidNetwork::on_fabric(fabric, Box::new(Recap { at: ms(1000) }));
    net.add_flows(Nanos::ZERO, &[flow(1, 0, 1, 5_000_000), flow(2, 1, 2, 3_000_000)]);
    let done = run(&mut net);
    assert_eq!(
        done,
        vec![(2, ms(2000), 3_000_000, 0), (1, ms(3000), 5_000_000, 0)]
    );
}
