//! A reduce attempt's shuffle bookkeeping: which maps' partitions it holds,
//! and per source host how many wait to be fetched and the flow in flight.
//!
//! The maps themselves are not listed per reduce. A job keeps one list per
//! host of the maps whose output lives there, in the order they finished
//! ([`super::JobState`]'s `done_on`); what a reduce still lacks from a host
//! is the entries of that list it does not hold. A reduce of a job with
//! 17,000 maps on 600 hosts thus holds a 2 KB bitmap and a few words per
//! source host, not 68 KB of map ids.

use crate::model::coflow::FlowId;
use crate::{Bytes, HostId};
use std::ops::Range;

/// A set of hosts, as a bitmap over their places in host order (rack by
/// rack): adding or removing one touches one word, and the i-th host in
/// order is found by counting bits. A reduce of a wide job has hundreds
/// of ready hosts and one joins or leaves at every fetch, which a sorted
/// vector paid for with a search and a shift.
#[derive(Clone, Debug, Default)]
pub(crate) struct HostSet {
    hosts_per_rack: usize,
    words: Vec<u64>,
    len: usize,
}

impl HostSet {
    /// An empty set of hosts of racks of `hosts_per_rack` hosts.
    pub(crate) fn new(hosts_per_rack: u32) -> HostSet {
        HostSet {
            hosts_per_rack: (hosts_per_rack as usize).max(1),
            ..HostSet::default()
        }
    }

    fn place(&self, h: HostId) -> usize {
        h.rack as usize * self.hosts_per_rack + h.host as usize
    }

    fn host(&self, place: usize) -> HostId {
        HostId::new(
            (place / self.hosts_per_rack) as u32,
            (place % self.hosts_per_rack) as u32,
        )
    }

    /// Adds `h` (no-op if present).
    pub(crate) fn insert(&mut self, h: HostId) {
        let p = self.place(h);
        if p / 64 >= self.words.len() {
            self.words.resize(p / 64 + 1, 0);
        }
        let w = &mut self.words[p / 64];
        if *w & (1 << (p % 64)) == 0 {
            *w |= 1 << (p % 64);
            self.len += 1;
        }
    }

    /// Removes `h` (no-op if absent).
    pub(crate) fn remove(&mut self, h: HostId) {
        let p = self.place(h);
        if let Some(w) = self.words.get_mut(p / 64) {
            if *w & (1 << (p % 64)) != 0 {
                *w &= !(1 << (p % 64));
                self.len -= 1;
            }
        }
    }

    /// How many hosts it holds.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds none.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The `n`-th host in host order (from 0).
    pub(crate) fn nth(&self, mut n: usize) -> Option<HostId> {
        for (i, &w) in self.words.iter().enumerate() {
            let ones = w.count_ones() as usize;
            if n < ones {
                let mut w = w;
                for _ in 0..n {
                    w &= w - 1;
                }
                return Some(self.host(i * 64 + w.trailing_zeros() as usize));
            }
            n -= ones;
        }
        None
    }

    /// The hosts in host order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = HostId> + '_ {
        self.words.iter().enumerate().flat_map(move |(i, &w)| {
            let mut w = w;
            std::iter::from_fn(move || {
                (w != 0).then(|| {
                    let bit = w.trailing_zeros() as usize;
                    w &= w - 1;
                    self.host(i * 64 + bit)
                })
            })
        })
    }
}

/// The maps of a job done on one host, and the host's index among the
/// job's map hosts (in the order they first had a map done; a host keeps
/// its index for the job's life): a reduce's [`Fetch`] keeps its state
/// per source host in a vector at that index.
#[derive(Clone, Debug, Default)]
pub(crate) struct DoneOn {
    pub(crate) ix: u32,
    /// The maps, in the order they finished.
    pub(crate) maps: Vec<u32>,
}

/// What a reduce attempt waits for from one source host. 20 bytes, in
/// 4-byte words: a wide job's shuffle keeps millions.
#[derive(Clone, Copy, Debug)]
struct Source {
    /// Every entry of the host's list before this index is held (a scan
    /// for what to fetch starts here).
    from: u32,
    /// Maps delivered to wait on the host that no flow carries yet.
    waiting: u32,
    /// The end of the host's list when the flow in flight started: it
    /// carries the entries in `from..end` not held.
    end: u32,
    /// The flow in flight from the host, as the low and high halves of
    /// its id ([`Source::IDLE`] when none).
    flow: [u32; 2],
}

impl Default for Source {
    fn default() -> Source {
        Source {
            from: 0,
            waiting: 0,
            end: 0,
            flow: Source::IDLE,
        }
    }
}

impl Source {
    /// No flow in flight (no flow has the id `u64::MAX`).
    const IDLE: [u32; 2] = [u32::MAX; 2];

