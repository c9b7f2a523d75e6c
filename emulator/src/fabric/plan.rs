//! The pure half of building a fabric: a [`Topology`] and a run id become a
//! [`FabricPlan`], the list of namespaces and, for each, the veth pairs it
//! creates, its addresses, routes, policy rules, static neighbours, htb
//! shapers and ingress qdiscs. No I/O happens here; [`super::apply`] turns a
//! plan into netlink messages (plan-then-apply, as Mininet builds tc commands
//! with pure functions and runs them in a separate step).
//!
//! The layout (see `docs/fabric.md`):
//! - host `r<r>h<h>`: one NIC `o<id>-eth0` with `host/32`, an on-link route
//!   to its ToR's `.1` and `range via .1` (no default route anywhere);
//! - ToR r: a routed ToR. One downlink per host carrying `.1/32` and a
//!   `host/32` route (so intra-rack traffic also crosses the ToR and is
//!   shaped by both host links), an uplink /31 to the core with `range via
//!   core`, and per OCS port w an interface on optical subnet w. Policy rule
//!   `tos 0x08 lookup 100` (dropped on the eBPF datapath,
//!   [`FabricPlan::without_ocs_rules`]); table 100 receives one route per
//!   circuit;
//! - core: one port per rack, `rack subnet via ToR`;
//! - OCS: one port per (rack, wavelength), each with an ingress qdisc, so a
//!   circuit is one u32 match-all filter with a mirred redirect.
//!
//! Interface indexes are chosen here (each namespace is new, so they are
//! free), which lets every message be encoded before anything exists.

use super::htb::{self, FlowQueues, LeafQueue};
use super::names::{ifname, role, RunId};
use crate::addr::{AddressPlan, Ipv4Net};
use crate::topology::{HostId, RawTcp, Topology};
use crate::units::Bps;
use std::net::Ipv4Addr;

/// Policy routing table holding the circuits' routes in every ToR.
pub const OCS_TABLE: u32 = 100;
/// Priority of the `tos 0x08 lookup 100` rule.
pub const OCS_RULE_PRIORITY: u32 = 100;
/// The TOS value a sender sets (IP_TOS) on sockets bound for the OCS. This
/// kernel's fib rules accept only RFC 1349 TOS bits, hence 0x08.
pub const OCS_TOS: u8 = 0x08;
/// At most this many OCS ports (wavelengths) per rack are emulated.
pub const MAX_WAVELENGTHS: u32 = 32;

/// Interface index of a host's NIC.
pub const HOST_NIC_INDEX: u32 = 2;
/// Interface index of a ToR's uplink.
pub const TOR_UP_INDEX: u32 = 2;
/// Interface index of a ToR's OCS transceiver w is this plus w.
pub const TOR_OCS_INDEX: u32 = 100;
/// Interface index of a ToR's downlink to host h is this plus h.
pub const TOR_DOWN_INDEX: u32 = 1000;
/// Interface index of the core's port to rack r is this plus r.
pub const CORE_PORT_INDEX: u32 = 10;
/// Interface index of OCS port (r, w) is this plus r·W + w.
pub const OCS_PORT_INDEX: u32 = 10;

/// A cable of the fabric, both directions: what `ocslab link down` takes
/// down.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Cable {
    /// A host's NIC and its ToR's downlink to it.
    HostNic(HostId),
    /// A ToR's EPS uplink and the core's port to it.
    Uplink(u32),
    /// A ToR's OCS transceiver `port` and the crossbar's port to it.
    OcsPort {
        /// Rack.
        rack: u32,
        /// Port (wavelength).
        port: u32,
    },
}

impl std::fmt::Display for Cable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Cable::HostNic(h) => write!(f, "{h}-nic"),
            Cable::Uplink(r) => write!(f, "r{r}-up"),
            Cable::OcsPort { rack, port } => write!(f, "r{rack}-ocs{port}"),
        }
    }
}

