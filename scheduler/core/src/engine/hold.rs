//! The shuffle hold (`hold_shuffle_until_reduces_placed`, Co-scheduler
//! Sec. IV-A): no flow of a job's shuffle starts before its last reduce is
//! placed, so the scheduler knows every destination before the coflow
//! starts. The paper assumes a job's reduces can all be placed at once. A
//! held reduce keeps its slot until its shuffle runs, so a job with more
//! reduces than the cluster has slots, or held jobs whose placed reduces
//! fill it between them, would wait forever. A hold gives way, with the
//! reduces placed so far, when it can never end:
//!
//! - **It cannot end** ([`stuck_hold`]): slots that held reduces occupy free
//!   only when their job's shuffle runs; every other slot frees eventually.
//!   If no order in which the held jobs could place their remaining reduces
//!   lets a job place its own (the banker's algorithm over each rack's
//!   slots), its hold is released as soon as that is so. A policy that
//!   places a job's reduces only on racks it chose says how many each rack
//!   may still take ([`super::TaskPolicy::reduce_quotas`]): such a job can
//!   place its reduces only in those racks' slots, so two jobs that each
//!   hold the slots of a rack the other waits for are stuck, however many
//!   slots other racks have free. Checked when a held job places a reduce
//!   or a host dies; it sees the hosts alive then.
//! - **It has stopped**: every live attempt is a held reduce and no flow is in
//!   flight. A policy that waits (for racks it chose, say) would otherwise
//!   wait forever.
//!
//! Either way the job with the most reduces placed (ties: lower id) goes
//! first, and its record says so (`JobRecord::shuffle_hold_released`).

use super::event::AttemptId;
use super::state::JobState;
use super::Engine;
use crate::model::job::{JobId, TaskKind};
use crate::Nanos;
use std::cmp::Reverse;
use std::collections::BTreeMap;

/// A job whose shuffle is held, as [`stuck_hold`] weighs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Held {
    pub(super) job: JobId,
    /// Reduces placed (first attempts).
    pub(super) placed: u32,
    /// Slots its live reduce attempts occupy: (rack, slots).
    pub(super) occupied: Vec<(u32, u32)>,
    /// Reduces it has yet to place.
    pub(super) unplaced: u32,
    /// The most of them each rack may take, when its policy pinned them
    /// to racks: (rack, reduces). `None`: any rack.
    pub(super) quotas: Option<Vec<(u32, u32)>>,
}

/// The slots that held reduces leave free, by rack and in all.
struct Free {
    by_rack: Vec<u64>,
    total: u64,
}

impl Free {
    /// Racks of `slots` slots each, less what `held` occupies.
    fn new(slots: &[u32], held: &[Held]) -> Free {
        let mut by_rack: Vec<u64> = slots.iter().map(|&s| u64::from(s)).collect();
        for &(rack, n) in held.iter().flat_map(|h| &h.occupied) {
            if let Some(f) = by_rack.get_mut(rack as usize) {
                *f = f.saturating_sub(u64::from(n));
            }
        }
        let total = by_rack.iter().sum();
        Free { by_rack, total }
    }

    /// How many of `h`'s unplaced reduces fit.
    fn room(&self, h: &Held) -> u64 {
        match &h.quotas {
            None => self.total,
            Some(quotas) => quotas
                .iter()
                .map(|&(rack, q)| {
                    self.by_rack
                        .get(rack as usize)
                        .map_or(0, |&f| f.min(u64::from(q)))
                })
                .sum(),
        }
    }

    /// `h`'s hold ends: the slots it occupies free.
    fn release(&mut self, h: &Held) {
        for &(rack, n) in &h.occupied {
            if let Some(f) = self.by_rack.get_mut(rack as usize) {
                *f += u64::from(n);
                self.total += u64::from(n);
            }
        }
    }
}

/// The held job whose hold can never end, if any, on racks of `slots`
/// reduce slots each. Slots not occupied by held reduces are free or will
/// be. A job that can place its remaining reduces in them can end its hold,
/// and then frees the slots it occupies too; the jobs left when no more can
/// are stuck. Of those, the one with the most reduces placed (ties: lower
/// id).
pub(super) fn stuck_hold(slots: &[u32], held: &[Held]) -> Option<JobId> {
    let mut free = Free::new(slots, held);
    let mut left: Vec<&Held> = held.iter().collect();
    loop {
        let before = left.len();
        left.retain(|h| {
            let can_end = u64::from(h.unplaced) <= free.room(h);
            if can_end {
                free.release(h);
            }
            !can_end
        });
        if left.len() == before {
            break;
        }
    }
    left.iter()
        .max_by_key(|h| release_order(h.placed, h.job))
        .map(|h| h.job)
}

