//! Task policies' distinctive decisions on a cluster set up by hand
//! ([`ClusterState`]), with no engine loop and no driver. Each test also asks
//! Fair (or, for ESPLASH, its baseline speculator) in the same state, so it
//! shows what the policy decides differently.

use crate::engine::{AttemptId, ClusterState, EngineConfig};
use crate::model::job::{Job, JobId, MapTask, ReduceTask, Shuffle, TaskId, TaskKind, UserId};
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
        self.offer_at(Nanos::ZERO, host)
    }

    /// What the policy runs on a free slot of `host` at `now`.
    fn offer_at(&mut self, now: Nanos, host: HostId) -> Option<TaskChoice> {
        self.policy.on_free_slot(now, &self.state.view(), host)
    }

    /// Starts `task` on `host`, as the engine carries out a choice.
    fn start(&mut self, task: TaskId, host: HostId) -> AttemptId {
        let a = self.state.start(Nanos::ZERO, task, host).expect("start");
        self.policy.on_task_started(Nanos::ZERO, &self.state.view(), a);
        a
    }

    /// Starts `task` on `host` at 0 and begins its compute at once (its
    /// input taken as read).
    fn start_computing(&mut self, task: TaskId, host: HostId) -> AttemptId {
        let a = self.start(task, host);
        self.state.compute(Nanos::ZERO, a).expect("compute");
        a
    }

    /// Attempt `a` finishes at `now`; the policy hears of it as the engine
    /// tells it.
    fn finish(&mut self, now: Nanos, a: AttemptId) {
        let ended = self.state.finish(now, a, None).expect("finish");
        for rec in &ended {
            self.policy.on_attempt_ended(now, &self.state.view(), rec);
        }
        let host = ended.first().expect("its record").host;
        self.policy
            .on_task_finished(now, &self.state.view(), a.task, host);
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

/// OMO's lazy start (Alg. 4.3.1): with reduces allowed from the start
/// (slow-start 0), a reduce starts only when the remaining map time is no
/// more than its predicted shuffle time. Worked by hand: 20 maps of 1 s, 15
/// started at 0 on 16 slots, one done at 1 s (F_o = 1 release/s, A_o = 15);
/// F_e = 1·14/15, so the 5 pending maps take 5.36 s + T_m 1 s = 6.36 s. A
/// 2 GB shuffle at 125 MB/s takes 16 s: start the reduce now (gap 9.6 s).
/// A 20 MB one takes 0.16 s: hold it and run a map. Fair starts the reduce
/// either way.
#[test]
fn omo_starts_reduces_when_the_maps_left_take_no_longer_than_the_shuffle() {
    let config = EngineConfig {
        slow_start: 0.0,
        ..EngineConfig::default()
    };
    let jobs = |ratio: f64| {
        let mut j = job(1, 20, 1, h(0, 0), false);
        j.shuffle = Shuffle::Ratio(ratio);
        vec![j]
    };
    let free = h(3, 1);
    let reduce = run(TaskId::reduce(JobId(1), 0));
    let decide = |policy: &str, ratio: f64| {
        let mut b = Bench::new(policy, None, config.clone(), jobs(ratio));
        let hosts: Vec<HostId> = b.topo.host_ids().collect();
        let mut first = None;
        for (m, host) in (0..15).zip(hosts.iter().flat_map(|&h| [h, h])) {
            let a = b.start(TaskId::map(JobId(1), m), host);
            first.get_or_insert(a);
        }
        b.finish(Nanos::from_millis(1000), first.expect("a map"));
        b.offer_at(Nanos::from_millis(1000), free)
    };
    assert_eq!(decide("omo", 1.0), reduce, "a 16 s shuffle starts now");
    let held = decide("omo", 0.01);
    assert!(
        matches!(held, Some(TaskChoice::Run(t)) if t.kind == TaskKind::Map),
        "a 0.16 s shuffle waits for the maps: {held:?}"
    );
    assert_eq!(decide("fair", 0.01), reduce, "Fair starts it at once");
}

/// ESPLASH (Sec. 5.2): only tasks on stragglers get copies, and a copy
/// runs only on a host of at least its minimum level. Racks 2-3 are level
/// 2 (maps take 1 s), racks 0-1 level 1 (2 s); r0h0 computes at a fifth of
/// its level's speed. At 3 s its maps are estimated at 10 s against its
/// level's 2 s: it is a straggler. Alg. 5.2.3 over (6 level-1 slots at 2 s,
/// 8 level-2 slots at 1 s) gives minL = 2 (1.0 s expected against 1.43 s),
/// so a level-1 host may not run the copy and a level-2 host does. Hadoop's
/// default speculator copies it onto the first host offered.
#[test]
fn esplash_copies_a_stragglers_task_onto_a_host_of_its_minimum_level() {
    let slow_racks = |r: u32| r < 2;
    let straggler = h(0, 0);
    let mut config = EngineConfig::default();
    for r in 0..4 {
        for i in 0..2 {
            let speed = match (slow_racks(r), h(r, i) == straggler) {
                (_, true) => 0.1,
                (true, false) => 0.5,
                (false, false) => 1.0,
            };
            config.host_speed.insert(h(r, i), speed);
        }
    }
    let levels = "levels = { r2h0 = 2, r2h1 = 2, r3h0 = 2, r3h1 = 2 }";
    let prepare = |policy: &str, params: Option<&str>| {
        let mut b = Bench::new(
            policy,
            params,
            config.clone(),
            vec![job(1, 16, 0, h(0, 0), false)],
        );
        let hosts: Vec<HostId> = b.topo.host_ids().collect();
        let mut attempts = Vec::new();
        for (m, host) in (0..16).zip(hosts.iter().flat_map(|&h| [h, h])) {
            attempts.push((host, b.start_computing(TaskId::map(JobId(1), m), host)));
        }
        for (host, a) in attempts {
            match (host == straggler, slow_racks(host.rack)) {
                (true, _) => {}
                (false, true) => b.finish(Nanos::from_millis(2000), a),
                (false, false) => b.finish(Nanos::from_millis(1000), a),
            }
        }
        b
    };
    let now = Nanos::from_millis(3000);
    let on_straggler = |c: Option<TaskChoice>| matches!(c, Some(TaskChoice::Speculate(t)) if t.index < 2);
    let mut esplash = prepare("esplash", Some(levels));
    assert_eq!(
        esplash.offer_at(now, h(1, 0)),
        None,
        "level 1 is below the copy's minL"
    );
    let copy = esplash.offer_at(now, h(2, 0));
    assert!(on_straggler(copy), "a level-2 host runs it: {copy:?}");
    let mut default = prepare("speculate-default", None);
    let copy = default.offer_at(now, h(1, 0));
    assert!(
        on_straggler(copy),
        "the default speculator copies it anywhere: {copy:?}"
    );
}
