//! HDFS's block placement rule (the default `BlockPlacementPolicy`): where
//! the replicas of a block go, given the host that wrote it. The engine
//! places a job's output by it, and the workload generators place input
//! blocks by it.

use crate::{HostId, Topology};
use rand::Rng;

/// HDFS's default block placement (rack-aware): the first replica on a
/// random host, the second and third on two different hosts of one other
/// random rack; further replicas on random hosts not yet used. With one
/// rack, or too few hosts, replicas go to distinct hosts wherever they fit.
/// Never more replicas than hosts.
pub fn place_replicas(topo: &Topology, n: u32, rng: &mut impl Rng) -> Vec<HostId> {
    let n = (n as usize).min(topo.hosts());
    if n == 0 {
        return Vec::new();
    }
    let first = HostId::new(
        rng.random_range(0..topo.racks),
        rng.random_range(0..topo.hosts_per_rack),
    );
    replicas_after_writer(topo, first, n, rng)
}

/// HDFS's placement of a block whose first replica is on `writer` (the
/// host that wrote it): `writer`, then a host of another random rack, then
/// another host of that rack, then random hosts not yet used; `n` distinct
/// replicas at most (never more than hosts).
pub fn replicas_after_writer(topo: &Topology, writer: HostId, n: usize, rng: &mut impl Rng) -> Vec<HostId> {
    let n = n.min(topo.hosts());
    let mut out = vec![writer];
    if n >= 2 && topo.racks > 1 {
        let mut rack = rng.random_range(0..topo.racks - 1);
        if rack >= writer.rack {
            rack += 1;
        }
        let a = rng.random_range(0..topo.hosts_per_rack);
        out.push(HostId::new(rack, a));
        if n >= 3 && topo.hosts_per_rack > 1 {
            let mut b = rng.random_range(0..topo.hosts_per_rack - 1);
            if b >= a {
                b += 1;
            }
            out.push(HostId::new(rack, b));
        }
    }
    while out.len() < n {
        let h = HostId::new(
            rng.random_range(0..topo.racks),
            rng.random_range(0..topo.hosts_per_rack),
        );
        if !out.contains(&h) {
            out.push(h);
        }
    }
    out
}
