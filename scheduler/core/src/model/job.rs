//! Jobs: MapReduce-style jobs with map tasks (each reads one input block
//! stored as replicas on hosts), reduce tasks, the shuffle between them,
//! task compute durations, the submitting user, the arrival time, whether
//! the job recurs, and DAG edges to the jobs it depends on.
//!
//! The shuffle is given either per (map, reduce) pair ([`Shuffle::Matrix`])
//! or as a shuffle/input ratio ([`Shuffle::Ratio`]): map `m` then emits
//! `input_m × ratio` bytes, split evenly over the reduces (the usual reading
//! of a hash partitioner). [`validate_jobs`] checks a whole workload against
//! a topology and names the job and field of the first problem.

use crate::{Bytes, HostId, Nanos, Topology};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// A job's identity, unique within a workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct JobId(pub u64);

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "j{}", self.0)
    }
}

/// A user (a tenant, a Fair-scheduler pool).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct UserId(pub u32);

impl fmt::Display for UserId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "u{}", self.0)
    }
}

/// Map or reduce.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskKind {
    /// A map task: reads one input block, writes one partition per reduce.
    Map,
    /// A reduce task: fetches its partition from every map, then computes.
    Reduce,
}

impl fmt::Display for TaskKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TaskKind::Map => "map",
            TaskKind::Reduce => "reduce",
        })
    }
}

/// A task: the `index`-th map or reduce of a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TaskId {
    /// Its job.
    pub job: JobId,
    /// Map or reduce.
    pub kind: TaskKind,
    /// Index among the job's tasks of that kind.
    pub index: u32,
}

impl TaskId {
    /// Map `index` of `job`.
    pub const fn map(job: JobId, index: u32) -> TaskId {
        TaskId {
            job,
            kind: TaskKind::Map,
            index,
        }
    }
    /// Reduce `index` of `job`.
    pub const fn reduce(job: JobId, index: u32) -> TaskId {
        TaskId {
            job,
            kind: TaskKind::Reduce,
            index,
        }
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let k = match self.kind {
            TaskKind::Map => 'm',
            TaskKind::Reduce => 'r',
        };
        write!(f, "{}{k}{}", self.job, self.index)
    }
}

/// One map task.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MapTask {
    /// Size of its input block.
    pub input: Bytes,
    /// Hosts holding a replica of the block (HDFS: 3), distinct.
    pub replicas: Vec<HostId>,
    /// Compute time on a host of speed 1 (input read excluded).
    pub duration: Nanos,
    /// The parent job whose output this block is, if any. The engine then
    /// places the block's replicas when the job becomes runnable, where that
    /// parent's reduces wrote it (`replicas` is only a stand-in until then);
    /// see docs/engine.md, "DAGs".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub written_by: Option<JobId>,
}

/// One reduce task.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReduceTask {
    /// Compute time on a host of speed 1, after all its partitions arrived.
    pub duration: Nanos,
}

/// How much each map sends to each reduce.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Shuffle {
    /// `bytes[m][r]`: bytes map `m` sends to reduce `r`.
    Matrix(Vec<Vec<Bytes>>),
    /// Shuffle/input ratio: map `m` emits `input_m × ratio`, split evenly
    /// over the reduces (the first `remainder` reduces get one byte more).
    Ratio(f64),
}

/// A job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Job {
    /// Its identity.
    pub id: JobId,
    /// A label for reports (e.g. the trace's job name or the workload class).
    #[serde(default)]
    pub name: String,
    /// Who submitted it.
    pub user: UserId,
    /// When it is submitted. A job with parents becomes runnable only when
    /// all of them have finished (and not before its arrival).
    pub arrival: Nanos,
    /// Whether it recurs (its characteristics are known ahead, as Corral
    /// and Co-scheduler assume for recurring jobs).
    #[serde(default)]
    pub recurring: bool,
    /// DAG edges: the jobs whose output this job reads.
    #[serde(default)]
    pub parents: Vec<JobId>,
    /// Map tasks (at least one).
    pub maps: Vec<MapTask>,
    /// Reduce tasks (none for a map-only job).
    pub reduces: Vec<ReduceTask>,
    /// The shuffle between them.
    pub shuffle: Shuffle,
}

