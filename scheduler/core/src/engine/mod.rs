//! The cluster engine: a pure state machine over the cluster (free slots
//! per host, jobs and their tasks, running attempts, where map outputs
//! are, flows in flight, circuit state, measured link loads) that feeds
//! events to a [`TaskPolicy`] and returns what the driver must do.
//!
//! ```text
//!   driver ──Event──▶ Engine::handle(now, event) ──Vec<Command>──▶ driver
//!                         │  ▲
//!        on_free_slot(now, view, host) / hooks │  │ Option<TaskChoice>
//!                         ▼  │
//!                      TaskPolicy
//! ```
//!
//! Time is always an argument: the engine never reads a clock, and asks to
//! be called again at [`Engine::next_wakeup`] (job arrivals, policy waits,
//! heartbeats). The simulation driver (`ocslab_scheduler::sim`) and the emulation
//! driver call the same methods, so a policy cannot tell them apart.
//!
//! Hadoop semantics the engine implements (each a knob in [`EngineConfig`]):
//! heartbeat-style offers, one slot at a time, round-robin over hosts with
//! free slots; reduce slow-start; a map on a host without a replica reads
//! its block over the network first; a reduce fetches each map's partition
//! once both the map is done and the reduce is running, one flow per
//! source host at a time (Hadoop's fetcher takes every output ready on a
//! host in one connection), partitions on its own host without the
//! network; a reduce computes once it holds every partition; speculative
//! attempts race and the loser is killed; a dead host's attempts are lost
//! and its map outputs re-run if a reduce still needs them.
//!
//! Coflows: a job's shuffle flows form coflow [`shuffle_coflow`]`(job)`
//! (its id); its input reads form [`input_coflow`]`(job)`. Flow ids are
//! unique within a run.

mod by_hand;
mod config;
mod event;
mod fetch;
mod hold;
mod jobs;
mod keyed;
mod offers;
mod parent_output;
mod records;
mod shuffle;
mod state;
mod task_policy;
mod tasks;
mod transitions;
mod view;

pub use by_hand::ClusterState;
pub use config::{EngineConfig, SlotConfig};
pub use event::{AttemptId, Circuit, Command, Event, Link, LinkLoad};
pub use records::{CoflowRecord, FlowKind, FlowRecord, JobRecord, Outcome, Records, TaskRecord};
pub use state::{
    AttemptState, FreeSlots, HostState, JobState, JobStatus, Locality, Phase, RackTraffic, TaskDone,
    TaskState, TaskStatus, UserState,
};
pub use task_policy::{TaskChoice, TaskPolicy};
pub use view::{water_fill, ClusterView, ReduceGate};

use crate::coflow::id_table::IdTable;
use crate::model::coflow::{CoflowId, FlowSpec};
use crate::model::job::{validate_jobs, Job, JobError, JobId, TaskKind};
use crate::net::fasthash::FastMap;
use crate::{Bytes, HostId, Nanos, Topology};
use std::collections::{BTreeSet, VecDeque};
use view::Cluster;

/// Input-read coflows have this bit set in their id.
pub const INPUT_COFLOW_BIT: u64 = 1 << 63;

/// The most entries the index of fetches merging at an instant keeps
/// room for between instants.
const MERGING_KEPT: usize = 4096;

/// The coflow of `job`'s shuffle (its id is the job's id).
pub fn shuffle_coflow(job: JobId) -> CoflowId {
    CoflowId(job.0)
}

/// The coflow of `job`'s input reads (remote maps reading their blocks).
pub fn input_coflow(job: JobId) -> CoflowId {
    CoflowId(job.0 | INPUT_COFLOW_BIT)
}

/// Why an engine could not be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EngineError {
    /// A job of the workload is invalid (possibly after the policy placed its input).
    #[error(transparent)]
    Job(#[from] JobError),
    /// A knob is out of range.
    #[error("engine setting `{field}`: {message}")]
    Config {
        /// The setting.
        field: String,
        /// What is wrong and what would be valid.
        message: String,
    },
}

