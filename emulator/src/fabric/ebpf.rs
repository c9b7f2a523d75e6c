//! The OCS as an eBPF datapath: circuits in a BPF map, the reconfiguration
//! delay enforced per packet by the kernel.
//!
//! The programs are `emulator/bpf/ocs.bpf.c`, shipped compiled beside it
//! (`scripts/build-bpf` rebuilds it; CI checks the two match), so building
//! ocslab needs no clang. They are loaded and verified with aya, then
//! attached as tc `bpf` filters (direct action) in each namespace's netlink
//! batch: `ocs_port` on the ingress of every OCS port, `tor_ingress` on the
//! ingress of every ToR downlink. The filters hold the programs, and the
//! programs their maps, for as long as the namespaces exist: removing the
//! run's namespaces (`down`, also after a crash) frees them all. Nothing is
//! pinned. (tcx links would die with their owner, but each attach and
//! detach waits for an RCU grace period, ≈ 10 ms here: 1,024 hosts took
//! 16 s more to build and 9 s more to tear down.)
//!
//! A circuit is one entry of the map `circuits`, indexed by input port
//! (rack × wavelengths + wavelength): the output it carries packets to
//! until `down_at` (`prev_out`), and the output it carries them to from
//! `up_at` on (`out`), CLOCK_MONOTONIC times; between the two the port is
//! dark. A reconfiguration writes only the ports that change (not-all-stop),
//! each entry whole under its BPF spin lock (`BPF_F_LOCK`; the programs read
//! it under the lock too), with `down_at` the time the move happens and
//! `up_at` δ after it, or after the time the write is known to have
//! landed if that is later (two writes, the first with no `up_at`). A
//! move happens now, or at a time ahead ([`CircuitTable::reconfigure`]):
//! the kernel then switches the port by
//! itself at `down_at`, on the first packet that reads the entry after it.
//! No rtnl lock is taken and no timer runs.
//!
//! The OCS judges a packet by the time its ToR sent it on, which the ToR
//! writes into the packet's source MAC: the ToR-to-OCS hop, a few metres of
//! fibre in a datacenter, is a few µs of kernel path here, and judged at
//! the port it would add that much to every dark time and drop the packets
//! in flight when a port goes dark. So a packet the ToR sent on before
//! `down_at` still crosses to `prev_out` (see the C source's header).
//!
//! A repeating [`Schedule`] of matchings (a rotor) is written to the maps
//! `schedule` and `slot_ports`; the map `mode` says which of the two the
//! programs follow.

use super::clock;
use super::messages;
use super::netlink::{Request, Rtnl};
use super::plan::{FabricPlan, OCS_PORT_INDEX, TOR_DOWN_INDEX, TOR_OCS_INDEX};
use crate::units::Nanos;
use aya::maps::{Array, Map, MapData, MapInfo, PerCpuArray};
use aya::programs::SchedClassifier;
use aya::{Ebpf, EbpfLoader, Pod};
use ocslab_core::optical::Schedule;
use std::os::fd::{AsFd, AsRawFd, RawFd};

/// The compiled programs (`emulator/bpf/ocs.bpf.o`).
static OBJECT: &[u8] = aya::include_bytes_aligned!("../../bpf/ocs.bpf.o");

/// No output port (also: no circuit).
const NO_PORT: u32 = u32::MAX;
pub use ocslab_core::optical::MAX_SLOTS;
const MODE_ON_DEMAND: u32 = 0;
const MODE_SCHEDULE: u32 = 1;

/// How far ahead of the clock [`CircuitTable::set_schedule`] sets a
/// schedule's epoch: time for its last two map writes (about 2 µs each
/// here) to land before slot 0 begins, with room for the thread to be held
/// back a while.
pub const SCHEDULE_LEAD: Nanos = Nanos(50_000);

/// How many times [`CircuitTable::set_schedule`] writes a schedule whose
/// writes were held up past its epoch before it gives up.
pub const SCHEDULE_ATTEMPTS: usize = 8;

/// The first byte of a source MAC that carries the time its ToR sent the
/// packet on (`STAMP_MARK` of the C source).
pub const STAMP_MARK: u8 = 0x06;

