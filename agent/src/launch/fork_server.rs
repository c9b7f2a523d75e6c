//! A fork server: one agent process, started once per lab with the
//! arguments all its agents share, that forks every agent from itself.
//!
//! An exec of the agent binary costs about 1.2 ms of CPU before the
//! agent's `main` runs on this box's VM: the kernel maps an 80 MB binary,
//! the dynamic loader relocates it, and glibc reads the caches' sizes with
//! `cpuid`, which the hypervisor traps. A fork of a small process that has
//! done all that already costs a fraction of it, and 1,024 agents start
//! that many times. The child runs exactly what the exec'd binary would
//! have run, from the same argument parser on.
//!
//! How it runs:
//! - [`ForkServer::start`] runs the agent program with the shared
//!   arguments and the environment variable [`SERVER_FD_ENV`] naming the
//!   descriptor of its end of a Unix socket pair. The program's `main`
//!   calls [`serve_if_asked`] first, before any thread starts; it serves
//!   when the variable is set.
//! - For each agent the lab sends the host's own arguments; the server
//!   forks, and the child parses the server's arguments followed by the
//!   host's, as if it had been exec'd with both, and runs the agent.
//! - The server ends when the lab's end of the socket closes, which the
//!   kernel does when the lab exits, however it ends.
//!
//! An agent is the server's child, not the lab's. The server reaps a
//! child only when the lab asks for its exit status, or when it ends, so
//! until then the pid names that agent; the lab opens a pidfd on it as
//! soon as it learns the pid and from then on signals and watches the agent
//! through the pidfd, which cannot name another process.
//!
//! Wire format, little-endian: a spawn request is `1u8`, the argument
//! count (`u32`) and each argument as a `u32` length and its bytes; the
//! reply is an `i32`, the pid, or minus an errno. A status request is
//! `2u8` and the pid (`i32`); the reply is an `i64`: the raw wait status,
//! or -1 while the child runs.

use std::ffi::OsString;
use std::io::{self, BufReader, Read, Write};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::net::UnixStream;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, ExitCode, ExitStatus, Stdio};
use std::time::Duration;

/// The environment variable that makes an agent binary a fork server; its
/// value is the descriptor of the server's end of the socket.
pub const SERVER_FD_ENV: &str = "OCSLAB_AGENT_FORK_SERVER_FD";

/// How long the lab waits for a reply: a fork takes a millisecond or so.
const REPLY_TIMEOUT: Duration = Duration::from_secs(10);

const SPAWN: u8 = 1;
const STATUS: u8 = 2;

/// Longest argument list and argument a request may carry.
const MAX_ARGS: usize = 256;
const MAX_ARG_LEN: usize = 64 << 10;

/// The lab's end of a running fork server.
#[derive(Debug)]
pub struct ForkServer {
    process: Child,
    socket: UnixStream,
}

