//! # ocslab-emulator
//!
//! The bottom of ocslab: the topology model (racks, hosts, EPS and OCS
//! rates, the address plan) and the kernel fabric that builds it out of
//! network namespaces, veth pairs, htb qdiscs and a software optical circuit
//! switch (tc `mirred` redirects between ports of one crossbar namespace).
//!
//! Main types: [`topology::Topology`] (a validated topology file) and
//! [`addr::AddressPlan`] (who gets which address).
//!
//! Design decision: every rate and size in a [`topology::Topology`] is
//! already divided by the topology's `scale`, so the fabric, the simulator
//! and the agents can never disagree about what was scaled.
#![deny(missing_docs)]

pub mod addr;
pub mod fabric;
pub mod topology;
pub mod units;

pub use topology::{FileError, HostId, Topology, TopologyError};
pub use units::{Bps, Bytes, Nanos};
