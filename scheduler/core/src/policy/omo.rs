//! OMO: optimizing the overlap of a job's map and reduce phases (J. Wang,
//! "Building efficient large-scale big data processing platforms", PhD
//! thesis, Northeastern University, 2017, Ch. 4; Sec. 4.3), on shared
//! (dynamically typed) slots, over Fair.
//!
//! - **Slot-release predictor** (Sec. 4.3.1): slots released `R_t` and
//!   *available* slots `a_t` (slots running maps, and slots running
//!   reduces of jobs whose maps are all done) are measured per window of
//!   `T_w`; their exponential moving averages are `F_o` (releases per
//!   second) and `A_o`; a future state with `A_e` available slots releases
//!   `F_e = F_o·A_e / A_o` per second (eq. 4.1).
//! - **Lazy start of reduces** (Sec. 4.3.2, Alg. 4.3.1): a job's reduces
//!   start when its remaining map time is no more than its predicted
//!   shuffle time. Remaining map time with `m'` pending maps is
//!   `m'/F_e + T_m` with `F_e = F_o·(A_o − r)/(A_o·K)` (eq. 4.3, K active
//!   jobs, r the job's reduces); the shuffle time of its last reduce is
//!   `T_s = d·m/(B·r)` (map output `d` per map as measured on its done maps,
//!   `B` the rate of the path the shuffle will take, see
//!   [`ShufflePath`]). Among several jobs, the one holding fewest slots.
//! - **Batch finish of maps** (Sec. 4.3.3, Alg. 4.3.2): among jobs whose
//!   reduces started, the one whose pending maps gain most from being
//!   finished together (`t_fair − t_batch`, eqs. 4.4-4.5) gets the slot.
//! - **Combination** (Sec. 4.3.4, Alg. 4.3.3): lazy start first, then
//!   batch finish, then Fair (fewest running tasks per user, then per job).
//!
//! Readings of the text (each tested below):
//! - Alg. 4.3.1 as written picks `m'_i = argmin_{x∈[m'_i, m_i]} α(x)`;
//!   α falls as x grows, so the argmin is always `x = m_i` and the test
//!   holds only before any map ran. The stated intent — start the reduces
//!   when the gap α between the end of the maps and the end of the
//!   shuffle would otherwise turn positive — is used: start when
//!   `α(m') = T_s − (m'/F_e + T_m) ≥ 0`.
//! - Alg. 4.3.2's `t_batch = t_fair · (K−1)/K · A_o/(A_o + r)` is below
//!   `t_fair` for every job, so its test is always true, also for jobs
//!   with no pending map. Batch finish is about the *tailing* maps: a job
//!   is a candidate when it has pending maps (`m' > 0`) and they fit in
//!   the slots released within one map time (`m' ≤ F_o·T_m`), i.e. they
//!   can be finished as one batch.
//! - Principle 4.3.1 (a job's reduces run consecutively once started): a
//!   job whose reduce phase started gets its remaining reduces before any
//!   other decision.
//! - A slot that nothing else would use starts a waiting job's reduces
//!   (work conserving), and a job whose maps are all done starts its
//!   reduces at once.
//! - Before the first window closes, `F_o` is releases so far over the
//!   time elapsed; with no release yet, lazy start waits (no estimate).
//! - Task times are slot times (slot taken to slot freed) of finished maps;
//!   before a job's first map ends, the model's mean map time stands in.

use super::pick::{map_for_host, reduce_for};
use super::{check_positive_duration, parse_params, PolicyError, TaskChoice, TaskPolicy};
use crate::engine::{AttemptId, ClusterView, JobState, Outcome, TaskRecord};
use crate::model::job::{JobId, TaskKind};
use crate::{Bps, HostId, Nanos, Topology};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};

/// Eq. 4.1's predictor: windows of releases and available slots, smoothed.
#[derive(Clone, Debug)]
pub struct ReleasePredictor {
    window: Nanos,
    alpha: f64,
    start: Nanos,
    released: u32,
    /// ∫ available slots dt over the current window (slot-seconds).
    area: f64,
    last: Nanos,
    last_available: f64,
    f_o: Option<f64>,
    a_o: Option<f64>,
    released_total: u64,
}

