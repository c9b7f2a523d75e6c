//! Workload generators, deterministic for a seed. Each generator is its own
//! module; trace-driven workloads live in [`crate::trace`].

pub mod coscheduler_sec5;
pub mod dag;
pub mod generated;
pub mod shufflewatcher_mix;
pub mod spec;
