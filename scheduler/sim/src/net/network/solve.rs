//! Rates and link clocks: after an event, the changed bundles' demands go
//! to the max-min solver, and the bundles whose bottleneck moved change
//! service clock; finish times follow from the rates.

use super::bundles::BundleKey;
use super::FluidNetwork;
use crate::net::clocks::{drop_stale, Clock, NextFinishes};
use crate::net::levels::Bottleneck;
use crate::net::links::{LinkId, LinkMap, Links};
use crate::net::maxmin::Demand;
use ocslab_core::coflow::{CircuitView, Path};
use ocslab_core::{Bps, Nanos};
use std::cmp::Reverse;
use std::collections::BTreeMap;

impl FluidNetwork {
    /// Hands the changed bundles' demands to the max-min solver; rebases
    /// the clocks of the links whose level changed, moves the bundles whose
    /// bottleneck changed to their new clock (or off clocks), and
    /// recomputes the finish of those and of the bundles whose members
    /// changed. A bundle whose bottleneck stayed put is not touched.
    pub(super) fn update_rates(&mut self) {
        let now = self.now;
        if std::mem::take(&mut self.circuits_changed) {
            let ocs: Vec<usize> = self.ocs_bundles.iter().copied().collect();
            ocs.into_iter().for_each(|b| self.mark_dirty(b));
        }
        // Each bundle once: the dirty ones, then those the solve moved.
        // A bundle stays dirty until the end: it tells the ones already taken.
        let mut touched = std::mem::take(&mut self.dirty);
        for &b in &touched {
            let bundle = &self.bundles[b];
            let (demand, class) = match bundle.key {
                Some(k) if bundle.count > 0 => {
                    let demand = route(&self.view.links, &self.view.circuits, k, now).map(|links| Demand {
                        links,
                        cap: k.cap().map_or(f64::INFINITY, Bps::bytes_per_sec),
                        weight: bundle.count,
                    });
                    (demand, k.class())
                }
                _ => (None, None),
            };
            self.rates.set(b, demand, class);
        }
        let mut changes = std::mem::take(&mut self.changes);
        self.rates.solve(&mut changes);
        // Classes (with their class links) come and go with coflows.
        let end = self.rates.bind_end();
        self.clock_next.grow(end);
        if end > self.clocks.len() {
            self.clocks.resize(end, Clock::default());
        }
        for &l in &changes.links {
            self.clocks[l as usize].set_level(now, self.rates.level(l));
            Self::clock_due(&mut self.clocks, &mut self.clocks_due, l);
        }
        for &b in &changes.slots {
            let b = b as usize;
            self.rehome(b);
            if !self.bundles[b].dirty {
                self.bundles[b].dirty = true;
                touched.push(b);
            }
        }
        self.changes = changes;
        for &b in &touched {
            let bundle = &mut self.bundles[b];
            bundle.dirty = false;
            bundle.generation = bundle.generation.wrapping_add(1);
            if !bundle.min_finish.is_finite() {
                continue;
            }
            match bundle.clock {
                Some(l) => {
                    let (at, generation) = (bundle.min_finish - bundle.offset, bundle.generation);
                    let bundles = &self.bundles;
                    self.clocks[l as usize].push_finish(at, b, generation, |b, g| {
                        bundles[b].generation == g && bundles[b].clock == Some(l)
                    });
                    Self::clock_due(&mut self.clocks, &mut self.clocks_due, l);
                }
                None => {
                    if let Some(t) = bundle.first_finish(&self.clocks, now) {
                        self.finishes.push(Reverse((t, b, bundle.generation)));
                    }
                }
            }
        }
        touched.clear();
        self.dirty = touched;
        self.refresh_clocks();
        self.usage
            .set_rates(&self.rates.loads()[self.view.links.first_tracked() as usize..]);
        let mut emptied = std::mem::take(&mut self.emptied);
        for &b in &emptied {
            if let Some(k) = self.bundles[b].key.take() {
                if matches!(k.path, Path::Ocs { .. }) {
                    self.ocs_bundles.remove(&b);
                }
            }
            self.free_bundles.push(b);
        }
        emptied.clear();
        self.emptied = emptied;
        // Stale entries dropped when they outnumber the bundles, and the
        // first entry current, for next_event_at.
        let bundles = &self.bundles;
        drop_stale(&mut self.finishes, 4 * bundles.len() + 4096, |&(_, b, g)| {
            bundles[b].generation == g
        });
    }

