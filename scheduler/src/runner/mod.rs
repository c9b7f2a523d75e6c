//! One runner for an experiment's task schedulers, whichever driver moves
//! the bytes ([`Driver`]: the simulator or the kernel fabric): each
//! scheduler runs on the same jobs under one progress bar, their summaries
//! are normalized to the first, and [`Runs::write`] writes the results
//! folder of [`crate::report::results`] plus what the driver measured
//! beyond it; [`table`] prints what `ocslab sim` and `ocslab run` show.
//! `ocslab sim`, `ocslab run` and `ocslab demo` run through it.

mod driver;
pub mod jitter;
pub mod model;
pub mod table;

pub use driver::{Driver, Emulator, LinkRates, Simulator};

use crate::experiment::{Experiment, ExperimentError};
use crate::model::job::Job;
use crate::progress::Progress;
use crate::report::results::{self, ResultsError};
use crate::report::{normalize, SchedulerSummary};
use crate::sim::{SimOutcome, SimProgress};
use ocslab_emulator::Bytes;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Why a run of an experiment failed.
#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    /// The experiment (or a file it names) is invalid.
    #[error(transparent)]
    Experiment(#[from] ExperimentError),
    /// A simulated run failed.
    #[error(transparent)]
    Sim(#[from] crate::sim::RunError),
    /// An emulated run failed.
    #[error("task scheduler {scheduler}: {message}")]
    Emu {
        /// The scheduler being run.
        scheduler: String,
        /// What failed.
        message: String,
    },
    /// A file of the results folder could not be written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The results folder could not be written.
    #[error(transparent)]
    Results(#[from] ResultsError),
    /// The threads to run schedulers on could not be started.
    #[error("could not start the runs' threads: {0}")]
    Threads(String),
}

/// Every task scheduler of an experiment, run by one driver.
#[derive(Debug)]
pub struct Runs {
    /// The driver's name (`"sim"` or `"emu"`).
    pub driver: &'static str,
    /// One outcome per task scheduler, in the experiment's order.
    pub outcomes: Vec<SimOutcome>,
    /// Their summaries, normalized to the first scheduler's.
    pub summaries: Vec<SchedulerSummary>,
    /// Wall-clock time of the runs, seconds.
    pub wall_s: f64,
}

/// Runs every task scheduler of `exp` with `driver` on the experiment's
/// jobs: up to `threads` at once when the driver can fork
/// ([`Driver::fork`]: the simulator), else one after the other. Outcomes
/// come back in the experiment's order whatever the thread count, and are
/// the same (each run owns its engine, network and policies). `bar` shows
/// jobs done over all runs, bytes moved and the schedulers running.
pub fn run_all(
    driver: &mut dyn Driver,
    exp: &Experiment,
    bar: &Progress,
    threads: usize,
) -> Result<Runs, RunnerError> {
    let jobs = exp.jobs()?;
    bar.set_total_jobs((jobs.len() * exp.task_schedulers.len()) as u64);
    let start = Instant::now();
    let kind = driver.name();
    let forks: Option<Vec<Box<dyn Driver + Send>>> = (threads > 1 && exp.task_schedulers.len() > 1)
        .then(|| exp.task_schedulers.iter().map(|_| driver.fork()).collect())
        .flatten();
    let outcomes = match forks {
        Some(forks) => run_concurrently(forks, exp, &jobs, bar, threads)?,
        None => run_one_by_one(driver, exp, jobs, bar)?,
    };
    let wall_s = start.elapsed().as_secs_f64();
    bar.finish();
    let mut summaries: Vec<SchedulerSummary> = outcomes
        .iter()
        .enumerate()
        .map(|(i, o)| driver.summary(i, o))
        .collect();
    normalize(&mut summaries);
    Ok(Runs {
        driver: kind,
        outcomes,
        summaries,
        wall_s,
    })
}

/// The threads runs use unless told: one per core this process may use.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Each scheduler in turn with `driver`; the last one takes `jobs`, the
/// others a copy.
fn run_one_by_one(
    driver: &mut dyn Driver,
    exp: &Experiment,
    mut jobs: Vec<Job>,
    bar: &Progress,
) -> Result<Vec<SimOutcome>, RunnerError> {
    let kind = driver.name();
    let runs = exp.task_schedulers.len();
    let mut outcomes = Vec::with_capacity(runs);
    let (mut done, mut moved) = (0u64, Bytes(0));
    let count = jobs.len() as u64;
    for (i, name) in exp.task_schedulers.iter().enumerate() {
        bar.set_message(format!("{name} ({kind})"));
        let these = if i + 1 == runs {
            std::mem::take(&mut jobs)
        } else {
            jobs.clone()
        };
        let out = driver.run(exp, name, these, &mut |p| {
            bar.set_jobs_done(done + p.jobs_done as u64);
            bar.set_bytes(moved + p.bytes);
            bar.set_message(format!("{name} ({kind}), run time {:.1} s", p.now.as_secs_f64()));
        })?;
        done += count;
        moved += out.net.eps_bytes + out.net.ocs_bytes;
        bar.set_jobs_done(done);
        bar.set_bytes(moved);
        outcomes.push(out);
    }
    Ok(outcomes)
}

/// Each scheduler on its own fork of the driver, `threads` at a time
/// (a rayon pool of that size), outcomes in the experiment's order.
fn run_concurrently(
    forks: Vec<Box<dyn Driver + Send>>,
    exp: &Experiment,
    jobs: &[Job],
    bar: &Progress,
    threads: usize,
) -> Result<Vec<SimOutcome>, RunnerError> {
    use rayon::prelude::*;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| RunnerError::Threads(e.to_string()))?;
    let tally = Tally::new(bar.clone(), exp.task_schedulers.len());
    pool.install(|| {
        forks
            .into_par_iter()
            .zip(exp.task_schedulers.par_iter())
            .enumerate()
            .map(|(i, (mut driver, name))| {
                tally.started(i, name);
                let out = driver.run(exp, name, jobs.to_vec(), &mut |p| tally.progress(i, p))?;
                tally.finished(i, jobs.len() as u64, &out);
                Ok(out)
            })
            .collect()
    })
}

/// The progress of runs going on at once, summed into one bar.
struct Tally {
    bar: Progress,
    /// Per run: jobs done, bytes moved, and its name while it runs.
    runs: std::sync::Mutex<Vec<(u64, Bytes, Option<String>)>>,
}

impl Tally {
    fn new(bar: Progress, runs: usize) -> Tally {
        Tally {
            bar,
            runs: std::sync::Mutex::new(vec![(0, Bytes(0), None); runs]),
        }
    }

    fn update(&self, f: impl FnOnce(&mut (u64, Bytes, Option<String>)), i: usize) {
        // A poisoned lock only means another run panicked; the counts are still whole numbers.
        let mut runs = self.runs.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut runs[i]);
        self.bar.set_jobs_done(runs.iter().map(|r| r.0).sum());
        self.bar.set_bytes(runs.iter().map(|r| r.1).sum());
        let running: Vec<&str> = runs.iter().filter_map(|r| r.2.as_deref()).collect();
        self.bar.set_message(format!("running {}", running.join(", ")));
    }

    fn started(&self, i: usize, name: &str) {
        self.update(|r| r.2 = Some(name.to_string()), i);
    }

    fn progress(&self, i: usize, p: &SimProgress) {
        self.update(
            |r| {
                r.0 = p.jobs_done as u64;
                r.1 = p.bytes;
            },
            i,
        );
    }

    fn finished(&self, i: usize, jobs: u64, out: &SimOutcome) {
        self.update(
            |r| {
                *r = (jobs, out.net.eps_bytes + out.net.ocs_bytes, None);
            },
            i,
        );
    }
}

