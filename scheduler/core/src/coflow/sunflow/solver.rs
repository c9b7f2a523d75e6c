//! Sunflow's circuit reservations over virtual time (Huang, Sun & Ng,
//! CoNEXT'16, Sec. 4; `SunflowSolver::ReserveCircuits` in the authors'
//! simulator, github.com/sunnyxhuang/sunflow, `src/sunflowSolver.cc`).
//!
//! Input: the coflows' demands in priority order, one layer per coflow
//! (each rack pair belongs to the first coflow that has bytes on it). Time
//! starts at 0. A circuit from rack `i` to rack `j` on port `w` takes the
//! sending side `(i, w)` and the receiving side `(j, w)`.
//!
//! ```text
//! first coflow:                                     -- no subflow preempts another
//!   t = 0
//!   repeat until every pair is reserved:
//!     for (i→j, bytes) in pair order:
//!       if a port w has (i,w) and (j,w) free: reserve i→j on w for [t, t + δ + bytes/rate]
//!     t = the next end of one of its reservations; free that reservation's two sides
//!   horizon = its last end
//! each later coflow:                                -- fills the gaps the earlier left
//!   the sides' free slots before the horizon come from the reservations so far
//!   repeat:
//!     for (i→j, bytes) in pair order:
//!       w = the free port whose slot (min of both sides) lasts longest
//!       if the slot holds δ and one bit:
//!         reserve [t, min(slot end, t + δ + bytes/rate)]; what does not fit waits
//!         for a later slot (and pays δ again)
//!     if no side frees up before the horizon: stop
//!     t = when the next side frees up (reservations of earlier coflows
//!         starting by then take their sides)
//! ```
//!
//! What is not carried over from the authors' code: a circuit joins the
//! same port on both racks (theirs may join port `a` of one rack to port
//! `b` of the other), and a later coflow's freed sides get the free slot of
//! the port it chose (theirs take the first candidate's, which differs only
//! with several ports per rack).
//!
//! Pair order is (sending rack, receiving rack), whatever order a layer
//! comes in; a rack pair given twice in one layer is one pair with the
//! bytes of both.
//!
//! Cost: each pass looks only at the pairs of the racks whose sides were
//! just freed (no other pair can have become reservable), and of those
//! only at the ones reservable when their turn comes: the pending pairs of
//! a rack and the racks with a free side are bit rows
//! (`rack_set::RackRows`), and the next pair a freed rack can take is one
//! word-wise AND away. A pass costs about `racks / 64` words for each pair
//! it tries, not a walk over every pair of the freed racks.

use super::rack_set::{first_from, RackRows};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// One rack pair's bytes in a layer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PairDemand {
    /// Sending rack.
    pub src: u32,
    /// Receiving rack.
    pub dst: u32,
    /// Bytes left.
    pub bytes: f64,
}

/// A circuit reserved for `[start, end]` (seconds from the plan's start).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reserved {
    /// The layer (coflow, in priority order) it serves.
    pub layer: usize,
    /// Sending rack.
    pub src: u32,
    /// Receiving rack.
    pub dst: u32,
    /// Port on both racks.
    pub port: u32,
    /// When it is set up.
    pub start: f64,
    /// When its reservation ends (set-up + δ + the bytes it carries).
    pub end: f64,
}

/// The fabric the solver plans on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Circuits {
    /// Racks.
    pub racks: u32,
    /// Ports (wavelengths) per rack.
    pub ports: u32,
    /// Bytes per second of one circuit.
    pub rate: f64,
    /// Reconfiguration delay, seconds.
    pub delta: f64,
}

/// A plan: reservations by start time (ties in the order they were made),
/// and the horizon (the first coflow's last end; 0 if nothing is reserved).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plan {
    /// Reservations, by start.
    pub reserved: Vec<Reserved>,
    /// The end of the first coflow's reservations.
    pub horizon: f64,
}

