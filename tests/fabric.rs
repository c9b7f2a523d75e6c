//! Integration tests of the kernel fabric, built for real from
//! `topologies/tiny.toml` (2 racks x 2 hosts, 100 Mbit/s hosts, 50 Mbit/s
//! uplinks, one 200 Mbit/s OCS port per rack, δ = 1 ms). Each test builds
//! its own run (its own run id), so they run in parallel without colliding.
//! The OCS tests run on both datapaths (eBPF and tc-mirred). They need root
//! (CI is root) and skip, saying why, without it.

use ocslab_emulator::fabric::plan::Cable;
use ocslab_emulator::fabric::{
    self, ledger, netns, probe, Circuit, Datapath, Fabric, FabricError, FabricOptions,
};
use ocslab_emulator::{HostId, Nanos};
use ocslab_tests::*;
use std::process::Command;
use std::time::Duration;

const MARKED: Option<u8> = Some(fabric::plan::OCS_TOS);

fn up_tiny() -> Fabric {
    Fabric::up(
        &topology("tiny"),
        FabricOptions {
            topology_file: Some(topology_path("tiny")),
            ..Default::default()
        },
    )
    .unwrap_or_else(|e| panic!("fabric up: {e}"))
}

/// tiny.toml with its OCS on datapath `dp` (asked for: the build fails
/// rather than fall back).
fn up_tiny_on(dp: Datapath) -> Fabric {
    let f = Fabric::up(
        &topology("tiny"),
        FabricOptions {
            topology_file: Some(topology_path("tiny")),
            datapath: Some(dp),
            ..Default::default()
        },
    )
    .unwrap_or_else(|e| panic!("fabric up on {dp}: {e}"));
    assert_eq!(f.ledger().datapath, dp);
    assert_eq!(f.ocs().unwrap().datapath(), dp);
    f
}

/// Runs `test` on each datapath, as its own `#[test]` per datapath.
macro_rules! on_both_datapaths {
    ($name:ident, $body:ident) => {
        mod $name {
            use super::*;
            #[test]
            fn ebpf() {
                if skip(concat!(stringify!($name), "::ebpf")) {
                    return;
                }
                $body(Datapath::Ebpf);
            }
            #[test]
            fn tc_mirred() {
                if skip(concat!(stringify!($name), "::tc_mirred")) {
                    return;
                }
                $body(Datapath::TcMirred);
            }
        }
    };
}

fn h(rack: u32, host: u32) -> HostId {
    HostId::new(rack, host)
}

#[test]
fn hosts_reach_each_other_across_racks_and_within_a_rack_over_eps() {
    if skip("hosts_reach_each_other") {
        return;
    }
    let f = up_tiny();
    let before = f.counters().unwrap();
    assert_eq!(send_bytes(&f, h(0, 0), h(1, 1), None, 100_000).unwrap(), 100_000);
    assert_eq!(send_bytes(&f, h(1, 0), h(0, 1), None, 100_000).unwrap(), 100_000);
    assert_eq!(send_bytes(&f, h(0, 0), h(0, 1), None, 100_000).unwrap(), 100_000);
    let after = f.counters().unwrap();
    for rack in 0..2 {
        let up = after.uplinks[rack].up_bytes - before.uplinks[rack].up_bytes;
        assert!(up >= 100_000, "rack {rack} sent {up} bytes up its EPS uplink");
    }
    assert_eq!(
        after.ocs_bytes(),
        before.ocs_bytes(),
        "no circuit, nothing over the OCS"
    );
    f.down().unwrap();
}

#[test]
fn goodput_through_a_shaped_uplink_matches_its_rate() {
    if skip("goodput_through_a_shaped_uplink") {
        return;
    }
    let f = up_tiny();
    // Host NICs are 100 Mbit/s, the uplink 50 Mbit/s: the uplink is the bottleneck.
    let rate = f.topology().uplink_rate.0 as f64;
    let timed = unstolen(5, || {
        goodput(
            &f,
            h(0, 0),
            h(1, 0),
            None,
            Duration::from_millis(500),
            Duration::from_millis(1500),
        )
        .unwrap()
    });
    f.down().unwrap();
    let g = timed.value;
    let allowed = rate * TCP_PAYLOAD_EFFICIENCY;
    let err = (g - allowed) / allowed;
    eprintln!(
        "uplink {rate} bit/s: goodput {g:.0} bit/s, {:+.1}% from {allowed:.0}",
        err * 100.0
    );
    // Time the box lost can only slow it: goodput above the rate fails
    // whether or not the timing is judged.
    let judged = timed.timing_judgeable("goodput_through_a_shaped_uplink_matches_its_rate");
    assert!(
        err < 0.05 && (!judged || err > -0.05),
        "goodput {g:.0} bit/s is {:+.1}% from {allowed:.0}",
        err * 100.0
    );
}

