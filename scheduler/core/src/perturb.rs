//! Perturbations: the ways a real cluster misbehaves, written once and
//! realised by either driver — hosts of different speeds, a CPU straggler
//! for a time window, an agent killed and restarted after T seconds, an
//! EPS link or an OCS port down for a window.
//!
//! In an experiment file (`[[perturbations]]`, `kind` picks the variant):
//!
//! ```toml
//! [[perturbations]]
//! kind = "host-speed"      # for the whole run: heterogeneous hardware
//! host = "r0h0"
//! speed = 0.5
//!
//! [[perturbations]]
//! kind = "straggler"       # a CPU straggler for a window
//! host = "r1h2"
//! speed = 0.1
//! at = "100s"
//! for = "1000s"
//!
//! [[perturbations]]
//! kind = "agent-kill"      # the agent dies, comes back empty after `restart_after`
//! host = "r2h0"
//! at = "30s"
//! restart_after = "10s"
//!
//! [[perturbations]]
//! kind = "link-down"       # `r1-up` (rack 1's EPS uplink), `r0h3-nic`, `r2-ocs0`
//! link = "r1-up"
//! at = "20s"
//! for = "5s"
//! ```
//!
//! On the command line, `--perturb KIND:ARGS[@AT[+FOR]]`, e.g.
//! `speed:r0h0:0.5`, `straggler:r1h2:0.1@100s+1000s`, `kill:r2h0@30s+10s`,
//! `link-down:r1-up@20s+5s` ([`Perturbation::parse_cli`]).
//!
//! Both drivers read a [`Timeline`]: a list of timed [`Action`]s plus the
//! speeds that hold for the whole run. The simulation driver feeds each
//! action's [`Action::engine_event`] to the engine at its time (a host's
//! speed changes, a host dies and comes back) and has its network model
//! take links down and bring them back (flows across a down link wait).
//! The emulation driver carries the actions out for real — slows the
//! host's agent, kills its process and restarts it, takes the veth or OCS
//! port down — and lets the engine learn of them the way it would in a
//! real cluster (a lost agent connection is a `HostDead`). Neither driver
//! tells the engine or the coflow policy that a link is down: flows across
//! it wait, as TCP flows across a dead cable stall.

use crate::engine::{EngineConfig, Event, Link};
use crate::{HostId, Nanos, Topology};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// A perturbation as written in an experiment file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum RawPerturbation {
    /// A host computes at `speed` for the whole run.
    HostSpeed {
        /// The host, e.g. `r0h1`.
        host: String,
        /// Relative speed (> 0; 1 = nominal).
        speed: f64,
    },
    /// A host computes at `speed` from `at` for `for`.
    Straggler {
        /// The host.
        host: String,
        /// Relative speed during the window.
        speed: f64,
        /// Start of the window.
        at: Nanos,
        /// Length of the window.
        #[serde(rename = "for")]
        length: Nanos,
    },
    /// A host's agent is killed at `at` and restarted `restart_after` later.
    AgentKill {
        /// The host.
        host: String,
        /// When it dies.
        at: Nanos,
        /// How long it stays dead.
        restart_after: Nanos,
    },
    /// A link is down from `at` for `for`.
    LinkDown {
        /// `rR-up` (EPS uplink of rack R, both directions), `rRhH-nic`
        /// (a host's NIC), `rR-ocsP` (OCS port P of rack R).
        link: String,
        /// Start of the window.
        at: Nanos,
        /// Length of the window.
        #[serde(rename = "for")]
        length: Nanos,
    },
}

/// A validated perturbation.
#[derive(Clone, Debug, PartialEq)]
pub enum Perturbation {
    /// `host` at `speed` for the whole run.
    HostSpeed {
        /// The host.
        host: HostId,
        /// Its speed.
        speed: f64,
    },
    /// `host` at `speed` during `[at, at + length)`.
    Straggler {
        /// The host.
        host: HostId,
        /// Its speed in the window.
        speed: f64,
        /// Window start.
        at: Nanos,
        /// Window length.
        length: Nanos,
    },
    /// `host`'s agent dead during `[at, at + restart_after)`.
    AgentKill {
        /// The host.
        host: HostId,
        /// Death.
        at: Nanos,
        /// Downtime.
        restart_after: Nanos,
    },
    /// `links` down during `[at, at + length)` (an uplink is two links).
    LinkDown {
        /// The link as written.
        name: String,
        /// The links it stands for.
        links: Vec<Link>,
        /// Window start.
        at: Nanos,
        /// Window length.
        length: Nanos,
    },
}

/// What is wrong with a perturbation: which field, and what would be valid.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("perturbation {index}: field `{field}`: {message}")]
pub struct PerturbError {
    /// Its index among the perturbations (0-based).
    pub index: usize,
    /// The field.
    pub field: String,
    /// What is wrong and what would be valid.
    pub message: String,
}

