//! Per-link utilization over time (EPS uplinks, OCS ports): small multiples for up to
//! [`SMALL_MULTIPLES_MAX_LINKS`] links, a heatmap (see `utilization_heatmap`) beyond.
//!
//! A sample `(t, u)` is the link's mean utilization over the interval that ends at `t` and
//! starts at the previous sample (at 0 for the first one): what a sampler that counts the bytes
//! a link carried between two reads reports. It is drawn as a step over that interval.

use super::axis::TickedAxis;
use super::style::{
    self, axis_desc_font, fmt_num, fmt_percent, label_font, note_font, title_font, GRID, INK,
};
use super::{render_svg, utilization_heatmap, write_svg, Canvas, DrawResult, PlotError};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;

pub(crate) const PLOT: &str = "utilization";

/// Height of the title band and of the time axis under the last strip, in pixels.
const TITLE_PX: u32 = 50;
const X_AXIS_PX: u32 = 50;
/// Height of the note under the time axis, in pixels.
const FOOTER_PX: u32 = 24;

/// Most steps drawn in one strip; longer series are averaged into this many bins.
pub(crate) const MAX_STRIP_STEPS: usize = 1000;

/// Up to this many links are drawn as small multiples (one strip each); more as a heatmap.
pub const SMALL_MULTIPLES_MAX_LINKS: usize = 16;

/// Writes the utilization of each link over time to `path`.
///
/// `series` holds (link name, samples); a sample is `(t_s, fraction)`, the mean utilization
/// (0 = idle, 1 = busy at the link's rate) over the interval from the previous sample's time
/// (or 0) to `t_s`. With no sample at all, the file is an explicit "no data" plot.
///
/// # Errors
/// [`PlotError::InvalidInput`] when a time or fraction is not finite, a time is negative or
/// earlier than the sample before it, or a fraction is negative; [`PlotError::Write`] when the
/// file cannot be written.
pub fn utilization<S: AsRef<str>>(
    path: &Path,
    title: &str,
    series: &[(S, Vec<(f64, f64)>)],
) -> Result<(), PlotError> {
    write_svg(path, &render_utilization(title, series)?)
}

/// Like [`utilization`], but returns the SVG text instead of writing a file.
///
/// # Errors
/// As [`utilization`], without the write errors.
pub fn render_utilization<S: AsRef<str>>(
    title: &str,
    series: &[(S, Vec<(f64, f64)>)],
) -> Result<String, PlotError> {
    let links = series
        .iter()
        .map(|(name, samples)| Link::new(name.as_ref(), samples))
        .collect::<Result<Vec<_>, _>>()?;
    let end = links
        .iter()
        .filter_map(|l| l.samples.last().map(|s| s.0))
        .fold(0.0, f64::max);
    if links.iter().all(|l| l.samples.is_empty()) {
        let why = if links.is_empty() {
            "no links were given"
        } else {
            "no link has a sample"
        };
        return style::render_no_data(PLOT, title, why);
    }
    if links.len() > SMALL_MULTIPLES_MAX_LINKS {
        return utilization_heatmap::render(title, &links, end);
    }
    let strip_px: u32 = if links.len() <= 6 { 100 } else { 76 };
    let height = TITLE_PX + links.len() as u32 * strip_px + X_AXIS_PX + FOOTER_PX;
    render_svg(PLOT, (style::WIDTH, height), |root| {
        draw_small_multiples(root, title, &links, end)
    })
}

/// One link's validated samples.
pub(crate) struct Link<'a> {
    pub(crate) name: &'a str,
    pub(crate) samples: &'a [(f64, f64)],
}

impl<'a> Link<'a> {
    fn new(name: &'a str, samples: &'a [(f64, f64)]) -> Result<Link<'a>, PlotError> {
        let mut previous = 0.0;
        for (i, (t, u)) in samples.iter().enumerate() {
            let problem = if !t.is_finite() || !u.is_finite() {
                Some("time and fraction must be finite")
            } else if *t < previous {
                Some("times must not be negative nor go backwards")
            } else if *u < 0.0 {
                Some("a utilization cannot be negative")
            } else {
                None
            };
            if let Some(problem) = problem {
                return Err(PlotError::invalid(
                    PLOT,
                    format!("link {name:?}, sample #{i} ({t} s, {u}): {problem}"),
                ));
            }
            previous = *t;
        }
        Ok(Link { name, samples })
    }

    /// The step function's corners: each sample's value held over its interval. Above
    /// [`MAX_STRIP_STEPS`] samples (more than a strip has pixels), the steps are the mean
    /// utilization over that many equal bins instead.
    fn steps(&self) -> Vec<(f64, f64)> {
        let binned: Vec<(f64, f64)>;
        let samples = match self.samples.last() {
            Some((end, _)) if self.samples.len() > MAX_STRIP_STEPS => {
                let width = end / MAX_STRIP_STEPS as f64;
                let means = self.bin_means(*end, MAX_STRIP_STEPS).into_iter().enumerate();
                binned = means
                    .filter_map(|(c, m)| m.map(|m| ((c + 1) as f64 * width, m)))
                    .collect();
                &binned[..]
            }
            _ => self.samples,
        };
        let mut start = 0.0;
        let mut points = Vec::with_capacity(2 * samples.len());
        for (t, u) in samples {
            points.push((start, *u));
            points.push((*t, *u));
            start = *t;
        }
        points
    }

    /// The mean utilization over each of `columns` equal bins of `0..end`, weighted by time;
    /// `None` for a bin no sample covers.
    pub(crate) fn bin_means(&self, end: f64, columns: usize) -> Vec<Option<f64>> {
        let columns = columns.max(1);
        let width = end / columns as f64;
        let mut busy = vec![0.0; columns];
        let mut covered = vec![0.0; columns];
        let mut start = 0.0;
        for (t, u) in self.samples {
            // Spread this sample's interval [start, t) over the bins it overlaps.
            let first = ((start / width).floor() as usize).min(columns - 1);
            let last = ((t / width).ceil() as usize).clamp(first + 1, columns);
            for c in first..last {
                let lo = (c as f64 * width).max(start);
                let hi = ((c + 1) as f64 * width).min(*t);
                if hi > lo {
                    busy[c] += (hi - lo) * u;
                    covered[c] += hi - lo;
                }
            }
            start = *t;
        }
        busy.iter()
            .zip(&covered)
            .map(|(b, c)| (*c > 0.0).then(|| b / c))
            .collect()
    }

    /// Mean utilization over the sampled time and the highest sample, if any time was sampled.
    pub(crate) fn mean_and_peak(&self) -> Option<(f64, f64)> {
        let (mut start, mut area, mut peak) = (0.0, 0.0, 0.0f64);
        for (t, u) in self.samples {
            area += (t - start) * u;
            peak = peak.max(*u);
            start = *t;
        }
        (start > 0.0).then(|| (area / start, peak))
    }
}

