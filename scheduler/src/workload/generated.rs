//! Synthetic job mixes, deterministic for a seed.
//!
//! A [`GeneratedWorkload`] draws `jobs` jobs from weighted [`JobClass`]es
//! (by default a shuffle-heavy and a shuffle-light class, the mix
//! ShuffleWatcher and NAS argue about), assigns users uniformly, draws
//! arrivals from a Poisson process or uniformly over a window, and places
//! each input block's replicas as HDFS's default policy does
//! ([`place_replicas`]). Sizes are nominal (as a paper gives them) and
//! divided by the topology's `scale`, like every size in ocslab; task
//! durations are not scaled (times are preserved).

use crate::model::job::{Job, JobId, MapTask, ReduceTask, Shuffle, UserId, MAX_TASKS_PER_JOB};
pub use ocslab_core::model::hdfs::replicas_after_writer;
use ocslab_emulator::{Bytes, Nanos, Topology};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// How jobs arrive.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "process", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Arrivals {
    /// A Poisson process: exponential gaps of mean `mean_gap`, first job at 0.
    Poisson {
        /// Mean time between arrivals.
        mean_gap: Nanos,
    },
    /// Uniformly at random in `[0, window]` (Co-scheduler Sec. V: 90 min).
    Uniform {
        /// The window.
        window: Nanos,
    },
    /// Every job at time 0 (a batch, for makespan experiments).
    Batch,
}

/// One class of jobs: ranges are inclusive, drawn uniformly.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobClass {
    /// Label (jobs carry it as their name).
    pub name: String,
    /// Relative weight among classes.
    pub share: f64,
    /// Map count range.
    pub maps: [u32; 2],
    /// Reduce count range.
    pub reduces: [u32; 2],
    /// Shuffle bytes ÷ input bytes.
    pub shuffle_ratio: f64,
    /// Map compute time range.
    pub map_duration: [Nanos; 2],
    /// Reduce compute time range.
    pub reduce_duration: [Nanos; 2],
}

/// A synthetic workload (the `[workload]` table with `kind = "generated"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeneratedWorkload {
    /// Number of jobs.
    pub jobs: u32,
    /// Number of users; each job's user is drawn uniformly.
    #[serde(default = "default_users")]
    pub users: u32,
    /// Arrival process.
    pub arrivals: Arrivals,
    /// Input block size (one map per block), nominal.
    #[serde(default = "default_block")]
    pub block_size: Bytes,
    /// Replicas per block (HDFS: 3), at most the number of hosts.
    #[serde(default = "default_replicas")]
    pub replicas: u32,
    /// Fraction of jobs marked recurring.
    #[serde(default)]
    pub recurring_share: f64,
    /// Job classes (default: [`default_classes`]).
    #[serde(default = "default_classes")]
    pub classes: Vec<JobClass>,
}

fn default_users() -> u32 {
    1
}
fn default_block() -> Bytes {
    Bytes(128_000_000)
}
fn default_replicas() -> u32 {
    3
}

/// The default mix: 30% shuffle-heavy jobs (shuffle = input, 10-50 maps,
/// 5-20 reduces) and 70% shuffle-light ones (shuffle = 1% of input, 2-20
/// maps, 1-5 reduces), tasks of 10-40 s.
pub fn default_classes() -> Vec<JobClass> {
    vec![
        JobClass {
            name: "shuffle-heavy".into(),
            share: 0.3,
            maps: [10, 50],
            reduces: [5, 20],
            shuffle_ratio: 1.0,
            map_duration: [Nanos::from_millis(20_000), Nanos::from_millis(40_000)],
            reduce_duration: [Nanos::from_millis(20_000), Nanos::from_millis(40_000)],
        },
        JobClass {
            name: "shuffle-light".into(),
            share: 0.7,
            maps: [2, 20],
            reduces: [1, 5],
            shuffle_ratio: 0.01,
            map_duration: [Nanos::from_millis(10_000), Nanos::from_millis(30_000)],
            reduce_duration: [Nanos::from_millis(10_000), Nanos::from_millis(20_000)],
        },
    ]
}

