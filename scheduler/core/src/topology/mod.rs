//! The topology model: a datacenter of racks of hosts, an oversubscribed EPS
//! core and an optical circuit switch (OCS) beside it.
//!
//! Configuration comes in two stages (as in ripgrep): a TOML file parses into
//! [`RawTopology`] (`deny_unknown_fields`, so a typo names the key), which
//! `Topology::from_raw` validates into a [`Topology`] whose rates are
//! already divided by the `scale` factor. Every error is a [`TopologyError`]
//! naming the file, the line, the field, and what would be valid.
//!
//! One design decision: the validated [`Topology`] holds *effective* rates and
//! sizes (nominal ÷ `scale`), so nothing downstream can forget to scale; the
//! nominal values stay in [`Topology::nominal`] for reports.
//!
//! `raw.rs` holds the file's tables as written, `file_error.rs` the errors
//! and the scans of the text that point them at a line and a field, and
//! [`builder`] topologies written in code (tests, examples).

pub mod builder;
mod file_error;
mod raw;

pub use file_error::{locate, unknown_key, FileError};
pub use raw::{CongestionControl, RawAddresses, RawEps, RawOcs, RawTcp, RawTopology};

use crate::addr::{AddressPlan, Ipv4Net};
use crate::optical::schedule::Schedule;
use crate::units::{Bps, Bytes, Nanos};
use file_error::Source;
use raw::{default_scale, default_slots};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::net::IpAddr;
use std::path::Path;

/// How many hosts one box can emulate, and which of its limits binds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HostLimit {
    /// At most this many hosts.
    pub hosts: usize,
    /// The limit that binds, in words with its figures, e.g. "processes:
    /// pid_max 32768, 82 tasks running, 3 per host's agent".
    pub binding: String,
}

/// What a box that would emulate a topology offers: its host limit and
/// the addresses it uses. The emulator reads it from the box
/// (`ocslab_emulator::fabric::capacity`); the core only compares a
/// topology against it ([`Topology::check_emulable`]), so parsing and
/// simulating a topology read nothing of the box.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EmulatingBox {
    /// How many hosts it holds.
    pub limit: HostLimit,
    /// Its own IPv4 and IPv6 addresses, which an emulated range must not
    /// overlap.
    pub addresses: Vec<IpAddr>,
}

/// A validated topology. Rates and sizes are effective (already divided by
/// `scale`); see [`Topology::nominal`] for the values as written.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Topology {
    /// Short name.
    pub name: String,
    /// Number of racks.
    pub racks: u32,
    /// Hosts per rack.
    pub hosts_per_rack: u32,
    /// Task slots per host.
    pub slots_per_host: u32,
    /// The scale factor every rate and size was divided by.
    pub scale: f64,
    /// For simulation only.
    pub simulation_only: bool,
    /// Effective host NIC rate.
    pub host_rate: Bps,
    /// Effective ToR ↔ core rate, each direction; 0 on a fabric of circuits
    /// only ([`RawEps::core`] false).
    pub uplink_rate: Bps,
    /// OCS ports (wavelengths) per rack.
    pub ocs_ports_per_rack: u32,
    /// Effective rate of one OCS port.
    pub ocs_port_rate: Bps,
    /// Reconfiguration delay δ.
    pub reconfig_delay: Nanos,
    /// Effective elephant threshold.
    pub elephant_threshold: Bytes,
    /// The schedule the circuits follow, if any (`[ocs.schedule]`); without
    /// one, circuits are set up on demand by the coflow scheduler.
    pub ocs_schedule: Option<Schedule>,
    /// The address range.
    pub range: Ipv4Net,
    /// The hosts' TCP settings (not scaled).
    pub tcp: RawTcp,
    /// Queues per shaped link, if the file sets them ([`RawEps::flow_queues`]).
    pub flow_queues: Option<u16>,
    /// The file as written (nominal values).
    pub nominal: RawTopology,
}

/// A host, named `r<rack>h<host>` (zero-based).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct HostId {
    /// Rack index.
    pub rack: u32,
    /// Host index within the rack.
    pub host: u32,
}

impl HostId {
    /// The host `host` of rack `rack`.
    pub const fn new(rack: u32, host: u32) -> HostId {
        HostId { rack, host }
    }
}

impl fmt::Display for HostId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "r{}h{}", self.rack, self.host)
    }
}

