//! Benchmarks of the kernel fabric, measured on this box (`ocslab bench
//! fabric|links|ocs` prints them; never timed tests):
//!
//! - [`build_and_teardown`]: wall time to build and tear down R racks x H
//!   hosts, and what was left behind (namespaces of the run, its run
//!   directory);
//! - [`link_goodputs`]: TCP goodput through an htb-shaped host link and ToR
//!   uplink at several rates, against what the rate allows (TCP payload
//!   over 1514-byte frames: 95.6%), one way and optionally one stream each
//!   way at once, with a given leaf queue;
//! - [`dark_time`]: configured δ against the dark time seen by packets (a
//!   paced, marked UDP stream whose circuit moves between two racks), and
//!   how late the kernel applied each setup after δ.

use super::{htb, netns, plan, probe, rootless, Circuit, Fabric, FabricError, FabricOptions, Mode};
use crate::{Bps, HostId, Nanos, Topology, TopologyError};
use hdrhistogram::Histogram;
use serde::Serialize;
use std::time::{Duration, Instant};

/// Why a benchmark could not run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// It needs root (it builds real namespaces outside a user namespace).
    #[error("fabric benchmarks build real namespaces and need root")]
    NotRoot,
    /// The benchmark's topology is invalid (its parameters are).
    #[error(transparent)]
    Topology(#[from] TopologyError),
    /// The fabric failed.
    #[error(transparent)]
    Fabric(#[from] FabricError),
    /// The user and network namespaces of a rootless run could not be made.
    #[error(transparent)]
    Rootless(#[from] rootless::RootlessError),
    /// The OCS refused a matching.
    #[error(transparent)]
    Ocs(#[from] super::ocs::OcsError),
    /// A histogram refused a value.
    #[error("histogram: {0}")]
    Histogram(String),
}

/// A topology for benchmarks: scale 1, the default address range, δ 1 ms.
fn bench_topology(
    racks: u32,
    hosts: u32,
    host_rate: Bps,
    uplink: Bps,
    ocs_ports: u32,
    ocs_rate: Bps,
) -> Result<Topology, TopologyError> {
    let b = Topology::builder("bench", racks, hosts)
        .host_rate(host_rate)
        .uplink_rate(uplink);
    let b = if ocs_ports > 0 {
        b.ocs(
            ocs_ports,
            ocs_rate,
            Nanos::from_millis(1),
            crate::Bytes(10_000_000),
        )
    } else {
        b
    };
    b.build()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn histogram() -> Result<Histogram<u64>, BenchError> {
    Histogram::new(3).map_err(|e| BenchError::Histogram(e.to_string()))
}

fn record(h: &mut Histogram<u64>, v: u64) -> Result<(), BenchError> {
    h.record(v).map_err(|e| BenchError::Histogram(e.to_string()))
}

fn need_root() -> Result<(), BenchError> {
    if rootless::is_root() {
        Ok(())
    } else {
        Err(BenchError::NotRoot)
    }
}

/// What [`build_and_teardown`] measured.
#[derive(Clone, Debug, Serialize)]
pub struct BuildFigures {
    /// Hosts of the fabric.
    pub hosts: usize,
    /// Namespaces of its plan.
    pub namespaces: usize,
    /// Veth pairs of its plan.
    pub veth_pairs: usize,
    /// Htb classes of its plan.
    pub htb_classes: usize,
    /// Median time to build it, seconds.
    pub up_s: f64,
    /// Median time to tear it down, seconds.
    pub down_s: f64,
    /// Namespaces and run directories left after the teardowns (0 expected).
    pub leftover: usize,
    /// Root or rootless.
    pub mode: Mode,
    /// Each build's (up, down) seconds.
    pub runs: Vec<(f64, f64)>,
}

/// Builds and tears down `racks` x `hosts_per_rack` hosts with
/// `ocs_ports` OCS ports per rack `repeat` times, with `threads` build
/// threads (0: one per core, at most 4). Rootless outside root: call it
/// before this process starts any thread.
pub fn build_and_teardown(
    racks: u32,
    hosts_per_rack: u32,
    ocs_ports: u32,
    threads: usize,
    repeat: u32,
) -> Result<BuildFigures, BenchError> {
    let mode = rootless::enter_if_needed()?;
    let gbit = Bps(1_000_000_000);
    let topo = bench_topology(racks, hosts_per_rack, gbit, gbit, ocs_ports, gbit)?;
    let mut runs = Vec::new();
    let mut leftover = 0;
    let mut shape = (0, 0, 0);
    for _ in 0..repeat.max(1) {
        let t0 = Instant::now();
        let f = Fabric::up(
            &topo,
            FabricOptions {
                threads,
                ..Default::default()
            },
        )?;
        let up_s = t0.elapsed().as_secs_f64();
        let run = f.run_id();
        let p = f.plan();
        shape = (
            p.namespaces.len(),
            p.veth_count(),
            p.namespaces.iter().map(|n| n.shapers.len()).sum(),
        );
        let t1 = Instant::now();
        f.down()?;
        let down_s = t1.elapsed().as_secs_f64();
        leftover += netns::list_named().iter().filter(|n| run.owns_netns(n)).count()
            + usize::from(super::run_dir(run).exists());
        runs.push((up_s, down_s));
    }
    Ok(BuildFigures {
        hosts: topo.hosts(),
        namespaces: shape.0,
        veth_pairs: shape.1,
        htb_classes: shape.2,
        up_s: median(runs.iter().map(|r| r.0).collect()),
        down_s: median(runs.iter().map(|r| r.1).collect()),
        leftover,
        mode,
        runs,
    })
}

/// One link's goodput, as [`link_goodputs`] measured it.
#[derive(Clone, Debug, Serialize)]
pub struct LinkFigure {
    /// `host link` or `ToR uplink`.
    pub link: &'static str,
    /// `one way` or `two way` (the slower direction).
    pub direction: &'static str,
    /// The leaf queue, µs of the rate (0: the kernel's default).
    pub leaf_queue_us: u64,
    /// The configured rate.
    pub configured_bps: u64,
    /// What TCP payload the rate allows.
    pub allowed_bps: f64,
    /// Measured goodput.
    pub measured_bps: f64,
    /// (measured − allowed) ÷ allowed, %.
    pub error_pct: f64,
}

/// TCP goodput through a host link and a ToR uplink shaped at each of
/// `rates` (the other link 4 times faster), `seconds` of measurement after
/// 0.5 s of warm-up, one way and with `two_way` also one stream each way at
/// once; `leaf_queue_us` µs of the rate under each htb class (0: the
/// kernel's default pfifo). Needs root.
pub fn link_goodputs(
    rates: &[Bps],
    seconds: f64,
    two_way: bool,
    leaf_queue_us: u64,
) -> Result<Vec<LinkFigure>, BenchError> {
    need_root()?;
    let leaf_queue = match leaf_queue_us {
        0 => htb::LeafQueue::KernelDefault,
        us => htb::LeafQueue::Delay(Nanos(us * 1000)),
    };
    let (a0, b0) = (HostId::new(0, 0), HostId::new(1, 0));
    let forward = probe::Stream {
        from: a0,
        to: b0,
        tos: None,
    };
    let back = probe::Stream {
        from: b0,
        to: a0,
        tos: None,
    };
    let mut out = Vec::new();
    for &rate in rates {
        let fast = Bps(rate.0.saturating_mul(4));
        for (link, host, uplink) in [("host link", rate, fast), ("ToR uplink", fast, rate)] {
            let topo = bench_topology(2, 1, host, uplink, 0, Bps(1_000_000_000))?;
            let f = Fabric::up(
                &topo,
                FabricOptions {
                    leaf_queue,
                    ..Default::default()
                },
            )?;
            let mut runs: Vec<(&'static str, Vec<probe::Stream>)> = vec![("one way", vec![forward])];
            if two_way {
                runs.push(("two way", vec![forward, back]));
            }
            let mut measured = Vec::new();
            for (direction, streams) in runs {
                let g = probe::tcp_goodputs(
                    &f,
                    &streams,
                    Duration::from_millis(500),
                    Duration::from_secs_f64(seconds),
                );
                measured.push((direction, g));
            }
            f.down()?;
            let allowed = rate.0 as f64 * probe::TCP_PAYLOAD_EFFICIENCY;
            for (direction, g) in measured {
                // Each direction's own goodput; the figure of a two-way run
                // is the slower one.
                let g = g?.into_iter().fold(f64::INFINITY, f64::min);
                out.push(LinkFigure {
                    link,
                    direction,
                    leaf_queue_us,
                    configured_bps: rate.0,
                    allowed_bps: allowed,
                    measured_bps: g,
                    error_pct: (g - allowed) / allowed * 100.0,
                });
            }
        }
    }
    Ok(out)
}

/// What [`dark_time`] measured.
#[derive(Clone, Debug, Serialize)]
pub struct OcsFigures {
    /// Configured δ, µs.
    pub delay_us: u64,
    /// Reconfigurations measured.
    pub rounds: u32,
    /// Dark gaps the probe saw.
    pub gaps_measured: usize,
    /// Dark time p50, µs.
    pub dark_p50_us: f64,
    /// Dark time p99, µs.
    pub dark_p99_us: f64,
    /// Longest dark time, µs.
    pub dark_max_us: f64,
    /// p50 − δ, µs.
    pub dark_error_p50_us: f64,
    /// Whether |p50 − δ| is within the target (5% of δ, at least 200 µs).
    pub within_target: bool,
    /// The target, µs.
    pub target_us: f64,
    /// How late the kernel applied a setup after δ, p50, µs.
    pub setup_late_p50_us: f64,
    /// The same, p99.
    pub setup_late_p99_us: f64,
    /// Time to apply a teardown batch, p50, µs.
    pub teardown_p50_us: f64,
    /// The same, p99.
    pub teardown_p99_us: f64,
    /// Probe packets sent.
    pub probe_packets_sent: u64,
    /// Probe packets received while measuring.
    pub probe_packets_received: usize,
    /// Mean spacing of probe packets at one receiver, µs: the resolution
    /// of the dark-time figures.
    pub probe_spacing_us: f64,
}

/// Mean time between arrivals at one receiver (first to last over the
/// count): the resolution of the dark-time figures.
fn spacing_us(arrivals: &[probe::Arrival]) -> f64 {
    let mut per: Vec<(u64, u64, u64)> = vec![(u64::MAX, 0, 0); 2];
    for x in arrivals {
        if let Some(p) = per.get_mut(x.dst) {
            p.0 = p.0.min(x.at_ns);
            p.1 = p.1.max(x.at_ns);
            p.2 += 1;
        }
    }
    let v: Vec<f64> = per
        .iter()
        .filter(|p| p.2 > 1)
        .map(|p| (p.1 - p.0) as f64 / (p.2 - 1) as f64 / 1000.0)
        .collect();
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// Reconfigurations made before measuring.
const WARMUP_ROUNDS: u32 = 2;

fn realtime_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

fn pct(h: &Histogram<u64>, q: f64) -> f64 {
    h.value_at_quantile(q) as f64 / 1000.0
}

/// Moves a circuit from rack 0 between racks 1 and 2 `rounds` times with
/// δ = `delay_us` while a marked UDP probe sends to both every
/// `interval_us` (per destination: twice that), and measures the dark
/// time packets see. Needs root.
pub fn dark_time(delay_us: u64, rounds: u32, interval_us: u64) -> Result<OcsFigures, BenchError> {
    need_root()?;
    let gbit = Bps(1_000_000_000);
    let topo = bench_topology(3, 1, gbit, gbit, 1, gbit)?;
    let f = Fabric::up(&topo, FabricOptions::default())?;
    let ocs = f.ocs()?;
    let delay = Nanos(delay_us * 1000);
    let to = [HostId::new(1, 0), HostId::new(2, 0)];
    let circuit = |dst| Circuit {
        src_rack: 0,
        dst_rack: dst,
        port: 0,
    };
    ocs.set_matching_with_delay(&[circuit(1)], Nanos(0))?;
    let probe = probe::DarkProbe::start(
        &f,
        HostId::new(0, 0),
        &to,
        plan::OCS_TOS,
        Duration::from_micros(interval_us),
    )?;
    let settle = Duration::from_micros(delay_us * 2).max(Duration::from_millis(5));
    let mut late = histogram()?;
    let mut teardown = histogram()?;
    std::thread::sleep(settle);
    // The first reconfigurations of a fresh fabric pay one-time kernel
    // allocations (tc action tables, route caches): warm up, unmeasured.
    let mut measured_from = 0;
    for k in 0..rounds + WARMUP_ROUNDS {
        let dst = if k % 2 == 0 { 2 } else { 1 };
        let rec = ocs.set_matching_with_delay(&[circuit(dst)], delay)?;
        if k >= WARMUP_ROUNDS {
            record(&mut late, rec.setup_late.0.max(1))?;
            record(&mut teardown, rec.teardown.0.max(1))?;
        } else {
            measured_from = rec.events.last().map(|e| e.at.0).unwrap_or(0);
        }
        // Steady traffic on the new circuit before the next move.
        std::thread::sleep(settle);
    }
    let (sent, mut arrivals) = probe.finish()?;
    // Arrivals carry CLOCK_REALTIME stamps; events CLOCK_MONOTONIC.
    let offset = realtime_ns() as i128 - super::clock::now().0 as i128;
    let cut = (measured_from as i128 + offset).max(0) as u64;
    arrivals.retain(|x| x.at_ns >= cut);
    f.down()?;
    // OCS path: ToR, ToR (two routers); EPS: ToR, core, ToR (three).
    let gaps = probe::dark_gaps(&arrivals, probe::PROBE_TTL - 2);
    let mut dark = histogram()?;
    for g in &gaps {
        record(&mut dark, g.as_nanos() as u64)?;
    }
    let p50 = pct(&dark, 0.5);
    let target_us = (delay_us as f64 * 0.05).max(200.0);
    Ok(OcsFigures {
        delay_us,
        rounds,
        gaps_measured: gaps.len(),
        dark_p50_us: p50,
        dark_p99_us: pct(&dark, 0.99),
        dark_max_us: dark.max() as f64 / 1000.0,
        dark_error_p50_us: p50 - delay_us as f64,
        within_target: (p50 - delay_us as f64).abs() <= target_us,
        target_us,
        probe_spacing_us: spacing_us(&arrivals),
        setup_late_p50_us: pct(&late, 0.5),
        setup_late_p99_us: pct(&late, 0.99),
        teardown_p50_us: pct(&teardown, 0.5),
        teardown_p99_us: pct(&teardown, 0.99),
        probe_packets_sent: sent,
        probe_packets_received: arrivals.len(),
    })
}
