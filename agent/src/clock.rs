//! The one clock the agents and the scheduler share: the box's monotonic
//! clock (`CLOCK_MONOTONIC`), which network namespaces do not change, so
//! timestamps taken by different processes on the machine compare directly.
//! Only the agent runtime and the control plane read it; reports carry the
//! readings as [`Nanos`].

use ocslab_emulator::Nanos;

/// Now, on the shared monotonic clock.
pub fn now() -> Nanos {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    debug_assert_eq!(rc, 0);
    Nanos(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

#[cfg(test)]
mod tests {
    #[test]
    fn advances_with_real_time() {
        let a = super::now();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let d = super::now() - a;
        assert!(d.as_duration() >= std::time::Duration::from_millis(20), "{d}");
        assert!(d.as_duration() < std::time::Duration::from_secs(5), "{d}");
    }
}
