//! SVG plots for a run's results folder: the figures a researcher would otherwise draw by hand.
//!
//! Each public function takes plain data (no engine or simulator types) and writes one SVG file:
//!
//! | function             | results-folder file(s)         | what it shows                              |
//! |----------------------|--------------------------------|--------------------------------------------|
//! | [`cdf()`]            | `cct_cdf.svg`, `jct_cdf.svg`   | one empirical CDF per scheduler            |
//! | [`circuit_timeline`] | `circuits-<scheduler>.svg`     | which rack had a circuit to which, when    |
//! | [`utilization()`]    | `utilization-<scheduler>.svg`  | per-link utilization over time             |
//! | [`bytes_by_fabric`]  | `bytes_by_fabric.svg`          | bytes over EPS vs OCS, stacked per scheduler |
//! | [`bars()`]           | `makespan.svg`, `avg_jct.svg`, ... | one value per scheduler, normalised    |
//! | [`lines()`]          | `sweep_makespan.svg`, ... (`ocslab sweep`) | a figure against offered load, per scheduler |
//!
//! [`write_results_plots`] writes that whole set from one [`SchedulerPlotData`] per scheduler;
//! `docs/results.md` explains how to read each file.
//!
//! Every `render_*` twin returns the SVG text instead of writing it, so callers and tests can
//! check a plot without touching the file system.
//!
//! Design decisions:
//! - **Deterministic output.** The same input gives byte-identical SVG: no clock, no random
//!   colours, no hash-map iteration, no system fonts. Text is laid out with plotters' built-in
//!   font metrics estimate (its `ttf` feature stays off), and the viewer draws it with its own
//!   `sans-serif`.
//! - **Empty input is not an error.** A run without circuits or without finished coflows still
//!   gets its plot file, which says "no data" and why; invalid input (NaN, a span ending before
//!   it starts, a rack out of range) is a [`PlotError`] naming the series and the index.

mod axis;
mod bars;
mod cdf;
mod fabric_bytes;
mod lines;
mod results;
mod style;
mod timeline;
mod utilization;
mod utilization_heatmap;

#[cfg(test)]
mod tests;

pub use bars::{bars, render_bars};
pub use cdf::{cdf, render_cdf, XScale};
pub use fabric_bytes::{bytes_by_fabric, render_bytes_by_fabric};
pub use lines::{lines, render_lines, Series};
pub use results::{write_results_plots, SchedulerPlotData};
pub use timeline::{circuit_timeline, render_circuit_timeline, CircuitSpan};
pub use utilization::{render_utilization, utilization, SMALL_MULTIPLES_MAX_LINKS};

use plotters::coord::Shift;
use plotters::prelude::{DrawingArea, IntoDrawingArea, SVGBackend};
use std::path::{Path, PathBuf};

/// Why a plot could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// The input data cannot be drawn (a NaN, a span that ends before it starts, ...).
    #[error("{plot} plot: {message}")]
    InvalidInput {
        /// Which plot was asked for (e.g. "circuit timeline").
        plot: &'static str,
        /// What is wrong, naming the series / element and what would be valid.
        message: String,
    },
    /// plotters failed while drawing (should not happen when drawing into memory).
    #[error("{plot} plot: drawing failed: {message}")]
    Draw {
        /// Which plot was being drawn.
        plot: &'static str,
        /// The drawing backend's message.
        message: String,
    },
    /// The SVG file could not be written.
    #[error("writing {}: {source}", path.display())]
    Write {
        /// The file that was being written.
        path: PathBuf,
        /// The underlying I/O error.
        source: std::io::Error,
    },
}

impl PlotError {
    pub(crate) fn invalid(plot: &'static str, message: impl Into<String>) -> Self {
        PlotError::InvalidInput {
            plot,
            message: message.into(),
        }
    }
}

/// The drawing area every renderer draws on.
pub(crate) type Canvas<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// The error plotters' drawing calls return on an [`SVGBackend`].
pub(crate) type DrawResult = Result<(), Box<dyn std::error::Error>>;

/// Runs `draw` on a fresh white canvas of `size` pixels and returns the finished SVG text.
pub(crate) fn render_svg(
    plot: &'static str,
    size: (u32, u32),
    draw: impl FnOnce(&Canvas<'_>) -> DrawResult,
) -> Result<String, PlotError> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        let drawn = root
            .fill(&plotters::style::WHITE)
            .map_err(|e| e.into())
            .and_then(|()| draw(&root))
            .and_then(|()| root.present().map_err(|e| e.into()));
        drawn.map_err(|e| PlotError::Draw {
            plot,
            message: e.to_string(),
        })?;
    }
    Ok(svg)
}

/// Writes rendered SVG text to `path`.
pub(crate) fn write_svg(path: &Path, svg: &str) -> Result<(), PlotError> {
    std::fs::write(path, svg).map_err(|source| PlotError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// Checks that every value is finite, naming the first one that is not.
pub(crate) fn check_finite(
    plot: &'static str,
    what: &str,
    values: impl IntoIterator<Item = f64>,
) -> Result<(), PlotError> {
    for (index, value) in values.into_iter().enumerate() {
        if !value.is_finite() {
            return Err(PlotError::invalid(
                plot,
                format!("{what}: value #{index} is {value}; only finite numbers can be drawn"),
            ));
        }
    }
    Ok(())
}
