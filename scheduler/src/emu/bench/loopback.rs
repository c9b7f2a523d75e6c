//! The `--loopback` part of `ocslab bench agents`: two agents outside any
//! namespace, one unshaped flow on loopback per run against iperf3.

use super::*;

/// The two loopback agents and their run directory. Dropped on an error
/// half-way as at the end: the agents still running are killed and the
/// directory removed.
struct Loopback {
    agents: Vec<Child>,
    /// Where the agents read the run's credentials (the agents' private
    /// key among them): a fresh directory of mode 0700 under the system's
    /// temporary directory, with a random name, so that nothing another user
    /// put there is written through. `None` once removed
    /// ([`Loopback::forget_credentials`]).
    run_dir: Option<tempfile::TempDir>,
}

impl Loopback {
    /// The first agent that has exited, with how it ended.
    fn exited(&mut self) -> Option<(usize, std::process::ExitStatus)> {
        self.agents
            .iter_mut()
            .enumerate()
            .find_map(|(i, c)| c.try_wait().ok().flatten().map(|status| (i, status)))
    }

    /// Removes the run directory: the agents read the credentials once, as
    /// they start, so after both joined nothing needs them, and an end by
    /// a signal (which skips every destructor) leaves them only while the
    /// agents start.
    fn forget_credentials(&mut self) -> Result<(), BenchError> {
        if let Some(dir) = self.run_dir.take() {
            let path = dir.path().to_path_buf();
            dir.close()
                .with_context(|| format!("removing {}", path.display()))?;
        }
        Ok(())
    }
}

