//! Speculation on heterogeneous clusters: ESPLASH (J. Wang, "Building
//! efficient large-scale big data processing platforms", PhD thesis,
//! Northeastern University, 2017, Ch. 5; Sec. 5.2) and, as its baseline,
//! Hadoop's default speculator (Sec. 5.1.1, eqs. 5.1-5.2). Both place
//! regular tasks as Fair does; they differ in which tasks they copy and
//! where the copy may run.
//!
//! - **Default speculator** (`speculate-default`): per job and task kind,
//!   the mean time of finished tasks; a running task whose estimated end
//!   `EstEnd = (now − start)/progress + start` (eq. 5.1) is later than a
//!   fresh copy's `EstRepEnd = mean + now` (eq. 5.2) is a candidate; the one
//!   with the largest difference gets a copy, on any other host.
//! - **ESPLASH** (`esplash`): hosts have performance *levels* (1 = slowest),
//!   configured (a table, or the ranks of the configured host speeds — the
//!   hardware profile) or measured (Algs. 5.2.1-5.2.2, [`levels`]). Per
//!   level and task type, a statistics table of compute times (mean μ,
//!   deviation σ, progress rate `PR = 1/μ`). A host's *straggler value* sums,
//!   over its computing tasks, `(EstT − μ)/σ` for tasks estimated slower
//!   than μ and the progress-rate deficit `PR_level/PR_task − 1`; above `τ`
//!   (per task) the host is a straggler. Only tasks on stragglers are copied; each
//!   copy carries a minimum level `minL` (Alg. 5.2.3: the level bound with
//!   the least expected copy time) and the candidate with the largest
//!   *speculative value* (expected time saved, Sec. 5.2.3) is chosen.
//!   Stragglers never host copies (Sec. 5.2.4), and a pending copy is
//!   re-evaluated at every check.
//!
//! Readings of the text (each tested below):
//! - `SV ← SV + …` accumulates without end (a normal task adds about 1 per
//!   epoch through its progress ratio), so SV is recomputed at every check
//!   from the tasks running then, the progress-rate term counts only the
//!   deficit (`ratio − 1` when above 1), and SV is averaged over the
//!   host's judged tasks so that `τ` does not depend on its slot count (a
//!   host of 4 tasks each one σ late is not a straggler).
//! - σ is the standard deviation (the text says variance, which has the
//!   wrong unit), floored at 10% of μ so identical task times do not divide
//!   by zero.
//! - A task's progress rate is its compute progress per second over the
//!   last epoch (since the previous check), its progress over its compute
//!   time at its first check. `EstT` is compute time over compute progress.
//!   Reduces are judged in their compute phase only (while fetching, their
//!   pace is that of the maps and the network, not of their host).
//! - Alg. 5.2.3 line 5 takes the minimum expected time; the level giving it
//!   (the argmin) is `minL`. Levels without statistics for the task's type
//!   are left out of the expectation.
//! - Both speculators copy at most one task per check (every `interval`,
//!   15 s after a copy as Hadoop's `SOONEST_RETRY_AFTER_SPECULATE`), keep
//!   at most `max(10, 10% of running attempts)` copies running, and a
//!   pending copy goes before regular tasks on an eligible host. The default
//!   speculator considers a reduce only once its job's maps are all done.
//! - Statistics learn from finished attempts only, and ESPLASH leaves out
//!   attempts that ran on a host while it was marked a straggler.

mod default_speculator;
mod esplash_speculator;
pub mod levels;

pub use default_speculator::{default_estimates, DefaultSpeculator};
pub use esplash_speculator::{min_level, speculative_value, Esplash, EsplashParams, LevelSource};

use super::{fair_order, pick_in_job, PolicyError, TaskChoice};
use crate::engine::{AttemptId, ClusterView, TaskStatus};
use crate::model::job::{JobId, TaskId, TaskKind};
use crate::{HostId, Nanos};
use serde::Deserialize;
use std::collections::BTreeMap;

/// Running statistics of task times (seconds).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TimeStats {
    n: u32,
    sum: f64,
    sumsq: f64,
}

impl TimeStats {
    /// Adds one time.
    pub fn add(&mut self, secs: f64) {
        self.n += 1;
        self.sum += secs;
        self.sumsq += secs * secs;
    }
    /// Adds another set.
    pub fn merge(&mut self, o: &TimeStats) {
        self.n += o.n;
        self.sum += o.sum;
        self.sumsq += o.sumsq;
    }
    /// Count.
    pub fn count(&self) -> u32 {
        self.n
    }
    /// Mean (`None` when empty).
    pub fn mean(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum / self.n as f64)
    }
    /// Standard deviation, floored at 10% of the mean.
    pub fn sigma(&self) -> Option<f64> {
        let m = self.mean()?;
        let var = (self.sumsq / self.n as f64 - m * m).max(0.0);
        Some(var.sqrt().max(0.1 * m))
    }
}

