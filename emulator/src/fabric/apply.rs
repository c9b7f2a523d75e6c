//! The runner that turns a [`FabricPlan`] into kernel objects, in three
//! phases separated by barriers, each spread over a few threads:
//!
//! 1. namespaces: each is made by a worker thread (`unshare` + bind mount),
//!    which writes its sysctls (IPv6 off, `rp_filter` off, forwarding on for
//!    routers), opens the namespace's rtnetlink socket and sets `lo` up;
//! 2. links: every namespace that owns veth pairs creates them in one
//!    netlink batch, the peer ends going straight into their namespace
//!    (`IFLA_NET_NS_FD`) with their planned index, MAC and `up` flag;
//! 3. configuration: per namespace, one batch of addresses, routes, rules,
//!    neighbours, htb qdiscs and classes, and ingress qdiscs.
//!
//! The kernel serialises rtnetlink under one lock, so more threads than
//! cores buy nothing; the win is batching (see [`super::netlink`]).

use super::htb;
use super::messages;
use super::netlink::{NetlinkError, Request, Rtnl};
use super::netns::{self, NetNs, NetnsError};
use super::plan::{FabricPlan, NsPlan, NsRole};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// A failure while applying a plan.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// Making or entering a namespace, or writing its sysctls.
    #[error(transparent)]
    Netns(#[from] NetnsError),
    /// A netlink request.
    #[error(transparent)]
    Netlink(#[from] NetlinkError),
}

/// What exists after applying: the namespaces (in plan order) and their
/// open rtnetlink sockets.
pub struct Applied {
    /// One per planned namespace.
    pub namespaces: Vec<NetNs>,
    /// One socket per namespace.
    pub sockets: Vec<Rtnl>,
}

/// Runs `f(i)` for i in 0..n over `threads` threads; the first error wins.
fn par_for<T: Send, E: Send>(
    n: usize,
    threads: usize,
    f: impl Fn(usize) -> Result<T, E> + Sync,
) -> Result<Vec<T>, E> {
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<Result<T, E>>>> = (0..n).map(|_| Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..threads.clamp(1, n.max(1)) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    break;
                }
                let r = f(i);
                let failed = r.is_err();
                if let Ok(mut slot) = slots[i].lock() {
                    *slot = Some(r);
                }
                if failed {
                    // Stop handing out work; others finish their current item.
                    next.store(n, Ordering::Relaxed);
                }
            });
        }
    });
    let mut out = Vec::with_capacity(n);
    let mut first_err = None;
    for slot in slots {
        match slot.into_inner().ok().flatten() {
            Some(Ok(v)) => out.push(v),
            Some(Err(e)) => {
                first_err.get_or_insert(e);
            }
            None => {}
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

fn sysctls(ns: &NsPlan) -> Result<(), NetnsError> {
    let name = ns.name.as_str();
    for (key, value, optional) in [
        // No IPv6 on the links made later: its link-local chatter (ND, MLD)
        // would cross OCS ports and uplinks and pollute the byte counters.
        // (`all` is left alone: writing it costs 0.3 ms per namespace and
        // only `lo` exists yet.)
        ("ipv6/conf/default/disable_ipv6", "1", true),
        // A circuit's packets arrive on the optical port while the reverse
        // route points at the core: strict reverse-path filtering would drop them.
        ("ipv4/conf/all/rp_filter", "0", false),
        ("ipv4/conf/default/rp_filter", "0", false),
    ] {
        netns::write_sysctl(name, key, value, optional)?;
    }
    if let Some(tcp) = &ns.tcp {
        for (key, value, field) in &tcp.sysctls {
            netns::write_sysctl(name, key, value, false).map_err(|e| NetnsError {
                name: format!(
                    "{} (the topology's `{field}`; this kernel may not have it)",
                    e.name
                ),
                ..e
            })?;
        }
    }
    if ns.forwarding {
        netns::write_sysctl(name, "ipv4/ip_forward", "1", false)?;
        netns::write_sysctl(name, "ipv4/conf/all/send_redirects", "0", false)?;
        netns::write_sysctl(name, "ipv4/conf/default/send_redirects", "0", false)?;
    }
    Ok(())
}

fn role_label(ns: &NsPlan, ifindex: u32) -> String {
    format!("interface {ifindex} of {}", ns.name)
}

/// The configuration batch of namespace `i` of `plan` (phase 3): peer ends
/// of veth pairs made from other namespaces are set up first.
pub fn config_requests(plan: &FabricPlan, i: usize) -> Vec<Request> {
    let ns = &plan.namespaces[i];
    let mut reqs: Vec<Request> = plan
        .namespaces
        .iter()
        .flat_map(|o| o.veths.iter())
        .filter(|v| v.peer_ns == i)
        .map(|v| messages::link_up(v.peer.index, &v.peer.name))
        .collect();
    reqs.extend(ns.addrs.iter().map(messages::address));
    reqs.extend(
        ns.routes
            .iter()
            .map(|r| messages::add_host_route(r, ns.tcp.as_ref())),
    );
    reqs.extend(ns.rules.iter().map(messages::rule));
    reqs.extend(ns.neighbours.iter().map(messages::neighbour));
    for s in &ns.shapers {
        let what = role_label(ns, s.ifindex);
        reqs.extend(htb::link(
            s.ifindex,
            s.rate,
            s.leaf_limit,
            plan.flow_queues(),
            &what,
        ));
    }
    for &i in &ns.ingress {
        reqs.push(messages::ingress_qdisc(i, &role_label(ns, i)));
    }
    reqs
}

/// Builds every namespace, link and setting of `plan` using `threads`
/// threads. On error, what was made stays (the caller removes the run's
/// namespaces from its ledger).
pub fn apply(plan: &FabricPlan, threads: usize) -> Result<Applied, ApplyError> {
    let n = plan.namespaces.len();
    let t0 = std::time::Instant::now();
    // Phase 1: namespaces, sysctls, sockets. Creating the mount point on
    // /run/netns waits on the file system as much as on a CPU, so this
    // phase overlaps more threads than there are cores.
    let made = par_for(n, threads * 2, |i| -> Result<(NetNs, Rtnl), ApplyError> {
        let ns = &plan.namespaces[i];
        let (handle, sock) = netns::create_named(&ns.name, || {
            sysctls(ns)?;
            let mut sock = Rtnl::open(&ns.name).map_err(|e| NetnsError {
                what: "opening rtnetlink socket in",
                name: ns.name.clone(),
                source: e.source,
            })?;
            Ok((sock.execute(vec![messages::loopback_up()]), sock))
        })?;
        let (lo, sock) = sock;
        lo?;
        Ok((handle, sock))
    })?;
    let (namespaces, sockets): (Vec<NetNs>, Vec<Rtnl>) = made.into_iter().unzip();
    let t1 = std::time::Instant::now();
    let sockets: Vec<Mutex<Rtnl>> = sockets.into_iter().map(Mutex::new).collect();
    let with_sock = |i: usize, reqs: Vec<Request>| -> Result<(), ApplyError> {
        if reqs.is_empty() {
            return Ok(());
        }
        let mut guard = sockets[i].lock().unwrap_or_else(|p| p.into_inner());
        guard.execute(reqs)?;
        Ok(())
    };
    // Phase 2: veth pairs, from the namespaces that own them.
    par_for(n, threads, |i| {
        let ns = &plan.namespaces[i];
        let reqs = ns
            .veths
            .iter()
            .map(|v| {
                let peer = &namespaces[v.peer_ns];
                messages::veth(v, peer.raw_fd(), peer.name())
            })
            .collect();
        with_sock(i, reqs)
    })?;
    let t2 = std::time::Instant::now();
    // Phase 3: everything inside each namespace.
    par_for(n, threads, |i| with_sock(i, config_requests(plan, i)))?;
    let t3 = std::time::Instant::now();
    tracing::debug!(
        namespaces_s = (t1 - t0).as_secs_f64(),
        links_s = (t2 - t1).as_secs_f64(),
        config_s = (t3 - t2).as_secs_f64(),
        "fabric applied"
    );
    let sockets = sockets
        .into_iter()
        .map(|m| m.into_inner().unwrap_or_else(|p| p.into_inner()))
        .collect();
    Ok(Applied { namespaces, sockets })
}

/// Whether a role keeps its socket after the build (ToRs, core and OCS are
/// used for circuits and counters; hosts are not).
pub fn keeps_socket(role: NsRole) -> bool {
    !matches!(role, NsRole::Host(_))
}
