//! Measurement probes that move real packets between emulated hosts, used
//! by the tests and by `ocslab bench links|ocs`:
//! - [`tcp_send`]: a TCP transfer of a given size (bytes received);
//! - [`tcp_goodput`]: one TCP stream's goodput in a window after a warm-up;
//! - [`tcp_goodputs`]: the same for several streams at once (e.g. both ways
//!   through one uplink);
//! - [`tcp_goodput_beside_udp_flood`]: one TCP stream's goodput while a UDP
//!   sender floods the links it crosses (the flow queues' fairness);
//! - [`DarkProbe`]: a paced UDP stream, marked for the OCS, from one host
//!   to hosts of other racks, in turn or aimed by the caller
//!   ([`DarkProbe::start_aimed`]). One receiver thread reads the kernel's
//!   receive timestamps (`SO_TIMESTAMPNS`) and each packet's TTL
//!   (`IP_RECVTTL`): a packet that crossed a circuit passed two routers
//!   (TTL 62), one that took EPS passed three (TTL 61). The gaps between the
//!   last circuit arrival at one rack and the first at the next are the
//!   ports' dark times. Each packet carries its send time and each arrival
//!   its receive timestamp, both on CLOCK_MONOTONIC: whatever the OCS
//!   decided for a packet, it decided between those two times.
//!
//! Sockets are opened inside the hosts' namespaces (see [`Fabric::in_host`])
//! and then used from ordinary threads.

use super::{Fabric, FabricError};
use crate::topology::HostId;
use crate::units::Nanos;
use nix::sys::socket::{self, sockopt, ControlMessageOwned, MsgFlags};
use std::io::{self, IoSliceMut, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// TCP payload over 1500-byte Ethernet frames with timestamps: 1448 of the
/// 1514 bytes htb counts per full segment. What a shaped link "allows".
pub const TCP_PAYLOAD_EFFICIENCY: f64 = 1448.0 / 1514.0;

/// Initial TTL of packets sent by the probes.
pub const PROBE_TTL: u8 = 64;

fn io_err(what: &str) -> impl FnOnce(io::Error) -> FabricError + '_ {
    move |source| FabricError::Probe {
        what: what.to_string(),
        source,
    }
}

fn nix_err(what: &str) -> impl FnOnce(nix::Error) -> FabricError + '_ {
    move |e| FabricError::Probe {
        what: what.to_string(),
        source: io::Error::from(e),
    }
}

fn listen(fabric: &Fabric, to: HostId) -> Result<(TcpListener, SocketAddr), FabricError> {
    let addr = SocketAddr::new(fabric.host_addr(to).into(), 0);
    let l = fabric
        .in_host(to, || TcpListener::bind(addr))?
        .map_err(io_err("listening"))?;
    let at = l.local_addr().map_err(io_err("listening"))?;
    Ok((l, at))
}

fn connect(fabric: &Fabric, from: HostId, at: SocketAddr, tos: Option<u8>) -> Result<TcpStream, FabricError> {
    let s = fabric
        .in_host(from, || TcpStream::connect_timeout(&at, Duration::from_secs(5)))?
        .map_err(io_err("connecting"))?;
    if let Some(tos) = tos {
        socket::setsockopt(&s, sockopt::Ipv4Tos, &(tos as i32)).map_err(nix_err("setting IP_TOS"))?;
    }
    Ok(s)
}

fn joined<T>(h: std::thread::JoinHandle<io::Result<T>>, what: &str) -> Result<T, FabricError> {
    h.join()
        .map_err(|_| FabricError::Probe {
            what: what.to_string(),
            source: io::Error::other("thread panicked"),
        })?
        .map_err(io_err(what))
}

/// Sends `bytes` bytes from `from` to `to` over one TCP connection whose
/// sending socket carries IP_TOS `tos`; returns the bytes the receiver read.
pub fn tcp_send(
    fabric: &Fabric,
    from: HostId,
    to: HostId,
    tos: Option<u8>,
    bytes: u64,
) -> Result<u64, FabricError> {
    let (l, at) = listen(fabric, to)?;
    let rx = std::thread::spawn(move || -> io::Result<u64> {
        let (mut s, _) = l.accept()?;
        let mut buf = vec![0u8; 1 << 16];
        let mut got = 0u64;
        loop {
            match s.read(&mut buf)? {
                0 => return Ok(got),
                n => got += n as u64,
            }
        }
    });
    let mut s = connect(fabric, from, at, tos)?;
    let chunk = vec![0x5au8; 1 << 16];
    let mut left = bytes;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        s.write_all(&chunk[..n]).map_err(io_err("sending"))?;
        left -= n as u64;
    }
    s.shutdown(std::net::Shutdown::Write).map_err(io_err("closing"))?;
    joined(rx, "receiving")
}

