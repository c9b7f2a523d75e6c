//! NAS, the network-aware scheduler (Li, Shen & Sarker, "A network-aware
//! scheduler in data-parallel clusters for high performance", CCGrid 2018,
//! Sec. III), Alg. 1:
//!
//! ```text
//! 1: if request for a map task then
//! 2:   call MTS
//! 3: else if request for a reduce task then
//! 4:   if NetState < CongestionThreshold then
//! 5:     call CA-RTS
//! 6:   else
//! 7:     call CR-RTS
//! ```
//!
//! - [`predictor`] — the shuffle-size predictor and the job classes (Sec. III-A);
//! - [`mts`] — Map Task Scheduling with *TrafficThreshold* (eq. 3) and the map skip count (Alg. 2);
//! - [`rts`] — CA-RTS (eq. 4, Alg. 3) and CR-RTS with the reduce skip count (Alg. 4).
//!
//! *NetState* is the cross-rack utilization of the requesting node's rack
//! (Alg. 1's input: "current network condition of the rack of this worker
//! node"); congested means at or above the threshold (0.8 in Sec. IV-A).
//! When a slot may run either kind (YARN containers), NAS asks for a reduce
//! first, as YARN's MapReduce application master ranks ready reduces above
//! maps, and falls back to a map.
//!
//! The skip counts `D^m` and `D^r` count offers, and Hadoop offers each
//! node's free slots at every heartbeat of that node, whether or not
//! anything else happened. ocslab's engine offers slots on events, so NAS
//! asks it for heartbeats too ([`NasConfig::heartbeat`],
//! `TaskPolicy::heartbeat`): while work waits, free slots are offered again
//! a heartbeat after the last round that offered them all. Without them,
//! a user skipped when nothing runs would wait for an unrelated event, and
//! a quiet cluster could wait forever (a map whose output no node's
//! *TrafficThreshold* admits is skipped until `D^m` offers).

pub mod mts;
pub mod predictor;
pub mod rts;
#[cfg(test)]
mod tests;

use crate::policy::netaware::{JobKey, NetView, SlotKind, TaskPick};
use crate::{HostId, Nanos};
use predictor::ClassLimits;

/// NAS's knobs and ablations (defaults from Sec. IV-A).
#[derive(Clone, Debug, PartialEq)]
pub struct NasConfig {
    /// *CongestionThreshold* as a fraction of a rack's cross-rack capacity (0.8).
    pub congestion_threshold: f64,
    /// The maximum map skip count `D^m` (135).
    pub max_map_skips: u32,
    /// The maximum reduce skip count `D^r` (135).
    pub max_reduce_skips: u32,
    /// Job class limits (1 MB, 100 MB, 10 MB).
    pub limits: ClassLimits,
    /// Constrain map output per node by *TrafficThreshold* (off: "w/o TT").
    pub traffic_threshold: bool,
    /// Place reduces with CA-RTS (off: the fairness order's first ready reduce, the "MTS" ablation).
    pub ca_rts: bool,
    /// Switch to CR-RTS under congestion (off: the "MTS+CA-RTS" ablation).
    pub cr_rts: bool,
    /// The node heartbeat: while work waits, every free slot is offered
    /// again this long after the last round that offered them all (1 s,
    /// YARN's `yarn.resourcemanager.nodemanagers.heartbeat-interval-ms`
    /// default).
    pub heartbeat: Nanos,
}

impl Default for NasConfig {
    fn default() -> Self {
        NasConfig {
            congestion_threshold: 0.8,
            max_map_skips: 135,
            max_reduce_skips: 135,
            limits: ClassLimits::default(),
            traffic_threshold: true,
            ca_rts: true,
            cr_rts: true,
            heartbeat: Nanos::from_millis(1000),
        }
    }
}

/// The NAS policy: MTS, CA-RTS and CR-RTS with their skip counters.
#[derive(Clone, Debug)]
pub struct Nas {
    config: NasConfig,
    mts: mts::Mts,
    rts: rts::Rts,
}

impl Nas {
    /// NAS with these knobs.
    pub fn new(config: NasConfig) -> Nas {
        Nas {
            config,
            mts: mts::Mts::default(),
            rts: rts::Rts::default(),
        }
    }

    /// Its knobs.
    pub fn config(&self) -> &NasConfig {
        &self.config
    }

    /// Forgets a finished job.
    pub fn on_job_finished(&mut self, job: JobKey) {
        self.rts.forget(job);
    }

    /// Whether the network of `host`'s rack is congested.
    pub fn congested(&self, view: &NetView, host: HostId) -> bool {
        view.utilization(host.rack) >= self.config.congestion_threshold
    }

    /// Alg. 1: the task for a free `slot` on `host`, or `None`.
    pub fn offer(&mut self, view: &NetView, host: HostId, slot: SlotKind) -> Option<TaskPick> {
        let congested = self.congested(view, host);
        if slot.takes_reduce() {
            if let Some(pick) = self.reduce(view, host, congested) {
                return Some(pick);
            }
        }
        if slot.takes_map() {
            let threshold = if self.config.traffic_threshold {
                mts::traffic_threshold(view)
            } else {
                None
            };
            let light_only = self.config.cr_rts && congested;
            return self.mts.offer(
                view,
                host,
                threshold,
                light_only,
                self.config.max_map_skips,
                &self.config.limits,
            );
        }
        None
    }

    fn reduce(&mut self, view: &NetView, host: HostId, congested: bool) -> Option<TaskPick> {
        if self.config.cr_rts && congested {
            self.rts
                .cr_rts(view, self.config.max_reduce_skips, &self.config.limits)
        } else if self.config.ca_rts {
            self.rts.ca_rts(view, host, &self.config.limits)
        } else {
            view.users.iter().find_map(|&u| {
                view.jobs_of(u)
                    .find(|j| j.has_ready_reduce())
                    .map(|j| TaskPick::Reduce { job: j.id })
            })
        }
    }
}
