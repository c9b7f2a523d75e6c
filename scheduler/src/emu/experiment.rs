//! Running an [`Experiment`] with real bytes: one emulated run per task
//! scheduler (each on a fresh lab, the same jobs and seed), and the
//! results folder of `ocslab sim` plus what was measured on the wire.
//!
//! Results folder, beside what [`crate::report::results`] writes:
//! - `run.json` says `"driver": "emu"` and holds each scheduler's wire summary;
//! - `<scheduler>/wire_flows.csv`, `wire_coflows.csv`, `wire_summary.json`
//!   ([`crate::report::wire::write`]);
//! - `<scheduler>/cct_vs_sim.csv`: each coflow's measured CCT, the fluid
//!   model's prediction for the same flows, and their ratio ([`super::compare`]).
//!
//! Perturbations: the experiment's are carried out for real
//! ([`super::perturb`]), whole-run speeds also going into the engine's
//! configuration as in `ocslab sim`. With timed ones (a straggler window,
//! a killed agent) each scheduler can run once more without them, and its
//! [`PerturbSummary`] sets the two side by side: attempts lost, tasks
//! re-run, bytes moved again, JCT and makespan with and without.

use super::compare::{self, CctComparison, RatioSummary};
use super::perturb::PerturbCounts;
use super::{run_jobs, EmuConfig, EmuError, EmuOutcome, FabricChoice};
use crate::engine::EngineConfig;
use crate::engine::{Outcome, Records};
use crate::experiment::{Experiment, ExperimentError};
use crate::model::job::{Job, TaskId};
use crate::net::{NetStats, NetTimeline};
use crate::perturb::Timeline;
use crate::policy::PolicyError;
use crate::report::{summarize, SchedulerSummary};
use crate::sim::SimOutcome;
use ocslab_emulator::Bytes;
use serde::Serialize;
use std::collections::BTreeSet;
use std::path::Path;

/// Why an emulated experiment failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The experiment (or a file it names) is invalid.
    #[error(transparent)]
    Experiment(#[from] ExperimentError),
    /// A task policy could not be built.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// A run failed.
    #[error("task scheduler {scheduler}: {source}")]
    Emu {
        /// The task scheduler being run.
        scheduler: String,
        /// What failed.
        source: EmuError,
    },
    /// The results folder could not be written.
    #[error("writing results to {dir}: {why}")]
    Results {
        /// The folder.
        dir: String,
        /// Why.
        why: String,
    },
}

/// One scheduler's emulated run with its summaries.
#[derive(Clone, Debug, Serialize)]
pub struct SchedulerRun {
    /// The figures `ocslab sim` reports, from the engine's records; EPS and
    /// OCS bytes are the kernel's counters (cross-rack EPS uplinks, OCS
    /// ports: [`summarize_emu`]).
    pub summary: SchedulerSummary,
    /// What was measured on the wire.
    #[serde(skip)]
    pub outcome: EmuOutcome,
    /// Measured vs predicted CCT per coflow.
    #[serde(skip)]
    pub comparison: Vec<CctComparison>,
    /// Their ratios in short.
    pub cct_vs_sim: RatioSummary,
    /// What the perturbations did (`None`: the experiment has none).
    pub perturbations: Option<PerturbSummary>,
}

/// What a run's perturbations did and cost, against the same run without
/// its timed perturbations when that was run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PerturbSummary {
    /// Speed changes, kills, restarts, rejoins carried out.
    pub carried_out: PerturbCounts,
    /// Hosts declared dead during the run.
    pub dead_hosts: Vec<String>,
    /// Attempts lost with their host.
    pub attempts_lost: u64,
    /// Tasks run again (not speculatively) after an attempt or its output
    /// was lost.
    pub tasks_rerun: u64,
    /// Bytes the re-run attempts received (input reads and fetches moved
    /// again because the first copy was lost).
    pub bytes_rerun: u64,
    /// Bytes delivered verified to attempts that were then lost or killed.
    pub bytes_wasted: u64,
    /// Flows cut short by a dead end (never given to the engine).
    pub flows_cut: u64,
    /// Jobs finished / jobs.
    pub jobs_finished: usize,
    /// Jobs in all.
    pub jobs: usize,
    /// Every flow the finished tasks used arrived whole with the right
    /// checksum (the engine only accepts verified fetches; no corrupt flow).
    pub all_verified: bool,
    /// Average JCT with the perturbations.
    pub avg_jct_s: f64,
    /// Makespan with the perturbations.
    pub makespan_s: f64,
    /// Average JCT of the same run without its timed perturbations.
    pub unperturbed_avg_jct_s: Option<f64>,
    /// Makespan without them.
    pub unperturbed_makespan_s: Option<f64>,
}

