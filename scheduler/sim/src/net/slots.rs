//! [`Slots`]: where each active flow of the fluid network is (its bundle,
//! the bundle's service when it joined and at which it is done, what it
//! sent in earlier bundles), at a dense index of its own.
//!
//! The network's per-flow work goes through that index: a bundle lists its
//! members by it, so a flow that finishes is found without a lookup. A
//! flow's index is found from its id ([`ocslab_core::coflow::id_index::IdIndex`])
//! only when a policy names the flow. Indexes of finished flows are reused;
//! each slot's stamp (bumped whenever its flow leaves a bundle) tells a
//! bundle's stale member entries. Beside each slot, out of the way of the
//! events that read slots, is what the flow is ([`FlowSpec`]) and when it
//! started, read when it finishes; or only its id, when the network keeps
//! a policy view that holds the rest ([`Slots::ids_only`]).

use ocslab_core::model::coflow::{FlowId, FlowSpec};
use ocslab_core::Nanos;
use std::ops::{Index, IndexMut};

/// Where a flow is. One cache line (aligned to it): a flow's arrival,
/// departure and progress each read one line of slots.
#[derive(Clone, Copy, Debug)]
#[repr(align(64))]
pub(super) struct Slot {
    /// Its bundle.
    pub(super) bundle: usize,
    /// The bundle's service when the flow joined it. Service is counted per
    /// unit of weight: a flow of weight w receives w bytes for each byte of
    /// its bundle's service, so `joined`, `joined_ocs` and `finish` are in
    /// service, the `sent_*` counts in bytes.
    pub(super) joined: f64,
    /// The bundle's service over circuits when the flow joined it
    /// ([`super::network::OcsShare`]).
    pub(super) joined_ocs: f64,
    /// The bundle's service at which the flow is done.
    pub(super) finish: f64,
    /// Bytes sent in earlier bundles, over EPS and over circuits.
    pub(super) sent_eps: f64,
    pub(super) sent_ocs: f64,
    /// Its rack pair's index in [`super::pairs::PairFlows`], if pairs are kept.
    pub(super) pair: Option<u32>,
    /// Bumped whenever the slot's flow leaves a bundle (and kept across
    /// reuse): a member entry with another stamp is stale.
    pub(super) stamp: u32,
    /// How many flows it stands for ([`FlowSpec::weight`]).
    pub(super) weight: u32,
}

/// The slots of the active flows, by dense index.
#[derive(Clone, Debug, Default)]
pub(super) struct Slots {
    slots: Vec<Slot>,
    /// Each slot's flow and when it started (unless `ids_only`).
    flows: Vec<(FlowSpec, Nanos)>,
    /// Each slot's flow id (if `ids_only`).
    ids: Vec<FlowId>,
    ids_only: bool,
    free: Vec<u32>,
}

impl Slots {
    /// Slots that keep only their flows' ids, for a network whose policy
    /// view holds each active flow and when it started: 48 bytes less a
    /// flow (a wide shuffle holds hundreds of thousands at once).
    pub(super) fn ids_only() -> Slots {
        Slots {
            ids_only: true,
            ..Slots::default()
        }
    }

    /// Adds `slot` (its stamp is the index's own) for flow `spec`, started
    /// at `started`; returns its index.
    pub(super) fn add(&mut self, slot: Slot, spec: FlowSpec, started: Nanos) -> u32 {
        let i = match self.free.pop() {
            Some(i) => {
                let stamp = self.slots[i as usize].stamp;
                self.slots[i as usize] = Slot { stamp, ..slot };
                i
            }
            None => {
                self.slots.push(Slot { stamp: 0, ..slot });
                (self.slots.len() - 1) as u32
            }
        };
        let (at, id) = (i as usize, spec.id);
        match (self.ids_only, at < self.ids.len().max(self.flows.len())) {
            (true, true) => self.ids[at] = id,
            (true, false) => self.ids.push(id),
            (false, true) => self.flows[at] = (spec, started),
            (false, false) => self.flows.push((spec, started)),
        }
        i
    }

    /// Slot indexes in use or free (the live ones are those their flow's
    /// id, in [`Slots::flow`], leads to).
    pub(super) fn len(&self) -> u32 {
        self.slots.len() as u32
    }

    /// Slots in use: the active flows.
    pub(super) fn active(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// The flow in slot `i` and when it started; `None` if the slots keep
    /// only ids ([`Slots::ids_only`]).
    pub(super) fn flow(&self, i: u32) -> Option<&(FlowSpec, Nanos)> {
        self.flows.get(i as usize)
    }

    /// The id of the flow in slot `i`.
    pub(super) fn id(&self, i: u32) -> FlowId {
        match self.ids.get(i as usize) {
            Some(&id) => id,
            None => self.flows[i as usize].0.id,
        }
    }

    /// Frees slot `i` (its flow left the network).
    pub(super) fn remove(&mut self, i: u32) {
        let s = &mut self.slots[i as usize];
        s.stamp = s.stamp.wrapping_add(1);
        self.free.push(i);
    }
}

impl Index<u32> for Slots {
    type Output = Slot;
    fn index(&self, i: u32) -> &Slot {
        &self.slots[i as usize]
    }
}

impl IndexMut<u32> for Slots {
    fn index_mut(&mut self, i: u32) -> &mut Slot {
        &mut self.slots[i as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_is_one_cache_line() {
        assert_eq!(std::mem::size_of::<Slot>(), 64);
    }
}
