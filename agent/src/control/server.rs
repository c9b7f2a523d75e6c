//! The scheduler's side of the control plane.
//!
//! ```no_run
//! # async fn demo() -> Result<(), ocslab_agent::control::ControlError> {
//! use ocslab_agent::control::{ControlServer, Event, ServerConfig};
//! use ocslab_agent::protocol::Command;
//! let run_dir = std::path::Path::new("/tmp/ocslab-run");
//! let (mut server, _creds) =
//!     ControlServer::start(run_dir, "127.0.0.1:0".parse().unwrap(), ServerConfig::default())?;
//! // ... start agents with --scheduler <server.local_addr()> --run-dir /tmp/ocslab-run ...
//! while let Some(ev) = server.next_event().await {
//!     if let Event::Joined { host, .. } = ev {
//!         let rtt = server.host(host).unwrap().ping().await?;
//!         println!("{host} joined, round trip {rtt:?}");
//!         server.send(host, Command::Shutdown)?;
//!     }
//! }
//! # Ok(()) }
//! ```

use super::{
    ControlError, DeathCause, Event, RunAuthority, ServerConfig, ALPN_CONTROL, CLOSE_DEAD, CLOSE_OK,
    CLOSE_REFUSED, HANDSHAKE_TIMEOUT,
};
use crate::clock;
use crate::control::AgentCredentials;
use crate::frame::{read_frame, read_frame_bytes, write_frame};
use crate::protocol::{AgentMsg, Command, Hello, HelloReply, VersionProbe, PROTOCOL_VERSION};
use ocslab_emulator::{HostId, Nanos};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

type Pings = Arc<Mutex<BTreeMap<u64, oneshot::Sender<()>>>>;

/// A connected agent: send it commands, measure round trips.
#[derive(Clone, Debug)]
pub struct HostHandle {
    host: HostId,
    hello: Arc<Hello>,
    commands: mpsc::UnboundedSender<Command>,
    pings: Pings,
    nonce: Arc<AtomicU64>,
}

impl HostHandle {
    /// The host.
    pub fn host(&self) -> HostId {
        self.host
    }

    /// What the agent said when it joined (data address, slots, pid).
    pub fn hello(&self) -> &Hello {
        &self.hello
    }

    /// Queues a command; commands to one host arrive in order.
    pub fn send(&self, cmd: Command) -> Result<(), ControlError> {
        self.commands
            .send(cmd)
            .map_err(|_| ControlError::NotConnected(self.host))
    }

    /// One control-plane round trip (a `Ping` answered by a `Pong`).
    pub async fn ping(&self) -> Result<Duration, ControlError> {
        let nonce = self.nonce.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        lock(&self.pings).insert(nonce, tx);
        let t0 = std::time::Instant::now();
        self.send(Command::Ping { nonce })?;
        rx.await.map_err(|_| ControlError::NotConnected(self.host))?;
        Ok(t0.elapsed())
    }
}

struct Shared {
    config: ServerConfig,
    hosts: Mutex<BTreeMap<HostId, HostHandle>>,
    events: mpsc::UnboundedSender<Event>,
}

impl Shared {
    fn emit(&self, ev: Event) {
        let _ = self.events.send(ev);
    }
}

/// The scheduler's control endpoint.
pub struct ControlServer {
    endpoint: quinn::Endpoint,
    shared: Arc<Shared>,
    events: mpsc::UnboundedReceiver<Event>,
    local_addr: SocketAddr,
}

impl ControlServer {
    /// Mints the run's credentials, writes the agents' part to `run_dir`,
    /// and listens on `bind` (UDP). Call inside a tokio runtime.
    pub fn start(
        run_dir: &Path,
        bind: SocketAddr,
        config: ServerConfig,
    ) -> Result<(ControlServer, AgentCredentials), ControlError> {
        let socket = std::net::UdpSocket::bind(bind)?;
        ControlServer::start_on(run_dir, socket, config)
    }

