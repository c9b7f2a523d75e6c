//! Map Task Scheduling, MTS (NAS, Li, Shen & Sarker, CCGrid 2018,
//! Sec. III-C, Alg. 2):
//!
//! ```text
//! 1: Calculate the available map output data size on the worker node.
//! 2: for user i in the user list do
//! 3:   if the user has data-local and shuffle-qualified map task then
//! 4:     launch this map task on this node, set D_i^m = 0
//! 5:   else
//! 6:     if D_i^m == D^m then
//! 7:       if we can find shuffle-qualified map tasks of this user then
//! 8:         launch a map task in the following order:
//! 9-12:      small-input unpredicted, small-input predicted,
//!            large-input unpredicted, large-input predicted
//! 13:      else
//! 14:        launch a map task in the following order:
//! 15:        (1) data-local map task
//! 16:        (2) map task with the smallest map output data size
//! 17:    else
//! 18:      D_i^m ++
//! ```
//!
//! The available space is *TrafficThreshold* (eq. 3,
//! `m · ΣS_i / ΣK_i` over the jobs in the cluster) minus the predicted
//! output of the maps running on the node. Among data-local qualified maps
//! an unpredicted job's goes first, then the output closest to the space
//! left; in lines 9-12 the lowest `MapCost = γ · input` (γ = 0 node, 1 rack,
//! 2 remote), then the output closest to the space left.
//!
//! Decisions: a user with no pending map is passed without counting a
//! skip; any launch resets the user's counter ("once the user's task is
//! scheduled"); the counter test is `>=` so a lowered `D^m` still applies.
//! When CR-RTS has flagged the rack congested, maps of shuffle-medium and
//! -heavy jobs are left out (Sec. III-E: "CR-RTS notifies MTS not to
//! schedule shuffle-heavy and shuffle-medium map tasks").

use super::predictor::{self, ClassLimits, ShuffleClass};
use crate::policy::netaware::{JobState, Locality, NetView, PendingMap, TaskPick, UserKey};
use crate::{Bytes, HostId};
use std::collections::BTreeMap;

/// *TrafficThreshold* (eq. 3): the average shuffle bytes a node generates
/// per wave, `m · ΣS_i / ΣK_i` over the jobs in the cluster (`m` slots per
/// node, `S_i` predicted shuffle, `K_i` map count). `None` with no maps.
pub fn traffic_threshold(view: &NetView) -> Option<Bytes> {
    let maps: u64 = view.jobs.iter().map(|j| u64::from(j.maps_total)).sum();
    if maps == 0 {
        return None;
    }
    let shuffle: u128 = view
        .jobs
        .iter()
        .map(|j| u128::from(predictor::shuffle_size(j).0))
        .sum();
    Some(Bytes(
        (u128::from(view.slots_per_host) * shuffle / u128::from(maps)) as u64,
    ))
}

/// Predicted map output of the maps running on `host`.
pub fn running_output_on(view: &NetView, host: HostId) -> Bytes {
    view.jobs
        .iter()
        .flat_map(|j| {
            j.running_maps
                .iter()
                .filter(|(h, _)| *h == host)
                .map(move |(_, b)| (j, *b))
        })
        .map(|(j, b)| predictor::map_output(j, b))
        .sum()
}

/// One candidate map of a user, with what MTS weighs.
struct Candidate<'a> {
    job: &'a JobState,
    map: &'a PendingMap,
    output: Bytes,
    locality: Locality,
}

impl Candidate<'_> {
    fn pick(&self) -> TaskPick {
        TaskPick::Map {
            job: self.job.id,
            index: self.map.index,
        }
    }
    /// `MapCost = γ · MapInputSize`.
    fn cost(&self) -> u128 {
        let gamma = match self.locality {
            Locality::Node => 0,
            Locality::Rack => 1,
            Locality::Remote => 2,
        };
        gamma * u128::from(self.map.input.0)
    }
}

/// MTS's state: the map skip counter of each user.
#[derive(Clone, Debug, Default)]
pub struct Mts {
    skips: BTreeMap<UserKey, u32>,
}

impl Mts {
    /// A user's map skip counter.
    pub fn skips(&self, user: UserKey) -> u32 {
        self.skips.get(&user).copied().unwrap_or(0)
    }

    /// Alg. 2 for a free slot on `host`. `threshold` is *TrafficThreshold*
    /// (`None`: every map is shuffle-qualified, NAS "w/o TT"); `light_only`
    /// when CR-RTS asked MTS to hold back medium and heavy jobs' maps.
    pub fn offer(
        &mut self,
        view: &NetView,
        host: HostId,
        threshold: Option<Bytes>,
        light_only: bool,
        max_skips: u32,
        limits: &ClassLimits,
    ) -> Option<TaskPick> {
        let available = threshold.map(|t| Bytes(t.0.saturating_sub(running_output_on(view, host).0)));
        let qualified = |c: &Candidate| available.is_none_or(|a| c.output <= a);
        // "closest to the available space" among outputs that fit = the largest.
        let closeness = |c: &Candidate| std::cmp::Reverse(c.output);
        for &user in &view.users {
            let cands: Vec<Candidate> = view
                .jobs_of(user)
                .filter(|j| !light_only || predictor::class(j, limits) == ShuffleClass::Light)
                .flat_map(|j| {
                    j.pending_maps.iter().map(move |m| Candidate {
                        job: j,
                        map: m,
                        output: predictor::map_output(j, m.input),
                        locality: m.locality(host),
                    })
                })
                .collect();
            if cands.is_empty() {
                continue;
            }
            // Lines 3-4.
            let local_qualified = cands
                .iter()
                .filter(|c| c.locality == Locality::Node && qualified(c))
                .min_by_key(|c| {
                    (
                        predictor::is_predicted(c.job),
                        closeness(c),
                        c.job.arrival,
                        c.map.index,
                    )
                });
            if let Some(c) = local_qualified {
                self.skips.insert(user, 0);
                return Some(c.pick());
            }
            // Lines 6-16.
            if self.skips(user) >= max_skips {
                let category = |c: &Candidate| {
                    (
                        !predictor::is_small_input(c.job, limits),
                        predictor::is_predicted(c.job),
                    )
                };
                let chosen = cands
                    .iter()
                    .filter(|c| qualified(c))
                    .min_by_key(|c| (category(c), c.cost(), closeness(c), c.job.arrival, c.map.index))
                    .or_else(|| {
                        cands.iter().min_by_key(|c| {
                            (c.locality != Locality::Node, c.output, c.job.arrival, c.map.index)
                        })
                    });
                if let Some(c) = chosen {
                    self.skips.insert(user, 0);
                    return Some(c.pick());
                }
            }
            // Line 18.
            *self.skips.entry(user).or_insert(0) += 1;
        }
        None
    }
}
