//! Small choices shared by the slot-level policies (FRESH, OMO, ESPLASH):
//! which map or reduce of a chosen job to run on a host, how much slot time
//! a job has used, and how many slots the cluster has.

use crate::engine::{ClusterView, JobState};
use crate::model::job::{JobId, TaskId, TaskKind};
use crate::{HostId, Nanos};
use std::collections::BTreeMap;

/// A pending map of `job` for `host`: one whose block is on the host, else
/// in its rack, else the lowest index (Hadoop's locality preference).
pub fn map_for_host(job: &JobState, host: HostId) -> Option<TaskId> {
    if !job.has_runnable_map() {
        return None;
    }
    let m = job
        .pending_maps_on_host(host)
        .next()
        .or_else(|| job.pending_maps_on_rack(host.rack).next())
        .or_else(|| job.pending_maps().first().copied())?;
    Some(TaskId::map(job.id(), m))
}

/// The lowest pending reduce of `job`, if the engine would start one now
/// (slow-start gate and ramp-up guard).
pub fn reduce_for(view: &ClusterView<'_>, job: &JobState) -> Option<TaskId> {
    if !view.can_start_reduce(job) {
        return None;
    }
    job.pending_reduces()
        .first()
        .map(|&r| TaskId::reduce(job.id(), r))
}

/// A task of `kind` of `job` for `host`.
pub fn task_of_kind(view: &ClusterView<'_>, job: &JobState, host: HostId, kind: TaskKind) -> Option<TaskId> {
    match kind {
        TaskKind::Map => map_for_host(job, host),
        TaskKind::Reduce => reduce_for(view, job),
    }
}

/// Slots of alive hosts (under shared slots, the slots any task may take;
/// under a fixed split, map plus reduce slots).
pub fn total_slots(view: &ClusterView<'_>) -> u32 {
    view.hosts()
        .iter()
        .filter(|h| h.alive())
        .map(|h| {
            let s = h.slots();
            if matches!(view.config().slots, crate::engine::SlotConfig::Shared) {
                s.map
            } else {
                s.map + s.reduce
            }
        })
        .sum()
}

/// Live map attempts in the cluster.
pub fn running_maps(view: &ClusterView<'_>) -> u32 {
    view.hosts().iter().map(|h| h.running_maps()).sum()
}

/// Slot time per job: seconds of ended attempts plus, for running ones,
/// the count and the sum of their start times, so that the slot time at
/// any `now` is `ended + count·now − starts` (eq. 3.1's numerator).
#[derive(Clone, Debug, Default)]
pub struct SlotTime {
    per_job: BTreeMap<JobId, (f64, u32, f64)>,
}

impl SlotTime {
    /// An attempt of `job` took a slot at `start`.
    pub fn started(&mut self, job: JobId, start: Nanos) {
        let e = self.per_job.entry(job).or_default();
        e.1 += 1;
        e.2 += start.as_secs_f64();
    }
    /// An attempt of `job` that took its slot at `start` ended at `end`.
    pub fn ended(&mut self, job: JobId, start: Nanos, end: Nanos) {
        let e = self.per_job.entry(job).or_default();
        e.0 += end.saturating_sub(start).as_secs_f64();
        e.1 = e.1.saturating_sub(1);
        e.2 -= start.as_secs_f64();
    }
    /// Slot-seconds `job` has used by `now`, running attempts included.
    pub fn used(&self, job: JobId, now: Nanos) -> f64 {
        self.per_job.get(&job).map_or(0.0, |(done, n, starts)| {
            done + (*n as f64 * now.as_secs_f64() - starts).max(0.0)
        })
    }
    /// Forgets a finished job.
    pub fn forget(&mut self, job: JobId) {
        self.per_job.remove(&job);
    }
}
