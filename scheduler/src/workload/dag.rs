//! Workloads of dependent jobs for Dawn (Wang et al., Sec. IV): iterative
//! ML benchmarks (Table I: K-means, Bayes classification, PageRank at three
//! input sizes each; about 11 jobs per benchmark, submissions exponential)
//! and TPC-H-like query DAGs (22 queries over a 50 GB database, about 6
//! jobs each, submitted uniformly at random over 25 minutes). Deterministic
//! for a seed.
//!
//! A job reads `base_input` from HDFS plus the whole output of each parent;
//! it can start when every parent has finished. The DAG shapes are models
//! of how these programs run on MapReduce, not traces (the paper gives only
//! the input sizes and job counts):
//! - *K-means* (Mahout): 10 iterations and a final clustering job; each
//!   reads the points (base input) and the previous centroids (tiny
//!   output), so its dependent data is small — little for Dawn to gain.
//! - *PageRank* (HiBench/Pegasus): 11 iterations, each joining the graph
//!   with the previous ranks: it reads its parent's whole output, shuffles
//!   it all and writes about as much — a chain of heavy dependencies.
//! - *Bayes* (Mahout seq2sparse + trainnb + testnb): 11 jobs with two
//!   fan-ins (tf-idf reads the term frequencies and the document
//!   frequencies; testing reads the model and the vectors).
//! - *TPC-H-like queries* (Hive on MapReduce): 2-6 base tables (sizes by
//!   TPC-H's shares of the database) joined in a left-deep chain, or with 4
//!   or more tables, half the time as a bushy tree of two chains (so a join
//!   has two parent jobs); then a group-by and an order-by job.

use super::shufflewatcher_mix::{map_tasks, TaskRates};
use crate::model::job::{Job, JobId, ReduceTask, Shuffle, UserId};
use ocslab_emulator::{Bytes, Nanos, Topology};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;

/// One job of a dependent workload.
#[derive(Clone, Debug, PartialEq)]
pub struct DagJob {
    /// Its id, unique in the workload, 0-based.
    pub id: u64,
    /// Which benchmark or query it belongs to (its group).
    pub group: u32,
    /// A name, e.g. "pagerank-B7/iter3".
    pub name: String,
    /// Its user (one per group).
    pub user: u32,
    /// When its group was submitted (it starts once its parents finish).
    pub arrival: Nanos,
    /// Bytes it reads from HDFS besides its parents' outputs.
    pub base_input: Bytes,
    /// Jobs whose whole output it reads.
    pub parents: Vec<u64>,
    /// Shuffle bytes per input byte.
    pub shuffle_ratio: f64,
    /// Output bytes per input byte.
    pub output_ratio: f64,
}

/// A job template inside a benchmark: parents by index within the group.
#[derive(Clone, Debug)]
struct Stage {
    name: String,
    parents: Vec<usize>,
    base_fraction: f64,
    shuffle_ratio: f64,
    output_ratio: f64,
}

fn stage(name: &str, parents: &[usize], base_fraction: f64, shuffle_ratio: f64, output_ratio: f64) -> Stage {
    Stage {
        name: name.into(),
        parents: parents.to_vec(),
        base_fraction,
        shuffle_ratio,
        output_ratio,
    }
}

/// The ML benchmarks of Table I: (label, kind, input GB).
pub const TABLE_I: [(&str, MlKind, f64); 9] = [
    ("B1", MlKind::KMeans, 18.5),
    ("B2", MlKind::KMeans, 37.5),
    ("B3", MlKind::KMeans, 75.0),
    ("B4", MlKind::Bayes, 34.8),
    ("B5", MlKind::Bayes, 52.8),
    ("B6", MlKind::Bayes, 69.9),
    ("B7", MlKind::PageRank, 32.4),
    ("B8", MlKind::PageRank, 51.6),
    ("B9", MlKind::PageRank, 64.8),
];

/// An iterative ML application.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MlKind {
    /// K-means clustering.
    KMeans,
    /// Naive Bayes classification.
    Bayes,
    /// PageRank.
    PageRank,
}

