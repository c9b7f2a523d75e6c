//! Co-scheduler's OCS- and coflow-aware task order: Li & Shen, ToN 2022,
//! Sec. IV-G, Alg. 2, under per-user fairness (the Fair scheduler's order of
//! users, Zaharia et al. EuroSys'10).
//!
//! When a container on rack `r` is free, users are sorted by the fairness
//! policy and the first user with a task that may run here gets one, chosen in
//! this order (the rule numbers are Alg. 2's lines):
//!
//! 4. a reduce of a shuffle-heavy job whose best schedule contains `r`;
//! 5. a map of a shuffle-heavy job whose data is on `r` and whose maps are on
//!    fewer than `R_map` racks;
//! 6. a reduce of a non-shuffle-heavy job;
//! 7. any map of a non-shuffle-heavy job;
//! 8. any available reduce;
//! 9. any available map.
//!
//! Decisions where the pseudocode is ambiguous (each tested below):
//! - Line 5 reads "placed on fewer than `R_map` racks"; taken literally a job
//!   could never add maps to its own racks once it has `R_map` of them. ocslab
//!   reads it as: `r` is already one of the job's map racks, or the job has
//!   fewer than `R_map` and `r` holds a pending block that none of its map
//!   racks holds (so a new map rack adds locality instead of duplicating an
//!   equivalent replica rack).
//! - Reduces of a job with a best schedule are available only on its racks,
//!   up to each rack's `d_i` (line 8 does not override the best schedule: the
//!   point of ExploreSchedule is to wait for the racks it chose). Reduces of a
//!   job without one (no OCS-capable schedule, or an ablation without the
//!   reduce guideline) are available anywhere once released. Reduces are
//!   released only after the job's last map (Sec. IV-A); the caller sets that.
//! - Maps stay work-conserving (line 9): a shuffle-heavy job's map may run off
//!   its guideline when nothing else can; its small map output is then sent
//!   over EPS, which Sec. IV-E.2 provides for ("disregard" `SM_i < T_e`).
//!   But not while a container on its guideline is free (`MapGuide::room_on_guide`):
//!   Sec. IV-G gives lines 8-9 to tasks whose guideline "cannot be found",
//!   and a free guideline container is one. Without this, an idle cluster
//!   (every container free at once, offered one by one) ran most of a
//!   shuffle-heavy job's maps through line 9 on whichever racks were offered
//!   first: job17294 of the 100-job Sec. V run had maps on 50 racks for
//!   `R_map` = 10, so `SM_1` (2.2 GB) allowed `R_red` = 1 and its 109 GB
//!   shuffle went through one OCS port (CCT 9.8 s vs Fair's 6.2 s).
//! - Within a user, jobs go in arrival order (then id); within a rule, a map
//!   whose block is on `r` comes before one that is not.

use crate::Nanos;
use std::collections::{BTreeMap, BTreeSet};

/// Which line of Alg. 2 chose a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rule {
    /// Line 4: a shuffle-heavy job's reduce on a rack of its best schedule.
    HeavyReduceOnSchedule,
    /// Line 5: a shuffle-heavy job's map following its map guideline.
    HeavyMapOnGuideline,
    /// Line 6: a non-shuffle-heavy job's reduce.
    LightReduce,
    /// Line 7: a non-shuffle-heavy job's map.
    LightMap,
    /// Line 8: any available reduce.
    AnyReduce,
    /// Line 9: any available map.
    AnyMap,
}

/// A pending map task and the racks holding replicas of its input block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingMap {
    /// The task's index within its job.
    pub task: u32,
    /// Racks holding a replica of its block.
    pub replica_racks: Vec<u32>,
}

/// A shuffle-heavy job's map guideline (Sec. IV-E.1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapGuide {
    /// `R_map`.
    pub r_map: u32,
    /// Racks its maps have been placed on so far.
    pub map_racks: BTreeSet<u32>,
    /// Whether one of its guideline racks has a free map container now, so that line 9 need not run
    /// its map off the guideline (see the module doc).
    pub room_on_guide: bool,
}

/// One job's pending work as Alg. 2 sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobQueue {
    /// The job.
    pub job: u64,
    /// Its user.
    pub user: u32,
    /// When it arrived.
    pub arrival: Nanos,
    /// Whether it is (estimated) shuffle-heavy.
    pub shuffle_heavy: bool,
    /// Pending maps.
    pub maps: Vec<PendingMap>,
    /// The map guideline, if the job follows one.
    pub map_guide: Option<MapGuide>,
    /// Pending reduces (task indices).
    pub reduces: Vec<u32>,
    /// Whether its reduces may start (Sec. IV-A: after its last map).
    pub reduces_released: bool,
    /// Its best schedule: reduces still to place per rack.
    pub reduce_plan: Option<BTreeMap<u32, u32>>,
}

