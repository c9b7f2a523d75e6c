//! [`ClusterView`]: the read-only picture of the cluster a policy decides
//! from. It borrows the engine's state; a policy cannot change it, and it
//! is the same under simulation and emulation.

use super::config::{EngineConfig, SlotConfig};
use super::event::{AttemptId, Circuit, Link, LinkLoad};
use super::fetch::Fetch;
use super::jobs::{add_pending_map, remove_pending_map, runnable};
use super::keyed::KeyedMap;
use super::state::{
    AttemptState, HostState, JobState, JobStatus, Locality, Phase, RackTraffic, TaskStatus, UserState,
};
use crate::model::job::{Job, JobId, TaskId, TaskKind, UserId};
use crate::{HostId, Nanos, Topology};
use std::collections::{BTreeMap, BTreeSet};

/// The state a view borrows (owned by the engine).
#[derive(Debug)]
pub(crate) struct Cluster {
    pub(crate) topo: Topology,
    pub(crate) config: EngineConfig,
    /// Every job that has arrived (blocked, active or done).
    pub(crate) jobs: BTreeMap<JobId, JobState>,
    /// Active jobs by (ready time, id): FIFO order.
    pub(crate) active: BTreeSet<(Nanos, JobId)>,
    pub(crate) children: BTreeMap<JobId, Vec<JobId>>,
    pub(crate) attempts: KeyedMap<AttemptId, AttemptState>,
    /// Indexed by `Topology::host_index`.
    pub(crate) hosts: Vec<HostState>,
    pub(crate) users: BTreeMap<UserId, UserState>,
    pub(crate) circuits: BTreeSet<Circuit>,
    pub(crate) loads: BTreeMap<Link, LinkLoad>,
    pub(crate) load_at: Option<Nanos>,
    pub(crate) rack_traffic: Vec<RackTraffic>,
    pub(crate) runnable_maps: usize,
    pub(crate) runnable_reduces: usize,
}

/// A read-only view of the cluster for policies.
#[derive(Clone, Copy)]
pub struct ClusterView<'a> {
    pub(crate) c: &'a Cluster,
}

