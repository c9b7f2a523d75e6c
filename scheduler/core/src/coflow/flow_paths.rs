//! [`FlowPaths`]: each active coflow's flow ids and EPS paths, kept by a
//! policy from one call to the next.
//!
//! A policy that reads every active flow at every call (Varys, Aalo,
//! Sincronia: ~35,000 flows on FB2010) spends much of it reading the
//! flows' views, about 150 bytes each, for an id and two hosts. Flows only
//! join a coflow by adding to its known bytes ([`CoflowView::known_bytes`]),
//! so while those stand a coflow's flows are the ones read last time less
//! those that left: progress reads them as gone
//! ([`crate::coflow::Progress::remaining_bytes_by_id`]), or the coflow's
//! set of active flows no longer holds them ([`FlowPaths::active`]).

use crate::coflow::{CoflowView, NetView, Progress};
use crate::model::coflow::{CoflowId, FlowId};
use crate::net::links::Links;
use crate::Bytes;
use std::collections::BTreeMap;

/// The flows of each coflow as last read from a view.
#[derive(Clone, Debug, Default)]
pub struct FlowPaths {
    coflows: BTreeMap<CoflowId, Read>,
    /// Scratch of [`FlowPaths::remaining`]: one coflow's flows' bytes left.
    left: Vec<Option<f64>>,
}

/// One coflow's flows: ids in id order, their EPS paths, and the coflow's
/// known bytes when they were read.
#[derive(Clone, Debug, Default)]
struct Read {
    known: Bytes,
    ids: Vec<FlowId>,
    paths: Vec<Links>,
}

impl FlowPaths {
    /// Forgets the coflows that are no longer in `view`.
    pub fn keep_active(&mut self, view: &NetView) {
        self.coflows.retain(|id, _| view.coflows.contains_key(id));
    }

    /// The ids (in id order) and EPS paths of `coflow`'s flows in `view`,
    /// and of flows of it that have left since they were read: read from
    /// the view again if a flow joined since, or if fewer than half of
    /// those read are left.
    pub fn of(&mut self, view: &NetView, coflow: CoflowId, c: &CoflowView) -> (&[FlowId], &[Links]) {
        let read = Read::of(&mut self.coflows, view, coflow, c);
        (&read.ids, &read.paths)
    }

    /// The flows of `coflow` still in `view`, in id order, each as (id,
    /// EPS path, bytes left as `progress` reads them): [`FlowPaths::of`]
    /// less the flows that have left since they were read.
    pub fn remaining(
        &mut self,
        view: &NetView,
        coflow: CoflowId,
        c: &CoflowView,
        progress: &dyn Progress,
    ) -> impl Iterator<Item = (FlowId, Links, f64)> + '_ {
        let read = Read::of(&mut self.coflows, view, coflow, c);
        self.left.clear();
        progress.remaining_bytes_by_id(view, &read.ids, &mut self.left);
        read.ids
            .iter()
            .zip(&read.paths)
            .zip(&self.left)
            .filter_map(|((&id, &path), &left)| left.map(|left| (id, path, left)))
    }

    /// The flows of `coflow` still in `view`, in id order, each as (id,
    /// EPS path): [`FlowPaths::of`] less the flows that have left since
    /// they were read, told by the coflow's own set of active flows (for a
    /// policy that needs no progress).
    pub fn active<'a>(
        &'a mut self,
        view: &NetView,
        coflow: CoflowId,
        c: &'a CoflowView,
    ) -> impl Iterator<Item = (FlowId, Links)> + 'a {
        let read = Read::of(&mut self.coflows, view, coflow, c);
        // Both in id order, the read ids a superset of the active ones.
        let all = read.ids.len() == c.flows.len();
        let mut active = c.flows.iter().peekable();
        read.ids
            .iter()
            .zip(&read.paths)
            .filter(move |&(id, _)| {
                all || {
                    while active.next_if(|&a| a < id).is_some() {}
                    active.peek() == Some(&id)
                }
            })
            .map(|(&id, &path)| (id, path))
    }
}