/// What a namespace stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum NsRole {
    /// An emulated server.
    Host(HostId),
    /// Rack r's top-of-rack switch (a router).
    Tor(u32),
    /// The EPS core switch (a router).
    Core,
    /// The optical circuit switch (a tc crossbar).
    Ocs,
}

/// One network interface to be made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Iface {
    /// Name (at most 15 bytes).
    pub name: String,
    /// Interface index inside its namespace.
    pub index: u32,
    /// A fixed MAC address, where other namespaces must know it.
    pub mac: Option<[u8; 6]>,
    /// The largest GSO segment the interface takes (`gso_max_size`), where
    /// the kernel's 64 KiB would outlast the shaper's burst: a host NIC's
    /// ([`super::htb::nic_segment_bytes`]).
    pub gso_max_size: Option<u32>,
}

/// A veth pair created from the namespace that holds it; the peer end is
/// placed directly in another namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VethPlan {
    /// The end in this namespace.
    pub local: Iface,
    /// Index (in [`FabricPlan::namespaces`]) of the peer's namespace.
    pub peer_ns: usize,
    /// The other end.
    pub peer: Iface,
}

/// An address on an interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddrPlan {
    /// Interface index.
    pub ifindex: u32,
    /// The address.
    pub addr: Ipv4Addr,
    /// Its prefix length.
    pub prefix: u8,
}

/// A route of the main table (or of [`OCS_TABLE`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RoutePlan {
    /// Destination.
    pub dst: Ipv4Net,
    /// Gateway, or `None` for an on-link (scope link) route.
    pub via: Option<Ipv4Addr>,
    /// Output interface index.
    pub oif: u32,
    /// Routing table.
    pub table: u32,
}

/// A policy routing rule `tos T lookup TABLE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RulePlan {
    /// The TOS value matched.
    pub tos: u8,
    /// The table looked up.
    pub table: u32,
    /// Rule priority.
    pub priority: u32,
}

/// A permanent neighbour (ARP) entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NeighPlan {
    /// Interface index.
    pub ifindex: u32,
    /// The IPv4 address.
    pub addr: Ipv4Addr,
    /// Its MAC.
    pub mac: [u8; 6],
}

/// Egress shaping of one interface: an htb root qdisc `1:` whose default
/// class `1:1` has rate = ceil = `rate`, and the class's leaf queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShaperPlan {
    /// Interface index.
    pub ifindex: u32,
    /// The rate.
    pub rate: Bps,
    /// Limit in bytes of the class's `bfifo` leaf, or `None` for the
    /// kernel's default leaf (see [`LeafQueue`]).
    pub leaf_limit: Option<u64>,
}

/// Everything one namespace needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NsPlan {
    /// Namespace name (`ocslab-<run>-<role>`).
    pub name: String,
    /// What it stands for.
    pub role: NsRole,
    /// Whether it forwards IPv4 (ToRs and core).
    pub forwarding: bool,
    /// veth pairs created from here.
    pub veths: Vec<VethPlan>,
    /// Addresses.
    pub addrs: Vec<AddrPlan>,
    /// Routes, in order (on-link ones before those that use them).
    pub routes: Vec<RoutePlan>,
    /// Policy rules.
    pub rules: Vec<RulePlan>,
    /// Static neighbours.
    pub neighbours: Vec<NeighPlan>,
    /// htb shapers.
    pub shapers: Vec<ShaperPlan>,
    /// Interfaces that get an ingress qdisc (OCS ports).
    pub ingress: Vec<u32>,
    /// A host's TCP settings (`None` elsewhere).
    pub tcp: Option<HostTcp>,
}

/// How a host's TCP is set up: sysctls of its namespace and metrics of its
/// routes, from the topology's `[tcp]` table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostTcp {
    /// Sysctls under `/proc/sys/net` (key, value, field of the topology).
    pub sysctls: Vec<(&'static str, String, &'static str)>,
    /// The `initcwnd` metric of every route.
    pub initcwnd: u32,
    /// The `congctl` metric of every route, always set: a new namespace
    /// starts with the box's default algorithm (bbr on some boxes), not
    /// Linux's cubic. A route metric rather than the namespace's sysctl:
    /// outside the box's own namespace the sysctl takes only the algorithms
    /// in `tcp_allowed_congestion_control`, which is the box's setting.
    pub congestion_control: &'static str,
}