/// The source MAC a ToR writes into a packet it sends to the OCS at `sent`
/// (CLOCK_MONOTONIC): [`STAMP_MARK`], then the low 40 bits of the time in
/// nanoseconds, most significant first. The OCS port rebuilds the full time
/// from its own clock (40 bits wrap after 18 minutes; a stamp older than a
/// second, or ahead of the port's clock, is ignored).
pub fn stamp_mac(sent: Nanos) -> [u8; 6] {
    let t = sent.0.to_be_bytes();
    [STAMP_MARK, t[3], t[4], t[5], t[6], t[7]]
}

/// `struct circuit` of the C source.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct CircuitEntry {
    /// `struct bpf_spin_lock`: the kernel keeps it, writes skip it.
    lock: u32,
    out: u32,
    prev_out: u32,
    pad: u32,
    up_at: u64,
    down_at: u64,
}

/// A port with no circuit, never usable, and none before.
const DARK: CircuitEntry = CircuitEntry::new(NO_PORT, NO_PORT, u64::MAX, 0);

/// `BPF_F_LOCK`: read or write a map value under its spin lock.
const BPF_F_LOCK: u64 = 4;

impl CircuitEntry {
    const fn new(out: u32, prev_out: u32, up_at: u64, down_at: u64) -> CircuitEntry {
        CircuitEntry {
            lock: 0,
            out,
            prev_out,
            pad: 0,
            up_at,
            down_at,
        }
    }

    /// The output the port carries packets to at `t`, as the programs read
    /// the entry (`circuit_at` of the C source): what the tests hold
    /// [`CircuitEntry::moved`] to.
    #[cfg(test)]
    fn at(&self, t: u64) -> Option<u32> {
        let out = if t < self.down_at {
            self.prev_out
        } else if t < self.up_at {
            NO_PORT
        } else {
            self.out
        };
        (out != NO_PORT).then_some(out)
    }

    /// The entry, written at `now`, once the port moves at `at` (≥ `now`)
    /// to `next` (output, `up_at`; `None`: dark from then on). Until `at`
    /// the port keeps what it has at `now`: its circuit, carrying packets
    /// until `at`; or, dark, its dark time, which runs on to the new
    /// `up_at` (the circuit it was coming up to never does). A move not
    /// yet begun at `now` is replaced: the circuit before it carries on
    /// until `at`. So packets sent before `now` are judged as before,
    /// except that a settled circuit counts for every stamp before `at`
    /// (its ToR sent none on to it before its `up_at`), and no circuit
    /// carries a packet before δ of dark has passed.
    fn moved(self, now: u64, at: u64, next: Option<(u32, u64)>) -> CircuitEntry {
        let (out, up_at) = next.unwrap_or((NO_PORT, u64::MAX));
        if now < self.down_at {
            CircuitEntry::new(out, self.prev_out, up_at, at)
        } else if now < self.up_at {
            CircuitEntry::new(out, self.prev_out, up_at, self.down_at)
        } else {
            CircuitEntry::new(out, self.out, up_at, at)
        }
    }
}

/// `struct schedule` of the C source.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct ScheduleEntry {
    epoch: u64,
    period: u64,
    slots: u32,
    /// δ: in the first period, slot 0 sets up every circuit.
    first_dark: u32,
    start: [u64; MAX_SLOTS],
}

/// `struct slot_port` of the C source.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct SlotPortEntry {
    out: u32,
    dark: u32,
}

/// What one OCS input port did (`struct port_stats`), summed over CPUs.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct PortStats {
    /// Packets redirected over a circuit.
    pub packets: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Packets that arrived with no usable circuit (dark or none) and were dropped.
    pub dropped: u64,
}

// SAFETY: plain `repr(C)` structs of integers, laid out as in the C source,
// with explicit padding fields (every byte is initialised).
unsafe impl Pod for CircuitEntry {}
// SAFETY: as above.
unsafe impl Pod for ScheduleEntry {}
// SAFETY: as above.
unsafe impl Pod for SlotPortEntry {}
// SAFETY: as above.
unsafe impl Pod for PortStats {}

