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
//! flows between racks. Reconfigurations: as the network model counted them.
//!
//! Bytes over OCS, one definition for every driver: **the share of the
//! cross-rack bytes that crossed on a circuit** (`ocs_share` = `ocs_bytes` ÷
//! (`eps_bytes` + `ocs_bytes`), where `eps_bytes` are the cross-rack bytes
//! that crossed the EPS core and `ocs_bytes` those carried by circuits;
//! input reads and shuffle alike, intra-rack bytes in neither). The
//! simulator counts it from the engine's coflow records, which add up every
//! finished cross-rack flow's bytes per fabric whether or not flow records
//! are kept (`[engine] record_flows`) ([`summarize`]); the emulation
//! measures it on the wire, from the kernel counters of the ToR EPS uplinks
//! and the OCS ports ([`SchedulerSummary::with_wire_bytes`]).
//! `fabric_bytes_from` says which.

use crate::engine::FlowKind;
use crate::sim::SimOutcome;
use ocslab_emulator::Nanos;
use serde::{Deserialize, Serialize};

/// One scheduler's figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
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
    /// Cross-rack bytes over the EPS core.
    pub eps_bytes: u64,
    /// Cross-rack bytes over OCS circuits.
    pub ocs_bytes: u64,
    /// Share of the cross-rack bytes that crossed on a circuit:
    /// `ocs_bytes` ÷ (`eps_bytes` + `ocs_bytes`), 0 when nothing crossed.
    pub ocs_share: f64,
    /// Share of the cross-rack *shuffle* bytes that crossed on a circuit
    /// (input reads left out; Co-scheduler's Fig. 5(b) figure), from the
    /// coflow records: the payload as its senders marked it, also under
    /// emulation.
    pub shuffle_ocs_share: f64,
    /// Where `eps_bytes` and `ocs_bytes` come from: `"flow records"`
    /// (payload of cross-rack flows as the engine's coflow records sum it,
    /// simulation) or `"kernel counters"`
    /// (frames on the ToR uplinks and OCS ports, emulation).
    pub fabric_bytes_from: String,
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
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
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
    let (eps, ocs) = cross_rack_bytes_by_fabric(r);
    let (shuffle_eps, shuffle_ocs) = cross_rack_bytes_by_fabric_of(r, Some(FlowKind::Shuffle));
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
        ocs_share: share(eps, ocs),
        shuffle_ocs_share: share(shuffle_eps, shuffle_ocs),
        fabric_bytes_from: FROM_FLOW_RECORDS.into(),
        reconfigurations: out.net.reconfigurations,
        node_local_maps: if maps > 0 { local as f64 / maps as f64 } else { 0.0 },
        flows: out.flows,
        normalized: Normalized::default(),
    }
}

/// [`SchedulerSummary::fabric_bytes_from`] of the simulator's figures.
pub const FROM_FLOW_RECORDS: &str = "flow records";
/// [`SchedulerSummary::fabric_bytes_from`] of figures measured on the wire.
pub const FROM_KERNEL_COUNTERS: &str = "kernel counters";

impl SchedulerSummary {
    /// The same summary with the cross-rack bytes per fabric measured on
    /// the wire: `eps` bytes sent up the ToRs' EPS uplinks and `ocs` bytes
    /// the OCS ports carried (kernel counters, frames with headers).
    pub fn with_wire_bytes(mut self, eps: u64, ocs: u64) -> SchedulerSummary {
        self.eps_bytes = eps;
        self.ocs_bytes = ocs;
        self.ocs_share = share(eps, ocs);
        self.fabric_bytes_from = FROM_KERNEL_COUNTERS.into();
        self
    }
}

/// Cross-rack payload bytes over (EPS, OCS) from the coflow records: every
/// finished flow between racks, useful or not (its bytes crossed). Flow
/// records are not needed, so the figure is the same with `record_flows`
/// off.
pub fn cross_rack_bytes_by_fabric(r: &crate::engine::Records) -> (u64, u64) {
    cross_rack_bytes_by_fabric_of(r, None)
}

/// [`cross_rack_bytes_by_fabric`] of the coflows of one kind only (`None`: all).
fn cross_rack_bytes_by_fabric_of(r: &crate::engine::Records, kind: Option<FlowKind>) -> (u64, u64) {
    r.coflows
        .values()
        .filter(|c| kind.is_none_or(|k| c.kind == k))
        .fold((0, 0), |(e, o), c| {
            (e + c.cross_rack_eps_bytes.0, o + c.cross_rack_ocs_bytes.0)
        })
}

