//! The workload of Co-scheduler's evaluation (Li & Shen, ToN 2022, Sec. V-A/B):
//! jobs drawn from the SWIM Facebook workload (FB-2010, Chen et al.,
//! MASCOTS'11), 50% of them recurring, 20 users, arrivals uniform in
//! [0, 90] minutes. Built on the engine's SWIM model ([`SwimModel`]) with
//! Sec. V's settings; what this module adds is the draw of the jobs and the
//! settings themselves.
//!
//! What the trace gives per job: input, shuffle and output bytes. The rest is
//! modelled, deterministically for a seed:
//! - **Which jobs**: `jobs` records drawn without replacement from the whole
//!   trace ("1000 jobs selected from the workload"), kept in trace order.
//! - **Map tasks**: one per 256 MB block (the block size of Sec. III-A's
//!   example), at least one. **Reduce tasks**: one per GB of shuffle **plus
//!   output** (rounded up), at least one, none for a job that shuffles
//!   nothing. The paper replayed the jobs with SWIM's tools (Sec. V-A), whose
//!   replay script sizes reduces so (`GenerateReplayScript`:
//!   `round((shuffle + output) / dataPerReduce)`, to the nearest where ocslab
//!   rounds up);
//!   Sec. III-A's 10 GB TeraSort "typically" has 10. Counting the output
//!   matters: with reduces per GB of shuffle alone, job15913 (14.7 KB of
//!   shuffle, 137 GB of output) would get one reduce of 6873 s, which alone
//!   would set the 1000-job makespan.
//! - **Task durations**: the paper replayed each job on a single-node Hadoop
//!   and recorded them; ocslab cannot, so a task takes a 1 s launch overhead
//!   plus its bytes at 20 MB/s (160 Mbit/s) per task — a map its block, a
//!   reduce its shuffle share and output share. These are round figures of the
//!   per-task throughput commonly reported for Hadoop MapReduce on commodity
//!   nodes (a 256 MB block in about 14 s), not fitted to any result. The
//!   experiment file's `task_rate` changes it (the load sweeps vary it).
//! - **Users** uniform over 20; **arrivals** uniform in [0, 90 min];
//!   **recurring**: each job with probability 0.5. What prior runs predict of
//!   a recurring job is its truth with a relative error, drawn by the
//!   schedulers that use it ([`crate::policy::coscheduler::forecast`]; knob
//!   `forecast_error` of Corral and Co-scheduler, default 6.5%, the error
//!   Corral reports), so both see the same forecast of the same job.
//! - The jobs are returned in arrival order, the order in which the engine
//!   hands them to [`crate::policy::TaskPolicy::place_input`] (Corral plans
//!   them in that order).

use crate::model::job::Job;
use crate::trace::swim::{ModelError, SwimArrivals, SwimJob, SwimModel};
use ocslab_emulator::{Bps, Bytes, Nanos, Topology};
use rand::seq::index::sample;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use thiserror::Error;

/// Why the workload could not be made.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum Sec5Error {
    /// More jobs asked than the trace has.
    #[error("the workload asks for {asked} jobs but the trace has {available}; use at most {available}")]
    TooFewJobs {
        /// Jobs asked for.
        asked: usize,
        /// Jobs in the trace.
        available: usize,
    },
    /// A model setting out of range.
    #[error(transparent)]
    Model(#[from] ModelError),
}

/// The Sec. V workload: how many jobs and how SWIM jobs become ocslab jobs.
#[derive(Clone, Debug, PartialEq)]
pub struct Sec5 {
    /// Jobs drawn from the trace.
    pub jobs: usize,
    /// The SWIM model with Sec. V's settings.
    pub model: SwimModel,
}

impl Default for Sec5 {
    fn default() -> Sec5 {
        Sec5 {
            jobs: 1000,
            model: SwimModel {
                trace: std::path::PathBuf::new(),
                jobs: None,
                block_size: Bytes(256_000_000),
                reduce_input: Bytes(1_000_000_000),
                reduces_by_shuffle_and_output: true,
                map_rate: Bps(160_000_000),
                reduce_rate: Bps(160_000_000),
                task_overhead: Nanos::from_millis(1_000),
                users: 20,
                recurring_share: 0.5,
                replicas: 3,
                scale: 1.0,
                arrivals: SwimArrivals::Uniform {
                    window: Nanos::from_millis(90 * 60 * 1000),
                },
                arrival_scale: 1.0,
            },
        }
    }
}

