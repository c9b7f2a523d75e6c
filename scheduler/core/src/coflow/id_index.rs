//! [`IdIndex`]: a map from flow id to a `u32` that costs a subtraction and
//! a load for the ids of the flows active at once.

use crate::model::coflow::FlowId;
use crate::net::fasthash::FastMap;

/// No value (in [`IdIndex::dense`]).
const NONE: u32 = u32::MAX;

/// An index from flow id to a `u32` (an [`super::id_table::IdTable`]'s
/// position of the flow, the fluid network's slot). Engines and traces number
/// flows upwards from some base, so the ids active at once sit in a window
/// a little wider than their number: those are held in a vector by id minus
/// the window's base (a lookup is a subtraction and a load). The window
/// reaches up to the highest id it took, so that the next id in sequence
/// lands in it even when the flows just below have all left; its front is
/// dropped once its lower half is empty, and once it is
/// [`IdIndex::MAX_SPREAD`] times wider than the flows it holds, the few old
/// flows in its lower half (stragglers that would otherwise pin it) move to
/// a hash map and the half is dropped.
/// An id far from the window (below its base, or beyond twice its width
/// above) goes to the hash map too, so any ids work.
#[derive(Clone, Debug, Default)]
pub struct IdIndex {
    /// The id of `dense[0]`.
    base: u64,
    /// Values of ids `base..base + dense.len()` ([`NONE`] for no flow).
    dense: Vec<u32>,
    /// Live flows in `dense`.
    dense_len: usize,
    /// `dense[..head]` holds no flow.
    head: usize,
    /// Values of ids outside the window when they came in.
    sparse: FastMap<FlowId, u32>,
}

impl IdIndex {
    /// Ids the window may grow by past its end at once, at least.
    pub const REACH: u64 = 4096;

    /// How many times wider than the flows it holds the window may grow
    /// before its lower half goes to the hash map. A place in the window
    /// costs 4 bytes, an entry of the map about 20 and a cache miss at each
    /// lookup; at 16 the window costs at most 64 bytes per flow held, and
    /// a replay's long-lived coflows stay in it (FB2010 under Varys: 6.4 %
    /// of a replay's samples were lookups in the map at 4, 2.9 % at 16).
    pub const MAX_SPREAD: usize = 16;

    /// Number of ids held.
    pub fn len(&self) -> usize {
        self.dense_len + self.sparse.len()
    }

    /// Whether no id is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The offset of `id` in the window, if it is inside.
    fn offset(&self, id: FlowId) -> Option<usize> {
        let i = id.0.checked_sub(self.base)?;
        (i < self.dense.len() as u64).then_some(i as usize)
    }

    /// The offset of `id` in the window, if it holds a flow there.
    fn held(&self, id: FlowId) -> Option<usize> {
        self.offset(id).filter(|&i| self.dense[i] != NONE)
    }

    /// The value of `id`, if it is held.
    pub fn get(&self, id: FlowId) -> Option<u32> {
        if let Some(i) = self.held(id) {
            return Some(self.dense[i]);
        }
        if self.sparse.is_empty() {
            return None;
        }
        self.sparse.get(&id).copied()
    }

    /// The value of `id`, mutably, if it is held.
    pub fn get_mut(&mut self, id: FlowId) -> Option<&mut u32> {
        if let Some(i) = self.held(id) {
            return Some(&mut self.dense[i]);
        }
        if self.sparse.is_empty() {
            return None;
        }
        self.sparse.get_mut(&id)
    }

    /// Records `value` (not `u32::MAX`) for `id`, which has none.
    pub fn insert(&mut self, id: FlowId, value: u32) {
        debug_assert_ne!(value, NONE);
        if self.dense_len == 0 {
            // Nothing held in it: the window starts again at this id.
            self.base = id.0;
            self.dense.clear();
            self.head = 0;
        }
        let end = self.base.saturating_add(self.dense.len() as u64);
        let reach = end.saturating_add((self.dense.len() as u64).max(Self::REACH));
        if id.0 >= self.base && id.0 < reach {
            let i = (id.0 - self.base) as usize;
            if i >= self.dense.len() {
                self.dense.resize(i + 1, NONE);
            }
            self.dense[i] = value;
            self.dense_len += 1;
            self.head = self.head.min(i);
        } else {
            self.sparse.insert(id, value);
        }
    }

    /// Drops `id`'s value; returns it, if it had one.
    pub fn remove(&mut self, id: FlowId) -> Option<u32> {
        if let Some(i) = self.held(id) {
            let p = std::mem::replace(&mut self.dense[i], NONE);
            self.dense_len -= 1;
            self.trim();
            return Some(p);
        }
        if self.sparse.is_empty() {
            return None;
        }
        self.sparse.remove(&id)
    }

