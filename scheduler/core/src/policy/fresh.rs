//! FRESH: fair and efficient slot configuration and scheduling (J. Wang,
//! "Building efficient large-scale big data processing platforms", PhD
//! thesis, Northeastern University, 2017, Ch. 3; Sec. 3.3).
//!
//! A Hadoop 1 cluster fixes how many slots run maps and how many run
//! reduces. FRESH either picks the best fixed split from job profiles
//! before the run (*static*, Alg. 3.3.1) or lets every released slot change
//! type (*dynamic*, Algs. 3.3.2-3.3.4): the slot becomes a map slot when the
//! expected number of map slots (remaining map vs reduce workload, with a
//! look-ahead for the sudden jump when a job enters its reduce phase,
//! Theorem 3.3.1) exceeds the map slots in use, and then goes to the job in
//! that phase with the least *overall* resource use (eq. 3.1; its fairness
//! over jobs is Jain's index, [`overall_fairness`]). At most `k` jobs are
//! in their map phase and at most `k` in their reduce phase (admission
//! control, Sec. 3.2); a job's reduces start when its map phase is done.
//!
//! Readings of the text (each tested below):
//! - Alg. 3.3.1 lines 13-14 deduct `w_m(u)` from the other jobs; every job
//!   in M runs at the same rate, so what they all did in that step is
//!   `W_u` before line 12 overwrote it, and the step lasted `W_u / c_m`.
//!   That is what is deducted here. A configuration file sets slots per
//!   node, so the splits enumerated are per host (1..slots−1 map slots).
//! - Alg. 3.3.3 line 12 compares the slot count `s'_m` with the ratio
//!   `θ_exp`; the ratio `s'_m / S` is compared instead.
//! - Alg. 3.3.3 line 7 removes `w'_m(a)·k` of map work; with fewer than `k`
//!   jobs in their map phase, `|M|` of them progress, so `|M|` is used.
//! - Alg. 3.3.4 divides by `now − T_i`, zero when a job was just admitted;
//!   such a job's use counts as 0. Ties go to the job with fewer running
//!   tasks, then the earlier admitted (Fair's rule).
//! - A released slot configured for a phase with no runnable task serves
//!   the other phase (the slot would otherwise idle).
//! - Task times are slot times (slot taken to slot freed), as Hadoop
//!   measures them; before a job's first task of a kind ends, its profile
//!   (mean compute time, plus for a reduce its share of the shuffle at the
//!   host rate) stands in, as the thesis uses job profiles.

use super::pick::{running_maps, task_of_kind, total_slots, SlotTime};
use super::{parse_params, PolicyError, TaskChoice, TaskPolicy};
use crate::engine::{ClusterView, JobState, Outcome, TaskRecord};
use crate::model::job::{Job, JobId, TaskId, TaskKind};
use crate::{HostId, Nanos, Topology};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// What Alg. 3.3.1 knows of a job ahead of the run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct JobProfile {
    /// Map tasks `n_m`.
    pub maps: u32,
    /// Reduce tasks `n_r`.
    pub reduces: u32,
    /// Mean map task time `t̄_m`, seconds.
    pub map_time: f64,
    /// Mean reduce task time `t̄_r`, seconds.
    pub reduce_time: f64,
}

impl JobProfile {
    /// A job's profile from its model: mean compute times, a reduce's
    /// share of the shuffle sent at the host rate added to its time.
    pub fn of(job: &Job, topology: &Topology) -> JobProfile {
        let mean = |xs: &mut dyn Iterator<Item = Nanos>, n: usize| {
            if n == 0 {
                0.0
            } else {
                xs.map(|d| d.as_secs_f64()).sum::<f64>() / n as f64
            }
        };
        let map_time = mean(&mut job.maps.iter().map(|m| m.duration), job.maps.len());
        let mut reduce_time = mean(&mut job.reduces.iter().map(|r| r.duration), job.reduces.len());
        let rate = topology.host_rate.bytes_per_sec();
        if !job.reduces.is_empty() && rate > 0.0 {
            reduce_time += job.shuffle_bytes().0 as f64 / job.reduces.len() as f64 / rate;
        }
        JobProfile {
            maps: job.map_count(),
            reduces: job.reduce_count(),
            map_time,
            reduce_time,
        }
    }
    /// Map workload `w_m = n_m · t̄_m`.
    pub fn map_work(&self) -> f64 {
        self.maps as f64 * self.map_time
    }
    /// Reduce workload `w_r = n_r · t̄_r`.
    pub fn reduce_work(&self) -> f64 {
        self.reduces as f64 * self.reduce_time
    }
}

