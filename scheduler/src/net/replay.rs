//! Replaying a fixed list of coflows (a trace) through a [`FluidNetwork`]
//! with no cluster engine: each coflow's flows all join at its arrival; the
//! result is one [`CoflowRecord`] per coflow (CCT, lower bound, bytes per
//! fabric) plus the network's totals and circuit timeline.

use super::fasthash::FastMap;
use super::levels::SolveStats;
use super::summary::Bin;
use super::usage::LinkSeries;
use super::{CircuitRecord, FluidNetwork, NetError, NetEvent, NetStats};
use crate::coflow::lower_bound::{coflow_lower_bound, LowerBound};
use crate::coflow::{self, FabricParams, UnknownPolicy};
use crate::model::coflow::{Coflow, CoflowId};
use ocslab_emulator::{Bytes, Nanos, Topology};
use serde::Serialize;

/// Why a replay could not finish.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReplayError {
    /// The coflow scheduler name is not known.
    #[error(transparent)]
    Policy(#[from] UnknownPolicy),
    /// The network refused a flow.
    #[error(transparent)]
    Net(#[from] NetError),
    /// The network went idle with flows left (a policy that never lets them move).
    #[error("the network went idle at {at} with {left} coflows unfinished (the {policy} scheduler never lets them move)")]
    Stalled {
        /// When.
        at: Nanos,
        /// Coflows left.
        left: usize,
        /// The policy.
        policy: String,
    },
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
    /// Its lower bound, alone in the fabric (`None` if the fabric cannot carry it).
    pub lower_bound: Option<LowerBound>,
    /// Bytes it sent over EPS.
    pub eps_bytes: Bytes,
    /// Bytes it sent over circuits.
    pub ocs_bytes: Bytes,
}

impl CoflowRecord {
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
    /// Whether it put elephants on circuits (which lower bound applies).
    pub uses_ocs: bool,
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

struct Open {
    index: usize,
    flows_left: usize,
    eps: Bytes,
    ocs: Bytes,
}

/// Replays `coflows` on `topo` under the coflow scheduler `policy`.
/// `progress(done, total)` is called as coflows finish.
pub fn replay(
    topo: &Topology,
    policy: &str,
    coflows: &[Coflow],
    mut progress: impl FnMut(usize, usize),
) -> Result<ReplayOutcome, ReplayError> {
    let mut net = FluidNetwork::with_policy(topo, coflow::by_name(policy)?);
    let fabric = FabricParams::from(topo);
    let uses_ocs = net.policy_uses_ocs();
    let mut order: Vec<&Coflow> = coflows.iter().collect();
    order.sort_by_key(|c| (c.arrival, c.id));
    let mut records: Vec<CoflowRecord> = order
        .iter()
        .map(|c| {
            let longest = c.flows.iter().map(|f| f.bytes).max().unwrap_or_default();
            CoflowRecord {
                id: c.id,
                arrival: c.arrival,
                bytes: c.bytes(),
                width: c.flows.len(),
                longest_flow: longest,
                bin: Bin::of(longest, c.flows.len(), topo.scale),
                finished: c.arrival,
                cct: Nanos::ZERO,
                lower_bound: coflow_lower_bound(&fabric, &net.view().links, &c.flows, uses_ocs),
                eps_bytes: Bytes(0),
                ocs_bytes: Bytes(0),
            }
        })
        .collect();
    let total = records.len();
    let mut open: FastMap<CoflowId, Open> = FastMap::default();
    let mut done = 0usize;
    let mut handle =
        |events: &mut Vec<NetEvent>, open: &mut FastMap<CoflowId, Open>, records: &mut [CoflowRecord]| {
            for e in events.drain(..) {
                let NetEvent::FlowDone {
                    coflow,
                    at,
                    eps_bytes,
                    ocs_bytes,
                    ..
                } = e
                else {
                    continue;
                };
                let Some(o) = open.get_mut(&coflow) else {
                    continue;
                };
                o.flows_left -= 1;
                o.eps += eps_bytes;
                o.ocs += ocs_bytes;
                if o.flows_left == 0 {
                    let r = &mut records[o.index];
                    r.finished = at;
                    r.cct = at - r.arrival;
                    r.eps_bytes = o.eps;
                    r.ocs_bytes = o.ocs;
                    open.remove(&coflow);
                    done += 1;
                    progress(done, total);
                }
            }
        };
    // One buffer for the events of every advance.
    let mut events = Vec::new();
    for (index, c) in order.iter().enumerate() {
        net.advance_into(c.arrival, &mut events);
        handle(&mut events, &mut open, &mut records);
        if c.flows.is_empty() {
            continue;
        }
        open.insert(
            c.id,
            Open {
                index,
                flows_left: c.flows.len(),
                eps: Bytes(0),
                ocs: Bytes(0),
            },
        );
        net.try_add_flows(c.arrival, &c.flows)?;
    }
    while let Some(t) = net.next_event_at() {
        net.advance_into(t, &mut events);
        handle(&mut events, &mut open, &mut records);
    }
    if !open.is_empty() {
        return Err(ReplayError::Stalled {
            at: net.now(),
            left: open.len(),
            policy: policy.to_string(),
        });
    }
    let makespan = records.iter().map(|r| r.finished).max().unwrap_or_default();
    Ok(ReplayOutcome {
        policy: net.policy_name().to_string(),
        uses_ocs,
        records,
        stats: net.stats().clone(),
        circuits: net.circuit_log().to_vec(),
        links: net.usage().series(makespan),
        makespan,
        solver: net.solve_stats(),
    })
}