    /// Drops the window's empty front once that is more than half of it,
    /// and its lower half once the window is [`IdIndex::MAX_SPREAD`] times
    /// wider than the flows it holds, moving that half's flows to the hash
    /// map. Amortized O(1) per id: each place of the window is walked and
    /// dropped once.
    fn trim(&mut self) {
        while self.dense.get(self.head).is_some_and(|&p| p == NONE) {
            self.head += 1;
        }
        let drop = if self.head > 64 && self.head > self.dense.len() / 2 {
            self.head
        } else if self.dense.len() > Self::REACH as usize
            && self.dense.len() > Self::MAX_SPREAD * self.dense_len
        {
            let half = self.dense.len() / 2;
            for (i, p) in self.dense[..half].iter().enumerate().skip(self.head) {
                if *p != NONE {
                    self.sparse.insert(FlowId(self.base + i as u64), *p);
                    self.dense_len -= 1;
                }
            }
            half
        } else {
            return;
        };
        self.dense.drain(..drop);
        self.base += drop as u64;
        self.head = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_far_from_the_others_and_below_the_window_are_found() {
        let mut ix = IdIndex::default();
        // A window from 1000 up, then ids far above it, below it, and at
        // the far end of the window once it has grown there.
        let far = [u64::MAX, 1 << 40, 5, 0, 1000 + 5 * 4096];
        for id in (1000..1000 + 2 * 4096).chain(far) {
            ix.insert(FlowId(id), (id % 1000) as u32);
        }
        for id in 1000 + 2 * 4096..1000 + 6 * 4096 {
            if id != 1000 + 5 * 4096 {
                ix.insert(FlowId(id), (id % 1000) as u32);
            }
        }
        assert_eq!(ix.len(), 6 * 4096 + 4);
        for (n, id) in far.iter().enumerate() {
            if let Some(v) = ix.get_mut(FlowId(*id)) {
                *v = n as u32 + 1;
            }
        }
        assert_eq!(ix.get(FlowId(1000 + 5 * 4096)), Some(5));
        assert_eq!(ix.get(FlowId(u64::MAX)), Some(1));
        assert_eq!(ix.get(FlowId(1 << 40)), Some(2));
        // Drop the window's lower part: its front goes, lookups still work.
        for id in 1000..1000 + 5 * 4096 {
            assert_eq!(ix.remove(FlowId(id)), Some((id % 1000) as u32), "flow {id}");
        }
        assert_eq!(ix.get(FlowId(1000 + 5 * 4096)), Some(5));
        assert_eq!(ix.get(FlowId(1000)), None);
        assert_eq!(
            ix.get(FlowId(1000 + 6 * 4096 - 1)),
            Some(((6 * 4096 - 1) % 1000) as u32)
        );
        // A lower id than the window's new base comes back.
        ix.insert(FlowId(1000), 9);
        assert_eq!(ix.get(FlowId(1000)), Some(9));
        for id in (1000 + 5 * 4096 + 1..1000 + 6 * 4096).chain(far).chain([1000]) {
            assert!(ix.remove(FlowId(id)).is_some(), "flow {id}");
        }
        assert_eq!((ix.len(), ix.get(FlowId(5))), (0, None));
        // Empty, the window starts again at the next id.
        ix.insert(FlowId(7), 3);
        assert_eq!((ix.base, ix.dense.len(), ix.get(FlowId(7))), (7, 1, Some(3)));
    }

    #[test]
    fn a_long_lived_coflow_stays_in_the_window_until_it_is_far_too_wide() {
        // Flows 0..1000 live on while batches of 500 later ids come and
        // go. Up to MAX_SPREAD times the flows held, the window keeps them
        // (no hash map); past that they move to it, and are still found.
        let mut ix = IdIndex::default();
        for id in 0..1000 {
            ix.insert(FlowId(id), id as u32);
        }
        let mut next = 1000;
        let batch = |ix: &mut IdIndex, next: &mut u64| {
            let ids: Vec<u64> = (*next..*next + 500).collect();
            *next += 500;
            ids.iter().for_each(|&id| ix.insert(FlowId(id), 1));
            ids.iter()
                .rev()
                .for_each(|&id| assert_eq!(ix.remove(FlowId(id)), Some(1)));
        };
        while next < 8 * 1000 {
            batch(&mut ix, &mut next);
            assert!(
                ix.sparse.is_empty(),
                "at {next}: {} ids in the map",
                ix.sparse.len()
            );
        }
        while ix.sparse.is_empty() {
            batch(&mut ix, &mut next);
            assert!(
                next <= 2 * IdIndex::MAX_SPREAD as u64 * 1000,
                "never moved: {next}"
            );
        }
        assert_eq!(ix.len(), 1000);
        assert!((0..1000).all(|id| ix.get(FlowId(id)) == Some(id as u32)));
    }

    #[test]
    fn a_straggler_does_not_push_later_ids_out_of_the_window() {
        // Flow 0 lives on while batches of later ids come and go, the
        // newest of each batch leaving first (as short flows of a trace
        // replay do): ids must keep landing in the window, the straggler
        // moving to the hash map once the window is too wide.
        let mut ix = IdIndex::default();
        ix.insert(FlowId(0), 0);
        let mut next = 1;
        for _ in 0..100 {
            let batch: Vec<u64> = (next..next + 500).collect();
            next += 500;
            for &id in &batch {
                ix.insert(FlowId(id), id as u32);
            }
            assert!(ix.sparse.len() <= 1, "{} ids in the hash map", ix.sparse.len());
            for &id in batch.iter().rev() {
                assert_eq!(ix.remove(FlowId(id)), Some(id as u32), "flow {id}");
            }
        }
        ix.insert(FlowId(next), 1);
        assert!(
            ix.dense.len() <= 4 * IdIndex::REACH as usize,
            "window of {}",
            ix.dense.len()
        );
        assert_eq!(
            (ix.get(FlowId(0)), ix.get(FlowId(next)), ix.len()),
            (Some(0), Some(1), 2)
        );
    }
}
