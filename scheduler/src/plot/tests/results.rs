use super::scratch_dir;
use super::svg_check::Svg;
use crate::plot::{write_results_plots, CircuitSpan, SchedulerPlotData};
use ocslab_emulator::units::Bytes;

fn run(name: &str, factor: f64, with_circuits: bool) -> SchedulerPlotData {
    SchedulerPlotData {
        name: name.to_string(),
        cct_s: vec![0.5 * factor, 1.0 * factor, 4.0 * factor],
        jct_s: vec![3.0 * factor, 5.0 * factor],
        makespan_s: 10.0 * factor,
        avg_jct_s: 4.0 * factor,
        avg_cct_s: 1.83 * factor,
        p95_cct_s: 4.0 * factor,
        eps_bytes: Bytes(2_000_000),
        ocs_bytes: Bytes(if with_circuits { 1_000_000 } else { 0 }),
        circuits: if with_circuits {
            vec![CircuitSpan {
                src_rack: 0,
                dst_rack: 1,
                port: 0,
                from_s: 0.0,
                to_s: 2.0,
            }]
        } else {
            Vec::new()
        },
        reconfigurations_s: Vec::new(),
        utilization: vec![("r0 uplink".to_string(), vec![(1.0, 0.5), (2.0, 1.0)])],
    }
}

#[test]
fn writes_every_plot_of_the_results_folder_normalised_to_the_first_run() {
    let dir = scratch_dir("results");
    let runs = [run("Fair", 1.0, false), run("Co-scheduler", 0.5, true)];
    let files = write_results_plots(&dir, 2, &runs).unwrap();
    let names: Vec<String> = files
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "cct_cdf.svg",
            "jct_cdf.svg",
            "bytes_by_fabric.svg",
            "makespan.svg",
            "avg_jct.svg",
            "avg_cct.svg",
            "p95_cct.svg",
            "circuits-fair.svg",
            "utilization-fair.svg",
            "circuits-co-scheduler.svg",
            "utilization-co-scheduler.svg",
        ]
    );
    for file in &files {
        Svg::parse(&std::fs::read_to_string(file).unwrap());
    }
    let makespan = Svg::parse(&std::fs::read_to_string(dir.join("makespan.svg")).unwrap());
    assert!(makespan.has_text("Makespan, normalised to Fair"));
    assert!(
        makespan.has_text("0.5"),
        "Co-scheduler's makespan is half of Fair's"
    );
    let fair = Svg::parse(&std::fs::read_to_string(dir.join("circuits-fair.svg")).unwrap());
    assert!(fair.has_text("no data: no optical circuit was set up during the run"));
    std::fs::remove_dir_all(dir).unwrap();
}
