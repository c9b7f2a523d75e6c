//! Time-flow schedules: a list of matchings with slot lengths, repeated
//! (rotor switching, as in RotorNet, Opera and Sirius). Pure: no clock, no
//! I/O. The kernel fabric's eBPF datapath follows a schedule from the
//! kernel's clock by itself; the fluid simulator raises its slot boundaries
//! as events of its own clock.
//!
//! A port whose output changes from one slot to the next (cyclically) is
//! dark for δ at the start of the slot; a port that keeps its output
//! carries packets across the boundary (not-all-stop). A schedule starts
//! from dark ports: at its epoch every circuit of slot 0 is set up, so in
//! the first period slot 0 is dark for δ on every port it connects,
//! whatever the last slot had ([`Schedule::dark`]).

use super::matching::{validate_multipath, Circuit, MatchingError};
use crate::units::Nanos;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Slots a schedule may have: what the eBPF datapath's schedule map holds
/// (`MAX_SLOTS` in `emulator/bpf/ocs.bpf.c`).
pub const MAX_SLOTS: usize = 64;

/// One input port in one slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct SlotPort {
    /// Its output port (rack × wavelengths + wavelength), if any.
    pub out: Option<u32>,
    /// How long after the slot's start it is dark (δ if its output changed
    /// from the slot before, cyclically; in the first period, slot 0 is
    /// dark for δ on every port with an output: [`Schedule::dark`]).
    pub dark: Nanos,
}

/// One slot of a schedule.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Slot {
    /// How long it lasts.
    pub length: Nanos,
    /// The circuits of its matching.
    pub circuits: Vec<Circuit>,
    /// Every input port, indexed rack × wavelengths + wavelength.
    pub ports: Vec<SlotPort>,
}

/// A repeating list of matchings.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Schedule {
    slots: Vec<Slot>,
    wavelengths: u32,
    delay: Nanos,
}

/// Why a schedule is refused.
#[derive(Debug, thiserror::Error)]
pub enum ScheduleError {
    /// No slots, or more than the datapath holds.
    #[error("a schedule has 1 to {MAX_SLOTS} slots, not {0}")]
    SlotCount(usize),
    /// A slot too short for its dark time.
    #[error("slot {slot}: its length {length} is not longer than δ = {delay}, so a port that changes circuit would never carry a packet")]
    TooShort {
        /// The slot.
        slot: usize,
        /// Its length.
        length: Nanos,
        /// δ.
        delay: Nanos,
    },
    /// A slot's matching.
    #[error("slot {slot}: {source}")]
    Matching {
        /// The slot.
        slot: usize,
        /// What is wrong with it.
        #[source]
        source: MatchingError,
    },
    /// δ longer than the datapath holds per slot.
    #[error("δ = {0} is longer than a schedule's dark time can be (4.29 s)")]
    DelayTooLong(Nanos),
    /// A field as written.
    #[error("{why}")]
    Field {
        /// The field, e.g. `slots[2].length`.
        field: String,
        /// What is wrong with it.
        why: String,
    },
    /// A schedule file.
    #[error("{path}: {why}")]
    File {
        /// The file.
        path: String,
        /// What is wrong (with line and field where TOML says so).
        why: String,
    },
}

impl ScheduleError {
    /// The field of a schedule as written that the error is about, e.g.
    /// `slots[1].circuits` (empty for a file error).
    pub fn field(&self) -> String {
        match self {
            ScheduleError::SlotCount(_) => "slots".into(),
            ScheduleError::TooShort { slot, .. } => format!("slots[{slot}].length"),
            ScheduleError::Matching { slot, .. } => format!("slots[{slot}].circuits"),
            ScheduleError::DelayTooLong(_) => "delay".into(),
            ScheduleError::Field { field, .. } => field.clone(),
            ScheduleError::File { .. } => String::new(),
        }
    }
}

