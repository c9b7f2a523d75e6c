//! TCP flows: the kernel's transport, the default. OCS-bound sockets carry
//! the flow's TOS byte ([`crate::protocol::FlowSpec::tos`]) from before the
//! SYN, so every packet of the flow is routed by its mark at the ToR. A flow
//! given a flow queue ([`FlowQueue`]) binds a source port that the shaped
//! links hash to that queue.

use super::queue_port::bind_in_queue;
use super::{DataError, DataPlane};
use crate::protocol::FlowQueue;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use tokio::net::{TcpListener, TcpSocket, TcpStream};

/// Connects from `local` to `dst`, every packet carrying the TOS byte
/// `tos`, from a free source port that the fabric's links hash to flow
/// queue `queue` ([`bind_in_queue`]), or else one the kernel picks.
pub async fn connect(
    local: IpAddr,
    dst: SocketAddr,
    tos: u8,
    queue: Option<FlowQueue>,
) -> Result<TcpStream, DataError> {
    let sock = match dst {
        SocketAddr::V4(_) => {
            let s = TcpSocket::new_v4()?;
            s.set_tos_v4(u32::from(tos))?;
            s
        }
        SocketAddr::V6(_) if tos != 0 => return Err(DataError::NotIpv4(dst)),
        SocketAddr::V6(_) => TcpSocket::new_v6()?,
    };
    let same_family = local.is_ipv4() == dst.is_ipv4();
    let from = match dst {
        _ if same_family => local,
        SocketAddr::V4(_) => IpAddr::from([0u8; 4]),
        SocketAddr::V6(_) => IpAddr::from([0u16; 8]),
    };
    let in_queue = match queue {
        Some(q) => bind_in_queue(from, q, |a| sock.bind(a))?,
        None => false,
    };
    if !in_queue && !from.is_unspecified() {
        sock.bind(SocketAddr::new(from, 0))?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use ocslab_emulator::fabric::htb::FlowQueues;

    #[tokio::test]
    async fn a_flow_given_a_queue_sends_from_a_port_the_links_hash_to_it() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let dst = listener.local_addr().unwrap();
        let local = IpAddr::from([127, 0, 0, 1]);
        let q = FlowQueue { index: 5, count: 8 };
        let queues = FlowQueues::new(8).unwrap();
        let mut streams = Vec::new();
        for _ in 0..20 {
            let s = connect(local, dst, 0, Some(q)).await.unwrap();
            let port = s.local_addr().unwrap().port();
            assert_eq!(queues.queue_of_port(port), 5, "port {port}");
            streams.push(s);
        }
        // Twenty flows at once, each on a port of its own.
        let mut ports: Vec<u16> = streams.iter().map(|s| s.local_addr().unwrap().port()).collect();
        ports.sort_unstable();
        ports.dedup();
        assert_eq!(ports.len(), 20);
    }

    #[tokio::test]
    async fn a_queue_no_fabric_has_leaves_the_port_to_the_kernel() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let dst = listener.local_addr().unwrap();
        let local = IpAddr::from([127, 0, 0, 1]);
        for q in [FlowQueue { index: 8, count: 8 }, FlowQueue { index: 0, count: 6 }] {
            let s = connect(local, dst, 0, Some(q)).await.unwrap();
            assert_ne!(s.local_addr().unwrap().port(), 0);
        }
    }
}
