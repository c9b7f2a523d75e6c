//! `ocslab bench agents`: what the agents deliver and cost, measured by the
//! harness of [`crate::emu::bench`] (see there for what and how); this
//! module parses the arguments and prints the figures.

use crate::emu::bench::{self, AgentsBench, FabricReport, LoopbackReport, Report};
use anyhow::Result;
use ocslab_emulator::Bytes;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments.
#[derive(clap::Args, Debug)]
pub struct AgentsArgs {
    /// The topology to measure on.
    #[arg(long, default_value = "topologies/lab.toml")]
    topology: PathBuf,
    /// Bytes of each single-path flow (agent and iperf3 alike).
    #[arg(long, default_value = "6MB")]
    path_bytes: Bytes,
    /// Single-path runs of each (the medians are compared).
    #[arg(long, default_value_t = 5)]
    runs: u32,
    /// Bytes of each flow of the all-to-all shuffle.
    #[arg(long, default_value = "256kB")]
    shuffle_bytes: Bytes,
    /// Control-plane round trips to measure.
    #[arg(long, default_value_t = 2000)]
    pings: u32,
    /// Also measure unshaped flows on loopback (CPU-bound; slow).
    #[arg(long)]
    loopback: bool,
    /// Bytes of each loopback flow.
    #[arg(long, default_value = "1GB")]
    loopback_bytes: Bytes,
    /// Seconds of each loopback iperf3 run.
    #[arg(long, default_value_t = 3)]
    iperf_seconds: u32,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// Runs the benchmark.
pub fn run(a: AgentsArgs) -> Result<ExitCode> {
    let report = bench::run(&AgentsBench {
        topology: a.topology,
        path_bytes: a.path_bytes,
        runs: a.runs,
        shuffle_bytes: a.shuffle_bytes,
        pings: a.pings,
        loopback: a.loopback,
        loopback_bytes: a.loopback_bytes,
        iperf_seconds: a.iperf_seconds,
    })?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_table(&report);
    }
    Ok(ExitCode::SUCCESS)
}

fn print_table(r: &Report) {
    println!("ocslab bench agents (load average at start: {})", r.loadavg);
    match (&r.fabric, &r.fabric_note) {
        (Some(f), _) => print_fabric(f),
        (None, Some(why)) => println!("  kernel fabric: not measured: {why}"),
        (None, None) => {}
    }
    if let Some(l) = &r.loopback {
        print_loopback(l);
    }
    println!("  took {:.1} s", r.wall_s);
}

fn print_fabric(f: &FabricReport) {
    let list = |v: &[f64]| v.iter().map(|g| format!("{g:.1}")).collect::<Vec<_>>().join(", ");
    let p = &f.path;
    println!("kernel fabric: {}", f.topology);
    println!(
        "  one path {} -> {} ({} per flow, shaped at {:.1} Mbit/s)",
        p.src,
        p.dst,
        Bytes(p.bytes),
        p.line_rate_mbps
    );
    println!(
        "    agent TCP   {:>6.1} Mbit/s median  [{}]",
        p.agent_mbps_median,
        list(&p.agent_mbps)
    );
    match (p.iperf3_mbps_median, p.agent_vs_iperf3) {
        (Some(i), Some(ratio)) => println!(
            "    iperf3      {i:>6.1} Mbit/s median  [{}]  agent / iperf3 = {:.1}% (target >= 95%)",
            list(&p.iperf3_mbps),
            ratio * 100.0
        ),
        _ => println!("    iperf3: {}", p.iperf3_note.as_deref().unwrap_or("not run")),
    }
    let s = &f.all_to_all;
    println!(
        "  all-to-all shuffle, {} hosts, {} flows x {}: {:.2} s measured, {:.2} s fluid max-min",
        s.hosts,
        s.flows,
        Bytes(s.flow_bytes),
        s.measured_cct_s,
        s.fluid_cct_s
    );
    println!(
        "    aggregate goodput {:.1} Mbit/s vs bound {:.1} Mbit/s: {:.1}%",
        s.goodput_mbps,
        s.bound_mbps,
        s.efficiency * 100.0
    );
    println!(
        "    flows: FCT median {:.2} s, max {:.2} s; first byte up to {:.2} s after the request, {} flows >= 1 s late",
        s.fct_p50_s, s.fct_max_s, s.start_delay_max_s, s.flows_started_1s_late
    );
    println!(
        "    {} of the flows shared a flow queue on some link (more flows than queues there)",
        s.flows_sharing_a_queue
    );
    println!("  CCT measured / simulated, per coflow:");
    for c in &f.cct_vs_sim {
        println!(
            "    coflow {:>2}: {:>3} flows, {:>8}: {:.3} s / {:.3} s = {:.2}",
            c.coflow.0,
            c.flows,
            Bytes(c.bytes.0).to_string(),
            c.measured.as_secs_f64(),
            c.predicted.as_secs_f64(),
            c.ratio
        );
    }
    let m = &f.cct_vs_sim_summary;
    println!(
        "    average CCTs {:.2}; per coflow median {:.2}, mean {:.2}, range {:.2}-{:.2}",
        m.of_averages, m.median, m.mean, m.min, m.max
    );
    println!(
        "  control round trip p50 {:.0} us, p99 {:.0} us, max {:.0} us ({} pings)",
        f.control_rtt_us_p50, f.control_rtt_us_p99, f.control_rtt_us_max, f.control_rtt_samples
    );
    println!(
        "  agent RSS idle: at most {:.1} MiB over {} agents (target < 20 MB)",
        f.rss_idle_max_mib,
        f.rss_idle_kib.len()
    );
}

fn print_loopback(r: &LoopbackReport) {
    let fmt_list = |v: &[f64]| v.iter().map(|g| format!("{g:.2}")).collect::<Vec<_>>().join(", ");
    println!(
        "loopback (unshaped, CPU-bound): {} ({} per flow)",
        r.path,
        Bytes(r.flow_bytes)
    );
    println!(
        "  agent goodput, TCP   {:>7.2} Gbit/s median  [{}]",
        r.agent_tcp_gbps_median,
        fmt_list(&r.agent_tcp_gbps)
    );
    println!(
        "  agent goodput, QUIC  {:>7.2} Gbit/s median  [{}]",
        r.agent_quic_gbps_median,
        fmt_list(&r.agent_quic_gbps)
    );
    match (r.iperf3_gbps, r.agent_vs_iperf3) {
        (Some(i), Some(ratio)) => println!(
            "  iperf3, same path    {i:>7.2} Gbit/s median  [{}]  agent TCP / iperf3 = {:.1}% (target >= 95%)",
            fmt_list(&r.iperf3_gbps_runs),
            ratio * 100.0
        ),
        _ => println!("  iperf3: {}", r.iperf3_note.as_deref().unwrap_or("not run")),
    }
    println!(
        "  control round trip   p50 {:.0} us, p99 {:.0} us, max {:.0} us ({} pings)",
        r.control_rtt_us_p50, r.control_rtt_us_p99, r.control_rtt_us_max, r.control_rtt_samples
    );
    let mib = |v: &[u64]| {
        v.iter()
            .map(|k| format!("{:.1}", *k as f64 / 1024.0))
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!(
        "  agent RSS            idle [{}] MiB, after flows [{}] MiB (target idle < 20 MB)",
        mib(&r.rss_idle_kib),
        mib(&r.rss_after_flows_kib)
    );
}
