//! Lines through points, one per series: e.g. each scheduler's makespan,
//! normalised to Fair, against the offered load of a sweep's points.
//!
//! Points are drawn in x order, joined by a line and marked. A series'
//! `group` picks its colour and its `variant` its dash and marker, so the
//! lines of one scheduler share a colour and differ by the setting they
//! were run at. A dashed grey reference line (e.g. "Fair = 1") shows the
//! baseline. The legend sits in its own strip under the chart, where it
//! cannot hide a point. The x axis is logarithmic, with ticks at 1, 2 and 5
//! times the decades, when every x is positive and they span at least a
//! decade (offered loads do), linear otherwise.

use super::axis::{draw_mesh, TickedAxis};
use super::style::{self, fmt_num, label_font, INK};
use super::{check_finite, render_svg, write_svg, Canvas, DrawResult, PlotError};
use plotters::coord::CoordTranslate;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;

const PLOT: &str = "line";

/// One named series of (x, y) points and how it is drawn.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Its legend text.
    pub name: String,
    /// Its points, in any order.
    pub points: Vec<(f64, f64)>,
    /// Series of one group share a colour.
    pub group: usize,
    /// Series of one group differ by dash and marker, one per variant.
    pub variant: usize,
}

/// Height of one legend row, in pixels.
const LEGEND_ROW_PX: u32 = 22;

/// Room a legend entry takes left of its text (margin and line sample), in pixels.
const LEGEND_SAMPLE_PX: i32 = 128;

/// A generous average width of one character of the legend's 14-pixel
/// font, in pixels (lower-case letters, digits and punctuation are 4-8):
/// a label is given this much per character, so that no text runs into
/// the next column.
const LEGEND_CHAR_PX: i32 = 9;

/// The legend's columns: two when every label fits in half the width,
/// else one.
fn legend_columns(width: u32, labels: impl Iterator<Item = usize>) -> usize {
    let longest = labels.max().unwrap_or(0) as i32;
    if LEGEND_SAMPLE_PX + longest * LEGEND_CHAR_PX <= width as i32 / 2 {
        2
    } else {
        1
    }
}

/// The legend text of the reference line.
fn reference_label((name, v): (&str, f64)) -> String {
    format!("{name} = {}", fmt_num(v))
}

/// Writes a line plot of `series` to `path`.
///
/// `x_label` and `y_label` name the quantities and units; `reference`, if
/// given, draws a dashed horizontal line at its value with its name in the
/// legend. With no points at all, the file is an explicit "no data" plot.
///
/// # Errors
/// [`PlotError::InvalidInput`] for a coordinate (or reference) that is not
/// finite; [`PlotError::Write`] when the file cannot be written.
pub fn lines(
    path: &Path,
    title: &str,
    (x_label, y_label): (&str, &str),
    series: &[Series],
    reference: Option<(&str, f64)>,
) -> Result<(), PlotError> {
    write_svg(path, &render_lines(title, (x_label, y_label), series, reference)?)
}

/// Like [`lines`], but returns the SVG text instead of writing a file.
///
/// # Errors
/// As [`lines`], without the write errors.
pub fn render_lines(
    title: &str,
    (x_label, y_label): (&str, &str),
    series: &[Series],
    reference: Option<(&str, f64)>,
) -> Result<String, PlotError> {
    for l in series {
        let what = format!("series {:?}", l.name);
        check_finite(PLOT, &format!("{what} x"), l.points.iter().map(|p| p.0))?;
        check_finite(PLOT, &format!("{what} y"), l.points.iter().map(|p| p.1))?;
    }
    if let Some((name, v)) = reference {
        check_finite(PLOT, &format!("reference {name:?}"), [v])?;
    }
    let all = || series.iter().flat_map(|l| l.points.iter().copied());
    let (Some(x_min), Some(x_max)) = (
        all().map(|p| p.0).reduce(f64::min),
        all().map(|p| p.0).reduce(f64::max),
    ) else {
        return style::render_no_data(PLOT, title, "no series has a point");
    };
    let ys = all().map(|p| p.1).chain(reference.map(|r| r.1));
    let (y_min, y_max) = ys.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), y| {
        (lo.min(y), hi.max(y))
    });
    let log = x_min > 0.0 && x_max / x_min >= 10.0;
    let x = if log {
        log_axis(x_min, x_max)
    } else {
        let pad = ((x_max - x_min) * 0.05).max(x_max.abs() * 0.05).max(1e-9);
        let (lo, hi) = (x_min - pad, x_max + pad);
        (lo, hi, TickedAxis::nice(lo, hi, 10).ticks().to_vec())
    };
    let y_pad = ((y_max - y_min) * 0.08).max(y_max.abs() * 0.02).max(1e-9);
    let y = (y_min.min(0.0), y_max + y_pad);
    let to_x = |v: f64| if log { v.log10() } else { v };
    let drawn: Vec<Series> = series
        .iter()
        .map(|l| {
            let mut points: Vec<(f64, f64)> = l.points.iter().map(|&(a, b)| (to_x(a), b)).collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series { points, ..l.clone() }
        })
        .collect();
    let entries = drawn.len() + usize::from(reference.is_some());
    let labels = drawn
        .iter()
        .map(|l| l.name.chars().count())
        .chain(reference.map(|r| reference_label(r).chars().count()));
    let columns = legend_columns(style::WIDTH, labels);
    let legend_h = LEGEND_ROW_PX * entries.div_ceil(columns) as u32 + 16;
    render_svg(PLOT, (style::WIDTH, style::HEIGHT + legend_h), |root| {
        let (chart, legend) = root.split_vertically(style::HEIGHT);
        draw(&chart, title, (x_label, y_label), (x, y, log), &drawn, reference)?;
        draw_legend(&legend, &drawn, reference, columns)
    })
}

