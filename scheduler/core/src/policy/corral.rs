//! Corral: offline planning of recurring jobs with a latency response function
//! (Jalaparti, Bodik, Menache, Rao, Makarychev & Caesar, "Network-aware
//! scheduling for data-parallel jobs: plan when you can", SIGCOMM'15), the
//! main baseline of Co-scheduler (Li & Shen, ToN 2022, Sec. V-A).
//!
//! The Corral paper is not in the project's paper folder: this module follows
//! its well-known description and issue 7. What Corral does:
//! - For each recurring job, a latency response function `L(r)` predicts its
//!   latency on `r` racks from its predicted characteristics, with the map,
//!   shuffle and reduce stages run one after the other and the job's maps and
//!   reduces on the same `r` racks: waves of maps, then the cross-rack share of
//!   the shuffle, `D_shu·(r − 1)/r²` bytes per rack, over the rack's EPS uplink
//!   (Corral does not know the OCS), then waves of reduces ([`latency`]).
//! - An offline planner gives every recurring job a set of racks and a
//!   priority, packing jobs as rectangles (racks × time) ([`plan`]).
//! - The input of a recurring job has its first replica on the job's racks
//!   (the other two elsewhere, for fault tolerance), and at run time the job's
//!   maps and reduces run only on its racks, in plan priority ([`pick`]).
//! - Non-recurring (ad hoc) jobs are scheduled by the Fair scheduler in the
//!   containers the plan leaves, with HDFS's random placement.
//!
//! ocslab's planner, where it departs from Corral's: Corral alternates a
//! provisioning phase (give more racks to the job with the longest latency)
//! and a prioritization phase (pack jobs in order) over a batch. With jobs
//! arriving over 90 minutes, ocslab plans them in predicted arrival order and
//! gives each the rack count `r` (and the `r` racks free earliest) that
//! finishes it earliest given the racks the plan already holds: provisioning
//! and prioritization are decided together, job by job, in `O(N·R log R)`.
//! The plan is a guide, not a reservation: at run time any free container on a
//! job's racks may run its tasks before its planned start.

use crate::engine::{ClusterView, FreeSlots, JobState};
use crate::model::job::{Job, JobId, TaskId, UserId};
use crate::policy::coscheduler::forecast::{predicted, splitmix64};
use crate::policy::coscheduler::latency::{waves, ClusterShape, JobForecast};
use crate::policy::coscheduler::order::{PendingMap, TaskRef};
use crate::policy::coscheduler::policy::{cluster_shape, truth_of};
use crate::policy::{parse_params, PolicyError, TaskChoice, TaskPolicy};
use crate::{Bytes, HostId, Nanos, Topology};
use rand::seq::index::sample;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Deserialize;
use std::collections::BTreeMap;

/// Corral's latency response function: the job on `r` racks, maps and reduces together.
pub fn latency(job: &JobForecast, cluster: &ClusterShape, r: u32) -> Nanos {
    let r = r.max(1);
    let l_map = waves(job.maps, r, cluster.slots_per_rack, job.map_time);
    let l_red = waves(job.reduces, r, cluster.slots_per_rack, job.reduce_time);
    let per_rack = u128::from(job.shuffle.0) * u128::from(r - 1) / (u128::from(r) * u128::from(r));
    let l_shu = cluster
        .eps_rack_rate
        .time_to_send(Bytes(per_rack as u64))
        .unwrap_or(Nanos(u64::MAX));
    l_map + l_shu + l_red
}

/// A recurring job as the planner knows it before it arrives.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlannedJob {
    /// The job.
    pub job: u64,
    /// Its predicted arrival.
    pub arrival: Nanos,
    /// Its predicted characteristics.
    pub forecast: JobForecast,
}

/// One job's place in the plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assignment {
    /// Its racks (maps, reduces and the first input replica).
    pub racks: Vec<u32>,
    /// Planned start.
    pub start: Nanos,
    /// Planned end.
    pub end: Nanos,
    /// Rank in the plan (0 first).
    pub priority: u32,
}

/// The offline plan for the recurring jobs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// Assignment per job.
    pub jobs: BTreeMap<u64, Assignment>,
}

impl Plan {
    /// The job's racks, if it is planned.
    pub fn racks_of(&self, job: u64) -> Option<&[u32]> {
        self.jobs.get(&job).map(|a| a.racks.as_slice())
    }
}

