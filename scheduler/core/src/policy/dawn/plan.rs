//! Dawn's online plan (Wang, Zhou, Zhang & Jiang, "Network-adaptive
//! scheduling of data-intensive parallel jobs with dependencies in
//! clusters", Sec. III-B): each job's preferred racks and the cross-rack
//! traffic each would cause.
//!
//! - Map stage, proactive task aggregation (eq. 1): `max_r`, the rack
//!   holding most of the job's input; traffic = input not on `max_r`.
//! - Reduce stage, dependency-aware assignment: `max_r`, the rack holding
//!   most intermediate data (eq. 2: traffic = intermediate elsewhere), and
//!   `dep_r`, the rack that, if the job's output lands there, minimises the
//!   input traffic of its children (eqs. 3-4, by enumeration), with traffic
//!   = intermediate not on `dep_r` (eq. 5).
//!
//! Decisions (the paper leaves these open; each has a test):
//! - Eq. 1 counts *blocks* while eqs. 2 and 5 count *bytes*, and Alg. 1
//!   sorts jobs of both stages by one traffic figure. ocslab counts bytes
//!   everywhere (a block is worth its size), so the comparison is in one unit.
//! - `Out_x` for a candidate rack r is the output the job has already
//!   written where it lies, plus the output of its pending reduces on r.
//!   `Out_i` of another parent is what it has written so far (nothing if it
//!   has not reduced yet).
//! - Ties in eq. 4 (e.g. a job without children) go to `max_r`, then to the
//!   lowest rack index, so `dep_r = max_r` unless dependencies say otherwise.
//! - A job is in its reduce stage once all its maps have finished (the
//!   paper assumes map and reduce stages run one after the other).

use crate::policy::netaware::{JobKey, JobState, NetView, Rack};

/// Which stage a job's next tasks belong to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Maps are pending.
    Map,
    /// All maps are done; reduces are pending.
    Reduce,
}

/// A preferred rack and the cross-rack bytes a task there would cause.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Preferred {
    /// The rack.
    pub rack: Rack,
    /// Cross-rack bytes (the paper's *Network_Cost*).
    pub traffic: u64,
}

/// One job's plan: its stage and preferred racks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobPlan {
    /// The job.
    pub job: JobKey,
    /// Its stage.
    pub stage: Stage,
    /// `max_r` and its traffic (eq. 1 or eq. 2).
    pub max_r: Preferred,
    /// `dep_r` and its traffic (eq. 5); `None` in the map stage or when it is `max_r`.
    pub dep_r: Option<Preferred>,
}

impl JobPlan {
    /// The preferred racks (one or two).
    pub fn preferred(&self) -> impl Iterator<Item = Preferred> + '_ {
        std::iter::once(self.max_r).chain(self.dep_r)
    }
    /// The preferred rack with the smallest traffic (Alg. 1 line 5).
    pub fn lowest(&self) -> Preferred {
        self.preferred().min_by_key(|p| p.traffic).unwrap_or(self.max_r)
    }
    /// The preferred rack with the highest traffic (Alg. 1 line 13).
    pub fn highest(&self) -> Preferred {
        self.preferred().max_by_key(|p| p.traffic).unwrap_or(self.max_r)
    }
}

/// `Network_Cost_Min^In` of a data set lying `per_rack` (eq. 1 in bytes):
/// the rack with most of it, and the bytes elsewhere. Ties: lowest index.
pub fn min_input_cost(per_rack: &[u64], total: u64) -> Preferred {
    let (rack, most) =
        per_rack.iter().enumerate().fold(
            (0usize, 0u64),
            |best, (r, &b)| if b > best.1 { (r, b) } else { best },
        );
    Preferred {
        rack: rack as Rack,
        traffic: total.saturating_sub(most),
    }
}

/// Eq. 1: the map-stage preference of `job`.
pub fn map_stage(job: &JobState) -> Preferred {
    let per: Vec<u64> = job.input_per_rack.iter().map(|b| b.0).collect();
    min_input_cost(&per, job.input_total.0)
}

/// Eq. 2 (`rack = max_r`) or eq. 5 (`rack = dep_r`): intermediate bytes not on `rack`.
pub fn intermediate_cost(inter: &[u64], rack: Rack) -> u64 {
    let total: u64 = inter.iter().sum();
    total - inter.get(rack as usize).copied().unwrap_or(0)
}

/// Eq. 4 for job `x` with its output landing on `r`: the summed
/// `Network_Cost_Min^In` of the jobs in `Next_x`, their input located by eq. 3.
pub fn dependent_cost(view: &NetView, x: &JobState, r: Rack) -> u64 {
    let racks = view.racks as usize;
    let zeros = vec![crate::Bytes(0); racks];
    let mut out_x: Vec<u64> = view
        .outputs
        .get(&x.id)
        .unwrap_or(&zeros)
        .iter()
        .map(|b| b.0)
        .collect();
    out_x.resize(racks, 0);
    let pending = if x.reduces_total == 0 {
        0
    } else {
        (u128::from(x.expected_output.0) * u128::from(x.reduces_pending) / u128::from(x.reduces_total)) as u64
    };
    if let Some(slot) = out_x.get_mut(r as usize) {
        *slot += pending;
    }
    view.dag
        .next(x.id)
        .iter()
        .map(|&y| {
            let mut in_y = out_x.clone();
            for z in view.dag.prev_except(x.id, y) {
                for (slot, b) in in_y.iter_mut().zip(view.outputs.get(&z).into_iter().flatten()) {
                    *slot += b.0;
                }
            }
            let total: u64 = in_y.iter().sum();
            min_input_cost(&in_y, total).traffic
        })
        .sum()
}

/// The reduce-stage preferences of `x`: `max_r` (eq. 2) and `dep_r` (eqs. 3-5).
pub fn reduce_stage(view: &NetView, x: &JobState) -> (Preferred, Preferred) {
    let inter: Vec<u64> = x.map_output_per_rack(view.racks).iter().map(|b| b.0).collect();
    let total: u64 = inter.iter().sum();
    let max_r = min_input_cost(&inter, total);
    let dep = (0..view.racks)
        .min_by_key(|&r| (dependent_cost(view, x, r), r != max_r.rack, r))
        .unwrap_or(max_r.rack);
    (
        max_r,
        Preferred {
            rack: dep,
            traffic: intermediate_cost(&inter, dep),
        },
    )
}

/// The job's plan, or `None` if it has nothing to run (maps all running,
/// or reduces not ready).
pub fn plan(view: &NetView, job: &JobState) -> Option<JobPlan> {
    if !job.pending_maps.is_empty() {
        Some(JobPlan {
            job: job.id,
            stage: Stage::Map,
            max_r: map_stage(job),
            dep_r: None,
        })
    } else if job.maps_finished() && job.has_ready_reduce() {
        let (max_r, dep_r) = reduce_stage(view, job);
        let dep_r = (dep_r.rack != max_r.rack).then_some(dep_r);
        Some(JobPlan {
            job: job.id,
            stage: Stage::Reduce,
            max_r,
            dep_r,
        })
    } else {
        None
    }
}