impl HostTcp {
    /// The settings of `tcp`.
    pub fn of(tcp: &RawTcp) -> HostTcp {
        HostTcp {
            sysctls: vec![
                (
                    "ipv4/tcp_rto_min_us",
                    (tcp.min_rto.0 / 1000).to_string(),
                    "tcp.min_rto",
                ),
                (
                    "ipv4/tcp_syn_retries",
                    tcp.syn_retries.to_string(),
                    "tcp.syn_retries",
                ),
            ],
            initcwnd: tcp.initcwnd,
            congestion_control: tcp.congestion_control.name(),
        }
    }
}

impl NsPlan {
    fn new(run: RunId, role_name: &str, role: NsRole, forwarding: bool) -> NsPlan {
        NsPlan {
            name: run.netns(role_name),
            role,
            forwarding,
            veths: Vec::new(),
            addrs: Vec::new(),
            routes: Vec::new(),
            rules: Vec::new(),
            neighbours: Vec::new(),
            shapers: Vec::new(),
            ingress: Vec::new(),
            tcp: None,
        }
    }
}

/// Why a topology cannot be planned as a kernel fabric.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// Too many OCS ports per rack.
    #[error("{0} OCS ports per rack is more than the emulated fabric supports (at most {MAX_WAVELENGTHS})")]
    TooManyWavelengths(u32),
    /// A flow-queue count that is not a power of two up to 256.
    #[error("eps.flow_queues = {0}: must be a power of two from 1 to {max}", max = FlowQueues::MAX)]
    FlowQueues(u16),
}

/// The whole fabric of one run, before anything exists.
#[derive(Clone, Debug, PartialEq)]
pub struct FabricPlan {
    /// The run.
    pub run: RunId,
    /// Every namespace, hosts first (rack-major), then ToRs, core, OCS.
    pub namespaces: Vec<NsPlan>,
    racks: u32,
    hosts_per_rack: u32,
    wavelengths: u32,
    addresses: AddressPlan,
    flow_queues: FlowQueues,
}

/// The MAC of ToR r's OCS transceiver w (locally administered, fixed so
/// the other ToRs' static neighbour entries can name it).
pub fn tor_ocs_mac(rack: u32, w: u32) -> [u8; 6] {
    [0x02, 0x0c, (rack >> 8) as u8, rack as u8, w as u8, 0x01]
}

impl FabricPlan {
    /// Plans the fabric of `topo` for run `run`, with the default leaf
    /// queue under every shaper.
    pub fn new(topo: &Topology, run: RunId) -> Result<FabricPlan, PlanError> {
        FabricPlan::with_leaf_queue(topo, run, LeafQueue::default())
    }

