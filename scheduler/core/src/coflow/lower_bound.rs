//! Lower bounds on a coflow's completion time.
//!
//! - Over the OCS: Co-scheduler (Li & Shen, IEEE/ACM ToN 2022), Sec. II-C.
//!   A rack-to-rack demand `C_ij` needs at least one circuit set-up, so
//!   (eq. 1) `t_ij = C_ij / BW_OCS + δ` when `C_ij > 0`, and since a rack
//!   sends on one circuit and receives on one at a time (eq. 2)
//!   `T(C) = max(max_i Σ_j t_ij, max_j Σ_i t_ij)`. With W wavelengths per
//!   rack (WSS, eq. 15) both sums are divided by W.
//! - Over EPS: the isolation bound Varys calls Γ (SIGCOMM'14, Sec. 5.1):
//!   the longest any link needs to carry the coflow's bytes alone.
//! - Hybrid (elephants on circuits, the rest on EPS, as Sunflow runs here):
//!   the larger of T(C) for the elephants and the EPS bound for the rest.
//! - T(C) charges δ for every circuit, which bounds a coflow alone in an
//!   idle fabric. A coflow that arrives while a circuit of one of its rack
//!   pairs is up (or on its way up) needs no δ (or only the rest of it)
//!   for that pair. Reports charge each pair what it must still wait at
//!   the arrival ([`coflow_lower_bound_waiting`]), so a coflow served on a
//!   kept circuit does not finish below its bound; policies keep eq. 1.
//! - Both fabrics at once (a time-flow schedule: a flow between racks
//!   crosses a circuit of its pair while one is up and EPS otherwise): the
//!   isolation bound with each rack's egress and ingress worth its uplink
//!   plus all its OCS ports. It ignores dark times and slot shares, so no
//!   schedule beats it.

use crate::coflow::FabricParams;
use crate::model::coflow::FlowSpec;
use crate::net::links::{LinkKind, LinkMap};
use crate::{Bps, Bytes, Nanos};
use serde::Serialize;
use std::collections::BTreeMap;

/// T(C) of a rack-to-rack demand matrix over circuits of `port_rate` with
/// reconfiguration delay `delta` and `wavelengths` ports per rack (eq. 2
/// for one, eq. 15 for W). Demands of a rack to itself are ignored (they
/// never need a circuit). `None` if there is demand and no OCS to carry it.
pub fn ocs_lower_bound(
    demand: &BTreeMap<(u32, u32), Bytes>,
    port_rate: Bps,
    delta: Nanos,
    wavelengths: u32,
) -> Option<Nanos> {
    ocs_lower_bound_waiting(demand, port_rate, &|_, _| delta, wavelengths)
}

/// T(C) as [`ocs_lower_bound`], with pair `(i, j)` charged `wait(i, j)`
/// instead of δ for its circuit: less than δ when a circuit of the pair is
/// already up, or on its way up, when the coflow arrives. Each pair still
/// sends on a port of rack `i` and receives on one of rack `j`, so the row
/// and column sums bound the coflow as eq. 2 does.
pub fn ocs_lower_bound_waiting(
    demand: &BTreeMap<(u32, u32), Bytes>,
    port_rate: Bps,
    wait: &dyn Fn(u32, u32) -> Nanos,
    wavelengths: u32,
) -> Option<Nanos> {
    let mut rows: BTreeMap<u32, u128> = BTreeMap::new();
    let mut cols: BTreeMap<u32, u128> = BTreeMap::new();
    for (&(i, j), &c) in demand {
        if i == j {
            continue;
        }
        let t = ocs_pair_time(c, port_rate, wait(i, j))?;
        *rows.entry(i).or_default() += t;
        *cols.entry(j).or_default() += t;
    }
    let longest = rows.values().chain(cols.values()).copied().max().unwrap_or(0);
    ocs_bound_of_longest(longest, wavelengths)
}

/// `t_ij` of eq. 1 in nanoseconds: `C_ij / BW_OCS + δ`, zero when there
/// are no bytes; `None` if there are bytes and `port_rate` is 0.
pub fn ocs_pair_time(bytes: Bytes, port_rate: Bps, delta: Nanos) -> Option<u128> {
    if bytes.0 == 0 {
        return Some(0);
    }
    Some(port_rate.time_to_send(bytes)?.0 as u128 + delta.0 as u128)
}

