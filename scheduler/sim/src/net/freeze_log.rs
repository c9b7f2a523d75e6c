//! The order in which the last solve froze the host links of a
//! [`PairMatrix`], with snapshots of the solver's state along it, so that
//! the next solve starts where the changes since make a first difference.
//!
//! Water-filling freezes links in order of share. When the demands change
//! on a few host pairs, call their two NICs the *touched* links. Every
//! freeze of the last solve that comes before the first one that
//! 1. freezes a touched link, or
//! 2. would now be pre-empted by a touched link (whose share, from the same
//!    residual but its new flow count, is lower, ties broken by link id as
//!    the heap breaks them)
//!
//! happens again exactly as before: the same link at the same share,
//! charging the same residuals and counts, because only the touched links'
//! rows and columns of the matrix changed and none of them has frozen yet.
//! So the solve can start from the state just before that freeze, the
//! *resume point*, instead of from the full capacities.
//!
//! [`FreezeLog::resume_point`] finds it. A touched link that only lost
//! flows (a departure) has, before its own freeze, the residual it had and
//! fewer flows, so a share no smaller: it pre-empts nothing, and the resume
//! point is the first touched link's place in the order. Only touched
//! links that gained flows are carried along the order, with their
//! residuals and counts (the same floating-point operations, in the same
//! order, as the solve itself). The
//! state before every [`FreezeLog::EVERY`]-th freeze is kept: each host
//! link's residual and the flows charged to it so far (the count is the
//! link's current weight less those, which stays right for a touched link
//! whose weight changed since). The solve restores the last snapshot at or
//! before the resume point and re-runs the few freezes between, so every
//! rate, level and bottleneck is bit for bit what a solve from scratch
//! gives (`levels`' tests run both side by side).
//!
//! A host link whose capacity changed is a touched link too: before its
//! own freeze nothing reads its residual, which is its capacity less the
//! same charges. Raised, it pre-empts nothing; lowered, it is followed as
//! a link that gained flows. Only the snapshots hold residuals of the old
//! capacity for it, which [`FreezeLog::rebase_snapshots`] recomputes.
//!
//! On FB2010 (150 ports, 44,462 solves, ~126 freezes each) the resume
//! point is on average 58 % of the way along the last order. What comes
//! after it is mostly the same order again, which the solve then tries to
//! follow without its heap (`LinkLevels::follow_last_order`).

use super::links::LinkId;
use super::maxmin::{share, share_key};
use super::pair_matrix::PairMatrix;

/// The last solve's freezes of host links, and snapshots along them.
#[derive(Clone, Debug, Default)]
pub struct FreezeLog {
    /// Host links: NIC ups `0..hosts`, NIC downs `hosts..2 · hosts`.
    links: usize,
    /// A snapshot before every this many freezes.
    every: usize,
    /// Each freeze of the last solve, in order: (link, share).
    order: Vec<(LinkId, f64)>,
    /// Snapshot `k` (before freeze `(k + 1) · every`) at
    /// `k · 2 · links`: each host link's residual, then the flows charged
    /// to each host link so far (its weight less its count).
    snapshots: Vec<f64>,
    /// The freeze before which the next snapshot is taken.
    next_snapshot: usize,
    /// Whether `order` and `snapshots` describe the last solve (it held
    /// every demand in the matrix).
    valid: bool,
    /// Host links whose pairs changed since the last solve, as a set and
    /// as a list, and whether a pair on each gained flows.
    touched: Vec<bool>,
    touched_list: Vec<LinkId>,
    grew: Vec<bool>,
    /// Host links whose capacity changed since the last solve (also
    /// touched): a snapshot's residual for them is recomputed on restore.
    recapacitated: Vec<LinkId>,
    /// Where each host link is in `order` (stale for a link not in it).
    position: Vec<u32>,
}

impl FreezeLog {
    /// Freezes between two snapshots: ~4.8 KB each on FB2010, and on
    /// average half this many freezes re-run after a restore.
    pub const EVERY: usize = 32;

    /// Most touched links that gained flows [`FreezeLog::resume_point`]
    /// follows along the order; with more, the solve starts from scratch.
    pub const MOST_FOLLOWED: usize = 8;

    /// An empty log for the `2 · hosts` host links of a matrix.
    pub fn new(hosts: usize) -> FreezeLog {
        FreezeLog::with_snapshots_every(hosts, FreezeLog::EVERY)
    }

