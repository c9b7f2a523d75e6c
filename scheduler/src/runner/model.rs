//! Real bytes against the model: after a run on the kernel fabric
//! (`ocslab demo`, `ocslab run --model-draws N`), the same experiment in
//! the simulator with every link at TCP's payload rate, which is what real
//! bytes reach ([`LinkRates::TcpPayload`]), once as it is (the *model*)
//! and as jittered twins (the *band*, [`super::jitter`]). Each
//! scheduler's average JCT, average CCT and cross-rack bytes is then set
//! against both: its ratio to the model, and whether it lies inside the
//! band.
//!
//! The ratio alone cannot tell a fault of the emulator from the model's
//! own sensitivity: Fair and NAS place each task on whichever slot frees
//! first, so inputs moved by a fraction of a percent can change a
//! placement and every figure after it. The band is how far the model
//! itself moves when its inputs move by what real bytes move them
//! ([`MODEL_JITTER`]); a figure outside it is worth a look
//! (docs/emulation.md, "The demo, emulated and simulated").

use super::jitter::{run_twins, Jitter};
use super::{LinkRates, RunnerError, Simulator};
use crate::experiment::Experiment;
use crate::progress::Progress;
use crate::report::spread::{self, RunSpread, Spread};
use crate::report::SchedulerSummary;
use serde::Serialize;
use std::fmt;

/// How far the twins move each link rate and host speed: ±2 %, the scale
/// by which real bytes move task times (a map that starts at the same time
/// on the same host takes −0.6 % to +3.2 % of its payload-rate time on
/// real bytes, p5–p95 over 2,240 maps of 16 demo runs).
pub const MODEL_JITTER: f64 = 0.02;

/// How many twins `ocslab demo` runs, the plain run included (a fraction
/// of a second on 2 cores for the demo).
pub const MODEL_DRAWS: u32 = 40;

/// One figure of a real run set against the model.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Against {
    /// Measured on real bytes.
    pub real: f64,
    /// The model's plain run.
    pub model: f64,
    /// `real / model` (NaN when the model's is 0).
    pub ratio: f64,
    /// The lowest over the twins.
    pub band_low: f64,
    /// The highest over the twins.
    pub band_high: f64,
    /// Where `real` lies against the band.
    pub place: Place,
}

/// Where a figure lies against the band.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Place {
    /// Under its lowest twin.
    Below,
    /// Within it, ends included.
    Inside,
    /// Over its highest twin.
    Above,
}

impl Against {
    /// `real` against the plain run's `model` and the twins' `band`.
    pub fn new(real: f64, model: f64, band: &Spread) -> Against {
        let place = if real < band.min {
            Place::Below
        } else if real > band.max {
            Place::Above
        } else {
            Place::Inside
        };
        Against {
            real,
            model,
            ratio: if model == 0.0 { f64::NAN } else { real / model },
            band_low: band.min,
            band_high: band.max,
            place,
        }
    }
}

/// One scheduler's figures against the model.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ModelRow {
    /// Task scheduler.
    pub scheduler: String,
    /// Mean job completion time, seconds.
    pub avg_jct_s: Against,
    /// Mean shuffle coflow completion time, seconds.
    pub avg_cct_s: Against,
    /// Bytes between racks, in GB (10⁹ B).
    pub cross_rack_gb: Against,
}

impl ModelRow {
    fn figures(&self) -> [&Against; 3] {
        [&self.avg_jct_s, &self.avg_cct_s, &self.cross_rack_gb]
    }
}

/// A real run against the model, scheduler by scheduler.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ModelCheck {
    /// The rates of the model's links ([`LinkRates::name`]).
    pub link_rates: &'static str,
    /// How far each twin moves each input ([`MODEL_JITTER`]).
    pub jitter: f64,
    /// Twins, the plain run included.
    pub draws: u32,
    /// The schedulers the real run and the model share, in the run's order.
    pub rows: Vec<ModelRow>,
}

impl ModelCheck {
    /// Sets `real` (a run's summaries) against the model's `plain` run and
    /// the `band` over its twins; schedulers are matched by name.
    pub fn new(
        real: &[SchedulerSummary],
        plain: &[SchedulerSummary],
        band: &[RunSpread],
        draws: u32,
    ) -> ModelCheck {
        let gb = |bytes: u64| bytes as f64 / 1e9;
        let rows = real
            .iter()
            .filter_map(|r| {
                let p = plain.iter().find(|p| p.name == r.name)?;
                let b = band.iter().find(|b| b.name == r.name)?;
                let in_gb = Spread {
                    min: b.cross_rack_bytes.min / 1e9,
                    max: b.cross_rack_bytes.max / 1e9,
                    ..b.cross_rack_bytes
                };
                Some(ModelRow {
                    scheduler: r.name.clone(),
                    avg_jct_s: Against::new(r.avg_jct_s, p.avg_jct_s, &b.avg_jct_s),
                    avg_cct_s: Against::new(r.avg_cct_s, p.avg_cct_s, &b.avg_cct_s),
                    cross_rack_gb: Against::new(gb(r.cross_rack_bytes), gb(p.cross_rack_bytes), &in_gb),
                })
            })
            .collect();
        ModelCheck {
            link_rates: LinkRates::TcpPayload.name(),
            jitter: MODEL_JITTER,
            draws,
            rows,
        }
    }

