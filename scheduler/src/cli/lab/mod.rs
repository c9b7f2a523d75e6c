//! The Mininet-style lab: `ocslab up`, `down`, `exec`, `ocs set|show`,
//! `link down|up` and `status`, on top of [`ocslab_emulator::fabric`].
//!
//! `up` builds a fabric and owns it: in the foreground until Ctrl-C (or
//! SIGTERM from `ocslab down`), or, with `--detach`, in a background holder
//! process that `ocslab down` stops. Other commands attach to a running
//! fabric by run id (or to the only one running) through its ledger under
//! `/run/ocslab/<run-id>/`.
//!
//! Rootless, the same commands work from any terminal of the user who
//! started the run: the holder records itself in the user's run directory
//! ([`fabric::user_runs`]), and `exec`, `ocs`, `status` and `down` join its
//! namespaces ([`rootless::join`]) before they attach.
//!
//! One file per command: `up` (and the detached holder), `down`, `link`, `status`;
//! `exec` and `ocs` are here with the arguments and the run picking they
//! all share.

mod down;
mod link;
mod status;
mod up;

pub use down::down;
pub use link::{link, LinkArgs, LinkCommand};
pub use status::status;
pub use up::up;

use anyhow::{bail, Context, Result};
use ocslab_emulator::fabric::user_runs::{HolderRecord, UserRunDir};
use ocslab_emulator::fabric::{self, ledger, rootless, Circuit, Fabric, RunId, Schedule};
use ocslab_emulator::{HostId, Nanos};
use std::path::PathBuf;
use std::process::{Command, ExitCode};

/// Arguments of `ocslab up`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  ocslab up topologies/tiny.toml            # Ctrl-C tears it down\n  ocslab up topologies/lab.toml --detach   # then: ocslab exec r0h0 -- ip addr; ocslab down\n\nAs root the fabric is in the box's namespaces; as an ordinary user it is built inside a user\nnamespace (rootless), and exec, ocs, status and down work from any terminal of that user."
)]
pub struct UpArgs {
    /// The topology file.
    pub file: PathBuf,
    /// Keep the fabric up in a background holder process and return.
    #[arg(long)]
    pub detach: bool,
    /// Use this run id (four hex digits) instead of a fresh one.
    #[arg(long)]
    pub run: Option<RunId>,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
    /// The OCS datapath: ebpf (circuits in a BPF map, δ enforced per packet
    /// by the kernel; needs root) or tc-mirred (tc filters and routes).
    /// Default: ebpf as root, else tc-mirred.
    #[arg(long, value_name = "ebpf|tc-mirred")]
    pub datapath: Option<ledger::Datapath>,
    /// Internal: run as the detached holder (prints one line when up).
    #[arg(long, hide = true)]
    pub holder: bool,
}

/// Arguments of `ocslab down`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  ocslab down              # every ocslab fabric, and what crashed runs left\n  ocslab down --run 3f9a\n\nAs an ordinary user: every rootless fabric of yours, also one whose holder was killed."
)]
pub struct DownArgs {
    /// Only this run.
    #[arg(long)]
    pub run: Option<RunId>,
    /// Print what was removed as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `ocslab exec`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  ocslab exec r0h0 -- ip -br addr\n  ocslab exec r1h0 -- iperf3 -s -D && ocslab exec r0h0 -- iperf3 -c 198.18.1.10 --tos 8"
)]
pub struct ExecArgs {
    /// Host name, r<rack>h<host> (zero-based).
    pub host: HostId,
    /// The run (needed when several fabrics are up).
    #[arg(long)]
    pub run: Option<RunId>,
    /// The command and its arguments.
    #[arg(last = true, required = true)]
    pub cmd: Vec<String>,
}

