//! `ocslab topo check FILE [--json]`: validate a topology file.

use anyhow::Result;
use ocslab_emulator::fabric::capacity::BoxLimits;
use ocslab_emulator::Topology;
use std::path::PathBuf;
use std::process::ExitCode;

/// `ocslab topo ...`
#[derive(clap::Subcommand, Debug)]
pub enum TopoCommand {
    /// Validate a topology file; print its racks, hosts, rates and address plan.
    #[command(after_help = "Example:\n  ocslab topo check topologies/lab.toml --json")]
    Check {
        /// The topology file (TOML).
        file: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// Runs a `topo` subcommand.
pub fn run(cmd: TopoCommand) -> Result<ExitCode> {
    match cmd {
        TopoCommand::Check { file, json } => {
            let topo = Topology::load(&file)?;
            let limits = BoxLimits::read();
            let the_box = limits.emulating_box();
            let emulable = topo.check_emulable(&file, &the_box);
            if json {
                let mut v = serde_json::to_value(&topo)?;
                v["hosts"] = topo.hosts().into();
                v["oversubscription"] = topo.oversubscription().into();
                v["emulable"] = emulable.is_ok().into();
                v["host_limit"] = serde_json::to_value(&the_box.limit)?;
                v["host_limit_bounds"] = serde_json::to_value(limits.bounds())?;
                if let Err(e) = &emulable {
                    v["why_not_emulable"] = e.to_string().into();
                }
                println!("{}", serde_json::to_string_pretty(&v)?);
            } else {
                println!("{}: ok", file.display());
                println!(
                    "  {} racks x {} hosts = {} hosts, {} slots each",
                    topo.racks,
                    topo.hosts_per_rack,
                    topo.hosts(),
                    topo.slots_per_host
                );
                println!("  scale {} (rates and sizes below are divided by it)", topo.scale);
                if topo.nominal.eps.core {
                    println!(
                        "  EPS: hosts {}, ToR uplinks {} ({:.1}:1 oversubscribed)",
                        topo.host_rate,
                        topo.uplink_rate,
                        topo.oversubscription()
                    );
                } else {
                    println!(
                        "  EPS: hosts {} to their ToR, no core: racks meet only over circuits",
                        topo.host_rate
                    );
                }
                println!(
                    "  OCS: {} port(s) per rack at {}, reconfiguration delay {}, elephants from {}",
                    topo.ocs_ports_per_rack, topo.ocs_port_rate, topo.reconfig_delay, topo.elephant_threshold
                );
                if let Some(s) = &topo.ocs_schedule {
                    println!(
                        "  circuits follow a schedule: {} slots, period {}, dark {} after a change (not the coflow scheduler's requests)",
                        s.slots().len(),
                        s.period(),
                        s.delay()
                    );
                }
                println!("  addresses: {}", topo.range);
                match emulable {
                    Ok(()) => println!(
                        "  can be emulated on this box (up to {} hosts here, bound by {})",
                        the_box.limit.hosts, the_box.limit.binding
                    ),
                    Err(e) => println!("  simulation only: {e}"),
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
