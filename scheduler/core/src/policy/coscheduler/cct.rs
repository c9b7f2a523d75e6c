//! The CCT lower bound T(C) of a rack-level coflow on the OCS, as Co-scheduler
//! uses it to cost a reduce placement: Li & Shen, ToN 2022, Sec. II-C, eqs. 1-2,
//! and its wavelength-selective-switch (WSS) form, Sec. VI, eq. 15.
//!
//! This is a small private stand-in for `coflow/lower_bound.rs` (branch `net`),
//! written so the Co-scheduler components could be built and tested before the
//! network landed; it computes the same formulas over the rack-level matrix
//! that the reduce guideline builds.
//!
//! Eq. 1: `t_ij = C_ij / BW_OCS + δ` if `C_ij > 0`, else 0. Eq. 2: `T(C) =
//! max(max_i Σ_j t_ij, max_j Σ_i t_ij)`. Eq. 15 divides both sums by W, the
//! wavelengths a rack can switch at once (W = 1 gives eq. 2 back). A diagonal
//! entry (`i == j`) never crosses the network and costs nothing.

use crate::{Bps, Bytes, Nanos};
use std::collections::BTreeMap;

/// The OCS as the Co-scheduler guidelines see it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OcsParams {
    /// Rate of one OCS port (one wavelength), `BW_OCS`.
    pub port_rate: Bps,
    /// Reconfiguration delay δ of one circuit.
    pub reconfig_delay: Nanos,
    /// Wavelengths (OCS ports) per rack, W of eq. 15; 1 is the plain OCS of eq. 2.
    pub wavelengths: u32,
    /// Elephant threshold `T_e`: only rack-to-rack transfers of at least this size use the OCS.
    pub elephant_threshold: Bytes,
}

/// Eq. 1: the least time to move `bytes` over one circuit, δ included; zero for an empty entry.
pub fn circuit_time(bytes: Bytes, ocs: &OcsParams) -> Nanos {
    if bytes.0 == 0 {
        return Nanos::ZERO;
    }
    ocs.port_rate.time_to_send(bytes).unwrap_or(Nanos(u64::MAX)) + ocs.reconfig_delay
}

/// Eqs. 2 and 15: T(C) of the rack-level matrix `matrix[(src rack, dst rack)] = bytes`.
pub fn lower_bound(matrix: &BTreeMap<(u32, u32), Bytes>, ocs: &OcsParams) -> Nanos {
    let mut out: BTreeMap<u32, u128> = BTreeMap::new();
    let mut inn: BTreeMap<u32, u128> = BTreeMap::new();
    for (&(src, dst), &bytes) in matrix {
        if src == dst {
            continue;
        }
        let t = circuit_time(bytes, ocs).0 as u128;
        *out.entry(src).or_default() += t;
        *inn.entry(dst).or_default() += t;
    }
    let worst = out.values().chain(inn.values()).copied().max().unwrap_or(0);
    let w = u128::from(ocs.wavelengths.max(1));
    Nanos((worst.div_ceil(w)).min(u128::from(u64::MAX)) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit_ocs(w: u32) -> OcsParams {
        // 8 bit/s: one byte per second, so bytes read as seconds; δ = 1 ms.
        OcsParams {
            port_rate: Bps(8),
            reconfig_delay: Nanos::from_millis(1),
            wavelengths: w,
            elephant_threshold: Bytes(1),
        }
    }

    #[test]
    fn t_of_c_is_the_busiest_port_and_wss_divides_it() {
        // Rack 0 sends 3 B to rack 1 and 2 B to rack 2; rack 2 sends 4 B to rack 1.
        // Row sums: r0 = 3 + 2 + 2δ, r2 = 4 + δ. Column sums: r1 = 3 + 4 + 2δ, r2 = 2 + δ.
        let m: BTreeMap<(u32, u32), Bytes> = [
            ((0, 1), Bytes(3)),
            ((0, 2), Bytes(2)),
            ((2, 1), Bytes(4)),
            ((1, 1), Bytes(100)),
        ]
        .into();
        assert_eq!(lower_bound(&m, &unit_ocs(1)), Nanos(7_000_000_000 + 2_000_000));
        assert_eq!(lower_bound(&m, &unit_ocs(2)), Nanos(3_500_000_000 + 1_000_000));
        assert_eq!(lower_bound(&BTreeMap::new(), &unit_ocs(1)), Nanos::ZERO);
    }
}
