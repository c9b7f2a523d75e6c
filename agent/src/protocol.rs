//! The typed, versioned messages between the scheduler and the agents, and
//! the headers of data-plane streams.
//!
//! A control connection (QUIC, see [`crate::control`]) carries one
//! bidirectional stream of length-delimited JSON frames ([`crate::frame`]):
//!
//! 1. the agent sends a [`Hello`] (its first field is [`Hello::version`]);
//! 2. the scheduler answers a [`HelloReply`]: `Welcome` (same version, the
//!    heartbeat interval to use) or `Refused` with a reason, then closes;
//! 3. from then on the scheduler sends [`Command`]s and the agent sends
//!    [`AgentMsg`]s, each side in order.
//!
//! A data-plane stream (TCP, or a QUIC stream) starts with a [`DataHeader`]
//! from the sender, carries exactly `bytes` bytes of partition content, and
//! ends with a [`DataAck`] from the receiver.
//!
//! Times on the wire are [`Nanos`] of the box's monotonic clock
//! ([`crate::clock`]), shared by every process on the machine whatever its
//! network namespace, so a first byte stamped by one agent and a last byte
//! stamped by another can be subtracted. Units travel as plain integers in
//! their base unit (ns, bytes, bit/s): human-readable unit strings round to
//! four digits and would lose nanoseconds.

use ocslab_emulator::{Bps, Bytes, HostId, Nanos};
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;

/// The protocol version this build speaks. A hello carrying another version
/// is refused, naming both.
///
/// Version 2 added [`Command::SetSpeed`] and [`Command::RetimeTask`] (and made
/// a task's `compute` its nominal time, stretched by the agent's speed); a
/// version-1 agent could not decode them and would drop its connection, so
/// the handshake refuses it instead.
pub const PROTOCOL_VERSION: u32 = 2;

/// The TOS byte that marks a packet as OCS-bound: ToRs route it by policy
/// (`ip rule add tos 0x08 lookup 100`) to the circuit when one is up. Only
/// RFC 1349 TOS bits are accepted by this kernel's fib rules.
pub const OCS_TOS: u8 = 0x08;

/// The DSCP block whose value `OCS_WAVELENGTH_DSCP + w` marks a packet for
/// the circuit on wavelength (OCS port) `w` of its rack pair: the eBPF
/// datapath's ToR takes that circuit while it is usable, another circuit of
/// the pair otherwise, EPS when none is (`emulator/bpf/ocs.bpf.c`). The
/// tc-mirred datapath's fib rules match only [`OCS_TOS`].
pub const OCS_WAVELENGTH_DSCP: u8 = 32;

/// Wavelengths a mark can name: `w < MARKED_WAVELENGTHS` (the DSCP's six bits).
pub const MARKED_WAVELENGTHS: u32 = 32;

/// The TOS byte that marks a packet for the circuit on wavelength `w` of
/// its rack pair (DSCP [`OCS_WAVELENGTH_DSCP`] + w), if a mark can name it.
pub fn wavelength_tos(w: u32) -> Option<u8> {
    (w < MARKED_WAVELENGTHS).then(|| (OCS_WAVELENGTH_DSCP + w as u8) << 2)
}

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub u64);

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{}#{}", stringify!($name), self.0)
            }
        }
    };
}

id_type!(
    /// A task, numbered by the scheduler (unique within a run).
    TaskId
);
id_type!(
    /// A flow, numbered by the scheduler (unique within a run).
    FlowId
);
id_type!(
    /// A job, numbered by the scheduler.
    JobId
);

/// Which partition a flow carries: the output of map `map` of job `job` for
/// reducer `reduce`. Its content is a deterministic function of this key and
/// its size ([`crate::content`]), so a receiver verifies it without storing it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct PartitionId {
    /// The job.
    pub job: JobId,
    /// The map task's index within the job.
    pub map: u32,
    /// The reducer's index within the job.
    pub reduce: u32,
    /// The experiment's seed.
    pub seed: u64,
}

/// Which network a flow is routed over.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Path {
    /// The electrical packet-switched network (unmarked packets).
    #[default]
    Eps,
    /// The optical circuit switch: packets marked with [`OCS_TOS`].
    Ocs,
}

impl Path {
    /// The TOS byte the sender's socket carries on this path.
    pub fn tos(self) -> u8 {
        match self {
            Path::Eps => 0,
            Path::Ocs => OCS_TOS,
        }
    }
}

