//! [`CapOrder`]: the capped slots in the order a progressive filling meets
//! their caps.

/// The capped slots by (cap as f64 bits, slot): what a filling walks to
/// find the smallest unmet cap. A vector sorted when a filling asks for
/// it, not a search tree kept sorted at every change: Varys and Aalo move
/// thousands of caps between two solves, and a sort of them all costs less
/// than as many tree removals and insertions. A slot whose cap changes or
/// that leaves keeps its old entry until the next sort, so a walk must
/// skip the entries its caller no longer holds ([`CapOrder::sorted`]).
#[derive(Clone, Debug, Default)]
pub(super) struct CapOrder {
    entries: Vec<(u64, u32)>,
    sorted: bool,
    /// Entries added and not yet dropped: the vector's length less its
    /// stale entries.
    live: usize,
}

impl CapOrder {
    /// Slot `slot` is capped at `cap` (bytes per second, at least 0).
    pub(super) fn insert(&mut self, cap: f64, slot: u32) {
        let entry = (cap.to_bits(), slot);
        if self.entries.last().is_some_and(|&last| last >= entry) {
            self.sorted = false;
        }
        self.entries.push(entry);
        self.live += 1;
    }

    /// A slot's entry is stale now (its cap changed or it left).
    pub(super) fn drop_one(&mut self) {
        self.live = self.live.saturating_sub(1);
    }

    /// Whether stale entries have come to outnumber the live ones.
    fn mostly_stale(&self) -> bool {
        self.entries.len() > 2 * self.live + 64
    }

    /// Drops the stale entries once they outnumber the live ones (as
    /// [`CapOrder::sorted`] does), without sorting: for solves that walk
    /// no caps, so that the entries of caps moved call after call do not
    /// pile up.
    pub(super) fn drop_stale(&mut self, holds: impl Fn(u64, u32) -> bool) {
        if self.mostly_stale() {
            self.entries.retain(|&(bits, slot)| holds(bits, slot));
            self.live = self.entries.len();
            self.sorted = false;
        }
    }

    /// The entries by (cap, slot), each once, of which `holds(cap bits,
    /// slot)` tells the live ones. Sorted again, the stale ones dropped,
    /// only if something was added out of order since the last call or
    /// stale entries have come to outnumber live ones; otherwise stale
    /// entries may remain, and the caller skips them.
    pub(super) fn sorted(&mut self, holds: impl Fn(u64, u32) -> bool) -> &[(u64, u32)] {
        if !self.sorted || self.mostly_stale() {
            self.entries.retain(|&(bits, slot)| holds(bits, slot));
            self.entries.sort_unstable();
            self.entries.dedup();
            self.live = self.entries.len();
            self.sorted = true;
        }
        &self.entries
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn a_walk_meets_the_live_caps_in_order_whatever_changed_between_walks() {
        let mut order = CapOrder::default();
        // What the caller holds: slot -> cap.
        let mut caps: BTreeMap<u32, f64> = BTreeMap::new();
        let live = |caps: &BTreeMap<u32, f64>, order: &mut CapOrder| -> Vec<(f64, u32)> {
            order
                .sorted(|bits, s| caps.get(&s).is_some_and(|c| c.to_bits() == bits))
                .iter()
                .filter(|&&(bits, s)| caps.get(&s).is_some_and(|c| c.to_bits() == bits))
                .map(|&(bits, s)| (f64::from_bits(bits), s))
                .collect()
        };
        for (s, c) in [(3, 5.0), (1, 7.0), (2, 5.0)] {
            caps.insert(s, c);
            order.insert(c, s);
        }
        assert_eq!(live(&caps, &mut order), vec![(5.0, 2), (5.0, 3), (7.0, 1)]);
        // Slot 3 moves to 9 and back to 5, slot 1 leaves, slot 4 joins in order.
        for c in [9.0, 5.0] {
            order.drop_one();
            caps.insert(3, c);
            order.insert(c, 3);
        }
        caps.remove(&1);
        order.drop_one();
        caps.insert(4, 8.0);
        order.insert(8.0, 4);
        assert_eq!(live(&caps, &mut order), vec![(5.0, 2), (5.0, 3), (8.0, 4)]);
        // Stale entries outnumbering live ones are dropped at the next walk.
        for i in 0..200 {
            order.drop_one();
            caps.insert(2, f64::from(i));
            order.insert(f64::from(i), 2);
        }
        let walk = live(&caps, &mut order);
        assert_eq!(walk, vec![(5.0, 3), (8.0, 4), (199.0, 2)]);
        assert!(order.entries.len() <= 2 * order.live + 64);
    }
}
