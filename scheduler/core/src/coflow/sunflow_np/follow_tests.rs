//! Sunflow following a coflow between calls decides as reading it whole
//! at every call does, and reads it whole only when it cannot follow it.

use super::SunflowNp;
use crate::coflow::decide_tests::{add as add_flow, fabric, h};
use crate::coflow::{CoflowPolicy, NetView};
use crate::model::coflow::{CoflowId, FlowId};
use crate::Nanos;

/// Flow `id` of coflow 1 from `src` to `dst` (rack, host) with `bytes`.
fn add(view: &mut NetView, id: u64, src: (u32, u32), dst: (u32, u32), bytes: u64) {
    add_flow(view, Nanos::ZERO, id, 1, h(src.0, src.1), h(dst.0, dst.1), bytes);
}

fn finish(view: &mut NetView, id: u64) {
    let elephant = view.flows.remove(&FlowId(id)).is_some_and(|f| f.elephant);
    if let Some(c) = view.coflows.get_mut(&CoflowId(1)) {
        c.remove_flow(&FlowId(id), elephant);
    }
}

/// Calls `kept` and a copy of it that forgot what it kept (so reads every
/// elephant again): same decision, reservations and plans. Returns the
/// call in which `kept` last read coflow 1 whole.
fn call(kept: &mut SunflowNp, view: &NetView) -> u64 {
    let mut fresh = kept.clone();
    fresh.forget_demand();
    let a = kept.schedule(Nanos::ZERO, view);
    let b = fresh.schedule(Nanos::ZERO, view);
    assert_eq!(a, b);
    assert_eq!(kept.reservations(), fresh.reservations());
    assert_eq!(kept.pair_plans(), fresh.pair_plans());
    kept.coflows.get(&CoflowId(1)).map_or(0, |d| d.read_in)
}

#[test]
fn a_coflow_is_followed_as_flows_join_and_leave_and_read_whole_when_mice_become_elephants() {
    // Three racks, one OCS port each; elephants from 1 MB per rack pair.
    let mut view = NetView::new(fabric(3));
    let mut sunflow = SunflowNp::default();
    add(&mut view, 1, (0, 0), (1, 0), 2_000_000);
    assert_eq!(call(&mut sunflow, &view), 1, "first read whole");

    // An elephant joins the reserved pair, another a new pair.
    add(&mut view, 2, (0, 1), (1, 1), 2_000_000);
    add(&mut view, 3, (1, 0), (2, 0), 3_000_000);
    assert_eq!(call(&mut sunflow, &view), 1, "followed");
    assert_eq!(sunflow.reservations().len(), 2);

    // The reserved pair's first flow leaves; then its second: it is done.
    finish(&mut view, 1);
    assert_eq!(call(&mut sunflow, &view), 1, "followed");
    assert_eq!(sunflow.reservations().len(), 2);
    finish(&mut view, 2);
    assert_eq!(call(&mut sunflow, &view), 1, "followed");
    assert_eq!(sunflow.reservations().len(), 1);

    // A mouse joins: nothing to follow. A second one takes its pair over
    // the threshold, and the first becomes an elephant: read whole.
    add(&mut view, 4, (2, 0), (0, 0), 600_000);
    assert_eq!(call(&mut sunflow, &view), 1, "followed");
    add(&mut view, 5, (2, 1), (0, 1), 600_000);
    assert_eq!(call(&mut sunflow, &view), 6, "read whole");
    assert_eq!(sunflow.reservations().len(), 2);
}