#[test]
fn two_way_goodput_through_a_shaped_uplink_matches_its_rate_each_way() {
    if skip("two_way_goodput_through_a_shaped_uplink") {
        return;
    }
    let f = up_tiny();
    // One stream each way between the racks: each uplink carries one
    // stream's data and the other's ACKs, in the same shaped queue.
    let rate = f.topology().uplink_rate.0 as f64;
    let streams = [
        probe::Stream {
            from: h(0, 0),
            to: h(1, 0),
            tos: None,
        },
        probe::Stream {
            from: h(1, 1),
            to: h(0, 1),
            tos: None,
        },
    ];
    let timed = unstolen(5, || {
        probe::tcp_goodputs(
            &f,
            &streams,
            Duration::from_millis(500),
            Duration::from_millis(2000),
        )
        .unwrap()
    });
    f.down().unwrap();
    let g = timed.value.as_slice();
    let allowed = rate * TCP_PAYLOAD_EFFICIENCY;
    let err: Vec<f64> = g.iter().map(|g| (g - allowed) / allowed).collect();
    for ((s, g), e) in streams.iter().zip(g).zip(&err) {
        eprintln!(
            "{} -> {} with traffic the other way: {g:.0} bit/s, {:+.1}% from {allowed:.0}",
            s.from,
            s.to,
            e * 100.0
        );
    }
    // The other stream's ACKs share each link (≈ 2% of it). In the data's
    // leaf they waited behind up to 50 ms of it, and each direction lost
    // 1.6% to 26.7% (16 runs); in the small-packet class they are served
    // first, and 11 runs gave each direction −0.6% to +0.1%
    // (`docs/fabric.md`, "Two-way traffic"). An ACK-heavy reverse stream
    // may cost a forward stream at most 3% of what the rate allows.
    // Time the box lost can only slow them: goodput above the rate fails
    // whether or not the timing is judged.
    let judged = timed.timing_judgeable("two_way_goodput_through_a_shaped_uplink_matches_its_rate_each_way");
    for ((s, g), &e) in streams.iter().zip(g).zip(&err) {
        assert!(
            e < 0.03 && (!judged || e > -0.03),
            "{} -> {}: goodput {g:.0} bit/s is {:+.1}% from {allowed:.0}",
            s.from,
            s.to,
            e * 100.0
        );
    }
}

#[test]
fn a_udp_flood_takes_no_more_than_its_share_of_a_shaped_uplink() {
    if skip("a_udp_flood_takes_no_more_than_its_share") {
        return;
    }
    let f = up_tiny();
    assert!(f.plan().flow_queues().count() >= 2, "tiny.toml gets flow queues");
    // r0h0 floods r1h0 with UDP at its NIC's 100 Mbit/s, twice what rack
    // 0's uplink carries; a TCP stream r0h1 → r1h1 crosses the same uplink.
    let rate = f.topology().uplink_rate.0 as f64;
    let stream = probe::Stream {
        from: h(0, 1),
        to: h(1, 1),
        tos: None,
    };
    let flood = probe::Stream {
        from: h(0, 0),
        to: h(1, 0),
        tos: None,
    };
    let timed = unstolen(5, || {
        probe::tcp_goodput_beside_udp_flood(
            &f,
            &stream,
            &flood,
            Duration::from_millis(500),
            Duration::from_millis(1500),
        )
        .unwrap()
    });
    f.down().unwrap();
    let (tcp, udp) = timed.value;
    let allowed = rate * TCP_PAYLOAD_EFFICIENCY;
    eprintln!(
        "uplink {rate} bit/s: TCP {tcp:.0} bit/s ({:.1}% of {allowed:.0}), UDP {udp:.0} bit/s received",
        tcp / allowed * 100.0
    );
    // The two flows' queues take turns, so TCP keeps about half the link
    // however hard UDP pushes: 50.3% against UDP's 50.5%. In one FIFO
    // (`flow_queues = 1`) the flood fills the queue TCP's packets must
    // wait in and drop from, and TCP got 0.0–0.2% of the link (3 runs).
    if !timed.timing_judgeable("a_udp_flood_takes_no_more_than_its_share_of_a_shaped_uplink") {
        return;
    }
    assert!(
        tcp > 0.4 * allowed,
        "TCP got {tcp:.0} bit/s of {allowed:.0} beside the flood"
    );
    assert!(
        tcp + udp > 0.9 * rate,
        "together {:.0} bit/s of {rate}: the link is not kept busy",
        tcp + udp
    );
}

