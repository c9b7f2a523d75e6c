//! The address plan: which IPv4 address every interface of the emulated
//! datacenter gets, carved out of one range (default `198.18.0.0/15`).
//!
//! Layout, in /24 blocks of the range (block k starts at base + 256·k):
//! - block `r` is rack r's subnet: its ToR is `.1`, host h is `.(10 + h)`;
//! - the last blocks hold the ToR ↔ core links, one /31 per rack
//!   (ToR even, core odd, 128 racks a block), counted back from the end;
//! - below them, one block per OCS wavelength w: the optical subnet on which
//!   ToR r's port w has address `.(r + 1)`.
//!
//! Rack r's subnet being block r is what makes a circuit r→j a single route
//! (`<rack j subnet> via <ToR j optical address>`), as in design.md.

use serde::{Serialize, Serializer};
use std::fmt;
use std::net::Ipv4Addr;

/// An IPv4 network: an address and a prefix length, e.g. `198.18.0.0/15`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ipv4Net {
    /// The network address (host bits zero).
    pub addr: Ipv4Addr,
    /// Prefix length, 0..=32.
    pub prefix: u8,
}

impl Ipv4Net {
    /// Whether `a` lies in this network.
    pub fn contains(&self, a: Ipv4Addr) -> bool {
        let mask = if self.prefix == 0 {
            0
        } else {
            u32::MAX << (32 - self.prefix)
        };
        (u32::from(a) & mask) == u32::from(self.addr)
    }
    /// Number of addresses in the network.
    pub fn size(&self) -> u64 {
        1u64 << (32 - self.prefix)
    }
}

impl std::str::FromStr for Ipv4Net {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = |why: &str| format!("{s:?} is not an IPv4 range ({why}): expected e.g. \"198.18.0.0/15\"");
        let (a, p) = s.split_once('/').ok_or_else(|| bad("no /prefix"))?;
        let addr: Ipv4Addr = a.trim().parse().map_err(|_| bad("bad address"))?;
        let prefix: u8 = p.trim().parse().map_err(|_| bad("bad prefix"))?;
        if prefix > 32 {
            return Err(bad("prefix over 32"));
        }
        let net = Ipv4Net { addr, prefix };
        let mask = if prefix == 0 { 0 } else { u32::MAX << (32 - prefix) };
        if u32::from(addr) & !mask != 0 {
            return Err(bad("host bits set"));
        }
        Ok(net)
    }
}

impl fmt::Display for Ipv4Net {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

impl Serialize for Ipv4Net {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Why a range cannot hold a topology.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// The range is smaller than a /23 or does not hold enough /24 blocks.
    #[error("{range} holds {have} /24 blocks but {racks} racks with {wavelengths} OCS ports each need {need}; use a larger range such as 198.18.0.0/15")]
    TooSmall {
        /// The range.
        range: Ipv4Net,
        /// Blocks available.
        have: u64,
        /// Blocks needed.
        need: u64,
        /// Racks.
        racks: u32,
        /// OCS ports per rack.
        wavelengths: u32,
    },
    /// Addresses inside a /24 run out.
    #[error("{what} {n} is more than a /24 block can address (at most {max})")]
    TooMany {
        /// "hosts per rack" or "racks".
        what: &'static str,
        /// Given.
        n: u32,
        /// Largest allowed.
        max: u32,
    },
}

/// The address plan for one topology (see the module doc for the layout).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AddressPlan {
    range: Ipv4Net,
    racks: u32,
    hosts_per_rack: u32,
    wavelengths: u32,
}

const HOST_OFFSET: u32 = 10;

impl AddressPlan {
    /// Plans `racks` racks of `hosts_per_rack` hosts with `wavelengths` OCS
    /// ports per rack in `range`.
    pub fn new(
        range: Ipv4Net,
        racks: u32,
        hosts_per_rack: u32,
        wavelengths: u32,
    ) -> Result<AddressPlan, PlanError> {
        if hosts_per_rack > 254 - HOST_OFFSET {
            return Err(PlanError::TooMany {
                what: "hosts per rack",
                n: hosts_per_rack,
                max: 254 - HOST_OFFSET,
            });
        }
        if wavelengths > 0 && racks > 253 {
            return Err(PlanError::TooMany {
                what: "racks with an OCS",
                n: racks,
                max: 253,
            });
        }
        let have = if range.prefix > 24 { 0 } else { range.size() / 256 };
        let need = racks as u64 + (racks as u64).div_ceil(128) + wavelengths as u64;
        if have < need {
            return Err(PlanError::TooSmall {
                range,
                have,
                need,
                racks,
                wavelengths,
            });
        }
        Ok(AddressPlan {
            range,
            racks,
            hosts_per_rack,
            wavelengths,
        })
    }

    /// The whole range (rack r's block is the r-th /24 of it).
    pub fn range(&self) -> Ipv4Net {
        self.range
    }

