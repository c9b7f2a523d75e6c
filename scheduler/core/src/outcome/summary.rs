//! Summaries of per-coflow results: average and percentiles of CCT, overall
//! and per bin, and of the ratio CCT / lower bound.
//!
//! Bins as coflow papers use them (Varys, Aalo): *short* if the longest flow
//! is under 5 MB (MB = 2^20 bytes, divided by the topology's scale), *narrow*
//! if at most 50 flows: SN, LN, SW, LW. Percentiles are nearest-rank.

use super::ReplayOutcome;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;

use crate::Bytes;

/// A coflow's bin by length (longest flow) and width (number of flows).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Bin {
    /// Short and narrow.
    SN,
    /// Long and narrow.
    LN,
    /// Short and wide.
    SW,
    /// Long and wide.
    LW,
}

/// Longest flow below this (nominal bytes) is short.
pub const SHORT_BELOW: f64 = 5.0 * 1_048_576.0;
/// At most this many flows is narrow.
pub const NARROW_UP_TO: usize = 50;

impl Bin {
    /// The bin of a coflow whose longest flow is `longest` (effective bytes,
    /// i.e. divided by `scale`) with `width` flows.
    pub fn of(longest: Bytes, width: usize, scale: f64) -> Bin {
        let short = (longest.0 as f64) < SHORT_BELOW / scale;
        match (short, width <= NARROW_UP_TO) {
            (true, true) => Bin::SN,
            (false, true) => Bin::LN,
            (true, false) => Bin::SW,
            (false, false) => Bin::LW,
        }
    }

    /// All bins, in report order.
    pub const ALL: [Bin; 4] = [Bin::SN, Bin::LN, Bin::SW, Bin::LW];
}

impl fmt::Display for Bin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}

/// Count, mean and nearest-rank percentiles of a set of values.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Distribution {
    /// Number of values.
    pub count: usize,
    /// Mean.
    pub avg: f64,
    /// Median.
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
}

impl Distribution {
    /// The distribution of `values`; `None` if there are none.
    pub fn of(mut values: Vec<f64>) -> Option<Distribution> {
        if values.is_empty() {
            return None;
        }
        values.sort_by(f64::total_cmp);
        let n = values.len();
        let rank = |p: f64| values[((p / 100.0 * n as f64).ceil() as usize).clamp(1, n) - 1];
        Some(Distribution {
            count: n,
            avg: values.iter().sum::<f64>() / n as f64,
            p50: rank(50.0),
            p95: rank(95.0),
            p99: rank(99.0),
        })
    }
}

/// What `ocslab replay` prints.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ReplaySummary {
    /// The coflow scheduler.
    pub scheduler: String,
    /// Which lower bound applies: "eps" or "hybrid (elephants over OCS)".
    pub lower_bound: &'static str,
    /// Coflows replayed.
    pub coflows: usize,
    /// When the last coflow finished, seconds.
    pub makespan_s: f64,
    /// CCT in seconds, all coflows.
    pub cct_s: Option<Distribution>,
    /// CCT in seconds per bin (bins with no coflow are left out).
    pub cct_by_bin_s: BTreeMap<Bin, Distribution>,
    /// CCT ÷ lower bound.
    pub ratio: Option<Distribution>,
    /// Bytes over EPS.
    pub eps_bytes: u64,
    /// Bytes over circuits.
    pub ocs_bytes: u64,
    /// Bytes between racks.
    pub cross_rack_bytes: u64,
    /// Circuits set up.
    pub reconfigurations: u64,
    /// Times the policy was asked.
    pub policy_calls: u64,
}

impl ReplaySummary {
    /// Summarizes a replay.
    pub fn of(o: &ReplayOutcome) -> ReplaySummary {
        let cct = |r: &super::CoflowRecord| r.cct.as_secs_f64();
        let cct_by_bin_s = Bin::ALL
            .iter()
            .filter_map(|&b| {
                let v: Vec<f64> = o.records.iter().filter(|r| r.bin == b).map(cct).collect();
                Distribution::of(v).map(|d| (b, d))
            })
            .collect();
        ReplaySummary {
            scheduler: o.policy.clone(),
            lower_bound: o.fabrics.bound_in_words(),
            coflows: o.records.len(),
            makespan_s: o.makespan.as_secs_f64(),
            cct_s: Distribution::of(o.records.iter().map(cct).collect()),
            cct_by_bin_s,
            ratio: Distribution::of(o.records.iter().filter_map(|r| r.ratio()).collect()),
            eps_bytes: o.stats.eps_bytes.0,
            ocs_bytes: o.stats.ocs_bytes.0,
            cross_rack_bytes: o.stats.cross_rack_bytes.0,
            reconfigurations: o.stats.reconfigurations,
            policy_calls: o.stats.policy_calls,
        }
    }
}
