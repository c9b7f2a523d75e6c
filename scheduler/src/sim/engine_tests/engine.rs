//! Engine, policy and simulation-driver tests on hand-made clusters and
//! jobs, with hand-worked expected values.

use crate::engine::*;
use crate::model::job::{Job, JobId};
use crate::model::job::{MapTask, ReduceTask, Shuffle, TaskId, TaskKind, UserId};
use crate::policy::{by_name, TaskChoice};
use crate::sim::{FixedRateNetwork, SimConfig, SimOutcome, Simulation};
use ocslab_core::Topology;
use ocslab_core::{Bps, Bytes, HostId, Nanos};
use std::collections::BTreeMap;

pub(super) const S: u64 = 1_000_000_000;

pub(super) fn topo(racks: u32, hosts: u32, slots: u32) -> Topology {
    Topology::builder("t", racks, hosts)
        .slots_per_host(slots)
        .simulation_only()
        .build()
        .expect("valid topology")
}

/// A job of `maps` maps (100 MB each, replica on `replicas[m]`, `map_s`
/// seconds), `reduces` reduces of `reduce_s` seconds, shuffle = input.
pub(super) fn job(
    id: u64,
    user: u32,
    arrival_s: u64,
    replicas: &[HostId],
    map_s: u64,
    reduces: u32,
    reduce_s: u64,
) -> Job {
    Job {
        id: JobId(id),
        name: format!("job{id}"),
        user: UserId(user),
        arrival: Nanos(arrival_s * S),
        recurring: false,
        parents: vec![],
        maps: replicas
            .iter()
            .map(|h| MapTask {
                input: Bytes(100_000_000),
                replicas: vec![*h],
                duration: Nanos(map_s * S),
                written_by: None,
            })
            .collect(),
        reduces: (0..reduces)
            .map(|_| ReduceTask {
                duration: Nanos(reduce_s * S),
            })
            .collect(),
        shuffle: Shuffle::Ratio(1.0),
    }
}

pub(super) fn engine(t: &Topology, jobs: Vec<Job>, policy: &str, config: EngineConfig) -> Engine {
    Engine::new(t, jobs, by_name(policy, None).expect("policy"), config).expect("engine")
}

pub(super) fn simulate(t: &Topology, jobs: Vec<Job>, policy: &str, config: EngineConfig) -> SimOutcome {
    let net = FixedRateNetwork::new(Bps(1_000_000_000));
    Simulation::new(engine(t, jobs, policy, config), net, SimConfig::default())
        .run(|_, _| {})
        .expect("simulation finishes")
}

pub(super) fn starts(cmds: &[Command]) -> Vec<(TaskId, HostId)> {
    cmds.iter()
        .filter_map(|c| match c {
            Command::StartTask { attempt, host } => Some((attempt.task, *host)),
            _ => None,
        })
        .collect()
}

pub(super) fn computes(cmds: &[Command]) -> Vec<(AttemptId, HostId, Nanos)> {
    cmds.iter()
        .filter_map(|c| match c {
            Command::Compute {
                attempt,
                host,
                duration,
            } => Some((*attempt, *host, *duration)),
            _ => None,
        })
        .collect()
}

pub(super) fn finished(attempt: AttemptId, host: HostId) -> Event {
    Event::TaskFinished {
        attempt,
        host,
        output: None,
    }
}

#[test]
fn tiny_job_jct_equals_the_hand_worked_value() {
    // Two node-local maps of 2 s on r0h0 and r0h1; slow-start 1.0, so the
    // reduce starts at 2 s and fetches 2 × 100 MB at 1 Gbit/s each
    // (uncontended): 0.8 s, then computes 1 s. JCT = 2 + 0.8 + 1 = 3.8 s,
    // CCT = 0.8 s.
    let t = topo(2, 2, 1);
    let j = job(0, 0, 0, &[HostId::new(0, 0), HostId::new(0, 1)], 2, 1, 1);
    let config = EngineConfig {
        slow_start: 1.0,
        ..EngineConfig::default()
    };
    let out = simulate(&t, vec![j], "fifo", config);
    let rec = &out.records.jobs[&JobId(0)];
    assert_eq!(rec.jct(), Some(Nanos(3_800_000_000)));
    assert_eq!(rec.locality, [2, 0, 0]);
    assert_eq!(rec.shuffle_bytes, Bytes(200_000_000));
    let cf = &out.records.coflows[&shuffle_coflow(JobId(0))];
    assert_eq!(cf.cct(), Some(Nanos(800_000_000)));
    assert_eq!(cf.flows, 2);
    assert_eq!(out.end, Nanos(3_800_000_000));
}

