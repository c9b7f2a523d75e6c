//! # ocslab-agent
//!
//! The per-host agent of ocslab and the typed, versioned wire protocol
//! between it and the scheduler.
#![deny(missing_docs)]
