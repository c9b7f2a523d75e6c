//! Dawn's distinctive decisions on hand-made cluster states.

use super::plan::{self, Preferred, Stage};
use super::*;
use crate::policy::netaware::{JobKey, PendingMap, UserKey};
use crate::{Bytes, Nanos};

const GB: u64 = 1_000_000_000;

fn h(rack: u32, host: u32) -> HostId {
    HostId::new(rack, host)
}

/// A job whose maps are all done, with intermediate data `inter[r]` GB on
/// host 0 of rack r, reduces ready, and `out` GB of output to come.
fn reducing(id: u64, inter: &[u64], out: u64) -> JobState {
    let mut j = JobState::new(JobKey(id), UserKey(0), Nanos(id), inter.len() as u32);
    j.maps_total = 10;
    j.maps_done = 10;
    for (r, &g) in inter.iter().enumerate() {
        if g > 0 {
            j.add_map_output(h(r as u32, 0), Bytes(g * GB));
        }
    }
    j.reduces_total = 4;
    j.reduces_pending = 4;
    j.reduces_ready = true;
    j.expected_output = Bytes(out * GB);
    j
}

/// A map-stage job with one block of `gb[r]` GB on host 0 of each rack r.
fn mapping(id: u64, user: u32, gb: &[u64]) -> JobState {
    let mut j = JobState::new(JobKey(id), UserKey(user), Nanos(id), gb.len() as u32);
    for (r, &g) in gb.iter().enumerate() {
        if g > 0 {
            let i = j.pending_maps.len() as u32;
            j.pending_maps.push(PendingMap {
                index: i,
                input: Bytes(g * GB),
                replicas: vec![h(r as u32, 0)],
            });
            j.input_per_rack[r] = Bytes(g * GB);
            j.input_total += Bytes(g * GB);
        }
    }
    j.maps_total = j.pending_maps.len() as u32;
    j
}

/// Three racks. Job x has finished its maps: 60 GB of intermediate data on
/// rack 0, 40 GB on rack 1; its 50 GB of output feed job y, whose other
/// parent z wrote its 100 GB on rack 2.
///
/// max_r = rack 0 (eq. 2: 40 GB cross). For dep_r enumerate where x's
/// output lands (eqs. 3-4): rack 0 → y's input is 50 / 0 / 100, y would
/// run on rack 2 and pull 50 GB; rack 1 → the same 50 GB; rack 2 → all
/// 150 GB on rack 2, 0 GB. So dep_r = rack 2, costing 100 GB of x's
/// intermediate data now (eq. 5) to save y 50 GB later.
fn dependent_view() -> NetView {
    let mut v = NetView::new(3, 2, 2);
    v.users = vec![UserKey(0)];
    v.jobs = vec![reducing(1, &[60, 40, 0], 50)];
    v.dag.add_edge(JobKey(1), JobKey(3));
    v.dag.add_edge(JobKey(2), JobKey(3));
    v.outputs
        .insert(JobKey(2), vec![Bytes(0), Bytes(0), Bytes(100 * GB)]);
    v
}

#[test]
fn dep_r_differs_from_max_r_when_a_childs_other_parent_sits_elsewhere() {
    let v = dependent_view();
    let x = &v.jobs[0];
    assert_eq!(plan::dependent_cost(&v, x, 0), 50 * GB);
    assert_eq!(plan::dependent_cost(&v, x, 1), 50 * GB);
    assert_eq!(plan::dependent_cost(&v, x, 2), 0);
    let p = plan::plan(&v, x).expect("reduce stage");
    assert_eq!(p.stage, Stage::Reduce);
    assert_eq!(
        p.max_r,
        Preferred {
            rack: 0,
            traffic: 40 * GB
        }
    );
    assert_eq!(
        p.dep_r,
        Some(Preferred {
            rack: 2,
            traffic: 100 * GB
        })
    );
}

#[test]
fn dep_r_is_max_r_when_the_child_reads_only_this_job() {
    let mut v = dependent_view();
    v.outputs.clear(); // z has written nothing yet
    let p = plan::plan(&v, &v.jobs[0]).expect("reduce stage");
    assert_eq!(p.max_r.rack, 0);
    assert_eq!(p.dep_r, None);
}

/// Saturated, x's selected rack is max_r (rack 0): a heartbeat from rack 2
/// serves job 4, whose map prefers rack 2, and one from rack 0 serves x.
/// Not saturated, x's selected rack is dep_r (rack 2) and its 100 GB beat
/// job 4's 0 GB in the decreasing order: rack 2 runs x's reduce.
#[test]
fn alg1_sends_reduces_to_dep_r_only_when_the_network_has_room() {
    let mut v = dependent_view();
    v.jobs.push(mapping(4, 0, &[0, 0, 1]));
    let mut dawn = Dawn::default();
    v.cross_rack_utilization = vec![0.9, 0.9, 0.9];
    assert_eq!(
        dawn.offer(&v, h(2, 1), SlotKind::Any),
        Some(TaskPick::Map {
            job: JobKey(4),
            index: 0
        })
    );
    assert_eq!(
        dawn.offer(&v, h(0, 1), SlotKind::Any),
        Some(TaskPick::Reduce { job: JobKey(1) })
    );
    v.cross_rack_utilization = vec![0.5, 0.5, 0.5];
    assert_eq!(
        dawn.offer(&v, h(2, 1), SlotKind::Any),
        Some(TaskPick::Reduce { job: JobKey(1) })
    );
    // Not saturated, rack 0 is nobody's selected rack: the fallback (fair
    // order, earliest job) serves x there too, rather than idling.
    assert_eq!(
        dawn.offer(&v, h(0, 1), SlotKind::Any),
        Some(TaskPick::Reduce { job: JobKey(1) })
    );
}

