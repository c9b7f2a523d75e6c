//! The id-ordered collections a [`super::NetView`] keeps its flows in:
//! [`FlowTable`] (active flows by id, an [`IdTable`]) and [`FlowIdSet`] (a
//! coflow's active flow ids). Both read like their `BTree` counterparts but
//! are vectors in id order with holes, because ids arrive in increasing
//! order and a trace replay inserts and removes hundreds of thousands of
//! them.

use super::FlowView;
use crate::model::coflow::FlowId;
use serde::{Serialize, Serializer};

pub use crate::coflow::id_table::IdTable;

/// A coflow's active flow ids, read like a `BTreeSet<FlowId>` (membership,
/// iteration in id order) but kept as a vector in id order: ids handed out
/// in increasing order are appended, and a removal marks its id gone (found
/// by binary search) instead of rebalancing a tree; gone ids are dropped
/// when they outnumber the others (amortized O(1) per removal). An id lower
/// than the last one is inserted in place, O(ids).
#[derive(Clone, Debug, Default)]
pub struct FlowIdSet {
    /// (id, whether it is in), ids increasing.
    ids: Vec<(FlowId, bool)>,
    /// Ids in.
    len: usize,
}

impl FlowIdSet {
    /// Number of ids in.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no id is in.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether `id` is in.
    pub fn contains(&self, id: &FlowId) -> bool {
        self.position(*id).is_ok_and(|i| self.ids[i].1)
    }

    /// Adds `id`; returns whether it was not in.
    pub fn insert(&mut self, id: FlowId) -> bool {
        if self.ids.last().is_none_or(|&(last, _)| last < id) {
            self.ids.push((id, true));
        } else {
            match self.position(id) {
                Ok(i) if self.ids[i].1 => return false,
                Ok(i) => self.ids[i].1 = true,
                Err(i) => self.ids.insert(i, (id, true)),
            }
        }
        self.len += 1;
        true
    }

    /// Takes `id` out; returns whether it was in.
    pub fn remove(&mut self, id: &FlowId) -> bool {
        let Some(i) = self.position(*id).ok().filter(|&i| self.ids[i].1) else {
            return false;
        };
        self.ids[i].1 = false;
        self.len -= 1;
        if self.ids.len() > 2 * self.len + 16 {
            self.ids.retain(|&(_, live)| live);
        } else {
            while self.ids.last().is_some_and(|&(_, live)| !live) {
                self.ids.pop();
            }
        }
        true
    }

    /// The ids in, increasing.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &FlowId> + '_ {
        self.ids.iter().filter(|(_, live)| *live).map(|(id, _)| id)
    }

    /// Where `id` is or would go in `ids`.
    fn position(&self, id: FlowId) -> Result<usize, usize> {
        self.ids.binary_search_by_key(&id, |&(other, _)| other)
    }
}

impl PartialEq for FlowIdSet {
    fn eq(&self, other: &FlowIdSet) -> bool {
        self.len == other.len && self.iter().eq(other.iter())
    }
}

impl FromIterator<FlowId> for FlowIdSet {
    fn from_iter<I: IntoIterator<Item = FlowId>>(ids: I) -> FlowIdSet {
        let mut set = FlowIdSet::default();
        ids.into_iter().for_each(|id| {
            set.insert(id);
        });
        set
    }
}

impl Serialize for FlowIdSet {
    /// As a sequence of ids, increasing (as a `BTreeSet` is).
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

/// A policy view's active flows by id ([`IdTable`]).
pub type FlowTable = IdTable<FlowView>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::coflow::{CoflowId, FlowSpec};
    use crate::{Bytes, HostId, Nanos};

    fn flow(id: u64) -> FlowView {
        let spec = FlowSpec {
            id: FlowId(id),
            coflow: CoflowId(1),
            src: HostId { rack: 0, host: 0 },
            dst: HostId { rack: 1, host: 0 },
            bytes: Bytes(id),
            weight: 1,
        };
        FlowView::new(spec, Nanos::ZERO)
    }

    fn ids(t: &FlowTable) -> Vec<u64> {
        t.keys().map(|id| id.0).collect()
    }

