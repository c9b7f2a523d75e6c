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
//! long without burning one of the box's few cores. A task carries its
//! *nominal* compute time; the agent's [`Speed`] (set by
//! [`crate::protocol::Command::SetSpeed`]: a slow host, a CPU straggler)
//! stretches a compute phase when it begins, and
//! [`crate::protocol::Command::RetimeTask`] moves the end of one already
//! running (each task's `ComputeClock`).

use crate::clock;
use crate::content::{self, ContentSource, PartitionContent};
use crate::data::Receipts;
use crate::protocol::{
    AgentMsg, MapTask, PartitionId, PartitionOutput, ReduceTask, Speed, TaskFailure, TaskId, TaskOutput,
    TaskPhase, TaskProgress, TaskReport,
};
use ocslab_emulator::{Bytes, Nanos};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::{mpsc, watch};
use tokio::task::AbortHandle;
use tokio::time::Instant;

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

/// When a task's compute phase ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ComputeClock {
    /// Not begun (reading input, waiting for partitions); `Some`: a retime
    /// already fixed its length.
    Pending(Option<Nanos>),
    /// Computing until then.
    Until(Instant),
}

impl ComputeClock {
    /// A retime received now: the compute ends `remaining` from now.
    fn retime(&mut self, now: Instant, remaining: Nanos) {
        *self = match *self {
            ComputeClock::Pending(_) => ComputeClock::Pending(Some(remaining)),
            ComputeClock::Until(_) => ComputeClock::Until(now + remaining.as_duration()),
        };
    }

    /// The compute begins now at `speed`, for `nominal` unless retimed.
    fn begin(&mut self, now: Instant, nominal: Nanos, speed: Speed) {
        if let ComputeClock::Pending(fixed) = *self {
            let length = fixed.unwrap_or_else(|| speed.stretch(nominal));
            *self = ComputeClock::Until(now + length.as_duration());
        }
    }
}

/// What a task body needs to time its compute phase.
#[derive(Clone)]
struct ComputeTimer {
    clock: Arc<watch::Sender<ComputeClock>>,
    speed: Arc<AtomicU32>,
}

impl ComputeTimer {
    /// Spends the compute phase: `nominal` at the agent's speed when it
    /// begins, or as retimed; a retime while it runs moves its end.
    async fn spend(&self, nominal: Nanos) {
        let speed = Speed(self.speed.load(Ordering::Relaxed));
        let mut rx = self.clock.subscribe();
        self.clock
            .send_modify(|c| c.begin(Instant::now(), nominal, speed));
        loop {
            let ComputeClock::Until(end) = *rx.borrow_and_update() else {
                return; // cannot happen: begun above
            };
            tokio::select! {
                _ = tokio::time::sleep_until(end) => return,
                changed = rx.changed() => {
                    if changed.is_err() {
                        tokio::time::sleep_until(end).await;
                        return;
                    }
                }
            }
        }
    }
}

struct Running {
    abort: AbortHandle,
    progress: Arc<Progress>,
    clock: Arc<watch::Sender<ComputeClock>>,
}

/// The tasks of one agent.
pub struct Tasks {
    slots: u32,
    running: Mutex<BTreeMap<TaskId, Running>>,
    receipts: Arc<Receipts>,
    outbox: mpsc::UnboundedSender<AgentMsg>,
    speed: Arc<AtomicU32>,
}

impl Tasks {
    /// `slots` slots; reports go to `outbox`; reduce inputs come from `receipts`.
    pub fn new(slots: u32, receipts: Arc<Receipts>, outbox: mpsc::UnboundedSender<AgentMsg>) -> Arc<Tasks> {
        Arc::new(Tasks {
            slots,
            running: Mutex::new(BTreeMap::new()),
            receipts,
            outbox,
            speed: Arc::new(AtomicU32::new(Speed::NOMINAL.0)),
        })
    }

    /// This host's compute speed from now on (compute phases that begin later).
    pub fn set_speed(&self, speed: Speed) {
        self.speed.store(speed.0, Ordering::Relaxed);
    }

    /// This host's compute speed.
    pub fn speed(&self) -> Speed {
        Speed(self.speed.load(Ordering::Relaxed))
    }

    /// The compute of task `id` ends `remaining` from now (or lasts that
    /// long once it begins). Unknown tasks (already finished) are ignored;
    /// returns whether the task was running.
    pub fn retime(&self, id: TaskId, remaining: Nanos) -> bool {
        match lock(&self.running).get(&id) {
            Some(r) => {
                r.clock.send_modify(|c| c.retime(Instant::now(), remaining));
                true
            }
            None => false,
        }
    }

