//! TCP flows: the kernel's transport, the default. OCS-bound sockets carry
//! the flow's TOS byte ([`crate::protocol::FlowSpec::tos`]) from before the
//! SYN, so every packet of the flow is routed by its mark at the ToR.

use super::{DataError, DataPlane};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use tokio::net::{TcpListener, TcpSocket, TcpStream};

/// Connects from `local` (port chosen by the kernel) to `dst`, every
/// packet carrying the TOS byte `tos`.
pub async fn connect(local: IpAddr, dst: SocketAddr, tos: u8) -> Result<TcpStream, DataError> {
    let sock = match dst {
        SocketAddr::V4(_) => {
            let s = TcpSocket::new_v4()?;
            s.set_tos_v4(u32::from(tos))?;
            s
        }
        SocketAddr::V6(_) if tos != 0 => return Err(DataError::NotIpv4(dst)),
        SocketAddr::V6(_) => TcpSocket::new_v6()?,
    };
    if local.is_ipv4() == dst.is_ipv4() && !local.is_unspecified() {
        sock.bind(SocketAddr::new(local, 0))?;
    }
    Ok(sock.connect(dst).await?)
}

/// Accepts data connections until the listener fails; one task per stream.
pub async fn accept_loop(listener: TcpListener, plane: Arc<DataPlane>) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                let plane = plane.clone();
                tokio::spawn(async move {
                    let (r, w) = stream.into_split();
                    plane.serve_stream(r, w).await;
                });
            }
            Err(e) => {
                // Out of descriptors and the like: back off rather than spin.
                tracing::warn!("data listener: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        }
    }
}
