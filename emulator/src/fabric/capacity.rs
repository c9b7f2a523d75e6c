//! How many hosts this box can emulate, derived from its limits.
//!
//! Each emulated host costs, as measured with every agent up (`ocslab bench
//! fabric --agents --racks 64 --hosts-per-rack 16`, and 128 racks; figures
//! in docs/fabric.md):
//! - **memory**: MemAvailable fell by 0.30–1.34 GB at 1,024 hosts and by
//!   2.44 GB at 2,048, up to 1.3 MB a host (its namespace, veths, qdiscs
//!   and its agent's own pages);
//! - **file descriptors** in the driver: 2,204 at 1,024 hosts, 4,380 at
//!   2,048: about 2.2 a host, one of them the pidfd that holds its agent
//!   (a job running adds about 0.07 a host);
//! - **tasks**: the agent's 3 threads;
//! - **network namespaces**: one a host and one a rack, plus the core's and
//!   the OCS's.
//!
//! Each resource allows some number of hosts: what is free now, less a
//! reserve for the rest of the run, over the cost a host. The smallest is
//! the limit, and its resource is named in the error a topology too large
//! gets (`Topology::check_emulable`) and in `ocslab topo check`. The box is
//! only read here; [`raise_fd_limit`] is the one thing changed: the soft
//! limit on open files is raised to the hard one, as a fresh box's soft
//! 1,024 would not hold the driver's descriptors at 1,024 hosts.

use ocslab_core::topology::{EmulatingBox, HostLimit};
use serde::Serialize;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

/// Memory a host costs, bytes (the most measured: 1.34 GB over 1,024 hosts).
pub const MEMORY_PER_HOST: u64 = 1_300_000;
/// Of the memory available now, the share the hosts may take; the rest is
/// left to the shuffle's socket buffers and the box.
pub const MEMORY_SHARE: (u64, u64) = (3, 4);
/// File descriptors the driver holds a host, as a fraction (9/4: 2,204
/// were measured at 1,024 hosts, and a job running added up to 65).
pub const FDS_PER_HOST: (u64, u64) = (9, 4);
/// Threads a host's agent runs.
pub const TASKS_PER_HOST: u64 = 3;
/// File descriptors and tasks kept back for the driver's own work.
pub const RESERVE: u64 = 256;

/// One of the box's limits, and the hosts it allows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Bound {
    /// The resource: "memory", "file descriptors", "processes" or
    /// "network namespaces".
    pub resource: &'static str,
    /// At most this many hosts, as far as this resource goes.
    pub hosts: usize,
    /// Where the figure comes from, e.g. "pid_max 32768, 82 tasks running,
    /// 3 threads a host's agent".
    pub detail: String,
}

/// The box's limits as read now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BoxLimits {
    /// Memory available, bytes: MemAvailable, or the memory cgroup's room
    /// when that is smaller.
    pub memory_available: u64,
    /// Where `memory_available` comes from.
    pub memory_source: String,
    /// The hard limit on open files (RLIMIT_NOFILE), which
    /// [`raise_fd_limit`] makes the soft one.
    pub fds_max: u64,
    /// File descriptors this process has open.
    pub fds_open: u64,
    /// Tasks (threads) that may run at once, and which limit says so:
    /// pid_max, threads-max, the pids cgroup, or RLIMIT_NPROC for a user.
    pub tasks_max: u64,
    /// Where `tasks_max` comes from.
    pub tasks_source: String,
    /// Tasks running now, counted against `tasks_max`.
    pub tasks_running: u64,
    /// Network namespaces a user may create (`user.max_net_namespaces`).
    pub netns_max: u64,
}

