//! `ocslab demo`, the main job: a seeded mix of shuffle-heavy and
//! shuffle-light jobs on a 4x4 hybrid datacenter (EPS core 4:1
//! oversubscribed, one OCS port per rack, Sunflow scheduling the circuits),
//! run once per task scheduler (Fair, then what the build has of
//! ShuffleWatcher/NAS and Co-scheduler, Delay until then), compared in one
//! table normalized to Fair, with a results folder of CSVs and plots.
//!
//! The topology ([`TOPOLOGY`]) and the experiment ([`EXPERIMENT`]) are
//! embedded in the binary, so the demo needs no file. [`run`] writes them
//! into the results folder (the experiment with the line-up of
//! [`lineup`]), loads them back like any experiment file, runs each
//! scheduler through the runner ([`crate::runner`]) with a [`Driver`]
//! (simulator or kernel fabric), and writes the results folder of
//! [`crate::report::results`] plus `demo.json`, the table as printed
//! ([`table`]). After a run on real bytes, [`runner::model`] sets each
//! scheduler's figures against the simulator's.

pub mod lineup;
pub mod table;

pub use crate::runner::{Driver, Emulator, Simulator};
pub use table::DemoTable;

use crate::experiment::{Experiment, ExperimentError};
use crate::progress::Progress;
use crate::report::folder::{FolderError, Staged};
use crate::report::SchedulerSummary;
use crate::runner::model::{self, ModelCheck};
use crate::runner::{self, RunnerError, Runs};
use crate::sim::SimOutcome;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// The demo's topology file (lab-sized: 4 racks of 4 hosts).
pub const TOPOLOGY: &str = include_str!("topology.toml");

/// The demo's experiment file (before the line-up is filled in).
pub const EXPERIMENT: &str = include_str!("experiment.toml");

/// Why the demo failed.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    /// The embedded experiment is invalid (a bug of this build).
    #[error(transparent)]
    Experiment(#[from] ExperimentError),
    /// A run, or writing the results folder, failed.
    #[error(transparent)]
    Run(#[from] RunnerError),
    /// The embedded files could not be prepared.
    #[error("preparing the demo's experiment: {0}")]
    Prepare(String),
    /// The results folder could not be staged or finished.
    #[error(transparent)]
    Folder(#[from] FolderError),
    /// A file of the results folder could not be written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// A finished demo.
#[derive(Debug, Serialize)]
pub struct DemoOutcome {
    /// `"sim"` or `"emu"`.
    pub driver: &'static str,
    /// The experiment's name.
    pub experiment: String,
    /// The topology's name.
    pub topology: String,
    /// The topology's scale (rates and sizes divided by it).
    pub scale: f64,
    /// The workload's seed.
    pub seed: u64,
    /// The coflow scheduler.
    pub coflow_scheduler: String,
    /// The table.
    pub table: DemoTable,
    /// The results folder.
    pub results_dir: PathBuf,
    /// Wall-clock time of the runs (not of writing the folder), seconds.
    pub wall_s: f64,
    /// The figures against the model's ([`runner::model`]), when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelCheck>,
    /// Per-scheduler summaries as in `summary.json`.
    #[serde(skip)]
    pub summaries: Vec<SchedulerSummary>,
    /// Per-scheduler outcomes.
    #[serde(skip)]
    pub outcomes: Vec<SimOutcome>,
}

/// The demo's experiment text for a build whose task schedulers are
/// `available`: the embedded file with `task_schedulers` set to the
/// line-up and parameters of schedulers outside it dropped.
pub fn experiment_text(available: &[&str]) -> Result<String, DemoError> {
    let mut t: toml::Table = toml::from_str(EXPERIMENT).map_err(|e| DemoError::Prepare(e.to_string()))?;
    let picked = lineup::lineup(available);
    t.insert(
        "task_schedulers".into(),
        toml::Value::Array(picked.iter().map(|n| toml::Value::String(n.clone())).collect()),
    );
    if let Some(toml::Value::Table(params)) = t.get_mut("scheduler_params") {
        params.retain(|k, _| picked.iter().any(|p| p == k));
    }
    let body = toml::to_string(&t).map_err(|e| DemoError::Prepare(e.to_string()))?;
    Ok(format!(
        "# The experiment `ocslab demo` ran: its embedded default\n\
         # (scheduler/src/demo/experiment.toml) with the line-up of this build.\n{body}"
    ))
}

/// Writes the demo's topology and experiment into `dir` and loads them.
pub fn prepare(dir: &Path) -> Result<Experiment, DemoError> {
    let io = |path: PathBuf| move |source| DemoError::Io { path, source };
    std::fs::create_dir_all(dir).map_err(io(dir.to_path_buf()))?;
    let topo = dir.join("topology.toml");
    std::fs::write(&topo, TOPOLOGY).map_err(io(topo.clone()))?;
    let file = dir.join("experiment.toml");
    std::fs::write(&file, experiment_text(&crate::policy::names())?).map_err(io(file.clone()))?;
    Ok(Experiment::load(&file)?)
}

/// The demo's experiment, loaded from a scratch folder under the system's
/// temporary directory named by `tag`, which is removed again (tests).
#[cfg(test)]
pub(crate) fn experiment_for_test(tag: &str) -> Experiment {
    let dir = std::env::temp_dir().join(format!("ocslab-{tag}-{}", std::process::id()));
    let exp = prepare(&dir).expect("the demo's experiment");
    std::fs::remove_dir_all(&dir).ok();
    exp
}

/// Runs the demo with `driver`, writing its results folder into `dir`;
/// `bar` shows jobs done over all runs, bytes moved and the scheduler
/// running. With `model_draws`, then sets the figures against the model's
/// plain run and that many twins ([`model::check`]).
pub fn run(
    driver: &mut dyn Driver,
    dir: &Path,
    bar: &Progress,
    model_draws: Option<u32>,
) -> Result<DemoOutcome, DemoError> {
    let staged = Staged::begin(dir)?;
    let exp = prepare(staged.path())?;
    let runs = runner::run_all(driver, &exp, bar, runner::default_threads())?;
    runs.write(staged.path(), &exp, driver)?;
    let model = model_draws.and_then(|draws| model::check_after_real(&exp, &runs.summaries, draws, bar));
    let Runs {
        outcomes,
        summaries,
        wall_s,
        ..
    } = runs;
    let outcome = DemoOutcome {
        driver: driver.name(),
        experiment: exp.name.clone(),
        topology: exp.topology.name.clone(),
        scale: exp.topology.scale,
        seed: exp.seed,
        coflow_scheduler: exp.coflow_scheduler.clone(),
        table: DemoTable::new(&summaries),
        results_dir: dir.to_path_buf(),
        wall_s,
        model,
        summaries,
        outcomes,
    };
    let path = staged.path().join("demo.json");
    let text = serde_json::to_string_pretty(&outcome).map_err(|e| DemoError::Prepare(e.to_string()))?;
    std::fs::write(&path, text + "\n").map_err(|source| DemoError::Io { path, source })?;
    staged.finish()?;
    Ok(outcome)
}