/// Corral's planner, one job at a time: fed in predicted arrival order it builds the plan of [`plan`].
#[derive(Clone, Debug, PartialEq)]
pub struct Planner {
    cluster: ClusterShape,
    free_at: Vec<Nanos>,
    plan: Plan,
}

impl Planner {
    /// An empty plan on `cluster`.
    pub fn new(cluster: ClusterShape) -> Planner {
        Planner {
            cluster,
            free_at: vec![Nanos::ZERO; cluster.racks.max(1) as usize],
            plan: Plan::default(),
        }
    }

    /// Plans `job` after the jobs added before it: the rack count `r` and the `r` racks free earliest that
    /// finish it earliest (fewer racks on ties).
    pub fn add(&mut self, job: &PlannedJob) -> &Assignment {
        let racks = self.free_at.len() as u32;
        let mut by_free: Vec<u32> = (0..racks).collect();
        by_free.sort_by_key(|&r| (self.free_at[r as usize], r));
        let mut best = (Nanos(u64::MAX), 1, job.arrival);
        for r in 1..=racks {
            let start = self.free_at[by_free[r as usize - 1] as usize].max(job.arrival);
            let end = start + latency(&job.forecast, &self.cluster, r);
            if end < best.0 {
                best = (end, r, start);
            }
        }
        let (end, r, start) = best;
        let mut chosen: Vec<u32> = by_free[..r as usize].to_vec();
        for &c in &chosen {
            self.free_at[c as usize] = end;
        }
        chosen.sort_unstable();
        let priority = self.plan.jobs.len() as u32;
        self.plan.jobs.entry(job.job).or_insert(Assignment {
            racks: chosen,
            start,
            end,
            priority,
        })
    }

    /// The plan so far.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }
}

/// Plans `jobs` on `cluster` (see the module doc): in predicted arrival order, longer jobs first on ties.
pub fn plan(jobs: &[PlannedJob], cluster: &ClusterShape) -> Plan {
    let mut order: Vec<&PlannedJob> = jobs.iter().collect();
    order.sort_by_key(|j| {
        (
            j.arrival,
            std::cmp::Reverse(latency(&j.forecast, cluster, 1)),
            j.job,
        )
    });
    let mut planner = Planner::new(*cluster);
    for j in order {
        planner.add(j);
    }
    planner.plan
}

/// The racks of block `block`'s three replicas: the first on the job's racks (evenly), the other two on
/// distinct random racks outside them when the cluster has enough racks; HDFS-like random when unplanned.
pub fn replica_racks<R: Rng + ?Sized>(
    assigned: Option<&[u32]>,
    block: u32,
    racks: u32,
    rng: &mut R,
) -> Vec<u32> {
    let racks = racks.max(1);
    match assigned {
        Some(own) if !own.is_empty() => {
            let first = own[block as usize % own.len()];
            let others: Vec<u32> = (0..racks).filter(|r| !own.contains(r)).collect();
            let pool: Vec<u32> = if others.len() >= 2 {
                others
            } else {
                (0..racks).filter(|&r| r != first).collect()
            };
            let mut v = vec![first];
            v.extend(
                sample(rng, pool.len(), pool.len().min(2))
                    .into_iter()
                    .map(|i| pool[i]),
            );
            v
        }
        _ => sample(rng, racks as usize, (racks as usize).min(3))
            .into_iter()
            .map(|i| i as u32)
            .collect(),
    }
}

/// One job's pending work as Corral's run-time order sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CorralQueue {
    /// The job.
    pub job: u64,
    /// Its user.
    pub user: u32,
    /// When it arrived.
    pub arrival: Nanos,
    /// Pending maps.
    pub maps: Vec<PendingMap>,
    /// Pending reduces.
    pub reduces: Vec<u32>,
    /// Whether its reduces may start (the engine's slow-start).
    pub reduces_released: bool,
}

/// Why [`pick`] chose a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CorralRule {
    /// A planned recurring job on one of its racks, in plan priority.
    Planned,
    /// A non-recurring job, by the Fair scheduler.
    Fair,
}

fn next_task(j: &CorralQueue, rack: u32) -> Option<TaskRef> {
    if j.reduces_released {
        if let Some(&r) = j.reduces.first() {
            return Some(TaskRef::Reduce(r));
        }
    }
    let local = j.maps.iter().find(|m| m.replica_racks.contains(&rack));
    local.or(j.maps.first()).map(|m| TaskRef::Map(m.task))
}

