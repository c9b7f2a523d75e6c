//! The simulator's benchmark harness, for `ocslab bench sim`: the wall time
//! and peak memory of replaying a coflow trace under a coflow scheduler
//! ([`bench_replay`]) and of simulating a generated job workload
//! ([`bench_jobs`], [`bench_jobs_repeated`]) or an experiment file's
//! schedulers ([`bench_experiment`]), each the median of repeated runs. The only place in the simulator's use that reads a clock: to time
//! whole runs, and a replay's calls to its coflow policy (from outside
//! the policy, which reads none).

use super::{run_scheduler, RunError};
use crate::coflow::{CoflowPolicy, Decision, NetView, Progress, Triggers};
use crate::engine::EngineConfig;
use crate::experiment::{Experiment, NetworkKind, Workload};
use crate::net::levels::SolveStats;
use crate::replay::{self, ReplayRunError, ReplaySpec};
use crate::sim::SimConfig;
use crate::workload::generated::{default_classes, Arrivals, GeneratedWorkload};
use ocslab_emulator::{Bytes, Nanos, Topology};
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
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

/// Peak resident set size in MB, from /proc/self/status.
pub fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib = ocslab_emulator::fabric::capacity::proc_field(&status, "VmHWM")?;
    Some(kib as f64 / 1024.0)
}

/// Hands the heap pages that earlier runs freed back to the kernel, so
/// that they do not count in the next run's peak.
fn trim_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free heap pages to the kernel; it
    // takes no pointer and touches no live allocation.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Resets the peak resident set size (VmHWM) to the current one, the heap
