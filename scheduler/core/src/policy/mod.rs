//! Task-placement policies: every scheduler implementing the engine's
//! [`TaskPolicy`] (FIFO, Fair, Delay, ShuffleWatcher, NAS, Dawn, Corral,
//! Co-scheduler, FRESH, OMO, ESPLASH), and [`by_name`], the one table from
//! names to constructors. The trait is defined by the engine, which calls
//! it, and re-exported here.
//!
//! A policy is pure decision code: it receives `now` and a read-only
//! [`crate::engine::ClusterView`], keeps whatever state it likes, and answers heartbeat
//! style offers ("a slot on host h is free: which task?"). It never reads a
//! clock, does no I/O, and cannot tell whether the simulator or the kernel
//! fabric runs it. If it wants to be asked again at a later time (a
//! locality wait expiring), it says so through [`TaskPolicy::next_wakeup`].

pub mod corral;
pub mod coscheduler;
pub mod dawn;
#[cfg(test)]
mod decide_tests;
pub mod delay;
pub mod esplash;
pub mod fair;
pub mod fifo;
pub mod fresh;
pub mod nas;
pub mod netaware;
pub mod omo;
pub mod pick;
pub mod shufflewatcher;

pub use crate::engine::{TaskChoice, TaskPolicy};

/// Why a policy could not be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PolicyError {
    /// No policy has this name.
    #[error("no task scheduler is called {name:?}; known: {known}")]
    Unknown {
        /// The name given.
        name: String,
        /// The names that exist.
        known: String,
    },
    /// A parameter is wrong.
    #[error("parameters of task scheduler {policy:?}: {message}")]
    Params {
        /// The policy.
        policy: String,
        /// What is wrong, naming the field.
        message: String,
    },
}

/// A constructor: from the policy's parameter table (`[scheduler_params.<name>]`
/// of an experiment; empty if none) to a policy.
pub type Constructor = fn(&toml::Table) -> Result<Box<dyn TaskPolicy>, PolicyError>;

/// The one table of task schedulers: name, one-line description, constructor.
pub const POLICIES: &[(&str, &str, Constructor)] = &[
    (
        "fifo",
        "jobs in submission order, first pending task",
        fifo::Fifo::from_params,
    ),
    (
        "fair",
        "Hadoop Fair scheduler: per-user max-min shares, fair among a user's jobs",
        fair::Fair::from_params,
    ),
    (
        "delay",
        "Delay scheduling (Zaharia et al., EuroSys'10) on Fair order: node/rack locality waits",
        delay::Delay::from_params,
    ),
    (
        "shufflewatcher",
        "ShuffleWatcher on Fair (Ahmad et al., ATC'14): NASS, SAMP, SARP",
        netaware::policies::shufflewatcher,
    ),
    (
        "shufflewatcher-delay",
        "ShuffleWatcher with Delay's relaxed fairness (SW-relaxed / SW-delay)",
        netaware::policies::shufflewatcher_delay,
    ),
    (
        "sw-nass",
        "ShuffleWatcher ablation: NASS only",
        netaware::policies::sw_nass,
    ),
    (
        "sw-nass-sarp",
        "ShuffleWatcher ablation: NASS + SARP",
        netaware::policies::sw_nass_sarp,
    ),
    (
        "nas",
        "NAS (Li, Shen & Sarker, CCGrid'18): MTS, CA-RTS, CR-RTS",
        netaware::policies::nas,
    ),
    ("nas-mts", "NAS ablation: MTS only", netaware::policies::nas_mts),
    (
        "nas-mts-ca",
        "NAS ablation: MTS + CA-RTS",
        netaware::policies::nas_mts_ca,
    ),
    (
        "nas-wo-tt",
        "NAS without TrafficThreshold",
        netaware::policies::nas_without_tt,
    ),
    (
        "dawn",
        "Dawn (Wang et al.): dependency-aware online plan + network-adaptive task scheduler",
        netaware::policies::dawn,
    ),
    (
        "dawn-strict",
        "Dawn with Alg. 1 read literally: a slot no job prefers stays idle (diagnostic)",
        netaware::policies::dawn_strict,
    ),
    (
        "corral",
        "Corral (Jalaparti et al., SIGCOMM'15): planned racks, Fair for ad hoc jobs",
        corral::Corral::from_params,
    ),
    (
        "coscheduler",
        "Co-scheduler (Li & Shen, ToN'22), full",
        coscheduler::policy::CoScheduler::full_from_params,
    ),
    (
        "coscheduler-dp-ocas",
        "Co-scheduler, DP + OCAS (Fig. 7)",
        coscheduler::policy::CoScheduler::dp_ocas_from_params,
    ),
    (
        "coscheduler-ocas",
        "Co-scheduler, OCAS only (Fig. 7)",
        coscheduler::policy::CoScheduler::ocas_from_params,
    ),
    ("fresh", "FRESH dynamic slot configuration (Wang, thesis 2017, Ch. 3): typed slots per release, overall fairness, admission k", fresh::Fresh::dynamic_from_params),
    ("fresh-static", "FRESH static slot configuration (Wang, thesis 2017, Alg. 3.3.1): best fixed map:reduce split, Fair per phase", fresh::Fresh::static_from_params),
    ("omo", "OMO (Wang, thesis 2017, Ch. 4): lazy start of reduces (remaining map time <= predicted shuffle time) + batch finish of maps", omo::Omo::from_params),
    ("omo-lazy", "OMO's lazy start of reduces alone (Wang, thesis 2017, Alg. 4.3.1, stated intent), Fair otherwise", omo::Omo::lazy_from_params),
    ("omo-batch", "OMO's batch finish of tailing maps alone (Wang, thesis 2017, Alg. 4.3.2), reduces at the engine's slow-start", omo::Omo::batch_from_params),
    ("esplash", "ESPLASH (Wang, thesis 2017, Ch. 5): node levels, per-level straggler detection, speculation with a minimum node level", esplash::Esplash::from_params),
    ("speculate-default", "Fair + Hadoop's default speculator (Wang, thesis 2017, eqs. 5.1-5.2)", esplash::DefaultSpeculator::from_params),
];

