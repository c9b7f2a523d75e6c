//! [`super::solver::reserve`] on random layers: the first layer against a
//! plain reading of its pseudocode (every pending pair tried at every
//! step, no candidate lists), and the properties every plan must have.

use super::solver::{reserve, Circuits, PairDemand, Plan, Reserved};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeSet;

/// Up to four layers on up to eight racks and three ports; each rack pair
/// in one layer at most (a pair belongs to the first coflow with bytes on
/// it), whole MB so that ends tie now and then.
fn random_case(rng: &mut ChaCha8Rng) -> (Vec<Vec<PairDemand>>, Circuits) {
    let racks = rng.random_range(2..=8u32);
    let fabric = Circuits {
        racks,
        ports: rng.random_range(1..=3),
        rate: 1e6,
        delta: [0.0, 0.01, 0.5][rng.random_range(0..3)],
    };
    let mut taken = BTreeSet::new();
    let layers = (0..rng.random_range(1..=4))
        .map(|_| {
            let mut layer: Vec<PairDemand> = (0..rng.random_range(1..=12))
                .filter_map(|_| {
                    let (src, dst) = (rng.random_range(0..racks), rng.random_range(0..racks));
                    (src != dst && taken.insert((src, dst))).then(|| PairDemand {
                        src,
                        dst,
                        bytes: f64::from(rng.random_range(1..=5u32)) * 1e6,
                    })
                })
                .collect();
            // Pair order, as the policy gives them.
            layer.sort_by_key(|d| (d.src, d.dst));
            layer
        })
        .collect();
    (layers, fabric)
}

/// The first layer as its pseudocode reads: at time t, try every pending
/// pair in order on the first port with both sides free; then move to the
/// next end (ties in the order reserved) and free its sides.
fn first_layer_plainly(demands: &[PairDemand], f: Circuits) -> Vec<Reserved> {
    let sides = (f.racks * f.ports) as usize;
    let (mut send, mut receive) = (vec![false; sides], vec![false; sides]);
    let socket = |rack: u32, port: u32| (port * f.racks + rack) as usize;
    let mut pending: Vec<Option<PairDemand>> = demands.iter().copied().map(Some).collect();
    let mut ends: Vec<(f64, usize, usize, usize)> = Vec::new();
    let mut made = Vec::new();
    let mut t = 0.0;
    loop {
        for slot in pending.iter_mut() {
            let Some(d) = *slot else { continue };
            let free = (0..f.ports).find(|&w| !send[socket(d.src, w)] && !receive[socket(d.dst, w)]);
            let Some(w) = free else { continue };
            send[socket(d.src, w)] = true;
            receive[socket(d.dst, w)] = true;
            let end = t + f.delta + d.bytes / f.rate;
            ends.push((end, made.len(), socket(d.src, w), socket(d.dst, w)));
            made.push(Reserved {
                layer: 0,
                src: d.src,
                dst: d.dst,
                port: w,
                start: t,
                end,
            });
            *slot = None;
        }
        if pending.iter().all(Option::is_none) {
            return made;
        }
        let next =
            (0..ends.len()).min_by(|&a, &b| ends[a].0.total_cmp(&ends[b].0).then(ends[a].1.cmp(&ends[b].1)));
        let Some(next) = next else { return made };
        let (end, _, s, r) = ends.swap_remove(next);
        t = end;
        send[s] = false;
        receive[r] = false;
    }
}

/// No two reservations hold one side of one port at once.
fn assert_no_side_held_twice(plan: &Plan, case: usize) {
    for (a, x) in plan.reserved.iter().enumerate() {
        for y in &plan.reserved[a + 1..] {
            let same_side = x.port == y.port && (x.src == y.src || x.dst == y.dst);
            let overlap = x.start < y.end - 1e-9 && y.start < x.end - 1e-9;
            assert!(
                !(same_side && overlap),
                "case {case}: {x:?} and {y:?} hold a side at once"
            );
        }
    }
}

#[test]
fn the_first_layer_is_its_pseudocode() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    for case in 0..2000 {
        let (layers, fabric) = random_case(&mut rng);
        let plan = reserve(&layers[..1], fabric);
        let mut plainly = first_layer_plainly(&layers[0], fabric);
        plainly.sort_by(|a, b| a.start.total_cmp(&b.start));
        assert_eq!(plan.reserved, plainly, "case {case}: {layers:?} on {fabric:?}");
    }
}

#[test]
fn every_plan_holds_each_side_once_and_later_layers_fit_the_gaps() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    for case in 0..2000 {
        let (layers, fabric) = random_case(&mut rng);
        let plan = reserve(&layers, fabric);
        assert_no_side_held_twice(&plan, case);
        assert!(
            plan.reserved.windows(2).all(|w| w[0].start <= w[1].start),
            "case {case}: not by start"
        );
        let one_bit = 1.0 / (8.0 * fabric.rate);
        for r in &plan.reserved {
            let demand = layers[r.layer].iter().find(|d| (d.src, d.dst) == (r.src, r.dst));
            assert!(demand.is_some(), "case {case}: {r:?} serves no pair of its layer");
            assert!(
                r.end - r.start >= fabric.delta + one_bit - 1e-9,
                "case {case}: {r:?} too short"
            );
            if r.layer > 0 {
                assert!(
                    r.end <= plan.horizon + 1e-9,
                    "case {case}: {r:?} past {}",
                    plan.horizon
                );
            }
        }
        // The first layer reserves each of its pairs once, all of it; a
        // later one at most its bytes, δ paid in each of its slots.
        for (layer, demands) in layers.iter().enumerate() {
            for d in demands {
                let slots: Vec<&Reserved> = plan
                    .reserved
                    .iter()
                    .filter(|r| r.layer == layer && (r.src, r.dst) == (d.src, d.dst))
                    .collect();
                let carried: f64 = slots
                    .iter()
                    .map(|r| (r.end - r.start - fabric.delta) * fabric.rate)
                    .sum();
                if layer == 0 {
                    assert_eq!(
                        slots.len(),
                        1,
                        "case {case}: {d:?} reserved {} times",
                        slots.len()
                    );
                    assert!(
                        (carried - d.bytes).abs() < 1e-3,
                        "case {case}: {d:?} carries {carried}"
                    );
                } else {
                    assert!(carried <= d.bytes + 1e-3, "case {case}: {d:?} carries {carried}");
                }
            }
        }
    }
}