/// A workload setting that cannot work: which field and why.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("field `{field}`: {message}")]
pub struct WorkloadError {
    /// Dotted field under `workload`, e.g. `classes[1].maps`.
    pub field: String,
    /// What is wrong and what would be valid.
    pub message: String,
}

fn werr(field: impl Into<String>, message: impl Into<String>) -> WorkloadError {
    WorkloadError {
        field: field.into(),
        message: message.into(),
    }
}

/// The most jobs a generated workload may have.
pub const MAX_GENERATED_JOBS: u64 = 1_000_000;

impl GeneratedWorkload {
    /// Checks ranges and shares.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        if self.jobs == 0 || u64::from(self.jobs) > MAX_GENERATED_JOBS {
            return Err(werr(
                "jobs",
                format!("must be from 1 to {MAX_GENERATED_JOBS} (got {})", self.jobs),
            ));
        }
        if self.users == 0 {
            return Err(werr("users", "must be at least 1"));
        }
        if self.replicas == 0 {
            return Err(werr("replicas", "must be at least 1 (HDFS default 3)"));
        }
        if self.block_size.0 == 0 {
            return Err(werr("block_size", "must be more than 0, e.g. \"128MB\""));
        }
        if !(0.0..=1.0).contains(&self.recurring_share) {
            return Err(werr("recurring_share", "must be in 0..=1"));
        }
        match self.arrivals {
            Arrivals::Poisson { mean_gap } if mean_gap.0 == 0 => {
                return Err(werr("arrivals.mean_gap", "must be more than 0, e.g. \"10s\""))
            }
            _ => {}
        }
        if self.classes.is_empty() {
            return Err(werr("classes", "needs at least one job class"));
        }
        for (i, c) in self.classes.iter().enumerate() {
            let f = |k: &str| format!("classes[{i}].{k}");
            if !(c.share.is_finite() && c.share > 0.0) {
                return Err(werr(f("share"), "must be a number > 0"));
            }
            if c.maps[0] == 0 || c.maps[0] > c.maps[1] || u64::from(c.maps[1]) > MAX_TASKS_PER_JOB {
                return Err(werr(
                    f("maps"),
                    format!("must be [low, high] with 1 <= low <= high <= {MAX_TASKS_PER_JOB}"),
                ));
            }
            if c.reduces[0] > c.reduces[1] || u64::from(c.reduces[1]) > MAX_TASKS_PER_JOB {
                return Err(werr(
                    f("reduces"),
                    format!("must be [low, high] with low <= high <= {MAX_TASKS_PER_JOB}"),
                ));
            }
            if !(c.shuffle_ratio.is_finite() && c.shuffle_ratio >= 0.0) {
                return Err(werr(f("shuffle_ratio"), "must be a number >= 0"));
            }
            if c.map_duration[0] > c.map_duration[1] {
                return Err(werr(f("map_duration"), "must be [low, high] with low <= high"));
            }
            if c.reduce_duration[0] > c.reduce_duration[1] {
                return Err(werr(f("reduce_duration"), "must be [low, high] with low <= high"));
            }
        }
        Ok(())
    }

    /// The jobs, for `topo` (sizes divided by its scale), drawn from `seed`.
    pub fn generate(&self, topo: &Topology, seed: u64) -> Result<Vec<Job>, WorkloadError> {
        self.validate()?;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let total_share: f64 = self.classes.iter().map(|c| c.share).sum();
        let block = self.block_size.scaled_down(topo.scale);
        let mut t = Nanos::ZERO;
        let mut jobs = Vec::with_capacity(self.jobs as usize);
        for j in 0..self.jobs {
            let arrival = match self.arrivals {
                Arrivals::Batch => Nanos::ZERO,
                Arrivals::Uniform { window } => Nanos(rng.random_range(0..=window.0)),
                Arrivals::Poisson { mean_gap } => {
                    if j > 0 {
                        let u: f64 = rng.random();
                        t += Nanos::from_secs_f64(-mean_gap.as_secs_f64() * (1.0 - u).ln());
                    }
                    t
                }
            };
            let mut pick = rng.random::<f64>() * total_share;
            let class = self
                .classes
                .iter()
                .find(|c| {
                    pick -= c.share;
                    pick < 0.0
                })
                .unwrap_or(&self.classes[self.classes.len() - 1]);
            let maps_n = rng.random_range(class.maps[0]..=class.maps[1]);
            let reduces_n = rng.random_range(class.reduces[0]..=class.reduces[1]);
            let maps = (0..maps_n)
                .map(|_| MapTask {
                    input: block,
                    replicas: place_replicas(topo, self.replicas, &mut rng),
                    duration: draw(&mut rng, class.map_duration),
                    written_by: None,
                })
                .collect();
            let reduces = (0..reduces_n)
                .map(|_| ReduceTask {
                    duration: draw(&mut rng, class.reduce_duration),
                })
                .collect();
            let user = UserId(rng.random_range(0..self.users));
            let recurring = rng.random::<f64>() < self.recurring_share;
            jobs.push(Job {
                id: JobId(j as u64),
                name: class.name.clone(),
                user,
                arrival,
                recurring,
                parents: Vec::new(),
                maps,
                reduces,
                shuffle: Shuffle::Ratio(class.shuffle_ratio),
            });
        }
        Ok(jobs)
    }
}

