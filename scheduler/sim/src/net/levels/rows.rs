//! The slots grouped by bottleneck, as one row of weights per link
//! ([`Rows`]), for solves that freeze links instead of visiting slots.
//!
//! Row `k` holds the slots bottlenecked at link `k`: `W[k][l]` is the
//! weight of those that cross link `l` (so `W[k][k]` is the row's own
//! weight). When `k` freezes at level `λ`, a filling charges every other
//! link `l` with `λ · W[k][l]`, which is what a pass over `k`'s slots
//! charges once it sums their weights per link first; so a solve from the
//! rows is bit for bit the filling over slots, with work per nonzero of a
//! row rather than per slot. On a fabric whose ToR links bind, most slots
//! are bottlenecked at a few dozen ToR links and most events move no
//! bottleneck: NAS Sec. IV-A's first 150 jobs hold ~4,100 slots per solve
//! with ~56 links holding a bottleneck, and an existing slot changes row in
//! 55 % of the solves, 10 slots when any does.
//!
//! The rows start as a guess for a slot that arrives and are corrected by
//! the filling (`LinkLevels::adopt`). Rows are kept while no demand is
//! capped and the matrix holds none; a solve otherwise fills over slots,
//! then moves the slots whose bottleneck moved to their new rows.
//!
//! The filling from the rows is here too ([`LinkLevels::fill_rows`]).

use super::super::links::LinkId;
use super::{Bottleneck, LinkLevels};
use crate::net::maxmin::share_key;
use std::cmp::Reverse;

const NONE: u32 = u32::MAX;

/// One link's row: `(link, weight)` for each link whose weight may be
/// nonzero, read in order by a freeze, and where each link is in it
/// (allocated when the link first holds a slot).
#[derive(Clone, Debug, Default)]
struct Row {
    entries: Vec<(LinkId, u32)>,
    at: Vec<u32>,
    /// Whether some weight fell to zero since the entries were last pruned.
    dirty: bool,
}

/// Every link's row, and each slot's.
#[derive(Clone, Debug, Default)]
pub(super) struct Rows {
    links: usize,
    rows: Vec<Row>,
    /// Each row's own weight, `W[k][k]`, kept apart for a scan over links.
    own: Vec<u32>,
    /// The row of each slot (`NONE`: in no row).
    row_of: Vec<u32>,
    /// Slots with a demand that are in no row (capped, or crossing no
    /// binding link): while there is one, solves fill over slots.
    unplaced: usize,
    /// Σ weight of the slots in rows.
    total: u64,
}

impl Rows {
    /// No slots, over `links` links.
    pub(super) fn new(links: usize) -> Rows {
        Rows {
            links,
            rows: vec![Row::default(); links],
            own: vec![0; links],
            ..Rows::default()
        }
    }

    /// Whether every slot with a demand is in a row.
    pub(super) fn all_placed(&self) -> bool {
        self.unplaced == 0
    }

    /// Σ weight of the slots in rows.
    pub(super) fn total(&self) -> u64 {
        self.total
    }

    /// The row `slot` is in.
    pub(super) fn row_of(&self, slot: usize) -> Option<LinkId> {
        self.row_of.get(slot).copied().filter(|&r| r != NONE)
    }

    /// The weight of the slots in row `k` (`W[k][k]`).
    pub(super) fn own(&self, k: LinkId) -> u32 {
        self.own[k as usize]
    }

    /// A slot with a demand that no row holds arrived (`true`) or left.
    pub(super) fn unplaced(&mut self, arrived: bool) {
        if arrived {
            self.unplaced += 1;
        } else {
            self.unplaced -= 1;
        }
    }

    /// `slot`, of `weight` flows over `links`, joins row `k`.
    pub(super) fn add(&mut self, slot: usize, k: LinkId, links: &[LinkId], weight: u32) {
        if slot >= self.row_of.len() {
            self.row_of.resize(slot + 1, NONE);
        }
        self.row_of[slot] = k;
        self.total += u64::from(weight);
        self.own[k as usize] += weight;
        let n = self.links;
        let row = &mut self.rows[k as usize];
        if row.at.is_empty() {
            row.at = vec![NONE; n];
        }
        for &l in links {
            match row.at[l as usize] {
                NONE => {
                    row.at[l as usize] = row.entries.len() as u32;
                    row.entries.push((l, weight));
                }
                i => row.entries[i as usize].1 += weight,
            }
        }
    }

