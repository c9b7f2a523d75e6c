//! FIFO: Hadoop's original JobQueueTaskScheduler. Jobs in the order they
//! became runnable; the first job with work that fits the free slot gets
//! it. Within a job, a runnable reduce goes first (Hadoop 1 fills reduce
//! slots as soon as slow-start allows), then a map, preferring one whose
//! block is on the host, then in its rack, then any (as Hadoop's FIFO
//! scheduler does with `obtainNewMapTask`).

use super::{no_params, pick_in_job, PolicyError, TaskChoice, TaskPolicy};
use crate::engine::ClusterView;
use crate::{HostId, Nanos};

/// First in, first out.
#[derive(Debug, Default)]
pub struct Fifo;

impl Fifo {
    /// Builds it (takes no parameters).
    pub fn from_params(params: &toml::Table) -> Result<Box<dyn TaskPolicy>, PolicyError> {
        no_params("fifo", params)?;
        Ok(Box::new(Fifo))
    }
}

impl TaskPolicy for Fifo {
    fn name(&self) -> &str {
        "fifo"
    }

    fn on_free_slot(&mut self, _now: Nanos, view: &ClusterView<'_>, host: HostId) -> Option<TaskChoice> {
        let free = view.host(host)?.free();
        view.active_jobs()
            .find_map(|job| pick_in_job(view, job, host, free))
            .map(TaskChoice::Run)
    }
}
