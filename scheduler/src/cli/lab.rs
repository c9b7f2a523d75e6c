//! The Mininet-style lab: `up`, `down`, `exec`, `ocs set|show`, `status`.
//! (Owned by the fabric work; stubs until it lands.)

use anyhow::{bail, Result};
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `ocslab up`.
#[derive(clap::Args, Debug)]
pub struct UpArgs {
    /// The topology file.
    pub file: PathBuf,
}
/// Arguments of `ocslab down`.
#[derive(clap::Args, Debug)]
pub struct DownArgs {}
/// Arguments of `ocslab exec`.
#[derive(clap::Args, Debug)]
pub struct ExecArgs {
    /// Host name, r<rack>h<host>.
    pub host: String,
    /// The command and its arguments.
    #[arg(last = true, required = true)]
    pub cmd: Vec<String>,
}
/// `ocslab ocs ...`
#[derive(clap::Subcommand, Debug)]
pub enum OcsCommand {
    /// Show circuits.
    Show {},
}
/// Arguments of `ocslab status`.
#[derive(clap::Args, Debug)]
pub struct StatusArgs {}

/// `ocslab up`.
pub fn up(_a: UpArgs) -> Result<ExitCode> {
    bail!("not yet implemented")
}
/// `ocslab down`.
pub fn down(_a: DownArgs) -> Result<ExitCode> {
    bail!("not yet implemented")
}
/// `ocslab exec`.
pub fn exec(_a: ExecArgs) -> Result<ExitCode> {
    bail!("not yet implemented")
}
/// `ocslab ocs`.
pub fn ocs(_c: OcsCommand) -> Result<ExitCode> {
    bail!("not yet implemented")
}
/// `ocslab status`.
pub fn status(_a: StatusArgs) -> Result<ExitCode> {
    bail!("not yet implemented")
}