on_both_datapaths!(
    a_circuit_carries_marked_traffic_while_unmarked_traffic_stays_on_eps,
    a_circuit_carries_marked_traffic_while_unmarked_traffic_stays_on_eps_on
);

fn a_circuit_carries_marked_traffic_while_unmarked_traffic_stays_on_eps_on(dp: Datapath) {
    let f = up_tiny_on(dp);
    let ocs = f.ocs().unwrap();
    let rec = ocs
        .set_matching(&[Circuit {
            src_rack: 0,
            dst_rack: 1,
            port: 0,
        }])
        .unwrap();
    assert_eq!(rec.events.len(), 1);
    assert!(rec.events[0].up);
    assert!(
        rec.events[0].at.0 - rec.started.0 >= f.topology().reconfig_delay.0,
        "the circuit came up before δ"
    );
    assert_eq!(ocs.kernel_circuits().unwrap(), ocs.circuits());

    // Unmarked traffic first (no marked connection is still closing then).
    let payload = 2_000_000;
    let c0 = f.counters().unwrap();
    assert_eq!(send_bytes(&f, h(0, 1), h(1, 1), None, payload).unwrap(), payload);
    let c1 = f.counters().unwrap();
    assert_eq!(
        c1.ocs_bytes(),
        c0.ocs_bytes(),
        "unmarked traffic took the circuit"
    );
    assert!(c1.uplinks[0].up_bytes - c0.uplinks[0].up_bytes >= payload);

    assert_eq!(
        send_bytes(&f, h(0, 0), h(1, 0), MARKED, payload).unwrap(),
        payload
    );
    let c2 = f.counters().unwrap();
    let over_ocs = c2.ocs_ports[1].to_rack_bytes - c1.ocs_ports[1].to_rack_bytes;
    let over_eps = c2.uplinks[0].up_bytes - c1.uplinks[0].up_bytes;
    assert!(over_ocs >= payload, "marked: {over_ocs} bytes over the circuit");
    assert!(
        over_eps < payload / 50,
        "marked: {over_eps} bytes over rack 0's uplink"
    );

    // The circuit is one way: marked traffic 1 -> 0 has no circuit and goes
    // EPS; nothing is delivered to rack 0 by the OCS.
    assert_eq!(
        send_bytes(&f, h(1, 0), h(0, 0), MARKED, payload).unwrap(),
        payload
    );
    let c3 = f.counters().unwrap();
    assert_eq!(c3.ocs_ports[0].to_rack_bytes, 0);
    assert!(c3.uplinks[1].up_bytes - c2.uplinks[1].up_bytes >= payload);
    f.down().unwrap();
}

on_both_datapaths!(
    a_torn_down_circuit_carries_nothing_and_traffic_falls_back_to_eps,
    a_torn_down_circuit_carries_nothing_and_traffic_falls_back_to_eps_on
);

