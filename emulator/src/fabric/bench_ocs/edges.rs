//! The probe around an edge (a port going dark, a circuit coming up): when
//! each sender sends to meet it ([`Edges`], [`send_before`], [`send_after`])
//! and whether the probe watched it ([`watched`]).

use crate::fabric::probe;
use crate::Nanos;
use std::sync::atomic::{AtomicU64, Ordering};

/// The instants [`dark_time`](super::dark_time)'s probe aligns packets to around a move:
/// each sender sends one to reach its ToR before the port goes dark and one
/// to reach it after the new circuit is up (see [`probe::Align`]). The
/// packet takes [`TOR_HOP`] from its send call to the ToR's clock reading,
/// which judges it, so a sender sends the hop's longest before the first
/// edge and its shortest before the second, and sender `i` [`EDGE_STAGGER`]
/// × `i` further out: one sender held back there, or a hop longer than
/// the range, leaves the other's packet close by. Two words written apart:
/// a sender that reads them mid-write aligns one packet amiss, no more.
#[derive(Debug, Default)]
pub(super) struct Edges {
    /// When the port goes dark (ns, the ToR's clock).
    down_at: AtomicU64,
    /// When the new circuit is up.
    up_at: AtomicU64,
}

impl Edges {
    /// Aligns to a move dark at `down_at` and up at `up_at`.
    pub(super) fn set(&self, down_at: Nanos, up_at: Nanos) {
        self.down_at.store(down_at.0, Ordering::Relaxed);
        self.up_at.store(up_at.0, Ordering::Relaxed);
    }

    /// The next instant ahead of `t` at which sender `i` sends: the last
    /// send meant to cross the old circuit, then the first meant to cross
    /// the new one.
    pub(super) fn next(&self, t: Nanos, i: usize) -> Option<Nanos> {
        let down_at = Nanos(self.down_at.load(Ordering::Relaxed));
        let up_at = Nanos(self.up_at.load(Ordering::Relaxed));
        [send_before(down_at, i), send_after(up_at, i)]
            .into_iter()
            .find(|&at| at > t)
    }
}

/// When sender `i` of a probe sends the last packet meant to reach its ToR
/// before `edge` (see [`Edges`]).
pub(super) fn send_before(edge: Nanos, i: usize) -> Nanos {
    Nanos(edge.0.saturating_sub(TOR_HOP.1 .0 + i as u64 * EDGE_STAGGER.0))
}

/// When sender `i` sends the first packet meant to reach its ToR after
/// `edge`.
pub(super) fn send_after(edge: Nanos, i: usize) -> Nanos {
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

/// The longest gap between the probe's packets at an edge it watched: the
/// probe's spacing bound (`ocslab bench ocs` promises at most 5 µs).
pub const WATCH_GAP: Nanos = Nanos(5_000);

/// How far either side of an edge the probe must be dense for the edge to
/// count as watched: the accuracy the rotor's edges are held to.
pub const WATCH_SPAN: Nanos = Nanos(10_000);

/// The probe's packets' send times, sorted, less `offset` (none may be
/// earlier): what [`watched`] reads.
pub(super) fn send_times<'a>(arrivals: impl Iterator<Item = &'a probe::Arrival>, offset: u64) -> Vec<u64> {
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
pub(super) fn watched(sends: &[u64], edge: u64) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
