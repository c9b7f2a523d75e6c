//! `ocslab bench sim`: wall time to replay the FB2010 coflow trace under each
//! coflow scheduler, and the process's peak memory (VmHWM). The jobs figure
//! (1000 jobs on coscheduler-paper.toml) is added with the simulation driver.

use super::replay::run_replay;
use crate::coflow::POLICY_NAMES;
use anyhow::{Context, Result};
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
    wall_s: f64,
    avg_cct_s: f64,
}

#[derive(Serialize)]
struct Report {
    trace: String,
    replay: Vec<Row>,
    /// Peak resident memory of this process after all replays (VmHWM).
    peak_rss_mb: Option<f64>,
}

/// Peak resident set size in MB, from /proc/self/status.
pub fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
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
    let schedulers: Vec<String> = if a.schedulers.is_empty() {
        POLICY_NAMES.iter().map(|s| s.to_string()).collect()
    } else {
        a.schedulers
    };
    let mut rows = Vec::new();
    for s in &schedulers {
        let topo = if s == "sunflow" {
            "fb2010-ocs.toml"
        } else {
            "fb2010.toml"
        };
        if !a.json {
            eprintln!("replaying {} under {s} on {topo} ...", trace.display());
        }
        let run = run_replay(&trace, &topologies.join(topo), s, a.limit, |_, _| {})
            .with_context(|| format!("replay under {s}"))?;
        let n = run.outcome.records.len();
        rows.push(Row {
            scheduler: s.clone(),
            topology: topo.to_string(),
            coflows: n,
            flows: run.flows,
            policy_calls: run.outcome.stats.policy_calls,
            wall_s: run.wall_s,
            avg_cct_s: run
                .outcome
                .records
                .iter()
                .map(|r| r.cct.as_secs_f64())
                .sum::<f64>()
                / n.max(1) as f64,
        });
    }
    let report = Report {
        trace: trace.display().to_string(),
        replay: rows,
        peak_rss_mb: peak_rss_mb(),
    };
    let mut out = std::io::stdout().lock();
    if a.json {
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(out, "trace replay: {}", report.trace)?;
    writeln!(
        out,
        "{:<9} {:<16} {:>8} {:>8} {:>9} {:>10} {:>11}",
        "scheduler", "topology", "coflows", "flows", "events", "wall (s)", "avg CCT (s)"
    )?;
    for r in &report.replay {
        writeln!(
            out,
            "{:<9} {:<16} {:>8} {:>8} {:>9} {:>10.3} {:>11.3}",
            r.scheduler, r.topology, r.coflows, r.flows, r.policy_calls, r.wall_s, r.avg_cct_s
        )?;
    }
    match report.peak_rss_mb {
        Some(mb) => writeln!(out, "peak memory (VmHWM): {mb:.1} MB")?,
        None => writeln!(out, "peak memory: /proc/self/status not readable")?,
    }
    Ok(ExitCode::SUCCESS)
}
