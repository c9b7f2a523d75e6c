//! `ocslab bench sim`: the simulator's speed (issue 3, "Benchmarks"): the
//! wall time to replay the FB2010 coflow trace under each coflow scheduler,
//! and to simulate 1000 generated jobs on coscheduler-paper.toml (600
//! hosts), each the median of `--repeat` runs, with the peak memory of each
//! figure (VmHWM, reset between figures through /proc/self/clear_refs).
//!
//! With `--experiment FILE` (repeatable) it measures those experiment files
//! instead: each task scheduler's wall time, CPU time, peak memory, flows
//! and most flows in flight, one run at a time (issue 24).
//!
//! The harness is the simulator's own (`crate::sim::bench`); this module
//! parses the arguments and prints. By default every scheduler replays the whole trace (about five minutes
//! on this 2-core box at `--repeat 3`, most of it Sunflow's; `--schedulers`
//! and `--limit` narrow it).

use crate::coflow::POLICY_NAMES;
use crate::experiment::Experiment;
use crate::net::levels::SolveStats;
use crate::progress::Progress;
use crate::replay::ReplaySpec;
use crate::sim::bench::{
    bench_experiment, bench_jobs_repeated, bench_replay, peak_rss_mb, reset_peak_rss, ExperimentBench,
    JobsRepeated, ReplayBench,
};
use crate::trace::flow_sizes::FlowSizes;
use anyhow::{Context, Result};
use ocslab_emulator::Topology;
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments.
#[derive(clap::Args, Debug)]
pub struct SimArgs {
    /// The trace to replay.
    #[arg(long, default_value = "traces/FB2010-1Hr-150-0.txt")]
    pub trace: PathBuf,
    /// Folder with fb2010.toml (EPS-only schedulers) and fb2010-ocs.toml (those that use circuits).
    #[arg(long, default_value = "topologies")]
    pub topologies: PathBuf,
    /// Coflow schedulers to time (default: all).
    #[arg(long, value_delimiter = ',', value_parser = POLICY_NAMES)]
    pub schedulers: Vec<String>,
    /// Replay only the first N coflows (default: the whole trace).
    #[arg(long)]
    pub limit: Option<usize>,
    /// How trace lines become flows: coflowsim, sunflow, sunflow:SEED or exact
    /// (see `ocslab replay --help`).
    #[arg(long, default_value = "coflowsim")]
    pub flow_sizes: FlowSizes,
    /// Runs per figure; the wall time reported is their median.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: u32,
    /// Generated jobs to simulate on --jobs-topology (Fair task scheduler,
    /// fair coflow scheduler, fluid network); 0 skips this figure.
    #[arg(long, default_value_t = 1000)]
    pub jobs: u32,
    /// The topology of the jobs figure.
    #[arg(long, default_value = "topologies/coscheduler-paper.toml")]
    pub jobs_topology: PathBuf,
    /// Time these experiment files instead of the trace and the jobs figure,
    /// one row per task scheduler (repeatable), e.g.
    /// experiments/coscheduler-paper.toml.
    #[arg(long = "experiment", value_name = "FILE")]
    pub experiments: Vec<PathBuf>,
    /// With --experiment: only these task schedulers (default: each file's).
    #[arg(long, value_delimiter = ',')]
    pub task_schedulers: Vec<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct ExperimentsReport {
    repeat: u32,
    experiments: Vec<ExperimentBench>,
}

#[derive(Serialize)]
struct Report {
    trace: String,
    repeat: u32,
    replay: Vec<ReplayBench>,
    jobs: Option<JobsRepeated>,
    /// Peak resident memory of this process over the whole benchmark, MB,
    /// when it could not be measured per figure (VmHWM could not be reset).
    peak_rss_mb: Option<f64>,
}

/// The schedulers to replay: those named, or all.
fn schedulers(named: &[String]) -> Vec<String> {
    if named.is_empty() {
        POLICY_NAMES.iter().map(|s| s.to_string()).collect()
    } else {
        named.to_vec()
    }
}

/// `path` if it exists, else the same path under the source tree (so the
/// benchmark runs from any folder of a checkout).
fn locate(path: &Path) -> PathBuf {
    if path.exists() || path.is_absolute() {
        return path.to_path_buf();
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
}

/// Runs the benchmark.
pub fn run(a: SimArgs) -> Result<ExitCode> {
    if !a.experiments.is_empty() {
        return run_experiments(&a);
    }
    let trace = locate(&a.trace);
    let topologies = locate(&a.topologies);
    let schedulers = schedulers(&a.schedulers);
    let figures = schedulers.len() as u64 + u64::from(a.jobs > 0);
    let progress = Progress::counting(figures * u64::from(a.repeat), a.json, "runs", false);
    let per_figure_peak = reset_peak_rss();
    let mut rows = Vec::new();
    for s in &schedulers {
        // Schedulers that set up circuits replay on the fabric with an OCS.
        let uses_ocs = crate::coflow::by_name(s).is_ok_and(|p| p.uses_ocs());
        let topo = if uses_ocs {
            "fb2010-ocs.toml"
        } else {
            "fb2010.toml"
        };
        let topology = topologies.join(topo);
        let spec = ReplaySpec {
            trace: &trace,
            topology: &topology,
            scheduler: s,
            limit: a.limit,
            sizes: a.flow_sizes,
        };
        let row = bench_replay(&spec, a.repeat, per_figure_peak, |i| {
            if i > 1 {
                progress.job_done();
            }
            progress.set_message(format!("replay under {s} on {topo}, run {i}/{}", a.repeat));
        })
        .with_context(|| format!("replay under {s}"))?;
        progress.job_done();
        rows.push(row);
    }
    let jobs = if a.jobs > 0 {
        let path = locate(&a.jobs_topology);
        let topo = Topology::load(&path)?;
        let run = bench_jobs_repeated(&topo, a.jobs, a.repeat, per_figure_peak, |i| {
            if i > 1 {
                progress.job_done();
            }
            progress.set_message(format!("{} jobs on {}, run {i}/{}", a.jobs, topo.name, a.repeat));
        })
        .with_context(|| format!("simulating {} jobs on {}", a.jobs, path.display()))?;
        progress.job_done();
        Some(run)
    } else {
        None
    };
    progress.finish();
    let report = Report {
        trace: trace.display().to_string(),
        repeat: a.repeat,
        replay: rows,
        jobs,
        peak_rss_mb: if per_figure_peak { None } else { peak_rss_mb() },
    };
    let mut out = std::io::stdout().lock();
    if a.json {
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mb = |m: Option<f64>| m.map_or("-".to_string(), |m| format!("{m:.0}"));
    writeln!(
        out,
        "trace replay: {} (median of {} runs)",
        report.trace, report.repeat
    )?;
    writeln!(
        out,
        "{:<9} {:<16} {:>8} {:>8} {:>9} {:>10} {:>9} {:>11}",
        "scheduler", "topology", "coflows", "flows", "calls", "wall (s)", "peak MB", "avg CCT (s)"
    )?;
    for r in &report.replay {
        writeln!(
            out,
            "{:<9} {:<16} {:>8} {:>8} {:>9} {:>10.3} {:>9} {:>11.3}",
            r.scheduler,
            r.topology,
            r.coflows,
            r.flows,
            r.policy_calls,
            r.wall_s,
            mb(r.peak_rss_mb),
            r.avg_cct_s
        )?;
    }
    for r in report.replay.iter().filter(|r| r.policy_calls > 0) {
        writeln!(out, "policy, {}: {}", r.scheduler, policy_line(r))?;
    }
    for r in report.replay.iter().filter(|r| r.solver.solves > 0) {
        writeln!(out, "solver, {}: {}", r.scheduler, solver_line(&r.solver))?;
    }
    if let Some(j) = &report.jobs {
        writeln!(
            out,
            "jobs: {} jobs ({} tasks, {} flows) on {} ({} hosts), {} + {} coflow, {:?} network: \
             {:.3} s wall (median), {:.0} s simulated, peak {} MB",
            j.run.jobs,
            j.run.tasks,
            j.run.flows,
            j.run.topology,
            j.run.hosts,
            j.run.task_scheduler,
            j.run.coflow_scheduler,
            j.run.network,
            j.median_wall_s,
            j.run.simulated_s,
            mb(j.peak_rss_mb)
        )?;
    }
    if let Some(mb) = report.peak_rss_mb {
        writeln!(out, "peak memory (VmHWM, whole benchmark): {mb:.1} MB")?;
    } else if !per_figure_peak {
        writeln!(out, "peak memory: /proc/self/status not readable")?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Times each task scheduler of each `--experiment` file.
fn run_experiments(a: &SimArgs) -> Result<ExitCode> {
    let mut plan = Vec::new();
    for file in &a.experiments {
        let mut exp = Experiment::load(&locate(file))?;
        exp.keep_task_schedulers(&a.task_schedulers)
            .map_err(|e| anyhow::anyhow!("{}: --task-schedulers: {e}", file.display()))?;
        plan.push(exp);
    }
    let runs: usize = plan.iter().map(|e| e.task_schedulers.len()).sum();
    let progress = Progress::counting(runs as u64 * u64::from(a.repeat), a.json, "runs", false);
    let peaks = reset_peak_rss();
    let mut rows = Vec::new();
    for exp in &plan {
        for s in &exp.task_schedulers {
            let row = bench_experiment(exp, s, a.repeat, peaks, |i| {
                if i > 1 {
                    progress.job_done();
                }
                progress.set_message(format!("{} under {s}, run {i}/{}", exp.name, a.repeat));
            })
            .with_context(|| format!("{} under {s}", exp.name))?;
            progress.job_done();
            rows.push(row);
        }
    }
    progress.finish();
    let mut out = std::io::stdout().lock();
    if a.json {
        let report = ExperimentsReport {
            repeat: a.repeat,
            experiments: rows,
        };
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "experiments, one run at a time (median of {} runs)",
        a.repeat
    )?;
    writeln!(
        out,
        "{:<20} {:<20} {:>5} {:>6} {:>9} {:>10} {:>9} {:>8} {:>8} {:>8}",
        "experiment",
        "scheduler",
        "hosts",
        "jobs",
        "flows",
        "peak flows",
        "sim (s)",
        "wall (s)",
        "CPU (s)",
        "peak MB"
    )?;
    for r in &rows {
        writeln!(
            out,
            "{:<20} {:<20} {:>5} {:>6} {:>9} {:>10} {:>9.0} {:>8.1} {:>8.1} {:>8}",
            r.experiment,
            r.scheduler,
            r.hosts,
            r.jobs,
            r.flows,
            r.peak_flows,
            r.simulated_s,
            r.wall_s,
            r.cpu_s,
            r.peak_rss_mb.map_or("-".to_string(), |m| format!("{m:.0}"))
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// A replay's policy calls in a line: how many flows a call plans one by
/// one (policies that plan rack pairs or only order coflows plan none) and
/// moves to another path, cap or class, on average, and the time spent
/// inside the policy (medians over the runs). A call's cost grows with
/// both counts: each plan is read, and each move goes to the rate solver,
/// outside the policy's time.
fn policy_line(r: &ReplayBench) -> String {
    let calls = r.policy_calls.max(1) as f64;
    let plans = if r.flow_plans > 0 {
        format!("{:.0} flow plans and ", r.flow_plans as f64 / calls)
    } else {
        String::new()
    };
    format!(
        "{} calls, {plans}{:.1} flows moved each; {:.3} s of the {:.3} s wall inside the policy",
        r.policy_calls,
        r.flows_replanned as f64 / calls,
        r.policy_s,
        r.wall_s
    )
}

/// A replay's solver figures in a line: solves; under strict priority
/// between coflows (FIFO), the classes solved again (and of those, the
/// ones for new capacities alone) and kept per solve;
/// NIC freezes per solve (per class solved, under classes) and the share
/// repeated from the last solve's order (when every demand was in the
/// host-pair matrix), how resumed solves ended, the solves that only
/// took departures off links with every slot at its cap, and those that
/// froze links from rows of bundles by bottleneck.
fn solver_line(s: &SolveStats) -> String {
    let per = |n: u64, d: u64| if d > 0 { n as f64 / d as f64 } else { 0.0 };
    let mut line = format!("{} solves", s.solves);
    let classes = s.classes_filled + s.classes_kept > 0;
    if classes {
        line += &format!(
            ", {:.1} coflow classes solved again ({:.1} for new capacities alone) and {:.1} kept each",
            per(s.classes_filled, s.solves),
            per(s.classes_recapacitated, s.solves),
            per(s.classes_kept, s.solves)
        );
    }
    if s.freezes > 0 {
        // Counted when every demand is in the host-pair matrix.
        let (solved, each) = if classes {
            (s.classes_filled, "per class solved")
        } else {
            (s.solves, "each")
        };
        line += &format!(
            ", {:.0} NIC freezes {each} ({:.0} % repeated from the last solve's order)",
            per(s.freezes, solved),
            100.0 * per(s.freezes_repeated, s.freezes)
        );
    }
    let resumed = s.orders_followed + s.orders_left;
    if resumed > 0 {
        line += &format!(
            ", {:.0} % of resumed solves followed that order to the end",
            100.0 * per(s.orders_followed, resumed)
        );
    }
    if s.departures_at_caps > 0 {
        line += &format!(
            ", {} only took departures off links at caps",
            s.departures_at_caps
        );
    }
    if s.solves_at_caps > 0 {
        line += &format!(", {} left every slot at its cap (the caps fit)", s.solves_at_caps);
    }
    if s.local_solves > 0 {
        line += &format!(
            ", {:.0} % on the changed slots' links alone",
            100.0 * per(s.local_solves, s.solves)
        );
    }
    if s.row_solves > 0 {
        line += &format!(
            ", {:.0} % from rows by bottleneck ({:.1} bundles moved row each)",
            100.0 * per(s.row_solves, s.solves),
            per(s.row_moves, s.row_solves)
        );
    }
    line
}

#[cfg(test)]
mod tests {
    use super::{policy_line, schedulers, solver_line};
    use crate::coflow::POLICY_NAMES;
    use crate::net::levels::SolveStats;
    use crate::sim::bench::ReplayBench;

    #[test]
    fn every_scheduler_by_default_or_those_named() {
        assert_eq!(schedulers(&[]), POLICY_NAMES);
        let named = ["varys".to_string(), "fair".to_string()];
        assert_eq!(schedulers(&named), named);
    }

    #[test]
    fn the_policy_line_gives_plans_and_moves_per_call_and_the_policys_time() {
        let r = ReplayBench {
            scheduler: "varys".into(),
            topology: "fb2010.toml".into(),
            coflows: 2,
            flows: 10,
            policy_calls: 4,
            flow_plans: 32,
            flows_replanned: 6,
            wall_s: 2.5,
            wall_runs_s: vec![2.5],
            policy_s: 1.25,
            policy_runs_s: vec![1.25],
            peak_rss_mb: None,
            avg_cct_s: 0.0,
            solver: SolveStats::default(),
        };
        assert_eq!(
            policy_line(&r),
            "4 calls, 8 flow plans and 1.5 flows moved each; 1.250 s of the 2.500 s wall inside the policy"
        );
        let pairs = ReplayBench { flow_plans: 0, ..r };
        assert_eq!(
            policy_line(&pairs),
            "4 calls, 1.5 flows moved each; 1.250 s of the 2.500 s wall inside the policy"
        );
    }

    #[test]
    fn the_solver_line_says_what_each_count_means() {
        let fair = SolveStats {
            solves: 400,
            freezes: 50_000,
            freezes_repeated: 30_000,
            orders_followed: 380,
            orders_left: 19,
            ..SolveStats::default()
        };
        assert_eq!(
            solver_line(&fair),
            "400 solves, 125 NIC freezes each (60 % repeated from the last solve's order), \
             95 % of resumed solves followed that order to the end"
        );
        let capped = SolveStats {
            solves: 10,
            departures_at_caps: 7,
            solves_at_caps: 2,
            ..SolveStats::default()
        };
        assert_eq!(
            solver_line(&capped),
            "10 solves, 7 only took departures off links at caps, \
             2 left every slot at its cap (the caps fit)"
        );
        let rows = SolveStats {
            solves: 200,
            row_solves: 150,
            row_moves: 300,
            ..SolveStats::default()
        };
        assert_eq!(
            solver_line(&rows),
            "200 solves, 75 % from rows by bottleneck (2.0 bundles moved row each)"
        );
        let classes = SolveStats {
            solves: 100,
            classes_filled: 250,
            classes_recapacitated: 150,
            classes_kept: 3_000,
            freezes: 50_000,
            freezes_repeated: 10_000,
            ..SolveStats::default()
        };
        assert_eq!(
            solver_line(&classes),
            "100 solves, 2.5 coflow classes solved again (1.5 for new capacities alone) and 30.0 kept each, \
             200 NIC freezes per class solved (20 % repeated from the last solve's order)"
        );
    }
}