/// Eq. 1 in bytes, not blocks: three 1 GB blocks on rack 0 against one
/// 5 GB block on rack 1. Counting blocks would pick rack 0; bytes pick
/// rack 1 (3 GB cross instead of 5 GB), the unit eqs. 2 and 5 use.
#[test]
fn eq1_counts_bytes_so_stages_compare_in_one_unit() {
    let mut j = mapping(1, 0, &[1, 5]);
    for i in 1..3 {
        j.pending_maps.push(PendingMap {
            index: i + 1,
            input: Bytes(GB),
            replicas: vec![h(0, 1)],
        });
    }
    j.input_per_rack[0] = Bytes(3 * GB);
    j.input_total = Bytes(8 * GB);
    assert_eq!(
        plan::map_stage(&j),
        Preferred {
            rack: 1,
            traffic: 3 * GB
        }
    );
}

/// Two map-stage jobs prefer rack 0: job 1 would pull 1 GB across, job 2
/// 9 GB. Saturated: least traffic first (job 1); not saturated: most (job 2).
#[test]
fn alg1_orders_jobs_by_traffic_according_to_saturation() {
    let mut v = NetView::new(2, 2, 2);
    v.users = vec![UserKey(0)];
    v.jobs = vec![mapping(1, 0, &[9, 1]), mapping(2, 0, &[10, 9])];
    let mut dawn = Dawn::default();
    v.cross_rack_utilization = vec![0.95, 0.0];
    assert_eq!(
        dawn.offer(&v, h(0, 0), SlotKind::Map),
        Some(TaskPick::Map {
            job: JobKey(1),
            index: 0
        })
    );
    v.cross_rack_utilization = vec![0.1, 0.0];
    assert_eq!(
        dawn.offer(&v, h(0, 0), SlotKind::Map),
        Some(TaskPick::Map {
            job: JobKey(2),
            index: 0
        })
    );
}

/// Two jobs tie at rack level (same rack, same traffic); at node level the
/// saturated scheduler takes the one with input on the free host.
#[test]
fn ties_are_broken_by_node_level_data() {
    let mut v = NetView::new(2, 2, 2);
    v.users = vec![UserKey(0)];
    let a = mapping(1, 0, &[2, 1]); // block on h0.0
    let mut b = mapping(2, 0, &[2, 1]);
    b.pending_maps[0].replicas = vec![h(0, 1)]; // block on h0.1
    v.jobs = vec![a, b];
    v.cross_rack_utilization = vec![0.9, 0.0];
    let mut dawn = Dawn::default();
    assert_eq!(
        dawn.offer(&v, h(0, 1), SlotKind::Map),
        Some(TaskPick::Map {
            job: JobKey(2),
            index: 0
        })
    );
    assert_eq!(
        dawn.offer(&v, h(0, 0), SlotKind::Map),
        Some(TaskPick::Map {
            job: JobKey(1),
            index: 0
        })
    );
}

/// No job prefers rack 1: the slot goes to the fairness order's first user
/// with a runnable job (user 1 before user 0 here), not left idle.
#[test]
fn fallback_follows_the_fairness_order_when_no_job_prefers_the_rack() {
    let mut v = NetView::new(2, 2, 2);
    v.users = vec![UserKey(1), UserKey(0)];
    v.jobs = vec![mapping(1, 0, &[3, 0]), mapping(2, 1, &[4, 0])];
    let mut dawn = Dawn::default();
    assert_eq!(
        dawn.offer(&v, h(1, 0), SlotKind::Map),
        Some(TaskPick::Map {
            job: JobKey(2),
            index: 0
        })
    );
    assert_eq!(dawn.offer(&v, h(1, 0), SlotKind::Reduce), None);
    // It never waits for a heartbeat: no job could take that reduce slot.
    assert_eq!(dawn.next_wakeup(), None);
}

/// Alg. 1 read literally (`dawn-strict`): the same state leaves rack 1's
/// slot free, and asks to be offered slots again a heartbeat later (the
/// engine offers only on events otherwise), while a slot on rack 0, which
/// both jobs prefer, is taken.
#[test]
fn strict_dawn_leaves_a_slot_no_job_prefers_idle() {
    let mut v = NetView::new(2, 2, 2);
    v.now = Nanos::from_millis(500);
    v.users = vec![UserKey(1), UserKey(0)];
    v.jobs = vec![mapping(1, 0, &[3, 0]), mapping(2, 1, &[4, 0])];
    let mut dawn = Dawn::new(DawnConfig {
        unpreferred: Unpreferred::Idle,
        heartbeat: Nanos::from_millis(3000),
        ..DawnConfig::default()
    });
    assert_eq!(dawn.next_wakeup(), None);
    assert_eq!(dawn.offer(&v, h(1, 0), SlotKind::Map), None);
    assert_eq!(dawn.next_wakeup(), Some(Nanos::from_millis(3500)));
    assert_eq!(
        dawn.offer(&v, h(0, 1), SlotKind::Map),
        Some(TaskPick::Map {
            job: JobKey(2),
            index: 0
        })
    );
}
