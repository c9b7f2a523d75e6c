//! [`KeyedMap`]: a map looked up by hashing and listed in key order.

use crate::net::fasthash::FastMap;
use std::collections::BTreeSet;
use std::hash::Hash;

/// A map read like a `BTreeMap` (iteration in key order, which policies
/// and records see, so runs do not depend on hashing) but looked up by
/// hashing: the engine looks a live attempt up at every fetch's start and
/// end, and a tree's search was a tenth of a NAS run. Inserting and
/// removing cost a hash update and a tree update.
#[derive(Clone, Debug)]
pub(crate) struct KeyedMap<K, V> {
    values: FastMap<K, V>,
    order: BTreeSet<K>,
}

impl<K, V> Default for KeyedMap<K, V> {
    fn default() -> KeyedMap<K, V> {
        KeyedMap {
            values: FastMap::default(),
            order: BTreeSet::new(),
        }
    }
}

impl<K: Copy + Ord + Hash, V> KeyedMap<K, V> {
    /// The value of `k`, if any.
    pub(crate) fn get(&self, k: &K) -> Option<&V> {
        self.values.get(k)
    }

    /// The value of `k`, mutably, if any.
    pub(crate) fn get_mut(&mut self, k: &K) -> Option<&mut V> {
        self.values.get_mut(k)
    }

    /// Sets the value of `k`, returning the one it replaces, if any.
    pub(crate) fn insert(&mut self, k: K, v: V) -> Option<V> {
        let old = self.values.insert(k, v);
        if old.is_none() {
            self.order.insert(k);
        }
        old
    }

    /// Takes the value of `k` out, if any.
    pub(crate) fn remove(&mut self, k: &K) -> Option<V> {
        let old = self.values.remove(k)?;
        self.order.remove(k);
        Some(old)
    }

    /// The keys, in order.
    pub(crate) fn keys(&self) -> impl Iterator<Item = &K> + '_ {
        self.order.iter()
    }

    /// The values, in key order.
    pub(crate) fn values(&self) -> impl Iterator<Item = &V> + '_ {
        self.order.iter().filter_map(|k| self.values.get(k))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn a_keyed_map_reads_like_a_btree_map_through_inserts_and_removals() {
        let mut map = KeyedMap::default();
        let mut like = BTreeMap::new();
        for k in [50u64, 3, 99, 7, 3, 64, 1] {
            assert_eq!(map.insert(k, k * 10), like.insert(k, k * 10), "insert {k}");
        }
        for k in [7u64, 8, 50] {
            assert_eq!(map.remove(&k), like.remove(&k), "remove {k}");
        }
        if let (Some(a), Some(b)) = (map.get_mut(&99), like.get_mut(&99)) {
            *a += 1;
            *b += 1;
        }
        assert!(map.keys().eq(like.keys()));
        assert!(map.values().eq(like.values()));
        for k in 0..100 {
            assert_eq!(map.get(&k), like.get(&k), "get {k}");
        }
    }
}
