//! [`FabricParams`]: the fixed parameters of a fabric that the network model
//! and the coflow policies read (effective values: the topology's rates and
//! sizes divided by its `scale`).

use crate::model::coflow::FlowSpec;
use crate::{Bps, Bytes, Nanos, Topology};
use serde::Serialize;

/// The fabric's fixed parameters (effective values, already divided by the topology's `scale`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct FabricParams {
    /// Number of racks.
    pub racks: u32,
    /// Hosts per rack.
    pub hosts_per_rack: u32,
    /// Host NIC rate, each direction.
    pub host_rate: Bps,
    /// ToR ↔ core rate, each direction.
    pub uplink_rate: Bps,
    /// OCS ports (wavelengths, W) per rack; 0 means no OCS.
    pub ocs_ports: u32,
    /// Rate of one circuit.
    pub ocs_port_rate: Bps,
    /// Reconfiguration delay δ: how long both ports of a new circuit stay dark.
    pub reconfig_delay: Nanos,
    /// Flows smaller than this always use EPS.
    pub elephant_threshold: Bytes,
    /// The topology's scale factor (rates and sizes here are already divided
    /// by it); policies with byte thresholds of their own (Aalo's queues)
    /// divide them by it too.
    pub scale: f64,
}

impl From<&Topology> for FabricParams {
    fn from(t: &Topology) -> FabricParams {
        FabricParams {
            racks: t.racks,
            hosts_per_rack: t.hosts_per_rack,
            host_rate: t.host_rate,
            uplink_rate: t.uplink_rate,
            ocs_ports: t.ocs_ports_per_rack,
            ocs_port_rate: t.ocs_port_rate,
            reconfig_delay: t.reconfig_delay,
            elephant_threshold: t.elephant_threshold,
            scale: t.scale,
        }
    }
}

impl FabricParams {
    /// Whether `flow` may use a circuit, given `pair_bytes`: the bytes its
    /// coflow has between the flow's source and destination racks (all its
    /// flows of that rack pair known so far, this one included). It must
    /// cross racks on a fabric with an OCS, and the rack pair's aggregate
    /// must reach the elephant threshold: Co-scheduler (Li & Shen, Sec.
    /// III-A) batches a coflow's traffic per rack pair, as c-Through does,
    /// so many ~100 MB shuffle flows of one pair make one elephant.
    /// `NetView::may_use_ocs` looks the aggregate up.
    pub fn may_use_ocs(&self, flow: &FlowSpec, pair_bytes: Bytes) -> bool {
        self.ocs_ports > 0
            && self.ocs_port_rate.0 > 0
            && flow.src.rack != flow.dst.rack
            && pair_bytes.max(flow.bytes) >= self.elephant_threshold
    }
}
