//! Co-scheduler: a coflow-aware data-parallel job scheduler for hybrid
//! electrical/optical datacenter networks (Li & Shen, IEEE/ACM ToN 2022,
//! "Co-Scheduler: a coflow-aware data-parallel job scheduler in hybrid
//! electrical/optical datacenter networks", Sec. IV).
//!
//! It places a job's input, maps and reduces on few racks so that its shuffle
//! flows reach the elephant threshold `T_e` and ride circuits, while spreading
//! over enough racks to use many circuits at once. Its four components, one
//! module each, are pure functions over small input types:
//!
//! | paper | module |
//! |---|---|
//! | IV-D data placement guideline (eq. 7; recurring jobs: eqs. 8-10, Fig. 4; three replica sets) | [`placement`], [`latency`] |
//! | IV-E task placement guideline (maps on `R_map` racks; every `R_red` in `[1, floor(SM_1/T_e)]` with `D` and CCT) | [`reduce_guideline`] |
//! | IV-F best reduce schedule selector (Alg. 1, ExploreSchedule; `T_rem`, eq. 12) | [`explore`] |
//! | IV-G OCS- and coflow-aware scheduler (Alg. 2) under per-user fairness | [`order`] |
//! | II-C / VI CCT lower bound T(C) (eqs. 1-2, 15 for WSS) | [`cct`] |
//!
//! Sec. IV-A (reduces start after all maps; the shuffle after all reduces are
//! placed) is a rule of the task order ([`order`]: reduces are released after
//! the last map) and of the engine's reduce start.
//!
//! The ablations of Fig. 7 are [`Variant`]s; [`policy`] makes each a
//! [`crate::policy::TaskPolicy`] (`coscheduler`, `coscheduler-dp-ocas`,
//! `coscheduler-ocas`).

pub mod cct;
pub mod explore;
pub mod forecast;
pub mod latency;
pub mod order;
pub mod placement;
pub mod policy;
pub mod reduce_guideline;

/// Which Co-scheduler mechanisms run (Sec. V-C, Fig. 7).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Variant {
    /// OCAS alone: Alg. 2's order with no guidelines, i.e. the Fair scheduler
    /// with reduces after all maps.
    Ocas,
    /// DP + OCAS: the data placement and map task guidelines, reduces placed by Alg. 2 without a guideline.
    DpOcas,
    /// DP + TP + BSS + OCAS: the full Co-scheduler.
    Full,
}

impl Variant {
    /// Whether input data is placed by the data placement guideline (and maps follow it).
    pub fn places_data(self) -> bool {
        matches!(self, Variant::DpOcas | Variant::Full)
    }
    /// Whether reduces follow the reduce guideline and the best schedule selector.
    pub fn plans_reduces(self) -> bool {
        matches!(self, Variant::Full)
    }
}
