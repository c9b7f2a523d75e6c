//! The fabric's clock: CLOCK_MONOTONIC in nanoseconds, the same clock in
//! every process of the box, so circuit events, counters and an agent's
//! timestamps can be compared. (`std::time::Instant` reads the same clock
//! but cannot be printed or sent to another process.)

use crate::units::Nanos;

/// Now, on CLOCK_MONOTONIC.
pub fn now() -> Nanos {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `t` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    Nanos(t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64)
}
