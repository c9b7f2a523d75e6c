//! `ocslab-agent`: the per-host agent. Started by the emulation driver inside
//! a host's network namespace with an inherited control socket, or by hand:
//!
//! ```text
//! ocslab-agent --host r0h1 --data-addr 198.18.0.11 --control-fd 3 \
//!              --scheduler 127.0.0.1:4433 --run-dir /tmp/ocslab-run
//! ocslab-agent --host r0h1 --data-addr 127.0.0.2:0 --control-bind 127.0.0.1:0 \
//!              --scheduler 127.0.0.1:4433 --run-dir /tmp/ocslab-run
//! ```

use clap::Parser;
use ocslab_agent::cli::{main_with, AgentArgs};
use std::process::ExitCode;

/// The per-host agent of ocslab: runs map/reduce tasks and moves shuffle bytes.
#[derive(Parser, Debug)]
#[command(name = "ocslab-agent", version)]
struct Cli {
    #[command(flatten)]
    args: AgentArgs,
    /// More log output (-v info, -vv debug, -vvv trace); RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count)]
    verbose: u8,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    main_with(cli.args, cli.verbose)
}
