//! The software optical circuit switch: a crossbar namespace with one port
//! per (rack, wavelength), and not-all-stop reconfiguration with delay δ.
//!
//! Model (Sec. II-B of the Co-scheduler paper, after c-Through): each input
//! port holds at most one circuit to one output port at a time; changing it
//! takes δ, during which *only the affected ports* carry nothing
//! ("not-all-stop"). Two datapaths carry the circuits ([`Datapath`]):
//!
//! - **eBPF** (root; [`super::ebpf`]): a circuit is an entry of a BPF map
//!   read by tc programs on every OCS port and ToR downlink. A
//!   reconfiguration writes the changed entries to go dark now, or at a
//!   time ahead ([`Ocs::set_matching_at`]), and come up δ later; the
//!   kernel switches them and keeps them dark, per packet. Several circuits
//!   may join one rack pair on different wavelengths (flows spread by hash),
//!   and the programs can follow a repeating [`Schedule`] by themselves.
//! - **tc-mirred** (rootless, or on request): a circuit i→j on wavelength w
//!   is a u32 match-all filter on port (i, w)'s ingress with `mirred egress
//!   redirect` to port (j, w), plus, in ToR i, the route `<rack j subnet> via
//!   <ToR j optical addr> dev ocs<w> table 100`, which packets marked TOS
//!   0x08 look up first. Ports whose circuit changes are torn down at once
//!   (route, then filter: marked traffic falls back to EPS), then δ after
//!   the call began the new circuits come up (filter, then route), timed by
//!   this thread (sleep until 300 µs before, then spin).
//!
//! The pure part ([`validate`], [`diff`]) has no clock and no I/O.

use super::clock;
use super::ebpf::{CircuitTable, EbpfError, PortStats};
pub use super::ledger::Datapath;
use super::messages;
use super::netlink::{NetlinkError, Prepared, Request, Rtnl};
use super::plan::FabricPlan;
use crate::units::Nanos;
pub use ocslab_core::optical::matching::{
    circuits_of, diff, validate, validate_multipath, Circuit, Matching, MatchingError, ParseCircuitError,
};
use ocslab_core::optical::Schedule;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A [`clock::now`] reading as whole nanoseconds in reports: the human form
/// of [`Nanos`] keeps four significant decimals, 0.1 ms of a clock reading.
fn whole_ns<S: serde::Serializer>(t: &Nanos, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(t.0)
}

/// A circuit went down (its port is dark) or came up, at `at`
/// ([`clock::now`], CLOCK_MONOTONIC).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CircuitEvent {
    /// When the kernel had applied the change.
    #[serde(serialize_with = "whole_ns")]
    pub at: Nanos,
    /// Sending rack.
    pub src_rack: u32,
    /// Receiving rack.
    pub dst_rack: u32,
    /// Wavelength.
    pub port: u32,
    /// Up (true) or down (false).
    pub up: bool,
}

/// What one call of [`Ocs::set_matching`] did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Reconfiguration {
    /// When the call began ([`clock::now`]).
    #[serde(serialize_with = "whole_ns")]
    pub started: Nanos,
    /// The delay δ applied.
    pub delay: Nanos,
    /// Down events (at teardown) then up events (after δ).
    pub events: Vec<CircuitEvent>,
    /// Circuits kept as they were (their ports never went dark).
    pub kept: usize,
    /// How long the teardown batch took.
    pub teardown: Nanos,
    /// How long after `started + delay` the new circuits were applied
    /// (tc-mirred: their filters; their routes follow in the next batch).
    /// Always 0 on the eBPF datapath, where the kernel enforces `up_at`.
    pub setup_late: Nanos,
    /// How long the call spent changing the kernel (eBPF: writing the map;
    /// tc-mirred: the teardown and setup batches).
    pub call: Nanos,
    /// The datapath that carried it out.
    pub datapath: Datapath,
}

impl Reconfiguration {
    /// When the last new circuit came (or comes) up; `started` if none did.
    pub fn up_at(&self) -> Nanos {
        self.events
            .iter()
            .filter(|e| e.up)
            .map(|e| e.at)
            .max()
            .unwrap_or(self.started)
    }
}

