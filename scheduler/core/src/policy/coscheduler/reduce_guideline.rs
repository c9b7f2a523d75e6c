//! Co-scheduler's reduce task guideline: Li & Shen, ToN 2022, Sec. IV-E.2.
//!
//! After a job's last map, the map output per map rack `{SM_1 ≤ … ≤ SM_Rmap}`
//! is known. Racks with `SM_i < T_e` are disregarded (their flows cannot use
//! the OCS whatever the placement). Every `R_red` in `[1, floor(SM_1 / T_e)]`
//! (eq. 11; for a recurring job, the feasible zone of eq. 8) is a possible
//! schedule `[R_red, D, CCT]`: `D` places the reduces in two steps — first each
//! of the `R_red` racks gets reduces until `SM_1`'s share to it reaches `T_e`,
//! then the rest go one by one to the rack receiving the least data — and CCT
//! is T(C) (eqs. 1, 2, 15) of the resulting rack-level shuffle.
//!
//! Decisions where the paper is silent (tested below):
//! - A reduce receives the same share `1 / n_red` of every map rack's output
//!   (hash partitioning; the traces give only totals), so the flow from map
//!   rack i to a reduce rack holding `d` reduces is `SM_i · d / n_red`.
//! - An `R_red` whose first step needs more reduces than the job has
//!   (`R_red · ceil(T_e · n_red / SM_1) > n_red`) is not a possible schedule.
//! - The CCT assumes the reduce racks are not map racks (ExploreSchedule picks
//!   them later); a reduce on a map rack only shortens the real shuffle.
//! - For a recurring job the zone's range is intersected with eq. 11's, and
//!   eq. 11's range is used if they do not meet ("Co-scheduler can adjust the
//!   range … to accommodate the estimation variances").

use super::cct::{lower_bound, OcsParams};
use crate::{Bytes, Nanos};
use std::collections::BTreeMap;
use std::ops::RangeInclusive;

/// One possible schedule `[R_red, D, CCT]` of a job's reduces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PossibleSchedule {
    /// Racks to run the reduces on.
    pub r_red: u32,
    /// `D`: reduces per rack, in descending order; sums to the job's reduce count.
    pub placement: Vec<u32>,
    /// T(C) of the shuffle with this placement.
    pub cct: Nanos,
}

/// The map racks whose output can use the OCS (`SM_i ≥ T_e`), in ascending order of output.
pub fn considered_map_racks(map_output: &BTreeMap<u32, Bytes>, te: Bytes) -> Vec<(u32, Bytes)> {
    let mut v: Vec<(u32, Bytes)> = map_output
        .iter()
        .filter(|(_, b)| b.0 >= te.0 && b.0 > 0)
        .map(|(r, b)| (*r, *b))
        .collect();
    v.sort_by_key(|&(rack, bytes)| (bytes, rack));
    v
}

/// Eq. 11's upper bound `floor(SM_1 / T_e)` (0 when no map rack reaches `T_e`).
pub fn r_red_upper_bound(considered: &[(u32, Bytes)], te: Bytes) -> u32 {
    match considered.first() {
        Some(&(_, sm1)) if te.0 > 0 => (sm1.0 / te.0).min(u64::from(u32::MAX)) as u32,
        _ => 0,
    }
}

/// `D` for `r_red` racks (see the module doc), or `None` when `r_red` cannot make `SM_1`'s flows elephants.
pub fn place_reduces(r_red: u32, reduces: u32, sm1: Bytes, te: Bytes) -> Option<Vec<u32>> {
    if r_red == 0 || sm1.0 == 0 || r_red > reduces {
        return None;
    }
    // Step 1: SM_1 · d / n_red >= T_e  <=>  d >= T_e · n_red / SM_1.
    let first = (u128::from(te.0) * u128::from(reduces))
        .div_ceil(u128::from(sm1.0))
        .max(1);
    let first = u32::try_from(first).ok()?;
    let placed = u64::from(first) * u64::from(r_red);
    if placed > u64::from(reduces) {
        return None;
    }
    let mut d = vec![first; r_red as usize];
    // Step 2: each remaining reduce to the rack receiving the least data (= fewest reduces; lowest index on ties).
    for _ in placed..u64::from(reduces) {
        let (i, _) = d.iter().enumerate().min_by_key(|&(i, &x)| (x, i))?;
        d[i] += 1;
    }
    d.sort_unstable_by(|a, b| b.cmp(a));
    Some(d)
}

/// T(C) of the shuffle from the considered map racks to reduce racks holding `placement`.
pub fn placement_cct(considered: &[(u32, Bytes)], placement: &[u32], reduces: u32, ocs: &OcsParams) -> Nanos {
    let mut m = BTreeMap::new();
    // Reduce racks are not chosen yet: give them ids past any real rack.
    for (j, &d) in placement.iter().enumerate() {
        let dst = u32::MAX - j as u32;
        for &(src, sm) in considered {
            let bytes = u128::from(sm.0) * u128::from(d) / u128::from(reduces.max(1));
            m.insert((src, dst), Bytes(bytes as u64));
        }
    }
    lower_bound(&m, ocs)
}

