//! # ocslab-emulator
//!
//! The kernel fabric of ocslab: it builds a [`Topology`] (from
//! `ocslab-core`, re-exported here with its units and address plan) out of
//! network namespaces, veth pairs, htb qdiscs and a software optical circuit
//! switch (tc `mirred` redirects between ports of one crossbar namespace).
//!
//! Main type: [`fabric::Fabric`]. Design decision: the fabric is computed as a
//! pure plan ([`fabric::plan`]), applied over netlink, and recorded in a
//! ledger, so teardown removes exactly what was made, also after a crash.
#![deny(missing_docs)]

pub mod fabric;
pub use ocslab_core::{addr, topology, units};

pub use topology::{FileError, HostId, Topology, TopologyError};
pub use units::{Bps, Bytes, Nanos};
