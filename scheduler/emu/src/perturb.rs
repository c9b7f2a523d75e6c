//! Perturbations made real under emulation: [`PerturbPlan`] turns a run's
//! [`Timeline`] ([`ocslab_core::perturb`]) into what the driver does, and when.
//! Pure (no I/O, no clock): the driver asks it what is due and carries the
//! [`Step`]s out.
//!
//! | timeline action | under emulation |
//! |---|---|
//! | whole-run speed (heterogeneous hosts) | the engine's `host_speed` (set by the driver) and `set_speed` to the agent at the start |
//! | `SetSpeed` (a straggler window begins or ends) | `set_speed` to the agent, then `Event::HostSpeed` to the engine, whose `Retime`s move the running computes (`retime_task`) |
//! | `KillAgent` | SIGKILL of the agent process the lab started; the engine learns of it as a real cluster would, by the heartbeat deadline (`HostDead`) |
//! | `RestartAgent` | the same agent started again with the run's credentials, once its death was declared; when it has joined, `Event::HostAlive` and its current speed |
//! | `SetLink` | the link's cable ([`cable_of`]) taken down or brought back with `Fabric::set_cable`; the engine is not told: flows across it stall and TCP retransmits until it is back, as in a real cluster whose scheduler does not see link state |
//!
//! The agent's speed applies to compute phases that begin after it; the
//! engine's `Retime`s cover the ones already running, so no compute is
//! stretched twice.
//!
//! A cable is down while any link of it is in a window: an uplink's two
//! directions (one perturbation, two timeline links) are one cable, and
//! overlapping windows on one cable bring it back only when the last one
//! ends. Whatever is still down when the run ends is brought back
//! ([`PerturbPlan::restore`]), so a lab the run attached to is left as it
//! was found.

use ocslab_agent::protocol::{Command, Speed};
use ocslab_core::engine::{Event, Link};
use ocslab_core::perturb::{Action, Timeline};
use ocslab_emulator::fabric::plan::Cable;
use ocslab_emulator::{HostId, Nanos};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// One thing the driver does for a perturbation.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// Send this command to the host's agent.
    Agent {
        /// The host.
        host: HostId,
        /// The command.
        cmd: Command,
    },
    /// Feed this event to the engine now.
    Engine(Event),
    /// SIGKILL the host's agent process.
    Kill(HostId),
    /// Start the host's agent again (it rejoins with the run's credentials).
    Restart(HostId),
    /// Take a cable of the fabric down, or bring it back.
    Cable {
        /// The cable.
        cable: Cable,
        /// Back up (`true`) or down.
        up: bool,
    },
}

/// The fabric cable that carries `link` (both directions of a host's NIC
/// or of a rack's uplink are one cable).
pub fn cable_of(link: Link) -> Cable {
    match link {
        Link::HostUp(h) | Link::HostDown(h) => Cable::HostNic(h),
        Link::RackUp(r) | Link::RackDown(r) => Cable::Uplink(r),
        Link::OcsPort { rack, port } => Cable::OcsPort { rack, port },
    }
}

/// Counts of what was carried out, for the report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct PerturbCounts {
    /// Speed changes sent to agents.
    pub speed_changes: u32,
    /// Agents killed.
    pub kills: u32,
    /// Agents restarted.
    pub restarts: u32,
    /// Restarted agents that rejoined.
    pub rejoined: u32,
    /// Cables taken down or brought back.
    pub cable_changes: u32,
}

/// The timed perturbations of one emulated run.
#[derive(Clone, Debug, Default)]
pub struct PerturbPlan {
    pending: VecDeque<(Nanos, Action)>,
    speed: BTreeMap<HostId, f64>,
    base: BTreeMap<HostId, f64>,
    /// Killed by us, death not yet declared by the control plane.
    killed: BTreeSet<HostId>,
    /// Restart due, waiting for the death to be declared.
    restart_when_dead: BTreeSet<HostId>,
    /// Restarted, not yet rejoined.
    restarting: BTreeSet<HostId>,
    /// Open link-down windows per link: a cable is down while any of its
    /// links has one.
    windows: BTreeMap<Link, u32>,
    counts: PerturbCounts,
}

fn speed_of(factor: f64) -> Speed {
    // Validated perturbations have factors > 0; clamp what `Speed` cannot hold.
    Speed::from_factor(factor.clamp(1e-6, 4000.0)).unwrap_or(Speed::NOMINAL)
}

impl PerturbPlan {
    /// The plan of `timeline`.
    pub fn new(timeline: &Timeline) -> PerturbPlan {
        PerturbPlan {
            pending: timeline.actions.iter().cloned().collect(),
            speed: timeline.base_speed.clone(),
            base: timeline.base_speed.clone(),
            ..PerturbPlan::default()
        }
    }

