//! What a run produced, in records both drivers fill the same way: one
//! [`CoflowRecord`] per coflow, one [`CircuitRecord`] per circuit, the
//! network's totals ([`NetStats`]), link utilization over time
//! ([`LinkSeries`]), and summaries of them ([`summary`]). The simulator and
//! the emulation driver each produce these; the results layer reads only
//! these, so a simulated and an emulated run are written and compared by
//! the same code.

pub mod summary;

use crate::coflow::lower_bound::{coflow_lower_bound_waiting, Fabrics, LowerBound};
use crate::coflow::FabricParams;
use crate::model::coflow::{Coflow, CoflowId};
use crate::net::links::{LinkKind, LinkMap};
use crate::{Bytes, Nanos};
use serde::Serialize;
use std::collections::BTreeMap;
use summary::Bin;

/// Totals a run reports.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct NetStats {
    /// Bytes delivered over EPS.
    pub eps_bytes: Bytes,
    /// Bytes delivered over circuits.
    pub ocs_bytes: Bytes,
    /// Bytes between hosts of different racks (either fabric).
    pub cross_rack_bytes: Bytes,
    /// Circuits set up.
    pub reconfigurations: u64,
    /// Flows finished.
    pub flows_done: u64,
    /// Times the coflow policy was asked for a decision.
    pub policy_calls: u64,
    /// Flow plans the policy's decisions held, summed over its calls
    /// (counted by the simulator; the emulation driver leaves it 0).
    pub flow_plans: u64,
    /// Flows a decision moved to another path, cap or class, each of which
    /// the rate solver then takes up again (counted by the simulator; the
    /// emulation driver leaves it 0 and counts its agent commands instead).
    pub flows_replanned: u64,
}

/// One circuit's life, for timelines and plots.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct CircuitRecord {
    /// Sending rack.
    pub src_rack: u32,
    /// Receiving rack.
    pub dst_rack: u32,
    /// Port (wavelength).
    pub port: u32,
    /// When the policy asked for it (its ports went dark).
    pub requested_at: Nanos,
    /// When it came up (after δ).
    pub up_at: Nanos,
    /// When it was torn down, if it was.
    pub down_at: Option<Nanos>,
}

/// A run's circuits by rack pair, to ask what a coflow arriving at some
/// time must still wait for a circuit of each of its pairs.
#[derive(Clone, Debug, Default)]
pub struct CircuitsByPair {
    /// Every circuit of each `(src_rack, dst_rack)` pair.
    lives: BTreeMap<(u32, u32), Vec<CircuitRecord>>,
}

impl CircuitsByPair {
    /// Indexes `circuits`.
    pub fn new(circuits: &[CircuitRecord]) -> CircuitsByPair {
        let mut lives: BTreeMap<_, Vec<_>> = BTreeMap::new();
        for c in circuits {
            lives.entry((c.src_rack, c.dst_rack)).or_default().push(*c);
        }
        CircuitsByPair { lives }
    }

    /// How long a coflow arriving `at` must wait before a circuit from
    /// rack `i` to rack `j` can carry a byte: zero if one is up at `at`;
    /// the rest of its set-up if one was asked for before `at`; `delta`
    /// (a new circuit) if that is sooner or there is none.
    pub fn wait_at(&self, i: u32, j: u32, at: Nanos, delta: Nanos) -> Nanos {
        let Some(lives) = self.lives.get(&(i, j)) else {
            return delta;
        };
        lives
            .iter()
            .filter(|c| c.requested_at <= at && c.down_at.is_none_or(|down| at < down))
            .map(|c| c.up_at.saturating_sub(at))
            .fold(delta, Nanos::min)
    }
}

/// What the network did over a run, for the results folder's plots: every
/// circuit, and the utilization of the EPS uplinks and OCS ports over time.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct NetTimeline {
    /// Every circuit set up, in set-up order.
    pub circuits: Vec<CircuitRecord>,
    /// The tracked links' utilization (`LinkUsage` of the simulator, or the emulation driver's sampler).
    pub links: Vec<LinkSeries>,
}