/// T(C) from the longest row or column sum of `t_ij` (eq. 2), divided by
/// the `wavelengths` (eq. 15); `None` if there is demand and no wavelength.
pub fn ocs_bound_of_longest(longest: u128, wavelengths: u32) -> Option<Nanos> {
    if longest == 0 {
        return Some(Nanos::ZERO);
    }
    if wavelengths == 0 {
        return None;
    }
    let t = longest.div_ceil(wavelengths as u128); // eq. 15
    Some(Nanos(t.min(u64::MAX as u128) as u64))
}

/// The EPS isolation bound of `flows`: max over links of bytes ÷ capacity.
/// `None` if a flow crosses a link of capacity 0.
pub fn eps_lower_bound<'a>(links: &LinkMap, flows: impl IntoIterator<Item = &'a FlowSpec>) -> Option<Nanos> {
    let capacities = links.capacities();
    let mut load = vec![0u128; capacities.len()];
    for f in flows {
        for &l in links.eps_path(f.src, f.dst).as_slice() {
            load[l as usize] += f.bytes.0 as u128;
        }
    }
    longest_to_carry(load.iter().copied().zip(capacities.iter().copied()))
}

/// The longest any of `loads` (bytes, and the bytes per second that carry
/// them) takes; `None` if bytes meet a capacity of 0.
fn longest_to_carry(loads: impl IntoIterator<Item = (u128, f64)>) -> Option<Nanos> {
    let mut worst = 0u64;
    for (bytes, capacity) in loads {
        if bytes == 0 {
            continue;
        }
        let cap_bits = (capacity * 8.0).round() as u128;
        if cap_bits == 0 {
            return None;
        }
        let ns = (bytes * 8 * 1_000_000_000).div_ceil(cap_bits);
        worst = worst.max(ns.min(u64::MAX as u128) as u64);
    }
    Some(Nanos(worst))
}

/// Which fabrics a coflow's flows may cross, for its lower bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fabrics {
    /// EPS only: a policy that sets up no circuit.
    Eps,
    /// Elephants over on-demand circuits, the rest over EPS.
    Hybrid,
    /// Every flow between racks over circuits and EPS at once: circuits
    /// that follow a time-flow schedule.
    Both,
}

impl Fabrics {
    /// The fabrics of a run whose coflow policy `uses_ocs`, on a fabric
    /// whose circuits follow a schedule or not.
    pub fn of(uses_ocs: bool, scheduled: bool) -> Fabrics {
        match (scheduled, uses_ocs) {
            (true, _) => Fabrics::Both,
            (false, true) => Fabrics::Hybrid,
            (false, false) => Fabrics::Eps,
        }
    }

    /// The lower bound it gives, in words (for reports).
    pub fn bound_in_words(self) -> &'static str {
        match self {
            Fabrics::Eps => "EPS: max over links of bytes / capacity",
            Fabrics::Hybrid => {
                "hybrid: T(C) (eq. 2/15, crediting circuits up at arrival) for elephants over OCS, EPS bound for the rest"
            }
            Fabrics::Both => "both fabrics: max over NICs and racks of bytes / (uplink + OCS ports)",
        }
    }
}

/// A coflow's lower bound, split by fabric.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LowerBound {
    /// The EPS bound of the flows that go over EPS.
    pub eps: Nanos,
    /// T(C) of the flows that go over circuits (zero if none).
    pub ocs: Nanos,
    /// The bound of the flows that may cross both fabrics at once (zero
    /// unless circuits follow a schedule).
    pub both: Nanos,
}

impl LowerBound {
    /// The bound: the largest part.
    pub fn value(&self) -> Nanos {
        self.eps.max(self.ocs).max(self.both)
    }
}

