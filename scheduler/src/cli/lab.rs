//! The Mininet-style lab: `ocslab up`, `down`, `exec`, `ocs set|show` and
//! `status`, on top of [`ocslab_emulator::fabric`].
//!
//! `up` builds a fabric and owns it: in the foreground until Ctrl-C (or
//! SIGTERM from `ocslab down`), or, with `--detach`, in a background holder
//! process that `ocslab down` stops. Other commands attach to a running
//! fabric by run id (or to the only one running) through its ledger under
//! `/run/ocslab/<run-id>/`.
//!
//! Rootless, the same commands work from any terminal of the user who
//! started the run: the holder records itself in the user's run directory
//! ([`fabric::user_runs`]), and `exec`, `ocs`, `status` and `down` join its
//! namespaces ([`rootless::join`]) before they attach.

use anyhow::{bail, Context, Result};
use nix::sys::signal::{kill, SigSet, Signal};
use nix::unistd::Pid;
use ocslab_emulator::fabric::user_runs::{HolderRecord, UserRunDir};
use ocslab_emulator::fabric::{
    self, cleanup_stale, ledger, rootless, Circuit, Fabric, FabricOptions, Mode, RunId, Teardown,
};
use ocslab_emulator::{HostId, Nanos, Topology};
use serde::Serialize;
use std::io::{BufRead, Write};
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

/// Arguments of `ocslab up`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  ocslab up topologies/tiny.toml            # Ctrl-C tears it down\n  ocslab up topologies/lab.toml --detach   # then: ocslab exec r0h0 -- ip addr; ocslab down\n\nAs root the fabric is in the box's namespaces; as an ordinary user it is built inside a user\nnamespace (rootless), and exec, ocs, status and down work from any terminal of that user."
)]
pub struct UpArgs {
    /// The topology file.
    pub file: PathBuf,
    /// Keep the fabric up in a background holder process and return.
    #[arg(long)]
    pub detach: bool,
    /// Use this run id (four hex digits) instead of a fresh one.
    #[arg(long)]
    pub run: Option<RunId>,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
    /// Internal: run as the detached holder (prints one line when up).
    #[arg(long, hide = true)]
    pub holder: bool,
}

/// Arguments of `ocslab down`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  ocslab down              # every ocslab fabric, and what crashed runs left\n  ocslab down --run 3f9a\n\nAs an ordinary user: every rootless fabric of yours, also one whose holder was killed."
)]
pub struct DownArgs {
    /// Only this run.
    #[arg(long)]
    pub run: Option<RunId>,
    /// Print what was removed as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `ocslab exec`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  ocslab exec r0h0 -- ip -br addr\n  ocslab exec r1h0 -- iperf3 -s -D && ocslab exec r0h0 -- iperf3 -c 198.18.1.10 --tos 8"
)]
pub struct ExecArgs {
    /// Host name, r<rack>h<host> (zero-based).
    pub host: HostId,
    /// The run (needed when several fabrics are up).
    #[arg(long)]
    pub run: Option<RunId>,
    /// The command and its arguments.
    #[arg(last = true, required = true)]
    pub cmd: Vec<String>,
}