impl Read {
    /// `coflow`'s entry in `coflows`, read from `view` again unless it
    /// stands (see [`FlowPaths::of`]).
    fn of<'a>(
        coflows: &'a mut BTreeMap<CoflowId, Read>,
        view: &NetView,
        coflow: CoflowId,
        c: &CoflowView,
    ) -> &'a Read {
        let read = coflows.entry(coflow).or_default();
        let stands =
            read.known == c.known_bytes && !read.ids.is_empty() && read.ids.len() <= 2 * c.flows.len();
        if !stands {
            read.ids.clear();
            read.paths.clear();
            for f in view.flows_of(coflow) {
                read.ids.push(f.spec.id);
                read.paths.push(view.links.eps_path(f.spec.src, f.spec.dst));
            }
            read.known = c.known_bytes;
        }
        read
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coflow::FabricParams;
    use crate::model::coflow::FlowSpec;
    use crate::{Bps, HostId, Nanos};

    fn view() -> NetView {
        NetView::new(FabricParams {
            racks: 2,
            hosts_per_rack: 2,
            host_rate: Bps(8_000),
            uplink_rate: Bps(8_000),
            ocs_ports: 0,
            ocs_port_rate: Bps(0),
            reconfig_delay: Nanos::ZERO,
            elephant_threshold: Bytes(u64::MAX),
            scale: 1.0,
        })
    }

    fn flow(id: u64, src: HostId, dst: HostId) -> FlowSpec {
        FlowSpec {
            id: FlowId(id),
            coflow: CoflowId(1),
            src,
            dst,
            bytes: Bytes(1000),
            weight: 1,
        }
    }

    /// Every active flow is in what `of` gives, with its path, and
    /// nothing but active flows and flows that left; `active` gives exactly
    /// the active flows, as the view lists them.
    fn check(paths: &mut FlowPaths, v: &NetView, left: &[u64]) {
        let c = &v.coflows[&CoflowId(1)];
        let want: Vec<(FlowId, Links)> = v
            .flows_of(CoflowId(1))
            .map(|f| (f.spec.id, v.links.eps_path(f.spec.src, f.spec.dst)))
            .collect();
        assert_eq!(paths.active(v, CoflowId(1), c).collect::<Vec<_>>(), want);
        let (ids, links) = paths.of(v, CoflowId(1), c);
        let active: Vec<FlowId> = v.flows_of(CoflowId(1)).map(|f| f.spec.id).collect();
        let kept: Vec<FlowId> = ids
            .iter()
            .copied()
            .filter(|id| v.flows.get(id).is_some())
            .collect();
        assert_eq!(kept, active);
        for (id, l) in ids.iter().zip(links) {
            match v.flows.get(id) {
                Some(f) => assert_eq!(*l, v.links.eps_path(f.spec.src, f.spec.dst)),
                None => assert!(left.contains(&id.0), "{id:?} neither active nor gone"),
            }
        }
    }

    #[test]
    fn a_coflows_flows_are_read_again_when_one_joins_and_gone_ones_are_kept_a_while() {
        let (a, b, c) = (HostId::new(0, 0), HostId::new(1, 0), HostId::new(1, 1));
        let mut v = view();
        let mut paths = FlowPaths::default();
        for (id, dst) in [(1, b), (2, c), (3, b)] {
            v.insert_flow(flow(id, a, dst), Nanos::ZERO);
        }
        check(&mut paths, &v, &[]);
        // Flow 2 leaves: it is still listed (read as gone), the others stand.
        v.leave_coflow(CoflowId(1), &FlowId(2), false);
        v.flows.remove(&FlowId(2));
        check(&mut paths, &v, &[2]);
        assert_eq!(
            paths
                .of(&v, CoflowId(1), &v.coflows[&CoflowId(1)].clone())
                .0
                .len(),
            3
        );
        // Flow 4 joins: read again, without flow 2.
        v.insert_flow(flow(4, c, a), Nanos::ZERO);
        check(&mut paths, &v, &[]);
        assert_eq!(
            paths.of(&v, CoflowId(1), &v.coflows[&CoflowId(1)].clone()).0,
            &[FlowId(1), FlowId(3), FlowId(4)]
        );
        // Fewer than half of those read left: read again.
        for id in [1, 3] {
            v.leave_coflow(CoflowId(1), &FlowId(id), false);
            v.flows.remove(&FlowId(id));
        }
        check(&mut paths, &v, &[]);
        assert_eq!(
            paths.of(&v, CoflowId(1), &v.coflows[&CoflowId(1)].clone()).0,
            &[FlowId(4)]
        );
    }
}