/// A flow the engine started and not yet heard the end of (its id is its
/// key; its job is its attempt's, its coflow the job's of its kind). 64
/// bytes: a wide job's shuffle holds hundreds of thousands at once.
#[derive(Clone, Debug)]
struct FlowRt {
    src: HostId,
    dst: HostId,
    bytes: Bytes,
    attempt: AttemptId,
    started: Nanos,
    /// How many fetches it carries (`FlowSpec::weight`).
    weight: u32,
    kind: FlowKind,
    /// False once its attempt ended or its source died: its end is recorded
    /// but changes nothing.
    useful: bool,
}

impl FlowRt {
    fn job(&self) -> JobId {
        self.attempt.task.job
    }

    fn coflow(&self) -> CoflowId {
        self.kind.coflow(self.job())
    }
}

/// The cluster engine. See the module documentation.
pub struct Engine {
    c: Cluster,
    policy: Box<dyn TaskPolicy>,
    /// Jobs not yet submitted, by (arrival, id).
    future: VecDeque<Job>,
    jobs_total: usize,
    jobs_done: usize,
    now: Nanos,
    next_flow: u64,
    flows: IdTable<FlowRt>,
    out: Vec<Command>,
    new_flows: Vec<FlowSpec>,
    /// Under `merge_fetches`: the shuffle flows in `new_flows` (not yet
    /// handed to the driver), by (job, source, destination), that a fetch
    /// starting now joins.
    merging: FastMap<(JobId, HostId, HostId), usize>,
    records: Records,
    /// Something became runnable: offer every free host.
    new_work: bool,
    /// Hosts whose slots were freed by the current event.
    freed: BTreeSet<usize>,
    /// Alive hosts with a free slot (indices).
    free_hosts: BTreeSet<usize>,
    /// Where the next full offer round starts (round-robin fairness among hosts).
    cursor: usize,
    last_round: Nanos,
    /// A held job placed a reduce or a host died since the last look at
    /// whether a shuffle hold can still end ([`hold`]).
    holds_changed: bool,
}

impl Engine {
    /// An engine for `jobs` on `topology`, placing tasks with `policy`.
    /// The policy may first move input blocks ([`TaskPolicy::place_input`]);
    /// then the workload is validated against the topology.
    pub fn new(
        topology: &Topology,
        jobs: Vec<Job>,
        mut policy: Box<dyn TaskPolicy>,
        config: EngineConfig,
    ) -> Result<Engine, EngineError> {
        check_config(topology, &config)?;
        let mut jobs = jobs;
        for job in &mut jobs {
            if let Some(placement) = policy.place_input(topology, job) {
                if placement.len() != job.maps.len() {
                    return Err(EngineError::Job(JobError {
                        job: job.id,
                        field: "maps".into(),
                        message: format!(
                            "policy {} placed {} input blocks for {} maps",
                            policy.name(),
                            placement.len(),
                            job.maps.len()
                        ),
                    }));
                }
                for (map, hosts) in job.maps.iter_mut().zip(placement) {
                    map.replicas = hosts;
                }
            }
        }
        validate_jobs(&jobs, topology)?;
        jobs.sort_by_key(|j| (j.arrival, j.id));
        let c = Cluster::new(topology, config);
        let free_hosts = (0..c.hosts.len()).filter(|&i| c.hosts[i].free().any()).collect();
        Ok(Engine {
            c,
            policy,
            jobs_total: jobs.len(),
            future: jobs.into(),
            jobs_done: 0,
            now: Nanos::ZERO,
            next_flow: 0,
            flows: IdTable::default(),
            out: Vec::new(),
            new_flows: Vec::new(),
            merging: FastMap::default(),
            records: Records::default(),
            new_work: false,
            freed: BTreeSet::new(),
            free_hosts,
            cursor: 0,
            last_round: Nanos::ZERO,
            holds_changed: false,
        })
    }