    /// The flow in flight and the end of the list when it started.
    fn inflight(&self) -> Option<(FlowId, u32)> {
        (self.flow != Source::IDLE).then(|| {
            (
                FlowId(u64::from(self.flow[0]) | u64::from(self.flow[1]) << 32),
                self.end,
            )
        })
    }

    fn is_idle(&self) -> bool {
        self.flow == Source::IDLE
    }

    /// Flow `flow` is in flight, started when the list was `end` long.
    fn set_inflight(&mut self, flow: FlowId, end: u32) {
        self.flow = [flow.0 as u32, (flow.0 >> 32) as u32];
        self.end = end;
    }

    /// No flow is in flight any more; the one that was, if any.
    fn take_inflight(&mut self) -> Option<(FlowId, u32)> {
        let was = self.inflight();
        self.flow = Source::IDLE;
        was
    }
}

/// A reduce attempt's shuffle bookkeeping.
#[derive(Clone, Debug, Default)]
pub(crate) struct Fetch {
    /// Bit m set: map m's partition has arrived (or was empty, or local).
    fetched: Vec<u64>,
    fetched_count: u32,
    /// Per source host, at its [`DoneOn::ix`]: what waits there and the
    /// flow in flight. At most one flow per source host is in flight
    /// (Hadoop's fetcher takes all outputs ready on a host in one
    /// connection). A vector, not a map: a wide job's reduce waits on
    /// every one of hundreds of hosts at once, and 20 bytes a host is what
    /// the shuffle of a 3,858-reduce job on 600 hosts costs.
    sources: Vec<Source>,
    /// Flows in flight (the count of `sources` with one).
    inflight: usize,
    /// The hosts with maps waiting and no flow in flight: where a free
    /// fetcher may start. A reduce of a wide job has hundreds, and one is
    /// drawn at every fetch's end, so they are kept rather than found.
    ready: HostSet,
    /// How many random draws of source hosts this attempt made (seeds the next).
    pub(crate) draws: u32,
    pub(crate) bytes_fetched: Bytes,
}

impl Fetch {
    /// Nothing held yet of a job of `maps` maps, on racks of
    /// `hosts_per_rack` hosts.
    pub(crate) fn new(maps: u32, hosts_per_rack: u32) -> Fetch {
        Fetch {
            fetched: vec![0; (maps as usize).div_ceil(64)],
            ready: HostSet::new(hosts_per_rack),
            ..Fetch::default()
        }
    }

    /// Room for the state of `hosts` source hosts (a job's map hosts so
    /// far), without the slack of growing one by one.
    pub(crate) fn reserve_hosts(&mut self, hosts: usize) {
        self.sources
            .reserve_exact(hosts.saturating_sub(self.sources.len()));
    }

    /// Whether map `m`'s partition is here.
    pub(crate) fn has(&self, m: u32) -> bool {
        self.fetched[(m / 64) as usize] & (1 << (m % 64)) != 0
    }

    /// Map `m`'s partition is here.
    pub(crate) fn set(&mut self, m: u32) {
        if !self.has(m) {
            self.fetched[(m / 64) as usize] |= 1 << (m % 64);
            self.fetched_count += 1;
        }
    }

    /// How many maps' partitions are here.
    pub(crate) fn fetched_count(&self) -> u32 {
        self.fetched_count
    }

    /// Map `m`'s partition of `bytes` lives on `src` (whose index among
    /// the job's map hosts is `ix`), and this attempt runs on `host`: here
    /// at once if empty or on its own host, else it waits on `src`.
    /// Returns the bytes that are here at once (none if it was already held).
    pub(crate) fn note(&mut self, m: u32, bytes: Bytes, src: HostId, ix: u32, host: HostId) -> Bytes {
        if self.has(m) {
            return Bytes(0);
        }
        if bytes.0 == 0 || src == host {
            self.set(m);
            self.bytes_fetched += bytes;
            bytes
        } else {
            self.wait_for(src, ix);
            Bytes(0)
        }
    }

    /// The state of the source host at index `ix`, made if need be.
    fn source_mut(&mut self, ix: u32) -> &mut Source {
        let i = ix as usize;
        if i >= self.sources.len() {
            self.sources.resize(i + 1, Source::default());
        }
        &mut self.sources[i]
    }

    /// The state of the source host at index `ix`, if one was ever made.
    fn source(&self, ix: u32) -> Option<&Source> {
        self.sources.get(ix as usize)
    }

    /// One more map's partition waits on `host`, at index `ix` (the map
    /// is on the host's list and not held).
    fn wait_for(&mut self, host: HostId, ix: u32) {
        let s = self.source_mut(ix);
        s.waiting += 1;
        if s.waiting == 1 && s.is_idle() {
            self.ready.insert(host);
        }
    }

