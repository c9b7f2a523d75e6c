//! The results folder of a run:
//!
//! ```text
//! DIR/experiment.toml    the experiment file as run
//! DIR/topology.toml      the topology file as run
//! DIR/run.json           name, seed, version, topology (name, scale), network, coflow scheduler
//! DIR/summary.json       one SchedulerSummary per task scheduler
//! DIR/<scheduler>/jobs.csv, tasks.csv, coflows.csv, flows.csv
//! DIR/<scheduler>/circuits.csv, utilization.csv   the network's timeline
//! DIR/*.svg              the plots of docs/results.md (CDFs, bars, circuits, utilization)
//! ```
//!
//! Times in the CSVs are seconds (floats) since the start of the run,
//! bytes are integers, hosts are `r<rack>h<host>`: complete enough to plot
//! timelines, CDFs and per-fabric bytes later.

use super::SchedulerSummary;
use crate::engine::Records;
use crate::experiment::Experiment;
use crate::sim::SimOutcome;
use ocslab_emulator::Nanos;
use serde::Serialize;
use std::path::Path;

/// Why the folder could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    /// A file could not be written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A CSV could not be written.
    #[error("{path}: {source}")]
    Csv {
        /// The file.
        path: String,
        /// Why.
        source: csv::Error,
    },
    /// A plot could not be drawn or written.
    #[error(transparent)]
    Plot(#[from] crate::plot::PlotError),
}

/// Writes the results folder `dir` for `exp` and its simulated runs.
pub fn write(
    dir: &Path,
    exp: &Experiment,
    outcomes: &[SimOutcome],
    summaries: &[SchedulerSummary],
) -> Result<(), ResultsError> {
    write_as(dir, "sim", exp, outcomes, summaries, &[])
}

/// Writes the results folder `dir` for `exp` and its runs by `driver`
/// (`"sim"` or `"emu"`, as `run.json` records it); `run_extra` are entries
/// the driver adds to `run.json`.
pub fn write_as(
    dir: &Path,
    driver: &str,
    exp: &Experiment,
    outcomes: &[SimOutcome],
    summaries: &[SchedulerSummary],
    run_extra: &[(&str, serde_json::Value)],
) -> Result<(), ResultsError> {
    let io = |p: &Path| {
        let path = p.display().to_string();
        move |source| ResultsError::Io { path, source }
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let put = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).map_err(io(&p))
    };
    put("experiment.toml", &exp.text)?;
    put("topology.toml", &exp.topology_text)?;
    let mut run = serde_json::json!({
        "experiment": exp.name,
        "seed": exp.seed,
        "version": env!("CARGO_PKG_VERSION"),
        "driver": driver,
        "topology": { "name": exp.topology.name, "scale": exp.topology.scale },
        "network": exp.network,
        "coflow_scheduler": exp.coflow_scheduler,
        "task_schedulers": exp.task_schedulers,
        "slow_start": exp.engine.slow_start,
    });
    if let Some(m) = run.as_object_mut() {
        for (k, v) in run_extra {
            m.insert((*k).to_string(), v.clone());
        }
    }
    put("run.json", &pretty(&run))?;
    put(
        "summary.json",
        &pretty(&serde_json::json!({ "schedulers": summaries })),
    )?;
    for out in outcomes {
        let sub = dir.join(&out.policy);
        std::fs::create_dir_all(&sub).map_err(io(&sub))?;
        write_records(&sub, &out.records)?;
        super::plots::write_timeline_csvs(&sub, &out.timeline).map_err(io(&sub))?;
    }
    super::plots::write_run_plots(dir, exp.topology.racks, outcomes, summaries)?;
    Ok(())
}

fn pretty(v: &serde_json::Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string()) + "\n"
}

fn secs(t: Nanos) -> f64 {
    t.as_secs_f64()
}
fn opt(t: Option<Nanos>) -> Option<f64> {
    t.map(secs)
}

#[derive(Serialize)]
struct JobRow {
    job: u64,
    name: String,
    user: u32,
    recurring: bool,
    parents: u32,
    arrival_s: f64,
    ready_s: Option<f64>,
    first_task_s: Option<f64>,
    maps_done_s: Option<f64>,
    finished_s: Option<f64>,
    jct_s: Option<f64>,
    maps: u32,
    reduces: u32,
    input_bytes: u64,
    shuffle_bytes: u64,
    cross_rack_shuffle_bytes: u64,
    input_read_bytes: u64,
    cross_rack_input_bytes: u64,
    node_local_maps: u32,
    rack_local_maps: u32,
    remote_maps: u32,
    map_progress_at_first_reduce: Option<f64>,
    shuffle_hold_released: bool,
}

#[derive(Serialize)]
struct TaskRow {
    task: String,
    job: u64,
    kind: String,
    index: u32,
    attempt: u32,
    host: String,
    started_s: f64,
    compute_started_s: Option<f64>,
    ended_s: f64,
    outcome: String,
    locality: String,
    speculative: bool,
    bytes: u64,
}

