//! ShuffleWatcher's distinctive decisions on hand-made cluster states.

use super::samp;
use super::*;
use crate::policy::netaware::{cross_rack_shuffle, JobState, NetView, PendingMap, UserKey};
use crate::Bytes;

const GB: u64 = 1_000_000_000;
const MB: u64 = 1_000_000;

fn h(rack: u32, host: u32) -> HostId {
    HostId::new(rack, host)
}

/// A job with `maps` blocks of 64 MB, block i on the hosts `replicas(i)`.
fn job(id: u64, user: u32, arrival_s: f64, racks: u32, blocks: &[Vec<HostId>]) -> JobState {
    let mut j = JobState::new(JobKey(id), UserKey(user), Nanos::from_secs_f64(arrival_s), racks);
    for (i, reps) in blocks.iter().enumerate() {
        j.pending_maps.push(PendingMap {
            index: i as u32,
            input: Bytes(64 * MB),
            replicas: reps.clone(),
        });
        for r in 0..racks {
            if reps.iter().any(|x| x.rack == r) {
                j.input_per_rack[r as usize] += Bytes(64 * MB);
            }
        }
        j.input_total += Bytes(64 * MB);
    }
    j.maps_total = blocks.len() as u32;
    j.reduces_total = 10;
    j.reduces_pending = 10;
    j
}

/// Gives a job finished maps: `ratio` of output per input, and its output
/// on the given hosts.
fn finish_maps(j: &mut JobState, input: u64, output: u64, where_: &[(HostId, u64)]) {
    j.maps_done = j.maps_total.max(1);
    j.pending_maps.clear();
    j.done_map_input = Bytes(input);
    j.done_map_output = Bytes(output);
    for (host, b) in where_ {
        j.add_map_output(*host, Bytes(*b));
    }
    j.reduces_ready = true;
}

fn view(racks: u32, jobs: Vec<JobState>, users: &[u32]) -> NetView {
    let mut v = NetView::new(racks, 4, 4);
    v.jobs = jobs;
    v.users = users.iter().map(|&u| UserKey(u)).collect();
    v
}

/// Fig. 7: two jobs with 100 GB of intermediate data each on two racks.
/// Job 1 holds 90 GB on rack 0 and 10 GB on rack 1, job 2 the mirror image;
/// both have 10 reduces. Spread evenly (5 + 5) each job moves half of its
/// data across: 50 GB. SARP places 9 + 1 (job 1) and 1 + 9 (job 2): a reduce
/// on rack 0 fetches a tenth of rack 1's 10 GB, a reduce on rack 1 a tenth of
/// rack 0's 90 GB, so 9·1 + 1·9 = 18 GB cross the core — 64% less.
#[test]
fn fig7_sarp_cuts_cross_rack_shuffle_from_50_to_18_gb() {
    let mut j1 = job(1, 0, 0.0, 2, &[]);
    let mut j2 = job(2, 0, 0.0, 2, &[]);
    j1.maps_total = 100;
    j2.maps_total = 100;
    finish_maps(
        &mut j1,
        100 * GB,
        100 * GB,
        &[(h(0, 0), 90 * GB), (h(1, 0), 10 * GB)],
    );
    finish_maps(
        &mut j2,
        100 * GB,
        100 * GB,
        &[(h(0, 0), 10 * GB), (h(1, 0), 90 * GB)],
    );
    for (j, expect) in [(&j1, vec![9, 1]), (&j2, vec![1, 9])] {
        let pref = sarp::preferred_reduces_per_rack(j, 2, 0.15, &[5, 5]);
        assert_eq!(pref, expect);
        let inter = j.map_output_per_rack(2);
        assert_eq!(cross_rack_shuffle(&inter, &[5, 5]), Bytes(50 * GB));
        assert_eq!(cross_rack_shuffle(&inter, &pref), Bytes(18 * GB));
    }
    // And through the policy: with job 1's reduces enabled, SARP's plan is 9 + 1.
    let mut sw = ShuffleWatcher::new(ShuffleWatcherConfig::default());
    let v = view(2, vec![j1, j2], &[0]);
    sw.offer(&v, h(0, 0), SlotKind::Reduce);
    assert_eq!(sw.preferred_reduces(JobKey(1)), Some(&[9, 1][..]));
    assert_eq!(sw.preferred_reduces(JobKey(2)), Some(&[1, 9][..]));
}

