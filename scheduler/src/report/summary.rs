//! Per-scheduler summary of a simulated run: makespan, average and p95
//! JCT, average and p95 CCT, throughput, cross-rack bytes, bytes over OCS
//! vs EPS, circuit reconfigurations, each also normalized to the first
//! scheduler of the experiment (the baseline).
//!
//! Definitions. Makespan: last job finish − first job arrival. JCT: finish
//! − arrival (submission; for a DAG child, its own submission time).
//! CCT: of each job's shuffle coflow that moved bytes over the network,
//! last flow end − first flow start. Percentiles are nearest-rank.
//! Throughput: jobs ÷ makespan. Cross-rack bytes: input reads and shuffle
//! flows between racks. EPS/OCS bytes and reconfigurations: as the network
//! model counted them.

use crate::engine::FlowKind;
use crate::sim::SimOutcome;
use ocslab_emulator::Nanos;
use serde::Serialize;

/// One scheduler's figures.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SchedulerSummary {
    /// Task scheduler.
    pub name: String,
    /// Jobs finished.
    pub jobs: usize,
    /// Makespan, seconds.
    pub makespan_s: f64,
    /// Average JCT, seconds.
    pub avg_jct_s: f64,
    /// 95th-percentile JCT, seconds.
    pub p95_jct_s: f64,
    /// Average shuffle CCT, seconds (0 if no shuffle used the network).
    pub avg_cct_s: f64,
    /// 95th-percentile shuffle CCT, seconds.
    pub p95_cct_s: f64,
    /// Shuffle coflows that used the network.
    pub coflows: usize,
    /// Jobs per hour of makespan.
    pub throughput_jobs_per_hour: f64,
    /// Bytes between racks (input reads + shuffle).
    pub cross_rack_bytes: u64,
    /// Shuffle bytes over the network.
    pub shuffle_network_bytes: u64,
    /// Input bytes read over the network.
    pub input_network_bytes: u64,
    /// Bytes over EPS.
    pub eps_bytes: u64,
    /// Bytes over OCS circuits.
    pub ocs_bytes: u64,
    /// OCS bytes ÷ (EPS + OCS bytes).
    pub ocs_share: f64,
    /// Circuits set up.
    pub reconfigurations: u64,
    /// Fraction of map attempts that ran node-local.
    pub node_local_maps: f64,
    /// Flows started.
    pub flows: u64,
    /// Figures ÷ the baseline's (1.0 for the baseline itself).
    pub normalized: Normalized,
}

/// Figures normalized to the baseline (this ÷ baseline; NaN if the
/// baseline's figure is 0).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Normalized {
    /// Makespan.
    pub makespan: f64,
    /// Average JCT.
    pub avg_jct: f64,
    /// p95 JCT.
    pub p95_jct: f64,
    /// Average CCT.
    pub avg_cct: f64,
    /// p95 CCT.
    pub p95_cct: f64,
    /// Throughput.
    pub throughput: f64,
    /// Cross-rack bytes.
    pub cross_rack_bytes: f64,
}

/// Summarizes one run.
pub fn summarize(out: &SimOutcome) -> SchedulerSummary {
    let r = &out.records;
    let first_arrival = r.jobs.values().map(|j| j.arrival).min().unwrap_or_default();
    let last_finish = r
        .jobs
        .values()
        .filter_map(|j| j.finished)
        .max()
        .unwrap_or_default();
    let makespan = last_finish - first_arrival;
    let jcts: Vec<f64> = r
        .jobs
        .values()
        .filter_map(|j| j.jct())
        .map(Nanos::as_secs_f64)
        .collect();
    let ccts: Vec<f64> = r
        .coflows
        .values()
        .filter(|c| c.kind == FlowKind::Shuffle)
        .filter_map(|c| c.cct())
        .map(Nanos::as_secs_f64)
        .collect();
    let bytes_of = |k: FlowKind| {
        r.coflows
            .values()
            .filter(|c| c.kind == k)
            .map(|c| c.bytes.0)
            .sum::<u64>()
    };
    let maps = r.tasks.iter().filter(|t| t.locality.is_some()).count();
    let local = r
        .tasks
        .iter()
        .filter(|t| t.locality == Some(crate::engine::Locality::NodeLocal))
        .count();
    let (eps, ocs) = (out.net.eps_bytes.0, out.net.ocs_bytes.0);
    let hours = makespan.as_secs_f64() / 3600.0;
    SchedulerSummary {
        name: out.policy.clone(),
        jobs: jcts.len(),
        makespan_s: makespan.as_secs_f64(),
        avg_jct_s: mean(&jcts),
        p95_jct_s: percentile(&jcts, 0.95),
        avg_cct_s: mean(&ccts),
        p95_cct_s: percentile(&ccts, 0.95),
        coflows: ccts.len(),
        throughput_jobs_per_hour: if hours > 0.0 {
            jcts.len() as f64 / hours
        } else {
            0.0
        },
        cross_rack_bytes: r.coflows.values().map(|c| c.cross_rack_bytes.0).sum(),
        shuffle_network_bytes: bytes_of(FlowKind::Shuffle),
        input_network_bytes: bytes_of(FlowKind::Input),
        eps_bytes: eps,
        ocs_bytes: ocs,
        ocs_share: if eps + ocs > 0 {
            ocs as f64 / (eps + ocs) as f64
        } else {
            0.0
        },
        reconfigurations: out.net.reconfigurations,
        node_local_maps: if maps > 0 { local as f64 / maps as f64 } else { 0.0 },
        flows: out.flows,
        normalized: Normalized::default(),
    }
}

/// Fills `normalized` of every summary against the first.
pub fn normalize(list: &mut [SchedulerSummary]) {
    let Some(base) = list.first().cloned() else { return };
    let ratio = |x: f64, b: f64| if b == 0.0 { f64::NAN } else { x / b };
    for s in list.iter_mut() {
        s.normalized = Normalized {
            makespan: ratio(s.makespan_s, base.makespan_s),
            avg_jct: ratio(s.avg_jct_s, base.avg_jct_s),
            p95_jct: ratio(s.p95_jct_s, base.p95_jct_s),
            avg_cct: ratio(s.avg_cct_s, base.avg_cct_s),
            p95_cct: ratio(s.p95_cct_s, base.p95_cct_s),
            throughput: ratio(s.throughput_jobs_per_hour, base.throughput_jobs_per_hour),
            cross_rack_bytes: ratio(s.cross_rack_bytes as f64, base.cross_rack_bytes as f64),
        };
    }
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// Nearest-rank percentile (`q` in 0..=1); 0 for no values.
pub fn percentile(v: &[f64], q: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let rank = ((q * s.len() as f64).ceil() as usize).clamp(1, s.len());
    s[rank - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(percentile(&v, 0.95), 19.0);
        assert_eq!(percentile(&v, 1.0), 20.0);
        assert_eq!(percentile(&[3.0], 0.95), 3.0);
        assert_eq!(percentile(&[], 0.95), 0.0);
    }
}
