//! The token bucket that paces a flow at the rate the coflow scheduler set
//! (Varys/MADD and Sunflow give flows rates; TCP alone would share fairly).
//!
//! Pure: time is an argument, so it is tested without a clock. The bucket
//! may go into debt: a write is admitted whenever the balance is not
//! negative and then pays its full size, so any write size keeps the long-run
//! rate exact, and a late timer is made up by the credit it accrued (up to
//! [`BURST`] worth of the rate).

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
}

impl Pacer {
    /// A bucket at `rate` (`None`: unpaced), starting with no credit.
    pub fn new(rate: Option<Bps>, now: Nanos) -> Pacer {
        Pacer {
            rate,
            tokens: 0.0,
            last: now,
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
        if self.tokens >= 0.0 {
            self.tokens -= bytes as f64;
            None
        } else {
            let secs = -self.tokens / rate.bytes_per_sec();
            Some(Duration::from_secs_f64(secs).max(Duration::from_micros(50)))
        }
    }

    fn depth(&self) -> f64 {
        self.rate.map_or(0.0, |r| r.bytes_per_sec() * BURST.as_secs_f64())
    }

    fn refill(&mut self, now: Nanos) {
        let dt = (now - self.last).as_secs_f64();
        self.last = self.last.max(now);
        if let Some(r) = self.rate {
            self.tokens = (self.tokens + dt * r.bytes_per_sec()).min(self.depth());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drives a pacer with a virtual clock whose sleeps overshoot by `late`.
    fn run(rate: Bps, total: u64, late: Duration) -> (u64, Nanos) {
        let mut p = Pacer::new(Some(rate), Nanos(0));
        let mut now = Nanos(0);
        let (mut sent, mut first, mut last) = (0u64, None, Nanos(0));
        while sent < total {
            let n = p.write_size(256 * 1024).min((total - sent) as usize);
            while let Some(d) = p.admit(now, n) {
                now += Nanos::from(d + late);
            }
            first.get_or_insert(now);
            sent += n as u64;
            last = now;
        }
        (sent, last - first.unwrap_or_default())
    }

    #[test]
    fn holds_the_rate_over_a_second_even_with_late_timers() {
        for late in [Duration::ZERO, Duration::from_micros(700)] {
            let rate = Bps(50_000_000);
            let (sent, span) = run(rate, 6_250_000, late);
            let measured = sent as f64 * 8.0 / span.as_secs_f64();
            let err = (measured - rate.0 as f64).abs() / rate.0 as f64;
            assert!(err < 0.01, "late {late:?}: {measured} bit/s");
        }
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