    /// What to do once every agent has joined: the whole-run speeds (the
    /// engine already has them in its configuration).
    pub fn start(&mut self) -> Vec<Step> {
        let steps: Vec<Step> = self
            .base
            .iter()
            .filter(|(_, s)| **s != 1.0)
            .map(|(h, s)| Step::Agent {
                host: *h,
                cmd: Command::SetSpeed { speed: speed_of(*s) },
            })
            .collect();
        self.counts.speed_changes += steps.len() as u32;
        steps
    }

    /// When the next timed action is due.
    pub fn next_at(&self) -> Option<Nanos> {
        self.pending.front().map(|(at, _)| *at)
    }

    /// What to do for the actions due by `now`.
    pub fn due(&mut self, now: Nanos) -> Vec<Step> {
        let mut steps = Vec::new();
        while self.pending.front().is_some_and(|(at, _)| *at <= now) {
            let Some((_, action)) = self.pending.pop_front() else {
                break;
            };
            match action {
                Action::SetSpeed { host, speed } => {
                    self.speed.insert(host, speed);
                    self.counts.speed_changes += 1;
                    steps.push(Step::Agent {
                        host,
                        cmd: Command::SetSpeed {
                            speed: speed_of(speed),
                        },
                    });
                    steps.push(Step::Engine(Event::HostSpeed { host, speed }));
                }
                Action::KillAgent(host) => {
                    self.killed.insert(host);
                    self.restart_when_dead.remove(&host);
                    self.counts.kills += 1;
                    steps.push(Step::Kill(host));
                }
                Action::RestartAgent(host) => {
                    if self.killed.contains(&host) {
                        // The control plane has not declared it dead yet: a
                        // new hello now would be refused as a duplicate.
                        self.restart_when_dead.insert(host);
                    } else {
                        steps.extend(self.restart(host));
                    }
                }
                Action::SetLink { link, up } => steps.extend(self.set_link(link, up)),
            }
        }
        steps
    }

    /// A window on `link` opens (`up == false`) or closes: its cable
    /// changes state when the first window on it opens or the last closes.
    fn set_link(&mut self, link: Link, up: bool) -> Option<Step> {
        let cable = cable_of(link);
        let was_down = self.cable_down(cable);
        let open = self.windows.entry(link).or_default();
        *open = if up { open.saturating_sub(1) } else { *open + 1 };
        let down = self.cable_down(cable);
        (down != was_down).then(|| {
            self.counts.cable_changes += 1;
            Step::Cable { cable, up: !down }
        })
    }

    fn cable_down(&self, cable: Cable) -> bool {
        self.windows.iter().any(|(l, n)| *n > 0 && cable_of(*l) == cable)
    }

    /// The run is over: every cable still down comes back up.
    pub fn restore(&mut self) -> Vec<Step> {
        let down: BTreeSet<Cable> = std::mem::take(&mut self.windows)
            .into_iter()
            .filter(|(_, n)| *n > 0)
            .map(|(l, _)| cable_of(l))
            .collect();
        self.counts.cable_changes += down.len() as u32;
        down.into_iter()
            .map(|cable| Step::Cable { cable, up: true })
            .collect()
    }

    fn restart(&mut self, host: HostId) -> Vec<Step> {
        self.counts.restarts += 1;
        self.restarting.insert(host);
        vec![Step::Restart(host)]
    }

    /// The control plane declared `host` dead: a restart waiting for it is due.
    pub fn host_dead(&mut self, host: HostId) -> Vec<Step> {
        self.killed.remove(&host);
        if self.restart_when_dead.remove(&host) {
            self.restart(host)
        } else {
            Vec::new()
        }
    }

    /// `host` joined: if it is a restarted agent, the engine learns it is
    /// back and the agent gets the host's current speed.
    pub fn joined(&mut self, host: HostId) -> Vec<Step> {
        if !self.restarting.remove(&host) {
            return Vec::new();
        }
        self.counts.rejoined += 1;
        let mut steps = vec![Step::Engine(Event::HostAlive(host))];
        let s = self.speed.get(&host).copied().unwrap_or(1.0);
        if s != 1.0 {
            steps.push(Step::Agent {
                host,
                cmd: Command::SetSpeed { speed: speed_of(s) },
            });
        }
        steps
    }

    /// Whether a restarted agent has yet to rejoin (the run is not over
    /// for the cluster until it has; the engine may finish without it).
    pub fn awaiting(&self) -> bool {
        !self.restarting.is_empty() || !self.restart_when_dead.is_empty()
    }

