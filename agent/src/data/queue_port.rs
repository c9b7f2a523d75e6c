//! Source ports in a chosen flow queue, for both transports: the shaped
//! links hash a packet's source port to one of their flow queues
//! ([`FlowQueues::ports`]), so a sender that binds a port of the queue the
//! scheduler gave its flow ([`FlowQueue`]) puts the flow in that queue.

use crate::protocol::FlowQueue;
use ocslab_emulator::fabric::htb::FlowQueues;
use std::io::{self, ErrorKind};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Where the next [`bind_in_queue`] starts among its queue's ports, so
/// that successive flows take ports in turn rather than retrying the
/// first ones (which linger in TIME_WAIT after TCP flows).
static NEXT_PORT: AtomicUsize = AtomicUsize::new(0);

/// Calls `bind` with `local` and each port queue `q` owns, from a rotating
/// start, until one is not in use; `false` if every such port is taken (or
/// the queue names no fabric's queue), and the kernel is to pick one.
pub fn bind_in_queue(
    local: IpAddr,
    q: FlowQueue,
    mut bind: impl FnMut(SocketAddr) -> io::Result<()>,
) -> io::Result<bool> {
    let Some(queues) = FlowQueues::new(q.count).filter(|_| q.index < q.count) else {
        return Ok(false);
    };
    let from = NEXT_PORT.fetch_add(1, Ordering::Relaxed);
    for port in queues.ports(q.index, from) {
        match bind(SocketAddr::new(local, port)) {
            Ok(()) => return Ok(true),
            Err(e) if e.kind() == ErrorKind::AddrInUse => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(false)
}
