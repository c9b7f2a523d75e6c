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
//! 1: htb default 11 (100 with flow queues)
//! └─ 1:1   rate R ceil R
//!    ├─ 1:10  rate R/20 ceil R prio 0   packets under 128 bytes (ACKs, SYNs)
//!    └─ 1:11  rate 19R/20 ceil R prio 1 everything else → leaf 10: bfifo
//!       ├─ 1:100 rate 19R/20N ceil R   with N flow queues instead of the
//!       ├─ …                           leaf, each with a bfifo of its
//!       └─ 1:1ff                       own (100: … 1ff:)
//! filter u32 prio 2 on 1: ip total length < 128 → 1:10
//! filter u32 prio 3 on 1: hash of source-port bits 1… → 1:100 + bucket
//! ```
//!
//! The flow queues ([`FlowQueues`]) take turns of one quantum of bytes,
//! so the flows of a link share it as max-min fairness (and the fluid
//! model) would, whatever their congestion control or lack of one.
//!
//! A link taken down (`ocslab link down`) gets one more filter on `1:`,
//! ahead of the others, that sends every packet to a class `1:12` whose
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
//! The data class (or each flow queue) gets a leaf qdisc of its own
//! ([`LeafQueue`]): a `bfifo` holding a few milliseconds of the link rate. Without it htb's
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
/// The flow-hash filters' priority on the root qdisc: after small packets.
const FLOW_FILTER_PRIO: u32 = 3;
/// The u32 hash table of the flow queues, `2:` (`htid << 20`).
const FLOW_TABLE: u32 = 0x002 << 20;
/// Flow queue `q` is class `1:(0x100 + q)` with leaf `(0x100 + q):`.
const FLOW_CLASS_BASE: u16 = 0x100;
/// Where the ports are: an IPv4 header without options (this fabric sends
/// none) is 20 bytes, and TCP and UDP start with the source port.
const PORTS_OFFSET: i16 = 20;
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

/// How many flow queues a whole fabric may have when its topology does
/// not set `flow_queues`. Every htb class costs the kernel a walk of a
/// list of every filter block on the box (`flow_indr_dev_setup_offload`,
/// since a veth has no `ndo_setup_tc`), so build time grows with the
/// square of the classes: 128 hosts build in 0.37 s with 16 queues per
/// link and 2.0 s with 64 (`ocslab bench fabric --flow-queues N`).
pub const FLOW_QUEUE_BUDGET: usize = 8192;

/// How many queues a shaped link's data class is split into. A packet's
/// queue is a hash of its source port, and the queues take turns of a
/// quantum of bytes, each free to borrow the whole link while the others
/// are idle: the flows of a link share it fairly, as in the fluid model,
/// instead of in the order a single FIFO happens to hold them. This
/// kernel has no `sfq`, `fq` or `drr`; htb classes fed by a u32 hash are
/// what it has, and they work rootless too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowQueues(u16);

impl FlowQueues {
    /// One FIFO for all data.
    pub const ONE: FlowQueues = FlowQueues(1);
    /// The most a u32 hash table holds.
    pub const MAX: u16 = 256;

    /// `n` queues, if `n` is a power of two of at most [`Self::MAX`]
    /// (u32 hashes by masking bits).
    pub fn new(n: u16) -> Option<FlowQueues> {
        (n.is_power_of_two() && n <= Self::MAX).then_some(FlowQueues(n))
    }

    /// The most queues per link for a fabric of `links` shaped links:
    /// the largest power of two, up to [`Self::MAX`], that keeps the
    /// fabric within [`FLOW_QUEUE_BUDGET`] queues.
    pub fn within_budget(links: usize) -> FlowQueues {
        let fit = (FLOW_QUEUE_BUDGET / links.max(1)).clamp(1, usize::from(Self::MAX));
        FlowQueues(1 << fit.ilog2())
    }

    /// The number of queues.
    pub fn count(self) -> u16 {
        self.0
    }

    /// The hash key's mask over the ports word (source port in the upper
    /// half): source-port bits 1 and up, since Linux hands out ephemeral
    /// ports of one parity to `connect`.
    fn hash_mask(self) -> u32 {
        (u32::from(self.0) - 1) << 17
    }