/// A failure of the eBPF datapath.
#[derive(Debug, thiserror::Error)]
#[error("eBPF OCS datapath: {what}: {source}")]
pub struct EbpfError {
    /// What was being done.
    pub what: String,
    /// Why it failed.
    #[source]
    pub source: Box<dyn std::error::Error + Send + Sync>,
}

fn err<E: std::error::Error + Send + Sync + 'static>(what: impl Into<String>) -> impl FnOnce(E) -> EbpfError {
    let what = what.into();
    move |e| EbpfError {
        what,
        source: Box::new(e),
    }
}

/// The programs, in the order of [`Datapath::fds`].
const PROGRAMS: [&str; 2] = ["ocs_port", "tor_ingress"];

/// The loaded programs (what the owner holds until they are attached; the
/// filters then hold them too).
pub struct Datapath {
    bpf: Ebpf,
    /// Descriptors of the programs, in the order of [`PROGRAMS`].
    fds: [RawFd; 2],
}

/// Kernel ids of a run's BPF programs and maps.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ObjectIds {
    /// Programs.
    pub programs: Vec<u32>,
    /// Maps (those the programs use).
    pub maps: Vec<u32>,
}

impl Datapath {
    /// The ids of the loaded programs and of their maps.
    pub fn object_ids(&self) -> Result<ObjectIds, EbpfError> {
        let mut ids = ObjectIds::default();
        for (name, prog) in self.bpf.programs() {
            let info = prog.info().map_err(err(format!("program {name}")))?;
            ids.programs.push(info.id());
            ids.maps.extend(
                info.map_ids()
                    .map_err(err(format!("maps of {name}")))?
                    .unwrap_or_default(),
            );
        }
        ids.programs.sort_unstable();
        ids.maps.sort_unstable();
        ids.maps.dedup();
        Ok(ids)
    }

    /// The netlink batches, by namespace index of `plan`, that attach the
    /// programs: `ocs_port` on every OCS port (whose ingress qdisc the plan
    /// makes), an ingress qdisc and `tor_ingress` on every ToR downlink.
    pub fn attach_requests(&self, plan: &FabricPlan) -> Vec<(usize, Vec<Request>)> {
        let [ocs_fd, tor_fd] = self.fds;
        let mut out = Vec::new();
        let ports = (0..plan.racks())
            .flat_map(|r| (0..plan.wavelengths()).map(move |w| (r, w)))
            .map(|(r, w)| {
                let i = plan.ocs_port_index(r, w);
                messages::add_bpf_filter(i, ocs_fd, PROGRAMS[0], &format!("OCS port {r}/{w}"))
            })
            .collect();
        out.push((plan.ocs_ns(), ports));
        for r in 0..plan.racks() {
            let mut reqs = Vec::new();
            for h in 0..plan.hosts_per_rack() {
                let i = TOR_DOWN_INDEX + h;
                let what = format!("ToR {r} downlink {h}");
                reqs.push(messages::ingress_qdisc(i, &what));
                reqs.push(messages::add_bpf_filter(i, tor_fd, PROGRAMS[1], &what));
            }
            out.push((plan.tor_ns(r), reqs));
        }
        out
    }
}

/// Which of `ids` the kernel still holds (loaded programs and maps of the
/// whole box are listed; other runs' are ignored).
pub fn still_loaded(ids: &ObjectIds) -> ObjectIds {
    let mut programs: Vec<u32> = aya::programs::loaded_programs()
        .filter_map(Result::ok)
        .map(|p| p.id())
        .filter(|id| ids.programs.contains(id))
        .collect();
    let mut maps: Vec<u32> = aya::maps::loaded_maps()
        .filter_map(Result::ok)
        .map(|m| m.id())
        .filter(|id| ids.maps.contains(id))
        .collect();
    programs.sort_unstable();
    maps.sort_unstable();
    ObjectIds { programs, maps }
}

impl std::fmt::Debug for Datapath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Datapath").finish_non_exhaustive()
    }
}

