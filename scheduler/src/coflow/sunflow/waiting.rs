//! The rack pairs Sunflow has not given a port yet, indexed by sending rack
//! and by receiving rack, so that a pass finds the pairs a freed port side
//! may serve without walking the others.

use crate::model::coflow::CoflowId;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::RangeInclusive;

/// A coflow's rack pair: (sending rack, receiving rack, coflow).
pub(super) type Pair = (u32, u32, CoflowId);

/// Pairs waiting for a port.
#[derive(Clone, Debug, Default)]
pub(super) struct Waiting {
    /// By (sending rack, receiving rack, coflow).
    from: BTreeSet<Pair>,
    /// By (receiving rack, sending rack, coflow).
    into: BTreeSet<Pair>,
    /// How many pairs wait per sending rack, and per receiving rack.
    from_count: BTreeMap<u32, usize>,
    into_count: BTreeMap<u32, usize>,
    /// Pairs put in since the last [`Waiting::take_new`], in that order
    /// (some may have left since).
    new: Vec<Pair>,
}

/// Keys `(rack, other, coflow)` with `other` in `others`, or any `other` when `None`.
fn keys(rack: u32, other: Option<u32>) -> RangeInclusive<Pair> {
    let (lo, hi) = other.map_or((u32::MIN, u32::MAX), |o| (o, o));
    (rack, lo, CoflowId(u64::MIN))..=(rack, hi, CoflowId(u64::MAX))
}

impl Waiting {
    /// Pair `(i, j, c)` waits; it is new unless it was waiting already.
    pub(super) fn insert(&mut self, (i, j, c): Pair) {
        if self.from.insert((i, j, c)) {
            self.into.insert((j, i, c));
            *self.from_count.entry(i).or_default() += 1;
            *self.into_count.entry(j).or_default() += 1;
            self.new.push((i, j, c));
        }
    }

    /// Pair `(i, j, c)` no longer waits.
    pub(super) fn remove(&mut self, (i, j, c): Pair) {
        if self.from.remove(&(i, j, c)) {
            self.into.remove(&(j, i, c));
            for (count, rack) in [(&mut self.from_count, i), (&mut self.into_count, j)] {
                if let Some(n) = count.get_mut(&rack) {
                    *n -= 1;
                    if *n == 0 {
                        count.remove(&rack);
                    }
                }
            }
        }
    }

    /// Whether pair `(i, j, c)` waits.
    #[cfg(test)]
    pub(super) fn contains(&self, pair: &Pair) -> bool {
        self.from.contains(pair)
    }

    /// Forgets every pair.
    #[cfg(test)]
    pub(super) fn clear(&mut self) {
        *self = Waiting::default();
    }

    /// The pairs put in since the last call that still wait.
    pub(super) fn take_new(&mut self) -> Vec<Pair> {
        let mut new = std::mem::take(&mut self.new);
        new.retain(|p| self.from.contains(p));
        new
    }

    /// Appends to `out` the pairs waiting from rack `i` to a rack of
    /// `to` (sorted): it walks either every pair from `i` or one range per
    /// rack of `to`, whichever is shorter.
    pub(super) fn from_rack(&self, i: u32, to: &[u32], out: &mut Vec<Pair>) {
        let n = self.from_count.get(&i).copied().unwrap_or(0);
        if n <= 4 * to.len() {
            out.extend(self.from.range(keys(i, None)).filter(|p| to.binary_search(&p.1).is_ok()));
        } else {
            for &j in to {
                out.extend(self.from.range(keys(i, Some(j))));
            }
        }
    }

    /// Appends to `out` the pairs waiting into rack `j` from a rack of
    /// `from` (sorted), as [`Waiting::from_rack`] does.
    pub(super) fn into_rack(&self, j: u32, from: &[u32], out: &mut Vec<Pair>) {
        let n = self.into_count.get(&j).copied().unwrap_or(0);
        let flip = |&(j, i, c): &Pair| (i, j, c);
        if n <= 4 * from.len() {
            let pairs = self.into.range(keys(j, None)).filter(|p| from.binary_search(&p.1).is_ok());
            out.extend(pairs.map(flip));
        } else {
            for &i in from {
                out.extend(self.into.range(keys(j, Some(i))).map(flip));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_are_found_from_and_into_a_rack_whichever_way_is_walked() {
        let mut w = Waiting::default();
        let c = |n| CoflowId(n);
        for p in [(0, 1, c(1)), (0, 2, c(1)), (0, 2, c(2)), (0, 3, c(1)), (3, 2, c(3))] {
            w.insert(p);
        }
        // Enough pairs from rack 0 and into rack 2 that few partners are looked up one by one.
        for r in 10..20 {
            w.insert((0, r, c(5)));
            w.insert((r, 2, c(5)));
        }
        w.insert((0, 1, c(1)));
        assert_eq!(w.take_new().len(), 25, "a pair already waiting is not new");
        w.remove((0, 3, c(1)));
        for (to, expected) in [
            (vec![2], vec![(0, 2, c(1)), (0, 2, c(2))]),
            (vec![1, 2, 3, 10], vec![(0, 1, c(1)), (0, 2, c(1)), (0, 2, c(2)), (0, 10, c(5))]),
        ] {
            let mut out = Vec::new();
            w.from_rack(0, &to, &mut out);
            assert_eq!(out, expected, "to {to:?}");
        }
        for (from, expected) in [
            (vec![3], vec![(3, 2, c(3))]),
            (vec![0, 1, 3, 11], vec![(0, 2, c(1)), (0, 2, c(2)), (3, 2, c(3)), (11, 2, c(5))]),
        ] {
            let mut out = Vec::new();
            w.into_rack(2, &from, &mut out);
            assert_eq!(out, expected, "from {from:?}");
        }
        assert!(w.take_new().is_empty());
        w.remove((0, 2, c(2)));
        w.insert((0, 2, c(2)));
        assert_eq!(w.take_new(), vec![(0, 2, c(2))]);
        assert!(!w.contains(&(0, 3, c(1))));
        w.clear();
        assert!(!w.contains(&(0, 1, c(1))));
    }
}
