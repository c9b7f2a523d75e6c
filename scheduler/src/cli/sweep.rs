//! `ocslab sweep EXPERIMENT --vary KEY=V1,V2,... [--vary ...]`: the
//! experiment in the simulator at every point of the grid ([`crate::sweep`]),
//! every task scheduler at every point, runs spread over threads. Writes
//! `runs/` (each run's summary as it finishes; `--resume` picks them up
//! after a kill), `sweep.json` (every summary), `sweep.csv` (one row per point and
//! scheduler) and one plot per figure against the points' offered load
//! (`--load slot|network`; `sweep_makespan.svg`, `sweep_avg_jct.svg`, `sweep_avg_cct.svg`,
//! `sweep_p95_cct.svg`), normalized to the first scheduler at the same
//! point; the first `--vary` runs along each line, the others tell the lines
//! apart.

use crate::plot;
use crate::progress::Progress;
use crate::report::folder::{self, Staged};
use crate::report::SchedulerSummary;
use crate::sweep::{self, Axis, PointResult};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `ocslab sweep`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Example:\n  ocslab sweep experiments/coscheduler-paper.toml \
    --vary workload.window=90min,10min,1min --vary workload.task_rate=160Mbit/s,800Mbit/s \
    --task-schedulers fair,coscheduler")]