/// Which of several holds to release first: the greatest key, i.e. the
/// most reduces placed, then the lower id.
fn release_order(placed: u32, job: JobId) -> (u32, Reverse<JobId>) {
    (placed, Reverse(job))
}

impl Engine {
    /// Whether `job`'s shuffle waits for the rest of its reduces to be placed
    /// (`hold_shuffle_until_reduces_placed`, unless the hold was released).
    pub(super) fn shuffle_held(&self, job: &JobState) -> bool {
        self.c.config.hold_shuffle_until_reduces_placed
            && !job.shuffle_released
            && job.reduces_placed < job.spec.reduce_count()
    }

    /// Releases every hold that cannot end or has stopped (module docs).
    pub(super) fn release_stuck_shuffles(&mut self, now: Nanos) {
        if !self.c.config.hold_shuffle_until_reduces_placed {
            return;
        }
        if std::mem::take(&mut self.holds_changed) {
            let mut slots = vec![0; self.c.topo.racks as usize];
            for h in self.c.hosts.iter().filter(|h| h.alive) {
                if let Some(s) = slots.get_mut(h.id.rack as usize) {
                    *s += h.reduce_slots;
                }
            }
            loop {
                let held: Vec<Held> = self
                    .c
                    .active
                    .iter()
                    .filter_map(|(_, id)| self.c.jobs.get(id))
                    .filter(|j| j.reduces_placed > 0 && self.shuffle_held(j))
                    .map(|j| self.held(j))
                    .collect();
                let Some(id) = stuck_hold(&slots, &held) else {
                    break;
                };
                self.release_hold(now, id);
            }
        }
        if let Some(id) = self.stopped_hold() {
            self.release_hold(now, id);
        }
    }

    /// Held job `j` as [`stuck_hold`] weighs it.
    fn held(&self, j: &JobState) -> Held {
        let mut occupied: BTreeMap<u32, u32> = BTreeMap::new();
        for a in j.live_reduces() {
            if let Some(attempt) = self.c.attempts.get(&a) {
                *occupied.entry(attempt.host.rack).or_default() += 1;
            }
        }
        Held {
            job: j.spec.id,
            placed: j.reduces_placed,
            occupied: occupied.into_iter().collect(),
            unplaced: j.spec.reduce_count() - j.reduces_placed,
            quotas: self
                .policy
                .reduce_quotas(j.spec.id)
                .map(|q| q.into_iter().collect()),
        }
    }

    /// The held job to release when every live attempt is a reduce whose
    /// shuffle is held and no flow is in flight: no slot can free again.
    fn stopped_hold(&self) -> Option<JobId> {
        if !self.flows.is_empty() {
            return None;
        }
        let mut first = None;
        for a in self.c.attempts.keys() {
            let job = self.c.jobs.get(&a.task.job)?;
            if a.task.kind != TaskKind::Reduce || !self.shuffle_held(job) {
                return None;
            }
            first = first.max(Some(release_order(job.reduces_placed, a.task.job)));
        }
        first.map(|(_, Reverse(id))| id)
    }