/// Builds the policy called `name` with its parameters (`None`: defaults).
pub fn by_name(name: &str, params: Option<&toml::Table>) -> Result<Box<dyn TaskPolicy>, PolicyError> {
    let empty = toml::Table::new();
    let params = params.unwrap_or(&empty);
    match POLICIES.iter().find(|(n, _, _)| *n == name) {
        Some((_, _, build)) => build(params),
        None => Err(PolicyError::Unknown {
            name: name.to_string(),
            known: names().join(", "),
        }),
    }
}

/// The known policy names.
pub fn names() -> Vec<&'static str> {
    POLICIES.iter().map(|(n, _, _)| *n).collect()
}

/// Deserializes a policy's parameter table into `P`
/// (`deny_unknown_fields` on `P` makes a typo an error naming the key).
pub fn parse_params<P: serde::de::DeserializeOwned>(
    policy: &str,
    params: &toml::Table,
) -> Result<P, PolicyError> {
    P::deserialize(toml::Value::Table(params.clone())).map_err(|e| PolicyError::Params {
        policy: policy.to_string(),
        message: e.to_string().trim().to_string(),
    })
}

/// Refuses a duration parameter of zero: "`field` must be more than 0,
/// e.g. "`example`"".
pub fn check_positive_duration(
    policy: &str,
    field: &str,
    value: crate::Nanos,
    example: &str,
) -> Result<(), PolicyError> {
    if value == crate::Nanos::ZERO {
        return Err(PolicyError::Params {
            policy: policy.to_string(),
            message: format!("`{field}` must be more than 0, e.g. \"{example}\""),
        });
    }
    Ok(())
}

/// Refuses any parameter (for policies that take none).
pub fn no_params(policy: &str, params: &toml::Table) -> Result<(), PolicyError> {
    match params.keys().next() {
        None => Ok(()),
        Some(k) => Err(PolicyError::Params {
            policy: policy.to_string(),
            message: format!("unknown parameter `{k}`: {policy} takes none"),
        }),
    }
}

use crate::engine::{ClusterView, FreeSlots, JobState};
use crate::model::job::TaskId as Task;
use crate::HostId;

/// The task FIFO and Fair run from `job` on `host`: a runnable reduce if a
/// reduce fits (and the engine's ramp-up guard allows), else a pending map
/// if a map fits, preferring one whose block is on `host`, then in its
/// rack, then the lowest index.
pub fn pick_in_job(view: &ClusterView<'_>, job: &JobState, host: HostId, free: FreeSlots) -> Option<Task> {
    if free.reduce > 0 && view.can_start_reduce(job) {
        if let Some(&r) = job.pending_reduces().first() {
            return Some(Task::reduce(job.id(), r));
        }
    }
    if free.map > 0 && job.has_runnable_map() {
        let m = job
            .pending_maps_on_host(host)
            .next()
            .or_else(|| job.pending_maps_on_rack(host.rack).next())
            .or_else(|| job.pending_maps().first().copied())?;
        return Some(Task::map(job.id(), m));
    }
    None
}

/// Active jobs with work that fits `free`, in Hadoop Fair order: users by
/// running tasks (fewest first, then user id), and within a user, jobs by
/// running tasks, then submission order.
pub fn fair_order<'a>(view: &ClusterView<'a>, free: FreeSlots) -> Vec<&'a JobState> {
    let users = view.users();
    let mut jobs: Vec<&JobState> = view
        .active_jobs()
        .filter(|j| (free.map > 0 && j.has_runnable_map()) || (free.reduce > 0 && j.has_runnable_reduce()))
        .collect();
    jobs.sort_by_key(|j| {
        let u = users.get(&j.user()).map_or(0, |u| u.running_tasks());
        (u, j.user(), j.running_tasks(), j.ready_at(), j.id())
    });
    jobs
}
