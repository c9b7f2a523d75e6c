//! `ocslab link down|up NAME`: take a cable of a running fabric down, or
//! bring it back ([`ocslab_emulator::fabric::Fabric::set_cable`]).

use super::attach;
use crate::emu::perturb::cable_of;
use anyhow::{anyhow, Result};
use ocslab_emulator::fabric::RunId;
use std::process::ExitCode;

/// `ocslab link ...`
#[derive(clap::Subcommand, Debug)]
pub enum LinkCommand {
    /// Take a link down: both directions drop every packet until `ocslab
    /// link up`. Queues and routes stay; TCP flows across it stall and
    /// retransmit.
    #[command(
        after_help = "Examples:\n  ocslab link down r0-up      # rack 0's EPS uplink\n  ocslab link down r1h2-nic   # host r1h2's NIC\n  ocslab link down r2-ocs0    # rack 2's OCS port 0"
    )]
    Down(LinkArgs),
    /// Bring a link back up.
    #[command(after_help = "Example:\n  ocslab link up r0-up")]
    Up(LinkArgs),
}

/// Which link, of which run.
#[derive(clap::Args, Debug)]
pub struct LinkArgs {
    /// `rR-up` (rack R's EPS uplink), `rRhH-nic` (a host's NIC) or `rR-ocsP`
    /// (OCS port P of rack R), as in an experiment's `link-down` perturbation.
    pub link: String,
    /// The run (needed when several fabrics are up).
    #[arg(long)]
    pub run: Option<RunId>,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// What `ocslab link` prints with `--json`.
#[derive(serde::Serialize)]
struct LinkChange {
    run: RunId,
    /// The link's name, e.g. `r0-up`.
    link: String,
    up: bool,
    /// Whether it was down before.
    was_down: bool,
}

/// `ocslab link`.
pub fn link(c: LinkCommand) -> Result<ExitCode> {
    let (a, up) = match c {
        LinkCommand::Down(a) => (a, false),
        LinkCommand::Up(a) => (a, true),
    };
    let f = attach(a.run)?;
    let links = crate::perturb::parse_link(f.topology(), &a.link).map_err(|e| anyhow!("{e}"))?;
    let cable = links
        .first()
        .map(|l| cable_of(*l))
        .ok_or_else(|| anyhow!("{:?} names no link", a.link))?;
    let was_down = f.set_cable(cable, up)?;
    let change = LinkChange {
        run: f.run_id(),
        link: cable.to_string(),
        up,
        was_down,
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&change)?);
    } else {
        let state = |down: bool| if down { "down" } else { "up" };
        println!(
            "run {}: {cable} {} (was {})",
            change.run,
            state(!up),
            state(was_down)
        );
    }
    Ok(ExitCode::SUCCESS)
}
