//! A solve confined to the links the changed slots meet
//! ([`LinkLevels::solve_locally`]).
//!
//! Most changes touch a few links that nothing else binds: a circuit that
//! comes up or goes down, or a flow leaving it, changes the slots of one
//! OCS port, whose other links (the NICs at either end) are far from full.
//! A full filling then recomputes hundreds of levels to find the one that
//! moved. Instead, the changed slots, and every slot on a link they meet
//! that is some slot's bottleneck (and so on, transitively), are filled on
//! their own, on what the other slots leave of their links. The result is
//! the max-min fair allocation if no link this filling freezes carries a
//! slot outside the group: every slot in the group then has a saturated
//! link on which no slot gets more; every slot outside keeps its rate and
//! its bottleneck, a link that no slot in the group reaches, whose load did
//! not change; and the allocation is feasible. Max-min fair allocations are
//! unique (Bertsekas & Gallager, *Data Networks*, Sec. 6.5.2), so it is the
//! one a full filling finds. Otherwise the solve goes back to a full
//! filling, having changed nothing.
//!
//! A frozen link's level is its share as a full filling would compute it:
//! its capacity (no slot outside the group takes any of it) over its
//! slots' weight, less the charges of group slots frozen before at other
//! links, in the same order of freezing (smallest share, then lowest id).
//! Loads are updated by difference, so they may differ from a filling's by
//! rounding until the next full solve (they feed the utilization series).

use super::{Bottleneck, LinkLevels};
use crate::net::links::LinkId;
use crate::net::maxmin::{share, share_key, Demand};

/// How large a group a local solve takes on before it gives up.
const MOST_SLOTS: usize = 1024;
/// How many bottleneck links it takes on.
const MOST_LINKS: usize = 32;

/// Scratch of a local solve, kept from solve to solve.
#[derive(Clone, Debug, Default)]
pub(super) struct Local {
    /// The group: slots filled again.
    group: Vec<u32>,
    /// Per slot: whether it is in the group.
    in_group: Vec<bool>,
    /// The binding links the group's slots cross.
    links: Vec<LinkId>,
    /// Per link: whether it is in `links`.
    in_links: Vec<bool>,
    /// Per link: whether a slot outside the group crosses it.
    has_other: Vec<bool>,
    /// Per link, during the filling: residual capacity and unfrozen weight.
    residual: Vec<f64>,
    count: Vec<f64>,
    /// Per group slot (by position in `group`): the link it froze at, and
    /// its rate before.
    froze: Vec<Option<LinkId>>,
    was: Vec<f64>,
    /// Per link: the level it froze at, if it did.
    level: Vec<Option<f64>>,
    /// Per link, during a freeze: the weight frozen on it, and the links with some.
    taken: Vec<u64>,
    touched: Vec<LinkId>,
}

impl LinkLevels {
    /// Solves the changes since the last solve on the links they reach, if
    /// that gives the max-min fair allocation (see the module's doc), and
    /// returns whether it did; if not, nothing has changed.
    pub(super) fn solve_locally(&mut self) -> bool {
        if self.pairs.is_some() || !self.gather() {
            self.local_clear();
            return false;
        }
        if !self.fill_group() {
            self.local_clear();
            return false;
        }
        self.apply_group();
        self.local_clear();
        true
    }

    fn local_clear(&mut self) {
        let loc = &mut self.local;
        for &s in &loc.group {
            loc.in_group[s as usize] = false;
        }
        for &l in &loc.links {
            let l = l as usize;
            loc.in_links[l] = false;
            loc.has_other[l] = false;
            loc.level[l] = None;
        }
        loc.group.clear();
        loc.links.clear();
        loc.froze.clear();
        loc.was.clear();
    }

    /// The links of `d` that can bind.
    fn binding_links<'a>(&'a self, d: &'a Demand) -> impl Iterator<Item = LinkId> + 'a {
        d.links
            .as_slice()
            .iter()
            .copied()
            .filter(|&l| self.binds[l as usize])
    }

