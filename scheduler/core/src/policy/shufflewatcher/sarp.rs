//! Shuffle-aware Reduce Placement, SARP (ShuffleWatcher, Ahmad et al.,
//! ATC'14, Sec. 3.3, Fig. 6), run when a job's reduces are first enabled:
//!
//! ```text
//! 1. if (fraction of Maps completed > MapCompletionThreshold)
//! 2.   for each rack r
//! 3.     PreferredReducesPerRack[r] = NumReduces * Intermediate data size on
//!        rack r / Current Intermediate data size of j
//! 4. } else
//! 5.   for each rack r
//! 6.     PreferredReducesPerRack[r] = TentativeReducesPerRack[r]
//! ```
//!
//! Line 3 gives fractions; ocslab rounds them with the largest remainder so
//! the per-rack counts sum to *NumReduces*. A job whose finished maps wrote
//! nothing yet (a Shuffle-light job can) falls back to line 6.

use crate::policy::netaware::{proportional_split, JobState};

/// *PreferredReducesPerRack* for `job`; `tentative` is SAMP's
/// *TentativeReducesPerRack*.
pub fn preferred_reduces_per_rack(
    job: &JobState,
    racks: u32,
    map_completion_threshold: f64,
    tentative: &[u32],
) -> Vec<u32> {
    let done = if job.maps_total == 0 {
        1.0
    } else {
        f64::from(job.maps_done) / f64::from(job.maps_total)
    };
    let inter = job.map_output_per_rack(racks);
    if done > map_completion_threshold && inter.iter().any(|b| b.0 > 0) {
        let weights: Vec<f64> = inter.iter().map(|b| b.0 as f64).collect();
        proportional_split(job.reduces_total, &weights)
    } else {
        let mut t = tentative.to_vec();
        t.resize(racks as usize, 0);
        t
    }
}
