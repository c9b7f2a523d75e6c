//! The on-disk ledger of a run: `/run/ocslab/<run-id>/ledger.json` lists
//! every namespace the run creates (written *before* any is made), who owns
//! the run (pid and start time, so a reused pid is not mistaken for it) and
//! its state. Every interface, address, route, qdisc and filter of a run
//! lives inside one of its namespaces, so removing the namespaces (after
//! ending the processes inside them) removes everything; nothing of a run
//! lives in the box's own namespace.
//!
//! Teardown removes exactly what a ledger lists, plus namespaces that follow
//! the run's own naming scheme (`ocslab-<run>-*`, see [`super::names`]) —
//! never a global pattern. [`cleanup_stale`] does this for every run whose
//! owner is gone: what `ocslab down` runs after a crash or a SIGKILL.
//!
//! Also in the run directory: `topology.toml` (the topology as written, so
//! other processes can attach), `ocs.jsonl` (one line per OCS
//! reconfiguration) and, while an emulated run uses the fabric, its agents'
//! credentials (`emu-<pid>/`).

use super::names::{RunId, NS_PREFIX};
use super::netns;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};
use std::cell::Cell;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{PoisonError, RwLock, RwLockReadGuard};
use std::time::{Duration, Instant};

/// Where run directories live.
pub const RUN_ROOT: &str = "/run/ocslab";

/// A ledger or run-directory failure.
#[derive(Debug, thiserror::Error)]
#[error("{what} {}: {source}", path.display())]
pub struct LedgerError {
    /// What was being done.
    pub what: &'static str,
    /// The file or directory.
    pub path: PathBuf,
    /// Why it failed.
    #[source]
    pub source: io::Error,
}

/// Privilege mode a run was built in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// As root in the box's own user and mount namespaces.
    Root,
    /// As an ordinary user inside a user+mount+net namespace (see
    /// [`super::rootless`]); other processes reach the run through its owner.
    Rootless,
}

/// How the OCS switches circuits in the kernel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Datapath {
    /// A circuit is a tc `u32` match-all filter with a `mirred` redirect on
    /// its OCS port, plus a route in the source ToR's OCS table.
    #[default]
    TcMirred,
    /// A circuit is an entry of a BPF map read by tc `bpf` programs on the
    /// OCS ports and ToR downlinks (`emulator/bpf/ocs.bpf.c`).
    Ebpf,
}

impl std::fmt::Display for Datapath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Datapath::TcMirred => "tc-mirred",
            Datapath::Ebpf => "ebpf",
        })
    }
}

impl std::str::FromStr for Datapath {
    type Err = String;
    fn from_str(s: &str) -> Result<Datapath, String> {
        match s {
            "tc-mirred" => Ok(Datapath::TcMirred),
            "ebpf" => Ok(Datapath::Ebpf),
            _ => Err(format!("{s:?} is not a datapath: ebpf or tc-mirred")),
        }
    }
}

/// Life cycle of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunState {
    /// Namespaces are being made.
    Building,
    /// The fabric is up.
    Up,
    /// Teardown has begun.
    TearingDown,
}

/// The ledger of one run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ledger {
    /// The run.
    pub run_id: RunId,
    /// Root or rootless.
    pub mode: Mode,
    /// How the OCS switches circuits.
    #[serde(default)]
    pub datapath: Datapath,
    /// The process that owns the run (tears it down when it exits).
    pub owner_pid: u32,
    /// The owner's start time (field 22 of `/proc/<pid>/stat`).
    pub owner_start: u64,
    /// Whether the owner is a detached background holder.
    pub detached: bool,
    /// The topology's name.
    pub topology: String,
    /// The topology file it came from, when known.
    pub topology_file: Option<PathBuf>,
    /// Wall-clock start, milliseconds since the Unix epoch.
    pub started_unix_ms: u64,
    /// State.
    pub state: RunState,
    /// Every namespace of the run (planned ones included).
    pub namespaces: Vec<String>,
}

/// The directory of run `run`.
pub fn run_dir(run: RunId) -> PathBuf {
    Path::new(RUN_ROOT).join(run.to_string())
}

