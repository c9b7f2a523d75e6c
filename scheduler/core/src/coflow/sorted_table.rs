//! [`SortedTable`]: values by a small key (a packed tuple), in key order,
//! found by binary search over the keys alone.
//!
//! The coflow policies keep tables of rack pairs that are read far more
//! often than they change, and walked in order: Sunflow's pairs of a
//! coflow ([`super::sunflow`]) and a driver's standing pair plans
//! ([`super::decision::PairPlans`]). Keys sit in a vector of their own, so
//! a probe reads a key and compares once; a value taken out leaves a hole
//! in place until the holes outnumber the live values by
//! [`SortedTable::SLACK`], so a removal costs a search, and the compaction
//! is amortized O(1) per removal.

/// Values by key, in key order; `K` is a packed key (an integer whose
/// order is the order wanted).
#[derive(Clone, Debug)]
pub struct SortedTable<K, V> {
    /// The keys, in order (also those of holes).
    keys: Vec<K>,
    /// The value at each key; `None`: a hole, taken out since the last
    /// compaction.
    values: Vec<Option<V>>,
    /// Values that are not holes.
    live: usize,
}

impl<K, V> Default for SortedTable<K, V> {
    fn default() -> SortedTable<K, V> {
        SortedTable {
            keys: Vec::new(),
            values: Vec::new(),
            live: 0,
        }
    }
}

impl<K: Ord + Copy, V> SortedTable<K, V> {
    /// How many more holes than values a table keeps before it compacts.
    pub const SLACK: usize = 64;

    /// The table of `entries`, given in strictly increasing key order.
    pub fn from_sorted(entries: impl IntoIterator<Item = (K, V)>) -> SortedTable<K, V> {
        let (keys, values): (Vec<K>, Vec<Option<V>>) = entries.into_iter().map(|(k, v)| (k, Some(v))).unzip();
        debug_assert!(keys.windows(2).all(|w| w[0] < w[1]), "keys in increasing order");
        SortedTable {
            live: keys.len(),
            keys,
            values,
        }
    }

    /// The value of `key`, if any.
    pub fn get(&self, key: K) -> Option<&V> {
        let at = self.keys.binary_search(&key).ok()?;
        self.values[at].as_ref()
    }

    /// The value of `key`, if any, to change.
    pub fn get_mut(&mut self, key: K) -> Option<&mut V> {
        let at = self.keys.binary_search(&key).ok()?;
        self.values[at].as_mut()
    }

    /// Sets `key`'s value (`None`: takes it out, leaving a hole) and
    /// returns the one it had. A key not in the table is inserted in
    /// place, which moves the keys after it. Holes stay until
    /// [`SortedTable::compact_if_sparse`].
    pub fn set(&mut self, key: K, value: Option<V>) -> Option<V> {
        match self.keys.binary_search(&key) {
            Ok(at) => {
                let old = std::mem::replace(&mut self.values[at], value);
                self.live = self.live + usize::from(self.values[at].is_some()) - usize::from(old.is_some());
                old
            }
            Err(at) => {
                if value.is_some() {
                    self.keys.insert(at, key);
                    self.values.insert(at, value);
                    self.live += 1;
                }
                None
            }
        }
    }

    /// Takes `key`'s value out, and compacts the table if it is sparse.
    pub fn remove(&mut self, key: K) -> Option<V> {
        let old = self.set(key, None);
        self.compact_if_sparse();
        old
    }

    /// Drops the holes once they outnumber the values by [`SortedTable::SLACK`].
    pub fn compact_if_sparse(&mut self) {
        if self.keys.len() <= 2 * self.live + Self::SLACK {
            return;
        }
        let mut kept = 0;
        for at in 0..self.keys.len() {
            if self.values[at].is_some() {
                self.keys.swap(kept, at);
                self.values.swap(kept, at);
                kept += 1;
            }
        }
        self.keys.truncate(kept);
        self.values.truncate(kept);
    }

    /// How many keys have a value.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Whether no key has a value.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// The keys with their values, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (K, &V)> + '_ {
        self.iter_from_position(0)
    }

    /// The keys from `from` on with their values, in key order.
    pub fn iter_from(&self, from: K) -> impl Iterator<Item = (K, &V)> + '_ {
        self.iter_from_position(self.keys.partition_point(|&k| k < from))
    }

    fn iter_from_position(&self, start: usize) -> impl Iterator<Item = (K, &V)> + '_ {
        self.keys[start..]
            .iter()
            .zip(&self.values[start..])
            .filter_map(|(&k, v)| Some((k, v.as_ref()?)))
    }

    /// The values, in key order, to change.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> + '_ {
        self.values.iter_mut().flatten()
    }

    /// Empties the table and returns its entries, in key order.
    pub fn take_entries(&mut self) -> impl Iterator<Item = (K, V)> {
        let (keys, values) = (std::mem::take(&mut self.keys), std::mem::take(&mut self.values));
        self.live = 0;
        keys.into_iter().zip(values).filter_map(|(k, v)| Some((k, v?)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Set, get, take out, insert between, iterate from a key, and
    /// compact: the table reads as the `BTreeMap` it stands for after every
    /// step, holes or not.
    #[test]
    fn a_sorted_table_reads_as_a_btreemap_through_holes_and_compaction() {
        use std::collections::BTreeMap;
        let mut t: SortedTable<u64, u64> = SortedTable::from_sorted((0..300).map(|k| (2 * k, k)));
        let mut want: BTreeMap<u64, u64> = (0..300).map(|k| (2 * k, k)).collect();
        let same = |t: &SortedTable<u64, u64>, want: &BTreeMap<u64, u64>| {
            assert_eq!(t.len(), want.len());
            assert!(t
                .iter()
                .map(|(k, &v)| (k, v))
                .eq(want.iter().map(|(&k, &v)| (k, v))));
            assert!(t
                .iter_from(101)
                .map(|(k, &v)| (k, v))
                .eq(want.range(101..).map(|(&k, &v)| (k, v))));
        };
        // Most taken out: the table compacts, and what is left reads the same.
        for k in (0..300).filter(|k| k % 5 != 0) {
            assert_eq!(t.remove(2 * k), Some(k));
            want.remove(&(2 * k));
        }
        assert!(t.keys.len() < 300, "compacted: {} keys", t.keys.len());
        same(&t, &want);
        assert_eq!(t.remove(2), None, "taken out already");
        // A key taken out set again, one inserted between two, a value changed.
        assert_eq!(t.set(22, Some(7)), None);
        want.insert(22, 7);
        assert_eq!(t.set(21, Some(8)), None);
        want.insert(21, 8);
        *t.get_mut(21).expect("inserted") += 1;
        *want.get_mut(&21).expect("inserted") += 1;
        assert_eq!(t.set(21, Some(1)), Some(9));
        want.insert(21, 1);
        assert_eq!(t.set(23, None), None, "no value: nothing inserted");
        // Taken out after the compaction: a hole, filled in place.
        let holes = t.keys.len();
        assert_eq!(t.set(462, Some(5)), None);
        want.insert(462, 5);
        assert_eq!(t.keys.len(), holes, "the hole refilled");
        same(&t, &want);
        assert_eq!(t.get(22), Some(&7));
        assert_eq!(t.get(24), None);
        for v in t.values_mut() {
            *v += 1000;
        }
        want.values_mut().for_each(|v| *v += 1000);
        same(&t, &want);
        let entries: Vec<(u64, u64)> = t.take_entries().collect();
        assert_eq!(entries, want.into_iter().collect::<Vec<_>>());
        assert!(t.is_empty() && t.iter().next().is_none());
    }
}
