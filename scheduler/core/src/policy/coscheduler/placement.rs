//! Co-scheduler's data placement guideline generator: Li & Shen, ToN 2022,
//! Sec. IV-D, and the map task guideline of Sec. IV-E.1.
//!
//! - Non-recurring job (IV-D.1): `R_data = R_map = floor(sqrt(Input·SIR / T_e))`
//!   (eq. 7), with the shuffle/input ratio SIR starting at 1.0 and updated as the
//!   job's maps finish ([`SirEstimate`]).
//! - Recurring job (IV-D.2): the smallest `R_map` of the feasible zone of the
//!   improved latency response model ([`super::latency`]).
//! - Input placement (IV-D.3): three disjoint random sets of `R_data` racks, the
//!   k-th replica of the blocks spread evenly over the k-th set ([`ReplicaSets`]).
//!
//! Decisions where the paper is silent (each tested below):
//! - `R_data` is at least 1 (eq. 7 gives 0 for `Input·SIR < T_e`), at most the
//!   number of blocks, and at most `floor(R / 3)` so the three sets can be
//!   disjoint; on a cluster of fewer than three racks the sets share racks.
//! - Block `b`'s k-th replica goes to rack `set_k[b mod R_data]` ("evenly").
//! - The SIR update changes only the job's shuffle-heavy estimate (used by
//!   Alg. 2), not `R_map`: the input is already placed on `R_data` racks and
//!   eq. 3 keeps `R_map = R_data`.

use crate::Bytes;
use rand::seq::SliceRandom;
use rand::Rng;
use thiserror::Error;

/// Why a placement could not be made.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PlacementError {
    /// The cluster has no racks.
    #[error("cannot place input data on a cluster with no racks")]
    NoRacks,
}

/// Eq. 7 for a non-recurring job, before clamping: `floor(sqrt(Input·SIR / T_e))`.
pub fn r_data_non_recurring(input: Bytes, sir: f64, te: Bytes) -> u32 {
    if te.0 == 0 || !(sir.is_finite()) || sir <= 0.0 {
        return 0;
    }
    let x = input.0 as f64 * sir / te.0 as f64;
    let mut r = x.sqrt().floor() as u64;
    // Guard the float against an off-by-one at perfect squares.
    while (r + 1) as f64 * (r + 1) as f64 <= x {
        r += 1;
    }
    while r > 0 && (r as f64 * r as f64) > x {
        r -= 1;
    }
    r.min(u64::from(u32::MAX)) as u32
}

/// Clamps a rack count to `[1, min(blocks, max(1, racks / 3))]` (see the module doc).
pub fn clamp_r_data(r: u32, racks: u32, blocks: u32) -> u32 {
    let cap = (racks / 3).max(1).min(blocks.max(1));
    r.clamp(1, cap)
}

/// The job's shuffle/input ratio, 1.0 until its first map finishes, then the
/// ratio of map output to map input over its finished maps (Sec. IV-D.1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SirEstimate {
    input_done: Bytes,
    output_done: Bytes,
}

impl SirEstimate {
    /// The initial ratio, as in ShuffleWatcher.
    pub const INITIAL: f64 = 1.0;

    /// Records a finished map that read `input` and wrote `output`.
    pub fn record_map(&mut self, input: Bytes, output: Bytes) {
        self.input_done += input;
        self.output_done += output;
    }

    /// The current ratio.
    pub fn sir(&self) -> f64 {
        if self.input_done.0 == 0 {
            Self::INITIAL
        } else {
            self.output_done.0 as f64 / self.input_done.0 as f64
        }
    }

    /// Whether `input · SIR` reaches the elephant threshold (the job is shuffle-heavy, Sec. II-B).
    pub fn shuffle_heavy(&self, input: Bytes, te: Bytes) -> bool {
        input.0 as f64 * self.sir() >= te.0 as f64
    }
}

/// Three replica rack sets of one job's input (Sec. IV-D.3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplicaSets {
    /// `sets[k]` holds the k-th replica of the blocks; each has `R_data` racks.
    pub sets: [Vec<u32>; 3],
}

