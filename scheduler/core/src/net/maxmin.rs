//! Max-min fair rates by water-filling (Bertsekas & Gallager, *Data
//! Networks*, Sec. 6.5.2), with optional per-flow caps and weights.
//!
//! The bottleneck form: repeatedly take the link whose remaining capacity
//! divided by its unfrozen flows is smallest (or the smallest unmet cap, if
//! lower), freeze those flows at that share, and charge their rate to every
//! link they cross. Each round freezes at least one link, so a solve costs
//! O(F·h) to set up and to freeze, where F flows cross at most h links of
//! the L links in use, plus the rounds. The links wait in a heap by share,
//! updated lazily: freezing flows at the current (smallest) share only
//! raises the share of the other links they cross, so an entry older than
//! its link's share is too small, and is pushed again with the current share
//! when it comes to the top. A link taken from the top with its current
//! share is the bottleneck, exactly as a scan of all links would find it.
//!
//! Ties are broken by link id, so the result never depends on iteration order.
//!
//! A flow that crosses a link with nothing left gets nothing, and is set
//! aside before the links' counts are taken: such links have share 0 and
//! would freeze first anyway, at a rate that changes no other residual.
//! Under a strict priority between coflows (Aalo, Varys' backfilling) most
//! flows of the later coflows are of this kind.

use crate::net::links::{LinkId, Links};
use std::cmp::Reverse;
use std::collections::binary_heap::PeekMut;
use std::collections::BinaryHeap;

/// One flow's claim (or `weight` identical flows' claims): the links it
/// crosses and its cap (bytes per second; `f64::INFINITY` for none).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Demand {
    /// Links crossed.
    pub links: Links,
    /// Rate cap per flow in bytes per second.
    pub cap: f64,
    /// How many identical flows this stands for (same links, same cap:
    /// max-min gives them the same rate).
    pub weight: u32,
}

impl Demand {
    /// One flow over `links`, uncapped.
    pub fn new(links: Links) -> Demand {
        Demand {
            links,
            cap: f64::INFINITY,
            weight: 1,
        }
    }
}

/// Reusable scratch space for water-filling over one link set.
#[derive(Clone, Debug, Default)]
pub struct WaterFill {
    count: Vec<u64>,
    share: Vec<f64>,
    degree: Vec<u32>,
    start: Vec<u32>,
    active: Vec<LinkId>,
    adjacency: Vec<u32>,
    frozen: Vec<bool>,
    capped: Vec<(f64, u32)>,
    /// Links by (share as f64 bits: order-preserving for shares >= 0, id); lazily updated.
    heap: ShareHeap,
}

impl WaterFill {
    /// Scratch space for `links` links.
    pub fn new(links: usize) -> WaterFill {
        WaterFill {
            count: vec![0; links],
            share: vec![0.0; links],
            degree: vec![0; links],
            start: vec![0; links],
            ..WaterFill::default()
        }
    }