#[test]
fn a_remote_map_reads_its_block_before_computing() {
    // One slot, on r1h0; the block is on r0h0 (whose slot is taken by a
    // long map of job 0). Job 1's map reads 100 MB (0.8 s) and computes 2 s.
    let t = topo(2, 1, 1);
    let j0 = job(0, 0, 0, &[HostId::new(0, 0)], 100, 0, 0);
    let j1 = job(1, 0, 0, &[HostId::new(0, 0)], 2, 0, 0);
    let out = simulate(&t, vec![j0, j1], "fifo", EngineConfig::default());
    let rec = &out.records.jobs[&JobId(1)];
    assert_eq!(rec.jct(), Some(Nanos(2_800_000_000)));
    assert_eq!(rec.locality, [0, 0, 1]);
    assert_eq!(rec.cross_rack_input_bytes, Bytes(100_000_000));
    // Input reads free: just the compute.
    let config = EngineConfig {
        input_reads: false,
        ..EngineConfig::default()
    };
    let j0 = job(0, 0, 0, &[HostId::new(0, 0)], 100, 0, 0);
    let j1 = job(1, 0, 0, &[HostId::new(0, 0)], 2, 0, 0);
    let out = simulate(&t, vec![j0, j1], "fifo", config);
    assert_eq!(out.records.jobs[&JobId(1)].jct(), Some(Nanos(2 * S)));
}

#[test]
fn fifo_serves_the_earlier_job_first() {
    // One host, one slot. Job 0 (two maps) at 0 s, job 1 at 1 s: when the
    // slot frees at 10 s it goes to job 0's second map, not job 1.
    let t = topo(1, 1, 1);
    let h = HostId::new(0, 0);
    let mut e = engine(
        &t,
        vec![job(0, 0, 0, &[h, h], 10, 0, 0), job(1, 1, 1, &[h], 10, 0, 0)],
        "fifo",
        EngineConfig::default(),
    );
    let c = e.handle(Nanos::ZERO, Event::Wakeup);
    assert_eq!(starts(&c), vec![(TaskId::map(JobId(0), 0), h)]);
    assert_eq!(e.next_wakeup(), Some(Nanos(S)));
    assert!(starts(&e.handle(Nanos(S), Event::Wakeup)).is_empty());
    let (a, _, _) = computes(&c)[0];
    let c = e.handle(Nanos(10 * S), finished(a, h));
    assert_eq!(starts(&c), vec![(TaskId::map(JobId(0), 1), h)]);
}

#[test]
fn fair_gives_a_freed_slot_to_the_user_below_its_share() {
    // Two slots. User 0's job (4 maps) takes both at 0 s; user 1's job
    // arrives at 1 s. At 10 s a slot frees: Fair gives it to user 1 (0
    // running) where FIFO keeps feeding user 0.
    let t = topo(1, 1, 2);
    let h = HostId::new(0, 0);
    for (policy, want) in [
        ("fair", TaskId::map(JobId(1), 0)),
        ("fifo", TaskId::map(JobId(0), 2)),
    ] {
        let mut e = engine(
            &t,
            vec![job(0, 0, 0, &[h; 4], 10, 0, 0), job(1, 1, 1, &[h; 2], 10, 0, 0)],
            policy,
            EngineConfig::default(),
        );
        let c = e.handle(Nanos::ZERO, Event::Wakeup);
        assert_eq!(starts(&c).len(), 2);
        e.handle(Nanos(S), Event::Wakeup);
        let (a, _, _) = computes(&c)[0];
        let c = e.handle(Nanos(10 * S), finished(a, h));
        assert_eq!(starts(&c), vec![(want, h)], "{policy}");
        let users = e.view().users();
        assert_eq!(
            users[&UserId(0)].running_tasks() + users[&UserId(1)].running_tasks(),
            2
        );
    }
}

