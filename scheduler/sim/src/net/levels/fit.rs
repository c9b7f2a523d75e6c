//! [`CapSums`]: whether every demand is capped and the caps fit on every
//! binding link, and the two solves that then leave every slot at its cap
//! without a filling: [`LinkLevels::solve_at_caps`] (a policy's call moved
//! the caps) and [`LinkLevels::solve_departures_at_caps`] (slots only left
//! since).
//!
//! Caps come from whole bits per second (`Bps`: a policy's pacing rate),
//! so each link's sum of caps is kept as an integer number of bits per
//! second and "fits" is decided without rounding. When every demand is
//! capped and the caps fit, the caps are the max-min fair allocation:
//! they are feasible, and no slot may exceed its cap.

use super::{capped_at, Bottleneck, LinkLevels};
use crate::net::links::LinkId;
use crate::net::maxmin::Demand;

/// Per link, Σ cap × weight over the capped demands crossing it, in bits
/// per second; and how far the demands are from all fitting.
#[derive(Clone, Debug, Default)]
pub(super) struct CapSums {
    bits: Vec<u128>,
    /// The most bits per second each link carries: its capacity, rounded
    /// down (`u128::MAX` for a link that never binds).
    limit: Vec<u128>,
    /// Links whose sum is over their limit.
    over: usize,
    /// Demands without a cap, or capped at no whole number of bits per second.
    others: usize,
}

impl CapSums {
    /// No demands, on links of `capacity` (bytes per second), of which
    /// those with `binds[l] == false` never limit a rate.
    pub(super) fn new(capacity: &[f64], binds: &[bool]) -> CapSums {
        CapSums {
            bits: vec![0; capacity.len()],
            limit: capacity.iter().zip(binds).map(|(&c, &b)| limit(c, b)).collect(),
            over: 0,
            others: 0,
        }
    }

    /// Link `link` now has `capacity` (bytes per second).
    pub(super) fn set_capacity(&mut self, link: LinkId, capacity: f64, binds: bool) {
        let l = link as usize;
        let was = self.bits[l] > self.limit[l];
        self.limit[l] = limit(capacity, binds);
        self.count(was, self.bits[l] > self.limit[l]);
    }

    /// Demand `d` joins.
    pub(super) fn add(&mut self, d: &Demand) {
        match whole_bits(d) {
            Some(bits) => self.charge(d, |sum| sum + bits),
            None => self.others += 1,
        }
    }

    /// Demand `d`, added before, leaves.
    pub(super) fn remove(&mut self, d: &Demand) {
        match whole_bits(d) {
            Some(bits) => self.charge(d, |sum| sum - bits),
            None => self.others -= 1,
        }
    }

    /// Demand `old`, added before, is capped at `new`'s cap now, on the
    /// same links with the same weight.
    pub(super) fn recap(&mut self, old: &Demand, new: &Demand) {
        match (whole_bits(old), whole_bits(new)) {
            (Some(was), Some(is)) => self.charge(new, |sum| sum - was + is),
            _ => {
                self.remove(old);
                self.add(new);
            }
        }
    }

    /// Whether every demand is capped at whole bits per second and the
    /// caps fit on every binding link.
    pub(super) fn fit(&self) -> bool {
        self.others == 0 && self.over == 0
    }

    /// What the caps put on `link`, bytes per second.
    pub(super) fn load(&self, link: LinkId) -> f64 {
        self.bits[link as usize] as f64 / 8.0
    }

    fn charge(&mut self, d: &Demand, to: impl Fn(u128) -> u128) {
        for &l in d.links.as_slice() {
            let l = l as usize;
            let was = self.bits[l] > self.limit[l];
            self.bits[l] = to(self.bits[l]);
            self.count(was, self.bits[l] > self.limit[l]);
        }
    }

    fn count(&mut self, was: bool, is: bool) {
        match (was, is) {
            (false, true) => self.over += 1,
            (true, false) => self.over -= 1,
            _ => {}
        }
    }
}

/// The bits per second a link of `capacity` (bytes per second) carries at
/// most, if it binds.
fn limit(capacity: f64, binds: bool) -> u128 {
    if binds {
        // Exact: ×8 only moves the exponent; `as` rounds down (0 for NaN).
        (capacity.max(0.0) * 8.0).floor() as u128
    } else {
        u128::MAX
    }
}

/// Demand `d`'s cap times its weight in bits per second, if it is capped
/// at a whole number of bits per second (below 2^64).
fn whole_bits(d: &Demand) -> Option<u128> {
    // (NaN: `max` gives 0; infinite or 2^64 and up: not below 2^64.)
    let bits = d.cap.max(0.0) * 8.0;
    let whole = bits as u64;
    (bits < TWO_TO_THE_64 && whole as f64 == bits).then(|| u128::from(whole) * u128::from(d.weight))
}

/// 2^64, the first cap in bits per second [`whole_bits`] leaves out.
const TWO_TO_THE_64: f64 = 18_446_744_073_709_551_616.0;

