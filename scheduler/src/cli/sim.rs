//! `ocslab sim EXPERIMENT [--json] [--out DIR]`: runs every task scheduler
//! of an experiment in the flow-level simulator (virtual time), prints one
//! row per scheduler (figures and, in brackets, their ratio to the first
//! scheduler), writes the results folder and prints its path. The runs go
//! through [`crate::runner`], as the demo's do. `--seeds N` repeats it over
//! seeds and `--jitter F --draws N` over jittered twins
//! ([`crate::runner::jitter`]), each run in its own folder, with the spread
//! over them.

use crate::experiment::Experiment;
use crate::progress::Progress;
use crate::report::folder::{self, Staged};
use crate::report::spread;
use crate::report::SchedulerSummary;
use crate::runner::jitter::{Draw, Jitter};
use crate::runner::{self, LinkRates, Simulator};
use anyhow::{Context, Result};
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU32, Ordering};

/// Arguments of `ocslab sim`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  ocslab sim experiments/lab-baselines.toml --json\n  ocslab sim experiments/lab-baselines.toml --jitter 0.01 --draws 20"
)]
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
    /// Run --draws twins of the experiment, each with every link rate and
    /// each host's compute speed multiplied by factors drawn within
    /// ±FRACTION (draw 0 is the experiment as it is), and report each
    /// scheduler's plain figures beside the band over the draws: how far
    /// a result moves on inputs that real runs do not hold to (e.g. 0.01).
    /// Each draw's results go to draw-K/, the band to jitter.json.
    #[arg(long, value_name = "FRACTION")]
    pub jitter: Option<f64>,
    /// With --jitter: how many twins, the plain run included.
    #[arg(long, default_value_t = 20, requires = "jitter", value_parser = clap::value_parser!(u32).range(2..))]
    pub draws: u32,
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
        ..Simulator::default()
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
    if let Some(f) = a.jitter {
        if a.seeds > 1 {
            anyhow::bail!("--jitter and --seeds > 1 do not go together: jitter draws repeat one seed");
        }
        let j = JitterArgs {
            jitter: Jitter::new(f).map_err(|e| anyhow::anyhow!("--jitter {e}"))?,
            draws: a.draws,
            sim: a.simulator(),
            json: a.json,
        };
        return run_jitter(&exp, &j, Staged::begin(&dir)?, &dir, &bar, threads);
    }
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

/// One run of a repeated experiment: its folder's name under the results
/// folder, the experiment and the simulator.
struct Variant {
    folder: String,
    exp: Experiment,
    sim: Simulator,
}

