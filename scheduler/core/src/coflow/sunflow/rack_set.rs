//! Sets of racks as bit rows, for the solver's candidate search: the next
//! pending pair from a rack that has a free receiving side is found by
//! ANDing two rows a word at a time, not by a walk over the rack's pairs.

/// Rows of `width` bits each (one per rack), stored end to end.
#[derive(Clone, Debug)]
pub(super) struct RackRows {
    words: usize,
    bits: Vec<u64>,
}

impl RackRows {
    /// `rows` empty rows of `width` bits.
    pub(super) fn new(rows: usize, width: u32) -> RackRows {
        let words = (width as usize).div_ceil(64);
        RackRows {
            words,
            bits: vec![0; rows * words],
        }
    }

    /// Row `r`.
    pub(super) fn row(&self, r: usize) -> &[u64] {
        &self.bits[r * self.words..(r + 1) * self.words]
    }

    /// Sets or clears bit `bit` of row `r`.
    pub(super) fn put(&mut self, r: usize, bit: u32, on: bool) {
        let word = &mut self.bits[r * self.words + bit as usize / 64];
        let mask = 1u64 << (bit % 64);
        if on {
            *word |= mask;
        } else {
            *word &= !mask;
        }
    }

    /// Whether bit `bit` of row `r` is set.
    pub(super) fn get(&self, r: usize, bit: u32) -> bool {
        self.row(r)[bit as usize / 64] >> (bit % 64) & 1 == 1
    }
}

/// The first bit at or after `start` set in `row` and in `mask(w)` (the
/// mask of word `w`).
pub(super) fn first_from(row: &[u64], start: u32, mask: impl Fn(usize) -> u64) -> Option<u32> {
    let first = start as usize / 64;
    for (w, &word) in row.iter().enumerate().skip(first) {
        let mut bits = word & mask(w);
        if w == first {
            bits &= u64::MAX << (start % 64);
        }
        if bits != 0 {
            return Some(w as u32 * 64 + bits.trailing_zeros());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_bit_two_rows_share_from_a_start() {
        let mut rows = RackRows::new(2, 150);
        for bit in [0, 3, 63, 64, 100, 149] {
            rows.put(0, bit, true);
        }
        for bit in [3, 64, 65, 149, 0] {
            rows.put(1, bit, true);
        }
        rows.put(1, 0, false);
        assert!(rows.get(0, 63) && !rows.get(1, 0));
        let common = |start| first_from(rows.row(0), start, |w| rows.row(1)[w]);
        assert_eq!(common(0), Some(3));
        assert_eq!(common(4), Some(64));
        assert_eq!(common(65), Some(149));
        assert_eq!(common(150), None);
    }
}