impl Job {
    /// Total input bytes.
    pub fn input_bytes(&self) -> Bytes {
        self.maps.iter().map(|m| m.input).sum()
    }

    /// Bytes map `m` emits in total (its output), as the model says.
    pub fn map_output(&self, m: u32) -> Bytes {
        match &self.shuffle {
            Shuffle::Matrix(b) => b
                .get(m as usize)
                .map(|row| row.iter().copied().sum())
                .unwrap_or_default(),
            Shuffle::Ratio(ratio) => match self.maps.get(m as usize) {
                Some(map) if !self.reduces.is_empty() => Bytes((map.input.0 as f64 * ratio).round() as u64),
                _ => Bytes(0),
            },
        }
    }

    /// Bytes map `m` sends to reduce `r`, as the model says.
    pub fn partition(&self, m: u32, r: u32) -> Bytes {
        match &self.shuffle {
            Shuffle::Matrix(b) => b
                .get(m as usize)
                .and_then(|row| row.get(r as usize))
                .copied()
                .unwrap_or_default(),
            Shuffle::Ratio(_) => even_share(self.map_output(m), self.reduces.len() as u32, r),
        }
    }

    /// Bytes map `m` sends to reduce `r` when map `m` actually emitted
    /// `output` bytes (an emulated map may report a size other than the
    /// model's): the model's share of reduce `r`, applied to `output`.
    pub fn partition_of_output(&self, m: u32, r: u32, output: Bytes) -> Bytes {
        let reduces = self.reduces.len() as u32;
        // Under a ratio every partition is an even share of the output
        // (of the model's, `partition`, when the output is the model's).
        let Shuffle::Matrix(_) = self.shuffle else {
            return even_share(output, reduces, r);
        };
        match self.map_output(m) {
            model if model == output => self.partition(m, r),
            Bytes(0) => even_share(output, reduces, r),
            model => Bytes((self.partition(m, r).0 as u128 * output.0 as u128 / model.0 as u128) as u64),
        }
    }

    /// Total shuffle bytes, as the model says.
    pub fn shuffle_bytes(&self) -> Bytes {
        (0..self.maps.len() as u32).map(|m| self.map_output(m)).sum()
    }

    /// The model's shuffle/input ratio (0 for an empty input).
    pub fn shuffle_input_ratio(&self) -> f64 {
        let input = self.input_bytes().0;
        if input == 0 {
            0.0
        } else {
            self.shuffle_bytes().0 as f64 / input as f64
        }
    }

    /// Number of maps, as the `u32` task indices use.
    pub fn map_count(&self) -> u32 {
        self.maps.len() as u32
    }

    /// Number of reduces.
    pub fn reduce_count(&self) -> u32 {
        self.reduces.len() as u32
    }
}

/// `total` split over `n` parts: part `i`'s share (the first `total mod n`
/// parts get one byte more).
fn even_share(total: Bytes, n: u32, i: u32) -> Bytes {
    if n == 0 || i >= n {
        return Bytes(0);
    }
    let n = n as u64;
    let base = total.0 / n;
    Bytes(base + u64::from((i as u64) < total.0 % n))
}

/// What is wrong with a job of a workload: which job, which field, and what
/// would be valid.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("job {job}: field `{field}`: {message}")]
pub struct JobError {
    /// The job.
    pub job: JobId,
    /// Dotted field, e.g. `maps[3].replicas`.
    pub field: String,
    /// What is wrong and what would be valid.
    pub message: String,
}

/// The most map (or reduce) tasks one job may have. A workload whose
/// settings would give more (a trace job's bytes over a tiny block size,
/// a generated class of billions of maps) is refused, not allocated.
pub const MAX_TASKS_PER_JOB: u64 = 100_000;

