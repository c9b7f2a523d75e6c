//! Replaying a fixed list of coflows (a trace) through a [`FluidNetwork`]
//! with no cluster engine: each coflow's flows all join at its arrival; the
//! result is one [`CoflowRecord`] per coflow (CCT, lower bound, bytes per
//! fabric) plus the network's totals and circuit timeline.

use super::fasthash::FastMap;
use super::{FluidNetwork, NetError, NetEvent};
use ocslab_core::coflow::lower_bound::Fabrics;
use ocslab_core::coflow::{self, CoflowPolicy, FabricParams, UnknownPolicy};
use ocslab_core::model::coflow::{Coflow, CoflowId};
use ocslab_core::{Bytes, Nanos, Topology};

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

use ocslab_core::outcome::CircuitsByPair;
pub use ocslab_core::outcome::{CoflowRecord, ReplayOutcome};

struct Open {
    index: usize,
    flows_left: usize,
    eps: Bytes,
    ocs: Bytes,
}

/// Replays `coflows` on `topo` under the coflow scheduler named `policy`.
/// `progress(done, total)` is called as coflows finish.
pub fn replay(
    topo: &Topology,
    policy: &str,
    coflows: &[Coflow],
    progress: impl FnMut(usize, usize),
) -> Result<ReplayOutcome, ReplayError> {
    replay_with(topo, coflow::by_name(policy)?, coflows, progress)
}

/// [`replay`] under `policy` itself (e.g. one wrapped to be timed).
pub fn replay_with(
    topo: &Topology,
    policy: Box<dyn CoflowPolicy>,
    coflows: &[Coflow],
    mut progress: impl FnMut(usize, usize),
) -> Result<ReplayOutcome, ReplayError> {
    let mut net = FluidNetwork::with_policy(topo, policy);
    let fabric = FabricParams::from(topo);
    let fabrics = Fabrics::of(net.policy_uses_ocs(), topo.ocs_schedule.is_some());
    let mut order: Vec<&Coflow> = coflows.iter().collect();
    order.sort_by_key(|c| (c.arrival, c.id));
    // How each coflow finished (at, EPS bytes, OCS bytes), by arrival order;
    // the records are made at the end, when every circuit is known.
    let mut finishes: Vec<Option<(Nanos, Bytes, Bytes)>> = vec![None; order.len()];
    let total = order.len();
    let mut open: FastMap<CoflowId, Open> = FastMap::default();
    let mut done = 0usize;
    let mut handle = |events: &mut Vec<NetEvent>,
                      open: &mut FastMap<CoflowId, Open>,
                      finishes: &mut [Option<(Nanos, Bytes, Bytes)>]| {
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
                finishes[o.index] = Some((at, o.eps, o.ocs));
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
        handle(&mut events, &mut open, &mut finishes);
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
        handle(&mut events, &mut open, &mut finishes);
    }
    if !open.is_empty() {
        return Err(ReplayError::Stalled {
            at: net.now(),
            left: open.len(),
            policy: net.policy_name().to_string(),
        });
    }
    let circuits = net.circuit_log().to_vec();
    let by_pair = CircuitsByPair::new(&circuits);
    let records: Vec<CoflowRecord> = order
        .iter()
        .zip(finishes)
        .map(|(c, finish)| {
            let mut r = CoflowRecord::arrived(c, &fabric, &net.view().links, fabrics, &by_pair);
            if let Some((at, eps, ocs)) = finish {
                r.finish(at, eps, ocs);
            }
            r
        })
        .collect();
    let makespan = records.iter().map(|r| r.finished).max().unwrap_or_default();
    Ok(ReplayOutcome {
        policy: net.policy_name().to_string(),
        fabrics,
        records,
        stats: net.stats().clone(),
        circuits,
        links: net.usage().series(makespan),
        makespan,
        solver: net.solve_stats(),
    })
}