impl ForkServer {
    /// Starts `program` with `shared_args` as a fork server. Its standard
    /// input is closed and its output goes where this process's does, as
    /// do its agents'.
    pub fn start(program: &Path, shared_args: &[OsString]) -> io::Result<ForkServer> {
        let (socket, theirs) = UnixStream::pair()?;
        let their_fd = theirs.as_raw_fd();
        let mut cmd = Command::new(program);
        cmd.args(shared_args)
            .env(SERVER_FD_ENV, their_fd.to_string())
            .stdin(Stdio::null());
        // SAFETY: between fork and exec the closure only calls fcntl,
        // which is async-signal-safe, on a descriptor this process owns:
        // the child's copy of it then survives the exec, under the same
        // number.
        unsafe {
            cmd.pre_exec(move || {
                if libc::fcntl(their_fd, libc::F_SETFD, 0) < 0 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let process = cmd.spawn()?;
        drop(theirs);
        socket.set_read_timeout(Some(REPLY_TIMEOUT))?;
        Ok(ForkServer { process, socket })
    }

    /// Sends `request` and reads the reply into `reply`. After any
    /// failure (a server gone, or silent for [`REPLY_TIMEOUT`]) the lab's
    /// end is shut, so a late reply is never read as the next call's, every
    /// later call fails, and the server exits.
    fn call(&mut self, request: &[u8], reply: &mut [u8]) -> io::Result<()> {
        let r = self
            .socket
            .write_all(request)
            .and_then(|()| self.socket.read_exact(reply));
        if r.is_err() {
            let _ = self.socket.shutdown(std::net::Shutdown::Both);
        }
        r
    }

    /// Starts one agent with `host_args` after the shared arguments.
    pub fn spawn(&mut self, host_args: &[OsString]) -> io::Result<ForkedAgent> {
        let mut request = vec![SPAWN];
        request.extend(encode_args(host_args)?);
        let mut reply = [0u8; 4];
        self.call(&request, &mut reply)?;
        let pid = i32::from_le_bytes(reply);
        if pid <= 0 {
            return Err(io::Error::from_raw_os_error(-pid));
        }
        // The server reaps no child before the lab asks, so `pid` is
        // still this agent, running or a zombie.
        let pidfd = pidfd_open(pid)?;
        Ok(ForkedAgent { pid, pidfd })
    }

    /// How `agent` ended, reaping it; `None` while it runs.
    pub fn exit_status(&mut self, agent: &ForkedAgent) -> io::Result<Option<ExitStatus>> {
        let mut request = vec![STATUS];
        request.extend(agent.pid.to_le_bytes());
        let mut reply = [0u8; 8];
        self.call(&request, &mut reply)?;
        let status = i64::from_le_bytes(reply);
        Ok(i32::try_from(status)
            .ok()
            .filter(|_| status >= 0)
            .map(ExitStatus::from_raw))
    }

    /// The server's pid.
    pub fn id(&self) -> u32 {
        self.process.id()
    }
}

impl Drop for ForkServer {
    /// Closes the lab's end, on which the server reaps what has ended and
    /// exits, and waits for it; agents still running run on.
    fn drop(&mut self) {
        let _ = self.socket.shutdown(std::net::Shutdown::Both);
        let _ = self.process.wait();
    }
}

/// An agent a [`ForkServer`] started, held by a pidfd.
#[derive(Debug)]
pub struct ForkedAgent {
    pid: i32,
    pidfd: OwnedFd,
}

impl ForkedAgent {
    /// Its pid.
    pub fn id(&self) -> u32 {
        self.pid.unsigned_abs()
    }

    /// Sends `signal` to it (through its pidfd: never to another process
    /// that took its pid). An agent that has ended is not an error.
    pub fn signal(&self, signal: nix::sys::signal::Signal) -> io::Result<()> {
        // SAFETY: pidfd_send_signal reads only its integer arguments; a
        // null info pointer means "as kill(2) would send it".
        let r = unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                self.pidfd.as_raw_fd(),
                signal as libc::c_int,
                std::ptr::null::<libc::siginfo_t>(),
                0,
            )
        };
        match r {
            0 => Ok(()),
            _ => match io::Error::last_os_error() {
                e if e.raw_os_error() == Some(libc::ESRCH) => Ok(()),
                e => Err(e),
            },
        }
    }

    /// Whether it has ended, waiting at most `timeout` (zero: only look).
    pub fn wait_ended(&self, timeout: Duration) -> bool {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        let ms = PollTimeout::try_from(timeout).unwrap_or(PollTimeout::MAX);
        let mut fds = [PollFd::new(self.pidfd.as_fd(), PollFlags::POLLIN)];
        loop {
            match poll(&mut fds, ms) {
                Ok(n) => return n > 0,
                Err(nix::errno::Errno::EINTR) => continue,
                // A pidfd that cannot be polled: a process gone.
                Err(_) => return true,
            }
        }
    }

    /// Kills it (SIGKILL) and waits until it has ended.
    pub fn kill(&self) {
        if self.signal(nix::sys::signal::Signal::SIGKILL).is_ok() {
            while !self.wait_ended(Duration::from_secs(1)) {}
        }
    }
}

/// A spawn request's arguments, as [`read_args`] reads them.
fn encode_args(args: &[OsString]) -> io::Result<Vec<u8>> {
    if args.len() > MAX_ARGS {
        return Err(invalid("too many arguments"));
    }
    let mut out = Vec::new();
    out.extend((args.len() as u32).to_le_bytes());
    for a in args {
        let bytes = a.as_bytes();
        if bytes.len() > MAX_ARG_LEN {
            return Err(invalid("argument too long"));
        }
        out.extend((bytes.len() as u32).to_le_bytes());
        out.extend(bytes);
    }
    Ok(out)
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, what.to_string())
}

fn pidfd_open(pid: i32) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_open reads only its integer arguments.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let fd = RawFd::try_from(fd).map_err(|_| invalid("pidfd out of range"))?;
    // SAFETY: the kernel just returned `fd`, a new descriptor nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// In an agent program's `main`, before anything else: when the program