impl ReplicaSets {
    /// Draws three random sets of `r_data` racks out of `racks`, disjoint when `3·r_data <= racks`.
    pub fn choose<R: Rng + ?Sized>(
        r_data: u32,
        racks: u32,
        rng: &mut R,
    ) -> Result<ReplicaSets, PlacementError> {
        if racks == 0 {
            return Err(PlacementError::NoRacks);
        }
        let r = r_data.clamp(1, racks) as usize;
        let mut perm: Vec<u32> = (0..racks).collect();
        perm.shuffle(rng);
        let n = perm.len();
        let set = |k: usize| (0..r).map(|i| perm[(k * r + i) % n]).collect::<Vec<u32>>();
        Ok(ReplicaSets {
            sets: [set(0), set(1), set(2)],
        })
    }

    /// `R_data`.
    pub fn r_data(&self) -> u32 {
        self.sets[0].len() as u32
    }

    /// The racks of the three replicas of block `block`.
    pub fn block_racks(&self, block: u32) -> [u32; 3] {
        let i = block as usize % self.sets[0].len().max(1);
        [self.sets[0][i], self.sets[1][i], self.sets[2][i]]
    }

    /// All `3·R_data` racks that hold some of the input.
    pub fn all_racks(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self.sets.iter().flatten().copied().collect();
        v.sort_unstable();
        v.dedup();
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    const TE: Bytes = Bytes(1_125_000_000);

    #[test]
    fn r_data_is_the_floor_of_the_square_root() {
        // 100 GB, SIR 1: sqrt(88.9) = 9.43 -> 9.
        assert_eq!(r_data_non_recurring(Bytes(100_000_000_000), 1.0, TE), 9);
        // Exactly 16 · T_e: sqrt(16) = 4, not 3 by float error.
        assert_eq!(r_data_non_recurring(Bytes(16 * 1_125_000_000), 1.0, TE), 4);
        // SIR halves the shuffle: 8 · T_e -> 2.
        assert_eq!(r_data_non_recurring(Bytes(16 * 1_125_000_000), 0.5, TE), 2);
        // Below the threshold eq. 7 gives 0; the clamp makes it one rack.
        assert_eq!(r_data_non_recurring(Bytes(1_000_000_000), 1.0, TE), 0);
        assert_eq!(clamp_r_data(0, 60, 10), 1);
        // 30 TB would want 163 racks: three disjoint sets of 60 racks allow 20, and 5 blocks allow 5.
        assert_eq!(
            clamp_r_data(r_data_non_recurring(Bytes(30_000_000_000_000), 1.0, TE), 60, 1000),
            20
        );
        assert_eq!(clamp_r_data(163, 60, 5), 5);
    }

    #[test]
    fn sir_starts_at_one_and_follows_finished_maps() {
        let mut s = SirEstimate::default();
        assert_eq!(s.sir(), 1.0);
        assert!(s.shuffle_heavy(Bytes(2_000_000_000), TE));
        s.record_map(Bytes(256_000_000), Bytes(64_000_000));
        assert_eq!(s.sir(), 0.25);
        assert!(!s.shuffle_heavy(Bytes(2_000_000_000), TE));
    }

    #[test]
    fn three_replica_sets_are_disjoint_and_blocks_spread_evenly() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let p = ReplicaSets::choose(4, 60, &mut rng).expect("racks");
        assert_eq!(p.r_data(), 4);
        assert_eq!(p.all_racks().len(), 12, "3 · R_data distinct racks");
        // 8 blocks: each rack of each set holds exactly 2 of them.
        for set in &p.sets {
            for rack in set {
                let held = (0..8).filter(|&b| p.block_racks(b).contains(rack)).count();
                assert_eq!(held, 2);
            }
        }
        // Every block has its three replicas on three different racks.
        assert!((0..8).all(|b| {
            let r = p.block_racks(b);
            r[0] != r[1] && r[1] != r[2] && r[0] != r[2]
        }));
        assert_eq!(ReplicaSets::choose(1, 0, &mut rng), Err(PlacementError::NoRacks));
    }
}