    fn block(&self, k: u64) -> u32 {
        u32::from(self.range.addr) + (k as u32) * 256
    }

    fn blocks(&self) -> u64 {
        self.range.size() / 256
    }

    /// Rack r's subnet (/24).
    pub fn rack_subnet(&self, rack: u32) -> Ipv4Net {
        Ipv4Net {
            addr: Ipv4Addr::from(self.block(rack as u64)),
            prefix: 24,
        }
    }

    /// The ToR's address inside its rack subnet (the hosts' gateway).
    pub fn tor_rack_addr(&self, rack: u32) -> Ipv4Addr {
        Ipv4Addr::from(self.block(rack as u64) + 1)
    }

    /// Host h of rack r.
    pub fn host_addr(&self, rack: u32, host: u32) -> Ipv4Addr {
        Ipv4Addr::from(self.block(rack as u64) + HOST_OFFSET + host)
    }

    /// Which host an address belongs to, if any.
    pub fn host_of(&self, a: Ipv4Addr) -> Option<(u32, u32)> {
        let off = u32::from(a).checked_sub(u32::from(self.range.addr))?;
        let (rack, low) = (off / 256, off % 256);
        let host = low.checked_sub(HOST_OFFSET)?;
        (rack < self.racks && host < self.hosts_per_rack).then_some((rack, host))
    }

    /// The ToR ↔ core /31 of rack r: (ToR side, core side).
    pub fn uplink_addrs(&self, rack: u32) -> (Ipv4Addr, Ipv4Addr) {
        let block = self.blocks() - 1 - (rack as u64 / 128);
        let base = self.block(block) + 2 * (rack % 128);
        (Ipv4Addr::from(base), Ipv4Addr::from(base + 1))
    }

    /// The optical subnet of wavelength (port index) w.
    pub fn optical_subnet(&self, w: u32) -> Ipv4Net {
        let uplink_blocks = (self.racks as u64).div_ceil(128);
        let block = self.blocks() - 1 - uplink_blocks - w as u64;
        Ipv4Net {
            addr: Ipv4Addr::from(self.block(block)),
            prefix: 24,
        }
    }

    /// ToR r's address on its OCS port w.
    pub fn tor_optical_addr(&self, rack: u32, w: u32) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.optical_subnet(w).addr) + rack + 1)
    }

    /// OCS ports (wavelengths) per rack.
    pub fn wavelengths(&self) -> u32 {
        self.wavelengths
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(racks: u32, hosts: u32, w: u32) -> AddressPlan {
        AddressPlan::new("198.18.0.0/15".parse().unwrap(), racks, hosts, w).unwrap()
    }

    #[test]
    fn racks_hosts_and_tors() {
        let p = plan(4, 4, 1);
        assert_eq!(p.rack_subnet(2).to_string(), "198.18.2.0/24");
        assert_eq!(p.tor_rack_addr(2), Ipv4Addr::new(198, 18, 2, 1));
        assert_eq!(p.host_addr(3, 1), Ipv4Addr::new(198, 18, 3, 11));
        assert_eq!(p.host_of(Ipv4Addr::new(198, 18, 3, 11)), Some((3, 1)));
        assert_eq!(p.host_of(Ipv4Addr::new(198, 18, 3, 1)), None);
    }

    #[test]
    fn infrastructure_sits_at_the_end_and_never_overlaps_racks() {
        let p = plan(200, 8, 2);
        assert_eq!(
            p.uplink_addrs(0),
            (Ipv4Addr::new(198, 19, 255, 0), Ipv4Addr::new(198, 19, 255, 1))
        );
        assert_eq!(p.uplink_addrs(129).0, Ipv4Addr::new(198, 19, 254, 2));
        assert_eq!(p.optical_subnet(0).to_string(), "198.19.253.0/24");
        assert_eq!(p.tor_optical_addr(5, 1), Ipv4Addr::new(198, 19, 252, 6));
        for r in 0..200 {
            let s = p.rack_subnet(r);
            assert!(!s.contains(p.uplink_addrs(r).0));
            assert!(!s.contains(p.tor_optical_addr(r, 0)));
        }
    }

    #[test]
    fn ranges_too_small_or_malformed_are_refused() {
        let r: Ipv4Net = "10.9.0.0/24".parse().unwrap();
        assert!(matches!(
            AddressPlan::new(r, 2, 2, 1),
            Err(PlanError::TooSmall { .. })
        ));
        assert!("198.18.0.1/15".parse::<Ipv4Net>().is_err());
        assert!("198.18.0.0".parse::<Ipv4Net>().is_err());
        assert!(matches!(
            AddressPlan::new("198.18.0.0/15".parse().unwrap(), 2, 300, 1),
            Err(PlanError::TooMany { .. })
        ));
    }
}
