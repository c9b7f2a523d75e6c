//! A progress bar for long work (a run, a simulation, a trace replay): jobs done out of the
//! total, bytes moved, elapsed wall-clock time and a free message (e.g. the scheduler running
//! or the simulated time reached).
//!
//! A thin wrapper over `indicatif`. It is shown only on an interactive stderr and never with
//! `--json`, so piped output and JSON reports stay clean; when hidden it still counts, so the
//! caller can read the totals back. Cheap to clone: clones share one bar.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};
use ocslab_emulator::units::Bytes;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The bar's layout: spinner, elapsed time, bar, items done (`{unit}`), bytes, message.
const TEMPLATE: &str =
    "{spinner} [{elapsed_precise}] {bar:30.cyan/blue} {pos}/{len} {unit} · {moved} moved · {msg}";

/// The layout for work that does not count bytes.
const TEMPLATE_NO_BYTES: &str = "{spinner} [{elapsed_precise}] {bar:30.cyan/blue} {pos}/{len} {unit} · {msg}";

/// Whether a progress bar should be drawn: never with `--json`, never when stderr is not a
/// terminal (a pipe, a file, CI).
pub fn should_show(json: bool, stderr_is_terminal: bool) -> bool {
    !json && stderr_is_terminal
}

/// Progress of long work: jobs done out of a total, bytes moved, elapsed time.
#[derive(Debug, Clone)]
pub struct Progress {
    bar: ProgressBar,
    bytes: Arc<AtomicU64>,
}

impl Progress {
    /// A bar for `total_jobs` jobs on stderr, hidden when `json` is set or stderr is not a
    /// terminal (see [`should_show`]).
    pub fn new(total_jobs: u64, json: bool) -> Progress {
        Progress::counting(total_jobs, json, "jobs", true)
    }

    /// A bar for `total` items called `unit` (e.g. `"coflows"`), showing
    /// bytes moved if `bytes`; hidden as [`Progress::new`]'s is.
    pub fn counting(total: u64, json: bool, unit: &'static str, bytes: bool) -> Progress {
        let target = if should_show(json, std::io::stderr().is_terminal()) {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        Progress::with_target(total, target, unit, bytes)
    }

    /// A bar that is never drawn but still counts (for `--json`, tests and batch work).
    pub fn hidden(total_jobs: u64) -> Progress {
        Progress::with_target(total_jobs, ProgressDrawTarget::hidden(), "jobs", true)
    }

    fn with_target(total_jobs: u64, target: ProgressDrawTarget, unit: &'static str, bytes: bool) -> Progress {
        let counter = Arc::new(AtomicU64::new(0));
        let shown = Arc::clone(&counter);
        let moved = move |_: &ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = write!(w, "{}", Bytes(shown.load(Ordering::Relaxed)));
        };
        let unit_key = move |_: &ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = w.write_str(unit);
        };
        let bar = ProgressBar::with_draw_target(Some(total_jobs), target);
        let template = if bytes { TEMPLATE } else { TEMPLATE_NO_BYTES };
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(
                style
                    .with_key("moved", moved)
                    .with_key("unit", unit_key)
                    .progress_chars("=> "),
            );
        }
        if !bar.is_hidden() {
            bar.enable_steady_tick(Duration::from_millis(200));
        }
        Progress { bar, bytes: counter }
    }

    /// Whether the bar is hidden (it still counts).
    pub fn is_hidden(&self) -> bool {
        self.bar.is_hidden()
    }

    /// One more job finished.
    pub fn job_done(&self) {
        self.bar.inc(1);
    }

    /// Sets the number of jobs finished so far.
    pub fn set_jobs_done(&self, done: u64) {
        self.bar.set_position(done);
    }

    /// Jobs finished so far.
    pub fn jobs_done(&self) -> u64 {
        self.bar.position()
    }

    /// Total jobs of the work.
    pub fn total_jobs(&self) -> u64 {
        self.bar.length().unwrap_or(0)
    }

    /// Sets the total (when it is known only once the work has started).
    pub fn set_total_jobs(&self, total: u64) {
        self.bar.set_length(total);
    }

    /// `bytes` more were moved.
    pub fn add_bytes(&self, bytes: Bytes) {
        self.bytes.fetch_add(bytes.0, Ordering::Relaxed);
    }

    /// Sets the bytes moved so far (for callers that keep their own total).
    pub fn set_bytes(&self, bytes: Bytes) {
        self.bytes.store(bytes.0, Ordering::Relaxed);
    }

    /// Bytes moved so far.
    pub fn bytes_moved(&self) -> Bytes {
        Bytes(self.bytes.load(Ordering::Relaxed))
    }

    /// Sets the free text at the end of the bar (e.g. `"Sunflow, t = 12.3 s"`).
    pub fn set_message(&self, message: impl Into<String>) {
        self.bar.set_message(message.into());
    }

    /// Prints a line above the bar without tearing it. A hidden bar prints nothing: use
    /// `tracing` for what must always reach the log.
    pub fn println(&self, line: impl AsRef<str>) {
        self.bar.println(line);
    }

    /// Finishes the bar and removes it from the terminal, leaving the counters readable.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_only_on_a_terminal_without_json() {
        assert!(should_show(false, true));
        assert!(!should_show(true, true));
        assert!(!should_show(false, false));
        assert!(!should_show(true, false));
    }

    #[test]
    fn json_hides_the_bar_whatever_stderr_is() {
        assert!(Progress::new(3, true).is_hidden());
    }

    #[test]
    fn a_hidden_bar_still_counts_jobs_and_bytes_across_clones() {
        let p = Progress::hidden(4);
        let q = p.clone();
        p.job_done();
        q.job_done();
        q.add_bytes(Bytes(1_500));
        p.add_bytes(Bytes(500));
        p.set_message("Fair");
        assert_eq!((p.jobs_done(), p.total_jobs()), (2, 4));
        assert_eq!(q.bytes_moved(), Bytes(2_000));
        p.set_jobs_done(4);
        p.set_bytes(Bytes(10));
        p.finish();
        assert_eq!((q.jobs_done(), q.bytes_moved()), (4, Bytes(10)));
    }
}
