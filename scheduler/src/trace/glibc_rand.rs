//! glibc's `srand`/`rand` (the default `TYPE_3` additive feedback
//! generator, degree 31, separation 3), so that a trace read the way
//! Sunflow's simulator reads it (C++, `srand`/`rand` on Linux) gets the very
//! same perturbed flow sizes.
//!
//! The recurrence, as glibc's `random_r.c` runs it: `r[0] = seed` (1 if 0),
//! `r[i] = 16807 · r[i−1] mod (2^31 − 1)` for `i < 31`, `r[i] = r[i−31]`
//! for `31 ≤ i < 34`, then `r[i] = r[i−31] + r[i−3]` (mod 2^32); the k-th
//! `rand()` is `r[k + 344] >> 1`.

/// `RAND_MAX` of glibc.
pub const RAND_MAX: u32 = 2_147_483_647;

/// The state of glibc's `rand()` after `srand(seed)`.
#[derive(Clone, Debug)]
pub struct GlibcRand {
    ring: [u32; 34],
    next: usize,
}

impl GlibcRand {
    /// The generator as `srand(seed)` leaves it.
    pub fn new(seed: u32) -> GlibcRand {
        let mut r = [0u32; 34];
        r[0] = if seed == 0 { 1 } else { seed };
        for i in 1..31 {
            // 16807 · r[i−1] mod (2^31 − 1), by Schrage's method as glibc does.
            let word = r[i - 1] as i32 as i64;
            let (hi, lo) = (word / 127_773, word % 127_773);
            let mut w = 16_807 * lo - 2_836 * hi;
            if w < 0 {
                w += 2_147_483_647;
            }
            r[i] = w as u32;
        }
        for i in 31..34 {
            r[i] = r[i - 31];
        }
        let mut g = GlibcRand { ring: r, next: 34 };
        for _ in 34..344 {
            g.step();
        }
        g
    }

    /// The next `r[i]` of the recurrence.
    fn step(&mut self) -> u32 {
        let i = self.next;
        let v = self.ring[(i - 31) % 34].wrapping_add(self.ring[(i - 3) % 34]);
        self.ring[i % 34] = v;
        self.next += 1;
        v
    }

    /// The next `rand()`: from 0 to [`RAND_MAX`].
    pub fn rand(&mut self) -> u32 {
        self.step() >> 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// glibc's own outputs (a C program calling `srand`/`rand`, glibc 2.x).
    #[test]
    fn matches_glibc() {
        let mut g = GlibcRand::new(1);
        assert_eq!(
            [g.rand(), g.rand(), g.rand()],
            [1_804_289_383, 846_930_886, 1_681_692_777]
        );
        let mut g = GlibcRand::new(13);
        assert_eq!([g.rand(), g.rand()], [1_358_590_890, 733_184_381]);
        let mut g = GlibcRand::new(1_853_753_682);
        let four = [g.rand(), g.rand(), g.rand(), g.rand()];
        assert_eq!(four, [738_225_914, 86_249_279, 1_657_052_319, 2_045_609_277]);
    }
}
