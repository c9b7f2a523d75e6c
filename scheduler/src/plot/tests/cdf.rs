use super::svg_check::{hex, Svg};
use super::{assert_invalid, scratch_dir};
use crate::plot::{cdf, render_cdf, style, XScale};

fn schedulers() -> Vec<(&'static str, Vec<f64>)> {
    vec![
        ("Fair", vec![3.0, 1.0, 2.0]),
        ("Sunflow", vec![0.5, 0.7, 1.5, 0.9]),
        ("Idle", vec![]),
    ]
}

#[test]
fn draws_one_line_per_series_with_names_labels_and_legend() {
    let svg = Svg::parse(&render_cdf("CCT per scheduler", "CCT (s)", XScale::Linear, &schedulers()).unwrap());
    assert!(svg.has_text("CCT per scheduler"));
    assert!(svg.has_text("CCT (s)"));
    assert!(svg.has_text("fraction of values ≤ x"));
    assert!(svg.has_text("Fair (n=3, median 2)"));
    assert!(svg.has_text("Sunflow (n=4, median 0.7)"));
    assert!(svg.has_text("Idle (no values)"));
    // Each non-empty series: its line and its legend swatch; the empty one: its swatch only.
    for (i, expected) in [2, 2, 1].into_iter().enumerate() {
        assert_eq!(
            svg.count("polyline", "stroke", &hex(style::colour(i))),
            expected,
            "series {i}"
        );
    }
}

#[test]
fn auto_scale_goes_logarithmic_only_across_two_decades() {
    let wide = [("Varys", vec![0.01, 0.5, 3.0, 40.0])];
    let svg = Svg::parse(&render_cdf("t", "CCT (s)", XScale::Auto, &wide).unwrap());
    assert!(svg.has_text("CCT (s), log scale"));
    for decade in ["0.01", "0.1", "1", "10", "100"] {
        assert!(svg.has_text(decade), "no tick {decade}");
    }
    let narrow = [("Varys", vec![1.0, 5.0, 30.0])];
    let svg = Svg::parse(&render_cdf("t", "CCT (s)", XScale::Auto, &narrow).unwrap());
    assert!(svg.has_text("CCT (s)"));
}

#[test]
fn same_input_gives_identical_bytes_and_the_file_matches() {
    let a = render_cdf("JCT", "JCT (s)", XScale::Auto, &schedulers()).unwrap();
    let b = render_cdf("JCT", "JCT (s)", XScale::Auto, &schedulers()).unwrap();
    assert_eq!(a, b);
    let dir = scratch_dir("cdf");
    let path = dir.join("jct_cdf.svg");
    cdf(&path, "JCT", "JCT (s)", XScale::Auto, &schedulers()).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), a);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn empty_input_is_an_explicit_no_data_plot() {
    let none: [(&str, Vec<f64>); 0] = [];
    let svg = Svg::parse(&render_cdf("CCT", "CCT (s)", XScale::Auto, &none).unwrap());
    assert!(svg.has_text("no data: no series were given"));
    let empty = [("Fair", vec![])];
    let svg = Svg::parse(&render_cdf("CCT", "CCT (s)", XScale::Auto, &empty).unwrap());
    assert!(svg.has_text("CCT"));
    assert!(svg.has_text("no data: every series is empty"));
}

#[test]
fn invalid_values_are_errors_naming_the_series() {
    assert_invalid(
        render_cdf("t", "x", XScale::Auto, &[("Aalo", vec![1.0, f64::NAN])]),
        "\"Aalo\"",
    );
    assert_invalid(
        render_cdf("t", "x", XScale::Log, &[("Aalo", vec![1.0, 0.0])]),
        "positive",
    );
}

#[test]
fn a_write_to_a_missing_folder_is_an_error_naming_the_file() {
    let path = std::path::Path::new("/nonexistent-ocslab-dir/cct.svg");
    let err = cdf(path, "t", "x", XScale::Auto, &schedulers()).unwrap_err();
    assert!(
        err.to_string().contains("/nonexistent-ocslab-dir/cct.svg"),
        "{err}"
    );
}
