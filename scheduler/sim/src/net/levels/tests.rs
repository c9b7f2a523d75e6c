//! [`LinkLevels`] against from-scratch max-min solves, on random events.

use super::*;
use crate::net::links::Links;
use crate::net::maxmin::max_min;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeSet;

/// One to four links, as paths are (NIC up, [ToR up, ToR down,] NIC
/// down); capped if none of them binds (a rate must be finite).
fn demand(rng: &mut ChaCha8Rng, binds: &[bool]) -> Demand {
    let n = rng.random_range(1..=4usize);
    let mut ids: Vec<u32> = (0..n).map(|_| rng.random_range(0..binds.len() as u32)).collect();
    ids.sort_unstable();
    ids.dedup();
    let mut d = Demand::new(Links::new(&ids).expect("at most 4 links"));
    d.weight = rng.random_range(1..=5);
    if rng.random_bool(0.1) || !ids.iter().any(|&l| binds[l as usize]) {
        d.cap = rng.random_range(1.0..50.0);
    }
    d
}

/// Random arrivals, departures, shrinking bundles and changes of route,
/// 300 steps of `demand`s on `capacity`, some links of which never bind:
/// after every solve each slot's rate equals the from-scratch max-min
/// rate (computed on the binding links only), each slot's rate is its
/// bottleneck's level, each link's load is the sum over the slots
/// crossing it, and the slots reported changed are exactly those whose
/// bottleneck or demand changed.
fn check_random_events(
    seed: u64,
    rng: &mut ChaCha8Rng,
    mut lv: LinkLevels,
    capacity: &[f64],
    binds: &[bool],
    mut demand: impl FnMut(&mut ChaCha8Rng) -> Demand,
) {
    let links = capacity.len();
    let slots = 30usize;
    let mut current: Vec<Option<Demand>> = vec![None; slots];
    let mut before: Vec<Bottleneck> = vec![Bottleneck::Idle; slots];
    for step in 0..300 {
        let mut set = BTreeSet::new();
        for _ in 0..rng.random_range(1..=3) {
            let s = rng.random_range(0..slots);
            let next = match (current[s], rng.random_range(0..10)) {
                (Some(d), 0..=5) if d.weight > 1 => Some(Demand {
                    weight: d.weight - rng.random_range(1..d.weight),
                    ..d
                }),
                (Some(_), 0..=6) => None,
                // A new cap on the same route (as Varys and Aalo move
                // caps), often back to one it had.
                (Some(d), 7..=8) if d.cap.is_finite() => Some(Demand {
                    cap: [5.0, 10.0, 20.0, d.cap][rng.random_range(0..4)],
                    ..d
                }),
                (None, 0..=3) | (Some(_), _) => Some(demand(rng)),
                (None, _) => None,
            };
            if current[s] != next {
                set.insert(s as u32);
            }
            current[s] = next;
            lv.set(s, next);
        }
        let mut c = Changes::default();
        lv.solve(&mut c);
        let changed = c.slots;
        // The reference: max-min over the binding links only.
        let live: Vec<usize> = (0..slots).filter(|&s| current[s].is_some()).collect();
        let ds: Vec<Demand> = live
            .iter()
            .filter_map(|&s| current[s])
            .map(|d| {
                let kept: Vec<u32> = d
                    .links
                    .as_slice()
                    .iter()
                    .copied()
                    .filter(|&l| binds[l as usize])
                    .collect();
                Demand {
                    links: Links::new(&kept).expect("at most 4"),
                    ..d
                }
            })
            .collect();
        let want = max_min(capacity, &ds);
        let mut load = vec![0.0; links];
        for (&s, &w) in live.iter().zip(&want) {
            let got = lv.rate(s);
            assert!(
                (got - w).abs() <= 1e-9 * w.abs().max(1.0),
                "seed {seed} step {step} slot {s}: {got} != {w}"
            );
            let d = current[s].expect("live");
            match lv.bottleneck(s) {
                Bottleneck::Link(l) => {
                    assert!(binds[l as usize] && d.links.as_slice().contains(&l));
                    assert_eq!(got.to_bits(), lv.level(l).to_bits());
                }
                Bottleneck::Cap => assert_eq!(got, d.cap),
                Bottleneck::Idle => panic!("seed {seed} step {step}: live slot {s} idle"),
            }
            for &l in d.links.as_slice() {
                load[l as usize] += got * f64::from(d.weight);
            }
        }
        for (l, &b) in load.iter().enumerate() {
            let a = lv.load(l as LinkId);
            assert!(
                (a - b).abs() <= 1e-9 * b.abs().max(1.0),
                "seed {seed} step {step}: load of link {l}: {a} != {b}"
            );
        }
        for s in (0..slots).filter(|&s| current[s].is_none()) {
            assert_eq!(lv.rate(s), 0.0);
        }
        let expect: Vec<u32> = (0..slots as u32)
            .filter(|&s| set.contains(&s) || lv.bottleneck(s as usize) != before[s as usize])
            .collect();
        assert_eq!(changed, expect, "seed {seed} step {step}");
        before = (0..slots).map(|s| lv.bottleneck(s)).collect();
    }
}