/// Loads and verifies the programs for `plan`, with every port dark.
/// Returns the owner's handle (attach it with
/// [`Datapath::attach_requests`]) and the circuit table.
pub fn load(plan: &FabricPlan) -> Result<(Datapath, CircuitTable), EbpfError> {
    let w = plan.wavelengths();
    let racks = plan.racks();
    let n_ports = racks * w;
    let net_base = u32::from(plan.addresses().range().addr);
    let (ocs_ifindex, tor_ocs_ifindex) = (OCS_PORT_INDEX, TOR_OCS_INDEX);
    let mut bpf = EbpfLoader::new()
        .override_global("n_ports", &n_ports, true)
        .override_global("wavelengths", &w, true)
        .override_global("racks", &racks, true)
        .override_global("ocs_ifindex", &ocs_ifindex, true)
        .override_global("tor_ocs_ifindex", &tor_ocs_ifindex, true)
        .override_global("net_base", &net_base, true)
        .map_max_entries("circuits", n_ports)
        .map_max_entries("stats", n_ports)
        .map_max_entries("slot_ports", n_ports * MAX_SLOTS as u32)
        .load(OBJECT)
        .map_err(err("loading emulator/bpf/ocs.bpf.o"))?;
    // Every port dark before the first packet can reach a program (an
    // array map starts zeroed, which would read as circuits to port 0).
    let mut table = CircuitTable::from_maps(n_ports, |name| {
        bpf.take_map(name).ok_or_else(|| EbpfError {
            what: format!("the object has no map {name}"),
            source: "missing map".into(),
        })
    })?;
    table.clear_schedule()?;
    let mut fds = [0; 2];
    for (fd, name) in fds.iter_mut().zip(PROGRAMS) {
        let prog: &mut SchedClassifier = bpf
            .program_mut(name)
            .ok_or_else(|| EbpfError {
                what: format!("the object has no program {name}"),
                source: "missing program".into(),
            })?
            .try_into()
            .map_err(err(format!("program {name}")))?;
        prog.load().map_err(err(format!("verifying program {name}")))?;
        *fd = prog
            .fd()
            .map_err(err(format!("program {name}")))?
            .as_fd()
            .as_raw_fd();
    }
    Ok((Datapath { bpf, fds }, table))
}

/// The maps a reconfiguration writes. Owned by the fabric's owner after
/// [`load`], or found again by another process with [`CircuitTable::find`].
pub struct CircuitTable {
    n_ports: u32,
    mode: Array<MapData, u32>,
    circuits: Array<MapData, CircuitEntry>,
    schedule: Array<MapData, ScheduleEntry>,
    slot_ports: Array<MapData, SlotPortEntry>,
    stats: PerCpuArray<MapData, PortStats>,
    /// What this handle last wrote to (or read from) `circuits`, per port:
    /// a reconfiguration takes each changed port's last output from here
    /// instead of a system call. Another process's writes since would
    /// leave it stale, which can only drop packets sent just before a move
    /// (the port forwards a packet nowhere but where its ToR aimed it).
    written: Vec<CircuitEntry>,
}

impl std::fmt::Debug for CircuitTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CircuitTable")
            .field("n_ports", &self.n_ports)
            .finish_non_exhaustive()
    }
}

impl CircuitTable {
    fn from_maps(
        n_ports: u32,
        mut take: impl FnMut(&str) -> Result<Map, EbpfError>,
    ) -> Result<CircuitTable, EbpfError> {
        Ok(CircuitTable {
            n_ports,
            mode: Array::try_from(take("mode")?).map_err(err("map mode"))?,
            circuits: Array::try_from(take("circuits")?).map_err(err("map circuits"))?,
            schedule: Array::try_from(take("schedule")?).map_err(err("map schedule"))?,
            slot_ports: Array::try_from(take("slot_ports")?).map_err(err("map slot_ports"))?,
            stats: PerCpuArray::try_from(take("stats")?).map_err(err("map stats"))?,
            // `load` writes every port dark next; `find` reads them back.
            written: vec![DARK; n_ports as usize],
        })
    }

