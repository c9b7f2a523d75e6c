//! Hand-made event sequences through [`EmuNetwork`], reading the actions back.

use super::*;
use ocslab_core::coflow::by_name;
use std::path::Path as FsPath;

fn tiny() -> Topology {
    Topology::parse(
        include_str!("../../../../topologies/tiny.toml"),
        FsPath::new("tiny.toml"),
    )
    .unwrap()
}

fn addrs(t: &Topology) -> BTreeMap<HostId, SocketAddr> {
    t.host_ids()
        .map(|h| {
            (
                h,
                SocketAddr::from(([198, 18, h.rack as u8, 10 + h.host as u8], 7100)),
            )
        })
        .collect()
}

fn net(policy: &str) -> EmuNetwork {
    let t = tiny();
    EmuNetwork::new(&t, by_name(policy).unwrap(), addrs(&t), Transport::Tcp)
}

fn flow(id: u64, coflow: u64, src: HostId, dst: HostId, bytes: u64) -> (FlowSpec, PartitionId) {
    let spec = FlowSpec {
        id: FlowId(id),
        coflow: CoflowId(coflow),
        src,
        dst,
        bytes: ocslab_emulator::Bytes(bytes),
        weight: 1,
    };
    let key = PartitionId {
        job: wire::JobId(coflow),
        map: id as u32,
        reduce: 0,
        seed: 1,
    };
    (spec, key)
}

fn starts(actions: &[Action]) -> Vec<(HostId, wire::FlowSpec)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Agent {
                host,
                cmd: Command::StartFlow(s),
            } => Some((*host, s.clone())),
            _ => None,
        })
        .collect()
}

const A: HostId = HostId::new(0, 0);
const B: HostId = HostId::new(1, 0);

#[test]
fn under_fair_a_flow_starts_at_once_on_eps_unpaced() {
    let mut n = net("fair");
    let acts = n.add_flows(Nanos(5), vec![flow(1, 1, A, B, 5_000_000)]);
    let s = starts(&acts);
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].0, A, "the sender drives the flow");
    assert_eq!(
        (s[0].1.path, s[0].1.held, s[0].1.rate, s[0].1.dst),
        (wire::Path::Eps, false, None, B)
    );
    assert!(!acts.iter().any(|a| matches!(a, Action::Matching(_))));
    let (fin, _) = n.flow_done(Nanos(100), FlowId(1)).unwrap();
    assert_eq!((fin.requested, fin.marked), (Nanos(5), Some(wire::Path::Eps)));
    assert_eq!(n.in_flight(), 0);
    assert!(
        n.flow_done(Nanos(101), FlowId(1)).is_none(),
        "a flow finishes once"
    );
}

#[test]
fn under_sunflow_an_elephant_waits_held_for_its_circuit_then_is_released() {
    let mut n = net("sunflow");
    // tiny: elephant threshold 1 MB after scale.
    let acts = n.add_flows(Nanos(0), vec![flow(1, 1, A, B, 2_000_000)]);
    let s = starts(&acts);
    assert_eq!(s.len(), 1);
    assert_eq!((s[0].1.path, s[0].1.held), (wire::Path::Ocs, true), "{acts:?}");
    let matching: Vec<&Vec<Circuit>> = acts
        .iter()
        .filter_map(|a| match a {
            Action::Matching(m) => Some(m),
            _ => None,
        })
        .collect();
    let c = Circuit {
        src_rack: 0,
        dst_rack: 1,
        port: 0,
    };
    assert_eq!(matching, vec![&vec![c]]);
    // Until the kernel says the circuit is up, it stays held.
    let acts = n.wake(Nanos(10));
    assert!(!acts.iter().any(|a| matches!(
        a,
        Action::Agent {
            cmd: Command::ReleaseFlow { .. },
            ..
        }
    )));
    let acts = n.circuit_event(Nanos(1_000_000), c, true);
    assert_eq!(
        acts,
        vec![Action::Agent {
            host: A,
            cmd: Command::ReleaseFlow {
                flow: wire::FlowId(1)
            }
        }]
    );
}