    /// `slot`, of `weight` flows over `links`, leaves its row (if in one).
    pub(super) fn remove(&mut self, slot: usize, links: &[LinkId], weight: u32) -> Option<LinkId> {
        let k = self.row_of(slot)?;
        self.row_of[slot] = NONE;
        self.total -= u64::from(weight);
        self.own[k as usize] -= weight;
        let row = &mut self.rows[k as usize];
        for &l in links {
            let w = &mut row.entries[row.at[l as usize] as usize].1;
            *w -= weight;
            row.dirty |= *w == 0;
        }
        Some(k)
    }

    /// `slot`, of `weight` flows over `links`, leaves its row for row `k`.
    pub(super) fn move_to(&mut self, slot: usize, k: LinkId, links: &[LinkId], weight: u32) {
        self.remove(slot, links, weight);
        self.add(slot, k, links, weight);
    }

    /// The nonzero weights of row `k`, as `(link, weight)`, in no
    /// particular order (links whose weight fell to zero are dropped).
    pub(super) fn row(&mut self, k: LinkId) -> &[(LinkId, u32)] {
        let row = &mut self.rows[k as usize];
        if std::mem::take(&mut row.dirty) {
            let at = &mut row.at;
            row.entries.retain(|&(l, w)| {
                at[l as usize] = NONE;
                w > 0
            });
            for (i, &(l, _)) in row.entries.iter().enumerate() {
                at[l as usize] = i as u32;
            }
        }
        &row.entries
    }
}

impl LinkLevels {
    /// The filling of [`LinkLevels::fill`] when every slot is in a row
    /// and none is capped: links freeze in the same order, at the same
    /// levels, charging the same sums; a link freezes its row, after
    /// taking in the slots a wrong row held ([`LinkLevels::adopt`]).
    ///
    /// Only the links that hold a row start in the heap; the others wait
    /// in order of their starting shares, and one joins the heap, at its
    /// current share, when its starting share comes up before the next
    /// link to freeze: as its entry in a single heap would come to the top
    /// and be brought up to date. Most have no flows left by then (they
    /// froze at their ToR links) and are passed over.
    pub(super) fn fill_rows(&mut self) {
        self.build_heap_of(|me, l| me.rows.own(l) > 0);
        self.order_rowless();
        self.filling = true;
        let mut left = self.rows.total();
        while left > 0 {
            let next = self.next_link();
            if self.admit_rowless(next.map(|(share, link)| share_key(share, link))) {
                continue;
            }
            let Some((share, link)) = next else { break };
            left -= u64::from(self.freeze_row(link, share));
        }
        self.filling = false;
        for &s in &self.pending {
            if let Some(k) = self.rows.row_of(s as usize) {
                self.bottleneck[s as usize] = Bottleneck::Link(k);
            }
        }
        self.stats.row_solves += 1;
    }