fn a_torn_down_circuit_carries_nothing_and_traffic_falls_back_to_eps_on(dp: Datapath) {
    let f = up_tiny_on(dp);
    let ocs = f.ocs().unwrap();
    let events = ocs.subscribe();
    let c = Circuit {
        src_rack: 0,
        dst_rack: 1,
        port: 0,
    };
    ocs.set_matching(&[c]).unwrap();
    assert_eq!(
        send_bytes(&f, h(0, 0), h(1, 0), MARKED, 200_000).unwrap(),
        200_000
    );
    let rec = ocs.set_matching(&[]).unwrap();
    assert_eq!(rec.events.len(), 1);
    assert!(!rec.events[0].up);
    assert!(ocs.kernel_circuits().unwrap().is_empty());
    let got: Vec<_> = events.try_iter().collect();
    assert_eq!(got.len(), 2, "one up and one down event: {got:?}");
    assert!(got[0].up && !got[1].up && got[1].at > got[0].at);

    let c0 = f.counters().unwrap();
    let payload = 1_000_000;
    assert_eq!(
        send_bytes(&f, h(0, 0), h(1, 0), MARKED, payload).unwrap(),
        payload
    );
    let c1 = f.counters().unwrap();
    assert_eq!(c1.ocs_ports, c0.ocs_ports, "a dark port moved bytes");
    assert!(c1.uplinks[0].up_bytes - c0.uplinks[0].up_bytes >= payload);
    f.down().unwrap();
}

on_both_datapaths!(
    not_all_stop_only_changed_ports_go_dark,
    not_all_stop_only_changed_ports_go_dark_on
);

fn not_all_stop_only_changed_ports_go_dark_on(dp: Datapath) {
    let f = up_tiny_on(dp);
    let ocs = f.ocs().unwrap();
    let a = Circuit {
        src_rack: 0,
        dst_rack: 1,
        port: 0,
    };
    let b = Circuit {
        src_rack: 1,
        dst_rack: 0,
        port: 0,
    };
    ocs.set_matching(&[a]).unwrap();
    let rec = ocs
        .set_matching_with_delay(&[a, b], Nanos::from_millis(5))
        .unwrap();
    assert_eq!(rec.kept, 1);
    assert_eq!(rec.events.len(), 1, "only 1->0 changes: {:?}", rec.events);
    assert_eq!((rec.events[0].src_rack, rec.events[0].up), (1, true));
    assert!(rec.events[0].at.0 - rec.started.0 >= 5_000_000);
    let bad = ocs.set_matching(&[
        a,
        Circuit { port: 0, ..b },
        Circuit {
            src_rack: 0,
            dst_rack: 1,
            port: 0,
        },
    ]);
    assert!(bad.is_err(), "two circuits on one input port must be refused");
    assert_eq!(ocs.circuits().len(), 2, "a refused matching changes nothing");
    f.down().unwrap();
}

/// A flow shorter than the kernel's 64 KiB GSO segment leaves a host no
/// faster than its NIC's rate allows, less one bucket and one segment.
#[test]
fn a_flow_shorter_than_a_gso_segment_takes_its_time_at_the_nic_rate() {
    if skip("a_flow_shorter_than_a_gso_segment") {
        return;
    }
    let f = up_tiny();
    // 52 kB within rack 0: 36 frames through r0h0's 100 Mbit/s NIC.
    const BYTES: usize = 52_000;
    let rate = f.topology().host_rate;
    let (listener, mut tx) = connect(&f, h(0, 0), h(0, 1));
    let (mut rx, _) = listener.accept().unwrap();
    let reader = std::thread::spawn(move || {
        let mut buf = vec![0u8; BYTES];
        std::io::Read::read_exact(&mut rx, &mut buf).map(|_| std::time::Instant::now())
    });
    let start = std::time::Instant::now();
    std::io::Write::write_all(&mut tx, &[7u8; BYTES]).unwrap();
    let took = reader.join().unwrap().unwrap() - start;
    // htb lets a segment go whenever its bucket is not in debt, so the most
    // a shaper releases in t is one full bucket, one segment and t x rate.
    let wire = (BYTES as u64).div_ceil(1448) * 66 + BYTES as u64;
    let head = fabric::htb::burst_bytes(rate) + u64::from(fabric::htb::nic_segment_bytes(rate));
    let floor = Duration::from_secs_f64(wire.saturating_sub(head) as f64 * 8.0 / rate.0 as f64);
    let bound = Duration::from_secs_f64(BYTES as f64 * 8.0 / rate.0 as f64);
    eprintln!("{BYTES} B in {took:?}: size / rate {bound:?}, floor {floor:?}");
    // Segments and buckets of 64 KiB let it through in 0.1-0.3 ms.
    assert!(
        took >= floor,
        "{BYTES} B crossed a {rate:?} NIC in {took:?}, under {floor:?}"
    );
    f.down().unwrap();
}