    /// Bundle `b`'s bottleneck (or demand) changed at the last solve: it
    /// leaves its clock with the service it has, and joins the clock of its
    /// new bottleneck link, or runs on its own at its cap (or stands still).
    fn rehome(&mut self, b: usize) {
        let now = self.now;
        let service = self.bundles[b].service(&self.clocks, now);
        if let Some(l) = self.bundles[b].clock.take() {
            self.clocks[l as usize].detach(now);
            Self::clock_due(&mut self.clocks, &mut self.clocks_due, l);
        }
        let bundle = &mut self.bundles[b];
        match self.rates.bottleneck(b) {
            Bottleneck::Link(l) => {
                let clock = &mut self.clocks[l as usize];
                clock.attach();
                bundle.clock = Some(l);
                bundle.offset = service - clock.value(now);
            }
            Bottleneck::Cap | Bottleneck::Idle => {
                bundle.base = service;
                bundle.base_time = now;
                bundle.rate = self.rates.rate(b);
            }
        }
    }

    /// Clock `l`'s next finish must be recomputed (once, however often this
    /// is said before [`FluidNetwork::refresh_clocks`]).
    pub(super) fn clock_due(clocks: &mut [Clock], due: &mut Vec<LinkId>, l: LinkId) {
        let clock = &mut clocks[l as usize];
        if !clock.due {
            clock.due = true;
            due.push(l);
        }
    }

    /// Recomputes the next finish of every clock in `clocks_due`, and the
    /// earliest of all clocks' (for next_event_at).
    fn refresh_clocks(&mut self) {
        let now = self.now;
        let due = std::mem::take(&mut self.clocks_due);
        for &l in &due {
            let li = l as usize;
            let bundles = &self.bundles;
            let clock = &mut self.clocks[li];
            clock.due = false;
            drop_stale(&mut clock.finishes, usize::MAX, |&(_, b, g)| {
                bundles[b].generation == g && bundles[b].clock == Some(l)
            });
            let first = clock.finishes.peek().map(|&Reverse((_, b, _))| b);
            // The first of the clock's bundles moves at the clock's level.
            let next = first
                .and_then(|b| bundles[b].first_finish(&self.clocks, now))
                .unwrap_or(NextFinishes::NONE);
            self.clock_next.set(li, next);
        }
        self.clocks_due = due;
        self.clocks_due.clear();
        self.first_clock_finish = self.clock_next.settle();
    }
}

/// When a member with `remaining` bytes to its finish counts as done at
/// `rate`, counted from `now`: the first nanosecond at which at most
/// `slack` ([`Bundle::slack`]) is left, the test [`FluidNetwork::process`] applies. Rounding up the exact quotient instead
/// would turn float noise (63963136 B / 125 MB/s * 1e9 = 511705088.00000006)
/// into a finish 1 ns late, and split events that happen together.
pub(super) fn eta(now: Nanos, remaining: f64, slack: f64, rate: f64) -> Option<Nanos> {
    if remaining <= slack {
        Some(now)
    } else if rate > 0.0 {
        let ns = ((remaining - slack) / rate * 1e9).ceil();
        Some(now + Nanos(ns.min(u64::MAX as f64) as u64))
    } else {
        None
    }
}

/// The links the flows of bundle `key` cross at `now`, or `None` if they do
/// not move (waiting, or their circuit is not up).
pub(super) fn route(
    links: &LinkMap,
    circuits: &BTreeMap<(u32, u32), CircuitView>,
    key: BundleKey,
    now: Nanos,
) -> Option<Links> {
    match key.path {
        Path::Eps => Some(links.eps_route(key.src, key.dst)),
        Path::Wait => None,
        Path::Ocs { port } => circuits
            .get(&(key.src.rack, port))
            .filter(|c| c.dst_rack == key.dst.rack && c.is_up(now))
            .map(|_| links.ocs_path(key.src, key.dst, port)),
    }
}
