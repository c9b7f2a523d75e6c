//! Plan items as rtnetlink requests: veth pairs, addresses, routes, policy
//! rules, permanent neighbours, the ingress qdisc of an OCS port and the
//! circuit filter (u32 match-all + `mirred egress redirect`). htb lives in
//! [`super::htb`]. Each function is pure: it returns a [`Request`] with a
//! description used in error messages.

use super::netlink::Request;
use super::plan::{AddrPlan, HostTcp, Iface, NeighPlan, RoutePlan, RulePlan, VethPlan, MAIN_TABLE};
use netlink_packet_core::{NLM_F_CREATE, NLM_F_EXCL};
use netlink_packet_route::address::{AddressAttribute, AddressMessage};
use netlink_packet_route::link::{
    InfoData, InfoKind, InfoVeth, LinkAttribute, LinkFlags, LinkInfo, LinkMessage,
};
use netlink_packet_route::neighbour::{
    NeighbourAddress, NeighbourAttribute, NeighbourMessage, NeighbourState,
};
use netlink_packet_route::route::{
    RouteAddress, RouteAttribute, RouteHeader, RouteMessage, RouteMetric, RouteProtocol, RouteScope,
    RouteType,
};
use netlink_packet_route::rule::{RuleAction, RuleAttribute, RuleMessage};
use netlink_packet_route::tc::{
    TcAction, TcActionAttribute, TcActionGeneric, TcActionMirrorOption, TcActionOption, TcActionType,
    TcAttribute, TcBpfFlags, TcFilterBpfOption, TcFilterU32Option, TcHandle, TcMessage, TcMirror,
    TcMirrorActionType, TcOption,
};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use std::net::IpAddr;
use std::os::fd::RawFd;

const CREATE: u16 = NLM_F_CREATE | NLM_F_EXCL;
/// `ETH_P_ALL` in network byte order, as the low half of `tcm_info`.
const ETH_P_ALL_BE: u32 = (0x0003u16).to_be() as u32;
/// Priority of the one circuit filter on an OCS port.
pub const CIRCUIT_PRIO: u32 = 1;
/// The ingress qdisc's handle `ffff:`.
pub const INGRESS_HANDLE: TcHandle = TcHandle {
    major: 0xffff,
    minor: 0,
};

fn link_msg(i: &Iface) -> LinkMessage {
    let mut m = LinkMessage::default();
    m.header.index = i.index;
    m.attributes.push(LinkAttribute::IfName(i.name.clone()));
    if let Some(mac) = i.mac {
        m.attributes.push(LinkAttribute::Address(mac.to_vec()));
    }
    if let Some(size) = i.gso_max_size {
        m.attributes.push(LinkAttribute::GsoMaxSize(size));
    }
    m
}

/// `ip link add LOCAL index I up type veth peer PEER index J netns FD`,
/// with each end's MAC and `gso_max_size` where the plan gives them.
/// The peer cannot be set up in the same request (the kernel opens it
/// before the pair is joined and veth_open fails with ENOTCONN); see
/// [`link_up`].
pub fn veth(v: &VethPlan, peer_ns_fd: RawFd, peer_ns: &str) -> Request {
    let mut peer = link_msg(&v.peer);
    peer.attributes.push(LinkAttribute::NetNsFd(peer_ns_fd));
    let mut m = link_msg(&v.local);
    m.header.flags = LinkFlags::Up;
    m.header.change_mask = LinkFlags::Up;
    m.attributes.push(LinkAttribute::LinkInfo(vec![
        LinkInfo::Kind(InfoKind::Veth),
        LinkInfo::Data(InfoData::Veth(InfoVeth::Peer(peer))),
    ]));
    Request::new(
        RouteNetlinkMessage::NewLink(m),
        CREATE,
        format!(
            "creating veth {} <-> {} (in {peer_ns})",
            v.local.name, v.peer.name
        ),
    )
}

/// `ip link set IF up`.
pub fn link_up(ifindex: u32, name: &str) -> Request {
    let mut m = LinkMessage::default();
    m.header.index = ifindex;
    m.header.flags = LinkFlags::Up;
    m.header.change_mask = LinkFlags::Up;
    Request::new(RouteNetlinkMessage::SetLink(m), 0, format!("setting {name} up"))
}

