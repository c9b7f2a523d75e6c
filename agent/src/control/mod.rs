//! The control plane: the scheduler and its agents over QUIC (quinn).
//!
//! - [`credentials`]: the per-run certificate authority; mutual TLS, the
//!   agents pin the run CA and present the run's agent certificate;
//! - [`server`]: the scheduler's side, [`ControlServer`]: accepts agents,
//!   checks the protocol version, hands out a [`HostHandle`] per host to send
//!   [`crate::protocol::Command`]s and measure round trips, yields typed
//!   [`Event`]s, and marks a host dead when no heartbeat came for
//!   [`ServerConfig::dead_after`];
//! - [`client`]: the agent's side of the handshake, from a pre-made UDP
//!   socket (the emulation driver creates it in the scheduler's namespace and
//!   the agent inherits it, so no extra veth is needed for control).

pub mod client;
pub mod credentials;
pub mod server;

use crate::frame::FrameError;
use crate::protocol::{AgentMsg, Hello};
use ocslab_emulator::{HostId, Nanos};
use std::net::SocketAddr;
use std::time::Duration;

pub use credentials::{AgentCredentials, CredentialError, RunAuthority};
pub use server::{ControlServer, HostHandle};

/// ALPN of control connections.
pub const ALPN_CONTROL: &[u8] = b"ocslab-control/1";

/// How long the handshake (TLS, hello, reply) may take.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// Application close code of an orderly close (shutdown).
pub const CLOSE_OK: u32 = 0;
/// Application close code of a refusal (version, duplicate host, bad hello).
pub const CLOSE_REFUSED: u32 = 1;
/// Application close code of a host declared dead.
pub const CLOSE_DEAD: u32 = 2;

/// Timing of the control plane.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerConfig {
    /// How often agents send a heartbeat.
    pub heartbeat_interval: Duration,
    /// A host with no heartbeat for this long is dead.
    pub dead_after: Duration,
}

impl Default for ServerConfig {
    fn default() -> ServerConfig {
        ServerConfig {
            heartbeat_interval: Duration::from_millis(200),
            dead_after: Duration::from_secs(1),
        }
    }
}

/// Why the scheduler stopped hearing from a host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeathCause {
    /// No heartbeat within [`ServerConfig::dead_after`].
    HeartbeatTimeout {
        /// Time since the last heartbeat (or the hello).
        silent_for: Nanos,
    },
    /// The connection failed (not an orderly shutdown).
    ConnectionLost(String),
}

/// What the scheduler hears from the agents. `at` is when the scheduler
/// received it, on the shared monotonic clock ([`crate::clock`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// An agent was accepted.
    Joined {
        /// Receipt time.
        at: Nanos,
        /// Its host.
        host: HostId,
        /// Its hello (data address, slots, pid).
        hello: Hello,
    },
    /// A message from an agent (heartbeat, task and flow reports).
    Agent {
        /// Receipt time.
        at: Nanos,
        /// From which host.
        host: HostId,
        /// The message.
        msg: AgentMsg,
    },
    /// A host is dead; its handle no longer sends.
    HostDead {
        /// When it was declared dead.
        at: Nanos,
        /// The host.
        host: HostId,
        /// Why.
        cause: DeathCause,
    },
    /// An agent closed its connection in order (after `Shutdown`).
    Left {
        /// When.
        at: Nanos,
        /// The host.
        host: HostId,
    },
    /// A connection was refused (credentials, version, duplicate host).
    Refused {
        /// When.
        at: Nanos,
        /// Its address.
        peer: SocketAddr,
        /// Why.
        reason: String,
    },
}

impl Event {
    /// The host the event is about, if one is known.
    pub fn host(&self) -> Option<HostId> {
        match self {
            Event::Joined { host, .. }
            | Event::Agent { host, .. }
            | Event::HostDead { host, .. }
            | Event::Left { host, .. } => Some(*host),
            Event::Refused { .. } => None,
        }
    }
}

/// Why a control-plane operation failed.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    /// Credentials could not be made or read.
    #[error(transparent)]
    Credentials(#[from] CredentialError),
    /// A socket failed.
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    /// QUIC could not start connecting.
    #[error("connect: {0}")]
    Connect(#[from] quinn::ConnectError),
    /// The QUIC connection failed (a TLS refusal shows here).
    #[error("connection: {0}")]
    Connection(#[from] quinn::ConnectionError),
    /// A frame failed.
    #[error("control stream: {0}")]
    Frame(#[from] FrameError),
    /// The scheduler refused this agent.
    #[error("refused by the scheduler: {0}")]
    Refused(String),
    /// A step took longer than allowed.
    #[error("timed out {0}")]
    Timeout(&'static str),
    /// The host's connection is gone.
    #[error("host {0} is not connected")]
    NotConnected(HostId),
    /// Invalid timing configuration.
    #[error("invalid control config: {0}")]
    Config(String),
    /// Not called inside a tokio runtime.
    #[error("the control plane needs a tokio runtime")]
    NoRuntime,
}
