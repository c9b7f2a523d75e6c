//! `ocslab down`: stops a run's owner and removes what is left of it, as
//! root from the ledger, rootless from the user's run directory.

use super::DownArgs;
use anyhow::Result;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use ocslab_emulator::fabric::user_runs::UserRunDir;
use ocslab_emulator::fabric::{self, cleanup_stale, ledger, rootless, RunId, Teardown};
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// `ocslab down`.
pub fn down(a: DownArgs) -> Result<ExitCode> {
    let done = if rootless::is_root() {
        down_root(a.run)?
    } else {
        down_rootless(a.run)?
    };
    print_teardown(&done, a.json)?;
    Ok(ExitCode::SUCCESS)
}

/// Sends SIGTERM to a run's owner (which tears its run down) and waits up to
/// `grace` for it to exit; returns whether it did.
fn stop_owner(alive: impl Fn() -> bool, pid: u32, grace: Duration) -> bool {
    let _ = kill(Pid::from_raw(pid as i32), Signal::SIGTERM);
    let deadline = Instant::now() + grace;
    while alive() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    !alive()
}

fn down_root(run: Option<RunId>) -> Result<Vec<Teardown>> {
    let runs: Vec<RunId> = match run {
        Some(r) => vec![r],
        None => fabric::runs().into_iter().map(|(r, _)| r).collect(),
    };
    let mut done: Vec<Teardown> = Vec::new();
    for run in runs {
        let ledger = ledger::Ledger::load(run).ok();
        let names = ledger::namespaces_of(run, ledger.as_ref());
        let present: Vec<u64> = names.iter().filter_map(|n| fabric::netns::inode_of(n)).collect();
        // What the teardown will end or remove, counted before the owner
        // does it itself.
        let inside = fabric::netns::pids_in(&present).len();
        let had_dir = fabric::run_dir(run).exists();
        let mut owner_gone = false;
        // A live owner tears down its own run when signalled; wait for it.
        if let Some(l) = ledger {
            if l.owner_alive() && l.owner_pid != std::process::id() {
                stop_owner(|| l.owner_alive(), l.owner_pid, Duration::from_secs(10));
            } else {
                owner_gone = !l.owner_alive();
            }
        }
        let mut t = ledger::remove_run(run)?;
        t.run_id = Some(run);
        t.namespaces = t.namespaces.max(present.len());
        t.processes = t.processes.max(inside);
        t.owner_gone = owner_gone;
        if had_dir {
            t.run_dir = Some(fabric::run_dir(run));
        }
        done.push(t);
    }
    if run.is_none() {
        done.extend(cleanup_stale()?);
    }
    Ok(done)
}

/// Tears down this user's rootless runs. A live holder is asked to (SIGTERM)
/// and waited for; when a holder has died, the kernel freed the run's
/// namespaces with it, once the processes still inside (found by the user
/// namespace) are ended. Either way the run's directory goes.
fn down_rootless(run: Option<RunId>) -> Result<Vec<Teardown>> {
    let Some(dir) = UserRunDir::open()? else {
        return Ok(Vec::new());
    };
    let mut done = Vec::new();
    for (id, rec) in dir.list() {
        if run.is_some_and(|r| r != id) {
            continue;
        }
        let t0 = Instant::now();
        let mut t = Teardown {
            run_id: Some(id),
            ..Default::default()
        };
        let had_dir = dir.run_path(id).exists();
        if let Ok(rec) = rec {
            t.owner_gone = !rec.holder_alive();
            // What the holder will end, counted before it does so itself.
            let inside = rec
                .user_ns
                .map(|ns| {
                    ledger::pids_in_user_ns(ns)
                        .len()
                        .saturating_sub(usize::from(!t.owner_gone))
                })
                .unwrap_or(0);
            if !t.owner_gone && !stop_owner(|| rec.holder_alive(), rec.holder_pid, Duration::from_secs(10)) {
                tracing::warn!(
                    "holder {} of run {id} ignored SIGTERM; killing it",
                    rec.holder_pid
                );
                let _ = kill(Pid::from_raw(rec.holder_pid as i32), Signal::SIGKILL);
            }
            if let Some(ns) = rec.user_ns {
                let left = ledger::end_processes_in_user_ns(ns, Duration::from_millis(500));
                t.processes = inside.max(left);
                t.namespaces = rec.namespaces;
            }
        }
        if dir.remove(id)? || had_dir {
            t.run_dir = Some(dir.run_path(id));
        }
        t.seconds = t0.elapsed().as_secs_f64();
        done.push(t);
    }
    dir.remove_if_empty();
    Ok(done)
}

pub(super) fn print_teardown(done: &[Teardown], json: bool) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(done)?);
        return Ok(());
    }
    if done.is_empty() {
        println!("nothing of ocslab to remove");
    }
    for t in done {
        println!(
            "run {}: {}removed {} namespaces (with their links, qdiscs and routes), ended {} process{}{}",
            t.run_id.map(|r| r.to_string()).unwrap_or_else(|| "?".into()),
            if t.owner_gone { "its owner had died; " } else { "" },
            t.namespaces,
            t.processes,
            if t.processes == 1 { "" } else { "es" },
            t.run_dir
                .as_ref()
                .map(|d| format!(", removed {}", d.display()))
                .unwrap_or_default()
        );
    }
    Ok(())
}