#[test]
fn fair_shares_are_max_min_over_demands() {
    let t = topo(1, 1, 10);
    let h = HostId::new(0, 0);
    // Demands: user 0 wants 8 maps, user 1 wants 2, user 2 wants 6: of
    // 10 slots, user 1 gets its 2 and the others split 8 evenly.
    let mut e = engine(
        &t,
        vec![
            job(0, 0, 0, &[h; 8], 10, 0, 0),
            job(1, 1, 0, &[h; 2], 10, 0, 0),
            job(2, 2, 0, &[h; 6], 10, 0, 0),
        ],
        "fair",
        EngineConfig::default(),
    );
    let shares = e.view().fair_shares();
    assert!(shares.is_empty()); // nothing has arrived yet
    let c = e.handle(Nanos::ZERO, Event::Wakeup);
    let shares = e.view().fair_shares();
    assert_eq!(shares[&UserId(1)], 2.0);
    assert_eq!(shares[&UserId(0)], 4.0);
    assert_eq!(shares[&UserId(2)], 4.0);
    // And Fair's offers reach exactly those shares.
    let mut per_user = [0; 3];
    for (task, _) in starts(&c) {
        per_user[task.job.0 as usize] += 1;
    }
    assert_eq!(per_user, [4, 2, 4]);
}

#[test]
fn delay_scheduling_waits_then_relaxes_locality() {
    // Two racks of one one-slot host. Job 0 takes r0h0 (its block is
    // there) for 100 s. Job 1's block is also on r0h0; r1h0 is free. With
    // W1 = 1 s, W2 = 2 s, job 1 is skipped at 0 s, still has no rack-local
    // map at 1 s, and runs off-rack at W1 + W2 = 3 s.
    let t = topo(2, 1, 1);
    let h0 = HostId::new(0, 0);
    let h1 = HostId::new(1, 0);
    let mut params = toml::Table::new();
    params.insert("node_wait".into(), toml::Value::String("1s".into()));
    params.insert("rack_wait".into(), toml::Value::String("2s".into()));
    let policy = by_name("delay", Some(&params)).unwrap();
    let jobs = vec![job(0, 0, 0, &[h0], 100, 0, 0), job(1, 1, 0, &[h0], 2, 0, 0)];
    let mut e = Engine::new(&t, jobs, policy, EngineConfig::default()).unwrap();
    let c = e.handle(Nanos::ZERO, Event::Wakeup);
    assert_eq!(starts(&c), vec![(TaskId::map(JobId(0), 0), h0)]);
    assert_eq!(e.next_wakeup(), Some(Nanos(S)));
    assert!(starts(&e.handle(Nanos(S), Event::Wakeup)).is_empty());
    assert_eq!(e.next_wakeup(), Some(Nanos(3 * S)));
    let c = e.handle(Nanos(3 * S), Event::Wakeup);
    assert_eq!(starts(&c), vec![(TaskId::map(JobId(1), 0), h1)]);

    // Under Fair the same map runs off-rack at once.
    let jobs = vec![job(0, 0, 0, &[h0], 100, 0, 0), job(1, 1, 0, &[h0], 2, 0, 0)];
    let mut e = engine(&t, jobs, "fair", EngineConfig::default());
    let c = e.handle(Nanos::ZERO, Event::Wakeup);
    assert_eq!(starts(&c).len(), 2);
}