    /// Builds the group and its links; false if it is too large or holds a
    /// capped slot.
    fn gather(&mut self) -> bool {
        let n_links = self.capacity.len();
        let n_slots = self.demand.len();
        let loc = &mut self.local;
        if loc.in_links.len() < n_links {
            loc.in_links.resize(n_links, false);
            loc.has_other.resize(n_links, false);
            loc.residual.resize(n_links, 0.0);
            loc.count.resize(n_links, 0.0);
            loc.level.resize(n_links, None);
            loc.taken.resize(n_links, 0);
        }
        if loc.in_group.len() < n_slots {
            loc.in_group.resize(n_slots, false);
        }
        // The links the changed slots met or meet.
        let mut reached: Vec<LinkId> = Vec::new();
        for (_, d) in &self.solved {
            if d.cap.is_finite() {
                return false;
            }
            reached.extend(self.binding_links(d));
        }
        for &s in &self.pending {
            let Some(d) = &self.demand[s as usize] else {
                continue;
            };
            if d.cap.is_finite() {
                return false;
            }
            reached.extend(self.binding_links(d));
            self.local.in_group[s as usize] = true;
            self.local.group.push(s);
        }
        // Closure: a bottleneck link reached brings in all its slots, and
        // their bottleneck links in turn.
        let mut closed = 0;
        let mut next = 0;
        loop {
            while let Some(l) = reached.pop() {
                let li = l as usize;
                if self.local.in_links[li] {
                    continue;
                }
                self.local.in_links[li] = true;
                self.local.links.push(l);
                if !self.level[li].is_finite() {
                    continue;
                }
                closed += 1;
                if closed > MOST_LINKS {
                    return false;
                }
                for e in &self.on_link[li] {
                    if e.capped {
                        return false;
                    }
                    if !self.local.in_group[e.slot as usize] {
                        self.local.in_group[e.slot as usize] = true;
                        self.local.group.push(e.slot);
                    }
                }
                if self.local.group.len() > MOST_SLOTS {
                    return false;
                }
            }
            let Some(&s) = self.local.group.get(next) else {
                break;
            };
            next += 1;
            if let Some(d) = &self.demand[s as usize] {
                reached.extend(self.binding_links(d));
            }
        }
        true
    }

    /// Fills the group on what the other slots leave of its links; false
    /// if a link it freezes carries a slot outside the group.
    fn fill_group(&mut self) -> bool {
        // What the others use of each link, and the group's weight on it.
        for i in 0..self.local.links.len() {
            let l = self.local.links[i] as usize;
            let (mut other, mut has_other, mut count) = (0.0, false, 0.0);
            for e in &self.on_link[l] {
                if self.local.in_group[e.slot as usize] {
                    if self.demand[e.slot as usize].is_some() {
                        count += f64::from(e.weight);
                    }
                } else {
                    has_other = true;
                    other += self.rate(e.slot as usize) * f64::from(e.weight);
                }
            }
            let loc = &mut self.local;
            loc.has_other[l] = has_other;
            // With no other slot, `other` is 0 and this is the capacity itself.
            loc.residual[l] = self.capacity[l] - other;
            loc.count[l] = count;
        }
        let mut was = std::mem::take(&mut self.local.was);
        was.clear();
        was.extend(self.local.group.iter().map(|&s| self.rate(s as usize)));
        let loc = &mut self.local;
        loc.was = was;
        loc.froze.clear();
        loc.froze.resize(loc.group.len(), None);
        let mut left = loc
            .group
            .iter()
            .filter(|&&s| self.demand[s as usize].is_some())
            .count();
        while left > 0 {
            let Some((lvl, link)) = loc
                .links
                .iter()
                .filter(|&&l| loc.count[l as usize] > 0.0)
                .map(|&l| (share(loc.residual[l as usize], loc.count[l as usize]), l))
                .min_by_key(|&(s, l)| share_key(s, l))
            else {
                break;
            };
            if loc.has_other[link as usize] {
                return false;
            }
            loc.level[link as usize] = Some(lvl);
            // The weight frozen on each other link, charged once per link
            // (level × weight), as a full filling charges it.
            for (i, &s) in loc.group.iter().enumerate() {
                let Some(d) = self.demand[s as usize] else {
                    continue;
                };
                if loc.froze[i].is_some() || !d.links.as_slice().contains(&link) {
                    continue;
                }
                loc.froze[i] = Some(link);
                left -= 1;
                for &l in d.links.as_slice() {
                    if loc.in_links[l as usize] && l != link {
                        if loc.taken[l as usize] == 0 {
                            loc.touched.push(l);
                        }
                        loc.taken[l as usize] += u64::from(d.weight);
                    }
                }
            }
            for &l in &loc.touched {
                let l = l as usize;
                let w = std::mem::take(&mut loc.taken[l]) as f64;
                loc.residual[l] -= lvl * w;
                loc.count[l] = (loc.count[l] - w).max(0.0);
            }
            loc.touched.clear();
            loc.count[link as usize] = 0.0;
        }
        left == 0
    }

