//! What Sunflow keeps of each active coflow between calls: its elephants
//! per rack pair, their remaining bytes as last read, and the row and
//! column sums of `t_ij` (Co-scheduler, Li & Shen, ToN 2022, eq. 1) that
//! give its lower bound T(C) (eq. 2, eq. 15 with W ports) in O(racks).
//!
//! Waiting pairs do not move, so their bytes stand; reserved pairs move
//! (only lose bytes), so the kept sums bound T(C) from both sides without
//! reading them: from above with their bytes as last read, from below
//! with nothing left of them ([`CoflowDemand::bounds`]). Sunflow reads
//! them again only when those bounds cannot order two coflows.

use crate::coflow::lower_bound::{ocs_bound_of_longest, ocs_pair_time};
use crate::coflow::{CoflowView, FabricParams};
use crate::model::coflow::FlowId;
use crate::{Bytes, Nanos};
use std::collections::{BTreeMap, BTreeSet};

/// One coflow's elephants as last read, with the row and column sums of
/// `t_ij` that give its T(C).
#[derive(Clone, Debug, Default)]
pub(super) struct CoflowDemand {
    /// Its bytes so far ([`crate::coflow::CoflowView::known_bytes`]) when
    /// read: flows joined if it grew. `None`: read it again.
    pub(super) known: Option<Bytes>,
    /// The highest id of its flows when read ([`crate::coflow::CoflowView::highest`]):
    /// elephants that join later have higher ids.
    pub(super) seen: Option<FlowId>,
    /// Its [`crate::coflow::CoflowView::epoch`] when read.
    pub(super) epoch: u64,
    /// Its elephants kept here (the flows of `pairs`).
    pub(super) elephants: usize,
    /// The call (counted from 1) in which its reserved pairs were last all
    /// read: in that call its sums give its T(C) exactly.
    pub(super) read_in: u64,
    /// Its rack pairs with active elephants.
    pub(super) pairs: BTreeMap<(u32, u32), PairDemand>,
    /// Those of `pairs` that hold a reservation.
    pub(super) reserved: BTreeSet<(u32, u32)>,
    /// Σ_j t_ij per sending rack i and Σ_i t_ij per receiving rack j
    /// (ns), in one [`Sums`]: rows and columns count the same way in eq. 2.
    lines: Sums,
    /// The same sums over its waiting pairs only.
    waiting_lines: Sums,
    /// Pairs whose t_ij is unbounded (bytes and no circuit rate).
    unbounded: usize,
}

/// A coflow's active elephants from one rack to another.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct PairDemand {
    /// Their ids, in id order.
    pub(super) flows: Vec<FlowId>,
    /// Their remaining bytes (summed in id order) when last read.
    pub(super) bytes: f64,
    /// Its t_ij as counted in the row and column sums (`None`: unbounded).
    t: Option<u128>,
    /// The port reserved for them, if any.
    pub(super) port: Option<u32>,
}

/// t_ij of a pair with `bytes` left (rounded up to whole bytes).
fn pair_time(fabric: &FabricParams, bytes: f64) -> Option<u128> {
    ocs_pair_time(
        Bytes(bytes.ceil() as u64),
        fabric.ocs_port_rate,
        fabric.reconfig_delay,
    )
}

/// Sums per row and column (a row or column is `(false, rack)` or `(true,
/// rack)`), with their values counted so that the largest is at hand.
#[derive(Clone, Debug, Default)]
struct Sums {
    sums: BTreeMap<(bool, u32), u128>,
    /// How many rows and columns have each nonzero sum.
    values: BTreeMap<u128, u32>,
}

impl Sums {
    /// Adds `t` to (`add`) or takes it from the sums of row `i` and column `j`.
    fn count(&mut self, (i, j): (u32, u32), t: u128, add: bool) {
        for line in [(false, i), (true, j)] {
            let sum = self.sums.entry(line).or_default();
            let old = *sum;
            *sum = if add { old + t } else { old - t };
            let new = *sum;
            if new == 0 {
                self.sums.remove(&line);
            }
            if old != 0 {
                if let Some(n) = self.values.get_mut(&old) {
                    *n -= 1;
                    if *n == 0 {
                        self.values.remove(&old);
                    }
                }
            }
            if new != 0 {
                *self.values.entry(new).or_default() += 1;
            }
        }
    }

    /// The largest sum (0 if none).
    fn max(&self) -> u128 {
        self.values.last_key_value().map_or(0, |(&t, _)| t)
    }
}

impl CoflowDemand {
    /// Coflow `c` read whole in call `read_in`, before its pairs are inserted.
    pub(super) fn new(c: &CoflowView, read_in: u64) -> CoflowDemand {
        CoflowDemand {
            known: Some(c.known_bytes),
            seen: c.highest(),
            epoch: c.epoch(),
            read_in,
            ..CoflowDemand::default()
        }
    }

    /// Counts (`add`) or uncounts pair (i, j)'s t_ij, held by a reservation
    /// or not, in the sums.
    fn count(&mut self, k: (u32, u32), t: Option<u128>, reserved: bool, add: bool) {
        if k.0 == k.1 {
            return;
        }
        match t {
            None if add => self.unbounded += 1,
            None => self.unbounded -= 1,
            Some(t) => {
                self.lines.count(k, t, add);
                if !reserved {
                    self.waiting_lines.count(k, t, add);
                }
            }
        }
    }

