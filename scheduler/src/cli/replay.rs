//! `ocslab replay`: replay a coflow trace (Coflow-Benchmark format) through
//! the fluid network (or, with `--emulate`, with real bytes; see
//! [`crate::replay`]) under one coflow scheduler, print CCT statistics
//! (overall, per bin, and against the lower bound), and write per-coflow
//! results to a folder.

use crate::coflow::lower_bound::Fabrics;
use crate::coflow::POLICY_NAMES;
use crate::outcome::summary::{Bin, Distribution, ReplaySummary};
use crate::progress::Progress;
use crate::replay;
use crate::report::folder::{self, Staged};
use crate::trace::flow_sizes::FlowSizes;
use anyhow::{Context, Result};
use ocslab_emulator::Bytes;
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `ocslab replay`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Example:\n  ocslab replay traces/FB2010-1Hr-150-0.txt --topology topologies/fb2010.toml --coflow-scheduler varys"
)]
pub struct ReplayArgs {
    /// The trace, in Coflow-Benchmark format (e.g. traces/FB2010-1Hr-150-0.txt).
    pub trace: PathBuf,
    /// The topology to replay on (e.g. topologies/fb2010.toml; fb2010-ocs.toml for sunflow,
    /// fb2010-ocs-only.toml for circuits only, as Sunflow's own simulator).
    #[arg(long)]
    pub topology: PathBuf,
    /// The coflow scheduler (docs/coflow-schedulers.md); fair-split and aalo-split share
    /// links as CoflowSim does (each port split equally among its flows; simulation only
    /// for fair-split), and sebf is Varys as CoflowSim's SEBF orders and backfills.
    #[arg(long, default_value = "fair", value_parser = POLICY_NAMES)]
    pub coflow_scheduler: String,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
    /// Replay only the first N coflows (by arrival).
    #[arg(long)]
    pub limit: Option<usize>,
    /// How a trace line becomes flows, as a reference simulator reads it:
    /// `coflowsim` (MB = 2^20 B, whole MiB per flow, mappers and reducers
    /// merged per rack, flows of at least 1 MiB), `sunflow` (MB = 10^6 B,
    /// ceil(MB / mappers) ± 5 % per flow from Sunflow's seeded glibc rand,
    /// at least 10^6 B; `sunflow:SEED` for other draws) or `exact` (every
    /// byte as given, split evenly, no minimum).
    #[arg(long, default_value = "coflowsim")]
    pub flow_sizes: FlowSizes,
    /// Results folder (default results/replay-<trace>-<scheduler>-<UTC time>/).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Replay with real bytes on the kernel fabric (agents, OCS) instead of the fluid model.
    #[arg(long)]
    pub emulate: bool,
    /// With --emulate: multiply the topology's scale by this (every rate and
    /// size divided by it more, times kept), so a trace fits the box.
    #[arg(long, default_value_t = 1.0, requires = "emulate")]
    pub scale: f64,
}

#[derive(Serialize)]
struct Report<'a> {
    trace: String,
    topology: &'a str,
    scale: f64,
    flow_sizes: String,
    flows: usize,
    wall_s: f64,
    results: String,
    #[serde(flatten)]
    summary: &'a ReplaySummary,
}

