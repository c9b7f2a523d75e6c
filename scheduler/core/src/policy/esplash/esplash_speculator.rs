//! ESPLASH (Sec. 5.2): host performance levels, straggler values, copies
//! with a minimum level, and the speculative value that picks among them.

use super::levels;
use super::{
    check_periods, fair_choice, fifteen_seconds, one_second, single_attempt, Checks, CopyRequest, TaskType,
    TimeStats,
};
use crate::engine::{AttemptId, ClusterView, Outcome, Phase, SlotConfig, TaskRecord};
use crate::model::job::{TaskId, TaskKind};
use crate::policy::{parse_params, PolicyError, TaskChoice, TaskPolicy};
use crate::{HostId, Nanos};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};

/// Where ESPLASH's host levels come from.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum LevelSource {
    /// `"speed"` (ranks of the configured host speeds, hosts without one at
    /// 1.0) or `"measured"` (Algs. 5.2.1-5.2.2 on finished tasks).
    Named(String),
    /// An explicit level per host, e.g. `{ r0h0 = 1, r0h1 = 4 }` (others: 1).
    Table(BTreeMap<String, u32>),
}

/// ESPLASH's parameters (`[scheduler_params.esplash]`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EsplashParams {
    /// Where levels come from (default `"speed"`).
    #[serde(default = "speed")]
    pub levels: LevelSource,
    /// Clusters for measured levels (default 4, as Sec. 5.3.2).
    #[serde(default = "four")]
    pub k: usize,
    /// Straggler threshold τ on the straggler value (default 3).
    #[serde(default = "three")]
    pub tau: f64,
    /// Measured levels are recomputed this often (default 30 s).
    #[serde(default = "thirty_seconds")]
    pub reclassify: Nanos,
    /// Speculation check period after a check that copied nothing (default 1 s).
    #[serde(default = "one_second")]
    pub interval: Nanos,
    /// Check period after a copy (default 15 s).
    #[serde(default = "fifteen_seconds")]
    pub after_copy: Nanos,
}

fn speed() -> LevelSource {
    LevelSource::Named("speed".into())
}
fn four() -> usize {
    4
}
fn three() -> f64 {
    3.0
}
fn thirty_seconds() -> Nanos {
    Nanos(30_000_000_000)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    Speed,
    Measured,
    Table,
}

/// Alg. 5.2.3: the minimum level for a copy of a task on a level-`i`
/// host, from `levels[m] = (C(m) slots, EstT(m))` for m = 1..=HL (index
/// m−1; `None` where the type has no statistics). Returns `(minL, ExpT)`.
pub fn min_level(i: u32, levels: &[(f64, Option<f64>)]) -> Option<(u32, f64)> {
    let hl = levels.len() as u32;
    let mut best: Option<(u32, f64)> = None;
    for l in i.max(1)..=hl {
        let known: Vec<(f64, f64)> = levels[(l - 1) as usize..]
            .iter()
            .filter_map(|(c, t)| t.map(|t| (*c, t)))
            .filter(|(c, _)| *c > 0.0)
            .collect();
        let total: f64 = known.iter().map(|(c, _)| c).sum();
        if total <= 0.0 {
            continue;
        }
        let exp: f64 = known.iter().map(|(c, t)| c / total * t).sum();
        if best.is_none_or(|(_, e)| exp < e) {
            best = Some((l, exp));
        }
    }
    best
}

/// Sec. 5.2.3's speculative value: `Σ_{m≥minL} C(m)·(EstEnd − now − EstT(m)) / Σ_m C(m)`.
pub fn speculative_value(min_l: u32, est_end_from_now: f64, levels: &[(f64, Option<f64>)]) -> f64 {
    let all: f64 = levels.iter().map(|(c, _)| c).sum();
    if all <= 0.0 {
        return 0.0;
    }
    let gain: f64 = levels
        .iter()
        .skip(min_l.saturating_sub(1) as usize)
        .filter_map(|(c, t)| t.map(|t| c * (est_end_from_now - t)))
        .sum();
    gain / all
}

