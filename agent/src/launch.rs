//! Starting the `ocslab-agent` binary as a child process: with its control
//! socket inherited as fd 3 (made by the caller, e.g. in the scheduler's
//! namespace) and, optionally, inside a host's network namespace (`setns`
//! between fork and exec). This is what the emulation driver calls.

use ocslab_emulator::HostId;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The fd number the control socket gets in the child.
pub const CONTROL_FD: i32 = 3;

/// How to start one agent.
#[derive(Debug)]
pub struct AgentLaunch {
    /// The program to run: `ocslab-agent`, or `ocslab` with `binary_args`
    /// `["agent"]` ([`agent_program`] finds the one built with the caller).
    pub binary: PathBuf,
    /// Arguments before the agent's own (the subcommand, for `ocslab agent`).
    pub binary_args: Vec<String>,
    /// Its host.
    pub host: HostId,
    /// Its data address (inside its namespace).
    pub data_addr: SocketAddr,
    /// The scheduler's control address.
    pub scheduler: SocketAddr,
    /// The run directory holding the credentials.
    pub run_dir: PathBuf,
    /// Task slots.
    pub slots: u32,
    /// The control socket to hand over; `None`: the agent binds 127.0.0.1:0 itself.
    pub control_socket: Option<std::net::UdpSocket>,
    /// A network namespace file (`/run/netns/NAME`, `/proc/PID/ns/net`) to enter.
    pub netns: Option<PathBuf>,
    /// More arguments (e.g. `-v`).
    pub extra_args: Vec<String>,
}

/// The `ocslab-agent` next to the running executable (or one directory up,
/// for test binaries in `target/<profile>/deps`).
pub fn agent_binary() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    [dir, dir.parent()?]
        .iter()
        .map(|d| d.join("ocslab-agent"))
        .find(|p| p.is_file())
}

/// How to start an agent from the running program: the `ocslab-agent`
/// beside it, or else, when the running program is the `ocslab` binary
/// itself, `ocslab agent` (so `cargo run --bin ocslab` alone suffices).
/// Returns the program and the arguments that go before the agent's own.
pub fn agent_program() -> Option<(PathBuf, Vec<String>)> {
    if let Some(b) = agent_binary() {
        return Some((b, Vec::new()));
    }
    let exe = std::env::current_exe().ok()?;
    (exe.file_name()? == "ocslab").then(|| (exe, vec!["agent".to_string()]))
}

impl AgentLaunch {
    /// Spawns the agent (stdin closed, stdout/stderr inherited).
    pub fn spawn(self) -> std::io::Result<Child> {
        let mut cmd = Command::new(&self.binary);
        cmd.args(&self.binary_args)
            .arg("--host")
            .arg(self.host.to_string())
            .arg("--data-addr")
            .arg(self.data_addr.to_string())
            .arg("--scheduler")
            .arg(self.scheduler.to_string())
            .arg("--run-dir")
            .arg(&self.run_dir)
            .arg("--slots")
            .arg(self.slots.to_string())
            .args(&self.extra_args)
            .stdin(Stdio::null());
        let ns = match &self.netns {
            Some(p) => Some(open(p)?),
            None => None,
        };
        let control_fd = self.control_socket.as_ref().map(|s| s.as_raw_fd());
        match control_fd {
            Some(_) => cmd.arg("--control-fd").arg(CONTROL_FD.to_string()),
            None => cmd.arg("--control-bind").arg("127.0.0.1:0"),
        };
        let ns_fd = ns.as_ref().map(|f| f.as_raw_fd());
        // SAFETY: between fork and exec only async-signal-safe system calls
        // are made (pthread_sigmask, setns, dup2, fcntl), on descriptors
        // kept open by `self` and `ns` for the duration of spawn.
        unsafe {
            cmd.pre_exec(move || {
                ocslab_emulator::fabric::child::unblock_all_signals()?;
                if let Some(fd) = ns_fd {
                    if libc::setns(fd, libc::CLONE_NEWNET) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                if let Some(fd) = control_fd {
                    if fd == CONTROL_FD {
                        // Already in place: only clear close-on-exec.
                        if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                            return Err(std::io::Error::last_os_error());
                        }
                    } else if libc::dup2(fd, CONTROL_FD) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
        let child = cmd.spawn();
        drop(ns);
        drop(self.control_socket);
        child
    }
}

fn open(p: &Path) -> std::io::Result<std::fs::File> {
    std::fs::File::open(p).map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", p.display())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::sys::signal::{SigSet, Signal};

    /// A scheduler blocks SIGTERM in every thread to take it in one; the
    /// agents it starts must still end on a teardown's SIGTERM.
    #[test]
    fn an_agent_starts_with_no_signal_blocked() {
        let out = std::env::temp_dir().join(format!("ocslab-launch-mask-{}", std::process::id()));
        let mut term = SigSet::empty();
        term.add(Signal::SIGTERM);
        term.thread_block().expect("block SIGTERM here");
        let launch = AgentLaunch {
            // bash, not dash: dash clears the mask it inherits.
            binary: PathBuf::from("/bin/bash"),
            binary_args: vec![
                "-c".into(),
                format!("grep '^SigBlk:' /proc/self/status > {}", out.display()),
            ],
            host: HostId::new(0, 0),
            data_addr: "127.0.0.1:0".parse().expect("literal"),
            scheduler: "127.0.0.1:9".parse().expect("literal"),
            run_dir: std::env::temp_dir(),
            slots: 1,
            control_socket: None,
            netns: None,
            extra_args: Vec::new(),
        };
        let status = launch.spawn().and_then(|mut c| c.wait());
        term.thread_unblock().expect("unblock SIGTERM here");
        assert!(status.expect("the child ran").success());
        let line = std::fs::read_to_string(&out).expect("the child wrote its mask");
        let _ = std::fs::remove_file(&out);
        let mask = u64::from_str_radix(line.trim_start_matches("SigBlk:").trim(), 16).expect("a hex mask");
        assert_eq!(mask, 0, "signals blocked in the child: {line}");
    }
}
