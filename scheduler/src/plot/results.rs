//! The standard set of plots of a results folder, written in one call from what each
//! scheduler's run produced. File names and what each shows are documented in
//! `docs/results.md`.

use super::{bars, bytes_by_fabric, cdf, circuit_timeline, utilization, CircuitSpan, PlotError, XScale};
use ocslab_emulator::units::Bytes;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// What the results-folder plots need from one scheduler's run. Times are in seconds since
/// the start of the run; the summary figures should be the very numbers of `summary.json`, so
/// that plot and table agree.
#[derive(Debug, Clone, Default)]
pub struct SchedulerPlotData {
    /// The scheduler's name as the table shows it (e.g. "Fair", "Co-scheduler").
    pub name: String,
    /// Completion time of every finished coflow (s).
    pub cct_s: Vec<f64>,
    /// Completion time of every finished job (s).
    pub jct_s: Vec<f64>,
    /// Makespan (s).
    pub makespan_s: f64,
    /// Mean JCT (s).
    pub avg_jct_s: f64,
    /// Mean CCT (s).
    pub avg_cct_s: f64,
    /// 95th-percentile CCT (s).
    pub p95_cct_s: f64,
    /// Bytes carried over the electrical fabric.
    pub eps_bytes: Bytes,
    /// Bytes carried over optical circuits.
    pub ocs_bytes: Bytes,
    /// Every optical circuit while it was up.
    pub circuits: Vec<CircuitSpan>,
    /// When each OCS reconfiguration began (s).
    pub reconfigurations_s: Vec<f64>,
    /// Per-link utilization samples: (link name, [(t_s, fraction)]), see [`utilization()`](super::utilization()).
    pub utilization: Vec<(String, Vec<(f64, f64)>)>,
}

/// Reads one summary figure of a run.
type Metric = fn(&SchedulerPlotData) -> f64;

/// Writes the standard plots for `runs` (the first run is the baseline that the bar charts
/// are normalised to) of a topology with `racks` racks into `dir`, which must exist. Returns
/// the files written, in a fixed order.
///
/// # Errors
/// The first [`PlotError`] of any plot (invalid data, or a file that cannot be written).
pub fn write_results_plots(
    dir: &Path,
    racks: usize,
    runs: &[SchedulerPlotData],
) -> Result<Vec<PathBuf>, PlotError> {
    let mut written = Vec::new();
    let mut file = |name: &str| {
        let path = dir.join(name);
        written.push(path.clone());
        path
    };
    let cct: Vec<(&str, Vec<f64>)> = runs.iter().map(|r| (r.name.as_str(), r.cct_s.clone())).collect();
    cdf(
        &file("cct_cdf.svg"),
        "Coflow completion time (CCT) per scheduler",
        "CCT (s)",
        XScale::Auto,
        &cct,
    )?;
    let jct: Vec<(&str, Vec<f64>)> = runs.iter().map(|r| (r.name.as_str(), r.jct_s.clone())).collect();
    cdf(
        &file("jct_cdf.svg"),
        "Job completion time (JCT) per scheduler",
        "JCT (s)",
        XScale::Auto,
        &jct,
    )?;
    let fabric: Vec<(&str, Bytes, Bytes)> = runs
        .iter()
        .map(|r| (r.name.as_str(), r.eps_bytes, r.ocs_bytes))
        .collect();
    bytes_by_fabric(
        &file("bytes_by_fabric.svg"),
        "Bytes over EPS vs OCS per scheduler",
        &fabric,
    )?;
    let metrics: [(&str, &str, Metric); 4] = [
        ("makespan", "Makespan", |r| r.makespan_s),
        ("avg_jct", "Average JCT", |r| r.avg_jct_s),
        ("avg_cct", "Average CCT", |r| r.avg_cct_s),
        ("p95_cct", "95th-percentile CCT", |r| r.p95_cct_s),
    ];
    for (stem, what, value) in metrics {
        let path = file(&format!("{stem}.svg"));
        let baseline = runs.first().map(value).filter(|b| *b > 0.0 && b.is_finite());
        match (runs.first(), baseline) {
            (Some(base), Some(b)) => {
                let rows: Vec<(&str, f64)> = runs.iter().map(|r| (r.name.as_str(), value(r) / b)).collect();
                let title = format!("{what}, normalised to {}", base.name);
                let y_label = format!("{} / {}'s (lower is better)", what.to_lowercase(), base.name);
                bars(&path, &title, &y_label, &rows, Some((base.name.as_str(), 1.0)))?;
            }
            _ => {
                let rows: Vec<(&str, f64)> = runs.iter().map(|r| (r.name.as_str(), value(r))).collect();
                bars(&path, what, &format!("{} (s)", what.to_lowercase()), &rows, None)?;
            }
        }
    }
    let mut used = BTreeSet::new();
    for run in runs {
        let slug = unique_slug(&run.name, &mut used);
        circuit_timeline(
            &file(&format!("circuits-{slug}.svg")),
            &format!("Optical circuits under {}", run.name),
            racks,
            &run.circuits,
            &run.reconfigurations_s,
        )?;
        utilization(
            &file(&format!("utilization-{slug}.svg")),
            &format!("Link utilization under {}", run.name),
            &run.utilization,
        )?;
    }
    Ok(written)
}

/// A file-name-safe form of `name` ("Co-scheduler" -> "co-scheduler"), made unique among
/// `used` with a numeric suffix.
fn unique_slug(name: &str, used: &mut BTreeSet<String>) -> String {
    let base: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect::<String>()
        .split('-')
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("-");
    let base = if base.is_empty() {
        "scheduler".to_string()
    } else {
        base
    };
    let mut slug = base.clone();
    let mut n = 2;
    while !used.insert(slug.clone()) {
        slug = format!("{base}-{n}");
        n += 1;
    }
    slug
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_file_safe_and_unique() {
        let mut used = BTreeSet::new();
        assert_eq!(unique_slug("Co-scheduler", &mut used), "co-scheduler");
        assert_eq!(unique_slug("Fair + Delay", &mut used), "fair-delay");
        assert_eq!(unique_slug("fair delay", &mut used), "fair-delay-2");
        assert_eq!(unique_slug("∅", &mut used), "scheduler");
    }
}
