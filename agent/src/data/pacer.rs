//! The token bucket that paces a flow at the rate the coflow scheduler set
//! (Varys/MADD and Sunflow give flows rates; TCP alone would share fairly).
//!
//! Pure: time is an argument, so it is tested without a clock. The bucket
//! may go into debt: a write is admitted whenever the balance is not
//! negative and then pays its full size, so any write size keeps the long-run
//! rate exact.
//!
//! Credit is capped at [`BURST`] worth of the rate only across time the
//! sender spent away from the pacer: writing, blocked by the network, or
//! held. There the network or the scheduler set the pace, and a flow that
//! made up that time would burst above its rate. Time spent waiting for the
//! pacer's own admission is owed in full: a timer that fires late, or a
//! sender descheduled on a busy box, is the emulator's delay, not the
//! flow's, and the writes that follow make it up.

use ocslab_emulator::{Bps, Nanos};
use std::time::Duration;

/// Credit a paced flow may accumulate, as time at its rate.
pub const BURST: Duration = Duration::from_millis(5);
/// Paced writes are about this much time at the rate…
const WRITE_TIME: Duration = Duration::from_millis(1);
/// …but at least this many bytes.
const MIN_WRITE: usize = 8 * 1024;

/// A token bucket in bytes.
#[derive(Debug, Clone)]
pub struct Pacer {
    rate: Option<Bps>,
    tokens: f64,
    last: Nanos,
    /// The last `admit` refused: the sender has been waiting for the pacer since.
    waiting: bool,
}

impl Pacer {
    /// A bucket at `rate` (`None`: unpaced), starting with no credit.
    pub fn new(rate: Option<Bps>, now: Nanos) -> Pacer {
        Pacer {
            rate,
            tokens: 0.0,
            last: now,
            waiting: false,
        }
    }

    /// The current rate.
    pub fn rate(&self) -> Option<Bps> {
        self.rate
    }

    /// Changes the rate from `now` on (credit earned so far is kept).
    pub fn set_rate(&mut self, rate: Option<Bps>, now: Nanos) {
        self.refill(now);
        self.rate = rate;
        self.tokens = self.tokens.min(self.depth());
    }

    /// How many bytes to write at a time, at most `max`.
    pub fn write_size(&self, max: usize) -> usize {
        match self.rate {
            None => max,
            Some(r) => {
                ((r.bytes_per_sec() * WRITE_TIME.as_secs_f64()) as usize).clamp(MIN_WRITE.min(max), max)
            }
        }
    }

    /// Admits a write of `bytes` at `now` (`None`), or says how long to wait
    /// before asking again.
    pub fn admit(&mut self, now: Nanos, bytes: usize) -> Option<Duration> {
        // Unpaced: always admitted.
        let rate = self.rate?;
        if rate.0 == 0 {
            return Some(BURST);
        }
        self.refill(now);
        self.waiting = self.tokens < 0.0;
        if self.waiting {
            let secs = -self.tokens / rate.bytes_per_sec();
            Some(Duration::from_secs_f64(secs).max(Duration::from_micros(50)))
        } else {
            self.tokens -= bytes as f64;
            None
        }
    }

    fn depth(&self) -> f64 {
        self.rate.map_or(0.0, |r| r.bytes_per_sec() * BURST.as_secs_f64())
    }

