//! The links of the fluid model and which of them a path crosses.
//!
//! Per host: NIC up (host → ToR) and NIC down (ToR → host). Per rack: ToR
//! uplink (ToR → core) and downlink (core → ToR); the core itself is
//! non-blocking. Per rack and OCS port: the sending side of the port, whose
//! capacity is one circuit's rate (the receiving side needs no link of its
//! own: it is the sending side of exactly one circuit).
//!
//! - EPS, different racks: NIC up, ToR uplink, ToR downlink, NIC down.
//! - EPS, same rack (also a host to itself): NIC up, NIC down.
//! - OCS on port `w`: NIC up, the circuit's sending side, NIC down.
//!
//! When the ToR uplink is at least the sum of its hosts' NIC rates it can
//! never be the bottleneck (its load is at most the rack's NIC-up load), so
//! paths leave it out: same rates, fewer links for the water-filling.

use super::fabric::FabricParams;
use crate::HostId;
use serde::Serialize;

/// Index of a link in a [`LinkMap`].
pub type LinkId = u32;

/// The links one path crosses (at most four).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Links {
    ids: [LinkId; 4],
    len: u8,
}

impl Links {
    /// The links `ids` (at most four), e.g. for a hand-made test; `None` if more.
    pub fn new(ids: &[LinkId]) -> Option<Links> {
        if ids.len() > 4 {
            return None;
        }
        let mut l = Links::default();
        ids.iter().for_each(|&i| l.push(i));
        Some(l)
    }
    fn push(&mut self, l: LinkId) {
        self.ids[self.len as usize] = l;
        self.len += 1;
    }
    /// The links `keep` keeps, in path order.
    pub fn filtered(&self, keep: impl Fn(LinkId) -> bool) -> Links {
        let mut l = Links::default();
        self.as_slice()
            .iter()
            .filter(|&&i| keep(i))
            .for_each(|&i| l.push(i));
        l
    }
    /// The links, in path order.
    #[inline]
    pub fn as_slice(&self) -> &[LinkId] {
        &self.ids[..self.len as usize]
    }
}

/// What a link is, for reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum LinkKind {
    /// Host NIC, host → ToR.
    HostUp(HostId),
    /// Host NIC, ToR → host.
    HostDown(HostId),
    /// ToR → core.
    TorUp(u32),
    /// Core → ToR.
    TorDown(u32),
    /// Sending side of OCS port `port` of rack `rack`.
    OcsPort {
        /// Rack.
        rack: u32,
        /// Port (wavelength).
        port: u32,
    },
}

/// The link set of one fabric: ids, capacities (bytes per second) and paths.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkMap {
    racks: u32,
    hosts_per_rack: u32,
    ports: u32,
    tor_links_bind: bool,
    capacity: Vec<f64>,
}

impl LinkMap {
    /// The links of `fabric`.
    pub fn new(fabric: &FabricParams) -> LinkMap {
        let hosts = fabric.racks as usize * fabric.hosts_per_rack as usize;
        let racks = fabric.racks as usize;
        let ports = fabric.ocs_ports as usize;
        let mut capacity = Vec::with_capacity(2 * hosts + 2 * racks + racks * ports);
        capacity.extend(std::iter::repeat_n(fabric.host_rate.bytes_per_sec(), 2 * hosts));
        capacity.extend(std::iter::repeat_n(fabric.uplink_rate.bytes_per_sec(), 2 * racks));
        capacity.extend(std::iter::repeat_n(
            fabric.ocs_port_rate.bytes_per_sec(),
            racks * ports,
        ));
        let rack_nics = fabric.host_rate.0 as u128 * fabric.hosts_per_rack as u128;
        LinkMap {
            racks: fabric.racks,
            hosts_per_rack: fabric.hosts_per_rack,
            ports: fabric.ocs_ports,
            tor_links_bind: (fabric.uplink_rate.0 as u128) < rack_nics,
            capacity,
        }
    }

