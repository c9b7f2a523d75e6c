//! Sunflow's re-planning on views built by hand, carried out as a driver
//! would ([`set_up_circuits`], [`PairPlans`]).

use super::*;
use crate::coflow::{by_name, FabricParams, FlowView};
use crate::model::coflow::FlowSpec;
use crate::{Bps, HostId};

/// 1 MB/s circuits, δ = 10 ms, one port per rack, elephants from 1 MB.
fn fabric() -> FabricParams {
    FabricParams {
        racks: 3,
        hosts_per_rack: 1,
        host_rate: Bps(80_000_000),
        uplink_rate: Bps(8_000_000),
        ocs_ports: 1,
        ocs_port_rate: Bps(8_000_000),
        reconfig_delay: Nanos::from_millis(10),
        elephant_threshold: Bytes(1_000_000),
        scale: 1.0,
    }
}

/// A driver's state: the view, the standing pair plans.
struct Driver {
    view: NetView,
    plans: PairPlans,
}

impl Driver {
    fn new() -> Driver {
        Driver::on(fabric())
    }
    fn on(fabric: FabricParams) -> Driver {
        Driver {
            view: NetView::new(fabric),
            plans: PairPlans::default(),
        }
    }
    fn add(&mut self, at: Nanos, id: u64, coflow: u64, src: u32, dst: u32, bytes: u64) {
        self.view.insert_flow(
            FlowSpec {
                id: FlowId(id),
                coflow: CoflowId(coflow),
                src: HostId::new(src, 0),
                dst: HostId::new(dst, 0),
                bytes: Bytes(bytes),
                weight: 1,
            },
            at,
        );
    }
    /// Flow `id` has `left` bytes to send.
    fn left(&mut self, id: u64, left: f64) {
        if let Some(f) = self.view.flows.get_mut(&FlowId(id)) {
            f.remaining_bytes = left;
        }
    }
    /// Flow `id` is done.
    fn done(&mut self, id: u64) {
        let Some(f) = self.view.flows.remove(&FlowId(id)) else {
            return;
        };
        let c = f.spec.coflow;
        let empty = self.view.coflows.get_mut(&c).is_some_and(|cv| {
            cv.remove_flow(&FlowId(id), f.elephant);
            cv.flows.is_empty()
        });
        if empty {
            self.view.coflows.remove(&c);
        }
    }
    /// Calls `policy` at `now` and carries out its decision.
    fn call(&mut self, policy: &mut dyn CoflowPolicy, now: Nanos) -> Decision {
        let d = policy.schedule(now, &self.view);
        let fabric = self.view.fabric;
        set_up_circuits(
            &mut self.view.circuits,
            &fabric,
            &d.circuits,
            now,
            &mut Changed::default(),
        );
        self.plans.apply(&d.pair_changes);
        d
    }
    /// The standing plan of coflow `c`'s flows from `src` to `dst`.
    fn plan(&self, c: u64, src: u32, dst: u32) -> Option<FlowPlan> {
        self.plans.get((CoflowId(c), src, dst))
    }
    /// The circuits, as (source rack, destination rack, up at ms).
    fn circuits(&self) -> Vec<(u32, u32, u64)> {
        self.view
            .circuits
            .values()
            .map(|c| (c.src_rack, c.dst_rack, c.up_at.0 / 1_000_000))
            .collect()
    }
}

fn ms(x: u64) -> Nanos {
    Nanos::from_millis(x)
}

const MB: u64 = 1_000_000;

/// The case: a 24 MB coflow holds rack 0's only port when a 1 MB
/// coflow that needs it arrives. Sunflow plans again at the arrival: the
/// small one (α = 1 MB against 23 MB left) goes first, its circuit 0 → 2
/// is set up at once (0 → 1 goes down) and is up δ later; the large one
/// waits, and gets its circuit back when the small one is done.
#[test]
fn a_small_coflow_arriving_takes_the_port_a_large_one_holds() {
    let mut d = Driver::new();
    let mut s = Sunflow::default();
    d.add(ms(0), 1, 1, 0, 1, 24 * MB);
    let first = d.call(&mut s, ms(0));
    assert_eq!(d.circuits(), vec![(0, 1, 10)]);
    assert_eq!(d.plan(1, 0, 1), Some(FlowPlan::ocs(0)));
    // The plan ends when the 24 MB would be through: δ + 24 s.
    assert_eq!(first.wake_at, Some(ms(24_010)));

    d.left(1, 23.0 * MB as f64);
    d.add(ms(1_010), 2, 2, 0, 2, MB);
    let second = d.call(&mut s, ms(1_010));
    assert_eq!(
        second.circuits,
        vec![CircuitSetup {
            src_rack: 0,
            dst_rack: 2,
            port: 0
        }]
    );
    assert_eq!(
        d.circuits(),
        vec![(0, 2, 1_020)],
        "0 → 1 went down, 0 → 2 up after δ"
    );
    assert_eq!(d.plan(2, 0, 2), Some(FlowPlan::ocs(0)));
    assert_eq!(d.plan(1, 0, 1), Some(FlowPlan::WAIT));

    // The small coflow is done at 1.01 + δ + 1 s: the large one is planned again.
    d.done(2);
    let third = d.call(&mut s, ms(2_020));
    assert_eq!(third.circuits.len(), 1);
    assert_eq!(d.circuits(), vec![(0, 1, 2_030)]);
    assert_eq!(d.plan(1, 0, 1), Some(FlowPlan::ocs(0)));
    assert_eq!(d.plan(2, 0, 2), None, "a finished coflow's plans leave the table");
}

