//! FRESH on hand-worked cases: the thesis's Sec. 3.3.2.1 slot example,
//! Alg. 3.3.1 on a two-job batch, Alg. 3.3.3's switch to the expected
//! ratio, Theorem 3.3.1, and admission control.

use super::support::{job, simulate, topo, S};
use crate::engine::{EngineConfig, SlotConfig};
use crate::model::job::{Job, JobId, TaskKind};
use crate::policy::by_name;
use crate::policy::fresh::*;
use ocslab_core::HostId;
use ocslab_core::Nanos;

/// The thesis's example: J1 (2 maps, 9 reduces), J2 (3, 4), J3 (7, 3),
/// unit-time tasks, no shuffle bytes.
fn example_jobs() -> Vec<Job> {
    let h = HostId::new(0, 0);
    vec![
        job(1, 2, 1000, 9, 1000, h, 0.0),
        job(2, 3, 1000, 4, 1000, h, 0.0),
        job(3, 7, 1000, 3, 1000, h, 0.0),
    ]
}

fn slot_seconds(out: &crate::sim::SimOutcome, j: u64) -> f64 {
    out.records
        .tasks
        .iter()
        .filter(|t| t.attempt.task.job == JobId(j))
        .map(|t| (t.ended - t.started).as_secs_f64())
        .sum()
}

#[test]
fn the_chapter_3_example_takes_5_units_under_fair_4_4_and_4_under_dynamic_fresh() {
    // Fair on 4 map + 4 reduce slots, reduces after all maps: the thesis's
    // table, 5 time units, the jobs holding 11, 7 and 10 slot-units.
    let t = topo(1, 1, 8);
    let fair = EngineConfig {
        slow_start: 1.0,
        slots: SlotConfig::Split { map: 4, reduce: 4 },
        ..EngineConfig::default()
    };
    let out = simulate(
        &t,
        example_jobs(),
        by_name("fair", None).expect("fair"),
        fair,
        &[],
    );
    assert_eq!(out.end, Nanos(5 * S));
    let used: Vec<f64> = [1, 2, 3].iter().map(|&j| slot_seconds(&out, j)).collect();
    assert_eq!(used, vec![11.0, 7.0, 10.0]);
    // Overall fairness at T = 5 (all jobs started at 0): r = 11/5, 7/5,
    // 10/5; Jain's index = 28² / (3 · 270) = 784 / 810.
    let r: Vec<f64> = used.iter().map(|u| resource_use(*u, 5.0, 0.0)).collect();
    assert!((overall_fairness(&r) - 784.0 / 810.0).abs() < 1e-12);

    // Dynamic FRESH on the same 8 slots, untyped: at t=1 the map work left
    // (J3: 4) against the reduce work (J1 9 + J2 4) gives θ = 4/17, 1.9 map
    // slots, so 2 maps and 6 reduces run; at t=2, θ = 2/9 again gives 2
    // maps; at t=3 only reduces are left: done at 4 (28 units on 8 slots
    // cannot finish before 3.5).
    let shared = EngineConfig {
        slow_start: 1.0,
        ..EngineConfig::default()
    };
    let fresh = by_name("fresh", None).expect("fresh");
    let out = simulate(&t, example_jobs(), fresh, shared, &[]);
    assert_eq!(out.end, Nanos(4 * S));
    // The state at t = 1 once every map of the first wave is in (J3 has 4
    // maps left, J1 and J2 13 reduce-units): 4/17 · 8 = 1.88 map slots.
    let at_1 = SlotOutlook {
        rw_m: 4.0,
        rw_r: 13.0,
        slots: 8.0,
        map_slots: 0.0,
        jobs_in_map: 1.0,
        next_to_reduce: Some((3.0 / 7.0, 4.0, 0.0, 3.0)),
        next_map_work: 0.0,
        reduce_interval: f64::INFINITY,
    };
    assert!((expected_map_slots(&at_1, 0.8, 0.6) - 32.0 / 17.0).abs() < 1e-12);
    // Reduce phases never overlap their own maps under FRESH.
    for r in out.records.tasks.iter().filter(|r| r.kind == TaskKind::Reduce) {
        let maps_done = out.records.jobs[&r.attempt.task.job]
            .maps_done
            .expect("maps done");
        assert!(r.started >= maps_done);
    }
}

#[test]
fn static_split_enumerates_and_models_makespan_as_worked_by_hand() {
    // A: w_m = 4, w_r = 2; B: w_m = 2, w_r = 4; one host of 4 slots, k = 1.
    // 2:2 → A maps end at 2; then B maps (1 s) and A reduces (1 s) tie, A's
    // reduce phase ends first at 3 (B's maps also done), B's reduces take
    // 4/2 = 2 more: 5. 3:1 → 7.33; 1:3 → 7.33. Best: 2 map slots, 5 s.
    let jobs = [
        JobProfile {
            maps: 4,
            reduces: 2,
            map_time: 1.0,
            reduce_time: 1.0,
        },
        JobProfile {
            maps: 2,
            reduces: 4,
            map_time: 1.0,
            reduce_time: 1.0,
        },
    ];
    assert!((model_makespan(&jobs, 3.0, 1.0, 1) - 22.0 / 3.0).abs() < 1e-9);
    assert!((model_makespan(&jobs, 1.0, 3.0, 1) - 22.0 / 3.0).abs() < 1e-9);
    let best = best_static_split(&jobs, 1, 4, 1).expect("a split");
    assert_eq!(best.map_slots_per_host, 2);
    assert!((best.makespan - 5.0).abs() < 1e-9);
    assert_eq!(best_static_split(&jobs, 1, 1, 1), None);
}

