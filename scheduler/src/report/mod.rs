//! Run reports: per-scheduler summaries normalized to the first scheduler
//! ([`summary`]) and the results folder with the experiment as run and one
//! CSV per job, task attempt, coflow and flow ([`results`]), and the SVG
//! plots drawn from them ([`plots`]), the folder of a coflow-trace replay
//! ([`replay`]), and what was measured on the wire in an emulated run
//! ([`wire`]), and an experiment's spread over seeds or jittered twins ([`spread`]). Every folder is written under a temporary name and renamed
//! when complete ([`folder`]).

pub mod folder;
pub mod plots;
pub mod replay;
pub mod results;
pub mod spread;
pub mod summary;
pub mod wire;

pub use summary::{normalize, summarize, Normalized, SchedulerSummary};