#[test]
fn a_mouse_under_sunflow_goes_over_eps_and_needs_no_circuit() {
    let mut n = net("sunflow");
    let acts = n.add_flows(Nanos(0), vec![flow(1, 1, A, B, 1000)]);
    let s = starts(&acts);
    assert_eq!((s[0].1.path, s[0].1.held), (wire::Path::Eps, false));
    assert!(!acts.iter().any(|a| matches!(a, Action::Matching(_))));
}

#[test]
fn varys_paces_the_first_coflow_and_starts_the_next_when_it_leaves() {
    let mut n = net("varys");
    let acts = n.add_flows(
        Nanos(0),
        vec![
            flow(1, 1, A, B, 1_000_000),
            flow(2, 2, HostId::new(0, 1), HostId::new(1, 1), 4_000_000),
        ],
    );
    // Both cross the 50 Mbit/s uplinks of tiny: SEBF serves the smaller
    // coflow at the full rate and leaves the other unannounced (waiting).
    let s = starts(&acts);
    assert_eq!(s.len(), 1, "{acts:?}");
    assert_eq!(
        (s[0].1.flow, s[0].1.rate),
        (wire::FlowId(1), Some(Bps(50_000_000)))
    );
    let (_, acts) = n.flow_done(Nanos(1), FlowId(1)).unwrap();
    let s = starts(&acts);
    assert_eq!(s.len(), 1, "{acts:?}");
    assert_eq!(
        (s[0].1.flow, s[0].1.rate),
        (wire::FlowId(2), Some(Bps(50_000_000)))
    );
}

#[test]
fn a_dead_host_takes_its_flows_out_of_the_network() {
    let mut n = net("fair");
    n.add_flows(
        Nanos(0),
        vec![
            flow(1, 1, A, B, 10),
            flow(2, 1, B, A, 10),
            flow(3, 1, HostId::new(0, 1), A, 10),
        ],
    );
    let (lost, _) = n.host_dead(Nanos(1), B);
    assert_eq!(lost.iter().map(|f| f.id.0).collect::<Vec<_>>(), vec![1, 2]);
    assert_eq!(n.in_flight(), 1);
    // A new flow to the dead host is never announced to its sender.
    let acts = n.add_flows(Nanos(2), vec![flow(4, 2, A, B, 10)]);
    assert!(starts(&acts).is_empty());
}

#[test]
fn progress_reports_become_remaining_bytes_and_rates() {
    let mut n = net("fair");
    n.add_flows(Nanos(0), vec![flow(1, 1, A, B, 1_000_000)]);
    let p = |bytes: u64| wire::FlowProgress {
        flow: wire::FlowId(1),
        role: wire::FlowRole::Sender,
        state: wire::FlowState::Active,
        bytes: ocslab_emulator::Bytes(bytes),
    };
    n.progress(Nanos::from_millis(100), &[p(100_000)]);
    n.progress(Nanos::from_millis(200), &[p(300_000)]);
    let f = &n.view().flows[&FlowId(1)];
    assert_eq!(f.remaining_bytes, 700_000.0);
    assert!(
        (f.rate_bytes_per_s - 2_000_000.0).abs() < 1e-6,
        "{}",
        f.rate_bytes_per_s
    );
    assert_eq!(n.view().coflows[&CoflowId(1)].sent_bytes, 300_000.0);
}

#[test]
fn batched_instants_cost_one_decision() {
    let mut n = net("fair");
    n.set_batching(true);
    assert!(n.add_flows(Nanos(0), vec![flow(1, 1, A, B, 10)]).is_empty());
    assert!(n.add_flows(Nanos(0), vec![flow(2, 1, B, A, 10)]).is_empty());
    let calls = n.stats().policy_calls;
    let acts = n.flush(Nanos(1));
    assert_eq!(starts(&acts).len(), 2);
    assert_eq!(n.stats().policy_calls, calls + 1);
    assert!(n.flush(Nanos(2)).is_empty(), "nothing pending");
}

