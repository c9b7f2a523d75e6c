//! Integration tests: the fluid network, the coflow schedulers and trace
//! replay (issue 3, "Correctness to show in tests"). Every expected value is
//! worked out by hand in the comment above its assertion.

use ocslab_emulator::{Bps, Bytes, HostId, Nanos, Topology};
use ocslab_scheduler::coflow::lower_bound::{coflow_lower_bound, ocs_lower_bound, Fabrics};
use ocslab_scheduler::coflow::{self, FabricParams, NetView};
use ocslab_scheduler::model::coflow::{Coflow, CoflowId, FlowId, FlowSpec};
use ocslab_scheduler::net::replay::{replay, ReplayOutcome};
use ocslab_scheduler::net::{FluidNetwork, NetEvent};
use ocslab_scheduler::trace::coflow_benchmark::{self, FlowSizes};
use ocslab_tests::SplitMix64;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const MB: u64 = 1_000_000;

/// A topology from its parts (simulation only, so any rate is allowed).
/// `eps` = [host NIC rate, ToR uplink rate]; `ocs` = (ports per rack, [port rate, δ, elephant threshold]).
fn topo(racks: u32, hosts: u32, eps: [&str; 2], ocs: (u32, [&str; 3])) -> Topology {
    let ([host, uplink], (ports, [port, delta, te])) = (eps, ocs);
    let text = format!(
        "name = \"t\"\nracks = {racks}\nhosts_per_rack = {hosts}\nsimulation_only = true\n\
         [eps]\nhost_rate = \"{host}\"\nuplink_rate = \"{uplink}\"\n\
         [ocs]\nports_per_rack = {ports}\nport_rate = \"{port}\"\nreconfig_delay = \"{delta}\"\nelephant_threshold = \"{te}\"\n"
    );
    Topology::parse(&text, Path::new("test.toml")).expect("test topology is valid")
}

fn flow(id: u64, coflow: u64, src: (u32, u32), dst: (u32, u32), bytes: u64) -> FlowSpec {
    FlowSpec {
        id: FlowId(id),
        coflow: CoflowId(coflow),
        src: HostId::new(src.0, src.1),
        dst: HostId::new(dst.0, dst.1),
        bytes: Bytes(bytes),
        weight: 1,
    }
}

/// Runs the network until idle; returns each flow's finish time.
fn run_to_end(net: &mut FluidNetwork) -> BTreeMap<FlowId, Nanos> {
    let mut done = BTreeMap::new();
    while let Some(t) = net.next_event_at() {
        for e in net.advance_to(t) {
            if let NetEvent::FlowDone { flow, at, .. } = e {
                done.insert(flow, at);
            }
        }
    }
    done
}

fn secs(t: Nanos) -> f64 {
    t.as_secs_f64()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6
}

#[test]
fn max_min_fair_sharing_matches_hand_computed_rates() {
    // 2 racks x 2 hosts, NICs 1 Gbit/s (125 MB/s), ToR uplinks 500 Mbit/s (62.5 MB/s).
    // a: r0h0 -> r1h0 and b: r0h1 -> r1h1 share r0's uplink: 31.25 MB/s each.
    // c: r0h0 -> r0h1 (intra-rack) shares r0h0's NIC with a: 125 - 31.25 = 93.75 MB/s.
    let t = topo(2, 2, ["1Gbit/s", "500Mbit/s"], (0, ["0bit/s", "0ms", "0B"]));
    let mut net = FluidNetwork::new(&t, "fair").unwrap();
    net.add_flows(
        Nanos::ZERO,
        &[
            flow(0, 0, (0, 0), (1, 0), 10 * MB),
            flow(1, 0, (0, 1), (1, 1), 10 * MB),
            flow(2, 1, (0, 0), (0, 1), 30 * MB),
        ],
    );
    net.sync_progress();
    let rate = |id: u64| net.view().flows[&FlowId(id)].rate_bytes_per_s;
    assert!(
        close(rate(0), 31.25e6) && close(rate(1), 31.25e6),
        "{} {}",
        rate(0),
        rate(1)
    );
    assert!(close(rate(2), 93.75e6), "{}", rate(2));
    // c finishes first: 30 MB / 93.75 MB/s = 0.32 s. a and b then have
    // 10 - 0.32 * 31.25 = 0 MB left: all three finish at 0.32 s.
    let done = run_to_end(&mut net);
    for id in 0..3 {
        assert!(
            close(secs(done[&FlowId(id)]), 0.32),
            "flow {id}: {:?}",
            done[&FlowId(id)]
        );
    }
}

#[test]
fn max_min_rates_change_when_a_flow_leaves() {
    // One 1 Gbit/s NIC (125 MB/s) sending two flows, 12.5 MB and 25 MB:
    // 62.5 MB/s each; the first is done at 0.2 s, the second has 12.5 MB
    // left and then gets all 125 MB/s: done at 0.3 s.
    let t = topo(2, 1, ["1Gbit/s", "1Gbit/s"], (0, ["0bit/s", "0ms", "0B"]));
    let mut net = FluidNetwork::new(&t, "fair").unwrap();
    net.add_flows(
        Nanos::ZERO,
        &[
            flow(0, 0, (0, 0), (1, 0), 12_500_000),
            flow(1, 0, (0, 0), (1, 0), 25_000_000),
        ],
    );
    let done = run_to_end(&mut net);
    assert_eq!(done[&FlowId(0)], Nanos::from_millis(200));
    assert_eq!(done[&FlowId(1)], Nanos::from_millis(300));
    assert_eq!(net.stats().eps_bytes, Bytes(37_500_000));
    assert_eq!(net.stats().cross_rack_bytes, Bytes(37_500_000));
}

