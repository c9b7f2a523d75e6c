//! Integration tests of the OCS datapaths with real packets: when a circuit
//! carries traffic, what marked traffic does while a port is dark, rotor
//! schedules, several wavelengths per rack pair, and what teardown leaves.
//! Every probe packet carries its send time and every arrival the time the
//! receiver saw it (CLOCK_MONOTONIC), so the OCS decided its path between
//! the two: the checks below hold whatever the box's load. They need root
//! (CI is root) and skip, saying why, without it.

use ocslab_emulator::fabric::{self, ebpf, probe, Circuit, Datapath, Fabric, FabricOptions, Schedule};
use ocslab_emulator::{HostId, Nanos};
use ocslab_tests::*;
use std::time::Duration;

const MARKED: Option<u8> = Some(fabric::plan::OCS_TOS);

/// The tests here take turns. A paced probe's sender runs under SCHED_FIFO
/// at µs spacing, and two of them at once on a 2-core box starve every
/// other thread; and this kernel (PREEMPT_NONE) lets another thread's long
/// system call, such as a fabric build's netlink batches, hold a woken
/// sender back: sleeps of 20 µs lasted up to 66 ms with the other tests
/// alongside, and at most 0.09 ms with the test alone.
static ALONE: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn alone() -> std::sync::MutexGuard<'static, ()> {
    ALONE.lock().unwrap_or_else(|p| p.into_inner())
}

fn h(rack: u32, host: u32) -> HostId {
    HostId::new(rack, host)
}

/// `racks` racks of `hosts` hosts at 1 Gbit/s (scale 1), `ports` OCS ports
/// per rack, δ 1 ms.
fn up(racks: u32, hosts: u32, ports: u32, dp: Datapath) -> Fabric {
    let text = format!(
        "name = \"ocs-test\"\nracks = {racks}\nhosts_per_rack = {hosts}\nslots_per_host = 1\n\
         [eps]\nhost_rate = \"1Gbit/s\"\nuplink_rate = \"1Gbit/s\"\n\
         [ocs]\nports_per_rack = {ports}\nport_rate = \"1Gbit/s\"\nreconfig_delay = \"1ms\"\nelephant_threshold = \"10MB\"\n"
    );
    Fabric::up(
        &topology_from(&text),
        FabricOptions {
            datapath: Some(dp),
            ..Default::default()
        },
    )
    .unwrap_or_else(|e| panic!("fabric up on {dp}: {e}"))
}

fn circuit(src_rack: u32, dst_rack: u32, port: u32) -> Circuit {
    Circuit {
        src_rack,
        dst_rack,
        port,
    }
}

/// 3 racks of 1 host ([`up`], one OCS port each) on `dp`, with a circuit
/// from rack 0 to rack 1 set at δ = 0; and its OCS.
fn three_racks_joined_0_to_1(dp: Datapath) -> (Fabric, fabric::Ocs) {
    let f = up(3, 1, 1, dp);
    let ocs = f.ocs().unwrap();
    ocs.set_matching_with_delay(&[circuit(0, 1, 0)], Nanos(0))
        .unwrap();
    (f, ocs)
}

/// Probe packets sent after each step of a test (at 10-20 µs apart, about
/// 30 ms of them).
const STEP_PACKETS: u64 = 1_000;

