//! Which task schedulers the demo compares: Fair (the baseline), a
//! network-aware placer (NAS, else ShuffleWatcher), Co-scheduler, as far as
//! this build has them; Delay joins while the line-up would have fewer than
//! three. NAS comes first because on the demo's workload (small jobs, load
//! samples every 200 ms) ShuffleWatcher's saturation test rarely fires and
//! it places tasks as Fair does, which makes a dull comparison. A policy lands in the build by being registered in
//! [`crate::policy::by_name`]'s table; the demo picks it up from there.

/// The baseline every figure is normalized to.
pub const BASELINE: &str = "fair";

/// Network-aware task placers, in order of preference: the first available one runs.
pub const NETWORK_AWARE: [&str; 2] = ["nas", "shufflewatcher"];

/// Joint task and circuit scheduler, run when available.
pub const JOINT: &str = "coscheduler";

/// The locality baseline that fills the line-up up to three.
pub const FILLER: &str = "delay";

/// The line-up for a build whose task schedulers are `available`, baseline first.
pub fn lineup(available: &[&str]) -> Vec<String> {
    let has = |n: &str| available.contains(&n);
    let mut picked = vec![BASELINE.to_string()];
    if let Some(n) = NETWORK_AWARE.iter().find(|n| has(n)) {
        picked.push(n.to_string());
    }
    if has(JOINT) {
        picked.push(JOINT.to_string());
    }
    if picked.len() < 3 && has(FILLER) {
        picked.insert(1, FILLER.to_string());
    }
    picked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fair_and_delay_until_the_network_aware_schedulers_land() {
        assert_eq!(lineup(&["fifo", "fair", "delay"]), ["fair", "delay"]);
    }

    #[test]
    fn nas_before_shufflewatcher_and_coscheduler_last() {
        let all = ["fair", "delay", "nas", "shufflewatcher", "coscheduler", "corral"];
        assert_eq!(lineup(&all), ["fair", "nas", "coscheduler"]);
        assert_eq!(
            lineup(&["fair", "delay", "shufflewatcher"]),
            ["fair", "delay", "shufflewatcher"]
        );
        assert_eq!(
            lineup(&["fair", "delay", "coscheduler"]),
            ["fair", "delay", "coscheduler"]
        );
    }

    #[test]
    fn the_current_build_has_the_baseline() {
        let names = crate::policy::names();
        let l = lineup(&names);
        assert_eq!(l[0], BASELINE);
        assert!(l.len() >= 2, "{l:?}");
        assert!(l.iter().all(|n| names.contains(&n.as_str())));
    }
}
