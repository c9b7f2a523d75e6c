//! [`circuit_goodput`]: one marked TCP stream through one circuit.

use super::{circuit, up, CpuLoad};
use crate::fabric::bench::{need_root, BenchError};
use crate::fabric::{plan, probe, Datapath};
use crate::HostId;
use serde::Serialize;
use std::time::Duration;

/// What [`circuit_goodput`] measured.
#[derive(Clone, Debug, Serialize)]
pub struct GoodputFigure {
    /// The datapath.
    pub datapath: Datapath,
    /// Whether every core was kept busy meanwhile.
    pub load: bool,
    /// TCP goodput, Gbit/s.
    pub gbit_s: f64,
    /// Share of the stream's bytes the circuit carried (the rest took EPS).
    pub over_circuit: f64,
}

/// One marked TCP stream from rack 0 to rack 1 through a circuit (links of
/// 100 Gbit/s: the box is the limit), 2 s after 0.5 s of warm-up. Needs root.
pub fn circuit_goodput(datapath: Datapath, load: bool) -> Result<GoodputFigure, BenchError> {
    need_root()?;
    let f = up(2, datapath, false)?;
    f.ocs()?.set_matching(&[circuit(0, 1)])?;
    let busy = CpuLoad::start(load);
    let c0 = f.counters()?;
    let g = probe::tcp_goodput(
        &f,
        HostId::new(0, 0),
        HostId::new(1, 0),
        Some(plan::OCS_TOS),
        Duration::from_millis(500),
        Duration::from_secs(2),
    )?;
    let c1 = f.counters()?;
    drop(busy);
    f.down()?;
    let ocs = (c1.ocs_bytes() - c0.ocs_bytes()) as f64;
    let eps = (c1.eps_uplink_bytes() - c0.eps_uplink_bytes()) as f64;
    Ok(GoodputFigure {
        datapath,
        load,
        gbit_s: g / 1e9,
        over_circuit: ocs / (ocs + eps).max(1.0),
    })
}