/// Random link sets (one to four links per demand, some links never
/// binding), solved by `new`'s solver.
fn check_random_link_sets(new: impl Fn(&[f64], &[bool]) -> LinkLevels) {
    for seed in 0..20u64 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let links = rng.random_range(2..12u32);
        let capacity: Vec<f64> = (0..links).map(|_| rng.random_range(10.0..200.0)).collect();
        let binds: Vec<bool> = (0..links).map(|_| rng.random_bool(0.8)).collect();
        let lv = new(&capacity, &binds);
        check_random_events(seed, &mut rng, lv, &capacity, &binds.clone(), |rng| {
            demand(rng, &binds)
        });
    }
}

#[test]
fn levels_equal_from_scratch_max_min_on_random_events() {
    check_random_link_sets(LinkLevels::new);
}

/// As above, with solves kept to the changed slots' links where that
/// gives the max-min rates.
#[test]
fn local_solves_equal_from_scratch_max_min_on_random_events() {
    check_random_link_sets(|capacity, binds| LinkLevels::new(capacity, binds).solving_locally());
}

/// A fabric as circuits make it: wide NICs (links 0-7) and narrow ports
/// (8-15), each slot over a NIC up, a port and a NIC down, or over two
/// NICs (EPS within a rack), and now and then one capped. Solves kept to
/// the changed slots' links give the rates, bottlenecks, levels and
/// changes of full fillings bit for bit, and loads within rounding; most
/// solves stay local.
#[test]
fn local_solves_equal_full_fillings_bit_for_bit() {
    for seed in 0..20 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let links = 16usize;
        let capacity: Vec<f64> = (0..links)
            .map(|l| {
                if l < 8 {
                    rng.random_range(80.0..100.0)
                } else {
                    rng.random_range(5.0..20.0)
                }
            })
            .collect();
        let binds = vec![true; links];
        let mut local = LinkLevels::new(&capacity, &binds).solving_locally();
        let mut full = LinkLevels::new(&capacity, &binds);
        let n = 40;
        for step in 0..400 {
            for _ in 0..rng.random_range(1..=3) {
                let s = rng.random_range(0..n);
                let (up, down) = (rng.random_range(0..4u32), rng.random_range(4..8u32));
                let next = match rng.random_range(0..10) {
                    0..=2 => None,
                    3 => Some(Demand::new(Links::new(&[up, down]).expect("2 links"))),
                    4 if step % 50 < 5 => Some(Demand {
                        cap: 3.0,
                        ..Demand::new(Links::new(&[up, 8 + up, down]).expect("3 links"))
                    }),
                    _ => Some(Demand {
                        weight: rng.random_range(1..=3),
                        ..Demand::new(Links::new(&[up, 8 + up, down]).expect("3 links"))
                    }),
                };
                local.set(s, next);
                full.set(s, next);
            }
            let why = format!("seed {seed}, step {step}");
            solve_both(&mut local, &mut full, n, links, &why, Loads::WithinRounding);
        }
        let (l, f) = (local.stats(), full.stats());
        assert_eq!(f.local_solves, 0);
        assert!(2 * l.local_solves > l.solves, "seed {seed}: {l:?}");
    }
}

