//! `ocslab bench fabric|links|ocs`: figures of the kernel fabric, measured
//! on this box (never timed tests).
//!
//! - `fabric`: wall time to build and tear down R racks x H hosts, and what
//!   was left behind (namespaces of the run, its run directory);
//! - `links`: TCP goodput through an htb-shaped host link and ToR uplink at
//!   several rates, against what the rate allows (TCP payload over
//!   1514-byte frames: 95.6%), one way and (`--two-way`) one stream each
//!   way at once, with the fabric's leaf queue or another (`--leaf-queue-us`);
//! - `ocs`: configured δ against the dark time seen by packets (a paced,
//!   marked UDP stream whose circuit moves between two racks), and how late
//!   the kernel applied each setup after δ.

use anyhow::{bail, Result};
use hdrhistogram::Histogram;
use ocslab_emulator::fabric::{self, htb, netns, plan, probe, Circuit, Fabric, FabricOptions};
use ocslab_emulator::{Bps, HostId, Nanos, Topology};
use serde::Serialize;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

fn need_root() -> Result<()> {
    if !fabric::rootless::is_root() {
        bail!("fabric benchmarks build real namespaces and need root");
    }
    Ok(())
}

/// A topology for benchmarks (scale 1, non-overlapping default range).
fn bench_topology(
    racks: u32,
    hosts: u32,
    host_rate: Bps,
    uplink: Bps,
    ocs_ports: u32,
    ocs_rate: Bps,
) -> Result<Topology> {
    let text = format!(
        "name = \"bench\"\nracks = {racks}\nhosts_per_rack = {hosts}\n\n[eps]\nhost_rate = \"{}bit/s\"\nuplink_rate = \"{}bit/s\"\n\n[ocs]\nports_per_rack = {ocs_ports}\nport_rate = \"{}bit/s\"\nreconfig_delay = \"1ms\"\nelephant_threshold = \"10MB\"\n",
        host_rate.0, uplink.0, ocs_rate.0
    );
    Ok(Topology::parse(
        &text,
        Path::new("<bench>"),
        &ocslab_emulator::topology::local_addresses(),
    )?)
}

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