fn ml_stages(kind: MlKind) -> Vec<Stage> {
    match kind {
        MlKind::KMeans => {
            let mut s = vec![stage("iter0", &[], 1.0, 0.02, 0.0001)];
            for i in 1..10 {
                s.push(stage(&format!("iter{i}"), &[i - 1], 1.0, 0.02, 0.0001));
            }
            s.push(stage("cluster", &[9], 1.0, 0.0, 1.0));
            s
        }
        MlKind::PageRank => (0..11)
            .map(|i| {
                if i == 0 {
                    stage("iter0", &[], 1.0, 1.0, 1.0)
                } else {
                    stage(&format!("iter{i}"), &[i - 1], 0.0, 1.0, 1.0)
                }
            })
            .collect(),
        MlKind::Bayes => vec![
            stage("seqdirectory", &[], 1.0, 0.0, 0.9),
            stage("tokenize", &[0], 0.0, 0.0, 0.8),
            stage("wordcount", &[1], 0.0, 0.3, 0.05),
            stage("dictionary", &[2], 0.0, 1.0, 1.0),
            stage("tf-vectors", &[1, 3], 0.0, 1.0, 0.6),
            stage("df-count", &[4], 0.0, 0.2, 0.05),
            stage("tfidf", &[4, 5], 0.0, 1.0, 0.6),
            stage("split", &[6], 0.0, 0.0, 1.0),
            stage("trainnb-index", &[7], 0.0, 1.0, 0.7),
            stage("trainnb-weights", &[8], 0.0, 0.5, 0.05),
            stage("testnb", &[7, 9], 0.0, 0.05, 0.01),
        ],
    }
}

/// Parameters of the ML workload.
#[derive(Clone, Debug, PartialEq)]
pub struct MlConfig {
    /// Number of benchmark submissions (each picks a Table I row uniformly).
    pub benchmarks: usize,
    /// Mean time between submissions.
    pub mean_interarrival: Nanos,
    /// Multiplies every input size.
    pub size_scale: f64,
    /// The seed.
    pub seed: u64,
}

impl Default for MlConfig {
    fn default() -> Self {
        MlConfig {
            benchmarks: 27,
            mean_interarrival: Nanos::from_secs_f64(300.0),
            size_scale: 1.0,
            seed: 1,
        }
    }
}

fn emit(jobs: &mut Vec<DagJob>, group: u32, label: &str, arrival: Nanos, input: f64, stages: &[Stage]) {
    let first = jobs.len() as u64;
    for s in stages {
        jobs.push(DagJob {
            id: jobs.len() as u64,
            group,
            name: format!("{label}/{}", s.name),
            user: group,
            arrival,
            base_input: Bytes((input * s.base_fraction) as u64),
            parents: s.parents.iter().map(|&p| first + p as u64).collect(),
            shuffle_ratio: s.shuffle_ratio,
            output_ratio: s.output_ratio,
        });
    }
}

/// The iterative ML workload: deterministic for `cfg.seed`.
pub fn iterative_ml(cfg: &MlConfig) -> Vec<DagJob> {
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
    let mut jobs = Vec::new();
    let mut t = 0.0;
    for g in 0..cfg.benchmarks {
        t += -(1.0 - rng.random::<f64>()).ln() * cfg.mean_interarrival.as_secs_f64();
        let (label, kind, gb) = TABLE_I[rng.random_range(0..TABLE_I.len())];
        let name = format!("{}-{label}", format!("{kind:?}").to_lowercase());
        emit(
            &mut jobs,
            g as u32,
            &name,
            Nanos::from_secs_f64(t),
            gb * 1e9 * cfg.size_scale,
            &ml_stages(kind),
        );
    }
    jobs
}

/// TPC-H tables with their approximate share of the database bytes.
const TPCH_TABLES: [(&str, f64); 6] = [
    ("lineitem", 0.70),
    ("orders", 0.16),
    ("partsupp", 0.11),
    ("customer", 0.023),
    ("part", 0.023),
    ("supplier", 0.001),
];

/// Parameters of the query workload.
#[derive(Clone, Debug, PartialEq)]
pub struct QueryConfig {
    /// Number of queries (22).
    pub queries: usize,
    /// Database size (50 GB).
    pub database: Bytes,
    /// Submissions are uniform over this window (25 minutes).
    pub window: Nanos,
    /// The seed.
    pub seed: u64,
}

impl Default for QueryConfig {
    fn default() -> Self {
        QueryConfig {
            queries: 22,
            database: Bytes(50_000_000_000),
            window: Nanos::from_secs_f64(1500.0),
            seed: 1,
        }
    }
}

