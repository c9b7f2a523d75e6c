//! Named network namespaces, made the way `ip netns add` makes them but
//! without spawning `ip`: a thread `unshare(CLONE_NEWNET)`s, and the new
//! namespace is bind-mounted on `/run/netns/<name>` so `ip netns` and other
//! tools see it. Entering one is `setns` on the calling thread only.
//!
//! Also here: running a closure inside a namespace ([`in_netns`]), writing
//! the namespace's sysctls, finding the processes that live in a namespace
//! and removing a namespace.

use nix::mount::{mount, umount2, MntFlags, MsFlags};
use nix::sched::{setns, unshare, CloneFlags};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Where named namespaces are bind-mounted (as by iproute2).
pub const NETNS_DIR: &str = "/run/netns";

/// A failed namespace operation: what, on which namespace, and why.
#[derive(Debug, thiserror::Error)]
#[error("{what} {name}: {source}")]
pub struct NetnsError {
    /// What was being done, e.g. "creating namespace".
    pub what: &'static str,
    /// The namespace name or path.
    pub name: String,
    /// The system error.
    #[source]
    pub source: io::Error,
}

fn err(what: &'static str, name: &str) -> impl FnOnce(nix::Error) -> NetnsError {
    let name = name.to_string();
    move |e| NetnsError {
        what,
        name,
        source: io::Error::from(e),
    }
}

fn ioerr(what: &'static str, name: &str) -> impl FnOnce(io::Error) -> NetnsError {
    let name = name.to_string();
    move |source| NetnsError { what, name, source }
}

/// An open, named network namespace. Holding it keeps the namespace's file
/// descriptor open; dropping it does not remove the namespace (see
/// [`remove_named`]).
#[derive(Debug)]
pub struct NetNs {
    name: String,
    fd: OwnedFd,
}

impl NetNs {
    /// The namespace's name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Its path under `/run/netns`.
    pub fn path(&self) -> PathBuf {
        path_of(&self.name)
    }
    /// A raw descriptor, valid while `self` lives (for `IFLA_NET_NS_FD` and
    /// for `setns` in a child before `exec`).
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
    /// Opens an existing named namespace.
    pub fn open(name: &str) -> Result<NetNs, NetnsError> {
        let f = File::open(path_of(name)).map_err(ioerr("opening namespace", name))?;
        Ok(NetNs {
            name: name.to_string(),
            fd: f.into(),
        })
    }
    /// Runs `f` with the calling thread inside this namespace, then returns
    /// the thread to where it was (also if `f` panics).
    pub fn enter<T>(&self, f: impl FnOnce() -> T) -> Result<T, NetnsError> {
        in_netns(self.fd.as_fd(), &self.name, f)
    }
    /// The namespace's inode (what `/proc/<pid>/ns/net` links to).
    pub fn inode(&self) -> Result<u64, NetnsError> {
        File::open(format!("/proc/self/fd/{}", self.fd.as_raw_fd()))
            .and_then(|f| f.metadata())
            .map(|m| m.ino())
            .map_err(ioerr("reading inode of namespace", &self.name))
    }
}

/// `/run/netns/<name>`.
pub fn path_of(name: &str) -> PathBuf {
    Path::new(NETNS_DIR).join(name)
}

/// Puts the calling thread back into its original namespace on drop.
struct Restore {
    home: OwnedFd,
}

impl Drop for Restore {
    fn drop(&mut self) {
        if let Err(e) = setns(self.home.as_fd(), CloneFlags::CLONE_NEWNET) {
            // Carrying on in the wrong namespace would misdirect every later
            // socket of this thread: there is no safe way forward.
            panic!("cannot return thread to its network namespace: {e}");
        }
    }
}

fn home() -> io::Result<OwnedFd> {
    Ok(File::open("/proc/thread-self/ns/net")?.into())
}

/// Runs `f` with the calling thread inside namespace `fd` (named `name` in
/// errors) and then returns it to its own namespace, also on panic.
/// Sockets created inside `f` stay in that namespace for their lifetime.
pub fn in_netns<T>(fd: impl AsFd, name: &str, f: impl FnOnce() -> T) -> Result<T, NetnsError> {
    let restore = Restore {
        home: home().map_err(ioerr("saving namespace of thread before entering", name))?,
    };
    setns(fd, CloneFlags::CLONE_NEWNET).map_err(err("entering namespace", name))?;
    let out = f();
    drop(restore);
    Ok(out)
}