#[test]
fn sarp_counts_round_to_the_reduce_count() {
    let mut j = job(1, 0, 0.0, 3, &[]);
    j.maps_total = 10;
    finish_maps(
        &mut j,
        30 * GB,
        30 * GB,
        &[(h(0, 0), 10 * GB), (h(1, 0), 10 * GB), (h(2, 0), 10 * GB)],
    );
    j.reduces_total = 7;
    let pref = sarp::preferred_reduces_per_rack(&j, 3, 0.15, &[7, 0, 0]);
    assert_eq!(pref.iter().sum::<u32>(), 7);
    assert_eq!(pref, vec![3, 2, 2]);
}

#[test]
fn sarp_uses_samps_tentative_counts_before_the_map_completion_threshold() {
    let mut j = job(1, 0, 0.0, 2, &[]);
    j.maps_total = 100;
    j.maps_done = 10; // 10% <= 15%
    j.add_map_output(h(1, 0), Bytes(GB));
    assert_eq!(
        sarp::preferred_reduces_per_rack(&j, 2, 0.15, &[10, 0]),
        vec![10, 0]
    );
    j.maps_done = 16; // 16% > 15%: the real intermediate data (all on rack 1) decides
    assert_eq!(
        sarp::preferred_reduces_per_rack(&j, 2, 0.15, &[10, 0]),
        vec![0, 10]
    );
}

/// Fig. 5: both jobs' input is replicated on both racks. Map locality alone
/// would spread each job over both racks; SAMP gives job 1 rack 0 and job 2
/// rack 1 (no remote Map traffic, no cross-rack Shuffle).
#[test]
fn fig5_samp_puts_two_jobs_with_replicated_input_on_different_racks() {
    let blocks: Vec<Vec<HostId>> = (0..4).map(|i| vec![h(0, i), h(1, i)]).collect();
    let j1 = job(1, 0, 0.0, 2, &blocks);
    let j2 = job(2, 1, 1.0, 2, &blocks);
    let v = view(2, vec![j1, j2], &[0, 1]);
    let mut sw = ShuffleWatcher::new(ShuffleWatcherConfig::default());
    sw.on_job_arrival(&v, JobKey(1));
    sw.on_job_arrival(&v, JobKey(2));
    let p1 = sw.samp_plan(JobKey(1)).expect("planned");
    let p2 = sw.samp_plan(JobKey(2)).expect("planned");
    assert_eq!(p1.preferred_racks, vec![0]);
    assert_eq!(p2.preferred_racks, vec![1]);
    assert_eq!(p1.tentative_reduces, vec![10, 0]);
    assert_eq!(p1.estimated_cross_rack, 0.0);
}

/// Input 6 blocks on rack 0 and 4 on rack 1 (one replica each). With
/// ShuffleInputRatio 1.0 (S = 640 MB): one rack costs 256 MB of remote Map
/// input, two racks cost 0 + 320 MB of Shuffle: SAMP stops at one rack, and
/// (the Fig. 4 slip) does not keep the second rack it tried. With a known
/// ratio of 0.1 (S = 64 MB) two racks cost 32 MB < 256 MB: both racks.
#[test]
fn samp_stops_when_the_estimate_stops_falling_and_keeps_the_minimum() {
    let blocks: Vec<Vec<HostId>> = (0..10)
        .map(|i| vec![h(if i < 6 { 0 } else { 1 }, i % 4)])
        .collect();
    let j = job(1, 0, 0.0, 2, &blocks);
    let heavy = samp::plan(2, &j, 1.0, &[0, 0]);
    assert_eq!(heavy.preferred_racks, vec![0]);
    assert_eq!(heavy.estimated_cross_rack, (4 * 64 * MB) as f64);
    let light = samp::plan(2, &j, 0.1, &[0, 0]);
    assert_eq!(light.preferred_racks, vec![0, 1]);
    assert_eq!(light.tentative_reduces, vec![5, 5]);
}