impl<'a> ClusterView<'a> {
    /// The topology (effective rates, after `scale`).
    pub fn topology(&self) -> &'a Topology {
        &self.c.topo
    }
    /// The engine's knobs (slow-start, slot types, ...).
    pub fn config(&self) -> &'a EngineConfig {
        &self.c.config
    }
    /// Active jobs (runnable, unfinished) in FIFO order: by the time they
    /// became runnable, then id.
    pub fn active_jobs(&self) -> impl Iterator<Item = &'a JobState> + 'a {
        let c = self.c;
        c.active.iter().filter_map(move |(_, id)| c.jobs.get(id))
    }
    /// Number of active jobs.
    pub fn active_job_count(&self) -> usize {
        self.c.active.len()
    }
    /// A job that has arrived (blocked, active or done); jobs not yet
    /// submitted are invisible.
    pub fn job(&self, id: JobId) -> Option<&'a JobState> {
        self.c.jobs.get(&id)
    }
    /// Every job that has arrived, by id.
    pub fn arrived_jobs(&self) -> impl Iterator<Item = &'a JobState> + 'a {
        self.c.jobs.values()
    }
    /// Jobs that list `id` as a parent (DAG edges, children side), among
    /// those that have arrived.
    pub fn children(&self, id: JobId) -> impl Iterator<Item = &'a JobState> + 'a {
        let c = self.c;
        c.children
            .get(&id)
            .into_iter()
            .flatten()
            .filter_map(move |k| c.jobs.get(k))
    }
    /// A live attempt.
    pub fn attempt(&self, id: AttemptId) -> Option<&'a AttemptState> {
        self.c.attempts.get(&id)
    }
    /// All live attempts.
    pub fn attempts(&self) -> impl Iterator<Item = &'a AttemptState> + 'a {
        self.c.attempts.values()
    }
    /// A host (`None` if not in the topology).
    pub fn host(&self, h: HostId) -> Option<&'a HostState> {
        if !self.c.topo.contains(h) {
            return None;
        }
        self.c.hosts.get(self.c.topo.host_index(h))
    }
    /// All hosts, rack by rack.
    pub fn hosts(&self) -> &'a [HostState] {
        &self.c.hosts
    }
    /// Users with running tasks or active jobs (and any seen before).
    pub fn users(&self) -> &'a BTreeMap<UserId, UserState> {
        &self.c.users
    }
    /// Per-user fair shares of the cluster's slots, as Hadoop's Fair
    /// scheduler computes them: max-min fair (water-filling) over users
    /// with active jobs, each user's demand being its running plus runnable
    /// tasks, equal weights.
    pub fn fair_shares(&self) -> BTreeMap<UserId, f64> {
        let mut demand: BTreeMap<UserId, f64> = BTreeMap::new();
        for job in self.active_jobs() {
            let runnable = job.pending_maps.len()
                + if job.reduces_unlocked {
                    job.pending_reduces.len()
                } else {
                    0
                };
            *demand.entry(job.user()).or_default() += (job.running_tasks() as usize + runnable) as f64;
        }
        let total: f64 = self
            .c
            .hosts
            .iter()
            .filter(|h| h.alive)
            .map(|h| {
                if h.shared {
                    h.map_slots as f64
                } else {
                    (h.map_slots + h.reduce_slots) as f64
                }
            })
            .sum();
        water_fill(total, &demand)
    }
    /// OCS circuits currently up.
    pub fn circuits(&self) -> &'a BTreeSet<Circuit> {
        &self.c.circuits
    }
    /// The latest measured load of each link the driver reports, and when
    /// it was measured (`None` before the first sample).
    pub fn link_loads(&self) -> (&'a BTreeMap<Link, LinkLoad>, Option<Nanos>) {
        (&self.c.loads, self.c.load_at)
    }
    /// The engine's own count of cross-rack flows in flight at `rack`.
    pub fn rack_traffic(&self, rack: u32) -> RackTraffic {
        self.c
            .rack_traffic
            .get(rack as usize)
            .copied()
            .unwrap_or_default()
    }
    /// Maps the engine would accept now, over all active jobs.
    pub fn runnable_maps(&self) -> usize {
        self.c.runnable_maps
    }
    /// Reduces the engine would accept now (slow-start passed).
    pub fn runnable_reduces(&self) -> usize {
        self.c.runnable_reduces
    }
    /// Whether the engine would start a reduce of `job` now: the job has a
    /// runnable reduce and, under shared slots while the job still has maps
    /// to finish, reduces waiting on maps hold less than
    /// `reduce_rampup_limit` of the cluster's slots (so waiting reduces
    /// can never starve the maps they wait for).
    pub fn can_start_reduce(&self, job: &JobState) -> bool {
        self.reduce_gate().admits(job)
    }
    /// [`ClusterView::can_start_reduce`] for many jobs at one instant: the
    /// cluster-wide ramp-up count is taken once, not once per job.
    pub fn reduce_gate(&self) -> ReduceGate<'a> {
        ReduceGate::new(self.c)
    }
    /// Whether `job` is active.
    pub fn is_active(&self, job: JobId) -> bool {
        self.job(job).is_some_and(|j| j.status == JobStatus::Active)
    }
}

/// Whether the engine would start reduces now, for the jobs of one
/// instant ([`ClusterView::reduce_gate`]): the cluster-wide ramp-up count
/// is taken at most once, when a job first needs it.
pub struct ReduceGate<'a> {
    c: &'a Cluster,
    rampup_open: std::cell::OnceCell<bool>,
}

