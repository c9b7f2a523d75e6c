//! The naming scheme of a fabric run: the run id, namespace names and
//! interface names.
//!
//! A strict scheme is what makes crash cleanup safe (as in Mininet, but
//! without its global patterns): every namespace of run `ab12` is
//! `ocslab-ab12-<role>` under `/run/netns`, and nothing else on the box can
//! match that. Interface names carry the short prefix `oab12` too, although
//! they only ever live inside the run's own namespaces; they stay within the
//! kernel's 15-byte limit (`IFNAMSIZ - 1`).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::hash::{BuildHasher, Hasher};

/// Every namespace of ocslab starts with this.
pub const NS_PREFIX: &str = "ocslab-";

/// The kernel's limit on interface names (IFNAMSIZ - 1).
pub const IFNAME_MAX: usize = 15;

/// A run id: four lowercase hex digits, unique among the runs on this box.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct RunId(u16);

impl RunId {
    /// A fresh random id (not checked against existing runs: see
    /// [`crate::fabric::ledger::reserve_run_id`]).
    pub fn random() -> RunId {
        // RandomState is seeded from the OS per process; mixing in the pid and
        // the time keeps ids apart between processes started together.
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        if let Ok(t) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
            h.write_u128(t.as_nanos());
        }
        RunId(h.finish() as u16)
    }

    /// The id as a number.
    pub fn value(self) -> u16 {
        self.0
    }

    /// The namespace name of `role` in this run, e.g. `ocslab-ab12-tor0`.
    pub fn netns(self, role: &str) -> String {
        format!("{NS_PREFIX}{self}-{role}")
    }

    /// The interface prefix of this run, e.g. `oab12`.
    pub fn if_prefix(self) -> String {
        format!("o{self}")
    }

    /// Whether `ns_name` is a namespace of this run.
    pub fn owns_netns(self, ns_name: &str) -> bool {
        ns_name
            .strip_prefix(&format!("{NS_PREFIX}{self}-"))
            .is_some_and(|role| !role.is_empty())
    }

    /// The run a namespace name belongs to, if it follows the scheme.
    pub fn of_netns(ns_name: &str) -> Option<RunId> {
        let rest = ns_name.strip_prefix(NS_PREFIX)?;
        let (id, role) = rest.split_once('-')?;
        if role.is_empty() {
            return None;
        }
        id.parse().ok()
    }
}

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04x}", self.0)
    }
}

impl std::str::FromStr for RunId {
    type Err = String;
    fn from_str(s: &str) -> Result<RunId, String> {
        if s.len() == 4
            && s.chars()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        {
            u16::from_str_radix(s, 16).map(RunId).map_err(|e| e.to_string())
        } else {
            Err(format!(
                "{s:?} is not a run id: expected four lowercase hex digits, e.g. 3f9a"
            ))
        }
    }
}

impl TryFrom<String> for RunId {
    type Error = String;
    fn try_from(s: String) -> Result<RunId, String> {
        s.parse()
    }
}

impl From<RunId> for String {
    fn from(r: RunId) -> String {
        r.to_string()
    }
}

/// Namespace roles (the suffix after the run id).
pub mod role {
    use crate::topology::HostId;

    /// A host's namespace role, e.g. `r0h1`.
    pub fn host(h: HostId) -> String {
        h.to_string()
    }
    /// Rack r's ToR, e.g. `tor3`.
    pub fn tor(rack: u32) -> String {
        format!("tor{rack}")
    }
    /// The EPS core switch.
    pub const CORE: &str = "core";
    /// The optical circuit switch (crossbar).
    pub const OCS: &str = "ocs";
}

/// Interface names, given the run's prefix `p` (e.g. `oab12`).
pub mod ifname {
    /// A host's NIC, in the host namespace: `oab12-eth0`.
    pub fn host_nic(p: &str) -> String {
        format!("{p}-eth0")
    }
    /// The ToR end of host h's link, in the ToR namespace: `oab12-h3`.
    pub fn tor_down(p: &str, host: u32) -> String {
        format!("{p}-h{host}")
    }
    /// The ToR's EPS uplink, in the ToR namespace: `oab12-up`.
    pub fn tor_up(p: &str) -> String {
        format!("{p}-up")
    }
    /// The ToR's OCS transceiver w, in the ToR namespace: `oab12-ocs0`.
    pub fn tor_ocs(p: &str, w: u32) -> String {
        format!("{p}-ocs{w}")
    }
    /// The core's port to rack r, in the core namespace: `oab12-r7`.
    pub fn core_port(p: &str, rack: u32) -> String {
        format!("{p}-r{rack}")
    }
    /// The OCS port of rack r, wavelength w, in the OCS namespace: `oab12-r7w0`.
    pub fn ocs_port(p: &str, rack: u32, w: u32) -> String {
        format!("{p}-r{rack}w{w}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::HostId;

    #[test]
    fn names_fit_the_kernel_limit_at_the_largest_sizes() {
        let p = RunId(0xffff).if_prefix();
        for name in [
            ifname::host_nic(&p),
            ifname::tor_down(&p, 244),
            ifname::tor_up(&p),
            ifname::tor_ocs(&p, 63),
            ifname::core_port(&p, 255),
            ifname::ocs_port(&p, 252, 63),
        ] {
            assert!(name.len() <= IFNAME_MAX, "{name} is {} bytes", name.len());
        }
    }

    #[test]
    fn namespaces_name_their_run_and_nothing_else_matches() {
        let r: RunId = "3f9a".parse().unwrap();
        let ns = r.netns(&role::host(HostId::new(1, 2)));
        assert_eq!(ns, "ocslab-3f9a-r1h2");
        assert!(r.owns_netns(&ns));
        assert_eq!(RunId::of_netns(&ns), Some(r));
        assert!(!r.owns_netns("ocslab-3f9b-r1h2"));
        assert!(!r.owns_netns("ocslab-3f9a-"));
        assert_eq!(RunId::of_netns("ocslab-zzzz-core"), None);
        assert_eq!(RunId::of_netns("myns"), None);
        assert!("3F9A".parse::<RunId>().is_err());
        assert!("3f9".parse::<RunId>().is_err());
    }
}