impl ReleasePredictor {
    /// Windows of `window`, EMA weight `alpha` for the newest window.
    pub fn new(window: Nanos, alpha: f64) -> ReleasePredictor {
        ReleasePredictor {
            window: Nanos(window.0.max(1)),
            alpha,
            start: Nanos::ZERO,
            released: 0,
            area: 0.0,
            last: Nanos::ZERO,
            last_available: 0.0,
            f_o: None,
            a_o: None,
            released_total: 0,
        }
    }

    /// Time passes to `now` with `available` slots from now on; windows
    /// that ended on the way are closed into the averages.
    pub fn observe(&mut self, now: Nanos, available: f64) {
        while now >= self.start + self.window {
            let end = self.start + self.window;
            self.area += self.last_available * end.saturating_sub(self.last).as_secs_f64();
            let w = self.window.as_secs_f64();
            let f = self.released as f64 / w;
            let a = self.area / w;
            self.f_o = Some(self.f_o.map_or(f, |o| self.alpha * f + (1.0 - self.alpha) * o));
            self.a_o = Some(self.a_o.map_or(a, |o| self.alpha * a + (1.0 - self.alpha) * o));
            self.start = end;
            self.last = end;
            self.released = 0;
            self.area = 0.0;
        }
        self.area += self.last_available * now.saturating_sub(self.last).as_secs_f64();
        self.last = now;
        self.last_available = available;
    }

    /// A slot was released at the time last observed.
    pub fn released(&mut self) {
        self.released += 1;
        self.released_total += 1;
    }

    /// `F_o`: releases per second (before the first window closes, the
    /// releases so far over the time elapsed; `None` with no release yet).
    pub fn f_o(&self) -> Option<f64> {
        self.f_o.or_else(|| {
            let t = self.last.as_secs_f64();
            (self.released_total > 0 && t > 0.0).then(|| self.released_total as f64 / t)
        })
    }

    /// `A_o`: available slots on average (before the first window closes,
    /// the current window's average so far).
    pub fn a_o(&self) -> Option<f64> {
        self.a_o.or_else(|| {
            let t = self.last.saturating_sub(self.start).as_secs_f64();
            (t > 0.0).then(|| self.area / t).or(Some(self.last_available))
        })
    }

    /// Eq. 4.1: `F_e = F_o·A_e / A_o`.
    pub fn estimate(&self, a_e: f64) -> Option<f64> {
        let (f, a) = (self.f_o()?, self.a_o()?);
        (a > 0.0).then(|| f * a_e / a)
    }
}

/// Which path a job's shuffle is predicted to take, and so the rate `B` of
/// `T_s = d·m/(B·r)`: a reduce's fetches are bounded by its NIC; across
/// racks over EPS, by its share of the rack uplink (`uplink / hosts per
/// rack`); over a circuit, by the OCS port. A job's shuffle is expected on
/// circuits when the fabric has OCS ports and its bytes per rack pair
/// reach the elephant threshold (the c-Through/Co-scheduler rule).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ShufflePath {
    /// Within racks or over the EPS core.
    Eps(Bps),
    /// Over OCS circuits.
    Ocs(Bps),
}

impl ShufflePath {
    /// The path a shuffle of `bytes` takes on `topology`.
    pub fn predict(topology: &Topology, bytes: f64) -> ShufflePath {
        let racks = topology.racks.max(1) as f64;
        let host = topology.host_rate;
        let per_pair = bytes / (racks * racks);
        if topology.ocs_ports_per_rack > 0
            && topology.ocs_port_rate.0 > 0
            && topology.racks > 1
            && per_pair >= topology.elephant_threshold.0 as f64
        {
            return ShufflePath::Ocs(Bps(host.0.min(topology.ocs_port_rate.0)));
        }
        if topology.racks > 1 {
            let share = topology.uplink_rate.0 / topology.hosts_per_rack.max(1) as u64;
            ShufflePath::Eps(Bps(host.0.min(share.max(1))))
        } else {
            ShufflePath::Eps(host)
        }
    }
    /// The rate `B`, bytes per second.
    pub fn bytes_per_sec(&self) -> f64 {
        match self {
            ShufflePath::Eps(b) | ShufflePath::Ocs(b) => b.bytes_per_sec(),
        }
    }
}