pub struct SweepArgs {
    /// The experiment file (TOML).
    pub experiment: PathBuf,
    /// A key of the experiment file and its values, e.g.
    /// workload.window=90min,10min,1min (repeatable: the grid is every
    /// combination). Keys joined by + take each value together. Values are
    /// TOML numbers or booleans, else strings.
    #[arg(long = "vary", value_name = "KEY=V1,V2,...", required = true)]
    pub vary: Vec<String>,
    /// Run only these of the experiment's task schedulers (comma-separated;
    /// default: all). The file's first of them stays the baseline.
    #[arg(long, value_delimiter = ',')]
    pub task_schedulers: Vec<String>,
    /// Runs at once, each on its own thread (default: one per core).
    /// Results do not depend on it.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub threads: Option<u32>,
    /// Results folder (default: results/<experiment>-sweep-<UTC time>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The offered load on the plots' x axis: `slot` (task compute over the
    /// slot-time of the arrivals) or `network` (evenly spread cross-rack
    /// shuffle over the EPS uplinks' capacity in that time).
    #[arg(long, value_enum, default_value_t = Load::Slot)]
    pub load: Load,
    /// Reuse the runs a killed sweep with the same --out finished (kept in
    /// the folder's `.partial` sibling): only runs missing there, or whose
    /// point, scheduler or ocslab version changed, run again.
    #[arg(long, requires = "out")]
    pub resume: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Which offered load the plots are drawn against.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Load {
    /// Task compute ÷ slot-time of the arrivals.
    Slot,
    /// Evenly spread cross-rack shuffle ÷ EPS uplink capacity of the arrivals.
    Network,
}

impl Load {
    fn of(self, o: &sweep::OfferedLoad) -> Option<f64> {
        match self {
            Load::Slot => o.slot_load,
            Load::Network => o.network_load,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Load::Slot => "offered slot load (task compute ÷ slot-time of the arrivals)",
            Load::Network => "offered network load (cross-rack shuffle ÷ EPS uplinks, spread evenly)",
        }
    }
}

/// Runs `ocslab sweep`.
pub fn run(a: SweepArgs) -> Result<ExitCode> {
    let axes = a
        .vary
        .iter()
        .map(|s| s.parse::<Axis>())
        .collect::<Result<Vec<_>, _>>()?;
    let text = std::fs::read_to_string(&a.experiment)
        .with_context(|| format!("cannot read {}", a.experiment.display()))?;
    let points = sweep::points(&a.experiment, &text, &axes, &a.task_schedulers)?;
    let name = points
        .first()
        .map_or("sweep", |p| p.experiment.name.as_str())
        .to_string();
    let dir = a
        .out
        .clone()
        .unwrap_or_else(|| folder::dated(&format!("results/{name}-sweep")));
    let total: usize = points.iter().map(|p| p.experiment.task_schedulers.len()).sum();
    let bar = Progress::counting(total as u64, a.json, "runs", false);
    let threads = a
        .threads
        .map_or_else(crate::runner::default_threads, |n| n as usize);
    let staged = if a.resume {
        Staged::resume(&dir)?
    } else {
        Staged::begin(&dir)?
    };
    let runs = sweep::Runs::new(&staged.path().join("runs"), a.resume);
    let start = std::time::Instant::now();
    let done = |run: &str, reused: bool| {
        bar.job_done();
        let line = format!(
            "{} of {total} runs done ({:.0} s): {run}{}",
            bar.jobs_done(),
            start.elapsed().as_secs_f64(),
            if reused {
                " (kept from the killed sweep)"
            } else {
                ""
            }
        );
        if !bar.is_hidden() {
            bar.println(line);
        } else if !a.json {
            eprintln!("{line}");
        }
    };
    let results = sweep::run(&points, threads, &runs, &done)?;
    bar.finish();
    let report = serde_json::json!({
        "experiment": name,
        "file": a.experiment,
        "axes": axes.iter().map(|x| serde_json::json!({"key": x.key, "values": x.values})).collect::<Vec<_>>(),
        "points": results,
        "wall_s": start.elapsed().as_secs_f64(),
        "results_dir": dir,
    });
    let path = staged.path();
    write_json(&path.join("sweep.json"), &report)?;
    write_csv(&path.join("sweep.csv"), &axes, &results)?;
    write_plots(path, &name, a.load, &axes, &results)?;
    staged.finish()?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_table(&axes, &results);
        println!("results: {}", dir.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn write_json(path: &Path, v: &serde_json::Value) -> Result<()> {
    std::fs::write(path, serde_json::to_string_pretty(v)?)
        .with_context(|| format!("writing {}", path.display()))
}

/// The figures the CSV and the plots carry: (column, plot title, value, ratio).
type Figure = (&'static str, &'static str, fn(&SchedulerSummary) -> (f64, f64));

const FIGURES: [Figure; 4] = [
    ("makespan", "Makespan", |s| (s.makespan_s, s.normalized.makespan)),
    ("avg_jct", "Average JCT", |s| (s.avg_jct_s, s.normalized.avg_jct)),
    ("avg_cct", "Average CCT", |s| (s.avg_cct_s, s.normalized.avg_cct)),
    ("p95_cct", "p95 CCT", |s| (s.p95_cct_s, s.normalized.p95_cct)),
];

fn opt(v: Option<f64>) -> String {
    v.map_or_else(String::new, |x| format!("{x:.6}"))
}

fn write_csv(path: &Path, axes: &[Axis], results: &[PointResult]) -> Result<()> {
    let mut w = csv::Writer::from_path(path).with_context(|| format!("writing {}", path.display()))?;
    let mut header: Vec<String> = vec!["point".into()];
    header.extend(axes.iter().map(|x| x.key.clone()));
    header.extend(
        ["jobs", "arrival_span_s", "slot_load", "network_load", "scheduler"]
            .iter()
            .map(|s| s.to_string()),
    );
    for (col, _, _) in FIGURES {
        header.push(format!("{col}_s"));
        header.push(format!("{col}_ratio"));
    }
    header.extend(
        [
            "cross_rack_bytes",
            "cross_rack_ratio",
            "ocs_share",
            "shuffle_ocs_share",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    w.write_record(&header)?;
    for (i, p) in results.iter().enumerate() {
        for s in &p.schedulers {
            let mut row: Vec<String> = vec![i.to_string()];
            row.extend(p.settings.values().cloned());
            row.extend([
                p.jobs.to_string(),
                format!("{:.3}", p.offered.arrival_span_s),
                opt(p.offered.slot_load),
                opt(p.offered.network_load),
                s.name.clone(),
            ]);
            for (_, _, f) in FIGURES {
                let (v, r) = f(s);
                row.push(format!("{v:.6}"));
                row.push(format!("{r:.6}"));
            }
            row.extend([
                s.cross_rack_bytes.to_string(),
                format!("{:.6}", s.normalized.cross_rack_bytes),
                format!("{:.6}", s.ocs_share),
                format!("{:.6}", s.shuffle_ocs_share),
            ]);
            w.write_record(&row)?;
        }
    }
    w.flush().with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// One line per task scheduler after the baseline and per combination of
/// the axes after the first: that figure's ratio to the baseline against
/// the offered `load` (points without one, every job arriving at once,
/// are left out, as are points where the baseline's figure is 0, e.g. no
/// coflow). A scheduler's lines share a colour; axes with one value stay
/// out of the names.
fn series(load: Load, axes: &[Axis], results: &[PointResult], figure: &Figure) -> Vec<plot::Series> {
    let mut lines: Vec<plot::Series> = Vec::new();
    let mut combos: Vec<Vec<String>> = Vec::new();
    for p in results {
        let combo: Vec<String> = axes
            .iter()
            .skip(1)
            .filter(|x| x.values.len() > 1)
            .filter_map(|x| {
                p.settings
                    .get(&x.key)
                    .map(|v| format!("{}={v}", short_key(&x.key)))
            })
            .collect();
        let variant = combos.iter().position(|c| *c == combo).unwrap_or_else(|| {
            combos.push(combo.clone());
            combos.len() - 1
        });
        for (group, s) in p.schedulers.iter().enumerate().skip(1) {
            let name = std::iter::once(s.name.clone())
                .chain(combo.iter().cloned())
                .collect::<Vec<_>>()
                .join(", ");
            let at = lines.iter().position(|l| l.name == name).unwrap_or_else(|| {
                lines.push(plot::Series {
                    name,
                    points: Vec::new(),
                    group: group - 1,
                    variant,
                });
                lines.len() - 1
            });
            let y = (figure.2)(s).1;
            if let Some(x) = load.of(&p.offered).filter(|x| x.is_finite() && y.is_finite()) {
                lines[at].points.push((x, y));
            }
        }
    }
    lines.sort_by_key(|l| (l.group, l.variant));
    lines
}

/// The last part of each dotted key (`workload.task_rate` → `task_rate`).
fn short_key(key: &str) -> String {
    key.split('+')
        .map(|k| k.rsplit('.').next().unwrap_or(k))
        .collect::<Vec<_>>()
        .join("+")
}

fn write_plots(dir: &Path, name: &str, load: Load, axes: &[Axis], results: &[PointResult]) -> Result<()> {
    let base = results
        .first()
        .and_then(|p| p.schedulers.first())
        .map_or_else(|| "baseline".to_string(), |s| s.name.clone());
    let along = axes.first().map_or_else(String::new, |x| short_key(&x.key));
    for figure in &FIGURES {
        let path = dir.join(format!("sweep_{}.svg", figure.0));
        plot::lines(
            &path,
            &format!("{name}: {} against offered load ({along} varied)", figure.1),
            (load.label(), &format!("{}, ÷ {base}", figure.1)),
            &series(load, axes, results, figure),
            Some((&base, 1.0)),
        )?;
    }
    Ok(())
}

fn print_table(axes: &[Axis], results: &[PointResult]) {
    let keys: Vec<String> = axes.iter().map(|x| short_key(&x.key)).collect();
    println!(
        "{:<36} {:>9} {:>9} {:<20} {:>17} {:>15} {:>15} {:>15}",
        keys.join(" "),
        "slot load",
        "net load",
        "scheduler",
        "makespan s",
        "avg JCT s",
        "avg CCT s",
        "p95 CCT s"
    );
    for p in results {
        let point: Vec<&str> = p.settings.values().map(String::as_str).collect();
        for (k, s) in p.schedulers.iter().enumerate() {
            let (label, slot, net) = if k == 0 {
                (
                    point.join(" "),
                    p.offered.slot_load.map_or("-".into(), |x| format!("{x:.3}")),
                    p.offered.network_load.map_or("-".into(), |x| format!("{x:.3}")),
                )
            } else {
                (String::new(), String::new(), String::new())
            };
            let cell = |f: &Figure| {
                let (v, r) = (f.2)(s);
                format!("{v:.1} ({r:.2})")
            };
            println!(
                "{label:<36} {slot:>9} {net:>9} {:<20} {:>17} {:>15} {:>15} {:>15}",
                s.name,
                cell(&FIGURES[0]),
                cell(&FIGURES[1]),
                cell(&FIGURES[2]),
                cell(&FIGURES[3])
            );
        }
    }
}