#[test]
fn varys_madd_gives_each_flow_the_rate_that_finishes_them_together() {
    // Three racks, 1 Gbit/s (125 MB/s) ports. One coflow: r0 -> r1 2 MB and
    // r0 -> r2 1 MB, both through r0's port. Its bottleneck: 3 MB over
    // 125 MB/s = 24 ms, so MADD gives 2/0.024 = 83.33 MB/s and
    // 1/0.024 = 41.67 MB/s, and both finish at 24 ms.
    let t = topo(3, 1, ["1Gbit/s", "1Gbit/s"], (0, ["0bit/s", "0ms", "0B"]));
    let flows = [flow(0, 7, (0, 0), (1, 0), 2 * MB), flow(1, 7, (0, 0), (2, 0), MB)];

    let mut view = NetView::new(FabricParams::from(&t));
    for f in &flows {
        view.insert_flow(f.clone(), Nanos::ZERO);
    }
    let decision = coflow::by_name("varys").unwrap().schedule(Nanos::ZERO, &view);
    let caps: BTreeMap<FlowId, f64> = decision
        .plans
        .iter()
        .map(|(f, p)| (*f, p.cap.map_or(0.0, |c| c.bytes_per_sec())))
        .collect();
    assert!((caps[&FlowId(0)] - 2e6 / 0.024).abs() < 1.0, "{caps:?}");
    assert!((caps[&FlowId(1)] - 1e6 / 0.024).abs() < 1.0, "{caps:?}");

    let mut net = FluidNetwork::new(&t, "varys").unwrap();
    net.add_flows(Nanos::ZERO, &flows);
    let done = run_to_end(&mut net);
    for id in 0..2 {
        assert!((secs(done[&FlowId(id)]) - 0.024).abs() < 1e-6, "{done:?}");
    }
    // Fair sharing, for contrast: 62.5 MB/s each; the 1 MB flow is done at
    // 16 ms, the 2 MB one at 24 ms.
    let mut net = FluidNetwork::new(&t, "fair").unwrap();
    net.add_flows(Nanos::ZERO, &flows);
    let done = run_to_end(&mut net);
    assert_eq!(done[&FlowId(1)], Nanos::from_millis(16));
    assert_eq!(done[&FlowId(0)], Nanos::from_millis(24));
}

#[test]
fn varys_serves_the_smallest_effective_bottleneck_first() {
    // Two coflows through r0's 125 MB/s port: A (id 1) 5 MB, B (id 2) 1 MB.
    // SEBF serves B first (8 ms), then A (5 MB more: 48 ms). Fair sharing
    // would finish B at 16 ms.
    let t = topo(2, 1, ["1Gbit/s", "1Gbit/s"], (0, ["0bit/s", "0ms", "0B"]));
    let mut net = FluidNetwork::new(&t, "varys").unwrap();
    net.add_flows(
        Nanos::ZERO,
        &[flow(0, 1, (0, 0), (1, 0), 5 * MB), flow(1, 2, (0, 0), (1, 0), MB)],
    );
    let done = run_to_end(&mut net);
    assert!((secs(done[&FlowId(1)]) - 0.008).abs() < 1e-6, "{done:?}");
    assert!((secs(done[&FlowId(0)]) - 0.048).abs() < 1e-6, "{done:?}");
}

#[test]
fn fifo_and_aalo_order_coflows_as_their_papers_say() {
    // One 80 Mbit/s (10 MB/s) path. A: 20 MiB at t = 0; B: 1 MiB at 0.5 s.
    let t = topo(2, 1, ["80Mbit/s", "80Mbit/s"], (0, ["0bit/s", "0ms", "0B"]));
    let mib = 1_048_576u64;
    let a = [flow(0, 1, (0, 0), (1, 0), 20 * mib)];
    let b = [flow(1, 2, (0, 0), (1, 0), mib)];
    let run = |policy: &str| {
        let mut net = FluidNetwork::new(&t, policy).unwrap();
        net.add_flows(Nanos::ZERO, &a);
        let mut done = BTreeMap::new();
        for e in net.advance_to(Nanos::from_millis(500)) {
            if let NetEvent::FlowDone { flow, at, .. } = e {
                done.insert(flow, at);
            }
        }
        net.add_flows(Nanos::from_millis(500), &b);
        done.extend(run_to_end(&mut net));
        done
    };
    // FIFO: A alone until 20 MiB / 10 MB/s = 2.097152 s, then B: +0.1048576 s.
    let fifo = run("fifo");
    assert!(close(secs(fifo[&FlowId(0)]), 2.097152), "{fifo:?}");
    assert!(close(secs(fifo[&FlowId(1)]), 2.2020096), "{fifo:?}");
    // Aalo: A and B both in queue 0 (FIFO inside: A first) until A has sent
    // 10 MiB at 1.048576 s and drops to queue 1; then B (queue 0) goes
    // first: done at 1.1534336 s; A finishes at 2.2020096 s.
    let aalo = run("aalo");
    assert!((secs(aalo[&FlowId(1)]) - 1.1534336).abs() < 1e-5, "{aalo:?}");
    assert!((secs(aalo[&FlowId(0)]) - 2.2020096).abs() < 1e-5, "{aalo:?}");
}