/// Eq. 4.3 and the stated intent of Alg. 4.3.1: the gap α between the end
/// of the maps and the end of the shuffle if the reduces start now, with
/// `pending` maps not yet started; start when α ≥ 0.
pub fn lazy_start_gap(t_s: f64, t_m: f64, pending: f64, f_o: f64, a_o: f64, k: f64, reduces: f64) -> f64 {
    let a_e = (a_o - reduces).max(1.0);
    let f_e = f_o * a_e / (a_o.max(1.0) * k.max(1.0));
    let remaining = if f_e > 0.0 { pending / f_e } else { f64::INFINITY };
    t_s - (remaining + t_m)
}

/// Eqs. 4.4-4.5: `(t_fair, t_batch)` for a job with `pending` maps.
pub fn batch_times(pending: f64, t_m: f64, f_o: f64, a_o: f64, k: f64, reduces: f64) -> (f64, f64) {
    let t_fair = k * pending / f_o + t_m;
    let s = f_o * (k - 1.0) / k * t_fair;
    let t_batch = s * a_o / (f_o * (a_o + reduces));
    (t_fair, t_batch)
}

/// The reading of Alg. 4.3.2's candidate test: pending maps exist and fit
/// in the slots released within one map time (`0 < m' ≤ F_o·T_m`), and
/// batching them beats Fair (`t_batch < t_fair`).
pub fn batch_candidate(pending: f64, t_m: f64, f_o: f64, a_o: f64, k: f64, reduces: f64) -> bool {
    if pending <= 0.0 || f_o <= 0.0 || pending > f_o * t_m {
        return false;
    }
    let (t_fair, t_batch) = batch_times(pending, t_m, f_o, a_o, k, reduces);
    t_batch < t_fair
}

/// OMO's parameters (`[scheduler_params.omo]`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OmoParams {
    /// Window `T_w` of the release predictor (default 10 s, as Fig. 4.9).
    #[serde(default = "window")]
    pub window: Nanos,
    /// EMA weight of the newest window (default 0.3).
    #[serde(default = "alpha")]
    pub alpha: f64,
}

fn window() -> Nanos {
    Nanos(10_000_000_000)
}
fn alpha() -> f64 {
    0.3
}

/// The OMO policy (or one of its two techniques alone).
#[derive(Debug)]
pub struct Omo {
    name: &'static str,
    lazy: bool,
    batch: bool,
    predictor: ReleasePredictor,
    /// Jobs whose reduce phase OMO started.
    started: BTreeSet<JobId>,
    /// Per job: finished maps and their summed slot seconds.
    map_stats: BTreeMap<JobId, (u32, f64)>,
    /// Asks the engine to offer every free slot again once a job's reduce
    /// phase started (Principle 4.3.1 fills them), which it cannot see.
    wake: Option<Nanos>,
}

impl Omo {
    /// OMO with lazy start and/or batch finish.
    pub fn new(name: &'static str, lazy: bool, batch: bool, params: OmoParams) -> Omo {
        Omo {
            name,
            lazy,
            batch,
            predictor: ReleasePredictor::new(params.window, params.alpha),
            started: BTreeSet::new(),
            map_stats: BTreeMap::new(),
            wake: None,
        }
    }

    fn build(
        name: &'static str,
        lazy: bool,
        batch: bool,
        params: &toml::Table,
    ) -> Result<Box<dyn TaskPolicy>, PolicyError> {
        let p: OmoParams = parse_params(name, params)?;
        if !(p.alpha.is_finite() && p.alpha > 0.0 && p.alpha <= 1.0) {
            return Err(PolicyError::Params {
                policy: name.into(),
                message: format!("`alpha` must be in (0, 1] (got {})", p.alpha),
            });
        }
        check_positive_duration(name, "window", p.window, "10s")?;
        Ok(Box::new(Omo::new(name, lazy, batch, p)))
    }

