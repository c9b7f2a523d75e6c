//! What a process started in one of a run's hosts is given between fork
//! and exec, beside entering the host's namespace.

use nix::sys::signal::{pthread_sigmask, SigSet, SigmaskHow};

/// Unblocks every signal in the calling thread. For a child between fork
/// and exec (async-signal-safe): a command that takes its ending signals
/// in one thread blocks them in all ([`super::ledger::remove_own_runs`] is
/// its teardown), and a child would keep that mask across exec and ignore
/// the teardown's SIGTERM.
pub fn unblock_all_signals() -> std::io::Result<()> {
    pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::empty()), None)?;
    Ok(())
}
