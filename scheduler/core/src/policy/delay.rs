//! Delay scheduling: M. Zaharia, D. Borthakur, J. Sen Sarma, K. Elmeleegy,
//! S. Shenker, I. Stoica, "Delay Scheduling: A Simple Technique for
//! Achieving Locality and Fairness in Cluster Scheduling", EuroSys 2010,
//! Sec. 4 (Algorithm 1) and its two-level version with node and rack
//! locality (Sec. 5.2, as in Hadoop's Fair scheduler).
//!
//! Jobs are visited in Fair order ([`super::fair_order`]). For each job:
//! a node-local map on the offered host is launched at once (the job's
//! locality level drops back to node); a rack-local map is launched if the
//! job's level is already rack or the job has waited `node_wait`; any map
//! is launched if the level is already off-rack, or the job has waited
//! `rack_wait` at rack level, or `node_wait + rack_wait` at node level.
//! Otherwise the job is skipped and its wait starts (it is measured in
//! time since the job was first skipped after its last launch, the
//! paper's `j.wait`). Reduces have no input locality and are launched as
//! Fair does. The policy asks to be woken when a skipped job's wait
//! crosses a threshold, so a slot left free is offered again then.

use super::{fair_order, parse_params, PolicyError, TaskChoice, TaskPolicy};
use crate::engine::{ClusterView, JobState};
use crate::model::job::{JobId, TaskId};
use crate::{HostId, Nanos};
use serde::Deserialize;
use std::collections::BTreeMap;

/// Locality levels, as in the paper.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Level {
    Node = 0,
    Rack = 1,
    Any = 2,
}

/// A job's delay-scheduling state.
#[derive(Clone, Copy, Debug)]
struct Wait {
    level: Level,
    /// Since when the job has been skipped (`None`: it launched since).
    since: Option<Nanos>,
}

/// Parameters (`[scheduler_params.delay]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    /// W1: how long a job waits for a node-local slot before taking a rack-local one.
    #[serde(default = "default_wait")]
    node_wait: Nanos,
    /// W2: how long it then waits for a rack-local slot before taking any.
    #[serde(default = "default_wait")]
    rack_wait: Nanos,
}

fn default_wait() -> Nanos {
    Nanos::from_millis(5_000)
}

/// Delay scheduling on Fair order.
#[derive(Debug)]
pub struct Delay {
    node_wait: Nanos,
    rack_wait: Nanos,
    jobs: BTreeMap<JobId, Wait>,
    now: Nanos,
}

impl Delay {
    /// Delay scheduling with waits W1 = `node_wait`, W2 = `rack_wait`.
    pub fn new(node_wait: Nanos, rack_wait: Nanos) -> Delay {
        Delay {
            node_wait,
            rack_wait,
            jobs: BTreeMap::new(),
            now: Nanos::ZERO,
        }
    }

    /// Builds it from `node_wait` and `rack_wait` (default 5 s each).
    pub fn from_params(params: &toml::Table) -> Result<Box<dyn TaskPolicy>, PolicyError> {
        let p: Params = parse_params("delay", params)?;
        Ok(Box::new(Delay::new(p.node_wait, p.rack_wait)))
    }

    /// The map job `job` may run on `host` now, and at which level.
    fn pick_map(&mut self, now: Nanos, job: &JobState, host: HostId) -> Option<(u32, Level)> {
        let w = self.jobs.entry(job.id()).or_insert(Wait {
            level: Level::Node,
            since: None,
        });
        let waited = w.since.map_or(Nanos::ZERO, |s| now - s);
        if let Some(m) = job.pending_maps_on_host(host).next() {
            return Some((m, Level::Node));
        }
        let rack_ok = w.level >= Level::Rack || waited >= self.node_wait;
        if rack_ok {
            if let Some(m) = job.pending_maps_on_rack(host.rack).next() {
                return Some((m, Level::Rack));
            }
        }
        let any_ok = w.level == Level::Any
            || (w.level == Level::Rack && waited >= self.rack_wait)
            || (w.level == Level::Node && waited >= self.node_wait + self.rack_wait);
        if any_ok {
            if let Some(&m) = job.pending_maps().first() {
                return Some((m, Level::Any));
            }
        }
        w.since.get_or_insert(now);
        None
    }
}

impl TaskPolicy for Delay {
    fn name(&self) -> &str {
        "delay"
    }

    fn on_free_slot(&mut self, now: Nanos, view: &ClusterView<'_>, host: HostId) -> Option<TaskChoice> {
        self.now = now;
        let free = view.host(host)?.free();
        for job in fair_order(view, free) {
            if free.reduce > 0 && view.can_start_reduce(job) {
                if let Some(&r) = job.pending_reduces().first() {
                    return Some(TaskChoice::Run(TaskId::reduce(job.id(), r)));
                }
            }
            if free.map > 0 && job.has_runnable_map() {
                if let Some((m, level)) = self.pick_map(now, job, host) {
                    self.jobs.insert(job.id(), Wait { level, since: None });
                    return Some(TaskChoice::Run(TaskId::map(job.id(), m)));
                }
            }
        }
        None
    }

    fn on_job_finished(&mut self, now: Nanos, _view: &ClusterView<'_>, job: JobId) {
        self.now = now;
        self.jobs.remove(&job);
    }

    fn next_wakeup(&self) -> Option<Nanos> {
        self.jobs
            .values()
            .filter_map(|w| {
                let since = w.since?;
                let steps: &[Nanos] = match w.level {
                    Level::Node => &[self.node_wait, self.node_wait + self.rack_wait],
                    Level::Rack => &[self.rack_wait],
                    Level::Any => &[],
                };
                steps.iter().map(|d| since + *d).find(|t| *t > self.now)
            })
            .min()
    }
}
