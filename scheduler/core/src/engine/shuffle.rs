//! The shuffle in the engine: which partitions a reduce attempt still
//! lacks, the flows that fetch them (one per source host at a time,
//! carrying every partition ready there; under `parallel_copies` at most
//! that many hosts at once, the next drawn at random as Hadoop's fetchers
//! do; under `merge_fetches` one flow for a job's fetches between two
//! hosts that start together), and what a finished flow unlocks.

use super::event::AttemptId;
use super::fetch::HostSet;
use super::records::{CoflowRecord, FlowKind, FlowRecord};
use super::{Engine, FlowRt};
use crate::model::coflow::{FlowId, FlowSpec};
use crate::model::job::TaskKind;
use crate::{Bytes, HostId, Nanos};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

impl Engine {
    /// A reduce attempt got its slot: it queues every done map's partition,
    /// and if it is the job's last reduce to be placed under
    /// `hold_shuffle_until_reduces_placed`, the held shuffle starts.
    pub(super) fn start_reduce(&mut self, now: Nanos, id: AttemptId, first_attempt: bool) {
        let Some(job) = self.c.jobs.get(&id.task.job) else {
            return;
        };
        let release_all = first_attempt
            && self.c.config.hold_shuffle_until_reduces_placed
            && job.reduces_placed == job.spec.reduce_count();
        if !release_all && self.shuffle_held(job) {
            self.holds_changed = true;
        }
        if let Some(att) = self.c.attempts.get_mut(&id) {
            let host = att.host;
            if let Some(fetch) = att.fetch.as_mut() {
                let here = deliver_done_maps(job, id, host, fetch);
                if here.0 > 0 {
                    if let Some(r) = self.records.jobs.get_mut(&id.task.job) {
                        r.shuffle_bytes += here;
                    }
                }
            }
        }
        if release_all {
            let readers: Vec<AttemptId> = job.live_reduces().collect();
            for a in readers {
                self.pump(now, a);
            }
        } else {
            self.pump(now, id);
        }
        self.check_reduce_ready(now, id);
    }

    /// Map `m` is done, on the map host of index `host_ix`: reduce attempt
    /// `id` takes note of its partition (at once if empty or on its own
    /// host; else it waits to be fetched).
    pub(super) fn deliver(&mut self, id: AttemptId, m: u32, host_ix: u32) {
        let Some(job) = self.c.jobs.get(&id.task.job) else {
            return;
        };
        let Some(done) = job.maps[m as usize].done else {
            return;
        };
        let bytes = job.spec.partition_of_output(m, id.task.index, done.output);
        let Some(att) = self.c.attempts.get_mut(&id) else {
            return;
        };
        let host = att.host;
        let Some(fetch) = att.fetch.as_mut() else { return };
        let here = fetch.note(m, bytes, done.host, host_ix, host);
        if here.0 > 0 {
            if let Some(r) = self.records.jobs.get_mut(&id.task.job) {
                r.shuffle_bytes += here;
            }
        }
    }

    /// Starts fetch flows for attempt `id` from hosts that have partitions
    /// waiting and no flow to it in flight: from every such host, or under
    /// `parallel_copies` until that many are in flight, the hosts drawn at
    /// random (nothing starts while the job's shuffle is held).
    pub(super) fn pump(&mut self, now: Nanos, id: AttemptId) {
        let Some(job) = self.c.jobs.get(&id.task.job) else {
            return;
        };
        if self.shuffle_held(job) {
            return;
        }
        let limit = self.c.config.parallel_copies.map_or(usize::MAX, |p| p as usize);
        let seed = self.c.config.placement_seed;
        let Some(att) = self.c.attempts.get_mut(&id) else {
            return;
        };
        let dst = att.host;
        let Some(fetch) = att.fetch.as_mut() else { return };
        let free = limit.saturating_sub(fetch.inflight_len());
        if free == 0 {
            return;
        }
        let ready = if fetch.ready().len() > free {
            let drawn = draw_hosts(fetch.ready(), free, fetcher_seed(seed, id, fetch.draws));
            fetch.draws += 1;
            drawn
        } else {
            fetch.ready().iter().collect()
        };
        let mut batches = Vec::with_capacity(ready.len());
        for src in ready {
            let Some(on) = job.done_on.get(&src) else { continue };
            if let Some(maps) = fetch.to_fetch(on) {
                batches.push((src, on.ix, partitions(job, id, maps), on.maps.len()));
            }
        }
        for (src, ix, bytes, len) in batches {
            let fid = self.new_fetch(now, id, src, dst, bytes);
            if let Some(fetch) = self.c.attempts.get_mut(&id).and_then(|a| a.fetch.as_mut()) {
                fetch.start(src, ix, fid, len);
            }
        }
    }

