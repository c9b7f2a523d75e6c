//! A coflow's elephants by rack pair ([`Pairs`]): a [`SortedTable`] in pair
//! order, read by binary search and walked in order.
//!
//! A plan walks every pair of every coflow (tens of thousands on FB2010)
//! several times over, and between plans pairs only leave.

use super::Pair;
use crate::coflow::sorted_table::SortedTable;
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
pub(super) struct Pairs(SortedTable<u64, Pair>);

impl Pairs {
    /// The pairs of `flows` (each with its (source rack, destination
    /// rack)), each pair's flows in the order given; their bytes are left
    /// for [`Pair::read`].
    pub(super) fn of(flows: impl Iterator<Item = ((u32, u32), FlowId)>) -> Pairs {
        let mut all: Vec<(u64, FlowId)> = flows.map(|(pair, f)| (pack(pair), f)).collect();
        // Stable: a pair's flows keep the order they came in.
        all.sort_by_key(|&(key, _)| key);
        let mut pairs: Vec<(u64, Pair)> = Vec::new();
        for (key, f) in all {
            match pairs.last_mut() {
                Some((last, pair)) if *last == key => pair.flows.push(f),
                _ => pairs.push((
                    key,
                    Pair {
                        flows: vec![f],
                        ..Pair::default()
                    },
                )),
            }
        }
        Pairs(SortedTable::from_sorted(pairs))
    }

    /// The pair `pair`, unless it is not in the table.
    pub(super) fn get(&self, pair: (u32, u32)) -> Option<&Pair> {
        self.0.get(pack(pair))
    }

    /// The pair `pair`, unless it is not in the table.
    pub(super) fn get_mut(&mut self, pair: (u32, u32)) -> Option<&mut Pair> {
        self.0.get_mut(pack(pair))
    }

    /// Takes `pair` out of the table.
    pub(super) fn remove(&mut self, pair: (u32, u32)) {
        self.0.remove(pack(pair));
    }

    /// Whether the table holds no pair.
    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The pairs, in pair order.
    pub(super) fn iter(&self) -> impl Iterator<Item = ((u32, u32), &Pair)> + '_ {
        self.0.iter().map(|(k, p)| (unpack(k), p))
    }

    /// The pairs, in pair order, to change.
    pub(super) fn iter_mut(&mut self) -> impl Iterator<Item = &mut Pair> + '_ {
        self.0.values_mut()
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
    /// they came in; removed ones are gone from every read, also once the
    /// table drops their places (`sorted_table`'s test checks that it does).
    #[test]
    fn pairs_in_order_and_removed_ones_gone() {
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
