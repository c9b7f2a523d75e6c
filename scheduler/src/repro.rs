//! Runs an experiment's task schedulers in the simulator, with its
//! perturbations and (when it has timed ones) once more without them, and
//! collects the [`crate::metrics`] the dissertation's figures use: makespan,
//! phase breakdown, overall fairness, speculation, wasted slot-seconds and
//! the extra makespan the perturbations caused. `cargo run --release
//! --example p8_repro -- EXPERIMENT...` prints them; `ocslab sim` may reuse
//! [`run`].

use crate::engine::Engine;
use crate::experiment::{Experiment, NetworkKind};
use crate::metrics::{extra_makespan, RunMetrics};
use crate::net::FluidNetwork;
use crate::perturb::{Action, Timeline};
use crate::policy;
use crate::sim::{FixedRateNetwork, SimOutcome, Simulation};
use ocslab_emulator::Nanos;
use serde::Serialize;

/// One scheduler's results.
#[derive(Clone, Debug, Serialize)]
pub struct SchedulerMetrics {
    /// The task scheduler.
    pub scheduler: String,
    /// Slot setting it ran under (`shared` or `M:R` per host).
    pub slots: String,
    /// Reduce slow-start of the engine.
    pub slow_start: f64,
    /// Metrics with the perturbations.
    pub metrics: RunMetrics,
    /// Makespan without the timed perturbations (base speeds kept), if any.
    pub unperturbed_makespan_s: Option<f64>,
    /// `metrics.makespan_s − unperturbed_makespan_s`.
    pub extra_makespan_s: Option<f64>,
}

fn simulate(exp: &Experiment, name: &str, actions: &[(Nanos, Action)]) -> Result<SimOutcome, String> {
    let jobs = exp.jobs().map_err(|e| e.to_string())?;
    let policy = policy::by_name(name, exp.scheduler_params.get(name)).map_err(|e| e.to_string())?;
    let mut config = exp.engine.clone();
    Timeline::of(&exp.perturbations).apply_base(&mut config);
    let engine = Engine::new(&exp.topology, jobs, policy, config).map_err(|e| e.to_string())?;
    let out = match exp.network {
        NetworkKind::Fluid => {
            let net = FluidNetwork::new(&exp.topology, &exp.coflow_scheduler).map_err(|e| e.to_string())?;
            Simulation::new(engine, net, exp.sim.clone())
                .with_perturbations(actions)
                .and_then(|s| s.run(|_, _| {}))
        }
        NetworkKind::Uncontended => {
            let net = FixedRateNetwork::for_topology(&exp.topology);
            Simulation::new(engine, net, exp.sim.clone())
                .with_perturbations(actions)
                .and_then(|s| s.run(|_, _| {}))
        }
    };
    out.map_err(|e| e.to_string())
}

/// Runs every task scheduler of `exp`.
pub fn run(exp: &Experiment) -> Result<Vec<SchedulerMetrics>, String> {
    let timeline = Timeline::of(&exp.perturbations);
    let slots = match exp.engine.slots {
        crate::engine::SlotConfig::Shared => "shared".to_string(),
        crate::engine::SlotConfig::Split { map, reduce } => format!("{map}:{reduce}"),
    };
    let mut rows = Vec::new();
    for name in &exp.task_schedulers {
        let out = simulate(exp, name, &timeline.actions)?;
        let (unperturbed, extra) = if timeline.actions.is_empty() {
            (None, None)
        } else {
            let base = simulate(exp, name, &[])?;
            (
                crate::metrics::makespan(&base.records).map(|m| m.as_secs_f64()),
                extra_makespan(&base.records, &out.records),
            )
        };
        rows.push(SchedulerMetrics {
            scheduler: name.clone(),
            slots: slots.clone(),
            slow_start: exp.engine.slow_start,
            metrics: RunMetrics::of(&out.records),
            unperturbed_makespan_s: unperturbed,
            extra_makespan_s: extra,
        });
    }
    Ok(rows)
}

