//! ESPLASH and the default speculator on hand-worked cases: grouping and
//! group-based k-means, Alg. 5.2.3's minimum level and the speculative
//! value, eqs. 5.1-5.2, and whole runs on a heterogeneous cluster with and
//! without a CPU straggler.

use super::support::{job, simulate, topo, S};
use crate::engine::EngineConfig;
use crate::engine::{Outcome, TaskRecord};
use crate::perturb::Action;
use crate::policy::by_name;
use crate::policy::esplash::levels::{group, levels};
use crate::policy::esplash::*;
use crate::sim::SimOutcome;
use ocslab_core::HostId;
use ocslab_core::Nanos;

#[test]
fn grouping_merges_incomparable_nodes_and_keeps_ordered_ones_apart() {
    // Nodes 0 and 1 are each faster at one task type: merged. Node 2 is
    // slower at both than either: its own group, listed first (slowest).
    let g = group(&[vec![1.0, 2.0], vec![2.0, 1.0], vec![5.0, 5.0]]);
    assert_eq!(g, vec![vec![2], vec![0, 1]]);
    // Overlap in one dimension is enough to merge.
    let g = group(&[vec![1.0, 1.0], vec![1.5, 3.0], vec![1.2, 3.5]]);
    assert_eq!(g, vec![vec![1, 2], vec![0]]);
}

#[test]
fn group_based_k_means_finds_the_four_configured_levels() {
    // Four hardware classes (task times 8, 4, 2, 1 × jitter), two nodes
    // each, two task types: levels 1 (slowest) to 4.
    let base = [8.0, 8.0, 4.0, 4.0, 2.0, 2.0, 1.0, 1.0];
    let jitter = [1.0, 1.04, 0.97, 1.03, 1.02, 0.98, 1.0, 1.05];
    let points: Vec<Vec<f64>> = (0..8)
        .map(|i| vec![base[i] * jitter[i], 3.0 * base[i] * jitter[7 - i]])
        .collect();
    assert_eq!(levels(&points, 4), vec![1, 1, 2, 2, 3, 3, 4, 4]);
    // Asking for fewer clusters merges neighbours, never reorders.
    let two = levels(&points, 2);
    assert!(two.windows(2).all(|w| w[0] <= w[1]), "{two:?}");
    assert_eq!((two[0], two[7]), (1, 2));
}

#[test]
fn min_level_and_speculative_value_as_worked_by_hand() {
    // (C(m), EstT(m)) for levels 1..4; a task on a level-1 straggler:
    // ExpT_1 = 75/4 = 18.75, ExpT_2 = 35/3, ExpT_3 = 7.5, ExpT_4 = 5 → minL 4.
    let table = [
        (8.0, Some(40.0)),
        (8.0, Some(20.0)),
        (8.0, Some(10.0)),
        (8.0, Some(5.0)),
    ];
    assert_eq!(min_level(1, &table), Some((4, 5.0)));
    // Its original ends 30 s from now: value = 8·(30 − 5) / 32.
    assert_eq!(speculative_value(4, 30.0, &table), 6.25);
    // Level 4's hosts are all stragglers (no containers): minL 3.
    let table = [
        (8.0, Some(40.0)),
        (8.0, Some(20.0)),
        (8.0, Some(10.0)),
        (0.0, Some(5.0)),
    ];
    assert_eq!(min_level(1, &table), Some((3, 10.0)));
    // A task on level 3 never looks below its own level.
    assert_eq!(min_level(3, &table), Some((3, 10.0)));
}

#[test]
fn default_estimates_follow_eqs_5_1_and_5_2() {
    // Started at 10, 25% done at 20: ends at 50. A copy: mean 12 + now 20.
    assert_eq!(default_estimates(20.0, 10.0, 0.25, 12.0), (50.0, 32.0));
}

/// r0h0 at speed 0.25 (level 1), r0h1 at 0.5 (level 2), r0h2 and r0h3 at
/// 1 (level 3); two slots each; two jobs of 16 maps of 4 s, 2 reduces.
fn heterogeneous(policy: &str, actions: &[(Nanos, Action)]) -> SimOutcome {
    let t = topo(1, 4, 2);
    let home = HostId::new(0, 0);
    let jobs = vec![
        job(0, 16, 4000, 2, 2000, home, 0.01),
        job(1, 16, 4000, 2, 2000, home, 0.01),
    ];
    let mut config = EngineConfig {
        input_reads: false,
        ..EngineConfig::default()
    };
    config.host_speed.insert(HostId::new(0, 0), 0.25);
    config.host_speed.insert(HostId::new(0, 1), 0.5);
    simulate(&t, jobs, by_name(policy, None).expect("policy"), config, actions)
}

fn copies(out: &SimOutcome) -> Vec<&TaskRecord> {
    out.records.tasks.iter().filter(|r| r.speculative).collect()
}

#[test]
fn on_naturally_slow_hosts_the_default_speculator_copies_and_esplash_does_not() {
    // Table 5.1's effect: the mean map time (mostly from fast hosts) makes
    // every map on the slow hosts look late to eqs. 5.1-5.2.
    let default = heterogeneous("speculate-default", &[]);
    assert!(!copies(&default).is_empty());
    assert!(copies(&default)
        .iter()
        .all(|c| out_host_of_original(&default, c) != Some(HostId::new(0, 2))));
    // ESPLASH compares each host with its own level: nothing to copy.
    let esplash = heterogeneous("esplash", &[]);
    assert!(copies(&esplash).is_empty());
}

/// Where the first attempt of `copy`'s task ran.
fn out_host_of_original(out: &SimOutcome, copy: &TaskRecord) -> Option<HostId> {
    out.records
        .tasks
        .iter()
        .find(|r| r.attempt.task == copy.attempt.task && !r.speculative)
        .map(|r| r.host)
}

#[test]
fn esplash_copies_a_straggling_fast_hosts_tasks_to_its_level_only() {
    // r0h2 (level 3) slows to 0.05 from t = 1 s. Its level-3 peer r0h3 is
    // the only host allowed (minL = 3, stragglers excluded), and the copies win.
    let slow = [(
        Nanos(S),
        Action::SetSpeed {
            host: HostId::new(0, 2),
            speed: 0.05,
        },
    )];
    let out = heterogeneous("esplash", &slow);
    let c = copies(&out);
    assert!(!c.is_empty());
    assert!(
        c.iter().all(|r| r.host == HostId::new(0, 3)),
        "copies on {:?}",
        c.iter().map(|r| r.host).collect::<Vec<_>>()
    );
    assert!(c.iter().any(|r| r.outcome == Outcome::Finished));
    let none = heterogeneous("fair", &slow);
    assert!(
        out.end < none.end,
        "esplash {} vs no speculation {}",
        out.end,
        none.end
    );
}
