//! Solves that resume the last solve's freeze order ([`FreezeLog`](crate::net::freeze_log::FreezeLog)) instead
//! of filling from scratch: when every demand is in the host × host matrix,
//! a solve restores the state at the last freeze that still holds and
//! follows the rest of the old order as long as it holds
//! ([`LinkLevels::follow_last_order`]), which ~95 % of FB2010's resumed
//! solves do.

use super::LinkLevels;
use crate::net::maxmin::{share, share_key};

impl LinkLevels {
    /// Brings the solver's state to where the last solve's order stops
    /// holding ([`FreezeLog`](crate::net::freeze_log::FreezeLog)), and keeps the rest of that order for
    /// [`LinkLevels::follow_last_order`]. Returns the freeze the state was
    /// restored at ([`LinkLevels::restore`]).
    pub(super) fn resume_last_order(&mut self) -> usize {
        let Some(pairs) = self.pairs.as_ref() else {
            return 0;
        };
        let point = self
            .log
            .resume_point(&self.capacity, &self.weight, &self.binds, pairs);
        self.stats.freezes_repeated += point as u64;
        self.log.rebase_snapshots(&self.capacity, point, pairs);
        self.suffix.clear();
        self.suffix.extend_from_slice(self.log.order_from(point));
        self.again.clear();
        let from = self.log.snapshot_at_or_before(point).map_or(0, |(at, ..)| at);
        self.again
            .extend_from_slice(&self.log.order_before(point)[from..]);
        self.restore(from);
        from
    }

    /// From the snapshot the log took before freeze `from` (or from
    /// scratch at 0), whose links are marked frozen as they were, the
    /// freezes kept in `again` are run again.
    pub(super) fn restore(&mut self, from: usize) {
        let Some(pairs) = self.pairs.as_mut() else { return };
        if let Some((at, residual, charged)) = self.log.snapshot_at_or_before(from) {
            debug_assert_eq!(at, from);
            let n = residual.len();
            self.residual[..n].copy_from_slice(residual);
            for ((c, w), ch) in self.count[..n].iter_mut().zip(&self.weight[..n]).zip(charged) {
                *c = w - ch;
            }
            for &(link, share) in self.log.order_before(at) {
                pairs.mark_frozen(link, share);
                self.new_level[link as usize] = share;
                self.link_frozen[link as usize] = self.epoch;
            }
        }
        self.log.restart_at(from);
        let again = std::mem::take(&mut self.again);
        for &(link, share) in &again {
            self.freeze_link(link, share);
        }
        self.again = again;
    }

    /// Finishes a resumed solve without the heap, if the last solve's
    /// order still holds: the links freeze in that order, each picked as
    /// the smallest share (then the lowest id) among the next
    /// [`LinkLevels::FOLLOW_AHEAD`] of it that still carry flows. Returns
    /// false, the state spoilt, if the levels so found ever fall (or stay
    /// level with a lower link id after a higher one: the heap freezes
    /// equal shares lowest id first, which decides whose bottleneck a slot
    /// between two such links gets; links left with nothing, share 0, tie
    /// often), or if a link that did not freeze ends with flows or over
    /// its capacity; the solve then goes back to the resume point and
    /// fills with the heap.
    ///
    /// When it returns true, each freeze took the smallest share of all the
    /// unfrozen links, as the heap would have. Say link `q` had a smaller
    /// share than the level `s` of the link frozen at some step. Freezing a
    /// link at a level above `q`'s share lowers that share (or leaves it),
    /// and every later level is at least `s`, so `q` would have frozen
    /// below `s`, or ended over its capacity, and the check would have
    /// failed. So the rates are the max-min fair ones; on FB2010 ~95 % of
    /// resumed solves end this way.
    pub(super) fn follow_last_order(&mut self) -> bool {
        let Some(hosts) = self.pairs.as_ref().map(|p| 2 * p.layout().hosts as usize) else {
            return false;
        };
        let epoch = self.epoch;
        let mut candidates = std::mem::take(&mut self.candidates);
        candidates.clear();
        let mut next = 0;
        let mut last = (0, 0);
        let followed = loop {
            let count = &self.count;
            candidates.retain(|&l| count[l as usize] > 0.0);
            while candidates.len() < Self::FOLLOW_AHEAD && next < self.suffix.len() {
                let l = self.suffix[next].0;
                next += 1;
                if count[l as usize] > 0.0 {
                    candidates.push(l);
                }
            }
            let best = candidates
                .iter()
                .map(|&l| (share(self.residual[l as usize], self.count[l as usize]), l))
                .min_by_key(|&(s, l)| share_key(s, l));
            let Some((level, link)) = best else {
                break true;
            };
            let key = share_key(level, link);
            if key < last {
                break false;
            }
            last = key;
            self.freeze_link(link, level);
        };
        self.candidates = candidates;
        followed
            && (0..hosts).all(|l| {
                !self.binds[l]
                    || self.link_frozen[l] == epoch
                    || (self.count[l] == 0.0 && self.residual[l] >= 0.0)
            })
    }

    /// Whether solves log their freezes for the next to resume from:
    /// every demand is in the matrix.
    pub(super) fn logging(&self) -> bool {
        self.pairs.is_some() && self.listed == 0
    }
}