/// One TCP stream of a goodput measurement: sender, receiver and the
/// IP_TOS of the sending socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stream {
    /// Sending host.
    pub from: HostId,
    /// Receiving host.
    pub to: HostId,
    /// IP_TOS of the sending socket (`None`: unmarked, EPS).
    pub tos: Option<u8>,
}

/// Goodput (bit/s) of one TCP stream from `from` to `to`: payload received
/// during `measure`, after `warmup` (slow start, the bucket's first burst).
pub fn tcp_goodput(
    fabric: &Fabric,
    from: HostId,
    to: HostId,
    tos: Option<u8>,
    warmup: Duration,
    measure: Duration,
) -> Result<f64, FabricError> {
    let g = tcp_goodputs(fabric, &[Stream { from, to, tos }], warmup, measure)?;
    Ok(g.first().copied().unwrap_or(0.0))
}

/// Goodput (bit/s) of each of `streams`, all running at once (e.g. one each
/// way through an uplink, so that each direction's ACKs share a queue with
/// the other's data): payload received during the same `measure` window,
/// after `warmup`.
pub fn tcp_goodputs(
    fabric: &Fabric,
    streams: &[Stream],
    warmup: Duration,
    measure: Duration,
) -> Result<Vec<f64>, FabricError> {
    let stop = Arc::new(AtomicBool::new(false));
    let mut counters = Vec::new();
    let mut threads = Vec::new();
    for st in streams {
        let (received, _) = start_tcp_stream(fabric, st, &stop, &mut threads)?;
        counters.push(received);
    }
    measure_window(&counters, &stop, threads, warmup, measure)
}

