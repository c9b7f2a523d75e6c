//! The model layer: plain data (serde), validated on load. Jobs and their
//! tasks live in [`job`]; coflows and flows in [`coflow`].

pub mod coflow;
pub mod hdfs;
pub mod job;
