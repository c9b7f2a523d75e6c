//! Co-scheduler's decisions, worked by hand.

use super::*;
use crate::engine::{Command, Engine, EngineConfig, Event};
use crate::model::job::{MapTask, ReduceTask, Shuffle};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::Path;

const TOPO: &str = r#"
name = "t"
racks = 6
hosts_per_rack = 2
slots_per_host = 2
simulation_only = true
[eps]
host_rate = "10Gbit/s"
oversubscription = 2.0
[ocs]
ports_per_rack = 1
port_rate = "100Gbit/s"
reconfig_delay = "10ms"
elephant_threshold = "1GB"
"#;

fn job(id: u64, user: u32, arrival_ms: u64, maps: u32, reduces: u32, input_each: u64) -> Job {
    Job {
        id: JobId(id),
        name: String::new(),
        user: UserId(user),
        arrival: Nanos::from_millis(arrival_ms),
        recurring: false,
        parents: Vec::new(),
        maps: (0..maps)
            .map(|m| MapTask {
                input: Bytes(input_each),
                replicas: vec![
                    HostId::new(m % 6, 0),
                    HostId::new((m + 1) % 6, 1),
                    HostId::new((m + 2) % 6, 0),
                ],
                duration: Nanos::from_millis(1_000 + 150 * u64::from(m % 5)),
                written_by: None,
            })
            .collect(),
        reduces: (0..reduces)
            .map(|_| ReduceTask {
                duration: Nanos::from_millis(2_000),
            })
            .collect(),
        shuffle: Shuffle::Ratio(1.0),
    }
}

type Starts = Vec<(Nanos, TaskId, HostId)>;
type Finishes = Vec<(Nanos, TaskId)>;

/// Runs the engine with a test network in which every flow moves at 1 GB/s; returns
/// (attempt starts with their time and host, task finishes with their time).
fn run(policy: Box<dyn TaskPolicy>, jobs: Vec<Job>) -> (Starts, Finishes) {
    run_on(TOPO, policy, jobs)
}

/// [`run`] on the topology `text`.
fn run_on(text: &str, policy: Box<dyn TaskPolicy>, jobs: Vec<Job>) -> (Starts, Finishes) {
    run_with(text, policy, jobs, 1.0)
}

/// [`run_on`] with the engine's slow-start fraction `slow_start`.
fn run_with(text: &str, policy: Box<dyn TaskPolicy>, jobs: Vec<Job>, slow_start: f64) -> (Starts, Finishes) {
    let topo = Topology::parse(text, Path::new("t.toml")).expect("topology");
    let config = EngineConfig {
        slow_start,
        hold_shuffle_until_reduces_placed: true,
        ..Default::default()
    };
    let mut engine = Engine::new(&topo, jobs, policy, config).expect("engine");
    let mut queue: BinaryHeap<Reverse<(Nanos, u64, usize)>> = BinaryHeap::new();
    let mut events: Vec<Event> = Vec::new();
    let (mut starts, mut finishes) = (Vec::new(), Vec::new());
    let mut now = Nanos::ZERO;
    let mut seq = 0u64;
    let mut pending = vec![Event::Wakeup];
    for _ in 0..1_000_000 {
        for ev in pending.drain(..) {
            if let Event::TaskFinished { attempt, .. } = &ev {
                finishes.push((now, attempt.task));
            }
            for cmd in engine.handle(now, ev) {
                let at_ev = match cmd {
                    Command::StartTask { attempt, host } => {
                        starts.push((now, attempt.task, host));
                        None
                    }
                    Command::Compute {
                        attempt,
                        host,
                        duration,
                    } => Some((
                        now + duration,
                        Event::TaskFinished {
                            attempt,
                            host,
                            output: None,
                        },
                    )),
                    Command::StartFlows(flows) => {
                        for f in flows {
                            let done = now + Nanos(f.bytes.0);
                            let ev = Event::FlowFinished {
                                flow: f.id,
                                eps_bytes: f.bytes,
                                ocs_bytes: Bytes(0),
                            };
                            events.push(ev);
                            queue.push(Reverse((done, seq, events.len() - 1)));
                            seq += 1;
                        }
                        None
                    }
                    Command::KillTask { .. } => None,
                    Command::Retime { .. } => unreachable!("no host changes speed in this test"),
                };
                if let Some((t, ev)) = at_ev {
                    events.push(ev);
                    queue.push(Reverse((t, seq, events.len() - 1)));
                    seq += 1;
                }
            }
        }
        if engine.is_done() {
            return (starts, finishes);
        }
        let next_ev = queue.peek().map(|Reverse((t, _, _))| *t);
        match (next_ev, engine.next_wakeup()) {
            (Some(t), w) if w.is_none_or(|w| t <= w) => {
                let Some(Reverse((t, _, i))) = queue.pop() else {
                    break;
                };
                now = t;
                pending.push(events[i].clone());
            }
            (_, Some(w)) => {
                now = w.max(now);
                pending.push(Event::Wakeup);
            }
            _ => break,
        }
    }
    panic!("the run did not finish");
}

