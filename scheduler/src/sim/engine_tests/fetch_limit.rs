//! MapReduce's `parallelcopies`: how many fetches a reduce keeps in flight,
//! on a hand-made cluster with background traffic.

use super::engine::{computes, finished, job, topo, S};
use crate::engine::*;
use crate::model::job::TaskId;
use crate::model::job::{Job, JobId};
use crate::policy::TaskChoice;
use crate::sim::{SimConfig, SimOutcome, Simulation};
use ocslab_core::{Bytes, HostId, Nanos, Topology};
use std::collections::BTreeMap;

/// The fetch-limit cluster: one rack of 33 hosts at 1 Gbit/s, 2 slots.
/// Job 0 has 8 maps of 100 MB on r0h1..r0h8 and one reduce on r0h0 (800 MB
/// to fetch); jobs 1..=8 each have a 3000 MB map on r0h<i> and 3 reduces on
/// hosts of their own among r0h9..r0h32, so every source host of job 0 also
/// sends 3 long background flows (1000 MB each). All maps take 1 s; reduces
/// start after all maps (slow-start 1.0) and compute 1 s.
fn fetch_limit_run(parallel_copies: Option<u32>) -> SimOutcome {
    let t = topo(1, 33, 2);
    let h = |i: u32| HostId::new(0, i);
    let mut jobs = vec![job(0, 0, 0, &(1..=8).map(h).collect::<Vec<_>>(), 1, 1, 1)];
    let mut reduces: BTreeMap<(JobId, u32), HostId> = [((JobId(0), 0), h(0))].into_iter().collect();
    for i in 1..=8u32 {
        let mut b = job(u64::from(i), i, 0, &[h(i)], 1, 3, 1);
        b.maps[0].input = Bytes(3_000_000_000);
        jobs.push(b);
        for r in 0..3 {
            reduces.insert((JobId(u64::from(i)), r), h(9 + 3 * (i - 1) + r));
        }
    }
    let config = EngineConfig {
        parallel_copies,
        ..EngineConfig::default()
    };
    run_pinned(&t, jobs, reduces, config)
}

/// Runs `jobs` on `t` under [`Pinned`] (reduces on the hosts `reduces`
/// names) over the fluid network with fair sharing; reduces start after
/// all maps (slow-start 1.0) and input reads are free, whatever `config`
/// says of those two.
pub(super) fn run_pinned(
    t: &Topology,
    jobs: Vec<Job>,
    reduces: BTreeMap<(JobId, u32), HostId>,
    config: EngineConfig,
) -> SimOutcome {
    let config = EngineConfig {
        slow_start: 1.0,
        input_reads: false,
        ..config
    };
    let engine = Engine::new(t, jobs, Box::new(Pinned { reduces }), config).expect("engine");
    let net = crate::net::FluidNetwork::new(t, "fair").expect("fluid network");
    Simulation::new(engine, net, SimConfig::default())
        .run(|_, _| {})
        .expect("simulation finishes")
}

/// Job 0's shuffle flows as (source, start, end).
fn job0_fetches(out: &SimOutcome) -> Vec<(HostId, Nanos, Nanos)> {
    out.records
        .flows
        .iter()
        .filter(|f| f.job == JobId(0) && f.kind == FlowKind::Shuffle)
        .map(|f| (f.src, f.started, f.finished.expect("finished")))
        .collect()
}

/// The most flows of `fetches` in flight at once.
fn most_in_flight(fetches: &[(HostId, Nanos, Nanos)]) -> usize {
    fetches
        .iter()
        .map(|&(_, t, _)| fetches.iter().filter(|&&(_, s, e)| s <= t && t < e).count())
        .max()
        .unwrap_or(0)
}

#[test]
fn parallel_copies_limits_a_reduces_fetches_in_flight() {
    // Two fetches at a time: each source host also sends 3 background
    // flows, so job 0's flow gets 1/4 of its NIC (250 Mbit/s) and the
    // reduce's NIC carries only 500 Mbit/s. 100 MB at 250 Mbit/s = 3.2 s a
    // pair, 4 pairs: the shuffle ends at 1 + 12.8 s, the reduce at 14.8 s,
    // whichever hosts are drawn (they are alike).
    let out = fetch_limit_run(Some(2));
    let fetches = job0_fetches(&out);
    assert_eq!(most_in_flight(&fetches), 2, "{fetches:?}");
    let mut srcs: Vec<HostId> = fetches.iter().map(|f| f.0).collect();
    srcs.sort();
    assert_eq!(srcs, (1..=8).map(|i| HostId::new(0, i)).collect::<Vec<_>>());
    let rec = &out.records.jobs[&JobId(0)];
    assert_eq!(rec.shuffle_bytes, Bytes(800_000_000));
    let jct = rec.jct().expect("job 0 finished").0 as i64;
    assert!(
        (jct - 14_800_000_000).abs() <= 1_000,
        "JCT {jct} ns, expected 14.8 s"
    );
}

