//! `ocslab`: one binary for the lab (`up`, `exec`, `ocs`, `down`), the
//! experiments (`run`, `sim`, `replay`, `demo`) and the benchmarks (`bench`).
//! `main` only parses and dispatches; each command lives in `cli/<command>.rs`.

use clap::{CommandFactory, Parser, Subcommand};
use ocslab_scheduler::cli;
use std::process::ExitCode;

/// A lab on one Linux box for hybrid electrical/optical datacenter networks.
#[derive(Parser, Debug)]
#[command(
    name = "ocslab",
    version,
    propagate_version = true,
    after_help = "Examples:\n  ocslab demo                      # the main job: schedulers side by side, real bytes\n  \
                  ocslab demo --sim                # the same in the simulator\n  \
                  ocslab topo check topologies/lab.toml\n  \
                  ocslab sim experiments/lab-baselines.toml"
)]
struct Cli {
    /// More log output (-v info, -vv debug, -vvv trace); RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// The main job: schedulers side by side on real bytes, one table.
    Demo(cli::demo::DemoArgs),
    /// Run an experiment with real bytes on the kernel fabric.
    Run(cli::run::RunArgs),
    /// Run an experiment in the flow-level simulator (virtual time).
    Sim(cli::sim::SimArgs),
    /// Run an experiment in the simulator over a grid of its settings, against offered load.
    Sweep(cli::sweep::SweepArgs),
    /// Replay a coflow trace (Coflow-Benchmark format) under a coflow scheduler.
    Replay(cli::replay::ReplayArgs),
    /// Make coflow traces.
    #[command(
        subcommand,
        after_help = "Example:\n  ocslab trace gen --racks 50 --coflows 300 --seed 1 -o /tmp/gen.txt"
    )]
    Trace(cli::trace::TraceCommand),
    /// Validate a topology file and print what it describes.
    #[command(subcommand, after_help = "Example:\n  ocslab topo check topologies/lab.toml")]
    Topo(cli::topo::TopoCommand),
    /// Build a topology's fabric (namespaces, links, OCS) and keep it up.
    Up(cli::lab::UpArgs),
    /// Tear down a fabric (also what a crashed run left behind).
    Down(cli::lab::DownArgs),
    /// Run a command inside an emulated host, e.g. `ocslab exec r0h0 -- ping 198.18.1.10`.
    Exec(cli::lab::ExecArgs),
    /// Set or show optical circuits by hand.
    #[command(
        subcommand,
        after_help = "Examples:\n  ocslab ocs set 0:1 1:0\n  ocslab ocs show"
    )]
    Ocs(cli::lab::OcsCommand),
    /// Take a link of a running fabric down, or bring it back up.
    #[command(
        subcommand,
        after_help = "Examples:\n  ocslab link down r0-up\n  ocslab link up r0-up"
    )]
    Link(cli::lab::LinkCommand),
    /// Show the fabrics that are up.
    Status(cli::lab::StatusArgs),
    /// Benchmarks that print figures.
    #[command(
        subcommand,
        after_help = "Examples:\n  ocslab bench fabric --racks 16 --hosts-per-rack 8\n  ocslab bench sim"
    )]
    Bench(cli::bench::BenchCommand),
    /// Run one per-host agent (what the emulation driver starts in each host
    /// when no `ocslab-agent` binary sits beside `ocslab`).
    #[command(hide = true)]
    Agent(ocslab_agent::cli::AgentArgs),
    /// Print a shell completion script.
    Completions(cli::completions::CompletionsArgs),
}

/// One agent from a full `ocslab agent ...` command line (what a fork
/// server's child runs when no `ocslab-agent` sits beside `ocslab`).
fn run_agent(argv: Vec<std::ffi::OsString>) -> u8 {
    match Cli::try_parse_from(argv) {
        Ok(Cli {
            command: Command::Agent(a),
            verbose,
        }) => ocslab_agent::cli::exit_code(a, verbose),
        Ok(_) => {
            eprintln!("ocslab: a fork server runs only `ocslab agent`");
            2
        }
        Err(e) => {
            let _ = e.print();
            2
        }
    }
}

fn main() -> ExitCode {
    cli::keep_mmap_threshold();
    // Before any thread: a lab may have started this as its agents' fork
    // server.
    if let Some(code) = ocslab_agent::launch::serve_if_asked(run_agent) {
        return code;
    }
    let args = Cli::parse();
    cli::init_logging(args.verbose);
    let result = match args.command {
        Command::Demo(a) => cli::demo::run(a),
        Command::Run(a) => cli::run::run(a),
        Command::Sim(a) => cli::sim::run(a),
        Command::Sweep(a) => cli::sweep::run(a),
        Command::Replay(a) => cli::replay::run(a),
        Command::Trace(c) => cli::trace::run(c),
        Command::Topo(c) => cli::topo::run(c),
        Command::Up(a) => cli::lab::up(a),
        Command::Down(a) => cli::lab::down(a),
        Command::Exec(a) => cli::lab::exec(a),
        Command::Ocs(c) => cli::lab::ocs(c),
        Command::Link(c) => cli::lab::link(c),
        Command::Status(a) => cli::lab::status(a),
        Command::Bench(c) => cli::bench::run(c),
        Command::Agent(a) => Ok(ocslab_agent::cli::main_with(a, args.verbose)),
        Command::Completions(a) => cli::completions::run(a, &mut Cli::command()),
    };
    cli::interrupt::wait_if_ending();
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