/// trimmed first; false if the kernel refused (then peaks are over the
/// whole process).
pub fn reset_peak_rss() -> bool {
    trim_heap();
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// The median of `xs` (not empty).
fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Runs `run` `repeat` times (at least once), the peak memory reset before
/// the first and the heap trimmed before each, `each(i)` called before run
/// `i` (from 1). Returns the last run's result and every run's wall time.
fn repeated<T, E>(
    repeat: u32,
    each: &mut impl FnMut(u32),
    mut run: impl FnMut() -> Result<(T, f64), E>,
) -> Result<(T, Vec<f64>), E> {
    reset_peak_rss();
    let mut walls = Vec::new();
    trim_heap();
    each(1);
    let (mut last, wall) = run()?;
    walls.push(wall);
    for i in 2..=repeat.max(1) {
        trim_heap();
        each(i);
        let (r, wall) = run()?;
        walls.push(wall);
        last = r;
    }
    Ok((last, walls))
}

/// What replaying a trace `repeat` times measured.
#[derive(Clone, Debug, Serialize)]
pub struct ReplayBench {
    /// The coflow scheduler.
    pub scheduler: String,
    /// The topology file's name.
    pub topology: String,
    /// Coflows replayed.
    pub coflows: usize,
    /// Flows replayed.
    pub flows: usize,
    /// Times the policy was asked.
    pub policy_calls: u64,
    /// Flow plans its decisions held, over all calls.
    pub flow_plans: u64,
    /// Flows its decisions moved to another path, cap or class.
    pub flows_replanned: u64,
    /// Median wall time of the replays, seconds.
    pub wall_s: f64,
    /// Every replay's wall time, seconds.
    pub wall_runs_s: Vec<f64>,
    /// Median wall time spent inside the coflow policy's calls, seconds
    /// (the rest of a replay is the network's).
    pub policy_s: f64,
    /// Every replay's time inside the policy, seconds.
    pub policy_runs_s: Vec<f64>,
    /// Peak resident memory over these replays, MB (None: not measurable).
    pub peak_rss_mb: Option<f64>,
    /// Average CCT, seconds.
    pub avg_cct_s: f64,
    /// How the rate solver went in the last replay.
    pub solver: SolveStats,
}

/// A coflow policy whose calls are timed: the wall time spent inside it
/// (`decide`, `schedule` and `recycle`), added up in `spent` (ns), so a
/// replay's time splits into the policy's and the network's.
struct TimedPolicy {
    inner: Box<dyn CoflowPolicy>,
    spent: Arc<AtomicU64>,
}

impl TimedPolicy {
    fn time<T>(&mut self, call: impl FnOnce(&mut dyn CoflowPolicy) -> T) -> T {
        let start = Instant::now();
        let out = call(self.inner.as_mut());
        let ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.spent.fetch_add(ns, Ordering::Relaxed);
        out
    }
}

impl CoflowPolicy for TimedPolicy {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn uses_ocs(&self) -> bool {
        self.inner.uses_ocs()
    }
    fn orders_coflows(&self) -> bool {
        self.inner.orders_coflows()
    }
    fn splits_links_equally(&self) -> bool {
        self.inner.splits_links_equally()
    }
    fn triggers(&self) -> Triggers {
        self.inner.triggers()
    }
    fn schedule(&mut self, now: Nanos, view: &NetView) -> Decision {
        self.time(|p| p.schedule(now, view))
    }
    fn decide(&mut self, now: Nanos, view: &NetView, progress: &dyn Progress) -> Decision {
        self.time(|p| p.decide(now, view, progress))
    }
    fn recycle(&mut self, decision: Decision) {
        self.time(|p| p.recycle(decision));
    }
}

/// Replays `spec` `repeat` times (at least once); `each(i)` is called
/// before run `i` (from 1). With `peaks`, the peak memory is this figure's own.
pub fn bench_replay(
    spec: &ReplaySpec<'_>,
    repeat: u32,
    peaks: bool,
    mut each: impl FnMut(u32),
) -> Result<ReplayBench, ReplayRunError> {
    let (topology, scheduler) = (spec.topology, spec.scheduler);
    let mut policy_runs_s = Vec::new();
    let (run, walls) = repeated(repeat, &mut each, || {
        let spent = Arc::new(AtomicU64::new(0));
        let timed = |inner| -> Box<dyn CoflowPolicy> {
            Box::new(TimedPolicy {
                inner,
                spent: Arc::clone(&spent),
            })
        };
        let run = replay::simulate_with(spec, timed, |_, _| {})?;
        policy_runs_s.push(spent.load(Ordering::Relaxed) as f64 * 1e-9);
        let wall = run.wall_s;
        Ok::<_, ReplayRunError>((run, wall))
    })?;
    let n = run.outcome.records.len();
    Ok(ReplayBench {
        scheduler: scheduler.to_string(),
        topology: topology.file_name().map_or_else(
            || topology.display().to_string(),
            |f| f.to_string_lossy().into_owned(),
        ),
        coflows: n,
        flows: run.flows,
        policy_calls: run.outcome.stats.policy_calls,
        flow_plans: run.outcome.stats.flow_plans,
        flows_replanned: run.outcome.stats.flows_replanned,
        wall_s: median(&walls),
        wall_runs_s: walls,
        policy_s: median(&policy_runs_s),
        policy_runs_s,
        peak_rss_mb: if peaks { peak_rss_mb() } else { None },
        solver: run.outcome.solver,
        avg_cct_s: run
            .outcome
            .records
            .iter()
            .map(|r| r.cct.as_secs_f64())
            .sum::<f64>()
            / n.max(1) as f64,
    })
}

/// [`bench_jobs`] repeated.
#[derive(Clone, Debug, Serialize)]
pub struct JobsRepeated {
    /// The last run's figures (all runs simulate the same thing).
    #[serde(flatten)]
    pub run: JobsBench,
    /// Median wall time of the runs, seconds (replaces the last run's `wall_s`).
    pub median_wall_s: f64,
    /// Every run's wall time, seconds.
    pub wall_runs_s: Vec<f64>,
    /// Peak resident memory over these runs, MB.
    pub peak_rss_mb: Option<f64>,
}

/// [`bench_jobs`] of `jobs` jobs on `topology` (Fair task and coflow
/// schedulers, fluid network, seed 1), `repeat` times (at least once);
/// `each(i)` is called before run `i`. With `peaks`, the peak memory is
/// this figure's own.
pub fn bench_jobs_repeated(
    topology: &Topology,
    jobs: u32,
    repeat: u32,
    peaks: bool,
    mut each: impl FnMut(u32),
) -> Result<JobsRepeated, RunError> {
    let (run, walls) = repeated(repeat, &mut each, || {
        let b = bench_jobs(topology, jobs, 1, NetworkKind::Fluid, "fair", "fair")?;
        let wall = b.wall_s;
        Ok::<_, RunError>((b, wall))
    })?;
    Ok(JobsRepeated {
        run,
        median_wall_s: median(&walls),
        wall_runs_s: walls,
        peak_rss_mb: if peaks { peak_rss_mb() } else { None },
    })
}

/// What simulating one task scheduler of an experiment file measured.
#[derive(Clone, Debug, Serialize)]
pub struct ExperimentBench {
    /// The experiment's name.
    pub experiment: String,
    /// The task scheduler.
    pub scheduler: String,
    /// The coflow scheduler.
    pub coflow_scheduler: String,
    /// Hosts of its topology.
    pub hosts: usize,
    /// Jobs simulated.
    pub jobs: usize,
    /// Flows the engine started.
    pub flows: u64,
    /// Most flows in flight at once.
    pub peak_flows: u64,
    /// Events fed to the engine.
    pub events: u64,
    /// Simulated makespan, seconds.
    pub simulated_s: f64,
    /// Median wall time of the runs (workload generation excluded), seconds.
    pub wall_s: f64,
    /// Every run's wall time, seconds.
    pub wall_runs_s: Vec<f64>,
    /// Median CPU time (user + system) of the runs, seconds.
    pub cpu_s: f64,
    /// Peak resident memory over these runs, MB (`None`: not measurable
    /// per figure).
    pub peak_rss_mb: Option<f64>,
}

/// CPU time (user + system) this process has used so far, seconds.
fn cpu_s() -> f64 {
    // SAFETY: getrusage writes into the zeroed struct it is given and keeps no pointer.
    let usage = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_SELF, &mut u) != 0 {
            return 0.0;
        }
        u
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// Simulates task scheduler `scheduler` of `exp` on its jobs `repeat`
/// times (at least once, one run at a time so that the CPU time and, with
/// `peaks`, the peak memory are this figure's own); `each(i)` is called
/// before run `i`.
pub fn bench_experiment(
    exp: &Experiment,
    scheduler: &str,
    repeat: u32,
    peaks: bool,
    mut each: impl FnMut(u32),
) -> Result<ExperimentBench, RunError> {
    let (mut cpus, mut jobs) = (Vec::new(), 0);
    let (out, walls) = repeated(repeat, &mut each, || {
        // Made afresh for each run, as `ocslab sim` makes them once: no
        // copy kept aside counts in the run's peak memory.
        let list = exp.jobs()?;
        jobs = list.len();
        let (start, cpu) = (Instant::now(), cpu_s());
        let out = run_scheduler(exp, scheduler, list, |_, _| {})?;
        let wall = start.elapsed().as_secs_f64();
        cpus.push(cpu_s() - cpu);
        Ok::<_, RunError>((out, wall))
    })?;
    Ok(ExperimentBench {
        experiment: exp.name.clone(),
        scheduler: scheduler.to_string(),
        coflow_scheduler: exp.coflow_scheduler.clone(),
        hosts: exp.topology.hosts(),
        jobs,
        flows: out.flows,
        peak_flows: out.peak_flows,
        events: out.events,
        simulated_s: out.end.as_secs_f64(),
        wall_s: median(&walls),
        wall_runs_s: walls,
        cpu_s: median(&cpus),
        peak_rss_mb: if peaks { peak_rss_mb() } else { None },
    })
}

#[cfg(test)]
mod tests {
    use super::{bench_replay, median};
    use crate::replay::{simulate, ReplaySpec};
    use crate::trace::coflow_benchmark::FlowSizes;
    use std::path::PathBuf;

    #[test]
    fn a_timed_policy_replays_as_the_policy_does_and_counts_its_time() {
        let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
        let trace = repo.join("traces/FB2010-1Hr-150-0.txt");
        for (scheduler, topology) in [("varys", "fb2010.toml"), ("sunflow", "fb2010-ocs.toml")] {
            let topology = repo.join("topologies").join(topology);
            let spec = ReplaySpec {
                trace: &trace,
                topology: &topology,
                scheduler,
                limit: Some(30),
                sizes: FlowSizes::default(),
            };
            let plain = simulate(&spec, |_, _| {}).expect("replays");
            let timed = bench_replay(&spec, 1, false, |_| {}).expect("replays");
            // The wrapper hands every question to the policy: the same
            // calls (its triggers), the same CCTs (its decisions).
            assert_eq!(
                timed.policy_calls, plain.outcome.stats.policy_calls,
                "{scheduler}"
            );
            assert!(timed.policy_calls > 0, "{scheduler}");
            let avg = plain
                .outcome
                .records
                .iter()
                .map(|r| r.cct.as_secs_f64())
                .sum::<f64>()
                / 30.0;
            assert_eq!(timed.avg_cct_s, avg, "{scheduler}");
            // Time was spent in the calls, and no more than the whole run.
            assert_eq!(timed.policy_runs_s.len(), 1);
            assert!(
                timed.policy_s > 0.0 && timed.policy_s <= timed.wall_s,
                "{timed:?}"
            );
        }
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
    }
}
