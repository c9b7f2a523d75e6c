//! The look shared by every plot: sizes, fonts, colours, the light grid, number formatting,
//! the "no data" page and the categorical axis (one slot per scheduler, link or rack).

use super::{render_svg, Canvas, DrawResult, PlotError};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Width of every plot, in pixels.
pub(crate) const WIDTH: u32 = 960;
/// Height of a single-panel plot, in pixels.
pub(crate) const HEIGHT: u32 = 600;
/// The font family written into the SVG; the viewer picks the actual font.
pub(crate) const FONT: &str = "sans-serif";

/// Light grey of the grid lines.
pub(crate) const GRID: RGBColor = RGBColor(0xdd, 0xdd, 0xdd);
/// Dark grey for axes, tick labels and annotations.
pub(crate) const INK: RGBColor = RGBColor(0x33, 0x33, 0x33);
/// Mid grey for secondary text.
pub(crate) const MUTED: RGBColor = RGBColor(0x77, 0x77, 0x77);

/// Colours for series and categories, in order (Tableau 10: distinct and colour-blind aware).
pub(crate) const PALETTE: [RGBColor; 10] = [
    RGBColor(0x4e, 0x79, 0xa7),
    RGBColor(0xf2, 0x8e, 0x2b),
    RGBColor(0xe1, 0x57, 0x59),
    RGBColor(0x76, 0xb7, 0xb2),
    RGBColor(0x59, 0xa1, 0x4f),
    RGBColor(0xed, 0xc9, 0x48),
    RGBColor(0xb0, 0x7a, 0xa1),
    RGBColor(0xff, 0x9d, 0xa7),
    RGBColor(0x9c, 0x75, 0x5f),
    RGBColor(0xba, 0xb0, 0xac),
];

/// The colour of series / category `i` (the palette repeats after ten).
pub(crate) fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// Text style of a plot title.
pub(crate) fn title_font() -> TextStyle<'static> {
    (FONT, 22).into_font().color(&INK)
}

/// Text style of axis descriptions ("CCT (s)").
pub(crate) fn axis_desc_font() -> TextStyle<'static> {
    (FONT, 16).into_font().color(&INK)
}

/// Text style of tick labels and legends.
pub(crate) fn label_font() -> TextStyle<'static> {
    (FONT, 14).into_font().color(&INK)
}

/// Text style of small annotations (values on bars, per-strip statistics).
pub(crate) fn note_font() -> TextStyle<'static> {
    (FONT, 13).into_font().color(&MUTED)
}

/// `style` anchored at the given horizontal / vertical position.
fn anchored(style: TextStyle<'static>, h: HPos, v: VPos) -> TextStyle<'static> {
    style.pos(Pos::new(h, v))
}

/// A number as a tick or annotation label: at most 3 significant digits, no trailing zeros,
/// and a power of ten for very large or very small magnitudes.
pub(crate) fn fmt_num(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return if v == 0.0 { "0".to_string() } else { format!("{v}") };
    }
    let mag = v.abs();
    if !(1e-3..1e6).contains(&mag) {
        let s = format!("{v:.2e}");
        // "1.50e4" -> "1.5e4", "1.00e-4" -> "1e-4"
        if let Some((mantissa, exp)) = s.split_once('e') {
            let mantissa = mantissa.trim_end_matches('0').trim_end_matches('.');
            return format!("{mantissa}e{exp}");
        }
        return s;
    }
    let digits = (2 - mag.log10().floor() as i32).clamp(0, 6) as usize;
    let s = format!("{v:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A fraction (0.42) as a percentage label ("42%").
pub(crate) fn fmt_percent(fraction: f64) -> String {
    format!("{}%", fmt_num(fraction * 100.0))
}

/// The upper end of an axis that starts at zero and must show `max`: `max` plus 5% headroom,
/// or 1 when there is nothing positive to show.
pub(crate) fn axis_top(max: f64) -> f64 {
    if max > 0.0 {
        max * 1.05
    } else {
        1.0
    }
}

/// Key points at the centres of `n` equal slots on `0..n`, thinned so that labels at least
/// `min_px` apart fit into `len_px` pixels.
pub(crate) fn slot_centres(n: usize, len_px: u32, min_px: u32) -> Vec<f64> {
    let fit = (len_px / min_px.max(1)).max(1) as usize;
    let step = n.div_ceil(fit).max(1);
    (0..n).step_by(step).map(|i| i as f64 + 0.5).collect()
}

/// Which slot of a categorical axis a key point (a slot centre) stands for.
pub(crate) fn slot_of(v: f64) -> usize {
    v.floor().max(0.0) as usize
}

/// A chart builder on `root` with the shared title, margin and x label
/// area, and a y label area `y_label_px` wide.
pub(crate) fn chart_on<'a, 'b>(
    root: &'a Canvas<'b>,
    title: &str,
    y_label_px: u32,
) -> ChartBuilder<'a, 'b, SVGBackend<'b>> {
    let mut b = ChartBuilder::on(root);
    b.caption(title, title_font())
        .margin(20)
        .x_label_area_size(50)
        .y_label_area_size(y_label_px);
    b
}

/// Renders the explicit "no data" page: the title and, centred, why there is nothing to draw.
pub(crate) fn render_no_data(plot: &'static str, title: &str, why: &str) -> Result<String, PlotError> {
    render_svg(plot, (WIDTH, HEIGHT / 2), |root| draw_no_data(root, title, why))
}

fn draw_no_data(root: &Canvas<'_>, title: &str, why: &str) -> DrawResult {
    let (w, h) = root.dim_in_pixel();
    root.draw(&Text::new(
        title.to_string(),
        (w as i32 / 2, 20),
        anchored(title_font(), HPos::Center, VPos::Top),
    ))?;
    root.draw(&Rectangle::new(
        [(40, 60), (w as i32 - 40, h as i32 - 30)],
        GRID.stroke_width(1),
    ))?;
    root.draw(&Text::new(
        format!("no data: {why}"),
        (w as i32 / 2, (h as i32 + 30) / 2),
        anchored((FONT, 18).into_font().color(&MUTED), HPos::Center, VPos::Center),
    ))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_print_with_three_significant_digits_and_no_trailing_zeros() {
        let cases = [
            (0.0, "0"),
            (0.5, "0.5"),
            (12.345, "12.3"),
            (-12.5, "-12.5"),
            (0.001234, "0.00123"),
            (1500.0, "1500"),
            (1.5e7, "1.5e7"),
            (2e-4, "2e-4"),
        ];
        for (v, expected) in cases {
            assert_eq!(fmt_num(v), expected, "fmt_num({v})");
        }
        assert_eq!(fmt_percent(0.429), "42.9%");
    }

    #[test]
    fn slot_labels_are_thinned_to_fit() {
        assert_eq!(slot_centres(3, 300, 60), vec![0.5, 1.5, 2.5]);
        // 10 slots in 24 px with labels 12 px apart: every fifth.
        assert_eq!(slot_centres(10, 24, 12), vec![0.5, 5.5]);
        assert_eq!(slot_of(5.5), 5);
    }
}