fn lerr(what: &'static str, path: &Path) -> impl FnOnce(io::Error) -> LedgerError {
    let path = path.to_path_buf();
    move |source| LedgerError { what, path, source }
}

/// Start time of process `pid` (clock ticks since boot), if it runs (a
/// zombie, dead but not yet reaped, does not count).
pub fn process_start(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces; fields resume after ')'.
    let mut rest = stat[stat.rfind(')')? + 1..].split_whitespace();
    let state = rest.next()?;
    if state == "Z" || state == "X" {
        return None;
    }
    rest.nth(18)?.parse().ok()
}

/// Reserves a fresh run id by creating its directory (atomic: two
/// processes never get the same one), avoiding ids with leftover namespaces.
pub fn reserve_run_id(wanted: Option<RunId>) -> Result<RunId, LedgerError> {
    std::fs::create_dir_all(RUN_ROOT).map_err(lerr("creating", Path::new(RUN_ROOT)))?;
    let existing = netns::list_named();
    for attempt in 0..1000 {
        let id = match wanted {
            Some(w) => w,
            None => RunId::random(),
        };
        let taken = existing.iter().any(|n| id.owns_netns(n));
        let dir = run_dir(id);
        if !taken {
            match std::fs::create_dir(&dir) {
                Ok(()) => return Ok(id),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(lerr("creating run directory", &dir)(e)),
            }
        }
        if wanted.is_some() || attempt == 999 {
            return Err(LedgerError {
                what: "run id already in use:",
                path: dir,
                source: io::Error::from(io::ErrorKind::AlreadyExists),
            });
        }
    }
    unreachable!("the loop returns on its last attempt")
}

impl Ledger {
    /// Path of this run's ledger file.
    pub fn path(&self) -> PathBuf {
        run_dir(self.run_id).join("ledger.json")
    }

    /// Writes the ledger (atomically: a temporary file renamed over it).
    pub fn save(&self) -> Result<(), LedgerError> {
        let path = self.path();
        let tmp = path.with_extension("json.tmp");
        let text = serde_json::to_vec_pretty(self).map_err(|e| LedgerError {
            what: "encoding",
            path: path.clone(),
            source: io::Error::other(e),
        })?;
        std::fs::write(&tmp, text).map_err(lerr("writing", &tmp))?;
        std::fs::rename(&tmp, &path).map_err(lerr("writing", &path))
    }

    /// Reads the ledger of run `run`.
    pub fn load(run: RunId) -> Result<Ledger, LedgerError> {
        let path = run_dir(run).join("ledger.json");
        let text = std::fs::read(&path).map_err(lerr("reading", &path))?;
        serde_json::from_slice(&text).map_err(|e| LedgerError {
            what: "parsing",
            path,
            source: io::Error::other(e),
        })
    }

    /// Whether the owning process still runs (same pid, same start time).
    pub fn owner_alive(&self) -> bool {
        process_start(self.owner_pid) == Some(self.owner_start)
    }
}

/// Run ids with a directory under `/run/ocslab`, sorted.
pub fn list_runs() -> Vec<RunId> {
    let Ok(dir) = std::fs::read_dir(RUN_ROOT) else {
        return Vec::new();
    };
    let mut ids: Vec<RunId> = dir
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    ids.sort();
    ids
}

/// What a teardown removed.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Teardown {
    /// The run.
    pub run_id: Option<RunId>,
    /// Namespaces removed.
    pub namespaces: usize,
    /// Processes ended (they lived inside the run's namespaces).
    pub processes: usize,
    /// Whether the run's owner had already died (crash, SIGKILL) when the
    /// teardown began.
    pub owner_gone: bool,
    /// The run directory removed, if there was one.
    pub run_dir: Option<PathBuf>,
    /// Seconds it took.
    pub seconds: f64,
}

/// Every namespace that belongs to run `run`: those in its ledger plus
/// those under `/run/netns` that follow its naming scheme.
pub fn namespaces_of(run: RunId, ledger: Option<&Ledger>) -> Vec<String> {
    let mut names: Vec<String> = ledger.map(|l| l.namespaces.clone()).unwrap_or_default();
    names.extend(netns::list_named().into_iter().filter(|n| run.owns_netns(n)));
    names.retain(|n| run.owns_netns(n));
    names.sort();
    names.dedup();
    names
}

