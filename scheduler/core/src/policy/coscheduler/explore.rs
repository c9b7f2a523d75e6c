//! Co-scheduler's best reduce task schedule selector: Li & Shen, ToN 2022,
//! Sec. IV-F, Alg. 1 (ExploreSchedule) and eq. 12.
//!
//! For a possible schedule `[R_red, D, CCT]`, ExploreSchedule sorts `D` in
//! descending order and gives each `d_i` the not-yet-selected rack whose
//! release time for `d_i` containers is the smallest (`t_i`); the schedule's
//! estimate is `CCT + max t_i`. The best schedule has the smallest estimate.
//! A rack's release time for `d` containers is "now" if it has `d` free
//! containers, else the time the `(d − free)`-th of its running tasks ends by
//! the linear estimate `T_rem = t_elapsed · (1 − P) / P` (eq. 12).
//!
//! The paper's optimality argument (after Alg. 1) holds because release times
//! grow with `d`: whichever racks an assignment uses, the `i` largest demands
//! need `i` distinct racks, one of them outside the `i − 1` racks the greedy
//! took before step `i`, and that rack cannot release `d_j ≥ d_i` containers
//! before `t_i`. `tests::greedy_matches_brute_force` checks it on random
//! instances against exhaustive search.
//!
//! Decisions: ties go to the lower rack id, and between schedules to the
//! smaller `R_red` (more aggregation); a task that reports no progress yet
//! (`P = 0`) has no eq. 12 estimate and the caller supplies one (e.g. the
//! job's expected task duration). Eq. 15's WSS variant of Alg. 1 ("select the
//! top W racks") is not specified enough to implement and is not.

use super::reduce_guideline::PossibleSchedule;
use crate::Nanos;

/// Eq. 12: the remaining time of a task that has run `elapsed` and reports progress `p` in (0, 1].
pub fn t_rem(elapsed: Nanos, p: f64) -> Option<Nanos> {
    if !(p > 0.0 && p.is_finite()) {
        return None;
    }
    let p = p.min(1.0);
    Some(Nanos::from_secs_f64(elapsed.as_secs_f64() * (1.0 - p) / p))
}

/// What a rack will release: free containers now and the remaining times of its running tasks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RackRelease {
    /// The rack.
    pub rack: u32,
    /// Containers free now.
    pub free: u32,
    /// Remaining time of each running task, ascending.
    remaining: Vec<Nanos>,
}

impl RackRelease {
    /// A rack with `free` free containers and running tasks with these remaining times (any order).
    pub fn new(rack: u32, free: u32, mut remaining: Vec<Nanos>) -> RackRelease {
        remaining.sort_unstable();
        RackRelease {
            rack,
            free,
            remaining,
        }
    }

    /// Time from now until `d` containers are free on this rack; `None` if it has fewer than `d` in all.
    pub fn release_after(&self, d: u32) -> Option<Nanos> {
        if d <= self.free {
            return Some(Nanos::ZERO);
        }
        self.remaining.get((d - self.free - 1) as usize).copied()
    }
}

/// ExploreSchedule's answer for one possible schedule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Explored {
    /// `(rack, reduces)` for each `d_i` of the sorted `D`.
    pub racks: Vec<(u32, u32)>,
    /// `t_max`: when the last selected rack has its containers.
    pub t_max: Nanos,
    /// `CCT + t_max`: when the reduces are estimated to have their shuffle data.
    pub finish: Nanos,
}

/// Alg. 1, lines 1-13: racks for `schedule`, or `None` if the cluster cannot host it at all.
pub fn explore_schedule(schedule: &PossibleSchedule, racks: &[RackRelease]) -> Option<Explored> {
    let mut d = schedule.placement.clone();
    d.sort_unstable_by(|a, b| b.cmp(a));
    let mut taken = vec![false; racks.len()];
    let mut chosen = Vec::with_capacity(d.len());
    let mut t_max = Nanos::ZERO;
    for &di in &d {
        let (idx, t) = racks
            .iter()
            .enumerate()
            .filter(|(i, _)| !taken[*i])
            .filter_map(|(i, r)| r.release_after(di).map(|t| (i, t)))
            .min_by_key(|&(i, t)| (t, racks[i].rack))?;
        taken[idx] = true;
        chosen.push((racks[idx].rack, di));
        t_max = t_max.max(t);
    }
    Some(Explored {
        racks: chosen,
        t_max,
        finish: schedule.cct + t_max,
    })
}