/// The same arrival under `sunflow-np` (Co-scheduler's reading): the
/// reservation is held until the large coflow is done; the small one waits.
#[test]
fn without_preemption_the_small_coflow_waits() {
    let mut d = Driver::new();
    let mut np = by_name("sunflow-np").expect("known policy");
    d.add(ms(0), 1, 1, 0, 1, 24 * MB);
    d.call(np.as_mut(), ms(0));
    d.left(1, 23.0 * MB as f64);
    d.add(ms(1_010), 2, 2, 0, 2, MB);
    let second = d.call(np.as_mut(), ms(1_010));
    assert!(second.circuits.is_empty());
    assert_eq!(d.circuits(), vec![(0, 1, 10)]);
    assert_eq!(d.plan(2, 0, 2), Some(FlowPlan::WAIT));
}

/// Two coflows on one rack pair: the first in order owns its circuit;
/// when its flows there are done the next takes the circuit at once, with
/// no new circuit and no new plan.
#[test]
fn a_pair_done_hands_its_circuit_to_the_next_coflow() {
    let mut sunflow = Sunflow::default();
    let mut d = Driver::new();
    d.add(ms(0), 1, 1, 0, 1, MB);
    d.add(ms(0), 2, 2, 0, 1, 3 * MB);
    let first = d.call(&mut sunflow, ms(0));
    assert_eq!(first.circuits.len(), 1);
    assert_eq!(sunflow.order(), &[CoflowId(1), CoflowId(2)]);
    assert_eq!(d.plan(1, 0, 1), Some(FlowPlan::ocs(0)));
    assert_eq!(d.plan(2, 0, 1), Some(FlowPlan::WAIT));
    // Coflow 1 is done at δ + 1 s: coflow 2 owns 0 → 1 (a completion, so a new plan too).
    d.done(1);
    let dec = d.call(&mut sunflow, ms(1_010));
    assert!(dec.circuits.is_empty(), "the circuit 0 → 1 is already up");
    assert_eq!(d.plan(2, 0, 1), Some(FlowPlan::ocs(0)));
    assert_eq!(sunflow.replans(), 2);
}

/// A call at an event that changes nothing (a flow of a pair leaving while
/// others of the pair remain, a mouse arriving) changes nothing.
#[test]
fn a_call_at_any_other_event_changes_nothing() {
    let mut d = Driver::new();
    let mut s = Sunflow::default();
    d.add(ms(0), 1, 1, 0, 1, MB);
    d.add(ms(0), 2, 1, 0, 1, MB);
    d.add(ms(0), 3, 2, 1, 2, 2 * MB);
    d.call(&mut s, ms(0));
    let before = (d.circuits(), d.plans.clone());
    d.done(1);
    let again = d.call(&mut s, ms(500));
    assert!(
        again.circuits.is_empty() && again.pair_changes.is_empty(),
        "{again:?}"
    );
    d.add(ms(600), 4, 1, 2, 0, 1_000);
    let again = d.call(&mut s, ms(600));
    assert!(
        again.circuits.is_empty() && again.pair_changes.is_empty(),
        "{again:?}"
    );
    assert_eq!((d.circuits(), d.plans.clone()), before);
    assert!(d
        .view
        .flows
        .get(&FlowId(4))
        .is_some_and(|f: &FlowView| !f.elephant));
}

/// The order is α, the most bytes left at one port, not T(C) (which pays
/// δ per rack pair): coflow 1 sends 1 MB from rack 0 to each of racks 1
/// and 2 (α = 2 MB, T(C) = 2 × (δ + 1 s) = 2.02 s); coflow 2 sends
/// 2.005 MB from rack 1 to rack 2 (α = 2.005 MB, T(C) = 2.015 s). By α
/// coflow 1 goes first; by T(C) it would go second.
#[test]
fn coflows_are_ordered_by_their_busiest_port() {
    let mut s = Sunflow::default();
    let mut view = NetView::new(fabric());
    let mut add = |id: u64, c: u64, src: u32, dst: u32, bytes: u64| {
        view.insert_flow(
            FlowSpec {
                id: FlowId(id),
                coflow: CoflowId(c),
                src: HostId::new(src, 0),
                dst: HostId::new(dst, 0),
                bytes: Bytes(bytes),
                weight: 1,
            },
            Nanos::ZERO,
        )
    };
    add(1, 1, 0, 1, MB);
    add(2, 1, 0, 2, MB);
    add(3, 2, 1, 2, 2_005_000);
    s.schedule(Nanos::ZERO, &view);
    assert_eq!(s.order(), &[CoflowId(1), CoflowId(2)]);
}

