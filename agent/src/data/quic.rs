//! QUIC flows (quinn), the optional transport: one bidirectional stream per
//! flow on a connection per (destination, mark, flow queue), authenticated
//! with the run's agent certificate in both directions.
//!
//! Flow queues: a client endpoint per (mark, flow queue) sends from a UDP
//! port the shaped links hash to that queue ([`bind_in_queue`]), so QUIC
//! flows take the queues the scheduler gives them as TCP flows do. Flows
//! the scheduler put in one queue share an endpoint and a connection.
//!
//! Congestion control ([`Congestion`]): the topology's `[tcp]
//! congestion_control`, which the emulation driver passes to every agent.
//! CUBIC is quinn's, leaving slow start when the delay rises as Linux's
//! TCP does ([`super::slow_start`]); NewReno and BBR are quinn's own.
//!
//! Marking: quinn's own UDP layer sets the TOS byte of every datagram from
//! a control message carrying only the ECN bits, which would erase the OCS
//! mark. OCS-bound connections therefore use [`TosUdpSocket`], a plain
//! `sendto` socket (no GSO, no ECN) whose socket-level `IP_TOS` applies.

use super::queue_port::bind_in_queue;
use super::slow_start::HyStartCubicConfig;
use super::{DataError, DataPlane};
use crate::control::credentials::AGENT_NAME;
use crate::control::AgentCredentials;
use crate::protocol::FlowQueue;
use quinn::congestion::{BbrConfig, NewRenoConfig};
use quinn::udp::{RecvMeta, Transmit};
use quinn::{AsyncUdpSocket, Connection, Endpoint, RecvStream, SendStream, UdpPoller};
use std::collections::BTreeMap;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

/// ALPN of agent-to-agent data connections.
pub const ALPN_DATA: &[u8] = b"ocslab-data/1";

/// A QUIC connection's congestion control, named as the kernel names the
/// TCP ones a topology's `[tcp] congestion_control` picks from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Congestion {
    /// CUBIC, leaving slow start at a delay rise ([`HyStartCubicConfig`]).
    #[default]
    Cubic,
    /// NewReno (quinn's).
    Reno,
    /// BBR (quinn's).
    Bbr,
}

impl std::str::FromStr for Congestion {
    type Err = String;
    fn from_str(s: &str) -> Result<Congestion, String> {
        match s {
            "cubic" => Ok(Congestion::Cubic),
            "reno" => Ok(Congestion::Reno),
            "bbr" => Ok(Congestion::Bbr),
            _ => Err(format!(
                "{s:?} is not a congestion control: expected cubic, reno or bbr"
            )),
        }
    }
}

fn transport_config(congestion: Congestion) -> Arc<quinn::TransportConfig> {
    let mut t = quinn::TransportConfig::default();
    // Windows for a few Gbit/s at loopback-to-LAN RTTs.
    t.stream_receive_window(quinn::VarInt::from_u32(16 << 20));
    t.receive_window(quinn::VarInt::from_u32(32 << 20));
    t.send_window(32 << 20);
    match congestion {
        // Out of slow start at a delay rise, as the kernel's TCP leaves it.
        Congestion::Cubic => t.congestion_controller_factory(Arc::new(HyStartCubicConfig::default())),
        Congestion::Reno => t.congestion_controller_factory(Arc::new(NewRenoConfig::default())),
        Congestion::Bbr => t.congestion_controller_factory(Arc::new(BbrConfig::default())),
    };
    Arc::new(t)
}

/// A client endpoint's TOS byte and flow queue.
type ClientKey = (u8, Option<FlowQueue>);

/// An agent's QUIC data endpoints.
pub struct QuicData {
    server: Endpoint,
    client_config: quinn::ClientConfig,
    local_ip: IpAddr,
    /// Client endpoints by the TOS byte their datagrams carry and the flow
    /// queue their port hashes to.
    clients: tokio::sync::Mutex<BTreeMap<ClientKey, Endpoint>>,
    conns: tokio::sync::Mutex<BTreeMap<(SocketAddr, ClientKey), Connection>>,
}

impl QuicData {
    /// Binds the receiving endpoint on `addr` (UDP); connections both ways
    /// run `congestion`.
    pub fn bind(
        addr: SocketAddr,
        creds: &AgentCredentials,
        congestion: Congestion,
    ) -> Result<QuicData, DataError> {
        let tls = quinn::crypto::rustls::QuicServerConfig::try_from(creds.server_config(ALPN_DATA)?)
            .map_err(|e| io::Error::other(e.to_string()))?;
        let mut server_config = quinn::ServerConfig::with_crypto(Arc::new(tls));
        server_config.transport_config(transport_config(congestion));
        let server = Endpoint::server(server_config, addr)?;
        let tls = quinn::crypto::rustls::QuicClientConfig::try_from(creds.client_config(ALPN_DATA)?)
            .map_err(|e| io::Error::other(e.to_string()))?;
        let mut client_config = quinn::ClientConfig::new(Arc::new(tls));
        client_config.transport_config(transport_config(congestion));
        Ok(QuicData {
            server,
            client_config,
            local_ip: addr.ip(),
            clients: Default::default(),
            conns: Default::default(),
        })
    }