#[test]
fn fifo_serves_the_first_coflow_first_and_the_next_with_what_it_leaves() {
    // Three racks of one host, NICs 80 Mbit/s (10 MB/s), uplinks as fast.
    // A (id 1): a1 h0 -> h1 10 MB, a2 h0 -> h2 20 MB; B (id 2): b1 h2 -> h1
    // 15 MB, b2 h0 -> h1 5 MB; all at 0, so A first (ties by id).
    // A: a1 and a2 share h0's NIC up, 5 MB/s each, and saturate it. B: b2
    // needs h0's NIC up, which A left empty: 0; b1 gets what a1 left of
    // h1's NIC down, 5 MB/s.
    // t = 2 s: a1 is done (a flow, not its coflow: no call to the policy),
    // and the rates follow at once: a2 takes h0's NIC up alone, 10 MB/s
    // (10 MB left: done at 3 s); b1 takes h1's NIC down, 10 MB/s (5 MB
    // left: done at 2.5 s); b2 still waits for h0.
    // t = 3 s: A completes; b2 alone, 10 MB/s: done at 3.5 s.
    // (Fair sharing would give every flow 10/3 MB/s at first.)
    let t = topo(3, 1, ["80Mbit/s", "80Mbit/s"], (0, ["0bit/s", "0ms", "0B"]));
    let mut net = FluidNetwork::new(&t, "fifo").unwrap();
    net.add_flows(
        Nanos::ZERO,
        &[
            flow(1, 1, (0, 0), (1, 0), 10 * MB),
            flow(2, 1, (0, 0), (2, 0), 20 * MB),
            flow(3, 2, (2, 0), (1, 0), 15 * MB),
            flow(4, 2, (0, 0), (1, 0), 5 * MB),
        ],
    );
    let done = run_to_end(&mut net);
    let at = |id: u64| secs(done[&FlowId(id)]);
    assert!(close(at(1), 2.0) && close(at(3), 2.5), "{done:?}");
    assert!(close(at(2), 3.0) && close(at(4), 3.5), "{done:?}");
    // Called when the coflows arrived and when each completed, not when a1 or b1 left.
    assert_eq!(net.stats().policy_calls, 3);
}

#[test]
fn lower_bound_t_of_c_matches_eqs_2_and_15() {
    // C = {0->1: 2 MB, 0->2: 1 MB, 1->2: 3 MB} over 8 Mbit/s (1 MB/s) circuits, δ = 0.25 s.
    // t_01 = 2.25, t_02 = 1.25, t_12 = 3.25 (eq. 1).
    // Rows: r0 = 3.5, r1 = 3.25; columns: c1 = 2.25, c2 = 4.5. T(C) = 4.5 s (eq. 2).
    // With W = 2 (eq. 15): 4.5 / 2 = 2.25 s.
    let c: BTreeMap<(u32, u32), Bytes> = [
        ((0, 1), Bytes(2 * MB)),
        ((0, 2), Bytes(MB)),
        ((1, 2), Bytes(3 * MB)),
    ]
    .into();
    let rate = "8Mbit/s".parse().unwrap();
    let delta = Nanos::from_millis(250);
    assert_eq!(
        ocs_lower_bound(&c, rate, delta, 1),
        Some(Nanos::from_millis(4500))
    );
    assert_eq!(
        ocs_lower_bound(&c, rate, delta, 2),
        Some(Nanos::from_millis(2250))
    );
    // No OCS and some demand: no bound.
    assert_eq!(ocs_lower_bound(&c, rate, delta, 0), None);

    // Hybrid bound: elephants (>= 1.5 MB) over the OCS, the rest over EPS
    // (125 MB/s ports): 0->1 (2 MB) and 1->2 (3 MB) give rows r0 = 2.25,
    // r1 = 3.25 and columns c1 = 2.25, c2 = 3.25, so T = 3.25 s; the 1 MB
    // mouse needs 8 ms on EPS. Bound: 3.25 s.
    let t = topo(3, 1, ["1Gbit/s", "1Gbit/s"], (1, ["8Mbit/s", "250ms", "1.5MB"]));
    let fabric = FabricParams::from(&t);
    let view = NetView::new(fabric);
    let flows = [
        flow(0, 1, (0, 0), (1, 0), 2 * MB),
        flow(1, 1, (0, 0), (2, 0), MB),
        flow(2, 1, (1, 0), (2, 0), 3 * MB),
    ];
    let lb = coflow_lower_bound(&fabric, &view.links, &flows, Fabrics::Hybrid).unwrap();
    assert_eq!(lb.ocs, Nanos::from_millis(3250));
    assert_eq!(lb.eps, Nanos::from_millis(8));
    assert_eq!(lb.value(), Nanos::from_millis(3250));
}

