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
use crate::engine::{ClusterView, JobState as EngineJob, Link, ReduceGate};
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

/// Builds views, caching per-job facts that do not change. The view of one
/// offer is refilled in place by the next: with hundreds of active jobs an
/// offer would otherwise allocate a dozen vectors per job.
#[derive(Clone, Debug, Default)]
pub struct ViewBuilder {
    jobs: JobFiller,
    last: NetView,
}

/// Fills a view's [`JobState`]s: the per-job facts that do not change,
/// what each place of the last view was filled from, and scratch space.
#[derive(Clone, Debug, Default)]
struct JobFiller {
    facts: BTreeMap<JobId, JobFacts>,
    /// Per place in the last view's jobs: the job and its
    /// [`EngineJob::version`] when its offer-independent fields were filled.
    /// While both hold, only the fields that depend on the offer are.
    seen: Vec<(JobId, u64)>,
    /// The pending maps an offer passes for one job, by index.
    sample: Vec<u32>,
}

/// The engine's job id as the policies see it.
pub fn key(id: JobId) -> JobKey {
    JobKey(id.0)
}

impl ViewBuilder {
    /// Forgets a finished job's facts.
    pub fn forget(&mut self, job: JobId) {
        self.jobs.facts.remove(&job);
    }

    /// The view for an offer of a slot on `host`. `with_dag` adds the job
    /// DAG and the outputs (Dawn needs them; they cost a pass over every
    /// arrived job).
    pub fn build(&mut self, now: Nanos, view: &ClusterView<'_>, host: HostId, with_dag: bool) -> &NetView {
        let topo = view.topology();
        let nv = &mut self.last;
        nv.now = now;
        nv.racks = topo.racks;
        nv.hosts_per_rack = topo.hosts_per_rack;
        nv.slots_per_host = topo.slots_per_host;
        nv.users = fair_users(view);
        nv.cross_rack_utilization = rack_utilization(view);
        nv.dag = JobDag::default();
        nv.outputs.clear();
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
        let gate = view.reduce_gate();
        let mut n = 0;
        for job in view.active_jobs() {
            if n == nv.jobs.len() {
                nv.jobs
                    .push(JobState::new(key(job.id()), UserKey(0), Nanos(0), 0));
            }
            let s = &mut nv.jobs[n];
            let seen = (job.id(), job.version());
            let same_job = self.jobs.seen.get(n).is_some_and(|&(id, _)| id == job.id());
            if self.jobs.seen.get(n) != Some(&seen) {
                self.jobs.fill_job(s, view, job);
                match self.jobs.seen.get_mut(n) {
                    Some(at) => *at = seen,
                    None => self.jobs.seen.push(seen),
                }
            }
            self.jobs.fill_offer(s, &gate, job, host, false, same_job);
            s.running_maps.clear();
            if let Some(r) = running.remove(&job.id()) {
                s.running_maps.extend(r);
            }
            n += 1;
        }
        nv.jobs.truncate(n);
        self.jobs.seen.truncate(n);
        if with_dag {
            add_dag(view, nv);
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
        let mut s = JobState::new(key(job), UserKey(0), Nanos(0), 0);
        let gate = view.reduce_gate();
        self.jobs.fill_job(&mut s, view, j);
        self.jobs.fill_offer(&mut s, &gate, j, any_host, true, false);
        nv.jobs.push(s);
        Some(nv)
    }
}

impl JobFiller {
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

