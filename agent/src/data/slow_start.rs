//! QUIC's CUBIC leaves slow start when the path's delay rises, as Linux's
//! `tcp_cubic` does with HyStart. Quinn's CUBIC grows its window until a
//! packet is lost, which on the lab's shaped links overflows the flow
//! queues in a burst: four QUIC flows into one host lost a quarter of
//! their packets, and a run's ends spread about as the flows' resent bytes
//! did (docs/fabric.md).
//!
//! The rule is HyStart++'s (Balasubramanian, Huang & Olson, RFC 9406,
//! Sec. 4.2), without its Conservative Slow Start:
//!
//! ```text
//! rtt = the time from a packet's send to its acknowledgement
//! a round ends when the packet last sent at its start is acknowledged
//! at each round's start:  last_min = cur_min; cur_min = ∞; samples = 0
//! at each acknowledgement: cur_min = min(cur_min, rtt); samples += 1
//!   if samples ≥ N_RTT_SAMPLE and cur_min ≥ last_min + clamp(last_min / 8, 4 ms, 16 ms):
//!     leave slow start
//! ```
//!
//! Quinn's CUBIC offers one way out of slow start from outside: a
//! congestion event. [`HyStartCubic`] hands it one that lost nothing, so
//! the window falls to 0.7 of itself where RFC 9406 keeps it, and CUBIC
//! goes on from there as after a loss.

use quinn::congestion::{Controller, ControllerFactory, CubicConfig};
use quinn_proto::RttEstimator;
use std::any::Any;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// RTT samples a round takes before its least counts (RFC 9406: N_RTT_SAMPLE).
pub const N_RTT_SAMPLE: u32 = 8;
/// The least rise in a round's least RTT that ends slow start (MIN_RTT_THRESH).
pub const MIN_RTT_THRESH: Duration = Duration::from_millis(4);
/// The most rise needed (MAX_RTT_THRESH).
pub const MAX_RTT_THRESH: Duration = Duration::from_millis(16);
/// Between those, the rise needed is the last round's least over this (MIN_RTT_DIVISOR).
pub const MIN_RTT_DIVISOR: u32 = 8;

/// HyStart++'s delay test, round by round of packet numbers.
#[derive(Clone, Debug, Default)]
pub struct DelayRise {
    /// The packet number sent last.
    last_sent: u64,
    /// The round ends when this packet number is acknowledged.
    round_end: u64,
    /// The least RTT of the last round, and of this one so far.
    last_min: Option<Duration>,
    cur_min: Option<Duration>,
    /// RTT samples this round.
    samples: u32,
}

impl DelayRise {
    /// Packet number `pn` (or up to it) was sent.
    pub fn sent(&mut self, pn: u64) {
        self.last_sent = pn;
    }

    /// An acknowledgement measured `rtt`; true if the delay has risen
    /// enough to leave slow start.
    pub fn acked(&mut self, rtt: Duration) -> bool {
        self.cur_min = Some(self.cur_min.map_or(rtt, |m| m.min(rtt)));
        self.samples += 1;
        self.risen()
    }

    /// A batch of acknowledgements ended, the largest acknowledged
    /// packet number `largest`: a new round starts if it covers this one.
    pub fn end_acks(&mut self, largest: Option<u64>) {
        if largest.is_some_and(|l| l >= self.round_end) {
            self.last_min = self.cur_min.take();
            self.samples = 0;
            self.round_end = self.last_sent;
        }
    }

    fn risen(&self) -> bool {
        let (Some(last), Some(cur)) = (self.last_min, self.cur_min) else {
            return false;
        };
        let thresh = (last / MIN_RTT_DIVISOR).clamp(MIN_RTT_THRESH, MAX_RTT_THRESH);
        self.samples >= N_RTT_SAMPLE && cur >= last + thresh
    }
}

/// Builds [`HyStartCubic`] controllers (quinn's CUBIC with its defaults inside).
#[derive(Debug, Default)]
pub struct HyStartCubicConfig {
    cubic: Arc<CubicConfig>,
}

impl ControllerFactory for HyStartCubicConfig {
    fn build(self: Arc<Self>, now: Instant, current_mtu: u16) -> Box<dyn Controller> {
        Box::new(HyStartCubic {
            cubic: self.cubic.clone().build(now, current_mtu),
            slow_start: true,
            rise: DelayRise::default(),
        })
    }
}

/// Quinn's CUBIC, out of slow start at a delay rise ([`DelayRise`]) or a loss.
pub struct HyStartCubic {
    cubic: Box<dyn Controller>,
    /// Whether slow start still runs (no loss and no delay rise yet).
    slow_start: bool,
    rise: DelayRise,
}

impl Controller for HyStartCubic {
    fn on_sent(&mut self, now: Instant, bytes: u64, last_packet_number: u64) {
        self.rise.sent(last_packet_number);
        self.cubic.on_sent(now, bytes, last_packet_number);
    }

