//! Benchmarks of the OCS datapaths (`ocslab bench ocs` prints them; never
//! timed tests). Each builds its own small fabric of 100 Gbit/s links, so a
//! shaper never holds a probe packet back; the eBPF probe benches leave the
//! links unshaped ([`FabricOptions::unshaped`]), where a shaper would only
//! add to each packet's cost.
//!
//! The probe ([`probe::DarkProbe`](super::probe::DarkProbe)) runs one sender per core under
//! SCHED_FIFO. A packet costs its sender's core the whole emulated path
//! (about 5.6 µs here), so two senders on two cores halve the spacing. The
//! senders take every core while they send, so they send only while a
//! [`probe::Gate`](super::probe::Gate) is open around the instants measured. On eBPF the bench
//! opens the gate and, once the senders stream, writes the move a little
//! ahead of its time ([`super::Ocs::set_matching_at`]) from a thread above
//! their priority; the kernel then makes it with every core probing. A call
//! made at the move would take a core from the probe just where it measures.
//! Since such a move's instants are known ahead, each sender also times one
//! packet to reach its ToR just before the port goes dark and one just after
//! the new circuit is up ([`probe::Align`](super::probe::Align), `Edges`), and the rotor's probe
//! does the same at every window's edges: the edges are then sampled at the
//! hop's jitter, not at the senders' phase. tc-mirred times its moves in user
//! space, and its call needs the kernel's workers, which senders on every
//! core would starve, so there the probe has one sender and the bench makes
//! the call.
//!
//! - [`dark_time`]: a circuit from rack 0 moves between racks 1 and 2 while
//!   the probe goes to both back to back, seven packets in eight to the
//!   rack the circuit reaches: the old one up to the move, the new one from
//!   there on. The dark time of a move is the gap between the
//!   last packet that crossed the old circuit and the first that crossed
//!   the new one, from the kernel's receive timestamps at the destinations
//!   (TTL tells the path); p99 over every move, and over the moves whose
//!   `down_at` and `up_at` the probe watched (`watched`: the box's timer
//!   tick silences every sender at once now and then). Every packet's path
//!   is also checked against each move's `down_at` and `up_at`
//!   ([`PathCheck`]). Also: how long the reconfiguration call took.
//! - [`rotor()`]: a 4-rack rotor schedule followed by the datapath alone,
//!   and by the probe in bursts, which sends most packets to the rack of
//!   the slot in progress. Each probe packet that crossed a circuit is
//!   placed in its pair's slot from its send and receive times; the
//!   figures are the packets on the wrong path ([`PathCheck`]: circuit
//!   packets outside their slots, and packets that took EPS while their
//!   pair's circuit was usable from their send to their receive time),
//!   how far the first and last packet of each slot inside a burst are
//!   from the slot's usable window, and how far from the schedule each
//!   window's edges can be, from the packets that bracket them
//!   (`WindowEdges`), where the probe watched the edge (`watched`).
//! - [`call_latency`]: how long a reconfiguration call spends changing the
//!   kernel, with no probe traffic (δ = 0, so no call waits).
//! - [`circuit_goodput`]: one marked TCP stream through one circuit.
//!
//! Each can run with a [`CpuLoad`]: one busy thread pinned to each core at
//! normal priority, for as long as the measurement.

mod call;
mod dark;
mod edges;
mod goodput;
mod load;
mod paths;
mod rotor;

pub use call::{call_latency, CallFigures};
pub use dark::{dark_time, DarkFigures, DarkSpec, GapExcess, MOVE_LEAD};
pub use edges::{EDGE_STAGGER, TOR_HOP, WATCH_GAP, WATCH_SPAN};
pub use goodput::{circuit_goodput, GoodputFigure};
pub use load::CpuLoad;
pub use paths::{check_paths, usable_spans, PathCheck};
pub use rotor::{rotor, RotorFigures, RotorSpec};

use super::bench::{bench_topology, BenchError};
use super::{Circuit, Datapath, Fabric, FabricOptions};
use crate::{Bps, Nanos};
use hdrhistogram::Histogram;

const GBIT100: Bps = Bps(100_000_000_000);

/// The bench's fabric: `racks` racks of one host, links of 100 Gbit/s, one
/// OCS port per rack. `unshaped` leaves the links without htb, as the eBPF
/// probe benches do: the box is slower than the links, so a shaper would
/// only add to every probe packet's cost (8.8 against 5.6 µs here).
/// tc-mirred keeps the shapers every other fabric has. Without them its
/// circuits' mirred filters are the box's only software tc filters, so
/// each move took the last one away and put one back, and the kernel
/// switched its software-classifier static key off and on each time
/// (`tcf_proto_count_usesw`: a jump-label patch that interrupts every
/// CPU), which doubled the call (p50 140 against 64 µs, side by side);
/// htb's u32 filters keep the key on.
fn up(racks: u32, datapath: Datapath, unshaped: bool) -> Result<Fabric, BenchError> {
    let topo = bench_topology(racks, 1, GBIT100, GBIT100, 1, GBIT100)?;
    Ok(Fabric::up(
        &topo,
        FabricOptions {
            datapath: Some(datapath),
            unshaped,
            ..Default::default()
        },
    )?)
}

/// Probe senders: one per core, so the probe is as dense as the box allows
/// while its gate is open.
fn senders() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// How long the probe's gate is open before the instants it measures when
/// nothing waits for its senders (the rotor's bursts, tc-mirred's moves):
/// they poll the gate [`probe::GATE_POLL`](super::probe::GATE_POLL) apart,
/// and on this box a sender woke up to 250 µs late from that sleep, idle or
/// busy. (tc-mirred's call needs the kernel's workers, and a lead of 1 ms,
/// which its SCHED_FIFO sender holds a core through, took its busy calls'
/// p99 to 26–937 ms.)
pub const GATE_LEAD: Nanos = Nanos(300_000);

/// How long the gate stays open after the last instant it measures.
pub const GATE_TAIL: Nanos = Nanos(100_000);

/// The circuit on port 0 from `src_rack` to `dst_rack`.
fn circuit(src_rack: u32, dst_rack: u32) -> Circuit {
    Circuit {
        src_rack,
        dst_rack,
        port: 0,
    }
}

/// ns as µs.
fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// The `q` quantile of `h` (ns), µs.
fn pct(h: &Histogram<u64>, q: f64) -> f64 {
    us(h.value_at_quantile(q))
}

/// Reconfigurations made before measuring (one-time kernel allocations).
const WARMUP_ROUNDS: u32 = 2;
