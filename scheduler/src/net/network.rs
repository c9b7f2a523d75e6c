//! [`FluidNetwork`]: the event-driven fluid model. Between events every flow
//! moves at a constant rate; at each event (a flow joins or finishes, a
//! circuit comes up, the policy's wake-up) the coflow policy decides paths,
//! caps and circuits, and rates are recomputed by max-min water-filling
//! ([`super::maxmin`]) over the links of [`super::links`]. The next event is
//! the earliest of: a flow's finish at its rate, a circuit's end of dark
//! time, the policy's wake-up. Nothing ticks; nothing reads a clock.

use super::links::{LinkMap, Links};
use super::maxmin::{Demand, WaterFill};
use super::{CircuitRecord, Fabric, NetError, NetEvent, NetStats};
use crate::coflow::{self, CircuitSetup, CircuitView, CoflowPolicy, CoflowView, FabricParams, NetView, Path};
use crate::model::coflow::{CoflowId, FlowId, FlowSpec};
use ocslab_emulator::{Bps, Bytes, HostId, Nanos, Topology};
use std::collections::BTreeMap;

/// The fluid network: flows, links, circuits and the coflow policy.
pub struct FluidNetwork {
    view: NetView,
    policy: Box<dyn CoflowPolicy>,
    now: Nanos,
    wake_at: Option<Nanos>,
    next_completion: Option<Nanos>,
    /// Coflows with no active flow, kept so that a later flow resumes them
    /// (arrival and bytes sent carry over).
    dormant: BTreeMap<CoflowId, CoflowView>,
    pending: Vec<NetEvent>,
    stats: NetStats,
    circuit_log: Vec<CircuitRecord>,
    open_circuits: BTreeMap<(u32, u32), usize>,
    water: WaterFill,
    demands: Vec<Demand>,
    rates: Vec<f64>,
    residual: Vec<f64>,
}

impl FluidNetwork {
    /// A network for `topo` whose coflows are scheduled by the policy named
    /// `coflow_policy` (see [`crate::coflow::by_name`]).
    pub fn new(topo: &Topology, coflow_policy: &str) -> anyhow::Result<FluidNetwork> {
        Ok(FluidNetwork::with_policy(topo, coflow::by_name(coflow_policy)?))
    }

    /// A network for `topo` driven by `policy`.
    pub fn with_policy(topo: &Topology, policy: Box<dyn CoflowPolicy>) -> FluidNetwork {
        FluidNetwork::on_fabric(FabricParams::from(topo), policy)
    }

    /// A network on `fabric` driven by `policy`.
    pub fn on_fabric(fabric: FabricParams, policy: Box<dyn CoflowPolicy>) -> FluidNetwork {
        let view = NetView::new(fabric);
        let links = view.links.len();
        FluidNetwork {
            view,
            policy,
            now: Nanos::ZERO,
            wake_at: None,
            next_completion: None,
            dormant: BTreeMap::new(),
            pending: Vec::new(),
            stats: NetStats::default(),
            circuit_log: Vec::new(),
            open_circuits: BTreeMap::new(),
            water: WaterFill::new(links),
            demands: Vec::new(),
            rates: Vec::new(),
            residual: Vec::new(),
        }
    }

    /// Flows join the network at `now` (`now` is never before the last advance).
    ///
    /// # Panics
    /// If a flow names a host outside the topology or reuses the id of an
    /// active flow: the engine builds flows from the same validated topology,
    /// so either is a bug in the caller. Use [`FluidNetwork::try_add_flows`]
    /// for flows from elsewhere.
    pub fn add_flows(&mut self, now: Nanos, flows: &[FlowSpec]) {
        if let Err(e) = self.try_add_flows(now, flows) {
            panic!("FluidNetwork::add_flows: {e}");
        }
    }

    /// Like [`FluidNetwork::add_flows`], but returns an error (and adds
    /// none of the flows) if one is invalid.
    pub fn try_add_flows(&mut self, now: Nanos, flows: &[FlowSpec]) -> Result<(), NetError> {
        let f = &self.view.fabric;
        for spec in flows {
            for h in [spec.src, spec.dst] {
                if h.rack >= f.racks || h.host >= f.hosts_per_rack {
                    return Err(NetError::UnknownHost {
                        flow: spec.id,
                        host: h,
                    });
                }
            }
            if self.view.flows.contains_key(&spec.id) {
                return Err(NetError::DuplicateFlow(spec.id));
            }
        }
        if now > self.now {
            let events = self.advance_to(now);
            self.pending.extend(events);
        }
        for spec in flows {
            if !self.view.coflows.contains_key(&spec.coflow) {
                if let Some(c) = self.dormant.remove(&spec.coflow) {
                    self.view.coflows.insert(spec.coflow, c);
                }
            }
            self.view.insert_flow(spec.clone(), self.now);
        }
        if !flows.is_empty() {
            self.reschedule();
        }
        Ok(())
    }

