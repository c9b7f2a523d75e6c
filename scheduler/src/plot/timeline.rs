//! The circuit timeline: which rack had an optical circuit to which rack, and when.
//!
//! One row per source rack (per source rack and OCS port when a rack has several ports), time on
//! the x axis. Each circuit is a bar from the moment it carried light to the moment it was torn
//! down, coloured by its destination rack and labelled with it where the bar is wide enough;
//! circuits under a pixel wide are drawn per pixel column ([`pixel_bars`]). Every reconfiguration
//! is a thin red vertical line, so the dark gap of δ after each one is visible between the bars.
//! This is the picture of a circuit schedule drawn in the Sunflow paper (Huang et al., CoNEXT'16,
//! Fig. 2), read from a real run.

use super::axis::TickedAxis;
use super::style::{self, axis_desc_font, fmt_num, label_font, note_font, slot_centres, slot_of, GRID, INK};
use super::{check_finite, render_svg, write_svg, Canvas, DrawResult, PlotError};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

const PLOT: &str = "circuit timeline";

/// Colour of the reconfiguration marks.
pub(crate) const RECONFIGURATION: RGBColor = RGBColor(0xc0, 0x39, 0x2b);

/// Up to this many reconfigurations are drawn as lines through every row; more as ticks in a
/// band above the rows.
pub(crate) const MAX_RECONFIGURATION_LINES: usize = 100;

/// One optical circuit while it was up: light from `src_rack`'s OCS port `port` to `dst_rack`,
/// from `from_s` to `to_s` (seconds since the start of the run). A circuit still up when the
/// run ended should end at the run's end.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CircuitSpan {
    /// The rack whose ToR sends into the circuit.
    pub src_rack: usize,
    /// The rack whose ToR receives from it.
    pub dst_rack: usize,
    /// The source rack's OCS port (0 when each rack has one port).
    pub port: usize,
    /// When the circuit came up, in seconds since the start of the run.
    pub from_s: f64,
    /// When it was torn down (or the run ended), in seconds since the start of the run.
    pub to_s: f64,
}

/// Writes the circuit timeline of a run with `racks` racks to `path`.
///
/// `reconfigurations` holds the times (s) at which the OCS began a reconfiguration. With no
/// circuit and no reconfiguration, the file is an explicit "no data" plot.
///
/// # Errors
/// [`PlotError::InvalidInput`] for a span whose rack is not below `racks`, that goes from a
/// rack to itself, or whose times are not finite, negative or reversed, and for a reconfiguration
/// time that is not finite or negative; [`PlotError::Write`] when the file cannot be written.
pub fn circuit_timeline(
    path: &Path,
    title: &str,
    racks: usize,
    circuits: &[CircuitSpan],
    reconfigurations: &[f64],
) -> Result<(), PlotError> {
    write_svg(
        path,
        &render_circuit_timeline(title, racks, circuits, reconfigurations)?,
    )
}

/// Like [`circuit_timeline`], but returns the SVG text instead of writing a file.
///
/// # Errors
/// As [`circuit_timeline`], without the write errors.
pub fn render_circuit_timeline(
    title: &str,
    racks: usize,
    circuits: &[CircuitSpan],
    reconfigurations: &[f64],
) -> Result<String, PlotError> {
    validate(racks, circuits, reconfigurations)?;
    if racks == 0 {
        return style::render_no_data(PLOT, title, "the topology has no racks");
    }
    if circuits.is_empty() && reconfigurations.is_empty() {
        return style::render_no_data(PLOT, title, "no optical circuit was set up during the run");
    }
    let rows = Rows::new(racks, circuits);
    let row_px = match rows.labels.len() {
        0..=8 => 34,
        9..=24 => 26,
        25..=64 => 16,
        _ => 10,
    };
    let band = if reconfigurations.len() > MAX_RECONFIGURATION_LINES {
        row_px.max(16)
    } else {
        0
    };
    let height = rows.labels.len() as u32 * row_px + band + 150;
    render_svg(PLOT, (style::WIDTH, height), |root| {
        draw(root, title, &rows, row_px, circuits, reconfigurations)
    })
}

fn validate(racks: usize, circuits: &[CircuitSpan], reconfigurations: &[f64]) -> Result<(), PlotError> {
    for (i, c) in circuits.iter().enumerate() {
        let what = format!("circuit span #{i} (r{} -> r{})", c.src_rack, c.dst_rack);
        let problem = if c.src_rack >= racks || c.dst_rack >= racks {
            Some(format!("racks must be below {racks}, the number of racks"))
        } else if c.src_rack == c.dst_rack {
            Some("a circuit must join two different racks".to_string())
        } else if !(c.from_s.is_finite() && c.to_s.is_finite()) {
            Some(format!("times {}..{} s must be finite", c.from_s, c.to_s))
        } else if c.from_s < 0.0 || c.to_s < c.from_s {
            Some(format!(
                "from_s {} and to_s {} must satisfy 0 <= from_s <= to_s",
                c.from_s, c.to_s
            ))
        } else {
            None
        };
        if let Some(problem) = problem {
            return Err(PlotError::invalid(PLOT, format!("{what}: {problem}")));
        }
    }
    check_finite(PLOT, "reconfiguration times", reconfigurations.iter().copied())?;
    if let Some((i, t)) = reconfigurations.iter().enumerate().find(|(_, t)| **t < 0.0) {
        return Err(PlotError::invalid(
            PLOT,
            format!("reconfiguration #{i} at {t} s: times count from the start of the run, so must be >= 0"),
        ));
    }
    Ok(())
}

