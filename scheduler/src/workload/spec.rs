//! The paper workloads as `[workload]` tables of an experiment file: the
//! raw, `deny_unknown_fields` settings of ShuffleWatcher's mix
//! (`kind = "shufflewatcher-mix"`), Dawn's iterative ML chains
//! (`kind = "ml-chains"`) and TPC-H-like query DAGs (`kind = "tpch-queries"`),
//! and Co-scheduler's Sec. V draw from the SWIM trace
//! (`kind = "coscheduler-sec5"`). Each validates its ranges (errors name
//! the field) and turns into the generator's own configuration; the
//! generators themselves live in [`super::shufflewatcher_mix`],
//! [`super::dag`] and [`super::coscheduler_sec5`]. Every size is nominal and
//! divided by the topology's `scale` like the other workloads' sizes
//! (the `coscheduler-sec5` model does it itself).

use super::coscheduler_sec5::{Sec5, Sec5Error};
use super::dag::{self, MlConfig, QueryConfig};
use super::generated::WorkloadError;
use super::shufflewatcher_mix::{self, ClassShares, MixConfig, TaskRates};
use crate::model::job::Job;
use crate::trace::swim::SwimJob;
use ocslab_emulator::{Bps, Bytes, Nanos, Topology};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

fn werr(field: &str, message: impl Into<String>) -> WorkloadError {
    WorkloadError {
        field: field.into(),
        message: message.into(),
    }
}

/// Which of ShuffleWatcher's three mixes (Sec. 5.5).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MixName {
    /// 20% light, 20% medium, 60% heavy.
    Mix1,
    /// 40% / 20% / 40% (Table 1, the default).
    #[default]
    Mix2,
    /// 60% / 20% / 20%.
    Mix3,
}

fn default_block_64() -> Bytes {
    Bytes(64_000_000)
}
fn default_block_128() -> Bytes {
    Bytes(128_000_000)
}
fn default_task_rate() -> Bytes {
    Bytes(8_000_000)
}
fn default_one() -> f64 {
    1.0
}
fn default_max_reduces() -> u32 {
    100
}

/// Per-task processing rates, as bytes per second (`"8MB"` = 8 MB/s).
fn rates(map: Bytes, reduce: Bytes) -> TaskRates {
    TaskRates {
        map_bytes_per_s: map.0 as f64,
        reduce_bytes_per_s: reduce.0 as f64,
    }
}

fn check_rates(map: Bytes, reduce: Bytes) -> Result<(), WorkloadError> {
    if map.0 == 0 {
        return Err(werr("map_bytes_per_s", "must be more than 0, e.g. \"8MB\""));
    }
    if reduce.0 == 0 {
        return Err(werr("reduce_bytes_per_s", "must be more than 0, e.g. \"8MB\""));
    }
    Ok(())
}

fn check_scale(field: &str, v: f64) -> Result<(), WorkloadError> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(werr(field, format!("{v} must be a number above 0, e.g. 0.1")))
    }
}

/// ShuffleWatcher's job mix (`kind = "shufflewatcher-mix"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MixSpec {
    /// Number of jobs (the paper: 300).
    pub jobs: usize,
    /// Number of users (30 for 100 nodes).
    pub users: u32,
    /// Mean of the exponential inter-arrival times (40 s).
    pub mean_gap: Nanos,
    /// Which mix (default mix2).
    #[serde(default)]
    pub mix: MixName,
    /// Multiplies every Table 2 input size (default 1).
    #[serde(default = "default_one")]
    pub size_scale: f64,
    /// HDFS block size (default 64 MB).
    #[serde(default = "default_block_64")]
    pub block_size: Bytes,
    /// Upper bound on a job's reduces (default 100).
    #[serde(default = "default_max_reduces")]
    pub max_reduces: u32,
    /// Map input processed per second by one task (default 8 MB).
    #[serde(default = "default_task_rate")]
    pub map_bytes_per_s: Bytes,
    /// Reduce input processed per second by one task (default 8 MB).
    #[serde(default = "default_task_rate")]
    pub reduce_bytes_per_s: Bytes,
}

