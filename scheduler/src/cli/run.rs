//! `ocslab run EXPERIMENT [--json] [--out DIR]`: runs every task scheduler
//! of an experiment with real bytes on the kernel fabric (the same
//! experiment files and the same report as `ocslab sim`), plus what was
//! measured on the wire: FCT/CCT percentiles from the agents' timestamps,
//! bytes over EPS vs OCS from the kernel's counters, verified flows, and
//! each coflow's measured CCT against the fluid model's prediction; with
//! `--model-draws N`, each scheduler's figures against the model's run
//! and the band of its twins ([`crate::runner::model`]). The runs go
//! through [`crate::runner`] with its [`Emulator`] driver.

use crate::emu::{EmuConfig, FabricChoice};
use crate::experiment::Experiment;
use crate::progress::Progress;
use crate::report::folder::{self, Staged};
use crate::runner::{self, model, Emulator};
use anyhow::{Context, Result};
use ocslab_agent::protocol::Transport;
use ocslab_emulator::fabric::RunId;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Arguments of `ocslab run`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  sudo ocslab run experiments/lab-baselines.toml\n  \
                        ocslab up topologies/lab.toml --detach && ocslab run EXP.toml --run 3f9a --json"
)]
pub struct RunArgs {
    /// The experiment file (TOML), as for `ocslab sim`.
    pub experiment: PathBuf,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Results folder (default: results/<experiment>-emu-<UTC time>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Use the fabric of this running lab (`ocslab up --detach`) instead of building one.
    #[arg(long)]
    pub run: Option<RunId>,
    /// Give up on a scheduler's run after this many seconds.
    #[arg(long, default_value_t = 600)]
    pub time_limit: u64,
    /// Data-plane transport of the agents.
    #[arg(long, value_parser = ["tcp", "quic"], default_value = "tcp")]
    pub transport: String,
    /// Add a perturbation (repeatable), carried out for real: speed:HOST:S,
    /// straggler:HOST:S@AT+FOR, kill:HOST@AT+DOWN, link-down:LINK@AT+FOR
    /// (LINK: rR-up, rRhH-nic or rR-ocsP; see `ocslab sim --help`).
    #[arg(long = "perturb", value_name = "SPEC")]
    pub perturb: Vec<String>,
    /// With timed perturbations, do not run each scheduler a second time
    /// without them (the report then has no JCT without them).
    #[arg(long)]
    pub no_unperturbed: bool,
    /// Then set each scheduler's average JCT, average CCT and cross-rack
    /// bytes against the simulator's at TCP's payload rate, and against
    /// the band of this many simulated twins with link rates and host
    /// speeds within ±2 % (the plain run included; `ocslab demo` runs 40),
    /// written to model.json.
    #[arg(long, default_value_t = 0)]
    pub model_draws: u32,
}

/// Runs `ocslab run`.
pub fn run(a: RunArgs) -> Result<ExitCode> {
    super::interrupt::tear_down_on_signal_as_root()?;
    let mut exp = Experiment::load(&a.experiment)?;
    for spec in &a.perturb {
        let p = crate::perturb::Perturbation::parse_cli(spec, &exp.topology)
            .map_err(|e| anyhow::anyhow!("--perturb {e}"))?;
        exp.perturbations.push(p);
    }
    exp.topology
        .check_emulable(
            &exp.topology_file,
            &ocslab_emulator::fabric::capacity::emulating_box(),
        )
        .context("this experiment's topology cannot run on this box; use `ocslab sim`")?;
    let cfg = EmuConfig {
        transport: if a.transport == "quic" {
            Transport::Quic
        } else {
            Transport::Tcp
        },
        time_limit: Duration::from_secs(a.time_limit),
        ..EmuConfig::default()
    };
    let fabric = a.run.map(FabricChoice::Attach);
    let mut emulator = Emulator::with(cfg, fabric, !a.no_unperturbed);
    let bar = Progress::new(0, a.json);
    let done = runner::run_all(&mut emulator, &exp, &bar, 1)?;
    let dir = a
        .out
        .unwrap_or_else(|| folder::dated(&format!("results/{}-emu", exp.name)));
    let staged = Staged::begin(&dir)?;
    done.write(staged.path(), &exp, &emulator)
        .with_context(|| format!("writing results to {}", dir.display()))?;
    let against = if a.model_draws > 0 {
        model::check_after_real(&exp, &done.summaries, a.model_draws, &bar)
    } else {
        None
    };
    if let Some(m) = &against {
        let file = staged.path().join("model.json");
        std::fs::write(&file, serde_json::to_string_pretty(m)? + "\n")
            .with_context(|| format!("writing {}", file.display()))?;
    }
    staged.finish()?;
    let runs = emulator.into_runs(&done.summaries);
    if a.json {
        let v = serde_json::json!({
            "experiment": exp.name,
            "seed": exp.seed,
            "topology": exp.topology.name,
            "scale": exp.topology.scale,
            "coflow_scheduler": exp.coflow_scheduler,
            "driver": "emu",
            "schedulers": runs.iter().map(|r| {
                let mut s = serde_json::to_value(&r.summary).unwrap_or_default();
                if let Some(m) = s.as_object_mut() {
                    m.insert("wire".into(), serde_json::json!({
                        "fct": r.outcome.wire.fct,
                        "cct": r.outcome.wire.cct,
                        "verified_flows": r.outcome.wire.verified_flows,
                        "corrupt_flows": r.outcome.wire.corrupt_flows,
                        "lost_flows": r.outcome.wire.lost_flows,
                        "resent_flows": r.outcome.wire.resent_flows,
                        "fabric": r.outcome.wire.fabric,
                        "dead_hosts": r.outcome.wire.dead_hosts,
                        "wall_s": r.outcome.wire.wall_s,
                    }));
                    m.insert("cct_vs_sim".into(), serde_json::to_value(&r.cct_vs_sim).unwrap_or_default());
                    if let Some(p) = &r.perturbations {
                        m.insert("perturbations".into(), serde_json::to_value(p).unwrap_or_default());
                    }
                }
                s
            }).collect::<Vec<_>>(),
            "model": against,
            "results_dir": dir,
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        crate::runner::table::emu_table(&mut std::io::stdout().lock(), &exp, &runs)?;
        if let Some(m) = &against {
            println!("\n{m}\n");
        }
        println!("results: {}", dir.display());
    }
    let corrupt: u64 = runs.iter().map(|r| r.outcome.wire.corrupt_flows).sum();
    if corrupt > 0 {
        eprintln!("error: {corrupt} flows arrived with a wrong checksum (see wire_flows.csv)");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}
