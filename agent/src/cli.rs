//! The agent's command line, as a library so that both `ocslab-agent` and
//! the `ocslab` binary (hidden subcommand `ocslab agent`) can run an agent:
//! a fresh `cargo run --bin ocslab` then needs no second binary.
//!
//! The emulation driver starts an agent in the driver's namespace; the
//! agent binds its control socket there and then enters its host's network
//! namespace (`--netns`). By hand, or with a control socket inherited:
//!
//! ```text
//! ocslab-agent --host r0h1 --data-addr 198.18.0.11 --control-bind 127.0.0.1:0 \
//!              --netns /run/netns/ocslab-1-r0h1 \
//!              --scheduler 127.0.0.1:4433 --run-dir /tmp/ocslab-run
//! ocslab-agent --host r0h1 --data-addr 127.0.0.2:0 --control-fd 3 \
//!              --scheduler 127.0.0.1:4433 --run-dir /tmp/ocslab-run
//! ```

use crate::agent::{self, AgentConfig};
use crate::control::AgentCredentials;
use crate::data::quic::Congestion;
use crate::data::Faults;
use crate::protocol::FlowId;
use anyhow::{bail, Context, Result};
use ocslab_emulator::HostId;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Mutex;

/// Default data-plane port when `--data-addr` gives only an address.
const DEFAULT_DATA_PORT: u16 = 7100;

/// The agent's command-line arguments (shared by `ocslab-agent` and the
/// hidden `ocslab agent` subcommand).
#[derive(clap::Args, Debug)]
pub struct AgentArgs {
    /// The host this agent is, e.g. r0h1.
    #[arg(long)]
    pub host: HostId,
    /// Data-plane address: IP or IP:PORT (default port 7100; 0 picks one).
    #[arg(long, value_parser = parse_data_addr)]
    pub data_addr: SocketAddr,
    /// An inherited, bound UDP socket for the control connection.
    #[arg(
        long,
        conflicts_with = "control_bind",
        required_unless_present = "control_bind"
    )]
    pub control_fd: Option<RawFd>,
    /// Bind the control socket here instead.
    #[arg(long)]
    pub control_bind: Option<SocketAddr>,
    /// Enter this network namespace (a file such as /run/netns/NAME) once
    /// the control socket is bound, before anything else: the control
    /// connection stays in the namespace the agent started in, the data
    /// plane is the host's.
    #[arg(long)]
    pub netns: Option<PathBuf>,
    /// The scheduler's control address.
    #[arg(long)]
    pub scheduler: SocketAddr,
    /// The run directory with the run's credentials.
    #[arg(long)]
    pub run_dir: PathBuf,
    /// Task slots.
    #[arg(long, default_value_t = 1)]
    pub slots: u32,
    /// Do not open the QUIC data endpoint (TCP only).
    #[arg(long)]
    pub no_quic: bool,
    /// QUIC's congestion control: cubic, reno or bbr (the emulation driver
    /// passes the topology's `[tcp] congestion_control`).
    #[arg(long, default_value = "cubic")]
    pub quic_congestion_control: Congestion,
    /// Test hook: flip a byte in the middle of this flow's payload, on
    /// every send (FLOW) or on its first N sends (FLOW:N).
    #[arg(long, hide = true, value_parser = parse_corrupt_flow)]
    pub fault_corrupt_flow: Vec<(u64, u32)>,
}

/// `FLOW` (every send) or `FLOW:N` (the first N sends).
fn parse_corrupt_flow(s: &str) -> Result<(u64, u32), String> {
    let (flow, sends) = s.split_once(':').unwrap_or((s, ""));
    let flow = flow.parse().map_err(|e| format!("flow id {flow:?}: {e}"))?;
    let sends = if sends.is_empty() {
        u32::MAX
    } else {
        sends.parse().map_err(|e| format!("send count {sends:?}: {e}"))?
    };
    Ok((flow, sends))
}

fn parse_data_addr(s: &str) -> Result<SocketAddr, String> {
    if let Ok(a) = s.parse::<SocketAddr>() {
        return Ok(a);
    }
    s.parse::<IpAddr>()
        .map(|ip| SocketAddr::new(ip, DEFAULT_DATA_PORT))
        .map_err(|_| {
            format!("{s:?} is not an address: expected IP or IP:PORT, e.g. 198.18.0.11 or 127.0.0.2:0")
        })
}

