//! Bytes over the electrical (EPS) and optical (OCS) fabrics: one stacked bar per scheduler,
//! EPS at the bottom, OCS on top, the OCS share written above each bar.
//!
//! The y unit (B, kB, MB, GB, TB; decimal) is chosen from the tallest bar.

use super::axis::TickedAxis;
use super::bars::value_range;
use super::style::{self, axis_desc_font, fmt_num, label_font, slot_centres, slot_of, GRID, INK};
use super::{render_svg, write_svg, Canvas, DrawResult, PlotError};
use ocslab_emulator::units::Bytes;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;

const PLOT: &str = "bytes by fabric";

/// Colour of the EPS part of a bar.
pub(crate) const EPS: RGBColor = style::PALETTE[0];
/// Colour of the OCS part of a bar.
pub(crate) const OCS: RGBColor = style::PALETTE[1];

/// Writes stacked bars of bytes moved over EPS and over OCS, one bar per row
/// (scheduler name, EPS bytes, OCS bytes), to `path`. With no rows, the file is an explicit
/// "no data" plot.
///
/// # Errors
/// [`PlotError::Write`] when the file cannot be written.
pub fn bytes_by_fabric<S: AsRef<str>>(
    path: &Path,
    title: &str,
    rows: &[(S, Bytes, Bytes)],
) -> Result<(), PlotError> {
    write_svg(path, &render_bytes_by_fabric(title, rows)?)
}

/// Like [`bytes_by_fabric`], but returns the SVG text instead of writing a file.
///
/// # Errors
/// None today; the `Result` keeps the signature in line with the other plots.
pub fn render_bytes_by_fabric<S: AsRef<str>>(
    title: &str,
    rows: &[(S, Bytes, Bytes)],
) -> Result<String, PlotError> {
    if rows.is_empty() {
        return style::render_no_data(PLOT, title, "no schedulers were given");
    }
    let max = rows
        .iter()
        .map(|(_, e, o)| e.0.saturating_add(o.0))
        .max()
        .unwrap_or(0) as f64;
    let (unit, divisor) = [("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)]
        .into_iter()
        .find(|(_, d)| max >= *d)
        .unwrap_or(("B", 1.0));
    let bars: Vec<Bar<'_>> = rows
        .iter()
        .map(|(name, eps, ocs)| Bar {
            name: name.as_ref(),
            eps: eps.0 as f64 / divisor,
            ocs: ocs.0 as f64 / divisor,
            ocs_share: (eps.0 > 0 || ocs.0 > 0).then(|| ocs.0 as f64 / (eps.0 as f64 + ocs.0 as f64)),
        })
        .collect();
    render_svg(PLOT, (style::WIDTH, style::HEIGHT), |root| {
        draw(root, title, unit, &bars)
    })
}

/// One scheduler's bar, in the plot's unit.
struct Bar<'a> {
    name: &'a str,
    eps: f64,
    ocs: f64,
    /// OCS bytes / all bytes; `None` when nothing moved.
    ocs_share: Option<f64>,
}

fn draw(root: &Canvas<'_>, title: &str, unit: &str, bars: &[Bar<'_>]) -> DrawResult {
    let n = bars.len();
    let (_, hi) = value_range(bars.iter().map(|b| b.eps + b.ocs));
    let x_ticks = slot_centres(n, style::WIDTH - 150, 60);
    let mut chart = style::chart_on(root, title, 80).build_cartesian_2d(
        TickedAxis::with_ticks(0.0, n as f64, x_ticks),
        TickedAxis::nice(0.0, hi, 10),
    )?;
    let x_fmt = |v: &f64| {
        bars.get(slot_of(*v))
            .map_or(String::new(), |b| b.name.to_string())
    };
    let y_fmt = |v: &f64| fmt_num(*v);
    chart
        .configure_mesh()
        .disable_x_mesh()
        .bold_line_style(GRID)
        .light_line_style(TRANSPARENT)
        .axis_style(INK)
        .label_style(label_font())
        .axis_desc_style(axis_desc_font())
        .y_desc(format!("bytes moved ({unit})"))
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .draw()?;
    let swatch =
        |c: RGBColor| move |(x, y): (i32, i32)| Rectangle::new([(x, y - 6), (x + 14, y + 6)], c.filled());
    chart
        .draw_series(
            bars.iter()
                .enumerate()
                .filter(|(_, b)| b.eps > 0.0)
                .map(|(i, b)| {
                    Rectangle::new([(i as f64 + 0.25, 0.0), (i as f64 + 0.75, b.eps)], EPS.filled())
                }),
        )?
        .label("EPS (electrical)")
        .legend(swatch(EPS));
    chart
        .draw_series(
            bars.iter()
                .enumerate()
                .filter(|(_, b)| b.ocs > 0.0)
                .map(|(i, b)| {
                    let x = i as f64;
                    Rectangle::new([(x + 0.25, b.eps), (x + 0.75, b.eps + b.ocs)], OCS.filled())
                }),
        )?
        .label("OCS (optical)")
        .legend(swatch(OCS));
    chart.draw_series(bars.iter().enumerate().map(|(i, b)| {
        let text = match b.ocs_share {
            Some(share) => format!("{}% OCS", fmt_num(share * 100.0)),
            None => "no bytes".to_string(),
        };
        EmptyElement::at((i as f64 + 0.5, b.eps + b.ocs))
            + Text::new(
                text,
                (0, -4),
                label_font().pos(Pos::new(HPos::Center, VPos::Bottom)),
            )
    }))?;
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .margin(8)
        .label_font(label_font())
        .background_style(WHITE.mix(0.9))
        .border_style(GRID)
        .draw()?;
    Ok(())
}
