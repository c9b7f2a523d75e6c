//! Map and reduce tasks, run in the agent's slots.
//!
//! A map reads its input block (generated from the seed and CRC'd, so the
//! read costs real work proportional to its size), spends its compute time,
//! and writes one partition per reducer: partitions are not stored, their
//! content being a function of their key ([`crate::content`]); the map
//! reports each partition's size and checksum. A reduce waits until every
//! partition it names has been received and verified by the data plane
//! (from the host it names), then spends its compute time.
//!
//! Compute time is emulated by sleeping: a task occupies a slot for that
//! long without burning one of the box's few cores.

use crate::clock;
use crate::content::{self, ContentSource, PartitionContent};
use crate::data::Receipts;
use crate::protocol::{
    AgentMsg, MapTask, PartitionId, PartitionOutput, ReduceTask, TaskFailure, TaskId, TaskOutput, TaskPhase,
    TaskProgress, TaskReport,
};
use ocslab_emulator::Bytes;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Live progress of a task.
#[derive(Debug)]
struct Progress {
    phase: AtomicU8,
    done: AtomicU64,
    total: AtomicU64,
}

impl Progress {
    fn new(phase: TaskPhase, total: u64) -> Progress {
        Progress {
            phase: AtomicU8::new(phase as u8),
            done: AtomicU64::new(0),
            total: AtomicU64::new(total),
        }
    }
    fn phase(&self) -> TaskPhase {
        match self.phase.load(Ordering::Relaxed) {
            x if x == TaskPhase::Input as u8 => TaskPhase::Input,
            x if x == TaskPhase::Fetch as u8 => TaskPhase::Fetch,
            _ => TaskPhase::Compute,
        }
    }
    fn enter(&self, phase: TaskPhase, total: u64) {
        self.phase.store(phase as u8, Ordering::Relaxed);
        self.done.store(0, Ordering::Relaxed);
        self.total.store(total, Ordering::Relaxed);
    }
}

struct Running {
    abort: AbortHandle,
    progress: Arc<Progress>,
}

/// The tasks of one agent.
pub struct Tasks {
    slots: u32,
    running: Mutex<BTreeMap<TaskId, Running>>,
    receipts: Arc<Receipts>,
    outbox: mpsc::UnboundedSender<AgentMsg>,
}

impl Tasks {
    /// `slots` slots; reports go to `outbox`; reduce inputs come from `receipts`.
    pub fn new(slots: u32, receipts: Arc<Receipts>, outbox: mpsc::UnboundedSender<AgentMsg>) -> Arc<Tasks> {
        Arc::new(Tasks {
            slots,
            running: Mutex::new(BTreeMap::new()),
            receipts,
            outbox,
        })
    }

    /// Slots with no task.
    pub fn free_slots(&self) -> u32 {
        self.slots.saturating_sub(lock(&self.running).len() as u32)
    }

    /// Progress of the running tasks, in task order.
    pub fn progress(&self) -> Vec<TaskProgress> {
        lock(&self.running)
            .iter()
            .map(|(&task, r)| TaskProgress {
                task,
                phase: r.progress.phase(),
                done: Bytes(r.progress.done.load(Ordering::Relaxed)),
                total: Bytes(r.progress.total.load(Ordering::Relaxed)),
            })
            .collect()
    }

    /// Starts a map task in a free slot (or reports why not).
    pub fn start_map(self: &Arc<Self>, t: MapTask) {
        let progress = Arc::new(Progress::new(TaskPhase::Input, t.input.0));
        let id = t.task;
        let p = progress.clone();
        self.start(id, progress, async move { run_map(t, &p).await });
    }

    /// Starts a reduce task in a free slot (or reports why not).
    pub fn start_reduce(self: &Arc<Self>, t: ReduceTask) {
        let total = t.inputs.iter().map(|i| i.bytes.0).sum();
        let progress = Arc::new(Progress::new(TaskPhase::Fetch, total));
        let id = t.task;
        let p = progress.clone();
        let receipts = self.receipts.clone();
        self.start(id, progress, async move { run_reduce(t, &receipts, &p).await });
    }

