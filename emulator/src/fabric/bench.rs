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
//! - the OCS datapaths' figures are in [`super::bench_ocs`].

use super::{htb, netns, probe, rootless, Fabric, FabricError, FabricOptions, Mode};
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
    /// The benchmark's rotor schedule is invalid (its parameters are).
    #[error(transparent)]
    Schedule(#[from] super::schedule::ScheduleError),
    /// A histogram refused a value.
    #[error("histogram: {0}")]
    Histogram(String),
}

/// A topology for benchmarks: scale 1, the default address range, δ 1 ms.
pub fn bench_topology(
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

/// The middle value of `v` (the upper one of an even count); NaN when empty.
pub(crate) fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// A histogram of nanoseconds to 4 significant figures: 1 µs at 10 ms,
/// finer than any probe's resolution.
pub(crate) fn histogram() -> Result<Histogram<u64>, BenchError> {
    Histogram::new(4).map_err(|e| BenchError::Histogram(e.to_string()))
}

pub(crate) fn record(h: &mut Histogram<u64>, v: u64) -> Result<(), BenchError> {
    h.record(v).map_err(|e| BenchError::Histogram(e.to_string()))
}

pub(crate) fn need_root() -> Result<(), BenchError> {
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
    /// Shaped links (htb qdiscs) of its plan.
    pub shaped_links: usize,
    /// Flow queues of each shaped link ([`super::htb::FlowQueues`]).
    pub flow_queues: u16,
    /// Htb classes of its plan, flow queues included.
    pub htb_classes: usize,
    /// Median time to build it, seconds.
    pub up_s: f64,
    /// Median time to tear it down, seconds.
    pub down_s: f64,
    /// Namespaces and run directories left after the teardowns (0 expected).
    pub leftover: usize,
    /// Root or rootless.
    pub mode: Mode,
    /// The OCS datapath the builds had.
    pub datapath: super::Datapath,
    /// Each build's (up, down) seconds.
    pub runs: Vec<(f64, f64)>,
}

/// Builds and tears down `racks` x `hosts_per_rack` hosts with
/// `ocs_ports` OCS ports per rack `repeat` times, with `threads` build
/// threads (0: one per core, at most 4), OCS datapath `datapath` (`None`:
/// the default) and `flow_queues` per shaped link (`None`: what the budget
/// allows, [`super::htb::FlowQueues::within_budget`]). Rootless outside
/// root: call it before this process starts any thread.
pub fn build_and_teardown(
    racks: u32,
    hosts_per_rack: u32,
    ocs_ports: u32,
    threads: usize,
    repeat: u32,
    datapath: Option<super::Datapath>,
    flow_queues: Option<u16>,
) -> Result<BuildFigures, BenchError> {
    let mode = rootless::enter_if_needed()?;
    let gbit = Bps(1_000_000_000);
    let mut topo = bench_topology(racks, hosts_per_rack, gbit, gbit, ocs_ports, gbit)?;
    topo.flow_queues = flow_queues;
    let mut runs = Vec::new();
    let mut leftover = 0;
    let mut shape = (0, 0, 0, 0, 1);
    let mut built_with = super::Datapath::TcMirred;
    for _ in 0..repeat.max(1) {
        let t0 = Instant::now();
        let f = Fabric::up(
            &topo,
            FabricOptions {
                threads,
                datapath,
                ..Default::default()
            },
        )?;
        let up_s = t0.elapsed().as_secs_f64();
        let run = f.run_id();
        built_with = f.ledger().datapath;
        let p = f.plan();
        shape = (
            p.namespaces.len(),
            p.veth_count(),
            p.shapers().count(),
            p.shapers().count() * super::htb::class_count(p.flow_queues()),
            p.flow_queues().count(),
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
        shaped_links: shape.2,
        htb_classes: shape.3,
        flow_queues: shape.4,
        up_s: median(runs.iter().map(|r| r.0).collect()),
        down_s: median(runs.iter().map(|r| r.1).collect()),
        leftover,
        mode,
        datapath: built_with,
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
