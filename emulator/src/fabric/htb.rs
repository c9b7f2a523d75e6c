//! htb shaping encoded over netlink: netlink-packet-route 0.34 has no typed
//! htb, so its options go through the crate's public request API as
//! `TcOption::Other(DefaultNla)` carrying the kernel's own structs
//! (`struct tc_htb_glob` for the qdisc, `struct tc_htb_opt` for a class, as
//! in `include/uapi/linux/pkt_sched.h`).
//!
//! Rates are given with `linklayer = ethernet`, which tells the kernel to
//! compute transmission times itself (psched_ratecfg), so no rate table
//! (`TCA_HTB_RTAB`) is needed; rates of 2^32 bytes/s and more go in
//! `TCA_HTB_RATE64`/`TCA_HTB_CEIL64`, as `tc` does.
//!
//! Each shaped interface gets root qdisc `1:` and class `1:1` with rate =
//! ceil = the link's rate, split into two children that may each borrow
//! up to the whole link:
//!
//! ```text
//! 1: htb default 11
//! └─ 1:1   rate R ceil R
//!    ├─ 1:10  rate R/20 ceil R prio 0   packets under 128 bytes (ACKs, SYNs)
//!    └─ 1:11  rate 19R/20 ceil R prio 1 everything else → leaf 10: bfifo
//! filter u32 on 1: ip total length < 128 → 1:10
//! ```
//!
//! A link taken down (`ocslab link down`) gets one more filter on `1:`,
//! ahead of that one, that sends every packet to a class `1:12` whose
//! `bfifo` holds nothing ([`down`]); removing both ([`up`]) brings the link
//! back with its queues as they were.
//!
//! htb serves the lower `prio` first whenever both have packets, so a
//! stream's ACKs never queue behind the data of a stream going the other
//! way, as a shallow-buffered ToR with a priority queue for small packets
//! keeps them. The burst is what `tc` picks by default (1 ms at the rate,
//! plus one MTU), and host NICs hand their shaper segments of at most 1 ms
//! ([`nic_segment_bytes`]), so no flow passes a link faster than its rate
//! by more than a bucket and a segment.
//!
//! The data class gets a leaf qdisc `10:` of its own ([`LeafQueue`]): a
//! `bfifo` holding a few milliseconds of the link rate. Without it htb's
//! leaf is a `pfifo` of txqueuelen (1000) packets, which on a veth carrying
//! GSO segments is hundreds of milliseconds at the emulated rates. A leaf
//! `bfifo` takes `struct tc_fifo_qopt { __u32 limit; }` directly as
//! `TCA_OPTIONS` (not nested attributes).

use super::netlink::Request;
use crate::units::{Bps, Nanos};
use netlink_packet_core::{DefaultNla, NLM_F_CREATE, NLM_F_EXCL};
use netlink_packet_route::tc::{
    TcAttribute, TcFilterU32Option, TcHandle, TcMessage, TcOption, TcU32Key, TcU32Selector,
    TcU32SelectorFlags,
};
use netlink_packet_route::RouteNetlinkMessage;

const TCA_HTB_PARMS: u16 = 1;
const TCA_HTB_INIT: u16 = 2;
const TCA_HTB_RATE64: u16 = 6;
const TCA_HTB_CEIL64: u16 = 7;
const TC_HTB_PROTOVER: u32 = 3;
const TC_LINKLAYER_ETHERNET: u8 = 1;
/// psched ticks are 64 ns (`PSCHED_SHIFT` = 6).
const PSCHED_SHIFT: u32 = 6;

