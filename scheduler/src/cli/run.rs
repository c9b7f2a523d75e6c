//! `ocslab run`: Run an experiment with real bytes on the kernel fabric. (stub until its work lands.)

use anyhow::{bail, Result};
use std::process::ExitCode;

/// Arguments of `ocslab run`.
#[derive(clap::Args, Debug)]
pub struct RunArgs {}

/// Runs `ocslab run`.
pub fn run(_a: RunArgs) -> Result<ExitCode> {
    bail!("not yet implemented")
}
