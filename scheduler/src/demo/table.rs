//! The demo's table: one row per task scheduler with makespan, average JCT,
//! average and p95 CCT, the share of bytes over the OCS and the cross-rack
//! gigabytes, each also as a ratio to the baseline (Fair). The figures are
//! [`SchedulerSummary`]'s, i.e. those of `summary.json`, and each can be
//! recomputed from the run's CSVs (the definitions are in
//! [`crate::report::summary`]).

use crate::report::SchedulerSummary;
use serde::Serialize;
use std::fmt;

/// One scheduler's row.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DemoRow {
    /// Task scheduler.
    pub scheduler: String,
    /// Jobs finished.
    pub jobs: usize,
    /// Last job finish − first job arrival, seconds.
    pub makespan_s: f64,
    /// Mean job completion time, seconds.
    pub avg_jct_s: f64,
    /// Mean shuffle coflow completion time, seconds.
    pub avg_cct_s: f64,
    /// 95th-percentile (nearest-rank) shuffle CCT, seconds.
    pub p95_cct_s: f64,
    /// Share of the cross-rack bytes that crossed on a circuit, in percent
    /// (see [`crate::report::summary`]).
    pub ocs_percent: f64,
    /// Bytes between racks (input reads and shuffle), in GB (10⁹ B).
    pub cross_rack_gb: f64,
    /// Cross-rack bytes over the EPS core.
    pub eps_bytes: u64,
    /// Cross-rack bytes over OCS circuits.
    pub ocs_bytes: u64,
    /// Each figure ÷ the baseline's (NaN, shown as "-", when the baseline's is 0).
    pub vs_baseline: Ratios,
}

/// A row's figures divided by the baseline's.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Ratios {
    /// Makespan.
    pub makespan: f64,
    /// Average JCT.
    pub avg_jct: f64,
    /// Average CCT.
    pub avg_cct: f64,
    /// p95 CCT.
    pub p95_cct: f64,
    /// OCS share.
    pub ocs_percent: f64,
    /// Cross-rack bytes.
    pub cross_rack: f64,
}

/// The table, baseline first.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DemoTable {
    /// The baseline's name.
    pub baseline: String,
    /// One row per scheduler, in the order run.
    pub rows: Vec<DemoRow>,
    /// Where the OCS share's bytes come from (`flow records` in simulation,
    /// `kernel counters` on the fabric).
    pub fabric_bytes_from: String,
    /// Schedulers from the shortest average JCT to the longest: the demo's
    /// conclusion (ties keep the order run).
    pub ranking_by_avg_jct: Vec<String>,
}

impl DemoTable {
    /// The table of `summaries` (baseline first).
    pub fn new(summaries: &[SchedulerSummary]) -> DemoTable {
        let rows: Vec<DemoRow> = summaries.iter().map(row).collect();
        let base = rows.first().cloned();
        let rows: Vec<DemoRow> = rows
            .into_iter()
            .map(|mut r| {
                if let Some(b) = &base {
                    r.vs_baseline = Ratios {
                        makespan: ratio(r.makespan_s, b.makespan_s),
                        avg_jct: ratio(r.avg_jct_s, b.avg_jct_s),
                        avg_cct: ratio(r.avg_cct_s, b.avg_cct_s),
                        p95_cct: ratio(r.p95_cct_s, b.p95_cct_s),
                        ocs_percent: ratio(r.ocs_percent, b.ocs_percent),
                        cross_rack: ratio(r.cross_rack_gb, b.cross_rack_gb),
                    };
                }
                r
            })
            .collect();
        let mut ranking: Vec<&DemoRow> = rows.iter().collect();
        ranking.sort_by(|a, b| a.avg_jct_s.total_cmp(&b.avg_jct_s));
        DemoTable {
            baseline: base.map(|b| b.scheduler).unwrap_or_default(),
            fabric_bytes_from: summaries
                .first()
                .map(|s| s.fabric_bytes_from.clone())
                .unwrap_or_default(),
            ranking_by_avg_jct: ranking.iter().map(|r| r.scheduler.clone()).collect(),
            rows,
        }
    }
}

/// Average JCTs closer than this (relative to the shorter) are printed as a
/// tie in the ranking line: real-byte runs of the demo vary by a few
/// percent from run to run (README: three runs), so a 1 % lead is not a
/// conclusion.
pub const RANKING_TIE: f64 = 0.05;

impl DemoTable {
    /// The ranking as one line, shortest average JCT first: `a < b ≈ c`,
    /// with `≈` between neighbours within [`RANKING_TIE`] of each other.
    pub fn ranking_line(&self) -> String {
        let jct = |name: &str| {
            self.rows
                .iter()
                .find(|r| r.scheduler == name)
                .map(|r| r.avg_jct_s)
        };
        let mut line = String::new();
        let mut prev: Option<f64> = None;
        for name in &self.ranking_by_avg_jct {
            let this = jct(name);
            if let Some(p) = prev {
                let tie = this.is_some_and(|t| t <= p * (1.0 + RANKING_TIE));
                line.push_str(if tie { " ≈ " } else { " < " });
            }
            line.push_str(name);
            prev = this;
        }
        line
    }
}