    /// Plans the fabric of `topo` for run `run`, with `leaf` under every
    /// shaper.
    pub fn with_leaf_queue(topo: &Topology, run: RunId, leaf: LeafQueue) -> Result<FabricPlan, PlanError> {
        let shaper = |ifindex: u32, rate: Bps| ShaperPlan {
            ifindex,
            rate,
            leaf_limit: leaf.limit_bytes(rate),
        };
        let w_count = topo.ocs_ports_per_rack;
        if w_count > MAX_WAVELENGTHS {
            return Err(PlanError::TooManyWavelengths(w_count));
        }
        let a = topo.address_plan();
        let p = run.if_prefix();
        let mut plan = FabricPlan {
            run,
            namespaces: Vec::new(),
            racks: topo.racks,
            hosts_per_rack: topo.hosts_per_rack,
            wavelengths: w_count,
            addresses: a.clone(),
            flow_queues: FlowQueues::ONE,
        };
        let host_tcp = HostTcp::of(&topo.tcp);
        for h in topo.host_ids() {
            let mut ns = NsPlan::new(run, &role::host(h), NsRole::Host(h), false);
            ns.tcp = Some(host_tcp.clone());
            let gw = a.tor_rack_addr(h.rack);
            ns.addrs.push(AddrPlan {
                ifindex: HOST_NIC_INDEX,
                addr: a.host_addr(h.rack, h.host),
                prefix: 32,
            });
            ns.routes.push(RoutePlan {
                dst: net32(gw),
                via: None,
                oif: HOST_NIC_INDEX,
                table: MAIN_TABLE,
            });
            ns.routes.push(RoutePlan {
                dst: topo.range,
                via: Some(gw),
                oif: HOST_NIC_INDEX,
                table: MAIN_TABLE,
            });
            ns.shapers.push(shaper(HOST_NIC_INDEX, topo.host_rate));
            plan.namespaces.push(ns);
        }
        let core = plan.core_ns();
        let ocs = plan.ocs_ns();
        for r in 0..topo.racks {
            let mut ns = NsPlan::new(run, &role::tor(r), NsRole::Tor(r), true);
            let gw = a.tor_rack_addr(r);
            for h in 0..topo.hosts_per_rack {
                let down = TOR_DOWN_INDEX + h;
                ns.veths.push(VethPlan {
                    local: iface(ifname::tor_down(&p, h), down),
                    peer_ns: plan.host_ns(HostId::new(r, h)),
                    peer: Iface {
                        gso_max_size: Some(htb::nic_segment_bytes(topo.host_rate)),
                        ..iface(ifname::host_nic(&p), HOST_NIC_INDEX)
                    },
                });
                ns.addrs.push(AddrPlan {
                    ifindex: down,
                    addr: gw,
                    prefix: 32,
                });
                ns.routes.push(RoutePlan {
                    dst: net32(a.host_addr(r, h)),
                    via: None,
                    oif: down,
                    table: MAIN_TABLE,
                });
                ns.shapers.push(shaper(down, topo.host_rate));
            }
            let (tor_up, core_side) = a.uplink_addrs(r);
            ns.veths.push(VethPlan {
                local: iface(ifname::tor_up(&p), TOR_UP_INDEX),
                peer_ns: core,
                peer: iface(ifname::core_port(&p, r), CORE_PORT_INDEX + r),
            });
            ns.addrs.push(AddrPlan {
                ifindex: TOR_UP_INDEX,
                addr: tor_up,
                prefix: 31,
            });
            ns.routes.push(RoutePlan {
                dst: topo.range,
                via: Some(core_side),
                oif: TOR_UP_INDEX,
                table: MAIN_TABLE,
            });
            ns.shapers.push(shaper(TOR_UP_INDEX, topo.uplink_rate));
            for w in 0..w_count {
                let idx = TOR_OCS_INDEX + w;
                ns.veths.push(VethPlan {
                    local: Iface {
                        name: ifname::tor_ocs(&p, w),
                        index: idx,
                        mac: Some(tor_ocs_mac(r, w)),
                        gso_max_size: None,
                    },
                    peer_ns: ocs,
                    peer: iface(ifname::ocs_port(&p, r, w), plan.ocs_port_index(r, w)),
                });
                let subnet = a.optical_subnet(w);
                ns.addrs.push(AddrPlan {
                    ifindex: idx,
                    addr: a.tor_optical_addr(r, w),
                    prefix: subnet.prefix,
                });
                for j in (0..topo.racks).filter(|&j| j != r) {
                    ns.neighbours.push(NeighPlan {
                        ifindex: idx,
                        addr: a.tor_optical_addr(j, w),
                        mac: tor_ocs_mac(j, w),
                    });
                }
                ns.shapers.push(shaper(idx, topo.ocs_port_rate));
            }
            if w_count > 0 {
                ns.rules.push(RulePlan {
                    tos: OCS_TOS,
                    table: OCS_TABLE,
                    priority: OCS_RULE_PRIORITY,
                });
            }
            plan.namespaces.push(ns);
        }
        let mut core_ns = NsPlan::new(run, role::CORE, NsRole::Core, true);
        for r in 0..topo.racks {
            let port = CORE_PORT_INDEX + r;
            let (tor_up, core_side) = a.uplink_addrs(r);
            core_ns.addrs.push(AddrPlan {
                ifindex: port,
                addr: core_side,
                prefix: 31,
            });
            core_ns.routes.push(RoutePlan {
                dst: a.rack_subnet(r),
                via: Some(tor_up),
                oif: port,
                table: MAIN_TABLE,
            });
            core_ns.shapers.push(shaper(port, topo.uplink_rate));
        }
        plan.namespaces.push(core_ns);
        if w_count > 0 {
            let mut ocs_ns = NsPlan::new(run, role::OCS, NsRole::Ocs, false);
            for r in 0..topo.racks {
                for w in 0..w_count {
                    let port = plan.ocs_port_index(r, w);
                    ocs_ns.shapers.push(shaper(port, topo.ocs_port_rate));
                    ocs_ns.ingress.push(port);
                }
            }
            plan.namespaces.push(ocs_ns);
        }
        plan.flow_queues = match topo.flow_queues {
            Some(q) => FlowQueues::new(q).ok_or(PlanError::FlowQueues(q))?,
            None => FlowQueues::within_budget(plan.shapers().count()),
        };
        Ok(plan)
    }

