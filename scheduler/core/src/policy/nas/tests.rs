//! NAS's distinctive decisions on hand-made cluster states.

use super::predictor::{self, ShuffleClass};
use super::rts::{reduce_num, reduce_num_reached};
use super::*;
use crate::policy::netaware::{JobState, PendingMap, UserKey};
use crate::{Bytes, Nanos};

const MB: u64 = 1_000_000;

fn h(rack: u32, host: u32) -> HostId {
    HostId::new(rack, host)
}

/// A job of `user` whose maps (64 MB each) are all on host `home`, with a
/// known shuffle/input ratio.
fn job(id: u64, user: u32, ratio: f64, pending: u32, running: u32, home: HostId) -> JobState {
    let mut j = JobState::new(JobKey(id), UserKey(user), Nanos(id), 2);
    j.known_ratio = Some(ratio);
    for i in 0..pending {
        j.pending_maps.push(PendingMap {
            index: i,
            input: Bytes(64 * MB),
            replicas: vec![home],
        });
    }
    for _ in 0..running {
        j.running_maps.push((home, Bytes(64 * MB)));
    }
    j.maps_total = pending + running;
    j.input_total = Bytes(64 * MB * u64::from(pending + running));
    j.reduces_total = 10;
    j.reduces_pending = 10;
    j
}

fn view(jobs: Vec<JobState>, users: &[u32]) -> NetView {
    let mut v = NetView::new(2, 4, 4);
    v.jobs = jobs;
    v.users = users.iter().map(|&u| UserKey(u)).collect();
    v
}

/// Job 1 (user 0): ratio 2.0, 4 maps of 64 MB (2 running on h0.0), S = 512 MB.
/// Job 2 (user 1): ratio 0.5, 4 maps of 64 MB, S = 128 MB.
/// TrafficThreshold = m·ΣS/ΣK = 4 · 640 MB / 8 = 320 MB. h0.0 already holds
/// 2 · 128 MB of predicted output: 64 MB left. Job 1's next map would add
/// 128 MB, job 2's 32 MB: MTS skips user 0 and launches user 1's map.
/// After `D^m` skips user 0 gets its data-local map despite the threshold.
#[test]
fn mts_skips_a_node_over_its_traffic_threshold() {
    let home = h(0, 0);
    let v = view(
        vec![job(1, 0, 2.0, 2, 2, home), job(2, 1, 0.5, 4, 0, home)],
        &[0, 1],
    );
    assert_eq!(mts::traffic_threshold(&v), Some(Bytes(320 * MB)));
    assert_eq!(mts::running_output_on(&v, home), Bytes(256 * MB));
    let mut nas = Nas::new(NasConfig {
        max_map_skips: 1,
        ..NasConfig::default()
    });
    assert_eq!(
        nas.offer(&v, home, SlotKind::Map),
        Some(TaskPick::Map {
            job: JobKey(2),
            index: 0
        })
    );
    assert_eq!(nas.mts.skips(UserKey(0)), 1);
    assert_eq!(
        nas.offer(&v, home, SlotKind::Map),
        Some(TaskPick::Map {
            job: JobKey(1),
            index: 0
        })
    );
    assert_eq!(nas.mts.skips(UserKey(0)), 0);
    // Without the threshold ("w/o TT") user 0 is served at once.
    let mut wo_tt = Nas::new(NasConfig {
        traffic_threshold: false,
        ..NasConfig::default()
    });
    assert_eq!(
        wo_tt.offer(&v, home, SlotKind::Map),
        Some(TaskPick::Map {
            job: JobKey(1),
            index: 0
        })
    );
}