    /// Feeds one event that happened at `now` (never before the previous
    /// call's `now`; an earlier time is treated as the previous one) and
    /// returns what the driver must do, in order.
    pub fn handle(&mut self, now: Nanos, event: Event) -> Vec<Command> {
        let now = now.max(self.now);
        self.now = now;
        self.admit_arrivals(now);
        let mut full_round = false;
        match event {
            Event::Wakeup => full_round = true,
            Event::TaskFinished {
                attempt,
                host,
                output,
            } => self.task_finished(now, attempt, host, output),
            Event::FlowFinished {
                flow,
                eps_bytes,
                ocs_bytes,
            } => self.flow_finished(now, flow, eps_bytes, ocs_bytes),
            Event::Circuit { circuit, up } => {
                let changed = if up {
                    self.c.circuits.insert(circuit)
                } else {
                    self.c.circuits.remove(&circuit)
                };
                if changed {
                    if up {
                        self.records.circuits_up += 1;
                    }
                    let view = ClusterView { c: &self.c };
                    self.policy.on_circuit(now, &view, circuit, up);
                }
            }
            Event::LoadSample(loads) => {
                self.c.record_loads(now, loads);
                let view = ClusterView { c: &self.c };
                self.policy.on_load_sample(now, &view);
                full_round = true;
            }
            Event::HostDead(h) => self.host_dead(now, h),
            Event::HostAlive(h) => self.host_alive(h),
            Event::HostSpeed { host, speed } => self.host_speed(now, host, speed),
        }
        full_round |= self.policy.released_work();
        self.offer_round(now, full_round);
        self.release_stuck_shuffles(now);
        if !self.new_flows.is_empty() {
            if self.merging.capacity() > MERGING_KEPT {
                // A wide shuffle's instant: its index goes before the
                // driver takes on the flows.
                self.merging = FastMap::default();
            } else {
                self.merging.clear();
            }
            self.out
                .push(Command::StartFlows(std::mem::take(&mut self.new_flows)));
        }
        std::mem::take(&mut self.out)
    }

    /// When the engine wants [`Event::Wakeup`] even if nothing else
    /// happens: the next job arrival, a policy wake-up, or the next
    /// heartbeat. `None`: only events can make progress.
    pub fn next_wakeup(&self) -> Option<Nanos> {
        let mut t = self.future.front().map(|j| j.arrival.max(self.now));
        let mut consider = |w: Nanos| t = Some(t.map_or(w, |t: Nanos| t.min(w)));
        if let Some(w) = self.policy.next_wakeup() {
            if w > self.now {
                consider(w);
            }
        }
        if let Some(hb) = self.c.config.heartbeat.or_else(|| self.policy.heartbeat()) {
            if !self.free_hosts.is_empty() && self.c.runnable_maps + self.c.runnable_reduces > 0 {
                consider((self.last_round + hb).max(self.now + Nanos(1)));
            }
        }
        t
    }

    /// Whether every job has finished.
    pub fn is_done(&self) -> bool {
        self.jobs_done == self.jobs_total
    }

    /// Jobs finished so far, of how many.
    pub fn progress(&self) -> (usize, usize) {
        (self.jobs_done, self.jobs_total)
    }

    /// The time of the last event handled.
    pub fn now(&self) -> Nanos {
        self.now
    }