impl BoxLimits {
    /// Reads the box's limits (procfs, sysfs and getrlimit). A figure that
    /// cannot be read does not bind (it reads as unlimited).
    pub fn read() -> BoxLimits {
        let mut memory_available = mem_available().unwrap_or(u64::MAX);
        let mut memory_source = format!("MemAvailable {}", gb(memory_available));
        let cgroups = read_to_string("/proc/self/cgroup");
        if let Some((room, file)) = memory_cgroup_room(&cgroups) {
            if room < memory_available {
                memory_available = room;
                memory_source = format!("memory cgroup ({}) has {} free", file.display(), gb(room));
            }
        }
        let fds_max = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
            .map_or(u64::MAX, |(_, hard)| hard);
        let fds_open = std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count() as u64);
        let running = loadavg_tasks(&read_to_string("/proc/loadavg")).unwrap_or(0);
        let mut tasks = vec![
            (
                read_u64("/proc/sys/kernel/pid_max"),
                "pid_max".to_string(),
                running,
            ),
            (
                read_u64("/proc/sys/kernel/threads-max"),
                "threads-max".to_string(),
                running,
            ),
        ];
        if let Some((max, current, file)) = pids_cgroup(&cgroups) {
            tasks.push((Some(max), format!("pids cgroup {}", file.display()), current));
        }
        if !nix::unistd::geteuid().is_root() {
            let nproc = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NPROC)
                .ok()
                .map(|(soft, _)| soft);
            tasks.push((nproc, "RLIMIT_NPROC".to_string(), running));
        }
        let (tasks_max, tasks_source, tasks_running) = tasks
            .into_iter()
            .filter_map(|(max, source, used)| Some((max?, source, used)))
            .min_by_key(|(max, _, used)| max.saturating_sub(*used))
            .unwrap_or((u64::MAX, "nothing".into(), 0));
        BoxLimits {
            memory_available,
            memory_source,
            fds_max,
            fds_open,
            tasks_max,
            tasks_source,
            tasks_running,
            netns_max: read_u64("/proc/sys/user/max_net_namespaces").unwrap_or(u64::MAX),
        }
    }

    /// What each resource allows, in hosts.
    pub fn bounds(&self) -> Vec<Bound> {
        let memory = self.memory_available / MEMORY_SHARE.1 * MEMORY_SHARE.0 / MEMORY_PER_HOST;
        // (Divided first: an unlimited figure reads as u64::MAX.)
        let fds = self.fds_max.saturating_sub(self.fds_open + RESERVE) / FDS_PER_HOST.0 * FDS_PER_HOST.1;
        let tasks = self.tasks_max.saturating_sub(self.tasks_running + RESERVE) / TASKS_PER_HOST;
        // Two namespaces a host at most (a rack of one host), less the
        // core's and the OCS's.
        let netns = self.netns_max.saturating_sub(2) / 2;
        let hosts = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        vec![
            Bound {
                resource: "memory",
                hosts: hosts(memory),
                detail: format!(
                    "{}, {}/{} of it at {} a host",
                    self.memory_source,
                    MEMORY_SHARE.0,
                    MEMORY_SHARE.1,
                    gb(MEMORY_PER_HOST)
                ),
            },
            Bound {
                resource: "file descriptors",
                hosts: hosts(fds),
                detail: format!(
                    "RLIMIT_NOFILE {}, {} open, {} kept back, {}/{} a host",
                    self.fds_max, self.fds_open, RESERVE, FDS_PER_HOST.0, FDS_PER_HOST.1
                ),
            },
            Bound {
                resource: "processes",
                hosts: hosts(tasks),
                detail: format!(
                    "{} {}, {} tasks running, {} kept back, {} threads a host's agent",
                    self.tasks_source, self.tasks_max, self.tasks_running, RESERVE, TASKS_PER_HOST
                ),
            },
            Bound {
                resource: "network namespaces",
                hosts: hosts(netns),
                detail: format!("max_net_namespaces {}, 2 a host at most", self.netns_max),
            },
        ]
    }

    /// The smallest bound: how many hosts this box can emulate, and why.
    pub fn host_limit(&self) -> HostLimit {
        let bounds = self.bounds();
        let tightest = bounds.iter().min_by_key(|b| b.hosts).cloned().unwrap_or(Bound {
            resource: "nothing",
            hosts: usize::MAX,
            detail: String::new(),
        });
        HostLimit {
            hosts: tightest.hosts,
            binding: format!("{} ({})", tightest.resource, tightest.detail),
        }
    }

    /// What this box offers a topology to emulate: the host limit of these
    /// limits, and its own addresses now ([`local_addresses`]).
    pub fn emulating_box(&self) -> EmulatingBox {
        EmulatingBox {
            limit: self.host_limit(),
            addresses: local_addresses(),
        }
    }
}

