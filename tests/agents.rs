//! Integration tests: agents and their control and data planes, on loopback
//! (127.0.0.x), so they need no root and no namespaces.
//!
//! Most agents run in this process (`agent::run` on the test's runtime); the
//! test of a killed agent starts the real `ocslab-agent` binary, with its
//! control socket inherited, and kills it with SIGKILL.

use ocslab_agent::agent::{self, AgentConfig, AgentError};
use ocslab_agent::clock;
use ocslab_agent::control::credentials::SCHEDULER_NAME;
use ocslab_agent::control::{
    client, AgentCredentials, ControlError, ControlServer, DeathCause, Event, ServerConfig, ALPN_CONTROL,
};
use ocslab_agent::data::Faults;
use ocslab_agent::protocol::{
    AgentMsg, Command, FlowDone, FlowId, FlowRole, FlowSpec, FlowState, Hello, JobId, MapTask, PartitionId,
    Path, ReduceInput, ReduceTask, TaskFailure, TaskId, TaskOutput, Transport, PROTOCOL_VERSION,
};
use ocslab_emulator::{Bps, Bytes, HostId, Nanos};
use ocslab_tests::{agent_binary, unstolen_async};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path as FsPath, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;
use tokio::task::JoinHandle;

const WAIT: Duration = Duration::from_secs(20);

/// A fresh run directory, removed on drop.
struct RunDir(PathBuf);

