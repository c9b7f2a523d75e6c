//! Integration tests: cli. `ocslab sim` end to end through the library
//! entry point of the command (the same function `main` dispatches to):
//! an experiment file in, a results folder and a summary out. Bad topology
//! files through the built `ocslab` binary (`scripts/test` builds it
//! first): each error names file, line and field.

use ocslab_scheduler::cli::sim::{run, SimArgs};
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A fresh folder under the system temp dir, removed by the caller.
fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ocslab-cli-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch dir");
    d
}

fn experiment(dir: &Path, schedulers: &str) -> PathBuf {
    let topo = repo().join("topologies/tiny.toml");
    let text = format!(
        "name = \"cli-test\"\ntopology = {topo:?}\nseed = 5\ntask_schedulers = {schedulers}\ncoflow_scheduler = \"fair\"\n\n\
         [workload]\nkind = \"generated\"\njobs = 8\nusers = 2\narrivals = {{ process = \"poisson\", mean_gap = \"5s\" }}\nblock_size = \"64MB\"\n"
    );
    let p = dir.join("e.toml");
    std::fs::write(&p, text).expect("write experiment");
    p
}

fn summary(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("summary.json")).expect("summary.json");
    serde_json::from_str(&text).expect("valid JSON")
}

fn csv_column(path: &Path, column: &str) -> Vec<String> {
    let text = std::fs::read_to_string(path).expect("csv");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("header").split(',').collect();
    let i = header.iter().position(|h| *h == column).expect("column");
    lines
        .map(|l| l.split(',').nth(i).unwrap_or_default().to_string())
        .collect()
}

