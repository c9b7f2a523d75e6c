//! Tests of when [`FluidNetwork`] calls its policy and what progress the
//! policy reads: a policy called only at the events its
//! [`CoflowPolicy::triggers`] name gives the same flows, finish times and
//! bytes per fabric as the same policy called at every event, with fewer
//! calls; progress read on demand equals the hand-computed bytes.

use super::handover_tests::done;
use super::{FluidNetwork, NetError, NetEvent};
use ocslab_core::coflow::{
    self, CoflowPolicy, Decision, FabricParams, FlowPlan, NetView, Progress, Triggers,
};
use ocslab_core::model::coflow::{CoflowId, FlowId, FlowSpec};
use ocslab_core::{Bps, Bytes, HostId, Nanos};
use std::sync::{Arc, Mutex};

/// Four racks of two hosts; EPS uplinks 1 MB/s, two OCS ports per rack at
/// 5 MB/s, δ = 10 ms, elephants from 100 kB per coflow and rack pair.
fn fabric() -> FabricParams {
    FabricParams {
        racks: 4,
        hosts_per_rack: 2,
        host_rate: Bps(80_000_000),
        uplink_rate: Bps(8_000_000),
        ocs_ports: 2,
        ocs_port_rate: Bps(40_000_000),
        reconfig_delay: Nanos::from_millis(10),
        elephant_threshold: Bytes(100_000),
        scale: 1.0,
    }
}

/// The wrapped policy, called at every event; `look` sees what it is
/// given before it decides.
struct EveryEvent<F = fn(&NetView, &dyn Progress)>(Box<dyn CoflowPolicy>, F);

impl EveryEvent {
    fn new(policy: Box<dyn CoflowPolicy>) -> Self {
        EveryEvent(policy, |_, _| {})
    }
}

impl<F: FnMut(&NetView, &dyn Progress) + Send> CoflowPolicy for EveryEvent<F> {
    fn name(&self) -> &'static str {
        self.0.name()
    }
    fn uses_ocs(&self) -> bool {
        self.0.uses_ocs()
    }
    fn orders_coflows(&self) -> bool {
        self.0.orders_coflows()
    }
    fn splits_links_equally(&self) -> bool {
        self.0.splits_links_equally()
    }
    fn triggers(&self) -> Triggers {
        Triggers::EVERY_EVENT
    }
    fn decide(&mut self, now: Nanos, view: &NetView, progress: &dyn Progress) -> Decision {
        (self.1)(view, progress);
        self.0.decide(now, view, progress)
    }
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

/// Coflows arriving over 60 ms: elephant rack pairs that share racks (so
/// Sunflow's reservations wait for each other), mice, flows inside a rack,
/// a pair that crosses the elephant threshold with its third flow, more
/// flows for a pair already served, and elephants for a running coflow's
/// new pair and for its waiting one.
fn workload() -> Vec<(Nanos, Vec<FlowSpec>)> {
    let ms = Nanos::from_millis;
    vec![
        (
            ms(0),
            vec![
                flow(1, 1, (0, 0), (1, 0), 300_000),
                flow(2, 1, (0, 1), (1, 1), 200_000),
                flow(3, 1, (0, 0), (2, 0), 150_000),
                flow(4, 1, (1, 0), (2, 1), 20_000),
                flow(5, 1, (3, 0), (3, 1), 50_000),
            ],
        ),
        (
            ms(5),
            vec![
                flow(6, 2, (0, 1), (1, 0), 120_000),
                flow(7, 2, (2, 0), (1, 1), 400_000),
                flow(8, 2, (3, 1), (0, 0), 30_000),
            ],
        ),
        (ms(12), vec![flow(9, 3, (2, 1), (3, 0), 40_000)]),
        (ms(20), vec![flow(10, 3, (2, 0), (3, 1), 40_000)]),
        (
            ms(31),
            vec![
                flow(11, 3, (2, 1), (3, 1), 40_000),
                flow(12, 1, (0, 1), (1, 0), 60_000),
            ],
        ),
        (
            ms(40),
            vec![
                flow(14, 2, (3, 0), (2, 1), 150_000),
                flow(15, 2, (2, 1), (1, 0), 110_000),
            ],
        ),
        (ms(60), vec![flow(13, 4, (1, 1), (0, 1), 500_000)]),
    ]
}