/// The transport of a data-plane flow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    /// The kernel's TCP (the default: its congestion control shares links fairly).
    #[default]
    Tcp,
    /// QUIC (quinn) over UDP, one stream per flow.
    Quic,
}

/// Serde helpers that put unit types on the wire as plain integers in their
/// base unit (ns, bytes, bit/s).
pub mod raw {
    use ocslab_emulator::{Bps, Bytes, Nanos};
    use serde::{Deserialize, Deserializer, Serializer};

    /// A unit type that is a `u64` in its base unit.
    pub trait Raw: Copy {
        /// The value in the base unit.
        fn raw(self) -> u64;
        /// From a value in the base unit.
        fn from_raw(v: u64) -> Self;
    }
    macro_rules! raw_impl {
        ($($t:ty),*) => {$(
            impl Raw for $t {
                fn raw(self) -> u64 { self.0 }
                fn from_raw(v: u64) -> Self { Self(v) }
            }
        )*};
    }
    raw_impl!(Bps, Bytes, Nanos);

    /// Serializes as an integer.
    pub fn serialize<T: Raw, S: Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(v.raw())
    }
    /// Deserializes from an integer.
    pub fn deserialize<'de, T: Raw, D: Deserializer<'de>>(d: D) -> Result<T, D::Error> {
        u64::deserialize(d).map(T::from_raw)
    }

    /// The same for `Option<T>` (`null` for `None`).
    pub mod opt {
        use super::Raw;
        use serde::{Deserialize, Deserializer, Serializer};
        /// Serializes as an integer or `null`.
        pub fn serialize<T: Raw, S: Serializer>(v: &Option<T>, s: S) -> Result<S::Ok, S::Error> {
            match v {
                Some(v) => s.serialize_some(&v.raw()),
                None => s.serialize_none(),
            }
        }
        /// Deserializes from an integer or `null`.
        pub fn deserialize<'de, T: Raw, D: Deserializer<'de>>(d: D) -> Result<Option<T>, D::Error> {
            Option::<u64>::deserialize(d).map(|o| o.map(T::from_raw))
        }
    }

    /// The same for `Vec<T>` (an array of integers).
    pub mod vec {
        use super::Raw;
        use serde::{ser::SerializeSeq, Deserialize, Deserializer, Serializer};
        /// Serializes as an array of integers.
        pub fn serialize<T: Raw, S: Serializer>(v: &[T], s: S) -> Result<S::Ok, S::Error> {
            let mut seq = s.serialize_seq(Some(v.len()))?;
            for x in v {
                seq.serialize_element(&x.raw())?;
            }
            seq.end()
        }
        /// Deserializes from an array of integers.
        pub fn deserialize<'de, T: Raw, D: Deserializer<'de>>(d: D) -> Result<Vec<T>, D::Error> {
            Vec::<u64>::deserialize(d).map(|v| v.into_iter().map(T::from_raw).collect())
        }
    }
}

// ---------------------------------------------------------------- handshake

/// The agent's first frame on the control stream.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    /// The protocol version the agent speaks ([`PROTOCOL_VERSION`]).
    pub version: u32,
    /// Which host the agent runs on.
    pub host: HostId,
    /// The agent's process id (for memory figures and for killing it).
    pub pid: u32,
    /// Where its data plane listens (TCP, and UDP for QUIC, same port).
    pub data_addr: SocketAddr,
    /// How many tasks it runs at once.
    pub slots: u32,
}

/// Only the version of a hello: read first, so a hello of another version
/// whose other fields changed is still refused with a clear reason.
#[derive(Deserialize)]
pub struct VersionProbe {
    /// The version the peer speaks.
    pub version: u32,
}

/// The scheduler's answer to a [`Hello`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum HelloReply {
    /// Accepted: send heartbeats every `heartbeat_interval`.
    Welcome {
        /// The scheduler's protocol version.
        version: u32,
        /// How often to send a [`Heartbeat`].
        #[serde(with = "raw")]
        heartbeat_interval: Nanos,
    },
    /// Refused; the connection closes.
    Refused {
        /// Why, and what would be accepted.
        reason: String,
    },
}

// ---------------------------------------------------------------- commands

/// A host's compute speed relative to nominal, in millionths (1 000 000 =
/// nominal, 500 000 = half speed): an integer on the wire like every other
/// unit. A compute phase of nominal length `t` takes `t / speed`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Speed(pub u32);

impl Speed {
    /// Nominal speed (1.0).
    pub const NOMINAL: Speed = Speed(1_000_000);