fn err(index: usize, field: &str, message: impl Into<String>) -> PerturbError {
    PerturbError {
        index,
        field: field.into(),
        message: message.into(),
    }
}

fn host(index: usize, topo: &Topology, name: &str) -> Result<HostId, PerturbError> {
    let h: HostId = name.parse().map_err(|e: String| err(index, "host", e))?;
    if !topo.contains(h) {
        return Err(err(
            index,
            "host",
            format!(
                "{h} is not a host of topology {:?} (r0h0..r{}h{})",
                topo.name,
                topo.racks - 1,
                topo.hosts_per_rack - 1
            ),
        ));
    }
    Ok(h)
}

fn speed(index: usize, s: f64) -> Result<f64, PerturbError> {
    if s.is_finite() && s > 0.0 {
        Ok(s)
    } else {
        Err(err(
            index,
            "speed",
            format!("must be a number > 0 (got {s}); 0.5 = half speed"),
        ))
    }
}

fn positive(index: usize, field: &str, d: Nanos) -> Result<Nanos, PerturbError> {
    if d > Nanos::ZERO {
        Ok(d)
    } else {
        Err(err(index, field, "must be more than 0, e.g. \"10s\""))
    }
}

/// Parses a link name (`r1-up`, `r0h3-nic`, `r2-ocs0`) against `topo`.
pub fn parse_link(topo: &Topology, name: &str) -> Result<Vec<Link>, String> {
    let valid = "valid: rR-up (EPS uplink), rRhH-nic (host NIC), rR-ocsP (OCS port)";
    let (head, tail) = name.split_once('-').ok_or_else(|| format!("{name:?}: {valid}"))?;
    let rack_of = |s: &str| -> Result<u32, String> {
        let r: u32 = s
            .strip_prefix('r')
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| format!("{name:?}: {valid}"))?;
        if r >= topo.racks {
            return Err(format!("{name:?}: rack {r} does not exist (0..{})", topo.racks));
        }
        Ok(r)
    };
    match tail {
        "up" => {
            let r = rack_of(head)?;
            Ok(vec![Link::RackUp(r), Link::RackDown(r)])
        }
        "nic" => {
            let h: HostId = head.parse().map_err(|e: String| format!("{name:?}: {e}"))?;
            if !topo.contains(h) {
                return Err(format!("{name:?}: {h} is not a host of the topology"));
            }
            Ok(vec![Link::HostUp(h), Link::HostDown(h)])
        }
        t if t.starts_with("ocs") => {
            let r = rack_of(head)?;
            let port: u32 = t[3..].parse().map_err(|_| format!("{name:?}: {valid}"))?;
            if port >= topo.ocs_ports_per_rack {
                return Err(format!(
                    "{name:?}: rack {r} has {} OCS ports",
                    topo.ocs_ports_per_rack
                ));
            }
            Ok(vec![Link::OcsPort { rack: r, port }])
        }
        _ => Err(format!("{name:?}: {valid}")),
    }
}

impl Perturbation {
    /// Validates `raw` (perturbation number `index`) against `topo`.
    pub fn validate(
        index: usize,
        raw: &RawPerturbation,
        topo: &Topology,
    ) -> Result<Perturbation, PerturbError> {
        Ok(match raw {
            RawPerturbation::HostSpeed { host: h, speed: s } => Perturbation::HostSpeed {
                host: host(index, topo, h)?,
                speed: speed(index, *s)?,
            },
            RawPerturbation::Straggler {
                host: h,
                speed: s,
                at,
                length,
            } => Perturbation::Straggler {
                host: host(index, topo, h)?,
                speed: speed(index, *s)?,
                at: *at,
                length: positive(index, "for", *length)?,
            },
            RawPerturbation::AgentKill {
                host: h,
                at,
                restart_after,
            } => Perturbation::AgentKill {
                host: host(index, topo, h)?,
                at: *at,
                restart_after: positive(index, "restart_after", *restart_after)?,
            },
            RawPerturbation::LinkDown { link, at, length } => Perturbation::LinkDown {
                name: link.clone(),
                links: parse_link(topo, link).map_err(|m| err(index, "link", m))?,
                at: *at,
                length: positive(index, "for", *length)?,
            },
        })
    }

