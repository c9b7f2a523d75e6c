//! `merge_fetches`: a job's fetches between two hosts that start together
//! go as one flow of weight w, and the run is the one separate fetches give.

use super::engine::{job, topo};
use super::fetch_limit::run_pinned;
use crate::engine::*;
use crate::model::job::JobId;
use crate::sim::SimOutcome;
use ocslab_core::HostId;
use std::collections::BTreeMap;

/// One rack of 8 hosts at 1 Gbit/s, 3 slots. Job 0: 4 maps on r0h1..r0h4
/// (100 MB output each) and 4 reduces, two on r0h0 and two on r0h5, so
/// each map host sends each reduce host two fetches of 25 MB. Job 1: a map
/// on r0h6 and a reduce on r0h0, whose 100 MB fetch shares r0h0's NIC with
/// job 0's eight. Maps take 1 s, reduces 1 s after all maps, the shuffle
/// held until a job's reduces are placed (as in Co-scheduler's runs).
fn run(merge_fetches: bool) -> SimOutcome {
    let t = topo(1, 8, 3);
    let h = |i: u32| HostId::new(0, i);
    let jobs = vec![
        job(0, 0, 0, &(1..=4).map(h).collect::<Vec<_>>(), 1, 4, 1),
        job(1, 1, 0, &[h(6)], 1, 1, 1),
    ];
    let reduces: BTreeMap<(JobId, u32), HostId> = [
        ((JobId(0), 0), h(0)),
        ((JobId(0), 1), h(0)),
        ((JobId(0), 2), h(5)),
        ((JobId(0), 3), h(5)),
        ((JobId(1), 0), h(0)),
    ]
    .into_iter()
    .collect();
    let config = EngineConfig {
        hold_shuffle_until_reduces_placed: true,
        merge_fetches,
        ..EngineConfig::default()
    };
    run_pinned(&t, jobs, reduces, config)
}

#[test]
fn merged_fetches_take_their_fetches_shares_and_finish_as_they_would() {
    // r0h0's NIC is shared nine ways either way: eight fetches of job 0 and
    // job 1's one, or four flows of weight 2 and job 1's. Job 1's 100 MB
    // at 1/9 Gbit/s, and job 0's fetches, end at the same times; a merged
    // flow that took one share would give job 1 a fifth of the NIC.
    let apart = run(false);
    let merged = run(true);
    let shuffle = |o: &SimOutcome, j: u64| -> Vec<(HostId, HostId, u32, u64)> {
        let mut f: Vec<_> = o
            .records
            .flows
            .iter()
            .filter(|f| f.job == JobId(j) && f.kind == FlowKind::Shuffle)
            .map(|f| (f.src, f.dst, f.weight, f.bytes.0))
            .collect();
        f.sort();
        f
    };
    let one_each: Vec<_> = (1..=4)
        .flat_map(|s| [0, 0, 5, 5].map(|d| (HostId::new(0, s), HostId::new(0, d), 1, 25_000_000)))
        .collect();
    assert_eq!(shuffle(&apart, 0), one_each);
    let pairs: Vec<_> = (1..=4)
        .flat_map(|s| [0, 5].map(|d| (HostId::new(0, s), HostId::new(0, d), 2, 50_000_000)))
        .collect();
    assert_eq!(shuffle(&merged, 0), pairs);
    assert_eq!(shuffle(&merged, 1), shuffle(&apart, 1));
    for j in [0, 1] {
        let (a, m) = (&apart.records.jobs[&JobId(j)], &merged.records.jobs[&JobId(j)]);
        assert_eq!(m.shuffle_bytes, a.shuffle_bytes, "job {j}");
        let (ja, jm) = (a.jct().expect("done").0, m.jct().expect("done").0);
        assert!(ja.abs_diff(jm) <= 1, "job {j}: JCT {jm} ns merged, {ja} ns apart");
    }
    // Job 1's fetch: 100 MB at 1/9 of 1 Gbit/s while job 0's run, so
    // its reduce ends well after the 1 + 0.8 + 1 s it would take alone.
    let j1 = merged.records.jobs[&JobId(1)].jct().expect("done").0;
    assert!(j1 > 4_000_000_000, "job 1 JCT {j1} ns");
}
