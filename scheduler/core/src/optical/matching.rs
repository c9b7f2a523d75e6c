//! Matchings of an optical circuit switch: circuits, their text form
//! (`SRC:DST@PORT`), and the rules a set of circuits must keep to be
//! configured at once. Pure: both drivers and the kernel fabric read them.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A unidirectional circuit from rack `src_rack` to rack `dst_rack` on OCS
/// port (wavelength) `port` of both racks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Circuit {
    /// Sending rack.
    pub src_rack: u32,
    /// Receiving rack.
    pub dst_rack: u32,
    /// Wavelength (OCS port index of the rack).
    pub port: u32,
}

/// Why a matching cannot be configured.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MatchingError {
    /// A rack index beyond the topology.
    #[error("circuit {0}: rack {1} does not exist (racks are 0..{2})")]
    NoSuchRack(String, u32, u32),
    /// A port index beyond the topology.
    #[error("circuit {0}: port {1} does not exist (each rack has OCS ports 0..{2})")]
    NoSuchPort(String, u32, u32),
    /// src == dst.
    #[error("circuit {0}: a rack cannot have a circuit to itself")]
    Loop(String),
    /// Two circuits leave the same port.
    #[error("circuits {0} and {1} both leave rack {2} on port {3}; an OCS input port holds one circuit")]
    InputTaken(String, String, u32, u32),
    /// Two circuits enter the same port.
    #[error("circuits {0} and {1} both enter rack {2} on port {3}; an OCS output port holds one circuit")]
    OutputTaken(String, String, u32, u32),
    /// Two circuits join the same pair of racks.
    #[error("circuits {0} and {1} join the same racks; the tc-mirred datapath routes one circuit per rack pair (the eBPF datapath spreads flows over several)")]
    SamePair(String, String),
}

impl std::fmt::Display for Circuit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}->{}", self.src_rack, self.dst_rack)?;
        if self.port != 0 {
            write!(f, "@{}", self.port)?;
        }
        Ok(())
    }
}

/// A circuit written `SRC:DST` or `SRC:DST@PORT` could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a circuit: expected SRC:DST or SRC:DST@PORT with rack numbers, e.g. 0:1 or 0:2@1")]
pub struct ParseCircuitError(String);

impl std::str::FromStr for Circuit {
    type Err = ParseCircuitError;
    /// `SRC:DST` (port 0) or `SRC:DST@PORT`, racks and ports zero-based.
    fn from_str(s: &str) -> Result<Circuit, ParseCircuitError> {
        let bad = || ParseCircuitError(s.to_string());
        let (pair, port) = match s.split_once('@') {
            Some((p, w)) => (p, w.trim().parse().map_err(|_| bad())?),
            None => (s, 0),
        };
        let (a, b) = pair.split_once(':').ok_or_else(bad)?;
        Ok(Circuit {
            src_rack: a.trim().parse().map_err(|_| bad())?,
            dst_rack: b.trim().parse().map_err(|_| bad())?,
            port,
        })
    }
}

/// A matching: input port (src rack, port) → destination rack.
pub type Matching = BTreeMap<(u32, u32), u32>;

/// Checks that `circuits` form a matching of a fabric with `racks` racks
/// and `ports` ports per rack, with at most one circuit per rack pair (what
/// the tc-mirred datapath can route).
pub fn validate(racks: u32, ports: u32, circuits: &[Circuit]) -> Result<Matching, MatchingError> {
    check(racks, ports, circuits, false)
}

/// As [`validate`], but a rack pair may be joined by several circuits on
/// different wavelengths (the eBPF datapath spreads its flows over them).
pub fn validate_multipath(racks: u32, ports: u32, circuits: &[Circuit]) -> Result<Matching, MatchingError> {
    check(racks, ports, circuits, true)
}

