//! [`NetworkModel`]: what the simulation driver needs from a network — the
//! fixed contract of [`crate::net::FluidNetwork`] as a trait, so the driver
//! runs over the fluid model or over a simple stand-in
//! ([`super::FixedRateNetwork`]) alike.

use crate::net::links::LinkKind;
use crate::net::{FluidNetwork, NetEvent, NetStats, NetTimeline};
use crate::LoadSampling;
use ocslab_core::engine::{Link, LinkLoad};
use ocslab_core::model::coflow::FlowSpec;
use ocslab_core::Nanos;

/// A flow-level network the simulation driver can run against.
pub trait NetworkModel {
    /// Flows join the network at `now` (never before the last advance).
    fn add_flows(&mut self, now: Nanos, flows: &[FlowSpec]);
    /// Like [`NetworkModel::add_flows`], but the model may leave its rates
    /// unsolved until [`NetworkModel::settle`].
    fn add_flows_unsettled(&mut self, now: Nanos, flows: &[FlowSpec]) {
        self.add_flows(now, flows)
    }
    /// When the next event happens if no flow is added; `None` when idle.
    fn next_event_at(&self) -> Option<Nanos>;
    /// Moves to `now`, returning what happened on the way, in time order.
    fn advance_to(&mut self, now: Nanos) -> Vec<NetEvent>;
    /// Like [`NetworkModel::advance_to`], but the model may leave its
    /// rates unsolved until [`NetworkModel::settle`] (the driver adds the
    /// flows an instant's events start, then settles once).
    fn advance_unsettled(&mut self, now: Nanos) -> Vec<NetEvent> {
        self.advance_to(now)
    }
    /// Solves what [`NetworkModel::advance_unsettled`] left unsolved.
    fn settle(&mut self) {}
    /// Whether [`NetworkModel::set_link`] takes links down.
    fn takes_links_down(&self) -> bool {
        false
    }
    /// Takes `link` down or brings it back at `now` (the time of the last
    /// advance): while it is down, flows whose route crosses it wait. A
    /// model without links ignores it ([`NetworkModel::takes_links_down`]).
    fn set_link(&mut self, _now: Nanos, _link: Link, _up: bool) {}
    /// Totals so far.
    fn stats(&self) -> &NetStats;
    /// The utilization of the links the model tracks, read as `sampling`
    /// says: means since the previous call, or the rates now (empty: the
    /// model does not measure loads; no load samples are fed then).
    fn link_loads(&mut self, _sampling: LoadSampling) -> Vec<LinkLoad> {
        Vec::new()
    }
    /// The circuits and link utilization from 0 to `end`, for plots (empty:
    /// the model records neither).
    fn timeline(&self, _end: Nanos) -> NetTimeline {
        NetTimeline::default()
    }
}

impl NetworkModel for FluidNetwork {
    fn add_flows(&mut self, now: Nanos, flows: &[FlowSpec]) {
        FluidNetwork::add_flows(self, now, flows)
    }
    fn next_event_at(&self) -> Option<Nanos> {
        FluidNetwork::next_event_at(self)
    }
    fn advance_to(&mut self, now: Nanos) -> Vec<NetEvent> {
        FluidNetwork::advance_to(self, now)
    }
    fn advance_unsettled(&mut self, now: Nanos) -> Vec<NetEvent> {
        let mut events = Vec::new();
        FluidNetwork::advance_unsettled_into(self, now, &mut events);
        events
    }
    fn settle(&mut self) {
        FluidNetwork::settle(self)
    }
    fn add_flows_unsettled(&mut self, now: Nanos, flows: &[FlowSpec]) {
        FluidNetwork::add_flows_unsettled(self, now, flows)
    }
    fn takes_links_down(&self) -> bool {
        true
    }
    fn set_link(&mut self, now: Nanos, link: Link, up: bool) {
        let kind = match link {
            Link::HostUp(h) => LinkKind::HostUp(h),
            Link::HostDown(h) => LinkKind::HostDown(h),
            Link::RackUp(r) => LinkKind::TorUp(r),
            Link::RackDown(r) => LinkKind::TorDown(r),
            Link::OcsPort { rack, port } => LinkKind::OcsPort { rack, port },
        };
        FluidNetwork::set_link(self, now, kind, up)
    }
    fn stats(&self) -> &NetStats {
        FluidNetwork::stats(self)
    }
    fn timeline(&self, end: Nanos) -> NetTimeline {
        FluidNetwork::timeline(self, end)
    }
    /// The EPS uplinks', downlinks' and OCS ports' utilization: the mean
    /// since the previous call, or at this instant (the fluid rates are
    /// constant between events).
    fn link_loads(&mut self, sampling: LoadSampling) -> Vec<LinkLoad> {
        let usage = match sampling {
            LoadSampling::Mean => self.usage_mut().mean_since_last(),
            LoadSampling::Instant => self.usage().current().collect(),
        };
        usage
            .into_iter()
            .filter_map(|(link, utilization)| {
                let link = match link {
                    LinkKind::TorUp(r) => Link::RackUp(r),
                    LinkKind::TorDown(r) => Link::RackDown(r),
                    LinkKind::OcsPort { rack, port } => Link::OcsPort { rack, port },
                    LinkKind::HostUp(_) | LinkKind::HostDown(_) => return None,
                };
                Some(LinkLoad {
                    link,
                    utilization: utilization.clamp(0.0, 1.0),
                })
            })
            .collect()
    }
}