    /// Parses the command-line form `KIND:ARGS[@AT[+FOR]]`: `speed:HOST:S`,
    /// `straggler:HOST:S@AT+FOR`, `kill:HOST@AT+DOWN`, `link-down:LINK@AT+FOR`.
    pub fn parse_cli(s: &str, topo: &Topology) -> Result<Perturbation, String> {
        let usage =
            "expected speed:HOST:S, straggler:HOST:S@AT+FOR, kill:HOST@AT+DOWN or link-down:LINK@AT+FOR";
        let (what, when) = match s.split_once('@') {
            Some((w, t)) => (w, Some(t)),
            None => (s, None),
        };
        let window = |field: &str| -> Result<(Nanos, Nanos), String> {
            let t = when.ok_or_else(|| format!("{s:?}: needs @AT+{field}; {usage}"))?;
            let (at, len) = t
                .split_once('+')
                .ok_or_else(|| format!("{s:?}: needs @AT+{field}; {usage}"))?;
            let at: Nanos = at.parse().map_err(|e| format!("{s:?}: time {at:?}: {e}"))?;
            let len: Nanos = len.parse().map_err(|e| format!("{s:?}: duration {len:?}: {e}"))?;
            Ok((at, len))
        };
        let parts: Vec<&str> = what.split(':').collect();
        let raw = match parts.as_slice() {
            ["speed", h, sp] if when.is_none() => RawPerturbation::HostSpeed {
                host: h.to_string(),
                speed: sp
                    .parse()
                    .map_err(|_| format!("{s:?}: speed {sp:?} is not a number"))?,
            },
            ["straggler", h, sp] => {
                let (at, length) = window("FOR")?;
                RawPerturbation::Straggler {
                    host: h.to_string(),
                    speed: sp
                        .parse()
                        .map_err(|_| format!("{s:?}: speed {sp:?} is not a number"))?,
                    at,
                    length,
                }
            }
            ["kill", h] => {
                let (at, restart_after) = window("DOWN")?;
                RawPerturbation::AgentKill {
                    host: h.to_string(),
                    at,
                    restart_after,
                }
            }
            ["link-down", l] => {
                let (at, length) = window("FOR")?;
                RawPerturbation::LinkDown {
                    link: l.to_string(),
                    at,
                    length,
                }
            }
            _ => return Err(format!("{s:?}: {usage}")),
        };
        Perturbation::validate(0, &raw, topo).map_err(|e| format!("{s:?}: {}: {}", e.field, e.message))
    }
}

/// One timed thing a driver must do.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// The host computes at `speed` from now on.
    SetSpeed {
        /// The host.
        host: HostId,
        /// Its speed.
        speed: f64,
    },
    /// Kill the host's agent (its running tasks and stored map outputs are lost).
    KillAgent(HostId),
    /// Restart the host's agent (empty).
    RestartAgent(HostId),
    /// Take a link down or bring it back.
    SetLink {
        /// The link.
        link: Link,
        /// Up or down.
        up: bool,
    },
}

impl Action {
    /// The engine event a simulating driver feeds for it (`None` for link
    /// actions: those go to the network model).
    pub fn engine_event(&self) -> Option<Event> {
        match self {
            Action::SetSpeed { host, speed } => Some(Event::HostSpeed {
                host: *host,
                speed: *speed,
            }),
            Action::KillAgent(h) => Some(Event::HostDead(*h)),
            Action::RestartAgent(h) => Some(Event::HostAlive(*h)),
            Action::SetLink { .. } => None,
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::SetSpeed { host, speed } => write!(f, "{host} speed {speed}"),
            Action::KillAgent(h) => write!(f, "kill agent {h}"),
            Action::RestartAgent(h) => write!(f, "restart agent {h}"),
            Action::SetLink { link, up } => write!(f, "{link:?} {}", if *up { "up" } else { "down" }),
        }
    }
}

/// The perturbations of a run as both drivers read them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Timeline {
    /// Speeds that hold from the start (heterogeneous hosts).
    pub base_speed: BTreeMap<HostId, f64>,
    /// Timed actions, by time (stable for equal times, in file order).
    pub actions: Vec<(Nanos, Action)>,
}

impl Timeline {
    /// The timeline of `perturbations`. A straggler window ends at the
    /// host's base speed.
    pub fn of(perturbations: &[Perturbation]) -> Timeline {
        let mut t = Timeline::default();
        for p in perturbations {
            if let Perturbation::HostSpeed { host, speed } = p {
                t.base_speed.insert(*host, *speed);
            }
        }
        for p in perturbations {
            match p {
                Perturbation::HostSpeed { .. } => {}
                Perturbation::Straggler {
                    host,
                    speed,
                    at,
                    length,
                } => {
                    let base = t.base_speed.get(host).copied().unwrap_or(1.0);
                    t.actions.push((
                        *at,
                        Action::SetSpeed {
                            host: *host,
                            speed: *speed,
                        },
                    ));
                    t.actions.push((
                        *at + *length,
                        Action::SetSpeed {
                            host: *host,
                            speed: base,
                        },
                    ));
                }
                Perturbation::AgentKill {
                    host,
                    at,
                    restart_after,
                } => {
                    t.actions.push((*at, Action::KillAgent(*host)));
                    t.actions
                        .push((*at + *restart_after, Action::RestartAgent(*host)));
                }
                Perturbation::LinkDown {
                    links, at, length, ..
                } => {
                    for l in links {
                        t.actions.push((*at, Action::SetLink { link: *l, up: false }));
                        t.actions
                            .push((*at + *length, Action::SetLink { link: *l, up: true }));
                    }
                }
            }
        }
        t.actions.sort_by_key(|(at, _)| *at);
        t
    }

