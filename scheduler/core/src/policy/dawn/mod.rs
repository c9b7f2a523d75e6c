//! Dawn, the network-adaptive scheduler for jobs with dependencies (Wang,
//! Zhou, Zhang & Jiang, "Network-adaptive scheduling of data-intensive
//! parallel jobs with dependencies in clusters", Sec. III): the online plan
//! ([`plan`], eqs. 1-5) and the adaptive task scheduler (Alg. 1, Sec. III-C):
//!
//! ```text
//! 1: if A heartbeat received from rack i indicating free resource then
//! 2:   Update online plan
//! 3:   if NetworkSaturated is True then
//! 4-7:   per job select the preferred rack with the smallest traffic;
//!        sort jobs in increasing order of that traffic
//! 8-10:  remove jobs from the sorted list until one's preferred rack is i
//! 11: else
//! 12-18: the same with the highest traffic, in decreasing order
//! 20:  Add the latest removed job into the selected jobs set
//! 21-25: add the other jobs whose preferred racks contain i with the same traffic
//! 26-30: one job: return it; several: decide by node-level data
//! ```
//!
//! So when the network is saturated a reduce-stage job is drawn to `max_r`
//! (least traffic now) and when it is not, to `dep_r` (aggregating output
//! for its children while bandwidth is spare).
//!
//! Decisions (the paper leaves these open; each has a test):
//! - *NetworkSaturated* for a heartbeat from rack i: i's cross-rack
//!   utilization exceeds the threshold (0.8; the paper gives no value).
//! - No job's selected rack is i (the loop of lines 8-10 runs out): by
//!   default ([`Unpreferred::FairOrder`], `dawn`) the slot is not left
//!   idle; it goes to the fairness order's first user with a runnable task,
//!   that user's earliest such job, as the Fair scheduler Dawn extends would
//!   do. [`Unpreferred::Idle`] (`dawn-strict`) reads Alg. 1 literally: no
//!   job is returned and the slot waits for a later heartbeat, so a job
//!   runs only on its preferred racks (the aggregation of Sec. III-B.1 at
//!   the price of idle slots). That heartbeat is a wake-up
//!   [`DawnConfig::heartbeat`] after a declined offer that some job could
//!   have taken: the engine offers slots on events, and the event that
//!   gives a job its plan (its last map ending) may free a slot only on a
//!   rack the job does not prefer.
//! - Lines 26-30's node-level choice "adopts the same principle": among the
//!   tied jobs, the one whose task on this host moves the fewest (saturated)
//!   or most (not saturated) bytes across nodes — map stage: its pending
//!   input with no replica on the host; reduce stage: its intermediate data
//!   on other hosts. Remaining ties: job arrival.
//! - Only MapReduce jobs: the multi-stage ("general", Tez) jobs of Sec.
//!   III-B.3 are not modelled.

pub mod plan;
#[cfg(test)]
mod tests;

use crate::policy::netaware::{JobState, NetView, SlotKind, TaskPick};
use crate::{HostId, Nanos};
use plan::{JobPlan, Stage};

/// What a free slot on rack i gets when no job's selected rack is i
/// (Alg. 1's loop of lines 8-10 runs out; the paper does not say).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Unpreferred {
    /// The fairness order's first user with a runnable task, its earliest
    /// such job (work-conserving; `dawn`).
    #[default]
    FairOrder,
    /// Nothing: the slot stays free until a heartbeat finds a job that
    /// prefers the rack (Alg. 1 as written; `dawn-strict`).
    Idle,
}

/// Dawn's knobs.
#[derive(Clone, Debug, PartialEq)]
pub struct DawnConfig {
    /// Cross-rack utilization above which the network is saturated (0.8).
    pub saturation_threshold: f64,
    /// What a slot no job prefers gets.
    pub unpreferred: Unpreferred,
    /// Under [`Unpreferred::Idle`], how long after declining an offer that
    /// a job could have taken the next heartbeat comes (Hadoop 1's
    /// JobTracker asks for at least 3 s).
    pub heartbeat: Nanos,
}

impl Default for DawnConfig {
    fn default() -> Self {
        DawnConfig {
            saturation_threshold: 0.8,
            unpreferred: Unpreferred::FairOrder,
            heartbeat: Nanos::from_millis(3000),
        }
    }
}

/// The Dawn policy (the plan is recomputed from the view at every
/// heartbeat, Alg. 1 line 2; all it keeps is when to be offered slots again).
#[derive(Clone, Debug, Default)]
pub struct Dawn {
    config: DawnConfig,
    wakeup: Option<Nanos>,
}

