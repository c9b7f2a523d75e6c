// SPDX-License-Identifier: MIT OR Apache-2.0
//
// The optical circuit switch of ocslab as an eBPF datapath.
//
// Two tc programs share one circuit table:
//
// - `ocs_port` runs on the ingress of every OCS port (namespace `ocs`,
//   interface index OCS_IFINDEX + port). It redirects the packet to the
//   output port's egress if the port's circuit to it was usable when the
//   packet left its ToR, and drops it otherwise (no circuit, or dark).
// - `tor_ingress` runs on the ingress of every ToR downlink (packets from the
//   rack's hosts). A packet marked for the OCS whose destination is in
//   another rack leaves through one of the ToR's OCS ports when a usable
//   circuit joins the two racks; otherwise it is left to the kernel's
//   routing, which sends it over EPS. The mark is its DSCP:
//   - TOS 0x08 (DSCP 2): any circuit of the pair (several: picked by flow
//     hash);
//   - DSCP 32 + w (TOS 0x80 + 4w): the circuit on wavelength w, the one the
//     scheduler planned the flow on; while that one is not usable, any other
//     of the pair (by flow hash), else EPS.
//
// A port's circuit at time `t` (bpf_ktime_get_ns, CLOCK_MONOTONIC) is
// - mode ON_DEMAND: `prev_out` while t < `down_at`, then dark until `up_at`,
//   then `out` (a move written ahead of its `down_at` happens by itself);
// - mode SCHEDULE: in the slot of a repeating schedule that `t` falls in,
//   the port's output once the slot's dark time for it has passed (in the
//   first period's slot 0, δ for every port: each circuit is set up).
// An entry is written whole by user space under its spin lock (BPF_F_LOCK)
// and read whole under it here, so no program sees half of a move.
//
// The ToR-to-OCS hop is a fibre of a few metres, nanoseconds; here it is a
// few microseconds of kernel path. So that it adds neither dark time nor
// loss, the OCS judges a packet by the time its ToR sent it on, not by the
// time it reaches the port: `tor_ingress` writes its clock reading into the
// packet's source MAC (STAMP_MARK, then the low 40 bits of the time), and
// `ocs_port` forwards the packet if the output the ToR aimed it at (its
// destination MAC: the far ToR's transceiver) was the port's usable circuit
// at that time: a packet sent before the port went dark (`down_at`) still
// crosses to `prev_out`. A packet with no stamp, or one claiming to be
// older than STAMP_MAX_AGE_NS, is judged by the port's own clock.
//
// The Rust side (emulator/src/fabric/ebpf.rs) loads this object with aya,
// sets the read-only globals below and writes the maps. Rebuild the shipped
// object with scripts/build-bpf (CI checks it matches this source).

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#define NO_PORT 0xffffffffu
#define MAX_WAVELENGTHS 32
#define MAX_SLOTS 64
#define MODE_ON_DEMAND 0
#define MODE_SCHEDULE 1
#define OCS_DSCP 2             // TOS 0x08: any circuit of the pair
#define OCS_WAVELENGTH_DSCP 32 // DSCP 32 + w: the circuit on wavelength w
#define STAMP_MARK 0x06        // first byte of a stamped source MAC (local, unicast)
#define STAMP_BITS 40
#define STAMP_MASK ((1ull << STAMP_BITS) - 1)
#define STAMP_MAX_AGE_NS 1000000000ull

// Set by the loader before the programs are loaded.
volatile const __u32 n_ports = 1;      // racks x wavelengths
volatile const __u32 wavelengths = 1;  // OCS ports per rack
volatile const __u32 racks = 1;
volatile const __u32 ocs_ifindex = 10; // OCS port p is interface ocs_ifindex + p
volatile const __u32 tor_ocs_ifindex = 100; // ToR transceiver w is tor_ocs_ifindex + w
volatile const __u32 net_base = 0;     // first address of the range, host order

// The on-demand circuit of an input port, and the one before it.
struct circuit {
    struct bpf_spin_lock lock;
    __u32 out;      // output port, or NO_PORT
    __u32 prev_out; // the output until `down_at`, or NO_PORT
    __u32 pad;
    __u64 up_at;    // `out` is usable from this time on
    __u64 down_at;  // the port is dark from this time until `up_at`
};

