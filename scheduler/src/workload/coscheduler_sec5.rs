//! The workload of Co-scheduler's evaluation (Li & Shen, ToN 2022, Sec. V-A/B):
//! jobs drawn from the SWIM Facebook workload (FB-2010, Chen et al.,
//! MASCOTS'11), a share of them recurring (50% by default) whose
//! characteristics are predictable with an error knob, 20 users, arrivals
//! uniform in [0, 90] minutes.
//!
//! What the trace gives per job: input, shuffle and output bytes. The rest is
//! modelled here, deterministically for a seed:
//! - **Which jobs**: `jobs` records drawn without replacement from the trace by
//!   the seeded RNG ("1000 jobs selected from the workload").
//! - **Map tasks**: one per input block, `ceil(input / block)` with 256 MB
//!   blocks (the block size of Sec. III-A's example), at least one.
//! - **Reduce tasks**: one per `bytes_per_reduce` of shuffle (1 GB: Sec.
//!   III-A's 10 GB TeraSort "typically" has 10 reduces), at least one when the
//!   job shuffles anything; a job that shuffles nothing is map-only.
//! - **Task durations**: the paper replayed each job on a single-node Hadoop
//!   and recorded them; ocslab cannot, so a task takes a launch overhead plus
//!   its bytes at a per-task processing rate: a map reads its block, a reduce
//!   merges its shuffle share and writes its output share. The defaults (1 s
//!   launch, 20 MB/s per map task, 20 MB/s per reduce task) are round figures of
//!   the per-task throughput commonly reported for Hadoop MapReduce on
//!   commodity nodes (a 256 MB block in about 14 s), not fitted to any result.
//! - **Users**: uniform over `users`; **arrivals**: uniform in the window.
//! - **Recurring jobs**: a `recurring_share` of the jobs, chosen at random;
//!   what their prior runs predict is the truth with a relative error, drawn by
//!   the schedulers that use it ([`crate::policy::coscheduler::forecast`];
//!   knob `forecast_error` of Corral and Co-scheduler, default 6.5%, the error
//!   Corral reports), so both see the same forecast of the same job.

use ocslab_emulator::{Bytes, Nanos};
use rand::seq::index::sample;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use thiserror::Error;

/// One job of the SWIM trace: the three sizes it gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SwimSizes {
    /// Map input bytes.
    pub input: Bytes,
    /// Shuffle bytes.
    pub shuffle: Bytes,
    /// Reduce output bytes.
    pub output: Bytes,
}

/// How task durations are modelled (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TaskModel {
    /// Fixed cost of every task (container and JVM start).
    pub launch: Nanos,
    /// Bytes per second a map task processes.
    pub map_bytes_per_sec: f64,
    /// Bytes per second a reduce task processes (shuffle share in plus output share out).
    pub reduce_bytes_per_sec: f64,
}

impl Default for TaskModel {
    fn default() -> TaskModel {
        TaskModel {
            launch: Nanos::from_millis(1_000),
            map_bytes_per_sec: 20e6,
            reduce_bytes_per_sec: 20e6,
        }
    }
}

/// Parameters of the Sec. V workload.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sec5Config {
    /// Jobs to draw.
    pub jobs: usize,
    /// Users.
    pub users: u32,
    /// Share of recurring jobs, in [0, 1].
    pub recurring_share: f64,
    /// Arrivals are uniform in `[0, arrival_window]`.
    pub arrival_window: Nanos,
    /// HDFS block size (one map per block).
    pub block: Bytes,
    /// Shuffle bytes per reduce task.
    pub bytes_per_reduce: Bytes,
    /// Task durations.
    pub tasks: TaskModel,
}

impl Default for Sec5Config {
    fn default() -> Sec5Config {
        Sec5Config {
            jobs: 1000,
            users: 20,
            recurring_share: 0.5,
            arrival_window: Nanos::from_millis(90 * 60 * 1000),
            block: Bytes(256_000_000),
            bytes_per_reduce: Bytes(1_000_000_000),
            tasks: TaskModel::default(),
        }
    }
}

/// A job of the workload.
#[derive(Clone, Debug, PartialEq)]
pub struct Sec5Job {
    /// Job id (0-based, in arrival order).
    pub id: u64,
    /// Index of its record in the trace.
    pub trace_index: usize,
    /// Its user.
    pub user: u32,
    /// When it arrives.
    pub arrival: Nanos,
    /// Its true sizes.
    pub sizes: SwimSizes,
    /// Map tasks.
    pub maps: u32,
    /// Reduce tasks (0 for a map-only job).
    pub reduces: u32,
    /// Duration of each map.
    pub map_time: Nanos,
    /// Duration of each reduce's computation.
    pub reduce_time: Nanos,
    /// Whether it recurs (its characteristics are then predictable).
    pub recurring: bool,
}

/// Why the workload could not be made.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum Sec5Error {
    /// More jobs asked than the trace has.
    #[error("the workload asks for {asked} jobs but the trace has {available}; use at most {available}")]
    TooFewJobs {
        /// Jobs asked for.
        asked: usize,
        /// Jobs in the trace.
        available: usize,
    },
    /// A parameter out of its range.
    #[error("{field} = {value} is out of range: expected {expected}")]
    OutOfRange {
        /// The parameter.
        field: &'static str,
        /// Its value.
        value: f64,
        /// What would be valid.
        expected: &'static str,
    },
}

fn secs(bytes: f64, rate: f64) -> Nanos {
    Nanos::from_secs_f64(bytes / rate)
}