    /// The speed of a relative factor (`0.5`: half speed), rounded to
    /// millionths; `None` unless finite, > 0 and at most 4000.
    pub fn from_factor(factor: f64) -> Option<Speed> {
        let m = (factor * 1e6).round();
        (factor.is_finite() && factor > 0.0 && (1.0..=4e9).contains(&m)).then_some(Speed(m as u32))
    }

    /// The relative factor (1.0 = nominal).
    pub fn factor(self) -> f64 {
        f64::from(self.0) / 1e6
    }

    /// How long `nominal` of compute takes at this speed (rounded to the ns).
    pub fn stretch(self, nominal: Nanos) -> Nanos {
        if self == Speed::NOMINAL || self.0 == 0 {
            return nominal;
        }
        let ns = u128::from(nominal.0) * 1_000_000 / u128::from(self.0);
        Nanos(u64::try_from(ns).unwrap_or(u64::MAX))
    }
}

impl Default for Speed {
    fn default() -> Speed {
        Speed::NOMINAL
    }
}

impl std::fmt::Display for Speed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}x", self.factor())
    }
}

/// A map task: read an input block, compute, write one partition per reducer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MapTask {
    /// The task.
    pub task: TaskId,
    /// Its job.
    pub job: JobId,
    /// Its index within the job.
    pub map: u32,
    /// The experiment's seed (keys the input and partition content).
    pub seed: u64,
    /// Size of the input block.
    #[serde(with = "raw")]
    pub input: Bytes,
    /// Nominal compute time (at speed 1), spent after reading the input,
    /// stretched by the agent's [`Speed`].
    #[serde(with = "raw")]
    pub compute: Nanos,
    /// Size of the partition for each reducer, indexed by reducer.
    #[serde(with = "raw::vec")]
    pub partitions: Vec<Bytes>,
}

/// One partition a reduce task needs: which flow brings it, from where.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReduceInput {
    /// The flow that carries it (started by the scheduler at `from`).
    pub flow: FlowId,
    /// The host that sends it (the map's host).
    pub from: HostId,
    /// Which partition.
    pub partition: PartitionId,
    /// Its size.
    #[serde(with = "raw")]
    pub bytes: Bytes,
}

/// A reduce task: wait until every input partition has arrived and verified,
/// then compute.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReduceTask {
    /// The task.
    pub task: TaskId,
    /// Its job.
    pub job: JobId,
    /// Its index within the job.
    pub reduce: u32,
    /// Nominal compute time (at speed 1), spent after the last input
    /// arrived, stretched by the agent's [`Speed`].
    #[serde(with = "raw")]
    pub compute: Nanos,
    /// The partitions to receive.
    pub inputs: Vec<ReduceInput>,
}

/// A flow to send from the agent that receives this command.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlowSpec {
    /// The flow.
    pub flow: FlowId,
    /// The partition it carries.
    pub partition: PartitionId,
    /// How many bytes to send.
    #[serde(with = "raw")]
    pub bytes: Bytes,
    /// The receiving host.
    pub dst: HostId,
    /// The receiving agent's data address.
    pub dst_addr: SocketAddr,
    /// EPS or OCS.
    pub path: Path,
    /// Pacing rate; `None` sends as fast as the transport allows.
    #[serde(with = "raw::opt")]
    pub rate: Option<Bps>,
    /// Create the flow without sending (not even connecting) until released.
    pub held: bool,
    /// TCP or QUIC.
    pub transport: Transport,
    /// On the OCS path, the wavelength (OCS port) whose circuit the flow
    /// was planned on, named in its packets' mark ([`FlowSpec::tos`]);
    /// `None`: any circuit of its rack pair.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wavelength: Option<u32>,
    /// The flow queue its packets take on every shaped link, which the
    /// scheduler picks so that flows meeting at a link do not share one
    /// ([`FlowQueue`]); `None`: the one its source port happens to hash to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<FlowQueue>,
}

/// A flow queue of the fabric's shaped links (`docs/fabric.md`, flow
/// queues): queue `index` of the `count` each link's data class is split
/// into. A sender, TCP or QUIC, binds a source port that the links' hash
/// maps to it ([`ocslab_emulator::fabric::htb::FlowQueues::ports`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct FlowQueue {
    /// The queue, below `count`.
    pub index: u16,
    /// Queues per link, a power of two.
    pub count: u16,
}