    /// Like [`FreezeLog::new`], with a snapshot every `every` freezes.
    pub fn with_snapshots_every(hosts: usize, every: usize) -> FreezeLog {
        FreezeLog {
            links: 2 * hosts,
            every: every.max(1),
            next_snapshot: every.max(1),
            touched: vec![false; 2 * hosts],
            grew: vec![false; 2 * hosts],
            position: vec![0; 2 * hosts],
            ..FreezeLog::default()
        }
    }

    /// The pairs on host link `link` changed: one gained flows (`grew`),
    /// or lost some.
    pub fn touch(&mut self, link: LinkId, grew: bool) {
        let l = link as usize;
        if let Some(t) = self.touched.get_mut(l) {
            if !*t {
                *t = true;
                self.touched_list.push(link);
            }
            self.grew[l] |= grew;
        }
    }

    /// Host link `link`'s capacity changed since the last solve; it was
    /// `lowered` or raised. Returns false, and changes nothing, for a link
    /// the log does not follow (not a host link).
    ///
    /// At every freeze before its own, a host link's residual is its
    /// capacity less what the freezes so far charged it, and no other
    /// link's freeze reads it: the order holds up to that link as for a
    /// touched one. Raised, its share is no smaller at each of those
    /// freezes (float subtraction is monotone), so it pre-empts nothing;
    /// lowered, it is followed along the order as a link that gained flows
    /// is. Only the snapshots' residuals for it are off, until
    /// [`FreezeLog::rebase_snapshots`].
    pub fn recapacitate(&mut self, link: LinkId, lowered: bool) -> bool {
        if link as usize >= self.links {
            return false;
        }
        self.touch(link, lowered);
        if !self.recapacitated.contains(&link) {
            self.recapacitated.push(link);
        }
        true
    }

    /// Brings the residuals the snapshots before freeze `point` hold for
    /// the recapacitated links to their new `capacity` (by link id), as a
    /// solve from scratch with the current matrix reaches them there: the
    /// same charges, in the same order, as `pair_matrix::charge_line`
    /// makes. Right for any `point` no later than the resume point (no
    /// such link froze, and no pair on one changed, before it).
    pub fn rebase_snapshots(&mut self, capacity: &[f64], point: usize, pairs: &PairMatrix) {
        let kept = (self.snapshots.len() / (2 * self.links).max(1)).min(point / self.every);
        for &link in &self.recapacitated {
            let c = link as usize;
            let mut r = capacity[c];
            for (k, &(l, level)) in self.order[..kept * self.every].iter().enumerate() {
                let m = charged_weight(pairs, l as usize, c);
                if m != 0.0 {
                    r -= m * level;
                }
                if (k + 1) % self.every == 0 {
                    // Snapshot (k + 1) / every - 1 is of the state before freeze k + 1.
                    self.snapshots[((k + 1) / self.every - 1) * 2 * self.links + c] = r;
                }
            }
        }
    }

    /// Where `link` froze in the last solve's order, if it did.
    fn position_of(&self, link: LinkId) -> Option<usize> {
        let at = *self.position.get(link as usize)? as usize;
        self.order.get(at).filter(|&&(l, _)| l == link).map(|_| at)
    }

    /// Whether the log holds the last solve's order (it held every demand
    /// in the matrix).
    pub fn is_valid(&self) -> bool {
        self.valid
    }

    /// The last solve's order cannot be reused (it held demands outside
    /// the matrix).
    pub fn invalidate(&mut self) {
        self.valid = false;
        self.order.clear();
        self.snapshots.clear();
        self.next_snapshot = self.every;
    }

