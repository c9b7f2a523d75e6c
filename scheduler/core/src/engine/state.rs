//! The cluster state the engine owns and policies read (through
//! [`super::ClusterView`]): jobs with their tasks and attempts, hosts with
//! their slots, users with their running tasks. Fields are private to the
//! engine; policies use the read-only methods.

use super::event::AttemptId;
use super::fetch::{DoneOn, Fetch};
use crate::model::coflow::FlowId;
use crate::model::job::{Job, JobId, TaskKind, UserId};
use crate::{Bytes, HostId, Nanos};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// Where a job is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum JobStatus {
    /// Submitted, but waiting for parent jobs to finish.
    Blocked,
    /// Runnable: its tasks are offered to the policy.
    Active,
    /// All its tasks are done.
    Done,
}

/// Where a task is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskStatus {
    /// No live attempt, not done.
    Pending,
    /// At least one live attempt.
    Running,
    /// An attempt finished.
    Done,
}

/// How close a map ran to its input block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Locality {
    /// On a host holding a replica.
    NodeLocal,
    /// In a rack holding a replica.
    RackLocal,
    /// Elsewhere: the block crosses racks.
    Remote,
}

/// An attempt's phase.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum Phase {
    /// Waiting for input: a remote map reading its block, or a reduce
    /// fetching partitions.
    Fetching,
    /// Computing since `since` for `duration`.
    Computing {
        /// Compute start.
        since: Nanos,
        /// Expected compute time on its host.
        duration: Nanos,
    },
}

/// One running attempt.
#[derive(Clone, Debug)]
pub struct AttemptState {
    pub(crate) id: AttemptId,
    pub(crate) host: HostId,
    pub(crate) started: Nanos,
    pub(crate) phase: Phase,
    /// When its compute began.
    pub(crate) compute_started: Option<Nanos>,
    /// After a host speed change: (when, compute progress then); progress
    /// runs linearly from there to the phase's end.
    pub(crate) rebase: Option<(Nanos, f64)>,
    pub(crate) speculative: bool,
    pub(crate) locality: Option<Locality>,
    pub(crate) input_flow: Option<FlowId>,
    pub(crate) fetch: Option<Fetch>,
}

impl AttemptState {
    /// Its identity.
    pub fn id(&self) -> AttemptId {
        self.id
    }
    /// Where it runs.
    pub fn host(&self) -> HostId {
        self.host
    }
    /// When it got its slot.
    pub fn started(&self) -> Nanos {
        self.started
    }
    /// Fetching or computing.
    pub fn phase(&self) -> Phase {
        self.phase
    }
    /// When its compute began (`None` while fetching).
    pub fn compute_started(&self) -> Option<Nanos> {
        self.compute_started
    }
    /// Fraction of its compute done at `now` (0 while fetching). Linear in
    /// time, except that a host speed change bends it: from then on it runs
    /// linearly from the progress made to the new end (`since + duration`).
    pub fn compute_progress(&self, now: Nanos) -> f64 {
        let Phase::Computing { since, duration } = self.phase else {
            return 0.0;
        };
        let end = since + duration;
        let (t0, p0) = self.rebase.unwrap_or((since, 0.0));
        if end <= t0 {
            return if now >= end { 1.0 } else { p0 };
        }
        let f = (now.saturating_sub(t0).0 as f64 / (end - t0).0 as f64).min(1.0);
        p0 + (1.0 - p0) * f
    }
    /// Whether it is a speculative copy.
    pub fn speculative(&self) -> bool {
        self.speculative
    }
    /// For a map, how close it runs to its block.
    pub fn locality(&self) -> Option<Locality> {
        self.locality
    }
    /// For a reduce, how many maps' partitions it holds.
    pub fn partitions_fetched(&self) -> u32 {
        self.fetch.as_ref().map_or(0, Fetch::fetched_count)
    }
    /// For a reduce, the bytes it has fetched.
    pub fn bytes_fetched(&self) -> Bytes {
        self.fetch.as_ref().map_or(Bytes(0), |f| f.bytes_fetched)
    }
    /// Progress in 0..=1 at `now`. A map: the fraction of its compute done
    /// (0 while reading input). A reduce: half for the shuffle (fraction of
    /// maps fetched, out of `maps`), half for the compute — Hadoop weighs a
    /// reduce's copy, sort and reduce phases alike; ocslab has no sort.
    pub fn progress(&self, now: Nanos, maps: u32) -> f64 {
        let compute = self.compute_progress(now);
        match self.id.task.kind {
            TaskKind::Map => compute,
            TaskKind::Reduce => {
                let shuffle = match self.phase {
                    Phase::Computing { .. } => 1.0,
                    Phase::Fetching if maps == 0 => 1.0,
                    Phase::Fetching => self.partitions_fetched() as f64 / maps as f64,
                };
                0.5 * shuffle + 0.5 * compute
            }
        }
    }
}

