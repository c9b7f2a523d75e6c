//! Tests of the engine and of the task policies that need a driver to run
//! them: whole jobs through [`crate::sim::Simulation`] over a fixed-rate
//! network. They live beside the simulator because the core crate, where the
//! engine and the policies are, cannot depend on a driver; the policies'
//! decisions on hand-made views are tested inside the core.

mod engine;
mod esplash;
mod fetch_limit;
mod fresh;
mod hold;
mod merged_fetches;
mod netaware;
mod omo;
mod perturb;
mod steps;
pub(crate) mod support;