/// Which side of a port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    Send,
    Receive,
}

impl Side {
    /// The far end's side of a circuit with this side at one end.
    fn other(self) -> Side {
        match self {
            Side::Send => Side::Receive,
            Side::Receive => Side::Send,
        }
    }
}

/// A port event in time order, ties first in first out
/// (`PortEventQueue` of the authors' code).
#[derive(Clone, Copy, Debug)]
enum Event {
    /// An earlier coflow's reservation starts on this side.
    Busy { side: Side, socket: usize },
    /// A reservation of the first coflow ends: both its sides are free.
    End { src: usize, dst: usize },
    /// One side is free until `until`.
    Idle { side: Side, socket: usize, until: f64 },
}

#[derive(Default)]
struct Queue {
    /// The events pushed before [`Queue::seal`], sorted, and how many of
    /// them have been popped: a sort of thousands of known events costs
    /// less than sifting each through the heap.
    sealed: Vec<(u64, u64)>,
    popped: usize,
    /// Whether pushes go to `sealed` until [`Queue::seal`] (a queue made
    /// by [`Queue::sealing`]); otherwise, and after, to the heap.
    collecting: bool,
    /// The events pushed since, by (time, sequence).
    heap: BinaryHeap<Reverse<(u64, u64)>>,
    events: Vec<(f64, Event)>,
}

impl Queue {
    fn push(&mut self, at: f64, e: Event) {
        let seq = self.events.len() as u64;
        self.events.push((at, e));
        // Times are finite and non-negative: their bits order as they do.
        let key = (at.max(0.0).to_bits(), seq);
        if self.collecting {
            self.sealed.push(key);
        } else {
            self.heap.push(Reverse(key));
        }
    }
    /// A queue whose first events are all pushed, then sealed, before any
    /// is read.
    fn sealing() -> Queue {
        Queue {
            collecting: true,
            ..Queue::default()
        }
    }
    /// Sorts the events pushed so far; those pushed later go through the heap.
    fn seal(&mut self) {
        debug_assert!(self.collecting, "a queue made to be sealed, sealed once");
        self.collecting = false;
        self.sealed.sort_unstable();
        self.popped = 0;
    }
    /// The first event's key, and whether it is a sealed one.
    fn first(&self) -> Option<((u64, u64), bool)> {
        let sealed = self.sealed.get(self.popped).copied();
        let pushed = self.heap.peek().map(|Reverse(k)| *k);
        match (sealed, pushed) {
            (Some(a), Some(b)) if b < a => Some((b, false)),
            (Some(a), _) => Some((a, true)),
            (None, b) => b.map(|b| (b, false)),
        }
    }
    fn peek(&self) -> Option<f64> {
        self.first().map(|((t, _), _)| f64::from_bits(t))
    }
    fn pop(&mut self) -> Option<(f64, Event)> {
        let ((_, seq), sealed) = self.first()?;
        if sealed {
            self.popped += 1;
        } else {
            self.heap.pop();
        }
        Some(self.events[seq as usize])
    }
    fn is_empty(&self) -> bool {
        self.popped == self.sealed.len() && self.heap.is_empty()
    }
}

/// Reservations for `layers` (each a coflow's pairs, in the order they are
/// tried) on `fabric`.
pub fn reserve(layers: &[Vec<PairDemand>], fabric: Circuits) -> Plan {
    let mut plan = Plan::default();
    if fabric.ports == 0 || fabric.racks == 0 || fabric.rate <= 0.0 {
        return plan;
    }
    let mut booked = Booked::new(fabric, Vec::new());
    let mut first = true;
    for (layer, demands) in layers.iter().enumerate() {
        let demands: Vec<PairDemand> = demands
            .iter()
            .copied()
            .filter(|d| d.bytes > 0.0 && d.src < fabric.racks && d.dst < fabric.racks)
            .collect();
        if demands.is_empty() {
            continue;
        }
        let made = if first {
            first_layer(layer, demands, fabric)
        } else {
            later_layer(layer, demands, fabric, &booked, plan.horizon)
        };
        if first {
            plan.horizon = made.iter().fold(0.0, |h, r| h.max(r.end));
            first = false;
        }
        booked.add(&made);
        plan.reserved.extend(made);
        // Stable: ties keep the order they were made in.
        plan.reserved.sort_by(|a, b| a.start.total_cmp(&b.start));
    }
    plan
}