#[test]
fn under_a_schedule_flows_between_racks_start_marked_and_released_and_no_circuit_is_asked() {
    let text = include_str!("../../../../topologies/tiny.toml").replace(
        "[addresses]",
        "[ocs.schedule]\nslot = \"1ms\"\ndelay = \"10us\"\n[[ocs.schedule.slots]]\ncircuits = [\"0:1\", \"1:0\"]\n[addresses]",
    );
    let t = Topology::parse(&text, FsPath::new("tiny-rotor.toml")).unwrap();
    // Schedules run on the eBPF datapath.
    let mut n = EmuNetwork::new(&t, by_name("sunflow").unwrap(), addrs(&t), Transport::Tcp)
        .on_datapath(Datapath::Ebpf);
    let local = HostId::new(0, 1);
    // An elephant between racks (Sunflow asks for a circuit) and one inside rack 0.
    let acts = n.add_flows(
        Nanos(5),
        vec![flow(1, 1, A, B, 50_000_000), flow(2, 1, A, local, 50_000_000)],
    );
    assert!(!acts.iter().any(|a| matches!(a, Action::Matching(_))), "{acts:?}");
    let s = starts(&acts);
    let path = |id: u64| {
        s.iter()
            .find(|(_, f)| f.flow == wire::FlowId(id))
            .map(|(_, f)| (f.path, f.held, f.wavelength))
    };
    assert_eq!(
        path(1),
        Some((wire::Path::Ocs, false, None)),
        "the datapath picks circuit or EPS, any of the pair's circuits"
    );
    assert_eq!(path(2), Some((wire::Path::Eps, false, None)));
    assert_eq!(n.stats().matchings, 0);
}

#[test]
fn a_restarted_flow_is_started_afresh_and_an_unknown_one_is_not() {
    let mut n = net("fair");
    let first = starts(&n.add_flows(Nanos(5), vec![flow(1, 1, A, B, 5_000_000)]));
    n.progress(
        Nanos(50),
        &[wire::FlowProgress {
            flow: wire::FlowId(1),
            role: wire::FlowRole::Sender,
            state: wire::FlowState::Active,
            bytes: ocslab_emulator::Bytes(2_000_000),
        }],
    );
    assert_eq!(n.view().flows[&FlowId(1)].sent_eps_bytes, 2_000_000.0);
    assert_eq!(n.view().coflows[&CoflowId(1)].sent_bytes, 2_000_000.0);
    let again = starts(&n.restart(Nanos(60), FlowId(1)).expect("the flow is known"));
    assert_eq!(again, first, "the same flow, from its first byte");
    let f = &n.view().flows[&FlowId(1)];
    assert_eq!((f.sent_eps_bytes, f.remaining_bytes), (0.0, 5_000_000.0));
    assert_eq!(n.view().coflows[&CoflowId(1)].sent_bytes, 0.0);
    assert_eq!(f.started, Nanos(5), "it still arrived when it first did");
    assert!(n.restart(Nanos(61), FlowId(2)).is_none());
    n.flow_done(Nanos(100), FlowId(1)).unwrap();
    assert!(
        n.restart(Nanos(101), FlowId(1)).is_none(),
        "a finished flow is not sent again"
    );
}

/// Sets up circuits 0→1 on wavelengths 0 and 1 and plans flow `k` on
/// wavelength `k - 1`.
struct TwoWavelengths;

impl CoflowPolicy for TwoWavelengths {
    fn name(&self) -> &'static str {
        "two-wavelengths"
    }
    fn decide(
        &mut self,
        _now: Nanos,
        view: &NetView,
        _progress: &dyn ocslab_core::coflow::Progress,
    ) -> Decision {
        let setup = |port| ocslab_core::coflow::CircuitSetup {
            src_rack: 0,
            dst_rack: 1,
            port,
        };
        Decision {
            plans: view
                .flows
                .keys()
                .map(|&id| {
                    let plan = FlowPlan {
                        path: Path::Ocs {
                            port: (id.0 - 1) as u32,
                        },
                        cap: None,
                    };
                    (id, plan)
                })
                .collect(),
            circuits: vec![setup(0), setup(1)],
            ..Decision::default()
        }
    }
}

