//! Kill loops: each command is SIGKILLed at a seeded random moment, then
//! `ocslab down` runs; or it gets SIGINT, SIGTERM or SIGHUP there, and
//! cleans up by itself with no `ocslab down`. Either way nothing of the
//! run may be left: no namespace, no
//! interface in the box's namespace, no BPF program, no ocslab or agent
//! process, no run directory under `/run/ocslab`, no `ocslab-*` entry in the
//! temporary directory (agent credentials once stayed there), and no results folder that
//! is not complete (a killed run leaves no folder under the name it would
//! have printed).
//!
//! Rounds per command: `OCSLAB_KILL_ROUNDS` (default 3; docs/reliability.md
//! gives figures for 50), seed `OCSLAB_KILL_SEED` (default 1). A failure
//! names the command, the round and the moment of the kill, so a round can
//! be replayed. The loops that build fabrics need root and skip without it;
//! the simulator's loop runs anywhere.

use ocslab_emulator::fabric::ledger::RUN_ROOT;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

/// The loops look at the whole box: one at a time.
static ONE_LOOP: Mutex<()> = Mutex::new(());

fn one_loop() -> std::sync::MutexGuard<'static, ()> {
    ONE_LOOP.lock().unwrap_or_else(|e| e.into_inner())
}

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ocslab-kill-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch dir");
    d
}

/// What a run can leave on the box.
#[derive(Debug, Default, PartialEq, Eq)]
struct Leftovers {
    namespaces: BTreeSet<String>,
    interfaces: BTreeSet<String>,
    bpf_programs: usize,
    processes: BTreeSet<u32>,
    run_dirs: BTreeSet<String>,
    temp_dirs: BTreeSet<String>,
}

fn names_in(dir: &str, keep: impl Fn(&str) -> bool) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| keep(n))
                .collect()
        })
        .unwrap_or_default()
}

impl Leftovers {
    /// What is here now and was not in `before`. Only what appears counts:
    /// a process of an earlier test that ends during the loop is not left
    /// by it.
    fn since(before: &Leftovers) -> Leftovers {
        let now = Leftovers::now();
        let new = |a: &BTreeSet<String>, b: &BTreeSet<String>| a.difference(b).cloned().collect();
        Leftovers {
            namespaces: new(&now.namespaces, &before.namespaces),
            interfaces: new(&now.interfaces, &before.interfaces),
            bpf_programs: now.bpf_programs.saturating_sub(before.bpf_programs),
            processes: now.processes.difference(&before.processes).copied().collect(),
            run_dirs: new(&now.run_dirs, &before.run_dirs),
            temp_dirs: new(&now.temp_dirs, &before.temp_dirs),
        }
    }

    fn now() -> Leftovers {
        let ours = [
            ocslab_tests::built_binary("ocslab"),
            ocslab_tests::built_binary("ocslab-agent"),
        ];
        let processes = names_in("/proc", |n| n.parse::<u32>().is_ok())
            .into_iter()
            .filter_map(|pid| {
                let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok()?;
                ours.contains(&exe).then(|| pid.parse().ok()).flatten()
            })
            .collect();
        let bpf_programs = aya::programs::loaded_programs()
            .filter_map(Result::ok)
            .filter(|p| matches!(p.name_as_str(), Some("ocs_port" | "tor_ingress")))
            .count();
        Leftovers {
            namespaces: names_in("/run/netns", |n| n.starts_with("ocslab-")),
            interfaces: names_in("/sys/class/net", |_| true),
            bpf_programs,
            processes,
            run_dirs: names_in(RUN_ROOT, |_| true),
            temp_dirs: names_in(&std::env::temp_dir().to_string_lossy(), |n| {
                n.starts_with("ocslab-")
            }),
        }
    }
}

/// How a round ends its command.
#[derive(Clone, Copy, Debug)]
enum Ending {
    /// SIGKILL, then `ocslab down`: what a crash leaves, cleaned up.
    Killed,
    /// SIGINT, SIGTERM and SIGHUP in turn: the command tears down what it
    /// built and exits 128 + the signal (or 0, had it finished).
    Signalled,
}

/// A command to kill, and how long into it the kill may come.
struct Target {
    name: &'static str,
    args: Vec<String>,
    /// Kills land uniformly in [0, window].
    window: Duration,
    /// The results folder the command writes (`--out`), if any, and a file
    /// every complete one has.
    results: Option<(PathBuf, &'static str)>,
    /// Every file of a complete results folder, where known.
    complete_files: Option<BTreeSet<String>>,
}

/// The files under `dir`, as paths relative to it.
fn files_under(dir: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d)
            .expect("read results")
            .filter_map(Result::ok)
        {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else if let Ok(rel) = p.strip_prefix(dir) {
                out.insert(rel.display().to_string());
            }
        }
    }
    out
}