/// As above, with most demands capped, so that caps move in place and
/// stale entries pile up in the cap order between solves.
#[test]
fn levels_equal_from_scratch_max_min_when_caps_move() {
    for seed in 100..120u64 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let links = rng.random_range(2..8u32);
        let capacity: Vec<f64> = (0..links).map(|_| rng.random_range(10.0..100.0)).collect();
        let binds = vec![true; links as usize];
        let lv = LinkLevels::new(&capacity, &binds);
        check_random_events(seed, &mut rng, lv, &capacity, &binds.clone(), |rng| {
            let mut d = demand(rng, &binds);
            if rng.random_bool(0.6) {
                d.cap = [5.0, 10.0, 20.0][rng.random_range(0..3)];
            }
            d
        });
    }
}

/// A big switch as [`super::super::links::LinkMap`] lays it out: 6 hosts
/// in 3 racks (NIC up 0..6, NIC down 6..12, ToR up 12..15 and down
/// 15..18, which never bind) and 3 circuit links 18..21. Host-to-host
/// demands (held by the matrix) mix with capped ones and ones over a
/// circuit (held in lists), so both kinds charge the same NICs.
#[test]
fn levels_with_host_pairs_equal_from_scratch_max_min() {
    let layout = HostPairs {
        hosts: 6,
        hosts_per_rack: 2,
        tor_up: 12,
        tor_down: 15,
    };
    for seed in 0..20u64 {
        let mut rng = ChaCha8Rng::seed_from_u64(100 + seed);
        let capacity: Vec<f64> = (0..21).map(|_| rng.random_range(10.0..200.0)).collect();
        let binds: Vec<bool> = (0..21).map(|l| !(12..18).contains(&l)).collect();
        let lv = LinkLevels::with_host_pairs(&capacity, &binds, layout);
        check_random_events(seed, &mut rng, lv, &capacity, &binds, big_switch_demand);
    }
}

/// The 6-host big switch of `levels_with_host_pairs_equal_from_scratch_max_min`.
const SIX_HOSTS: HostPairs = HostPairs {
    hosts: 6,
    hosts_per_rack: 2,
    tor_up: 12,
    tor_down: 15,
};

/// A demand on [`SIX_HOSTS`]: host to host over EPS (mostly), over a
/// circuit (links 18..21) or capped.
fn big_switch_demand(rng: &mut ChaCha8Rng) -> Demand {
    let (i, j) = (rng.random_range(0..6u32), rng.random_range(0..6u32));
    let (ri, rj) = (i / 2, j / 2);
    let ids: Vec<u32> = match rng.random_range(0..10) {
        0..=1 => vec![i, 18 + rng.random_range(0..3), 6 + j],
        _ if ri == rj => vec![i, 6 + j],
        _ => vec![i, 12 + ri, 15 + rj, 6 + j],
    };
    let mut d = Demand::new(Links::new(&ids).expect("at most 4 links"));
    d.weight = rng.random_range(1..=5);
    if rng.random_bool(0.15) {
        d.cap = rng.random_range(1.0..50.0);
    }
    d
}