/// Ends the processes living in `names` (SIGTERM, then SIGKILL after
/// `grace`); returns how many there were.
pub fn end_processes_in(names: &[String], grace: Duration) -> usize {
    let inodes: Vec<u64> = names.iter().filter_map(|n| netns::inode_of(n)).collect();
    end_processes(|| netns::pids_in(&inodes), grace)
}

/// Ends the processes living in the user namespace with inode `user_ns`
/// (what a rootless run leaves when its holder is killed); returns how many
/// there were.
pub fn end_processes_in_user_ns(user_ns: u64, grace: Duration) -> usize {
    end_processes(|| pids_in_user_ns(user_ns), grace)
}

/// The running processes in the user namespace with inode `user_ns` (a
/// rootless run's holder and what was started inside its fabric).
pub fn pids_in_user_ns(user_ns: u64) -> Vec<i32> {
    netns::pids_in_ns("user", &[user_ns])
}

/// SIGTERM to what `find` lists (and to what it lists later, as processes
/// fork while they end), then SIGKILL to what it still lists after
/// `grace`; returns how many it listed in all.
fn end_processes(find: impl Fn() -> Vec<i32>, grace: Duration) -> usize {
    let mut signalled = std::collections::BTreeSet::new();
    let deadline = Instant::now() + grace;
    let mut left = find();
    while !left.is_empty() && Instant::now() < deadline {
        for &p in &left {
            if signalled.insert(p) {
                let _ = kill(Pid::from_raw(p), Signal::SIGTERM);
            }
        }
        std::thread::sleep(Duration::from_millis(5));
        left = find();
    }
    for &p in &left {
        signalled.insert(p);
        let _ = kill(Pid::from_raw(p), Signal::SIGKILL);
    }
    signalled.len()
}

/// Removes run `run`: ends its processes, removes its namespaces and its
/// run directory. Safe to call on a run that is partly or wholly gone.
pub fn remove_run(run: RunId) -> Result<Teardown, LedgerError> {
    let t0 = Instant::now();
    let ledger = Ledger::load(run).ok();
    if let Some(mut l) = ledger.clone() {
        l.state = RunState::TearingDown;
        let _ = l.save();
    }
    let names = namespaces_of(run, ledger.as_ref());
    let processes = end_processes_in(&names, Duration::from_millis(500));
    let mut removed = 0;
    for n in &names {
        match netns::remove_named(n) {
            Ok(true) => removed += 1,
            Ok(false) => {}
            Err(e) => {
                return Err(LedgerError {
                    what: "removing namespace of",
                    path: run_dir(run),
                    source: io::Error::other(e.to_string()),
                })
            }
        }
    }
    let dir = run_dir(run);
    // An owner torn down from its own signal thread may still be writing
    // here (a lab writing its agents' credentials) between the walk and
    // the last rmdir: try again for a while. Such a writer never makes a
    // directory, so once this one is gone it stays gone. A build cannot
    // (it holds [`work`]), nor its reconfiguration log (opened once:
    // later lines go to the unlinked file).
    let mut tries = 0;
    let had_dir = loop {
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => break true,
            Err(e) if e.kind() == io::ErrorKind::NotFound => break false,
            Err(e) if e.kind() == io::ErrorKind::DirectoryNotEmpty && tries < 100 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => return Err(lerr("removing", &dir)(e)),
        }
    };
    Ok(Teardown {
        run_id: Some(run),
        namespaces: removed,
        processes,
        owner_gone: false,
        run_dir: had_dir.then_some(dir),
        seconds: t0.elapsed().as_secs_f64(),
    })
}

/// Fabric work of this process: building a run, tearing one down, starting
/// a process inside one. Each holds it shared ([`work`]);
/// [`remove_own_runs`] takes it whole, and for good.
static WORK: RwLock<()> = RwLock::new(());

thread_local! {
    /// How many [`Work`] guards this thread holds: only the first takes
    /// the lock. A second shared hold in the same thread (say, a
    /// half-built fabric dropped inside a build) would otherwise wait
    /// behind a teardown that waits for the first.
    static WORK_HELD: Cell<u32> = const { Cell::new(0) };
}

