//! Which OCS port sides Sunflow's reservations hold during one greedy
//! pass: one flag per sending side (rack, port) and per receiving side.

use super::Reservation;
use std::collections::BTreeMap;

/// Which port sides are reserved, during a greedy pass: the sending side
/// (rack, port) and the receiving side (rack, port), one flag per side.
pub(super) struct PortSides {
    ports: u32,
    tx: Vec<bool>,
    rx: Vec<bool>,
}

impl PortSides {
    /// The sides `reservations` hold, on `racks` racks of `ports` ports.
    pub(super) fn of(racks: u32, ports: u32, reservations: &BTreeMap<(u32, u32), Reservation>) -> PortSides {
        let n = racks as usize * ports as usize;
        let mut sides = PortSides {
            ports,
            tx: vec![false; n],
            rx: vec![false; n],
        };
        for (&(i, w), r) in reservations {
            sides.take(i, r.dst, w);
        }
        sides
    }

    fn at(&self, rack: u32, port: u32) -> usize {
        rack as usize * self.ports as usize + port as usize
    }

    /// The ports whose sending side at `i` and receiving side at `j` are
    /// both free, in port order (a rack outside the fabric has none).
    pub(super) fn free(&self, i: u32, j: u32) -> impl Iterator<Item = u32> + Clone + '_ {
        (0..self.ports).filter(move |&w| {
            self.tx.get(self.at(i, w)) == Some(&false) && self.rx.get(self.at(j, w)) == Some(&false)
        })
    }

    /// Port `w`'s sending side at `i` and receiving side at `j` are taken.
    pub(super) fn take(&mut self, i: u32, j: u32, w: u32) {
        let (t, r) = (self.at(i, w), self.at(j, w));
        if let Some(side) = self.tx.get_mut(t) {
            *side = true;
        }
        if let Some(side) = self.rx.get_mut(r) {
            *side = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::coflow::CoflowId;

    #[test]
    fn a_port_is_free_for_a_pair_when_both_its_sides_are() {
        let held = |dst| Reservation {
            coflow: CoflowId(1),
            dst,
        };
        // Three racks, two ports; 0 -> 1 holds port 0.
        let mut sides = PortSides::of(3, 2, &BTreeMap::from([((0, 0), held(1))]));
        assert_eq!(sides.free(0, 2).collect::<Vec<_>>(), vec![1]);
        assert_eq!(sides.free(2, 1).collect::<Vec<_>>(), vec![1]);
        assert_eq!(sides.free(2, 0).collect::<Vec<_>>(), vec![0, 1]);
        sides.take(2, 0, 1);
        assert_eq!(sides.free(2, 0).collect::<Vec<_>>(), vec![0]);
        assert_eq!(sides.free(1, 0).collect::<Vec<_>>(), vec![0]);
        assert_eq!(
            sides.free(5, 0).count(),
            0,
            "a rack outside the fabric has no port"
        );
    }
}
