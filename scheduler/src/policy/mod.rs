//! Task placement policies.

pub mod corral;
pub mod coscheduler;