    /// A reduce attempt holding every map's partition starts computing.
    pub(super) fn check_reduce_ready(&mut self, now: Nanos, id: AttemptId) {
        if id.task.kind != TaskKind::Reduce {
            return;
        }
        let Some(job) = self.c.jobs.get(&id.task.job) else {
            return;
        };
        let maps = job.spec.map_count();
        let Some(att) = self.c.attempts.get(&id) else {
            return;
        };
        let ready = matches!(att.phase, super::Phase::Fetching)
            && att.fetch.as_ref().is_some_and(|f| f.fetched_count() == maps);
        if ready {
            self.start_compute(now, id);
        }
    }

    /// A fetch of `bytes` for reduce attempt `id` from `src` to its host
    /// `dst` starts: as a flow of its own or, under `merge_fetches`, as one
    /// more fetch of the job's flow between those hosts that starts at
    /// this instant (its weight grows by one). Returns the flow.
    fn new_fetch(&mut self, now: Nanos, id: AttemptId, src: HostId, dst: HostId, bytes: Bytes) -> FlowId {
        let key = (id.task.job, src, dst);
        let joined = self.merging.get(&key).and_then(|&i| {
            let spec = self.new_flows.get_mut(i)?;
            let f = self.flows.get_mut(&spec.id)?;
            f.bytes += bytes;
            f.weight += 1;
            spec.bytes += bytes;
            spec.weight += 1;
            Some((spec.id, spec.coflow))
        });
        let Some((fid, coflow)) = joined else {
            let fid = self.new_flow(now, id, FlowKind::Shuffle, src, dst, bytes);
            if self.c.config.merge_fetches {
                self.merging.insert(key, self.new_flows.len() - 1);
            }
            return fid;
        };
        count_cross_rack(&mut self.c.rack_traffic, src, dst, bytes);
        if let Some(rec) = self.records.coflows.get_mut(&coflow) {
            rec.bytes += bytes;
        }
        fid
    }

