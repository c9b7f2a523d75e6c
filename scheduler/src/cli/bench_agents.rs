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

/// Flows of the benchmark's replays, with ids unique over the whole lab.
struct Coflows {
    next_flow: u64,
    next_coflow: u64,
}

impl Coflows {
    fn coflow(&mut self, arrival: Nanos, pairs: &[(HostId, HostId)], bytes: Bytes) -> Coflow {
        self.next_coflow += 1;
        let id = CoflowId(self.next_coflow);
        let flows = pairs
            .iter()
            .map(|&(src, dst)| {
                self.next_flow += 1;
                NetFlowSpec {
                    id: NetFlowId(self.next_flow),
                    coflow: id,
                    src,
                    dst,
                    bytes,
                }
            })
            .collect();
        Coflow { id, arrival, flows }
    }
}

async fn measure_fabric(a: &AgentsArgs, topo: &Topology) -> Result<FabricReport> {
    let fabric = FabricChoice::Build {
        topology_file: Some(a.topology.clone()),
    };
    let mut lab = Lab::start(topo, fabric, &LabConfig::default()).await?;
    let result = fabric_figures(a, topo, &mut lab).await;
    let stopped = lab.stop().await;
    let report = result?;
    stopped?;
    Ok(report)
}

async fn fabric_figures(a: &AgentsArgs, topo: &Topology, lab: &mut Lab) -> Result<FabricReport> {
    let hosts: Vec<HostId> = lab.data_addrs().keys().copied().collect();
    let cfg = EmuConfig {
        coflow_policy: "fair".into(),
        time_limit: Duration::from_secs(60),
        ..EmuConfig::default()
    };
    // Idle memory: after a second of heartbeats only.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss_idle = lab
        .agent_pids()
        .values()
        .map(|p| rss_kib(*p))
        .collect::<Result<Vec<_>>>()?;

    // Control-plane round trips, to the first host's agent.
    let first = *hosts.first().context("the topology has no host")?;
    let handle = lab.server()?.host(first).context("first agent gone")?;
    let mut rtt = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3)?;
    for _ in 0..a.pings {
        let d = handle.ping().await?;
        rtt.record((d.as_micros() as u64).max(1))?;
    }

    // One path across the EPS core: agent vs iperf3, interleaved.
    if topo.racks < 2 {
        bail!("{}: the benchmark needs at least 2 racks", a.topology.display());
    }
    let (src, dst) = (HostId::new(0, 0), HostId::new(1, 0));
    let dst_ip = lab
        .data_addrs()
        .get(&dst)
        .context("no data address for the destination")?
        .ip()
        .to_string();
    let mut ids = Coflows {
        next_flow: 0,
        next_coflow: 0,
    };
    let (mut agent, mut iperf, mut iperf3_note) = (Vec::new(), Vec::new(), None);
    for _ in 0..a.runs {
        if iperf3_note.is_none() {
            match iperf3_in_fabric(lab, src, dst, &dst_ip, a.path_bytes) {
                Ok(mbps) => iperf.push(mbps),
                Err(e) => iperf3_note = Some(format!("{e:#}")),
            }
        }
        let c = ids.coflow(Nanos::ZERO, &[(src, dst)], a.path_bytes);
        let r = emu::replay_on(lab, &[c], &cfg).await?;
        let f = r.wire.flows.first().context("the path flow did not finish")?;
        if !f.verified {
            bail!("the path flow arrived corrupt");
        }
        agent.push(f.bytes_received.0 as f64 * 8.0 / f.fct().as_secs_f64() / 1e6);
    }
    let line_rate = topo.host_rate.min(topo.uplink_rate).0 as f64 / 1e6;
    let iperf_median = (!iperf.is_empty()).then(|| median(&iperf));
    let agent_median = median(&agent);

    // All-to-all shuffle, then a ring of rack-to-rack shuffles.
    let pairs: Vec<(HostId, HostId)> = hosts
        .iter()
        .flat_map(|&s| hosts.iter().filter(move |&&d| d != s).map(move |&d| (s, d)))
        .collect();
    let all = ids.coflow(Nanos::ZERO, &pairs, a.shuffle_bytes);
    let all_id = all.id;
    let r = emu::replay_on(lab, &[all], &cfg).await?;
    let mut rows = compare::compare(topo, &cfg.coflow_policy, &r.wire.flows)?;
    let row = rows
        .iter()
        .find(|c| c.coflow == all_id)
        .context("the all-to-all shuffle did not finish")?
        .clone();
    let total = row.bytes.0;
    let goodput = total as f64 * 8.0 / row.measured.as_secs_f64() / 1e6;
    let bound = total as f64 * 8.0 / row.predicted.as_secs_f64() / 1e6;
    let fcts: Vec<f64> = r.wire.flows.iter().map(|f| f.fct().as_secs_f64()).collect();
    let delays: Vec<f64> = r
        .wire
        .flows
        .iter()
        .map(|f| f.start.saturating_sub(f.requested).as_secs_f64())
        .collect();
    let all_to_all = ShuffleReport {
        hosts: hosts.len() as u32,
        flows: row.flows,
        flow_bytes: a.shuffle_bytes.0,
        total_bytes: total,
        measured_cct_s: row.measured.as_secs_f64(),
        fluid_cct_s: row.predicted.as_secs_f64(),
        goodput_mbps: goodput,
        bound_mbps: bound,
        efficiency: goodput / bound,
        fct_p50_s: median(&fcts),
        fct_max_s: fcts.iter().copied().fold(0.0, f64::max),
        start_delay_max_s: delays.iter().copied().fold(0.0, f64::max),
        flows_started_1s_late: delays.iter().filter(|&&d| d >= 1.0).count() as u32,
    };
    let ring: Vec<Coflow> = (0..topo.racks)
        .map(|r| {
            let next = (r + 1) % topo.racks;
            let pairs: Vec<(HostId, HostId)> = (0..topo.hosts_per_rack)
                .flat_map(|i| {
                    (0..topo.hosts_per_rack).map(move |j| (HostId::new(r, i), HostId::new(next, j)))
                })
                .collect();
            ids.coflow(Nanos::from_millis(300 * u64::from(r)), &pairs, a.shuffle_bytes)
        })
        .collect();
    let r = emu::replay_on(lab, &ring, &cfg).await?;
    rows.extend(compare::compare(topo, &cfg.coflow_policy, &r.wire.flows)?);

    Ok(FabricReport {
        topology: format!("{} ({})", topo.name, a.topology.display()),
        path: PathReport {
            src,
            dst,
            bytes: a.path_bytes.0,
            line_rate_mbps: line_rate,
            agent_mbps_median: agent_median,
            agent_mbps: agent,
            agent_vs_iperf3: iperf_median.map(|i| agent_median / i),
            iperf3_mbps_median: iperf_median,
            iperf3_mbps: iperf,
            iperf3_note,
        },
        all_to_all,
        cct_vs_sim_summary: compare::summarize(&rows),
        cct_vs_sim: rows,
        control_rtt_us_p50: rtt.value_at_quantile(0.5) as f64,
        control_rtt_us_p99: rtt.value_at_quantile(0.99) as f64,
        control_rtt_us_max: rtt.max() as f64,
        control_rtt_samples: rtt.len(),
        rss_idle_max_mib: rss_idle.iter().copied().max().unwrap_or(0) as f64 / 1024.0,
        rss_idle_kib: rss_idle,
    })
}

