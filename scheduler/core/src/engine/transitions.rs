//! What happens to the cluster state when an attempt computes, finishes or
//! ends, and when a job is done: the part of each transition that only
//! touches [`Cluster`]. The engine adds what is its own (records, flows,
//! commands, policy callbacks); [`super::ClusterState`] uses them alone, so a
//! cluster built by hand moves exactly as the engine would move it.

use super::event::AttemptId;
use super::fetch::DoneOn;
use super::jobs::{add_pending_map, runnable};
use super::records::{Outcome, TaskRecord};
use super::state::{AttemptState, JobStatus, Locality, Phase, TaskDone, TaskStatus};
use super::view::Cluster;
use crate::model::job::{JobId, TaskId, TaskKind};
use crate::{Bytes, HostId, Nanos};

/// A task done, as [`Cluster::complete_task`] reports it.
pub(crate) struct Completed {
    /// Where the winning attempt ran.
    pub(crate) host: HostId,
    /// Its locality (maps).
    pub(crate) locality: Option<Locality>,
    /// Its output.
    pub(crate) output: Bytes,
    /// The task's other live attempts, to kill.
    pub(crate) siblings: Vec<AttemptId>,
}

/// An attempt ended, as [`Cluster::release_attempt`] reports it.
pub(crate) struct Released {
    /// The attempt as it was.
    pub(crate) attempt: AttemptState,
    /// Its host's index, and whether that host has a free slot now.
    pub(crate) host_index: usize,
    /// Whether its host has a free slot now.
    pub(crate) slot_free: bool,
    /// The task went back to pending (no other attempt of it lives).
    pub(crate) requeued: bool,
    /// The bytes it moved (a finished map: its output; otherwise what it
    /// fetched); `None` if its job is unknown.
    pub(crate) bytes: Option<Bytes>,
}

impl Released {
    /// The attempt's record, ended at `now` with `outcome`, as policies get
    /// it ([`crate::policy::TaskPolicy::on_attempt_ended`]); `None` if its
    /// job is unknown.
    pub(crate) fn record(&self, now: Nanos, outcome: Outcome) -> Option<TaskRecord> {
        let att = &self.attempt;
        Some(TaskRecord {
            attempt: att.id,
            kind: att.id.task.kind,
            host: att.host,
            started: att.started,
            compute_started: att.compute_started,
            ended: now,
            outcome,
            locality: att.locality,
            speculative: att.speculative,
            bytes: self.bytes?,
        })
    }
}

/// A map done, as [`Cluster::record_map_done`] reports it.
pub(crate) struct MapDone {
    /// Every map of the job is done.
    pub(crate) all_maps: bool,
    /// The job has no reduces.
    pub(crate) no_reduces: bool,
    /// The live reduce attempts that fetch from it.
    pub(crate) readers: Vec<AttemptId>,
    /// Its host's index among the job's map hosts ([`DoneOn::ix`]).
    pub(crate) host_ix: u32,
}

impl Cluster {
    /// Attempt `id` begins its compute at `now`; returns its host and the
    /// compute's duration at the host's speed.
    pub(crate) fn begin_compute(&mut self, now: Nanos, id: AttemptId) -> Option<(HostId, Nanos)> {
        let job = self.jobs.get(&id.task.job)?;
        let base = match id.task.kind {
            TaskKind::Map => job.spec.maps[id.task.index as usize].duration,
            TaskKind::Reduce => job.spec.reduces[id.task.index as usize].duration,
        };
        let att = self.attempts.get_mut(&id)?;
        let speed = self.hosts[self.topo.host_index(att.host)].speed;
        let duration = if speed == 1.0 {
            base
        } else {
            Nanos((base.0 as f64 / speed).round() as u64)
        };
        att.phase = Phase::Computing { since: now, duration };
        att.compute_started = Some(now);
        Some((att.host, duration))
    }

    /// Attempt `id`'s task is done at `now` with `output` (`None`: the
    /// model's map output; reduces output nothing). `None` if the attempt
    /// was killed or lost meanwhile.
    pub(crate) fn complete_task(
        &mut self,
        now: Nanos,
        id: AttemptId,
        output: Option<Bytes>,
    ) -> Option<Completed> {
        let att = self.attempts.get(&id)?;
        let (host, locality) = (att.host, att.locality);
        let task = id.task;
        let job = self.jobs.get_mut(&task.job)?;
        let model_output = match task.kind {
            TaskKind::Map => job.spec.map_output(task.index),
            TaskKind::Reduce => Bytes(0),
        };
        let output = output.unwrap_or(model_output);
        let ts = match task.kind {
            TaskKind::Map => &mut job.maps[task.index as usize],
            TaskKind::Reduce => &mut job.reduces[task.index as usize],
        };
        ts.status = TaskStatus::Done;
        ts.done = Some(TaskDone {
            host,
            at: now,
            output,
        });
        let siblings = ts.live.iter().copied().filter(|a| *a != id).collect();
        Some(Completed {
            host,
            locality,
            output,
            siblings,
        })
    }