/// A circuit of rack 0 moves to rack 2, back to 1 and to 2 again, δ = 20 ms
/// each time, while marked probes go to both racks. Every packet that
/// crossed a circuit to a rack was decided (between its send time and its
/// receive timestamp) while a circuit to that rack was usable: before the
/// first move for rack 1, from each move's `up_at` to the next move's
/// `dark_at` for the rack it reaches. Each move's new circuit carries
/// packets, and in the first half of a dark time the marked packets arrive
/// over EPS. The probe's progress, not a time, paces each step: this box
/// at times holds the sender back for tens of ms.
fn marked_traffic_takes_a_circuit_only_when_it_is_up(dp: Datapath) {
    let _alone = alone();
    let (f, ocs) = three_racks_joined_0_to_1(dp);
    let probe = probe::DarkProbe::start(
        &f,
        h(0, 0),
        &[h(1, 0), h(2, 0)],
        fabric::plan::OCS_TOS,
        Duration::from_micros(20),
    )
    .unwrap();
    let step = || {
        assert!(
            probe.wait_sent(STEP_PACKETS, Duration::from_secs(20)),
            "{dp}: the probe sends"
        )
    };
    step();
    let mut moves = Vec::new();
    for to in [2, 1, 2] {
        let rec = ocs
            .set_matching_with_delay(&[circuit(0, to, 0)], Nanos::from_millis(20))
            .unwrap();
        step();
        let dark_at = rec.events.iter().find(|e| !e.up).expect("a down event").at.0;
        let up_at = rec.events.iter().find(|e| e.up).expect("an up event").at.0;
        assert!(
            up_at - rec.started.0 >= 20_000_000,
            "{dp}: up {} ns after the call",
            up_at - rec.started.0
        );
        if dp == Datapath::Ebpf {
            assert_eq!(
                up_at - dark_at,
                20_000_000,
                "eBPF: up_at is δ after the port went dark"
            );
        }
        moves.push((to as usize - 1, dark_at, up_at));
    }
    let arrivals = probe.finish().unwrap().arrivals;
    f.down().unwrap();

    // When a circuit to each destination (rack d + 1) was usable: rack 1
    // until the first move, then each move's from its up_at to the next
    // move's dark_at.
    let usable = fabric::bench_ocs::usable_spans((0, 0), &moves);
    let paths = fabric::bench_ocs::check_paths(&arrivals, &usable);
    assert_eq!(
        paths.circuit_outside, 0,
        "{dp}: packets crossed a circuit while none to their rack was usable, the worst {} ns off ({paths:?}; usable {usable:?})",
        paths.wrong_by_ns
    );
    let rack = |a: &probe::Arrival| a.dst as u32 + 1;
    // Each move's circuit: the windows after the first.
    for (k, &(d, up_at, until)) in usable[1..].iter().enumerate() {
        let to = d as u32 + 1;
        let carried = arrivals
            .iter()
            .filter(|a| a.over_circuit() && rack(a) == to && a.sent >= up_at && a.sent < until)
            .count();
        assert!(
            carried > 10,
            "{dp}: move {k}'s new circuit carried {carried} packets"
        );
    }
    // The eBPF datapath keeps the port dark for exactly δ after its entry
    // is written; tc-mirred for what is left of δ once the kernel has
    // applied the teardown (rtnl may hold it back for milliseconds). A
    // packet's path is decided in the sender's own system call, a few µs
    // after it is stamped: those sent in the first half of the dark time
    // were decided inside it, and more than 20 of them must arrive over
    // EPS. That is judged in every move whose half-dark time the sender
    // was sending through: no gap over 1 ms between the send stamps of the
    // packets that arrived, the half's edges included. A sender held back
    // sends nothing; one that sent and saw nothing arrive fails the gap.
    let mut judged = 0;
    for (k, &(_, dark_at, up_at)) in moves.iter().enumerate() {
        if up_at - dark_at < 5_000_000 {
            continue;
        }
        let half = dark_at + (up_at - dark_at) / 2;
        let mut stamps: Vec<u64> = arrivals
            .iter()
            .map(|a| a.sent)
            .filter(|&t| t > dark_at && t < half)
            .collect();
        stamps.sort_unstable();
        let edges: Vec<u64> = std::iter::once(dark_at).chain(stamps).chain([half]).collect();
        if edges.windows(2).any(|w| w[1] - w[0] > 1_000_000) {
            continue;
        }
        judged += 1;
        let fell_back = arrivals
            .iter()
            .filter(|a| !a.over_circuit() && a.sent > dark_at && a.sent < half)
            .count();
        assert!(
            fell_back > 20,
            "{dp}: move {k}: only {fell_back} marked packets took EPS while the port was dark"
        );
    }
    if moves
        .iter()
        .all(|&(_, dark_at, up_at)| up_at - dark_at >= 5_000_000)
    {
        assert!(
            judged > 0,
            "{dp}: the sender was held back through every dark time"
        );
    }
}

#[test]
fn marked_traffic_takes_a_circuit_only_when_it_is_up_ebpf() {
    if skip("marked_traffic_takes_a_circuit_only_when_it_is_up_ebpf") {
        return;
    }
    marked_traffic_takes_a_circuit_only_when_it_is_up(Datapath::Ebpf);
}

