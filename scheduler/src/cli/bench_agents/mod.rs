//! `ocslab bench agents`: what the agents deliver and cost, on the kernel
//! fabric of `topologies/lab.toml` (4 racks × 4 hosts, 50 Mbit/s host links
//! and uplinks on this box), with the emulation driver ([`crate::emu`]):
//!
//! - **one path** (r0h0 → r1h0, across the EPS core): goodput of one agent
//!   flow against iperf3 on the same path, moving the same bytes (so both
//!   run as long and pay the same slow start), interleaved, `--runs` times
//!   each; medians compared. On a shaped path both are capped by the same
//!   htb class, so the ratio measures the agent, not the box's load;
//! - **all-to-all shuffle**: every host sends `--shuffle-bytes` to every
//!   other host as one coflow; its aggregate goodput (bytes ÷ CCT) against
//!   the max-min bound: the fluid model's goodput for the same flows on the
//!   same topology (each flow at its bottleneck's fair share);
//! - **CCT measured vs simulated**: that shuffle and a ring of rack-to-rack
//!   shuffles arriving 300 ms apart, each coflow's measured CCT ÷ the CCT
//!   the fluid model predicts for the same flows ([`crate::emu::compare`],
//!   as `cct_vs_sim.csv` of `ocslab run`);
//! - control-plane round trips (ping/pong over QUIC) p50/p99, and each
//!   agent's memory (VmRSS) when idle.
//!
//! `--loopback` adds the older measurement: two agents outside any
//! namespace, one unshaped flow on loopback per run against iperf3. There
//! the flow is CPU-bound, so on a shared box it measures the load of the
//! moment; it is kept for the raw speed of the data path.

use crate::emu::compare::{self, CctComparison, RatioSummary};
use crate::emu::{self, EmuConfig, FabricChoice, Lab, LabConfig};
use crate::model::coflow::{Coflow, CoflowId, FlowId as NetFlowId, FlowSpec as NetFlowSpec};
use anyhow::{bail, Context, Result};
use hdrhistogram::Histogram;
use ocslab_agent::control::{ControlServer, Event, ServerConfig};
use ocslab_agent::launch::{agent_binary, AgentLaunch};
use ocslab_agent::protocol::{
    AgentMsg, Command, FlowDone, FlowId, FlowSpec, JobId, PartitionId, Path, Transport,
};
use ocslab_emulator::fabric::{messages, netlink::Rtnl, rootless, Mode};
use ocslab_emulator::{Bytes, HostId, Nanos, Topology};
use serde::Serialize;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, ExitCode};
use std::time::Duration;

mod fabric;
mod loopback;

use fabric::{measure_fabric, print_fabric};
use loopback::{measure_loopback, print_loopback};

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

#[derive(Serialize)]
struct Report {
    /// `/proc/loadavg` at the start: the box is shared.
    loadavg: String,
    fabric: Option<FabricReport>,
    /// Why the fabric part did not run.
    fabric_note: Option<String>,
    loopback: Option<LoopbackReport>,
    wall_s: f64,
}

#[derive(Serialize)]
struct FabricReport {
    topology: String,
    path: PathReport,
    all_to_all: ShuffleReport,
    cct_vs_sim: Vec<CctComparison>,
    cct_vs_sim_summary: RatioSummary,
    control_rtt_us_p50: f64,
    control_rtt_us_p99: f64,
    control_rtt_us_max: f64,
    control_rtt_samples: u64,
    rss_idle_kib: Vec<u64>,
    rss_idle_max_mib: f64,
}

#[derive(Serialize)]
struct PathReport {
    src: HostId,
    dst: HostId,
    bytes: u64,
    /// The path's shaped rate (the smaller of host link and uplink).
    line_rate_mbps: f64,
    agent_mbps: Vec<f64>,
    agent_mbps_median: f64,
    iperf3_mbps: Vec<f64>,
    iperf3_mbps_median: Option<f64>,
    agent_vs_iperf3: Option<f64>,
    iperf3_note: Option<String>,
}

#[derive(Serialize)]
struct ShuffleReport {
    hosts: u32,
    flows: u32,
    flow_bytes: u64,
    total_bytes: u64,
    measured_cct_s: f64,
    fluid_cct_s: f64,
    goodput_mbps: f64,
    /// The max-min fluid model's goodput for the same flows.
    bound_mbps: f64,
    /// `goodput_mbps ÷ bound_mbps`.
    efficiency: f64,
    /// Median flow completion time (first byte sent → last byte received).
    fct_p50_s: f64,
    /// The slowest flow's.
    fct_max_s: f64,
    /// Longest wait from a flow's request to its first byte sent (the TCP
    /// connect: a lost SYN costs 1 s, then 2 s more).
    start_delay_max_s: f64,
    /// Flows that waited 1 s or more to send their first byte.
    flows_started_1s_late: u32,
}

#[derive(Serialize)]
struct LoopbackReport {
    path: String,
    flow_bytes: u64,
    agent_tcp_gbps: Vec<f64>,
    agent_tcp_gbps_median: f64,
    agent_quic_gbps: Vec<f64>,
    agent_quic_gbps_median: f64,
    iperf3_gbps_runs: Vec<f64>,
    iperf3_gbps: Option<f64>,
    iperf3_note: Option<String>,
    agent_vs_iperf3: Option<f64>,
    control_rtt_us_p50: f64,
    control_rtt_us_p99: f64,
    control_rtt_us_max: f64,
    control_rtt_samples: u64,
    rss_idle_kib: Vec<u64>,
    rss_after_flows_kib: Vec<u64>,
}

/// Runs the benchmark.
pub fn run(a: AgentsArgs) -> Result<ExitCode> {
    let wall = std::time::Instant::now();
    let loadavg = std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .trim()
        .to_string();
    // Namespaces first, while this process has one thread (rootless needs it).
    let fabric_ok = match rootless::enter_if_needed() {
        Err(e) => Err(format!("network namespaces cannot be made here: {e}")),
        Ok(Mode::Rootless) => Rtnl::open("the rootless namespace")
            .and_then(|mut s| s.execute(vec![messages::loopback_up()]))
            .map_err(|e| format!("bringing loopback up in the rootless namespace: {e}")),
        Ok(Mode::Root) => Ok(()),
    };
    let topo = Topology::load(&a.topology)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let (fabric, fabric_note) = match fabric_ok {
        Ok(()) => (Some(rt.block_on(measure_fabric(&a, &topo))?), None),
        Err(why) => (None, Some(why)),
    };
    let loopback = if a.loopback {
        Some(rt.block_on(measure_loopback(&a))?)
    } else {
        None
    };
    let report = Report {
        loadavg,
        fabric,
        fabric_note,
        loopback,
        wall_s: wall.elapsed().as_secs_f64(),
    };
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

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s.get(s.len() / 2).copied().unwrap_or(f64::NAN)
}

fn rss_kib(pid: u32) -> Result<u64> {
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).with_context(|| path.clone())?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .with_context(|| format!("{path}: no VmRSS line"))
}
