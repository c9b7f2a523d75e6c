//! Prints the slot/speculation metrics of experiment files (FRESH, OMO,
//! ESPLASH reproductions): `cargo run --release --example p8_repro --
//! [--json] [--seeds N] EXPERIMENT...` (with `--seeds N`, the mean over
//! seeds seed..seed+N of each file, counts rounded).

use ocslab_scheduler::experiment::Experiment;
use ocslab_scheduler::repro;
use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let json = args.iter().any(|a| a == "--json");
    let seeds: u64 = args
        .iter()
        .position(|a| a == "--seeds")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(1);
    let files: Vec<&String> = args
        .iter()
        .enumerate()
        .filter(|(i, a)| *a != "--json" && *a != "--seeds" && (*i == 0 || args[i - 1] != "--seeds"))
        .map(|(_, a)| a)
        .collect();
    let mut all = Vec::new();
    for file in files {
        let exp = match Experiment::load(Path::new(file)) {
            Ok(e) => e,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::FAILURE;
            }
        };
        let list: Vec<u64> = (exp.seed..exp.seed + seeds.max(1)).collect();
        let rows = match repro::run_seeds(&exp, &list) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("error: {file}: {e}");
                return ExitCode::FAILURE;
            }
        };
        if !json {
            println!("{file} (seeds {:?})", list);
            println!(
                "  {:<18} {:>7} {:>5} {:>10} {:>9} {:>8} {:>9} {:>6} {:>6}/{:<4} {:>8} {:>8}",
                "scheduler",
                "slots",
                "slow",
                "makespan",
                "map-only",
                "overlap",
                "shuf-only",
                "fair",
                "copies",
                "won",
                "waste",
                "extra"
            );
            for r in &rows {
                let m = &r.metrics;
                println!(
                    "  {:<18} {:>7} {:>5} {:>9.1}s {:>8.1}s {:>7.1}s {:>8.1}s {:>6} {:>6}/{:<4} {:>7.0}s {:>8}",
                    r.scheduler,
                    r.slots,
                    r.slow_start,
                    m.makespan_s,
                    m.phases.map_only_s,
                    m.phases.overlap_s,
                    m.phases.shuffle_only_s,
                    m.mean_fairness.map_or("-".into(), |f| format!("{f:.3}")),
                    m.speculation.launched,
                    m.speculation.won,
                    m.speculation.wasted_slot_s,
                    r.extra_makespan_s.map_or("-".into(), |e| format!("{e:.1}s")),
                );
            }
        }
        all.push(serde_json::json!({ "experiment": file, "seeds": list, "schedulers": rows }));
    }
    if json {
        println!("{}", serde_json::Value::Array(all));
    }
    ExitCode::SUCCESS
}
