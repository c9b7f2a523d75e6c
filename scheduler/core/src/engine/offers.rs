//! Heartbeat-style offers: after each event the engine offers free slots
//! to the policy, one slot per host per pass, round-robin over hosts (as
//! Hadoop's heartbeats arrive host by host), until the policy declines on
//! every host or nothing runnable is left.
//!
//! Which hosts: after an event that made work runnable (a job arrived, a
//! slow-start gate opened, a task was lost), on a wake-up, a heartbeat or a
//! load sample, every host with a free slot, starting after the host that
//! last took a task; otherwise only the hosts the event freed a slot on.

use super::view::ClusterView;
use super::Engine;
use crate::Nanos;

impl Engine {
    /// Runs one offer round at `now`.
    pub(super) fn offer_round(&mut self, now: Nanos, force_all: bool) {
        let all = force_all || self.new_work;
        self.new_work = false;
        let freed = std::mem::take(&mut self.freed);
        let mut hosts: Vec<usize> = if all {
            self.last_round = now;
            let (after, before): (Vec<usize>, Vec<usize>) =
                self.free_hosts.iter().partition(|&&h| h >= self.cursor);
            after.into_iter().chain(before).collect()
        } else {
            freed
                .into_iter()
                .filter(|h| self.free_hosts.contains(h))
                .collect()
        };
        let idle_offers = self.policy.wants_idle_offers();
        while !hosts.is_empty() {
            let mut again = Vec::new();
            for hi in hosts {
                if !idle_offers && self.c.runnable_maps + self.c.runnable_reduces == 0 {
                    return;
                }
                let free = self.c.hosts[hi].free();
                let useful = idle_offers
                    || (free.map > 0 && self.c.runnable_maps > 0)
                    || (free.reduce > 0 && self.c.runnable_reduces > 0);
                if !useful {
                    continue;
                }
                let host = self.c.hosts[hi].id;
                let view = ClusterView { c: &self.c };
                let Some(choice) = self.policy.on_free_slot(now, &view, host) else {
                    continue;
                };
                if self.launch(now, hi, choice) {
                    self.cursor = hi + 1;
                    if self.c.hosts[hi].free().any() {
                        again.push(hi);
                    }
                }
            }
            hosts = again;
        }
    }
}