impl FlowSpec {
    /// The TOS byte of the flow's packets: its path's
    /// ([`Path::tos`]), or on the OCS path the one naming its wavelength
    /// (DSCP [`OCS_WAVELENGTH_DSCP`] + w) if it has one that a mark can name.
    pub fn tos(&self) -> u8 {
        match (self.path, self.wavelength.and_then(wavelength_tos)) {
            (Path::Ocs, Some(tos)) => tos,
            (path, _) => path.tos(),
        }
    }
}

/// A command from the scheduler to one agent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Command {
    /// Run a map task in a free slot.
    RunMap(MapTask),
    /// Run a reduce task in a free slot.
    RunReduce(ReduceTask),
    /// Create a flow at this (sending) agent.
    StartFlow(FlowSpec),
    /// Let a held flow send (connect first if it never did).
    ReleaseFlow {
        /// The flow.
        flow: FlowId,
    },
    /// Pause a flow between two writes (its connection stays open). A
    /// flow that has written its last byte ends as usual.
    HoldFlow {
        /// The flow.
        flow: FlowId,
    },
    /// Change a flow's pacing rate (`None`: unpaced), at once, also
    /// during a wait for the pacer.
    SetRate {
        /// The flow.
        flow: FlowId,
        /// The new rate.
        #[serde(with = "raw::opt")]
        rate: Option<Bps>,
    },
    /// Stop a running task; it is reported as failed with reason `killed`.
    KillTask {
        /// The task.
        task: TaskId,
    },
    /// From now on this host computes at `speed` (a slow host, or a CPU
    /// straggler beginning or ending): compute phases that begin after this
    /// take their nominal time divided by it. Phases already running keep
    /// their end; the scheduler moves it with [`Command::RetimeTask`].
    SetSpeed {
        /// The new speed.
        speed: Speed,
    },
    /// The compute of a running task now ends `remaining` after this command
    /// is received (its host's speed changed). A task still reading its input
    /// or waiting for partitions computes for `remaining` once it gets there,
    /// not stretched again. Unknown tasks (already finished) are ignored.
    RetimeTask {
        /// The task.
        task: TaskId,
        /// Compute time left, at the host's new speed.
        #[serde(with = "raw")]
        remaining: Nanos,
    },
    /// Answer with a [`AgentMsg::Pong`] carrying the same nonce.
    Ping {
        /// Echoed back.
        nonce: u64,
    },
    /// Stop everything and exit.
    Shutdown,
}

// ---------------------------------------------------------------- agent messages

/// What a task is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskPhase {
    /// A map reading its input block.
    Input,
    /// A reduce waiting for its partitions.
    Fetch,
    /// Spending its compute time.
    Compute,
}

/// Progress of one running task.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskProgress {
    /// The task.
    pub task: TaskId,
    /// Its phase.
    pub phase: TaskPhase,
    /// Bytes done in this phase's data (input read, partitions received).
    #[serde(with = "raw")]
    pub done: Bytes,
    /// Bytes of this phase's data in all.
    #[serde(with = "raw")]
    pub total: Bytes,
}

/// Which end of a flow an agent is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlowRole {
    /// It sends.
    Sender,
    /// It receives.
    Receiver,
}

/// State of a flow at one end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlowState {
    /// Created held, or held again; nothing is sent.
    Held,
    /// Connecting to the receiver.
    Connecting,
    /// Moving bytes.
    Active,
}

/// Progress of one flow at one end.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlowProgress {
    /// The flow.
    pub flow: FlowId,
    /// This end.
    pub role: FlowRole,
    /// Its state.
    pub state: FlowState,
    /// Bytes sent (sender) or received (receiver) so far.
    #[serde(with = "raw")]
    pub bytes: Bytes,
}

/// Sent every heartbeat interval; a missing one marks the host dead.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Heartbeat {
    /// Counts from 0.
    pub seq: u64,
    /// When it was sent.
    #[serde(with = "raw")]
    pub at: Nanos,
    /// Slots with no task.
    pub free_slots: u32,
    /// Running tasks.
    pub tasks: Vec<TaskProgress>,
    /// Flows in progress at this agent.
    pub flows: Vec<FlowProgress>,
}

/// One partition written by a map task.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionOutput {
    /// The partition.
    pub partition: PartitionId,
    /// Its size.
    #[serde(with = "raw")]
    pub bytes: Bytes,
    /// CRC-32 (IEEE) of its content.
    pub checksum: u32,
}