/// The root qdisc handle `1:`.
pub const ROOT_HANDLE: TcHandle = TcHandle { major: 1, minor: 0 };
/// The link's class `1:1`.
pub const CLASS_HANDLE: TcHandle = TcHandle { major: 1, minor: 1 };
/// Small packets' class `1:10`, served first.
pub const SMALL_CLASS: TcHandle = TcHandle {
    major: 1,
    minor: 0x10,
};
/// Everything else's class `1:11` (the qdisc's default).
pub const DATA_CLASS: TcHandle = TcHandle {
    major: 1,
    minor: 0x11,
};
/// Packets of fewer IP bytes than this go to [`SMALL_CLASS`]: a pure ACK
/// with timestamps and SACK blocks is 52–84 bytes; a data segment of this
/// fabric is 1,500 bytes or a GSO segment of many.
pub const SMALL_PACKET_BYTES: u16 = 128;
/// The share of the link's rate guaranteed to small packets; either class
/// borrows the rest while the other is idle.
const SMALL_SHARE: u64 = 20;
/// The link-down filter's priority on the root qdisc: ahead of the others.
const DOWN_FILTER_PRIO: u32 = 1;
/// The small-packet filter's priority on the root qdisc.
const SMALL_FILTER_PRIO: u32 = 2;
/// `ETH_P_ALL` in network order: the link-down filter matches every packet.
const ETH_P_ALL_BE: u32 = (0x0003_u16).to_be() as u32;
/// The class a link that is down sends every packet to, and its leaf.
const DOWN_CLASS: TcHandle = TcHandle {
    major: 1,
    minor: 0x12,
};
const DOWN_LEAF: TcHandle = TcHandle {
    major: 0x12,
    minor: 0,
};
/// `ETH_P_IP` in network order, as the filter's protocol.
const ETH_P_IP_BE: u32 = (0x0800_u16).to_be() as u32;

/// The leaf qdisc `10:` under the data class `1:11`.
pub const LEAF_HANDLE: TcHandle = TcHandle {
    major: 0x10,
    minor: 0,
};
/// `TCA_OPTIONS`, sent raw for a fifo.
const TCA_OPTIONS: u16 = 2;
/// A full Ethernet frame as a qdisc counts it: 1500-byte MTU plus header.
const FRAME_BYTES: u64 = 1514;
/// The kernel's largest GSO segment (`gso_max_size` of a new veth).
const KERNEL_GSO_BYTES: u64 = 64 * 1024;
/// One maximal GSO segment as a qdisc counts it: 64 KiB of TCP payload in
/// 1448-byte segments (46), each counted as a full frame.
const MAX_GSO_BYTES: u64 = KERNEL_GSO_BYTES.div_ceil(1448) * FRAME_BYTES;

/// The smallest leaf: two maximal GSO segments. Less than one would drop
/// every large segment whatever the occupancy; one and 8 frames (82 KB)
/// served two-way streams better but cost a 4-flow shuffle 25% of its
/// goodput (losses in slow start).
pub const MIN_LEAF_BYTES: u64 = 2 * MAX_GSO_BYTES;

/// The queue under each htb class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeafQueue {
    /// Whatever the kernel gives an htb class: a `pfifo` of txqueuelen
    /// (1000 on a veth) packets. Kept to measure against.
    KernelDefault,
    /// A `bfifo` holding this much time at the class rate, but never less
    /// than [`MIN_LEAF_BYTES`].
    Delay(Nanos),
}

/// The default leaf queue: 50 ms of the rate (at least [`MIN_LEAF_BYTES`]).
pub const DEFAULT_LEAF_DELAY: Nanos = Nanos(50_000_000);

impl Default for LeafQueue {
    fn default() -> LeafQueue {
        LeafQueue::Delay(DEFAULT_LEAF_DELAY)
    }
}

impl LeafQueue {
    /// The `bfifo` limit in bytes for a class of `rate`, or `None` for the
    /// kernel's default leaf.
    pub fn limit_bytes(self, rate: Bps) -> Option<u64> {
        match self {
            LeafQueue::KernelDefault => None,
            LeafQueue::Delay(d) => {
                let bytes = (rate.0 as u128 * d.0 as u128 / 8 / 1_000_000_000) as u64;
                Some(bytes.clamp(MIN_LEAF_BYTES, u32::MAX as u64))
            }
        }
    }
}

/// Burst in bytes for `rate`: 1 ms worth plus an MTU, as `tc` picks.
pub fn burst_bytes(rate: Bps) -> u64 {
    rate.0 / 8 / 1000 + FRAME_BYTES
}

/// The largest GSO segment a host NIC of `rate` hands its shaper
/// (`gso_max_size`): 1 ms at the rate, so that a full bucket
/// ([`burst_bytes`]) holds one, between one frame and the kernel's 64 KiB.
/// htb lets a segment go whole whenever its bucket is not in debt, so with
/// 64 KiB segments a flow of less than one would cross a 50 Mbit/s NIC in
/// a twentieth of `size / rate`.
pub fn nic_segment_bytes(rate: Bps) -> u32 {
    (rate.0 / 8 / 1000).clamp(FRAME_BYTES, KERNEL_GSO_BYTES) as u32
}