/// was started as a fork server ([`SERVER_FD_ENV`] set), serves forks
/// until the lab goes and returns the server's exit code; otherwise
/// returns `None` at once. Each forked child calls `run_agent` with the
/// server's own arguments followed by its host's and exits with the code
/// it returns.
pub fn serve_if_asked(run_agent: fn(Vec<OsString>) -> u8) -> Option<ExitCode> {
    let fd = std::env::var_os(SERVER_FD_ENV)?;
    // Before any thread exists (this is the first thing `main` does), so
    // no other thread reads the environment.
    std::env::remove_var(SERVER_FD_ENV);
    let Some(fd) = fd
        .to_str()
        .and_then(|s| s.parse::<RawFd>().ok())
        .filter(|&fd| fd > 2)
    else {
        eprintln!("ocslab-agent: {SERVER_FD_ENV}={fd:?} is not a descriptor");
        return Some(ExitCode::FAILURE);
    };
    if threads() != Some(1) {
        eprintln!("ocslab-agent: a fork server must be single-threaded; it is not");
        return Some(ExitCode::FAILURE);
    }
    // SAFETY: the variable names the socket the lab handed this process
    // for it to own (`ForkServer::start`); nothing else uses it.
    let socket = unsafe { UnixStream::from_raw_fd(fd) };
    let code = match serve(socket, run_agent) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ocslab-agent fork server: {e}");
            ExitCode::FAILURE
        }
    };
    reap_ended();
    Some(code)
}

/// Threads of this process, from `/proc/self/status`.
fn threads() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    ocslab_emulator::fabric::capacity::proc_field(&status, "Threads")
}

/// Serves requests until the lab's end closes.
fn serve(socket: UnixStream, run_agent: fn(Vec<OsString>) -> u8) -> io::Result<()> {
    let mut writer = socket.try_clone()?;
    let mut reader = BufReader::new(socket);
    loop {
        let mut tag = [0u8; 1];
        match reader.read_exact(&mut tag) {
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
            r => r?,
        }
        match tag[0] {
            SPAWN => {
                let host_args = read_args(&mut reader)?;
                let mut argv: Vec<OsString> = std::env::args_os().collect();
                argv.extend(host_args);
                // SAFETY: this process has one thread (checked before
                // serving, and it starts none), so the child's copy of
                // every lock and allocator is consistent.
                let pid = match unsafe { nix::unistd::fork() } {
                    Ok(nix::unistd::ForkResult::Child) => {
                        // The child is an agent: the server's socket is
                        // not its own.
                        drop(reader);
                        drop(writer);
                        std::process::exit(i32::from(run_agent(argv)));
                    }
                    Ok(nix::unistd::ForkResult::Parent { child }) => child.as_raw(),
                    Err(e) => -(e as i32),
                };
                writer.write_all(&pid.to_le_bytes())?;
            }
            STATUS => {
                let mut pid = [0u8; 4];
                reader.read_exact(&mut pid)?;
                let pid = nix::unistd::Pid::from_raw(i32::from_le_bytes(pid));
                writer.write_all(&exit_status(pid).to_le_bytes())?;
            }
            other => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("unknown request {other}"),
                ))
            }
        }
    }
}

fn read_u32(reader: &mut impl Read) -> io::Result<u32> {
    let mut b = [0u8; 4];
    reader.read_exact(&mut b)?;
    Ok(u32::from_le_bytes(b))
}

/// A spawn request's arguments.
fn read_args(reader: &mut impl Read) -> io::Result<Vec<OsString>> {
    let count = read_u32(reader)? as usize;
    if count > MAX_ARGS {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{count} arguments"),
        ));
    }
    (0..count)
        .map(|_| {
            let len = read_u32(reader)? as usize;
            if len > MAX_ARG_LEN {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("a {len}-byte argument"),
                ));
            }
            let mut bytes = vec![0u8; len];
            reader.read_exact(&mut bytes)?;
            Ok(OsString::from_vec(bytes))
        })
        .collect()
}

/// The raw wait status of child `pid`, reaping it, or -1 while it runs
/// (or if it is not a child).
fn exit_status(pid: nix::unistd::Pid) -> i64 {
    let mut status: libc::c_int = 0;
    // SAFETY: waitpid writes only to `status`, a local.
    let r = unsafe { libc::waitpid(pid.as_raw(), &mut status, libc::WNOHANG) };
    if r == pid.as_raw() {
        i64::from(status)
    } else {
        -1
    }
}

/// Reaps every child that has ended; those still running go to the
/// system's reaper when the server exits.
fn reap_ended() {
    let mut status: libc::c_int = 0;
    // SAFETY: waitpid writes only to `status`, a local.
    while unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) } > 0 {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spawn_request_round_trips_its_arguments() {
        let args: Vec<OsString> = vec![
            "--host".into(),
            "r0h1".into(),
            OsString::from_vec(vec![0xff, b'x']),
        ];
        let request = encode_args(&args).expect("encodes");
        assert_eq!(read_args(&mut request.as_slice()).expect("parses"), args);
        // Cut short: an error, not a partial list.
        assert!(read_args(&mut &request[..request.len() - 1]).is_err());
        // An absurd count is refused before anything is allocated.
        assert!(read_args(&mut &u32::MAX.to_le_bytes()[..]).is_err());
    }
}