/// A finished task's result.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct TaskDone {
    /// Where the winning attempt ran (for a map: where its output lives).
    pub host: HostId,
    /// When it finished.
    pub at: Nanos,
    /// For a map, the bytes of output it wrote.
    pub output: Bytes,
}

/// One task of a job.
#[derive(Clone, Debug)]
pub struct TaskState {
    pub(crate) status: TaskStatus,
    pub(crate) live: Vec<AttemptId>,
    pub(crate) attempts_started: u32,
    pub(crate) done: Option<TaskDone>,
}

impl TaskState {
    fn new() -> TaskState {
        TaskState {
            status: TaskStatus::Pending,
            live: Vec::new(),
            attempts_started: 0,
            done: None,
        }
    }
    /// Pending, running or done.
    pub fn status(&self) -> TaskStatus {
        self.status
    }
    /// Its live attempts (usually one; more under speculation).
    pub fn live_attempts(&self) -> &[AttemptId] {
        &self.live
    }
    /// How many attempts were started in all.
    pub fn attempts_started(&self) -> u32 {
        self.attempts_started
    }
    /// Where and when it finished.
    pub fn done(&self) -> Option<&TaskDone> {
        self.done.as_ref()
    }
}

/// A job as the engine tracks it.
#[derive(Clone, Debug)]
pub struct JobState {
    pub(crate) spec: Job,
    pub(crate) status: JobStatus,
    pub(crate) ready_at: Option<Nanos>,
    pub(crate) finished_at: Option<Nanos>,
    pub(crate) maps: Vec<TaskState>,
    pub(crate) reduces: Vec<TaskState>,
    pub(crate) maps_done: u32,
    pub(crate) reduces_done: u32,
    pub(crate) reduces_placed: u32,
    /// Its shuffle was released before all its reduces were placed, because the hold could never end
    /// (`engine::hold`).
    pub(crate) shuffle_released: bool,
    pub(crate) reduces_unlocked: bool,
    pub(crate) running_maps: u32,
    pub(crate) running_reduces: u32,
    pub(crate) pending_maps: BTreeSet<u32>,
    pub(crate) pending_reduces: BTreeSet<u32>,
    pub(crate) pending_by_host: BTreeMap<HostId, BTreeSet<u32>>,
    pub(crate) pending_by_rack: BTreeMap<u32, BTreeSet<u32>>,
    pub(crate) output_by_rack: BTreeMap<u32, Bytes>,
    pub(crate) output_by_host: BTreeMap<HostId, Bytes>,
    pub(crate) output_for_reduce: Vec<Bytes>,
    pub(crate) input_done: Bytes,
    pub(crate) output_done: Bytes,
    pub(crate) reduce_hosts: BTreeMap<u32, HostId>,
    /// How many of `reduce_hosts` are on each rack.
    pub(crate) reduces_by_rack: BTreeMap<u32, u32>,
    /// Bumped by [`JobState::touch`].
    pub(crate) version: u64,
    /// The done maps by the host holding their output, in the order they
    /// finished: what its reduces fetch from there ([`Fetch`]). A host,
    /// once listed, stays (its list may empty), so its index does not change.
    pub(crate) done_on: BTreeMap<HostId, DoneOn>,
}

impl JobState {
    pub(crate) fn new(spec: Job) -> JobState {
        let maps = (0..spec.maps.len()).map(|_| TaskState::new()).collect();
        let reduces = (0..spec.reduces.len()).map(|_| TaskState::new()).collect();
        let output_for_reduce = vec![Bytes(0); spec.reduces.len()];
        JobState {
            spec,
            status: JobStatus::Blocked,
            ready_at: None,
            finished_at: None,
            maps,
            reduces,
            maps_done: 0,
            reduces_done: 0,
            reduces_placed: 0,
            shuffle_released: false,
            reduces_unlocked: false,
            running_maps: 0,
            running_reduces: 0,
            pending_maps: BTreeSet::new(),
            pending_reduces: BTreeSet::new(),
            pending_by_host: BTreeMap::new(),
            pending_by_rack: BTreeMap::new(),
            output_by_rack: BTreeMap::new(),
            output_by_host: BTreeMap::new(),
            output_for_reduce,
            input_done: Bytes(0),
            output_done: Bytes(0),
            reduce_hosts: BTreeMap::new(),
            reduces_by_rack: BTreeMap::new(),
            version: 0,
            done_on: BTreeMap::new(),
        }
    }

