//! `ocslab bench fabric --agents`: a whole lab (the fabric and one agent per
//! host, every agent joined to the control server) brought up and torn
//! down, with what it costs while idle: each agent's memory, the driver's
//! file descriptors and the box's memory. These are the figures behind
//! `ocslab_emulator::fabric::capacity`'s per-host costs.

use super::{median, BenchError, Context, FabricChoice, Lab, LabConfig};
use ocslab_emulator::fabric::bench::bench_topology;
use ocslab_emulator::fabric::capacity::{cpu_ticks, mem_available};
use ocslab_emulator::fabric::{netns, run_dir, Datapath, Mode};
use ocslab_emulator::{Bps, Topology};
use serde::Serialize;
use std::time::{Duration, Instant};

/// How long the agents sit idle (heartbeats only) before their memory is read.
const IDLE: Duration = Duration::from_secs(2);

/// A run starts once the box's cores were busy less than this share of
/// a [`QUIET_WINDOW`]: the kernel destroys a torn-down fabric's
/// namespaces after `down` returns (one core busy for about 0.75 s at
/// 1,024 hosts), and a lab built meanwhile pays for it.
const QUIET_BUSY: f64 = 0.10;
/// The window over which [`QUIET_BUSY`] is measured.
const QUIET_WINDOW: Duration = Duration::from_millis(200);
/// How long a run waits for a quiet box at most.
const QUIET_WAIT: Duration = Duration::from_secs(10);

/// One lab brought up and torn down.
#[derive(Debug, Clone, Serialize)]
pub struct LabRun {
    /// Seconds from the start to every agent joined (the fabric built,
    /// the agents started in waves).
    pub up_s: f64,
    /// Of `up_s`, seconds to build the fabric.
    pub fabric_s: f64,
    /// Of `up_s`, seconds from the fabric built to every agent joined.
    pub agents_s: f64,
    /// Seconds the run waited for a quiet box before it started.
    pub quiet_wait_s: f64,
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
    /// Median of the runs' `fabric_s`.
    pub fabric_s: f64,
    /// Median of the runs' `agents_s`.
    pub agents_s: f64,
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
        let waited = wait_for_quiet_box()?;
        let (run, m, d) = rt.block_on(one_lab(&topo, waited))?;
        eprintln!(
            "run {}/{} (after {:.1} s waiting for a quiet box): up {:.2} s (fabric {:.2} s, agents {:.2} s), down {:.2} s, leftover {}",
            i + 1,
            repeat.max(1),
            run.quiet_wait_s,
            run.up_s,
            run.fabric_s,
            run.agents_s,
            run.down_s,
            run.leftover
        );
        (mode, datapath) = (m, d);
        runs.push(run);
    }
    let of = |f: fn(&LabRun) -> f64| median(&runs.iter().map(f).collect::<Vec<f64>>());
    Ok(LabFigures {
        hosts: topo.hosts(),
        mode,
        datapath,
        up_s: of(|r| r.up_s),
        fabric_s: of(|r| r.fabric_s),
        agents_s: of(|r| r.agents_s),
        down_s: of(|r| r.down_s),
        leftover: runs.iter().map(|r| r.leftover).sum(),
        runs,
    })
}

/// One lab up and down, started after `waited` for a quiet box.
async fn one_lab(topo: &Topology, waited: Duration) -> Result<(LabRun, Mode, Datapath), BenchError> {
    let available_before = available()?;
    let t0 = Instant::now();
    let lab = Lab::start(
        topo,
        FabricChoice::Build { topology_file: None },
        &LabConfig::default(),
    )
    .await?;
    let up_s = t0.elapsed().as_secs_f64();
    let timings = lab.start_timings();
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
        fabric_s: timings.fabric.as_secs_f64(),
        agents_s: timings.agents.as_secs_f64(),
        quiet_wait_s: waited.as_secs_f64(),
        down_s,
        agent_rss_kib,
        agent_anon_kib,
        driver_fds,
        memory_used,
        leftover,
    };
    Ok((run, mode, datapath))
}

/// Waits until the box's cores were busy less than [`QUIET_BUSY`] of a
/// [`QUIET_WINDOW`], at most [`QUIET_WAIT`]; returns how long it waited.
fn wait_for_quiet_box() -> Result<Duration, BenchError> {
    let start = Instant::now();
    let ticks = || cpu_ticks().context("/proc/stat: no `cpu` line");
    let mut last = ticks()?;
    while start.elapsed() < QUIET_WAIT {
        std::thread::sleep(QUIET_WINDOW);
        let now = ticks()?;
        let (busy, total) = (now.busy - last.busy, now.total - last.total);
        if total > 0 && (busy as f64) < QUIET_BUSY * total as f64 {
            break;
        }
        last = now;
    }
    Ok(start.elapsed())
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