    /// What was carried out so far.
    pub fn counts(&self) -> PerturbCounts {
        self.counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ocslab_core::perturb::Perturbation;
    use ocslab_core::Topology;

    const S: u64 = 1_000_000_000;

    fn topo(racks: u32, hosts: u32, slots: u32) -> Topology {
        Topology::builder("t", racks, hosts)
            .slots_per_host(slots)
            .simulation_only()
            .build()
            .expect("valid topology")
    }

    fn plan(specs: &[&str]) -> PerturbPlan {
        let t = topo(2, 2, 2);
        let ps: Vec<Perturbation> = specs
            .iter()
            .map(|s| Perturbation::parse_cli(s, &t).expect("valid"))
            .collect();
        PerturbPlan::new(&Timeline::of(&ps))
    }

    #[test]
    fn a_slow_host_is_slowed_at_its_agent_from_the_start() {
        let h = HostId::new(0, 1);
        let mut p = plan(&["speed:r0h1:0.5"]);
        assert_eq!(
            p.start(),
            vec![Step::Agent {
                host: h,
                cmd: Command::SetSpeed {
                    speed: Speed(500_000)
                }
            }]
        );
        assert_eq!(p.next_at(), None);
    }

    #[test]
    fn a_straggler_window_slows_the_agent_before_the_engine_retimes_and_restores_base_speed() {
        let h = HostId::new(1, 0);
        let mut p = plan(&["speed:r1h0:0.5", "straggler:r1h0:0.1@10s+5s"]);
        p.start();
        assert_eq!(p.next_at(), Some(Nanos(10 * S)));
        assert!(p.due(Nanos(9 * S)).is_empty());
        assert_eq!(
            p.due(Nanos(10 * S)),
            vec![
                Step::Agent {
                    host: h,
                    cmd: Command::SetSpeed {
                        speed: Speed(100_000)
                    }
                },
                Step::Engine(Event::HostSpeed { host: h, speed: 0.1 }),
            ]
        );
        // The window ends at the host's base speed, not nominal.
        assert_eq!(
            p.due(Nanos(15 * S))[1],
            Step::Engine(Event::HostSpeed { host: h, speed: 0.5 })
        );
        assert_eq!(p.counts().speed_changes, 3);
    }

    #[test]
    fn a_kill_is_a_sigkill_and_the_restart_waits_for_the_declared_death() {
        let h = HostId::new(1, 1);
        let mut p = plan(&["straggler:r1h1:0.25@1s+100s", "kill:r1h1@2s+1s"]);
        p.due(Nanos(S));
        assert_eq!(p.due(Nanos(2 * S)), vec![Step::Kill(h)]);
        // Due at 3 s, but the heartbeat deadline has not passed: wait.
        assert!(p.due(Nanos(3 * S)).is_empty());
        assert!(p.awaiting());
        assert_eq!(p.host_dead(h), vec![Step::Restart(h)]);
        // Another host joining is not a rejoin.
        assert!(p.joined(HostId::new(0, 0)).is_empty());
        // Back: the engine learns it is alive, the agent gets its speed.
        assert_eq!(
            p.joined(h),
            vec![
                Step::Engine(Event::HostAlive(h)),
                Step::Agent {
                    host: h,
                    cmd: Command::SetSpeed {
                        speed: Speed(250_000)
                    }
                },
            ]
        );
        assert!(!p.awaiting());
        let c = p.counts();
        assert_eq!((c.kills, c.restarts, c.rejoined), (1, 1, 1));
    }

    #[test]
    fn a_restart_after_the_declared_death_is_immediate() {
        let h = HostId::new(0, 0);
        let mut p = plan(&["kill:r0h0@1s+5s"]);
        assert_eq!(p.due(Nanos(S)), vec![Step::Kill(h)]);
        assert!(p.host_dead(h).is_empty(), "no restart due yet");
        assert_eq!(p.due(Nanos(6 * S)), vec![Step::Restart(h)]);
    }

    #[test]
    fn a_cable_goes_down_once_per_window_and_comes_back_when_the_last_window_closes() {
        let up = Cable::Uplink(0);
        // Two overlapping windows on rack 0's uplink (each is both of its
        // directions), one on a host NIC.
        let mut p = plan(&[
            "link-down:r0-up@1s+4s",
            "link-down:r0-up@2s+1s",
            "link-down:r1h0-nic@2s+10s",
        ]);
        assert_eq!(p.due(Nanos(S)), vec![Step::Cable { cable: up, up: false }]);
        assert_eq!(
            p.due(Nanos(2 * S)),
            vec![Step::Cable {
                cable: Cable::HostNic(HostId::new(1, 0)),
                up: false
            }]
        );
        assert!(p.due(Nanos(3 * S)).is_empty(), "the first window is still open");
        assert_eq!(p.due(Nanos(5 * S)), vec![Step::Cable { cable: up, up: true }]);
        // The run ends inside the NIC's window: it comes back.
        assert_eq!(
            p.restore(),
            vec![Step::Cable {
                cable: Cable::HostNic(HostId::new(1, 0)),
                up: true
            }]
        );
        assert!(p.restore().is_empty());
        assert_eq!(p.counts().cable_changes, 4);
    }
}
