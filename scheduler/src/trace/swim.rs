//! SWIM workloads (Statistical Workload Injector for MapReduce; Chen,
//! Ganapathi, Griffith & Katz, MASCOTS 2011): Facebook Hadoop jobs
//! synthesized from production traces, e.g. `FB-2010_samples_24_times_1hr_0.tsv`,
//! the trace NAS evaluates on.
//!
//! Format: one job a line, tab-separated:
//! `<job id> <submit time s> <gap since previous s> <map input bytes> <shuffle bytes> <reduce output bytes>`.
//! [`parse`] reads it into [`SwimJob`]s; every error names the file, the
//! line and the field.
//!
//! [`SwimModel::to_jobs`] turns them into ocslab [`Job`]s. The trace gives
//! only three sizes per job; the rest is modelled, deterministically for a
//! seed:
//! - **maps**: one per input block, `ceil(input / block_size)` with NAS's
//!   128 MB blocks, at least one; blocks are full but the last.
//! - **reduces**: one per `reduce_input` of shuffle (1 GB by default), at
//!   least one when the job shuffles anything; a job that shuffles nothing
//!   is map-only. With `reduces_by_shuffle_and_output`, one per
//!   `reduce_input` of shuffle plus output, as SWIM's replay script sizes
//!   them.
//! - **shuffle**: each map emits in proportion to its input (shuffle/input
//!   ratio of the job), split evenly over the reduces.
//! - **task durations**: not in the trace (NAS measured them on a
//!   single-node Hadoop). A task costs `task_overhead` (container/JVM
//!   start) plus its bytes at a per-task processing rate: a map its input
//!   block at `map_rate`; a reduce its shuffle share plus its output share
//!   at `reduce_rate`. Defaults: 1 s, 400 Mbit/s (50 MB/s) and 400 Mbit/s,
//!   round figures for one Hadoop task on a commodity node, not fitted to
//!   any result. Durations come from nominal sizes; sizes are then divided
//!   by the topology's `scale` (times are preserved).
//! - **users**: uniform over `users`; **recurring**: a `recurring_share` of
//!   jobs at random; **arrivals**: the trace's submit times, or uniform in a
//!   window, either multiplied by `arrival_scale`; **replicas**: HDFS's default placement
//!   ([`crate::model::hdfs::place_replicas`]).

pub use super::TraceError;
use crate::model::hdfs::place_replicas;
use crate::model::job::{Job, JobId, MapTask, ReduceTask, Shuffle, UserId, MAX_TASKS_PER_JOB};
use ocslab_emulator::{Bps, Bytes, Nanos, Topology};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// One job line of a SWIM file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SwimJob {
    /// 1-based line in the file.
    pub line: usize,
    /// The trace's job name (e.g. `job17`).
    pub name: String,
    /// Submit time.
    pub submit: Nanos,
    /// Gap since the previous job.
    pub gap: Nanos,
    /// Map input bytes.
    pub input: Bytes,
    /// Shuffle bytes.
    pub shuffle: Bytes,
    /// Reduce output bytes.
    pub output: Bytes,
}

/// The six fields of a line, in order.
pub const FIELDS: [&str; 6] = [
    "job_id",
    "submit_s",
    "gap_s",
    "input_bytes",
    "shuffle_bytes",
    "output_bytes",
];

/// Reads a SWIM file.
pub fn load(path: &Path) -> Result<Vec<SwimJob>, TraceError> {
    parse(&super::read(path)?, path)
}

