//! [`FastMap`]: a `HashMap` with a fixed, fast hash for the small integer
//! keys of the simulator's per-flow bookkeeping (flow ids, host pairs,
//! bundle keys): `rustc-hash`'s FxHash (the rustc compiler's), not
//! DoS-resistant, which these keys do not need: they come from the engine
//! or a trace, never from the network.
//!
//! A `FastMap` is for lookups only: nothing may iterate one where the order
//! could reach a decision or an output (style.md: BTreeMap where order
//! reaches a decision). Its hash is fixed, so even a stray iteration is
//! deterministic from run to run.

use std::collections::HashMap;

/// A `HashMap` hashed by FxHash, for lookups by small integer keys.
pub type FastMap<K, V> = HashMap<K, V, rustc_hash::FxBuildHasher>;

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
}