/// A schedule as the eBPF datapath holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ScheduleSummary {
    /// When slot 0 first began ([`clock::now`]).
    #[serde(serialize_with = "whole_ns")]
    pub epoch: Nanos,
    /// One round of all slots.
    pub period: Nanos,
    /// Slots.
    pub slots: u32,
}

/// An OCS failure.
#[derive(Debug, thiserror::Error)]
pub enum OcsError {
    /// The matching is not valid.
    #[error(transparent)]
    Matching(#[from] MatchingError),
    /// The kernel refused a change.
    #[error(transparent)]
    Netlink(#[from] NetlinkError),
    /// The eBPF datapath failed.
    #[error(transparent)]
    Ebpf(#[from] EbpfError),
    /// The topology has no OCS ports.
    #[error("this topology has no OCS (ocs.ports_per_rack = 0)")]
    NoOcs,
    /// A matching was asked for while the datapath follows a schedule.
    #[error("the OCS follows a schedule; clear it (`ocslab ocs schedule --clear`) before setting circuits")]
    Schedule,
    /// Something only the eBPF datapath can do.
    #[error("{0} needs the eBPF datapath; this run uses tc-mirred (rootless, or `ocslab up --datapath tc-mirred`)")]
    NeedsEbpf(&'static str),
}

/// How the crossbar reaches the kernel.
pub(crate) enum Backend {
    /// Filters in the OCS namespace and routes in the ToRs.
    TcMirred {
        /// The OCS namespace's rtnetlink socket.
        ocs_sock: Rtnl,
        /// ToR sockets, by rack.
        tor_socks: Vec<Rtnl>,
    },
    /// The eBPF programs' maps.
    Ebpf(Box<CircuitTable>),
}

/// The crossbar's state and sockets, shared by every [`Ocs`] handle.
pub(crate) struct OcsCore {
    pub(crate) plan: FabricPlan,
    pub(crate) backend: Backend,
    pub(crate) current: Matching,
    pub(crate) delay: Nanos,
    /// The run's reconfiguration log, opened once: a teardown that
    /// removes the run directory while this process still reconfigures
    /// (from its own signal thread) unlinks it, and later lines go to the
    /// unlinked file instead of creating it again in a directory being
    /// removed.
    pub(crate) log: Option<std::fs::File>,
    pub(crate) subscribers: Vec<mpsc::Sender<CircuitEvent>>,
}

/// A handle on the optical circuit switch of a fabric. Cheap to clone and
/// `Send`: a driver may move it to its own thread. Reconfigurations from
/// several handles are serialised; [`Ocs::set_matching`] blocks for δ.
#[derive(Clone)]
pub struct Ocs {
    core: Arc<Mutex<OcsCore>>,
}

impl std::fmt::Debug for Ocs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ocs").finish_non_exhaustive()
    }
}

impl OcsCore {
    fn port_what(c: &Circuit) -> String {
        format!("{c} (rack {} port {})", c.src_rack, c.port)
    }

    /// The datapath in use.
    pub(crate) fn datapath(&self) -> Datapath {
        match self.backend {
            Backend::TcMirred { .. } => Datapath::TcMirred,
            Backend::Ebpf(_) => Datapath::Ebpf,
        }
    }

    /// The circuits the kernel holds now: filters on the OCS ports' ingress,
    /// or the eBPF circuit table (circuits still dark included).
    pub(crate) fn read_kernel(&mut self) -> Result<Matching, OcsError> {
        let plan = &self.plan;
        let mut m = Matching::new();
        match &mut self.backend {
            Backend::Ebpf(table) => {
                let w = plan.wavelengths();
                for (p, out) in table.circuits()? {
                    m.insert((p / w, p % w), out / w);
                }
            }
            Backend::TcMirred { ocs_sock, .. } => {
                for r in 0..plan.racks() {
                    for w in 0..plan.wavelengths() {
                        let idx = plan.ocs_port_index(r, w);
                        let msgs = ocs_sock.dump(messages::dump_filters(idx), "listing circuit filters")?;
                        for msg in msgs {
                            if let netlink_packet_route::RouteNetlinkMessage::NewTrafficFilter(tc) = msg {
                                if let Some((dst, _)) =
                                    messages::circuit_target(&tc).and_then(|t| plan.ocs_port_of_index(t))
                                {
                                    m.insert((r, w), dst);
                                }
                            }
                        }
                    }
                }
            }
        }
        Ok(m)
    }

    fn teardown_requests(plan: &FabricPlan, down: &[Circuit]) -> (Vec<(u32, Vec<Request>)>, Vec<Request>) {
        let mut routes: BTreeMap<u32, Vec<Request>> = BTreeMap::new();
        let mut filters = Vec::new();
        for c in down {
            let r = plan.circuit_route(c.dst_rack, c.port);
            routes
                .entry(c.src_rack)
                .or_default()
                .push(messages::del_route(&r));
            filters.push(messages::del_circuit(
                plan.ocs_port_index(c.src_rack, c.port),
                &Self::port_what(c),
            ));
        }
        (routes.into_iter().collect(), filters)
    }

    fn setup_requests(plan: &FabricPlan, up: &[Circuit]) -> (Vec<Request>, Vec<(u32, Vec<Request>)>) {
        let mut routes: BTreeMap<u32, Vec<Request>> = BTreeMap::new();
        let mut filters = Vec::new();
        for c in up {
            filters.push(messages::add_circuit(
                plan.ocs_port_index(c.src_rack, c.port),
                plan.ocs_port_index(c.dst_rack, c.port),
                &Self::port_what(c),
            ));
            let r = plan.circuit_route(c.dst_rack, c.port);
            routes
                .entry(c.src_rack)
                .or_default()
                .push(messages::add_route(&r));
        }
        (filters, routes.into_iter().collect())
    }

    /// Applies `circuits` with dark time `delay`, as `when` says.
    fn reconfigure(
        &mut self,
        circuits: &[Circuit],
        delay: Nanos,
        when: When,
    ) -> Result<Reconfiguration, OcsError> {
        let (racks, ports) = (self.plan.racks(), self.plan.wavelengths());
        let new = match self.backend {
            Backend::Ebpf(ref table) => {
                if table.follows_schedule()? {
                    return Err(OcsError::Schedule);
                }
                validate_multipath(racks, ports, circuits)?
            }
            Backend::TcMirred { .. } if matches!(when, When::At(_)) => {
                return Err(OcsError::NeedsEbpf("a move at a set time"))
            }
            Backend::TcMirred { .. } => validate(racks, ports, circuits)?,
        };
        let (down, up, kept) = diff(&self.current, &new);
        let rec = match self.backend {
            Backend::Ebpf(ref mut table) => {
                let port = |c: &Circuit| c.src_rack * ports + c.port;
                let mut changed: Vec<u32> = down.iter().chain(&up).map(port).collect();
                changed.sort_unstable();
                changed.dedup();
                let outs: Vec<(u32, u32)> = up
                    .iter()
                    .map(|c| (port(c), c.dst_rack * ports + c.port))
                    .collect();
                let started = clock::now();
                let at = match when {
                    When::At(at) => Some(at),
                    When::Now { .. } => None,
                };
                let (dark_at, up_at) = table.reconfigure(&changed, &outs, at, delay)?;
                let call = Nanos(clock::now().0.saturating_sub(started.0));
                for c in &down {
                    self.current.remove(&(c.src_rack, c.port));
                }
                for c in &up {
                    self.current.insert((c.src_rack, c.port), c.dst_rack);
                }
                let events = events_of(&down, dark_at, false)
                    .chain(events_of(&up, up_at, true))
                    .collect();
                // The kernel brings the circuits up by itself; a waiting
                // call still returns when they are, as on the other datapath.
                if matches!(when, When::Now { wait: true }) && !up.is_empty() {
                    clock::sleep_until(up_at);
                }
                Reconfiguration {
                    started,
                    delay,
                    events,
                    kept,
                    teardown: call,
                    setup_late: Nanos(0),
                    call,
                    datapath: Datapath::Ebpf,
                }
            }
            Backend::TcMirred {
                ref mut ocs_sock,
                ref mut tor_socks,
            } => {
                let mut rec = mirred_reconfigure(
                    &self.plan,
                    ocs_sock,
                    tor_socks,
                    &down,
                    &up,
                    delay,
                    &mut self.current,
                )?;
                rec.kept = kept;
                rec
            }
        };
        self.publish(&rec);
        Ok(rec)
    }

    /// Makes the eBPF datapath follow `schedule`; returns once its epoch
    /// has come.
    fn set_schedule(&mut self, schedule: &Schedule) -> Result<Nanos, OcsError> {
        let Backend::Ebpf(ref mut table) = self.backend else {
            return Err(OcsError::NeedsEbpf("a time-flow schedule"));
        };
        let epoch = table.set_schedule(schedule)?;
        clock::sleep_until(epoch);
        self.current.clear();
        tracing::info!(
            slots = schedule.slots().len(),
            period_us = schedule.period().0 / 1000,
            "OCS follows a schedule"
        );
        Ok(epoch)
    }

    fn publish(&mut self, rec: &Reconfiguration) {
        if rec.events.is_empty() {
            return;
        }
        tracing::info!(
            down = rec.events.iter().filter(|e| !e.up).count(),
            up = rec.events.iter().filter(|e| e.up).count(),
            kept = rec.kept,
            delay_us = rec.delay.0 / 1000,
            call_us = rec.call.0 / 1000,
            setup_late_us = rec.setup_late.0 / 1000,
            datapath = %rec.datapath,
            "OCS reconfigured"
        );
        if let Some(file) = &mut self.log {
            let line = serde_json::to_string(rec).unwrap_or_default();
            if let Err(e) = writeln!(file, "{line}") {
                tracing::warn!("cannot log a reconfiguration: {e}");
            }
        }
        self.subscribers
            .retain(|s| rec.events.iter().all(|e| s.send(*e).is_ok()));
    }
}

/// When a reconfiguration happens.
#[derive(Clone, Copy)]
enum When {
    /// When the call is made; with `wait`, the call returns once the new
    /// circuits are up, without, on eBPF, once the circuit table holds
    /// them (the kernel brings them up by itself).
    Now { wait: bool },
    /// At this time ([`clock::now`]; eBPF only).
    At(Nanos),
}

fn events_of(cs: &[Circuit], at: Nanos, up: bool) -> impl Iterator<Item = CircuitEvent> + '_ {
    cs.iter().map(move |c| CircuitEvent {
        at,
        src_rack: c.src_rack,
        dst_rack: c.dst_rack,
        port: c.port,
        up,
    })
}

/// The tc-mirred reconfiguration: routes and filters of the ports in `down`
/// removed now, those of `up` added at the call's start + δ (timed here).
fn mirred_reconfigure(
    plan: &FabricPlan,
    ocs_sock: &mut Rtnl,
    tor_socks: &mut [Rtnl],
    down: &[Circuit],
    up: &[Circuit],
    delay: Nanos,
    current: &mut Matching,
) -> Result<Reconfiguration, OcsError> {
    let _rt = clock::Realtime::enter(clock::RECONFIG_PRIORITY);
    let start = Instant::now();
    let started = clock::now();
    // Teardown: routes first (marked traffic falls back to EPS), then filters.
    let (td_routes, td_filters) = OcsCore::teardown_requests(plan, down);
    let td_routes: Vec<(u32, Prepared)> = td_routes
        .into_iter()
        .map(|(r, reqs)| (r, tor_socks[r as usize].prepare(reqs)))
        .collect();
    let td_filters = ocs_sock.prepare(td_filters);
    for (r, p) in &td_routes {
        tor_socks[*r as usize].send(p)?;
    }
    ocs_sock.send(&td_filters)?;
    let dark_at = clock::now();
    for (r, p) in &td_routes {
        tor_socks[*r as usize].finish(p)?;
    }
    ocs_sock.finish(&td_filters)?;
    let teardown = Nanos(start.elapsed().as_nanos() as u64);
    // Whatever was torn down is gone now, even if setup fails below.
    for c in down {
        current.remove(&(c.src_rack, c.port));
    }
    let mut events: Vec<CircuitEvent> = events_of(down, dark_at, false).collect();
    let mut setup_late = Nanos(0);
    let mut setup = Nanos(0);
    if !up.is_empty() {
        let (su_filters, su_routes) = OcsCore::setup_requests(plan, up);
        let su_filters = ocs_sock.prepare(su_filters);
        let su_routes: Vec<(u32, Prepared)> = su_routes
            .into_iter()
            .map(|(r, reqs)| (r, tor_socks[r as usize].prepare(reqs)))
            .collect();
        let deadline = start + Duration::from_nanos(delay.0);
        wait_until(deadline);
        let setup_start = Instant::now();
        ocs_sock.send(&su_filters)?;
        let up_at = clock::now();
        setup_late = Nanos(Instant::now().saturating_duration_since(deadline).as_nanos() as u64);
        for (r, p) in &su_routes {
            tor_socks[*r as usize].send(p)?;
        }
        ocs_sock.finish(&su_filters)?;
        for (r, p) in &su_routes {
            tor_socks[*r as usize].finish(p)?;
        }
        setup = Nanos(setup_start.elapsed().as_nanos() as u64);
        for c in up {
            current.insert((c.src_rack, c.port), c.dst_rack);
        }
        events.extend(events_of(up, up_at, true));
    }
    Ok(Reconfiguration {
        started,
        delay,
        events,
        kept: 0,
        teardown,
        setup_late,
        call: Nanos(teardown.0 + setup.0),
        datapath: Datapath::TcMirred,
    })
}

/// Sleeps until shortly before `deadline`, then spins to it (a sleep
/// overshoots by tens of microseconds; the spin does not).
fn wait_until(deadline: Instant) {
    const SPIN: Duration = Duration::from_micros(300);
    let now = Instant::now();
    if deadline > now + SPIN {
        std::thread::sleep(deadline - now - SPIN);
    }
    while Instant::now() < deadline {
        std::hint::spin_loop();
    }
}

impl Ocs {
    pub(crate) fn new(core: OcsCore) -> Ocs {
        Ocs {
            core: Arc::new(Mutex::new(core)),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, OcsCore> {
        // A panic mid-reconfiguration leaves `current` at what was applied.
        self.core.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Configures `circuits` as the new matching with the topology's δ,
    /// not-all-stop: ports whose circuit is unchanged keep carrying traffic;
    /// the others go dark at once and their new circuits come up δ after the
    /// call began. Blocks until then (returns at once if only teardowns).
    pub fn set_matching(&self, circuits: &[Circuit]) -> Result<Reconfiguration, OcsError> {
        let mut core = self.lock();
        let delay = core.delay;
        core.reconfigure(circuits, delay, When::Now { wait: true })
    }

    /// As [`Ocs::set_matching`] with another δ (benchmarks, manual circuits).
    pub fn set_matching_with_delay(
        &self,
        circuits: &[Circuit],
        delay: Nanos,
    ) -> Result<Reconfiguration, OcsError> {
        self.lock().reconfigure(circuits, delay, When::Now { wait: true })
    }

    /// As [`Ocs::set_matching_with_delay`], without waiting for δ where the
    /// kernel enforces it. On eBPF the call returns once the circuit table
    /// holds the new matching; the new circuits carry packets from their up
    /// events' times on by themselves, and subscribers get those events now,
    /// dated ahead. On tc-mirred, where user space times δ, it waits as
    /// [`Ocs::set_matching_with_delay`] does.
    pub fn begin_matching_with_delay(
        &self,
        circuits: &[Circuit],
        delay: Nanos,
    ) -> Result<Reconfiguration, OcsError> {
        self.lock()
            .reconfigure(circuits, delay, When::Now { wait: false })
    }

    /// Writes a move that happens at `at` ([`clock::now`]; a time already
    /// past means now), not when the call is made: the changed ports keep
    /// their circuits until `at`, are dark from then, and the new circuits
    /// carry packets from `at` + `delay` on. The kernel makes the move by
    /// itself, so its instant owes nothing to when a thread runs, and
    /// nothing of the call's own time falls inside it. Returns once the
    /// circuit table holds it; subscribers get its events now, dated ahead.
    /// A later call replaces a move not yet complete (a port not yet dark
    /// keeps its circuit until the new move; one already dark stays dark
    /// until the new circuit comes up). eBPF only.
    pub fn set_matching_at(
        &self,
        circuits: &[Circuit],
        at: Nanos,
        delay: Nanos,
    ) -> Result<Reconfiguration, OcsError> {
        self.lock().reconfigure(circuits, delay, When::At(at))
    }

    /// The circuits configured now, as this handle knows them.
    pub fn circuits(&self) -> Vec<Circuit> {
        circuits_of(&self.lock().current)
    }

    /// The circuits the kernel holds now (reads the filters or the circuit
    /// map back).
    pub fn kernel_circuits(&self) -> Result<Vec<Circuit>, OcsError> {
        Ok(circuits_of(&self.lock().read_kernel()?))
    }

    /// The datapath carrying the circuits.
    pub fn datapath(&self) -> Datapath {
        self.lock().datapath()
    }

    /// Makes the datapath follow `schedule` by itself (eBPF only); returns
    /// its epoch (on [`clock::now`]'s clock), when slot 0 first begins, once
    /// it has: [`SCHEDULE_LEAD`](super::ebpf::SCHEDULE_LEAD) after the
    /// clock reading before its last writes (written again if they return
    /// later). Before the epoch every port is dark; from it on, the datapath
    /// is the schedule, its first slot 0 dark for δ on every port
    /// ([`Schedule::dark`]).
    /// [`Ocs::set_matching`] is refused until [`Ocs::clear_schedule`].
    pub fn set_schedule(&self, schedule: &Schedule) -> Result<Nanos, OcsError> {
        self.lock().set_schedule(schedule)
    }

    /// Stops following a schedule: every port dark, no circuit.
    pub fn clear_schedule(&self) -> Result<(), OcsError> {
        let mut core = self.lock();
        let Backend::Ebpf(ref mut table) = core.backend else {
            return Ok(());
        };
        table.clear_schedule()?;
        core.current.clear();
        Ok(())
    }

    /// Whether the datapath follows a schedule now.
    pub fn follows_schedule(&self) -> Result<bool, OcsError> {
        Ok(self.schedule_summary()?.is_some())
    }

    /// The schedule the datapath follows, as the kernel holds it: its
    /// epoch ([`clock::now`]), period and number of slots.
    pub fn schedule_summary(&self) -> Result<Option<ScheduleSummary>, OcsError> {
        match self.lock().backend {
            Backend::Ebpf(ref table) => Ok(table
                .schedule_summary()?
                .map(|(epoch, period, slots)| ScheduleSummary { epoch, period, slots })),
            Backend::TcMirred { .. } => Ok(None),
        }
    }

    /// Per input port (rack × wavelengths + wavelength): packets carried and
    /// dropped by the eBPF datapath.
    pub fn port_stats(&self) -> Result<Vec<PortStats>, OcsError> {
        match self.lock().backend {
            Backend::Ebpf(ref table) => Ok(table.stats()?),
            Backend::TcMirred { .. } => Err(OcsError::NeedsEbpf("per-port packet counters")),
        }
    }

    /// The topology's reconfiguration delay δ.
    pub fn delay(&self) -> Nanos {
        self.lock().delay
    }

    /// A stream of every future circuit event.
    pub fn subscribe(&self) -> mpsc::Receiver<CircuitEvent> {
        let (tx, rx) = mpsc::channel();
        self.lock().subscribers.push(tx);
        rx
    }
}
