//! `ocslab sim EXPERIMENT [--json] [--out DIR]`: runs every task scheduler
//! of an experiment in the flow-level simulator (virtual time), prints one
//! row per scheduler (figures and, in brackets, their ratio to the first
//! scheduler), writes the results folder and prints its path. The runs go
//! through [`crate::runner`], as the demo's do.

use crate::experiment::Experiment;
use crate::progress::Progress;
use crate::report::folder::{self, Staged};
use crate::report::seeds;
use crate::report::SchedulerSummary;
use crate::runner::{self, LinkRates, Simulator};
use anyhow::{Context, Result};
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU32, Ordering};

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
    /// kill:HOST@AT+DOWN, link-down:LINK@AT+FOR (LINK: rR-up, rRhH-nic or
    /// rR-ocsP; flows across it wait; see `ocslab_scheduler::perturb`).
    #[arg(long = "perturb", value_name = "SPEC")]
    pub perturb: Vec<String>,
    /// Runs simulated at once, each on its own thread (default: one per
    /// core): the task schedulers, and with --seeds further seeds when
    /// threads are left over. Results do not depend on it.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub threads: Option<u32>,
    /// Repeat the experiment with N seeds (its seed, seed + 1, ...) and
    /// report each scheduler's mean and spread over them; each seed's
    /// results go to seed-S/ under the results folder, the spread to
    /// seeds.json.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub seeds: u32,
    /// Run only these of the experiment's task schedulers (comma-separated;
    /// default: all). The file's first of them stays the baseline.
    #[arg(long, value_delimiter = ',')]
    pub task_schedulers: Vec<String>,
    /// Run every link at the rate a TCP stream's payload gets of it (1448
    /// of every 1514 bytes), as real bytes reach, instead of its nominal
    /// rate: to set the simulator beside `ocslab run` on the same file.
    #[arg(long)]
    pub payload_rates: bool,
}

impl SimArgs {
    /// The simulator these arguments ask for.
    fn simulator(&self) -> Simulator {
        simulator(self.payload_rates)
    }
}

/// The simulator, at TCP's payload rates if `payload_rates`.
pub fn simulator(payload_rates: bool) -> Simulator {
    Simulator {
        link_rates: if payload_rates {
            LinkRates::TcpPayload
        } else {
            LinkRates::Nominal
        },
    }
}

