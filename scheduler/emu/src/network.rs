//! [`EmuNetwork`]: the coflow policy over the real fabric. It keeps the
//! [`NetView`] a [`CoflowPolicy`] sees (built from agent reports and kernel
//! circuit events instead of a fluid model), asks the policy at the same
//! instants the fluid network does (a flow arrives or finishes, a circuit
//! comes up, the policy's own `wake_at`), and turns each [`Decision`] into
//! [`Action`]s: agent commands (start a flow on a path, hold, release,
//! re-rate) and OCS matchings.
//!
//! Pure: time is an argument, nothing here touches a socket or the kernel;
//! the driver carries the actions out. So a test can feed it a hand-made
//! sequence of events and read the actions back.
//!
//! How a plan becomes agent state (the sender drives every flow):
//! - `Wait`: a flow not yet started at its sender stays unannounced; a
//!   started one is held (it stops between two writes).
//! - `Eps` with cap: started unmarked, paced at the cap (`None`: TCP shares).
//! - `Ocs { port }`: started marked (TOS 0x08), *held while its circuit is
//!   not up in the kernel*, released when the OCS reports the circuit up. A
//!   held flow does not even connect, so nothing of it leaks onto EPS. On
//!   the eBPF datapath the mark names the wavelength (`port`,
//!   [`wire::FlowSpec::tos`]) and the ToR sends the flow over that circuit,
//!   so several circuits of one rack pair each carry the flows planned on
//!   them; the tc-mirred datapath routes a rack pair over one circuit, so
//!   there a decision's second circuit of a pair replaces the first.
//! - A flow's marking is fixed once it started. An OCS-marked flow later
//!   planned on EPS is released anyway (with no circuit for its pair, the
//!   ToR routes marked packets over EPS by itself); an EPS flow later planned
//!   on a circuit stays on EPS (counted in [`EmuNetStats::path_overrides`]);
//!   a flow later planned on another wavelength keeps naming its first, and
//!   the ToR sends it over any usable circuit of its pair while that one is
//!   not (counted in [`EmuNetStats::wavelength_moves`]).
//!
//! Under a time-flow schedule (the topology's `[ocs.schedule]`) the eBPF
//! datapath switches circuits by itself, so the policy's circuit requests
//! are ignored, and a flow between racks that the plan moves (on either
//! path) is started marked and released at once: the ToR sends its packets
//! over a circuit of its rack pair while one is up and over EPS otherwise,
//! as the fluid model routes it under the same schedule. Its order and
//! caps still apply.
//!
//! Circuits: the decision's setups are carried out by the rules both drivers
//! share ([`ocslab_core::coflow::carry_out`]): a setup tears down whatever
//! holds either port side (or joins the same rack pair, which the kernel
//! fabric routes only once), and the new matching goes to the OCS as a whole
//! ([`Action::Matching`]); the OCS keeps untouched ports running
//! (not-all-stop) and takes δ to bring the new circuits up. Flows on a
//! circuit about to be torn down are held first.

use ocslab_agent::protocol::{self as wire, Command, PartitionId, Transport};
use ocslab_core::coflow::{
    plan_of, priority, set_up_circuits, CircuitSwitch, CircuitView, CoflowPolicy, CoflowView, Decision,
    FabricParams, FlowPlan, FlowView, NetView, PairPlans, Path,
};
use ocslab_core::engine::Circuit;
use ocslab_core::model::coflow::{CoflowId, FlowId, FlowSpec};
use ocslab_core::net::links::LinkMap;
use ocslab_emulator::fabric::Datapath;
use ocslab_emulator::{Bps, HostId, Nanos, Topology};
use queues::QueuePicker;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;

/// Something the driver must carry out, in order.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Send `cmd` to the agent of `host`.
    Agent {
        /// The agent.
        host: HostId,
        /// The command.
        cmd: Command,
    },
    /// Configure exactly these circuits on the OCS (a whole matching).
    Matching(Vec<Circuit>),
}

/// What the sender of a flow has been told so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct AtAgent {
    marked: wire::Path,
    /// The wavelength its mark names, if any.
    wavelength: Option<u32>,
    released: bool,
    rate: Option<Bps>,
}

