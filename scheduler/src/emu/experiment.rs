//! Running an [`Experiment`] with real bytes: one emulated run per task
//! scheduler (each on a fresh lab, the same jobs and seed), and the
//! results folder of `ocslab sim` plus what was measured on the wire.
//!
//! Results folder, beside what [`crate::report::results`] writes:
//! - `run.json` says `"driver": "emu"` and holds each scheduler's wire summary;
//! - `<scheduler>/wire_flows.csv`, `wire_coflows.csv`, `wire_summary.json`
//!   ([`super::metrics::WireReport::write`]);
//! - `<scheduler>/cct_vs_sim.csv`: each coflow's measured CCT, the fluid
//!   model's prediction for the same flows, and their ratio ([`super::compare`]).

use super::compare::{self, CctComparison, RatioSummary};
use super::{run_jobs, EmuConfig, EmuError, EmuOutcome, FabricChoice};
use crate::experiment::{Experiment, ExperimentError};
use crate::net::{NetStats, NetTimeline};
use crate::policy::PolicyError;
use crate::report::{normalize, results, summarize, SchedulerSummary};
use crate::sim::SimOutcome;
use ocslab_emulator::Bytes;
use serde::Serialize;
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
        },
        timeline: NetTimeline {
            circuits: o.circuits.clone(),
            links: o.wire.links.clone(),
        },
        end: o.end,
        events: 0,
        flows: o.wire.flows.len() as u64 + o.wire.lost_flows,
    }
}

/// The summary `ocslab sim` would give for the engine's records, with the
/// cross-rack bytes per fabric measured on the wire (the kernel counters of
/// the ToR EPS uplinks and the OCS ports; see [`crate::report::summary`]).
pub fn summarize_emu(o: &EmuOutcome) -> SchedulerSummary {
    let fab = &o.wire.fabric;
    summarize(&as_sim_outcome(o)).with_wire_bytes(fab.eps_bytes, fab.ocs_bytes)
}

/// Runs every task scheduler of `exp` on real bytes, baseline first.
/// `progress(scheduler)` is called as each starts.
pub fn run(
    exp: &Experiment,
    cfg: &EmuConfig,
    fabric: &FabricChoice,
    mut progress: impl FnMut(&str),
) -> Result<Vec<SchedulerRun>, RunError> {
    let jobs = exp.jobs()?;
    let mut cfg = cfg.clone();
    cfg.coflow_policy = exp.coflow_scheduler.clone();
    cfg.seed = exp.seed;
    let mut runs = Vec::new();
    for name in &exp.task_schedulers {
        progress(name);
        let policy = exp.policy(name)?;
        let outcome = run_jobs(
            &exp.topology,
            fabric.clone(),
            jobs.clone(),
            policy,
            exp.engine.clone(),
            &cfg,
        )
        .map_err(|source| RunError::Emu {
            scheduler: name.clone(),
            source,
        })?;
        let comparison =
            compare::compare(&exp.topology, &cfg.coflow_policy, &outcome.wire.flows).map_err(|e| {
                RunError::Emu {
                    scheduler: name.clone(),
                    source: e.into(),
                }
            })?;
        runs.push(SchedulerRun {
            summary: summarize_emu(&outcome),
            cct_vs_sim: compare::summarize(&comparison),
            outcome,
            comparison,
        });
    }
    let mut summaries: Vec<SchedulerSummary> = runs.iter().map(|r| r.summary.clone()).collect();
    normalize(&mut summaries);
    for (r, s) in runs.iter_mut().zip(summaries) {
        r.summary = s;
    }
    Ok(runs)
}

/// Writes the results folder of an emulated experiment.
pub fn write_results(dir: &Path, exp: &Experiment, runs: &[SchedulerRun]) -> Result<(), RunError> {
    let err = |why: String| RunError::Results {
        dir: dir.display().to_string(),
        why,
    };
    let outcomes: Vec<SimOutcome> = runs.iter().map(|r| as_sim_outcome(&r.outcome)).collect();
    let summaries: Vec<SchedulerSummary> = runs.iter().map(|r| r.summary.clone()).collect();
    results::write(dir, exp, &outcomes, &summaries).map_err(|e| err(e.to_string()))?;
    let wire: Vec<_> = runs
        .iter()
        .map(|r| {
            serde_json::json!({
                "scheduler": r.outcome.policy,
                "fct": r.outcome.wire.fct,
                "cct": r.outcome.wire.cct,
                "verified_flows": r.outcome.wire.verified_flows,
                "corrupt_flows": r.outcome.wire.corrupt_flows,
                "lost_flows": r.outcome.wire.lost_flows,
                "fabric": r.outcome.wire.fabric,
                "cct_vs_sim": r.cct_vs_sim,
                "wall_s": r.outcome.wire.wall_s,
            })
        })
        .collect();
    let run = serde_json::json!({
        "experiment": exp.name,
        "seed": exp.seed,
        "version": env!("CARGO_PKG_VERSION"),
        "driver": "emu",
        "topology": { "name": exp.topology.name, "scale": exp.topology.scale },
        "coflow_scheduler": exp.coflow_scheduler,
        "task_schedulers": exp.task_schedulers,
        "slow_start": exp.engine.slow_start,
        "wire": wire,
    });
    let text = serde_json::to_string_pretty(&run).map_err(|e| err(e.to_string()))?;
    std::fs::write(dir.join("run.json"), text + "\n").map_err(|e| err(e.to_string()))?;
    for r in runs {
        let sub = dir.join(&r.outcome.policy);
        r.outcome.wire.write(&sub).map_err(|e| err(e.to_string()))?;
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
