//! Empirical CDFs, one line per series: e.g. coflow completion times (CCT) or job completion
//! times (JCT) per scheduler, as in the CCT plots of Varys (SIGCOMM'14) and Sunflow (CoNEXT'16).
//!
//! Each line is the exact step function `F(x) = #{values ≤ x} / n`; above 2,000 values it is
//! thinned to 2,000 evenly spaced quantiles so that the SVG stays small. On a log axis the data
//! are drawn as `log10(x)` on a linear axis with ticks at the decades, so both scales share one
//! code path.

use super::axis::{draw_mesh, TickedAxis};
use super::style::{self, fmt_num, label_font, GRID};
use super::{check_finite, render_svg, write_svg, Canvas, DrawResult, PlotError};
use plotters::prelude::*;
use std::path::Path;

const PLOT: &str = "CDF";

/// Most steps drawn per line; longer series are thinned to this many quantiles.
const MAX_STEPS: usize = 2000;

/// How the x axis of a CDF is scaled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum XScale {
    /// Linear from 0 (or from the smallest value, if negative).
    Linear,
    /// Logarithmic, with ticks at the decades; every value must be positive.
    Log,
    /// Logarithmic when every value is positive and they span at least two decades
    /// (coflow sizes and CCTs often span several), linear otherwise.
    #[default]
    Auto,
}

/// Writes an SVG with one empirical CDF per series to `path`.
///
/// `series` holds (name, values); `x_label` names the quantity and its unit, e.g. `"CCT (s)"`.
/// A series without values stays in the legend, marked "no values"; when no series has a
/// value, the file is an explicit "no data" plot.
///
/// # Errors
/// [`PlotError::InvalidInput`] for a non-finite value, or a non-positive one under
/// [`XScale::Log`]; [`PlotError::Write`] when the file cannot be written.
pub fn cdf<S: AsRef<str>>(
    path: &Path,
    title: &str,
    x_label: &str,
    scale: XScale,
    series: &[(S, Vec<f64>)],
) -> Result<(), PlotError> {
    write_svg(path, &render_cdf(title, x_label, scale, series)?)
}

/// Like [`cdf`], but returns the SVG text instead of writing a file.
///
/// # Errors
/// As [`cdf`], without the write errors.
pub fn render_cdf<S: AsRef<str>>(
    title: &str,
    x_label: &str,
    scale: XScale,
    series: &[(S, Vec<f64>)],
) -> Result<String, PlotError> {
    for (name, values) in series {
        check_finite(
            PLOT,
            &format!("series {:?}", name.as_ref()),
            values.iter().copied(),
        )?;
    }
    let all = || series.iter().flat_map(|(_, v)| v.iter().copied());
    let (Some(min), Some(max)) = (all().reduce(f64::min), all().reduce(f64::max)) else {
        let why = if series.is_empty() {
            "no series were given"
        } else {
            "every series is empty"
        };
        return style::render_no_data(PLOT, title, why);
    };
    let log = match scale {
        XScale::Linear => false,
        XScale::Log => {
            if let Some((name, v)) = series
                .iter()
                .find_map(|(name, vs)| vs.iter().find(|v| **v <= 0.0).map(|v| (name.as_ref(), *v)))
            {
                return Err(PlotError::invalid(
                    PLOT,
                    format!("series {name:?} has the value {v}; a log axis needs positive values"),
                ));
            }
            true
        }
        XScale::Auto => min > 0.0 && max / min >= 100.0,
    };
    let lines: Vec<Line> = series
        .iter()
        .map(|(name, values)| Line::new(name.as_ref(), values, log))
        .collect();
    let axis = XAxis::new(min, max, log);
    render_svg(PLOT, (style::WIDTH, style::HEIGHT), |root| {
        draw(root, title, x_label, &axis, &lines)
    })
}

/// One series, sorted, with its legend text.
struct Line {
    legend: String,
    /// Sorted values, already as drawn (log10 of the value on a log axis).
    sorted: Vec<f64>,
}

impl Line {
    fn new(name: &str, values: &[f64], log: bool) -> Line {
        let mut sorted: Vec<f64> = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let legend = match sorted.len() {
            0 => format!("{name} (no values)"),
            n => format!("{name} (n={n}, median {})", fmt_num(sorted[n.div_ceil(2) - 1])),
        };
        if log {
            sorted.iter_mut().for_each(|v| *v = v.log10());
        }
        Line { legend, sorted }
    }