/// A left-deep join chain over `tables` (sizes in bytes) whose first stage
/// index is `at`; returns its stages and the index of its last join.
fn join_chain(at: usize, tables: &[f64], db: f64) -> (Vec<Stage>, usize) {
    let mut stages = Vec::new();
    let scan = |t: f64| t / db;
    stages.push(stage("join0", &[], scan(tables[0] + tables[1]), 1.0, 0.3));
    for (k, &t) in tables.iter().enumerate().skip(2) {
        let prev = at + stages.len() - 1;
        stages.push(stage(&format!("join{}", k - 1), &[prev], scan(t), 1.0, 0.3));
    }
    let last = at + stages.len() - 1;
    (stages, last)
}

/// The TPC-H-like query workload: deterministic for `cfg.seed`.
pub fn tpch_like(cfg: &QueryConfig) -> Vec<DagJob> {
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
    let db = cfg.database.0 as f64;
    let mut jobs = Vec::new();
    for q in 0..cfg.queries {
        let arrival = Nanos((rng.random::<f64>() * cfg.window.0 as f64) as u64);
        let n = rng.random_range(2..=6usize);
        let mut tables: Vec<f64> = TPCH_TABLES.iter().map(|t| t.1 * db).collect();
        // A random subset of n tables (Fisher-Yates prefix).
        for i in 0..n {
            let j = rng.random_range(i..tables.len());
            tables.swap(i, j);
        }
        tables.truncate(n);
        let mut stages;
        let top;
        if n >= 4 && rng.random_bool(0.5) {
            let (left, l) = join_chain(0, &tables[..n / 2], db);
            let (right, r) = join_chain(left.len(), &tables[n / 2..], db);
            stages = left;
            stages.extend(right);
            stages.push(stage("join-top", &[l, r], 0.0, 1.0, 0.3));
            top = stages.len() - 1;
        } else {
            let (chain, last) = join_chain(0, &tables, db);
            stages = chain;
            top = last;
        }
        stages.push(stage("groupby", &[top], 0.0, 0.1, 0.01));
        let g = stages.len() - 1;
        stages.push(stage("orderby", &[g], 0.0, 1.0, 1.0));
        emit(&mut jobs, q as u32, &format!("q{}", q + 1), arrival, db, &stages);
    }
    jobs.sort_by_key(|j| (j.arrival, j.id));
    jobs
}

