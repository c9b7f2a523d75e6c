//! Benchmarks of the OCS datapaths (`ocslab bench ocs` prints them; never
//! timed tests). Each builds its own small fabric of 100 Gbit/s links, so a
//! shaper never holds a probe packet back; the eBPF probe benches leave the
//! links unshaped ([`FabricOptions::unshaped`]), where a shaper would only
//! add to each packet's cost.
//!
//! The probe ([`probe::DarkProbe`]) runs one sender per core under
//! SCHED_FIFO. A packet costs its sender's core the whole emulated path
//! (about 5.6 µs here), so two senders on two cores halve the spacing. The
//! senders take every core while they send, so they send only while a
//! [`probe::Gate`] is open around the instants measured. On eBPF the bench
//! opens the gate and, once the senders stream, writes the move a little
//! ahead of its time ([`super::Ocs::set_matching_at`]) from a thread above
//! their priority; the kernel then makes it with every core probing. A call
//! made at the move would take a core from the probe just where it measures.
//! Since such a move's instants are known ahead, each sender also times one
//! packet to reach its ToR just before the port goes dark and one just after
//! the new circuit is up ([`probe::Align`], `Edges`), and the rotor's probe
//! does the same at every window's edges: the edges are then sampled at the
//! hop's jitter, not at the senders' phase. tc-mirred times its moves in user
//! space, and its call needs the kernel's workers, which senders on every
//! core would starve, so there the probe has one sender and the bench makes
//! the call.
//!
//! - [`dark_time`]: a circuit from rack 0 moves between racks 1 and 2 while
//!   the probe goes to both back to back, seven packets in eight to the
//!   rack the circuit reaches: the old one up to the move, the new one from
//!   there on. The dark time of a move is the gap between the
//!   last packet that crossed the old circuit and the first that crossed
//!   the new one, from the kernel's receive timestamps at the destinations
//!   (TTL tells the path); p99 over every move, and over the moves whose
//!   `down_at` and `up_at` the probe watched (`watched`: the box's timer
//!   tick silences every sender at once now and then). Every packet's path
//!   is also checked against each move's `down_at` and `up_at`
//!   ([`PathCheck`]). Also: how long the reconfiguration call took.
//! - [`rotor`]: a 4-rack rotor schedule followed by the datapath alone,
//!   and by the probe in bursts, which sends most packets to the rack of
//!   the slot in progress. Each probe packet that crossed a circuit is
//!   placed in its pair's slot from its send and receive times; the
//!   figures are the packets on the wrong path ([`PathCheck`]: circuit
//!   packets outside their slots, and packets that took EPS while their
//!   pair's circuit was usable from their send to their receive time),
//!   how far the first and last packet of each slot inside a burst are
//!   from the slot's usable window, and how far from the schedule each
//!   window's edges can be, from the packets that bracket them
//!   (`WindowEdges`), where the probe watched the edge (`watched`).
//! - [`call_latency`]: how long a reconfiguration call spends changing the
//!   kernel, with no probe traffic (δ = 0, so no call waits).
//! - [`circuit_goodput`]: one marked TCP stream through one circuit.
//!
//! Each can run with a [`CpuLoad`]: one busy thread pinned to each core at
//! normal priority, for as long as the measurement.

use super::bench::{bench_topology, histogram, median, need_root, record, BenchError};
use super::{clock, plan, probe, Circuit, Datapath, Fabric, FabricOptions, Schedule};
use crate::{Bps, HostId, Nanos};
use hdrhistogram::Histogram;
use serde::Serialize;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// One busy thread pinned to each core, at normal priority, until dropped.
pub struct CpuLoad {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl CpuLoad {
    /// Starts one spinning thread on each core this process may run on,
    /// pinned there (none if `on` is false). Unpinned, the scheduler may
    /// put two on one core and leave the other to the work measured, which
    /// makes TCP goodput beside them bimodal (17 or 50 Gbit/s a run).
    pub fn start(on: bool) -> CpuLoad {
        let stop = Arc::new(AtomicBool::new(false));
        let cores = if on { allowed_cores() } else { Vec::new() };
        let threads = cores
            .into_iter()
            .map(|core| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    pin_to(core);
                    let mut x = 1u64;
                    while !stop.load(Ordering::Relaxed) {
                        for _ in 0..10_000 {
                            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                        }
                    }
                })
            })
            .collect();
        CpuLoad { stop, threads }
    }
}

/// The cores this process may run on (core 0 alone if that cannot be read).
fn allowed_cores() -> Vec<usize> {
    use nix::sched::{sched_getaffinity, CpuSet};
    use nix::unistd::Pid;
    match sched_getaffinity(Pid::from_raw(0)) {
        Ok(set) => (0..CpuSet::count())
            .filter(|&c| set.is_set(c).unwrap_or(false))
            .collect(),
        Err(_) => vec![0],
    }
}

/// Pins the calling thread to `core`; a failure leaves it unpinned (the
/// load is then as the scheduler spreads it).
fn pin_to(core: usize) {
    use nix::sched::{sched_setaffinity, CpuSet};
    use nix::unistd::Pid;
    let mut set = CpuSet::new();
    if set.set(core).is_ok() {
        let _ = sched_setaffinity(Pid::from_raw(0), &set);
    }
}