    /// Number of links.
    pub fn len(&self) -> usize {
        self.capacity.len()
    }

    /// Whether there are no links.
    pub fn is_empty(&self) -> bool {
        self.capacity.is_empty()
    }

    /// Capacities in bytes per second, indexed by [`LinkId`].
    pub fn capacities(&self) -> &[f64] {
        &self.capacity
    }

    fn hosts(&self) -> u32 {
        self.racks * self.hosts_per_rack
    }

    fn host_up(&self, h: HostId) -> LinkId {
        h.rack * self.hosts_per_rack + h.host
    }

    fn host_down(&self, h: HostId) -> LinkId {
        self.hosts() + h.rack * self.hosts_per_rack + h.host
    }

    /// The sending side of OCS port `port` of `rack`.
    pub fn ocs_port(&self, rack: u32, port: u32) -> LinkId {
        2 * self.hosts() + 2 * self.racks + rack * self.ports + port
    }

    /// The links an EPS flow from `src` to `dst` crosses.
    pub fn eps_path(&self, src: HostId, dst: HostId) -> Links {
        self.eps(src, dst, self.tor_links_bind)
    }

    /// The links an EPS flow from `src` to `dst` crosses, the ToR links
    /// included even when they cannot bind (the fluid network keeps their
    /// load; [`LinkMap::binding`] says which links limit rates).
    pub fn eps_route(&self, src: HostId, dst: HostId) -> Links {
        self.eps(src, dst, true)
    }

    /// NIC up, the ToR links if the flow leaves its rack and `with_tor`, NIC down.
    fn eps(&self, src: HostId, dst: HostId, with_tor: bool) -> Links {
        let mut l = Links::default();
        l.push(self.host_up(src));
        if src.rack != dst.rack && with_tor {
            l.push(2 * self.hosts() + src.rack);
            l.push(2 * self.hosts() + self.racks + dst.rack);
        }
        l.push(self.host_down(dst));
        l
    }

    /// Per link, whether it can limit a rate: all but the ToR links of a
    /// fabric whose uplinks are at least as fast as a rack's NICs together.
    pub fn binding(&self) -> Vec<bool> {
        let tor = 2 * self.hosts() as usize..2 * (self.hosts() + self.racks) as usize;
        (0..self.len())
            .map(|l| self.tor_links_bind || !tor.contains(&l))
            .collect()
    }

    /// Where the host and ToR links are, when the ToR links never bind and
    /// there are few enough hosts for `ocslab_scheduler::net::pair_matrix`'s matrix: EPS
    /// flows then meet only at NICs, and the rate solver keeps them by host pair.
    pub fn host_pairs(&self) -> Option<HostPairs> {
        let hosts = self.hosts();
        (!self.tor_links_bind && hosts <= HostPairs::MAX_HOSTS).then(|| HostPairs {
            hosts,
            hosts_per_rack: self.hosts_per_rack,
            tor_up: 2 * hosts,
            tor_down: 2 * hosts + self.racks,
        })
    }

    /// The id of the first link `ocslab_scheduler::net::usage::LinkUsage` tracks (the
    /// ToR uplinks, downlinks and OCS ports follow in its order).
    pub fn first_tracked(&self) -> LinkId {
        2 * self.hosts()
    }

    /// The links a flow from `src` to `dst` crosses over the circuit on `port`.
    pub fn ocs_path(&self, src: HostId, dst: HostId, port: u32) -> Links {
        let mut l = Links::default();
        l.push(self.host_up(src));
        l.push(self.ocs_port(src.rack, port));
        l.push(self.host_down(dst));
        l
    }