    /// Adds a pair (i, j) with `flows` (in id order), `bytes` left and the
    /// reservation `port`, if any.
    pub(super) fn insert(
        &mut self,
        fabric: &FabricParams,
        k: (u32, u32),
        flows: Vec<FlowId>,
        bytes: f64,
        port: Option<u32>,
    ) {
        let t = pair_time(fabric, bytes);
        self.remove(k);
        self.count(k, t, port.is_some(), true);
        if port.is_some() {
            self.reserved.insert(k);
        }
        self.elephants += flows.len();
        self.pairs.insert(
            k,
            PairDemand {
                flows,
                bytes,
                t,
                port,
            },
        );
    }

    /// Elephant `id` (a higher id than its pair's others) joined pair `k`
    /// with `bytes` to send.
    pub(super) fn join(&mut self, fabric: &FabricParams, k: (u32, u32), id: FlowId, bytes: f64) {
        let Some(p) = self.pairs.get_mut(&k) else { return };
        p.flows.push(id);
        let total = p.bytes + bytes;
        self.elephants += 1;
        self.set_bytes(fabric, k, total);
    }

    /// Drops the flows of pair `k` that `active` rejects; returns how many.
    pub(super) fn retain(&mut self, k: (u32, u32), active: impl Fn(&FlowId) -> bool) -> usize {
        let Some(p) = self.pairs.get_mut(&k) else { return 0 };
        let before = p.flows.len();
        p.flows.retain(active);
        let left = before - p.flows.len();
        self.elephants -= left;
        left
    }

    /// Pair `k` now has `bytes` left.
    pub(super) fn set_bytes(&mut self, fabric: &FabricParams, k: (u32, u32), bytes: f64) {
        let t = pair_time(fabric, bytes);
        let Some(p) = self.pairs.get_mut(&k) else { return };
        let old = std::mem::replace(&mut p.t, t);
        p.bytes = bytes;
        let reserved = p.port.is_some();
        self.count(k, old, reserved, false);
        self.count(k, t, reserved, true);
    }

    /// Pair `k` got port `w`.
    pub(super) fn reserve(&mut self, k: (u32, u32), w: u32) {
        let Some(p) = self.pairs.get_mut(&k) else { return };
        if p.port.is_some() {
            return;
        }
        p.port = Some(w);
        let t = p.t;
        self.reserved.insert(k);
        self.count(k, t, false, false);
        self.count(k, t, true, true);
    }

    /// Pair `k` is done.
    pub(super) fn remove(&mut self, k: (u32, u32)) {
        self.reserved.remove(&k);
        if let Some(p) = self.pairs.remove(&k) {
            self.count(k, p.t, p.port.is_some(), false);
            self.elephants -= p.flows.len();
        }
    }

    /// T(C) of its demand as last read (eq. 2 / 15; unbounded: `u64::MAX`
    /// ns): exact when its reserved pairs were just read.
    pub(super) fn bound(&self, fabric: &FabricParams) -> Nanos {
        if self.unbounded > 0 {
            return Nanos(u64::MAX);
        }
        ocs_bound_of_longest(self.lines.max(), fabric.ocs_ports).unwrap_or(Nanos(u64::MAX))
    }

    /// Bounds (low, high) on T(C) of its demand now, read or not: its
    /// reserved pairs have at most the bytes last read (high: [`CoflowDemand::bound`])
    /// and at least none (low: the sums without them). Equal when it holds
    /// no reservation. With an unbounded pair: (0, `u64::MAX` ns) unless
    /// none is reserved.
    pub(super) fn bounds(&self, fabric: &FabricParams) -> (Nanos, Nanos) {
        let high = self.bound(fabric);
        if self.reserved.is_empty() {
            return (high, high);
        }
        if self.unbounded > 0 {
            return (Nanos::ZERO, high);
        }
        let low = ocs_bound_of_longest(self.waiting_lines.max(), fabric.ocs_ports).unwrap_or(Nanos(u64::MAX));
        (low, high)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Bps;

    /// One port per rack at 1 MB/s, no reconfiguration delay.
    fn fabric() -> FabricParams {
        FabricParams {
            racks: 4,
            hosts_per_rack: 1,
            host_rate: Bps(80_000_000),
            uplink_rate: Bps(80_000_000),
            ocs_ports: 1,
            ocs_port_rate: Bps(8_000_000),
            reconfig_delay: Nanos::ZERO,
            elephant_threshold: Bytes(1),
            scale: 1.0,
        }
    }

    #[test]
    fn t_c_is_bounded_by_the_sums_with_and_without_reserved_pairs() {
        let f = fabric();
        let s = Nanos::from_millis;
        let mut d = CoflowDemand::new(&CoflowView::default(), 1);
        d.insert(&f, (0, 1), vec![FlowId(1)], 1e6, None);
        d.insert(&f, (0, 2), vec![FlowId(2)], 2e6, None);
        d.insert(&f, (3, 1), vec![FlowId(3)], 5e5, None);
        // Row 0: 1 s + 2 s; column 1: 1 s + 0.5 s; nothing reserved: exact.
        assert_eq!(d.bounds(&f), (s(3000), s(3000)));
        d.reserve((0, 1), 0);
        // Without the reserved pair row 0 and column 2 carry 2 s.
        assert_eq!(d.bounds(&f), (s(2000), s(3000)));
        // It moved: 0.25 MB left.
        d.set_bytes(&f, (0, 1), 2.5e5);
        assert_eq!(d.bounds(&f), (s(2000), s(2250)));
        d.remove((0, 1));
        assert_eq!(d.bounds(&f), (s(2000), s(2000)));
        assert!(d.reserved.is_empty());
        d.remove((0, 2));
        assert_eq!(d.bound(&f), s(500));
        d.remove((3, 1));
        assert_eq!(d.bound(&f), Nanos::ZERO);
    }
}
