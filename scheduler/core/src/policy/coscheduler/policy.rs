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
    /// A job's last map finished since the engine last asked: its reduces
    /// are offered from now on ([`TaskPolicy::released_work`]).
    reduces_released: bool,
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
            reduces_released: false,
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
            reduce_plan: self.binding_plan(job.id()).cloned(),
        }
    }

    /// `job`'s best schedule while it binds its reduces: reduces still to
    /// place per rack. A plan whose quotas are used up while reduces are
    /// pending (a lost attempt) no longer binds.
    fn binding_plan(&self, job: JobId) -> Option<&BTreeMap<u32, u32>> {
        self.jobs
            .get(&job)
            .and_then(|i| i.plan.as_ref())
            .filter(|p| self.variant.plans_reduces() && p.values().any(|&q| q > 0))
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
        if task.kind != TaskKind::Map {
            return;
        }
        let Some(job) = view.job(task.job) else { return };
        let spec = job.spec();
        if job.maps_done() < spec.map_count() || spec.reduce_count() == 0 {
            return;
        }
        // IV-A: the reduces are offered from the last map on, on any free slot.
        self.reduces_released = true;
        if self.variant.plans_reduces() {
            self.info(spec);
            self.plan_reduces(now, view, job);
        }
    }

    fn released_work(&mut self) -> bool {
        std::mem::take(&mut self.reduces_released)
    }

    fn reduce_quotas(&self, job: JobId) -> Option<BTreeMap<u32, u32>> {
        self.binding_plan(job).cloned()
    }

    fn on_job_finished(&mut self, _now: Nanos, _view: &ClusterView<'_>, job: JobId) {
        self.jobs.remove(&job);
    }
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