/// `n` records of `trace` drawn without replacement by `seed`, in trace order.
pub fn draw(trace: &[SwimJob], n: usize, seed: u64) -> Result<Vec<SwimJob>, Sec5Error> {
    if n > trace.len() {
        return Err(Sec5Error::TooFewJobs {
            asked: n,
            available: trace.len(),
        });
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut picked = sample(&mut rng, trace.len(), n).into_vec();
    picked.sort_unstable();
    Ok(picked.into_iter().map(|i| trace[i].clone()).collect())
}

impl Sec5 {
    /// The workload for `topo` from `trace` and `seed`, in arrival order.
    pub fn jobs(&self, trace: &[SwimJob], topo: &Topology, seed: u64) -> Result<Vec<Job>, Sec5Error> {
        let drawn = draw(trace, self.jobs, seed)?;
        let mut jobs = self.model.to_jobs(&drawn, topo, seed ^ 0x5EC5)?;
        jobs.sort_by_key(|j| (j.arrival, j.id));
        Ok(jobs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace(n: u64) -> Vec<SwimJob> {
        (0..n)
            .map(|i| SwimJob {
                line: i as usize + 1,
                name: format!("job{i}"),
                submit: Nanos(i),
                gap: Nanos(1),
                input: Bytes(i * 300_000_000 + 1),
                shuffle: Bytes(if i % 3 == 0 { 0 } else { i * 150_000_000 }),
                output: Bytes(i * 1_000_000),
            })
            .collect()
    }

    fn topo() -> Topology {
        Topology::builder("t", 6, 2)
            .simulation_only()
            .host_rate(Bps(10_000_000_000))
            .oversubscription(10.0)
            .ocs(
                1,
                Bps(100_000_000_000),
                Nanos::from_millis(10),
                Bytes(1_125_000_000),
            )
            .build()
            .expect("valid")
    }

    #[test]
    fn the_draw_is_a_seeded_subset_in_trace_order() {
        let t = trace(400);
        let a = draw(&t, 200, 42).expect("enough");
        assert_eq!(a, draw(&t, 200, 42).expect("enough"));
        assert_ne!(a, draw(&t, 200, 43).expect("enough"));
        assert!(
            a.windows(2).all(|w| w[0].line < w[1].line),
            "distinct, in trace order"
        );
        assert_eq!(
            draw(&t, 401, 1),
            Err(Sec5Error::TooFewJobs {
                asked: 401,
                available: 400
            })
        );
    }

    #[test]
    fn sec5_settings_shape_the_jobs() {
        // All 400 records drawn, so job10 is in.
        let sec5 = Sec5 {
            jobs: 400,
            ..Sec5::default()
        };
        let jobs = sec5.jobs(&trace(400), &topo(), 7).expect("valid");
        assert_eq!(jobs.len(), 400);
        assert!(
            jobs.windows(2).all(|w| w[0].arrival <= w[1].arrival),
            "arrival order"
        );
        assert!(jobs
            .iter()
            .all(|j| j.user.0 < 20 && j.arrival <= Nanos::from_millis(90 * 60 * 1000)));
        let recurring = jobs.iter().filter(|j| j.recurring).count();
        assert!((150..=250).contains(&recurring), "about half recur: {recurring}");
        // A job with 3 GB + 1 B of input has 11 full 256 MB blocks and a 184 MB + 1 B tail: 12 maps, and a
        // full map takes 1 s + 256 MB at 20 MB/s = 13.8 s.
        let j = jobs.iter().find(|j| j.name == "job10").expect("drawn");
        assert_eq!(j.maps.len(), 11 + 1);
        assert_eq!(j.maps[0].duration, Nanos::from_millis(13_800));
        assert_eq!(j.reduces.len(), 2, "1.5 GB of shuffle: 2 reduces");
    }

    #[test]
    fn reduces_are_sized_by_shuffle_plus_output_as_swim_replays_them() {
        // job15913 of FB-2010: 53 KB in, 14.7 KB shuffled, 137 GB written.
        let heavy_writer = SwimJob {
            line: 1,
            name: "writer".into(),
            submit: Nanos(0),
            gap: Nanos(0),
            input: Bytes(53_552),
            shuffle: Bytes(14_742),
            output: Bytes(137_439_037_409),
        };
        let map_only = SwimJob {
            name: "maponly".into(),
            shuffle: Bytes(0),
            ..heavy_writer.clone()
        };
        let sec5 = Sec5 {
            jobs: 2,
            ..Sec5::default()
        };
        let jobs = sec5.jobs(&[heavy_writer, map_only], &topo(), 1).expect("valid");
        let writer = jobs.iter().find(|j| j.name == "writer").expect("drawn");
        // ceil(137.44 GB / 1 GB) = 138 reduces of 1 s + ~996 MB at 20 MB/s each, not one of 6873 s.
        assert_eq!(writer.reduces.len(), 138);
        let longest = writer.reduces.iter().map(|r| r.duration).max().expect("reduces");
        assert!(longest < Nanos::from_millis(51_000), "{longest:?}");
        let map_only = jobs.iter().find(|j| j.name == "maponly").expect("drawn");
        assert!(
            map_only.reduces.is_empty(),
            "a job that shuffles nothing stays map-only"
        );
    }
}
