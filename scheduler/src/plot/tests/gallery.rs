// TEMPORARY: not committed. Writes sample plots to /tmp/plots-gallery.
use crate::plot::*;
use ocslab_emulator::units::Bytes;

fn lcg(seed: &mut u64) -> f64 {
    *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    ((*seed >> 11) as f64) / ((1u64 << 53) as f64)
}

#[test]
fn gallery() {
    let dir = std::path::Path::new("/tmp/plots-gallery");
    std::fs::create_dir_all(dir).unwrap();
    let mut s = 7u64;
    let mut series = Vec::new();
    for (name, scale) in [("Fair", 3.0), ("ShuffleWatcher", 2.0), ("Co-scheduler", 1.2)] {
        let v: Vec<f64> = (0..200).map(|_| scale * (lcg(&mut s) * 6.0 - 3.0).exp()).collect();
        series.push((name, v));
    }
    cdf(&dir.join("cct_cdf.svg"), "Coflow completion time (CCT) per scheduler", "CCT (s)", XScale::Auto, &series).unwrap();
    let jct: Vec<(&str, Vec<f64>)> = series.iter().map(|(n, v)| (*n, v.iter().map(|x| 10.0 + x * 2.0).collect())).collect();
    cdf(&dir.join("jct_cdf.svg"), "Job completion time (JCT) per scheduler", "JCT (s)", XScale::Auto, &jct).unwrap();
    // timeline: 4 racks, reconfig every 2.5 s, delta 0.2 s
    let mut spans = Vec::new();
    let mut reconf = Vec::new();
    let mut t = 0.0;
    let mut k = 0;
    while t < 20.0 {
        let end = t + 2.3 + lcg(&mut s);
        for r in 0..4usize {
            let d = (r + 1 + k % 3) % 4;
            if lcg(&mut s) < 0.85 {
                spans.push(CircuitSpan { src_rack: r, dst_rack: d, port: 0, from_s: t, to_s: end.min(20.0) });
            }
        }
        reconf.push(end);
        t = end + 0.2;
        k += 1;
    }
    circuit_timeline(&dir.join("circuits.svg"), "Optical circuits (Sunflow)", 4, &spans, &reconf).unwrap();
    // many racks
    let mut spans2 = Vec::new();
    for r in 0..60usize {
        let mut t = 0.0;
        while t < 100.0 {
            let len = 1.0 + lcg(&mut s) * 15.0;
            let d = (r + 1 + (lcg(&mut s) * 58.0) as usize) % 60;
            spans2.push(CircuitSpan { src_rack: r, dst_rack: d, port: 0, from_s: t, to_s: (t + len).min(100.0) });
            t += len + 0.5;
        }
    }
    circuit_timeline(&dir.join("circuits60.svg"), "Optical circuits, 60 racks", 60, &spans2, &[10.0, 30.0, 55.0]).unwrap();
    let links: Vec<(String, Vec<(f64, f64)>)> = (0..8)
        .map(|i| {
            let name = if i < 4 { format!("r{i} EPS uplink") } else { format!("r{} OCS port", i - 4) };
            let v = (1..=100).map(|k| (k as f64 * 0.2, (lcg(&mut s) * (0.5 + i as f64 / 16.0)).min(1.0))).collect();
            (name, v)
        })
        .collect();
    utilization(&dir.join("utilization.svg"), "Link utilization", &links).unwrap();
    let many: Vec<(String, Vec<(f64, f64)>)> = (0..40)
        .map(|i| {
            let v = (1..=500).map(|k| (k as f64 * 0.2, ((k as f64 / 30.0 + i as f64).sin().abs() * 1.1).min(1.0))).collect();
            (format!("r{} uplink", i), v)
        })
        .collect();
    utilization(&dir.join("utilization_heatmap.svg"), "Link utilization", &many).unwrap();
    bytes_by_fabric(
        &dir.join("bytes_by_fabric.svg"),
        "Bytes over EPS vs OCS",
        &[("Fair", Bytes(3_200_000_000), Bytes(800_000_000)), ("ShuffleWatcher", Bytes(2_000_000_000), Bytes(1_500_000_000)), ("Co-scheduler", Bytes(900_000_000), Bytes(2_100_000_000))],
    )
    .unwrap();
    bars(
        &dir.join("makespan.svg"),
        "Makespan, normalised to Fair",
        "makespan / Fair's",
        &[("Fair", 1.0), ("ShuffleWatcher", 0.84), ("Co-scheduler", 0.63)],
        Some(("Fair", 1.0)),
    )
    .unwrap();
    std::fs::write(dir.join("nodata.svg"), render_cdf("CCT", "CCT (s)", XScale::Auto, &[("Fair", vec![])]).unwrap()).unwrap();
}