    /// The queue a packet from source port `sport` takes on every shaped
    /// link: source-port bits 1 and up, as the links' u32 hash reads them.
    pub fn queue_of_port(self, sport: u16) -> u16 {
        (sport >> 1) & (self.0 - 1)
    }

    /// The source ports from [`FlowQueues::FIRST_PORT`] up whose packets
    /// take queue `queue` (below [`FlowQueues::count`]), starting from the
    /// `from`-th of them and wrapping around: a sender that binds one of
    /// these puts its flow in that queue on every link it crosses.
    pub fn ports(self, queue: u16, from: usize) -> impl Iterator<Item = u16> {
        let step = 2 * u32::from(self.0);
        let first = u32::from(Self::FIRST_PORT) + 2 * u32::from(queue);
        let n = ((u32::from(u16::MAX) - first) / step + 1) as usize;
        (0..n).map(move |i| (first + ((from + i) % n) as u32 * step) as u16)
    }

    /// The lowest source port [`FlowQueues::ports`] hands out: above the
    /// ports a service would listen on, and a multiple of 2 ×
    /// [`FlowQueues::MAX`], so that its queue is 0 for every count.
    pub const FIRST_PORT: u16 = 10_240;
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

/// `struct tc_htb_glob`: version 3, r2q 10, default class `default`
/// (`1:11`, or the first flow queue when there are several).
pub fn glob_bytes(default: TcHandle) -> Vec<u8> {
    [TC_HTB_PROTOVER, 10, default.minor as u32, 0, 0]
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
        // quantum: one maximal GSO segment. Siblings take turns, and a
        // turn sends packets while the class's deficit is not negative,
        // but always at least one: with a quantum under the largest
        // packet, turns would be fair in packets, not bytes. (The kernel's
        // rate / r2q is also below an MTU on slow classes.)
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

/// `tc qdisc add dev IF root handle 1: htb default DEFAULT`.
fn qdisc(ifindex: u32, default: TcHandle, what: &str) -> Request {
    let mut m = header(ifindex, ROOT_HANDLE, TcHandle::ROOT);
    m.attributes.push(TcAttribute::Kind("htb".into()));
    m.attributes
        .push(TcAttribute::Options(vec![TcOption::Other(DefaultNla::new(
            TCA_HTB_INIT,
            glob_bytes(default),
        ))]));
    Request::new(
        RouteNetlinkMessage::NewQueueDiscipline(m),
        NLM_F_CREATE | NLM_F_EXCL,
        format!("adding htb qdisc on {what}"),
    )
}

/// Everything that shapes one link of `rate`, in order: the qdisc, its
/// classes, their leaves and the filters, as the module shows. With
/// `flow_queues` above 1, the data class is split into that many flow
/// queues (see [`FlowQueues`]); `leaf_limit` bounds each leaf (`None`:
/// the kernel's default leaf).
pub fn link(
    ifindex: u32,
    rate: Bps,
    leaf_limit: Option<u64>,
    flow_queues: FlowQueues,
    what: &str,
) -> Vec<Request> {
    let queues = flow_queues.count();
    let default = if queues > 1 { flow_class(0) } else { DATA_CLASS };
    let mut reqs = vec![qdisc(ifindex, default, what)];
    reqs.extend(classes(ifindex, rate, what));
    reqs.push(small_packet_filter(ifindex, what));
    if queues == 1 {
        reqs.extend(leaf_limit.map(|limit| leaf(ifindex, limit, what)));
        return reqs;
    }
    let data = data_rate(rate);
    let share = Bps((data.0 / u64::from(queues)).max(8_000));
    for q in 0..queues {
        let queue = flow_class(q);
        reqs.push(class(ifindex, queue, DATA_CLASS, (share, rate, 1), what));
        let leaf = TcHandle {
            major: queue.minor,
            minor: 0,
        };
        reqs.extend(leaf_limit.map(|limit| fifo(ifindex, leaf, queue, limit, what)));
    }
    reqs.extend(flow_hash_filters(ifindex, flow_queues, what));
    reqs
}

/// How many htb classes [`link`] makes on one link.
pub fn class_count(flow_queues: FlowQueues) -> usize {
    match flow_queues.count() {
        1 => 3,
        q => 3 + usize::from(q),
    }
}

/// The rate guaranteed to data: what small packets do not get.
fn data_rate(rate: Bps) -> Bps {
    Bps(rate.0.saturating_sub(small_rate(rate).0).max(8_000))
}

/// The rate guaranteed to small packets.
fn small_rate(rate: Bps) -> Bps {
    Bps((rate.0 / SMALL_SHARE).max(8_000))
}

/// The three classes of a link of `rate`: `1:1` (the link), `1:10`
/// (small packets, first) and `1:11` (the rest), as the module shows.
fn classes(ifindex: u32, rate: Bps, what: &str) -> [Request; 3] {
    [
        class(ifindex, CLASS_HANDLE, ROOT_HANDLE, (rate, rate, 0), what),
        class(
            ifindex,
            SMALL_CLASS,
            CLASS_HANDLE,
            (small_rate(rate), rate, 0),
            what,
        ),
        class(
            ifindex,
            DATA_CLASS,
            CLASS_HANDLE,
            (data_rate(rate), rate, 1),
            what,
        ),
    ]
}

/// Flow queue `q`'s class, `1:1qq` (hex).
pub fn flow_class(q: u16) -> TcHandle {
    TcHandle {
        major: 1,
        minor: FLOW_CLASS_BASE + q,
    }
}

/// The u32 filters that hash data packets onto the flow queues, in order
/// (prio 3 on `1:`): `tc filter add … handle 2: u32 divisor N`, then
/// `… u32 ht 800:: match u32 0 0 hashkey mask M at 20 link 2:`, then one
/// `… u32 ht 2:q: match u32 0 0 classid 1:1qq` per queue.
fn flow_hash_filters(ifindex: u32, flow_queues: FlowQueues, what: &str) -> Vec<Request> {
    let queues = flow_queues.count();
    let filter = |opts: Vec<TcFilterU32Option>, handle: u32, flags: u16, about: String| {
        let mut m = header(ifindex, TcHandle::from(handle), ROOT_HANDLE);
        m.header.info = (FLOW_FILTER_PRIO << 16) | ETH_P_IP_BE;
        m.attributes.push(TcAttribute::Kind("u32".into()));
        m.attributes.push(TcAttribute::Options(
            opts.into_iter().map(TcOption::U32).collect(),
        ));
        Request::new(RouteNetlinkMessage::NewTrafficFilter(m), flags, about)
    };
    let mut hashing = every_packet();
    hashing.flags = TcU32SelectorFlags::empty();
    hashing.hmask = flow_queues.hash_mask();
    hashing.hoff = PORTS_OFFSET;
    let mut reqs = vec![
        filter(
            vec![TcFilterU32Option::Divisor(u32::from(queues))],
            FLOW_TABLE,
            NLM_F_CREATE | NLM_F_EXCL,
            format!("adding the {queues}-bucket flow hash table on {what}"),
        ),
        filter(
            vec![
                TcFilterU32Option::Selector(hashing),
                TcFilterU32Option::Link(FLOW_TABLE),
            ],
            0,
            NLM_F_CREATE,
            format!("adding the flow hash filter on {what}"),
        ),
    ];
    for q in 0..queues {
        reqs.push(filter(
            vec![
                TcFilterU32Option::Hash(FLOW_TABLE | (u32::from(q) << 12)),
                TcFilterU32Option::Selector(every_packet()),
                TcFilterU32Option::ClassId(flow_class(q)),
            ],
            0,
            NLM_F_CREATE,
            format!("adding flow bucket {q} on {what}"),
        ));
    }
    reqs
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
fn small_packet_filter(ifindex: u32, what: &str) -> Request {
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
fn leaf(ifindex: u32, limit_bytes: u64, what: &str) -> Request {
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
        let g = glob_bytes(DATA_CLASS);
        assert_eq!(g.len(), 20);
        assert_eq!(u32::from_ne_bytes(g[0..4].try_into().unwrap()), 3);
        assert_eq!(u32::from_ne_bytes(g[8..12].try_into().unwrap()), 0x11);
        let g = glob_bytes(flow_class(0));
        assert_eq!(u32::from_ne_bytes(g[8..12].try_into().unwrap()), 0x100);
    }

    #[test]
    fn opt_carries_rate_in_bytes_and_buffer_in_ticks() {
        let o = opt_bytes(Bps(100_000_000), Bps(100_000_000), 0);
        assert_eq!(o.len(), 44, "sizeof(struct tc_htb_opt)");
        let quantum = u32::from_ne_bytes(o[32..36].try_into().unwrap());
        assert_eq!(quantum as u64, MAX_GSO_BYTES, "no packet is larger");
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
        classes(2, rate, "x").iter().map(class_params).collect()
    }

    /// A class request's (handle, parent, rate, ceil, prio), rates in bytes/s.
    fn class_params(req: &Request) -> (TcHandle, TcHandle, u32, u32, u32) {
        let (_, handle, parent) = made(req);
        let b = htb_struct(req);
        let word = |at: usize| u32::from_ne_bytes(b[at..at + 4].try_into().unwrap());
        (handle, parent, word(8), word(20), word(40))
    }

    /// The htb struct a qdisc or class request carries (`tc_htb_glob`,
    /// `tc_htb_opt`).
    fn htb_struct(req: &Request) -> Vec<u8> {
        let attributes = match &req.msg {
            RouteNetlinkMessage::NewQueueDiscipline(m) | RouteNetlinkMessage::NewTrafficClass(m) => {
                &m.attributes
            }
            other => panic!("not a qdisc or class: {other:?}"),
        };
        let TcAttribute::Options(opts) = &attributes[1] else {
            panic!("no options")
        };
        let TcOption::Other(raw) = &opts[0] else {
            panic!("no htb struct")
        };
        let mut b = vec![0; raw.value_len()];
        raw.emit_value(&mut b);
        b
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

    /// What one request of [`link`] makes: its kind and handles.
    fn made(req: &Request) -> (&'static str, TcHandle, TcHandle) {
        match &req.msg {
            RouteNetlinkMessage::NewQueueDiscipline(m) => ("qdisc", m.header.handle, m.header.parent),
            RouteNetlinkMessage::NewTrafficClass(m) => ("class", m.header.handle, m.header.parent),
            RouteNetlinkMessage::NewTrafficFilter(m) => ("filter", m.header.handle, m.header.parent),
            _ => ("other", TcHandle::default(), TcHandle::default()),
        }
    }

    /// The u32 options of a filter request.
    fn u32_options(req: &Request) -> Vec<TcFilterU32Option> {
        let RouteNetlinkMessage::NewTrafficFilter(m) = &req.msg else {
            panic!("not a filter")
        };
        let TcAttribute::Options(opts) = &m.attributes[1] else {
            panic!("no options")
        };
        opts.iter()
            .map(|o| match o {
                TcOption::U32(u) => u.clone(),
                other => panic!("not a u32 option: {other:?}"),
            })
            .collect()
    }

    #[test]
    fn one_flow_queue_is_a_single_fifo_under_the_data_class() {
        let reqs = link(2, Bps(50_000_000), Some(100_000), FlowQueues::ONE, "x");
        let kinds: Vec<_> = reqs.iter().map(made).collect();
        assert_eq!(
            kinds,
            [
                ("qdisc", ROOT_HANDLE, TcHandle::ROOT),
                ("class", CLASS_HANDLE, ROOT_HANDLE),
                ("class", SMALL_CLASS, CLASS_HANDLE),
                ("class", DATA_CLASS, CLASS_HANDLE),
                ("filter", TcHandle::default(), ROOT_HANDLE),
                ("qdisc", LEAF_HANDLE, DATA_CLASS),
            ]
        );
        assert_eq!(class_count(FlowQueues::ONE), 3);
    }

    #[test]
    fn flow_queues_split_the_data_class_and_a_port_hash_picks_one() {
        let q = FlowQueues::new(4).unwrap();
        let rate = Bps(50_000_000);
        let reqs = link(2, rate, Some(100_000), q, "x");
        // qdisc, 3 classes, small filter; 4 × (class, leaf); 2 + 4 filters.
        assert_eq!(reqs.len(), 5 + 8 + 6);
        assert_eq!(
            htb_struct(&reqs[0]),
            glob_bytes(flow_class(0)),
            "unmatched packets go to queue 0, a leaf"
        );
        for k in 0..4u16 {
            let class = flow_class(k);
            assert_eq!(made(&reqs[5 + 2 * usize::from(k)]), ("class", class, DATA_CLASS));
            let leaf = TcHandle {
                major: 0x100 + k,
                minor: 0,
            };
            assert_eq!(made(&reqs[6 + 2 * usize::from(k)]), ("qdisc", leaf, class));
        }
        // Each queue is guaranteed a quarter of the data rate, may borrow
        // the link, and takes turns with the others.
        let (_, _, rate, ceil, prio) = class_params(&reqs[5]);
        assert_eq!((rate, ceil, prio), (5_937_500 / 4, 6_250_000, 1));
        assert_eq!(class_count(q), 7);

        // The table, the hashing filter, one entry per queue.
        assert_eq!(u32_options(&reqs[13]), [TcFilterU32Option::Divisor(4)]);
        let linking = u32_options(&reqs[14]);
        assert_eq!(linking[1], TcFilterU32Option::Link(FLOW_TABLE));
        let TcFilterU32Option::Selector(sel) = &linking[0] else {
            panic!("no selector")
        };
        assert_eq!((sel.hoff, sel.hmask), (20, 0x0006_0000));
        // The kernel's u32_hash_fold: the masked word shifted down to its
        // lowest set bit, then ANDed with divisor − 1.
        let queue_of = |sport: u16| {
            let word = (u32::from(sport) << 16) | 5001;
            ((word & sel.hmask) >> sel.hmask.trailing_zeros()) & 3
        };
        // connect() takes even ports: consecutive ones land in different queues.
        assert_eq!([40000, 40002, 40004, 40006, 40008].map(queue_of), [0, 1, 2, 3, 0]);
        // What senders are told to bind is what the filters hash.
        for sport in (0..=u16::MAX).step_by(7) {
            assert_eq!(u32::from(q.queue_of_port(sport)), queue_of(sport), "port {sport}");
        }
        for k in 0..4u32 {
            let entry = u32_options(&reqs[15 + k as usize]);
            assert_eq!(entry[0], TcFilterU32Option::Hash(FLOW_TABLE | (k << 12)));
            assert_eq!(entry[2], TcFilterU32Option::ClassId(flow_class(k as u16)));
        }
    }

    #[test]
    fn the_ports_of_a_queue_all_hash_to_it_and_cover_the_range() {
        for count in [1u16, 2, 4, 128, 256] {
            let q = FlowQueues::new(count).unwrap();
            for queue in [0, count / 2, count - 1] {
                let ports: Vec<u16> = q.ports(queue, 0).collect();
                assert!(ports.iter().all(|&p| p >= FlowQueues::FIRST_PORT));
                assert!(ports.iter().all(|&p| q.queue_of_port(p) == queue));
                assert!(ports.windows(2).all(|w| w[1] - w[0] == 2 * count));
                // The last is within one step of the top of the range.
                let last = u32::from(*ports.last().unwrap());
                assert!(
                    last + 2 * u32::from(count) > u32::from(u16::MAX),
                    "{count}/{queue}: {last}"
                );
                // Starting elsewhere visits the same ports, rotated.
                let from: Vec<u16> = q.ports(queue, 5).collect();
                assert_eq!(from.len(), ports.len());
                assert_eq!(from[0], ports[5 % ports.len()]);
                assert_eq!(*from.last().unwrap(), ports[(4 + ports.len()) % ports.len()]);
            }
        }
    }

    #[test]
    fn flow_queues_are_powers_of_two_within_the_fabrics_budget() {
        assert_eq!(FlowQueues::new(0), None);
        assert_eq!(FlowQueues::new(48), None);
        assert_eq!(FlowQueues::new(512), None);
        assert_eq!(FlowQueues::new(256).map(FlowQueues::count), Some(256));
        // lab.toml (48 shaped links), 128 hosts (320), 1,024 hosts (2,304).
        let per_link = |links| FlowQueues::within_budget(links).count();
        assert_eq!([per_link(48), per_link(320), per_link(2304)], [128, 16, 2]);
        assert_eq!([per_link(0), per_link(1), per_link(10_000)], [256, 256, 1]);
    }
}
