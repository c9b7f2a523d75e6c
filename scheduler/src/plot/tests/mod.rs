//! Tests of the plots: each renders small hand-made data, parses the SVG as XML and checks the
//! title, labels, series names and the number of marks drawn; plus determinism, the "no data"
//! page for empty input, and the errors for invalid input.

mod bars;
mod cdf;
mod results;
mod svg_check;
mod timeline;
mod utilization;

use super::PlotError;

/// Asserts that `result` is an invalid-input error whose message contains `needle`.
fn assert_invalid<T: std::fmt::Debug>(result: Result<T, PlotError>, needle: &str) {
    match result {
        Err(PlotError::InvalidInput { message, .. }) => {
            assert!(
                message.contains(needle),
                "message {message:?} does not mention {needle:?}"
            )
        }
        other => panic!("expected an invalid-input error mentioning {needle:?}, got {other:?}"),
    }
}

/// A fresh, empty scratch directory under the target directory's temp space.
fn scratch_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("ocslab-plot-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}
