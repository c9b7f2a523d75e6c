//! Carrying out a [`Decision`](super::Decision): the rules both drivers follow, written once.
//!
//! - **Which plan a flow follows** ([`plan_of`]): its pair's standing plan,
//!   else its own per-flow plan, else EPS with no cap; and a circuit path
//!   only for an elephant on a port the fabric has ([`FlowPlan::admissible`]),
//!   any other circuit plan goes over EPS with its cap.
//! - **What a circuit setup does** ([`set_up_circuits`]): setups are carried
//!   out in the order the decision lists them. One that is impossible (a
//!   rack or port the fabric lacks, a rack to itself) is ignored; one already
//!   up or coming up changes nothing. Otherwise whatever holds the sending
//!   side `(src_rack, port)` or the receiving side `(dst_rack, port)` is torn
//!   down (and, on a switch that routes one circuit per rack pair, any other
//!   circuit of the same pair), and the new circuit is up after δ. Other
//!   ports keep running (not-all-stop).
//!
//! A driver tells its optical switch about each change through
//! [`CircuitSwitch`]: the fluid simulator logs circuits and schedules their
//! events; the emulation driver collects the changes into the whole matching
//! the kernel's OCS applies.

use super::decision::{CircuitSetup, FlowPlan, PairPlans};
use super::view::{CircuitView, FabricParams, FlowView, Path};
use crate::Nanos;
use std::collections::BTreeMap;

/// An optical circuit switch, as a driver reconfigures it. Changes come one
/// at a time, in the order [`set_up_circuits`] makes them; `commit` ends a
/// decision's changes.
pub trait CircuitSwitch {
    /// Whether the switch routes at most one circuit per (sending rack,
    /// receiving rack) pair, so a second circuit of a pair replaces the
    /// first (the kernel fabric routes a rack pair's marked traffic through
    /// one port).
    fn one_circuit_per_rack_pair(&self) -> bool {
        false
    }
    /// `circuit` goes dark at `now`.
    fn tear_down(&mut self, now: Nanos, circuit: &CircuitView);
    /// `circuit` is set up at `now`; it carries traffic from its `up_at`.
    fn set_up(&mut self, now: Nanos, circuit: &CircuitView);
    /// The decision's changes are all made: a switch configured a whole
    /// matching at a time applies it now.
    fn commit(&mut self, _now: Nanos) {}
}

/// Carries out `setups` at `now`, in order, on `circuits` (the circuits
/// set up or coming up, keyed by their sending side, as
/// [`super::NetView::circuits`] holds them), telling `switch` each change
/// and committing at the end. Returns how many circuits were set up.
pub fn set_up_circuits<S: CircuitSwitch + ?Sized>(
    circuits: &mut BTreeMap<(u32, u32), CircuitView>,
    fabric: &FabricParams,
    setups: &[CircuitSetup],
    now: Nanos,
    switch: &mut S,
) -> u64 {
    let mut made = 0;
    for &s in setups {
        let possible = s.src_rack < fabric.racks
            && s.dst_rack < fabric.racks
            && s.src_rack != s.dst_rack
            && s.port < fabric.ocs_ports;
        if !possible {
            tracing::warn!(?s, "coflow policy asked for an impossible circuit; ignored");
            continue;
        }
        if circuits
            .get(&(s.src_rack, s.port))
            .is_some_and(|c| c.dst_rack == s.dst_rack)
        {
            continue;
        }
        if let Some(old) = circuits.remove(&(s.src_rack, s.port)) {
            switch.tear_down(now, &old);
        }
        // In one pass: the circuit into the receiving side, then (on a
        // switch with one circuit per rack pair) the pair's others.
        let per_pair = switch.one_circuit_per_rack_pair();
        let mut into = None;
        let mut same_pair: Vec<(u32, u32)> = Vec::new();
        for c in circuits.values() {
            let key = (c.src_rack, c.port);
            if into.is_none() && c.dst_rack == s.dst_rack && c.port == s.port {
                into = Some(key);
                if !per_pair {
                    break; // a receiving side takes one circuit
                }
            } else if per_pair && c.src_rack == s.src_rack && c.dst_rack == s.dst_rack {
                same_pair.push(key);
            }
        }
        for key in into.into_iter().chain(same_pair) {
            if let Some(old) = circuits.remove(&key) {
                switch.tear_down(now, &old);
            }
        }
        let circuit = CircuitView {
            src_rack: s.src_rack,
            dst_rack: s.dst_rack,
            port: s.port,
            up_at: now + fabric.reconfig_delay,
        };
        circuits.insert((s.src_rack, s.port), circuit);
        switch.set_up(now, &circuit);
        made += 1;
    }
    switch.commit(now);
    made
}

impl FlowPlan {
    /// The plan as `flow` can follow it on `fabric`: a circuit path only
    /// for an elephant ([`super::NetView::may_use_ocs`]) on a port the fabric
    /// has; any other circuit plan goes over EPS, keeping its cap.
    pub fn admissible(self, flow: &FlowView, fabric: &FabricParams) -> FlowPlan {
        match self.path {
            Path::Ocs { port } if port >= fabric.ocs_ports || !flow.elephant => FlowPlan {
                path: Path::Eps,
                cap: self.cap,
            },
            _ => self,
        }
    }
}

