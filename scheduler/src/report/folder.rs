//! Results folders that are either complete or absent.
//!
//! A run writes its folder under a hidden sibling, `.<name>.partial`, and
//! [`Staged::finish`] renames it to `<name>` once every file in it is
//! written and synced to disk. So a folder under the name a run prints is
//! always complete: a run that fails, is interrupted or is killed leaves no
//! folder under that name, at most a `.partial` sibling that no reader
//! takes for results (the next run to the same name removes it). A
//! folder that already has the name is replaced whole, never mixed with
//! the new one.

use std::io;
use std::path::{Path, PathBuf};

/// The suffix of a folder still being written.
pub const PARTIAL_SUFFIX: &str = ".partial";

/// A results folder being written.
#[derive(Debug)]
pub struct Staged {
    target: PathBuf,
    partial: PathBuf,
    finished: bool,
}

/// Why a folder could not be staged or finished, naming the path.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {source}")]
pub struct FolderError {
    /// The file or folder.
    pub path: String,
    /// Why.
    pub source: io::Error,
}

fn at(path: &Path) -> impl FnOnce(io::Error) -> FolderError + '_ {
    move |source| FolderError {
        path: path.display().to_string(),
        source,
    }
}

/// The hidden sibling under which `target` is written.
pub fn partial_path(target: &Path) -> PathBuf {
    let name = target
        .file_name()
        .map_or_else(|| "results".into(), |n| n.to_string_lossy().into_owned());
    target.with_file_name(format!(".{name}{PARTIAL_SUFFIX}"))
}

/// `base`, or `base-2`, `base-3`, ... : the first that does not exist yet.
pub fn unique(base: &str) -> PathBuf {
    let mut dir = PathBuf::from(base);
    let mut n = 2;
    while dir.exists() {
        dir = PathBuf::from(format!("{base}-{n}"));
        n += 1;
    }
    dir
}

/// `<prefix>-<UTC time>`, made unique with a suffix (see [`unique`]).
pub fn dated(prefix: &str) -> PathBuf {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    unique(&format!("{prefix}-{}", utc_stamp(secs)))
}