/// The pairs of a layer still to reserve, indexed by rack.
struct Pending {
    demands: Vec<Option<PairDemand>>,
    /// Per sending rack, its pairs as (receiving rack, index), by receiving rack.
    index: Vec<Vec<(u32, usize)>>,
    /// Row `i`: the receiving racks of the pending pairs from rack `i`.
    to: RackRows,
    /// Row `j`: the sending racks of the pending pairs to rack `j`.
    from: RackRows,
    left: usize,
}

impl Pending {
    /// The pending pairs of `demands`; a rack pair given twice is one
    /// pair with the bytes of both.
    fn new(demands: Vec<PairDemand>, racks: u32) -> Pending {
        let mut index: Vec<Vec<(u32, usize)>> = vec![Vec::new(); racks as usize];
        let mut merged: Vec<Option<PairDemand>> = Vec::with_capacity(demands.len());
        let mut to = RackRows::new(racks as usize, racks);
        let mut from = RackRows::new(racks as usize, racks);
        for d in demands {
            let pairs = &mut index[d.src as usize];
            if to.get(d.src as usize, d.dst) {
                let twice = pairs.iter().find(|&&(dst, _)| dst == d.dst);
                if let Some(m) = twice.and_then(|&(_, k)| merged[k].as_mut()) {
                    m.bytes += d.bytes;
                }
            } else {
                pairs.push((d.dst, merged.len()));
                to.put(d.src as usize, d.dst, true);
                from.put(d.dst as usize, d.src, true);
                merged.push(Some(d));
            }
        }
        for pairs in &mut index {
            pairs.sort_unstable();
        }
        Pending {
            left: merged.len(),
            demands: merged,
            index,
            to,
            from,
        }
    }

    /// The index of pending pair `src → dst`.
    fn index_of(&self, src: u32, dst: u32) -> Option<usize> {
        let pairs = &self.index[src as usize];
        pairs
            .binary_search_by_key(&dst, |&(d, _)| d)
            .ok()
            .map(|at| pairs[at].1)
    }

    /// The first receiving rack at or after `start` of a pending pair
    /// from rack `i` that has a port free on both sides.
    fn next_from(&self, i: u32, start: u32, sides: &Sides) -> Option<u32> {
        first_from(self.to.row(i as usize), start, |word| {
            sides.partners(Side::Send, i, word)
        })
    }

    /// The first sending rack at or after `start` of a pending pair to
    /// rack `j` that has a port free on both sides.
    fn next_to(&self, j: u32, start: u32, sides: &Sides) -> Option<u32> {
        first_from(self.from.row(j as usize), start, |word| {
            sides.partners(Side::Receive, j, word)
        })
    }

    fn remove(&mut self, k: usize) {
        if let Some(d) = self.demands[k].take() {
            self.to.put(d.src as usize, d.dst, false);
            self.from.put(d.dst as usize, d.src, false);
            self.left -= 1;
        }
    }
}

/// The pairs one pass tries, in pair order: at the start every pending
/// pair; after sides free, the pending pairs from the racks whose sending
/// side freed and to those whose receiving side did (no other pair can
/// have become reservable). A pass only takes sides, so a pair that is
/// not reservable when its turn would come is passed over unseen.
enum Pass {
    /// Every pending pair: those from `rack`, from receiving rack
    /// `start` on, then those from the racks after it.
    All { rack: u32, start: u32 },
    /// The pairs from `srcs` and to `dsts`, each rack with the first
    /// partner still to try.
    Freed {
        srcs: Vec<(u32, u32)>,
        dsts: Vec<(u32, u32)>,
    },
}

