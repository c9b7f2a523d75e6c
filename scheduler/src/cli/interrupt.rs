//! What a command that builds fabrics does when a signal ends it: SIGINT,
//! SIGTERM and SIGHUP are blocked in every thread and taken by one thread,
//! which removes every run this process owns (its namespaces, the
//! processes in them, its run directory) and exits with 128 + the signal's
//! number, as a shell expects of a process a signal ended.

use anyhow::{Context, Result};
use nix::sys::signal::{SigSet, Signal};
use ocslab_emulator::fabric::ledger;

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
            eprintln!("{sig}: tearing down what this command built");
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
