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