/// Alg. 3.3.1's makespan model: jobs in order, at most `k` in their map
/// phase sharing `s_m` slots evenly and at most `k` in their reduce phase
/// sharing `s_r`, a job moving to its reduce phase (or the queue R') when
/// its map work is done.
pub fn model_makespan(jobs: &[JobProfile], s_m: f64, s_r: f64, k: usize) -> f64 {
    let k = k.max(1);
    let mut w: Vec<f64> = jobs.iter().map(|j| j.map_work()).collect();
    let mut m: Vec<usize> = (0..jobs.len().min(k)).collect();
    let mut next = m.len();
    let mut r: Vec<usize> = Vec::new();
    let mut r_wait: VecDeque<usize> = VecDeque::new();
    let mut t = 0.0;
    while !m.is_empty() || !r.is_empty() {
        let c_m = s_m / m.len().max(1) as f64;
        let c_r = s_r / r.len().max(1) as f64;
        let argmin = |set: &[usize], w: &[f64]| {
            set.iter()
                .copied()
                .min_by(|a, b| w[*a].total_cmp(&w[*b]).then(a.cmp(b)))
        };
        let tu = argmin(&m, &w).map_or(
            f64::INFINITY,
            |u| if c_m > 0.0 { w[u] / c_m } else { f64::INFINITY },
        );
        let tv = argmin(&r, &w).map_or(
            f64::INFINITY,
            |v| if c_r > 0.0 { w[v] / c_r } else { f64::INFINITY },
        );
        if !tu.is_finite() && !tv.is_finite() {
            return f64::INFINITY; // a phase without slots never ends
        }
        if tu < tv {
            let Some(u) = argmin(&m, &w) else { break };
            let done = w[u];
            m.retain(|&i| i != u);
            t += tu;
            for &i in &m {
                w[i] -= done;
            }
            for &i in &r {
                w[i] -= tu * c_r;
            }
            w[u] = jobs[u].reduce_work();
            if next < jobs.len() {
                m.push(next);
                next += 1;
            }
            if r.len() < k {
                r.push(u);
            } else {
                r_wait.push_back(u);
            }
        } else {
            let Some(v) = argmin(&r, &w) else { break };
            let done = w[v];
            r.retain(|&i| i != v);
            t += tv;
            for &i in &r {
                w[i] -= done;
            }
            for &i in &m {
                w[i] -= tv * c_m;
            }
            if let Some(x) = r_wait.pop_front() {
                r.push(x);
            }
        }
    }
    t
}

/// Alg. 3.3.1's answer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StaticSplit {
    /// Map slots per host (the rest of its slots run reduces).
    pub map_slots_per_host: u32,
    /// The modelled makespan, seconds.
    pub makespan: f64,
}

/// Alg. 3.3.1: the per-host split (1..slots−1 map slots) with the least
/// modelled makespan; ties go to fewer map slots. `None` if a host has
/// fewer than 2 slots (no split exists).
pub fn best_static_split(
    jobs: &[JobProfile],
    hosts: u32,
    slots_per_host: u32,
    k: usize,
) -> Option<StaticSplit> {
    (1..slots_per_host)
        .map(|m| StaticSplit {
            map_slots_per_host: m,
            makespan: model_makespan(jobs, (m * hosts) as f64, ((slots_per_host - m) * hosts) as f64, k),
        })
        .min_by(|a, b| a.makespan.total_cmp(&b.makespan))
}