    /// Fills the fields of `s` that depend on `job` alone, reusing its
    /// vectors ([`JobFiller::fill_offer`] fills the rest).
    fn fill_job(&mut self, s: &mut JobState, view: &ClusterView<'_>, job: &EngineJob) {
        let racks = view.topology().racks as usize;
        let spec = job.spec();
        let mut input_per_rack = std::mem::take(&mut s.input_per_rack);
        let facts = self.facts(view, job);
        input_per_rack.clone_from(&facts.input_per_rack);
        let input_total = facts.input_total;
        let mut map_output_per_rack = std::mem::take(&mut s.map_output_per_rack);
        map_output_per_rack.clear();
        map_output_per_rack.resize(racks, Bytes(0));
        for (r, b) in job.map_output_by_rack() {
            if let Some(slot) = map_output_per_rack.get_mut(*r as usize) {
                *slot = *b;
            }
        }
        let mut reduces_per_rack = std::mem::take(&mut s.reduces_per_rack);
        reduces_per_rack.clear();
        reduces_per_rack.resize(racks, 0);
        for (r, n) in job.reduces_by_rack() {
            if let Some(slot) = reduces_per_rack.get_mut(*r as usize) {
                *slot = *n;
            }
        }
        *s = JobState {
            id: key(job.id()),
            user: UserKey(spec.user.0),
            arrival: job.ready_at().unwrap_or(spec.arrival),
            maps_total: spec.map_count(),
            maps_done: job.maps_done(),
            pending_maps: std::mem::take(&mut s.pending_maps),
            running_maps: std::mem::take(&mut s.running_maps),
            input_total,
            input_per_rack,
            done_map_input: job.map_input_done(),
            done_map_output: job.map_output_done(),
            mean_map_ratio: job.observed_shuffle_ratio(),
            known_ratio: spec.recurring.then(|| spec.shuffle_input_ratio()),
            map_output_per_rack,
            map_output_on_host: s.map_output_on_host,
            reduces_total: spec.reduce_count(),
            reduces_pending: job.pending_reduces().len() as u32,
            reduces_per_rack,
            reduces_ready: s.reduces_ready,
            expected_output: s.expected_output,
        };
    }

    /// Fills the fields of `s` that depend on the offer: the pending maps
    /// it passes (every one with `all_maps`), the output on `host`, whether
    /// a reduce may start, and the expected output (left for the DAG).
    /// `running_maps` is left for the caller. `same_job`: `s` held `job`
    /// before, so a pending map at the place it had keeps its fields.
    fn fill_offer(
        &mut self,
        s: &mut JobState,
        gate: &ReduceGate<'_>,
        job: &EngineJob,
        host: HostId,
        all_maps: bool,
        same_job: bool,
    ) {
        let spec = job.spec();
        let pending = job.pending_maps();
        let sample = &mut self.sample;
        sample.clear();
        if all_maps {
            sample.extend(pending.iter().copied());
        } else {
            sample.extend(
                job.pending_maps_on_host(host)
                    .chain(job.pending_maps_on_rack(host.rack).take(RACK_SAMPLE))
                    .chain(pending.iter().take(HEAD_SAMPLE).copied())
                    .chain(pending.last().copied()),
            );
            sample.sort_unstable();
            sample.dedup();
        }
        let mut kept = 0;
        for &i in sample.iter() {
            let Some(m) = spec.maps.get(i as usize) else {
                continue;
            };
            match s.pending_maps.get_mut(kept) {
                // The map this place held at the last offer: its input and
                // replicas are what they were.
                Some(p) if same_job && p.index == i => {}
                Some(p) => {
                    p.index = i;
                    p.input = m.input;
                    p.replicas.clone_from(&m.replicas);
                }
                None => s.pending_maps.push(PendingMap {
                    index: i,
                    input: m.input,
                    replicas: m.replicas.clone(),
                }),
            }
            kept += 1;
        }
        s.pending_maps.truncate(kept);
        s.map_output_on_host = job.map_output_by_host().get(&host).copied().unwrap_or_default();
        s.reduces_ready = gate.admits(job);
        s.expected_output = Bytes(0);
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
        for (r, n) in job.reduces_by_rack() {
            if let Some(slot) = per.get_mut(*r as usize) {
                *slot += Bytes(bytes / u64::from(reduces) * u64::from(*n));
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
