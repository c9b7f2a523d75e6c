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
use ocslab_emulator::{Bytes, Nanos, Topology};
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

const POLICIES: [&str; 9] = [
    "shufflewatcher",
    "shufflewatcher-delay",
    "sw-nass",
    "sw-nass-sarp",
    "nas",
    "nas-mts",
    "nas-mts-ca",
    "nas-wo-tt",
    "dawn",
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
    for p in ["dawn", "shufflewatcher", "fair"] {
        let (done, _) = run(p, jobs.clone(), &topo);
        assert_eq!(done, jobs.len(), "{p} left jobs unfinished");
    }
}
