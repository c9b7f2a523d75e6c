//! # ocslab-sim
//!
//! The simulation driver: virtual time, the cluster [`Engine`] and a
//! [`NetworkModel`] (the fluid network of [`net`], or a fixed-rate stand-in),
//! jumping from event to event.
//!
//! Three sources of events meet in one loop: the engine's own wake-ups
//! (arrivals, policy waits, heartbeats), task compute completions (a heap
//! ordered by (time, sequence number), so equal times keep their issue
//! order), and the network's next event (a flow delivering its last byte, a
//! circuit coming up). Each turn takes the earliest, advances the network
//! to it, and feeds what happened to the engine; the engine's commands add
//! flows to the network and timers to the heap. Nothing reads a clock and
//! every container on a decision path is ordered, so a run is a function of
//! its inputs: the same workload (seed) gives identical records.
//!
//! Design decision: this crate knows nothing of the emulation driver or of
//! files. It produces the records of `ocslab_core::outcome`, which the
//! emulation driver produces too, so the results layer above both writes
//! and compares the two drivers' runs with the same code.
#![deny(missing_docs)]

mod fixed_rate;
pub mod net;
mod network;

pub use fixed_rate::FixedRateNetwork;
pub use network::NetworkModel;

use crate::net::{NetEvent, NetStats, NetTimeline};
use ocslab_core::engine::{AttemptId, Command, Engine, Event, Link, Records};
use ocslab_core::perturb::Action;
use ocslab_core::{HostId, Nanos};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};

/// `t`, or with steps of `quantum` (counted from time zero) the end of the
/// step it falls in.
pub(crate) fn step_end(t: Nanos, quantum: Option<Nanos>) -> Nanos {
    match quantum {
        Some(q) => Nanos(t.0.div_ceil(q.0).saturating_mul(q.0)),
        None => t,
    }
}

/// Driver settings.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SimConfig {
    /// When set and the network model measures link loads, feed the engine
    /// a [`Event::LoadSample`] this often while flows are in flight.
    pub load_sample_interval: Option<Nanos>,
    /// What a load sample reads: each link's mean utilization since the
    /// previous sample (the default) or its rate at the sample's instant.
    pub load_sampling: LoadSampling,
    /// Stop (with an error) if virtual time passes this.
    pub time_limit: Option<Nanos>,
    /// With `Some(q)`, time advances in steps of `q` as in CoflowSim's
    /// simulator (its 8 ms `SIMULATION_QUANTA`): task and flow completions,
    /// arrivals and the engine's wake-ups are handled at the end of the
    /// step they fall in (flow completions through
    /// [`net::FluidNetwork::with_completion_quantum`]), so each happens up
    /// to `q` late and an instant's events share one rate solve. Circuits
    /// and schedule slots keep their exact times (δ is not rounded).
    /// `None` (the default): every event at its own time.
    pub quantum: Option<Nanos>,
}

/// What a load sample reads of each link.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoadSampling {
    /// The mean utilization since the previous sample: what a reading of
    /// byte counters gives (the emulator's sampler, NetHogs' refresh).
    #[default]
    Mean,
    /// The utilization at the sample's instant: the fluid rates then.
    Instant,
}

/// Why a simulation could not finish.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SimError {
    /// Nothing left to happen but jobs unfinished (e.g. a policy declines
    /// every offer and asks for no wake-up).
    #[error(
        "simulation stalled at {at}: {done} of {total} jobs finished and nothing left to happen \
         (policy {policy} declined every offer without asking for a wake-up?)"
    )]
    Stalled {
        /// Virtual time.
        at: Nanos,
        /// Jobs finished.
        done: usize,
        /// Jobs in all.
        total: usize,
        /// The task policy.
        policy: String,
    },
    /// The time limit passed.
    #[error("simulation passed its time limit of {limit} with {done} of {total} jobs finished")]
    TimeLimit {
        /// The limit.
        limit: Nanos,
        /// Jobs finished.
        done: usize,
        /// Jobs in all.
        total: usize,
    },
    /// The network model could not be built.
    #[error("network model: {0}")]
    Network(String),
}

/// What a finished simulation returns.
#[derive(Clone, Debug, PartialEq)]
pub struct SimOutcome {
    /// The task policy's name.
    pub policy: String,
    /// The engine's records.
    pub records: Records,
    /// The network's totals.
    pub net: NetStats,
    /// The network's circuits and link utilization over the run (empty
    /// when the network model records neither).
    pub timeline: NetTimeline,
    /// Virtual time at the end.
    pub end: Nanos,
    /// Events fed to the engine.
    pub events: u64,
    /// Flows the engine started.
    pub flows: u64,
    /// Most flows in flight at once (after an instant's events), which
    /// sets the run's peak memory.
    pub peak_flows: u64,
}