impl MixSpec {
    /// Checks ranges.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        if self.jobs == 0 {
            return Err(werr("jobs", "must be at least 1"));
        }
        if self.users == 0 {
            return Err(werr("users", "must be at least 1"));
        }
        if self.mean_gap == Nanos::ZERO {
            return Err(werr("mean_gap", "must be more than 0, e.g. \"40s\""));
        }
        if self.block_size.0 == 0 {
            return Err(werr("block_size", "must be more than 0, e.g. \"64MB\""));
        }
        if self.max_reduces == 0 {
            return Err(werr("max_reduces", "must be at least 1"));
        }
        check_scale("size_scale", self.size_scale)?;
        check_rates(self.map_bytes_per_s, self.reduce_bytes_per_s)
    }

    /// The jobs for `topo`, deterministic for `seed`.
    pub fn jobs(&self, topo: &Topology, seed: u64) -> Vec<Job> {
        let cfg = MixConfig {
            jobs: self.jobs,
            users: self.users,
            mean_interarrival: self.mean_gap,
            shares: match self.mix {
                MixName::Mix1 => ClassShares::MIX1,
                MixName::Mix2 => ClassShares::MIX2,
                MixName::Mix3 => ClassShares::MIX3,
            },
            size_scale: self.size_scale / topo.scale,
            block: self.block_size.scaled_down(topo.scale),
            max_reduces: self.max_reduces,
            seed,
        };
        let mix = shufflewatcher_mix::generate(&cfg);
        shufflewatcher_mix::to_jobs(
            &mix,
            topo,
            cfg.block,
            &rates(self.map_bytes_per_s, self.reduce_bytes_per_s),
            seed,
        )
    }
}

/// Dawn's iterative ML workload (`kind = "ml-chains"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MlSpec {
    /// Benchmark submissions (each a Table I row, about 11 jobs).
    pub benchmarks: usize,
    /// Mean of the exponential times between submissions.
    pub mean_gap: Nanos,
    /// Multiplies every Table I input size (default 1).
    #[serde(default = "default_one")]
    pub size_scale: f64,
    /// HDFS block size (default 128 MB).
    #[serde(default = "default_block_128")]
    pub block_size: Bytes,
    /// Map input processed per second by one task (default 8 MB).
    #[serde(default = "default_task_rate")]
    pub map_bytes_per_s: Bytes,
    /// Reduce input processed per second by one task (default 8 MB).
    #[serde(default = "default_task_rate")]
    pub reduce_bytes_per_s: Bytes,
}

impl MlSpec {
    /// Checks ranges.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        if self.benchmarks == 0 {
            return Err(werr("benchmarks", "must be at least 1"));
        }
        if self.mean_gap == Nanos::ZERO {
            return Err(werr("mean_gap", "must be more than 0, e.g. \"300s\""));
        }
        if self.block_size.0 == 0 {
            return Err(werr("block_size", "must be more than 0, e.g. \"128MB\""));
        }
        check_scale("size_scale", self.size_scale)?;
        check_rates(self.map_bytes_per_s, self.reduce_bytes_per_s)
    }

    /// The jobs for `topo`, deterministic for `seed`.
    pub fn jobs(&self, topo: &Topology, seed: u64) -> Vec<Job> {
        let dag = dag::iterative_ml(&MlConfig {
            benchmarks: self.benchmarks,
            mean_interarrival: self.mean_gap,
            size_scale: self.size_scale / topo.scale,
            seed,
        });
        dag::to_jobs(
            &dag,
            topo,
            self.block_size.scaled_down(topo.scale),
            &rates(self.map_bytes_per_s, self.reduce_bytes_per_s),
            seed,
        )
    }
}