/// ESPLASH over Fair.
#[derive(Debug)]
pub struct Esplash {
    params: EsplashParams,
    source: Source,
    checks: Checks,
    level: BTreeMap<HostId, u32>,
    levels_known: bool,
    next_reclassify: Nanos,
    /// Compute times per host and task type (finished, non-straggling).
    host_stats: BTreeMap<(HostId, TaskType), TimeStats>,
    stragglers: BTreeSet<HostId>,
    /// Compute progress of each attempt at the previous check.
    last_progress: BTreeMap<AttemptId, (Nanos, f64)>,
}

impl Esplash {
    /// Builds it from `[scheduler_params.esplash]`.
    pub fn from_params(params: &toml::Table) -> Result<Box<dyn TaskPolicy>, PolicyError> {
        let p: EsplashParams = parse_params("esplash", params)?;
        check_periods("esplash", p.interval, p.after_copy)?;
        let bad = |message: String| {
            Err(PolicyError::Params {
                policy: "esplash".into(),
                message,
            })
        };
        let mut level = BTreeMap::new();
        let source = match &p.levels {
            LevelSource::Named(n) if n == "speed" => Source::Speed,
            LevelSource::Named(n) if n == "measured" => Source::Measured,
            LevelSource::Named(n) => {
                return bad(format!(
                    "`levels` = {n:?}: valid are \"speed\", \"measured\" or a table {{ r0h0 = 1, ... }}"
                ))
            }
            LevelSource::Table(t) => {
                for (h, l) in t {
                    let host: HostId = match h.parse() {
                        Ok(h) => h,
                        Err(e) => return bad(format!("`levels.{h}`: {e}")),
                    };
                    if *l == 0 {
                        return bad(format!("`levels.{h}`: levels start at 1 (slowest)"));
                    }
                    level.insert(host, *l);
                }
                Source::Table
            }
        };
        if p.k == 0 || !(p.tau.is_finite() && p.tau > 0.0) || p.reclassify == Nanos::ZERO {
            return bad("`k` must be >= 1, `tau` > 0 and `reclassify` > 0".into());
        }
        Ok(Box::new(Esplash {
            checks: Checks::new(p.interval, p.after_copy),
            params: p,
            source,
            level,
            levels_known: source == Source::Table,
            next_reclassify: Nanos::ZERO,
            host_stats: BTreeMap::new(),
            stragglers: BTreeSet::new(),
            last_progress: BTreeMap::new(),
        }))
    }

    /// The level of `host` (1 if unknown).
    pub fn level_of(&self, host: HostId) -> u32 {
        self.level.get(&host).copied().unwrap_or(1)
    }

    /// Hosts marked as stragglers at the last check.
    pub fn stragglers(&self) -> &BTreeSet<HostId> {
        &self.stragglers
    }

    fn highest_level(&self) -> u32 {
        self.level.values().copied().max().unwrap_or(1)
    }

    /// Sets levels from the configured speeds, or (measured) from the
    /// performance vectors when due.
    fn classify(&mut self, now: Nanos, view: &ClusterView<'_>) {
        match self.source {
            Source::Table => {}
            Source::Speed if !self.levels_known => {
                let speed_of = |h: HostId| view.config().host_speed.get(&h).copied().unwrap_or(1.0);
                let mut speeds: Vec<f64> = view.hosts().iter().map(|h| speed_of(h.id())).collect();
                speeds.sort_by(f64::total_cmp);
                speeds.dedup();
                for h in view.hosts() {
                    let rank = speeds.iter().position(|s| *s == speed_of(h.id())).unwrap_or(0);
                    self.level.insert(h.id(), rank as u32 + 1);
                }
                self.levels_known = true;
            }
            Source::Speed => {}
            Source::Measured if now >= self.next_reclassify => {
                self.next_reclassify = now + self.params.reclassify;
                self.measure_levels(view);
            }
            Source::Measured => {}
        }
    }

