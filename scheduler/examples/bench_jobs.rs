//! Prints `sim::bench_jobs` figures (what `ocslab bench sim` will report):
//! `cargo run --release -p ocslab-scheduler --example bench_jobs -- [JOBS] [fluid|uncontended] [TASK_SCHED] [COFLOW_SCHED]`.

use ocslab_scheduler::experiment::NetworkKind;
use ocslab_scheduler::sim::bench::bench_jobs;
use std::path::Path;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let jobs: u32 = args.get(1).map(|s| s.parse()).transpose()?.unwrap_or(1000);
    let network = match args.get(2).map(String::as_str) {
        Some("uncontended") => NetworkKind::Uncontended,
        _ => NetworkKind::Fluid,
    };
    let task = args.get(3).map_or("fair", String::as_str);
    let coflow = args.get(4).map_or("fair", String::as_str);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let topo = ocslab_emulator::Topology::load(&root.join("topologies/coscheduler-paper.toml"))?;
    let b = bench_jobs(&topo, jobs, 1, network, task, coflow)?;
    println!("{}", serde_json::to_string_pretty(&b)?);
    Ok(())
}