impl PerturbSummary {
    /// The summary of `run` (with its perturbations), beside `baseline`.
    pub fn of(run: &EmuOutcome, summary: &SchedulerSummary, baseline: Option<&SchedulerSummary>) -> Self {
        let r = &run.records;
        let (attempts_lost, rerun) = reruns(r);
        let bytes_rerun = r
            .flows
            .iter()
            .filter(|f| {
                f.finished.is_some() && f.useful && f.attempt.n > 0 && rerun.contains(&f.attempt.task)
            })
            .map(|f| f.bytes.0)
            .sum();
        let bytes_wasted = run
            .wire
            .flows
            .iter()
            .filter(|f| f.verified && !f.useful)
            .map(|f| f.bytes_received.0)
            .sum();
        PerturbSummary {
            carried_out: run.perturbations,
            dead_hosts: run.wire.dead_hosts.iter().map(|h| h.to_string()).collect(),
            attempts_lost,
            tasks_rerun: rerun.len() as u64,
            bytes_rerun,
            bytes_wasted,
            flows_cut: run.wire.lost_flows,
            jobs_finished: r.jobs.values().filter(|j| j.finished.is_some()).count(),
            jobs: r.jobs.len(),
            all_verified: run.wire.corrupt_flows == 0
                && run.wire.flows.iter().all(|f| f.verified || !f.useful),
            avg_jct_s: summary.avg_jct_s,
            makespan_s: summary.makespan_s,
            unperturbed_avg_jct_s: baseline.map(|b| b.avg_jct_s),
            unperturbed_makespan_s: baseline.map(|b| b.makespan_s),
        }
    }
}

/// Attempts lost with their host, and the tasks run again non-speculatively
/// (an attempt numbered above 0 that is not a speculative copy).
fn reruns(r: &Records) -> (u64, BTreeSet<TaskId>) {
    let lost = r.tasks.iter().filter(|t| t.outcome == Outcome::Lost).count() as u64;
    let rerun = r
        .tasks
        .iter()
        .filter(|t| t.attempt.n > 0 && !t.speculative)
        .map(|t| t.attempt.task)
        .collect();
    (lost, rerun)
}

/// The engine-side outcome in the simulator's shape (so the same summary
/// and results code applies), with bytes per fabric from the counters.
pub fn as_sim_outcome(o: &EmuOutcome) -> SimOutcome {
    let fab = &o.wire.fabric;
    SimOutcome {
        policy: o.policy.clone(),
        records: o.records.clone(),
        net: NetStats {
            eps_bytes: Bytes(fab.eps_bytes),
            ocs_bytes: Bytes(fab.ocs_bytes),
            cross_rack_bytes: o.records.coflows.values().map(|c| c.cross_rack_bytes).sum(),
            reconfigurations: o.net.circuits_requested,
            flows_done: o.wire.flows.len() as u64,
            policy_calls: o.net.policy_calls,
            ..NetStats::default()
        },
        timeline: NetTimeline {
            circuits: o.circuits.clone(),
            links: o.wire.links.clone(),
        },
        end: o.end,
        events: 0,
        flows: o.wire.flows.len() as u64 + o.wire.lost_flows,
        peak_flows: 0,
    }
}

/// The summary `ocslab sim` would give for the engine's records, with the
/// cross-rack bytes per fabric measured on the wire (the kernel counters of
/// the ToR EPS uplinks and the OCS ports; see [`crate::report::summary`]).
pub fn summarize_emu(o: &EmuOutcome) -> SchedulerSummary {
    let fab = &o.wire.fabric;
    summarize(&as_sim_outcome(o)).with_wire_bytes(fab.eps_bytes, fab.ocs_bytes)
}

/// The emulation settings and engine configuration of `exp`'s runs, from
/// `cfg`: the experiment's coflow scheduler, seed and load-sample
/// interval, its perturbations, whole-run speeds in the engine.
pub fn prepare(exp: &Experiment, cfg: &EmuConfig) -> (EmuConfig, EngineConfig) {
    let mut cfg = cfg
        .clone()
        .with_experiment_load_samples(exp.sim.load_sample_interval);
    cfg.coflow_policy = exp.coflow_scheduler.clone();
    cfg.seed = exp.seed;
    let timeline = Timeline::of(&exp.perturbations);
    cfg.perturbations = timeline.clone();
    let mut engine = exp.engine.clone();
    timeline.apply_base(&mut engine);
    (cfg, engine)
}

