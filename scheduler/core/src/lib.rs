//! # ocslab-core
//!
//! The pure core of ocslab, below every driver: units ([`Bps`], [`Bytes`],
//! [`Nanos`]), the topology model with its validation ([`Topology`]) and the
//! address plan ([`addr::AddressPlan`]). No I/O crate is in its dependency
//! tree; the only outside world it reads is a topology file and the box's own
//! addresses, which a topology's range must not overlap.
//!
//! Design decision: every rate and size in a [`Topology`] is already divided
//! by the topology's `scale`, so the fabric, the simulator and the agents can
//! never disagree about what was scaled.
#![deny(missing_docs)]

pub mod addr;
pub mod coflow;
pub mod engine;
pub mod model;
pub mod net;
pub mod optical;
pub mod outcome;
pub mod perturb;
pub mod policy;
pub mod topology;
pub mod units;

pub use topology::builder::TopologyBuilder;

pub use topology::{FileError, HostId, Topology, TopologyError};
pub use units::{Bps, Bytes, Nanos};
