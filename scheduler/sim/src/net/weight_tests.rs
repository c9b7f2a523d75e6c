//! Tests of flows of weight w > 1 ([`FlowSpec::weight`], what the engine's
//! `merge_fetches` makes): such a flow moves exactly as w flows of its
//! size ÷ w on its path would, over EPS and over a circuit, and a pacing
//! cap set on it is for all w.

use super::handover_tests::{done, fabric, flow, ms, run, EpsThenCircuit};
use super::FluidNetwork;
use ocslab_core::coflow::{CoflowPolicy, Decision, FlowPlan, NetView, Progress};
use ocslab_core::model::coflow::{FlowId, FlowSpec};
use ocslab_core::{Bytes, Nanos};

/// Flow `id` of `bytes` from rack 0 to rack 1 standing for `weight` flows.
fn weighted(id: u64, bytes: u64, weight: u32) -> FlowSpec {
    FlowSpec {
        weight,
        ..flow(id, 0, 1, bytes)
    }
}

#[test]
fn a_flow_of_weight_three_moves_as_three_flows_of_a_third_its_size() {
    // Rack 0 → rack 1 over EPS (1 MB/s) until the circuit is up at 10 ms,
    // then over it (5 MB/s). Three flows of 1 MB and a fourth share either
    // link four ways; one flow of 3 MB and weight 3 beside the fourth must
    // take three of the four shares, finish with the three, and carry
    // their bytes over each fabric.
    let mut three = FluidNetwork::on_fabric(fabric(), Box::new(EpsThenCircuit { down_at: None }));
    let flows: Vec<FlowSpec> = (1..=4).map(|id| weighted(id, 1_000_000, 1)).collect();
    three.add_flows(Nanos::ZERO, &flows);
    let apart = run(&mut three);
    assert_eq!(apart.len(), 4);
    let end = apart[0].1;
    assert!(apart.iter().all(|f| f.1 == end), "{apart:?}");
    let sum = |i: usize| -> u64 {
        apart
            .iter()
            .filter(|f| f.0 <= 3)
            .map(|f| if i == 0 { f.2 } else { f.3 })
            .sum()
    };

    let mut merged = FluidNetwork::on_fabric(fabric(), Box::new(EpsThenCircuit { down_at: None }));
    merged.add_flows(
        Nanos::ZERO,
        &[weighted(1, 3_000_000, 3), weighted(4, 1_000_000, 1)],
    );
    let mut got = done(merged.advance_to(ms(5)));
    merged.sync_progress();
    let view = |id: u64| merged.view().flows.get(&FlowId(id)).expect("active flow").clone();
    let (big, small) = (view(1), view(4));
    // 5 ms on EPS: 750 kB/s for the weight-3 flow, 250 kB/s for the other.
    assert!((big.rate_bytes_per_s - 750_000.0).abs() < 1e-6, "{big:?}");
    assert!((small.rate_bytes_per_s - 250_000.0).abs() < 1e-6, "{small:?}");
    assert!((big.sent_eps_bytes - 3_750.0).abs() < 1e-6, "{big:?}");
    assert!((big.remaining_bytes - 2_996_250.0).abs() < 1e-6, "{big:?}");
    got.extend(run(&mut merged));
    got.sort();
    assert_eq!(got, [(1, end, sum(0), sum(1)), apart[3]]);
}

/// Paces every flow at 120 kB/s over EPS.
struct PaceAll;

impl CoflowPolicy for PaceAll {
    fn name(&self) -> &'static str {
        "pace-all"
    }
    fn decide(&mut self, _now: Nanos, view: &NetView, _progress: &dyn Progress) -> Decision {
        Decision {
            plans: view
                .flows
                .keys()
                .map(|&id| (id, FlowPlan::eps_paced(120_000.0)))
                .collect(),
            ..Decision::default()
        }
    }
}

#[test]
fn a_cap_on_a_flow_of_weight_three_is_shared_by_the_three() {
    // 360 kB at 120 kB/s in all: 3 s, not 1 s (the cap taken per flow it
    // stands for). A bundle's cap is whole bits per second per unit of
    // weight: 960,000 ÷ 3 is exact.
    let mut net = FluidNetwork::on_fabric(fabric(), Box::new(PaceAll));
    net.add_flows(Nanos::ZERO, &[weighted(1, 360_000, 3)]);
    assert_eq!(run(&mut net), [(1, ms(3_000), 360_000, 0)]);
    net.sync_progress();
    assert_eq!(net.stats().eps_bytes, Bytes(360_000));
}