/// Where a running simulation is, for progress bars.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SimProgress {
    /// Jobs finished.
    pub jobs_done: usize,
    /// Jobs in all.
    pub jobs_total: usize,
    /// Virtual time.
    pub now: Nanos,
    /// Bytes the network delivered so far (EPS and OCS).
    pub bytes: ocslab_core::Bytes,
}

/// A perturbation as the driver carries it out.
#[derive(Clone, Debug)]
enum External {
    /// Fed to the engine.
    Event(Event),
    /// Done to the network model.
    Link {
        /// The link.
        link: Link,
        /// Up or down.
        up: bool,
    },
}

/// A simulation: an engine, a network model and the timer heap.
pub struct Simulation<N: NetworkModel> {
    engine: Engine,
    net: N,
    config: SimConfig,
    timers: BinaryHeap<Reverse<(Nanos, u64, AttemptId, HostId)>>,
    /// The live timer (sequence number) of each computing attempt; a timer
    /// superseded by [`Command::Retime`] is dropped when it comes up.
    live_timer: BTreeMap<AttemptId, u64>,
    /// Perturbations, by time.
    external: VecDeque<(Nanos, External)>,
    seq: u64,
    events: u64,
    flows: u64,
    peak_flows: u64,
    next_sample: Option<Nanos>,
}

impl<N: NetworkModel> Simulation<N> {
    /// A simulation of `engine` over `net`.
    pub fn new(engine: Engine, net: N, config: SimConfig) -> Simulation<N> {
        // A zero step is no step.
        let config = SimConfig {
            quantum: config.quantum.filter(|q| q.0 > 0),
            ..config
        };
        Simulation {
            engine,
            net,
            next_sample: config.load_sample_interval,
            config,
            timers: BinaryHeap::new(),
            live_timer: BTreeMap::new(),
            external: VecDeque::new(),
            seq: 0,
            events: 0,
            flows: 0,
            peak_flows: 0,
        }
    }

    /// Adds a run's perturbations (the actions of an
    /// [`ocslab_core::perturb::Timeline`]): host speed changes and hosts
    /// dying and coming back are fed to the engine at their times, links go
    /// down and come back in the network model
    /// ([`NetworkModel::set_link`]). Fails if there is a link window and the
    /// network model has no links to take down.
    pub fn with_perturbations(mut self, actions: &[(Nanos, Action)]) -> Result<Simulation<N>, SimError> {
        let mut all: Vec<(Nanos, External)> = self.external.drain(..).collect();
        for (at, action) in actions {
            let external = match (action.engine_event(), action) {
                (Some(event), _) => External::Event(event),
                (None, Action::SetLink { link, up }) if self.net.takes_links_down() => {
                    External::Link { link: *link, up: *up }
                }
                _ => {
                    return Err(SimError::Network(format!(
                        "{action} at {at}: this network model has no links to take down; \
                         use the fluid model (`network = \"fluid\"`)"
                    )))
                }
            };
            all.push((*at, external));
        }
        all.sort_by_key(|(t, _)| *t);
        self.external = all.into();
        Ok(self)
    }

    /// Runs to the end. `progress(done, total)` is called as jobs finish.
    pub fn run(self, mut progress: impl FnMut(usize, usize)) -> Result<SimOutcome, SimError> {
        self.run_with(|p| progress(p.jobs_done, p.jobs_total))
    }

    /// Runs to the end; `progress` is called as jobs finish, with the jobs
    /// done, the virtual time and the bytes delivered so far.
    pub fn run_with(mut self, mut progress: impl FnMut(&SimProgress)) -> Result<SimOutcome, SimError> {
        let mut last_done = 0;
        let mut now = Nanos::ZERO;
        while !self.engine.is_done() {
            let Some(t) = self.next_time() else {
                let (done, total) = self.engine.progress();
                return Err(SimError::Stalled {
                    at: now,
                    done,
                    total,
                    policy: self.engine.policy_name().to_string(),
                });
            };
            if let Some(limit) = self.config.time_limit {
                if t > limit {
                    let (done, total) = self.engine.progress();
                    return Err(SimError::TimeLimit { limit, done, total });
                }
            }
            now = t;
            self.step(t);
            self.peak_flows = self.peak_flows.max(self.engine.flows_in_flight() as u64);
            let (done, total) = self.engine.progress();
            if done != last_done {
                last_done = done;
                let stats = self.net.stats();
                progress(&SimProgress {
                    jobs_done: done,
                    jobs_total: total,
                    now: t,
                    bytes: stats.eps_bytes + stats.ocs_bytes,
                });
            }
        }
        let end = self.engine.now();
        Ok(SimOutcome {
            policy: self.engine.policy_name().to_string(),
            net: self.net.stats().clone(),
            timeline: self.net.timeline(end),
            records: self.engine.into_records(),
            end,
            events: self.events,
            flows: self.flows,
            peak_flows: self.peak_flows,
        })
    }

