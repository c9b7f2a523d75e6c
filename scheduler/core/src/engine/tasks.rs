//! Task attempts in the engine: launching a policy's choice on a host,
//! starting compute, finishing (the first attempt of a task to finish
//! wins; the others are killed), and ending attempts.

use super::event::{AttemptId, Command};
use super::records::{FlowKind, Outcome};
use super::state::{Locality, Phase};
use super::TaskChoice;
use super::{ClusterView, Engine};
use crate::model::job::{TaskId, TaskKind};
use crate::{Bytes, HostId, Nanos};

impl Engine {
    /// Carries out a policy's choice for a free slot on host index `hi`;
    /// false (and a count in the records) if the engine refuses it.
    pub(super) fn launch(&mut self, now: Nanos, hi: usize, choice: TaskChoice) -> bool {
        let (task, speculative) = match choice {
            TaskChoice::Run(t) => (t, false),
            TaskChoice::Speculate(t) => (t, true),
        };
        let host = self.c.hosts[hi].id;
        if !self.c.acceptable(hi, task, speculative) {
            self.records.refused_choices += 1;
            tracing::warn!(policy = self.policy.name(), %task, %host, speculative, "choice refused");
            return false;
        }
        let Some(started) = self.c.start_attempt(now, hi, task, speculative) else {
            return false;
        };
        let (id, first_attempt) = (started.id, started.first_attempt);
        if !self.c.hosts[hi].free().any() {
            self.free_hosts.remove(&hi);
        }
        if let Some(r) = self.records.jobs.get_mut(&task.job) {
            r.first_task.get_or_insert(now);
            if task.kind == TaskKind::Reduce {
                r.map_progress_at_first_reduce.get_or_insert(started.map_progress);
            }
        }
        self.out.push(Command::StartTask { attempt: id, host });
        match task.kind {
            TaskKind::Map => self.start_input_read(now, id),
            TaskKind::Reduce => self.start_reduce(now, id, first_attempt),
        }
        let view = ClusterView { c: &self.c };
        self.policy.on_task_started(now, &view, id);
        true
    }

    /// A map's first step: compute at once if its block is on its host (or
    /// input reads are free); else read the block from the nearest alive
    /// replica as a flow. Also used to restart a read whose source died.
    pub(super) fn start_input_read(&mut self, now: Nanos, id: AttemptId) {
        let Some(att) = self.c.attempts.get(&id) else {
            return;
        };
        let host = att.host;
        let Some(job) = self.c.jobs.get(&id.task.job) else {
            return;
        };
        let map = &job.spec.maps[id.task.index as usize];
        if !self.c.config.input_reads || map.input.0 == 0 || map.replicas.contains(&host) {
            self.start_compute(now, id);
            return;
        }
        let alive = |h: &HostId| self.c.hosts[self.c.topo.host_index(*h)].alive;
        let src = map
            .replicas
            .iter()
            .find(|r| r.rack == host.rack && alive(r))
            .or_else(|| map.replicas.iter().find(|r| alive(r)))
            .or(map.replicas.first())
            .copied();
        let Some(src) = src else {
            self.start_compute(now, id);
            return;
        };
        let bytes = map.input;
        let fid = self.new_flow(now, id, FlowKind::Input, src, host, bytes);
        if let Some(att) = self.c.attempts.get_mut(&id) {
            att.input_flow = Some(fid);
        }
    }

    /// Starts an attempt's compute: its task's duration ÷ its host's speed.
    pub(super) fn start_compute(&mut self, now: Nanos, id: AttemptId) {
        let Some((host, duration)) = self.c.begin_compute(now, id) else {
            return;
        };
        if let Some(r) = self.records.jobs.get_mut(&id.task.job) {
            r.first_task.get_or_insert(now);
        }
        self.out.push(Command::Compute {
            attempt: id,
            host,
            duration,
        });
    }