/// Dawn's TPC-H-like query workload (`kind = "tpch-queries"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuerySpec {
    /// Number of queries (22).
    pub queries: usize,
    /// Database size (50 GB).
    pub database: Bytes,
    /// Submissions uniform over this window (25 min).
    pub window: Nanos,
    /// HDFS block size (default 128 MB).
    #[serde(default = "default_block_128")]
    pub block_size: Bytes,
    /// Map input processed per second by one task (default 8 MB).
    #[serde(default = "default_task_rate")]
    pub map_bytes_per_s: Bytes,
    /// Reduce input processed per second by one task (default 8 MB).
    #[serde(default = "default_task_rate")]
    pub reduce_bytes_per_s: Bytes,
}

impl QuerySpec {
    /// Checks ranges.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        if self.queries == 0 {
            return Err(werr("queries", "must be at least 1"));
        }
        if self.database.0 == 0 {
            return Err(werr("database", "must be more than 0, e.g. \"50GB\""));
        }
        if self.block_size.0 == 0 {
            return Err(werr("block_size", "must be more than 0, e.g. \"128MB\""));
        }
        check_rates(self.map_bytes_per_s, self.reduce_bytes_per_s)
    }

    /// The jobs for `topo`, deterministic for `seed`.
    pub fn jobs(&self, topo: &Topology, seed: u64) -> Vec<Job> {
        let dag = dag::tpch_like(&QueryConfig {
            queries: self.queries,
            database: self.database.scaled_down(topo.scale),
            window: self.window,
            seed,
        });
        dag::to_jobs(
            &dag,
            topo,
            self.block_size.scaled_down(topo.scale),
            &rates(self.map_bytes_per_s, self.reduce_bytes_per_s),
            seed,
        )
    }
}

fn default_recurring() -> f64 {
    0.5
}

/// Co-scheduler's Sec. V workload (`kind = "coscheduler-sec5"`): `jobs`
/// records drawn from the SWIM trace with Sec. V's model
/// ([`Sec5::default`]: 256 MB blocks, 1 GB per reduce, 20 MB/s per task,
/// 20 users, uniform arrivals over 90 min); only what the sweeps vary is a
/// field here.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sec5Spec {
    /// The SWIM trace (relative to the experiment file).
    pub trace: PathBuf,
    /// Jobs drawn without replacement (the paper: 1000).
    pub jobs: usize,
    /// Fraction of recurring jobs (default 0.5).
    #[serde(default = "default_recurring")]
    pub recurring_share: f64,
    /// Arrivals uniform over this window (default 90 min).
    #[serde(default)]
    pub window: Option<Nanos>,
    /// The bytes a map or reduce task processes per second (default
    /// `"160Mbit/s"`, 20 MB/s): a task takes 1 s plus its bytes at this rate.
    #[serde(default)]
    pub task_rate: Option<Bps>,
}