/// `struct tc_ratespec` for `rate` (bytes/s, saturated at u32::MAX: the
/// 64-bit attribute carries the rest).
fn ratespec(rate: Bps) -> [u8; 12] {
    let bytes_ps = rate.0 / 8;
    let mut b = [0u8; 12];
    b[0] = 0; // cell_log
    b[1] = TC_LINKLAYER_ETHERNET;
    b[2..4].copy_from_slice(&0u16.to_ne_bytes()); // overhead
    b[4..6].copy_from_slice(&(-1i16).to_ne_bytes()); // cell_align
    b[6..8].copy_from_slice(&0u16.to_ne_bytes()); // mpu
    b[8..12].copy_from_slice(&(bytes_ps.min(u32::MAX as u64) as u32).to_ne_bytes());
    b
}

/// `struct tc_htb_glob`: version 3, r2q 10, default class `1:11`.
pub fn glob_bytes() -> Vec<u8> {
    [TC_HTB_PROTOVER, 10, DATA_CLASS.minor as u32, 0, 0]
        .iter()
        .flat_map(|v| v.to_ne_bytes())
        .collect()
}

/// Time to send `bytes` at `rate`, in psched ticks (what `buffer` holds).
fn ticks(bytes: u64, rate: Bps) -> u32 {
    let ns = (bytes as u128 * 8 * 1_000_000_000) / rate.0.max(1) as u128;
    (ns >> PSCHED_SHIFT).min(u32::MAX as u128) as u32
}

/// `struct tc_htb_opt` for a class of `rate` that may borrow up to `ceil`,
/// served at priority `prio` (0 first).
pub fn opt_bytes(rate: Bps, ceil: Bps, prio: u32) -> Vec<u8> {
    let mut v = Vec::with_capacity(44);
    v.extend_from_slice(&ratespec(rate));
    v.extend_from_slice(&ratespec(ceil));
    for x in [
        ticks(burst_bytes(rate), rate),
        ticks(burst_bytes(ceil), ceil),
        // quantum: one maximal GSO segment (the kernel's rate / r2q is
        // below an MTU on slow classes, and it says so in the kernel log)
        MAX_GSO_BYTES as u32,
        0, /* level */
        prio,
    ] {
        v.extend_from_slice(&x.to_ne_bytes());
    }
    v
}

fn header(ifindex: u32, handle: TcHandle, parent: TcHandle) -> TcMessage {
    let mut m = TcMessage::with_index(ifindex as i32);
    m.header.handle = handle;
    m.header.parent = parent;
    m
}

/// `tc qdisc add dev IF root handle 1: htb default 1`.
pub fn qdisc(ifindex: u32, what: &str) -> Request {
    let mut m = header(ifindex, ROOT_HANDLE, TcHandle::ROOT);
    m.attributes.push(TcAttribute::Kind("htb".into()));
    m.attributes
        .push(TcAttribute::Options(vec![TcOption::Other(DefaultNla::new(
            TCA_HTB_INIT,
            glob_bytes(),
        ))]));
    Request::new(
        RouteNetlinkMessage::NewQueueDiscipline(m),
        NLM_F_CREATE | NLM_F_EXCL,
        format!("adding htb qdisc on {what}"),
    )
}

/// The three classes of a link of `rate`: `1:1` (the link), `1:10`
/// (small packets, first) and `1:11` (the rest), as the module shows.
pub fn classes(ifindex: u32, rate: Bps, what: &str) -> [Request; 3] {
    let small = Bps((rate.0 / SMALL_SHARE).max(8_000));
    let data = Bps(rate.0.saturating_sub(small.0).max(8_000));
    [
        class(ifindex, CLASS_HANDLE, ROOT_HANDLE, (rate, rate, 0), what),
        class(ifindex, SMALL_CLASS, CLASS_HANDLE, (small, rate, 0), what),
        class(ifindex, DATA_CLASS, CLASS_HANDLE, (data, rate, 1), what),
    ]
}