/// Runs every task scheduler of `exp` once per seed in `seeds` (the
/// workload drawn anew each time) and averages each scheduler's figures.
pub fn run_seeds(exp: &Experiment, seeds: &[u64]) -> Result<Vec<SchedulerMetrics>, String> {
    let mut sum: Option<Vec<SchedulerMetrics>> = None;
    for &seed in seeds {
        let mut e = exp.clone();
        e.seed = seed;
        let rows = run(&e)?;
        sum = Some(match sum {
            None => rows,
            Some(mut acc) => {
                for (a, r) in acc.iter_mut().zip(rows) {
                    add(a, &r);
                }
                acc
            }
        });
    }
    let n = seeds.len().max(1) as f64;
    let mut rows = sum.unwrap_or_default();
    for r in &mut rows {
        scale(r, 1.0 / n);
    }
    Ok(rows)
}

fn add(a: &mut SchedulerMetrics, r: &SchedulerMetrics) {
    let (m, x) = (&mut a.metrics, &r.metrics);
    m.makespan_s += x.makespan_s;
    m.phases.map_only_s += x.phases.map_only_s;
    m.phases.overlap_s += x.phases.overlap_s;
    m.phases.shuffle_only_s += x.phases.shuffle_only_s;
    m.mean_fairness = m.mean_fairness.zip(x.mean_fairness).map(|(a, b)| a + b);
    let (s, y) = (&mut m.speculation, &x.speculation);
    s.launched += y.launched;
    s.won += y.won;
    s.killed += y.killed;
    s.lost += y.lost;
    s.originals_beaten += y.originals_beaten;
    s.wasted_slot_s += y.wasted_slot_s;
    s.killed_copy_slot_s += y.killed_copy_slot_s;
    a.unperturbed_makespan_s = a
        .unperturbed_makespan_s
        .zip(r.unperturbed_makespan_s)
        .map(|(a, b)| a + b);
    a.extra_makespan_s = a.extra_makespan_s.zip(r.extra_makespan_s).map(|(a, b)| a + b);
}

/// Divides sums by the number of runs (counts are rounded).
fn scale(a: &mut SchedulerMetrics, f: f64) {
    let m = &mut a.metrics;
    m.makespan_s *= f;
    m.phases.map_only_s *= f;
    m.phases.overlap_s *= f;
    m.phases.shuffle_only_s *= f;
    m.mean_fairness = m.mean_fairness.map(|x| x * f);
    let s = &mut m.speculation;
    let c = |n: u32| (n as f64 * f).round() as u32;
    s.launched = c(s.launched);
    s.won = c(s.won);
    s.killed = c(s.killed);
    s.lost = c(s.lost);
    s.originals_beaten = c(s.originals_beaten);
    s.wasted_slot_s *= f;
    s.killed_copy_slot_s *= f;
    a.unperturbed_makespan_s = a.unperturbed_makespan_s.map(|x| x * f);
    a.extra_makespan_s = a.extra_makespan_s.map(|x| x * f);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn the_thesis_experiment_files_load_and_run() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../experiments");
        let mut seen = 0;
        for entry in std::fs::read_dir(&dir).expect("experiments folder") {
            let path = entry.expect("entry").path();
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default()
                .to_string();
            if !["fresh", "omo", "esplash"].iter().any(|p| name.starts_with(p)) {
                continue;
            }
            let exp = Experiment::load(&path).unwrap_or_else(|e| panic!("{e}"));
            seen += 1;
            if name == "esplash-straggler-level4.toml" {
                // Its straggler window is timed, so every scheduler also runs
                // without it and reports the extra makespan.
                let rows = run(&exp).expect("runs");
                assert_eq!(rows.len(), 3);
                assert!(rows.iter().all(|r| r.extra_makespan_s.is_some()));
                let copies = |n: &str| {
                    rows.iter()
                        .find(|r| r.scheduler == n)
                        .map(|r| r.metrics.speculation.launched)
                };
                assert_eq!(copies("fair"), Some(0));
            }
        }
        assert_eq!(seen, 16);
    }
}
