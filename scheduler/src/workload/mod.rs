//! Workload generators, deterministic for a seed. Each generator is its own
//! module; trace-driven workloads live in [`crate::trace`].

pub mod generated;
