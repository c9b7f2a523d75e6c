//! Workload generators.

pub mod coscheduler_sec5;
