//! Sweeps: one experiment run at every point of a grid of values of its
//! keys (`--vary workload.window=90min,10min,1min`), each task scheduler
//! at each point, with the point's **offered load** computed from its jobs
//! before any run, so results can be read against load rather than
//! against a knob.
//!
//! Offered load of a point, from the jobs the point's experiment makes:
//! - **slot load**: the nominal compute time of every task (`MapTask::duration`
//!   plus `ReduceTask::duration`) over the slot-time the arrivals span,
//!   `hosts × slots_per_host × (last arrival − first arrival)`. Above 1 the
//!   cluster cannot keep up with the arrivals whatever the network does.
//! - **network load**: the shuffle bytes that would cross racks if spread
//!   evenly over them (`(R − 1) / R` of every job's shuffle) over what the
//!   racks' EPS uplinks carry in the same span, `R × uplink_rate × span`.
//!
//! A point is the experiment file with its keys replaced (dotted paths into
//! the TOML, values TOML scalars or bare strings), validated like any file;
//! every run of a point uses the same jobs. Runs are independent (each owns
//! its engine, network and policies and reads no clock), so they go over a
//! thread pool in any order and the results do not depend on the thread
//! count.
//!
//! Each run's summary is written to `runs/` as soon as it finishes, under a
//! fingerprint of what decides it (the point's experiment text, its
//! topology file, the scheduler, ocslab's version). A sweep that was killed can pick up its
//! folder and rerun only what is missing or no longer matches ([`Runs`]).

use crate::experiment::{Experiment, ExperimentError};
use crate::model::job::Job;
use crate::report::{normalize, summarize, SchedulerSummary};
use crate::sim::{run_scheduler_with, RunError, SimOutcome};
use indexmap::IndexMap;
use ocslab_core::topology::locate;
use ocslab_emulator::Topology;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// Why a sweep could not be set up or run.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// A `--vary` argument is malformed.
    #[error("--vary {spec:?}: {message}")]
    Axis {
        /// The argument as given.
        spec: String,
        /// What is wrong and what would be valid.
        message: String,
    },
    /// A point's key cannot be set in the experiment file.
    #[error("{}: point {point}: {message}", file.display())]
    Key {
        /// The experiment file.
        file: PathBuf,
        /// The point's settings, e.g. `workload.window=10min`.
        point: String,
        /// What is wrong.
        message: String,
    },
    /// A point's experiment is invalid (e.g. a value out of range).
    #[error("point {point}: {error}")]
    Experiment {
        /// The point's settings.
        point: String,
        /// The validation error, naming the file and the field (it is
        /// printed in this error's message, so it is not its `source`).
        error: Box<ExperimentError>,
    },
    /// A run failed.
    #[error("point {point}, task scheduler {scheduler}: {error}")]
    Run {
        /// The point's settings.
        point: String,
        /// The task scheduler.
        scheduler: String,
        /// Why (printed in this error's message).
        error: Box<RunError>,
    },
    /// A finished run's summary could not be kept.
    #[error("keeping a run in {}: {error}", path.display())]
    Keep {
        /// The run's file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The thread pool could not be started.
    #[error("could not start the sweep's threads: {0}")]
    Threads(String),
    /// Some runs failed; every other run ran and its summary is kept.
    #[error(
        "{} of {total} runs failed (the others are kept: the same command with the same --out and --resume runs only these again):{}",
        failed.len(),
        failed.iter().map(|e| format!("\n  {e}")).collect::<String>()
    )]
    Failed {
        /// Each failed run's error ([`SweepError::Run`] or [`SweepError::Keep`]).
        failed: Vec<SweepError>,
        /// Runs in the sweep.
        total: usize,
    },
}

/// One varied key and its values, as `--vary KEY=V1,V2,...` gives them.
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    /// Dotted path of the key in the experiment file, e.g. `workload.window`;
    /// several joined by `+` take the same value together
    /// (`workload.map_bytes_per_s+workload.reduce_bytes_per_s`).
    pub key: String,
    /// Its values, as written.
    pub values: Vec<String>,
}

