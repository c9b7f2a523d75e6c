//! # ocslab-agent
//!
//! The per-host agent of ocslab and the typed, versioned wire protocol
//! between it and the scheduler.
//!
//! Top to bottom:
//! - [`protocol`]: the messages (hello, commands, heartbeats, task and flow
//!   reports, data-stream headers) and [`frame`], their length-delimited
//!   JSON framing;
//! - [`control`]: the control plane over QUIC. The scheduler side
//!   ([`control::ControlServer`]) creates the run's credentials, accepts
//!   agents, hands out per-host handles to send [`protocol::Command`]s and
//!   yields a stream of typed [`control::Event`]s; it marks a host dead when
//!   its heartbeats stop. The agent side ([`control::client`]) connects with
//!   the run's credentials from a pre-made UDP socket;
//! - [`data`]: the data plane: flows over TCP (default) or QUIC, marked for
//!   EPS or OCS, paced by a token bucket, held until released, verified by
//!   the receiver;
//! - [`task`]: map and reduce tasks; [`content`]: the deterministic
//!   partition content both ends agree on;
//! - [`agent`]: the agent runtime that joins them, run by the
//!   `ocslab-agent` binary; [`launch`]: how a driver starts that binary with
//!   an inherited control socket inside a host's network namespace.
//!
//! Design decision: a flow is always driven by its *sender*. The scheduler
//! starts, holds, releases and re-rates a flow at the host that has the
//! bytes, on that host's ordered control stream, so a release can never
//! overtake the flow's creation; the receiver only verifies and reports.
//! A reduce task names the partitions it needs and where each comes from,
//! and completes when they have all arrived and verified.
#![deny(missing_docs)]

pub mod agent;
pub mod cli;
pub mod clock;
pub mod content;
pub mod control;
pub mod data;
pub mod frame;
pub mod launch;
pub mod protocol;
pub mod task;
