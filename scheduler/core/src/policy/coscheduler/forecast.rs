//! What prior runs predict of a recurring job (Co-scheduler Sec. IV-B; Corral):
//! its characteristics with a relative error. Each predicted quantity is the
//! true one times `1 + e·u`, `u` uniform in [−1, 1] drawn from a hash of
//! (seed, job, quantity), so Co-scheduler and Corral see the same forecast of
//! the same job in the same run, whatever order they ask in.

use super::latency::JobForecast;
use crate::{Bytes, Nanos};

/// SplitMix64: a well-mixed 64-bit hash of `x`.
pub fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A deterministic uniform draw in [−1, 1] for (`seed`, `key`, `what`).
pub fn unit_noise(seed: u64, key: u64, what: u64) -> f64 {
    let h = splitmix64(seed ^ splitmix64(key ^ splitmix64(what)));
    (h >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
}

fn off(x: u64, error: f64, u: f64) -> u64 {
    (x as f64 * (1.0 + error * u)).round().max(0.0) as u64
}

/// The forecast of a job whose truth is `truth`, with relative error `error` (0 = exact).
pub fn predicted(truth: &JobForecast, error: f64, seed: u64, job: u64) -> JobForecast {
    let e = error.clamp(0.0, 0.99);
    let n = |what: u64| unit_noise(seed, job, what);
    JobForecast {
        maps: off(u64::from(truth.maps), e, n(1)).clamp(1, u64::from(u32::MAX)) as u32,
        reduces: off(u64::from(truth.reduces), e, n(2)).min(u64::from(u32::MAX)) as u32,
        shuffle: Bytes(off(truth.shuffle.0, e, n(3))),
        map_time: Nanos(off(truth.map_time.0, e, n(4))),
        reduce_time: Nanos(off(truth.reduce_time.0, e, n(5))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forecasts_are_within_the_error_and_repeatable() {
        let truth = JobForecast {
            maps: 400,
            reduces: 20,
            shuffle: Bytes(20_000_000_000),
            map_time: Nanos::from_millis(14_000),
            reduce_time: Nanos::from_millis(50_000),
        };
        assert_eq!(predicted(&truth, 0.0, 1, 7), truth);
        let mut differs = false;
        for job in 0..200 {
            let p = predicted(&truth, 0.1, 1, job);
            assert_eq!(p, predicted(&truth, 0.1, 1, job));
            let rel = (p.shuffle.0 as f64 / truth.shuffle.0 as f64 - 1.0).abs();
            assert!(rel <= 0.1 + 1e-9, "{rel}");
            assert!((360..=440).contains(&p.maps));
            differs |= p != truth;
        }
        assert!(differs);
        let mean: f64 = (0..10_000).map(|k| unit_noise(3, k, 0)).sum::<f64>() / 10_000.0;
        assert!(mean.abs() < 0.05, "uniform in [-1, 1] has mean 0, got {mean}");
    }
}