#[derive(Clone, Debug)]
struct Entry {
    partition: PartitionId,
    agent: Option<AtAgent>,
    /// Sender-side bytes at the last two progress reports (time, bytes).
    last_report: Option<(Nanos, u64)>,
}

/// A flow that delivered its last byte, as [`EmuNetwork::flow_done`] returns it.
#[derive(Clone, Debug, PartialEq)]
pub struct Finished {
    /// The flow.
    pub spec: FlowSpec,
    /// When it joined the network (experiment time).
    pub requested: Nanos,
    /// How its sender marked it (`None`: never started, e.g. a zero-byte flow).
    pub marked: Option<wire::Path>,
}

/// Counters of what the network did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct EmuNetStats {
    /// Times the policy was asked.
    pub policy_calls: u64,
    /// Circuits requested.
    pub circuits_requested: u64,
    /// Matchings sent to the OCS.
    pub matchings: u64,
    /// Agent commands issued.
    pub agent_commands: u64,
    /// Plans that asked a started flow to change its marking (kept as it was).
    pub path_overrides: u64,
    /// Plans that moved a started flow to another wavelength of its rack
    /// pair (its mark keeps naming the first).
    pub wavelength_moves: u64,
    /// Flows told a flow queue that another flow already held on a link
    /// of theirs: links with more flows than queues (docs/fabric.md).
    pub shared_queues: u64,
}

/// The coflow policy's view of the real network, and what agents were told.
pub struct EmuNetwork {
    view: NetView,
    policy: Box<dyn CoflowPolicy>,
    addrs: BTreeMap<HostId, SocketAddr>,
    transport: Transport,
    flows: BTreeMap<FlowId, Entry>,
    /// Circuits the kernel reported up (and not down since).
    up: BTreeSet<Circuit>,
    /// Coflows with no active flow, kept so a later flow resumes them.
    dormant: BTreeMap<CoflowId, CoflowView>,
    wake_at: Option<Nanos>,
    /// The policy's standing pair plans: each decision's changes applied in turn.
    pair_plans: PairPlans,
    stats: EmuNetStats,
    /// Defer scheduling instants to [`EmuNetwork::flush`].
    batching: bool,
    /// A scheduling instant is pending.
    dirty: bool,
    /// The OCS follows a time-flow schedule: no on-demand circuits.
    scheduled: bool,
    /// The datapath carrying the circuits.
    datapath: Datapath,
    /// The flow queue each flow takes on the shaped links; `None` while
    /// the links have one queue each.
    queues: Option<QueuePicker>,
}

impl EmuNetwork {
    /// A network on `topo` scheduled by `policy`; `addrs` are the agents'
    /// data addresses; flows use `transport`.
    pub fn new(
        topo: &Topology,
        policy: Box<dyn CoflowPolicy>,
        addrs: BTreeMap<HostId, SocketAddr>,
        transport: Transport,
    ) -> EmuNetwork {
        EmuNetwork {
            view: NetView::new(FabricParams::from(topo)),
            policy,
            addrs,
            transport,
            flows: BTreeMap::new(),
            up: BTreeSet::new(),
            dormant: BTreeMap::new(),
            wake_at: None,
            pair_plans: PairPlans::default(),
            stats: EmuNetStats::default(),
            batching: false,
            dirty: false,
            scheduled: topo.ocs_schedule.is_some(),
            datapath: Datapath::default(),
            queues: None,
        }
    }

    /// The fabric's shaped links split their data over `count` flow
    /// queues: each flow is told which to take (`network/queues.rs`), so
    /// that flows meeting at a link take different ones while there are
    /// enough.
    pub fn with_flow_queues(mut self, count: u16) -> EmuNetwork {
        let fabric = self.view.fabric;
        self.queues = QueuePicker::new(LinkMap::new(&fabric), fabric.ocs_ports, count);
        self
    }

    /// Flow `id` left the network, or is to start afresh: its queue is free.
    fn release_queue(&mut self, id: FlowId) {
        if let Some(q) = &mut self.queues {
            q.release(id);
        }
    }