    /// Algs. 5.2.1-5.2.2 on per-host mean compute times; a type missing on
    /// a host is filled in from the host's average ratio to the type means.
    fn measure_levels(&mut self, view: &ClusterView<'_>) {
        let mut type_stats: BTreeMap<TaskType, TimeStats> = BTreeMap::new();
        let mut hosts_with: BTreeMap<TaskType, u32> = BTreeMap::new();
        for ((_, ty), s) in &self.host_stats {
            type_stats.entry(*ty).or_default().merge(s);
            *hosts_with.entry(*ty).or_default() += 1;
        }
        let dims: Vec<TaskType> = hosts_with
            .iter()
            .filter(|(_, n)| **n >= 2)
            .map(|(t, _)| *t)
            .collect();
        if dims.is_empty() {
            return;
        }
        let mut ids = Vec::new();
        let mut points = Vec::new();
        for h in view.hosts() {
            let own: Vec<(TaskType, f64)> = dims
                .iter()
                .filter_map(|t| {
                    self.host_stats
                        .get(&(h.id(), *t))
                        .and_then(|s| s.mean())
                        .map(|m| (*t, m))
                })
                .collect();
            if own.is_empty() {
                continue;
            }
            let type_mean = |t: &TaskType| type_stats.get(t).and_then(|s| s.mean()).unwrap_or(1.0);
            let ratio = own.iter().map(|(t, m)| m / type_mean(t)).sum::<f64>() / own.len() as f64;
            let pv: Vec<f64> = dims
                .iter()
                .map(|t| {
                    own.iter()
                        .find(|(o, _)| o == t)
                        .map_or(ratio * type_mean(t), |(_, m)| *m)
                })
                .collect();
            ids.push(h.id());
            points.push(pv);
        }
        let lv = levels::levels(&points, self.params.k);
        let mut count: BTreeMap<u32, usize> = BTreeMap::new();
        for (h, l) in ids.iter().zip(&lv) {
            self.level.insert(*h, *l);
            *count.entry(*l).or_default() += 1;
        }
        let common = count
            .iter()
            .max_by_key(|(l, n)| (**n, std::cmp::Reverse(**l)))
            .map_or(1, |(l, _)| *l);
        for h in view.hosts() {
            self.level.entry(h.id()).or_insert(common);
        }
        self.levels_known = true;
    }

    /// ST(level, type).
    fn level_stats(&self, level: u32, ty: TaskType) -> TimeStats {
        let mut s = TimeStats::default();
        for ((h, t), hs) in &self.host_stats {
            if *t == ty && self.level_of(*h) == level {
                s.merge(hs);
            }
        }
        s
    }

    /// Slots of alive, non-straggler hosts per level (index level−1) for `kind`.
    fn containers(&self, view: &ClusterView<'_>, kind: TaskKind) -> Vec<f64> {
        let mut c = vec![0.0; self.highest_level() as usize];
        for h in view
            .hosts()
            .iter()
            .filter(|h| h.alive() && !self.stragglers.contains(&h.id()))
        {
            let s = h.slots();
            let n = match (view.config().slots, kind) {
                (SlotConfig::Shared, _) | (_, TaskKind::Map) => s.map,
                (_, TaskKind::Reduce) => s.reduce,
            };
            c[(self.level_of(h.id()) - 1) as usize] += n as f64;
        }
        c
    }