fn draw_small_multiples(root: &Canvas<'_>, title: &str, links: &[Link<'_>], end: f64) -> DrawResult {
    let body = root.titled(title, title_font())?;
    // Equal strips; the last one also holds the shared time axis below it.
    let (_, body_h) = body.dim_in_pixel();
    let strip_px = (body_h.saturating_sub(X_AXIS_PX + FOOTER_PX) / links.len() as u32).max(1);
    let breaks: Vec<i32> = (1..links.len()).map(|k| (k as u32 * strip_px) as i32).collect();
    let strips = body.split_by_breakpoints(Vec::<i32>::new(), breaks);
    let x_hi = style::axis_top(end);
    let y_hi = links
        .iter()
        .flat_map(|l| l.samples.iter().map(|s| s.1))
        .fold(1.0, f64::max);
    let x_axis = TickedAxis::nice(0.0, x_hi, 12);
    let x_fmt = |v: &f64| fmt_num(*v);
    let y_fmt = |v: &f64| fmt_percent(*v);
    for (i, (link, area)) in links.iter().zip(&strips).enumerate() {
        let last = i + 1 == links.len();
        let colour = style::colour(i);
        let mut chart = ChartBuilder::on(area)
            .margin_left(20)
            .margin_right(30)
            .margin_top(22)
            .margin_bottom(if last { FOOTER_PX } else { 0 })
            .y_label_area_size(70)
            .x_label_area_size(if last { X_AXIS_PX } else { 0 })
            .build_cartesian_2d(x_axis.clone(), TickedAxis::with_ticks(0.0, y_hi, vec![0.5, 1.0]))?;
        chart
            .configure_mesh()
            .bold_line_style(GRID)
            .light_line_style(TRANSPARENT)
            .axis_style(INK)
            .label_style(label_font())
            .axis_desc_style(axis_desc_font())
            .x_desc(if last { "time (s)" } else { "" })
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&y_fmt)
            .draw()?;
        chart.draw_series(
            AreaSeries::new(link.steps(), 0.0, colour.mix(0.3)).border_style(colour.stroke_width(1)),
        )?;
        let (xs, ys) = chart.plotting_area().get_pixel_range();
        root.draw(&Text::new(
            link.name.to_string(),
            (xs.start, ys.start - 4),
            label_font().pos(Pos::new(HPos::Left, VPos::Bottom)),
        ))?;
        if let Some((mean, peak)) = link.mean_and_peak() {
            root.draw(&Text::new(
                format!("mean {}, peak {}", fmt_percent(mean), fmt_percent(peak)),
                (xs.end, ys.start - 4),
                note_font().pos(Pos::new(HPos::Right, VPos::Bottom)),
            ))?;
        }
    }
    root.draw(&Text::new(
        "y: utilization, the share of the link's rate in use",
        (20, root.dim_in_pixel().1 as i32 - 8),
        note_font().pos(Pos::new(HPos::Left, VPos::Bottom)),
    ))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_series_are_averaged_into_bins_that_keep_the_mean() {
        // 3000 samples of 0.1 s alternating 0% / 100%, over 300 s: 1000 bins of 0.3 s.
        let samples: Vec<(f64, f64)> = (1..=3000)
            .map(|k| (f64::from(k) * 0.1, f64::from(k % 2)))
            .collect();
        let link = Link::new("l", &samples).unwrap();
        let steps = link.steps();
        assert_eq!(steps.len(), 2 * MAX_STRIP_STEPS);
        assert_eq!(steps.last().map(|p| p.0), Some(samples[2999].0));
        let area: f64 = steps.chunks(2).map(|c| (c[1].0 - c[0].0) * c[0].1).sum();
        assert!((area / 300.0 - 0.5).abs() < 1e-9, "mean {}", area / 300.0);
    }

    #[test]
    fn short_series_keep_every_sample() {
        let samples = [(1.0, 0.2), (3.0, 0.8)];
        let link = Link::new("l", &samples).unwrap();
        assert_eq!(link.steps(), vec![(0.0, 0.2), (1.0, 0.2), (1.0, 0.8), (3.0, 0.8)]);
        assert_eq!(link.mean_and_peak(), Some(((0.2 + 2.0 * 0.8) / 3.0, 0.8)));
    }
}
