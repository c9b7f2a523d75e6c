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
pub mod interrupt;
pub mod lab;
pub mod replay;
pub mod run;
pub mod sim;
pub mod sweep;
pub mod topo;
pub mod trace;

pub use ocslab_agent::cli::init_logging;

/// Keeps glibc's malloc mapping buffers of 128 KiB and more on their own,
/// as it does at start. By default it raises that threshold to
/// the size of each such buffer freed (up to 32 MB), so that after a
/// simulation's vectors of flows have grown by doubling a few times, the
/// next ones come from the heap, whose freed pages stay resident: the
/// Co-scheduler experiment's Fair run peaked 35 MB higher
/// (docs/simulator.md). Mapped buffers grow in place (`mremap`) and go
/// back to the kernel when freed. No effect on other C libraries.
pub fn keep_mmap_threshold() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        /// The size from which malloc maps a buffer on its own (glibc's
        /// default starting value).
        const MMAP_THRESHOLD: i32 = 128 << 10;
        // SAFETY: mallopt only sets a malloc parameter; it takes no
        // pointer and runs before any thread is started.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
        }
    }
}
