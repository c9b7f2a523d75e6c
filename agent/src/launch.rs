//! Starting the `ocslab-agent` binary as a child process, optionally inside
//! a host's network namespace. The agent binds its control socket before
//! it enters the namespace (`--control-bind 127.0.0.1:0 --netns PATH`), so
//! its control connection stays in the caller's namespace, beside the
//! scheduler. Nothing runs between fork and exec, so the standard library
//! starts it with `posix_spawn` (a vfork, no copy of the caller's page
//! tables): 1,024 agents start in a fraction of the time a fork each took.
//! This is what the emulation driver calls.

use ocslab_emulator::HostId;
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
            .arg("--control-bind")
            .arg("127.0.0.1:0");
        if let Some(ns) = &self.netns {
            cmd.arg("--netns").arg(ns);
        }
        // The child inherits the caller's signal mask; the agent clears it
        // first thing (`cli::main_with`).
        cmd.args(&self.extra_args).stdin(Stdio::null()).spawn()
    }
}

/// Keeps the kernel's IPv6 UDP encapsulation switch on while agents start.
///
/// Each agent's QUIC stack (quinn-udp) learns whether the kernel
/// coalesces UDP datagrams (GRO) by opening an IPv6 socket, setting
/// `UDP_GRO` on it and closing it. Setting `UDP_GRO` turns on a global
/// static key in the kernel (`udpv6_encap_needed_key`) and closing the
/// last socket that set it turns the key off; each switch rewrites kernel
/// text and waits for every core to see it. While no other IPv6 socket
/// holds the key, every agent's start flips it twice. This socket holds
/// it: an unbound IPv6 UDP socket with `UDP_GRO` set, reachable from
/// nowhere, so the agents' probes only count up and down. On 1,024
/// agents the flips took 5 % of the CPU time of starting them
/// (`perf record -a --call-graph dwarf` under `ocslab bench fabric
/// --agents`).
#[derive(Debug)]
pub struct GroKeyHold {
    socket: std::os::fd::OwnedFd,
}

impl GroKeyHold {
    /// Opens the holding socket; `None` where the kernel has no IPv6 or
    /// no UDP GRO (the agents then start as they would anyway).
    pub fn new() -> Option<GroKeyHold> {
        use nix::sys::socket::{setsockopt, socket, sockopt, AddressFamily, SockFlag, SockType};
        let fd = socket(
            AddressFamily::Inet6,
            SockType::Datagram,
            SockFlag::SOCK_CLOEXEC,
            None,
        )
        .ok()?;
        setsockopt(&fd, sockopt::UdpGroSegment, &true).ok()?;
        Some(GroKeyHold { socket: fd })
    }

    /// Whether the socket has `UDP_GRO` set, so the key stays on.
    pub fn holds(&self) -> bool {
        nix::sys::socket::getsockopt(&self.socket, nix::sys::socket::sockopt::UdpGroSegment).unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::GroKeyHold;
    use nix::sys::socket::SockaddrLike;

    /// The hold is an IPv6 socket with `UDP_GRO` on, as quinn-udp's
    /// probe sets it; without IPv6 in the kernel there is nothing to hold.
    #[test]
    fn the_gro_key_hold_sets_udp_gro_on_an_ipv6_socket() {
        if !std::path::Path::new("/proc/net/if_inet6").exists() {
            eprintln!("skipped: this kernel has no IPv6");
            return;
        }
        let hold = GroKeyHold::new().expect("an IPv6 UDP socket with UDP_GRO");
        assert!(hold.holds());
        let family = nix::sys::socket::getsockname::<nix::sys::socket::SockaddrStorage>(
            std::os::fd::AsRawFd::as_raw_fd(&hold.socket),
        )
        .expect("getsockname")
        .family();
        assert_eq!(family, Some(nix::sys::socket::AddressFamily::Inet6));
    }
}
