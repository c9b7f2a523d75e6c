//! The fabric's clock: CLOCK_MONOTONIC in nanoseconds, the same clock in
//! every process of the box, so circuit events, counters and an agent's
//! timestamps can be compared. (`std::time::Instant` reads the same clock
//! but cannot be printed or sent to another process.)
//!
//! Also here: [`Realtime`], which lifts a timing-critical thread to
//! SCHED_FIFO for a while.

use crate::units::Nanos;

/// Now, on CLOCK_MONOTONIC.
pub fn now() -> Nanos {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    Nanos(t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64)
}

/// CLOCK_REALTIME minus CLOCK_MONOTONIC, in nanoseconds, read so that
/// `realtime - offset` is never earlier on CLOCK_MONOTONIC than the instant
/// `realtime` was taken (the monotonic clock is read second). Converts the
/// kernel's receive timestamps (`SO_TIMESTAMPNS`, CLOCK_REALTIME) to the
/// fabric's clock; both clocks are slewed alike, so the offset holds until
/// the wall clock is stepped.
pub fn realtime_offset() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid, writable timespec; CLOCK_REALTIME always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut t) };
    let real = t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64;
    real.saturating_sub(now().0)
}

/// Sleeps until `t` on CLOCK_MONOTONIC (at once if it has passed).
pub fn sleep_until(t: Nanos) {
    let ts = libc::timespec {
        tv_sec: (t.0 / 1_000_000_000) as libc::time_t,
        tv_nsec: (t.0 % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: `ts` is a valid timespec; the remaining-time pointer may be
    // null with TIMER_ABSTIME. EINTR only wakes us early, so loop.
    while now() < t {
        unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            );
        }
    }
}

/// SCHED_FIFO priority of the thread applying an OCS reconfiguration.
pub const RECONFIG_PRIORITY: i32 = 10;
/// SCHED_FIFO priority of a measurement probe's paced sender.
pub const PROBE_PRIORITY: i32 = 5;

/// Runs the calling thread under SCHED_FIFO while alive (when permitted),
/// so the end of δ is not lost behind other runnable work on a busy box;
/// the previous policy is restored on drop.
pub struct Realtime {
    old: Option<(libc::c_int, libc::sched_param)>,
}

impl Realtime {
    /// Switches the calling thread to SCHED_FIFO at `priority` (1..=99), if allowed.
    pub fn enter(priority: i32) -> Realtime {
        // SAFETY: plain syscalls on the calling thread with valid pointers.
        unsafe {
            let policy = libc::sched_getscheduler(0);
            let mut old = libc::sched_param { sched_priority: 0 };
            if policy < 0 || libc::sched_getparam(0, &mut old) != 0 {
                return Realtime { old: None };
            }
            let rt = libc::sched_param {
                sched_priority: priority,
            };
            if libc::sched_setscheduler(0, libc::SCHED_FIFO, &rt) != 0 {
                return Realtime { old: None };
            }
            Realtime {
                old: Some((policy, old)),
            }
        }
    }
}

impl Drop for Realtime {
    fn drop(&mut self) {
        if let Some((policy, param)) = self.old {
            // SAFETY: restores the policy read in `enter` on the same thread.
            unsafe { libc::sched_setscheduler(0, policy, &param) };
        }
    }
}
