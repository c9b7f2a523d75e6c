//! A coflow trace (Coflow-Benchmark format) replayed with no cluster engine,
//! by either driver: [`simulate`] through the fluid network, [`emulate`]
//! with real bytes on a fresh lab. Both give a [`ReplayRun`] whose outcome
//! has the same per-coflow records, so `ocslab replay` reports and writes
//! them with the same code, and `ocslab bench sim` times [`simulate`].

use crate::coflow::{self, CoflowPolicy};
use crate::emu::{self, EmuConfig, EmuError, FabricChoice, WireReport};
use crate::model::coflow::Coflow;
use crate::net::replay::{replay_with, ReplayError};
use crate::outcome::ReplayOutcome;
use crate::trace::coflow_benchmark::{self, FlowSizes};
use crate::trace::TraceError;
use ocslab_emulator::{Topology, TopologyError};
use std::path::Path;
use std::time::{Duration, Instant};

/// Why a replay could not run.
#[derive(Debug, thiserror::Error)]
pub enum ReplayRunError {
    /// The topology file is invalid.
    #[error(transparent)]
    Topology(#[from] TopologyError),
    /// The trace file is invalid.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// The simulated replay failed.
    #[error(transparent)]
    Replay(#[from] ReplayError),
    /// The topology cannot run on this box.
    #[error("this topology cannot run on this box; replay it without --emulate: {0}")]
    NotEmulable(TopologyError),
    /// The emulated replay failed.
    #[error(transparent)]
    Emu(#[from] EmuError),
    /// The extra scale is not a number >= 1.
    #[error("--scale must be a number >= 1 (got {0:?}); it multiplies the topology's scale")]
    Scale(f64),
}

/// What to replay: a trace, the topology, the coflow scheduler, how many
/// coflows and how their flows are sized.
#[derive(Clone, Copy, Debug)]
pub struct ReplaySpec<'a> {
    /// The trace, in Coflow-Benchmark format.
    pub trace: &'a Path,
    /// The topology file.
    pub topology: &'a Path,
    /// The coflow scheduler's name.
    pub scheduler: &'a str,
    /// Only the first this many coflows (by arrival).
    pub limit: Option<usize>,
    /// How a trace line becomes flows.
    pub sizes: FlowSizes,
}

/// A replay with what it was run on and how long it took.
#[derive(Debug)]
pub struct ReplayRun {
    /// The topology.
    pub topology: Topology,
    /// Flows replayed.
    pub flows: usize,
    /// The outcome.
    pub outcome: ReplayOutcome,
    /// Wall time of the replay alone (not reading the trace), seconds.
    pub wall_s: f64,
}

/// Reads the trace and topology of `spec` and replays the first `limit`
/// coflows through the fluid network; `progress(done, total)` is called as
/// coflows finish.
pub fn simulate(
    spec: &ReplaySpec<'_>,
    progress: impl FnMut(usize, usize),
) -> Result<ReplayRun, ReplayRunError> {
    simulate_with(spec, |policy| policy, progress)
}

/// [`simulate`] with the coflow scheduler of `spec` passed through `wrap`
/// first (`ocslab bench sim` times the policy's calls this way).
pub fn simulate_with(
    spec: &ReplaySpec<'_>,
    wrap: impl FnOnce(Box<dyn CoflowPolicy>) -> Box<dyn CoflowPolicy>,
    progress: impl FnMut(usize, usize),
) -> Result<ReplayRun, ReplayRunError> {
    let topo = Topology::load(spec.topology)?;
    let parsed = coflow_benchmark::load(spec.trace)?;
    let coflows = parsed.to_coflows(&topo, spec.limit, spec.sizes);
    let flows = coflows.iter().map(|c| c.flows.len()).sum();
    let policy = coflow::by_name(spec.scheduler).map_err(ReplayError::from)?;
    let start = Instant::now();
    let outcome = replay_with(&topo, wrap(policy), &coflows, progress)?;
    Ok(ReplayRun {
        topology: topo,
        flows,
        outcome,
        wall_s: start.elapsed().as_secs_f64(),
    })
}

/// Reads the trace and topology of `spec`, keeps the first `limit`
/// coflows and replays them with real bytes on a fresh lab, the topology's
/// scale multiplied by `scale` (every rate and size divided by it more, so
/// a trace fits the box; times kept, and the report, bins and thresholds
/// all use the one scale): every coflow's flows start at its arrival, CCT
/// is measured from arrival to the last byte received.
pub fn emulate(spec: &ReplaySpec<'_>, scale: f64) -> Result<(ReplayRun, WireReport), ReplayRunError> {
    if !(scale.is_finite() && scale >= 1.0) {
        return Err(ReplayRunError::Scale(scale));
    }
    let (topology, scheduler) = (spec.topology, spec.scheduler);
    let topo = Topology::load(topology)?.scaled_by(scale, topology)?;
    topo.check_emulable(topology, &ocslab_emulator::fabric::capacity::emulating_box())
        .map_err(ReplayRunError::NotEmulable)?;
    let parsed = coflow_benchmark::load(spec.trace)?;
    let coflows: Vec<Coflow> = parsed.to_coflows(&topo, spec.limit, spec.sizes);
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