/// What a finished task produced.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TaskOutput {
    /// A map: its input's checksum and its partitions.
    Map {
        /// CRC-32 of the input block read.
        input_checksum: u32,
        /// One per reducer.
        partitions: Vec<PartitionOutput>,
    },
    /// A reduce: what it received (all verified).
    Reduce {
        /// Bytes of all its partitions.
        #[serde(with = "raw")]
        bytes_received: Bytes,
        /// How many partitions.
        partitions: u32,
    },
}

/// A task that finished.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskReport {
    /// The task.
    pub task: TaskId,
    /// When it started.
    #[serde(with = "raw")]
    pub started: Nanos,
    /// When it finished.
    #[serde(with = "raw")]
    pub finished: Nanos,
    /// What it produced.
    pub output: TaskOutput,
}

/// Why a task failed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum TaskFailure {
    /// A [`Command::KillTask`] stopped it.
    Killed,
    /// No slot was free when it was given.
    NoFreeSlot,
    /// The task id is already running here.
    Duplicate,
    /// An input partition failed its checksum or came from the wrong host.
    BadInput {
        /// The flow that carried it.
        flow: FlowId,
        /// What was wrong.
        detail: String,
    },
}

/// The sender's account of a flow, once the receiver acknowledged it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlowSent {
    /// The flow.
    pub flow: FlowId,
    /// Payload bytes written.
    #[serde(with = "raw")]
    pub bytes_sent: Bytes,
    /// First byte (the stream header) sent.
    #[serde(with = "raw")]
    pub start: Nanos,
    /// Last payload byte handed to the transport.
    #[serde(with = "raw")]
    pub end: Nanos,
    /// The path it was marked for.
    pub path: Path,
    /// Its transport.
    pub transport: Transport,
    /// The receiver's acknowledgement said all bytes arrived and verified.
    pub receiver_ok: bool,
}

/// The receiver's account of a flow: the figures a CCT is made of.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlowDone {
    /// The flow.
    pub flow: FlowId,
    /// The sending host (from the stream header).
    pub from: HostId,
    /// The partition it carried.
    pub partition: PartitionId,
    /// Payload bytes received.
    #[serde(with = "raw")]
    pub bytes_received: Bytes,
    /// Payload bytes the header announced.
    #[serde(with = "raw")]
    pub bytes_expected: Bytes,
    /// When the sender sent the first byte (its clock; same box, same clock).
    #[serde(with = "raw")]
    pub start: Nanos,
    /// When the first payload byte arrived.
    #[serde(with = "raw")]
    pub first_byte: Nanos,
    /// When the last payload byte arrived.
    #[serde(with = "raw")]
    pub end: Nanos,
    /// CRC-32 of the bytes received.
    pub checksum: u32,
    /// CRC-32 the partition's content has over its first
    /// `bytes_received` bytes.
    pub expected_checksum: u32,
    /// All bytes arrived and the checksums agree.
    pub ok: bool,
}

/// A message from an agent to the scheduler.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentMsg {
    /// Liveness, free slots and progress.
    Heartbeat(Heartbeat),
    /// A task finished.
    TaskDone(TaskReport),
    /// A task failed.
    TaskFailed {
        /// The task.
        task: TaskId,
        /// When.
        #[serde(with = "raw")]
        at: Nanos,
        /// Why.
        failure: TaskFailure,
    },
    /// A flow's first byte left (sender).
    FlowStarted {
        /// The flow.
        flow: FlowId,
        /// When.
        #[serde(with = "raw")]
        at: Nanos,
    },
    /// A flow was sent and acknowledged (sender).
    FlowSent(FlowSent),
    /// A flow was received (receiver).
    FlowDone(FlowDone),
    /// A flow could not be sent or received.
    FlowFailed {
        /// The flow.
        flow: FlowId,
        /// Which end saw it fail.
        role: FlowRole,
        /// When.
        #[serde(with = "raw")]
        at: Nanos,
        /// What happened.
        reason: String,
    },
    /// Answer to [`Command::Ping`].
    Pong {
        /// The ping's nonce.
        nonce: u64,
    },
    /// A command could not be carried out (e.g. an unknown flow).
    Rejected {
        /// What was wrong.
        reason: String,
    },
}

// ---------------------------------------------------------------- data plane

/// The first frame of a data-plane stream, from the sender.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataHeader {
    /// [`PROTOCOL_VERSION`].
    pub version: u32,
    /// The flow.
    pub flow: FlowId,
    /// The sending host.
    pub from: HostId,
    /// The partition that follows.
    pub partition: PartitionId,
    /// How many payload bytes follow.
    #[serde(with = "raw")]
    pub bytes: Bytes,
    /// When this header was sent: the flow's first byte.
    #[serde(with = "raw")]
    pub sent_at: Nanos,
}

