//! # ocslab-emu
//!
//! The emulation driver: the same [`Engine`] and coflow policies as the
//! simulator, driven by real time, real agents and real bytes on the kernel
//! fabric.
//!
//! ```text
//!  agents ──reports──▶ ┌────────── driver loop ───────────┐ ◀──circuit events── OCS worker
//!   (QUIC control)     │ Engine::handle(now, Event)       │
//!                      │ EmuNetwork (coflow policy)       │ ──matchings──▶ OCS (δ)
//!  agents ◀─commands── └──────────────────────────────────┘ ◀──counters── fabric
//! ```
//!
//! - [`lab`]: the fabric, the control server and one agent per host, with
//!   owned teardown (end of run, error, Ctrl-C, panic);
//! - [`network`]: the coflow policy over the real network (pure);
//! - [`tasks`]: engine task commands ↔ agent tasks (pure);
//! - [`ocs`]: the thread that applies matchings (δ blocks);
//! - [`perturb`]: perturbations made real (slow agents, killed and restarted agents; pure);
//! - `driver` (private): the loop;
//! - [`metrics`]: what was measured on the wire (FCT, CCT, bytes per fabric
//!   from the kernel's counters), CSV and JSON;
//! - [`sampler`]: link utilization over time from the kernel counters,
//!   read on a thread of its own (the results timeline, engine load samples).
//!
//! Entry points: [`run_jobs`] (what `ocslab run` calls) and [`replay`]
//! (`ocslab replay --emulate`); each starts a fresh [`lab::Lab`] and always
//! stops it. `docs/emulation.md` explains the choices.
//!
//! Design decision: this crate does not depend on the simulator. It fills
//! the records of `ocslab_core::outcome` from what the agents and the kernel
//! measured, so the results layer above both drivers writes and compares
//! simulated and emulated runs with the same code.
#![deny(missing_docs)]

mod driver;
pub mod lab;
pub mod metrics;
pub mod network;
pub mod ocs;
pub mod perturb;
pub mod resend;
pub mod sampler;
pub mod tasks;

pub use lab::{FabricChoice, Lab, LabConfig};
pub use metrics::{WireCoflow, WireFlow, WireReport};
pub use network::{EmuNetStats, EmuNetwork};

use driver::{Driver, Source};
use ocslab_agent::control::ControlError;
use ocslab_agent::protocol::Transport;
use ocslab_core::coflow::lower_bound::Fabrics;
use ocslab_core::coflow::{FabricParams, UnknownPolicy};
use ocslab_core::engine::{Engine, EngineConfig, EngineError, Records};
use ocslab_core::model::coflow::{Coflow, CoflowId, FlowId};
use ocslab_core::model::job::Job;
use ocslab_core::net::links::LinkMap;
use ocslab_core::outcome::{
    CircuitRecord, CircuitsByPair, CoflowRecord, NetStats, ReplayOutcome, SolveStats,
};
use ocslab_core::policy::TaskPolicy;
use ocslab_emulator::fabric::FabricError;
use ocslab_emulator::{Bytes, HostId, Nanos, Topology};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Duration;

