//! Experiment files: which topology, which workload, which task schedulers
//! (the first is the baseline every figure is normalized to), which coflow
//! scheduler, which engine knobs, which seed. `ocslab sim` runs them in the
//! simulator and `ocslab run` on the kernel fabric, the same file for both.
//!
//! As for topologies, a file parses into [`RawExperiment`]
//! (`deny_unknown_fields`: a typo is an error naming the key), then
//! [`Experiment::parse`] validates it into an [`Experiment`] that knows how
//! to build the jobs, the policies and the engine settings. Every error is
//! an [`ExperimentError`] naming the file, the line, the field, and what
//! would be valid. Paths inside (topology, trace) are relative to the
//! experiment file.
//!
//! ```toml
//! name = "lab-fair-vs-delay"
//! topology = "../topologies/lab.toml"
//! seed = 1
//! task_schedulers = ["fair", "fifo", "delay"]
//! coflow_scheduler = "fair"
//! slow_start = 0.05
//!
//! [workload]
//! kind = "generated"
//! jobs = 40
//! users = 4
//! arrivals = { process = "poisson", mean_gap = "20s" }
//! ```

use crate::engine::{EngineConfig, SlotConfig};
use crate::model::job::Job;
use crate::policy::{self, TaskPolicy};
use crate::trace::swim::{self, SwimJob, SwimModel};
use crate::workload::generated::{GeneratedWorkload, WorkloadError};
use crate::workload::spec;
use ocslab_core::topology::{locate, unknown_key};
use ocslab_emulator::{HostId, Nanos, Topology};
use ocslab_sim::{LoadSampling, SimConfig};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// An experiment file as written.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RawExperiment {
    /// A short name (results folders use it).
    pub name: String,
    /// The topology file, relative to this file.
    pub topology: PathBuf,
    /// The seed of every random draw (workload, placement). Default 0.
    #[serde(default)]
    pub seed: u64,
    /// Task schedulers to compare; the first is the baseline.
    pub task_schedulers: Vec<String>,
    /// Coflow scheduler of the network (`fair`, `fifo`, `varys`, `aalo`, `sunflow`).
    #[serde(default = "default_coflow")]
    pub coflow_scheduler: String,
    /// Reduce slow-start (fraction of maps done before reduces start).
    #[serde(default = "default_slow_start")]
    pub slow_start: f64,
    /// Network model of the simulator.
    #[serde(default)]
    pub network: NetworkKind,
    /// Engine knobs.
    #[serde(default)]
    pub engine: RawEngine,
    /// Parameters per task scheduler, e.g. `[scheduler_params.delay] node_wait = "3s"`.
    #[serde(default)]
    pub scheduler_params: BTreeMap<String, toml::Table>,
    /// The workload.
    pub workload: RawWorkload,
    /// Perturbations ([`crate::perturb`]): slow hosts, stragglers, killed agents, links down.
    #[serde(default)]
    pub perturbations: Vec<crate::perturb::RawPerturbation>,
}

fn default_coflow() -> String {
    "fair".into()
}
fn default_slow_start() -> f64 {
    0.05
}

/// The simulator's network model.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum NetworkKind {
    /// The fluid model: max-min fair EPS, OCS circuits, the coflow scheduler.
    #[default]
    Fluid,
    /// No contention: every flow at the host NIC rate, over EPS
    /// ([`ocslab_sim::FixedRateNetwork`]); separates compute from network effects.
    Uncontended,
}

