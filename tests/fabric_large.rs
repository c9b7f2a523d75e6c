//! The largest fabric emulated, 1,024 hosts (32 racks of 32), built for
//! real. In a test binary of its own: cargo runs test binaries one after
//! another, so its 1,058 namespaces are not built while `tests/fabric.rs`
//! measures goodput. Needs root (CI is root); skips, saying why, without.

use ocslab_emulator::fabric::{self, netns, Fabric, FabricOptions};
use ocslab_emulator::HostId;
use ocslab_tests::*;

fn h(rack: u32, host: u32) -> HostId {
    HostId::new(rack, host)
}

#[test]
fn a_fabric_of_1024_hosts_is_built_reached_and_torn_down_leaving_nothing() {
    if skip("a_fabric_of_1024_hosts") {
        return;
    }
    let topo = ocslab_emulator::Topology::builder("k1024", 32, 32)
        .build()
        .expect("32 x 32 hosts is emulable");
    assert_eq!(topo.hosts(), ocslab_emulator::topology::MAX_EMULATED_HOSTS);
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