/// Capacities that change between solves (as a class's do under strict
/// priority, `super::super::class_levels`), some to nothing, with and
/// without the host-pair matrix, between changes of demand: every solve
/// gives the from-scratch max-min rates on the capacities of the time,
/// even one where only a capacity changed.
#[test]
fn capacity_changes_give_from_scratch_max_min_rates() {
    let binds: Vec<bool> = (0..21).map(|l| !(12..18).contains(&l)).collect();
    for seed in 0..10u64 {
        for matrix in [false, true] {
            let mut rng = ChaCha8Rng::seed_from_u64(500 + seed);
            let mut capacity: Vec<f64> = (0..21).map(|_| rng.random_range(10.0..200.0)).collect();
            let mut lv = if matrix {
                LinkLevels::with_host_pairs(&capacity, &binds, SIX_HOSTS)
            } else {
                LinkLevels::new(&capacity, &binds)
            };
            let mut current: Vec<Option<Demand>> = vec![None; 20];
            for step in 0..200 {
                if step < 20 || rng.random_bool(0.5) {
                    let s = rng.random_range(0..current.len());
                    current[s] = rng.random_bool(0.8).then(|| big_switch_demand(&mut rng));
                    lv.set(s, current[s]);
                } else {
                    for _ in 0..rng.random_range(1..=3) {
                        let l = rng.random_range(0..21u32);
                        let c = if rng.random_bool(0.2) {
                            0.0
                        } else {
                            rng.random_range(1.0..200.0)
                        };
                        capacity[l as usize] = c;
                        lv.set_capacity(l, c);
                        assert_eq!(lv.capacity(l), c);
                    }
                }
                lv.solve(&mut Changes::default());
                let live: Vec<usize> = (0..current.len()).filter(|&s| current[s].is_some()).collect();
                let ds: Vec<Demand> = live
                    .iter()
                    .filter_map(|&s| current[s])
                    .map(|d| Demand {
                        links: d.links.filtered(|l| binds[l as usize]),
                        ..d
                    })
                    .collect();
                let binding: Vec<f64> = (0..21)
                    .map(|l| if binds[l] { capacity[l] } else { f64::INFINITY })
                    .collect();
                for (&s, want) in live.iter().zip(max_min(&binding, &ds)) {
                    let got = lv.rate(s);
                    assert!(
                        (got - want).abs() <= 1e-9 * want.abs().max(1.0),
                        "seed {seed} matrix {matrix} step {step} slot {s}: {got} != {want}"
                    );
                }
            }
        }
    }
}

/// How two solvers' loads must agree in [`solve_both`].
#[derive(Clone, Copy, PartialEq, Eq)]
enum Loads {
    BitForBit,
    /// Within 1e-9 of the larger of the load and 1 (loads updated by
    /// difference, as local solves update them).
    WithinRounding,
}

/// Solves `a` and `b` (two solvers given the same demands) and checks that
/// they report the same changes and agree bit for bit on the rates and
/// bottlenecks of `slots` slots and the levels of `links` links, and on
/// those links' loads as `loads` says.
fn solve_both(a: &mut LinkLevels, b: &mut LinkLevels, slots: usize, links: usize, why: &str, loads: Loads) {
    let (mut ca, mut cb) = (Changes::default(), Changes::default());
    a.solve(&mut ca);
    b.solve(&mut cb);
    assert_eq!(ca.slots, cb.slots, "{why}: changed slots");
    assert_eq!(ca.links, cb.links, "{why}: changed links");
    for s in 0..slots {
        assert_eq!(a.rate(s).to_bits(), b.rate(s).to_bits(), "{why}: rate of {s}");
        assert_eq!(a.bottleneck(s), b.bottleneck(s), "{why}: bottleneck of {s}");
    }
    for l in 0..links as LinkId {
        assert_eq!(a.level(l).to_bits(), b.level(l).to_bits(), "{why}: level {l}");
        let (x, y) = (a.load(l), b.load(l));
        match loads {
            Loads::BitForBit => assert_eq!(x.to_bits(), y.to_bits(), "{why}: load {l}"),
            Loads::WithinRounding => {
                assert!((x - y).abs() <= 1e-9 * y.max(1.0), "{why}: load {l}: {x} != {y}")
            }
        }
    }
}

/// [`solve_both`], loads bit for bit.
fn solve_both_alike(a: &mut LinkLevels, b: &mut LinkLevels, slots: usize, links: usize, why: &str) {
    solve_both(a, b, slots, links, why, Loads::BitForBit);
}

