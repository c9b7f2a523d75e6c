//! [`Lab`]: what an emulated run stands on — the kernel fabric (built for
//! the run, or an existing one attached by run id), the control server with
//! the run's credentials, and one `ocslab-agent` per host inside the host's
//! network namespace.
//!
//! Each agent binds its control UDP socket in the scheduler's own namespace
//! on 127.0.0.1 and then enters its host's network namespace: the control
//! plane needs no veth, and the data plane uses only the fabric. The agents
//! are forked by one fork server the lab starts
//! (`ocslab_agent::launch::ForkServer`), not exec'd one by one.
//!
//! Teardown is owned: [`Lab::stop`] asks agents to shut down, waits a
//! little, kills (by the pid this process started) any that remain, removes
//! the credentials directory (`emu-<pid>/` in the run's directory, so that
//! `ocslab down` removes it after a SIGKILL) and takes down the fabric if
//! this lab built it. Dropping a lab (an error, a panic) kills the agents
//! and tears the fabric down too; nothing global is ever matched by name.

use super::EmuError;
use ocslab_agent::control::{ControlServer, Event as ControlEvent, ServerConfig};
use ocslab_agent::launch::{agent_program, AgentLaunch, ForkServer, ForkedAgent, GroKeyHold};
use ocslab_emulator::fabric::{CounterReader, Fabric, FabricCounters, FabricOptions, Ocs, RunId};
use ocslab_emulator::{HostId, Topology};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The data-plane port of every agent (inside its own namespace).
pub const DATA_PORT: u16 = 7100;

/// Which fabric a lab runs on.
#[derive(Clone, Debug)]
pub enum FabricChoice {
    /// Build one for the run and tear it down at the end.
    Build {
        /// The topology file, for the ledger and errors.
        topology_file: Option<PathBuf>,
    },
    /// Use the fabric of a run that is up (`ocslab up`); leave it up.
    Attach(RunId),
}

/// How a lab starts its agents.
#[derive(Clone, Debug)]
pub struct LabConfig {
    /// Agents' heartbeat interval.
    pub heartbeat: Duration,
    /// A host with no heartbeat for this long is dead.
    pub dead_after: Duration,
    /// How long the lab waits for the next agent to join while
    /// `MAX_JOINING` are joining, and at the end for the last of them.
    pub join_timeout: Duration,
    /// The agent binary (default: the `ocslab-agent` built beside this program).
    pub agent_binary: Option<PathBuf>,
    /// Extra arguments for every agent (e.g. `-v`).
    pub agent_args: Vec<String>,
}

impl Default for LabConfig {
    fn default() -> LabConfig {
        LabConfig {
            heartbeat: Duration::from_millis(100),
            dead_after: Duration::from_millis(600),
            join_timeout: Duration::from_secs(10),
            agent_binary: None,
            agent_args: Vec::new(),
        }
    }
}

/// Agents joining at once: the next starts when one of them has joined.
/// Every joining agent's QUIC handshake competes for the box's cores, and
/// an agent gives up on a handshake after `HANDSHAKE_TIMEOUT` (5 s):
/// started all at once, 1,024 agents on 2 cores did not all join in time.
const MAX_JOINING: usize = 64;

/// Hosts whose agents beat at [`LabConfig::heartbeat`]; a larger lab's
/// agents beat less often, so the control server takes at most this many
/// heartbeats per interval. Each agent beating every 100 ms, 300 of them
/// joined while the next 64 started were declared dead (no heartbeat
/// read for 600 ms) on 2 cores.
const HEARTBEAT_HOSTS: usize = 128;

/// How many times [`LabConfig::heartbeat`] and [`LabConfig::dead_after`]
/// a lab of `hosts` stretches (1 up to [`HEARTBEAT_HOSTS`] hosts).
fn heartbeat_slowdown(hosts: usize) -> u32 {
    u32::try_from(hosts.div_ceil(HEARTBEAT_HOSTS).max(1)).unwrap_or(u32::MAX)
}

/// Agent processes this lab started, killed through their pidfds on drop.
struct Agents(BTreeMap<HostId, ForkedAgent>);

