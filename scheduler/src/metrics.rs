//! The metrics of the slot and speculation papers (J. Wang, PhD thesis
//! 2017, Chs. 3-5), computed from a run's [`Records`] alone, so they read
//! the same from a simulation or an emulation:
//!
//! - the **phase breakdown** of Fig. 4.18 — *map only* (maps run, no reduce
//!   is shuffling), *overlap* (both), *shuffle only* (a reduce is still
//!   fetching after the maps are over) — per job and for the whole run
//!   (a reduce attempt shuffles from its start until its compute starts);
//! - **slot timelines**: running maps, shuffling reduces and computing
//!   reduces after every change (Figs. 3.6, 4.11-4.14);
//! - **overall fairness** over time (eq. 3.1, Jain's index), sampled;
//! - **speculation**: copies launched, won, killed; originals beaten;
//!   **wasted slot-seconds** (attempts killed or lost);
//! - **extra makespan** caused by perturbations: the same scheduler's
//!   makespan with and without them (Figs. 5.6-5.8).

use crate::engine::{Outcome, Records, TaskRecord};
use crate::model::job::{JobId, TaskKind};
use crate::policy::fresh::{overall_fairness, resource_use};
use ocslab_emulator::Nanos;
use serde::Serialize;
use std::collections::BTreeMap;

/// Seconds of map only, overlap and shuffle only.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct PhaseBreakdown {
    /// Maps run and no reduce is shuffling.
    pub map_only_s: f64,
    /// Maps run and a reduce is shuffling.
    pub overlap_s: f64,
    /// A reduce is shuffling and no map runs.
    pub shuffle_only_s: f64,
}

/// Length of the union of intervals.
fn union_len(mut v: Vec<(Nanos, Nanos)>) -> u64 {
    v.sort();
    let mut total = 0;
    let mut cur: Option<(Nanos, Nanos)> = None;
    for (a, b) in v {
        match cur {
            Some((s, e)) if a <= e => cur = Some((s, e.max(b))),
            Some((s, e)) => {
                total += (e - s).0;
                cur = Some((a, b));
            }
            None => cur = Some((a, b)),
        }
    }
    if let Some((s, e)) = cur {
        total += (e - s).0;
    }
    total
}

/// The interval a reduce attempt shuffled: from its slot to its compute
/// (or its end, if it never computed).
fn shuffle_interval(r: &TaskRecord) -> (Nanos, Nanos) {
    (r.started, r.compute_started.unwrap_or(r.ended).max(r.started))
}

/// Phase breakdown of a set of attempts: `|M∖S|`, `|M∩S|`, `|S∖M|` where
/// M is when some map ran and S when some reduce shuffled.
pub fn breakdown<'a>(tasks: impl IntoIterator<Item = &'a TaskRecord>) -> PhaseBreakdown {
    let mut maps = Vec::new();
    let mut shuffles = Vec::new();
    for t in tasks {
        match t.kind {
            TaskKind::Map => maps.push((t.started, t.ended)),
            TaskKind::Reduce => shuffles.push(shuffle_interval(t)),
        }
    }
    let m = union_len(maps.clone());
    let s = union_len(shuffles.clone());
    let both = union_len(maps.into_iter().chain(shuffles).collect());
    let overlap = m + s - both;
    let secs = |n: u64| n as f64 / 1e9;
    PhaseBreakdown {
        map_only_s: secs(m - overlap),
        overlap_s: secs(overlap),
        shuffle_only_s: secs(s - overlap),
    }
}

/// Per-job phase breakdowns.
pub fn job_breakdowns(records: &Records) -> BTreeMap<JobId, PhaseBreakdown> {
    let mut by_job: BTreeMap<JobId, Vec<&TaskRecord>> = BTreeMap::new();
    for t in &records.tasks {
        by_job.entry(t.attempt.task.job).or_default().push(t);
    }
    by_job.into_iter().map(|(j, ts)| (j, breakdown(ts))).collect()
}

/// One step of a slot timeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct SlotStep {
    /// From this time on...
    pub at: Nanos,
    /// ...this many maps run,
    pub maps: u32,
    /// this many reduces fetch,
    pub shuffling: u32,
    /// and this many reduces compute.
    pub reducing: u32,
}