#[test]
fn delay_scheduling_takes_a_node_local_slot_at_once() {
    // Job 0's map occupies r0h0 for 10 s; job 1's block is on r0h0. Job 1
    // is skipped on r1h0, and when r0h0 frees at 10 s (before W1 = 20 s)
    // it runs there, node-local.
    let t = topo(2, 1, 1);
    let (h0, h1) = (HostId::new(0, 0), HostId::new(1, 0));
    let mut params = toml::Table::new();
    params.insert("node_wait".into(), toml::Value::String("20s".into()));
    let out = Simulation::new(
        Engine::new(
            &t,
            vec![job(0, 0, 0, &[h0], 10, 0, 0), job(1, 1, 0, &[h0], 2, 0, 0)],
            by_name("delay", Some(&params)).unwrap(),
            EngineConfig::default(),
        )
        .unwrap(),
        FixedRateNetwork::new(Bps(1_000_000_000)),
        SimConfig::default(),
    )
    .run(|_, _| {})
    .unwrap();
    let r = out
        .records
        .tasks
        .iter()
        .find(|r| r.attempt.task.job == JobId(1))
        .unwrap();
    assert_eq!(
        (r.host, r.started, r.locality),
        (h0, Nanos(10 * S), Some(Locality::NodeLocal))
    );
    assert!(out.records.tasks.iter().all(|r| r.host != h1));
}

#[test]
fn slow_start_gates_reduces() {
    // 10 maps of 1..10 s on a 20-slot host, 2 reduces. With slow-start
    // 0.5 no reduce may start before the 5th map is done (at 5 s).
    let t = topo(1, 1, 20);
    let h = HostId::new(0, 0);
    let mut j = job(0, 0, 0, &[h; 10], 1, 2, 1);
    for (m, map) in j.maps.iter_mut().enumerate() {
        map.duration = Nanos((m as u64 + 1) * S);
    }
    let config = EngineConfig {
        slow_start: 0.5,
        ..EngineConfig::default()
    };
    let mut e = engine(&t, vec![j], "fifo", config);
    let mut pending: Vec<(Nanos, AttemptId)> = Vec::new();
    let c = e.handle(Nanos::ZERO, Event::Wakeup);
    assert_eq!(starts(&c).len(), 10, "only maps start");
    for (a, _, d) in computes(&c) {
        pending.push((d, a));
    }
    pending.sort();
    for (i, (at, a)) in pending.into_iter().enumerate() {
        let c = e.handle(at, finished(a, h));
        let reduces = starts(&c)
            .iter()
            .filter(|(t, _)| t.kind == TaskKind::Reduce)
            .count();
        let job = e.view().job(JobId(0)).unwrap();
        if i + 1 < 5 {
            assert_eq!(reduces, 0, "after {} maps", i + 1);
            assert!(!job.reduces_runnable());
        } else if i + 1 == 5 {
            assert_eq!(reduces, 2, "the 5th map opens the gate");
        }
    }
}

#[test]
fn reduces_never_start_before_the_slow_start_fraction() {
    use crate::workload::generated::{default_classes, Arrivals, GeneratedWorkload};
    let t = topo(4, 4, 4);
    let w = GeneratedWorkload {
        jobs: 20,
        users: 3,
        arrivals: Arrivals::Poisson {
            mean_gap: Nanos(5 * S),
        },
        block_size: Bytes(64_000_000),
        replicas: 3,
        recurring_share: 0.0,
        classes: default_classes(),
    };
    for f in [0.0, 0.05, 0.3, 1.0] {
        let jobs = w.generate(&t, 3).unwrap();
        let config = EngineConfig {
            slow_start: f,
            ..EngineConfig::default()
        };
        let out = simulate(&t, jobs.clone(), "fair", config);
        for j in &jobs {
            let first_reduce = out
                .records
                .tasks
                .iter()
                .filter(|r| r.attempt.task.job == j.id && r.kind == TaskKind::Reduce)
                .map(|r| r.started)
                .min();
            let Some(first_reduce) = first_reduce else {
                continue;
            };
            let maps_done = out
                .records
                .tasks
                .iter()
                .filter(|r| {
                    r.attempt.task.job == j.id
                        && r.kind == TaskKind::Map
                        && r.outcome == Outcome::Finished
                        && r.ended <= first_reduce
                })
                .count();
            let needed = (f * j.maps.len() as f64).ceil() as usize;
            assert!(
                maps_done >= needed,
                "slow-start {f}: job {} had {maps_done} of {needed} maps",
                j.id
            );
        }
    }
}