impl std::str::FromStr for HostId {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("{s:?} is not a host name: expected r<rack>h<host>, e.g. r0h1");
        let rest = s.strip_prefix('r').ok_or_else(bad)?;
        let (r, h) = rest.split_once('h').ok_or_else(bad)?;
        Ok(HostId {
            rack: r.parse().map_err(|_| bad())?,
            host: h.parse().map_err(|_| bad())?,
        })
    }
}

/// A topology file's validation error.
pub type TopologyError = FileError;

impl Topology {
    /// Reads and validates a topology file.
    pub fn load(path: &Path) -> Result<Topology, TopologyError> {
        let text = std::fs::read_to_string(path).map_err(|e| TopologyError {
            file: path.to_path_buf(),
            line: None,
            field: String::new(),
            message: format!("cannot read: {e}"),
        })?;
        Topology::parse(&text, path)
    }

    /// Parses and validates TOML `text` (named `file` in errors).
    pub fn parse(text: &str, file: &Path) -> Result<Topology, TopologyError> {
        let src = Source { file, text };
        let raw: RawTopology = toml::from_str(text).map_err(|e| FileError::from_toml(file, text, &e))?;
        Topology::from_raw(raw, &src)
    }

    /// This topology with its `scale` multiplied by `factor`: every rate
    /// and size divided by `factor` more, times kept (e.g. to fit a trace
    /// to the box). Validated as the file would be, errors naming `file`.
    pub fn scaled_by(&self, factor: f64, file: &Path) -> Result<Topology, TopologyError> {
        let src = Source { file, text: "" };
        if !(factor.is_finite() && factor >= 1.0) {
            return Err(src.error(
                "scale",
                format!("the extra scale must be a number >= 1 (got {factor:?})"),
            ));
        }
        let mut raw = self.nominal.clone();
        raw.scale *= factor;
        Topology::from_raw(raw, &src)
    }