/// At δ = 50 µs, as `ocslab bench ocs` drives the eBPF datapath: a circuit
/// of rack 0 moves 20 times between racks 1 and 2, each move written ahead,
/// while a probe sender per core streams marked packets at the rack the
/// circuit reaches and times some to each edge of the dark time. Judged
/// on each packet's send-to-receive span against the move's `down_at` and
/// `up_at`: none crossed a port while it was dark, none took EPS while its
/// circuit was up, and packets sent inside the dark times fell back to EPS
/// (so the probe did look there).
#[test]
fn at_fifty_microseconds_no_packet_crosses_a_dark_port() {
    if skip("at_fifty_microseconds_no_packet_crosses_a_dark_port") {
        return;
    }
    let _alone = alone();
    let f = fabric::bench_ocs::dark_time(fabric::bench_ocs::DarkSpec {
        datapath: Datapath::Ebpf,
        delay: Nanos(50_000),
        rounds: 20,
        interval_us: 0,
        load: false,
    })
    .unwrap();
    let p = f.paths;
    assert!(p.circuit_packets > 1_000, "{p:?}");
    assert_eq!(p.circuit_outside, 0, "packets crossed a dark port: {p:?}");
    assert_eq!(p.eps_inside, 0, "packets took EPS with their circuit up: {p:?}");
    assert!(
        f.eps_while_dark > 0,
        "no marked packet fell back to EPS in 20 dark times"
    );
}

#[test]
fn marked_traffic_takes_a_circuit_only_when_it_is_up_tc_mirred() {
    if skip("marked_traffic_takes_a_circuit_only_when_it_is_up_tc_mirred") {
        return;
    }
    marked_traffic_takes_a_circuit_only_when_it_is_up(Datapath::TcMirred);
}

/// A move written 200 ms ahead of its time, with δ = 20 ms, then marked
/// probes to racks 1 and 2: the old circuit keeps carrying packets after
/// the call has returned and until the move, none sent from the move on;
/// the new one carries packets only from `up_at`, and many then; in
/// between, both racks' marked packets arrive over EPS. (Written before
/// the probe starts: under its two SCHED_FIFO senders this thread may wait
/// for a core for hundreds of ms, which is why the datapath makes the move
/// by itself.)
#[test]
fn a_move_written_ahead_happens_at_its_time() {
    if skip("a_move_written_ahead_happens_at_its_time") {
        return;
    }
    let _alone = alone();
    let (f, ocs) = three_racks_joined_0_to_1(Datapath::Ebpf);
    let at = Nanos(fabric::clock::now().0 + 200_000_000);
    let rec = ocs
        .set_matching_at(&[circuit(0, 2, 0)], at, Nanos::from_millis(20))
        .unwrap();
    let returned = fabric::clock::now();
    let up_at = rec.up_at();
    assert!(
        returned < at,
        "the call returned {} ns after the move",
        returned.0 - at.0
    );
    let down: Vec<Nanos> = rec.events.iter().filter(|e| !e.up).map(|e| e.at).collect();
    assert_eq!((down, up_at), (vec![at], Nanos(at.0 + 20_000_000)));
    let probe = probe::DarkProbe::start_with(
        &f,
        h(0, 0),
        &[h(1, 0), h(2, 0)],
        fabric::plan::OCS_TOS,
        probe::Sending {
            interval: Duration::from_micros(20),
            senders: 2,
            ..Default::default()
        },
    )
    .unwrap();
    fabric::clock::sleep_until(up_at);
    assert!(
        probe.wait_sent(STEP_PACKETS, Duration::from_secs(30)),
        "the probe sends"
    );
    let record = probe.finish().unwrap();
    f.down().unwrap();

    let over = |dst: usize| {
        record
            .arrivals
            .iter()
            .filter(move |a| a.dst == dst && a.over_circuit())
    };
    let late_on_old = over(0).filter(|a| a.sent >= at.0).count();
    assert_eq!(
        late_on_old, 0,
        "packets sent from the move on crossed the old circuit"
    );
    let kept = over(0).filter(|a| a.sent >= returned.0).count();
    assert!(
        kept > 100,
        "the old circuit carried {kept} packets between the call and the move"
    );
    let early_on_new = over(1).filter(|a| a.seen < up_at.0).count();
    assert_eq!(early_on_new, 0, "packets crossed the new circuit before up_at");
    let on_new = over(1).count();
    assert!(on_new > 100, "the new circuit carried {on_new} packets");
    for dst in [0, 1] {
        let eps = record
            .arrivals
            .iter()
            .filter(|a| a.dst == dst && !a.over_circuit() && a.sent >= at.0 && a.seen < up_at.0)
            .count();
        assert!(
            eps > 100,
            "rack {}: {eps} marked packets over EPS while dark",
            dst + 1
        );
    }
}

