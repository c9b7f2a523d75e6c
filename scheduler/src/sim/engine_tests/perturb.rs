//! Perturbations ([`crate::perturb`]) as the simulation driver carries
//! them out, worked by hand.

use super::support::{job, simulate, topo, S};
use crate::engine::EngineConfig;
use crate::perturb::{Perturbation, Timeline};
use ocslab_emulator::{HostId, Nanos};

#[test]
fn a_straggler_window_stretches_the_compute_it_overlaps_as_worked_by_hand() {
    // One 10 s map-only task from 0; the host halves its speed at 4 s
    // (40% done): the other 6 s of work take 12 s, so it ends at 16 s.
    // Back to full speed at 10 s (6 s at half speed: 3 s of work, 7 of
    // 10 done): the last 3 s of work end at 13 s.
    let t = topo(1, 1, 1);
    let h = HostId::new(0, 0);
    let run = |window: &str| {
        let tl = Timeline::of(&[Perturbation::parse_cli(window, &t).expect("valid")]);
        let j = job(0, 1, 10_000, 0, 0, h, 0.0);
        let policy = crate::policy::by_name("fifo", None).expect("fifo");
        simulate(
            &t,
            vec![j],
            policy,
            EngineConfig::default(),
            tl.engine_only().expect("sim"),
        )
    };
    assert_eq!(run("straggler:r0h0:0.5@4s+100s").end, Nanos(16 * S));
    let out = run("straggler:r0h0:0.5@4s+6s");
    assert_eq!(out.end, Nanos(13 * S));
    assert_eq!(out.records.tasks[0].compute_started, Some(Nanos(0)));
}

#[test]
fn a_killed_agent_loses_its_work_and_the_job_still_completes() {
    // Two hosts, one slot each, two 4 s maps and a reduce. r0h1 dies at
    // 2 s (its map lost) and returns at 3 s; the lost map re-runs.
    let t = topo(1, 2, 1);
    let tl = Timeline::of(&[Perturbation::parse_cli("kill:r0h1@2s+1s", &t).expect("valid")]);
    let j = job(0, 2, 4000, 1, 1000, HostId::new(0, 0), 0.1);
    let policy = crate::policy::by_name("fair", None).expect("fair");
    let config = EngineConfig {
        input_reads: false,
        ..EngineConfig::default()
    };
    let out = simulate(&t, vec![j], policy, config, tl.engine_only().expect("sim"));
    assert!(out.records.jobs[&crate::model::job::JobId(0)].finished.is_some());
    let lost = out
        .records
        .tasks
        .iter()
        .filter(|r| r.outcome == crate::engine::Outcome::Lost)
        .count();
    assert_eq!(lost, 1);
}