/// How many hosts this box can emulate now ([`BoxLimits::read`]).
pub fn host_limit() -> HostLimit {
    BoxLimits::read().host_limit()
}

/// What this box offers a topology to emulate: its host limit now and its
/// own addresses ([`Topology::check_emulable`](ocslab_core::topology::Topology::check_emulable)).
pub fn emulating_box() -> EmulatingBox {
    BoxLimits::read().emulating_box()
}

/// The IPv4 and IPv6 addresses configured on this box, in the current
/// network namespace (`getifaddrs(3)`; none if it fails).
pub fn local_addresses() -> Vec<IpAddr> {
    let Ok(interfaces) = nix::ifaddrs::getifaddrs() else {
        return Vec::new();
    };
    interfaces
        .filter_map(|i| {
            let a = i.address?;
            a.as_sockaddr_in()
                .map(|v4| IpAddr::V4(v4.ip()))
                .or_else(|| a.as_sockaddr_in6().map(|v6| IpAddr::V6(v6.ip())))
        })
        .collect()
}

/// Raises this process's soft limit on open files to its hard limit.
pub fn raise_fd_limit() -> nix::Result<()> {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE)?;
    if soft < hard {
        setrlimit(Resource::RLIMIT_NOFILE, hard, hard)?;
    }
    Ok(())
}

/// The box's MemAvailable (`/proc/meminfo`), bytes.
pub fn mem_available() -> Option<u64> {
    proc_field(&read_to_string("/proc/meminfo"), "MemAvailable").map(|k| k * 1024)
}

/// The box's CPU time so far, summed over its CPUs, in USER_HZ ticks
/// (100 a second on Linux): the `cpu` line of `/proc/stat`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuTicks {
    /// User, nice, system, irq, softirq and steal (guest time is inside user).
    pub busy: u64,
    /// Those plus idle and iowait.
    pub total: u64,
    /// What the hypervisor gave other guests while these CPUs wanted it.
    pub steal: u64,
}

/// The box's [`CpuTicks`] now; `None` where `/proc/stat` does not say.
pub fn cpu_ticks() -> Option<CpuTicks> {
    parse_cpu_ticks(&read_to_string("/proc/stat"))
}

/// The [`CpuTicks`] of a `/proc/stat` text: user, nice, system, idle,
/// iowait, irq, softirq and steal.
fn parse_cpu_ticks(stat: &str) -> Option<CpuTicks> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let ticks: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .map(|t| t.parse().ok())
        .collect::<Option<_>>()?;
    let [_, _, _, idle, iowait, _, _, steal] = ticks[..] else {
        return None;
    };
    let total: u64 = ticks.iter().sum();
    Some(CpuTicks {
        busy: total - idle - iowait,
        total,
        steal,
    })
}

fn read_to_string(path: impl AsRef<Path>) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

fn read_u64(path: impl AsRef<Path>) -> Option<u64> {
    read_to_string(path).trim().parse().ok()
}

fn gb(bytes: u64) -> String {
    if bytes == u64::MAX {
        "unlimited".into()
    } else if bytes >= 1_000_000_000 {
        format!("{:.1} GB", bytes as f64 / 1e9)
    } else {
        format!("{:.1} MB", bytes as f64 / 1e6)
    }
}

