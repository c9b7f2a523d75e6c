//! What runs one task scheduler of the demo: the flow-level simulator
//! ([`Simulator`], virtual time) or the kernel fabric with real bytes (the
//! emulation driver). The demo only sees [`Driver`], so its table, results
//! folder and checks are the same whichever runs it.

use super::DemoError;
use crate::experiment::Experiment;
use crate::model::job::Job;
use crate::sim::{run_scheduler_with, SimOutcome, SimProgress};

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
    ) -> Result<SimOutcome, DemoError>;
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
    ) -> Result<SimOutcome, DemoError> {
        Ok(run_scheduler_with(exp, scheduler, jobs, progress)?)
    }
}
