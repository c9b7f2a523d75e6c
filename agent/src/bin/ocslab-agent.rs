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
use ocslab_agent::cli::{exit_code, main_with, AgentArgs};
use ocslab_agent::launch::serve_if_asked;
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

/// One agent from a full command line (a fork server's child runs this).
fn run_agent(argv: Vec<std::ffi::OsString>) -> u8 {
    match Cli::try_parse_from(argv) {
        Ok(cli) => exit_code(cli.args, cli.verbose),
        Err(e) => {
            let _ = e.print();
            2
        }
    }
}

fn main() -> ExitCode {
    // First, before any thread: a lab may have started this as its
    // agents' fork server.
    if let Some(code) = serve_if_asked(run_agent) {
        return code;
    }
    let cli = Cli::parse();
    main_with(cli.args, cli.verbose)
}
