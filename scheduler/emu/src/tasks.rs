//! [`TaskBridge`]: the engine's task commands as agent commands, and agent
//! task reports as engine events. Pure (no I/O, no clock).
//!
//! The engine splits a task into a slot ([`EngineCommand::StartTask`]), the
//! flows it needs (an input read, shuffle fetches: handled by
//! [`super::network::EmuNetwork`]) and a compute phase
//! ([`EngineCommand::Compute`]). The agent runs a task as one unit, so the
//! bridge sends it at the compute phase:
//! - a map becomes [`Command::RunMap`]: the agent generates the input block
//!   from the seed and CRCs it (real work in proportion to its size), spends
//!   the compute time, and reports one partition per reduce (sizes from the
//!   job model) with its checksum;
//! - a reduce becomes [`Command::RunReduce`] with no inputs left to wait for
//!   (the engine starts compute only once every fetch flow was received and
//!   verified by its receiver, see [`partition_key`]), then spends its
//!   compute time.
//!
//! A kill becomes [`Command::KillTask`] if the attempt reached its agent.
//!
//! Speeds: a task's `compute` is its *nominal* time from the job model; the
//! agent stretches it by its host's speed ([`Command::SetSpeed`], sent by
//! [`super::perturb::PerturbPlan`]), which is the speed the engine divides
//! by, so both expect the same end. When a host's speed changes the engine
//! retimes the computes running there ([`EngineCommand::Retime`]): each
//! becomes [`Command::RetimeTask`] with the compute time left.

use ocslab_agent::protocol::{self as wire, AgentMsg, Command, MapTask, PartitionId, ReduceTask, TaskOutput};
use ocslab_core::engine::{input_coflow, AttemptId, Command as EngineCommand, Event, INPUT_COFLOW_BIT};
use ocslab_core::model::coflow::FlowSpec;
use ocslab_core::model::job::{Job, JobId, TaskKind};
use ocslab_emulator::{Bytes, HostId};
use std::collections::BTreeMap;

/// Why a task report cannot be turned into an engine event.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TaskError {
    /// A task failed on its agent for a reason other than a kill.
    #[error("task {attempt} failed on {host}: {reason}")]
    Failed {
        /// The attempt.
        attempt: AttemptId,
        /// Its host.
        host: HostId,
        /// What the agent said.
        reason: String,
    },
}

/// The content key of a flow's bytes. An engine fetch carries every
/// partition ready on its source host for one reduce, so it is keyed by its
/// flow id rather than one (map, reduce) pair; an input read is keyed as
/// the agent keys input blocks. Either way the receiver regenerates the
/// content from the key and size and checks the CRC.
pub fn partition_key(flow: &FlowSpec, seed: u64) -> PartitionId {
    let input = flow.coflow.0 & INPUT_COFLOW_BIT != 0;
    let job = wire::JobId(flow.coflow.0 & !INPUT_COFLOW_BIT);
    PartitionId {
        job,
        map: (flow.id.0 & 0xffff_ffff) as u32,
        reduce: if input { u32::MAX } else { (flow.id.0 >> 32) as u32 },
        seed,
    }
}

/// Whether `flow` is a map's input read (rather than a shuffle fetch).
pub fn is_input_read(flow: &FlowSpec) -> bool {
    flow.coflow == input_coflow(JobId(flow.coflow.0 & !INPUT_COFLOW_BIT))
}

#[derive(Clone, Copy, Debug)]
struct Sent {
    attempt: AttemptId,
    host: HostId,
}

/// Engine task commands ↔ agent task commands.
pub struct TaskBridge {
    jobs: BTreeMap<JobId, Job>,
    seed: u64,
    next: u64,
    by_attempt: BTreeMap<AttemptId, wire::TaskId>,
    by_task: BTreeMap<wire::TaskId, Sent>,
}

impl TaskBridge {
    /// A bridge for the workload `jobs`, content keyed by `seed`.
    pub fn new(jobs: &[Job], seed: u64) -> TaskBridge {
        TaskBridge {
            jobs: jobs.iter().map(|j| (j.id, j.clone())).collect(),
            seed,
            next: 0,
            by_attempt: BTreeMap::new(),
            by_task: BTreeMap::new(),
        }
    }

    /// Tasks sent to agents and not yet reported.
    pub fn running(&self) -> usize {
        self.by_task.len()
    }

