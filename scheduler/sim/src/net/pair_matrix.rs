//! Host-to-host demands on a fabric whose core never binds, held as a dense
//! host × host matrix of weights ([`PairMatrix`]) for [`super::levels`].
//!
//! When the ToR links cannot limit a rate ([`super::links::LinkMap::binding`]),
//! an uncapped EPS flow is limited only by its source's NIC up and its
//! destination's NIC down: the fabric is a *big switch*, the model CoflowSim
//! and Varys use (150 ports for the FB2010 trace). Its max-min allocation is
//! a water-filling on a bipartite graph, and with a few hundred ports most
//! port pairs carry a flow, so the demands are best kept as a matrix:
//! freezing NIC up `i` at level `λ` charges every unfrozen NIC down `j` with
//! `W[i][j] · λ` in one pass over row `i` (column `j` for a NIC down, kept
//! transposed), straight-line arithmetic over contiguous arrays instead of
//! a walk over per-slot entries. The level itself still comes from
//! [`super::levels::LinkLevels`]' heap, which also keeps the other demands
//! (capped, or over a circuit) in its per-link lists; both kinds charge the
//! same residual capacities.
//!
//! A pair's flows are bottlenecked at whichever of its two NICs froze first
//! (ties: the NIC up, the lower link id). As the NICs freeze, each NIC up
//! takes a copy of the set of NIC downs frozen before it (a bit per host),
//! so after a solve the pairs whose bottleneck moved are the bits in which
//! a row's set differs from the last solve's, among the pairs that carry
//! flows: a few words per host, not a comparison per pair.
//!
//! Link ids follow [`super::links::LinkMap`]: NIC up of host `h` (hosts
//! numbered rack-major) is `h`, its NIC down `hosts + h`.

use super::links::{HostPairs, LinkId};

const NONE: u32 = u32::MAX;

/// The dense demands of a [`super::levels::LinkLevels`]: weights per host
/// pair, the slots on each pair, and per solve which NICs froze when.
#[derive(Clone, Debug)]
pub struct PairMatrix {
    layout: HostPairs,
    n: usize,
    /// `W[i][j]`, row-major: Σ weight of the slots from NIC up `i` to NIC
    /// down `j`. Whole numbers, so kept as `i32` (a pair's flows would
    /// need hundreds of GB to reach 2³¹): half the bytes of an `f64` for a
    /// row charge to read, converted to one exactly, in one instruction.
    rows: Vec<i32>,
    /// The same, column-major.
    cols: Vec<i32>,
    /// Σ of each row of `W` and of each column (NIC up `i` at `i`, NIC down `j` at `n + j`).
    sums: Vec<f64>,
    /// The pairs within a rack, `W[i][j]` at `i · k + j mod k` (`k` hosts
    /// per rack): what does not cross the ToR links, read together.
    local: Vec<f64>,
    /// Per host link (as `sums`), how many of its in-rack pairs carry
    /// flows: a NIC with none sends its whole load through its ToR.
    local_pairs: Vec<u32>,
    /// The ToR link each host link crosses (as `sums`: NIC up `i` its
    /// rack's uplink, NIC down `j` its rack's downlink).
    tor_of: Vec<LinkId>,
    /// The first host of each host's rack.
    rack_first: Vec<u32>,
    /// Words per row of a bit set over the hosts.
    words: usize,
    /// Bit `j` of row `i`: whether `W[i][j] > 0`.
    nonzero: Vec<u64>,
    /// Bit `j` of row `i`: whether NIC down `j` froze before NIC up `i`
    /// (the pair's bottleneck is NIC down `j`), at the last solve and at this one.
    down_first: Vec<u64>,
    down_first_now: Vec<u64>,
    /// The NIC downs frozen so far in this solve.
    downs_frozen: Vec<u64>,
    /// First slot on each pair, then `next` from slot to slot (doubly linked).
    head: Vec<u32>,
    next: Vec<u32>,
    prev: Vec<u32>,
    /// The pair `(i, j)` of each slot, `i` = `NONE` for slots not here
    /// (kept as two numbers, not a row-major index: no division to split it).
    pair: Vec<(u32, u32)>,
    // Per solve, by host link: 1.0 until it freezes, whether it froze, and its level.
    alive: Vec<f64>,
    froze: Vec<bool>,
    level: Vec<f64>,
}

