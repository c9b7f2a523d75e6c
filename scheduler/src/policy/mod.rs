//! Task-placement policies: pure decision code, no I/O, no clock.
//!
//! (Minimal module on branch `p6` until the engine's policy table lands.)

pub mod dawn;
pub mod nas;
pub mod netaware;
pub mod shufflewatcher;
