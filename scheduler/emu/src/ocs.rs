//! [`OcsWorker`]: carries OCS matchings out on a thread of its own, since
//! a reconfiguration blocks for δ by design, and reports the kernel's
//! circuit events (down at teardown, up after δ, with the fabric's
//! timestamps) back to the driver's loop.
//!
//! Matchings queued while one is being applied are coalesced: only the
//! latest is applied next (each is a whole matching, so nothing is lost but
//! circuits that would have lived for less than δ).

use ocslab_core::engine::Circuit;
use ocslab_emulator::fabric::{self, CircuitEvent, Ocs};
use ocslab_emulator::Nanos;
use std::sync::mpsc;
use tokio::sync::mpsc as tmpsc;

/// What the worker reports.
#[derive(Clone, Debug, PartialEq)]
pub enum OcsReport {
    /// A circuit went down or came up (time on the shared monotonic clock).
    Event {
        /// When the kernel had applied it.
        at: Nanos,
        /// The circuit.
        circuit: Circuit,
        /// Up or down.
        up: bool,
    },
    /// A matching could not be applied.
    Failed(String),
}

/// The OCS thread and the channel to it.
pub struct OcsWorker {
    tx: Option<mpsc::Sender<Vec<Circuit>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl OcsWorker {
    /// A worker applying matchings on `ocs`; reports go to `reports`.
    pub fn start(ocs: Ocs, reports: tmpsc::UnboundedSender<OcsReport>) -> OcsWorker {
        let (tx, rx) = mpsc::channel::<Vec<Circuit>>();
        let thread = std::thread::Builder::new()
            .name("ocs".into())
            .spawn(move || {
                while let Ok(mut m) = rx.recv() {
                    while let Ok(newer) = rx.try_recv() {
                        m = newer;
                    }
                    let circuits: Vec<fabric::Circuit> = m
                        .iter()
                        .map(|c| fabric::Circuit {
                            src_rack: c.src_rack,
                            dst_rack: c.dst_rack,
                            port: c.port,
                        })
                        .collect();
                    match ocs.set_matching(&circuits) {
                        Ok(rec) => {
                            for e in rec.events {
                                if reports.send(report(e)).is_err() {
                                    return;
                                }
                            }
                        }
                        Err(e) => {
                            if reports.send(OcsReport::Failed(e.to_string())).is_err() {
                                return;
                            }
                        }
                    }
                }
            })
            .ok();
        OcsWorker { tx: Some(tx), thread }
    }

    /// Queues a whole matching.
    pub fn apply(&self, matching: Vec<Circuit>) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(matching);
        }
    }

    /// Whether the thread could be started.
    pub fn is_running(&self) -> bool {
        self.thread.is_some()
    }
}

impl Drop for OcsWorker {
    fn drop(&mut self) {
        self.tx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn report(e: CircuitEvent) -> OcsReport {
    OcsReport::Event {
        at: e.at,
        circuit: Circuit {
            src_rack: e.src_rack,
            dst_rack: e.dst_rack,
            port: e.port,
        },
        up: e.up,
    }
}
