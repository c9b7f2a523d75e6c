//! The results folder of a coflow-trace replay (`ocslab replay`, simulated
//! or emulated): `coflows.csv` (one row per coflow: arrival, bytes, width,
//! bin, CCT, lower bound, their ratio, bytes per fabric), `circuits.csv`
//! (when circuits were used), `summary.json`, `utilization.csv`, the plots,
//! and with real bytes what was measured on the wire ([`super::wire`]).

use super::results::{csv_file, ResultsError};
use crate::outcome::summary::ReplaySummary;
use crate::outcome::ReplayOutcome;
use crate::trace::flow_sizes::FlowSizes;
use ocslab_emu::WireReport;
use ocslab_emulator::Topology;
use serde::Serialize;
use std::path::Path;

/// One row of `coflows.csv`.
#[derive(Serialize)]
struct CoflowRow {
    id: u64,
    arrival_s: String,
    bytes: u64,
    width: usize,
    bin: String,
    cct_s: String,
    lower_bound_s: String,
    ratio: String,
    eps_bytes: u64,
    ocs_bytes: u64,
}

/// Writes the results folder `dir` of a replay of `flows` flows, sized by
/// `sizes`, on `topology`.
pub fn write(
    dir: &Path,
    topology: &Topology,
    flows: usize,
    sizes: FlowSizes,
    outcome: &ReplayOutcome,
    summary: &ReplaySummary,
    wire: Option<&WireReport>,
) -> Result<(), ResultsError> {
    let io = |p: &Path| {
        let path = p.display().to_string();
        move |source| ResultsError::Io { path, source }
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let s9 = |t: ocslab_emulator::Nanos| format!("{:.9}", t.as_secs_f64());
    csv_file(
        dir,
        "coflows.csv",
        outcome.records.iter().map(|r| CoflowRow {
            id: r.id.0,
            arrival_s: s9(r.arrival),
            bytes: r.bytes.0,
            width: r.width,
            bin: r.bin.to_string(),
            cct_s: s9(r.cct),
            lower_bound_s: r.lower_bound.map_or(String::new(), |b| s9(b.value())),
            ratio: r.ratio().map_or(String::new(), |x| format!("{x:.6}")),
            eps_bytes: r.eps_bytes.0,
            ocs_bytes: r.ocs_bytes.0,
        }),
    )?;
    if !outcome.circuits.is_empty() {
        let path = dir.join("circuits.csv");
        super::plots::write_circuits_csv(&path, &outcome.circuits).map_err(io(&path))?;
    }
    let path = dir.join("summary.json");
    let json = serde_json::json!({
        "topology": topology.nominal,
        "flows": flows,
        "flow_sizes": sizes.to_string(),
        "summary": summary,
        "version": env!("CARGO_PKG_VERSION"),
    });
    let text = serde_json::to_string_pretty(&json).unwrap_or_else(|_| json.to_string());
    std::fs::write(&path, text + "\n").map_err(io(&path))?;
    super::plots::write_replay_plots(dir, topology.racks, outcome)?;
    let path = dir.join("utilization.csv");
    super::plots::write_utilization_csv(&path, &outcome.links).map_err(io(&path))?;
    if let Some(w) = wire {
        super::wire::write(w, dir).map_err(io(dir))?;
    }
    Ok(())
}