    /// (figures inside the band, figures).
    pub fn inside(&self) -> (usize, usize) {
        let all = self.rows.iter().flat_map(ModelRow::figures);
        let inside = all.clone().filter(|a| a.place == Place::Inside).count();
        (inside, all.count())
    }
}

/// Runs the model of `exp` (`draws` twins at TCP's payload rates, at
/// least the plain run, up to `threads` at once) and sets `real` against
/// it.
pub fn check(
    exp: &Experiment,
    real: &[SchedulerSummary],
    draws: u32,
    threads: usize,
) -> Result<ModelCheck, RunnerError> {
    let jitter = Jitter::new(MODEL_JITTER).expect("MODEL_JITTER is in range");
    let sim = Simulator {
        link_rates: LinkRates::TcpPayload,
        ..Simulator::default()
    };
    let draws = draws.max(1);
    let twins = run_twins(exp, sim, jitter, draws, threads)?;
    let band = spread::over_runs(&twins);
    Ok(ModelCheck::new(real, &twins[0], &band, draws))
}

/// [`check`] after a run on real bytes, which must not be lost to it: says
/// on `bar` that the model runs, and if it fails, logs why (a warning,
/// shown even with `--json`) and returns `None`.
pub fn check_after_real(
    exp: &Experiment,
    real: &[SchedulerSummary],
    draws: u32,
    bar: &Progress,
) -> Option<ModelCheck> {
    bar.println(format!(
        "setting the runs against the model ({draws} simulated twins)"
    ));
    check(exp, real, draws, super::default_threads())
        .map_err(|e| tracing::warn!("the model could not be run, so the runs are not set against it: {e}"))
        .ok()
}