    /// The links with flows that hold no row, by starting share (then
    /// id), into `rowless`. From one solve to the next most of them keep
    /// their share: those stay in the last solve's order, and the few
    /// whose share changed or that joined are sorted and merged in.
    fn order_rowless(&mut self) {
        let waits =
            |me: &LinkLevels, l: usize| me.binds[l] && me.count[l] > 0.0 && me.rows.own(l as LinkId) == 0;
        let mut order = std::mem::take(&mut self.rowless);
        let mut rekeyed = std::mem::take(&mut self.rekeyed);
        rekeyed.clear();
        order.retain(|&(key, l)| {
            let li = l as usize;
            let waiting = waits(self, li);
            self.queued[li] = waiting;
            if !waiting {
                return false;
            }
            let now = share_key(self.share[li], l).0;
            if now != key {
                rekeyed.push((now, l));
            }
            now == key
        });
        for l in 0..self.bind_end {
            if !self.queued[l] && waits(self, l) {
                self.queued[l] = true;
                rekeyed.push((share_key(self.share[l], l as LinkId).0, l as LinkId));
            }
        }
        if rekeyed.is_empty() {
            self.rowless = order;
        } else {
            rekeyed.sort_unstable();
            let mut merged = std::mem::take(&mut self.merged);
            merged.clear();
            merged.reserve(order.len() + rekeyed.len());
            let (mut i, mut j) = (0, 0);
            while i < order.len() && j < rekeyed.len() {
                if order[i] < rekeyed[j] {
                    merged.push(order[i]);
                    i += 1;
                } else {
                    merged.push(rekeyed[j]);
                    j += 1;
                }
            }
            merged.extend_from_slice(&order[i..]);
            merged.extend_from_slice(&rekeyed[j..]);
            self.rowless = merged;
            self.merged = order;
        }
        self.rekeyed = rekeyed;
        self.rowless_next = 0;
    }

    /// The waiting links whose starting share comes before `next` (the
    /// key of the next link to freeze; `None`: all of them) and that
    /// still have flows join the heap at their current shares. Returns
    /// whether any did.
    fn admit_rowless(&mut self, next: Option<(u64, LinkId)>) -> bool {
        let mut admitted = false;
        while let Some(&key) = self.rowless.get(self.rowless_next) {
            if next.is_some_and(|next| key > next) {
                break;
            }
            self.rowless_next += 1;
            let l = key.1 as usize;
            if self.count[l] > 0.0 {
                self.refresh_share(l);
                self.heap.push(Reverse(share_key(self.share[l], key.1)));
                admitted = true;
            }
        }
        admitted
    }

    /// Link `link` is the bottleneck at `share`: its row freezes. Returns
    /// the row's weight.
    fn freeze_row(&mut self, link: LinkId, share: f64) -> u32 {
        let li = link as usize;
        self.new_level[li] = share;
        self.link_frozen[li] = self.epoch;
        if self.count[li] != f64::from(self.rows.own(link)) {
            self.adopt(link);
        }
        let own = self.rows.own(link);
        for &(l, w) in self.rows.row(link) {
            let l = l as usize;
            if l == li {
                continue;
            }
            let total = share * f64::from(w);
            self.load[l] += total;
            if self.binds[l] {
                self.residual[l] -= total;
                self.count[l] = (self.count[l] - f64::from(w)).max(0.0);
                self.stale[l] = true;
            }
        }
        self.residual[li] -= share * self.count[li];
        self.count[li] = 0.0;
        self.load[li] += share * f64::from(own);
        own
    }

    /// Link `link` freezes with flows that other rows hold (a slot that
    /// arrived in a guessed row, or whose bottleneck moved): every slot on
    /// it that no earlier link froze moves to its row.
    fn adopt(&mut self, link: LinkId) {
        let li = link as usize;
        let list = std::mem::take(&mut self.on_link[li]);
        for e in &list {
            let s = e.slot as usize;
            if self.rows.row_of(s) == Some(link) {
                continue;
            }
            let frozen_before = e
                .links
                .as_slice()
                .iter()
                .any(|&k| k != link && self.link_frozen[k as usize] == self.epoch);
            if !frozen_before {
                self.rows.move_to(s, link, e.links.as_slice(), e.weight);
                self.bottleneck[s] = Bottleneck::Link(link);
                self.changes.slots.push(e.slot);
                self.stats.row_moves += 1;
            }
        }
        self.on_link[li] = list;
    }

    /// After a filling over slots, the slots in rows whose bottleneck
    /// moved move to its row.
    pub(super) fn follow_into_rows(&mut self) {
        for i in 0..self.changes.slots.len() {
            let s = self.changes.slots[i] as usize;
            let (Some(k), Bottleneck::Link(l), Some(d)) =
                (self.rows.row_of(s), self.bottleneck[s], self.demand[s])
            else {
                continue;
            };
            if k != l {
                self.rows.move_to(s, l, d.links.as_slice(), d.weight);
            }
        }
    }
}
