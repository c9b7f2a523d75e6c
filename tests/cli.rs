//! Integration tests: cli. `ocslab sim` and `ocslab demo --sim` end to end
//! through the library entry points of the commands (the same functions
//! `main` dispatches to): an experiment in, a results folder and a summary
//! out, and every figure of the demo's table recomputed from its CSVs. Bad
//! topology files through the built `ocslab` binary (`scripts/test` builds
//! it first): each error names file, line and field.

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

/// `ocslab sim EXPERIMENT --json --out OUT` with every other option at its
/// default; tests set what they vary with struct-update syntax.
fn sim_args(experiment: impl Into<PathBuf>, out: impl Into<PathBuf>) -> SimArgs {
    SimArgs {
        experiment: experiment.into(),
        json: true,
        out: Some(out.into()),
        perturb: Vec::new(),
        threads: None,
        seeds: 1,
        task_schedulers: Vec::new(),
        payload_rates: false,
        jitter: None,
        draws: 20,
    }
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
    run(sim_args(exp, out.clone())).expect("sim runs");
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
        run(sim_args(exp.clone(), dir.join(out))).expect("sim runs");
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
        json: false,
        ..sim_args(exp.clone(), dir.join("out"))
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

/// `--task-schedulers` runs a subset in the file's order, its results the
/// same as the full run's; a name the file does not run is refused.
#[test]
fn sim_runs_only_the_task_schedulers_asked_for() {
    let dir = scratch("subset");
    let exp = experiment(&dir, "[\"fair\", \"fifo\", \"delay\"]");
    let args = |out: &Path, names: &[&str]| SimArgs {
        task_schedulers: names.iter().map(|s| s.to_string()).collect(),
        ..sim_args(exp.clone(), out.to_path_buf())
    };
    let (all, some) = (dir.join("all"), dir.join("some"));
    run(args(&all, &[])).expect("sim runs");
    run(args(&some, &["delay", "fair"])).expect("sim runs a subset");
    let names = |out: &Path| -> Vec<String> {
        let s = summary(out);
        let list = s["schedulers"].as_array().expect("schedulers").clone();
        list.iter()
            .map(|x| x["name"].as_str().expect("name").to_string())
            .collect()
    };
    assert_eq!(names(&all), ["fair", "fifo", "delay"]);
    assert_eq!(names(&some), ["fair", "delay"], "the file's order, fair first");
    let s = summary(&all)["schedulers"].clone();
    let t = summary(&some)["schedulers"].clone();
    assert_eq!((&t[0], &t[1]), (&s[0], &s[2]));
    let err = run(args(&dir.join("none"), &["fair", "nas"])).expect_err("nas is not in the file");
    let msg = format!("{err:#}");
    assert!(
        msg.contains(
            "--task-schedulers: nas is not among the experiment's task_schedulers (fair, fifo, delay)"
        ),
        "{msg}"
    );
    std::fs::remove_dir_all(dir).ok();
}

/// `--seeds 3` runs seeds 5, 6 and 7 into their own folders, each the
/// run of that seed (its run.json says so, and seed 5's equals a plain
/// run's), and seeds.json's means and ratios are those of the three
/// folders' summaries.
#[test]
fn seeds_give_a_folder_each_and_their_mean_and_spread() {
    let dir = scratch("seeds");
    let exp = experiment(&dir, "[\"fair\", \"fifo\"]");
    let out = dir.join("out");
    let single = dir.join("single");
    let args = |out: &Path, seeds: u32| SimArgs {
        threads: Some(2),
        seeds,
        ..sim_args(exp.clone(), out.to_path_buf())
    };
    run(args(&out, 3)).expect("sim --seeds runs");
    run(args(&single, 1)).expect("sim runs");
    let mut jct: Vec<Vec<f64>> = vec![Vec::new(); 2];
    let mut ratio = Vec::new();
    for seed in [5, 6, 7] {
        let folder = out.join(format!("seed-{seed}"));
        let run_json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(folder.join("run.json")).expect("run.json"))
                .expect("json");
        assert_eq!(run_json["seed"], seed);
        let s = summary(&folder);
        for (i, sched) in s["schedulers"].as_array().expect("schedulers").iter().enumerate() {
            jct[i].push(sched["avg_jct_s"].as_f64().expect("avg_jct_s"));
        }
        ratio.push(
            s["schedulers"][1]["normalized"]["avg_jct"]
                .as_f64()
                .expect("ratio"),
        );
    }
    assert_eq!(
        summary(&out.join("seed-5"))["schedulers"],
        summary(&single)["schedulers"]
    );
    assert_ne!(jct[0][0], jct[0][1], "seeds 5 and 6 ran the same jobs");
    let spread: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("seeds.json")).expect("seeds.json"))
            .expect("json");
    assert_eq!(spread["seeds"], serde_json::json!([5, 6, 7]));
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    for (i, name) in ["fair", "fifo"].iter().enumerate() {
        let s = &spread["schedulers"][i];
        assert_eq!(s["name"], *name);
        let m = s["avg_jct_s"]["mean"].as_f64().expect("mean");
        assert!((m - mean(&jct[i])).abs() < 1e-9, "{name}: {m} vs {:?}", jct[i]);
    }
    let r = spread["schedulers"][1]["avg_jct_ratio"]["mean"]
        .as_f64()
        .expect("ratio mean");
    assert!((r - mean(&ratio)).abs() < 1e-9, "{r} vs {ratio:?}");
    std::fs::remove_dir_all(dir).ok();
}

