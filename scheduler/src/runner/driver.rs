//! What runs one task scheduler of an experiment: the flow-level simulator
//! ([`Simulator`], virtual time) or the kernel fabric with real bytes
//! ([`Emulator`], the emulation driver of [`crate::emu`]). The runner only
//! sees [`Driver`], so tables, results folders and checks are the same
//! whichever runs it.

use super::RunnerError;
use crate::emu::compare::{payload_rates, rates_times};
use crate::emu::experiment::{self, SchedulerRun};
use crate::emu::{EmuConfig, FabricChoice};
use crate::experiment::Experiment;
use crate::model::job::Job;
use crate::report::{summarize, SchedulerSummary};
use crate::sim::{run_scheduler_on, SimOutcome, SimProgress};
use ocslab_core::topology::Topology;
use std::borrow::Cow;
use std::path::Path;
use std::time::Duration;

/// Runs one task scheduler of an experiment on some substrate.
pub trait Driver {
    /// `"sim"` or `"emu"`, as `run.json` and the results folder's name say.
    fn name(&self) -> &'static str;

    /// Runs `jobs` placed by task scheduler `scheduler` under the experiment's
    /// topology, coflow scheduler and engine settings; `progress` is called as
    /// jobs finish. The outcome has the simulator's shape whatever the driver.
    fn run(
        &mut self,
        exp: &Experiment,
        scheduler: &str,
        jobs: Vec<Job>,
        progress: &mut dyn FnMut(&SimProgress),
    ) -> Result<SimOutcome, RunnerError>;

    /// The summary of the `run`-th outcome this driver returned (`out`).
    /// By default the simulator's ([`summarize`]: bytes per fabric from the
    /// flow records).
    fn summary(&self, _run: usize, out: &SimOutcome) -> SchedulerSummary {
        summarize(out)
    }

    /// A driver of the same kind that can run another scheduler at the same
    /// time, on another thread, or `None` if this driver runs one
    /// scheduler at a time (the emulator: one fabric, real time). The
    /// runner runs schedulers concurrently only through forks.
    fn fork(&self) -> Option<Box<dyn Driver + Send>> {
        None
    }

    /// Entries this driver adds to `run.json`. None by default.
    fn run_json(&self) -> Vec<(&'static str, serde_json::Value)> {
        Vec::new()
    }

    /// Writes what this driver measured beyond the outcomes into the
    /// results folder `dir` (after the common files). Nothing by default.
    fn write_extras(&self, _dir: &Path) -> Result<(), RunnerError> {
        Ok(())
    }
}

/// The flow-level simulator (virtual time, the fluid network).
#[derive(Clone, Copy, Debug)]
pub struct Simulator {
    /// The rates its links run at.
    pub link_rates: LinkRates,
    /// What those rates are then multiplied by (1 but in a jittered twin,
    /// [`super::jitter`]).
    pub rate_factor: f64,
}

impl Default for Simulator {
    fn default() -> Self {
        Simulator {
            link_rates: LinkRates::default(),
            rate_factor: 1.0,
        }
    }
}

/// The rates the simulator gives the topology's links.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LinkRates {
    /// The topology's rates: every byte on a link is a byte of a flow.
    #[default]
    Nominal,
    /// What a TCP stream's payload gets of each link: 1448 of every 1514
    /// bytes ([`payload_rates`]), the rates real bytes reach on the kernel
    /// fabric and what `cct_vs_sim.csv` compares them with.
    TcpPayload,
}

impl LinkRates {
    /// Its name in `run.json`.
    pub fn name(self) -> &'static str {
        match self {
            LinkRates::Nominal => "nominal",
            LinkRates::TcpPayload => "tcp-payload",
        }
    }
}

impl Simulator {
    /// The topology the network's links run at for `exp`: its own, or with
    /// [`LinkRates::TcpPayload`] its shaped rates cut to TCP's payload,
    /// then multiplied by `rate_factor`. The engine and the task scheduler
    /// always see the experiment's.
    pub fn wire<'a>(&self, exp: &'a Experiment) -> Cow<'a, Topology> {
        let rates = match self.link_rates {
            LinkRates::Nominal => Cow::Borrowed(&exp.topology),
            LinkRates::TcpPayload => Cow::Owned(payload_rates(&exp.topology)),
        };
        if self.rate_factor == 1.0 {
            rates
        } else {
            Cow::Owned(rates_times(&rates, self.rate_factor))
        }
    }
}