    /// OMO: lazy start and batch finish.
    pub fn from_params(params: &toml::Table) -> Result<Box<dyn TaskPolicy>, PolicyError> {
        Omo::build("omo", true, true, params)
    }
    /// Lazy start of reduces alone (reduces otherwise by Fair).
    pub fn lazy_from_params(params: &toml::Table) -> Result<Box<dyn TaskPolicy>, PolicyError> {
        Omo::build("omo-lazy", true, false, params)
    }
    /// Batch finish of maps alone (reduces start at the engine's slow-start).
    pub fn batch_from_params(params: &toml::Table) -> Result<Box<dyn TaskPolicy>, PolicyError> {
        Omo::build("omo-batch", false, true, params)
    }

    /// The predictor (for reports and tests).
    pub fn predictor(&self) -> &ReleasePredictor {
        &self.predictor
    }

    /// Whether `job`'s reduce phase has started.
    fn reduce_phase(&self, job: &JobState) -> bool {
        if self.lazy {
            self.started.contains(&job.id())
        } else {
            job.reduces_runnable()
        }
    }

    fn observe(&mut self, now: Nanos, view: &ClusterView<'_>) {
        let available: u32 = view
            .active_jobs()
            .map(|j| {
                let maps_done = j.maps_done() == j.spec().map_count();
                j.running_maps() + if maps_done { j.running_reduces() } else { 0 }
            })
            .sum();
        self.predictor.observe(now, available as f64);
    }

    /// Mean map slot time of `job` (observed, else its model's mean compute).
    fn t_m(&self, job: &JobState) -> f64 {
        let times = self.map_stats.get(&job.id()).copied().unwrap_or_default();
        if times.0 > 0 {
            times.1 / times.0 as f64
        } else {
            let maps = &job.spec().maps;
            maps.iter().map(|m| m.duration.as_secs_f64()).sum::<f64>() / maps.len().max(1) as f64
        }
    }

    /// Predicted shuffle time of `job`'s last reduce, `T_s = d·m/(B·r)`.
    fn t_s(view: &ClusterView<'_>, job: &JobState) -> f64 {
        let spec = job.spec();
        let maps = spec.map_count() as f64;
        let d = if job.maps_done() > 0 {
            job.map_output_done().0 as f64 / job.maps_done() as f64
        } else {
            spec.shuffle_bytes().0 as f64 / maps.max(1.0)
        };
        let total = d * maps;
        let b = ShufflePath::predict(view.topology(), total).bytes_per_sec();
        if b <= 0.0 || spec.reduce_count() == 0 {
            return 0.0;
        }
        total / (b * spec.reduce_count() as f64)
    }

    /// Alg. 4.3.1 (stated intent): the job whose reduces should start now.
    fn lazy_start(&self, view: &ClusterView<'_>) -> Option<JobId> {
        let k = view.active_job_count() as f64;
        let f_o = self.predictor.f_o();
        let a_o = self.predictor.a_o();
        view.active_jobs()
            .filter(|j| !self.started.contains(&j.id()) && reduce_for(view, j).is_some())
            .filter(|j| {
                if j.maps_done() == j.spec().map_count() {
                    return true;
                }
                let (Some(f_o), Some(a_o)) = (f_o, a_o) else {
                    return false;
                };
                let t_m = self.t_m(j);
                let gap = lazy_start_gap(
                    Omo::t_s(view, j),
                    t_m,
                    j.pending_maps().len() as f64,
                    f_o,
                    a_o,
                    k,
                    j.spec().reduce_count() as f64,
                );
                gap >= 0.0
            })
            .min_by_key(|j| (j.running_tasks(), j.ready_at(), j.id()))
            .map(|j| j.id())
    }

    /// Alg. 4.3.2 (with `m' > 0` and the tail condition): the job whose
    /// pending maps the slot should serve.
    fn batch_finish(&self, view: &ClusterView<'_>) -> Option<JobId> {
        let k = view.active_job_count() as f64;
        let (f_o, a_o) = (self.predictor.f_o()?, self.predictor.a_o()?);
        if f_o <= 0.0 {
            return None;
        }
        let mut best: Option<(f64, JobId)> = None;
        for j in view.active_jobs() {
            let pending = j.pending_maps().len() as f64;
            if !self.reduce_phase(j) || pending == 0.0 {
                continue;
            }
            let t_m = self.t_m(j);
            let reduces = j.spec().reduce_count() as f64;
            if !batch_candidate(pending, t_m, f_o, a_o, k, reduces) {
                continue;
            }
            let (t_fair, t_batch) = batch_times(pending, t_m, f_o, a_o, k, reduces);
            let gain = t_fair - t_batch;
            if best.is_none_or(|(g, _)| gain > g) {
                best = Some((gain, j.id()));
            }
        }
        best.map(|(_, j)| j)
    }
}