/// Runs `rounds` kill rounds of `t`; returns how many the command finished
/// before its kill.
fn kill_loop(t: &Target, how: Ending, rounds: u64, seed: u64) -> u64 {
    use nix::sys::signal::Signal;
    let ocslab = ocslab_tests::built_binary("ocslab");
    let before = Leftovers::now();
    // The kill moments, from the seed.
    let mut moments = ocslab_tests::SplitMix64(seed ^ t.name.len() as u64 ^ ((how as u64) << 32));
    let mut finished = 0;
    for round in 0..rounds {
        let at = t.window.mul_f64(moments.next_fraction());
        let mut child = Command::new(&ocslab)
            .args(&t.args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start ocslab");
        // The kill moment is the experiment's input, not a synchronisation.
        std::thread::sleep(at);
        let done_before = child.try_wait().expect("poll").is_some();
        let signal = match how {
            Ending::Killed => Signal::SIGKILL,
            Ending::Signalled => [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP][round as usize % 3],
        };
        // The child is not reaped yet, so its pid is still its own.
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), signal);
        let status = child.wait().expect("reap");
        finished += u64::from(done_before);
        let what = format!("{} round {round} (seed {seed}), {signal} at {at:?}", t.name);
        match how {
            Ending::Killed => {
                let down = Command::new(&ocslab).arg("down").output().expect("ocslab down");
                assert!(
                    down.status.success(),
                    "{what}: ocslab down failed: {}",
                    String::from_utf8_lossy(&down.stderr)
                );
            }
            Ending::Signalled => assert!(
                status.code() == Some(128 + signal as i32) || (done_before && status.success()),
                "{what}: ended with {status}"
            ),
        }
        // The kernel destroys a removed namespace, and with it the tc
        // filters that hold the BPF programs, in a worker of its own: wait
        // for that, up to a bound.
        let nothing = Leftovers::default();
        ocslab_tests::eventually(Duration::from_secs(10), || Leftovers::since(&before) == nothing);
        assert_eq!(Leftovers::since(&before), nothing, "{what}: left behind");
        if let Some((dir, file)) = &t.results {
            if dir.exists() {
                let text = std::fs::read_to_string(dir.join(file))
                    .unwrap_or_else(|e| panic!("{what}: {} exists but has no {file}: {e}", dir.display()));
                assert!(
                    serde_json::from_str::<serde_json::Value>(&text).is_ok(),
                    "{what}: {file} of {} is not whole JSON",
                    dir.display()
                );
                if let Some(files) = &t.complete_files {
                    assert_eq!(&files_under(dir), files, "{what}: an incomplete folder");
                }
                std::fs::remove_dir_all(dir).expect("remove results");
            }
        }
    }
    eprintln!(
        "{}: {rounds} kills ({how:?}) in [0, {:?}], {finished} after the command ended, nothing left",
        t.name, t.window
    );
    finished
}

fn repo(path: &str) -> String {
    ocslab_tests::workspace_root().join(path).display().to_string()
}