/// The topology's `[tcp]` table reaches every host: its namespace's
/// sysctls, and the congestion control and initial window of its routes,
/// which a connected socket reports.
#[test]
fn a_topologys_tcp_settings_reach_the_hosts_sockets() {
    if skip("a_topologys_tcp_settings_reach_the_hosts_sockets") {
        return;
    }
    let tiny = std::fs::read_to_string(topology_path("tiny")).unwrap();
    let dc = tiny.clone()
        + "\n[tcp]\nmin_rto = \"5ms\"\ncongestion_control = \"bbr\"\ninitcwnd = 20\nsyn_retries = 3\n";
    assert_host_tcp(&dc, "5000", "3", "bbr", 20);
    // Without a `[tcp]` table hosts run Linux's defaults, whatever the box's
    // own default congestion control is (new namespaces inherit it).
    assert_host_tcp(&tiny, "200000", "6", "cubic", 10);
}

/// A listener in `to` and a TCP connection to it from `from` (not yet accepted).
fn connect(f: &Fabric, from: HostId, to: HostId) -> (std::net::TcpListener, std::net::TcpStream) {
    let at = std::net::SocketAddr::new(f.host_addr(to).into(), 0);
    let listener = f
        .in_host(to, || std::net::TcpListener::bind(at))
        .unwrap()
        .unwrap();
    let at = listener.local_addr().unwrap();
    let s = f
        .in_host(from, || std::net::TcpStream::connect(at))
        .unwrap()
        .unwrap();
    (listener, s)
}

fn assert_host_tcp(topology: &str, rto_min_us: &str, syn_retries: &str, cc: &str, initcwnd: u32) {
    let f = Fabric::up(&topology_from(topology), FabricOptions::default())
        .unwrap_or_else(|e| panic!("fabric up: {e}"));
    let sysctl = |key: &str| {
        f.in_host(h(0, 1), || {
            std::fs::read_to_string(format!("/proc/sys/net/ipv4/{key}"))
        })
        .unwrap()
        .unwrap()
        .trim()
        .to_string()
    };
    assert_eq!(sysctl("tcp_rto_min_us"), rto_min_us);
    assert_eq!(sysctl("tcp_syn_retries"), syn_retries);
    let (listener, s) = connect(&f, h(0, 0), h(1, 0));
    let got = nix::sys::socket::getsockopt(&s, nix::sys::socket::sockopt::TcpCongestion).unwrap();
    assert_eq!(got.to_string_lossy(), cc, "the route's congctl");
    drop((s, listener));
    let mut ip = Command::new("ip");
    ip.arg("route").stdout(std::process::Stdio::piped());
    let routes = f.spawn_in(h(0, 0), ip).unwrap().wait_with_output().unwrap();
    let routes = String::from_utf8_lossy(&routes.stdout);
    let metrics = format!("initcwnd {initcwnd} congctl {cc}");
    assert!(routes.lines().all(|r| r.contains(&metrics)), "{routes}");
    f.down().unwrap();
}

#[test]
fn down_removes_every_namespace_process_and_file_of_the_run() {
    if skip("down_removes_everything") {
        return;
    }
    let f = up_tiny();
    let run = f.run_id();
    let names: Vec<String> = f.plan().namespaces.iter().map(|n| n.name.clone()).collect();
    assert!(names.iter().all(|n| netns::list_named().contains(n)));
    let mut sleeper = Command::new("sleep");
    sleeper.arg("600");
    // Started from a thread with SIGTERM blocked, as a command that takes
    // its signals in one thread starts it: the child must not inherit that.
    let mut term = nix::sys::signal::SigSet::empty();
    term.add(nix::sys::signal::Signal::SIGTERM);
    term.thread_block().unwrap();
    let child = f.spawn_in(h(1, 1), sleeper);
    term.thread_unblock().unwrap();
    let mut child = child.unwrap();
    let t = f.down().unwrap();
    assert_eq!(t.namespaces, names.len());
    assert_eq!(t.processes, 1, "the process inside host r1h1 is ended");
    let status = child.wait().unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        status.signal(),
        Some(nix::sys::signal::Signal::SIGTERM as i32),
        "ended by the teardown's SIGTERM: {status}"
    );
    assert!(
        netns::list_named().iter().all(|n| !run.owns_netns(n)),
        "a namespace of {run} remains"
    );
    assert!(!fabric::run_dir(run).exists(), "the run directory remains");
}

