//! The `ocslab` command line: one module per command, each with its clap
//! arguments and a `run`-style function returning the process exit code.

pub mod bench;
pub mod bench_agents;
pub mod bench_fabric;
pub mod bench_sim;
pub mod completions;
pub mod demo;
pub mod lab;
pub mod replay;
pub mod replay_emu;
pub mod run;
pub mod sim;
pub mod topo;

/// Logs go to stderr through `tracing`; `RUST_LOG` overrides `-v`.
pub fn init_logging(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}