impl Drop for CpuLoad {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

const GBIT100: Bps = Bps(100_000_000_000);

/// The bench's fabric: `racks` racks of one host, links of 100 Gbit/s, one
/// OCS port per rack. `unshaped` leaves the links without htb, as the eBPF
/// probe benches do: the box is slower than the links, so a shaper would
/// only add to every probe packet's cost (8.8 against 5.6 µs here).
/// tc-mirred keeps the shapers every other fabric has. Without them its
/// circuits' mirred filters are the box's only software tc filters, so
/// each move took the last one away and put one back, and the kernel
/// switched its software-classifier static key off and on each time
/// (`tcf_proto_count_usesw`: a jump-label patch that interrupts every
/// CPU), which doubled the call (p50 140 against 64 µs, side by side);
/// htb's u32 filters keep the key on.
fn up(racks: u32, datapath: Datapath, unshaped: bool) -> Result<Fabric, BenchError> {
    let topo = bench_topology(racks, 1, GBIT100, GBIT100, 1, GBIT100)?;
    Ok(Fabric::up(
        &topo,
        FabricOptions {
            datapath: Some(datapath),
            unshaped,
            ..Default::default()
        },
    )?)
}

/// Probe senders: one per core, so the probe is as dense as the box allows
/// while its gate is open.
fn senders() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// How long the probe's gate is open before the instants it measures when
/// nothing waits for its senders (the rotor's bursts, tc-mirred's moves):
/// they poll the gate [`probe::GATE_POLL`] apart, and on this box a sender
/// woke up to 250 µs late from that sleep, idle or busy. (tc-mirred's call
/// needs the kernel's workers, and a lead of 1 ms, which its SCHED_FIFO
/// sender holds a core through, took its busy calls' p99 to 26–937 ms.)
pub const GATE_LEAD: Nanos = Nanos(300_000);

/// How long the gate stays open after the last instant it measures.
pub const GATE_TAIL: Nanos = Nanos(100_000);

fn circuit(src_rack: u32, dst_rack: u32) -> Circuit {
    Circuit {
        src_rack,
        dst_rack,
        port: 0,
    }
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

fn pct(h: &Histogram<u64>, q: f64) -> f64 {
    us(h.value_at_quantile(q))
}

/// Where [`dark_time`]'s probe aims: at destination `to` (the rack the
/// circuit reaches after the move) from `at` on, at the other one before;
/// one word (`at` << 1 | `to`), so a sender never reads half of a turn.
#[derive(Debug, Default)]
struct Turn(AtomicU64);

impl Turn {
    /// Turns at `at` to `to` (0 or 1).
    fn set(&self, at: Nanos, to: usize) {
        self.0.store(at.0 << 1 | (to as u64 & 1), Ordering::Relaxed);
    }

    /// Where a packet sent at `t` goes.
    fn aim(&self, t: Nanos) -> usize {
        let word = self.0.load(Ordering::Relaxed);
        let to = (word & 1) as usize;
        if t.0 >= word >> 1 {
            to
        } else {
            1 - to
        }
    }
}

/// Aims [`dark_time`]'s probe: seven packets in eight go to the rack the
/// circuit reaches at their send time, as `turn` says, so the last packets
/// over the old circuit and the first over the new one come densely; the
/// eighth goes to the other destination, unless it is aligned to an edge
/// of the move.
fn aim_at(turn: Arc<Turn>) -> probe::Aim {
    Arc::new(move |t, n, aligned| turn.aim(t) + usize::from(n % 8 == 7 && !aligned))
}

/// The instants [`dark_time`]'s probe aligns packets to around a move:
/// each sender sends one to reach its ToR before the port goes dark and one
/// to reach it after the new circuit is up (see [`probe::Align`]). The
/// packet takes [`TOR_HOP`] from its send call to the ToR's clock reading,
/// which judges it, so a sender sends the hop's longest before the first
/// edge and its shortest before the second, and sender `i` [`EDGE_STAGGER`]
/// × `i` further out: one sender held back there, or a hop longer than
/// the range, leaves the other's packet close by. Two words written apart:
/// a sender that reads them mid-write aligns one packet amiss, no more.
#[derive(Debug, Default)]
struct Edges {
    /// When the port goes dark (ns, the ToR's clock).
    down_at: AtomicU64,
    /// When the new circuit is up.
    up_at: AtomicU64,
}

impl Edges {
    /// Aligns to a move dark at `down_at` and up at `up_at`.
    fn set(&self, down_at: Nanos, up_at: Nanos) {
        self.down_at.store(down_at.0, Ordering::Relaxed);
        self.up_at.store(up_at.0, Ordering::Relaxed);
    }

    /// The next instant ahead of `t` at which sender `i` sends: the last
    /// send meant to cross the old circuit, then the first meant to cross
    /// the new one.
    fn next(&self, t: Nanos, i: usize) -> Option<Nanos> {
        let down_at = Nanos(self.down_at.load(Ordering::Relaxed));
        let up_at = Nanos(self.up_at.load(Ordering::Relaxed));
        [send_before(down_at, i), send_after(up_at, i)]
            .into_iter()
            .find(|&at| at > t)
    }
}

/// When sender `i` of a probe sends the last packet meant to reach its ToR
/// before `edge` (see [`Edges`]).
fn send_before(edge: Nanos, i: usize) -> Nanos {
    Nanos(edge.0.saturating_sub(TOR_HOP.1 .0 + i as u64 * EDGE_STAGGER.0))
}

/// When sender `i` sends the first packet meant to reach its ToR after
/// `edge`.
fn send_after(edge: Nanos, i: usize) -> Nanos {
    Nanos((edge.0 + i as u64 * EDGE_STAGGER.0).saturating_sub(TOR_HOP.0 .0))
}

/// From a probe packet's send call to its ToR's clock reading, shortest
/// and longest: 2.2–4.0 µs of kernel path here (a veth, a softirq). From
/// the timed packets themselves, in the runs behind docs/fabric.md: those
/// sent 2.2 µs before a circuit came up crossed it in most moves of every
/// run (the new edge's p50 is −2.2 µs), and those sent 3.2 µs before a
/// port went dark crossed in most moves of some runs and not of others.
pub const TOR_HOP: (Nanos, Nanos) = (Nanos(2_200), Nanos(4_000));

/// How much further from an edge each next sender of the probe sends, so
/// that it covers the hop's tail and the other sender's holdups.
pub const EDGE_STAGGER: Nanos = Nanos(2_000);

/// Circuit arrivals at each edge of a move that time the probe's spacing
/// there.
const EDGE_PACKETS: usize = 8;

/// A probe's packets checked against when their circuits were usable. The
/// datapath decides a packet's path at some instant between its send time
/// and its kernel receive timestamp, so a packet is on the wrong path only
/// if no instant of that span could have given it: one that crossed a
/// circuit when none to its rack was usable at any of them, or one that
/// took EPS when a circuit to its rack was usable at all of them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PathCheck {
    /// Probe packets that crossed a circuit.
    pub circuit_packets: usize,
    /// Of those, packets no instant of whose span had a circuit to their
    /// rack usable: they crossed a dark port.
    pub circuit_outside: usize,
    /// Probe packets that took EPS.
    pub eps_packets: usize,
    /// Of those, packets every instant of whose span had a circuit to
    /// their rack usable: the circuit was not there when it should have been.
    pub eps_inside: usize,
    /// How far the worst of the packets on the wrong path lay from an
    /// instant that would have made its path right, ns: its span's
    /// distance from its rack's nearest usable span (circuit), or its depth
    /// inside one (EPS). The datapath's edge was at least that far off.
    /// Measured by [`dark_time`]; 0 in [`rotor`]'s figures.
    pub wrong_by_ns: u64,
}

impl PathCheck {
    /// Counts a packet that crossed a circuit, `outside` every usable span.
    fn count_circuit(&mut self, outside: bool) {
        self.circuit_packets += 1;
        self.circuit_outside += usize::from(outside);
    }

    /// Counts a packet that took EPS, `inside` one usable span.
    fn count_eps(&mut self, inside: bool) {
        self.eps_packets += 1;
        self.eps_inside += usize::from(inside);
    }

    /// Packets on the wrong path.
    pub fn wrong(&self) -> usize {
        self.circuit_outside + self.eps_inside
    }
}

/// When a circuit from a probe's rack to each of its destinations was
/// usable while one circuit moved between them (as in [`dark_time`]), as
/// (destination, from, until): destination `first.0` from `first.1`, then
/// each move's from its `up_at` to the next move's `down_at` (the last
/// one's for good). `moves` are (destination, down_at, up_at) in order.
pub fn usable_spans(first: (usize, u64), moves: &[(usize, u64, u64)]) -> Vec<(usize, u64, u64)> {
    let until = |k: usize| moves.get(k).map_or(u64::MAX, |m| m.1);
    std::iter::once((first.0, first.1, until(0)))
        .chain(
            moves
                .iter()
                .enumerate()
                .map(|(k, &(dst, _, up_at))| (dst, up_at, until(k + 1))),
        )
        .collect()
}

/// Checks each of `arrivals` against `spans` (see [`usable_spans`]).
pub fn check_paths(arrivals: &[probe::Arrival], spans: &[(usize, u64, u64)]) -> PathCheck {
    let mut check = PathCheck::default();
    for a in arrivals {
        let mine = spans.iter().filter(|s| s.0 == a.dst);
        let wrong_by = if a.over_circuit() {
            // Its span's distance from each usable span (0: they meet).
            let apart = |&(_, from, until): &(usize, u64, u64)| {
                from.saturating_sub(a.seen)
                    .max((a.sent + 1).saturating_sub(until))
            };
            let by = mine.map(apart).min();
            check.count_circuit(by != Some(0));
            by.unwrap_or(0)
        } else {
            // How deep inside a usable span its whole span lies.
            let inside = |&(_, from, until): &(usize, u64, u64)| {
                (a.sent >= from && a.seen < until).then(|| (a.sent - from).min(until - 1 - a.seen) + 1)
            };
            let by = mine.filter_map(inside).max();
            check.count_eps(by.is_some());
            by.unwrap_or(0)
        };
        check.wrong_by_ns = check.wrong_by_ns.max(wrong_by);
    }
    check
}

/// What one [`dark_time`] run is.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct DarkSpec {
    /// The datapath.
    pub datapath: Datapath,
    /// δ.
    pub delay: Nanos,
    /// Moves measured (after two unmeasured ones).
    pub rounds: u32,
    /// Probe interval (zero: back to back).
    pub interval_us: u64,
    /// Whether every core is kept busy meanwhile.
    pub load: bool,
}

