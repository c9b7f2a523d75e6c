//! `ocslab bench fabric|links|ocs`: figures of the kernel fabric, measured
//! on this box (never timed tests).
//!
//! - `fabric`: wall time to build and tear down R racks x H hosts, and what
//!   was left behind (namespaces of the run, its run directory);
//! - `links`: TCP goodput through an htb-shaped host link and ToR uplink at
//!   several rates, against what the rate allows (TCP payload over
//!   1514-byte frames: 95.6%);
//! - `ocs`: configured δ against the dark time seen by packets (a paced,
//!   marked UDP stream whose circuit moves between two racks), and how late
//!   the kernel applied each setup after δ.

use anyhow::{bail, Result};
use hdrhistogram::Histogram;
use ocslab_emulator::fabric::{self, netns, plan, probe, Circuit, Fabric, FabricOptions};
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
    runs: Vec<(f64, f64)>,
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Runs the benchmark.
pub fn fabric(a: FabricArgs) -> Result<ExitCode> {
    need_root()?;
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
        runs,
    };
    if a.json {
        println!("{}", serde_json::to_string(&figures)?);
    } else {
        println!(
            "{} hosts ({} racks x {}): {} namespaces, {} veth pairs, {} htb classes",
            figures.hosts,
            a.racks,
            a.hosts_per_rack,
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
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct LinkFigure {
    link: &'static str,
    configured_bps: u64,
    allowed_bps: f64,
    measured_bps: f64,
    error_pct: f64,
}

/// Runs the benchmark.
pub fn links(a: LinksArgs) -> Result<ExitCode> {
    need_root()?;
    let mut out = Vec::new();
    for &rate in &a.rates {
        let fast = Bps(rate.0.saturating_mul(4));
        for (link, host, uplink) in [("host link", rate, fast), ("ToR uplink", fast, rate)] {
            let topo = bench_topology(2, 1, host, uplink, 0, Bps(1_000_000_000))?;
            let f = Fabric::up(&topo, FabricOptions::default())?;
            let g = probe::tcp_goodput(
                &f,
                HostId::new(0, 0),
                HostId::new(1, 0),
                None,
                Duration::from_millis(500),
                Duration::from_secs_f64(a.seconds),
            )?;
            f.down()?;
            let allowed = rate.0 as f64 * probe::TCP_PAYLOAD_EFFICIENCY;
            let fig = LinkFigure {
                link,
                configured_bps: rate.0,
                allowed_bps: allowed,
                measured_bps: g,
                error_pct: (g - allowed) / allowed * 100.0,
            };
            if !a.json {
                println!(
                    "{:<10} configured {:>10}  allows {:>9.2} Mbit/s  measured {:>9.2} Mbit/s  ({:+.1}%)",
                    fig.link,
                    rate.to_string(),
                    allowed / 1e6,
                    g / 1e6,
                    fig.error_pct
                );
            }
            out.push(fig);
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
    /// Probe packet interval in microseconds (per destination: twice this).
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
    for k in 0..a.rounds {
        let dst = if k % 2 == 0 { 2 } else { 1 };
        let rec = ocs.set_matching_with_delay(&[circuit(dst)], delay)?;
        late.record(rec.setup_late.0.max(1))?;
        teardown.record(rec.teardown.0.max(1))?;
        // Steady traffic on the new circuit before the next move.
        std::thread::sleep(settle);
    }
    let (sent, arrivals) = probe.finish()?;
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
        within_target: gaps.len() == a.rounds as usize && (p50 - a.delay_us as f64).abs() <= target_us,
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
            "δ = {} µs, {} reconfigurations ({} dark gaps seen by packets every {} µs)",
            a.delay_us,
            a.rounds,
            figures.gaps_measured,
            2 * a.interval_us
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
