//! The simulation driver ([`ocslab_sim`]) run on experiment files: one run
//! per scheduler ([`run_experiment`]), and the benchmark of simulator speed
//! on generated job workloads ([`mod@bench`]).

pub use ocslab_sim::*;

pub mod bench;
#[cfg(test)]
pub(crate) mod engine_tests;
mod run;

pub use run::{run_experiment, run_scheduler, run_scheduler_on, run_scheduler_with, RunError};