/// tc-mirred times its moves in user space: a move begun without waiting
/// still returns once the new circuit is up, and one set ahead is refused.
#[test]
fn tc_mirred_waits_for_its_moves_and_refuses_one_set_ahead() {
    if skip("tc_mirred_waits_for_its_moves_and_refuses_one_set_ahead") {
        return;
    }
    let _alone = alone();
    let (f, ocs) = three_racks_joined_0_to_1(Datapath::TcMirred);
    let rec = ocs
        .begin_matching_with_delay(&[circuit(0, 2, 0)], Nanos::from_millis(10))
        .unwrap();
    assert!(
        fabric::clock::now() >= rec.up_at(),
        "tc-mirred returns once the circuit is up"
    );
    let ahead = ocs.set_matching_at(
        &[circuit(0, 1, 0)],
        Nanos(fabric::clock::now().0 + 1_000_000),
        Nanos(0),
    );
    let refused = matches!(ahead, Err(fabric::OcsError::NeedsEbpf(_)));
    assert_eq!(
        ocs.circuits(),
        vec![circuit(0, 2, 0)],
        "the refused move changed nothing"
    );
    f.down().unwrap();
    assert!(refused, "tc-mirred accepted a move set ahead: {ahead:?}");
}

/// A 4-rack rotor (rack r reaches r+1, r+2, r+3 in turn, 2 ms slots, δ
/// 200 µs) followed by the datapath alone: every probe packet that crossed a
/// circuit to rack j was decided inside one of the (0, j) slots, after its
/// dark time; none that took EPS was decided inside one; every pair is
/// served; other packets fall back to EPS.
#[test]
fn a_rotor_schedule_serves_each_pair_only_in_its_slots() {
    if skip("a_rotor_schedule_serves_each_pair_only_in_its_slots") {
        return;
    }
    let _alone = alone();
    let f = up(4, 1, 1, Datapath::Ebpf);
    let ocs = f.ocs().unwrap();
    // Rack r reaches r+1, r+2, r+3, r+1: the last slot's circuits are slot
    // 0's, so from the second period on they carry across that boundary.
    let slots: Vec<_> = [1, 2, 3, 1]
        .into_iter()
        .map(|k| {
            (
                Nanos::from_millis(2),
                (0..4).map(|r| circuit(r, (r + k) % 4, 0)).collect(),
            )
        })
        .collect();
    let delay = Nanos(200_000);
    let schedule = Schedule::new(4, 1, &slots, delay).unwrap();
    let period = schedule.period().0;
    let probe = probe::DarkProbe::start(
        &f,
        h(0, 0),
        &[h(1, 0), h(2, 0), h(3, 0)],
        fabric::plan::OCS_TOS,
        Duration::from_micros(10),
    )
    .unwrap();
    let epoch = ocs.set_schedule(&schedule).unwrap();
    assert!(ocs.follows_schedule().unwrap());
    assert!(
        ocs.set_matching(&[circuit(0, 1, 0)]).is_err(),
        "a matching is refused while a schedule runs"
    );
    // About five periods of traffic, counted in the probe's packets: a
    // sender the box holds back only makes the wait longer.
    assert!(
        probe.wait_sent(3 * STEP_PACKETS, Duration::from_secs(20)),
        "the probe sends"
    );
    let arrivals = probe.finish().unwrap().arrivals;
    // Packets to rack 1 sent in the first δ of a period: in the first,
    // slot 0's circuit is being set up; in later ones it carries on.
    let (mut set_up, mut carried_on) = (0, 0);
    for a in arrivals.iter().filter(|a| a.dst == 0 && a.sent >= epoch.0) {
        let since = a.sent - epoch.0;
        if since < delay.0 && !a.over_circuit() {
            set_up += 1;
        } else if since >= period && since % period < delay.0 && a.over_circuit() {
            carried_on += 1;
        }
    }
    assert!(
        set_up > 0,
        "marked traffic takes EPS while the first slot's circuits are set up"
    );
    assert!(
        carried_on > 0,
        "a circuit kept from the last slot carries across slot 0's start"
    );
    let stats = ocs.port_stats().unwrap();
    f.down().unwrap();

    let mut served = [0usize; 3];
    for a in arrivals.iter().filter(|a| a.over_circuit() && a.sent >= epoch.0) {
        // Probe receiver dst is rack dst + 1. The OCS decided at some time
        // in [sent, seen]: one of those instants must be in a slot where
        // rack 0 reaches `want`, after the slot's dark time.
        let want = a.dst as u32 + 1;
        let (sent, seen) = (Nanos(a.sent - epoch.0), Nanos(a.seen - epoch.0));
        let ok = schedule.usable_window(0, 0, want, sent, seen).is_some();
        assert!(ok, "a packet to rack {want} crossed a circuit outside its slots (sent {} ns, seen {} ns after the epoch)", a.sent - epoch.0, a.seen - epoch.0);
        served[a.dst] += 1;
    }
    assert!(served.iter().all(|&n| n > 20), "every pair is served: {served:?}");
    let mut on_eps = 0;
    for a in arrivals.iter().filter(|a| !a.over_circuit() && a.sent >= epoch.0) {
        // Decided at some time in [sent, seen]: if all of it lies in one
        // of the pair's usable windows, the circuit should have taken it.
        let want = a.dst as u32 + 1;
        let (sent, seen) = (Nanos(a.sent - epoch.0), Nanos(a.seen - epoch.0));
        let inside = schedule.holding_window(0, 0, want, sent, seen);
        assert!(inside.is_none(), "a packet to rack {want} took EPS inside its pair's usable window {inside:?} (sent {} ns, seen {} ns after the epoch)", sent.0, seen.0);
        on_eps += 1;
    }
    assert!(on_eps > 20, "outside its slots marked traffic takes EPS");
    assert!(stats[0].packets as usize >= served.iter().sum::<usize>());
}