impl Pass {
    /// A pass over every pending pair.
    fn all() -> Pass {
        Pass::All { rack: 0, start: 0 }
    }

    /// A pass over the pairs from `srcs` and to `dsts`.
    fn freed(srcs: &[u32], dsts: &[u32]) -> Pass {
        Pass::Freed {
            srcs: srcs.iter().map(|&i| (i, 0)).collect(),
            dsts: dsts.iter().map(|&j| (j, 0)).collect(),
        }
    }

    /// The next pair to try: the first in pair order, after those tried,
    /// that is pending and has a port free on both sides.
    fn next(&mut self, pending: &Pending, sides: &Sides) -> Option<usize> {
        match self {
            // Pairs come in sending-rack order: a rack is done with once
            // none of its pairs is reservable (none becomes so in a pass).
            Pass::All { rack, start } => {
                while (*rack as usize) < pending.index.len() {
                    if let Some(j) = pending.next_from(*rack, *start, sides) {
                        *start = j + 1;
                        return pending.index_of(*rack, j);
                    }
                    (*rack, *start) = (*rack + 1, 0);
                }
                None
            }
            Pass::Freed { srcs, dsts } => {
                let from = srcs
                    .iter()
                    .filter_map(|&(i, start)| Some((i, pending.next_from(i, start, sides)?)));
                let to = dsts
                    .iter()
                    .filter_map(|&(j, start)| Some((pending.next_to(j, start, sides)?, j)));
                let (i, j) = from.chain(to).min()?;
                // Tried: the streams of its two racks move past it.
                for (_, start) in srcs.iter_mut().filter(|(rack, _)| *rack == i) {
                    *start = (*start).max(j + 1);
                }
                for (_, start) in dsts.iter_mut().filter(|(rack, _)| *rack == j) {
                    *start = (*start).max(i + 1);
                }
                pending.index_of(i, j)
            }
        }
    }
}

/// A value per port side: the sending and the receiving side of each
/// socket, indexed `port · racks + rack`.
struct PerSide<T> {
    racks: u32,
    ports: u32,
    send: Vec<T>,
    receive: Vec<T>,
}

impl<T: Clone> PerSide<T> {
    fn new(f: Circuits, init: T) -> PerSide<T> {
        let n = (f.racks * f.ports) as usize;
        PerSide {
            racks: f.racks,
            ports: f.ports,
            send: vec![init.clone(); n],
            receive: vec![init; n],
        }
    }
}

impl<T> PerSide<T> {
    fn socket(&self, rack: u32, port: u32) -> usize {
        (port * self.racks + rack) as usize
    }
    fn rack_of(&self, socket: usize) -> u32 {
        (socket as u32) % self.racks
    }
    fn side(&self, side: Side) -> &[T] {
        match side {
            Side::Send => &self.send,
            Side::Receive => &self.receive,
        }
    }
    fn side_mut(&mut self, side: Side) -> &mut Vec<T> {
        match side {
            Side::Send => &mut self.send,
            Side::Receive => &mut self.receive,
        }
    }
}

/// Which sides are busy, also kept per port as rows of the racks whose
/// side is free (for [`Pending::next_from`] and [`Pending::next_to`]).
struct Sides {
    busy: PerSide<bool>,
    /// By side (`Side as usize`): row `w` holds the racks whose side of
    /// port `w` is free.
    free: [RackRows; 2],
}

