//! `ocslab replay`: Replay a coflow trace (Coflow-Benchmark format) under a coflow scheduler. (stub until its work lands.)

use anyhow::{bail, Result};
use std::process::ExitCode;

/// Arguments of `ocslab replay`.
#[derive(clap::Args, Debug)]
pub struct ReplayArgs {}

/// Runs `ocslab replay`.
pub fn run(_a: ReplayArgs) -> Result<ExitCode> {
    bail!("not yet implemented")
}
