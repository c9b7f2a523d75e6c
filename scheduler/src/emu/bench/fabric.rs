//! The fabric part of `ocslab bench agents`: one path against iperf3,
//! the all-to-all shuffle against the max-min bound, measured CCT against
//! the fluid model, control-plane round trips and agent memory.

use super::*;

/// Flows of the benchmark's replays, with ids unique over the whole lab.
struct Coflows {
    next_flow: u64,
    next_coflow: u64,
}

impl Coflows {
    fn coflow(&mut self, arrival: Nanos, pairs: &[(HostId, HostId)], bytes: Bytes) -> Coflow {
        self.next_coflow += 1;
        let id = CoflowId(self.next_coflow);
        let flows = pairs
            .iter()
            .map(|&(src, dst)| {
                self.next_flow += 1;
                NetFlowSpec {
                    id: NetFlowId(self.next_flow),
                    coflow: id,
                    src,
                    dst,
                    bytes,
                    weight: 1,
                }
            })
            .collect();
        Coflow { id, arrival, flows }
    }
}

pub(super) async fn measure_fabric(a: &AgentsBench, topo: &Topology) -> Result<FabricReport, BenchError> {
    let fabric = FabricChoice::Build {
        topology_file: Some(a.topology.clone()),
    };
    let mut lab = Lab::start(topo, fabric, &LabConfig::default()).await?;
    let result = fabric_figures(a, topo, &mut lab).await;
    let stopped = lab.stop().await;
    let report = result?;
    stopped?;
    Ok(report)
}

async fn fabric_figures(a: &AgentsBench, topo: &Topology, lab: &mut Lab) -> Result<FabricReport, BenchError> {
    let hosts: Vec<HostId> = lab.data_addrs().keys().copied().collect();
    let cfg = EmuConfig {
        coflow_policy: "fair".into(),
        time_limit: Duration::from_secs(60),
        ..EmuConfig::default()
    };
    // Idle memory: after a second of heartbeats only.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss_idle = lab
        .agent_pids()
        .values()
        .map(|p| rss_kib(*p))
        .collect::<Result<Vec<_>, BenchError>>()?;

    // Control-plane round trips, to the first host's agent.
    let first = *hosts.first().context("the topology has no host")?;
    let handle = lab.server()?.host(first).context("first agent gone")?;
    let mut rtt = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3)?;
    for _ in 0..a.pings {
        let d = handle.ping().await?;
        rtt.record((d.as_micros() as u64).max(1))?;
    }

    // One path across the EPS core: agent vs iperf3, interleaved.
    if topo.racks < 2 {
        bail!("{}: the benchmark needs at least 2 racks", a.topology.display());
    }
    let (src, dst) = (HostId::new(0, 0), HostId::new(1, 0));
    let dst_ip = lab
        .data_addrs()
        .get(&dst)
        .context("no data address for the destination")?
        .ip()
        .to_string();
    let mut ids = Coflows {
        next_flow: 0,
        next_coflow: 0,
    };
    let (mut agent, mut iperf, mut iperf3_note) = (Vec::new(), Vec::new(), None);
    for _ in 0..a.runs {
        if iperf3_note.is_none() {
            match iperf3_in_fabric(lab, src, dst, &dst_ip, a.path_bytes) {
                Ok(mbps) => iperf.push(mbps),
                Err(e) => iperf3_note = Some(format!("{e:#}")),
            }
        }
        let c = ids.coflow(Nanos::ZERO, &[(src, dst)], a.path_bytes);
        let r = emu::replay_on(lab, &[c], &cfg).await?;
        let f = r.wire.flows.first().context("the path flow did not finish")?;
        if !f.verified {
            bail!("the path flow arrived corrupt");
        }
        agent.push(f.bytes_received.0 as f64 * 8.0 / f.fct().as_secs_f64() / 1e6);
    }
    let line_rate = topo.host_rate.min(topo.uplink_rate).0 as f64 / 1e6;
    let iperf_median = (!iperf.is_empty()).then(|| median(&iperf));
    let agent_median = median(&agent);

    // All-to-all shuffle, then a ring of rack-to-rack shuffles.
    let pairs: Vec<(HostId, HostId)> = hosts
        .iter()
        .flat_map(|&s| hosts.iter().filter(move |&&d| d != s).map(move |&d| (s, d)))
        .collect();
    let all = ids.coflow(Nanos::ZERO, &pairs, a.shuffle_bytes);
    let all_id = all.id;
    let r = emu::replay_on(lab, &[all], &cfg).await?;
    let mut rows = compare::compare(topo, &cfg.coflow_policy, &r.wire.flows)?;
    let row = rows
        .iter()
        .find(|c| c.coflow == all_id)
        .context("the all-to-all shuffle did not finish")?
        .clone();
    let total = row.bytes.0;
    let goodput = total as f64 * 8.0 / row.measured.as_secs_f64() / 1e6;
    let bound = total as f64 * 8.0 / row.predicted.as_secs_f64() / 1e6;
    let fcts: Vec<f64> = r.wire.flows.iter().map(|f| f.fct().as_secs_f64()).collect();
    let delays: Vec<f64> = r
        .wire
        .flows
        .iter()
        .map(|f| f.start.saturating_sub(f.requested).as_secs_f64())
        .collect();
    let all_to_all = ShuffleReport {
        hosts: hosts.len() as u32,
        flows: row.flows,
        flow_bytes: a.shuffle_bytes.0,
        total_bytes: total,
        measured_cct_s: row.measured.as_secs_f64(),
        fluid_cct_s: row.predicted.as_secs_f64(),
        goodput_mbps: goodput,
        bound_mbps: bound,
        efficiency: goodput / bound,
        fct_p50_s: median(&fcts),
        fct_max_s: fcts.iter().copied().fold(0.0, f64::max),
        start_delay_max_s: delays.iter().copied().fold(0.0, f64::max),
        flows_started_1s_late: delays.iter().filter(|&&d| d >= 1.0).count() as u32,
        flows_sharing_a_queue: r.net.shared_queues,
    };
    let ring: Vec<Coflow> = (0..topo.racks)
        .map(|r| {
            let next = (r + 1) % topo.racks;
            let pairs: Vec<(HostId, HostId)> = (0..topo.hosts_per_rack)
                .flat_map(|i| {
                    (0..topo.hosts_per_rack).map(move |j| (HostId::new(r, i), HostId::new(next, j)))
                })
                .collect();
            ids.coflow(Nanos::from_millis(300 * u64::from(r)), &pairs, a.shuffle_bytes)
        })
        .collect();
    let r = emu::replay_on(lab, &ring, &cfg).await?;
    rows.extend(compare::compare(topo, &cfg.coflow_policy, &r.wire.flows)?);

    Ok(FabricReport {
        topology: format!("{} ({})", topo.name, a.topology.display()),
        path: PathReport {
            src,
            dst,
            bytes: a.path_bytes.0,
            line_rate_mbps: line_rate,
            agent_mbps_median: agent_median,
            agent_mbps: agent,
            agent_vs_iperf3: iperf_median.map(|i| agent_median / i),
            iperf3_mbps_median: iperf_median,
            iperf3_mbps: iperf,
            iperf3_note,
        },
        all_to_all,
        cct_vs_sim_summary: compare::summarize(&rows),
        cct_vs_sim: rows,
        control_rtt_us_p50: rtt.value_at_quantile(0.5) as f64,
        control_rtt_us_p99: rtt.value_at_quantile(0.99) as f64,
        control_rtt_us_max: rtt.max() as f64,
        control_rtt_samples: rtt.len(),
        rss_idle_max_mib: rss_idle.iter().copied().max().unwrap_or(0) as f64 / 1024.0,
        rss_idle_kib: rss_idle,
    })
}