impl PairMatrix {
    /// No demands, on the hosts of `layout`.
    pub fn new(layout: HostPairs) -> PairMatrix {
        let n = layout.hosts as usize;
        let words = n.div_ceil(64);
        PairMatrix {
            layout,
            n,
            rows: vec![0; n * n],
            cols: vec![0; n * n],
            sums: vec![0.0; 2 * n],
            local: vec![0.0; n * layout.hosts_per_rack as usize],
            local_pairs: vec![0; 2 * n],
            tor_of: (0..n)
                .map(|i| layout.tor_up + layout.rack(i))
                .chain((0..n).map(|j| layout.tor_down + layout.rack(j)))
                .collect(),
            rack_first: (0..n).map(|h| layout.rack(h) * layout.hosts_per_rack).collect(),
            words,
            nonzero: vec![0; n * words],
            down_first: vec![0; n * words],
            down_first_now: vec![0; n * words],
            downs_frozen: vec![0; words],
            head: vec![NONE; n * n],
            next: Vec::new(),
            prev: Vec::new(),
            pair: Vec::new(),
            alive: vec![1.0; 2 * n],
            froze: vec![false; 2 * n],
            level: vec![f64::INFINITY; 2 * n],
        }
    }

    /// Where the host and ToR links are.
    pub fn layout(&self) -> &HostPairs {
        &self.layout
    }

    /// Whether `slot` is held here.
    pub fn holds(&self, slot: usize) -> bool {
        self.pair.get(slot).is_some_and(|&(i, _)| i != NONE)
    }

    /// Slot `slot` now carries `weight` flows from NIC up `i` to NIC down `j`.
    pub fn add(&mut self, slot: usize, (i, j): (u32, u32), weight: u32) {
        if slot >= self.pair.len() {
            self.pair.resize(slot + 1, (NONE, NONE));
            self.next.resize(slot + 1, NONE);
            self.prev.resize(slot + 1, NONE);
        }
        let p = i as usize * self.n + j as usize;
        self.pair[slot] = (i, j);
        let first = self.head[p];
        if first != NONE {
            self.prev[first as usize] = slot as u32;
        }
        (self.prev[slot], self.next[slot]) = (NONE, first);
        self.head[p] = slot as u32;
        self.charge(i as usize, j as usize, weight, 0);
    }

    /// Slot `slot`, added with `weight`, leaves; returns its pair.
    pub fn remove(&mut self, slot: usize, weight: u32) -> (u32, u32) {
        let (i, j) = self.pair[slot];
        let p = i as usize * self.n + j as usize;
        let (before, after) = (self.prev[slot], self.next[slot]);
        if before == NONE {
            self.head[p] = after;
        } else {
            self.next[before as usize] = after;
        }
        if after != NONE {
            self.prev[after as usize] = before;
        }
        self.pair[slot] = (NONE, NONE);
        self.charge(i as usize, j as usize, 0, weight);
        (i, j)
    }

    /// Slot `slot` now carries `weight` flows instead of `was`, on the
    /// same pair, which it returns.
    pub fn reweigh(&mut self, slot: usize, was: u32, weight: u32) -> (u32, u32) {
        let (i, j) = self.pair[slot];
        self.charge(i as usize, j as usize, weight, was);
        (i, j)
    }

    /// Pair `(i, j)` gains `add` flows and loses `sub` (at most what it has).
    fn charge(&mut self, i: usize, j: usize, add: u32, sub: u32) {
        let (n, p) = (self.n, i * self.n + j);
        self.rows[p] = (i64::from(self.rows[p]) + i64::from(add) - i64::from(sub)) as i32;
        self.cols[j * n + i] = self.rows[p];
        let w = f64::from(add) - f64::from(sub);
        self.sums[i] += w;
        self.sums[n + j] += w;
        let (k, first) = (self.layout.hosts_per_rack as usize, self.rack_first[j] as usize);
        if self.rack_first[i] as usize == first {
            let local = &mut self.local[i * k + (j - first)];
            let carried = *local > 0.0;
            *local += w;
            if carried != (*local > 0.0) {
                let step = |c: &mut u32| *c = if carried { *c - 1 } else { *c + 1 };
                step(&mut self.local_pairs[i]);
                step(&mut self.local_pairs[n + j]);
            }
        }
        let (word, bit) = (i * self.words + j / 64, 1u64 << (j % 64));
        if self.rows[p] > 0 {
            self.nonzero[word] |= bit;
        } else {
            self.nonzero[word] &= !bit;
        }
    }

