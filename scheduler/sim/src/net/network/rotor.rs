//! A time-flow schedule in the fluid network (rotor switching, as in
//! RotorNet, Opera and Sirius): the circuits follow a repeating list of
//! matchings ([`Schedule`]) from time 0, the schedule's epoch, instead of
//! the coflow policy's requests.
//!
//! At each slot boundary the ports whose circuit changes are torn down and
//! set up again, up after the slot's dark time for that port (δ if its
//! output changed from the previous slot, 0 otherwise: not-all-stop); a
//! port that keeps its circuit carries on. At time 0 every circuit of slot
//! 0 is set up and takes δ ([`Schedule::dark`]). Boundaries are events of the
//! network's own clock while flows are active; an idle network skips them
//! and takes up the slot of the time it is moved to. The schedule's
//! circuits are neither logged nor reported as events (a 1 ms rotor on
//! four racks changes 8,000 circuits a simulated second): the schedule, kept
//! with the topology as run, says which circuit was up when. Routing under a
//! schedule is [`super::solve::route`]'s: a flow between racks crosses a
//! circuit of its rack pair while one is up, EPS otherwise. The policy's
//! circuit requests are ignored; its paths' ports too (the schedule's
//! circuits decide), its order and caps are kept.

use super::solve::CircuitMode;
use super::{BundleKey, FluidNetwork};
use ocslab_core::coflow::{CircuitView, Path};
use ocslab_core::optical::Schedule;
use ocslab_core::Nanos;

/// The schedule and where the network is in it.
#[derive(Debug)]
pub(super) struct Rotor {
    schedule: Schedule,
    /// When the slot after the current one begins.
    next: Nanos,
}

impl FluidNetwork {
    /// From now on the circuits follow `schedule`, whose slot 0 began at
    /// time 0 (call before adding flows). The policy's circuit requests
    /// are then ignored.
    ///
    /// # Panics
    /// If `schedule` is for another number of racks or wavelengths than the
    /// network's fabric: a validated topology's schedule always matches it.
    pub fn follow_schedule(&mut self, schedule: Schedule) {
        let f = &self.view.fabric;
        let ports = schedule.slots()[0].ports.len();
        assert_eq!(
            ports,
            (f.racks * f.ocs_ports) as usize,
            "a schedule for {ports} OCS ports on a fabric with {} racks × {} ports",
            f.racks,
            f.ocs_ports
        );
        self.rotor = Some(Rotor {
            schedule,
            next: Nanos::ZERO,
        });
        self.start_slot();
    }

    /// Whether the circuits follow a schedule.
    pub fn follows_schedule(&self) -> bool {
        self.rotor.is_some()
    }

    /// When the next slot begins, if the circuits follow a schedule and a
    /// flow is active (an idle network has no events of its own).
    pub(super) fn next_slot_at(&self) -> Option<Nanos> {
        let rotor = self.rotor.as_ref()?;
        (self.slots.active() > 0).then_some(rotor.next)
    }

    /// How circuits are routed ([`super::solve::route`]).
    pub(super) fn circuit_mode(&self) -> CircuitMode {
        match self.rotor {
            Some(_) => CircuitMode::Scheduled {
                eps: self.view.fabric.uplink_rate.0 > 0,
            },
            None => CircuitMode::OnDemand,
        }
    }

    /// Whether bundle `key`'s route changes when circuits change.
    pub(super) fn follows_circuits(&self, key: BundleKey) -> bool {
        match key.path {
            Path::Ocs { .. } => true,
            Path::Eps => self.rotor.is_some() && key.src.rack != key.dst.rack,
            Path::Wait => false,
        }
    }

    /// An idle network was moved past slot boundaries: it takes up the
    /// slot of now.
    pub(super) fn catch_up_schedule(&mut self) {
        if self.rotor.as_ref().is_some_and(|r| r.next <= self.now) {
            self.start_slot();
        }
    }

    /// Sets the circuits of the slot that `now` falls in: a port whose
    /// circuit is not the slot's is torn down and set up again, up after
    /// its dark time from the slot's start.
    pub(super) fn start_slot(&mut self) {
        let Some(rotor) = &mut self.rotor else {
            return;
        };
        let now = self.now;
        let schedule = &rotor.schedule;
        let (s, into) = schedule.slot_at(now);
        let start = Nanos(now.0 - into.0);
        let period = start.0 / schedule.period().0;
        let slot = &schedule.slots()[s];
        rotor.next = start + slot.length;
        let w = self.view.fabric.ocs_ports;
        for (p, sp) in slot.ports.iter().enumerate() {
            let (rack, port) = (p as u32 / w, p as u32 % w);
            let dark = schedule.dark(period, s, p);
            let want = sp.out.map(|out| CircuitView {
                src_rack: rack,
                dst_rack: out / w,
                port,
                up_at: start + dark,
            });
            let have = self.view.circuits.get(&(rack, port)).copied();
            let keep = match (have, want) {
                (Some(h), Some(c)) => h.dst_rack == c.dst_rack && (dark == Nanos::ZERO || h.up_at == c.up_at),
                (None, None) => true,
                _ => false,
            };
            if keep {
                continue;
            }
            self.circuits_changed.push(rack);
            self.view.circuits.remove(&(rack, port));
            if let Some(c) = want {
                self.view.circuits.insert((rack, port), c);
                self.stats.reconfigurations += 1;
            }
        }
    }
}