impl<'a> ReduceGate<'a> {
    fn new(c: &'a Cluster) -> ReduceGate<'a> {
        ReduceGate {
            c,
            rampup_open: std::cell::OnceCell::new(),
        }
    }

    /// Whether the engine would start a reduce of `job` now: the job has a
    /// runnable reduce and the ramp-up guard lets it start.
    pub fn admits(&self, job: &JobState) -> bool {
        job.has_runnable_reduce() && self.may_start(job)
    }

    /// The ramp-up guard: under shared slots, while `job` still has maps to
    /// finish, reduces waiting on maps hold less than `reduce_rampup_limit`
    /// of the cluster's slots.
    pub(crate) fn may_start(&self, job: &JobState) -> bool {
        let Some(h) = self.c.hosts.first() else {
            return false;
        };
        !h.shared
            || job.maps_done == job.spec.map_count()
            || *self.rampup_open.get_or_init(|| self.c.rampup_open())
    }
}

/// What [`Cluster::start_attempt`] did, for the engine's records.
pub(crate) struct Started {
    pub(crate) id: AttemptId,
    pub(crate) first_attempt: bool,
    /// The job's map progress when the attempt started.
    pub(crate) map_progress: f64,
}

impl Cluster {
    /// An empty cluster on `topo`: every host alive, with the slots and
    /// speed `config` gives it.
    pub(crate) fn new(topo: &Topology, config: EngineConfig) -> Cluster {
        let hosts = topo
            .host_ids()
            .map(|id| {
                let (map_slots, reduce_slots, shared) = match config.slots {
                    SlotConfig::Shared => (topo.slots_per_host, topo.slots_per_host, true),
                    SlotConfig::Split { map, reduce } => (map, reduce, false),
                };
                HostState {
                    id,
                    alive: true,
                    speed: config.host_speed.get(&id).copied().unwrap_or(1.0),
                    map_slots,
                    reduce_slots,
                    shared,
                    running_maps: 0,
                    running_reduces: 0,
                    attempts: BTreeSet::new(),
                }
            })
            .collect();
        Cluster {
            topo: topo.clone(),
            config,
            jobs: BTreeMap::new(),
            active: BTreeSet::new(),
            children: BTreeMap::new(),
            attempts: KeyedMap::default(),
            hosts,
            users: BTreeMap::new(),
            circuits: BTreeSet::new(),
            loads: BTreeMap::new(),
            load_at: None,
            rack_traffic: vec![RackTraffic::default(); topo.racks as usize],
            runnable_maps: 0,
            runnable_reduces: 0,
        }
    }

    /// A job arrives: it is known (blocked until [`Cluster::activate`]),
    /// with its user and its edges to its parents.
    pub(crate) fn admit(&mut self, job: Job) {
        let id = job.id;
        for p in &job.parents {
            self.children.entry(*p).or_default().push(id);
        }
        self.users.entry(job.user).or_default();
        self.jobs.insert(id, JobState::new(job));
    }

    /// Makes job `id` runnable from `ready`: its maps (and reduces, locked
    /// until slow-start) become pending. False if there is no such job.
    pub(crate) fn activate(&mut self, id: JobId, ready: Nanos) -> bool {
        let Some(job) = self.jobs.get_mut(&id) else {
            return false;
        };
        job.status = JobStatus::Active;
        job.ready_at = Some(ready);
        job.touch();
        self.active.insert((ready, id));
        for m in 0..job.spec.map_count() {
            add_pending_map(job, m);
        }
        job.pending_reduces = (0..job.spec.reduce_count()).collect();
        self.runnable_maps += job.pending_maps.len();
        let user = job.spec.user;
        self.users.entry(user).or_default().active_jobs += 1;
        true
    }

    /// A load sample taken at `at`: each link's latest load.
    pub(crate) fn record_loads(&mut self, at: Nanos, loads: impl IntoIterator<Item = LinkLoad>) {
        for l in loads {
            self.loads.insert(l.link, l);
        }
        self.load_at = Some(at);
    }

    /// Unlocks a job's reduces once `ceil(slow_start × maps)` maps are done;
    /// true if that made reduces runnable.
    pub(crate) fn check_slow_start(&mut self, id: JobId) -> bool {
        let slow_start = self.config.slow_start;
        let Some(job) = self.jobs.get_mut(&id) else {
            return false;
        };
        if job.reduces_unlocked || job.status != JobStatus::Active {
            return false;
        }
        let needed = (slow_start * job.spec.map_count() as f64).ceil() as u32;
        if job.maps_done < needed {
            return false;
        }
        job.reduces_unlocked = true;
        self.runnable_reduces += job.pending_reduces.len();
        !job.pending_reduces.is_empty()
    }

    /// Whether `task` may start on host index `hi` now (a speculative copy
    /// only of a running task, and not on a host already running it).
    pub(crate) fn acceptable(&self, hi: usize, task: TaskId, speculative: bool) -> bool {
        let host = &self.hosts[hi];
        let Some(job) = self.jobs.get(&task.job) else {
            return false;
        };
        let Some(ts) = job.task(task.kind, task.index) else {
            return false;
        };
        if !runnable(job, task.kind) || !host.free().fits(task.kind) {
            return false;
        }
        if task.kind == TaskKind::Reduce && !ReduceGate::new(self).may_start(job) {
            return false;
        }
        match (speculative, ts.status) {
            (false, TaskStatus::Pending) => true,
            (true, TaskStatus::Running) => !ts
                .live
                .iter()
                .any(|a| self.attempts.get(a).is_some_and(|s| s.host == host.id)),
            _ => false,
        }
    }