impl TaskPolicy for Omo {
    fn name(&self) -> &str {
        self.name
    }

    fn on_free_slot(&mut self, now: Nanos, view: &ClusterView<'_>, host: HostId) -> Option<TaskChoice> {
        self.observe(now, view);
        let free = view.host(host)?.free();
        // Principle 4.3.1: a started reduce phase runs its reduces on.
        if free.reduce > 0 {
            let next = view
                .active_jobs()
                .filter(|j| self.reduce_phase(j))
                .filter_map(|j| reduce_for(view, j).map(|t| (j.running_tasks(), j.ready_at(), t)))
                .min();
            if let Some((_, _, t)) = next {
                return Some(TaskChoice::Run(t));
            }
            if self.lazy {
                if let Some(j) = self.lazy_start(view) {
                    let t = view.job(j).and_then(|j| reduce_for(view, j))?;
                    self.started.insert(j);
                    self.wake = Some(now + Nanos(1));
                    return Some(TaskChoice::Run(t));
                }
            }
        }
        if free.map > 0 && self.batch {
            if let Some(t) = self
                .batch_finish(view)
                .and_then(|j| map_for_host(view.job(j)?, host))
            {
                return Some(TaskChoice::Run(t));
            }
        }
        // Fair: users by running tasks, then jobs by running tasks.
        if free.map > 0 {
            let mut jobs: Vec<&JobState> = view.active_jobs().filter(|j| j.has_runnable_map()).collect();
            let users = view.users();
            jobs.sort_by_key(|j| {
                let u = users.get(&j.user()).map_or(0, |u| u.running_tasks());
                (u, j.user(), j.running_tasks(), j.ready_at(), j.id())
            });
            if let Some(t) = jobs.into_iter().find_map(|j| map_for_host(j, host)) {
                return Some(TaskChoice::Run(t));
            }
        }
        // Nothing else would use the slot: start a waiting reduce phase.
        if free.reduce > 0 {
            let j = view
                .active_jobs()
                .filter(|j| reduce_for(view, j).is_some())
                .min_by_key(|j| (j.running_tasks(), j.ready_at(), j.id()))?;
            let t = reduce_for(view, j)?;
            self.started.insert(j.id());
            self.wake = Some(now + Nanos(1));
            return Some(TaskChoice::Run(t));
        }
        None
    }

    fn on_task_started(&mut self, now: Nanos, view: &ClusterView<'_>, _attempt: AttemptId) {
        self.observe(now, view);
    }

    fn on_attempt_ended(&mut self, now: Nanos, view: &ClusterView<'_>, rec: &TaskRecord) {
        self.observe(now, view);
        self.predictor.released();
        if rec.kind == TaskKind::Map && rec.outcome == Outcome::Finished {
            let e = self.map_stats.entry(rec.attempt.task.job).or_default();
            e.0 += 1;
            e.1 += rec.ended.saturating_sub(rec.started).as_secs_f64();
        }
    }

    fn on_task_finished(
        &mut self,
        now: Nanos,
        view: &ClusterView<'_>,
        task: crate::model::job::TaskId,
        _host: HostId,
    ) {
        // A job whose maps are all done starts its reduces at once: offer every free slot.
        if task.kind == TaskKind::Map
            && view
                .job(task.job)
                .is_some_and(|j| j.maps_done() == j.spec().map_count())
        {
            self.wake = Some(now + Nanos(1));
        }
    }

    fn on_job_finished(&mut self, _now: Nanos, _view: &ClusterView<'_>, job: JobId) {
        self.started.remove(&job);
        self.map_stats.remove(&job);
    }

    fn next_wakeup(&self) -> Option<Nanos> {
        self.wake
    }
}