/// The rows of the timeline, top to bottom: every rack, split by OCS port when needed.
struct Rows {
    labels: Vec<String>,
    /// Row of each (source rack, port) that has circuits.
    index: BTreeMap<(usize, usize), usize>,
    /// Rows at which a new rack starts (for the separators).
    rack_starts: Vec<usize>,
}

impl Rows {
    fn new(racks: usize, circuits: &[CircuitSpan]) -> Rows {
        let mut ports: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
        for c in circuits {
            ports.entry(c.src_rack).or_default().insert(c.port);
        }
        let by_port = ports.values().any(|p| p.len() > 1 || p.iter().any(|p| *p != 0));
        let mut rows = Rows {
            labels: Vec::new(),
            index: BTreeMap::new(),
            rack_starts: Vec::new(),
        };
        for rack in 0..racks {
            rows.rack_starts.push(rows.labels.len());
            match ports.get(&rack) {
                Some(ps) if by_port => {
                    for p in ps {
                        rows.index.insert((rack, *p), rows.labels.len());
                        rows.labels.push(format!("r{rack} p{p}"));
                    }
                }
                Some(ps) => {
                    for p in ps {
                        rows.index.insert((rack, *p), rows.labels.len());
                    }
                    rows.labels.push(format!("r{rack}"));
                }
                None => rows.labels.push(format!("r{rack}")),
            }
        }
        rows
    }

    /// The y range of row `row` (row 0 at the top), shrunk by a small gap.
    fn band(&self, row: usize) -> (f64, f64) {
        let bottom = (self.labels.len() - 1 - row) as f64;
        (bottom + 0.12, bottom + 0.88)
    }
}

/// A bar of the timeline: in row `row`, light to rack `dst` over `[from_s, to_s]`.
struct Bar {
    row: usize,
    dst: usize,
    from_s: f64,
    to_s: f64,
}

/// The bars of `circuits` at `px_per_s` pixels a second: each circuit at least a pixel wide is a
/// bar of its own (the second list); the narrower ones of a row go to the pixel column of their
/// midpoint, each column takes the colour of the destination that was up longest in it, and a run
/// of columns of one colour is one bar (the first list, each bar named by the destination of its
/// first column). A run with a million circuits (Sunflow over FB2010) then draws about 60,000
/// bars, not a 100 MB file, and every circuit wide enough to see is drawn as it was.
fn pixel_bars(rows: &Rows, circuits: &[CircuitSpan], px_per_s: f64) -> (Vec<Bar>, Vec<Bar>) {
    let mut whole = Vec::new();
    // (row, column) -> destination -> seconds up.
    let mut up: BTreeMap<(usize, u64), BTreeMap<usize, f64>> = BTreeMap::new();
    for c in circuits {
        let row = rows.index.get(&(c.src_rack, c.port)).copied().unwrap_or(0);
        if (c.to_s - c.from_s) * px_per_s >= 1.0 {
            whole.push(Bar {
                row,
                dst: c.dst_rack,
                from_s: c.from_s,
                to_s: c.to_s,
            });
        } else if c.to_s > c.from_s {
            // (A circuit torn down as it came up shows nowhere.)
            let column = ((c.from_s + c.to_s) / 2.0 * px_per_s) as u64;
            *up.entry((row, column))
                .or_default()
                .entry(c.dst_rack)
                .or_default() += c.to_s - c.from_s;
        }
    }
    let mut columns: Vec<Bar> = Vec::new();
    let mut last: Option<(usize, u64)> = None;
    for ((row, column), by_dst) in up {
        // The longest up; of equals, the lowest rack.
        let Some((&dst, _)) = by_dst.iter().max_by(|a, b| a.1.total_cmp(b.1).then(b.0.cmp(a.0))) else {
            continue;
        };
        let to_s = (column + 1) as f64 / px_per_s;
        match columns.last_mut() {
            // Racks of one colour look alike: their runs join too.
            Some(b)
                if last == Some((row, column.wrapping_sub(1)))
                    && style::colour(b.dst) == style::colour(dst) =>
            {
                b.to_s = to_s
            }
            _ => columns.push(Bar {
                row,
                dst,
                from_s: column as f64 / px_per_s,
                to_s,
            }),
        }
        last = Some((row, column));
    }
    (columns, whole)
}

/// Dark text on light colours, white on dark ones.
fn text_colour_on(c: RGBColor) -> &'static RGBColor {
    let luma = 0.299 * f64::from(c.0) + 0.587 * f64::from(c.1) + 0.114 * f64::from(c.2);
    if luma > 150.0 {
        &INK
    } else {
        &WHITE
    }
}

