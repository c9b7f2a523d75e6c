//! `ocslab bench` figures (stub until its work lands).

use anyhow::{bail, Result};
use std::process::ExitCode;

/// Arguments.
#[derive(clap::Args, Debug)]
pub struct AgentsArgs {}
/// Runs the benchmark.
pub fn run(_a: AgentsArgs) -> Result<ExitCode> {
    bail!("not yet implemented")
}
