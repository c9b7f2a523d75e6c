//! [`IdTable`]: values by flow id, read like a `BTreeMap<FlowId, V>` but
//! kept as a vector in id order.

use crate::coflow::id_index::IdIndex;
use crate::model::coflow::FlowId;
use std::ops::Index;

/// Values by flow id, read like a `BTreeMap<FlowId, V>` (lookups, iteration
/// in id order) but cheap to insert into and remove from at the rate a
/// trace replay or a wide shuffle does it (hundreds of thousands of flows
/// active, one arrival or departure every few microseconds), and a value
/// plus 12 bytes a flow, not a tree node's share.
///
/// Values are kept in a vector in id order, removed ones as holes until
/// they outnumber the live ones (then the vector is compacted, amortized
/// O(1) per removal), with an index from id to position ([`IdIndex`]: a
/// plain vector for ids near the ones seen so far, no hashing). Ids handed
/// out in increasing order (the engine's and a trace's) are appended; an
/// id lower than the last one is inserted in place, O(flows).
///
/// A policy view's flows ([`super::view::FlowTable`], whose tests exercise
/// it) and the engine's flows in flight are kept in one.
#[derive(Clone, Debug)]
pub struct IdTable<V> {
    /// (id, value) in id order; `None` for a value removed since the last compaction.
    entries: Vec<(FlowId, Option<V>)>,
    /// Position in `entries` of each live value.
    index: IdIndex,
}

impl<V> Default for IdTable<V> {
    fn default() -> IdTable<V> {
        IdTable {
            entries: Vec::new(),
            index: IdIndex::default(),
        }
    }
}

impl<V> IdTable<V> {
    /// Number of values.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// Whether there is no value.
    pub fn is_empty(&self) -> bool {
        self.index.len() == 0
    }

    /// Whether `id` has a value.
    pub fn contains_key(&self, id: &FlowId) -> bool {
        self.index.get(*id).is_some()
    }

    /// The value of `id`, if any.
    pub fn get(&self, id: &FlowId) -> Option<&V> {
        let at = self.index.get(*id)?;
        self.entries[at as usize].1.as_ref()
    }

    /// The value of `id`, mutably, if any.
    pub fn get_mut(&mut self, id: &FlowId) -> Option<&mut V> {
        let at = self.index.get(*id)?;
        self.entries[at as usize].1.as_mut()
    }

    /// Sets the value of `id`, returning the one it replaces, if any.
    pub fn insert(&mut self, id: FlowId, value: V) -> Option<V> {
        if let Some(at) = self.index.get(id) {
            return self.entries[at as usize].1.replace(value);
        }
        if self.entries.last().is_none_or(|&(last, _)| last < id) {
            let at = self.entries.len() as u32;
            self.index.insert(id, at);
            self.entries.push((id, Some(value)));
            return None;
        }
        // Out of order: in place, after the holes of its id if any.
        let at = self.entries.partition_point(|&(other, _)| other <= id);
        self.entries.insert(at, (id, Some(value)));
        self.index.insert(id, at as u32);
        self.reindex(at + 1);
        None
    }

    /// Takes the value of `id` out, if any.
    pub fn remove(&mut self, id: &FlowId) -> Option<V> {
        let at = self.index.remove(*id)?;
        let value = self.entries[at as usize].1.take();
        let live = self.index.len();
        let holes = self.entries.len() - live;
        if holes > live + 64 {
            self.entries.retain(|(_, v)| v.is_some());
            self.reindex(0);
        } else {
            // Holes at the end go now, so that appending stays in order.
            while self.entries.last().is_some_and(|(_, v)| v.is_none()) {
                self.entries.pop();
            }
        }
        value
    }

    /// Records the position of every live value from position `from` on.
    fn reindex(&mut self, from: usize) {
        for (i, (id, v)) in self.entries.iter().enumerate().skip(from) {
            if let (Some(_), Some(at)) = (v, self.index.get_mut(*id)) {
                *at = i as u32;
            }
        }
    }

    /// (id, value) in id order.
    pub fn iter(&self) -> impl Iterator<Item = (&FlowId, &V)> + '_ {
        self.entries
            .iter()
            .filter_map(|(id, v)| v.as_ref().map(|v| (id, v)))
    }

    /// (id, value) in id order, the values mutably.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (&FlowId, &mut V)> + '_ {
        self.entries
            .iter_mut()
            .filter_map(|(id, v)| v.as_mut().map(|v| (&*id, v)))
    }

    /// Ids in order.
    pub fn keys(&self) -> impl Iterator<Item = &FlowId> + '_ {
        self.iter().map(|(id, _)| id)
    }

    /// Values in id order.
    pub fn values(&self) -> impl Iterator<Item = &V> + '_ {
        self.entries.iter().filter_map(|(_, v)| v.as_ref())
    }

    /// Values in id order, mutably.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> + '_ {
        self.entries.iter_mut().filter_map(|(_, v)| v.as_mut())
    }
}

impl<V> Index<&FlowId> for IdTable<V> {
    type Output = V;

    /// # Panics
    /// If `id` has no value, as `BTreeMap`'s index does.
    fn index(&self, id: &FlowId) -> &V {
        match self.get(id) {
            Some(v) => v,
            None => panic!("flow {id:?} is not in the table"),
        }
    }
}
