//! Workload generators, deterministic for a seed.
//!
//! (Minimal module on branch `p6` until the engine's workloads land.)

pub mod dag;
pub mod shufflewatcher_mix;
