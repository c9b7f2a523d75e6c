//! The rate solver of a fluid network ([`Rates`]): one max-min fair
//! allocation over every bundle ([`LinkLevels`]), or, for a policy that
//! orders coflows, strict priority between coflows with max-min fairness
//! inside each ([`ClassLevels`]), or every link split equally among its
//! flows ([`LinkSplit`], CoflowSim's per-flow fairness). The network reads
//! them alike: a bundle's rate is the level of its bottleneck (a link, or a
//! class link) or its cap.

use super::class_levels::{ClassId, ClassLevels};
use super::levels::{Bottleneck, Changes, LinkLevels, SolveStats};
use super::links::{LinkId, LinkMap};
use super::maxmin::Demand;
use super::split::LinkSplit;
use ocslab_core::model::coflow::CoflowId;

/// The network's rate solver.
// One per network, so its size does not matter; boxing the larger variant
// would put a pointer between the network and every solver call.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
pub(super) enum Rates {
    /// Max-min fair over all bundles.
    Shared(LinkLevels),
    /// Strict priority between coflows, max-min fair inside each.
    Classes(ClassLevels),
    /// Every link split equally among its flows.
    Split(LinkSplit),
}

/// How a network's links are shared among the flows that cross them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Sharing {
    /// Max-min fairly over all flows.
    MaxMin,
    /// Strict priority between coflows in the policy's order, max-min inside each.
    ByCoflow,
    /// Equally among the flows, each taking its smallest share.
    EqualSplit,
}

impl Sharing {
    /// How `policy`'s flows share links.
    pub(super) fn of(policy: &dyn ocslab_core::coflow::CoflowPolicy) -> Sharing {
        if policy.splits_links_equally() {
            Sharing::EqualSplit
        } else if policy.orders_coflows() {
            Sharing::ByCoflow
        } else {
            Sharing::MaxMin
        }
    }
}

impl Rates {
    /// The solver for `links` under `sharing` (max-min with the host-pair
    /// matrix where the fabric allows it).
    pub(super) fn new(links: &LinkMap, sharing: Sharing) -> Rates {
        let (capacities, binding) = (links.capacities(), links.binding());
        match (sharing, links.host_pairs()) {
            (Sharing::EqualSplit, _) => Rates::Split(LinkSplit::new(capacities, &binding)),
            (Sharing::ByCoflow, pairs) => Rates::Classes(ClassLevels::new(capacities, &binding, pairs)),
            (Sharing::MaxMin, Some(pairs)) => {
                Rates::Shared(LinkLevels::with_host_pairs(capacities, &binding, pairs))
            }
            (Sharing::MaxMin, None) => Rates::Shared(LinkLevels::new(capacities, &binding).solving_locally()),
        }
    }

    /// Whether slots are solved in classes (a flow's bundle key then names
    /// its coflow's class).
    pub(super) fn by_classes(&self) -> bool {
        matches!(self, Rates::Classes(_))
    }

    /// The class of `coflow`'s bundles, if rates are solved by classes.
    pub(super) fn class_of(&mut self, coflow: CoflowId) -> Option<ClassId> {
        match self {
            Rates::Shared(_) | Rates::Split(_) => None,
            Rates::Classes(c) => Some(c.class_of(coflow)),
        }
    }

    /// The coflows' service order (ignored when rates are shared).
    pub(super) fn set_order(&mut self, order: &[CoflowId]) {
        if let Rates::Classes(c) = self {
            c.set_order(order);
        }
    }

    /// Slot `slot` now has `demand`, in `class` (ignored when rates are shared).
    pub(super) fn set(&mut self, slot: usize, demand: Option<Demand>, class: Option<ClassId>) {
        match self {
            Rates::Shared(l) => l.set(slot, demand),
            Rates::Split(s) => s.set(slot, demand),
            Rates::Classes(c) => c.set(slot, demand, class),
        }
    }

    /// Recomputes the rates; what changed goes to `changes`.
    pub(super) fn solve(&mut self, changes: &mut Changes) {
        match self {
            Rates::Shared(l) => l.solve(changes),
            Rates::Classes(c) => c.solve(changes),
            Rates::Split(s) => s.solve(changes),
        }
    }

    /// The per-flow rate of `slot`.
    pub(super) fn rate(&self, slot: usize) -> f64 {
        match self {
            Rates::Shared(l) => l.rate(slot),
            Rates::Classes(c) => c.rate(slot),
            Rates::Split(s) => s.rate(slot),
        }
    }

    /// What sets the rate of `slot`.
    pub(super) fn bottleneck(&self, slot: usize) -> Bottleneck {
        match self {
            Rates::Shared(l) => l.bottleneck(slot),
            Rates::Classes(c) => c.bottleneck(slot),
            Rates::Split(s) => s.bottleneck(slot),
        }
    }

    /// The level of (class) link `link`.
    pub(super) fn level(&self, link: LinkId) -> f64 {
        match self {
            Rates::Shared(l) => l.level(link),
            Rates::Classes(c) => c.level(link),
            Rates::Split(s) => s.level(link),
        }
    }

    /// One past the last (class) link a bundle can be bottlenecked at.
    pub(super) fn bind_end(&self) -> usize {
        match self {
            Rates::Shared(l) => l.bind_end(),
            Rates::Classes(c) => c.bind_end(),
            Rates::Split(s) => s.bind_end(),
        }
    }

    /// Every link's load, by link id.
    pub(super) fn loads(&self) -> &[f64] {
        match self {
            Rates::Shared(l) => l.loads(),
            Rates::Classes(c) => c.loads(),
            Rates::Split(s) => s.loads(),
        }
    }

    /// The solver's figures.
    pub(super) fn stats(&self) -> SolveStats {
        match self {
            Rates::Shared(l) => l.stats(),
            Rates::Classes(c) => c.stats(),
            Rates::Split(s) => s.stats(),
        }
    }
}