/// `YYYYmmddTHHMMSSZ` for seconds since the epoch (civil-from-days, H. Hinnant).
pub fn utc_stamp(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

impl Staged {
    /// Starts writing the folder `target`: an empty `.partial` sibling,
    /// after removing one a crashed run left.
    pub fn begin(target: &Path) -> Result<Staged, FolderError> {
        let partial = partial_path(target);
        if partial.exists() {
            std::fs::remove_dir_all(&partial).map_err(at(&partial))?;
        }
        std::fs::create_dir_all(&partial).map_err(at(&partial))?;
        Ok(Staged {
            target: target.to_path_buf(),
            partial,
            finished: false,
        })
    }

    /// Like [`Staged::begin`], but keeps what a killed run left in the
    /// `.partial` sibling, for a run that picks up where it stopped
    /// (`ocslab sweep --resume`).
    pub fn resume(target: &Path) -> Result<Staged, FolderError> {
        let partial = partial_path(target);
        std::fs::create_dir_all(&partial).map_err(at(&partial))?;
        Ok(Staged {
            target: target.to_path_buf(),
            partial,
            finished: false,
        })
    }

    /// Where the files go until the folder is finished.
    pub fn path(&self) -> &Path {
        &self.partial
    }

    /// The name the folder will have.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Syncs every file, then gives the folder its name (replacing a
    /// folder of that name) and syncs its parent; returns the name.
    pub fn finish(mut self) -> Result<PathBuf, FolderError> {
        sync_tree(&self.partial)?;
        if self.target.exists() {
            std::fs::remove_dir_all(&self.target).map_err(at(&self.target))?;
        }
        std::fs::rename(&self.partial, &self.target).map_err(at(&self.target))?;
        self.finished = true;
        let parent = match self.target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        std::fs::File::open(parent)
            .and_then(|d| d.sync_all())
            .map_err(at(parent))?;
        Ok(self.target.clone())
    }
}

impl Drop for Staged {
    /// A folder never finished (an error, a panic) is removed; a killed
    /// process leaves its `.partial` sibling, removed by the next run.
    fn drop(&mut self) {
        if !self.finished {
            let _ = std::fs::remove_dir_all(&self.partial);
        }
    }
}

fn sync_tree(dir: &Path) -> Result<(), FolderError> {
    for entry in std::fs::read_dir(dir).map_err(at(dir))? {
        let path = entry.map_err(at(dir))?.path();
        if path.is_dir() {
            sync_tree(&path)?;
        } else {
            std::fs::File::open(&path)
                .and_then(|f| f.sync_all())
                .map_err(at(&path))?;
        }
    }
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(at(dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("ocslab-folder-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("scratch dir");
        d
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .expect("read dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_finished_folder_appears_whole_under_its_name() {
        let root = scratch("finish");
        let target = root.join("run");
        let staged = Staged::begin(&target).expect("begin");
        std::fs::create_dir_all(staged.path().join("fair")).expect("mkdir");
        std::fs::write(staged.path().join("fair/jobs.csv"), "job\n1\n").expect("write");
        assert!(!target.exists(), "the name appears only when finished");
        assert_eq!(names(&root), [".run.partial"]);
        assert_eq!(staged.finish().expect("finish"), target);
        assert_eq!(names(&root), ["run"]);
        assert_eq!(
            std::fs::read_to_string(target.join("fair/jobs.csv")).expect("read"),
            "job\n1\n"
        );
        std::fs::remove_dir_all(&root).expect("clean");
    }

    #[test]
    fn an_unfinished_folder_leaves_nothing() {
        let root = scratch("drop");
        let staged = Staged::begin(&root.join("run")).expect("begin");
        std::fs::write(staged.path().join("summary.json"), "{").expect("write");
        drop(staged);
        assert!(names(&root).is_empty(), "{:?}", names(&root));
        std::fs::remove_dir_all(&root).expect("clean");
    }

    #[test]
    fn a_crashed_runs_partial_is_replaced_and_an_old_folder_is_not_mixed_in() {
        let root = scratch("replace");
        let target = root.join("run");
        // A complete folder of an earlier run, and the leftovers of a killed one.
        std::fs::create_dir_all(&target).expect("mkdir");
        std::fs::write(target.join("old.csv"), "old").expect("write");
        std::fs::create_dir_all(partial_path(&target)).expect("mkdir");
        std::fs::write(partial_path(&target).join("half.csv"), "ha").expect("write");
        let staged = Staged::begin(&target).expect("begin");
        assert!(names(staged.path()).is_empty(), "the killed run's files are gone");
        std::fs::write(staged.path().join("new.csv"), "new").expect("write");
        staged.finish().expect("finish");
        assert_eq!(names(&root), ["run"]);
        assert_eq!(names(&target), ["new.csv"]);
        std::fs::remove_dir_all(&root).expect("clean");
    }

    #[test]
    fn utc_stamp_matches_known_dates() {
        assert_eq!(utc_stamp(0), "19700101T000000Z");
        assert_eq!(utc_stamp(951_782_400), "20000229T000000Z");
        assert_eq!(utc_stamp(1_700_000_000), "20231114T221320Z");
    }

    #[test]
    fn unique_names_skip_existing_folders() {
        let root = scratch("unique");
        let base = root.join("demo").display().to_string();
        assert_eq!(unique(&base), root.join("demo"));
        std::fs::create_dir_all(root.join("demo")).expect("mkdir");
        std::fs::create_dir_all(root.join("demo-2")).expect("mkdir");
        assert_eq!(unique(&base), root.join("demo-3"));
        std::fs::remove_dir_all(&root).expect("clean");
    }
}
