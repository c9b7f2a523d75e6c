//! What a coflow policy sees: [`NetView`], a snapshot of the network at one
//! instant (fabric parameters, active flows with their progress, active
//! coflows, circuits). The simulator keeps its whole state in a `NetView`
//! and lends it to the policy; the emulation driver builds one from agent
//! reports. A test builds one by hand.
//!
//! Progress (bytes each flow still has to send, bytes each coflow has sent)
//! moves continuously, so it is read on demand through [`Progress`] rather
//! than written into every [`FlowView`] before each policy call: the fluid
//! network answers from its bundles' service counters, for the flows a
//! policy actually looks at; views that store progress in their fields
//! (the emulation driver's, hand-made ones) answer with [`StoredProgress`].

use crate::model::coflow::{CoflowId, FlowId, FlowSpec};
pub use crate::net::fabric::FabricParams;
use crate::net::fasthash::FastMap;
use crate::net::links::LinkMap;
use crate::{Bps, Bytes, Nanos};
use serde::Serialize;
use std::collections::BTreeMap;

mod tables;
pub use tables::{FlowIdSet, FlowTable};

/// Which way a flow's bytes go.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Path {
    /// Over the electrical network (host NIC, ToR uplink, core, ToR downlink, host NIC).
    #[default]
    Eps,
    /// Over the circuit from its source rack to its destination rack on OCS
    /// port (wavelength) `port`; it moves only while that circuit is up.
    Ocs {
        /// The port index on both racks.
        port: u32,
    },
    /// Not sending for now.
    Wait,
}

/// An active flow as a policy sees it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FlowView {
    /// What the flow is.
    pub spec: FlowSpec,
    /// When it joined the network.
    pub started: Nanos,
    /// Bytes still to send (fluid, so fractional), as last stored: the fluid
    /// network brings it up to date only on `sync_progress`, so policies
    /// read [`Progress::remaining_bytes`] instead.
    pub remaining_bytes: f64,
    /// Bytes sent so far over EPS.
    pub sent_eps_bytes: f64,
    /// Bytes sent so far over circuits.
    pub sent_ocs_bytes: f64,
    /// The path it currently takes.
    pub path: Path,
    /// Its pacing cap, if the policy set one.
    pub cap: Option<Bps>,
    /// Its current rate in bytes per second.
    pub rate_bytes_per_s: f64,
    /// When it finishes at its current rate (`None` while it does not move).
    pub eta: Option<Nanos>,
    /// Whether it may use a circuit ([`NetView::may_use_ocs`]), kept up to
    /// date by [`NetView::insert_flow`] as its coflow's rack pair grows.
    pub elephant: bool,
}

impl FlowView {
    /// A flow that has just joined at `now` and has not been scheduled yet.
    pub fn new(spec: FlowSpec, now: Nanos) -> FlowView {
        FlowView {
            remaining_bytes: spec.bytes.0 as f64,
            spec,
            started: now,
            sent_eps_bytes: 0.0,
            sent_ocs_bytes: 0.0,
            path: Path::Eps,
            cap: None,
            rate_bytes_per_s: 0.0,
            eta: None,
            elephant: false,
        }
    }
}

/// A coflow with at least one active flow.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CoflowView {
    /// When its first flow joined the network.
    pub arrival: Nanos,
    /// Its active flows.
    pub flows: FlowIdSet,
    /// Bytes of all flows it has had so far (active and finished).
    pub known_bytes: Bytes,
    /// Bytes it has sent so far (all its flows, both fabrics), as last
    /// stored (see [`FlowView::remaining_bytes`]); policies read
    /// [`Progress::sent_bytes`] instead.
    pub sent_bytes: f64,
    /// Bytes of all flows it has had so far (active and finished) per
    /// (source rack, destination rack): the per-rack-pair aggregate the
    /// elephant test looks at ([`FabricParams::may_use_ocs`]), read through
    /// [`CoflowView::bytes_between`]. Hashed (lookups only, one per flow
    /// that joins): a wide coflow has thousands of rack pairs.
    #[serde(skip)]
    pair_bytes: FastMap<(u32, u32), Bytes>,
    /// The flows (active or not) of each rack pair still under the elephant
    /// threshold: those that become elephants when the pair crosses it.
    #[serde(skip)]
    mice: FastMap<(u32, u32), Vec<FlowId>>,
    /// Its active elephants.
    #[serde(skip)]
    elephants: usize,
    /// The highest flow id that has joined it.
    #[serde(skip)]
    highest: Option<FlowId>,
    /// See [`CoflowView::epoch`].
    #[serde(skip)]
    epoch: u64,
}

