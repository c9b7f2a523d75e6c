//! `ocslab replay TRACE --emulate`: the same replay as the fluid one, with
//! real bytes — a fresh lab (fabric, agents, OCS) for the topology, every
//! coflow's flows started at its arrival, CCT measured from arrival to the
//! last byte received. Called from [`super::replay`]; the summary, table
//! and results folder are the fluid replay's, plus the wire CSVs.

use super::replay::ReplayRun;
use crate::emu::{self, EmuConfig, FabricChoice, WireReport};
use crate::model::coflow::Coflow;
use crate::trace::coflow_benchmark;
use anyhow::{bail, Context, Result};
use ocslab_emulator::Topology;
use std::path::Path;
use std::time::{Duration, Instant};

/// Reads `trace` and `topology`, keeps the first `limit` coflows, divides
/// their flows' bytes by `scale` (on top of the topology's own scale, so a
/// trace fits the box) and replays them with real bytes under `scheduler`.
pub fn run_replay_emulated(
    trace: &Path,
    topology: &Path,
    scheduler: &str,
    limit: Option<usize>,
    scale: f64,
) -> Result<(ReplayRun, WireReport)> {
    if !(scale.is_finite() && scale >= 1.0) {
        bail!("--scale must be a number >= 1 (got {scale}); it divides every flow's bytes");
    }
    let topo = Topology::load(topology)?;
    topo.check_emulable(topology)
        .context("this topology cannot run on this box; replay it without --emulate")?;
    let parsed = coflow_benchmark::load(trace)?;
    let coflows: Vec<Coflow> = parsed
        .to_coflows(&topo, limit)
        .into_iter()
        .map(|mut c| {
            for f in c.flows.iter_mut() {
                f.bytes = f.bytes.scaled_down(scale);
            }
            c
        })
        .collect();
    let flows = coflows.iter().map(|c| c.flows.len()).sum();
    let cfg = EmuConfig {
        coflow_policy: scheduler.to_string(),
        time_limit: Duration::from_secs(3600),
        ..EmuConfig::default()
    };
    let start = Instant::now();
    let out = emu::replay(
        &topo,
        FabricChoice::Build {
            topology_file: Some(topology.to_path_buf()),
        },
        &coflows,
        &cfg,
    )?;
    Ok((
        ReplayRun {
            topology: topo,
            flows,
            outcome: out.outcome,
            wall_s: start.elapsed().as_secs_f64(),
        },
        out.wire,
    ))
}
