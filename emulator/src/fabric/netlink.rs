//! A small synchronous rtnetlink client, one socket per namespace.
//!
//! Why not the async `rtnetlink` crate: building a fabric is thousands of
//! independent requests, and the kernel processes a netlink datagram
//! synchronously inside `sendmsg`. So a batch of requests is encoded into
//! one buffer (netlink-packet-route's message types do the encoding), sent
//! with one system call per 64 KiB, and only the last request asks for an
//! acknowledgement: any failure before it arrives as an error message ahead
//! of that final ack. A batch costs two system calls instead of two per
//! request, which is what makes a 128-host fabric come up in a fraction of a
//! second and an OCS circuit change in tens of microseconds.
//!
//! Requests carry a human description, so a failure reads "in namespace
//! ocslab-ab12-tor0: adding route 198.18.0.0/15 via ...: Network is
//! unreachable (kernel: ...)", with the kernel's extended ack message when
//! it gives one.

use netlink_packet_core::{
    NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_ACK, NLM_F_DUMP, NLM_F_REQUEST,
};
use netlink_packet_route::RouteNetlinkMessage;
use netlink_sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr};
use std::io;

/// Largest datagram sent at once.
const CHUNK: usize = 64 * 1024;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLM_F_ACK_TLVS: u16 = 0x200;
const NLMSGERR_ATTR_MSG: u16 = 1;

/// A netlink failure: where, doing what, the kernel's answer.
#[derive(Debug, thiserror::Error)]
#[error("in namespace {ns}: {what}: {source}{}", ext.as_ref().map(|m| format!(" (kernel: {m})")).unwrap_or_default())]
pub struct NetlinkError {
    /// The namespace whose socket was used.
    pub ns: String,
    /// What the failing request did.
    pub what: String,
    /// The errno (or socket error).
    #[source]
    pub source: io::Error,
    /// The kernel's extended acknowledgement message, if any.
    pub ext: Option<String>,
}

/// One request: a message, its netlink flags beyond `NLM_F_REQUEST`, and
/// a description for errors.
#[derive(Debug, Clone)]
pub struct Request {
    /// The message.
    pub msg: RouteNetlinkMessage,
    /// Flags such as `NLM_F_CREATE | NLM_F_EXCL`.
    pub flags: u16,
    /// What it does, for error messages.
    pub what: String,
}

impl Request {
    /// A request with flags and a description.
    pub fn new(msg: RouteNetlinkMessage, flags: u16, what: impl Into<String>) -> Request {
        Request {
            msg,
            flags,
            what: what.into(),
        }
    }
}

/// A batch encoded ahead of time (so time-critical code only sends it).
#[derive(Debug, Clone, Default)]
pub struct Prepared {
    chunks: Vec<Vec<u8>>,
    first_seq: u32,
    whats: Vec<String>,
}

impl Prepared {
    /// Number of requests.
    pub fn len(&self) -> usize {
        self.whats.len()
    }
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.whats.is_empty()
    }
}

/// An rtnetlink socket bound to the namespace of the thread that opened it.
pub struct Rtnl {
    sock: Socket,
    ns: String,
    seq: u32,
    rx: Vec<u8>,
}

impl std::fmt::Debug for Rtnl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rtnl").field("ns", &self.ns).finish()
    }
}

impl Rtnl {
    /// Opens a socket in the calling thread's current network namespace,
    /// called `ns` in errors.
    pub fn open(ns: &str) -> Result<Rtnl, NetlinkError> {
        let e = |source| NetlinkError {
            ns: ns.to_string(),
            what: "opening rtnetlink socket".into(),
            source,
            ext: None,
        };
        let mut sock = Socket::new(NETLINK_ROUTE).map_err(e)?;
        sock.bind_auto().map_err(e)?;
        sock.connect(&SocketAddr::new(0, 0)).map_err(e)?;
        // Acks without the echoed request, with the kernel's error text.
        sock.set_cap_ack(true).map_err(e)?;
        sock.set_ext_ack(true).map_err(e)?;
        Ok(Rtnl {
            sock,
            ns: ns.to_string(),
            seq: 0,
            rx: vec![0; 1 << 20],
        })
    }

    /// The namespace name this socket works in.
    pub fn ns(&self) -> &str {
        &self.ns
    }

    fn error(&self, what: &str, source: io::Error, ext: Option<String>) -> NetlinkError {
        NetlinkError {
            ns: self.ns.clone(),
            what: what.to_string(),
            source,
            ext,
        }
    }

    /// Encodes `reqs` (only the last asks for an ack).
    pub fn prepare(&mut self, reqs: Vec<Request>) -> Prepared {
        let first_seq = self.seq.wrapping_add(1);
        let n = reqs.len();
        let mut chunks: Vec<Vec<u8>> = vec![Vec::new()];
        let mut whats = Vec::with_capacity(n);
        for (i, r) in reqs.into_iter().enumerate() {
            self.seq = self.seq.wrapping_add(1);
            let mut header = NetlinkHeader::default();
            header.flags = NLM_F_REQUEST | r.flags | if i + 1 == n { NLM_F_ACK } else { 0 };
            header.sequence_number = self.seq;
            let mut m = NetlinkMessage::new(header, NetlinkPayload::InnerMessage(r.msg));
            m.finalize();
            let len = m.buffer_len();
            let padded = (len + 3) & !3;
            if chunks
                .last()
                .is_some_and(|c| !c.is_empty() && c.len() + padded > CHUNK)
            {
                chunks.push(Vec::new());
            }
            if let Some(c) = chunks.last_mut() {
                let at = c.len();
                c.resize(at + padded, 0);
                m.serialize(&mut c[at..at + len]);
            }
            whats.push(r.what);
        }
        Prepared {
            chunks,
            first_seq,
            whats,
        }
    }

