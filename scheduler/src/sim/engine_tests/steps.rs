//! How the simulation driver advances time over the fluid network: the
//! rates are solved once per instant (after its departures and the
//! arrivals they cause), and with a quantum ([`crate::sim::SimConfig::quantum`])
//! in steps as CoflowSim's simulator does.

use crate::engine::{Engine, Records};
use crate::experiment::Experiment;
use crate::model::coflow::FlowSpec;
use crate::net::{FluidNetwork, NetEvent, NetStats, NetTimeline};
use crate::sim::{run_scheduler, LoadSampling, NetworkModel, SimOutcome, Simulation};
use ocslab_core::engine::LinkLoad;
use ocslab_core::Nanos;
use std::path::Path;

fn load(file: &str) -> Experiment {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../experiments")
        .join(file);
    Experiment::load(&path).expect("a shipped experiment loads")
}

/// The fluid network solving its rates after every change, as it did
/// before the driver deferred them to the end of each instant.
struct SolvedAtEveryChange(FluidNetwork);

impl NetworkModel for SolvedAtEveryChange {
    fn add_flows(&mut self, now: Nanos, flows: &[FlowSpec]) {
        self.0.add_flows(now, flows)
    }
    fn next_event_at(&self) -> Option<Nanos> {
        self.0.next_event_at()
    }
    fn advance_to(&mut self, now: Nanos) -> Vec<NetEvent> {
        self.0.advance_to(now)
    }
    fn stats(&self) -> &NetStats {
        self.0.stats()
    }
    fn link_loads(&mut self, sampling: LoadSampling) -> Vec<LinkLoad> {
        NetworkModel::link_loads(&mut self.0, sampling)
    }
    fn timeline(&self, end: Nanos) -> NetTimeline {
        self.0.timeline(end)
    }
}

/// Scheduler `name` of `exp` with every rate solved at once.
fn solved_at_every_change(exp: &Experiment, name: &str) -> SimOutcome {
    let jobs = exp.jobs().expect("jobs");
    let engine = Engine::new(
        &exp.topology,
        jobs,
        exp.policy(name).expect("policy"),
        exp.engine.clone(),
    )
    .expect("engine");
    let net = FluidNetwork::new(&exp.topology, &exp.coflow_scheduler).expect("network");
    Simulation::new(engine, SolvedAtEveryChange(net), exp.sim.clone())
        .run(|_, _| {})
        .expect("simulation finishes")
}

/// `records` with the flows that ended at one instant in id order: the
/// order in which the network reports simultaneous completions follows
/// its bundles' indexes, which the timing of solves may change.
fn by_end(mut records: Records) -> Records {
    records.flows.sort_by_key(|f| (f.finished, f.flow));
    records
}

/// The same utilization series, sample for sample, up to float rounding
/// (a load summed in another order differs in its last bit).
fn same_utilization(a: &NetTimeline, b: &NetTimeline, what: &str) {
    assert_eq!(a.links.len(), b.links.len(), "{what}");
    for (x, y) in a.links.iter().zip(&b.links) {
        assert_eq!(x.samples.len(), y.samples.len(), "{what}: {}", x.name);
        for (p, q) in x.samples.iter().zip(&y.samples) {
            assert_eq!(p.0, q.0, "{what}: {}", x.name);
            assert!(
                (p.1 - q.1).abs() <= 1e-12,
                "{what}: {} at {:?}: {} vs {}",
                x.name,
                p.0,
                p.1,
                q.1
            );
        }
        assert!(
            (x.bytes - y.bytes).abs() <= 1e-9 * x.bytes.max(1.0),
            "{what}: {}",
            x.name
        );
    }
}

/// One solve per instant instead of one per change gives the same run,
/// record for record: nothing moves between the changes of one instant,
/// and the policy is still asked at each. Covers EPS-only schedulers
/// (lab-baselines, also with load samples every second) and Sunflow's
/// circuits (coscheduler-lab).
#[test]
fn one_solve_per_instant_gives_the_same_run() {
    let mut sampled = load("lab-baselines.toml");
    sampled.sim.load_sample_interval = Some(Nanos::from_millis(1000));
    let runs = [
        ("lab-baselines.toml", load("lab-baselines.toml")),
        ("lab-baselines.toml, sampled", sampled),
        ("coscheduler-lab.toml", load("coscheduler-lab.toml")),
    ];
    for (file, exp) in runs {
        for name in &exp.task_schedulers {
            let deferred = run_scheduler(&exp, name, exp.jobs().expect("jobs"), |_, _| {}).expect("run");
            let eager = solved_at_every_change(&exp, name);
            assert!(
                !deferred.records.coflows.is_empty(),
                "{file}: {name} moved no bytes"
            );
            assert_eq!(by_end(deferred.records), by_end(eager.records), "{file}: {name}");
            assert_eq!(deferred.net, eager.net, "{file}: {name}");
            assert_eq!(
                deferred.timeline.circuits, eager.timeline.circuits,
                "{file}: {name}"
            );
            same_utilization(&deferred.timeline, &eager.timeline, &format!("{file}: {name}"));
        }
    }
}

/// With a quantum, every job, task and flow completion is at the end of a
/// step, and the averages stay within a few steps of the exact run's.
#[test]
fn a_quantum_puts_every_completion_at_a_step_end() {
    let q = Nanos::from_millis(8);
    let exact = load("lab-baselines.toml");
    let mut stepped = exact.clone();
    stepped.sim.quantum = Some(q);
    let name = &exact.task_schedulers[0];
    let a = run_scheduler(&exact, name, exact.jobs().expect("jobs"), |_, _| {}).expect("exact run");
    let b = run_scheduler(&stepped, name, stepped.jobs().expect("jobs"), |_, _| {}).expect("stepped run");
    let off_step = |t: Nanos| !t.0.is_multiple_of(q.0);
    let mut ends = 0;
    for j in b.records.jobs.values() {
        let end = j.finished.expect("every job finishes");
        assert!(
            !off_step(end),
            "job {:?} finished at {end:?}, between steps",
            j.job
        );
        ends += 1;
    }
    for c in b.records.coflows.values() {
        let end = c.last_end.expect("every coflow ends");
        assert!(
            !off_step(end),
            "coflow {:?} ended at {end:?}, between steps",
            c.coflow
        );
    }
    assert!(ends > 10);
    assert!(
        a.records.jobs.values().any(|j| j.finished.is_some_and(off_step)),
        "the exact run is not already in steps"
    );
    let avg_jct = |o: &SimOutcome| {
        let n = o.records.jobs.len() as f64;
        o.records
            .jobs
            .values()
            .map(|j| (j.finished.unwrap_or(j.arrival) - j.arrival).as_secs_f64())
            .sum::<f64>()
            / n
    };
    let (ea, eb) = (avg_jct(&a), avg_jct(&b));
    assert!(
        (eb - ea).abs() <= 0.01 * ea,
        "avg JCT {ea:.3} s exact, {eb:.3} s in 8 ms steps"
    );
}