impl FromStr for Axis {
    type Err = SweepError;
    fn from_str(spec: &str) -> Result<Axis, SweepError> {
        let err = |message: &str| SweepError::Axis {
            spec: spec.to_string(),
            message: message.to_string(),
        };
        let (key, values) = spec
            .split_once('=')
            .ok_or_else(|| err("needs KEY=V1,V2,..., e.g. workload.window=90min,10min"))?;
        let key = key.trim();
        let dotted = |k: &str| !k.trim().is_empty() && k.split('.').all(|p| !p.trim().is_empty());
        if !key.split('+').all(dotted) {
            return Err(err(
                "the key must be a dotted path such as workload.window, or several joined by +",
            ));
        }
        let values: Vec<String> = values.split(',').map(|v| v.trim().to_string()).collect();
        if values.iter().any(String::is_empty) {
            return Err(err(
                "every value must be non-empty (values are separated by commas)",
            ));
        }
        if let Some(v) = values.iter().enumerate().find(|(i, v)| values[..*i].contains(v)) {
            return Err(err(&format!("{} is listed twice", v.1)));
        }
        Ok(Axis {
            key: key.split('+').map(str::trim).collect::<Vec<_>>().join("+"),
            values,
        })
    }
}

/// A TOML value from a command-line word: a number, boolean or quoted
/// string as TOML reads it, anything else as a bare string (`90min`).
fn toml_value(word: &str) -> toml::Value {
    toml::from_str::<toml::Table>(&format!("v = {word}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .filter(|v| !matches!(v, toml::Value::Array(_) | toml::Value::Table(_)))
        .unwrap_or_else(|| toml::Value::String(word.to_string()))
}

/// Sets dotted `key` of `table` to `value`, creating missing tables.
fn set_key(table: &mut toml::Table, key: &str, value: toml::Value) -> Result<(), String> {
    let mut parts: Vec<&str> = key.split('.').map(str::trim).collect();
    let last = parts.pop().unwrap_or(key);
    let mut t = table;
    let mut path = String::new();
    for part in parts {
        path = if path.is_empty() {
            part.to_string()
        } else {
            format!("{path}.{part}")
        };
        t = match t
            .entry(part)
            .or_insert_with(|| toml::Value::Table(toml::Table::new()))
        {
            toml::Value::Table(inner) => inner,
            other => {
                return Err(format!(
                    "{path} is not a table but a value ({})",
                    other.type_str()
                ))
            }
        };
    }
    t.insert(last.to_string(), value);
    Ok(())
}

/// One point of the grid: its settings and the experiment they make.
#[derive(Clone, Debug)]
pub struct Point {
    /// (key, value as written), one per axis, in the axes' order.
    pub settings: Vec<(String, String)>,
    /// The experiment file with the settings applied, validated.
    pub experiment: Experiment,
}

impl Point {
    /// `key=value key=value`, as errors and tables name the point.
    pub fn label(&self) -> String {
        label(&self.settings)
    }
}

fn label(settings: &[(String, String)]) -> String {
    settings
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Every point of the grid over `axes` (the first axis varies slowest),
/// each the experiment `text` (read from `file`; relative paths resolve
/// against its folder) with its keys set, keeping only `schedulers` of its
/// task schedulers when that list is not empty.
pub fn points(
    file: &Path,
    text: &str,
    axes: &[Axis],
    schedulers: &[String],
) -> Result<Vec<Point>, SweepError> {
    let base: toml::Table = toml::from_str(text).map_err(|e| SweepError::Key {
        file: file.to_path_buf(),
        point: String::new(),
        message: e.to_string(),
    })?;
    let mut grid: Vec<Vec<(String, String)>> = vec![Vec::new()];
    for axis in axes {
        grid = grid
            .into_iter()
            .flat_map(|s| {
                axis.values.iter().map(move |v| {
                    let mut s = s.clone();
                    s.push((axis.key.clone(), v.clone()));
                    s
                })
            })
            .collect();
    }
    grid.into_iter()
        .map(|settings| {
            let mut table = base.clone();
            for (keys, v) in &settings {
                for k in keys.split('+') {
                    set_key(&mut table, k, toml_value(v)).map_err(|message| SweepError::Key {
                        file: file.to_path_buf(),
                        point: label(&settings),
                        message,
                    })?;
                }
            }
            let rewritten = toml::to_string(&table).map_err(|e| SweepError::Key {
                file: file.to_path_buf(),
                point: label(&settings),
                message: e.to_string(),
            })?;
            let mut experiment = Experiment::parse(&rewritten, file).map_err(|mut e| {
                // Lines of the rewritten text mean nothing to the user: point
                // into their file, unless the value came from --vary.
                if e.file == file {
                    let varied = settings
                        .iter()
                        .any(|(keys, _)| keys.split('+').any(|k| k == e.field));
                    e.line = if varied { None } else { locate(text, &e.field) };
                }
                SweepError::Experiment {
                    point: label(&settings),
                    error: Box::new(e),
                }
            })?;
            experiment
                .keep_task_schedulers(schedulers)
                .map_err(|message| SweepError::Key {
                    file: file.to_path_buf(),
                    point: label(&settings),
                    message: format!("--task-schedulers: {message}"),
                })?;
            Ok(Point { settings, experiment })
        })
        .collect()
}

/// What a point's jobs ask of the cluster (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct OfferedLoad {
    /// Last arrival − first arrival, seconds.
    pub arrival_span_s: f64,
    /// Nominal task compute time ÷ slot-time of the span (`None` when every
    /// job arrives at once).
    pub slot_load: Option<f64>,
    /// Evenly spread cross-rack shuffle ÷ EPS uplink capacity of the span
    /// (`None` as above).
    pub network_load: Option<f64>,
}

/// The offered load of `jobs` on `topo`.
pub fn offered_load(jobs: &[Job], topo: &Topology) -> OfferedLoad {
    let first = jobs.iter().map(|j| j.arrival).min().unwrap_or_default();
    let last = jobs.iter().map(|j| j.arrival).max().unwrap_or_default();
    let span = (last - first).as_secs_f64();
    let compute: f64 = jobs
        .iter()
        .flat_map(|j| {
            let maps = j.maps.iter().map(|m| m.duration.as_secs_f64());
            maps.chain(j.reduces.iter().map(|r| r.duration.as_secs_f64()))
        })
        .sum();
    let slots = topo.hosts() as f64 * f64::from(topo.slots_per_host);
    let racks = f64::from(topo.racks);
    let shuffle_bits: f64 = jobs.iter().map(|j| j.shuffle_bytes().0 as f64 * 8.0).sum();
    let cross = shuffle_bits * (racks - 1.0) / racks;
    let uplinks = racks * topo.uplink_rate.0 as f64;
    let per_span = |x: f64| (span > 0.0).then(|| x / span);
    OfferedLoad {
        arrival_span_s: span,
        slot_load: per_span(compute / slots),
        network_load: per_span(cross / uplinks),
    }
}

/// One point's results: its settings, offered load and one summary per
/// task scheduler, normalized to the first.
#[derive(Clone, Debug, Serialize)]
pub struct PointResult {
    /// Value per varied key, in the axes' order.
    pub settings: IndexMap<String, String>,
    /// Jobs of the point.
    pub jobs: usize,
    /// What those jobs ask of the cluster.
    pub offered: OfferedLoad,
    /// One per task scheduler, in the experiment's order.
    pub schedulers: Vec<SchedulerSummary>,
}

/// The summaries of finished runs, one file each under a folder
/// (`runs/<point>-<scheduler>.json`), so that a killed sweep loses none.
#[derive(Clone, Debug)]
pub struct Runs {
    dir: PathBuf,
    reuse: bool,
}

/// A run's file: its fingerprint and its summary before normalization.
#[derive(Serialize, serde::Deserialize)]
struct RunFile {
    fingerprint: String,
    summary: SchedulerSummary,
}

impl Runs {
    /// Keeps runs in `dir`; with `reuse`, a run whose file is there with
    /// the same fingerprint is not run again.
    pub fn new(dir: &Path, reuse: bool) -> Runs {
        Runs {
            dir: dir.to_path_buf(),
            reuse,
        }
    }

    fn file(&self, point: usize, scheduler: &str) -> PathBuf {
        self.dir.join(format!("{point}-{scheduler}.json"))
    }

    /// What decides a run: the experiment as the point makes it and its
    /// topology file, the scheduler and this build's version (a trace the
    /// workload reads is named by the experiment, not hashed).
    fn fingerprint(exp: &Experiment, scheduler: &str) -> String {
        use std::hash::{Hash, Hasher};
        let mut h = rustc_hash::FxHasher::default();
        let version = env!("CARGO_PKG_VERSION");
        (exp.text.as_str(), exp.topology_text.as_str(), scheduler, version).hash(&mut h);
        format!("{:016x}", h.finish())
    }

    /// The summary kept for this run, if reusing and it still matches.
    fn cached(&self, point: usize, exp: &Experiment, scheduler: &str) -> Option<SchedulerSummary> {
        if !self.reuse {
            return None;
        }
        let text = std::fs::read_to_string(self.file(point, scheduler)).ok()?;
        let f: RunFile = serde_json::from_str(&text).ok()?;
        (f.fingerprint == Runs::fingerprint(exp, scheduler)).then_some(f.summary)
    }

    /// Keeps a finished run's summary (written aside, then renamed, so a
    /// kill leaves the old file or the new one, never half of one).
    fn keep(
        &self,
        point: usize,
        exp: &Experiment,
        scheduler: &str,
        s: &SchedulerSummary,
    ) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let f = RunFile {
            fingerprint: Runs::fingerprint(exp, scheduler),
            summary: s.clone(),
        };
        let path = self.file(point, scheduler);
        let tmp = path.with_extension("json.tmp");
        std::fs::write(
            &tmp,
            serde_json::to_vec_pretty(&f).map_err(std::io::Error::other)?,
        )?;
        std::fs::rename(&tmp, &path)
    }
}

/// Runs every task scheduler at every point, up to `threads` runs at
/// once, keeping each summary in `runs` (and taking the ones it already
/// holds, if it reuses them); `done(run label, reused)` is called as each
/// run finishes. A run that fails does not stop the others: once all have
/// ended, [`SweepError::Failed`] names every failed one. Results come in
/// the points' order whatever the thread count.
pub fn run(
    points: &[Point],
    threads: usize,
    runs: &Runs,
    done: &(dyn Fn(&str, bool) + Sync),
) -> Result<Vec<PointResult>, SweepError> {
    run_with(points, threads, runs, done, &|exp, scheduler, jobs| {
        run_scheduler_with(exp, scheduler, jobs, |_| {})
    })
}

/// How one run of a sweep is simulated: `run_scheduler_with` (a test may
/// stand in for it).
type Simulate<'a> = dyn Fn(&Experiment, &str, Vec<Job>) -> Result<SimOutcome, RunError> + Sync + 'a;

/// [`run`], simulating each run with `simulate`.
fn run_with(
    points: &[Point],
    threads: usize,
    runs: &Runs,
    done: &(dyn Fn(&str, bool) + Sync),
    simulate: &Simulate<'_>,
) -> Result<Vec<PointResult>, SweepError> {
    use rayon::prelude::*;
    let jobs: Vec<Vec<Job>> = points
        .iter()
        .map(|p| {
            p.experiment.jobs().map_err(|e| SweepError::Experiment {
                point: p.label(),
                error: Box::new(e),
            })
        })
        .collect::<Result<_, _>>()?;
    let todo: Vec<(usize, &str)> = points
        .iter()
        .enumerate()
        .flat_map(|(i, p)| p.experiment.task_schedulers.iter().map(move |s| (i, s.as_str())))
        .collect();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .build()
        .map_err(|e| SweepError::Threads(e.to_string()))?;
    let outcomes: Vec<Result<SchedulerSummary, SweepError>> = pool.install(|| {
        todo.par_iter()
            .map(|&(i, scheduler)| {
                let p = &points[i];
                let label = format!("{} {scheduler}", p.label());
                if let Some(s) = runs.cached(i, &p.experiment, scheduler) {
                    done(&label, true);
                    return Ok(s);
                }
                let out =
                    simulate(&p.experiment, scheduler, jobs[i].clone()).map_err(|e| SweepError::Run {
                        point: p.label(),
                        scheduler: scheduler.to_string(),
                        error: Box::new(e),
                    })?;
                let s = summarize(&out);
                runs.keep(i, &p.experiment, scheduler, &s)
                    .map_err(|e| SweepError::Keep {
                        path: runs.file(i, scheduler),
                        error: e,
                    })?;
                done(&label, false);
                Ok(s)
            })
            .collect()
    });
    let total = outcomes.len();
    let mut summaries = Vec::with_capacity(total);
    let mut failed = Vec::new();
    for outcome in outcomes {
        match outcome {
            Ok(s) => summaries.push(s),
            Err(e) => failed.push(e),
        }
    }
    if !failed.is_empty() {
        return Err(SweepError::Failed { failed, total });
    }
    let mut summaries = summaries.into_iter();
    Ok(points
        .iter()
        .zip(&jobs)
        .map(|(p, jobs)| {
            let mut schedulers: Vec<SchedulerSummary> = summaries
                .by_ref()
                .take(p.experiment.task_schedulers.len())
                .collect();
            normalize(&mut schedulers);
            PointResult {
                settings: p.settings.iter().cloned().collect(),
                jobs: jobs.len(),
                offered: offered_load(jobs, &p.experiment.topology),
                schedulers,
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_axis_parses_key_and_values_and_refuses_what_is_malformed() {
        let a: Axis = "workload.window = 90min, 10min".parse().expect("parses");
        assert_eq!(a.key, "workload.window");
        assert_eq!(a.values, vec!["90min", "10min"]);
        let both: Axis = "workload.a + workload.b=1".parse().expect("parses");
        assert_eq!(both.key, "workload.a+workload.b");
        for bad in [
            "workload.window",
            "=1,2",
            "a..b=1",
            "a+=1",
            "seed=1,,2",
            "seed=1,1",
        ] {
            let e = bad.parse::<Axis>().expect_err(bad);
            assert!(matches!(e, SweepError::Axis { .. }), "{bad}: {e}");
        }
    }

    #[test]
    fn words_become_numbers_booleans_or_bare_strings() {
        assert_eq!(toml_value("3"), toml::Value::Integer(3));
        assert_eq!(toml_value("0.5"), toml::Value::Float(0.5));
        assert_eq!(toml_value("true"), toml::Value::Boolean(true));
        assert_eq!(toml_value("90min"), toml::Value::String("90min".into()));
        assert_eq!(toml_value("\"fair\""), toml::Value::String("fair".into()));
        assert_eq!(toml_value("[1, 2]"), toml::Value::String("[1, 2]".into()));
    }

    #[test]
    fn keys_are_set_through_tables_and_a_scalar_in_the_way_is_named() {
        let mut t: toml::Table = toml::from_str("seed = 1\n[workload]\njobs = 3\n").expect("toml");
        set_key(&mut t, "workload.window", toml_value("10min")).expect("set");
        set_key(&mut t, "engine.heartbeat", toml_value("1s")).expect("set");
        assert_eq!(t["workload"]["window"].as_str(), Some("10min"));
        assert_eq!(t["workload"]["jobs"].as_integer(), Some(3));
        assert_eq!(t["engine"]["heartbeat"].as_str(), Some("1s"));
        let e = set_key(&mut t, "seed.x", toml_value("2")).expect_err("seed is no table");
        assert!(e.contains("seed is not a table"), "{e}");
    }

    /// The slow-start experiment at seeds 1 and 2, 4 jobs each, the first
    /// point's run failing: the second still runs and is kept, and the
    /// error names the failed run.
    #[test]
    fn a_failed_run_does_not_stop_the_others_and_is_named() {
        let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../experiments/slow-start.toml");
        let text = std::fs::read_to_string(&file).expect("experiment file");
        let axes: Vec<Axis> = ["seed=1,2", "workload.jobs=4"]
            .iter()
            .map(|a| a.parse().expect("axis"))
            .collect();
        let points = points(&file, &text, &axes, &[]).expect("points");
        let dir = std::env::temp_dir().join(format!("ocslab-sweep-failed-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let runs = Runs::new(&dir, true);
        let simulate = |exp: &Experiment, scheduler: &str, jobs: Vec<Job>| {
            if exp.seed == 1 {
                return Err(RunError::Policy(crate::policy::PolicyError::Params {
                    policy: scheduler.to_string(),
                    message: "refused by the test".into(),
                }));
            }
            run_scheduler_with(exp, scheduler, jobs, |_| {})
        };
        let e = run_with(&points, 1, &runs, &|_, _| {}, &simulate).expect_err("a run failed");
        let message = e.to_string();
        // The second point ran although the first failed, and was kept.
        let second_kept = runs.cached(1, &points[1].experiment, "fair").is_some();
        let first_kept = runs.cached(0, &points[0].experiment, "fair").is_some();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(
            second_kept && !first_kept,
            "kept: first {first_kept}, second {second_kept}"
        );
        let SweepError::Failed { failed, total } = e else {
            panic!("not Failed: {message}");
        };
        assert_eq!((failed.len(), total), (1, 2), "{message}");
        assert!(
            message.contains("point seed=1 workload.jobs=4, task scheduler fair: parameters of task scheduler \"fair\": refused by the test"),
            "{message}"
        );
        assert!(message.contains("--resume"), "{message}");
    }

    /// Two jobs 100 s apart on 2 racks × 2 hosts × 3 slots at 1 Gbit/s
    /// uplinks: 300 s of compute over 12 slots × 100 s is 0.25; 10 GB of
    /// shuffle, half across racks if spread, over 2 × 1 Gbit/s × 100 s is 0.2.
    #[test]
    fn offered_load_is_compute_over_slot_time_and_spread_shuffle_over_uplinks() {
        use crate::model::job::{JobId, MapTask, ReduceTask, Shuffle, UserId};
        use ocslab_emulator::{Bps, Bytes, Nanos};
        let topo = Topology::builder("t", 2, 2)
            .slots_per_host(3)
            .uplink_rate(Bps(1_000_000_000))
            .simulation_only()
            .build()
            .expect("topology");
        let job = |id: u64, at_s: u64| Job {
            id: JobId(id),
            name: String::new(),
            user: UserId(0),
            arrival: Nanos::from_millis(at_s * 1000),
            recurring: false,
            parents: Vec::new(),
            maps: vec![MapTask {
                input: Bytes(5_000_000_000),
                replicas: Vec::new(),
                duration: Nanos::from_millis(100_000),
                written_by: None,
            }],
            reduces: vec![ReduceTask {
                duration: Nanos::from_millis(50_000),
            }],
            shuffle: Shuffle::Ratio(1.0),
        };
        let load = offered_load(&[job(0, 20), job(1, 120)], &topo);
        assert_eq!(load.arrival_span_s, 100.0);
        let close = |a: Option<f64>, b: f64| a.is_some_and(|a| (a - b).abs() < 1e-12);
        assert!(close(load.slot_load, 0.25), "{load:?}");
        assert!(close(load.network_load, 0.2), "{load:?}");
        let at_once = offered_load(&[job(0, 20), job(1, 20)], &topo);
        assert_eq!((at_once.slot_load, at_once.network_load), (None, None));
    }
}