    fn refill(&mut self, now: Nanos) {
        let dt = (now - self.last).as_secs_f64();
        self.last = self.last.max(now);
        if let Some(r) = self.rate {
            // Credit already owed is kept; time away adds up to the depth.
            let cap = if self.waiting {
                f64::INFINITY
            } else {
                self.depth().max(self.tokens)
            };
            self.tokens = (self.tokens + dt * r.bytes_per_sec()).min(cap);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drives a pacer with a virtual clock whose sleeps overshoot by `late`,
    /// and by `stall` more once, at the sleep that ends past `stall_at`.
    fn run_stalled(rate: Bps, total: u64, late: Duration, stall_at: Nanos, stall: Duration) -> (u64, Nanos) {
        let mut p = Pacer::new(Some(rate), Nanos(0));
        let mut now = Nanos(0);
        let (mut sent, mut first, mut last) = (0u64, None, Nanos(0));
        let mut stall = Some(stall);
        while sent < total {
            let n = p.write_size(256 * 1024).min((total - sent) as usize);
            while let Some(d) = p.admit(now, n) {
                now += Nanos::from(d + late);
                if now > stall_at {
                    now += Nanos::from(stall.take().unwrap_or_default());
                }
            }
            first.get_or_insert(now);
            sent += n as u64;
            last = now;
        }
        (sent, last - first.unwrap_or_default())
    }

    fn run(rate: Bps, total: u64, late: Duration) -> (u64, Nanos) {
        run_stalled(rate, total, late, Nanos(u64::MAX), Duration::ZERO)
    }

    fn error(rate: Bps, sent: u64, span: Nanos) -> f64 {
        (sent as f64 * 8.0 / span.as_secs_f64() - rate.0 as f64).abs() / rate.0 as f64
    }

    #[test]
    fn holds_the_rate_over_a_second_even_with_late_timers() {
        for late in [Duration::ZERO, Duration::from_micros(700)] {
            let rate = Bps(50_000_000);
            let (sent, span) = run(rate, 6_250_000, late);
            let err = error(rate, sent, span);
            assert!(err < 0.01, "late {late:?}: {:+.2}%", err * 100.0);
        }
    }

    /// A sender descheduled for 40 ms while it waits for the pacer (a busy
    /// box) makes the time up: the flow still takes its rate's time.
    #[test]
    fn a_stall_while_waiting_for_the_pacer_is_made_up() {
        let rate = Bps(50_000_000);
        let (sent, span) = run_stalled(
            rate,
            6_250_000,
            Duration::ZERO,
            Nanos::from_millis(300),
            Duration::from_millis(40),
        );
        let err = error(rate, sent, span);
        assert!(err < 0.01, "{:+.2}%", err * 100.0);
    }

    /// Time spent away from the pacer (a write blocked by the network) earns
    /// at most BURST of credit: the flow does not burst to make it up.
    #[test]
    fn time_blocked_elsewhere_earns_at_most_a_burst() {
        let rate = Bps(50_000_000);
        let mut p = Pacer::new(Some(rate), Nanos(0));
        let n = p.write_size(256 * 1024);
        assert_eq!(p.admit(Nanos(0), n), None);
        // The write blocks for a second; then the sender writes as fast as admitted.
        let now = Nanos::from_millis(1000);
        let mut burst = 0;
        while p.admit(now, n).is_none() {
            burst += n;
        }
        let most = rate.bytes_per_sec() * BURST.as_secs_f64() + n as f64;
        assert!(burst as f64 <= most, "burst {burst} B, at most {most} B");
        assert!(burst > 0);
    }

    #[test]
    fn unpaced_admits_at_once_and_writes_large() {
        let mut p = Pacer::new(None, Nanos(0));
        assert_eq!(p.admit(Nanos(0), 1 << 20), None);
        assert_eq!(p.write_size(256 * 1024), 256 * 1024);
    }

    #[test]
    fn a_rate_change_takes_effect() {
        let (slow, fast) = (Bps(10_000_000), Bps(100_000_000));
        let mut p = Pacer::new(Some(slow), Nanos(0));
        let mut now = Nanos(0);
        let mut sent = 0u64;
        let mut mark = None;
        while now < Nanos::from_millis(2000) {
            if now >= Nanos::from_millis(1000) && mark.is_none() {
                p.set_rate(Some(fast), now);
                mark = Some(sent);
            }
            let n = p.write_size(256 * 1024);
            match p.admit(now, n) {
                None => sent += n as u64,
                Some(d) => now += Nanos::from(d),
            }
        }
        let first = mark.unwrap_or_default() as f64 * 8.0;
        let second = (sent - mark.unwrap_or_default()) as f64 * 8.0;
        assert!((first / 10e6 - 1.0).abs() < 0.02, "{first}");
        assert!((second / 100e6 - 1.0).abs() < 0.02, "{second}");
    }

    #[test]
    fn a_zero_rate_sends_nothing() {
        let mut p = Pacer::new(Some(Bps(0)), Nanos(0));
        assert!(p.admit(Nanos::from_millis(100), 1).is_some());
    }
}
