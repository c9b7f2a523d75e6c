//! The `ocslab` command line: one module per command, each with its clap
//! arguments and a `run`-style function returning the process exit code.
//!
//! The arguments' doc comments are their `--help` text, printed as written:
//! placeholders such as `<rack>` there are not HTML.
#![allow(rustdoc::invalid_html_tags)]

pub mod bench;
pub mod bench_agents;
pub mod bench_fabric;
pub mod bench_sim;
pub mod completions;
pub mod demo;
pub mod lab;
pub mod replay;
pub mod run;
pub mod sim;
pub mod sweep;
pub mod topo;
pub mod trace;

pub use ocslab_agent::cli::init_logging;
