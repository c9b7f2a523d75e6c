//! [`dark_time`]: the dark time of a circuit move, from the kernel's
//! receive timestamps at the two destinations (see the module doc of
//! [`super`]).

use super::edges::{send_times, watched, Edges};
use super::paths::{check_paths, usable_spans, PathCheck};
use super::{circuit, pct, senders, up, us, CpuLoad, GATE_LEAD, GATE_TAIL, WARMUP_ROUNDS};
use crate::fabric::bench::{histogram, median, need_root, record, BenchError};
use crate::fabric::{clock, plan, probe, Datapath};
use crate::{HostId, Nanos};
use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

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

/// Circuit arrivals at each edge of a move that time the probe's spacing
/// there.
const EDGE_PACKETS: usize = 8;

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
    /// the call that made it): no gap over [`WATCH_GAP`](super::WATCH_GAP) between its
    /// packets' send times within [`WATCH_SPAN`](super::WATCH_SPAN) of either. At the others
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