    /// Drops every shaper: links then carry what the box can move.
    pub fn unshape(&mut self) {
        for ns in &mut self.namespaces {
            ns.shapers.clear();
        }
    }

    /// Index of host `h`'s namespace.
    pub fn host_ns(&self, h: HostId) -> usize {
        (h.rack * self.hosts_per_rack + h.host) as usize
    }

    /// Index of ToR r's namespace.
    pub fn tor_ns(&self, rack: u32) -> usize {
        (self.racks * self.hosts_per_rack + rack) as usize
    }

    /// Index of the core's namespace.
    pub fn core_ns(&self) -> usize {
        (self.racks * self.hosts_per_rack + self.racks) as usize
    }

    /// Index of the OCS namespace (meaningful only with OCS ports).
    pub fn ocs_ns(&self) -> usize {
        self.core_ns() + 1
    }

    /// Drops the ToRs' `tos 0x08 lookup 100` rules, which only the
    /// tc-mirred datapath needs: on eBPF, the ToR program sends marked
    /// packets to a circuit itself and leaves the rest to the main table. A
    /// namespace that never had a rule of its own routes on the kernel's
    /// fast path, without walking the rules (twice per forwarded packet,
    /// with the source check).
    pub fn without_ocs_rules(&mut self) {
        for ns in &mut self.namespaces {
            ns.rules.retain(|r| r.table != OCS_TABLE);
        }
    }

    /// Whether the fabric has an optical circuit switch.
    pub fn has_ocs(&self) -> bool {
        self.wavelengths > 0
    }

    /// Racks.
    pub fn racks(&self) -> u32 {
        self.racks
    }

    /// Hosts per rack.
    pub fn hosts_per_rack(&self) -> u32 {
        self.hosts_per_rack
    }

    /// OCS ports (wavelengths) per rack.
    pub fn wavelengths(&self) -> u32 {
        self.wavelengths
    }

    /// Interface index of OCS port (rack, w) in the OCS namespace.
    pub fn ocs_port_index(&self, rack: u32, w: u32) -> u32 {
        OCS_PORT_INDEX + rack * self.wavelengths + w
    }

    /// The (rack, w) of an OCS port's interface index.
    pub fn ocs_port_of_index(&self, index: u32) -> Option<(u32, u32)> {
        let k = index.checked_sub(OCS_PORT_INDEX)?;
        if self.wavelengths == 0 || k >= self.racks * self.wavelengths {
            return None;
        }
        Some((k / self.wavelengths, k % self.wavelengths))
    }

