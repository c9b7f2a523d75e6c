//! The agents' benchmark harness (`ocslab bench agents` prints it), on the
//! kernel fabric of a topology (by default `topologies/lab.toml`: 4 racks
//! of 4 hosts, 50 Mbit/s links), with the emulation driver:
//!
//! - **one path** (r0h0 → r1h0, across the EPS core): goodput of one agent
//!   flow against iperf3 on the same path, moving the same bytes (so both
//!   run as long and pay the same slow start), interleaved, `runs` times
//!   each; medians compared. On a shaped path both are capped by the same
//!   htb class, so the ratio measures the agent, not the box's load;
//! - **all-to-all shuffle**: every host sends `shuffle_bytes` to every
//!   other host as one coflow; its aggregate goodput (bytes ÷ CCT) against
//!   the max-min bound: the fluid model's goodput for the same flows on the
//!   same topology (each flow at its bottleneck's fair share), the links at
//!   the rate TCP's payload gets of them ([`super::compare`]);
//! - **CCT measured vs simulated**: that shuffle and a ring of rack-to-rack
//!   shuffles arriving 300 ms apart, each coflow's measured CCT ÷ the CCT
//!   the fluid model predicts for the same flows ([`super::compare`]);
//! - control-plane round trips (ping/pong over QUIC) p50/p99, and each
//!   agent's memory (VmRSS) when idle.
//!
//! With `loopback`, also two agents outside any namespace, one unshaped
//! flow on loopback per run against iperf3. There the flow is CPU-bound,
//! so on a shared box it measures the load of the moment; it is kept for
//! the raw speed of the data path.

use super::compare::{self, CctComparison, RatioSummary};
use super::{EmuConfig, EmuError, FabricChoice, Lab, LabConfig};
use crate::emu;
use crate::model::coflow::{Coflow, CoflowId, FlowId as NetFlowId, FlowSpec as NetFlowSpec};
use hdrhistogram::Histogram;
use ocslab_agent::control::{ControlError, ControlServer, Event, ServerConfig};
use ocslab_agent::launch::{agent_program, AgentLaunch};
use ocslab_agent::protocol::{
    AgentMsg, Command, FlowDone, FlowId, FlowSpec, JobId, PartitionId, Path, Transport,
};
use ocslab_emulator::fabric::{messages, netlink::Rtnl, rootless, Mode};
use ocslab_emulator::{Bytes, HostId, Nanos, Topology, TopologyError};
use serde::Serialize;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Child;
use std::time::Duration;

/// `return Err(BenchError::Failed(format!(...)))`.
macro_rules! bail {
    ($($t:tt)*) => {
        return Err(failed(format!($($t)*)))
    };
}

mod fabric;
pub mod lab_up;
mod loopback;

use fabric::measure_fabric;
use loopback::measure_loopback;

