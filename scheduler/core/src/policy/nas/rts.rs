//! NAS's reduce task scheduling (Li, Shen & Sarker, CCGrid 2018):
//! CA-RTS (Sec. III-D, Alg. 3, eq. 4) when the rack's cross-rack network is
//! below *CongestionThreshold*, CR-RTS (Sec. III-E, Alg. 4) above it.
//!
//! CA-RTS, for the first user (fairness order) with a reduce ready:
//!
//! ```text
//! (1) Shuffle-heavy jobs whose ReduceNum is not reached
//! (2) Shuffle-medium jobs whose ReduceNum is not reached
//! (3) Shuffle-light jobs whose ReduceNum not reached
//! (4) Shuffle-light jobs whose ReduceNum is reached
//! (5) Shuffle-medium jobs whose ReduceNum is reached
//! (6) Shuffle-heavy jobs whose ReduceNum is reached
//! (a job marked delayed or with MapProgressRate = 100% goes first within a
//!  category, then the larger shuffle)
//! ```
//!
//! with `ReduceNum = TotalReduceNum · MapOutputPortion` (eq. 4) for the
//! requesting rack. Eq. 4 is a fraction; "not reached" means fewer reduces
//! on the rack than that fraction (so a rack with 5% of the output of a
//! 10-reduce job may take one). A job with no map output yet counts every
//! rack as holding `1/racks` of it.
//!
//! CR-RTS:
//!
//! ```text
//! 1: for user i in the user list do
//! 2:   if D_i^r < D^r then
//! 3:     if this user has shuffle-light jobs then
//! 4:       Select a reduce task from shuffle-light jobs, set D_i^r = 0
//! 5:     else
//! 6:       D_i^r++ and skip this user
//! 7:   else
//! 8:     Select a reduce task from any jobs
//! ```
//!
//! Skipped medium and heavy reduces are tagged *delayed* (CA-RTS serves them
//! first later). Line 8 leaves the job open; ocslab takes the one with the
//! smallest predicted shuffle (least added load on a congested network) and
//! resets the counter as MTS does. A user with no ready reduce is passed
//! without counting a skip.

use super::predictor::{self, ClassLimits, ShuffleClass};
use crate::policy::netaware::{JobKey, JobState, NetView, TaskPick, UserKey};
use crate::HostId;
use std::collections::{BTreeMap, BTreeSet};

/// Eq. 4: the preferred number of `job`'s reduces on `rack` (a fraction).
pub fn reduce_num(job: &JobState, racks: u32, rack: u32) -> f64 {
    let per = job.map_output_per_rack(racks);
    let total: u64 = per.iter().map(|b| b.0).sum();
    let portion = if total == 0 {
        1.0 / f64::from(racks.max(1))
    } else {
        per.get(rack as usize).map_or(0.0, |b| b.0 as f64 / total as f64)
    };
    f64::from(job.reduces_total) * portion
}

/// Whether `job` has at least `ReduceNum` reduces on `rack`.
pub fn reduce_num_reached(job: &JobState, racks: u32, rack: u32) -> bool {
    let placed = job.reduces_per_rack.get(rack as usize).copied().unwrap_or(0);
    f64::from(placed) >= reduce_num(job, racks, rack)
}

/// The reduce-side state: delayed tags and reduce skip counters.
#[derive(Clone, Debug, Default)]
pub struct Rts {
    delayed: BTreeSet<JobKey>,
    skips: BTreeMap<UserKey, u32>,
}

impl Rts {
    /// Whether CR-RTS has tagged the job's reduces delayed.
    pub fn is_delayed(&self, job: JobKey) -> bool {
        self.delayed.contains(&job)
    }

    /// A user's reduce skip counter.
    pub fn skips(&self, user: UserKey) -> u32 {
        self.skips.get(&user).copied().unwrap_or(0)
    }

    /// Forgets a finished job.
    pub fn forget(&mut self, job: JobKey) {
        self.delayed.remove(&job);
    }

    /// CA-RTS (Alg. 3) for a free slot on `host`.
    pub fn ca_rts(&mut self, view: &NetView, host: HostId, limits: &ClassLimits) -> Option<TaskPick> {
        for &user in &view.users {
            let ready: Vec<&JobState> = view.jobs_of(user).filter(|j| j.has_ready_reduce()).collect();
            let best = ready.iter().min_by_key(|j| {
                let class = predictor::class(j, limits);
                let reached = reduce_num_reached(j, view.racks, host.rack);
                let category = match (reached, class) {
                    (false, ShuffleClass::Heavy) => 1,
                    (false, ShuffleClass::Medium) => 2,
                    (false, ShuffleClass::Light) => 3,
                    (true, ShuffleClass::Light) => 4,
                    (true, ShuffleClass::Medium) => 5,
                    (true, ShuffleClass::Heavy) => 6,
                };
                let urgent = self.is_delayed(j.id) || j.maps_finished();
                (
                    category,
                    !urgent,
                    std::cmp::Reverse(predictor::shuffle_size(j)),
                    j.arrival,
                    j.id,
                )
            });
            if let Some(j) = best {
                self.delayed.remove(&j.id);
                return Some(TaskPick::Reduce { job: j.id });
            }
        }
        None
    }

    /// CR-RTS (Alg. 4) for a free slot on `host`'s congested rack.
    pub fn cr_rts(&mut self, view: &NetView, max_skips: u32, limits: &ClassLimits) -> Option<TaskPick> {
        for &user in &view.users {
            let ready: Vec<&JobState> = view.jobs_of(user).filter(|j| j.has_ready_reduce()).collect();
            if ready.is_empty() {
                continue;
            }
            let chosen = if self.skips(user) < max_skips {
                let light = ready
                    .iter()
                    .find(|j| predictor::class(j, limits) == ShuffleClass::Light);
                if light.is_none() {
                    self.delayed.extend(ready.iter().map(|j| j.id));
                    *self.skips.entry(user).or_insert(0) += 1;
                    continue;
                }
                light
            } else {
                ready
                    .iter()
                    .min_by_key(|j| (predictor::shuffle_size(j), j.arrival, j.id))
            };
            if let Some(j) = chosen {
                self.skips.insert(user, 0);
                return Some(TaskPick::Reduce { job: j.id });
            }
        }
        None
    }
}