#[test]
fn reduces_of_a_coscheduler_job_never_start_before_its_last_map() {
    // Two shuffle-heavy jobs (24 maps x 0.5 GB, SIR 1: 12 GB of shuffle) and a light one, two users,
    // on 6 racks x 2 hosts x 2 slots: maps come in waves, so a reduce could start early if allowed.
    let jobs = vec![
        job(0, 0, 0, 24, 4, 500_000_000),
        job(1, 1, 100, 24, 6, 500_000_000),
        job(2, 1, 50, 6, 2, 1_000_000),
    ];
    for name in ["coscheduler", "coscheduler-dp-ocas", "coscheduler-ocas"] {
        let policy = crate::policy::by_name(name, None).expect("registered");
        let (starts, finishes) = run(policy, jobs.clone());
        for j in 0..3u64 {
            let last_map = finishes
                .iter()
                .filter(|(_, t)| t.job == JobId(j) && t.kind == TaskKind::Map)
                .map(|(at, _)| *at)
                .max()
                .expect("maps ran");
            let reduce_starts: Vec<Nanos> = starts
                .iter()
                .filter(|(_, t, _)| t.job == JobId(j) && t.kind == TaskKind::Reduce)
                .map(|(at, _, _)| *at)
                .collect();
            assert_eq!(
                reduce_starts.len(),
                jobs[j as usize].reduces.len(),
                "{name}: job {j}"
            );
            assert!(
                reduce_starts.iter().all(|&s| s >= last_map),
                "{name}: job {j} reduce before its last map"
            );
        }
    }
}

/// Co-scheduler releases a job's reduces at its last map (IV-A), whatever
/// the engine's slow-start: with the engine's gate open long before, the last
/// map used to free (and offer) one host only, and reduces bound for other
/// racks waited for an unrelated event — on an idle cluster, forever.
#[test]
fn a_jobs_reduces_start_at_its_last_map_under_any_slow_start() {
    // 12 light maps over 24 free slots: when the last map ends, every slot but the reduces' is free.
    let jobs = vec![job(0, 0, 0, 12, 4, 1_000_000)];
    for slow_start in [0.05, 1.0] {
        for name in ["coscheduler", "coscheduler-dp-ocas", "coscheduler-ocas"] {
            let policy = crate::policy::by_name(name, None).expect("registered");
            let (starts, finishes) = run_with(TOPO, policy, jobs.clone(), slow_start);
            let last_map = finishes
                .iter()
                .filter(|(_, t)| t.kind == TaskKind::Map)
                .map(|(at, _)| *at)
                .max()
                .expect("maps ran");
            let reduce_starts: Vec<Nanos> = starts
                .iter()
                .filter(|(_, t, _)| t.kind == TaskKind::Reduce)
                .map(|(at, _, _)| *at)
                .collect();
            assert_eq!(
                reduce_starts,
                vec![last_map; 4],
                "{name}, slow-start {slow_start}"
            );
        }
    }
}

