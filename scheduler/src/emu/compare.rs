//! Emulation against simulation: the measured CCT of each coflow next to
//! the CCT the fluid model ([`FluidNetwork`]) predicts for the *same flows*
//! (same hosts, sizes and request times) on the same topology under the
//! same coflow policy, with every shaped link at the rate a TCP stream's
//! payload gets of it ([`TCP_PAYLOAD_EFFICIENCY`], 1448 of every 1514
//! bytes htb lets through). A ratio near 1 says the box moved the bytes as
//! fast as its wire allows and the simulator can stand in for it at that
//! scale; against the nominal rates framing alone would put every ratio at
//! 1.046. QUIC frames its payload more heavily than TCP, so runs on
//! `--transport quic` sit a little above that.

use super::metrics::WireFlow;
use crate::coflow::UnknownPolicy;
use crate::model::coflow::{CoflowId, FlowSpec};
use crate::net::{FluidNetwork, NetEvent};
use ocslab_emulator::fabric::probe::TCP_PAYLOAD_EFFICIENCY;
use ocslab_emulator::{Bps, Bytes, Nanos, Topology};
use serde::Serialize;
use std::collections::BTreeMap;

/// One coflow, measured and predicted.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CctComparison {
    /// The coflow.
    pub coflow: CoflowId,
    /// Its flows.
    pub flows: u32,
    /// Its bytes.
    pub bytes: Bytes,
    /// Measured: first request → last byte received.
    pub measured: Nanos,
    /// Predicted by the fluid model for the same flows, at the rates TCP's
    /// payload gets of the links.
    pub predicted: Nanos,
    /// measured ÷ predicted.
    pub ratio: f64,
}

/// Ratios over all coflows.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RatioSummary {
    /// Coflows compared.
    pub coflows: usize,
    /// Average measured CCT ÷ average predicted CCT: the figure "avg CCT,
    /// emulated / simulated" is. Unlike the mean of the ratios, a coflow of
    /// a few bytes (a fluid CCT of microseconds, a measured one of a round
    /// trip) does not swamp it.
    pub of_averages: f64,
    /// Median ratio.
    pub median: f64,
    /// Mean ratio.
    pub mean: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
}

/// Replays the measured `flows` through the fluid model on [`payload_rates`]
/// of `topo` and pairs each coflow's measured CCT with the predicted one.
pub fn compare(
    topo: &Topology,
    coflow_policy: &str,
    flows: &[WireFlow],
) -> Result<Vec<CctComparison>, UnknownPolicy> {
    let mut net = FluidNetwork::with_policy(&payload_rates(topo), crate::coflow::by_name(coflow_policy)?);
    let mut order: Vec<&WireFlow> = flows.iter().collect();
    order.sort_by_key(|f| (f.requested, f.flow));
    let mut arrival: BTreeMap<CoflowId, Nanos> = BTreeMap::new();
    let mut predicted_end: BTreeMap<CoflowId, Nanos> = BTreeMap::new();
    let note = |events: Vec<NetEvent>, ends: &mut BTreeMap<CoflowId, Nanos>| {
        for e in events {
            if let NetEvent::FlowDone { coflow, at, .. } = e {
                let t = ends.entry(coflow).or_insert(at);
                *t = (*t).max(at);
            }
        }
    };
    let mut i = 0;
    while i < order.len() {
        let t = order[i].requested;
        let batch: Vec<FlowSpec> = order[i..]
            .iter()
            .take_while(|f| f.requested == t)
            .map(|f| FlowSpec {
                id: f.flow,
                coflow: f.coflow,
                src: f.src,
                dst: f.dst,
                bytes: f.bytes,
                weight: 1,
            })
            .collect();
        i += batch.len();
        note(net.advance_to(t), &mut predicted_end);
        for f in &batch {
            arrival.entry(f.coflow).or_insert(t);
        }
        if net.try_add_flows(t, &batch).is_err() {
            continue;
        }
    }
    while let Some(t) = net.next_event_at() {
        note(net.advance_to(t), &mut predicted_end);
    }
    let mut measured: BTreeMap<CoflowId, (u32, Bytes, Nanos, Nanos)> = BTreeMap::new();
    for f in flows {
        let m = measured
            .entry(f.coflow)
            .or_insert((0, Bytes(0), f.requested, f.end));
        m.0 += 1;
        m.1 += f.bytes;
        m.2 = m.2.min(f.requested);
        m.3 = m.3.max(f.end);
    }
    Ok(measured
        .into_iter()
        .filter_map(|(coflow, (n, bytes, first, last))| {
            let predicted = predicted_end.get(&coflow)?.saturating_sub(*arrival.get(&coflow)?);
            let measured = last.saturating_sub(first);
            (predicted.0 > 0).then(|| CctComparison {
                coflow,
                flows: n,
                bytes,
                measured,
                predicted,
                ratio: measured.as_secs_f64() / predicted.as_secs_f64(),
            })
        })
        .collect())
}