fn share(eps: u64, ocs: u64) -> f64 {
    if eps + ocs > 0 {
        ocs as f64 / (eps + ocs) as f64
    } else {
        0.0
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
    fn the_ocs_share_counts_cross_rack_bytes_only() {
        use crate::engine::{CoflowRecord, Records};
        use crate::model::coflow::CoflowId;
        use crate::model::job::JobId;
        use ocslab_emulator::Bytes;
        let coflow = |id: u64, eps: u64, ocs: u64, cross_eps: u64, cross_ocs: u64| CoflowRecord {
            coflow: CoflowId(id),
            job: JobId(id),
            kind: FlowKind::Shuffle,
            flows: 1,
            bytes: Bytes(eps + ocs),
            first_start: Nanos::ZERO,
            last_end: Some(Nanos(1)),
            eps_bytes: Bytes(eps),
            ocs_bytes: Bytes(ocs),
            cross_rack_bytes: Bytes(cross_eps + cross_ocs),
            cross_rack_eps_bytes: Bytes(cross_eps),
            cross_rack_ocs_bytes: Bytes(cross_ocs),
            open_flows: 0,
        };
        let mut r = Records::default();
        // Intra-rack bytes go over the ToR only: in neither fabric's count.
        r.coflows.insert(CoflowId(1), coflow(1, 1_000_100, 0, 100, 0));
        r.coflows.insert(CoflowId(2), coflow(2, 0, 300, 0, 300));
        assert_eq!(cross_rack_bytes_by_fabric(&r), (100, 300));
        assert_eq!(share(100, 300), 0.75);
        assert_eq!(share(0, 0), 0.0);
    }

    /// The bytes per fabric come from the coflow records, so turning flow
    /// records off (as the paper-size experiments do) changes nothing; they
    /// used to read 0 then.
    #[test]
    fn bytes_over_ocs_are_the_same_without_flow_records() {
        use crate::experiment::Experiment;
        use std::path::Path;
        let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../experiments/coscheduler-lab.toml");
        let mut exp = match Experiment::load(&file) {
            Ok(e) => e,
            Err(e) => panic!("{e}"),
        };
        let mut run = |record_flows: bool| {
            exp.engine.record_flows = record_flows;
            let jobs = exp.jobs().expect("jobs of coscheduler-lab.toml");
            let out = crate::sim::run_scheduler(&exp, "coscheduler", jobs, |_, _| {})
                .expect("coscheduler-lab.toml simulates");
            assert_eq!(out.records.flows.is_empty(), !record_flows);
            let per_flow = |kind: Option<FlowKind>| {
                out.records
                    .flows
                    .iter()
                    .filter(|f| f.src.rack != f.dst.rack && kind.is_none_or(|k| f.kind == k))
                    .fold((0, 0), |(e, o), f| (e + f.eps_bytes.0, o + f.ocs_bytes.0))
            };
            let (all, shuffle) = (per_flow(None), per_flow(Some(FlowKind::Shuffle)));
            (summarize(&out), all, shuffle)
        };
        let (with, per_flow, shuffle) = run(true);
        let (without, _, _) = run(false);
        // The coflow records add up to what the flow records say.
        assert_eq!((with.eps_bytes, with.ocs_bytes), per_flow);
        assert!(
            with.ocs_bytes > 0 && with.eps_bytes + with.ocs_bytes > 0,
            "{with:?}"
        );
        assert!(with.ocs_share > 0.0);
        assert_eq!(
            (without.eps_bytes, without.ocs_bytes),
            (with.eps_bytes, with.ocs_bytes)
        );
        assert_eq!(without.ocs_share, with.ocs_share);
        // The shuffle's share leaves the input reads out.
        assert_eq!(with.shuffle_ocs_share, share(shuffle.0, shuffle.1));
        assert_ne!(shuffle, per_flow, "coscheduler-lab.toml reads input across racks");
        assert_eq!(without.shuffle_ocs_share, with.shuffle_ocs_share);
    }

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(percentile(&v, 0.95), 19.0);
        assert_eq!(percentile(&v, 1.0), 20.0);
        assert_eq!(percentile(&[3.0], 0.95), 3.0);
        assert_eq!(percentile(&[], 0.95), 0.0);
    }
}