/// The engine's jobs for a dependent workload on `topo`. A job's input is
/// its base input, then each parent's output (parent input × output ratio)
/// in parent order, each cut into blocks; one reduce per GB of shuffle (1
/// to 100). Base blocks get HDFS replicas drawn from `seed`; a block of a
/// parent's output is marked [`MapTask::written_by`] that parent, and the
/// engine places it where the parent's reduces ran when the job becomes
/// runnable (its generated replicas are only a stand-in).
///
/// [`MapTask::written_by`]: crate::model::job::MapTask::written_by
pub fn to_jobs(dag: &[DagJob], topo: &Topology, block: Bytes, rates: &TaskRates, seed: u64) -> Vec<Job> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xda6_da6);
    let mut outputs: BTreeMap<u64, u64> = BTreeMap::new();
    let mut by_id: Vec<&DagJob> = dag.iter().collect();
    by_id.sort_by_key(|j| j.id);
    let mut jobs: Vec<Job> = by_id
        .into_iter()
        .map(|d| {
            let from_parents: Vec<(u64, u64)> = d
                .parents
                .iter()
                .map(|p| (*p, outputs.get(p).copied().unwrap_or(0)))
                .collect();
            let input = d.base_input.0 + from_parents.iter().map(|(_, b)| b).sum::<u64>();
            outputs.insert(d.id, (input as f64 * d.output_ratio) as u64);
            let shuffle = input as f64 * d.shuffle_ratio;
            let reduces = ((shuffle / 1e9).ceil() as u32).clamp(1, 100);
            let mut maps = Vec::new();
            if d.base_input.0 > 0 {
                maps = map_tasks(&mut rng, topo, d.base_input, block, rates);
            }
            for (p, bytes) in from_parents.into_iter().filter(|(_, b)| *b > 0) {
                maps.extend(
                    map_tasks(&mut rng, topo, Bytes(bytes), block, rates)
                        .into_iter()
                        .map(|mut m| {
                            m.written_by = Some(JobId(p));
                            m
                        }),
                );
            }
            if maps.is_empty() {
                maps = map_tasks(&mut rng, topo, Bytes(1), block, rates);
            }
            Job {
                id: JobId(d.id),
                name: d.name.clone(),
                user: UserId(d.user),
                arrival: d.arrival,
                recurring: false,
                parents: d.parents.iter().map(|&p| JobId(p)).collect(),
                maps,
                reduces: (0..reduces)
                    .map(|_| ReduceTask {
                        duration: TaskRates::time(shuffle / f64::from(reduces), rates.reduce_bytes_per_s),
                    })
                    .collect(),
                shuffle: Shuffle::Ratio(d.shuffle_ratio),
            }
        })
        .collect();
    jobs.sort_by_key(|j| (j.arrival, j.id));
    jobs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topo(racks: u32, hosts: u32) -> Topology {
        Topology::builder("t", racks, hosts)
            .simulation_only()
            .build()
            .expect("valid")
    }

    fn check_dag(jobs: &[DagJob]) {
        for j in jobs {
            for p in &j.parents {
                let parent = jobs.iter().find(|x| x.id == *p).expect("parent exists");
                assert_eq!(parent.group, j.group, "edges stay inside a group");
                assert!(parent.id < j.id, "parents come first (acyclic)");
            }
        }
    }

    #[test]
    fn ml_benchmarks_have_eleven_jobs_and_chain_their_data() {
        let jobs = iterative_ml(&MlConfig::default());
        assert_eq!(jobs, iterative_ml(&MlConfig::default()));
        assert_eq!(jobs.len(), 27 * 11);
        check_dag(&jobs);
        // PageRank iterations read only their parent's output.
        let pr: Vec<&DagJob> = jobs
            .iter()
            .filter(|j| j.name.starts_with("pagerank") && j.name.ends_with("iter5"))
            .collect();
        assert!(!pr.is_empty());
        assert!(pr.iter().all(|j| j.base_input.0 == 0 && j.parents.len() == 1));
        // Bayes' tf-idf has two parents.
        assert!(jobs
            .iter()
            .any(|j| j.name.ends_with("/tfidf") && j.parents.len() == 2));
    }

    #[test]
    fn a_childs_blocks_of_parent_output_are_marked_with_their_writer() {
        let topo = topo(6, 6);
        let dag = iterative_ml(&MlConfig {
            benchmarks: 3,
            size_scale: 0.05,
            ..MlConfig::default()
        });
        let rates = TaskRates::default();
        let jobs = to_jobs(&dag, &topo, Bytes(128_000_000), &rates, 1);
        crate::model::job::validate_jobs(&jobs, &topo).expect("valid jobs");
        for (d, j) in dag
            .iter()
            .map(|d| (d, jobs.iter().find(|j| j.id.0 == d.id).expect("job")))
        {
            let written: u64 = j
                .maps
                .iter()
                .filter(|m| m.written_by.is_some())
                .map(|m| m.input.0)
                .sum();
            let base: u64 = j
                .maps
                .iter()
                .filter(|m| m.written_by.is_none())
                .map(|m| m.input.0)
                .sum();
            assert_eq!(base, d.base_input.0.max(u64::from(written == 0)), "{}", d.name);
            for p in &d.parents {
                let parent = jobs.iter().find(|x| x.id.0 == *p).expect("parent");
                let pd = dag.iter().find(|x| x.id == *p).expect("parent");
                let from_p: u64 = j
                    .maps
                    .iter()
                    .filter(|m| m.written_by == Some(JobId(*p)))
                    .map(|m| m.input.0)
                    .sum();
                let out = (parent.input_bytes().0 as f64 * pd.output_ratio) as u64;
                assert_eq!(from_p, out, "{} reads all of {}'s output", d.name, pd.name);
            }
        }
    }

    #[test]
    fn queries_average_about_six_jobs_some_with_two_parent_jobs() {
        let cfg = QueryConfig {
            queries: 220,
            ..QueryConfig::default()
        };
        let jobs = tpch_like(&cfg);
        assert_eq!(jobs, tpch_like(&cfg));
        check_dag(&jobs);
        let per_query = jobs.len() as f64 / 220.0;
        assert!((4.0..=7.0).contains(&per_query), "{per_query}");
        assert!(jobs.iter().any(|j| j.parents.len() == 2));
        assert!(jobs.iter().all(|j| j.arrival <= cfg.window));
    }
}
