use super::svg_check::{hex, Svg};
use super::{assert_invalid, scratch_dir};
use crate::plot::fabric_bytes::{EPS, OCS};
use crate::plot::{bars, bytes_by_fabric, render_bars, render_bytes_by_fabric, style};
use ocslab_emulator::units::Bytes;

fn normalised() -> Vec<(&'static str, f64)> {
    vec![("Fair", 1.0), ("ShuffleWatcher", 0.82), ("Co-scheduler", 0.61)]
}

#[test]
fn one_bar_per_row_with_its_value_and_the_reference_line() {
    let svg = Svg::parse(
        &render_bars(
            "Makespan",
            "makespan (normalised to Fair)",
            &normalised(),
            Some(("Fair", 1.0)),
        )
        .unwrap(),
    );
    assert!(svg.has_text("Makespan"));
    assert!(svg.has_text("makespan (normalised to Fair)"));
    for (i, (name, value)) in normalised().iter().enumerate() {
        assert!(svg.has_text(name), "no label {name}");
        assert!(svg.has_text(&style::fmt_num(*value)), "no value for {name}");
        assert_eq!(svg.count("rect", "fill", &hex(style::colour(i))), 1, "bar {name}");
    }
    assert!(svg.has_text("Fair = 1"));
}

#[test]
fn negative_values_are_drawn_below_zero() {
    let svg = Svg::parse(&render_bars("Δ", "change (%)", &[("a", -12.5), ("b", 30.0)], None).unwrap());
    assert!(svg.has_text("-12.5"));
    assert_eq!(svg.count("rect", "fill", &hex(style::colour(0))), 1);
}

#[test]
fn bars_are_deterministic_handle_empty_input_and_reject_nan() {
    let a = render_bars("m", "y", &normalised(), None).unwrap();
    let dir = scratch_dir("bars");
    let path = dir.join("makespan.svg");
    bars(&path, "m", "y", &normalised(), None).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), a);
    std::fs::remove_dir_all(dir).unwrap();
    let none: [(&str, f64); 0] = [];
    assert!(Svg::parse(&render_bars("m", "y", &none, None).unwrap()).has_text("no data: no bars were given"));
    assert_invalid(render_bars("m", "y", &[("Fair", f64::NAN)], None), "\"Fair\"");
}

fn fabric_rows() -> Vec<(&'static str, Bytes, Bytes)> {
    vec![
        ("Fair", Bytes(3_000_000_000), Bytes(1_000_000_000)),
        ("Sunflow", Bytes(1_000_000_000), Bytes(3_000_000_000)),
        ("Nothing", Bytes(0), Bytes(0)),
    ]
}

#[test]
fn bytes_by_fabric_stacks_eps_under_ocs_with_the_ocs_share() {
    let svg = Svg::parse(&render_bytes_by_fabric("Bytes by fabric", &fabric_rows()).unwrap());
    assert!(svg.has_text("Bytes by fabric"));
    assert!(svg.has_text("bytes moved (GB)"));
    assert!(svg.has_text("25% OCS"));
    assert!(svg.has_text("75% OCS"));
    assert!(svg.has_text("no bytes"));
    assert!(svg.has_text("EPS (electrical)"));
    assert!(svg.has_text("OCS (optical)"));
    // Two non-empty segments of each fabric, plus each legend swatch.
    assert_eq!(svg.count("rect", "fill", &hex(EPS)), 3);
    assert_eq!(svg.count("rect", "fill", &hex(OCS)), 3);
}

#[test]
fn bytes_by_fabric_is_deterministic_and_handles_empty_input() {
    let a = render_bytes_by_fabric("b", &fabric_rows()).unwrap();
    let dir = scratch_dir("fabric");
    let path = dir.join("bytes_by_fabric.svg");
    bytes_by_fabric(&path, "b", &fabric_rows()).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), a);
    std::fs::remove_dir_all(dir).unwrap();
    let none: [(&str, Bytes, Bytes); 0] = [];
    let svg = Svg::parse(&render_bytes_by_fabric("b", &none).unwrap());
    assert!(svg.has_text("no data: no schedulers were given"));
}
