//! Measurement probes that move real packets between emulated hosts, used
//! by the tests and by `ocslab bench links|ocs`:
//! - [`tcp_send`]: a TCP transfer of a given size (bytes received);
//! - [`tcp_goodput`]: one TCP stream's goodput in a window after a warm-up;
//! - [`tcp_goodputs`]: the same for several streams at once (e.g. both ways
//!   through one uplink);
//! - [`tcp_goodput_beside_udp_flood`]: one TCP stream's goodput while a UDP
//!   sender floods the links it crosses (the flow queues' fairness);
//! - [`DarkProbe`]: a paced UDP stream, marked for the OCS, from one host
//!   to hosts of other racks, in turn or aimed by the caller, from one
//!   sender or several, always or while a [`Gate`] is open, at their own
//!   pace or with packets timed to instants the caller names ([`Align`];
//!   [`DarkProbe::start_with`]). One receiver thread reads the kernel's
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
use std::sync::{Arc, Barrier};
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

/// Picks a [`DarkProbe`] packet's destination (an index into its
/// destinations, taken modulo their number) from the time it is sent
/// ([`super::clock::now`], CLOCK_MONOTONIC), its number among its
/// sender's packets, and whether it was held for an instant of the
/// probe's [`Align`]. Shared by every sender of the probe.
pub type Aim = Arc<dyn Fn(Nanos, u64, bool) -> usize + Send + Sync>;

/// Tells a [`DarkProbe`] sender, from the time and its number, the instant
/// it should send a packet at, if there is one ahead: an instant the caller
/// measures at, such as just before a circuit goes dark. Shared by every
/// sender of the probe; `None` when nothing is ahead.
///
/// A sender waits for that instant only when its next packet might
/// otherwise come after it: when the instant is nearer than one and a half
/// of what a packet costs it (a packet may cost more than the mean). So a
/// held packet waits less than 1.5 packets' cost: it moves a sample onto
/// the instant rather than adding one, and the stream elsewhere is as it
/// was. A datapath that switched at another time than the instant still
/// shows, one packet's spacing later.
pub type Align = Arc<dyn Fn(Nanos, usize) -> Option<Nanos> + Send + Sync>;

/// Opens a [`DarkProbe`]'s senders for a while: they send while the clock
/// is before the time the gate was last opened until, and sleep
/// ([`GATE_POLL`] at a time) otherwise. A probe dense only around the
/// instants it measures leaves the box free the rest of the time.
#[derive(Clone, Debug, Default)]
pub struct Gate(Arc<AtomicU64>);

impl Gate {
    /// Lets the senders send until `t` ([`super::clock::now`]).
    pub fn open_until(&self, t: Nanos) {
        self.0.store(t.0, Ordering::Release);
    }

    /// Stops the senders at their next packet.
    pub fn close(&self) {
        self.0.store(0, Ordering::Release);
    }

    fn is_open(&self, now: Nanos) -> bool {
        now.0 < self.0.load(Ordering::Acquire)
    }
}

/// Each probe receiver socket's buffer, bytes (`SO_RCVBUFFORCE`). The
/// receiver cannot run while the senders hold every core, so one socket
/// takes a whole open gate: the longest of `ocslab bench ocs` (δ = 10 ms)
/// fills about 16 MiB of kernel memory (16,000 packets of about 1 KiB),
/// and a receiver slowed by a busy box's load may carry several gates'
/// worth.
pub const RECEIVE_BUFFER: usize = 256 << 20;

/// How long a sender whose [`Gate`] is closed sleeps before it looks again.
/// A caller opens the gate at least this long (plus a wake-up) before the
/// packets it needs.
pub const GATE_POLL: Duration = Duration::from_micros(50);

