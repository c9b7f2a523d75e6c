//! [`TopologyBuilder`]: a topology written in code, as Mininet's `Topo`, for
//! tests and examples. It fills the same [`RawTopology`] a file parses into,
//! with the file format's defaults, and validates it the same way, so a
//! topology built in code and one read from a file cannot differ in meaning.

use super::{RawAddresses, RawEps, RawOcs, RawTcp, RawTopology, Source, Topology, TopologyError};
use crate::optical::schedule::RawSchedule;
use crate::{Bps, Bytes, Nanos};
use std::path::PathBuf;

/// A topology being written in code; [`TopologyBuilder::build`] validates it.
///
/// ```
/// use ocslab_core::{Bps, Bytes, Nanos, Topology};
/// let t = Topology::builder("two-racks", 2, 4)
///     .host_rate(Bps(10_000_000_000))
///     .oversubscription(4.0)
///     .ocs(1, Bps(100_000_000_000), Nanos::from_millis(10), Bytes(10_000_000))
///     .scale(100.0)
///     .build()
///     .unwrap();
/// assert_eq!(t.uplink_rate, Bps(100_000_000)); // 4 × 10 Gbit/s ÷ 4, then ÷ 100
/// ```
#[derive(Clone, Debug)]
pub struct TopologyBuilder {
    raw: RawTopology,
}

impl Topology {
    /// A topology of `racks` racks of `hosts_per_rack` hosts, built in code:
    /// by default 1 Gbit/s NICs, a non-blocking core, no OCS, the file
    /// format's defaults otherwise.
    pub fn builder(name: &str, racks: u32, hosts_per_rack: u32) -> TopologyBuilder {
        TopologyBuilder {
            raw: RawTopology {
                name: name.to_string(),
                racks,
                hosts_per_rack,
                slots_per_host: super::default_slots(),
                scale: super::default_scale(),
                simulation_only: false,
                eps: RawEps {
                    host_rate: Bps(1_000_000_000),
                    uplink_rate: None,
                    oversubscription: Some(1.0),
                    core: true,
                    flow_queues: None,
                },
                ocs: RawOcs {
                    ports_per_rack: 0,
                    port_rate: Bps(0),
                    reconfig_delay: Nanos::ZERO,
                    elephant_threshold: Bytes(0),
                    schedule: None,
                },
                addresses: RawAddresses::default(),
                tcp: RawTcp::default(),
            },
        }
    }
}

impl TopologyBuilder {
    /// The hosts' TCP settings.
    pub fn tcp(mut self, tcp: RawTcp) -> Self {
        self.raw.tcp = tcp;
        self
    }
    /// Queues per shaped link in emulation ([`RawEps::flow_queues`]).
    pub fn flow_queues(mut self, queues: u16) -> Self {
        self.raw.eps.flow_queues = Some(queues);
        self
    }
    /// Task slots on each host.
    pub fn slots_per_host(mut self, slots: u32) -> Self {
        self.raw.slots_per_host = slots;
        self
    }
    /// Divide every rate and size by `scale`.
    pub fn scale(mut self, scale: f64) -> Self {
        self.raw.scale = scale;
        self
    }
    /// For the simulator only (too large for one box).
    pub fn simulation_only(mut self) -> Self {
        self.raw.simulation_only = true;
        self
    }
    /// Host NIC rate, each direction (nominal).
    pub fn host_rate(mut self, rate: Bps) -> Self {
        self.raw.eps.host_rate = rate;
        self
    }
    /// ToR ↔ core rate, each direction (nominal), instead of an oversubscription.
    pub fn uplink_rate(mut self, rate: Bps) -> Self {
        self.raw.eps.uplink_rate = Some(rate);
        self.raw.eps.oversubscription = None;
        self
    }
    /// hosts_per_rack × host_rate ÷ uplink rate (1 = non-blocking), instead
    /// of an uplink rate.
    pub fn oversubscription(mut self, ratio: f64) -> Self {
        self.raw.eps.oversubscription = Some(ratio);
        self.raw.eps.uplink_rate = None;
        self
    }
    /// No EPS core: racks are joined only by OCS circuits (give an OCS with
    /// an elephant threshold of 0 too).
    pub fn without_core(mut self) -> Self {
        self.raw.eps.core = false;
        self.raw.eps.uplink_rate = None;
        self.raw.eps.oversubscription = None;
        self
    }
    /// An OCS with `ports_per_rack` ports (wavelengths) per rack of
    /// `port_rate` each, reconfiguration delay `reconfig_delay`, and circuits
    /// for flows of at least `elephant_threshold` (all nominal).
    pub fn ocs(
        mut self,
        ports_per_rack: u32,
        port_rate: Bps,
        reconfig_delay: Nanos,
        elephant_threshold: Bytes,
    ) -> Self {
        self.raw.ocs = RawOcs {
            ports_per_rack,
            port_rate,
            reconfig_delay,
            elephant_threshold,
            schedule: self.raw.ocs.schedule.take(),
        };
        self
    }
    /// A time-flow schedule the circuits follow (`[ocs.schedule]`), set
    /// after [`TopologyBuilder::ocs`].
    pub fn schedule(mut self, schedule: RawSchedule) -> Self {
        self.raw.ocs.schedule = Some(schedule);
        self
    }
    /// The IPv4 range of the emulated datacenter (default `198.18.0.0/15`).
    pub fn address_range(mut self, range: &str) -> Self {
        self.raw.addresses.range = range.to_string();
        self
    }

    /// Validates the topology as a file's would be. Errors name the field,
    /// and the file as `<topology NAME built in code>`.
    pub fn build(self) -> Result<Topology, TopologyError> {
        let file = PathBuf::from(format!("<topology {} built in code>", self.raw.name));
        let src = Source {
            file: &file,
            text: "",
        };
        Topology::from_raw(self.raw, &src)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn a_built_topology_equals_the_same_file() {
        let text = "name = \"t\"\nracks = 3\nhosts_per_rack = 2\nslots_per_host = 2\nscale = 10\n\
                    [eps]\nhost_rate = \"1Gbit/s\"\nuplink_rate = \"500Mbit/s\"\n\
                    [ocs]\nports_per_rack = 2\nport_rate = \"2Gbit/s\"\nreconfig_delay = \"1ms\"\nelephant_threshold = \"10MB\"\n";
        let from_file = Topology::parse(text, Path::new("t.toml")).unwrap();
        let built = Topology::builder("t", 3, 2)
            .slots_per_host(2)
            .scale(10.0)
            .uplink_rate(Bps(500_000_000))
            .ocs(2, Bps(2_000_000_000), Nanos::from_millis(1), Bytes(10_000_000))
            .build()
            .unwrap();
        assert_eq!(built, from_file);
    }

    #[test]
    fn a_built_topology_is_validated_like_a_file() {
        let e = Topology::builder("t", 0, 2).build().unwrap_err();
        assert_eq!(e.field, "racks", "{e}");
        assert!(e.file.to_string_lossy().contains("built in code"), "{e}");
        let e = Topology::builder("t", 2, 2)
            .oversubscription(0.0)
            .build()
            .unwrap_err();
        assert!(e.field.contains("oversubscription"), "{e}");
    }
}
