//! Times a ShuffleWatcher-mix run over the fluid network (the speed report of
//! the simfix brief): `cargo run --release -p ocslab-scheduler --example sim_mix --
//! [JOBS] [SIZE_SCALE] [TASK_SCHED] [COFLOW_SCHED] [TOPOLOGY]` (default 20 jobs, scale 0.05,
//! fair, fair, a 10x10 topology of 1 Gbit/s hosts, 4:1 EPS).

use ocslab_emulator::{Bytes, Topology};
use ocslab_scheduler::engine::{Engine, EngineConfig};
use ocslab_scheduler::net::FluidNetwork;
use ocslab_scheduler::policy::by_name;
use ocslab_scheduler::sim::{SimConfig, Simulation};
use ocslab_scheduler::workload::shufflewatcher_mix as mix;
use std::path::Path;
use std::time::Instant;

const TEN_BY_TEN: &str = r#"
name = "ten-by-ten"
racks = 10
hosts_per_rack = 10
slots_per_host = 4
simulation_only = true

[eps]
host_rate = "1Gbit/s"
oversubscription = 4.0

[ocs]
ports_per_rack = 1
port_rate = "10Gbit/s"
reconfig_delay = "10ms"
elephant_threshold = "100MB"
"#;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let jobs: usize = args.get(1).map(|s| s.parse()).transpose()?.unwrap_or(20);
    let scale: f64 = args.get(2).map(|s| s.parse()).transpose()?.unwrap_or(0.05);
    let task = args.get(3).map_or("fair", String::as_str);
    let coflow = args.get(4).map_or("fair", String::as_str);
    let topo = match args.get(5) {
        Some(p) => Topology::load(Path::new(p))?,
        None => Topology::parse(TEN_BY_TEN, Path::new("ten-by-ten.toml"))?,
    };
    let cfg = mix::MixConfig {
        jobs,
        size_scale: scale,
        ..mix::MixConfig::default()
    };
    let list = mix::to_jobs(
        &mix::generate(&cfg),
        &topo,
        Bytes(64_000_000),
        &mix::TaskRates::default(),
        1,
    );
    let tasks: usize = list.iter().map(|j| j.maps.len() + j.reduces.len()).sum();
    let engine = Engine::new(&topo, list, by_name(task, None)?, EngineConfig::default())?;
    let net = FluidNetwork::new(&topo, coflow)?;
    let start = Instant::now();
    let out = Simulation::new(engine, net, SimConfig::default()).run(|_, _| {})?;
    let wall = start.elapsed().as_secs_f64();
    println!(
        "jobs {jobs} tasks {tasks} flows {} events {} policy_calls {} simulated {:.1} s wall {wall:.3} s",
        out.flows,
        out.events,
        out.net.policy_calls,
        out.end.as_secs_f64()
    );
    Ok(())
}