/// An elephant that joins its coflow's rack pair between two calls, as the
/// pair's last kept elephant leaves (the coflow's count of elephants stays
/// as it was), is planned on the pair's circuit.
#[test]
fn an_elephant_joining_as_another_leaves_is_planned() {
    let mut d = Driver::new();
    let mut s = Sunflow::default();
    // Coflow 1: 0 -> 1 and 0 -> 2, 1 MB each; 0 -> 1 first (pair order).
    d.add(ms(0), 1, 1, 0, 1, MB);
    d.add(ms(0), 3, 1, 0, 2, MB);
    d.call(&mut s, ms(0));
    assert_eq!(d.circuits(), vec![(0, 1, 10)]);
    // Flow 1 is done at 1.01 s, and flow 2 joins the pair 0 -> 1 then.
    d.done(1);
    d.add(ms(1_010), 2, 1, 0, 1, MB);
    d.call(&mut s, ms(1_010));
    assert_eq!(d.plan(1, 0, 1), Some(FlowPlan::ocs(0)), "{:?}", d.plans);
}

/// A host slower than a circuit: one 1 MB flow from a 0.25 MB/s NIC over
/// a 1 MB/s circuit needs 4 s, and its reservation (the plan's end) says
/// so: δ + 4 s, not δ + 1 s, after which Sunflow would take the circuit
/// back, set it up again for what is left, and pay δ each time.
#[test]
fn a_reservation_lasts_as_long_as_the_pairs_busiest_host_needs() {
    let mut d = Driver::on(FabricParams {
        host_rate: Bps(2_000_000),
        ..fabric()
    });
    let mut s = Sunflow::default();
    d.add(ms(0), 1, 1, 0, 1, MB);
    let first = d.call(&mut s, ms(0));
    assert_eq!(first.wake_at, Some(ms(4_010)));
    // Two 1 MB flows from two hosts with 1 MB/s NICs: the circuit binds
    // (2 MB at 1 MB/s), δ + 2 s.
    let mut d = Driver::on(FabricParams {
        hosts_per_rack: 2,
        host_rate: Bps(8_000_000),
        ..fabric()
    });
    let mut s = Sunflow::default();
    d.add(ms(0), 1, 1, 0, 1, MB);
    d.view.insert_flow(
        FlowSpec {
            id: FlowId(2),
            coflow: CoflowId(1),
            src: HostId::new(0, 1),
            dst: HostId::new(1, 1),
            bytes: Bytes(MB),
            weight: 1,
        },
        ms(0),
    );
    let first = d.call(&mut s, ms(0));
    assert_eq!(first.wake_at, Some(ms(2_010)));
}

/// Elephants of one coflow that leave on two circuits at once are both
/// found, though the coflow stays (a mouse of it is still sending): its
/// elephants are all done, so Sunflow plans again, and the coflow waiting
/// behind it on the second pair takes that pair's circuit, already up.
#[test]
fn elephants_leaving_on_two_circuits_at_once_are_both_found() {
    let mut d = Driver::new();
    let mut s = Sunflow::default();
    d.add(ms(0), 1, 1, 0, 1, MB);
    d.add(ms(0), 2, 1, 1, 2, MB);
    d.add(ms(0), 3, 1, 2, 0, 1_000);
    d.add(ms(0), 4, 2, 1, 2, 3 * MB);
    d.call(&mut s, ms(0));
    assert_eq!(d.circuits(), vec![(0, 1, 10), (1, 2, 10)]);
    assert_eq!(d.plan(1, 1, 2), Some(FlowPlan::ocs(0)));
    assert_eq!(d.plan(2, 1, 2), Some(FlowPlan::WAIT));
    // Both elephants of coflow 1 are done at δ + 1 s; its mouse is not.
    d.done(1);
    d.done(2);
    let replans = s.replans();
    let dec = d.call(&mut s, ms(1_010));
    assert_eq!(s.replans(), replans + 1, "coflow 1's elephants are all done");
    assert!(dec.circuits.is_empty(), "1 → 2 is already up");
    assert_eq!(d.plan(2, 1, 2), Some(FlowPlan::ocs(0)), "{:?}", d.plans);
    assert_eq!(d.plan(1, 0, 1), None);
    assert_eq!(d.plan(1, 1, 2), None);
}