    /// The address plan.
    pub fn addresses(&self) -> &AddressPlan {
        &self.addresses
    }

    /// The two ends of `cable`, as (namespace index, interface index), or
    /// `None` if the fabric has no such cable.
    pub fn cable_ends(&self, cable: Cable) -> Option<[(usize, u32); 2]> {
        match cable {
            Cable::HostNic(h) if h.rack < self.racks && h.host < self.hosts_per_rack => Some([
                (self.host_ns(h), HOST_NIC_INDEX),
                (self.tor_ns(h.rack), TOR_DOWN_INDEX + h.host),
            ]),
            Cable::Uplink(r) if r < self.racks => Some([
                (self.tor_ns(r), TOR_UP_INDEX),
                (self.core_ns(), CORE_PORT_INDEX + r),
            ]),
            Cable::OcsPort { rack, port } if rack < self.racks && port < self.wavelengths => Some([
                (self.tor_ns(rack), TOR_OCS_INDEX + port),
                (self.ocs_ns(), self.ocs_port_index(rack, port)),
            ]),
            _ => None,
        }
    }

    /// The route that a circuit to rack `dst` on wavelength w adds to the
    /// table [`OCS_TABLE`] of the sending ToR.
    pub fn circuit_route(&self, dst: u32, w: u32) -> RoutePlan {
        RoutePlan {
            dst: self.addresses.rack_subnet(dst),
            via: Some(self.addresses.tor_optical_addr(dst, w)),
            oif: TOR_OCS_INDEX + w,
            table: OCS_TABLE,
        }
    }

    /// Number of veth pairs.
    pub fn veth_count(&self) -> usize {
        self.namespaces.iter().map(|n| n.veths.len()).sum()
    }

    /// Every shaped link.
    pub fn shapers(&self) -> impl Iterator<Item = &ShaperPlan> {
        self.namespaces.iter().flat_map(|n| n.shapers.iter())
    }

    /// The flow queues of every shaped link.
    pub fn flow_queues(&self) -> FlowQueues {
        self.flow_queues
    }
}

/// The main routing table.
pub const MAIN_TABLE: u32 = 254;

fn iface(name: String, index: u32) -> Iface {
    Iface {
        name,
        index,
        mac: None,
        gso_max_size: None,
    }
}

