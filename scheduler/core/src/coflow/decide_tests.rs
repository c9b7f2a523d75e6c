//! Each coflow policy's distinctive decision on a [`NetView`] built by hand:
//! no network, no engine, no simulator. The fabric has 1 MB/s host NICs
//! (8 Mbit/s) and an uplink and OCS ports fast enough never to bind, so
//! every expected rate below is worked out from the NICs alone.

use super::{by_name, CircuitSetup, Decision, FabricParams, FlowPlan, NetView, PairPlan, Path};
use crate::model::coflow::{CoflowId, FlowId, FlowSpec};
use crate::{Bps, Bytes, HostId, Nanos};

/// A host NIC's rate in bytes per second.
const NIC: f64 = 1e6;

pub(super) fn fabric(racks: u32) -> FabricParams {
    FabricParams {
        racks,
        hosts_per_rack: 2,
        host_rate: Bps(8_000_000),
        uplink_rate: Bps(800_000_000),
        ocs_ports: 1,
        ocs_port_rate: Bps(800_000_000),
        reconfig_delay: Nanos::from_millis(1),
        elephant_threshold: Bytes(1_000_000),
        scale: 1.0,
    }
}

pub(super) fn h(rack: u32, host: u32) -> HostId {
    HostId { rack, host }
}

/// Adds flow `id` of `coflow` from `src` to `dst` with `bytes` at `at`,
/// none of them sent yet.
pub(super) fn add(view: &mut NetView, at: Nanos, id: u64, coflow: u64, src: HostId, dst: HostId, bytes: u64) {
    view.insert_flow(
        FlowSpec {
            id: FlowId(id),
            coflow: CoflowId(coflow),
            src,
            dst,
            bytes: Bytes(bytes),
            weight: 1,
        },
        at,
    );
    if let Some(f) = view.flows.get_mut(&FlowId(id)) {
        f.remaining_bytes = bytes as f64;
    }
}

/// The plan of flow `id` in `d`'s per-flow plans.
fn plan(d: &Decision, id: u64) -> FlowPlan {
    d.plans
        .iter()
        .find(|(f, _)| *f == FlowId(id))
        .map(|(_, p)| *p)
        .unwrap_or_else(|| panic!("flow {id} has no plan in {d:?}"))
}

/// A paced plan's rate in bytes per second (0 for a flow told to wait).
fn rate(p: FlowPlan) -> f64 {
    match (p.path, p.cap) {
        (Path::Wait, _) => 0.0,
        (Path::Eps, Some(cap)) => cap.bytes_per_sec(),
        other => panic!("not a paced EPS plan: {other:?}"),
    }
}

fn close(got: f64, want: f64) {
    // Caps are whole bits per second, rounded down.
    assert!((got - want).abs() <= 1.0, "rate {got} B/s, expected {want} B/s");
}

/// Varys (SEBF, then MADD, then backfilling): the coflow with the smaller
/// effective bottleneck goes first even though it arrived second; MADD gives
/// each of its flows remaining ÷ Γ, so its small flow gets half a NIC, and
/// backfilling hands that flow the other half; the earlier, larger coflow,
/// whose only flow shares the first coflow's saturated NIC, waits.
#[test]
fn varys_serves_the_smallest_bottleneck_first_at_madd_rates() {
    let mut view = NetView::new(fabric(2));
    // Coflow 2 arrives first: 4 MB out of r0h0 (Γ = 4 s).
    add(&mut view, Nanos::ZERO, 1, 2, h(0, 0), h(1, 1), 4_000_000);
    // Coflow 1: 1 MB out of r0h0 and 0.5 MB out of r0h1 (Γ = 1 s).
    let t = Nanos::from_millis(1);
    add(&mut view, t, 2, 1, h(0, 0), h(1, 0), 1_000_000);
    add(&mut view, t, 3, 1, h(0, 1), h(1, 1), 500_000);
    let d = by_name("varys").unwrap().schedule(t, &view);
    close(rate(plan(&d, 2)), NIC); // 1 MB in Γ = 1 s
    close(rate(plan(&d, 3)), NIC); // MADD 0.5 MB/s + backfilled 0.5 MB/s
    assert_eq!(
        plan(&d, 1),
        FlowPlan::WAIT,
        "r0h0's NIC is taken by the first coflow"
    );
    assert!(d.circuits.is_empty() && d.order.is_empty());
}

/// Without backfilling room, MADD's rate shows alone: a coflow whose two
/// flows leave the same NIC with 3 MB and 1 MB has Γ = 4 s and paces them
/// at 0.75 and 0.25 MB/s, so both finish together.
#[test]
fn varys_madd_paces_a_coflows_flows_to_finish_together() {
    let mut view = NetView::new(fabric(2));
    add(&mut view, Nanos::ZERO, 1, 1, h(0, 0), h(1, 0), 3_000_000);
    add(&mut view, Nanos::ZERO, 2, 1, h(0, 0), h(1, 1), 1_000_000);
    let d = by_name("varys").unwrap().schedule(Nanos::ZERO, &view);
    close(rate(plan(&d, 1)), 0.75 * NIC);
    close(rate(plan(&d, 2)), 0.25 * NIC);
}