    /// How many of the last solve's freezes the next one repeats exactly
    /// (0 if the log is not valid), given the links' `capacity` and current
    /// `weight` (flows per link), which links bind, and the current matrix.
    pub fn resume_point(
        &self,
        capacity: &[f64],
        weight: &[f64],
        binds: &[bool],
        pairs: &PairMatrix,
    ) -> usize {
        if !self.valid {
            return 0;
        }
        let first_touched = self
            .touched_list
            .iter()
            .filter_map(|&c| self.position_of(c))
            .min()
            .unwrap_or(self.order.len());
        // A touched link that only lost flows has, at every freeze before
        // its own, the residual it had then and fewer flows: a share no
        // smaller than it had, so it pre-empts nothing. Those that gained
        // flows are followed, with the residual and count a solve from
        // scratch would give them as the order goes, and their share key.
        let key = |r: f64, n: f64, c: usize| share_key(share(r, n), c as LinkId);
        let mut live: Vec<(usize, f64, f64, (u64, LinkId))> = self
            .touched_list
            .iter()
            .map(|&c| c as usize)
            .filter(|&c| binds[c] && self.grew[c] && weight[c] > 0.0)
            .map(|c| (c, capacity[c], weight[c], key(capacity[c], weight[c], c)))
            .collect();
        if live.is_empty() {
            return first_touched;
        }
        if live.len() > Self::MOST_FOLLOWED {
            // A coflow's arrival: following them all along the order costs
            // more than the freezes it would save; start from scratch.
            return 0;
        }
        let hosts = self.links / 2;
        for (s, &(link, level)) in self.order[..first_touched].iter().enumerate() {
            let l = link as usize;
            let at = share_key(level, link);
            if live.iter().any(|&(.., k)| k < at) {
                return s;
            }
            for (c, r, n, k) in &mut live {
                if (*c < hosts) != (l < hosts) {
                    let m = charged_weight(pairs, l, *c);
                    if m != 0.0 {
                        *r -= m * level;
                        *n -= m;
                        *k = if *n > 0.0 {
                            key(*r, *n, *c)
                        } else {
                            (u64::MAX, LinkId::MAX)
                        };
                    }
                }
            }
        }
        first_touched
    }

    /// Freezes so far in this solve (all of the last one's, after [`FreezeLog::end`]).
    pub fn freezes(&self) -> usize {
        self.order.len()
    }

    /// The freezes of the last solve before `point`.
    pub fn order_before(&self, point: usize) -> &[(LinkId, f64)] {
        &self.order[..point.min(self.order.len())]
    }

    /// The freezes of the last solve from `point` on.
    pub fn order_from(&self, point: usize) -> &[(LinkId, f64)] {
        &self.order[point.min(self.order.len())..]
    }

    /// The latest snapshot at or before freeze `point`: its freeze index,
    /// and the residuals and charged flows of the host links (`None`: start
    /// from scratch).
    pub fn snapshot_at_or_before(&self, point: usize) -> Option<(usize, &[f64], &[f64])> {
        let k = (point / self.every).min(self.snapshots.len() / (2 * self.links.max(1)));
        if k == 0 {
            return None;
        }
        let at = (k - 1) * 2 * self.links;
        let (residual, charged) = self.snapshots[at..at + 2 * self.links].split_at(self.links);
        Some((k * self.every, residual, charged))
    }

    /// Starts a solve that re-runs the last order from freeze `from` (a
    /// snapshot's index, or 0): what follows is forgotten.
    pub fn restart_at(&mut self, from: usize) {
        self.order.truncate(from);
        let keep = from.checked_div(self.every).unwrap_or(0);
        self.snapshots.truncate(keep * 2 * self.links);
        self.next_snapshot = (self.snapshots.len() / (2 * self.links).max(1) + 1) * self.every;
    }

    /// Freeze `link` at `share` is next, in the state `residual`, `count`,
    /// `weight` (by link id) before it.
    pub fn record(&mut self, link: LinkId, share: f64, residual: &[f64], count: &[f64], weight: &[f64]) {
        if self.order.len() == self.next_snapshot {
            self.next_snapshot += self.every;
            let n = self.links;
            self.snapshots.extend_from_slice(&residual[..n]);
            self.snapshots
                .extend(weight[..n].iter().zip(&count[..n]).map(|(w, c)| w - c));
        }
        if let Some(p) = self.position.get_mut(link as usize) {
            *p = self.order.len() as u32;
        }
        self.order.push((link, share));
    }

    /// A solve ended: its order is reusable if it held every demand in the
    /// matrix, and nothing is touched yet.
    pub fn end(&mut self, reusable: bool) {
        if reusable {
            self.valid = true;
        } else {
            self.invalidate();
        }
        for &l in &self.touched_list {
            self.touched[l as usize] = false;
            self.grew[l as usize] = false;
        }
        self.touched_list.clear();
        self.recapacitated.clear();
    }
}

/// The flows host link `frozen`'s freeze charges to the unfrozen host link
/// `other` (0 for two on the same side): `r -= m × level`, `count -= m`
/// with this `m` are the operations `pair_matrix::charge_line` makes
/// there (an unfrozen link's `alive` is 1), so a residual carried with it
/// is bit for bit the solver's.
fn charged_weight(pairs: &PairMatrix, frozen: usize, other: usize) -> f64 {
    pairs.weight_between(frozen, other) * 1.0
}