/// `ip link set lo up`.
pub fn loopback_up() -> Request {
    link_up(1, "lo")
}

/// `ip addr add A/P dev IF`.
pub fn address(a: &AddrPlan) -> Request {
    let mut m = AddressMessage::default();
    m.header.family = AddressFamily::Inet;
    m.header.prefix_len = a.prefix;
    m.header.index = a.ifindex;
    m.attributes.push(AddressAttribute::Local(IpAddr::V4(a.addr)));
    m.attributes.push(AddressAttribute::Address(IpAddr::V4(a.addr)));
    Request::new(
        RouteNetlinkMessage::NewAddress(m),
        CREATE,
        format!(
            "adding address {}/{} on interface {}",
            a.addr, a.prefix, a.ifindex
        ),
    )
}

fn route_msg(r: &RoutePlan) -> RouteMessage {
    let mut m = RouteMessage::default();
    m.header.address_family = AddressFamily::Inet;
    m.header.destination_prefix_length = r.dst.prefix;
    m.header.protocol = RouteProtocol::Static;
    m.header.scope = if r.via.is_some() {
        RouteScope::Universe
    } else {
        RouteScope::Link
    };
    m.header.kind = RouteType::Unicast;
    m.header.table = if r.table < 256 {
        r.table as u8
    } else {
        RouteHeader::RT_TABLE_UNSPEC
    };
    m.attributes
        .push(RouteAttribute::Destination(RouteAddress::Inet(r.dst.addr)));
    if let Some(gw) = r.via {
        m.attributes.push(RouteAttribute::Gateway(RouteAddress::Inet(gw)));
    }
    m.attributes.push(RouteAttribute::Oif(r.oif));
    if r.table != MAIN_TABLE {
        m.attributes.push(RouteAttribute::Table(r.table));
    }
    m
}

fn describe_route(r: &RoutePlan) -> String {
    match r.via {
        Some(gw) => format!("{} via {gw} dev {} table {}", r.dst, r.oif, r.table),
        None => format!("{} dev {} scope link table {}", r.dst, r.oif, r.table),
    }
}

/// `ip route add DST [via GW] dev IF [table T]`.
pub fn add_route(r: &RoutePlan) -> Request {
    add_host_route(r, None)
}

/// `ip route add DST ... initcwnd N congctl ALGO`: a route of a host
/// with its TCP settings, or of a switch (`None`).
pub fn add_host_route(r: &RoutePlan, tcp: Option<&HostTcp>) -> Request {
    let mut m = route_msg(r);
    if let Some(t) = tcp {
        m.attributes.push(RouteAttribute::Metrics(vec![
            RouteMetric::InitCwnd(t.initcwnd),
            RouteMetric::CcAlgo(t.congestion_control.to_string()),
        ]));
    }
    Request::new(
        RouteNetlinkMessage::NewRoute(m),
        CREATE,
        format!("adding route {}", describe_route(r)),
    )
}

/// `ip route del DST ... table T`.
pub fn del_route(r: &RoutePlan) -> Request {
    Request::new(
        RouteNetlinkMessage::DelRoute(route_msg(r)),
        0,
        format!("deleting route {}", describe_route(r)),
    )
}

/// `ip rule add tos T lookup TABLE priority P`.
pub fn rule(r: &RulePlan) -> Request {
    let mut m = RuleMessage::default();
    m.header.family = AddressFamily::Inet;
    m.header.tos = r.tos;
    m.header.action = RuleAction::ToTable;
    m.header.table = if r.table < 256 { r.table as u8 } else { 0 };
    m.attributes.push(RuleAttribute::Table(r.table));
    m.attributes.push(RuleAttribute::Priority(r.priority));
    Request::new(
        RouteNetlinkMessage::NewRule(m),
        CREATE,
        format!(
            "adding rule tos {:#04x} lookup {} priority {}",
            r.tos, r.table, r.priority
        ),
    )
}

