//! [`FileError`]: an error in a configuration file that names the file,
//! the line and the dotted field, and the scans of the TOML text that find
//! them ([`locate`], [`FileError::from_toml`]).

use std::fmt;
use std::path::{Path, PathBuf};

/// An error in a configuration file (a topology here, an experiment in the
/// scheduler): which file, which line, which field, what is wrong and what
/// would be valid.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct FileError {
    /// The file (or `<inline>`).
    pub file: PathBuf,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// Dotted field path, e.g. `eps.host_rate`.
    pub field: String,
    /// What is wrong and what would be valid.
    pub message: String,
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if self.field.is_empty() {
            write!(f, ": {}", self.message)
        } else {
            write!(f, ": field `{}`: {}", self.field, self.message)
        }
    }
}

/// Where a file's text came from, to point errors at lines.
pub(super) struct Source<'a> {
    pub(super) file: &'a Path,
    pub(super) text: &'a str,
}

impl Source<'_> {
    pub(super) fn error(&self, field: &str, message: impl Into<String>) -> FileError {
        FileError {
            file: self.file.to_path_buf(),
            line: locate(self.text, field),
            field: field.to_string(),
            message: message.into(),
        }
    }
}

/// The 1-based line where dotted `field` (e.g. `eps.host_rate`) is set, found
/// by a scan of `[table]` headers and `key =` lines.
pub fn locate(text: &str, field: &str) -> Option<usize> {
    let (table, key) = match field.rsplit_once('.') {
        Some((t, k)) => (t, k),
        None => ("", field),
    };
    let mut current = String::new();
    for (i, line) in text.lines().enumerate() {
        let l = line.trim();
        if let Some(h) = table_header(l) {
            current = h.to_string();
            if key.is_empty() && current == table {
                return Some(i + 1);
            }
            continue;
        }
        if current == table {
            if let Some((k, _)) = l.split_once('=') {
                if k.trim() == key {
                    return Some(i + 1);
                }
            }
        }
    }
    // A missing key: point at its table's header if there is one.
    if !table.is_empty() {
        return text
            .lines()
            .position(|l| l.trim().trim_start_matches('[').trim_end_matches(']') == table)
            .map(|i| i + 1);
    }
    None
}

impl FileError {
    /// A toml error in `file`, whose text is `text`, as an error naming
    /// the line and the dotted field: the key set on the line toml points
    /// at, an unknown key on its own line, or a missing key under the
    /// table that lacks it. Topology and experiment files share it.
    pub fn from_toml(file: &Path, text: &str, e: &toml::de::Error) -> FileError {
        let message = e.message().trim();
        let (line, field) = toml_error_location(text, e);
        let (field, message) = match missing_key(message) {
            Some(key) => {
                // toml points at the header of the table that lacks the
                // key, or at the top of the file for a top-level key.
                let table = line.and_then(|l| text.lines().take(l).filter_map(table_header).last());
                let field = match table {
                    Some(t) => format!("{t}.{key}"),
                    None => key.to_string(),
                };
                (field, "missing; it has no default".to_string())
            }
            None => (field, message.to_string()),
        };
        FileError {
            file: file.to_path_buf(),
            line,
            field,
            message,
        }
    }
}

/// Where in `text` a toml error is: its 1-based line and the dotted field
/// set there (the key on that line, under the table header above it). An
/// unknown key inside a tagged table, where toml points at the table's
/// header, is found on its own line.
fn toml_error_location(text: &str, e: &toml::de::Error) -> (Option<usize>, String) {
    let lines: Vec<&str> = text.lines().collect();
    let mut line = e
        .span()
        .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
    if let (Some(l), Some(key)) = (line, unknown_key(e.message())) {
        let found = lines
            .iter()
            .enumerate()
            .skip(l)
            .take_while(|(_, x)| !x.trim().starts_with('['))
            .find(|(_, x)| x.split_once('=').is_some_and(|(k, _)| k.trim() == key));
        if let Some((i, _)) = found {
            line = Some(i + 1);
        }
    }
    let field = line
        .and_then(|l| {
            let key = lines
                .get(l - 1)?
                .split_once('=')
                .map(|(k, _)| k.trim().to_string())?;
            let table = lines[..l - 1].iter().rev().find_map(|x| table_header(x));
            Some(match table {
                Some(t) => format!("{t}.{key}"),
                None => key,
            })
        })
        .unwrap_or_default();
    (line, field)
}

/// The key of a serde "unknown field `key`" message.
pub fn unknown_key(message: &str) -> Option<&str> {
    let rest = message.split_once("unknown field `")?.1;
    rest.split_once('`').map(|(k, _)| k)
}

/// The table a `[table]` or `[[table]]` header line names, without its
/// brackets or a trailing comment.
fn table_header(line: &str) -> Option<&str> {
    let inner = line.trim().strip_prefix('[')?;
    let inner = inner.strip_prefix('[').unwrap_or(inner);
    inner.split_once(']').map(|(name, _)| name.trim())
}

/// The key of a serde "missing field `key`" message.
fn missing_key(message: &str) -> Option<&str> {
    let rest = message.strip_prefix("missing field `")?;
    rest.split_once('`').map(|(k, _)| k)
}