/// Runs `ocslab replay`.
pub fn run(a: ReplayArgs) -> Result<ExitCode> {
    if a.emulate {
        super::interrupt::tear_down_on_signal_as_root()?;
    }
    let bar = Progress::counting(0, a.json, "coflows", false);
    bar.set_message(format!("replay under {}", a.coflow_scheduler));
    let spec = replay::ReplaySpec {
        trace: &a.trace,
        topology: &a.topology,
        scheduler: &a.coflow_scheduler,
        limit: a.limit,
        sizes: a.flow_sizes,
    };
    let (run, wire) = if a.emulate {
        let (run, wire) = replay::emulate(&spec, a.scale)?;
        (run, Some(wire))
    } else {
        let run = replay::simulate(&spec, |done, total| {
            bar.set_total_jobs(total as u64);
            bar.set_jobs_done(done as u64);
        })?;
        (run, None)
    };
    bar.finish();
    let summary = ReplaySummary::of(&run.outcome);
    let stem = a
        .trace
        .file_stem()
        .map_or("trace".into(), |s| s.to_string_lossy().into_owned());
    let dir = match a.out {
        Some(d) => d,
        None => folder::dated(&format!("results/replay-{stem}-{}", a.coflow_scheduler)),
    };
    let staged = Staged::begin(&dir)?;
    crate::report::replay::write(
        staged.path(),
        &run.topology,
        run.flows,
        a.flow_sizes,
        &run.outcome,
        &summary,
        wire.as_ref(),
    )
    .with_context(|| format!("writing results to {}", dir.display()))?;
    staged.finish()?;
    let report = Report {
        trace: a.trace.display().to_string(),
        topology: &run.topology.name,
        scale: run.topology.scale,
        flow_sizes: a.flow_sizes.to_string(),
        flows: run.flows,
        wall_s: run.wall_s,
        results: dir.display().to_string(),
        summary: &summary,
    };
    let mut out = std::io::stdout().lock();
    if a.json {
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
    } else {
        print_table(&mut out, &report, &run)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn print_table(out: &mut impl Write, r: &Report<'_>, run: &replay::ReplayRun) -> Result<()> {
    let s = r.summary;
    let t = &run.topology;
    writeln!(
        out,
        "replay {} on {} ({} racks x {} hosts, scale {}) under {}",
        r.trace, t.name, t.racks, t.hosts_per_rack, t.scale, s.scheduler
    )?;
    writeln!(
        out,
        "{} coflows, {} flows ({} sizes); simulated makespan {:.1} s; wall time {:.3} s",
        s.coflows, r.flows, r.flow_sizes, s.makespan_s, r.wall_s
    )?;
    let fabric = match run.outcome.fabrics {
        _ if t.ocs_ports_per_rack == 0 => "this topology has no OCS".to_string(),
        Fabrics::Both => format!(
            "flows between racks over {} OCS port(s) per rack following a schedule, EPS otherwise",
            t.ocs_ports_per_rack
        ),
        Fabrics::Hybrid => format!(
            "elephants (>= {}) over {} OCS port(s) per rack, the rest over EPS",
            t.elephant_threshold, t.ocs_ports_per_rack
        ),
        Fabrics::Eps => format!("{} uses EPS only", s.scheduler),
    };
    // Under a schedule the datapath (emulated) or the rotor (simulated)
    // switches circuits by itself; only the simulator counts its changes.
    let circuits = match run.outcome.fabrics {
        Fabrics::Both => "circuits follow the schedule".to_string(),
        _ => format!("{} circuits set up", s.reconfigurations),
    };
    writeln!(
        out,
        "fabric: EPS carried {}, OCS {} ({fabric}); cross-rack {}; {circuits}",
        Bytes(s.eps_bytes),
        Bytes(s.ocs_bytes),
        Bytes(s.cross_rack_bytes),
    )?;
    writeln!(out)?;
    writeln!(
        out,
        "{:<14} {:>6} {:>10} {:>10} {:>10} {:>10}",
        "CCT (s)", "n", "avg", "p50", "p95", "p99"
    )?;
    let row = |out: &mut dyn Write, name: &str, d: &Distribution| {
        writeln!(
            out,
            "{:<14} {:>6} {:>10.3} {:>10.3} {:>10.3} {:>10.3}",
            name, d.count, d.avg, d.p50, d.p95, d.p99
        )
    };
    if let Some(d) = &s.cct_s {
        row(out, "all", d)?;
    }
    for b in Bin::ALL {
        if let Some(d) = s.cct_by_bin_s.get(&b) {
            row(out, &b.to_string(), d)?;
        }
    }
    if let Some(d) = &s.ratio {
        row(out, "CCT / T(C)", d)?;
    }
    writeln!(out, "lower bound T(C): {}", s.lower_bound)?;
    writeln!(
        out,
        "bins: S/L = longest flow under/over 5 MB, N/W = at most/over 50 flows"
    )?;
    writeln!(out, "results: {}", r.results)?;
    Ok(())
}
