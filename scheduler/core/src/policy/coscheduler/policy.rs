//! Co-scheduler (and its Fig. 7 ablations) as a [`TaskPolicy`] of the engine:
//! the glue between the engine's [`ClusterView`] and the pure components of
//! Li & Shen, ToN 2022, Sec. IV (see the parent module).
//!
//! - [`TaskPolicy::place_input`]: the data placement guideline (IV-D), for
//!   the variants that have it; a recurring job's forecast comes from
//!   [`super::forecast`] with the `forecast_error` knob.
//! - [`TaskPolicy::on_free_slot`]: Alg. 2 ([`super::order`]) over the active
//!   jobs of one user at a time, in Fair order. Reduces are offered only after
//!   the job's last map (IV-A) and when the engine allows them.
//! - [`TaskPolicy::on_task_finished`]: at a job's last map, the reduce
//!   guideline (IV-E) and ExploreSchedule (IV-F) fix its best schedule, from
//!   the map output per rack and every running task's `T_rem` (eq. 12; the
//!   `t_rem_error` knob perturbs each estimate by ± that fraction, a fair coin
//!   per attempt, for the Sec. V-D sensitivity sweep).
//!
//! Under the engine, the shuffle of a job should start only once all its
//! reduces are placed (IV-A): that is the engine's
//! `hold_shuffle_until_reduces_placed`, which an experiment running
//! Co-scheduler sets.
//!
//! Cost per offer: only the offered rack's pending maps are looked at (at most
//! [`LOCAL_MAPS_SEEN`] of them per job, plus the job's first pending map), so
//! an offer costs O(active jobs of the users tried).

use super::cct::OcsParams;
use super::explore::{best_schedule, t_rem, RackRelease};
use super::forecast::{predicted, splitmix64};
use super::latency::{ClusterShape, JobForecast, LatencyMatrix, DEFAULT_ZONE_SLACK};
use super::order::{pick, JobQueue, MapGuide, PendingMap, TaskRef};
use super::placement::{clamp_r_data, r_data_non_recurring, ReplicaSets, SirEstimate};
use super::reduce_guideline::possible_schedules;
use super::Variant;
use crate::engine::{AttemptId, ClusterView, JobState};
use crate::model::job::{Job, JobId, TaskId, TaskKind, UserId};
use crate::policy::{parse_params, PolicyError, TaskChoice, TaskPolicy};
use crate::{Bytes, HostId, Nanos, Topology};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::RangeInclusive;

/// Pending maps of a job looked at on the offered rack (see the module doc).
pub const LOCAL_MAPS_SEEN: usize = 16;

/// Parameters (`[scheduler_params.<name>]` of an experiment).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Params {
    /// Relative slack of the feasible zone of the latency model (default 0.05).
    pub zone_slack: f64,
    /// Relative error of each `T_rem` estimate, in [0, 1) (default 0).
    pub t_rem_error: f64,
    /// Relative error of recurring jobs' forecasts, in [0, 1) (default 0.065).
    pub forecast_error: f64,
    /// Seed of the placement and error draws.
    pub seed: u64,
}

impl Default for Params {
    fn default() -> Params {
        Params {
            zone_slack: DEFAULT_ZONE_SLACK,
            t_rem_error: 0.0,
            forecast_error: 0.065,
            seed: 1,
        }
    }
}

/// What Co-scheduler keeps per job.
#[derive(Clone, Debug, Default)]
struct JobInfo {
    /// `R_map` (= `R_data`) when the data placement guideline placed the input.
    r_map: Option<u32>,
    /// A recurring job's `R_red` range from the latency model.
    zone: Option<RangeInclusive<u32>>,
    /// A recurring job's forecast.
    forecast: Option<JobForecast>,
    /// Racks its maps were started on.
    map_racks: BTreeSet<u32>,
    /// Racks holding its input (the three replica sets), when the data placement guideline placed it.
    data_racks: BTreeSet<u32>,
    /// Its best schedule: reduces still to place per rack.
    plan: Option<BTreeMap<u32, u32>>,
}

/// Co-scheduler, or one of its ablations.
#[derive(Debug)]
pub struct CoScheduler {
    name: &'static str,
    variant: Variant,
    params: Params,
    jobs: BTreeMap<JobId, JobInfo>,
}

