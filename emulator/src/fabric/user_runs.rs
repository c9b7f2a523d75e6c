//! The per-user directory of rootless runs: how other processes of the same
//! user find a rootless fabric.
//!
//! A rootless fabric lives inside its holder's user, mount and network
//! namespaces ([`super::rootless`]); its ledger and named namespaces sit on
//! that mount namespace's private `/run`, which no other process sees. So the
//! holder also records itself outside, in `holder.json` under
//! `$XDG_RUNTIME_DIR/ocslab/<run-id>/`, or under `/tmp/ocslab-<uid>/<run-id>/`
//! when `XDG_RUNTIME_DIR` is unset. Those directories are the user's own and
//! mode 0700: one that is not is refused. A later `ocslab exec`, `ocs`,
//! `status` or `down` of the same user reads the record and joins the
//! holder's namespaces ([`super::rootless::join`]).
//!
//! Design decision: every operation goes through descriptors opened before
//! the holder enters its namespaces (`openat`, `renameat`, `unlinkat`), so
//! the holder can update and remove its record from inside, where the
//! private `/run` hides `/run/user/<uid>`.

use super::ledger::{process_start, Datapath, RunState};
use super::names::RunId;
use nix::errno::Errno;
use nix::fcntl::{openat, renameat, OFlag};
use nix::sys::stat::{fstat, mkdirat, Mode};
use nix::unistd::{geteuid, unlinkat, UnlinkatFlags};
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

/// What a rootless holder records about itself.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HolderRecord {
    /// The run.
    pub run_id: RunId,
    /// Building until the fabric is up.
    pub state: RunState,
    /// The holder process (`ocslab up`, foreground or detached).
    pub holder_pid: u32,
    /// Its start time (field 22 of `/proc/<pid>/stat`), so a reused pid is
    /// not mistaken for it.
    pub holder_start: u64,
    /// Inode of the holder's user namespace, once it has entered it; a
    /// process found in it after the holder died belongs to the run.
    pub user_ns: Option<u64>,
    /// Whether the holder is a detached background process.
    pub detached: bool,
    /// The topology's name.
    pub topology: String,
    /// The topology file it came from, when known.
    pub topology_file: Option<PathBuf>,
    /// How many network namespaces the fabric has.
    pub namespaces: usize,
    /// How the OCS switches circuits.
    pub datapath: Datapath,
    /// Wall-clock start, milliseconds since the Unix epoch.
    pub started_unix_ms: u64,
}

impl HolderRecord {
    /// The record of run `run` held by this process, which has not built
    /// anything yet (state building, no user namespace entered).
    pub fn building(
        run: RunId,
        detached: bool,
        topology: String,
        topology_file: Option<PathBuf>,
    ) -> HolderRecord {
        let me = std::process::id();
        HolderRecord {
            run_id: run,
            state: RunState::Building,
            holder_pid: me,
            holder_start: process_start(me).unwrap_or(0),
            user_ns: None,
            detached,
            topology,
            topology_file,
            namespaces: 0,
            datapath: Datapath::default(),
            started_unix_ms: super::unix_ms(),
        }
    }

    /// Whether the holder still runs (same pid, same start time).
    pub fn holder_alive(&self) -> bool {
        process_start(self.holder_pid) == Some(self.holder_start)
    }
}