/// The `[engine]` table.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RawEngine {
    /// Remote maps read their block over the network. Default true.
    #[serde(default = "yes")]
    pub input_reads: bool,
    /// Shuffle flows wait until all of a job's reduces are placed. Default false.
    #[serde(default)]
    pub hold_shuffle_until_reduces_placed: bool,
    /// Fetch flows in flight per reduce attempt (Hadoop's
    /// `mapreduce.reduce.shuffle.parallelcopies`, 5). Default: no limit.
    #[serde(default)]
    pub parallel_copies: Option<u32>,
    /// Fraction of slots reduces waiting on maps may hold. Default 0.5.
    #[serde(default = "default_rampup")]
    pub reduce_rampup_limit: f64,
    /// Fixed map/reduce slots per host, e.g. `{ map = 2, reduce = 1 }`
    /// (default: shared slots, the topology's `slots_per_host`).
    #[serde(default)]
    pub slots: Option<RawSlots>,
    /// Offer free slots again this often while work waits (default: only on events).
    #[serde(default)]
    pub heartbeat: Option<Nanos>,
    /// Relative host speeds, e.g. `{ r0h1 = 0.5 }` (default 1).
    #[serde(default)]
    pub host_speed: BTreeMap<String, f64>,
    /// Keep one record per flow (flows.csv). Default true.
    #[serde(default = "yes")]
    pub record_flows: bool,
    /// Simulation only: a job's shuffle fetches between two hosts that
    /// start together go as one weighted flow
    /// ([`ocslab_core::engine::EngineConfig::merge_fetches`]). Default false.
    #[serde(default)]
    pub merge_fetches: bool,
    /// Feed link-load samples this often (when the network model measures them).
    #[serde(default)]
    pub load_sample_interval: Option<Nanos>,
    /// Simulation only: what a load sample reads, `"mean"` (each link's
    /// mean utilization since the previous sample, as byte counters and
    /// the emulator give; the default) or `"instant"` (its rate then).
    #[serde(default)]
    pub load_sampling: LoadSampling,
    /// Simulation only: advance time in steps of this length, handling
    /// task and flow completions, arrivals and wake-ups at the end of the
    /// step they fall in (CoflowSim's 8 ms quantum); circuits keep their
    /// exact times. Default: every event at its own time.
    #[serde(default)]
    pub quantum: Option<Nanos>,
}

impl Default for RawEngine {
    fn default() -> Self {
        RawEngine {
            input_reads: true,
            hold_shuffle_until_reduces_placed: false,
            parallel_copies: None,
            reduce_rampup_limit: default_rampup(),
            slots: None,
            heartbeat: None,
            host_speed: BTreeMap::new(),
            record_flows: true,
            merge_fetches: false,
            load_sample_interval: None,
            load_sampling: LoadSampling::default(),
            quantum: None,
        }
    }
}

fn yes() -> bool {
    true
}
fn default_rampup() -> f64 {
    0.5
}

/// Fixed slot split.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct RawSlots {
    /// Map slots per host.
    pub map: u32,
    /// Reduce slots per host.
    pub reduce: u32,
}

/// The `[workload]` table: `kind = "generated"` or `kind = "swim"`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum RawWorkload {
    /// A synthetic mix ([`GeneratedWorkload`]).
    Generated(GeneratedWorkload),
    /// A SWIM trace ([`SwimModel`]).
    Swim(SwimModel),
    /// ShuffleWatcher's job mix ([`spec::MixSpec`]).
    ShufflewatcherMix(spec::MixSpec),
    /// Dawn's iterative ML chains ([`spec::MlSpec`]).
    MlChains(spec::MlSpec),
    /// Dawn's TPC-H-like query DAGs ([`spec::QuerySpec`]).
    TpchQueries(spec::QuerySpec),
    /// Co-scheduler's Sec. V draw from a SWIM trace ([`spec::Sec5Spec`]).
    CoschedulerSec5(spec::Sec5Spec),
}

/// The workload, ready to produce jobs.
#[derive(Debug, Clone, PartialEq)]
pub enum Workload {
    /// Synthetic.
    Generated(GeneratedWorkload),
    /// From a SWIM trace (already read).
    Swim {
        /// How trace jobs become jobs.
        model: SwimModel,
        /// The trace's jobs.
        trace: Vec<SwimJob>,
    },
    /// A paper workload without a trace (ShuffleWatcher's mix, Dawn's DAGs).
    Paper(PaperWorkload),
    /// Co-scheduler's Sec. V workload (the trace already read).
    CoschedulerSec5 {
        /// The settings.
        spec: spec::Sec5Spec,
        /// The trace's jobs.
        trace: Vec<SwimJob>,
    },
}