/// On the eBPF datapath a rack pair keeps both circuits the policy set up,
/// and each flow's mark names the circuit it was planned on; tc-mirred
/// routes one circuit per pair (the later replaces the earlier) and marks
/// name none.
#[test]
fn on_ebpf_each_flow_is_marked_for_the_wavelength_it_was_planned_on() {
    let mut t = tiny();
    t.ocs_ports_per_rack = 2;
    let flows = || vec![flow(1, 1, A, B, 2_000_000), flow(2, 1, A, B, 2_000_000)];
    let matching = |acts: &[Action]| -> Vec<Circuit> {
        acts.iter()
            .find_map(|a| match a {
                Action::Matching(m) => Some(m.clone()),
                _ => None,
            })
            .expect("a matching")
    };
    let c = |port| Circuit {
        src_rack: 0,
        dst_rack: 1,
        port,
    };

    let mut n =
        EmuNetwork::new(&t, Box::new(TwoWavelengths), addrs(&t), Transport::Tcp).on_datapath(Datapath::Ebpf);
    let acts = n.add_flows(Nanos(0), flows());
    assert_eq!(matching(&acts), vec![c(0), c(1)]);
    let marks: Vec<(wire::Path, Option<u32>, bool, u8)> = starts(&acts)
        .iter()
        .map(|(_, s)| (s.path, s.wavelength, s.held, s.tos()))
        .collect();
    assert_eq!(
        marks,
        vec![
            (wire::Path::Ocs, Some(0), true, 0x80),
            (wire::Path::Ocs, Some(1), true, 0x84)
        ]
    );
    // Each is released when its own circuit comes up.
    let released = |acts: &[Action]| -> Vec<u64> {
        acts.iter()
            .filter_map(|a| match a {
                Action::Agent {
                    cmd: Command::ReleaseFlow { flow },
                    ..
                } => Some(flow.0),
                _ => None,
            })
            .collect()
    };
    assert_eq!(released(&n.circuit_event(Nanos(1_000_000), c(1), true)), vec![2]);
    assert_eq!(released(&n.circuit_event(Nanos(1_000_001), c(0), true)), vec![1]);

    let mut n = EmuNetwork::new(&t, Box::new(TwoWavelengths), addrs(&t), Transport::Tcp);
    let acts = n.add_flows(Nanos(0), flows());
    assert_eq!(
        matching(&acts),
        vec![c(1)],
        "tc-mirred: one circuit per rack pair"
    );
    assert!(starts(&acts)
        .iter()
        .all(|(_, s)| s.wavelength.is_none() && s.tos() == 0x08));
}

#[test]
fn flows_that_meet_are_told_different_flow_queues_and_a_finished_flow_frees_its_own() {
    let t = tiny();
    let mut n = EmuNetwork::new(&t, by_name("fair").unwrap(), addrs(&t), Transport::Tcp).with_flow_queues(4);
    let into = HostId::new(0, 1);
    let senders = [A, B, HostId::new(1, 1), A];
    let flows = (1..=4)
        .zip(senders)
        .map(|(id, src)| flow(id, 1, src, into, 1_000_000))
        .collect();
    let acts = n.add_flows(Nanos(5), flows);
    let queue = |s: &wire::FlowSpec| s.queue.expect("a queue").index;
    let q: Vec<u16> = starts(&acts).iter().map(|(_, s)| queue(s)).collect();
    assert_eq!(q, [0, 1, 2, 3], "four flows into one host, four queues");
    assert!(starts(&acts).iter().all(|(_, s)| s.queue.unwrap().count == 4));
    n.flow_done(Nanos(50), FlowId(2));
    let acts = n.add_flows(Nanos(60), vec![flow(5, 2, B, into, 1_000_000)]);
    let q: Vec<u16> = starts(&acts).iter().map(|(_, s)| queue(s)).collect();
    assert_eq!(q, [1], "the only queue free at the receiver's link");
    assert_eq!(n.stats().shared_queues, 0);
    n.add_flows(Nanos(70), vec![flow(6, 2, A, into, 1_000_000)]);
    assert_eq!(
        n.stats().shared_queues,
        1,
        "a fifth flow into the host must share"
    );
    // Without flow queues, nothing is said.
    let acts = net("fair").add_flows(Nanos(5), vec![flow(1, 1, A, into, 1_000_000)]);
    assert_eq!(starts(&acts)[0].1.queue, None);
}