    /// The earliest of: engine wake-up, compute completion, network event,
    /// perturbation, and a load sample before one of those; `None` if none
    /// is left (load samples alone change nothing: the run is stalled).
    fn next_time(&self) -> Option<Nanos> {
        let step_end = |t: Nanos| step_end(t, self.config.quantum);
        let next = [
            self.engine.next_wakeup().map(step_end),
            self.timers.peek().map(|Reverse((t, ..))| step_end(*t)),
            self.net.next_event_at(),
            self.external.front().map(|(t, _)| step_end(*t)),
        ]
        .into_iter()
        .flatten()
        .min()?;
        let sample = self.next_sample.filter(|_| self.engine.flows_in_flight() > 0);
        Some(sample.map_or(next, |s| s.min(next)))
    }

    /// Everything that happens at `t`.
    fn step(&mut self, t: Nanos) {
        // The rates are solved once, after the instant's arrivals (`settle` below).
        for ev in self.net.advance_unsettled(t) {
            match ev {
                NetEvent::FlowDone {
                    flow,
                    at,
                    eps_bytes,
                    ocs_bytes,
                    ..
                } => self.feed(
                    at.min(t),
                    Event::FlowFinished {
                        flow,
                        eps_bytes,
                        ocs_bytes,
                    },
                    t,
                ),
                NetEvent::Circuit {
                    at,
                    src_rack,
                    dst_rack,
                    port,
                    up,
                } => self.feed(
                    at.min(t),
                    Event::Circuit {
                        circuit: ocslab_core::engine::Circuit {
                            src_rack,
                            dst_rack,
                            port,
                        },
                        up,
                    },
                    t,
                ),
            }
        }
        while let Some(Reverse((at, seq, attempt, host))) = self.timers.peek().copied() {
            if at > t {
                break;
            }
            self.timers.pop();
            if self.live_timer.get(&attempt) != Some(&seq) {
                continue; // superseded by a Retime
            }
            self.live_timer.remove(&attempt);
            self.feed(
                at,
                Event::TaskFinished {
                    attempt,
                    host,
                    output: None,
                },
                t,
            );
        }
        while self.external.front().is_some_and(|(at, _)| *at <= t) {
            match self.external.pop_front() {
                Some((at, External::Event(event))) => self.feed(at, event, t),
                Some((_, External::Link { link, up })) => self.net.set_link(t, link, up),
                None => break,
            }
        }
        if self.engine.next_wakeup().is_some_and(|w| w <= t) {
            self.feed(t, Event::Wakeup, t);
        }
        if let (Some(s), Some(every)) = (self.next_sample, self.config.load_sample_interval) {
            if s <= t {
                self.next_sample = Some(t + every);
                self.net.settle();
                let loads = self.net.link_loads(self.config.load_sampling);
                if !loads.is_empty() {
                    self.feed(t, Event::LoadSample(loads), t);
                }
            }
        }
        self.net.settle();
    }

    /// Feeds one event and carries out the engine's commands; flows join
    /// the network at `net_now` (the time it was advanced to).
    fn feed(&mut self, at: Nanos, event: Event, net_now: Nanos) {
        self.events += 1;
        // In steps, everything is handled at the step's end.
        let at = if self.config.quantum.is_some() {
            net_now
        } else {
            at
        };
        for cmd in self.engine.handle(at, event) {
            match cmd {
                Command::StartTask { .. } | Command::KillTask { .. } => {}
                Command::StartFlows(flows) => {
                    self.flows += flows.len() as u64;
                    self.net.add_flows_unsettled(net_now, &flows);
                }
                Command::Compute {
                    attempt,
                    host,
                    duration,
                } => {
                    self.seq += 1;
                    self.live_timer.insert(attempt, self.seq);
                    self.timers
                        .push(Reverse((at + duration, self.seq, attempt, host)));
                }
                Command::Retime {
                    attempt,
                    host,
                    remaining,
                } => {
                    self.seq += 1;
                    self.live_timer.insert(attempt, self.seq);
                    self.timers
                        .push(Reverse((at + remaining, self.seq, attempt, host)));
                }
            }
        }
    }
}