/// Alg. 1, lines 15-18: the index of the best schedule and its racks.
pub fn best_schedule(schedules: &[PossibleSchedule], racks: &[RackRelease]) -> Option<(usize, Explored)> {
    schedules
        .iter()
        .enumerate()
        .filter_map(|(i, s)| explore_schedule(s, racks).map(|e| (i, e)))
        .min_by_key(|(i, e)| (e.finish, schedules[*i].r_red))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn secs(s: u64) -> Nanos {
        Nanos(s * 1_000_000_000)
    }

    #[test]
    fn t_rem_is_the_linear_estimate() {
        assert_eq!(t_rem(secs(30), 0.25), Some(secs(90)));
        assert_eq!(t_rem(secs(30), 1.0), Some(Nanos::ZERO));
        assert_eq!(t_rem(secs(30), 0.0), None);
    }

    #[test]
    fn explore_picks_the_racks_released_earliest() {
        // Rack 0: 1 free, tasks ending in 5 s and 9 s. Rack 1: none free, 2 s, 3 s, 20 s.
        // Rack 2: 3 free. Rack 3: none free, 1 s.
        let racks = vec![
            RackRelease::new(0, 1, vec![secs(9), secs(5)]),
            RackRelease::new(1, 0, vec![secs(20), secs(2), secs(3)]),
            RackRelease::new(2, 3, vec![]),
            RackRelease::new(3, 0, vec![secs(1)]),
        ];
        assert_eq!(racks[1].release_after(2), Some(secs(3)));
        assert_eq!(racks[2].release_after(4), None);
        let s = PossibleSchedule {
            r_red: 2,
            placement: vec![2, 3],
            cct: secs(10),
        };
        let e = explore_schedule(&s, &racks).expect("fits");
        // d = 3 first: rack 2 now (0 s); d = 2 next: rack 0 (5 s) vs rack 1 (3 s) -> rack 1.
        assert_eq!(e.racks, vec![(2, 3), (1, 2)]);
        assert_eq!(e.t_max, secs(3));
        assert_eq!(e.finish, secs(13));
        // Best of three: no rack ever holds 5 containers, so R_red = 1 is infeasible; R_red = 3 with
        // CCT 6 s: {2, 2, 1} -> rack 2 (now), rack 1 (3 s), rack 0 (its free container, now): 6 + 3 s.
        let all = vec![
            PossibleSchedule {
                r_red: 1,
                placement: vec![5],
                cct: secs(20),
            },
            s,
            PossibleSchedule {
                r_red: 3,
                placement: vec![2, 2, 1],
                cct: secs(6),
            },
        ];
        let (i, e) = best_schedule(&all, &racks).expect("some schedule fits");
        assert_eq!(i, 2);
        assert_eq!(e.racks, vec![(2, 2), (1, 2), (0, 1)]);
        assert_eq!(e.finish, secs(6) + secs(3));
    }

    /// Exhaustive `min over injective assignments of max release time`.
    fn brute(d: &[u32], racks: &[RackRelease], used: &mut Vec<bool>) -> Option<Nanos> {
        let Some((&first, rest)) = d.split_first() else {
            return Some(Nanos::ZERO);
        };
        let mut best: Option<Nanos> = None;
        for i in 0..racks.len() {
            if used[i] {
                continue;
            }
            let Some(t) = racks[i].release_after(first) else {
                continue;
            };
            used[i] = true;
            if let Some(rest_t) = brute(rest, racks, used) {
                let m = t.max(rest_t);
                best = Some(best.map_or(m, |b| b.min(m)));
            }
            used[i] = false;
        }
        best
    }

    #[test]
    fn greedy_matches_brute_force() {
        let mut rng = ChaCha8Rng::seed_from_u64(0xC05C);
        for case in 0..2000 {
            let n_racks = rng.random_range(1..=6);
            let racks: Vec<RackRelease> = (0..n_racks)
                .map(|r| {
                    let running = rng.random_range(0..=5);
                    let rem = (0..running).map(|_| secs(rng.random_range(0..20))).collect();
                    RackRelease::new(r, rng.random_range(0..=3), rem)
                })
                .collect();
            let r_red = rng.random_range(1..=n_racks.min(4));
            let placement: Vec<u32> = (0..r_red).map(|_| rng.random_range(1..=5)).collect();
            let s = PossibleSchedule {
                r_red,
                placement: placement.clone(),
                cct: Nanos::ZERO,
            };
            let greedy = explore_schedule(&s, &racks).map(|e| e.t_max);
            let mut sorted = placement;
            sorted.sort_unstable_by(|a, b| b.cmp(a));
            let optimum = brute(&sorted, &racks, &mut vec![false; racks.len()]);
            assert_eq!(greedy, optimum, "case {case}: racks {racks:?}, D {sorted:?}");
        }
    }
}
