//! What goes into the engine ([`Event`]) and what comes out ([`Command`]).
//! A driver turns real or simulated happenings into events and carries out
//! the commands; the engine never learns which driver it runs under.

use crate::model::coflow::{FlowId, FlowSpec};
use crate::model::job::TaskId;
use crate::{Bytes, HostId, Nanos};
use serde::{Deserialize, Serialize};
use std::fmt;

/// One attempt at running a task (speculation and re-execution after a
/// host failure make several attempts of one task).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct AttemptId {
    /// The task.
    pub task: TaskId,
    /// 0 for the first attempt, then 1, 2, ...
    pub n: u32,
}

impl fmt::Display for AttemptId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.task, self.n)
    }
}

/// A link whose load a driver measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Link {
    /// Host → ToR.
    HostUp(HostId),
    /// ToR → host.
    HostDown(HostId),
    /// ToR → EPS core (the rack's cross-rack uplink).
    RackUp(u32),
    /// EPS core → ToR.
    RackDown(u32),
    /// An OCS port (wavelength `port` of `rack`), sending side.
    OcsPort {
        /// Rack.
        rack: u32,
        /// Port index.
        port: u32,
    },
}

/// A load measurement of one link.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinkLoad {
    /// Which link.
    pub link: Link,
    /// Fraction of its capacity in use, 0..=1.
    pub utilization: f64,
}

/// A circuit of the OCS: `src_rack` → `dst_rack` on wavelength `port`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Circuit {
    /// Sending rack.
    pub src_rack: u32,
    /// Receiving rack.
    pub dst_rack: u32,
    /// Port (wavelength) index.
    pub port: u32,
}

/// Something that happened, fed to [`super::Engine::handle`].
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// The time the engine asked for in [`super::Engine::next_wakeup`] has
    /// come (job arrivals, policy wake-ups, heartbeats). Every event also
    /// processes the arrivals due by its time.
    Wakeup,
    /// An attempt finished its compute (a map wrote its output).
    TaskFinished {
        /// The attempt.
        attempt: AttemptId,
        /// Where it ran.
        host: HostId,
        /// For a map, the bytes of output it wrote (`None`: as the job
        /// model says).
        output: Option<Bytes>,
    },
    /// A flow delivered its last byte.
    FlowFinished {
        /// The flow.
        flow: FlowId,
        /// Bytes it sent over EPS.
        eps_bytes: Bytes,
        /// Bytes it sent over circuits.
        ocs_bytes: Bytes,
    },
    /// An OCS circuit came up or went down.
    Circuit {
        /// The circuit.
        circuit: Circuit,
        /// Up (carrying) or down (dark).
        up: bool,
    },
    /// A measurement of link loads.
    LoadSample(Vec<LinkLoad>),
    /// A host stopped answering: its attempts are lost, its map outputs
    /// that reduces still need are re-run elsewhere.
    HostDead(HostId),
    /// A host is back (empty).
    HostAlive(HostId),
    /// A host's compute speed changed (a CPU straggler began or ended; see
    /// `ocslab_scheduler::perturb`): attempts computing there finish later or sooner,
    /// announced as [`Command::Retime`].
    HostSpeed {
        /// The host.
        host: HostId,
        /// Its new relative speed (> 0; 1.0 = nominal).
        speed: f64,
    },
}

/// Something the driver must do, returned by [`super::Engine::handle`].
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    /// Occupy a slot on `host` for `attempt`. What the attempt needs next
    /// comes as [`Command::StartFlows`] (input read, shuffle fetches) and
    /// [`Command::Compute`].
    StartTask {
        /// The attempt.
        attempt: AttemptId,
        /// Where.
        host: HostId,
    },
    /// Start moving these flows (report each with [`Event::FlowFinished`]).
    StartFlows(Vec<FlowSpec>),
    /// The attempt has its inputs: compute for `duration` (already divided
    /// by the host's speed), then report [`Event::TaskFinished`].
    Compute {
        /// The attempt.
        attempt: AttemptId,
        /// Where it runs.
        host: HostId,
        /// Expected compute time on this host.
        duration: Nanos,
    },
    /// The compute of `attempt` (already announced by [`Command::Compute`])
    /// now ends `remaining` from the event's time, because its host's speed
    /// changed ([`Event::HostSpeed`]). A simulating driver moves its timer;
    /// an emulating driver whose host really slowed down may ignore it.
    Retime {
        /// The attempt.
        attempt: AttemptId,
        /// Where it runs.
        host: HostId,
        /// Compute time left at the new speed.
        remaining: Nanos,
    },
    /// Stop this attempt (another attempt of its task won); its slot is
    /// already free in the engine, and its flows are abandoned.
    KillTask {
        /// The attempt.
        attempt: AttemptId,
        /// Where it runs.
        host: HostId,
    },
}
