//! How a Coflow-Benchmark trace line becomes flows: the trace gives each
//! reducer's total MB and the coflow's mapper racks, not flows, and the two
//! reference simulators turn that into flows differently. The rule changes
//! results (a 50-mapper coflow whose reducer takes 1 MB is 1 MiB under
//! [`FlowSizes::Exact`] and 50 MiB or 50 MB under the other two), so a
//! replay says which one it used.
//!
//! | rule | MB is | reducer bytes | flows | smallest flow |
//! |---|---|---|---|---|
//! | [`FlowSizes::CoflowSim`] | 2^20 B | rounded up to whole MiB; reducers of one rack summed, then rounded up to a multiple of (mapper racks) MiB | one per (mapper rack, reducer rack): mappers of one rack merged | 1 MiB |
//! | [`FlowSizes::Sunflow`] | 10^6 B, integer part only | as given | one per (mapper, reducer): ⌈bytes ÷ mappers⌉ ± up to 5 %, seeded | 10^6 B |
//! | [`FlowSizes::Exact`] | 2^20 B | as given, rounded to the byte | one per (mapper, reducer): an even split, the remainder one byte each to the first mappers | none (0-byte flows left out) |
//!
//! - `coflowsim` is CoflowSim's `CoflowBenchmarkTraceProducer` with
//!   `Simulator.mergeTasksByRack` (`Job.arrangeTasks`: `coalesceMappers`,
//!   `coalesceReducers`, `ReduceTask.roundToNearestNMB`, `createFlows`:
//!   `Math.max(avgFlowSize, 1048576)`). The reader behind the published
//!   Varys and Aalo results, so the default.
//! - `sunflow` is Sunflow's `TGTraceFB` with its defaults
//!   (`ENABLE_PERTURB_IN_PLAY`: `CreateFlowsWithSizePerturb` with 5 %):
//!   the MB field read with `stol` (so `1.5` is 1 MB), each flow
//!   `(long)(⌈bytes ÷ mappers⌉ · (1 ± 0.05·u))` with the sign and `u` from
//!   glibc `rand()` reseeded per coflow: `srand(seed)` fills 600 seeds, and
//!   coflow `id` uses seed number `(id + 5122) mod 600`. Seed 13 is
//!   Sunflow's own, and gives the flows Sunflow's simulator replays.
//! - `exact` keeps every byte the trace gives and adds none.

use super::coflow_benchmark::TraceCoflow;
use super::glibc_rand::{GlibcRand, RAND_MAX};
use std::collections::BTreeMap;
use std::fmt;

/// Bytes in a MiB.
const MIB: u64 = 1 << 20;

/// Sunflow's seed for its per-coflow seeds (`TGTraceFB::TGTraceFB`).
pub const SUNFLOW_SEED: u32 = 13;

/// Sunflow's number of per-coflow seeds (`PERTURB_SEED_NUM`).
const SUNFLOW_SEEDS: usize = 600;

/// A rule that turns a trace line into flows (see the module doc).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FlowSizes {
    /// CoflowSim's: MiB, whole MiB per flow, mappers and reducers merged per rack.
    #[default]
    CoflowSim,
    /// Sunflow's: 10^6 bytes, ⌈MB ÷ mappers⌉ ± 5 % per flow, at least 10^6 bytes.
    Sunflow {
        /// The seed of the per-coflow seeds ([`SUNFLOW_SEED`] is Sunflow's).
        seed: u32,
    },
    /// Every byte as given, split evenly; no minimum.
    Exact,
}

impl fmt::Display for FlowSizes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FlowSizes::CoflowSim => f.write_str("coflowsim"),
            FlowSizes::Sunflow { seed: SUNFLOW_SEED } => f.write_str("sunflow"),
            FlowSizes::Sunflow { seed } => write!(f, "sunflow:{seed}"),
            FlowSizes::Exact => f.write_str("exact"),
        }
    }
}

impl std::str::FromStr for FlowSizes {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let expected = "expected coflowsim, sunflow, sunflow:<seed> (a whole number below 2^32) or exact";
        match s {
            "coflowsim" => Ok(FlowSizes::CoflowSim),
            "sunflow" => Ok(FlowSizes::Sunflow { seed: SUNFLOW_SEED }),
            "exact" => Ok(FlowSizes::Exact),
            _ => match s.strip_prefix("sunflow:").map(str::parse) {
                Some(Ok(seed)) => Ok(FlowSizes::Sunflow { seed }),
                _ => Err(format!("{s:?} is not a flow-size rule: {expected}")),
            },
        }
    }
}