impl CoflowView {
    /// Its bytes so far from rack `src` to rack `dst` (zero if none).
    pub fn bytes_between(&self, src: u32, dst: u32) -> Bytes {
        self.pair_bytes.get(&(src, dst)).copied().unwrap_or(Bytes(0))
    }

    /// How many of its active flows are elephants.
    pub fn elephants(&self) -> usize {
        self.elephants
    }

    /// The highest flow id that has joined it (active or not).
    pub fn highest(&self) -> Option<FlowId> {
        self.highest
    }

    /// Counts the changes a reader cannot follow from the flows that
    /// joined since it last looked (the ids above [`CoflowView::highest`]
    /// as it was then): flows that had joined earlier became elephants, or
    /// a flow joined with an id below one that joined before it. A policy
    /// that keeps what it read of a coflow reads it whole again when this
    /// changed.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Its last active flow has left and it waits, dormant, for a flow
    /// that may resume it: frees what only active flows need, the storage
    /// of its flow ids and its rack pairs' lists of mice (every flow on
    /// them has finished, so none can be promoted). What it has carried
    /// (bytes per rack pair, arrival, epoch) stays.
    fn rest(&mut self) {
        debug_assert!(self.flows.is_empty(), "a coflow rests with no active flow");
        self.flows = FlowIdSet::default();
        self.mice = FastMap::default();
    }

    /// Flow `id` left (an elephant or not); returns whether it was active.
    pub fn remove_flow(&mut self, id: &FlowId, elephant: bool) -> bool {
        let was = self.flows.remove(id);
        if was && elephant {
            self.elephants = self.elephants.saturating_sub(1);
        }
        was
    }
}

/// A circuit from `src_rack` to `dst_rack` on port (wavelength) `port`:
/// it occupies the sending side of that port on `src_rack` and the receiving
/// side on `dst_rack`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct CircuitView {
    /// Sending rack.
    pub src_rack: u32,
    /// Receiving rack.
    pub dst_rack: u32,
    /// Port index on both racks.
    pub port: u32,
    /// When it carries bytes (set-up time + δ).
    pub up_at: Nanos,
}

impl CircuitView {
    /// Whether it carries bytes at `now`.
    pub fn is_up(&self, now: Nanos) -> bool {
        self.up_at <= now
    }
}

/// The network at one instant, as a policy sees it.
#[derive(Clone, Debug)]
pub struct NetView {
    /// Fixed parameters.
    pub fabric: FabricParams,
    /// The links of the fluid model, their capacities, and which links a path crosses.
    pub links: LinkMap,
    /// Active flows, in flow-id order.
    pub flows: FlowTable,
    /// Coflows with at least one active flow.
    pub coflows: BTreeMap<CoflowId, CoflowView>,
    /// Circuits set up or coming up, keyed by their sending side (rack, port).
    pub circuits: BTreeMap<(u32, u32), CircuitView>,
}

impl NetView {
    /// An empty network on `fabric`.
    pub fn new(fabric: FabricParams) -> NetView {
        NetView {
            links: LinkMap::new(&fabric),
            fabric,
            flows: FlowTable::default(),
            coflows: BTreeMap::new(),
            circuits: BTreeMap::new(),
        }
    }