/// Why an emulated run failed.
#[derive(Debug, thiserror::Error)]
pub enum EmuError {
    /// The fabric could not be built, read or torn down.
    #[error(transparent)]
    Fabric(#[from] FabricError),
    /// The control plane failed.
    #[error(transparent)]
    Control(#[from] ControlError),
    /// The coflow scheduler name is unknown.
    #[error(transparent)]
    Policy(#[from] UnknownPolicy),
    /// The coflow scheduler shares links in a way only the fluid model can.
    #[error(
        "coflow scheduler {0} splits each link equally among its flows, as CoflowSim's simulator does; \
         on the kernel fabric flows share links as TCP does: simulate it (--sim), or run fair"
    )]
    SimulatorOnly(&'static str),
    /// The engine refused the workload.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// A task failed on its agent.
    #[error(transparent)]
    Task(#[from] tasks::TaskError),
    /// Setting the lab up failed.
    #[error("{0}")]
    Setup(String),
    /// The OCS could not apply a matching.
    #[error("OCS: {0}")]
    Ocs(String),
    /// The run took longer than allowed.
    #[error(
        "the run passed its time limit of {limit:?} with {done} of {total} done and {in_flight} flows in flight{}{}",
        if failed.is_empty() { String::new() } else { format!("; failed flows: {failed}") },
        if waiting.is_empty() { String::new() } else { format!("\nwaiting:\n{waiting}") }
    )]
    TimeLimit {
        /// The limit.
        limit: Duration,
        /// Jobs (or coflows) done.
        done: usize,
        /// In all.
        total: usize,
        /// Flows still moving.
        in_flight: usize,
        /// Flows that failed at an end, and why.
        failed: String,
        /// What the unfinished jobs wait on ([`ocslab_core::engine::Engine::describe_unfinished`]).
        waiting: String,
    },
    /// Every send of a flow failed at an end ([`resend::MAX_SENDS`]).
    #[error("flow {} ({src} → {dst}, coflow {}) failed on all {} sends: {reasons}", flow.0, coflow.0, resend::MAX_SENDS)]
    FlowFailed {
        /// The flow.
        flow: FlowId,
        /// Its coflow.
        coflow: CoflowId,
        /// Its sender.
        src: HostId,
        /// Its receiver.
        dst: HostId,
        /// Why each send failed, first send first.
        reasons: String,
    },
    /// Ctrl-C or SIGTERM.
    #[error("interrupted (Ctrl-C or SIGTERM); the lab was torn down")]
    Interrupted,
    /// A bug.
    #[error("internal: {0}")]
    Internal(String),
}

/// A fault injected into a run (for tests of failure handling).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// When this many shuffle flows have finished, kill (SIGKILL) the agent
    /// of the host that received the last of them: mid-shuffle, with a
    /// reduce holding some of its partitions.
    KillReceiverAfterShuffleFlows(u32),
}

/// How an emulated run is driven.
#[derive(Clone, Debug)]
pub struct EmuConfig {
    /// The coflow scheduler (see [`ocslab_core::coflow::by_name`]).
    pub coflow_policy: String,
    /// Keys input and partition content.
    pub seed: u64,
    /// Data-plane transport.
    pub transport: Transport,
    /// Agents and control plane.
    pub lab: LabConfig,
    /// Read the kernel counters this often: every reading adds a sample to
    /// the links' utilization timeline (`None`: no timeline).
    pub load_sample_interval: Option<Nanos>,
    /// Also feed each reading to the engine as link loads
    /// (`Event::LoadSample`) while flows are in flight. Set when the
    /// experiment asks for load samples (`[engine] load_sample_interval`),
    /// so the policies see the same inputs as under `ocslab sim`.
    pub engine_load_samples: bool,
    /// Give up after this long (wall time of the run, not the set-up).
    pub time_limit: Duration,
    /// Faults to inject.
    pub faults: Vec<Fault>,
    /// Perturbations to carry out ([`perturb::PerturbPlan`]); the caller
    /// also puts their whole-run speeds into the engine's configuration
    /// ([`ocslab_core::perturb::Timeline::apply_base`]).
    pub perturbations: ocslab_core::perturb::Timeline,
}

impl EmuConfig {
    /// Takes the experiment's load-sample interval, if it sets one: the
    /// timeline is sampled at it and the engine receives the samples, as in
    /// simulation. Without one the timeline keeps this config's interval
    /// and the engine gets no load samples (nor does it in simulation).
    pub fn with_experiment_load_samples(mut self, every: Option<Nanos>) -> EmuConfig {
        if let Some(every) = every {
            self.load_sample_interval = Some(every);
            self.engine_load_samples = true;
        }
        self
    }
}

impl Default for EmuConfig {
    fn default() -> EmuConfig {
        EmuConfig {
            coflow_policy: "fair".into(),
            seed: 1,
            transport: Transport::Tcp,
            lab: LabConfig::default(),
            load_sample_interval: Some(Nanos::from_millis(200)),
            engine_load_samples: false,
            time_limit: Duration::from_secs(600),
            faults: Vec::new(),
            perturbations: ocslab_core::perturb::Timeline::default(),
        }
    }
}