/// Why the benchmark could not run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// The topology file is invalid.
    #[error(transparent)]
    Topology(#[from] TopologyError),
    /// The lab failed.
    #[error(transparent)]
    Emu(#[from] EmuError),
    /// The control plane failed.
    #[error(transparent)]
    Control(#[from] ControlError),
    /// Something else failed; the message says what.
    #[error("{0}")]
    Failed(String),
}

/// Errors the harness reports with their own message.
macro_rules! failed_from {
    ($($t:ty),*) => {
        $(impl From<$t> for BenchError {
            fn from(e: $t) -> BenchError {
                BenchError::Failed(e.to_string())
            }
        })*
    };
}

failed_from!(
    std::io::Error,
    std::net::AddrParseError,
    hdrhistogram::CreationError,
    hdrhistogram::RecordError,
    crate::coflow::UnknownPolicy
);

fn failed(message: impl Into<String>) -> BenchError {
    BenchError::Failed(message.into())
}

/// What failed, said of a missing value or an error.
trait Context<T> {
    fn context(self, what: &str) -> Result<T, BenchError>;
    fn with_context(self, what: impl FnOnce() -> String) -> Result<T, BenchError>;
}

impl<T> Context<T> for Option<T> {
    fn context(self, what: &str) -> Result<T, BenchError> {
        self.ok_or_else(|| failed(what))
    }
    fn with_context(self, what: impl FnOnce() -> String) -> Result<T, BenchError> {
        self.ok_or_else(|| failed(what()))
    }
}

impl<T, E: std::fmt::Display> Context<T> for Result<T, E> {
    fn context(self, what: &str) -> Result<T, BenchError> {
        self.map_err(|e| failed(format!("{what}: {e}")))
    }
    fn with_context(self, what: impl FnOnce() -> String) -> Result<T, BenchError> {
        self.map_err(|e| failed(format!("{}: {e}", what())))
    }
}

/// What to measure.
#[derive(Clone, Debug)]
pub struct AgentsBench {
    /// The topology to measure on.
    pub topology: PathBuf,
    /// Bytes of each single-path flow (agent and iperf3 alike).
    pub path_bytes: Bytes,
    /// Single-path runs of each (the medians are compared).
    pub runs: u32,
    /// Bytes of each flow of the all-to-all shuffle.
    pub shuffle_bytes: Bytes,
    /// Control-plane round trips to measure.
    pub pings: u32,
    /// Also measure unshaped flows on loopback (CPU-bound; slow).
    pub loopback: bool,
    /// Bytes of each loopback flow.
    pub loopback_bytes: Bytes,
    /// Seconds of each loopback iperf3 run.
    pub iperf_seconds: u32,
}

/// What `ocslab bench agents` measured.
#[derive(Debug, Serialize)]
pub struct Report {
    /// `/proc/loadavg` at the start: the box is shared.
    pub loadavg: String,
    /// The kernel-fabric part (`None`: not measured).
    pub fabric: Option<FabricReport>,
    /// Why the fabric part did not run.
    pub fabric_note: Option<String>,
    /// The loopback part, if asked for.
    pub loopback: Option<LoopbackReport>,
    /// Wall time of the whole benchmark, seconds.
    pub wall_s: f64,
}

/// The kernel-fabric part.
#[derive(Debug, Serialize)]
pub struct FabricReport {
    /// The topology measured on.
    pub topology: String,
    /// One path, agent against iperf3.
    pub path: PathReport,
    /// The all-to-all shuffle.
    pub all_to_all: ShuffleReport,
    /// Each coflow's measured CCT against the fluid model's.
    pub cct_vs_sim: Vec<CctComparison>,
    /// Their ratios in short.
    pub cct_vs_sim_summary: RatioSummary,
    /// Control-plane round trip, p50, µs.
    pub control_rtt_us_p50: f64,
    /// Control-plane round trip, p99, µs.
    pub control_rtt_us_p99: f64,
    /// Longest control-plane round trip, µs.
    pub control_rtt_us_max: f64,
    /// Round trips measured.
    pub control_rtt_samples: u64,
    /// Each agent's resident memory when idle, KiB.
    pub rss_idle_kib: Vec<u64>,
    /// The largest of them, MiB.
    pub rss_idle_max_mib: f64,
}

/// One path, agent against iperf3.
#[derive(Debug, Serialize)]
pub struct PathReport {
    /// Sending host.
    pub src: HostId,
    /// Receiving host.
    pub dst: HostId,
    /// Bytes of each flow.
    pub bytes: u64,
    /// The path's shaped rate (the smaller of host link and uplink).
    pub line_rate_mbps: f64,
    /// Each agent run's goodput, Mbit/s.
    pub agent_mbps: Vec<f64>,
    /// Their median.
    pub agent_mbps_median: f64,
    /// Each iperf3 run's goodput, Mbit/s.
    pub iperf3_mbps: Vec<f64>,
    /// Their median (`None`: iperf3 did not run).
    pub iperf3_mbps_median: Option<f64>,
    /// Agent median ÷ iperf3 median.
    pub agent_vs_iperf3: Option<f64>,
    /// Why iperf3 did not run.
    pub iperf3_note: Option<String>,
}

/// The all-to-all shuffle against the max-min bound.
#[derive(Debug, Serialize)]
pub struct ShuffleReport {
    /// Hosts.
    pub hosts: u32,
    /// Flows.
    pub flows: u32,
    /// Bytes of each flow.
    pub flow_bytes: u64,
    /// Bytes in all.
    pub total_bytes: u64,
    /// Measured CCT, seconds.
    pub measured_cct_s: f64,
    /// The fluid model's CCT for the same flows, seconds.
    pub fluid_cct_s: f64,
    /// Aggregate goodput (bytes ÷ CCT), Mbit/s.
    pub goodput_mbps: f64,
    /// The max-min fluid model's goodput for the same flows, the links at
    /// TCP's payload rate.
    pub bound_mbps: f64,
    /// `goodput_mbps ÷ bound_mbps`.
    pub efficiency: f64,
    /// Median flow completion time (first byte sent → last byte received).
    pub fct_p50_s: f64,
    /// The slowest flow's.
    pub fct_max_s: f64,
    /// Longest wait from a flow's request to its first byte sent (the TCP
    /// connect: a lost SYN costs 1 s, then 2 s more).
    pub start_delay_max_s: f64,
    /// Flows that waited 1 s or more to send their first byte.
    pub flows_started_1s_late: u32,
    /// Flows that shared a flow queue with another on some link (the
    /// link carried more flows than it has queues).
    pub flows_sharing_a_queue: u64,
}

/// The loopback part.
#[derive(Debug, Serialize)]
pub struct LoopbackReport {
    /// One path, agent against iperf3.
    pub path: String,
    /// Bytes of each flow.
    pub flow_bytes: u64,
    /// Each TCP run's goodput, Gbit/s.
    pub agent_tcp_gbps: Vec<f64>,
    /// Their median.
    pub agent_tcp_gbps_median: f64,
    /// Each QUIC run's goodput, Gbit/s.
    pub agent_quic_gbps: Vec<f64>,
    /// Their median.
    pub agent_quic_gbps_median: f64,
    /// Each iperf3 run's goodput, Gbit/s.
    pub iperf3_gbps_runs: Vec<f64>,
    /// Their median (`None`: iperf3 did not run).
    pub iperf3_gbps: Option<f64>,
    /// Why iperf3 did not run.
    pub iperf3_note: Option<String>,
    /// Agent median ÷ iperf3 median.
    pub agent_vs_iperf3: Option<f64>,
    /// Control-plane round trip, p50, µs.
    pub control_rtt_us_p50: f64,
    /// Control-plane round trip, p99, µs.
    pub control_rtt_us_p99: f64,
    /// Longest control-plane round trip, µs.
    pub control_rtt_us_max: f64,
    /// Round trips measured.
    pub control_rtt_samples: u64,
    /// Each agent's resident memory when idle, KiB.
    pub rss_idle_kib: Vec<u64>,
    /// Each agent's resident memory after the flows, KiB.
    pub rss_after_flows_kib: Vec<u64>,
}

/// Measures what `a` asks for. Call it while this process has one thread
/// (a rootless run enters its namespaces first).
pub fn run(a: &AgentsBench) -> Result<Report, BenchError> {
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
        .map_err(|e| failed(format!("starting the async runtime: {e}")))?;
    let (fabric, fabric_note) = match fabric_ok {
        Ok(()) => (Some(rt.block_on(measure_fabric(a, &topo))?), None),
        Err(why) => (None, Some(why)),
    };
    let loopback = if a.loopback {
        Some(rt.block_on(measure_loopback(a))?)
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
    Ok(report)
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s.get(s.len() / 2).copied().unwrap_or(f64::NAN)
}

fn rss_kib(pid: u32) -> Result<u64, BenchError> {
    status_kib(pid, "VmRSS")
}

/// A field of `/proc/PID/status` given in kB (VmRSS, RssAnon, ...).
fn status_kib(pid: u32, field: &str) -> Result<u64, BenchError> {
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).map_err(|e| failed(format!("{path}: {e}")))?;
    ocslab_emulator::fabric::capacity::proc_field(&status, field)
        .ok_or_else(|| failed(format!("{path}: no {field} line")))
}