impl Runs {
    /// Writes the results folder `dir` of these runs of `exp`, and what
    /// `driver` (the one that ran them) measured beyond the outcomes.
    pub fn write(&self, dir: &Path, exp: &Experiment, driver: &dyn Driver) -> Result<(), RunnerError> {
        let extra = driver.run_json();
        results::write_as(dir, self.driver, exp, &self.outcomes, &self.summaries, &extra)?;
        driver.write_extras(dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    /// Runs `file` under the simulator on `threads` threads.
    fn simulate(file: &str, threads: usize) -> Runs {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../experiments")
            .join(file);
        let exp = Experiment::load(&path).expect("a shipped experiment loads");
        run_all(&mut Simulator::default(), &exp, &Progress::hidden(0), threads).expect("the experiment runs")
    }

    /// Results do not depend on how many schedulers run at once: every
    /// record, byte count and circuit of a 1-thread run equals a 2-thread
    /// run's, scheduler by scheduler, in the experiment's order. The
    /// experiments mix randomized placement (Delay's skips, Hadoop's fetcher
    /// draws), circuits (Sunflow) and several schedulers per pool thread.
    #[test]
    fn outcomes_do_not_depend_on_the_thread_count() {
        for file in ["lab-baselines.toml", "coscheduler-lab.toml"] {
            let one = simulate(file, 1);
            let two = simulate(file, 2);
            assert_eq!(one.outcomes.len(), two.outcomes.len(), "{file}");
            assert!(one.outcomes.len() > 2, "{file}: more schedulers than threads");
            for (a, b) in one.outcomes.iter().zip(&two.outcomes) {
                assert!(!a.records.jobs.is_empty(), "{file}: {} ran no job", a.policy);
                assert_eq!(a, b, "{file}: {} differs between 1 and 2 threads", a.policy);
            }
            assert_eq!(one.summaries, two.summaries, "{file}");
        }
    }

    /// At TCP's payload rates the simulator's links run with every shaped
    /// rate cut to 1448/1514 of it while the policies see the topology's,
    /// it says so in `run.json`, and its flows take longer.
    #[test]
    fn payload_rates_cut_every_shaped_rate_and_say_so() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../experiments/lab-baselines.toml");
        let exp = Experiment::load(&path).expect("a shipped experiment loads");
        let payload = Simulator {
            link_rates: LinkRates::TcpPayload,
            ..Simulator::default()
        };
        let (t, w) = (&exp.topology, payload.wire(&exp));
        for (nominal, got) in [
            (t.host_rate, w.host_rate),
            (t.uplink_rate, w.uplink_rate),
            (t.ocs_port_rate, w.ocs_port_rate),
        ] {
            assert_eq!(got.0, (nominal.0 as f64 * 1448.0 / 1514.0).round() as u64);
        }
        assert_eq!(
            (w.racks, w.hosts_per_rack, w.reconfig_delay),
            (t.racks, t.hosts_per_rack, t.reconfig_delay)
        );
        assert!(matches!(Simulator::default().wire(&exp), Cow::Borrowed(_)));
        assert_eq!(payload.run_json(), [("link_rates", "tcp-payload".into())]);

        let mut nominal = Simulator::default();
        let mut slower = payload;
        let bar = Progress::hidden(0);
        let mut first = exp.clone();
        first
            .keep_task_schedulers(&exp.task_schedulers[..1])
            .expect("its own scheduler");
        let a = run_all(&mut nominal, &first, &bar, 1).expect("runs");
        let b = run_all(&mut slower, &first, &bar, 1).expect("runs");
        let total = |r: &Runs| -> f64 {
            let flows = &r.outcomes[0].records.flows;
            flows
                .iter()
                .filter_map(|f| f.finished.map(|end| (end - f.started).as_secs_f64()))
                .sum()
        };
        assert!(
            total(&b) > total(&a),
            "{} s of flow time at payload rates, {} s nominal",
            total(&b),
            total(&a)
        );
    }

    /// A rate factor multiplies what the links run at (after the payload
    /// cut), says so in `run.json`, and leaves the rest of the topology.
    #[test]
    fn a_rate_factor_multiplies_the_wire_and_says_so() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../experiments/lab-baselines.toml");
        let exp = Experiment::load(&path).expect("a shipped experiment loads");
        let payload = Simulator {
            link_rates: LinkRates::TcpPayload,
            ..Simulator::default()
        };
        let jittered = Simulator {
            rate_factor: 0.99,
            ..payload
        };
        let (p, w) = (payload.wire(&exp), jittered.wire(&exp));
        for (base, got) in [
            (p.host_rate, w.host_rate),
            (p.uplink_rate, w.uplink_rate),
            (p.ocs_port_rate, w.ocs_port_rate),
        ] {
            assert_eq!(got.0, (base.0 as f64 * 0.99).round() as u64);
        }
        assert_eq!((w.racks, w.scale), (p.racks, p.scale));
        assert_eq!(
            jittered.run_json(),
            [
                ("link_rates", "tcp-payload".into()),
                ("link_rate_factor", 0.99.into())
            ]
        );
    }
}
