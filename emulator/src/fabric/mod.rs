//! The kernel fabric: a datacenter of racks and hosts built from network
//! namespaces on one Linux box, an htb-shaped electrical (EPS) core, and a
//! software optical circuit switch (OCS) beside it.
//!
//! Layers, top to bottom:
//! - [`Fabric`]: the handle the CLI and the emulation driver use
//!   (`up`, `attach`, `spawn_in`, `ocs`, `counters`, `down`);
//! - [`plan`]: pure — a topology becomes namespaces, links, addresses,
//!   routes, shapers ([`htb`]) and OCS ports;
//! - [`apply`]: the plan becomes kernel objects over rtnetlink
//!   ([`netlink`], [`messages`]) from one process, namespaces made with
//!   `unshare`/bind mounts ([`netns`]);
//! - [`ocs`]: the crossbar (circuits, not-all-stop reconfiguration, events),
//!   on one of two datapaths: [`ebpf`] (a circuit map read per packet by tc
//!   programs; [`schedule`]s of matchings) or tc filters and routes;
//! - [`ledger`]: what a run made, on disk, so teardown (also after a crash)
//!   removes exactly that; [`names`] is the naming scheme it relies on;
//! - [`rootless`]: building as an ordinary user inside a user namespace.
//!
//! The API is blocking (plain threads, no async runtime): building takes a
//! fraction of a second and an OCS reconfiguration blocks for δ by design;
//! call it from a dedicated thread (or `spawn_blocking`) in async code.
//!
//! How the fabric is laid out, and the figures measured on it, are in
//! `docs/fabric.md`.

pub mod apply;
pub mod bench;
pub mod bench_ocs;
pub mod capacity;
pub mod child;
pub mod clock;
pub mod counters;
pub mod ebpf;
pub mod holder;
pub mod htb;
pub mod ledger;
pub mod messages;
pub mod names;
pub mod netlink;
pub mod netns;
pub mod ocs;
pub mod plan;
pub mod probe;
pub mod rootless;
pub use ocslab_core::optical::schedule;
pub mod user_runs;

pub use counters::CounterReader;
pub use ledger::{cleanup_stale, Datapath, Mode, Teardown};
pub use names::RunId;
pub use ocs::{Circuit, CircuitEvent, Ocs, OcsError, Reconfiguration};
pub use schedule::Schedule;

use crate::topology::{HostId, Topology, TopologyError};
use crate::units::Nanos;
use ledger::{Ledger, LedgerError, RunState};
use netlink::{NetlinkError, Rtnl};
use netns::{NetNs, NetnsError};
use plan::{FabricPlan, PlanError};
use serde::Serialize;
use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command};
use std::sync::Mutex;

