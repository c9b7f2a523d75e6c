//! The fluid model's optical circuit switch: the [`CircuitSwitch`] the
//! shared rules of [`ocslab_core::coflow::carry_out`] reconfigure. It keeps
//! a record of every circuit and raises the events a change causes at once
//! (a circuit torn down while up; one set up with δ = 0). A circuit coming
//! up later is an event of the network's own clock (its `up_at`).

use super::super::{CircuitRecord, NetEvent};
use ocslab_core::coflow::{CircuitSwitch, CircuitView};
use ocslab_core::Nanos;
use std::collections::BTreeMap;

/// Every circuit's life, and the events of the changes being made.
#[derive(Debug, Default)]
pub(super) struct FluidOcs {
    /// Every circuit set up, in set-up order.
    pub(super) log: Vec<CircuitRecord>,
    /// The log entry of each circuit not torn down, by sending side.
    open: BTreeMap<(u32, u32), usize>,
    /// Events the changes caused at once, for the network to report.
    pub(super) events: Vec<NetEvent>,
    /// The sending racks of the circuits set up or torn down since they
    /// were last taken.
    pub(super) changed: Vec<u32>,
}

impl CircuitSwitch for FluidOcs {
    fn tear_down(&mut self, now: Nanos, old: &CircuitView) {
        self.changed.push(old.src_rack);
        if let Some(i) = self.open.remove(&(old.src_rack, old.port)) {
            self.log[i].down_at = Some(now);
        }
        if old.is_up(now) {
            self.events.push(circuit_event(now, old, false));
        }
    }

    fn set_up(&mut self, now: Nanos, c: &CircuitView) {
        self.changed.push(c.src_rack);
        self.open.insert((c.src_rack, c.port), self.log.len());
        self.log.push(CircuitRecord {
            src_rack: c.src_rack,
            dst_rack: c.dst_rack,
            port: c.port,
            requested_at: now,
            up_at: c.up_at,
            down_at: None,
        });
        if c.up_at == now {
            self.events.push(circuit_event(now, c, true));
        }
    }
}

/// `c` came up or went down at `at`.
pub(super) fn circuit_event(at: Nanos, c: &CircuitView, up: bool) -> NetEvent {
    NetEvent::Circuit {
        at,
        src_rack: c.src_rack,
        dst_rack: c.dst_rack,
        port: c.port,
        up,
    }
}