/// The task to run in a free container on `rack`: planned jobs whose racks include `rack` first, in plan
/// priority; else the first user (in `users`, the Fair order) with an unplanned job, its jobs in arrival order.
/// A planned job never runs off its racks.
pub fn pick(
    rack: u32,
    users: &[u32],
    jobs: &[CorralQueue],
    plan: &Plan,
) -> Option<(u64, TaskRef, CorralRule)> {
    let planned = jobs
        .iter()
        .filter_map(|j| plan.jobs.get(&j.job).map(|a| (a, j)))
        .filter(|(a, _)| a.racks.contains(&rack))
        .filter_map(|(a, j)| next_task(j, rack).map(|t| ((a.priority, j.job), t)))
        .min_by_key(|(k, _)| *k);
    if let Some(((_, job), t)) = planned {
        return Some((job, t, CorralRule::Planned));
    }
    for &user in users {
        let mut mine: Vec<&CorralQueue> = jobs
            .iter()
            .filter(|j| j.user == user && !plan.jobs.contains_key(&j.job))
            .collect();
        mine.sort_by_key(|j| (j.arrival, j.job));
        if let Some((job, t)) = mine.iter().find_map(|j| next_task(j, rack).map(|t| (j.job, t))) {
            return Some((job, t, CorralRule::Fair));
        }
    }
    None
}

/// Parameters of the `corral` policy (`[scheduler_params.corral]`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CorralParams {
    /// Relative error of recurring jobs' forecasts, in [0, 1) (default 0.065, as Co-scheduler's).
    pub forecast_error: f64,
    /// Seed of the forecast and replica draws (the same as Co-scheduler's gives the same forecasts).
    pub seed: u64,
}

impl Default for CorralParams {
    fn default() -> CorralParams {
        CorralParams {
            forecast_error: 0.065,
            seed: 1,
        }
    }
}

/// Corral as a [`TaskPolicy`]: recurring jobs are planned in [`TaskPolicy::place_input`] (which the engine
/// calls job by job, in the workload's order: arrival order for ocslab's generators), ad hoc jobs run by Fair.
#[derive(Debug)]
pub struct Corral {
    params: CorralParams,
    planner: Option<Planner>,
}

impl Corral {
    /// Builds it from its parameters.
    pub fn from_params(t: &toml::Table) -> Result<Box<dyn TaskPolicy>, PolicyError> {
        let params: CorralParams = parse_params("corral", t)?;
        if !(0.0..1.0).contains(&params.forecast_error) {
            return Err(PolicyError::Params {
                policy: "corral".into(),
                message: format!(
                    "forecast_error = {} is out of range: expected 0 to below 1",
                    params.forecast_error
                ),
            });
        }
        Ok(Box::new(Corral {
            params,
            planner: None,
        }))
    }

    fn plan(&self) -> Option<&Plan> {
        self.planner.as_ref().map(|p| p.plan())
    }

    /// Corral's view of `job` for a free container on `host`. Its pending maps
    /// are listed node-local first, then rack-local, then any: the rack-level
    /// rules pick the first map with data on the rack, so a block on this
    /// very host is read from disk rather than over the ToR (Hadoop's
    /// node-before-rack locality; Corral's plan is per rack and says nothing
    /// against it).
    fn queue(view: &ClusterView<'_>, job: &JobState, host: HostId, free: FreeSlots) -> CorralQueue {
        let spec = job.spec();
        let mut maps: Vec<PendingMap> = Vec::new();
        if free.map > 0 && job.has_runnable_map() {
            for m in job
                .pending_maps_on_host(host)
                .take(1)
                .chain(job.pending_maps_on_rack(host.rack).take(1))
                .chain(job.pending_maps().first().copied())
            {
                if maps.iter().any(|p| p.task == m) {
                    continue;
                }
                let replica_racks = spec
                    .maps
                    .get(m as usize)
                    .map(|t| t.replicas.iter().map(|h| h.rack).collect());
                maps.push(PendingMap {
                    task: m,
                    replica_racks: replica_racks.unwrap_or_default(),
                });
            }
        }
        let released = free.reduce > 0 && view.can_start_reduce(job);
        CorralQueue {
            job: job.id().0,
            user: job.user().0,
            arrival: job.ready_at().unwrap_or(spec.arrival),
            maps,
            reduces: if released {
                job.pending_reduces().first().copied().into_iter().collect()
            } else {
                Vec::new()
            },
            reduces_released: released,
        }
    }
}

