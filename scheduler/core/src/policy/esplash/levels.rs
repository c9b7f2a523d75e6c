//! Node performance levels for ESPLASH (J. Wang, PhD thesis 2017, Sec.
//! 5.2.1): the grouping algorithm (Alg. 5.2.1) and the group-based k-means
//! (Alg. 5.2.2) over per-node performance vectors (mean execution time of
//! each task type the node ran).
//!
//! Readings: after Alg. 5.2.1, two groups stay apart only if one is faster
//! in every dimension (its largest time below the other's smallest); any
//! other pair (each better somewhere, or overlapping in a dimension) is
//! merged, which is where lines 8-10 lead. Dimensions are divided by their
//! mean over nodes so that long task types do not outweigh short ones.
//! Alg. 5.2.2 starts from "random" centres; here the initial centres are
//! spread evenly over the groups in speed order, so a run is deterministic.

/// Alg. 5.2.1: groups (lists of point indices) of `points` (one
/// performance vector per node, equal lengths), such that any two groups
/// are ordered: one is faster in every dimension. Groups come out slowest
/// first.
pub fn group(points: &[Vec<f64>]) -> Vec<Vec<usize>> {
    let dims = points.first().map_or(0, |p| p.len());
    let mut groups: Vec<(Vec<usize>, Vec<f64>, Vec<f64>)> = points
        .iter()
        .enumerate()
        .map(|(i, p)| (vec![i], p.clone(), p.clone()))
        .collect();
    let ordered = |a: &(Vec<usize>, Vec<f64>, Vec<f64>), b: &(Vec<usize>, Vec<f64>, Vec<f64>)| {
        (0..dims).all(|d| a.2[d] < b.1[d]) || (0..dims).all(|d| b.2[d] < a.1[d])
    };
    loop {
        let mut merged = false;
        'outer: for i in 0..groups.len() {
            for j in i + 1..groups.len() {
                if !ordered(&groups[i], &groups[j]) {
                    let g = groups.remove(j);
                    let a = &mut groups[i];
                    a.0.extend(g.0);
                    for d in 0..dims {
                        a.1[d] = a.1[d].min(g.1[d]);
                        a.2[d] = a.2[d].max(g.2[d]);
                    }
                    merged = true;
                    break 'outer;
                }
            }
        }
        if !merged {
            break;
        }
    }
    // Slowest first: by the largest time (ordered groups sort the same on any dimension).
    groups.sort_by(|a, b| b.2.iter().sum::<f64>().total_cmp(&a.2.iter().sum::<f64>()));
    groups
        .into_iter()
        .map(|(mut ids, _, _)| {
            ids.sort_unstable();
            ids
        })
        .collect()
}

fn dist2(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

/// Alg. 5.2.2: at most `k` clusters of `points`, whole groups of
/// [`group`] at a time (each group joins the centre most of its members
/// prefer). Returns each point's level, 1 = slowest … L = fastest.
pub fn levels(points: &[Vec<f64>], k: usize) -> Vec<u32> {
    if points.is_empty() {
        return Vec::new();
    }
    let dims = points[0].len();
    // Normalise each dimension by its mean.
    let means: Vec<f64> = (0..dims)
        .map(|d| points.iter().map(|p| p[d]).sum::<f64>() / points.len() as f64)
        .collect();
    let pts: Vec<Vec<f64>> = points
        .iter()
        .map(|p| {
            (0..dims)
                .map(|d| if means[d] > 0.0 { p[d] / means[d] } else { 0.0 })
                .collect()
        })
        .collect();
    let groups = group(&pts);
    let k = k.clamp(1, groups.len());
    let centroid = |members: &[usize]| -> Vec<f64> {
        (0..dims)
            .map(|d| members.iter().map(|&i| pts[i][d]).sum::<f64>() / members.len().max(1) as f64)
            .collect()
    };
    // Initial centres: groups spread evenly from slowest to fastest.
    let mut centres: Vec<Vec<f64>> = (0..k)
        .map(|c| {
            let g = if k == 1 {
                0
            } else {
                c * (groups.len() - 1) / (k - 1)
            };
            centroid(&groups[g])
        })
        .collect();
    let mut assign: Vec<usize> = vec![usize::MAX; groups.len()];
    for _ in 0..100 {
        let mut changed = false;
        for (g, members) in groups.iter().enumerate() {
            let mut votes = vec![0usize; k];
            for &i in members {
                let best = (0..k)
                    .min_by(|&a, &b| dist2(&pts[i], &centres[a]).total_cmp(&dist2(&pts[i], &centres[b])))
                    .unwrap_or(0);
                votes[best] += 1;
            }
            let choice = (0..k)
                .max_by_key(|&c| (votes[c], std::cmp::Reverse(c)))
                .unwrap_or(0);
            if assign[g] != choice {
                assign[g] = choice;
                changed = true;
            }
        }
        for (c, centre) in centres.iter_mut().enumerate() {
            let members: Vec<usize> = groups
                .iter()
                .enumerate()
                .filter(|(g, _)| assign[*g] == c)
                .flat_map(|(_, m)| m.iter().copied())
                .collect();
            if !members.is_empty() {
                *centre = centroid(&members);
            }
        }
        if !changed {
            break;
        }
    }
    // Used clusters, slowest (largest normalised time) first → level 1.
    let mut used: Vec<usize> = (0..k).filter(|c| assign.contains(c)).collect();
    used.sort_by(|a, b| {
        centres[*b]
            .iter()
            .sum::<f64>()
            .total_cmp(&centres[*a].iter().sum::<f64>())
    });
    let mut out = vec![1; points.len()];
    for (g, members) in groups.iter().enumerate() {
        let level = used.iter().position(|c| *c == assign[g]).unwrap_or(0) as u32 + 1;
        for &i in members {
            out[i] = level;
        }
    }
    out
}