    /// Link `l`'s load less `taken`: never below 0, and exactly 0 when no
    /// slot crosses it (no rounding left over from the differences).
    fn less_load(&self, l: LinkId, taken: f64) -> f64 {
        let l = l as usize;
        if self.weight[l] == 0.0 {
            0.0
        } else {
            (self.load[l] - taken).max(0.0)
        }
    }

    /// Writes the group's filling into the solver's state and `changes`.
    fn apply_group(&mut self) {
        // Loads: what each changed slot took off its old links, and what
        // each group slot puts on its links now.
        let mut solved = std::mem::take(&mut self.solved);
        for &(s, d) in &solved {
            let was = match self.bottleneck[s as usize] {
                Bottleneck::Link(l) => self.level[l as usize],
                _ => 0.0,
            };
            let total = if was.is_finite() {
                was * f64::from(d.weight)
            } else {
                0.0
            };
            for &l in d.links.as_slice() {
                self.load[l as usize] = self.less_load(l, total);
            }
        }
        solved.clear();
        self.solved = solved;
        let loc = std::mem::take(&mut self.local);
        for (i, &s) in loc.group.iter().enumerate() {
            let Some(d) = self.demand[s as usize] else {
                continue;
            };
            let w = f64::from(d.weight);
            let was = if self.is_pending[s as usize] {
                0.0
            } else {
                loc.was[i]
            };
            let now = loc.froze[i].and_then(|l| loc.level[l as usize]).unwrap_or(0.0);
            for &l in d.links.as_slice() {
                self.load[l as usize] = self.less_load(l, was * w - now * w);
            }
        }
        // Levels: a link frozen now has its new level, a bottleneck link
        // taken in that did not freeze has none.
        let mut froze_any = false;
        for &l in &loc.links {
            let li = l as usize;
            let new = loc.level[li].unwrap_or(f64::INFINITY);
            froze_any |= new.is_finite();
            if new.to_bits() != self.level[li].to_bits() {
                self.level[li] = new;
                self.changes.links.push(l);
            }
        }
        self.changes.links.sort_unstable();
        // Bottlenecks, rows and the list entries' marks.
        for (i, &s) in loc.group.iter().enumerate() {
            let si = s as usize;
            let Some(d) = self.demand[si] else { continue };
            let b = loc.froze[i].map_or(Bottleneck::Idle, Bottleneck::Link);
            // Pending slots are reported below whatever their bottleneck.
            if self.bottleneck[si] != b {
                self.changes.slots.push(s);
            }
            self.bottleneck[si] = b;
            if let Bottleneck::Link(k) = b {
                if self.rows.row_of(si) != Some(k) {
                    self.rows.move_to(si, k, d.links.as_slice(), d.weight);
                }
            }
            for (k, &l) in d.links.as_slice().iter().enumerate() {
                if self.binds[l as usize] {
                    self.on_link[l as usize][self.at[si][k] as usize].here = b == Bottleneck::Link(l);
                }
            }
        }
        self.local = loc;
        for &s in &self.pending {
            self.is_pending[s as usize] = false;
            if self.demand[s as usize].is_none() {
                self.bottleneck[s as usize] = Bottleneck::Idle;
            }
            self.changes.slots.push(s);
        }
        self.pending.clear();
        self.changes.slots.sort_unstable();
        self.changes.slots.dedup();
        self.all_capped &= !froze_any;
        self.stats.solves += 1;
        self.stats.local_solves += 1;
        self.stats.bottlenecks_moved += self.changes.slots.len() as u64;
    }
}
