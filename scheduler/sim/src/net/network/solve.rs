//! Rates and link clocks: after an event, the changed bundles' demands go
//! to the max-min solver, and the bundles whose bottleneck moved change
//! service clock; finish times follow from the rates.

use super::bundles::BundleKey;
use super::FluidNetwork;
use crate::net::clocks::{drop_stale, Clock, NextFinishes};
use crate::net::levels::Bottleneck;
use crate::net::links::{LinkId, LinkMap, Links};
use crate::net::maxmin::Demand;
use crate::net::prefetch::{prefetch, with_ahead};
use ocslab_core::coflow::{CircuitView, Path};
use ocslab_core::{Bps, HostId, Nanos};
use std::cmp::Reverse;
use std::collections::BTreeMap;

impl FluidNetwork {
    /// Hands the changed bundles' demands to the max-min solver; rebases
    /// the clocks of the links whose level changed, moves the bundles whose
    /// bottleneck changed to their new clock (or off clocks), and
    /// recomputes the finish of those and of the bundles whose members
    /// changed. A bundle whose bottleneck stayed put is not touched.
    pub(super) fn update_rates(&mut self) {
        self.rates_stale = false;
        let now = self.now;
        let mut racks = std::mem::take(&mut self.circuits_changed);
        racks.sort_unstable();
        racks.dedup();
        for &rack in &racks {
            let Some(ocs) = self.ocs_bundles.get(&rack) else {
                continue;
            };
            for &b in ocs {
                Self::mark(&mut self.bundles, &mut self.dirty, b);
            }
        }
        racks.clear();
        self.circuits_changed = racks;
        // Each bundle once: the dirty ones, then those the solve moved.
        // A bundle stays dirty until the end: it tells the ones already taken.
        let mut touched = std::mem::take(&mut self.dirty);
        touched.sort_unstable();
        let mode = self.circuit_mode();
        for (b, ahead) in with_ahead(&touched) {
            if let Some(ahead) = ahead {
                prefetch(&self.bundles[ahead].key);
            }
            let bundle = &mut self.bundles[b];
            let (demand, class) = match bundle.key {
                Some(k) if bundle.count > 0 => {
                    let r = route(&self.view.links, &self.view.circuits, k, now, mode)
                        .filter(|(links, _)| !crosses_down(links, &self.down));
                    let on_circuit = matches!(r, Some((_, true)));
                    if bundle.on_circuit != on_circuit {
                        self.shares[b].switch(on_circuit, bundle.service(&self.clocks, now));
                        bundle.on_circuit = on_circuit;
                        bundle.had_circuit = true;
                    }
                    let demand = r.map(|(links, _)| Demand {
                        links,
                        cap: k.cap().map_or(f64::INFINITY, Bps::bytes_per_sec),
                        weight: bundle.weight,
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
        for (b, ahead) in with_ahead(&changes.slots) {
            if let Some(ahead) = ahead {
                prefetch(&self.bundles[ahead as usize]);
            }
            let b = b as usize;
            self.rehome(b);
            if !self.bundles[b].dirty {
                self.bundles[b].dirty = true;
                touched.push(b);
            }
        }
        self.changes = changes;
        for (b, ahead) in with_ahead(&touched) {
            if let Some(ahead) = ahead {
                prefetch(&self.bundles[ahead]);
            }
            let bundle = &mut self.bundles[b];
            bundle.dirty = false;
            bundle.generation = bundle.generation.wrapping_add(1);
            // Its next finish: on its link clock's heap, or, off clocks, in
            // the queue of finishes (where any entry it had goes otherwise).
            let off_clock = match bundle.clock {
                _ if !bundle.min_finish.is_finite() => None,
                Some(l) => {
                    let (at, generation) = (bundle.min_finish - bundle.offset, bundle.generation);
                    let bundles = &self.bundles;
                    self.clocks[l as usize].push_finish(at, b, generation, |b, g| {
                        bundles[b].generation == g && bundles[b].clock == Some(l)
                    });
                    Self::clock_due(&mut self.clocks, &mut self.clocks_due, l);
                    None
                }
                None => bundle.first_finish(&self.clocks, now),
            };
            self.finishes.set(b, off_clock);
        }
        touched.clear();
        self.dirty = touched;
        self.refresh_clocks();
        self.usage
            .set_rates(&self.rates.loads()[self.view.links.first_tracked() as usize..]);
        let mut emptied = std::mem::take(&mut self.emptied);
        for &b in &emptied {
            if let Some(k) = self.bundles[b].key.take() {
                if self.follows_circuits(k) {
                    if let Some(ocs) = self.ocs_bundles.get_mut(&k.src.rack) {
                        ocs.remove(&b);
                    }
                }
            }
            self.free_bundles.push(b);
        }
        emptied.clear();
        self.emptied = emptied;
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
                let b = &bundles[b as usize];
                b.generation == g && b.clock == Some(l)
            });
            let first = clock.finishes.peek().map(|&Reverse((_, b, _))| b as usize);
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
/// `slack` ([`super::bundles::Bundle::slack`]) is left, the test [`FluidNetwork::process`] applies. Rounding up the exact quotient instead
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

/// The links the flows of bundle `key` cross at `now`, and whether they
/// cross a circuit; `None` if they do not move (waiting, or their circuit
/// is not up). The caller makes flows whose route crosses a link that is
/// down wait too ([`FluidNetwork::set_link`]).
///
/// On demand, a flow on a circuit path takes the circuit of its port, and
/// only while it is up. Under a time-flow schedule the ports
/// are the schedule's: a flow between racks, on either path, crosses a
/// circuit of its rack pair while one is up, and EPS otherwise (as marked
/// packets do in the kernel fabric's eBPF datapath; on a fabric without an
/// EPS core it waits instead); when several circuits
/// join the pair, each host pair's flows take one of them
/// ([`spread_over`]).
pub(super) fn route(
    links: &LinkMap,
    circuits: &BTreeMap<(u32, u32), CircuitView>,
    key: BundleKey,
    now: Nanos,
    mode: CircuitMode,
) -> Option<(Links, bool)> {
    let (src, dst) = (key.src, key.dst);
    match (key.path, mode) {
        (Path::Wait, _) => None,
        (_, CircuitMode::Scheduled { eps }) if src.rack != dst.rack => {
            let up = circuits
                .range((src.rack, 0)..=(src.rack, u32::MAX))
                .filter(|(_, c)| c.dst_rack == dst.rack && c.is_up(now))
                .map(|(&(_, port), _)| port);
            match spread_over(up, src, dst) {
                Some(port) => Some((links.ocs_path(src, dst, port), true)),
                None if eps => Some((links.eps_route(src, dst), false)),
                None => None,
            }
        }
        (Path::Eps, _) => Some((links.eps_route(src, dst), false)),
        (Path::Ocs { port }, _) => circuits
            .get(&(src.rack, port))
            .filter(|c| c.dst_rack == dst.rack && c.is_up(now))
            .map(|_| (links.ocs_path(src, dst, port), true)),
    }
}

/// Whether `links` cross a link that is down (`down` by link id; empty
/// while no link ever went down).
fn crosses_down(links: &Links, down: &[bool]) -> bool {
    !down.is_empty() && links.as_slice().iter().any(|&l| down[l as usize])
}

/// The port, among `ports` (the circuits up between two racks, in port
/// order), that the flows from host `src` to host `dst` take: a hash of
/// the host pair picks one, so a rack pair's host pairs spread over its
/// circuits as the datapath's flow hash spreads connections.
pub(super) fn spread_over(ports: impl Iterator<Item = u32> + Clone, src: HostId, dst: HostId) -> Option<u32> {
    let n = ports.clone().count() as u64;
    if n == 0 {
        return None;
    }
    let pair = [src.rack, src.host, dst.rack, dst.host]
        .iter()
        .fold(0u64, |h, &x| (h ^ x as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    ports.clone().nth((splitmix(pair) % n) as usize)
}

/// SplitMix64's finalizer: spreads a key's bits over the whole word.
fn splitmix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// How bundles on circuits are routed ([`route`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum CircuitMode {
    /// Circuits set up on demand by the policy: a flow takes its port's circuit.
    OnDemand,
    /// Circuits follow a time-flow schedule; `eps`: whether there is an
    /// EPS core to fall back on.
    Scheduled {
        /// Whether racks are also joined by an EPS core.
        eps: bool,
    },
}