/// iperf3 moving `bytes` from `src` to `dst` (`dst_ip`) inside their host
/// namespaces; the receiver's goodput in Mbit/s.
fn iperf3_in_fabric(
    lab: &Lab,
    src: HostId,
    dst: HostId,
    dst_ip: &str,
    bytes: Bytes,
) -> Result<f64, BenchError> {
    use std::process::{Command as Proc, Stdio};
    let port = "5201";
    let mut server = {
        let mut c = Proc::new("iperf3");
        c.args(["-s", "-1", "-B", dst_ip, "-p", port])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        Killed(
            lab.fabric()
                .spawn_in(dst, c)
                .context("starting iperf3 (apt-get install iperf3); no comparison")?,
        )
    };
    // The server needs a moment to listen: retry the client until it connects.
    let mut last = String::new();
    for _ in 0..50 {
        let mut c = Proc::new("iperf3");
        c.args(["-c", dst_ip, "-p", port, "-n", &bytes.0.to_string(), "-J"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let child = lab
            .fabric()
            .spawn_in(src, c)
            .context("starting the iperf3 client")?;
        let out = tokio::task::block_in_place(|| child.wait_with_output()).context("running iperf3")?;
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        if let Some(bps) = json["end"]["sum_received"]["bits_per_second"].as_f64() {
            let _ = tokio::task::block_in_place(|| server.0.wait());
            return Ok(bps / 1e6);
        }
        last = json["error"].as_str().unwrap_or("no result").to_string();
        std::thread::sleep(Duration::from_millis(100));
    }
    bail!("iperf3 gave no result: {last}")
}

/// A process killed (by its pid) and reaped when dropped, unless it ended.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}