/// Eq. 3.1: the resources a job has used, `r_i(T)`: slot-seconds of its
/// tasks (finished and running) over the time since it started.
pub fn resource_use(slot_seconds: f64, now: f64, start: f64) -> f64 {
    if now > start {
        slot_seconds / (now - start)
    } else {
        0.0
    }
}

/// Jain's index `(Σx)² / (n·Σx²)` in `[1/n, 1]` (1 for an empty or all-zero set).
pub fn jain_index(values: &[f64]) -> f64 {
    let sum: f64 = values.iter().sum();
    let sq: f64 = values.iter().map(|x| x * x).sum();
    if values.is_empty() || sq == 0.0 {
        1.0
    } else {
        sum * sum / (values.len() as f64 * sq)
    }
}

/// Overall fairness `F(T)` (Sec. 3.3.2.1): Jain's index of the jobs' eq. 3.1 uses.
pub fn overall_fairness(uses: &[f64]) -> f64 {
    jain_index(uses)
}

/// Theorem 3.3.1: reduce slots released while job `a` finishes its
/// remaining map work `w_a` holding `m_a` map slots, one reduce finishing
/// every `r` seconds, a share `θ` of released slots going to maps, split
/// over `k` jobs. `r = ∞` (no reduce has finished yet) releases none.
pub fn reduce_slots_released(theta: f64, r: f64, k: f64, w_a: f64, m_a: f64) -> f64 {
    if !(r.is_finite() && r > 0.0) || w_a <= 0.0 {
        return 0.0;
    }
    let c = theta / (2.0 * r * k.max(1.0));
    let x = if c > 0.0 {
        ((m_a * m_a + 4.0 * c * w_a).sqrt() - m_a) / (2.0 * c)
    } else if m_a > 0.0 {
        w_a / m_a
    } else {
        return 0.0;
    };
    x / r
}

/// Alg. 3.3.3's inputs, in seconds and slots.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SlotOutlook {
    /// Remaining map workload of the jobs in their map phase, `RW_m`.
    pub rw_m: f64,
    /// Remaining reduce workload of the jobs past their map phase, `RW_r`.
    pub rw_r: f64,
    /// Slots in the cluster, `S`.
    pub slots: f64,
    /// Slots running maps now, `s_m`.
    pub map_slots: f64,
    /// Jobs in their map phase, `|M|`.
    pub jobs_in_map: f64,
    /// Of them, the job closest to its reduce phase (least `w'_m`): its
    /// map progress (fraction of maps done), remaining map work `w'_m(a)`,
    /// map slots held `m_a`, and reduce work `w_r(a)`.
    pub next_to_reduce: Option<(f64, f64, f64, f64)>,
    /// Map work of the job next admitted to its map phase, `w_m(b)` (0: none).
    pub next_map_work: f64,
    /// Seconds between reduce completions, `r` (∞: none yet).
    pub reduce_interval: f64,
}

/// Alg. 3.3.3 (`CalExpSm`): the expected number of map slots, with the
/// thresholds `τ1` (progress) and `τ2` (relative deviation).
pub fn expected_map_slots(o: &SlotOutlook, tau1: f64, tau2: f64) -> f64 {
    let ratio = |m: f64, r: f64| if m + r > 0.0 { m / (m + r) } else { 1.0 };
    let theta_cur = ratio(o.rw_m, o.rw_r);
    let Some((progress, w_a, m_a, wr_a)) = o.next_to_reduce else {
        return theta_cur * o.slots;
    };
    if progress < tau1 {
        return theta_cur * o.slots;
    }
    let rw_m = (o.rw_m - w_a * o.jobs_in_map.max(1.0)).max(0.0) + o.next_map_work;
    let rw_r = o.rw_r + wr_a;
    let theta_exp = ratio(rw_m, rw_r);
    let eta = reduce_slots_released(theta_cur, o.reduce_interval, o.jobs_in_map, w_a, m_a);
    let s_m = o.map_slots + theta_cur * eta;
    let dev = if theta_exp > 0.0 {
        (s_m / o.slots.max(1.0) - theta_exp).abs() / theta_exp
    } else {
        f64::INFINITY
    };
    if dev > tau2 {
        theta_exp * o.slots
    } else {
        theta_cur * o.slots
    }
}