/// The plan `flow` follows after a decision: the standing plan of its
/// (coflow, source rack, destination rack) in `pair_plans`, else its own
/// per-flow plan `own`, else EPS with no cap.
pub fn plan_of(pair_plans: &PairPlans, own: Option<FlowPlan>, flow: &FlowView) -> FlowPlan {
    pair_plans
        .get((flow.spec.coflow, flow.spec.src.rack, flow.spec.dst.rack))
        .or(own)
        .unwrap_or(FlowPlan::EPS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Bps, Bytes};

    /// Records the changes it is told, in order.
    #[derive(Default)]
    struct Log {
        per_pair: bool,
        changes: Vec<(char, u32, u32, u32)>,
        commits: usize,
    }

    impl CircuitSwitch for Log {
        fn one_circuit_per_rack_pair(&self) -> bool {
            self.per_pair
        }
        fn tear_down(&mut self, _now: Nanos, c: &CircuitView) {
            self.changes.push(('-', c.src_rack, c.dst_rack, c.port));
        }
        fn set_up(&mut self, _now: Nanos, c: &CircuitView) {
            self.changes.push(('+', c.src_rack, c.dst_rack, c.port));
        }
        fn commit(&mut self, _now: Nanos) {
            self.commits += 1;
        }
    }

    fn fabric() -> FabricParams {
        FabricParams {
            racks: 4,
            hosts_per_rack: 1,
            host_rate: Bps(1_000_000_000),
            uplink_rate: Bps(1_000_000_000),
            ocs_ports: 2,
            ocs_port_rate: Bps(10_000_000_000),
            reconfig_delay: Nanos::from_millis(10),
            elephant_threshold: Bytes(1),
            scale: 1.0,
        }
    }

    fn setup(src_rack: u32, dst_rack: u32, port: u32) -> CircuitSetup {
        CircuitSetup {
            src_rack,
            dst_rack,
            port,
        }
    }

    #[test]
    fn a_setup_frees_both_port_sides_and_comes_up_after_the_delay() {
        let f = fabric();
        let mut circuits = BTreeMap::new();
        let mut log = Log::default();
        let t0 = Nanos::from_millis(1);
        set_up_circuits(&mut circuits, &f, &[setup(0, 1, 0), setup(2, 3, 0)], t0, &mut log);
        // 0 → 3 on port 0 takes rack 0's sending side (from 0 → 1) and
        // rack 3's receiving side (from 2 → 3).
        let t1 = Nanos::from_millis(5);
        let made = set_up_circuits(&mut circuits, &f, &[setup(0, 3, 0)], t1, &mut log);
        assert_eq!(made, 1);
        assert_eq!(
            log.changes,
            vec![
                ('+', 0, 1, 0),
                ('+', 2, 3, 0),
                ('-', 0, 1, 0),
                ('-', 2, 3, 0),
                ('+', 0, 3, 0)
            ]
        );
        assert_eq!(circuits.len(), 1);
        assert_eq!(circuits[&(0, 0)].up_at, t1 + f.reconfig_delay);
        assert_eq!(log.commits, 2);
    }

    #[test]
    fn repeated_and_impossible_setups_change_nothing() {
        let f = fabric();
        let mut circuits = BTreeMap::new();
        let mut log = Log::default();
        set_up_circuits(&mut circuits, &f, &[setup(0, 1, 1)], Nanos::ZERO, &mut log);
        let before = circuits.clone();
        let asks = [setup(0, 1, 1), setup(0, 0, 0), setup(0, 4, 0), setup(0, 1, 2)];
        let made = set_up_circuits(&mut circuits, &f, &asks, Nanos::from_millis(3), &mut log);
        assert_eq!(made, 0);
        assert_eq!(circuits, before, "the circuit coming up keeps its up_at");
        assert_eq!(log.changes, vec![('+', 0, 1, 1)]);
    }

    #[test]
    fn a_switch_with_one_circuit_per_rack_pair_replaces_the_pairs_other_port() {
        let f = fabric();
        let asks = [setup(0, 1, 0), setup(0, 1, 1)];
        let mut two = BTreeMap::new();
        set_up_circuits(&mut two, &f, &asks, Nanos::ZERO, &mut Log::default());
        assert_eq!(two.len(), 2, "the fluid model holds both ports");
        let mut one = BTreeMap::new();
        let mut kernel = Log {
            per_pair: true,
            ..Log::default()
        };
        set_up_circuits(&mut one, &f, &asks, Nanos::ZERO, &mut kernel);
        assert_eq!(one.keys().copied().collect::<Vec<_>>(), vec![(0, 1)]);
        assert_eq!(
            kernel.changes,
            vec![('+', 0, 1, 0), ('-', 0, 1, 0), ('+', 0, 1, 1)]
        );
    }
}
