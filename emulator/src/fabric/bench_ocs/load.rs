//! [`CpuLoad`]: the busy cores the OCS benches measure under.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// One busy thread pinned to each core, at normal priority, until dropped.
pub struct CpuLoad {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl CpuLoad {
    /// Starts one spinning thread on each core this process may run on,
    /// pinned there (none if `on` is false). Unpinned, the scheduler may
    /// put two on one core and leave the other to the work measured, which
    /// makes TCP goodput beside them bimodal (17 or 50 Gbit/s a run).
    pub fn start(on: bool) -> CpuLoad {
        let stop = Arc::new(AtomicBool::new(false));
        let cores = if on { allowed_cores() } else { Vec::new() };
        let threads = cores
            .into_iter()
            .map(|core| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    pin_to(core);
                    let mut x = 1u64;
                    while !stop.load(Ordering::Relaxed) {
                        for _ in 0..10_000 {
                            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                        }
                    }
                })
            })
            .collect();
        CpuLoad { stop, threads }
    }
}

/// The cores this process may run on (core 0 alone if that cannot be read).
fn allowed_cores() -> Vec<usize> {
    use nix::sched::{sched_getaffinity, CpuSet};
    use nix::unistd::Pid;
    match sched_getaffinity(Pid::from_raw(0)) {
        Ok(set) => (0..CpuSet::count())
            .filter(|&c| set.is_set(c).unwrap_or(false))
            .collect(),
        Err(_) => vec![0],
    }
}

/// Pins the calling thread to `core`; a failure leaves it unpinned (the
/// load is then as the scheduler spreads it).
fn pin_to(core: usize) {
    use nix::sched::{sched_setaffinity, CpuSet};
    use nix::unistd::Pid;
    let mut set = CpuSet::new();
    if set.set(core).is_ok() {
        let _ = sched_setaffinity(Pid::from_raw(0), &set);
    }
}

impl Drop for CpuLoad {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}
