//! `ocslab demo`: The main job: schedulers side by side on real bytes, one table. (stub until its work lands.)

use anyhow::{bail, Result};
use std::process::ExitCode;

/// Arguments of `ocslab demo`.
#[derive(clap::Args, Debug)]
pub struct DemoArgs {}

/// Runs `ocslab demo`.
pub fn run(_a: DemoArgs) -> Result<ExitCode> {
    bail!("not yet implemented")
}