/// Static (Alg. 3.3.1 + Fair) or dynamic (Algs. 3.3.2-3.3.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// A fixed split chosen before the run from job profiles.
    Static,
    /// Every released slot is configured anew.
    Dynamic,
}

/// FRESH's parameters (`[scheduler_params.fresh]`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FreshParams {
    /// Admission limit `k`: jobs in their map phase, and in their reduce
    /// phase, at once (default: no limit).
    #[serde(default)]
    pub k: Option<usize>,
    /// Progress threshold `τ1` of Alg. 3.3.3 (thesis: 0.8).
    #[serde(default = "tau1")]
    pub tau1: f64,
    /// Deviation threshold `τ2` of Alg. 3.3.3 (thesis: 0.6).
    #[serde(default = "tau2")]
    pub tau2: f64,
    /// Static mode only: map slots per host instead of Alg. 3.3.1's choice.
    #[serde(default)]
    pub map_slots_per_host: Option<u32>,
}

fn tau1() -> f64 {
    0.8
}
fn tau2() -> f64 {
    0.6
}

/// Where a job is in FRESH's admission control.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Queued,
    Map,
    ReduceWait,
    Reduce,
}

/// The FRESH policy.
#[derive(Debug)]
pub struct Fresh {
    name: &'static str,
    mode: Mode,
    params: FreshParams,
    profiles: BTreeMap<JobId, JobProfile>,
    hosts: u32,
    slots_per_host: u32,
    split: Option<u32>,
    stage: BTreeMap<JobId, Stage>,
    queue: VecDeque<JobId>,
    in_map: BTreeSet<(Nanos, JobId)>,
    in_reduce: BTreeSet<JobId>,
    reduce_wait: VecDeque<JobId>,
    admitted: BTreeMap<JobId, Nanos>,
    /// Per (job, kind): finished attempts and their summed slot seconds.
    times: BTreeMap<(JobId, TaskKind), (u32, f64)>,
    used: SlotTime,
    last_reduce_end: Option<Nanos>,
    reduce_interval: Option<f64>,
    /// Asks the engine to offer every free slot again: FRESH's own gates
    /// (admission, map phase done) opened, which the engine cannot see.
    wake: Option<Nanos>,
}

impl Fresh {
    /// A FRESH policy in `mode`.
    pub fn new(mode: Mode, params: FreshParams) -> Fresh {
        Fresh {
            name: match mode {
                Mode::Static => "fresh-static",
                Mode::Dynamic => "fresh",
            },
            mode,
            params,
            profiles: BTreeMap::new(),
            hosts: 0,
            slots_per_host: 0,
            split: None,
            stage: BTreeMap::new(),
            queue: VecDeque::new(),
            in_map: BTreeSet::new(),
            in_reduce: BTreeSet::new(),
            reduce_wait: VecDeque::new(),
            admitted: BTreeMap::new(),
            times: BTreeMap::new(),
            used: SlotTime::default(),
            last_reduce_end: None,
            reduce_interval: None,
            wake: None,
        }
    }

    /// Dynamic FRESH from its parameter table.
    pub fn dynamic_from_params(params: &toml::Table) -> Result<Box<dyn TaskPolicy>, PolicyError> {
        let p: FreshParams = parse_params("fresh", params)?;
        check(&p, "fresh")?;
        if p.map_slots_per_host.is_some() {
            return Err(PolicyError::Params {
                policy: "fresh".into(),
                message: "`map_slots_per_host` is for fresh-static; dynamic FRESH configures every slot"
                    .into(),
            });
        }
        Ok(Box::new(Fresh::new(Mode::Dynamic, p)))
    }

