//! Running an [`Experiment`] in the simulator: one run per task scheduler,
//! each on the same jobs (same seed), each with a fresh engine, policy and
//! network.

use super::{FixedRateNetwork, SimError, SimOutcome, SimProgress, Simulation};
use crate::engine::{Engine, EngineError};
use crate::experiment::{Experiment, ExperimentError, NetworkKind};
use crate::model::job::Job;
use crate::net::FluidNetwork;
use crate::policy::PolicyError;
use ocslab_core::topology::Topology;

/// Why an experiment run failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RunError {
    /// The experiment (or a file it names) is invalid.
    #[error(transparent)]
    Experiment(#[from] ExperimentError),
    /// A policy could not be built.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// The engine refused the workload or settings.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The simulation could not finish.
    #[error(transparent)]
    Sim(#[from] SimError),
}

/// Simulates `jobs` under task scheduler `scheduler` with the experiment's
/// topology, network model, coflow scheduler and engine settings, and its
/// perturbations ([`crate::perturb::Timeline`]: whole-run host speeds set
/// into the engine, timed speed changes and agent deaths fed as events,
/// link windows carried out by the network model).
/// `progress(done, total)` is called as jobs finish.
pub fn run_scheduler(
    exp: &Experiment,
    scheduler: &str,
    jobs: Vec<Job>,
    mut progress: impl FnMut(usize, usize),
) -> Result<SimOutcome, RunError> {
    run_scheduler_with(exp, scheduler, jobs, |p| progress(p.jobs_done, p.jobs_total))
}

/// Like [`run_scheduler`], with progress reports that include virtual
/// time and bytes delivered ([`SimProgress`]).
pub fn run_scheduler_with(
    exp: &Experiment,
    scheduler: &str,
    jobs: Vec<Job>,
    progress: impl FnMut(&SimProgress),
) -> Result<SimOutcome, RunError> {
    run_scheduler_on(exp, &exp.topology, scheduler, jobs, progress)
}

/// Like [`run_scheduler_with`], with the network's links at the rates of
/// `wire` (same racks and hosts as the experiment's topology), while the
/// engine and the task scheduler see the experiment's: as on the kernel
/// fabric, where policies read the topology's rates and the wire carries
/// what TCP's payload gets of them.
pub fn run_scheduler_on(
    exp: &Experiment,
    wire: &Topology,
    scheduler: &str,
    jobs: Vec<Job>,
    progress: impl FnMut(&SimProgress),
) -> Result<SimOutcome, RunError> {
    let policy = exp.policy(scheduler)?;
    let timeline = crate::perturb::Timeline::of(&exp.perturbations);
    let mut config = exp.engine.clone();
    timeline.apply_base(&mut config);
    let engine = Engine::new(&exp.topology, jobs, policy, config)?;
    let out = match exp.network {
        NetworkKind::Fluid => {
            let net = FluidNetwork::new(wire, &exp.coflow_scheduler)
                .map_err(|e| SimError::Network(format!("{e:#}")))?
                .with_completion_quantum(exp.sim.quantum);
            Simulation::new(engine, net, exp.sim.clone())
                .with_perturbations(&timeline.actions)?
                .run_with(progress)?
        }
        NetworkKind::Uncontended => {
            let net = FixedRateNetwork::for_topology(wire);
            Simulation::new(engine, net, exp.sim.clone())
                .with_perturbations(&timeline.actions)?
                .run_with(progress)?
        }
    };
    Ok(out)
}

/// Runs every task scheduler of the experiment, baseline first.
pub fn run_experiment(
    exp: &Experiment,
    mut progress: impl FnMut(&str, usize, usize),
) -> Result<Vec<SimOutcome>, RunError> {
    let jobs = exp.jobs()?;
    exp.task_schedulers
        .iter()
        .map(|name| run_scheduler(exp, name, jobs.clone(), |d, t| progress(name, d, t)))
        .collect()
}
