//! Helpers shared by the integration tests: whether this box lets a test
//! build fabrics (and why not), the shipped topology files, and TCP
//! transfers between emulated hosts that report bytes and goodput.

use ocslab_emulator::fabric::Fabric;
use ocslab_emulator::{HostId, Topology};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Why this process cannot build a kernel fabric, or `None` if it can.
/// Tests run on many threads, so rootless mode (which must unshare a user
/// namespace while single-threaded) is not available to them: they need root.
pub fn cannot_build_fabric() -> Option<String> {
    if !nix::unistd::geteuid().is_root() {
        return Some("not root (fabric tests need root; CI runs as root)".into());
    }
    if !Path::new("/proc/self/ns/net").exists() {
        return Some("this kernel has no network namespaces".into());
    }
    None
}

/// Prints why `test` is skipped and returns true when it must be.
pub fn skip(test: &str) -> bool {
    match cannot_build_fabric() {
        Some(why) => {
            eprintln!("skipping {test}: {why}");
            true
        }
        None => false,
    }
}

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Path of a shipped topology file, e.g. `topology_path("tiny")`.
pub fn topology_path(name: &str) -> PathBuf {
    workspace_root().join("topologies").join(format!("{name}.toml"))
}

/// Loads a shipped topology file.
pub fn topology(name: &str) -> Topology {
    let path = topology_path(name);
    Topology::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// Parses a topology from text (no check against the box's addresses).
pub fn topology_from(text: &str) -> Topology {
    Topology::parse(text, Path::new("<test>"), &[]).unwrap_or_else(|e| panic!("{e}"))
}

fn listen(fabric: &Fabric, to: HostId) -> anyhow::Result<(TcpListener, SocketAddr)> {
    let addr = SocketAddr::new(fabric.host_addr(to).into(), 0);
    let l = fabric.in_host(to, || TcpListener::bind(addr))??;
    let at = l.local_addr()?;
    Ok((l, at))
}

fn connect(fabric: &Fabric, from: HostId, at: SocketAddr, tos: Option<u8>) -> anyhow::Result<TcpStream> {
    let s = fabric.in_host(from, || TcpStream::connect_timeout(&at, Duration::from_secs(5)))??;
    if let Some(tos) = tos {
        nix::sys::socket::setsockopt(&s, nix::sys::socket::sockopt::Ipv4Tos, &(tos as i32))?;
    }
    Ok(s)
}

/// Sends `bytes` bytes from `from` to `to` over TCP, with IP_TOS `tos` on
/// the sending socket; returns the bytes the receiver read.
pub fn send_bytes(fabric: &Fabric, from: HostId, to: HostId, tos: Option<u8>, bytes: u64) -> anyhow::Result<u64> {
    let (l, at) = listen(fabric, to)?;
    let rx = std::thread::spawn(move || -> std::io::Result<u64> {
        let (mut s, _) = l.accept()?;
        let mut buf = vec![0u8; 1 << 16];
        let mut got = 0u64;
        loop {
            let n = s.read(&mut buf)?;
            if n == 0 {
                return Ok(got);
            }
            got += n as u64;
        }
    });
    let mut s = connect(fabric, from, at, tos)?;
    let chunk = vec![0x5au8; 1 << 16];
    let mut left = bytes;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        s.write_all(&chunk[..n])?;
        left -= n as u64;
    }
    s.shutdown(std::net::Shutdown::Write)?;
    let got = rx.join().map_err(|_| anyhow::anyhow!("receiver panicked"))??;
    Ok(got)
}

/// Goodput of one TCP stream from `from` to `to`: payload bytes received
/// in a window of `measure` after `warmup`, in bit/s.
pub fn goodput(
    fabric: &Fabric,
    from: HostId,
    to: HostId,
    tos: Option<u8>,
    warmup: Duration,
    measure: Duration,
) -> anyhow::Result<f64> {
    let (l, at) = listen(fabric, to)?;
    let received = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let rx = {
        let received = received.clone();
        std::thread::spawn(move || -> std::io::Result<()> {
            let (mut s, _) = l.accept()?;
            let mut buf = vec![0u8; 1 << 16];
            loop {
                let n = s.read(&mut buf)?;
                if n == 0 {
                    return Ok(());
                }
                received.fetch_add(n as u64, Ordering::Relaxed);
            }
        })
    };
    let mut s = connect(fabric, from, at, tos)?;
    let tx = {
        let stop = stop.clone();
        std::thread::spawn(move || -> std::io::Result<()> {
            let chunk = vec![0x5au8; 1 << 16];
            while !stop.load(Ordering::Relaxed) {
                s.write_all(&chunk)?;
            }
            s.shutdown(std::net::Shutdown::Write)
        })
    };
    // The window is the measurement itself, not a synchronisation.
    std::thread::sleep(warmup);
    let (c0, t0) = (received.load(Ordering::Relaxed), Instant::now());
    std::thread::sleep(measure);
    let (c1, t1) = (received.load(Ordering::Relaxed), Instant::now());
    stop.store(true, Ordering::Relaxed);
    tx.join().map_err(|_| anyhow::anyhow!("sender panicked"))??;
    rx.join().map_err(|_| anyhow::anyhow!("receiver panicked"))??;
    Ok((c1 - c0) as f64 * 8.0 / (t1 - t0).as_secs_f64())
}

/// TCP payload over 1500-byte Ethernet frames with timestamps: 1448 of
/// 1514 bytes on the wire (what a shaped link "allows" at best).
pub const TCP_PAYLOAD_EFFICIENCY: f64 = 1448.0 / 1514.0;
