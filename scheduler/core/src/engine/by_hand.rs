//! [`ClusterState`]: the state a [`ClusterView`] shows, built by hand, so a
//! task policy's decision can be tested on a cluster set up in a few lines,
//! with no engine loop and no driver. It changes state through the same
//! methods the engine uses (a job arrives and becomes runnable, an attempt
//! starts, computes and finishes), so what a policy sees is what it would
//! see under the engine at that point.

use super::config::EngineConfig;
use super::event::{AttemptId, LinkLoad};
use super::records::{Outcome, TaskRecord};
use super::view::Cluster;
use super::{check_config, ClusterView, EngineError};
use crate::model::job::{validate_jobs, Job, JobError, JobId, TaskId, TaskKind};
use crate::{Bytes, HostId, Nanos, Topology};

/// A cluster state set up by hand (see the module docs).
#[derive(Debug)]
pub struct ClusterState {
    c: Cluster,
}

impl ClusterState {
    /// An idle cluster on `topo`, with `config`'s slots and host speeds.
    pub fn new(topo: &Topology, config: EngineConfig) -> Result<ClusterState, EngineError> {
        check_config(topo, &config)?;
        Ok(ClusterState {
            c: Cluster::new(topo, config),
        })
    }

    /// Job `job` arrives and becomes runnable at its arrival time: its maps
    /// pending, its reduces too once slow-start allows. A job with parents
    /// is refused (their output would have to be placed first).
    pub fn submit(&mut self, job: Job) -> Result<JobId, EngineError> {
        let id = job.id;
        if !job.parents.is_empty() {
            return Err(EngineError::Job(JobError {
                job: id,
                field: "parents".into(),
                message: "a cluster built by hand takes jobs without parents".into(),
            }));
        }
        if self.c.jobs.contains_key(&id) {
            return Err(EngineError::Job(JobError {
                job: id,
                field: "id".into(),
                message: "was already submitted".into(),
            }));
        }
        validate_jobs(std::slice::from_ref(&job), &self.c.topo)?;
        let ready = job.arrival;
        self.c.admit(job);
        self.c.activate(id, ready);
        self.c.check_slow_start(id);
        Ok(id)
    }

    /// An attempt of `task` starts on `host` at `now`, as the engine starts
    /// a policy's choice; refused where the engine would refuse it (the task
    /// not runnable, no free slot of its kind).
    pub fn start(&mut self, now: Nanos, task: TaskId, host: HostId) -> Result<AttemptId, EngineError> {
        let refused = |message: String| EngineError::Config {
            field: "task".into(),
            message,
        };
        if !self.c.topo.host_ids().any(|h| h == host) {
            return Err(refused(format!("{host} is not a host of the topology")));
        }
        let hi = self.c.topo.host_index(host);
        if !self.c.acceptable(hi, task, false) {
            return Err(refused(format!("{task} cannot start on {host} now")));
        }
        self.c
            .start_attempt(now, hi, task, false)
            .map(|s| s.id)
            .ok_or_else(|| refused(format!("{task} belongs to no submitted job")))
    }

    /// Attempt `attempt` begins its compute at `now` (a map's input read,
    /// a reduce's fetches are taken as done); returns the compute's
    /// duration at its host's speed. Refused if the attempt is not live.
    pub fn compute(&mut self, now: Nanos, attempt: AttemptId) -> Result<Nanos, EngineError> {
        self.c
            .begin_compute(now, attempt)
            .map(|(_, duration)| duration)
            .ok_or_else(|| not_live(attempt))
    }

    /// Attempt `attempt` finishes its task at `now` with `output` (`None`:
    /// the model's map output), as the engine finishes one: its slot is
    /// freed, the task's other attempts are killed, the job's counters move
    /// (reduces may become runnable), and the job is done with its last
    /// task. Returns the records of the attempts that ended (this one, then
    /// the killed ones), which the engine hands to
    /// [`crate::policy::TaskPolicy::on_attempt_ended`]. Refused if the
    /// attempt is not live.
    pub fn finish(
        &mut self,
        now: Nanos,
        attempt: AttemptId,
        output: Option<Bytes>,
    ) -> Result<Vec<TaskRecord>, EngineError> {
        let done = self
            .c
            .complete_task(now, attempt, output)
            .ok_or_else(|| not_live(attempt))?;
        let mut ended = Vec::new();
        let released = self.c.release_attempt(attempt, Outcome::Finished);
        ended.extend(released.and_then(|r| r.record(now, Outcome::Finished)));
        for s in done.siblings {
            let released = self.c.release_attempt(s, Outcome::Killed);
            ended.extend(released.and_then(|r| r.record(now, Outcome::Killed)));
        }
        let task = attempt.task;
        let job_done = match task.kind {
            TaskKind::Map => {
                let map = self.c.record_map_done(task, done.host, done.output);
                self.c.check_slow_start(task.job);
                map.is_some_and(|m| m.all_maps && m.no_reduces)
            }
            TaskKind::Reduce => self.c.record_reduce_done(task.job).unwrap_or(false),
        };
        if job_done {
            self.c.finish_job(now, task.job);
        }
        Ok(ended)
    }

    /// A load sample taken at `at`, as the engine takes one from its
    /// driver: each link's latest load.
    pub fn sample_loads(&mut self, at: Nanos, loads: impl IntoIterator<Item = LinkLoad>) {
        self.c.record_loads(at, loads);
    }

    /// What a policy sees.
    pub fn view(&self) -> ClusterView<'_> {
        ClusterView { c: &self.c }
    }
}

/// The error for an attempt that is not live.
fn not_live(attempt: AttemptId) -> EngineError {
    EngineError::Config {
        field: "attempt".into(),
        message: format!("{attempt:?} is not a live attempt"),
    }
}
