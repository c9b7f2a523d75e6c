//! What a detached holder of a fabric (`ocslab up --detach`) needs from
//! the process plumbing: to leave the terminal's session, so a Ctrl-C there
//! does not reach it, and to let go of the terminal's output, so it does not
//! die of SIGPIPE once the command that started it has exited.

use std::os::unix::process::CommandExt;
use std::process::Command;

/// Makes `cmd`'s process start a session of its own (`setsid(2)` between
/// fork and exec).
pub fn in_new_session(cmd: &mut Command) -> &mut Command {
    // SAFETY: setsid(2) is async-signal-safe and touches nothing of the
    // parent's.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        })
    }
}

/// Points this process's standard input, output and error at `/dev/null`.
pub fn quiet_stdio() {
    if let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    {
        use std::os::fd::AsRawFd;
        for fd in [0, 1, 2] {
            // SAFETY: dup2 onto the standard descriptors of this process,
            // from a descriptor open for the duration of the call.
            unsafe { libc::dup2(null.as_raw_fd(), fd) };
        }
    }
}