/// Runs the workload; every flow done as (flow, finished at, EPS bytes,
/// OCS bytes), and the number of policy calls.
fn run(policy: Box<dyn CoflowPolicy>) -> (Vec<(u64, Nanos, u64, u64)>, u64) {
    let mut net = FluidNetwork::on_fabric(fabric(), policy);
    let mut events = Vec::new();
    for (at, flows) in workload() {
        events.extend(net.advance_to(at));
        net.add_flows(at, &flows);
    }
    while let Some(t) = net.next_event_at() {
        events.extend(net.advance_to(t));
    }
    (done(events), net.stats().policy_calls)
}

#[test]
fn each_policy_called_at_its_triggers_only_decides_as_if_called_at_every_event() {
    for name in coflow::POLICY_NAMES {
        let policy = || coflow::by_name(name).expect("known policy");
        let (every, every_calls) = run(Box::new(EveryEvent::new(policy())));
        let (triggered, calls) = run(policy());
        assert_eq!(every.len(), 15, "{name}: all flows finish");
        assert_eq!(triggered, every, "{name}: same finishes and bytes per fabric");
        assert!(calls <= every_calls, "{name}: {calls} calls > {every_calls}");
        if name.starts_with("sunflow") {
            assert!(
                every.iter().any(|f| f.3 > 0),
                "{name}: some bytes go over circuits"
            );
            assert!(
                calls < every_calls,
                "{name}: {calls} calls, {every_calls} at every event"
            );
        }
        if name == "varys" || name == "sebf" || name == "aalo" || name == "fifo" || name == "sincronia" {
            // Called at coflow arrivals and completions (and Aalo's queue
            // crossings), not at the departures inside a coflow.
            assert!(
                calls < every_calls,
                "{name}: {calls} calls, {every_calls} at every event"
            );
        }
        if name == "fair" {
            assert_eq!(calls, 0, "fair: its decision never changes");
        }
    }
}

#[test]
fn remaining_bytes_read_together_are_those_read_one_by_one() {
    for name in coflow::POLICY_NAMES {
        // At every call, every flow's remaining bytes read three ways (one
        // by one, together, by id), and by id the flows seen before that
        // have left (gone: no bytes) and an id never seen: the flows read
        // and the readings that differ.
        let counts = Arc::new(Mutex::new((0, 0)));
        let counted = counts.clone();
        let mut seen = std::collections::BTreeSet::new();
        let look = move |view: &NetView, progress: &dyn Progress| {
            let flows: Vec<_> = view.flows.iter().map(|(_, f)| f).collect();
            let mut together = Vec::new();
            progress.remaining_bytes_of(&flows, &mut together);
            let mut differ = flows
                .iter()
                .zip(&together)
                .filter(|(f, r)| progress.remaining_bytes(f).to_bits() != r.to_bits())
                .count();
            seen.extend(flows.iter().map(|f| f.spec.id));
            let gone: Vec<FlowId> = seen
                .iter()
                .copied()
                .filter(|id| view.flows.get(id).is_none())
                .collect();
            let ids: Vec<FlowId> = flows
                .iter()
                .map(|f| f.spec.id)
                .chain(gone)
                .chain([FlowId(u64::MAX)])
                .collect();
            let mut by_id = Vec::new();
            progress.remaining_bytes_by_id(view, &ids, &mut by_id);
            let (active, rest) = by_id.split_at(flows.len());
            differ += active
                .iter()
                .zip(&together)
                .filter(|(b, r)| b.map(f64::to_bits) != Some(r.to_bits()))
                .count();
            differ += rest.iter().filter(|b| b.is_some()).count();
            if let Ok(mut n) = counted.lock() {
                n.0 += ids.len();
                n.1 += differ;
            }
        };
        let policy = coflow::by_name(name).expect("known policy");
        let (done, _) = run(Box::new(EveryEvent(policy, look)));
        assert_eq!(done.len(), 15, "{name}: all flows finish");
        let (read, differ) = *counts.lock().expect("counts");
        assert!(read > 100, "{name}: {read} flows read");
        assert_eq!(differ, 0, "{name}: {differ} of {read} readings differ");
    }
}

