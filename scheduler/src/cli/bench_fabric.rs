//! `ocslab bench fabric|links|ocs`: figures of the kernel fabric, measured
//! on this box by the harnesses of `ocslab_emulator::fabric::bench`
//! (never timed tests); this module parses the arguments and prints.

use crate::emu::bench::lab_up;
use anyhow::Result;
use ocslab_emulator::fabric::htb;
use ocslab_emulator::fabric::{bench, bench_ocs, Datapath};
use ocslab_emulator::{Bps, Nanos};
use std::process::ExitCode;

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
    /// The OCS datapath (default: ebpf as root, else tc-mirred).
    #[arg(long, value_name = "ebpf|tc-mirred")]
    pub datapath: Option<Datapath>,
    /// Builds to time (the figures are medians).
    #[arg(long, default_value_t = 3)]
    pub repeat: u32,
    /// Flow queues per shaped link, a power of two up to 256 (default:
    /// what the fabric's budget of 8,192 allows; 1 is a single FIFO).
    #[arg(long)]
    pub flow_queues: Option<u16>,
    /// Bring up whole labs instead: the fabric and one agent per host,
    /// every agent joined; report up (the fabric's part and the agents'),
    /// down, idle agent memory, the driver's file descriptors and the
    /// box's memory (root only).
    #[arg(long, conflicts_with_all = ["threads", "datapath", "flow_queues"])]
    pub agents: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs the benchmark.