fn net32(a: Ipv4Addr) -> Ipv4Net {
    Ipv4Net { addr: a, prefix: 32 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::names::IFNAME_MAX;
    use crate::units::{Bytes, Nanos};
    use std::collections::BTreeSet;

    fn topo(racks: u32, hosts: u32, w: u32) -> Topology {
        Topology::builder("t", racks, hosts)
            .scale(10.0)
            .uplink_rate(Bps(500_000_000))
            .ocs(w, Bps(2_000_000_000), Nanos::from_millis(1), Bytes(10_000_000))
            .build()
            .unwrap()
    }

    fn plan(racks: u32, hosts: u32, w: u32) -> FabricPlan {
        FabricPlan::new(&topo(racks, hosts, w), "ab12".parse().unwrap()).unwrap()
    }

    #[test]
    fn one_namespace_per_host_tor_core_and_ocs() {
        let p = plan(16, 8, 1);
        assert_eq!(p.namespaces.len(), 128 + 16 + 2);
        assert_eq!(p.veth_count(), 128 + 16 + 16);
        assert_eq!(
            p.namespaces[p.host_ns(HostId::new(3, 5))].role,
            NsRole::Host(HostId::new(3, 5))
        );
        assert_eq!(p.namespaces[p.tor_ns(15)].role, NsRole::Tor(15));
        assert_eq!(p.namespaces[p.core_ns()].role, NsRole::Core);
        assert_eq!(p.namespaces[p.ocs_ns()].role, NsRole::Ocs);
        assert_eq!(p.namespaces[p.core_ns()].name, "ocslab-ab12-core");
        let names: BTreeSet<_> = p.namespaces.iter().map(|n| &n.name).collect();
        assert_eq!(names.len(), p.namespaces.len(), "namespace names are unique");
        let no_ocs = plan(2, 2, 0);
        assert_eq!(no_ocs.namespaces.len(), 4 + 2 + 1);
        assert!(!no_ocs.has_ocs());
    }

    #[test]
    fn an_unshaped_plan_drops_the_shapers_and_nothing_else() {
        let shaped = plan(4, 2, 2);
        let mut p = shaped.clone();
        p.unshape();
        assert!(shaped.shapers().count() > 0);
        assert_eq!(p.shapers().count(), 0);
        for (a, b) in p.namespaces.iter().zip(&shaped.namespaces) {
            assert_eq!(
                (&a.routes, &a.ingress, &a.addrs),
                (&b.routes, &b.ingress, &b.addrs),
                "{}",
                a.name
            );
        }
    }

    #[test]
    fn every_link_gets_the_topologys_flow_queues_or_what_the_budget_allows() {
        // 128 hosts: 128 NICs, 128 ToR ports, 16 uplinks each way, 16 OCS
        // ports each end: 320 links, so 16 queues each within 8,192.
        let p = plan(16, 8, 1);
        assert_eq!(p.shapers().count(), 320);
        assert_eq!(p.flow_queues().count(), 16);
        let set = |q| {
            let t = Topology::builder("t", 16, 8)
                .uplink_rate(Bps(500_000_000))
                .flow_queues(q)
                .build()
                .unwrap();
            FabricPlan::new(&t, "ab12".parse().unwrap())
        };
        assert_eq!(set(64).unwrap().flow_queues().count(), 64);
        assert_eq!(set(1).unwrap().flow_queues(), FlowQueues::ONE);
        // A topology built in code past the file's validation.
        let mut odd = topo(16, 8, 1);
        odd.flow_queues = Some(48);
        let e = FabricPlan::new(&odd, "ab12".parse().unwrap()).unwrap_err();
        assert!(matches!(e, PlanError::FlowQueues(48)), "{e}");
    }

    #[test]
    fn only_host_nics_cap_their_gso_segments_at_a_millisecond_of_their_rate() {
        let t = topo(4, 3, 2);
        let p = FabricPlan::new(&t, "ab12".parse().unwrap()).unwrap();
        let mut capped = 0;
        for ns in &p.namespaces {
            for v in &ns.veths {
                assert_eq!(v.local.gso_max_size, None, "{}", v.local.name);
                let host_nic = matches!(p.namespaces[v.peer_ns].role, NsRole::Host(_));
                let want = host_nic.then(|| htb::nic_segment_bytes(t.host_rate));
                assert_eq!(v.peer.gso_max_size, want, "{}", v.peer.name);
                capped += usize::from(host_nic);
            }
        }
        assert_eq!(capped, 12, "one NIC per host");
    }

    #[test]
    fn interface_names_and_indexes_are_unique_per_namespace_and_short() {
        let p = plan(4, 3, 2);
        let mut per_ns: Vec<BTreeSet<(String, u32)>> = vec![BTreeSet::new(); p.namespaces.len()];
        for (i, ns) in p.namespaces.iter().enumerate() {
            for v in &ns.veths {
                for (n, f) in [(i, &v.local), (v.peer_ns, &v.peer)] {
                    assert!(f.name.len() <= IFNAME_MAX, "{}", f.name);
                    assert!(f.index > 1, "index 1 is lo");
                    assert!(per_ns[n].iter().all(|(nm, ix)| *nm != f.name && *ix != f.index));
                    per_ns[n].insert((f.name.clone(), f.index));
                }
            }
        }
        // Every host has exactly its NIC; the OCS has one port per (rack, w).
        assert!(per_ns[..12].iter().all(|s| s.len() == 1));
        assert_eq!(per_ns[p.ocs_ns()].len(), 8);
        assert_eq!(p.ocs_port_of_index(p.ocs_port_index(3, 1)), Some((3, 1)));
        assert_eq!(p.ocs_port_of_index(p.ocs_port_index(3, 1) + 1), None);
    }

    #[test]
    fn every_shaped_interface_exists_and_both_ends_of_every_link_are_shaped() {
        let p = plan(3, 2, 1);
        let t = topo(3, 2, 1);
        let mut ends = Vec::new();
        for (i, ns) in p.namespaces.iter().enumerate() {
            for v in &ns.veths {
                ends.push((i, v.local.index));
                ends.push((v.peer_ns, v.peer.index));
            }
        }
        let shaped: Vec<(usize, u32)> = p
            .namespaces
            .iter()
            .enumerate()
            .flat_map(|(i, ns)| ns.shapers.iter().map(move |s| (i, s.ifindex)))
            .collect();
        assert_eq!(shaped.len(), ends.len());
        for e in &ends {
            assert!(shaped.contains(e), "{e:?} unshaped");
        }
        let tor = &p.namespaces[p.tor_ns(0)];
        let up = tor.shapers.iter().find(|s| s.ifindex == TOR_UP_INDEX).unwrap();
        assert_eq!(up.rate, t.uplink_rate);
        let nic = &p.namespaces[p.host_ns(HostId::new(2, 1))].shapers[0];
        assert_eq!(nic.rate, t.host_rate);
    }

    #[test]
    fn routing_reaches_every_rack_without_default_routes() {
        let p = plan(3, 2, 1);
        let a = p.addresses().clone();
        for ns in &p.namespaces {
            for r in &ns.routes {
                assert!(r.dst.prefix > 0, "{}: default route", ns.name);
            }
        }
        // Hosts: the range via their ToR.
        let h = &p.namespaces[p.host_ns(HostId::new(1, 0))];
        assert!(h
            .routes
            .iter()
            .any(|r| r.dst.prefix == 15 && r.via == Some(a.tor_rack_addr(1))));
        // Core: one route per rack subnet, via that rack's ToR.
        let core = &p.namespaces[p.core_ns()];
        for r in 0..3 {
            assert!(core
                .routes
                .iter()
                .any(|x| x.dst == a.rack_subnet(r) && x.via == Some(a.uplink_addrs(r).0)));
        }
        // ToRs: the policy rule, and static neighbours for the other ToRs' optical addresses.
        let tor = &p.namespaces[p.tor_ns(2)];
        assert_eq!(
            tor.rules,
            vec![RulePlan {
                tos: 0x08,
                table: 100,
                priority: 100
            }]
        );
        assert_eq!(tor.neighbours.len(), 2);
        assert!(tor
            .neighbours
            .iter()
            .any(|n| n.addr == a.tor_optical_addr(0, 0) && n.mac == tor_ocs_mac(0, 0)));
        let c = p.circuit_route(2, 0);
        assert_eq!(c.dst, a.rack_subnet(2));
        assert_eq!(c.via, Some(a.tor_optical_addr(2, 0)));
        assert_eq!(c.table, OCS_TABLE);
    }

    #[test]
    fn the_ebpf_plan_has_no_policy_rule_and_nothing_else_differs() {
        let full = plan(3, 2, 1);
        let mut ebpf = full.clone();
        ebpf.without_ocs_rules();
        assert!(full.namespaces.iter().any(|ns| !ns.rules.is_empty()));
        for (a, b) in full.namespaces.iter().zip(&ebpf.namespaces) {
            assert!(b.rules.is_empty(), "{}", b.name);
            assert_eq!(a.routes, b.routes);
            assert_eq!(a.shapers, b.shapers);
            assert_eq!(a.neighbours, b.neighbours);
        }
    }

    #[test]
    fn too_many_wavelengths_is_refused() {
        let t = topo(2, 2, MAX_WAVELENGTHS + 1);
        assert_eq!(
            FabricPlan::new(&t, "0001".parse().unwrap()),
            Err(PlanError::TooManyWavelengths(MAX_WAVELENGTHS + 1))
        );
    }
}