    /// Registers a new flow and queues it for the driver.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new_flow(
        &mut self,
        now: Nanos,
        attempt: AttemptId,
        kind: FlowKind,
        src: HostId,
        dst: HostId,
        bytes: Bytes,
    ) -> FlowId {
        let id = FlowId(self.next_flow);
        let coflow = kind.coflow(attempt.task.job);
        self.next_flow += 1;
        let spec = FlowSpec::new(id, coflow, src, dst, bytes);
        count_cross_rack(&mut self.c.rack_traffic, src, dst, bytes);
        let rec = self
            .records
            .coflows
            .entry(coflow)
            .or_insert_with(|| CoflowRecord {
                coflow,
                job: attempt.task.job,
                kind,
                flows: 0,
                bytes: Bytes(0),
                first_start: now,
                last_end: None,
                eps_bytes: Bytes(0),
                ocs_bytes: Bytes(0),
                cross_rack_bytes: Bytes(0),
                cross_rack_eps_bytes: Bytes(0),
                cross_rack_ocs_bytes: Bytes(0),
                open_flows: 0,
            });
        rec.flows += 1;
        rec.bytes += bytes;
        rec.open_flows += 1;
        self.new_flows.push(spec);
        self.flows.insert(
            id,
            FlowRt {
                src,
                dst,
                bytes,
                attempt,
                started: now,
                weight: 1,
                kind,
                useful: true,
            },
        );
        id
    }

    /// A flow delivered its last byte.
    pub(super) fn flow_finished(&mut self, now: Nanos, fid: FlowId, eps: Bytes, ocs: Bytes) {
        let Some(f) = self.flows.remove(&fid) else { return };
        let (src, dst, bytes) = (f.src, f.dst, f.bytes);
        let cross = src.rack != dst.rack;
        if cross {
            let t = &mut self.c.rack_traffic;
            let s = &mut t[src.rack as usize];
            s.out_flows -= f.weight;
            s.out_bytes = Bytes(s.out_bytes.0.saturating_sub(bytes.0));
            let d = &mut t[dst.rack as usize];
            d.in_flows -= f.weight;
            d.in_bytes = Bytes(d.in_bytes.0.saturating_sub(bytes.0));
        }
        if let Some(rec) = self.records.coflows.get_mut(&f.coflow()) {
            rec.open_flows -= 1;
            rec.last_end = Some(now);
            rec.eps_bytes += eps;
            rec.ocs_bytes += ocs;
            if cross {
                rec.cross_rack_bytes += bytes;
                rec.cross_rack_eps_bytes += eps;
                rec.cross_rack_ocs_bytes += ocs;
            }
        }
        let merged;
        let single = [(f.attempt, bytes)];
        let fetches: &[(AttemptId, Bytes)] = if f.weight > 1 {
            merged = self.merged_fetches(&f, fid);
            &merged
        } else if f.useful {
            &single
        } else {
            &[]
        };
        let useful = !fetches.is_empty();
        if self.c.config.record_flows {
            self.records.flows.push(FlowRecord {
                flow: fid,
                coflow: f.coflow(),
                job: f.job(),
                kind: f.kind,
                attempt: f.attempt,
                src,
                dst,
                bytes,
                started: f.started,
                finished: Some(now),
                eps_bytes: eps,
                ocs_bytes: ocs,
                useful,
                weight: f.weight,
            });
        }
        if !useful {
            return;
        }
        let delivered: Bytes = fetches.iter().map(|&(_, b)| b).sum();
        if let Some(r) = self.records.jobs.get_mut(&f.job()) {
            match f.kind {
                FlowKind::Input => {
                    r.input_read_bytes += delivered;
                    if cross {
                        r.cross_rack_input_bytes += delivered;
                    }
                }
                FlowKind::Shuffle => {
                    r.shuffle_bytes += delivered;
                    if cross {
                        r.cross_rack_shuffle_bytes += delivered;
                    }
                }
            }
        }
        match f.kind {
            FlowKind::Input => self.start_compute(now, f.attempt),
            FlowKind::Shuffle => {
                for &(attempt, bytes) in fetches {
                    let Some(fetch) = self.c.attempts.get_mut(&attempt).and_then(|a| a.fetch.as_mut()) else {
                        continue;
                    };
                    let on = self.c.jobs.get(&f.job()).and_then(|job| job.done_on.get(&src));
                    if on.is_some_and(|on| fetch.finish(src, on)) {
                        fetch.bytes_fetched += bytes;
                    }
                    self.pump(now, attempt);
                    self.check_reduce_ready(now, attempt);
                }
            }
        }
    }

    /// The fetches merged flow `f` (id `fid`) still delivers, with their
    /// bytes: the job's reduce attempts on its destination host that wait
    /// for it from its source (an attempt that was killed, or that forgot
    /// a dead source, does not). A host holds a few attempts, so they are
    /// found there rather than listed in every flow.
    fn merged_fetches(&self, f: &FlowRt, fid: FlowId) -> Vec<(AttemptId, Bytes)> {
        let (src, dst) = (f.src, f.dst);
        let Some(job) = self.c.jobs.get(&f.job()) else {
            return Vec::new();
        };
        let host = &self.c.hosts[self.c.topo.host_index(dst)];
        host.attempts
            .iter()
            .filter(|a| a.task.job == f.job() && a.task.kind == TaskKind::Reduce)
            .filter_map(|&a| {
                let fetch = self.c.attempts.get(&a)?.fetch.as_ref()?;
                let (flow, maps) = fetch.in_flight_from(job.done_on.get(&src)?)?;
                (flow == fid).then(|| (a, partitions(job, a, maps)))
            })
            .collect()
    }
}

/// One more fetch of `bytes` from `src` to `dst` in the racks' traffic
/// estimate, if it crosses racks.
fn count_cross_rack(t: &mut [super::state::RackTraffic], src: HostId, dst: HostId, bytes: Bytes) {
    if src.rack != dst.rack {
        t[src.rack as usize].out_flows += 1;
        t[src.rack as usize].out_bytes += bytes;
        t[dst.rack as usize].in_flows += 1;
        t[dst.rack as usize].in_bytes += bytes;
    }
}

