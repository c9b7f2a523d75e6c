//! The three policies under the real engine, driven by a minimal
//! discrete-event loop (every flow moves at a fixed 50 MB/s; a rack's
//! cross-rack utilization is its cross-rack flows in flight over 4, sampled
//! after every event) — enough to exercise both saturated and calm
//! branches. The simulation driver proper is the engine's.

use crate::engine::{Command, Engine, EngineConfig, Event, Link, LinkLoad};
use crate::model::coflow::FlowSpec;
use crate::model::job::Job;
use crate::policy::by_name;
use crate::workload::{dag, shufflewatcher_mix as mix};
use ocslab_core::{Bytes, Nanos, Topology};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::path::Path;

fn tiny() -> Topology {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../topologies/tiny.toml");
    Topology::load(&path).expect("tiny topology")
}

/// Runs `jobs` to completion under `policy`; returns (finished jobs, cross-rack bytes).
fn run(policy: &str, jobs: Vec<Job>, topo: &Topology) -> (usize, u64) {
    let total = jobs.len();
    let p = by_name(policy, None).expect("registered");
    let mut engine = Engine::new(topo, jobs, p, EngineConfig::default()).expect("engine");
    let mut heap: BinaryHeap<Reverse<(Nanos, u64, usize)>> = BinaryHeap::new();
    let mut pending: BTreeMap<usize, Event> = BTreeMap::new();
    let mut flows: BTreeMap<u64, FlowSpec> = BTreeMap::new();
    let mut seq = 0u64;
    let mut cross = 0u64;
    let mut now = Nanos(0);
    let mut cmds = engine.handle(now, Event::Wakeup);
    for _ in 0..2_000_000 {
        for c in cmds.drain(..) {
            match c {
                Command::StartFlows(fs) => {
                    for f in fs {
                        let at = now + Nanos::from_secs_f64(f.bytes.0 as f64 / 50e6);
                        seq += 1;
                        pending.insert(
                            seq as usize,
                            Event::FlowFinished {
                                flow: f.id,
                                eps_bytes: f.bytes,
                                ocs_bytes: Bytes(0),
                            },
                        );
                        heap.push(Reverse((at, seq, seq as usize)));
                        if f.src.rack != f.dst.rack {
                            cross += f.bytes.0;
                        }
                        flows.insert(f.id.0, f);
                    }
                }
                Command::Compute {
                    attempt,
                    host,
                    duration,
                } => {
                    seq += 1;
                    pending.insert(
                        seq as usize,
                        Event::TaskFinished {
                            attempt,
                            host,
                            output: None,
                        },
                    );
                    heap.push(Reverse((now + duration, seq, seq as usize)));
                }
                Command::StartTask { .. } | Command::KillTask { .. } => {}
                Command::Retime { .. } => unreachable!("no host changes speed in this test"),
            }
        }
        if engine.is_done() {
            break;
        }
        let next_event = heap.peek().map(|Reverse((t, _, _))| *t);
        let wake = engine.next_wakeup();
        let (t, ev) = match (next_event, wake) {
            (Some(w_t), Some(w)) if w < w_t => (w, Event::Wakeup),
            (None, Some(w)) => (w, Event::Wakeup),
            (None, None) => break,
            _ => {
                let Some(Reverse((t, _, k))) = heap.pop() else {
                    break;
                };
                (t, pending.remove(&k).expect("queued"))
            }
        };
        now = t;
        if let Event::FlowFinished { flow, .. } = &ev {
            flows.remove(&flow.0);
        }
        cmds = engine.handle(now, ev);
        let mut out = vec![0u32; topo.racks as usize];
        for f in flows.values().filter(|f| f.src.rack != f.dst.rack) {
            out[f.src.rack as usize] += 1;
        }
        let loads = out
            .iter()
            .enumerate()
            .map(|(r, n)| LinkLoad {
                link: Link::RackUp(r as u32),
                utilization: (f64::from(*n) / 4.0).min(1.0),
            })
            .collect();
        cmds.extend(engine.handle(now, Event::LoadSample(loads)));
    }
    let done = engine
        .records()
        .jobs
        .values()
        .filter(|r| r.finished.is_some())
        .count();
    assert!(done <= total);
    (done, cross)
}