fn check(name: &str, p: &Params) -> Result<(), PolicyError> {
    let bad = |field: &str, v: f64, expected: &str| PolicyError::Params {
        policy: name.to_string(),
        message: format!("{field} = {v} is out of range: expected {expected}"),
    };
    if !(0.0..1.0).contains(&p.t_rem_error) {
        return Err(bad("t_rem_error", p.t_rem_error, "0 to below 1"));
    }
    if !(0.0..1.0).contains(&p.forecast_error) {
        return Err(bad("forecast_error", p.forecast_error, "0 to below 1"));
    }
    if !(p.zone_slack >= 0.0 && p.zone_slack.is_finite()) {
        return Err(bad("zone_slack", p.zone_slack, "a number >= 0"));
    }
    Ok(())
}

impl CoScheduler {
    /// A Co-scheduler of `variant` registered as `name`.
    pub fn new(name: &'static str, variant: Variant, params: Params) -> Result<CoScheduler, PolicyError> {
        check(name, &params)?;
        Ok(CoScheduler {
            name,
            variant,
            params,
            jobs: BTreeMap::new(),
        })
    }

    fn build(
        name: &'static str,
        variant: Variant,
        t: &toml::Table,
    ) -> Result<Box<dyn TaskPolicy>, PolicyError> {
        Ok(Box::new(CoScheduler::new(name, variant, parse_params(name, t)?)?))
    }

    /// `coscheduler`: DP + TP + BSS + OCAS.
    pub fn full_from_params(t: &toml::Table) -> Result<Box<dyn TaskPolicy>, PolicyError> {
        Self::build("coscheduler", Variant::Full, t)
    }

    /// `coscheduler-dp-ocas`: data placement and map guideline, no reduce guideline.
    pub fn dp_ocas_from_params(t: &toml::Table) -> Result<Box<dyn TaskPolicy>, PolicyError> {
        Self::build("coscheduler-dp-ocas", Variant::DpOcas, t)
    }

    /// `coscheduler-ocas`: Alg. 2's order alone.
    pub fn ocas_from_params(t: &toml::Table) -> Result<Box<dyn TaskPolicy>, PolicyError> {
        Self::build("coscheduler-ocas", Variant::Ocas, t)
    }

    fn info(&mut self, job: &Job) -> &mut JobInfo {
        let (err, seed) = (self.params.forecast_error, self.params.seed);
        self.jobs.entry(job.id).or_insert_with(|| JobInfo {
            forecast: job
                .recurring
                .then(|| predicted(&truth_of(job), err, seed, job.id.0)),
            ..JobInfo::default()
        })
    }

    /// Whether `job` is (estimated) shuffle-heavy now.
    fn shuffle_heavy(&self, job: &JobState, te: Bytes) -> bool {
        let spec = job.spec();
        if job.maps_done() == spec.map_count() {
            return job.map_output_done() >= te;
        }
        if let Some(f) = self.jobs.get(&job.id()).and_then(|i| i.forecast) {
            return f.shuffle >= te;
        }
        let sir = job.observed_shuffle_ratio().unwrap_or(SirEstimate::INITIAL);
        spec.input_bytes().0 as f64 * sir >= te.0 as f64
    }