impl Sides {
    /// Every side free.
    fn new(f: Circuits) -> Sides {
        let mut free = RackRows::new(f.ports as usize, f.racks);
        for w in 0..f.ports as usize {
            for r in 0..f.racks {
                free.put(w, r, true);
            }
        }
        Sides {
            busy: PerSide::new(f, false),
            free: [free.clone(), free],
        }
    }
    fn socket(&self, rack: u32, port: u32) -> usize {
        self.busy.socket(rack, port)
    }
    fn rack_of(&self, socket: usize) -> u32 {
        self.busy.rack_of(socket)
    }
    /// Marks `side` of `socket` busy or free.
    fn set(&mut self, side: Side, socket: usize, busy: bool) {
        self.busy.side_mut(side)[socket] = busy;
        let racks = self.busy.racks as usize;
        let (port, rack) = (socket / racks, (socket % racks) as u32);
        self.free[side as usize].put(port, rack, !busy);
    }
    /// Word `word` of the racks that can be the far end of a circuit whose
    /// `side` end is `rack`: those whose other side is free on a port where
    /// `rack`'s `side` is free.
    fn partners(&self, side: Side, rack: u32, word: usize) -> u64 {
        let own = self.busy.side(side);
        let far = &self.free[side.other() as usize];
        (0..self.busy.ports)
            .filter(|&w| !own[self.socket(rack, w)])
            .fold(0, |m, w| m | far.row(w as usize)[word])
    }
    /// Takes `(i, w)` sending and `(j, w)` receiving; returns their sockets.
    fn take(&mut self, i: u32, j: u32, w: u32) -> (usize, usize) {
        let (s, r) = (self.socket(i, w), self.socket(j, w));
        self.set(Side::Send, s, true);
        self.set(Side::Receive, r, true);
        (s, r)
    }
    /// Ports with both `(i, w)` sending and `(j, w)` receiving free.
    fn free(&self, i: u32, j: u32) -> impl Iterator<Item = u32> + '_ {
        let b = &self.busy;
        (0..b.ports).filter(move |&w| !b.send[b.socket(i, w)] && !b.receive[b.socket(j, w)])
    }
}

fn first_layer(layer: usize, demands: Vec<PairDemand>, f: Circuits) -> Vec<Reserved> {
    let mut pending = Pending::new(demands, f.racks);
    let mut sides = Sides::new(f);
    let mut ends = Queue::default();
    let mut made = Vec::new();
    let mut t = 0.0;
    let mut pass = Pass::all();
    loop {
        while let Some(k) = pass.next(&pending, &sides) {
            let Some(d) = pending.demands[k] else { continue };
            let Some(w) = sides.free(d.src, d.dst).next() else {
                continue;
            };
            let (s, r) = sides.take(d.src, d.dst, w);
            let end = t + f.delta + d.bytes / f.rate;
            made.push(Reserved {
                layer,
                src: d.src,
                dst: d.dst,
                port: w,
                start: t,
                end,
            });
            ends.push(end, Event::End { src: s, dst: r });
            pending.remove(k);
        }
        if pending.left == 0 {
            return made;
        }
        // The next reservation to end frees its two sides.
        let Some((at, Event::End { src, dst })) = ends.pop() else {
            return made;
        };
        t = at;
        sides.set(Side::Send, src, false);
        sides.set(Side::Receive, dst, false);
        let (i, j) = (sides.rack_of(src), sides.rack_of(dst));
        pass = Pass::freed(&[i], &[j]);
    }
}

/// The reservations so far on each side, as (start, end).
type Booked = PerSide<Vec<(f64, f64)>>;

impl Booked {
    fn add(&mut self, made: &[Reserved]) {
        for r in made {
            let (s, d) = (self.socket(r.src, r.port), self.socket(r.dst, r.port));
            self.send[s].push((r.start, r.end));
            self.receive[d].push((r.start, r.end));
        }
    }