/// `sebf` (CoflowSim's SEBF) keeps each coflow's place from its arrival.
/// Coflow 1 came with 4 MB out of r0h0 (Γ = 4 s) and has 0.5 MB left when
/// coflow 2 comes with 1 MB over the same NIC (Γ = 1 s). `varys` orders by
/// what is left (0.5 s before 1 s) and keeps coflow 1 on the NIC; `sebf`
/// puts coflow 2 first, and coflow 1, whose NIC is then full, waits.
#[test]
fn sebf_orders_coflows_by_their_bottleneck_at_arrival() {
    let mut view = NetView::new(fabric(2));
    add(&mut view, Nanos::ZERO, 1, 1, h(0, 0), h(1, 0), 4_000_000);
    let mut sebf = by_name("sebf").unwrap();
    close(rate(plan(&sebf.schedule(Nanos::ZERO, &view), 1)), NIC);
    let t = Nanos::from_millis(3500);
    if let Some(f) = view.flows.get_mut(&FlowId(1)) {
        f.remaining_bytes = 500_000.0;
    }
    add(&mut view, t, 2, 2, h(0, 0), h(1, 1), 1_000_000);
    let d = sebf.schedule(t, &view);
    close(rate(plan(&d, 2)), NIC);
    assert_eq!(plan(&d, 1), FlowPlan::WAIT, "coflow 2 came with the smaller Γ");
    let d = by_name("varys").unwrap().schedule(t, &view);
    close(rate(plan(&d, 1)), NIC);
    assert_eq!(plan(&d, 2), FlowPlan::WAIT, "coflow 1 has the least left");
}

/// Coflow 1 (1 MB r0h0 → r1h0, Γ = 1 s) fills r0h0's NIC. Coflows 2 and 3
/// each have a flow over that full NIC, so MADD skips both; their other
/// flows (r0h1 → r1h1) then split r0h1's NIC as one coflow's, half each.
/// `varys` backfills in SEBF order instead: coflow 2's flow takes the NIC
/// and coflow 3's waits.
#[test]
fn sebf_splits_what_is_left_among_the_coflows_madd_skipped() {
    let mut view = NetView::new(fabric(2));
    add(&mut view, Nanos::ZERO, 1, 1, h(0, 0), h(1, 0), 1_000_000);
    add(&mut view, Nanos::ZERO, 2, 2, h(0, 0), h(1, 1), 2_000_000);
    add(&mut view, Nanos::ZERO, 3, 2, h(0, 1), h(1, 1), 2_000_000);
    add(&mut view, Nanos::ZERO, 4, 3, h(0, 0), h(1, 1), 3_000_000);
    add(&mut view, Nanos::ZERO, 5, 3, h(0, 1), h(1, 1), 3_000_000);
    let d = by_name("sebf").unwrap().schedule(Nanos::ZERO, &view);
    close(rate(plan(&d, 1)), NIC);
    for f in [2, 4] {
        assert_eq!(plan(&d, f), FlowPlan::WAIT, "flow {f} crosses the full NIC");
    }
    close(rate(plan(&d, 3)), NIC / 2.0);
    close(rate(plan(&d, 5)), NIC / 2.0);
    let d = by_name("varys").unwrap().schedule(Nanos::ZERO, &view);
    close(rate(plan(&d, 3)), NIC);
    assert_eq!(plan(&d, 5), FlowPlan::WAIT);
}