/// On a big switch of 24 ports, where every demand is in the matrix,
/// solves that resume from the last one's order (a snapshot every 3
/// freezes, so restores and re-runs happen at every depth) and then
/// follow it where it holds give every rate, bottleneck, level, load
/// and change report bit for bit as solves from scratch do, and do
/// repeat freezes.
#[test]
fn resumed_solves_equal_solves_from_scratch_bit_for_bit() {
    for seed in 0..6u64 {
        let (a, _) = resume_beside_scratch(900 + seed, 0.0);
        assert!(
            a.freezes_repeated * 5 > a.freezes,
            "seed {seed}: {} of {} freezes repeated",
            a.freezes_repeated,
            a.freezes
        );
    }
}

/// As above, with host links' capacities changing before a third of the
/// solves, as a class's solver sees them (the classes before it left
/// more or less; sometimes nothing, which makes ties at share 0): still
/// every figure bit for bit, every solve but the first resumed, and
/// solves after a new capacity repeat freezes.
#[test]
fn resumed_solves_across_new_capacities_equal_solves_from_scratch() {
    for seed in 0..6u64 {
        let (a, _) = resume_beside_scratch(950 + seed, 0.3);
        assert!(a.freezes_repeated > 0, "seed {seed}: {a:?}");
    }
}

/// Runs a solver that resumes beside one that solves from scratch, both
/// given the same random changes (bundles joining, leaving, gaining and
/// losing flows; before a share `recapacitate` of the solves, 1-3 host
/// links taking a new capacity), checking after every solve that they
/// agree bit for bit; returns both's stats, checked to show that both
/// ends of a resumed solve were taken and that every solve but the first
/// resumed.
fn resume_beside_scratch(seed: u64, recapacitate: f64) -> (SolveStats, SolveStats) {
    let n = 24u32;
    let layout = HostPairs {
        hosts: n,
        hosts_per_rack: 1,
        tor_up: 2 * n,
        tor_down: 3 * n,
    };
    let links = 4 * n as usize;
    let binds: Vec<bool> = (0..links).map(|l| l < 2 * n as usize).collect();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let capacity: Vec<f64> = (0..links).map(|_| rng.random_range(10.0..200.0)).collect();
    let mut resumed = LinkLevels::with_host_pairs(&capacity, &binds, layout).resuming(Some(3));
    let mut scratch = LinkLevels::with_host_pairs(&capacity, &binds, layout).resuming(None);
    let slots = 300usize;
    let mut current: Vec<Option<Demand>> = vec![None; slots];
    for step in 0..400 {
        // Mostly one or two bundles change, sometimes a burst (an arrival).
        let changes = if rng.random_bool(0.1) {
            40
        } else {
            rng.random_range(1..=2)
        };
        for _ in 0..changes {
            let s = rng.random_range(0..slots);
            current[s] = match current[s] {
                // Flows of its bundle finish, or more join it.
                Some(d) if rng.random_bool(0.5) => Some(Demand {
                    weight: match d.weight {
                        w if w > 1 && rng.random_bool(0.6) => w - 1,
                        w => w + rng.random_range(1..=3),
                    },
                    ..d
                }),
                Some(_) if rng.random_bool(0.5) => None,
                _ => {
                    let (i, j) = (rng.random_range(0..n), rng.random_range(0..n));
                    let ids = if i == j {
                        vec![i, n + j]
                    } else {
                        vec![i, 2 * n + i, 3 * n + j, n + j]
                    };
                    let mut d = Demand::new(Links::new(&ids).expect("2 or 4 links"));
                    d.weight = rng.random_range(1..=4);
                    Some(d)
                }
            };
            resumed.set(s, current[s]);
            scratch.set(s, current[s]);
        }
        if recapacitate > 0.0 && rng.random_bool(recapacitate) {
            for _ in 0..rng.random_range(1..=3) {
                let l = rng.random_range(0..2 * n);
                let c = match rng.random_range(0..4) {
                    0 => 0.0,
                    _ => rng.random_range(10.0..200.0),
                };
                resumed.set_capacity(l, c);
                scratch.set_capacity(l, c);
            }
        }
        solve_both_alike(
            &mut resumed,
            &mut scratch,
            slots,
            links,
            &format!("seed {seed}, step {step}"),
        );
    }
    let (a, b) = (resumed.stats(), scratch.stats());
    assert_eq!(a.freezes, b.freezes, "seed {seed}: the same freezes");
    assert_eq!(b.freezes_repeated, 0);
    // Both ends of a resumed solve were taken: following the last
    // order to the end, and going back to the heap when it broke.
    assert!(a.orders_followed > 0 && a.orders_left > 0, "seed {seed}: {a:?}");
    assert_eq!(
        a.orders_followed + a.orders_left + 1,
        a.solves,
        "seed {seed}: all but the first resumed"
    );
    (a, b)
}

