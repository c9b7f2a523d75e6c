//! What a command that builds fabrics as root does when a signal ends it:
//! SIGINT, SIGTERM and SIGHUP are blocked in every thread and taken by one
//! thread, which removes every run this process owns (its namespaces, the
//! processes in them, its run directory) and exits with 128 + the signal's
//! number, as a shell expects of a process a signal ended. A build or
//! teardown under way finishes first, and none starts after
//! ([`ledger::remove_own_runs`]); the main thread, if it gets to the end
//! of its command meanwhile, waits for the exit ([`wait_if_ending`]). A
//! second signal exits at once. The processes such a command starts in its
//! hosts (agents, commands) clear the mask before exec, so the teardown's
//! SIGTERM ends them, and start only while no teardown runs
//! ([`ledger::work`]), so none outlives its run.

use anyhow::{Context, Result};
use nix::sys::signal::{SigSet, Signal};
use ocslab_emulator::fabric::ledger;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once a signal began the teardown: the process ends from the signal
/// thread.
static ENDING: AtomicBool = AtomicBool::new(false);

/// Blocks SIGINT, SIGTERM and SIGHUP in the calling thread, and so in
/// every thread it starts from now on; returns them, to wait for. Call it
/// before any other thread starts.
pub fn block_ending_signals() -> Result<SigSet> {
    let mut signals = SigSet::empty();
    for s in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        signals.add(s);
    }
    signals.thread_block().context("blocking signals")?;
    Ok(signals)
}

/// Blocks the signals that end a command ([`block_ending_signals`]) and
/// starts the thread that tears down on one. Call it before any other
/// thread starts.
pub fn tear_down_on_signal() -> Result<()> {
    let signals = block_ending_signals()?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            let Ok(sig) = signals.wait() else {
                return;
            };
            ENDING.store(true, Ordering::SeqCst);
            eprintln!("{sig}: tearing down what this command built (again to stop at once)");
            // A second signal ends the process without waiting for the
            // teardown (which waits for a build under way to end).
            let _ = std::thread::Builder::new()
                .name("signals-2".into())
                .spawn(move || {
                    if let Ok(sig) = signals.wait() {
                        eprintln!(
                            "{sig}: stopping before the teardown is done; `ocslab down` removes what is left"
                        );
                        std::process::exit(128 + sig as i32);
                    }
                });
            match ledger::remove_own_runs() {
                Ok(runs) => {
                    for t in runs {
                        let run = t.run_id.map(|r| r.to_string()).unwrap_or_default();
                        eprintln!(
                            "run {run}: removed {} namespaces, ended {} processes",
                            t.namespaces, t.processes
                        );
                    }
                }
                Err(e) => eprintln!("teardown failed: {e}; `ocslab down` removes what is left"),
            }
            std::process::exit(128 + sig as i32);
        })
        .context("starting the signal thread")?;
    Ok(())
}

/// [`tear_down_on_signal`] when this process is root: a rootless command
/// builds its fabrics inside a user namespace that ends with the process,
/// and must enter it while the process still has one thread.
pub fn tear_down_on_signal_as_root() -> Result<()> {
    if nix::unistd::geteuid().is_root() {
        tear_down_on_signal()?;
    }
    Ok(())
}

/// Once a signal began the teardown, never returns: the signal thread
/// ends the process when the teardown is done. A command that ends on its
/// own meanwhile (its fabric vanished under it) calls this before it
/// exits, so that its exit does not cut the teardown short.
pub fn wait_if_ending() {
    while ENDING.load(Ordering::SeqCst) {
        std::thread::park();
    }
}