    /// Ends live attempt `id` with `outcome`: frees its slot, and puts its
    /// task back to pending if no other attempt of it lives and it is not
    /// done. `None` if the attempt is not live.
    pub(crate) fn release_attempt(&mut self, id: AttemptId, outcome: Outcome) -> Option<Released> {
        let attempt = self.attempts.remove(&id)?;
        let host_index = self.topo.host_index(attempt.host);
        let h = &mut self.hosts[host_index];
        h.attempts.remove(&id);
        let task = id.task;
        match task.kind {
            TaskKind::Map => h.running_maps -= 1,
            TaskKind::Reduce => h.running_reduces -= 1,
        }
        let slot_free = h.free().any();
        let fetched = attempt.fetch.as_ref().map_or(Bytes(0), |f| f.bytes_fetched);
        let mut released = Released {
            attempt,
            host_index,
            slot_free,
            requeued: false,
            bytes: None,
        };
        let Some(job) = self.jobs.get_mut(&task.job) else {
            return Some(released);
        };
        let u = self.users.entry(job.spec.user).or_default();
        match task.kind {
            TaskKind::Map => {
                job.running_maps -= 1;
                u.running_maps -= 1;
            }
            TaskKind::Reduce => {
                job.running_reduces -= 1;
                u.running_reduces -= 1;
            }
        }
        let ts = match task.kind {
            TaskKind::Map => &mut job.maps[task.index as usize],
            TaskKind::Reduce => &mut job.reduces[task.index as usize],
        };
        ts.live.retain(|a| *a != id);
        released.bytes = Some(match (task.kind, ts.done) {
            (TaskKind::Map, Some(d)) if outcome == Outcome::Finished => d.output,
            _ => fetched,
        });
        if ts.live.is_empty() && ts.status == TaskStatus::Running {
            ts.status = TaskStatus::Pending;
            match task.kind {
                TaskKind::Map => {
                    add_pending_map(job, task.index);
                    if runnable(job, TaskKind::Map) {
                        self.runnable_maps += 1;
                    }
                }
                TaskKind::Reduce => {
                    job.pending_reduces.insert(task.index);
                    job.touch();
                    if runnable(job, TaskKind::Reduce) {
                        self.runnable_reduces += 1;
                    }
                }
            }
            released.requeued = true;
        }
        Some(released)
    }

    /// Map `task`, done on `host` with `output`: the job's map counters and
    /// each reduce's partition of it.
    pub(crate) fn record_map_done(&mut self, task: TaskId, host: HostId, output: Bytes) -> Option<MapDone> {
        let job = self.jobs.get_mut(&task.job)?;
        let m = task.index;
        job.touch();
        job.maps_done += 1;
        job.input_done += job.spec.maps[m as usize].input;
        job.output_done += output;
        *job.output_by_rack.entry(host.rack).or_default() += output;
        *job.output_by_host.entry(host).or_default() += output;
        let next = job.done_on.len() as u32;
        let on = job.done_on.entry(host).or_insert_with(|| DoneOn {
            ix: next,
            maps: Vec::new(),
        });
        on.maps.push(m);
        let host_ix = on.ix;
        for r in 0..job.spec.reduce_count() {
            let p = job.spec.partition_of_output(m, r, output);
            job.output_for_reduce[r as usize] += p;
        }
        Some(MapDone {
            all_maps: job.maps_done == job.spec.map_count(),
            no_reduces: job.spec.reduces.is_empty(),
            readers: job.live_reduces().collect(),
            host_ix,
        })
    }

    /// A reduce of `job` is done; returns whether all its reduces are.
    pub(crate) fn record_reduce_done(&mut self, job: JobId) -> Option<bool> {
        let job = self.jobs.get_mut(&job)?;
        job.reduces_done += 1;
        Some(job.reduces_done == job.spec.reduce_count())
    }

    /// Job `id` is done at `now`: it leaves the active jobs and its user's
    /// count. False if the job is unknown.
    pub(crate) fn finish_job(&mut self, now: Nanos, id: JobId) -> bool {
        let Some(job) = self.jobs.get_mut(&id) else {
            return false;
        };
        job.status = JobStatus::Done;
        job.finished_at = Some(now);
        if let Some(ready) = job.ready_at {
            self.active.remove(&(ready, id));
        }
        let user = job.spec.user;
        if let Some(u) = self.users.get_mut(&user) {
            u.active_jobs = u.active_jobs.saturating_sub(1);
        }
        true
    }
}
