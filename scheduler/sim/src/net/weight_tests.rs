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

/// Gives flow 1 the plan of its script at each call, one call a second.
struct Script(Vec<FlowPlan>, usize);

impl CoflowPolicy for Script {
    fn name(&self) -> &'static str {
        "script"
    }
    fn decide(&mut self, now: Nanos, _view: &NetView, _progress: &dyn Progress) -> Decision {
        let plan = self.0[self.1.min(self.0.len() - 1)];
        self.1 += 1;
        Decision {
            plans: vec![(FlowId(1), plan)],
            wake_at: Some(now + Nanos::from_millis(1_000)),
            ..Decision::default()
        }
    }
}

#[test]
fn a_plan_given_again_keeps_the_rate_it_gave_whatever_the_weight() {
    // Weight 3: a cap of 1,000,001 bit/s is 333,333 per unit, 999,999 in
    // all. Given again, a plan leaves the flow as it is; a new one moves it.
    let paced = |bps: f64| FlowPlan::eps_paced(bps / 8.0);
    let script = vec![
        paced(1_000_001.0),
        paced(1_000_001.0),
        FlowPlan::WAIT,
        FlowPlan::WAIT,
        paced(1_000_001.0),
        paced(2_000_000.0),
        FlowPlan::EPS,
        FlowPlan::EPS,
    ];
    let mut net = FluidNetwork::on_fabric(fabric(), Box::new(Script(script, 0)));
    net.add_flows(Nanos::ZERO, &[weighted(1, 1 << 40, 3)]);
    let mut rates = Vec::new();
    for call in 0..8 {
        net.advance_to(ms(500 + 1_000 * call));
        net.sync_progress();
        let f = net.view().flows.get(&FlowId(1)).expect("active flow");
        rates.push((f.rate_bytes_per_s * 8.0).round() as u64);
    }
    // Unpaced, the flow takes all of EPS (1 MB/s).
    assert_eq!(
        rates,
        [999_999, 999_999, 0, 0, 999_999, 1_999_998, 8_000_000, 8_000_000]
    );
}