// A repeating schedule of matchings. Slot s covers
// [start[s], start[s + 1]) of each period (the last slot ends at `period`).
struct schedule {
    __u64 epoch;      // when slot 0 of the first period begins
    __u64 period;
    __u32 slots;
    __u32 first_dark; // δ: slot 0 of the first period sets up every circuit
    __u64 start[MAX_SLOTS];
};

// Port p's circuit in one slot (index slot * n_ports + p).
struct slot_port {
    __u32 out;     // output port, or NO_PORT
    __u32 dark;    // ns from the slot's start before it is usable
};

// What an OCS input port did.
struct port_stats {
    __u64 packets;  // redirected over a circuit
    __u64 bytes;
    __u64 dropped;  // arrived with no usable circuit
};

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __type(key, __u32);
    __type(value, __u32);
    __uint(max_entries, 1);
} mode SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __type(key, __u32);
    __type(value, struct circuit);
    __uint(max_entries, 1); // n_ports, set by the loader
} circuits SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __type(key, __u32);
    __type(value, struct schedule);
    __uint(max_entries, 1);
} schedule SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __type(key, __u32);
    __type(value, struct slot_port);
    __uint(max_entries, 1); // MAX_SLOTS x n_ports, set by the loader
} slot_ports SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __type(key, __u32);
    __type(value, struct port_stats);
    __uint(max_entries, 1); // n_ports, set by the loader
} stats SEC(".maps");

// The output of `port` at `now`, or NO_PORT when it has none or is dark.
static __always_inline __u32 circuit_at(__u32 port, __u64 now)
{
    __u32 zero = 0;
    __u32 *m = bpf_map_lookup_elem(&mode, &zero);
    if (m && *m == MODE_SCHEDULE) {
        struct schedule *s = bpf_map_lookup_elem(&schedule, &zero);
        if (!s || s->period == 0 || s->slots == 0 || now < s->epoch)
            return NO_PORT;
        __u64 since = now - s->epoch;
        __u64 off = since % s->period;
        __u32 slot = 0;
        for (__u32 i = 1; i < MAX_SLOTS; i++) {
            if (i >= s->slots || s->start[i] > off)
                break;
            slot = i;
        }
        if (slot >= MAX_SLOTS)
            return NO_PORT;
        __u64 into = off - s->start[slot];
        __u32 key = slot * n_ports + port;
        struct slot_port *sp = bpf_map_lookup_elem(&slot_ports, &key);
        if (!sp || sp->out == NO_PORT)
            return NO_PORT;
        // Before the epoch every port was dark: in the first period, slot
        // 0's circuits are all being set up, whatever the last slot had.
        __u64 dark = slot == 0 && since < s->period ? s->first_dark : sp->dark;
        if (into < dark)
            return NO_PORT;
        return sp->out;
    }
    struct circuit *c = bpf_map_lookup_elem(&circuits, &port);
    if (!c)
        return NO_PORT;
    bpf_spin_lock(&c->lock);
    __u32 out = c->out, prev_out = c->prev_out;
    __u64 up_at = c->up_at, down_at = c->down_at;
    bpf_spin_unlock(&c->lock);
    if (now < down_at)
        return prev_out;
    if (now < up_at)
        return NO_PORT;
    return out;
}

// The time a packet's ToR stamped in its source MAC, if it is stamped and
// not older than STAMP_MAX_AGE_NS; else 0.
static __always_inline __u64 stamp_of(const __u8 *smac, __u64 now)
{
    if (smac[0] != STAMP_MARK)
        return 0;
    __u64 low = 0;
    for (int i = 1; i < ETH_ALEN; i++)
        low = (low << 8) | smac[i];
    __u64 age = (now - low) & STAMP_MASK;
    if (age > STAMP_MAX_AGE_NS || age > now)
        return 0;
    return now - age;
}

// The output port a packet's destination MAC names (the far ToR's
// transceiver: 02:0c:rack:rack:wavelength:01), or NO_PORT.
static __always_inline __u32 aimed_at(const __u8 *dmac)
{
    __u32 rack = ((__u32)dmac[2] << 8) | dmac[3];
    __u32 w = dmac[4];
    if (dmac[0] != 0x02 || dmac[1] != 0x0c || dmac[5] != 0x01 || rack >= racks || w >= wavelengths)
        return NO_PORT;
    return rack * wavelengths + w;
}