/// The stall reported under Sec. IV-A's shuffle hold: reduces holding every slot while each waits
/// for the rest of its job's reduces to be placed. `TOPO` has 24 slots.
#[test]
fn the_shuffle_hold_never_stalls_a_run() {
    // One job with more reduces (30) than the cluster has slots: its first 24 reduces would hold
    // every slot forever, and the one-map job arriving later would never run.
    let wide = vec![
        job(0, 0, 0, 12, 30, 500_000_000),
        job(1, 1, 60_000, 1, 1, 1_000_000),
    ];
    // Two jobs whose maps finish together, 16 reduces each: whichever way the 24 slots are shared,
    // neither job can place all its reduces while the other's held ones keep their slots.
    let pair = vec![
        job(0, 0, 0, 12, 16, 500_000_000),
        job(1, 1, 0, 12, 16, 500_000_000),
    ];
    for (case, jobs) in [("wider than the cluster", wide), ("two partly placed jobs", pair)] {
        for name in [
            "coscheduler",
            "coscheduler-dp-ocas",
            "coscheduler-ocas",
            "corral",
            "fair",
        ] {
            let policy = crate::policy::by_name(name, None).expect("registered");
            // `run` panics if the simulation stops before every job is done.
            let (starts, finishes) = run(policy, jobs.clone());
            for j in &jobs {
                let done = |kind| {
                    finishes
                        .iter()
                        .filter(|(_, t)| t.job == j.id && t.kind == kind)
                        .count()
                };
                assert_eq!(
                    done(TaskKind::Map),
                    j.maps.len(),
                    "{case}, {name}: job {:?}",
                    j.id
                );
                assert_eq!(
                    done(TaskKind::Reduce),
                    j.reduces.len(),
                    "{case}, {name}: job {:?}",
                    j.id
                );
                let last_map = finishes
                    .iter()
                    .filter(|(_, t)| t.job == j.id && t.kind == TaskKind::Map)
                    .map(|(at, _)| *at)
                    .max();
                let first_reduce = starts
                    .iter()
                    .filter(|(_, t, _)| t.job == j.id && t.kind == TaskKind::Reduce)
                    .map(|(at, _, _)| *at)
                    .min();
                assert!(
                    first_reduce >= last_map,
                    "{case}, {name}: a reduce before the last map"
                );
            }
        }
    }
}

#[test]
fn corral_runs_a_planned_job_only_on_its_racks() {
    // 96 GB of shuffle: Corral's LRF prefers one rack (6 waves of maps) to paying the cross-rack shuffle.
    let mut recurring = job(0, 0, 0, 24, 4, 4_000_000_000);
    recurring.recurring = true;
    let jobs = vec![recurring.clone(), job(1, 1, 0, 12, 2, 100_000_000)];
    // The plan's racks, as Corral's placement reveals them: the first replica of every block.
    let topo = Topology::parse(TOPO, Path::new("t.toml")).expect("topology");
    let mut probe = crate::policy::by_name("corral", None).expect("registered");
    let placed = probe.place_input(&topo, &recurring).expect("planned");
    let racks: BTreeSet<u32> = placed.iter().map(|r| r[0].rack).collect();
    assert!(racks.len() < 6, "the plan uses some racks, not all: {racks:?}");
    let (starts, _) = run(crate::policy::by_name("corral", None).expect("registered"), jobs);
    let ran: BTreeSet<u32> = starts
        .iter()
        .filter(|(_, t, _)| t.job == JobId(0))
        .map(|(_, _, h)| h.rack)
        .collect();
    assert!(ran.is_subset(&racks), "ran on {ran:?}, planned {racks:?}");
    assert_eq!(starts.iter().filter(|(_, t, _)| t.job == JobId(0)).count(), 28);
}

