//! Tests of [`FluidNetwork`] under a time-flow schedule ([`Schedule`]):
//! circuits follow the slots, a flow between racks crosses its rack pair's
//! circuit while one is up and EPS otherwise, several circuits of a pair
//! share its flows, an idle network takes up the slot of its time, and the
//! policy's circuit requests are ignored. Each case is computed by hand.

use super::handover_tests::{done, link_bytes, run};
use super::links::LinkKind;
use super::FluidNetwork;
use ocslab_core::coflow::{self, FabricParams};
use ocslab_core::model::coflow::{CoflowId, FlowId, FlowSpec};
use ocslab_core::optical::{Circuit, Schedule};
use ocslab_core::{Bps, Bytes, HostId, Nanos};

fn ms(x: u64) -> Nanos {
    Nanos::from_millis(x)
}

/// `racks` racks of `hosts` hosts; EPS uplinks 1 MB/s, `ports` OCS ports
/// per rack at 5 MB/s each; hosts (10 MB/s) never limit. `core`: whether
/// an EPS core joins the racks.
fn fabric(racks: u32, hosts: u32, ports: u32, core: bool) -> FabricParams {
    FabricParams {
        racks,
        hosts_per_rack: hosts,
        host_rate: Bps(80_000_000),
        uplink_rate: Bps(if core { 8_000_000 } else { 0 }),
        ocs_ports: ports,
        ocs_port_rate: Bps(40_000_000),
        reconfig_delay: ms(2),
        elephant_threshold: Bytes(0),
        scale: 1.0,
    }
}

/// Four racks, one port each, three slots of 10 ms: rack r reaches r+1,
/// r+2, r+3 in turn; a port is dark for δ = 2 ms at each slot's start.
fn rotor() -> Schedule {
    let slots: Vec<_> = (1..4)
        .map(|k| {
            let circuits = (0..4)
                .map(|r| Circuit {
                    src_rack: r,
                    dst_rack: (r + k) % 4,
                    port: 0,
                })
                .collect();
            (ms(10), circuits)
        })
        .collect();
    Schedule::new(4, 1, &slots, ms(2)).expect("a valid rotor")
}

fn flow(id: u64, src: HostId, dst: HostId, bytes: u64) -> FlowSpec {
    FlowSpec {
        id: FlowId(id),
        coflow: CoflowId(id),
        src,
        dst,
        bytes: Bytes(bytes),
        weight: 1,
    }
}

fn net(fabric: FabricParams, policy: &str, schedule: Schedule) -> FluidNetwork {
    let mut net = FluidNetwork::on_fabric(fabric, coflow::by_name(policy).expect("a policy"));
    net.follow_schedule(schedule);
    net
}

#[test]
fn a_flow_crosses_its_pairs_circuit_in_its_slot_and_eps_between() {
    // r0 -> r2 is slot 1 (10-20 ms of each 30 ms), usable from 12 ms: per
    // period 8 ms on the circuit at 5 MB/s (40,000 B) and 22 ms on EPS at
    // 1 MB/s (22,000 B). 124,000 B take two periods: done at 60 ms.
    let mut net = net(fabric(4, 1, 1, true), "fair", rotor());
    let (r0, r2) = (HostId::new(0, 0), HostId::new(2, 0));
    net.add_flows(Nanos::ZERO, &[flow(1, r0, r2, 124_000)]);
    let mut finished = Vec::new();
    // Port 0 of r0 as the flow finds it at each event before the second
    // period: (event, destination, up at).
    let mut seen = Vec::new();
    while let Some(t) = net.next_event_at() {
        finished.extend(done(net.advance_to(t)));
        if t < ms(30) {
            let c = net.view().circuits[&(0, 0)];
            seen.push((t, c.dst_rack, c.up_at));
        }
    }
    assert_eq!(finished, [(1, ms(60), 44_000, 80_000)]);
    let ocs = link_bytes(&net, LinkKind::OcsPort { rack: 0, port: 0 });
    assert!((ocs - 80_000.0).abs() < 1e-3, "OCS port carried {ocs} B");
    assert_eq!(
        seen,
        [
            (ms(2), 1, ms(2)),
            (ms(10), 2, ms(12)),
            (ms(12), 2, ms(12)),
            (ms(20), 3, ms(22)),
            (ms(22), 3, ms(22)),
        ]
    );
    assert!(
        net.circuit_log().is_empty(),
        "a schedule's circuits are not logged"
    );
}

#[test]
fn an_idle_network_has_no_events_and_takes_up_the_slot_of_its_time() {
    let mut net = net(fabric(4, 1, 1, true), "fair", rotor());
    // Slot 0's circuits come up at 2 ms; later boundaries are no events.
    assert_eq!(net.next_event_at(), Some(ms(2)));
    net.advance_to(ms(2));
    assert_eq!(net.next_event_at(), None, "idle: slot boundaries are not events");
    // At 41 ms (slot 1 of the second period, r0 -> r2 dark until 42 ms):
    // 1,000 B over EPS, then 4,000 B over the circuit in 0.8 ms.
    let (r0, r2) = (HostId::new(0, 0), HostId::new(2, 0));
    net.advance_to(ms(41));
    net.add_flows(ms(41), &[flow(1, r0, r2, 5_000)]);
    assert_eq!(
        run(&mut net),
        [(1, ms(42) + Nanos::from_micros(800), 1_000, 4_000)]
    );
}