/// Records, at each call, what [`Progress`] says of flow 1 and coflow 1.
struct Recorder(Arc<Mutex<Vec<(Nanos, f64, f64)>>>);

impl CoflowPolicy for Recorder {
    fn name(&self) -> &'static str {
        "recorder"
    }
    fn decide(&mut self, now: Nanos, view: &NetView, progress: &dyn Progress) -> Decision {
        let remaining = view.flows.get(&FlowId(1)).map(|f| progress.remaining_bytes(f));
        let sent = view
            .coflows
            .get(&CoflowId(1))
            .map(|c| progress.sent_bytes(CoflowId(1), c));
        if let (Some(r), Some(s)) = (remaining, sent) {
            if let Ok(mut log) = self.0.lock() {
                log.push((now, r, s));
            }
        }
        Decision::default()
    }
}

#[test]
fn progress_read_on_demand_is_what_the_flows_sent() {
    // Rack 0 → rack 1 over EPS (1 MB/s uplink). Flow 1 (1 MB) alone for
    // 100 ms: 100,000 B sent. Flow 2 (coflow 1, 50 kB) joins: 0.5 MB/s
    // each, done at 200 ms; flow 1 has then sent 150,000 B, coflow 1
    // 200,000 B (flow 2's 50,000 B count once it is done).
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut net = FluidNetwork::on_fabric(fabric(), Box::new(Recorder(log.clone())));
    let ms = Nanos::from_millis;
    net.add_flows(ms(0), &[flow(1, 1, (0, 0), (1, 0), 1_000_000)]);
    net.add_flows(ms(100), &[flow(2, 1, (0, 1), (1, 1), 50_000)]);
    net.advance_to(ms(250));
    let log = log.lock().map(|l| l.clone()).unwrap_or_default();
    let close = |a: f64, b: f64| (a - b).abs() < 1e-3;
    let at = |t: Nanos| log.iter().find(|e| e.0 == t).copied();
    let (_, r0, s0) = at(ms(0)).expect("called at 0");
    assert!(close(r0, 1_000_000.0) && close(s0, 0.0), "{log:?}");
    let (_, r1, s1) = at(ms(100)).expect("called at 100 ms");
    assert!(close(r1, 900_000.0) && close(s1, 100_000.0), "{log:?}");
    let (_, r2, s2) = at(ms(200)).expect("called at 200 ms");
    assert!(close(r2, 850_000.0) && close(s2, 200_000.0), "{log:?}");
    // The view's own progress fields are brought up to date on request only.
    assert_eq!(net.view().flows[&FlowId(1)].remaining_bytes, 1_000_000.0);
    net.sync_progress();
    let f = &net.view().flows[&FlowId(1)];
    assert!(close(f.remaining_bytes, 800_000.0) && close(f.sent_eps_bytes, 200_000.0));
}

/// Records when it is called; called only when a coflow completes.
struct CoflowDoneLog(Arc<Mutex<Vec<Nanos>>>);

impl CoflowPolicy for CoflowDoneLog {
    fn name(&self) -> &'static str {
        "coflow-done-log"
    }
    fn triggers(&self) -> Triggers {
        Triggers {
            arrivals: coflow::Arrivals::Never,
            departures: coflow::Departures::CoflowDone,
            circuit_up: false,
        }
    }
    fn decide(&mut self, now: Nanos, _view: &NetView, _progress: &dyn Progress) -> Decision {
        if let Ok(mut log) = self.0.lock() {
            log.push(now);
        }
        Decision::default()
    }
}