impl Driver for Simulator {
    fn name(&self) -> &'static str {
        "sim"
    }

    fn run(
        &mut self,
        exp: &Experiment,
        scheduler: &str,
        jobs: Vec<Job>,
        progress: &mut dyn FnMut(&SimProgress),
    ) -> Result<SimOutcome, RunnerError> {
        Ok(run_scheduler_on(exp, &self.wire(exp), scheduler, jobs, progress)?)
    }

    /// Each simulated run owns its engine, network and policies and reads
    /// no clock, so runs on other threads give the same outcomes.
    fn fork(&self) -> Option<Box<dyn Driver + Send>> {
        Some(Box::new(*self))
    }

    fn run_json(&self) -> Vec<(&'static str, serde_json::Value)> {
        let mut v = vec![("link_rates", self.link_rates.name().into())];
        if self.rate_factor != 1.0 {
            v.push(("link_rate_factor", self.rate_factor.into()));
        }
        v
    }
}

/// The kernel fabric with real bytes ([`crate::emu::experiment`]): each
/// scheduler on a fresh fabric with one agent per host (or on a lab that
/// is up), the experiment's perturbations carried out for real, each
/// coflow's CCT compared with the fluid model's. The table's EPS and OCS
/// bytes are then the fabric's own counters (EPS uplinks, OCS ports), and
/// each scheduler's folder also gets what was measured on the wire
/// (`wire_flows.csv`, `wire_coflows.csv`, `wire_summary.json`) and
/// `cct_vs_sim.csv`; `run.json` gets each scheduler's wire summary.
#[derive(Debug)]
pub struct Emulator {
    config: EmuConfig,
    fabric: Option<FabricChoice>,
    unperturbed: bool,
    runs: Vec<SchedulerRun>,
}

impl Emulator {
    /// An emulator building each scheduler's fabric from the experiment's
    /// topology file, giving up on a scheduler's run after `time_limit`.
    pub fn new(time_limit: Duration) -> Emulator {
        Emulator::with(
            EmuConfig {
                time_limit,
                ..EmuConfig::default()
            },
            None,
            false,
        )
    }

    /// An emulator with `config`, on `fabric` (`None`: build one from the
    /// experiment's topology file for each scheduler). With `unperturbed`,
    /// a scheduler whose experiment has timed perturbations also runs
    /// without them, for comparison.
    pub fn with(config: EmuConfig, fabric: Option<FabricChoice>, unperturbed: bool) -> Emulator {
        Emulator {
            config,
            fabric,
            unperturbed,
            runs: Vec::new(),
        }
    }

    /// The runs so far, in order, with summaries not normalized.
    pub fn runs(&self) -> &[SchedulerRun] {
        &self.runs
    }

    /// The runs, each with its summary from `normalized` (the runner's).
    pub fn into_runs(self, normalized: &[SchedulerSummary]) -> Vec<SchedulerRun> {
        let mut runs = self.runs;
        for (r, s) in runs.iter_mut().zip(normalized) {
            r.summary = s.clone();
        }
        runs
    }
}

impl Driver for Emulator {
    fn name(&self) -> &'static str {
        "emu"
    }

    fn run(
        &mut self,
        exp: &Experiment,
        scheduler: &str,
        jobs: Vec<Job>,
        _progress: &mut dyn FnMut(&SimProgress),
    ) -> Result<SimOutcome, RunnerError> {
        let fail = |message: String| RunnerError::Emu {
            scheduler: scheduler.to_string(),
            message,
        };
        let fabric = match &self.fabric {
            Some(f) => f.clone(),
            None => {
                exp.topology
                    .check_emulable(
                        &exp.topology_file,
                        &ocslab_emulator::fabric::capacity::emulating_box(),
                    )
                    .map_err(|e| fail(e.to_string()))?;
                FabricChoice::Build {
                    topology_file: Some(exp.topology_file.clone()),
                }
            }
        };
        let run = experiment::run_scheduler(exp, &self.config, &fabric, scheduler, jobs, self.unperturbed)
            .map_err(|e| fail(e.to_string()))?;
        let sim = experiment::as_sim_outcome(&run.outcome);
        self.runs.push(run);
        Ok(sim)
    }

    /// The cross-rack bytes per fabric measured on the wire (kernel counters).
    fn summary(&self, run: usize, out: &SimOutcome) -> SchedulerSummary {
        match self.runs.get(run) {
            Some(r) => r.summary.clone(),
            None => summarize(out),
        }
    }

    fn run_json(&self) -> Vec<(&'static str, serde_json::Value)> {
        vec![("wire", experiment::run_json_wire(&self.runs))]
    }

    fn write_extras(&self, dir: &Path) -> Result<(), RunnerError> {
        experiment::write_extras(dir, &self.runs).map_err(|e| RunnerError::Io {
            path: dir.to_path_buf(),
            source: std::io::Error::other(e.to_string()),
        })
    }
}