#[test]
fn dropping_the_owner_tears_down_even_on_panic() {
    if skip("dropping_the_owner") {
        return;
    }
    let run = std::panic::catch_unwind(|| {
        let f = up_tiny();
        let run = f.run_id();
        std::panic::panic_any(run);
    })
    .err()
    .and_then(|p| p.downcast::<fabric::RunId>().ok())
    .map(|r| *r)
    .expect("the closure panics with its run id");
    assert!(netns::list_named().iter().all(|n| !run.owns_netns(n)));
    assert!(!fabric::run_dir(run).exists());
}

/// Helper run by `a_killed_owner_is_cleaned_up_by_cleanup_stale` in a child
/// process: builds a fabric, prints its run id, and waits to be killed.
#[test]
#[ignore = "helper: run by a_killed_owner_is_cleaned_up_by_cleanup_stale"]
fn crash_helper_build_then_wait_for_sigkill() {
    if std::env::var_os("OCSLAB_CRASH_HELPER").is_none() {
        return;
    }
    let f = up_tiny_on(Datapath::Ebpf);
    let ids = f.bpf_objects().expect("an eBPF run").expect("its object ids");
    println!("BPF {}", serde_json::to_string(&ids).unwrap());
    println!("RUN {}", f.run_id());
    std::mem::forget(f);
    loop {
        std::thread::park();
    }
}

#[test]
fn a_killed_owner_is_cleaned_up_by_cleanup_stale() {
    if skip("a_killed_owner_is_cleaned_up") {
        return;
    }
    use std::io::BufRead;
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "crash_helper_build_then_wait_for_sigkill",
            "--ignored",
            "--nocapture",
        ])
        .env("OCSLAB_CRASH_HELPER", "1")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let mut lines = std::io::BufReader::new(out).lines().map_while(Result::ok);
    let ids: fabric::ebpf::ObjectIds = lines
        .find_map(|l| l.strip_prefix("BPF ").map(|j| serde_json::from_str(j).unwrap()))
        .expect("the helper prints its BPF object ids");
    assert_eq!(
        fabric::ebpf::still_loaded(&ids),
        ids,
        "loaded while the owner lives"
    );
    let run: fabric::RunId = lines
        .find_map(|l| l.strip_prefix("RUN ").map(|r| r.trim().parse().unwrap()))
        .expect("the helper prints its run id");
    assert!(netns::list_named().iter().any(|n| run.owns_netns(n)));
    child.kill().unwrap(); // SIGKILL: no destructor runs
    child.wait().unwrap();
    let removed = fabric::cleanup_stale().unwrap();
    let ours = removed
        .iter()
        .find(|t| t.run_id == Some(run))
        .expect("the run is found stale");
    assert_eq!(ours.namespaces, 2 * 2 + 2 + 2);
    assert!(netns::list_named().iter().all(|n| !run.owns_netns(n)));
    assert!(!ledger::run_dir(run).exists());
    // The filters held the programs until the namespaces went; the kernel
    // destroys those in a worker of its own: wait for that, up to a bound.
    let freed = eventually(Duration::from_secs(10), || {
        fabric::ebpf::still_loaded(&ids) == fabric::ebpf::ObjectIds::default()
    });
    assert!(
        freed,
        "BPF objects left after SIGKILL + cleanup: {:?}",
        fabric::ebpf::still_loaded(&ids)
    );
}

#[test]
fn two_runs_at_once_do_not_collide() {
    if skip("two_runs_at_once") {
        return;
    }
    let a = up_tiny();
    let b = up_tiny();
    assert_ne!(a.run_id(), b.run_id());
    assert_eq!(
        a.host_addr(h(1, 0)),
        b.host_addr(h(1, 0)),
        "same plan, separate namespaces"
    );
    assert_eq!(send_bytes(&a, h(0, 0), h(1, 0), None, 50_000).unwrap(), 50_000);
    assert_eq!(send_bytes(&b, h(0, 0), h(1, 0), None, 50_000).unwrap(), 50_000);
    b.down().unwrap();
    assert_eq!(send_bytes(&a, h(1, 1), h(0, 1), None, 50_000).unwrap(), 50_000);
    a.down().unwrap();
}