/// `tc class add dev IF parent PARENT classid HANDLE htb rate R ceil C prio P`.
fn class(
    ifindex: u32,
    handle: TcHandle,
    parent: TcHandle,
    (rate, ceil, prio): (Bps, Bps, u32),
    what: &str,
) -> Request {
    let mut m = header(ifindex, handle, parent);
    let mut opts = vec![TcOption::Other(DefaultNla::new(
        TCA_HTB_PARMS,
        opt_bytes(rate, ceil, prio),
    ))];
    if rate.0 / 8 > u32::MAX as u64 || ceil.0 / 8 > u32::MAX as u64 {
        for (kind, r) in [(TCA_HTB_RATE64, rate), (TCA_HTB_CEIL64, ceil)] {
            opts.push(TcOption::Other(DefaultNla::new(
                kind,
                (r.0 / 8).to_ne_bytes().to_vec(),
            )));
        }
    }
    m.attributes.push(TcAttribute::Kind("htb".into()));
    m.attributes.push(TcAttribute::Options(opts));
    Request::new(
        RouteNetlinkMessage::NewTrafficClass(m),
        NLM_F_CREATE | NLM_F_EXCL,
        format!(
            "adding htb class {}:{:x} rate {rate} ceil {ceil} prio {prio} on {what}",
            handle.major, handle.minor
        ),
    )
}

/// `tc filter add dev IF parent 1: prio 1 protocol ip u32 match u16 0
/// 0xff80 at 2 classid 1:10`: IPv4 packets under [`SMALL_PACKET_BYTES`]
/// go to the small-packet class.
pub fn small_packet_filter(ifindex: u32, what: &str) -> Request {
    let mut m = header(ifindex, TcHandle::default(), ROOT_HANDLE);
    m.header.info = (SMALL_FILTER_PRIO << 16) | ETH_P_IP_BE;
    let mut sel = TcU32Selector::default();
    sel.flags = TcU32SelectorFlags::Terminal;
    sel.nkeys = 1;
    let mut key = TcU32Key::default();
    // The first word of the IP header; its low 16 bits are the total length.
    key.mask = !(u32::from(SMALL_PACKET_BYTES) - 1) & 0xffff;
    key.val = 0;
    sel.keys = vec![key];
    m.attributes.push(TcAttribute::Kind("u32".into()));
    m.attributes.push(TcAttribute::Options(vec![
        TcOption::U32(TcFilterU32Option::Selector(sel)),
        TcOption::U32(TcFilterU32Option::ClassId(SMALL_CLASS)),
    ]));
    Request::new(
        RouteNetlinkMessage::NewTrafficFilter(m),
        NLM_F_CREATE,
        format!("adding the small-packet filter on {what}"),
    )
}

/// A u32 selector with one key of mask 0 and value 0: it matches every
/// packet (the circuit filters and the link-down filter).
pub(super) fn every_packet() -> TcU32Selector {
    let mut sel = TcU32Selector::default();
    sel.flags = TcU32SelectorFlags::Terminal;
    sel.nkeys = 1;
    sel.keys = vec![TcU32Key::default()];
    sel
}

fn down_filter_msg(ifindex: u32) -> TcMessage {
    let mut m = header(ifindex, TcHandle::default(), ROOT_HANDLE);
    m.header.info = (DOWN_FILTER_PRIO << 16) | ETH_P_ALL_BE;
    m
}

/// What takes a link down, in order: `tc class add dev IF parent 1:
/// classid 1:12 htb rate 8kbit`, `tc qdisc add dev IF parent 1:12 handle
/// 12: bfifo limit 0` (it holds nothing: every packet is dropped) and `tc
/// filter add dev IF parent 1: prio 1 protocol all u32 match u32 0 0
/// classid 1:12`. This kernel has no gact, so the drop is a full queue.
pub fn down(ifindex: u32, what: &str) -> [Request; 3] {
    let slow = Bps(8_000);
    let mut filter = down_filter_msg(ifindex);
    filter.attributes.push(TcAttribute::Kind("u32".into()));
    filter.attributes.push(TcAttribute::Options(vec![
        TcOption::U32(TcFilterU32Option::Selector(every_packet())),
        TcOption::U32(TcFilterU32Option::ClassId(DOWN_CLASS)),
    ]));
    [
        class(ifindex, DOWN_CLASS, ROOT_HANDLE, (slow, slow, 0), what),
        fifo(ifindex, DOWN_LEAF, DOWN_CLASS, 0, what),
        Request::new(
            RouteNetlinkMessage::NewTrafficFilter(filter),
            NLM_F_CREATE | NLM_F_EXCL,
            format!("taking {what} down (every packet to class 1:12, which drops it)"),
        ),
    ]
}