#[test]
fn without_an_eps_core_a_flow_waits_for_its_slot() {
    // Only 12-20 ms of each period moves r0 -> r2: 40,000 B are done at 20 ms.
    let mut net = net(fabric(4, 1, 1, false), "fair", rotor());
    let (r0, r2) = (HostId::new(0, 0), HostId::new(2, 0));
    net.add_flows(Nanos::ZERO, &[flow(1, r0, r2, 40_000)]);
    assert_eq!(run(&mut net), [(1, ms(20), 0, 40_000)]);
}

#[test]
fn the_first_slots_circuits_are_set_up_at_the_epoch() {
    // One slot of 10 ms, r0 -> r1 in every period, no EPS core: the port is
    // dark for δ = 2 ms from time 0 only (it keeps its circuit across every
    // later boundary). 40,000 B at 5 MB/s: 8 ms after 2 ms, done at 10 ms;
    // the same started at 10 ms crosses the boundary at once, done at 18 ms.
    let slot = vec![Circuit {
        src_rack: 0,
        dst_rack: 1,
        port: 0,
    }];
    let schedule = Schedule::new(2, 1, &[(ms(10), slot)], ms(2)).expect("valid");
    let mut net = net(fabric(2, 1, 1, false), "fair", schedule);
    let (r0, r1) = (HostId::new(0, 0), HostId::new(1, 0));
    net.add_flows(Nanos::ZERO, &[flow(1, r0, r1, 40_000)]);
    assert_eq!(run(&mut net), [(1, ms(10), 0, 40_000)]);
    net.add_flows(ms(10), &[flow(2, r0, r1, 40_000)]);
    assert_eq!(run(&mut net), [(2, ms(18), 0, 40_000)]);
}

#[test]
fn two_wavelengths_of_a_pair_carry_its_flows_together() {
    // One slot: r0 -> r1 on both wavelengths, up from δ on (set up at the
    // epoch). Sixteen host pairs of 100 kB each, started then, spread over
    // the two circuits, and nothing takes EPS.
    let both = |a, b| {
        (0..2)
            .map(move |port| Circuit {
                src_rack: a,
                dst_rack: b,
                port,
            })
            .collect::<Vec<_>>()
    };
    let mut circuits = both(0, 1);
    circuits.extend(both(1, 0));
    let schedule = Schedule::new(2, 2, &[(ms(10), circuits)], ms(2)).expect("valid");
    let mut net = net(fabric(2, 4, 2, true), "fair", schedule);
    let flows: Vec<_> = (0..16u64)
        .map(|i| {
            let (s, d) = (i as u32 / 4, i as u32 % 4);
            flow(i, HostId::new(0, s), HostId::new(1, d), 100_000)
        })
        .collect();
    net.add_flows(ms(2), &flows);
    let finished = run(&mut net);
    assert_eq!(finished.len(), 16);
    assert!(finished
        .iter()
        .all(|&(_, _, eps, ocs)| eps == 0 && ocs == 100_000));
    let port = |p| link_bytes(&net, LinkKind::OcsPort { rack: 0, port: p });
    let (a, b) = (port(0), port(1));
    assert!(
        a > 0.0 && b > 0.0,
        "each wavelength carries some: {a} B and {b} B"
    );
    assert!((a + b - 1_600_000.0).abs() < 1e-3, "together all: {a} + {b} B");
    assert_eq!(link_bytes(&net, LinkKind::TorUp(0)), 0.0);
}

#[test]
fn a_policys_circuit_requests_are_ignored_under_a_schedule() {
    // Sunflow asks for circuits of its own (r -> r+2 for each rack, at
    // once); at every event the circuits are the schedule's for that time.
    let schedule = rotor();
    let mut net = net(fabric(4, 1, 1, true), "sunflow", schedule.clone());
    let flows: Vec<_> = (0..4u32)
        .map(|r| flow(r as u64, HostId::new(r, 0), HostId::new((r + 2) % 4, 0), 50_000))
        .collect();
    net.add_flows(Nanos::ZERO, &flows);
    let mut finished = Vec::new();
    while let Some(t) = net.next_event_at() {
        finished.extend(done(net.advance_to(t)));
        let (slot, _) = schedule.slot_at(t);
        let mut circuits: Vec<Circuit> = net
            .view()
            .circuits
            .values()
            .map(|c| Circuit {
                src_rack: c.src_rack,
                dst_rack: c.dst_rack,
                port: c.port,
            })
            .collect();
        circuits.sort();
        let mut want = schedule.slots()[slot].circuits.clone();
        want.sort();
        assert_eq!(circuits, want, "at {t}");
    }
    assert_eq!(finished.len(), 4);
    assert!(finished.iter().all(|&(_, _, _, ocs)| ocs > 0), "{finished:?}");
    assert!(net.stats().policy_calls > 0, "sunflow was asked");
}