#[test]
fn sim_writes_a_results_folder_consistent_with_its_summary() {
    let dir = scratch("results");
    let exp = experiment(&dir, "[\"fair\", \"fifo\"]");
    let out = dir.join("out");
    run(SimArgs {
        experiment: exp,
        json: true,
        out: Some(out.clone()),
    })
    .expect("sim runs");
    for f in ["experiment.toml", "topology.toml", "run.json", "summary.json"] {
        assert!(out.join(f).is_file(), "{f} missing");
    }
    let s = summary(&out);
    let list = s["schedulers"].as_array().expect("schedulers");
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["name"], "fair");
    assert_eq!(list[0]["normalized"]["makespan"], 1.0);
    for sched in list {
        let name = sched["name"].as_str().expect("name");
        assert_eq!(sched["jobs"], 8, "{name}");
        // The summary's average JCT is the mean of the per-job CSV.
        let jct: Vec<f64> = csv_column(&out.join(name).join("jobs.csv"), "jct_s")
            .iter()
            .map(|x| x.parse().expect("a number"))
            .collect();
        assert_eq!(jct.len(), 8);
        let mean = jct.iter().sum::<f64>() / 8.0;
        let avg = sched["avg_jct_s"].as_f64().expect("avg_jct_s");
        assert!((mean - avg).abs() < 1e-6, "{name}: {mean} vs {avg}");
        // Every flow of the CSV belongs to a coflow of the coflow CSV, and
        // the flow counts agree.
        let flows = csv_column(&out.join(name).join("flows.csv"), "flow").len();
        let per_coflow: usize = csv_column(&out.join(name).join("coflows.csv"), "flows")
            .iter()
            .map(|x| x.parse::<usize>().expect("count"))
            .sum();
        assert_eq!(flows, per_coflow, "{name}");
        assert_eq!(sched["flows"].as_u64(), Some(flows as u64));
    }
    let run_json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).expect("run.json"))
            .expect("json");
    assert_eq!(run_json["seed"], 5);
    assert_eq!(run_json["topology"]["name"], "tiny");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn sim_twice_with_the_same_seed_gives_identical_results() {
    let dir = scratch("determinism");
    let exp = experiment(&dir, "[\"delay\"]");
    for out in ["a", "b"] {
        run(SimArgs {
            experiment: exp.clone(),
            json: true,
            out: Some(dir.join(out)),
        })
        .expect("sim runs");
    }
    for f in [
        "summary.json",
        "delay/flows.csv",
        "delay/tasks.csv",
        "delay/jobs.csv",
    ] {
        let a = std::fs::read(dir.join("a").join(f)).expect("a");
        let b = std::fs::read(dir.join("b").join(f)).expect("b");
        assert!(a == b, "{f} differs between two runs with the same seed");
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_bad_experiment_names_file_line_and_field() {
    let dir = scratch("bad");
    let exp = experiment(&dir, "[\"fair\", \"fare\"]");
    let err = run(SimArgs {
        experiment: exp.clone(),
        json: false,
        out: Some(dir.join("out")),
    })
    .expect_err("an unknown scheduler is refused");
    let msg = format!("{err:#}");
    assert!(
        msg.starts_with(&format!("{}:4: field `task_schedulers`", exp.display())),
        "{msg}"
    );
    assert!(msg.contains("delay"), "lists the known schedulers: {msg}");
    assert!(
        !dir.join("out").exists(),
        "no results folder for a refused experiment"
    );
    std::fs::remove_dir_all(dir).ok();
}

/// The built `ocslab` binary beside this test's own (target/release).
fn ocslab_bin() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let dir = exe.parent().and_then(Path::parent).expect("target/<profile>");
    let bin = dir.join("ocslab");
    assert!(
        bin.is_file(),
        "{} is missing: build the binaries first (scripts/test does: cargo build --release --workspace --bins)",
        bin.display()
    );
    bin
}

/// Writes tiny.toml with `from` replaced by `to`; returns the file and the
/// 1-based line of the replacement.
fn bad_tiny(dir: &Path, name: &str, from: &str, to: &str) -> (PathBuf, usize) {
    let text = std::fs::read_to_string(repo().join("topologies/tiny.toml")).expect("tiny.toml");
    let line = text
        .lines()
        .position(|l| l.starts_with(from))
        .unwrap_or_else(|| panic!("tiny.toml has no line starting {from:?}"))
        + 1;
    let text = text.replacen(from, to, 1);
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write topology");
    (p, line)
}

/// Runs `ocslab ARGS`; returns (success, stdout, stderr).
fn ocslab(args: &[&std::ffi::OsStr]) -> (bool, String, String) {
    let out = std::process::Command::new(ocslab_bin())
        .args(args)
        .output()
        .expect("run ocslab");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn topo_check(file: &Path) -> (bool, String, String) {
    ocslab(&["topo".as_ref(), "check".as_ref(), file.as_os_str()])
}

#[test]
fn topo_check_names_file_line_and_field_of_a_bad_topology() {
    let dir = scratch("topo");
    let cases = [
        (
            "zero.toml",
            "racks = 2",
            "racks = 0",
            "field `racks`",
            "at least 1",
        ),
        (
            "fast.toml",
            "uplink_rate = \"500Mbit/s\"",
            "uplink_rate = \"fast\"",
            "field `eps.uplink_rate`",
            "\"fast\" is not a rate",
        ),
        (
            "loopback.toml",
            "range = \"198.18.0.0/15\"",
            "range = \"127.0.0.0/8\"",
            "field `addresses.range`",
            "overlaps 127.0.0.1, an address of this box",
        ),
    ];
    for (name, from, to, field, why) in cases {
        let (file, line) = bad_tiny(&dir, name, from, to);
        let (ok, _, err) = topo_check(&file);
        assert!(!ok, "{name}: accepted");
        let at = format!("{}:{line}: {field}", file.display());
        assert!(err.contains(&at), "{name}: expected {at:?} in {err:?}");
        assert!(err.contains(why), "{name}: expected {why:?} in {err:?}");
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_topology_too_large_to_emulate_is_checked_as_simulation_only_and_refused_by_up() {
    let dir = scratch("big");
    let (file, line) = bad_tiny(&dir, "big.toml", "racks = 2", "racks = 200");
    let at = format!("{}:{line}: field `racks`", file.display());
    let (ok, out, _) = topo_check(&file);
    assert!(ok, "a large topology is valid for simulation");
    assert!(out.contains("simulation only") && out.contains(&at), "{out}");
    assert!(out.contains("too large to emulate"), "{out}");
    // Refused before anything is built, so this needs no privilege.
    let (ok, _, err) = ocslab(&["up".as_ref(), file.as_os_str()]);
    assert!(!ok, "ocslab up built a topology too large to emulate");
    assert!(err.contains(&at) && err.contains("too large to emulate"), "{err}");
    std::fs::remove_dir_all(dir).ok();
}
