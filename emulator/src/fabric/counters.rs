//! Reading the fabric's byte counters: every ToR's EPS uplink (the ToR end,
//! both directions) and every OCS port (the crossbar end, both directions),
//! from the kernel's link statistics over rtnetlink.
//!
//! A [`CounterReader`] owns one rtnetlink socket per namespace it reads
//! (each opened inside that namespace), so it can live on another thread
//! than the [`super::Fabric`] it came from: a sampler reads it at an
//! interval without blocking whoever drives the run. Reading is read-only.

use super::messages;
use super::netlink::Rtnl;
use super::plan::{FabricPlan, NsRole, TOR_UP_INDEX};
use super::{clock, FabricCounters, FabricError, OcsPortCounters, UplinkCounters};

/// Reads the byte counters of one fabric's uplinks and OCS ports.
#[derive(Debug)]
pub struct CounterReader {
    plan: FabricPlan,
    /// (namespace index in the plan, a socket opened inside it).
    socks: Vec<(usize, Rtnl)>,
}

impl CounterReader {
    /// A reader over `socks` (one per ToR namespace, and the OCS namespace if any).
    pub(super) fn new(plan: FabricPlan, socks: Vec<(usize, Rtnl)>) -> CounterReader {
        CounterReader { plan, socks }
    }

    /// The namespaces a reader needs, as indices into the plan: every
    /// ToR's, then the OCS's if the fabric has one.
    pub(super) fn namespaces(plan: &FabricPlan) -> Vec<usize> {
        let mut wanted: Vec<usize> = (0..plan.racks()).map(|r| plan.tor_ns(r)).collect();
        if plan.has_ocs() {
            wanted.push(plan.ocs_ns());
        }
        wanted
    }

    /// One reading of every counter, stamped with [`clock::now`] (taken
    /// before the first dump, so intervals between readings are comparable).
    pub fn read(&mut self) -> Result<FabricCounters, FabricError> {
        let mut out = FabricCounters {
            at: clock::now(),
            ..Default::default()
        };
        for (i, sock) in &mut self.socks {
            collect(&self.plan, *i, sock, &mut out)?;
        }
        out.uplinks.sort_by_key(|u| u.rack);
        out.ocs_ports.sort_by_key(|p| (p.rack, p.port));
        Ok(out)
    }
}

/// Adds the counters of namespace `i` (read through `sock`) to `out`.
pub(super) fn collect(
    plan: &FabricPlan,
    i: usize,
    sock: &mut Rtnl,
    out: &mut FabricCounters,
) -> Result<(), FabricError> {
    let links = sock.dump(messages::dump_links(), "reading link counters")?;
    for m in links {
        let netlink_packet_route::RouteNetlinkMessage::NewLink(l) = m else {
            continue;
        };
        let (index, _, rx, tx) = messages::link_counters(&l);
        match plan.namespaces[i].role {
            NsRole::Tor(rack) if index == TOR_UP_INDEX => out.uplinks.push(UplinkCounters {
                rack,
                up_bytes: tx,
                down_bytes: rx,
            }),
            NsRole::Ocs => {
                if let Some((rack, port)) = plan.ocs_port_of_index(index) {
                    out.ocs_ports.push(OcsPortCounters {
                        rack,
                        port,
                        from_rack_bytes: rx,
                        to_rack_bytes: tx,
                    });
                }
            }
            _ => {}
        }
    }
    Ok(())
}