pub fn fabric(a: FabricArgs) -> Result<ExitCode> {
    if a.agents {
        return labs(a);
    }
    // Before any thread: rootless builds inside a user namespace.
    let figures = bench::build_and_teardown(
        a.racks,
        a.hosts_per_rack,
        a.ocs_ports,
        a.threads,
        a.repeat,
        a.datapath,
        a.flow_queues,
    )?;
    if a.json {
        println!("{}", serde_json::to_string(&figures)?);
    } else {
        println!(
            "{} hosts ({} racks x {}), {:?} mode, {} datapath: {} namespaces, {} veth pairs, {} shaped links with {} flow queue(s) each, {} htb classes",
            figures.hosts,
            a.racks,
            a.hosts_per_rack,
            figures.mode,
            figures.datapath,
            figures.namespaces,
            figures.veth_pairs,
            figures.shaped_links,
            figures.flow_queues,
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
    Ok(if figures.leftover == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// `ocslab bench fabric --agents`.
fn labs(a: FabricArgs) -> Result<ExitCode> {
    let figures = lab_up::lab_up_and_down(a.racks, a.hosts_per_rack, a.ocs_ports, a.repeat)?;
    if a.json {
        println!("{}", serde_json::to_string(&figures)?);
    } else {
        println!(
            "{} hosts ({} racks x {}) with an agent each, {:?} mode, {} datapath",
            figures.hosts, a.racks, a.hosts_per_rack, figures.mode, figures.datapath
        );
        println!(
            "up {:.3} s (fabric built in {:.3} s, then every agent joined in {:.3} s), down {:.3} s (medians of {}), leftover {}",
            figures.up_s,
            figures.fabric_s,
            figures.agents_s,
            figures.down_s,
            figures.runs.len(),
            figures.leftover
        );
        for r in &figures.runs {
            println!(
                "  idle agent RSS median {:.1} MiB (largest {:.1}), anonymous {:.2} MiB; driver {} fds; MemAvailable fell {:.2} GB ({:.2} MB a host)",
                r.agent_rss_kib.0 as f64 / 1024.0,
                r.agent_rss_kib.1 as f64 / 1024.0,
                r.agent_anon_kib.0 as f64 / 1024.0,
                r.driver_fds,
                r.memory_used as f64 / 1e9,
                r.memory_used as f64 / 1e6 / figures.hosts as f64
            );
        }
    }
    Ok(if figures.leftover == 0 {
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

/// Runs the benchmark.
pub fn links(a: LinksArgs) -> Result<ExitCode> {
    let figures = bench::link_goodputs(&a.rates, a.seconds, a.two_way, a.leaf_queue_us)?;
    if a.json {
        println!("{}", serde_json::to_string(&figures)?);
    } else {
        for fig in &figures {
            println!(
                "{:<10} {:<7} configured {:>10}  allows {:>9.2} Mbit/s  measured {:>9.2} Mbit/s  ({:+.1}%)",
                fig.link,
                fig.direction,
                Bps(fig.configured_bps).to_string(),
                fig.allowed_bps / 1e6,
                fig.measured_bps / 1e6,
                fig.error_pct
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Arguments of `ocslab bench ocs`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  ocslab bench ocs                                   # both datapaths, 4 delays, idle and loaded, rotor, goodput\n  ocslab bench ocs --datapaths ebpf --delays-us 10 --load busy --parts dark\n  ocslab bench ocs --json > ocs.json"
)]
pub struct OcsArgs {
    /// Datapaths to measure.
    #[arg(long, value_delimiter = ',', default_value = "ebpf,tc-mirred")]
    pub datapaths: Vec<Datapath>,
    /// Reconfiguration delays δ, microseconds.
    #[arg(long, value_delimiter = ',', default_value = "10,100,1000,10000")]
    pub delays_us: Vec<u64>,
    /// Idle box, every core busy (one spinning thread pinned to each core), or both.
    #[arg(long, value_enum, default_value_t = Load::Both)]
    pub load: Load,
    /// Circuit moves measured per run (after two unmeasured ones).
    #[arg(long, default_value_t = 40)]
    pub rounds: u32,
    /// Probe packet interval in microseconds; 0 sends back to back (a few µs
    /// apart; the real spacing is printed).
    #[arg(long, default_value_t = 0)]
    pub interval_us: u64,
    /// Reconfiguration calls timed per datapath and load (no probe).
    #[arg(long, default_value_t = 1000)]
    pub calls: u32,
    /// Rotor slot length, microseconds (4 racks, 3 slots; eBPF only).
    #[arg(long, default_value_t = 50)]
    pub rotor_slot_us: u64,
    /// Rotor dark time at a slot's start, microseconds.
    #[arg(long, default_value_t = 10)]
    pub rotor_delay_us: u64,
    /// How long the rotor runs, milliseconds.
    #[arg(long, default_value_t = 300)]
    pub rotor_ms: u64,
    /// What to measure.
    #[arg(
        long,
        value_delimiter = ',',
        value_enum,
        default_value = "dark,calls,rotor,goodput"
    )]
    pub parts: Vec<Part>,
    /// Goodput runs per datapath and load (interleaved; the median is printed).
    #[arg(long, default_value_t = 3)]
    pub goodput_repeat: u32,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// A part of `ocslab bench ocs`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Part {
    /// Dark time per datapath, δ and load.
    Dark,
    /// Reconfiguration call latency, no probe.
    Calls,
    /// A rotor schedule's slots (eBPF).
    Rotor,
    /// TCP goodput through one circuit.
    Goodput,
}

/// Whether benchmarks run on an idle box, a loaded one, or both.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Load {
    /// No load started.
    Idle,
    /// One spinning thread pinned to each core.
    Busy,
    /// Idle, then busy.
    Both,
}

impl Load {
    fn runs(self) -> &'static [bool] {
        match self {
            Load::Idle => &[false],
            Load::Busy => &[true],
            Load::Both => &[false, true],
        }
    }
}

/// Everything `ocslab bench ocs` measured.
#[derive(Debug, serde::Serialize)]
struct OcsReport {
    dark: Vec<bench_ocs::DarkFigures>,
    calls: Vec<bench_ocs::CallFigures>,
    rotor: Vec<bench_ocs::RotorFigures>,
    goodput: Vec<bench_ocs::GoodputFigure>,
}

/// Runs the benchmark.
pub fn ocs(a: OcsArgs) -> Result<ExitCode> {
    let mut report = OcsReport {
        dark: Vec::new(),
        calls: Vec::new(),
        rotor: Vec::new(),
        goodput: Vec::new(),
    };
    let say = |line: String| {
        if !a.json {
            println!("{line}");
        }
    };
    if a.parts.contains(&Part::Dark) {
        say(format!(
            "{:<9} {:>8} {:<5} {:>5} {:>9} {:>9} {:>9} {:>9} {:>7} {:>7} {:>11} {:>7} {:>9} {:>9} {:>8}",
            "datapath",
            "δ µs",
            "load",
            "gaps",
            "min µs",
            "p50 µs",
            "p99 µs",
            "max µs",
            "target",
            "watched",
            "p99 watched",
            "target",
            "call p50",
            "call p99",
            "probe µs"
        ));
        for &dp in &a.datapaths {
            for &load in a.load.runs() {
                for &d in &a.delays_us {
                    let f = bench_ocs::dark_time(bench_ocs::DarkSpec {
                        datapath: dp,
                        delay: Nanos(d * 1000),
                        rounds: a.rounds,
                        interval_us: a.interval_us,
                        load,
                    })?;
                    say(format!(
                        "{:<9} {:>8} {:<5} {:>5} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>7} {:>7} {:>11.1} {:>7} {:>9.1} {:>9.1} {:>8.1}",
                        dp.to_string(),
                        d,
                        if load { "busy" } else { "idle" },
                        f.gaps_measured,
                        f.dark_min_us,
                        f.dark_p50_us,
                        f.dark_p99_us,
                        f.dark_max_us,
                        if f.within_target { "met" } else { "missed" },
                        f.watched_moves,
                        f.dark_p99_watched_us,
                        if f.watched_within_target { "met" } else { "missed" },
                        f.call_p50_us,
                        f.call_p99_us,
                        f.probe_spacing_us
                    ));
                    report.dark.push(f);
                }
            }
        }
        say("target: p99 dark time within max(1 % of δ, 10 µs) of δ; call = time the reconfiguration spent changing the kernel (eBPF: written ahead of the move, the probe waiting at its gate; tc-mirred: at the move, the probe sending); probe = mean time between circuit arrivals at the gap's edges, median over moves (the resolution); watched = moves whose both edges (down_at, up_at) the probe saw: no gap over 5 µs between its packets' send times within 10 µs of either; p99 watched = p99 over those (at the others every sender stalled at once, e.g. the box's timer tick)".into());
        for f in &report.dark {
            let p = &f.paths;
            say(format!(
                "{} δ {} µs {}: {} of {} circuit packets crossed while their port was dark; {} of {} EPS packets took EPS while their circuit was up (worst {:.1} µs inside the wrong side of an edge); {} fell back to EPS inside a dark time",
                f.spec.datapath,
                f.delay_us,
                if f.spec.load { "busy" } else { "idle" },
                p.circuit_outside,
                p.circuit_packets,
                p.eps_inside,
                p.eps_packets,
                p.wrong_by_ns as f64 / 1e3,
                f.eps_while_dark
            ));
        }
        for f in &report.dark {
            if let Some(x) = &f.excess {
                say(format!(
                    "{} δ {} µs {}: gap − δ = old edge {:.1} / {:.1} + new edge {:.1} / {:.1} + transit {:.1} / {:.1} µs (p50 / p99 of {} moves)",
                    f.spec.datapath,
                    f.delay_us,
                    if f.spec.load { "busy" } else { "idle" },
                    x.old_edge_us.0,
                    x.old_edge_us.1,
                    x.new_edge_us.0,
                    x.new_edge_us.1,
                    x.transit_us.0,
                    x.transit_us.1,
                    x.moves
                ));
            }
        }
        if report.dark.iter().any(|f| f.excess.is_some()) {
            say("old edge = the move (down_at) − the last old-circuit packet's send; new edge = the first new-circuit packet's send − up_at; transit = how much longer that packet took from send to receive than the old one: the probe's sampling and the emulated path's jitter, not the datapath's (it keeps the port dark from down_at to up_at = δ later)".into());
        }
        if let Some(f) = report.dark.first() {
            say(format!(
                "a probe packet costs a core {:.1} µs through the emulated path; eBPF: {} probe senders (one per core), each move written {} µs ahead once they stream, and sender i times one packet to reach its ToR before the port goes dark and one after the new circuit is up, taking the send-to-ToR hop as {:.1}–{:.1} µs, {:.1}·i µs further out (the rotor's probe does the same at every window's edges); tc-mirred: one sender, from {} µs before each call; until {} µs after the new circuit is up",
                f.probe_send_us,
                f.probe_senders,
                bench_ocs::MOVE_LEAD.0 / 1000,
                bench_ocs::TOR_HOP.0 .0 as f64 / 1e3,
                bench_ocs::TOR_HOP.1 .0 as f64 / 1e3,
                bench_ocs::EDGE_STAGGER.0 as f64 / 1e3,
                bench_ocs::GATE_LEAD.0 / 1000,
                bench_ocs::GATE_TAIL.0 / 1000
            ));
        }
    }
    if a.parts.contains(&Part::Calls) {
        for &dp in &a.datapaths {
            for &load in a.load.runs() {
                let c = bench_ocs::call_latency(dp, load, a.calls)?;
                say(format!(
                    "reconfiguration call, {dp}, {}, no probe: p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs ({} calls)",
                    if load { "busy" } else { "idle" },
                    c.call_us[0],
                    c.call_us[1],
                    c.call_us[2],
                    c.calls
                ));
                report.calls.push(c);
            }
        }
    }
    if a.parts.contains(&Part::Rotor) && a.datapaths.contains(&Datapath::Ebpf) {
        for &load in a.load.runs() {
            let r = bench_ocs::rotor(bench_ocs::RotorSpec {
                slot: Nanos(a.rotor_slot_us * 1000),
                delay: Nanos(a.rotor_delay_us * 1000),
                duration_ms: a.rotor_ms,
                load,
            })?;
            say(format!(
                "rotor ({} racks, {} µs slots, δ {} µs, {}): {} windows ({} inside the probe's bursts, measured), {} circuit packets, {} outside their slots; {} on EPS, {} of them inside their pair's window; boundary error open p50/p99/max {:.1}/{:.1}/{:.1} µs, close {:.1}/{:.1}/{:.1} µs (probe every {:.1} µs inside a window, send to receive {:.1} µs); watched and bracketed by the probe (no gap over {:.0} µs between sends within {:.0} µs): {} of {} openings, each within p50/p99/max {:.1}/{:.1}/{:.1} µs of the schedule, {} of {} closings, within {:.1}/{:.1}/{:.1} µs; schedule in force {:.1} µs after the call",
                r.racks, a.rotor_slot_us, a.rotor_delay_us, if load { "busy" } else { "idle" },
                r.windows_seen, r.windows_measured, r.paths.circuit_packets, r.paths.circuit_outside, r.paths.eps_packets, r.paths.eps_inside,
                r.open_error_us[0], r.open_error_us[1], r.open_error_us[2],
                r.close_error_us[0], r.close_error_us[1], r.close_error_us[2],
                r.probe_spacing_us, r.transit_p50_us,
                bench_ocs::WATCH_GAP.as_secs_f64() * 1e6, bench_ocs::WATCH_SPAN.as_secs_f64() * 1e6,
                r.edges_watched[0], r.windows_measured,
                r.watched_open_bound_us[0], r.watched_open_bound_us[1], r.watched_open_bound_us[2],
                r.edges_watched[1], r.windows_measured,
                r.watched_close_bound_us[0], r.watched_close_bound_us[1], r.watched_close_bound_us[2],
                r.set_schedule_us
            ));
            report.rotor.push(r);
        }
    }
    if a.parts.contains(&Part::Goodput) {
        let mut runs: Vec<(Datapath, bool, Vec<f64>, f64)> = Vec::new();
        for _ in 0..a.goodput_repeat {
            for &dp in &a.datapaths {
                for &load in a.load.runs() {
                    let g = bench_ocs::circuit_goodput(dp, load)?;
                    match runs.iter_mut().find(|r| r.0 == dp && r.1 == load) {
                        Some(r) => r.2.push(g.gbit_s),
                        None => runs.push((dp, load, vec![g.gbit_s], g.over_circuit)),
                    }
                    report.goodput.push(g);
                }
            }
        }
        for (dp, load, mut g, over) in runs {
            g.sort_by(f64::total_cmp);
            say(format!(
                "goodput through one circuit, {dp}, {}: median {:.2} Gbit/s of {} runs ({}; {:.1} % of the bytes over the circuit)",
                if load { "busy" } else { "idle" },
                g[g.len() / 2],
                g.len(),
                g.iter().map(|x| format!("{x:.2}")).collect::<Vec<_>>().join(", "),
                over * 100.0
            ));
        }
    }
    if a.json {
        println!("{}", serde_json::to_string(&report)?);
    }
    Ok(ExitCode::SUCCESS)
}
