//! The utilization heatmap, for more links than small multiples can hold: one row per link,
//! time on the x axis, darker = busier.
//!
//! Time is cut into at most [`MAX_COLUMNS`] equal columns; each cell shows the link's mean
//! utilization over the part of the column its samples cover, rounded up to the next 10% step.
//! Idle cells and cells without samples stay white, and equal neighbouring cells of a row are
//! drawn as one rectangle, so the SVG stays small for hundreds of links.

use super::axis::TickedAxis;
use super::style::{
    self, axis_desc_font, fmt_num, fmt_percent, label_font, note_font, slot_centres, slot_of, title_font,
    GRID, INK,
};
use super::utilization::{Link, PLOT};
use super::{render_svg, Canvas, DrawResult, PlotError};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Most time columns in the heatmap.
pub(crate) const MAX_COLUMNS: usize = 200;

/// Number of colour steps (10% each).
pub(crate) const LEVELS: usize = 10;

/// Renders `links` (already validated, at least one sample) as a heatmap up to time `end`.
pub(crate) fn render(title: &str, links: &[Link<'_>], end: f64) -> Result<String, PlotError> {
    let row_px: u32 = if links.len() <= 64 { 12 } else { 6 };
    let height = links.len() as u32 * row_px + 160;
    let end = if end > 0.0 { end } else { 1.0 };
    let rows: Vec<Vec<usize>> = links.iter().map(|l| levels(l, end, MAX_COLUMNS)).collect();
    render_svg(PLOT, (style::WIDTH, height), |root| {
        draw(root, title, links, &rows, end, row_px)
    })
}

/// The colour of utilization level `level` (1..=LEVELS): light to dark blue.
pub(crate) fn level_colour(level: usize) -> RGBColor {
    const LIGHT: (f64, f64, f64) = (222.0, 235.0, 247.0);
    const DARK: (f64, f64, f64) = (8.0, 48.0, 107.0);
    let t = level.min(LEVELS) as f64 / LEVELS as f64;
    let mix = |a: f64, b: f64| (a + (b - a) * t).round() as u8;
    RGBColor(mix(LIGHT.0, DARK.0), mix(LIGHT.1, DARK.1), mix(LIGHT.2, DARK.2))
}

/// The level of each of `columns` equal columns over `0..end`: 0 for idle or unsampled,
/// otherwise the mean utilization rounded up to the next 1/LEVELS (at most LEVELS).
fn levels(link: &Link<'_>, end: f64, columns: usize) -> Vec<usize> {
    link.bin_means(end, columns)
        .into_iter()
        .map(|m| m.map_or(0, level_of))
        .collect()
}

/// A mean utilization's level: rounded up to the next 1/LEVELS, at most LEVELS. A hair of
/// tolerance keeps an exact step (0.15 summed from pieces) from spilling into the next one.
fn level_of(mean: f64) -> usize {
    (mean * LEVELS as f64 - 1e-9).ceil().clamp(0.0, LEVELS as f64) as usize
}

/// Runs of equal non-zero levels in a row: (first column, one past the last, level).
fn runs(levels: &[usize]) -> Vec<(usize, usize, usize)> {
    let mut out: Vec<(usize, usize, usize)> = Vec::new();
    for (c, level) in levels.iter().enumerate() {
        match out.last_mut() {
            Some(run) if run.2 == *level && run.1 == c => run.1 = c + 1,
            _ if *level > 0 => out.push((c, c + 1, *level)),
            _ => {}
        }
    }
    out
}

fn draw(
    root: &Canvas<'_>,
    title: &str,
    links: &[Link<'_>],
    rows: &[Vec<usize>],
    end: f64,
    row_px: u32,
) -> DrawResult {
    let n = links.len();
    let columns = rows.first().map_or(1, Vec::len);
    let width = end / columns as f64;
    let y_ticks = slot_centres(n, n as u32 * row_px, 12);
    let mut chart = ChartBuilder::on(root)
        .caption(title, title_font())
        .margin(20)
        .margin_right(110)
        .x_label_area_size(50)
        .y_label_area_size(130)
        .build_cartesian_2d(
            TickedAxis::nice(0.0, end, 12),
            TickedAxis::with_ticks(0.0, n as f64, y_ticks),
        )?;
    let x_fmt = |v: &f64| fmt_num(*v);
    let y_fmt = |v: &f64| {
        links
            .get(n - 1 - slot_of(*v).min(n - 1))
            .map_or(String::new(), |l| l.name.to_string())
    };
    chart
        .configure_mesh()
        .disable_y_mesh()
        .bold_line_style(GRID)
        .light_line_style(TRANSPARENT)
        .axis_style(INK)
        .label_style(label_font())
        .axis_desc_style(axis_desc_font())
        .x_desc("time (s)")
        .y_desc("link")
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .draw()?;
    chart.draw_series(rows.iter().enumerate().flat_map(|(r, levels)| {
        let y = (n - 1 - r) as f64;
        runs(levels).into_iter().map(move |(from, to, level)| {
            Rectangle::new(
                [(from as f64 * width, y), (to as f64 * width, y + 1.0)],
                level_colour(level).filled(),
            )
        })
    }))?;

    // The colour key, right of the plot.
    let (xs, ys) = chart.plotting_area().get_pixel_range();
    let key_x = xs.end + 30;
    let step = (ys.end - ys.start).min(300) / LEVELS as i32;
    for level in 1..=LEVELS {
        let top = ys.start + (LEVELS - level) as i32 * step;
        root.draw(&Rectangle::new(
            [(key_x, top), (key_x + 18, top + step)],
            level_colour(level).filled(),
        ))?;
    }
    for (level, label) in [(LEVELS, 1.0), (LEVELS / 2, 0.5), (0, 0.0)] {
        let y = ys.start + (LEVELS - level) as i32 * step;
        root.draw(&Text::new(
            fmt_percent(label),
            (key_x + 24, y),
            label_font().pos(Pos::new(HPos::Left, VPos::Center)),
        ))?;
    }
    root.draw(&Text::new(
        format!(
            "cell: mean utilization over {} s, rounded up to 10% steps; white: idle or not sampled",
            fmt_num(width)
        ),
        (20, root.dim_in_pixel().1 as i32 - 8),
        note_font().pos(Pos::new(HPos::Left, VPos::Bottom)),
    ))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_average_over_each_column() {
        // Busy at 100% for the first half, idle for the second: two columns.
        let samples = [(1.0, 1.0), (2.0, 0.0)];
        let link = Link {
            name: "l",
            samples: &samples,
        };
        assert_eq!(levels(&link, 2.0, 2), vec![LEVELS, 0]);
        // One column over both halves: mean 50%.
        assert_eq!(levels(&link, 2.0, 1), vec![LEVELS / 2]);
        // A column past the last sample is unsampled.
        assert_eq!(levels(&link, 4.0, 2), vec![LEVELS / 2, 0]);
    }

    #[test]
    fn runs_merge_equal_neighbours_and_skip_idle() {
        assert_eq!(
            runs(&[0, 3, 3, 0, 3, 5, 5]),
            vec![(1, 3, 3), (4, 5, 3), (5, 7, 5)]
        );
    }
}
