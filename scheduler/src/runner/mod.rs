//! One runner for an experiment's task schedulers, whichever driver moves
//! the bytes ([`Driver`]: the simulator or the kernel fabric): each
//! scheduler runs on the same jobs under one progress bar, their summaries
//! are normalized to the first, and [`Runs::write`] writes the results
//! folder of [`crate::report::results`] plus what the driver measured
//! beyond it; [`table`] prints what `ocslab sim` and `ocslab run` show.
//! `ocslab sim`, `ocslab run` and `ocslab demo` run through it.

mod driver;
pub mod table;

pub use driver::{Driver, Emulator, Simulator};

use crate::experiment::{Experiment, ExperimentError};
use crate::progress::Progress;
use crate::report::results::{self, ResultsError};
use crate::report::{normalize, SchedulerSummary};
use crate::sim::SimOutcome;
use ocslab_emulator::Bytes;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Why a run of an experiment failed.
#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    /// The experiment (or a file it names) is invalid.
    #[error(transparent)]
    Experiment(#[from] ExperimentError),
    /// A simulated run failed.
    #[error(transparent)]
    Sim(#[from] crate::sim::RunError),
    /// An emulated run failed.
    #[error("task scheduler {scheduler}: {message}")]
    Emu {
        /// The scheduler being run.
        scheduler: String,
        /// What failed.
        message: String,
    },
    /// A file of the results folder could not be written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The results folder could not be written.
    #[error(transparent)]
    Results(#[from] ResultsError),
}

/// Every task scheduler of an experiment, run by one driver.
#[derive(Debug)]
pub struct Runs {
    /// The driver's name (`"sim"` or `"emu"`).
    pub driver: &'static str,
    /// One outcome per task scheduler, in the experiment's order.
    pub outcomes: Vec<SimOutcome>,
    /// Their summaries, normalized to the first scheduler's.
    pub summaries: Vec<SchedulerSummary>,
    /// Wall-clock time of the runs, seconds.
    pub wall_s: f64,
}

/// Runs every task scheduler of `exp` with `driver`, one after the other,
/// on the experiment's jobs; `bar` shows jobs done over all runs, bytes
/// moved and the scheduler running.
pub fn run_all(driver: &mut dyn Driver, exp: &Experiment, bar: &Progress) -> Result<Runs, RunnerError> {
    let jobs = exp.jobs()?;
    bar.set_total_jobs((jobs.len() * exp.task_schedulers.len()) as u64);
    let start = Instant::now();
    let mut outcomes = Vec::with_capacity(exp.task_schedulers.len());
    let (mut done, mut moved) = (0u64, Bytes(0));
    let kind = driver.name();
    for name in &exp.task_schedulers {
        bar.set_message(format!("{name} ({kind})"));
        let out = driver.run(exp, name, jobs.clone(), &mut |p| {
            bar.set_jobs_done(done + p.jobs_done as u64);
            bar.set_bytes(moved + p.bytes);
            bar.set_message(format!("{name} ({kind}), run time {:.1} s", p.now.as_secs_f64()));
        })?;
        done += jobs.len() as u64;
        moved += out.net.eps_bytes + out.net.ocs_bytes;
        bar.set_jobs_done(done);
        bar.set_bytes(moved);
        outcomes.push(out);
    }
    let wall_s = start.elapsed().as_secs_f64();
    bar.finish();
    let mut summaries: Vec<SchedulerSummary> = outcomes
        .iter()
        .enumerate()
        .map(|(i, o)| driver.summary(i, o))
        .collect();
    normalize(&mut summaries);
    Ok(Runs {
        driver: kind,
        outcomes,
        summaries,
        wall_s,
    })
}

impl Runs {
    /// Writes the results folder `dir` of these runs of `exp`, and what
    /// `driver` (the one that ran them) measured beyond the outcomes.
    pub fn write(&self, dir: &Path, exp: &Experiment, driver: &dyn Driver) -> Result<(), RunnerError> {
        let extra = driver.run_json();
        results::write_as(dir, self.driver, exp, &self.outcomes, &self.summaries, &extra)?;
        driver.write_extras(dir)
    }
}