/// One flow of a trace coflow, at nominal size (before the topology's scale).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SizedFlow {
    /// The sending task's index among the coflow's (merged, under
    /// `coflowsim`) mappers: where it is placed in its rack.
    pub mapper: usize,
    /// The receiving task's index among the coflow's (merged) reducers.
    pub reducer: usize,
    /// The sending rack, as the trace numbers it.
    pub src_rack: u32,
    /// The receiving rack.
    pub dst_rack: u32,
    /// Its bytes.
    pub bytes: u64,
}

/// A [`FlowSizes`] rule ready to size a trace's coflows (Sunflow's
/// per-coflow seeds drawn once).
#[derive(Clone, Debug)]
pub struct Sizer {
    rule: FlowSizes,
    seeds: Vec<u32>,
}

impl Sizer {
    /// The sizer of `rule`.
    pub fn new(rule: FlowSizes) -> Sizer {
        let seeds = match rule {
            FlowSizes::Sunflow { seed } => {
                let mut g = GlibcRand::new(seed);
                (0..SUNFLOW_SEEDS).map(|_| g.rand()).collect()
            }
            _ => Vec::new(),
        };
        Sizer { rule, seeds }
    }

    /// The flows of trace coflow `c`, reducer by reducer, each in mapper order.
    pub fn flows(&self, c: &TraceCoflow) -> Vec<SizedFlow> {
        match self.rule {
            FlowSizes::CoflowSim => coflowsim(c),
            FlowSizes::Sunflow { .. } => {
                let n = SUNFLOW_SEEDS as u64;
                let index = (c.id % n + 5122 % n) % n; // (id + 5122) mod 600
                sunflow(c, self.seeds[index as usize])
            }
            FlowSizes::Exact => exact(c),
        }
    }
}

/// `n` rounded up to a multiple of `unit` (`ReduceTask.roundToNearestNMB`).
fn round_up(n: u64, unit: u64) -> u64 {
    n.div_ceil(unit).saturating_mul(unit)
}

fn coflowsim(c: &TraceCoflow) -> Vec<SizedFlow> {
    // Mappers merged per rack, in rack order (`coalesceMappers`).
    let mappers: Vec<u32> = {
        let mut racks = c.mappers.clone();
        racks.sort_unstable();
        racks.dedup();
        racks
    };
    // Each reducer to whole MiB (the `ReduceTask` constructor), then summed
    // per rack (`coalesceReducers`), in rack order.
    let mut reducers: BTreeMap<u32, u64> = BTreeMap::new();
    for &(rack, mb) in &c.reducers {
        let bytes = round_up((mb * MIB as f64) as u64, MIB);
        let sum = reducers.entry(rack).or_default();
        *sum = sum.saturating_add(bytes);
    }
    let n = mappers.len() as u64;
    let mut flows = Vec::with_capacity(mappers.len() * reducers.len());
    for (r, (&dst_rack, &bytes)) in reducers.iter().enumerate() {
        // A multiple of (mapper racks) MiB, so every flow is whole MiB.
        let each = (round_up(bytes, n * MIB) / n).max(MIB);
        for (m, &src_rack) in mappers.iter().enumerate() {
            flows.push(SizedFlow {
                mapper: m,
                reducer: r,
                src_rack,
                dst_rack,
                bytes: each,
            });
        }
    }
    flows
}

fn sunflow(c: &TraceCoflow, seed: u32) -> Vec<SizedFlow> {
    const MIN: u64 = 1_000_000;
    let mut rng = GlibcRand::new(seed);
    let n = c.mappers.len() as f64;
    let mut flows = Vec::with_capacity(c.mappers.len() * c.reducers.len());
    for (r, &(dst_rack, mb)) in c.reducers.iter().enumerate() {
        // `1000000 * stol(field)`: the integer part of the MB.
        let bytes = 1_000_000.0 * mb.trunc();
        let avg = (bytes / n).ceil();
        for (m, &src_rack) in c.mappers.iter().enumerate() {
            let direction = if rng.rand() % 2 == 1 { 1.0 } else { -1.0 };
            let u = rng.rand() as f64 / RAND_MAX as f64;
            // As the C++ evaluates it: ((dir · u) · 5) / 100, then long · double truncated.
            let perturb = direction * u * 5.0 / 100.0;
            let size = (avg * (1.0 + perturb)) as u64;
            flows.push(SizedFlow {
                mapper: m,
                reducer: r,
                src_rack,
                dst_rack,
                bytes: size.max(MIN),
            });
        }
    }
    flows
}