/// The number after `field:` in a `/proc` text of `Key: value [unit]`
/// lines (`/proc/meminfo`, `/proc/PID/status`), in the file's own unit
/// (KiB for sizes).
pub fn proc_field(text: &str, field: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix(field)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// The tasks on the box: the denominator of `/proc/loadavg`'s fourth field
/// ("1/82").
fn loadavg_tasks(loadavg: &str) -> Option<u64> {
    loadavg.split_whitespace().nth(3)?.split_once('/')?.1.parse().ok()
}

/// This process's cgroup directory for `controller`: cgroup v1 names it on
/// a line of its own (`4:memory:/path`), v2 on the unified line (`0::/path`).
fn cgroup_dir(proc_self_cgroup: &str, controller: &str) -> Option<PathBuf> {
    let mut v2 = None;
    for line in proc_self_cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let path = path.trim_start_matches('/');
        if controllers.split(',').any(|c| c == controller) {
            return Some(Path::new("/sys/fs/cgroup").join(controller).join(path));
        }
        if controllers.is_empty() {
            v2 = Some(Path::new("/sys/fs/cgroup").join(path));
        }
    }
    v2
}

/// The room left in the memory cgroup of this process (whose
/// `/proc/self/cgroup` is `cgroups`), bytes, and the limit's file; None
/// when there is no limit.
fn memory_cgroup_room(cgroups: &str) -> Option<(u64, PathBuf)> {
    let dir = cgroup_dir(cgroups, "memory")?;
    for (max, current) in [
        ("memory.max", "memory.current"),
        ("memory.limit_in_bytes", "memory.usage_in_bytes"),
    ] {
        let file = dir.join(max);
        if let (Some(max), Some(used)) = (read_u64(&file), read_u64(dir.join(current))) {
            // v1 writes "no limit" as a page-rounded i64::MAX.
            if max < u64::MAX / 4 {
                return Some((max.saturating_sub(used), file));
            }
        }
    }
    None
}

/// The pids cgroup of this process (whose `/proc/self/cgroup` is
/// `cgroups`): its limit, the tasks in it now, and the limit's file; None
/// when there is no limit ("max").
fn pids_cgroup(cgroups: &str) -> Option<(u64, u64, PathBuf)> {
    let dir = cgroup_dir(cgroups, "pids")?;
    let file = dir.join("pids.max");
    let max = read_u64(&file)?;
    Some((max, read_u64(dir.join("pids.current")).unwrap_or(0), file))
}

#[cfg(test)]
mod tests {

    #[test]
    fn cpu_ticks_leave_idle_and_iowait_out_of_busy() {
        let stat = "cpu  100 5 50 800 20 3 2 10 7 0\ncpu0 50 2 25 400 10 1 1 5 3 0\nintr 1\n";
        // user 100 + nice 5 + system 50 + irq 3 + softirq 2 + steal 10;
        // guest (7) is inside user already.
        let want = CpuTicks {
            busy: 170,
            total: 990,
            steal: 10,
        };
        assert_eq!(parse_cpu_ticks(stat), Some(want));
        assert_eq!(parse_cpu_ticks("cpu0 1 2 3 4 5 6 7 8\n"), None);
        assert_eq!(parse_cpu_ticks("cpu  1 2 3 4\n"), None);
    }

    use super::*;

    /// This box's figures on the day the costs were measured.
    fn this_box() -> BoxLimits {
        BoxLimits {
            memory_available: 22_900_000_000,
            memory_source: "MemAvailable 22.9 GB".into(),
            fds_max: 20_000,
            fds_open: 8,
            tasks_max: 32_768,
            tasks_source: "pid_max".into(),
            tasks_running: 82,
            netns_max: 96_369,
        }
    }

    #[test]
    fn the_smallest_limit_binds_and_is_named() {
        let b = this_box();
        let by = |r: &str| b.bounds().into_iter().find(|x| x.resource == r).unwrap().hosts;
        // 22.9 GB x 3/4 / 1.3 MB; (20,000 - 8 - 256) / 9 x 4;
        // (32,768 - 82 - 256) / 3; (96,369 - 2) / 2.
        assert_eq!(by("memory"), 13_211);
        assert_eq!(by("file descriptors"), 8_768);
        assert_eq!(by("processes"), 10_810);
        assert_eq!(by("network namespaces"), 48_183);
        let limit = b.host_limit();
        assert_eq!(limit.hosts, 8_768);
        assert!(
            limit
                .binding
                .starts_with("file descriptors (RLIMIT_NOFILE 20000, 8 open"),
            "{}",
            limit.binding
        );
    }