#[test]
fn lower_bound_over_both_fabrics_counts_uplink_and_ports_together() {
    // Two racks of two hosts: NICs 8 Mbit/s (1 MB/s), uplinks 4 Mbit/s
    // (0.5 MB/s), two OCS ports of 8 Mbit/s per rack: each rack's egress
    // and ingress are worth 2.5 MB/s together. Flows: r0h0 -> r1h0 2 MB,
    // r0h1 -> r1h1 2 MB (rack 0's egress: 4 MB / 2.5 MB/s = 1.6 s; each
    // NIC: 2 s) and r0h0 -> r0h1 1 MB (inside the rack: r0h0's NIC now
    // sends 3 MB, 3 s). Bound: 3 s. EPS alone would give 8 s (the uplink).
    let t = topo(2, 2, ["8Mbit/s", "4Mbit/s"], (2, ["8Mbit/s", "1ms", "1B"]));
    let fabric = FabricParams::from(&t);
    let view = NetView::new(fabric);
    let mut flows = vec![
        flow(0, 1, (0, 0), (1, 0), 2 * MB),
        flow(1, 1, (0, 1), (1, 1), 2 * MB),
    ];
    let both = |flows: &[FlowSpec]| {
        coflow_lower_bound(&fabric, &view.links, flows, Fabrics::Both)
            .unwrap()
            .value()
    };
    assert_eq!(both(&flows), Nanos::from_millis(2000));
    flows.push(flow(2, 1, (0, 0), (0, 1), MB));
    assert_eq!(both(&flows), Nanos::from_millis(3000));
    let eps = coflow_lower_bound(&fabric, &view.links, &flows, Fabrics::Eps).unwrap();
    assert_eq!(eps.value(), Nanos::from_millis(8000));
    // Eight more MB out of rack 0 over a fast NIC pair would make the
    // rack's egress the bottleneck: 12 MB / 2.5 MB/s = 4.8 s.
    let t = topo(2, 3, ["80Mbit/s", "4Mbit/s"], (2, ["8Mbit/s", "1ms", "1B"]));
    let fabric = FabricParams::from(&t);
    let view = NetView::new(fabric);
    flows.push(flow(3, 1, (0, 2), (1, 2), 8 * MB));
    let lb = coflow_lower_bound(&fabric, &view.links, &flows, Fabrics::Both).unwrap();
    assert_eq!(lb.value(), Nanos::from_millis(4800));
}

/// Three racks, one OCS port each at 8 Mbit/s (1 MB/s: one unit of data per
/// second), δ = 0.25 s, every inter-rack flow an elephant; NICs fast enough
/// never to limit.
fn unit_ocs() -> Topology {
    topo(3, 1, ["10Gbit/s", "10Gbit/s"], (1, ["8Mbit/s", "250ms", "1B"]))
}

#[test]
fn sincronia_serves_the_hand_worked_case_in_bssi_order() {
    // One rack of 10 hosts at 1 MB/s (8 Mbit/s) NICs. Coflow X (1) sends
    // 1 MB into each of h1, h2, h3 (from h4, h5, h6); Y1, Y2, Y3 (2-4) send
    // 1.1 MB into h1, h2, h3 alone (from h7, h8, h9). BSSI (see
    // coflow/sincronia.rs): Y3, Y2, X, Y1. X's flow into h1 goes at once
    // (done at 1 s), its others after Y2 and Y3 (1.1 s): X done at 2.1 s;
    // Y1 after X's first flow: 2.1 s. Smallest bottleneck first (Varys)
    // serves X first instead: X at 1 s, every Y at 2.1 s.
    let t = topo(1, 10, ["8Mbit/s", "80Mbit/s"], (0, ["0bit/s", "0ms", "0B"]));
    let flows = [
        flow(0, 1, (0, 4), (0, 1), MB),
        flow(1, 1, (0, 5), (0, 2), MB),
        flow(2, 1, (0, 6), (0, 3), MB),
        flow(3, 2, (0, 7), (0, 1), 1_100_000),
        flow(4, 3, (0, 8), (0, 2), 1_100_000),
        flow(5, 4, (0, 9), (0, 3), 1_100_000),
    ];
    let ms = |policy: &str| -> Vec<u64> {
        let mut net = FluidNetwork::new(&t, policy).unwrap();
        net.add_flows(Nanos::ZERO, &flows);
        run_to_end(&mut net).values().map(|n| n.0 / 1_000_000).collect()
    };
    assert_eq!(ms("sincronia"), vec![1000, 2100, 2100, 2100, 1100, 1100]);
    assert_eq!(ms("varys"), vec![1000, 1000, 1000, 2100, 2100, 2100]);
}

/// [`unit_ocs`] without an EPS core: racks meet only over circuits.
fn unit_ocs_only() -> Topology {
    Topology::builder("unit-ocs-only", 3, 1)
        .simulation_only()
        .host_rate(Bps(10_000_000_000))
        .without_core()
        .ocs(1, Bps(8_000_000), Nanos::from_millis(250), Bytes(0))
        .build()
        .unwrap()
}

#[test]
fn on_a_fabric_of_circuits_only_a_flow_without_a_circuit_moves_no_byte() {
    // Fair sharing never sets up a circuit: the flow between racks stays
    // at 0 bytes sent and nothing is left to happen; the one inside a rack
    // (NIC to NIC through its ToR) goes.
    let t = unit_ocs_only();
    let mut net = FluidNetwork::new(&t, "fair").unwrap();
    net.add_flows(
        Nanos::ZERO,
        &[flow(0, 1, (0, 0), (1, 0), MB), flow(1, 2, (2, 0), (2, 0), MB)],
    );
    let done = run_to_end(&mut net);
    assert_eq!(done.keys().copied().collect::<Vec<_>>(), vec![FlowId(1)]);
    assert_eq!(net.next_event_at(), None);
    net.sync_progress();
    assert_eq!(net.view().flows[&FlowId(0)].remaining_bytes, MB as f64);
    assert_eq!(
        net.stats().eps_bytes,
        Bytes(MB),
        "the rack-local flow's bytes only"
    );
    // Sunflow sets up 0 -> 1: up at 0.25 s, 1 MB at 1 MB/s, done at 1.25 s.
    let mut net = FluidNetwork::new(&t, "sunflow").unwrap();
    net.add_flows(Nanos::ZERO, &[flow(0, 1, (0, 0), (1, 0), MB)]);
    let done = run_to_end(&mut net);
    assert_eq!(done[&FlowId(0)], Nanos::from_millis(1250));
    assert_eq!(net.stats().ocs_bytes, Bytes(MB));
}

