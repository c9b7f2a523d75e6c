//! What the engine records for reports: one record per job, per task
//! attempt, per flow and per coflow, with times, bytes, hosts and fabric, so
//! that every figure a report prints can be traced back to them.

use super::event::AttemptId;
use super::state::Locality;
use crate::model::coflow::{CoflowId, FlowId};
use crate::model::job::{JobId, TaskKind, UserId};
use crate::{Bytes, HostId, Nanos};
use serde::Serialize;
use std::collections::BTreeMap;

/// One job's life.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct JobRecord {
    /// The job.
    pub job: JobId,
    /// Its label.
    pub name: String,
    /// Its user.
    pub user: UserId,
    /// Whether it recurs.
    pub recurring: bool,
    /// Number of parent jobs.
    pub parents: u32,
    /// Submission time.
    pub arrival: Nanos,
    /// When it became runnable (parents done).
    pub ready: Option<Nanos>,
    /// When its first attempt started.
    pub first_task: Option<Nanos>,
    /// When its last map finished.
    pub maps_done: Option<Nanos>,
    /// When it finished.
    pub finished: Option<Nanos>,
    /// Map tasks.
    pub maps: u32,
    /// Reduce tasks.
    pub reduces: u32,
    /// Input bytes.
    pub input_bytes: Bytes,
    /// Shuffle bytes delivered to the winning reduce attempts.
    pub shuffle_bytes: Bytes,
    /// Of those, bytes between racks.
    pub cross_rack_shuffle_bytes: Bytes,
    /// Input bytes maps read over the network, of which cross-rack below.
    pub input_read_bytes: Bytes,
    /// Input bytes read from another rack.
    pub cross_rack_input_bytes: Bytes,
    /// Maps that ran node-local, rack-local and remote (winning attempts).
    pub locality: [u32; 3],
    /// Fraction of maps done when its first reduce started.
    pub map_progress_at_first_reduce: Option<f64>,
    /// Its shuffle started before all its reduces were placed because the
    /// `hold_shuffle_until_reduces_placed` hold could never end (`engine::hold`).
    pub shuffle_hold_released: bool,
}

impl JobRecord {
    /// Job completion time: finish − arrival.
    pub fn jct(&self) -> Option<Nanos> {
        self.finished.map(|f| f - self.arrival)
    }
}

/// How an attempt ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// It finished and its task is done.
    Finished,
    /// Another attempt of its task won; it was killed.
    Killed,
    /// Its host died.
    Lost,
}

/// One attempt's life.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TaskRecord {
    /// The attempt.
    pub attempt: AttemptId,
    /// Map or reduce.
    pub kind: TaskKind,
    /// Where it ran.
    pub host: HostId,
    /// Slot taken.
    pub started: Nanos,
    /// Compute started (after input read or shuffle).
    pub compute_started: Option<Nanos>,
    /// Ended.
    pub ended: Nanos,
    /// How it ended.
    pub outcome: Outcome,
    /// For a map, its locality.
    pub locality: Option<Locality>,
    /// Whether it was a speculative copy.
    pub speculative: bool,
    /// For a map, output bytes; for a reduce, bytes fetched.
    pub bytes: Bytes,
}

/// What a flow carried.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FlowKind {
    /// A map reading its input block from a replica.
    Input,
    /// A reduce fetching map output.
    Shuffle,
}

impl FlowKind {
    /// The coflow of `job` that flows of this kind belong to.
    pub fn coflow(self, job: JobId) -> CoflowId {
        match self {
            FlowKind::Input => super::input_coflow(job),
            FlowKind::Shuffle => super::shuffle_coflow(job),
        }
    }
}

/// One flow's life.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FlowRecord {
    /// The flow.
    pub flow: FlowId,
    /// Its coflow.
    pub coflow: CoflowId,
    /// Its job.
    pub job: JobId,
    /// Input read or shuffle.
    pub kind: FlowKind,
    /// The attempt it feeds.
    pub attempt: AttemptId,
    /// Sender.
    pub src: HostId,
    /// Receiver.
    pub dst: HostId,
    /// Bytes.
    pub bytes: Bytes,
    /// Started.
    pub started: Nanos,
    /// Last byte delivered (`None`: abandoned).
    pub finished: Option<Nanos>,
    /// Bytes over EPS.
    pub eps_bytes: Bytes,
    /// Bytes over circuits.
    pub ocs_bytes: Bytes,
    /// Whether the engine still wanted it when it finished (false: its
    /// attempt was killed or lost on the way).
    pub useful: bool,
    /// The fetches it carried: 1, or under `merge_fetches` the fetches it
    /// merged (`attempt` is the first's; `bytes` are all of theirs).
    pub weight: u32,
}

/// One coflow (a job's shuffle, or its input reads), aggregated over its flows.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CoflowRecord {
    /// The coflow.
    pub coflow: CoflowId,
    /// Its job.
    pub job: JobId,
    /// Input reads or shuffle.
    pub kind: FlowKind,
    /// Flows started.
    pub flows: u32,
    /// Bytes of those flows.
    pub bytes: Bytes,
    /// First flow start.
    pub first_start: Nanos,
    /// Last flow end so far.
    pub last_end: Option<Nanos>,
    /// Bytes delivered over EPS (intra-rack flows included: they cross
    /// the ToR only).
    pub eps_bytes: Bytes,
    /// Bytes delivered over circuits.
    pub ocs_bytes: Bytes,
    /// Bytes between racks.
    pub cross_rack_bytes: Bytes,
    /// Of the bytes between racks, those that crossed the EPS core.
    pub cross_rack_eps_bytes: Bytes,
    /// Of the bytes between racks, those carried by circuits.
    pub cross_rack_ocs_bytes: Bytes,
    /// Flows not yet finished.
    pub open_flows: u32,
}

impl CoflowRecord {
    /// Coflow completion time: last flow end − first flow start.
    pub fn cct(&self) -> Option<Nanos> {
        if self.open_flows > 0 {
            return None;
        }
        self.last_end.map(|e| e - self.first_start)
    }
}

/// Everything recorded in a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Records {
    /// Per job.
    pub jobs: BTreeMap<JobId, JobRecord>,
    /// Per attempt, in the order they ended.
    pub tasks: Vec<TaskRecord>,
    /// Per flow, in the order they ended (empty if flow records are off).
    pub flows: Vec<FlowRecord>,
    /// Per coflow.
    pub coflows: BTreeMap<CoflowId, CoflowRecord>,
    /// Circuits that came up.
    pub circuits_up: u64,
    /// Policy choices the engine refused (a policy bug if not 0).
    pub refused_choices: u64,
}
