//! Hand-made clusters and jobs for the slot-level policies' tests (FRESH,
//! OMO, ESPLASH), and a simulation with the fixed-rate test network.

use crate::engine::{Engine, EngineConfig};
use crate::model::job::{Job, JobId, MapTask, ReduceTask, Shuffle, UserId};
use crate::policy::TaskPolicy;
use crate::sim::{FixedRateNetwork, SimConfig, SimOutcome, Simulation};
use ocslab_core::{Bps, Bytes, HostId, Nanos, Topology};

/// Nanoseconds in a second.
pub const S: u64 = 1_000_000_000;

/// `racks` × `hosts` hosts of `slots` slots, 1 Gbit/s NICs, no OCS.
pub fn topo(racks: u32, hosts: u32, slots: u32) -> Topology {
    Topology::builder("t", racks, hosts)
        .slots_per_host(slots)
        .simulation_only()
        .build()
        .expect("valid topology")
}

/// A job of `maps` maps of `map_ms` and `reduces` reduces of `reduce_ms`,
/// blocks on `home` (100 MB each), shuffle/input ratio `ratio`.
pub fn job(id: u64, maps: u32, map_ms: u64, reduces: u32, reduce_ms: u64, home: HostId, ratio: f64) -> Job {
    Job {
        id: JobId(id),
        name: format!("j{id}"),
        user: UserId(id as u32),
        arrival: Nanos(0),
        recurring: false,
        parents: vec![],
        maps: (0..maps)
            .map(|_| MapTask {
                input: Bytes(100_000_000),
                replicas: vec![home],
                duration: Nanos(map_ms * 1_000_000),
                written_by: None,
            })
            .collect(),
        reduces: (0..reduces)
            .map(|_| ReduceTask {
                duration: Nanos(reduce_ms * 1_000_000),
            })
            .collect(),
        shuffle: Shuffle::Ratio(ratio),
    }
}

/// Runs `jobs` under `policy` on `t` with the fixed-rate network (1 Gbit/s
/// per flow), feeding `events` at their times.
pub fn simulate(
    t: &Topology,
    jobs: Vec<Job>,
    policy: Box<dyn TaskPolicy>,
    config: EngineConfig,
    actions: &[(Nanos, crate::perturb::Action)],
) -> SimOutcome {
    let engine = Engine::new(t, jobs, policy, config).expect("engine");
    Simulation::new(
        engine,
        FixedRateNetwork::new(Bps(1_000_000_000)),
        SimConfig::default(),
    )
    .with_perturbations(actions)
    .expect("engine perturbations only")
    .run(|_, _| {})
    .expect("simulation finishes")
}
