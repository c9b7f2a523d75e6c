//! The emulation driver's loop: real time, real agents, real bytes.
//!
//! One task waits on four sources at once — the control plane (agent
//! reports, host deaths), the OCS worker (circuit events), a timer (the
//! engine's wake-ups, coflow arrivals of a replay, the coflow policy's
//! `wake_at`, load samples) and Ctrl-C — and feeds each happening, stamped
//! with experiment time (the shared monotonic clock minus the run's start),
//! to the same [`Engine`] the simulator drives and to the [`EmuNetwork`]
//! that runs the coflow policy. Their answers become agent commands and
//! OCS matchings. Where an agent measured a time (a flow's last byte, a
//! task's end), that time is what the engine receives, not the time the
//! report arrived.
//!
//! Perturbations ([`PerturbPlan`]) are carried out here at their times: an
//! agent slowed (`set_speed`, then the engine's retimes), killed by its pid,
//! restarted once its death was declared and fed back to the engine when it
//! rejoins, and cables taken down and brought back (`Fabric::set_cable`).

use super::lab::Lab;
use super::metrics::{FabricBytes, WireFlow, WireReport};
use super::network::{Action, EmuNetwork};
use super::ocs::{OcsReport, OcsWorker};
use super::perturb::{PerturbCounts, PerturbPlan, Step};
use super::resend::{Resends, Verdict};
use super::sampler::{Sampler, SamplerReport, UtilizationRecorder};
use super::tasks::{partition_key, TaskBridge};
use super::{EmuConfig, EmuError, Fault};
use ocslab_agent::clock;
use ocslab_agent::control::Event as ControlEvent;
use ocslab_agent::protocol::{self as wire, AgentMsg, Command, PartitionId};
use ocslab_core::engine::{Command as EngineCommand, Engine, Event};
use ocslab_core::model::coflow::{Coflow, FlowId, FlowSpec};
use ocslab_core::outcome::CircuitRecord;
use ocslab_emulator::{Bytes, HostId, Nanos, Topology};
use std::collections::{BTreeSet, VecDeque};
use tokio::sync::mpsc as tmpsc;

/// Where flows come from.
pub(super) enum Source {
    /// Jobs run by the cluster engine; tasks run on agents.
    Jobs {
        /// The engine.
        engine: Box<Engine>,
        /// Engine task commands ↔ agent commands.
        bridge: TaskBridge,
    },
    /// Coflows of a trace, each arriving whole at its time.
    Coflows {
        /// Those yet to arrive, by arrival.
        queue: VecDeque<Coflow>,
        /// How many the trace has.
        total: usize,
    },
}

impl Source {
    fn next_wakeup(&self) -> Option<Nanos> {
        match self {
            Source::Jobs { engine, .. } => engine.next_wakeup(),
            Source::Coflows { queue, .. } => queue.front().map(|c| c.arrival),
        }
    }
}

/// What woke the loop.
enum Wake {
    Control(Option<ControlEvent>),
    Ocs(Option<OcsReport>),
    Sample(Option<SamplerReport>),
    Timer,
    Interrupt,
}

/// A run in progress.
pub(super) struct Driver<'a> {
    lab: &'a mut Lab,
    topo: Topology,
    cfg: &'a EmuConfig,
    pub(super) net: EmuNetwork,
    pub(super) source: Source,
    t0: Nanos,
    ocs: Option<OcsWorker>,
    ocs_rx: tmpsc::UnboundedReceiver<OcsReport>,
    pub(super) wire: Vec<WireFlow>,
    pub(super) lost: u64,
    pub(super) dead: BTreeSet<HostId>,
    /// Every host that died during the run (restarted or not).
    died: BTreeSet<HostId>,
    perturb: PerturbPlan,
    pub(super) circuits: Vec<CircuitRecord>,
    circuit_events: u64,
    resends: Resends,
    sampler: Option<Sampler>,
    sample_rx: tmpsc::UnboundedReceiver<SamplerReport>,
    util: UtilizationRecorder,
    shuffle_flows_done: u32,
    faults_fired: BTreeSet<usize>,
}