/// Slots mostly capped below their fair share (Varys' and Aalo's
/// rates), arriving and leaving: after every solve each slot's rate and
/// bottleneck are bit for bit those of a solve from scratch of the same
/// demands, loads agree to rounding, and the solves that only saw
/// departures with every slot at its cap took the short way and
/// reported only the departed slots.
#[test]
fn departures_at_caps_keep_every_rate() {
    for seed in 0..10u64 {
        let mut rng = ChaCha8Rng::seed_from_u64(700 + seed);
        let capacity: Vec<f64> = (0..8).map(|_| rng.random_range(20.0..40.0)).collect();
        let binds = vec![true; 8];
        let mut lv = LinkLevels::new(&capacity, &binds);
        let slots = 40usize;
        let mut current: Vec<Option<Demand>> = vec![None; slots];
        for step in 0..200 {
            let departures = rng.random_bool(0.6);
            let mut left = Vec::new();
            for _ in 0..rng.random_range(1..=2) {
                let live: Vec<usize> = (0..slots).filter(|&s| current[s].is_some()).collect();
                let s = match live.len() {
                    n if departures && n > 0 => live[rng.random_range(0..n)],
                    _ => rng.random_range(0..slots),
                };
                let next = match current[s] {
                    Some(_) if departures => None,
                    Some(d) => Some(d),
                    None if departures => None,
                    None => {
                        let mut d = demand(&mut rng, &binds);
                        // Now and then one that a link binds.
                        d.cap = if rng.random_bool(0.05) {
                            f64::INFINITY
                        } else {
                            rng.random_range(0.0..2.0)
                        };
                        Some(d)
                    }
                };
                if current[s].is_some() && next.is_none() {
                    left.push(s as u32);
                }
                current[s] = next;
                lv.set(s, next);
            }
            let short_ways = lv.stats().departures_at_caps;
            let mut c = Changes::default();
            lv.solve(&mut c);
            let mut fresh = LinkLevels::new(&capacity, &binds);
            for (s, d) in current.iter().enumerate() {
                fresh.set(s, *d);
            }
            fresh.solve(&mut Changes::default());
            let why = format!("seed {seed}, step {step}");
            for (s, d) in current.iter().enumerate() {
                assert_eq!(
                    lv.rate(s).to_bits(),
                    fresh.rate(s).to_bits(),
                    "{why}: rate of {s}"
                );
                if d.is_some() {
                    assert_eq!(lv.bottleneck(s), fresh.bottleneck(s), "{why}: bottleneck of {s}");
                }
            }
            for l in 0..8 {
                assert!((lv.load(l) - fresh.load(l)).abs() < 1e-9, "{why}: load of {l}");
            }
            if lv.stats().departures_at_caps > short_ways {
                left.sort_unstable();
                left.dedup();
                assert_eq!(c.slots, left, "{why}: only the departed slots are reported");
                assert!(c.links.is_empty());
            }
        }
        assert!(
            lv.stats().departures_at_caps > 50,
            "seed {seed}: {:?}",
            lv.stats()
        );
    }
}