/// The receiver's last frame on a data-plane stream.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataAck {
    /// Payload bytes received.
    #[serde(with = "raw")]
    pub bytes: Bytes,
    /// The checksum matched.
    pub ok: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_round_trip_with_exact_units() {
        let cmd = Command::StartFlow(FlowSpec {
            flow: FlowId(7),
            partition: PartitionId {
                job: JobId(1),
                map: 2,
                reduce: 3,
                seed: 42,
            },
            bytes: Bytes(1_234_567_891),
            dst: HostId::new(1, 0),
            dst_addr: "198.18.1.10:7000".parse().unwrap(),
            path: Path::Ocs,
            rate: Some(Bps(123_456_789)),
            held: true,
            transport: Transport::Tcp,
            wavelength: Some(1),
            queue: Some(FlowQueue { index: 5, count: 128 }),
        });
        let text = serde_json::to_string(&cmd).unwrap();
        assert!(text.contains("\"type\":\"start_flow\""), "{text}");
        assert!(text.contains("1234567891"), "{text}");
        assert_eq!(serde_json::from_str::<Command>(&text).unwrap(), cmd);
        let done = AgentMsg::FlowStarted {
            flow: FlowId(7),
            at: Nanos(1_000_000_000_123),
        };
        let text = serde_json::to_string(&done).unwrap();
        assert_eq!(serde_json::from_str::<AgentMsg>(&text).unwrap(), done);
    }

    #[test]
    fn speed_commands_travel_as_integers_and_stretch_compute() {
        let half = Speed::from_factor(0.5).expect("valid");
        assert_eq!(half, Speed(500_000));
        assert_eq!(half.stretch(Nanos::from_millis(300)), Nanos::from_millis(600));
        assert_eq!(Speed::NOMINAL.stretch(Nanos(7)), Nanos(7));
        assert_eq!(
            Speed::from_factor(2.0).map(|s| s.stretch(Nanos(10))),
            Some(Nanos(5))
        );
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e-9, 1e6] {
            assert_eq!(Speed::from_factor(bad), None, "{bad}");
        }
        for cmd in [
            Command::SetSpeed { speed: half },
            Command::RetimeTask {
                task: TaskId(4),
                remaining: Nanos(1_000_000_007),
            },
        ] {
            let text = serde_json::to_string(&cmd).unwrap();
            assert!(text.contains("500000") || text.contains("1000000007"), "{text}");
            assert_eq!(serde_json::from_str::<Command>(&text).unwrap(), cmd);
        }
    }

    #[test]
    fn version_is_probed_from_any_hello() {
        let future = r#"{"version": 9, "host": "renamed", "capabilities": []}"#;
        assert_eq!(serde_json::from_str::<VersionProbe>(future).unwrap().version, 9);
        assert!(serde_json::from_str::<Hello>(future).is_err());
    }

    #[test]
    fn ocs_path_is_marked() {
        assert_eq!(Path::Ocs.tos(), 0x08);
        assert_eq!(Path::Eps.tos(), 0);
    }

    #[test]
    fn a_wavelength_is_named_in_the_dscp() {
        let spec = |path, wavelength| FlowSpec {
            flow: FlowId(1),
            partition: PartitionId {
                job: JobId(1),
                map: 0,
                reduce: 0,
                seed: 1,
            },
            bytes: Bytes(1),
            dst: HostId::new(1, 0),
            dst_addr: "198.18.1.2:9000".parse().unwrap(),
            path,
            rate: None,
            held: false,
            transport: Transport::Tcp,
            wavelength,
            queue: None,
        };
        // DSCP 32 + w, as ocs.bpf.c reads it (tos >> 2).
        assert_eq!(spec(Path::Ocs, Some(0)).tos(), 0x80);
        assert_eq!(spec(Path::Ocs, Some(3)).tos() >> 2, 35);
        assert_eq!(spec(Path::Ocs, Some(31)).tos(), 0xfc);
        // Beyond what six bits can name, and on EPS: the path's own mark.
        assert_eq!(spec(Path::Ocs, Some(32)).tos(), OCS_TOS);
        assert_eq!(spec(Path::Ocs, None).tos(), OCS_TOS);
        assert_eq!(spec(Path::Eps, Some(2)).tos(), 0);
    }
}
