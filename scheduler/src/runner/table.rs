//! The tables `ocslab sim` and `ocslab run` print, from the same
//! summaries as `summary.json` (the demo's is [`crate::demo::DemoTable`]).

use crate::emu::experiment::SchedulerRun;
use crate::experiment::Experiment;
use crate::report::SchedulerSummary;
use std::io::Write;

/// The table `ocslab sim` prints: one row per scheduler, each figure with
/// its ratio to the first scheduler in brackets.
pub fn sim_table(out: &mut impl Write, exp: &Experiment, s: &[SchedulerSummary]) -> std::io::Result<()> {
    writeln!(
        out,
        "{} on {} (seed {}, coflows: {}, {} jobs)",
        exp.name,
        exp.topology.name,
        exp.seed,
        exp.coflow_scheduler,
        s.first().map_or(0, |x| x.jobs)
    )?;
    writeln!(
        out,
        "{:<12} {:>18} {:>18} {:>18} {:>18} {:>18} {:>14} {:>16} {:>6} {:>8}",
        "scheduler",
        "makespan s",
        "avg JCT s",
        "p95 JCT s",
        "avg CCT s",
        "p95 CCT s",
        "jobs/hour",
        "cross-rack GB",
        "OCS %",
        "reconf"
    )?;
    for x in s {
        let n = &x.normalized;
        let cell = |v: f64, r: f64| format!("{v:.1} ({r:.2})");
        writeln!(
            out,
            "{:<12} {:>18} {:>18} {:>18} {:>18} {:>18} {:>14.1} {:>16} {:>6.1} {:>8}",
            x.name,
            cell(x.makespan_s, n.makespan),
            cell(x.avg_jct_s, n.avg_jct),
            cell(x.p95_jct_s, n.p95_jct),
            cell(x.avg_cct_s, n.avg_cct),
            cell(x.p95_cct_s, n.p95_cct),
            x.throughput_jobs_per_hour,
            format!(
                "{:.2} ({:.2})",
                x.cross_rack_bytes as f64 / 1e9,
                n.cross_rack_bytes
            ),
            100.0 * x.ocs_share,
            x.reconfigurations
        )?;
    }
    Ok(())
}

/// The table `ocslab run` prints: `ocslab sim`'s figures with what was
/// measured on the wire, then what the perturbations did.
pub fn emu_table(out: &mut impl Write, exp: &Experiment, runs: &[SchedulerRun]) -> std::io::Result<()> {
    writeln!(
        out,
        "{} on {} (scale {}, seed {}, coflows: {}, real bytes)",
        exp.name, exp.topology.name, exp.topology.scale, exp.seed, exp.coflow_scheduler
    )?;
    writeln!(
        out,
        "{:<12} {:>16} {:>16} {:>16} {:>16} {:>9} {:>9} {:>11} {:>10} {:>10} {:>12}",
        "scheduler",
        "makespan s",
        "avg JCT s",
        "avg CCT s",
        "p95 CCT s",
        "p50 FCT",
        "p99 FCT",
        "verified",
        "EPS MB",
        "OCS MB",
        "CCT/sim"
    )?;
    for r in runs {
        let (s, w) = (&r.summary, &r.outcome.wire);
        let n = &s.normalized;
        let cell = |v: f64, x: f64| format!("{v:.2} ({x:.2})");
        writeln!(
            out,
            "{:<12} {:>16} {:>16} {:>16} {:>16} {:>9.3} {:>9.3} {:>11} {:>10.1} {:>10.1} {:>12}",
            s.name,
            cell(s.makespan_s, n.makespan),
            cell(s.avg_jct_s, n.avg_jct),
            cell(s.avg_cct_s, n.avg_cct),
            cell(s.p95_cct_s, n.p95_cct),
            w.fct.p50_s,
            w.fct.p99_s,
            format!("{}/{}", w.verified_flows, w.verified_flows + w.corrupt_flows),
            w.fabric.eps_bytes as f64 / 1e6,
            w.fabric.ocs_bytes as f64 / 1e6,
            format!("{:.3} (p50 {:.2})", r.cct_vs_sim.of_averages, r.cct_vs_sim.median),
        )?;
    }
    perturbations(out, runs)
}

fn perturbations(out: &mut impl Write, runs: &[SchedulerRun]) -> std::io::Result<()> {
    let with: Vec<(&str, &crate::emu::experiment::PerturbSummary)> = runs
        .iter()
        .filter_map(|r| r.perturbations.as_ref().map(|p| (r.summary.name.as_str(), p)))
        .collect();
    if with.is_empty() {
        return Ok(());
    }
    writeln!(out, "perturbations (carried out for real):")?;
    let opt = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.2}"));
    for (name, p) in with {
        let c = p.carried_out;
        writeln!(
            out,
            "  {name}: {} kills, {} restarts ({} rejoined), {} speed changes, {} cable changes; dead: [{}]; \
             {} attempts lost, {} tasks re-run, {:.1} MB moved again, {:.1} MB wasted, {} flows cut; \
             {}/{} jobs done, {}",
            c.kills,
            c.restarts,
            c.rejoined,
            c.speed_changes,
            c.cable_changes,
            p.dead_hosts.join(", "),
            p.attempts_lost,
            p.tasks_rerun,
            p.bytes_rerun as f64 / 1e6,
            p.bytes_wasted as f64 / 1e6,
            p.flows_cut,
            p.jobs_finished,
            p.jobs,
            if p.all_verified {
                "every partition verified"
            } else {
                "NOT all verified"
            },
        )?;
        writeln!(
            out,
            "  {name}: avg JCT {:.2} s (without: {} s), makespan {:.2} s (without: {} s)",
            p.avg_jct_s,
            opt(p.unperturbed_avg_jct_s),
            p.makespan_s,
            opt(p.unperturbed_makespan_s),
        )?;
    }
    Ok(())
}