#[test]
fn caps_that_fill_a_link_exactly_hold_their_slots_and_departures_take_the_short_way() {
    // Link 0 (capacity 10) carries a and b capped at 5 each, as Varys'
    // MADD fills a coflow's bottleneck: the link's share equals both
    // caps. Each slot is held by its cap, the link gets no level, and a
    // departure leaves the other at its cap without a filling.
    let capped = |cap: f64| Demand {
        cap,
        ..Demand::new(Links::new(&[0]).expect("links"))
    };
    let mut lv = LinkLevels::new(&[10.0], &[true]);
    lv.set(0, Some(capped(5.0)));
    lv.set(1, Some(capped(5.0)));
    lv.solve(&mut Changes::default());
    for s in 0..2 {
        assert_eq!(lv.bottleneck(s), Bottleneck::Cap, "slot {s}");
        assert_eq!(lv.rate(s), 5.0, "slot {s}");
    }
    assert!(lv.level(0).is_infinite(), "{}", lv.level(0));
    lv.set(0, None);
    lv.solve(&mut Changes::default());
    assert_eq!(lv.stats().departures_at_caps, 1, "{:?}", lv.stats());
    assert_eq!((lv.bottleneck(1), lv.rate(1)), (Bottleneck::Cap, 5.0));
    assert_eq!(lv.load(0), 5.0);
}

#[test]
fn a_departure_moves_levels_not_bottlenecks() {
    // Link 0 (cap 1) carries a and b; link 1 (cap 10) carries b, c, d.
    // a = b = 0.5 at link 0; c = d = 4.75 at link 1. When d leaves, link
    // 1's level rises to 9.5: c's rate changes, but no bottleneck moves,
    // so only the departed slot and link 1 are reported.
    let l = |ids: &[u32]| Demand::new(Links::new(ids).expect("links"));
    let mut lv = LinkLevels::new(&[1.0, 10.0], &[true, true]);
    lv.set(0, Some(l(&[0])));
    lv.set(1, Some(l(&[0, 1])));
    lv.set(2, Some(l(&[1])));
    lv.set(3, Some(l(&[1])));
    let mut c = Changes::default();
    lv.solve(&mut c);
    assert_eq!((lv.rate(0), lv.rate(1), lv.rate(2)), (0.5, 0.5, 4.75));
    assert_eq!(lv.bottleneck(1), Bottleneck::Link(0));
    lv.set(3, None);
    lv.solve(&mut c);
    assert_eq!(c.slots, vec![3]);
    assert_eq!(c.links, vec![1]);
    assert_eq!((lv.rate(1), lv.rate(2), lv.rate(3)), (0.5, 9.5, 0.0));
    assert_eq!(lv.load(1), 10.0);
}

/// Solves from the rows give, bit for bit, what fillings over slots give:
/// every rate, bottleneck, level and load, and the slots and links
/// reported changed. Random arrivals, departures and capacity changes;
/// now and then a capped slot, which sends solves over slots (and moves
/// the rows after them) until it leaves.
#[test]
fn solves_from_rows_equal_fillings_over_slots_bit_for_bit() {
    for seed in 0..20 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let links = 40;
        let capacity: Vec<f64> = (0..links).map(|_| rng.random_range(10.0..100.0)).collect();
        let binds: Vec<bool> = (0..links).map(|l| l % 7 != 3).collect();
        let mut rows = LinkLevels::new(&capacity, &binds);
        let mut slots = LinkLevels::new(&capacity, &binds).solving_by_rows(false);
        let n = 60;
        for step in 0..400 {
            for _ in 0..rng.random_range(1..=4) {
                let s = rng.random_range(0..n);
                let next = match rng.random_range(0..10) {
                    0..=3 => None,
                    4 if step % 100 < 10 => Some(demand(&mut rng, &binds)).map(|d| Demand { cap: 7.5, ..d }),
                    _ => Some(loop {
                        let d = demand(&mut rng, &binds);
                        if d.links.as_slice().iter().any(|&l| binds[l as usize]) {
                            break Demand {
                                cap: f64::INFINITY,
                                ..d
                            };
                        }
                    }),
                };
                rows.set(s, next);
                slots.set(s, next);
            }
            move_a_capacity(&mut rng, 0.05, 10.0..100.0, [&mut rows, &mut slots]);
            solve_both_alike(
                &mut rows,
                &mut slots,
                n,
                links,
                &format!("seed {seed}, step {step}"),
            );
        }
        let (r, s) = (rows.stats(), slots.stats());
        assert!(r.row_solves > 100 && r.row_moves > 0, "seed {seed}: {r:?}");
        assert_eq!(s.row_solves, 0);
        assert!(r.demands_filled < s.demands_filled, "seed {seed}: {r:?} {s:?}");
    }
}

