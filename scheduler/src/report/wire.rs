//! What the emulation driver measured on the wire, as files of a results
//! folder: `wire_flows.csv` (one row per flow), `wire_coflows.csv` (one per
//! coflow) and `wire_summary.json` (FCT and CCT percentiles, verified, corrupt
//! and lost flows, bytes per fabric from the kernel's counters).

use ocslab_agent::protocol as wire;
use ocslab_emu::metrics::{FabricBytes, Percentiles, WireReport};
use ocslab_emulator::{HostId, Nanos};
use serde::Serialize;
use std::path::Path;

/// Writes `wire_flows.csv`, `wire_coflows.csv` and `wire_summary.json` into `dir`.
pub fn write(report: &WireReport, dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut w = csv::Writer::from_path(dir.join("wire_flows.csv"))?;
    w.write_record([
        "flow",
        "coflow",
        "src",
        "dst",
        "bytes",
        "bytes_received",
        "marked",
        "requested_s",
        "start_s",
        "first_byte_s",
        "end_s",
        "fct_s",
        "verified",
        "useful",
    ])?;
    let s = |n: Nanos| format!("{:.6}", n.as_secs_f64());
    for f in &report.flows {
        w.write_record([
            f.flow.0.to_string(),
            f.coflow.0.to_string(),
            f.src.to_string(),
            f.dst.to_string(),
            f.bytes.0.to_string(),
            f.bytes_received.0.to_string(),
            match f.marked {
                Some(wire::Path::Ocs) => "ocs".into(),
                Some(wire::Path::Eps) => "eps".into(),
                None => String::new(),
            },
            s(f.requested),
            s(f.start),
            s(f.first_byte),
            s(f.end),
            s(f.fct()),
            f.verified.to_string(),
            f.useful.to_string(),
        ])?;
    }
    w.flush()?;
    let mut w = csv::Writer::from_path(dir.join("wire_coflows.csv"))?;
    w.write_record([
        "coflow",
        "flows",
        "bytes",
        "arrival_s",
        "first_byte_s",
        "last_byte_s",
        "cct_s",
        "cct_wire_s",
        "verified",
    ])?;
    for c in &report.coflows {
        w.write_record([
            c.coflow.0.to_string(),
            c.flows.to_string(),
            c.bytes.0.to_string(),
            s(c.arrival),
            s(c.first_byte),
            s(c.last_byte),
            s(c.cct()),
            s(c.cct_wire()),
            c.verified.to_string(),
        ])?;
    }
    w.flush()?;
    #[derive(Serialize)]
    struct Summary<'a> {
        fct: &'a Percentiles,
        cct: &'a Percentiles,
        verified_flows: u64,
        corrupt_flows: u64,
        lost_flows: u64,
        resent_flows: u64,
        fabric: &'a FabricBytes,
        dead_hosts: &'a [HostId],
        circuit_events: u64,
        wall_s: f64,
    }
    let summary = Summary {
        fct: &report.fct,
        cct: &report.cct,
        verified_flows: report.verified_flows,
        corrupt_flows: report.corrupt_flows,
        lost_flows: report.lost_flows,
        resent_flows: report.resent_flows,
        fabric: &report.fabric,
        dead_hosts: &report.dead_hosts,
        circuit_events: report.circuit_events,
        wall_s: report.wall_s,
    };
    let text = serde_json::to_string_pretty(&summary).map_err(std::io::Error::other)?;
    std::fs::write(dir.join("wire_summary.json"), text + "\n")
}
