//! [`rotor`]: a 4-rack rotor schedule followed by the eBPF datapath, and
//! where the probe's packets crossed (see the module doc of [`super`]).

use super::edges::{send_after, send_before, send_times, watched};
use super::paths::PathCheck;
use super::{circuit, pct, senders, up, us, CpuLoad, GATE_LEAD};
use crate::fabric::bench::{histogram, need_root, record, BenchError};
use crate::fabric::{clock, plan, probe, Datapath, Schedule};
use crate::{HostId, Nanos};
use hdrhistogram::Histogram;
use serde::Serialize;
use std::sync::Arc;

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
    /// watched (`watched`: no gap over [`WATCH_GAP`](super::WATCH_GAP) between its packets'
    /// send times within [`WATCH_SPAN`](super::WATCH_SPAN) of the edge) and bracketed
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
    /// [`SCHEDULE_LEAD`](crate::fabric::ebpf::SCHEDULE_LEAD)).
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

/// Aligns [`rotor`]'s probe (see [`Edges`](super::edges::Edges)): each sender sends a packet to
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

#[cfg(test)]
mod tests {
    use super::*;

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
