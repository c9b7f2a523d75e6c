//! [`FastMap`]: a `HashMap` with a fixed, fast hash for the small integer
//! keys of the simulator's per-flow bookkeeping (flow ids, host pairs,
//! bundle keys). The hash is FxHash's (the rustc compiler's: rotate, xor,
//! multiply per word), not DoS-resistant, which these keys do not need:
//! they come from the engine or a trace, never from the network.
//!
//! A `FastMap` is for lookups only: nothing may iterate one where the order
//! could reach a decision or an output (style.md: BTreeMap where order
//! reaches a decision). Its hash is fixed, so even a stray iteration is
//! deterministic from run to run.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A `HashMap` hashed by [`FxHasher`], for lookups by small integer keys.
pub(crate) type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

/// FxHash: per word, `hash = (hash.rotate_left(5) ^ word) * K`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct FxHasher {
    hash: u64,
}

const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(K);
    }
}

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(c);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word));
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    fn write_u16(&mut self, i: u16) {
        self.add(u64::from(i));
    }
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    fn finish(&self) -> u64 {
        self.hash
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_map_finds_what_it_holds_and_nothing_else() {
        let mut m: FastMap<(u64, u32, u32), usize> = FastMap::default();
        for i in 0..10_000u64 {
            m.insert((i, (i % 7) as u32, (i % 11) as u32), i as usize);
        }
        assert_eq!(m.len(), 10_000);
        assert_eq!(m.get(&(4321, 4321 % 7, 4321 % 11)), Some(&4321));
        assert_eq!(m.get(&(4321, 0, 0)), None);
    }

    #[test]
    fn byte_writes_hash_every_byte() {
        let hash = |b: &[u8]| {
            let mut h = FxHasher::default();
            h.write(b);
            h.finish()
        };
        assert_ne!(
            hash(&[1, 2, 3, 4, 5, 6, 7, 8, 9]),
            hash(&[1, 2, 3, 4, 5, 6, 7, 8, 10])
        );
        assert_ne!(hash(&[1]), hash(&[2]));
    }
}
