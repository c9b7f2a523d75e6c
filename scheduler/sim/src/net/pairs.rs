//! [`PairFlows`]: the active flows of each coflow's rack pair (coflow,
//! source rack, destination rack), which the fluid network needs to tell
//! when a pair's last flow leaves and which flows a pair plan moves.
//!
//! A pair is found by a hash lookup when a flow joins, and by the index
//! handed back then when it leaves (no lookup). A pair's flows are kept in
//! id order in a vector; the vectors of pairs that emptied are reused.

use super::fasthash::FastMap;
use ocslab_core::coflow::PairKey;
use ocslab_core::model::coflow::FlowId;

/// Active flows per rack pair.
#[derive(Clone, Debug, Default)]
pub(super) struct PairFlows {
    /// The index of each pair with an active flow.
    index: FastMap<PairKey, u32>,
    /// Each pair's flows, in id order (empty for a free index).
    flows: Vec<Vec<FlowId>>,
    /// Indexes of pairs that emptied, for reuse.
    free: Vec<u32>,
}

impl PairFlows {
    /// Flow `id` joins pair `key`; returns the pair's index, for [`PairFlows::leave`].
    pub(super) fn join(&mut self, key: PairKey, id: FlowId) -> u32 {
        let p = match self.index.get(&key) {
            Some(&p) => p,
            None => {
                let p = match self.free.pop() {
                    Some(p) => p,
                    None => {
                        self.flows.push(Vec::new());
                        (self.flows.len() - 1) as u32
                    }
                };
                self.index.insert(key, p);
                p
            }
        };
        let flows = &mut self.flows[p as usize];
        if flows.last().is_none_or(|&last| last < id) {
            flows.push(id);
        } else {
            let at = flows.partition_point(|&other| other < id);
            flows.insert(at, id);
        }
        p
    }

    /// Flow `id` leaves pair `key`, whose index [`PairFlows::join`] gave as
    /// `p`; returns whether it was the pair's last flow (the pair is then gone).
    pub(super) fn leave(&mut self, p: u32, key: PairKey, id: FlowId) -> bool {
        let flows = &mut self.flows[p as usize];
        if let Ok(at) = flows.binary_search(&id) {
            flows.remove(at);
        }
        if !flows.is_empty() {
            return false;
        }
        self.index.remove(&key);
        self.free.push(p);
        true
    }

    /// The active flows of pair `key`, in id order, if it has any.
    pub(super) fn get(&self, key: &PairKey) -> Option<&[FlowId]> {
        self.index.get(key).map(|&p| self.flows[p as usize].as_slice())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ocslab_core::model::coflow::CoflowId;

    #[test]
    fn a_pair_lists_its_flows_in_id_order_until_the_last_leaves() {
        let mut pairs = PairFlows::default();
        let (a, b) = ((CoflowId(1), 0, 1), (CoflowId(1), 1, 0));
        let pa = pairs.join(a, FlowId(5));
        assert_eq!(pairs.join(a, FlowId(2)), pa);
        let pb = pairs.join(b, FlowId(3));
        assert_ne!(pa, pb);
        assert_eq!(pairs.get(&a), Some(&[FlowId(2), FlowId(5)][..]));
        assert!(!pairs.leave(pa, a, FlowId(5)));
        assert!(pairs.leave(pa, a, FlowId(2)));
        assert_eq!(pairs.get(&a), None);
        assert_eq!(pairs.get(&b), Some(&[FlowId(3)][..]));
        // The emptied pair's index is reused.
        assert_eq!(pairs.join((CoflowId(2), 0, 1), FlowId(9)), pa);
    }
}
