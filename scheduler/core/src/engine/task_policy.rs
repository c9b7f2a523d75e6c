//! [`TaskPolicy`]: what the engine asks a task-placement policy, and
//! [`TaskChoice`], its answer. The engine defines the contract it calls;
//! the policies (`crate::policy`) implement it.

use super::{AttemptId, Circuit, ClusterView, TaskRecord};
use crate::model::job::{Job, JobId, TaskId};
use crate::{HostId, Nanos, Topology};
use std::collections::BTreeMap;

/// A policy's answer to an offer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskChoice {
    /// Run this pending task (a map of an active job, or a reduce whose
    /// job passed slow-start).
    Run(TaskId),
    /// Start another attempt of this running task (speculation); the first
    /// attempt to finish wins and the others are killed.
    Speculate(TaskId),
}

/// A task-placement policy. Every hook receives the current time and a
/// view; only [`TaskPolicy::on_free_slot`] returns a decision.
pub trait TaskPolicy {
    /// The name it was built under (reports use it).
    fn name(&self) -> &str;

    /// A slot on `host` is free (see `view.host(host).free()` for which
    /// kinds fit): which task should it run? `None` declines; the engine
    /// offers the slot again on the next event that frees a slot or adds
    /// work, at [`TaskPolicy::next_wakeup`], or at the next heartbeat.
    fn on_free_slot(&mut self, now: Nanos, view: &ClusterView<'_>, host: HostId) -> Option<TaskChoice>;

    /// Where each map's input block lives, decided before the run starts
    /// (data placement, as Corral and Co-scheduler do). `None` keeps the
    /// job's own replicas; otherwise one list of distinct hosts per map.
    fn place_input(&mut self, _topology: &Topology, _job: &Job) -> Option<Vec<Vec<HostId>>> {
        None
    }

    /// A job became runnable (submitted, and its parents are done).
    fn on_job_arrival(&mut self, _now: Nanos, _view: &ClusterView<'_>, _job: JobId) {}

    /// An attempt got a slot.
    fn on_task_started(&mut self, _now: Nanos, _view: &ClusterView<'_>, _attempt: AttemptId) {}

    /// A task finished (its winning attempt ran on `host`).
    fn on_task_finished(&mut self, _now: Nanos, _view: &ClusterView<'_>, _task: TaskId, _host: HostId) {}

    /// An attempt ended (finished, killed or lost) and freed its slot;
    /// `record` says where it ran, when it took its slot and began
    /// computing, and how it ended (policies that learn task times or slot
    /// release rates read it).
    fn on_attempt_ended(&mut self, _now: Nanos, _view: &ClusterView<'_>, _record: &TaskRecord) {}

    /// A job finished.
    fn on_job_finished(&mut self, _now: Nanos, _view: &ClusterView<'_>, _job: JobId) {}

    /// New link loads were measured (see `view.link_loads()`).
    fn on_load_sample(&mut self, _now: Nanos, _view: &ClusterView<'_>) {}

    /// A circuit came up or went down (see `view.circuits()`).
    fn on_circuit(&mut self, _now: Nanos, _view: &ClusterView<'_>, _circuit: Circuit, _up: bool) {}

    /// When the policy wants free slots offered again even if nothing
    /// happens (e.g. a locality wait expires). Times not after the last
    /// event are ignored.
    fn next_wakeup(&self) -> Option<Nanos> {
        None
    }

    /// The node heartbeat this policy's decisions assume, if any: while
    /// runnable work waits, the engine offers every free slot again this
    /// long after its last round that offered them all, as Hadoop's nodes
    /// offer their free slots at each heartbeat (NAS counts skipped offers).
    /// `[engine] heartbeat` overrides it. `None`: offers on events and
    /// wake-ups only.
    fn heartbeat(&self) -> Option<Nanos> {
        None
    }

    /// Whether, since the engine last asked, the policy began to accept
    /// tasks it declined before for a reason of its own, e.g. Co-scheduler
    /// holding a job's reduces until its last map. The engine then offers
    /// every free slot again, not only those the event freed. Asked after
    /// each event; answering resets it.
    fn released_work(&mut self) -> bool {
        false
    }

    /// How many of `job`'s reduces not yet placed the policy may still
    /// place on each rack, when it places them only on racks it chose
    /// (Co-scheduler's reduce schedule, Sec. IV-E/F); `None` when they may
    /// go anywhere. The engine's shuffle hold reads it to see a hold that
    /// can never end (`engine::hold`).
    fn reduce_quotas(&self, _job: JobId) -> Option<BTreeMap<u32, u32>> {
        None
    }

    /// Whether to offer free slots when no task is pending (a policy that
    /// speculates wants those offers; others save the work).
    fn wants_idle_offers(&self) -> bool {
        false
    }
}
