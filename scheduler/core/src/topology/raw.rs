//! A topology file as written ([`RawTopology`] and its tables): what serde
//! reads, before [`super::Topology::from_raw`] validates it.

use crate::optical::schedule::RawSchedule;
use crate::units::{Bps, Bytes, Nanos};
use serde::{Deserialize, Serialize};

/// A topology file as written (before validation). Rates and sizes are
/// nominal, i.e. as in the paper being reproduced.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RawTopology {
    /// A short name, used in reports and in results folder names.
    pub name: String,
    /// Number of racks (ToR switches).
    pub racks: u32,
    /// Hosts in each rack.
    pub hosts_per_rack: u32,
    /// Task slots (containers) on each host.
    #[serde(default = "default_slots")]
    pub slots_per_host: u32,
    /// Every rate and byte size is divided by this factor (times are
    /// preserved while the box moves fewer bytes). Default 1.
    #[serde(default = "default_scale")]
    pub scale: f64,
    /// When true, the topology is for `ocslab sim` only (too large for one box).
    #[serde(default)]
    pub simulation_only: bool,
    /// The electrical packet-switched fabric.
    pub eps: RawEps,
    /// The optical circuit switch.
    pub ocs: RawOcs,
    /// Addresses given to the emulated datacenter.
    #[serde(default)]
    pub addresses: RawAddresses,
    /// The hosts' TCP (emulation only; the simulator's flows are fluid).
    #[serde(default)]
    pub tcp: RawTcp,
}

/// The `[tcp]` table: how every emulated host's TCP behaves. The defaults
/// are Linux's; datacenters run a minimum RTO of a few milliseconds.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RawTcp {
    /// The least retransmission timeout (sysctl `net.ipv4.tcp_rto_min_us`
    /// in each host's namespace). Linux: 200 ms.
    pub min_rto: Nanos,
    /// Initial congestion window, in segments (the `initcwnd` metric of
    /// every host route). Linux: 10.
    pub initcwnd: u32,
    /// Congestion control (`net.ipv4.tcp_congestion_control`): `cubic`,
    /// `reno` or `bbr`. Linux: cubic.
    pub congestion_control: CongestionControl,
    /// How often a SYN is sent again before `connect` fails
    /// (`net.ipv4.tcp_syn_retries`). Linux: 6.
    pub syn_retries: u32,
}

impl Default for RawTcp {
    fn default() -> Self {
        RawTcp {
            min_rto: Nanos::from_millis(200),
            initcwnd: 10,
            congestion_control: CongestionControl::Cubic,
            syn_retries: 6,
        }
    }
}

/// A TCP congestion control this kernel has (`tcp_available_congestion_control`).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum CongestionControl {
    /// CUBIC (Linux's default).
    Cubic,
    /// NewReno.
    Reno,
    /// BBR.
    Bbr,
}

impl CongestionControl {
    /// The kernel's name for it.
    pub fn name(self) -> &'static str {
        match self {
            CongestionControl::Cubic => "cubic",
            CongestionControl::Reno => "reno",
            CongestionControl::Bbr => "bbr",
        }
    }
}

/// The `[eps]` table.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RawEps {
    /// Host NIC rate (host ↔ ToR, each direction).
    pub host_rate: Bps,
    /// ToR → core uplink rate (and core → ToR downlink). Give this or
    /// `oversubscription`, not both.
    #[serde(default)]
    pub uplink_rate: Option<Bps>,
    /// hosts_per_rack × host_rate ÷ uplink_rate; 1 means non-blocking.
    #[serde(default)]
    pub oversubscription: Option<f64>,
    /// Whether an EPS core joins the racks (default true). `false` makes a
    /// fabric of circuits only, as Sunflow's: hosts reach their ToR, and
    /// racks reach each other only over OCS circuits (give neither
    /// `uplink_rate` nor `oversubscription`, and an elephant threshold of 0).
    #[serde(default = "default_core")]
    pub core: bool,
    /// Emulation only: how many queues share each shaped link's data, a
    /// packet's queue picked by a hash of its source port, so that the
    /// flows of a link share it fairly, as the fluid model assumes. A
    /// power of two from 1 (one FIFO) to 256. Default: as many as a
    /// budget of 8,192 over the whole fabric allows (see docs/fabric.md).
    #[serde(default)]
    pub flow_queues: Option<u16>,
}

/// The `[ocs]` table.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RawOcs {
    /// OCS ports (wavelengths, W) per rack. 0 means no OCS.
    pub ports_per_rack: u32,
    /// Rate of one OCS port (one circuit).
    pub port_rate: Bps,
    /// Reconfiguration delay δ: how long a port whose circuit changes stays dark.
    pub reconfig_delay: Nanos,
    /// Flows at least this large may use circuits (elephants); smaller ones use EPS.
    pub elephant_threshold: Bytes,
    /// A time-flow schedule the circuits follow instead of being set up on
    /// demand (rotor switching): `[ocs.schedule]`, in the format of
    /// [`RawSchedule`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<RawSchedule>,
}

/// The `[addresses]` table.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RawAddresses {
    /// IPv4 range of the whole emulated datacenter; must not overlap any
    /// address of the box itself. Default `198.18.0.0/15` (RFC 2544).
    #[serde(default = "default_range")]
    pub range: String,
}

impl Default for RawAddresses {
    fn default() -> Self {
        RawAddresses {
            range: default_range(),
        }
    }
}

fn default_core() -> bool {
    true
}
pub(super) fn default_slots() -> u32 {
    4
}
pub(super) fn default_scale() -> f64 {
    1.0
}
fn default_range() -> String {
    "198.18.0.0/15".to_string()
}
