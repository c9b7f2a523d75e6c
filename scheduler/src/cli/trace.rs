//! `ocslab trace gen`: write a seeded Coflow-Benchmark-style trace
//! ([`crate::trace::generate`]).

use crate::trace::generate::{Dist, GenSpec};
use anyhow::{Context, Result};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// `ocslab trace` commands.
#[derive(clap::Subcommand, Debug)]
pub enum TraceCommand {
    /// Generate a coflow trace in the Coflow-Benchmark format.
    Gen(GenArgs),
}

/// Arguments of `ocslab trace gen`. Distributions are `const:X`,
/// `uniform:A,B`, `exp:MEAN`, `pareto:MIN,SHAPE` or `lognormal:MEDIAN,SIGMA`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Distributions: const:X, uniform:A,B, exp:MEAN, pareto:MIN,SHAPE, lognormal:MEDIAN,SIGMA (numbers > 0).\n\nExample:\n  ocslab trace gen --racks 50 --coflows 300 --seed 1 -o /tmp/gen-50x300.txt"
)]
pub struct GenArgs {
    /// Racks (ports).
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..))]
    pub racks: u32,
    /// Coflows.
    #[arg(long, default_value_t = 300)]
    pub coflows: usize,
    /// Seed: the same arguments and seed give the same file.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Milliseconds between arrivals (exp: Poisson arrivals).
    #[arg(long, default_value = "exp:1000")]
    pub gap_ms: Dist,
    /// Mappers per coflow (rounded down, clamped to 1..=racks).
    #[arg(long, default_value = "pareto:1,1")]
    pub mappers: Dist,
    /// Reducers per coflow (rounded down, clamped to 1..=racks).
    #[arg(long, default_value = "pareto:1,1")]
    pub reducers: Dist,
    /// MB each reducer receives (rounded to a whole MB, at least 1).
    #[arg(long, default_value = "lognormal:4,2.5")]
    pub reducer_mb: Dist,
    /// Write here instead of standard output.
    #[arg(short, long)]
    pub out: Option<PathBuf>,
}

/// Runs `ocslab trace`.
pub fn run(c: TraceCommand) -> Result<ExitCode> {
    let TraceCommand::Gen(a) = c;
    let spec = GenSpec {
        racks: a.racks,
        coflows: a.coflows,
        seed: a.seed,
        gap_ms: a.gap_ms,
        mappers: a.mappers,
        reducers: a.reducers,
        reducer_mb: a.reducer_mb,
    };
    let text = spec.generate().to_text();
    match a.out {
        Some(path) => std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?,
        None => std::io::stdout().lock().write_all(text.as_bytes())?,
    }
    Ok(ExitCode::SUCCESS)
}
