//! The `--loopback` part of `ocslab bench agents`: two agents outside any
//! namespace, one unshaped flow on loopback per run against iperf3.

use super::*;

/// Kills the agents this benchmark started if it fails half-way.
struct Agents(Vec<Child>);

impl Drop for Agents {
    fn drop(&mut self) {
        for c in &mut self.0 {
            if matches!(c.try_wait(), Ok(None)) {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
}

async fn next_event(server: &mut ControlServer) -> Result<Event, BenchError> {
    match tokio::time::timeout(Duration::from_secs(60), server.next_event()).await {
        Ok(Some(ev)) => Ok(ev),
        Ok(None) => bail!("control server stopped"),
        Err(_) => bail!("no event from the agents within 60 s"),
    }
}

/// The loopback measurement (`--loopback`): two agents outside any namespace.
pub(super) async fn measure_loopback(a: &AgentsBench) -> Result<LoopbackReport, BenchError> {
    let binary = agent_binary().context(
        "ocslab-agent not found next to ocslab: build it with `cargo build --release -p ocslab-agent`",
    )?;
    let run_dir = std::env::temp_dir().join(format!("ocslab-bench-agents-{}", std::process::id()));
    let (mut server, _) = ControlServer::start(&run_dir, "127.0.0.1:0".parse()?, ServerConfig::default())?;
    let hosts = [HostId::new(0, 0), HostId::new(1, 0)];
    let ips = ["127.0.0.2", "127.0.0.3"];
    let mut agents = Agents(Vec::new());
    for (h, ip) in hosts.iter().zip(ips) {
        let launch = AgentLaunch {
            binary: binary.clone(),
            host: *h,
            data_addr: format!("{ip}:0").parse()?,
            scheduler: server.local_addr(),
            run_dir: run_dir.clone(),
            slots: 1,
            control_socket: Some(std::net::UdpSocket::bind("127.0.0.1:0")?),
            netns: None,
            extra_args: vec![],
            binary_args: vec![],
        };
        agents.0.push(
            launch
                .spawn()
                .with_context(|| format!("starting {}", binary.display()))?,
        );
    }
    let mut joined: Vec<(HostId, SocketAddr, u32)> = Vec::new();
    while joined.len() < hosts.len() {
        match next_event(&mut server).await? {
            Event::Joined { host, hello, .. } => joined.push((host, hello.data_addr, hello.pid)),
            Event::Refused { reason, .. } => bail!("an agent was refused: {reason}"),
            Event::HostDead { host, .. } => bail!("{host} died while joining"),
            _ => {}
        }
    }
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
    for c in &mut agents.0 {
        let _ = c.wait();
    }
    let _ = std::fs::remove_dir_all(&run_dir);

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