impl<'a> Driver<'a> {
    /// A driver over `lab`; nothing runs until [`Driver::run`].
    pub(super) fn new(lab: &'a mut Lab, source: Source, cfg: &'a EmuConfig) -> Result<Driver<'a>, EmuError> {
        let topo = lab.topology().clone();
        let policy = super::coflow_policy(&cfg.coflow_policy)?;
        let datapath = lab.ocs().map(|o| o.datapath()).unwrap_or_default();
        let flow_queues = lab.fabric().plan().flow_queues().count();
        let net = EmuNetwork::new(&topo, policy, lab.data_addrs().clone(), cfg.transport)
            .on_datapath(datapath)
            .with_flow_queues(flow_queues);
        let (tx, ocs_rx) = tmpsc::unbounded_channel();
        let (_, sample_rx) = tmpsc::unbounded_channel();
        let util = UtilizationRecorder::new(&topo);
        // Under a time-flow schedule the datapath switches circuits by itself.
        let ocs = lab
            .ocs()
            .filter(|_| topo.ocs_schedule.is_none())
            .map(|o| OcsWorker::start(o, tx));
        let perturb = PerturbPlan::new(&cfg.perturbations);
        Ok(Driver {
            lab,
            topo,
            cfg,
            net,
            source,
            t0: clock::now(),
            ocs,
            ocs_rx,
            wire: Vec::new(),
            lost: 0,
            dead: BTreeSet::new(),
            died: BTreeSet::new(),
            perturb,
            circuits: Vec::new(),
            circuit_events: 0,
            resends: Resends::default(),
            sampler: None,
            sample_rx,
            util,
            shuffle_flows_done: 0,
            faults_fired: BTreeSet::new(),
        })
    }

    fn now(&self) -> Nanos {
        clock::now().saturating_sub(self.t0)
    }

    fn exp_time(&self, wire_time: Nanos) -> Nanos {
        wire_time.saturating_sub(self.t0)
    }

    fn done(&self) -> bool {
        match &self.source {
            Source::Jobs { engine, .. } => engine.is_done(),
            Source::Coflows { queue, .. } => queue.is_empty() && self.net.in_flight() == 0,
        }
    }

    /// Runs until every job (or coflow) is done; returns what was measured.
    /// Cables a link window left down come back up however the run ends, so
    /// a lab the run attached to is left as it was found.
    pub(super) async fn run(&mut self) -> Result<WireReport, EmuError> {
        let out = self.run_to_end().await;
        let restore = self.perturb.restore();
        let restored = self.carry_steps(self.now(), restore);
        let report = out?;
        restored?;
        Ok(report)
    }

    async fn run_to_end(&mut self) -> Result<WireReport, EmuError> {
        let wall = std::time::Instant::now();
        let before = self.lab.counters()?;
        let ocs_error = |e: ocslab_emulator::fabric::OcsError| EmuError::Ocs(e.to_string());
        self.t0 = match (self.lab.ocs(), &self.topo.ocs_schedule) {
            // Slot 0 begins at experiment time 0, as in the simulator.
            (Some(ocs), Some(schedule)) => ocs.set_schedule(schedule).map_err(ocs_error)?,
            // The policy starts from no circuits; an attached lab may still
            // hold an earlier run's. One the policy then asked for again
            // would be left as it is, and no circuit-up would ever release
            // its flows.
            (Some(ocs), None) => {
                ocs.set_matching(&[]).map_err(ocs_error)?;
                clock::now()
            }
            (None, _) => clock::now(),
        };
        self.util.record(Nanos::ZERO, before.clone());
        if let Some(every) = self.cfg.load_sample_interval {
            let (tx, rx) = tmpsc::unbounded_channel();
            self.sample_rx = rx;
            let reader = self.lab.counter_reader()?;
            self.sampler = Some(
                Sampler::start(reader, every.as_duration(), tx)
                    .map_err(|e| EmuError::Setup(format!("starting the counter sampler: {e}")))?,
            );
        }
        let steps = self.perturb.start();
        self.carry_steps(Nanos::ZERO, steps)?;
        if matches!(self.source, Source::Jobs { .. }) {
            self.engine_event(Nanos::ZERO, Event::Wakeup)?;
        }
        self.net.set_batching(true);
        let ctrl_c = tokio::signal::ctrl_c();
        tokio::pin!(ctrl_c);
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .map_err(|e| EmuError::Setup(format!("installing the SIGTERM handler: {e}")))?;
        while !self.done() {
            let now = self.now();
            if now.as_duration() > self.cfg.time_limit {
                return Err(self.time_limit());
            }
            let next = [
                self.source.next_wakeup(),
                self.net.wake_at(),
                self.perturb.next_at(),
                self.resends.next_due(),
            ]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(Nanos::from_secs_f64(self.cfg.time_limit.as_secs_f64()))
            .min(Nanos::from_secs_f64(self.cfg.time_limit.as_secs_f64()) + Nanos::from_millis(1));
            let sleep = tokio::time::sleep(next.saturating_sub(now).as_duration());
            let wake = {
                let server = self.lab.server()?;
                tokio::select! {
                    biased;
                    _ = &mut ctrl_c => Wake::Interrupt,
                    _ = term.recv() => Wake::Interrupt,
                    r = self.ocs_rx.recv(), if self.ocs.is_some() => Wake::Ocs(r),
                    c = self.sample_rx.recv(), if self.sampler.is_some() => Wake::Sample(c),
                    e = server.next_event() => Wake::Control(e),
                    _ = sleep => Wake::Timer,
                }
            };
            match wake {
                Wake::Interrupt => return Err(EmuError::Interrupted),
                Wake::Control(Some(e)) => self.on_control(e)?,
                Wake::Control(None) => return Err(EmuError::Internal("the control server stopped".into())),
                Wake::Ocs(Some(r)) => self.on_ocs(r)?,
                Wake::Ocs(None) => self.ocs = None,
                Wake::Sample(c) => self.on_sample(c)?,
                Wake::Timer => self.on_timer()?,
            }
            // Everything else already waiting is part of the same instant.
            while let Some(e) = self.lab.server()?.try_next_event() {
                self.on_control(e)?;
            }
            while let Ok(r) = self.ocs_rx.try_recv() {
                self.on_ocs(r)?;
            }
            let actions = self.net.flush(self.now());
            self.carry_out(actions)?;
        }
        self.sampler = None; // stops the thread
        let after = self.lab.counters()?;
        let end = self.exp_time(after.at);
        self.util.record(end, after.clone());
        let mut report = WireReport::new(std::mem::take(&mut self.wire), self.lost);
        report.resent_flows = self.resends.resent();
        report.links = self.util.series();
        report.fabric = FabricBytes::between(&before, &after, &report.flows);
        report.dead_hosts = self.died.iter().copied().collect();
        report.circuit_events = self.circuit_events;
        report.wall_s = wall.elapsed().as_secs_f64();
        Ok(report)
    }

    fn time_limit(&self) -> EmuError {
        let (done, total, waiting) = match &self.source {
            Source::Jobs { engine, .. } => {
                let (done, total) = engine.progress();
                (done, total, engine.describe_unfinished(5))
            }
            Source::Coflows { queue, total } => {
                // A coflow is done once it arrived and has no flow in flight.
                let open = queue.len() + self.net.view().coflows.len();
                (total.saturating_sub(open), *total, String::new())
            }
        };
        let failed = self
            .resends
            .failing()
            .map(|(f, why)| format!("flow {}: {why}", f.0))
            .collect::<Vec<_>>()
            .join("; ");
        EmuError::TimeLimit {
            limit: self.cfg.time_limit,
            done,
            total,
            in_flight: self.net.in_flight(),
            failed,
            waiting,
        }
    }

    fn on_timer(&mut self) -> Result<(), EmuError> {
        let now = self.now();
        if self.perturb.next_at().is_some_and(|t| t <= now) {
            let steps = self.perturb.due(now);
            self.carry_steps(now, steps)?;
        }
        if self.source.next_wakeup().is_some_and(|t| t <= now) {
            match &mut self.source {
                Source::Jobs { .. } => self.engine_event(now, Event::Wakeup)?,
                Source::Coflows { queue, .. } => {
                    let mut flows: Vec<(FlowSpec, PartitionId)> = Vec::new();
                    while queue.front().is_some_and(|c| c.arrival <= now) {
                        let Some(c) = queue.pop_front() else { break };
                        for f in c.flows {
                            if f.src == f.dst || f.bytes.0 == 0 {
                                continue;
                            }
                            let key = replay_key(&f, self.cfg.seed);
                            flows.push((f, key));
                        }
                    }
                    let actions = self.net.add_flows(now, flows);
                    self.carry_out(actions)?;
                }
            }
        }
        if self.net.wake_at().is_some_and(|t| t <= now) {
            let actions = self.net.wake(now);
            self.carry_out(actions)?;
        }
        if self.resends.next_due().is_some_and(|t| t <= now) {
            for id in self.resends.take_due(now, clock::now()) {
                let Some(spec) = self.live_flow(id) else {
                    self.resends.forget(id);
                    continue;
                };
                tracing::warn!(flow = id.0, src = %spec.src, dst = %spec.dst, "sending the flow again");
                if let Some(actions) = self.net.restart(now, id) {
                    self.carry_out(actions)?;
                }
            }
        }
        Ok(())
    }

    /// A send of flow `id` that began by `at` (shared clock) failed at an
    /// end: it is sent again after a back-off, or, if every send failed,
    /// the run ends with an error naming the flow ([`super::resend`]).
    /// Failures of a flow whose host died are the death's to handle.
    fn send_failed(&mut self, id: FlowId, at: Nanos, reason: String) -> Result<(), EmuError> {
        let Some(spec) = self.live_flow(id) else {
            return Ok(());
        };
        match self.resends.failed(id, at, self.now(), reason) {
            Verdict::Stale => Ok(()),
            Verdict::ResendAt(due) => {
                tracing::warn!(flow = id.0, due = ?due, "flow failed; it will be sent again");
                Ok(())
            }
            Verdict::GiveUp(reasons) => Err(EmuError::FlowFailed {
                flow: id,
                coflow: spec.coflow,
                src: spec.src,
                dst: spec.dst,
                reasons: reasons.join("; "),
            }),
        }
    }

    /// Flow `id` if it is still in flight and neither end's host has been
    /// declared dead (a dead host's flows are the death's to handle).
    fn live_flow(&self, id: FlowId) -> Option<FlowSpec> {
        let spec = &self.net.view().flows.get(&id)?.spec;
        let alive = !self.dead.contains(&spec.src) && !self.dead.contains(&spec.dst);
        alive.then(|| spec.clone())
    }

    /// A counter reading from the sampler: one utilization sample per link
    /// for the results timeline, and a `LoadSample` for the engine while
    /// flows are in flight (as the simulation driver does).
    fn on_sample(&mut self, report: Option<SamplerReport>) -> Result<(), EmuError> {
        let reading = match report {
            Some(SamplerReport::Counters(c)) => c,
            Some(SamplerReport::Failed(why)) => {
                tracing::warn!("reading the fabric's counters failed, no more load samples: {why}");
                self.sampler = None;
                return Ok(());
            }
            None => {
                self.sampler = None;
                return Ok(());
            }
        };
        let at = self.exp_time(reading.at);
        let loads = self.util.record(at, reading);
        if !self.cfg.engine_load_samples || loads.is_empty() || self.net.in_flight() == 0 {
            return Ok(());
        }
        self.engine_event(at, Event::LoadSample(loads))
    }

    fn on_ocs(&mut self, r: OcsReport) -> Result<(), EmuError> {
        match r {
            OcsReport::Failed(why) => Err(EmuError::Ocs(why)),
            OcsReport::Event { at, circuit, up } => {
                self.circuit_events += 1;
                let at = self.exp_time(at);
                if up {
                    self.circuits.push(CircuitRecord {
                        src_rack: circuit.src_rack,
                        dst_rack: circuit.dst_rack,
                        port: circuit.port,
                        requested_at: at.saturating_sub(self.topo.reconfig_delay),
                        up_at: at,
                        down_at: None,
                    });
                } else if let Some(c) = self.circuits.iter_mut().rev().find(|c| {
                    c.src_rack == circuit.src_rack && c.dst_rack == circuit.dst_rack && c.port == circuit.port
                }) {
                    c.down_at.get_or_insert(at);
                }
                let actions = self.net.circuit_event(at, circuit, up);
                self.carry_out(actions)?;
                if matches!(self.source, Source::Jobs { .. }) {
                    self.engine_event(at, Event::Circuit { circuit, up })?;
                }
                Ok(())
            }
        }
    }

    fn on_control(&mut self, e: ControlEvent) -> Result<(), EmuError> {
        match e {
            ControlEvent::Agent { at, host, msg } => self.on_agent(self.exp_time(at), host, msg),
            ControlEvent::HostDead { at, host, cause } => {
                tracing::warn!(%host, ?cause, "agent declared dead");
                let now = self.exp_time(at);
                self.dead.insert(host);
                self.died.insert(host);
                let (lost, actions) = self.net.host_dead(now, host);
                self.lost += lost.len() as u64;
                for f in &lost {
                    self.resends.forget(f.id);
                }
                self.carry_out(actions)?;
                if let Source::Jobs { bridge, .. } = &mut self.source {
                    bridge.host_dead(host);
                    self.engine_event(now, Event::HostDead(host))?;
                }
                let steps = self.perturb.host_dead(host);
                self.carry_steps(now, steps)
            }
            ControlEvent::Joined { at, host, hello } if self.dead.contains(&host) => {
                // A restarted agent rejoined: the host is back, empty.
                tracing::info!(%host, "agent rejoined");
                let now = self.exp_time(at);
                self.dead.remove(&host);
                self.net.host_alive(host, hello.data_addr);
                let steps = self.perturb.joined(host);
                self.carry_steps(now, steps)
            }
            ControlEvent::Refused { peer, reason, .. } => {
                tracing::warn!(%peer, %reason, "a connection was refused");
                Ok(())
            }
            ControlEvent::Joined { .. } | ControlEvent::Left { .. } => Ok(()),
        }
    }

    fn on_agent(&mut self, now: Nanos, host: HostId, msg: AgentMsg) -> Result<(), EmuError> {
        match msg {
            AgentMsg::Heartbeat(hb) => {
                self.net.progress(self.exp_time(hb.at), &hb.flows);
                Ok(())
            }
            AgentMsg::FlowDone(fd) => self.flow_done(fd),
            AgentMsg::FlowFailed {
                flow,
                role,
                reason,
                at,
            } => {
                tracing::warn!(%host, flow = flow.0, ?role, %reason, "flow failed");
                self.send_failed(FlowId(flow.0), at, format!("{role:?} {host}: {reason}"))
            }
            AgentMsg::Rejected { reason } => {
                // Usually a re-rate or hold racing the flow's end at its sender.
                tracing::debug!(%host, %reason, "agent rejected a command");
                Ok(())
            }
            AgentMsg::TaskDone(_) | AgentMsg::TaskFailed { .. } => {
                let at = match &msg {
                    AgentMsg::TaskDone(r) => self.exp_time(r.finished),
                    _ => now,
                };
                let Source::Jobs { bridge, .. } = &mut self.source else {
                    return Ok(());
                };
                match bridge.report(&msg)? {
                    Some(ev) => self.engine_event(at, ev),
                    None => Ok(()),
                }
            }
            AgentMsg::FlowStarted { .. } | AgentMsg::FlowSent(_) | AgentMsg::Pong { .. } => Ok(()),
        }
    }

    fn flow_done(&mut self, fd: wire::FlowDone) -> Result<(), EmuError> {
        let end = self.exp_time(fd.end);
        let id = FlowId(fd.flow.0);
        if fd.bytes_received < fd.bytes_expected {
            // Cut short: its sender died (the control plane will say so) or
            // the connection broke. It is not a fetch the engine can use.
            tracing::warn!(flow = id.0, from = %fd.from, "flow cut short: {} of {} bytes", fd.bytes_received.0, fd.bytes_expected.0);
            let why = format!(
                "cut short at {} of {} bytes",
                fd.bytes_received.0, fd.bytes_expected.0
            );
            return self.send_failed(id, fd.start, why);
        }
        if !fd.ok {
            // All bytes came, but not the right ones: not a fetch the engine can use.
            tracing::error!(
                flow = id.0,
                "flow corrupt: crc {:08x}, expected {:08x}",
                fd.checksum,
                fd.expected_checksum
            );
            let why = format!(
                "checksum mismatch: crc {:08x}, expected {:08x}",
                fd.checksum, fd.expected_checksum
            );
            return self.send_failed(id, fd.start, why);
        }
        let Some((fin, actions)) = self.net.flow_done(end, id) else {
            return Ok(()); // a flow of a dead host, already written off
        };
        self.resends.forget(id);
        let ocs = fin.marked == Some(wire::Path::Ocs);
        let shuffle = !super::tasks::is_input_read(&fin.spec);
        self.wire.push(WireFlow {
            flow: id,
            coflow: fin.spec.coflow,
            src: fin.spec.src,
            dst: fin.spec.dst,
            bytes: fin.spec.bytes,
            bytes_received: fd.bytes_received,
            marked: fin.marked,
            requested: fin.requested,
            start: self.exp_time(fd.start),
            first_byte: self.exp_time(fd.first_byte),
            end,
            verified: fd.ok,
            useful: true,
        });
        self.carry_out(actions)?;
        if fd.ok && matches!(self.source, Source::Jobs { .. }) {
            let (eps_bytes, ocs_bytes) = if ocs {
                (Bytes(0), fd.bytes_received)
            } else {
                (fd.bytes_received, Bytes(0))
            };
            self.engine_event(
                end,
                Event::FlowFinished {
                    flow: id,
                    eps_bytes,
                    ocs_bytes,
                },
            )?;
            if shuffle {
                self.shuffle_flows_done += 1;
                self.inject_faults(fin.spec.dst);
            }
        }
        Ok(())
    }

    /// Fires the configured faults whose moment has come.
    fn inject_faults(&mut self, receiver: HostId) {
        for (i, f) in self.cfg.faults.iter().enumerate() {
            if self.faults_fired.contains(&i) {
                continue;
            }
            match *f {
                Fault::KillReceiverAfterShuffleFlows(n) if self.shuffle_flows_done >= n => {
                    self.faults_fired.insert(i);
                    tracing::warn!(host = %receiver, "fault: killing the agent");
                    self.lab.kill_agent(receiver);
                }
                _ => {}
            }
        }
    }

    /// Feeds the engine and carries out its commands.
    fn engine_event(&mut self, at: Nanos, event: Event) -> Result<(), EmuError> {
        let Source::Jobs { engine, .. } = &mut self.source else {
            return Ok(());
        };
        let cmds = engine.handle(at, event);
        let now = engine.now();
        for cmd in cmds {
            match cmd {
                EngineCommand::StartFlows(flows) => {
                    let seed = self.cfg.seed;
                    let keyed: Vec<(FlowSpec, PartitionId)> = flows
                        .into_iter()
                        .map(|f| {
                            let k = partition_key(&f, seed);
                            (f, k)
                        })
                        .collect();
                    let actions = self.net.add_flows(now, keyed);
                    self.carry_out(actions)?;
                }
                other => {
                    let Source::Jobs { bridge, .. } = &mut self.source else {
                        break;
                    };
                    if let Some((host, c)) = bridge.command(&other) {
                        self.send(host, c);
                    }
                }
            }
        }
        Ok(())
    }

    /// What the perturbations did so far.
    pub(super) fn perturb_counts(&self) -> PerturbCounts {
        self.perturb.counts()
    }

    /// Carries out perturbation steps at experiment time `now`.
    fn carry_steps(&mut self, now: Nanos, steps: Vec<Step>) -> Result<(), EmuError> {
        for step in steps {
            match step {
                Step::Agent { host, cmd } => self.send(host, cmd),
                Step::Engine(event) => self.engine_event(now, event)?,
                Step::Kill(host) => {
                    tracing::warn!(%host, "perturbation: killing the agent (SIGKILL)");
                    if !self.lab.kill_agent(host) {
                        tracing::warn!(%host, "no agent process of this lab to kill");
                    }
                }
                Step::Restart(host) => {
                    tracing::warn!(%host, "perturbation: restarting the agent");
                    self.lab.restart_agent(host)?;
                }
                Step::Cable { cable, up } => {
                    tracing::warn!(%cable, "perturbation: link {}", if up { "up" } else { "down" });
                    self.lab.fabric().set_cable(cable, up)?;
                }
            }
        }
        Ok(())
    }

    fn carry_out(&mut self, actions: Vec<Action>) -> Result<(), EmuError> {
        for a in actions {
            match a {
                Action::Agent { host, cmd } => self.send(host, cmd),
                Action::Matching(m) => match &self.ocs {
                    Some(w) => w.apply(m),
                    None => {
                        return Err(EmuError::Setup(
                            "the coflow policy asked for circuits, but the topology has no OCS".into(),
                        ))
                    }
                },
            }
        }
        Ok(())
    }

    fn send(&mut self, host: HostId, cmd: Command) {
        if self.dead.contains(&host) {
            return;
        }
        tracing::trace!(%host, at = ?self.now(), ?cmd, "command");
        let sent = self
            .lab
            .server()
            .and_then(|s| s.send(host, cmd).map_err(EmuError::from));
        if let Err(e) = sent {
            tracing::debug!(%host, "command not sent: {e}");
        }
    }

    /// Marks flows the engine no longer needed (their attempt was killed or lost).
    pub(super) fn mark_useless(report: &mut WireReport, useless: &BTreeSet<FlowId>) {
        for f in report.flows.iter_mut() {
            f.useful = !useless.contains(&f.flow);
        }
    }
}

/// The content key of a replayed flow: (coflow, flow).
fn replay_key(f: &FlowSpec, seed: u64) -> PartitionId {
    PartitionId {
        job: wire::JobId(f.coflow.0),
        map: (f.id.0 & 0xffff_ffff) as u32,
        reduce: (f.id.0 >> 32) as u32,
        seed,
    }
}