    /// Starts a solve: no host link has frozen.
    pub fn begin(&mut self) {
        self.alive.fill(1.0);
        self.froze.fill(false);
        self.level.fill(f64::INFINITY);
        self.downs_frozen.fill(0);
    }

    /// Host link `link` freezes at `level`: the pairs on it whose other end
    /// has not frozen freeze with it,
    /// charging that end's `residual` and `count` (indexed by link id).
    /// Returns the ids of the links whose share this may have raised (the
    /// other side), or `None` if `link` is not a host link.
    pub fn freeze(
        &mut self,
        link: LinkId,
        level: f64,
        residual: &mut [f64],
        count: &mut [f64],
    ) -> Option<std::ops::Range<usize>> {
        let (n, l) = (self.n, link as usize);
        if l >= 2 * n {
            return None;
        }
        self.mark_frozen(link, level);
        if self.sums[l] == 0.0 {
            return None;
        }
        let (weights, other) = if l < n {
            (&self.rows[l * n..(l + 1) * n], n..2 * n)
        } else {
            (&self.cols[(l - n) * n..(l - n + 1) * n], 0..n)
        };
        charge_line(
            weights,
            &self.alive[other.clone()],
            level,
            &mut residual[other.clone()],
            &mut count[other.clone()],
        );
        Some(other)
    }

    /// Host link `link` froze at `level` as it did at an earlier solve,
    /// whose charges the residuals and counts already hold: only this
    /// solve's record of which links froze when is updated.
    pub fn mark_frozen(&mut self, link: LinkId, level: f64) {
        let (n, l) = (self.n, link as usize);
        if l >= 2 * n {
            return;
        }
        self.alive[l] = 0.0;
        self.froze[l] = true;
        self.level[l] = level;
        if l < n {
            let row = l * self.words..(l + 1) * self.words;
            self.down_first_now[row].copy_from_slice(&self.downs_frozen);
        } else {
            self.downs_frozen[(l - n) / 64] |= 1 << ((l - n) % 64);
        }
    }

    /// `W` of the pair between host links `a` and `b` (one a NIC up, the
    /// other a NIC down; 0 for two on the same side).
    pub fn weight_between(&self, a: usize, b: usize) -> f64 {
        let n = self.n;
        match (a < n, b < n) {
            (true, false) => f64::from(self.rows[a * n + (b - n)]),
            (false, true) => f64::from(self.rows[b * n + (a - n)]),
            _ => 0.0,
        }
    }

    /// The link that froze `slot` at the last solve (after [`PairMatrix::moved`]):
    /// the first of its pair's two NICs to freeze.
    pub fn bottleneck(&self, slot: usize) -> Option<LinkId> {
        let (i, j) = *self.pair.get(slot).filter(|&&(i, _)| i != NONE)?;
        let (i, j) = (i as usize, j as usize);
        let down = self.down_first[i * self.words + j / 64] & (1 << (j % 64)) != 0;
        Some(if down { self.n + j } else { i } as LinkId)
    }

    /// After a solve: calls `moved(slot, bottleneck)` for every slot whose
    /// pair's bottleneck is not the one it had at the last call (pairs added
    /// since may be reported too), pairs in row-major order.
    pub fn moved(&mut self, mut moved: impl FnMut(u32, LinkId)) {
        let (n, words) = (self.n, self.words);
        let (head, next) = (&self.head, &self.next);
        for i in 0..n {
            let row = i * words..(i + 1) * words;
            // A NIC up that did not freeze: every pair on it (if any)
            // froze at its NIC down.
            let now_row = if self.froze[i] {
                &self.down_first_now[row.clone()]
            } else {
                &self.downs_frozen[..]
            };
            let last_row = self.down_first[row.clone()].iter_mut();
            for (x, ((last, &now), &nonzero)) in last_row.zip(now_row).zip(&self.nonzero[row]).enumerate() {
                let mut flips = (now ^ *last) & nonzero;
                *last = now;
                while flips != 0 {
                    let bit = flips.trailing_zeros() as usize;
                    flips &= flips - 1;
                    let j = x * 64 + bit;
                    let at = if now & (1 << bit) != 0 { n + j } else { i } as LinkId;
                    let mut s = head[i * n + j];
                    while s != NONE {
                        moved(s, at);
                        s = next[s as usize];
                    }
                }
            }
        }
    }