impl Schedule {
    /// A schedule of `slots` (length, matching) for a fabric of `racks` racks
    /// with `wavelengths` OCS ports each, with reconfiguration delay `delay`.
    pub fn new(
        racks: u32,
        wavelengths: u32,
        slots: &[(Nanos, Vec<Circuit>)],
        delay: Nanos,
    ) -> Result<Schedule, ScheduleError> {
        if slots.is_empty() || slots.len() > MAX_SLOTS {
            return Err(ScheduleError::SlotCount(slots.len()));
        }
        if delay.0 > u32::MAX as u64 {
            return Err(ScheduleError::DelayTooLong(delay));
        }
        let n_ports = (racks * wavelengths) as usize;
        let mut outs = Vec::with_capacity(slots.len());
        for (s, (_, circuits)) in slots.iter().enumerate() {
            let m = validate_multipath(racks, wavelengths, circuits)
                .map_err(|source| ScheduleError::Matching { slot: s, source })?;
            let mut out = vec![None; n_ports];
            for ((src, w), dst) in m {
                out[(src * wavelengths + w) as usize] = Some(dst * wavelengths + w);
            }
            outs.push(out);
        }
        let mut built = Vec::with_capacity(slots.len());
        for (s, (length, circuits)) in slots.iter().enumerate() {
            let prev = &outs[(s + slots.len() - 1) % slots.len()];
            let ports: Vec<SlotPort> = (0..n_ports)
                .map(|p| {
                    let out = outs[s][p];
                    let dark = if out.is_some() && out != prev[p] {
                        delay
                    } else {
                        Nanos(0)
                    };
                    SlotPort { out, dark }
                })
                .collect();
            if ports.iter().any(|p| p.dark >= *length) {
                return Err(ScheduleError::TooShort {
                    slot: s,
                    length: *length,
                    delay,
                });
            }
            built.push(Slot {
                length: *length,
                circuits: circuits.clone(),
                ports,
            });
        }
        Ok(Schedule {
            slots: built,
            wavelengths,
            delay,
        })
    }

    /// The slots, in order.
    pub fn slots(&self) -> &[Slot] {
        &self.slots
    }

    /// δ, the dark time of a port whose circuit changes.
    pub fn delay(&self) -> Nanos {
        self.delay
    }

    /// The length of one round of all slots.
    pub fn period(&self) -> Nanos {
        Nanos(self.slots.iter().map(|s| s.length.0).sum())
    }

    /// When slot `s` starts within a period.
    pub fn slot_start(&self, s: usize) -> Nanos {
        Nanos(self.slots[..s].iter().map(|s| s.length.0).sum())
    }

    /// How long port `port` (rack × wavelengths + wavelength) is dark at
    /// the start of slot `s` of period `k` (0: the first, from the epoch):
    /// the slot's [`SlotPort::dark`], except in slot 0 of the first period,
    /// where every circuit is set up from a dark port and takes δ.
    pub fn dark(&self, k: u64, s: usize, port: usize) -> Nanos {
        let p = self.slots[s].ports[port];
        if k == 0 && s == 0 && p.out.is_some() {
            self.delay
        } else {
            p.dark
        }
    }

    /// The slot that time `t` after the schedule's epoch falls in, and how
    /// far into it.
    pub fn slot_at(&self, t: Nanos) -> (usize, Nanos) {
        let mut off = t.0 % self.period().0;
        for (s, slot) in self.slots.iter().enumerate() {
            if off < slot.length.0 {
                return (s, Nanos(off));
            }
            off -= slot.length.0;
        }
        (self.slots.len() - 1, Nanos(off))
    }

    /// The rack that port (`rack`, `w`) reaches at time `t` after the
    /// epoch, if its circuit is up then (what the datapath computes per
    /// packet).
    pub fn reaches(&self, rack: u32, w: u32, t: Nanos) -> Option<u32> {
        let (s, into) = self.slot_at(t);
        let port = (rack * self.wavelengths + w) as usize;
        match self.slots[s].ports[port].out {
            Some(out) if into >= self.dark(t.0 / self.period().0, s, port) => Some(out / self.wavelengths),
            _ => None,
        }
    }