    /// Max-min fair rates (per flow) for `flows` on the capacities in
    /// `residual` (bytes per second), which are reduced by what the flows
    /// take. The rates are written to `rates` (one per demand, same order).
    /// Calling it class after class on the same `residual` gives strict
    /// priority between the classes.
    pub fn fill(&mut self, residual: &mut [f64], flows: &[Demand], rates: &mut Vec<f64>) {
        rates.clear();
        rates.resize(flows.len(), 0.0);
        self.frozen.clear();
        self.frozen.resize(flows.len(), false);
        self.active.clear();
        // A flow across a full link gets nothing: such links have the
        // smallest share (0) and would freeze first, at rate 0, which
        // changes no other link's residual. Frozen here, those flows never
        // enter the links' counts, as they would have left them.
        for (f, frozen) in flows.iter().zip(self.frozen.iter_mut()) {
            *frozen = f.links.as_slice().iter().any(|&l| residual[l as usize] <= 0.0);
        }
        for (f, _) in flows.iter().zip(&self.frozen).filter(|(_, &frozen)| !frozen) {
            for &l in f.links.as_slice() {
                let li = l as usize;
                if self.degree[li] == 0 {
                    self.active.push(l);
                }
                self.degree[li] += 1;
                self.count[li] += u64::from(f.weight);
            }
        }
        // Adjacency (link -> flows) in one array, `start` per link.
        let mut next = 0u32;
        for &l in &self.active {
            let li = l as usize;
            self.start[li] = next;
            next += self.degree[li];
            self.degree[li] = 0;
        }
        self.adjacency.clear();
        self.adjacency.resize(next as usize, 0);
        for (i, f) in flows.iter().enumerate().filter(|&(i, _)| !self.frozen[i]) {
            for &l in f.links.as_slice() {
                let li = l as usize;
                self.adjacency[(self.start[li] + self.degree[li]) as usize] = i as u32;
                self.degree[li] += 1;
            }
        }
        self.heap.clear();
        for &l in &self.active {
            let li = l as usize;
            self.share[li] = share(residual[li], self.count[li] as f64);
            self.heap.push(Reverse(share_key(self.share[li], l)));
        }
        self.capped.clear();
        self.capped.extend(
            flows
                .iter()
                .enumerate()
                .filter(|&(i, f)| f.cap.is_finite() && !self.frozen[i])
                .map(|(i, f)| (f.cap.max(0.0), i as u32)),
        );
        self.capped
            .sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let mut next_cap = 0usize;

        loop {
            // The bottleneck link: smallest share, then smallest id.
            let (count, share) = (&self.count, &self.share);
            let best = top_link(&mut self.heap, |l| (count[l] > 0).then(|| share[l]));
            while next_cap < self.capped.len() && self.frozen[self.capped[next_cap].1 as usize] {
                next_cap += 1;
            }
            let cap = self.capped.get(next_cap).copied();
            match (best, cap) {
                (None, None) => break,
                (Some((share, link)), c) if c.is_none_or(|(cv, _)| share <= cv) => {
                    let li = link as usize;
                    let (s, d) = (self.start[li] as usize, self.degree[li] as usize);
                    for k in s..s + d {
                        let f = self.adjacency[k] as usize;
                        if !self.frozen[f] {
                            self.freeze(residual, flows, rates, f, share);
                        }
                    }
                }
                (_, Some((cv, f))) => self.freeze(residual, flows, rates, f as usize, cv),
                (Some(_), None) => unreachable!("the guard above takes every link when there is no cap"),
            }
        }
        for &l in &self.active {
            self.degree[l as usize] = 0;
            self.count[l as usize] = 0;
        }
    }

    fn freeze(&mut self, residual: &mut [f64], flows: &[Demand], rates: &mut [f64], f: usize, rate: f64) {
        self.frozen[f] = true;
        rates[f] = rate;
        let w = flows[f].weight;
        for &l in flows[f].links.as_slice() {
            let li = l as usize;
            residual[li] = (residual[li] - rate * f64::from(w)).max(0.0);
            self.count[li] -= u64::from(w);
            if self.count[li] > 0 {
                self.share[li] = residual[li] / self.count[li] as f64;
            }
        }
    }
}

/// Links waiting by share (as f64 bits: order-preserving for shares >= 0,
/// then id), updated lazily.
pub type ShareHeap = BinaryHeap<Reverse<(u64, LinkId)>>;

/// A link's share: what is left of its capacity over its unfrozen flows.
/// Every solver path computes it here, so that they agree bit for bit.
pub fn share(residual: f64, unfrozen: f64) -> f64 {
    residual.max(0.0) / unfrozen
}

/// The order in which links of these shares freeze: the smaller share
/// (as f64 bits), then the lower id. The heap's order, and any path that
/// must pick as it would.
pub fn share_key(share: f64, link: LinkId) -> (u64, LinkId) {
    (share.to_bits(), link)
}

/// The bottleneck link: the smallest current share, then the smallest id.
/// `share(l)` is link `l`'s current share (`None` once it has no unfrozen
/// flow: its entries are dropped). Freezing only raises shares, so an entry
/// older than its link's share is too small: it is pushed again with the
/// current one, and a link taken from the top with its current share is the
/// one a scan of all links would find.
pub fn top_link(heap: &mut ShareHeap, mut share: impl FnMut(usize) -> Option<f64>) -> Option<(f64, LinkId)> {
    while let Some(mut top) = heap.peek_mut() {
        let Reverse((bits, l)) = *top;
        match share(l as usize) {
            None => {
                PeekMut::pop(top);
            }
            // Sifted down in place when `top` is dropped.
            Some(now) if now.to_bits() != bits => *top = Reverse((now.to_bits(), l)),
            Some(now) => return Some((now, l)),
        }
    }
    None
}