/// `ip neigh add A lladdr MAC dev IF nud permanent`.
pub fn neighbour(n: &NeighPlan) -> Request {
    let mut m = NeighbourMessage::default();
    m.header.family = AddressFamily::Inet;
    m.header.ifindex = n.ifindex;
    m.header.state = NeighbourState::Permanent;
    m.header.kind = RouteType::Unicast;
    m.attributes
        .push(NeighbourAttribute::Destination(NeighbourAddress::Inet(n.addr)));
    m.attributes
        .push(NeighbourAttribute::LinkLayerAddress(n.mac.to_vec()));
    Request::new(
        RouteNetlinkMessage::NewNeighbour(m),
        CREATE,
        format!("adding permanent neighbour {} on interface {}", n.addr, n.ifindex),
    )
}

/// `tc qdisc add dev IF ingress`.
pub fn ingress_qdisc(ifindex: u32, what: &str) -> Request {
    let mut m = TcMessage::with_index(ifindex as i32);
    m.header.handle = INGRESS_HANDLE;
    m.header.parent = TcHandle::INGRESS;
    m.attributes.push(TcAttribute::Kind("ingress".into()));
    Request::new(
        RouteNetlinkMessage::NewQueueDiscipline(m),
        CREATE,
        format!("adding ingress qdisc on {what}"),
    )
}

fn circuit_filter_msg(from_ifindex: u32) -> TcMessage {
    let mut m = TcMessage::with_index(from_ifindex as i32);
    m.header.parent = INGRESS_HANDLE;
    m.header.info = (CIRCUIT_PRIO << 16) | ETH_P_ALL_BE;
    m
}

/// `tc filter add dev FROM ingress prio 1 protocol all u32 match u32 0 0
/// action mirred egress redirect dev TO`: a circuit.
pub fn add_circuit(from_ifindex: u32, to_ifindex: u32, what: &str) -> Request {
    let mut m = circuit_filter_msg(from_ifindex);
    let mut generic = TcActionGeneric::default();
    generic.action = TcActionType::Stolen;
    let mut mirror = TcMirror::default();
    mirror.generic = generic;
    mirror.eaction = TcMirrorActionType::EgressRedir;
    mirror.ifindex = to_ifindex;
    let mut action = TcAction::default();
    action.tab = 1;
    action.attributes = vec![
        TcActionAttribute::Kind("mirred".into()),
        TcActionAttribute::Options(vec![TcActionOption::Mirror(TcActionMirrorOption::Parms(mirror))]),
    ];
    m.attributes.push(TcAttribute::Kind("u32".into()));
    m.attributes.push(TcAttribute::Options(vec![
        TcOption::U32(TcFilterU32Option::Selector(super::htb::every_packet())),
        TcOption::U32(TcFilterU32Option::Action(vec![action])),
    ]));
    Request::new(
        RouteNetlinkMessage::NewTrafficFilter(m),
        NLM_F_CREATE,
        format!("adding circuit filter {what}"),
    )
}

/// `tc filter del dev FROM ingress prio 1`: the port goes dark.
pub fn del_circuit(from_ifindex: u32, what: &str) -> Request {
    Request::new(
        RouteNetlinkMessage::DelTrafficFilter(circuit_filter_msg(from_ifindex)),
        0,
        format!("deleting circuit filter {what}"),
    )
}

/// `tc filter add dev IF ingress prio 1 protocol all bpf direct-action fd
/// FD name NAME`: the eBPF datapath's program `name` (loaded, descriptor
/// `prog_fd` in this process) on `ifindex`'s ingress.
pub fn add_bpf_filter(ifindex: u32, prog_fd: RawFd, name: &str, what: &str) -> Request {
    let mut m = circuit_filter_msg(ifindex);
    m.attributes.push(TcAttribute::Kind("bpf".into()));
    m.attributes.push(TcAttribute::Options(vec![
        TcOption::Bpf(TcFilterBpfOption::ProgFd(prog_fd as u32)),
        TcOption::Bpf(TcFilterBpfOption::ProgName(name.into())),
        TcOption::Bpf(TcFilterBpfOption::Flags(TcBpfFlags::DirectAction)),
    ]));
    Request::new(
        RouteNetlinkMessage::NewTrafficFilter(m),
        NLM_F_CREATE,
        format!("attaching BPF program {name} to {what}"),
    )
}

