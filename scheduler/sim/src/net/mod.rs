//! The fluid network model used by the simulation driver: EPS links with
//! max-min fair sharing, OCS ports with circuits that take δ to set up, and a
//! coflow policy (see [`ocslab_core::coflow`]) deciding paths, rates and circuits.
//!
//! The contract with the simulation driver (fixed; extend, don't change):
//! the driver adds flows as the engine starts them, asks for the next
//! network event time, and advances the network to a time, receiving what
//! happened in between. Time is always an argument; nothing reads a clock.
//!
//! Modules: [`links`] (the links of the fluid model and the paths over
//! them), [`maxmin`] (water-filling), [`levels`] (max-min rates as one level per
//! link), [`class_levels`] (strict priority between coflows, a solver per
//! coflow), `split` (every link split equally among its flows, CoflowSim's
//! per-flow fairness), `rates` (which of the three a network uses), [`pair_matrix`]
//! (host × host demands on a big switch),
//! `freeze_log` (the last solve's freeze order, for the next to resume), the
//! per-link service clocks, `fasthash` (hash maps for lookups by small
//! integer keys), the network itself ([`FluidNetwork`]) with its per-flow
//! records (`slots`: where each flow is; `pairs`: the flows of each coflow's
//! rack pair),
//! [`replay`] (a whole coflow trace through a network, with the per-coflow
//! records of `ocslab_core::outcome`) and [`usage`] (link
//! utilization over time, for plots). The model is written
//! up in `docs/simulator.md`.

#[cfg(test)]
mod cap_tests;
pub mod class_levels;
mod clocks;
mod finish_queue;
mod freeze_log;
#[cfg(test)]
mod handover_tests;
pub mod levels;
#[cfg(test)]
mod link_down_tests;
#[cfg(test)]
mod rotor_tests;
pub use ocslab_core::net::{fasthash, links, maxmin};
mod network;
pub mod pair_matrix;
mod pairs;
mod prefetch;
mod rates;
#[cfg(test)]
mod reference_tests;
pub mod replay;
mod slots;
mod split;
#[cfg(test)]
mod trigger_tests;
pub mod usage;
#[cfg(test)]
mod weight_tests;

pub use network::FluidNetwork;

use ocslab_core::model::coflow::{CoflowId, FlowId};
use ocslab_core::{Bytes, HostId, Nanos};
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

pub use ocslab_core::outcome::{CircuitRecord, NetStats, NetTimeline};

/// Flows the network refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NetError {
    /// A flow names a host the topology does not have.
    #[error("flow {flow:?} names host {host}, which is not in the topology")]
    UnknownHost {
        /// The flow.
        flow: FlowId,
        /// The host.
        host: HostId,
    },
    /// A flow reuses the id of an active flow.
    #[error("flow {0:?} is already in the network")]
    DuplicateFlow(FlowId),
}