/// Reduce attempt `id` on `host`, just started, takes note of every done
/// map's partition ([`super::fetch::Fetch::note`]), as [`Engine::deliver`]
/// does one by one. Returns the bytes that were here at once.
fn deliver_done_maps(
    job: &super::state::JobState,
    id: AttemptId,
    host: HostId,
    fetch: &mut super::fetch::Fetch,
) -> Bytes {
    let mut here = Bytes(0);
    fetch.reserve_hosts(job.done_on.len());
    for (&src, on) in &job.done_on {
        for &m in &on.maps {
            let Some(done) = job.maps[m as usize].done else {
                continue;
            };
            if !fetch.has(m) {
                let bytes = job.spec.partition_of_output(m, id.task.index, done.output);
                here += fetch.note(m, bytes, src, on.ix, host);
            }
        }
    }
    here
}

/// The bytes of `maps`' partitions for reduce attempt `id` of `job`.
fn partitions(job: &super::state::JobState, id: AttemptId, maps: impl Iterator<Item = u32>) -> Bytes {
    maps.map(|m| {
        let out = job.maps[m as usize].done.map_or(Bytes(0), |d| d.output);
        job.spec.partition_of_output(m, id.task.index, out)
    })
    .sum()
}

/// The seed of a reduce attempt's `draw`-th choice of source hosts: the
/// experiment's seed mixed with the attempt, so each attempt draws its own
/// sequence and a run is the same for the same seed.
fn fetcher_seed(seed: u64, id: AttemptId, draw: u32) -> u64 {
    seed ^ id.task.job.0.rotate_left(17)
        ^ u64::from(id.task.index).rotate_left(37)
        ^ u64::from(id.n).rotate_left(53)
        ^ u64::from(draw).rotate_left(5)
        ^ 0x9e37_79b9_7f4a_7c15
}

/// `n` of the `ready` hosts, each drawn uniformly from those not drawn yet:
/// Hadoop's fetcher threads each take a random host among the pending ones
/// (`ShuffleSchedulerImpl.getHost`). A fixed order (e.g. by rack) would send
/// every reduce of the cluster to the same hosts first.
fn draw_hosts(ready: &HostSet, n: usize, seed: u64) -> Vec<HostId> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    // Each draw is a `swap_remove` from the hosts not drawn yet, in host
    // order, done without copying them: `moved` holds the positions a
    // removal refilled from the end, newest last.
    let mut moved: Vec<(usize, HostId)> = Vec::with_capacity(n);
    let at = |moved: &[(usize, HostId)], i: usize| {
        moved
            .iter()
            .rev()
            .find(|&&(j, _)| j == i)
            .map(|&(_, h)| h)
            .or_else(|| ready.nth(i))
    };
    let mut left = ready.len();
    let mut drawn = Vec::with_capacity(n);
    while drawn.len() < n && left > 0 {
        let i = rng.random_range(0..left);
        left -= 1;
        let (Some(pick), Some(last)) = (at(&moved, i), at(&moved, left)) else {
            break;
        };
        drawn.push(pick);
        moved.push((i, last));
    }
    drawn
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The draw is the one `swap_remove` on a copy of the hosts gives.
    #[test]
    fn hosts_are_drawn_as_swap_remove_on_a_copy_would() {
        let hosts: Vec<HostId> = (0..30).map(|i| HostId::new(i / 6, i % 6)).collect();
        for len in 0..hosts.len() {
            for n in 1..7 {
                for seed in 0..20 {
                    let mut copy = hosts[..len].to_vec();
                    let mut rng = ChaCha8Rng::seed_from_u64(seed);
                    let mut want = Vec::new();
                    while want.len() < n && !copy.is_empty() {
                        let i = rng.random_range(0..copy.len());
                        want.push(copy.swap_remove(i));
                    }
                    let mut set = HostSet::new(6);
                    for &h in &hosts[..len] {
                        set.insert(h);
                    }
                    assert_eq!(
                        draw_hosts(&set, n, seed),
                        want,
                        "{len} hosts, {n} drawn, seed {seed}"
                    );
                }
            }
        }
    }
}
