//! The data plane: flows of partition bytes between agents.
//!
//! A flow is driven by its sender ([`DataPlane::run_sender`]): it waits
//! while held (not even connecting, so a flow bound for a dark circuit puts
//! no packet on the EPS network), connects to the receiver's data address
//! over TCP (default) or QUIC from a socket marked with the flow's TOS byte
//! (`0x08` for OCS, DSCP 32 + w for the circuit on wavelength w, see
//! [`crate::protocol::FlowSpec::tos`]), sends a
//! [`crate::protocol::DataHeader`] and then the partition's content paced
//! by a token bucket ([`pacer`]), and waits for the receiver's
//! acknowledgement. The receiver ([`stream::receive`]) CRCs what arrives,
//! compares it with the checksum the partition's key implies
//! ([`crate::content`]), stores a receipt for reduce tasks and reports the
//! flow's bytes and timestamps.
//!
//! Hot paths do not allocate: one write buffer per flow, one read buffer per
//! stream, content copied from a precomputed block.

pub mod pacer;
pub mod queue_port;
pub mod quic;
pub mod slow_start;
pub mod stream;
pub mod table;
pub mod tcp;

use crate::clock;
use crate::content::{ContentSource, Corrupted, PartitionContent};
use crate::control::AgentCredentials;
use crate::protocol::{
    AgentMsg, DataHeader, FlowDone, FlowId, FlowRole, FlowSent, FlowSpec, FlowState, Transport,
    PROTOCOL_VERSION,
};
use ocslab_emulator::{Bps, HostId};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
pub use table::{FlowCounters, FlowTable, Receipts};
use tokio::sync::{mpsc, watch};

/// How a sending flow is steered while it exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowControl {
    /// May send (a held flow waits, and does not connect until first released).
    pub released: bool,
    /// Pacing rate; `None` is unpaced.
    pub rate: Option<Bps>,
}

/// Faults injected into this agent's flows, for tests of verification.
/// They wrap the content source; the sending logic does not know of them.
#[derive(Debug, Default)]
pub struct Faults {
    /// Flows whose payload gets one byte flipped (in the middle), with how
    /// many of their sends to corrupt (`u32::MAX`: every one).
    pub corrupt_flows: Mutex<BTreeMap<FlowId, u32>>,
}

impl Faults {
    /// Faults that corrupt every send of `flows`.
    pub fn corrupt_always(flows: impl IntoIterator<Item = FlowId>) -> Faults {
        Faults {
            corrupt_flows: Mutex::new(flows.into_iter().map(|f| (f, u32::MAX)).collect()),
        }
    }

    /// Whether this send of `flow` is to be corrupted (counting it).
    pub(crate) fn corrupts(&self, flow: FlowId) -> bool {
        let mut left = self.corrupt_flows.lock().unwrap_or_else(|e| e.into_inner());
        match left.get_mut(&flow) {
            Some(n) if *n > 0 => {
                *n = n.saturating_sub(u32::from(*n != u32::MAX));
                true
            }
            _ => false,
        }
    }
}