/// Parses SWIM text (named `file` in errors). Blank lines are skipped.
pub fn parse(text: &str, file: &Path) -> Result<Vec<SwimJob>, TraceError> {
    let mut jobs = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        if raw.trim().is_empty() {
            continue;
        }
        let err = |field: &str, message: String| TraceError {
            file: file.to_path_buf(),
            line,
            field: field.to_string(),
            message,
        };
        let cols: Vec<&str> = raw.trim_end_matches('\r').split('\t').collect();
        if cols.len() != FIELDS.len() {
            return Err(err(
                "",
                format!(
                    "has {} tab-separated fields; expected 6: {}",
                    cols.len(),
                    FIELDS.join(", ")
                ),
            ));
        }
        let name = cols[0].trim();
        if name.is_empty() {
            return Err(err("job_id", "is empty; expected a name such as job17".into()));
        }
        let num = |k: usize| -> Result<u64, TraceError> {
            cols[k].trim().parse::<u64>().map_err(|_| {
                err(
                    FIELDS[k],
                    format!("{:?} is not a whole non-negative number", cols[k].trim()),
                )
            })
        };
        let secs = |k: usize| -> Result<Nanos, TraceError> {
            let s = num(k)?;
            s.checked_mul(1_000_000_000).map(Nanos).ok_or_else(|| {
                err(
                    FIELDS[k],
                    format!(
                        "{s} s is past what 64-bit nanoseconds hold: at most {} s",
                        u64::MAX / 1_000_000_000
                    ),
                )
            })
        };
        jobs.push(SwimJob {
            line,
            name: name.to_string(),
            submit: secs(1)?,
            gap: secs(2)?,
            input: Bytes(num(3)?),
            shuffle: Bytes(num(4)?),
            output: Bytes(num(5)?),
        });
    }
    if jobs.is_empty() {
        return Err(TraceError {
            file: file.to_path_buf(),
            line: 0,
            field: String::new(),
            message: "has no job lines".into(),
        });
    }
    Ok(jobs)
}

/// When SWIM jobs arrive.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum SwimArrivals {
    /// At the trace's submit times (relative to the first job taken).
    Trace,
    /// Uniformly at random in `[0, window]` (Co-scheduler Sec. V: 90 min).
    Uniform {
        /// The window.
        window: Nanos,
    },
}

/// A SWIM workload: which trace, how many of its jobs, and how they become
/// ocslab jobs (see the module documentation). The `[workload]` table of an
/// experiment with `kind = "swim"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwimModel {
    /// The trace file (relative to the experiment file).
    #[serde(default)]
    pub trace: PathBuf,
    /// Take the first `jobs` jobs of the trace (all if unset).
    #[serde(default)]
    pub jobs: Option<usize>,
    /// Input block size (NAS: 128 MB).
    #[serde(default = "default_block")]
    pub block_size: Bytes,
    /// Shuffle bytes per reduce task.
    #[serde(default = "default_reduce_input")]
    pub reduce_input: Bytes,
    /// Size a shuffling job's reduces by its shuffle **plus output** bytes
    /// (one reduce per `reduce_input` of them, rounded up), as SWIM's own
    /// replay script does (`GenerateReplayScript`: `round((shuffle + output)
    /// / dataPerReduce)`, at least 1; it rounds to the nearest), instead of
    /// by its shuffle only. Default false.
    #[serde(default)]
    pub reduces_by_shuffle_and_output: bool,
    /// Per-task processing rate of a map.
    #[serde(default = "default_rate")]
    pub map_rate: Bps,
    /// Per-task processing rate of a reduce.
    #[serde(default = "default_rate")]
    pub reduce_rate: Bps,
    /// Fixed cost of every task.
    #[serde(default = "default_overhead")]
    pub task_overhead: Nanos,
    /// Users, assigned uniformly.
    #[serde(default = "default_users")]
    pub users: u32,
    /// Fraction of jobs marked recurring.
    #[serde(default)]
    pub recurring_share: f64,
    /// Replicas per block.
    #[serde(default = "default_replicas")]
    pub replicas: u32,
    /// Extra divisor of every byte size (on top of the topology's `scale`),
    /// e.g. to fit a 3000-machine trace to a smaller cluster. Default 1.
    #[serde(default = "default_scale")]
    pub scale: f64,
    /// Arrivals.
    #[serde(default = "default_arrivals")]
    pub arrivals: SwimArrivals,
    /// Multiplies every arrival time (default 1): 0.5 makes the arrivals
    /// twice as dense while keeping the trace's own pattern of gaps, for a
    /// load sweep.
    #[serde(default = "default_scale")]
    pub arrival_scale: f64,
}