    /// Static FRESH from its parameter table.
    pub fn static_from_params(params: &toml::Table) -> Result<Box<dyn TaskPolicy>, PolicyError> {
        let p: FreshParams = parse_params("fresh-static", params)?;
        check(&p, "fresh-static")?;
        Ok(Box::new(Fresh::new(Mode::Static, p)))
    }

    /// The split static mode runs with (map slots per host), once known.
    pub fn static_split(&self) -> Option<u32> {
        self.split
    }

    fn k(&self) -> usize {
        self.params.k.unwrap_or(usize::MAX)
    }

    /// Admits queued jobs while fewer than `k` are in their map phase.
    fn admit(&mut self, now: Nanos) {
        while self.in_map.len() < self.k() {
            let Some(j) = self.queue.pop_front() else { break };
            self.in_map.insert((now, j));
            self.admitted.insert(j, now);
            self.stage.insert(j, Stage::Map);
            self.wake = Some(now + Nanos(1));
        }
    }

    fn leave_map(&mut self, job: JobId) {
        let Some(at) = self.admitted.get(&job).copied() else {
            return;
        };
        if !self.in_map.remove(&(at, job)) {
            return;
        }
        if self.in_reduce.len() < self.k() {
            self.in_reduce.insert(job);
            self.stage.insert(job, Stage::Reduce);
        } else {
            self.reduce_wait.push_back(job);
            self.stage.insert(job, Stage::ReduceWait);
        }
    }

    /// Mean slot time of a finished task of `kind` of `job`, or the profile's.
    fn mean_time(&self, job: JobId, kind: TaskKind) -> f64 {
        match self.times.get(&(job, kind)) {
            Some(&(n, sum)) if n > 0 => sum / n as f64,
            _ => self.profiles.get(&job).map_or(0.0, |p| match kind {
                TaskKind::Map => p.map_time,
                TaskKind::Reduce => p.reduce_time,
            }),
        }
    }

    fn remaining_work(&self, job: &JobState, kind: TaskKind) -> f64 {
        let left = match kind {
            TaskKind::Map => job.spec().map_count() - job.maps_done(),
            TaskKind::Reduce => job.spec().reduce_count() - job.reduces_done(),
        };
        left as f64 * self.mean_time(job.id(), kind)
    }