    fn on_ack(&mut self, now: Instant, sent: Instant, bytes: u64, app_limited: bool, rtt: &RttEstimator) {
        self.cubic.on_ack(now, sent, bytes, app_limited, rtt);
        if self.slow_start && self.rise.acked(now.saturating_duration_since(sent)) {
            self.slow_start = false;
            // A congestion event that lost nothing: CUBIC's way out.
            self.cubic.on_congestion_event(now, now, false, 0);
        }
    }

    fn on_end_acks(&mut self, now: Instant, in_flight: u64, app_limited: bool, largest: Option<u64>) {
        self.cubic.on_end_acks(now, in_flight, app_limited, largest);
        self.rise.end_acks(largest);
    }

    fn on_congestion_event(&mut self, now: Instant, sent: Instant, persistent: bool, lost_bytes: u64) {
        self.slow_start = false;
        self.cubic.on_congestion_event(now, sent, persistent, lost_bytes);
    }

    fn on_mtu_update(&mut self, new_mtu: u16) {
        self.cubic.on_mtu_update(new_mtu);
    }

    fn window(&self) -> u64 {
        self.cubic.window()
    }

    fn metrics(&self) -> quinn::congestion::ControllerMetrics {
        self.cubic.metrics()
    }

    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(HyStartCubic {
            cubic: self.cubic.clone_box(),
            slow_start: self.slow_start,
            rise: self.rise.clone(),
        })
    }

    fn initial_window(&self) -> u64 {
        self.cubic.initial_window()
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// Runs rounds of acknowledgements (each a list of RTTs) through a
    /// [`DelayRise`]: a round's packets go out as the last one's last
    /// acknowledgement comes back. Returns the (round, sample) at which it
    /// asked to leave slow start.
    fn exit_at(rounds: &[Vec<Duration>]) -> Option<(usize, usize)> {
        let mut rise = DelayRise::default();
        // The handshake's packet 0 acknowledged as round 0 goes out.
        let mut sent = rounds.first().map_or(0, |r| r.len() as u64);
        rise.sent(sent);
        rise.end_acks(Some(0));
        let mut pn = 0;
        for (r, rtts) in rounds.iter().enumerate() {
            for (i, &rtt) in rtts.iter().enumerate() {
                pn += 1;
                if rise.acked(rtt) {
                    return Some((r, i));
                }
                if i + 1 == rtts.len() {
                    sent += rounds.get(r + 1).map_or(0, |n| n.len() as u64);
                    rise.sent(sent);
                }
                rise.end_acks(Some(pn));
            }
        }
        None
    }

    fn round(n: usize, rtt: Duration) -> Vec<Duration> {
        vec![rtt; n]
    }

    #[test]
    fn a_steady_delay_never_ends_slow_start() {
        assert_eq!(exit_at(&vec![round(20, MS); 10]), None);
    }

    #[test]
    fn a_rise_of_four_ms_ends_it_at_the_eighth_sample_of_the_round() {
        // Base 1 ms: the rise needed is the 4 ms floor (1/8 ms is less).
        let rounds = [round(20, MS), round(20, MS), round(20, 5 * MS)];
        assert_eq!(exit_at(&rounds), Some((2, N_RTT_SAMPLE as usize - 1)));
        let short = [
            round(20, MS),
            round(20, MS),
            round(20, 5 * MS - Duration::from_micros(1)),
        ];
        assert_eq!(exit_at(&short), None, "3.999 ms is below the floor");
    }

    #[test]
    fn the_rise_needed_is_an_eighth_of_the_base_between_4_and_16_ms() {
        // 80 ms: 10 ms needed; 200 ms: capped at 16 ms.
        let at = |base: Duration, up: Duration| exit_at(&[round(10, base), round(10, base + up)]).is_some();
        assert!(!at(80 * MS, 9 * MS));
        assert!(at(80 * MS, 10 * MS));
        assert!(!at(200 * MS, 15 * MS));
        assert!(at(200 * MS, 16 * MS));
    }

    #[test]
    fn a_round_decides_only_after_eight_samples_on_the_least_of_all() {
        // Seven samples of 9 ms over a 1 ms round decide nothing; the
        // eighth, low, keeps the round's least under the threshold.
        assert_eq!(exit_at(&[round(20, MS), round(7, 9 * MS), round(20, MS)]), None);
        let mut dip = round(20, 9 * MS);
        dip[N_RTT_SAMPLE as usize - 1] = MS;
        assert_eq!(exit_at(&[round(20, MS), dip]), None);
        // Every sample of a round counts toward the least the next round
        // is held to: a late low one lowers it.
        let mut late_low = round(20, MS);
        late_low[N_RTT_SAMPLE as usize..].fill(Duration::from_micros(100));
        let up = MS + MIN_RTT_THRESH - Duration::from_micros(500);
        assert!(exit_at(&[round(20, MS), late_low, round(20, up)]).is_some());
        assert_eq!(exit_at(&[round(20, MS), round(20, MS), round(20, up)]), None);
    }
}
