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

use super::super::links::LinkId;

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