const POLICIES: [&str; 10] = [
    "shufflewatcher",
    "shufflewatcher-delay",
    "sw-nass",
    "sw-nass-sarp",
    "nas",
    "nas-mts",
    "nas-mts-ca",
    "nas-wo-tt",
    "dawn",
    "dawn-strict",
];

#[test]
fn every_network_aware_policy_finishes_a_mixed_workload() {
    let topo = tiny();
    let cfg = mix::MixConfig {
        jobs: 30,
        users: 4,
        size_scale: 0.002,
        seed: 7,
        ..mix::MixConfig::default()
    };
    let jobs = mix::to_jobs(
        &mix::generate(&cfg),
        &topo,
        Bytes(16_000_000),
        &mix::TaskRates::default(),
        7,
    );
    for p in POLICIES {
        let (done, _) = run(p, jobs.clone(), &topo);
        assert_eq!(done, jobs.len(), "{p} left jobs unfinished");
    }
}

#[test]
fn every_network_aware_policy_finishes_a_dag_workload() {
    let topo = tiny();
    let cfg = dag::QueryConfig {
        queries: 6,
        database: Bytes(2_000_000_000),
        ..dag::QueryConfig::default()
    };
    let jobs = dag::to_jobs(
        &dag::tpch_like(&cfg),
        &topo,
        Bytes(64_000_000),
        &mix::TaskRates::default(),
        3,
    );
    for p in ["dawn", "dawn-strict", "shufflewatcher", "fair"] {
        let (done, _) = run(p, jobs.clone(), &topo);
        assert_eq!(done, jobs.len(), "{p} left jobs unfinished");
    }
}

/// Fifo, recording the expected output Dawn's view gives job 0 at each offer.
struct ExpectedOutputSpy {
    inner: Box<dyn crate::policy::TaskPolicy>,
    views: crate::policy::netaware::engine_view::ViewBuilder,
    seen: std::rc::Rc<std::cell::RefCell<Vec<u64>>>,
}

impl crate::policy::TaskPolicy for ExpectedOutputSpy {
    fn name(&self) -> &str {
        "expected-output-spy"
    }
    fn on_free_slot(
        &mut self,
        now: Nanos,
        view: &crate::engine::ClusterView<'_>,
        host: ocslab_core::HostId,
    ) -> Option<crate::policy::TaskChoice> {
        let nv = self.views.build(now, view, host, true);
        if let Some(j) = nv.jobs.iter().find(|j| j.id.0 == 0) {
            self.seen.borrow_mut().push(j.expected_output.0);
        }
        self.inner.on_free_slot(now, view, host)
    }
}

#[test]
fn dawns_expected_output_is_what_the_children_read_from_the_parent() {
    // j1 reads 200 MB of its own (base input) and 10 MB that j0 wrote: j0's
    // output is the 10 MB block marked written_by j0, not j1's whole input.
    let topo = tiny();
    let h = ocslab_core::HostId::new(0, 0);
    let map = |input: u64, written_by: Option<u64>| crate::model::job::MapTask {
        input: Bytes(input),
        replicas: vec![h],
        duration: Nanos::from_secs_f64(1.0),
        written_by: written_by.map(crate::model::job::JobId),
    };
    let job = |id: u64, parents: Vec<u64>, maps| Job {
        id: crate::model::job::JobId(id),
        name: String::new(),
        user: crate::model::job::UserId(0),
        arrival: Nanos(0),
        recurring: false,
        parents: parents.into_iter().map(crate::model::job::JobId).collect(),
        maps,
        reduces: vec![crate::model::job::ReduceTask {
            duration: Nanos::from_secs_f64(1.0),
        }],
        shuffle: crate::model::job::Shuffle::Ratio(0.1),
    };
    let jobs = vec![
        job(0, vec![], vec![map(100_000_000, None)]),
        job(
            1,
            vec![0],
            vec![
                map(100_000_000, None),
                map(100_000_000, None),
                map(10_000_000, Some(0)),
            ],
        ),
    ];
    let seen = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let spy = ExpectedOutputSpy {
        inner: by_name("fifo", None).expect("fifo"),
        views: crate::policy::netaware::engine_view::ViewBuilder::default(),
        seen: seen.clone(),
    };
    let mut engine = Engine::new(&topo, jobs, Box::new(spy), EngineConfig::default()).expect("engine");
    let _ = engine.handle(Nanos(0), Event::Wakeup);
    let seen = seen.borrow();
    assert!(!seen.is_empty(), "job 0 was offered a slot");
    assert!(seen.iter().all(|&b| b == 10_000_000), "{seen:?}");
}