/// How a [`DarkProbe`] sends.
#[derive(Clone, Default)]
pub struct Sending {
    /// Least time between one sender's packets (sleep-paced); zero sends
    /// back to back, at whatever rate the kernel takes them, yielding the
    /// CPU every 64 packets.
    pub interval: Duration,
    /// Picks each packet's destination; `None`: in turn.
    pub aim: Option<Aim>,
    /// Sender threads, each with its own socket, all under SCHED_FIFO
    /// (0 counts as 1). A packet's path costs its sender's core the whole
    /// emulated path, so n senders on n cores send n times as densely.
    pub senders: usize,
    /// Send only while this gate is open; `None`: always.
    pub gate: Option<Gate>,
    /// Instants to send at; `None`: the senders keep their own pace.
    pub align: Option<Align>,
}

/// What a [`DarkProbe`] did, from [`DarkProbe::finish`].
#[derive(Clone, Debug, Default)]
pub struct ProbeRecord {
    /// Packets sent, all senders.
    pub sent: u64,
    /// Packets received, in receive-time order.
    pub arrivals: Vec<Arrival>,
    /// Time the senders spent inside their send calls, summed: what the
    /// packets cost the box through the emulated path, which the kernel
    /// mostly walks inside the call.
    pub sending: Nanos,
}

/// A paced, OCS-marked UDP stream from one host to several, recording the
/// path every packet took (see the module doc).
pub struct DarkProbe {
    stop: Arc<AtomicBool>,
    /// Packets sent so far, all senders.
    sent: Arc<AtomicU64>,
    /// Set once the senders have returned: the receiver's next pass is its last.
    sent_all: Arc<AtomicBool>,
    senders: Vec<std::thread::JoinHandle<io::Result<(u64, u64)>>>,
    receiver: Option<std::thread::JoinHandle<io::Result<Vec<Arrival>>>>,
}

/// How long the probe's receiver sleeps between reads of its sockets. It
/// never blocks on a socket: a reader woken per packet cost the box more
/// than the packet's whole path, and widened the probe's spacing. The
/// kernel's receive timestamp, not the read, times each packet, and the
/// sockets' buffers hold many times what arrives in one pause.
const RECEIVER_PAUSE: Duration = Duration::from_micros(500);

/// How long the receiver keeps reading after the senders have returned. A
/// packet is mostly delivered inside its send call, but the kernel may leave
/// the rest of a busy softirq to `ksoftirqd`.
const RECEIVER_GRACE: Duration = Duration::from_millis(50);

impl DarkProbe {
    /// Starts one sender from `from` to every host of `to`, in turn, one
    /// packet per `interval` at least, marked with TOS `tos` (see
    /// [`Sending`]).
    pub fn start(
        fabric: &Fabric,
        from: HostId,
        to: &[HostId],
        tos: u8,
        interval: Duration,
    ) -> Result<DarkProbe, FabricError> {
        let sending = Sending {
            interval,
            ..Sending::default()
        };
        Self::start_with(fabric, from, to, tos, sending)
    }