#[test]
fn same_seed_gives_identical_records() {
    use crate::workload::generated::{default_classes, Arrivals, GeneratedWorkload};
    let t = topo(3, 4, 2);
    let w = GeneratedWorkload {
        jobs: 25,
        users: 4,
        arrivals: Arrivals::Poisson {
            mean_gap: Nanos(3 * S),
        },
        block_size: Bytes(128_000_000),
        replicas: 3,
        recurring_share: 0.0,
        classes: default_classes(),
    };
    let run = |seed: u64, policy: &str| {
        simulate(&t, w.generate(&t, seed).unwrap(), policy, EngineConfig::default())
    };
    for policy in ["fifo", "fair", "delay"] {
        let a = run(11, policy);
        let b = run(11, policy);
        assert_eq!(a.records, b.records, "{policy}");
        assert_eq!(a.end, b.end);
        assert_ne!(
            a.records,
            run(12, policy).records,
            "{policy}: another seed changes the run"
        );
        assert_eq!(a.records.refused_choices, 0);
    }
}

#[test]
fn a_child_job_runs_after_its_parents() {
    let t = topo(1, 2, 2);
    let h = HostId::new(0, 0);
    let a = job(0, 0, 0, &[h], 5, 1, 1);
    let b = job(1, 0, 0, &[h], 2, 0, 0);
    let mut c = job(2, 0, 0, &[h], 1, 0, 0);
    c.parents = vec![JobId(0), JobId(1)];
    let config = EngineConfig {
        input_reads: false,
        ..EngineConfig::default()
    };
    let out = simulate(&t, vec![a, b, c], "fifo", config);
    let r = &out.records.jobs;
    let parent_end = r[&JobId(0)].finished.max(r[&JobId(1)].finished);
    assert_eq!(r[&JobId(2)].ready, parent_end);
    assert_eq!(r[&JobId(2)].finished, parent_end.map(|t| t + Nanos(S)));
}

/// Fifo, remembering each job's block replicas when it became runnable.
struct ReplicaSpy {
    inner: Box<dyn crate::policy::TaskPolicy>,
    seen: std::rc::Rc<std::cell::RefCell<BTreeMap<JobId, Vec<Vec<HostId>>>>>,
}

impl crate::policy::TaskPolicy for ReplicaSpy {
    fn name(&self) -> &str {
        "replica-spy"
    }
    fn on_free_slot(&mut self, now: Nanos, view: &ClusterView<'_>, host: HostId) -> Option<TaskChoice> {
        self.inner.on_free_slot(now, view, host)
    }
    fn on_job_arrival(&mut self, _now: Nanos, view: &ClusterView<'_>, job: JobId) {
        if let Some(j) = view.job(job) {
            let replicas = j.spec().maps.iter().map(|m| m.replicas.clone()).collect();
            self.seen.borrow_mut().insert(job, replicas);
        }
    }
}

