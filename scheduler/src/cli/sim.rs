//! `ocslab sim`: Run an experiment in the flow-level simulator (virtual time). (stub until its work lands.)

use anyhow::{bail, Result};
use std::process::ExitCode;

/// Arguments of `ocslab sim`.
#[derive(clap::Args, Debug)]
pub struct SimArgs {}

/// Runs `ocslab sim`.
pub fn run(_a: SimArgs) -> Result<ExitCode> {
    bail!("not yet implemented")
}