/// The paper workloads generated without a trace.
#[derive(Debug, Clone, PartialEq)]
pub enum PaperWorkload {
    /// ShuffleWatcher's mix.
    ShufflewatcherMix(spec::MixSpec),
    /// Dawn's ML chains.
    MlChains(spec::MlSpec),
    /// Dawn's query DAGs.
    TpchQueries(spec::QuerySpec),
}

/// A validated experiment.
#[derive(Debug, Clone)]
pub struct Experiment {
    /// Its name.
    pub name: String,
    /// The file it came from.
    pub file: PathBuf,
    /// The file's text, as run.
    pub text: String,
    /// The topology file (resolved).
    pub topology_file: PathBuf,
    /// The topology file's text, as run.
    pub topology_text: String,
    /// The topology.
    pub topology: Topology,
    /// The seed.
    pub seed: u64,
    /// Task schedulers, baseline first.
    pub task_schedulers: Vec<String>,
    /// Their parameters.
    pub scheduler_params: BTreeMap<String, toml::Table>,
    /// The coflow scheduler.
    pub coflow_scheduler: String,
    /// The network model.
    pub network: NetworkKind,
    /// Engine settings.
    pub engine: EngineConfig,
    /// Simulation-driver settings.
    pub sim: SimConfig,
    /// The workload.
    pub workload: Workload,
    /// Perturbations, validated against the topology.
    pub perturbations: Vec<crate::perturb::Perturbation>,
}

/// An error in an experiment (or in a file it names): file, line, field,
/// what is wrong and what would be valid; the same type as a topology file's.
pub type ExperimentError = ocslab_emulator::topology::FileError;

struct Src<'a> {
    file: &'a Path,
    text: &'a str,
}

impl Src<'_> {
    fn err(&self, field: &str, message: impl Into<String>) -> ExperimentError {
        let message = message.into();
        // The unknown key itself, the field, the field as a table header,
        // or (for `workload.classes[1].maps`) the array it sits in.
        let line = unknown_key(&message)
            .and_then(|k| locate(self.text, &format!("{field}.{k}")))
            .or_else(|| locate(self.text, field))
            .or_else(|| locate(self.text, &format!("{field}.")))
            .or_else(|| {
                field
                    .split_once('[')
                    .and_then(|(head, _)| locate(self.text, head))
            });
        ExperimentError {
            file: self.file.to_path_buf(),
            line,
            field: field.to_string(),
            message,
        }
    }
}

impl Experiment {
    /// Reads and validates an experiment file and the files it names.
    pub fn load(path: &Path) -> Result<Experiment, ExperimentError> {
        let text = std::fs::read_to_string(path).map_err(|e| ExperimentError {
            file: path.to_path_buf(),
            line: None,
            field: String::new(),
            message: format!("cannot read: {e}"),
        })?;
        Experiment::parse(&text, path)
    }

