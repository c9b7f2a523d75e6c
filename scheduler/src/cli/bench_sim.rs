//! `ocslab bench` figures (stub until its work lands).

use anyhow::{bail, Result};
use std::process::ExitCode;

/// Arguments.
#[derive(clap::Args, Debug)]
pub struct SimArgs {}
/// Runs the benchmark.
pub fn run(_a: SimArgs) -> Result<ExitCode> {
    bail!("not yet implemented")
}
