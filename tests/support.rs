//! Helpers shared by the integration tests: whether this box lets a test
//! build fabrics (and why not), the agent binary, the shipped topology files, TCP
//! transfers between emulated hosts that report bytes and goodput, and a
//! bounded wait for what the kernel finishes in a worker of its own.

use ocslab_emulator::fabric::{probe, Fabric};
use ocslab_emulator::{HostId, Topology};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Why this process cannot build a kernel fabric, or `None` if it can.
/// Tests run on many threads, so rootless mode (which must unshare a user
/// namespace while single-threaded) is not available to them: they need root.
pub fn cannot_build_fabric() -> Option<String> {
    if !nix::unistd::geteuid().is_root() {
        return Some("not root (fabric tests need root; CI runs as root)".into());
    }
    if !Path::new("/proc/self/ns/net").exists() {
        return Some("this kernel has no network namespaces".into());
    }
    None
}

/// Prints why `test` is skipped and returns true when it must be.
pub fn skip(test: &str) -> bool {
    match cannot_build_fabric() {
        Some(why) => {
            eprintln!("skipping {test}: {why}");
            true
        }
        None => false,
    }
}

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// The `ocslab-agent` binary, built if this test run did not build it
/// (`cargo test` builds only the binaries of the package under test).
pub fn agent_binary() -> PathBuf {
    if let Some(p) = ocslab_agent::launch::agent_binary() {
        return p;
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = std::process::Command::new(cargo)
        .args([
            "build",
            "--release",
            "-p",
            "ocslab-agent",
            "--bin",
            "ocslab-agent",
        ])
        .current_dir(workspace_root())
        .status()
        .expect("run cargo build");
    assert!(status.success(), "building ocslab-agent failed");
    ocslab_agent::launch::agent_binary().expect("ocslab-agent after building it")
}

/// Path of a shipped topology file, e.g. `topology_path("tiny")`.
pub fn topology_path(name: &str) -> PathBuf {
    workspace_root().join("topologies").join(format!("{name}.toml"))
}

/// Loads a shipped topology file.
pub fn topology(name: &str) -> Topology {
    let path = topology_path(name);
    Topology::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// Parses a topology from text (no check against the box's addresses).
pub fn topology_from(text: &str) -> Topology {
    Topology::parse(text, Path::new("<test>"), &[]).unwrap_or_else(|e| panic!("{e}"))
}

/// Sends `bytes` bytes from `from` to `to` over TCP, with IP_TOS `tos` on
/// the sending socket; returns the bytes the receiver read.
pub fn send_bytes(
    fabric: &Fabric,
    from: HostId,
    to: HostId,
    tos: Option<u8>,
    bytes: u64,
) -> anyhow::Result<u64> {
    Ok(probe::tcp_send(fabric, from, to, tos, bytes)?)
}

/// Goodput (bit/s) of one TCP stream, measured for `measure` after `warmup`.
pub fn goodput(
    fabric: &Fabric,
    from: HostId,
    to: HostId,
    tos: Option<u8>,
    warmup: Duration,
    measure: Duration,
) -> anyhow::Result<f64> {
    Ok(probe::tcp_goodput(fabric, from, to, tos, warmup, measure)?)
}

pub use probe::TCP_PAYLOAD_EFFICIENCY;

/// Waits (bounded) until `cond` holds; false if it never did. For what the
/// kernel completes asynchronously (a namespace's destruction, a process's
/// exit), never as a synchronisation between the test's own threads.
pub fn eventually(within: Duration, cond: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    cond()
}

/// Rounds and seed of the kill loops (`tests/reliability.rs`,
/// `tests/emulation.rs`): `OCSLAB_KILL_ROUNDS` (default 3) and
/// `OCSLAB_KILL_SEED` (default 1).
pub fn kill_rounds() -> (u64, u64) {
    let env = |k: &str, d: u64| std::env::var(k).ok().and_then(|v| v.parse().ok()).unwrap_or(d);
    (env("OCSLAB_KILL_ROUNDS", 3), env("OCSLAB_KILL_SEED", 1))
}