/// `topo` with each shaped rate (host NICs, uplinks, OCS ports) cut to what
/// a TCP stream's payload gets of it: the rates real bytes can reach.
pub fn payload_rates(topo: &Topology) -> Topology {
    rates_times(topo, TCP_PAYLOAD_EFFICIENCY)
}

/// `topo` with each shaped rate (host NICs, uplinks, OCS ports) multiplied
/// by `factor`.
pub fn rates_times(topo: &Topology, factor: f64) -> Topology {
    let times = |r: Bps| Bps((r.0 as f64 * factor).round() as u64);
    Topology {
        host_rate: times(topo.host_rate),
        uplink_rate: times(topo.uplink_rate),
        ocs_port_rate: times(topo.ocs_port_rate),
        ..topo.clone()
    }
}

/// The ratio of average CCTs, and the median, mean, min and max of the
/// per-coflow ratios.
pub fn summarize(rows: &[CctComparison]) -> RatioSummary {
    if rows.is_empty() {
        return RatioSummary::default();
    }
    let ratios = rows.iter().map(|r| r.ratio);
    let mut sorted: Vec<f64> = ratios.clone().collect();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let median = if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    };
    let total = |f: fn(&CctComparison) -> Nanos| rows.iter().map(|r| f(r).as_secs_f64()).sum::<f64>();
    RatioSummary {
        coflows: rows.len(),
        of_averages: total(|r| r.measured) / total(|r| r.predicted),
        median,
        mean: ratios.clone().sum::<f64>() / rows.len() as f64,
        min: ratios.clone().fold(f64::INFINITY, f64::min),
        max: ratios.fold(0.0, f64::max),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::coflow::FlowId;
    use ocslab_emulator::HostId;
    use std::path::Path;

    #[test]
    fn one_flow_alone_is_predicted_at_its_bottleneck_rate() {
        let topo = Topology::parse(
            include_str!("../../../topologies/tiny.toml"),
            Path::new("tiny.toml"),
        )
        .unwrap();
        // Same rack: host NIC 100 Mbit/s is the bottleneck, of which TCP's
        // payload gets 1448/1514: 1.25 MB takes 0.1 s × 1514/1448.
        let f = WireFlow {
            flow: FlowId(0),
            coflow: CoflowId(4),
            src: HostId::new(0, 0),
            dst: HostId::new(0, 1),
            bytes: Bytes(1_250_000),
            bytes_received: Bytes(1_250_000),
            marked: None,
            requested: Nanos::from_millis(10),
            start: Nanos::from_millis(10),
            first_byte: Nanos::from_millis(10),
            end: Nanos::from_millis(120),
            verified: true,
            useful: true,
        };
        let rows = compare(&topo, "fair", &[f]).unwrap();
        assert_eq!(rows.len(), 1);
        let at_payload_rate = 0.1 * 1514.0 / 1448.0;
        assert!(
            (rows[0].predicted.as_secs_f64() - at_payload_rate).abs() < 1e-6,
            "{:?}",
            rows[0]
        );
        assert!(
            (rows[0].ratio - 0.11 / at_payload_rate).abs() < 1e-4,
            "{:?}",
            rows[0]
        );
        let s = summarize(&rows);
        assert_eq!((s.coflows, s.min, s.max), (1, rows[0].ratio, rows[0].ratio));
    }

    #[test]
    fn a_coflow_of_a_few_bytes_does_not_swamp_the_ratio_of_averages() {
        let row = |measured_ms: u64, predicted_us: u64| CctComparison {
            coflow: CoflowId(0),
            flows: 1,
            bytes: Bytes(1),
            measured: Nanos::from_millis(measured_ms),
            predicted: Nanos(predicted_us * 1000),
            ratio: measured_ms as f64 * 1000.0 / predicted_us as f64,
        };
        // Two 1 s coflows at 1.05 and 1.10, one of 1 byte: 2 ms against 1 us.
        let s = summarize(&[row(1050, 1_000_000), row(2, 1), row(1100, 1_000_000)]);
        assert!((s.of_averages - 2.152 / 2.000_001).abs() < 1e-9, "{s:?}");
        assert_eq!(s.median, 1.1);
        assert!(s.mean > 600.0, "{s:?}");
        let even = summarize(&[row(1050, 1_000_000), row(1100, 1_000_000)]);
        assert!((even.median - 1.075).abs() < 1e-12, "{even:?}");
    }
}