    /// The circuits run on `datapath` (by default tc-mirred: one circuit
    /// per rack pair, marks that name no wavelength).
    pub fn on_datapath(mut self, datapath: Datapath) -> EmuNetwork {
        self.datapath = datapath;
        self
    }

    /// Whether a rack pair may hold several circuits, each carrying the
    /// flows whose mark names its wavelength (the eBPF datapath).
    fn wavelengths_named(&self) -> bool {
        self.datapath == Datapath::Ebpf
    }

    /// With batching on, the methods that are scheduling instants only note
    /// that the policy must be asked, and [`EmuNetwork::flush`] asks it once
    /// for all of them (the driver flushes after draining every report that
    /// is waiting, so a burst of hundreds of flow events costs one decision).
    pub fn set_batching(&mut self, on: bool) {
        self.batching = on;
    }

    /// Asks the policy if a scheduling instant is pending.
    pub fn flush(&mut self, now: Nanos) -> Vec<Action> {
        if std::mem::take(&mut self.dirty) {
            self.reschedule(now)
        } else {
            Vec::new()
        }
    }

    /// A scheduling instant: ask the policy now, or note it for `flush`.
    fn instant(&mut self, now: Nanos) -> Vec<Action> {
        if self.batching {
            self.dirty = true;
            Vec::new()
        } else {
            self.reschedule(now)
        }
    }