/// A finished emulated run of jobs.
#[derive(Clone, Debug, Serialize)]
pub struct EmuOutcome {
    /// The task policy.
    pub policy: String,
    /// What the perturbations did.
    pub perturbations: perturb::PerturbCounts,
    /// The coflow policy.
    pub coflow_policy: String,
    /// The engine's records (the same kind `ocslab sim` reports).
    pub records: Records,
    /// What was measured on the wire.
    pub wire: WireReport,
    /// What the network driver did.
    pub net: EmuNetStats,
    /// Experiment time at the end.
    pub end: Nanos,
    /// Every circuit as the OCS reported it (for the circuit timeline).
    pub circuits: Vec<CircuitRecord>,
}

/// The coflow scheduler called `name`, if the kernel fabric can run it
/// (checked before a lab is built).
fn coflow_policy(name: &str) -> Result<Box<dyn ocslab_core::coflow::CoflowPolicy>, EmuError> {
    let policy = ocslab_core::coflow::by_name(name)?;
    if policy.splits_links_equally() {
        return Err(EmuError::SimulatorOnly(policy.name()));
    }
    Ok(policy)
}

/// Runs `jobs` placed by `policy` on a fresh lab for `topo`, under the
/// coflow scheduler of `cfg`. Blocking: it runs its own tokio runtime. The
/// lab is torn down whatever happens.
pub fn run_jobs(
    topo: &Topology,
    fabric: FabricChoice,
    jobs: Vec<Job>,
    policy: Box<dyn TaskPolicy>,
    engine: EngineConfig,
    cfg: &EmuConfig,
) -> Result<EmuOutcome, EmuError> {
    coflow_policy(&cfg.coflow_policy)?;
    if engine.merge_fetches {
        return Err(EmuError::Setup(
            "engine.merge_fetches is for the simulator only: with real bytes every fetch is its own connection; \
             leave it out of the experiment's [engine] table to emulate it"
                .into(),
        ));
    }
    let rt = runtime()?;
    rt.block_on(async {
        let bridge = tasks::TaskBridge::new(&jobs, cfg.seed);
        let engine = Engine::new(topo, jobs, policy, engine)?;
        let mut lab = Lab::start(topo, fabric, &cfg.lab).await?;
        let result = run_jobs_on(&mut lab, engine, bridge, cfg).await;
        let stopped = lab.stop().await;
        let outcome = result?;
        stopped?;
        Ok(outcome)
    })
}

async fn run_jobs_on(
    lab: &mut Lab,
    engine: Engine,
    bridge: tasks::TaskBridge,
    cfg: &EmuConfig,
) -> Result<EmuOutcome, EmuError> {
    let source = Source::Jobs {
        engine: Box::new(engine),
        bridge,
    };
    let mut d = Driver::new(lab, source, cfg)?;
    let mut wire = d.run().await?;
    let perturbations = d.perturb_counts();
    let net = d.net.stats().clone();
    let coflow_policy = d.net.policy_name().to_string();
    let Source::Jobs { engine, .. } = std::mem::replace(
        &mut d.source,
        Source::Coflows {
            queue: VecDeque::new(),
            total: 0,
        },
    ) else {
        return Err(EmuError::Internal("source changed".into()));
    };
    let end = engine.now();
    let policy = engine.policy_name().to_string();
    let records = engine.into_records();
    let useless: BTreeSet<FlowId> = records
        .flows
        .iter()
        .filter(|f| !f.useful)
        .map(|f| f.flow)
        .collect();
    Driver::mark_useless(&mut wire, &useless);
    Ok(EmuOutcome {
        policy,
        perturbations,
        coflow_policy,
        records,
        wire,
        net,
        end,
        circuits: std::mem::take(&mut d.circuits),
    })
}

/// A finished emulated replay: the same per-coflow records as the fluid
/// replay (CCT measured: arrival → last byte received), and the wire report.
#[derive(Clone, Debug, Serialize)]
pub struct EmuReplay {
    /// Per-coflow records and totals, as the simulator's replay gives them.
    pub outcome: ReplayOutcome,
    /// What was measured on the wire.
    pub wire: WireReport,
    /// What the network driver did.
    pub net: EmuNetStats,
}

/// Replays `coflows` with real bytes on a fresh lab for `topo` under the
/// coflow scheduler of `cfg`. Blocking; the lab is always torn down.
pub fn replay(
    topo: &Topology,
    fabric: FabricChoice,
    coflows: &[Coflow],
    cfg: &EmuConfig,
) -> Result<EmuReplay, EmuError> {
    coflow_policy(&cfg.coflow_policy)?;
    let rt = runtime()?;
    rt.block_on(async {
        let mut lab = Lab::start(topo, fabric, &cfg.lab).await?;
        let result = replay_on(&mut lab, coflows, cfg).await;
        let stopped = lab.stop().await;
        let outcome = result?;
        stopped?;
        Ok(outcome)
    })
}