/// A task Alg. 2 picked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskRef {
    /// Map task (index within the job).
    Map(u32),
    /// Reduce task (index within the job).
    Reduce(u32),
}

/// Alg. 2's choice for a free container.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pick {
    /// The job.
    pub job: u64,
    /// The task.
    pub task: TaskRef,
    /// The line that chose it.
    pub rule: Rule,
}

/// The Fair scheduler's order of users: fewest running tasks first, then user id.
pub fn fair_user_order(running: &BTreeMap<u32, u32>) -> Vec<u32> {
    let mut users: Vec<(u32, u32)> = running.iter().map(|(&u, &n)| (n, u)).collect();
    users.sort_unstable();
    users.into_iter().map(|(_, u)| u).collect()
}

fn local_first(maps: &[PendingMap], rack: u32) -> Option<u32> {
    maps.iter()
        .find(|m| m.replica_racks.contains(&rack))
        .or(maps.first())
        .map(|m| m.task)
}

/// Line 5's test for `job` on `rack` (see the module doc), returning the map to run.
fn guided_map(job: &JobQueue, rack: u32) -> Option<u32> {
    let guide = job.map_guide.as_ref()?;
    let local = || job.maps.iter().filter(|m| m.replica_racks.contains(&rack));
    if guide.map_racks.contains(&rack) {
        return local().next().map(|m| m.task);
    }
    if guide.map_racks.len() >= guide.r_map as usize {
        return None;
    }
    local()
        .find(|m| !m.replica_racks.iter().any(|r| guide.map_racks.contains(r)))
        .map(|m| m.task)
}

fn planned_reduce(job: &JobQueue, rack: u32) -> Option<u32> {
    let quota = *job.reduce_plan.as_ref()?.get(&rack)?;
    (job.reduces_released && quota > 0)
        .then(|| job.reduces.first().copied())
        .flatten()
}

fn free_reduce(job: &JobQueue) -> Option<u32> {
    (job.reduces_released && job.reduce_plan.is_none())
        .then(|| job.reduces.first().copied())
        .flatten()
}

impl Rule {
    /// The rules in Alg. 2's order.
    pub const ALL: [Rule; 6] = [
        Rule::HeavyReduceOnSchedule,
        Rule::HeavyMapOnGuideline,
        Rule::LightReduce,
        Rule::LightMap,
        Rule::AnyReduce,
        Rule::AnyMap,
    ];

    /// The task of `job` this rule allows in a free container on `rack`.
    fn find(self, job: &JobQueue, rack: u32) -> Option<TaskRef> {
        let heavy = job.shuffle_heavy;
        match self {
            Rule::HeavyReduceOnSchedule => heavy
                .then(|| planned_reduce(job, rack))
                .flatten()
                .map(TaskRef::Reduce),
            Rule::HeavyMapOnGuideline => heavy.then(|| guided_map(job, rack)).flatten().map(TaskRef::Map),
            Rule::LightReduce => (!heavy).then(|| free_reduce(job)).flatten().map(TaskRef::Reduce),
            Rule::LightMap => (!heavy)
                .then(|| local_first(&job.maps, rack))
                .flatten()
                .map(TaskRef::Map),
            Rule::AnyReduce => free_reduce(job)
                .or_else(|| planned_reduce(job, rack))
                .map(TaskRef::Reduce),
            Rule::AnyMap => {
                let waits = heavy && job.map_guide.as_ref().is_some_and(|g| g.room_on_guide);
                (!waits)
                    .then(|| local_first(&job.maps, rack))
                    .flatten()
                    .map(TaskRef::Map)
            }
        }
    }
}