/// Takes ownership of an inherited fd after checking it is a UDP socket.
fn inherited_udp_socket(fd: RawFd) -> Result<std::net::UdpSocket> {
    // SAFETY: F_GETFD only reads the descriptor's flags; it fails cleanly if `fd` is not open.
    if fd < 0 || unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
        bail!("--control-fd {fd}: not an open file descriptor");
    }
    // SAFETY: `fd` is open and was handed to this process for it to own; nothing else uses it.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    let ty = nix::sys::socket::getsockopt(&owned, nix::sys::socket::sockopt::SockType)
        .with_context(|| format!("--control-fd {fd}: not a socket"))?;
    if ty != nix::sys::socket::SockType::Datagram {
        bail!("--control-fd {fd}: a {ty:?} socket, expected a bound UDP (datagram) socket");
    }
    Ok(std::net::UdpSocket::from(owned))
}

fn run(args: AgentArgs) -> Result<()> {
    let control_socket = match (args.control_fd, args.control_bind) {
        (Some(fd), _) => inherited_udp_socket(fd)?,
        (None, Some(addr)) => {
            std::net::UdpSocket::bind(addr).with_context(|| format!("--control-bind {addr}"))?
        }
        (None, None) => bail!("one of --control-fd or --control-bind is needed"),
    };
    // Still one thread: the runtime's threads start in the namespace entered.
    if let Some(ns) = &args.netns {
        let file = std::fs::File::open(ns).with_context(|| format!("--netns {}", ns.display()))?;
        nix::sched::setns(&file, nix::sched::CloneFlags::CLONE_NEWNET)
            .with_context(|| format!("--netns {}: entering it", ns.display()))?;
    }
    let credentials = AgentCredentials::load(&args.run_dir).context("reading the run's credentials")?;
    let config = AgentConfig {
        host: args.host,
        data_addr: args.data_addr,
        control_socket,
        scheduler: args.scheduler,
        credentials,
        slots: args.slots,
        quic_data: !args.no_quic,
        quic_congestion: args.quic_congestion_control,
        faults: Faults {
            corrupt_flows: Mutex::new(
                args.fault_corrupt_flow
                    .into_iter()
                    .map(|(f, n)| (FlowId(f), n))
                    .collect(),
            ),
        },
    };
    // Two workers: enough for line-rate flows, little memory per agent.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    rt.block_on(agent::run(config))?;
    Ok(())
}

/// Sends `tracing` logs to stderr at `verbose` (0 warn, 1 info, 2 debug, 3+
/// trace); `RUST_LOG` overrides. Shared by `ocslab-agent` and `ocslab`, so
/// `-v` means the same in both.
pub fn init_logging(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

/// Runs an agent with `args`, logging at `verbose` (see [`init_logging`]);
/// returns the process exit code.
pub fn main_with(args: AgentArgs, verbose: u8) -> ExitCode {
    ExitCode::from(exit_code(args, verbose))
}

/// [`main_with`], its exit code as a number (what a forked agent exits
/// with, `launch::serve_if_asked`).
pub fn exit_code(args: AgentArgs, verbose: u8) -> u8 {
    // A scheduler blocks its ending signals in every thread to take them
    // in one, and a child keeps that mask across exec (`posix_spawn`
    // included): an agent must end on a teardown's SIGTERM.
    if let Err(e) = ocslab_emulator::fabric::child::unblock_all_signals() {
        eprintln!("ocslab-agent {}: unblocking signals: {e}", args.host);
    }
    init_logging(verbose);
    let host = args.host;
    match run(args) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("ocslab-agent {host}: error: {e:#}");
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_corrupt_flow_fault_names_a_flow_and_optionally_its_sends() {
        assert_eq!(parse_corrupt_flow("7"), Ok((7, u32::MAX)));
        assert_eq!(parse_corrupt_flow("7:2"), Ok((7, 2)));
        assert!(parse_corrupt_flow("x:2").unwrap_err().contains("flow id"));
        assert!(parse_corrupt_flow("7:-1").unwrap_err().contains("send count"));
    }

    #[test]
    fn a_fault_for_n_sends_corrupts_the_first_n_only() {
        let f = Faults {
            corrupt_flows: Mutex::new([(FlowId(7), 2)].into()),
        };
        let sends: Vec<bool> = (0..4).map(|_| f.corrupts(FlowId(7))).collect();
        assert_eq!(sends, [true, true, false, false]);
        assert!(!f.corrupts(FlowId(8)));
        let always = Faults::corrupt_always([FlowId(7)]);
        assert!((0..10).all(|_| always.corrupts(FlowId(7))));
    }
}