    /// Adds a flow at `now` (for hand-made views and for the network itself),
    /// and marks its coflow's flows of its rack pair as elephants once the
    /// pair's bytes reach the threshold.
    pub fn insert_flow(&mut self, spec: FlowSpec, now: Nanos) {
        let c = self.coflows.entry(spec.coflow).or_insert_with(|| CoflowView {
            arrival: now,
            ..CoflowView::default()
        });
        c.flows.insert(spec.id);
        if c.highest.is_some_and(|h| spec.id <= h) {
            c.epoch += 1;
        }
        c.highest = c.highest.max(Some(spec.id));
        c.known_bytes += spec.bytes;
        let (i, j) = (spec.src.rack, spec.dst.rack);
        let pair = c.pair_bytes.entry((i, j)).or_default();
        let before = *pair;
        *pair += spec.bytes;
        let elephant = self.fabric.may_use_ocs(&spec, *pair);
        // A flow no byte count makes an elephant (within a rack, or no OCS)
        // is not remembered as one that could become one.
        let could_be = self.fabric.may_use_ocs(&spec, Bytes(u64::MAX));
        if !elephant && could_be {
            c.mice.entry((i, j)).or_default().push(spec.id);
        } else if !self.fabric.may_use_ocs(&spec, before) {
            // The pair just crossed the threshold: its earlier flows are elephants too.
            let mut promoted = 0;
            for id in c.mice.remove(&(i, j)).unwrap_or_default() {
                if let Some(f) = self.flows.get_mut(&id).filter(|f| !f.elephant) {
                    f.elephant = true;
                    promoted += 1;
                }
            }
            if promoted > 0 {
                c.elephants += promoted;
                c.epoch += 1;
            }
        }
        if elephant {
            c.elephants += 1;
        }
        let mut view = FlowView::new(spec, now);
        view.elephant = elephant;
        self.flows.insert(view.spec.id, view);
    }

    /// Whether `flow` may use a circuit: [`FabricParams::may_use_ocs`] with
    /// its coflow's bytes so far between its racks (its own bytes if the
    /// coflow is not in the view).
    pub fn may_use_ocs(&self, flow: &FlowSpec) -> bool {
        let pair = self
            .coflows
            .get(&flow.coflow)
            .map_or(flow.bytes, |c| c.bytes_between(flow.src.rack, flow.dst.rack));
        self.fabric.may_use_ocs(flow, pair)
    }

    /// The circuit from `src_rack` to `dst_rack` on `port`, if one is set up or coming up.
    pub fn circuit(&self, src_rack: u32, dst_rack: u32, port: u32) -> Option<&CircuitView> {
        self.circuits
            .get(&(src_rack, port))
            .filter(|c| c.dst_rack == dst_rack)
    }

    /// The circuit whose receiving side is `(dst_rack, port)`, if any.
    pub fn circuit_into(&self, dst_rack: u32, port: u32) -> Option<&CircuitView> {
        self.circuits
            .values()
            .find(|c| c.dst_rack == dst_rack && c.port == port)
    }

    /// The flows of `coflow`, in flow-id order.
    pub fn flows_of(&self, coflow: CoflowId) -> impl Iterator<Item = &FlowView> + '_ {
        self.coflows
            .get(&coflow)
            .into_iter()
            .flat_map(|c| c.flows.iter())
            .filter_map(|id| self.flows.get(id))
    }

    /// Takes flow `id` (an elephant or not) out of `coflow`'s active
    /// flows. If it was the last, the coflow leaves the view too and is
    /// returned at rest, for the caller to keep until a flow resumes it.
    pub fn leave_coflow(&mut self, coflow: CoflowId, id: &FlowId, elephant: bool) -> Option<CoflowView> {
        let c = self.coflows.get_mut(&coflow)?;
        c.remove_flow(id, elephant);
        if !c.flows.is_empty() {
            return None;
        }
        let mut c = self.coflows.remove(&coflow)?;
        c.rest();
        Some(c)
    }
}