    /// The same on a socket made by the caller.
    pub fn start_on(
        run_dir: &Path,
        socket: std::net::UdpSocket,
        config: ServerConfig,
    ) -> Result<(ControlServer, AgentCredentials), ControlError> {
        if config.heartbeat_interval.is_zero() || config.dead_after <= config.heartbeat_interval {
            return Err(ControlError::Config(format!(
                "dead_after ({:?}) must be longer than a non-zero heartbeat_interval ({:?})",
                config.dead_after, config.heartbeat_interval
            )));
        }
        widen_receive_buffer(&socket);
        let authority = RunAuthority::generate()?;
        authority.agent_credentials().write(run_dir)?;
        let tls = quinn::crypto::rustls::QuicServerConfig::try_from(authority.server_config(ALPN_CONTROL)?)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        let mut server_config = quinn::ServerConfig::with_crypto(Arc::new(tls));
        let mut transport = quinn::TransportConfig::default();
        // The heartbeat deadline, not QUIC's idle timer, decides that a host is dead.
        let idle = (config.dead_after * 4).max(Duration::from_secs(10));
        transport.max_idle_timeout(quinn::IdleTimeout::try_from(idle).ok());
        server_config.transport_config(Arc::new(transport));
        let runtime = quinn::default_runtime().ok_or(ControlError::NoRuntime)?;
        let endpoint = quinn::Endpoint::new(Default::default(), Some(server_config), socket, runtime)?;
        let local_addr = endpoint.local_addr()?;
        let (tx, events) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            config,
            hosts: Mutex::new(BTreeMap::new()),
            events: tx,
        });
        tokio::spawn(accept_loop(endpoint.clone(), shared.clone()));
        let creds = authority.agent_credentials().clone();
        Ok((
            ControlServer {
                endpoint,
                shared,
                events,
                local_addr,
            },
            creds,
        ))
    }

    /// The address agents connect to (`--scheduler`).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The timing agents are told to use.
    pub fn config(&self) -> ServerConfig {
        self.shared.config
    }

    /// The next event, in arrival order (`None` only after the server is dropped).
    pub async fn next_event(&mut self) -> Option<Event> {
        self.events.recv().await
    }

    /// The next event if one is waiting.
    pub fn try_next_event(&mut self) -> Option<Event> {
        self.events.try_recv().ok()
    }

    /// The handle of a connected host.
    pub fn host(&self, host: HostId) -> Option<HostHandle> {
        lock(&self.shared.hosts).get(&host).cloned()
    }

    /// The connected hosts, in order.
    pub fn hosts(&self) -> Vec<HostId> {
        lock(&self.shared.hosts).keys().copied().collect()
    }

    /// Sends a command to a connected host.
    pub fn send(&self, host: HostId, cmd: Command) -> Result<(), ControlError> {
        self.host(host).ok_or(ControlError::NotConnected(host))?.send(cmd)
    }

    /// Tells every agent to shut down, waits up to `grace` for them to
    /// leave, then closes the endpoint.
    pub async fn shutdown(mut self, grace: Duration) {
        let hosts = self.hosts();
        for h in &hosts {
            let _ = self.send(*h, Command::Shutdown);
        }
        let deadline = tokio::time::Instant::now() + grace;
        while !lock(&self.shared.hosts).is_empty() {
            match tokio::time::timeout_at(deadline, self.events.recv()).await {
                Ok(Some(_)) => {}
                _ => break,
            }
        }
        self.endpoint.close(CLOSE_OK.into(), b"scheduler shutdown");
        let _ = tokio::time::timeout(Duration::from_millis(200), self.endpoint.wait_idle()).await;
    }
}

/// The control socket's receive buffer, bytes. With the kernel's default
/// (212,992 bytes here) the handshakes of 64 agents started at once
/// overflowed it (1,921 datagrams dropped, RcvbufErrors, in one lab of
/// 1,024 hosts), and each loss cost a joining agent QUIC's 1 s initial
/// retransmission timeout.
pub const RECEIVE_BUFFER: usize = 8 << 20;