#[test]
fn data_placement_puts_three_disjoint_replica_sets() {
    let topo = Topology::parse(TOPO, Path::new("t.toml")).expect("topology");
    let mut p = CoScheduler::new("coscheduler", Variant::Full, Params::default()).expect("valid");
    // 24 x 0.5 GB, SIR 1.0: floor(sqrt(12)) = 3, clamped to floor(6 / 3) = 2 racks per set.
    let placed = p
        .place_input(&topo, &job(0, 0, 0, 24, 4, 500_000_000))
        .expect("placed");
    let set = |k: usize| placed.iter().map(|r| r[k].rack).collect::<BTreeSet<u32>>();
    let (a, b, c) = (set(0), set(1), set(2));
    assert_eq!((a.len(), b.len(), c.len()), (2, 2, 2));
    assert!(a.is_disjoint(&b) && b.is_disjoint(&c) && a.is_disjoint(&c));
    assert_eq!(p.jobs[&JobId(0)].r_map, Some(2));
    // OCAS keeps the workload's placement.
    let mut o = CoScheduler::new("coscheduler-ocas", Variant::Ocas, Params::default()).expect("valid");
    assert_eq!(o.place_input(&topo, &job(0, 0, 0, 24, 4, 500_000_000)), None);
    // Parameters are checked, naming the field.
    let bad: toml::Table = toml::from_str("t_rem_error = 1.5").expect("toml");
    let err = CoScheduler::full_from_params(&bad)
        .err()
        .expect("refused")
        .to_string();
    assert!(err.contains("t_rem_error"), "{err}");
    let typo: toml::Table = toml::from_str("zone_slak = 0.1").expect("toml");
    assert!(CoScheduler::full_from_params(&typo).is_err());
}

/// Alg. 2 (and Corral) choose maps by rack; among a rack's pending maps the one whose block is on the
/// offered host comes first. One map per container, each block on one host only: every map can run
/// node-local, and does. (Before, the rack's lowest-numbered map was taken, usually its neighbour's.)
#[test]
fn a_free_container_takes_the_map_whose_block_is_on_its_own_host() {
    let mut light = job(0, 0, 0, 24, 1, 1_000_000);
    for (m, t) in light.maps.iter_mut().enumerate() {
        let m = m as u32;
        t.replicas = vec![HostId::new(m / 4, (m / 2) % 2)];
    }
    for name in ["coscheduler-ocas", "corral"] {
        let policy = crate::policy::by_name(name, None).expect("registered");
        let (starts, _) = run(policy, vec![light.clone()]);
        let maps: Vec<&(Nanos, TaskId, HostId)> = starts
            .iter()
            .filter(|(_, t, _)| t.kind == TaskKind::Map)
            .collect();
        assert_eq!(maps.len(), 24, "{name}");
        let remote: Vec<_> = maps
            .iter()
            .filter(|(_, t, h)| !light.maps[t.index as usize].replicas.contains(h))
            .collect();
        assert!(
            remote.is_empty(),
            "{name}: maps off their block's host: {remote:?}"
        );
    }
}

/// Line 9 does not run a shuffle-heavy job's map off its guideline while a container on its guideline
/// is free. An idle 9-rack cluster, one job of 8 maps x 0.5 GB (SIR 1: R_data = R_map = 2, its input on
/// 3 x 2 of the 9 racks): every container is free and offered in turn, so a rack without its data may
/// be offered first; its maps must still start only on racks holding its input, on at most R_map of
/// them (2 racks x 4 containers hold all 8).
#[test]
fn an_idle_cluster_keeps_a_shuffle_heavy_jobs_maps_on_its_guideline() {
    let topo_text = TOPO.replace("racks = 6", "racks = 9");
    let topo = Topology::parse(&topo_text, Path::new("t.toml")).expect("topology");
    let heavy = job(0, 0, 0, 8, 2, 500_000_000);
    let mut probe = crate::policy::by_name("coscheduler", None).expect("registered");
    let placed = probe
        .place_input(&topo, &heavy)
        .expect("the guideline places the input");
    let data_racks: BTreeSet<u32> = placed.iter().flatten().map(|h| h.rack).collect();
    assert_eq!(data_racks.len(), 6, "three disjoint sets of R_data = 2 racks");
    let policy = crate::policy::by_name("coscheduler", None).expect("registered");
    let (starts, _) = run_on(&topo_text, policy, vec![heavy]);
    let map_racks: BTreeSet<u32> = starts
        .iter()
        .filter(|(_, t, _)| t.kind == TaskKind::Map)
        .map(|(_, _, h)| h.rack)
        .collect();
    assert!(
        map_racks.is_subset(&data_racks),
        "maps on {map_racks:?}, data on {data_racks:?}"
    );
    assert!(map_racks.len() <= 2, "maps on {map_racks:?} for R_map = 2");
}
