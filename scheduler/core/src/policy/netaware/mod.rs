//! What the EPS-network-aware task schedulers (ShuffleWatcher, NAS, Dawn) see
//! when a slot frees: a plain-data snapshot of the cluster ([`NetView`]) and
//! the answer they give ([`TaskPick`]).
//!
//! The three policies are pure functions of this snapshot plus their own
//! small state (skip counters, per-job plans): no clock, no I/O.
//! [`engine_view`] builds a [`NetView`] from the engine's cluster view and
//! [`policies`] wraps the three as engine `TaskPolicy`s; tests build views
//! by hand.
//!
//! Conventions shared by the three papers and used throughout:
//! - a *rack* is an index `0..racks`; a host is an [`HostId`];
//! - *cross-rack utilization* of a rack is the larger of its uplink and
//!   downlink load over the uplink capacity, in `0.0..=1.0` (a sample the
//!   engine takes from the network model or the fabric);
//! - a job's *input on a rack* counts the bytes of its input blocks that have
//!   at least one replica on that rack (so with 3 replicas the per-rack sums
//!   add up to more than the input).

pub mod engine_view;
pub mod policies;

use crate::{Bytes, HostId, Nanos};
use std::collections::BTreeMap;

/// A rack index, `0..racks`.
pub type Rack = u32;

/// A job's identity as the policies see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct JobKey(pub u64);

/// A user's identity as the policies see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UserKey(pub u32);

/// Which kind of task the free slot may run (Hadoop 1 has typed map and
/// reduce slots; YARN containers run either).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotKind {
    /// Only a map task.
    Map,
    /// Only a reduce task.
    Reduce,
    /// Either.
    Any,
}

impl SlotKind {
    /// Whether a map task fits this slot.
    pub fn takes_map(self) -> bool {
        matches!(self, SlotKind::Map | SlotKind::Any)
    }
    /// Whether a reduce task fits this slot.
    pub fn takes_reduce(self) -> bool {
        matches!(self, SlotKind::Reduce | SlotKind::Any)
    }
}

/// A map task that has not started.
#[derive(Clone, Debug, PartialEq)]
pub struct PendingMap {
    /// The map's index within its job.
    pub index: u32,
    /// Bytes of its input block.
    pub input: Bytes,
    /// Hosts holding a replica of its input block.
    pub replicas: Vec<HostId>,
}

/// How close a map's input is to a host.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Locality {
    /// A replica is on the host itself.
    Node,
    /// A replica is on the host's rack.
    Rack,
    /// Every replica is on another rack.
    Remote,
}

impl PendingMap {
    /// The locality this map would have on `host`.
    pub fn locality(&self, host: HostId) -> Locality {
        if self.replicas.contains(&host) {
            Locality::Node
        } else if self.replicas.iter().any(|r| r.rack == host.rack) {
            Locality::Rack
        } else {
            Locality::Remote
        }
    }
}

/// One job in the cluster (arrived, its parents finished, not yet done).
#[derive(Clone, Debug, PartialEq)]
pub struct JobState {
    /// The job.
    pub id: JobKey,
    /// Its user.
    pub user: UserKey,
    /// When it was submitted.
    pub arrival: Nanos,
    /// Number of map tasks in all.
    pub maps_total: u32,
    /// Map tasks finished.
    pub maps_done: u32,
    /// Map tasks not yet started, in index order.
    pub pending_maps: Vec<PendingMap>,
    /// Map tasks running now: (host, input bytes). A view built for one
    /// offer may list only those on the offered host (all NAS needs).
    pub running_maps: Vec<(HostId, Bytes)>,
    /// Bytes of input of all its maps.
    pub input_total: Bytes,
    /// Per rack: input bytes with a replica on that rack (all maps).
    pub input_per_rack: Vec<Bytes>,
    /// Input bytes of the finished maps.
    pub done_map_input: Bytes,
    /// Output (shuffle) bytes of the finished maps.
    pub done_map_output: Bytes,
    /// Mean of output/input over the finished maps (NAS's predictor
    /// averages per-task ratios), `None` before the first map finishes.
    pub mean_map_ratio: Option<f64>,
    /// Shuffle/input ratio known in advance (a recurring job, or given by
    /// the user), if any.
    pub known_ratio: Option<f64>,
    /// Per rack: map output bytes stored there (finished maps).
    pub map_output_per_rack: Vec<Bytes>,
    /// Map output bytes stored on the offered host.
    pub map_output_on_host: Bytes,
    /// Number of reduce tasks in all.
    pub reduces_total: u32,
    /// Reduce tasks not yet started.
    pub reduces_pending: u32,
    /// Per rack: reduce tasks started there (running or done).
    pub reduces_per_rack: Vec<u32>,
    /// Whether the engine lets this job's reduces start (slow-start met).
    pub reduces_ready: bool,
    /// Bytes the job will write as its output (its children's input).
    pub expected_output: Bytes,
}