/// The program id of a dumped bpf filter.
pub fn bpf_prog_id(m: &TcMessage) -> Option<u32> {
    m.attributes.iter().find_map(|a| match a {
        TcAttribute::Options(opts) => opts.iter().find_map(|o| match o {
            TcOption::Bpf(TcFilterBpfOption::ProgId(id)) => Some(*id),
            _ => None,
        }),
        _ => None,
    })
}

/// A dump request for the filters on an OCS port's ingress.
pub fn dump_filters(ifindex: u32) -> RouteNetlinkMessage {
    let mut m = TcMessage::with_index(ifindex as i32);
    m.header.parent = INGRESS_HANDLE;
    RouteNetlinkMessage::GetTrafficFilter(m)
}

/// The mirred redirect target of a dumped filter, if it is a circuit.
pub fn circuit_target(m: &TcMessage) -> Option<u32> {
    m.attributes.iter().find_map(|a| match a {
        TcAttribute::Options(opts) => opts.iter().find_map(|o| match o {
            TcOption::U32(TcFilterU32Option::Action(acts)) => acts.iter().find_map(|act| {
                act.attributes.iter().find_map(|aa| match aa {
                    TcActionAttribute::Options(aos) => aos.iter().find_map(|ao| match ao {
                        TcActionOption::Mirror(TcActionMirrorOption::Parms(p)) => Some(p.ifindex),
                        _ => None,
                    }),
                    _ => None,
                })
            }),
            _ => None,
        }),
        _ => None,
    })
}

/// A dump request for every link of a namespace (with counters).
pub fn dump_links() -> RouteNetlinkMessage {
    RouteNetlinkMessage::GetLink(LinkMessage::default())
}

/// (index, name, rx bytes, tx bytes) of a dumped link.
pub fn link_counters(m: &LinkMessage) -> (u32, String, u64, u64) {
    let mut name = String::new();
    let (mut rx, mut tx) = (0, 0);
    for a in &m.attributes {
        match a {
            LinkAttribute::IfName(n) => name = n.clone(),
            LinkAttribute::Stats64(s) => {
                rx = s.rx_bytes;
                tx = s.tx_bytes;
            }
            _ => {}
        }
    }
    (m.header.index, name, rx, tx)
}

#[cfg(test)]
mod tests {
    use super::*;
    use netlink_packet_core::{Emitable, NetlinkHeader, NetlinkMessage, NetlinkPayload};

    fn round_trip(r: Request) -> RouteNetlinkMessage {
        let mut m = NetlinkMessage::new(NetlinkHeader::default(), NetlinkPayload::InnerMessage(r.msg));
        m.finalize();
        let mut buf = vec![0; m.buffer_len()];
        m.serialize(&mut buf);
        match NetlinkMessage::<RouteNetlinkMessage>::deserialize(&buf)
            .unwrap()
            .payload
        {
            NetlinkPayload::InnerMessage(i) => i,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn circuit_filter_round_trips_to_its_target() {
        let back = round_trip(add_circuit(11, 12, "0->1"));
        let RouteNetlinkMessage::NewTrafficFilter(m) = back else {
            panic!("not a filter")
        };
        assert_eq!(circuit_target(&m), Some(12));
        assert_eq!(m.header.info >> 16, CIRCUIT_PRIO);
        assert_eq!(m.header.parent, INGRESS_HANDLE);
    }

    #[test]
    fn table_100_routes_name_their_table() {
        let r = RoutePlan {
            dst: "198.18.2.0/24".parse().unwrap(),
            via: Some("198.19.254.3".parse().unwrap()),
            oif: 100,
            table: 100,
        };
        let RouteNetlinkMessage::NewRoute(m) = round_trip(add_route(&r)) else {
            panic!()
        };
        assert_eq!(m.header.table, 100);
        assert!(m.attributes.contains(&RouteAttribute::Oif(100)));
        let buf_len = m.buffer_len();
        assert!(buf_len > 12);
    }
}
