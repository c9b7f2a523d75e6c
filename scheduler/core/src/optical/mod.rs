//! The optical circuit switch as both drivers and the kernel fabric see it:
//! [`matching`] (circuits and the rules a matching keeps) and [`schedule`]
//! (time-flow schedules: matchings with slot lengths, repeated). Pure: no
//! clock, no I/O.

pub mod matching;
pub mod schedule;

pub use matching::{
    circuits_of, diff, validate, validate_multipath, Circuit, Matching, MatchingError, ParseCircuitError,
};
pub use schedule::{Schedule, ScheduleError, Slot, SlotPort, MAX_SLOTS};