/// One tracked link's utilization over a run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LinkSeries {
    /// Which link.
    pub link: LinkKind,
    /// Its name in reports, e.g. `r2 EPS uplink` or `r2 OCS port 0`.
    pub name: String,
    /// Its rate, bytes per second.
    pub capacity_bytes_per_s: f64,
    /// `(t, utilization)`: the mean utilization (0..=1) over the interval
    /// from the previous sample's time (0 for the first) to `t`.
    pub samples: Vec<(Nanos, f64)>,
    /// Bytes it carried over the whole run.
    pub bytes: f64,
}

/// A tracked link's name in reports.
pub fn link_name(link: LinkKind) -> String {
    match link {
        LinkKind::TorUp(r) => format!("r{r} EPS uplink"),
        LinkKind::TorDown(r) => format!("r{r} EPS downlink"),
        LinkKind::OcsPort { rack, port } => format!("r{rack} OCS port {port}"),
        LinkKind::HostUp(h) => format!("{h} NIC up"),
        LinkKind::HostDown(h) => format!("{h} NIC down"),
    }
}

/// How the solves went, for benchmarks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SolveStats {
    /// Solves.
    pub solves: u64,
    /// Demands water-filled, summed over all solves.
    pub demands_filled: u64,
    /// Slots reported changed (demand set since the last solve, or a
    /// bottleneck that moved), summed over all solves.
    pub bottlenecks_moved: u64,
    /// Links frozen (each solve's freezes, summed), when every demand was
    /// in the matrix.
    pub freezes: u64,
    /// Of those, the freezes a solve repeated from the last one's order
    /// instead of finding them (the simulator's `freeze_log`).
    pub freezes_repeated: u64,
    /// Solves that only took departed slots off their links, every slot
    /// being at its cap.
    pub departures_at_caps: u64,
    /// Solves in which every demand was capped and the caps fit on every
    /// link, which left every slot at its cap without a filling.
    pub solves_at_caps: u64,
    /// Resumed solves that froze the rest of the links by following the
    /// last one's order (`LinkLevels::follow_last_order`), and those that
    /// tried and went back to the heap.
    pub orders_followed: u64,
    /// See `orders_followed`.
    pub orders_left: u64,
    /// Solves that froze links from the rows of slots by bottleneck
    /// instead of visiting slots (the simulator's `levels/rows.rs`).
    pub row_solves: u64,
    /// Slots those solves moved to another row as they froze.
    pub row_moves: u64,
    /// Solves that filled only the changed slots and those sharing a
    /// bottleneck with them (the simulator's `levels/local.rs`).
    pub local_solves: u64,
    /// Under strict priority between classes (the simulator's `class_levels`):
    /// classes filled again, summed over all solves.
    pub classes_filled: u64,
    /// Of `classes_filled`, classes none of whose slots changed: filled
    /// again only because the classes before them left their links
    /// other capacities.
    pub classes_recapacitated: u64,
    /// Classes whose last filling was kept (nothing on their links
    /// changed), summed over all solves.
    pub classes_kept: u64,
}

/// What happened to one coflow.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CoflowRecord {
    /// The coflow.
    pub id: CoflowId,
    /// When it arrived.
    pub arrival: Nanos,
    /// Its bytes.
    pub bytes: Bytes,
    /// Its number of flows.
    pub width: usize,
    /// Its largest flow.
    pub longest_flow: Bytes,
    /// Its bin (by longest flow and width).
    pub bin: Bin,
    /// When its last flow finished.
    pub finished: Nanos,
    /// Coflow completion time: `finished - arrival`.
    pub cct: Nanos,
    /// Its lower bound alone in the fabric, crediting the circuits up or
    /// coming up at its arrival (`None` if the fabric cannot carry it).
    pub lower_bound: Option<LowerBound>,
    /// Bytes it sent over EPS.
    pub eps_bytes: Bytes,
    /// Bytes it sent over circuits.
    pub ocs_bytes: Bytes,
}

