//! Builds a [`NetView`] from the engine's [`ClusterView`] for one offer.
//!
//! What it takes from the engine, and the choices made:
//! - users in Hadoop Fair order (fewest running tasks first, then id),
//!   over users with active jobs — the order [`crate::policy::fair`] uses;
//! - cross-rack utilization of rack r: the larger of the latest `RackUp(r)`
//!   and `RackDown(r)` load samples (0 before the first sample);
//! - per job, the pending maps a decision can depend on, not all of them
//!   (a 1 TB job has thousands): every pending map with a replica on the
//!   offered host, up to [`RACK_SAMPLE`] with a replica in its rack, the
//!   [`HEAD_SAMPLE`] lowest-indexed and the highest-indexed one (the
//!   partial last block, the smallest input). Node-, rack- and off-rack
//!   choices by lowest index are therefore exact; NAS's "output closest to
//!   the space left" among off-rack maps sees this sample;
//! - running maps only on the offered host (NAS's per-node output);
//! - NAS's mean per-map ratio is the engine's observed output/input ratio
//!   (the same for the engine's ratio-model jobs, where every map of a job
//!   has one ratio); a recurring job's ratio is known in advance;
//! - Dawn's output sizes: a job's output is what its children read from it
//!   (the child's blocks [`written_by`] it; for a workload that does not
//!   mark them, the child's input split evenly over its parents), spread
//!   evenly over the racks its reduces ran on.
//!
//! [`written_by`]: crate::model::job::MapTask::written_by

use super::{JobDag, JobKey, JobState, NetView, PendingMap, UserKey};
use crate::engine::{ClusterView, JobState as EngineJob, Link};
use crate::model::job::{JobId, TaskKind};
use crate::{Bytes, HostId, Nanos};
use std::collections::{BTreeMap, BTreeSet};

/// Rack-local pending maps passed per job and offer.
pub const RACK_SAMPLE: usize = 8;
/// Lowest-indexed pending maps passed per job and offer.
pub const HEAD_SAMPLE: usize = 4;

/// Per-job facts computed once.
#[derive(Clone, Debug)]
struct JobFacts {
    input_per_rack: Vec<Bytes>,
    /// The job's input (a sum over its maps: thousands for a large job).
    input_total: Bytes,
}

/// Builds views, caching per-job facts that do not change.
#[derive(Clone, Debug, Default)]
pub struct ViewBuilder {
    facts: BTreeMap<JobId, JobFacts>,
}

/// The engine's job id as the policies see it.
pub fn key(id: JobId) -> JobKey {
    JobKey(id.0)
}

impl ViewBuilder {
    /// Forgets a finished job's facts.
    pub fn forget(&mut self, job: JobId) {
        self.facts.remove(&job);
    }

    fn facts(&mut self, view: &ClusterView<'_>, job: &EngineJob) -> &JobFacts {
        let racks = view.topology().racks as usize;
        self.facts.entry(job.id()).or_insert_with(|| {
            let mut per = vec![Bytes(0); racks];
            for m in &job.spec().maps {
                let on: BTreeSet<u32> = m.replicas.iter().map(|h| h.rack).collect();
                for r in on {
                    if let Some(slot) = per.get_mut(r as usize) {
                        *slot += m.input;
                    }
                }
            }
            JobFacts {
                input_per_rack: per,
                input_total: job.spec().input_bytes(),
            }
        })
    }

    /// The view for an offer of a slot on `host`. `with_dag` adds the job
    /// DAG and the outputs (Dawn needs them; they cost a pass over every
    /// arrived job).
    pub fn build(&mut self, now: Nanos, view: &ClusterView<'_>, host: HostId, with_dag: bool) -> NetView {
        let topo = view.topology();
        let mut nv = NetView::new(topo.racks, topo.hosts_per_rack, topo.slots_per_host);
        nv.now = now;
        nv.users = fair_users(view);
        nv.cross_rack_utilization = rack_utilization(view);
        let mut running: BTreeMap<JobId, Vec<(HostId, Bytes)>> = BTreeMap::new();
        if let Some(h) = view.host(host) {
            for a in h.attempts() {
                if a.task.kind == TaskKind::Map {
                    if let Some(m) = view
                        .job(a.task.job)
                        .and_then(|j| j.spec().maps.get(a.task.index as usize))
                    {
                        running.entry(a.task.job).or_default().push((host, m.input));
                    }
                }
            }
        }
        for job in view.active_jobs() {
            let mut state = self.job_state(view, job, host, false);
            state.running_maps = running.remove(&job.id()).unwrap_or_default();
            nv.jobs.push(state);
        }
        if with_dag {
            add_dag(view, &mut nv);
        }
        nv
    }

    /// A view holding only `job`, with every pending map (SAMP at arrival).
    pub fn single(&mut self, now: Nanos, view: &ClusterView<'_>, job: JobId) -> Option<NetView> {
        let topo = view.topology();
        let mut nv = NetView::new(topo.racks, topo.hosts_per_rack, topo.slots_per_host);
        nv.now = now;
        let j = view.job(job)?;
        nv.users = vec![UserKey(j.user().0)];
        let any_host = HostId::new(0, 0);
        nv.jobs.push(self.job_state(view, j, any_host, true));
        Some(nv)
    }