/// What [`dark_time`] measured.
#[derive(Clone, Debug, Serialize)]
pub struct DarkFigures {
    /// The run.
    pub spec: DarkSpec,
    /// δ, µs.
    pub delay_us: f64,
    /// Dark gaps the probe saw (one per measured move, when it saw them all).
    pub gaps_measured: usize,
    /// The probe's packets on the right and the wrong path, for when each
    /// move's circuits were usable (`down_at`, `up_at`): whatever its
    /// timing shows of the gaps, a packet that crossed a port while it was
    /// dark shows here.
    pub paths: PathCheck,
    /// Packets to a move's new rack that took EPS inside its dark time
    /// (send to receive): marked traffic falling back while the port is
    /// dark, and the probe looking inside the dark time.
    pub eps_while_dark: usize,
    /// Moves the probe watched at both edges (`down_at` and `up_at` of
    /// the call that made it): no gap over [`WATCH_GAP`] between its
    /// packets' send times within [`WATCH_SPAN`] of either. At the others
    /// every sender stalled at once: the box's timer tick, or after a long
    /// δ the senders' first packets over the new circuit, whose path is
    /// cold (6–9 µs in the send call after 10 ms).
    pub watched_moves: usize,
    /// Dark time p99 over the watched moves, µs.
    pub dark_p99_watched_us: f64,
    /// Whether that p99 is within the target.
    pub watched_within_target: bool,
    /// Shortest dark time, µs.
    pub dark_min_us: f64,
    /// Dark time p50, µs.
    pub dark_p50_us: f64,
    /// Dark time p99, µs.
    pub dark_p99_us: f64,
    /// Longest dark time, µs.
    pub dark_max_us: f64,
    /// The target: p99 within max(1 % of δ, 10 µs) of δ.
    pub target_us: f64,
    /// Whether |p99 − δ| is within the target.
    pub within_target: bool,
    /// How long the reconfiguration call spent changing the kernel, p50, µs.
    pub call_p50_us: f64,
    /// The same, p99.
    pub call_p99_us: f64,
    /// How late the new circuits were applied after δ, p99, µs (0 on eBPF,
    /// where the kernel enforces `up_at`).
    pub setup_late_p99_us: f64,
    /// Median over moves of the mean time between circuit arrivals at the
    /// gap's two edges (the last 8 over the old circuit, the first 8 over
    /// the new one), µs: the resolution.
    pub probe_spacing_us: f64,
    /// Probe senders (one per core).
    pub probe_senders: usize,
    /// Probe packets sent.
    pub probe_sent: u64,
    /// Mean time a probe packet's send call took, µs: what one packet
    /// costs a core through the emulated path (the floor of one sender's
    /// spacing).
    pub probe_send_us: f64,
    /// Probe packets received while measuring.
    pub probe_received: usize,
    /// Every dark gap, µs, in the order of the moves.
    pub gaps_us: Vec<f64>,
    /// Every dark gap between the send times of the same two packets, µs.
    pub gaps_sent_us: Vec<f64>,
    /// For each move, the longest time the probe was silent at the gap's
    /// edges (no arrival at all), µs.
    pub silences_us: Vec<f64>,
    /// Where each gap's excess over δ comes from (eBPF), µs.
    pub excess: Option<GapExcess>,
}

/// A measured gap is δ + (the last old-circuit packet's send to the move,
/// `down_at`) + (`up_at` to the first new-circuit packet's send) + (how
/// much longer the new packet took from send to receive than the old one).
/// The first two are the probe's sampling at the edges and the hop from a
/// host to its ToR, the third the emulated path's jitter; none is the
/// datapath's, which keeps the port dark from `down_at` to `up_at` = δ
/// after it. p50 and p99 over the moves
/// matched to the calls that made them, µs (signed: a packet may leave its
/// host just before `up_at` and meet the ToR after it).
#[derive(Clone, Debug, Serialize)]
pub struct GapExcess {
    /// Moves matched to their call.
    pub moves: usize,
    /// `dark_at` − the last old-circuit packet's send time: p50, p99.
    pub old_edge_us: (f64, f64),
    /// The first new-circuit packet's send time − `up_at`: p50, p99.
    pub new_edge_us: (f64, f64),
    /// Its send-to-receive time − the old packet's: p50, p99.
    pub transit_us: (f64, f64),
}

/// The `q` quantile of `v` (sorted in place), µs from ns; 0 when empty.
fn quantile_us(v: &mut [i64], q: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_unstable();
    let i = ((v.len() as f64 * q).ceil() as usize).clamp(1, v.len()) - 1;
    v[i] as f64 / 1_000.0
}

/// [`GapExcess`] of `moves`, each matched to the call (destination,
/// `dark_at`, `up_at`) that made it ([`matched_call`]); a move matched to
/// none is left out.
fn gap_excess(moves: &[Move], calls: &[(usize, u64, u64)]) -> GapExcess {
    let (mut old, mut new, mut transit) = (Vec::new(), Vec::new(), Vec::new());
    for m in moves {
        let Some((_, dark_at, up_at)) = matched_call(m, calls) else {
            continue;
        };
        let ns = |a: u64, b: u64| a as i64 - b as i64;
        old.push(ns(dark_at, m.old.0));
        new.push(ns(m.new.0, up_at));
        transit.push(ns(m.new.1, m.new.0) - ns(m.old.1, m.old.0));
    }
    let q = |v: &mut Vec<i64>| (quantile_us(v, 0.5), quantile_us(v, 0.99));
    GapExcess {
        moves: old.len(),
        old_edge_us: q(&mut old),
        new_edge_us: q(&mut new),
        transit_us: q(&mut transit),
    }
}

/// The call (destination, `dark_at`, `up_at`) that made move `m`: the one
/// whose `up_at` is the latest at most [`EDGE_SLACK`] after its first new
/// packet's send time, unless its old packet left more than that after the
/// call's `dark_at` (then `m` is matched to the wrong call: `None`).
fn matched_call(m: &Move, calls: &[(usize, u64, u64)]) -> Option<(usize, u64, u64)> {
    let i = calls.partition_point(|&(_, _, up_at)| up_at <= m.new.0 + EDGE_SLACK.0);
    let &call = calls.get(i.checked_sub(1)?)?;
    (m.old.0 <= call.1 + EDGE_SLACK.0).then_some(call)
}

/// How far a gap's edge packet may be sent on the wrong side of its call's
/// instants and still be matched to it.
const EDGE_SLACK: Nanos = Nanos(50_000);

/// Reconfigurations made before measuring (one-time kernel allocations).
const WARMUP_ROUNDS: u32 = 2;