#[test]
fn topologies_that_cannot_be_emulated_give_the_documented_errors() {
    // Refused before anything is made, so this needs no privilege.
    let big = topology("coscheduler-paper");
    let e = Fabric::up(&big, FabricOptions::default()).unwrap_err();
    let FabricError::Topology(e) = e else {
        panic!("expected a topology error, got {e}")
    };
    assert!(e.message.contains("simulation"), "{e}");
    // 250 racks of 244 hosts, the most the address plan allows: 61,000.
    let limit = fabric::capacity::host_limit();
    if limit.hosts >= 61_000 {
        eprintln!(
            "skipped the host limit: this box can emulate {} hosts",
            limit.hosts
        );
        return;
    }
    let text = std::fs::read_to_string(topology_path("tiny"))
        .unwrap()
        .replace("racks = 2", "racks = 250")
        .replace("hosts_per_rack = 2", "hosts_per_rack = 244");
    let e = Fabric::up(&topology_from(&text), FabricOptions::default()).unwrap_err();
    assert!(
        e.to_string()
            .contains("61000 hosts is more than this box can emulate"),
        "{e}"
    );
    assert!(e.to_string().contains("field `racks`"), "{e}");
}

#[test]
fn unknown_hosts_are_refused_by_name() {
    if skip("unknown_hosts_are_refused") {
        return;
    }
    let f = up_tiny();
    let e = f.spawn_in(h(2, 0), Command::new("true")).unwrap_err();
    assert!(e.to_string().contains("r2h0 is not in topology tiny"), "{e}");
    f.down().unwrap();
}

/// `ocslab link down` on the fabric: a cable taken down mid-stream carries
/// nothing (the kernel's counter of the ToR's uplink stands still), and once
/// it is back the stream resumes and every byte arrives.
#[test]
fn a_cable_taken_down_mid_stream_carries_nothing_until_it_is_back() {
    use std::io::{Read, Write};
    if skip("a_cable_taken_down_mid_stream_carries_nothing_until_it_is_back") {
        return;
    }
    let f = up_tiny();
    let uplink = |f: &Fabric| f.counters().unwrap().uplinks[0].up_bytes;
    let missing = f.set_cable(Cable::Uplink(9), false).unwrap_err();
    assert!(missing.to_string().contains("r9-up"), "{missing}");
    const TOTAL: usize = 4_000_000;
    let (listener, mut s) = connect(&f, h(0, 0), h(1, 0));
    let (first_mb, got_first_mb) = std::sync::mpsc::channel();
    let receiver = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let (mut got, mut buf) = (0usize, vec![0u8; 65536]);
        let mut told = false;
        loop {
            let n = s.read(&mut buf).unwrap();
            if n == 0 {
                return got;
            }
            got += n;
            if got >= 1_000_000 && !told {
                told = true;
                first_mb.send(()).unwrap();
            }
        }
    });
    let sender = std::thread::spawn(move || {
        s.write_all(&vec![7u8; TOTAL]).unwrap();
    });
    got_first_mb.recv().unwrap();
    assert!(!f.set_cable(Cable::Uplink(0), false).unwrap(), "it was up");
    // What was queued before the filter still leaves: at most the data
    // leaf's 50 ms of the rate (`htb::LeafQueue`). Wait until it has.
    let mut before = uplink(&f);
    for _ in 0..40 {
        std::thread::sleep(Duration::from_millis(60));
        let now = uplink(&f);
        if now == before {
            break;
        }
        before = now;
    }
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(uplink(&f), before, "bytes crossed a cable that is down");
    assert!(f.set_cable(Cable::Uplink(0), true).unwrap(), "it was down");
    sender.join().unwrap();
    assert_eq!(
        receiver.join().unwrap(),
        TOTAL,
        "every byte arrives once the cable is back"
    );
    assert!(uplink(&f) > before, "the stream went on over the uplink");
    f.down().unwrap();
}
