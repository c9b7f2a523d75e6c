//! Job life in the engine: submission, DAG gating (a job runs once its
//! parents are done), slow-start, completion; and host failure/return.

use super::records::{JobRecord, Outcome};
use super::state::{JobState, JobStatus, TaskStatus};
use super::{ClusterView, Engine};
use crate::model::job::{JobId, TaskKind};
use crate::{Bytes, HostId, Nanos};

impl Engine {
    /// Submits every job whose arrival time has come.
    pub(super) fn admit_arrivals(&mut self, now: Nanos) {
        while self.future.front().is_some_and(|j| j.arrival <= now) {
            let Some(job) = self.future.pop_front() else { break };
            let id = job.id;
            self.records.jobs.insert(
                id,
                JobRecord {
                    job: id,
                    name: job.name.clone(),
                    user: job.user,
                    recurring: job.recurring,
                    parents: job.parents.len() as u32,
                    arrival: job.arrival,
                    ready: None,
                    first_task: None,
                    maps_done: None,
                    finished: None,
                    maps: job.map_count(),
                    reduces: job.reduce_count(),
                    input_bytes: job.input_bytes(),
                    shuffle_bytes: Bytes(0),
                    cross_rack_shuffle_bytes: Bytes(0),
                    input_read_bytes: Bytes(0),
                    cross_rack_input_bytes: Bytes(0),
                    locality: [0; 3],
                    map_progress_at_first_reduce: None,
                    shuffle_hold_released: false,
                },
            );
            let arrival = job.arrival;
            self.c.admit(job);
            if self.parents_done(id) {
                self.activate(now, id, arrival);
            }
        }
    }

    fn parents_done(&self, id: JobId) -> bool {
        let Some(job) = self.c.jobs.get(&id) else {
            return false;
        };
        job.spec
            .parents
            .iter()
            .all(|p| self.c.jobs.get(p).is_some_and(|pj| pj.status == JobStatus::Done))
    }

    /// Makes a submitted job runnable: the blocks its parents wrote are
    /// placed where they wrote them, then its maps (and, past slow-start,
    /// its reduces) become pending.
    fn activate(&mut self, now: Nanos, id: JobId, ready: Nanos) {
        self.place_parent_output(id);
        if !self.c.activate(id, ready) {
            return;
        }
        if let Some(r) = self.records.jobs.get_mut(&id) {
            r.ready = Some(ready);
        }
        self.new_work = true;
        self.check_slow_start(id);
        let view = ClusterView { c: &self.c };
        self.policy.on_job_arrival(now, &view, id);
    }

    /// Unlocks a job's reduces once `ceil(slow_start × maps)` maps are done.
    pub(super) fn check_slow_start(&mut self, id: JobId) {
        if self.c.check_slow_start(id) {
            self.new_work = true;
        }
    }

    /// Marks a job done, then runs the children it was the last parent of.
    pub(super) fn job_finished(&mut self, now: Nanos, id: JobId) {
        if !self.c.finish_job(now, id) {
            return;
        }
        if let Some(r) = self.records.jobs.get_mut(&id) {
            r.finished = Some(now);
        }
        self.jobs_done += 1;
        let view = ClusterView { c: &self.c };
        self.policy.on_job_finished(now, &view, id);
        let children = self.c.children.get(&id).cloned().unwrap_or_default();
        for child in children {
            let blocked = self
                .c
                .jobs
                .get(&child)
                .is_some_and(|j| j.status == JobStatus::Blocked);
            if blocked && self.parents_done(child) {
                self.activate(now, child, now);
            }
        }
    }

    /// A host died: its attempts are lost (their tasks pending again), and
    /// map outputs stored there that an unfinished reduce still lacks are
    /// re-run; flows from it are abandoned (input reads restart elsewhere).
    pub(super) fn host_dead(&mut self, now: Nanos, h: HostId) {
        if !self.c.topo.contains(h) {
            return;
        }
        let hi = self.c.topo.host_index(h);
        if !self.c.hosts[hi].alive {
            return;
        }
        self.c.hosts[hi].alive = false;
        self.holds_changed = true;
        self.free_hosts.remove(&hi);
        let lost: Vec<_> = self.c.hosts[hi].attempts.iter().copied().collect();
        for a in lost {
            self.end_attempt(now, a, Outcome::Lost);
        }
        let jobs: Vec<JobId> = self
            .c
            .jobs
            .values()
            .filter(|j| j.status == JobStatus::Active && j.output_by_host.contains_key(&h))
            .map(|j| j.spec.id)
            .collect();
        for id in jobs {
            self.lose_outputs(now, id, h);
        }
        let inputs: Vec<_> = self
            .flows
            .iter()
            .filter(|(_, f)| f.useful && f.src == h && f.kind == super::FlowKind::Input)
            .map(|(id, f)| (*id, f.attempt))
            .collect();
        for (fid, attempt) in inputs {
            if let Some(f) = self.flows.get_mut(&fid) {
                f.useful = false;
            }
            self.start_input_read(now, attempt);
        }
        self.new_work = true;
    }