    /// Alg. 3.3.3's inputs from the view.
    fn outlook(&self, view: &ClusterView<'_>) -> SlotOutlook {
        let map_jobs: Vec<&JobState> = self.in_map.iter().filter_map(|(_, j)| view.job(*j)).collect();
        let rw_m: f64 = map_jobs
            .iter()
            .map(|j| self.remaining_work(j, TaskKind::Map))
            .sum();
        let rw_r: f64 = self
            .in_reduce
            .iter()
            .chain(self.reduce_wait.iter())
            .filter_map(|j| view.job(*j))
            .map(|j| self.remaining_work(j, TaskKind::Reduce))
            .sum();
        let next_to_reduce = map_jobs
            .iter()
            .map(|j| (self.remaining_work(j, TaskKind::Map), *j))
            .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.id().cmp(&b.1.id())))
            .map(|(w, j)| {
                let wr = j.spec().reduce_count() as f64 * self.mean_time(j.id(), TaskKind::Reduce);
                (j.map_progress(), w, j.running_maps() as f64, wr)
            });
        let next_map_work = self
            .queue
            .front()
            .and_then(|j| self.profiles.get(j))
            .map_or(0.0, |p| p.map_work());
        SlotOutlook {
            rw_m,
            rw_r,
            slots: total_slots(view) as f64,
            map_slots: running_maps(view) as f64,
            jobs_in_map: map_jobs.len() as f64,
            next_to_reduce,
            next_map_work,
            reduce_interval: self.reduce_interval.unwrap_or(f64::INFINITY),
        }
    }

    /// Candidate jobs for a slot of `kind`: M for maps (and any job past
    /// its map phase that lost map outputs), R for reduces.
    fn candidates<'a>(&self, view: &ClusterView<'a>, kind: TaskKind) -> Vec<&'a JobState> {
        let ids: Vec<JobId> = match kind {
            TaskKind::Map => {
                let mut v: Vec<JobId> = self.in_map.iter().map(|(_, j)| *j).collect();
                v.extend(self.in_reduce.iter().chain(self.reduce_wait.iter()).copied());
                v
            }
            TaskKind::Reduce => self.in_reduce.iter().copied().collect(),
        };
        ids.into_iter().filter_map(|j| view.job(j)).collect()
    }

    /// Alg. 3.3.4 (dynamic) or Fair within the phase (static): the job
    /// whose task of `kind` runs on `host`.
    fn assign(&self, now: Nanos, view: &ClusterView<'_>, host: HostId, kind: TaskKind) -> Option<TaskId> {
        let mut jobs = self.candidates(view, kind);
        let t = now.as_secs_f64();
        let running = |j: &JobState| match kind {
            TaskKind::Map => j.running_maps(),
            TaskKind::Reduce => j.running_reduces(),
        };
        match self.mode {
            Mode::Dynamic => jobs.sort_by(|a, b| {
                let use_of = |j: &JobState| {
                    let start = self.admitted.get(&j.id()).map_or(t, |s| s.as_secs_f64());
                    resource_use(self.used.used(j.id(), now), t, start)
                };
                use_of(a)
                    .total_cmp(&use_of(b))
                    .then(a.running_tasks().cmp(&b.running_tasks()))
                    .then(self.admitted.get(&a.id()).cmp(&self.admitted.get(&b.id())))
                    .then(a.id().cmp(&b.id()))
            }),
            Mode::Static => jobs.sort_by_key(|j| (running(j), self.admitted.get(&j.id()).copied(), j.id())),
        }
        // Lost map outputs of jobs past their map phase come first.
        if kind == TaskKind::Map {
            jobs.sort_by_key(|j| self.stage.get(&j.id()) == Some(&Stage::Map));
        }
        jobs.into_iter().find_map(|j| task_of_kind(view, j, host, kind))
    }

    fn ensure_split(&mut self) {
        if self.split.is_some() || self.mode != Mode::Static {
            return;
        }
        let profiles: Vec<JobProfile> = self.profiles.values().copied().collect();
        self.split = self.params.map_slots_per_host.or_else(|| {
            let k = self.params.k.unwrap_or(profiles.len().max(1));
            best_static_split(&profiles, self.hosts, self.slots_per_host, k).map(|s| s.map_slots_per_host)
        });
    }
}

fn check(p: &FreshParams, policy: &str) -> Result<(), PolicyError> {
    let bad = |message: String| {
        Err(PolicyError::Params {
            policy: policy.into(),
            message,
        })
    };
    if p.k == Some(0) {
        return bad("`k` must be at least 1 (jobs per phase at once)".into());
    }
    for (name, v) in [("tau1", p.tau1), ("tau2", p.tau2)] {
        if !(v.is_finite() && v >= 0.0) {
            return bad(format!("`{name}` must be a number >= 0 (got {v})"));
        }
    }
    if p.map_slots_per_host == Some(0) {
        return bad("`map_slots_per_host` must be at least 1".into());
    }
    Ok(())
}

impl TaskPolicy for Fresh {
    fn name(&self) -> &str {
        self.name
    }

    fn place_input(&mut self, topology: &Topology, job: &Job) -> Option<Vec<Vec<HostId>>> {
        self.hosts = topology.hosts() as u32;
        self.slots_per_host = topology.slots_per_host;
        self.profiles.insert(job.id, JobProfile::of(job, topology));
        None
    }