impl RunDir {
    fn new(tag: &str) -> RunDir {
        static N: AtomicU32 = AtomicU32::new(0);
        let p = std::env::temp_dir().join(format!(
            "ocslab-agents-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&p).expect("create run dir");
        RunDir(p)
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn fast_config() -> ServerConfig {
    ServerConfig {
        heartbeat_interval: Duration::from_millis(100),
        dead_after: Duration::from_millis(500),
    }
}

fn host(i: usize) -> HostId {
    HostId::new(i as u32 / 2, i as u32 % 2)
}

fn agent_config(i: usize, scheduler: SocketAddr, creds: AgentCredentials, faults: Faults) -> AgentConfig {
    AgentConfig {
        host: host(i),
        data_addr: format!("127.0.0.{}:0", 10 + i).parse().expect("addr"),
        control_socket: std::net::UdpSocket::bind("127.0.0.1:0").expect("bind control"),
        scheduler,
        credentials: creds,
        slots: 2,
        quic_data: true,
        quic_congestion: Default::default(),
        faults,
    }
}

/// A scheduler and `n` in-process agents, all joined.
struct Lab {
    server: ControlServer,
    data: BTreeMap<HostId, SocketAddr>,
    agents: Vec<JoinHandle<Result<(), AgentError>>>,
    _dir: RunDir,
}

impl Lab {
    async fn new(n: usize, faults: impl Fn(usize) -> Faults) -> Lab {
        let dir = RunDir::new("lab");
        let (server, creds) =
            ControlServer::start(&dir.0, "127.0.0.1:0".parse().expect("addr"), fast_config())
                .expect("server");
        let agents = (0..n)
            .map(|i| {
                tokio::spawn(agent::run(agent_config(
                    i,
                    server.local_addr(),
                    creds.clone(),
                    faults(i),
                )))
            })
            .collect();
        let mut lab = Lab {
            server,
            data: BTreeMap::new(),
            agents,
            _dir: dir,
        };
        while lab.data.len() < n {
            match lab.next().await {
                Event::Joined { host, hello, .. } => {
                    lab.data.insert(host, hello.data_addr);
                }
                Event::Agent { .. } => {}
                other => panic!("unexpected while joining: {other:?}"),
            }
        }
        lab
    }

    /// A ping round trip to joined host `h`, which must answer.
    async fn ping(&self, h: HostId) -> Duration {
        self.server
            .host(h)
            .unwrap_or_else(|| panic!("{h} is not joined"))
            .ping()
            .await
            .expect("ping")
    }

    async fn next(&mut self) -> Event {
        tokio::time::timeout(WAIT, self.server.next_event())
            .await
            .expect("no event within the wait")
            .expect("event stream ended")
    }

    fn send(&self, h: HostId, cmd: Command) {
        self.server.send(h, cmd).expect("send command");
    }

    /// Waits for agent messages until `f` has seen what it needs (returns true).
    async fn until(&mut self, mut f: impl FnMut(HostId, &AgentMsg) -> bool) {
        loop {
            match self.next().await {
                Event::Agent { host, msg, .. } => {
                    if let AgentMsg::Rejected { reason } = &msg {
                        panic!("{host} rejected a command: {reason}");
                    }
                    if f(host, &msg) {
                        return;
                    }
                }
                Event::HostDead { host, cause, .. } => panic!("{host} died: {cause:?}"),
                _ => {}
            }
        }
    }

    async fn stop(self) {
        self.server.shutdown(Duration::from_secs(2)).await;
        for a in self.agents {
            let r = tokio::time::timeout(WAIT, a).await.expect("agent stops");
            r.expect("agent task").expect("agent ends cleanly");
        }
    }
}

fn partition(map: u32, reduce: u32) -> PartitionId {
    PartitionId {
        job: JobId(1),
        map,
        reduce,
        seed: 7,
    }
}

fn flow_spec(lab: &Lab, flow: u64, p: PartitionId, bytes: u64, dst: HostId) -> FlowSpec {
    FlowSpec {
        flow: FlowId(flow),
        partition: p,
        bytes: Bytes(bytes),
        dst,
        dst_addr: lab.data[&dst],
        path: Path::Eps,
        rate: None,
        held: false,
        wavelength: None,
        queue: None,
        transport: Transport::Tcp,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shuffle_moves_all_bytes_and_checksums_match() {
    let mut lab = Lab::new(3, |_| Faults::default()).await;
    let (maps, reduces) = (2u32, 3u32);
    let size = |m: u32, r: u32| 300_000 + 700_001 * u64::from(m * reduces + r);
    // Maps on h0 and h1.
    for m in 0..maps {
        lab.send(
            host(m as usize),
            Command::RunMap(MapTask {
                task: TaskId(u64::from(m)),
                job: JobId(1),
                map: m,
                seed: 7,
                input: Bytes(4_000_000),
                compute: Nanos::from_millis(50),
                partitions: (0..reduces).map(|r| Bytes(size(m, r))).collect(),
            }),
        );
    }
    let mut checksums = BTreeMap::new();
    let mut done = 0;
    lab.until(|_, msg| {
        if let AgentMsg::TaskDone(r) = msg {
            let TaskOutput::Map { partitions, .. } = &r.output else {
                panic!("not a map: {r:?}");
            };
            for p in partitions {
                checksums.insert((p.partition.map, p.partition.reduce), (p.bytes, p.checksum));
            }
            done += 1;
        }
        done == maps
    })
    .await;
    // Reducers on h0..h2, each fed by one flow per map; map 1's flows go
    // over QUIC, the flows to reducer 2 are marked for the OCS.
    let flow_id = |m: u32, r: u32| u64::from(m * reduces + r) + 100;
    for r in 0..reduces {
        let inputs = (0..maps)
            .map(|m| ReduceInput {
                flow: FlowId(flow_id(m, r)),
                from: host(m as usize),
                partition: partition(m, r),
                bytes: Bytes(size(m, r)),
            })
            .collect();
        lab.send(
            host(r as usize),
            Command::RunReduce(ReduceTask {
                task: TaskId(10 + u64::from(r)),
                job: JobId(1),
                reduce: r,
                compute: Nanos::from_millis(10),
                inputs,
            }),
        );
    }
    for m in 0..maps {
        for r in 0..reduces {
            let mut spec = flow_spec(&lab, flow_id(m, r), partition(m, r), size(m, r), host(r as usize));
            if m == 1 {
                spec.transport = Transport::Quic;
            }
            if r == 2 {
                spec.path = Path::Ocs;
            }
            lab.send(host(m as usize), Command::StartFlow(spec));
        }
    }
    let mut received: BTreeMap<FlowId, FlowDone> = BTreeMap::new();
    let mut sent = BTreeMap::new();
    let mut reduced = BTreeMap::new();
    let n_flows = (maps * reduces) as usize;
    lab.until(|h, msg| {
        match msg {
            AgentMsg::FlowDone(d) => {
                received.insert(d.flow, d.clone());
            }
            AgentMsg::FlowSent(s) => {
                sent.insert(s.flow, s.clone());
            }
            AgentMsg::TaskDone(r) => {
                reduced.insert(h, r.clone());
            }
            AgentMsg::TaskFailed { task, failure, .. } => panic!("{task} failed: {failure:?}"),
            AgentMsg::FlowFailed { flow, reason, .. } => panic!("{flow} failed: {reason}"),
            _ => {}
        }
        received.len() == n_flows && sent.len() == n_flows && reduced.len() == reduces as usize
    })
    .await;
    for m in 0..maps {
        for r in 0..reduces {
            let d = &received[&FlowId(flow_id(m, r))];
            let (bytes, checksum) = checksums[&(m, r)];
            assert!(d.ok, "{d:?}");
            assert_eq!(d.bytes_received, bytes);
            assert_eq!(d.checksum, checksum, "receiver's CRC differs from the map's");
            assert_eq!(d.from, host(m as usize));
            assert!(d.start <= d.first_byte && d.first_byte <= d.end, "{d:?}");
            let s = &sent[&d.flow];
            assert!(s.receiver_ok);
            assert_eq!(s.bytes_sent, bytes);
            assert_eq!(s.transport, if m == 1 { Transport::Quic } else { Transport::Tcp });
        }
    }
    for r in 0..reduces {
        let TaskOutput::Reduce {
            bytes_received,
            partitions,
        } = reduced[&host(r as usize)].output
        else {
            panic!("not a reduce");
        };
        assert_eq!(partitions, maps);
        assert_eq!(bytes_received.0, (0..maps).map(|m| size(m, r)).sum::<u64>());
    }
    lab.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupted_partition_is_detected() {
    // The sender h0 flips a byte of flow 1 (a fault wrapper); flow 2 is clean.
    let mut lab = Lab::new(2, |i| {
        if i == 0 {
            Faults::corrupt_always([FlowId(1)])
        } else {
            Faults::default()
        }
    })
    .await;
    let (src, dst) = (host(0), host(1));
    for (flow, map) in [(1, 0), (2, 1)] {
        lab.send(
            dst,
            Command::RunReduce(ReduceTask {
                task: TaskId(flow),
                job: JobId(1),
                reduce: 0,
                compute: Nanos::ZERO,
                inputs: vec![ReduceInput {
                    flow: FlowId(flow),
                    from: src,
                    partition: partition(map, 0),
                    bytes: Bytes(1_000_000),
                }],
            }),
        );
        let spec = flow_spec(&lab, flow, partition(map, 0), 1_000_000, dst);
        lab.send(src, Command::StartFlow(spec));
    }
    let (mut bad_flow, mut bad_task, mut good_task, mut sent_bad) = (None, None, false, None);
    lab.until(|_, msg| {
        match msg {
            AgentMsg::FlowDone(d) if d.flow == FlowId(1) => bad_flow = Some(d.clone()),
            AgentMsg::FlowSent(s) if s.flow == FlowId(1) => sent_bad = Some(s.receiver_ok),
            AgentMsg::TaskFailed { task, failure, .. } if *task == TaskId(1) => {
                bad_task = Some(failure.clone())
            }
            AgentMsg::TaskDone(r) if r.task == TaskId(2) => good_task = true,
            AgentMsg::TaskFailed { task, .. } if *task == TaskId(2) => panic!("the clean flow failed"),
            _ => {}
        }
        bad_flow.is_some() && bad_task.is_some() && good_task && sent_bad.is_some()
    })
    .await;
    let d = bad_flow.expect("flow 1 report");
    assert!(!d.ok);
    assert_eq!(
        d.bytes_received,
        Bytes(1_000_000),
        "all bytes came, one of them wrong"
    );
    assert_ne!(d.checksum, d.expected_checksum);
    assert_eq!(
        sent_bad,
        Some(false),
        "the sender learns of the mismatch from the ack"
    );
    match bad_task {
        Some(TaskFailure::BadInput { flow, detail }) => {
            assert_eq!(flow, FlowId(1));
            assert!(detail.contains("checksum"), "{detail}");
        }
        other => panic!("expected a bad-input failure, got {other:?}"),
    }
    lab.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pacing_holds_a_flow_to_its_rate() {
    let mut lab = Lab::new(2, |_| Faults::default()).await;
    let (src, dst) = (host(0), host(1));
    // Created held at 10 Mbit/s, re-rated to 50 Mbit/s, then released: the
    // rate in force when it sends is the last one set. A new flow per
    // attempt (`unstolen_async`).
    let rate = Bps(50_000_000);
    let bytes = 7_500_000; // 1.2 s at 50 Mbit/s
    let timed = unstolen_async(3, async |attempt| {
        let flow = FlowId(attempt as u64);
        let mut spec = flow_spec(&lab, flow.0, partition(0, 1), bytes, dst);
        spec.rate = Some(Bps(10_000_000));
        spec.held = true;
        lab.send(src, Command::StartFlow(spec));
        lab.send(
            src,
            Command::SetRate {
                flow,
                rate: Some(rate),
            },
        );
        lab.send(src, Command::ReleaseFlow { flow });
        let mut done = None;
        lab.until(|_, msg| {
            if let AgentMsg::FlowDone(d) = msg {
                if d.flow == flow {
                    done = Some(d.clone());
                }
            }
            done.is_some()
        })
        .await;
        done.expect("flow report")
    })
    .await;
    lab.stop().await;
    let d = &timed.value;
    assert!(d.ok);
    let secs = (d.end - d.start).as_secs_f64();
    let measured = bytes as f64 * 8.0 / secs;
    let err = measured / rate.0 as f64 - 1.0;
    eprintln!("paced at {rate}: measured {measured:.0} bit/s over {secs:.3} s");
    // Time the box lost can only make it slower.
    assert!(secs >= 1.0, "measured over {secs} s");
    assert!(
        err < 0.03,
        "paced at {rate}, measured {measured:.0} bit/s ({:+.2}%)",
        err * 100.0
    );
    if timed.timing_judgeable("pacing_holds_a_flow_to_its_rate") {
        assert!(
            err.abs() < 0.03,
            "paced at {rate}, measured {measured:.0} bit/s ({:+.2}%)",
            err * 100.0
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_flow_sends_nothing_until_released() {
    let mut lab = Lab::new(2, |_| Faults::default()).await;
    let (src, dst) = (host(0), host(1));
    let mut spec = flow_spec(&lab, 1, partition(0, 1), 2_000_000, dst);
    spec.held = true;
    lab.send(src, Command::StartFlow(spec));
    // Once a ping sent after the command is answered, the flow exists.
    lab.server.host(src).expect("src").ping().await.expect("ping");
    let listed = clock::now();
    // Watch a few heartbeats of both ends while it is held (older ones may still be queued).
    let mut held_beats = 0;
    lab.until(|h, msg| {
        match msg {
            AgentMsg::Heartbeat(b) if b.at < listed => {}
            AgentMsg::FlowStarted { .. } | AgentMsg::FlowDone(_) | AgentMsg::FlowSent(_) => {
                panic!("held flow moved: {msg:?}")
            }
            AgentMsg::Heartbeat(b) if h == src => {
                let f = b
                    .flows
                    .iter()
                    .find(|f| f.flow == FlowId(1))
                    .expect("held flow listed");
                assert_eq!(
                    (f.role, f.state, f.bytes),
                    (FlowRole::Sender, FlowState::Held, Bytes(0))
                );
                held_beats += 1;
            }
            AgentMsg::Heartbeat(b) if h == dst => {
                assert!(b.flows.is_empty(), "receiver sees a connection: {:?}", b.flows);
            }
            _ => {}
        }
        held_beats >= 3
    })
    .await;
    let released = clock::now();
    lab.send(src, Command::ReleaseFlow { flow: FlowId(1) });
    let mut done = None;
    lab.until(|_, msg| {
        if let AgentMsg::FlowDone(d) = msg {
            done = Some(d.clone());
        }
        done.is_some()
    })
    .await;
    let d = done.expect("flow report");
    assert!(d.ok);
    assert!(
        d.start >= released,
        "first byte {:?} before release {:?}",
        d.start,
        released
    );
    lab.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_task_frees_its_slot() {
    let mut lab = Lab::new(1, |_| Faults::default()).await;
    let h = host(0);
    lab.send(
        h,
        Command::RunMap(MapTask {
            task: TaskId(5),
            job: JobId(1),
            map: 0,
            seed: 1,
            input: Bytes(1000),
            compute: Nanos::from_millis(60_000),
            partitions: vec![Bytes(10)],
        }),
    );
    lab.until(|_, msg| matches!(msg, AgentMsg::Heartbeat(b) if b.free_slots == 1 && b.tasks.len() == 1))
        .await;
    lab.send(h, Command::KillTask { task: TaskId(5) });
    lab.until(|_, msg| match msg {
        AgentMsg::TaskFailed { task, failure, .. } => {
            assert_eq!((*task, failure), (TaskId(5), &TaskFailure::Killed));
            true
        }
        AgentMsg::TaskDone(_) => panic!("a killed task finished"),
        _ => false,
    })
    .await;
    lab.until(|_, msg| matches!(msg, AgentMsg::Heartbeat(b) if b.free_slots == 2 && b.tasks.is_empty()))
        .await;
    lab.stop().await;
}

/// Credentials with `ca_from`'s CA and `cert_from`'s agent certificate.
fn mixed_credentials(ca_from: &FsPath, cert_from: &FsPath) -> (RunDir, AgentCredentials) {
    let dir = RunDir::new("mixed");
    std::fs::copy(ca_from.join("run-ca.der"), dir.0.join("run-ca.der")).expect("copy ca");
    for f in ["agent-cert.der", "agent-key.der"] {
        std::fs::copy(cert_from.join(f), dir.0.join(f)).expect("copy cert");
    }
    let creds = AgentCredentials::load(&dir.0).expect("load mixed");
    (dir, creds)
}

async fn expect_refused_only(server: &mut ControlServer) -> String {
    let ev = tokio::time::timeout(WAIT, server.next_event())
        .await
        .expect("an event")
        .expect("open");
    match ev {
        Event::Refused { reason, .. } => {
            // Nothing else (no Joined) follows for that agent.
            assert!(server.hosts().is_empty());
            reason
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_without_the_runs_credentials_is_refused() {
    let (run_a, run_b) = (RunDir::new("a"), RunDir::new("b"));
    let bind: SocketAddr = "127.0.0.1:0".parse().expect("addr");
    let (mut server, _) = ControlServer::start(&run_a.0, bind, fast_config()).expect("server a");
    let (_other, creds_b) = ControlServer::start(&run_b.0, bind, fast_config()).expect("server b");

    // 1. A client certificate of another run, even with this run's CA: the scheduler refuses it.
    let (_mixed, mixed) = mixed_credentials(&run_a.0, &run_b.0);
    let r = agent::run(agent_config(0, server.local_addr(), mixed, Faults::default())).await;
    assert!(matches!(r, Err(AgentError::Control(_))), "{r:?}");
    let reason = expect_refused_only(&mut server).await;
    eprintln!("foreign client certificate: scheduler says {reason:?}");
    assert!(reason.to_lowercase().contains("certificate"), "{reason}");

    // 2. Another run's CA: the agent does not trust this scheduler (pinning).
    let r = agent::run(agent_config(1, server.local_addr(), creds_b, Faults::default())).await;
    let Err(AgentError::Control(e)) = r else {
        panic!("joined with another run's CA: {r:?}");
    };
    eprintln!("foreign CA: agent says {e}");
    assert!(e.to_string().to_lowercase().contains("certificate"), "{e}");
    expect_refused_only(&mut server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hello_of_another_version_or_a_duplicate_host_is_refused() {
    let dir = RunDir::new("version");
    let (mut server, creds) =
        ControlServer::start(&dir.0, "127.0.0.1:0".parse().expect("addr"), fast_config()).expect("server");
    let hello = |version| Hello {
        version,
        host: host(0),
        pid: std::process::id(),
        data_addr: "127.0.0.10:1".parse().expect("addr"),
        slots: 1,
    };
    let sock = || std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
    let future = PROTOCOL_VERSION + 1;
    let r = client::connect(sock(), server.local_addr(), &creds, &hello(future)).await;
    let Err(ControlError::Refused(reason)) = r else {
        panic!("version {future} was not refused");
    };
    assert!(
        reason.contains(&format!("version {future}"))
            && reason.contains(&format!("version {PROTOCOL_VERSION}")),
        "{reason}"
    );
    let seen = expect_refused_only(&mut server).await;
    assert_eq!(seen, reason);

    let first = client::connect(sock(), server.local_addr(), &creds, &hello(PROTOCOL_VERSION))
        .await
        .expect("right version joins");
    assert!(matches!(server.next_event().await, Some(Event::Joined { .. })));
    let r = client::connect(sock(), server.local_addr(), &creds, &hello(PROTOCOL_VERSION)).await;
    let Err(ControlError::Refused(reason)) = r else {
        panic!("a second r0h0 was accepted");
    };
    assert!(reason.contains("already connected"), "{reason}");
    drop(first);
}

/// The `ocslab-agent` of host 0 on loopback, data plane at `data_addr`,
/// joining `server` with the credentials in `dir`.
fn loopback_launch(
    server: &ControlServer,
    dir: &RunDir,
    data_addr: &str,
) -> ocslab_agent::launch::AgentLaunch {
    ocslab_agent::launch::AgentLaunch {
        binary: agent_binary(),
        host: host(0),
        data_addr: data_addr.parse().expect("addr"),
        scheduler: server.local_addr(),
        run_dir: dir.0.clone(),
        slots: 1,
        netns: None,
        extra_args: vec![],
        binary_args: vec![],
    }
}

/// Runs `start` with SIGTERM blocked in this thread, as a scheduler
/// starts its agents (it takes its ending signals in one thread).
fn with_sigterm_blocked<T>(start: impl FnOnce() -> T) -> T {
    let mut term = nix::sys::signal::SigSet::empty();
    term.add(nix::sys::signal::Signal::SIGTERM);
    term.thread_block().expect("block SIGTERM here");
    let out = start();
    term.thread_unblock().expect("unblock SIGTERM here");
    out
}

/// The signals process `pid` blocks (`SigBlk` in its status), as a mask.
fn blocked_signals(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the agent's status");
    let mask = status
        .lines()
        .find_map(|l| l.strip_prefix("SigBlk:"))
        .expect("a SigBlk line");
    u64::from_str_radix(mask.trim(), 16).expect("a hex mask")
}

/// A scheduler blocks its ending signals in every thread to take them in
/// one; an agent it starts inherits that mask across exec, and must clear
/// it to end on a teardown's SIGTERM.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_started_with_sigterm_blocked_ends_on_sigterm() {
    use nix::sys::signal::{kill, Signal};
    use std::os::unix::process::ExitStatusExt;
    let dir = RunDir::new("sigterm");
    let (mut server, _) =
        ControlServer::start(&dir.0, "127.0.0.1:0".parse().expect("addr"), fast_config()).expect("server");
    let launch = loopback_launch(&server, &dir, "127.0.0.11:0");
    let mut child = with_sigterm_blocked(|| launch.spawn()).expect("spawn ocslab-agent");
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    // Joined: the agent is past its start, where it clears its mask.
    loop {
        match tokio::time::timeout(WAIT, server.next_event()).await {
            Ok(Some(Event::Joined { .. })) => break,
            Ok(Some(Event::Refused { reason, .. })) => panic!("refused: {reason}"),
            Ok(Some(_)) => {}
            other => {
                let _ = child.kill();
                panic!("no join: {other:?}");
            }
        }
    }
    let blocked = blocked_signals(child.id());
    kill(pid, Signal::SIGTERM).expect("SIGTERM the agent");
    let waited = tokio::time::timeout(WAIT, tokio::task::spawn_blocking(move || child.wait())).await;
    let Ok(Ok(Ok(status))) = waited else {
        let _ = kill(pid, Signal::SIGKILL);
        panic!("the agent did not end on SIGTERM within {WAIT:?} (signals blocked: {blocked:x})");
    };
    assert_eq!(status.signal(), Some(Signal::SIGTERM as i32), "{status}");
    assert_eq!(blocked, 0, "signals blocked in the agent");
}

/// An agent forked by a fork server is the agent an exec would have
/// started: it parses the server's arguments and its host's, joins as
/// itself (its hello names its own pid), clears the signal mask it
/// inherited, and ends on SIGTERM; the server reports how each agent
/// ended, one that could not parse its arguments included, and ends when
/// the lab lets it go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forked_agent_joins_as_itself_and_its_end_is_reported() {
    use nix::sys::signal::Signal;
    use ocslab_agent::launch::ForkServer;
    use std::os::unix::process::ExitStatusExt;
    let dir = RunDir::new("forked");
    let (mut server, _) =
        ControlServer::start(&dir.0, "127.0.0.1:0".parse().expect("addr"), fast_config()).expect("server");
    let launch = loopback_launch(&server, &dir, "127.0.0.12:0");
    let mut forks = with_sigterm_blocked(|| ForkServer::start(&launch.binary, &launch.shared_args()))
        .expect("start the fork server");
    let forks_pid = forks.id();
    let agent = forks.spawn(&launch.host_args()).expect("fork an agent");
    assert_ne!(agent.id(), forks_pid);
    let joined_pid = loop {
        match tokio::time::timeout(WAIT, server.next_event()).await {
            Ok(Some(Event::Joined { hello, .. })) => break hello.pid,
            Ok(Some(Event::Refused { reason, .. })) => panic!("refused: {reason}"),
            Ok(Some(_)) => {}
            other => {
                agent.kill();
                panic!("no join: {other:?}");
            }
        }
    };
    assert_eq!(joined_pid, agent.id(), "the joined agent is the forked child");
    assert_eq!(blocked_signals(agent.id()), 0, "signals blocked in the agent");
    assert_eq!(
        forks.exit_status(&agent).expect("ask the server"),
        None,
        "it runs"
    );
    agent.signal(Signal::SIGTERM).expect("SIGTERM the agent");
    assert!(
        agent.wait_ended(WAIT),
        "the agent did not end on SIGTERM within {WAIT:?}"
    );
    let status = forks
        .exit_status(&agent)
        .expect("ask the server")
        .expect("it ended");
    assert_eq!(status.signal(), Some(Signal::SIGTERM as i32), "{status}");
    // Asked, the server reaped it: no zombie is left.
    assert!(
        !std::path::Path::new(&format!("/proc/{}", agent.id())).exists(),
        "the ended agent was not reaped"
    );
    // Arguments the agent's parser refuses: it exits 2, as clap does.
    let bad = forks
        .spawn(&[
            "--host".into(),
            "r0h0".into(),
            "--data-addr".into(),
            "nowhere".into(),
        ])
        .expect("fork an agent");
    assert!(bad.wait_ended(WAIT), "an agent with a bad address ran on");
    let status = forks
        .exit_status(&bad)
        .expect("ask the server")
        .expect("it ended");
    assert_eq!(status.code(), Some(2), "{status}");
    // Let go, the server reaps and ends (the drop waits for it).
    drop(forks);
    assert!(
        !std::path::Path::new(&format!("/proc/{forks_pid}")).exists(),
        "the fork server is still there"
    );
    // A server gone: starting an agent fails, at once and every time after.
    let mut gone = ForkServer::start(&launch.binary, &launch.shared_args()).expect("start a fork server");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(gone.id() as i32), Signal::SIGKILL)
        .expect("SIGKILL the fork server");
    for _ in 0..2 {
        assert!(
            gone.spawn(&launch.host_args()).is_err(),
            "a dead server started an agent"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_agent_is_reported_dead_after_the_heartbeat_timeout() {
    let dir = RunDir::new("kill");
    let config = fast_config();
    let (mut server, _) =
        ControlServer::start(&dir.0, "127.0.0.1:0".parse().expect("addr"), config).expect("server");
    let launch = loopback_launch(&server, &dir, "127.0.0.10:0");
    let mut child = launch.spawn().expect("spawn ocslab-agent");
    let pid = loop {
        match tokio::time::timeout(WAIT, server.next_event())
            .await
            .expect("join")
            .expect("open")
        {
            Event::Joined { hello, .. } => break hello.pid,
            Event::Refused { reason, .. } => panic!("refused: {reason}"),
            _ => {}
        }
    };
    assert_eq!(pid, child.id());
    loop {
        let ev = tokio::time::timeout(WAIT, server.next_event())
            .await
            .expect("beat")
            .expect("open");
        if matches!(
            ev,
            Event::Agent {
                msg: AgentMsg::Heartbeat(_),
                ..
            }
        ) {
            break;
        }
    }
    child.kill().expect("SIGKILL the agent");
    let killed = clock::now();
    child.wait().expect("reap");
    let (at, cause) = loop {
        match tokio::time::timeout(WAIT, server.next_event())
            .await
            .expect("death")
            .expect("open")
        {
            Event::HostDead { at, host: h, cause } => {
                assert_eq!(h, host(0));
                break (at, cause);
            }
            Event::Agent { .. } => {}
            other => panic!("unexpected {other:?}"),
        }
    };
    let DeathCause::HeartbeatTimeout { silent_for } = cause else {
        panic!("expected a heartbeat timeout, got {cause:?}");
    };
    assert!(silent_for.as_duration() >= config.dead_after, "{silent_for}");
    let after_kill = (at - killed).as_duration();
    // The last heartbeat came at most one interval before the kill.
    assert!(
        after_kill >= config.dead_after - config.heartbeat_interval - Duration::from_millis(50),
        "declared dead {after_kill:?} after the kill"
    );
    assert!(
        after_kill < config.dead_after + Duration::from_secs(1),
        "{after_kill:?}"
    );
    eprintln!("killed agent declared dead {after_kill:?} after SIGKILL (silent for {silent_for})");
    assert!(matches!(
        server.send(host(0), Command::Shutdown),
        Err(ControlError::NotConnected(_))
    ));
}

// ------------------------------------------------------------ a hostile control plane

/// A QUIC connection to the scheduler presenting `creds`, nothing said yet.
async fn raw_connection(
    server: SocketAddr,
    creds: &AgentCredentials,
) -> Result<(quinn::Endpoint, quinn::Connection), String> {
    let mut endpoint =
        quinn::Endpoint::client("127.0.0.1:0".parse().expect("addr")).map_err(|e| e.to_string())?;
    let tls = creds.client_config(ALPN_CONTROL).map_err(|e| e.to_string())?;
    let tls = quinn::crypto::rustls::QuicClientConfig::try_from(tls).map_err(|e| e.to_string())?;
    endpoint.set_default_client_config(quinn::ClientConfig::new(std::sync::Arc::new(tls)));
    let conn = endpoint
        .connect(server, SCHEDULER_NAME)
        .map_err(|e| e.to_string())?
        .await
        .map_err(|e| e.to_string())?;
    Ok((endpoint, conn))
}

/// `json` as one frame (length prefix and bytes), or cut after `keep` bytes.
fn frame_bytes(json: &[u8], keep: Option<usize>) -> Vec<u8> {
    let mut out = (json.len() as u32).to_be_bytes().to_vec();
    out.extend(&json[..keep.unwrap_or(json.len()).min(json.len())]);
    out
}

fn hello_of(i: usize) -> Hello {
    Hello {
        version: PROTOCOL_VERSION,
        host: host(i),
        pid: std::process::id(),
        data_addr: "127.0.0.10:1".parse().expect("addr"),
        slots: 1,
    }
}

/// The next event that is not `host`'s heartbeat or another agent message.
async fn next_other(lab: &mut Lab) -> Event {
    loop {
        match lab.next().await {
            Event::Agent { .. } => {}
            other => return other,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn truncated_or_malformed_frames_are_refused_and_the_run_goes_on() {
    let mut lab = Lab::new(1, |_| Faults::default()).await;
    let creds = AgentCredentials::load(&lab._dir.0).expect("the run's credentials");
    let server = lab.server.local_addr();

    // 1. A hello cut short, then the stream closed: refused, saying so.
    let (_e1, conn) = raw_connection(server, &creds).await.expect("connect");
    let (mut send, _recv) = conn.open_bi().await.expect("stream");
    let json = serde_json::to_vec(&hello_of(1)).expect("encode");
    send.write_all(&frame_bytes(&json, Some(10)))
        .await
        .expect("write");
    send.finish().expect("finish");
    let Event::Refused { reason, .. } = next_other(&mut lab).await else {
        panic!("a truncated hello was not refused");
    };
    assert!(reason.contains("ended inside a frame"), "{reason}");

    // 2. A hello that is not JSON: refused, saying so.
    let (_e2, conn) = raw_connection(server, &creds).await.expect("connect");
    let (mut send, _recv) = conn.open_bi().await.expect("stream");
    send.write_all(&frame_bytes(b"\x00\xffnot json", None))
        .await
        .expect("write");
    let Event::Refused { reason, .. } = next_other(&mut lab).await else {
        panic!("a malformed hello was not refused");
    };
    assert!(reason.contains("malformed hello"), "{reason}");

    // 3. A host that joins, then sends a message cut short: declared dead
    //    with the reason; its slot is free to join again.
    for (keep, why) in [(Some(12), "ended inside a frame"), (None, "malformed")] {
        let (_e3, conn) = raw_connection(server, &creds).await.expect("connect");
        let (mut send, mut recv) = conn.open_bi().await.expect("stream");
        let mut scratch = Vec::new();
        ocslab_agent::frame::write_frame(&mut send, &hello_of(1), &mut scratch)
            .await
            .expect("hello");
        let reply: Option<ocslab_agent::protocol::HelloReply> =
            ocslab_agent::frame::read_frame(&mut recv, &mut scratch)
                .await
                .expect("reply");
        assert!(
            matches!(reply, Some(ocslab_agent::protocol::HelloReply::Welcome { .. })),
            "{reply:?}"
        );
        assert!(matches!(next_other(&mut lab).await, Event::Joined { host: h, .. } if h == host(1)));
        let bad = match keep {
            Some(_) => serde_json::to_vec(&AgentMsg::Pong { nonce: 1 }).expect("encode"),
            None => b"{\"type\":\"heartbeat\",\"seq\":\"x\"}".to_vec(),
        };
        send.write_all(&frame_bytes(&bad, keep)).await.expect("write");
        send.finish().expect("finish");
        match next_other(&mut lab).await {
            Event::HostDead {
                host: h,
                cause: DeathCause::ConnectionLost(reason),
                ..
            } if h == host(1) => assert!(reason.contains(why), "{reason}"),
            other => panic!("expected host 1 dead of a bad frame, got {other:?}"),
        }
    }

    // 4. The honest agent saw none of it.
    let rtt = lab.ping(host(0)).await;
    assert!(rtt < WAIT);
    assert_eq!(lab.server.hosts(), vec![host(0)]);
}

/// Heartbeat sequence numbers of `host` among `events`.
fn beats_of(events: &[Event], h: HostId) -> Vec<u64> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Agent {
                host,
                msg: AgentMsg::Heartbeat(b),
                ..
            } if *host == h => Some(b.seq),
            _ => None,
        })
        .collect()
}

/// Collects events until `host` has sent `beats` more heartbeats.
async fn events_for_beats(lab: &mut Lab, h: HostId, beats: usize) -> Vec<Event> {
    let mut events = Vec::new();
    while beats_of(&events, h).len() < beats {
        events.push(lab.next().await);
    }
    events
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replayed_datagrams_change_nothing() {
    // An agent that reaches the scheduler through a relay recording every
    // datagram it sends, as an attacker on the path would.
    let dir = RunDir::new("replay");
    let (server, creds) =
        ControlServer::start(&dir.0, "127.0.0.1:0".parse().expect("addr"), fast_config()).expect("server");
    let relay = std::sync::Arc::new(tokio::net::UdpSocket::bind("127.0.0.1:0").await.expect("relay"));
    let upstream = std::sync::Arc::new(
        tokio::net::UdpSocket::bind("127.0.0.1:0")
            .await
            .expect("upstream"),
    );
    upstream
        .connect(server.local_addr())
        .await
        .expect("connect upstream");
    let recorded = std::sync::Arc::new(std::sync::Mutex::new(Vec::<Vec<u8>>::new()));
    let agent_addr = std::sync::Arc::new(std::sync::Mutex::new(None::<SocketAddr>));
    let (r, u, rec, who) = (
        relay.clone(),
        upstream.clone(),
        recorded.clone(),
        agent_addr.clone(),
    );
    let up = tokio::spawn(async move {
        let mut buf = vec![0u8; 65_536];
        while let Ok((n, from)) = r.recv_from(&mut buf).await {
            *who.lock().expect("lock") = Some(from);
            rec.lock().expect("lock").push(buf[..n].to_vec());
            let _ = u.send(&buf[..n]).await;
        }
    });
    let (r, u, who) = (relay.clone(), upstream.clone(), agent_addr.clone());
    let down = tokio::spawn(async move {
        let mut buf = vec![0u8; 65_536];
        while let Ok(n) = u.recv(&mut buf).await {
            let to = *who.lock().expect("lock");
            if let Some(to) = to {
                let _ = r.send_to(&buf[..n], to).await;
            }
        }
    });
    let agent = tokio::spawn(agent::run(agent_config(
        0,
        relay.local_addr().expect("relay addr"),
        creds,
        Faults::default(),
    )));
    let mut lab = Lab {
        server,
        data: BTreeMap::new(),
        agents: vec![agent],
        _dir: dir,
    };
    let mut before = vec![lab.next().await];
    assert!(matches!(before[0], Event::Joined { .. }), "{:?}", before[0]);
    before.extend(events_for_beats(&mut lab, host(0), 3).await);

    // Every datagram so far, again: from the agent's own address (through
    // the relay's upstream socket) and from a stranger's.
    let old: Vec<Vec<u8>> = recorded.lock().expect("lock").clone();
    assert!(old.len() >= 5, "only {} datagrams recorded", old.len());
    let stranger = tokio::net::UdpSocket::bind("127.0.0.1:0")
        .await
        .expect("stranger");
    for d in &old {
        upstream.send(d).await.expect("replay");
        stranger
            .send_to(d, lab.server.local_addr())
            .await
            .expect("replay");
    }
    let after = events_for_beats(&mut lab, host(0), 5).await;

    // One join, every heartbeat once and in order, the host alive and answering.
    let all: Vec<Event> = before.into_iter().chain(after).collect();
    let joins = all.iter().filter(|e| matches!(e, Event::Joined { .. })).count();
    assert_eq!(joins, 1, "a replay joined again");
    let seqs = beats_of(&all, host(0));
    assert!(
        seqs.windows(2).all(|w| w[0] < w[1]),
        "a heartbeat was delivered twice: {seqs:?}"
    );
    assert!(
        !all.iter().any(|e| matches!(e, Event::HostDead { .. })),
        "the replay killed the host"
    );
    lab.ping(host(0)).await;
    up.abort();
    down.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_connections_leaves_joined_agents_unharmed() {
    const FOREIGN: usize = 100;
    const SILENT: usize = 100;
    const GARBAGE: usize = 1_000;
    let mut lab = Lab::new(1, |_| Faults::default()).await;
    let creds = AgentCredentials::load(&lab._dir.0).expect("the run's credentials");
    let other = RunDir::new("flood-other");
    let (_other, foreign) =
        ControlServer::start(&other.0, "127.0.0.1:0".parse().expect("addr"), fast_config())
            .expect("server b");
    let server = lab.server.local_addr();

    // Another run's agents, agents of this run that never say hello, and
    // datagrams of noise, all at once.
    let mut attempts = tokio::task::JoinSet::new();
    for _ in 0..FOREIGN {
        let c = foreign.clone();
        attempts.spawn(async move { raw_connection(server, &c).await.map(|(e, c)| (Some(e), Some(c))) });
    }
    for _ in 0..SILENT {
        let c = creds.clone();
        attempts.spawn(async move { raw_connection(server, &c).await.map(|(e, c)| (Some(e), Some(c))) });
    }
    let noise = tokio::net::UdpSocket::bind("127.0.0.1:0").await.expect("noise");
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for i in 0..GARBAGE {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let len = 1 + (x as usize % 1_200);
        let d: Vec<u8> = (0..len).map(|k| (x >> (k % 57)) as u8 ^ i as u8).collect();
        noise.send_to(&d, server).await.expect("noise");
    }
    let mut held = Vec::new();
    let (mut connected, mut failed) = (0, 0);
    while let Some(r) = attempts.join_next().await {
        match r.expect("attempt task") {
            Ok(c) => {
                connected += 1;
                held.push(c);
            }
            Err(_) => failed += 1,
        }
    }
    // The foreign ones fail the handshake; this run's ones connect (they
    // hold a valid certificate) and are refused once they stay silent.
    assert!(failed >= FOREIGN, "{failed} failed, {connected} connected");

    // Meanwhile and after: the joined agent keeps its heartbeat, and a new
    // agent joins.
    let events = events_for_beats(&mut lab, host(0), 5).await;
    assert!(
        !events.iter().any(|e| matches!(e, Event::HostDead { .. })),
        "the flood killed a host"
    );
    lab.agents.push(tokio::spawn(agent::run(agent_config(
        1,
        server,
        creds.clone(),
        Faults::default(),
    ))));
    let joined = loop {
        match lab.next().await {
            Event::Joined { host, .. } => break host,
            Event::HostDead { host, cause, .. } => panic!("{host} died during the flood: {cause:?}"),
            _ => {}
        }
    };
    assert_eq!(joined, host(1));
    let refused = events
        .iter()
        .filter(|e| matches!(e, Event::Refused { .. }))
        .count();
    eprintln!(
        "flood: {FOREIGN} foreign and {SILENT} silent connections, {GARBAGE} noise datagrams: {failed} failed the handshake, {connected} connected, {refused} refusals seen; the joined agent kept its heartbeat"
    );
    lab.ping(host(0)).await;
    drop(held);
}