    /// Starts sending from `from` to the hosts of `to` as `sending` says,
    /// marked with TOS `tos`.
    pub fn start_with(
        fabric: &Fabric,
        from: HostId,
        to: &[HostId],
        tos: u8,
        sending: Sending,
    ) -> Result<DarkProbe, FabricError> {
        if to.is_empty() {
            return Err(io_err("starting a probe")(io::Error::other(
                "no destination host",
            )));
        }
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
            // Sized for a whole open gate and more (see RECEIVE_BUFFER): a
            // full socket drops the first packets over a new circuit. Root
            // may exceed rmem_max; a failure only risks drops.
            let _ = socket::setsockopt(&sock, sockopt::RcvBufForce, &RECEIVE_BUFFER);
            dsts.push(sock.local_addr().map_err(io_err("probe receiver address"))?);
            socks.push(sock);
        }
        let src = SocketAddr::new(fabric.host_addr(from).into(), 0);
        let mut out_socks = Vec::new();
        for _ in 0..sending.senders.max(1) {
            let sock = fabric
                .in_host(from, || UdpSocket::bind(src))?
                .map_err(io_err("binding probe sender"))?;
            socket::setsockopt(&sock, sockopt::Ipv4Tos, &(tos as i32)).map_err(nix_err("setting IP_TOS"))?;
            sock.set_ttl(PROBE_TTL as u32).map_err(io_err("setting TTL"))?;
            out_socks.push(sock);
        }
        // Threads start only once nothing can fail, so none is left behind.
        let stop = Arc::new(AtomicBool::new(false));
        let sent_all = Arc::new(AtomicBool::new(false));
        let receiver = {
            let sent_all = sent_all.clone();
            std::thread::spawn(move || receive(&socks, &sent_all))
        };
        let sent = Arc::new(AtomicU64::new(0));
        let dsts: Arc<[SocketAddr]> = dsts.into();
        let warm = Arc::new(Barrier::new(out_socks.len() + 1));
        let senders = out_socks
            .into_iter()
            .enumerate()
            .map(|(i, sock)| {
                let (stop, sent, dsts, sending, warm) = (
                    stop.clone(),
                    sent.clone(),
                    dsts.clone(),
                    sending.clone(),
                    warm.clone(),
                );
                std::thread::spawn(move || {
                    // SCHED_FIFO so that other work on a busy box does not
                    // stall the sender: its stalls would look like dark time.
                    let _rt = super::clock::Realtime::enter(super::clock::PROBE_PRIORITY);
                    warm_up(i, &sock, &dsts);
                    warm.wait();
                    send(i, &sock, &dsts, &sending, &stop, &sent)
                })
            })
            .collect();
        warm.wait();
        Ok(DarkProbe {
            stop,
            sent,
            sent_all,
            senders,
            receiver: Some(receiver),
        })
    }

    /// Packets sent so far, all senders.
    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
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

    /// Stops the stream; returns what it sent and received.
    pub fn finish(mut self) -> Result<ProbeRecord, FabricError> {
        self.stop.store(true, Ordering::Relaxed);
        let mut record = ProbeRecord::default();
        for h in self.senders.drain(..) {
            let (sent, busy) = joined(h, "probe sender")?;
            record.sent += sent;
            record.sending.0 += busy;
        }
        self.sent_all.store(true, Ordering::Release);
        if let Some(h) = self.receiver.take() {
            record.arrivals = joined(h, "probe receiver")?;
        }
        record.arrivals.sort_by_key(|a| a.at_ns);
        Ok(record)
    }
}

impl Drop for DarkProbe {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.sent_all.store(true, Ordering::Release);
    }
}

/// The send time a sender's warm-up packet carries, which no measured
/// packet can ([`super::clock::now`] is never 0 on a running box).
const WARM_UP_STAMP: u64 = 0;

/// Sends sender `i`'s first packet, which the receiver does not record.
/// A fresh sender's first packet took 100-150 µs here, against about 10 µs
/// for the next ones: had it been measured, that stall would read as dark
/// time in whatever window it fell. [`DarkProbe::start_with`] returns once
/// every sender has sent its own.
fn warm_up(i: usize, sock: &UdpSocket, dsts: &[SocketAddr]) {
    let mut payload = [0u8; 64];
    payload[..8].copy_from_slice(&WARM_UP_STAMP.to_le_bytes());
    // A loss here is a loss of nothing measured.
    let _ = sock.send_to(&payload, dsts[i % dsts.len()]);
}