    /// Finds the maps of the program attached to OCS port (0, 0) of
    /// `plan`'s run, listing its filters with `ocs_sock` (a socket in the
    /// run's OCS namespace): how a process other than the owner reaches the
    /// circuits.
    pub fn find(plan: &FabricPlan, ocs_sock: &mut Rtnl) -> Result<CircuitTable, EbpfError> {
        let port = plan.ocs_port_index(0, 0);
        let msgs = ocs_sock
            .dump(
                messages::dump_filters(port),
                "listing the filters of OCS port 0/0",
            )
            .map_err(err("listing the filters of OCS port 0/0"))?;
        let id = msgs
            .iter()
            .find_map(|m| match m {
                netlink_packet_route::RouteNetlinkMessage::NewTrafficFilter(tc) => messages::bpf_prog_id(tc),
                _ => None,
            })
            .ok_or_else(|| EbpfError {
                what: "no BPF program on OCS port 0/0".into(),
                source: "the run's eBPF datapath is not attached".into(),
            })?;
        let prog = aya::programs::loaded_programs()
            .filter_map(Result::ok)
            .find(|p| p.id() == id)
            .ok_or_else(|| EbpfError {
                what: format!("program {id} of OCS port 0/0"),
                source: "not loaded".into(),
            })?;
        let ids = prog
            .map_ids()
            .map_err(err("listing the program's maps"))?
            .unwrap_or_default();
        let mut found = std::collections::BTreeMap::new();
        for id in ids {
            let info = MapInfo::from_id(id).map_err(err(format!("map {id}")))?;
            if let Some(name) = info.name_as_str() {
                found.insert(name.to_string(), id);
            }
        }
        let n_ports = plan.racks() * plan.wavelengths();
        let mut table = CircuitTable::from_maps(n_ports, |name| {
            let id = *found.get(name).ok_or_else(|| EbpfError {
                what: format!("program ocs_port has no map {name}"),
                source: "missing map".into(),
            })?;
            let data = MapData::from_id(id).map_err(err(format!("opening map {name}")))?;
            Ok(match name {
                "stats" => Map::PerCpuArray(data),
                _ => Map::Array(data),
            })
        })?;
        table.written = (0..n_ports).map(|p| table.circuit(p)).collect::<Result<_, _>>()?;
        Ok(table)
    }

    /// Input ports (racks × wavelengths).
    pub fn ports(&self) -> u32 {
        self.n_ports
    }

    fn set_circuit(&mut self, port: u32, e: CircuitEntry) -> Result<(), EbpfError> {
        self.circuits
            .set(port, e, BPF_F_LOCK)
            .map_err(err(format!("writing the circuit of port {port}")))?;
        if let Some(w) = self.written.get_mut(port as usize) {
            *w = e;
        }
        Ok(())
    }

    /// Not-all-stop reconfiguration of the on-demand table: every port in
    /// `changed` goes dark at `at` (`None`, or a time already past: now);
    /// those in `up` (port, output; each also in `changed`) carry packets
    /// from δ after that. Packets their ToRs sent on before `at` still
    /// cross to the circuits the ports had. Returns (dark at, up at).
    ///
    /// A packet read the entry before the write landed or after, and
    /// user space knows only that the write landed between its clock
    /// readings before and after it. So the ports are first written dark
    /// with no `up_at`; once those writes have returned, at `written`, the
    /// ports are dark for certain, and the new circuits get `up_at` = δ
    /// after `at` or `written`, whichever is later: that is the dark-at
    /// returned. No circuit carries a packet before δ of dark has passed,
    /// however long a write is held up, and the old ones carried none
    /// their ToRs sent on after the dark-at returned. The up-at returned
    /// is `up_at`, or the end of the second write if that is later (a δ
    /// shorter than the write): from then on the new circuits are up.
    pub fn reconfigure(
        &mut self,
        changed: &[u32],
        up: &[(u32, u32)],
        at: Option<Nanos>,
        delay: Nanos,
    ) -> Result<(Nanos, Nanos), EbpfError> {
        let now = clock::now();
        let at = at.map_or(now, |at| at.max(now));
        let last: Vec<CircuitEntry> = changed
            .iter()
            .map(|&p| self.written.get(p as usize).copied().unwrap_or(DARK))
            .collect();
        let out_of = |p: u32| up.iter().find(|&&(q, _)| q == p).map(|&(_, out)| out);
        for (&p, l) in changed.iter().zip(&last) {
            let dark = l.moved(now.0, at.0, out_of(p).map(|out| (out, u64::MAX)));
            self.set_circuit(p, dark)?;
        }
        let dark_at = at.max(clock::now());
        let up_at = Nanos(dark_at.0.saturating_add(delay.0));
        for (&p, l) in changed.iter().zip(&last) {
            if let Some(out) = out_of(p) {
                self.set_circuit(p, l.moved(now.0, at.0, Some((out, up_at.0))))?;
            }
        }
        // A δ shorter than the second write: the circuits are up for
        // certain only once it has returned.
        let up_at = if up.is_empty() {
            up_at
        } else {
            up_at.max(clock::now())
        };
        Ok((dark_at, up_at))
    }

