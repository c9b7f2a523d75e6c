//! The rack pairs Sunflow has not given a port yet, indexed by sending rack
//! and by receiving rack, so that a pass finds the pairs a freed port side
//! may serve without walking the others.

use crate::model::coflow::CoflowId;
use std::collections::{BTreeMap, BTreeSet};

/// A coflow's rack pair: (sending rack, receiving rack, coflow).
pub(super) type Pair = (u32, u32, CoflowId);

/// Pairs waiting for a port.
#[derive(Clone, Debug, Default)]
pub(super) struct Waiting {
    /// The coflows waiting per (sending rack, receiving rack); no empty set.
    from: BTreeMap<(u32, u32), BTreeSet<CoflowId>>,
    /// The keys of `from`, as (receiving rack, sending rack).
    into: BTreeSet<(u32, u32)>,
    /// Pairs put in since the last [`Waiting::take_new`], in that order
    /// (some may have left since).
    new: Vec<Pair>,
}

impl Waiting {
    /// Pair `(i, j, c)` waits; it is new unless it was waiting already.
    pub(super) fn insert(&mut self, (i, j, c): Pair) {
        let coflows = self.from.entry((i, j)).or_default();
        if coflows.insert(c) {
            if coflows.len() == 1 {
                self.into.insert((j, i));
            }
            self.new.push((i, j, c));
        }
    }

    /// Pair `(i, j, c)` no longer waits.
    pub(super) fn remove(&mut self, (i, j, c): Pair) {
        if let Some(coflows) = self.from.get_mut(&(i, j)) {
            coflows.remove(&c);
            if coflows.is_empty() {
                self.from.remove(&(i, j));
                self.into.remove(&(j, i));
            }
        }
    }

    /// Whether pair `(i, j, c)` waits.
    pub(super) fn contains(&self, &(i, j, c): &Pair) -> bool {
        self.from.get(&(i, j)).is_some_and(|coflows| coflows.contains(&c))
    }

    /// Forgets every pair.
    pub(super) fn clear(&mut self) {
        *self = Waiting::default();
    }

    /// The pairs put in since the last call that still wait.
    pub(super) fn take_new(&mut self) -> Vec<Pair> {
        let mut new = std::mem::take(&mut self.new);
        new.retain(|p| self.contains(p));
        new
    }

    /// Appends to `out` the pairs waiting from rack `i` to a rack `j` with
    /// `to(j)`: O(racks `i` has pairs waiting to + pairs appended).
    pub(super) fn leaving(&self, i: u32, to: impl Fn(u32) -> bool, out: &mut Vec<Pair>) {
        for (&(_, j), coflows) in self.from.range((i, u32::MIN)..=(i, u32::MAX)) {
            if to(j) {
                out.extend(coflows.iter().map(|&c| (i, j, c)));
            }
        }
    }

    /// Appends to `out` the pairs waiting into rack `j` from a rack `i`
    /// with `from(i)`, as [`Waiting::leaving`] does.
    pub(super) fn entering(&self, j: u32, from: impl Fn(u32) -> bool, out: &mut Vec<Pair>) {
        for &(_, i) in self.into.range((j, u32::MIN)..=(j, u32::MAX)) {
            if from(i) {
                let coflows = self.from.get(&(i, j)).into_iter().flatten();
                out.extend(coflows.map(|&c| (i, j, c)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_are_found_from_and_into_a_rack() {
        let mut w = Waiting::default();
        let c = |n| CoflowId(n);
        for p in [
            (0, 1, c(1)),
            (0, 2, c(1)),
            (0, 2, c(2)),
            (0, 3, c(1)),
            (3, 2, c(3)),
            (1, 2, c(4)),
        ] {
            w.insert(p);
        }
        w.insert((0, 1, c(1)));
        assert_eq!(w.take_new().len(), 6, "a pair already waiting is not new");
        w.remove((0, 3, c(1)));
        w.remove((1, 2, c(4)));
        let mut out = Vec::new();
        w.leaving(0, |j| j != 1, &mut out);
        assert_eq!(out, vec![(0, 2, c(1)), (0, 2, c(2))]);
        out.clear();
        w.entering(2, |_| true, &mut out);
        assert_eq!(out, vec![(0, 2, c(1)), (0, 2, c(2)), (3, 2, c(3))]);
        out.clear();
        w.entering(2, |i| i == 3, &mut out);
        assert_eq!(out, vec![(3, 2, c(3))]);
        assert!(w.take_new().is_empty());
        w.remove((0, 2, c(2)));
        w.insert((0, 2, c(2)));
        assert_eq!(w.take_new(), vec![(0, 2, c(2))]);
        assert!(!w.contains(&(0, 3, c(1))) && w.contains(&(0, 2, c(2))));
        w.clear();
        assert!(!w.contains(&(0, 1, c(1))));
    }
}
