//! [`prefetch`]: a hint to the CPU to start loading a record's cache line
//! now, for a loop that will read records scattered over memory (a
//! finishing flow's slot and spec) a little later, so that their loads
//! overlap instead of each waiting for memory in turn.

/// How many records ahead a loop over scattered records asks for the
/// second of two dependent loads (a flow's bundle), and, twice as far
/// ahead, for the first (its slot): far enough that the loads overlap,
/// near enough that the lines are still cached when read.
pub(super) const READ_AHEAD: usize = 8;

/// Asks the CPU to bring the first cache line of `r` into its caches. A
/// hint only: it changes nothing the program computes, and off x86-64 it
/// does nothing.
#[inline(always)]
pub(super) fn prefetch<T>(r: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing the program sees, writes nothing
    // and never faults; `r` is a live reference in any case.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>((r as *const T).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = r;
}

/// Each of `items` with the one [`READ_AHEAD`] places after it (`None`
/// for the last few): for a loop over indices into scattered records
/// that asks ([`prefetch`]) for the record it will read a few turns on.
pub(super) fn with_ahead<T: Copy>(items: &[T]) -> impl Iterator<Item = (T, Option<T>)> + '_ {
    let ahead = items.iter().skip(READ_AHEAD).copied().map(Some);
    items.iter().copied().zip(ahead.chain(std::iter::repeat(None)))
}

/// Items a [`Window`] holds: the one being read and the
/// `2 × READ_AHEAD` after it.
const WINDOW: usize = 2 * READ_AHEAD + 1;

/// An iterator's items at a loop's position `i` and the `2 × READ_AHEAD`
/// positions after it, each taken once, for a loop that asks for records
/// ahead ([`prefetch`]) by a key that costs a lookup to find (a flow's
/// slot): a ring, where collecting every key first would take a buffer
/// the size of the loop.
pub(super) struct Window<I: Iterator> {
    ring: [Option<I::Item>; WINDOW],
    iter: I,
    /// The position of the next item to take.
    next: usize,
}

impl<I: Iterator<Item: Copy>> Window<I> {
    /// The window at position 0.
    pub(super) fn new(mut iter: I) -> Window<I> {
        Window {
            ring: std::array::from_fn(|_| iter.next()),
            iter,
            next: WINDOW,
        }
    }

    /// The item at position `i` (`None` past the end), which must be in
    /// the window: from the loop's position (the number of
    /// [`Window::slide`]s so far) to `2 × READ_AHEAD` after it.
    pub(super) fn at(&self, i: usize) -> Option<I::Item> {
        debug_assert!(i < self.next && i + WINDOW >= self.next, "{i} outside the window");
        self.ring[i % WINDOW]
    }

    /// Moves the window one position on.
    pub(super) fn slide(&mut self) {
        self.ring[self.next % WINDOW] = self.iter.next();
        self.next += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_item_comes_with_the_one_read_ahead_of_it() {
        let items: Vec<u32> = (0..20).collect();
        let pairs: Vec<(u32, Option<u32>)> = with_ahead(&items).collect();
        assert_eq!(pairs.len(), items.len());
        for (i, &(x, ahead)) in pairs.iter().enumerate() {
            assert_eq!(x, items[i]);
            assert_eq!(ahead, items.get(i + READ_AHEAD).copied());
        }
        assert_eq!(with_ahead::<u32>(&[]).count(), 0);
    }

    #[test]
    fn a_window_gives_each_item_in_reach_and_takes_each_once() {
        let mut taken = Vec::new();
        let mut w = Window::new((0..40usize).inspect(|&i| taken.push(i)).map(|i| i * 10));
        let item = |i: usize| (i < 40).then_some(i * 10);
        for i in 0..40 {
            assert_eq!(w.at(i), item(i));
            assert_eq!(w.at(i + READ_AHEAD), item(i + READ_AHEAD));
            assert_eq!(w.at(i + 2 * READ_AHEAD), item(i + 2 * READ_AHEAD));
            w.slide();
        }
        assert_eq!(taken, (0..40).collect::<Vec<_>>());
    }
}