    fn circuit(&self, port: u32) -> Result<CircuitEntry, EbpfError> {
        self.circuits
            .get(&port, BPF_F_LOCK)
            .map_err(err(format!("reading the circuit of port {port}")))
    }

    /// The on-demand table: (input port, output port) of every circuit,
    /// up or still dark.
    pub fn circuits(&self) -> Result<Vec<(u32, u32)>, EbpfError> {
        let mut out = Vec::new();
        for p in 0..self.n_ports {
            let e = self.circuit(p)?;
            if e.out != NO_PORT {
                out.push((p, e.out));
            }
        }
        Ok(out)
    }

    /// Whether the programs follow a schedule (else the on-demand table).
    pub fn follows_schedule(&self) -> Result<bool, EbpfError> {
        Ok(self.mode.get(&0, 0).map_err(err("reading the mode"))? == MODE_SCHEDULE)
    }

    /// The schedule the programs follow, if they do: (epoch, period, slots).
    pub fn schedule_summary(&self) -> Result<Option<(Nanos, Nanos, u32)>, EbpfError> {
        if !self.follows_schedule()? {
            return Ok(None);
        }
        let e = self.schedule.get(&0, 0).map_err(err("reading the schedule"))?;
        Ok(Some((Nanos(e.epoch), Nanos(e.period), e.slots)))
    }

    /// Makes the programs follow `schedule` (clears the on-demand table
    /// first: every port is dark until then); returns its epoch, when slot
    /// 0 first begins, which may still be ahead of the clock.
    ///
    /// The programs switch to the schedule when the mode write lands, and
    /// user space knows only that it landed before its clock reading after
    /// the write. So the epoch is put [`SCHEDULE_LEAD`] ahead of a reading
    /// taken just before the last two writes (the schedule, then the mode);
    /// the programs keep every port dark until the epoch, and in the first
    /// period slot 0 sets up every circuit in δ, as [`Schedule::dark`] has
    /// it. If the writes returned after the epoch, the ports stayed dark
    /// into the schedule for an unknown while: the mode goes back to the
    /// on-demand table (every port dark) and the schedule is written again
    /// with a new epoch, up to [`SCHEDULE_ATTEMPTS`] times. The attempts run
    /// under SCHED_FIFO ([`clock::RECONFIG_PRIORITY`]).
    pub fn set_schedule(&mut self, schedule: &Schedule) -> Result<Nanos, EbpfError> {
        self.clear_schedule()?;
        let mut entry = ScheduleEntry {
            epoch: 0,
            period: schedule.period().0,
            slots: schedule.slots().len() as u32,
            // `Schedule::new` keeps δ under 2^32 ns.
            first_dark: schedule.delay().0 as u32,
            start: [0; MAX_SLOTS],
        };
        for (s, slot) in schedule.slots().iter().enumerate() {
            entry.start[s] = schedule.slot_start(s).0;
            for p in 0..self.n_ports {
                let (out, dark) = slot
                    .ports
                    .get(p as usize)
                    .map(|sp| (sp.out.unwrap_or(NO_PORT), sp.dark.0 as u32))
                    .unwrap_or((NO_PORT, 0));
                let key = s as u32 * self.n_ports + p;
                self.slot_ports
                    .set(key, SlotPortEntry { out, dark }, 0)
                    .map_err(err(format!("writing slot {s} port {p}")))?;
            }
        }
        // Above a probe's senders, which may keep a core busy under
        // SCHED_FIFO: a write they held back would cost an attempt.
        let _rt = clock::Realtime::enter(clock::RECONFIG_PRIORITY);
        let mut late = Nanos::ZERO;
        for _ in 0..SCHEDULE_ATTEMPTS {
            let planned = Nanos(clock::now().0 + SCHEDULE_LEAD.0);
            entry.epoch = planned.0;
            self.schedule
                .set(0, entry, 0)
                .map_err(err("writing the schedule"))?;
            self.mode
                .set(0, MODE_SCHEDULE, 0)
                .map_err(err("writing the mode"))?;
            let returned = clock::now();
            if returned <= planned {
                return Ok(planned);
            }
            late = late.max(Nanos(returned.0 - planned.0));
            // A program that read the mode just before this write may
            // still read the schedule while it is written again; only the
            // epoch differs, one aligned word, so it reads one or the other.
            self.mode
                .set(0, MODE_ON_DEMAND, 0)
                .map_err(err("writing the mode"))?;
        }
        Err(EbpfError {
            what: "setting a schedule".into(),
            source: format!(
                "its writes returned after its epoch {SCHEDULE_ATTEMPTS} times (up to {late} late), \
                 {SCHEDULE_LEAD} after the clock reading before them"
            )
            .into(),
        })
    }