/// One user, two jobs: job 1 has pending maps (remote to the free host),
/// job 2 is Shuffle-heavy with reduces ready. Saturated: NASS curbs the
/// Shuffle and runs a map; not saturated: it runs job 2's reduce.
#[test]
fn nass_prefers_maps_when_saturated_and_heavy_reduces_when_not() {
    let j1 = job(1, 0, 0.0, 2, &[vec![h(1, 0)]]);
    let mut j2 = job(2, 0, 1.0, 2, &[]);
    j2.maps_total = 10;
    finish_maps(&mut j2, 10 * GB, 15 * GB, &[(h(0, 1), 15 * GB)]);
    let mut v = view(2, vec![j1, j2], &[0]);
    let mut sw = ShuffleWatcher::new(ShuffleWatcherConfig::default());
    v.cross_rack_utilization = vec![0.9, 0.1];
    assert_eq!(
        sw.offer(&v, h(0, 0), SlotKind::Any),
        Some(TaskPick::Map {
            job: JobKey(1),
            index: 0
        })
    );
    v.cross_rack_utilization = vec![0.5, 0.1];
    assert_eq!(
        sw.offer(&v, h(0, 0), SlotKind::Any),
        Some(TaskPick::Reduce { job: JobKey(2) })
    );
}

/// Saturated, reduce slot: a Shuffle-light job's reduce goes before a
/// Shuffle-heavy one's even though the heavy job arrived first; not
/// saturated, the heavy one goes first.
#[test]
fn nass_orders_reduces_by_shuffle_volume() {
    let mut heavy = job(1, 0, 0.0, 2, &[]);
    heavy.maps_total = 1;
    finish_maps(&mut heavy, GB, 2 * GB, &[(h(0, 1), 2 * GB)]);
    let mut light = job(2, 0, 1.0, 2, &[]);
    light.maps_total = 1;
    finish_maps(&mut light, GB, MB, &[(h(0, 1), MB)]);
    assert!(is_shuffle_heavy(&heavy) && !is_shuffle_heavy(&light));
    let mut v = view(2, vec![heavy, light], &[0]);
    let mut sw = ShuffleWatcher::new(ShuffleWatcherConfig::default());
    v.cross_rack_utilization = vec![0.95, 0.0];
    assert_eq!(
        sw.offer(&v, h(0, 0), SlotKind::Reduce),
        Some(TaskPick::Reduce { job: JobKey(2) })
    );
    v.cross_rack_utilization = vec![0.2, 0.0];
    assert_eq!(
        sw.offer(&v, h(0, 0), SlotKind::Reduce),
        Some(TaskPick::Reduce { job: JobKey(1) })
    );
}

/// Not saturated, SARP wants job 1's reduces on rack 1 only: a free slot on
/// rack 0 serves job 2 (whose SARP share of rack 0 is unmet) first, though
/// job 1 arrived earlier.
#[test]
fn nass_serves_the_job_whose_sarp_share_of_the_rack_is_unmet() {
    let mut j1 = job(1, 0, 0.0, 2, &[]);
    j1.maps_total = 10;
    finish_maps(&mut j1, 10 * GB, 20 * GB, &[(h(1, 0), 20 * GB)]);
    let mut j2 = job(2, 0, 1.0, 2, &[]);
    j2.maps_total = 10;
    finish_maps(&mut j2, 10 * GB, 20 * GB, &[(h(0, 0), 20 * GB)]);
    let v = view(2, vec![j1, j2], &[0]);
    let mut sw = ShuffleWatcher::new(ShuffleWatcherConfig::default());
    assert_eq!(
        sw.offer(&v, h(0, 2), SlotKind::Reduce),
        Some(TaskPick::Reduce { job: JobKey(2) })
    );
    assert_eq!(
        sw.offer(&v, h(1, 2), SlotKind::Reduce),
        Some(TaskPick::Reduce { job: JobKey(1) })
    );
}