fn draw(
    root: &Canvas<'_>,
    title: &str,
    rows: &Rows,
    row_px: u32,
    circuits: &[CircuitSpan],
    reconfigurations: &[f64],
) -> DrawResult {
    let n = rows.labels.len();
    let end = circuits
        .iter()
        .map(|c| c.to_s)
        .chain(reconfigurations.iter().copied())
        .fold(0.0, f64::max);
    let x_hi = style::axis_top(end);
    // Few reconfigurations: a line through every row. Many: a tick each in a band above the
    // rows, so that they do not veil the circuits.
    let rug = reconfigurations.len() > MAX_RECONFIGURATION_LINES;
    let mut y_ticks = slot_centres(n, n as u32 * row_px, 12);
    if rug {
        y_ticks.push(n as f64 + 0.5);
    }
    let y_hi = if rug { n as f64 + 1.0 } else { n as f64 };
    let mut chart = style::chart_on(root, title, 80).build_cartesian_2d(
        TickedAxis::nice(0.0, x_hi, 12),
        TickedAxis::with_ticks(0.0, y_hi, y_ticks),
    )?;
    let x_fmt = |v: &f64| fmt_num(*v);
    let y_fmt = |v: &f64| match slot_of(*v) {
        slot if slot >= n => "reconfig.".to_string(),
        slot => rows.labels.get(n - 1 - slot).cloned().unwrap_or_default(),
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
        .y_desc(if rows.index.keys().any(|(_, p)| *p != 0) {
            "source rack, OCS port"
        } else {
            "source rack"
        })
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .draw()?;

    // Separators between racks.
    chart.draw_series(rows.rack_starts.iter().skip(1).map(|r| {
        let y = (n - r) as f64;
        PathElement::new(vec![(0.0, y), (x_hi, y)], GRID.stroke_width(1))
    }))?;

    // The circuits, coloured by destination: those under a pixel wide by pixel column.
    let (plot_w, _) = chart.plotting_area().dim_in_pixel();
    let px_per_s = f64::from(plot_w) / x_hi;
    let (columns, whole) = pixel_bars(rows, circuits, px_per_s);
    let bar = |b: &Bar| {
        let (y0, y1) = rows.band(b.row);
        Rectangle::new([(b.from_s, y0), (b.to_s, y1)], style::colour(b.dst).filled())
    };
    chart.draw_series(columns.iter().map(bar))?;
    chart.draw_series(whole.iter().map(bar))?;

    // Destination labels where the bar has room for them.
    if row_px >= 16 {
        let mut labels = Vec::new();
        for c in &whole {
            let (dst, (y0, y1)) = (&c.dst, rows.band(c.row));
            let text = format!("→r{dst}");
            let font = label_font().color(text_colour_on(style::colour(*dst)));
            let (w, _) = root.estimate_text_size(&text, &font)?;
            if (c.to_s - c.from_s) * px_per_s >= f64::from(w) + 6.0 {
                let at = ((c.from_s + c.to_s) / 2.0, (y0 + y1) / 2.0);
                labels.push(Text::new(
                    text,
                    at,
                    font.pos(Pos::new(HPos::Center, VPos::Center)),
                ));
            }
        }
        chart.draw_series(labels)?;
    }

    // Reconfiguration marks.
    let mark = RECONFIGURATION.mix(0.6).stroke_width(1);
    let (y0, y1) = if rug {
        (n as f64 + 0.15, n as f64 + 0.85)
    } else {
        (0.0, n as f64)
    };
    // In the band, one tick per pixel column that had any.
    let ticks: Vec<f64> = if rug {
        let columns: BTreeSet<u64> = reconfigurations.iter().map(|t| (t * px_per_s) as u64).collect();
        columns.iter().map(|&c| (c as f64 + 0.5) / px_per_s).collect()
    } else {
        reconfigurations.to_vec()
    };
    chart.draw_series(
        ticks
            .iter()
            .map(|t| PathElement::new(vec![(*t, y0), (*t, y1)], mark)),
    )?;

    // The key, under the time axis: what a bar is, what a red line is.
    let bottom = root.dim_in_pixel().1 as i32 - 8;
    let by_column = if columns.is_empty() {
        ""
    } else {
        " (under a pixel: the longest up per pixel)"
    };
    root.draw(&Text::new(
        format!(
            "{} circuits{by_column}; bar colour and label: destination rack",
            circuits.len()
        ),
        (20, bottom),
        note_font().pos(Pos::new(HPos::Left, VPos::Bottom)),
    ))?;
    let key_x = style::WIDTH as i32 - 220;
    root.draw(&PathElement::new(
        vec![(key_x, bottom - 12), (key_x, bottom)],
        mark,
    ))?;
    root.draw(&Text::new(
        format!("reconfiguration ({})", reconfigurations.len()),
        (key_x + 8, bottom),
        note_font().pos(Pos::new(HPos::Left, VPos::Bottom)),
    ))?;
    Ok(())
}