    /// Stops following a schedule: every port dark, on-demand table empty.
    pub fn clear_schedule(&mut self) -> Result<(), EbpfError> {
        for p in 0..self.n_ports {
            self.set_circuit(p, DARK)?;
        }
        self.mode
            .set(0, MODE_ON_DEMAND, 0)
            .map_err(err("writing the mode"))
    }

    /// Per input port: packets carried and dropped, summed over CPUs.
    pub fn stats(&self) -> Result<Vec<PortStats>, EbpfError> {
        (0..self.n_ports)
            .map(|p| {
                let per_cpu = self
                    .stats
                    .get(&p, 0)
                    .map_err(err(format!("reading the counters of port {p}")))?;
                Ok(per_cpu.iter().fold(PortStats::default(), |a, s| PortStats {
                    packets: a.packets + s.packets,
                    bytes: a.bytes + s.bytes,
                    dropped: a.dropped + s.dropped,
                }))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(out: u32, prev_out: u32, up_at: u64, down_at: u64) -> CircuitEntry {
        CircuitEntry::new(out, prev_out, up_at, down_at)
    }

    #[test]
    fn a_move_keeps_the_circuit_that_carried_packets_until_the_port_went_dark() {
        // Port reaching output 1 since t = 100; at t = 500 it moves to
        // output 2, up at 1500.
        let up = entry(1, NO_PORT, 100, 0);
        let moved = up.moved(500, 500, Some((2, 1500)));
        assert_eq!(moved, entry(2, 1, 1500, 500));
        assert_eq!(moved.at(499), Some(1), "sent before the move: old circuit");
        assert_eq!(moved.at(500), None, "dark from the move");
        assert_eq!(moved.at(1499), None);
        assert_eq!(moved.at(1500), Some(2), "new circuit from up_at");
        // A port taken down with nothing after it.
        let down = up.moved(500, 500, None);
        assert_eq!(
            (down.at(499), down.at(500), down.at(u64::MAX - 1)),
            (Some(1), None, None)
        );
    }

    #[test]
    fn a_circuit_that_never_came_up_leaves_the_one_before_it() {
        // Moved to output 2 at 510 (up at 1510); moved again at 800, before
        // 2 carried anything: output 1 still stands for packets sent before
        // 510, and the port stays dark until the new up_at.
        let pending = entry(2, 1, 1510, 510);
        assert_eq!(pending.moved(800, 800, Some((3, 1800))), entry(3, 1, 1800, 510));
        // The same written at 800 for 2000 (after 2 would have come up):
        // 2 never does; dark from 510 to 3000.
        let later = pending.moved(800, 2000, Some((3, 3000)));
        assert_eq!(later, entry(3, 1, 3000, 510));
        assert_eq!(
            (later.at(509), later.at(1600), later.at(3000)),
            (Some(1), None, Some(3))
        );
    }

    #[test]
    fn a_move_written_ahead_happens_at_its_time_and_can_be_replaced() {
        // Output 1 since 100; written at 200, a move to 2 at 1000 (up 2000).
        let ahead = entry(1, NO_PORT, 100, 0).moved(200, 1000, Some((2, 2000)));
        assert_eq!(ahead.at(999), Some(1), "the old circuit carries until the move");
        assert_eq!(ahead.at(1000), None);
        assert_eq!(ahead.at(2000), Some(2));
        // Replaced at 600 by a move to 3 at 700 (up 900): output 1 until 700.
        let sooner = ahead.moved(600, 700, Some((3, 900)));
        assert_eq!(sooner, entry(3, 1, 900, 700));
        assert_eq!(sooner.at(2000), Some(3), "the first move never happens");
        // Replaced at 600 by a move at 2500, after the first would have
        // come up: output 1 carries until 2500, 2 never.
        let later = ahead.moved(600, 2500, Some((3, 3500)));
        assert_eq!(
            (later.at(2400), later.at(2500), later.at(3500)),
            (Some(1), None, Some(3))
        );
    }

    /// Random sequences of moves, now or ahead, over a port of four
    /// outputs, against what a port may do: from each write on, it keeps
    /// what it had at the write until the move (its circuit, or dark),
    /// then is dark for at least δ before the new circuit.
    #[test]
    fn no_sequence_of_moves_lets_a_circuit_skip_its_dark_time() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut rand = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for _ in 0..2_000 {
            let mut e = DARK;
            let mut now = 1_000;
            for _ in 0..20 {
                now += rand(300);
                let at = now + if rand(2) == 0 { 0 } else { rand(600) };
                let delay = rand(200);
                let next = (rand(5) > 0).then(|| (rand(4) as u32, at + delay));
                let had = e.at(now);
                let moved = e.moved(now, at, next);
                for t in (now..at + delay + 50).step_by(7) {
                    let got = moved.at(t);
                    let allowed = if t < at {
                        // Dark now stays dark; a circuit now carries on.
                        had.is_none() && got.is_none() || got == had
                    } else if t < at + delay {
                        got.is_none()
                    } else {
                        got == next.map(|(o, _)| o)
                    };
                    assert!(
                        allowed,
                        "{e:?} moved at {now} for {at} to {next:?}: {got:?} at {t}, had {had:?}"
                    );
                }
                // Stamps before the write read as they did, or as the
                // circuit the port had settled on.
                for t in (now.saturating_sub(400)..now).step_by(5) {
                    assert!(
                        moved.at(t) == e.at(t) || had.is_some() && now >= e.up_at && moved.at(t) == had,
                        "{e:?} moved at {now}: stamp {t} read {:?}, was {:?}",
                        moved.at(t),
                        e.at(t)
                    );
                }
                e = moved;
            }
        }
    }

    #[test]
    fn the_entry_is_laid_out_as_the_c_struct() {
        // struct bpf_spin_lock, two u32s and padding, then two u64s.
        assert_eq!(std::mem::size_of::<CircuitEntry>(), 32);
        assert_eq!(std::mem::offset_of!(CircuitEntry, out), 4);
        assert_eq!(std::mem::offset_of!(CircuitEntry, up_at), 16);
    }

    #[test]
    fn the_schedule_is_laid_out_as_the_c_struct() {
        // Two u64s, two u32s (slots, first_dark), then the slot starts.
        assert_eq!(std::mem::offset_of!(ScheduleEntry, first_dark), 20);
        assert_eq!(std::mem::offset_of!(ScheduleEntry, start), 24);
        assert_eq!(std::mem::size_of::<ScheduleEntry>(), 24 + 8 * MAX_SLOTS);
    }

    #[test]
    fn a_stamp_is_the_low_40_bits_of_the_send_time() {
        let t = Nanos(0x12_3456_789a_bcde);
        assert_eq!(stamp_mac(t), [STAMP_MARK, 0x56, 0x78, 0x9a, 0xbc, 0xde]);
        // Locally administered, unicast: never mistaken for a multicast source.
        assert_eq!(STAMP_MARK & 0b11, 0b10);
    }
}
