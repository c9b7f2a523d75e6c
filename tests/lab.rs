//! The Mininet-style lab from the command line, one process per command as a
//! user at a terminal runs it: the README's tour (`up --detach`, `exec` with
//! ping and iperf3 over EPS and over a circuit, `ocs set|show`, `status`,
//! `down`) as root and as an ordinary user (rootless), another user refused,
//! and a SIGKILLed rootless holder cleaned up by `down`.
//!
//! The binary is started as root and, for the rootless cases, as an
//! unprivileged uid through `setpriv` (each test its own uid, so their runs
//! never meet). They need root to switch users (CI is root), `setpriv`,
//! unprivileged user namespaces, `iperf3` and `ping`, and skip, saying why,
//! without them.

use ocslab_emulator::fabric::ledger::process_start;
use ocslab_tests::eventually;
use serde_json::Value;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

/// tiny.toml's ToR uplink: 500 Mbit/s nominal at scale 10.
const UPLINK_BPS: f64 = 50e6;

/// Who runs the commands.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Who {
    Root,
    /// An unprivileged uid (its gid too), with no supplementary groups.
    User(u32),
}

/// A scratch directory with the binary (copied only if `who` could not
/// reach the built one) and the topology, removed on drop.
struct Lab {
    who: Who,
    dir: PathBuf,
    bin: PathBuf,
    topo: PathBuf,
    /// Runs brought up, torn down on drop should the test fail midway.
    runs: std::cell::RefCell<Vec<String>>,
}

