//! Units live in types: a rate is [`Bps`], a size is [`Bytes`], a time or a
//! duration is [`Nanos`]. Each parses from the human form used in topology
//! and experiment files (`"10Gbit/s"`, `"1.125GB"`, `"10ms"`) and prints back
//! in it, so a file, a report and the code never disagree about units.
//!
//! Decimal prefixes throughout (k = 10^3, M = 10^6, G = 10^9), as networking
//! papers and `tc` use them for rates; sizes also accept binary `KiB`/`MiB`/`GiB`.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::ops::{Add, AddAssign, Sub};
use std::str::FromStr;

/// A rate in bits per second.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bps(pub u64);

/// A size in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bytes(pub u64);

/// A point in time (since the start of an experiment) or a duration, in
/// nanoseconds. Policies and the simulator receive time as an argument of
/// this type; they never read a clock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Nanos(pub u64);

/// Why a unit string did not parse: the text, what is wrong with it and
/// what would be valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} {problem}: expected {expected}")]
pub struct UnitError {
    /// The text that was given.
    pub text: String,
    /// "rate", "size" or "duration".
    pub kind: &'static str,
    /// What is wrong, e.g. "is not a rate" or "is negative".
    pub problem: String,
    /// Examples of valid text.
    pub expected: &'static str,
}

const RATE_EXPECTED: &str =
    "a number and a unit, e.g. \"10Gbit/s\", \"250Mbit/s\", \"800kbit/s\" or \"1e9bit/s\"";
const SIZE_EXPECTED: &str = "a number and a unit, e.g. \"1.125GB\", \"128MB\", \"64KiB\" or \"1500B\"";
const TIME_EXPECTED: &str = "a number and a unit, e.g. \"10ms\", \"250us\", \"2s\", \"1.5min\" or \"100ns\"";

/// Splits "12.5 Mbit/s" into (12.5, "Mbit/s").
fn split_number(text: &str) -> Option<(f64, &str)> {
    let t = text.trim();
    let end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'))
        .unwrap_or(t.len());
    // "1e9bit/s": the exponent 'e' is part of the number only when followed by a digit.
    let (num, unit) = t.split_at(end);
    let value: f64 = num.parse().ok()?;
    Some((value, unit.trim()))
}

/// Parses `text` as a number times one of `units` (name, multiplier; the
/// name's case ignored if `any_case`), into whole base units (bit/s, bytes,
/// ns) that fit in 64 bits; `largest` is how the largest value reads.
fn parse_unit(
    text: &str,
    (kind, expected): (&'static str, &'static str),
    units: &[(&str, f64)],
    any_case: bool,
    largest: &str,
) -> Result<u64, UnitError> {
    let err = |problem: String| UnitError {
        text: text.to_string(),
        kind,
        problem,
        expected,
    };
    let not_one = || err(format!("is not a {kind}"));
    let (value, unit) = split_number(text).ok_or_else(not_one)?;
    let mult = units
        .iter()
        .find(|(name, _)| *name == unit || (any_case && name.eq_ignore_ascii_case(unit)))
        .ok_or_else(not_one)?
        .1;
    if value.is_nan() {
        return Err(not_one());
    }
    if value < 0.0 {
        return Err(err("is negative".into()));
    }
    let v = (value * mult).round();
    // u64::MAX as f64 is 2^64, one past the largest u64.
    if v >= u64::MAX as f64 {
        return Err(err(format!("is too large: the largest {kind} is {largest}")));
    }
    Ok(v as u64)
}

/// Rate units, matched whatever their case.
const RATE_UNITS: &[(&str, f64)] = &[
    ("bit/s", 1.0),
    ("bps", 1.0),
    ("b/s", 1.0),
    ("kbit/s", 1e3),
    ("kbps", 1e3),
    ("kb/s", 1e3),
    ("mbit/s", 1e6),
    ("mbps", 1e6),
    ("mb/s", 1e6),
    ("gbit/s", 1e9),
    ("gbps", 1e9),
    ("gb/s", 1e9),
    ("tbit/s", 1e12),
    ("tbps", 1e12),
    ("tb/s", 1e12),
];

/// Size units, matched exactly (`MB` is not `Mb`).
const SIZE_UNITS: &[(&str, f64)] = &[
    ("B", 1.0),
    ("b", 1.0),
    ("bytes", 1.0),
    ("kB", 1e3),
    ("KB", 1e3),
    ("MB", 1e6),
    ("GB", 1e9),
    ("TB", 1e12),
    ("KiB", 1024.0),
    ("MiB", 1024.0 * 1024.0),
    ("GiB", 1024.0 * 1024.0 * 1024.0),
];

/// Duration units, matched exactly.
const TIME_UNITS: &[(&str, f64)] = &[
    ("ns", 1.0),
    ("us", 1e3),
    ("µs", 1e3),
    ("ms", 1e6),
    ("s", 1e9),
    ("min", 60e9),
    ("h", 3600e9),
];