fn default_block() -> Bytes {
    Bytes(128_000_000)
}
fn default_reduce_input() -> Bytes {
    Bytes(1_000_000_000)
}
fn default_rate() -> Bps {
    Bps(400_000_000)
}
fn default_overhead() -> Nanos {
    Nanos::from_millis(1_000)
}
fn default_users() -> u32 {
    1
}
fn default_replicas() -> u32 {
    3
}
fn default_scale() -> f64 {
    1.0
}
fn default_arrivals() -> SwimArrivals {
    SwimArrivals::Trace
}

impl Default for SwimModel {
    fn default() -> Self {
        SwimModel {
            trace: PathBuf::new(),
            jobs: None,
            block_size: default_block(),
            reduce_input: default_reduce_input(),
            reduces_by_shuffle_and_output: false,
            map_rate: default_rate(),
            reduce_rate: default_rate(),
            task_overhead: default_overhead(),
            users: default_users(),
            recurring_share: 0.0,
            replicas: default_replicas(),
            scale: default_scale(),
            arrivals: default_arrivals(),
            arrival_scale: default_scale(),
        }
    }
}

/// A model setting out of range: which field and why.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("field `{field}`: {message}")]
pub struct ModelError {
    /// The field.
    pub field: String,
    /// What is wrong and what would be valid.
    pub message: String,
}

impl SwimModel {
    /// Checks the settings.
    pub fn validate(&self) -> Result<(), ModelError> {
        let bad = |field: &str, message: &str| {
            Err(ModelError {
                field: field.into(),
                message: message.into(),
            })
        };
        if self.block_size.0 == 0 {
            return bad("block_size", "must be more than 0, e.g. \"128MB\"");
        }
        if self.reduce_input.0 == 0 {
            return bad("reduce_input", "must be more than 0, e.g. \"1GB\"");
        }
        if self.map_rate.0 == 0 || self.reduce_rate.0 == 0 {
            return bad(
                "map_rate",
                "map_rate and reduce_rate must be more than 0, e.g. \"400Mbit/s\"",
            );
        }
        if self.jobs == Some(0) {
            return bad("jobs", "must be at least 1 (or leave it out for the whole trace)");
        }
        if self.users == 0 {
            return bad("users", "must be at least 1");
        }
        if self.replicas == 0 {
            return bad("replicas", "must be at least 1 (HDFS default 3)");
        }
        if !(0.0..=1.0).contains(&self.recurring_share) {
            return bad("recurring_share", "must be in 0..=1");
        }
        if !(self.scale.is_finite() && self.scale >= 1.0) {
            return bad("scale", "must be a number >= 1");
        }
        if !(self.arrival_scale.is_finite() && self.arrival_scale > 0.0) {
            return bad(
                "arrival_scale",
                "must be a number > 0, e.g. 0.5 for arrivals twice as dense",
            );
        }
        Ok(())
    }

