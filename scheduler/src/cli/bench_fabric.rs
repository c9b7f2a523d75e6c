//! `ocslab bench fabric|links|ocs`: figures of the kernel fabric, measured
//! on this box by the harnesses of `ocslab_emulator::fabric::bench`
//! (never timed tests); this module parses the arguments and prints.

use anyhow::Result;
use ocslab_emulator::fabric::bench;
use ocslab_emulator::fabric::htb;
use ocslab_emulator::Bps;
use std::process::ExitCode;

/// Arguments of `ocslab bench fabric`.
#[derive(clap::Args, Debug)]
pub struct FabricArgs {
    /// Racks.
    #[arg(long, default_value_t = 16)]
    pub racks: u32,
    /// Hosts per rack.
    #[arg(long, default_value_t = 8)]
    pub hosts_per_rack: u32,
    /// OCS ports per rack.
    #[arg(long, default_value_t = 1)]
    pub ocs_ports: u32,
    /// Build threads (0: one per core, at most 4).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Builds to time (the figures are medians).
    #[arg(long, default_value_t = 3)]
    pub repeat: u32,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs the benchmark.
pub fn fabric(a: FabricArgs) -> Result<ExitCode> {
    // Before any thread: rootless builds inside a user namespace.
    let figures = bench::build_and_teardown(a.racks, a.hosts_per_rack, a.ocs_ports, a.threads, a.repeat)?;
    if a.json {
        println!("{}", serde_json::to_string(&figures)?);
    } else {
        println!(
            "{} hosts ({} racks x {}), {:?} mode: {} namespaces, {} veth pairs, {} htb classes",
            figures.hosts,
            a.racks,
            a.hosts_per_rack,
            figures.mode,
            figures.namespaces,
            figures.veth_pairs,
            figures.htb_classes
        );
        println!(
            "up {:.3} s, down {:.3} s (median of {}), leftover {}",
            figures.up_s,
            figures.down_s,
            figures.runs.len(),
            figures.leftover
        );
    }
    Ok(if figures.leftover == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Arguments of `ocslab bench links`.
#[derive(clap::Args, Debug)]
pub struct LinksArgs {
    /// Configured rates to measure.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "10Mbit/s,100Mbit/s,1Gbit/s,5Gbit/s"
    )]
    pub rates: Vec<Bps>,
    /// Seconds of measurement per link (after a 0.5 s warm-up).
    #[arg(long, default_value_t = 2.0)]
    pub seconds: f64,
    /// Also measure one stream each way at once (each direction's ACKs
    /// queue behind the other's data).
    #[arg(long)]
    pub two_way: bool,
    /// Leaf queue under each htb class, in µs of the rate (0: the kernel's
    /// default pfifo of 1000 packets, to compare against).
    #[arg(long, default_value_t = htb::DEFAULT_LEAF_DELAY.0 / 1000)]
    pub leaf_queue_us: u64,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs the benchmark.
pub fn links(a: LinksArgs) -> Result<ExitCode> {
    let figures = bench::link_goodputs(&a.rates, a.seconds, a.two_way, a.leaf_queue_us)?;
    if a.json {
        println!("{}", serde_json::to_string(&figures)?);
    } else {
        for fig in &figures {
            println!(
                "{:<10} {:<7} configured {:>10}  allows {:>9.2} Mbit/s  measured {:>9.2} Mbit/s  ({:+.1}%)",
                fig.link,
                fig.direction,
                Bps(fig.configured_bps).to_string(),
                fig.allowed_bps / 1e6,
                fig.measured_bps / 1e6,
                fig.error_pct
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Arguments of `ocslab bench ocs`.
#[derive(clap::Args, Debug)]
pub struct OcsArgs {
    /// Reconfiguration delay δ in microseconds.
    #[arg(long, default_value_t = 1000)]
    pub delay_us: u64,
    /// Reconfigurations to measure.
    #[arg(long, default_value_t = 40)]
    pub rounds: u32,
    /// Probe packet interval in microseconds (per destination: twice this;
    /// the sender sleeps between packets, so the real spacing is printed).
    #[arg(long, default_value_t = 10)]
    pub interval_us: u64,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs the benchmark.
pub fn ocs(a: OcsArgs) -> Result<ExitCode> {
    let figures = bench::dark_time(a.delay_us, a.rounds, a.interval_us)?;
    if a.json {
        println!("{}", serde_json::to_string(&figures)?);
    } else {
        println!(
            "δ = {} µs, {} reconfigurations ({} dark gaps seen; a probe packet reached each rack every {:.0} µs)",
            a.delay_us, a.rounds, figures.gaps_measured, figures.probe_spacing_us
        );
        println!(
            "dark time p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs (target |p50 - δ| <= {:.0} µs: {})",
            figures.dark_p50_us,
            figures.dark_p99_us,
            figures.dark_max_us,
            figures.target_us,
            if figures.within_target { "met" } else { "missed" }
        );
        println!(
            "setup applied after δ: p50 {:.1} µs, p99 {:.1} µs; teardown batch p50 {:.1} µs, p99 {:.1} µs",
            figures.setup_late_p50_us,
            figures.setup_late_p99_us,
            figures.teardown_p50_us,
            figures.teardown_p99_us
        );
        println!(
            "probe: {} packets sent, {} received",
            figures.probe_packets_sent, figures.probe_packets_received
        );
    }
    Ok(ExitCode::SUCCESS)
}
