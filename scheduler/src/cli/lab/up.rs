//! `ocslab up`: builds a fabric and holds it, in the foreground or as a
//! detached holder process; rootless, it records itself in the user's run
//! directory so other terminals can join it.

use super::UpArgs;
use anyhow::{bail, Context, Result};
use ocslab_emulator::fabric::user_runs::{HolderRecord, UserRunDir};
use ocslab_emulator::fabric::{holder, ledger, rootless, Fabric, FabricOptions, Mode, RunId};
use ocslab_emulator::Topology;
use serde::Serialize;
use std::io::{BufRead, Write};
use std::os::unix::fs::MetadataExt;
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

#[derive(Serialize)]
struct UpSummary {
    run_id: RunId,
    topology: String,
    mode: Mode,
    datapath: ledger::Datapath,
    flow_queues: u16,
    hosts: Vec<(String, String)>,
    build_s: f64,
    owner_pid: u32,
}

/// `ocslab up`.
pub fn up(a: UpArgs) -> Result<ExitCode> {
    if a.detach {
        return up_detached(a);
    }
    // Validate first, against the box's own addresses too: inside a
    // rootless namespace only `lo` would be seen, and a file refused as
    // root should be refused rootless as well.
    let topo = Topology::load(&a.file)?;
    topo.check_emulable(&a.file, &ocslab_emulator::fabric::capacity::emulating_box())?;
    // Rootless: reserve the run in the user's run directory while it is
    // still visible (entering hides /run/user/<uid> behind a private /run).
    let mut user_run = if rootless::is_root() {
        None
    } else {
        let dir = UserRunDir::create()?;
        let run = dir.reserve(a.run)?;
        Some(UserRun::reserved(dir, run, &a, &topo))
    };
    let mode = rootless::enter_if_needed()?;
    if let Some(u) = &mut user_run {
        u.entered()?;
    }
    // Block the signals that end a run before any thread starts, so a Ctrl-C
    // during the build is taken after it and tears down what was built.
    let signals = crate::cli::interrupt::block_ending_signals()?;
    let t0 = Instant::now();
    let f = Fabric::up(
        &topo,
        FabricOptions {
            run_id: user_run.as_ref().map(|u| u.record.run_id).or(a.run),
            topology_file: Some(a.file.clone()),
            detached: a.holder,
            datapath: a.datapath,
            ..Default::default()
        },
    )?;
    if let Some(u) = &mut user_run {
        u.up(f.ledger())?;
    }
    let summary = UpSummary {
        run_id: f.run_id(),
        topology: topo.name.clone(),
        mode,
        datapath: f.ledger().datapath,
        flow_queues: f.plan().flow_queues().count(),
        hosts: topo
            .host_ids()
            .map(|h| (h.to_string(), f.host_addr(h).to_string()))
            .collect(),
        build_s: t0.elapsed().as_secs_f64(),
        owner_pid: std::process::id(),
    };
    if a.holder {
        println!("UP {}", serde_json::to_string(&summary)?);
        std::io::stdout().flush()?;
        holder::quiet_stdio();
    } else if a.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        print_up(&summary, &topo);
    }
    let sig = signals.wait().context("waiting for a signal")?;
    tracing::info!("{sig:?}: tearing down run {}", f.run_id());
    let t = f.down()?;
    drop(user_run);
    if !a.holder {
        super::down::print_teardown(&[t], a.json)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// A rootless run's entry in the user's run directory, kept up to date by
/// its holder and removed when the holder is done (also on an error).
struct UserRun {
    dir: UserRunDir,
    record: HolderRecord,
}

impl UserRun {
    fn reserved(dir: UserRunDir, run: RunId, a: &UpArgs, topo: &Topology) -> UserRun {
        let record = HolderRecord::building(run, a.holder, topo.name.clone(), Some(a.file.clone()));
        UserRun { dir, record }
    }

    /// The holder is inside its namespaces: record the user namespace, by
    /// which `ocslab down` finds what is left of the run if the holder dies.
    fn entered(&mut self) -> Result<()> {
        let ino = std::fs::metadata("/proc/self/ns/user")
            .context("reading this process's user namespace")?
            .ino();
        self.record.user_ns = Some(ino);
        Ok(self.dir.publish(&self.record)?)
    }

    /// The fabric is up (as its ledger says): other processes may join it now.
    fn up(&mut self, ledger: &ledger::Ledger) -> Result<()> {
        self.record.state = ledger.state;
        self.record.namespaces = ledger.namespaces.len();
        self.record.datapath = ledger.datapath;
        Ok(self.dir.publish(&self.record)?)
    }
}

impl Drop for UserRun {
    fn drop(&mut self) {
        if let Err(e) = self.dir.remove(self.record.run_id) {
            tracing::error!("removing the record of run {}: {e}", self.record.run_id);
        }
        self.dir.remove_if_empty();
    }
}

fn print_up(s: &UpSummary, topo: &Topology) {
    println!(
        "run {} up: topology {} ({} racks x {} hosts, scale {}), {:?} mode, {} datapath, built in {:.3} s",
        s.run_id, topo.name, topo.racks, topo.hosts_per_rack, topo.scale, s.mode, s.datapath, s.build_s
    );
    println!("  {} flow queues on every shaped link", s.flow_queues);
    println!(
        "  hosts {} Mbit/s, uplinks {} Mbit/s ({:.1}:1), OCS {} port(s)/rack at {} Mbit/s, δ = {}",
        topo.host_rate.0 / 1_000_000,
        topo.uplink_rate.0 / 1_000_000,
        topo.oversubscription(),
        topo.ocs_ports_per_rack,
        topo.ocs_port_rate.0 / 1_000_000,
        topo.reconfig_delay
    );
    for (h, addr) in s.hosts.iter().take(8) {
        println!("  {h:<8} {addr}");
    }
    if s.hosts.len() > 8 {
        println!("  ... {} hosts in all", s.hosts.len());
    }
    println!(
        "try, from any terminal{}: ocslab exec r0h0 -- ip -br addr; ocslab ocs set 0:1; ocslab status. Ctrl-C tears down",
        if s.mode == Mode::Rootless {
            " of this user"
        } else {
            ""
        }
    );
}

fn up_detached(a: UpArgs) -> Result<ExitCode> {
    let exe = std::env::current_exe().context("finding the ocslab binary")?;
    let mut cmd = Command::new(exe);
    cmd.arg("up").arg(&a.file).arg("--holder");
    if let Some(r) = a.run {
        cmd.arg("--run").arg(r.to_string());
    }
    if let Some(d) = a.datapath {
        cmd.arg("--datapath").arg(d.to_string());
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // The holder leaves our session: a Ctrl-C in this terminal does not reach it.
    holder::in_new_session(&mut cmd);
    let mut child = cmd.spawn().context("starting the holder process")?;
    let stdout = child.stdout.take().context("holder stdout")?;
    let line = std::io::BufReader::new(stdout).lines().next().transpose()?;
    match line.as_deref().and_then(|l| l.strip_prefix("UP ")) {
        Some(json) => {
            let s: serde_json::Value = serde_json::from_str(json)?;
            if a.json {
                println!("{}", serde_json::to_string_pretty(&s)?);
            } else {
                println!(
                    "run {} up ({} mode, {} datapath, holder pid {}, built in {:.3} s); `ocslab down --run {}` tears it down",
                    s["run_id"].as_str().unwrap_or("?"),
                    s["mode"].as_str().unwrap_or("?"),
                    s["datapath"].as_str().unwrap_or("?"),
                    child.id(),
                    s["build_s"].as_f64().unwrap_or(0.0),
                    s["run_id"].as_str().unwrap_or("?")
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        None => {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                use std::io::Read;
                let _ = e.read_to_string(&mut err);
            }
            let _ = child.wait();
            bail!("the holder failed to bring the fabric up:\n{}", err.trim_end())
        }
    }
}