    fn on_free_slot(&mut self, now: Nanos, view: &ClusterView<'_>, host: HostId) -> Option<TaskChoice> {
        self.admit(now);
        let h = view.host(host)?;
        let free = h.free();
        let order = match self.mode {
            Mode::Static => {
                self.ensure_split();
                let m = self
                    .split
                    .unwrap_or(h.slots().map / 2)
                    .min(self.slots_per_host.max(1));
                let reduce_slots = self.slots_per_host.saturating_sub(m);
                let mut kinds = Vec::new();
                if free.map > 0 && h.running_maps() < m {
                    kinds.push(TaskKind::Map);
                }
                if free.reduce > 0 && h.running_reduces() < reduce_slots {
                    kinds.push(TaskKind::Reduce);
                }
                kinds
            }
            Mode::Dynamic => {
                let exp = expected_map_slots(&self.outlook(view), self.params.tau1, self.params.tau2);
                let first = if exp > running_maps(view) as f64 {
                    TaskKind::Map
                } else {
                    TaskKind::Reduce
                };
                let second = match first {
                    TaskKind::Map => TaskKind::Reduce,
                    TaskKind::Reduce => TaskKind::Map,
                };
                [first, second].into_iter().filter(|k| free.fits(*k)).collect()
            }
        };
        order
            .into_iter()
            .find_map(|kind| self.assign(now, view, host, kind))
            .map(TaskChoice::Run)
    }

    fn on_job_arrival(&mut self, now: Nanos, _view: &ClusterView<'_>, job: JobId) {
        self.stage.insert(job, Stage::Queued);
        self.queue.push_back(job);
        self.admit(now);
    }

    fn on_task_started(&mut self, now: Nanos, _view: &ClusterView<'_>, attempt: crate::engine::AttemptId) {
        self.used.started(attempt.task.job, now);
    }

    fn on_attempt_ended(&mut self, now: Nanos, _view: &ClusterView<'_>, rec: &TaskRecord) {
        let job = rec.attempt.task.job;
        self.used.ended(job, rec.started, rec.ended);
        if rec.outcome == Outcome::Finished {
            let e = self.times.entry((job, rec.kind)).or_default();
            e.0 += 1;
            e.1 += rec.ended.saturating_sub(rec.started).as_secs_f64();
            if rec.kind == TaskKind::Reduce {
                if let Some(last) = self.last_reduce_end {
                    let gap = now.saturating_sub(last).as_secs_f64();
                    self.reduce_interval = Some(match self.reduce_interval {
                        Some(r) => 0.8 * r + 0.2 * gap,
                        None => gap,
                    });
                }
                self.last_reduce_end = Some(now);
            }
        }
    }

    fn on_task_finished(&mut self, now: Nanos, view: &ClusterView<'_>, task: TaskId, _host: HostId) {
        if task.kind == TaskKind::Map
            && self.stage.get(&task.job) == Some(&Stage::Map)
            && view
                .job(task.job)
                .is_some_and(|j| j.maps_done() == j.spec().map_count())
        {
            self.leave_map(task.job);
            self.wake = Some(now + Nanos(1));
            self.admit(now);
        }
    }

    fn on_job_finished(&mut self, now: Nanos, _view: &ClusterView<'_>, job: JobId) {
        if let Some(at) = self.admitted.get(&job).copied() {
            self.in_map.remove(&(at, job));
        }
        self.in_reduce.remove(&job);
        self.reduce_wait.retain(|j| *j != job);
        self.queue.retain(|j| *j != job);
        self.stage.remove(&job);
        self.used.forget(job);
        while self.in_reduce.len() < self.k() {
            let Some(j) = self.reduce_wait.pop_front() else {
                break;
            };
            self.in_reduce.insert(j);
            self.stage.insert(j, Stage::Reduce);
            self.wake = Some(now + Nanos(1));
        }
        self.admit(now);
    }

    fn next_wakeup(&self) -> Option<Nanos> {
        self.wake
    }
}
