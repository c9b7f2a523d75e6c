//! The shuffle hold gives way when it can never end (`engine::hold`), and
//! only then.

use super::engine::{job, simulate, topo, S};
use crate::engine::*;
use crate::model::job::JobId;
use crate::sim::SimOutcome;
use ocslab_core::{HostId, Nanos};

/// Three hosts of one slot, one per rack, 1 Gbit/s. Job 0: maps on r0h0
/// and r1h0 (1 s, 100 MB each) and `reduces` reduces of 1 s. Job 1: one
/// map of 100 s on r2h0, which holds that slot. Reduces start after all
/// maps, the shuffle held until a job's reduces are placed.
fn run(reduces: u32) -> SimOutcome {
    let t = topo(3, 1, 1);
    let h = |r: u32| HostId::new(r, 0);
    let jobs = vec![
        job(0, 0, 0, &[h(0), h(1)], 1, reduces, 1),
        job(1, 1, 0, &[h(2)], 100, 0, 0),
    ];
    let config = EngineConfig {
        slow_start: 1.0,
        hold_shuffle_until_reduces_placed: true,
        ..EngineConfig::default()
    };
    simulate(&t, jobs, "fifo", config)
}

fn first_shuffle_flow(out: &SimOutcome) -> Nanos {
    out.records
        .flows
        .iter()
        .filter(|f| f.job == JobId(0) && f.kind == FlowKind::Shuffle)
        .map(|f| f.started)
        .min()
        .expect("job 0 shuffles")
}

#[test]
fn a_job_with_more_reduces_than_slots_shuffles_at_once() {
    // At 1 s job 0 places 2 of its 4 reduces on the two freed slots; job 1
    // holds the third slot until 100 s. The 2 it lacks can never fit in
    // the 1 slot its held reduces leave, so its shuffle starts at 1 s and
    // it ends long before job 1 frees a slot.
    let out = run(4);
    let job0 = &out.records.jobs[&JobId(0)];
    assert!(job0.shuffle_hold_released);
    assert_eq!(first_shuffle_flow(&out), Nanos(S));
    let done = job0.finished.expect("job 0 finishes");
    assert!(done < Nanos(100 * S), "job 0 ended at {done}");
}

#[test]
fn a_hold_that_can_end_waits_for_the_last_reduce() {
    // With 3 reduces the one it lacks fits in job 1's slot once that frees:
    // the hold lasts until the third reduce is placed at 100 s.
    let out = run(3);
    assert!(!out.records.jobs[&JobId(0)].shuffle_hold_released);
    assert_eq!(first_shuffle_flow(&out), Nanos(100 * S));
}