    /// The id of link `kind`, if the fabric has it (the inverse of [`LinkMap::kind`]).
    pub fn id(&self, kind: LinkKind) -> Option<LinkId> {
        let (h, r) = (self.hosts(), self.racks);
        let has = |x: HostId| x.rack < r && x.host < self.hosts_per_rack;
        match kind {
            LinkKind::HostUp(x) if has(x) => Some(self.host_up(x)),
            LinkKind::HostDown(x) if has(x) => Some(self.host_down(x)),
            LinkKind::TorUp(k) if k < r => Some(2 * h + k),
            LinkKind::TorDown(k) if k < r => Some(2 * h + r + k),
            LinkKind::OcsPort { rack, port } if rack < r && port < self.ports => {
                Some(self.ocs_port(rack, port))
            }
            _ => None,
        }
    }

    /// What link `id` is.
    pub fn kind(&self, id: LinkId) -> Option<LinkKind> {
        let (h, r, p) = (self.hosts(), self.racks, self.ports);
        let host = |i: u32| HostId::new(i / self.hosts_per_rack, i % self.hosts_per_rack);
        Some(match id {
            i if i < h => LinkKind::HostUp(host(i)),
            i if i < 2 * h => LinkKind::HostDown(host(i - h)),
            i if i < 2 * h + r => LinkKind::TorUp(i - 2 * h),
            i if i < 2 * h + 2 * r => LinkKind::TorDown(i - 2 * h - r),
            i if p > 0 && i < 2 * h + 2 * r + r * p => {
                let k = i - 2 * h - 2 * r;
                LinkKind::OcsPort {
                    rack: k / p,
                    port: k % p,
                }
            }
            _ => return None,
        })
    }
}

/// Where the host links and the ToR links of a fabric are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostPairs {
    /// Hosts (NIC up `h` is link `h`, NIC down `hosts + h`).
    pub hosts: u32,
    /// Hosts per rack (host `h` is in rack `h / hosts_per_rack`).
    pub hosts_per_rack: u32,
    /// Link id of rack 0's ToR uplink (rack `r`'s is `tor_up + r`).
    pub tor_up: LinkId,
    /// Link id of rack 0's ToR downlink.
    pub tor_down: LinkId,
}

impl HostPairs {
    /// Largest number of hosts kept as a matrix (two matrices of
    /// `hosts²` weights: 16 MB at this size).
    pub const MAX_HOSTS: u32 = 1024;

    /// The rack of host `host`.
    pub fn rack(&self, host: usize) -> u32 {
        host as u32 / self.hosts_per_rack
    }

    /// The pair `(i, j)` a demand over `links` is, if it goes from NIC up `i`
    /// to NIC down `j` through nothing but its racks' ToR links (left out
    /// when both hosts share a rack).
    pub fn pair_of(&self, links: &[LinkId]) -> Option<(u32, u32)> {
        let n = self.hosts;
        let (&up, &down) = (links.first()?, links.last()?);
        if up >= n || down < n || down >= 2 * n {
            return None;
        }
        let (i, j) = (up, down - n);
        let (ri, rj) = (self.rack(i as usize), self.rack(j as usize));
        let through_tors = match links.len() {
            2 => ri == rj,
            4 => ri != rj && links[1] == self.tor_up + ri && links[2] == self.tor_down + rj,
            _ => false,
        };
        through_tors.then_some((i, j))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Topology;

    #[test]
    fn every_link_id_names_a_kind_and_back() {
        let t = Topology::builder("t", 3, 2)
            .ocs(2, crate::Bps(1_000_000_000), crate::Nanos(1000), crate::Bytes(1))
            .simulation_only()
            .build()
            .expect("valid");
        let map = LinkMap::new(&FabricParams::from(&t));
        for id in 0..map.len() as LinkId {
            let kind = map.kind(id).expect("a link");
            assert_eq!(map.id(kind), Some(id), "{kind:?}");
        }
        assert_eq!(map.id(LinkKind::TorUp(3)), None);
        assert_eq!(map.id(LinkKind::OcsPort { rack: 0, port: 2 }), None);
        assert_eq!(map.id(LinkKind::HostUp(HostId::new(0, 2))), None);
    }
}