    /// Host `h` now computes at `speed` (a CPU straggler began or ended):
    /// every attempt computing there keeps the progress it made and does
    /// the rest at the new speed: its phase keeps its start and gets the new
    /// expected total, its progress continues from where it was
    /// ([`super::AttemptState::compute_progress`]), and the driver learns the new
    /// end as [`Command::Retime`].
    pub(super) fn host_speed(&mut self, now: Nanos, h: HostId, speed: f64) {
        if !(self.c.topo.contains(h) && speed.is_finite() && speed > 0.0) {
            return;
        }
        let hi = self.c.topo.host_index(h);
        let old = self.c.hosts[hi].speed;
        self.c.hosts[hi].speed = speed;
        if old == speed {
            return;
        }
        let ids: Vec<AttemptId> = self.c.hosts[hi].attempts.iter().copied().collect();
        for id in ids {
            let Some(att) = self.c.attempts.get_mut(&id) else {
                continue;
            };
            let Phase::Computing { since, duration } = att.phase else {
                continue;
            };
            let done = att.compute_progress(now);
            let end = since + duration;
            if done >= 1.0 || end <= now {
                continue; // its end is due now anyway
            }
            let remaining = Nanos(((end - now).0 as f64 * old / speed).round() as u64);
            att.phase = Phase::Computing {
                since,
                duration: (now - since) + remaining,
            };
            att.rebase = Some((now, done));
            self.out.push(Command::Retime {
                attempt: id,
                host: h,
                remaining,
            });
        }
    }

    /// An attempt reported its compute done.
    pub(super) fn task_finished(&mut self, now: Nanos, id: AttemptId, _host: HostId, output: Option<Bytes>) {
        let Some(done) = self.c.complete_task(now, id, output) else {
            return; // killed or lost meanwhile
        };
        let task = id.task;
        self.end_attempt(now, id, Outcome::Finished);
        for s in done.siblings {
            if let Some(h) = self.c.attempts.get(&s).map(|a| a.host) {
                self.end_attempt(now, s, Outcome::Killed);
                self.out.push(Command::KillTask { attempt: s, host: h });
            }
        }
        match task.kind {
            TaskKind::Map => self.map_done(now, task, done.host, done.output, done.locality),
            TaskKind::Reduce => {
                let Some(all) = self.c.record_reduce_done(task.job) else {
                    return;
                };
                let view = ClusterView { c: &self.c };
                self.policy.on_task_finished(now, &view, task, done.host);
                if all {
                    self.job_finished(now, task.job);
                }
            }
        }
    }

    fn map_done(
        &mut self,
        now: Nanos,
        task: TaskId,
        host: HostId,
        output: Bytes,
        locality: Option<Locality>,
    ) {
        let Some(done) = self.c.record_map_done(task, host, output) else {
            return;
        };
        if let Some(r) = self.records.jobs.get_mut(&task.job) {
            if let Some(l) = locality {
                r.locality[l as usize] += 1;
            }
            if done.all_maps {
                r.maps_done = Some(now);
            }
        }
        for a in done.readers {
            self.deliver(a, task.index, done.host_ix);
            self.pump(now, a);
            self.check_reduce_ready(now, a);
        }
        self.check_slow_start(task.job);
        let view = ClusterView { c: &self.c };
        self.policy.on_task_finished(now, &view, task, host);
        if done.all_maps && done.no_reduces {
            self.job_finished(now, task.job);
        }
    }

    /// Ends a live attempt: frees its slot, abandons its flows, records it.
    /// A lost attempt's task becomes pending again if no other attempt lives.
    pub(super) fn end_attempt(&mut self, now: Nanos, id: AttemptId, outcome: Outcome) {
        let Some(r) = self.c.release_attempt(id, outcome) else {
            return;
        };
        if r.slot_free {
            self.free_hosts.insert(r.host_index);
            self.freed.insert(r.host_index);
        }
        let att = &r.attempt;
        if let Some(f) = att.input_flow {
            if let Some(fl) = self.flows.get_mut(&f) {
                fl.useful = false;
            }
        }
        if let Some(fetch) = &att.fetch {
            for fid in fetch.inflight_flows() {
                if let Some(fl) = self.flows.get_mut(&fid) {
                    fl.useful = false;
                }
            }
        }
        let Some(record) = r.record(now, outcome) else {
            return;
        };
        if r.requeued {
            self.new_work = true;
        }
        self.records.tasks.push(record);
        if let Some(rec) = self.records.tasks.last() {
            let view = ClusterView { c: &self.c };
            self.policy.on_attempt_ended(now, &view, rec);
        }
    }
}
