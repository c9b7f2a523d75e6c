//! Shuffle-aware Map Placement, SAMP (ShuffleWatcher, Ahmad et al., ATC'14,
//! Sec. 3.2, Fig. 4), run once per job at submission:
//!
//! ```text
//! 1. Sort racks in decreasing order of input data for j
//! 2. TmpMapRacks = {}
//! 3. CrossRackTraffic = infinity
//! 4. do {
//! 5.   remove first rack r in sorted list and add to TmpMapRacks
//! 6.   estimate CrossRackTraffic = remote Map traffic + cross-rack Shuffle
//! 7. } while (CrossRackTraffic decreases)
//! 8. PreferredMapRacks = TmpMapRacks
//! 9. compute TentativeReducesPerRack assuming Maps run on PreferredMapRacks
//! ```
//!
//! Remote Map traffic is the input whose blocks have no replica on the chosen
//! racks. The cross-rack Shuffle assumes the maps spread evenly over the k
//! chosen racks and SARP's proportional reduces: `S·(1 − 1/k)` with
//! `S = ShuffleInputRatio · input`. As written, line 7 leaves in the set the
//! rack that made the estimate stop falling; ocslab keeps the minimum (the
//! text's "until this sum is minimized"). Ties in line 1 go to the rack fewer
//! running jobs prefer (Fig. 5: two jobs with the same input on two racks
//! take one rack each), then to the lower index.

use crate::policy::netaware::{proportional_split, JobState, Rack};
use std::collections::BTreeSet;

/// What SAMP decided for one job.
#[derive(Clone, Debug, PartialEq)]
pub struct SampPlan {
    /// *PreferredMapRacks*, in the order they were added.
    pub preferred_racks: Vec<Rack>,
    /// *TentativeReducesPerRack*, indexed by rack.
    pub tentative_reduces: Vec<u32>,
    /// The estimated cross-rack bytes (remote Map + Shuffle) of the plan.
    pub estimated_cross_rack: f64,
}

/// SAMP's estimate for map racks `chosen`: remote Map bytes plus
/// cross-rack Shuffle bytes.
pub fn estimate(blocks: &[(u64, BTreeSet<Rack>)], chosen: &[Rack], shuffle: f64) -> f64 {
    let remote: u64 = blocks
        .iter()
        .filter(|(_, racks)| !chosen.iter().any(|r| racks.contains(r)))
        .map(|(b, _)| *b)
        .sum();
    let k = chosen.len().max(1) as f64;
    remote as f64 + shuffle * (1.0 - 1.0 / k)
}

/// Runs Fig. 4 for `job` (its pending maps are its input blocks) with
/// `ratio` as its *ShuffleInputRatio*; `load[r]` is how many jobs already
/// prefer rack r.
pub fn plan(racks: u32, job: &JobState, ratio: f64, load: &[u32]) -> SampPlan {
    let blocks: Vec<(u64, BTreeSet<Rack>)> = job
        .pending_maps
        .iter()
        .map(|m| (m.input.0, m.replicas.iter().map(|h| h.rack).collect()))
        .collect();
    let input_on = |r: Rack| -> u64 {
        blocks
            .iter()
            .filter(|(_, rs)| rs.contains(&r))
            .map(|(b, _)| *b)
            .sum()
    };
    let mut sorted: Vec<Rack> = (0..racks).collect();
    sorted.sort_by_key(|&r| {
        (
            std::cmp::Reverse(input_on(r)),
            load.get(r as usize).copied().unwrap_or(0),
            r,
        )
    });
    let input: u64 = blocks.iter().map(|(b, _)| *b).sum();
    let shuffle = ratio.max(0.0) * input as f64;

    let mut tmp: Vec<Rack> = Vec::new();
    let mut best = f64::INFINITY;
    for r in sorted {
        tmp.push(r);
        let traffic = estimate(&blocks, &tmp, shuffle);
        if traffic < best {
            best = traffic;
        } else {
            tmp.pop(); // the rack that did not help does not stay (see the module doc)
            break;
        }
    }
    let weights: Vec<f64> = (0..racks)
        .map(|r| if tmp.contains(&r) { 1.0 } else { 0.0 })
        .collect();
    SampPlan {
        tentative_reduces: proportional_split(job.reduces_total, &weights),
        preferred_racks: tmp,
        estimated_cross_rack: if best.is_finite() { best } else { 0.0 },
    }
}