impl fmt::Display for ModelCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "against the model: the same jobs simulated at TCP's payload rate; x = real / model, \
             [band] = lowest-highest of {} twins with link rates and host speeds within ±{} %",
            self.draws,
            self.jitter * 100.0
        )?;
        let cell = |a: &Against, digits: usize| {
            let place = match a.place {
                Place::Below => "below",
                Place::Inside => "in",
                Place::Above => "above",
            };
            format!(
                "{:.digits$} x{:.2} [{:.digits$}-{:.digits$}] {place}",
                a.real, a.ratio, a.band_low, a.band_high
            )
        };
        let rows: Vec<[String; 4]> = self
            .rows
            .iter()
            .map(|r| {
                [
                    r.scheduler.clone(),
                    cell(&r.avg_jct_s, 2),
                    cell(&r.avg_cct_s, 2),
                    cell(&r.cross_rack_gb, 4),
                ]
            })
            .collect();
        let head = ["scheduler", "avg JCT s", "avg CCT s", "cross-rack GB"].map(String::from);
        // The scheduler column as wide as the tables printed above it.
        let mut width = head.clone().map(|h| h.len());
        width[0] = width[0].max(20);
        for r in &rows {
            for (w, c) in width.iter_mut().zip(r) {
                *w = (*w).max(c.chars().count());
            }
        }
        for r in std::iter::once(&head).chain(&rows) {
            let line = r
                .iter()
                .zip(width)
                .map(|(c, w)| format!("{c:<w$}"))
                .collect::<Vec<_>>()
                .join("  ");
            writeln!(f, "{}", line.trim_end())?;
        }
        let (inside, all) = self.inside();
        write!(
            f,
            "{inside} of {all} figures inside the model's band (docs/emulation.md: how far the model itself moves)"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn band(min: f64, max: f64) -> Spread {
        Spread {
            mean: (min + max) / 2.0,
            sd: 0.0,
            min,
            max,
        }
    }

    #[test]
    fn a_figure_is_placed_against_the_band_ends_included() {
        let b = band(2.0, 3.0);
        assert_eq!(Against::new(1.99, 2.5, &b).place, Place::Below);
        assert_eq!(Against::new(2.0, 2.5, &b).place, Place::Inside);
        assert_eq!(Against::new(3.0, 2.5, &b).place, Place::Inside);
        assert_eq!(Against::new(3.01, 2.5, &b).place, Place::Above);
        let a = Against::new(2.75, 2.5, &b);
        assert!((a.ratio - 1.1).abs() < 1e-12, "{}", a.ratio);
        assert!(Against::new(1.0, 0.0, &b).ratio.is_nan());
    }

    /// Each column starts where its header does, however wide a cell is.
    #[test]
    fn the_table_keeps_its_columns_aligned() {
        let row = |name: &str, real: f64| ModelRow {
            scheduler: name.into(),
            avg_jct_s: Against::new(real, 1.0, &band(0.5, 1.5)),
            avg_cct_s: Against::new(1.0, 1.0, &band(0.5, 1.5)),
            cross_rack_gb: Against::new(2.0, 2.0, &band(2.0, 2.0)),
        };
        let check = ModelCheck {
            link_rates: "tcp-payload",
            jitter: MODEL_JITTER,
            draws: 3,
            rows: vec![row("fair", 1.0), row("coscheduler", 123.456)],
        };
        let text = check.to_string();
        let all: Vec<&str> = text.lines().collect();
        assert_eq!(all.len(), 5, "{text}");
        assert!(all[4].starts_with("5 of 6 figures inside"), "{text}");
        let lines = &all[1..4];
        // Where each field starts: a non-blank after two blanks, or the line's start.
        let starts = |line: &str| -> Vec<usize> {
            let b = line.as_bytes();
            (0..b.len())
                .filter(|&i| b[i] != b' ' && (i == 0 || (i >= 2 && b[i - 1] == b' ' && b[i - 2] == b' ')))
                .collect()
        };
        let head = starts(lines[0]);
        assert_eq!(head.len(), 4, "{text}");
        for l in &lines[1..] {
            assert_eq!(starts(l), head, "{text}");
            assert_eq!(l.trim_end(), *l, "no trailing blanks");
        }
        assert!(lines[2].contains("123.46 x123.46 [0.50-1.50] above"), "{text}");
        assert_eq!(check.inside(), (5, 6));
    }

    /// The demo's own model set against itself: every ratio is 1 and every
    /// figure inside; a run twice as slow is above the band in time and
    /// stays inside it in bytes.
    #[test]
    fn the_model_against_itself_is_inside_and_a_slower_run_is_above() {
        let exp = crate::demo::experiment_for_test("model-check");
        let sim = Simulator {
            link_rates: LinkRates::TcpPayload,
            ..Simulator::default()
        };
        let jitter = Jitter::new(MODEL_JITTER).expect("in range");
        let plain = run_twins(&exp, sim, jitter, 1, 2)
            .expect("the plain run")
            .remove(0);
        let c = check(&exp, &plain, 6, 2).expect("the model");
        assert_eq!(c.rows.len(), exp.task_schedulers.len());
        assert_eq!(c.inside(), (3 * c.rows.len(), 3 * c.rows.len()));
        for r in &c.rows {
            for a in r.figures() {
                assert_eq!(a.ratio, 1.0, "{}: {a:?}", r.scheduler);
            }
        }
        // Some twin moved some figure: the band is not a point.
        assert!(c
            .rows
            .iter()
            .flat_map(ModelRow::figures)
            .any(|a| a.band_low < a.band_high));
        let slower: Vec<SchedulerSummary> = plain
            .iter()
            .map(|s| SchedulerSummary {
                avg_jct_s: 2.0 * s.avg_jct_s,
                avg_cct_s: 2.0 * s.avg_cct_s,
                ..s.clone()
            })
            .collect();
        let band = spread::over_runs(&run_twins(&exp, sim, jitter, 6, 2).expect("twins"));
        let against = ModelCheck::new(&slower, &plain, &band, 6);
        for r in &against.rows {
            assert_eq!(r.avg_jct_s.place, Place::Above, "{}", r.scheduler);
            assert_eq!(r.avg_cct_s.place, Place::Above, "{}", r.scheduler);
            assert_eq!(r.cross_rack_gb.place, Place::Inside, "{}", r.scheduler);
            assert_eq!(r.avg_jct_s.ratio, 2.0);
        }
    }

    /// A model that cannot run leaves the real run without a table rather
    /// than failing it.
    #[test]
    fn a_model_that_fails_is_dropped_not_raised() {
        let mut exp = crate::demo::experiment_for_test("model-fails");
        exp.task_schedulers = vec!["no-such-scheduler".into()];
        assert!(check(&exp, &[], 2, 1).is_err());
        assert_eq!(check_after_real(&exp, &[], 2, &Progress::hidden(0)), None);
    }
}