    /// Re-runs the maps of job `id` whose output on dead host `h` some
    /// unfinished reduce still lacks, and abandons fetches from `h` (a
    /// reduce held at `parallel_copies` then fetches from another host).
    fn lose_outputs(&mut self, now: Nanos, id: JobId, h: HostId) {
        let Some(job) = self.c.jobs.get(&id) else { return };
        let live: Vec<_> = job.live_reduces().collect();
        let h_ix = job.done_on.get(&h).map(|on| on.ix);
        let pending_reduce = job.reduces.iter().any(|t| t.status == TaskStatus::Pending);
        let on_h: Vec<u32> = (0..job.spec.map_count())
            .filter(|&m| job.maps[m as usize].done.is_some_and(|d| d.host == h))
            .collect();
        let mut rerun = Vec::new();
        for m in on_h {
            let needed = pending_reduce
                || live.iter().any(|a| {
                    self.c
                        .attempts
                        .get(a)
                        .and_then(|s| s.fetch.as_ref())
                        .is_some_and(|f| !f.has(m))
                });
            if needed {
                rerun.push(m);
            }
        }
        for a in &live {
            let Some(fetch) = self.c.attempts.get_mut(a).and_then(|s| s.fetch.as_mut()) else {
                continue;
            };
            if let Some(fid) = h_ix.and_then(|ix| fetch.forget(h, ix)) {
                if let Some(f) = self.flows.get_mut(&fid) {
                    f.useful = false;
                }
            }
        }
        for a in &live {
            self.pump(now, *a);
        }
        let Some(job) = self.c.jobs.get_mut(&id) else {
            return;
        };
        for m in rerun {
            let Some(done) = job.maps[m as usize].done.take() else {
                continue;
            };
            job.maps[m as usize].status = TaskStatus::Pending;
            job.touch();
            job.maps_done -= 1;
            let input = job.spec.maps[m as usize].input;
            job.input_done = Bytes(job.input_done.0.saturating_sub(input.0));
            job.output_done = Bytes(job.output_done.0.saturating_sub(done.output.0));
            sub(job.output_by_rack.entry(h.rack).or_default(), done.output);
            sub(job.output_by_host.entry(h).or_default(), done.output);
            if let Some(on) = job.done_on.get_mut(&h) {
                on.maps.retain(|&x| x != m);
            }
            for r in 0..job.spec.reduce_count() {
                let p = job.spec.partition_of_output(m, r, done.output);
                sub(&mut job.output_for_reduce[r as usize], p);
            }
            add_pending_map(job, m);
            self.c.runnable_maps += 1;
        }
        job.output_by_host.retain(|_, b| b.0 > 0);
        job.output_by_rack.retain(|_, b| b.0 > 0);
    }

    /// A host is back, empty.
    pub(super) fn host_alive(&mut self, h: HostId) {
        if !self.c.topo.contains(h) {
            return;
        }
        let hi = self.c.topo.host_index(h);
        self.c.hosts[hi].alive = true;
        if self.c.hosts[hi].free().any() {
            self.free_hosts.insert(hi);
        }
        self.new_work = true;
    }
}

fn sub(b: &mut Bytes, x: Bytes) {
    b.0 = b.0.saturating_sub(x.0);
}

/// Makes map `m` pending in the job's indices (by host and rack of its replicas).
pub(super) fn add_pending_map(job: &mut JobState, m: u32) {
    job.touch();
    job.pending_maps.insert(m);
    for h in &job.spec.maps[m as usize].replicas {
        job.pending_by_host.entry(*h).or_default().insert(m);
        job.pending_by_rack.entry(h.rack).or_default().insert(m);
    }
}

/// Removes map `m` from the job's pending indices.
pub(super) fn remove_pending_map(job: &mut JobState, m: u32) {
    job.touch();
    job.pending_maps.remove(&m);
    for h in &job.spec.maps[m as usize].replicas {
        if let Some(s) = job.pending_by_host.get_mut(h) {
            s.remove(&m);
            if s.is_empty() {
                job.pending_by_host.remove(h);
            }
        }
        if let Some(s) = job.pending_by_rack.get_mut(&h.rack) {
            s.remove(&m);
            if s.is_empty() {
                job.pending_by_rack.remove(&h.rack);
            }
        }
    }
}

/// Whether `kind` tasks of `job` count as runnable now.
pub(super) fn runnable(job: &JobState, kind: TaskKind) -> bool {
    job.status == JobStatus::Active && (kind == TaskKind::Map || job.reduces_unlocked)
}
