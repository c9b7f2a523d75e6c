//! `ocslab demo [--sim] [--json] [--out DIR]`: the main job (see
//! [`crate::demo`]). Prints the table (each figure also normalized to
//! Fair) and the path of the results folder; `--json` prints the same as
//! JSON. Without `--sim` the jobs move real bytes on the kernel fabric.

use crate::demo::{self, DemoOutcome, Driver};
use crate::progress::Progress;
use crate::report::folder;
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
                        ocslab demo --sim --json --out /tmp/demo"
)]
pub struct DemoArgs {
    /// Run in the flow-level simulator (virtual time) instead of the kernel fabric.
    #[arg(long)]
    pub sim: bool,
    /// Print the table as JSON.
    #[arg(long)]
    pub json: bool,
    /// Results folder (default results/demo-<sim|emu>-<UTC time>/).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// On the fabric, give up on a scheduler's run after this many seconds.
    #[arg(long, default_value_t = 120)]
    pub time_limit: u64,
    /// With --sim: run every link at the rate a TCP stream's payload gets
    /// of it (1448 of every 1514 bytes), as real bytes reach.
    #[arg(long, requires = "sim")]
    pub payload_rates: bool,
}

/// Runs `ocslab demo`.
pub fn run(a: DemoArgs) -> Result<ExitCode> {
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
    let out =
        demo::run(driver.as_mut(), &dir, &bar).with_context(|| format!("ocslab demo ({})", dir.display()))?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        print_report(&out);
    }
    Ok(ExitCode::SUCCESS)
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
    println!("runs took {:.1} s wall", out.wall_s);
    println!("results: {}", out.results_dir.display());
}