#[test]
fn a_coflow_done_policy_is_called_when_a_coflows_last_flow_leaves_only() {
    // Coflow 1: flows 1 (100 kB) and 2 (300 kB) from rack 0 to rack 1 share
    // its 1 MB/s uplink: flow 1 leaves at 200 ms (coflow 1 goes on), flow 2
    // at 400 ms (coflow 1 done). Coflow 2: flow 3 (50 kB), rack 2 to rack 3,
    // done at 50 ms. Coflow 1 resumes with flow 4 (100 kB) at 500 ms, done
    // at 600 ms. Departures that leave their coflow active call nothing.
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut net = FluidNetwork::on_fabric(fabric(), Box::new(CoflowDoneLog(log.clone())));
    let ms = Nanos::from_millis;
    net.add_flows(
        ms(0),
        &[
            flow(1, 1, (0, 0), (1, 0), 100_000),
            flow(2, 1, (0, 1), (1, 1), 300_000),
            flow(3, 2, (2, 0), (3, 0), 50_000),
        ],
    );
    let mut events = net.advance_to(ms(500));
    net.add_flows(ms(500), &[flow(4, 1, (0, 0), (1, 0), 100_000)]);
    while let Some(t) = net.next_event_at() {
        events.extend(net.advance_to(t));
    }
    let finished: Vec<(u64, Nanos)> = done(events).into_iter().map(|f| (f.0, f.1)).collect();
    assert_eq!(
        finished,
        vec![(3, ms(50)), (1, ms(200)), (2, ms(400)), (4, ms(600))]
    );
    let calls = log.lock().map(|l| l.clone()).unwrap_or_default();
    assert_eq!(calls, vec![ms(50), ms(400), ms(600)]);
    assert_eq!(net.stats().policy_calls, 3);
}

/// Holds flow 2 back at its first call and lets every flow go at later
/// calls; called at arrivals and when a coflow completes.
struct HoldsBackOnce(u64);

impl CoflowPolicy for HoldsBackOnce {
    fn name(&self) -> &'static str {
        "holds-back-once"
    }
    fn uses_ocs(&self) -> bool {
        false
    }
    fn triggers(&self) -> Triggers {
        Triggers {
            arrivals: coflow::Arrivals::Every,
            departures: coflow::Departures::CoflowDone,
            circuit_up: false,
        }
    }
    fn decide(&mut self, _now: Nanos, view: &NetView, _progress: &dyn Progress) -> Decision {
        self.0 += 1;
        let first = self.0 == 1;
        let plans = view
            .flows
            .keys()
            .map(|&id| match id {
                FlowId(2) if first => (id, FlowPlan::WAIT),
                _ => (id, FlowPlan::EPS),
            })
            .collect();
        Decision {
            plans,
            ..Decision::default()
        }
    }
}

#[test]
fn a_policy_that_leaves_every_flow_waiting_is_asked_again() {
    // Coflow 1: flows 1 and 2, 100 kB each, rack 0 -> 1 and rack 2 -> 3,
    // each alone on a 1 MB/s uplink. The call at their arrival holds flow
    // 2 back. Flow 1 leaves at 100 ms; its coflow goes on, so no trigger
    // calls the policy, and nothing left would ever move. The network
    // asks again at once, and flow 2 takes 100 ms: done at 200 ms, where
    // the coflow's completion calls the policy a third time.
    let mut net = FluidNetwork::on_fabric(fabric(), Box::new(HoldsBackOnce(0)));
    let ms = Nanos::from_millis;
    net.add_flows(
        ms(0),
        &[
            flow(1, 1, (0, 0), (1, 0), 100_000),
            flow(2, 1, (2, 0), (3, 0), 100_000),
        ],
    );
    let mut events = Vec::new();
    while let Some(t) = net.next_event_at() {
        events.extend(net.advance_to(t));
    }
    let finished: Vec<(u64, Nanos)> = done(events).into_iter().map(|f| (f.0, f.1)).collect();
    assert_eq!(finished, vec![(1, ms(100)), (2, ms(200))]);
    assert_eq!(net.stats().policy_calls, 3);
    // Plans: both flows at the first call, flow 2 at the second, none at
    // the third. Moves: flow 2 to waiting, then back to EPS; flow 1's EPS
    // plan is the path it joined on, and moves nothing.
    assert_eq!(net.stats().flow_plans, 3);
    assert_eq!(net.stats().flows_replanned, 2);
}

/// Non-preemptive Sunflow with its kept demand, checked at every call
/// against the same policy (same reservations) that reads every elephant again.
struct CheckedSunflow {
    kept: coflow::sunflow_np::SunflowNp,
    calls: Arc<Mutex<u64>>,
    every_event: bool,
}

