//! How Sunflow keeps a coflow's demand up to date between calls without
//! reading all its flows: from the elephants that joined since it was read
//! (the ids above the highest it saw) and the count of those that left.
//!
//! A job's shuffle is one coflow, and the largest of Co-scheduler's
//! workload has millions of flows over its life, a few hundred joining at
//! a time as each reduce starts. Reading it whole at every call made the
//! calls quadratic in its size; following it costs what changed.

use super::demand::CoflowDemand;
use super::waiting::Waiting;
use crate::coflow::{CoflowView, NetView, Progress};
use crate::model::coflow::{CoflowId, FlowId};
use std::collections::BTreeMap;

/// What following a kept coflow found.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Followed {
    /// Reserved pairs with no elephant left, with their port: their
    /// reservations end.
    pub(super) done: Vec<((u32, u32), u32)>,
    /// Waiting pairs with no elephant left.
    pub(super) dropped: Vec<(u32, u32)>,
    /// Pairs that got their first elephants (they wait).
    pub(super) added: Vec<(u32, u32)>,
}

/// Brings `d`, what is kept of coflow `c`, up to date with its view `cv`
/// (pairs that start or stop waiting are entered in `waiting`). `None`
/// when it cannot be followed and must be read whole: it was never read,
/// flows that joined before it was read became elephants or joined out of
/// id order ([`CoflowView::epoch`]), or elephants left that it did not
/// keep.
pub(super) fn follow(
    d: &mut CoflowDemand,
    c: CoflowId,
    cv: &CoflowView,
    view: &NetView,
    progress: &dyn Progress,
    waiting: &mut Waiting,
) -> Option<Followed> {
    let mut out = Followed::default();
    let joined = d.known != Some(cv.known_bytes);
    if !joined && d.elephants == cv.elephants() {
        return Some(out);
    }
    if d.known.is_none() || d.epoch != cv.epoch() {
        return None;
    }
    let fabric = view.fabric;
    let remaining = |ids: &[FlowId]| {
        ids.iter()
            .filter_map(|id| view.flows.get(id))
            .fold(0.0, |sum, f| sum + progress.remaining_bytes(f))
    };
    // The elephants that joined since: ids above the highest then.
    let seen = d.seen;
    let mut new: Vec<FlowId> = cv
        .flows
        .iter()
        .rev()
        .take_while(|&&f| seen.is_none_or(|s| f > s))
        .filter(|&f| view.flows.get(f).is_some_and(|f| f.elephant))
        .copied()
        .collect();
    new.reverse();

    // The joined elephants: to their pair, or as a new pair (a pair not
    // kept has no reservation: reservations end with their pair). New ids
    // are higher, so each pair's stay in id order.
    let mut pairs: BTreeMap<(u32, u32), Vec<FlowId>> = BTreeMap::new();
    for id in new {
        let Some(f) = view.flows.get(&id) else { continue };
        let k = (f.spec.src.rack, f.spec.dst.rack);
        if d.pairs.contains_key(&k) {
            d.join(&fabric, k, id, progress.remaining_bytes(f));
        } else {
            pairs.entry(k).or_default().push(id);
        }
    }
    for (k, ids) in pairs {
        let bytes = remaining(&ids);
        d.insert(&fabric, k, ids, bytes, None);
        waiting.insert((k.0, k.1, c));
        out.added.push(k);
    }

    // The kept elephants that left: in reserved pairs (they move), and
    // otherwise in waiting ones (a flow lost with its host). A pair that
    // lost its last elephants but got new ones keeps its reservation.
    let departed = d.elephants.checked_sub(cv.elephants())?;
    let mut left = 0;
    let reserved: Vec<(u32, u32)> = d.reserved.iter().copied().collect();
    for k in reserved {
        if left >= departed {
            break;
        }
        left += d.retain(k, |f| cv.flows.contains(f));
        if let Some(p) = d.pairs.get(&k).filter(|p| p.flows.is_empty()) {
            if let Some(w) = p.port {
                out.done.push((k, w));
            }
            d.remove(k);
        }
    }
    if left < departed {
        let waiting_pairs: Vec<(u32, u32)> = d
            .pairs
            .iter()
            .filter(|(_, p)| p.port.is_none())
            .map(|(&k, _)| k)
            .collect();
        for k in waiting_pairs {
            if left >= departed {
                break;
            }
            let gone = d.retain(k, |f| cv.flows.contains(f));
            if gone == 0 {
                continue;
            }
            left += gone;
            match d.pairs.get(&k).filter(|p| !p.flows.is_empty()) {
                Some(p) => {
                    let bytes = remaining(&p.flows);
                    d.set_bytes(&fabric, k, bytes);
                }
                None => {
                    d.remove(k);
                    waiting.remove((k.0, k.1, c));
                    out.dropped.push(k);
                }
            }
        }
    }
    if left != departed {
        return None;
    }
    d.known = Some(cv.known_bytes);
    d.seen = cv.highest();
    Some(out)
}