/// Asks for [`RECEIVE_BUFFER`]: past `net.core.rmem_max` when the process
/// may (CAP_NET_ADMIN, SO_RCVBUFFORCE), else up to it. Best effort: a
/// smaller buffer only slows a large lab's join.
fn widen_receive_buffer(socket: &std::net::UdpSocket) {
    use nix::sys::socket::{setsockopt, sockopt};
    if setsockopt(socket, sockopt::RcvBufForce, &RECEIVE_BUFFER).is_err() {
        if let Err(e) = setsockopt(socket, sockopt::RcvBuf, &RECEIVE_BUFFER) {
            tracing::debug!("widening the control socket's receive buffer: {e}");
        }
    }
}

async fn accept_loop(endpoint: quinn::Endpoint, shared: Arc<Shared>) {
    while let Some(incoming) = endpoint.accept().await {
        tokio::spawn(serve(incoming, shared.clone()));
    }
}

async fn refuse(shared: &Shared, conn: &quinn::Connection, send: &mut quinn::SendStream, reason: String) {
    let mut scratch = Vec::new();
    let reply = HelloReply::Refused {
        reason: reason.clone(),
    };
    if write_frame(send, &reply, &mut scratch).await.is_ok() {
        let _ = send.finish();
        // Give the agent the chance to read the reason and close first.
        let _ = tokio::time::timeout(Duration::from_secs(1), conn.closed()).await;
    }
    conn.close(CLOSE_REFUSED.into(), reason.as_bytes());
    shared.emit(Event::Refused {
        at: clock::now(),
        peer: conn.remote_address(),
        reason,
    });
}

/// Checks a hello: version first (so any future hello is refused clearly).
fn check_hello(bytes: &[u8]) -> Result<Hello, String> {
    let probe: VersionProbe =
        serde_json::from_slice(bytes).map_err(|e| format!("malformed hello (no version): {e}"))?;
    if probe.version != PROTOCOL_VERSION {
        return Err(format!(
            "agent speaks protocol version {}, this scheduler speaks version {PROTOCOL_VERSION}",
            probe.version
        ));
    }
    serde_json::from_slice(bytes).map_err(|e| format!("malformed hello: {e}"))
}

