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
    /// How many flows it stands for (at least 1). A flow of weight w takes
    /// w shares of max-min fair sharing in the fluid network, and a pacing
    /// cap set on it is for all w together. The engine makes flows of
    /// weight > 1 only under `merge_fetches` (the fetches of one job
    /// between one pair of hosts that start at one instant, merged).
    #[serde(default = "FlowSpec::one")]
    pub weight: u32,
}

impl FlowSpec {
    /// A flow of weight 1: `bytes` from `src` to `dst` for `coflow`.
    pub fn new(id: FlowId, coflow: CoflowId, src: HostId, dst: HostId, bytes: Bytes) -> FlowSpec {
        FlowSpec {
            id,
            coflow,
            src,
            dst,
            bytes,
            weight: 1,
        }
    }

    /// The max-min shares it takes: its weight, a weight of 0 counting
    /// as 1.
    pub fn shares(&self) -> u32 {
        self.weight.max(1)
    }

    fn one() -> u32 {
        1
    }
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