    /// When the next event (a flow finishing, a circuit coming up, a policy
    /// wake-up) will happen if no flow is added; `None` when idle.
    pub fn next_event_at(&self) -> Option<Nanos> {
        let circuit = self
            .view
            .circuits
            .values()
            .map(|c| c.up_at)
            .filter(|&t| t > self.now)
            .min();
        [self.next_completion, circuit, self.wake_at]
            .into_iter()
            .flatten()
            .min()
    }

    /// Moves the network to `now`, returning what happened on the way, in time order.
    pub fn advance_to(&mut self, now: Nanos) -> Vec<NetEvent> {
        let mut events = std::mem::take(&mut self.pending);
        while let Some(t) = self.next_event_at().filter(|&t| t <= now) {
            self.move_to(t);
            self.process(&mut events);
        }
        if now > self.now {
            self.move_to(now);
        }
        events
    }

    /// Totals so far (bytes count when their flow finishes).
    pub fn stats(&self) -> &NetStats {
        &self.stats
    }

    /// The network as the policy sees it.
    pub fn view(&self) -> &NetView {
        &self.view
    }

    /// The time the network has been moved to.
    pub fn now(&self) -> Nanos {
        self.now
    }

    /// The coflow policy's name.
    pub fn policy_name(&self) -> &'static str {
        self.policy.name()
    }

    /// Whether the policy puts elephants on circuits.
    pub fn policy_uses_ocs(&self) -> bool {
        self.policy.uses_ocs()
    }

    /// Every circuit set up so far, in set-up order, for timelines and plots.
    pub fn circuit_log(&self) -> &[CircuitRecord] {
        &self.circuit_log
    }

    /// Flows move at their rates from `self.now` to `t` (no event in between).
    fn move_to(&mut self, t: Nanos) {
        let dt = (t - self.now).as_secs_f64();
        if dt > 0.0 {
            let NetView { flows, coflows, .. } = &mut self.view;
            for f in flows.values_mut().filter(|f| f.rate_bytes_per_s > 0.0) {
                let x = (f.rate_bytes_per_s * dt).min(f.remaining_bytes);
                f.remaining_bytes -= x;
                match f.path {
                    Path::Ocs { .. } => f.sent_ocs_bytes += x,
                    _ => f.sent_eps_bytes += x,
                }
                if let Some(c) = coflows.get_mut(&f.spec.coflow) {
                    c.sent_bytes += x;
                }
            }
        }
        self.now = t;
    }

    /// Handles what happens at `self.now`, then asks the policy again.
    fn process(&mut self, events: &mut Vec<NetEvent>) {
        let now = self.now;
        let done: Vec<FlowId> = self
            .view
            .flows
            .values()
            .filter(|f| f.eta.is_some_and(|t| t <= now))
            .map(|f| f.spec.id)
            .collect();
        for id in done {
            self.finish(id, events);
        }
        for c in self.view.circuits.values().filter(|c| c.up_at == now) {
            events.push(NetEvent::Circuit {
                at: now,
                src_rack: c.src_rack,
                dst_rack: c.dst_rack,
                port: c.port,
                up: true,
            });
        }
        if self.wake_at.is_some_and(|t| t <= now) {
            self.wake_at = None;
        }
        self.reschedule();
        events.append(&mut self.pending);
    }

    fn finish(&mut self, id: FlowId, events: &mut Vec<NetEvent>) {
        let Some(f) = self.view.flows.remove(&id) else {
            return;
        };
        if let Some(c) = self.view.coflows.get_mut(&f.spec.coflow) {
            c.sent_bytes += f.remaining_bytes.max(0.0);
            c.flows.remove(&id);
            if c.flows.is_empty() {
                if let Some(c) = self.view.coflows.remove(&f.spec.coflow) {
                    self.dormant.insert(f.spec.coflow, c);
                }
            }
        }
        let size = f.spec.bytes;
        let (eps, ocs) = if f.sent_ocs_bytes < 0.5 {
            (size, Bytes(0))
        } else if f.sent_eps_bytes < 0.5 {
            (Bytes(0), size)
        } else {
            let eps = (f.sent_eps_bytes.round() as u64).min(size.0);
            (Bytes(eps), Bytes(size.0 - eps))
        };
        self.stats.eps_bytes += eps;
        self.stats.ocs_bytes += ocs;
        self.stats.flows_done += 1;
        if f.spec.src.rack != f.spec.dst.rack {
            self.stats.cross_rack_bytes += size;
        }
        events.push(NetEvent::FlowDone {
            flow: id,
            coflow: f.spec.coflow,
            started: f.started,
            at: self.now,
            eps_bytes: eps,
            ocs_bytes: ocs,
        });
    }

    /// Asks the policy, applies its decision, recomputes rates and finish times.
    fn reschedule(&mut self) {
        let now = self.now;
        let decision = self.policy.schedule(now, &self.view);
        self.stats.policy_calls += 1;
        self.wake_at = decision.wake_at.filter(|&t| t > now);
        for setup in &decision.circuits {
            self.set_up(*setup);
        }
        let fabric = self.view.fabric;
        for f in self.view.flows.values_mut() {
            f.path = Path::Eps;
            f.cap = None;
        }
        for (id, plan) in &decision.plans {
            if let Some(f) = self.view.flows.get_mut(id) {
                f.path = match plan.path {
                    Path::Ocs { port } if port < fabric.ocs_ports && fabric.may_use_ocs(&f.spec) => plan.path,
                    Path::Ocs { .. } => Path::Eps,
                    p => p,
                };
                f.cap = plan.cap;
            }
        }
        self.compute_rates();
    }

    fn set_up(&mut self, s: CircuitSetup) {
        let f = &self.view.fabric;
        if s.src_rack >= f.racks || s.dst_rack >= f.racks || s.src_rack == s.dst_rack || s.port >= f.ocs_ports
        {
            tracing::warn!(?s, "policy asked for an impossible circuit; ignored");
            return;
        }
        if self.view.circuit(s.src_rack, s.dst_rack, s.port).is_some() {
            return;
        }
        if let Some(old) = self.view.circuits.remove(&(s.src_rack, s.port)) {
            self.tear_down(old);
        }
        let into = self
            .view
            .circuit_into(s.dst_rack, s.port)
            .map(|c| (c.src_rack, c.port));
        if let Some(key) = into {
            if let Some(old) = self.view.circuits.remove(&key) {
                self.tear_down(old);
            }
        }
        let up_at = self.now + self.view.fabric.reconfig_delay;
        self.view.circuits.insert(
            (s.src_rack, s.port),
            CircuitView {
                src_rack: s.src_rack,
                dst_rack: s.dst_rack,
                port: s.port,
                up_at,
            },
        );
        self.stats.reconfigurations += 1;
        self.open_circuits
            .insert((s.src_rack, s.port), self.circuit_log.len());
        self.circuit_log.push(CircuitRecord {
            src_rack: s.src_rack,
            dst_rack: s.dst_rack,
            port: s.port,
            requested_at: self.now,
            up_at,
            down_at: None,
        });
        if up_at == self.now {
            self.pending.push(NetEvent::Circuit {
                at: up_at,
                src_rack: s.src_rack,
                dst_rack: s.dst_rack,
                port: s.port,
                up: true,
            });
        }
    }

    fn tear_down(&mut self, old: CircuitView) {
        if let Some(i) = self.open_circuits.remove(&(old.src_rack, old.port)) {
            self.circuit_log[i].down_at = Some(self.now);
        }
        if old.is_up(self.now) {
            self.pending.push(NetEvent::Circuit {
                at: self.now,
                src_rack: old.src_rack,
                dst_rack: old.dst_rack,
                port: old.port,
                up: false,
            });
        }
    }

    /// Max-min rates under the current paths and caps, then finish times.
    fn compute_rates(&mut self) {
        let now = self.now;
        let view = &mut self.view;
        self.demands.clear();
        for f in view.flows.values() {
            if let Some(links) = route(&view.links, &view.circuits, f.spec.src, f.spec.dst, f.path, now) {
                self.demands.push(Demand {
                    links,
                    cap: f.cap.map_or(f64::INFINITY, Bps::bytes_per_sec),
                });
            }
        }
        self.residual.clear();
        self.residual.extend_from_slice(view.links.capacities());
        self.water
            .fill(&mut self.residual, &self.demands, &mut self.rates);
        let mut next = None::<Nanos>;
        let mut k = 0;
        let circuits = &view.circuits;
        let links = &view.links;
        for f in view.flows.values_mut() {
            let moving = route(links, circuits, f.spec.src, f.spec.dst, f.path, now).is_some();
            f.rate_bytes_per_s = if moving {
                k += 1;
                self.rates[k - 1]
            } else {
                0.0
            };
            f.eta = if f.remaining_bytes <= 0.0 {
                Some(now)
            } else if f.rate_bytes_per_s > 0.0 {
                let ns = (f.remaining_bytes / f.rate_bytes_per_s * 1e9).ceil();
                Some(now + Nanos(ns.min(u64::MAX as f64) as u64))
            } else {
                None
            };
            if let Some(t) = f.eta {
                next = Some(next.map_or(t, |n: Nanos| n.min(t)));
            }
        }
        self.next_completion = next;
    }
}

/// The links a flow from `src` to `dst` on `path` crosses at `now`, or
/// `None` if it does not move (waiting, or its circuit is not up).
fn route(
    links: &LinkMap,
    circuits: &BTreeMap<(u32, u32), CircuitView>,
    src: HostId,
    dst: HostId,
    path: Path,
    now: Nanos,
) -> Option<Links> {
    match path {
        Path::Eps => Some(links.eps_path(src, dst)),
        Path::Wait => None,
        Path::Ocs { port } => circuits
            .get(&(src.rack, port))
            .filter(|c| c.dst_rack == dst.rack && c.is_up(now))
            .map(|_| links.ocs_path(src, dst, port)),
    }
}

impl Fabric {
    /// The fabric of a path.
    pub fn of(path: Path) -> Option<Fabric> {
        match path {
            Path::Eps => Some(Fabric::Eps),
            Path::Ocs { .. } => Some(Fabric::Ocs),
            Path::Wait => None,
        }
    }
}