#[test]
fn sunflow_single_coflow_finishes_at_its_lower_bound() {
    // C = {0->1: 2 units, 0->2: 1 unit}. Rack 0 sends on one circuit at a
    // time: 0->1 set up at 0, up at 0.25, done at 2.25; then 0->2 set up at
    // 2.25, up at 2.5, done at 3.5 = T(C) = (2 + δ) + (1 + δ).
    let t = unit_ocs();
    let mut net = FluidNetwork::new(&t, "sunflow").unwrap();
    net.add_flows(
        Nanos::ZERO,
        &[flow(0, 1, (0, 0), (1, 0), 2 * MB), flow(1, 1, (0, 0), (2, 0), MB)],
    );
    let done = run_to_end(&mut net);
    assert_eq!(done[&FlowId(0)], Nanos::from_millis(2250));
    assert_eq!(done[&FlowId(1)], Nanos::from_millis(3500));
    assert_eq!(net.stats().reconfigurations, 2);
    assert_eq!(net.stats().ocs_bytes, Bytes(3 * MB));
    assert_eq!(net.stats().eps_bytes, Bytes(0));
}

#[test]
fn a_coflow_on_a_circuit_already_up_is_not_charged_delta() {
    // Coflow 1: 0 -> 1, 2 units at 0 s: its circuit is asked for at 0, up
    // at 0.25 s, and it finishes at 2.25 s, its T(C) = 2 + δ. Coflow 2:
    // 0 -> 1, 1 unit at 0.5 s, while that circuit is up. Sunflow re-plans
    // at the arrival and serves the smaller remaining demand first over the
    // same circuit (no conflict, no reconfiguration): done at 1.5 s, a CCT
    // of 1 s. Eq. 1 charges it δ (1.25 s), which it beats; its reported
    // bound charges what it must still wait at 0.5 s, nothing: 1 s.
    let t = unit_ocs();
    let coflows = [
        Coflow {
            id: CoflowId(1),
            arrival: Nanos::ZERO,
            flows: vec![flow(0, 1, (0, 0), (1, 0), 2 * MB)],
        },
        Coflow {
            id: CoflowId(2),
            arrival: Nanos::from_millis(500),
            flows: vec![flow(1, 2, (0, 0), (1, 0), MB)],
        },
    ];
    let out = replay(&t, "sunflow", &coflows, |_, _| {}).unwrap();
    assert_eq!(out.stats.reconfigurations, 1);
    let [first, second] = &out.records[..] else {
        panic!("{:?}", out.records)
    };
    assert_eq!(second.cct, Nanos::from_millis(1000));
    assert_eq!(second.lower_bound.unwrap().ocs, Nanos::from_millis(1000));
    let fabric = FabricParams::from(&t);
    let alone = coflow_lower_bound(
        &fabric,
        &NetView::new(fabric).links,
        &coflows[1].flows,
        Fabrics::Hybrid,
    );
    assert_eq!(alone.unwrap().ocs, Nanos::from_millis(1250));
    // The first found no circuit: charged δ, and served 1 unit, held back
    // 1 s, then the last unit: 3.25 s.
    assert_eq!(first.lower_bound.unwrap().ocs, Nanos::from_millis(2250));
    assert_eq!(first.cct, Nanos::from_millis(3250));
}

/// Each flow's finish (ms), the circuits that came up (ms, from, to), and
/// the number of circuits set up.
type Fig2Run = (BTreeMap<u64, u64>, Vec<(u64, u32, u32)>, u64);

/// The five flows of the Fig. 2-like case, run to the end: each flow's
/// finish (ms), the circuits that came up (ms, from, to), and the number
/// of circuits set up.
fn fig2_case(policy: &str) -> Fig2Run {
    let t = unit_ocs();
    let mut net = FluidNetwork::new(&t, policy).unwrap();
    net.add_flows(
        Nanos::ZERO,
        &[
            flow(0, 1, (0, 0), (1, 0), 2 * MB),
            flow(1, 1, (0, 0), (2, 0), MB),
            flow(2, 2, (1, 0), (2, 0), 3 * MB),
            flow(3, 2, (2, 0), (0, 0), 2 * MB),
            flow(4, 2, (0, 0), (2, 0), 2 * MB),
        ],
    );
    let mut done = BTreeMap::new();
    let mut circuits_up = Vec::new();
    while let Some(at) = net.next_event_at() {
        for e in net.advance_to(at) {
            match e {
                NetEvent::FlowDone { flow, at, .. } => {
                    done.insert(flow.0, at.0 / 1_000_000);
                }
                NetEvent::Circuit {
                    at,
                    src_rack,
                    dst_rack,
                    up: true,
                    ..
                } => circuits_up.push((at.0 / 1_000_000, src_rack, dst_rack)),
                NetEvent::Circuit { .. } => {}
            }
        }
    }
    (done, circuits_up, net.stats().reconfigurations)
}

