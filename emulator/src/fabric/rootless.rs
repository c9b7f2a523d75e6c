//! Rootless mode: an ordinary user enters a new user namespace (mapping
//! their uid to root inside it), a new mount namespace and a new network
//! namespace, as `unshare -rmn` does, and mounts a tmpfs on `/run` there.
//! Inside, named namespaces, veth pairs, htb and tc filters all work (seen
//! on this box: 191 Mbit/s over a 200 Mbit/s htb link), and nothing is
//! visible to or touches the box's own namespaces.
//!
//! The fabric then lives as long as the process that entered (its namespaces
//! are mounted on the private `/run/netns`). Other processes of the same user
//! reach it by [`join`]ing that process's namespaces, found through the
//! per-user run directory ([`super::user_runs`]); see `docs/fabric.md`.

use super::ledger::Mode;
use super::names::RunId;
use super::user_runs::HolderRecord;
use nix::mount::{mount, MsFlags};
use nix::sched::{setns, unshare, CloneFlags};
use nix::unistd::{getegid, geteuid};
use std::fs::File;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::sync::atomic::{AtomicBool, Ordering};

static ENTERED: AtomicBool = AtomicBool::new(false);

/// Why rootless mode could not be entered.
#[derive(Debug, thiserror::Error)]
#[error("cannot enter rootless mode ({step}): {source}; run as root, or allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1 / user.max_user_namespaces > 0)")]
pub struct RootlessError {
    /// The step that failed.
    pub step: &'static str,
    /// Why.
    #[source]
    pub source: io::Error,
}

/// Root, or rootless once [`enter_if_needed`] has run in this process.
pub fn current_mode() -> Mode {
    if ENTERED.load(Ordering::Relaxed) {
        Mode::Rootless
    } else {
        Mode::Root
    }
}

/// Whether this process may build fabrics without a user namespace.
pub fn is_root() -> bool {
    geteuid().is_root()
}

/// Enters rootless mode when not root (does nothing as root). Must be
/// called while the process has a single thread (a kernel rule for
/// `unshare(CLONE_NEWUSER)`), i.e. early in `main`.
pub fn enter_if_needed() -> Result<Mode, RootlessError> {
    if is_root() || ENTERED.load(Ordering::Relaxed) {
        return Ok(current_mode());
    }
    let (uid, gid) = (geteuid(), getegid());
    let step = |step: &'static str| {
        move |e: nix::Error| RootlessError {
            step,
            source: io::Error::from(e),
        }
    };
    unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWNET)
        .map_err(step("unshare user, mount and network namespaces"))?;
    let write = |path: &'static str, text: String| {
        std::fs::write(path, text).map_err(|source| RootlessError { step: path, source })
    };
    write("/proc/self/setgroups", "deny".into())?;
    write("/proc/self/uid_map", format!("0 {uid} 1"))?;
    write("/proc/self/gid_map", format!("0 {gid} 1"))?;
    // Mounts made here must not propagate back to the box.
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .map_err(step("making mounts private"))?;
    mount(
        Some("tmpfs"),
        "/run",
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        Some("mode=755"),
    )
    .map_err(step("mounting tmpfs on /run"))?;
    ENTERED.store(true, Ordering::Relaxed);
    tracing::info!("rootless mode: inside a user+mount+net namespace owned by uid {uid}");
    Ok(Mode::Rootless)
}

/// Why a rootless run could not be joined.
#[derive(Debug, thiserror::Error)]
#[error("cannot join rootless run {run} ({step}): {why}")]
pub struct JoinError {
    /// The run.
    pub run: RunId,
    /// The step that failed.
    pub step: &'static str,
    /// Why.
    pub why: String,
}

/// Joins the namespaces of a rootless run's holder, as `nsenter -U -m -n -t
/// PID` does: its user namespace (where this process becomes root, which the
/// kernel allows only to the user who owns that namespace), then its mount
/// namespace (with the private `/run` that holds the run's ledger and named
/// namespaces), then its network namespace. The working directory is kept.
/// Must be called while the process has a single thread.
pub fn join(rec: &HolderRecord) -> Result<(), JoinError> {
    let run = rec.run_id;
    let fail = |step: &'static str| move |why: String| JoinError { run, step, why };
    let Some(user_ns) = rec.user_ns else {
        return Err(fail("reading its record")(
            "its holder has not entered its namespaces yet".into(),
        ));
    };
    let not_yours = |e: &dyn std::fmt::Display| {
        format!(
            "{e}: its namespaces belong to the user who started it (you are uid {})",
            geteuid()
        )
    };
    let open = |kind: &str| -> Result<File, JoinError> {
        File::open(format!("/proc/{}/ns/{kind}", rec.holder_pid)).map_err(|e| {
            fail("opening the holder's namespaces")(match e.kind() {
                io::ErrorKind::PermissionDenied => not_yours(&e),
                _ => e.to_string(),
            })
        })
    };
    let (user, mnt, net) = (open("user")?, open("mnt")?, open("net")?);
    // The descriptors are what count from here on: check that they are the
    // holder's (a pid reused since the record was written would not be).
    let ino = user
        .metadata()
        .map_err(|e| fail("inspecting the holder's user namespace")(e.to_string()))?
        .ino();
    if ino != user_ns || !rec.holder_alive() {
        return Err(fail("finding its holder")(format!(
            "process {} is no longer its holder; `ocslab down --run {run}` cleans up",
            rec.holder_pid
        )));
    }
    let cwd = std::env::current_dir().ok();
    let enter = |fd: &File, flag: CloneFlags, step: &'static str| {
        setns(fd, flag).map_err(|e| {
            fail(step)(match e {
                nix::errno::Errno::EPERM => not_yours(&e),
                e => e.to_string(),
            })
        })
    };
    enter(&user, CloneFlags::CLONE_NEWUSER, "entering its user namespace")?;
    enter(&mnt, CloneFlags::CLONE_NEWNS, "entering its mount namespace")?;
    enter(&net, CloneFlags::CLONE_NEWNET, "entering its network namespace")?;
    // Entering a mount namespace moves the working directory to its root.
    if let Some(cwd) = cwd {
        let _ = std::env::set_current_dir(cwd);
    }
    ENTERED.store(true, Ordering::Relaxed);
    Ok(())
}