    /// Validates a parsed file.
    fn from_raw(raw: RawTopology, src: &Source<'_>) -> Result<Topology, TopologyError> {
        if raw.name.trim().is_empty()
            || !raw
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(src.error(
                "name",
                format!("{:?} must be non-empty letters, digits, '-' or '_'", raw.name),
            ));
        }
        if raw.racks == 0 {
            return Err(src.error("racks", "must be at least 1 (got 0)"));
        }
        if raw.hosts_per_rack == 0 {
            return Err(src.error("hosts_per_rack", "must be at least 1 (got 0)"));
        }
        if raw.slots_per_host == 0 {
            return Err(src.error("slots_per_host", "must be at least 1 (got 0)"));
        }
        if !(raw.scale.is_finite() && raw.scale >= 1.0) {
            return Err(src.error(
                "scale",
                format!(
                    "must be a number >= 1 (got {:?}); it divides every rate and size",
                    raw.scale
                ),
            ));
        }
        let s = raw.scale;
        if raw.eps.host_rate.0 == 0 {
            return Err(src.error("eps.host_rate", "must be more than 0, e.g. \"10Gbit/s\""));
        }
        let uplink_nominal = match (raw.eps.uplink_rate, raw.eps.oversubscription) {
            (rate, over) if !raw.eps.core => {
                if rate.is_some() || over.is_some() {
                    let field = if rate.is_some() {
                        "eps.uplink_rate"
                    } else {
                        "eps.oversubscription"
                    };
                    return Err(src.error(
                        field,
                        "a fabric without an EPS core (`core = false`) has no uplinks: remove it",
                    ));
                }
                if raw.ocs.ports_per_rack == 0 && raw.racks > 1 {
                    return Err(src.error(
                        "ocs.ports_per_rack",
                        "must be at least 1 when `eps.core = false`: circuits are the only way between racks",
                    ));
                }
                if raw.ocs.elephant_threshold.0 > 0 {
                    return Err(src.error(
                        "ocs.elephant_threshold",
                        "must be \"0B\" when `eps.core = false`: every flow between racks needs a circuit",
                    ));
                }
                Bps(0)
            }
            (Some(_), Some(_)) => {
                return Err(src.error(
                    "eps.oversubscription",
                    "give either `uplink_rate` or `oversubscription`, not both",
                ));
            }
            (None, None) => {
                return Err(src.error(
                    "eps",
                    "needs `uplink_rate` (e.g. \"1Gbit/s\") or `oversubscription` (e.g. 10.0)",
                ));
            }
            (Some(r), None) if r.0 == 0 => return Err(src.error("eps.uplink_rate", "must be more than 0")),
            (Some(r), None) => r,
            (None, Some(o)) if !(o.is_finite() && o > 0.0) => {
                return Err(src.error(
                    "eps.oversubscription",
                    format!("must be a number > 0 (got {o}); 1 is non-blocking, 10 is 10:1"),
                ));
            }
            (None, Some(o)) => {
                Bps((raw.eps.host_rate.0 as f64 * raw.hosts_per_rack as f64 / o).round() as u64)
            }
        };
        if raw.ocs.ports_per_rack > 0 && raw.ocs.port_rate.0 == 0 {
            return Err(src.error("ocs.port_rate", "must be more than 0 when ports_per_rack > 0"));
        }
        let host_rate = raw.eps.host_rate.scaled_down(s);
        let uplink_rate = uplink_nominal.scaled_down(s);
        let ocs_port_rate = raw.ocs.port_rate.scaled_down(s);
        for (field, nominal, rate) in [
            ("eps.host_rate", raw.eps.host_rate, host_rate),
            ("eps.uplink_rate", uplink_nominal, uplink_rate),
            ("ocs.port_rate", raw.ocs.port_rate, ocs_port_rate),
        ] {
            if nominal.0 > 0 && rate.0 == 0 {
                return Err(src.error(
                    field,
                    format!("{nominal} is 0bit/s after dividing by scale {s}: lower `scale`"),
                ));
            }
            if rate.0 > 0 && rate.0 < 8_000 && !raw.simulation_only {
                return Err(src.error(field, format!("is {rate} after dividing by scale {s}: below 8kbit/s cannot be shaped; lower `scale`")));
            }
        }
        let range: Ipv4Net = raw
            .addresses
            .range
            .parse()
            .map_err(|e: String| src.error("addresses.range", e))?;
        AddressPlan::new(range, raw.racks, raw.hosts_per_rack, raw.ocs.ports_per_rack)
            .map_err(|e| src.error("addresses.range", e.to_string()))?;
        let tcp = &raw.tcp;
        if !(Nanos(1_000)..=Nanos::from_millis(120_000)).contains(&tcp.min_rto) {
            return Err(src.error(
                "tcp.min_rto",
                format!(
                    "must be from 1us to 120s (got {}); Linux uses 200ms, datacenters a few ms",
                    tcp.min_rto
                ),
            ));
        }
        if !(1..=1000).contains(&tcp.initcwnd) {
            return Err(src.error(
                "tcp.initcwnd",
                format!(
                    "must be from 1 to 1000 segments (got {}); Linux uses 10",
                    tcp.initcwnd
                ),
            ));
        }
        if !(1..=127).contains(&tcp.syn_retries) {
            return Err(src.error(
                "tcp.syn_retries",
                format!("must be from 1 to 127 (got {}); Linux uses 6", tcp.syn_retries),
            ));
        }
        if let Some(q) = raw.eps.flow_queues {
            if !(q.is_power_of_two() && q <= 256) {
                return Err(src.error(
                    "eps.flow_queues",
                    format!("must be a power of two from 1 to 256 (got {q}); 1 is a single FIFO"),
                ));
            }
        }
        let ocs_schedule = match &raw.ocs.schedule {
            None => None,
            Some(_) if raw.ocs.ports_per_rack == 0 => {
                return Err(src.error(
                    "ocs.schedule",
                    "a schedule needs OCS ports: set `ocs.ports_per_rack` to 1 or more",
                ))
            }
            Some(rs) => Some(
                Schedule::from_raw(rs, raw.racks, raw.ocs.ports_per_rack, raw.ocs.reconfig_delay)
                    .map_err(|e| src.error(&format!("ocs.schedule.{}", e.field()), e.to_string()))?,
            ),
        };
        Ok(Topology {
            name: raw.name.clone(),
            racks: raw.racks,
            hosts_per_rack: raw.hosts_per_rack,
            slots_per_host: raw.slots_per_host,
            scale: s,
            simulation_only: raw.simulation_only,
            host_rate,
            uplink_rate,
            ocs_ports_per_rack: raw.ocs.ports_per_rack,
            ocs_port_rate,
            reconfig_delay: raw.ocs.reconfig_delay,
            elephant_threshold: raw.ocs.elephant_threshold.scaled_down(s),
            ocs_schedule,
            range,
            tcp: raw.tcp.clone(),
            flow_queues: raw.eps.flow_queues,
            nominal: raw,
        })
    }

    /// Checks that this topology can be built as a kernel fabric on
    /// `the_box`: no more hosts than it holds, and a range that none of its
    /// addresses falls in. The error says why not and what to do instead.
    pub fn check_emulable(&self, file: &Path, the_box: &EmulatingBox) -> Result<(), TopologyError> {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let err = |field: &str, message: String| TopologyError {
            file: file.to_path_buf(),
            line: locate(&text, field),
            field: field.to_string(),
            message,
        };
        if self.simulation_only {
            return Err(err(
                "simulation_only",
                "this topology is marked for simulation only; use `ocslab sim`".into(),
            ));
        }
        if !self.nominal.eps.core {
            return Err(err(
                "eps.core",
                "a fabric of circuits only is simulated, not emulated: circuits are one-way and TCP needs a path back for its ACKs; use `ocslab sim` or `ocslab replay` without --emulate".into(),
            ));
        }
        if let Some(a) = the_box.addresses.iter().find(|a| match a {
            IpAddr::V4(v4) => self.range.contains(*v4),
            IpAddr::V6(_) => false,
        }) {
            return Err(err(
                "addresses.range",
                format!(
                    "{} overlaps {a}, an address of this box; choose a range the box does not use (default 198.18.0.0/15)",
                    self.range
                ),
            ));
        }
        if self.hosts() > the_box.limit.hosts {
            return Err(err(
                "racks",
                format!(
                    "{} racks x {} hosts = {} hosts is more than this box can emulate (at most {}, bound by {}); use `ocslab sim` or fewer racks",
                    self.racks,
                    self.hosts_per_rack,
                    self.hosts(),
                    the_box.limit.hosts,
                    the_box.limit.binding
                ),
            ));
        }
        Ok(())
    }

    /// Number of hosts.
    pub fn hosts(&self) -> usize {
        self.racks as usize * self.hosts_per_rack as usize
    }

    /// Every host, rack by rack.
    pub fn host_ids(&self) -> impl Iterator<Item = HostId> + '_ {
        (0..self.racks).flat_map(move |r| (0..self.hosts_per_rack).map(move |h| HostId::new(r, h)))
    }

    /// A host's flat index (rack-major).
    pub fn host_index(&self, h: HostId) -> usize {
        h.rack as usize * self.hosts_per_rack as usize + h.host as usize
    }

    /// Whether `h` names a host of this topology.
    pub fn contains(&self, h: HostId) -> bool {
        h.rack < self.racks && h.host < self.hosts_per_rack
    }

    /// Oversubscription of the ToR uplink (hosts' aggregate rate ÷ uplink);
    /// infinite on a fabric without an EPS core.
    pub fn oversubscription(&self) -> f64 {
        self.host_rate.0 as f64 * self.hosts_per_rack as f64 / self.uplink_rate.0 as f64
    }

    /// The address plan of this topology.
    pub fn address_plan(&self) -> AddressPlan {
        AddressPlan::new(
            self.range,
            self.racks,
            self.hosts_per_rack,
            self.ocs_ports_per_rack,
        )
        .expect("validated at load")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TINY: &str = r#"
name = "tiny"
racks = 2
hosts_per_rack = 2
slots_per_host = 2
scale = 10

[eps]
host_rate = "1Gbit/s"
oversubscription = 5.0

[ocs]
ports_per_rack = 1
port_rate = "1Gbit/s"
reconfig_delay = "1ms"
elephant_threshold = "10MB"
"#;

    fn parse(text: &str) -> Result<Topology, TopologyError> {
        Topology::parse(text, Path::new("t.toml"))
    }

    #[test]
    fn an_ocs_schedule_is_read_with_the_topologys_delay_and_round_trips() {
        let text = format!(
            "{TINY}\n[ocs.schedule]\nslot = \"50us\"\n[[ocs.schedule.slots]]\ncircuits = [\"0:1\", \"1:0\"]\n"
        );
        let t = parse(&text).unwrap();
        let s = t.ocs_schedule.as_ref().expect("a schedule");
        assert_eq!(s.period(), Nanos(50_000));
        assert_eq!(s.delay(), Nanos::from_millis(1), "the topology's reconfig_delay");
        assert_eq!(s.slots()[0].circuits.len(), 2);
        // The nominal file, as a results folder keeps it, reads back alike.
        let again = toml::to_string(&t.nominal).unwrap();
        assert_eq!(parse(&again).unwrap().ocs_schedule, t.ocs_schedule);
    }

    #[test]
    fn a_bad_ocs_schedule_names_its_field() {
        let bad = |schedule: &str| parse(&format!("{TINY}\n[ocs.schedule]\n{schedule}")).unwrap_err();
        let e = bad("slot = \"50us\"\n[[ocs.schedule.slots]]\ncircuits = [\"0:2\"]\n");
        assert_eq!(e.field, "ocs.schedule.slots[0].circuits");
        assert!(e.message.contains("rack 2 does not exist"), "{e}");
        let e = bad("slot = \"500ns\"\n[[ocs.schedule.slots]]\ncircuits = [\"0:1\"]\n[[ocs.schedule.slots]]\ncircuits = [\"1:0\"]\n");
        assert_eq!(e.field, "ocs.schedule.slots[0].length");
        assert!(e.message.contains("not longer than δ"), "{e}");
        let e = bad("slot = \"soon\"\n[[ocs.schedule.slots]]\ncircuits = []\n");
        assert_eq!(e.field, "ocs.schedule.slot");
        let no_ocs = TINY.replace("ports_per_rack = 1", "ports_per_rack = 0");
        let e = parse(&format!(
            "{no_ocs}\n[ocs.schedule]\nslot = \"50us\"\n[[ocs.schedule.slots]]\ncircuits = []\n"
        ))
        .unwrap_err();
        assert_eq!(e.field, "ocs.schedule");
    }

    #[test]
    fn scale_divides_rates_and_sizes_but_not_times() {
        let t = parse(TINY).unwrap();
        assert_eq!(t.host_rate, Bps(100_000_000));
        assert_eq!(t.uplink_rate, Bps(40_000_000)); // 2 × 1G / 5 / 10
        assert_eq!(t.elephant_threshold, Bytes(1_000_000));
        assert_eq!(t.reconfig_delay, Nanos::from_millis(1));
        assert!((t.oversubscription() - 5.0).abs() < 1e-9);
        assert_eq!(t.hosts(), 4);
    }

    #[test]
    fn a_fabric_without_a_core_joins_racks_by_circuits_only() {
        let ocs_only = TINY
            .replace("oversubscription = 5.0", "core = false")
            .replace("\"10MB\"", "\"0B\"");
        let t = parse(&ocs_only).unwrap();
        assert_eq!(t.uplink_rate, Bps(0));
        let e = t.check_emulable(Path::new("t.toml"), &box_of_1024()).unwrap_err();
        assert_eq!(e.field, "eps.core");
        assert!(e.message.contains("ocslab sim"), "{e}");
        // What it needs, each named.
        let e =
            parse(&ocs_only.replace("core = false", "core = false\nuplink_rate = \"1Gbit/s\"")).unwrap_err();
        assert_eq!((e.field.as_str(), e.line), ("eps.uplink_rate", Some(11)));
        let e = parse(&TINY.replace("oversubscription = 5.0", "core = false")).unwrap_err();
        assert_eq!(e.field, "ocs.elephant_threshold");
        assert!(e.message.contains("0B"), "{e}");
        let e = parse(&ocs_only.replace("ports_per_rack = 1", "ports_per_rack = 0")).unwrap_err();
        assert_eq!(e.field, "ocs.ports_per_rack");
    }

    #[test]
    fn scaled_by_divides_rates_and_sizes_once_more() {
        let t = parse(TINY).unwrap();
        let s = t.scaled_by(4.0, Path::new("t.toml")).unwrap();
        assert_eq!(s.scale, 40.0);
        assert_eq!(s.host_rate, Bps(25_000_000));
        assert_eq!(s.elephant_threshold, Bytes(250_000));
        assert_eq!(s.reconfig_delay, t.reconfig_delay);
        let e = t.scaled_by(0.5, Path::new("t.toml")).unwrap_err();
        assert_eq!(e.field, "scale");
        let e = t.scaled_by(1e6, Path::new("t.toml")).unwrap_err();
        assert!(e.message.contains("8kbit/s"), "{e}");
        // A scale so large a rate becomes 0 is refused even for simulation,
        // where 0 would read as "no such link".
        let e = parse(&TINY.replace("scale = 10", "scale = 1e308\nsimulation_only = true")).unwrap_err();
        assert_eq!(e.field, "eps.host_rate");
        assert!(e.message.contains("0bit/s after dividing by scale"), "{e}");
    }

    #[test]
    fn tcp_settings_default_to_linux_and_are_checked() {
        let t = parse(TINY).unwrap();
        assert_eq!(t.tcp, RawTcp::default());
        assert_eq!(t.tcp.min_rto, Nanos::from_millis(200));
        let dc = format!("{TINY}\n[tcp]\nmin_rto = \"5ms\"\ncongestion_control = \"bbr\"\n");
        let t = parse(&dc).unwrap();
        assert_eq!(t.tcp.min_rto, Nanos::from_millis(5));
        assert_eq!(t.tcp.congestion_control, CongestionControl::Bbr);
        assert_eq!(
            (t.tcp.initcwnd, t.tcp.syn_retries),
            (10, 6),
            "the others keep Linux's"
        );
        let e = parse(&format!("{TINY}\n[tcp]\nmin_rto = \"0ms\"\n")).unwrap_err();
        assert_eq!(e.field, "tcp.min_rto");
        assert!(e.message.contains("1us to 120s"), "{e}");
        let e = parse(&format!("{TINY}\n[tcp]\ninitcwnd = 0\n")).unwrap_err();
        assert_eq!(e.field, "tcp.initcwnd");
        let e = parse(&format!("{TINY}\n[tcp]\nsyn_retries = 200\n")).unwrap_err();
        assert_eq!(e.field, "tcp.syn_retries");
        let e = parse(&format!("{TINY}\n[tcp]\ncongestion_control = \"dctcp\"\n")).unwrap_err();
        assert!(e.message.contains("dctcp"), "{e}");
    }

    #[test]
    fn flow_queues_are_a_power_of_two_up_to_256_named_with_their_line() {
        assert_eq!(parse(TINY).unwrap().flow_queues, None);
        let with = |q: &str| {
            TINY.replace(
                "oversubscription = 5.0",
                &format!("oversubscription = 5.0\nflow_queues = {q}"),
            )
        };
        assert_eq!(parse(&with("64")).unwrap().flow_queues, Some(64));
        assert_eq!(parse(&with("1")).unwrap().flow_queues, Some(1));
        for bad in ["0", "48", "512"] {
            let e = parse(&with(bad)).unwrap_err();
            assert_eq!(
                (e.field.as_str(), e.line),
                ("eps.flow_queues", Some(11)),
                "{bad}: {e}"
            );
            assert!(e.message.contains("power of two"), "{e}");
        }
    }

    #[test]
    fn a_scale_below_one_is_printed_as_written_not_in_300_digits() {
        for (bad, shown) in [
            ("0", "0.0"),
            ("-1.5", "-1.5"),
            ("1e-300", "1e-300"),
            ("nan", "NaN"),
        ] {
            let e = parse(&TINY.replace("scale = 10", &format!("scale = {bad}"))).unwrap_err();
            assert_eq!((e.field.as_str(), e.line), ("scale", Some(6)), "{bad}: {e}");
            assert!(e.message.contains(&format!("(got {shown})")), "{bad}: {e}");
        }
    }

    #[test]
    fn zero_racks_names_line_and_field() {
        let e = parse(&TINY.replace("racks = 2", "racks = 0")).unwrap_err();
        assert_eq!(e.field, "racks");
        assert_eq!(e.line, Some(3));
        assert!(e.to_string().starts_with("t.toml:3: field `racks`"), "{e}");
    }

    #[test]
    fn a_rate_of_fast_names_line_and_field() {
        let e = parse(&TINY.replace("\"1Gbit/s\"\noversub", "\"fast\"\noversub")).unwrap_err();
        assert_eq!(e.field, "eps.host_rate");
        assert_eq!(e.line, Some(9));
        assert!(e.message.contains("10Gbit/s"), "{e}");
    }

    #[test]
    fn a_missing_field_is_named_under_its_table() {
        let e = parse(&TINY.replace("port_rate = \"1Gbit/s\"\n", "")).unwrap_err();
        assert_eq!((e.field.as_str(), e.line), ("ocs.port_rate", Some(12)), "{e}");
        let e = parse(&TINY.replace("racks = 2\n", "")).unwrap_err();
        assert_eq!(e.field, "racks");
        assert!(e.to_string().contains("field `racks`: missing"), "{e}");
        // A header's comment is not part of the table's name.
        let commented = TINY.replace("[ocs]\nports_per_rack = 1\n", "[ocs] # circuits\n");
        let e = parse(&commented).unwrap_err();
        assert_eq!(
            (e.field.as_str(), e.line),
            ("ocs.ports_per_rack", Some(12)),
            "{e}"
        );
    }

    #[test]
    fn a_rate_of_the_wrong_type_says_what_it_found() {
        let with =
            |rate: &str| parse(&TINY.replace("port_rate = \"1Gbit/s\"", &format!("port_rate = {rate}")));
        let e = with("true").unwrap_err();
        assert_eq!(e.field, "ocs.port_rate");
        assert!(
            e.message.contains("boolean") && e.message.contains("a rate as a string"),
            "{e}"
        );
        // A bare number is in the base unit; a negative one is refused.
        assert_eq!(
            with("1000000000").unwrap().nominal.ocs.port_rate,
            Bps(1_000_000_000)
        );
        let e = with("-1").unwrap_err();
        assert_eq!(e.field, "ocs.port_rate");
        assert!(e.message.contains("-1"), "{e}");
    }

    #[test]
    fn unknown_key_is_refused() {
        let e = parse(&TINY.replace("racks = 2", "racks = 2\nrackz = 3")).unwrap_err();
        assert_eq!(e.line, Some(4));
        assert!(e.message.contains("rackz"), "{e}");
    }

    #[test]
    fn range_overlapping_the_box_is_refused_for_emulation_only() {
        let t = parse(TINY).expect("a simulation reads nothing of the box");
        let mut the_box = box_of_1024();
        the_box.addresses = vec!["10.1.2.3".parse().unwrap(), "198.18.3.7".parse().unwrap()];
        let e = t.check_emulable(Path::new("t.toml"), &the_box).unwrap_err();
        assert_eq!(e.field, "addresses.range");
        assert!(e.message.contains("198.18.3.7"), "{e}");
        the_box.addresses.pop();
        assert!(t.check_emulable(Path::new("t.toml"), &the_box).is_ok());
        let e = parse(&format!("{TINY}\n[addresses]\nrange = \"10.0.0.0/33\"\n")).unwrap_err();
        assert_eq!(e.field, "addresses.range");
        assert_eq!(e.line, Some(19));
    }

    /// A box that holds 1,024 hosts, bound by its memory, with only a
    /// loopback address.
    fn box_of_1024() -> EmulatingBox {
        EmulatingBox {
            limit: HostLimit {
                hosts: 1024,
                binding: "memory: 1.4 GB available".into(),
            },
            addresses: vec!["127.0.0.1".parse().unwrap()],
        }
    }

    #[test]
    fn too_large_to_emulate() {
        let t = parse(
            &TINY
                .replace("racks = 2", "racks = 128")
                .replace("hosts_per_rack = 2", "hosts_per_rack = 10"),
        )
        .unwrap();
        let e = t.check_emulable(Path::new("t.toml"), &box_of_1024()).unwrap_err();
        assert_eq!(e.field, "racks");
        assert!(
            e.message.contains("1280 hosts")
                && e.message.contains("at most 1024")
                && e.message.contains("memory: 1.4 GB"),
            "{e}"
        );
        let at_cap = TINY
            .replace("racks = 2", "racks = 128")
            .replace("hosts_per_rack = 2", "hosts_per_rack = 8");
        assert!(parse(&at_cap)
            .unwrap()
            .check_emulable(Path::new("t.toml"), &box_of_1024())
            .is_ok());
        assert!(parse(TINY)
            .unwrap()
            .check_emulable(Path::new("t.toml"), &box_of_1024())
            .is_ok());
    }

    #[test]
    fn host_names_round_trip() {
        let h: HostId = "r3h12".parse().unwrap();
        assert_eq!(h, HostId::new(3, 12));
        assert_eq!(h.to_string(), "r3h12");
        assert!("h3r1".parse::<HostId>().is_err());
    }
}