/// Moves a circuit from rack 0 between racks 1 and 2 and measures the dark
/// time packets see (see the module doc). The probe runs one sender per
/// core (one on tc-mirred), dense from before each move (eBPF: from
/// [`MOVE_LEAD`] before, once they stream; tc-mirred: [`GATE_LEAD`]) to
/// [`GATE_TAIL`] after the new circuit is up, and quiet in between. Needs
/// root.
pub fn dark_time(spec: DarkSpec) -> Result<DarkFigures, BenchError> {
    need_root()?;
    let ebpf = spec.datapath == Datapath::Ebpf;
    // tc-mirred keeps its shapers: see `up`.
    let f = up(3, spec.datapath, ebpf)?;
    let ocs = f.ocs()?;
    ocs.set_matching_with_delay(&[circuit(0, 1)], Nanos(0))?;
    // Rack 1 (destination 0) is reached now; the aim follows each move.
    let (turn, edges) = (Arc::new(Turn::default()), Arc::new(Edges::default()));
    let gate = probe::Gate::default();
    // tc-mirred's call needs the kernel's workers, which probe senders on
    // every core would starve: one sender there, and the call made here.
    let senders = if ebpf { senders() } else { 1 };
    // Only eBPF's moves are known ahead, to the ns.
    let align: Option<probe::Align> = ebpf.then(|| {
        let edges = edges.clone();
        Arc::new(move |t, i| edges.next(t, i)) as probe::Align
    });
    let probe = probe::DarkProbe::start_with(
        &f,
        HostId::new(0, 0),
        &[HostId::new(1, 0), HostId::new(2, 0)],
        plan::OCS_TOS,
        probe::Sending {
            interval: Duration::from_micros(spec.interval_us),
            aim: Some(aim_at(turn.clone())),
            senders,
            gate: Some(gate.clone()),
            align,
        },
    )?;
    let load = CpuLoad::start(spec.load);
    let settle = Duration::from_nanos(spec.delay.0 * 2).max(Duration::from_millis(2));
    let (mut call, mut late) = (histogram()?, histogram()?);
    std::thread::sleep(settle);
    // Each measured move: where the circuit went and when it was dark,
    // (destination, down_at, up_at).
    let mut moved = Vec::new();
    let mut measured_from = (0, 0);
    for k in 0..spec.rounds + WARMUP_ROUNDS {
        let to = [circuit(0, if k % 2 == 0 { 2 } else { 1 })];
        let new_aim = to[0].dst_rack as usize - 1;
        let rec = if ebpf {
            // Above the senders' priority, so that neither they nor the
            // load hold this thread back: the gate opens, and once the
            // senders stream, the move is written MOVE_LEAD ahead. So the
            // call takes a core from the probe only well before the move,
            // and the move never comes before the senders do.
            let rt = clock::Realtime::enter(clock::RECONFIG_PRIORITY);
            gate.open_until(Nanos(clock::now().0 + STREAM_WAIT.0));
            stream(&probe, senders);
            let move_at = Nanos(clock::now().0 + MOVE_LEAD.0);
            turn.set(move_at, new_aim);
            let rec = ocs.set_matching_at(&to, move_at, spec.delay)?;
            edges.set(move_at, rec.up_at());
            let until = Nanos(rec.up_at().0 + GATE_TAIL.0);
            gate.open_until(until);
            drop(rt);
            clock::sleep_until(until);
            rec
        } else {
            gate.open_until(Nanos(u64::MAX));
            clock::sleep_until(Nanos(clock::now().0 + GATE_LEAD.0));
            // The call returns only once the circuit is up: aimed first.
            turn.set(clock::now(), new_aim);
            let rec = ocs.set_matching_with_delay(&to, spec.delay)?;
            let until = Nanos(rec.up_at().0.max(clock::now().0) + GATE_TAIL.0);
            gate.open_until(until);
            clock::sleep_until(until);
            rec
        };
        gate.close();
        if k >= WARMUP_ROUNDS {
            record(&mut call, rec.call.0.max(1))?;
            record(&mut late, rec.setup_late.0.max(1))?;
            if let Some(down) = rec.events.iter().find(|e| !e.up) {
                moved.push((new_aim, down.at.0, rec.up_at().0));
            }
        } else {
            measured_from = (new_aim, rec.up_at().0);
        }
        // Quiet on the new circuit before the next move.
        std::thread::sleep(settle);
    }
    drop(load);
    let probed = probe.finish()?;
    let probe_send_us = us(probed.sending.0) / probed.sent.max(1) as f64;
    f.down()?;
    let mut arrivals = probed.arrivals;
    arrivals.retain(|a| a.sent >= measured_from.1);
    let paths = check_paths(&arrivals, &usable_spans(measured_from, &moved));
    let eps_while_dark = arrivals
        .iter()
        .filter(|a| !a.over_circuit())
        .filter(|a| {
            moved
                .iter()
                .any(|&(dst, down_at, up_at)| a.dst == dst && a.sent >= down_at && a.seen < up_at)
        })
        .count();
    let moves = dark_moves(&arrivals);
    let spacing = median(moves.iter().filter_map(|m| m.spacing_ns).map(us).collect());
    let sends = send_times(arrivals.iter(), 0);
    let (mut dark, mut dark_watched) = (histogram()?, histogram()?);
    for m in &moves {
        record(&mut dark, m.dark_ns)?;
        let both_edges = matched_call(m, &moved)
            .is_some_and(|(_, down_at, up_at)| watched(&sends, down_at) && watched(&sends, up_at));
        if both_edges {
            record(&mut dark_watched, m.dark_ns)?;
        }
    }
    let delay_us = us(spec.delay.0);
    let target_us = (delay_us * 0.01).max(10.0);
    let p99 = pct(&dark, 0.99);
    Ok(DarkFigures {
        spec,
        delay_us,
        gaps_measured: moves.len(),
        paths,
        eps_while_dark,
        watched_moves: dark_watched.len() as usize,
        dark_p99_watched_us: pct(&dark_watched, 0.99),
        watched_within_target: !dark_watched.is_empty()
            && (pct(&dark_watched, 0.99) - delay_us).abs() <= target_us,
        dark_min_us: us(dark.min()),
        dark_p50_us: pct(&dark, 0.5),
        dark_p99_us: p99,
        dark_max_us: us(dark.max()),
        target_us,
        within_target: !moves.is_empty() && (p99 - delay_us).abs() <= target_us,
        call_p50_us: pct(&call, 0.5),
        call_p99_us: pct(&call, 0.99),
        setup_late_p99_us: pct(&late, 0.99),
        probe_spacing_us: spacing,
        probe_senders: senders,
        probe_sent: probed.sent,
        probe_send_us,
        probe_received: arrivals.len(),
        gaps_us: moves.iter().map(|m| us(m.dark_ns)).collect(),
        gaps_sent_us: moves.iter().map(|m| us(m.dark_sent_ns)).collect(),
        silences_us: moves.iter().map(|m| us(m.silence_ns)).collect(),
        excess: ebpf.then(|| gap_excess(&moves, &moved)),
    })
}

/// How long before an eBPF move [`dark_time`] writes it, the probe's
/// senders streaming: longer than the call (p99 under 60 µs with the
/// probe sending), so the move never happens at the write.
pub const MOVE_LEAD: Nanos = Nanos(300_000);

/// How long [`dark_time`] waits for its probe's senders to stream once
/// their gate opens (they poll it [`probe::GATE_POLL`] apart, and woke up
/// to 250 µs late here) before it moves anyway.
const STREAM_WAIT: Nanos = Nanos(20_000_000);

/// Returns once each of the probe's `senders` has sent a few packets
/// (on average), or after [`STREAM_WAIT`].
fn stream(probe: &probe::DarkProbe, senders: usize) {
    let (from, deadline) = (probe.sent(), clock::now().0 + STREAM_WAIT.0);
    while probe.sent() < from + 4 * senders as u64 && clock::now().0 < deadline {
        std::thread::sleep(Duration::from_micros(20));
    }
}

/// One circuit move as the probe saw it.
struct Move {
    /// From the last arrival over the old circuit to the first over the new.
    dark_ns: u64,
    /// The same two packets' send times apart.
    dark_sent_ns: u64,
    /// The longer of the two times with no arrival at all (either path,
    /// either receiver) at the gap's edges, after its first packet and
    /// before its last: long when the probe itself stalled there.
    silence_ns: u64,
    /// The mean time between circuit arrivals at the gap's edges: the last
    /// [`EDGE_PACKETS`] at the old rack and the first at the new one
    /// (`None` when either edge has fewer than two).
    spacing_ns: Option<u64>,
    /// The last old-circuit packet: (sent, seen), CLOCK_MONOTONIC.
    old: (u64, u64),
    /// The first new-circuit packet: the same.
    new: (u64, u64),
}

/// The mean time between the first `EDGE_PACKETS` of `edge` (arrival times
/// walking away from a gap), if it has two.
fn edge_spacing(edge: impl Iterator<Item = u64>) -> Option<(u64, u64)> {
    let mut edge = edge.take(EDGE_PACKETS);
    let first = edge.next()?;
    let (last, n) = edge.fold((first, 0u64), |(_, n), t| (t, n + 1));
    (n > 0).then(|| (first.abs_diff(last), n))
}

/// The moves in `arrivals`: each change of the receiver reached over a
/// circuit, in the order the packets were sent (about the order their ToR
/// judged them in), so that an old-circuit packet the box delivered after
/// the first new-circuit one makes no move of its own. A lone packet
/// between two runs to the other receiver is a stray, not two moves: one
/// the box held between its host and its ToR for longer than δ, so that
/// the ToR judged it on the other side of a move from its send time. A
/// move's gap runs from the last kernel receive time of the circuit
/// packets before it to the first of those after it (0 when they overlap).
fn dark_moves(arrivals: &[probe::Arrival]) -> Vec<Move> {
    let mut all: Vec<&probe::Arrival> = arrivals.iter().collect();
    all.sort_by_key(|a| a.at_ns);
    let mut by_send: Vec<usize> = (0..all.len()).filter(|&i| all[i].over_circuit()).collect();
    by_send.sort_by_key(|&i| (all[i].sent, i));
    // Runs of one destination in send order: (first, last) index into
    // `all`, i.e. the run's earliest and latest arrival, and its packets.
    let mut runs: Vec<(usize, usize, usize)> = Vec::new();
    for i in by_send {
        match runs.last_mut() {
            Some(run) if all[run.0].dst == all[i].dst => *run = (run.0.min(i), run.1.max(i), run.2 + 1),
            _ => {
                // A lone packet followed by one to the run before it.
                let lone = runs.len() >= 2 && runs[runs.len() - 1].2 == 1;
                if lone && all[runs[runs.len() - 2].0].dst == all[i].dst {
                    runs.pop();
                    if let Some(run) = runs.last_mut() {
                        *run = (run.0.min(i), run.1.max(i), run.2 + 1);
                    }
                } else {
                    runs.push((i, i, 1));
                }
            }
        }
    }
    let at = |b: &&probe::Arrival, dst: usize| b.over_circuit() && b.dst == dst;
    runs.windows(2)
        .map(|w| {
            let (l, i) = (w[0].1, w[1].0);
            let (last, first) = (all[l], all[i]);
            // At the two edges of the gap: after the last old packet and
            // before the first new one.
            let after = all.get(l + 1).map_or(0, |b| b.at_ns.saturating_sub(last.at_ns));
            let before = i
                .checked_sub(1)
                .map_or(0, |p| first.at_ns.saturating_sub(all[p].at_ns));
            let old = edge_spacing(
                all[..=l]
                    .iter()
                    .rev()
                    .filter(|b| at(b, last.dst))
                    .map(|b| b.at_ns),
            );
            let new = edge_spacing(all[i..].iter().filter(|b| at(b, first.dst)).map(|b| b.at_ns));
            Move {
                dark_ns: first.at_ns.saturating_sub(last.at_ns),
                dark_sent_ns: first.sent.saturating_sub(last.sent),
                silence_ns: after.max(before),
                spacing_ns: old.zip(new).map(|((t0, n0), (t1, n1))| (t0 + t1) / (n0 + n1)),
                old: (last.sent, last.seen),
                new: (first.sent, first.seen),
            }
        })
        .collect()
}