/// A log axis as drawn: log10 of the range, ticks at 1, 2 and 5 per decade.
fn log_axis(min: f64, max: f64) -> (f64, f64, Vec<f64>) {
    let (lo, hi) = (min.log10() - 0.05, max.log10() + 0.05);
    let ticks = (lo.floor() as i32..=hi.ceil() as i32)
        .flat_map(|d| [1.0, 2.0, 5.0].map(|m: f64| f64::from(d) + m.log10()))
        .filter(|t| (lo..=hi).contains(t))
        .collect();
    (lo, hi, ticks)
}

type XAxis = (f64, f64, Vec<f64>);

fn draw(
    root: &Canvas<'_>,
    title: &str,
    (x_label, y_label): (&str, &str),
    ((x_lo, x_hi, x_ticks), (y_lo, y_hi), log): (XAxis, (f64, f64), bool),
    series: &[Series],
    reference: Option<(&str, f64)>,
) -> DrawResult {
    let mut chart = style::chart_on(root, title, 70).build_cartesian_2d(
        TickedAxis::with_ticks(x_lo, x_hi, x_ticks),
        TickedAxis::nice(y_lo, y_hi, 10),
    )?;
    let x_desc = if log {
        format!("{x_label}, log scale")
    } else {
        x_label.to_string()
    };
    draw_mesh(
        &mut chart,
        (&x_desc, y_label),
        &|v| fmt_num(if log { 10f64.powf(*v) } else { *v }),
        &|v| fmt_num(*v),
    )?;
    if let Some((_, v)) = reference {
        chart.draw_series(DashedLineSeries::new(
            [(x_lo, v), (x_hi, v)],
            6,
            4,
            reference_style(),
        ))?;
    }
    for l in series {
        draw_styled(
            chart.plotting_area(),
            &l.points,
            &l.points,
            l.variant,
            style::colour(l.group),
        )?;
    }
    Ok(())
}

fn reference_style() -> ShapeStyle {
    INK.mix(0.6).stroke_width(1)
}

/// Draws a line through `line` in `variant`'s dash (solid, dashed or
/// dotted) and `variant`'s marker (a dot, a triangle or a square, filled)
/// at each of `marks`: one definition for the chart and its legend. With
/// the dash, the marker tells nine variants apart.
fn draw_styled<C: CoordTranslate>(
    area: &DrawingArea<SVGBackend<'_>, C>,
    line: &[C::From],
    marks: &[C::From],
    variant: usize,
    colour: RGBColor,
) -> DrawResult
where
    C::From: Clone + 'static,
{
    let stroke = colour.stroke_width(2);
    let path = line.iter().cloned();
    match variant % 3 {
        0 => area.draw(&PathElement::new(path.collect::<Vec<_>>(), stroke))?,
        1 => area.draw(&DashedPathElement::new(path, 8, 5, stroke))?,
        _ => area.draw(&DashedPathElement::new(path, 2, 4, stroke))?,
    }
    let fill = colour.filled();
    for at in marks.iter().cloned() {
        match (variant + variant / 3) % 3 {
            0 => area.draw(&Circle::new(at, 4, fill))?,
            1 => area.draw(&TriangleMarker::new(at, 5, fill))?,
            _ => area.draw(&(EmptyElement::at(at) + Rectangle::new([(-4, -4), (4, 4)], fill)))?,
        }
    }
    Ok(())
}

