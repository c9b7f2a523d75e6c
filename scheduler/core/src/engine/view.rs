//! [`ClusterView`]: the read-only picture of the cluster a policy decides
//! from. It borrows the engine's state; a policy cannot change it, and it
//! is the same under simulation and emulation.

use super::config::EngineConfig;
use super::event::{AttemptId, Circuit, Link, LinkLoad};
use super::state::{AttemptState, HostState, JobState, JobStatus, RackTraffic, UserState};
use crate::model::job::{JobId, UserId};
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
    pub(crate) attempts: BTreeMap<AttemptId, AttemptState>,
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
        job.has_runnable_reduce() && self.c.reduce_may_start(job)
    }
    /// Whether `job` is active.
    pub fn is_active(&self, job: JobId) -> bool {
        self.job(job).is_some_and(|j| j.status == JobStatus::Active)
    }
}

impl Cluster {
    /// The ramp-up guard of [`ClusterView::can_start_reduce`].
    pub(crate) fn reduce_may_start(&self, job: &JobState) -> bool {
        let Some(h) = self.hosts.first() else { return false };
        if !h.shared || job.maps_done == job.spec.map_count() {
            return true;
        }
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
