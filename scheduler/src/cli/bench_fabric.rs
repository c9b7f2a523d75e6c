//! `ocslab bench` figures (stub until its work lands).

use anyhow::{bail, Result};
use std::process::ExitCode;

/// Arguments.
#[derive(clap::Args, Debug)]
pub struct FabricArgs {}
/// Runs the benchmark.
pub fn fabric(_a: FabricArgs) -> Result<ExitCode> {
    bail!("not yet implemented")
}
/// Arguments.
#[derive(clap::Args, Debug)]
pub struct LinksArgs {}
/// Runs the benchmark.
pub fn links(_a: LinksArgs) -> Result<ExitCode> {
    bail!("not yet implemented")
}
/// Arguments.
#[derive(clap::Args, Debug)]
pub struct OcsArgs {}
/// Runs the benchmark.
pub fn ocs(_a: OcsArgs) -> Result<ExitCode> {
    bail!("not yet implemented")
}