/// Per-flow and per-coflow progress at the instant of a policy call, read on
/// demand: a policy asks only about the flows and coflows it looks at.
pub trait Progress {
    /// Bytes `flow` still has to send (fluid, so fractional).
    fn remaining_bytes(&self, flow: &FlowView) -> f64;
    /// [`Progress::remaining_bytes`] of each of `flows`, in order, appended
    /// to `out`. A driver whose progress is scattered over memory may read
    /// many flows faster together than one by one.
    fn remaining_bytes_of(&self, flows: &[&FlowView], out: &mut Vec<f64>) {
        out.extend(flows.iter().map(|f| self.remaining_bytes(f)));
    }
    /// [`Progress::remaining_bytes`] of the flows `ids` of `view`, in
    /// order, appended to `out`: `None` for an id no longer in the view.
    /// For a policy that keeps a coflow's flow ids (and paths) from call to
    /// call, so that the flows' views need not be read again.
    fn remaining_bytes_by_id(&self, view: &NetView, ids: &[FlowId], out: &mut Vec<Option<f64>>) {
        out.extend(
            ids.iter()
                .map(|id| view.flows.get(id).map(|f| self.remaining_bytes(f))),
        );
    }
    /// Bytes coflow `id` (whose view is `coflow`) has sent so far: its
    /// finished flows and what its active ones sent, over both fabrics.
    fn sent_bytes(&self, id: CoflowId, coflow: &CoflowView) -> f64;
}

/// Progress as stored in the view's own fields ([`FlowView::remaining_bytes`],
/// [`CoflowView::sent_bytes`]): for views kept up to date from agent reports,
/// and views built by hand.
#[derive(Clone, Copy, Debug, Default)]
pub struct StoredProgress;

impl Progress for StoredProgress {
    fn remaining_bytes(&self, flow: &FlowView) -> f64 {
        flow.remaining_bytes
    }
    fn sent_bytes(&self, _id: CoflowId, coflow: &CoflowView) -> f64 {
        coflow.sent_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Bps, HostId};

    /// Two racks of one host, one OCS port each; a rack pair's flows are
    /// elephants from 1,000 bytes.
    fn view() -> NetView {
        NetView::new(FabricParams {
            racks: 2,
            hosts_per_rack: 1,
            host_rate: Bps(8_000),
            uplink_rate: Bps(8_000),
            ocs_ports: 1,
            ocs_port_rate: Bps(80_000),
            reconfig_delay: Nanos::ZERO,
            elephant_threshold: Bytes(1_000),
            scale: 1.0,
        })
    }

    fn flow(id: u64, bytes: u64) -> FlowSpec {
        FlowSpec::new(
            FlowId(id),
            CoflowId(7),
            HostId::new(0, 0),
            HostId::new(1, 0),
            Bytes(bytes),
        )
    }

    #[test]
    fn a_coflow_whose_last_flow_leaves_rests_with_what_it_carried() {
        let mut v = view();
        v.insert_flow(flow(1, 400), Nanos(5));
        v.insert_flow(flow(2, 400), Nanos(6));
        assert_eq!(v.coflows[&CoflowId(7)].mice[&(0, 1)], vec![FlowId(1), FlowId(2)]);
        assert!(
            v.leave_coflow(CoflowId(7), &FlowId(1), false).is_none(),
            "flow 2 is active"
        );
        v.flows.remove(&FlowId(1));
        assert!(v.coflows.contains_key(&CoflowId(7)));
        let c = v
            .leave_coflow(CoflowId(7), &FlowId(2), false)
            .expect("its last flow left");
        assert!(!v.coflows.contains_key(&CoflowId(7)));
        assert!(
            c.flows.is_empty() && c.mice.is_empty(),
            "the storage of active flows is freed"
        );
        assert_eq!(c.bytes_between(0, 1), Bytes(800));
        assert_eq!(
            (c.known_bytes, c.arrival, c.highest()),
            (Bytes(800), Nanos(5), Some(FlowId(2)))
        );
        assert!(
            v.leave_coflow(CoflowId(7), &FlowId(2), false).is_none(),
            "gone from the view"
        );
    }
}