    /// Parses and validates `text` (named `file`; relative paths inside
    /// resolve against its folder).
    pub fn parse(text: &str, file: &Path) -> Result<Experiment, ExperimentError> {
        let src = Src { file, text };
        let raw: RawExperiment =
            toml::from_str(text).map_err(|e| ExperimentError::from_toml(src.file, text, &e))?;
        let dir = file.parent().unwrap_or(Path::new("."));
        if raw.name.trim().is_empty()
            || !raw
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(src.err(
                "name",
                format!("{:?} must be non-empty letters, digits, '-' or '_'", raw.name),
            ));
        }
        let topology_file = dir.join(&raw.topology);
        let topology_text = std::fs::read_to_string(&topology_file).map_err(|e| {
            src.err(
                "topology",
                format!("cannot read {}: {e}", topology_file.display()),
            )
        })?;
        let topology = Topology::parse(&topology_text, &topology_file).map_err(|e| ExperimentError {
            file: e.file,
            line: e.line,
            field: e.field,
            message: e.message,
        })?;
        if raw.task_schedulers.is_empty() {
            return Err(src.err(
                "task_schedulers",
                format!(
                    "needs at least one, e.g. [\"fair\"]; known: {}",
                    policy::names().join(", ")
                ),
            ));
        }
        for (i, name) in raw.task_schedulers.iter().enumerate() {
            if raw.task_schedulers[..i].contains(name) {
                return Err(src.err("task_schedulers", format!("{name:?} is listed twice")));
            }
            policy::by_name(name, raw.scheduler_params.get(name)).map_err(|e| match e {
                policy::PolicyError::Unknown { .. } => src.err("task_schedulers", e.to_string()),
                policy::PolicyError::Params { .. } => {
                    src.err(&format!("scheduler_params.{name}"), e.to_string())
                }
            })?;
        }
        if let Some(name) = raw
            .scheduler_params
            .keys()
            .find(|k| !raw.task_schedulers.contains(k))
        {
            return Err(src.err(
                &format!("scheduler_params.{name}"),
                format!("{name:?} is not among task_schedulers"),
            ));
        }
        if raw.network == NetworkKind::Fluid {
            crate::coflow::by_name(&raw.coflow_scheduler)
                .map_err(|e| src.err("coflow_scheduler", e.to_string()))?;
        }
        let mut host_speed = BTreeMap::new();
        for (name, speed) in &raw.engine.host_speed {
            let h: HostId = name
                .parse()
                .map_err(|e: String| src.err("engine.host_speed", e))?;
            if !topology.contains(h) {
                return Err(src.err("engine.host_speed", format!("{h} is not a host of the topology")));
            }
            host_speed.insert(h, *speed);
        }
        let engine = EngineConfig {
            slow_start: raw.slow_start,
            slots: match raw.engine.slots {
                None => SlotConfig::Shared,
                Some(s) => SlotConfig::Split {
                    map: s.map,
                    reduce: s.reduce,
                },
            },
            reduce_rampup_limit: raw.engine.reduce_rampup_limit,
            input_reads: raw.engine.input_reads,
            hold_shuffle_until_reduces_placed: raw.engine.hold_shuffle_until_reduces_placed,
            parallel_copies: raw.engine.parallel_copies,
            host_speed,
            heartbeat: raw.engine.heartbeat,
            record_flows: raw.engine.record_flows,
            merge_fetches: raw.engine.merge_fetches,
            placement_seed: raw.seed,
        };
        crate::engine::Engine::new(
            &topology,
            Vec::new(),
            policy::by_name("fifo", None).map_err(|e| src.err("", e.to_string()))?,
            engine.clone(),
        )
        .map_err(|e| match e {
            crate::engine::EngineError::Config { field, message } => {
                let f = if field == "slow_start" {
                    field
                } else {
                    format!("engine.{field}")
                };
                src.err(&f, message)
            }
            other => src.err("engine", other.to_string()),
        })?;
        let workload = match raw.workload {
            RawWorkload::Generated(g) => {
                g.validate()
                    .map_err(|e| src.err(&format!("workload.{}", e.field), e.message))?;
                Workload::Generated(g)
            }
            RawWorkload::Swim(mut m) => {
                m.validate()
                    .map_err(|e| src.err(&format!("workload.{}", e.field), e.message))?;
                if m.trace.as_os_str().is_empty() {
                    return Err(src.err(
                        "workload.trace",
                        "needs the SWIM trace file, e.g. \"../traces/FB-2010_samples_24_times_1hr_0.tsv\"",
                    ));
                }
                m.trace = dir.join(&m.trace);
                let trace = swim::load(&m.trace).map_err(|e| ExperimentError {
                    file: e.file,
                    line: (e.line > 0).then_some(e.line),
                    field: e.field,
                    message: e.message,
                })?;
                Workload::Swim { model: m, trace }
            }
            RawWorkload::ShufflewatcherMix(m) => {
                m.validate().map_err(|e| werr(&src, e))?;
                Workload::Paper(PaperWorkload::ShufflewatcherMix(m))
            }
            RawWorkload::MlChains(m) => {
                m.validate().map_err(|e| werr(&src, e))?;
                Workload::Paper(PaperWorkload::MlChains(m))
            }
            RawWorkload::TpchQueries(q) => {
                q.validate().map_err(|e| werr(&src, e))?;
                Workload::Paper(PaperWorkload::TpchQueries(q))
            }
            RawWorkload::CoschedulerSec5(mut s) => {
                s.validate().map_err(|e| werr(&src, e))?;
                s.trace = dir.join(&s.trace);
                let trace = swim::load(&s.trace).map_err(|e| ExperimentError {
                    file: e.file,
                    line: (e.line > 0).then_some(e.line),
                    field: e.field,
                    message: e.message,
                })?;
                Workload::CoschedulerSec5 { spec: s, trace }
            }
        };
        let perturbations = raw
            .perturbations
            .iter()
            .enumerate()
            .map(|(i, p)| crate::perturb::Perturbation::validate(i, p, &topology))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| src.err(&format!("perturbations[{}].{}", e.index, e.field), e.message))?;
        Ok(Experiment {
            name: raw.name,
            perturbations,
            file: file.to_path_buf(),
            text: text.to_string(),
            topology_file,
            topology_text,
            topology,
            seed: raw.seed,
            task_schedulers: raw.task_schedulers,
            scheduler_params: raw.scheduler_params,
            coflow_scheduler: raw.coflow_scheduler,
            network: raw.network,
            engine,
            sim: SimConfig {
                load_sample_interval: raw.engine.load_sample_interval,
                load_sampling: raw.engine.load_sampling,
                time_limit: None,
                quantum: raw.engine.quantum,
            },
            workload,
        })
    }

    /// This experiment with seed `seed`: its workload and the engine's
    /// random draws (placement, fetchers) both follow it.
    pub fn with_seed(&self, seed: u64) -> Experiment {
        let mut e = self.clone();
        e.seed = seed;
        e.engine.placement_seed = seed;
        e
    }

    /// Keeps only the task schedulers named in `names`, in the file's order
    /// (its first stays the one the others are normalized to); an empty
    /// list keeps them all. Errs naming a scheduler the file does not run.
    pub fn keep_task_schedulers(&mut self, names: &[String]) -> Result<(), String> {
        if let Some(n) = names.iter().find(|n| !self.task_schedulers.contains(n)) {
            return Err(format!(
                "{n} is not among the experiment's task_schedulers ({})",
                self.task_schedulers.join(", ")
            ));
        }
        if !names.is_empty() {
            self.task_schedulers.retain(|s| names.contains(s));
        }
        Ok(())
    }

    /// The jobs of the workload (deterministic for the seed).
    pub fn jobs(&self) -> Result<Vec<Job>, ExperimentError> {
        let src = Src {
            file: &self.file,
            text: &self.text,
        };
        match &self.workload {
            Workload::Generated(g) => g
                .generate(&self.topology, self.seed)
                .map_err(|e| src.err(&format!("workload.{}", e.field), e.message)),
            Workload::Swim { model, trace } => model
                .to_jobs(trace, &self.topology, self.seed)
                .map_err(|e| src.err(&format!("workload.{}", e.field), e.message)),
            Workload::Paper(PaperWorkload::ShufflewatcherMix(m)) => Ok(m.jobs(&self.topology, self.seed)),
            Workload::Paper(PaperWorkload::MlChains(m)) => Ok(m.jobs(&self.topology, self.seed)),
            Workload::Paper(PaperWorkload::TpchQueries(q)) => Ok(q.jobs(&self.topology, self.seed)),
            Workload::CoschedulerSec5 { spec, trace } => spec
                .jobs(trace, &self.topology, self.seed)
                .map_err(|e| werr(&src, e)),
        }
    }

    /// A fresh instance of task scheduler `name` with this experiment's parameters.
    pub fn policy(&self, name: &str) -> Result<Box<dyn TaskPolicy>, policy::PolicyError> {
        policy::by_name(name, self.scheduler_params.get(name))
    }
}