async fn serve(incoming: quinn::Incoming, shared: Arc<Shared>) {
    let peer = incoming.remote_address();
    let conn = match tokio::time::timeout(HANDSHAKE_TIMEOUT, incoming).await {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => {
            shared.emit(Event::Refused {
                at: clock::now(),
                peer,
                reason: format!("TLS handshake failed: {e}"),
            });
            return;
        }
        Err(_) => {
            shared.emit(Event::Refused {
                at: clock::now(),
                peer,
                reason: "handshake timed out".into(),
            });
            return;
        }
    };
    let (mut send, mut recv) = match tokio::time::timeout(HANDSHAKE_TIMEOUT, conn.accept_bi()).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            // A client certificate of another run is rejected after the
            // client's side of the handshake, so it surfaces here.
            shared.emit(Event::Refused {
                at: clock::now(),
                peer,
                reason: format!("connection failed before hello: {e}"),
            });
            return;
        }
        Err(_) => {
            conn.close(CLOSE_REFUSED.into(), b"no hello");
            shared.emit(Event::Refused {
                at: clock::now(),
                peer,
                reason: "no hello within the handshake timeout".into(),
            });
            return;
        }
    };
    let mut scratch = Vec::new();
    let hello = match tokio::time::timeout(HANDSHAKE_TIMEOUT, read_frame_bytes(&mut recv, &mut scratch)).await
    {
        Ok(Ok(true)) => check_hello(&scratch),
        Ok(Ok(false)) => Err("stream closed before hello".to_string()),
        Ok(Err(e)) => Err(format!("reading hello: {e}")),
        Err(_) => Err("no hello within the handshake timeout".to_string()),
    };
    let hello = match hello {
        Ok(h) => h,
        Err(reason) => return refuse(&shared, &conn, &mut send, reason).await,
    };
    let host = hello.host;
    let (tx, mut rx) = mpsc::unbounded_channel::<Command>();
    let handle = HostHandle {
        host,
        hello: Arc::new(hello.clone()),
        commands: tx,
        pings: Arc::default(),
        nonce: Arc::default(),
    };
    let duplicate = {
        let mut hosts = lock(&shared.hosts);
        let duplicate = hosts.contains_key(&host);
        if !duplicate {
            hosts.insert(host, handle.clone());
        }
        duplicate
    };
    if duplicate {
        let reason = format!("host {host} is already connected");
        return refuse(&shared, &conn, &mut send, reason).await;
    }
    let welcome = HelloReply::Welcome {
        version: PROTOCOL_VERSION,
        heartbeat_interval: Nanos::from(shared.config.heartbeat_interval),
    };
    if let Err(e) = write_frame(&mut send, &welcome, &mut scratch).await {
        lock(&shared.hosts).remove(&host);
        shared.emit(Event::Refused {
            at: clock::now(),
            peer,
            reason: format!("writing welcome: {e}"),
        });
        return;
    }
    let joined = clock::now();
    shared.emit(Event::Joined {
        at: joined,
        host,
        hello,
    });
    let writer = tokio::spawn(async move {
        let mut scratch = Vec::new();
        while let Some(cmd) = rx.recv().await {
            if write_frame(&mut send, &cmd, &mut scratch).await.is_err() {
                break;
            }
        }
    });
    let end = read_loop(&shared, &handle, &mut recv, joined).await;
    lock(&shared.hosts).remove(&host);
    writer.abort();
    let at = clock::now();
    match end {
        None => {
            conn.close(CLOSE_OK.into(), b"bye");
            shared.emit(Event::Left { at, host });
        }
        Some(cause) => {
            conn.close(CLOSE_DEAD.into(), b"declared dead");
            shared.emit(Event::HostDead { at, host, cause });
        }
    }
}

/// Reads agent messages until the agent leaves (`None`) or dies.
async fn read_loop(
    shared: &Shared,
    handle: &HostHandle,
    recv: &mut quinn::RecvStream,
    joined: Nanos,
) -> Option<DeathCause> {
    let dead_after = shared.config.dead_after;
    let mut last_beat = joined;
    let mut deadline = tokio::time::Instant::now() + dead_after;
    let mut scratch = Vec::new();
    loop {
        tokio::select! {
            frame = read_frame::<_, AgentMsg>(recv, &mut scratch) => match frame {
                Ok(Some(AgentMsg::Pong { nonce })) => {
                    if let Some(tx) = lock(&handle.pings).remove(&nonce) {
                        let _ = tx.send(());
                    }
                }
                Ok(Some(msg)) => {
                    let at = clock::now();
                    if matches!(msg, AgentMsg::Heartbeat(_)) {
                        last_beat = at;
                        deadline = tokio::time::Instant::now() + dead_after;
                    }
                    shared.emit(Event::Agent { at, host: handle.host, msg });
                }
                Ok(None) => return None,
                Err(crate::frame::FrameError::Io(e)) => {
                    return match e.downcast::<quinn::ReadError>() {
                        Ok(quinn::ReadError::ConnectionLost(quinn::ConnectionError::ApplicationClosed(c)))
                            if c.error_code == CLOSE_OK.into() => None,
                        Ok(e) => Some(DeathCause::ConnectionLost(e.to_string())),
                        Err(e) => Some(DeathCause::ConnectionLost(e.to_string())),
                    };
                }
                Err(e) => return Some(DeathCause::ConnectionLost(e.to_string())),
            },
            _ = tokio::time::sleep_until(deadline) => {
                return Some(DeathCause::HeartbeatTimeout { silent_for: clock::now() - last_beat });
            }
        }
    }
}