fn row(s: &SchedulerSummary) -> DemoRow {
    DemoRow {
        scheduler: s.name.clone(),
        jobs: s.jobs,
        makespan_s: s.makespan_s,
        avg_jct_s: s.avg_jct_s,
        avg_cct_s: s.avg_cct_s,
        p95_cct_s: s.p95_cct_s,
        ocs_percent: 100.0 * s.ocs_share,
        cross_rack_gb: s.cross_rack_bytes as f64 / 1e9,
        eps_bytes: s.eps_bytes,
        ocs_bytes: s.ocs_bytes,
        vs_baseline: Ratios {
            makespan: 1.0,
            avg_jct: 1.0,
            avg_cct: 1.0,
            p95_cct: 1.0,
            ocs_percent: 1.0,
            cross_rack: 1.0,
        },
    }
}

fn ratio(x: f64, base: f64) -> f64 {
    if base == 0.0 {
        f64::NAN
    } else {
        x / base
    }
}

/// `value (ratio)`, the ratio as `-` when undefined.
fn cell(value: String, ratio: f64) -> String {
    if ratio.is_finite() {
        format!("{value} ({ratio:.2})")
    } else {
        format!("{value} (-)")
    }
}

impl fmt::Display for DemoTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{:<16} {:>15} {:>15} {:>15} {:>15} {:>15} {:>16}",
            "scheduler", "makespan s", "avg JCT s", "avg CCT s", "p95 CCT s", "OCS %", "cross-rack GB"
        )?;
        for r in &self.rows {
            let n = &r.vs_baseline;
            writeln!(
                f,
                "{:<16} {:>15} {:>15} {:>15} {:>15} {:>15} {:>16}",
                r.scheduler,
                cell(format!("{:.2}", r.makespan_s), n.makespan),
                cell(format!("{:.2}", r.avg_jct_s), n.avg_jct),
                cell(format!("{:.2}", r.avg_cct_s), n.avg_cct),
                cell(format!("{:.2}", r.p95_cct_s), n.p95_cct),
                cell(format!("{:.1}", r.ocs_percent), n.ocs_percent),
                cell(format!("{:.3}", r.cross_rack_gb), n.cross_rack),
            )?;
        }
        write!(
            f,
            "(in brackets: / {}; lower is better except OCS %)\n\
             OCS %: share of the cross-rack bytes that crossed on a circuit ({})",
            self.baseline, self.fabric_bytes_from
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(name: &str, jct: f64, cct: f64, eps: u64, ocs: u64) -> SchedulerSummary {
        SchedulerSummary {
            name: name.into(),
            jobs: 4,
            makespan_s: 2.0 * jct,
            avg_jct_s: jct,
            p95_jct_s: jct,
            avg_cct_s: cct,
            p95_cct_s: 2.0 * cct,
            coflows: 4,
            throughput_jobs_per_hour: 0.0,
            cross_rack_bytes: eps + ocs,
            shuffle_network_bytes: 0,
            input_network_bytes: 0,
            eps_bytes: eps,
            ocs_bytes: ocs,
            ocs_share: ocs as f64 / (eps + ocs) as f64,
            shuffle_ocs_share: ocs as f64 / (eps + ocs) as f64,
            fabric_bytes_from: crate::report::summary::FROM_FLOW_RECORDS.into(),
            reconfigurations: 0,
            node_local_maps: 0.0,
            flows: 0,
            normalized: Default::default(),
        }
    }

    #[test]
    fn rows_are_normalized_to_the_first_and_ranked_by_avg_jct() {
        let t = DemoTable::new(&[
            summary("fair", 10.0, 4.0, 3_000_000_000, 1_000_000_000),
            summary("delay", 12.0, 2.0, 1_000_000_000, 1_000_000_000),
            summary("nas", 5.0, 1.0, 2_000_000_000, 0),
        ]);
        assert_eq!(t.baseline, "fair");
        assert_eq!(t.rows[0].vs_baseline.avg_jct, 1.0);
        assert_eq!(t.rows[1].vs_baseline.avg_jct, 1.2);
        assert_eq!(t.rows[1].vs_baseline.p95_cct, 0.5);
        assert_eq!(t.rows[0].ocs_percent, 25.0);
        assert_eq!(t.rows[1].vs_baseline.ocs_percent, 2.0);
        assert_eq!(t.rows[2].cross_rack_gb, 2.0);
        assert_eq!(t.rows[2].vs_baseline.cross_rack, 0.5);
        assert_eq!(t.ranking_by_avg_jct, ["nas", "fair", "delay"]);
        assert_eq!(t.ranking_line(), "nas < fair < delay");
        let text = t.to_string();
        assert!(text.contains("10.00 (1.00)"), "{text}");
        assert!(text.contains("0.0 (0.00)"), "{text}");
    }

    #[test]
    fn jcts_within_the_tie_margin_rank_as_a_tie() {
        let t = DemoTable::new(&[
            summary("fair", 6.61, 1.0, 1, 0),
            summary("nas", 2.81, 1.0, 1, 0),
            summary("coscheduler", 6.62, 1.0, 1, 0),
        ]);
        assert_eq!(t.ranking_line(), "nas < fair ≈ coscheduler");
        let t = DemoTable::new(&[summary("fair", 7.0, 1.0, 1, 0), summary("x", 6.0, 1.0, 1, 0)]);
        assert_eq!(t.ranking_line(), "x < fair");
    }

    #[test]
    fn a_zero_baseline_gives_an_undefined_ratio() {
        let t = DemoTable::new(&[summary("fair", 1.0, 1.0, 5, 0), summary("x", 1.0, 1.0, 5, 5)]);
        assert!(t.rows[1].vs_baseline.ocs_percent.is_nan());
        assert!(t.to_string().contains("50.0 (-)"));
    }
}