    /// The read-only view policies see.
    pub fn view(&self) -> ClusterView<'_> {
        ClusterView { c: &self.c }
    }

    /// The policy's name.
    pub fn policy_name(&self) -> &str {
        self.policy.name()
    }

    /// What was recorded so far.
    pub fn records(&self) -> &Records {
        &self.records
    }

    /// The records, consuming the engine.
    pub fn into_records(self) -> Records {
        self.records
    }

    /// Flows started and not yet reported finished.
    pub fn flows_in_flight(&self) -> usize {
        self.flows.len()
    }

    /// What the unfinished jobs wait on, one line each (at most `max`
    /// jobs): their tasks done, pending and running, and each running
    /// attempt's host and phase. For errors about runs that stopped moving.
    pub fn describe_unfinished(&self, max: usize) -> String {
        let view = self.view();
        let unfinished: Vec<&JobState> = view
            .arrived_jobs()
            .filter(|j| j.status() != JobStatus::Done)
            .collect();
        let mut lines: Vec<String> = unfinished
            .iter()
            .take(max)
            .map(|j| {
                let attempts: Vec<String> = view
                    .attempts()
                    .filter(|a| a.id().task.job == j.id())
                    .map(|a| {
                        let phase = match a.phase() {
                            Phase::Fetching if a.id().task.kind == TaskKind::Reduce => format!(
                                "fetching, {} of {} partitions",
                                a.partitions_fetched(),
                                j.spec().map_count()
                            ),
                            Phase::Fetching => "reading its input".to_string(),
                            Phase::Computing { since, duration } => {
                                format!("computing until {}", since + duration)
                            }
                        };
                        format!("{} on {}: {phase}", a.id(), a.host())
                    })
                    .collect();
                format!(
                    "job {} ({:?}): maps {}/{} done, {} pending; reduces {}/{} done, {} pending, {} placed; running: [{}]",
                    j.id().0,
                    j.status(),
                    j.maps_done(),
                    j.spec().map_count(),
                    j.pending_maps().len(),
                    j.reduces_done(),
                    j.spec().reduce_count(),
                    j.pending_reduces().len(),
                    j.reduces_placed(),
                    attempts.join("; ")
                )
            })
            .collect();
        if unfinished.len() > max {
            lines.push(format!("and {} more jobs", unfinished.len() - max));
        }
        lines.push(format!(
            "{} flows in flight, {} hosts with a free slot",
            self.flows.len(),
            self.free_hosts.len()
        ));
        lines.join("\n")
    }
}

fn check_config(topo: &Topology, c: &EngineConfig) -> Result<(), EngineError> {
    let bad = |field: &str, message: String| {
        Err(EngineError::Config {
            field: field.into(),
            message,
        })
    };
    if !(c.slow_start.is_finite() && (0.0..=1.0).contains(&c.slow_start)) {
        return bad(
            "slow_start",
            format!(
                "must be in 0..=1 (got {}); Hadoop's default is 0.05",
                c.slow_start
            ),
        );
    }
    if !(c.reduce_rampup_limit.is_finite() && c.reduce_rampup_limit > 0.0 && c.reduce_rampup_limit <= 1.0) {
        return bad(
            "reduce_rampup_limit",
            format!(
                "must be in (0, 1] (got {}); Hadoop's default is 0.5",
                c.reduce_rampup_limit
            ),
        );
    }
    if let SlotConfig::Split { map, reduce } = c.slots {
        if map == 0 || reduce == 0 {
            return bad(
                "slots",
                format!("a split needs at least one map and one reduce slot per host (got {map}:{reduce})"),
            );
        }
    }
    for (h, s) in &c.host_speed {
        if !topo.contains(*h) {
            return bad(
                "host_speed",
                format!("{h} is not a host of topology {:?}", topo.name),
            );
        }
        if !(s.is_finite() && *s > 0.0) {
            return bad(
                "host_speed",
                format!("speed of {h} must be a number > 0 (got {s})"),
            );
        }
    }
    if c.parallel_copies == Some(0) {
        return bad(
            "parallel_copies",
            "must be at least 1 (Hadoop's default is 5), or left out to fetch from every ready host at once"
                .into(),
        );
    }
    if c.heartbeat == Some(Nanos::ZERO) {
        return bad("heartbeat", "must be more than 0, e.g. \"3s\"".into());
    }
    Ok(())
}
