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

use ocslab_core::Nanos;
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
    pub(super) finishes: BinaryHeap<Reverse<(u64, u32, u32)>>,
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
            .push(Reverse((at.max(0.0).to_bits(), bundle as u32, generation)));
        let limit = 2 * self.attached as usize + 64;
        drop_stale(&mut self.finishes, limit, |&(_, b, g)| live(b as usize, g));
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

/// Each link clock's next finish, by link (class links included), and the
/// earliest of them. A rate update changes a few clocks' next finishes;
/// the earliest is kept per block of [`NextFinishes::BLOCK`] clocks, so
/// finding the earliest after an update scans the blocks and the clocks of
/// the blocks that changed, and finding the clocks due at an instant scans
/// only the blocks due then: a few hundred words on a fabric's own links
/// (a scan beats a heap entry per clock whose level moved), and not every
/// clock of every class when rates are solved class by class
/// ([`super::class_levels`]).
#[derive(Clone, Debug, Default)]
pub(super) struct NextFinishes {
    at: Vec<Nanos>,
    /// The earliest of each block, as of the last [`NextFinishes::settle`].
    block: Vec<Nanos>,
    changed: Vec<bool>,
    changed_list: Vec<u32>,
}

impl NextFinishes {
    /// Clocks per block.
    const BLOCK: usize = 64;
    /// A clock with no finish ahead.
    pub(super) const NONE: Nanos = Nanos(u64::MAX);

    /// `n` clocks with no finish ahead.
    pub(super) fn new(n: usize) -> NextFinishes {
        let mut f = NextFinishes::default();
        f.grow(n);
        f
    }

    /// Clocks up to `n` (new ones with no finish ahead).
    pub(super) fn grow(&mut self, n: usize) {
        if n > self.at.len() {
            self.at.resize(n, Self::NONE);
            let blocks = n.div_ceil(Self::BLOCK);
            self.block.resize(blocks, Self::NONE);
            self.changed.resize(blocks, false);
        }
    }

    /// Clock `l`'s next finish is `t`.
    pub(super) fn set(&mut self, l: usize, t: Nanos) {
        self.at[l] = t;
        let b = l / Self::BLOCK;
        if !self.changed[b] {
            self.changed[b] = true;
            self.changed_list.push(b as u32);
        }
    }

    /// Appends to `due` every clock whose next finish is at or before
    /// `now`, in link order, and takes those finishes off (their clocks'
    /// next finishes are set again once recomputed).
    pub(super) fn take_due(&mut self, now: Nanos, due: &mut Vec<usize>) {
        for b in 0..self.block.len() {
            if self.block[b] > now {
                continue;
            }
            let end = ((b + 1) * Self::BLOCK).min(self.at.len());
            for l in b * Self::BLOCK..end {
                if self.at[l] <= now {
                    due.push(l);
                    self.set(l, Self::NONE);
                }
            }
        }
    }

    /// Brings the blocks up to date after [`NextFinishes::set`]s; returns
    /// the earliest next finish of all clocks, if any.
    pub(super) fn settle(&mut self) -> Option<Nanos> {
        for &b in &self.changed_list {
            let b = b as usize;
            self.changed[b] = false;
            let end = ((b + 1) * Self::BLOCK).min(self.at.len());
            self.block[b] = self.at[b * Self::BLOCK..end]
                .iter()
                .copied()
                .min()
                .unwrap_or(Self::NONE);
        }
        self.changed_list.clear();
        self.block.iter().copied().min().filter(|&t| t != Self::NONE)
    }
}