#[test]
fn sunflow_np_two_coflows_on_three_racks_like_coscheduler_fig2() {
    // Sunflow as Co-scheduler uses it, in the spirit of its Fig. 2: three racks, one circuit per
    // rack, unit data (1 unit = 1 s on a circuit), δ = 0.25 s per set-up.
    //   A (id 1): 0->1: 2, 0->2: 1.          T(A) = 3 + 2δ = 3.5
    //   B (id 2): 1->2: 3, 2->0: 2, 0->2: 2. T(B) = col 2: (3+δ) + (2+δ) = 5.5
    // Shorter coflow first: A, then B; pairs largest first.
    //   t=0     A 0->1 reserved (tx0, rx1); A 0->2 waits (tx0 busy).
    //           B 1->2 reserved (tx1, rx2); B 0->2 waits (tx0); B 2->0 reserved (tx2, rx0).
    //           Three circuits set up, all up at 0.25.
    //   t=2.25  A 0->1 and B 2->0 done. A 0->2 needs rx2, held by B 1->2
    //           (non-preemptive): waits. B 0->2 also waits for rx2.
    //   t=3.25  B 1->2 done. A (first) takes 0->2: set up, up at 3.5, done at 4.5.
    //   t=4.5   A done (CCT 4.5). B 0->2 reuses the circuit 0->2 (no δ): done at 6.5.
    // CCT(A) = 4.5 s, CCT(B) = 6.5 s; four circuits set up.
    let (done, circuits_up, reconfigurations) = fig2_case("sunflow-np");
    let ms: BTreeMap<u64, u64> = [(0, 2250), (1, 4500), (2, 3250), (3, 2250), (4, 6500)].into();
    assert_eq!(done, ms);
    assert_eq!(
        circuits_up,
        vec![(250, 0, 1), (250, 1, 2), (250, 2, 0), (3500, 0, 2)]
    );
    assert_eq!(reconfigurations, 4);
}

#[test]
fn sunflow_replans_the_fig2_case_and_preempts_between_coflows() {
    // The same five flows under Sunflow as its authors run it (α order,
    // a plan over time, the later coflow in the gaps before the horizon):
    //   α(A) = 3 (rack 0 sends 3), α(B) = 5 (rack 2 receives 5): A first.
    //   Pair 0->2 belongs to A (first with bytes on it); B's 0->2 waits.
    //   Plan at 0: A 0->1 [0, 2.25], then A 0->2 [2.25, 3.5] (horizon 3.5).
    //     B fills the gaps: 1->2 until rx2 is A's at 2.25: [0, 2.25] (1 of
    //     its 3 units left over, no later gap); 2->0 [0, 2.25].
    //   t=2.25  0->1 and 2->0 done; A's 0->2 is set up, tearing down B's
    //           1->2 (1 unit left): up at 2.5, A done at 3.5.
    //   t=3.5   A done: new plan for B: 0->2 (2) [0, 2.25] on the circuit
    //           already up (no δ: done at 5.5), 1->2 at +2.25 = 5.75, up
    //           at 6.0, done at 7.0.
    // CCT(A) = 3.5 s (4.5 without preemption), CCT(B) = 7.0 s (6.5).
    let (done, circuits_up, reconfigurations) = fig2_case("sunflow");
    let ms: BTreeMap<u64, u64> = [(0, 2250), (1, 3500), (2, 7000), (3, 2250), (4, 5500)].into();
    assert_eq!(done, ms);
    assert_eq!(
        circuits_up,
        vec![(250, 0, 1), (250, 1, 2), (250, 2, 0), (2500, 0, 2), (6000, 1, 2)]
    );
    assert_eq!(reconfigurations, 5);
}