    /// The events of the sides a layer with `demands` can use, before
    /// `horizon` (`BuildPortFreeUpsFromReservations`, for those sides
    /// only: no other side changes what the layer can reserve): each
    /// earlier reservation is a `Busy` event at its start, each gap an
    /// `Idle` one.
    fn events(&self, demands: &[PairDemand], horizon: f64) -> Queue {
        let sockets = |racks: &mut Vec<u32>| {
            racks.sort_unstable();
            racks.dedup();
            racks
                .iter()
                .flat_map(|&r| (0..self.ports).map(move |w| self.socket(r, w)))
                .collect::<Vec<usize>>()
        };
        let send = sockets(&mut demands.iter().map(|d| d.src).collect());
        let receive = sockets(&mut demands.iter().map(|d| d.dst).collect());
        let mut queue = Queue::sealing();
        let mut idle = Vec::new();
        for (side, sockets, booked) in [
            (Side::Send, &send, &self.send),
            (Side::Receive, &receive, &self.receive),
        ] {
            for &socket in sockets {
                let mut spans = booked[socket].clone();
                spans.sort_by(|a, b| a.0.total_cmp(&b.0));
                let mut slots: Vec<(f64, f64)> = Vec::new();
                for (start, end) in spans {
                    queue.push(start, Event::Busy { side, socket });
                    match slots.last_mut() {
                        None => {
                            if start > 0.0 {
                                slots.push((0.0, start));
                            }
                            slots.push((end, horizon));
                        }
                        Some(last) if last.0 >= start => last.0 = end,
                        Some(last) => {
                            last.1 = start;
                            slots.push((end, horizon));
                        }
                    }
                }
                idle.extend(
                    slots
                        .into_iter()
                        .filter(|(from, until)| until > from)
                        .map(|(from, until)| (from, Event::Idle { side, socket, until })),
                );
            }
        }
        // Busy events first: at equal times they come before the gaps.
        for (at, e) in idle {
            queue.push(at, e);
        }
        queue.seal();
        queue
    }
}

