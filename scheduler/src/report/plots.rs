//! The plots and plot data of a results folder, from what a run recorded:
//! the engine's records (JCTs, CCTs), the summary (the very numbers of
//! `summary.json` and of the printed table) and the network's timeline
//! (circuits, link utilization). The SVGs themselves are drawn by
//! [`crate::plot`]; `docs/results.md` explains how to read each one.
//!
//! Beside the SVGs, each scheduler's folder gets the data they are drawn
//! from that the other CSVs do not hold: `circuits.csv` (one row per
//! circuit: requested, up, down) and `utilization.csv` (one row per time
//! bin, one column per tracked link).

use super::SchedulerSummary;
use crate::engine::{FlowKind, Records};
use crate::net::replay::ReplayOutcome;
use crate::net::usage::LinkSeries;
use crate::net::{CircuitRecord, NetTimeline};
use crate::plot::{self, CircuitSpan, PlotError, SchedulerPlotData, XScale};
use crate::sim::SimOutcome;
use ocslab_emulator::{Bytes, Nanos};
use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The plot data of one scheduler's run; `summary` must be [`super::summarize`]'s of `out`.
pub fn plot_data(out: &SimOutcome, summary: &SchedulerSummary) -> SchedulerPlotData {
    SchedulerPlotData {
        name: out.policy.clone(),
        cct_s: shuffle_ccts(&out.records),
        jct_s: out
            .records
            .jobs
            .values()
            .filter_map(|j| j.jct())
            .map(Nanos::as_secs_f64)
            .collect(),
        makespan_s: summary.makespan_s,
        avg_jct_s: summary.avg_jct_s,
        avg_cct_s: summary.avg_cct_s,
        p95_cct_s: summary.p95_cct_s,
        eps_bytes: Bytes(summary.eps_bytes),
        ocs_bytes: Bytes(summary.ocs_bytes),
        circuits: circuit_spans(&out.timeline.circuits, out.end),
        reconfigurations_s: reconfigurations(&out.timeline.circuits),
        utilization: utilization(&out.timeline.links),
    }
}

/// The CCTs (s) the summary averages: every finished shuffle coflow's.
fn shuffle_ccts(r: &Records) -> Vec<f64> {
    r.coflows
        .values()
        .filter(|c| c.kind == FlowKind::Shuffle)
        .filter_map(|c| c.cct())
        .map(Nanos::as_secs_f64)
        .collect()
}

/// Each circuit while it was up, cut at `end` (circuits torn down before
/// they came up, or that would come up after `end`, carried no light).
pub fn circuit_spans(circuits: &[CircuitRecord], end: Nanos) -> Vec<CircuitSpan> {
    circuits
        .iter()
        .filter_map(|c| {
            let to = c.down_at.unwrap_or(end).min(end);
            (c.up_at < to).then(|| CircuitSpan {
                src_rack: c.src_rack as usize,
                dst_rack: c.dst_rack as usize,
                port: c.port as usize,
                from_s: c.up_at.as_secs_f64(),
                to_s: to.as_secs_f64(),
            })
        })
        .collect()
}

/// When reconfigurations began (s): the distinct times circuits were
/// requested (circuits requested together are one reconfiguration).
pub fn reconfigurations(circuits: &[CircuitRecord]) -> Vec<f64> {
    let times: BTreeSet<Nanos> = circuits.iter().map(|c| c.requested_at).collect();
    times.into_iter().map(Nanos::as_secs_f64).collect()
}

/// `(link name, [(t_s, utilization)])` per tracked link.
pub fn utilization(links: &[LinkSeries]) -> Vec<(String, Vec<(f64, f64)>)> {
    links
        .iter()
        .map(|l| {
            let samples = l.samples.iter().map(|&(t, u)| (t.as_secs_f64(), u)).collect();
            (l.name.clone(), samples)
        })
        .collect()
}

/// Writes the standard plots of `outcomes` (baseline first; `summaries` in
/// the same order) of a topology with `racks` racks into `dir`.
pub fn write_run_plots(
    dir: &Path,
    racks: u32,
    outcomes: &[SimOutcome],
    summaries: &[SchedulerSummary],
) -> Result<Vec<PathBuf>, PlotError> {
    let data: Vec<SchedulerPlotData> = outcomes
        .iter()
        .zip(summaries)
        .map(|(o, s)| plot_data(o, s))
        .collect();
    plot::write_results_plots(dir, racks as usize, &data)
}

/// Writes the plots that mean something for a coflow-trace replay (no
/// jobs): `cct_cdf.svg`, `bytes_by_fabric.svg`, `circuits.svg` and
/// `utilization.svg` into `dir`, and returns them.
pub fn write_replay_plots(dir: &Path, racks: u32, out: &ReplayOutcome) -> Result<Vec<PathBuf>, PlotError> {
    let name = out.policy.as_str();
    let ccts: Vec<f64> = out.records.iter().map(|r| r.cct.as_secs_f64()).collect();
    let files: Vec<PathBuf> = ["cct_cdf", "bytes_by_fabric", "circuits", "utilization"]
        .iter()
        .map(|f| dir.join(format!("{f}.svg")))
        .collect();
    plot::cdf(
        &files[0],
        &format!("Coflow completion time (CCT) under {name}"),
        "CCT (s)",
        XScale::Auto,
        &[(name, ccts)],
    )?;
    plot::bytes_by_fabric(
        &files[1],
        "Bytes over EPS vs OCS",
        &[(name, out.stats.eps_bytes, out.stats.ocs_bytes)],
    )?;
    plot::circuit_timeline(
        &files[2],
        &format!("Optical circuits under {name}"),
        racks as usize,
        &circuit_spans(&out.circuits, out.makespan),
        &reconfigurations(&out.circuits),
    )?;
    plot::utilization(
        &files[3],
        &format!("Link utilization under {name}"),
        &utilization(&out.links),
    )?;
    Ok(files)
}