    fn queue(
        &self,
        view: &ClusterView<'_>,
        job: &JobState,
        host: HostId,
        maps_fit: bool,
        reduces_fit: bool,
    ) -> JobQueue {
        let te = view.topology().elephant_threshold;
        let spec = job.spec();
        let info = self.jobs.get(&job.id());
        let heavy = self.shuffle_heavy(job, te);
        let racks_of = |m: u32| -> Vec<u32> {
            spec.maps
                .get(m as usize)
                .map(|t| t.replicas.iter().map(|h| h.rack).collect())
                .unwrap_or_default()
        };
        let mut maps = Vec::new();
        if maps_fit && job.has_runnable_map() {
            // Node-local maps first: Alg. 2's rules choose by rack and take the first map with data on
            // it, so this reads a block on this very host from disk rather than over the ToR.
            let node_local = job.pending_maps_on_host(host).take(LOCAL_MAPS_SEEN);
            let local = node_local.chain(job.pending_maps_on_rack(host.rack).take(LOCAL_MAPS_SEEN));
            for m in local.chain(job.pending_maps().first().copied()) {
                if !maps.iter().any(|p: &PendingMap| p.task == m) {
                    maps.push(PendingMap {
                        task: m,
                        replica_racks: racks_of(m),
                    });
                }
            }
        }
        let released = reduces_fit && job.maps_done() == spec.map_count() && view.can_start_reduce(job);
        let reduces = if released {
            job.pending_reduces().first().copied().into_iter().collect()
        } else {
            Vec::new()
        };
        let map_guide = match (self.variant.places_data(), heavy, info) {
            (true, true, Some(i)) => i.r_map.map(|r_map| MapGuide {
                r_map,
                map_racks: i.map_racks.clone(),
                room_on_guide: maps_fit && room_on_guide(view, i, r_map, host.rack),
            }),
            _ => None,
        };
        JobQueue {
            job: job.id().0,
            user: job.user().0,
            arrival: job.ready_at().unwrap_or(spec.arrival),
            shuffle_heavy: heavy,
            maps,
            map_guide,
            reduces,
            reduces_released: released,
            // A plan whose quotas are used up while reduces are pending (a lost attempt) no longer binds.
            reduce_plan: info
                .and_then(|i| i.plan.clone())
                .filter(|p| self.variant.plans_reduces() && p.values().any(|&q| q > 0)),
        }
    }

    /// Every rack's free containers and its running tasks' `T_rem` (eq. 12, with the error knob).
    fn rack_releases(&self, now: Nanos, view: &ClusterView<'_>) -> Vec<RackRelease> {
        let topo = view.topology();
        let mut free = vec![0u32; topo.racks as usize];
        for h in view.hosts() {
            if h.alive() {
                free[h.id().rack as usize] += h.free().reduce;
            }
        }
        let mut remaining: Vec<Vec<Nanos>> = vec![Vec::new(); topo.racks as usize];
        for a in view.attempts() {
            let Some(job) = view.job(a.id().task.job) else {
                continue;
            };
            let spec = job.spec();
            let declared = match a.id().task.kind {
                TaskKind::Map => spec.maps.get(a.id().task.index as usize).map(|t| t.duration),
                TaskKind::Reduce => spec.reduces.get(a.id().task.index as usize).map(|t| t.duration),
            };
            let elapsed = now.saturating_sub(a.started());
            let est = t_rem(elapsed, a.progress(now, spec.map_count()))
                .or(declared.map(|d| d.saturating_sub(elapsed)))
                .unwrap_or(Nanos::ZERO);
            let est = self.perturb(est, a.id());
            if let Some(v) = remaining.get_mut(a.host().rack as usize) {
                v.push(est);
            }
        }
        remaining
            .into_iter()
            .enumerate()
            .map(|(r, rem)| RackRelease::new(r as u32, free[r], rem))
            .collect()
    }

    fn perturb(&self, est: Nanos, a: AttemptId) -> Nanos {
        let e = self.params.t_rem_error;
        if e == 0.0 {
            return est;
        }
        let key = (a.task.job.0 << 24)
            ^ (u64::from(a.task.index) << 2)
            ^ u64::from(a.task.kind == TaskKind::Reduce);
        let sign = if splitmix64(self.params.seed ^ splitmix64(key ^ u64::from(a.n))) & 1 == 0 {
            1.0
        } else {
            -1.0
        };
        Nanos::from_secs_f64(est.as_secs_f64() * (1.0 + sign * e))
    }

    /// Sec. IV-E/F at a job's last map: its best reduce schedule, if it has one.
    fn plan_reduces(&mut self, now: Nanos, view: &ClusterView<'_>, job: &JobState) {
        let topo = view.topology();
        let ocs = ocs_params(topo);
        let zone = self.jobs.get(&job.id()).and_then(|i| i.zone.clone());
        let schedules = possible_schedules(
            job.map_output_by_rack(),
            job.spec().reduce_count(),
            zone,
            topo.racks,
            &ocs,
        );
        let plan = if schedules.is_empty() {
            None
        } else {
            let racks = self.rack_releases(now, view);
            best_schedule(&schedules, &racks)
                .map(|(_, e)| e.racks.into_iter().collect::<BTreeMap<u32, u32>>())
        };
        if let Some(info) = self.jobs.get_mut(&job.id()) {
            info.plan = plan;
        }
    }
}