fn exact(c: &TraceCoflow) -> Vec<SizedFlow> {
    let m = c.mappers.len() as u64;
    let mut flows = Vec::with_capacity(c.mappers.len() * c.reducers.len());
    for (r, &(dst_rack, mb)) in c.reducers.iter().enumerate() {
        let total = (mb * MIB as f64).round() as u64;
        for (j, &src_rack) in c.mappers.iter().enumerate() {
            let bytes = total / m + u64::from((j as u64) < total % m);
            if bytes > 0 {
                flows.push(SizedFlow {
                    mapper: j,
                    reducer: r,
                    src_rack,
                    dst_rack,
                    bytes,
                });
            }
        }
    }
    flows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::coflow_benchmark::parse;
    use std::path::Path;

    /// Three coflows: two mappers on one rack; a 0 MB and a 1.5 MB
    /// reducer; two reducers on one rack.
    const THREE: &str = "4 3\n\
                         1 0 3 0 0 1 1 2:1.0\n\
                         2 5 2 0 1 2 2:0.0 3:1.5\n\
                         3 9 1 3 2 1:2.0 1:3.0\n";

    fn sized(rule: FlowSizes) -> Vec<Vec<(u32, u32, u64)>> {
        let t = parse(THREE, Path::new("three.txt")).expect("parses");
        let sizer = Sizer::new(rule);
        t.coflows
            .iter()
            .map(|c| {
                sizer
                    .flows(c)
                    .iter()
                    .map(|f| (f.src_rack, f.dst_rack, f.bytes))
                    .collect()
            })
            .collect()
    }

    #[test]
    fn coflowsim_merges_racks_and_rounds_to_whole_mib_per_flow() {
        let f = sized(FlowSizes::CoflowSim);
        // 1: mapper racks {0, 1}; 1 MiB rounded up to 2 MiB: 1 MiB each.
        assert_eq!(f[0], vec![(0, 2, MIB), (1, 2, MIB)]);
        // 2: 0 MB still gets 1 MiB flows; 1.5 MB → 2 MiB, 1 MiB each.
        assert_eq!(f[1], vec![(0, 2, MIB), (1, 2, MIB), (0, 3, MIB), (1, 3, MIB)]);
        // 3: reducers of rack 1 summed: 2 + 3 = 5 MiB, one mapper rack.
        assert_eq!(f[2], vec![(3, 1, 5 * MIB)]);
    }

    #[test]
    fn exact_keeps_every_byte_and_adds_none() {
        let f = sized(FlowSizes::Exact);
        // 1 MiB over three mappers: 349,526 + 349,525 + 349,525.
        assert_eq!(f[0], vec![(0, 2, 349_526), (0, 2, 349_525), (1, 2, 349_525)]);
        // The 0 MB reducer has no flows; 1.5 MiB = 1,572,864 over two mappers.
        assert_eq!(f[1], vec![(0, 3, 786_432), (1, 3, 786_432)]);
        assert_eq!(f[2], vec![(3, 1, 2 * MIB), (3, 1, 3 * MIB)]);
    }

    #[test]
    fn sunflow_perturbs_within_five_percent_from_glibc_rand() {
        let f = sized(FlowSizes::Sunflow { seed: SUNFLOW_SEED });
        // Every flow is at least 10^6 bytes: 1 MB over three mappers is
        // ⌈333,333.3⌉ ± 5 %, raised to 10^6; 0 MB too.
        assert!(f[0].iter().all(|&(_, _, b)| b == 1_000_000), "{:?}", f[0]);
        assert_eq!(f[0].len(), 3);
        assert_eq!(f[1][0].2, 1_000_000);
        // 1.5 MB is read as 1 MB (`stol`): 500,000 ± 5 %, raised to 10^6.
        assert!(f[1][2..].iter().all(|&(_, _, b)| b == 1_000_000));
        // 2 MB and 3 MB from one mapper: within 5 % of 2·10^6 and 3·10^6,
        // the sign and size from coflow 3's seed, as glibc draws them.
        let seeds: Vec<u32> = {
            let mut g = GlibcRand::new(SUNFLOW_SEED);
            (0..600).map(|_| g.rand()).collect()
        };
        let mut g = GlibcRand::new(seeds[(3 + 5122) % 600]);
        for (k, base) in [2_000_000.0f64, 3_000_000.0].into_iter().enumerate() {
            let sign = if g.rand() % 2 == 1 { 1.0 } else { -1.0 };
            let u = g.rand() as f64 / RAND_MAX as f64;
            let want = (base * (1.0 + sign * u * 0.05)) as u64;
            assert_eq!(f[2][k].2, want);
            assert!((f[2][k].2 as f64 - base).abs() <= 0.05 * base);
        }
        // Another seed draws other sizes.
        assert_ne!(sized(FlowSizes::Sunflow { seed: 7 })[2], f[2]);
    }

    #[test]
    fn rules_parse_and_print() {
        for s in ["coflowsim", "sunflow", "sunflow:7", "exact"] {
            let r: FlowSizes = s.parse().expect("a rule");
            assert_eq!(r.to_string(), s);
        }
        let e = "sunflow:x".parse::<FlowSizes>().unwrap_err();
        assert!(e.contains("expected coflowsim, sunflow"), "{e}");
    }
}