#[test]
fn a_child_reads_its_parents_output_where_their_reduces_wrote_it() {
    // Parents j0 (map on r0h0, two reduces) and j1 (map on r1h0, one
    // reduce), one slot per host. Child j2 reads two blocks of j0's output,
    // two of j1's and one base block; its generated replicas all say r2h1.
    // When it becomes runnable, block k of parent p must have its first
    // replica on the host of p's reduce k·R/B, the second on another rack
    // and the third on another host of that rack; the base block stays.
    let t = topo(3, 2, 1);
    let placeholder = HostId::new(2, 1);
    let a = job(0, 0, 0, &[HostId::new(0, 0)], 2, 2, 2);
    let b = job(1, 1, 0, &[HostId::new(1, 0)], 2, 1, 2);
    let mut c = job(2, 2, 0, &[placeholder; 5], 1, 0, 0);
    c.parents = vec![JobId(0), JobId(1)];
    for (m, p) in [(1, 0), (2, 0), (3, 1), (4, 1)] {
        c.maps[m].written_by = Some(JobId(p));
        c.maps[m].replicas = vec![placeholder, HostId::new(0, 1), HostId::new(0, 0)];
    }
    let seen = std::rc::Rc::new(std::cell::RefCell::new(BTreeMap::new()));
    let spy = ReplicaSpy {
        inner: by_name("fifo", None).expect("fifo"),
        seen: seen.clone(),
    };
    let config = EngineConfig {
        input_reads: false,
        placement_seed: 7,
        ..EngineConfig::default()
    };
    let engine = Engine::new(&t, vec![a, b, c], Box::new(spy), config).expect("engine");
    let out = Simulation::new(
        engine,
        FixedRateNetwork::new(Bps(1_000_000_000)),
        SimConfig::default(),
    )
    .run(|_, _| {})
    .expect("simulation finishes");
    let reduce_host = |job: u64, index: u32| {
        out.records
            .tasks
            .iter()
            .find(|r| r.attempt.task == TaskId::reduce(JobId(job), index) && r.outcome == Outcome::Finished)
            .map(|r| r.host)
            .expect("the parent's reduce finished")
    };
    let writers = [
        reduce_host(0, 0),
        reduce_host(0, 1),
        reduce_host(1, 0),
        reduce_host(1, 0),
    ];
    assert_ne!(
        writers[0], writers[2],
        "the parents' reduces ran on different hosts"
    );
    let replicas = seen.borrow()[&JobId(2)].clone();
    assert_eq!(
        replicas[0],
        vec![placeholder],
        "a base block keeps its HDFS replicas"
    );
    for (k, writer) in writers.iter().enumerate() {
        let r = &replicas[k + 1];
        assert_eq!(r.len(), 3, "block {}: {r:?}", k + 1);
        assert_eq!(
            r[0],
            *writer,
            "block {}: first replica on the writing reduce's host",
            k + 1
        );
        assert_ne!(
            r[1].rack,
            writer.rack,
            "block {}: second replica off the writer's rack",
            k + 1
        );
        assert_eq!(
            r[2].rack,
            r[1].rack,
            "block {}: third replica on the second's rack",
            k + 1
        );
        assert_ne!(r[2], r[1]);
    }
}

#[test]
fn a_dead_host_loses_its_attempts_and_map_outputs() {
    // Maps on r0h0 and r1h0 (one slot each); slow-start 1.0. Map 0
    // finishes at 2 s on r0h0, then r0h0 dies at 3 s before the reduce
    // fetched it: map 0 re-runs elsewhere and the job still completes.
    let t = topo(2, 1, 1);
    let (h0, h1) = (HostId::new(0, 0), HostId::new(1, 0));
    let j = job(0, 0, 0, &[h0, h1], 2, 1, 1);
    let config = EngineConfig {
        slow_start: 1.0,
        input_reads: false,
        ..EngineConfig::default()
    };
    let mut e = engine(&t, vec![j], "fifo", config);
    let c = e.handle(Nanos::ZERO, Event::Wakeup);
    let cs = computes(&c);
    assert_eq!(cs.len(), 2);
    let a0 = cs.iter().find(|(_, h, _)| *h == h0).unwrap().0;
    let a1 = cs.iter().find(|(_, h, _)| *h == h1).unwrap().0;
    e.handle(Nanos(2 * S), finished(a0, h0));
    e.handle(Nanos(3 * S), Event::HostDead(h0));
    let job = e.view().job(JobId(0)).unwrap();
    assert_eq!(job.maps_done(), 0);
    assert!(job.pending_maps().contains(&0));
    // Map 1 finishes on r1h0, the slot frees; map 0 re-runs there (the only live host).
    let c = e.handle(Nanos(4 * S), finished(a1, h1));
    assert_eq!(starts(&c), vec![(TaskId::map(JobId(0), 0), h1)]);
    let (r0, _, _) = computes(&c)[0];
    let c = e.handle(Nanos(6 * S), finished(r0, h1));
    // Both outputs are on r1h0 now: the reduce starts there and reads them locally.
    assert_eq!(starts(&c), vec![(TaskId::reduce(JobId(0), 0), h1)]);
    let (red, _, d) = computes(&c)[0];
    assert_eq!(d, Nanos(S));
    e.handle(Nanos(7 * S), finished(red, h1));
    assert!(e.is_done());
    assert_eq!(e.records().jobs[&JobId(0)].finished, Some(Nanos(7 * S)));
    assert!(e.records().tasks.iter().all(|r| r.outcome == Outcome::Finished));
}

