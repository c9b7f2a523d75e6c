//! Jittered twins of an experiment (`ocslab sim --jitter F --draws N`):
//! the same jobs, seed and schedulers, with every link's rate and each
//! host's compute speed moved by at most a fraction `F`, to show how far a
//! result moves when its inputs move by less than two runs on real bytes
//! differ.
//!
//! A policy that places a task on whichever slot frees first can turn a
//! change of a fraction of a percent into another placement, and the rest
//! of the run follows from it. A single simulated run is then one draw of
//! what the model predicts, and the band over draws is the prediction an
//! emulated run should be set against (docs/emulation.md).
//!
//! Draw 0 is the experiment as it is, so the band always holds the plain
//! run. Draw k > 0 takes, from ChaCha8 seeded by the experiment's seed and
//! k, one factor in [1 − F, 1 + F] for every link rate of the network model
//! (host NICs, uplinks and OCS ports together: the wire the task scheduler
//! does not see, as TCP's framing is) and one factor in [1 − F, 1 + F] per
//! host for its compute speed (on top of any `host_speed` the file sets).
//! A perturbation that sets a host's speed (`speed:`, `straggler:`) sets it
//! as written, without the draw's factor, while it lasts.

use super::{run_all, RunnerError, Simulator};
use crate::experiment::Experiment;
use crate::progress::Progress;
use crate::report::SchedulerSummary;
use ocslab_core::HostId;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use serde::Serialize;
use std::collections::BTreeMap;

/// The largest fraction `--jitter` takes: beyond it the "twin" is another
/// experiment.
pub const MAX_JITTER: f64 = 0.2;

/// How far a draw may move each input, as a fraction (0.01 = ±1 %).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Jitter {
    fraction: f64,
}

impl Jitter {
    /// A jitter of ±`fraction`; errs unless 0 < `fraction` ≤ [`MAX_JITTER`].
    pub fn new(fraction: f64) -> Result<Jitter, String> {
        if fraction > 0.0 && fraction <= MAX_JITTER {
            Ok(Jitter { fraction })
        } else {
            Err(format!(
                "{fraction} is not a fraction in (0, {MAX_JITTER}], e.g. 0.01 for ±1 %"
            ))
        }
    }

    /// The fraction.
    pub fn fraction(self) -> f64 {
        self.fraction
    }

    /// Draw `k` for an experiment of `seed` on `hosts`: the same for the
    /// same arguments, the identity for `k = 0`.
    pub fn draw(self, seed: u64, k: u32, hosts: impl Iterator<Item = HostId>) -> Draw {
        if k == 0 {
            return Draw {
                draw: 0,
                rate_factor: 1.0,
                host_speed: hosts.map(|h| (h, 1.0)).collect(),
            };
        }
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ (u64::from(k) << 32) ^ 0x6a69_7474_6572);
        let f = self.fraction;
        let mut factor = || 1.0 + rng.random_range(-f..=f);
        let rate_factor = factor();
        let host_speed = hosts.map(|h| (h, factor())).collect();
        Draw {
            draw: k,
            rate_factor,
            host_speed,
        }
    }
}

/// One jittered twin's inputs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Draw {
    /// Its number (0: the experiment as it is).
    pub draw: u32,
    /// What every link rate of the network model is multiplied by.
    pub rate_factor: f64,
    /// What each host's compute speed is multiplied by.
    #[serde(serialize_with = "by_name")]
    pub host_speed: BTreeMap<HostId, f64>,
}

impl Draw {
    /// `sim` with this draw's link-rate factor.
    pub fn simulator(&self, sim: Simulator) -> Simulator {
        Simulator {
            rate_factor: self.rate_factor,
            ..sim
        }
    }

    /// `exp` with this draw's compute speeds (the link rates go to the
    /// simulator: [`Draw::simulator`]).
    pub fn apply(&self, exp: &Experiment) -> Experiment {
        let mut e = exp.clone();
        for (&h, &f) in &self.host_speed {
            let speed = e.engine.host_speed.entry(h).or_insert(1.0);
            *speed *= f;
        }
        e
    }
}

