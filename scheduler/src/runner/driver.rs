//! What runs one task scheduler of an experiment: the flow-level simulator
//! ([`Simulator`], virtual time) or the kernel fabric with real bytes
//! ([`Emulator`], the emulation driver of [`crate::emu`]). The runner only
//! sees [`Driver`], so tables, results folders and checks are the same
//! whichever runs it.

use super::RunnerError;
use crate::emu::experiment::{as_sim_outcome, summarize_emu};
use crate::emu::{self, EmuConfig, EmuOutcome, FabricChoice};
use crate::experiment::Experiment;
use crate::model::job::Job;
use crate::report::{summarize, SchedulerSummary};
use crate::sim::{run_scheduler_with, SimOutcome, SimProgress};
use std::path::Path;
use std::time::Duration;

/// Runs one task scheduler of an experiment on some substrate.
pub trait Driver {
    /// `"sim"` or `"emu"`, as `run.json` and the results folder's name say.
    fn name(&self) -> &'static str;

    /// Runs `jobs` placed by task scheduler `scheduler` under the experiment's
    /// topology, coflow scheduler and engine settings; `progress` is called as
    /// jobs finish. The outcome has the simulator's shape whatever the driver.
    fn run(
        &mut self,
        exp: &Experiment,
        scheduler: &str,
        jobs: Vec<Job>,
        progress: &mut dyn FnMut(&SimProgress),
    ) -> Result<SimOutcome, RunnerError>;

    /// The summary of the `run`-th outcome this driver returned (`out`).
    /// By default the simulator's ([`summarize`]: bytes per fabric from the
    /// flow records).
    fn summary(&self, _run: usize, out: &SimOutcome) -> SchedulerSummary {
        summarize(out)
    }

    /// Writes what this driver measured beyond the outcomes into the
    /// results folder `dir` (after the common files). Nothing by default.
    fn write_extras(&self, _dir: &Path) -> Result<(), RunnerError> {
        Ok(())
    }
}

/// The flow-level simulator (virtual time, the fluid network).
#[derive(Clone, Copy, Debug, Default)]
pub struct Simulator;

impl Driver for Simulator {
    fn name(&self) -> &'static str {
        "sim"
    }

    fn run(
        &mut self,
        exp: &Experiment,
        scheduler: &str,
        jobs: Vec<Job>,
        progress: &mut dyn FnMut(&SimProgress),
    ) -> Result<SimOutcome, RunnerError> {
        Ok(run_scheduler_with(exp, scheduler, jobs, progress)?)
    }
}

/// The kernel fabric with real bytes: one fresh fabric and one agent per
/// host for each scheduler ([`emu::run_jobs`]), torn down after it. The
/// table's EPS and OCS bytes are then the fabric's own counters (EPS
/// uplinks, OCS ports), and each scheduler's folder also gets what was
/// measured on the wire (`wire_flows.csv`, `wire_coflows.csv`, `wire_summary.json`).
#[derive(Debug)]
pub struct Emulator {
    config: EmuConfig,
    runs: Vec<EmuOutcome>,
}

impl Emulator {
    /// An emulator giving up on a scheduler's run after `time_limit`.
    pub fn new(time_limit: Duration) -> Emulator {
        Emulator {
            config: EmuConfig {
                time_limit,
                ..EmuConfig::default()
            },
            runs: Vec::new(),
        }
    }
}

impl Driver for Emulator {
    fn name(&self) -> &'static str {
        "emu"
    }

    fn run(
        &mut self,
        exp: &Experiment,
        scheduler: &str,
        jobs: Vec<Job>,
        _progress: &mut dyn FnMut(&SimProgress),
    ) -> Result<SimOutcome, RunnerError> {
        let fail = |message: String| RunnerError::Emu {
            scheduler: scheduler.to_string(),
            message,
        };
        exp.topology
            .check_emulable(&exp.topology_file)
            .map_err(|e| fail(e.to_string()))?;
        let mut cfg = self
            .config
            .clone()
            .with_experiment_load_samples(exp.sim.load_sample_interval);
        cfg.coflow_policy = exp.coflow_scheduler.clone();
        cfg.seed = exp.seed;
        let policy = exp.policy(scheduler).map_err(|e| fail(e.to_string()))?;
        let fabric = FabricChoice::Build {
            topology_file: Some(exp.topology_file.clone()),
        };
        let out = emu::run_jobs(&exp.topology, fabric, jobs, policy, exp.engine.clone(), &cfg)
            .map_err(|e| fail(e.to_string()))?;
        let sim = as_sim_outcome(&out);
        self.runs.push(out);
        Ok(sim)
    }

    /// The cross-rack bytes per fabric measured on the wire (kernel counters).
    fn summary(&self, run: usize, out: &SimOutcome) -> SchedulerSummary {
        match self.runs.get(run) {
            Some(o) => summarize_emu(o),
            None => summarize(out),
        }
    }

    fn write_extras(&self, dir: &Path) -> Result<(), RunnerError> {
        for r in &self.runs {
            let sub = dir.join(&r.policy);
            crate::report::wire::write(&r.wire, &sub)
                .map_err(|source| RunnerError::Io { path: sub, source })?;
        }
        Ok(())
    }
}
