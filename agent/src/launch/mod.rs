//! Starting `ocslab-agent` processes, optionally inside a host's network
//! namespace. The agent binds its control socket before it enters the
//! namespace (`--control-bind 127.0.0.1:0 --netns PATH`), so its control
//! connection stays in the caller's namespace, beside the scheduler.
//!
//! Two ways, the same agent:
//! - [`AgentLaunch::spawn`] runs the binary. Nothing runs between fork and
//!   exec, so the standard library starts it with `posix_spawn` (a vfork,
//!   no copy of the caller's page tables).
//! - A [`ForkServer`] is one agent binary, started once, that forks each
//!   agent from itself: no exec, no dynamic loading, no glibc start-up per
//!   agent. This is how a lab starts its agents (see [`fork_server`] for
//!   what it saves).
//!
//! [`GroKeyHold`] spares every agent's start two rewrites of kernel text.

pub mod fork_server;
mod gro_key;

pub use fork_server::{serve_if_asked, ForkServer, ForkedAgent};
pub use gro_key::GroKeyHold;

use ocslab_emulator::HostId;
use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

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
    /// A network namespace file (`/run/netns/NAME`, `/proc/PID/ns/net`)
    /// the agent enters once its control socket is bound (127.0.0.1:0, in
    /// the caller's namespace).
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
    /// The arguments every agent of a run shares: the program's own
    /// (`binary_args`), the scheduler, the run directory, the slots, the
    /// control socket and `extra_args`.
    pub fn shared_args(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> = self.binary_args.iter().map(OsString::from).collect();
        args.extend(
            [
                "--scheduler".into(),
                self.scheduler.to_string().into(),
                "--run-dir".into(),
                self.run_dir.clone().into_os_string(),
                "--slots".into(),
                self.slots.to_string().into(),
                "--control-bind".into(),
                "127.0.0.1:0".into(),
            ]
            .into_iter()
            .chain(self.extra_args.iter().map(OsString::from)),
        );
        args
    }

    /// The arguments of this agent's own: its host, data address and
    /// namespace.
    pub fn host_args(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec![
            "--host".into(),
            self.host.to_string().into(),
            "--data-addr".into(),
            self.data_addr.to_string().into(),
        ];
        if let Some(ns) = &self.netns {
            args.extend(["--netns".into(), ns.clone().into_os_string()]);
        }
        args
    }

    /// Spawns the agent binary (stdin closed, stdout/stderr inherited).
    pub fn spawn(self) -> std::io::Result<Child> {
        // The child inherits the caller's signal mask; the agent clears it
        // first thing (`cli::main_with`).
        Command::new(&self.binary)
            .args(self.shared_args())
            .args(self.host_args())
            .stdin(Stdio::null())
            .spawn()
    }
}