/// What one [`rotor`] run is.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct RotorSpec {
    /// Slot length.
    pub slot: Nanos,
    /// δ: the dark time at the start of a slot for a port that changes.
    pub delay: Nanos,
    /// How long to follow it.
    pub duration_ms: u64,
    /// Whether every core is kept busy meanwhile.
    pub load: bool,
}

/// What [`rotor`] measured.
#[derive(Clone, Debug, Serialize)]
pub struct RotorFigures {
    /// The run.
    pub spec: RotorSpec,
    /// Racks (rack r reaches r+1, r+2, r+3 in turn).
    pub racks: u32,
    /// Slot windows of rack 0's three pairs in which a circuit packet arrived.
    pub windows_seen: usize,
    /// Of those, the windows inside a burst of the probe, from the slot's
    /// start to its end: the ones whose edges are measured.
    pub windows_measured: usize,
    /// Probe senders (one per core).
    pub probe_senders: usize,
    /// The probe's packets on the right and the wrong path, for the
    /// pairs' usable windows.
    pub paths: PathCheck,
    /// |first packet's send time − window open|, p50 / p99 / max, µs.
    pub open_error_us: [f64; 3],
    /// window close − last packet's send time, p50 / p99 / max, µs.
    pub close_error_us: [f64; 3],
    /// Of the measured windows' openings and closings, those the probe
    /// watched (`watched`: no gap over [`WATCH_GAP`] between its packets'
    /// send times within [`WATCH_SPAN`] of the edge) and bracketed
    /// (`WindowEdges`). The others fell in a stall of every sender at once,
    /// such as the box's timer tick.
    pub edges_watched: [usize; 2],
    /// Over the watched openings: how far the opening could be from the
    /// schedule's, given its bracket (the farther end), p50 / p99 / max, µs.
    pub watched_open_bound_us: [f64; 3],
    /// The same over the watched closings.
    pub watched_close_bound_us: [f64; 3],
    /// Median over windows of the mean time between the circuit packets
    /// sent in one window, µs: the resolution at its edges.
    pub probe_spacing_us: f64,
    /// A circuit packet's send time to its receive timestamp, p50, µs. The
    /// datapath decides in between, so send-time errors include part of it.
    pub transit_p50_us: f64,
    /// How long setting the schedule took, µs, to its epoch (at least
    /// [`SCHEDULE_LEAD`](super::ebpf::SCHEDULE_LEAD)).
    pub set_schedule_us: f64,
}

/// Follows a 4-rack rotor (three slots: rack r reaches r+k in slot k−1)
/// and checks where rack 0's probe packets crossed (see the module doc).
/// eBPF only. Needs root.
pub fn rotor(spec: RotorSpec) -> Result<RotorFigures, BenchError> {
    need_root()?;
    let racks = 4;
    let f = up(racks, Datapath::Ebpf, true)?;
    let ocs = f.ocs()?;
    let schedule = rotor_schedule(racks, spec.slot, spec.delay)?;
    let to: Vec<HostId> = (1..racks).map(|r| HostId::new(r, 0)).collect();
    let load = CpuLoad::start(spec.load);
    let t0 = clock::now();
    let epoch = ocs.set_schedule(&schedule)?;
    let set_schedule_us = us(clock::now().0 - t0.0);
    let gate = probe::Gate::default();
    let senders = senders();
    let probe = probe::DarkProbe::start_with(
        &f,
        HostId::new(0, 0),
        &to,
        plan::OCS_TOS,
        probe::Sending {
            aim: Some(follow(schedule.clone(), epoch, Nanos(spec.delay.0 / 2))),
            senders,
            gate: Some(gate.clone()),
            align: Some(window_edges(schedule.clone(), epoch)),
            ..probe::Sending::default()
        },
    )?;
    // Bursts of the probe with pauses between, in which its receiver and
    // the box's other work run; each burst is dense from GATE_LEAD on.
    let rt = clock::Realtime::enter(clock::RECONFIG_PRIORITY);
    let end = clock::now().0 + spec.duration_ms * 1_000_000;
    let mut bursts = Vec::new();
    while clock::now().0 < end {
        let from = clock::now().0;
        let until = from + ROTOR_BURST.0;
        gate.open_until(Nanos(until));
        bursts.push((from + GATE_LEAD.0, until));
        clock::sleep_until(Nanos(until + ROTOR_PAUSE.0));
    }
    gate.close();
    drop(rt);
    drop(load);
    let arrivals = probe.finish()?.arrivals;
    f.down()?;

    let period = schedule.period().0;
    // Per window: the circuit packets' first and last send times, how many,
    // and the first receive time.
    let mut windows: std::collections::BTreeMap<(u64, usize), CircuitSpan> = Default::default();
    // Per slot (its rack's destination index), the packets to that rack
    // that took EPS, as (sent, seen).
    let mut fell_back: Vec<Vec<(u64, u64)>> = vec![Vec::new(); to.len()];
    let mut paths = PathCheck::default();
    let mut transit = histogram()?;
    for a in arrivals.iter().filter(|a| a.sent >= epoch.0) {
        let want = a.dst as u32 + 1;
        let (sent, seen) = (a.sent - epoch.0, a.seen - epoch.0);
        if !a.over_circuit() {
            let inside = schedule.holding_window(0, 0, want, Nanos(sent), Nanos(seen));
            paths.count_eps(inside.is_some());
            if let Some(v) = fell_back.get_mut(a.dst) {
                v.push((sent, seen));
            }
            continue;
        }
        record(&mut transit, seen.saturating_sub(sent).max(1))?;
        let window = schedule.usable_window(0, 0, want, Nanos(sent), Nanos(seen));
        paths.count_circuit(window.is_none());
        if let Some(w) = window {
            windows
                .entry(w)
                .and_modify(|c| c.add(sent, seen))
                .or_insert(CircuitSpan::new(sent, seen));
        }
    }
    for v in &mut fell_back {
        v.sort_unstable();
    }
    let sends = send_times(arrivals.iter().filter(|a| a.sent >= epoch.0), epoch.0);
    let (mut open, mut close, mut spacing) = (histogram()?, histogram()?, histogram()?);
    let (mut open_bound, mut close_bound) = (histogram()?, histogram()?);
    let mut edges_watched = [0, 0];
    let mut windows_measured = 0;
    for (&(k, s), c) in &windows {
        let start = k * period + schedule.slot_start(s).0;
        let open_at = start + schedule.dark(k, s, 0).0;
        let close_at = start + schedule.slots()[s].length.0;
        // Only slots the probe was dense through, from start to end.
        let (from, to) = (epoch.0 + start, epoch.0 + close_at);
        if !bursts.iter().any(|&(b0, b1)| b0 <= from && to <= b1) {
            continue;
        }
        windows_measured += 1;
        if c.n > 1 {
            record(&mut spacing, ((c.last_sent - c.first_sent) / (c.n - 1)).max(1))?;
        }
        record(&mut open, c.first_sent.abs_diff(open_at).max(1))?;
        record(&mut close, close_at.saturating_sub(c.last_sent).max(1))?;
        let edges = WindowEdges::bracket(c, &fell_back[s], start, period);
        if let (true, Some(b)) = (watched(&sends, open_at), edges.open) {
            edges_watched[0] += 1;
            record(&mut open_bound, farthest(open_at, b).max(1))?;
        }
        if let (true, Some(b)) = (watched(&sends, close_at), edges.close) {
            edges_watched[1] += 1;
            record(&mut close_bound, farthest(close_at, b).max(1))?;
        }
    }
    let three = |h: &Histogram<u64>| [pct(h, 0.5), pct(h, 0.99), us(h.max())];
    Ok(RotorFigures {
        spec,
        racks,
        windows_seen: windows.len(),
        windows_measured,
        probe_senders: senders,
        paths,
        open_error_us: three(&open),
        close_error_us: three(&close),
        edges_watched,
        watched_open_bound_us: three(&open_bound),
        watched_close_bound_us: three(&close_bound),
        probe_spacing_us: pct(&spacing, 0.5),
        transit_p50_us: pct(&transit, 0.5),
        set_schedule_us,
    })
}

/// The circuit packets of one rotor window: send times of the first and
/// last, how many, and the first receive time.
#[derive(Clone, Copy, Debug)]
struct CircuitSpan {
    first_sent: u64,
    last_sent: u64,
    n: u64,
    first_seen: u64,
}

