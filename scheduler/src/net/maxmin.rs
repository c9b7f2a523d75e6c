//! Max-min fair rates by water-filling (Bertsekas & Gallager, *Data
//! Networks*, Sec. 6.5.2), with optional per-flow caps.
//!
//! The bottleneck form: repeatedly take the link whose remaining capacity
//! divided by its unfrozen flows is smallest (or the smallest unmet cap, if
//! lower), freeze those flows at that share, and charge their rate to every
//! link they cross. A link's share only grows as others freeze (a flow frozen
//! elsewhere took at most this link's share), so a heap with lazily
//! discarded stale entries finds the next bottleneck: O((F·h + L) log L) for
//! F flows of at most h links each, instead of O(L²) for a scan per round.
//!
//! Ties are broken by link id, so the result does not depend on hash order.

use crate::net::links::{LinkId, Links};
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// One flow's claim: the links it crosses and its cap (bytes per second;
/// `f64::INFINITY` for none).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Demand {
    /// Links crossed.
    pub links: Links,
    /// Rate cap in bytes per second.
    pub cap: f64,
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    share: f64,
    link: LinkId,
    version: u32,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    fn cmp(&self, o: &Self) -> Ordering {
        self.share
            .total_cmp(&o.share)
            .then(self.link.cmp(&o.link))
            .then(self.version.cmp(&o.version))
    }
}

/// Reusable scratch space for water-filling over one link set.
#[derive(Clone, Debug, Default)]
pub struct WaterFill {
    count: Vec<u32>,
    degree: Vec<u32>,
    start: Vec<u32>,
    version: Vec<u32>,
    touched: Vec<LinkId>,
    adjacency: Vec<u32>,
    frozen: Vec<bool>,
    capped: Vec<(f64, u32)>,
    heap: BinaryHeap<Reverse<Entry>>,
}

impl WaterFill {
    /// Scratch space for `links` links.
    pub fn new(links: usize) -> WaterFill {
        WaterFill {
            count: vec![0; links],
            degree: vec![0; links],
            start: vec![0; links],
            version: vec![0; links],
            ..WaterFill::default()
        }
    }

    /// Max-min fair rates for `flows` on the capacities in `residual`
    /// (bytes per second), which are reduced by what the flows take. The
    /// rates are written to `rates` (one per flow, same order). Calling it
    /// class after class on the same `residual` gives strict priority.
    pub fn fill(&mut self, residual: &mut [f64], flows: &[Demand], rates: &mut Vec<f64>) {
        rates.clear();
        rates.resize(flows.len(), 0.0);
        self.frozen.clear();
        self.frozen.resize(flows.len(), false);
        self.touched.clear();
        for f in flows {
            for &l in f.links.as_slice() {
                let l = l as usize;
                if self.count[l] == 0 {
                    self.touched.push(l as LinkId);
                }
                self.count[l] += 1;
            }
        }
        let mut next = 0u32;
        for &l in &self.touched {
            let l = l as usize;
            self.start[l] = next;
            self.degree[l] = self.count[l];
            next += self.count[l];
        }
        self.adjacency.clear();
        self.adjacency.resize(next as usize, 0);
        // `degree` doubles as the fill pointer, then is restored.
        for (i, f) in flows.iter().enumerate() {
            for &l in f.links.as_slice() {
                let l = l as usize;
                let at = self.start[l] + self.count[l] - self.degree[l];
                self.adjacency[at as usize] = i as u32;
                self.degree[l] -= 1;
            }
        }
        self.heap.clear();
        for &l in &self.touched {
            let li = l as usize;
            self.degree[li] = self.count[li];
            self.version[li] = self.version[li].wrapping_add(1);
            self.heap.push(Reverse(Entry {
                share: residual[li].max(0.0) / self.count[li] as f64,
                link: l,
                version: self.version[li],
            }));
        }
        self.capped.clear();
        self.capped.extend(
            flows
                .iter()
                .enumerate()
                .filter(|(_, f)| f.cap.is_finite())
                .map(|(i, f)| (f.cap.max(0.0), i as u32)),
        );
        self.capped
            .sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let mut next_cap = 0usize;

        loop {
            let top = loop {
                match self.heap.peek() {
                    None => break None,
                    Some(Reverse(e))
                        if e.version != self.version[e.link as usize] || self.count[e.link as usize] == 0 =>
                    {
                        self.heap.pop();
                    }
                    Some(Reverse(e)) => break Some((e.share, e.link)),
                }
            };
            while next_cap < self.capped.len() && self.frozen[self.capped[next_cap].1 as usize] {
                next_cap += 1;
            }
            let cap = self.capped.get(next_cap).copied();
            let link_first = match (top, cap) {
                (None, None) => break,
                (Some((share, _)), Some((cv, _))) => share <= cv,
                (Some(_), None) => true,
                (None, Some(_)) => false,
            };
            match (top, cap) {
                (Some((share, link)), _) if link_first => {
                    let l = link as usize;
                    let (s, d) = (self.start[l] as usize, self.degree[l] as usize);
                    for k in s..s + d {
                        let f = self.adjacency[k] as usize;
                        if !self.frozen[f] {
                            self.freeze(residual, flows, rates, f, share);
                        }
                    }
                }
                (_, Some((cv, f))) => self.freeze(residual, flows, rates, f as usize, cv),
                _ => break,
            }
        }
        for &l in &self.touched {
            self.count[l as usize] = 0;
        }
    }

    fn freeze(&mut self, residual: &mut [f64], flows: &[Demand], rates: &mut [f64], f: usize, rate: f64) {
        self.frozen[f] = true;
        rates[f] = rate;
        for &l in flows[f].links.as_slice() {
            let li = l as usize;
            residual[li] = (residual[li] - rate).max(0.0);
            self.count[li] -= 1;
            self.version[li] = self.version[li].wrapping_add(1);
            if self.count[li] > 0 {
                self.heap.push(Reverse(Entry {
                    share: residual[li] / self.count[li] as f64,
                    link: l,
                    version: self.version[li],
                }));
            }
        }
    }
}

/// Max-min fair rates of `flows` on links of `capacity` (bytes per second).
pub fn max_min(capacity: &[f64], flows: &[Demand]) -> Vec<f64> {
    let mut residual = capacity.to_vec();
    let mut rates = Vec::new();
    WaterFill::new(capacity.len()).fill(&mut residual, flows, &mut rates);
    rates
}