/// Makes `/run/netns` a shared mount point, as `ip netns add` does, so
/// namespaces mounted there are seen from other mount namespaces.
pub fn prepare_netns_dir() -> Result<(), NetnsError> {
    std::fs::create_dir_all(NETNS_DIR).map_err(ioerr("creating", NETNS_DIR))?;
    let shared = || {
        mount(
            None::<&str>,
            NETNS_DIR,
            None::<&str>,
            MsFlags::MS_SHARED | MsFlags::MS_REC,
            None::<&str>,
        )
    };
    match shared() {
        Ok(()) => Ok(()),
        Err(nix::Error::EINVAL) => {
            // Not a mount point yet: bind it onto itself, then share it.
            mount(
                Some(NETNS_DIR),
                NETNS_DIR,
                Some("none"),
                MsFlags::MS_BIND | MsFlags::MS_REC,
                None::<&str>,
            )
            .map_err(err("bind-mounting", NETNS_DIR))?;
            shared().map_err(err("making shared", NETNS_DIR))
        }
        Err(e) => Err(err("making shared", NETNS_DIR)(e)),
    }
}

/// Creates the named namespace `name` and runs `init` inside it (sysctls,
/// opening a netlink socket). The calling thread ends where it started.
/// Fails if the name exists.
pub fn create_named<T>(
    name: &str,
    init: impl FnOnce() -> Result<T, NetnsError>,
) -> Result<(NetNs, T), NetnsError> {
    let path = path_of(name);
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(ioerr("creating mount point of namespace", name))?;
    let restore = Restore {
        home: home().map_err(ioerr("saving namespace of thread before creating", name))?,
    };
    let made = (|| {
        unshare(CloneFlags::CLONE_NEWNET).map_err(err("creating namespace", name))?;
        mount(
            Some("/proc/thread-self/ns/net"),
            &path,
            Some("none"),
            MsFlags::MS_BIND,
            None::<&str>,
        )
        .map_err(err("bind-mounting namespace", name))?;
        let fd: OwnedFd = File::open(&path)
            .map_err(ioerr("opening namespace", name))?
            .into();
        let out = init()?;
        Ok((
            NetNs {
                name: name.to_string(),
                fd,
            },
            out,
        ))
    })();
    drop(restore);
    if made.is_err() {
        let _ = umount2(&path, MntFlags::MNT_DETACH);
        let _ = std::fs::remove_file(&path);
    }
    made
}

/// Removes the named namespace `name`: unmounts and deletes
/// `/run/netns/<name>`. The kernel frees the namespace (and every interface,
/// qdisc and route in it) once no process or descriptor refers to it; see
/// [`pids_in`] for the processes. Missing namespaces are not an error.
/// Returns whether something was removed.
pub fn remove_named(name: &str) -> Result<bool, NetnsError> {
    let path = path_of(name);
    if std::fs::symlink_metadata(&path).is_err() {
        return Ok(false);
    }
    match umount2(&path, MntFlags::MNT_DETACH) {
        Ok(()) | Err(nix::Error::EINVAL) | Err(nix::Error::ENOENT) => {}
        Err(e) => return Err(err("unmounting namespace", name)(e)),
    }
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(true),
        Err(e) => Err(ioerr("removing mount point of namespace", name)(e)),
    }
}

/// Names under `/run/netns` (empty if the directory is missing).
pub fn list_named() -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(NETNS_DIR) else {
        return Vec::new();
    };
    let mut names: Vec<String> = dir
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    names
}

/// The inode of named namespace `name`, if it is mounted.
pub fn inode_of(name: &str) -> Option<u64> {
    std::fs::metadata(path_of(name)).ok().map(|m| m.ino())
}

/// Processes (other than this one) whose network namespace has one of the
/// given inodes. Reads `/proc/<pid>/ns/net` of every process.
pub fn pids_in(inodes: &[u64]) -> Vec<i32> {
    pids_in_ns("net", inodes)
}

/// Pids of the running processes (other than this one; no zombies) whose
/// namespace of `kind` (`net`, `user`, `mnt`, ...: an entry of
/// `/proc/<pid>/ns`) is one of `inodes`. Processes this one may not inspect
/// are not listed.
pub fn pids_in_ns(kind: &str, inodes: &[u64]) -> Vec<i32> {
    if inodes.is_empty() {
        return Vec::new();
    }
    let me = std::process::id() as i32;
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != me)
        .filter(|pid| {
            std::fs::metadata(format!("/proc/{pid}/ns/{kind}"))
                .map(|m| inodes.contains(&m.ino()))
                .unwrap_or(false)
        })
        // A zombie still shows its user namespace (it keeps its
        // credentials) but has left the others and runs nothing.
        .filter(|&pid| super::ledger::process_start(pid as u32).is_some())
        .collect()
}

/// Writes sysctl `key` (a path under `/proc/sys/net`, e.g.
/// `ipv4/ip_forward`) of the calling thread's current namespace. A key that
/// does not exist in this kernel is skipped when `optional`.
pub fn write_sysctl(ns: &str, key: &str, value: &str, optional: bool) -> Result<(), NetnsError> {
    // /proc/sys/net resolves to the network namespace of the thread that
    // opens the file (current->nsproxy), so this reaches the entered one.
    let path = format!("/proc/sys/net/{key}");
    match std::fs::write(&path, value) {
        Ok(()) => Ok(()),
        Err(e) if optional && e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(NetnsError {
            what: "writing sysctl",
            name: format!("{key}={value} in {ns}"),
            source,
        }),
    }
}