impl CircuitSpan {
    fn new(sent: u64, seen: u64) -> CircuitSpan {
        CircuitSpan {
            first_sent: sent,
            last_sent: sent,
            n: 1,
            first_seen: seen,
        }
    }

    fn add(&mut self, sent: u64, seen: u64) {
        self.first_sent = self.first_sent.min(sent);
        self.last_sent = self.last_sent.max(sent);
        self.n += 1;
        self.first_seen = self.first_seen.min(seen);
    }
}

/// Where a rotor window's edges lay, as its probe packets bracket them, each
/// as (after, by). The datapath decides a packet's path at some instant
/// between its send and its receive time: over the circuit if it is usable
/// then, else EPS. So the circuit became usable by the time the first
/// packet that crossed it was received, and after every packet to its rack
/// that fell back to EPS and was received before the last crossing was
/// sent (that packet was decided before the closing, so before the
/// opening). It stopped being usable after the last crossing was sent, and
/// by the time the first packet to its rack sent after the first crossing
/// was received (decided after the opening, so after the closing) fell
/// back. `None`: no packet fell back on that side.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct WindowEdges {
    open: Option<(u64, u64)>,
    close: Option<(u64, u64)>,
}

impl WindowEdges {
    /// The brackets of a window that starts its slot at `start` from its
    /// circuit packets `c` and the packets to its rack that took EPS
    /// (`fell_back`, (sent, seen) sorted), looking up to a `period` after
    /// the slot's start.
    fn bracket(c: &CircuitSpan, fell_back: &[(u64, u64)], start: u64, period: u64) -> WindowEdges {
        let sent_in = |from: u64, to: u64| {
            let i = fell_back.partition_point(|&(sent, _)| sent < from);
            fell_back[i..].iter().take_while(move |&&(sent, _)| sent < to)
        };
        let open = sent_in(start, c.last_sent)
            .filter(|&&(_, seen)| seen <= c.last_sent)
            .map(|&(sent, _)| sent)
            .max()
            .map(|after| (after, c.first_seen));
        let close = sent_in(c.first_seen, start + period)
            .map(|&(_, seen)| seen)
            .min()
            .map(|by| (c.last_sent, by));
        WindowEdges { open, close }
    }
}

/// How far an edge bracketed by (after, by] can be from `at`: the farther end.
fn farthest(at: u64, (after, by): (u64, u64)) -> u64 {
    at.abs_diff(after).max(at.abs_diff(by))
}

/// The longest gap between the probe's packets at an edge it watched: the
/// probe's spacing bound (`ocslab bench ocs` promises at most 5 µs).
pub const WATCH_GAP: Nanos = Nanos(5_000);

/// How far either side of an edge the probe must be dense for the edge to
/// count as watched: the accuracy the rotor's edges are held to.
pub const WATCH_SPAN: Nanos = Nanos(10_000);

/// The probe's packets' send times, sorted, less `offset` (none may be
/// earlier): what [`watched`] reads.
fn send_times<'a>(arrivals: impl Iterator<Item = &'a probe::Arrival>, offset: u64) -> Vec<u64> {
    let mut sends: Vec<u64> = arrivals.map(|a| a.sent - offset).collect();
    sends.sort_unstable();
    sends
}

/// Whether the probe, whose packets were sent at `sends` (sorted), watched
/// the instant `edge`: no gap over [`WATCH_GAP`] between consecutive sends
/// (the last one before the span and the first after it included) overlaps
/// [`WATCH_SPAN`] either side of `edge`. The box's timer tick stops every
/// core at once for 20–90 µs every 4 ms here (HZ = 250, in a VM); an edge
/// inside such a stall is seen by no sender, whatever the datapath does.
fn watched(sends: &[u64], edge: u64) -> bool {
    let (from, to) = (edge.saturating_sub(WATCH_SPAN.0), edge + WATCH_SPAN.0);
    let i = sends.partition_point(|&t| t <= from);
    let (Some(&before), Some(&after)) = (i.checked_sub(1).and_then(|j| sends.get(j)), sends.get(i)) else {
        return false;
    };
    let mut last = before;
    for &t in std::iter::once(&after).chain(&sends[i + 1..]) {
        if t - last > WATCH_GAP.0 {
            return false;
        }
        if t > to {
            return true;
        }
        last = t;
    }
    false
}

/// How long each burst of [`rotor`]'s probe lasts.
const ROTOR_BURST: Nanos = Nanos(5_000_000);

/// The pause after each burst of [`rotor`]'s probe.
const ROTOR_PAUSE: Nanos = Nanos(5_000_000);

/// [`rotor`]'s schedule: in slot k − 1, rack r reaches rack r + k.
fn rotor_schedule(racks: u32, slot: Nanos, delay: Nanos) -> Result<Schedule, BenchError> {
    let slots: Vec<_> = (1..racks)
        .map(|k| (slot, (0..racks).map(|r| circuit(r, (r + k) % racks)).collect()))
        .collect();
    Ok(Schedule::new(racks, 1, &slots, delay)?)
}

/// Aims a probe from rack 0 of [`rotor`]'s schedule (destination `i` is
/// rack `i + 1`, which rack 0 reaches in slot `i`): seven packets in eight
/// go to the rack of the slot the send time falls in, less `lag`, so each
/// window's opening and closing meet dense packets. With `lag` under δ
/// they start in the slot's dark time and go on past its end, into the
/// next slot's dark time. The eighth packet goes to another rack in turn;
/// those must take EPS. Near an edge (in the slot's dark time, or within
/// `lag` of its end) every packet goes to the slot's rack: those that fall
/// back to EPS there bracket the edge ([`WindowEdges`]).
fn follow(schedule: Schedule, epoch: Nanos, lag: Nanos) -> probe::Aim {
    Arc::new(move |now: Nanos, n: u64, aligned: bool| {
        let t = Nanos(now.0.saturating_sub(epoch.0 + lag.0));
        let (slot, into) = schedule.slot_at(t);
        let dark = schedule.dark(t.0 / schedule.period().0, slot, 0);
        let near_edge = into < dark || into.0 + lag.0 >= schedule.slots()[slot].length.0;
        // The eighth packets go in turn to the two other racks, unless
        // aligned to a window's edge or near one.
        let k = n + 1;
        if k.is_multiple_of(8) && !aligned && !near_edge {
            slot + 1 + (k as usize / 8) % 2
        } else {
            slot
        }
    })
}

/// Aligns [`rotor`]'s probe (see [`Edges`]): each sender sends a packet to
/// reach rack 0's ToR just after each usable window of rack 0's port opens
/// and one just before it closes, times after `epoch`.
fn window_edges(schedule: Schedule, epoch: Nanos) -> probe::Align {
    Arc::new(move |t: Nanos, i: usize| {
        let (slot, into) = schedule.slot_at(Nanos(t.0.checked_sub(epoch.0)?));
        let start = t.0 - into.0;
        let next = start + schedule.slots()[slot].length.0;
        // This slot's window, then the next slot's.
        let window = |start: u64, s: usize| {
            let dark = schedule.dark(start / schedule.period().0, s, 0);
            [
                send_after(Nanos(start + dark.0), i),
                send_before(Nanos(start + schedule.slots()[s].length.0), i),
            ]
        };
        let [a, b] = window(start, slot);
        let [c, d] = window(next, (slot + 1) % schedule.slots().len());
        [a, b, c, d].into_iter().find(|&at| at > t)
    })
}

/// What [`call_latency`] measured.
#[derive(Clone, Debug, Serialize)]
pub struct CallFigures {
    /// The datapath.
    pub datapath: Datapath,
    /// Whether every core was kept busy meanwhile.
    pub load: bool,
    /// Calls measured.
    pub calls: u32,
    /// Time spent changing the kernel, p50 / p99 / max, µs.
    pub call_us: [f64; 3],
}

/// Moves one circuit of rack 0 between racks 1 and 2 `calls` times with
/// δ = 0 and records how long each call spent changing the kernel
/// ([`super::Reconfiguration::call`]). Needs root.
pub fn call_latency(datapath: Datapath, load: bool, calls: u32) -> Result<CallFigures, BenchError> {
    need_root()?;
    let f = up(3, datapath, false)?;
    let ocs = f.ocs()?;
    let busy = CpuLoad::start(load);
    let mut h = histogram()?;
    for k in 0..calls + WARMUP_ROUNDS {
        let rec = ocs.set_matching_with_delay(&[circuit(0, 1 + k % 2)], Nanos(0))?;
        if k >= WARMUP_ROUNDS {
            record(&mut h, rec.call.0.max(1))?;
        }
    }
    drop(busy);
    f.down()?;
    Ok(CallFigures {
        datapath,
        load,
        calls,
        call_us: [pct(&h, 0.5), pct(&h, 0.99), us(h.max())],
    })
}

