//! OMO on hand-worked cases: the EMA predictor (eq. 4.1), the literal and
//! the stated-intent lazy-start test, the batch-finish slip and its
//! reading, and lazy start deciding by the predicted shuffle time.

use super::support::{job, simulate, topo, S};
use crate::engine::EngineConfig;
use crate::model::job::JobId;
use crate::policy::by_name;
use crate::policy::omo::*;
use ocslab_core::Bps;
use ocslab_core::HostId;
use ocslab_core::Nanos;

#[test]
fn predictor_smooths_windows_and_scales_by_available_slots() {
    // Window 10 s, α = 0.5. Window 1: 5 releases, 4 slots available
    // throughout: f = 0.5/s, a = 4. Window 2: 10 releases, 2 available:
    // f = 1, a = 2 → F_o = 0.75, A_o = 3; F_e(A_e = 6) = 0.75·6/3 = 1.5.
    let mut p = ReleasePredictor::new(Nanos(10 * S), 0.5);
    p.observe(Nanos(0), 4.0);
    p.observe(Nanos(5 * S), 4.0);
    for _ in 0..5 {
        p.released();
    }
    p.observe(Nanos(10 * S), 2.0);
    assert_eq!((p.f_o(), p.a_o()), (Some(0.5), Some(4.0)));
    p.observe(Nanos(15 * S), 2.0);
    for _ in 0..10 {
        p.released();
    }
    p.observe(Nanos(20 * S), 2.0);
    assert_eq!((p.f_o(), p.a_o()), (Some(0.75), Some(3.0)));
    assert_eq!(p.estimate(6.0), Some(1.5));
}

#[test]
fn lazy_start_reads_the_intent_not_the_literal_argmin() {
    // T_s = 10 s, T_m = 2 s, F_o = 2/s, A_o = 8, K = 1, r = 2:
    // F_e = 2·6/8 = 1.5/s; remaining map time x/1.5 + 2 ≤ 10 ⟺ x ≤ 12.
    let gap = |x: f64| lazy_start_gap(10.0, 2.0, x, 2.0, 8.0, 1.0, 2.0);
    assert!(gap(12.0).abs() < 1e-12);
    assert!(gap(13.0) < 0.0);
    assert!(gap(11.0) > 0.0);
    // The literal rule: m' = argmin over x in [m', m] of α(x). α falls as
    // x grows, so the argmin is always m (here 40), whatever m' is.
    let m = 40;
    for m_prime in [0, 12, 39] {
        let argmin = (m_prime..=m)
            .min_by(|a, b| gap(*a as f64).total_cmp(&gap(*b as f64)))
            .expect("non-empty");
        assert_eq!(argmin, m);
    }
}

#[test]
fn batch_finish_test_is_always_true_as_written_and_read_for_the_tail() {
    // t_batch = t_fair·(K−1)/K·A_o/(A_o + r) < t_fair for any job, even
    // one with no pending map (the slip).
    for pending in [0.0, 1.0, 50.0] {
        let (t_fair, t_batch) = batch_times(pending, 5.0, 2.0, 8.0, 3.0, 2.0);
        assert!(t_batch < t_fair);
    }
    // Read: m' > 0 and m' ≤ F_o·T_m (= 10 here).
    assert!(!batch_candidate(0.0, 5.0, 2.0, 8.0, 3.0, 2.0));
    assert!(batch_candidate(10.0, 5.0, 2.0, 8.0, 3.0, 2.0));
    assert!(!batch_candidate(11.0, 5.0, 2.0, 8.0, 3.0, 2.0));
}

#[test]
fn shuffle_path_is_predicted_from_the_fabric() {
    let t = topo(2, 2, 2);
    // No OCS ports: EPS, limited by the host's share of the uplink (2 Gbit/s / 2).
    assert_eq!(
        ShufflePath::predict(&t, 1e12),
        ShufflePath::Eps(Bps(1_000_000_000))
    );
}

/// Map progress when OMO started the job's first reduce.
fn progress_at_first_reduce(ratio: f64) -> f64 {
    // 40 maps of 1 s on 2 hosts × 2 slots (10 waves), one reduce.
    let t = topo(2, 1, 2);
    let j = job(0, 40, 1000, 1, 1000, HostId::new(0, 0), ratio);
    let config = EngineConfig {
        slow_start: 0.0,
        ..EngineConfig::default()
    };
    let out = simulate(&t, vec![j], by_name("omo", None).expect("omo"), config, &[]);
    out.records.jobs[&JobId(0)]
        .map_progress_at_first_reduce
        .expect("reduce ran")
}

#[test]
fn lazy_start_starts_a_heavy_shuffle_early_and_a_light_one_at_the_end() {
    // Heavy: 4 GB to one reduce at 1 Gbit/s = 32 s of shuffle, more than
    // the whole map phase (10 s): the reduce starts as soon as the
    // predictor has its first releases. Light: 4 MB, 0.03 s: the reduce
    // waits until no map is pending — it then takes a slot the last wave
    // (at most 4 maps running) leaves idle, so at least 36 of 40 are done.
    let heavy = progress_at_first_reduce(1.0);
    let light = progress_at_first_reduce(0.001);
    assert!(
        heavy > 0.0 && heavy <= 0.2,
        "heavy shuffle started at map progress {heavy}"
    );
    assert!(
        (0.9..1.0).contains(&light),
        "light shuffle started at map progress {light}"
    );
}