impl CoflowRecord {
    /// The record of `coflow` as it arrives, not finished yet: its size,
    /// width, bin and lower bound alone on `fabric` over `fabrics`, each
    /// rack pair charged what it must wait for a circuit given `circuits`
    /// (the run's circuits), with no bytes sent. [`CoflowRecord::finish`]
    /// completes it.
    pub fn arrived(
        coflow: &Coflow,
        fabric: &FabricParams,
        links: &LinkMap,
        fabrics: Fabrics,
        circuits: &CircuitsByPair,
    ) -> CoflowRecord {
        let longest = coflow.flows.iter().map(|f| f.bytes).max().unwrap_or_default();
        CoflowRecord {
            id: coflow.id,
            arrival: coflow.arrival,
            bytes: coflow.bytes(),
            width: coflow.flows.len(),
            longest_flow: longest,
            bin: Bin::of(longest, coflow.flows.len(), fabric.scale),
            finished: coflow.arrival,
            cct: Nanos::ZERO,
            lower_bound: coflow_lower_bound_waiting(fabric, links, &coflow.flows, fabrics, &|i, j| {
                circuits.wait_at(i, j, coflow.arrival, fabric.reconfig_delay)
            }),
            eps_bytes: Bytes(0),
            ocs_bytes: Bytes(0),
        }
    }

    /// Its last byte arrived at `at`, after `eps` bytes over EPS and `ocs`
    /// over circuits.
    pub fn finish(&mut self, at: Nanos, eps: Bytes, ocs: Bytes) {
        self.finished = at;
        self.cct = at.saturating_sub(self.arrival);
        self.eps_bytes = eps;
        self.ocs_bytes = ocs;
    }

    /// CCT ÷ lower bound, when the bound is positive.
    pub fn ratio(&self) -> Option<f64> {
        let lb = self.lower_bound?.value();
        (lb.0 > 0).then(|| self.cct.as_secs_f64() / lb.as_secs_f64())
    }
}

/// A finished replay.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ReplayOutcome {
    /// The coflow scheduler.
    pub policy: String,
    /// The fabrics its coflows could cross (which lower bound applies).
    pub fabrics: Fabrics,
    /// One record per coflow, in arrival order.
    pub records: Vec<CoflowRecord>,
    /// The network's totals.
    pub stats: NetStats,
    /// Every circuit set up.
    pub circuits: Vec<CircuitRecord>,
    /// When the last coflow finished.
    pub makespan: Nanos,
    /// Utilization of the EPS uplinks and OCS ports from 0 to the makespan.
    pub links: Vec<LinkSeries>,
    /// How the rate solver went (solves, freezes repeated from the last
    /// solve's order, orders followed); all zero when no solver ran (an
    /// emulated replay).
    pub solver: SolveStats,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn circuit(src_rack: u32, dst_rack: u32, requested: u64, up: u64, down: Option<u64>) -> CircuitRecord {
        CircuitRecord {
            src_rack,
            dst_rack,
            port: 0,
            requested_at: Nanos::from_millis(requested),
            up_at: Nanos::from_millis(up),
            down_at: down.map(Nanos::from_millis),
        }
    }

    #[test]
    fn a_pair_waits_for_the_rest_of_a_set_up_or_not_at_all() {
        // δ = 10 ms. 0 -> 1 asked for at 100 ms, up at 110, down at 200;
        // asked for again at 300, up at 310, never down. 1 -> 0 never.
        let delta = Nanos::from_millis(10);
        let by_pair =
            CircuitsByPair::new(&[circuit(0, 1, 100, 110, Some(200)), circuit(0, 1, 300, 310, None)]);
        let wait = |i, j, at| by_pair.wait_at(i, j, Nanos::from_millis(at), delta);
        assert_eq!(wait(0, 1, 50), delta, "before any circuit");
        assert_eq!(wait(0, 1, 100), delta, "asked for at the arrival");
        assert_eq!(wait(0, 1, 104), Nanos::from_millis(6), "on its way up");
        assert_eq!(wait(0, 1, 110), Nanos::ZERO, "up");
        assert_eq!(wait(0, 1, 199), Nanos::ZERO, "still up");
        assert_eq!(wait(0, 1, 200), delta, "torn down");
        assert_eq!(wait(0, 1, 305), Nanos::from_millis(5));
        assert_eq!(wait(0, 1, 9_000), Nanos::ZERO, "never torn down");
        assert_eq!(wait(1, 0, 150), delta, "the reverse pair has none");
    }
}