/// The slot timeline: a step after every change.
pub fn slot_timeline(records: &Records) -> Vec<SlotStep> {
    // (time, Δmaps, Δshuffling, Δreducing)
    let mut deltas: Vec<(Nanos, i64, i64, i64)> = Vec::new();
    for t in &records.tasks {
        match t.kind {
            TaskKind::Map => {
                deltas.push((t.started, 1, 0, 0));
                deltas.push((t.ended, -1, 0, 0));
            }
            TaskKind::Reduce => {
                let (s, c) = shuffle_interval(t);
                deltas.push((s, 0, 1, 0));
                deltas.push((c, 0, -1, 0));
                if t.compute_started.is_some() {
                    deltas.push((c, 0, 0, 1));
                    deltas.push((t.ended, 0, 0, -1));
                }
            }
        }
    }
    deltas.sort_by_key(|d| d.0);
    let (mut m, mut s, mut r) = (0i64, 0i64, 0i64);
    let mut out: Vec<SlotStep> = Vec::new();
    for (at, dm, ds, dr) in deltas {
        m += dm;
        s += ds;
        r += dr;
        let step = SlotStep {
            at,
            maps: m.max(0) as u32,
            shuffling: s.max(0) as u32,
            reducing: r.max(0) as u32,
        };
        match out.last_mut() {
            Some(last) if last.at == at => *last = step,
            _ => out.push(step),
        }
    }
    out
}

/// Overall fairness (eq. 3.1, Jain's index) at `t`: over jobs that started
/// (first task) by `t` and had not finished, slot-seconds used by `t` over
/// the time since they started. `None` with fewer than one such job.
pub fn fairness_at(records: &Records, t: Nanos) -> Option<f64> {
    let mut used: BTreeMap<JobId, f64> = BTreeMap::new();
    for r in &records.tasks {
        if r.started < t {
            *used.entry(r.attempt.task.job).or_default() += (r.ended.min(t) - r.started).as_secs_f64();
        }
    }
    let uses: Vec<f64> = records
        .jobs
        .values()
        .filter(|j| j.first_task.is_some_and(|s| s < t) && j.finished.is_none_or(|f| f > t))
        .map(|j| {
            let start = j.first_task.unwrap_or(j.arrival).as_secs_f64();
            resource_use(used.get(&j.job).copied().unwrap_or(0.0), t.as_secs_f64(), start)
        })
        .collect();
    (!uses.is_empty()).then(|| overall_fairness(&uses))
}

/// Mean of [`fairness_at`] every `step` over the run (Figs. 3.4-3.9).
pub fn mean_fairness(records: &Records, end: Nanos, step: Nanos) -> Option<f64> {
    let step = Nanos(step.0.max(1));
    let mut t = step;
    let mut sum = 0.0;
    let mut n = 0;
    while t < end {
        if let Some(f) = fairness_at(records, t) {
            sum += f;
            n += 1;
        }
        t += step;
    }
    (n > 0).then(|| sum / n as f64)
}

/// What speculation did and what failures cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct SpeculationStats {
    /// Speculative copies started.
    pub launched: u32,
    /// Copies that finished first.
    pub won: u32,
    /// Copies killed because the original finished first.
    pub killed: u32,
    /// Copies lost with their host.
    pub lost: u32,
    /// Original attempts killed because their copy won.
    pub originals_beaten: u32,
    /// Slot-seconds of attempts killed or lost (work thrown away).
    pub wasted_slot_s: f64,
    /// Of those, slot-seconds of killed copies (Sec. 5.3.3.1's "wasted time").
    pub killed_copy_slot_s: f64,
}

/// Speculation and waste from the task records.
pub fn speculation(records: &Records) -> SpeculationStats {
    let mut s = SpeculationStats::default();
    for t in &records.tasks {
        let secs = (t.ended - t.started).as_secs_f64();
        if t.outcome != Outcome::Finished {
            s.wasted_slot_s += secs;
        }
        match (t.speculative, t.outcome) {
            (true, o) => {
                s.launched += 1;
                match o {
                    Outcome::Finished => s.won += 1,
                    Outcome::Killed => {
                        s.killed += 1;
                        s.killed_copy_slot_s += secs;
                    }
                    Outcome::Lost => s.lost += 1,
                }
            }
            (false, Outcome::Killed) => s.originals_beaten += 1,
            _ => {}
        }
    }
    s
}