    /// Hosts with partitions waiting and no flow in flight.
    pub(crate) fn ready(&self) -> &HostSet {
        &self.ready
    }

    /// Fetch flows in flight.
    pub(crate) fn inflight_len(&self) -> usize {
        self.inflight
    }

    /// The flows in flight.
    pub(crate) fn inflight_flows(&self) -> impl Iterator<Item = FlowId> + '_ {
        self.sources.iter().filter_map(|s| s.inflight().map(|(f, _)| f))
    }

    /// The maps a flow from the host of `on` (the job's maps done there)
    /// would fetch now: those not held. `None` if a flow from it is in
    /// flight or nothing waits there.
    pub(crate) fn to_fetch<'a>(&'a self, on: &'a DoneOn) -> Option<impl Iterator<Item = u32> + 'a> {
        let s = self.source(on.ix).filter(|s| s.is_idle() && s.waiting > 0)?;
        Some(self.missing(&on.maps, s.from..on.maps.len() as u32))
    }

    /// Flow `flow` fetches the maps waiting on `host`, at index `ix`,
    /// whose list is `len` long now ([`Fetch::to_fetch`]).
    pub(crate) fn start(&mut self, host: HostId, ix: u32, flow: FlowId, len: usize) {
        let Some(s) = self.sources.get_mut(ix as usize) else {
            return;
        };
        let was_idle = s.is_idle();
        s.waiting = 0;
        s.set_inflight(flow, len as u32);
        if was_idle {
            self.inflight += 1;
        }
        self.unready(host);
    }

    /// The flow in flight from the host of `on` (the job's maps done
    /// there), if any, and the maps it carries.
    pub(crate) fn in_flight_from<'a>(
        &'a self,
        on: &'a DoneOn,
    ) -> Option<(FlowId, impl Iterator<Item = u32> + 'a)> {
        let s = self.source(on.ix)?;
        let (flow, end) = s.inflight()?;
        Some((flow, self.missing(&on.maps, s.from..end)))
    }

    /// The flow from `host`, whose maps are `on`, ended, carrying the
    /// partitions of the maps it was started for: they are here now.
    /// Partitions that arrived on `host` meanwhile become ready to fetch.
    /// False if no flow from `host` was in flight.
    pub(crate) fn finish(&mut self, host: HostId, on: &DoneOn) -> bool {
        let list = &on.maps;
        let Some(s) = self.sources.get_mut(on.ix as usize) else {
            return false;
        };
        let Some((_, end)) = s.take_inflight() else {
            return false;
        };
        let range = s.from..end.min(list.len() as u32);
        s.from = range.end;
        let waiting = s.waiting;
        self.inflight -= 1;
        if waiting > 0 {
            self.ready.insert(host);
        }
        for i in range {
            self.set(list[i as usize]);
        }
        true
    }

    /// `host`, at index `ix`, is gone: nothing more is fetched from it;
    /// the flow that was in flight from it, if any.
    pub(crate) fn forget(&mut self, host: HostId, ix: u32) -> Option<FlowId> {
        let s = std::mem::take(self.sources.get_mut(ix as usize)?);
        self.unready(host);
        let (flow, _) = s.inflight()?;
        self.inflight -= 1;
        Some(flow)
    }

    /// The maps of `list[range]` not held.
    fn missing<'a>(&'a self, list: &'a [u32], range: Range<u32>) -> impl Iterator<Item = u32> + 'a {
        let end = (range.end as usize).min(list.len());
        let start = (range.start as usize).min(end);
        list[start..end].iter().copied().filter(|&m| !self.has(m))
    }

    fn unready(&mut self, host: HostId) {
        self.ready.remove(host);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(i: u32) -> HostId {
        HostId { rack: 0, host: i }
    }

    fn ready(f: &Fetch) -> Vec<HostId> {
        f.ready().iter().collect()
    }

    #[test]
    fn a_host_set_lists_and_counts_its_hosts_in_host_order() {
        let mut set = HostSet::new(20);
        let hosts = [
            HostId::new(29, 19),
            HostId::new(0, 3),
            HostId::new(3, 7),
            HostId::new(3, 4),
        ];
        for h in hosts {
            set.insert(h);
            set.insert(h);
        }
        let mut sorted = hosts.to_vec();
        sorted.sort();
        assert_eq!(set.iter().collect::<Vec<_>>(), sorted);
        assert_eq!(set.len(), 4);
        for (i, h) in sorted.iter().enumerate() {
            assert_eq!(set.nth(i), Some(*h));
        }
        assert_eq!(set.nth(4), None);
        set.remove(HostId::new(3, 7));
        set.remove(HostId::new(3, 7));
        set.remove(HostId::new(40, 0));
        assert_eq!(set.len(), 3);
        assert_eq!(set.nth(2), Some(HostId::new(29, 19)));
    }

    /// The maps done on host `h(i)`, at index `i`.
    fn on(i: u32, maps: &[u32]) -> DoneOn {
        DoneOn {
            ix: i,
            maps: maps.to_vec(),
        }
    }

    #[test]
    fn a_flow_carries_what_waits_and_what_arrives_meanwhile_waits_for_the_next() {
        let mut f = Fetch::new(8, 8);
        // Maps 3 and 5 done on host 1; map 0 was local (held at once).
        let mut list = on(1, &[3, 0, 5]);
        f.set(0);
        f.wait_for(h(1), 1);
        f.wait_for(h(1), 1);
        assert_eq!(ready(&f), [h(1)]);
        let carried: Vec<u32> = f.to_fetch(&list).expect("waiting").collect();
        assert_eq!(carried, vec![3, 5]);
        f.start(h(1), 1, FlowId(7), list.maps.len());
        assert!(f.ready().is_empty());
        assert!(f.to_fetch(&list).is_none(), "one flow per host at a time");
        // Map 6 finishes on host 1 while the flow is in flight.
        list.maps.push(6);
        f.wait_for(h(1), 1);
        assert!(f.ready().is_empty());
        let (flow, maps) = f.in_flight_from(&list).expect("in flight");
        assert_eq!((flow, maps.collect::<Vec<_>>()), (FlowId(7), vec![3, 5]));
        assert!(f.finish(h(1), &list));
        assert!(f.has(3) && f.has(5) && !f.has(6));
        assert_eq!(f.fetched_count(), 3);
        assert_eq!(ready(&f), [h(1)]);
        let next: Vec<u32> = f.to_fetch(&list).expect("map 6 waits").collect();
        assert_eq!(next, vec![6]);
        f.start(h(1), 1, FlowId(8), list.maps.len());
        assert!(f.finish(h(1), &list));
        assert_eq!(f.fetched_count(), 4);
        assert!(f.ready().is_empty());
        assert!(f.to_fetch(&list).is_none(), "nothing waits");
        assert_eq!(f.inflight_len(), 0);
        assert!(!f.finish(h(1), &list), "no flow in flight any more");
    }

    #[test]
    fn a_source_keeps_a_flow_id_of_any_size_in_20_bytes() {
        assert_eq!(std::mem::size_of::<Source>(), 20);
        let mut f = Fetch::new(2, 8);
        let list = on(1, &[0, 1]);
        f.wait_for(h(1), 1);
        f.wait_for(h(1), 1);
        let wide = FlowId((7 << 32) | 5);
        f.start(h(1), 1, wide, list.maps.len());
        assert_eq!(f.inflight_flows().collect::<Vec<_>>(), [wide]);
        assert_eq!(f.in_flight_from(&list).map(|(flow, _)| flow), Some(wide));
        assert_eq!(f.forget(h(1), 1), Some(wide));
        assert_eq!(f.inflight_len(), 0);
    }

    #[test]
    fn a_partition_on_its_own_host_or_empty_is_here_at_once_and_others_wait() {
        let mut f = Fetch::new(4, 8);
        assert_eq!(f.note(0, Bytes(500), h(1), 1, h(1)), Bytes(500), "local");
        assert_eq!(f.note(1, Bytes(0), h(2), 2, h(1)), Bytes(0), "empty");
        assert_eq!(f.note(2, Bytes(700), h(2), 2, h(1)), Bytes(0), "remote");
        assert_eq!(f.note(0, Bytes(500), h(1), 1, h(1)), Bytes(0), "held already");
        assert!(f.has(0) && f.has(1) && !f.has(2));
        assert_eq!((f.fetched_count(), f.bytes_fetched), (2, Bytes(500)));
        assert_eq!(ready(&f), [h(2)]);
        let waiting: Vec<u32> = f.to_fetch(&on(2, &[1, 2])).expect("map 2 waits").collect();
        assert_eq!(waiting, vec![2]);
    }

    #[test]
    fn forgetting_a_host_drops_its_flow_and_what_waits_there() {
        let mut f = Fetch::new(4, 8);
        let list = on(0, &[1, 2]);
        f.wait_for(h(2), 0);
        f.wait_for(h(2), 0);
        f.wait_for(h(3), 1);
        f.start(h(2), 0, FlowId(1), list.maps.len());
        assert_eq!(f.inflight_flows().collect::<Vec<_>>(), vec![FlowId(1)]);
        assert_eq!(f.forget(h(2), 0), Some(FlowId(1)));
        assert_eq!(f.inflight_len(), 0);
        assert!(!f.finish(h(2), &list));
        assert!(f.to_fetch(&list).is_none(), "nothing waits on a forgotten host");
        assert_eq!(f.fetched_count(), 0);
        assert_eq!(f.forget(h(3), 1), None);
        assert!(f.ready().is_empty());
    }
}