/// A task type: a job's maps or its reduces.
pub type TaskType = (JobId, TaskKind);

/// A pending copy: its minimum host level and its value (seconds saved).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CopyRequest {
    /// Hosts below this level may not run it (1 = any).
    pub min_level: u32,
    /// The expected time saved, the priority among requests.
    pub value: f64,
}

/// Parameters shared by both speculators.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DefaultParams {
    /// Speculation check period after a check that copied nothing (default 1 s).
    #[serde(default = "one_second")]
    pub interval: Nanos,
    /// Check period after a copy (default 15 s).
    #[serde(default = "fifteen_seconds")]
    pub after_copy: Nanos,
}

fn one_second() -> Nanos {
    Nanos(1_000_000_000)
}
fn fifteen_seconds() -> Nanos {
    Nanos(15_000_000_000)
}

/// The check clock and the pending copies, shared by both speculators.
#[derive(Clone, Debug)]
struct Checks {
    interval: Nanos,
    after_copy: Nanos,
    next: Nanos,
    requests: BTreeMap<TaskId, CopyRequest>,
    active: bool,
}

impl Checks {
    fn new(interval: Nanos, after_copy: Nanos) -> Checks {
        Checks {
            interval,
            after_copy,
            next: Nanos::ZERO,
            requests: BTreeMap::new(),
            active: false,
        }
    }

    fn due(&self, now: Nanos) -> bool {
        now >= self.next
    }

    fn done(&mut self, now: Nanos, copied: bool) {
        self.next = now + if copied { self.after_copy } else { self.interval };
    }

    /// Drops requests whose task finished or already has a copy.
    fn prune(&mut self, view: &ClusterView<'_>) {
        self.requests.retain(|t, _| single_attempt(view, *t));
    }

    /// The best pending copy `host` may run, if the copy cap allows one.
    fn copy_for(
        &mut self,
        view: &ClusterView<'_>,
        host: HostId,
        eligible: impl Fn(&CopyRequest) -> bool,
    ) -> Option<TaskId> {
        let free = view.host(host)?.free();
        let running: usize = view.attempts().count();
        let copies = view.attempts().filter(|a| a.speculative()).count();
        if copies >= 10usize.max(running / 10) {
            return None;
        }
        let mut reqs: Vec<(TaskId, CopyRequest)> = self.requests.iter().map(|(t, r)| (*t, *r)).collect();
        reqs.sort_by(|a, b| b.1.value.total_cmp(&a.1.value).then(a.0.cmp(&b.0)));
        let pick = reqs.into_iter().find(|(t, r)| {
            free.fits(t.kind)
                && eligible(r)
                && single_attempt(view, *t)
                && !live_attempts(view, *t).any(|a| view.attempt(a).is_some_and(|s| s.host() == host))
        })?;
        self.requests.remove(&pick.0);
        Some(pick.0)
    }
}

fn live_attempts<'a>(view: &ClusterView<'a>, t: TaskId) -> impl Iterator<Item = AttemptId> + 'a {
    view.job(t.job)
        .and_then(|j| j.task(t.kind, t.index))
        .into_iter()
        .flat_map(|ts| ts.live_attempts().iter().copied())
}

fn single_attempt(view: &ClusterView<'_>, t: TaskId) -> bool {
    view.job(t.job)
        .and_then(|j| j.task(t.kind, t.index))
        .is_some_and(|ts| ts.status() == TaskStatus::Running && ts.live_attempts().len() == 1)
}

/// Fair's choice for a regular offer.
fn fair_choice(view: &ClusterView<'_>, host: HostId) -> Option<TaskChoice> {
    let free = view.host(host)?.free();
    fair_order(view, free)
        .into_iter()
        .find_map(|job| pick_in_job(view, job, host, free))
        .map(TaskChoice::Run)
}

fn check_periods(policy: &str, interval: Nanos, after: Nanos) -> Result<(), PolicyError> {
    if interval == Nanos::ZERO || after == Nanos::ZERO {
        return Err(PolicyError::Params {
            policy: policy.into(),
            message: "`interval` and `after_copy` must be more than 0, e.g. \"1s\"".into(),
        });
    }
    Ok(())
}