/// Two circuits join racks 0 and 1 on wavelengths 0 and 1: 24 marked TCP
/// flows spread over both (by flow hash; all on one would have probability
/// 2^-23), and the bytes the two ports carried add up to what was sent.
#[test]
fn two_wavelengths_carry_a_rack_pairs_flows_together() {
    if skip("two_wavelengths_carry_a_rack_pairs_flows_together") {
        return;
    }
    let _alone = alone();
    let f = up(2, 2, 2, Datapath::Ebpf);
    let ocs = f.ocs().unwrap();
    ocs.set_matching(&[circuit(0, 1, 0), circuit(0, 1, 1)]).unwrap();
    let c0 = f.counters().unwrap();
    let (flows, payload) = (24u64, 200_000u64);
    for k in 0..flows {
        let (from, to) = (h(0, (k % 2) as u32), h(1, ((k / 2) % 2) as u32));
        assert_eq!(send_bytes(&f, from, to, MARKED, payload).unwrap(), payload);
    }
    let c1 = f.counters().unwrap();
    let stats = ocs.port_stats().unwrap();
    f.down().unwrap();
    let carried: Vec<u64> = (0..2)
        .map(|w| c1.ocs_ports[2 + w].to_rack_bytes - c0.ocs_ports[2 + w].to_rack_bytes)
        .collect();
    assert!(
        carried.iter().all(|&b| b > payload / 2),
        "each wavelength carries some flows: {carried:?}"
    );
    assert!(
        carried.iter().sum::<u64>() >= flows * payload,
        "the wavelengths carried {carried:?}, less than the {} bytes sent",
        flows * payload
    );
    let eps = c1.uplinks[0].up_bytes - c0.uplinks[0].up_bytes;
    assert!(eps < flows * payload / 50, "{eps} bytes of marked flows took EPS");
    assert!(stats[0].packets > 0 && stats[1].packets > 0, "{stats:?}");
}

