//! Engine configuration: the cluster-side knobs that are not policies —
//! reduce slow-start, slot types, whether remote maps read their input over
//! the network, whether a job's shuffle waits for all its reduces to be
//! placed, how many hosts a reduce fetches from at once, host speeds, an
//! optional heartbeat, and the seed of where a child job's input blocks are
//! written and of which host a reduce's fetcher goes to next.

use crate::{HostId, Nanos};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How a host's slots are typed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum SlotConfig {
    /// Every slot may run a map or a reduce (YARN containers); a host has
    /// the topology's `slots_per_host` of them.
    Shared,
    /// Hadoop 1 style: fixed map and reduce slots per host.
    Split {
        /// Map slots per host.
        map: u32,
        /// Reduce slots per host.
        reduce: u32,
    },
}

/// The engine's knobs. `Default` is Hadoop's behaviour on a homogeneous
/// cluster: slow-start 0.05, shared slots, remote maps read their input
/// over the network, the shuffle starts as soon as a reduce and a finished
/// map meet, a reduce fetches from every ready host at once, all hosts at
/// speed 1, no heartbeat.
#[derive(Clone, Debug, PartialEq)]
pub struct EngineConfig {
    /// Fraction of a job's maps that must be done before its reduces may
    /// start (Hadoop's `mapreduce.job.reduce.slowstart.completedmaps`,
    /// default 0.05; 1.0 = after all maps, as Co-scheduler proposes).
    /// Reduces become runnable once `maps_done >= ceil(slow_start × maps)`.
    pub slow_start: f64,
    /// Slot types.
    pub slots: SlotConfig,
    /// Under shared slots, the largest fraction of all slots that reduces
    /// of jobs with unfinished maps may hold (Hadoop MR2's
    /// `yarn.app.mapreduce.am.job.reduce.rampup.limit`, default 0.5), so
    /// reduces waiting for maps can never take every slot and deadlock.
    pub reduce_rampup_limit: f64,
    /// When true, a map placed on a host without a replica of its block
    /// first reads the block from the nearest replica (same rack if any) as
    /// a flow of the job's input coflow; when false, input reads are free.
    pub input_reads: bool,
    /// When true, no shuffle flow of a job starts before all its reduces
    /// have been placed (Co-scheduler Sec. IV-A); when false, a flow starts
    /// as soon as its map is done and its reduce is running (Hadoop).
    pub hold_shuffle_until_reduces_placed: bool,
    /// When set, a reduce attempt has at most this many fetch flows in
    /// flight, each from one source host carrying every partition ready
    /// there (Hadoop's `mapreduce.reduce.shuffle.parallelcopies` fetcher
    /// threads, default 5 in Hadoop 1 and 2); the next host is drawn at
    /// random among those with partitions ready and no flow in flight, as
    /// Hadoop's `ShuffleSchedulerImpl.getHost` does, seeded by
    /// `placement_seed`. When unset, a reduce fetches from every such host
    /// at once (no limit). At least 1.
    pub parallel_copies: Option<u32>,
    /// Relative compute speed of hosts (default 1.0): a task's compute time
    /// on host h is its duration ÷ speed(h).
    pub host_speed: BTreeMap<HostId, f64>,
    /// When set, free slots are offered again this long after the last
    /// offer round while runnable work waits (Hadoop's periodic
    /// heartbeats, for policies that count skipped offers). When unset, the
    /// policy's own heartbeat applies (`TaskPolicy::heartbeat`: NAS's 1 s),
    /// and without one offers happen on events and on policy wake-ups only.
    pub heartbeat: Option<Nanos>,
    /// Simulation only: the shuffle fetches of one job from one host to
    /// another that start at the same instant (reduces of the job on the
    /// same host, fetching from the same map host) go as one flow of
    /// weight w, the number of fetches ([`crate::model::coflow::FlowSpec::weight`]):
    /// it takes w shares of max-min fair sharing, and its end delivers
    /// every fetch's partitions at once. The fetches it merges differ by a
    /// few bytes (an even split of each map's output) and share a path, so
    /// under fair sharing they would finish within that difference of each
    /// other. Bounds the flows in flight by the host pairs instead of
    /// reduces × map hosts. The emulation driver refuses it (real
    /// fetches are separate connections).
    pub merge_fetches: bool,
    /// Keep a record of every flow (for `flows.csv`). Large trace runs may
    /// turn this off to save memory; per-coflow records are kept either way.
    pub record_flows: bool,
    /// Seeds the HDFS choice of the second and third replicas of blocks a
    /// child job reads from its parents' output (placed when the child
    /// becomes runnable) and, under `parallel_copies`, the fetchers' choice
    /// of the next source host (the experiment's seed).
    pub placement_seed: u64,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            slow_start: 0.05,
            slots: SlotConfig::Shared,
            reduce_rampup_limit: 0.5,
            input_reads: true,
            hold_shuffle_until_reduces_placed: false,
            parallel_copies: None,
            host_speed: BTreeMap::new(),
            heartbeat: None,
            merge_fetches: false,
            record_flows: true,
            placement_seed: 0,
        }
    }
}