impl Drop for Agents {
    /// SIGKILL to all, then waits for each to end.
    fn drop(&mut self) {
        for a in self.0.values() {
            let _ = a.signal(nix::sys::signal::Signal::SIGKILL);
        }
        for (_, a) in std::mem::take(&mut self.0) {
            a.kill();
        }
    }
}

/// A directory removed on drop (the run's agent credentials).
struct OwnedDir(PathBuf);

impl OwnedDir {
    /// Makes folder `name` inside `parent`, which must exist (a folder
    /// left from before is taken over). Never `parent` itself: a Ctrl-C
    /// while the lab starts tears the run down from the signal thread,
    /// run directory included, and a folder made again here after that
    /// would be left behind.
    fn inside(parent: &Path, name: &str) -> Result<OwnedDir, EmuError> {
        let dir = parent.join(name);
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => Ok(OwnedDir(dir)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(OwnedDir(dir)),
            Err(e) => Err(EmuError::Setup(format!("creating {}: {e}", dir.display()))),
        }
    }
}

impl Drop for OwnedDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// How this lab starts an agent (kept to restart one).
struct Launcher {
    binary: PathBuf,
    binary_args: Vec<String>,
    agent_args: Vec<String>,
    /// Forks the agents; started with the first one, as it takes their
    /// shared arguments.
    forks: Option<ForkServer>,
}

/// The fabric, control server and agents of one emulated run.
pub struct Lab {
    // Field order is drop order: agents first, then their fork server,
    // credentials, and the fabric last.
    agents: Agents,
    /// Spares each agent's start two rewrites of kernel text.
    _gro_key: Option<GroKeyHold>,
    launcher: Launcher,
    server: Option<ControlServer>,
    creds_dir: OwnedDir,
    addrs: BTreeMap<HostId, SocketAddr>,
    pids: BTreeMap<HostId, u32>,
    topo: Topology,
    timings: StartTimings,
    fabric: Fabric,
}

/// How long [`Lab::start`] took, by part.
#[derive(Clone, Copy, Debug, Default)]
pub struct StartTimings {
    /// Building (or attaching) the fabric.
    pub fabric: Duration,
    /// From then until every agent had joined.
    pub agents: Duration,
}

impl Lab {
    /// Brings up (or attaches) the fabric for `topo`, starts the control
    /// server and one agent per host, and waits until all have joined.
    /// Must be called inside a tokio runtime.
    pub async fn start(topo: &Topology, fabric: FabricChoice, cfg: &LabConfig) -> Result<Lab, EmuError> {
        // The driver holds about a descriptor and a quarter a host
        // (`ocslab_emulator::fabric::capacity`), past a fresh box's soft
        // limit of 1,024 in a large lab.
        if let Err(e) = ocslab_emulator::fabric::capacity::raise_fd_limit() {
            tracing::warn!("raising the open-file limit: {e}");
        }
        let started = std::time::Instant::now();
        let fabric = match fabric {
            FabricChoice::Build { topology_file } => {
                let t = topo.clone();
                tokio::task::spawn_blocking(move || {
                    Fabric::up(
                        &t,
                        FabricOptions {
                            topology_file,
                            ..FabricOptions::default()
                        },
                    )
                })
                .await
                .map_err(|e| EmuError::Internal(e.to_string()))??
            }
            FabricChoice::Attach(run) => {
                let f = Fabric::attach(run)?;
                if f.topology().racks != topo.racks || f.topology().hosts_per_rack != topo.hosts_per_rack {
                    return Err(EmuError::Setup(format!(
                        "run {run} is topology {:?} ({} racks x {} hosts), not {:?} ({} x {})",
                        f.topology().name,
                        f.topology().racks,
                        f.topology().hosts_per_rack,
                        topo.name,
                        topo.racks,
                        topo.hosts_per_rack
                    )));
                }
                f
            }
        };
        let fabric_built = started.elapsed();
        let program = cfg
            .agent_binary
            .clone()
            .map(|b| (b, Vec::new()))
            .or_else(agent_program);
        let (binary, binary_args) = match program {
            Some(b) => b,
            None => return Err(EmuError::Setup(
                "cannot find the ocslab-agent binary beside this program; build it (cargo build --release) \
                     or pass its path"
                    .into(),
            )),
        };
        // In the run's directory, which `ocslab down` removes after a crash
        // (and a rootless run's private /run takes with it).
        let creds_dir = OwnedDir::inside(
            &ocslab_emulator::fabric::run_dir(fabric.run_id()),
            &format!("emu-{}", std::process::id()),
        )?;
        let slower = heartbeat_slowdown(topo.hosts());
        let config = ServerConfig {
            heartbeat_interval: cfg.heartbeat * slower,
            dead_after: cfg.dead_after * slower,
        };
        let (server, _creds) =
            ControlServer::start(&creds_dir.0, "127.0.0.1:0".parse().expect("literal"), config)?;
        let mut lab = Lab {
            agents: Agents(BTreeMap::new()),
            _gro_key: GroKeyHold::new(),
            launcher: Launcher {
                binary,
                binary_args,
                agent_args: cfg.agent_args.clone(),
                forks: None,
            },
            server: Some(server),
            creds_dir,
            addrs: BTreeMap::new(),
            pids: BTreeMap::new(),
            topo: topo.clone(),
            timings: StartTimings::default(),
            fabric,
        };
        let hosts: Vec<HostId> = topo.host_ids().collect();
        for &h in &hosts {
            let joining = lab.agents.0.len() - lab.addrs.len();
            if joining >= MAX_JOINING {
                lab.wait_joined(lab.addrs.len() + joining - MAX_JOINING + 1, cfg.join_timeout)
                    .await?;
            }
            lab.spawn_agent(h)?;
        }
        lab.wait_joined(hosts.len(), cfg.join_timeout).await?;
        lab.timings = StartTimings {
            fabric: fabric_built,
            agents: started.elapsed() - fabric_built,
        };
        Ok(lab)
    }