#[test]
fn sunflow_sends_mice_over_eps_and_elephants_over_circuits() {
    // Threshold 1.5 MB: the 1 MB flow goes over EPS (125 MB/s: 8 ms) while
    // the 2 MB elephant takes the circuit (0.25 + 2 = 2.25 s).
    let t = topo(3, 1, ["1Gbit/s", "1Gbit/s"], (1, ["8Mbit/s", "250ms", "1.5MB"]));
    let mut net = FluidNetwork::new(&t, "sunflow").unwrap();
    net.add_flows(
        Nanos::ZERO,
        &[flow(0, 1, (0, 0), (1, 0), 2 * MB), flow(1, 1, (0, 0), (2, 0), MB)],
    );
    let done = run_to_end(&mut net);
    assert_eq!(done[&FlowId(1)], Nanos::from_millis(8));
    assert_eq!(done[&FlowId(0)], Nanos::from_millis(2250));
    assert_eq!(net.stats().ocs_bytes, Bytes(2 * MB));
    assert_eq!(net.stats().eps_bytes, Bytes(MB));
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn fb2010(limit: usize, topology: &str) -> (Topology, Vec<Coflow>) {
    let t = Topology::load(&repo().join("topologies").join(topology)).unwrap();
    let trace = coflow_benchmark::load(&repo().join("traces/FB2010-1Hr-150-0.txt")).unwrap();
    let coflows = trace.to_coflows(&t, Some(limit), FlowSizes::default());
    (t, coflows)
}

#[test]
fn replaying_a_trace_twice_gives_identical_output() {
    for (policy, topology) in [
        ("fair", "fb2010.toml"),
        ("fifo", "fb2010.toml"),
        ("varys", "fb2010.toml"),
        ("sebf", "fb2010.toml"),
        ("aalo", "fb2010.toml"),
        ("sunflow", "fb2010-ocs.toml"),
    ] {
        // The first 40 coflows but the few wide ones (thousands of flows),
        // which would make this test slow without testing anything more.
        let (t, mut coflows) = fb2010(40, topology);
        coflows.retain(|c| c.flows.len() <= 300);
        let n = coflows.len();
        let first: ReplayOutcome = replay(&t, policy, &coflows, |_, _| {}).unwrap();
        let second = replay(&t, policy, &coflows, |_, _| {}).unwrap();
        assert_eq!(first, second, "{policy}");
        assert!(n >= 30, "{n} coflows");
        // The solver's figures come with the outcome; under fair every
        // demand is in the host-pair matrix, whose freezes are logged and
        // whose solves resume from the last one's order.
        let solver = first.solver;
        assert!(solver.solves > 0, "{policy}: {solver:?}");
        if policy == "fair" {
            assert!(solver.freezes > 0 && solver.orders_followed > 0, "{solver:?}");
        }
        assert_eq!(first.records.len(), n);
        // Every byte is delivered, and no coflow beats its lower bound.
        let bytes: u64 = coflows.iter().map(|c| c.bytes().0).sum();
        assert_eq!(
            first.stats.eps_bytes.0 + first.stats.ocs_bytes.0,
            bytes,
            "{policy}"
        );
        for r in &first.records {
            let lb = r.lower_bound.unwrap().value();
            assert!(
                r.cct.0 + 1_000 >= lb.0,
                "{policy}: coflow {:?} CCT {} < bound {}",
                r.id,
                r.cct,
                lb
            );
        }
    }
}

#[test]
fn a_malformed_trace_line_names_the_line_and_field() {
    let text = "150 2\n1 0 1 22 1 65:1.0\n2 10833 2 104 132 1 140:forty\n";
    let e = coflow_benchmark::parse(text, Path::new("bad.txt")).unwrap_err();
    assert_eq!(e.line, 3);
    assert_eq!(e.field, "reducer[0].megabytes");
    assert!(
        e.to_string()
            .starts_with("bad.txt:3: field `reducer[0].megabytes`"),
        "{e}"
    );
    assert!(e.to_string().contains("forty"), "{e}");

    let e = coflow_benchmark::parse("150 1\n1 0 2 22 151 1 65:1.0\n", Path::new("bad.txt")).unwrap_err();
    assert_eq!((e.line, e.field.as_str()), (2, "mapper[1]"));
    assert!(e.message.contains("0 to 149"), "{e}");
}

#[test]
fn elephants_are_counted_per_rack_pair_of_a_coflow() {
    // Threshold 1.5 MB, circuits of 1 MB/s, δ = 0.25 s, EPS at 125 MB/s.
    // Coflow 1 has two 1 MB flows from rack 0 to rack 1 (different hosts):
    // 2 MB between the pair, so both are elephants (Co-scheduler Sec. III-A
    // batches per rack pair) and share the one circuit: up at 0.25, 2 MB at
    // 1 MB/s, both done at 2.25 s. Coflow 2's lone 1 MB flow on the same
    // rack pair stays below the threshold: EPS, alone on its path, 8 ms.
    // Judged per flow (1 MB < 1.5 MB) all three would go over EPS.
    let t = topo(2, 2, ["1Gbit/s", "1Gbit/s"], (1, ["8Mbit/s", "250ms", "1.5MB"]));
    let mut net = FluidNetwork::new(&t, "sunflow").unwrap();
    net.add_flows(
        Nanos::ZERO,
        &[
            flow(0, 1, (0, 0), (1, 0), MB),
            flow(1, 1, (0, 1), (1, 1), MB),
            flow(2, 2, (0, 0), (1, 1), MB),
        ],
    );
    assert!(net.view().may_use_ocs(&flow(0, 1, (0, 0), (1, 0), MB)));
    let done = run_to_end(&mut net);
    assert_eq!(done[&FlowId(2)], Nanos::from_millis(8));
    assert_eq!(done[&FlowId(0)], Nanos::from_millis(2250));
    assert_eq!(done[&FlowId(1)], Nanos::from_millis(2250));
    assert_eq!(net.stats().ocs_bytes, Bytes(2 * MB));
    assert_eq!(net.stats().eps_bytes, Bytes(MB));
}

/// What a random fabric joins racks with.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Joins {
    Eps,
    Hybrid,
    CircuitsOnly,
    Rotor,
}