    /// Completes `load` (indexed by link id; so are `capacity` and
    /// `residual`) after a solve, in one pass over the host links: a host link's
    /// load is what its residual says was taken from its capacity, and the
    /// pairs' part of it (that less what the lists' slots put there),
    /// less what goes to or comes from its own rack, crosses its ToR link.
    pub fn settle_loads(&self, capacity: &[f64], residual: &[f64], load: &mut [f64]) {
        let host_links = capacity.iter().zip(residual).zip(&self.tor_of).enumerate();
        for (l, ((c, r), &tor)) in host_links.take(2 * self.n) {
            let total = (c - r).max(0.0);
            let pairs = (total - load[l]).max(0.0);
            load[l] = total;
            if self.sums[l] > 0.0 {
                let mine = if self.local_pairs[l] > 0 {
                    self.in_rack_load(l)
                } else {
                    0.0
                };
                load[tor as usize] += (pairs - mine).max(0.0);
            }
        }
    }

    /// What host link `l` carries to or from its own rack: each in-rack
    /// pair's, in host order (0.0 for none, as the sum of zeros is).
    fn in_rack_load(&self, l: usize) -> f64 {
        let (n, k) = (self.n, self.layout.hosts_per_rack as usize);
        let h = if l < n { l } else { l - n };
        let first = self.rack_first[h] as usize;
        let x = h - first;
        if l < n {
            // NIC up h to each NIC down of its rack.
            (0..k)
                .map(|y| self.carried(self.local[h * k + y], h, first + y))
                .sum()
        } else {
            // Each NIC up of its rack to NIC down h.
            (0..k)
                .map(|y| self.carried(self.local[(first + y) * k + x], first + y, h))
                .sum()
        }
    }

    /// What pair (i, j) of weight `w` carries: `w` at the level of
    /// whichever NIC froze first (a pair with no weight may have neither frozen).
    fn carried(&self, w: f64, i: usize, j: usize) -> f64 {
        if w > 0.0 {
            w * self.level[i].min(self.level[self.n + j])
        } else {
            0.0
        }
    }
}

/// One row (or column) of the matrix freezes at `level`: each unfrozen
/// link `j` on the other side gives up `weights[j] · level` of its residual
/// capacity and `weights[j]` of its unfrozen flows. `alive[j]` is 1.0 for
/// an unfrozen link and 0.0 for a frozen one, so the loop has no branch and
/// the compiler vectorizes it: four lanes wide where the CPU has AVX2
/// (the same operations, unfused, so the same bits), two otherwise.
fn charge_line(weights: &[i32], alive: &[f64], level: f64, residual: &mut [f64], count: &mut [f64]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { charge_line_avx2(weights, alive, level, residual, count) };
    }
    charge_line_portable(weights, alive, level, residual, count)
}

#[inline(always)]
fn charge_line_portable(weights: &[i32], alive: &[f64], level: f64, residual: &mut [f64], count: &mut [f64]) {
    for (((&w, a), r), c) in weights.iter().zip(alive).zip(residual).zip(count) {
        let m = f64::from(w) * a;
        *r -= m * level;
        *c -= m;
    }
}

