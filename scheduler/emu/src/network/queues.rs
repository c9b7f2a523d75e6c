//! Which flow queue each flow takes on the shaped links.
//!
//! Every shaped link of the kernel fabric splits its data over `count`
//! queues served in turns, and picks a packet's queue from its source port
//! (docs/fabric.md, flow queues). Left to the kernel's ephemeral ports, two
//! flows that meet at a link share a queue by chance (5 flows into one host
//! over 128 queues: 7.6 %), and then each gets half of what the fluid model
//! gives it. The scheduler sees every flow, so it picks the queue instead:
//! for each new flow, the queue that the fewest flows already hold on the
//! busiest of the links the flow may cross, and the agent binds a source
//! port that hashes to it ([`ocslab_agent::protocol::FlowQueue`]). Flows
//! then share a queue only on a link that carries as many flows as it has
//! queues.

use ocslab_agent::protocol::FlowQueue;
use ocslab_core::model::coflow::{FlowId, FlowSpec};
use ocslab_core::net::links::{LinkId, LinkMap};
use std::collections::BTreeMap;

/// The flows' queues, and how many flows hold each queue of each link.
#[derive(Clone, Debug)]
pub(super) struct QueuePicker {
    count: u16,
    links: LinkMap,
    /// OCS ports per rack.
    ports: u32,
    /// Flows per (link, queue), `count` entries per link.
    held: Vec<u32>,
    /// Each flow with a queue: that queue and the links it was counted on.
    flows: BTreeMap<FlowId, (u16, Vec<LinkId>)>,
    /// Where ties start: the queue after the last one picked.
    next: u16,
}

impl QueuePicker {
    /// A picker for links of `count` queues each (`None` for one queue:
    /// there is nothing to pick).
    pub(super) fn new(links: LinkMap, ports: u32, count: u16) -> Option<QueuePicker> {
        (count > 1 && count.is_power_of_two()).then(|| QueuePicker {
            count,
            held: vec![0; links.len() * usize::from(count)],
            links,
            ports,
            flows: BTreeMap::new(),
            next: 0,
        })
    }

    /// The queue of flow `spec`, picked now if it has none: of the queues,
    /// the one the fewest flows hold on the busiest link the flow may
    /// cross (its EPS route, and between racks every circuit of its rack's
    /// ports, since a marked flow falls back to EPS while its circuit is
    /// dark), then the fewest over all those links, then the first from
    /// the one after the last pick. Ties go round rather than to the
    /// lowest queue because a sender's port stays taken for a minute after
    /// its flow (TIME_WAIT), and each queue has a few hundred ports.
    ///
    /// Also whether some link of the flow already carries a flow in that
    /// queue (it has more flows than queues).
    pub(super) fn pick(&mut self, spec: &FlowSpec) -> (FlowQueue, bool) {
        let count = self.count;
        if let Some(&(index, _)) = self.flows.get(&spec.id) {
            return (FlowQueue { index, count }, false);
        }
        let mut links: Vec<LinkId> = self.links.eps_route(spec.src, spec.dst).as_slice().to_vec();
        if spec.src.rack != spec.dst.rack {
            for port in 0..self.ports {
                links.extend_from_slice(self.links.ocs_path(spec.src, spec.dst, port).as_slice());
            }
        }
        links.sort_unstable();
        links.dedup();
        let n = usize::from(count);
        let (busiest, _, turn) = (0..count)
            .map(|q| {
                let held = links.iter().map(|&l| self.held[l as usize * n + usize::from(q)]);
                let turn = q.wrapping_sub(self.next) & (count - 1);
                (held.clone().max().unwrap_or(0), held.sum::<u32>(), turn)
            })
            .min()
            .unwrap_or_default();
        let index = (turn + self.next) & (count - 1);
        for &l in &links {
            self.held[l as usize * n + usize::from(index)] += 1;
        }
        self.flows.insert(spec.id, (index, links));
        self.next = (index + 1) & (count - 1);
        (FlowQueue { index, count }, busiest > 0)
    }