    /// The usable window of the circuit from port (`rack`, `w`) to rack
    /// `dst` that some instant of `[from, to]` (times after the epoch)
    /// falls in, as (period index, slot): where a packet seen only between
    /// those two times could have been switched to `dst`. `None`: no
    /// instant of `[from, to]` is in such a window.
    pub fn usable_window(&self, rack: u32, w: u32, dst: u32, from: Nanos, to: Nanos) -> Option<(u64, usize)> {
        let period = self.period().0;
        let port = (rack * self.wavelengths + w) as usize;
        for k in from.0 / period..=to.0 / period {
            for (s, slot) in self.slots.iter().enumerate() {
                let p = slot.ports[port];
                if p.out.map(|o| o / self.wavelengths) != Some(dst) {
                    continue;
                }
                let start = k * period + self.slot_start(s).0;
                let (open, close) = (start + self.dark(k, s, port).0, start + slot.length.0);
                if open <= to.0 && from.0 < close {
                    return Some((k, s));
                }
            }
        }
        None
    }

    /// The usable window of the circuit from port (`rack`, `w`) to rack
    /// `dst` that holds every instant of `[from, to]`, as
    /// [`Schedule::usable_window`] names it: where a packet seen only
    /// between those two times must have been switched to `dst`. `None`:
    /// some instant of `[from, to]` is outside every such window.
    pub fn holding_window(
        &self,
        rack: u32,
        w: u32,
        dst: u32,
        from: Nanos,
        to: Nanos,
    ) -> Option<(u64, usize)> {
        // A window is one span of time: it holds both ends, or not all.
        let first = self.usable_window(rack, w, dst, from, from)?;
        (self.usable_window(rack, w, dst, to, to) == Some(first)).then_some(first)
    }

    /// Reads a schedule file (the TOML of [`RawSchedule`]) for a fabric of
    /// `racks` × `wavelengths` with δ = `delay` (the topology's unless the
    /// file sets `delay`). Errors name `path` and the field.
    pub fn from_file(
        path: &Path,
        text: &str,
        racks: u32,
        wavelengths: u32,
        delay: Nanos,
    ) -> Result<Schedule, ScheduleError> {
        let file_err = |why: String| ScheduleError::File {
            path: path.display().to_string(),
            why,
        };
        let raw: RawSchedule = toml::from_str(text).map_err(|e| file_err(e.to_string()))?;
        Schedule::from_raw(&raw, racks, wavelengths, delay)
            .map_err(|e| file_err(format!("{}: {e}", e.field())))
    }

    /// Validates a schedule as written (in a schedule file, or a topology's
    /// `[ocs.schedule]`), as [`Schedule::new`] does.
    pub fn from_raw(
        raw: &RawSchedule,
        racks: u32,
        wavelengths: u32,
        delay: Nanos,
    ) -> Result<Schedule, ScheduleError> {
        let field_err = |field: String, why: String| ScheduleError::Field { field, why };
        let duration = |field: &str, v: &str| -> Result<Nanos, ScheduleError> {
            v.parse::<Nanos>()
                .map_err(|e| field_err(field.to_string(), format!("{v:?}: {e}")))
        };
        let default_len = raw.slot.as_deref().map(|v| duration("slot", v)).transpose()?;
        let delay = match raw.delay.as_deref() {
            Some(v) => duration("delay", v)?,
            None => delay,
        };
        let mut slots = Vec::with_capacity(raw.slots.len());
        for (i, s) in raw.slots.iter().enumerate() {
            let field = format!("slots[{i}]");
            let length = match (&s.length, default_len) {
                (Some(v), _) => duration(&format!("{field}.length"), v)?,
                (None, Some(d)) => d,
                (None, None) => {
                    return Err(field_err(
                        format!("{field}.length"),
                        "missing, and no default `slot` length".into(),
                    ))
                }
            };
            let circuits = s
                .circuits
                .iter()
                .map(|c| {
                    c.parse::<Circuit>()
                        .map_err(|e| field_err(format!("{field}.circuits"), e.to_string()))
                })
                .collect::<Result<Vec<_>, _>>()?;
            slots.push((length, circuits));
        }
        Schedule::new(racks, wavelengths, &slots, delay)
    }
}

