//! The fluid network model used by the simulation driver: EPS links with
//! max-min fair sharing, OCS ports with circuits that take δ to set up, and a
//! coflow policy (see [`crate::coflow`]) deciding paths, rates and circuits.
//!
//! The contract with the simulation driver (fixed; extend, don't change):
//! the driver adds flows as the engine starts them, asks for the next
//! network event time, and advances the network to a time, receiving what
//! happened in between. Time is always an argument; nothing reads a clock.

use crate::model::coflow::{CoflowId, FlowId, FlowSpec};
use ocslab_emulator::{Bytes, Nanos, Topology};
use serde::Serialize;

/// Which fabric a flow's bytes went over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Fabric {
    /// The electrical packet-switched network.
    Eps,
    /// An optical circuit.
    Ocs,
}

/// Something that happened in the network.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum NetEvent {
    /// A flow delivered its last byte.
    FlowDone {
        /// The flow.
        flow: FlowId,
        /// Its coflow.
        coflow: CoflowId,
        /// When it joined the network.
        started: Nanos,
        /// When its last byte arrived.
        at: Nanos,
        /// Bytes it sent over EPS.
        eps_bytes: Bytes,
        /// Bytes it sent over circuits.
        ocs_bytes: Bytes,
    },
    /// A circuit src_rack → dst_rack on OCS port (wavelength) `port` came up
    /// (after δ) or went down.
    Circuit {
        /// When.
        at: Nanos,
        /// Sending rack.
        src_rack: u32,
        /// Receiving rack.
        dst_rack: u32,
        /// Port index (wavelength) on both racks.
        port: u32,
        /// Up or down.
        up: bool,
    },
}

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
}

/// The fluid network: flows, links, circuits and the coflow policy.
pub struct FluidNetwork {
    _private: (),
}

impl FluidNetwork {
    /// A network for `topo` whose coflows are scheduled by the policy named
    /// `coflow_policy` (see [`crate::coflow::by_name`]).
    pub fn new(_topo: &Topology, _coflow_policy: &str) -> anyhow::Result<FluidNetwork> {
        todo!("fluid network")
    }
    /// Flows join the network at `now` (`now` is never before the last advance).
    pub fn add_flows(&mut self, _now: Nanos, _flows: &[FlowSpec]) {
        todo!("fluid network")
    }
    /// When the next event (a flow finishing, a circuit coming up, a policy
    /// wake-up) will happen if no flow is added; `None` when idle.
    pub fn next_event_at(&self) -> Option<Nanos> {
        todo!("fluid network")
    }
    /// Moves the network to `now`, returning what happened on the way, in time order.
    pub fn advance_to(&mut self, _now: Nanos) -> Vec<NetEvent> {
        todo!("fluid network")
    }
    /// Totals so far.
    pub fn stats(&self) -> &NetStats {
        todo!("fluid network")
    }
}
