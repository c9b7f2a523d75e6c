//! Coflows and flows: a coflow is the set of flows of one shuffle (or one
//! coflow of a trace); it completes when its last flow does.

use crate::{Bytes, HostId, Nanos};
use serde::{Deserialize, Serialize};

/// A coflow's identity (for a job's shuffle, the job's id).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct CoflowId(pub u64);

/// A flow's identity, unique within a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct FlowId(pub u64);

/// One flow as the engine hands it to the network: who sends how many bytes
/// to whom, on behalf of which coflow. A coflow may gain flows over time
/// (reduces fetch map outputs as maps finish).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlowSpec {
    /// This flow.
    pub id: FlowId,
    /// The coflow it belongs to.
    pub coflow: CoflowId,
    /// Sending host.
    pub src: HostId,
    /// Receiving host.
    pub dst: HostId,
    /// Bytes to move.
    pub bytes: Bytes,
}

/// A whole coflow, as a trace gives it: all flows arrive at `arrival`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Coflow {
    /// Its identity.
    pub id: CoflowId,
    /// When it arrives.
    pub arrival: Nanos,
    /// Its flows.
    pub flows: Vec<FlowSpec>,
}

impl Coflow {
    /// Total bytes of all flows.
    pub fn bytes(&self) -> Bytes {
        self.flows.iter().map(|f| f.bytes).sum()
    }
}