/// Two circuits join racks 0 and 1 on wavelengths 0 and 1 (usable at
/// once). Flows whose mark names wavelength 1 (DSCP 32 + 1, as an agent
/// marks a flow planned on that circuit) all cross it and none crosses
/// wavelength 0, whatever their flow hashes. With wavelength 1 gone they
/// take the pair's other circuit, and with none they take EPS.
#[test]
fn a_mark_naming_a_wavelength_takes_that_circuit() {
    if skip("a_mark_naming_a_wavelength_takes_that_circuit") {
        return;
    }
    let _alone = alone();
    let f = up(2, 2, 2, Datapath::Ebpf);
    let ocs = f.ocs().unwrap();
    let named = ocslab_agent::protocol::wavelength_tos(1);
    let (flows, payload) = (8u64, 200_000u64);
    // Bytes into rack 1 over wavelengths 0 and 1, and over rack 0's uplink.
    let send = || {
        let c0 = f.counters().unwrap();
        for k in 0..flows {
            let (from, to) = (h(0, (k % 2) as u32), h(1, ((k / 2) % 2) as u32));
            assert_eq!(send_bytes(&f, from, to, named, payload).unwrap(), payload);
        }
        let c1 = f.counters().unwrap();
        let on = |w: usize| c1.ocs_ports[2 + w].to_rack_bytes - c0.ocs_ports[2 + w].to_rack_bytes;
        (on(0), on(1), c1.uplinks[0].up_bytes - c0.uplinks[0].up_bytes)
    };
    let sent = flows * payload;
    ocs.set_matching_with_delay(&[circuit(0, 1, 0), circuit(0, 1, 1)], Nanos(0))
        .unwrap();
    let (w0, w1, eps) = send();
    assert!(
        w1 >= sent && w0 == 0 && eps < sent / 50,
        "both up: w0 {w0}, w1 {w1}, EPS {eps}"
    );
    ocs.set_matching_with_delay(&[circuit(0, 1, 0)], Nanos(0))
        .unwrap();
    let (w0, w1, eps) = send();
    assert!(
        w0 >= sent && w1 == 0 && eps < sent / 50,
        "w1 gone: w0 {w0}, w1 {w1}, EPS {eps}"
    );
    ocs.set_matching_with_delay(&[], Nanos(0)).unwrap();
    let (w0, w1, eps) = send();
    assert!(
        w0 == 0 && w1 == 0 && eps >= sent,
        "no circuit: w0 {w0}, w1 {w1}, EPS {eps}"
    );
    f.down().unwrap();
}

/// The tc-mirred datapath routes one circuit per rack pair and says so.
#[test]
fn tc_mirred_refuses_two_circuits_on_one_rack_pair() {
    if skip("tc_mirred_refuses_two_circuits_on_one_rack_pair") {
        return;
    }
    let _alone = alone();
    let f = up(2, 1, 2, Datapath::TcMirred);
    let e = f
        .ocs()
        .unwrap()
        .set_matching(&[circuit(0, 1, 0), circuit(0, 1, 1)])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("the tc-mirred datapath routes one circuit per rack pair"),
        "{e}"
    );
    f.down().unwrap();
}

/// Writes one Ethernet frame straight onto ToR `rack`'s OCS transceiver 0,
/// as if the ToR had sent it: source MAC `smac`, aimed at ToR `to`'s
/// transceiver 0, carrying a UDP datagram to its first host's discard port.
fn frame_onto_the_ocs(f: &Fabric, rack: u32, to: u32, smac: [u8; 6]) {
    use nix::libc;
    let dmac = fabric::plan::tor_ocs_mac(to, 0);
    let mut frame = Vec::with_capacity(60);
    frame.extend_from_slice(&dmac);
    frame.extend_from_slice(&smac);
    frame.extend_from_slice(&[0x08, 0x00]);
    let (src, dst) = (f.host_addr(h(rack, 0)).octets(), f.host_addr(h(to, 0)).octets());
    let mut ip = [
        0x45, 0x08, 0, 46, 0, 0, 0x40, 0, 63, 17, 0, 0, src[0], src[1], src[2], src[3], dst[0], dst[1],
        dst[2], dst[3],
    ];
    let sum = ip
        .chunks(2)
        .fold(0u32, |a, w| a + u32::from(u16::from_be_bytes([w[0], w[1]])));
    let sum = !(((sum & 0xffff) + (sum >> 16)) as u16);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    frame.extend_from_slice(&ip);
    frame.extend_from_slice(&[0x30, 0x39, 0, 9, 0, 26, 0, 0]);
    frame.resize(14 + 46, 0);
    let tor = &f.plan().namespaces[f.plan().tor_ns(rack)].name;
    let ns = fabric::netns::NetNs::open(tor).unwrap();
    let sent = ns
        .enter(|| -> std::io::Result<isize> {
            use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
            // SAFETY: socket(2) with constant arguments; a non-negative
            // result is a descriptor this function then owns.
            let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW, 0) };
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            // SAFETY: `fd` is open and owned by nothing else.
            let fd = unsafe { OwnedFd::from_raw_fd(fd) };
            // SAFETY: all-zero is a valid sockaddr_ll.
            let mut to: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            to.sll_family = libc::AF_PACKET as u16;
            to.sll_ifindex = fabric::plan::TOR_OCS_INDEX as i32;
            to.sll_halen = 6;
            to.sll_addr[..6].copy_from_slice(&dmac);
            // SAFETY: the buffer and the address are live locals of the
            // lengths given.
            let n = unsafe {
                libc::sendto(
                    fd.as_raw_fd(),
                    frame.as_ptr().cast(),
                    frame.len(),
                    0,
                    (&to as *const libc::sockaddr_ll).cast(),
                    std::mem::size_of::<libc::sockaddr_ll>() as u32,
                )
            };
            if n < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(n)
        })
        .unwrap();
    match sent {
        Ok(n) => assert_eq!(n, frame.len() as isize, "a short send"),
        Err(e) => panic!("writing a frame onto rack {rack}'s transceiver: {e}"),
    }
}