impl JobState {
    /// A job with nothing placed yet, for `racks` racks; fill the rest in.
    pub fn new(id: JobKey, user: UserKey, arrival: Nanos, racks: u32) -> JobState {
        JobState {
            id,
            user,
            arrival,
            maps_total: 0,
            maps_done: 0,
            pending_maps: Vec::new(),
            running_maps: Vec::new(),
            input_total: Bytes(0),
            input_per_rack: vec![Bytes(0); racks as usize],
            done_map_input: Bytes(0),
            done_map_output: Bytes(0),
            mean_map_ratio: None,
            known_ratio: None,
            map_output_per_rack: vec![Bytes(0); racks as usize],
            map_output_on_host: Bytes(0),
            reduces_total: 0,
            reduces_pending: 0,
            reduces_per_rack: vec![0; racks as usize],
            reduces_ready: false,
            expected_output: Bytes(0),
        }
    }

    /// Map output bytes stored on each of `racks` racks.
    pub fn map_output_per_rack(&self, racks: u32) -> Vec<Bytes> {
        let mut per = self.map_output_per_rack.clone();
        per.resize(racks as usize, Bytes(0));
        per
    }

    /// Records `bytes` of map output written on `host` (hand-made views).
    pub fn add_map_output(&mut self, host: HostId, bytes: Bytes) {
        let r = host.rack as usize;
        if self.map_output_per_rack.len() <= r {
            self.map_output_per_rack.resize(r + 1, Bytes(0));
        }
        self.map_output_per_rack[r] += bytes;
    }

    /// Whether a reduce of this job may start now.
    pub fn has_ready_reduce(&self) -> bool {
        self.reduces_ready && self.reduces_pending > 0
    }

    /// Whether every map has finished.
    pub fn maps_finished(&self) -> bool {
        self.maps_done >= self.maps_total
    }

    /// The pending map closest to `host` (node-local, then rack-local, then
    /// any), lowest index first within a level.
    pub fn closest_map(&self, host: HostId) -> Option<(&PendingMap, Locality)> {
        self.pending_maps
            .iter()
            .map(|m| (m, m.locality(host)))
            .min_by_key(|(m, l)| (*l, m.index))
    }
}

/// The dependency graph between jobs (Dawn's matrix D): edge (x, y) means
/// job y reads the output of job x.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JobDag {
    /// For each job, the jobs it reads from.
    pub parents: BTreeMap<JobKey, Vec<JobKey>>,
    /// For each job, the jobs that read from it.
    pub children: BTreeMap<JobKey, Vec<JobKey>>,
}

impl JobDag {
    /// Adds the edge parent → child.
    pub fn add_edge(&mut self, parent: JobKey, child: JobKey) {
        self.children.entry(parent).or_default().push(child);
        self.parents.entry(child).or_default().push(parent);
    }
    /// `Next_x`: the jobs depending on `x`.
    pub fn next(&self, x: JobKey) -> &[JobKey] {
        self.children.get(&x).map_or(&[], Vec::as_slice)
    }
    /// `Prev_{x,y}`: the parents of `y` other than `x`.
    pub fn prev_except(&self, x: JobKey, y: JobKey) -> impl Iterator<Item = JobKey> + '_ {
        self.parents
            .get(&y)
            .into_iter()
            .flatten()
            .copied()
            .filter(move |z| *z != x)
    }
}

/// The cluster as the network-aware policies see it at one offer.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NetView {
    /// The time of the offer.
    pub now: Nanos,
    /// Number of racks.
    pub racks: u32,
    /// Hosts per rack.
    pub hosts_per_rack: u32,
    /// Task slots (containers) per host.
    pub slots_per_host: u32,
    /// Users in the order the fairness policy offers the slot (the most
    /// below its share first).
    pub users: Vec<UserKey>,
    /// The jobs in the cluster, in arrival order.
    pub jobs: Vec<JobState>,
    /// Per rack: the latest cross-rack utilization sample, `0.0..=1.0`.
    pub cross_rack_utilization: Vec<f64>,
    /// Dependencies between jobs (empty for independent jobs).
    pub dag: JobDag,
    /// Per job that has written output (finished or still reducing): the
    /// output bytes on each rack.
    pub outputs: BTreeMap<JobKey, Vec<Bytes>>,
}

impl NetView {
    /// A view of an empty cluster.
    pub fn new(racks: u32, hosts_per_rack: u32, slots_per_host: u32) -> NetView {
        NetView {
            now: Nanos(0),
            racks,
            hosts_per_rack,
            slots_per_host,
            users: Vec::new(),
            jobs: Vec::new(),
            cross_rack_utilization: vec![0.0; racks as usize],
            dag: JobDag::default(),
            outputs: BTreeMap::new(),
        }
    }

    /// The cross-rack utilization of `rack` (0 if unknown).
    pub fn utilization(&self, rack: Rack) -> f64 {
        self.cross_rack_utilization
            .get(rack as usize)
            .copied()
            .unwrap_or(0.0)
    }

    /// A job by key.
    pub fn job(&self, id: JobKey) -> Option<&JobState> {
        self.jobs.iter().find(|j| j.id == id)
    }