/// A random small topology of kind `joins` (simulation only): 2–6 racks of
/// 1–3 hosts, uplinks at 1–4:1, 1–2 OCS ports (1 under a rotor) at 1–10
/// Gbit/s, δ from 100 µs to 10 ms, elephants from 0 B to 100 MB.
fn random_topology(d: &mut SplitMix64, joins: Joins) -> Topology {
    let racks = 2 + d.next_u64() % 5;
    let hosts = 1 + d.next_u64() % 3;
    let host_mbps = d.pick(&[1_000u64, 10_000]);
    let uplink_mbps = host_mbps * hosts / d.pick(&[1, 2, 4]);
    let ports = match joins {
        Joins::Eps => 0,
        Joins::Rotor => 1,
        Joins::Hybrid | Joins::CircuitsOnly => 1 + d.next_u64() % 2,
    };
    let port = d.pick(&["1Gbit/s", "4Gbit/s", "10Gbit/s"]);
    let delta = d.pick(&["100us", "1ms", "10ms"]);
    let elephants = match joins {
        Joins::CircuitsOnly => "0B",
        _ => d.pick(&["0B", "1MB", "100MB"]),
    };
    let eps = match joins {
        Joins::CircuitsOnly => format!("host_rate = \"{host_mbps}Mbit/s\"\ncore = false\n"),
        _ => format!("host_rate = \"{host_mbps}Mbit/s\"\nuplink_rate = \"{uplink_mbps}Mbit/s\"\n"),
    };
    let mut text = format!(
        "name = \"random\"\nracks = {racks}\nhosts_per_rack = {hosts}\nsimulation_only = true\n\
         [eps]\n{eps}[ocs]\nports_per_rack = {ports}\nport_rate = \"{port}\"\n\
         reconfig_delay = \"{delta}\"\nelephant_threshold = \"{elephants}\"\n"
    );
    if joins == Joins::Rotor {
        // Every rack reaches every other once a round: matching k sends
        // rack i to rack i + k.
        let slot = d.pick(&["1ms", "10ms"]);
        text += &format!("[ocs.schedule]\nslot = \"{slot}\"\ndelay = \"100us\"\n");
        for k in 1..racks {
            let circuits: Vec<String> = (0..racks)
                .map(|i| format!("\"{i}:{}\"", (i + k) % racks))
                .collect();
            text += &format!("[[ocs.schedule.slots]]\ncircuits = [{}]\n", circuits.join(", "));
        }
    }
    Topology::parse(&text, Path::new("random.toml")).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// Tries hard to break trace replay: random small traces, each on a
/// random fabric (EPS only, hybrid, circuits only, or a rotor), under every
/// coflow scheduler and every flow-size rule. A run may be refused with an
/// error (a scheduler that cannot use the only fabric there is: fair on
/// circuits only); a run that finishes must have delivered every byte of
/// the trace, over circuits only if its fabric has them and over EPS only
/// if it has a core, with every coflow at or above its lower bound, and
/// give the same outcome a second time.
#[test]
fn random_traces_on_random_fabrics_deliver_every_byte_under_every_scheduler() {
    use ocslab_scheduler::trace::generate::{Dist, GenSpec};
    let mut finished = BTreeMap::<&str, u64>::new();
    // OCSLAB_REPLAY_SEEDS=N tries N traces instead (3,000 take 85 s).
    let seeds: u64 =
        std::env::var("OCSLAB_REPLAY_SEEDS").map_or(48, |n| n.parse().expect("a number of seeds"));
    for seed in 0..seeds {
        let mut d = SplitMix64(seed);
        let joins = [Joins::Eps, Joins::Hybrid, Joins::CircuitsOnly, Joins::Rotor][seed as usize % 4];
        let t = random_topology(&mut d, joins);
        let trace = GenSpec {
            racks: t.racks,
            coflows: 5 + (d.next_u64() % 16) as usize,
            seed,
            gap_ms: Dist::Exp(d.pick(&[10.0, 200.0, 2000.0])),
            mappers: Dist::Pareto(1.0, 1.0),
            reducers: Dist::Pareto(1.0, 1.0),
            reducer_mb: Dist::LogNormal(d.pick(&[1.0, 4.0, 50.0]), 1.5),
        }
        .generate();
        let sizes = [
            FlowSizes::CoflowSim,
            FlowSizes::Sunflow { seed: seed as u32 },
            FlowSizes::Exact,
        ][(seed / 4) as usize % 3];
        let coflows = trace.to_coflows(&t, None, sizes);
        let bytes: u64 = coflows.iter().map(|c| c.bytes().0).sum();
        for policy in coflow::POLICY_NAMES {
            let case = format!("seed {seed}, {joins:?}, {sizes}, {policy}");
            let Ok(first) = replay(&t, policy, &coflows, |_, _| {}) else {
                // Only circuits-only fabrics refuse, and only schedulers
                // that do not use circuits.
                assert_eq!(joins, Joins::CircuitsOnly, "{case}: refused");
                let uses_ocs = coflow::by_name(policy).expect("a known name").uses_ocs();
                assert!(!uses_ocs, "{case}: refused a scheduler that uses circuits");
                continue;
            };
            *finished.entry(policy).or_default() += 1;
            let (eps, ocs) = (first.stats.eps_bytes.0, first.stats.ocs_bytes.0);
            assert_eq!(eps + ocs, bytes, "{case}: bytes delivered");
            if t.ocs_ports_per_rack == 0 {
                assert_eq!(ocs, 0, "{case}: bytes over circuits that do not exist");
            }
            if joins == Joins::CircuitsOnly {
                // Only flows within a rack may stay off the circuits.
                let within: u64 = coflows
                    .iter()
                    .flat_map(|c| &c.flows)
                    .filter(|f| f.src.rack == f.dst.rack)
                    .map(|f| f.bytes.0)
                    .sum();
                assert_eq!(eps, within, "{case}: EPS bytes between racks with no core");
            }
            assert_eq!(first.records.len(), coflows.len(), "{case}");
            for r in &first.records {
                let Some(lb) = r.lower_bound else {
                    panic!("{case}: coflow {:?} finished with no lower bound", r.id);
                };
                // The network takes a finish within 100 ns after an event
                // at the event, and both times are whole nanoseconds (3,000
                // traces came within 96 ns below a bound, none further).
                assert!(
                    r.cct.0 + 110 >= lb.value().0,
                    "{case}: coflow {:?} CCT {} below its bound {}",
                    r.id,
                    r.cct,
                    lb.value()
                );
            }
            let second = replay(&t, policy, &coflows, |_, _| {}).expect("ran the first time");
            assert_eq!(first, second, "{case}: a second replay differs");
        }
    }
    // Every scheduler finished on most fabrics, so the checks above ran.
    for policy in coflow::POLICY_NAMES {
        assert!(
            finished.get(policy).copied().unwrap_or(0) >= seeds * 3 / 4,
            "{policy}: {finished:?}"
        );
    }
}