/// The OCS judges a packet by the time its ToR sent it on, which the ToR
/// stamps into the source MAC, not by when the packet reaches the port
/// (a few µs of kernel path later, where a datacenter has metres of
/// fibre). Frames are written straight onto rack 0's transceiver, each
/// stamped and aimed by hand, after rack 0's circuit moved from rack 1 to
/// rack 2 (dark at `dark_at`, up at `up_at`); the port's counters say which
/// crossed.
#[test]
fn the_ocs_judges_a_packet_by_when_its_tor_sent_it() {
    if skip("the_ocs_judges_a_packet_by_when_its_tor_sent_it") {
        return;
    }
    let _alone = alone();
    let (f, ocs) = three_racks_joined_0_to_1(Datapath::Ebpf);
    let rec = ocs
        .set_matching_with_delay(&[circuit(0, 2, 0)], Nanos::from_millis(5))
        .unwrap();
    let dark_at = rec.events.iter().find(|e| !e.up).expect("a down event").at;
    let up_at = rec.up_at();
    assert!(fabric::clock::now() >= up_at, "a waiting call returns once up");
    let stamp = |t: u64| ebpf::stamp_mac(Nanos(t));
    let unstamped = fabric::plan::tor_ocs_mac(0, 0);
    // The port went dark at an instant between the call's start and the
    // reported dark-at (the end of the first write: ebpf::reconfigure).
    let before_the_move = rec.started.0 - 1_000;
    // (what, aimed at, source MAC, the rack it reaches if it crosses)
    let ahead = stamp(fabric::clock::now().0 + 2_000_000_000);
    let cases = [
        (
            "sent to rack 1 just before the move",
            1,
            stamp(before_the_move),
            Some(1),
        ),
        (
            "sent to rack 1 just after the port went dark",
            1,
            stamp(dark_at.0 + 1_000),
            None,
        ),
        (
            "sent to rack 2 while its circuit was dark",
            2,
            stamp(up_at.0 - 1_000),
            None,
        ),
        (
            "sent to rack 2 once its circuit was up",
            2,
            stamp(up_at.0 + 1_000),
            Some(2),
        ),
        ("sent to rack 2 before the move", 2, stamp(before_the_move), None),
        // Judged by the port's clock, as a frame no ToR sent: the circuit's rack.
        ("aimed at rack 1, unstamped", 1, unstamped, Some(2)),
        ("aimed at rack 1, stamped two seconds ahead", 1, ahead, Some(2)),
    ];
    let counters = || ocs.port_stats().unwrap()[0];
    let delivered = |rack: u32| {
        f.counters()
            .unwrap()
            .ocs_ports
            .iter()
            .find(|p| p.rack == rack)
            .map_or(0, |p| p.to_rack_bytes)
    };
    for (what, to, smac, lands) in cases {
        let before = counters();
        let to_racks = [delivered(1), delivered(2)];
        frame_onto_the_ocs(&f, 0, to, smac);
        assert!(
            eventually(Duration::from_secs(5), || {
                let now = counters();
                now.packets + now.dropped > before.packets + before.dropped
            }),
            "{what}: the port never saw the frame"
        );
        let after = counters();
        assert_eq!(
            (after.packets - before.packets, after.dropped - before.dropped),
            if lands.is_some() { (1, 0) } else { (0, 1) },
            "{what}: crossed {}, dropped {}",
            after.packets - before.packets,
            after.dropped - before.dropped
        );
        // What crosses reaches one rack, and the other sees nothing.
        let got = |rack: u32| delivered(rack) - to_racks[rack as usize - 1];
        let want = |rack: u32| if lands == Some(rack) { 60 } else { 0 };
        assert!(
            eventually(Duration::from_secs(5), || got(1) == want(1) && got(2) == want(2)),
            "{what}: racks 1 and 2 got {} and {} bytes, want {} and {}",
            got(1),
            got(2),
            want(1),
            want(2)
        );
    }
    f.down().unwrap();
}