    /// Starts an attempt of `task` on host index `hi` at `now`, fetching
    /// (a map reads its input, a reduce its partitions). The caller has
    /// checked [`Cluster::acceptable`].
    pub(crate) fn start_attempt(
        &mut self,
        now: Nanos,
        hi: usize,
        task: TaskId,
        speculative: bool,
    ) -> Option<Started> {
        let host = self.hosts[hi].id;
        let hosts_per_rack = self.topo.hosts_per_rack;
        let job = self.jobs.get_mut(&task.job)?;
        let ts = match task.kind {
            TaskKind::Map => &mut job.maps[task.index as usize],
            TaskKind::Reduce => &mut job.reduces[task.index as usize],
        };
        let first_attempt = ts.attempts_started == 0;
        let id = AttemptId {
            task,
            n: ts.attempts_started,
        };
        ts.attempts_started += 1;
        if ts.live.capacity() == 0 {
            // Room for one: a task has one attempt unless one is speculative.
            ts.live.reserve_exact(1);
        }
        ts.live.push(id);
        ts.status = TaskStatus::Running;
        if !speculative {
            match task.kind {
                TaskKind::Map => {
                    remove_pending_map(job, task.index);
                    self.runnable_maps -= 1;
                }
                TaskKind::Reduce => {
                    job.pending_reduces.remove(&task.index);
                    job.touch();
                    self.runnable_reduces -= 1;
                }
            }
        }
        let user = job.spec.user;
        let u = self.users.entry(user).or_default();
        let h = &mut self.hosts[hi];
        match task.kind {
            TaskKind::Map => {
                job.running_maps += 1;
                u.running_maps += 1;
                h.running_maps += 1;
            }
            TaskKind::Reduce => {
                job.running_reduces += 1;
                u.running_reduces += 1;
                h.running_reduces += 1;
            }
        }
        h.attempts.insert(id);
        let locality = match task.kind {
            TaskKind::Map => {
                let replicas = &job.spec.maps[task.index as usize].replicas;
                Some(if replicas.contains(&host) {
                    Locality::NodeLocal
                } else if replicas.iter().any(|r| r.rack == host.rack) {
                    Locality::RackLocal
                } else {
                    Locality::Remote
                })
            }
            TaskKind::Reduce => None,
        };
        let map_progress = job.map_progress();
        let maps = job.spec.map_count();
        if task.kind == TaskKind::Reduce {
            job.place_reduce(task.index, host);
            if first_attempt {
                job.reduces_placed += 1;
            }
        }
        self.attempts.insert(
            id,
            AttemptState {
                id,
                host,
                started: now,
                phase: Phase::Fetching,
                compute_started: None,
                rebase: None,
                speculative,
                locality,
                input_flow: None,
                fetch: (task.kind == TaskKind::Reduce).then(|| Fetch::new(maps, hosts_per_rack)),
            },
        );
        Some(Started {
            id,
            first_attempt,
            map_progress,
        })
    }

    /// Under shared slots: whether reduces waiting on maps hold less than
    /// `reduce_rampup_limit` of the cluster's slots.
    fn rampup_open(&self) -> bool {
        let waiting: u32 = self
            .active
            .iter()
            .filter_map(|(_, id)| self.jobs.get(id))
            .filter(|j| j.maps_done < j.spec.map_count())
            .map(|j| j.running_reduces)
            .sum();
        let slots: u32 = self.hosts.iter().filter(|h| h.alive).map(|h| h.map_slots).sum();
        (waiting as f64) < self.config.reduce_rampup_limit * slots as f64
    }
}

/// Max-min fair division of `total` among `demand`s (equal weights).
pub fn water_fill(total: f64, demand: &BTreeMap<UserId, f64>) -> BTreeMap<UserId, f64> {
    let mut share: BTreeMap<UserId, f64> = demand.keys().map(|u| (*u, 0.0)).collect();
    let mut left = total;
    let mut open: Vec<(UserId, f64)> = demand.iter().map(|(u, d)| (*u, *d)).collect();
    open.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    let mut n = open.len();
    for (u, d) in open {
        let even = left / n as f64;
        let give = d.min(even);
        share.insert(u, give);
        left -= give;
        n -= 1;
    }
    share
}