    /// Starts the agent of `h` in its namespace with the run's credentials.
    fn spawn_agent(&mut self, h: HostId) -> Result<(), EmuError> {
        let scheduler = self.server()?.local_addr();
        let mut extra_args = topology_agent_args(&self.topo);
        extra_args.extend(self.launcher.agent_args.iter().cloned());
        let launch = AgentLaunch {
            binary: self.launcher.binary.clone(),
            host: h,
            data_addr: SocketAddr::new(self.fabric.host_addr(h).into(), DATA_PORT),
            scheduler,
            run_dir: self.creds_dir.0.clone(),
            slots: self.topo.slots_per_host,
            netns: Some(self.fabric.host_netns_path(h)),
            extra_args,
            binary_args: self.launcher.binary_args.clone(),
        };
        let binary = &self.launcher.binary;
        let forks = match &mut self.launcher.forks {
            Some(f) => f,
            None => self
                .launcher
                .forks
                .insert(ForkServer::start(binary, &launch.shared_args()).map_err(|e| {
                    EmuError::Setup(format!("starting {} as a fork server: {e}", binary.display()))
                })?),
        };
        // Not beside a teardown on a signal: an agent started after it
        // listed the run's processes would outlive the run.
        let _work = ocslab_emulator::fabric::ledger::work();
        let agent = forks
            .spawn(&launch.host_args())
            .map_err(|e| EmuError::Setup(format!("starting the agent of {h} ({}): {e}", binary.display())))?;
        self.pids.insert(h, agent.id());
        self.agents.0.insert(h, agent);
        Ok(())
    }

    /// Starts the agent of `host` again (after [`Lab::kill_agent`]): it
    /// rejoins with the run's credentials and the control plane reports
    /// `Joined`. Refused while the previous agent of `host` still runs.
    pub fn restart_agent(&mut self, host: HostId) -> Result<(), EmuError> {
        if self.agents.0.contains_key(&host) {
            return Err(EmuError::Internal(format!(
                "restart of {host}: its agent is still running"
            )));
        }
        self.spawn_agent(host)
    }

