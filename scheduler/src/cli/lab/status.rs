//! `ocslab status`: the runs that are up, their mode, datapath and circuits.

use super::StatusArgs;
use anyhow::{bail, Context, Result};
use ocslab_emulator::fabric::user_runs::UserRunDir;
use ocslab_emulator::fabric::{self, ledger, rootless, Circuit, Fabric, Mode, RunId};
use serde::Serialize;
use std::process::{Command, ExitCode, Stdio};

#[derive(Serialize, serde::Deserialize)]
struct RunStatus {
    run_id: RunId,
    topology: String,
    mode: Option<Mode>,
    datapath: Option<ledger::Datapath>,
    state: String,
    owner_pid: Option<u32>,
    owner_alive: bool,
    detached: bool,
    namespaces_present: usize,
    circuits: Vec<Circuit>,
}

/// `ocslab status`.
pub fn status(a: StatusArgs) -> Result<ExitCode> {
    let out = match a.within {
        Some(run) => {
            // A child of a rootless `status`: report from inside the run.
            super::attach(Some(run))?;
            let out = root_statuses();
            println!("{}", serde_json::to_string(&out)?);
            return Ok(ExitCode::SUCCESS);
        }
        None if rootless::is_root() => root_statuses(),
        None => rootless_statuses()?,
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else if out.is_empty() {
        println!("no fabric is up");
    } else {
        for s in &out {
            println!(
                "run {}  {}  {}  {} mode, {} datapath  owner {}{}  {} namespaces  circuits: {}",
                s.run_id,
                s.topology,
                s.state,
                s.mode
                    .map(|m| format!("{m:?}").to_lowercase())
                    .unwrap_or_else(|| "?".into()),
                s.datapath.map(|d| d.to_string()).unwrap_or_else(|| "?".into()),
                s.owner_pid.map(|p| p.to_string()).unwrap_or_else(|| "?".into()),
                if s.detached { " (detached)" } else { "" },
                s.namespaces_present,
                if s.circuits.is_empty() {
                    "none".to_string()
                } else {
                    s.circuits
                        .iter()
                        .map(|c| c.to_string())
                        .collect::<Vec<_>>()
                        .join(" ")
                }
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A run's state as `status` shows it, telling when its owner is gone.
fn state_text(state: ledger::RunState, owner_alive: bool) -> String {
    if owner_alive {
        format!("{state:?}").to_lowercase()
    } else {
        format!("{state:?} (owner gone: `ocslab down` cleans up)").to_lowercase()
    }
}

/// The runs under `/run/ocslab` (as root, or inside a joined rootless run).
fn root_statuses() -> Vec<RunStatus> {
    let mut out = Vec::new();
    for (run, l) in fabric::runs() {
        let present = ledger::namespaces_of(run, l.as_ref().ok())
            .iter()
            .filter(|n| fabric::netns::path_of(n).exists())
            .count();
        let (alive, circuits) = match &l {
            Ok(l) if l.owner_alive() && l.state == ledger::RunState::Up => (
                true,
                Fabric::attach(run)
                    .ok()
                    .and_then(|f| f.ocs().ok()?.kernel_circuits().ok())
                    .unwrap_or_default(),
            ),
            Ok(l) => (l.owner_alive(), Vec::new()),
            Err(_) => (false, Vec::new()),
        };
        out.push(RunStatus {
            run_id: run,
            topology: l.as_ref().map(|l| l.topology.clone()).unwrap_or_default(),
            mode: l.as_ref().ok().map(|l| l.mode),
            datapath: l.as_ref().ok().map(|l| l.datapath),
            state: match &l {
                Ok(l) => state_text(l.state, alive),
                Err(e) => format!("unreadable ledger: {e}"),
            },
            owner_pid: l.as_ref().ok().map(|l| l.owner_pid),
            owner_alive: alive,
            detached: l.as_ref().map(|l| l.detached).unwrap_or(false),
            namespaces_present: present,
            circuits,
        });
    }
    out
}

/// This user's rootless runs. A live one is reported from inside its
/// namespaces by a child `ocslab status --within RUN` (a process can join
/// only one run's user namespace, and never leave it).
fn rootless_statuses() -> Result<Vec<RunStatus>> {
    let Some(dir) = UserRunDir::open()? else {
        return Ok(Vec::new());
    };
    let exe = std::env::current_exe().context("finding the ocslab binary")?;
    let mut out = Vec::new();
    for (run, rec) in dir.list() {
        let rec = match rec {
            Ok(rec) => rec,
            Err(e) => {
                out.push(RunStatus {
                    run_id: run,
                    topology: String::new(),
                    mode: Some(Mode::Rootless),
                    datapath: None,
                    state: format!("unreadable record: {e}"),
                    owner_pid: None,
                    owner_alive: false,
                    detached: false,
                    namespaces_present: 0,
                    circuits: Vec::new(),
                });
                continue;
            }
        };
        let alive = rec.holder_alive();
        let inside = if alive && rec.state == ledger::RunState::Up {
            let o = Command::new(&exe)
                .args(["status", "--within", &run.to_string()])
                .stdin(Stdio::null())
                .output()
                .context("starting `ocslab status --within`")?;
            if !o.status.success() {
                bail!(
                    "reading run {run} from inside: {}",
                    String::from_utf8_lossy(&o.stderr).trim_end()
                );
            }
            serde_json::from_slice::<Vec<RunStatus>>(&o.stdout)
                .with_context(|| format!("reading the status of run {run}"))?
                .into_iter()
                .find(|s| s.run_id == run)
        } else {
            None
        };
        out.push(match inside {
            Some(s) => RunStatus {
                detached: rec.detached,
                ..s
            },
            None => RunStatus {
                run_id: run,
                topology: rec.topology.clone(),
                mode: Some(Mode::Rootless),
                datapath: Some(rec.datapath),
                state: state_text(rec.state, alive),
                owner_pid: Some(rec.holder_pid),
                owner_alive: alive,
                detached: rec.detached,
                namespaces_present: 0,
                circuits: Vec::new(),
            },
        });
    }
    Ok(out)
}
