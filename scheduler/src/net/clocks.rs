//! Service clocks, one per link ([`Clock`]): what the flows bottlenecked at
//! a link have received since the run began, per flow.
//!
//! Max-min gives every flow bottlenecked at link `l` the same rate, the
//! link's level ([`super::levels`]). So the fluid network does not keep a
//! counter per bundle for those flows: the link's clock `V_l(t) = ∫ λ_l dt`
//! is their common counter, a bundle on it records the offset between its
//! own service and the clock when it joined, and its service at `t` is
//! `offset + V_l(t)`. When an event changes the level of a link, only the
//! clock is rebased; when it changes nothing else for a bundle, the bundle
//! is not touched. Processor-sharing simulators use the same device
//! (virtual time) for a single queue; here there is one per link.
//!
//! Each clock orders its bundles by the clock value at which their first
//! member finishes ([`Clock::finishes`]), so the clock's next finish is its
//! heap's first entry; entries carry the bundle's generation and are stale
//! once the bundle's finish is recomputed or it leaves the clock.

use ocslab_emulator::Nanos;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// One link's service clock.
#[derive(Clone, Debug, Default)]
pub(super) struct Clock {
    /// Rate per flow of the bundles bottlenecked at the link (0 if none).
    level: f64,
    /// Value at `since`.
    value: f64,
    since: Nanos,
    /// Bundles on the clock.
    attached: u32,
    /// (clock value at which the bundle's first member finishes, as f64
    /// bits: order-preserving for values >= 0; bundle; its generation).
    pub(super) finishes: BinaryHeap<Reverse<(u64, usize, u32)>>,
    /// Whether it is listed for its next finish to be recomputed.
    pub(super) due: bool,
}

impl Clock {
    /// The clock's value at `now` (not before its last change).
    pub(super) fn value(&self, now: Nanos) -> f64 {
        if self.level > 0.0 {
            self.value + self.level * (now - self.since).as_secs_f64()
        } else {
            self.value
        }
    }

    /// The rate per flow of the bundles on it.
    pub(super) fn level(&self) -> f64 {
        self.level
    }

    /// From `now` on the clock runs at `level` (a link that is no
    /// bottleneck, level infinite, stops: nothing is on it).
    pub(super) fn set_level(&mut self, now: Nanos, level: f64) {
        self.value = self.value(now);
        self.since = now;
        self.level = if level.is_finite() { level } else { 0.0 };
    }

    /// A bundle joins the clock.
    pub(super) fn attach(&mut self) {
        self.attached += 1;
    }

    /// A bundle leaves the clock. When the last one leaves, the clock
    /// restarts from 0, which keeps its values (and the rounding of the
    /// offsets taken from them) small.
    pub(super) fn detach(&mut self, now: Nanos) {
        self.attached = self.attached.saturating_sub(1);
        if self.attached == 0 {
            self.value = 0.0;
            self.since = now;
            self.finishes.clear();
        }
    }

    /// Records that `bundle` (of `generation`) has its first finish at
    /// clock value `at`. When stale entries outnumber the live ones, those
    /// `live` rejects are dropped.
    pub(super) fn push_finish(
        &mut self,
        at: f64,
        bundle: usize,
        generation: u32,
        live: impl Fn(usize, u32) -> bool,
    ) {
        self.finishes
            .push(Reverse((at.max(0.0).to_bits(), bundle, generation)));
        let limit = 2 * self.attached as usize + 64;
        drop_stale(&mut self.finishes, limit, |&(_, b, g)| live(b, g));
    }
}

/// Keeps a heap of generation-stamped entries lean: drops every entry
/// `live` rejects once the heap holds more than `limit`, and the rejected
/// ones at its front in any case, so that its first entry is current.
pub(super) fn drop_stale<T: Ord>(heap: &mut BinaryHeap<Reverse<T>>, limit: usize, live: impl Fn(&T) -> bool) {
    if heap.len() > limit {
        heap.retain(|Reverse(e)| live(e));
    }
    while heap.peek().is_some_and(|Reverse(e)| !live(e)) {
        heap.pop();
    }
}