#[test]
fn static_fresh_runs_with_the_split_it_chose() {
    // The same two jobs as real jobs: fresh-static picks 2:2 per host and
    // never runs more than 2 maps at once on the host.
    let t = topo(1, 1, 4);
    let h = HostId::new(0, 0);
    let jobs = vec![job(0, 4, 1000, 2, 1000, h, 0.0), job(1, 2, 1000, 4, 1000, h, 0.0)];
    let out = simulate(
        &t,
        jobs,
        by_name("fresh-static", None).expect("policy"),
        EngineConfig::default(),
        &[],
    );
    let mut events: Vec<(Nanos, i32)> = Vec::new();
    for r in out.records.tasks.iter().filter(|r| r.kind == TaskKind::Map) {
        events.push((r.started, 1));
        events.push((r.ended, -1));
    }
    events.sort();
    let mut now = 0;
    let mut peak = 0;
    for (_, d) in events {
        now += d;
        peak = peak.max(now);
    }
    assert_eq!(peak, 2);
}

#[test]
fn expected_map_slots_switches_to_the_expected_ratio_before_a_sudden_change() {
    let o = SlotOutlook {
        rw_m: 6.0,
        rw_r: 2.0,
        slots: 8.0,
        map_slots: 6.0,
        jobs_in_map: 2.0,
        next_to_reduce: Some((0.5, 1.0, 2.0, 10.0)),
        next_map_work: 0.0,
        reduce_interval: f64::INFINITY,
    };
    // Progress 0.5 < τ1: θ_cur · S = 0.75 · 8.
    assert_eq!(expected_map_slots(&o, 0.8, 0.6), 6.0);
    // Progress 0.9: after J_a's maps, RW'_m = 6 − 1·2 = 4, RW'_r = 12,
    // θ_exp = 0.25; no reduce released (r = ∞): s'_m / S = 0.75, off by 200%
    // > τ2, so θ_exp · S = 2.
    let o = SlotOutlook {
        next_to_reduce: Some((0.9, 1.0, 2.0, 10.0)),
        ..o
    };
    assert_eq!(expected_map_slots(&o, 0.8, 0.6), 2.0);
    // No sudden change (J_a brings no reduce work): θ_cur stands.
    let o = SlotOutlook {
        next_to_reduce: Some((0.9, 0.0, 2.0, 0.0)),
        ..o
    };
    assert_eq!(expected_map_slots(&o, 0.8, 0.6), 6.0);
}

#[test]
fn theorem_3_3_1_solves_its_fixed_point() {
    let (theta, r, k, w, m_a) = (0.5, 2.0, 3.0, 40.0, 4.0);
    let eta = reduce_slots_released(theta, r, k, w, m_a);
    let x = eta * r;
    // x = w'_m(a) / (x·θ/(2rk) + m_a)
    assert!((x - w / (x * theta / (2.0 * r * k) + m_a)).abs() < 1e-9);
    assert_eq!(reduce_slots_released(theta, f64::INFINITY, k, w, m_a), 0.0);
}

#[test]
fn jain_index_bounds() {
    assert_eq!(jain_index(&[2.0, 2.0, 2.0]), 1.0);
    assert!((jain_index(&[1.0, 0.0, 0.0, 0.0]) - 0.25).abs() < 1e-12);
}

#[test]
fn admission_limit_k_keeps_the_second_job_waiting_for_the_first_map_phase() {
    // k = 1: job 1's maps start only once job 0's map phase is over.
    let t = topo(1, 1, 4);
    let h = HostId::new(0, 0);
    let jobs = vec![job(0, 2, 1000, 1, 1000, h, 0.0), job(1, 2, 1000, 1, 1000, h, 0.0)];
    let mut p = toml::Table::new();
    p.insert("k".into(), toml::Value::Integer(1));
    let out = simulate(
        &t,
        jobs,
        by_name("fresh", Some(&p)).expect("policy"),
        EngineConfig::default(),
        &[],
    );
    let first_map_of_1 = out
        .records
        .tasks
        .iter()
        .filter(|r| r.attempt.task.job == JobId(1) && r.kind == TaskKind::Map)
        .map(|r| r.started)
        .min();
    assert_eq!(first_map_of_1, Some(Nanos(S)));
    let mut bad = toml::Table::new();
    bad.insert("k".into(), toml::Value::Integer(0));
    assert!(by_name("fresh", Some(&bad)).is_err());
}