/// Anything that can go wrong with a fabric.
#[derive(Debug, thiserror::Error)]
pub enum FabricError {
    /// The topology cannot be emulated.
    #[error(transparent)]
    Topology(#[from] TopologyError),
    /// The topology cannot be planned as namespaces and links.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// The run's ledger or directory.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    /// A namespace operation.
    #[error(transparent)]
    Netns(#[from] NetnsError),
    /// A netlink request.
    #[error(transparent)]
    Netlink(#[from] NetlinkError),
    /// The optical circuit switch.
    #[error(transparent)]
    Ocs(#[from] OcsError),
    /// A host name outside the topology.
    #[error("host {host} is not in topology {topology} ({racks} racks x {hosts} hosts, r0h0..r{}h{})", racks - 1, hosts - 1)]
    UnknownHost {
        /// The host asked for.
        host: HostId,
        /// The topology's name.
        topology: String,
        /// Its racks.
        racks: u32,
        /// Its hosts per rack.
        hosts: u32,
    },
    /// A cable outside the fabric.
    #[error("{cable} is not a link of topology {topology}")]
    UnknownCable {
        /// The cable asked for.
        cable: plan::Cable,
        /// The topology's name.
        topology: String,
    },
    /// A cable of a fabric built unshaped ([`FabricOptions::unshaped`]):
    /// cables go down through their shapers.
    #[error("{cable} cannot go down: the fabric was built without shapers")]
    Unshaped {
        /// The cable asked for.
        cable: plan::Cable,
    },
    /// Starting a process in a host failed.
    #[error("starting {program:?} in host {host}: {source}")]
    Spawn {
        /// The host.
        host: HostId,
        /// The program.
        program: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A measurement probe's socket failed.
    #[error("probe: {what}: {source}")]
    Probe {
        /// What the probe was doing.
        what: String,
        /// Why it failed.
        #[source]
        source: std::io::Error,
    },
    /// No such run, or it is not (fully) up.
    #[error("run {run}: {why}")]
    Run {
        /// The run.
        run: RunId,
        /// What is wrong.
        why: String,
    },
}

impl From<apply::ApplyError> for FabricError {
    fn from(e: apply::ApplyError) -> FabricError {
        match e {
            apply::ApplyError::Netns(e) => FabricError::Netns(e),
            apply::ApplyError::Netlink(e) => FabricError::Netlink(e),
        }
    }
}

/// Options of [`Fabric::up`].
#[derive(Clone, Debug, Default)]
pub struct FabricOptions {
    /// Use this run id instead of a fresh random one.
    pub run_id: Option<RunId>,
    /// Threads used to build (0: one per core, at most 4).
    pub threads: usize,
    /// The topology file, for the ledger and error messages.
    pub topology_file: Option<PathBuf>,
    /// Whether the owner is a detached background holder (recorded in the ledger).
    pub detached: bool,
    /// The queue under every htb class (default: a few ms, see [`htb`]).
    pub leaf_queue: htb::LeafQueue,
    /// The OCS datapath. `None`: eBPF as root, falling back to tc-mirred
    /// (with a warning) if the programs cannot be loaded; tc-mirred rootless
    /// (unprivileged BPF is disabled on most kernels). `Some` is required:
    /// the build fails if it cannot be had.
    pub datapath: Option<Datapath>,
    /// Leave every link unshaped (no htb): links carry what the box can
    /// move. For benches of the OCS datapath, whose links are faster than
    /// the box, so shapers would only add per-packet work. Such a fabric
    /// has no cables for [`Fabric::set_cable`].
    pub unshaped: bool,
}

/// Bytes of one ToR's EPS uplink, from the kernel's link counters of the
/// ToR end.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct UplinkCounters {
    /// The rack.
    pub rack: u32,
    /// Bytes sent up, ToR → core.
    pub up_bytes: u64,
    /// Bytes received, core → ToR.
    pub down_bytes: u64,
}

/// Bytes of one OCS port, from the kernel's counters of the crossbar end.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct OcsPortCounters {
    /// The rack.
    pub rack: u32,
    /// The wavelength.
    pub port: u32,
    /// Bytes that entered the OCS from the rack's ToR.
    pub from_rack_bytes: u64,
    /// Bytes the OCS delivered to the rack's ToR (carried by circuits).
    pub to_rack_bytes: u64,
}

/// Kernel byte counters of every EPS uplink and every OCS port.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FabricCounters {
    /// When they were read ([`clock::now`]).
    pub at: Nanos,
    /// One per rack.
    pub uplinks: Vec<UplinkCounters>,
    /// One per (rack, wavelength).
    pub ocs_ports: Vec<OcsPortCounters>,
}

impl FabricCounters {
    /// Bytes circuits delivered, over all OCS ports.
    pub fn ocs_bytes(&self) -> u64 {
        self.ocs_ports.iter().map(|p| p.to_rack_bytes).sum()
    }
    /// Bytes sent up all EPS uplinks.
    pub fn eps_uplink_bytes(&self) -> u64 {
        self.uplinks.iter().map(|u| u.up_bytes).sum()
    }
}

/// A fabric that is up. The process that called [`Fabric::up`] owns it and
/// tears it down on [`Fabric::down`], on drop and on panic; a process that
/// [`Fabric::attach`]es only uses it.
pub struct Fabric {
    topo: Topology,
    plan: FabricPlan,
    ledger: Ledger,
    namespaces: Vec<NetNs>,
    ocs: Mutex<Option<Ocs>>,
    /// The eBPF programs (owner only; their filters hold them as well, until
    /// the namespaces go).
    bpf: Option<ebpf::Datapath>,
    /// The eBPF circuit table, until the first [`Fabric::ocs`] takes it.
    table: Mutex<Option<ebpf::CircuitTable>>,
    stats: Mutex<BTreeMap<usize, Rtnl>>,
    owner: bool,
    torn_down: bool,
}

impl std::fmt::Debug for Fabric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fabric")
            .field("run", &self.ledger.run_id)
            .field("topology", &self.topo.name)
            .field("owner", &self.owner)
            .finish()
    }
}