/// Down frees every program and map of the run with its namespaces; nothing is
/// pinned, so nothing else can be left.
#[test]
fn teardown_leaves_no_bpf_program_or_map() {
    if skip("teardown_leaves_no_bpf_program_or_map") {
        return;
    }
    let _alone = alone();
    let f = up(2, 2, 1, Datapath::Ebpf);
    f.ocs().unwrap().set_matching(&[circuit(0, 1, 0)]).unwrap();
    let ids = f.bpf_objects().expect("an eBPF run").unwrap();
    assert_eq!(ids.programs.len(), 2, "{ids:?}");
    assert!(ids.maps.len() >= 5, "{ids:?}");
    assert_eq!(ebpf::still_loaded(&ids), ids, "loaded while up");
    f.down().unwrap();
    // The kernel destroys a removed namespace, and with it the filters that
    // hold the programs, in a worker of its own: wait for that, up to a bound.
    let freed = eventually(Duration::from_secs(10), || {
        ebpf::still_loaded(&ids) == ebpf::ObjectIds::default()
    });
    assert!(freed, "left: {:?}", ebpf::still_loaded(&ids));
}

/// The run's reconfiguration log, `ocs.jsonl`, is opened once: when the
/// run directory is removed while the owner still reconfigures (Ctrl-C
/// tears a bench down from its signal thread as its main thread goes on),
/// later lines do not create the file again, and so cannot keep the
/// directory from being removed.
#[test]
fn reconfigurations_after_the_log_is_removed_do_not_make_it_again() {
    if skip("reconfigurations_after_the_log_is_removed_do_not_make_it_again") {
        return;
    }
    let _alone = alone();
    let (f, ocs) = three_racks_joined_0_to_1(Datapath::TcMirred);
    let log = fabric::run_dir(f.run_id()).join("ocs.jsonl");
    let logged = std::fs::read_to_string(&log).expect("the first move is logged");
    assert_eq!(logged.lines().count(), 1, "{logged}");
    std::fs::remove_file(&log).unwrap();
    ocs.set_matching_with_delay(&[circuit(0, 2, 0)], Nanos(0))
        .unwrap();
    assert!(!log.exists(), "a later move made {} again", log.display());
    f.down().unwrap();
}

/// `ocslab up` on a topology with `[ocs.schedule]` (lab-rotor.toml): the
/// eBPF datapath follows it from the start; tc-mirred refuses it, and the
/// refused run leaves no namespace or run directory behind.
#[test]
fn a_topologys_schedule_is_followed_from_the_start_or_refused() {
    if skip("a_topologys_schedule_is_followed_from_the_start_or_refused") {
        return;
    }
    let _alone = alone();
    let topo = topology("lab-rotor");
    let want = topo.ocs_schedule.clone().expect("lab-rotor has a schedule");
    let on = |dp, run_id| {
        Fabric::up(
            &topo,
            FabricOptions {
                datapath: Some(dp),
                run_id,
                ..Default::default()
            },
        )
    };
    let f = on(Datapath::Ebpf, None).unwrap_or_else(|e| panic!("fabric up: {e}"));
    let summary = f.ocs().unwrap().schedule_summary().unwrap();
    f.down().unwrap();
    let summary = summary.expect("the OCS follows the topology's schedule");
    assert_eq!(
        (summary.slots as usize, summary.period),
        (want.slots().len(), want.period())
    );

    let run = fabric::RunId::random();
    let Err(e) = on(Datapath::TcMirred, Some(run)) else {
        panic!("tc-mirred accepted a schedule");
    };
    assert!(e.to_string().contains("needs the eBPF datapath"), "{e}");
    assert_eq!(fabric::ledger::namespaces_of(run, None), Vec::<String>::new());
    assert!(!fabric::ledger::run_dir(run).exists(), "run directory left");
}