/// Checks a workload against `topo`: ids unique, at least one map per job,
/// replicas distinct hosts of the topology, shuffle matrix of the right
/// shape, ratio finite and non-negative, parents known and acyclic, a
/// block written by a parent naming one of the job's parents.
pub fn validate_jobs(jobs: &[Job], topo: &Topology) -> Result<(), JobError> {
    let mut index: BTreeMap<JobId, usize> = BTreeMap::new();
    for (i, job) in jobs.iter().enumerate() {
        if index.insert(job.id, i).is_some() {
            return Err(err(job.id, "id", "appears twice; job ids must be unique"));
        }
    }
    for job in jobs {
        validate_job(job, topo)?;
        for p in &job.parents {
            if !index.contains_key(p) {
                return Err(err(
                    job.id,
                    "parents",
                    format!("names {p}, which is not in the workload"),
                ));
            }
            if *p == job.id {
                return Err(err(job.id, "parents", "a job cannot depend on itself"));
            }
        }
    }
    check_acyclic(jobs, &index)
}

fn validate_job(job: &Job, topo: &Topology) -> Result<(), JobError> {
    if job.maps.is_empty() {
        return Err(err(job.id, "maps", "needs at least one map task"));
    }
    for (m, map) in job.maps.iter().enumerate() {
        let field = format!("maps[{m}].replicas");
        if map.replicas.is_empty() {
            return Err(err(
                job.id,
                &field,
                "needs at least one host holding the input block",
            ));
        }
        if let Some(p) = map.written_by.filter(|p| !job.parents.contains(p)) {
            return Err(err(
                job.id,
                &format!("maps[{m}].written_by"),
                format!("names {p}, which is not one of the job's parents"),
            ));
        }
        for (i, h) in map.replicas.iter().enumerate() {
            if !topo.contains(*h) {
                return Err(err(
                    job.id,
                    &field,
                    format!(
                        "{h} is not a host of topology {:?} (racks r0..r{}, hosts h0..h{})",
                        topo.name,
                        topo.racks - 1,
                        topo.hosts_per_rack - 1
                    ),
                ));
            }
            if map.replicas[..i].contains(h) {
                return Err(err(
                    job.id,
                    &field,
                    format!("{h} holds two replicas; replicas must be distinct"),
                ));
            }
        }
    }
    match &job.shuffle {
        Shuffle::Ratio(r) if !(r.is_finite() && *r >= 0.0) => Err(err(
            job.id,
            "shuffle.ratio",
            format!("must be a finite number >= 0 (got {r})"),
        )),
        Shuffle::Ratio(_) => Ok(()),
        Shuffle::Matrix(rows) => {
            if rows.len() != job.maps.len() {
                return Err(err(
                    job.id,
                    "shuffle.matrix",
                    format!("has {} rows; needs one per map ({})", rows.len(), job.maps.len()),
                ));
            }
            for (m, row) in rows.iter().enumerate() {
                if row.len() != job.reduces.len() {
                    return Err(err(
                        job.id,
                        &format!("shuffle.matrix[{m}]"),
                        format!(
                            "has {} entries; needs one per reduce ({})",
                            row.len(),
                            job.reduces.len()
                        ),
                    ));
                }
            }
            Ok(())
        }
    }
}

/// Depth-first search for a cycle among parent edges.
fn check_acyclic(jobs: &[Job], index: &BTreeMap<JobId, usize>) -> Result<(), JobError> {
    // 0 = unseen, 1 = on the current path, 2 = done.
    let mut mark = vec![0u8; jobs.len()];
    for start in 0..jobs.len() {
        if mark[start] != 0 {
            continue;
        }
        let mut stack: Vec<(usize, usize)> = vec![(start, 0)];
        mark[start] = 1;
        while let Some(&mut (node, ref mut next)) = stack.last_mut() {
            if let Some(p) = jobs[node].parents.get(*next) {
                *next += 1;
                let Some(&pi) = index.get(p) else { continue };
                match mark[pi] {
                    0 => {
                        mark[pi] = 1;
                        stack.push((pi, 0));
                    }
                    1 => {
                        return Err(err(
                            jobs[node].id,
                            "parents",
                            format!("{p} is also a descendant: the job DAG has a cycle"),
                        ))
                    }
                    _ => {}
                }
            } else {
                mark[node] = 2;
                stack.pop();
            }
        }
    }
    Ok(())
}