/// [`charge_line_portable`] compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn charge_line_avx2(weights: &[i32], alive: &[f64], level: f64, residual: &mut [f64], count: &mut [f64]) {
    charge_line_portable(weights, alive, level, residual, count)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The AVX2 build of a row charge gives the portable one's bits, on
    /// lines of every length around the vector widths (where the CPU has
    /// AVX2; elsewhere only the portable one runs).
    #[test]
    fn row_charges_are_the_same_bits_on_every_cpu_path() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        for len in 0..40 {
            let weights: Vec<i32> = (0..len).map(|_| rng.random_range(0..20)).collect();
            let alive: Vec<f64> = (0..len)
                .map(|_| f64::from(u8::from(rng.random_bool(0.7))))
                .collect();
            let level = rng.random_range(1e3..1e8);
            let residual: Vec<f64> = (0..len).map(|_| rng.random_range(0.0..1.25e8)).collect();
            let count: Vec<f64> = (0..len).map(|_| f64::from(rng.random_range(0..200u32))).collect();
            let (mut r1, mut c1) = (residual.clone(), count.clone());
            charge_line_portable(&weights, &alive, level, &mut r1, &mut c1);
            let (mut r2, mut c2) = (residual.clone(), count.clone());
            charge_line(&weights, &alive, level, &mut r2, &mut c2);
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&r1), bits(&r2), "residuals, length {len}");
            assert_eq!(bits(&c1), bits(&c2), "counts, length {len}");
            for j in 0..len {
                let m = f64::from(weights[j]) * alive[j];
                assert_eq!(r1[j].to_bits(), (residual[j] - m * level).to_bits());
            }
        }
    }

    fn layout(hosts: u32, per_rack: u32) -> HostPairs {
        HostPairs {
            hosts,
            hosts_per_rack: per_rack,
            tor_up: 2 * hosts,
            tor_down: 2 * hosts + hosts / per_rack,
        }
    }

    #[test]
    fn pairs_are_nic_to_nic_through_their_own_tors_only() {
        // 4 hosts, 2 per rack: NIC up 0..4, NIC down 4..8, ToR up 8..10, ToR down 10..12.
        let l = layout(4, 2);
        assert_eq!(l.pair_of(&[0, 5]), Some((0, 1)), "same rack, no ToR links");
        assert_eq!(l.pair_of(&[1, 8, 11, 6]), Some((1, 2)), "rack 0 to rack 1");
        assert_eq!(l.pair_of(&[0, 6]), None, "other racks without their ToR links");
        assert_eq!(l.pair_of(&[1, 9, 11, 6]), None, "the wrong ToR uplink");
        assert_eq!(l.pair_of(&[0, 8, 10, 5]), None, "ToR links within a rack");
        assert_eq!(l.pair_of(&[0, 12, 5]), None, "a third link (a circuit)");
        assert_eq!(l.pair_of(&[4, 1]), None, "down then up");
    }

    #[test]
    fn freezing_a_row_charges_only_unfrozen_columns() {
        // Hosts 0..3, one per rack. W[0][1] = 2, W[0][2] = 1, W[1][2] = 3.
        let mut m = PairMatrix::new(layout(3, 1));
        m.add(0, (0, 1), 2);
        m.add(1, (0, 2), 1);
        m.add(2, (1, 2), 3);
        let mut residual = vec![10.0; 12];
        let mut count = vec![0.0; 12];
        for (l, c) in [(0, 3.0), (1, 3.0), (4, 2.0), (5, 4.0)] {
            count[l] = c;
        }
        m.begin();
        // NIC down 2 (link 5) freezes first at 2.5: it charges NIC ups 0 and 1.
        assert_eq!(m.freeze(5, 2.5, &mut residual, &mut count), Some(0..3));
        assert_eq!((residual[0], count[0]), (7.5, 2.0));
        assert_eq!((residual[1], count[1]), (2.5, 0.0));
        // NIC up 0 (link 0) at 3.75: only NIC down 1 (link 4) is unfrozen.
        assert_eq!(m.freeze(0, 3.75, &mut residual, &mut count), Some(3..6));
        assert_eq!((residual[4], count[4]), (2.5, 0.0));
        assert_eq!(residual[5], 10.0, "a frozen link is not charged again");
        // NIC up 1 never froze: its pair froze at NIC down 2. All three
        // pairs are new, so all are reported; their bottlenecks:
        let mut moved = Vec::new();
        m.moved(|s, l| moved.push((s, l)));
        assert_eq!(
            moved,
            vec![(1, 5), (2, 5)],
            "pair (0, 1) is at NIC up 0, as a new pair's bit says"
        );
        assert_eq!(
            [m.bottleneck(0), m.bottleneck(1), m.bottleneck(2)],
            [Some(0), Some(5), Some(5)]
        );
        // The same solve again moves nothing.
        m.begin();
        m.freeze(5, 2.5, &mut residual, &mut count);
        m.freeze(0, 3.75, &mut residual, &mut count);
        moved.clear();
        m.moved(|s, l| moved.push((s, l)));
        assert!(moved.is_empty());
        // NIC up 0 first now: pair (0, 2) moves to it.
        m.begin();
        m.freeze(0, 1.0, &mut residual, &mut count);
        m.freeze(5, 2.0, &mut residual, &mut count);
        m.moved(|s, l| moved.push((s, l)));
        assert_eq!(moved, vec![(1, 0)]);
    }
}
