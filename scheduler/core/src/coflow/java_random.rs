//! Java's `java.util.Random`: the 48-bit linear congruential generator its
//! Javadoc specifies (Knuth, TAOCP vol. 2, Sec. 3.2.1), for a reading that
//! must draw what a Java reference simulator draws. CoflowSim gives each
//! coflow a deadline multiplier from `new Random(17)`
//! (`Simulator.mergeTasksByRack`), and its SEBF hands out spare bandwidth
//! by those deadlines (`sebf`, [`crate::coflow::varys`]).

/// `java.util.Random`, seeded as `new Random(seed)`.
#[derive(Clone, Debug)]
pub struct JavaRandom {
    seed: u64,
}

const MULTIPLIER: u64 = 0x5_DEEC_E66D;
const ADDEND: u64 = 0xB;
const MASK: u64 = (1 << 48) - 1;

impl JavaRandom {
    /// The generator `new Random(seed)` makes.
    pub fn new(seed: i64) -> JavaRandom {
        JavaRandom {
            seed: (seed as u64 ^ MULTIPLIER) & MASK,
        }
    }

    /// `next(bits)`: the next state's top `bits` bits.
    fn next(&mut self, bits: u32) -> u64 {
        self.seed = self.seed.wrapping_mul(MULTIPLIER).wrapping_add(ADDEND) & MASK;
        self.seed >> (48 - bits)
    }

    /// `nextDouble()`: uniform in [0, 1), 53 bits from two draws.
    pub fn next_double(&mut self) -> f64 {
        let high = self.next(26);
        let low = self.next(27);
        ((high << 27) + low) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `new Random(17)` and `new Random(42)` give under OpenJDK 17
    /// (`System.out.println(r.nextDouble())`).
    #[test]
    fn draws_what_java_draws() {
        let mut r = JavaRandom::new(17);
        let got: Vec<f64> = (0..3).map(|_| r.next_double()).collect();
        assert_eq!(got, [0.7323115139597316, 0.6973704783607497, 0.08295611145017068]);
        assert_eq!(JavaRandom::new(42).next_double(), 0.7275636800328681);
    }
}