fn default_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(4)
}

pub(crate) fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

impl Fabric {
    /// Builds the fabric of `topo` (blocking) and returns its owner handle.
    /// Fails cleanly: whatever was made before an error is removed.
    pub fn up(topo: &Topology, opts: FabricOptions) -> Result<Fabric, FabricError> {
        let file = opts
            .topology_file
            .clone()
            .unwrap_or_else(|| PathBuf::from(format!("<topology {}>", topo.name)));
        // A fresh box's soft limit of 1,024 open files would not hold a
        // large fabric's descriptors; the limit checked is the hard one.
        if let Err(e) = capacity::raise_fd_limit() {
            tracing::warn!("raising the open-file limit: {e}");
        }
        topo.check_emulable(&file, &capacity::emulating_box())?;
        let work = ledger::work();
        let run = ledger::reserve_run_id(opts.run_id)?;
        let built = Self::build(topo, run, &opts);
        if built.is_err() {
            if let Err(e) = ledger::remove_run(run) {
                tracing::error!("cleaning up after a failed build of run {run}: {e}");
            }
        }
        drop(work);
        let fabric = built?;
        // A topology's `[ocs.schedule]`: the OCS follows it from the start.
        if let Some(schedule) = &topo.ocs_schedule {
            if let Err(e) = fabric.ocs().and_then(|o| Ok(o.set_schedule(schedule)?)) {
                if let Err(d) = fabric.down() {
                    tracing::error!("tearing down run {run} after its schedule was refused: {d}");
                }
                return Err(e);
            }
        }
        Ok(fabric)
    }

    fn build(topo: &Topology, run: RunId, opts: &FabricOptions) -> Result<Fabric, FabricError> {
        let mut plan = FabricPlan::with_leaf_queue(topo, run, opts.leaf_queue)?;
        if opts.unshaped {
            plan.unshape();
        }
        let me = std::process::id();
        let mut ledger = Ledger {
            run_id: run,
            mode: rootless::current_mode(),
            datapath: ledger::Datapath::TcMirred,
            owner_pid: me,
            owner_start: ledger::process_start(me).unwrap_or(0),
            detached: opts.detached,
            topology: topo.name.clone(),
            topology_file: opts.topology_file.clone(),
            started_unix_ms: unix_ms(),
            state: RunState::Building,
            namespaces: plan.namespaces.iter().map(|n| n.name.clone()).collect(),
        };
        ledger.save()?;
        let topo_path = ledger::run_dir(run).join("topology.toml");
        let text = toml::to_string(&topo.nominal).map_err(|e| LedgerError {
            what: "encoding topology for",
            path: topo_path.clone(),
            source: std::io::Error::other(e),
        })?;
        std::fs::write(&topo_path, text).map_err(|source| LedgerError {
            what: "writing",
            path: topo_path.clone(),
            source,
        })?;
        netns::prepare_netns_dir()?;
        let threads = if opts.threads == 0 {
            default_threads()
        } else {
            opts.threads
        };
        let (bpf, table) = Self::load_datapath(&plan, opts.datapath, ledger.mode)?;
        if bpf.is_some() {
            plan.without_ocs_rules();
        }
        let mut applied = apply::apply(&plan, threads)?;
        if let Some(bpf) = &bpf {
            for (i, reqs) in bpf.attach_requests(&plan) {
                applied.sockets[i].execute(reqs)?;
            }
            ledger.datapath = Datapath::Ebpf;
        }
        ledger.state = RunState::Up;
        ledger.save()?;
        tracing::info!(
            run = %run,
            namespaces = plan.namespaces.len(),
            veths = plan.veth_count(),
            mode = ?ledger.mode,
            datapath = %ledger.datapath,
            "fabric up"
        );
        let stats = applied
            .sockets
            .into_iter()
            .enumerate()
            .filter(|(i, _)| apply::keeps_socket(plan.namespaces[*i].role))
            .collect();
        Ok(Fabric {
            topo: topo.clone(),
            plan,
            ledger,
            namespaces: applied.namespaces,
            ocs: Mutex::new(None),
            bpf,
            table: Mutex::new(table),
            stats: Mutex::new(stats),
            owner: true,
            torn_down: false,
        })
    }

