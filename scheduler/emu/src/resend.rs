//! Flows sent again after a failed send.
//!
//! A send fails at an end when its connection breaks, when the receiver gets
//! fewer bytes than the header announced, or when the bytes arrive with the
//! wrong checksum. The flow is then sent again from its first byte, after a
//! back-off that doubles (250 ms, 500 ms, 1 s), so that an end whose agent
//! died is declared dead first and its flows are written off instead
//! (`EmuNetwork::host_dead`). A flow whose [`MAX_SENDS`] sends all fail ends
//! the run with an error naming it and every reason.
//!
//! Both ends may report one failed send (the sender's connection reset and
//! the receiver's short read). A report counts only if it is about the
//! current send: stamped no earlier than the time that send was issued (the
//! agents and the driver share one monotonic clock), and not while a resend
//! is already pending. Pure bookkeeping: times are arguments.

use ocslab_core::model::coflow::FlowId;
use ocslab_emulator::Nanos;
use std::collections::BTreeMap;

/// Sends of one flow at most: the first and three more.
pub const MAX_SENDS: u32 = 4;

/// The wait before the first resend; each further one waits twice as long.
pub const FIRST_BACKOFF: Nanos = Nanos::from_millis(250);

/// What to do about a reported failure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// It is about an earlier send, or one already counted: nothing.
    Stale,
    /// Send the flow again at this experiment time.
    ResendAt(Nanos),
    /// Every send failed: the reasons, first send first.
    GiveUp(Vec<String>),
}

#[derive(Clone, Debug, Default)]
struct Failing {
    reasons: Vec<String>,
    /// When the current send was issued (the shared clock), if it was resent.
    issued: Option<Nanos>,
    /// When the pending resend is due (experiment time).
    due: Option<Nanos>,
}

/// Every flow with a failed send that has not arrived since.
#[derive(Clone, Debug, Default)]
pub struct Resends {
    flows: BTreeMap<FlowId, Failing>,
    /// Sends issued again, in all.
    resent: u64,
}

impl Resends {
    /// `flow`'s send that began by `at` (shared clock) failed for `reason`,
    /// reported at experiment time `now`.
    pub fn failed(&mut self, flow: FlowId, at: Nanos, now: Nanos, reason: String) -> Verdict {
        let f = self.flows.entry(flow).or_default();
        if f.due.is_some() || f.issued.is_some_and(|t| at < t) {
            return Verdict::Stale;
        }
        f.reasons.push(reason);
        let failures = f.reasons.len() as u32;
        if failures >= MAX_SENDS {
            return Verdict::GiveUp(std::mem::take(&mut f.reasons));
        }
        let due = now + Nanos(FIRST_BACKOFF.0 << (failures - 1));
        f.due = Some(due);
        Verdict::ResendAt(due)
    }

    /// The earliest pending resend.
    pub fn next_due(&self) -> Option<Nanos> {
        self.flows.values().filter_map(|f| f.due).min()
    }

    /// The flows whose resend is due at `now`, issued at `issued` (shared
    /// clock): later reports about their failed sends are stale.
    pub fn take_due(&mut self, now: Nanos, issued: Nanos) -> Vec<FlowId> {
        let mut out = Vec::new();
        for (id, f) in self.flows.iter_mut() {
            if f.due.is_some_and(|t| t <= now) {
                f.due = None;
                f.issued = Some(issued);
                out.push(*id);
            }
        }
        self.resent += out.len() as u64;
        out
    }

    /// `flow` arrived whole, or was written off: it is no longer watched.
    pub fn forget(&mut self, flow: FlowId) {
        self.flows.remove(&flow);
    }

    /// Each flow that failed and has not arrived since, with its last
    /// failure's reason, by id.
    pub fn failing(&self) -> impl Iterator<Item = (FlowId, &str)> + '_ {
        self.flows
            .iter()
            .filter_map(|(id, f)| f.reasons.last().map(|r| (*id, r.as_str())))
    }

    /// Sends issued again so far.
    pub fn resent(&self) -> u64 {
        self.resent
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const F: FlowId = FlowId(7);

    #[test]
    fn a_failed_send_is_resent_after_a_doubling_back_off_then_given_up() {
        let mut r = Resends::default();
        let ms = Nanos::from_millis;
        assert_eq!(
            r.failed(F, ms(10), ms(12), "reset".into()),
            Verdict::ResendAt(ms(262))
        );
        assert_eq!(r.next_due(), Some(ms(262)));
        assert!(r.take_due(ms(261), ms(1261)).is_empty(), "not before it is due");
        assert_eq!(r.take_due(ms(262), ms(1262)), vec![F]);
        assert_eq!(r.next_due(), None);
        assert_eq!(
            r.failed(F, ms(1300), ms(300), "short".into()),
            Verdict::ResendAt(ms(800))
        );
        assert_eq!(r.take_due(ms(800), ms(1800)), vec![F]);
        assert_eq!(
            r.failed(F, ms(1900), ms(900), "crc".into()),
            Verdict::ResendAt(ms(1900))
        );
        assert_eq!(r.take_due(ms(1900), ms(2900)), vec![F]);
        assert_eq!(
            r.failed(F, ms(3000), ms(2000), "reset".into()),
            Verdict::GiveUp(vec!["reset".into(), "short".into(), "crc".into(), "reset".into()])
        );
        assert_eq!(r.resent(), 3);
    }

    #[test]
    fn the_other_end_of_a_counted_send_and_an_earlier_send_are_stale() {
        let mut r = Resends::default();
        let ms = Nanos::from_millis;
        assert!(matches!(
            r.failed(F, ms(10), ms(10), "sender: reset".into()),
            Verdict::ResendAt(_)
        ));
        assert_eq!(
            r.failed(F, ms(11), ms(11), "receiver: short".into()),
            Verdict::Stale
        );
        r.take_due(ms(260), ms(1260));
        // The receiver's report of the first send, late: stamped before the resend.
        assert_eq!(
            r.failed(F, ms(1100), ms(270), "receiver: short".into()),
            Verdict::Stale
        );
        assert!(matches!(
            r.failed(F, ms(1300), ms(300), "crc".into()),
            Verdict::ResendAt(_)
        ));
    }

    #[test]
    fn a_flow_written_off_while_a_resend_is_pending_is_not_resent() {
        let mut r = Resends::default();
        let ms = Nanos::from_millis;
        r.failed(F, ms(10), ms(10), "reset".into());
        assert_eq!(r.failing().collect::<Vec<_>>(), [(F, "reset")]);
        r.forget(F);
        assert_eq!(r.failing().count(), 0);
        assert_eq!(r.next_due(), None);
        assert!(r.take_due(ms(1000), ms(2000)).is_empty());
        assert_eq!(r.resent(), 0);
    }
}
