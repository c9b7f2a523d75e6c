//! Fair: Hadoop's Fair scheduler with one pool per user and equal weights.
//! A free slot goes to the user furthest below its fair share — with equal
//! weights and max-min shares that is the user with the fewest running
//! tasks among users with work that fits — and, inside the user's pool,
//! to the job with the fewest running tasks (the pool's "fair" mode), ties
//! by submission order. The task inside the job is chosen as FIFO does
//! (reduces first, then the most local map).

use super::{fair_order, no_params, pick_in_job, PolicyError, TaskChoice, TaskPolicy};
use crate::engine::ClusterView;
use crate::{HostId, Nanos};

/// Per-user fair sharing.
#[derive(Debug, Default)]
pub struct Fair;

impl Fair {
    /// Builds it (takes no parameters).
    pub fn from_params(params: &toml::Table) -> Result<Box<dyn TaskPolicy>, PolicyError> {
        no_params("fair", params)?;
        Ok(Box::new(Fair))
    }
}

impl TaskPolicy for Fair {
    fn name(&self) -> &str {
        "fair"
    }

    fn on_free_slot(&mut self, _now: Nanos, view: &ClusterView<'_>, host: HostId) -> Option<TaskChoice> {
        let free = view.host(host)?.free();
        fair_order(view, free)
            .into_iter()
            .find_map(|job| pick_in_job(view, job, host, free))
            .map(TaskChoice::Run)
    }
}