    fn timer(&self) -> ComputeTimer {
        ComputeTimer {
            clock: Arc::new(watch::Sender::new(ComputeClock::Pending(None))),
            speed: self.speed.clone(),
        }
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
        let timer = self.timer();
        let clock = timer.clock.clone();
        self.start(id, progress, clock, async move { run_map(t, &p, &timer).await });
    }

    /// Starts a reduce task in a free slot (or reports why not).
    pub fn start_reduce(self: &Arc<Self>, t: ReduceTask) {
        let total = t.inputs.iter().map(|i| i.bytes.0).sum();
        let progress = Arc::new(Progress::new(TaskPhase::Fetch, total));
        let id = t.task;
        let p = progress.clone();
        let receipts = self.receipts.clone();
        let timer = self.timer();
        let clock = timer.clock.clone();
        self.start(id, progress, clock, async move {
            run_reduce(t, &receipts, &p, &timer).await
        });
    }

    fn start<F>(
        self: &Arc<Self>,
        id: TaskId,
        progress: Arc<Progress>,
        clock: Arc<watch::Sender<ComputeClock>>,
        body: F,
    ) where
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
                clock,
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

async fn run_map(t: MapTask, progress: &Progress, timer: &ComputeTimer) -> Result<TaskOutput, TaskFailure> {
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
    timer.spend(t.compute).await;
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
    timer: &ComputeTimer,
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
    timer.spend(t.compute).await;
    Ok(TaskOutput::Reduce {
        bytes_received: Bytes(total),
        partitions: t.inputs.len() as u32,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::JobId;
    use std::time::Duration;

    fn map(task: u64, compute: Nanos) -> MapTask {
        MapTask {
            task: TaskId(task),
            job: JobId(1),
            map: 0,
            seed: 1,
            input: Bytes(0),
            compute,
            partitions: vec![Bytes(10)],
        }
    }

    async fn report(rx: &mut mpsc::UnboundedReceiver<AgentMsg>) -> TaskReport {
        match tokio::time::timeout(Duration::from_secs(20), rx.recv()).await {
            Ok(Some(AgentMsg::TaskDone(r))) => r,
            other => panic!("expected a task report, got {other:?}"),
        }
    }

    #[test]
    fn a_retime_fixes_the_length_of_a_compute_not_yet_begun_and_moves_a_running_one() {
        let t0 = Instant::now();
        let mut c = ComputeClock::Pending(None);
        c.retime(t0, Nanos::from_millis(40));
        c.begin(
            t0 + Duration::from_secs(1),
            Nanos::from_millis(9000),
            Speed(250_000),
        );
        assert_eq!(
            c,
            ComputeClock::Until(t0 + Duration::from_secs(1) + Duration::from_millis(40))
        );
        let mut c = ComputeClock::Pending(None);
        c.begin(t0, Nanos::from_millis(100), Speed(250_000));
        assert_eq!(c, ComputeClock::Until(t0 + Duration::from_millis(400)));
        c.retime(t0 + Duration::from_millis(50), Nanos::from_millis(10));
        assert_eq!(c, ComputeClock::Until(t0 + Duration::from_millis(60)));
    }

    #[tokio::test]
    async fn a_slow_host_stretches_compute_and_a_retime_cuts_it_short() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let tasks = Tasks::new(2, Arc::new(Receipts::default()), tx);
        let nominal = Nanos::from_millis(100);
        tasks.start_map(map(1, nominal));
        let fast = report(&mut rx).await;
        tasks.set_speed(Speed::from_factor(0.25).expect("valid"));
        assert_eq!(tasks.speed(), Speed(250_000));
        tasks.start_map(map(2, nominal));
        let slow = report(&mut rx).await;
        let took = |r: &TaskReport| r.finished - r.started;
        assert!(took(&fast) >= nominal, "{:?}", took(&fast));
        assert!(
            took(&slow) >= Nanos::from_millis(400),
            "a quarter-speed host computes 4x longer: {:?}",
            took(&slow)
        );
        // A 5 s nominal compute (20 s at quarter speed) retimed to end 10 ms
        // later ends long before either.
        tasks.start_map(map(3, Nanos::from_millis(5000)));
        assert!(tasks.retime(TaskId(3), Nanos::from_millis(10)));
        let cut = report(&mut rx).await;
        assert!(took(&cut) < Nanos::from_millis(10_000), "{:?}", took(&cut));
        assert!(
            !tasks.retime(TaskId(3), Nanos(1)),
            "finished tasks are not retimed"
        );
    }
}
