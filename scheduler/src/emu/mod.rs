//! The emulation driver ([`ocslab_emu`]) run on experiment files
//! ([`experiment`]), and measured CCT set beside the fluid model's
//! prediction for the same flows ([`compare`]).

pub use ocslab_emu::*;

pub mod bench;
pub mod compare;
pub mod experiment;