impl TaskPolicy for Corral {
    fn name(&self) -> &str {
        "corral"
    }

    fn place_input(&mut self, topology: &Topology, job: &Job) -> Option<Vec<Vec<HostId>>> {
        if !job.recurring || topology.racks == 0 || job.maps.is_empty() {
            return None;
        }
        let forecast = predicted(
            &truth_of(job),
            self.params.forecast_error,
            self.params.seed,
            job.id.0,
        );
        let planner = self
            .planner
            .get_or_insert_with(|| Planner::new(cluster_shape(topology)));
        let racks = planner
            .add(&PlannedJob {
                job: job.id.0,
                arrival: job.arrival,
                forecast,
            })
            .racks
            .clone();
        let mut rng = ChaCha8Rng::seed_from_u64(self.params.seed ^ splitmix64(job.id.0 ^ 0xC0AA));
        let hpr = topology.hosts_per_rack.max(1);
        let hosts = (0..job.map_count())
            .map(|b| {
                let mut v: Vec<HostId> = Vec::with_capacity(3);
                for (k, rack) in replica_racks(Some(&racks), b, topology.racks, &mut rng)
                    .into_iter()
                    .enumerate()
                {
                    let host = if k == 0 {
                        (b / racks.len().max(1) as u32) % hpr
                    } else {
                        rng.random_range(0..hpr)
                    };
                    let h = HostId::new(rack, host);
                    if !v.contains(&h) {
                        v.push(h);
                    }
                }
                v
            })
            .collect();
        Some(hosts)
    }

