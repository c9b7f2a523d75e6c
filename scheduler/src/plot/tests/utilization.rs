use super::svg_check::{hex, Svg};
use super::{assert_invalid, scratch_dir};
use crate::plot::utilization_heatmap::{level_colour, LEVELS};
use crate::plot::{render_utilization, style, utilization, SMALL_MULTIPLES_MAX_LINKS};

fn links() -> Vec<(String, Vec<(f64, f64)>)> {
    vec![
        ("r0 EPS uplink".to_string(), vec![(1.0, 1.0), (2.0, 0.0)]),
        (
            "r1 EPS uplink".to_string(),
            vec![(0.5, 0.2), (1.0, 0.4), (2.0, 0.6)],
        ),
        ("r0 OCS port".to_string(), vec![(2.0, 0.95)]),
    ]
}

#[test]
fn small_multiples_draw_one_filled_strip_per_link() {
    let svg = Svg::parse(&render_utilization("Link utilization", &links()).unwrap());
    assert!(svg.has_text("Link utilization"));
    assert!(svg.has_text("time (s)"));
    for (i, (name, _)) in links().iter().enumerate() {
        assert!(svg.has_text(name), "no strip named {name}");
        assert_eq!(
            svg.count("polygon", "fill", &hex(style::colour(i))),
            1,
            "link {i}"
        );
    }
    // Busy for the first second, idle for the second: mean 50%, peak 100%.
    assert!(svg.has_text("mean 50%, peak 100%"));
    assert!(svg.has_text("mean 95%, peak 95%"));
    assert!(svg.has_text("100%"));
}

#[test]
fn many_links_become_a_heatmap_with_one_cell_per_constant_link() {
    let n = SMALL_MULTIPLES_MAX_LINKS + 4;
    let series: Vec<(String, Vec<(f64, f64)>)> = (0..n)
        .map(|i| {
            (
                format!("link {i}"),
                vec![(5.0, (i % (LEVELS + 1)) as f64 / LEVELS as f64)],
            )
        })
        .collect();
    let svg = Svg::parse(&render_utilization("Link utilization", &series).unwrap());
    assert!(svg.has_text("link 0"));
    assert!(svg.has_text(&format!("link {}", n - 1)));
    // A link at a constant level is one rectangle (an idle one none), plus the colour key's
    // one rectangle per level.
    let cells: usize = (1..=LEVELS)
        .map(|l| svg.count("rect", "fill", &hex(level_colour(l))))
        .sum();
    let busy_links = (0..n).filter(|i| i % (LEVELS + 1) != 0).count();
    assert_eq!(cells, busy_links + LEVELS);
    assert_eq!(
        svg.count_tag("polygon"),
        0,
        "no small-multiple strips in a heatmap"
    );
}

#[test]
fn same_input_gives_identical_bytes_and_the_file_matches() {
    let a = render_utilization("u", &links()).unwrap();
    assert_eq!(a, render_utilization("u", &links()).unwrap());
    let dir = scratch_dir("utilization");
    let path = dir.join("utilization.svg");
    utilization(&path, "u", &links()).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), a);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn no_samples_is_an_explicit_no_data_plot() {
    let none: [(&str, Vec<(f64, f64)>); 0] = [];
    let svg = Svg::parse(&render_utilization("u", &none).unwrap());
    assert!(svg.has_text("no data: no links were given"));
    let svg = Svg::parse(&render_utilization("u", &[("r0 uplink", vec![])]).unwrap());
    assert!(svg.has_text("no data: no link has a sample"));
}

#[test]
fn invalid_samples_are_errors_naming_the_link_and_sample() {
    assert_invalid(
        render_utilization("u", &[("up", vec![(2.0, 0.1), (1.0, 0.1)])]),
        "link \"up\", sample #1",
    );
    assert_invalid(render_utilization("u", &[("up", vec![(1.0, -0.1)])]), "negative");
    assert_invalid(
        render_utilization("u", &[("up", vec![(f64::NAN, 0.1)])]),
        "finite",
    );
}