/// Replays `coflows` on a lab that is up.
pub async fn replay_on(lab: &mut Lab, coflows: &[Coflow], cfg: &EmuConfig) -> Result<EmuReplay, EmuError> {
    let topo = lab.topology().clone();
    let mut order: Vec<Coflow> = coflows.to_vec();
    order.sort_by_key(|c| (c.arrival, c.id));
    let source = Source::Coflows {
        queue: order.iter().cloned().collect(),
        total: order.len(),
    };
    let mut d = Driver::new(lab, source, cfg)?;
    let wire = d.run().await?;
    let fabrics = Fabrics::of(d.net.policy_uses_ocs(), topo.ocs_schedule.is_some());
    let policy = d.net.policy_name().to_string();
    let circuits = std::mem::take(&mut d.circuits);
    let net = d.net.stats().clone();
    let fabric = FabricParams::from(&topo);
    let links = LinkMap::new(&fabric);
    let mut stats = NetStats {
        reconfigurations: circuits.len() as u64,
        policy_calls: net.policy_calls,
        ..NetStats::default()
    };
    let by_flow: BTreeMap<FlowId, &WireFlow> = wire.flows.iter().map(|f| (f.flow, f)).collect();
    let by_pair = CircuitsByPair::new(&circuits);
    let mut records = Vec::with_capacity(order.len());
    for c in &order {
        let (mut eps, mut ocs) = (Bytes(0), Bytes(0));
        let mut finished = c.arrival;
        for f in &c.flows {
            let Some(w) = by_flow.get(&f.id) else { continue };
            finished = finished.max(w.end);
            match w.marked {
                Some(ocslab_agent::protocol::Path::Ocs) => ocs += w.bytes_received,
                _ => eps += w.bytes_received,
            }
            if f.src.rack != f.dst.rack {
                stats.cross_rack_bytes += w.bytes_received;
            }
            stats.flows_done += 1;
        }
        stats.eps_bytes += eps;
        stats.ocs_bytes += ocs;
        let mut record = CoflowRecord::arrived(c, &fabric, &links, fabrics, &by_pair);
        record.finish(finished, eps, ocs);
        records.push(record);
    }
    let makespan = records.iter().map(|r| r.finished).max().unwrap_or_default();
    Ok(EmuReplay {
        outcome: ReplayOutcome {
            policy,
            fabrics,
            records,
            stats,
            circuits,
            makespan,
            links: wire.links.clone(),
            solver: SolveStats::default(),
        },
        wire,
        net,
    })
}

fn runtime() -> Result<tokio::runtime::Runtime, EmuError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| EmuError::Setup(format!("starting the async runtime: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_engine_gets_load_samples_only_when_the_experiment_asks_for_them() {
        let plain = EmuConfig::default().with_experiment_load_samples(None);
        assert!(!plain.engine_load_samples);
        assert_eq!(
            plain.load_sample_interval,
            EmuConfig::default().load_sample_interval
        );
        let asked = EmuConfig::default().with_experiment_load_samples(Some(Nanos::from_millis(1000)));
        assert!(asked.engine_load_samples);
        assert_eq!(asked.load_sample_interval, Some(Nanos::from_millis(1000)));
    }

    #[test]
    fn merged_fetches_are_refused_before_anything_is_built() {
        let topo = Topology::builder("t", 1, 2).build().expect("topology");
        let engine = EngineConfig {
            merge_fetches: true,
            ..EngineConfig::default()
        };
        let policy = ocslab_core::policy::by_name("fifo", None).expect("fifo");
        let fabric = FabricChoice::Build { topology_file: None };
        match run_jobs(&topo, fabric, Vec::new(), policy, engine, &EmuConfig::default()) {
            Err(EmuError::Setup(m)) => assert!(m.contains("merge_fetches"), "{m}"),
            Err(e) => panic!("refused for another reason: {e}"),
            Ok(_) => panic!("ran with merged fetches"),
        }
    }
}