/// A failure of the per-user run directory.
#[derive(Debug, thiserror::Error)]
pub enum UserRunError {
    /// A system call on a file or directory failed.
    #[error("{what} {}: {err}", path.display())]
    Io {
        /// What was being done.
        what: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// Why (in the message, so not repeated as a source).
        err: io::Error,
    },
    /// The directory belongs to another user.
    #[error("{} belongs to uid {owner}, not to you (uid {me}): rootless runs are private to the user who started them{hint}", path.display())]
    NotOwned {
        /// The directory.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// The caller's uid.
        me: u32,
        /// What to do about it.
        hint: &'static str,
    },
    /// The directory is open to other users, or not a directory.
    #[error("{} must be a directory only its owner can enter (found mode {mode:o}); remove it or `chmod 700` it", path.display())]
    NotPrivate {
        /// The directory.
        path: PathBuf,
        /// Its mode bits.
        mode: u32,
    },
    /// The run id asked for is in use.
    #[error("run id {run} is already in use in {}", dir.display())]
    Taken {
        /// The id.
        run: RunId,
        /// The per-user directory.
        dir: PathBuf,
    },
    /// A record could not be decoded.
    #[error("reading {}: {why}", path.display())]
    BadRecord {
        /// The record file.
        path: PathBuf,
        /// Why it could not be read.
        why: String,
    },
}

const RECORD: &str = "holder.json";

/// This user's directory of rootless runs, open.
#[derive(Debug)]
pub struct UserRunDir {
    path: PathBuf,
    dir: OwnedFd,
    parent: OwnedFd,
    name: String,
}

fn io_err(what: &'static str, path: &Path) -> impl FnOnce(Errno) -> UserRunError {
    let path = path.to_path_buf();
    move |e| UserRunError::Io {
        what,
        path,
        err: io::Error::from(e),
    }
}

/// Refuses a directory (open as `fd`) that another user owns or others may enter.
fn check_private(fd: impl AsFd, path: &Path, hint: &'static str) -> Result<(), UserRunError> {
    let st = fstat(fd).map_err(io_err("inspecting", path))?;
    let me = geteuid().as_raw();
    if st.st_uid != me {
        return Err(UserRunError::NotOwned {
            path: path.to_path_buf(),
            owner: st.st_uid,
            me,
            hint,
        });
    }
    let mode = st.st_mode & 0o7777;
    if (st.st_mode & libc::S_IFMT) != libc::S_IFDIR || mode & 0o077 != 0 {
        return Err(UserRunError::NotPrivate {
            path: path.to_path_buf(),
            mode,
        });
    }
    Ok(())
}

/// Opens directory `name` relative to `at` (`path` is for messages), not
/// following a symbolic link.
fn open_dir(at: impl AsFd, name: &Path, path: &Path) -> Result<OwnedFd, UserRunError> {
    let flags = OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_RDONLY;
    openat(at, name, flags, Mode::empty()).map_err(io_err("opening", path))
}

impl UserRunDir {
    /// Opens this user's directory of rootless runs, creating it (mode 0700)
    /// if needed: `$XDG_RUNTIME_DIR/ocslab`, or `/tmp/ocslab-<uid>` when that
    /// variable is unset or empty.
    pub fn create() -> Result<UserRunDir, UserRunError> {
        let (parent_path, name) = Self::location()?;
        let path = parent_path.join(&name);
        match std::fs::DirBuilder::new().mode(0o700).create(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(err) => {
                return Err(UserRunError::Io {
                    what: "creating",
                    path,
                    err,
                })
            }
        }
        Self::open_at(parent_path, name)
    }