impl FromStr for Bps {
    type Err = UnitError;
    fn from_str(text: &str) -> Result<Self, UnitError> {
        parse_unit(text, ("rate", RATE_EXPECTED), RATE_UNITS, true, "18.4Ebit/s").map(Bps)
    }
}

impl FromStr for Bytes {
    type Err = UnitError;
    fn from_str(text: &str) -> Result<Self, UnitError> {
        parse_unit(text, ("size", SIZE_EXPECTED), SIZE_UNITS, false, "18.4EB").map(Bytes)
    }
}

impl FromStr for Nanos {
    type Err = UnitError;
    fn from_str(text: &str) -> Result<Self, UnitError> {
        parse_unit(
            text,
            ("duration", TIME_EXPECTED),
            TIME_UNITS,
            false,
            "584 years (2^64 ns)",
        )
        .map(Nanos)
    }
}

/// Prints `value` with the largest prefix that keeps it at least 1.
fn human(f: &mut fmt::Formatter<'_>, value: u64, units: &[(f64, &str)]) -> fmt::Result {
    let v = value as f64;
    for &(mult, name) in units {
        if v >= mult {
            let x = v / mult;
            return if (x - x.round()).abs() < 1e-9 {
                write!(f, "{}{}", x.round() as u64, name)
            } else {
                write!(f, "{}{}", format_sig(x), name)
            };
        }
    }
    let (_, name) = units[units.len() - 1];
    write!(f, "{value}{name}")
}

/// Up to four significant digits, no trailing zeros.
fn format_sig(x: f64) -> String {
    let s = format!("{x:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

impl fmt::Display for Bps {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        human(
            f,
            self.0,
            &[
                (1e12, "Tbit/s"),
                (1e9, "Gbit/s"),
                (1e6, "Mbit/s"),
                (1e3, "kbit/s"),
                (1.0, "bit/s"),
            ],
        )
    }
}

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        human(
            f,
            self.0,
            &[(1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB"), (1.0, "B")],
        )
    }
}

impl fmt::Display for Nanos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        human(f, self.0, &[(1e9, "s"), (1e6, "ms"), (1e3, "us"), (1.0, "ns")])
    }
}

macro_rules! serde_via_str {
    ($ty:ident, $what:literal) => {
        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                // A visitor, not an untagged enum, so that what the
                // deserializer itself says (e.g. a missing field) reaches
                // the user as it is.
                struct Visitor;
                impl serde::de::Visitor<'_> for Visitor {
                    type Value = $ty;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str(concat!(
                            $what,
                            " as a string such as in the examples of the docs"
                        ))
                    }
                    fn visit_str<E: serde::de::Error>(self, t: &str) -> Result<$ty, E> {
                        t.parse().map_err(E::custom)
                    }
                    // A bare number too (in the base unit), as JSON reports write them.
                    fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<$ty, E> {
                        Ok($ty(n))
                    }
                    fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<$ty, E> {
                        let n = u64::try_from(n)
                            .map_err(|_| E::invalid_value(serde::de::Unexpected::Signed(n), &self))?;
                        Ok($ty(n))
                    }
                }
                d.deserialize_any(Visitor)
            }
        }
    };
}
serde_via_str!(Bps, "a rate");
serde_via_str!(Bytes, "a size");
serde_via_str!(Nanos, "a duration");

impl Bps {
    /// Bytes per second, as a float (for fluid-model arithmetic).
    pub fn bytes_per_sec(self) -> f64 {
        self.0 as f64 / 8.0
    }
    /// Time to send `bytes` at this rate (rounded up); `None` at rate 0.
    pub fn time_to_send(self, bytes: Bytes) -> Option<Nanos> {
        if self.0 == 0 {
            return None;
        }
        let ns = (bytes.0 as u128 * 8 * 1_000_000_000).div_ceil(self.0 as u128);
        Some(Nanos(ns.min(u64::MAX as u128) as u64))
    }
    /// This rate divided by the topology's `scale` factor.
    pub fn scaled_down(self, scale: f64) -> Bps {
        Bps((self.0 as f64 / scale).round() as u64)
    }
}

impl Bytes {
    /// This size divided by the topology's `scale` factor (at least 1 byte if it was non-zero).
    pub fn scaled_down(self, scale: f64) -> Bytes {
        if self.0 == 0 {
            return self;
        }
        Bytes(((self.0 as f64 / scale).round() as u64).max(1))
    }
    /// In gigabytes (10^9 bytes), for reports.
    pub fn gb(self) -> f64 {
        self.0 as f64 / 1e9
    }
}

impl Nanos {
    /// Zero time.
    pub const ZERO: Nanos = Nanos(0);
    /// From seconds (rounded to the nanosecond).
    pub fn from_secs_f64(s: f64) -> Nanos {
        Nanos((s * 1e9).round().max(0.0) as u64)
    }
    /// From milliseconds.
    pub const fn from_millis(ms: u64) -> Nanos {
        Nanos(ms * 1_000_000)
    }
    /// From microseconds.
    pub const fn from_micros(us: u64) -> Nanos {
        Nanos(us * 1_000)
    }
    /// In seconds, as a float.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    /// As a `std::time::Duration`.
    pub fn as_duration(self) -> std::time::Duration {
        std::time::Duration::from_nanos(self.0)
    }
    /// `self - other`, or zero if `other` is later.
    pub fn saturating_sub(self, other: Nanos) -> Nanos {
        Nanos(self.0.saturating_sub(other.0))
    }
}