fn later_layer(
    layer: usize,
    demands: Vec<PairDemand>,
    f: Circuits,
    booked: &Booked,
    horizon: f64,
) -> Vec<Reserved> {
    let mut events = booked.events(&demands, horizon);
    let mut pending = Pending::new(demands, f.racks);
    let mut sides = Sides::new(f);
    // Until when each side is free (`horizon` where no earlier reservation limits it).
    let mut free_until = PerSide::new(f, horizon);
    let apply = |e: Event, sides: &mut Sides, free_until: &mut PerSide<f64>| match e {
        Event::Busy { side, socket } => sides.set(side, socket, true),
        Event::End { .. } => {}
        Event::Idle { side, socket, until } => {
            sides.set(side, socket, false);
            free_until.side_mut(side)[socket] = until;
        }
    };
    while events.peek() == Some(0.0) {
        if let Some((_, e)) = events.pop() {
            apply(e, &mut sides, &mut free_until);
        }
    }
    let one_bit = 1.0 / (8.0 * f.rate);
    let mut made = Vec::new();
    let mut t = 0.0;
    let mut pass = Pass::all();
    loop {
        while let Some(k) = pass.next(&pending, &sides) {
            let Some(d) = pending.demands[k] else { continue };
            // The port whose slot lasts longest (the first of equals).
            let mut best: Option<(u32, f64)> = None;
            for w in sides.free(d.src, d.dst) {
                let until =
                    free_until.send[sides.socket(d.src, w)].min(free_until.receive[sides.socket(d.dst, w)]);
                if best.is_none_or(|(_, b)| until > b) {
                    best = Some((w, until));
                }
            }
            let Some((w, feasible)) = best else { continue };
            let least = t + f.delta + one_bit;
            if feasible < least {
                continue; // too short a slot
            }
            let desired = t + f.delta + d.bytes / f.rate;
            let until = feasible.min(desired);
            let (s, r) = sides.take(d.src, d.dst, w);
            made.push(Reserved {
                layer,
                src: d.src,
                dst: d.dst,
                port: w,
                start: t,
                end: until,
            });
            for (side, socket) in [(Side::Send, s), (Side::Receive, r)] {
                let slot_end = free_until.side_mut(side)[socket];
                if until < slot_end {
                    events.push(
                        until,
                        Event::Idle {
                            side,
                            socket,
                            until: slot_end,
                        },
                    );
                }
            }
            let rest = (desired - until) * f.rate;
            if rest <= 0.0 {
                pending.remove(k);
            } else if let Some(p) = pending.demands[k].as_mut() {
                p.bytes = rest;
            }
        }
        if events.is_empty() || pending.left == 0 {
            return made;
        }
        // Up to the first side that frees, and everything at that time.
        let (mut freed_src, mut freed_dst) = (Vec::new(), Vec::new());
        let mut idle_seen = false;
        while let Some(at) = events.peek() {
            if idle_seen && at != t {
                break;
            }
            let Some((at, e)) = events.pop() else { break };
            if let Event::Idle { side, socket, .. } = e {
                t = at;
                idle_seen = true;
                match side {
                    Side::Send => freed_src.push(sides.rack_of(socket)),
                    Side::Receive => freed_dst.push(sides.rack_of(socket)),
                }
            }
            apply(e, &mut sides, &mut free_until);
        }
        pass = Pass::freed(&freed_src, &freed_dst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const F: Circuits = Circuits {
        racks: 4,
        ports: 1,
        rate: 1.0e6, // 1 MB/s
        delta: 0.01,
    };

    fn d(src: u32, dst: u32, mb: f64) -> PairDemand {
        PairDemand {
            src,
            dst,
            bytes: mb * 1e6,
        }
    }

    fn spans(p: &Plan) -> Vec<(usize, u32, u32, f64, f64)> {
        p.reserved
            .iter()
            .map(|r| {
                let ms = |x: f64| (x * 1e3).round() / 1e3;
                (r.layer, r.src, r.dst, ms(r.start), ms(r.end))
            })
            .collect()
    }

    #[test]
    fn the_first_coflow_reserves_greedily_and_never_preempts_itself() {
        // 0→1 (1 MB) and 2→1 (2 MB) both need rack 1's receiving side; 0→3
        // (3 MB) needs rack 0's sending side after 0→1. Pair order: 0→1,
        // 0→3, 2→1. At 0: 0→1 on [0, 1.01]. At 1.01 the sides of 0→1 free:
        // 0→3 on [1.01, 4.02], then 2→1 on [1.01, 3.02].
        let p = reserve(&[vec![d(0, 1, 1.0), d(0, 3, 3.0), d(2, 1, 2.0)]], F);
        assert_eq!(
            spans(&p),
            vec![(0, 0, 1, 0.0, 1.01), (0, 0, 3, 1.01, 4.02), (0, 2, 1, 1.01, 3.02)]
        );
        assert!((p.horizon - 4.02).abs() < 1e-9);
    }

    #[test]
    fn a_later_coflow_fills_the_gaps_before_the_horizon_only() {
        // Coflow A: 0→1, 5 MB: [0, 5.01]; horizon 5.01. Coflow B: 2→1
        // (1 MB) waits for rack 1 until 5.01, past the horizon: nothing.
        // 2→3 (1 MB) has free sides: [0, 1.01]. 0→3 (10 MB) gets no slot
        // (rack 0 sends until the horizon).
        let p = reserve(
            &[
                vec![d(0, 1, 5.0)],
                vec![d(0, 3, 10.0), d(2, 1, 1.0), d(2, 3, 1.0)],
            ],
            F,
        );
        assert_eq!(spans(&p), vec![(0, 0, 1, 0.0, 5.01), (1, 2, 3, 0.0, 1.01)]);
    }

    #[test]
    fn a_later_coflow_split_over_gaps_pays_delta_again() {
        // A: 0→1 (1 MB) then 0→2 (1 MB) once rack 0 is free: 0→1 [0, 1.01],
        // 0→2 [1.01, 2.02]; horizon 2.02. Rack 3→2 is free until 1.01 (then
        // 0→2 takes rack 2's receiving side... no: 0→2 receives on rack 2
        // from 1.01), so B's 3→2 (1.5 MB) gets [0, 1.01] = δ + 1 MB, and
        // the 0.5 MB left waits for rack 2, free again at 2.02 = the
        // horizon: no slot left.
        let p = reserve(&[vec![d(0, 1, 1.0), d(0, 2, 1.0)], vec![d(3, 2, 1.5)]], F);
        assert_eq!(
            spans(&p),
            vec![(0, 0, 1, 0.0, 1.01), (1, 3, 2, 0.0, 1.01), (0, 0, 2, 1.01, 2.02)]
        );
        // With a later horizon the rest gets the gap after 0→2, δ again:
        // A also has 1→0 (3 MB): horizon 3.01; B's 0.5 MB goes on
        // [2.02, 2.53] (δ + 0.5 MB).
        let p = reserve(
            &[vec![d(0, 1, 1.0), d(0, 2, 1.0), d(1, 0, 3.0)], vec![d(3, 2, 1.5)]],
            F,
        );
        let b: Vec<_> = spans(&p).into_iter().filter(|s| s.0 == 1).collect();
        assert_eq!(b, vec![(1, 3, 2, 0.0, 1.01), (1, 3, 2, 2.02, 2.53)]);
    }

    #[test]
    fn pairs_are_tried_in_pair_order_and_a_pair_given_twice_is_one() {
        // The first test's layer, shuffled: 2→1 (given first) still waits
        // for 0→1, as pair order puts 0→1 first.
        let sorted = reserve(&[vec![d(0, 1, 1.0), d(0, 3, 3.0), d(2, 1, 2.0)]], F);
        let shuffled = reserve(&[vec![d(2, 1, 2.0), d(0, 3, 3.0), d(0, 1, 1.0)]], F);
        assert_eq!(shuffled, sorted);
        // 0→1 given as 1 MB and 0.5 MB: one reservation of δ + 1.5 MB.
        let twice = reserve(&[vec![d(0, 1, 1.0), d(3, 2, 1.0), d(0, 1, 0.5)]], F);
        assert_eq!(spans(&twice), vec![(0, 0, 1, 0.0, 1.51), (0, 3, 2, 0.0, 1.01)]);
    }

    #[test]
    fn a_sealed_queue_pops_by_time_then_push_order() {
        let end = |src| Event::End { src, dst: 0 };
        let mut q = Queue::sealing();
        for (at, src) in [(2.0, 0), (1.0, 1), (2.0, 2), (0.5, 3)] {
            q.push(at, end(src));
        }
        q.seal();
        for (at, src) in [(1.0, 4), (3.0, 5), (0.5, 6)] {
            q.push(at, end(src));
        }
        let mut order = Vec::new();
        while let Some((at, Event::End { src, .. })) = q.pop() {
            order.push((at, src));
        }
        assert!(q.is_empty());
        assert_eq!(
            order,
            vec![
                (0.5, 3),
                (0.5, 6),
                (1.0, 1),
                (1.0, 4),
                (2.0, 0),
                (2.0, 2),
                (3.0, 5)
            ]
        );
    }

    #[test]
    fn several_ports_carry_several_circuits_of_one_rack() {
        let f = Circuits { ports: 2, ..F };
        let p = reserve(&[vec![d(0, 1, 1.0), d(0, 2, 1.0), d(0, 3, 1.0)]], f);
        // Two at once on ports 0 and 1, the third when the first ends.
        let ports: Vec<(u32, u32, f64)> = p
            .reserved
            .iter()
            .map(|r| (r.dst, r.port, (r.start * 1e3).round() / 1e3))
            .collect();
        assert_eq!(ports, vec![(1, 0, 0.0), (2, 1, 0.0), (3, 0, 1.01)]);
    }
}
