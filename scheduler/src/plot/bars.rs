//! One bar per name: e.g. makespan, mean JCT or p95 CCT per scheduler, normalised to Fair.
//!
//! Each bar carries its value written above it (below, for a negative value), and an optional
//! dashed reference line (e.g. "Fair = 1") makes "better or worse than the baseline" readable
//! at a glance.

use super::axis::TickedAxis;
use super::style::{self, axis_desc_font, fmt_num, label_font, slot_centres, slot_of, GRID, INK};
use super::{check_finite, render_svg, write_svg, Canvas, DrawResult, PlotError};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;

const PLOT: &str = "bar";

/// Writes a bar chart of `rows` (name, value) to `path`, bars in the given order.
///
/// `y_label` names the quantity and its unit (e.g. `"makespan (normalised to Fair)"`);
/// `reference`, if given, draws a dashed horizontal line at its value with its name in the
/// legend (e.g. `Some(("Fair", 1.0))`). With no rows, the file is an explicit "no data" plot.
///
/// # Errors
/// [`PlotError::InvalidInput`] for a value (or reference) that is not finite;
/// [`PlotError::Write`] when the file cannot be written.
pub fn bars<S: AsRef<str>>(
    path: &Path,
    title: &str,
    y_label: &str,
    rows: &[(S, f64)],
    reference: Option<(&str, f64)>,
) -> Result<(), PlotError> {
    write_svg(path, &render_bars(title, y_label, rows, reference)?)
}

/// Like [`bars`], but returns the SVG text instead of writing a file.
///
/// # Errors
/// As [`bars`], without the write errors.
pub fn render_bars<S: AsRef<str>>(
    title: &str,
    y_label: &str,
    rows: &[(S, f64)],
    reference: Option<(&str, f64)>,
) -> Result<String, PlotError> {
    for (name, value) in rows {
        check_finite(PLOT, &format!("bar {:?}", name.as_ref()), [*value])?;
    }
    if let Some((name, value)) = reference {
        check_finite(PLOT, &format!("reference {name:?}"), [value])?;
    }
    if rows.is_empty() {
        return style::render_no_data(PLOT, title, "no bars were given");
    }
    let names: Vec<&str> = rows.iter().map(|(n, _)| n.as_ref()).collect();
    let values: Vec<f64> = rows.iter().map(|(_, v)| *v).collect();
    render_svg(PLOT, (style::WIDTH, style::HEIGHT), |root| {
        draw(root, title, y_label, &names, &values, reference)
    })
}

/// The y range of a bar chart: from min(0, lowest) to max(0, highest), with headroom for the
/// value labels.
pub(crate) fn value_range(values: impl IntoIterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values
        .into_iter()
        .fold((0.0f64, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let span = if hi > lo { hi - lo } else { 1.0 };
    let lo = if lo < 0.0 { lo - 0.12 * span } else { 0.0 };
    let hi = if hi > 0.0 || lo == 0.0 {
        hi + 0.12 * span
    } else {
        0.0
    };
    (lo, hi)
}

fn draw(
    root: &Canvas<'_>,
    title: &str,
    y_label: &str,
    names: &[&str],
    values: &[f64],
    reference: Option<(&str, f64)>,
) -> DrawResult {
    let n = names.len();
    let (lo, hi) = value_range(values.iter().copied().chain(reference.map(|r| r.1)));
    let x_ticks = slot_centres(n, style::WIDTH - 150, 60);
    let mut chart = style::chart_on(root, title, 80).build_cartesian_2d(
        TickedAxis::with_ticks(0.0, n as f64, x_ticks),
        TickedAxis::nice(lo, hi, 10),
    )?;
    let x_fmt = |v: &f64| names.get(slot_of(*v)).map_or(String::new(), |s| s.to_string());
    let y_fmt = |v: &f64| fmt_num(*v);
    chart
        .configure_mesh()
        .disable_x_mesh()
        .bold_line_style(GRID)
        .light_line_style(TRANSPARENT)
        .axis_style(INK)
        .label_style(label_font())
        .axis_desc_style(axis_desc_font())
        .y_desc(y_label)
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .draw()?;
    chart.draw_series(values.iter().enumerate().map(|(i, v)| {
        let x = i as f64;
        Rectangle::new([(x + 0.2, 0.0), (x + 0.8, *v)], style::colour(i).filled())
    }))?;
    chart.draw_series(values.iter().enumerate().map(|(i, v)| {
        let (v_pos, dy) = if *v < 0.0 {
            (VPos::Top, 4)
        } else {
            (VPos::Bottom, -4)
        };
        EmptyElement::at((i as f64 + 0.5, *v))
            + Text::new(
                fmt_num(*v),
                (0, dy),
                label_font().pos(Pos::new(HPos::Center, v_pos)),
            )
    }))?;
    if let Some((name, at)) = reference {
        let line = INK.mix(0.7).stroke_width(1);
        chart
            .draw_series(DashedLineSeries::new(vec![(0.0, at), (n as f64, at)], 6, 4, line))?
            .label(format!("{name} = {}", fmt_num(at)))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], line));
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .margin(8)
            .label_font(label_font())
            .background_style(WHITE.mix(0.9))
            .border_style(GRID)
            .draw()?;
    }
    Ok(())
}
