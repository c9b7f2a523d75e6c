//! Large fabrics built for real: 1,024 hosts as 32 racks of 32 (a fabric
//! alone) and as 64 racks of 16 (a lab: an agent on every host, one small
//! job through `ocslab run`). In a test binary of their own: cargo runs
//! test binaries one after another, so their namespaces are not built
//! while `tests/fabric.rs` measures goodput; the two here take turns.
//! Need root (CI is root); skip, saying why, without.

use ocslab_emulator::fabric::{self, ledger, names, netns, Fabric, FabricOptions};
use ocslab_emulator::HostId;
use ocslab_tests::*;
use std::process::Command;
use std::sync::{Mutex, MutexGuard};

/// One large fabric at a time.
fn alone() -> MutexGuard<'static, ()> {
    static ONE: Mutex<()> = Mutex::new(());
    ONE.lock().unwrap_or_else(|e| e.into_inner())
}

fn h(rack: u32, host: u32) -> HostId {
    HostId::new(rack, host)
}

#[test]
fn a_fabric_of_1024_hosts_is_built_reached_and_torn_down_leaving_nothing() {
    if skip("a_fabric_of_1024_hosts") {
        return;
    }
    let _one = alone();
    let topo = ocslab_emulator::Topology::builder("k1024", 32, 32)
        .build()
        .expect("32 x 32 hosts is a topology");
    assert_eq!(topo.hosts(), 1024);
    let f = Fabric::up(&topo, FabricOptions::default()).unwrap_or_else(|e| panic!("fabric up: {e}"));
    let run = f.run_id();
    let names: Vec<String> = f.plan().namespaces.iter().map(|n| n.name.clone()).collect();
    let live = netns::list_named();
    assert!(names.iter().all(|n| live.contains(n)), "every namespace is up");
    // The first and the last host reach each other across the core.
    assert_eq!(
        send_bytes(&f, h(0, 0), h(31, 31), None, 100_000).unwrap(),
        100_000
    );
    let t = f.down().unwrap();
    assert_eq!(t.namespaces, names.len());
    assert!(
        netns::list_named().iter().all(|n| !run.owns_netns(n)),
        "a namespace of {run} remains"
    );
    assert!(!fabric::run_dir(run).exists(), "the run directory remains");
}

/// The processes on the box running `ocslab-agent`.
fn agent_processes() -> Vec<u32> {
    pids_where(|pid| {
        std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "ocslab-agent")
    })
}

#[test]
fn a_lab_of_1024_hosts_runs_a_job_with_every_flow_verified_and_leaves_nothing() {
    if skip("a_lab_of_1024_hosts") {
        return;
    }
    let _one = alone();
    let before_runs = ledger::list_runs();
    let dir = std::env::temp_dir().join(format!("ocslab-k1024-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch folder");
    let tiny = std::fs::read_to_string(topology_path("tiny")).expect("tiny.toml");
    let topo_file = dir.join("k1024.toml");
    std::fs::write(
        &topo_file,
        tiny.replace("racks = 2", "racks = 64")
            .replace("hosts_per_rack = 2", "hosts_per_rack = 16")
            .replace("name = \"tiny\"", "name = \"k1024\""),
    )
    .expect("write the topology");
    // One job of 64 maps and 16 reduces: 1,024 shuffle flows, spread over
    // the racks by the fair scheduler.
    let exp = dir.join("exp.toml");
    std::fs::write(
        &exp,
        format!(
            "name = \"k1024-one-job\"\ntopology = {topo_file:?}\nseed = 3\ntask_schedulers = [\"fair\"]\ncoflow_scheduler = \"fair\"\n\n\
             [workload]\nkind = \"generated\"\njobs = 1\narrivals = {{ process = \"batch\" }}\nblock_size = \"4MB\"\n\n\
             [[workload.classes]]\nname = \"shuffle\"\nshare = 1.0\nmaps = [64, 64]\nreduces = [16, 16]\nshuffle_ratio = 1.0\n\
             map_duration = [\"1s\", \"1s\"]\nreduce_duration = [\"1s\", \"1s\"]\n"
        ),
    )
    .expect("write the experiment");
    let out = dir.join("out");
    let run = Command::new(built_binary("ocslab"))
        .args(["run", "--json", "--out"])
        .arg(&out)
        .arg(&exp)
        .output()
        .expect("run ocslab");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "ocslab run failed: {stderr}");
    let report: serde_json::Value = serde_json::from_slice(&run.stdout).expect("--json output");
    let sched = &report["schedulers"][0];
    let wire = &sched["wire"];
    // Every flow of the run (64 x 16 shuffle flows and the remote maps'
    // input reads) arrived verified; none corrupt or lost.
    let flows = sched["flows"].as_u64().expect("flows");
    assert!(flows >= 64 * 16, "{flows} flows");
    assert_eq!(wire["verified_flows"].as_u64(), Some(flows), "{wire}");
    for field in ["corrupt_flows", "lost_flows"] {
        assert_eq!(wire[field].as_u64(), Some(0), "{field}: {wire}");
    }
    assert_eq!(wire["dead_hosts"].as_array().map(Vec::len), Some(0), "{wire}");
    assert_eq!(sched["jobs"].as_u64(), Some(1), "{sched}");
    // Nothing left: no namespace, run directory or agent of a new run.
    let left: Vec<String> = netns::list_named()
        .into_iter()
        .filter(|n| n.starts_with(names::NS_PREFIX))
        .filter(|n| names::RunId::of_netns(n).is_some_and(|r| !before_runs.contains(&r)))
        .collect();
    assert!(left.is_empty(), "namespaces left: {left:?}");
    let runs_after: Vec<_> = ledger::list_runs()
        .into_iter()
        .filter(|r| !before_runs.contains(r))
        .collect();
    assert!(runs_after.is_empty(), "run directories left: {runs_after:?}");
    let agents = agent_processes();
    assert!(agents.is_empty(), "agent processes left: {agents:?}");
    std::fs::remove_dir_all(&dir).ok();
}