/// Tasks and durations of a job of these sizes.
fn shape(s: &SwimSizes, cfg: &Sec5Config) -> (u32, u32, Nanos, Nanos) {
    let maps = s
        .input
        .0
        .div_ceil(cfg.block.0.max(1))
        .max(1)
        .min(u64::from(u32::MAX)) as u32;
    let reduces = if s.shuffle.0 == 0 {
        0
    } else {
        s.shuffle
            .0
            .div_ceil(cfg.bytes_per_reduce.0.max(1))
            .max(1)
            .min(u64::from(u32::MAX)) as u32
    };
    let map_time = cfg.tasks.launch + secs(s.input.0 as f64 / f64::from(maps), cfg.tasks.map_bytes_per_sec);
    let reduce_time = if reduces == 0 {
        Nanos::ZERO
    } else {
        let per = (s.shuffle.0 as f64 + s.output.0 as f64) / f64::from(reduces);
        cfg.tasks.launch + secs(per, cfg.tasks.reduce_bytes_per_sec)
    };
    (maps, reduces, map_time, reduce_time)
}

/// Draws the workload from `trace` for `seed`.
pub fn generate(trace: &[SwimSizes], cfg: &Sec5Config, seed: u64) -> Result<Vec<Sec5Job>, Sec5Error> {
    if cfg.jobs > trace.len() {
        return Err(Sec5Error::TooFewJobs {
            asked: cfg.jobs,
            available: trace.len(),
        });
    }
    if !(0.0..=1.0).contains(&cfg.recurring_share) {
        let value = cfg.recurring_share;
        return Err(Sec5Error::OutOfRange {
            field: "recurring_share",
            value,
            expected: "0 to 1",
        });
    }
    if cfg.users == 0 {
        return Err(Sec5Error::OutOfRange {
            field: "users",
            value: 0.0,
            expected: "at least 1",
        });
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let picked = sample(&mut rng, trace.len(), cfg.jobs).into_vec();
    let recurring_n = (cfg.recurring_share * cfg.jobs as f64).round() as usize;
    let mut recurring = vec![false; cfg.jobs];
    for i in sample(&mut rng, cfg.jobs, recurring_n.min(cfg.jobs)) {
        recurring[i] = true;
    }
    let mut jobs: Vec<Sec5Job> = picked
        .into_iter()
        .zip(recurring)
        .map(|(ti, rec)| {
            let sizes = trace[ti];
            let (maps, reduces, map_time, reduce_time) = shape(&sizes, cfg);
            let user = rng.random_range(0..cfg.users);
            let arrival = Nanos(rng.random_range(0..=cfg.arrival_window.0));
            Sec5Job {
                id: 0,
                trace_index: ti,
                user,
                arrival,
                sizes,
                maps,
                reduces,
                map_time,
                reduce_time,
                recurring: rec,
            }
        })
        .collect();
    jobs.sort_by_key(|j| (j.arrival, j.trace_index));
    for (i, j) in jobs.iter_mut().enumerate() {
        j.id = i as u64;
    }
    Ok(jobs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace(n: u64) -> Vec<SwimSizes> {
        (0..n)
            .map(|i| SwimSizes {
                input: Bytes(i * 300_000_000),
                shuffle: Bytes(if i % 3 == 0 { 0 } else { i * 150_000_000 }),
                output: Bytes(i * 1_000_000),
            })
            .collect()
    }

    #[test]
    fn tasks_and_durations_follow_the_documented_model() {
        let cfg = Sec5Config::default();
        // 1 GB in, 2.5 GB shuffle, 0.5 GB out: 4 maps of 250 MB, 3 reduces.
        let s = SwimSizes {
            input: Bytes(1_000_000_000),
            shuffle: Bytes(2_500_000_000),
            output: Bytes(500_000_000),
        };
        let (m, r, mt, rt) = shape(&s, &cfg);
        assert_eq!((m, r), (4, 3));
        assert_eq!(mt, Nanos::from_millis(1_000 + 12_500));
        assert_eq!(rt, Nanos::from_millis(1_000 + 50_000));
        let empty = SwimSizes {
            input: Bytes(0),
            shuffle: Bytes(0),
            output: Bytes(0),
        };
        assert_eq!(
            shape(&empty, &cfg),
            (1, 0, Nanos::from_millis(1_000), Nanos::ZERO)
        );
    }

    #[test]
    fn shares_users_window_and_determinism() {
        let t = trace(400);
        let cfg = Sec5Config {
            jobs: 200,
            ..Sec5Config::default()
        };
        let a = generate(&t, &cfg, 42).expect("valid");
        assert_eq!(a, generate(&t, &cfg, 42).expect("valid"));
        assert_ne!(a, generate(&t, &cfg, 43).expect("valid"));
        assert_eq!(a.iter().filter(|j| j.recurring).count(), 100);
        assert!(a.iter().all(|j| j.user < 20 && j.arrival <= cfg.arrival_window));
        assert!(a.windows(2).all(|w| w[0].arrival <= w[1].arrival));
        let mut idx: Vec<usize> = a.iter().map(|j| j.trace_index).collect();
        idx.dedup();
        idx.sort_unstable();
        idx.dedup();
        assert_eq!(idx.len(), 200, "drawn without replacement");
        let none = generate(
            &t,
            &Sec5Config {
                recurring_share: 0.0,
                ..cfg
            },
            1,
        )
        .expect("valid");
        assert!(none.iter().all(|j| !j.recurring));
        assert!(matches!(
            generate(&t, &Sec5Config { jobs: 401, ..cfg }, 1),
            Err(Sec5Error::TooFewJobs {
                asked: 401,
                available: 400
            })
        ));
    }
}