/// The task of `jobs` to run in a free container on `rack`, users taken in `users` order.
pub fn pick(rack: u32, users: &[u32], jobs: &[JobQueue]) -> Option<Pick> {
    for &user in users {
        let mut mine: Vec<&JobQueue> = jobs.iter().filter(|j| j.user == user).collect();
        mine.sort_by_key(|j| (j.arrival, j.job));
        for rule in Rule::ALL {
            if let Some((job, task)) = mine.iter().find_map(|j| rule.find(j, rack).map(|t| (j.job, t))) {
                return Some(Pick { job, task, rule });
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(job: u64, user: u32, arrival: u64, heavy: bool) -> JobQueue {
        JobQueue {
            job,
            user,
            arrival: Nanos(arrival),
            shuffle_heavy: heavy,
            maps: Vec::new(),
            map_guide: None,
            reduces: Vec::new(),
            reduces_released: false,
            reduce_plan: None,
        }
    }
    fn map(task: u32, racks: &[u32]) -> PendingMap {
        PendingMap {
            task,
            replica_racks: racks.to_vec(),
        }
    }

    /// A hand-made cluster state: user 1 has a heavy job A (reduces planned on racks 2 and 5), a heavy
    /// job B still mapping (R_map = 2, maps on rack 3 so far), a light job C with a released reduce and a
    /// map; user 2 has a light job D with a map.
    fn state() -> Vec<JobQueue> {
        let mut a = job(10, 1, 1, true);
        a.reduces = vec![0, 1, 2];
        a.reduces_released = true;
        a.reduce_plan = Some([(2, 2), (5, 1)].into());
        let mut b = job(11, 1, 2, true);
        b.maps = vec![map(4, &[3, 6, 9]), map(5, &[4, 7, 10]), map(6, &[4, 7, 10])];
        b.map_guide = Some(MapGuide {
            r_map: 2,
            map_racks: [3].into(),
            room_on_guide: false,
        });
        let mut c = job(12, 1, 3, false);
        c.reduces = vec![0];
        c.reduces_released = true;
        c.maps = vec![map(1, &[0, 1, 2]), map(2, &[4, 8, 9])];
        let mut d = job(20, 2, 0, false);
        d.maps = vec![map(0, &[1, 2, 3])];
        vec![d, c, b, a]
    }

    fn at(rack: u32, users: &[u32], jobs: &[JobQueue]) -> Option<(u64, TaskRef, Rule)> {
        pick(rack, users, jobs).map(|p| (p.job, p.task, p.rule))
    }

    #[test]
    fn alg2_order_on_a_hand_made_set_of_pending_tasks() {
        let jobs = state();
        let u = [1, 2];
        // Rack 2 is in A's best schedule: line 4.
        assert_eq!(
            at(2, &u, &jobs),
            Some((10, TaskRef::Reduce(0), Rule::HeavyReduceOnSchedule))
        );
        // Rack 3 is B's map rack and holds map 4's block: line 5.
        assert_eq!(
            at(3, &u, &jobs),
            Some((11, TaskRef::Map(4), Rule::HeavyMapOnGuideline))
        );
        // Rack 7: B has 1 < R_map = 2 racks and rack 7 holds blocks rack 3 does not: a new map rack (line 5).
        assert_eq!(
            at(7, &u, &jobs),
            Some((11, TaskRef::Map(5), Rule::HeavyMapOnGuideline))
        );
        // Rack 9 holds map 4's block, but rack 3 already serves that block: no new map rack; C's reduce (line 6).
        assert_eq!(
            at(9, &u, &jobs),
            Some((12, TaskRef::Reduce(0), Rule::LightReduce))
        );
        // With C's reduce gone, rack 8 gets C's local map 2 (line 7, locality first).
        let mut jobs2 = jobs.clone();
        jobs2[1].reduces.clear();
        assert_eq!(at(8, &u, &jobs2), Some((12, TaskRef::Map(2), Rule::LightMap)));
        // Without C, rack 0 has nothing on guideline: A's reduces wait for racks 2 and 5, so line 9 gives
        // B's map off its guideline.
        let only_heavy: Vec<JobQueue> = jobs.iter().filter(|j| j.shuffle_heavy).cloned().collect();
        assert_eq!(at(0, &u, &only_heavy), Some((11, TaskRef::Map(4), Rule::AnyMap)));
        // ... but not while a container on B's guideline is free: the map waits for it (nothing here).
        let mut waiting = only_heavy.clone();
        for j in waiting.iter_mut() {
            if let Some(g) = j.map_guide.as_mut() {
                g.room_on_guide = true;
            }
        }
        assert_eq!(at(0, &u, &waiting), None);
        // Fairness first: user 2 ahead of user 1 gets D's map even though user 1 has line-4 work.
        assert_eq!(at(2, &[2, 1], &jobs), Some((20, TaskRef::Map(0), Rule::LightMap)));
    }

    #[test]
    fn reduces_wait_for_release_and_their_planned_racks() {
        let mut jobs = state();
        jobs[3].reduces_released = false;
        // A's reduces are not released yet: rack 5 is not line 4 for A and goes to C's reduce (line 6).
        assert_eq!(
            at(5, &[1], &jobs),
            Some((12, TaskRef::Reduce(0), Rule::LightReduce))
        );
        // A quota used up on rack 5 keeps A off rack 5.
        let mut jobs = state();
        jobs[3].reduce_plan = Some([(2, 2), (5, 0)].into());
        let only_a = vec![jobs[3].clone()];
        assert_eq!(at(5, &[1], &only_a), None);
        // A heavy job without a best schedule (no OCS-capable schedule) releases its reduces anywhere (line 8).
        let mut a = jobs[3].clone();
        a.reduce_plan = None;
        assert_eq!(at(5, &[1], &[a]), Some((10, TaskRef::Reduce(0), Rule::AnyReduce)));
    }

    #[test]
    fn fair_order_is_fewest_running_first() {
        let running: BTreeMap<u32, u32> = [(1, 5), (2, 0), (3, 5), (4, 2)].into();
        assert_eq!(fair_user_order(&running), vec![2, 4, 1, 3]);
    }
}