fn draw(rng: &mut ChaCha8Rng, range: [Nanos; 2]) -> Nanos {
    Nanos(rng.random_range(range[0].0..=range[1].0))
}

pub use crate::model::hdfs::place_replicas;

#[cfg(test)]
mod tests {
    use super::*;

    fn topo(racks: u32, hosts: u32) -> Topology {
        Topology::builder("t", racks, hosts)
            .simulation_only()
            .build()
            .expect("valid")
    }

    fn workload() -> GeneratedWorkload {
        GeneratedWorkload {
            jobs: 30,
            users: 3,
            arrivals: Arrivals::Poisson {
                mean_gap: Nanos::from_millis(10_000),
            },
            block_size: default_block(),
            replicas: 3,
            recurring_share: 0.5,
            classes: default_classes(),
        }
    }

    #[test]
    fn same_seed_same_jobs_other_seed_other_jobs() {
        let t = topo(4, 4);
        let a = workload().generate(&t, 7).unwrap();
        assert_eq!(a, workload().generate(&t, 7).unwrap());
        assert_ne!(a, workload().generate(&t, 8).unwrap());
        assert!(a.windows(2).all(|w| w[0].arrival <= w[1].arrival));
        crate::model::job::validate_jobs(&a, &t).unwrap();
    }

    #[test]
    fn replicas_follow_hdfs_rack_awareness() {
        let t = topo(5, 4);
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for _ in 0..200 {
            let r = place_replicas(&t, 3, &mut rng);
            assert_eq!(r.len(), 3);
            assert_ne!(r[0].rack, r[1].rack, "{r:?}");
            assert_eq!(r[1].rack, r[2].rack, "{r:?}");
            assert_ne!(r[1], r[2]);
        }
        // One rack of two hosts: at most two distinct replicas.
        let r = place_replicas(&topo(1, 2), 3, &mut rng);
        assert_eq!(r.len(), 2);
        assert_ne!(r[0], r[1]);
    }

    #[test]
    fn bad_class_range_names_the_field() {
        let mut w = workload();
        w.classes[1].maps = [5, 2];
        assert_eq!(w.validate().unwrap_err().field, "classes[1].maps");
    }

    #[test]
    fn counts_that_cannot_be_allocated_are_refused() {
        let mut w = workload();
        w.classes[0].maps = [1, u32::MAX];
        let e = w.validate().unwrap_err();
        assert_eq!(e.field, "classes[0].maps");
        assert!(e.message.contains("<= 100000"), "{e}");
        let mut w = workload();
        w.classes[0].reduces = [0, 100_001];
        assert_eq!(w.validate().unwrap_err().field, "classes[0].reduces");
        let mut w = workload();
        w.jobs = u32::MAX;
        let e = w.validate().unwrap_err();
        assert_eq!(e.field, "jobs");
        assert!(e.message.contains("from 1 to 1000000"), "{e}");
    }
}