    /// The policy's name.
    pub fn policy_name(&self) -> &'static str {
        self.policy.name()
    }

    /// Whether the policy puts elephants on circuits.
    pub fn policy_uses_ocs(&self) -> bool {
        self.policy.uses_ocs()
    }

    /// The view the policy sees.
    pub fn view(&self) -> &NetView {
        &self.view
    }

    /// Counters so far.
    pub fn stats(&self) -> &EmuNetStats {
        &self.stats
    }

    /// Flows in the network.
    pub fn in_flight(&self) -> usize {
        self.flows.len()
    }

    /// When the policy asked to be called again.
    pub fn wake_at(&self) -> Option<Nanos> {
        self.wake_at
    }

    /// Flows join at `now`, each with the partition key its content is made from.
    pub fn add_flows(&mut self, now: Nanos, flows: Vec<(FlowSpec, PartitionId)>) -> Vec<Action> {
        if flows.is_empty() {
            return Vec::new();
        }
        for (spec, partition) in flows {
            if !self.view.coflows.contains_key(&spec.coflow) {
                if let Some(c) = self.dormant.remove(&spec.coflow) {
                    self.view.coflows.insert(spec.coflow, c);
                }
            }
            self.flows.insert(
                spec.id,
                Entry {
                    partition,
                    agent: None,
                    last_report: None,
                },
            );
            self.view.insert_flow(spec, now);
        }
        self.instant(now)
    }

    /// The receiver reported `flow` complete at `now`: it leaves the
    /// network and the policy is asked again. `None` if the flow is unknown
    /// (already gone, e.g. its host died).
    pub fn flow_done(&mut self, now: Nanos, flow: FlowId) -> Option<(Finished, Vec<Action>)> {
        let entry = self.flows.remove(&flow)?;
        self.release_queue(flow);
        let fv = self.view.flows.remove(&flow)?;
        self.leave_coflow(&fv.spec, fv.elephant);
        let fin = Finished {
            requested: fv.started,
            marked: entry.agent.map(|a| a.marked),
            spec: fv.spec,
        };
        Some((fin, self.instant(now)))
    }

    /// `flow` failed at an end and is to be sent again from its first byte:
    /// its sender is told afresh at the next scheduling instant, as a new
    /// flow would be. `None` if the flow is unknown (already gone, e.g. its
    /// host died).
    pub fn restart(&mut self, now: Nanos, flow: FlowId) -> Option<Vec<Action>> {
        self.release_queue(flow);
        let entry = self.flows.get_mut(&flow)?;
        let f = self.view.flows.get_mut(&flow)?;
        entry.agent = None;
        entry.last_report = None;
        if let Some(c) = self.view.coflows.get_mut(&f.spec.coflow) {
            c.sent_bytes = (c.sent_bytes - f.sent_eps_bytes - f.sent_ocs_bytes).max(0.0);
        }
        let fresh = FlowView::new(f.spec.clone(), f.started);
        *f = FlowView {
            elephant: f.elephant,
            ..fresh
        };
        Some(self.instant(now))
    }

    /// Sender-side progress of flows of `host` (from a heartbeat at `now`):
    /// updates bytes sent and rates, without asking the policy.
    pub fn progress(&mut self, now: Nanos, progress: &[wire::FlowProgress]) {
        for p in progress.iter().filter(|p| p.role == wire::FlowRole::Sender) {
            let id = FlowId(p.flow.0);
            let (Some(e), Some(f)) = (self.flows.get_mut(&id), self.view.flows.get_mut(&id)) else {
                continue;
            };
            let sent = p.bytes.0.min(f.spec.bytes.0);
            let before = f.spec.bytes.0 as f64 - f.remaining_bytes;
            let delta = (sent as f64 - before).max(0.0);
            f.remaining_bytes = (f.spec.bytes.0 - sent) as f64;
            match e.agent.map(|a| a.marked) {
                Some(wire::Path::Ocs) => f.sent_ocs_bytes += delta,
                _ => f.sent_eps_bytes += delta,
            }
            if let Some(c) = self.view.coflows.get_mut(&f.spec.coflow) {
                c.sent_bytes += delta;
            }
            if let Some((t, b)) = e.last_report {
                if now > t {
                    f.rate_bytes_per_s = sent.saturating_sub(b) as f64 / (now - t).as_secs_f64();
                }
            }
            f.eta = (f.rate_bytes_per_s > 0.0)
                .then(|| now + Nanos::from_secs_f64(f.remaining_bytes / f.rate_bytes_per_s));
            e.last_report = Some((now, sent));
        }
    }

    /// The OCS reported `circuit` up or down at `now`. Flows waiting for it
    /// are released; a circuit coming up is a scheduling instant.
    pub fn circuit_event(&mut self, now: Nanos, circuit: Circuit, up: bool) -> Vec<Action> {
        if up {
            self.up.insert(circuit);
            if let Some(c) = self.view.circuits.get_mut(&(circuit.src_rack, circuit.port)) {
                if c.dst_rack == circuit.dst_rack {
                    c.up_at = c.up_at.min(now);
                }
            }
            self.instant(now)
        } else {
            self.up.remove(&circuit);
            Vec::new()
        }
    }

    /// The policy's wake-up time has come.
    pub fn wake(&mut self, now: Nanos) -> Vec<Action> {
        self.instant(now)
    }

    /// `host` is back (a restarted agent joined) with its data address.
    pub fn host_alive(&mut self, host: HostId, addr: SocketAddr) {
        self.addrs.insert(host, addr);
    }

    /// `host` is dead: its flows (either end) leave the network without
    /// finishing; returns them.
    pub fn host_dead(&mut self, now: Nanos, host: HostId) -> (Vec<FlowSpec>, Vec<Action>) {
        self.addrs.remove(&host);
        let gone: Vec<FlowId> = self
            .view
            .flows
            .values()
            .filter(|f| f.spec.src == host || f.spec.dst == host)
            .map(|f| f.spec.id)
            .collect();
        let mut lost = Vec::with_capacity(gone.len());
        for id in gone {
            self.flows.remove(&id);
            self.release_queue(id);
            if let Some(f) = self.view.flows.remove(&id) {
                self.leave_coflow(&f.spec, f.elephant);
                lost.push(f.spec);
            }
        }
        let actions = if lost.is_empty() {
            Vec::new()
        } else {
            self.instant(now)
        };
        (lost, actions)
    }

    fn leave_coflow(&mut self, spec: &FlowSpec, elephant: bool) {
        if let Some(c) = self.view.leave_coflow(spec.coflow, &spec.id, elephant) {
            self.dormant.insert(spec.coflow, c);
        }
    }

    /// Asks the policy and turns its decision into actions.
    fn reschedule(&mut self, now: Nanos) -> Vec<Action> {
        let decision = self.policy.schedule(now, &self.view);
        self.stats.policy_calls += 1;
        self.wake_at = decision.wake_at.filter(|&t| t > now);
        let mut out = Vec::new();
        self.apply_circuits(now, &decision, &mut out);
        self.apply_plans(&decision, &mut out);
        self.policy.recycle(decision);
        self.stats.agent_commands += out.iter().filter(|a| matches!(a, Action::Agent { .. })).count() as u64;
        out
    }

    /// Carries out the decision's circuits by the shared rules
    /// ([`set_up_circuits`]) on the view's circuits, the kernel's switch
    /// collecting the matching. If the matching changed, flows on circuits
    /// leaving it are held and the whole matching goes to the OCS.
    fn apply_circuits(&mut self, now: Nanos, decision: &Decision, out: &mut Vec<Action>) {
        if decision.circuits.is_empty() || self.scheduled {
            return;
        }
        let fabric = self.view.fabric;
        // The view's circuits are the matching last sent to the OCS.
        let sent = self.view.circuits.clone();
        let one_per_pair = !self.wavelengths_named();
        self.stats.circuits_requested += set_up_circuits(
            &mut self.view.circuits,
            &fabric,
            &decision.circuits,
            now,
            &mut KernelSwitch { one_per_pair },
        );
        // A circuit torn down and set up again within one decision never
        // left the matching: it keeps running, and keeps its time up.
        let kept = |key: &(u32, u32), dst: u32| sent.get(key).filter(|o| o.dst_rack == dst);
        for (key, c) in self.view.circuits.iter_mut() {
            if let Some(old) = kept(key, c.dst_rack) {
                c.up_at = old.up_at;
            }
        }
        if self.view.circuits == sent {
            return;
        }
        // Circuits going away: hold their flows first, then forget them.
        let now_up = &self.view.circuits;
        let removed: Vec<Circuit> = sent
            .iter()
            .filter(|(k, o)| now_up.get(k).is_none_or(|c| c.dst_rack != o.dst_rack))
            .map(|(_, o)| circuit(o))
            .collect();
        for c in &removed {
            self.up.remove(c);
            for f in self.view.flows.values() {
                if f.path == (Path::Ocs { port: c.port })
                    && f.spec.src.rack == c.src_rack
                    && f.spec.dst.rack == c.dst_rack
                {
                    if let Some(e) = self.flows.get_mut(&f.spec.id) {
                        if let Some(a) = e.agent.as_mut().filter(|a| a.released) {
                            a.released = false;
                            out.push(Action::Agent {
                                host: f.spec.src,
                                cmd: Command::HoldFlow {
                                    flow: wire::FlowId(f.spec.id.0),
                                },
                            });
                        }
                    }
                }
            }
        }
        self.stats.matchings += 1;
        out.push(Action::Matching(
            self.view.circuits.values().map(circuit).collect(),
        ));
    }

    fn apply_plans(&mut self, decision: &Decision, out: &mut Vec<Action>) {
        let fabric = self.view.fabric;
        let mut plans: BTreeMap<FlowId, FlowPlan> = decision.plans.iter().copied().collect();
        // A coflow order is carried out by pacing: each flow at its
        // strict-priority rate (an empty order too: every coflow by id, as
        // the fluid network serves it).
        if self.policy.orders_coflows() {
            for (id, plan) in priority::paced_in_order(&self.view, &decision.order) {
                plans.entry(id).or_insert(plan);
            }
        }
        // Pair plans stand between decisions; each covers its coflow's flows
        // between its two racks, and takes precedence over a per-flow plan.
        self.pair_plans.apply(&decision.pair_changes);

        let scheduled = self.scheduled;
        let named = self.wavelengths_named();
        for (id, f) in self.view.flows.iter_mut() {
            let Some(e) = self.flows.get_mut(id) else { continue };
            let plan = plan_of(&self.pair_plans, plans.get(id).copied(), f).admissible(f, &fabric);
            let circuit_up = |port: u32| {
                self.up.contains(&Circuit {
                    src_rack: f.spec.src.rack,
                    dst_rack: f.spec.dst.rack,
                    port,
                })
            };
            // What the sender should be doing.
            let (marked, released) = match (plan.path, e.agent.map(|a| a.marked)) {
                (Path::Wait, None) => {
                    f.path = Path::Wait;
                    f.cap = None;
                    continue;
                }
                (Path::Wait, Some(m)) => (m, false),
                (_, m) if scheduled && f.spec.src.rack != f.spec.dst.rack => {
                    (m.unwrap_or(wire::Path::Ocs), true)
                }
                (Path::Eps, None | Some(wire::Path::Eps)) => (wire::Path::Eps, true),
                (Path::Eps, Some(wire::Path::Ocs)) => (wire::Path::Ocs, true),
                (Path::Ocs { port }, None | Some(wire::Path::Ocs)) => (wire::Path::Ocs, circuit_up(port)),
                (Path::Ocs { .. }, Some(wire::Path::Eps)) => {
                    self.stats.path_overrides += 1;
                    (wire::Path::Eps, true)
                }
            };
            f.path = match (marked, plan.path) {
                (_, Path::Wait) => Path::Wait,
                (wire::Path::Ocs, Path::Ocs { port }) => Path::Ocs { port },
                (wire::Path::Ocs, _) => Path::Eps,
                (wire::Path::Eps, _) => Path::Eps,
            };
            f.cap = plan.cap;
            // The circuit the flow was planned on (its path is a circuit only
            // if it is marked), named in its mark (under a schedule, none:
            // the pair's flows spread over its circuits).
            let wavelength = match f.path {
                Path::Ocs { port } if named && !scheduled => Some(port),
                _ => None,
            };
            let flow = wire::FlowId(id.0);
            let src = f.spec.src;
            match e.agent {
                None => {
                    let Some(&dst_addr) = self.addrs.get(&f.spec.dst) else {
                        continue; // receiver gone; the driver drops the flow
                    };
                    let queue = self.queues.as_mut().map(|q| q.pick(&f.spec));
                    if let Some((_, true)) = queue {
                        self.stats.shared_queues += 1;
                    }
                    let queue = queue.map(|(q, _)| q);
                    e.agent = Some(AtAgent {
                        marked,
                        wavelength,
                        released,
                        rate: plan.cap,
                    });
                    out.push(Action::Agent {
                        host: src,
                        cmd: Command::StartFlow(wire::FlowSpec {
                            flow,
                            partition: e.partition,
                            bytes: f.spec.bytes,
                            dst: f.spec.dst,
                            dst_addr,
                            path: marked,
                            rate: plan.cap,
                            held: !released,
                            transport: self.transport,
                            wavelength,
                            queue,
                        }),
                    });
                }
                Some(ref mut a) => {
                    if matches!((a.wavelength, wavelength), (Some(old), Some(new)) if old != new) {
                        self.stats.wavelength_moves += 1;
                    }
                    if a.rate != plan.cap {
                        a.rate = plan.cap;
                        out.push(Action::Agent {
                            host: src,
                            cmd: Command::SetRate { flow, rate: plan.cap },
                        });
                    }
                    if a.released != released {
                        a.released = released;
                        let cmd = if released {
                            Command::ReleaseFlow { flow }
                        } else {
                            Command::HoldFlow { flow }
                        };
                        out.push(Action::Agent { host: src, cmd });
                    }
                }
            }
        }
    }
}

/// The kernel fabric's OCS as the shared rules reconfigure it
/// ([`CircuitSwitch`]): it takes a whole matching at a time, the view's
/// circuits once a decision's changes are made ([`Action::Matching`]; the
/// driver's OCS worker applies it and reports the kernel's circuit events),
/// so a single change needs nothing. The tc-mirred datapath routes one
/// circuit per rack pair (`one_per_pair`); the eBPF one any number.
struct KernelSwitch {
    one_per_pair: bool,
}

impl CircuitSwitch for KernelSwitch {
    fn one_circuit_per_rack_pair(&self) -> bool {
        self.one_per_pair
    }
    fn tear_down(&mut self, _now: Nanos, _c: &CircuitView) {}
    fn set_up(&mut self, _now: Nanos, _c: &CircuitView) {}
}

fn circuit(c: &CircuitView) -> Circuit {
    Circuit {
        src_rack: c.src_rack,
        dst_rack: c.dst_rack,
        port: c.port,
    }
}

mod queues;
#[cfg(test)]
mod tests;