/// What MADD leaves goes out by deadline under `sebf`: arrival + Γ at
/// arrival × Java's `new Random(17)` draws in arrival order (1.7323…,
/// then 1.6974…). Coflow 1 (at 0: 0.1 MB r0h1 → r1h1, 1.2 MB r1h0 →
/// r0h1; Γ = 1.2 s, deadline 2.08 s) and coflow 2 (at 0.5 s: 1 MB r0h0 →
/// r1h0, 0.5 MB r0h1 → r1h1; Γ = 1 s, deadline 2.20 s). MADD serves coflow
/// 2 first (1 and 0.5 MB/s), then coflow 1 on what is left (Γ' = 1.2 s:
/// 0.083 and 1 MB/s). r0h1 → r1h1 has 0.417 MB/s left: `sebf` gives it to
/// coflow 1 (earlier deadline), `varys` to coflow 2 (first in SEBF order).
#[test]
fn sebf_hands_out_what_madd_leaves_by_deadline() {
    let mut view = NetView::new(fabric(2));
    add(&mut view, Nanos::ZERO, 1, 1, h(0, 1), h(1, 1), 100_000);
    add(&mut view, Nanos::ZERO, 2, 1, h(1, 0), h(0, 1), 1_200_000);
    let mut sebf = by_name("sebf").unwrap();
    sebf.schedule(Nanos::ZERO, &view);
    let t = Nanos::from_millis(500);
    add(&mut view, t, 3, 2, h(0, 0), h(1, 0), 1_000_000);
    add(&mut view, t, 4, 2, h(0, 1), h(1, 1), 500_000);
    let left = NIC - 0.5 * NIC - 100_000.0 / 1.2;
    let d = sebf.schedule(t, &view);
    close(rate(plan(&d, 3)), NIC);
    close(rate(plan(&d, 4)), 0.5 * NIC);
    close(rate(plan(&d, 1)), 100_000.0 / 1.2 + left);
    close(rate(plan(&d, 2)), NIC);
    let d = by_name("varys").unwrap().schedule(t, &view);
    close(rate(plan(&d, 4)), 0.5 * NIC + left);
    close(rate(plan(&d, 1)), 100_000.0 / 1.2);
}

/// Coflow `coflow` of `view` has sent `bytes` already (what Aalo's queues
/// read).
fn has_sent(view: &mut NetView, coflow: u64, bytes: f64) {
    if let Some(c) = view.coflows.get_mut(&CoflowId(coflow)) {
        c.sent_bytes = bytes;
    }
}

/// Aalo (D-CLAS): a coflow that has sent 20 MiB sits in queue 1, below a
/// newer one that has sent nothing (queue 0), so the newer one takes the
/// shared NIC whole and the older one waits; Aalo asks to be woken when the
/// newer one will have sent its queue's 10 MiB at that rate.
#[test]
fn aalo_puts_the_coflow_that_sent_least_first_and_wakes_at_its_queue_limit() {
    let mut view = NetView::new(fabric(2));
    add(&mut view, Nanos::ZERO, 1, 1, h(0, 0), h(1, 0), 100_000_000);
    has_sent(&mut view, 1, 20.0 * 1_048_576.0);
    let t = Nanos::from_millis(30_000);
    add(&mut view, t, 2, 2, h(0, 0), h(1, 1), 50_000_000);
    let d = by_name("aalo").unwrap().schedule(t, &view);
    close(rate(plan(&d, 2)), NIC);
    assert_eq!(plan(&d, 1), FlowPlan::WAIT);
    let wake = d.wake_at.expect("a wake-up at the queue crossing");
    let want = t.0 as f64 + 10.0 * 1_048_576.0 / NIC * 1e9;
    assert!(
        (wake.0 as f64 - want).abs() <= 2.0,
        "wake at {wake:?}, expected {want} ns"
    );
}

/// Aalo's plans come in flow-id order, whether the coflows' flow ids
/// interleave (coflow 1: flows 1 and 4; coflow 2: flows 2 and 3) or not,
/// and whatever the queue order (coflow 2 has sent less: it goes first).
#[test]
fn aalo_plans_come_in_flow_id_order_when_coflows_interleave() {
    let mut view = NetView::new(fabric(3));
    add(&mut view, Nanos::ZERO, 1, 1, h(0, 0), h(1, 0), 10_000_000);
    add(&mut view, Nanos::ZERO, 2, 2, h(0, 1), h(2, 0), 10_000_000);
    add(&mut view, Nanos::ZERO, 3, 2, h(1, 1), h(2, 1), 10_000_000);
    add(&mut view, Nanos::ZERO, 4, 1, h(2, 0), h(1, 1), 10_000_000);
    has_sent(&mut view, 1, 20.0 * 1_048_576.0);
    let d = by_name("aalo").unwrap().schedule(Nanos::ZERO, &view);
    let ids: Vec<u64> = d.plans.iter().map(|(f, _)| f.0).collect();
    assert_eq!(ids, [1, 2, 3, 4]);
}