    /// Its identity.
    pub fn id(&self) -> JobId {
        self.spec.id
    }
    /// The job as submitted (tasks, sizes, replicas, user, DAG edges...).
    pub fn spec(&self) -> &Job {
        &self.spec
    }
    /// Its user.
    pub fn user(&self) -> UserId {
        self.spec.user
    }
    /// Blocked, active or done.
    pub fn status(&self) -> JobStatus {
        self.status
    }
    /// When it became runnable (arrival, or its last parent's finish).
    pub fn ready_at(&self) -> Option<Nanos> {
        self.ready_at
    }
    /// When it finished.
    pub fn finished_at(&self) -> Option<Nanos> {
        self.finished_at
    }
    /// A task's state (`None` if the index is out of range).
    pub fn task(&self, kind: TaskKind, index: u32) -> Option<&TaskState> {
        match kind {
            TaskKind::Map => self.maps.get(index as usize),
            TaskKind::Reduce => self.reduces.get(index as usize),
        }
    }
    /// Maps done.
    pub fn maps_done(&self) -> u32 {
        self.maps_done
    }
    /// Reduces done.
    pub fn reduces_done(&self) -> u32 {
        self.reduces_done
    }
    /// Fraction of maps done (NAS's MapProgressRate).
    pub fn map_progress(&self) -> f64 {
        self.maps_done as f64 / self.maps.len().max(1) as f64
    }
    /// Live map attempts.
    pub fn running_maps(&self) -> u32 {
        self.running_maps
    }
    /// Live reduce attempts.
    pub fn running_reduces(&self) -> u32 {
        self.running_reduces
    }
    /// Live attempts of either kind.
    pub fn running_tasks(&self) -> u32 {
        self.running_maps + self.running_reduces
    }
    /// Maps without a live attempt and not done, in index order.
    pub fn pending_maps(&self) -> &BTreeSet<u32> {
        &self.pending_maps
    }
    /// Pending maps with a replica on `host`.
    pub fn pending_maps_on_host(&self, host: HostId) -> impl Iterator<Item = u32> + '_ {
        self.pending_by_host.get(&host).into_iter().flatten().copied()
    }
    /// Pending maps with a replica in `rack`.
    pub fn pending_maps_on_rack(&self, rack: u32) -> impl Iterator<Item = u32> + '_ {
        self.pending_by_rack.get(&rack).into_iter().flatten().copied()
    }
    /// Reduces without a live attempt and not done (whether or not
    /// slow-start lets them run yet; see [`JobState::reduces_runnable`]).
    pub fn pending_reduces(&self) -> &BTreeSet<u32> {
        &self.pending_reduces
    }
    /// Whether slow-start lets this job's reduces run.
    pub fn reduces_runnable(&self) -> bool {
        self.reduces_unlocked
    }
    /// Whether the engine would accept a map of this job now.
    pub fn has_runnable_map(&self) -> bool {
        self.status == JobStatus::Active && !self.pending_maps.is_empty()
    }
    /// Whether the engine would accept a reduce of this job now.
    pub fn has_runnable_reduce(&self) -> bool {
        self.status == JobStatus::Active && self.reduces_unlocked && !self.pending_reduces.is_empty()
    }
    /// Reduces placed so far (with at least one attempt started).
    pub fn reduces_placed(&self) -> u32 {
        self.reduces_placed
    }
    /// The live attempts of all its reduces, in reduce order.
    pub(crate) fn live_reduces(&self) -> impl Iterator<Item = AttemptId> + '_ {
        self.reduces.iter().flat_map(|t| t.live.iter().copied())
    }
    /// Host of each reduce's latest attempt.
    pub fn reduce_hosts(&self) -> &BTreeMap<u32, HostId> {
        &self.reduce_hosts
    }
    /// How many reduces' latest attempts are on each rack: the racks of
    /// [`JobState::reduce_hosts`], counted.
    pub fn reduces_by_rack(&self) -> &BTreeMap<u32, u32> {
        &self.reduces_by_rack
    }
    /// Changes whenever its maps done (and their input and output, by rack
    /// and host), its pending maps or reduces, the racks of its reduces or
    /// its ready time change: a policy may keep what it derived from those
    /// while the version stays.
    pub fn version(&self) -> u64 {
        self.version
    }
    /// Bumps [`JobState::version`].
    pub(crate) fn touch(&mut self) {
        self.version += 1;
    }
    /// Notes that reduce `r`'s latest attempt is on `host`.
    pub(crate) fn place_reduce(&mut self, r: u32, host: HostId) {
        self.touch();
        if let Some(old) = self.reduce_hosts.insert(r, host) {
            if let Some(n) = self.reduces_by_rack.get_mut(&old.rack) {
                *n -= 1;
                if *n == 0 {
                    self.reduces_by_rack.remove(&old.rack);
                }
            }
        }
        *self.reduces_by_rack.entry(host.rack).or_default() += 1;
    }
    /// Map output bytes of done maps, by rack.
    pub fn map_output_by_rack(&self) -> &BTreeMap<u32, Bytes> {
        &self.output_by_rack
    }
    /// Map output bytes of done maps, by host.
    pub fn map_output_by_host(&self) -> &BTreeMap<HostId, Bytes> {
        &self.output_by_host
    }
    /// Bytes of done maps' output destined to reduce `r`.
    pub fn map_output_for_reduce(&self, r: u32) -> Bytes {
        self.output_for_reduce
            .get(r as usize)
            .copied()
            .unwrap_or_default()
    }
    /// Output bytes of done maps.
    pub fn map_output_done(&self) -> Bytes {
        self.output_done
    }
    /// Input bytes of done maps.
    pub fn map_input_done(&self) -> Bytes {
        self.input_done
    }
    /// Shuffle/input ratio observed on the done maps (ShuffleWatcher's and
    /// Co-scheduler's SIR, NAS's predictor); `None` before any map is done.
    pub fn observed_shuffle_ratio(&self) -> Option<f64> {
        (self.input_done.0 > 0).then(|| self.output_done.0 as f64 / self.input_done.0 as f64)
    }
}