/// `ocslab ocs ...`
#[derive(clap::Subcommand, Debug)]
pub enum OcsCommand {
    /// Configure the circuits (the whole matching; circuits not listed are
    /// torn down). Changed ports go dark for δ (not-all-stop).
    #[command(
        after_help = "Examples:\n  ocslab ocs set 0:1 1:0      # racks 0->1 and 1->0 on port 0\n  ocslab ocs set 0:2@1        # rack 0 -> rack 2 on port (wavelength) 1\n  ocslab ocs set 0:2 --in 5ms # the kernel makes the move 5 ms from now (eBPF)\n  ocslab ocs set              # tear every circuit down"
    )]
    Set {
        /// Circuits SRC:DST or SRC:DST@PORT (racks zero-based).
        circuits: Vec<String>,
        /// Reconfiguration delay (default: the topology's), e.g. 10ms.
        #[arg(long)]
        delay: Option<Nanos>,
        /// Make the move this long from now, e.g. 5ms, and return at once:
        /// the changed ports keep their circuits until then, and the
        /// kernel switches them by itself (eBPF datapath only).
        #[arg(long = "in", value_name = "DURATION")]
        after: Option<Nanos>,
        /// The run (needed when several fabrics are up).
        #[arg(long)]
        run: Option<RunId>,
        /// Print the reconfiguration as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Make the eBPF datapath follow a repeating schedule of matchings (a
    /// rotor) by itself, from now on; or stop it with --clear.
    #[command(
        after_help = "Schedule file (TOML):\n  slot = \"50us\"          # default slot length\n  delay = \"10us\"         # optional: dark time of a port that changes, and of every port at the start (default: the topology's δ)\n  [[slots]]\n  circuits = [\"0:1\", \"1:2\", \"2:3\", \"3:0\"]\n  [[slots]]\n  length = \"100us\"       # optional: this slot's length\n  circuits = [\"0:2\", \"2:0\"]\n\nExamples:\n  ocslab ocs schedule schedules/rotor-4.toml\n  ocslab ocs schedule --clear"
    )]
    Schedule {
        /// The schedule file.
        #[arg(required_unless_present = "clear")]
        file: Option<PathBuf>,
        /// Stop following a schedule (every port dark, no circuit).
        #[arg(long, conflicts_with = "file")]
        clear: bool,
        /// The run (needed when several fabrics are up).
        #[arg(long)]
        run: Option<RunId>,
    },
    /// Show the circuits the kernel holds.
    #[command(after_help = "Example:\n  ocslab ocs show --json")]
    Show {
        /// The run (needed when several fabrics are up).
        #[arg(long)]
        run: Option<RunId>,
        /// Print as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// What `ocslab ocs show` prints.
#[derive(serde::Serialize)]
struct OcsView {
    run: RunId,
    datapath: ledger::Datapath,
    schedule: Option<fabric::ocs::ScheduleSummary>,
    circuits: Vec<Circuit>,
    /// Per input port (eBPF only).
    ports: Option<Vec<fabric::ebpf::PortStats>>,
}

/// Arguments of `ocslab status`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Example:\n  ocslab status --json")]
pub struct StatusArgs {
    /// Print as JSON.
    #[arg(long)]
    pub json: bool,
    /// Internal: report rootless run RUN from inside its namespaces (as JSON).
    #[arg(long, hide = true)]
    pub within: Option<RunId>,
}

fn parse_circuit(s: &str) -> Result<Circuit> {
    Ok(s.parse::<Circuit>()?)
}

/// Runs that are up with a live owner.
fn live_runs() -> Vec<(RunId, ledger::Ledger)> {
    fabric::runs()
        .into_iter()
        .filter_map(|(r, l)| l.ok().map(|l| (r, l)))
        .filter(|(_, l)| l.owner_alive() && l.state == ledger::RunState::Up)
        .collect()
}

/// This user's rootless runs that are up with a live holder.
fn live_user_runs(dir: Option<&UserRunDir>) -> Vec<HolderRecord> {
    dir.map(UserRunDir::list)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|(_, r)| r.ok())
        .filter(|r| r.holder_alive() && r.state == ledger::RunState::Up)
        .collect()
}

