//! `sim::bench_jobs`: wall time to simulate a generated workload, for
//! `ocslab bench sim` (issue 3's target: 1000 jobs on
//! `topologies/coscheduler-paper.toml` in under 10 s). The only place in
//! the simulator that reads a clock, and only to time the whole run.

use super::{run_scheduler, RunError};
use crate::engine::EngineConfig;
use crate::experiment::{Experiment, NetworkKind, Workload};
use crate::sim::SimConfig;
use crate::workload::generated::{default_classes, Arrivals, GeneratedWorkload};
use ocslab_emulator::{Bytes, Nanos, Topology};
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Instant;

/// What one benchmark run measured.
#[derive(Clone, Debug, Serialize)]
pub struct JobsBench {
    /// Topology name.
    pub topology: String,
    /// Hosts.
    pub hosts: usize,
    /// Jobs simulated.
    pub jobs: usize,
    /// Tasks (maps + reduces).
    pub tasks: usize,
    /// Flows the engine started.
    pub flows: u64,
    /// Events fed to the engine.
    pub events: u64,
    /// Task scheduler.
    pub task_scheduler: String,
    /// Coflow scheduler.
    pub coflow_scheduler: String,
    /// Network model.
    pub network: NetworkKind,
    /// Simulated makespan, seconds.
    pub simulated_s: f64,
    /// Wall time of the simulation (workload generation excluded), seconds.
    pub wall_s: f64,
}

/// Simulates `jobs` jobs of the default shuffle-heavy/light mix, 20 users,
/// arrivals uniform over 90 minutes (Co-scheduler Sec. V), on `topology`,
/// under `task_scheduler` and `coflow_scheduler`, and times it.
pub fn bench_jobs(
    topology: &Topology,
    jobs: u32,
    seed: u64,
    network: NetworkKind,
    task_scheduler: &str,
    coflow_scheduler: &str,
) -> Result<JobsBench, RunError> {
    let workload = GeneratedWorkload {
        jobs,
        users: 20,
        arrivals: Arrivals::Uniform {
            window: Nanos::from_millis(90 * 60 * 1000),
        },
        block_size: Bytes(128_000_000),
        replicas: 3,
        recurring_share: 0.0,
        classes: default_classes(),
    };
    let exp = Experiment {
        name: "bench".into(),
        file: "bench.toml".into(),
        text: String::new(),
        topology_file: "topology.toml".into(),
        topology_text: String::new(),
        topology: topology.clone(),
        seed,
        task_schedulers: vec![task_scheduler.to_string()],
        scheduler_params: BTreeMap::new(),
        coflow_scheduler: coflow_scheduler.to_string(),
        network,
        engine: EngineConfig {
            record_flows: false,
            ..EngineConfig::default()
        },
        sim: SimConfig::default(),
        workload: Workload::Generated(workload),
        perturbations: Vec::new(),
    };
    let list = exp.jobs()?;
    let tasks = list.iter().map(|j| j.maps.len() + j.reduces.len()).sum();
    let n = list.len();
    let start = Instant::now();
    let out = run_scheduler(&exp, task_scheduler, list, |_, _| {})?;
    let wall = start.elapsed();
    Ok(JobsBench {
        topology: topology.name.clone(),
        hosts: topology.hosts(),
        jobs: n,
        tasks,
        flows: out.flows,
        events: out.events,
        task_scheduler: task_scheduler.to_string(),
        coflow_scheduler: coflow_scheduler.to_string(),
        network,
        simulated_s: out.end.as_secs_f64(),
        wall_s: wall.as_secs_f64(),
    })
}