impl LinkLevels {
    /// A solve after the last one left every slot at its cap and slots
    /// only left since (Varys and Aalo between coflow events: one flow
    /// leaves at a time): every slot stays at its cap, so the departed
    /// slots' loads are taken off their links and nothing else changes.
    /// Each link's share, wherever a filling would compare it with a cap, is
    /// at least what it was at the last solve (a residual no smaller,
    /// fewer flows), when it was above that cap; rounding is monotone, so
    /// this holds in floating point too. Loads differ from a filling's by
    /// rounding until the next full solve (they feed only the utilization
    /// series).
    pub(super) fn solve_departures_at_caps(&mut self) {
        for (_, d) in &self.solved {
            let total = d.cap.max(0.0) * u64::from(d.weight) as f64;
            for &l in d.links.as_slice() {
                self.load[l as usize] = (self.load[l as usize] - total).max(0.0);
            }
        }
        self.report_pending_at_caps();
        self.stats.departures_at_caps += 1;
    }

    /// The end of a solve that left every slot at its cap: each pending
    /// slot is at its cap, or idle if it has no demand, and is reported.
    fn report_pending_at_caps(&mut self) {
        for &s in &self.pending {
            let s = s as usize;
            self.is_pending[s] = false;
            self.bottleneck[s] = match self.demand[s] {
                Some(_) => Bottleneck::Cap,
                None => Bottleneck::Idle,
            };
            self.changes.slots.push(s as u32);
        }
        self.pending.clear();
        self.solved.clear();
        self.changes.slots.sort_unstable();
        self.stats.solves += 1;
        self.stats.bottlenecks_moved += self.changes.slots.len() as u64;
    }

    /// Every demand is capped, the caps fit on every link
    /// ([`CapSums::fit`]) and every slot was at its cap after the last
    /// solve: every slot stays at its cap and no link gets a level, which
    /// is what a filling would find (it meets every cap before any link's
    /// share falls below it), without one. Varys' and Aalo's calls, which
    /// move thousands of caps at once, end here. Only the changed slots
    /// are reported; the loads of their links are the caps' sums.
    pub(super) fn solve_at_caps(&mut self) {
        // The links whose load changed, each once (`taken` marks them).
        let (taken, touched) = (&mut self.taken, &mut self.touched);
        let old = self.solved.iter().map(|(_, d)| d);
        let new = self
            .pending
            .iter()
            .filter_map(|&s| self.demand[s as usize].as_ref());
        for d in old.chain(new) {
            for &l in d.links.as_slice() {
                if taken[l as usize] == 0 {
                    taken[l as usize] = 1;
                    touched.push(l);
                }
            }
        }
        for &l in &self.touched {
            self.load[l as usize] = self.cap_sums.load(l);
            self.taken[l as usize] = 0;
        }
        self.touched.clear();
        self.report_pending_at_caps();
        self.capped.drop_stale(|bits, s| capped_at(&self.demand, bits, s));
        self.stats.solves_at_caps += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::links::Links;

    fn capped(links: &[LinkId], bytes_per_s: f64, weight: u32) -> Demand {
        Demand {
            cap: bytes_per_s,
            weight,
            ..Demand::new(Links::new(links).expect("at most 4 links"))
        }
    }

    #[test]
    fn caps_fit_up_to_the_last_bit_of_a_link() {
        // Link 0: 10 B/s = 80 bit/s; link 1 never binds.
        let mut sums = CapSums::new(&[10.0, 1.0], &[true, false]);
        let a = capped(&[0, 1], 2.5, 2); // 40 bit/s on each
        let b = capped(&[0], 4.875, 1); // 39 bit/s
        sums.add(&a);
        sums.add(&b);
        assert!(sums.fit(), "79 of 80 bit/s; link 1 never binds");
        assert_eq!((sums.load(0), sums.load(1)), (9.875, 5.0));
        let c = capped(&[0], 0.125, 1); // the last bit
        sums.add(&c);
        assert!(sums.fit(), "80 of 80 bit/s");
        let d = capped(&[0], 0.125, 1);
        sums.add(&d);
        assert!(!sums.fit(), "81 of 80 bit/s");
        sums.set_capacity(0, 10.125, true);
        assert!(sums.fit(), "81 of 81 bit/s");
        sums.set_capacity(0, 10.0, true);
        sums.remove(&c);
        assert!(sums.fit(), "a departure brings it back");
    }

    #[test]
    fn an_uncapped_demand_or_a_cap_not_in_whole_bits_below_2_to_the_64_does_not_fit() {
        let mut sums = CapSums::new(&[100.0], &[true]);
        let uncapped = Demand::new(Links::new(&[0]).expect("links"));
        let fraction = capped(&[0], 1.0 / 3.0, 1);
        let huge = capped(&[0], TWO_TO_THE_64 / 8.0, 1);
        for d in [uncapped, fraction, huge] {
            sums.add(&d);
            assert!(!sums.fit(), "{d:?}");
            sums.remove(&d);
            assert!(sums.fit(), "{d:?} left");
        }
    }
}