impl Drop for Loopback {
    fn drop(&mut self) {
        for c in &mut self.agents {
            if matches!(c.try_wait(), Ok(None)) {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
}

/// How long the agents have to join.
const JOIN_WITHIN: Duration = Duration::from_secs(60);

async fn next_event(server: &mut ControlServer) -> Result<Event, BenchError> {
    match tokio::time::timeout(Duration::from_secs(60), server.next_event()).await {
        Ok(Some(ev)) => Ok(ev),
        Ok(None) => bail!("control server stopped"),
        Err(_) => bail!("no event from the agents within 60 s"),
    }
}

/// The loopback measurement (`--loopback`): two agents outside any namespace.
pub(super) async fn measure_loopback(a: &AgentsBench) -> Result<LoopbackReport, BenchError> {
    let program = agent_program().context(
        "ocslab-agent not found next to ocslab: build it with `cargo build --release -p ocslab-agent`",
    )?;
    let ips = ["127.0.0.2", "127.0.0.3"];
    let (mut server, mut agents, mut joined) = start_agents(&program, ips).await?;
    joined.sort();
    let pids: Vec<u32> = joined.iter().map(|j| j.2).collect();
    let (src, dst, dst_addr) = (joined[0].0, joined[1].0, joined[1].1);

    // Idle memory: after a second of heartbeats only.
    let settle = tokio::time::Instant::now() + Duration::from_secs(1);
    while tokio::time::timeout_at(settle, server.next_event()).await.is_ok() {}
    let rss_idle = pids
        .iter()
        .map(|p| rss_kib(*p))
        .collect::<Result<Vec<_>, BenchError>>()?;

    // Control-plane round trips.
    let handle = server.host(src).context("source agent gone")?;
    let mut rtt = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3)?;
    for _ in 0..a.pings {
        let d = handle.ping().await?;
        rtt.record((d.as_micros() as u64).max(1))?;
    }

    // Goodput of single unpaced flows.
    let mut flow = 0u64;
    let mut goodput = |transport| {
        flow += 1;
        FlowSpec {
            flow: FlowId(flow),
            partition: PartitionId {
                job: JobId(0),
                map: 0,
                reduce: flow as u32,
                seed: 1,
            },
            bytes: a.loopback_bytes,
            dst,
            dst_addr,
            path: Path::Eps,
            rate: None,
            held: false,
            wavelength: None,
            queue: None,
            transport,
        }
    };
    let mut tcp = Vec::new();
    let mut quic = Vec::new();
    let mut iperf = Vec::new();
    let mut iperf3_note = None;
    for transport in [Transport::Tcp, Transport::Quic] {
        for _ in 0..a.runs {
            // iperf3 runs interleaved with the agent's TCP flows, so both see the same box load.
            if transport == Transport::Tcp && iperf3_note.is_none() {
                match iperf3(ips[0], ips[1], a.iperf_seconds).await {
                    Ok(g) => iperf.push(g),
                    Err(e) => iperf3_note = Some(format!("{e:#}")),
                }
            }
            let spec = goodput(transport);
            let id = spec.flow;
            server.send(src, Command::StartFlow(spec))?;
            let done = wait_flow(&mut server, id).await?;
            if !done.ok {
                bail!("flow {id} failed verification: {done:?}");
            }
            let gbps = done.bytes_received.0 as f64 * 8.0 / (done.end - done.start).as_secs_f64() / 1e9;
            match transport {
                Transport::Tcp => tcp.push(gbps),
                Transport::Quic => quic.push(gbps),
            }
        }
    }
    let rss_after = pids
        .iter()
        .map(|p| rss_kib(*p))
        .collect::<Result<Vec<_>, BenchError>>()?;
    server.shutdown(Duration::from_secs(2)).await;
    for c in &mut agents.agents {
        let _ = c.wait();
    }

    let iperf3_gbps = (!iperf.is_empty()).then(|| median(&iperf));
    let tcp_median = median(&tcp);
    Ok(LoopbackReport {
        path: format!("loopback {} -> {}", ips[0], ips[1]),
        flow_bytes: a.loopback_bytes.0,
        agent_tcp_gbps_median: tcp_median,
        agent_tcp_gbps: tcp,
        agent_quic_gbps_median: median(&quic),
        agent_quic_gbps: quic,
        agent_vs_iperf3: iperf3_gbps.map(|i| tcp_median / i),
        iperf3_gbps,
        iperf3_gbps_runs: iperf,
        iperf3_note,
        control_rtt_us_p50: rtt.value_at_quantile(0.5) as f64,
        control_rtt_us_p99: rtt.value_at_quantile(0.99) as f64,
        control_rtt_us_max: rtt.max() as f64,
        control_rtt_samples: rtt.len(),
        rss_idle_kib: rss_idle,
        rss_after_flows_kib: rss_after,
    })
}

/// Starts the control server and, on `ips`, an agent of `program` (path
/// and leading arguments) for each of two hosts, and waits until both
/// joined; their run directory is removed by then. Fails at once if an
/// agent exits before it joined.
async fn start_agents(
    program: &(PathBuf, Vec<String>),
    ips: [&str; 2],
) -> Result<(ControlServer, Loopback, Vec<(HostId, SocketAddr, u32)>), BenchError> {
    let run_dir = tempfile::Builder::new()
        .prefix("ocslab-bench-agents-")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .tempdir()
        .context("making the agents' run directory")?;
    let dir = run_dir.path().to_path_buf();
    let (mut server, _) = ControlServer::start(&dir, "127.0.0.1:0".parse()?, ServerConfig::default())?;
    let hosts = [HostId::new(0, 0), HostId::new(1, 0)];
    let mut agents = Loopback {
        agents: Vec::new(),
        run_dir: Some(run_dir),
    };
    let (binary, binary_args) = program;
    for (h, ip) in hosts.iter().zip(ips) {
        let launch = AgentLaunch {
            binary: binary.clone(),
            host: *h,
            data_addr: format!("{ip}:0").parse()?,
            scheduler: server.local_addr(),
            run_dir: dir.clone(),
            slots: 1,
            netns: None,
            extra_args: vec![],
            binary_args: binary_args.clone(),
        };
        agents.agents.push(
            launch
                .spawn()
                .with_context(|| format!("starting {}", binary.display()))?,
        );
    }
    let mut joined: Vec<(HostId, SocketAddr, u32)> = Vec::new();
    let deadline = tokio::time::Instant::now() + JOIN_WITHIN;
    while joined.len() < hosts.len() {
        if let Some((i, status)) = agents.exited() {
            bail!(
                "the agent of {} ({}) ended before it joined: {status}",
                hosts[i],
                binary.display()
            );
        }
        // Short waits, so that an agent that died is told at once.
        match tokio::time::timeout(Duration::from_millis(50), server.next_event()).await {
            Ok(Some(Event::Joined { host, hello, .. })) => joined.push((host, hello.data_addr, hello.pid)),
            Ok(Some(Event::Refused { reason, .. })) => bail!("an agent was refused: {reason}"),
            Ok(Some(Event::HostDead { host, .. })) => bail!("{host} died while joining"),
            Ok(Some(_)) => {}
            Ok(None) => bail!("control server stopped"),
            Err(_) if tokio::time::Instant::now() >= deadline => {
                bail!("the agents did not join within {} s", JOIN_WITHIN.as_secs())
            }
            Err(_) => {}
        }
    }
    agents.forget_credentials()?;
    Ok((server, agents, joined))
}

async fn wait_flow(server: &mut ControlServer, flow: FlowId) -> Result<FlowDone, BenchError> {
    loop {
        match next_event(server).await? {
            Event::Agent {
                msg: AgentMsg::FlowDone(d),
                ..
            } if d.flow == flow => return Ok(d),
            Event::Agent {
                msg: AgentMsg::FlowFailed { flow: f, reason, .. },
                ..
            } if f == flow => bail!("flow {flow} failed: {reason}"),
            Event::HostDead { host, cause, .. } => bail!("{host} died: {cause:?}"),
            _ => {}
        }
    }
}

/// iperf3 TCP goodput (receiver side) from `src` to `dst`, in Gbit/s.
async fn iperf3(src: &str, dst: &str, seconds: u32) -> Result<f64, BenchError> {
    use tokio::process::Command as Proc;
    let port = {
        let l = std::net::TcpListener::bind((dst, 0))?;
        l.local_addr()?.port().to_string()
    };
    let mut server = Proc::new("iperf3")
        .args(["-s", "-1", "-B", dst, "-p", &port])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .context("iperf3 is not installed (apt-get install iperf3); no comparison")?;
    // The server needs a moment to listen: retry the client until it connects.
    let mut last = String::new();
    for _ in 0..50 {
        let out = Proc::new("iperf3")
            .args([
                "-c",
                dst,
                "-B",
                src,
                "-p",
                &port,
                "-t",
                &seconds.to_string(),
                "-J",
            ])
            .output()
            .await
            .context("running the iperf3 client")?;
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        if let Some(bps) = json["end"]["sum_received"]["bits_per_second"].as_f64() {
            let _ = server.wait().await;
            return Ok(bps / 1e9);
        }
        last = json["error"].as_str().unwrap_or("no result").to_string();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _ = server.kill().await;
    bail!("iperf3 gave no result: {last}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use ocslab_agent::control::credentials::AGENT_KEY_FILE;
    use ocslab_agent::launch::agent_binary;
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;

    /// A shell script in `dir` that writes, for each start, the run
    /// directory it was given, that directory's mode and whether the
    /// agents' key is in it to `dir/starts`, then runs `then`.
    fn recording_agent(dir: &Path, then: &str) -> (PathBuf, Vec<String>) {
        let script = dir.join("agent");
        let starts = dir.join("starts");
        let body = format!(
            "#!/bin/sh\n\
             for a in \"$@\"; do [ \"$prev\" = --run-dir ] && d=$a; prev=$a; done\n\
             key=absent; [ -f \"$d/{AGENT_KEY_FILE}\" ] && key=present\n\
             echo \"$d $(stat -c %a \"$d\") $key\" >> '{}'\n\
             {then}\n",
            starts.display()
        );
        std::fs::write(&script, body).expect("write the script");
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        (script, Vec::new())
    }

    /// Checks each start the script in `dir` recorded: its run directory
    /// was private (mode 0700) and held the agents' key then, and is gone
    /// now. Returns how many starts there were.
    fn private_then_removed(dir: &Path) -> usize {
        let record = std::fs::read_to_string(dir.join("starts")).unwrap_or_default();
        for line in record.lines() {
            let f: Vec<&str> = line.split(' ').collect();
            assert_eq!(f.len(), 3, "a line of the script's record: {line:?}");
            assert_eq!((f[1], f[2]), ("700", "present"), "{line}");
            assert!(!Path::new(f[0]).exists(), "{} was left behind", f[0]);
        }
        record.lines().count()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_agent_that_dies_before_joining_fails_at_once_and_leaves_no_credentials() {
        let scratch = tempfile::tempdir().expect("scratch");
        let program = recording_agent(scratch.path(), "exit 3");
        let started = std::time::Instant::now();
        let Err(e) = start_agents(&program, ["127.0.0.2", "127.0.0.3"]).await else {
            panic!("agents that exit cannot join");
        };
        let message = e.to_string();
        assert!(
            message.contains("ended before it joined") && message.contains('3'),
            "{message}"
        );
        // Told by the agent's exit, not by the join deadline.
        assert!(
            started.elapsed() < JOIN_WITHIN / 2,
            "took {:?}",
            started.elapsed()
        );
        let starts = private_then_removed(scratch.path());
        assert!(starts > 0, "the script never ran");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_credentials_are_gone_once_both_agents_joined() {
        let Some(real) = agent_binary() else {
            eprintln!("skipped: no ocslab-agent beside the test binary (scripts/test builds it)");
            return;
        };
        let scratch = tempfile::tempdir().expect("scratch");
        let program = recording_agent(scratch.path(), &format!("exec '{}' \"$@\"", real.display()));
        let (server, agents, joined) = start_agents(&program, ["127.0.0.2", "127.0.0.3"])
            .await
            .expect("two real agents join");
        assert_eq!(joined.len(), 2);
        assert_eq!(private_then_removed(scratch.path()), 2);
        server.shutdown(Duration::from_secs(2)).await;
        drop(agents);
    }
}
