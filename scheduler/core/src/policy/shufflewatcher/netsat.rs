//! NetSat (ShuffleWatcher, Ahmad et al., ATC'14, Sec. 3.1): compares a
//! rack's cross-rack traffic with the bandwidth available to it and raises
//! *NetworkSaturated* when the ratio exceeds *NWSaturationThreshold*.
//!
//! The paper states the threshold per node in Sec. 3.1 and per rack in Sec.
//! 4.2 ("the per-rack link utilization threshold ... 400 Mbps which is 80% of
//! the admissible bandwidth"); ocslab uses the per-rack form, the one that
//! was evaluated, applied to the rack of the node asking for work.

/// *NetworkSaturated*: the utilization sample (traffic over capacity, in
/// `0.0..=1.0`) exceeds the threshold. A missing sample (NaN) is not saturated.
pub fn network_saturated(utilization: f64, threshold: f64) -> bool {
    utilization > threshold
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saturated_only_above_the_threshold() {
        // 400 Mbit/s of 500 is exactly 80%: not yet saturated ("exceeds").
        assert!(!network_saturated(400.0 / 500.0, 0.8));
        assert!(network_saturated(401.0 / 500.0, 0.8));
        assert!(!network_saturated(f64::NAN, 0.8));
    }
}
