//! # ocslab-scheduler
//!
//! Jobs, policies, the cluster engine, the drivers (simulation and
//! emulation), the fluid network simulator and the `ocslab` command line.
#![deny(missing_docs)]

pub mod cli;
pub mod coflow;
pub mod demo;
pub mod emu;
pub mod engine;
pub mod experiment;
pub mod metrics;
pub mod model;
pub mod net;
pub mod perturb;
pub mod plot;
pub mod policy;
pub mod progress;
pub mod report;
pub mod repro;
pub mod sim;
pub mod trace;
pub mod workload;
