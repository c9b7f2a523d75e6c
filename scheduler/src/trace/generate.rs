//! Seeded Coflow-Benchmark-style traces (`ocslab trace gen`): racks,
//! coflows, an arrival process, and width and size distributions, so that
//! anyone can make more traces than FB2010 and replay them in every tool
//! that reads the format.
//!
//! Each coflow draws, in this order: its gap since the previous arrival
//! (whole milliseconds), its number of mappers and of reducers (whole,
//! clamped to 1..=racks), that many distinct racks for each (uniformly),
//! and each reducer's MB (rounded to a whole MB, at least 1, as FB2010's
//! are). The generator is ChaCha8 seeded with `seed`, so a spec and a seed
//! give the same file on every machine.

use super::coflow_benchmark::{CoflowTrace, TraceCoflow, MAX_REDUCER_MB};
use ocslab_emulator::Nanos;
use rand::seq::index::sample;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::fmt;
use std::fmt::Write as _;

/// A distribution of positive numbers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Dist {
    /// Always `x`.
    Const(f64),
    /// Uniform in `[a, b]`.
    Uniform(f64, f64),
    /// Exponential with this mean.
    Exp(f64),
    /// Pareto with this minimum and shape (heavier tail as it falls).
    Pareto(f64, f64),
    /// Log-normal with this median and σ of the log.
    LogNormal(f64, f64),
}

impl Dist {
    /// One draw.
    pub fn sample(&self, rng: &mut impl Rng) -> f64 {
        // In (0, 1], so that its logarithm and powers are finite.
        let mut u = || -> f64 { 1.0 - rng.random::<f64>() };
        match *self {
            Dist::Const(x) => x,
            Dist::Uniform(a, b) => a + (b - a) * (1.0 - u()),
            Dist::Exp(mean) => -mean * u().ln(),
            Dist::Pareto(min, shape) => min / u().powf(1.0 / shape),
            Dist::LogNormal(median, sigma) => {
                // Box–Muller.
                let (u1, u2) = (u(), u());
                let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                median * (sigma * z).exp()
            }
        }
    }
}

impl fmt::Display for Dist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Dist::Const(x) => write!(f, "const:{x}"),
            Dist::Uniform(a, b) => write!(f, "uniform:{a},{b}"),
            Dist::Exp(m) => write!(f, "exp:{m}"),
            Dist::Pareto(m, s) => write!(f, "pareto:{m},{s}"),
            Dist::LogNormal(m, s) => write!(f, "lognormal:{m},{s}"),
        }
    }
}

impl std::str::FromStr for Dist {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let expected = "expected const:X, uniform:A,B, exp:MEAN, pareto:MIN,SHAPE or lognormal:MEDIAN,SIGMA, with finite numbers > 0 (A <= B)";
        let bad = || format!("{s:?} is not a distribution: {expected}");
        let (kind, args) = s.split_once(':').ok_or_else(bad)?;
        let xs: Vec<f64> = args
            .split(',')
            .map(|x| x.trim().parse::<f64>().ok().filter(|x| x.is_finite() && *x > 0.0))
            .collect::<Option<_>>()
            .ok_or_else(bad)?;
        match (kind, xs.as_slice()) {
            ("const", &[x]) => Ok(Dist::Const(x)),
            ("uniform", &[a, b]) if a <= b => Ok(Dist::Uniform(a, b)),
            ("exp", &[m]) => Ok(Dist::Exp(m)),
            ("pareto", &[m, s]) => Ok(Dist::Pareto(m, s)),
            ("lognormal", &[m, s]) => Ok(Dist::LogNormal(m, s)),
            _ => Err(bad()),
        }
    }
}

/// What to generate.
#[derive(Clone, Debug, PartialEq)]
pub struct GenSpec {
    /// Racks (ports) of the fabric.
    pub racks: u32,
    /// Coflows.
    pub coflows: usize,
    /// The seed.
    pub seed: u64,
    /// Gap between arrivals, ms (the first coflow arrives at 0).
    pub gap_ms: Dist,
    /// Mappers per coflow.
    pub mappers: Dist,
    /// Reducers per coflow.
    pub reducers: Dist,
    /// MB each reducer receives.
    pub reducer_mb: Dist,
}

impl Default for GenSpec {
    /// 300 coflows on 50 racks: Poisson arrivals 1 s apart on average;
    /// widths Pareto(1, 1) (half have one mapper, one in ten at least ten);
    /// reducers log-normal around 4 MB with σ 2.5 (one in a hundred over
    /// 1.3 GB), a Coflow-Benchmark-like mix of many small coflows and a
    /// few that carry most of the bytes.
    fn default() -> GenSpec {
        GenSpec {
            racks: 50,
            coflows: 300,
            seed: 1,
            gap_ms: Dist::Exp(1000.0),
            mappers: Dist::Pareto(1.0, 1.0),
            reducers: Dist::Pareto(1.0, 1.0),
            reducer_mb: Dist::LogNormal(4.0, 2.5),
        }
    }
}