    /// The jobs of `user`, in arrival order.
    pub fn jobs_of(&self, user: UserKey) -> impl Iterator<Item = &JobState> + '_ {
        self.jobs.iter().filter(move |j| j.user == user)
    }
}

/// A policy's answer: which task the free slot runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskPick {
    /// Map task `index` of `job`.
    Map {
        /// The job.
        job: JobKey,
        /// The map's index.
        index: u32,
    },
    /// Any pending reduce of `job` (reduces of a job are interchangeable:
    /// each holds one key range).
    Reduce {
        /// The job.
        job: JobKey,
    },
}

impl TaskPick {
    /// The job the task belongs to.
    pub fn job(self) -> JobKey {
        match self {
            TaskPick::Map { job, .. } | TaskPick::Reduce { job } => job,
        }
    }
}

/// Splits `total` items over buckets in proportion to `weights`, rounding
/// with the largest-remainder method so the parts sum to `total` exactly;
/// ties go to the larger weight, then the lower index. All-zero weights
/// split evenly.
pub fn proportional_split(total: u32, weights: &[f64]) -> Vec<u32> {
    let n = weights.len();
    if n == 0 {
        return Vec::new();
    }
    let sum: f64 = weights.iter().filter(|w| w.is_finite() && **w > 0.0).sum();
    let shares: Vec<f64> = if sum > 0.0 {
        weights
            .iter()
            .map(|w| if w.is_finite() && *w > 0.0 { *w / sum } else { 0.0 })
            .collect()
    } else {
        vec![1.0 / n as f64; n]
    };
    let exact: Vec<f64> = shares.iter().map(|s| s * f64::from(total)).collect();
    let mut parts: Vec<u32> = exact.iter().map(|e| e.floor() as u32).collect();
    let given: u32 = parts.iter().sum();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| {
        let ra = exact[a] - exact[a].floor();
        let rb = exact[b] - exact[b].floor();
        rb.total_cmp(&ra)
            .then(shares[b].total_cmp(&shares[a]))
            .then(a.cmp(&b))
    });
    for &i in order.iter().cycle().take(total.saturating_sub(given) as usize) {
        parts[i] += 1;
    }
    parts
}

/// Expected cross-rack shuffle bytes of a job whose map output lies
/// `inter_per_rack` and whose reduces are `reduces_per_rack`: each reduce
/// fetches an equal share of every rack's output, and the share of racks
/// other than its own crosses the core.
pub fn cross_rack_shuffle(inter_per_rack: &[Bytes], reduces_per_rack: &[u32]) -> Bytes {
    let total: u64 = inter_per_rack.iter().map(|b| b.0).sum();
    let reduces: u64 = reduces_per_rack.iter().map(|&r| u64::from(r)).sum();
    if reduces == 0 {
        return Bytes(0);
    }
    let crossing: u128 = reduces_per_rack
        .iter()
        .zip(inter_per_rack.iter().chain(std::iter::repeat(&Bytes(0))))
        .map(|(&r, b)| u128::from(r) * u128::from(total - b.0.min(total)))
        .sum();
    Bytes((crossing / u128::from(reduces)) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proportional_split_sums_to_total_and_follows_weights() {
        assert_eq!(proportional_split(10, &[90.0, 10.0]), vec![9, 1]);
        assert_eq!(proportional_split(10, &[1.0, 1.0, 1.0]), vec![4, 3, 3]);
        assert_eq!(proportional_split(7, &[0.0, 0.0]), vec![4, 3]);
        // 1.5, 0.9, 0.6: floors 1, 0, 0; the two largest remainders (0.9, 0.6) get one each.
        assert_eq!(proportional_split(3, &[0.5, 0.3, 0.2]), vec![1, 1, 1]);
        let parts = proportional_split(37, &[3.3, 1.1, 7.7, 0.0, 2.2]);
        assert_eq!(parts.iter().sum::<u32>(), 37);
        assert_eq!(parts[3], 0);
    }

    #[test]
    fn locality_levels() {
        let m = PendingMap {
            index: 0,
            input: Bytes(1),
            replicas: vec![HostId::new(0, 1), HostId::new(2, 0)],
        };
        assert_eq!(m.locality(HostId::new(0, 1)), Locality::Node);
        assert_eq!(m.locality(HostId::new(2, 3)), Locality::Rack);
        assert_eq!(m.locality(HostId::new(1, 1)), Locality::Remote);
    }

    #[test]
    fn cross_rack_shuffle_of_even_and_skewed_reduces() {
        let gb = 1_000_000_000;
        let inter = [Bytes(90 * gb), Bytes(10 * gb)];
        assert_eq!(cross_rack_shuffle(&inter, &[5, 5]), Bytes(50 * gb));
        assert_eq!(cross_rack_shuffle(&inter, &[9, 1]), Bytes(18 * gb));
        assert_eq!(cross_rack_shuffle(&inter, &[0, 0]), Bytes(0));
    }
}