/// Draws 0 to `draws − 1` of `exp` under `jitter`, each run with `sim`
/// and its draw's factors, up to `threads` draws at once, nothing written:
/// per draw, the schedulers' summaries in the experiment's order. A
/// simulated run reads no clock, so the result does not depend on
/// `threads`.
pub fn run_twins(
    exp: &Experiment,
    sim: Simulator,
    jitter: Jitter,
    draws: u32,
    threads: usize,
) -> Result<Vec<Vec<SchedulerSummary>>, RunnerError> {
    let twin = |k: u32| -> Result<Vec<SchedulerSummary>, RunnerError> {
        let d = jitter.draw(exp.seed, k, exp.topology.host_ids());
        let mut sim = d.simulator(sim);
        Ok(run_all(&mut sim, &d.apply(exp), &Progress::hidden(0), 1)?.summaries)
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .build()
        .map_err(|e| RunnerError::Threads(e.to_string()))?;
    pool.install(|| (0..draws).into_par_iter().map(twin).collect())
}

fn by_name<S: serde::Serializer>(m: &BTreeMap<HostId, f64>, s: S) -> Result<S::Ok, S::Error> {
    s.collect_map(m.iter().map(|(h, f)| (h.to_string(), f)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts() -> impl Iterator<Item = HostId> {
        (0..2).flat_map(|r| (0..3).map(move |h| HostId::new(r, h)))
    }

    #[test]
    fn draw_zero_is_the_experiment_as_it_is() {
        let d = Jitter::new(0.05).expect("valid").draw(7, 0, hosts());
        assert_eq!(d.rate_factor, 1.0);
        assert_eq!(d.host_speed.len(), 6);
        assert!(d.host_speed.values().all(|&f| f == 1.0));
    }

    /// Every factor stays within ±F, the same arguments give the same
    /// draw, and another draw or seed gives another.
    #[test]
    fn draws_stay_within_the_fraction_and_repeat() {
        let j = Jitter::new(0.01).expect("valid");
        let mut rates = Vec::new();
        for k in 1..200 {
            let d = j.draw(4, k, hosts());
            assert_eq!(d, j.draw(4, k, hosts()), "draw {k} repeats");
            assert!((0.99..=1.01).contains(&d.rate_factor), "{}", d.rate_factor);
            assert!(d.host_speed.values().all(|f| (0.99..=1.01).contains(f)));
            rates.push(d.rate_factor);
        }
        assert_ne!(j.draw(4, 1, hosts()), j.draw(5, 1, hosts()));
        // Spread over the range, not stuck at one end.
        let (lo, hi) = rates
            .iter()
            .fold((2.0f64, 0.0f64), |(l, h), &r| (l.min(r), h.max(r)));
        assert!(lo < 0.992 && hi > 1.008, "{lo}..{hi}");
    }

    #[test]
    fn a_fraction_outside_the_range_is_refused() {
        for bad in [0.0, -0.1, 0.5, f64::NAN] {
            assert!(Jitter::new(bad).is_err(), "{bad}");
        }
        assert!(Jitter::new(MAX_JITTER).is_ok());
    }

    /// Every task scheduler finishes every job of the demo's experiment in
    /// 20 twins of each of two seeds, at TCP's payload rates (as
    /// `ocslab demo` runs its model). A run that stalls is an error of
    /// `run_twins`: twins of seed 19 (draws 15 and 37) once left NAS
    /// skipping a map on an idle cluster with no event left to bring the
    /// offers that count its skips.
    #[test]
    fn every_task_scheduler_finishes_the_demos_twins() {
        let mut exp = crate::demo::experiment_for_test("jitter-all");
        exp.task_schedulers = crate::policy::names().into_iter().map(String::from).collect();
        let sim = Simulator {
            link_rates: super::super::LinkRates::TcpPayload,
            ..Simulator::default()
        };
        let jitter = Jitter::new(0.02).expect("in range");
        for seed in [19, 20] {
            exp.seed = seed;
            let jobs = exp.jobs().expect("jobs").len();
            let twins = run_twins(&exp, sim, jitter, 20, super::super::default_threads())
                .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
            for (k, twin) in twins.iter().enumerate() {
                assert_eq!(twin.len(), exp.task_schedulers.len());
                for s in twin {
                    assert_eq!(s.jobs, jobs, "seed {seed}, draw {k}, {}", s.name);
                }
            }
        }
    }
}