/// A shared hold on this process's fabric work (see [`work`]).
pub struct Work {
    _shared: Option<RwLockReadGuard<'static, ()>>,
}

/// Holds this process's fabric work shared until the guard drops, waiting
/// if [`remove_own_runs`] has begun (it then ends the process). A teardown
/// on a signal therefore never runs beside a build, which would make
/// namespaces after the teardown listed them, nor beside another
/// teardown of the same run, nor beside the start of a process in one of
/// its namespaces, which would outlive it: hold it around any such start
/// not made by `Fabric::spawn_in` (which holds it itself).
pub fn work() -> Work {
    let outer = WORK_HELD.with(|n| {
        n.set(n.get() + 1);
        n.get() == 1
    });
    Work {
        _shared: outer.then(|| WORK.read().unwrap_or_else(PoisonError::into_inner)),
    }
}

impl Drop for Work {
    fn drop(&mut self) {
        WORK_HELD.with(|n| n.set(n.get() - 1));
    }
}

/// Removes every run whose ledger names this process as its owner: what a
/// command ended by a signal tears down just before it exits. It waits for
/// a build, teardown or process start under way in this process to end,
/// and keeps any more from starting, for good: call it only on the way
/// out.
pub fn remove_own_runs() -> Result<Vec<Teardown>, LedgerError> {
    std::mem::forget(WORK.write().unwrap_or_else(PoisonError::into_inner));
    let me = std::process::id();
    let started = process_start(me);
    let mut out = Vec::new();
    for run in list_runs() {
        let mine = Ledger::load(run).is_ok_and(|l| l.owner_pid == me && Some(l.owner_start) == started);
        if mine {
            out.push(remove_run(run)?);
        }
    }
    Ok(out)
}

/// Removes every run whose owner is gone (crashed, killed) and every
/// `ocslab-<run>-*` namespace whose run has no directory. Live runs are
/// left alone. Returns one [`Teardown`] per run removed.
pub fn cleanup_stale() -> Result<Vec<Teardown>, LedgerError> {
    let mut out = Vec::new();
    let runs = list_runs();
    for &run in &runs {
        let alive = match Ledger::load(run) {
            Ok(l) => l.owner_alive(),
            // A run being reserved has a directory but no ledger for a moment.
            Err(_) => std::fs::metadata(run_dir(run))
                .and_then(|m| m.modified())
                .map(|t| t.elapsed().unwrap_or_default() < Duration::from_secs(60))
                .unwrap_or(false),
        };
        if !alive {
            out.push(Teardown {
                owner_gone: true,
                ..remove_run(run)?
            });
        }
    }
    let mut orphans: Vec<RunId> = netns::list_named()
        .iter()
        .filter(|n| n.starts_with(NS_PREFIX))
        .filter_map(|n| RunId::of_netns(n))
        // A run reserved since `runs` was listed has a directory (made
        // before its first namespace): it is not an orphan.
        .filter(|r| !runs.contains(r) && !run_dir(*r).exists())
        .collect();
    orphans.sort();
    orphans.dedup();
    for run in orphans {
        out.push(Teardown {
            owner_gone: true,
            ..remove_run(run)?
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_process_start_is_readable_and_stable() {
        let me = std::process::id();
        let a = process_start(me).expect("start time of this process");
        assert_eq!(process_start(me), Some(a));
        assert_eq!(process_start(u32::MAX), None);
    }

    #[test]
    fn ledger_round_trips_through_json() {
        let l = Ledger {
            run_id: "00ff".parse().unwrap(),
            mode: Mode::Root,
            datapath: Datapath::TcMirred,
            owner_pid: 1,
            owner_start: 2,
            detached: false,
            topology: "tiny".into(),
            topology_file: None,
            started_unix_ms: 3,
            state: RunState::Up,
            namespaces: vec!["ocslab-00ff-core".into()],
        };
        let text = serde_json::to_string(&l).unwrap();
        assert!(text.contains("\"run_id\":\"00ff\""), "{text}");
        assert_eq!(serde_json::from_str::<Ledger>(&text).unwrap(), l);
    }
}