/// With one scheduler and threads to spare, seeds run at once: the
/// folders and the spread are those of seeds run one after another.
#[test]
fn seeds_run_at_once_give_what_seeds_in_turn_give() {
    let dir = scratch("seeds-at-once");
    let exp = experiment(&dir, "[\"fair\"]");
    let args = |out: &Path, threads: u32| SimArgs {
        threads: Some(threads),
        seeds: 3,
        ..sim_args(exp.clone(), out.to_path_buf())
    };
    let (in_turn, at_once) = (dir.join("in-turn"), dir.join("at-once"));
    run(args(&in_turn, 1)).expect("seeds in turn");
    run(args(&at_once, 3)).expect("seeds at once");
    for seed in [5, 6, 7] {
        let folder = format!("seed-{seed}");
        assert_eq!(
            summary(&in_turn.join(&folder))["schedulers"],
            summary(&at_once.join(&folder))["schedulers"],
            "{folder}"
        );
    }
    let spread = |d: &Path| -> serde_json::Value {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(d.join("seeds.json")).expect("seeds.json"))
                .expect("json");
        v["schedulers"].clone()
    };
    assert_eq!(spread(&in_turn), spread(&at_once));
    std::fs::remove_dir_all(dir).ok();
}

/// `--jitter 0.05 --draws 4`: draw 0 is the plain run, each other draw's
/// run.json carries the rate factor jitter.json names (within ±5 %), the
/// draws move the results, and the band holds the plain run.
#[test]
fn jitter_draws_twins_around_the_plain_run() {
    let dir = scratch("jitter");
    let exp = experiment(&dir, "[\"fair\", \"fifo\"]");
    let args = |out: &Path, jitter: Option<f64>, seeds: u32| SimArgs {
        threads: Some(2),
        seeds,
        jitter,
        draws: 4,
        ..sim_args(exp.clone(), out.to_path_buf())
    };
    let (out, plain) = (dir.join("out"), dir.join("plain"));
    run(args(&out, Some(0.05), 1)).expect("sim --jitter runs");
    run(args(&plain, None, 1)).expect("sim runs");
    assert_eq!(
        summary(&out.join("draw-0"))["schedulers"],
        summary(&plain)["schedulers"]
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("jitter.json")).expect("jitter.json"))
            .expect("json");
    let draws = report["draws"].as_array().expect("draws");
    assert_eq!(draws.len(), 4);
    let mut jct: Vec<f64> = Vec::new();
    for (k, d) in draws.iter().enumerate() {
        let factor = d["rate_factor"].as_f64().expect("rate_factor");
        assert!((0.95..=1.05).contains(&factor), "draw {k}: {factor}");
        let run_json: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(out.join(format!("draw-{k}/run.json"))).expect("run.json"),
        )
        .expect("json");
        if k == 0 {
            assert_eq!(factor, 1.0);
            assert!(run_json.get("link_rate_factor").is_none());
        } else {
            assert_eq!(run_json["link_rate_factor"].as_f64(), Some(factor));
            let speeds = d["host_speed"].as_object().expect("host_speed");
            assert_eq!(speeds.len(), 4, "one factor per host of tiny.toml (2 × 2)");
        }
        let s = summary(&out.join(format!("draw-{k}")));
        jct.push(s["schedulers"][0]["avg_jct_s"].as_f64().expect("avg_jct_s"));
    }
    assert!(
        jct[1..].iter().any(|&j| j != jct[0]),
        "no draw moved fair's JCT: {jct:?}"
    );
    let fair = &report["schedulers"][0];
    let (lo, hi) = (
        fair["avg_jct_s"]["min"].as_f64().expect("min"),
        fair["avg_jct_s"]["max"].as_f64().expect("max"),
    );
    assert!(
        lo <= jct[0] && jct[0] <= hi && lo < hi,
        "{lo} ≤ {} ≤ {hi}",
        jct[0]
    );
    let err = run(args(&dir.join("both"), Some(0.05), 2)).expect_err("jitter with seeds");
    assert!(format!("{err:#}").contains("--jitter and --seeds"), "{err:#}");
    let err = run(args(&dir.join("big"), Some(0.5), 1)).expect_err("too much jitter");
    assert!(
        format!("{err:#}").contains("--jitter 0.5 is not a fraction in (0, 0.2]"),
        "{err:#}"
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_bad_perturbation_on_the_command_line_is_refused_naming_it() {
    let dir = scratch("perturb");
    let exp = experiment(&dir, "[\"fair\"]");
    let err = run(SimArgs {
        json: false,
        perturb: vec!["straggler:r99h0:0.5@1s+1s".into()],
        ..sim_args(exp, dir.join("out"))
    })
    .expect_err("no such host");
    let msg = format!("{err:#}");
    assert!(msg.contains("--perturb") && msg.contains("r99h0"), "{msg}");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn sim_carries_out_a_link_window_and_shuffles_across_it_wait() {
    // Rack 0's uplink down for twice the unperturbed makespan from the
    // start: every shuffle that leaves rack 0 waits for it, so the
    // makespan passes the window's end.
    let dir = scratch("sim-link");
    let exp = experiment(&dir, "[\"fair\"]");
    let makespan = |perturb: Vec<String>, out: &str| {
        run(SimArgs {
            perturb,
            ..sim_args(exp.clone(), dir.join(out))
        })
        .expect("sim runs");
        summary(&dir.join(out))["schedulers"][0]["makespan_s"]
            .as_f64()
            .expect("makespan")
    };
    let base = makespan(Vec::new(), "base");
    let window = (2.0 * base).ceil() as u64;
    let cut = makespan(vec![format!("link-down:r0-up@0s+{window}s")], "cut");
    assert!(
        cut >= window as f64,
        "{cut} vs {base} without a {window} s window"
    );
    std::fs::remove_dir_all(dir).ok();
}

/// Rows of a CSV as maps from column to cell.
fn csv_rows(path: &Path) -> Vec<std::collections::BTreeMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    let header: Vec<String> = lines
        .next()
        .expect("header")
        .split(',')
        .map(str::to_string)
        .collect();
    lines
        .map(|l| {
            header
                .iter()
                .cloned()
                .zip(l.split(',').map(str::to_string))
                .collect()
        })
        .collect()
}

fn num(row: &std::collections::BTreeMap<String, String>, col: &str) -> Option<f64> {
    row.get(col)
        .filter(|v| !v.is_empty())
        .map(|v| v.parse().expect("number"))
}

fn close(a: f64, b: f64, what: &str) {
    assert!(
        (a - b).abs() <= 1e-6 * b.abs().max(1.0),
        "{what}: table {a} vs CSVs {b}"
    );
}

#[test]
fn demo_sim_json_table_traces_to_the_csvs_of_its_results_folder() {
    use ocslab_scheduler::cli::demo::{run as demo, DemoArgs};
    use ocslab_scheduler::demo::{self, lineup::lineup, Simulator};
    use ocslab_scheduler::progress::Progress;

    let dir = scratch("demo");
    // The command itself, as `ocslab demo --sim --json --out DIR` runs it.
    let code = demo(DemoArgs {
        sim: true,
        json: true,
        out: Some(dir.join("cli")),
        time_limit: 60,
        payload_rates: false,
        jitter: None,
        draws: 20,
        model_draws: 40,
    })
    .expect("ocslab demo --sim --json runs");
    assert_eq!(code, std::process::ExitCode::SUCCESS);
    let printed: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("cli/demo.json")).expect("demo.json"))
            .expect("demo.json is JSON");
    // A simulated demo is not set against the model: it is the model.
    assert!(printed.get("model").is_none(), "{printed}");

    // The same run through the library, to read the table as a value.
    let out = demo::run(
        &mut Simulator::default(),
        &dir.join("lib"),
        &Progress::hidden(0),
        None,
    )
    .expect("demo runs");
    let expected = lineup(&ocslab_scheduler::policy::names());
    let names: Vec<&str> = out.table.rows.iter().map(|r| r.scheduler.as_str()).collect();
    assert_eq!(names, expected, "every scheduler of the line-up has a row");
    assert_eq!(out.table.baseline, "fair");
    assert_eq!(out.table.rows[0].vs_baseline.avg_jct, 1.0);
    // The simulator is deterministic: the command's table is the library's
    // (up to JSON's decimal round trip).
    let rows = printed["table"]["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), out.table.rows.len());
    for (p, r) in rows.iter().zip(&out.table.rows) {
        assert_eq!(p["scheduler"], r.scheduler.as_str());
        for (k, v) in [
            ("makespan_s", r.makespan_s),
            ("avg_jct_s", r.avg_jct_s),
            ("ocs_percent", r.ocs_percent),
        ] {
            close(p[k].as_f64().expect("number"), v, k);
        }
    }
    assert_eq!(printed["driver"], "sim");

    let res = &out.results_dir;
    for f in [
        "summary.json",
        "run.json",
        "demo.json",
        "experiment.toml",
        "topology.toml",
    ] {
        assert!(res.join(f).is_file(), "{f} missing");
    }
    for svg in [
        "cct_cdf",
        "jct_cdf",
        "bytes_by_fabric",
        "makespan",
        "avg_jct",
        "avg_cct",
        "p95_cct",
    ] {
        let text = std::fs::read_to_string(res.join(format!("{svg}.svg"))).expect("svg");
        assert!(
            text.starts_with("<svg") && text.trim_end().ends_with("</svg>"),
            "{svg}.svg"
        );
    }
    for row in &out.table.rows {
        let s = &row.scheduler;
        for svg in [format!("circuits-{s}.svg"), format!("utilization-{s}.svg")] {
            let text = std::fs::read_to_string(res.join(&svg)).expect("svg");
            assert!(text.contains("</svg>"), "{svg}");
        }
        let sub = res.join(s);
        // Makespan and average JCT from jobs.csv.
        let jobs = csv_rows(&sub.join("jobs.csv"));
        assert_eq!(jobs.len(), row.jobs);
        let jct: Vec<f64> = jobs.iter().filter_map(|j| num(j, "jct_s")).collect();
        close(
            row.avg_jct_s,
            jct.iter().sum::<f64>() / jct.len() as f64,
            "avg JCT",
        );
        let first = jobs
            .iter()
            .filter_map(|j| num(j, "arrival_s"))
            .fold(f64::MAX, f64::min);
        let last = jobs
            .iter()
            .filter_map(|j| num(j, "finished_s"))
            .fold(0.0, f64::max);
        close(row.makespan_s, last - first, "makespan");
        // Average and p95 CCT of the shuffles, cross-rack bytes from coflows.csv.
        let coflows = csv_rows(&sub.join("coflows.csv"));
        let mut cct: Vec<f64> = coflows
            .iter()
            .filter(|c| c["kind"] == "shuffle")
            .filter_map(|c| num(c, "cct_s"))
            .collect();
        cct.sort_by(f64::total_cmp);
        assert!(!cct.is_empty(), "{s}: shuffles used the network");
        close(
            row.avg_cct_s,
            cct.iter().sum::<f64>() / cct.len() as f64,
            "avg CCT",
        );
        let rank = ((0.95 * cct.len() as f64).ceil() as usize).clamp(1, cct.len());
        close(row.p95_cct_s, cct[rank - 1], "p95 CCT");
        let cross: f64 = coflows.iter().filter_map(|c| num(c, "cross_rack_bytes")).sum();
        close(row.cross_rack_gb, cross / 1e9, "cross-rack GB");
        // % bytes over OCS from flows.csv: the cross-rack flows' bytes per fabric.
        let rack = |h: &str| h.split('h').next().map(str::to_string);
        let flows: Vec<_> = csv_rows(&sub.join("flows.csv"))
            .into_iter()
            .filter(|f| rack(&f["src"]) != rack(&f["dst"]))
            .collect();
        let eps: f64 = flows.iter().filter_map(|f| num(f, "eps_bytes")).sum();
        let ocs: f64 = flows.iter().filter_map(|f| num(f, "ocs_bytes")).sum();
        assert!(ocs > 0.0, "{s}: Sunflow put elephants on circuits");
        close(row.ocs_percent, 100.0 * ocs / (eps + ocs), "OCS %");
        // The circuit timeline's data: as many circuits as reconfigurations counted.
        let circuits = csv_rows(&sub.join("circuits.csv"));
        let summary = summary(res);
        let counted = summary["schedulers"]
            .as_array()
            .and_then(|a| a.iter().find(|x| x["name"] == s.as_str()))
            .and_then(|x| x["reconfigurations"].as_u64())
            .expect("reconfigurations in summary.json");
        assert_eq!(circuits.len() as u64, counted, "{s}: circuits.csv");
        let util = csv_rows(&sub.join("utilization.csv"));
        assert!(
            !util.is_empty() && util[0].contains_key("r0 OCS port 0"),
            "{s}: utilization.csv"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// `ocslab demo --sim --jitter 0.01 --draws 3`: the folder holds the
/// demo's experiment and topology, draw 0 is the plain demo (the same
/// summaries as `ocslab demo --sim`), and the other draws ran with their
/// own rate factors.
#[test]
fn demo_sim_jitter_draws_twins_of_the_demo() {
    use ocslab_scheduler::cli::demo::{run as demo, DemoArgs};

    let dir = scratch("demo-jitter");
    let args = |out: &str, jitter: Option<f64>| DemoArgs {
        sim: true,
        json: true,
        out: Some(dir.join(out)),
        time_limit: 60,
        payload_rates: false,
        jitter,
        draws: 3,
        model_draws: 40,
    };
    demo(args("twins", Some(0.01))).expect("ocslab demo --sim --jitter runs");
    demo(args("plain", None)).expect("ocslab demo --sim runs");
    let twins = dir.join("twins");
    for f in [
        "experiment.toml",
        "topology.toml",
        "jitter.json",
        "draw-0",
        "draw-2",
    ] {
        assert!(twins.join(f).exists(), "{f} missing");
    }
    assert_eq!(
        summary(&twins.join("draw-0"))["schedulers"],
        summary(&dir.join("plain"))["schedulers"]
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(twins.join("jitter.json")).expect("jitter.json"))
            .expect("json");
    for k in 1..3 {
        let run_json: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(twins.join(format!("draw-{k}/run.json"))).expect("run.json"),
        )
        .expect("json");
        assert_eq!(run_json["link_rate_factor"], report["draws"][k]["rate_factor"]);
    }
    std::fs::remove_dir_all(&dir).ok();
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
    let out = std::process::Command::new(ocslab_tests::built_binary("ocslab"))
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

/// A range that overlaps the box's own addresses matters only to a fabric
/// on the box: `topo check` takes the file as simulation only, naming the
/// file, line and field, and `ocslab up` refuses it before building.
#[test]
fn a_range_on_the_box_is_simulation_only_and_refused_by_up() {
    let dir = scratch("loopback");
    let (file, line) = bad_tiny(
        &dir,
        "loopback.toml",
        "range = \"198.18.0.0/15\"",
        "range = \"127.0.0.0/8\"",
    );
    let at = format!("{}:{line}: field `addresses.range`", file.display());
    let why = "overlaps 127.0.0.1, an address of this box";
    let (ok, out, err) = topo_check(&file);
    assert!(ok, "a simulation reads nothing of the box: {err}");
    assert!(
        out.contains("simulation only") && out.contains(&at) && out.contains(why),
        "{out}"
    );
    let (ok, _, err) = ocslab(&["up".as_ref(), file.as_os_str()]);
    assert!(!ok, "ocslab up built a fabric on the box's own addresses");
    assert!(err.contains(&at) && err.contains(why), "{err}");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_topology_too_large_to_emulate_is_checked_as_simulation_only_and_refused_by_up() {
    let dir = scratch("big");
    // 250 racks of 244 hosts (the most a /24 block addresses): 61,000
    // hosts, more than a box with 24 GB, or pid_max 32,768, can hold.
    let (file, line) = bad_tiny(&dir, "big.toml", "racks = 2", "racks = 250");
    let text = std::fs::read_to_string(&file).expect("read");
    std::fs::write(
        &file,
        text.replacen("hosts_per_rack = 2", "hosts_per_rack = 244", 1),
    )
    .expect("write");
    let (ok, json, err) = ocslab(&[
        "topo".as_ref(),
        "check".as_ref(),
        file.as_os_str(),
        "--json".as_ref(),
    ]);
    assert!(ok, "a large topology is valid for simulation: {err}");
    let v: serde_json::Value = serde_json::from_str(&json).expect("--json");
    let limit = v["host_limit"]["hosts"].as_u64().expect("host_limit.hosts");
    let binding = v["host_limit"]["binding"].as_str().expect("host_limit.binding");
    let bounds = v["host_limit_bounds"].as_array().expect("host_limit_bounds");
    assert_eq!(
        bounds.iter().filter_map(|b| b["hosts"].as_u64()).min(),
        Some(limit),
        "the smallest bound is the limit: {v}"
    );
    if limit >= 61_000 {
        eprintln!("skipped: this box can emulate {limit} hosts ({binding}), 61,000 included");
        return;
    }
    let at = format!("{}:{line}: field `racks`", file.display());
    let (ok, out, _) = topo_check(&file);
    assert!(ok, "a large topology is valid for simulation");
    assert!(out.contains("simulation only") && out.contains(&at), "{out}");
    // The figures move between two reads of the box (tasks running,
    // memory); the error names the resource that binds.
    assert!(
        out.contains("61000 hosts is more than this box can emulate (at most "),
        "{out}"
    );
    assert!(
        [
            "memory (",
            "file descriptors (",
            "processes (",
            "network namespaces ("
        ]
        .iter()
        .any(|r| out.contains(&format!("bound by {r}"))),
        "{out}"
    );
    // Refused before anything is built, so this needs no privilege.
    let (ok, _, err) = ocslab(&["up".as_ref(), file.as_os_str()]);
    assert!(!ok, "ocslab up built a topology too large to emulate");
    assert!(
        err.contains(&at) && err.contains("more than this box can emulate"),
        "{err}"
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_generated_trace_replays_under_sunflow_on_circuits_only() {
    // `ocslab trace gen` is seeded (the same file twice); its trace replays
    // on the fabric of circuits only under `sunflow`, every coflow at or
    // above its lower bound, and the summary names the flow-size rule.
    let dir = scratch("trace-gen");
    let (a, b) = (dir.join("a.txt"), dir.join("b.txt"));
    for path in [&a, &b] {
        let args = [
            "trace",
            "gen",
            "--racks",
            "8",
            "--coflows",
            "20",
            "--seed",
            "5",
            "-o",
        ];
        let mut argv: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
        argv.push(path.as_os_str());
        let (ok, _, err) = ocslab(&argv);
        assert!(ok, "{err}");
    }
    let text = std::fs::read_to_string(&a).expect("trace written");
    assert_eq!(text, std::fs::read_to_string(&b).expect("trace written"));
    assert!(text.starts_with("8 20\n"), "{text}");
    let out = dir.join("replay");
    let topology = repo().join("topologies/fb2010-ocs-only.toml");
    let (ok, json, err) = ocslab(&[
        "replay".as_ref(),
        a.as_os_str(),
        "--topology".as_ref(),
        topology.as_os_str(),
        "--coflow-scheduler".as_ref(),
        "sunflow".as_ref(),
        "--flow-sizes".as_ref(),
        "sunflow".as_ref(),
        "--json".as_ref(),
        "--out".as_ref(),
        out.as_os_str(),
    ]);
    assert!(ok, "{err}");
    let report: serde_json::Value = serde_json::from_str(&json).expect("json report");
    assert_eq!(report["flow_sizes"], "sunflow");
    assert_eq!(report["cct_s"]["count"], 20);
    let ratios = csv_column(&out.join("coflows.csv"), "ratio");
    assert_eq!(ratios.len(), 20);
    for r in ratios.iter().filter(|r| !r.is_empty()) {
        let x: f64 = r.parse().expect("a ratio");
        assert!(x >= 1.0 - 1e-9, "a coflow below its lower bound: {x}");
    }
    assert_eq!(summary(&out)["flow_sizes"], "sunflow");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `fair-split` (CoflowSim's per-port equal split) replays in the fluid
/// model, every coflow at or above its lower bound, and is refused with
/// real bytes before a lab is built (so this needs no privilege): the
/// kernel fabric shares links as TCP does.
#[test]
fn fair_split_replays_simulated_and_is_refused_on_the_kernel_fabric() {
    let dir = scratch("fair-split");
    let trace = dir.join("t.txt");
    let (ok, _, err) = ocslab(&[
        "trace".as_ref(),
        "gen".as_ref(),
        "--racks".as_ref(),
        "2".as_ref(),
        "--coflows".as_ref(),
        "6".as_ref(),
        "--seed".as_ref(),
        "3".as_ref(),
        "-o".as_ref(),
        trace.as_os_str(),
    ]);
    assert!(ok, "{err}");
    let topology = repo().join("topologies/tiny.toml");
    let replay = |extra: &[&str]| {
        let mut argv: Vec<&std::ffi::OsStr> = vec![
            "replay".as_ref(),
            trace.as_os_str(),
            "--topology".as_ref(),
            topology.as_os_str(),
            "--coflow-scheduler".as_ref(),
            "fair-split".as_ref(),
        ];
        argv.extend(extra.iter().map(std::ffi::OsStr::new));
        ocslab(&argv)
    };
    let out = dir.join("sim");
    let (ok, _, err) = replay(&["--out", out.to_str().expect("utf-8 path")]);
    assert!(ok, "{err}");
    let ratios = csv_column(&out.join("coflows.csv"), "ratio");
    assert_eq!(ratios.len(), 6);
    for r in ratios.iter().filter(|r| !r.is_empty()) {
        let x: f64 = r.parse().expect("a ratio");
        assert!(x >= 1.0 - 1e-9, "a coflow below its lower bound: {x}");
    }
    let (ok, _, err) = replay(&["--emulate"]);
    assert!(!ok, "fair-split ran on the kernel fabric");
    assert!(err.contains("splits each link equally"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `ocslab topo check` says when a topology's circuits follow a schedule.
#[test]
fn topo_check_reports_a_topologys_schedule() {
    let (ok, stdout, stderr) = topo_check(&repo().join("topologies/lab-rotor.toml"));
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains("circuits follow a schedule: 3 slots, period 3ms, dark 100us"),
        "{stdout}"
    );
}

fn sweep_args(
    exp: &Path,
    out: &Path,
    vary: &[&str],
    threads: u32,
) -> ocslab_scheduler::cli::sweep::SweepArgs {
    ocslab_scheduler::cli::sweep::SweepArgs {
        experiment: exp.to_path_buf(),
        vary: vary.iter().map(|s| s.to_string()).collect(),
        task_schedulers: Vec::new(),
        threads: Some(threads),
        out: Some(out.to_path_buf()),
        load: ocslab_scheduler::cli::sweep::Load::Slot,
        resume: false,
        json: true,
    }
}

fn sweep_json(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("sweep.json")).expect("sweep.json");
    serde_json::from_str(&text).expect("valid JSON")
}

/// A 2 × 2 sweep (seed × jobs) gives the same points on one thread and on
/// two, each point's summaries are those of `ocslab sim` on the file with
/// that point's settings, the CSV has a row per point and scheduler, and
/// each plot has a line per scheduler after the baseline and value of the
/// second axis.
#[test]
fn a_sweep_runs_each_point_as_sim_would_whatever_the_thread_count() {
    use ocslab_scheduler::cli::sweep::run as sweep;
    let dir = scratch("sweep");
    let exp = experiment(&dir, "[\"fair\", \"fifo\"]");
    let vary = ["seed=5,6", "workload.jobs=4,8"];
    let (one, two) = (dir.join("one"), dir.join("two"));
    sweep(sweep_args(&exp, &one, &vary, 1)).expect("sweep on one thread");
    sweep(sweep_args(&exp, &two, &vary, 2)).expect("sweep on two threads");
    let (a, b) = (sweep_json(&one), sweep_json(&two));
    assert_eq!(a["points"], b["points"], "results depend on the thread count");
    let points = a["points"].as_array().expect("points");
    let settings: Vec<(String, String)> = points
        .iter()
        .map(|p| {
            let s = &p["settings"];
            (
                s["seed"].as_str().expect("seed").into(),
                s["workload.jobs"].as_str().expect("jobs").into(),
            )
        })
        .collect();
    let expected = [("5", "4"), ("5", "8"), ("6", "4"), ("6", "8")];
    assert_eq!(settings, expected.map(|(s, j)| (s.to_string(), j.to_string())));
    let text = std::fs::read_to_string(&exp).expect("experiment");
    let point = dir.join("point.toml");
    std::fs::write(
        &point,
        text.replace("seed = 5", "seed = 6")
            .replace("jobs = 8", "jobs = 4"),
    )
    .expect("write");
    let sim_out = dir.join("sim");
    run(SimArgs {
        threads: Some(1),
        ..sim_args(point, sim_out.clone())
    })
    .expect("sim runs the point");
    assert_eq!(points[2]["schedulers"], summary(&sim_out)["schedulers"]);
    assert_eq!(points[2]["jobs"], 4);
    assert_ne!(
        points[0]["schedulers"], points[2]["schedulers"],
        "the seed changed nothing"
    );
    let slot = |i: usize| points[i]["offered"]["slot_load"].as_f64().expect("slot load");
    assert!(slot(0) > 0.0 && slot(1) > 0.0, "{} {}", slot(0), slot(1));
    assert_eq!(
        csv_column(&one.join("sweep.csv"), "scheduler"),
        ["fair", "fifo"].repeat(4)
    );
    let svg = std::fs::read_to_string(one.join("sweep_avg_jct.svg")).expect("plot");
    for legend in ["fifo, jobs=4", "fifo, jobs=8", "fair = 1"] {
        assert!(svg.contains(legend), "no line {legend:?} in sweep_avg_jct.svg");
    }
    std::fs::remove_dir_all(dir).ok();
}

/// A key the experiment format does not have and a value out of range are
/// refused before anything runs, naming the point and the field (and no
/// line of the file for a value that came from `--vary`).
#[test]
fn a_sweep_names_the_point_and_field_of_a_bad_setting() {
    use ocslab_scheduler::cli::sweep::run as sweep;
    let dir = scratch("sweep-bad");
    let exp = experiment(&dir, "[\"fair\"]");
    let out = dir.join("out");
    let err = sweep(sweep_args(&exp, &out, &["workload.jobz=3"], 1)).expect_err("unknown key");
    let msg = format!("{err:#}");
    assert!(
        msg.contains("point workload.jobz=3") && msg.contains("jobz"),
        "{msg}"
    );
    let err = sweep(sweep_args(&exp, &out, &["workload.jobs=8,0"], 1)).expect_err("no jobs");
    let msg = format!("{err:#}");
    assert!(
        msg.contains("point workload.jobs=0") && msg.contains("field `workload.jobs`"),
        "{msg}"
    );
    assert!(
        msg.contains("e.toml: field"),
        "a line for a value from --vary: {msg}"
    );
    assert_eq!(
        msg.matches("must be").count(),
        1,
        "the cause is printed twice: {msg}"
    );
    let err = sweep(sweep_args(&exp, &out, &["seed"], 1)).expect_err("no values");
    assert!(format!("{err:#}").contains("--vary \"seed\""), "{err:#}");
    assert!(!out.exists(), "a refused sweep left a results folder");
    std::fs::remove_dir_all(dir).ok();
}

/// A killed sweep's finished runs are picked up by `--resume`: a kept run
/// whose fingerprint matches is not run again (its marked makespan comes
/// through), one whose fingerprint does not is run again, and a sweep
/// without `--resume` runs everything afresh.
#[test]
fn a_resumed_sweep_reruns_only_what_the_killed_one_did_not_finish() {
    use ocslab_scheduler::cli::sweep::run as sweep;
    let dir = scratch("sweep-resume");
    let exp = experiment(&dir, "[\"fair\", \"fifo\"]");
    let vary = ["seed=5,6"];
    let full = dir.join("full");
    sweep(sweep_args(&exp, &full, &vary, 2)).expect("sweep");
    let runs = full.join("runs");
    let names: Vec<String> = ["0-fair", "0-fifo", "1-fair", "1-fifo"]
        .iter()
        .map(|n| format!("{n}.json"))
        .collect();
    for n in &names {
        assert!(runs.join(n).is_file(), "no kept run {n}");
    }
    // What a sweep killed after three runs leaves: two kept as they were
    // (one marked), one from another ocslab (fingerprint differs).
    let out = dir.join("resumed");
    let partial = dir.join(".resumed.partial").join("runs");
    std::fs::create_dir_all(&partial).expect("partial");
    let edit = |name: &str, f: &dyn Fn(&mut serde_json::Value)| {
        let mut v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(runs.join(name)).expect("run")).expect("json");
        f(&mut v);
        std::fs::write(partial.join(name), v.to_string()).expect("write");
    };
    edit(&names[0], &|v| v["summary"]["makespan_s"] = 12345.0.into());
    edit(&names[1], &|_| {});
    edit(&names[2], &|v| {
        v["fingerprint"] = "0000000000000000".into();
        v["summary"]["makespan_s"] = 777.0.into();
    });
    let mut args = sweep_args(&exp, &out, &vary, 1);
    args.resume = true;
    sweep(args).expect("resumed sweep");
    let (a, b) = (sweep_json(&full), sweep_json(&out));
    let makespan = |v: &serde_json::Value, p: usize, s: usize| {
        v["points"][p]["schedulers"][s]["makespan_s"]
            .as_f64()
            .expect("makespan")
    };
    assert_eq!(makespan(&b, 0, 0), 12345.0, "the kept run was run again");
    assert_eq!(makespan(&b, 0, 1), makespan(&a, 0, 1));
    assert_eq!(
        makespan(&b, 1, 0),
        makespan(&a, 1, 0),
        "a stale kept run was used"
    );
    assert_eq!(b["points"][1], a["points"][1]);
    assert!(!dir.join(".resumed.partial").exists());
    sweep(sweep_args(&exp, &out, &vary, 1)).expect("sweep afresh");
    assert_eq!(
        sweep_json(&out)["points"],
        a["points"],
        "without --resume nothing is reused"
    );
    std::fs::remove_dir_all(dir).ok();
}