/// The legend strip: a sample of each line (and the reference) in
/// `columns` columns, filled one column after the other.
fn draw_legend(
    area: &Canvas<'_>,
    series: &[Series],
    reference: Option<(&str, f64)>,
    columns: usize,
) -> DrawResult {
    let (w, _) = area.dim_in_pixel();
    let rows = (series.len() + usize::from(reference.is_some()))
        .div_ceil(columns)
        .max(1);
    let col_w = (w as i32 - 120) / columns as i32;
    let font = label_font().pos(Pos::new(HPos::Left, VPos::Center));
    let mut slot = 0;
    let mut place =
        |area: &Canvas<'_>, text: &str, draw_sample: &dyn Fn(i32, i32) -> DrawResult| -> DrawResult {
            let (col, row) = (slot / rows, slot % rows);
            let x = 90 + col as i32 * col_w;
            let y = 8 + row as i32 * LEGEND_ROW_PX as i32 + LEGEND_ROW_PX as i32 / 2;
            draw_sample(x, y)?;
            area.draw(&Text::new(text.to_string(), (x + 38, y), font.clone()))?;
            slot += 1;
            Ok(())
        };
    if let Some(r) = reference {
        place(area, &reference_label(r), &|x, y| {
            area.draw(&PathElement::new(vec![(x, y), (x + 30, y)], reference_style()))?;
            Ok(())
        })?;
    }
    for l in series {
        let colour = style::colour(l.group);
        place(area, &l.name, &|x, y| {
            draw_styled(area, &[(x, y), (x + 30, y)], &[(x + 15, y)], l.variant, colour)
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(name: &str, points: &[(f64, f64)], variant: usize) -> Series {
        Series {
            name: name.into(),
            points: points.to_vec(),
            group: 0,
            variant,
        }
    }

    fn series() -> Vec<Series> {
        vec![
            line("a", &[(0.5, 1.2), (0.05, 0.9), (5.0, 0.6)], 0),
            line("b", &[(0.05, 1.0), (5.0, 1.4)], 1),
        ]
    }

    #[test]
    fn a_wide_x_range_gets_a_log_axis_and_every_series_its_legend() {
        let svg = render_lines("t", ("load", "ratio"), &series(), Some(("base", 1.0))).expect("draws");
        assert!(svg.contains("load, log scale"), "x axis is not log");
        for legend in ["a", "b", "base = 1"] {
            assert!(
                svg.lines().any(|l| l.trim() == legend),
                "legend {legend:?} missing"
            );
        }
        let narrow = vec![line("a", &[(1.0, 1.0), (2.0, 2.0)], 0)];
        let svg = render_lines("t", ("load", "ratio"), &narrow, None).expect("draws");
        assert!(!svg.contains("log scale"));
    }

    /// The x of the `<text>` element whose text (on the line after its
    /// tag) is `label`.
    fn text_x(svg: &str, label: &str) -> Option<String> {
        let lines: Vec<&str> = svg.lines().collect();
        let i = lines.iter().position(|l| l.trim() == label)?;
        let tag = lines[..i].iter().rev().find(|l| l.contains("<text"))?;
        let at = tag.find(" x=\"")? + 4;
        Some(tag[at..].split('"').next()?.to_string())
    }

    #[test]
    fn long_labels_take_one_legend_column_and_short_ones_two() {
        let long = "shufflewatcher-delay, users=25, map_bytes_per_s+reduce_bytes_per_s=8MB";
        assert_eq!(legend_columns(style::WIDTH, [1, 20, 39].into_iter()), 2);
        assert_eq!(legend_columns(style::WIDTH, [1, long.len()].into_iter()), 1);
        let named = |a: &str, b: &str| vec![line(a, &[(1.0, 1.0)], 0), line(b, &[(2.0, 2.0)], 1)];
        let svg = render_lines("t", ("x", "y"), &named("a", "b"), None).expect("draws");
        assert_ne!(
            text_x(&svg, "a"),
            text_x(&svg, "b"),
            "short labels share a column"
        );
        let other = long.replace("users=25", "users=5");
        let svg = render_lines("t", ("x", "y"), &named(long, &other), None).expect("draws");
        let (x1, x2) = (text_x(&svg, long), text_x(&svg, &other));
        assert!(
            x1.is_some() && x1 == x2,
            "long labels in two columns: {x1:?} {x2:?}"
        );
    }

    #[test]
    fn log_ticks_are_one_two_five_per_decade_inside_the_range() {
        let (lo, hi, ticks) = log_axis(0.05, 5.0);
        let shown: Vec<String> = ticks.iter().map(|t| fmt_num(10f64.powf(*t))).collect();
        assert_eq!(shown, ["0.05", "0.1", "0.2", "0.5", "1", "2", "5"]);
        assert!(lo < 0.05f64.log10() && hi > 5f64.log10());
    }

    #[test]
    fn no_points_is_a_no_data_plot_and_nan_is_refused_by_name() {
        let empty = vec![line("a", &[], 0)];
        let svg = render_lines("t", ("x", "y"), &empty, None).expect("draws");
        assert!(svg.contains("no data"));
        let nan = vec![line("odd", &[(1.0, f64::NAN)], 0)];
        let e = render_lines("t", ("x", "y"), &nan, None).expect_err("NaN");
        assert!(e.to_string().contains("series \"odd\" y"), "{e}");
    }
}
