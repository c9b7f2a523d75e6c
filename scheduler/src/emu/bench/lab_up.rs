//! `ocslab bench fabric --agents`: a whole lab (the fabric and one agent per
//! host, every agent joined to the control server) brought up and torn
//! down, with what it costs while idle: each agent's memory, the driver's
//! file descriptors and the box's memory. These are the figures behind
//! `ocslab_emulator::fabric::capacity`'s per-host costs.

use super::{median, BenchError, Context, FabricChoice, Lab, LabConfig};
use ocslab_emulator::fabric::bench::bench_topology;
use ocslab_emulator::fabric::capacity::mem_available;
use ocslab_emulator::fabric::{netns, run_dir, Datapath, Mode};
use ocslab_emulator::{Bps, Topology};
use serde::Serialize;
use std::time::{Duration, Instant};

/// How long the agents sit idle (heartbeats only) before their memory is read.
const IDLE: Duration = Duration::from_secs(2);

/// One lab brought up and torn down.
#[derive(Debug, Clone, Serialize)]
pub struct LabRun {
    /// Seconds from the start to every agent joined (the fabric built,
    /// the agents started in waves).
    pub up_s: f64,
    /// Seconds to stop the agents and tear the fabric down.
    pub down_s: f64,
    /// Idle agents' resident memory (VmRSS), KiB: median and largest.
    pub agent_rss_kib: (u64, u64),
    /// Idle agents' anonymous memory (RssAnon: what is not the shared
    /// binary), KiB: median and largest.
    pub agent_anon_kib: (u64, u64),
    /// File descriptors the driver (this process) held with every agent up.
    pub driver_fds: u64,
    /// How far the box's MemAvailable fell with every agent up, bytes.
    pub memory_used: u64,
    /// Namespaces, run directories and agent processes left after teardown.
    pub leftover: usize,
}

/// The figures of `ocslab bench fabric --agents`.
#[derive(Debug, Clone, Serialize)]
pub struct LabFigures {
    /// Hosts (and agents).
    pub hosts: usize,
    /// Whether the fabric was built as root or in a user namespace.
    pub mode: Mode,
    /// The OCS datapath built.
    pub datapath: Datapath,
    /// Median of the runs' `up_s`.
    pub up_s: f64,
    /// Median of the runs' `down_s`.
    pub down_s: f64,
    /// Everything left over, summed over the runs.
    pub leftover: usize,
    /// Each run.
    pub runs: Vec<LabRun>,
}

/// Brings up a lab of `racks` x `hosts_per_rack` (1 Gbit/s links, `ocs_ports`
/// OCS ports a rack) `repeat` times, measuring each; see the module doc.
/// Needs root (agents in namespaces).
pub fn lab_up_and_down(
    racks: u32,
    hosts_per_rack: u32,
    ocs_ports: u32,
    repeat: u32,
) -> Result<LabFigures, BenchError> {
    let gbit = Bps(1_000_000_000);
    let topo = bench_topology(racks, hosts_per_rack, gbit, gbit, ocs_ports, gbit)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let mut runs = Vec::new();
    let (mut mode, mut datapath) = (Mode::Root, Datapath::TcMirred);
    for i in 0..repeat.max(1) {
        let (run, m, d) = rt.block_on(one_lab(&topo))?;
        eprintln!(
            "run {}/{}: up {:.2} s, down {:.2} s, leftover {}",
            i + 1,
            repeat.max(1),
            run.up_s,
            run.down_s,
            run.leftover
        );
        (mode, datapath) = (m, d);
        runs.push(run);
    }
    let up: Vec<f64> = runs.iter().map(|r| r.up_s).collect();
    let down: Vec<f64> = runs.iter().map(|r| r.down_s).collect();
    Ok(LabFigures {
        hosts: topo.hosts(),
        mode,
        datapath,
        up_s: median(&up),
        down_s: median(&down),
        leftover: runs.iter().map(|r| r.leftover).sum(),
        runs,
    })
}

async fn one_lab(topo: &Topology) -> Result<(LabRun, Mode, Datapath), BenchError> {
    let available_before = available()?;
    let t0 = Instant::now();
    let lab = Lab::start(
        topo,
        FabricChoice::Build { topology_file: None },
        &LabConfig::default(),
    )
    .await?;
    let up_s = t0.elapsed().as_secs_f64();
    let run_id = lab.fabric().run_id();
    let (mode, datapath) = (lab.fabric().ledger().mode, lab.fabric().ledger().datapath);
    let pids: Vec<u32> = lab.agent_pids().values().copied().collect();
    let idle = async {
        tokio::time::sleep(IDLE).await;
        let rss = spread(&pids, "VmRSS")?;
        let anon = spread(&pids, "RssAnon")?;
        let fds = std::fs::read_dir("/proc/self/fd")?.count() as u64;
        let used = available_before.saturating_sub(available()?);
        Ok::<_, BenchError>((rss, anon, fds, used))
    }
    .await;
    let t1 = Instant::now();
    let stopped = lab.stop().await;
    let down_s = t1.elapsed().as_secs_f64();
    let (agent_rss_kib, agent_anon_kib, driver_fds, memory_used) = idle?;
    stopped?;
    let leftover = netns::list_named()
        .iter()
        .filter(|n| run_id.owns_netns(n))
        .count()
        + usize::from(run_dir(run_id).exists())
        + pids
            .iter()
            .filter(|p| std::path::Path::new(&format!("/proc/{p}")).exists())
            .count();
    let run = LabRun {
        up_s,
        down_s,
        agent_rss_kib,
        agent_anon_kib,
        driver_fds,
        memory_used,
        leftover,
    };
    Ok((run, mode, datapath))
}

/// The median and largest of a `/proc/PID/status` field over `pids`, KiB.
fn spread(pids: &[u32], field: &str) -> Result<(u64, u64), BenchError> {
    let mut v = pids
        .iter()
        .map(|p| super::status_kib(*p, field))
        .collect::<Result<Vec<_>, _>>()?;
    v.sort_unstable();
    let median = v.get(v.len() / 2).copied().unwrap_or(0);
    Ok((median, v.last().copied().unwrap_or(0)))
}

/// The box's MemAvailable, bytes.
fn available() -> Result<u64, BenchError> {
    mem_available().context("/proc/meminfo: no MemAvailable line")
}
