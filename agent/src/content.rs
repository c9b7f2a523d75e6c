//! Deterministic partition content: what a map writes and a reducer checks.
//!
//! A partition (or a map's input block) of `n` bytes keyed by a
//! [`PartitionId`] is a sequence of 64 KiB blocks. Every block is the same
//! *base block* (a splitmix64 stream seeded by the key) except its first 8
//! bytes, a *stamp* (splitmix64 of the key and the block's index), so no two
//! blocks of a partition, and no two partitions, are alike; the last block
//! is cut to length.
//!
//! Why this shape: producing content is a copy of the base block (memcpy
//! speed, no per-byte arithmetic on the sender's hot path), and the CRC-32 a
//! receiver expects follows from the key in O(blocks) without generating the
//! bytes, using CRC combination (`crc32(a ‖ b)` from `crc32(a)`, `crc32(b)`
//! and `|b|`). The receiver CRCs what arrives in one pass and compares.

use crate::protocol::PartitionId;
use ocslab_emulator::Bytes;

/// Size of a content block.
pub const BLOCK: usize = 64 * 1024;

/// The splitmix64 step (Steele, Lea and Flood, "Fast splittable
/// pseudorandom number generators", OOPSLA 2014).
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The 64-bit key of a partition's content.
pub fn key(p: &PartitionId) -> u64 {
    let mut s = p.seed;
    let mut k = splitmix64(&mut s);
    for part in [p.job.0, u64::from(p.map), u64::from(p.reduce)] {
        s ^= part.wrapping_mul(0xD6E8_FEB8_6659_FD93);
        k ^= splitmix64(&mut s);
    }
    k
}

/// The map-input "partition" of map `map`: reducer index `u32::MAX`.
pub fn input_id(job: crate::protocol::JobId, map: u32, seed: u64) -> PartitionId {
    PartitionId {
        job,
        map,
        reduce: u32::MAX,
        seed,
    }
}

fn stamp(key: u64, block: u64) -> [u8; 8] {
    let mut s = key ^ block.wrapping_mul(0xA24B_AED4_963E_E407);
    splitmix64(&mut s).to_le_bytes()
}

fn base_block(key: u64) -> Box<[u8]> {
    let mut s = key;
    let mut b = vec![0u8; BLOCK].into_boxed_slice();
    for w in b.chunks_exact_mut(8) {
        w.copy_from_slice(&splitmix64(&mut s).to_le_bytes());
    }
    b
}

/// Something that fills buffers with a flow's payload, in order. The sender
/// reads through this trait so faults can wrap the real content.
pub trait ContentSource: Send {
    /// Fills `out` with the next bytes; returns how many (0 at the end).
    fn fill(&mut self, out: &mut [u8]) -> usize;
    /// Bytes not yet produced.
    fn remaining(&self) -> u64;
}

/// The content of one partition, produced front to back.
pub struct PartitionContent {
    key: u64,
    base: Box<[u8]>,
    len: u64,
    pos: u64,
}

impl PartitionContent {
    /// The content of `p`, `len` bytes long (allocates one 64 KiB block).
    pub fn new(p: &PartitionId, len: Bytes) -> PartitionContent {
        let key = key(p);
        PartitionContent {
            key,
            base: base_block(key),
            len: len.0,
            pos: 0,
        }
    }
}

impl ContentSource for PartitionContent {
    fn fill(&mut self, out: &mut [u8]) -> usize {
        let mut done = 0;
        while done < out.len() && self.pos < self.len {
            let block = self.pos / BLOCK as u64;
            let off = (self.pos % BLOCK as u64) as usize;
            let n = (BLOCK - off)
                .min(out.len() - done)
                .min((self.len - self.pos) as usize);
            let dst = &mut out[done..done + n];
            dst.copy_from_slice(&self.base[off..off + n]);
            if off < 8 {
                let st = stamp(self.key, block);
                let k = (8 - off).min(n);
                dst[..k].copy_from_slice(&st[off..off + k]);
            }
            done += n;
            self.pos += n as u64;
        }
        done
    }

    fn remaining(&self) -> u64 {
        self.len - self.pos
    }
}

/// A fault: the wrapped content with one byte flipped at `at` (for tests of
/// the receiver's verification).
pub struct Corrupted<S> {
    inner: S,
    pos: u64,
    at: u64,
}

impl<S: ContentSource> Corrupted<S> {
    /// `inner` with the byte at offset `at` inverted.
    pub fn new(inner: S, at: u64) -> Corrupted<S> {
        Corrupted { inner, pos: 0, at }
    }
}

impl<S: ContentSource> ContentSource for Corrupted<S> {
    fn fill(&mut self, out: &mut [u8]) -> usize {
        let n = self.inner.fill(out);
        if (self.pos..self.pos + n as u64).contains(&self.at) {
            out[(self.at - self.pos) as usize] ^= 0xFF;
        }
        self.pos += n as u64;
        n
    }
    fn remaining(&self) -> u64 {
        self.inner.remaining()
    }
}