/// The OCS as the guidelines see it.
pub fn ocs_params(topo: &Topology) -> OcsParams {
    OcsParams {
        port_rate: topo.ocs_port_rate,
        reconfig_delay: topo.reconfig_delay,
        wavelengths: topo.ocs_ports_per_rack.max(1),
        elephant_threshold: topo.elephant_threshold,
    }
}

/// The cluster as the latency models see it.
pub fn cluster_shape(topo: &Topology) -> ClusterShape {
    ClusterShape {
        racks: topo.racks,
        slots_per_rack: topo.hosts_per_rack * topo.slots_per_host,
        eps_rack_rate: topo.uplink_rate,
        ocs: ocs_params(topo),
    }
}

/// A job's true characteristics, the base of its forecast.
pub fn truth_of(job: &Job) -> JobForecast {
    let mean = |ds: &mut dyn Iterator<Item = Nanos>, n: usize| {
        let total: u128 = ds.map(|d| u128::from(d.0)).sum();
        Nanos((total / n.max(1) as u128) as u64)
    };
    JobForecast {
        maps: job.map_count(),
        reduces: job.reduce_count(),
        shuffle: job.shuffle_bytes(),
        map_time: mean(&mut job.maps.iter().map(|m| m.duration), job.maps.len()),
        reduce_time: mean(&mut job.reduces.iter().map(|r| r.duration), job.reduces.len()),
    }
}

/// Whether a shuffle-heavy job's map offered a container on `rack` (not one of its map racks) could
/// instead start on its guideline now: a free map container on one of its `R_map` map racks, or, while it
/// has fewer, on a rack holding its input (unless `rack` holds some itself). Line 9 of Alg. 2 then
/// passes (see [`super::order`]). Looks at the hosts of at most `3·R_data` racks, stopping at the first
/// free container.
fn room_on_guide(view: &ClusterView<'_>, info: &JobInfo, r_map: u32, rack: u32) -> bool {
    if info.map_racks.contains(&rack) {
        return false;
    }
    let full = info.map_racks.len() >= r_map as usize;
    if !full && info.data_racks.contains(&rack) {
        return false;
    }
    let hosts = view.topology().hosts_per_rack;
    // Its input's racks count too while it has fewer than R_map map racks.
    let data_racks = (!full).then_some(&info.data_racks).into_iter().flatten();
    info.map_racks.iter().chain(data_racks).copied().any(|r| {
        (0..hosts).any(|h| {
            view.host(HostId::new(r, h))
                .is_some_and(|s| s.alive() && s.free().map > 0)
        })
    })
}

/// Replica hosts of `maps` blocks over `sets`: block `b`'s k-th replica on rack `set_k[b mod R]`, host
/// `(b / R + k) mod hosts_per_rack` (distinct hosts even where sets share racks).
pub fn replica_hosts(sets: &ReplicaSets, maps: u32, hosts_per_rack: u32) -> Vec<Vec<HostId>> {
    let r = sets.r_data().max(1);
    (0..maps)
        .map(|b| {
            let mut hosts: Vec<HostId> = Vec::with_capacity(3);
            for (k, rack) in sets.block_racks(b).into_iter().enumerate() {
                let h = HostId::new(rack, (b / r + k as u32) % hosts_per_rack.max(1));
                if !hosts.contains(&h) {
                    hosts.push(h);
                }
            }
            hosts
        })
        .collect()
}

impl TaskPolicy for CoScheduler {
    fn name(&self) -> &str {
        self.name
    }