/// A user with only non-local maps is skipped until `D^m`, then served in
/// Alg. 2's order: small-input unpredicted before large-input predicted.
#[test]
fn mts_after_max_skips_prefers_small_unpredicted_jobs() {
    let far = h(1, 0);
    let mut small = job(1, 0, 0.1, 1, 0, far);
    small.known_ratio = None; // unpredicted: ratio 1.0
    small.pending_maps[0].input = Bytes(5 * MB);
    small.input_total = Bytes(5 * MB);
    small.arrival = Nanos(9); // arrives after the large job
    let large = job(2, 0, 0.1, 1, 0, far);
    let v = view(vec![large, small], &[0]);
    let mut nas = Nas::new(NasConfig {
        max_map_skips: 2,
        ..NasConfig::default()
    });
    assert_eq!(nas.offer(&v, h(0, 0), SlotKind::Map), None);
    assert_eq!(nas.offer(&v, h(0, 0), SlotKind::Map), None);
    assert_eq!(
        nas.offer(&v, h(0, 0), SlotKind::Map),
        Some(TaskPick::Map {
            job: JobKey(1),
            index: 0
        })
    );
}

/// Congested rack: CR-RTS takes the shuffle-light reduce though the heavy
/// job came first; a user with only heavy reduces is skipped (its job tagged
/// delayed) in favour of the next user's light one. Once the congestion is
/// gone CA-RTS serves the delayed job first.
#[test]
fn cr_rts_picks_a_shuffle_light_reduce_under_congestion() {
    let home = h(0, 1);
    let mut heavy = job(1, 0, 2.0, 0, 0, home);
    heavy.maps_total = 4;
    heavy.maps_done = 2;
    heavy.input_total = Bytes(256 * MB);
    heavy.reduces_ready = true;
    let mut light = job(2, 0, 0.001, 0, 0, home);
    light.reduces_ready = true;
    light.input_total = Bytes(64 * MB);
    assert_eq!(predictor::class(&heavy, &Default::default()), ShuffleClass::Heavy);
    assert_eq!(predictor::class(&light, &Default::default()), ShuffleClass::Light);

    let mut v = view(vec![heavy.clone(), light.clone()], &[0]);
    v.cross_rack_utilization = vec![0.85, 0.0];
    let mut nas = Nas::new(NasConfig::default());
    assert_eq!(
        nas.offer(&v, h(0, 0), SlotKind::Reduce),
        Some(TaskPick::Reduce { job: JobKey(2) })
    );

    let mut light_b = light;
    light_b.user = UserKey(1);
    let mut v = view(vec![heavy.clone(), light_b], &[0, 1]);
    v.cross_rack_utilization = vec![0.85, 0.0];
    assert_eq!(
        nas.offer(&v, h(0, 0), SlotKind::Reduce),
        Some(TaskPick::Reduce { job: JobKey(2) })
    );
    assert_eq!(nas.rts.skips(UserKey(0)), 1);
    assert!(nas.rts.is_delayed(JobKey(1)));

    // Not congested: CA-RTS. Job 3 (heavy, maps not done, not delayed,
    // larger shuffle) would win on size alone; the delayed job 1 goes first.
    let mut other = heavy.clone();
    other.id = JobKey(3);
    other.input_total = Bytes(1024 * MB);
    let mut v = view(vec![other, heavy], &[0]);
    v.cross_rack_utilization = vec![0.5, 0.0];
    assert_eq!(
        nas.offer(&v, h(0, 0), SlotKind::Reduce),
        Some(TaskPick::Reduce { job: JobKey(1) })
    );
}