    /// Flow `id` is gone (finished, lost, or to be started afresh): its
    /// queue is free again on its links.
    pub(super) fn release(&mut self, id: FlowId) {
        if let Some((index, links)) = self.flows.remove(&id) {
            let n = usize::from(self.count);
            for l in links {
                let held = &mut self.held[l as usize * n + usize::from(index)];
                *held = held.saturating_sub(1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ocslab_core::coflow::FabricParams;
    use ocslab_core::model::coflow::CoflowId;
    use ocslab_core::topology::Topology;
    use ocslab_core::{Bytes, HostId};
    use std::path::Path;

    fn topology(text: &str) -> FabricParams {
        FabricParams::from(&Topology::parse(text, Path::new("t.toml")).unwrap())
    }

    /// `racks` × `hosts` hosts, 4:1 oversubscribed, one OCS port per rack.
    fn fabric(racks: u32, hosts: u32) -> FabricParams {
        topology(&format!(
            r#"name = "t"
racks = {racks}
hosts_per_rack = {hosts}
slots_per_host = 1
[eps]
host_rate = "1Gbit/s"
oversubscription = 4.0
[ocs]
ports_per_rack = 1
port_rate = "4Gbit/s"
reconfig_delay = "1ms"
elephant_threshold = "10MB"
"#
        ))
    }

    fn picker(count: u16) -> QueuePicker {
        let fabric = fabric(2, 8);
        QueuePicker::new(LinkMap::new(&fabric), fabric.ocs_ports, count).unwrap()
    }

    fn flow(id: u64, src: (u32, u32), dst: (u32, u32)) -> FlowSpec {
        FlowSpec {
            id: FlowId(id),
            coflow: CoflowId(1),
            src: HostId::new(src.0, src.1),
            dst: HostId::new(dst.0, dst.1),
            bytes: Bytes(1_000_000),
            weight: 1,
        }
    }

    #[test]
    fn flows_into_one_host_take_queues_of_their_own_while_there_are_enough() {
        let mut p = picker(8);
        // Seven senders of rack 0 and one of rack 1 into r0h0.
        let mut queues: Vec<u16> = (1..8)
            .map(|h| p.pick(&flow(h, (0, h as u32), (0, 0))).0.index)
            .collect();
        let (eighth, shared) = p.pick(&flow(8, (1, 0), (0, 0)));
        queues.push(eighth.index);
        assert!(!shared, "the eighth still finds a queue to itself");
        let mut distinct = queues.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), 8, "{queues:?}");
        // A ninth must share; it takes a queue one flow holds, not two.
        let (ninth, shared) = p.pick(&flow(9, (1, 1), (0, 0)));
        let ninth = ninth.index;
        assert!(shared, "the ninth is told it shares");
        assert_eq!(queues.iter().filter(|&&q| q == ninth).count(), 1);
        let tenth = p.pick(&flow(10, (1, 2), (0, 0))).0.index;
        assert_ne!(tenth, ninth, "the next shares another queue");
    }

    #[test]
    fn a_released_queue_is_picked_again_and_a_flow_keeps_its_own() {
        let mut p = picker(4);
        let q: Vec<u16> = (0..4)
            .map(|i| p.pick(&flow(i, (0, 0), (0, 1 + i as u32))).0.index)
            .collect();
        assert_eq!(q, [0, 1, 2, 3], "one sender's flows spread over its NIC's queues");
        assert_eq!(
            p.pick(&flow(2, (0, 0), (0, 3))).0.index,
            2,
            "asked again, the same"
        );
        p.release(FlowId(2));
        p.release(FlowId(2));
        assert_eq!(p.pick(&flow(7, (0, 0), (0, 5))).0.index, 2);
    }

    #[test]
    fn flows_that_meet_nowhere_may_share_a_queue_and_ties_go_round() {
        let mut p = picker(4);
        let q: Vec<u16> = (1..=3)
            .map(|i| p.pick(&flow(i, (0, 2), (0, 3))).0.index)
            .collect();
        assert_eq!(q, [0, 1, 2]);
        // Flows between other hosts meet none of those: every queue ties,
        // and the tie goes to the one after the last pick.
        assert_eq!(p.pick(&flow(4, (0, 0), (0, 1))).0.index, 3);
        assert_eq!(
            p.pick(&flow(5, (0, 4), (0, 5))).0.index,
            0,
            "held only where flow 5 does not go"
        );
        // Between racks, a flow crosses the uplinks and the OCS port too.
        let c = p.pick(&flow(6, (0, 6), (1, 0))).0.index;
        let d = p.pick(&flow(7, (0, 7), (1, 1))).0.index;
        assert_ne!(c, d, "they meet at rack 0's uplink and OCS port");
    }

    #[test]
    fn one_queue_per_link_leaves_nothing_to_pick() {
        let t = fabric(1, 2);
        assert!(QueuePicker::new(LinkMap::new(&t), 0, 1).is_none());
    }
}