/// Max-min fair rates of `flows` on links of `capacity` (bytes per second).
pub fn max_min(capacity: &[f64], flows: &[Demand]) -> Vec<f64> {
    let mut residual = capacity.to_vec();
    let mut rates = Vec::new();
    WaterFill::new(capacity.len()).fill(&mut residual, flows, &mut rates);
    rates
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(links: &[LinkId]) -> Demand {
        Demand::new(Links::new(links).unwrap())
    }

    #[test]
    fn classic_three_link_example() {
        // Links 0 and 1 of capacity 1, link 2 of capacity 2. Flow a crosses
        // 0 and 1, b crosses 0, c crosses 1 and 2, e crosses 2.
        // Link 0: a, b share 1 -> 0.5 each; link 1: a (0.5) leaves 0.5 for c;
        // link 2: c (0.5) leaves 1.5 for e.
        let r = max_min(&[1.0, 1.0, 2.0], &[d(&[0, 1]), d(&[0]), d(&[1, 2]), d(&[2])]);
        assert_eq!(r, vec![0.5, 0.5, 0.5, 1.5]);
    }

    /// The definition, checked on random instances where some links are
    /// already full: every flow is at its cap, or crosses a saturated link
    /// on which no flow gets more than it; no link is over capacity.
    #[test]
    fn every_flow_is_capped_or_has_a_saturated_bottleneck_where_it_gets_most() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut water = WaterFill::new(8);
        let mut rates = Vec::new();
        let mut full_crossers = 0;
        for _ in 0..2_000 {
            let capacity: Vec<f64> = (0..8)
                .map(|_| {
                    if rng.random_bool(0.2) {
                        0.0
                    } else {
                        rng.random_range(1.0..100.0)
                    }
                })
                .collect();
            let flows: Vec<Demand> = (0..rng.random_range(1..12))
                .map(|_| {
                    let mut links: Vec<LinkId> = (0..rng.random_range(1..4))
                        .map(|_| rng.random_range(0..8))
                        .collect();
                    links.sort_unstable();
                    links.dedup();
                    Demand {
                        links: Links::new(&links).unwrap(),
                        cap: if rng.random_bool(0.3) {
                            rng.random_range(0.0..50.0)
                        } else {
                            f64::INFINITY
                        },
                        weight: rng.random_range(1..3),
                    }
                })
                .collect();
            let mut residual = capacity.clone();
            water.fill(&mut residual, &flows, &mut rates);
            let mut load = vec![0.0; 8];
            for (f, &r) in flows.iter().zip(&rates) {
                for &l in f.links.as_slice() {
                    load[l as usize] += r * f64::from(f.weight);
                }
            }
            let tol = |c: f64| 1e-9 * c.max(1.0);
            for (l, (&c, &x)) in capacity.iter().zip(&load).enumerate() {
                assert!(x <= c + tol(c), "link {l} carries {x} > {c}");
                assert!(
                    (capacity[l] - load[l] - residual[l]).abs() <= tol(c),
                    "residual of link {l}"
                );
            }
            for (i, (f, &r)) in flows.iter().zip(&rates).enumerate() {
                let links = f.links.as_slice();
                if links.iter().any(|&l| capacity[l as usize] == 0.0) {
                    full_crossers += 1;
                    assert_eq!(r, 0.0, "flow {i} crosses a full link");
                    continue;
                }
                let at_cap = (r - f.cap).abs() <= tol(f.cap);
                let bottleneck = links.iter().any(|&l| {
                    let l = l as usize;
                    load[l] >= capacity[l] - tol(capacity[l])
                        && flows
                            .iter()
                            .zip(&rates)
                            .filter(|(g, _)| g.links.as_slice().contains(&(l as LinkId)))
                            .all(|(_, &q)| q <= r + tol(r))
                });
                assert!(
                    at_cap || bottleneck,
                    "flow {i} at {r}: neither capped nor bottlenecked"
                );
            }
        }
        assert!(
            full_crossers > 100,
            "the instances exercise full links ({full_crossers})"
        );
    }

    #[test]
    fn caps_and_weights() {
        // Link 0 of capacity 10: a capped at 2, b a bundle of 2 flows: (10-2)/2 = 4 each.
        let mut a = d(&[0]);
        a.cap = 2.0;
        let mut b = d(&[0]);
        b.weight = 2;
        assert_eq!(max_min(&[10.0], &[a, b]), vec![2.0, 4.0]);
    }
}
