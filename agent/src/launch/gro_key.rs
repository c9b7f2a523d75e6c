//! [`GroKeyHold`]: one socket that spares each agent's start two rewrites
//! of kernel text.

/// Keeps the kernel's IPv6 UDP encapsulation switch on while agents start.
///
/// Each agent's QUIC stack (quinn-udp) learns whether the kernel
/// coalesces UDP datagrams (GRO) by opening an IPv6 socket, setting
/// `UDP_GRO` on it and closing it. Setting `UDP_GRO` turns on a global
/// static key in the kernel (`udpv6_encap_needed_key`) and closing the
/// last socket that set it turns the key off; each switch rewrites kernel
/// text and waits for every core to see it. While no other IPv6 socket
/// holds the key, every agent's start flips it twice. This socket holds
/// it: an unbound IPv6 UDP socket with `UDP_GRO` set, reachable from
/// nowhere, so the agents' probes only count up and down. On 1,024
/// agents the flips took 5 % of the CPU time of starting them
/// (`perf record -a --call-graph dwarf` under `ocslab bench fabric
/// --agents`).
#[derive(Debug)]
pub struct GroKeyHold {
    socket: std::os::fd::OwnedFd,
}

impl GroKeyHold {
    /// Opens the holding socket; `None` where the kernel has no IPv6 or
    /// no UDP GRO (the agents then start as they would anyway).
    pub fn new() -> Option<GroKeyHold> {
        use nix::sys::socket::{setsockopt, socket, sockopt, AddressFamily, SockFlag, SockType};
        let fd = socket(
            AddressFamily::Inet6,
            SockType::Datagram,
            SockFlag::SOCK_CLOEXEC,
            None,
        )
        .ok()?;
        setsockopt(&fd, sockopt::UdpGroSegment, &true).ok()?;
        Some(GroKeyHold { socket: fd })
    }

    /// Whether the socket has `UDP_GRO` set, so the key stays on.
    pub fn holds(&self) -> bool {
        nix::sys::socket::getsockopt(&self.socket, nix::sys::socket::sockopt::UdpGroSegment).unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::GroKeyHold;
    use nix::sys::socket::SockaddrLike;

    /// The hold is an IPv6 socket with `UDP_GRO` on, as quinn-udp's
    /// probe sets it; without IPv6 in the kernel there is nothing to hold.
    #[test]
    fn the_gro_key_hold_sets_udp_gro_on_an_ipv6_socket() {
        if !std::path::Path::new("/proc/net/if_inet6").exists() {
            eprintln!("skipped: this kernel has no IPv6");
            return;
        }
        let hold = GroKeyHold::new().expect("an IPv6 UDP socket with UDP_GRO");
        assert!(hold.holds());
        let family = nix::sys::socket::getsockname::<nix::sys::socket::SockaddrStorage>(
            std::os::fd::AsRawFd::as_raw_fd(&hold.socket),
        )
        .expect("getsockname")
        .family();
        assert_eq!(family, Some(nix::sys::socket::AddressFamily::Inet6));
    }
}