/// The bound of `flows` when every flow between racks may cross its
/// rack's uplink and all its OCS ports at once ([`Fabrics::Both`]): max
/// over the NICs, and over each rack's egress and ingress, of bytes ÷
/// capacity. `None` if some flow crosses no capacity at all.
pub fn both_fabrics_lower_bound<'a>(
    fabric: &FabricParams,
    links: &LinkMap,
    flows: impl IntoIterator<Item = &'a FlowSpec>,
) -> Option<Nanos> {
    let capacity = |k: LinkKind| links.id(k).map_or(0.0, |id| links.capacities()[id as usize]);
    let rack_rate = |up: fn(u32) -> LinkKind, r: u32| {
        capacity(up(r))
            + (0..fabric.ocs_ports)
                .map(|port| capacity(LinkKind::OcsPort { rack: r, port }))
                .sum::<f64>()
    };
    // By the link that stands for each resource: a NIC, or a rack's uplink
    // (its egress) and downlink (its ingress), each at its rate here.
    let mut load: BTreeMap<u32, (f64, u128)> = BTreeMap::new();
    let mut add = |k: LinkKind, rate: f64, bytes: u64| {
        let id = links.id(k).unwrap_or(u32::MAX);
        load.entry(id).or_insert((rate, 0)).1 += bytes as u128;
    };
    for f in flows {
        add(
            LinkKind::HostUp(f.src),
            capacity(LinkKind::HostUp(f.src)),
            f.bytes.0,
        );
        add(
            LinkKind::HostDown(f.dst),
            capacity(LinkKind::HostDown(f.dst)),
            f.bytes.0,
        );
        if f.src.rack != f.dst.rack {
            add(
                LinkKind::TorUp(f.src.rack),
                rack_rate(LinkKind::TorUp, f.src.rack),
                f.bytes.0,
            );
            add(
                LinkKind::TorDown(f.dst.rack),
                rack_rate(LinkKind::TorDown, f.dst.rack),
                f.bytes.0,
            );
        }
    }
    longest_to_carry(load.into_values().map(|(rate, bytes)| (bytes, rate)))
}

/// The lower bound of a coflow of `flows` alone on `fabric` over
/// `fabrics`: with [`Fabrics::Hybrid`], elephants
/// ([`FabricParams::may_use_ocs`], with the coflow's bytes per rack pair
/// summed over `flows`) over circuits and the rest over EPS; with
/// [`Fabrics::Eps`] everything over EPS; with [`Fabrics::Both`],
/// [`both_fabrics_lower_bound`]. Every circuit costs δ (eq. 1). `None` if
/// some part cannot be carried.
pub fn coflow_lower_bound(
    fabric: &FabricParams,
    links: &LinkMap,
    flows: &[FlowSpec],
    fabrics: Fabrics,
) -> Option<LowerBound> {
    let delta = fabric.reconfig_delay;
    coflow_lower_bound_waiting(fabric, links, flows, fabrics, &|_, _| delta)
}

/// [`coflow_lower_bound`] with each rack pair's circuit costing
/// `wait(i, j)` (at most δ) instead of δ: the bound of a coflow that finds
/// circuits up, or coming up, at its arrival
/// ([`ocs_lower_bound_waiting`]).
pub fn coflow_lower_bound_waiting(
    fabric: &FabricParams,
    links: &LinkMap,
    flows: &[FlowSpec],
    fabrics: Fabrics,
    wait: &dyn Fn(u32, u32) -> Nanos,
) -> Option<LowerBound> {
    if fabrics == Fabrics::Both {
        return Some(LowerBound {
            both: both_fabrics_lower_bound(fabric, links, flows)?,
            ..LowerBound::default()
        });
    }
    let hybrid = fabrics == Fabrics::Hybrid;
    // Per-rack-pair bytes decide which flows are elephants: only with circuits.
    let mut pairs: BTreeMap<(u32, u32), Bytes> = BTreeMap::new();
    if hybrid {
        for f in flows {
            *pairs.entry((f.src.rack, f.dst.rack)).or_default() += f.bytes;
        }
    }
    let pair_bytes = |f: &FlowSpec| pairs.get(&(f.src.rack, f.dst.rack)).copied().unwrap_or(f.bytes);
    let on_ocs = |f: &FlowSpec| hybrid && fabric.may_use_ocs(f, pair_bytes(f));
    let eps = eps_lower_bound(links, flows.iter().filter(|f| !on_ocs(f)))?;
    let mut demand: BTreeMap<(u32, u32), Bytes> = BTreeMap::new();
    for f in flows.iter().filter(|f| on_ocs(f)) {
        *demand.entry((f.src.rack, f.dst.rack)).or_default() += f.bytes;
    }
    let ocs = ocs_lower_bound_waiting(&demand, fabric.ocs_port_rate, wait, fabric.ocs_ports)?;
    Some(LowerBound {
        eps,
        ocs,
        both: Nanos::ZERO,
    })
}