    /// Sends a prepared batch without waiting for the kernel's answer (the
    /// kernel has processed it when this returns; see [`Rtnl::finish`]).
    pub fn send(&mut self, p: &Prepared) -> Result<(), NetlinkError> {
        for c in p.chunks.iter().filter(|c| !c.is_empty()) {
            self.sock
                .send(c, 0)
                .map_err(|e| self.error("sending requests", e, None))?;
        }
        Ok(())
    }

    /// Reads the answers to a sent batch: the first failure, if any.
    pub fn finish(&mut self, p: &Prepared) -> Result<(), NetlinkError> {
        if p.is_empty() {
            return Ok(());
        }
        let last = p.first_seq.wrapping_add(p.len() as u32 - 1);
        let mut first_err: Option<NetlinkError> = None;
        loop {
            let n = self
                .sock
                .recv(&mut &mut self.rx[..], 0)
                .map_err(|e| self.error("reading acknowledgements", e, None))?;
            let mut off = 0;
            let mut done = false;
            while off + 16 <= n {
                let b = &self.rx[off..n];
                let len = u32::from_ne_bytes([b[0], b[1], b[2], b[3]]) as usize;
                if len < 16 || len > b.len() {
                    break;
                }
                let ty = u16::from_ne_bytes([b[4], b[5]]);
                let flags = u16::from_ne_bytes([b[6], b[7]]);
                let seq = u32::from_ne_bytes([b[8], b[9], b[10], b[11]]);
                if ty == NLMSG_ERROR && len >= 20 {
                    let code = i32::from_ne_bytes([b[16], b[17], b[18], b[19]]);
                    let idx = seq.wrapping_sub(p.first_seq) as usize;
                    if code != 0 && idx < p.len() && first_err.is_none() {
                        let ext = ext_ack_message(&b[..len], flags);
                        first_err = Some(self.error(&p.whats[idx], io::Error::from_raw_os_error(-code), ext));
                    }
                    if seq == last {
                        done = true;
                    }
                }
                off += (len + 3) & !3;
            }
            if done {
                break;
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    /// Sends `reqs` and waits until the kernel has answered all of them.
    pub fn execute(&mut self, reqs: Vec<Request>) -> Result<(), NetlinkError> {
        let p = self.prepare(reqs);
        self.send(&p)?;
        self.finish(&p)
    }

    /// Sends a dump request (`NLM_F_DUMP` is added) and returns every
    /// message of the answer that netlink-packet-route can parse.
    pub fn dump(
        &mut self,
        msg: RouteNetlinkMessage,
        what: &str,
    ) -> Result<Vec<RouteNetlinkMessage>, NetlinkError> {
        self.seq = self.seq.wrapping_add(1);
        let seq = self.seq;
        let mut header = NetlinkHeader::default();
        header.flags = NLM_F_REQUEST | NLM_F_DUMP;
        header.sequence_number = seq;
        let mut m = NetlinkMessage::new(header, NetlinkPayload::InnerMessage(msg));
        m.finalize();
        let mut buf = vec![0; m.buffer_len()];
        m.serialize(&mut buf);
        self.sock.send(&buf, 0).map_err(|e| self.error(what, e, None))?;
        let mut out = Vec::new();
        loop {
            let n = self
                .sock
                .recv(&mut &mut self.rx[..], 0)
                .map_err(|e| self.error(what, e, None))?;
            let mut off = 0;
            while off + 16 <= n {
                let b = &self.rx[off..n];
                let len = u32::from_ne_bytes([b[0], b[1], b[2], b[3]]) as usize;
                if len < 16 || len > b.len() {
                    break;
                }
                let ty = u16::from_ne_bytes([b[4], b[5]]);
                let mseq = u32::from_ne_bytes([b[8], b[9], b[10], b[11]]);
                off += (len + 3) & !3;
                if mseq != seq {
                    continue;
                }
                match ty {
                    NLMSG_DONE => return Ok(out),
                    NLMSG_ERROR => {
                        let code = i32::from_ne_bytes([b[16], b[17], b[18], b[19]]);
                        if code != 0 {
                            let flags = u16::from_ne_bytes([b[6], b[7]]);
                            return Err(self.error(
                                what,
                                io::Error::from_raw_os_error(-code),
                                ext_ack_message(&b[..len], flags),
                            ));
                        }
                        return Ok(out);
                    }
                    _ => {
                        if let Ok(NetlinkMessage {
                            payload: NetlinkPayload::InnerMessage(inner),
                            ..
                        }) = NetlinkMessage::<RouteNetlinkMessage>::deserialize(&b[..len])
                        {
                            out.push(inner);
                        }
                    }
                }
            }
        }
    }
}

/// The `NLMSGERR_ATTR_MSG` text of an error message, when the kernel sent
/// extended ack attributes (with `NETLINK_CAP_ACK`, they follow the 20-byte
/// header, the errno and the echoed request header).
fn ext_ack_message(msg: &[u8], flags: u16) -> Option<String> {
    if flags & NLM_F_ACK_TLVS == 0 {
        return None;
    }
    let mut off = 16 + 4 + 16;
    while off + 4 <= msg.len() {
        let len = u16::from_ne_bytes([msg[off], msg[off + 1]]) as usize;
        let kind = u16::from_ne_bytes([msg[off + 2], msg[off + 3]]) & 0x3fff;
        if len < 4 || off + len > msg.len() {
            return None;
        }
        if kind == NLMSGERR_ATTR_MSG {
            let s = &msg[off + 4..off + len];
            let s = s.split(|&c| c == 0).next().unwrap_or(s);
            return Some(String::from_utf8_lossy(s).into_owned());
        }
        off += (len + 3) & !3;
    }
    None
}
