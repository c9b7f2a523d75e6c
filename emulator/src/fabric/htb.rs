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
//! Each shaped interface gets root qdisc `1:` (default class 1) and class
//! `1:1` with rate = ceil. The burst is what `tc` picks by default
//! (1 ms at the rate, plus one MTU) and at least one 64 KiB GSO packet, so
//! that veth's large segments do not stall the token bucket.
//!
//! Each class gets a leaf qdisc `10:` of its own ([`LeafQueue`]): a `bfifo`
//! holding a few milliseconds of the class rate. Without it htb's leaf is
//! a `pfifo` of txqueuelen (1000) packets, which on a veth carrying GSO
//! segments is hundreds of milliseconds at the emulated rates: a TCP stream
//! fills it, and when both directions of a link are busy every ACK of the
//! reverse stream waits behind it (measured in `docs/fabric.md`). A leaf
//! `bfifo` takes `struct tc_fifo_qopt { __u32 limit; }` directly as
//! `TCA_OPTIONS` (not nested attributes).

use super::netlink::Request;
use crate::units::{Bps, Nanos};
use netlink_packet_core::{DefaultNla, NLM_F_CREATE, NLM_F_EXCL};
use netlink_packet_route::tc::{TcAttribute, TcHandle, TcMessage, TcOption};
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
/// The one class `1:1`.
pub const CLASS_HANDLE: TcHandle = TcHandle { major: 1, minor: 1 };

/// The leaf qdisc `10:` under class `1:1`.
pub const LEAF_HANDLE: TcHandle = TcHandle {
    major: 0x10,
    minor: 0,
};
/// `TCA_OPTIONS`, sent raw for a fifo.
const TCA_OPTIONS: u16 = 2;
/// One maximal GSO segment as a qdisc counts it: 64 KiB of TCP payload in
/// 1448-byte segments (46), each counted as a full 1514-byte frame.
const MAX_GSO_BYTES: u64 = (64 * 1024_u64).div_ceil(1448) * 1514;

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

/// Burst in bytes for `rate`: 1 ms worth plus an MTU, at least 64 KiB + MTU.
pub fn burst_bytes(rate: Bps) -> u64 {
    (rate.0 / 8 / 1000 + 1514).max(64 * 1024 + 1514)
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

/// `struct tc_htb_glob`: version 3, r2q 10, default class 1.
pub fn glob_bytes() -> Vec<u8> {
    [TC_HTB_PROTOVER, 10, CLASS_HANDLE.minor as u32, 0, 0]
        .iter()
        .flat_map(|v| v.to_ne_bytes())
        .collect()
}

/// Time to send `bytes` at `rate`, in psched ticks (what `buffer` holds).
fn ticks(bytes: u64, rate: Bps) -> u32 {
    let ns = (bytes as u128 * 8 * 1_000_000_000) / rate.0.max(1) as u128;
    (ns >> PSCHED_SHIFT).min(u32::MAX as u128) as u32
}

/// `struct tc_htb_opt` for a class with rate = ceil = `rate`.
pub fn opt_bytes(rate: Bps) -> Vec<u8> {
    let buffer = ticks(burst_bytes(rate), rate);
    let mut v = Vec::with_capacity(44);
    v.extend_from_slice(&ratespec(rate));
    v.extend_from_slice(&ratespec(rate));
    for x in [
        buffer, buffer, 0, /* quantum: kernel derives */
        0, /* level */
        0, /* prio */
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

/// `tc class add dev IF parent 1: classid 1:1 htb rate R ceil R`.
pub fn class(ifindex: u32, rate: Bps, what: &str) -> Request {
    let mut m = header(ifindex, CLASS_HANDLE, ROOT_HANDLE);
    let mut opts = vec![TcOption::Other(DefaultNla::new(TCA_HTB_PARMS, opt_bytes(rate)))];
    let bytes_ps = rate.0 / 8;
    if bytes_ps > u32::MAX as u64 {
        for kind in [TCA_HTB_RATE64, TCA_HTB_CEIL64] {
            opts.push(TcOption::Other(DefaultNla::new(
                kind,
                bytes_ps.to_ne_bytes().to_vec(),
            )));
        }
    }
    m.attributes.push(TcAttribute::Kind("htb".into()));
    m.attributes.push(TcAttribute::Options(opts));
    Request::new(
        RouteNetlinkMessage::NewTrafficClass(m),
        NLM_F_CREATE | NLM_F_EXCL,
        format!("adding htb class 1:1 rate {rate} on {what}"),
    )
}

/// `tc qdisc add dev IF parent 1:1 handle 10: bfifo limit BYTES`.
pub fn leaf(ifindex: u32, limit_bytes: u64, what: &str) -> Request {
    let mut m = header(ifindex, LEAF_HANDLE, CLASS_HANDLE);
    m.attributes.push(TcAttribute::Kind("bfifo".into()));
    let limit = limit_bytes.min(u32::MAX as u64) as u32;
    m.attributes.push(TcAttribute::Other(DefaultNla::new(
        TCA_OPTIONS,
        limit.to_ne_bytes().to_vec(),
    )));
    Request::new(
        RouteNetlinkMessage::NewQueueDiscipline(m),
        NLM_F_CREATE | NLM_F_EXCL,
        format!("adding bfifo leaf of {limit} bytes under htb class 1:1 on {what}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use netlink_packet_core::Nla;

    #[test]
    fn glob_is_version_3_with_default_class_1() {
        let g = glob_bytes();
        assert_eq!(g.len(), 20);
        assert_eq!(u32::from_ne_bytes(g[0..4].try_into().unwrap()), 3);
        assert_eq!(u32::from_ne_bytes(g[8..12].try_into().unwrap()), 1);
    }

    #[test]
    fn opt_carries_rate_in_bytes_and_buffer_in_ticks() {
        let o = opt_bytes(Bps(100_000_000));
        assert_eq!(o.len(), 44, "sizeof(struct tc_htb_opt)");
        assert_eq!(o[1], TC_LINKLAYER_ETHERNET);
        assert_eq!(u32::from_ne_bytes(o[8..12].try_into().unwrap()), 12_500_000);
        assert_eq!(u32::from_ne_bytes(o[20..24].try_into().unwrap()), 12_500_000);
        // 64 KiB + 1514 B at 12.5 MB/s is 5.364 ms = 83 814 ticks of 64 ns.
        let buffer = u32::from_ne_bytes(o[24..28].try_into().unwrap());
        assert_eq!(
            buffer,
            (((64 * 1024 + 1514) * 8 * 1_000_000_000u64 / 100_000_000) >> 6) as u32
        );
    }

    #[test]
    fn rates_beyond_32_bits_of_bytes_saturate_and_use_rate64() {
        let r = Bps(40_000_000_000); // 5 GB/s
        let o = opt_bytes(r);
        assert_eq!(u32::from_ne_bytes(o[8..12].try_into().unwrap()), u32::MAX);
        let req = class(2, r, "x");
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
        assert_eq!((m.header.parent, m.header.handle), (CLASS_HANDLE, LEAF_HANDLE));
        assert_eq!(m.attributes[0], TcAttribute::Kind("bfifo".into()));
        let TcAttribute::Other(opt) = &m.attributes[1] else {
            panic!("no raw options")
        };
        assert_eq!(opt.kind(), TCA_OPTIONS);
        assert_eq!(opt.value_len(), 4, "sizeof(struct tc_fifo_qopt)");
    }
}