impl Dawn {
    /// Dawn with these knobs.
    pub fn new(config: DawnConfig) -> Dawn {
        Dawn { config, wakeup: None }
    }

    /// When free slots should be offered again: a heartbeat after the last
    /// offer [`Unpreferred::Idle`] declined while a job had a plan.
    pub fn next_wakeup(&self) -> Option<Nanos> {
        self.wakeup
    }

    /// Its knobs.
    pub fn config(&self) -> &DawnConfig {
        &self.config
    }

    /// Alg. 1: the task for a free `slot` on `host`, or `None`.
    pub fn offer(&mut self, view: &NetView, host: HostId, slot: SlotKind) -> Option<TaskPick> {
        let fits = |p: &JobPlan| match p.stage {
            Stage::Map => slot.takes_map(),
            Stage::Reduce => slot.takes_reduce(),
        };
        let plans: Vec<(&JobState, JobPlan)> = view
            .jobs
            .iter()
            .filter_map(|j| plan::plan(view, j).map(|p| (j, p)))
            .filter(|(_, p)| fits(p))
            .collect();
        let saturated = view.utilization(host.rack) > self.config.saturation_threshold;
        let chosen = self
            .select(&plans, host, saturated)
            .or_else(|| match self.config.unpreferred {
                Unpreferred::FairOrder => fallback(view, &plans),
                Unpreferred::Idle => {
                    if !plans.is_empty() {
                        self.wakeup = Some(view.now + self.config.heartbeat);
                    }
                    None
                }
            })?;
        task_of(chosen, &plans, host)
    }

    /// Lines 3-30: the selected job, if any job's selected rack is `host`'s.
    fn select<'a>(
        &self,
        plans: &'a [(&'a JobState, JobPlan)],
        host: HostId,
        saturated: bool,
    ) -> Option<&'a JobState> {
        let selected = |p: &JobPlan| if saturated { p.lowest() } else { p.highest() };
        let mut sorted: Vec<&(&JobState, JobPlan)> = plans.iter().collect();
        sorted.sort_by_key(|(j, p)| {
            let t = selected(p).traffic;
            (if saturated { t } else { u64::MAX - t }, j.arrival, j.id)
        });
        let (first, first_plan) = sorted.iter().find(|(_, p)| selected(p).rack == host.rack)?;
        let traffic = selected(first_plan).traffic;
        let set: Vec<&JobState> = std::iter::once(*first)
            .chain(
                sorted
                    .iter()
                    .filter(|(j, p)| {
                        j.id != first.id && p.preferred().any(|q| q.rack == host.rack && q.traffic == traffic)
                    })
                    .map(|(j, _)| *j),
            )
            .collect();
        if set.len() == 1 {
            return Some(first);
        }
        let node = |j: &&JobState| {
            let t = node_traffic(j, host);
            (if saturated { t } else { u64::MAX - t }, j.arrival, j.id)
        };
        set.into_iter().min_by_key(node)
    }
}

/// Cross-node bytes a task of `job` on `host` would cause (the node-level
/// tie-break of lines 26-30). In the reduce stage, `job.map_output_on_host`
/// must be the bytes on `host`.
pub fn node_traffic(job: &JobState, host: HostId) -> u64 {
    if !job.pending_maps.is_empty() {
        job.pending_maps
            .iter()
            .filter(|m| !m.replicas.contains(&host))
            .map(|m| m.input.0)
            .sum()
    } else {
        let total: u64 = job.map_output_per_rack.iter().map(|b| b.0).sum();
        total.saturating_sub(job.map_output_on_host.0)
    }
}

/// When no job's selected rack is the free one: the fairness order's first
/// user with a runnable job, its earliest such job.
fn fallback<'a>(view: &NetView, plans: &'a [(&'a JobState, JobPlan)]) -> Option<&'a JobState> {
    view.users
        .iter()
        .find_map(|&u| plans.iter().map(|(j, _)| *j).find(|j| j.user == u))
}

/// The task `job` runs on `host`: the closest pending map, or a reduce.
fn task_of(job: &JobState, plans: &[(&JobState, JobPlan)], host: HostId) -> Option<TaskPick> {
    let (_, p) = plans.iter().find(|(j, _)| j.id == job.id)?;
    match p.stage {
        Stage::Map => job.closest_map(host).map(|(m, _)| TaskPick::Map {
            job: job.id,
            index: m.index,
        }),
        Stage::Reduce => Some(TaskPick::Reduce { job: job.id }),
    }
}
