use super::svg_check::{hex, Svg};
use super::{assert_invalid, scratch_dir};
use crate::plot::timeline::RECONFIGURATION;
use crate::plot::{circuit_timeline, render_circuit_timeline, style, CircuitSpan};

fn span(src_rack: usize, dst_rack: usize, port: usize, from_s: f64, to_s: f64) -> CircuitSpan {
    CircuitSpan {
        src_rack,
        dst_rack,
        port,
        from_s,
        to_s,
    }
}

/// Four racks, a Sunflow-like schedule: two matchings with a reconfiguration between them.
fn schedule() -> (Vec<CircuitSpan>, Vec<f64>) {
    let spans = vec![
        span(0, 1, 0, 0.0, 4.0),
        span(1, 0, 0, 0.0, 4.0),
        span(2, 3, 0, 0.0, 9.0),
        span(0, 2, 0, 4.5, 9.0),
        span(1, 3, 0, 4.5, 6.0),
    ];
    (spans, vec![4.0])
}

fn palette_rects(svg: &Svg) -> usize {
    (0..style::PALETTE.len())
        .map(|i| svg.count("rect", "fill", &hex(style::colour(i))))
        .sum()
}

#[test]
fn one_bar_per_circuit_coloured_and_labelled_by_destination() {
    let (spans, reconf) = schedule();
    let svg = Svg::parse(&render_circuit_timeline("Sunflow circuits", 4, &spans, &reconf).unwrap());
    assert!(svg.has_text("Sunflow circuits"));
    assert!(svg.has_text("time (s)"));
    assert!(svg.has_text("source rack"));
    for rack in ["r0", "r1", "r2", "r3"] {
        assert!(svg.has_text(rack), "no row {rack}");
    }
    assert_eq!(palette_rects(&svg), spans.len());
    // Two circuits go to r3: two bars in r3's colour.
    assert_eq!(svg.count("rect", "fill", &hex(style::colour(3))), 2);
    assert!(svg.has_text("→r3"));
    assert!(svg.has_text("→r2"));
}

#[test]
fn one_mark_per_reconfiguration() {
    let (spans, _) = schedule();
    let reconf = [1.0, 4.0, 7.5];
    let svg = Svg::parse(&render_circuit_timeline("t", 4, &spans, &reconf).unwrap());
    // One line per reconfiguration, plus the legend's swatch.
    assert_eq!(
        svg.count("polyline", "stroke", &hex(RECONFIGURATION)),
        reconf.len() + 1
    );
    assert!(svg.has_text("reconfiguration (3)"));
}

#[test]
fn racks_with_several_ports_get_one_row_per_port() {
    let spans = [
        span(0, 1, 0, 0.0, 1.0),
        span(0, 2, 1, 0.0, 1.0),
        span(1, 0, 0, 0.0, 1.0),
    ];
    let svg = Svg::parse(&render_circuit_timeline("t", 3, &spans, &[]).unwrap());
    for row in ["r0 p0", "r0 p1", "r1 p0", "r2"] {
        assert!(svg.has_text(row), "no row {row}");
    }
    assert!(svg.has_text("source rack, OCS port"));
    assert_eq!(palette_rects(&svg), 3);
}

#[test]
fn many_racks_still_draw_every_bar() {
    let spans: Vec<CircuitSpan> = (0..150)
        .map(|r| span(r, (r + 1) % 150, 0, 0.0, 1.0 + r as f64))
        .collect();
    let svg = Svg::parse(&render_circuit_timeline("fb2010", 150, &spans, &[0.5]).unwrap());
    assert_eq!(palette_rects(&svg), 150);
}

#[test]
fn same_input_gives_identical_bytes_and_the_file_matches() {
    let (spans, reconf) = schedule();
    let a = render_circuit_timeline("t", 4, &spans, &reconf).unwrap();
    assert_eq!(a, render_circuit_timeline("t", 4, &spans, &reconf).unwrap());
    let dir = scratch_dir("timeline");
    let path = dir.join("circuits.svg");
    circuit_timeline(&path, "t", 4, &spans, &reconf).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), a);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn no_circuits_is_an_explicit_no_data_plot() {
    let svg = Svg::parse(&render_circuit_timeline("Fair circuits", 4, &[], &[]).unwrap());
    assert!(svg.has_text("Fair circuits"));
    assert!(svg.has_text("no data: no optical circuit was set up during the run"));
    let svg = Svg::parse(&render_circuit_timeline("t", 0, &[], &[]).unwrap());
    assert!(svg.has_text("no data: the topology has no racks"));
}