impl Drop for Lab {
    fn drop(&mut self) {
        for run in self.runs.take() {
            let _ = self.ocslab(&["down", "--run", &run]);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Why this box cannot run the lab as `who`, or `None`.
fn cannot_run(who: Who) -> Option<String> {
    if !nix::unistd::geteuid().is_root() {
        return Some("not root (the lab tests switch users; CI is root)".into());
    }
    for tool in ["iperf3", "ping"] {
        if !Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success())
        {
            return Some(format!("{tool} is not installed (.ci/run installs it)"));
        }
    }
    if let Who::User(uid) = who {
        let probe = Command::new("setpriv")
            .args(user_args(uid))
            .args(["unshare", "-Urmn", "true"])
            .output();
        match probe {
            Err(e) => return Some(format!("setpriv cannot run: {e}")),
            Ok(o) if !o.status.success() => {
                return Some(format!(
                    "uid {uid} cannot make a user namespace here: {}",
                    String::from_utf8_lossy(&o.stderr).trim()
                ))
            }
            Ok(_) => {}
        }
    }
    None
}

fn skip(test: &str, who: Who) -> bool {
    match cannot_run(who) {
        Some(why) => {
            eprintln!("skipping {test}: {why}");
            true
        }
        None => false,
    }
}

fn user_args(uid: u32) -> Vec<String> {
    vec![
        format!("--reuid={uid}"),
        format!("--regid={uid}"),
        "--clear-groups".into(),
        "--".into(),
    ]
}

impl Lab {
    fn new(tag: &str, who: Who) -> Lab {
        let dir = std::env::temp_dir().join(format!("ocslab-lab-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch dir");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let topo = dir.join("tiny.toml");
        std::fs::copy(ocslab_tests::topology_path("tiny"), &topo).expect("copy tiny.toml");
        let mut lab = Lab {
            who,
            dir: dir.clone(),
            bin: ocslab_tests::built_binary("ocslab"),
            topo,
            runs: Default::default(),
        };
        if let Who::User(uid) = who {
            // The user writes iperf3's pid file here.
            nix::unistd::chown(&dir, Some(uid.into()), Some(uid.into())).expect("chown scratch");
            // The built binary may sit under a directory the user cannot enter.
            let reach = Command::new("setpriv")
                .args(user_args(uid))
                .arg(&lab.bin)
                .arg("--version")
                .output();
            if !reach.is_ok_and(|o| o.status.success()) {
                let copy = dir.join("ocslab");
                std::fs::copy(&lab.bin, &copy).expect("copy ocslab");
                lab.bin = copy;
            }
        }
        lab
    }

    /// Runs `ocslab ARGS` as the lab's user (rootless: with no
    /// XDG_RUNTIME_DIR, so its runs are recorded under /tmp/ocslab-<uid>).
    fn ocslab(&self, args: &[&str]) -> Output {
        self.ocslab_env(args, &[])
    }

    fn ocslab_env(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut cmd = match self.who {
            Who::Root => Command::new(&self.bin),
            Who::User(uid) => {
                let mut c = Command::new("setpriv");
                c.args(user_args(uid)).arg(&self.bin);
                c.env_remove("XDG_RUNTIME_DIR");
                c
            }
        };
        cmd.args(args).current_dir(&self.dir);
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().expect("run ocslab")
    }

    /// `ocslab ARGS`, which must succeed; returns its stdout.
    fn ok(&self, args: &[&str]) -> String {
        let o = self.ocslab(args);
        assert!(
            o.status.success(),
            "ocslab {args:?} as {:?} failed:\n{}{}",
            self.who,
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// `ocslab ARGS`, which must fail; returns its stderr.
    fn fails(&self, args: &[&str]) -> String {
        let o = self.ocslab(args);
        assert!(!o.status.success(), "ocslab {args:?} as {:?} succeeded", self.who);
        String::from_utf8_lossy(&o.stderr).into_owned()
    }

    fn json(&self, args: &[&str]) -> Value {
        let out = self.ok(args);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("ocslab {args:?}: {e}: {out}"))
    }

    /// `ocslab up TOPOLOGY --detach --json`: the summary, with the run
    /// remembered for teardown on drop.
    fn up(&self) -> Value {
        let topo = self.topo.to_string_lossy().into_owned();
        let up = self.json(&["up", &topo, "--detach", "--json"]);
        let run = up["run_id"].as_str().expect("run_id").to_string();
        self.runs.borrow_mut().push(run);
        up
    }

    /// The per-user run directory of a rootless lab.
    fn user_dir(&self) -> Option<PathBuf> {
        match self.who {
            Who::Root => None,
            Who::User(uid) => Some(PathBuf::from(format!("/tmp/ocslab-{uid}"))),
        }
    }
}

fn alive(pid: u32) -> bool {
    process_start(pid).is_some()
}

/// Starts an iperf3 server daemon in `host`; returns its pid.
fn iperf_server(lab: &Lab, run: &[&str], host: &str) -> u32 {
    let pidfile = lab.dir.join(format!("iperf-{host}.pid"));
    let pidfile_s = pidfile.to_string_lossy().into_owned();
    let mut args = vec!["exec"];
    args.extend_from_slice(run);
    args.extend_from_slice(&[host, "--", "iperf3", "-s", "-D", "-I", &pidfile_s]);
    lab.ok(&args);
    assert!(
        eventually(Duration::from_secs(10), || std::fs::read_to_string(&pidfile)
            .is_ok_and(|t| t.trim().parse::<u32>().is_ok())),
        "iperf3 -D wrote no pid file"
    );
    std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap()
}

/// Goodput (bits/s at the receiver) of a 1-second iperf3 from `from` to
/// `to_addr`. The daemon may not listen yet right after it forked: a refused
/// connection is tried again, a bounded number of times.
fn iperf_goodput(lab: &Lab, run: &[&str], from: &str, to_addr: &str, marked: bool) -> f64 {
    let mut args = vec!["exec"];
    args.extend_from_slice(run);
    args.extend_from_slice(&[from, "--", "iperf3", "-c", to_addr, "-t", "1", "--json"]);
    if marked {
        args.extend_from_slice(&["--tos", "8"]);
    }
    for _ in 0..50 {
        let o = lab.ocslab(&args);
        let v: Value = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
        if let Some(bps) = v["end"]["sum_received"]["bits_per_second"].as_f64() {
            return bps;
        }
        let err = v["error"].as_str().unwrap_or_default().to_string();
        assert!(
            err.contains("Connection refused"),
            "iperf3 {from} -> {to_addr} failed: {err}\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("iperf3 server at {to_addr} never accepted a connection");
}

fn user_ns_of(pid: u32) -> u64 {
    std::fs::metadata(format!("/proc/{pid}/ns/user"))
        .expect("holder's user namespace")
        .ino()
}

/// Pids (other than ours) whose user namespace is `ino`.
fn pids_in_user_ns(ino: u64) -> Vec<i32> {
    ocslab_emulator::fabric::ledger::pids_in_user_ns(ino)
}

/// The README's tour, as `who`. Rootless, it runs as written (no `--run`:
/// the uid is this test's alone); as root `--run` keeps it off any other
/// fabric on the box.
fn walk_the_tour(tag: &str, who: Who) {
    let lab = Lab::new(tag, who);
    let up = lab.up();
    let run_id = up["run_id"].as_str().expect("run_id").to_string();
    let holder = up["owner_pid"].as_u64().expect("owner_pid") as u32;
    let mode = if who == Who::Root { "root" } else { "rootless" };
    // Unprivileged BPF is disabled: rootless keeps the tc-mirred datapath.
    let datapath = if who == Who::Root { "ebpf" } else { "tc-mirred" };
    assert_eq!(up["mode"], mode, "{up}");
    assert_eq!(up["datapath"], datapath, "{up}");
    let r1h0 = up["hosts"]
        .as_array()
        .and_then(|h| h.iter().find(|h| h[0] == "r1h0"))
        .and_then(|h| h[1].as_str())
        .expect("r1h0's address")
        .to_string();
    let run: Vec<&str> = match who {
        Who::Root => vec!["--run", &run_id],
        Who::User(_) => vec![],
    };

    // Across racks over EPS: ping, then TCP no faster than the uplink.
    let mut ping = vec!["exec"];
    ping.extend_from_slice(&run);
    ping.extend_from_slice(&["r0h0", "--", "ping", "-c", "1", "-W", "5", &r1h0]);
    lab.ok(&ping);
    let server = iperf_server(&lab, &run, "r1h0");
    let eps = iperf_goodput(&lab, &run, "r0h0", &r1h0, false);
    assert!(
        eps > 0.0 && eps <= UPLINK_BPS,
        "EPS goodput {eps} must cross the {UPLINK_BPS} bit/s uplink"
    );

    // A circuit, then marked TCP faster than the uplink could carry: it
    // crossed the circuit.
    let mut set = vec!["ocs", "set", "0:1", "1:0", "--json"];
    set.extend_from_slice(&run);
    let rec = lab.json(&set);
    assert_eq!(rec["events"].as_array().map(Vec::len), Some(2), "{rec}");
    let mut show = vec!["ocs", "show", "--json"];
    show.extend_from_slice(&run);
    let shown = lab.json(&show);
    assert_eq!(shown["datapath"], datapath, "{shown}");
    let pairs: Vec<(u64, u64)> = shown["circuits"]
        .as_array()
        .expect("circuits")
        .iter()
        .map(|c| (c["src_rack"].as_u64().unwrap(), c["dst_rack"].as_u64().unwrap()))
        .collect();
    assert_eq!(pairs, [(0, 1), (1, 0)]);
    let ocs = iperf_goodput(&lab, &run, "r0h0", &r1h0, true);
    assert!(
        ocs > 1.2 * UPLINK_BPS,
        "marked goodput {ocs} is not above the {UPLINK_BPS} bit/s uplink: it did not take the circuit"
    );

    let status = lab.json(&["status", "--json"]);
    let me = status
        .as_array()
        .and_then(|s| s.iter().find(|s| s["run_id"] == run_id.as_str()))
        .unwrap_or_else(|| panic!("run {run_id} not in status: {status}"));
    assert_eq!(me["mode"], mode);
    assert_eq!(me["datapath"], datapath);
    assert_eq!(me["state"], "up");
    assert_eq!(me["detached"], true);
    assert_eq!(
        me["namespaces_present"], 8,
        "2 hosts x 2 racks, 2 ToRs, core, OCS"
    );
    assert_eq!(me["circuits"].as_array().map(Vec::len), Some(2), "{me}");

    // A rotor schedule: the eBPF datapath follows it by itself, and a
    // matching is refused meanwhile; rootless, the schedule is refused.
    let file = std::env::temp_dir().join(format!("ocslab-tour-{tag}-rotor.toml"));
    std::fs::write(&file, "slot = \"1ms\"\ndelay = \"100us\"\n[[slots]]\ncircuits = [\"0:1\"]\n[[slots]]\ncircuits = [\"1:0\"]\n")
        .expect("writing the schedule file");
    let file_arg = file.to_string_lossy().into_owned();
    let mut schedule = vec!["ocs", "schedule", file_arg.as_str()];
    schedule.extend_from_slice(&run);
    if who == Who::Root {
        lab.ok(&schedule);
        let shown = lab.json(&show);
        assert_eq!(shown["schedule"]["slots"], 2, "{shown}");
        assert_eq!(shown["schedule"]["period"], "2ms", "{shown}");
        let refused = lab.fails(&set);
        assert!(refused.contains("follows a schedule"), "{refused}");
        let mut clear = vec!["ocs", "schedule", "--clear"];
        clear.extend_from_slice(&run);
        lab.ok(&clear);
        assert!(lab.json(&show)["schedule"].is_null());
    } else {
        let refused = lab.fails(&schedule);
        assert!(refused.contains("needs the eBPF datapath"), "{refused}");
    }
    let _ = std::fs::remove_file(&file);

    // A move 50 ms ahead: on eBPF the call returns with it dated then (the
    // kernel makes it); rootless, it is refused.
    let mut ahead = vec!["ocs", "set", "0:1", "--in", "50ms", "--delay", "1ms", "--json"];
    ahead.extend_from_slice(&run);
    if who == Who::Root {
        let rec = lab.json(&ahead);
        let started = rec["started"].as_u64().expect("started");
        let up: Vec<u64> = rec["events"]
            .as_array()
            .expect("events")
            .iter()
            .filter(|e| e["up"] == true)
            .map(|e| e["at"].as_u64().expect("at"))
            .collect();
        assert_eq!(up.len(), 1, "{rec}");
        let lead = up[0] - started;
        assert!(
            (50_000_000..=51_000_000).contains(&lead),
            "up {lead} ns after the call began: {rec}"
        );
    } else {
        let refused = lab.fails(&ahead);
        assert!(
            refused.contains("a move at a set time needs the eBPF datapath"),
            "{refused}"
        );
    }

    let user_ns = user_ns_of(holder);
    let mut down = vec!["down", "--json"];
    down.extend_from_slice(&run);
    let gone = lab.json(&down);
    let t = &gone[0];
    assert_eq!(gone.as_array().map(Vec::len), Some(1), "{gone}");
    assert_eq!(t["run_id"], run_id.as_str());
    assert_eq!(t["owner_gone"], false);
    assert_eq!(t["namespaces"], 8, "{t}");
    assert_eq!(t["processes"], 1, "the iperf3 server: {t}");
    assert!(!alive(holder), "the holder outlived down");
    assert!(!alive(server), "the iperf3 server outlived down");
    assert!(t["run_dir"].is_string(), "{t}");
    match who {
        Who::Root => {
            assert!(!Path::new("/run/ocslab").join(&run_id).exists());
            let prefix = format!("ocslab-{run_id}-");
            let left: Vec<String> = ocslab_emulator::fabric::netns::list_named()
                .into_iter()
                .filter(|n| n.starts_with(&prefix))
                .collect();
            assert!(left.is_empty(), "namespaces left: {left:?}");
        }
        Who::User(_) => {
            assert!(
                eventually(Duration::from_secs(5), || pids_in_user_ns(user_ns).is_empty()),
                "processes left in the run's user namespace: {:?}",
                pids_in_user_ns(user_ns)
            );
            let dir = lab.user_dir().unwrap();
            assert!(!dir.exists(), "{} left behind", dir.display());
        }
    }
    let status = lab.json(&["status", "--json"]);
    assert!(
        !status
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["run_id"] == run_id.as_str()),
        "{status}"
    );
}

#[test]
fn the_readme_tour_works_as_root() {
    if skip("the_readme_tour_works_as_root", Who::Root) {
        return;
    }
    walk_the_tour("root-tour", Who::Root);
}

#[test]
fn the_readme_tour_works_as_an_ordinary_user_from_separate_processes() {
    let who = Who::User(65534);
    if skip("the_readme_tour_works_as_an_ordinary_user", who) {
        return;
    }
    walk_the_tour("user-tour", who);
}

#[test]
fn another_user_cannot_reach_a_rootless_fabric() {
    let (owner, other) = (Who::User(65532), Who::User(65531));
    if skip("another_user_cannot_reach_a_rootless_fabric", owner) {
        return;
    }
    let lab = Lab::new("owner", owner);
    let intruder = Lab::new("intruder", other);
    let up = lab.up();
    let run_id = up["run_id"].as_str().expect("run_id").to_string();
    let holder = up["owner_pid"].as_u64().expect("owner_pid") as u32;

    // The other user finds no fabric of theirs.
    let o = intruder.ocslab(&["exec", "--run", &run_id, "r0h0", "--", "true"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("is not up for uid 65531") && err.contains("private"),
        "{err}"
    );
    // Pointed at the owner's directory, it is told whose it is.
    let o = intruder.ocslab_env(
        &["exec", "--run", &run_id, "r0h0", "--", "true"],
        &[("XDG_RUNTIME_DIR", "/tmp/ocslab-65532")],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("belongs to uid 65532"), "{err}");
    // With the owner's record forged into its own directory, the kernel
    // refuses to let it into the owner's user namespace.
    let record =
        std::fs::read_to_string(format!("/tmp/ocslab-65532/{run_id}/holder.json")).expect("owner's record");
    let forged = intruder.dir.join("xdg");
    std::fs::create_dir_all(forged.join("ocslab").join(&run_id)).unwrap();
    std::fs::write(forged.join("ocslab").join(&run_id).join("holder.json"), record).unwrap();
    Command::new("chown")
        .args(["-R", "65531:65531"])
        .arg(&forged)
        .status()
        .expect("chown");
    std::fs::set_permissions(forged.join("ocslab"), std::fs::Permissions::from_mode(0o700)).unwrap();
    let forged_s = forged.to_string_lossy().into_owned();
    let o = intruder.ocslab_env(
        &["exec", "--run", &run_id, "r0h0", "--", "true"],
        &[("XDG_RUNTIME_DIR", &forged_s)],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("belong to the user who started it"), "{err}");
    // Its own `down` touches nothing of the owner's.
    let o = intruder.ocslab(&["down", "--json"]);
    assert!(o.status.success());
    assert_eq!(
        serde_json::from_slice::<Value>(&o.stdout).unwrap(),
        Value::Array(vec![])
    );
    assert!(
        !Path::new("/tmp/ocslab-65531").exists(),
        "a refused user leaves nothing"
    );

    // The owner's fabric is unharmed, and goes with its own `down`.
    assert!(alive(holder));
    lab.ok(&["exec", "r0h0", "--", "true"]);
    let gone = lab.json(&["down", "--json"]);
    assert_eq!(gone[0]["run_id"], run_id.as_str(), "{gone}");
    assert!(!alive(holder));
    assert!(!Path::new("/tmp/ocslab-65532").exists());
}

#[test]
fn down_after_a_sigkilled_rootless_holder_leaves_nothing() {
    let who = Who::User(65530);
    if skip("down_after_a_sigkilled_rootless_holder_leaves_nothing", who) {
        return;
    }
    let lab = Lab::new("sigkill", who);
    let up = lab.up();
    let run_id = up["run_id"].as_str().expect("run_id").to_string();
    let holder = up["owner_pid"].as_u64().expect("owner_pid") as u32;
    // A daemon inside keeps the run's namespaces alive after the holder dies.
    let server = iperf_server(&lab, &[], "r1h0");
    let user_ns = user_ns_of(holder);
    assert!(pids_in_user_ns(user_ns).contains(&(server as i32)));

    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(holder as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("SIGKILL the holder");
    assert!(eventually(Duration::from_secs(10), || !alive(holder)));

    let status = lab.json(&["status", "--json"]);
    let state = status[0]["state"].as_str().unwrap_or_default();
    assert!(state.contains("owner gone"), "{status}");
    let o = lab.ocslab(&["exec", "r0h0", "--", "true"]);
    assert!(!o.status.success(), "exec into a run whose holder is dead");

    let gone = lab.json(&["down", "--json"]);
    let t = &gone[0];
    assert_eq!(t["run_id"], run_id.as_str(), "{gone}");
    assert_eq!(t["owner_gone"], true, "{t}");
    assert!(
        t["processes"].as_u64().unwrap_or(0) >= 1,
        "the daemon was ended: {t}"
    );
    assert!(t["run_dir"].is_string(), "{t}");
    assert!(
        eventually(Duration::from_secs(5), || !alive(server)),
        "the daemon outlived down"
    );
    assert!(
        eventually(Duration::from_secs(5), || pids_in_user_ns(user_ns).is_empty()),
        "processes left in the run's user namespace"
    );
    assert!(!Path::new("/tmp/ocslab-65530").exists());
    assert_eq!(lab.json(&["status", "--json"]), Value::Array(vec![]));
}

/// The run `pid` owns, if any, and whether it is up (or still building).
fn run_of(pid: u32) -> Option<(ocslab_emulator::fabric::RunId, bool)> {
    use ocslab_emulator::fabric::ledger::{list_runs, Ledger, RunState};
    list_runs().into_iter().find_map(|r| {
        let l = Ledger::load(r).ok().filter(|l| l.owner_pid == pid)?;
        Some((r, l.state == RunState::Up))
    })
}

/// The run `pid` owns and has brought up, if any.
fn up_run_of(pid: u32) -> Option<ocslab_emulator::fabric::RunId> {
    run_of(pid).filter(|&(_, up)| up).map(|(r, _)| r)
}

/// Pids of processes whose command line names `dir` (agents name their
/// run's credentials folder) and that still run in a network namespace
/// other than this one's: an emulated host's. Not a zombie, and still in a
/// namespace (a process leaves its namespaces early in its exit, so one
/// the teardown killed is not counted while it finishes). The agents' fork
/// server, in the driver's namespace, is not counted: it ends as the
/// driver's end of its socket closes, with the driver.
fn processes_naming(dir: &Path) -> Vec<u32> {
    let needle = dir.to_string_lossy().into_owned();
    let here = std::fs::read_link("/proc/self/ns/net").expect("this process's network namespace");
    ocslab_tests::pids_where(|pid| {
        alive(pid)
            && std::fs::read_link(format!("/proc/{pid}/ns/net")).is_ok_and(|ns| ns != here)
            && std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&needle))
    })
}

/// Sends SIGINT to `child`, which owns `run` and pipes its stderr, and
/// checks that it exits 130, as a process a SIGINT ended, leaving neither
/// a namespace nor the run directory of `run`, nor a process it started
/// (one started beside the teardown would run on in the removed
/// namespace).
fn interrupt_and_check_nothing_left(child: std::process::Child, run: ocslab_emulator::fabric::RunId) {
    use ocslab_emulator::fabric::ledger::{namespaces_of, run_dir};
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .expect("SIGINT the command");
    let out = child.wait_with_output().expect("the command ends");
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{said}");
    assert!(!run_dir(run).exists(), "run directory left: {said}");
    assert_eq!(
        namespaces_of(run, None),
        Vec::<String>::new(),
        "namespaces left: {said}"
    );
    assert_eq!(
        processes_naming(&run_dir(run)),
        Vec::<u32>::new(),
        "processes of run {run} left: {said}"
    );
}

/// Ctrl-C at the first moment `ocslab demo` owns a run: while it builds
/// its lab or starts the agents, before its emulation loop (which handles
/// Ctrl-C itself) runs. The demo exits 130 and leaves neither a namespace
/// nor a run directory. Before, a Ctrl-C there ended it at once and left
/// both; and a teardown from the signal thread could run beside the build
/// and miss the namespaces made after it listed them.
#[test]
fn a_demo_ended_by_ctrl_c_while_it_builds_leaves_nothing_behind() {
    interrupt_the_demo(
        "a_demo_ended_by_ctrl_c_while_it_builds_leaves_nothing_behind",
        false,
    );
}

/// Ctrl-C at the first moment the demo's fabric is up, while it writes its
/// agents' credentials and starts them: no agent starts beside the
/// teardown (one could run on in a removed namespace), and the
/// credentials' writer cannot make the run directory again once the
/// teardown removed it.
#[test]
fn a_demo_ended_by_ctrl_c_while_its_agents_start_leaves_nothing_behind() {
    interrupt_the_demo(
        "a_demo_ended_by_ctrl_c_while_its_agents_start_leaves_nothing_behind",
        true,
    );
}

/// Starts `ocslab demo`, sends SIGINT as soon as it owns a run (and, if
/// `when_up`, that run is up), and checks what it leaves.
fn interrupt_the_demo(test: &str, when_up: bool) {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipping {test}: not root (CI is root)");
        return;
    }
    let dir = std::env::temp_dir().join(format!("ocslab-demo-sigint-{}-{when_up}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let mut demo = Command::new(ocslab_tests::built_binary("ocslab"))
        .args(["demo", "--out"])
        .arg(dir.join("out"))
        .current_dir(&dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start ocslab demo");
    let pid = demo.id();
    // Polled every millisecond: the lab builds in tens of them.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let ready = || run_of(pid).filter(|&(_, up)| up || !when_up);
    let mut run = ready();
    while run.is_none() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
        run = ready();
    }
    let Some((run, up)) = run else {
        let _ = demo.kill();
        panic!(
            "the demo never owned a run{}",
            if when_up { " that was up" } else { "" }
        );
    };
    eprintln!("signalling with run {run} {}", if up { "up" } else { "building" });
    interrupt_and_check_nothing_left(demo, run);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Ctrl-C in the middle of a bench that builds a fabric (`ocslab bench ocs`,
/// reconfiguring its circuits as fast as it can): the bench exits 130, as a
/// process a SIGINT ended, and leaves neither a namespace nor a run
/// directory of its fabric behind. Before, the default action ended it at
/// once and left both until `ocslab down`.
#[test]
fn a_bench_ended_by_ctrl_c_leaves_nothing_behind() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipping a_bench_ended_by_ctrl_c_leaves_nothing_behind: not root (CI is root)");
        return;
    }
    let mut bench = Command::new(ocslab_tests::built_binary("ocslab"))
        .args([
            "bench",
            "ocs",
            "--parts",
            "calls",
            "--datapaths",
            "ebpf",
            "--calls",
            "1000000000",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start ocslab bench ocs");
    let pid = bench.id();
    let built = eventually(Duration::from_secs(60), || up_run_of(pid).is_some());
    let run = up_run_of(pid);
    if !built {
        let _ = bench.kill();
    }
    let run = run.expect("the bench brought its fabric up");
    interrupt_and_check_nothing_left(bench, run);
}
