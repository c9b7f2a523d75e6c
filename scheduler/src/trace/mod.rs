//! Trace readers: each format is its own module, turning a file into model
//! types ([`crate::model`]) with errors that name the file, line and field
//! ([`TraceError`], one type for every format).

pub mod coflow_benchmark;
pub mod flow_sizes;
pub mod generate;
mod glibc_rand;
pub mod swim;

use std::fmt;
use std::path::{Path, PathBuf};

/// A malformed trace: which file, line and field, what is wrong and what
/// would be valid.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct TraceError {
    /// The file (or `<inline>`).
    pub file: PathBuf,
    /// 1-based line (0: the file as a whole, e.g. it cannot be read).
    pub line: usize,
    /// The field, e.g. `arrival_ms`, `reducer[3].megabytes` or `submit_s`
    /// (empty: the line as a whole).
    pub field: String,
    /// What is wrong and what would be valid.
    pub message: String,
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if self.line > 0 {
            write!(f, ":{}", self.line)?;
        }
        f.write_str(": ")?;
        if !self.field.is_empty() {
            write!(f, "field `{}`: ", self.field)?;
        }
        f.write_str(&self.message)
    }
}

/// The text of the trace at `path`.
fn read(path: &Path) -> Result<String, TraceError> {
    std::fs::read_to_string(path).map_err(|e| TraceError {
        file: path.to_path_buf(),
        line: 0,
        field: String::new(),
        message: format!("cannot read: {e}"),
    })
}