/// Runs task scheduler `name` of `exp` on `jobs` with real bytes, with the
/// experiment's perturbations carried out for real, and compares each
/// coflow's CCT with the fluid model's prediction. With `unperturbed` and
/// timed perturbations, it also runs without the timed ones (whole-run
/// speeds kept), for [`PerturbSummary`]'s comparison. The summary is not
/// normalized.
pub fn run_scheduler(
    exp: &Experiment,
    cfg: &EmuConfig,
    fabric: &FabricChoice,
    name: &str,
    jobs: Vec<Job>,
    unperturbed: bool,
) -> Result<SchedulerRun, RunError> {
    let (cfg, engine) = prepare(exp, cfg);
    let failed = |source: EmuError| RunError::Emu {
        scheduler: name.to_string(),
        source,
    };
    let once = |cfg: &EmuConfig| {
        let policy = exp.policy(name)?;
        run_jobs(
            &exp.topology,
            fabric.clone(),
            jobs.clone(),
            policy,
            engine.clone(),
            cfg,
        )
        .map_err(failed)
    };
    let outcome = once(&cfg)?;
    let baseline = if unperturbed && !cfg.perturbations.actions.is_empty() {
        let mut plain = cfg.clone();
        plain.perturbations.actions.clear();
        Some(summarize_emu(&once(&plain)?))
    } else {
        None
    };
    let comparison = compare::compare(&exp.topology, &cfg.coflow_policy, &outcome.wire.flows)
        .map_err(|e| failed(e.into()))?;
    let summary = summarize_emu(&outcome);
    let perturbations =
        (!exp.perturbations.is_empty()).then(|| PerturbSummary::of(&outcome, &summary, baseline.as_ref()));
    Ok(SchedulerRun {
        summary,
        perturbations,
        cct_vs_sim: compare::summarize(&comparison),
        outcome,
        comparison,
    })
}

/// What `run.json` of an emulated experiment holds beyond the simulator's:
/// each scheduler's wire summary, CCT against the model, perturbations.
pub fn run_json_wire(runs: &[SchedulerRun]) -> serde_json::Value {
    runs.iter()
        .map(|r| {
            serde_json::json!({
                "scheduler": r.outcome.policy,
                "fct": r.outcome.wire.fct,
                "cct": r.outcome.wire.cct,
                "verified_flows": r.outcome.wire.verified_flows,
                "corrupt_flows": r.outcome.wire.corrupt_flows,
                "lost_flows": r.outcome.wire.lost_flows,
                "resent_flows": r.outcome.wire.resent_flows,
                "fabric": r.outcome.wire.fabric,
                "cct_vs_sim": r.cct_vs_sim,
                "perturbations": r.perturbations,
                "wall_s": r.outcome.wire.wall_s,
            })
        })
        .collect()
}

/// Writes each scheduler's wire files and `cct_vs_sim.csv` into its folder
/// of the results folder `dir`.
pub fn write_extras(dir: &Path, runs: &[SchedulerRun]) -> Result<(), RunError> {
    let err = |why: String| RunError::Results {
        dir: dir.display().to_string(),
        why,
    };
    for r in runs {
        let sub = dir.join(&r.outcome.policy);
        crate::report::wire::write(&r.outcome.wire, &sub).map_err(|e| err(e.to_string()))?;
        write_comparison(&sub.join("cct_vs_sim.csv"), &r.comparison).map_err(|e| err(e.to_string()))?;
    }
    Ok(())
}

/// Writes measured vs predicted CCT per coflow as CSV.
pub fn write_comparison(path: &Path, rows: &[CctComparison]) -> Result<(), csv::Error> {
    let mut w = csv::Writer::from_path(path)?;
    w.write_record(["coflow", "flows", "bytes", "measured_s", "predicted_s", "ratio"])?;
    for r in rows {
        w.write_record([
            r.coflow.0.to_string(),
            r.flows.to_string(),
            r.bytes.0.to_string(),
            format!("{:.6}", r.measured.as_secs_f64()),
            format!("{:.6}", r.predicted.as_secs_f64()),
            format!("{:.4}", r.ratio),
        ])?;
    }
    w.flush()?;
    Ok(())
}
