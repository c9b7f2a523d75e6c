//! `ocslab bench sim`: the simulator's speed (issue 3, "Benchmarks"): the
//! wall time to replay the FB2010 coflow trace under each coflow scheduler,
//! and to simulate 1000 generated jobs on coscheduler-paper.toml (600
//! hosts), each the median of `--repeat` runs, with the peak memory of each
//! figure (VmHWM, reset between figures through /proc/self/clear_refs).
//!
//! By default every scheduler replays the whole trace (about five minutes
//! on this 2-core box at `--repeat 3`, most of it Sunflow's; `--schedulers`
//! and `--limit` narrow it).

use super::replay::run_replay;
use crate::coflow::POLICY_NAMES;
use crate::experiment::NetworkKind;
use crate::net::levels::SolveStats;
use crate::progress::Progress;
use crate::sim::bench::{bench_jobs, JobsBench};
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
    /// Folder with fb2010.toml (EPS-only schedulers) and fb2010-ocs.toml (sunflow).
    #[arg(long, default_value = "topologies")]
    pub topologies: PathBuf,
    /// Coflow schedulers to time (default: all).
    #[arg(long, value_delimiter = ',', value_parser = POLICY_NAMES)]
    pub schedulers: Vec<String>,
    /// Replay only the first N coflows (default: the whole trace).
    #[arg(long)]
    pub limit: Option<usize>,
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
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct Row {
    scheduler: String,
    topology: String,
    coflows: usize,
    flows: usize,
    policy_calls: u64,
    /// Median wall time of the replays, seconds.
    wall_s: f64,
    /// Every replay's wall time, seconds.
    wall_runs_s: Vec<f64>,
    /// Peak resident memory over these replays, MB (None: not measurable).
    peak_rss_mb: Option<f64>,
    avg_cct_s: f64,
    /// How the rate solver went in the last replay.
    solver: SolveStats,
}

#[derive(Serialize)]
struct JobsRow {
    /// The last run's figures (all runs simulate the same thing).
    #[serde(flatten)]
    run: JobsBench,
    /// Median wall time of the runs, seconds (replaces the last run's `wall_s`).
    median_wall_s: f64,
    /// Every run's wall time, seconds.
    wall_runs_s: Vec<f64>,
    /// Peak resident memory over these runs, MB.
    peak_rss_mb: Option<f64>,
}

#[derive(Serialize)]
struct Report {
    trace: String,
    repeat: u32,
    replay: Vec<Row>,
    jobs: Option<JobsRow>,
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

/// Peak resident set size in MB, from /proc/self/status.
pub fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// Hands the heap pages that earlier runs freed back to the kernel, so
/// that they do not count in the next run's peak.
fn trim_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free heap pages to the kernel; it
    // takes no pointer and touches no live allocation.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Resets the peak resident set size (VmHWM) to the current one, the heap
/// trimmed first; false if the kernel refused (then peaks are over the
/// whole process).
fn reset_peak_rss() -> bool {
    trim_heap();
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// The median of `xs` (not empty).
fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
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
    let trace = locate(&a.trace);
    let topologies = locate(&a.topologies);
    let schedulers = schedulers(&a.schedulers);
    let figures = schedulers.len() as u64 + u64::from(a.jobs > 0);
    let progress = Progress::counting(figures * u64::from(a.repeat), a.json, "runs", false);
    let per_figure_peak = reset_peak_rss();
    let figure_peak = || if per_figure_peak { peak_rss_mb() } else { None };
    let mut rows = Vec::new();
    for s in &schedulers {
        let topo = if s == "sunflow" {
            "fb2010-ocs.toml"
        } else {
            "fb2010.toml"
        };
        reset_peak_rss();
        let mut walls = Vec::new();
        let mut last = None;
        for i in 1..=a.repeat {
            trim_heap();
            progress.set_message(format!("replay under {s} on {topo}, run {i}/{}", a.repeat));
            let run = run_replay(&trace, &topologies.join(topo), s, a.limit, |_, _| {})
                .with_context(|| format!("replay under {s}"))?;
            walls.push(run.wall_s);
            progress.job_done();
            last = Some(run);
        }
        let Some(run) = last else { continue };
        let n = run.outcome.records.len();
        rows.push(Row {
            scheduler: s.clone(),
            topology: topo.to_string(),
            coflows: n,
            flows: run.flows,
            policy_calls: run.outcome.stats.policy_calls,
            wall_s: median(&walls),
            wall_runs_s: walls,
            peak_rss_mb: figure_peak(),
            solver: run.outcome.solver,
            avg_cct_s: run
                .outcome
                .records
                .iter()
                .map(|r| r.cct.as_secs_f64())
                .sum::<f64>()
                / n.max(1) as f64,
        });
    }
    let jobs = if a.jobs > 0 {
        let path = locate(&a.jobs_topology);
        let topo = Topology::load(&path)?;
        reset_peak_rss();
        let mut walls = Vec::new();
        let mut last = None;
        for i in 1..=a.repeat {
            trim_heap();
            progress.set_message(format!("{} jobs on {}, run {i}/{}", a.jobs, topo.name, a.repeat));
            let b = bench_jobs(&topo, a.jobs, 1, NetworkKind::Fluid, "fair", "fair")
                .with_context(|| format!("simulating {} jobs on {}", a.jobs, path.display()))?;
            walls.push(b.wall_s);
            progress.job_done();
            last = Some(b);
        }
        last.map(|run| JobsRow {
            run,
            median_wall_s: median(&walls),
            wall_runs_s: walls,
            peak_rss_mb: figure_peak(),
        })
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

/// A replay's solver figures in a line: solves; under strict priority
/// between coflows (FIFO), the classes solved again and kept per solve;
/// NIC freezes per solve (per class solved, under classes) and the share
/// repeated from the last solve's order (when every demand was in the
/// host-pair matrix), how resumed solves ended, and the solves that only
/// took departures off links with every slot at its cap.
fn solver_line(s: &SolveStats) -> String {
    let per = |n: u64, d: u64| if d > 0 { n as f64 / d as f64 } else { 0.0 };
    let mut line = format!("{} solves", s.solves);
    let classes = s.classes_filled + s.classes_kept > 0;
    if classes {
        line += &format!(
            ", {:.1} coflow classes solved again and {:.1} kept each",
            per(s.classes_filled, s.solves),
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
    line
}

#[cfg(test)]
mod tests {
    use super::{median, schedulers, solver_line};
    use crate::coflow::POLICY_NAMES;
    use crate::net::levels::SolveStats;

    #[test]
    fn every_scheduler_by_default_or_those_named() {
        assert_eq!(schedulers(&[]), POLICY_NAMES);
        let named = ["varys".to_string(), "fair".to_string()];
        assert_eq!(schedulers(&named), named);
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
            ..SolveStats::default()
        };
        assert_eq!(
            solver_line(&capped),
            "10 solves, 7 only took departures off links at caps"
        );
        let classes = SolveStats {
            solves: 100,
            classes_filled: 250,
            classes_kept: 3_000,
            freezes: 50_000,
            freezes_repeated: 10_000,
            ..SolveStats::default()
        };
        assert_eq!(
            solver_line(&classes),
            "100 solves, 2.5 coflow classes solved again and 30.0 kept each, \
             200 NIC freezes per class solved (20 % repeated from the last solve's order)"
        );
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
    }
}