/// All possible schedules of a job's `reduces` reduce tasks given its map output per rack.
/// `zone` is the recurring job's `R_red` range from the latency model, `None` for a non-recurring job.
pub fn possible_schedules(
    map_output: &BTreeMap<u32, Bytes>,
    reduces: u32,
    zone: Option<RangeInclusive<u32>>,
    racks: u32,
    ocs: &OcsParams,
) -> Vec<PossibleSchedule> {
    let te = ocs.elephant_threshold;
    let considered = considered_map_racks(map_output, te);
    let Some(&(_, sm1)) = considered.first() else {
        return Vec::new();
    };
    let alpha = r_red_upper_bound(&considered, te).min(reduces).min(racks);
    if alpha == 0 {
        return Vec::new();
    }
    let range = match zone {
        Some(z) if (*z.start()).max(1) <= (*z.end()).min(alpha) => {
            (*z.start()).max(1)..=(*z.end()).min(alpha)
        }
        _ => 1..=alpha,
    };
    range
        .filter_map(|r_red| {
            let placement = place_reduces(r_red, reduces, sm1, te)?;
            let cct = placement_cct(&considered, &placement, reduces, ocs);
            Some(PossibleSchedule {
                r_red,
                placement,
                cct,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Bps;

    /// 1 GB/s circuits, δ = 10 ms, T_e = 1 GB.
    fn ocs() -> OcsParams {
        OcsParams {
            port_rate: Bps(8_000_000_000),
            reconfig_delay: Nanos::from_millis(10),
            wavelengths: 1,
            elephant_threshold: Bytes(1_000_000_000),
        }
    }
    const GB: u64 = 1_000_000_000;

    #[test]
    fn possible_reduce_schedules_of_a_hand_made_map_output() {
        // Map output per rack: 4 GB on rack 3, 6 GB on rack 7, and 0.5 GB on rack 9 (below T_e:
        // disregarded). 10 reduces. SM_1 = 4 GB, so R_red in [1, 4].
        let out: BTreeMap<u32, Bytes> = [(3, Bytes(4 * GB)), (7, Bytes(6 * GB)), (9, Bytes(GB / 2))].into();
        let s = possible_schedules(&out, 10, None, 60, &ocs());
        let got: Vec<(u32, Vec<u32>)> = s.iter().map(|p| (p.r_red, p.placement.clone())).collect();
        // Step 1 gives every rack ceil(1 GB · 10 / 4 GB) = 3 reduces; R_red = 4 would need 12 > 10.
        assert_eq!(got, vec![(1, vec![10]), (2, vec![5, 5]), (3, vec![4, 3, 3])]);
        // CCT by hand (eqs. 1-2): the busiest port.
        // R_red = 1: the reduce rack receives 4 + 6 GB over two circuits: 10 s + 2δ.
        assert_eq!(s[0].cct, Nanos(10 * GB + 20_000_000));
        // R_red = 2: each reduce rack receives 2 + 3 GB (5 s + 2δ); rack 7 sends 3 + 3 GB (6 s + 2δ).
        assert_eq!(s[1].cct, Nanos(6 * GB + 20_000_000));
        // R_red = 3: rack 7 sends 6·(4+3+3)/10 = 6 GB over three circuits: 6 s + 3δ.
        assert_eq!(s[2].cct, Nanos(6 * GB + 30_000_000));
        // Every flow of every schedule is an elephant: SM_1 · min(D) / n_red >= T_e.
        for p in &s {
            let min_d = *p.placement.last().expect("non-empty");
            assert!(4 * GB * u64::from(min_d) / 10 >= GB);
            assert_eq!(p.placement.iter().sum::<u32>(), 10);
        }
    }

    #[test]
    fn no_schedule_without_an_elephant_and_zone_narrows_the_range() {
        let small: BTreeMap<u32, Bytes> = [(0, Bytes(GB / 2)), (1, Bytes(GB / 3))].into();
        assert!(possible_schedules(&small, 4, None, 60, &ocs()).is_empty());
        let out: BTreeMap<u32, Bytes> = [(0, Bytes(8 * GB)), (1, Bytes(8 * GB))].into();
        let s = possible_schedules(&out, 8, Some(2..=3), 60, &ocs());
        assert_eq!(s.iter().map(|p| p.r_red).collect::<Vec<_>>(), vec![2, 3]);
        // A zone past eq. 11's bound falls back to eq. 11's range.
        let s = possible_schedules(&out, 8, Some(12..=15), 60, &ocs());
        assert_eq!(s.len(), 8);
        // Never more reduce racks than reduces or racks.
        assert_eq!(possible_schedules(&out, 3, None, 60, &ocs()).len(), 3);
        assert_eq!(possible_schedules(&out, 8, None, 2, &ocs()).len(), 2);
    }
}
