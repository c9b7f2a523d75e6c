//! [`call_latency`]: how long a reconfiguration call spends changing the
//! kernel.

use super::{circuit, pct, up, us, CpuLoad, WARMUP_ROUNDS};
use crate::fabric::bench::{histogram, need_root, record, BenchError};
use crate::fabric::Datapath;
use crate::Nanos;
use serde::Serialize;

/// What [`call_latency`] measured.
#[derive(Clone, Debug, Serialize)]
pub struct CallFigures {
    /// The datapath.
    pub datapath: Datapath,
    /// Whether every core was kept busy meanwhile.
    pub load: bool,
    /// Calls measured.
    pub calls: u32,
    /// Time spent changing the kernel, p50 / p99 / max, µs.
    pub call_us: [f64; 3],
}

/// Moves one circuit of rack 0 between racks 1 and 2 `calls` times with
/// δ = 0 and records how long each call spent changing the kernel
/// ([`Reconfiguration::call`](crate::fabric::Reconfiguration::call)). Needs root.
pub fn call_latency(datapath: Datapath, load: bool, calls: u32) -> Result<CallFigures, BenchError> {
    need_root()?;
    let f = up(3, datapath, false)?;
    let ocs = f.ocs()?;
    let busy = CpuLoad::start(load);
    let mut h = histogram()?;
    for k in 0..calls + WARMUP_ROUNDS {
        let rec = ocs.set_matching_with_delay(&[circuit(0, 1 + k % 2)], Nanos(0))?;
        if k >= WARMUP_ROUNDS {
            record(&mut h, rec.call.0.max(1))?;
        }
    }
    drop(busy);
    f.down()?;
    Ok(CallFigures {
        datapath,
        load,
        calls,
        call_us: [pct(&h, 0.5), pct(&h, 0.99), us(h.max())],
    })
}