impl CoflowPolicy for CheckedSunflow {
    fn name(&self) -> &'static str {
        "checked-sunflow"
    }
    fn uses_ocs(&self) -> bool {
        true
    }
    fn triggers(&self) -> Triggers {
        if self.every_event {
            Triggers::EVERY_EVENT
        } else {
            self.kept.triggers()
        }
    }
    fn decide(&mut self, now: Nanos, view: &NetView, progress: &dyn Progress) -> Decision {
        let mut fresh = self.kept.clone();
        fresh.forget_demand();
        let kept = self.kept.decide(now, view, progress);
        let read_again = fresh.decide(now, view, progress);
        assert_eq!(kept, read_again, "at {now}");
        assert_eq!(self.kept.reservations(), fresh.reservations(), "at {now}");
        assert_eq!(self.kept.pair_plans(), fresh.pair_plans(), "at {now}");
        if let Ok(mut calls) = self.calls.lock() {
            *calls += 1;
        }
        kept
    }
}

#[test]
fn sunflow_np_keeping_demand_between_calls_decides_as_reading_every_elephant_again() {
    for every_event in [false, true] {
        let calls = Arc::new(Mutex::new(0));
        let policy = CheckedSunflow {
            kept: coflow::sunflow_np::SunflowNp::default(),
            calls: calls.clone(),
            every_event,
        };
        let (finished, _) = run(Box::new(policy));
        let (plain, _) = run(coflow::by_name("sunflow-np").expect("known policy"));
        assert_eq!(finished, plain, "every event: {every_event}");
        assert!(finished.iter().any(|f| f.3 > 0), "some bytes go over circuits");
        let calls = calls.lock().map(|c| *c).unwrap_or(0);
        assert!(calls > 5, "{calls} calls");
    }
}

#[test]
fn a_policy_never_called_gets_a_view_on_request_and_duplicates_are_refused() {
    // Fair sharing is never called: the network keeps no view for it as it
    // runs (one is built on request), yet still knows its flows by id and
    // reports each one's coflow and start.
    let ms = Nanos::from_millis;
    let mut net = FluidNetwork::on_fabric(fabric(), coflow::by_name("fair").expect("fair"));
    net.add_flows(ms(0), &[flow(1, 7, (0, 0), (1, 0), 100_000)]);
    net.add_flows(ms(10), &[flow(2, 8, (0, 1), (0, 0), 50_000)]);
    assert!(net.view().flows.is_empty() && net.view().coflows.is_empty());
    // Asked for, the view is built from the active flows.
    net.sync_progress();
    let view = net.view();
    let ids: Vec<u64> = view.flows.keys().map(|id| id.0).collect();
    assert_eq!(ids, [1, 2]);
    assert_eq!(view.flows[&FlowId(2)].started, ms(10));
    assert!(view.flows[&FlowId(1)].rate_bytes_per_s > 0.0);
    assert_eq!(
        (
            view.coflows[&CoflowId(7)].arrival,
            view.coflows[&CoflowId(8)].known_bytes
        ),
        (ms(0), Bytes(50_000))
    );
    assert_eq!(
        net.try_add_flows(ms(20), &[flow(1, 9, (2, 0), (3, 0), 1)]),
        Err(NetError::DuplicateFlow(FlowId(1)))
    );
    let twice = flow(3, 9, (2, 0), (3, 0), 1);
    assert_eq!(
        net.try_add_flows(ms(20), &[twice.clone(), twice]),
        Err(NetError::DuplicateFlow(FlowId(3)))
    );
    let mut finished: Vec<(u64, u64, Nanos)> = net
        .advance_to(ms(10_000))
        .into_iter()
        .filter_map(|e| match e {
            NetEvent::FlowDone {
                flow,
                coflow,
                started,
                ..
            } => Some((flow.0, coflow.0, started)),
            NetEvent::Circuit { .. } => None,
        })
        .collect();
    finished.sort();
    assert_eq!(finished, [(1, 7, ms(0)), (2, 8, ms(10))]);
    assert_eq!(
        net.stats().cross_rack_bytes,
        Bytes(100_000),
        "flow 2 stays in rack 0"
    );
    // Gone, its id may come back.
    assert_eq!(
        net.try_add_flows(ms(10_001), &[flow(1, 9, (2, 0), (3, 0), 1)]),
        Ok(())
    );
}
