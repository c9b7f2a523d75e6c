//! Task policies' distinctive decisions on a cluster set up by hand
//! ([`ClusterState`]), with no engine loop and no driver. Each test also asks
//! Fair in the same state, so it shows what the policy decides differently.

use crate::engine::{ClusterState, EngineConfig};
use crate::model::job::{Job, JobId, MapTask, ReduceTask, Shuffle, TaskId, UserId};
use crate::policy::{by_name, TaskChoice, TaskPolicy};
use crate::{Bytes, HostId, Nanos, Topology};

/// 4 racks of 2 hosts with 2 slots each, 1 Gbit/s NICs, no OCS.
fn topo() -> Topology {
    Topology::builder("by-hand", 4, 2)
        .slots_per_host(2)
        .simulation_only()
        .build()
        .expect("valid topology")
}

fn h(rack: u32, host: u32) -> HostId {
    HostId::new(rack, host)
}

/// Job `id` of user `id`: `maps` maps of 1 s with their 100 MB blocks on
/// `home`, `reduces` reduces of 1 s, shuffle = input.
fn job(id: u64, maps: u32, reduces: u32, home: HostId, recurring: bool) -> Job {
    Job {
        id: JobId(id),
        name: format!("j{id}"),
        user: UserId(id as u32),
        arrival: Nanos::ZERO,
        recurring,
        parents: vec![],
        maps: (0..maps)
            .map(|_| MapTask {
                input: Bytes(100_000_000),
                replicas: vec![home],
                duration: Nanos::from_millis(1000),
                written_by: None,
            })
            .collect(),
        reduces: (0..reduces)
            .map(|_| ReduceTask {
                duration: Nanos::from_millis(1000),
            })
            .collect(),
        shuffle: Shuffle::Ratio(1.0),
    }
}

/// A policy and a cluster, driven as the engine drives them: the policy
/// places every job's input before the run, then jobs arrive.
struct Bench {
    topo: Topology,
    state: ClusterState,
    policy: Box<dyn TaskPolicy>,
}

impl Bench {
    fn new(policy: &str, params: Option<&str>, config: EngineConfig, jobs: Vec<Job>) -> Bench {
        let topo = topo();
        let params: Option<toml::Table> = params.map(|p| p.parse().expect("params"));
        let mut policy = by_name(policy, params.as_ref()).expect("policy");
        let mut state = ClusterState::new(&topo, config).expect("cluster");
        let mut jobs = jobs;
        for j in &mut jobs {
            if let Some(placed) = policy.place_input(&topo, j) {
                for (m, replicas) in j.maps.iter_mut().zip(placed) {
                    m.replicas = replicas;
                }
            }
        }
        for j in jobs {
            let id = state.submit(j).expect("submit");
            policy.on_job_arrival(Nanos::ZERO, &state.view(), id);
        }
        Bench { topo, state, policy }
    }

    /// What the policy runs on a free slot of `host`.
    fn offer(&mut self, host: HostId) -> Option<TaskChoice> {
        self.policy.on_free_slot(Nanos::ZERO, &self.state.view(), host)
    }

    /// Starts `task` on `host`, as the engine carries out a choice.
    fn start(&mut self, task: TaskId, host: HostId) {
        let a = self.state.start(Nanos::ZERO, task, host).expect("start");
        self.policy.on_task_started(Nanos::ZERO, &self.state.view(), a);
    }
}

fn run(t: TaskId) -> Option<TaskChoice> {
    Some(TaskChoice::Run(t))
}

/// Corral runs a planned (recurring) job's tasks only on the racks its plan
/// gave it, where its input's first replicas went; Fair runs them anywhere.
#[test]
fn corral_keeps_a_planned_job_on_its_racks() {
    let jobs = || vec![job(1, 2, 1, h(0, 0), true)];
    let mut corral = Bench::new("corral", None, EngineConfig::default(), jobs());
    let input = corral.state.view().job(JobId(1)).expect("job").spec().maps[0]
        .replicas
        .clone();
    let planned = input[0].rack;
    let other = (0..corral.topo.racks).find(|&r| input.iter().all(|h| h.rack != r));
    let other = other.expect("a rack holding no replica");
    assert_eq!(corral.offer(h(other, 0)), None, "rack {other} is not the job's");
    let on_plan = corral.offer(h(planned, 0));
    assert!(
        matches!(on_plan, Some(TaskChoice::Run(t)) if t.job == JobId(1)),
        "{on_plan:?}"
    );
    let mut fair = Bench::new("fair", None, EngineConfig::default(), jobs());
    assert!(fair.offer(h(other, 0)).is_some(), "Fair runs it anywhere");
}

/// Co-scheduler offers a job's reduces only after its last map (IV-A), even
/// where the engine would start them (slow-start 0); Fair starts one.
#[test]
fn coscheduler_holds_reduces_until_the_last_map() {
    let config = EngineConfig {
        slow_start: 0.0,
        ..EngineConfig::default()
    };
    let jobs = || vec![job(1, 1, 1, h(0, 0), false)];
    let mut cos = Bench::new("coscheduler", None, config.clone(), jobs());
    // Where Co-scheduler's placement guideline put the block.
    let home = cos.state.view().job(JobId(1)).expect("job").spec().maps[0].replicas[0];
    let map = TaskId::map(JobId(1), 0);
    assert_eq!(cos.offer(home), run(map));
    cos.start(map, home);
    for rack in 0..cos.topo.racks {
        assert_eq!(
            cos.offer(h(rack, 1)),
            None,
            "the map still runs: no reduce on rack {rack}"
        );
    }
    let mut fair = Bench::new("fair", None, config, jobs());
    fair.start(map, h(0, 0));
    assert_eq!(fair.offer(h(1, 0)), run(TaskId::reduce(JobId(1), 0)));
}

/// FRESH's admission control (Sec. 3.2): with k = 1, a second job's maps
/// wait while the first job is in its map phase, and a slot the first job
/// cannot use idles; Fair gives it to the second job.
#[test]
fn fresh_admits_k_jobs_per_phase() {
    let jobs = || vec![job(1, 1, 1, h(0, 0), false), job(2, 2, 1, h(1, 0), false)];
    let mut fresh = Bench::new("fresh", Some("k = 1"), EngineConfig::default(), jobs());
    let first = TaskId::map(JobId(1), 0);
    assert_eq!(
        fresh.offer(h(1, 0)),
        run(first),
        "job 2's data is here, but job 1 is admitted"
    );
    fresh.start(first, h(1, 0));
    assert_eq!(fresh.offer(h(1, 1)), None, "job 2 is not admitted yet");
    let mut fair = Bench::new("fair", None, EngineConfig::default(), jobs());
    fair.start(first, h(1, 0));
    assert!(
        matches!(fair.offer(h(1, 1)), Some(TaskChoice::Run(t)) if t.job == JobId(2)),
        "Fair runs job 2"
    );
}