    /// The client endpoint whose datagrams carry `tos` from a port in
    /// `queue` (or one the kernel picks), made at first use.
    async fn client(&self, key: ClientKey) -> Result<Endpoint, DataError> {
        let (tos, queue) = key;
        let mut clients = self.clients.lock().await;
        if let Some(e) = clients.get(&key) {
            return Ok(e.clone());
        }
        let mut sock = None;
        if let Some(q) = queue {
            bind_in_queue(self.local_ip, q, |a| {
                sock = Some(std::net::UdpSocket::bind(a)?);
                Ok(())
            })?;
        }
        let sock = match sock {
            Some(s) => s,
            None => std::net::UdpSocket::bind(SocketAddr::new(self.local_ip, 0))?,
        };
        let runtime = quinn::default_runtime().ok_or_else(|| io::Error::other("no async runtime"))?;
        let mut ep = match tos {
            0 => Endpoint::new(Default::default(), None, sock, runtime)?,
            _ => {
                nix::sys::socket::setsockopt(&sock, nix::sys::socket::sockopt::Ipv4Tos, &i32::from(tos))
                    .map_err(io::Error::from)?;
                sock.set_nonblocking(true)?;
                let io = tokio::net::UdpSocket::from_std(sock)?;
                Endpoint::new_with_abstract_socket(
                    Default::default(),
                    None,
                    Arc::new(TosUdpSocket { io }),
                    runtime,
                )?
            }
        };
        ep.set_default_client_config(self.client_config.clone());
        clients.insert(key, ep.clone());
        Ok(ep)
    }

    /// Opens a stream to `dst` whose datagrams carry the TOS byte `tos`
    /// from a port in flow queue `queue`, reusing a live connection.
    pub async fn open(
        &self,
        dst: SocketAddr,
        tos: u8,
        queue: Option<FlowQueue>,
    ) -> Result<(SendStream, RecvStream), DataError> {
        let client = (tos, queue);
        let key = (dst, client);
        let mut conns = self.conns.lock().await;
        if let Some(c) = conns.get(&key) {
            if c.close_reason().is_none() {
                if let Ok(s) = c.open_bi().await {
                    return Ok(s);
                }
            }
            conns.remove(&key);
        }
        let conn = self.client(client).await?.connect(dst, AGENT_NAME)?.await?;
        let s = conn.open_bi().await?;
        conns.insert(key, conn);
        Ok(s)
    }
}

/// Accepts QUIC data connections and their streams, one task per stream.
pub async fn accept_loop(plane: Arc<DataPlane>) {
    let Some(quic) = plane.quic.as_ref() else {
        return;
    };
    while let Some(incoming) = quic.server.accept().await {
        let plane = plane.clone();
        tokio::spawn(async move {
            let conn = match incoming.await {
                Ok(c) => c,
                Err(e) => {
                    tracing::warn!("QUIC data connection refused: {e}");
                    return;
                }
            };
            while let Ok((w, r)) = conn.accept_bi().await {
                tokio::spawn(plane.clone().serve_stream(r, w));
            }
        });
    }
}

/// A UDP socket for quinn that sends with plain `sendto`, so the socket's
/// `IP_TOS` marks every datagram (quinn's default socket overrides it).
#[derive(Debug)]
pub struct TosUdpSocket {
    io: tokio::net::UdpSocket,
}

type Writable = Pin<Box<dyn Future<Output = io::Result<()>> + Send>>;

/// Waits for the socket to be writable; any number may wait at once.
struct TosPoller {
    socket: Arc<TosUdpSocket>,
    // A Mutex only to make the boxed future Sync; it is only reached through `&mut self`.
    pending: std::sync::Mutex<Option<Writable>>,
}

impl std::fmt::Debug for TosPoller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TosPoller").finish_non_exhaustive()
    }
}

impl UdpPoller for TosPoller {
    fn poll_writable(self: Pin<&mut Self>, cx: &mut Context) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let socket = this.socket.clone();
        let slot = this.pending.get_mut().unwrap_or_else(|p| p.into_inner());
        let fut = slot.get_or_insert_with(|| Box::pin(async move { socket.io.writable().await }));
        let res = ready!(fut.as_mut().poll(cx));
        *slot = None;
        Poll::Ready(res)
    }
}

impl AsyncUdpSocket for TosUdpSocket {
    fn create_io_poller(self: Arc<Self>) -> Pin<Box<dyn UdpPoller>> {
        Box::pin(TosPoller {
            socket: self,
            pending: std::sync::Mutex::new(None),
        })
    }

