//! A coflow's elephants by rack pair ([`Pairs`]): a vector in pair order,
//! read by binary search and walked in order.
//!
//! A plan walks every pair of every coflow (tens of thousands on FB2010)
//! several times over, and between plans pairs only leave. So the pairs
//! sit in one vector, their keys packed into a `u64` each in another;
//! a pair that leaves keeps its place, marked, until the removed ones
//! outnumber the rest.

use super::Pair;
use crate::model::coflow::FlowId;

/// A rack pair as one number in the pair's order: source, then destination.
fn pack((src, dst): (u32, u32)) -> u64 {
    (u64::from(src) << 32) | u64::from(dst)
}

/// The rack pair [`pack`] made `key` of.
fn unpack(key: u64) -> (u32, u32) {
    ((key >> 32) as u32, key as u32)
}

/// A coflow's [`Pair`]s by (source rack, destination rack).
#[derive(Clone, Debug, Default)]
pub(super) struct Pairs {
    /// The pairs' keys, packed, in order.
    keys: Vec<u64>,
    /// The pairs, by key.
    pairs: Vec<Pair>,
    /// Whether the pair at each place was removed (its place stays until
    /// the removed outnumber the rest).
    removed: Vec<bool>,
    /// Pairs not removed.
    live: usize,
}

impl Pairs {
    /// The pairs of `flows` (each with its (source rack, destination
    /// rack)), each pair's flows in the order given; their bytes are left
    /// for [`Pair::read`].
    pub(super) fn of(flows: impl Iterator<Item = ((u32, u32), FlowId)>) -> Pairs {
        let mut all: Vec<(u64, FlowId)> = flows.map(|(pair, f)| (pack(pair), f)).collect();
        // Stable: a pair's flows keep the order they came in.
        all.sort_by_key(|&(key, _)| key);
        let mut table = Pairs::default();
        for (key, f) in all {
            if table.keys.last() != Some(&key) {
                table.keys.push(key);
                table.pairs.push(Pair::default());
                table.removed.push(false);
            }
            if let Some(p) = table.pairs.last_mut() {
                p.flows.push(f);
            }
        }
        table.live = table.keys.len();
        table
    }

    fn find(&self, pair: (u32, u32)) -> Option<usize> {
        let at = self.keys.binary_search(&pack(pair)).ok()?;
        (!self.removed[at]).then_some(at)
    }

    /// The pair `pair`, unless it is not in the table.
    pub(super) fn get(&self, pair: (u32, u32)) -> Option<&Pair> {
        self.find(pair).map(|at| &self.pairs[at])
    }

    /// The pair `pair`, unless it is not in the table.
    pub(super) fn get_mut(&mut self, pair: (u32, u32)) -> Option<&mut Pair> {
        self.find(pair).map(|at| &mut self.pairs[at])
    }

    /// Takes `pair` out of the table.
    pub(super) fn remove(&mut self, pair: (u32, u32)) {
        let Some(at) = self.find(pair) else {
            return;
        };
        self.removed[at] = true;
        self.pairs[at] = Pair::default();
        self.live -= 1;
        if self.keys.len() > 2 * self.live + 64 {
            let mut kept = 0;
            for at in 0..self.keys.len() {
                if !self.removed[at] {
                    self.keys.swap(kept, at);
                    self.pairs.swap(kept, at);
                    self.removed.swap(kept, at);
                    kept += 1;
                }
            }
            self.keys.truncate(kept);
            self.pairs.truncate(kept);
            self.removed.truncate(kept);
        }
    }

    /// Whether the table holds no pair.
    pub(super) fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// The pairs, in pair order.
    pub(super) fn iter(&self) -> impl Iterator<Item = ((u32, u32), &Pair)> + '_ {
        self.keys
            .iter()
            .zip(&self.pairs)
            .zip(&self.removed)
            .filter(|(_, &removed)| !removed)
            .map(|((&k, p), _)| (unpack(k), p))
    }

    /// The pairs, in pair order, to change.
    pub(super) fn iter_mut(&mut self) -> impl Iterator<Item = &mut Pair> + '_ {
        self.pairs
            .iter_mut()
            .zip(&self.removed)
            .filter(|(_, &removed)| !removed)
            .map(|(p, _)| p)
    }

    /// The rack pairs, in order.
    pub(super) fn keys(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.iter().map(|(pair, _)| pair)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pairs come out in pair order, each with its flows in the order
    /// they came in; removed ones are gone from every read, also after
    /// the table drops their places.
    #[test]
    fn pairs_in_order_and_removed_ones_gone_after_compaction() {
        let flows = [((2, 0), 5), ((0, 3), 1), ((2, 0), 4), ((0, 1), 2), ((1, 1), 3)];
        let mut t = Pairs::of(flows.iter().map(|&(p, f)| (p, FlowId(f))));
        let got: Vec<((u32, u32), Vec<u64>)> = t
            .iter()
            .map(|(p, pair)| (p, pair.flows.iter().map(|f| f.0).collect()))
            .collect();
        assert_eq!(
            got,
            vec![
                ((0, 1), vec![2]),
                ((0, 3), vec![1]),
                ((1, 1), vec![3]),
                ((2, 0), vec![5, 4])
            ]
        );
        t.remove((0, 3));
        t.remove((0, 3));
        assert!(t.get((0, 3)).is_none() && t.get_mut((0, 3)).is_none());
        assert_eq!(t.keys().collect::<Vec<_>>(), vec![(0, 1), (1, 1), (2, 0)]);
        // Enough pairs that removing most of them compacts the table.
        let many: Vec<((u32, u32), FlowId)> = (0..200)
            .map(|i| ((i / 10, i % 10), FlowId(u64::from(i))))
            .collect();
        let mut t = Pairs::of(many.into_iter());
        for i in (0..200).filter(|i| i % 7 != 0) {
            t.remove((i / 10, i % 10));
        }
        assert!(t.keys.len() < 200, "compacted");
        let want: Vec<(u32, u32)> = (0..200)
            .filter(|i| i % 7 == 0)
            .map(|i| (i / 10, i % 10))
            .collect();
        assert_eq!(t.keys().collect::<Vec<_>>(), want);
        assert!(want
            .iter()
            .all(|&p| t.get(p).is_some_and(|pair| pair.flows.len() == 1)));
        for p in want {
            t.remove(p);
        }
        assert!(t.is_empty() && t.iter().next().is_none());
    }
}
