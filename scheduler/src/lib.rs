//! # ocslab-scheduler
//!
//! The drivers and the front of ocslab: the simulation driver (virtual time,
//! [`net::FluidNetwork`]), the emulation driver ([`emu`]: real time, agents,
//! the kernel fabric), experiment files, workload generators and trace
//! readers, the results folder and its plots, the benchmarks and the
//! `ocslab` command line. What decides (the engine and every policy) is in
//! `ocslab-core`, re-exported here as [`engine`], [`policy`], [`coflow`] and
//! [`model`].
//!
//! Design decision: a driver owns time and the network, and feeds the engine
//! events with `now` as an argument, so the same engine and policies run
//! under both drivers unchanged, and the two can be checked against each
//! other on the workloads that fit both.
#![deny(missing_docs)]

pub mod cli;
pub use ocslab_core::{coflow, engine, model, outcome, perturb, policy};
pub mod demo;
pub mod emu;
pub mod experiment;
pub mod metrics;
pub use ocslab_sim::net;
pub mod plot;
pub mod progress;
pub mod replay;
pub mod report;
pub mod repro;
pub mod runner;
pub mod sim;
pub mod sweep;
pub mod trace;
pub mod workload;