/// `ocslab ocs ...`
#[derive(clap::Subcommand, Debug)]
pub enum OcsCommand {
    /// Configure the circuits (the whole matching; circuits not listed are
    /// torn down). Changed ports go dark for δ (not-all-stop).
    #[command(
        after_help = "Examples:\n  ocslab ocs set 0:1 1:0      # racks 0->1 and 1->0 on port 0\n  ocslab ocs set 0:2@1        # rack 0 -> rack 2 on port (wavelength) 1\n  ocslab ocs set              # tear every circuit down"
    )]
    Set {
        /// Circuits SRC:DST or SRC:DST@PORT (racks zero-based).
        circuits: Vec<String>,
        /// Reconfiguration delay (default: the topology's), e.g. 10ms.
        #[arg(long)]
        delay: Option<Nanos>,
        /// The run (needed when several fabrics are up).
        #[arg(long)]
        run: Option<RunId>,
        /// Print the reconfiguration as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show the circuits the kernel holds.
    #[command(after_help = "Example:\n  ocslab ocs show --json")]
    Show {
        /// The run (needed when several fabrics are up).
        #[arg(long)]
        run: Option<RunId>,
        /// Print as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Arguments of `ocslab status`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Example:\n  ocslab status --json")]
pub struct StatusArgs {
    /// Print as JSON.
    #[arg(long)]
    pub json: bool,
    /// Internal: report rootless run RUN from inside its namespaces (as JSON).
    #[arg(long, hide = true)]
    pub within: Option<RunId>,
}

fn parse_circuit(s: &str) -> Result<Circuit> {
    let bad = || {
        anyhow::anyhow!(
            "{s:?} is not a circuit: expected SRC:DST or SRC:DST@PORT with rack numbers, e.g. 0:1 or 0:2@1"
        )
    };
    let (pair, port) = match s.split_once('@') {
        Some((p, w)) => (p, w.parse().map_err(|_| bad())?),
        None => (s, 0),
    };
    let (a, b) = pair.split_once(':').ok_or_else(bad)?;
    Ok(Circuit {
        src_rack: a.trim().parse().map_err(|_| bad())?,
        dst_rack: b.trim().parse().map_err(|_| bad())?,
        port,
    })
}

/// Runs that are up with a live owner.
fn live_runs() -> Vec<(RunId, ledger::Ledger)> {
    fabric::runs()
        .into_iter()
        .filter_map(|(r, l)| l.ok().map(|l| (r, l)))
        .filter(|(_, l)| l.owner_alive() && l.state == ledger::RunState::Up)
        .collect()
}

/// This user's rootless runs that are up with a live holder.
fn live_user_runs(dir: Option<&UserRunDir>) -> Vec<HolderRecord> {
    dir.map(UserRunDir::list)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|(_, r)| r.ok())
        .filter(|r| r.holder_alive() && r.state == ledger::RunState::Up)
        .collect()
}

/// The run to use among those `live`: `--run`, or the only one up.
fn pick_run(run: Option<RunId>, live: &[RunId], whose: &str) -> Result<RunId> {
    match (run, live) {
        (Some(r), _) if live.contains(&r) => Ok(r),
        (Some(r), _) => bail!("run {r} is not up{whose}; `ocslab status` lists the runs"),
        (None, []) => {
            bail!("no fabric is up{whose}; start one with `ocslab up topologies/tiny.toml --detach`")
        }
        (None, [r]) => Ok(*r),
        (None, many) => bail!(
            "{} fabrics are up ({}); choose one with --run ID",
            many.len(),
            many.iter().map(|r| r.to_string()).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// Attaches to a running fabric. Not root, this first joins the
/// namespaces of the user's rootless run, so it must run while the process
/// is single-threaded (as every lab command does).
fn attach(run: Option<RunId>) -> Result<Fabric> {
    let run = if rootless::is_root() {
        let live: Vec<RunId> = live_runs().into_iter().map(|(r, _)| r).collect();
        pick_run(run, &live, "")?
    } else {
        let dir = UserRunDir::open()?;
        let live = live_user_runs(dir.as_ref());
        let ids: Vec<RunId> = live.iter().map(|r| r.run_id).collect();
        let whose = format!(
            " for uid {} (rootless runs are private to the user who started them)",
            nix::unistd::geteuid(),
        );
        let run = pick_run(run, &ids, &whose)?;
        let rec = live.iter().find(|r| r.run_id == run).context("picked run")?;
        rootless::join(rec)?;
        run
    };
    Fabric::attach(run).with_context(|| format!("attaching to run {run}"))
}

#[derive(Serialize)]
struct UpSummary {
    run_id: RunId,
    topology: String,
    mode: Mode,
    datapath: ledger::Datapath,
    hosts: Vec<(String, String)>,
    build_s: f64,
    owner_pid: u32,
}

/// `ocslab up`.
pub fn up(a: UpArgs) -> Result<ExitCode> {
    if a.detach {
        return up_detached(a);
    }
    // Validate first, against the box's own addresses (inside a rootless
    // namespace only `lo` would be seen).
    let topo = Topology::load(&a.file)?;
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
    let mut signals = SigSet::empty();
    for s in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        signals.add(s);
    }
    signals.thread_block().context("blocking signals")?;
    let t0 = Instant::now();
    let f = Fabric::up(
        &topo,
        FabricOptions {
            run_id: user_run.as_ref().map(|u| u.record.run_id).or(a.run),
            topology_file: Some(a.file.clone()),
            detached: a.holder,
            ..Default::default()
        },
    )?;
    if let Some(u) = &mut user_run {
        u.up(f.ledger().namespaces.len())?;
    }
    let summary = UpSummary {
        run_id: f.run_id(),
        topology: topo.name.clone(),
        mode,
        datapath: f.ledger().datapath,
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
        quiet_stdio();
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
        print_teardown(&[t], a.json)?;
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
        let me = std::process::id();
        let record = HolderRecord {
            run_id: run,
            state: ledger::RunState::Building,
            holder_pid: me,
            holder_start: ledger::process_start(me).unwrap_or(0),
            user_ns: None,
            detached: a.holder,
            topology: topo.name.clone(),
            topology_file: Some(a.file.clone()),
            namespaces: 0,
            datapath: ledger::Datapath::TcMirred,
            started_unix_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis() as u64)
                .unwrap_or(0),
        };
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

    /// The fabric is up: other processes may join it now.
    fn up(&mut self, namespaces: usize) -> Result<()> {
        self.record.state = ledger::RunState::Up;
        self.record.namespaces = namespaces;
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

/// A detached holder must not die of SIGPIPE when its parent has gone.
fn quiet_stdio() {
    if let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    {
        use std::os::fd::AsRawFd;
        for fd in [0, 1, 2] {
            // SAFETY: dup2 onto the standard descriptors of this process.
            unsafe { libc::dup2(null.as_raw_fd(), fd) };
        }
    }
}

fn up_detached(a: UpArgs) -> Result<ExitCode> {
    let exe = std::env::current_exe().context("finding the ocslab binary")?;
    let mut cmd = Command::new(exe);
    cmd.arg("up").arg(&a.file).arg("--holder");
    if let Some(r) = a.run {
        cmd.arg("--run").arg(r.to_string());
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: setsid(2) is async-signal-safe; the holder leaves our session
    // so a Ctrl-C in this terminal does not reach it.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
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

fn print_teardown(done: &[Teardown], json: bool) -> Result<()> {
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

/// `ocslab exec`.
pub fn exec(a: ExecArgs) -> Result<ExitCode> {
    let f = attach(a.run)?;
    let ns = f.host_netns(a.host)?;
    // Enter the host for good (this process is about to become the command).
    // SAFETY: setns(2) on a namespace descriptor held open by `f`.
    if unsafe { libc::setns(ns.raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(std::io::Error::last_os_error()).context(format!("entering host {}", a.host));
    }
    let err = Command::new(&a.cmd[0]).args(&a.cmd[1..]).exec();
    Err(err).with_context(|| format!("running {:?} in host {}", a.cmd[0], a.host))
}

/// `ocslab ocs`.
pub fn ocs(c: OcsCommand) -> Result<ExitCode> {
    match c {
        OcsCommand::Set {
            circuits,
            delay,
            run,
            json,
        } => {
            let circuits = circuits
                .iter()
                .map(|s| parse_circuit(s))
                .collect::<Result<Vec<_>>>()?;
            let f = attach(run)?;
            let ocs = f.ocs()?;
            let delay = delay.unwrap_or(ocs.delay());
            let rec = ocs.set_matching_with_delay(&circuits, delay)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&rec)?);
            } else {
                for e in &rec.events {
                    println!(
                        "{:>+9.3} ms  {} -> {} port {}  {}",
                        (e.at.0 as f64 - rec.started.0 as f64) / 1e6,
                        e.src_rack,
                        e.dst_rack,
                        e.port,
                        if e.up { "up" } else { "down" }
                    );
                }
                println!(
                    "{} kept, {} down, {} up (δ = {}, setup {} µs after δ)",
                    rec.kept,
                    rec.events.iter().filter(|e| !e.up).count(),
                    rec.events.iter().filter(|e| e.up).count(),
                    delay,
                    rec.setup_late.0 / 1000
                );
            }
        }
        OcsCommand::Show { run, json } => {
            let f = attach(run)?;
            let circuits = f.ocs()?.kernel_circuits()?;
            if json {
                println!("{}", serde_json::to_string_pretty(&circuits)?);
            } else if circuits.is_empty() {
                println!("no circuits (run {})", f.run_id());
            } else {
                for c in circuits {
                    println!("rack {} -> rack {} on port {}", c.src_rack, c.dst_rack, c.port);
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

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
            attach(Some(run))?;
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

fn gone_state(state: ledger::RunState) -> String {
    format!("{state:?} (owner gone: `ocslab down` cleans up)").to_lowercase()
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
                Ok(l) if !alive => gone_state(l.state),
                Ok(l) => format!("{:?}", l.state).to_lowercase(),
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
                state: if alive {
                    format!("{:?}", rec.state).to_lowercase()
                } else {
                    gone_state(rec.state)
                },
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn circuits_parse_with_and_without_port() {
        let c = parse_circuit("0:2@1").unwrap();
        assert_eq!((c.src_rack, c.dst_rack, c.port), (0, 2, 1));
        let c = parse_circuit("3:1").unwrap();
        assert_eq!((c.src_rack, c.dst_rack, c.port), (3, 1, 0));
        let e = parse_circuit("0-1").unwrap_err().to_string();
        assert!(e.contains("SRC:DST"), "{e}");
    }

    #[test]
    fn a_run_is_picked_by_id_or_as_the_only_one_up() {
        let (a, b): (RunId, RunId) = ("00aa".parse().unwrap(), "00bb".parse().unwrap());
        assert_eq!(pick_run(None, &[a], "").unwrap(), a);
        assert_eq!(pick_run(Some(b), &[a, b], "").unwrap(), b);
        let e = pick_run(None, &[a, b], "").unwrap_err().to_string();
        assert!(e.contains("2 fabrics are up (00aa, 00bb)"), "{e}");
        let e = pick_run(Some(b), &[a], " for uid 7").unwrap_err().to_string();
        assert!(e.contains("run 00bb is not up for uid 7"), "{e}");
        let e = pick_run(None, &[], " for uid 7").unwrap_err().to_string();
        assert!(e.starts_with("no fabric is up for uid 7"), "{e}");
    }
}
