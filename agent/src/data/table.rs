//! Bookkeeping shared by an agent's flows: progress counters (read by
//! heartbeats) and receipts of received flows (read by reduce tasks).

use crate::protocol::{FlowDone, FlowId, FlowProgress, FlowRole, FlowState};
use ocslab_emulator::Bytes;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::Notify;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic elsewhere cannot leave these maps inconsistent: each update is one insert or remove.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Live counters of one flow at one end, updated without locks.
#[derive(Debug)]
pub struct FlowCounters {
    state: AtomicU8,
    bytes: AtomicU64,
}

impl FlowCounters {
    fn new(state: FlowState) -> FlowCounters {
        FlowCounters {
            state: AtomicU8::new(state as u8),
            bytes: AtomicU64::new(0),
        }
    }
    /// Sets the state.
    pub fn set_state(&self, s: FlowState) {
        self.state.store(s as u8, Ordering::Relaxed);
    }
    /// The state.
    pub fn state(&self) -> FlowState {
        match self.state.load(Ordering::Relaxed) {
            x if x == FlowState::Held as u8 => FlowState::Held,
            x if x == FlowState::Connecting as u8 => FlowState::Connecting,
            _ => FlowState::Active,
        }
    }
    /// Counts `n` more bytes.
    pub fn add(&self, n: u64) {
        self.bytes.fetch_add(n, Ordering::Relaxed);
    }
    /// Bytes so far.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }
}

type FlowMap = BTreeMap<(FlowId, FlowRole), Arc<FlowCounters>>;

/// The flows in progress at an agent.
#[derive(Debug, Default)]
pub struct FlowTable {
    flows: Arc<Mutex<FlowMap>>,
}

/// A flow's entry in a [`FlowTable`], removed when dropped.
pub struct Registration {
    table: Arc<Mutex<FlowMap>>,
    key: (FlowId, FlowRole),
    counters: Arc<FlowCounters>,
}

impl Registration {
    /// The flow's counters.
    pub fn counters(&self) -> &FlowCounters {
        &self.counters
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        lock(&self.table).remove(&self.key);
    }
}

impl FlowTable {
    /// Adds a flow until the returned registration is dropped.
    pub fn register(&self, flow: FlowId, role: FlowRole, state: FlowState) -> Registration {
        let counters = Arc::new(FlowCounters::new(state));
        lock(&self.flows).insert((flow, role), counters.clone());
        Registration {
            table: self.flows.clone(),
            key: (flow, role),
            counters,
        }
    }

    /// Progress of every flow, in flow order.
    pub fn snapshot(&self) -> Vec<FlowProgress> {
        lock(&self.flows)
            .iter()
            .map(|(&(flow, role), c)| FlowProgress {
                flow,
                role,
                state: c.state(),
                bytes: Bytes(c.bytes()),
            })
            .collect()
    }

    /// Bytes received so far of `flow` (0 if not in progress).
    pub fn received_so_far(&self, flow: FlowId) -> u64 {
        lock(&self.flows)
            .get(&(flow, FlowRole::Receiver))
            .map_or(0, |c| c.bytes())
    }
}

/// Receipts kept at most; beyond, the oldest flow ids are forgotten (flows
/// no reduce task asks for, e.g. in trace replay, must not grow memory).
pub const MAX_RECEIPTS: usize = 65_536;

/// Flows received and not yet consumed by a reduce task.
#[derive(Debug, Default)]
pub struct Receipts {
    done: Mutex<BTreeMap<FlowId, FlowDone>>,
    arrived: Notify,
}

impl Receipts {
    /// Records a received flow and wakes waiters.
    pub fn insert(&self, done: FlowDone) {
        {
            let mut map = lock(&self.done);
            map.insert(done.flow, done);
            while map.len() > MAX_RECEIPTS {
                map.pop_first();
            }
        }
        self.arrived.notify_waiters();
    }

    /// Whether `flow` has been received.
    pub fn has(&self, flow: FlowId) -> bool {
        lock(&self.done).contains_key(&flow)
    }

    /// Waits until `flow` has been received and takes its receipt.
    pub async fn take(&self, flow: FlowId) -> FlowDone {
        loop {
            let notified = self.arrived.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(d) = lock(&self.done).remove(&flow) {
                return d;
            }
            notified.await;
        }
    }
}
