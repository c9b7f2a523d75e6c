//! NAS's shuffle data size predictor and job classes (Li, Shen & Sarker,
//! CCGrid 2018, Sec. III-A, after Verma et al. \[36\]):
//! `MapOutput = (map output/input ratio) · MapInput` (eq. 1). The ratio is
//! the mean of the finished maps' output/input ratios; before any map
//! finishes it is the ratio known in advance (a recurring job: a *predicted
//! job*) or 1.0 (an *unpredicted job*).
//!
//! Classes on the predicted shuffle size of the whole job (Sec. IV-A):
//! light below 1 MB, medium 1-100 MB, heavy above 100 MB; and small-input
//! below 10 MB of input, large-input otherwise.

use crate::policy::netaware::JobState;
use crate::Bytes;

/// How much shuffle a job generates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ShuffleClass {
    /// Below the light limit (1 MB).
    Light,
    /// Between the two limits.
    Medium,
    /// Above the heavy limit (100 MB).
    Heavy,
}

/// The class limits (Sec. IV-A defaults).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClassLimits {
    /// Shuffle below this is light (1 MB).
    pub light_below: Bytes,
    /// Shuffle above this is heavy (100 MB).
    pub heavy_above: Bytes,
    /// Input below this is small-input (10 MB).
    pub small_input_below: Bytes,
}

impl Default for ClassLimits {
    fn default() -> Self {
        ClassLimits {
            light_below: Bytes(1_000_000),
            heavy_above: Bytes(100_000_000),
            small_input_below: Bytes(10_000_000),
        }
    }
}

/// The job's map output/input ratio: the mean over its finished maps, else
/// the ratio known in advance, else 1.0.
pub fn ratio(job: &JobState) -> f64 {
    job.mean_map_ratio.or(job.known_ratio).unwrap_or(1.0).max(0.0)
}

/// A *predicted job*: its ratio comes from finished maps or is known in advance.
pub fn is_predicted(job: &JobState) -> bool {
    job.mean_map_ratio.is_some() || job.known_ratio.is_some()
}

/// Eq. 1 for one map task of `job` with `input` bytes.
pub fn map_output(job: &JobState, input: Bytes) -> Bytes {
    Bytes((ratio(job) * input.0 as f64).round() as u64)
}

/// The predicted shuffle size of the whole job.
pub fn shuffle_size(job: &JobState) -> Bytes {
    map_output(job, job.input_total)
}

/// The job's shuffle class.
pub fn class(job: &JobState, limits: &ClassLimits) -> ShuffleClass {
    let s = shuffle_size(job);
    if s < limits.light_below {
        ShuffleClass::Light
    } else if s > limits.heavy_above {
        ShuffleClass::Heavy
    } else {
        ShuffleClass::Medium
    }
}

/// Whether the job is small-input.
pub fn is_small_input(job: &JobState, limits: &ClassLimits) -> bool {
    job.input_total < limits.small_input_below
}