/// Goodput (bit/s) of one TCP `stream` while a UDP sender on `flood.from`
/// sends to `flood.to` as fast as its socket lets it, and the UDP bits
/// received per second, over the same `measure` window after `warmup`.
/// The UDP source port differs from the TCP stream's in bit 1, so the two
/// take different flow queues ([`super::htb::FlowQueues`]) on every
/// shaped link they share.
pub fn tcp_goodput_beside_udp_flood(
    fabric: &Fabric,
    stream: &Stream,
    flood: &Stream,
    warmup: Duration,
    measure: Duration,
) -> Result<(f64, f64), FabricError> {
    let stop = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();
    let (tcp, port) = start_tcp_stream(fabric, stream, &stop, &mut threads)?;
    let to = SocketAddr::new(fabric.host_addr(flood.to).into(), 0);
    let rx = fabric
        .in_host(flood.to, || UdpSocket::bind(to))?
        .map_err(io_err("binding the flood's receiver"))?;
    let at = rx.local_addr().map_err(io_err("binding the flood's receiver"))?;
    let from = SocketAddr::new(fabric.host_addr(flood.from).into(), port ^ 2);
    let tx = fabric
        .in_host(flood.from, || UdpSocket::bind(from))?
        .map_err(io_err("binding the flood's sender"))?;
    rx.set_read_timeout(Some(Duration::from_millis(50)))
        .map_err(io_err("setting a read timeout"))?;
    let udp = Arc::new(AtomicU64::new(0));
    let (received, until) = (udp.clone(), stop.clone());
    threads.push((
        "receiving the flood",
        std::thread::spawn(move || -> io::Result<()> {
            let mut buf = vec![0u8; 2048];
            while !until.load(Ordering::Relaxed) {
                match rx.recv(&mut buf) {
                    Ok(n) => {
                        received.fetch_add(n as u64, Ordering::Relaxed);
                    }
                    Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(())
        }),
    ));
    let until = stop.clone();
    threads.push((
        "sending the flood",
        std::thread::spawn(move || -> io::Result<()> {
            let datagram = vec![0xa5u8; 1400];
            while !until.load(Ordering::Relaxed) {
                // A full queue on the way drops; the socket blocks only
                // while its own buffer is full.
                match tx.send_to(&datagram, at) {
                    Ok(_) => {}
                    Err(e) if e.raw_os_error() == Some(nix::errno::Errno::ENOBUFS as i32) => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(())
        }),
    ));
    let g = measure_window(&[tcp, udp], &stop, threads, warmup, measure)?;
    Ok((g[0], g[1]))
}

type Workers = Vec<(&'static str, std::thread::JoinHandle<io::Result<()>>)>;

/// Starts one TCP stream that sends until `stop`; returns its received
/// byte count and the sender's source port.
fn start_tcp_stream(
    fabric: &Fabric,
    st: &Stream,
    stop: &Arc<AtomicBool>,
    threads: &mut Workers,
) -> Result<(Arc<AtomicU64>, u16), FabricError> {
    let (l, at) = listen(fabric, st.to)?;
    let received = Arc::new(AtomicU64::new(0));
    let counter = received.clone();
    threads.push((
        "receiving",
        std::thread::spawn(move || -> io::Result<()> {
            let (mut s, _) = l.accept()?;
            let mut buf = vec![0u8; 1 << 18];
            loop {
                match s.read(&mut buf)? {
                    0 => return Ok(()),
                    n => counter.fetch_add(n as u64, Ordering::Relaxed),
                };
            }
        }),
    ));
    let mut s = connect(fabric, st.from, at, st.tos)?;
    let port = s.local_addr().map_err(io_err("connecting"))?.port();
    let stop = stop.clone();
    threads.push((
        "sending",
        std::thread::spawn(move || -> io::Result<()> {
            let chunk = vec![0x5au8; 1 << 18];
            while !stop.load(Ordering::Relaxed) {
                s.write_all(&chunk)?;
            }
            s.shutdown(std::net::Shutdown::Write)
        }),
    ));
    Ok((received, port))
}

/// Bits per second each of `counters` grew by during `measure`, after
/// `warmup`; then stops and joins `threads`.
fn measure_window(
    counters: &[Arc<AtomicU64>],
    stop: &AtomicBool,
    threads: Workers,
    warmup: Duration,
    measure: Duration,
) -> Result<Vec<f64>, FabricError> {
    let snapshot = || {
        counters
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .collect::<Vec<_>>()
    };
    // The window is the measurement itself, not a synchronisation.
    std::thread::sleep(warmup);
    let (c0, t0) = (snapshot(), Instant::now());
    std::thread::sleep(measure);
    let (c1, t1) = (snapshot(), Instant::now());
    stop.store(true, Ordering::Relaxed);
    for (what, h) in threads {
        joined(h, what)?;
    }
    let secs = (t1 - t0).as_secs_f64();
    Ok(c0
        .iter()
        .zip(&c1)
        .map(|(a, b)| (b - a) as f64 * 8.0 / secs)
        .collect())
}

/// One packet received by a [`DarkProbe`] receiver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arrival {
    /// Kernel receive time, nanoseconds (CLOCK_REALTIME).
    pub at_ns: u64,
    /// Which receiver (index into the probe's destinations).
    pub dst: usize,
    /// TTL on arrival.
    pub ttl: u8,
    /// When it was sent ([`super::clock::now`], CLOCK_MONOTONIC).
    pub sent: u64,
    /// When the receiving host's kernel took it in: `at_ns` on
    /// CLOCK_MONOTONIC, rounded late (see [`super::clock::realtime_offset`]);
    /// the time the receiver read it when the kernel gave no timestamp.
    pub seen: u64,
}

impl Arrival {
    /// Whether it crossed a circuit (two routers; EPS has three).
    pub fn over_circuit(&self) -> bool {
        self.ttl == PROBE_TTL - 2
    }
}

/// Picks a [`DarkProbe`] packet's destination from the time it is sent
/// (CLOCK_MONOTONIC).
pub type Aim = Box<dyn FnMut(Nanos) -> usize + Send>;

/// A paced, OCS-marked UDP stream from one host to several, recording the
/// path every packet took (see the module doc).
pub struct DarkProbe {
    stop: Arc<AtomicBool>,
    /// Packets sent so far.
    sent: Arc<AtomicU64>,
    /// Set once the sender has returned: the receiver's next pass is its last.
    sent_all: Arc<AtomicBool>,
    sender: Option<std::thread::JoinHandle<io::Result<u64>>>,
    receiver: Option<std::thread::JoinHandle<io::Result<Vec<Arrival>>>>,
}

/// How long the probe's receiver sleeps between reads of its sockets. It
/// never blocks on a socket: a reader woken per packet cost the box more
/// than the packet's whole path, and widened the probe's spacing. The
/// kernel's receive timestamp, not the read, times each packet, and the
/// sockets' buffers hold many times what arrives in one pause.
const RECEIVER_PAUSE: Duration = Duration::from_micros(500);

/// How long the receiver keeps reading after the sender has returned. A
/// packet is mostly delivered inside its send call, but the kernel may leave
/// the rest of a busy softirq to `ksoftirqd`.
const RECEIVER_GRACE: Duration = Duration::from_millis(50);

impl DarkProbe {
    /// Starts sending from `from` to every host of `to`, in turn, one
    /// packet per `interval` at least (sleep-paced under SCHED_FIFO), marked with TOS `tos`.
    /// With a zero `interval` it sends back to back, at whatever rate the
    /// kernel takes them (a few µs apart), yielding the CPU every 64 packets.
    pub fn start(
        fabric: &Fabric,
        from: HostId,
        to: &[HostId],
        tos: u8,
        interval: Duration,
    ) -> Result<DarkProbe, FabricError> {
        Self::start_aimed(fabric, from, to, tos, interval, None)
    }

    /// [`DarkProbe::start`], but `aim` picks each packet's destination (an
    /// index into `to`, taken modulo its length) from the time it is sent
    /// ([`super::clock::now`]): a probe that follows a schedule sends most
    /// of its packets where a circuit is about to open or close. `None`:
    /// in turn.
    pub fn start_aimed(
        fabric: &Fabric,
        from: HostId,
        to: &[HostId],
        tos: u8,
        interval: Duration,
        mut aim: Option<Aim>,
    ) -> Result<DarkProbe, FabricError> {
        if to.is_empty() {
            return Err(io_err("starting a probe")(io::Error::other(
                "no destination host",
            )));
        }
        let stop = Arc::new(AtomicBool::new(false));
        let mut socks = Vec::new();
        let mut dsts = Vec::new();
        for &h in to {
            let addr = SocketAddr::new(fabric.host_addr(h).into(), 0);
            let sock = fabric
                .in_host(h, || UdpSocket::bind(addr))?
                .map_err(io_err("binding probe receiver"))?;
            socket::setsockopt(&sock, sockopt::ReceiveTimestampns, &true)
                .map_err(nix_err("SO_TIMESTAMPNS"))?;
            socket::setsockopt(&sock, sockopt::Ipv4RecvTtl, &true).map_err(nix_err("IP_RECVTTL"))?;
            // Root may exceed rmem_max; a failure only risks drops when receivers lag.
            let _ = socket::setsockopt(&sock, sockopt::RcvBufForce, &(16 << 20));
            dsts.push(sock.local_addr().map_err(io_err("probe receiver address"))?);
            socks.push(sock);
        }
        let src = SocketAddr::new(fabric.host_addr(from).into(), 0);
        let sock = fabric
            .in_host(from, || UdpSocket::bind(src))?
            .map_err(io_err("binding probe sender"))?;
        socket::setsockopt(&sock, sockopt::Ipv4Tos, &(tos as i32)).map_err(nix_err("setting IP_TOS"))?;
        sock.set_ttl(PROBE_TTL as u32).map_err(io_err("setting TTL"))?;
        // Threads start only once nothing can fail, so none is left behind.
        let sent_all = Arc::new(AtomicBool::new(false));
        let receiver = {
            let sent_all = sent_all.clone();
            std::thread::spawn(move || receive(&socks, &sent_all))
        };
        let sent_so_far = Arc::new(AtomicU64::new(0));
        let sender = {
            let stop = stop.clone();
            let sent_so_far = sent_so_far.clone();
            std::thread::spawn(move || -> io::Result<u64> {
                // Under SCHED_FIFO the sender is not starved by other work on
                // a busy box (its stalls would look like dark time); it
                // sleeps between packets so it never monopolises a core.
                let _rt = super::clock::Realtime::enter(super::clock::PROBE_PRIORITY);
                let mut sent = 0u64;
                let mut next = Instant::now();
                let mut payload = [0u8; 64];
                let mut turn = 0usize;
                while !stop.load(Ordering::Relaxed) {
                    if interval.is_zero() {
                        if sent % 64 == 63 {
                            std::thread::yield_now();
                        }
                    } else {
                        let now = Instant::now();
                        if next > now {
                            std::thread::sleep(next - now);
                        }
                        next = Instant::now().max(next) + interval;
                    }
                    let d = match aim.as_mut() {
                        Some(aim) => aim(super::clock::now()),
                        None => {
                            turn += 1;
                            turn
                        }
                    };
                    payload[..8].copy_from_slice(&super::clock::now().0.to_le_bytes());
                    // Drops (ENOBUFS) under load are part of what is measured.
                    if sock.send_to(&payload, dsts[d % dsts.len()]).is_ok() {
                        sent += 1;
                        sent_so_far.store(sent, Ordering::Relaxed);
                    }
                }
                Ok(sent)
            })
        };
        Ok(DarkProbe {
            stop,
            sent: sent_so_far,
            sent_all,
            sender: Some(sender),
            receiver: Some(receiver),
        })
    }

    /// Waits until the probe has sent `more` packets beyond those sent so
    /// far, or `within` has passed; whether it has. A sender the box holds
    /// back (a busy box, another thread's long system call) only makes the
    /// wait longer, so a check that needs packets after some instant waits
    /// for them rather than for a time.
    pub fn wait_sent(&self, more: u64, within: Duration) -> bool {
        let target = self.sent.load(Ordering::Relaxed) + more;
        let deadline = Instant::now() + within;
        while self.sent.load(Ordering::Relaxed) < target {
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        true
    }

    /// Stops the stream; returns (packets sent, arrivals in time order).
    pub fn finish(mut self) -> Result<(u64, Vec<Arrival>), FabricError> {
        self.stop.store(true, Ordering::Relaxed);
        let sent = match self.sender.take() {
            Some(h) => joined(h, "probe sender")?,
            None => 0,
        };
        self.sent_all.store(true, Ordering::Release);
        let mut all = match self.receiver.take() {
            Some(h) => joined(h, "probe receiver")?,
            None => Vec::new(),
        };
        all.sort_by_key(|a| a.at_ns);
        Ok((sent, all))
    }
}

impl Drop for DarkProbe {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.sent_all.store(true, Ordering::Release);
    }
}

/// Reads every socket until it is empty, then pauses. Once the sender has
/// returned (`sent_all`) it stops at the first pass that finds nothing after
/// [`RECEIVER_GRACE`]. `sockets[i]` is destination `i`.
fn receive(sockets: &[UdpSocket], sent_all: &AtomicBool) -> io::Result<Vec<Arrival>> {
    let offset = super::clock::realtime_offset();
    let mut out = Vec::new();
    let mut buf = [0u8; 2048];
    let mut cmsg = nix::cmsg_space!(nix::sys::time::TimeSpec, libc::c_int);
    let mut ending: Option<Instant> = None;
    loop {
        if ending.is_none() && sent_all.load(Ordering::Acquire) {
            ending = Some(Instant::now());
        }
        let before = out.len();
        for (dst, sock) in sockets.iter().enumerate() {
            loop {
                let mut iov = [IoSliceMut::new(&mut buf)];
                let msg = match socket::recvmsg::<()>(
                    std::os::fd::AsRawFd::as_raw_fd(sock),
                    &mut iov,
                    Some(&mut cmsg),
                    MsgFlags::MSG_DONTWAIT,
                ) {
                    Ok(msg) => msg,
                    Err(nix::Error::EAGAIN) => break,
                    Err(nix::Error::EINTR) => continue,
                    Err(e) => return Err(io::Error::from(e)),
                };
                let (mut at_ns, mut ttl) = (0u64, 0u8);
                if let Ok(cmsgs) = msg.cmsgs() {
                    for c in cmsgs {
                        match c {
                            ControlMessageOwned::ScmTimestampns(ts) => {
                                at_ns = ts.tv_sec() as u64 * 1_000_000_000 + ts.tv_nsec() as u64
                            }
                            ControlMessageOwned::Ipv4Ttl(t) => ttl = t as u8,
                            _ => {}
                        }
                    }
                }
                let seen = match at_ns {
                    0 => super::clock::now().0,
                    at => at.saturating_sub(offset),
                };
                let sent = buf
                    .get(..8)
                    .and_then(|b| b.try_into().ok())
                    .map(u64::from_le_bytes)
                    .unwrap_or(0);
                out.push(Arrival {
                    at_ns,
                    dst,
                    ttl,
                    sent,
                    seen,
                });
            }
        }
        if ending.is_some_and(|t| out.len() == before && t.elapsed() >= RECEIVER_GRACE) {
            return Ok(out);
        }
        std::thread::sleep(RECEIVER_PAUSE);
    }
}
