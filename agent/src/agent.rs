//! The agent runtime: one per host. It starts the data plane, joins the
//! scheduler, then serves commands (tasks, flows, pings) and sends
//! heartbeats until told to shut down or the control connection is lost.

use crate::clock;
use crate::control::{client, AgentCredentials, ControlError, CLOSE_OK};
use crate::data::quic::Congestion;
use crate::data::{DataError, DataPlane, Faults, FlowControl};
use crate::frame::{read_frame, write_frame, FrameError};
use crate::protocol::{AgentMsg, Command, FlowId, Heartbeat, Hello, PROTOCOL_VERSION};
use crate::task::Tasks;
use ocslab_emulator::HostId;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::{mpsc, watch};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Everything an agent needs to run.
#[derive(Debug)]
pub struct AgentConfig {
    /// Its host.
    pub host: HostId,
    /// Where its data plane listens (port 0: any).
    pub data_addr: SocketAddr,
    /// Its control socket (inherited from the driver, or bound by the binary).
    pub control_socket: std::net::UdpSocket,
    /// The scheduler's control address.
    pub scheduler: SocketAddr,
    /// The run's credentials (from the run directory).
    pub credentials: AgentCredentials,
    /// Task slots.
    pub slots: u32,
    /// Also accept and send flows over QUIC.
    pub quic_data: bool,
    /// QUIC's congestion control.
    pub quic_congestion: Congestion,
    /// Injected faults (tests only).
    pub faults: Faults,
}

/// Why an agent stopped other than by `Shutdown`.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// Joining or talking to the scheduler failed.
    #[error(transparent)]
    Control(#[from] ControlError),
    /// The data plane could not start.
    #[error("data plane on {addr}: {source}")]
    Data {
        /// Its address.
        addr: SocketAddr,
        /// What failed.
        source: DataError,
    },
    /// The control stream failed after joining.
    #[error("control stream lost: {0}")]
    Lost(FrameError),
}

type Senders = Arc<Mutex<BTreeMap<FlowId, watch::Sender<FlowControl>>>>;

/// Runs an agent until the scheduler says `Shutdown` (`Ok`) or the control
/// connection fails.
pub async fn run(config: AgentConfig) -> Result<(), AgentError> {
    let (outbox, mut outbox_rx) = mpsc::unbounded_channel::<AgentMsg>();
    let quic = config
        .quic_data
        .then_some((&config.credentials, config.quic_congestion));
    let plane = DataPlane::start(config.host, config.data_addr, quic, config.faults, outbox.clone())
        .await
        .map_err(|source| AgentError::Data {
            addr: config.data_addr,
            source,
        })?;
    let hello = Hello {
        version: PROTOCOL_VERSION,
        host: config.host,
        pid: std::process::id(),
        data_addr: plane.local_addr(),
        slots: config.slots,
    };
    let link = client::connect(
        config.control_socket,
        config.scheduler,
        &config.credentials,
        &hello,
    )
    .await?;
    tracing::info!(host = %config.host, data = %plane.local_addr(), "joined the scheduler");
    let tasks = Tasks::new(config.slots, plane.receipts.clone(), outbox.clone());
    let senders: Senders = Arc::default();

    let mut send = link.send;
    let writer = tokio::spawn(async move {
        let mut scratch = Vec::new();
        while let Some(msg) = outbox_rx.recv().await {
            if let Err(e) = write_frame(&mut send, &msg, &mut scratch).await {
                tracing::warn!("control stream write: {e}");
                break;
            }
        }
    });
    let heartbeats = {
        let (outbox, tasks, plane) = (outbox.clone(), tasks.clone(), plane.clone());
        let mut tick = tokio::time::interval(link.heartbeat_interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tokio::spawn(async move {
            for seq in 0.. {
                tick.tick().await;
                let beat = Heartbeat {
                    seq,
                    at: clock::now(),
                    free_slots: tasks.free_slots(),
                    tasks: tasks.progress(),
                    flows: plane.flows.snapshot(),
                };
                if outbox.send(AgentMsg::Heartbeat(beat)).is_err() {
                    break;
                }
            }
        })
    };

    let mut recv = link.recv;
    let mut scratch = Vec::new();
    let result = loop {
        let cmd = match read_frame::<_, Command>(&mut recv, &mut scratch).await {
            Ok(Some(cmd)) => cmd,
            Ok(None) => break Err(AgentError::Lost(FrameError::Truncated)),
            Err(e) => break Err(AgentError::Lost(e)),
        };
        match cmd {
            Command::Shutdown => break Ok(()),
            Command::Ping { nonce } => {
                let _ = outbox.send(AgentMsg::Pong { nonce });
            }
            Command::RunMap(t) => tasks.start_map(t),
            Command::RunReduce(t) => tasks.start_reduce(t),
            Command::KillTask { task } => tasks.kill(task),
            Command::SetSpeed { speed } => {
                tracing::info!(host = %config.host, %speed, "compute speed set");
                tasks.set_speed(speed);
            }
            Command::RetimeTask { task, remaining } => {
                // A task that already finished needs no retime (a race, not an error).
                if !tasks.retime(task, remaining) {
                    tracing::debug!(%task, "retime of a task no longer running");
                }
            }
            Command::StartFlow(spec) => {
                let flow = spec.flow;
                let mut map = lock(&senders);
                if map.contains_key(&flow) {
                    let _ = outbox.send(AgentMsg::Rejected {
                        reason: format!("{flow} already exists at this agent"),
                    });
                    continue;
                }
                let (tx, rx) = watch::channel(FlowControl {
                    released: !spec.held,
                    rate: spec.rate,
                });
                map.insert(flow, tx);
                // Listed before the next heartbeat or pong, not when the task first runs.
                let reg = plane.register_sender(&spec);
                let (plane, senders) = (plane.clone(), senders.clone());
                tokio::spawn(async move {
                    plane.run_sender(spec, rx, reg).await;
                    lock(&senders).remove(&flow);
                });
            }
            Command::ReleaseFlow { flow } => steer(&senders, &outbox, flow, |c| c.released = true),
            Command::HoldFlow { flow } => steer(&senders, &outbox, flow, |c| c.released = false),
            Command::SetRate { flow, rate } => steer(&senders, &outbox, flow, |c| c.rate = rate),
        }
    };
    heartbeats.abort();
    tasks.abort_all();
    lock(&senders).clear();
    if result.is_ok() {
        // Let queued reports reach the scheduler before closing.
        drop(outbox);
        let _ = tokio::time::timeout(std::time::Duration::from_secs(1), writer).await;
    } else {
        writer.abort();
    }
    link.connection.close(CLOSE_OK.into(), b"agent stopping");
    let _ = tokio::time::timeout(std::time::Duration::from_millis(500), link.endpoint.wait_idle()).await;
    result
}

fn steer(
    senders: &Senders,
    outbox: &mpsc::UnboundedSender<AgentMsg>,
    flow: FlowId,
    f: impl FnOnce(&mut FlowControl),
) {
    match lock(senders).get(&flow) {
        Some(tx) => tx.send_modify(f),
        None => {
            let _ = outbox.send(AgentMsg::Rejected {
                reason: format!("{flow} is not a flow this agent is sending (finished or never started)"),
            });
        }
    }
}