/// Runs `variants` into their folders under the staged results folder, in
/// order; runs at once when there are more threads than schedulers (see
/// [`runs_at_once`]). Returns each run's summaries, in order. Once a run
/// fails no further one starts, and the error is a failed run's.
fn run_variants(
    variants: &[Variant],
    staged: &Staged,
    bar: &Progress,
    threads: usize,
) -> Result<Vec<Vec<SchedulerSummary>>> {
    let schedulers = variants.first().map_or(1, |v| v.exp.task_schedulers.len());
    let (at_once, per_run) = runs_at_once(threads, schedulers, variants.len() as u32);
    let done = AtomicU32::new(0);
    let one = |v: &Variant| -> Result<Vec<SchedulerSummary>> {
        let mut sim = v.sim;
        // One run at a time shows its jobs on the bar; several would fight over it.
        let hidden = Progress::hidden(0);
        let run_bar = if at_once == 1 { bar } else { &hidden };
        let runs = runner::run_all(&mut sim, &v.exp, run_bar, per_run).with_context(|| v.folder.clone())?;
        let sub = staged.path().join(&v.folder);
        runs.write(&sub, &v.exp, &sim)
            .with_context(|| format!("writing results to {}", sub.display()))?;
        let n = done.fetch_add(1, Ordering::Relaxed) + 1;
        bar.println(format!("{} done ({n} of {})", v.folder, variants.len()));
        Ok(runs.summaries)
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(at_once)
        .build()
        .context("starting the runs' threads")?;
    pool.install(|| variants.par_iter().map(one).collect::<Result<Vec<_>>>())
}

/// Writes `report` as `name` into the staged folder, finishes the folder,
/// and prints the report as JSON if asked.
fn finish_report(json: bool, staged: Staged, name: &str, report: &serde_json::Value) -> Result<()> {
    let file = staged.path().join(name);
    std::fs::write(&file, serde_json::to_string_pretty(report)?)
        .with_context(|| format!("writing {}", file.display()))?;
    staged.finish()?;
    if json {
        println!("{}", serde_json::to_string_pretty(report)?);
    }
    Ok(())
}

/// `--seeds N`: the experiment under seeds seed .. seed + N - 1, one
/// results folder each (seed-S/), and the spread over them (seeds.json).
fn run_seeds(a: &SimArgs, exp: &Experiment, dir: &Path, bar: &Progress, threads: usize) -> Result<ExitCode> {
    let seeds: Vec<u64> = (0..u64::from(a.seeds))
        .map(|k| exp.seed.saturating_add(k))
        .collect();
    let variants: Vec<Variant> = seeds
        .iter()
        .map(|&seed| Variant {
            folder: format!("seed-{seed}"),
            exp: exp.with_seed(seed),
            sim: a.simulator(),
        })
        .collect();
    let staged = Staged::begin(dir)?;
    let all = run_variants(&variants, &staged, bar, threads)?;
    let spread = spread::over_runs(&all);
    let report = serde_json::json!({
        "experiment": exp.name,
        "seeds": seeds,
        "topology": exp.topology.name,
        "coflow_scheduler": exp.coflow_scheduler,
        "schedulers": spread,
        "results_dir": dir,
    });
    finish_report(a.json, staged, "seeds.json", &report)?;
    if a.json {
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
    let pm = |s: &spread::Spread, digits: usize| format!("{:.*} ± {:.*}", digits, s.mean, digits, s.sd);
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

/// What a run of jittered twins takes besides the experiment.
pub struct JitterArgs {
    /// How far each draw moves the inputs.
    pub jitter: Jitter,
    /// How many twins, the plain run included.
    pub draws: u32,
    /// The simulator of the plain run (its rate factor is the draw's).
    pub sim: Simulator,
    /// Print the report as JSON instead of the table.
    pub json: bool,
}

/// `--jitter F --draws N`: N twins of `exp` ([`crate::runner::jitter`];
/// draw 0 is the experiment as it is), one results folder each (draw-K/)
/// in `staged` (which becomes `dir`), and per scheduler the plain run's
/// figures beside the band over the draws (jitter.json). `ocslab demo
/// --sim --jitter` runs it too.
pub fn run_jitter(
    exp: &Experiment,
    a: &JitterArgs,
    staged: Staged,
    dir: &Path,
    bar: &Progress,
    threads: usize,
) -> Result<ExitCode> {
    let j = a.jitter;
    let draws: Vec<Draw> = (0..a.draws)
        .map(|k| j.draw(exp.seed, k, exp.topology.host_ids()))
        .collect();
    let variants: Vec<Variant> = draws
        .iter()
        .map(|d| Variant {
            folder: format!("draw-{}", d.draw),
            exp: d.apply(exp),
            sim: d.simulator(a.sim),
        })
        .collect();
    let all = run_variants(&variants, &staged, bar, threads)?;
    let spread = spread::over_runs(&all);
    let report = serde_json::json!({
        "experiment": exp.name,
        "seed": exp.seed,
        "jitter": j.fraction(),
        "topology": exp.topology.name,
        "coflow_scheduler": exp.coflow_scheduler,
        "draws": draws,
        "plain": all.first(),
        "schedulers": spread,
        "results_dir": dir,
    });
    finish_report(a.json, staged, "jitter.json", &report)?;
    if a.json {
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{} on {} (seed {}, coflows: {}): {} draws, link rates and host speeds within ±{} %; plain run [lowest – highest over the draws]",
        exp.name,
        exp.topology.name,
        exp.seed,
        exp.coflow_scheduler,
        a.draws,
        j.fraction() * 100.0
    );
    println!(
        "{:<20} {:>26} {:>26} {:>28}",
        "scheduler", "avg JCT s", "avg CCT s", "cross-rack GB"
    );
    // The plain run's figure, then the lowest and highest over the draws.
    let band = |plain: f64, s: &spread::Spread, unit: f64, digits: usize| {
        let (p, lo, hi) = (plain / unit, s.min / unit, s.max / unit);
        format!("{p:.digits$} [{lo:.digits$} – {hi:.digits$}]")
    };
    let plain = all.first().map(Vec::as_slice).unwrap_or_default();
    for (s, p) in spread.iter().zip(plain) {
        println!(
            "{:<20} {:>26} {:>26} {:>28}",
            s.name,
            band(p.avg_jct_s, &s.avg_jct_s, 1.0, 2),
            band(p.avg_cct_s, &s.avg_cct_s, 1.0, 2),
            band(p.cross_rack_bytes as f64, &s.cross_rack_bytes, 1e9, 4)
        );
    }
    println!("results: {}", dir.display());
    Ok(ExitCode::SUCCESS)
}

/// How `threads` are spread over `runs` runs (seeds or draws) of
/// `schedulers` task schedulers each: (runs at once, threads each of them
/// uses). A run takes as many threads as it has schedulers, up to all of
/// them; the threads left over run further runs.
fn runs_at_once(threads: usize, schedulers: usize, runs: u32) -> (usize, usize) {
    let per_run = threads.min(schedulers).max(1);
    let at_once = (threads / per_run).clamp(1, runs.max(1) as usize);
    (at_once, per_run)
}

#[cfg(test)]
mod tests {
    use super::runs_at_once;

    #[test]
    fn spare_threads_run_more_runs() {
        // One scheduler on 2 cores: two runs at once, one thread each.
        assert_eq!(runs_at_once(2, 1, 20), (2, 1));
        // Two schedulers fill 2 cores: one run at a time.
        assert_eq!(runs_at_once(2, 2, 20), (1, 2));
        // 16 cores, 5 schedulers: 3 runs at once (15 threads).
        assert_eq!(runs_at_once(16, 5, 20), (3, 5));
        // Never more runs at once than there are runs, never none.
        assert_eq!(runs_at_once(8, 1, 3), (3, 1));
        assert_eq!(runs_at_once(1, 4, 20), (1, 1));
    }
}