    /// The agent command for an engine task command, if it needs one
    /// (`StartTask` and `StartFlows` do not; flows go to the network).
    pub fn command(&mut self, cmd: &EngineCommand) -> Option<(HostId, Command)> {
        match *cmd {
            EngineCommand::Compute { attempt, host, .. } => {
                let job = self.jobs.get(&attempt.task.job)?;
                let task = wire::TaskId(self.next);
                self.next += 1;
                let wjob = wire::JobId(job.id.0);
                let c = match attempt.task.kind {
                    TaskKind::Map => {
                        let m = attempt.task.index;
                        let map = job.maps.get(m as usize)?;
                        Command::RunMap(MapTask {
                            task,
                            job: wjob,
                            map: m,
                            seed: self.seed,
                            input: map.input,
                            compute: map.duration,
                            partitions: (0..job.reduce_count()).map(|r| job.partition(m, r)).collect(),
                        })
                    }
                    TaskKind::Reduce => Command::RunReduce(ReduceTask {
                        task,
                        job: wjob,
                        reduce: attempt.task.index,
                        compute: job.reduces.get(attempt.task.index as usize)?.duration,
                        inputs: Vec::new(),
                    }),
                };
                self.by_attempt.insert(attempt, task);
                self.by_task.insert(task, Sent { attempt, host });
                Some((host, c))
            }
            EngineCommand::KillTask { attempt, host } => {
                let task = self.by_attempt.remove(&attempt)?;
                self.by_task.remove(&task);
                Some((host, Command::KillTask { task }))
            }
            EngineCommand::Retime {
                attempt,
                host,
                remaining,
            } => {
                let task = *self.by_attempt.get(&attempt)?;
                Some((host, Command::RetimeTask { task, remaining }))
            }
            EngineCommand::StartTask { .. } | EngineCommand::StartFlows(_) => None,
        }
    }

    /// The engine event for an agent's task report, if it is one.
    /// `Ok(None)`: not a task report, or about an attempt no longer tracked
    /// (killed, or lost with its host).
    pub fn report(&mut self, msg: &AgentMsg) -> Result<Option<Event>, TaskError> {
        match msg {
            AgentMsg::TaskDone(r) => {
                let Some(s) = self.by_task.remove(&r.task) else {
                    return Ok(None);
                };
                self.by_attempt.remove(&s.attempt);
                let output = match &r.output {
                    TaskOutput::Map { partitions, .. } => {
                        Some(partitions.iter().map(|p| p.bytes).sum::<Bytes>())
                    }
                    TaskOutput::Reduce { .. } => None,
                };
                Ok(Some(Event::TaskFinished {
                    attempt: s.attempt,
                    host: s.host,
                    output,
                }))
            }
            AgentMsg::TaskFailed { task, failure, .. } => {
                let Some(s) = self.by_task.remove(task) else {
                    return Ok(None);
                };
                self.by_attempt.remove(&s.attempt);
                Err(TaskError::Failed {
                    attempt: s.attempt,
                    host: s.host,
                    reason: format!("{failure:?}"),
                })
            }
            _ => Ok(None),
        }
    }

