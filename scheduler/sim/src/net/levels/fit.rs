//! [`CapSums`]: whether every demand is capped and the caps fit on every
//! binding link, so that a solve can leave every slot at its cap without
//! a filling ([`super::LinkLevels::solve_at_caps`]).
//!
//! Caps come from whole bits per second (`Bps`: a policy's pacing rate),
//! so each link's sum of caps is kept as an integer number of bits per
//! second and "fits" is decided without rounding. When every demand is
//! capped and the caps fit, the caps are the max-min fair allocation:
//! they are feasible, and no slot may exceed its cap.

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
