//! The shuffle hold gives way when it can never end (`engine::hold`), and
//! only then; with a policy that pins reduces to racks, as soon as the
//! racks it waits for can never free.

use super::engine::{job, simulate, topo, S};
use crate::engine::*;
use crate::model::job::{JobId, TaskId, TaskKind};
use crate::policy::{TaskChoice, TaskPolicy};
use crate::sim::SimOutcome;
use ocslab_core::{HostId, Nanos};
use std::collections::BTreeMap;

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

/// Runs each map on the host of its block only, and a job's reduces only on
/// racks of its quota, at most as many as the quota says; tells the engine
/// the quotas left when `tells`.
struct RackQuotas {
    quotas: BTreeMap<JobId, BTreeMap<u32, u32>>,
    tells: bool,
}

impl TaskPolicy for RackQuotas {
    fn name(&self) -> &str {
        "rack-quotas"
    }
    fn on_free_slot(&mut self, _now: Nanos, view: &ClusterView<'_>, host: HostId) -> Option<TaskChoice> {
        for job in view.active_jobs() {
            if let Some(m) = job.pending_maps_on_host(host).next() {
                return Some(TaskChoice::Run(TaskId::map(job.id(), m)));
            }
            let quota = self.quotas.get(&job.id()).and_then(|q| q.get(&host.rack));
            if quota.is_some_and(|&q| q > 0) && view.can_start_reduce(job) {
                if let Some(&r) = job.pending_reduces().first() {
                    return Some(TaskChoice::Run(TaskId::reduce(job.id(), r)));
                }
            }
        }
        None
    }
    fn on_task_started(&mut self, _now: Nanos, view: &ClusterView<'_>, attempt: AttemptId) {
        let Some(rack) = view.attempt(attempt).map(|a| a.host().rack) else {
            return;
        };
        if attempt.task.kind == TaskKind::Reduce {
            if let Some(q) = self
                .quotas
                .get_mut(&attempt.task.job)
                .and_then(|q| q.get_mut(&rack))
            {
                *q = q.saturating_sub(1);
            }
        }
    }
    fn reduce_quotas(&self, job: JobId) -> Option<BTreeMap<u32, u32>> {
        self.tells.then(|| self.quotas.get(&job).cloned()).flatten()
    }
}

/// Five racks of one 1-slot host: A (rack 0), B, M0, M1, L. Job 0: a map
/// of 3 s on M0, one reduce each on A and B. Job 1: a map of 1 s on M1,
/// one reduce each on B and A. Maps of jobs without reduces hold A until
/// 2 s, B until 4 s and L until 100 s. Job 1 places a reduce on A at 2 s,
/// job 0 one on B at 4 s: each then holds the rack the other waits for,
/// while M0, M1 and later L have slots neither may use.
fn crossed(tells: bool) -> SimOutcome {
    let t = topo(5, 1, 1);
    let h = |r: u32| HostId::new(r, 0);
    let jobs = vec![
        job(0, 0, 0, &[h(2)], 3, 2, 1),
        job(1, 1, 0, &[h(3)], 1, 2, 1),
        job(2, 2, 0, &[h(4)], 100, 0, 0),
        job(3, 3, 0, &[h(0)], 2, 0, 0),
        job(4, 4, 0, &[h(1)], 4, 0, 0),
    ];
    let quotas = [
        (JobId(0), [(0, 1), (1, 1)].into()),
        (JobId(1), [(1, 1), (0, 1)].into()),
    ]
    .into();
    let config = EngineConfig {
        slow_start: 1.0,
        hold_shuffle_until_reduces_placed: true,
        ..EngineConfig::default()
    };
    let policy = Box::new(RackQuotas { quotas, tells });
    super::support::simulate(&t, jobs, policy, config, &[])
}

#[test]
fn holds_that_wait_for_each_others_racks_give_way_at_once() {
    // Counted per rack, neither hold can end once job 0 places its reduce
    // at 4 s: job 0 (as many placed, lower id) shuffles then.
    let out = crossed(true);
    assert!(out.records.jobs[&JobId(0)].shuffle_hold_released);
    assert_eq!(first_shuffle_flow(&out), Nanos(4 * S));
    // Job 0's reduce on B ends and job 1 places its last one there: job
    // 1's hold ends as the paper's does, long before 100 s.
    let job1 = &out.records.jobs[&JobId(1)];
    assert!(!job1.shuffle_hold_released);
    assert!(job1.finished.expect("job 1 finishes") < Nanos(100 * S));
}

#[test]
fn without_the_quotas_the_crossed_holds_wait_for_the_cluster_to_stop() {
    // Counted over the cluster, M0's and M1's slots seem free for either:
    // the holds wait until L's map ends at 100 s and no slot can free again.
    let out = crossed(false);
    assert!(out.records.jobs[&JobId(0)].shuffle_hold_released);
    assert_eq!(first_shuffle_flow(&out), Nanos(100 * S));
}