/// `dawn-strict` declines a slot on a rack no job prefers and waits for a
/// heartbeat. Here the job's input is on rack 1, so its maps run there; its
/// maps emit nothing, so its reduce stage prefers rack 0 (no traffic
/// anywhere, lowest rack). Its last map ends on rack 1, which frees only
/// rack 1's slots, and nothing else is in flight: without the policy's
/// heartbeat wake-up no slot on rack 0 is offered again and the run stalls.
#[test]
fn strict_dawn_reaches_a_rack_no_event_frees() {
    use super::support::{job, simulate, topo, S};
    let t = topo(2, 2, 1);
    let jobs = vec![job(1, 2, 1000, 1, 1000, ocslab_core::HostId::new(1, 0), 0.0)];
    let policy = by_name("dawn-strict", None).expect("registered");
    let out = simulate(&t, jobs, policy, EngineConfig::default(), &[]);
    let rec = &out.records.jobs[&crate::model::job::JobId(1)];
    let finished = rec.finished.expect("the job finished");
    // The map on r1h1 reads its block from r1h0 (100 MB at 1 Gbit/s, 0.8 s)
    // and ends at 1.8 s; the reduce starts a heartbeat (3 s) later, 1 s long.
    assert_eq!(finished, Nanos(5 * S + 800_000_000));

    // The heartbeat is the policy's `heartbeat` parameter; 0 is refused.
    let with = |h: &str| {
        let mut p = toml::Table::new();
        p.insert("heartbeat".into(), toml::Value::String(h.into()));
        by_name("dawn-strict", Some(&p))
    };
    let jobs = vec![job(1, 2, 1000, 1, 1000, ocslab_core::HostId::new(1, 0), 0.0)];
    let out = simulate(&t, jobs, with("1s").expect("1 s"), EngineConfig::default(), &[]);
    let rec = &out.records.jobs[&crate::model::job::JobId(1)];
    assert_eq!(rec.finished, Some(Nanos(3 * S + 800_000_000)));
    let err = with("0s").err().expect("0 s refused").to_string();
    assert!(err.contains("`heartbeat` must be more than 0"), "{err}");
}

/// NAS, checking at every offer that the view its builder refills in
/// place (offer-independent fields kept while a job's version holds) is
/// the view a fresh builder makes.
struct RefilledViewCheck {
    inner: Box<dyn crate::policy::TaskPolicy>,
    kept: crate::policy::netaware::engine_view::ViewBuilder,
    checked: std::rc::Rc<std::cell::Cell<usize>>,
}

impl crate::policy::TaskPolicy for RefilledViewCheck {
    fn name(&self) -> &str {
        "refilled-view-check"
    }
    fn on_free_slot(
        &mut self,
        now: Nanos,
        view: &crate::engine::ClusterView<'_>,
        host: ocslab_core::HostId,
    ) -> Option<crate::policy::TaskChoice> {
        let kept = self.kept.build(now, view, host, true).clone();
        let mut fresh = crate::policy::netaware::engine_view::ViewBuilder::default();
        assert_eq!(
            kept,
            *fresh.build(now, view, host, true),
            "offer at {now} on {host:?}"
        );
        self.checked.set(self.checked.get() + 1);
        self.inner.on_free_slot(now, view, host)
    }
    fn on_job_finished(
        &mut self,
        now: Nanos,
        view: &crate::engine::ClusterView<'_>,
        job: crate::model::job::JobId,
    ) {
        self.kept.forget(job);
        self.inner.on_job_finished(now, view, job);
    }
    fn next_wakeup(&self) -> Option<Nanos> {
        self.inner.next_wakeup()
    }
}