    #[test]
    fn a_flow_table_keeps_id_order_through_removals_and_late_ids() {
        let mut t = FlowTable::default();
        for id in [1, 2, 3, 5, 8] {
            assert!(t.insert(FlowId(id), flow(id)).is_none());
        }
        assert_eq!(t.remove(&FlowId(3)).map(|f| f.spec.bytes), Some(Bytes(3)));
        assert_eq!(t.remove(&FlowId(3)), None);
        assert_eq!(t.remove(&FlowId(8)).map(|f| f.spec.id), Some(FlowId(8)));
        // Lower than the last id: in place; an id seen before: back in.
        t.insert(FlowId(4), flow(4));
        t.insert(FlowId(3), flow(3));
        t.insert(FlowId(9), flow(9));
        assert_eq!(ids(&t), [1, 2, 3, 4, 5, 9]);
        assert_eq!(t.len(), 6);
        assert!(!t.is_empty() && t.contains_key(&FlowId(3)));
        assert_eq!(t[&FlowId(4)].spec.bytes, Bytes(4));
        assert!(t.get(&FlowId(8)).is_none());
        if let Some(f) = t.get_mut(&FlowId(5)) {
            f.elephant = true;
        }
        assert!(t[&FlowId(5)].elephant);
        t.insert(FlowId(0), flow(0));
        assert!(t[&FlowId(5)].elephant && !t[&FlowId(0)].elephant);
        let values: Vec<u64> = t.values().map(|f| f.spec.id.0).collect();
        assert_eq!(values, [0, 1, 2, 3, 4, 5, 9]);
    }

    #[test]
    fn a_flow_id_set_reads_like_a_btree_set_through_removals_and_late_ids() {
        let mut set = FlowIdSet::default();
        let mut like = std::collections::BTreeSet::new();
        // Appends, removals (enough to compact), late and repeated ids.
        for id in (0..200).chain([50, 7, 300, 250, 7]) {
            assert_eq!(set.insert(FlowId(id)), like.insert(FlowId(id)), "insert {id}");
        }
        for id in (0..200).filter(|id| id % 3 != 0).chain([300, 1000]) {
            assert_eq!(set.remove(&FlowId(id)), like.remove(&FlowId(id)), "remove {id}");
        }
        assert_eq!(set.insert(FlowId(4)), like.insert(FlowId(4)));
        assert_eq!(set.len(), like.len());
        assert!(set.iter().eq(like.iter()));
        for id in 0..310 {
            assert_eq!(
                set.contains(&FlowId(id)),
                like.contains(&FlowId(id)),
                "contains {id}"
            );
        }
        assert_eq!(set, like.iter().copied().collect::<FlowIdSet>());
        for id in like.iter() {
            assert!(set.remove(id));
        }
        assert!(set.is_empty() && set.iter().next().is_none());
    }

    #[test]
    fn a_flow_table_finds_every_flow_after_compactions() {
        let mut t = FlowTable::default();
        for id in 0..1000 {
            t.insert(FlowId(id), flow(id));
        }
        // Remove all but every tenth: several compactions on the way.
        for id in (0..1000).filter(|id| id % 10 != 0) {
            assert!(t.remove(&FlowId(id)).is_some(), "flow {id}");
        }
        assert_eq!(t.len(), 100);
        for id in 0..1000 {
            assert_eq!(t.contains_key(&FlowId(id)), id % 10 == 0, "flow {id}");
        }
        assert_eq!(ids(&t), (0..1000).filter(|id| id % 10 == 0).collect::<Vec<_>>());
        // Removing more compacts again: positions move, lookups follow.
        for id in (0..500).step_by(10) {
            t.remove(&FlowId(id));
        }
        for id in (500..1000).step_by(10) {
            assert_eq!(t[&FlowId(id)].spec.bytes, Bytes(id), "flow {id}");
        }
        for (_, f) in t.iter_mut() {
            f.remaining_bytes = 0.0;
        }
        assert!(t.values().all(|f| f.remaining_bytes == 0.0));
    }
}