/// A policy that speculates on every running map it can.
struct Speculator;
impl crate::policy::TaskPolicy for Speculator {
    fn name(&self) -> &str {
        "speculator"
    }
    fn on_free_slot(&mut self, _now: Nanos, view: &ClusterView<'_>, host: HostId) -> Option<TaskChoice> {
        for job in view.active_jobs() {
            if let Some(&m) = job.pending_maps().first() {
                return Some(TaskChoice::Run(TaskId::map(job.id(), m)));
            }
            for m in 0..job.spec().map_count() {
                let t = job.task(TaskKind::Map, m)?;
                if t.status() == TaskStatus::Running && t.live_attempts().len() == 1 {
                    return Some(TaskChoice::Speculate(TaskId::map(job.id(), m)));
                }
            }
            let _ = host;
        }
        None
    }
    fn wants_idle_offers(&self) -> bool {
        true
    }
}

#[test]
fn the_first_attempt_to_finish_wins_and_the_other_is_killed() {
    // One map of 10 s; host r0h1 runs at speed 2, so its speculative copy
    // (5 s) wins and the original on r0h0 is killed.
    let t = topo(1, 2, 1);
    let (h0, h1) = (HostId::new(0, 0), HostId::new(0, 1));
    let config = EngineConfig {
        host_speed: [(h1, 2.0)].into_iter().collect(),
        input_reads: false,
        ..EngineConfig::default()
    };
    let mut e = Engine::new(
        &t,
        vec![job(0, 0, 0, &[h0], 10, 0, 0)],
        Box::new(Speculator),
        config,
    )
    .unwrap();
    let c = e.handle(Nanos::ZERO, Event::Wakeup);
    let cs = computes(&c);
    assert_eq!(cs.len(), 2);
    let fast = cs.iter().find(|(_, h, _)| *h == h1).unwrap();
    assert_eq!(fast.2, Nanos(5 * S));
    let c = e.handle(Nanos(5 * S), finished(fast.0, h1));
    assert!(c
        .iter()
        .any(|c| matches!(c, Command::KillTask { host, .. } if *host == h0)));
    assert!(e.is_done());
    let outcomes: Vec<_> = e.records().tasks.iter().map(|r| (r.host, r.outcome)).collect();
    assert!(outcomes.contains(&(h1, Outcome::Finished)) && outcomes.contains(&(h0, Outcome::Killed)));
}

#[test]
fn held_shuffle_starts_only_when_all_reduces_are_placed() {
    // Two maps (r0h0, r0h1) and two reduces; one slot per host on two
    // hosts... the second reduce can only start when a map slot frees, so
    // with the hold no flow starts before both reduces run.
    let t = topo(2, 2, 1);
    let (a, b) = (HostId::new(0, 0), HostId::new(0, 1));
    let mut j = job(0, 0, 0, &[a, b], 2, 2, 1);
    j.maps[1].duration = Nanos(6 * S);
    let config = EngineConfig {
        slow_start: 0.5,
        hold_shuffle_until_reduces_placed: true,
        ..EngineConfig::default()
    };
    let out = simulate(&t, vec![j], "fifo", config);
    let reduces_placed = out
        .records
        .tasks
        .iter()
        .filter(|r| r.kind == TaskKind::Reduce)
        .map(|r| r.started)
        .max()
        .unwrap();
    let first_flow = out.records.flows.iter().map(|f| f.started).min().unwrap();
    assert!(first_flow >= reduces_placed, "{first_flow} < {reduces_placed}");
}

#[test]
fn bad_settings_are_refused_naming_the_field() {
    let t = topo(1, 1, 1);
    let bad = EngineConfig {
        slow_start: 1.5,
        ..EngineConfig::default()
    };
    match Engine::new(&t, vec![], by_name("fifo", None).unwrap(), bad) {
        Err(EngineError::Config { field, .. }) => assert_eq!(field, "slow_start"),
        _ => panic!("accepted slow_start 1.5"),
    }
    let zero = EngineConfig {
        parallel_copies: Some(0),
        ..EngineConfig::default()
    };
    match Engine::new(&t, vec![], by_name("fifo", None).unwrap(), zero) {
        Err(EngineError::Config { field, .. }) => assert_eq!(field, "parallel_copies"),
        _ => panic!("accepted parallel_copies 0"),
    }
}