    #[test]
    fn a_fresh_boxs_open_file_limit_binds_until_raised() {
        // A soft limit is not what binds: the hard one is, as it is raised
        // before a build. A hard limit of 1,024 allows (1,024 - 8 - 256) / 9 x 4 = 336 hosts.
        let b = BoxLimits {
            fds_max: 1024,
            ..this_box()
        };
        let limit = b.host_limit();
        assert_eq!(limit.hosts, 336);
        assert!(
            limit.binding.starts_with("file descriptors (RLIMIT_NOFILE 1024"),
            "{}",
            limit.binding
        );
        // A small memory cgroup binds before anything else.
        let b = BoxLimits {
            memory_available: 1_000_000_000,
            memory_source: "memory cgroup (/sys/fs/cgroup/x/memory.max) has 1.0 GB free".into(),
            ..this_box()
        };
        assert_eq!(b.host_limit().hosts, 576);
        assert!(b.host_limit().binding.contains("memory cgroup"));
    }

    #[test]
    fn an_unlimited_figure_does_not_bind() {
        let b = BoxLimits {
            fds_max: u64::MAX,
            tasks_max: u64::MAX,
            netns_max: u64::MAX,
            ..this_box()
        };
        assert_eq!(b.host_limit().hosts, 13_211);
        assert!(b.host_limit().binding.starts_with("memory (MemAvailable 22.9 GB"));
    }

    #[test]
    fn procfs_and_cgroup_lines_are_read() {
        let meminfo = "MemTotal:       24500000 kB\nMemAvailable:   22900000 kB\n";
        assert_eq!(proc_field(meminfo, "MemAvailable"), Some(22_900_000));
        assert_eq!(proc_field(meminfo, "MemFree"), None);
        let status = "Name:\tocslab-agent\nThreads:\t1\nVmHWM:\t  5912 kB\n";
        assert_eq!(proc_field(status, "Threads"), Some(1));
        assert_eq!(proc_field(status, "VmHWM"), Some(5912));
        assert_eq!(proc_field(status, "Name"), None);
        assert_eq!(loadavg_tasks("0.00 0.00 0.19 1/82 19799"), Some(82));
        assert_eq!(loadavg_tasks("garbage"), None);
        let v1 = "8:pids:/\n4:memory:/process_api/abc\n0::/\n";
        assert_eq!(
            cgroup_dir(v1, "memory"),
            Some(PathBuf::from("/sys/fs/cgroup/memory/process_api/abc"))
        );
        assert_eq!(
            cgroup_dir(v1, "pids"),
            Some(PathBuf::from("/sys/fs/cgroup/pids/"))
        );
        let v2 = "0::/user.slice/user-1000.slice/session-2.scope\n";
        assert_eq!(
            cgroup_dir(v2, "pids"),
            Some(PathBuf::from(
                "/sys/fs/cgroup/user.slice/user-1000.slice/session-2.scope"
            ))
        );
    }

    #[test]
    fn this_box_is_read_and_allows_a_host() {
        let b = BoxLimits::read();
        assert!(b.fds_open >= 3, "stdin, stdout and stderr at least: {b:?}");
        assert!(b.memory_available > MEMORY_PER_HOST, "{b:?}");
        assert!(b.tasks_running > 0 && b.tasks_running < b.tasks_max, "{b:?}");
        let limit = b.host_limit();
        assert_eq!(Some(limit.hosts), b.bounds().iter().map(|x| x.hosts).min());
        assert!(limit.hosts > 0, "{b:?}");
    }

    #[test]
    fn the_box_addresses_include_loopback() {
        assert!(local_addresses().contains(&IpAddr::from([127, 0, 0, 1])));
    }
}