    /// The first `jobs` (all if unset) trace jobs as ocslab jobs for
    /// `topo`, with ids 0.. in trace order, drawn from `seed`.
    pub fn to_jobs(&self, trace: &[SwimJob], topo: &Topology, seed: u64) -> Result<Vec<Job>, ModelError> {
        self.validate()?;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let take = self.jobs.unwrap_or(trace.len()).min(trace.len());
        let t0 = trace.first().map_or(Nanos::ZERO, |j| j.submit);
        let byte_scale = topo.scale * self.scale;
        let mut jobs = Vec::with_capacity(take);
        for (i, sj) in trace[..take].iter().enumerate() {
            let maps_n = sj.input.0.div_ceil(self.block_size.0).max(1);
            let reduces_n = if sj.shuffle.0 == 0 {
                0
            } else if self.reduces_by_shuffle_and_output {
                sj.shuffle
                    .0
                    .saturating_add(sj.output.0)
                    .div_ceil(self.reduce_input.0)
                    .max(1)
            } else {
                sj.shuffle.0.div_ceil(self.reduce_input.0).max(1)
            };
            for (field, n, kind) in [
                ("block_size", maps_n, "map"),
                ("reduce_input", reduces_n, "reduce"),
            ] {
                if n > MAX_TASKS_PER_JOB {
                    return Err(ModelError {
                        field: field.into(),
                        message: format!(
                            "trace job {} (line {}) would have {n} {kind} tasks, more than {MAX_TASKS_PER_JOB}: raise {field}",
                            sj.name, sj.line
                        ),
                    });
                }
            }
            let time = |bytes: f64, rate: Bps| {
                self.task_overhead + Nanos::from_secs_f64(bytes / rate.bytes_per_sec())
            };
            let mut maps = Vec::with_capacity(maps_n as usize);
            for m in 0..maps_n {
                let nominal = if m + 1 < maps_n {
                    self.block_size.0
                } else {
                    sj.input.0 - self.block_size.0 * (maps_n - 1)
                };
                maps.push(MapTask {
                    input: Bytes(nominal).scaled_down(byte_scale),
                    replicas: place_replicas(topo, self.replicas, &mut rng),
                    duration: time(nominal as f64, self.map_rate),
                    written_by: None,
                });
            }
            let per_reduce = (sj.shuffle.0 + sj.output.0) as f64 / reduces_n.max(1) as f64;
            let reduces = (0..reduces_n)
                .map(|_| ReduceTask {
                    duration: time(per_reduce, self.reduce_rate),
                })
                .collect();
            let shuffle = if sj.input.0 > 0 {
                Shuffle::Ratio(sj.shuffle.0 as f64 / sj.input.0 as f64)
            } else {
                // No input but a shuffle: the one (empty) map emits it all.
                let total = Bytes(sj.shuffle.0).scaled_down(byte_scale).0;
                let n = reduces_n.max(1);
                Shuffle::Matrix(vec![(0..reduces_n)
                    .map(|r| Bytes(total / n + u64::from(r < total % n)))
                    .collect()])
            };
            let arrival = match self.arrivals {
                SwimArrivals::Trace => sj.submit - t0,
                SwimArrivals::Uniform { window } => Nanos(rng.random_range(0..=window.0)),
            };
            let arrival = Nanos((arrival.0 as f64 * self.arrival_scale).round() as u64);
            jobs.push(Job {
                id: JobId(i as u64),
                name: sj.name.clone(),
                user: UserId(rng.random_range(0..self.users)),
                arrival,
                recurring: rng.random::<f64>() < self.recurring_share,
                parents: Vec::new(),
                maps,
                reduces,
                shuffle,
            });
        }
        Ok(jobs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "job0\t9\t9\t1762\t0\t14347\njob1\t18\t9\t300000000\t150000000\t697\n\njob2\t20\t2\t53088744165\t1510005522\t5759777\n";

    fn topo() -> Topology {
        Topology::builder("t", 3, 4)
            .simulation_only()
            .build()
            .expect("valid")
    }

    #[test]
    fn parses_the_six_fields() {
        let jobs = parse(TEXT, Path::new("fb.tsv")).unwrap();
        assert_eq!(jobs.len(), 3);
        assert_eq!(jobs[1].line, 2);
        assert_eq!(jobs[2].line, 4);
        assert_eq!(jobs[1].submit, Nanos(18_000_000_000));
        assert_eq!(jobs[2].input, Bytes(53_088_744_165));
        assert_eq!(jobs[2].output, Bytes(5_759_777));
    }

    #[test]
    fn a_malformed_line_names_its_number_and_field() {
        let bad = TEXT.replace("job1\t18\t9\t300000000", "job1\t18\t9\t3e8");
        let e = parse(&bad, Path::new("fb.tsv")).unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (2, "input_bytes"));
        assert_eq!(
            e.to_string(),
            "fb.tsv:2: field `input_bytes`: \"3e8\" is not a whole non-negative number"
        );
        let short = TEXT.replace("\t2\t53088744165", "\t53088744165");
        let e = parse(&short, Path::new("fb.tsv")).unwrap_err();
        assert_eq!(e.line, 4);
        assert!(e.message.contains("expected 6"), "{e}");
        let e = parse(&TEXT.replace("job0\t9\t9", "job0\t-9\t9"), Path::new("fb.tsv")).unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (1, "submit_s"));
        let e = parse(
            &TEXT.replace("job0\t9\t9", "job0\t9\t18446744074"),
            Path::new("fb.tsv"),
        )
        .unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (1, "gap_s"));
        assert!(e.message.contains("at most 18446744073 s"), "{e}");
    }

    #[test]
    fn jobs_get_maps_per_block_and_reduces_per_gigabyte() {
        let trace = parse(TEXT, Path::new("fb.tsv")).unwrap();
        let jobs = SwimModel::default().to_jobs(&trace, &topo(), 1).unwrap();
        // job0: 1762 B input, no shuffle: one map, map-only.
        assert_eq!((jobs[0].maps.len(), jobs[0].reduces.len()), (1, 0));
        // job1: 300 MB → 3 blocks (128 + 128 + 44 MB), 150 MB shuffle → 1 reduce.
        assert_eq!(jobs[1].maps.len(), 3);
        assert_eq!(jobs[1].maps[2].input, Bytes(44_000_000));
        assert_eq!(jobs[1].reduces.len(), 1);
        assert_eq!(jobs[1].shuffle_bytes(), Bytes(150_000_000));
        // A 128 MB map at 50 MB/s plus 1 s overhead: 3.56 s.
        assert_eq!(jobs[1].maps[0].duration, Nanos(3_560_000_000));
        // job2: 53.1 GB → 415 maps, 1.51 GB shuffle → 2 reduces.
        assert_eq!((jobs[2].maps.len(), jobs[2].reduces.len()), (415, 2));
        assert_eq!(jobs[2].arrival, Nanos(11_000_000_000));
        crate::model::job::validate_jobs(&jobs, &topo()).unwrap();
        assert_eq!(jobs, SwimModel::default().to_jobs(&trace, &topo(), 1).unwrap());
    }

    #[test]
    fn arrival_scale_compresses_arrivals_and_nothing_else() {
        let trace = parse(TEXT, Path::new("fb.tsv")).unwrap();
        let base = SwimModel::default().to_jobs(&trace, &topo(), 1).unwrap();
        let dense = SwimModel {
            arrival_scale: 0.25,
            ..SwimModel::default()
        };
        let jobs = dense.to_jobs(&trace, &topo(), 1).unwrap();
        let arrivals: Vec<_> = jobs.iter().map(|j| j.arrival).collect();
        // Submits at 9, 18 and 20 s: offsets 0, 9 and 11 s, a quarter of them.
        assert_eq!(arrivals, [Nanos(0), Nanos(2_250_000_000), Nanos(2_750_000_000)]);
        for (a, b) in jobs.iter().zip(&base) {
            assert_eq!(
                Job {
                    arrival: b.arrival,
                    ..a.clone()
                },
                *b
            );
        }
        let e = SwimModel {
            arrival_scale: 0.0,
            ..SwimModel::default()
        }
        .to_jobs(&trace, &topo(), 1)
        .unwrap_err();
        assert_eq!(e.field, "arrival_scale");
    }

    #[test]
    fn a_job_of_too_many_tasks_is_refused_naming_the_field() {
        let trace = parse(TEXT, Path::new("fb.tsv")).unwrap();
        let tiny_blocks = SwimModel {
            block_size: Bytes(1),
            ..SwimModel::default()
        };
        let e = tiny_blocks.to_jobs(&trace, &topo(), 1).unwrap_err();
        assert_eq!(e.field, "block_size");
        assert!(
            e.message
                .contains("trace job job1 (line 2) would have 300000000 map tasks"),
            "{e:?}"
        );
        // Shuffle plus output bytes that overflow u64 are not wrapped to a small count.
        let huge = parse(
            "j\t1\t1\t1\t18446744073709551615\t18446744073709551615\n",
            Path::new("h.tsv"),
        )
        .unwrap();
        let by_both = SwimModel {
            reduces_by_shuffle_and_output: true,
            ..SwimModel::default()
        };
        let e = by_both.to_jobs(&huge, &topo(), 1).unwrap_err();
        assert_eq!(e.field, "reduce_input");
    }
}