impl From<std::time::Duration> for Nanos {
    fn from(d: std::time::Duration) -> Nanos {
        Nanos(d.as_nanos().min(u64::MAX as u128) as u64)
    }
}

impl Add for Nanos {
    type Output = Nanos;
    fn add(self, o: Nanos) -> Nanos {
        Nanos(self.0.saturating_add(o.0))
    }
}
impl AddAssign for Nanos {
    fn add_assign(&mut self, o: Nanos) {
        self.0 = self.0.saturating_add(o.0);
    }
}
impl Sub for Nanos {
    type Output = Nanos;
    fn sub(self, o: Nanos) -> Nanos {
        self.saturating_sub(o)
    }
}
impl Add for Bytes {
    type Output = Bytes;
    fn add(self, o: Bytes) -> Bytes {
        Bytes(self.0.saturating_add(o.0))
    }
}
impl AddAssign for Bytes {
    fn add_assign(&mut self, o: Bytes) {
        self.0 = self.0.saturating_add(o.0);
    }
}
impl std::iter::Sum for Bytes {
    fn sum<I: Iterator<Item = Bytes>>(iter: I) -> Bytes {
        iter.fold(Bytes(0), |a, b| a + b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_rates_sizes_and_durations() {
        assert_eq!("10Gbit/s".parse::<Bps>().unwrap(), Bps(10_000_000_000));
        assert_eq!("250 Mbit/s".parse::<Bps>().unwrap(), Bps(250_000_000));
        assert_eq!("1e9bit/s".parse::<Bps>().unwrap(), Bps(1_000_000_000));
        assert_eq!("1.125GB".parse::<Bytes>().unwrap(), Bytes(1_125_000_000));
        assert_eq!("64KiB".parse::<Bytes>().unwrap(), Bytes(65_536));
        assert_eq!("10ms".parse::<Nanos>().unwrap(), Nanos(10_000_000));
        assert_eq!("250us".parse::<Nanos>().unwrap(), Nanos(250_000));
    }

    #[test]
    fn rejects_words_and_names_what_is_valid() {
        let e = "fast".parse::<Bps>().unwrap_err();
        assert_eq!(e.kind, "rate");
        assert!(e.to_string().contains("10Gbit/s"), "{e}");
        assert!("10 parsecs".parse::<Nanos>().is_err());
        assert!("-5MB".parse::<Bytes>().is_err());
    }

    #[test]
    fn out_of_range_values_say_why() {
        assert_eq!(
            "2GBIT/S".parse::<Bps>().unwrap(),
            Bps(2_000_000_000),
            "rate units in any case"
        );
        let e = "-5MB".parse::<Bytes>().unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("\"-5MB\" is negative: expected {SIZE_EXPECTED}")
        );
        let e = "1e30Gbit/s".parse::<Bps>().unwrap_err();
        assert!(
            e.to_string()
                .contains("is too large: the largest rate is 18.4Ebit/s"),
            "{e}"
        );
        let e = "1e12h".parse::<Nanos>().unwrap_err();
        assert!(e.to_string().contains("the largest duration is 584 years"), "{e}");
        for text in ["NaNs", "infms", "-infB", "1e400TB"] {
            assert!(
                text.parse::<Nanos>().is_err() && text.parse::<Bytes>().is_err(),
                "{text}"
            );
        }
        // 2^64 ns is one past the largest; 2^64 - 2048 fits exactly in an f64.
        assert!("18446744073709551616ns".parse::<Nanos>().is_err());
        assert_eq!(
            "18446744073709549568ns".parse::<Nanos>().unwrap(),
            Nanos(18_446_744_073_709_549_568)
        );
    }

    #[test]
    fn display_round_trips() {
        for s in ["10Gbit/s", "250Mbit/s", "1.125Gbit/s"] {
            let r: Bps = s.parse().unwrap();
            assert_eq!(r.to_string().parse::<Bps>().unwrap(), r);
        }
        assert_eq!(Nanos::from_millis(10).to_string(), "10ms");
        assert_eq!(Bytes(1_125_000_000).to_string(), "1.125GB");
    }

    #[test]
    fn time_to_send_rounds_up() {
        // 1 MB at 8 Mbit/s is exactly one second.
        assert_eq!(
            Bps(8_000_000).time_to_send(Bytes(1_000_000)),
            Some(Nanos(1_000_000_000))
        );
        assert_eq!(Bps(3).time_to_send(Bytes(1)), Some(Nanos(2_666_666_667)));
        assert_eq!(Bps(0).time_to_send(Bytes(1)), None);
    }
}