    /// Sets the whole-run speeds into an engine configuration (over any
    /// `engine.host_speed` of the experiment).
    pub fn apply_base(&self, config: &mut EngineConfig) {
        for (h, s) in &self.base_speed {
            config.host_speed.insert(*h, *s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Topology;

    const S: u64 = 1_000_000_000;

    fn topo(racks: u32, hosts: u32, slots: u32) -> Topology {
        Topology::builder("t", racks, hosts)
            .slots_per_host(slots)
            .simulation_only()
            .build()
            .expect("valid topology")
    }

    #[test]
    fn file_and_command_line_forms_agree() {
        let t = topo(2, 2, 2);
        let raw: Vec<RawPerturbation> = toml::from_str::<toml::Table>(
            "[[p]]\nkind = \"straggler\"\nhost = \"r1h0\"\nspeed = 0.1\nat = \"10s\"\nfor = \"60s\"\n",
        )
        .expect("toml")["p"]
            .clone()
            .try_into()
            .expect("perturbations");
        let from_file = Perturbation::validate(0, &raw[0], &t).expect("valid");
        let from_cli = Perturbation::parse_cli("straggler:r1h0:0.1@10s+60s", &t).expect("valid");
        assert_eq!(from_file, from_cli);
    }

    #[test]
    fn errors_name_the_field_and_what_is_valid() {
        let t = topo(2, 2, 2);
        let raw = RawPerturbation::AgentKill {
            host: "r5h0".into(),
            at: Nanos(0),
            restart_after: Nanos(S),
        };
        let e = Perturbation::validate(3, &raw, &t).expect_err("no such host");
        assert_eq!((e.index, e.field.as_str()), (3, "host"));
        assert!(e.message.contains("r1h1"), "{e}");
        let e = Perturbation::parse_cli("link-down:r0-ocs0@1s+1s", &t).expect_err("no OCS ports");
        assert!(e.contains("0 OCS ports"), "{e}");
        assert!(Perturbation::parse_cli("kill:r0h0", &t).is_err());
        let bad: Result<RawPerturbation, _> =
            toml::from_str("kind = \"straggler\"\nhost = \"r0h0\"\nsped = 1.0\n");
        assert!(bad.is_err());
    }

    #[test]
    fn the_timeline_orders_actions_and_restores_base_speed() {
        let t = topo(2, 2, 2);
        let ps: Vec<Perturbation> = ["speed:r0h0:0.5", "straggler:r0h0:0.1@20s+10s", "kill:r1h1@5s+3s"]
            .iter()
            .map(|s| Perturbation::parse_cli(s, &t).expect("valid"))
            .collect();
        let tl = Timeline::of(&ps);
        let h = HostId::new(0, 0);
        let k = HostId::new(1, 1);
        assert_eq!(
            tl.actions,
            vec![
                (Nanos(5 * S), Action::KillAgent(k)),
                (Nanos(8 * S), Action::RestartAgent(k)),
                (Nanos(20 * S), Action::SetSpeed { host: h, speed: 0.1 }),
                (Nanos(30 * S), Action::SetSpeed { host: h, speed: 0.5 }),
            ]
        );
        let mut c = EngineConfig::default();
        tl.apply_base(&mut c);
        assert_eq!(c.host_speed.get(&h), Some(&0.5));
        assert!(tl.actions.iter().all(|(_, a)| a.engine_event().is_some()));
        // A window on an uplink is both of its directions, down then up.
        let link = Timeline::of(&[Perturbation::parse_cli("link-down:r0-up@1s+2s", &t).expect("valid")]);
        let set = |link, up| Action::SetLink { link, up };
        assert_eq!(
            link.actions,
            vec![
                (Nanos(S), set(Link::RackUp(0), false)),
                (Nanos(S), set(Link::RackDown(0), false)),
                (Nanos(3 * S), set(Link::RackUp(0), true)),
                (Nanos(3 * S), set(Link::RackDown(0), true)),
            ]
        );
        assert!(link.actions.iter().all(|(_, a)| a.engine_event().is_none()));
    }
}