/// Why a flow failed at one end.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// A socket failed.
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    /// A frame failed.
    #[error("frame: {0}")]
    Frame(#[from] crate::frame::FrameError),
    /// QUIC failed to connect.
    #[error("quic connect: {0}")]
    QuicConnect(#[from] quinn::ConnectError),
    /// A QUIC connection failed.
    #[error("quic: {0}")]
    Quic(#[from] quinn::ConnectionError),
    /// TLS or endpoint setup failed.
    #[error("credentials: {0}")]
    Credentials(#[from] crate::control::CredentialError),
    /// The stream ended before its header.
    #[error("stream ended before its header")]
    NoHeader,
    /// The receiver closed without acknowledging.
    #[error("receiver closed without acknowledging the flow")]
    NoAck,
    /// The peer speaks another protocol version.
    #[error("data header of protocol version {0}, this agent speaks {PROTOCOL_VERSION}")]
    Version(u32),
    /// The flow was withdrawn while held (the agent is stopping).
    #[error("flow withdrawn before it was released")]
    Withdrawn,
    /// An OCS-marked flow to an IPv6 address (the fabric is IPv4).
    #[error("OCS marking needs an IPv4 destination, got {0}")]
    NotIpv4(SocketAddr),
    /// QUIC was asked for but this agent has no QUIC data endpoint.
    #[error("QUIC data plane not enabled on this agent")]
    NoQuic,
}

/// One agent's data plane: its listeners, its flows in progress, and the
/// receipts of flows it received.
pub struct DataPlane {
    host: HostId,
    tcp_addr: SocketAddr,
    quic: Option<quic::QuicData>,
    /// Flows in progress, for heartbeats.
    pub flows: FlowTable,
    /// Flows received, for reduce tasks.
    pub receipts: Arc<Receipts>,
    faults: Faults,
    outbox: mpsc::UnboundedSender<AgentMsg>,
}

impl DataPlane {
    /// Binds the TCP listener on `addr` (port 0 picks one) and, with
    /// credentials, a QUIC endpoint on the same address and port running
    /// the congestion control given with them; starts accepting. Reports
    /// go to `outbox`.
    pub async fn start(
        host: HostId,
        addr: SocketAddr,
        quic: Option<(&AgentCredentials, quic::Congestion)>,
        faults: Faults,
        outbox: mpsc::UnboundedSender<AgentMsg>,
    ) -> Result<Arc<DataPlane>, DataError> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let tcp_addr = listener.local_addr()?;
        let quic = match quic {
            Some((creds, congestion)) => Some(quic::QuicData::bind(tcp_addr, creds, congestion)?),
            None => None,
        };
        let plane = Arc::new(DataPlane {
            host,
            tcp_addr,
            quic,
            flows: FlowTable::default(),
            receipts: Arc::default(),
            faults,
            outbox,
        });
        tokio::spawn(tcp::accept_loop(listener, plane.clone()));
        if plane.quic.is_some() {
            tokio::spawn(quic::accept_loop(plane.clone()));
        }
        Ok(plane)
    }

    /// The data address (TCP; QUIC uses the same IP and port).
    pub fn local_addr(&self) -> SocketAddr {
        self.tcp_addr
    }

    /// Lists a new sending flow in the flow table (so heartbeats show it
    /// from now on); pass the registration to [`DataPlane::run_sender`].
    pub fn register_sender(&self, spec: &FlowSpec) -> table::Registration {
        let initial = if spec.held {
            FlowState::Held
        } else {
            FlowState::Connecting
        };
        self.flows.register(spec.flow, FlowRole::Sender, initial)
    }

    /// Sends one flow to its end, reporting `FlowStarted`, then `FlowSent`
    /// or `FlowFailed`. Steered by `control` (hold, release, rate).
    pub async fn run_sender(
        self: Arc<Self>,
        spec: FlowSpec,
        mut control: watch::Receiver<FlowControl>,
        reg: table::Registration,
    ) {
        let msg = match self.send(&spec, &mut control, reg.counters()).await {
            Ok(sent) => AgentMsg::FlowSent(sent),
            Err(e) => AgentMsg::FlowFailed {
                flow: spec.flow,
                role: FlowRole::Sender,
                at: clock::now(),
                reason: e.to_string(),
            },
        };
        drop(reg);
        let _ = self.outbox.send(msg);
    }

    async fn send(
        &self,
        spec: &FlowSpec,
        control: &mut watch::Receiver<FlowControl>,
        counters: &FlowCounters,
    ) -> Result<FlowSent, DataError> {
        stream::wait_released(control).await?;
        counters.set_state(FlowState::Connecting);
        let content = PartitionContent::new(&spec.partition, spec.bytes);
        let mut source: Box<dyn ContentSource> = if self.faults.corrupts(spec.flow) {
            Box::new(Corrupted::new(content, spec.bytes.0 / 2))
        } else {
            Box::new(content)
        };
        let header = DataHeader {
            version: PROTOCOL_VERSION,
            flow: spec.flow,
            from: self.host,
            partition: spec.partition,
            bytes: spec.bytes,
            sent_at: clock::now(),
        };
        let outbox = self.outbox.clone();
        let started = move |at| {
            let _ = outbox.send(AgentMsg::FlowStarted { flow: spec.flow, at });
        };
        let sending = stream::Sending {
            source: source.as_mut(),
            control,
            counters,
            started,
        };
        let (start, end, ack) = match spec.transport {
            Transport::Tcp => {
                let mut s = tcp::connect(self.tcp_addr.ip(), spec.dst_addr, spec.tos(), spec.queue).await?;
                let (mut r, mut w) = s.split();
                stream::send(&mut r, &mut w, header, sending).await?
            }
            Transport::Quic => {
                let quic = self.quic.as_ref().ok_or(DataError::NoQuic)?;
                let (mut w, mut r) = quic.open(spec.dst_addr, spec.tos(), spec.queue).await?;
                stream::send(&mut r, &mut w, header, sending).await?
            }
        };
        Ok(FlowSent {
            flow: spec.flow,
            bytes_sent: spec.bytes,
            start,
            end,
            path: spec.path,
            transport: spec.transport,
            receiver_ok: ack.ok,
        })
    }

    /// Receives one stream (either transport) and reports it.
    async fn serve_stream<R, W>(self: Arc<Self>, mut r: R, mut w: W)
    where
        R: tokio::io::AsyncRead + Unpin,
        W: tokio::io::AsyncWrite + Unpin,
    {
        match stream::receive(&mut r, &mut w, &self.flows).await {
            Ok(done) => self.report_received(done),
            Err((Some(flow), e)) => {
                let _ = self.outbox.send(AgentMsg::FlowFailed {
                    flow,
                    role: FlowRole::Receiver,
                    at: clock::now(),
                    reason: e.to_string(),
                });
            }
            Err((None, e)) => tracing::warn!("data stream dropped before its header: {e}"),
        }
    }

    fn report_received(&self, done: FlowDone) {
        self.receipts.insert(done.clone());
        let _ = self.outbox.send(AgentMsg::FlowDone(done));
    }
}