#[derive(Serialize)]
struct FabricFigures {
    hosts: usize,
    namespaces: usize,
    veth_pairs: usize,
    htb_classes: usize,
    up_s: f64,
    down_s: f64,
    leftover: usize,
    mode: fabric::Mode,
    runs: Vec<(f64, f64)>,
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Runs the benchmark.
pub fn fabric(a: FabricArgs) -> Result<ExitCode> {
    // Before any thread: rootless builds inside a user namespace.
    let mode = fabric::rootless::enter_if_needed()?;
    let topo = bench_topology(
        a.racks,
        a.hosts_per_rack,
        Bps(1_000_000_000),
        Bps(1_000_000_000),
        a.ocs_ports,
        Bps(1_000_000_000),
    )?;
    let mut runs = Vec::new();
    let mut leftover = 0;
    let mut shape = (0, 0, 0);
    for _ in 0..a.repeat.max(1) {
        let t0 = Instant::now();
        let f = Fabric::up(
            &topo,
            FabricOptions {
                threads: a.threads,
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
            + usize::from(fabric::run_dir(run).exists());
        runs.push((up_s, down_s));
    }
    let figures = FabricFigures {
        hosts: topo.hosts(),
        namespaces: shape.0,
        veth_pairs: shape.1,
        htb_classes: shape.2,
        up_s: median(&mut runs.iter().map(|r| r.0).collect::<Vec<_>>()),
        down_s: median(&mut runs.iter().map(|r| r.1).collect::<Vec<_>>()),
        leftover,
        mode,
        runs,
    };
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
    Ok(if leftover == 0 {
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

#[derive(Serialize)]
struct LinkFigure {
    link: &'static str,
    direction: &'static str,
    leaf_queue_us: u64,
    configured_bps: u64,
    allowed_bps: f64,
    measured_bps: f64,
    error_pct: f64,
}

/// Runs the benchmark.
pub fn links(a: LinksArgs) -> Result<ExitCode> {
    need_root()?;
    let mut out = Vec::new();
    let leaf_queue = match a.leaf_queue_us {
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
    for &rate in &a.rates {
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
            if a.two_way {
                runs.push(("two way", vec![forward, back]));
            }
            let mut measured = Vec::new();
            for (direction, streams) in runs {
                let g = probe::tcp_goodputs(
                    &f,
                    &streams,
                    Duration::from_millis(500),
                    Duration::from_secs_f64(a.seconds),
                );
                measured.push((direction, g));
            }
            f.down()?;
            let allowed = rate.0 as f64 * probe::TCP_PAYLOAD_EFFICIENCY;
            for (direction, g) in measured {
                // Each direction's own goodput; the figure of a two-way run
                // is the slower one.
                let g = g?.into_iter().fold(f64::INFINITY, f64::min);
                let fig = LinkFigure {
                    link,
                    direction,
                    leaf_queue_us: a.leaf_queue_us,
                    configured_bps: rate.0,
                    allowed_bps: allowed,
                    measured_bps: g,
                    error_pct: (g - allowed) / allowed * 100.0,
                };
                if !a.json {
                    println!(
                        "{:<10} {:<7} configured {:>10}  allows {:>9.2} Mbit/s  measured {:>9.2} Mbit/s  ({:+.1}%)",
                        fig.link,
                        fig.direction,
                        rate.to_string(),
                        allowed / 1e6,
                        g / 1e6,
                        fig.error_pct
                    );
                }
                out.push(fig);
            }
        }
    }
    if a.json {
        println!("{}", serde_json::to_string(&out)?);
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

#[derive(Serialize)]
struct OcsFigures {
    delay_us: u64,
    rounds: u32,
    gaps_measured: usize,
    dark_p50_us: f64,
    dark_p99_us: f64,
    dark_max_us: f64,
    dark_error_p50_us: f64,
    within_target: bool,
    setup_late_p50_us: f64,
    setup_late_p99_us: f64,
    teardown_p50_us: f64,
    teardown_p99_us: f64,
    probe_packets_sent: u64,
    probe_packets_received: usize,
    probe_spacing_us: f64,
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

/// Runs the benchmark.
pub fn ocs(a: OcsArgs) -> Result<ExitCode> {
    need_root()?;
    let gbit = Bps(1_000_000_000);
    let topo = bench_topology(3, 1, gbit, gbit, 1, gbit)?;
    let f = Fabric::up(&topo, FabricOptions::default())?;
    let ocs = f.ocs()?;
    let delay = Nanos(a.delay_us * 1000);
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
        Duration::from_micros(a.interval_us),
    )?;
    let settle = Duration::from_micros(a.delay_us * 2).max(Duration::from_millis(5));
    let mut late = Histogram::<u64>::new(3)?;
    let mut teardown = Histogram::<u64>::new(3)?;
    std::thread::sleep(settle);
    // The first reconfigurations of a fresh fabric pay one-time kernel
    // allocations (tc action tables, route caches): warm up, unmeasured.
    let mut measured_from = 0;
    for k in 0..a.rounds + WARMUP_ROUNDS {
        let dst = if k % 2 == 0 { 2 } else { 1 };
        let rec = ocs.set_matching_with_delay(&[circuit(dst)], delay)?;
        if k >= WARMUP_ROUNDS {
            late.record(rec.setup_late.0.max(1))?;
            teardown.record(rec.teardown.0.max(1))?;
        } else {
            measured_from = rec.events.last().map(|e| e.at.0).unwrap_or(0);
        }
        // Steady traffic on the new circuit before the next move.
        std::thread::sleep(settle);
    }
    let (sent, mut arrivals) = probe.finish()?;
    // Arrivals carry CLOCK_REALTIME stamps; events CLOCK_MONOTONIC.
    let offset = realtime_ns() as i128 - fabric::clock::now().0 as i128;
    let cut = (measured_from as i128 + offset).max(0) as u64;
    arrivals.retain(|x| x.at_ns >= cut);
    f.down()?;
    // OCS path: ToR, ToR (two routers); EPS: ToR, core, ToR (three).
    let gaps = probe::dark_gaps(&arrivals, probe::PROBE_TTL - 2);
    let mut dark = Histogram::<u64>::new(3)?;
    for g in &gaps {
        dark.record(g.as_nanos() as u64)?;
    }
    let p50 = pct(&dark, 0.5);
    let target_us = (a.delay_us as f64 * 0.05).max(200.0);
    let figures = OcsFigures {
        delay_us: a.delay_us,
        rounds: a.rounds,
        gaps_measured: gaps.len(),
        dark_p50_us: p50,
        dark_p99_us: pct(&dark, 0.99),
        dark_max_us: dark.max() as f64 / 1000.0,
        dark_error_p50_us: p50 - a.delay_us as f64,
        within_target: (p50 - a.delay_us as f64).abs() <= target_us,
        probe_spacing_us: spacing_us(&arrivals),
        setup_late_p50_us: pct(&late, 0.5),
        setup_late_p99_us: pct(&late, 0.99),
        teardown_p50_us: pct(&teardown, 0.5),
        teardown_p99_us: pct(&teardown, 0.99),
        probe_packets_sent: sent,
        probe_packets_received: arrivals.len(),
    };
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
            target_us,
            if figures.within_target { "met" } else { "missed" }
        );
        println!(
            "setup applied after δ: p50 {:.1} µs, p99 {:.1} µs; teardown batch p50 {:.1} µs, p99 {:.1} µs",
            figures.setup_late_p50_us,
            figures.setup_late_p99_us,
            figures.teardown_p50_us,
            figures.teardown_p99_us
        );
        println!("probe: {} packets sent, {} received", sent, arrivals.len());
    }
    Ok(ExitCode::SUCCESS)
}