SEC("classifier")
int ocs_port(struct __sk_buff *skb)
{
    __u32 port = skb->ifindex - ocs_ifindex;
    if (port >= n_ports)
        return TC_ACT_SHOT;
    __u64 now = bpf_ktime_get_ns();
    __u32 out = NO_PORT;
    void *data = (void *)(long)skb->data;
    void *data_end = (void *)(long)skb->data_end;
    struct ethhdr *eth = data;
    __u64 sent = 0;
    if ((void *)(eth + 1) <= data_end)
        sent = stamp_of(eth->h_source, now);
    if (sent) {
        __u32 aim = aimed_at(eth->h_dest);
        if (aim != NO_PORT && circuit_at(port, sent) == aim)
            out = aim;
    } else {
        out = circuit_at(port, now);
    }
    struct port_stats *st = bpf_map_lookup_elem(&stats, &port);
    if (out == NO_PORT || out >= n_ports) {
        if (st)
            st->dropped++;
        return TC_ACT_SHOT;
    }
    if (st) {
        st->packets++;
        st->bytes += skb->len;
    }
    return bpf_redirect(ocs_ifindex + out, 0);
}

// Rack of a host-order address of the range, or `racks` when outside it.
static __always_inline __u32 rack_of(__u32 addr)
{
    __u32 off = addr - net_base;
    __u32 r = off >> 8;
    return r < racks ? r : racks;
}

SEC("classifier")
int tor_ingress(struct __sk_buff *skb)
{
    void *data = (void *)(long)skb->data;
    void *data_end = (void *)(long)skb->data_end;
    struct ethhdr *eth = data;
    struct iphdr *ip = data + sizeof(*eth);
    if ((void *)(ip + 1) > data_end)
        return TC_ACT_OK;
    if (eth->h_proto != bpf_htons(ETH_P_IP))
        return TC_ACT_OK;
    __u32 dscp = ip->tos >> 2;
    if (dscp != OCS_DSCP && dscp < OCS_WAVELENGTH_DSCP)
        return TC_ACT_OK;
    __u32 src = rack_of(bpf_ntohl(ip->saddr));
    __u32 dst = rack_of(bpf_ntohl(ip->daddr));
    if (src >= racks || dst >= racks || src == dst || ip->ttl <= 1)
        return TC_ACT_OK;

    // The usable circuits from this rack to `dst`, one per wavelength at most.
    __u64 now = bpf_ktime_get_ns();
    __u32 usable = 0;
    __u32 mask = 0;
    for (__u32 w = 0; w < MAX_WAVELENGTHS; w++) {
        if (w >= wavelengths)
            break;
        if (circuit_at(src * wavelengths + w, now) == dst * wavelengths + w) {
            mask |= 1u << w;
            usable++;
        }
    }
    if (usable == 0)
        return TC_ACT_OK; // EPS
    __u32 wl = 0;
    __u32 named = dscp - OCS_WAVELENGTH_DSCP;
    if (dscp >= OCS_WAVELENGTH_DSCP && named < MAX_WAVELENGTHS && (mask & (1u << named))) {
        wl = named;
    } else {
        __u32 pick = usable == 1 ? 0 : bpf_get_hash_recalc(skb) % usable;
        for (__u32 w = 0; w < MAX_WAVELENGTHS; w++) {
            if (mask & (1u << w)) {
                if (pick == 0) {
                    wl = w;
                    break;
                }
                pick--;
            }
        }
    }

    // Forward as the ToR's router would: new MACs, TTL - 1. The source MAC
    // carries the time the ToR sent the packet on (see the top).
    __u8 smac[ETH_ALEN] = {STAMP_MARK, now >> 32, now >> 24, now >> 16, now >> 8, now};
    __u8 dmac[ETH_ALEN] = {0x02, 0x0c, dst >> 8, dst, wl, 0x01};
    __u16 old = *(__u16 *)&ip->ttl;
    ip->ttl--;
    __u16 new = *(__u16 *)&ip->ttl;
    __builtin_memcpy(eth->h_source, smac, ETH_ALEN);
    __builtin_memcpy(eth->h_dest, dmac, ETH_ALEN);
    bpf_l3_csum_replace(skb, ETH_HLEN + __builtin_offsetof(struct iphdr, check), old, new, 2);
    return bpf_redirect(tor_ocs_ifindex + wl, 0);
}

char LICENSE[] SEC("license") = "MIT OR Apache-2.0";