fn check(racks: u32, ports: u32, circuits: &[Circuit], multipath: bool) -> Result<Matching, MatchingError> {
    let mut inputs: BTreeMap<(u32, u32), Circuit> = BTreeMap::new();
    let mut outputs: BTreeMap<(u32, u32), Circuit> = BTreeMap::new();
    let mut pairs: BTreeMap<(u32, u32), Circuit> = BTreeMap::new();
    for &c in circuits {
        let name = c.to_string();
        for r in [c.src_rack, c.dst_rack] {
            if r >= racks {
                return Err(MatchingError::NoSuchRack(name, r, racks));
            }
        }
        if c.port >= ports {
            return Err(MatchingError::NoSuchPort(name, c.port, ports));
        }
        if c.src_rack == c.dst_rack {
            return Err(MatchingError::Loop(name));
        }
        if let Some(o) = inputs.insert((c.src_rack, c.port), c) {
            return Err(MatchingError::InputTaken(o.to_string(), name, c.src_rack, c.port));
        }
        if let Some(o) = outputs.insert((c.dst_rack, c.port), c) {
            return Err(MatchingError::OutputTaken(
                o.to_string(),
                name,
                c.dst_rack,
                c.port,
            ));
        }
        if let Some(o) = pairs.insert((c.src_rack, c.dst_rack), c) {
            if !multipath {
                return Err(MatchingError::SamePair(o.to_string(), name));
            }
        }
    }
    Ok(inputs.into_iter().map(|(k, c)| (k, c.dst_rack)).collect())
}

/// The circuits of a matching, in port order.
pub fn circuits_of(m: &Matching) -> Vec<Circuit> {
    m.iter()
        .map(|(&(src_rack, port), &dst_rack)| Circuit {
            src_rack,
            dst_rack,
            port,
        })
        .collect()
}

/// Not-all-stop difference: (circuits to tear down, circuits to set up,
/// number kept). A port whose circuit is unchanged appears in neither list.
pub fn diff(old: &Matching, new: &Matching) -> (Vec<Circuit>, Vec<Circuit>, usize) {
    let down = circuits_of(old)
        .into_iter()
        .filter(|c| new.get(&(c.src_rack, c.port)) != Some(&c.dst_rack))
        .collect();
    let up = circuits_of(new)
        .into_iter()
        .filter(|c| old.get(&(c.src_rack, c.port)) != Some(&c.dst_rack))
        .collect();
    let kept = new.iter().filter(|(k, v)| old.get(k) == Some(v)).count();
    (down, up, kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(src_rack: u32, dst_rack: u32, port: u32) -> Circuit {
        Circuit {
            src_rack,
            dst_rack,
            port,
        }
    }

    #[test]
    fn a_matching_holds_one_circuit_per_port() {
        assert!(validate(3, 1, &[c(0, 1, 0), c(1, 2, 0), c(2, 0, 0)]).is_ok());
        assert!(matches!(
            validate(3, 1, &[c(0, 1, 0), c(0, 2, 0)]),
            Err(MatchingError::InputTaken(..))
        ));
        assert!(matches!(
            validate(3, 1, &[c(0, 1, 0), c(2, 1, 0)]),
            Err(MatchingError::OutputTaken(..))
        ));
        assert!(matches!(
            validate(3, 1, &[c(1, 1, 0)]),
            Err(MatchingError::Loop(_))
        ));
        assert!(matches!(
            validate(3, 1, &[c(0, 3, 0)]),
            Err(MatchingError::NoSuchRack(..))
        ));
        assert!(matches!(
            validate(3, 1, &[c(0, 1, 1)]),
            Err(MatchingError::NoSuchPort(..))
        ));
        assert!(matches!(
            validate(3, 2, &[c(0, 1, 0), c(0, 1, 1)]),
            Err(MatchingError::SamePair(..))
        ));
    }

    #[test]
    fn only_changed_ports_go_dark() {
        let old = validate(4, 1, &[c(0, 1, 0), c(2, 3, 0)]).unwrap();
        let new = validate(4, 1, &[c(0, 1, 0), c(2, 0, 0), c(3, 2, 0)]).unwrap();
        let (down, up, kept) = diff(&old, &new);
        assert_eq!(down, vec![c(2, 3, 0)]);
        assert_eq!(up, vec![c(2, 0, 0), c(3, 2, 0)]);
        assert_eq!(kept, 1);
        let (down, up, kept) = diff(&new, &new);
        assert!(down.is_empty() && up.is_empty());
        assert_eq!(kept, 3);
    }
}