    /// Sec. 5.2.2: marks stragglers; returns each computing attempt's
    /// `(host, task, EstT, compute start)` for the candidates step.
    fn detect(&mut self, now: Nanos, view: &ClusterView<'_>) -> Vec<(HostId, TaskId, f64, f64)> {
        let mut seen = BTreeMap::new();
        let mut out = Vec::new();
        let mut stragglers = BTreeSet::new();
        for h in view.hosts().iter().filter(|h| h.alive()) {
            let level = self.level_of(h.id());
            let mut sv = 0.0;
            let mut judged = 0u32;
            for a in h.attempts() {
                let Some(att) = view.attempt(*a) else { continue };
                let (Phase::Computing { .. }, Some(c0)) = (att.phase(), att.compute_started()) else {
                    continue;
                };
                let p = att.compute_progress(now);
                let elapsed = now.saturating_sub(c0).as_secs_f64();
                seen.insert(*a, (now, p));
                if p <= 0.0 || elapsed <= 0.0 {
                    continue;
                }
                let est_t = elapsed / p;
                out.push((h.id(), a.task, est_t, c0.as_secs_f64()));
                let st = self.level_stats(level, (a.task.job, a.task.kind));
                let (Some(mu), Some(sigma)) = (st.mean(), st.sigma()) else {
                    continue;
                };
                judged += 1;
                if est_t > mu {
                    sv += (est_t - mu) / sigma;
                }
                let rate = match self.last_progress.get(a) {
                    Some((t0, p0)) if now > *t0 => (p - p0) / now.saturating_sub(*t0).as_secs_f64(),
                    _ => p / elapsed,
                };
                let level_rate = 1.0 / mu;
                sv += if rate <= 0.0 {
                    self.params.tau
                } else {
                    (level_rate / rate - 1.0).max(0.0)
                };
            }
            if judged > 0 && sv / judged as f64 > self.params.tau {
                stragglers.insert(h.id());
            }
        }
        self.last_progress = seen;
        self.stragglers = stragglers;
        out
    }

    /// Sec. 5.2.3: the copy request with the largest speculative value.
    fn best_request(
        &self,
        now: Nanos,
        view: &ClusterView<'_>,
        running: &[(HostId, TaskId, f64, f64)],
    ) -> Option<(TaskId, CopyRequest)> {
        let t = now.as_secs_f64();
        let hl = self.highest_level();
        let mut best: Option<(TaskId, CopyRequest)> = None;
        for (host, task, est_t, c0) in running {
            if !self.stragglers.contains(host)
                || self.checks.requests.contains_key(task)
                || !single_attempt(view, *task)
            {
                continue;
            }
            let ty = (task.job, task.kind);
            let c = self.containers(view, task.kind);
            let table: Vec<(f64, Option<f64>)> = (1..=hl)
                .map(|l| (c[(l - 1) as usize], self.level_stats(l, ty).mean()))
                .collect();
            let Some((min_l, _)) = min_level(self.level_of(*host), &table) else {
                continue;
            };
            let from_now = c0 + est_t - t;
            let value = speculative_value(min_l, from_now, &table);
            if value > 0.0 && best.is_none_or(|(_, b)| value > b.value) {
                best = Some((
                    *task,
                    CopyRequest {
                        min_level: min_l,
                        value,
                    },
                ));
            }
        }
        best
    }
}

impl TaskPolicy for Esplash {
    fn name(&self) -> &str {
        "esplash"
    }

    fn on_free_slot(&mut self, now: Nanos, view: &ClusterView<'_>, host: HostId) -> Option<TaskChoice> {
        self.checks.active = view.active_job_count() > 0;
        self.classify(now, view);
        if self.checks.due(now) {
            self.checks.prune(view);
            let running = self.detect(now, view);
            let copy = self.best_request(now, view, &running);
            if let Some((t, r)) = copy {
                self.checks.requests.insert(t, r);
            }
            self.checks.done(now, copy.is_some());
        }
        let level = self.level_of(host);
        let straggler = self.stragglers.contains(&host);
        if let Some(t) = self
            .checks
            .copy_for(view, host, |r| !straggler && level >= r.min_level)
        {
            return Some(TaskChoice::Speculate(t));
        }
        fair_choice(view, host)
    }

    fn on_attempt_ended(&mut self, _now: Nanos, _view: &ClusterView<'_>, rec: &TaskRecord) {
        self.last_progress.remove(&rec.attempt);
        if rec.outcome != Outcome::Finished || self.stragglers.contains(&rec.host) {
            return;
        }
        if let Some(c0) = rec.compute_started {
            let secs = rec.ended.saturating_sub(c0).as_secs_f64();
            self.host_stats
                .entry((rec.host, (rec.attempt.task.job, rec.kind)))
                .or_default()
                .add(secs);
        }
    }

    fn next_wakeup(&self) -> Option<Nanos> {
        self.checks.active.then_some(self.checks.next)
    }

    fn wants_idle_offers(&self) -> bool {
        true
    }
}
