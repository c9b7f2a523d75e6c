//! Trace readers: each format is its own module, turning a file into model
//! types ([`crate::model`]) with errors that name the file, line and field.

pub mod coflow_benchmark;
pub mod swim;
