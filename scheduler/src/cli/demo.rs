//! `ocslab demo [--sim] [--json] [--out DIR]`: the main job (see
//! [`crate::demo`]). Prints the table (each figure also normalized to
//! Fair) and the path of the results folder; `--json` prints the same as
//! JSON. Without `--sim` the jobs move real bytes on the kernel fabric,
//! and a second table sets them against the model
//! ([`crate::runner::model`]; `--model-draws`).
//! `--sim --jitter F` runs the demo's jittered twins instead
//! ([`crate::runner::jitter`]).

use super::sim::{run_jitter, JitterArgs};
use crate::demo::{self, DemoOutcome, Driver};
use crate::progress::Progress;
use crate::report::folder::{self, Staged};
use crate::runner::jitter::Jitter;
use anyhow::{Context, Result};
use ocslab_emulator::fabric::ledger::Mode;
use ocslab_emulator::fabric::netlink::Rtnl;
use ocslab_emulator::fabric::{messages, rootless};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Arguments of `ocslab demo`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  ocslab demo              # real bytes on the kernel fabric (root or rootless)\n  \
                        ocslab demo --sim        # the same experiment in the flow-level simulator\n  \
                        ocslab demo --sim --payload-rates   # links at TCP's payload rate, as real bytes reach\n  \
                        ocslab demo --sim --payload-rates --jitter 0.02 --draws 40   # the band to set a real run against\n  \
                        ocslab demo --sim --json --out /tmp/demo"
)]
pub struct DemoArgs {
    /// Run in the flow-level simulator (virtual time) instead of the kernel fabric.
    #[arg(long)]
    pub sim: bool,
    /// Print the table as JSON.
    #[arg(long)]
    pub json: bool,
    /// Results folder (default results/demo-<sim|emu>-<UTC time>/; with
    /// --jitter, results/demo-sim-jitter-<UTC time>/).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// On the fabric, give up on a scheduler's run after this many seconds.
    #[arg(long, default_value_t = 120)]
    pub time_limit: u64,
    /// With --sim: run every link at the rate a TCP stream's payload gets
    /// of it (1448 of every 1514 bytes), as real bytes reach.
    #[arg(long, requires = "sim")]
    pub payload_rates: bool,
    /// With --sim: run --draws twins of the demo, each with every link
    /// rate and each host's compute speed moved within ±FRACTION (draw 0
    /// is the demo as it is), and print each scheduler's figures beside
    /// the band over the draws, which a run on real bytes is set against
    /// (`ocslab sim --jitter`, docs/emulation.md).
    #[arg(long, requires = "sim", value_name = "FRACTION")]
    pub jitter: Option<f64>,
    /// With --jitter: how many twins, the plain run included.
    #[arg(long, default_value_t = 20, requires = "jitter", value_parser = clap::value_parser!(u32).range(2..))]
    pub draws: u32,
    /// On real bytes: set each scheduler's figures against the simulator's
    /// at TCP's payload rate, and against the band of this many twins with
    /// link rates and host speeds within ±2 % (the plain run included; 0:
    /// skip it).
    #[arg(long, default_value_t = crate::runner::model::MODEL_DRAWS, conflicts_with = "sim")]
    pub model_draws: u32,
}

/// Runs `ocslab demo`.
pub fn run(a: DemoArgs) -> Result<ExitCode> {
    if let Some(f) = a.jitter {
        return jitter(&a, f);
    }
    if !a.sim {
        super::interrupt::tear_down_on_signal_as_root()?;
    }
    let mut driver: Box<dyn Driver> = if a.sim {
        Box::new(super::sim::simulator(a.payload_rates))
    } else {
        emulator_driver(Duration::from_secs(a.time_limit))?
    };
    let dir = match a.out {
        Some(d) => d,
        None => folder::dated(&format!("results/demo-{}", driver.name())),
    };
    let bar = Progress::new(0, a.json);
    let model = (!a.sim && a.model_draws > 0).then_some(a.model_draws);
    let out = demo::run(driver.as_mut(), &dir, &bar, model)
        .with_context(|| format!("ocslab demo ({})", dir.display()))?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        print_report(&out);
    }
    Ok(ExitCode::SUCCESS)
}

/// `ocslab demo --sim --jitter F`: the demo's twins, as `ocslab sim
/// --jitter` runs an experiment's, with the demo's experiment and topology
/// at the top of the results folder.
fn jitter(a: &DemoArgs, fraction: f64) -> Result<ExitCode> {
    let dir = match &a.out {
        Some(d) => d.clone(),
        None => folder::dated("results/demo-sim-jitter"),
    };
    let args = JitterArgs {
        jitter: Jitter::new(fraction).map_err(|e| anyhow::anyhow!("--jitter {e}"))?,
        draws: a.draws,
        sim: super::sim::simulator(a.payload_rates),
        json: a.json,
    };
    let staged = Staged::begin(&dir)?;
    let exp = demo::prepare(staged.path()).with_context(|| format!("ocslab demo ({})", dir.display()))?;
    let bar = Progress::new(0, a.json);
    run_jitter(&exp, &args, staged, &dir, &bar, crate::runner::default_threads())
}

/// The kernel-fabric driver, after making sure namespaces can be made:
/// as root directly, otherwise inside a user namespace (rootless), which
/// must be entered while the process has one thread (before the progress
/// bar starts its ticker).
fn emulator_driver(time_limit: Duration) -> Result<Box<dyn Driver>> {
    match rootless::enter_if_needed() {
        Err(e) => anyhow::bail!(
            "real bytes need network namespaces, and none can be made here: {e}\n\
             The same experiment runs in the simulator: ocslab demo --sim"
        ),
        // A fresh network namespace starts with loopback down, and the
        // agents reach the control server on 127.0.0.1.
        Ok(Mode::Rootless) => Rtnl::open("the rootless namespace")
            .and_then(|mut s| s.execute(vec![messages::loopback_up()]))
            .context("bringing loopback up in the rootless namespace")?,
        Ok(Mode::Root) => {}
    }
    Ok(Box::new(demo::Emulator::new(time_limit)))
}

fn print_report(out: &DemoOutcome) {
    let driver = if out.driver == "sim" {
        "flow-level simulator (virtual time)"
    } else {
        "kernel fabric, real bytes"
    };
    let jobs = out.table.rows.first().map_or(0, |r| r.jobs);
    println!(
        "ocslab demo: {jobs} shuffle-heavy/light jobs (seed {}) on {} (scale {}), coflows and circuits by {}, on the {driver}",
        out.seed, out.topology, out.scale, out.coflow_scheduler
    );
    println!();
    println!("{}", out.table);
    println!();
    if let (Some(best), Some(base)) = (out.table.ranking_by_avg_jct.first(), out.table.rows.first()) {
        if let Some(row) = out.table.rows.iter().find(|r| &r.scheduler == best) {
            println!(
                "shortest average JCT: {best} ({:.2} s, {:.2} x {}); ranking: {}",
                row.avg_jct_s,
                row.vs_baseline.avg_jct,
                base.scheduler,
                out.table.ranking_line()
            );
        }
    }
    if let Some(model) = &out.model {
        println!("\n{model}\n");
    }
    println!("runs took {:.1} s wall", out.wall_s);
    println!("results: {}", out.results_dir.display());
}