    fn on_free_slot(&mut self, _now: Nanos, view: &ClusterView<'_>, host: HostId) -> Option<TaskChoice> {
        let free = view.host(host)?.free();
        let empty = Plan::default();
        let plan = self.plan().unwrap_or(&empty);
        let rack = host.rack;
        let fits = |j: &JobState| {
            (free.map > 0 && j.has_runnable_map()) || (free.reduce > 0 && j.has_runnable_reduce())
        };
        // Planned jobs on this rack first.
        let planned: Vec<CorralQueue> = view
            .active_jobs()
            .filter(|j| fits(j) && plan.racks_of(j.id().0).is_some_and(|r| r.contains(&rack)))
            .map(|j| Corral::queue(view, j, host, free))
            .collect();
        let choice = pick(rack, &[], &planned, plan).or_else(|| {
            // Then Fair over users, their unplanned jobs.
            let mut by_user: BTreeMap<UserId, Vec<&JobState>> = BTreeMap::new();
            for j in view
                .active_jobs()
                .filter(|j| fits(j) && plan.racks_of(j.id().0).is_none())
            {
                by_user.entry(j.user()).or_default().push(j);
            }
            let users = view.users();
            let mut order: Vec<UserId> = by_user.keys().copied().collect();
            order.sort_by_key(|u| (users.get(u).map_or(0, |s| s.running_tasks()), *u));
            order.into_iter().find_map(|u| {
                let queues: Vec<CorralQueue> = by_user[&u]
                    .iter()
                    .map(|j| Corral::queue(view, j, host, free))
                    .collect();
                pick(rack, &[u.0], &queues, plan)
            })
        });
        choice.map(|(job, t, _)| {
            TaskChoice::Run(match t {
                TaskRef::Map(m) => TaskId::map(JobId(job), m),
                TaskRef::Reduce(r) => TaskId::reduce(JobId(job), r),
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::coscheduler::cct::OcsParams;
    use crate::Bps;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn cluster(racks: u32) -> ClusterShape {
        ClusterShape {
            racks,
            slots_per_rack: 10,
            eps_rack_rate: Bps(8_000_000_000), // 1 GB/s
            ocs: OcsParams {
                port_rate: Bps(80_000_000_000),
                reconfig_delay: Nanos::from_millis(10),
                wavelengths: 1,
                elephant_threshold: Bytes(1_000_000_000),
            },
        }
    }
    fn s(x: u64) -> Nanos {
        Nanos(x * 1_000_000_000)
    }
    fn fc(maps: u32, shuffle_gb: u64) -> JobForecast {
        JobForecast {
            maps,
            reduces: 10,
            shuffle: Bytes(shuffle_gb * 1_000_000_000),
            map_time: s(10),
            reduce_time: s(5),
        }
    }

    #[test]
    fn lrf_trades_waves_against_cross_rack_shuffle() {
        let c = cluster(8);
        let j = fc(40, 8);
        // r = 1: 4 map waves, no cross-rack shuffle, 1 reduce wave.
        assert_eq!(latency(&j, &c, 1), s(40 + 5));
        // r = 2: 2 waves; 8 GB · 1/4 = 2 GB per rack at 1 GB/s.
        assert_eq!(latency(&j, &c, 2), s(20 + 2 + 5));
        // r = 4: 1 wave; 8 · 3/16 = 1.5 GB.
        assert_eq!(
            latency(&j, &c, 4),
            Nanos(10_000_000_000 + 1_500_000_000 + 5_000_000_000)
        );
    }

    #[test]
    fn plan_gives_each_job_the_racks_that_finish_it_earliest() {
        let c = cluster(4);
        let jobs = [
            PlannedJob {
                job: 1,
                arrival: s(0),
                forecast: fc(40, 8),
            },
            PlannedJob {
                job: 2,
                arrival: s(0),
                forecast: fc(10, 0),
            },
            PlannedJob {
                job: 3,
                arrival: s(100),
                forecast: fc(10, 0),
            },
        ];
        let p = plan(&jobs, &c);
        // Job 1 is longer at r = 1, so planned first; 4 racks: 10 + 1.5 + 5 = 16.5 s beats 3 racks
        // (2 waves: 20 + 8·2/9 + 5) and 2 racks (27 s).
        let a1 = &p.jobs[&1];
        assert_eq!(
            (a1.racks.clone(), a1.start, a1.priority),
            (vec![0, 1, 2, 3], s(0), 0)
        );
        assert_eq!(a1.end, Nanos(16_500_000_000));
        // Job 2 (one wave anywhere, no shuffle) waits for a rack: one rack at 16.5 s.
        let a2 = &p.jobs[&2];
        assert_eq!((a2.racks.len(), a2.start, a2.end), (1, a1.end, a1.end + s(15)));
        // Job 3 arrives when all racks are free: one rack at its arrival.
        assert_eq!((p.jobs[&3].start, p.jobs[&3].racks.len()), (s(100), 1));
    }

    #[test]
    fn planned_jobs_stay_on_their_racks_and_go_first() {
        let plan = Plan {
            jobs: [(
                7,
                Assignment {
                    racks: vec![1, 2],
                    start: s(0),
                    end: s(9),
                    priority: 0,
                },
            )]
            .into(),
        };
        let planned = CorralQueue {
            job: 7,
            user: 1,
            arrival: s(5),
            maps: vec![PendingMap {
                task: 0,
                replica_racks: vec![2, 5, 6],
            }],
            reduces: vec![0],
            reduces_released: false,
        };
        let adhoc = CorralQueue {
            job: 8,
            user: 2,
            arrival: s(0),
            maps: vec![PendingMap {
                task: 3,
                replica_racks: vec![0, 5, 6],
            }],
            reduces: vec![],
            reduces_released: false,
        };
        let jobs = [planned, adhoc];
        assert_eq!(
            pick(1, &[2, 1], &jobs, &plan),
            Some((7, TaskRef::Map(0), CorralRule::Planned))
        );
        assert_eq!(
            pick(0, &[1, 2], &jobs, &plan),
            Some((8, TaskRef::Map(3), CorralRule::Fair))
        );
        // Without ad hoc work, rack 0 stays idle rather than run the planned job off its racks.
        assert_eq!(pick(0, &[1, 2], &jobs[..1], &plan), None);
    }

    #[test]
    fn first_replica_on_the_assigned_racks() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for b in 0..10 {
            let r = replica_racks(Some(&[4, 9]), b, 12, &mut rng);
            assert_eq!(r[0], if b % 2 == 0 { 4 } else { 9 });
            assert_eq!(r.len(), 3);
            assert!(!r[1..].contains(&4) && !r[1..].contains(&9) && r[1] != r[2]);
        }
        let r = replica_racks(None, 0, 12, &mut rng);
        assert!(r.len() == 3 && r[0] != r[1] && r[1] != r[2] && r[0] != r[2]);
    }
}
