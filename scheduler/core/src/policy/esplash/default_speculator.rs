//! Hadoop's default speculator (Sec. 5.1.1, eqs. 5.1-5.2), ESPLASH's
//! baseline: per job and task kind, a running task whose estimated end is
//! later than a fresh copy's gets one, on any other host.

use super::{
    check_periods, fair_choice, single_attempt, Checks, CopyRequest, DefaultParams, TaskType, TimeStats,
};
use crate::engine::{ClusterView, Outcome, TaskRecord};
use crate::model::job::{JobId, TaskId, TaskKind};
use crate::policy::{parse_params, PolicyError, TaskChoice, TaskPolicy};
use crate::{HostId, Nanos};
use std::collections::BTreeMap;

/// Eqs. 5.1-5.2: `(EstEnd, EstRepEnd)` in seconds.
pub fn default_estimates(now: f64, start: f64, progress: f64, mean: f64) -> (f64, f64) {
    ((now - start) / progress + start, mean + now)
}

/// Hadoop's default speculator over Fair.
#[derive(Debug)]
pub struct DefaultSpeculator {
    checks: Checks,
    stats: BTreeMap<TaskType, TimeStats>,
}

impl DefaultSpeculator {
    /// Builds it from `[scheduler_params.speculate-default]`.
    pub fn from_params(params: &toml::Table) -> Result<Box<dyn TaskPolicy>, PolicyError> {
        let p: DefaultParams = parse_params("speculate-default", params)?;
        check_periods("speculate-default", p.interval, p.after_copy)?;
        Ok(Box::new(DefaultSpeculator {
            checks: Checks::new(p.interval, p.after_copy),
            stats: BTreeMap::new(),
        }))
    }

    /// The candidate with the largest `EstEnd − EstRepEnd`, if any.
    fn candidate(&self, now: Nanos, view: &ClusterView<'_>) -> Option<(TaskId, f64)> {
        let t = now.as_secs_f64();
        let mut best: Option<(TaskId, f64)> = None;
        for a in view.attempts() {
            let task = a.id().task;
            if self.checks.requests.contains_key(&task) || !single_attempt(view, task) {
                continue;
            }
            let Some(job) = view.job(task.job) else { continue };
            if task.kind == TaskKind::Reduce && job.maps_done() < job.spec().map_count() {
                continue;
            }
            let Some(mean) = self.stats.get(&(task.job, task.kind)).and_then(|s| s.mean()) else {
                continue;
            };
            let progress = a.progress(now, job.spec().map_count());
            if progress <= 0.0 {
                continue;
            }
            let (end, rep) = default_estimates(t, a.started().as_secs_f64(), progress, mean);
            let gain = end - rep;
            if gain > 0.0 && best.is_none_or(|(bt, g)| gain > g || (gain == g && task < bt)) {
                best = Some((task, gain));
            }
        }
        best
    }
}

impl TaskPolicy for DefaultSpeculator {
    fn name(&self) -> &str {
        "speculate-default"
    }

    fn on_free_slot(&mut self, now: Nanos, view: &ClusterView<'_>, host: HostId) -> Option<TaskChoice> {
        self.checks.active = view.active_job_count() > 0;
        if self.checks.due(now) {
            self.checks.prune(view);
            let copy = self.candidate(now, view);
            if let Some((t, value)) = copy {
                self.checks
                    .requests
                    .insert(t, CopyRequest { min_level: 1, value });
            }
            self.checks.done(now, copy.is_some());
        }
        if let Some(t) = self.checks.copy_for(view, host, |_| true) {
            return Some(TaskChoice::Speculate(t));
        }
        fair_choice(view, host)
    }

    fn on_attempt_ended(&mut self, _now: Nanos, _view: &ClusterView<'_>, rec: &TaskRecord) {
        if rec.outcome == Outcome::Finished {
            let secs = rec.ended.saturating_sub(rec.started).as_secs_f64();
            self.stats
                .entry((rec.attempt.task.job, rec.kind))
                .or_default()
                .add(secs);
        }
    }

    fn on_job_finished(&mut self, _now: Nanos, _view: &ClusterView<'_>, job: JobId) {
        self.stats.retain(|(j, _), _| *j != job);
    }

    fn next_wakeup(&self) -> Option<Nanos> {
        self.checks.active.then_some(self.checks.next)
    }

    fn wants_idle_offers(&self) -> bool {
        true
    }
}