    /// `host` died: forget its attempts (the engine re-runs them).
    pub fn host_dead(&mut self, host: HostId) {
        self.by_task.retain(|_, s| s.host != host);
        let by_task = &self.by_task;
        self.by_attempt.retain(|_, t| by_task.contains_key(t));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ocslab_agent::protocol::{TaskFailure, TaskReport};
    use ocslab_core::model::coflow::{CoflowId, FlowId};
    use ocslab_core::model::job::{MapTask as JobMap, ReduceTask as JobReduce, Shuffle, TaskId, UserId};
    use ocslab_emulator::Nanos;

    fn job() -> Job {
        Job {
            id: JobId(3),
            name: String::new(),
            user: UserId(0),
            arrival: Nanos::ZERO,
            recurring: false,
            parents: vec![],
            maps: vec![JobMap {
                input: Bytes(1000),
                replicas: vec![HostId::new(0, 0)],
                duration: Nanos::from_millis(5),
                written_by: None,
            }],
            reduces: vec![
                JobReduce {
                    duration: Nanos::from_millis(1),
                },
                JobReduce {
                    duration: Nanos::from_millis(1),
                },
            ],
            shuffle: Shuffle::Ratio(1.0),
        }
    }

    #[test]
    fn a_map_compute_becomes_run_map_and_its_report_a_task_finished() {
        let mut b = TaskBridge::new(&[job()], 7);
        let attempt = AttemptId {
            task: TaskId::map(JobId(3), 0),
            n: 0,
        };
        let host = HostId::new(1, 0);
        let (to, cmd) = b
            .command(&EngineCommand::Compute {
                attempt,
                host,
                duration: Nanos::from_millis(5),
            })
            .unwrap();
        assert_eq!(to, host);
        let Command::RunMap(m) = cmd else {
            panic!("{cmd:?}")
        };
        assert_eq!(m.partitions, vec![Bytes(500), Bytes(500)]);
        assert_eq!(
            (m.seed, m.input, m.compute),
            (7, Bytes(1000), Nanos::from_millis(5))
        );
        let report = AgentMsg::TaskDone(TaskReport {
            task: m.task,
            started: Nanos(1),
            finished: Nanos(2),
            output: TaskOutput::Map {
                input_checksum: 0,
                partitions: vec![],
            },
        });
        let ev = b.report(&report).unwrap().unwrap();
        assert_eq!(
            ev,
            Event::TaskFinished {
                attempt,
                host,
                output: Some(Bytes(0))
            }
        );
        assert_eq!(b.running(), 0);
        // A second report of the same task is not a second event.
        assert_eq!(b.report(&report).unwrap(), None);
    }

    #[test]
    fn computes_carry_the_nominal_time_and_a_retime_reaches_the_running_task() {
        let mut b = TaskBridge::new(&[job()], 7);
        let attempt = AttemptId {
            task: TaskId::map(JobId(3), 0),
            n: 0,
        };
        let host = HostId::new(0, 1);
        // The engine divided 5 ms by the host's speed 0.5; the agent gets the
        // nominal 5 ms and stretches it by the speed it was given.
        let (_, Command::RunMap(m)) = b
            .command(&EngineCommand::Compute {
                attempt,
                host,
                duration: Nanos::from_millis(10),
            })
            .unwrap()
        else {
            panic!()
        };
        assert_eq!(m.compute, Nanos::from_millis(5));
        let retime = EngineCommand::Retime {
            attempt,
            host,
            remaining: Nanos::from_millis(30),
        };
        assert_eq!(
            b.command(&retime),
            Some((
                host,
                Command::RetimeTask {
                    task: m.task,
                    remaining: Nanos::from_millis(30)
                }
            ))
        );
        // Once the attempt is gone (killed, lost), nothing is sent.
        b.host_dead(host);
        assert_eq!(b.command(&retime), None);
    }

    #[test]
    fn a_killed_attempt_is_killed_at_its_agent_and_a_failure_is_an_error() {
        let mut b = TaskBridge::new(&[job()], 7);
        let attempt = AttemptId {
            task: TaskId::reduce(JobId(3), 1),
            n: 0,
        };
        let host = HostId::new(0, 1);
        let compute = EngineCommand::Compute {
            attempt,
            host,
            duration: Nanos(1),
        };
        let (_, Command::RunReduce(r)) = b.command(&compute).unwrap() else {
            panic!()
        };
        assert!(r.inputs.is_empty());
        assert_eq!(
            b.command(&EngineCommand::KillTask { attempt, host }),
            Some((host, Command::KillTask { task: r.task }))
        );
        let (_, Command::RunReduce(r2)) = b.command(&compute).unwrap() else {
            panic!()
        };
        let failed = AgentMsg::TaskFailed {
            task: r2.task,
            at: Nanos(1),
            failure: TaskFailure::NoFreeSlot,
        };
        assert!(matches!(b.report(&failed), Err(TaskError::Failed { .. })));
    }

    #[test]
    fn partition_keys_tell_input_reads_from_fetches() {
        let spec = |coflow: u64, id: u64| FlowSpec {
            id: FlowId(id),
            coflow: CoflowId(coflow),
            src: HostId::new(0, 0),
            dst: HostId::new(1, 0),
            bytes: Bytes(10),
            weight: 1,
        };
        let fetch = spec(3, 9);
        let read = spec(3 | INPUT_COFLOW_BIT, 10);
        assert!(!is_input_read(&fetch) && is_input_read(&read));
        assert_eq!(partition_key(&fetch, 1).job, wire::JobId(3));
        assert_eq!(partition_key(&read, 1).job, wire::JobId(3));
        assert_ne!(partition_key(&fetch, 1), partition_key(&spec(3, 10), 1));
    }
}
