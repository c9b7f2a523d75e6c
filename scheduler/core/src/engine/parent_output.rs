//! Where a child job's input lies when it reads its parents' output: HDFS
//! writes a reduce's output on the reduce's own host first, so a block of
//! the child's input that a parent wrote ([`MapTask::written_by`]) gets,
//! when the child becomes runnable, one replica on the host of the parent's
//! reduce attempt that wrote it and the others by HDFS's default rule
//! (`BlockPlacementPolicyDefault`: the second on a host of another rack,
//! the third on another host of that same rack), drawn from
//! [`EngineConfig::placement_seed`](super::EngineConfig).
//!
//! A parent with `R` reduces writes `R` equal output files, in reduce
//! order; the child's `B` blocks from that parent are laid over them in
//! order, block `k` on the host of reduce `k·R/B`. A map-only parent writes
//! from its maps instead (same rule over its maps). Block sizes are the
//! workload's (the job model fixes a job's output at generation), only
//! their hosts move. The generated replicas stay if the parent left no
//! record of where it ran (it is not in the run).
//!
//! [`MapTask::written_by`]: crate::model::job::MapTask::written_by

use super::Engine;
use crate::model::hdfs::replicas_after_writer;
use crate::model::job::JobId;
use crate::HostId;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;

impl Engine {
    /// Places the replicas of job `id`'s blocks that its parents wrote.
    pub(super) fn place_parent_output(&mut self, id: JobId) {
        let Some(job) = self.c.jobs.get(&id) else {
            return;
        };
        let mut by_parent: BTreeMap<JobId, Vec<u32>> = BTreeMap::new();
        for (m, map) in job.spec.maps.iter().enumerate() {
            if let Some(p) = map.written_by {
                by_parent.entry(p).or_default().push(m as u32);
            }
        }
        let mut placed: Vec<(u32, Vec<HostId>)> = Vec::new();
        for (parent, blocks) in by_parent {
            let writers = self.writer_hosts(parent);
            if writers.is_empty() {
                continue;
            }
            for (k, &m) in blocks.iter().enumerate() {
                let writer = writers[k * writers.len() / blocks.len()];
                let n = job.spec.maps[m as usize].replicas.len().max(1);
                let mut rng = ChaCha8Rng::seed_from_u64(
                    self.c.config.placement_seed ^ id.0.rotate_left(24) ^ u64::from(m).rotate_left(48),
                );
                placed.push((m, replicas_after_writer(&self.c.topo, writer, n, &mut rng)));
            }
        }
        let Some(job) = self.c.jobs.get_mut(&id) else {
            return;
        };
        for (m, replicas) in placed {
            job.spec.maps[m as usize].replicas = replicas;
        }
    }

    /// The hosts that wrote job `id`'s output, in output order: its
    /// reduces' winning attempts, or its maps' for a map-only job.
    fn writer_hosts(&self, id: JobId) -> Vec<HostId> {
        let Some(job) = self.c.jobs.get(&id) else {
            return Vec::new();
        };
        let tasks = if job.reduces.is_empty() {
            &job.maps
        } else {
            &job.reduces
        };
        tasks
            .iter()
            .filter_map(|t| t.done.as_ref().map(|d| d.host))
            .collect()
    }
}