/// One sender of a [`DarkProbe`] (number `i`): sends until `stop`. Returns
/// (packets sent, time spent in send calls in ns).
fn send(
    i: usize,
    sock: &UdpSocket,
    dsts: &[SocketAddr],
    sending: &Sending,
    stop: &AtomicBool,
    sent_so_far: &AtomicU64,
) -> io::Result<(u64, u64)> {
    let (mut sent, mut busy, mut n) = (0u64, 0u64, 0u64);
    // What a packet costs this sender, ns: the last one, and a running mean
    // (see `Align`). Nothing is held before the first packet.
    let (mut last_cost, mut cost) = (0u64, 0u64);
    let mut next = Instant::now();
    let mut payload = [0u8; 64];
    while !stop.load(Ordering::Relaxed) {
        if sending.interval.is_zero() {
            if n % 64 == 63 {
                std::thread::yield_now();
            }
        } else {
            let now = Instant::now();
            if next > now {
                std::thread::sleep(next - now);
            }
            next = Instant::now().max(next) + sending.interval;
        }
        // One clock reading opens the gate and stamps the packet: every
        // packet is stamped inside an open gate.
        let mut t = super::clock::now();
        if let Some(gate) = &sending.gate {
            if !gate.is_open(t) {
                std::thread::sleep(GATE_POLL);
                continue;
            }
        }
        let mut aligned = false;
        if let Some(at) = sending.align.as_ref().and_then(|align| align(t, i)) {
            if holds_for(t, at, cost, last_cost) {
                t = spin_until(at);
                aligned = true;
            }
        }
        let d = match &sending.aim {
            Some(aim) => aim(t, n, aligned),
            None => i + n as usize,
        };
        n += 1;
        payload[..8].copy_from_slice(&t.0.to_le_bytes());
        // Drops (ENOBUFS) under load are part of what is measured.
        if sock.send_to(&payload, dsts[d % dsts.len()]).is_ok() {
            sent += 1;
            sent_so_far.fetch_add(1, Ordering::Relaxed);
        }
        last_cost = super::clock::now().0.saturating_sub(t.0);
        busy += last_cost;
        cost = if cost == 0 {
            last_cost
        } else {
            cost - cost / COST_WEIGHT + last_cost / COST_WEIGHT
        };
    }
    Ok((sent, busy))
}

/// Whether a sender at `t` holds its next packet for `at` (see [`Align`]),
/// from what its packets cost it (ns): the running mean and the last one.
/// Held if the next packet might come after `at`: a packet may cost more
/// than the mean, so half a packet more. The smaller of the two costs, so
/// that a holdup (one packet that took long) does not make a long hold,
/// and nothing is held before a first packet has been timed.
fn holds_for(t: Nanos, at: Nanos, cost: u64, last_cost: u64) -> bool {
    at > t && at.0 - t.0 < cost.min(last_cost) * 3 / 2
}

/// A sender's running mean of what a packet costs it weighs the last
/// packet by one in this many.
const COST_WEIGHT: u64 = 8;

/// Spins until the clock reads `at` or later; returns that reading. No
/// pause hint: a hypervisor may take a vCPU that pauses in a loop for one
/// waiting on a lock, and hand it back late.
fn spin_until(at: Nanos) -> Nanos {
    loop {
        let now = super::clock::now();
        if now >= at {
            return now;
        }
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
                if sent == WARM_UP_STAMP {
                    continue;
                }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sender_holds_a_packet_only_for_an_instant_its_next_packet_would_pass() {
        let (t, cost) = (Nanos(1_000_000), 6_000);
        let ahead = |ns: u64| Nanos(t.0 + ns);
        assert!(holds_for(t, ahead(5_000), cost, cost), "sooner than one packet");
        assert!(
            holds_for(t, ahead(8_000), cost, cost),
            "within half a packet more"
        );
        assert!(!holds_for(t, ahead(9_000), cost, cost), "a packet can come first");
        assert!(!holds_for(t, t, cost, cost), "not an instant already here");
        assert!(
            !holds_for(t, ahead(20_000), cost, 50_000),
            "a holdup makes no long hold"
        );
        assert!(!holds_for(t, ahead(1_000), 0, 0), "nothing timed yet");
    }

    #[test]
    fn a_gate_is_open_until_the_time_it_was_last_opened_until() {
        let gate = Gate::default();
        assert!(!gate.is_open(Nanos(0)), "closed from the start");
        gate.open_until(Nanos(100));
        let other = gate.clone();
        assert!(other.is_open(Nanos(99)), "a clone is the same gate");
        assert!(!other.is_open(Nanos(100)), "closed at the time given");
        gate.open_until(Nanos(50));
        assert!(!gate.is_open(Nanos(60)), "opening again narrows it too");
        gate.close();
        assert!(!gate.is_open(Nanos(1)));
    }
}