    fn job_state(
        &mut self,
        view: &ClusterView<'_>,
        job: &EngineJob,
        host: HostId,
        all_maps: bool,
    ) -> JobState {
        let racks = view.topology().racks;
        let spec = job.spec();
        let mut s = JobState::new(
            key(job.id()),
            UserKey(spec.user.0),
            job.ready_at().unwrap_or(spec.arrival),
            racks,
        );
        let facts = self.facts(view, job);
        s.input_per_rack.clone_from(&facts.input_per_rack);
        s.input_total = facts.input_total;
        s.maps_total = spec.map_count();
        s.maps_done = job.maps_done();
        s.done_map_input = job.map_input_done();
        s.done_map_output = job.map_output_done();
        s.mean_map_ratio = job.observed_shuffle_ratio();
        s.known_ratio = spec.recurring.then(|| spec.shuffle_input_ratio());
        for (r, b) in job.map_output_by_rack() {
            if let Some(slot) = s.map_output_per_rack.get_mut(*r as usize) {
                *slot = *b;
            }
        }
        s.map_output_on_host = job.map_output_by_host().get(&host).copied().unwrap_or_default();
        s.reduces_total = spec.reduce_count();
        s.reduces_pending = job.pending_reduces().len() as u32;
        for h in job.reduce_hosts().values() {
            if let Some(slot) = s.reduces_per_rack.get_mut(h.rack as usize) {
                *slot += 1;
            }
        }
        s.reduces_ready = view.can_start_reduce(job);
        let pending = job.pending_maps();
        let indices: Vec<u32> = if all_maps {
            pending.iter().copied().collect()
        } else {
            let mut v: Vec<u32> = job
                .pending_maps_on_host(host)
                .chain(job.pending_maps_on_rack(host.rack).take(RACK_SAMPLE))
                .chain(pending.iter().take(HEAD_SAMPLE).copied())
                .chain(pending.last().copied())
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        s.pending_maps = indices
            .into_iter()
            .filter_map(|i| {
                spec.maps.get(i as usize).map(|m| PendingMap {
                    index: i,
                    input: m.input,
                    replicas: m.replicas.clone(),
                })
            })
            .collect();
        s
    }
}

/// Users with active jobs, fewest running tasks first, then by id.
pub fn fair_users(view: &ClusterView<'_>) -> Vec<UserKey> {
    let mut users: Vec<(u32, u32)> = view
        .users()
        .iter()
        .filter(|(_, u)| u.active_jobs > 0)
        .map(|(id, u)| (u.running_tasks(), id.0))
        .collect();
    users.sort_unstable();
    users.into_iter().map(|(_, id)| UserKey(id)).collect()
}

/// Per rack: max(uplink, downlink) utilization from the latest samples.
pub fn rack_utilization(view: &ClusterView<'_>) -> Vec<f64> {
    let mut util = vec![0.0; view.topology().racks as usize];
    for (link, load) in view.link_loads().0 {
        let r = match link {
            Link::RackUp(r) | Link::RackDown(r) => *r as usize,
            _ => continue,
        };
        if let Some(u) = util.get_mut(r) {
            if load.utilization.is_finite() {
                *u = f64::max(*u, load.utilization);
            }
        }
    }
    util
}

/// Adds the DAG of all arrived jobs, each parent's expected output (what
/// its children read from it) and where that output lies.
fn add_dag(view: &ClusterView<'_>, nv: &mut NetView) {
    let racks = view.topology().racks as usize;
    let mut dag = JobDag::default();
    let mut expected: BTreeMap<JobId, u64> = BTreeMap::new();
    for child in view.arrived_jobs() {
        let parents = &child.spec().parents;
        if parents.is_empty() {
            continue;
        }
        let written = child.spec().maps.iter().any(|m| m.written_by.is_some());
        let share = child.spec().input_bytes().0 / parents.len() as u64;
        for p in parents {
            dag.add_edge(key(*p), key(child.id()));
            if written {
                let from_p = child.spec().maps.iter().filter(|m| m.written_by == Some(*p));
                *expected.entry(*p).or_default() += from_p.map(|m| m.input.0).sum::<u64>();
            } else {
                *expected.entry(*p).or_default() += share;
            }
        }
    }
    for (p, bytes) in &expected {
        let Some(job) = view.job(*p) else { continue };
        let reduces = job.spec().reduce_count().max(1);
        let mut per = vec![Bytes(0); racks];
        for h in job.reduce_hosts().values() {
            if let Some(slot) = per.get_mut(h.rack as usize) {
                *slot += Bytes(bytes / u64::from(reduces));
            }
        }
        if per.iter().any(|b| b.0 > 0) {
            nv.outputs.insert(key(*p), per);
        }
    }
    for j in &mut nv.jobs {
        if let Some(b) = expected.get(&JobId(j.id.0)) {
            j.expected_output = Bytes(*b);
        }
    }
    nv.dag = dag;
}