    /// `id`'s shuffle starts with the reduces it has placed.
    fn release_hold(&mut self, now: Nanos, id: JobId) {
        let Some(job) = self.c.jobs.get_mut(&id) else {
            return;
        };
        job.shuffle_released = true;
        let readers: Vec<AttemptId> = job.live_reduces().collect();
        if let Some(r) = self.records.jobs.get_mut(&id) {
            r.shuffle_hold_released = true;
        }
        for a in readers {
            self.pump(now, a);
            self.check_reduce_ready(now, a);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A held job whose reduces may go to any rack, on a cluster of one rack.
    fn held(job: u64, placed: u32, occupied: u32, unplaced: u32) -> Held {
        Held {
            job: JobId(job),
            placed,
            occupied: vec![(0, occupied)],
            unplaced,
            quotas: None,
        }
    }

    /// A held job that occupies `occupied` slots of `on` and may place its
    /// `unplaced` reduces only as `quotas` allow.
    fn pinned(job: u64, on: (u32, u32), unplaced: u32, quotas: &[(u32, u32)]) -> Held {
        Held {
            job: JobId(job),
            placed: on.1,
            occupied: vec![on],
            unplaced,
            quotas: Some(quotas.to_vec()),
        }
    }

    #[test]
    fn a_job_wider_than_the_cluster_is_stuck_from_its_first_reduce() {
        // 12,000 slots (Co-scheduler Sec. V's cluster); 29,793 reduces.
        assert_eq!(stuck_hold(&[12_000], &[held(7, 1, 1, 29_792)]), Some(JobId(7)));
        assert_eq!(stuck_hold(&[12_000], &[held(7, 1, 1, 11_999)]), None);
    }

    #[test]
    fn a_hold_that_can_end_after_another_is_not_stuck() {
        // 4 slots: job 1 occupies 1 and lacks 2; job 2 occupies 2 and lacks
        // 1. One slot is free: job 2 places its last reduce, its shuffle
        // runs and frees 3 slots, then job 1 can place its 2.
        let jobs = [held(1, 1, 1, 2), held(2, 2, 2, 1)];
        assert_eq!(stuck_hold(&[4], &jobs), None);
        // With 3 slots none is free: both are stuck, and the one with more
        // reduces placed is released first.
        assert_eq!(stuck_hold(&[3], &jobs), Some(JobId(2)));
    }

    #[test]
    fn ties_go_to_the_lower_id() {
        let jobs = [held(5, 2, 2, 9), held(3, 2, 2, 9)];
        assert_eq!(stuck_hold(&[6], &jobs), Some(JobId(3)));
    }

    #[test]
    fn occupied_slots_beyond_the_cluster_leave_none_free() {
        // Speculative attempts may occupy more slots than the live hosts
        // have left (a host died): nothing is free, nothing underflows.
        assert_eq!(stuck_hold(&[2], &[held(1, 3, 3, 1)]), Some(JobId(1)));
        assert_eq!(stuck_hold(&[2], &[held(1, 3, 3, 0)]), None);
    }

    #[test]
    fn two_jobs_each_holding_the_rack_the_other_waits_for_are_stuck() {
        // Racks 0, 1 and 2 of 2 slots. Job 1 holds rack 0 and may place its
        // last reduce only on rack 1; job 2 holds rack 1 and may place its
        // last only on rack 0. Rack 2's slots are free, but neither may use
        // them: both are stuck, and the lower id goes first.
        let jobs = [pinned(1, (0, 2), 1, &[(1, 1)]), pinned(2, (1, 2), 1, &[(0, 1)])];
        assert_eq!(stuck_hold(&[2, 2, 2], &jobs), Some(JobId(1)));
        // Counted over the whole cluster, as when any rack will do, 2 slots
        // are free and both could end.
        let anywhere = [held(1, 2, 2, 1), held(2, 2, 2, 1)];
        assert_eq!(stuck_hold(&[6], &anywhere), None);
    }

    #[test]
    fn a_pinned_hold_that_another_hold_frees_is_not_stuck() {
        // Job 1 holds rack 0 and waits for rack 1, which job 3 holds; job 3
        // may use any rack, places its last reduce on rack 2 and frees rack
        // 1 when its shuffle runs.
        let jobs = [
            pinned(1, (0, 2), 1, &[(1, 1)]),
            Held {
                occupied: vec![(1, 2)],
                ..held(3, 2, 0, 1)
            },
        ];
        assert_eq!(stuck_hold(&[2, 2, 1], &jobs), None);
        // Without rack 2's slot job 3 is stuck too. Both have placed 2
        // reduces, so the lower id, job 1, goes first.
        assert_eq!(stuck_hold(&[2, 2, 0], &jobs), Some(JobId(1)));
    }

    #[test]
    fn a_quota_caps_what_a_rack_gives_a_job() {
        // Job 1 lacks 3 reduces: at most 1 on rack 1 and 2 on rack 2, which
        // has 4 free slots. 1 + 2 = 3 fit.
        let fits = [pinned(1, (0, 1), 3, &[(1, 1), (2, 2)])];
        assert_eq!(stuck_hold(&[1, 1, 4], &fits), None);
        // With rack 1 held by nobody but gone (0 slots), only 2 fit.
        assert_eq!(stuck_hold(&[1, 0, 4], &fits), Some(JobId(1)));
        // A quota on a rack the cluster does not have gives nothing.
        let elsewhere = [pinned(1, (0, 1), 1, &[(9, 1)])];
        assert_eq!(stuck_hold(&[1, 1, 4], &elsewhere), Some(JobId(1)));
    }
}