#[test]
fn a_view_refilled_in_place_is_the_view_built_afresh() {
    use super::support::{job, simulate, topo};
    use ocslab_core::HostId;
    let t = topo(3, 3, 2);
    // Jobs of every size at homes on every rack, arriving over 20 s: jobs
    // come and go, so a job changes place in the view; a host dies with
    // map outputs on it and comes back, so maps run again.
    let jobs: Vec<Job> = (0..24u64)
        .map(|i| {
            let home = HostId::new((i % 3) as u32, (i % 9 / 3) as u32);
            let mut j = job(
                i,
                1 + (i % 7) as u32,
                400 + 90 * i,
                (i % 4) as u32,
                300,
                home,
                0.5,
            );
            j.arrival = Nanos::from_millis(800 * i);
            j
        })
        .collect();
    let checked = std::rc::Rc::new(std::cell::Cell::new(0));
    let policy = RefilledViewCheck {
        inner: by_name("nas", None).expect("nas"),
        kept: Default::default(),
        checked: checked.clone(),
    };
    let dies = HostId::new(1, 1);
    let actions = [
        (Nanos::from_millis(6000), crate::perturb::Action::KillAgent(dies)),
        (
            Nanos::from_millis(9000),
            crate::perturb::Action::RestartAgent(dies),
        ),
    ];
    let out = simulate(&t, jobs, Box::new(policy), EngineConfig::default(), &actions);
    assert_eq!(
        out.records.jobs.values().filter(|j| j.finished.is_some()).count(),
        24
    );
    assert!(checked.get() > 100, "{} offers checked", checked.get());
}

/// NAS on a quiet cluster: one job, map A of 100 MB and map B of 300 MB,
/// both on r0h0, 2 racks of 2 hosts with one slot each. TrafficThreshold
/// (eq. 3) is 1 slot × 400 MB / 2 maps = 200 MB, so B (300 MB of predicted
/// output) fits no node, and MTS serves it only after `D^m` = 10 skipped
/// offers. At 0 s r0h0 takes A and the three other hosts skip B (3). A
/// ends at 1 s and the slow-start gate opens the reduce, so every free
/// host is offered, from the one after r0h0: r0h1 takes the reduce (NAS
/// asks for reduces first), and r1h0, r1h1 and r0h0 skip B (6). Then
/// nothing runs that could end: the reduce waits for B. Only NAS's
/// heartbeat offers again, 3 s after the last full round: at 4 s (9) and
/// at 7 s, where r1h0 skips B (10) and r1h1 takes it.
#[test]
fn nas_heartbeats_count_the_skips_a_quiet_cluster_gives_no_event_for() {
    use super::support::{simulate, topo, S};
    use crate::model::job::{JobId, MapTask, ReduceTask, Shuffle, TaskId, UserId};
    use ocslab_core::HostId;
    let home = HostId::new(0, 0);
    let map = |mb: u64| MapTask {
        input: Bytes(mb * 1_000_000),
        replicas: vec![home],
        duration: Nanos(S),
        written_by: None,
    };
    let job = Job {
        id: JobId(1),
        name: "j1".into(),
        user: UserId(1),
        arrival: Nanos::ZERO,
        recurring: false,
        parents: vec![],
        maps: vec![map(100), map(300)],
        reduces: vec![ReduceTask { duration: Nanos(S) }],
        shuffle: Shuffle::Ratio(1.0),
    };
    let p: toml::Table = "max_map_skips = 10\nheartbeat = \"3s\"".parse().expect("params");
    // Where and when map B ran, and whether the job finished.
    let map_b = |config: EngineConfig| {
        let nas = by_name("nas", Some(&p)).expect("nas");
        let out = simulate(&topo(2, 2, 1), vec![job.clone()], nas, config, &[]);
        let b = out
            .records
            .tasks
            .iter()
            .find(|t| t.attempt.task == TaskId::map(JobId(1), 1))
            .map(|t| (t.host, t.started));
        (b, out.records.jobs[&JobId(1)].finished.is_some())
    };
    assert_eq!(
        map_b(EngineConfig::default()),
        (Some((HostId::new(1, 1), Nanos(7 * S))), true)
    );

    // `[engine] heartbeat` overrides the policy's: rounds at 2 s (9) and
    // 3 s (10, and r1h1 takes B).
    let config = EngineConfig {
        heartbeat: Some(Nanos(S)),
        ..EngineConfig::default()
    };
    assert_eq!(map_b(config), (Some((HostId::new(1, 1), Nanos(3 * S))), true));
    let err = by_name("nas", Some(&"heartbeat = \"0s\"".parse().expect("toml")))
        .err()
        .expect("0 s refused")
        .to_string();
    assert!(err.contains("`heartbeat` must be more than 0"), "{err}");
}