impl Sec5Spec {
    /// Checks ranges.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        if self.jobs == 0 {
            return Err(werr("jobs", "must be at least 1 (the paper: 1000)"));
        }
        if !(0.0..=1.0).contains(&self.recurring_share) {
            return Err(werr("recurring_share", "must be in 0.0..=1.0"));
        }
        if self.window == Some(Nanos::ZERO) {
            return Err(werr("window", "must be more than 0, e.g. \"90min\""));
        }
        if self.task_rate == Some(Bps(0)) {
            return Err(werr(
                "task_rate",
                "must be more than 0, e.g. \"160Mbit/s\" (20 MB/s)",
            ));
        }
        Ok(())
    }

    /// The Sec. V settings this table selects.
    pub fn sec5(&self) -> Sec5 {
        let mut s = Sec5 {
            jobs: self.jobs,
            ..Sec5::default()
        };
        s.model.recurring_share = self.recurring_share;
        if let Some(window) = self.window {
            s.model.arrivals = crate::trace::swim::SwimArrivals::Uniform { window };
        }
        if let Some(rate) = self.task_rate {
            s.model.map_rate = rate;
            s.model.reduce_rate = rate;
        }
        s
    }

    /// The jobs for `topo` from the loaded `trace`, deterministic for `seed`.
    pub fn jobs(&self, trace: &[SwimJob], topo: &Topology, seed: u64) -> Result<Vec<Job>, WorkloadError> {
        self.sec5().jobs(trace, topo, seed).map_err(|e| match e {
            Sec5Error::TooFewJobs { .. } => werr("jobs", e.to_string()),
            Sec5Error::Model(m) => werr(&m.field, m.message),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topo() -> Topology {
        Topology::builder("t", 3, 4)
            .simulation_only()
            .oversubscription(5.0)
            .build()
            .expect("valid")
    }

    #[test]
    fn mix_table_parses_and_makes_that_many_jobs_deterministically() {
        let spec: MixSpec =
            toml::from_str("jobs = 20\nusers = 3\nmean_gap = \"40s\"\nmix = \"mix1\"\nsize_scale = 0.01\n")
                .expect("parses");
        spec.validate().expect("valid");
        let a = spec.jobs(&topo(), 4);
        assert_eq!(a.len(), 20);
        assert_eq!(a, spec.jobs(&topo(), 4));
        assert_ne!(a, spec.jobs(&topo(), 5));
        assert!(
            toml::from_str::<MixSpec>("jobs = 2\nusers = 1\nmean_gap = \"4s\"\nmixx = \"mix1\"\n").is_err()
        );
        let bad = MixSpec { users: 0, ..spec };
        assert_eq!(bad.validate().unwrap_err().field, "users");
    }

    #[test]
    fn ml_chains_have_parents_and_queries_cover_the_count() {
        let ml: MlSpec =
            toml::from_str("benchmarks = 3\nmean_gap = \"60s\"\nsize_scale = 0.01\n").expect("parses");
        ml.validate().expect("valid");
        let jobs = ml.jobs(&topo(), 1);
        assert_eq!(jobs.len(), 33, "three benchmarks of 11 jobs each");
        assert!(jobs.iter().filter(|j| !j.parents.is_empty()).count() >= 30);
        let q: QuerySpec =
            toml::from_str("queries = 4\ndatabase = \"1GB\"\nwindow = \"60s\"\n").expect("parses");
        q.validate().expect("valid");
        let jobs = q.jobs(&topo(), 1);
        let roots = jobs.iter().filter(|j| j.parents.is_empty()).count();
        assert!(roots >= 4, "every query has at least one root job, got {roots}");
    }

    #[test]
    fn sec5_rejects_a_share_out_of_range_and_sets_the_share() {
        let s: Sec5Spec =
            toml::from_str("trace = \"fb.tsv\"\njobs = 10\nrecurring_share = 1.5\n").expect("parses");
        assert_eq!(s.validate().unwrap_err().field, "recurring_share");
        let s = Sec5Spec {
            recurring_share: 0.25,
            ..s
        };
        assert_eq!(s.sec5().model.recurring_share, 0.25);
        assert_eq!(s.sec5().jobs, 10);
    }

    #[test]
    fn sec5_task_rate_sets_both_task_kinds_and_refuses_zero() {
        let s: Sec5Spec =
            toml::from_str("trace = \"fb.tsv\"\njobs = 10\ntask_rate = \"800Mbit/s\"\n").expect("parses");
        s.validate().expect("valid");
        let model = s.sec5().model;
        assert_eq!(
            (model.map_rate, model.reduce_rate),
            (Bps(800_000_000), Bps(800_000_000))
        );
        let default = Sec5Spec {
            task_rate: None,
            ..s.clone()
        }
        .sec5()
        .model;
        assert_eq!(default.map_rate, Sec5::default().model.map_rate);
        let zero = Sec5Spec {
            task_rate: Some(Bps(0)),
            ..s
        };
        assert_eq!(zero.validate().unwrap_err().field, "task_rate");
    }
}