/// Caps as Varys and Aalo set them (whole bits per second), moving in
/// place, arriving and leaving, now and then one uncapped or over what a
/// link carries, on links some of which never bind and whose capacities
/// change: a solver that leaves every slot at its cap when the caps fit
/// reports the same changes and gives every rate, bottleneck, level and
/// load bit for bit as one that fills every time, and takes that short
/// way in most solves.
#[test]
fn caps_that_fit_keep_every_slot_at_its_cap_as_a_filling_does() {
    for seed in 0..20 {
        let mut rng = ChaCha8Rng::seed_from_u64(900 + seed);
        let links = 12;
        let capacity: Vec<f64> = (0..links).map(|_| rng.random_range(60.0..100.0)).collect();
        let binds: Vec<bool> = (0..links).map(|l| l % 5 != 4).collect();
        let mut short = LinkLevels::new(&capacity, &binds);
        let mut filling = LinkLevels::new(&capacity, &binds).solving_at_caps(false);
        let n = 30;
        let mut current: Vec<Option<Demand>> = vec![None; n];
        // Whole bits per second: a multiple of 1/8 byte per second.
        let whole = |rng: &mut ChaCha8Rng, most: f64| (rng.random_range(0.0..most) * 8.0).floor() / 8.0;
        for step in 0..300 {
            // Five steps in fifty may add an uncapped demand or one that
            // fills a link alone; the step after them caps those again.
            let odd = step % 50 < 5;
            let mut sets: Vec<(usize, Option<Demand>)> = Vec::new();
            if step % 50 == 5 {
                for (s, d) in current.iter().enumerate() {
                    if let Some(d) = d.filter(|d| d.cap > 6.0) {
                        sets.push((s, Some(Demand { cap: 1.0, ..d })));
                    }
                }
            }
            for _ in 0..rng.random_range(1..=6) {
                let s = rng.random_range(0..n);
                let next = match (current[s], rng.random_range(0..20)) {
                    (_, 0) => None,
                    (Some(d), 1..=12) if d.cap.is_finite() => Some(Demand {
                        cap: whole(&mut rng, 3.0),
                        ..d
                    }),
                    (_, 13) if odd => Some(demand(&mut rng, &binds)).map(|d| Demand {
                        cap: f64::INFINITY,
                        ..d
                    }),
                    (_, 14) if odd => Some(demand(&mut rng, &binds)).map(|d| Demand {
                        cap: 100.0,
                        weight: 1,
                        ..d
                    }),
                    _ => Some(demand(&mut rng, &binds)).map(|d| Demand {
                        cap: whole(&mut rng, 3.0),
                        ..d
                    }),
                };
                sets.push((s, next));
                current[s] = next;
            }
            for (s, next) in sets {
                current[s] = next;
                short.set(s, next);
                filling.set(s, next);
            }
            move_a_capacity(&mut rng, 0.03, 60.0..100.0, [&mut short, &mut filling]);
            let why = format!("seed {seed}, step {step}");
            solve_both_alike(&mut short, &mut filling, n, links, &why);
        }
        let (s, f) = (short.stats(), filling.stats());
        assert_eq!(f.solves_at_caps, 0);
        assert!(2 * s.solves_at_caps > s.solves, "seed {seed}: {s:?}");
        assert!(s.demands_filled < f.demands_filled, "seed {seed}: {s:?} {f:?}");
    }
}

/// With probability `p`, one link (the same in both) of two solvers over
/// the same links gets a new capacity drawn from `range`.
fn move_a_capacity(rng: &mut ChaCha8Rng, p: f64, range: std::ops::Range<f64>, solvers: [&mut LinkLevels; 2]) {
    if rng.random_bool(p) {
        let l = rng.random_range(0..solvers[0].capacity.len() as LinkId);
        let c = rng.random_range(range);
        for lv in solvers {
            lv.set_capacity(l, c);
        }
    }
}
