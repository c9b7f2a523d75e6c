//! One numeric axis with the ticks chosen by the plot (decades on a log axis, slot centres on
//! a categorical one, "nice" numbers otherwise), formatted by the plot's own label function.
//!
//! plotters' `with_key_points` wrapper does not keep the label formatting of `f64` ranges, so
//! this small [`Ranged`] implementation stands in for it.

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::types::RangedCoordf64;
use std::ops::Range;

/// A linear `f64` axis over `lo..hi` whose grid lines and labels sit at given values.
#[derive(Clone)]
pub(crate) struct TickedAxis {
    inner: RangedCoordf64,
    bold: Vec<f64>,
    light: Vec<f64>,
}

impl TickedAxis {
    /// An axis over `lo..hi` with about `max_ticks` "nice" ticks (1, 2 or 5 times a power of ten).
    pub(crate) fn nice(lo: f64, hi: f64, max_ticks: usize) -> TickedAxis {
        let inner = RangedCoordf64::from(lo..hi);
        let bold = inner.key_points(max_ticks);
        TickedAxis {
            inner,
            bold,
            light: Vec::new(),
        }
    }

    /// An axis over `lo..hi` with ticks and labelled grid lines exactly at `ticks`.
    pub(crate) fn with_ticks(lo: f64, hi: f64, ticks: Vec<f64>) -> TickedAxis {
        TickedAxis {
            inner: RangedCoordf64::from(lo..hi),
            bold: ticks,
            light: Vec::new(),
        }
    }

    /// Adds unlabelled light grid lines at `values`.
    pub(crate) fn with_light(mut self, values: Vec<f64>) -> TickedAxis {
        self.light = values;
        self
    }

    /// The labelled tick values.
    pub(crate) fn ticks(&self) -> &[f64] {
        &self.bold
    }
}

impl Ranged for TickedAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.inner.map(value, limit)
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            self.light.clone()
        } else {
            self.bold.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.inner.range()
    }
}

/// Draws the grid, the axes, their tick labels (formatted by `x_fmt` and
/// `y_fmt`) and their descriptions on a chart over two [`TickedAxis`],
/// in the look every plot shares.
pub(crate) fn draw_mesh(
    chart: &mut plotters::chart::ChartContext<
        '_,
        plotters::prelude::SVGBackend<'_>,
        plotters::coord::cartesian::Cartesian2d<TickedAxis, TickedAxis>,
    >,
    (x_desc, y_desc): (&str, &str),
    x_fmt: &dyn Fn(&f64) -> String,
    y_fmt: &dyn Fn(&f64) -> String,
) -> super::DrawResult {
    use super::style::{axis_desc_font, label_font, GRID, INK};
    use plotters::style::Color;
    chart
        .configure_mesh()
        .bold_line_style(GRID)
        .light_line_style(GRID.mix(0.4))
        .axis_style(INK)
        .label_style(label_font())
        .axis_desc_style(axis_desc_font())
        .x_desc(x_desc)
        .y_desc(y_desc)
        .x_label_formatter(x_fmt)
        .y_label_formatter(y_fmt)
        .draw()?;
    Ok(())
}