/// One coflow: A r0h0 → r1h0, B r0h0 → r1h1, C and D r0h1 → r1h1.
/// `aalo-split` (CoflowSim's DARK) splits each NIC equally among the
/// coflow's flows on it: r1h1 gives B, C and D a third each, r0h0 gives A
/// and B a half each, and A takes its half; the sixth B cannot use stays
/// idle. `aalo` fills max-min and hands it to A (two thirds). `aalo-split`
/// asks for no wake-up: its queues move at coflow events only.
#[test]
fn aalo_split_splits_a_coflows_nics_equally_and_asks_no_wake_up() {
    let mut view = NetView::new(fabric(2));
    add(&mut view, Nanos::ZERO, 1, 1, h(0, 0), h(1, 0), 50_000_000);
    add(&mut view, Nanos::ZERO, 2, 1, h(0, 0), h(1, 1), 50_000_000);
    add(&mut view, Nanos::ZERO, 3, 1, h(0, 1), h(1, 1), 50_000_000);
    add(&mut view, Nanos::ZERO, 4, 1, h(0, 1), h(1, 1), 50_000_000);
    let split = by_name("aalo-split").unwrap().schedule(Nanos::ZERO, &view);
    close(rate(plan(&split, 1)), NIC / 2.0);
    for f in 2..=4 {
        close(rate(plan(&split, f)), NIC / 3.0);
    }
    assert_eq!(split.wake_at, None);
    let max_min = by_name("aalo").unwrap().schedule(Nanos::ZERO, &view);
    close(rate(plan(&max_min, 1)), NIC * 2.0 / 3.0);
    assert!(max_min.wake_at.is_some());
}

/// Coflows 1 and 2 share r0h0's NIC. Coflow 2 crosses queue 0's 10 MiB
/// first and enters queue 1; coflow 1 follows it there at the next coflow
/// event (coflow 4's arrival), having sent its 10 MiB later. `aalo-split`
/// serves queue 1 in the order coflows entered it, as CoflowSim's DARK
/// does, so coflow 2 takes the NIC; `aalo` serves it by arrival, so
/// coflow 1 does. Between coflow events `aalo-split` moves no coflow.
#[test]
fn aalo_split_serves_a_queue_in_the_order_its_coflows_entered_it() {
    let mut view = NetView::new(fabric(2));
    add(&mut view, Nanos::ZERO, 1, 1, h(0, 0), h(1, 0), 100_000_000);
    add(
        &mut view,
        Nanos::from_millis(1),
        2,
        2,
        h(0, 0),
        h(1, 1),
        100_000_000,
    );
    let mut split = by_name("aalo-split").unwrap();
    let mut aalo = by_name("aalo").unwrap();
    split.schedule(Nanos::from_millis(1), &view);
    let t = Nanos::from_millis(2);
    has_sent(&mut view, 1, 5.0 * 1_048_576.0);
    has_sent(&mut view, 2, 11.0 * 1_048_576.0);
    add(&mut view, t, 3, 3, h(1, 1), h(0, 1), 1_000_000);
    let d = split.schedule(t, &view);
    close(rate(plan(&d, 1)), NIC);
    assert_eq!(plan(&d, 2), FlowPlan::WAIT, "coflow 2 has left queue 0");
    let t = Nanos::from_millis(3);
    has_sent(&mut view, 1, 12.0 * 1_048_576.0);
    let d = split.schedule(t, &view);
    close(rate(plan(&d, 1)), NIC);
    add(&mut view, t, 4, 4, h(1, 1), h(0, 1), 1_000_000);
    let d = split.schedule(t, &view);
    assert_eq!(
        plan(&d, 1),
        FlowPlan::WAIT,
        "coflow 1 entered queue 1 after coflow 2"
    );
    close(rate(plan(&d, 2)), NIC);
    let d = aalo.schedule(t, &view);
    close(rate(plan(&d, 1)), NIC);
    assert_eq!(plan(&d, 2), FlowPlan::WAIT, "aalo serves a queue by arrival");
}

/// Sunflow: two coflows want rack 0's only OCS port. The one with the
/// shorter T(C) (2 MB to rack 1, against 20 MB to rack 2) reserves it and
/// gets a circuit 0 → 1; the other's elephants wait; a flow below the
/// elephant threshold is left to EPS (no plan).
#[test]
fn sunflow_gives_a_contended_port_to_the_shortest_coflow() {
    let mut view = NetView::new(fabric(3));
    add(&mut view, Nanos::ZERO, 1, 1, h(0, 0), h(2, 0), 20_000_000);
    add(&mut view, Nanos::ZERO, 2, 2, h(0, 1), h(1, 0), 2_000_000);
    add(&mut view, Nanos::ZERO, 3, 3, h(1, 1), h(2, 1), 500_000);
    let d = by_name("sunflow").unwrap().schedule(Nanos::ZERO, &view);
    assert_eq!(
        d.circuits,
        [CircuitSetup {
            src_rack: 0,
            dst_rack: 1,
            port: 0
        }]
    );
    let mut changes = d.pair_changes.clone();
    changes.sort_by_key(PairPlan::pair);
    let plans: Vec<(u64, u32, u32, Option<FlowPlan>)> = changes
        .iter()
        .map(|c| (c.coflow.0, c.src_rack, c.dst_rack, c.plan))
        .collect();
    assert_eq!(
        plans,
        [(1, 0, 2, Some(FlowPlan::WAIT)), (2, 0, 1, Some(FlowPlan::ocs(0)))]
    );
    assert!(d.plans.is_empty(), "the mouse keeps EPS with fair sharing");
}