/// The CRC-32 (IEEE) of the content of `p` at length `len`, in O(blocks)
/// CRC combinations rather than a pass over the bytes (about 5 ms per GB).
pub fn expected_checksum(p: &PartitionId, len: Bytes) -> u32 {
    let key = key(p);
    let base = base_block(key);
    let tail = crc32fast::hash(&base[8..]);
    let tail_op = crc::combine_op(BLOCK as u64 - 8);
    let block_op = crc::combine_op(BLOCK as u64);
    let full_blocks = len.0 / BLOCK as u64;
    let mut total = 0u32;
    for b in 0..full_blocks {
        let block = crc::combine(crc32fast::hash(&stamp(key, b)), tail, tail_op);
        total = crc::combine(total, block, block_op);
    }
    let rest = (len.0 % BLOCK as u64) as usize;
    if rest > 0 {
        let mut last = PartitionContent {
            key,
            base,
            len: len.0,
            pos: full_blocks * BLOCK as u64,
        };
        let mut buf = vec![0u8; rest];
        last.fill(&mut buf);
        total = crc::combine(total, crc32fast::hash(&buf), crc::combine_op(rest as u64));
    }
    total
}

/// CRC-32 combination with a precomputed operator per length, after zlib's
/// `crc32_combine_gen`/`crc32_combine_op` (Adler and Madler): appending
/// `len` bytes multiplies the first CRC by x^(8·len) modulo the polynomial.
mod crc {
    const POLY: u32 = 0xEDB8_8320;

    /// a·b modulo the (reflected) CRC-32 polynomial.
    fn multmodp(a: u32, mut b: u32) -> u32 {
        let mut m = 1u32 << 31;
        let mut p = 0u32;
        loop {
            if a & m != 0 {
                p ^= b;
                if a & (m - 1) == 0 {
                    break;
                }
            }
            m >>= 1;
            b = if b & 1 != 0 { (b >> 1) ^ POLY } else { b >> 1 };
        }
        p
    }

    /// The operator that appends `len` bytes: x^(8·len) mod P.
    pub fn combine_op(len: u64) -> u32 {
        let mut p = 1u32 << 31; // x^0
        let mut x2k = 1u32 << 30; // x^1, squared as k grows
        let mut n = len;
        // Start at x^(2^3) = x^8 per byte.
        for _ in 0..3 {
            x2k = multmodp(x2k, x2k);
        }
        while n != 0 {
            if n & 1 != 0 {
                p = multmodp(x2k, p);
            }
            n >>= 1;
            x2k = multmodp(x2k, x2k);
        }
        p
    }

    /// The CRC of `a ‖ b` from `crc(a)`, `crc(b)` and `combine_op(|b|)`.
    pub fn combine(crc_a: u32, crc_b: u32, op: u32) -> u32 {
        multmodp(op, crc_a) ^ crc_b
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::JobId;

    fn pid(reduce: u32) -> PartitionId {
        PartitionId {
            job: JobId(3),
            map: 1,
            reduce,
            seed: 42,
        }
    }

    fn generate(p: &PartitionId, len: u64, chunk: usize) -> Vec<u8> {
        let mut c = PartitionContent::new(p, Bytes(len));
        let mut out = Vec::new();
        let mut buf = vec![0u8; chunk];
        loop {
            let n = c.fill(&mut buf);
            if n == 0 {
                break;
            }
            out.extend_from_slice(&buf[..n]);
        }
        out
    }

    #[test]
    fn content_does_not_depend_on_write_sizes() {
        let a = generate(&pid(0), 300_001, 7);
        let b = generate(&pid(0), 300_001, 256 * 1024);
        assert_eq!(a.len(), 300_001);
        assert_eq!(a, b);
    }

    #[test]
    fn expected_checksum_matches_a_pass_over_the_bytes() {
        for len in [
            0,
            1,
            5,
            8,
            9,
            BLOCK as u64,
            BLOCK as u64 + 3,
            5 * BLOCK as u64,
            1_000_003,
        ] {
            let bytes = generate(&pid(2), len, 4096);
            assert_eq!(
                expected_checksum(&pid(2), Bytes(len)),
                crc32fast::hash(&bytes),
                "len {len}"
            );
        }
    }

    #[test]
    fn blocks_and_partitions_differ() {
        let a = generate(&pid(0), 2 * BLOCK as u64, BLOCK);
        assert_ne!(a[..BLOCK], a[BLOCK..]);
        assert_ne!(generate(&pid(0), 4096, 4096), generate(&pid(1), 4096, 4096));
        let mut other = pid(0);
        other.seed = 43;
        assert_ne!(generate(&pid(0), 4096, 4096), generate(&other, 4096, 4096));
    }

    #[test]
    fn a_corrupted_source_changes_the_checksum() {
        let mut c = Corrupted::new(PartitionContent::new(&pid(0), Bytes(100_000)), 50_000);
        let mut buf = vec![0u8; 100_000];
        assert_eq!(c.fill(&mut buf), 100_000);
        assert_ne!(crc32fast::hash(&buf), expected_checksum(&pid(0), Bytes(100_000)));
        assert_eq!(buf, {
            let mut g = generate(&pid(0), 100_000, 4096);
            g[50_000] ^= 0xFF;
            g
        });
    }

    #[test]
    fn crc_combination_agrees_with_crc32fast() {
        let a = b"hybrid electrical";
        let b = b"/optical datacenter networks";
        let whole = crc32fast::hash(&[&a[..], &b[..]].concat());
        let op = crc::combine_op(b.len() as u64);
        assert_eq!(crc::combine(crc32fast::hash(a), crc32fast::hash(b), op), whole);
        assert_eq!(crc::combine(0, crc32fast::hash(b), op), crc32fast::hash(b));
    }
}