/// Runs `ocslab sim`.
pub fn run(a: SimArgs) -> Result<ExitCode> {
    let mut exp = Experiment::load(&a.experiment)?;
    exp.keep_task_schedulers(&a.task_schedulers)
        .map_err(|e| anyhow::anyhow!("{}: --task-schedulers: {e}", a.experiment.display()))?;
    for spec in &a.perturb {
        let p = crate::perturb::Perturbation::parse_cli(spec, &exp.topology)
            .map_err(|e| anyhow::anyhow!("--perturb {e}"))?;
        exp.perturbations.push(p);
    }
    let bar = Progress::new(0, a.json);
    let threads = a.threads.map_or_else(runner::default_threads, |n| n as usize);
    let dir = a
        .out
        .clone()
        .unwrap_or_else(|| folder::dated(&format!("results/{}-sim", exp.name)));
    if a.seeds > 1 {
        return run_seeds(&a, &exp, &dir, &bar, threads);
    }
    let mut sim = a.simulator();
    let runs = runner::run_all(&mut sim, &exp, &bar, threads)?;
    let staged = Staged::begin(&dir)?;
    runs.write(staged.path(), &exp, &sim)
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

/// `--seeds N`: the experiment under seeds seed .. seed + N - 1, one
/// results folder each, and the spread over them. Seeds run at once when
/// there are more threads than schedulers (see [`seeds_at_once`]).
fn run_seeds(a: &SimArgs, exp: &Experiment, dir: &Path, bar: &Progress, threads: usize) -> Result<ExitCode> {
    let staged = Staged::begin(dir)?;
    let (at_once, per_seed) = seeds_at_once(threads, exp.task_schedulers.len(), a.seeds);
    let done = AtomicU32::new(0);
    let one_seed = |k: u32| -> Result<Vec<SchedulerSummary>> {
        let mut sim = a.simulator();
        let e = exp.with_seed(exp.seed.saturating_add(u64::from(k)));
        // One seed at a time shows its jobs on the bar; several would fight over it.
        let hidden = Progress::hidden(0);
        let seed_bar = if at_once == 1 { bar } else { &hidden };
        let runs =
            runner::run_all(&mut sim, &e, seed_bar, per_seed).with_context(|| format!("seed {}", e.seed))?;
        let sub = staged.path().join(format!("seed-{}", e.seed));
        runs.write(&sub, &e, &sim)
            .with_context(|| format!("writing results to {}", sub.display()))?;
        let n = done.fetch_add(1, Ordering::Relaxed) + 1;
        bar.println(format!("seed {} done ({n} of {})", e.seed, a.seeds));
        Ok(runs.summaries)
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(at_once)
        .build()
        .context("starting the seeds' threads")?;
    // Results in seed order. Once a seed fails no further one starts, and
    // the error is a failed seed's.
    let all = pool.install(|| {
        (0..a.seeds)
            .into_par_iter()
            .map(one_seed)
            .collect::<Result<Vec<_>>>()
    })?;
    let spread = seeds::over_seeds(&all);
    let report = serde_json::json!({
        "experiment": exp.name,
        "seeds": (0..u64::from(a.seeds)).map(|k| exp.seed.saturating_add(k)).collect::<Vec<_>>(),
        "topology": exp.topology.name,
        "coflow_scheduler": exp.coflow_scheduler,
        "schedulers": spread,
        "results_dir": dir,
    });
    let file = staged.path().join("seeds.json");
    std::fs::write(&file, serde_json::to_string_pretty(&report)?)
        .with_context(|| format!("writing {}", file.display()))?;
    staged.finish()?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{} on {} (seeds {}..={}, coflows: {}): mean ± sd over seeds; ratios to {} seed by seed",
        exp.name,
        exp.topology.name,
        exp.seed,
        exp.seed.saturating_add(u64::from(a.seeds) - 1),
        exp.coflow_scheduler,
        spread.first().map_or("-", |s| s.name.as_str())
    );
    println!(
        "{:<20} {:>16} {:>16} {:>16} {:>14} {:>14} {:>14}",
        "scheduler", "makespan s", "avg JCT s", "avg CCT s", "makespan ×", "avg JCT ×", "avg CCT ×"
    );
    let pm = |s: &seeds::Spread, digits: usize| format!("{:.*} ± {:.*}", digits, s.mean, digits, s.sd);
    for s in &spread {
        println!(
            "{:<20} {:>16} {:>16} {:>16} {:>14} {:>14} {:>14}",
            s.name,
            pm(&s.makespan_s, 1),
            pm(&s.avg_jct_s, 1),
            pm(&s.avg_cct_s, 2),
            pm(&s.makespan_ratio, 3),
            pm(&s.avg_jct_ratio, 3),
            pm(&s.avg_cct_ratio, 3)
        );
    }
    println!("results: {}", dir.display());
    Ok(ExitCode::SUCCESS)
}

/// How `threads` are spread over `seeds` runs of `schedulers` task
/// schedulers each: (seeds run at once, threads each of them uses). A seed
/// takes as many threads as it has schedulers, up to all of them; the
/// threads left over run further seeds.
fn seeds_at_once(threads: usize, schedulers: usize, seeds: u32) -> (usize, usize) {
    let per_seed = threads.min(schedulers).max(1);
    let at_once = (threads / per_seed).clamp(1, seeds.max(1) as usize);
    (at_once, per_seed)
}

#[cfg(test)]
mod tests {
    use super::seeds_at_once;

    #[test]
    fn spare_threads_run_more_seeds() {
        // One scheduler on 2 cores: two seeds at once, one thread each.
        assert_eq!(seeds_at_once(2, 1, 20), (2, 1));
        // Two schedulers fill 2 cores: one seed at a time, as before.
        assert_eq!(seeds_at_once(2, 2, 20), (1, 2));
        // 16 cores, 5 schedulers: 3 seeds at once (15 threads).
        assert_eq!(seeds_at_once(16, 5, 20), (3, 5));
        // Never more seeds at once than there are seeds, never none.
        assert_eq!(seeds_at_once(8, 1, 3), (3, 1));
        assert_eq!(seeds_at_once(1, 4, 20), (1, 1));
    }
}