/// A simulated replay: no fabric, so this loop is about the results folder,
/// with kills spread over the whole run, writing included.
#[test]
fn a_killed_replay_leaves_a_complete_folder_or_none() {
    let _one = one_loop();
    let dir = scratch("replay-sim");
    let out = dir.join("out");
    let args: Vec<String> = [
        "replay",
        &repo("traces/FB2010-1Hr-150-0.txt"),
        "--topology",
        &repo("topologies/fb2010.toml"),
        "--limit",
        "60",
        "--out",
        &out.display().to_string(),
    ]
    .map(String::from)
    .to_vec();
    // The window is 1.25 times one whole run: most kills come during it,
    // some after it ended.
    let start = std::time::Instant::now();
    let whole = Command::new(ocslab_tests::built_binary("ocslab"))
        .args(&args)
        .output()
        .expect("replay");
    assert!(
        whole.status.success(),
        "{}",
        String::from_utf8_lossy(&whole.stderr)
    );
    let took = start.elapsed();
    let complete = files_under(&out);
    std::fs::remove_dir_all(&out).expect("remove the whole run's folder");
    let (rounds, seed) = ocslab_tests::kill_rounds();
    let t = Target {
        name: "replay (simulated)",
        args,
        window: took.mul_f64(1.25),
        results: Some((out, "summary.json")),
        complete_files: Some(complete),
    };
    kill_loop(&t, Ending::Killed, rounds * 10, seed);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_killed_up_leaves_nothing_after_down() {
    if ocslab_tests::skip("a_killed_up_leaves_nothing_after_down") {
        return;
    }
    let _one = one_loop();
    let (rounds, seed) = ocslab_tests::kill_rounds();
    let t = Target {
        name: "up",
        args: vec!["up".into(), repo("topologies/lab.toml")],
        window: Duration::from_millis(1500),
        results: None,
        complete_files: None,
    };
    kill_loop(&t, Ending::Killed, rounds, seed);
}

/// `ocslab replay --emulate` of FB2010's first three coflows on lab.toml,
/// writing to `out`.
fn emulated_replay(out: &Path) -> Target {
    Target {
        name: "replay --emulate",
        args: [
            "replay",
            &repo("traces/FB2010-1Hr-150-0.txt"),
            "--topology",
            &repo("topologies/lab.toml"),
            "--emulate",
            "--limit",
            "3",
            "--out",
            &out.display().to_string(),
        ]
        .map(String::from)
        .to_vec(),
        window: Duration::from_secs(16),
        results: Some((out.to_path_buf(), "summary.json")),
        complete_files: None,
    }
}

/// `ocslab run` of six generated jobs on tiny.toml (its experiment file
/// written into `dir`), writing to `dir/out`.
fn emulated_run(dir: &Path) -> Target {
    let exp = dir.join("kill-loop.toml");
    std::fs::write(
        &exp,
        format!(
            "name = \"kill-loop\"\ntopology = {:?}\nseed = 5\ntask_schedulers = [\"fair\"]\ncoflow_scheduler = \"fair\"\n\n\
             [workload]\nkind = \"generated\"\njobs = 6\nusers = 2\narrivals = {{ process = \"poisson\", mean_gap = \"1s\" }}\nblock_size = \"64MB\"\n",
            repo("topologies/tiny.toml")
        ),
    )
    .expect("write experiment");
    let out = dir.join("out");
    Target {
        name: "run",
        args: vec![
            "run".into(),
            exp.display().to_string(),
            "--no-unperturbed".into(),
            "--out".into(),
            out.display().to_string(),
        ],
        window: Duration::from_secs(8),
        results: Some((out, "summary.json")),
        complete_files: None,
    }
}

/// `ocslab demo`, writing to `out`.
fn demo(out: &Path) -> Target {
    Target {
        name: "demo",
        args: vec!["demo".into(), "--out".into(), out.display().to_string()],
        window: Duration::from_secs(12),
        results: Some((out.to_path_buf(), "demo.json")),
        complete_files: None,
    }
}

/// Runs `rounds` rounds of the loop `test` names on the target `make`
/// builds in a scratch directory of its own (root only: these build
/// fabrics).
fn fabric_loop(test: &str, how: Ending, make: impl FnOnce(&Path) -> Target) {
    if ocslab_tests::skip(test) {
        return;
    }
    let _one = one_loop();
    let dir = scratch(test);
    let (rounds, seed) = ocslab_tests::kill_rounds();
    kill_loop(&make(&dir), how, rounds, seed);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_killed_emulated_replay_leaves_nothing_after_down() {
    fabric_loop(
        "a_killed_emulated_replay_leaves_nothing_after_down",
        Ending::Killed,
        |d| emulated_replay(&d.join("out")),
    );
}

#[test]
fn an_emulated_replay_ended_by_a_signal_leaves_nothing() {
    fabric_loop(
        "an_emulated_replay_ended_by_a_signal_leaves_nothing",
        Ending::Signalled,
        |d| emulated_replay(&d.join("out")),
    );
}

#[test]
fn a_killed_run_leaves_nothing_after_down() {
    fabric_loop(
        "a_killed_run_leaves_nothing_after_down",
        Ending::Killed,
        emulated_run,
    );
}

#[test]
fn a_run_ended_by_a_signal_leaves_nothing() {
    fabric_loop(
        "a_run_ended_by_a_signal_leaves_nothing",
        Ending::Signalled,
        emulated_run,
    );
}

#[test]
fn a_killed_demo_leaves_nothing_after_down() {
    fabric_loop("a_killed_demo_leaves_nothing_after_down", Ending::Killed, |d| {
        demo(&d.join("out"))
    });
}

#[test]
fn a_demo_ended_by_a_signal_leaves_nothing() {
    fabric_loop(
        "a_demo_ended_by_a_signal_leaves_nothing",
        Ending::Signalled,
        |d| demo(&d.join("out")),
    );
}