#[test]
fn invalid_spans_are_errors_naming_the_span() {
    assert_invalid(
        render_circuit_timeline("t", 2, &[span(0, 2, 0, 0.0, 1.0)], &[]),
        "span #0 (r0 -> r2)",
    );
    assert_invalid(
        render_circuit_timeline("t", 2, &[span(1, 1, 0, 0.0, 1.0)], &[]),
        "two different racks",
    );
    assert_invalid(
        render_circuit_timeline("t", 2, &[span(0, 1, 0, 2.0, 1.0)], &[]),
        "from_s <= to_s",
    );
    assert_invalid(
        render_circuit_timeline("t", 2, &[span(0, 1, 0, 0.0, f64::INFINITY)], &[]),
        "finite",
    );
    assert_invalid(
        render_circuit_timeline("t", 2, &[], &[-1.0]),
        "reconfiguration #0",
    );
}

#[test]
fn many_reconfigurations_become_ticks_in_a_band_above_the_rows() {
    let (spans, _) = schedule();
    let few: Vec<f64> = (0..100).map(|k| f64::from(k) * 0.09).collect();
    let many: Vec<f64> = (0..101).map(|k| f64::from(k) * 0.09).collect();
    let few_svg = Svg::parse(&render_circuit_timeline("t", 4, &spans, &few).unwrap());
    let many_svg = Svg::parse(&render_circuit_timeline("t", 4, &spans, &many).unwrap());
    assert!(!few_svg.has_text("reconfig."));
    assert!(many_svg.has_text("reconfig."));
    assert_eq!(
        many_svg.count("polyline", "stroke", &hex(RECONFIGURATION)),
        many.len() + 1
    );
}

#[test]
fn circuits_under_a_pixel_are_drawn_per_pixel_by_the_longest_up() {
    // Rack 0: 5,000 circuits of 0.9 ms to r1 over [0, 5) s, then 5,000 to r2 over [5, 10) s,
    // each after a reconfiguration; rack 1 has one circuit wide enough to be its own bar.
    let mut spans = Vec::new();
    let mut reconf = Vec::new();
    for k in 0..10_000 {
        let from = f64::from(k) * 1e-3;
        spans.push(span(
            0,
            if k < 5_000 { 1 } else { 2 },
            0,
            from + 1e-4,
            from + 1e-3,
        ));
        reconf.push(from);
    }
    spans.push(span(1, 3, 0, 2.0, 8.0));
    // Up for no time: drawn nowhere.
    spans.push(span(2, 0, 0, 3.0, 3.0));
    let text = render_circuit_timeline("t", 4, &spans, &reconf).unwrap();
    let svg = Svg::parse(&text);
    // Runs of pixel columns of one colour are one bar each: r1's, r2's, rack 1's own.
    assert_eq!(svg.count("rect", "fill", &hex(style::colour(1))), 1);
    assert_eq!(svg.count("rect", "fill", &hex(style::colour(2))), 1);
    assert_eq!(svg.count("rect", "fill", &hex(style::colour(3))), 1);
    assert_eq!(svg.count("rect", "fill", &hex(style::colour(0))), 0);
    assert!(svg.has_text("→r3"));
    // At most one reconfiguration tick per pixel column (plus the key's swatch).
    let ticks = svg.count("polyline", "stroke", &hex(RECONFIGURATION));
    assert!((100..=style::WIDTH as usize).contains(&ticks), "{ticks} ticks");
    assert!(svg.has_text(
        "10002 circuits (under a pixel: the longest up per pixel); bar colour and label: destination rack"
    ));
    assert!(svg.has_text("reconfiguration (10000)"));
    assert!(text.len() < 200_000, "{} bytes", text.len());
}