    /// Opens this user's directory of rootless runs if there is one (no run
    /// was ever recorded, or the last one was removed, otherwise).
    pub fn open() -> Result<Option<UserRunDir>, UserRunError> {
        let (parent_path, name) = Self::location()?;
        match std::fs::symlink_metadata(parent_path.join(&name)) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            _ => Self::open_at(parent_path, name).map(Some),
        }
    }

    /// The parent directory and the name of this user's directory, with the
    /// parent checked to be the user's own when it comes from
    /// `XDG_RUNTIME_DIR`.
    fn location() -> Result<(PathBuf, String), UserRunError> {
        let me = geteuid().as_raw();
        match std::env::var_os("XDG_RUNTIME_DIR") {
            Some(x) if !x.is_empty() => {
                let parent = PathBuf::from(x);
                let meta = std::fs::metadata(&parent).map_err(|err| UserRunError::Io {
                    what: "inspecting XDG_RUNTIME_DIR",
                    path: parent.clone(),
                    err,
                })?;
                if meta.uid() != me {
                    return Err(UserRunError::NotOwned {
                        path: parent,
                        owner: meta.uid(),
                        me,
                        hint:
                            " (XDG_RUNTIME_DIR names another user's directory: unset it or set it to yours)",
                    });
                }
                Ok((parent, "ocslab".to_string()))
            }
            _ => Ok((PathBuf::from("/tmp"), format!("ocslab-{me}"))),
        }
    }

    fn open_at(parent_path: PathBuf, name: String) -> Result<UserRunDir, UserRunError> {
        let path = parent_path.join(&name);
        // Who owns it first: another user's private directory cannot be
        // opened, and "permission denied" would not say why.
        if let Ok(meta) = std::fs::symlink_metadata(&path) {
            let me = geteuid().as_raw();
            if meta.uid() != me {
                return Err(UserRunError::NotOwned {
                    path,
                    owner: meta.uid(),
                    me,
                    hint: "",
                });
            }
        }
        let parent = open_dir(nix::fcntl::AT_FDCWD, &parent_path, &parent_path)?;
        let dir = open_dir(&parent, Path::new(&name), &path)?;
        check_private(&dir, &path, "")?;
        Ok(UserRunDir {
            path,
            dir,
            parent,
            name,
        })
    }

    /// Where the directory is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The directory of run `run` (for messages).
    pub fn run_path(&self, run: RunId) -> PathBuf {
        self.path.join(run.to_string())
    }

    /// The runs recorded here, sorted by id, with their records (or why a
    /// record could not be read: a run being reserved has none for a moment).
    pub fn list(&self) -> Vec<(RunId, Result<HolderRecord, UserRunError>)> {
        let Ok(entries) = std::fs::read_dir(&self.path) else {
            return Vec::new();
        };
        let mut ids: Vec<RunId> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().to_str()?.parse().ok())
            .collect();
        ids.sort();
        ids.into_iter().map(|r| (r, self.read(r))).collect()
    }

    /// The record of run `run`.
    pub fn read(&self, run: RunId) -> Result<HolderRecord, UserRunError> {
        let rel = format!("{run}/{RECORD}");
        let path = self.path.join(&rel);
        let fd = openat(
            &self.dir,
            rel.as_str(),
            OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(io_err("opening", &path))?;
        let text = io::read_to_string(File::from(fd)).map_err(|err| UserRunError::Io {
            what: "reading",
            path: path.clone(),
            err,
        })?;
        serde_json::from_str(&text).map_err(|e| UserRunError::BadRecord {
            path,
            why: e.to_string(),
        })
    }

    /// Reserves a run id by creating its directory (atomic: two processes
    /// never get the same one): `wanted`, or a fresh random one.
    pub fn reserve(&self, wanted: Option<RunId>) -> Result<RunId, UserRunError> {
        for _ in 0..1000 {
            let id = wanted.unwrap_or_else(RunId::random);
            match mkdirat(&self.dir, id.to_string().as_str(), Mode::S_IRWXU) {
                Ok(()) => return Ok(id),
                Err(Errno::EEXIST) if wanted.is_none() => continue,
                Err(Errno::EEXIST) => {
                    return Err(UserRunError::Taken {
                        run: id,
                        dir: self.path.clone(),
                    })
                }
                Err(e) => return Err(io_err("creating run directory in", &self.path)(e)),
            }
        }
        Err(UserRunError::Io {
            what: "finding a free run id in",
            path: self.path.clone(),
            err: io::Error::from(io::ErrorKind::AlreadyExists),
        })
    }

    /// Writes the record of a reserved run (atomically: readers see the old
    /// record or the new one, never half of one).
    pub fn publish(&self, rec: &HolderRecord) -> Result<(), UserRunError> {
        let run = rec.run_id;
        let tmp = format!("{run}/{RECORD}.tmp");
        let rel = format!("{run}/{RECORD}");
        let path = self.path.join(&rel);
        let fd = openat(
            &self.dir,
            tmp.as_str(),
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_TRUNC | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::S_IRUSR | Mode::S_IWUSR,
        )
        .map_err(io_err("writing", &path))?;
        let text = serde_json::to_string_pretty(rec).map_err(|e| UserRunError::BadRecord {
            path: path.clone(),
            why: e.to_string(),
        })?;
        File::from(fd)
            .write_all(text.as_bytes())
            .map_err(|err| UserRunError::Io {
                what: "writing",
                path: path.clone(),
                err,
            })?;
        renameat(&self.dir, tmp.as_str(), &self.dir, rel.as_str()).map_err(io_err("writing", &path))
    }

    /// Removes run `run`'s directory and record; returns whether it was
    /// there. Safe on a run that is partly or wholly gone.
    pub fn remove(&self, run: RunId) -> Result<bool, UserRunError> {
        for file in [format!("{run}/{RECORD}.tmp"), format!("{run}/{RECORD}")] {
            match unlinkat(&self.dir, file.as_str(), UnlinkatFlags::NoRemoveDir) {
                Ok(()) | Err(Errno::ENOENT) => {}
                Err(e) => return Err(io_err("removing", &self.path.join(file))(e)),
            }
        }
        match unlinkat(&self.dir, run.to_string().as_str(), UnlinkatFlags::RemoveDir) {
            Ok(()) => Ok(true),
            Err(Errno::ENOENT) => Ok(false),
            Err(e) => Err(io_err("removing", &self.run_path(run))(e)),
        }
    }

    /// Removes the directory itself if no run is left in it, so nothing of
    /// ocslab stays behind; returns whether it did.
    pub fn remove_if_empty(&self) -> bool {
        unlinkat(&self.parent, self.name.as_str(), UnlinkatFlags::RemoveDir).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(run: RunId) -> HolderRecord {
        HolderRecord {
            state: RunState::Up,
            namespaces: 9,
            ..HolderRecord::building(run, false, "tiny".into(), None)
        }
    }

    /// One test for the whole life cycle: it sets XDG_RUNTIME_DIR, which
    /// the process shares with every other test thread.
    #[test]
    fn a_run_is_reserved_published_listed_and_removed_with_its_directory() {
        let base = std::env::temp_dir().join(format!("ocslab-user-runs-test-{}", std::process::id()));
        std::fs::create_dir_all(&base).unwrap();
        std::env::set_var("XDG_RUNTIME_DIR", &base);
        assert!(UserRunDir::open().unwrap().is_none(), "open creates nothing");
        let dir = UserRunDir::create().unwrap();
        assert_eq!(dir.path(), base.join("ocslab"));
        let mode = std::fs::metadata(dir.path()).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o700, "the directory must be private");

        let run = dir.reserve(None).unwrap();
        assert!(matches!(dir.reserve(Some(run)), Err(UserRunError::Taken { .. })));
        assert!(dir.read(run).is_err(), "no record before publish");
        let rec = record(run);
        dir.publish(&rec).unwrap();
        let listed = dir.list();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].0, run);
        assert_eq!(listed[0].1.as_ref().unwrap(), &rec);
        assert!(rec.holder_alive(), "this process is the holder");

        assert!(!dir.remove_if_empty(), "a run is still recorded");
        assert!(dir.remove(run).unwrap());
        assert!(!dir.remove(run).unwrap(), "removing twice is harmless");
        assert!(dir.list().is_empty());
        assert!(dir.remove_if_empty());
        assert!(!base.join("ocslab").exists());

        // A directory others may enter is refused.
        std::fs::create_dir(base.join("ocslab")).unwrap();
        std::fs::set_permissions(
            base.join("ocslab"),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        let e = UserRunDir::create().unwrap_err();
        assert!(matches!(e, UserRunError::NotPrivate { .. }), "{e}");
        std::env::remove_var("XDG_RUNTIME_DIR");
        std::fs::remove_dir_all(&base).unwrap();
    }
}