fn err(job: JobId, field: &str, message: impl Into<String>) -> JobError {
    JobError {
        job,
        field: field.to_string(),
        message: message.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topo() -> Topology {
        Topology::builder("t", 2, 2).build().expect("valid topology")
    }

    fn job(id: u64, parents: Vec<u64>) -> Job {
        Job {
            id: JobId(id),
            name: String::new(),
            user: UserId(0),
            arrival: Nanos::ZERO,
            recurring: false,
            parents: parents.into_iter().map(JobId).collect(),
            maps: vec![
                MapTask {
                    input: Bytes(100),
                    replicas: vec![HostId::new(0, 0)],
                    duration: Nanos(1),
                    written_by: None,
                };
                2
            ],
            reduces: vec![ReduceTask { duration: Nanos(1) }; 3],
            shuffle: Shuffle::Ratio(0.5),
        }
    }

    #[test]
    fn ratio_splits_each_map_output_evenly() {
        let j = job(0, vec![]);
        assert_eq!(j.map_output(0), Bytes(50));
        let parts: Vec<u64> = (0..3).map(|r| j.partition(0, r).0).collect();
        assert_eq!(parts, vec![17, 17, 16]);
        assert_eq!(j.shuffle_bytes(), Bytes(100));
        assert_eq!(j.partition_of_output(0, 0, Bytes(30)), Bytes(10));
    }

    #[test]
    fn matrix_scales_to_a_reported_output() {
        let mut j = job(0, vec![]);
        j.shuffle = Shuffle::Matrix(vec![vec![Bytes(10), Bytes(30), Bytes(0)]; 2]);
        assert_eq!(j.map_output(1), Bytes(40));
        assert_eq!(j.partition_of_output(1, 1, Bytes(80)), Bytes(60));
    }

    #[test]
    fn a_replica_outside_the_topology_names_job_and_field() {
        let mut j = job(4, vec![]);
        j.maps[1].replicas = vec![HostId::new(0, 1), HostId::new(5, 0)];
        let e = validate_jobs(&[j], &topo()).unwrap_err();
        assert_eq!(e.job, JobId(4));
        assert_eq!(e.field, "maps[1].replicas");
        assert!(e.message.contains("r5h0"), "{e}");
    }

    #[test]
    fn cycles_and_unknown_parents_are_refused() {
        let t = topo();
        assert!(validate_jobs(&[job(0, vec![]), job(1, vec![0]), job(2, vec![0, 1])], &t).is_ok());
        let e = validate_jobs(&[job(0, vec![2]), job(1, vec![0]), job(2, vec![1])], &t).unwrap_err();
        assert!(e.message.contains("cycle"), "{e}");
        let e = validate_jobs(&[job(0, vec![9])], &t).unwrap_err();
        assert_eq!(e.field, "parents");
    }

    #[test]
    fn a_block_written_by_a_job_that_is_not_a_parent_is_refused() {
        let t = topo();
        let mut child = job(2, vec![0]);
        child.maps[1].written_by = Some(JobId(0));
        assert!(validate_jobs(&[job(0, vec![]), job(1, vec![]), child.clone()], &t).is_ok());
        child.maps[1].written_by = Some(JobId(1));
        let e = validate_jobs(&[job(0, vec![]), job(1, vec![]), child], &t).unwrap_err();
        assert_eq!(e.field, "maps[1].written_by");
    }

    #[test]
    fn matrix_of_the_wrong_shape_is_refused() {
        let mut j = job(0, vec![]);
        j.shuffle = Shuffle::Matrix(vec![vec![Bytes(1); 2]; 2]);
        let e = validate_jobs(&[j], &topo()).unwrap_err();
        assert_eq!(e.field, "shuffle.matrix[0]");
    }
}