    /// Loads the eBPF datapath's programs if it is asked for (or, by
    /// default, as root); they are attached once the namespaces exist.
    fn load_datapath(
        plan: &FabricPlan,
        want: Option<Datapath>,
        mode: Mode,
    ) -> Result<(Option<ebpf::Datapath>, Option<ebpf::CircuitTable>), FabricError> {
        let try_ebpf = match want {
            Some(d) => d == Datapath::Ebpf,
            None => mode == Mode::Root,
        };
        if !try_ebpf || !plan.has_ocs() {
            return Ok((None, None));
        }
        match ebpf::load(plan) {
            Ok((bpf, table)) => Ok((Some(bpf), Some(table))),
            Err(e) if want.is_none() => {
                tracing::warn!("{e}; the OCS uses the tc-mirred datapath instead");
                Ok((None, None))
            }
            Err(e) => Err(OcsError::Ebpf(e).into()),
        }
    }

    /// Attaches to run `run`, which another process owns (e.g. `ocslab up`),
    /// to run commands in hosts, set circuits or read counters. Dropping an
    /// attached handle leaves the fabric up.
    pub fn attach(run: RunId) -> Result<Fabric, FabricError> {
        let ledger = Ledger::load(run)?;
        if ledger.state != RunState::Up {
            return Err(FabricError::Run {
                run,
                why: format!("is {:?}, not up", ledger.state).to_lowercase(),
            });
        }
        let path = ledger::run_dir(run).join("topology.toml");
        let text = std::fs::read_to_string(&path).map_err(|source| LedgerError {
            what: "reading",
            path: path.clone(),
            source,
        })?;
        let topo = Topology::parse(&text, &path)?;
        let plan = FabricPlan::new(&topo, run)?;
        let namespaces = plan
            .namespaces
            .iter()
            .map(|n| NetNs::open(&n.name))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Fabric {
            topo,
            plan,
            ledger,
            namespaces,
            ocs: Mutex::new(None),
            bpf: None,
            table: Mutex::new(None),
            stats: Mutex::new(BTreeMap::new()),
            owner: false,
            torn_down: false,
        })
    }

    /// The run id.
    pub fn run_id(&self) -> RunId {
        self.ledger.run_id
    }

    /// The topology (effective rates).
    pub fn topology(&self) -> &Topology {
        &self.topo
    }

    /// The plan it was built from.
    pub fn plan(&self) -> &FabricPlan {
        &self.plan
    }

    /// The run's ledger.
    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    fn check_host(&self, h: HostId) -> Result<(), FabricError> {
        if self.topo.contains(h) {
            Ok(())
        } else {
            Err(FabricError::UnknownHost {
                host: h,
                topology: self.topo.name.clone(),
                racks: self.topo.racks,
                hosts: self.topo.hosts_per_rack,
            })
        }
    }

    /// Host `h`'s address (on its NIC).
    pub fn host_addr(&self, h: HostId) -> Ipv4Addr {
        self.plan.addresses().host_addr(h.rack, h.host)
    }

    /// Host `h`'s namespace file (`/run/netns/ocslab-<run>-r0h0`), for
    /// `setns` in a child's `pre_exec` or for `ip netns exec`.
    pub fn host_netns_path(&self, h: HostId) -> PathBuf {
        netns::path_of(&self.plan.namespaces[self.plan.host_ns(h)].name)
    }

    /// The open namespace of host `h`.
    pub fn host_netns(&self, h: HostId) -> Result<&NetNs, FabricError> {
        self.check_host(h)?;
        Ok(&self.namespaces[self.plan.host_ns(h)])
    }

    /// Starts `cmd` inside host `h`'s network namespace (the child enters it
    /// with `setns` between fork and exec, and blocks no signal; nothing
    /// else changes).
    pub fn spawn_in(&self, h: HostId, mut cmd: Command) -> Result<Child, FabricError> {
        let _work = ledger::work();
        self.enter_host_before_exec(h, &mut cmd)?;
        cmd.spawn().map_err(|source| FabricError::Spawn {
            host: h,
            program: cmd.get_program().to_string_lossy().into_owned(),
            source,
        })
    }

    /// Replaces this process with `cmd` run inside host `h`'s network
    /// namespace (as `ip netns exec` does): returns only if that failed.
    pub fn exec_in(&self, h: HostId, cmd: &mut Command) -> FabricError {
        if let Err(e) = self.enter_host_before_exec(h, cmd) {
            return e;
        }
        FabricError::Spawn {
            host: h,
            program: cmd.get_program().to_string_lossy().into_owned(),
            source: cmd.exec(),
        }
    }

    /// Makes `cmd`'s process enter host `h`'s network namespace between fork
    /// and exec.
    fn enter_host_before_exec(&self, h: HostId, cmd: &mut Command) -> Result<(), FabricError> {
        let fd = self.host_netns(h)?.raw_fd();
        // SAFETY: the closure only calls pthread_sigmask(3) and setns(2),
        // which are async-signal-safe, the latter on a descriptor this
        // handle keeps open while `cmd` is spawned or exec'd from it.
        unsafe {
            cmd.pre_exec(move || {
                child::unblock_all_signals()?;
                if libc::setns(fd, libc::CLONE_NEWNET) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        Ok(())
    }

    /// Runs `f` on the calling thread inside host `h`'s namespace (sockets
    /// it opens stay there), then returns the thread to its own namespace.
    pub fn in_host<T>(&self, h: HostId, f: impl FnOnce() -> T) -> Result<T, FabricError> {
        Ok(self.host_netns(h)?.enter(f)?)
    }

    fn socket_in(&self, ns_index: usize) -> Result<Rtnl, FabricError> {
        let ns = &self.namespaces[ns_index];
        Ok(ns.enter(|| Rtnl::open(ns.name()))??)
    }

    /// Takes `cable` down (both directions drop every packet; queues and
    /// routes stay) or brings it back up. Returns whether it was down
    /// before. A flow across it stalls and its TCP retransmits until the
    /// cable is back.
    pub fn set_cable(&self, cable: plan::Cable, up: bool) -> Result<bool, FabricError> {
        let ends = self
            .plan
            .cable_ends(cable)
            .ok_or_else(|| FabricError::UnknownCable {
                cable,
                topology: self.topo.name.clone(),
            })?;
        if self.plan.shapers().next().is_none() {
            return Err(FabricError::Unshaped { cable });
        }
        let mut was_down = false;
        for (ns, ifindex) in ends {
            let what = format!("{cable} ({} if{ifindex})", self.namespaces[ns].name());
            let mut sock = self.socket_in(ns)?;
            for (i, req) in htb::up(ifindex, &what).into_iter().enumerate() {
                match sock.execute(vec![req]) {
                    Ok(()) => was_down |= i == 0,
                    Err(e) if e.source.raw_os_error() == Some(libc::ENOENT) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            if !up {
                sock.execute(htb::down(ifindex, &what).into())?;
            }
        }
        Ok(was_down)
    }

    /// The optical circuit switch (a shared handle; see [`Ocs`]).
    pub fn ocs(&self) -> Result<Ocs, FabricError> {
        let mut slot = self.ocs.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(o) = slot.as_ref() {
            return Ok(o.clone());
        }
        if !self.plan.has_ocs() {
            return Err(OcsError::NoOcs.into());
        }
        let backend = match self.ledger.datapath {
            Datapath::Ebpf => {
                let owned = self.table.lock().unwrap_or_else(|p| p.into_inner()).take();
                let table = match owned {
                    Some(t) => t,
                    None => {
                        let mut sock = self.socket_in(self.plan.ocs_ns())?;
                        ebpf::CircuitTable::find(&self.plan, &mut sock).map_err(OcsError::Ebpf)?
                    }
                };
                ocs::Backend::Ebpf(Box::new(table))
            }
            Datapath::TcMirred => ocs::Backend::TcMirred {
                ocs_sock: self.socket_in(self.plan.ocs_ns())?,
                tor_socks: (0..self.plan.racks())
                    .map(|r| self.socket_in(self.plan.tor_ns(r)))
                    .collect::<Result<Vec<_>, _>>()?,
            },
        };
        let mut core = ocs::OcsCore {
            plan: self.plan.clone(),
            backend,
            current: ocs::Matching::new(),
            delay: self.topo.reconfig_delay,
            log: self.open_ocs_log(),
            subscribers: Vec::new(),
        };
        core.current = core.read_kernel()?;
        let o = Ocs::new(core);
        *slot = Some(o.clone());
        Ok(o)
    }

    /// Opens `ocs.jsonl` in the run directory for appending; `None`, with a
    /// warning, if it cannot be opened.
    fn open_ocs_log(&self) -> Option<std::fs::File> {
        let path = ledger::run_dir(self.run_id()).join("ocs.jsonl");
        let opened = std::fs::OpenOptions::new().create(true).append(true).open(&path);
        opened
            .inspect_err(|e| tracing::warn!("reconfigurations not logged to {}: {e}", path.display()))
            .ok()
    }

    /// The kernel ids of the eBPF datapath's programs and maps (owner of an
    /// eBPF run only; `None` otherwise).
    pub fn bpf_objects(&self) -> Option<Result<ebpf::ObjectIds, ebpf::EbpfError>> {
        self.bpf.as_ref().map(ebpf::Datapath::object_ids)
    }

    /// Reads the kernel's byte counters of every EPS uplink and OCS port.
    pub fn counters(&self) -> Result<FabricCounters, FabricError> {
        let mut socks = self.stats.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = FabricCounters {
            at: clock::now(),
            ..Default::default()
        };
        for i in CounterReader::namespaces(&self.plan) {
            let sock = match socks.entry(i) {
                std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::btree_map::Entry::Vacant(e) => e.insert(self.socket_in(i)?),
            };
            counters::collect(&self.plan, i, sock, &mut out)?;
        }
        out.uplinks.sort_by_key(|u| u.rack);
        out.ocs_ports.sort_by_key(|p| (p.rack, p.port));
        Ok(out)
    }

    /// A reader of the same counters with sockets of its own, to be moved
    /// to another thread (e.g. a sampler that must not block a control loop).
    pub fn counter_reader(&self) -> Result<CounterReader, FabricError> {
        let socks = CounterReader::namespaces(&self.plan)
            .into_iter()
            .map(|i| Ok((i, self.socket_in(i)?)))
            .collect::<Result<Vec<_>, FabricError>>()?;
        Ok(CounterReader::new(self.plan.clone(), socks))
    }

    /// Tears the fabric down: ends processes inside its namespaces, removes
    /// the namespaces (and with them every link, qdisc and route) and the
    /// run directory. An attached handle only detaches.
    pub fn down(mut self) -> Result<Teardown, FabricError> {
        self.teardown()
    }

    fn teardown(&mut self) -> Result<Teardown, FabricError> {
        if self.torn_down || !self.owner {
            self.torn_down = true;
            return Ok(Teardown::default());
        }
        self.torn_down = true;
        let _work = ledger::work();
        // Close our own references first so the kernel can free the namespaces.
        *self.ocs.lock().unwrap_or_else(|p| p.into_inner()) = None;
        *self.table.lock().unwrap_or_else(|p| p.into_inner()) = None;
        self.bpf = None;
        self.stats.lock().unwrap_or_else(|p| p.into_inner()).clear();
        self.namespaces.clear();
        let t = ledger::remove_run(self.run_id())?;
        tracing::info!(run = %self.run_id(), namespaces = t.namespaces, processes = t.processes, "fabric down");
        Ok(t)
    }
}

impl Drop for Fabric {
    fn drop(&mut self) {
        if let Err(e) = self.teardown() {
            tracing::error!("tearing down run {}: {e}", self.run_id());
        }
    }
}

/// Runs that have a directory under `/run/ocslab`, with their ledgers (or
/// why a ledger could not be read).
pub fn runs() -> Vec<(RunId, Result<Ledger, LedgerError>)> {
    ledger::list_runs()
        .into_iter()
        .map(|r| (r, Ledger::load(r)))
        .collect()
}

/// Path of the on-disk state of run `run`.
pub fn run_dir(run: RunId) -> PathBuf {
    ledger::run_dir(run)
}