    /// Waits until `want` agents have joined, at most `timeout`.
    async fn wait_joined(&mut self, want: usize, timeout: Duration) -> Result<(), EmuError> {
        let deadline = tokio::time::Instant::now() + timeout;
        while self.addrs.len() < want {
            let server = self
                .server
                .as_mut()
                .ok_or_else(|| EmuError::Internal("no server".into()))?;
            match tokio::time::timeout_at(deadline, server.next_event()).await {
                Ok(Some(ControlEvent::Joined { host, hello, .. })) => {
                    self.addrs.insert(host, hello.data_addr);
                }
                Ok(Some(ControlEvent::Refused { peer, reason, .. })) => {
                    tracing::warn!(%peer, %reason, "an agent was refused");
                }
                Ok(Some(ControlEvent::HostDead { host, cause, .. })) => {
                    return Err(EmuError::Setup(format!(
                        "agent {host} died while joining: {cause:?}"
                    )));
                }
                Ok(Some(_)) => {}
                Ok(None) => return Err(EmuError::Internal("control server stopped".into())),
                Err(_) => {
                    let missing: Vec<String> = self
                        .agents
                        .0
                        .keys()
                        .filter(|h| !self.addrs.contains_key(h))
                        .map(|h| h.to_string())
                        .collect();
                    return Err(EmuError::Setup(format!(
                        "agents {} did not join within {timeout:?} (run with -v to see their logs)",
                        missing.join(", ")
                    )));
                }
            }
            // An agent that exited before joining will never join. Only
            // those not joined are looked at: looking at all of a large
            // lab's agents after every event cost a syscall per agent per
            // event.
            let addrs = &self.addrs;
            let ended = self
                .agents
                .0
                .iter()
                .filter(|(h, _)| !addrs.contains_key(h))
                .find(|(_, a)| a.wait_ended(Duration::ZERO));
            if let Some((h, a)) = ended {
                let status = match self.launcher.forks.as_mut().map(|f| f.exit_status(a)) {
                    Some(Ok(Some(s))) => s.to_string(),
                    _ => "status unknown".to_string(),
                };
                return Err(EmuError::Setup(format!(
                    "agent {h} exited before joining: {status}"
                )));
            }
        }
        Ok(())
    }

    /// The topology.
    pub fn topology(&self) -> &Topology {
        &self.topo
    }

    /// How long the start took, fabric and agents.
    pub fn start_timings(&self) -> StartTimings {
        self.timings
    }

    /// The fabric.
    pub fn fabric(&self) -> &Fabric {
        &self.fabric
    }

    /// The OCS handle, if the topology has one.
    pub fn ocs(&self) -> Option<Ocs> {
        (self.topo.ocs_ports_per_rack > 0)
            .then(|| self.fabric.ocs().ok())
            .flatten()
    }

    /// The kernel's counters of uplinks and OCS ports.
    pub fn counters(&self) -> Result<FabricCounters, EmuError> {
        Ok(self.fabric.counters()?)
    }

    /// A reader of the same counters that can move to a sampling thread.
    pub fn counter_reader(&self) -> Result<CounterReader, EmuError> {
        Ok(self.fabric.counter_reader()?)
    }

    /// The agents' data addresses.
    pub fn data_addrs(&self) -> &BTreeMap<HostId, SocketAddr> {
        &self.addrs
    }

    /// The pid of each agent this lab started.
    pub fn agent_pids(&self) -> &BTreeMap<HostId, u32> {
        &self.pids
    }

    /// The control server.
    pub fn server(&mut self) -> Result<&mut ControlServer, EmuError> {
        self.server
            .as_mut()
            .ok_or_else(|| EmuError::Internal("the control server is stopped".into()))
    }

    /// Kills the agent of `host` (SIGKILL to the process this lab started),
    /// as a fault: the control plane finds out by itself.
    pub fn kill_agent(&mut self, host: HostId) -> bool {
        let Some(agent) = self.agents.0.remove(&host) else {
            return false;
        };
        agent.kill();
        // Reaped now rather than when the lab ends: a run that kills and
        // restarts agents leaves no zombies.
        if let Some(forks) = &mut self.launcher.forks {
            if let Err(e) = forks.exit_status(&agent) {
                tracing::warn!(%host, "reaping the killed agent: {e}");
            }
        }
        true
    }

