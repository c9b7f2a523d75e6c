//! `ocslab bench ...`: benchmarks that print figures (never timed tests).

use anyhow::Result;
use std::process::ExitCode;

/// `ocslab bench ...`
#[derive(clap::Subcommand, Debug)]
pub enum BenchCommand {
    /// Time to build and tear down a fabric of R racks x H hosts.
    #[command(after_help = "Example:\n  ocslab bench fabric --racks 16 --hosts-per-rack 8 --json")]
    Fabric(super::bench_fabric::FabricArgs),
    /// Configured vs measured TCP goodput through shaped links.
    #[command(after_help = "Example:\n  ocslab bench links --json")]
    Links(super::bench_fabric::LinksArgs),
    /// Configured reconfiguration delay vs measured dark time of circuits.
    #[command(after_help = "Example:\n  ocslab bench ocs --delays-us 1000 --json")]
    Ocs(super::bench_fabric::OcsArgs),
    /// Wall time of trace replay (FB2010 under every coflow scheduler, ~10 min on 2 cores) and of large simulations.
    #[command(
        after_help = "Examples:\n  ocslab bench sim --json\n  ocslab bench sim --schedulers fair --jobs 0   # the fair replay alone"
    )]
    Sim(super::bench_sim::SimArgs),
    /// Agent goodput, control-plane round trips and memory.
    #[command(after_help = "Example:\n  ocslab bench agents --json")]
    Agents(super::bench_agents::AgentsArgs),
}

/// Runs a benchmark. Those that build fabrics tear them down when a signal
/// ends them ([`super::interrupt::tear_down_on_signal_as_root`]).
pub fn run(cmd: BenchCommand) -> Result<ExitCode> {
    if !matches!(cmd, BenchCommand::Sim(_)) {
        super::interrupt::tear_down_on_signal_as_root()?;
    }
    match cmd {
        BenchCommand::Fabric(a) => super::bench_fabric::fabric(a),
        BenchCommand::Links(a) => super::bench_fabric::links(a),
        BenchCommand::Ocs(a) => super::bench_fabric::ocs(a),
        BenchCommand::Sim(a) => super::bench_sim::run(a),
        BenchCommand::Agents(a) => super::bench_agents::run(a),
    }
}