/// iperf3 moving `bytes` from `src` to `dst` (`dst_ip`) inside their host
/// namespaces; the receiver's goodput in Mbit/s.
fn iperf3_in_fabric(lab: &Lab, src: HostId, dst: HostId, dst_ip: &str, bytes: Bytes) -> Result<f64> {
    use std::process::{Command as Proc, Stdio};
    let port = "5201";
    let mut server = {
        let mut c = Proc::new("iperf3");
        c.args(["-s", "-1", "-B", dst_ip, "-p", port])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        Killed(
            lab.fabric()
                .spawn_in(dst, c)
                .context("starting iperf3 (apt-get install iperf3); no comparison")?,
        )
    };
    // The server needs a moment to listen: retry the client until it connects.
    let mut last = String::new();
    for _ in 0..50 {
        let mut c = Proc::new("iperf3");
        c.args(["-c", dst_ip, "-p", port, "-n", &bytes.0.to_string(), "-J"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let child = lab
            .fabric()
            .spawn_in(src, c)
            .context("starting the iperf3 client")?;
        let out = tokio::task::block_in_place(|| child.wait_with_output()).context("running iperf3")?;
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        if let Some(bps) = json["end"]["sum_received"]["bits_per_second"].as_f64() {
            let _ = tokio::task::block_in_place(|| server.0.wait());
            return Ok(bps / 1e6);
        }
        last = json["error"].as_str().unwrap_or("no result").to_string();
        std::thread::sleep(Duration::from_millis(100));
    }
    bail!("iperf3 gave no result: {last}")
}

/// A process killed (by its pid) and reaped when dropped, unless it ended.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
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
    println!("    mean {:.2}, range {:.2}-{:.2}", m.mean, m.min, m.max);
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

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s.get(s.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Kills the agents this benchmark started if it fails half-way.
struct Agents(Vec<Child>);

impl Drop for Agents {
    fn drop(&mut self) {
        for c in &mut self.0 {
            if matches!(c.try_wait(), Ok(None)) {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
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

async fn next_event(server: &mut ControlServer) -> Result<Event> {
    match tokio::time::timeout(Duration::from_secs(60), server.next_event()).await {
        Ok(Some(ev)) => Ok(ev),
        Ok(None) => bail!("control server stopped"),
        Err(_) => bail!("no event from the agents within 60 s"),
    }
}

/// The loopback measurement (`--loopback`): two agents outside any namespace.
async fn measure_loopback(a: &AgentsArgs) -> Result<LoopbackReport> {
    let binary = agent_binary().context(
        "ocslab-agent not found next to ocslab: build it with `cargo build --release -p ocslab-agent`",
    )?;
    let run_dir = std::env::temp_dir().join(format!("ocslab-bench-agents-{}", std::process::id()));
    let (mut server, _) = ControlServer::start(&run_dir, "127.0.0.1:0".parse()?, ServerConfig::default())?;
    let hosts = [HostId::new(0, 0), HostId::new(1, 0)];
    let ips = ["127.0.0.2", "127.0.0.3"];
    let mut agents = Agents(Vec::new());
    for (h, ip) in hosts.iter().zip(ips) {
        let launch = AgentLaunch {
            binary: binary.clone(),
            host: *h,
            data_addr: format!("{ip}:0").parse()?,
            scheduler: server.local_addr(),
            run_dir: run_dir.clone(),
            slots: 1,
            control_socket: Some(std::net::UdpSocket::bind("127.0.0.1:0")?),
            netns: None,
            extra_args: vec![],
            binary_args: vec![],
        };
        agents.0.push(
            launch
                .spawn()
                .with_context(|| format!("starting {}", binary.display()))?,
        );
    }
    let mut joined: Vec<(HostId, SocketAddr, u32)> = Vec::new();
    while joined.len() < hosts.len() {
        match next_event(&mut server).await? {
            Event::Joined { host, hello, .. } => joined.push((host, hello.data_addr, hello.pid)),
            Event::Refused { reason, .. } => bail!("an agent was refused: {reason}"),
            Event::HostDead { host, .. } => bail!("{host} died while joining"),
            _ => {}
        }
    }
    joined.sort();
    let pids: Vec<u32> = joined.iter().map(|j| j.2).collect();
    let (src, dst, dst_addr) = (joined[0].0, joined[1].0, joined[1].1);

    // Idle memory: after a second of heartbeats only.
    let settle = tokio::time::Instant::now() + Duration::from_secs(1);
    while tokio::time::timeout_at(settle, server.next_event()).await.is_ok() {}
    let rss_idle = pids.iter().map(|p| rss_kib(*p)).collect::<Result<Vec<_>>>()?;

    // Control-plane round trips.
    let handle = server.host(src).context("source agent gone")?;
    let mut rtt = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3)?;
    for _ in 0..a.pings {
        let d = handle.ping().await?;
        rtt.record((d.as_micros() as u64).max(1))?;
    }

    // Goodput of single unpaced flows.
    let mut flow = 0u64;
    let mut goodput = |transport| {
        flow += 1;
        FlowSpec {
            flow: FlowId(flow),
            partition: PartitionId {
                job: JobId(0),
                map: 0,
                reduce: flow as u32,
                seed: 1,
            },
            bytes: a.loopback_bytes,
            dst,
            dst_addr,
            path: Path::Eps,
            rate: None,
            held: false,
            transport,
        }
    };
    let mut tcp = Vec::new();
    let mut quic = Vec::new();
    let mut iperf = Vec::new();
    let mut iperf3_note = None;
    for transport in [Transport::Tcp, Transport::Quic] {
        for _ in 0..a.runs {
            // iperf3 runs interleaved with the agent's TCP flows, so both see the same box load.
            if transport == Transport::Tcp && iperf3_note.is_none() {
                match iperf3(ips[0], ips[1], a.iperf_seconds).await {
                    Ok(g) => iperf.push(g),
                    Err(e) => iperf3_note = Some(format!("{e:#}")),
                }
            }
            let spec = goodput(transport);
            let id = spec.flow;
            server.send(src, Command::StartFlow(spec))?;
            let done = wait_flow(&mut server, id).await?;
            if !done.ok {
                bail!("flow {id} failed verification: {done:?}");
            }
            let gbps = done.bytes_received.0 as f64 * 8.0 / (done.end - done.start).as_secs_f64() / 1e9;
            match transport {
                Transport::Tcp => tcp.push(gbps),
                Transport::Quic => quic.push(gbps),
            }
        }
    }
    let rss_after = pids.iter().map(|p| rss_kib(*p)).collect::<Result<Vec<_>>>()?;
    server.shutdown(Duration::from_secs(2)).await;
    for c in &mut agents.0 {
        let _ = c.wait();
    }
    let _ = std::fs::remove_dir_all(&run_dir);

    let iperf3_gbps = (!iperf.is_empty()).then(|| median(&iperf));
    let tcp_median = median(&tcp);
    Ok(LoopbackReport {
        path: format!("loopback {} -> {}", ips[0], ips[1]),
        flow_bytes: a.loopback_bytes.0,
        agent_tcp_gbps_median: tcp_median,
        agent_tcp_gbps: tcp,
        agent_quic_gbps_median: median(&quic),
        agent_quic_gbps: quic,
        agent_vs_iperf3: iperf3_gbps.map(|i| tcp_median / i),
        iperf3_gbps,
        iperf3_gbps_runs: iperf,
        iperf3_note,
        control_rtt_us_p50: rtt.value_at_quantile(0.5) as f64,
        control_rtt_us_p99: rtt.value_at_quantile(0.99) as f64,
        control_rtt_us_max: rtt.max() as f64,
        control_rtt_samples: rtt.len(),
        rss_idle_kib: rss_idle,
        rss_after_flows_kib: rss_after,
    })
}

async fn wait_flow(server: &mut ControlServer, flow: FlowId) -> Result<FlowDone> {
    loop {
        match next_event(server).await? {
            Event::Agent {
                msg: AgentMsg::FlowDone(d),
                ..
            } if d.flow == flow => return Ok(d),
            Event::Agent {
                msg: AgentMsg::FlowFailed { flow: f, reason, .. },
                ..
            } if f == flow => bail!("flow {flow} failed: {reason}"),
            Event::HostDead { host, cause, .. } => bail!("{host} died: {cause:?}"),
            _ => {}
        }
    }
}

/// iperf3 TCP goodput (receiver side) from `src` to `dst`, in Gbit/s.
async fn iperf3(src: &str, dst: &str, seconds: u32) -> Result<f64> {
    use tokio::process::Command as Proc;
    let port = {
        let l = std::net::TcpListener::bind((dst, 0))?;
        l.local_addr()?.port().to_string()
    };
    let mut server = Proc::new("iperf3")
        .args(["-s", "-1", "-B", dst, "-p", &port])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .context("iperf3 is not installed (apt-get install iperf3); no comparison")?;
    // The server needs a moment to listen: retry the client until it connects.
    let mut last = String::new();
    for _ in 0..50 {
        let out = Proc::new("iperf3")
            .args([
                "-c",
                dst,
                "-B",
                src,
                "-p",
                &port,
                "-t",
                &seconds.to_string(),
                "-J",
            ])
            .output()
            .await
            .context("running the iperf3 client")?;
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        if let Some(bps) = json["end"]["sum_received"]["bits_per_second"].as_f64() {
            let _ = server.wait().await;
            return Ok(bps / 1e9);
        }
        last = json["error"].as_str().unwrap_or("no result").to_string();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _ = server.kill().await;
    bail!("iperf3 gave no result: {last}")
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