/// The run to use among those `live`: `--run`, or the only one up.
fn pick_run(run: Option<RunId>, live: &[RunId], whose: &str) -> Result<RunId> {
    match (run, live) {
        (Some(r), _) if live.contains(&r) => Ok(r),
        (Some(r), _) => bail!("run {r} is not up{whose}; `ocslab status` lists the runs"),
        (None, []) => {
            bail!("no fabric is up{whose}; start one with `ocslab up topologies/tiny.toml --detach`")
        }
        (None, [r]) => Ok(*r),
        (None, many) => bail!(
            "{} fabrics are up ({}); choose one with --run ID",
            many.len(),
            many.iter().map(|r| r.to_string()).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// Attaches to a running fabric. Not root, this first joins the
/// namespaces of the user's rootless run, so it must run while the process
/// is single-threaded (as every lab command does).
fn attach(run: Option<RunId>) -> Result<Fabric> {
    let run = if rootless::is_root() {
        let live: Vec<RunId> = live_runs().into_iter().map(|(r, _)| r).collect();
        pick_run(run, &live, "")?
    } else {
        let dir = UserRunDir::open()?;
        let live = live_user_runs(dir.as_ref());
        let ids: Vec<RunId> = live.iter().map(|r| r.run_id).collect();
        let whose = format!(
            " for uid {} (rootless runs are private to the user who started them)",
            nix::unistd::geteuid(),
        );
        let run = pick_run(run, &ids, &whose)?;
        let rec = live.iter().find(|r| r.run_id == run).context("picked run")?;
        rootless::join(rec)?;
        run
    };
    Fabric::attach(run).with_context(|| format!("attaching to run {run}"))
}

/// `ocslab exec`.
pub fn exec(a: ExecArgs) -> Result<ExitCode> {
    let f = attach(a.run)?;
    let mut cmd = Command::new(&a.cmd[0]);
    cmd.args(&a.cmd[1..]);
    Err(f.exec_in(a.host, &mut cmd).into())
}

/// `ocslab ocs`.
pub fn ocs(c: OcsCommand) -> Result<ExitCode> {
    match c {
        OcsCommand::Set {
            circuits,
            delay,
            after,
            run,
            json,
        } => {
            let circuits = circuits
                .iter()
                .map(|s| parse_circuit(s))
                .collect::<Result<Vec<_>>>()?;
            let f = attach(run)?;
            let ocs = f.ocs()?;
            let delay = delay.unwrap_or(ocs.delay());
            let rec = match after {
                Some(after) => {
                    let at = Nanos(ocslab_emulator::fabric::clock::now().0.saturating_add(after.0));
                    ocs.set_matching_at(&circuits, at, delay)?
                }
                None => ocs.set_matching_with_delay(&circuits, delay)?,
            };
            if json {
                println!("{}", serde_json::to_string_pretty(&rec)?);
            } else {
                for e in &rec.events {
                    println!(
                        "{:>+9.3} ms  {} -> {} port {}  {}",
                        (e.at.0 as f64 - rec.started.0 as f64) / 1e6,
                        e.src_rack,
                        e.dst_rack,
                        e.port,
                        if e.up { "up" } else { "down" }
                    );
                }
                println!(
                    "{} kept, {} down, {} up (δ = {}, setup {} µs after δ)",
                    rec.kept,
                    rec.events.iter().filter(|e| !e.up).count(),
                    rec.events.iter().filter(|e| e.up).count(),
                    delay,
                    rec.setup_late.0 / 1000
                );
            }
        }
        OcsCommand::Schedule { file, clear, run } => {
            let f = attach(run)?;
            let ocs = f.ocs()?;
            match file {
                Some(path) if !clear => {
                    let text = std::fs::read_to_string(&path)
                        .with_context(|| format!("reading {}", path.display()))?;
                    let topo = f.topology();
                    let schedule =
                        Schedule::from_file(&path, &text, topo.racks, topo.ocs_ports_per_rack, ocs.delay())?;
                    ocs.set_schedule(&schedule)?;
                    println!(
                        "run {}: the OCS follows {} ({} slots, period {}, δ {}) from now on; `ocslab ocs schedule --clear` stops it",
                        f.run_id(),
                        path.display(),
                        schedule.slots().len(),
                        schedule.period(),
                        schedule.delay()
                    );
                }
                _ => {
                    ocs.clear_schedule()?;
                    println!(
                        "run {}: no schedule; every port dark until `ocslab ocs set`",
                        f.run_id()
                    );
                }
            }
        }
        OcsCommand::Show { run, json } => {
            let f = attach(run)?;
            let ocs = f.ocs()?;
            let datapath = ocs.datapath();
            let view = OcsView {
                run: f.run_id(),
                datapath,
                schedule: ocs.schedule_summary()?,
                circuits: ocs.kernel_circuits()?,
                ports: match datapath {
                    ledger::Datapath::Ebpf => Some(ocs.port_stats()?),
                    ledger::Datapath::TcMirred => None,
                },
            };
            if json {
                println!("{}", serde_json::to_string_pretty(&view)?);
            } else {
                println!("run {}: {} datapath", view.run, view.datapath);
                if let Some(s) = view.schedule {
                    println!("following a schedule of {} slots, period {}", s.slots, s.period);
                } else if view.circuits.is_empty() {
                    println!("no circuits");
                }
                for c in &view.circuits {
                    println!("rack {} -> rack {} on port {}", c.src_rack, c.dst_rack, c.port);
                }
                if let Some(ports) = &view.ports {
                    let w = f.topology().ocs_ports_per_rack.max(1) as usize;
                    for (i, p) in ports
                        .iter()
                        .enumerate()
                        .filter(|(_, p)| p.packets + p.dropped > 0)
                    {
                        println!(
                            "port rack {} w{}: {} packets ({} bytes) switched, {} dropped (dark or no circuit)",
                            i / w,
                            i % w,
                            p.packets,
                            p.bytes,
                            p.dropped
                        );
                    }
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn circuits_parse_with_and_without_port() {
        let c = parse_circuit("0:2@1").unwrap();
        assert_eq!((c.src_rack, c.dst_rack, c.port), (0, 2, 1));
        let c = parse_circuit("3:1").unwrap();
        assert_eq!((c.src_rack, c.dst_rack, c.port), (3, 1, 0));
        let e = parse_circuit("0-1").unwrap_err().to_string();
        assert!(e.contains("SRC:DST"), "{e}");
    }

    #[test]
    fn a_run_is_picked_by_id_or_as_the_only_one_up() {
        let (a, b): (RunId, RunId) = ("00aa".parse().unwrap(), "00bb".parse().unwrap());
        assert_eq!(pick_run(None, &[a], "").unwrap(), a);
        assert_eq!(pick_run(Some(b), &[a, b], "").unwrap(), b);
        let e = pick_run(None, &[a, b], "").unwrap_err().to_string();
        assert!(e.contains("2 fabrics are up (00aa, 00bb)"), "{e}");
        let e = pick_run(Some(b), &[a], " for uid 7").unwrap_err().to_string();
        assert!(e.contains("run 00bb is not up for uid 7"), "{e}");
        let e = pick_run(None, &[], " for uid 7").unwrap_err().to_string();
        assert!(e.starts_with("no fabric is up for uid 7"), "{e}");
    }
}