    fn place_input(&mut self, topology: &Topology, job: &Job) -> Option<Vec<Vec<HostId>>> {
        if !self.variant.places_data() || topology.racks == 0 || job.maps.is_empty() {
            return None;
        }
        let (slack, seed) = (self.params.zone_slack, self.params.seed);
        let te = topology.elephant_threshold;
        let shape = cluster_shape(topology);
        let info = self.info(job);
        let wanted = match info.forecast {
            Some(f) => {
                let max_map = (topology.racks / 3).max(1);
                let g = LatencyMatrix::new(&f, &shape, max_map, topology.racks).guideline(slack);
                info.zone = g.as_ref().filter(|g| g.ocs).map(|g| g.r_red.clone());
                g.map_or(1, |g| g.r_map)
            }
            None => r_data_non_recurring(job.input_bytes(), SirEstimate::INITIAL, te),
        };
        let r_data = clamp_r_data(wanted, topology.racks, job.map_count());
        info.r_map = Some(r_data);
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ splitmix64(job.id.0));
        let sets = ReplicaSets::choose(r_data, topology.racks, &mut rng).ok()?;
        info.data_racks = sets.sets.iter().flatten().copied().collect();
        Some(replica_hosts(&sets, job.map_count(), topology.hosts_per_rack))
    }

    fn on_job_arrival(&mut self, _now: Nanos, view: &ClusterView<'_>, job: JobId) {
        if let Some(j) = view.job(job) {
            self.info(j.spec());
        }
    }

    fn on_free_slot(&mut self, _now: Nanos, view: &ClusterView<'_>, host: HostId) -> Option<TaskChoice> {
        let free = view.host(host)?.free();
        let (maps_fit, reduces_fit) = (free.map > 0, free.reduce > 0);
        let mut by_user: BTreeMap<UserId, Vec<&JobState>> = BTreeMap::new();
        for j in view.active_jobs() {
            if (maps_fit && j.has_runnable_map()) || (reduces_fit && j.has_runnable_reduce()) {
                by_user.entry(j.user()).or_default().push(j);
            }
        }
        let users = view.users();
        let mut order: Vec<UserId> = by_user.keys().copied().collect();
        order.sort_by_key(|u| (users.get(u).map_or(0, |s| s.running_tasks()), *u));
        for u in order {
            let queues: Vec<JobQueue> = by_user[&u]
                .iter()
                .map(|j| self.queue(view, j, host, maps_fit, reduces_fit))
                .collect();
            if let Some(p) = pick(host.rack, &[u.0], &queues) {
                let job = JobId(p.job);
                return Some(TaskChoice::Run(match p.task {
                    TaskRef::Map(m) => TaskId::map(job, m),
                    TaskRef::Reduce(r) => TaskId::reduce(job, r),
                }));
            }
        }
        None
    }

    fn on_task_started(&mut self, _now: Nanos, view: &ClusterView<'_>, attempt: AttemptId) {
        let Some(rack) = view.attempt(attempt).map(|a| a.host().rack) else {
            return;
        };
        let Some(info) = self.jobs.get_mut(&attempt.task.job) else {
            return;
        };
        match attempt.task.kind {
            TaskKind::Map => {
                info.map_racks.insert(rack);
            }
            TaskKind::Reduce => {
                if let Some(q) = info.plan.as_mut().and_then(|p| p.get_mut(&rack)) {
                    *q = q.saturating_sub(1);
                }
            }
        }
    }

    fn on_task_finished(&mut self, now: Nanos, view: &ClusterView<'_>, task: TaskId, _host: HostId) {
        if task.kind != TaskKind::Map || !self.variant.plans_reduces() {
            return;
        }
        let Some(job) = view.job(task.job) else { return };
        let spec = job.spec();
        if job.maps_done() == spec.map_count() && spec.reduce_count() > 0 {
            self.info(spec);
            self.plan_reduces(now, view, job);
        }
    }

    fn on_job_finished(&mut self, _now: Nanos, _view: &ClusterView<'_>, job: JobId) {
        self.jobs.remove(&job);
    }
}

#[cfg(test)]
mod tests {
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
        let topo = Topology::parse(text, Path::new("t.toml"), &[]).expect("topology");
        let config = EngineConfig {
            slow_start: 1.0,
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
        let topo = Topology::parse(TOPO, Path::new("t.toml"), &[]).expect("topology");
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
        let topo = Topology::parse(TOPO, Path::new("t.toml"), &[]).expect("topology");
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
        let topo = Topology::parse(&topo_text, Path::new("t.toml"), &[]).expect("topology");
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
}
