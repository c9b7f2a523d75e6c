//! The bodies of ocslab's fuzz targets, one function per parser that reads
//! bytes a user or a peer chose. Each `src/bin/<target>.rs` feeds AFL++'s
//! inputs to one of them (`scripts/fuzz` builds and runs them).
//!
//! Beyond "does not panic, does not hang", each body checks what the
//! parser promises: a rejected file is named in its error, and what is
//! accepted can be used (flows sized, messages encoded again).

use ocslab_agent::data::table::FlowTable;
use ocslab_agent::frame::read_frame;
use ocslab_agent::protocol::{AgentMsg, Command, DataAck, Hello, HelloReply};
use ocslab_core::optical::Schedule;
use ocslab_core::{Nanos, Topology};
use ocslab_scheduler::experiment::Experiment;
use ocslab_scheduler::trace::flow_sizes::{FlowSizes, Sizer};
use ocslab_scheduler::trace::{coflow_benchmark, swim};
use std::path::{Path, PathBuf};

/// The name every input is read under; each rejection must name it.
const FILE: &str = "fuzz-input.toml";

/// Coflows sized only up to this many flows each (mappers × reducers), so
/// a short input cannot ask for gigabytes of flow records.
const MAX_SIZED_FLOWS: usize = 100_000;

fn text(data: &[u8]) -> Option<&str> {
    std::str::from_utf8(data).ok()
}

fn names_the_file(err: &dyn std::fmt::Display, file: &str) {
    let msg = err.to_string();
    assert!(msg.contains(file), "a rejection that does not name {file}: {msg}");
}

/// A topology file (TOML).
pub fn topology(data: &[u8]) {
    let Some(t) = text(data) else { return };
    match Topology::parse(t, Path::new(FILE)) {
        Ok(topo) => {
            assert!(topo.hosts() > 0);
            let _ = topo.address_plan();
            let _ = topo.oversubscription();
            let the_box = ocslab_core::topology::EmulatingBox {
                limit: ocslab_core::topology::HostLimit {
                    hosts: 1024,
                    binding: "a fuzzed box".into(),
                },
                addresses: vec![std::net::IpAddr::from([127, 0, 0, 1])],
            };
            let _ = topo.check_emulable(Path::new(FILE), &the_box);
        }
        Err(e) => names_the_file(&e, FILE),
    }
}

/// An experiment file (TOML). It is read as if it sat in `experiments/`,
/// so the shipped topologies and traces resolve.
pub fn experiment(data: &[u8]) {
    let Some(t) = text(data) else { return };
    let file: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../experiments")
        .join(FILE);
    // A rejection may name the topology or trace the file points to rather
    // than the experiment file itself; either way it must not be empty.
    if let Err(e) = Experiment::parse(t, &file) {
        assert!(!e.to_string().is_empty());
    }
}

/// A Coflow-Benchmark trace; each accepted coflow is sized by every rule.
pub fn coflow_trace(data: &[u8]) {
    let Some(t) = text(data) else { return };
    match coflow_benchmark::parse(t, Path::new(FILE)) {
        Ok(trace) => {
            let sizers = [
                FlowSizes::CoflowSim,
                FlowSizes::Sunflow { seed: 1 },
                FlowSizes::Exact,
            ]
            .map(Sizer::new);
            for c in &trace.coflows {
                if c.mappers.len().saturating_mul(c.reducers.len()) > MAX_SIZED_FLOWS {
                    continue;
                }
                for s in &sizers {
                    let flows = s.flows(c);
                    let total = flows.iter().try_fold(0u64, |sum, f| sum.checked_add(f.bytes));
                    assert!(total.is_some(), "coflow at line {} overflows u64 bytes", c.line);
                }
            }
        }
        Err(e) => names_the_file(&e, FILE),
    }
}

/// A SWIM job trace.
pub fn swim_trace(data: &[u8]) {
    let Some(t) = text(data) else { return };
    if let Err(e) = swim::parse(t, Path::new(FILE)) {
        names_the_file(&e, FILE);
    }
}

/// A schedule file (`ocslab ocs schedule FILE`) for the lab's 4 racks × 2
/// wavelengths; an accepted schedule answers queries over two periods.
pub fn schedule(data: &[u8]) {
    let Some(t) = text(data) else { return };
    match Schedule::from_file(Path::new(FILE), t, 4, 2, Nanos(100_000)) {
        Ok(s) => {
            let p = s.period();
            for k in 0..8u64 {
                let at = Nanos(p.0.saturating_mul(k) / 4);
                let _ = s.slot_at(at);
            }
        }
        Err(e) => names_the_file(&e, FILE),
    }
}

/// The data plane: what a receiving agent reads from a sender (a header
/// frame, then the partition's bytes), answered with an acknowledgement.
pub fn data_stream(data: &[u8]) {
    let flows = FlowTable::default();
    let (mut r, mut w) = (data, tokio::io::sink());
    let done = futures::executor::block_on(ocslab_agent::data::stream::receive(&mut r, &mut w, &flows));
    if let Ok(done) = done {
        assert!(done.bytes_received.0 <= done.bytes_expected.0);
        assert!(!done.ok || done.bytes_received == done.bytes_expected);
    }
    assert!(
        flows.snapshot().is_empty(),
        "a finished stream left its flow registered"
    );
}

/// Control-plane frames, decoded as each message the two ends exchange;
/// a decoded message must encode again.
pub fn control_frames(data: &[u8]) {
    fn all<T: serde::de::DeserializeOwned + serde::Serialize>(data: &[u8]) {
        let mut r = data;
        let mut scratch = Vec::new();
        while let Ok(Some(msg)) = futures::executor::block_on(read_frame::<_, T>(&mut r, &mut scratch)) {
            assert!(serde_json::to_vec(&msg).is_ok());
        }
    }
    all::<Hello>(data);
    all::<HelloReply>(data);
    all::<AgentMsg>(data);
    all::<Command>(data);
    all::<DataAck>(data);
}