/// What [`circuit_goodput`] measured.
#[derive(Clone, Debug, Serialize)]
pub struct GoodputFigure {
    /// The datapath.
    pub datapath: Datapath,
    /// Whether every core was kept busy meanwhile.
    pub load: bool,
    /// TCP goodput, Gbit/s.
    pub gbit_s: f64,
    /// Share of the stream's bytes the circuit carried (the rest took EPS).
    pub over_circuit: f64,
}

/// One marked TCP stream from rack 0 to rack 1 through a circuit (links of
/// 100 Gbit/s: the box is the limit), 2 s after 0.5 s of warm-up. Needs root.
pub fn circuit_goodput(datapath: Datapath, load: bool) -> Result<GoodputFigure, BenchError> {
    need_root()?;
    let f = up(2, datapath, false)?;
    f.ocs()?.set_matching(&[circuit(0, 1)])?;
    let busy = CpuLoad::start(load);
    let c0 = f.counters()?;
    let g = probe::tcp_goodput(
        &f,
        HostId::new(0, 0),
        HostId::new(1, 0),
        Some(plan::OCS_TOS),
        Duration::from_millis(500),
        Duration::from_secs(2),
    )?;
    let c1 = f.counters()?;
    drop(busy);
    f.down()?;
    let ocs = (c1.ocs_bytes() - c0.ocs_bytes()) as f64;
    let eps = (c1.eps_uplink_bytes() - c0.eps_uplink_bytes()) as f64;
    Ok(GoodputFigure {
        datapath,
        load,
        gbit_s: g / 1e9,
        over_circuit: ocs / (ocs + eps).max(1.0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A circuit to destination 0 from 100, dark from 1,000 to 1,010
    /// while it moves to destination 1, dark again from 2,000 to 2,010 while
    /// it moves back. Each packet is judged on its whole send-to-receive
    /// span: a path is wrong only if no instant of it could have given it.
    #[test]
    fn a_packet_is_on_the_wrong_path_only_if_no_instant_of_its_span_allows_it() {
        let spans = usable_spans((0, 100), &[(1, 1_000, 1_010), (0, 2_000, 2_010)]);
        assert_eq!(
            spans,
            vec![(0, 100, 1_000), (1, 1_010, 2_000), (0, 2_010, u64::MAX)]
        );
        let (circuit, eps) = (probe::PROBE_TTL - 2, probe::PROBE_TTL - 3);
        let a = |dst, ttl, sent, seen| probe::Arrival {
            at_ns: seen,
            dst,
            ttl,
            sent,
            seen,
        };
        // (packet, wrong?)
        let cases = [
            (a(0, circuit, 500, 504), false),     // old circuit, up
            (a(0, circuit, 998, 1_003), false),   // decided maybe before the port went dark
            (a(0, circuit, 1_001, 1_005), true),  // old circuit, dark all through
            (a(1, circuit, 1_004, 1_009), true),  // new circuit before its up_at
            (a(1, circuit, 1_006, 1_012), false), // maybe decided after up_at
            (a(1, eps, 1_002, 1_008), false),     // fell back while dark
            (a(1, eps, 1_012, 1_016), true),      // EPS with the circuit up all through
            (a(0, eps, 1_500, 1_504), false),     // the other rack: no circuit
            (a(0, eps, 1_998, 2_003), false),     // maybe decided after the move
            (a(0, circuit, 3_000, 3_004), false), // moved back, up for good
        ];
        for (p, wrong) in cases {
            assert_eq!(check_paths(&[p], &spans).wrong(), usize::from(wrong), "{p:?}");
        }
        let all: Vec<probe::Arrival> = cases.iter().map(|c| c.0).collect();
        let check = check_paths(&all, &spans);
        assert_eq!(
            check,
            PathCheck {
                circuit_packets: 6,
                circuit_outside: 2,
                eps_packets: 4,
                eps_inside: 1,
                // The circuit packets are 2 ns (1,001 against the last
                // usable 999) and 1 ns (1,009 against 1,010) from a usable
                // span; the EPS packet lies 3 ns inside one (1,012 against
                // the first usable 1,010, and one more to leave it).
                wrong_by_ns: 3,
            }
        );
    }

    #[test]
    fn a_move_is_the_gap_between_circuit_arrivals_at_two_racks() {
        let a = |at_ns, dst, ttl| probe::Arrival {
            at_ns,
            dst,
            ttl,
            sent: 0,
            seen: 0,
        };
        let (circuit, eps) = (probe::PROBE_TTL - 2, probe::PROBE_TTL - 3);
        let arrivals = [
            a(100, 0, circuit),
            a(110, 1, eps), // EPS: not a circuit arrival
            a(120, 0, circuit),
            a(400, 0, eps),       // the probe went on over EPS while the port was dark
            a(1_120, 1, circuit), // moved: 1,000 ns dark, 720 ns silent before it
            a(1_130, 0, eps),
            a(1_140, 1, circuit),
            a(3_140, 0, circuit), // moved back: 2,000 ns with nothing at all
        ];
        let moves = dark_moves(&arrivals);
        let got: Vec<(u64, u64)> = moves.iter().map(|m| (m.dark_ns, m.silence_ns)).collect();
        // The first move's edges: 100 → 120 at rack 0 and 1,120 → 1,140 at
        // rack 1, 20 ns apart each. The second has one new arrival only.
        let spacing: Vec<Option<u64>> = moves.iter().map(|m| m.spacing_ns).collect();
        assert_eq!(spacing, vec![Some(20), None]);
        assert!(
            moves.iter().all(|m| m.dark_sent_ns == 0),
            "no send times in this case"
        );
        assert_eq!(got, vec![(1_000, 720), (2_000, 2_000)]);
    }

    /// An old-circuit packet sent before the move but delivered after the
    /// first new-circuit one: one move, whose gap runs from the last old
    /// arrival to the first new one, and none back.
    #[test]
    fn a_late_old_circuit_packet_makes_no_move_of_its_own() {
        let a = |sent, at_ns, dst| probe::Arrival {
            at_ns,
            dst,
            ttl: probe::PROBE_TTL - 2,
            sent,
            seen: at_ns,
        };
        let arrivals = [
            a(100, 200, 0),
            a(105, 260, 0), // delivered late, after the first new packet
            a(110, 212, 1),
            a(120, 222, 1),
        ];
        let moves = dark_moves(&arrivals);
        let got: Vec<(u64, u64)> = moves.iter().map(|m| (m.dark_ns, m.dark_sent_ns)).collect();
        assert_eq!(got, vec![(0, 5)], "one move; the old edge overlaps the new one");
        // A packet sent before the move that its ToR judged after up_at
        // (held > δ on its way there): a stray, not two moves.
        let stray = [
            a(100, 200, 0),
            a(101, 240, 1),
            a(105, 205, 0),
            a(130, 232, 1),
            a(140, 242, 1),
        ];
        let got: Vec<(u64, u64)> = dark_moves(&stray)
            .iter()
            .map(|m| (m.dark_ns, m.dark_sent_ns))
            .collect();
        assert_eq!(got, vec![(27, 25)]);
        let in_order = [a(100, 200, 0), a(105, 205, 0), a(110, 212, 1), a(120, 222, 1)];
        let got: Vec<(u64, u64)> = dark_moves(&in_order)
            .iter()
            .map(|m| (m.dark_ns, m.dark_sent_ns))
            .collect();
        assert_eq!(got, vec![(7, 5)]);
    }

    /// A gap of 1,012 µs at δ = 1 ms is 3 µs at the old edge, 5 µs at the
    /// new one and 4 µs of transit; a move sent long after its call's
    /// `dark_at` belongs to no call and is left out.
    #[test]
    fn a_gap_splits_into_the_probes_edges_and_the_paths_jitter() {
        let mv = |old: (u64, u64), new: (u64, u64)| Move {
            dark_ns: new.1 - old.1,
            dark_sent_ns: new.0 - old.0,
            silence_ns: 0,
            spacing_ns: None,
            old,
            new,
        };
        let calls = [(1, 10_000_000, 11_000_000), (0, 20_000_000, 21_000_000)];
        let moves = [
            // Sent 3 µs before the write, 10 µs in transit; the new packet
            // 5 µs after up_at, 14 µs in transit.
            mv((9_997_000, 10_007_000), (11_005_000, 11_019_000)),
            // The second call: 1 µs, 2 µs, equal transits.
            mv((19_999_000, 20_009_000), (21_002_000, 21_012_000)),
            // Its old packet left 200 µs after the second call's write.
            mv((20_200_000, 20_210_000), (21_002_000, 21_012_000)),
        ];
        assert_eq!(moves[0].dark_ns, 1_012_000);
        let x = gap_excess(&moves, &calls);
        assert_eq!(x.moves, 2);
        assert_eq!(x.old_edge_us, (1.0, 3.0));
        assert_eq!(x.new_edge_us, (2.0, 5.0));
        assert_eq!(x.transit_us, (0.0, 4.0));
    }

    /// The dark-time probe follows `reached` from its next packet on; every
    /// eighth packet goes to the other rack.
    #[test]
    fn the_dark_probe_aims_at_the_rack_the_circuit_reaches_at_the_send_time() {
        let turn = Arc::new(Turn::default());
        let aim = aim_at(turn.clone());
        let eight = |t: u64| {
            (0..8)
                .map(|n| aim(Nanos(t), n, false) % 2)
                .collect::<Vec<usize>>()
        };
        assert_eq!(eight(0), vec![0, 0, 0, 0, 0, 0, 0, 1]);
        // The move to destination 1 happens at 1000.
        turn.set(Nanos(1000), 1);
        assert_eq!(eight(999), vec![0, 0, 0, 0, 0, 0, 0, 1], "before the move");
        assert_eq!(eight(1000), vec![1, 1, 1, 1, 1, 1, 1, 0], "from the move on");
        // And back to destination 0 at 2000.
        turn.set(Nanos(2000), 0);
        assert_eq!((eight(1999)[0], eight(2000)[0]), (1, 0));
        // A packet aligned to an edge is never the eighth.
        assert_eq!(
            (aim(Nanos(1999), 7, true) % 2, aim(Nanos(2000), 7, true) % 2),
            (1, 0)
        );
    }

    /// Each sender's packets reach their ToR (2.2–4.0 µs after the send)
    /// before the port goes dark and after the new circuit is up, the
    /// second sender 2 µs further out than the first.
    #[test]
    fn the_probe_aligns_a_packet_to_each_edge_of_a_move() {
        let us = |n: f64| Nanos((n * 1_000.0) as u64);
        let edges = Edges::default();
        assert_eq!(edges.next(us(5.0), 0), None, "no move set");
        edges.set(us(100.0), us(110.0));
        let sends = |i: usize| {
            let mut t = Nanos(0);
            std::iter::from_fn(|| {
                t = edges.next(t, i)?;
                Some(t)
            })
            .collect::<Vec<Nanos>>()
        };
        assert_eq!(sends(0), vec![us(96.0), us(107.8)]);
        assert_eq!(sends(1), vec![us(94.0), us(109.8)]);
        for i in 0..2 {
            let s = sends(i);
            for hop in [TOR_HOP.0, TOR_HOP.1] {
                let at_tor = |t: Nanos| t.0 + hop.0;
                assert!(at_tor(s[0]) <= us(100.0).0 && at_tor(s[1]) >= us(110.0).0);
            }
        }
        assert_eq!(edges.next(us(107.8), 0), None, "nothing after the move");
    }

    /// The rotor's probe sends just after each window of rack 0's port
    /// opens (δ into its slot) and just before it closes, slot after slot.
    #[test]
    fn the_rotor_probe_aligns_a_packet_to_each_edge_of_a_window() {
        let us = |n: f64| Nanos((n * 1_000.0) as u64);
        let schedule = rotor_schedule(4, us(50.0), us(10.0)).expect("a valid rotor");
        let align = window_edges(schedule, us(1_000.0));
        assert_eq!(align(us(999.0), 0), None, "before the epoch");
        let mut t = us(1_000.0);
        let sends: Vec<Nanos> = (0..7)
            .map(|_| {
                t = align(t, 0).expect("an edge ahead");
                t
            })
            .collect();
        // Open at 1,010, close at 1,050; then 1,060 and 1,100; then the
        // third slot, and the next period's first.
        let want = [1_007.8, 1_046.0, 1_057.8, 1_096.0, 1_107.8, 1_146.0, 1_157.8];
        assert_eq!(sends, want.map(us).to_vec());
        assert_eq!(align(us(1_046.0), 1), Some(us(1_059.8)), "sender 1 further out");
    }

    /// A window from 10 to 50 µs of a slot starting at 0 (period 150 µs):
    /// the opening lies after the last packet to its rack that fell back
    /// and was received before the last crossing was sent, and by the first
    /// crossing's receipt; the closing after the last crossing was sent and
    /// by the receipt of the first that fell back after the first crossing.
    #[test]
    fn a_window_edge_lies_between_the_packets_on_either_side_of_it() {
        let us = |n: u64| n * 1_000;
        let crossed = CircuitSpan {
            first_sent: us(10),
            last_sent: us(47),
            n: 20,
            first_seen: us(12),
        };
        let fell_back = [
            (us(2), us(4)),
            (us(8), us(11)),  // the last before the opening
            (us(20), us(60)), // held past the closing: decided after it
            (us(48), us(52)),
            (us(49), us(51)),   // received first after the closing
            (us(160), us(162)), // the next period's dark time
        ];
        let edges = WindowEdges::bracket(&crossed, &fell_back, 0, us(150));
        assert_eq!(edges.open, Some((us(8), us(12))));
        assert_eq!(edges.close, Some((us(47), us(51))));
        assert_eq!(farthest(us(10), (us(8), us(12))), us(2));
        assert_eq!(farthest(us(50), (us(47), us(51))), us(3));
        // A circuit that opened 20 µs late: packets sent until then fell back.
        let late = [(us(8), us(11)), (us(29), us(31))];
        let edges = WindowEdges::bracket(&crossed, &late, 0, us(150));
        assert_eq!(farthest(us(10), edges.open.expect("bracketed")), us(19));
        // Nothing fell back: no bracket.
        let edges = WindowEdges::bracket(&crossed, &[], 0, us(150));
        assert_eq!(edges, WindowEdges::default());
    }

    /// An edge is watched when the probe's sends leave no gap over 5 µs
    /// within 10 µs of it, counting the gaps into and out of that span.
    #[test]
    fn an_edge_is_watched_only_with_no_gap_in_the_probe_near_it() {
        let us = |n: u64| n * 1_000;
        let dense: Vec<u64> = (5..=40).map(|k| us(k * 2)).collect(); // 10..80 µs, 2 µs apart
        assert!(watched(&dense, us(40)));
        assert!(watched(&dense, us(20)), "sent at the span's start");
        assert!(!watched(&dense, us(15)), "the span starts before the first send");
        assert!(!watched(&dense, us(75)), "the span ends after the last send");
        // A 6 µs stall, from 50 to 56 µs.
        let stalled: Vec<u64> = dense
            .iter()
            .copied()
            .filter(|&t| t <= us(50) || t >= us(56))
            .collect();
        assert!(
            !watched(&stalled, us(45)),
            "the stall is within 10 µs after the edge"
        );
        assert!(!watched(&stalled, us(62)), "and within 10 µs before this one");
        assert!(watched(&stalled, us(30)), "it ends 20 µs before the stall");
        assert!(watched(&stalled, us(66)), "it starts just after the stall");
        // A 5 µs gap is within the bound.
        let gap5: Vec<u64> = vec![us(30), us(35), us(40), us(45), us(50), us(55)];
        assert!(watched(&gap5, us(42)));
    }

    /// Three 50 µs slots from an epoch at 1 ms, followed 5 µs late: seven
    /// packets in eight go to the slot's rack, the eighth elsewhere.
    #[test]
    fn the_rotor_probe_aims_at_the_slot_of_its_send_time_less_the_lag() {
        let us = |n: u64| Nanos(n * 1_000);
        let schedule = rotor_schedule(4, us(50), us(10)).expect("a valid rotor");
        let aim = follow(schedule, us(1_000), us(5));
        let mut n = 0;
        let mut at = |t: Nanos| {
            (0..8)
                .map(|_| {
                    n += 1;
                    aim(t, n - 1, false) % 3
                })
                .collect::<Vec<usize>>()
        };
        // Slot 1 began 4 µs ago: still slot 0's rack. 6 µs ago: slot 1's.
        // Near those edges the eighth packet goes there too.
        assert_eq!(at(us(1_054)), vec![0; 8]);
        assert_eq!(at(us(1_056)), vec![1; 8]);
        // Mid-window the eighth goes elsewhere.
        assert_eq!(at(us(1_030)), vec![0, 0, 0, 0, 0, 0, 0, 2]);
        // The next period's slot 2; the eighth goes to the others in turn.
        let eighth: Vec<usize> = (0..3).map(|_| at(us(1_280))[7]).collect();
        assert_eq!(at(us(1_280))[..7], [2; 7]);
        assert_eq!(eighth, vec![0, 1, 0]);
    }
}