    fn start<F>(self: &Arc<Self>, id: TaskId, progress: Arc<Progress>, body: F)
    where
        F: std::future::Future<Output = Result<TaskOutput, TaskFailure>> + Send + 'static,
    {
        let mut running = lock(&self.running);
        let refuse = if running.contains_key(&id) {
            Some(TaskFailure::Duplicate)
        } else if running.len() as u32 >= self.slots {
            Some(TaskFailure::NoFreeSlot)
        } else {
            None
        };
        if let Some(failure) = refuse {
            let _ = self.outbox.send(AgentMsg::TaskFailed {
                task: id,
                at: clock::now(),
                failure,
            });
            return;
        }
        let me = self.clone();
        // The entry is inserted before the lock is released, so the task
        // (which removes it when done) always finds it.
        let handle = tokio::spawn(async move {
            let started = clock::now();
            let result = body.await;
            let finished = clock::now();
            if lock(&me.running).remove(&id).is_none() {
                return; // killed meanwhile: already reported
            }
            let msg = match result {
                Ok(output) => AgentMsg::TaskDone(TaskReport {
                    task: id,
                    started,
                    finished,
                    output,
                }),
                Err(failure) => AgentMsg::TaskFailed {
                    task: id,
                    at: finished,
                    failure,
                },
            };
            let _ = me.outbox.send(msg);
        });
        running.insert(
            id,
            Running {
                abort: handle.abort_handle(),
                progress,
            },
        );
    }

    /// Kills a task; reports it failed with reason `killed`. Unknown tasks
    /// (already finished) are ignored.
    pub fn kill(&self, id: TaskId) {
        if let Some(r) = lock(&self.running).remove(&id) {
            r.abort.abort();
            let _ = self.outbox.send(AgentMsg::TaskFailed {
                task: id,
                at: clock::now(),
                failure: TaskFailure::Killed,
            });
        }
    }

    /// Kills every task without reporting (the agent is stopping).
    pub fn abort_all(&self) {
        for (_, r) in std::mem::take(&mut *lock(&self.running)) {
            r.abort.abort();
        }
    }
}

async fn run_map(t: MapTask, progress: &Progress) -> Result<TaskOutput, TaskFailure> {
    let mut input = PartitionContent::new(&content::input_id(t.job, t.map, t.seed), t.input);
    let mut buf = vec![0u8; 256 * 1024];
    let mut crc = crc32fast::Hasher::new();
    loop {
        let n = input.fill(&mut buf);
        if n == 0 {
            break;
        }
        crc.update(&buf[..n]);
        progress.done.fetch_add(n as u64, Ordering::Relaxed);
        tokio::task::yield_now().await;
    }
    progress.enter(TaskPhase::Compute, 0);
    tokio::time::sleep(t.compute.as_duration()).await;
    let partitions = t
        .partitions
        .iter()
        .enumerate()
        .map(|(reduce, &bytes)| {
            let partition = PartitionId {
                job: t.job,
                map: t.map,
                reduce: reduce as u32,
                seed: t.seed,
            };
            PartitionOutput {
                partition,
                bytes,
                checksum: content::expected_checksum(&partition, bytes),
            }
        })
        .collect();
    Ok(TaskOutput::Map {
        input_checksum: crc.finalize(),
        partitions,
    })
}

async fn run_reduce(
    t: ReduceTask,
    receipts: &Receipts,
    progress: &Progress,
) -> Result<TaskOutput, TaskFailure> {
    let mut total = 0u64;
    for input in &t.inputs {
        let r = receipts.take(input.flow).await;
        let bad = |detail: String| TaskFailure::BadInput {
            flow: input.flow,
            detail,
        };
        if !r.ok {
            return Err(bad(format!(
                "checksum mismatch or short: {} of {} bytes, crc {:08x}, expected {:08x}",
                r.bytes_received.0, r.bytes_expected.0, r.checksum, r.expected_checksum
            )));
        }
        if r.from != input.from || r.partition != input.partition || r.bytes_received != input.bytes {
            return Err(bad(format!(
                "expected {} bytes of {:?} from {}, got {} bytes of {:?} from {}",
                input.bytes.0, input.partition, input.from, r.bytes_received.0, r.partition, r.from
            )));
        }
        total += r.bytes_received.0;
        progress.done.fetch_add(r.bytes_received.0, Ordering::Relaxed);
    }
    progress.enter(TaskPhase::Compute, 0);
    tokio::time::sleep(t.compute.as_duration()).await;
    Ok(TaskOutput::Reduce {
        bytes_received: Bytes(total),
        partitions: t.inputs.len() as u32,
    })
}