/// Writes `circuits.csv` and `utilization.csv` of one run's `timeline` into `dir`.
pub fn write_timeline_csvs(dir: &Path, timeline: &NetTimeline) -> std::io::Result<()> {
    write_circuits_csv(&dir.join("circuits.csv"), &timeline.circuits)?;
    write_utilization_csv(&dir.join("utilization.csv"), &timeline.links)
}

/// One row per circuit: `src_rack,dst_rack,port,requested_s,up_s,down_s`
/// (`down_s` empty if it was still up at the end).
pub fn write_circuits_csv(path: &Path, circuits: &[CircuitRecord]) -> std::io::Result<()> {
    let mut w = std::io::BufWriter::new(std::fs::File::create(path)?);
    writeln!(w, "src_rack,dst_rack,port,requested_s,up_s,down_s")?;
    for c in circuits {
        let down = c
            .down_at
            .map_or(String::new(), |t| format!("{:.9}", t.as_secs_f64()));
        writeln!(
            w,
            "{},{},{},{:.9},{:.9},{down}",
            c.src_rack,
            c.dst_rack,
            c.port,
            c.requested_at.as_secs_f64(),
            c.up_at.as_secs_f64()
        )?;
    }
    w.flush()
}

/// One row per time bin: `t_s` (the bin's end), then each link's mean
/// utilization over the bin (0..=1), one column per link named as in the plots.
pub fn write_utilization_csv(path: &Path, links: &[LinkSeries]) -> std::io::Result<()> {
    let mut w = std::io::BufWriter::new(std::fs::File::create(path)?);
    write!(w, "t_s")?;
    for l in links {
        write!(w, ",{}", l.name)?;
    }
    writeln!(w)?;
    let rows = links.iter().map(|l| l.samples.len()).max().unwrap_or(0);
    for i in 0..rows {
        let t = links
            .iter()
            .find_map(|l| l.samples.get(i))
            .map_or(0.0, |s| s.0.as_secs_f64());
        write!(w, "{t:.6}")?;
        for l in links {
            match l.samples.get(i) {
                Some(&(_, 0.0)) => write!(w, ",0")?,
                Some(&(_, u)) => write!(w, ",{u:.6}")?,
                None => write!(w, ",")?,
            }
        }
        writeln!(w)?;
    }
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn circuit(src: u32, dst: u32, req: u64, up: u64, down: Option<u64>) -> CircuitRecord {
        CircuitRecord {
            src_rack: src,
            dst_rack: dst,
            port: 0,
            requested_at: Nanos::from_millis(req),
            up_at: Nanos::from_millis(up),
            down_at: down.map(Nanos::from_millis),
        }
    }

    #[test]
    fn spans_run_from_up_to_down_or_the_end_and_skip_dark_circuits() {
        let log = [
            circuit(0, 1, 0, 10, Some(500)),
            circuit(1, 0, 0, 10, None),
            circuit(2, 3, 600, 610, Some(605)), // torn down while still dark
            circuit(3, 2, 990, 1_010, None),    // would come up after the end
        ];
        let spans = circuit_spans(&log, Nanos::from_millis(1_000));
        assert_eq!(spans.len(), 2);
        assert_eq!((spans[0].from_s, spans[0].to_s), (0.01, 0.5));
        assert_eq!((spans[1].src_rack, spans[1].to_s), (1, 1.0));
        assert_eq!(reconfigurations(&log), [0.0, 0.6, 0.99]);
    }

    #[test]
    fn csvs_hold_every_circuit_and_bin() {
        let dir = std::env::temp_dir().join(format!("ocslab-plots-csv-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let link = |name: &str, u: [f64; 2]| LinkSeries {
            link: crate::net::links::LinkKind::TorUp(0),
            name: name.into(),
            capacity_bytes_per_s: 1.0,
            samples: vec![(Nanos::from_millis(10), u[0]), (Nanos::from_millis(15), u[1])],
            bytes: 0.0,
        };
        let t = NetTimeline {
            circuits: vec![circuit(0, 1, 0, 10, None)],
            links: vec![
                link("r0 EPS uplink", [0.5, 0.0]),
                link("r0 OCS port 0", [0.0, 1.0]),
            ],
        };
        write_timeline_csvs(&dir, &t).expect("write");
        let c = std::fs::read_to_string(dir.join("circuits.csv")).expect("read");
        assert_eq!(
            c,
            "src_rack,dst_rack,port,requested_s,up_s,down_s\n0,1,0,0.000000000,0.010000000,\n"
        );
        let u = std::fs::read_to_string(dir.join("utilization.csv")).expect("read");
        assert_eq!(
            u,
            "t_s,r0 EPS uplink,r0 OCS port 0\n0.010000,0.500000,0\n0.015000,0,1.000000\n"
        );
        std::fs::remove_dir_all(dir).ok();
    }
}
