//! Rootless mode: an ordinary user enters a new user namespace (mapping
//! their uid to root inside it), a new mount namespace and a new network
//! namespace, as `unshare -rmn` does, and mounts a tmpfs on `/run` there.
//! Inside, named namespaces, veth pairs, htb and tc filters all work (seen
//! on this box: 191 Mbit/s over a 200 Mbit/s htb link), and nothing is
//! visible to or touches the box's own namespaces.
//!
//! The fabric then lives as long as the process that entered (its namespaces
//! are mounted on the private `/run/netns`), so in rootless mode `ocslab up`
//! must stay in the foreground and commands for the fabric run from inside
//! it; see `docs/fabric.md`.

use super::ledger::Mode;
use nix::mount::{mount, MsFlags};
use nix::sched::{unshare, CloneFlags};
use nix::unistd::{getegid, geteuid};
use std::io;
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