/// A workload error as an experiment error naming `workload.<field>`.
fn werr(src: &Src<'_>, e: WorkloadError) -> ExperimentError {
    src.err(&format!("workload.{}", e.field), e.message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).expect("write");
        p
    }

    fn fixture(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("ocslab-exp-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("topologies")).expect("mkdir");
        write(
            &dir.join("topologies"),
            "t.toml",
            "name = \"t\"\nracks = 2\nhosts_per_rack = 2\nsimulation_only = true\n[eps]\nhost_rate = \"1Gbit/s\"\noversubscription = 2.0\n[ocs]\nports_per_rack = 0\nport_rate = \"0bit/s\"\nreconfig_delay = \"0ms\"\nelephant_threshold = \"0B\"\n",
        );
        dir
    }

    const GOOD: &str = r#"name = "e"
topology = "topologies/t.toml"
seed = 3
task_schedulers = ["fair", "delay"]
coflow_scheduler = "varys"

[scheduler_params.delay]
node_wait = "2s"

[workload]
kind = "generated"
jobs = 5
users = 2
arrivals = { process = "poisson", mean_gap = "10s" }
"#;

    #[test]
    fn a_good_file_validates_and_makes_jobs() {
        let dir = fixture("good");
        let e = Experiment::parse(GOOD, &dir.join("e.toml")).unwrap();
        assert_eq!(e.task_schedulers, vec!["fair", "delay"]);
        assert_eq!(e.topology.racks, 2);
        assert_eq!(e.jobs().unwrap().len(), 5);
        assert_eq!(e.jobs().unwrap(), e.jobs().unwrap());
        std::fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn errors_name_file_line_and_field() {
        let dir = fixture("bad");
        let f = dir.join("e.toml");
        let e = Experiment::parse(
            &GOOD.replace("[\"fair\", \"delay\"]", "[\"fair\", \"dealy\"]"),
            &f,
        )
        .unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (Some(4), "task_schedulers"));
        assert!(e.message.contains("delay"), "{e}");
        let e = Experiment::parse(&GOOD.replace("jobs = 5", "jobs = 5\njbos = 2"), &f).unwrap_err();
        assert_eq!(e.line, Some(13));
        assert!(e.message.contains("jbos"), "{e}");
        let e = Experiment::parse(&GOOD.replace("topology = \"topologies/t.toml\"\n", ""), &f).unwrap_err();
        assert_eq!(e.field, "topology", "{e}");
        assert!(e.message.contains("missing"), "{e}");
        let e = Experiment::parse(&GOOD.replace("node_wait", "node_wiat"), &f).unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (Some(8), "scheduler_params.delay"));
        let e = Experiment::parse(&GOOD.replace("jobs = 5", "jobs = 0"), &f).unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (Some(12), "workload.jobs"));
        let e = Experiment::parse(&GOOD.replace("seed = 3", "seed = 3\nslow_start = 2.0"), &f).unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (Some(4), "slow_start"));
        let zero = GOOD.replace("[workload]", "[engine]\nparallel_copies = 0\n\n[workload]");
        let e = Experiment::parse(&zero, &f).unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (Some(11), "engine.parallel_copies"));
        assert!(e.message.contains("at least 1"), "{e}");
        let five = GOOD.replace("[workload]", "[engine]\nparallel_copies = 5\n\n[workload]");
        let e = Experiment::parse(&five, &f).unwrap();
        assert_eq!(e.engine.parallel_copies, Some(5));
        assert!(!e.engine.merge_fetches);
        let merged = GOOD.replace("[workload]", "[engine]\nmerge_fetches = true\n\n[workload]");
        assert!(Experiment::parse(&merged, &f).unwrap().engine.merge_fetches);
        assert_eq!(
            Experiment::parse(GOOD, &f).unwrap().sim.load_sampling,
            LoadSampling::Mean
        );
        let instant = GOOD.replace(
            "[workload]",
            "[engine]\nload_sampling = \"instant\"\n\n[workload]",
        );
        let e = Experiment::parse(&instant, &f).unwrap();
        assert_eq!(e.sim.load_sampling, LoadSampling::Instant);
        let typo = GOOD.replace(
            "[workload]",
            "[engine]\nload_sampling = \"instnat\"\n\n[workload]",
        );
        let e = Experiment::parse(&typo, &f).unwrap_err();
        assert_eq!(e.line, Some(11), "{e}");
        assert!(e.message.contains("mean") && e.message.contains("instant"), "{e}");
        let e = Experiment::parse(&GOOD.replace("varys", "varis"), &f).unwrap_err();
        assert_eq!(e.field, "coflow_scheduler");
        assert!(
            e.to_string()
                .starts_with(&format!("{}:5: field `coflow_scheduler`", f.display())),
            "{e}"
        );
        std::fs::remove_dir_all(dir).ok();
    }
}