impl GenSpec {
    /// The trace.
    pub fn generate(&self) -> CoflowTrace {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let racks = self.racks.max(1);
        let width =
            |d: &Dist, rng: &mut ChaCha8Rng| (d.sample(rng).floor() as u64).clamp(1, racks as u64) as usize;
        let mut at_ms = 0u64;
        let coflows = (0..self.coflows)
            .map(|k| {
                if k > 0 {
                    let gap = self.gap_ms.sample(&mut rng).round();
                    at_ms = at_ms.saturating_add(gap.min(1e12) as u64);
                }
                let (m, r) = (width(&self.mappers, &mut rng), width(&self.reducers, &mut rng));
                let mut racks_of = |n: usize| -> Vec<u32> {
                    let mut v: Vec<u32> = sample(&mut rng, racks as usize, n)
                        .into_iter()
                        .map(|x| x as u32)
                        .collect();
                    v.sort_unstable();
                    v
                };
                let mappers = racks_of(m);
                let reducers = racks_of(r)
                    .into_iter()
                    .map(|rack| {
                        let mb = self
                            .reducer_mb
                            .sample(&mut rng)
                            .round()
                            .clamp(1.0, MAX_REDUCER_MB);
                        (rack, mb)
                    })
                    .collect();
                TraceCoflow {
                    line: k + 2,
                    id: k as u64 + 1,
                    arrival: Nanos::from_millis(at_ms),
                    mappers,
                    reducers,
                }
            })
            .collect();
        CoflowTrace {
            ports: racks,
            coflows,
        }
    }
}

impl CoflowTrace {
    /// The trace in the Coflow-Benchmark text format (what
    /// [`super::coflow_benchmark::parse`] reads back).
    pub fn to_text(&self) -> String {
        let mut out = format!("{} {}\n", self.ports, self.coflows.len());
        for c in &self.coflows {
            let _ = write!(out, "{} {} {}", c.id, c.arrival.0 / 1_000_000, c.mappers.len());
            for m in &c.mappers {
                let _ = write!(out, " {m}");
            }
            let _ = write!(out, " {}", c.reducers.len());
            for (r, mb) in &c.reducers {
                let _ = write!(out, " {r}:{mb:.1}");
            }
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::coflow_benchmark::parse;
    use std::path::Path;

    #[test]
    fn a_generated_trace_reads_back_as_written() {
        let spec = GenSpec::default();
        let t = spec.generate();
        assert_eq!((t.ports, t.coflows.len()), (50, 300));
        let back = parse(&t.to_text(), Path::new("gen.txt")).expect("parses");
        assert_eq!(back, t);
    }

    #[test]
    fn the_seed_decides_the_trace() {
        let spec = GenSpec::default();
        assert_eq!(spec.generate(), spec.generate());
        let other = GenSpec {
            seed: 2,
            ..spec.clone()
        };
        assert_ne!(other.generate(), spec.generate());
    }

    #[test]
    fn draws_follow_the_spec() {
        let spec = GenSpec {
            racks: 10,
            coflows: 2000,
            seed: 7,
            gap_ms: Dist::Const(5.0),
            mappers: Dist::Uniform(1.0, 20.0),
            reducers: Dist::Const(3.0),
            reducer_mb: Dist::Exp(100.0),
        };
        let t = spec.generate();
        // Arrivals every 5 ms; widths clamped to the racks, racks distinct.
        assert!(t
            .coflows
            .iter()
            .enumerate()
            .all(|(k, c)| c.arrival == Nanos::from_millis(5 * k as u64)));
        assert!(t
            .coflows
            .iter()
            .all(|c| (1..=10).contains(&c.mappers.len()) && c.reducers.len() == 3));
        assert!(t.coflows.iter().any(|c| c.mappers.len() == 10));
        assert!(t
            .coflows
            .iter()
            .all(|c| c.mappers.windows(2).all(|w| w[0] < w[1])));
        // Exponential MB with mean 100: whole MB >= 1, mean within 5 %.
        let mbs: Vec<f64> = t
            .coflows
            .iter()
            .flat_map(|c| c.reducers.iter().map(|r| r.1))
            .collect();
        assert!(mbs.iter().all(|&x| x >= 1.0 && x.fract() == 0.0));
        let mean = mbs.iter().sum::<f64>() / mbs.len() as f64;
        assert!((mean - 100.0).abs() < 5.0, "mean {mean}");
    }

    #[test]
    fn distributions_parse_and_print() {
        for s in [
            "const:3",
            "uniform:1,5",
            "exp:1000",
            "pareto:1,1.2",
            "lognormal:4,2.5",
        ] {
            let d: Dist = s.parse().expect("a distribution");
            assert_eq!(d.to_string(), s);
        }
        for bad in ["exp", "exp:-1", "uniform:5,1", "pareto:1", "zipf:1", "exp:inf"] {
            let e = bad.parse::<Dist>().unwrap_err();
            assert!(e.contains("expected const:X"), "{bad}: {e}");
        }
    }
}