    /// The step function's corners, from (first value, 0) to (`x_end`, 1).
    fn steps(&self, x_end: f64) -> Vec<(f64, f64)> {
        let n = self.sorted.len();
        let Some(first) = self.sorted.first() else {
            return Vec::new();
        };
        let kept = n.min(MAX_STEPS);
        let mut points = Vec::with_capacity(2 * kept + 2);
        points.push((*first, 0.0));
        let mut below = 0.0;
        for k in 1..=kept {
            // The k-th of `kept` evenly spaced quantiles: the value at rank ceil(k n / kept).
            let rank = (k * n).div_ceil(kept);
            let x = self.sorted[rank - 1];
            let p = rank as f64 / n as f64;
            points.push((x, below));
            points.push((x, p));
            below = p;
        }
        points.push((x_end, 1.0));
        points
    }
}

/// The x axis: its drawn range and its ticks (decades on a log axis).
struct XAxis {
    lo: f64,
    hi: f64,
    log: bool,
    ticks: Vec<f64>,
    minor: Vec<f64>,
}

impl XAxis {
    fn new(min: f64, max: f64, log: bool) -> XAxis {
        if log {
            let lo = min.log10().floor();
            let hi = max.log10().ceil().max(lo + 1.0);
            let decades: Vec<f64> = (lo as i32..=hi as i32).map(f64::from).collect();
            let minor = decades
                .iter()
                .flat_map(|d| (2..10).map(move |m| d + f64::from(m).log10()))
                .filter(|v| *v < hi)
                .collect();
            XAxis {
                lo,
                hi,
                log,
                ticks: decades,
                minor,
            }
        } else {
            let lo = min.min(0.0);
            let hi = if max > lo {
                lo + (max - lo) * 1.05
            } else {
                lo + 1.0
            };
            let ticks = TickedAxis::nice(lo, hi, 10).ticks().to_vec();
            XAxis {
                lo,
                hi,
                log,
                ticks,
                minor: Vec::new(),
            }
        }
    }

    fn label(&self, v: f64) -> String {
        if self.log {
            fmt_num(10f64.powf(v.round()))
        } else {
            fmt_num(v)
        }
    }
}

fn draw(root: &Canvas<'_>, title: &str, x_label: &str, axis: &XAxis, lines: &[Line]) -> DrawResult {
    let y_ticks: Vec<f64> = (0..=5).map(|i| f64::from(i) * 0.2).collect();
    let mut chart = style::chart_on(root, title, 70).build_cartesian_2d(
        TickedAxis::with_ticks(axis.lo, axis.hi, axis.ticks.clone()).with_light(axis.minor.clone()),
        TickedAxis::with_ticks(0.0, 1.02, y_ticks),
    )?;
    let x_desc = if axis.log {
        format!("{x_label}, log scale")
    } else {
        x_label.to_string()
    };
    draw_mesh(
        &mut chart,
        (&x_desc, "fraction of values ≤ x"),
        &|v| axis.label(*v),
        &|v| fmt_num(*v),
    )?;
    for (i, line) in lines.iter().enumerate() {
        let colour = style::colour(i);
        let steps = line.steps(axis.hi);
        let drawn = if steps.is_empty() {
            chart.draw_series(std::iter::empty::<PathElement<(f64, f64)>>())?
        } else {
            chart.draw_series(std::iter::once(PathElement::new(steps, colour.stroke_width(2))))?
        };
        drawn
            .label(line.legend.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .margin(12)
        .label_font(label_font())
        .background_style(WHITE.mix(0.9))
        .border_style(GRID)
        .draw()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_climb_one_value_at_a_time_to_one() {
        let line = Line::new("s", &[3.0, 1.0, 2.0], false);
        let third = 1.0 / 3.0;
        let expected = vec![
            (1.0, 0.0),
            (1.0, 0.0),
            (1.0, third),
            (2.0, third),
            (2.0, 2.0 / 3.0),
            (3.0, 2.0 / 3.0),
            (3.0, 1.0),
            (5.0, 1.0),
        ];
        assert_eq!(line.steps(5.0), expected);
    }

    #[test]
    fn long_series_are_thinned_to_quantiles_that_still_reach_one() {
        let values: Vec<f64> = (0..10_000).map(f64::from).collect();
        let steps = Line::new("s", &values, false).steps(20_000.0);
        assert_eq!(steps.len(), 2 * MAX_STEPS + 2);
        // The median step sits at the median value.
        assert!(steps.contains(&(4999.0, 0.5)), "no step at the median");
        assert_eq!(steps[steps.len() - 2], (9999.0, 1.0));
    }
}
