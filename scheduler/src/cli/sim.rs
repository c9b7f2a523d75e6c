//! `ocslab sim EXPERIMENT [--json] [--out DIR]`: runs every task scheduler
//! of an experiment in the flow-level simulator (virtual time), prints one
//! row per scheduler (figures and, in brackets, their ratio to the first
//! scheduler), writes the results folder and prints its path. The runs go
//! through [`crate::runner`], as the demo's do.

use crate::experiment::Experiment;
use crate::progress::Progress;
use crate::report::folder::{self, Staged};
use crate::runner::{self, Simulator};
use anyhow::{Context, Result};
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `ocslab sim`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Example:\n  ocslab sim experiments/lab-baselines.toml --json")]
pub struct SimArgs {
    /// The experiment file (TOML).
    pub experiment: PathBuf,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Results folder (default: results/<experiment>-sim-<UTC time>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Add a perturbation (repeatable): speed:HOST:S, straggler:HOST:S@AT+FOR,
    /// kill:HOST@AT+DOWN, link-down:LINK@AT+FOR (see `ocslab_scheduler::perturb`).
    #[arg(long = "perturb", value_name = "SPEC")]
    pub perturb: Vec<String>,
    /// Task schedulers simulated at once, each on its own thread (default:
    /// one per core). Results do not depend on it.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub threads: Option<u32>,
}

/// Runs `ocslab sim`.
pub fn run(a: SimArgs) -> Result<ExitCode> {
    let mut exp = Experiment::load(&a.experiment)?;
    for spec in &a.perturb {
        let p = crate::perturb::Perturbation::parse_cli(spec, &exp.topology)
            .map_err(|e| anyhow::anyhow!("--perturb {e}"))?;
        exp.perturbations.push(p);
    }
    let bar = Progress::new(0, a.json);
    let threads = a.threads.map_or_else(runner::default_threads, |n| n as usize);
    let runs = runner::run_all(&mut Simulator, &exp, &bar, threads)?;
    let dir = a
        .out
        .unwrap_or_else(|| folder::dated(&format!("results/{}-sim", exp.name)));
    let staged = Staged::begin(&dir)?;
    runs.write(staged.path(), &exp, &Simulator)
        .with_context(|| format!("writing results to {}", dir.display()))?;
    staged.finish()?;
    let summaries = runs.summaries;
    if a.json {
        let v = serde_json::json!({
            "experiment": exp.name,
            "seed": exp.seed,
            "topology": exp.topology.name,
            "coflow_scheduler": exp.coflow_scheduler,
            "schedulers": summaries,
            "results_dir": dir,
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        crate::runner::table::sim_table(&mut std::io::stdout().lock(), &exp, &summaries)?;
        println!("results: {}", dir.display());
    }
    Ok(ExitCode::SUCCESS)
}