/// Eq. 4 on rack 0 for 10 reduces: job A has 80% of its output on rack 0
/// (ReduceNum 8, 8 placed: reached), job B 30% (3, 1 placed: not reached),
/// job C (light) 50% (5, 0 placed: not reached). CA-RTS's six classes:
/// heavy-not-reached (none) → medium-not-reached (B) → light-not-reached (C)
/// → ... → heavy-reached (A).
#[test]
fn ca_rts_follows_the_six_class_order() {
    let mk = |id: u64, ratio: f64, on0: u64, on1: u64, placed0: u32| {
        let mut j = job(id, 0, ratio, 0, 0, h(0, 0));
        j.maps_total = 1;
        j.maps_done = 1;
        j.input_total = Bytes(100 * MB);
        j.add_map_output(h(0, 0), Bytes(on0));
        j.add_map_output(h(1, 0), Bytes(on1));
        j.reduces_per_rack = vec![placed0, 0];
        j.reduces_ready = true;
        j
    };
    let a = mk(1, 2.0, 160 * MB, 40 * MB, 8); // heavy (200 MB)
    let b = mk(2, 0.5, 15 * MB, 35 * MB, 1); // medium (50 MB)
    let c = mk(3, 0.005, 250_000, 250_000, 0); // light (0.5 MB)
    assert!((reduce_num(&a, 2, 0) - 8.0).abs() < 1e-9 && reduce_num_reached(&a, 2, 0));
    assert!((reduce_num(&b, 2, 0) - 3.0).abs() < 1e-9 && !reduce_num_reached(&b, 2, 0));
    assert!(!reduce_num_reached(&c, 2, 0));
    let mut nas = Nas::new(NasConfig::default());
    let order = |jobs: Vec<JobState>, nas: &mut Nas| nas.offer(&view(jobs, &[0]), h(0, 2), SlotKind::Reduce);
    assert_eq!(
        order(vec![a.clone(), b.clone(), c.clone()], &mut nas),
        Some(TaskPick::Reduce { job: JobKey(2) })
    );
    assert_eq!(
        order(vec![a.clone(), c.clone()], &mut nas),
        Some(TaskPick::Reduce { job: JobKey(3) })
    );
    let mut b_reached = b;
    b_reached.reduces_per_rack = vec![3, 0];
    assert_eq!(
        order(vec![a.clone(), b_reached], &mut nas),
        Some(TaskPick::Reduce { job: JobKey(2) })
    );
    let mut a_unreached = a;
    a_unreached.reduces_per_rack = vec![7, 0];
    assert_eq!(
        order(vec![a_unreached, c], &mut nas),
        Some(TaskPick::Reduce { job: JobKey(1) })
    );
}

/// Under congestion MTS holds back maps of medium and heavy jobs.
#[test]
fn congestion_holds_back_heavy_maps() {
    let home = h(0, 0);
    let v_heavy = {
        let mut v = view(
            vec![job(1, 0, 2.0, 1, 0, home), job(2, 0, 0.001, 1, 0, home)],
            &[0],
        );
        v.cross_rack_utilization = vec![0.9, 0.0];
        v
    };
    let mut nas = Nas::new(NasConfig::default());
    assert_eq!(
        nas.offer(&v_heavy, home, SlotKind::Map),
        Some(TaskPick::Map {
            job: JobKey(2),
            index: 0
        })
    );
    let mut calm = v_heavy;
    calm.cross_rack_utilization = vec![0.1, 0.0];
    // Not congested: TrafficThreshold = 4 · (128 + 0.064) MB / 2 maps = 256.128 MB,
    // both maps qualify (128 MB and 64 kB), both jobs are predicted, so the
    // output closest to the space left wins: job 1's.
    assert_eq!(
        nas.offer(&calm, home, SlotKind::Map),
        Some(TaskPick::Map {
            job: JobKey(1),
            index: 0
        })
    );
}

#[test]
fn predictor_averages_finished_maps_and_classifies_at_1_and_100_mb() {
    let mut j = JobState::new(JobKey(1), UserKey(0), Nanos(0), 1);
    j.input_total = Bytes(50 * MB);
    assert!(!predictor::is_predicted(&j));
    assert_eq!(predictor::shuffle_size(&j), Bytes(50 * MB)); // ratio 1.0
    assert_eq!(predictor::class(&j, &Default::default()), ShuffleClass::Medium);
    j.mean_map_ratio = Some(0.01);
    assert!(predictor::is_predicted(&j));
    assert_eq!(predictor::class(&j, &Default::default()), ShuffleClass::Light);
    j.mean_map_ratio = Some(2.1);
    assert_eq!(predictor::class(&j, &Default::default()), ShuffleClass::Heavy);
}