#[derive(Serialize)]
struct CoflowRow {
    coflow: u64,
    job: u64,
    kind: String,
    flows: u32,
    bytes: u64,
    first_start_s: f64,
    last_end_s: Option<f64>,
    cct_s: Option<f64>,
    eps_bytes: u64,
    ocs_bytes: u64,
    cross_rack_bytes: u64,
    cross_rack_eps_bytes: u64,
    cross_rack_ocs_bytes: u64,
}

#[derive(Serialize)]
struct FlowRow {
    flow: u64,
    coflow: u64,
    job: u64,
    kind: String,
    attempt: String,
    src: String,
    dst: String,
    bytes: u64,
    started_s: f64,
    finished_s: Option<f64>,
    fct_s: Option<f64>,
    eps_bytes: u64,
    ocs_bytes: u64,
    useful: bool,
    /// The fetches it carried (more than 1 only under `merge_fetches`).
    weight: u32,
}

fn label<T: Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// Writes jobs.csv, tasks.csv, coflows.csv and flows.csv of one run into `dir`.
pub fn write_records(dir: &Path, r: &Records) -> Result<(), ResultsError> {
    csv_file(
        dir,
        "jobs.csv",
        r.jobs.values().map(|j| JobRow {
            job: j.job.0,
            name: j.name.clone(),
            user: j.user.0,
            recurring: j.recurring,
            parents: j.parents,
            arrival_s: secs(j.arrival),
            ready_s: opt(j.ready),
            first_task_s: opt(j.first_task),
            maps_done_s: opt(j.maps_done),
            finished_s: opt(j.finished),
            jct_s: opt(j.jct()),
            maps: j.maps,
            reduces: j.reduces,
            input_bytes: j.input_bytes.0,
            shuffle_bytes: j.shuffle_bytes.0,
            cross_rack_shuffle_bytes: j.cross_rack_shuffle_bytes.0,
            input_read_bytes: j.input_read_bytes.0,
            cross_rack_input_bytes: j.cross_rack_input_bytes.0,
            node_local_maps: j.locality[0],
            rack_local_maps: j.locality[1],
            remote_maps: j.locality[2],
            map_progress_at_first_reduce: j.map_progress_at_first_reduce,
            shuffle_hold_released: j.shuffle_hold_released,
        }),
    )?;
    csv_file(
        dir,
        "tasks.csv",
        r.tasks.iter().map(|t| TaskRow {
            task: t.attempt.task.to_string(),
            job: t.attempt.task.job.0,
            kind: t.kind.to_string(),
            index: t.attempt.task.index,
            attempt: t.attempt.n,
            host: t.host.to_string(),
            started_s: secs(t.started),
            compute_started_s: opt(t.compute_started),
            ended_s: secs(t.ended),
            outcome: label(&t.outcome),
            locality: t.locality.map(|l| label(&l)).unwrap_or_default(),
            speculative: t.speculative,
            bytes: t.bytes.0,
        }),
    )?;
    csv_file(
        dir,
        "coflows.csv",
        r.coflows.values().map(|c| CoflowRow {
            coflow: c.coflow.0,
            job: c.job.0,
            kind: label(&c.kind),
            flows: c.flows,
            bytes: c.bytes.0,
            first_start_s: secs(c.first_start),
            last_end_s: opt(c.last_end),
            cct_s: opt(c.cct()),
            eps_bytes: c.eps_bytes.0,
            ocs_bytes: c.ocs_bytes.0,
            cross_rack_bytes: c.cross_rack_bytes.0,
            cross_rack_eps_bytes: c.cross_rack_eps_bytes.0,
            cross_rack_ocs_bytes: c.cross_rack_ocs_bytes.0,
        }),
    )?;
    csv_file(
        dir,
        "flows.csv",
        r.flows.iter().map(|f| FlowRow {
            flow: f.flow.0,
            coflow: f.coflow.0,
            job: f.job.0,
            kind: label(&f.kind),
            attempt: f.attempt.to_string(),
            src: f.src.to_string(),
            dst: f.dst.to_string(),
            bytes: f.bytes.0,
            started_s: secs(f.started),
            finished_s: opt(f.finished),
            fct_s: f.finished.map(|e| secs(e - f.started)),
            eps_bytes: f.eps_bytes.0,
            ocs_bytes: f.ocs_bytes.0,
            useful: f.useful,
            weight: f.weight,
        }),
    )
}

pub(super) fn csv_file<T: Serialize>(
    dir: &Path,
    name: &str,
    rows: impl Iterator<Item = T>,
) -> Result<(), ResultsError> {
    let path = dir.join(name);
    let err = |source| ResultsError::Csv {
        path: path.display().to_string(),
        source,
    };
    let mut w = csv::Writer::from_path(&path).map_err(err)?;
    for row in rows {
        w.serialize(row).map_err(err)?;
    }
    w.flush().map_err(|source| ResultsError::Io {
        path: path.display().to_string(),
        source,
    })
}