    fn try_send(&self, t: &Transmit) -> io::Result<()> {
        let seg = t.segment_size.unwrap_or(t.contents.len()).max(1);
        for datagram in t.contents.chunks(seg) {
            self.io.try_send_to(datagram, t.destination)?;
        }
        Ok(())
    }

    fn poll_recv(
        &self,
        cx: &mut Context,
        bufs: &mut [io::IoSliceMut<'_>],
        meta: &mut [RecvMeta],
    ) -> Poll<io::Result<usize>> {
        let (Some(buf), Some(m)) = (bufs.first_mut(), meta.first_mut()) else {
            return Poll::Ready(Ok(0));
        };
        loop {
            ready!(self.io.poll_recv_ready(cx))?;
            match self.io.try_recv_from(buf) {
                Ok((len, addr)) => {
                    *m = RecvMeta {
                        addr,
                        len,
                        stride: len,
                        ecn: None,
                        dst_ip: None,
                    };
                    return Poll::Ready(Ok(1));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.local_addr()
    }

    fn may_fragment(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::RunAuthority;
    use ocslab_emulator::fabric::htb::FlowQueues;

    /// The local port of the client endpoint `open` used for `(tos, queue)`.
    async fn client_port(quic: &QuicData, tos: u8, queue: Option<FlowQueue>) -> u16 {
        let clients = quic.clients.lock().await;
        clients[&(tos, queue)].local_addr().unwrap().port()
    }

    #[tokio::test]
    async fn quic_flows_send_from_ports_the_links_hash_to_their_queues() {
        let auth = RunAuthority::generate().unwrap();
        let creds = auth.agent_credentials();
        let local = SocketAddr::from(([127, 0, 0, 1], 0));
        let receiver = QuicData::bind(local, creds, Congestion::Cubic).unwrap();
        let dst = receiver.server.local_addr().unwrap();
        let server = receiver.server.clone();
        tokio::spawn(async move {
            while let Some(incoming) = server.accept().await {
                tokio::spawn(async move {
                    if let Ok(conn) = incoming.await {
                        conn.closed().await;
                    }
                });
            }
        });
        let sender = QuicData::bind(local, creds, Congestion::Cubic).unwrap();
        let queues = FlowQueues::new(8).unwrap();
        let (a, b) = (FlowQueue { index: 5, count: 8 }, FlowQueue { index: 2, count: 8 });
        for (tos, q) in [(0, a), (0, b), (0x08, a)] {
            sender.open(dst, tos, Some(q)).await.unwrap();
            let port = client_port(&sender, tos, Some(q)).await;
            assert_eq!(queues.queue_of_port(port), q.index, "tos {tos:#x}, port {port}");
        }
        // A second flow in a queue shares its endpoint and connection.
        let before = client_port(&sender, 0, Some(a)).await;
        sender.open(dst, 0, Some(a)).await.unwrap();
        assert_eq!(client_port(&sender, 0, Some(a)).await, before);
        assert_eq!(sender.clients.lock().await.len(), 3);
        assert_eq!(sender.conns.lock().await.len(), 3);
        // No queue: the kernel's port, on an endpoint of its own.
        sender.open(dst, 0, None).await.unwrap();
        assert_ne!(client_port(&sender, 0, None).await, 0);
        assert_eq!(sender.clients.lock().await.len(), 4);
    }

    /// A connection runs the congestion control its endpoints were bound
    /// with, on both sides.
    #[tokio::test]
    async fn connections_run_the_congestion_control_asked_for() {
        use super::super::slow_start::HyStartCubic;
        use quinn::congestion::{Bbr, Controller, NewReno};
        use std::any::Any;
        fn kind(c: Box<dyn Controller>) -> &'static str {
            let any: Box<dyn Any> = c.into_any();
            if any.is::<HyStartCubic>() {
                "cubic"
            } else if any.is::<NewReno>() {
                "reno"
            } else if any.is::<Bbr>() {
                "bbr"
            } else {
                "another"
            }
        }
        let auth = RunAuthority::generate().unwrap();
        let creds = auth.agent_credentials();
        let local = SocketAddr::from(([127, 0, 0, 1], 0));
        for name in ["cubic", "reno", "bbr"] {
            let congestion: Congestion = name.parse().unwrap();
            let receiver = QuicData::bind(local, creds, congestion).unwrap();
            let dst = receiver.server.local_addr().unwrap();
            let sender = QuicData::bind(local, creds, congestion).unwrap();
            let accepted =
                tokio::spawn(async move { receiver.server.accept().await.unwrap().await.unwrap() });
            sender.open(dst, 0, None).await.unwrap();
            let conn = sender.conns.lock().await.values().next().unwrap().clone();
            assert_eq!(kind(conn.congestion_state()), name, "sender");
            assert_eq!(kind(accepted.await.unwrap().congestion_state()), name, "receiver");
        }
        let refused = "dctcp".parse::<Congestion>().unwrap_err();
        assert!(refused.contains("cubic, reno or bbr"), "{refused}");
    }
}