    /// Stops the agents (SIGTERM, then SIGKILL to those left after 2 s),
    /// closes the control server, removes the credentials and tears the
    /// fabric down if this lab built it. The agents' reports are in by
    /// then. Sent to all at once, the signal takes a lab of 1,024 hosts
    /// down in 0.4 s, fabric included; a `Shutdown` to each over QUIC took
    /// 1.5 s before the fabric's turn.
    pub async fn stop(mut self) -> Result<(), EmuError> {
        for a in self.agents.0.values() {
            let _ = a.signal(nix::sys::signal::Signal::SIGTERM);
        }
        let server = self.server.take();
        let closing = async {
            if let Some(server) = server {
                server.shutdown(Duration::ZERO).await;
            }
        };
        let agents = &mut self.agents;
        let exiting = async {
            let deadline = std::time::Instant::now() + Duration::from_secs(2);
            loop {
                let running = agents
                    .0
                    .values()
                    .filter(|a| !a.wait_ended(Duration::ZERO))
                    .count();
                if running == 0 || std::time::Instant::now() > deadline {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        };
        tokio::join!(closing, exiting);
        let Lab {
            agents,
            launcher,
            fabric,
            ..
        } = self;
        drop(agents); // kills any that did not exit
        drop(launcher); // the fork server, before its namespaces go
        tokio::task::spawn_blocking(move || fabric.down())
            .await
            .map_err(|e| EmuError::Internal(e.to_string()))??;
        Ok(())
    }
}

/// The agent arguments `topo` sets: QUIC connections follow its TCP
/// congestion control (`[tcp] congestion_control`).
fn topology_agent_args(topo: &Topology) -> Vec<String> {
    vec![
        "--quic-congestion-control".to_string(),
        topo.tcp.congestion_control.name().to_string(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_labs_agents_beat_less_often() {
        assert_eq!(heartbeat_slowdown(4), 1);
        assert_eq!(heartbeat_slowdown(HEARTBEAT_HOSTS), 1);
        assert_eq!(heartbeat_slowdown(HEARTBEAT_HOSTS + 1), 2);
        // 1,024 agents: every 800 ms, dead after 4.8 s of silence.
        assert_eq!(heartbeat_slowdown(1024), 8);
    }

    #[derive(clap::Parser)]
    struct Agent {
        #[command(flatten)]
        args: ocslab_agent::cli::AgentArgs,
    }

    /// Each congestion control a topology may name reaches the agent's
    /// QUIC as that one.
    #[test]
    fn an_agents_quic_follows_the_topologys_congestion_control() {
        use clap::Parser;
        use ocslab_agent::data::quic::Congestion;
        let tiny = include_str!("../../../topologies/tiny.toml");
        for (name, want) in [
            ("cubic", Congestion::Cubic),
            ("reno", Congestion::Reno),
            ("bbr", Congestion::Bbr),
        ] {
            let text = format!("{tiny}\n[tcp]\ncongestion_control = \"{name}\"\n");
            let topo = Topology::parse(&text, Path::new("tiny.toml")).expect("a valid topology");
            let mut argv = [
                "ocslab-agent",
                "--host",
                "r0h0",
                "--data-addr",
                "198.18.0.1",
                "--control-bind",
            ]
            .map(String::from)
            .to_vec();
            argv.extend(
                [
                    "127.0.0.1:0",
                    "--scheduler",
                    "127.0.0.1:1",
                    "--run-dir",
                    "/nonexistent",
                ]
                .map(String::from),
            );
            argv.extend(topology_agent_args(&topo));
            let agent = Agent::try_parse_from(argv).expect("the agent takes the arguments");
            assert_eq!(agent.args.quic_congestion_control, want, "{name}");
        }
    }

    /// The agents' credentials folder goes inside the run directory only
    /// while that exists: once a Ctrl-C teardown has removed it, starting
    /// a lab fails instead of making it again (and leaving it behind).
    #[test]
    fn the_credentials_folder_never_makes_the_run_directory_again() {
        let scratch = std::env::temp_dir().join(format!("ocslab-owned-dir-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&scratch);
        let run = scratch.join("run");
        assert!(
            OwnedDir::inside(&run, "emu-1").is_err(),
            "made without its run directory"
        );
        assert!(!run.exists(), "the run directory was made again");

        std::fs::create_dir_all(&run).expect("the run directory");
        let creds = OwnedDir::inside(&run, "emu-1").expect("inside the run directory");
        assert!(run.join("emu-1").is_dir());
        let again = OwnedDir::inside(&run, "emu-1").expect("taken over");
        drop(again);
        drop(creds);
        assert!(!run.join("emu-1").exists(), "removed when dropped");
        std::fs::remove_dir_all(&scratch).expect("clean up");
    }
}