/// A run's makespan: its last job's finish (`None` if a job is unfinished).
pub fn makespan(records: &Records) -> Option<Nanos> {
    records
        .jobs
        .values()
        .map(|j| j.finished)
        .collect::<Option<Vec<_>>>()?
        .into_iter()
        .max()
}

/// Extra makespan perturbations caused: `perturbed − baseline`, seconds
/// (negative if the perturbed run was faster).
pub fn extra_makespan(baseline: &Records, perturbed: &Records) -> Option<f64> {
    Some(makespan(perturbed)?.as_secs_f64() - makespan(baseline)?.as_secs_f64())
}

/// Every metric of this module for one run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunMetrics {
    /// Makespan, seconds.
    pub makespan_s: f64,
    /// Whole-run phase breakdown.
    pub phases: PhaseBreakdown,
    /// Mean overall fairness, sampled every 10 s.
    pub mean_fairness: Option<f64>,
    /// Speculation and waste.
    pub speculation: SpeculationStats,
}

impl RunMetrics {
    /// The metrics of `records`.
    pub fn of(records: &Records) -> RunMetrics {
        let end = makespan(records).unwrap_or_default();
        RunMetrics {
            makespan_s: end.as_secs_f64(),
            phases: breakdown(&records.tasks),
            mean_fairness: mean_fairness(records, end, Nanos(10_000_000_000)),
            speculation: speculation(records),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::AttemptId;
    use crate::model::job::TaskId;
    use ocslab_emulator::{Bytes, HostId};

    const S: u64 = 1_000_000_000;

    fn rec(
        kind: TaskKind,
        n: u32,
        start: u64,
        compute: Option<u64>,
        end: u64,
        spec: bool,
        outcome: Outcome,
    ) -> TaskRecord {
        let task = match kind {
            TaskKind::Map => TaskId::map(JobId(0), n),
            TaskKind::Reduce => TaskId::reduce(JobId(0), n),
        };
        TaskRecord {
            attempt: AttemptId {
                task,
                n: u32::from(spec),
            },
            kind,
            host: HostId::new(0, 0),
            started: Nanos(start * S),
            compute_started: compute.map(|c| Nanos(c * S)),
            ended: Nanos(end * S),
            outcome,
            locality: None,
            speculative: spec,
            bytes: Bytes(0),
        }
    }

    #[test]
    fn breakdown_splits_map_only_overlap_and_shuffle_only() {
        // Maps over [0, 10] and [2, 12]; a reduce shuffles [8, 15] and
        // computes [15, 18]: map only 8, overlap 4 (8..12), shuffle only 3.
        let tasks = [
            rec(TaskKind::Map, 0, 0, Some(0), 10, false, Outcome::Finished),
            rec(TaskKind::Map, 1, 2, Some(2), 12, false, Outcome::Finished),
            rec(TaskKind::Reduce, 0, 8, Some(15), 18, false, Outcome::Finished),
        ];
        let b = breakdown(&tasks);
        assert_eq!((b.map_only_s, b.overlap_s, b.shuffle_only_s), (8.0, 4.0, 3.0));
        let tl = slot_timeline(&Records {
            tasks: tasks.to_vec(),
            ..Records::default()
        });
        let at = |t: u64| tl.iter().rev().find(|s| s.at <= Nanos(t * S)).copied();
        assert_eq!(at(9).map(|s| (s.maps, s.shuffling, s.reducing)), Some((2, 1, 0)));
        assert_eq!(at(16).map(|s| (s.maps, s.shuffling, s.reducing)), Some((0, 0, 1)));
    }

    #[test]
    fn speculation_counts_and_waste() {
        // Map 0: original beaten at 9 (ran 0..9), copy won 5..9. Map 1:
        // copy killed 6..8 when the original finished.
        let tasks = vec![
            rec(TaskKind::Map, 0, 0, Some(0), 9, false, Outcome::Killed),
            rec(TaskKind::Map, 0, 5, Some(5), 9, true, Outcome::Finished),
            rec(TaskKind::Map, 1, 6, Some(6), 8, true, Outcome::Killed),
            rec(TaskKind::Map, 1, 0, Some(0), 8, false, Outcome::Finished),
        ];
        let s = speculation(&Records {
            tasks,
            ..Records::default()
        });
        assert_eq!((s.launched, s.won, s.killed, s.originals_beaten), (2, 1, 1, 1));
        assert_eq!((s.wasted_slot_s, s.killed_copy_slot_s), (11.0, 2.0));
    }
}