#[test]
fn without_parallel_copies_a_reduce_fetches_from_every_host_at_once() {
    // All 8 fetches start at 1 s and share the reduce's NIC (125 Mbit/s
    // each, below the 1/4 of a source NIC they could have): 100 MB each
    // in 6.4 s, the reduce ends at 1 + 6.4 + 1 = 8.4 s.
    let out = fetch_limit_run(None);
    let fetches = job0_fetches(&out);
    assert_eq!(fetches.len(), 8);
    assert!(fetches.iter().all(|f| f.1 == Nanos(S)), "{fetches:?}");
    assert_eq!(most_in_flight(&fetches), 8);
    let jct = out.records.jobs[&JobId(0)].jct().expect("job 0 finished").0 as i64;
    assert!(
        (jct - 8_400_000_000).abs() <= 1_000,
        "JCT {jct} ns, expected 8.4 s"
    );
    // A limit above the host count changes nothing.
    let same = fetch_limit_run(Some(8));
    assert_eq!(same.records.jobs, out.records.jobs);
}

#[test]
fn the_fetchers_draw_of_hosts_depends_on_the_seed_only() {
    // Same seed, same order of source hosts; the order is not host order
    // for every seed (Hadoop draws at random, so reduces do not all start
    // on the same hosts).
    let order = |out: &SimOutcome| {
        let mut f = job0_fetches(out);
        f.sort_by_key(|&(h, s, _)| (s, h));
        f.into_iter().map(|(h, _, _)| h).collect::<Vec<_>>()
    };
    let a = order(&fetch_limit_run(Some(2)));
    assert_eq!(a, order(&fetch_limit_run(Some(2))));
    assert_ne!(a, (1..=8).map(|i| HostId::new(0, i)).collect::<Vec<_>>());
}

#[test]
fn a_reduce_at_its_fetch_limit_moves_on_when_its_source_dies() {
    // One fetch at a time; maps on r0h1 and r0h2 done at 1 s, the reduce
    // on r0h0 fetches from one of them. That host dies at 2 s: the fetch
    // from the other starts at once, not when the lost map has re-run.
    let t = topo(1, 3, 1);
    let h = |i: u32| HostId::new(0, i);
    let reduces = [((JobId(0), 0), h(0))].into_iter().collect();
    let config = EngineConfig {
        slow_start: 1.0,
        input_reads: false,
        parallel_copies: Some(1),
        ..EngineConfig::default()
    };
    let j = job(0, 0, 0, &[h(1), h(2)], 1, 1, 1);
    let mut e = Engine::new(&t, vec![j], Box::new(Pinned { reduces }), config).expect("engine");
    let maps = computes(&e.handle(Nanos::ZERO, Event::Wakeup));
    assert_eq!(maps.len(), 2);
    let mut flows = Vec::new();
    for (a, host, _) in maps {
        for c in e.handle(Nanos(S), finished(a, host)) {
            if let Command::StartFlows(f) = c {
                flows.extend(f);
            }
        }
    }
    assert_eq!(flows.len(), 1, "{flows:?}");
    let (first, other) = (flows[0].src, if flows[0].src == h(1) { h(2) } else { h(1) });
    let next: Vec<HostId> = e
        .handle(Nanos(2 * S), Event::HostDead(first))
        .into_iter()
        .filter_map(|c| match c {
            Command::StartFlows(f) => Some(f),
            _ => None,
        })
        .flatten()
        .map(|f| f.src)
        .collect();
    assert_eq!(next, vec![other]);
}

/// Runs each map on the host of its block only, and each reduce only on
/// the host `reduces` names for it.
pub(super) struct Pinned {
    pub(super) reduces: BTreeMap<(JobId, u32), HostId>,
}
impl crate::policy::TaskPolicy for Pinned {
    fn name(&self) -> &str {
        "pinned"
    }
    fn on_free_slot(&mut self, _now: Nanos, view: &ClusterView<'_>, host: HostId) -> Option<TaskChoice> {
        for job in view.active_jobs() {
            if let Some(m) = job.pending_maps_on_host(host).next() {
                return Some(TaskChoice::Run(TaskId::map(job.id(), m)));
            }
            if view.can_start_reduce(job) {
                let mine = job
                    .pending_reduces()
                    .iter()
                    .find(|&&r| self.reduces.get(&(job.id(), r)) == Some(&host));
                if let Some(&r) = mine {
                    return Some(TaskChoice::Run(TaskId::reduce(job.id(), r)));
                }
            }
        }
        None
    }
}