/// Free slots of a host. Under [`super::SlotConfig::Shared`] both fields
/// count the same slots (each may take a map or a reduce).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FreeSlots {
    /// Slots that could take a map now.
    pub map: u32,
    /// Slots that could take a reduce now.
    pub reduce: u32,
}

impl FreeSlots {
    /// Whether a task of `kind` fits.
    pub fn fits(&self, kind: TaskKind) -> bool {
        match kind {
            TaskKind::Map => self.map > 0,
            TaskKind::Reduce => self.reduce > 0,
        }
    }
    /// Whether anything fits.
    pub fn any(&self) -> bool {
        self.map > 0 || self.reduce > 0
    }
}

/// A host as the engine tracks it.
#[derive(Clone, Debug)]
pub struct HostState {
    pub(crate) id: HostId,
    pub(crate) alive: bool,
    pub(crate) speed: f64,
    pub(crate) map_slots: u32,
    pub(crate) reduce_slots: u32,
    pub(crate) shared: bool,
    pub(crate) running_maps: u32,
    pub(crate) running_reduces: u32,
    pub(crate) attempts: BTreeSet<AttemptId>,
}

impl HostState {
    /// Its identity.
    pub fn id(&self) -> HostId {
        self.id
    }
    /// Whether it answers.
    pub fn alive(&self) -> bool {
        self.alive
    }
    /// Its compute speed (1.0 = nominal).
    pub fn speed(&self) -> f64 {
        self.speed
    }
    /// Slots per type (under shared slots both are the host's slot count).
    pub fn slots(&self) -> FreeSlots {
        FreeSlots {
            map: self.map_slots,
            reduce: self.reduce_slots,
        }
    }
    /// Free slots now (none while dead).
    pub fn free(&self) -> FreeSlots {
        if !self.alive {
            return FreeSlots::default();
        }
        if self.shared {
            let f = self
                .map_slots
                .saturating_sub(self.running_maps + self.running_reduces);
            FreeSlots { map: f, reduce: f }
        } else {
            FreeSlots {
                map: self.map_slots.saturating_sub(self.running_maps),
                reduce: self.reduce_slots.saturating_sub(self.running_reduces),
            }
        }
    }
    /// Live map attempts here.
    pub fn running_maps(&self) -> u32 {
        self.running_maps
    }
    /// Live reduce attempts here.
    pub fn running_reduces(&self) -> u32 {
        self.running_reduces
    }
    /// The live attempts here.
    pub fn attempts(&self) -> &BTreeSet<AttemptId> {
        &self.attempts
    }
}

/// A user's share of the cluster.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct UserState {
    /// Live map attempts.
    pub running_maps: u32,
    /// Live reduce attempts.
    pub running_reduces: u32,
    /// Active (runnable, unfinished) jobs.
    pub active_jobs: u32,
}

impl UserState {
    /// Live attempts of either kind.
    pub fn running_tasks(&self) -> u32 {
        self.running_maps + self.running_reduces
    }
}

/// The engine's own estimate of cross-rack traffic of one rack: flows it
/// started and that have not finished (the driver's measured loads come as
/// [`super::Event::LoadSample`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RackTraffic {
    /// Cross-rack flows leaving the rack.
    pub out_flows: u32,
    /// Cross-rack flows entering the rack.
    pub in_flows: u32,
    /// Bytes of those leaving flows (whole flows, not what is left).
    pub out_bytes: Bytes,
    /// Bytes of those entering flows.
    pub in_bytes: Bytes,
}
