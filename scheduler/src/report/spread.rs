//! An experiment repeated over seeds (`ocslab sim --seeds N`) or over
//! jittered twins (`--jitter F --draws N`, [`crate::runner::jitter`]): per
//! task scheduler, the mean and spread over the runs of its makespan,
//! average JCT and CCT and cross-rack bytes, and of their ratios to the
//! baseline (the first scheduler) of the same run, as the papers report
//! the mean of repeated runs (Co-scheduler Sec. V: 20 runs).

use super::SchedulerSummary;
use serde::Serialize;

/// Mean, sample standard deviation, smallest and largest of some values.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Spread {
    /// Their mean.
    pub mean: f64,
    /// Their sample standard deviation (0 for one value).
    pub sd: f64,
    /// The smallest.
    pub min: f64,
    /// The largest.
    pub max: f64,
}

impl Spread {
    /// The spread of `values` (NaN everywhere for none; NaN values, e.g. a
    /// ratio to a zero baseline, are left out).
    pub fn of(values: &[f64]) -> Spread {
        let v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
        let n = v.len() as f64;
        if v.is_empty() {
            return Spread {
                mean: f64::NAN,
                sd: f64::NAN,
                min: f64::NAN,
                max: f64::NAN,
            };
        }
        let mean = v.iter().sum::<f64>() / n;
        let var = if v.len() > 1 {
            v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)
        } else {
            0.0
        };
        Spread {
            mean,
            sd: var.sqrt(),
            min: v.iter().copied().fold(f64::INFINITY, f64::min),
            max: v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        }
    }
}

/// One task scheduler over all runs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunSpread {
    /// The task scheduler.
    pub name: String,
    /// Runs it made (seeds or draws).
    pub runs: usize,
    /// Makespan, seconds.
    pub makespan_s: Spread,
    /// Average JCT, seconds.
    pub avg_jct_s: Spread,
    /// Average CCT, seconds.
    pub avg_cct_s: Spread,
    /// Makespan ÷ the baseline's, seed by seed.
    pub makespan_ratio: Spread,
    /// Average JCT ÷ the baseline's, seed by seed.
    pub avg_jct_ratio: Spread,
    /// Average CCT ÷ the baseline's, seed by seed.
    pub avg_cct_ratio: Spread,
    /// 95th-percentile CCT, seconds.
    pub p95_cct_s: Spread,
    /// 95th-percentile CCT ÷ the baseline's, seed by seed.
    pub p95_cct_ratio: Spread,
    /// Cross-rack bytes.
    pub cross_rack_bytes: Spread,
    /// Cross-rack bytes ÷ the baseline's, seed by seed.
    pub cross_rack_ratio: Spread,
    /// Share of the cross-rack bytes on circuits.
    pub ocs_share: Spread,
    /// Share of the cross-rack shuffle bytes on circuits.
    pub shuffle_ocs_share: Spread,
}

/// Per task scheduler (in the runs' order), the spread over `runs` (one
/// list of normalized summaries per seed or draw, the schedulers in the
/// same order in each).
pub fn over_runs(runs: &[Vec<SchedulerSummary>]) -> Vec<RunSpread> {
    let Some(first) = runs.first() else {
        return Vec::new();
    };
    (0..first.len())
        .map(|i| {
            let of = |f: &dyn Fn(&SchedulerSummary) -> f64| -> Spread {
                Spread::of(&runs.iter().filter_map(|r| r.get(i)).map(f).collect::<Vec<_>>())
            };
            RunSpread {
                name: first[i].name.clone(),
                runs: runs.len(),
                makespan_s: of(&|s| s.makespan_s),
                avg_jct_s: of(&|s| s.avg_jct_s),
                avg_cct_s: of(&|s| s.avg_cct_s),
                makespan_ratio: of(&|s| s.normalized.makespan),
                avg_jct_ratio: of(&|s| s.normalized.avg_jct),
                avg_cct_ratio: of(&|s| s.normalized.avg_cct),
                p95_cct_s: of(&|s| s.p95_cct_s),
                p95_cct_ratio: of(&|s| s.normalized.p95_cct),
                cross_rack_bytes: of(&|s| s.cross_rack_bytes as f64),
                cross_rack_ratio: of(&|s| s.normalized.cross_rack_bytes),
                ocs_share: of(&|s| s.ocs_share),
                shuffle_ocs_share: of(&|s| s.shuffle_ocs_share),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::normalize;

    fn summary(name: &str, makespan: f64, jct: f64, cct: f64) -> SchedulerSummary {
        SchedulerSummary {
            name: name.into(),
            makespan_s: makespan,
            avg_jct_s: jct,
            avg_cct_s: cct,
            p95_cct_s: 2.0 * cct,
            cross_rack_bytes: (10.0 * cct) as u64,
            shuffle_ocs_share: cct / 10.0,
            ..SchedulerSummary::default()
        }
    }

    #[test]
    fn spread_of_a_few_values() {
        let s = Spread::of(&[1.0, 2.0, 3.0, 6.0]);
        assert_eq!(s.mean, 3.0);
        assert!((s.sd - (14.0f64 / 3.0).sqrt()).abs() < 1e-12);
        assert_eq!((s.min, s.max), (1.0, 6.0));
        assert_eq!(Spread::of(&[4.0]).sd, 0.0);
        assert!(Spread::of(&[]).mean.is_nan());
        assert_eq!(Spread::of(&[f64::NAN, 2.0]).mean, 2.0);
    }

    /// Ratios are taken seed by seed, then averaged: with a baseline twice
    /// as slow in one seed and as fast in the other, the other scheduler's
    /// JCT ratio averages (0.5 + 1) / 2, not the ratio of the means.
    #[test]
    fn ratios_are_averaged_over_seeds_not_taken_of_the_means() {
        let mut one = vec![summary("fair", 100.0, 20.0, 4.0), summary("nas", 90.0, 10.0, 2.0)];
        let mut two = vec![
            summary("fair", 100.0, 10.0, 4.0),
            summary("nas", 110.0, 10.0, 6.0),
        ];
        normalize(&mut one);
        normalize(&mut two);
        let s = over_runs(&[one, two]);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].name, "fair");
        assert_eq!(s[0].avg_jct_ratio.mean, 1.0);
        assert_eq!(s[1].runs, 2);
        assert_eq!(s[1].avg_jct_s.mean, 10.0);
        assert_eq!(s[1].avg_jct_ratio.mean, 0.75);
        assert_eq!(s[1].avg_cct_ratio.mean, 1.0);
        assert_eq!((s[1].makespan_ratio.min, s[1].makespan_ratio.max), (0.9, 1.1));
        // The same for the p95 CCT and the cross-rack bytes (both follow
        // the CCT here: 0.5 and 1.5 of the baseline's); shares are averaged.
        assert_eq!(s[1].p95_cct_ratio.mean, 1.0);
        assert_eq!(s[1].cross_rack_ratio.mean, 1.0);
        assert_eq!(
            (s[1].cross_rack_bytes.min, s[1].cross_rack_bytes.max),
            (20.0, 60.0)
        );
        assert_eq!(s[1].p95_cct_s.mean, 8.0);
        assert!((s[1].shuffle_ocs_share.mean - 0.4).abs() < 1e-12);
    }
}
