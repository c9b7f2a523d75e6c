//! [`PathCheck`]: whether each probe packet took a path its circuits allowed.

use crate::fabric::probe;
use serde::Serialize;

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
    /// Measured by [`dark_time`](super::dark_time); 0 in [`rotor`](fn@super::rotor)'s figures.
    pub wrong_by_ns: u64,
}

impl PathCheck {
    /// Counts a packet that crossed a circuit, `outside` every usable span.
    pub(super) fn count_circuit(&mut self, outside: bool) {
        self.circuit_packets += 1;
        self.circuit_outside += usize::from(outside);
    }

    /// Counts a packet that took EPS, `inside` one usable span.
    pub(super) fn count_eps(&mut self, inside: bool) {
        self.eps_packets += 1;
        self.eps_inside += usize::from(inside);
    }

    /// Packets on the wrong path.
    pub fn wrong(&self) -> usize {
        self.circuit_outside + self.eps_inside
    }
}

/// When a circuit from a probe's rack to each of its destinations was
/// usable while one circuit moved between them (as in [`dark_time`](super::dark_time)), as
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
}
