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

/// What the slots keep of each slot's flow, by slot index.
#[derive(Clone, Debug)]
enum Flows {
    /// The flow and when it started.
    Whole(Vec<(FlowSpec, Nanos)>),
    /// Only its id ([`Slots::ids_only`]).
    Ids(Vec<FlowId>),
}

impl Default for Flows {
    fn default() -> Flows {
        Flows::Whole(Vec::new())
    }
}

/// Sets `v[at]`, one past the end included.
fn put<T>(v: &mut Vec<T>, at: usize, x: T) {
    match v.get_mut(at) {
        Some(old) => *old = x,
        None => v.push(x),
    }
}

/// The slots of the active flows, by dense index.
#[derive(Clone, Debug, Default)]
pub(super) struct Slots {
    slots: Vec<Slot>,
    flows: Flows,
    free: Vec<u32>,
}

impl Slots {
    /// Slots that keep only their flows' ids, for a network whose policy
    /// view holds each active flow and when it started: 48 bytes less a
    /// flow (a wide shuffle holds hundreds of thousands at once).
    pub(super) fn ids_only() -> Slots {
        Slots {
            flows: Flows::Ids(Vec::new()),
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
        match &mut self.flows {
            Flows::Whole(flows) => put(flows, i as usize, (spec, started)),
            Flows::Ids(ids) => put(ids, i as usize, spec.id),
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
        match &self.flows {
            Flows::Whole(flows) => flows.get(i as usize),
            Flows::Ids(_) => None,
        }
    }

    /// The id of the flow in slot `i`.
    pub(super) fn id(&self, i: u32) -> FlowId {
        match &self.flows {
            Flows::Whole(flows) => flows[i as usize].0.id,
            Flows::Ids(ids) => ids[i as usize],
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