/// What brings a link back up, in order: `tc filter del dev IF parent 1:
/// prio 1`, then `tc class del dev IF classid 1:12` (and its leaf with it).
pub fn up(ifindex: u32, what: &str) -> [Request; 2] {
    [
        Request::new(
            RouteNetlinkMessage::DelTrafficFilter(down_filter_msg(ifindex)),
            0,
            format!("bringing {what} back up (removing its drop filter)"),
        ),
        Request::new(
            RouteNetlinkMessage::DelTrafficClass(header(ifindex, DOWN_CLASS, ROOT_HANDLE)),
            0,
            format!("removing the drop class 1:12 of {what}"),
        ),
    ]
}

/// `tc qdisc add dev IF parent 1:11 handle 10: bfifo limit BYTES`.
pub fn leaf(ifindex: u32, limit_bytes: u64, what: &str) -> Request {
    fifo(ifindex, LEAF_HANDLE, DATA_CLASS, limit_bytes, what)
}

/// `tc qdisc add dev IF parent PARENT handle HANDLE bfifo limit BYTES`.
fn fifo(ifindex: u32, handle: TcHandle, parent: TcHandle, limit_bytes: u64, what: &str) -> Request {
    let mut m = header(ifindex, handle, parent);
    m.attributes.push(TcAttribute::Kind("bfifo".into()));
    let limit = limit_bytes.min(u32::MAX as u64) as u32;
    m.attributes.push(TcAttribute::Other(DefaultNla::new(
        TCA_OPTIONS,
        limit.to_ne_bytes().to_vec(),
    )));
    Request::new(
        RouteNetlinkMessage::NewQueueDiscipline(m),
        NLM_F_CREATE | NLM_F_EXCL,
        format!(
            "adding bfifo {:x}: of {limit} bytes under htb class {:x}:{:x} on {what}",
            handle.major, parent.major, parent.minor
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use netlink_packet_core::Nla;

    #[test]
    fn glob_is_version_3_with_the_data_class_by_default() {
        let g = glob_bytes();
        assert_eq!(g.len(), 20);
        assert_eq!(u32::from_ne_bytes(g[0..4].try_into().unwrap()), 3);
        assert_eq!(u32::from_ne_bytes(g[8..12].try_into().unwrap()), 0x11);
    }

    #[test]
    fn opt_carries_rate_in_bytes_and_buffer_in_ticks() {
        let o = opt_bytes(Bps(100_000_000), Bps(100_000_000), 0);
        assert_eq!(o.len(), 44, "sizeof(struct tc_htb_opt)");
        assert_eq!(o[1], TC_LINKLAYER_ETHERNET);
        assert_eq!(u32::from_ne_bytes(o[8..12].try_into().unwrap()), 12_500_000);
        assert_eq!(u32::from_ne_bytes(o[20..24].try_into().unwrap()), 12_500_000);
        // 1 ms + 1514 B at 12.5 MB/s is 1.121 ms = 17 517 ticks of 64 ns.
        let buffer = u32::from_ne_bytes(o[24..28].try_into().unwrap());
        assert_eq!(buffer, 1_121_120 >> 6);
    }

    #[test]
    fn a_host_nic_segment_fits_a_full_bucket() {
        // 1 ms at 50 Mbit/s: four 1448-byte segments, 6 056 bytes on the wire.
        assert_eq!(nic_segment_bytes(Bps(50_000_000)), 6_250);
        for rate in [1_000_000, 50_000_000, 100_000_000, 10_000_000_000] {
            let r = Bps(rate);
            assert!(u64::from(nic_segment_bytes(r)) <= burst_bytes(r), "{r:?}");
        }
        // Never below a frame, never above the kernel's 64 KiB.
        assert_eq!(nic_segment_bytes(Bps(1_000_000)), 1514);
        assert_eq!(nic_segment_bytes(Bps(10_000_000_000)), 64 * 1024);
    }

    #[test]
    fn rates_beyond_32_bits_of_bytes_saturate_and_use_rate64() {
        let r = Bps(40_000_000_000); // 5 GB/s
        let o = opt_bytes(r, r, 0);
        assert_eq!(u32::from_ne_bytes(o[8..12].try_into().unwrap()), u32::MAX);
        let [req, ..] = classes(2, r, "x");
        let RouteNetlinkMessage::NewTrafficClass(m) = req.msg else {
            panic!("not a class")
        };
        let TcAttribute::Options(opts) = &m.attributes[1] else {
            panic!("no options")
        };
        assert_eq!(opts.len(), 3);
        assert_eq!(burst_bytes(r), 5_000_000 + 1514);
    }

    #[test]
    fn the_leaf_queue_holds_its_delay_at_the_rate_but_at_least_two_gso_segments() {
        let q = LeafQueue::Delay(Nanos::from_millis(5));
        // 5 ms at 1 Gbit/s is 625 000 bytes.
        assert_eq!(q.limit_bytes(Bps(1_000_000_000)), Some(625_000));
        // 5 ms at 50 Mbit/s (31 250 bytes) would drop every 64 KiB segment.
        assert_eq!(q.limit_bytes(Bps(50_000_000)), Some(MIN_LEAF_BYTES));
        assert_eq!(MAX_GSO_BYTES, 46 * 1514);
        assert_eq!(LeafQueue::KernelDefault.limit_bytes(Bps(50_000_000)), None);
        let req = leaf(2, 625_000, "x");
        let RouteNetlinkMessage::NewQueueDiscipline(m) = req.msg else {
            panic!("not a qdisc")
        };
        assert_eq!((m.header.parent, m.header.handle), (DATA_CLASS, LEAF_HANDLE));
        assert_eq!(m.attributes[0], TcAttribute::Kind("bfifo".into()));
        let TcAttribute::Other(opt) = &m.attributes[1] else {
            panic!("no raw options")
        };
        assert_eq!(opt.kind(), TCA_OPTIONS);
        assert_eq!(opt.value_len(), 4, "sizeof(struct tc_fifo_qopt)");
    }

    /// The parameters of each class of a link: (handle, parent, rate, ceil, prio).
    fn params(rate: Bps) -> Vec<(TcHandle, TcHandle, u32, u32, u32)> {
        classes(2, rate, "x")
            .into_iter()
            .map(|req| {
                let RouteNetlinkMessage::NewTrafficClass(m) = req.msg else {
                    panic!("not a class")
                };
                let TcAttribute::Options(opts) = &m.attributes[1] else {
                    panic!("no options")
                };
                let TcOption::Other(parms) = &opts[0] else {
                    panic!("no parms")
                };
                let mut b = vec![0; parms.value_len()];
                parms.emit_value(&mut b);
                let word = |at: usize| u32::from_ne_bytes(b[at..at + 4].try_into().unwrap());
                (m.header.handle, m.header.parent, word(8), word(20), word(40))
            })
            .collect()
    }

    #[test]
    fn small_packets_get_a_class_served_first_within_the_links_rate() {
        // 50 Mbit/s = 6,250,000 B/s: 1/20 to small packets, the rest to data,
        // both may borrow the whole link, small packets at priority 0.
        assert_eq!(
            params(Bps(50_000_000)),
            [
                (CLASS_HANDLE, ROOT_HANDLE, 6_250_000, 6_250_000, 0),
                (SMALL_CLASS, CLASS_HANDLE, 312_500, 6_250_000, 0),
                (DATA_CLASS, CLASS_HANDLE, 5_937_500, 6_250_000, 1),
            ]
        );
    }

    #[test]
    fn the_small_packet_filter_matches_ip_lengths_under_128() {
        let req = small_packet_filter(2, "x");
        let RouteNetlinkMessage::NewTrafficFilter(m) = req.msg else {
            panic!("not a filter")
        };
        assert_eq!(m.header.parent, ROOT_HANDLE);
        assert_eq!(m.header.info & 0xffff, 0x0800_u16.to_be() as u32, "protocol ip");
        let TcAttribute::Options(opts) = &m.attributes[1] else {
            panic!("no options")
        };
        let TcOption::U32(TcFilterU32Option::Selector(sel)) = &opts[0] else {
            panic!("no selector")
        };
        let key = &sel.keys[0];
        assert_eq!((key.off, key.mask, key.val), (0, 0x0000_ff80, 0));
        // The key as the kernel applies it to an IP header's first word.
        let matches = |total_len: u16| {
            let word = u32::from_be_bytes([0x45, 0, (total_len >> 8) as u8, total_len as u8]);
            word & key.mask == key.val
        };
        assert!(matches(52) && matches(84) && matches(127), "ACKs");
        assert!(!matches(128) && !matches(1500) && !matches(65_000), "data");
        assert_eq!(opts[1], TcOption::U32(TcFilterU32Option::ClassId(SMALL_CLASS)));
    }
}