/// A schedule as written, in a schedule file or as a topology's
/// `[ocs.schedule]` table:
///
/// ```toml
/// slot = "50us"        # default slot length
/// delay = "10us"       # optional: δ (default: the topology's reconfig_delay)
/// [[slots]]
/// circuits = ["0:1", "1:2", "2:3", "3:0"]
/// [[slots]]
/// length = "100us"     # optional: this slot's length
/// circuits = ["0:2@0", "2:0"]
/// ```
///
/// Times are not scaled by the topology's `scale` (it divides rates and
/// sizes only).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSchedule {
    /// Default slot length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot: Option<String>,
    /// δ, if not the topology's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<String>,
    /// The slots, in order.
    pub slots: Vec<RawSlot>,
}

/// One slot as written.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSlot {
    /// Its length, if not the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub length: Option<String>,
    /// Its circuits, `SRC:DST` or `SRC:DST@PORT`.
    pub circuits: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(src_rack: u32, dst_rack: u32) -> Circuit {
        Circuit {
            src_rack,
            dst_rack,
            port: 0,
        }
    }

    fn us(n: u64) -> Nanos {
        Nanos(n * 1000)
    }

    /// Four racks, three slots of 50 µs: rack r reaches r+1, r+2, r+3 in
    /// turn (a RotorNet-style round robin), δ = 10 µs.
    fn rotor() -> Schedule {
        let slots: Vec<_> = (1..4)
            .map(|k| (us(50), (0..4).map(|r| c(r, (r + k) % 4)).collect()))
            .collect();
        Schedule::new(4, 1, &slots, us(10)).unwrap()
    }

    #[test]
    fn a_rotor_serves_each_pair_in_its_slot_after_the_dark_time() {
        let s = rotor();
        assert_eq!(s.period(), us(150));
        assert_eq!(s.slot_start(2), us(100));
        // Slot 1 (50..100 µs): rack 0 reaches rack 2 from 60 µs on.
        assert_eq!(s.reaches(0, 0, us(55)), None, "dark for δ");
        assert_eq!(s.reaches(0, 0, us(60)), Some(2));
        assert_eq!(s.reaches(0, 0, us(99)), Some(2));
        assert_eq!(s.reaches(0, 0, us(100)), None, "slot 2 begins dark");
        assert_eq!(s.reaches(0, 0, us(110)), Some(3));
        // The schedule repeats.
        assert_eq!(s.reaches(0, 0, us(150 + 10)), Some(1));
        assert_eq!(s.reaches(3, 0, us(3 * 150 + 20)), Some(0));
    }

    #[test]
    fn a_time_span_is_placed_in_the_pairs_usable_window() {
        let s = rotor();
        // Rack 0 reaches rack 2 in slot 1, usable 60..100 µs of each period.
        assert_eq!(s.usable_window(0, 0, 2, us(61), us(70)), Some((0, 1)));
        assert_eq!(s.usable_window(0, 0, 2, us(50), us(59)), None, "dark");
        assert_eq!(
            s.usable_window(0, 0, 2, us(55), us(60)),
            Some((0, 1)),
            "ends at the opening"
        );
        assert_eq!(
            s.usable_window(0, 0, 2, us(100), us(205)),
            None,
            "slot 2, slot 0, slot 1 dark"
        );
        assert_eq!(
            s.usable_window(0, 0, 2, us(100), us(215)),
            Some((1, 1)),
            "next period"
        );
        assert_eq!(
            s.usable_window(0, 0, 3, us(61), us(70)),
            None,
            "another pair's slot"
        );
        // A span all inside one window, or not.
        let spans = [
            (61, 70, Some((0, 1)), "inside"),
            (55, 70, None, "starts dark"),
            (90, 101, None, "ends after the close"),
            (61, 215, None, "two windows, with slots between"),
        ];
        for (from, to, want, why) in spans {
            assert_eq!(s.holding_window(0, 0, 2, us(from), us(to)), want, "{why}");
        }
    }

    #[test]
    fn a_port_that_keeps_its_circuit_is_never_dark() {
        let slots = vec![(us(50), vec![c(0, 1), c(2, 3)]), (us(50), vec![c(0, 1), c(2, 0)])];
        let s = Schedule::new(4, 1, &slots, us(10)).unwrap();
        assert_eq!(s.slots()[1].ports[0].dark, Nanos(0));
        assert_eq!(s.reaches(0, 0, us(50)), Some(1));
        assert_eq!(s.slots()[1].ports[2].dark, us(10));
        assert_eq!(s.reaches(2, 0, us(55)), None);
        // Slot 0 follows slot 1 cyclically: port 2 changes back, port 1 has none.
        assert_eq!(s.slots()[0].ports[2].dark, us(10));
        assert_eq!(
            s.slots()[0].ports[1],
            SlotPort {
                out: None,
                dark: Nanos(0)
            }
        );
    }

    #[test]
    fn the_first_slot_sets_up_every_circuit_from_dark() {
        // Port 0 keeps its circuit to rack 1 from slot 1 into slot 0.
        let slots = vec![(us(50), vec![c(0, 1), c(2, 3)]), (us(50), vec![c(0, 1), c(2, 0)])];
        let s = Schedule::new(4, 1, &slots, us(10)).unwrap();
        assert_eq!(s.slots()[0].ports[0].dark, Nanos(0));
        // At the epoch no circuit is up yet: every one of slot 0 is set up.
        assert_eq!(s.dark(0, 0, 0), us(10));
        assert_eq!(
            s.reaches(0, 0, us(9)),
            None,
            "the first period's slot 0 starts dark"
        );
        assert_eq!(s.reaches(0, 0, us(10)), Some(1));
        assert_eq!(s.usable_window(0, 0, 1, us(0), us(9)), None);
        // Later periods carry it across the boundary (not-all-stop).
        assert_eq!(s.dark(1, 0, 0), Nanos(0));
        assert_eq!(s.reaches(0, 0, us(100)), Some(1));
        assert_eq!(s.usable_window(0, 0, 1, us(100), us(101)), Some((1, 0)));
        // A port with no circuit in slot 0 has no dark time to take.
        assert_eq!(s.dark(0, 0, 1), Nanos(0));
    }

    #[test]
    fn bad_schedules_are_refused_naming_the_slot() {
        assert!(matches!(
            Schedule::new(4, 1, &[], us(10)),
            Err(ScheduleError::SlotCount(0))
        ));
        let short = Schedule::new(4, 1, &[(us(10), vec![c(0, 1)]), (us(50), vec![c(0, 2)])], us(10));
        assert!(
            matches!(short, Err(ScheduleError::TooShort { slot: 0, .. })),
            "{short:?}"
        );
        let taken = Schedule::new(4, 1, &[(us(50), vec![c(0, 1), c(0, 2)])], us(10));
        assert!(matches!(taken, Err(ScheduleError::Matching { slot: 0, .. })));
    }

    #[test]
    fn a_schedule_file_names_the_bad_field() {
        let p = Path::new("rotor.toml");
        let ok = "slot = \"50us\"\ndelay = \"10us\"\n[[slots]]\ncircuits = [\"0:1\", \"1:0\"]\n[[slots]]\nlength = \"100us\"\ncircuits = [\"0:1@1\", \"1:0@1\"]\n";
        let s = Schedule::from_file(p, ok, 2, 2, us(1)).unwrap();
        assert_eq!(s.period(), us(150));
        assert_eq!(s.delay(), us(10));
        let e =
            Schedule::from_file(p, "slot = \"fast\"\n[[slots]]\ncircuits = []\n", 2, 1, us(1)).unwrap_err();
        assert!(e.to_string().contains("rotor.toml: slot: \"fast\""), "{e}");
        let e = Schedule::from_file(p, "[[slots]]\ncircuits = [\"0:1\"]\n", 2, 1, us(1)).unwrap_err();
        assert!(e.to_string().contains("slots[0].length: missing"), "{e}");
        let e = Schedule::from_file(
            p,
            "slot = \"50us\"\n[[slots]]\ncircuits = [\"0:x\"]\n",
            2,
            1,
            us(1),
        )
        .unwrap_err();
        assert!(e.to_string().contains("slots[0].circuits: \"0:x\""), "{e}");
    }
}
