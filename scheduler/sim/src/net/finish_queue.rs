//! [`FinishQueue`]: the next finish of every bundle off a link clock, one
//! entry per bundle, moved in place when its finish changes.
//!
//! A heap of time-stamped entries would leave a stale entry behind at each
//! change, to be skipped when it comes to the front; under a policy that
//! caps every flow (Varys moves 12 million caps over an FB2010 replay)
//! the stale entries outnumber the live ones, and popping them cost more
//! than moving the live ones. Here each bundle has at most one entry, and
//! its position is kept, so a change sifts that entry up or down.

use ocslab_core::Nanos;

/// No entry (in [`FinishQueue::pos`]).
const ABSENT: u32 = u32::MAX;

/// A min-heap of (finish time, bundle), at most one entry per bundle.
/// Entries of equal time come out in bundle order.
#[derive(Clone, Debug, Default)]
pub(super) struct FinishQueue {
    heap: Vec<(Nanos, u32)>,
    /// Each bundle's index in `heap`, or [`ABSENT`].
    pos: Vec<u32>,
}

impl FinishQueue {
    /// Bundle `b` next finishes at `at` (`None`: it has no finish here).
    pub(super) fn set(&mut self, b: usize, at: Option<Nanos>) {
        if b >= self.pos.len() {
            self.pos.resize(b + 1, ABSENT);
        }
        let i = self.pos[b];
        match (i, at) {
            (ABSENT, None) => {}
            (ABSENT, Some(t)) => {
                self.heap.push((t, b as u32));
                let i = self.heap.len() - 1;
                self.pos[b] = i as u32;
                self.sift_up(i);
            }
            (i, None) => self.remove_at(i as usize),
            (i, Some(t)) => {
                let i = i as usize;
                let old = self.heap[i].0;
                self.heap[i].0 = t;
                if t < old {
                    self.sift_up(i);
                } else {
                    self.sift_down(i);
                }
            }
        }
    }

    /// The earliest finish and its bundle.
    pub(super) fn peek(&self) -> Option<(Nanos, usize)> {
        self.heap.first().map(|&(t, b)| (t, b as usize))
    }

    /// Takes the earliest entry out.
    pub(super) fn pop(&mut self) -> Option<(Nanos, usize)> {
        let first = self.peek()?;
        self.remove_at(0);
        Some(first)
    }

    fn remove_at(&mut self, i: usize) {
        let last = self.heap.len() - 1;
        self.heap.swap(i, last);
        let (_, gone) = self.heap.pop().expect("a heap entry at i");
        self.pos[gone as usize] = ABSENT;
        if i < last {
            self.pos[self.heap[i].1 as usize] = i as u32;
            self.sift_up(i);
            self.sift_down(i);
        }
    }

    fn sift_up(&mut self, mut i: usize) {
        while i > 0 {
            let parent = (i - 1) / 2;
            if self.heap[parent] <= self.heap[i] {
                break;
            }
            self.swap(i, parent);
            i = parent;
        }
    }

    fn sift_down(&mut self, mut i: usize) {
        let n = self.heap.len();
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut least = i;
            if l < n && self.heap[l] < self.heap[least] {
                least = l;
            }
            if r < n && self.heap[r] < self.heap[least] {
                least = r;
            }
            if least == i {
                break;
            }
            self.swap(i, least);
            i = least;
        }
    }

    fn swap(&mut self, i: usize, j: usize) {
        self.heap.swap(i, j);
        self.pos[self.heap[i].1 as usize] = i as u32;
        self.pos[self.heap[j].1 as usize] = j as u32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use std::collections::BTreeMap;

    /// Drains `q` in order.
    fn drain(q: &mut FinishQueue) -> Vec<(Nanos, usize)> {
        std::iter::from_fn(|| q.pop()).collect()
    }

    #[test]
    fn entries_move_when_their_finish_changes_and_leave_when_it_goes() {
        let mut q = FinishQueue::default();
        q.set(3, Some(Nanos(30)));
        q.set(1, Some(Nanos(10)));
        q.set(2, Some(Nanos(20)));
        q.set(1, Some(Nanos(40))); // later
        q.set(3, Some(Nanos(5))); // earlier
        q.set(2, None); // gone
        q.set(7, None); // never there
        assert_eq!(q.peek(), Some((Nanos(5), 3)));
        assert_eq!(drain(&mut q), [(Nanos(5), 3), (Nanos(40), 1)]);
        assert_eq!(q.pop(), None);
    }

    #[test]
    fn it_agrees_with_a_map_of_the_last_finish_per_bundle_under_random_changes() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut q = FinishQueue::default();
        let mut model: BTreeMap<usize, Nanos> = BTreeMap::new();
        for _ in 0..20_000 {
            let b = rng.random_range(0..300usize);
            if rng.random_bool(0.2) {
                q.set(b, None);
                model.remove(&b);
            } else if rng.random_bool(0.1) {
                let first = model.iter().map(|(&b, &t)| (t, b)).min();
                assert_eq!(q.pop(), first);
                if let Some((_, b)) = first {
                    model.remove(&b);
                }
            } else {
                // Few distinct times: ties are common.
                let t = Nanos(rng.random_range(0..50));
                q.set(b, Some(t));
                model.insert(b, t);
            }
        }
        let mut want: Vec<(Nanos, usize)> = model.iter().map(|(&b, &t)| (t, b)).collect();
        want.sort();
        assert_eq!(drain(&mut q), want);
    }
}
