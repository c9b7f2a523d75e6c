//! The agent's side of the control handshake.

use super::{AgentCredentials, ControlError, ALPN_CONTROL, HANDSHAKE_TIMEOUT};
use crate::control::credentials::SCHEDULER_NAME;
use crate::frame::{read_frame, write_frame};
use crate::protocol::{Hello, HelloReply, PROTOCOL_VERSION};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// An accepted control connection.
pub struct ControlLink {
    /// The agent's QUIC endpoint (keep it alive while the link is used).
    pub endpoint: quinn::Endpoint,
    /// The connection to the scheduler.
    pub connection: quinn::Connection,
    /// Agent → scheduler.
    pub send: quinn::SendStream,
    /// Scheduler → agent.
    pub recv: quinn::RecvStream,
    /// How often to send heartbeats, as the scheduler said.
    pub heartbeat_interval: Duration,
}

/// Connects to the scheduler at `scheduler` from `socket` (made by the
/// caller, e.g. inherited from the emulation driver), trusting only the
/// run CA and presenting the run's agent certificate, and says `hello`.
/// Call inside a tokio runtime.
pub async fn connect(
    socket: std::net::UdpSocket,
    scheduler: SocketAddr,
    creds: &AgentCredentials,
    hello: &Hello,
) -> Result<ControlLink, ControlError> {
    socket.set_nonblocking(true)?;
    let runtime = quinn::default_runtime().ok_or(ControlError::NoRuntime)?;
    let mut endpoint = quinn::Endpoint::new(Default::default(), None, socket, runtime)?;
    let tls = quinn::crypto::rustls::QuicClientConfig::try_from(creds.client_config(ALPN_CONTROL)?)
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    let mut config = quinn::ClientConfig::new(Arc::new(tls));
    let mut transport = quinn::TransportConfig::default();
    transport.max_idle_timeout(quinn::IdleTimeout::try_from(Duration::from_secs(30)).ok());
    config.transport_config(Arc::new(transport));
    endpoint.set_default_client_config(config);
    let handshake = async {
        let connection = endpoint.connect(scheduler, SCHEDULER_NAME)?.await?;
        let (mut send, mut recv) = connection.open_bi().await?;
        let mut scratch = Vec::new();
        write_frame(&mut send, hello, &mut scratch).await?;
        let reply: Option<HelloReply> = match read_frame(&mut recv, &mut scratch).await {
            Ok(r) => r,
            // A refusal in the TLS layer closes the connection: report that, not the stream.
            Err(e) => {
                return Err(match connection.close_reason() {
                    Some(reason) => ControlError::Connection(reason),
                    None => e.into(),
                })
            }
        };
        match reply {
            Some(HelloReply::Welcome {
                version,
                heartbeat_interval,
            }) if version == PROTOCOL_VERSION => Ok(ControlLink {
                endpoint: endpoint.clone(),
                connection,
                send,
                recv,
                heartbeat_interval: heartbeat_interval.as_duration(),
            }),
            Some(HelloReply::Welcome { version, .. }) => Err(ControlError::Refused(format!(
                "scheduler speaks protocol version {version}, this agent speaks {PROTOCOL_VERSION}"
            ))),
            Some(HelloReply::Refused { reason }) => {
                connection.close(super::CLOSE_REFUSED.into(), b"refused");
                Err(ControlError::Refused(reason))
            }
            None => Err(match connection.close_reason() {
                Some(reason) => ControlError::Connection(reason),
                None => ControlError::Refused("scheduler closed the stream without a reply".into()),
            }),
        }
    };
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake).await {
        Ok(r) => r,
        Err(_) => Err(ControlError::Timeout(
            "waiting for the scheduler's reply to hello",
        )),
    }
}