/// Anti-starvation (Sec. 3.4): the user's job from an earlier 10-minute
/// window goes first even when NASS would prefer the later job's task.
#[test]
fn earlier_window_overrides_nass() {
    let old = job(1, 0, 0.0, 2, &[vec![h(1, 0)]]); // a remote map, window 0
    let mut new = job(2, 0, 700.0, 2, &[]); // window 1, heavy reduce ready
    new.maps_total = 1;
    finish_maps(&mut new, GB, 2 * GB, &[(h(0, 1), 2 * GB)]);
    let v = view(2, vec![old.clone(), new.clone()], &[0]);
    let mut sw = ShuffleWatcher::new(ShuffleWatcherConfig::default());
    assert_eq!(
        sw.offer(&v, h(0, 0), SlotKind::Any),
        Some(TaskPick::Map {
            job: JobKey(1),
            index: 0
        })
    );
    // Same jobs in one window: NASS (not saturated) picks the heavy reduce.
    let mut new_same_window = new;
    new_same_window.arrival = Nanos::from_secs_f64(500.0);
    let v = view(2, vec![old, new_same_window], &[0]);
    assert_eq!(
        sw.offer(&v, h(0, 0), SlotKind::Any),
        Some(TaskPick::Reduce { job: JobKey(2) })
    );
}

/// Strict fairness serves the first user even with a remote map; relaxed
/// fairness passes it over (serving user 1's local map) until it has waited
/// `wait`.
#[test]
fn relaxed_fairness_skips_a_remote_map_for_at_most_the_wait() {
    let a = job(1, 0, 0.0, 2, &[vec![h(1, 0)]]);
    let b = job(2, 1, 0.0, 2, &[vec![h(0, 0)]]);
    let mut v = view(2, vec![a, b], &[0, 1]);
    let cfg = ShuffleWatcherConfig {
        samp: false,
        ..ShuffleWatcherConfig::default()
    };
    let mut strict = ShuffleWatcher::new(cfg.clone());
    assert_eq!(
        strict.offer(&v, h(0, 0), SlotKind::Map),
        Some(TaskPick::Map {
            job: JobKey(1),
            index: 0
        })
    );
    let wait = Nanos::from_secs_f64(5.0);
    let mut relaxed = ShuffleWatcher::new(ShuffleWatcherConfig {
        fairness: Fairness::Relaxed { wait },
        ..cfg
    });
    v.now = Nanos::from_secs_f64(10.0);
    assert_eq!(
        relaxed.offer(&v, h(0, 0), SlotKind::Map),
        Some(TaskPick::Map {
            job: JobKey(2),
            index: 0
        })
    );
    v.now = Nanos::from_secs_f64(15.0);
    assert_eq!(
        relaxed.offer(&v, h(0, 0), SlotKind::Map),
        Some(TaskPick::Map {
            job: JobKey(1),
            index: 0
        })
    );
}

#[test]
fn shuffle_input_ratio_starts_at_one_and_follows_finished_maps() {
    let mut j = job(1, 0, 0.0, 2, &[vec![h(0, 0)]]);
    assert_eq!(shuffle_input_ratio(&j), 1.0);
    assert!(!is_shuffle_heavy(&j));
    j.known_ratio = Some(1.4);
    assert!(is_shuffle_heavy(&j));
    j.done_map_input = Bytes(100);
    j.done_map_output = Bytes(30);
    assert_eq!(shuffle_input_ratio(&j), 0.3);
}
