//! ShuffleWatcher, NAS and Dawn as engine [`TaskPolicy`]s: each offer
//! builds a [`super::NetView`] ([`super::engine_view`]), asks the pure
//! policy, and turns its [`TaskPick`] into the engine's [`TaskChoice`].
//! Also the constructors the policy table (`policy::POLICIES`) lists, with
//! their parameters (`[scheduler_params.<name>]`, unknown keys refused).

use super::engine_view::{key, ViewBuilder};
use super::{SlotKind, TaskPick};
use crate::engine::{ClusterView, FreeSlots};
use crate::model::job::{JobId, TaskId};
use crate::policy::dawn::{Dawn, DawnConfig, Unpreferred};
use crate::policy::nas::predictor::ClassLimits;
use crate::policy::nas::{Nas, NasConfig};
use crate::policy::shufflewatcher::{Fairness, ShuffleWatcher, ShuffleWatcherConfig};
use crate::policy::{check_positive_duration, parse_params, PolicyError, TaskChoice, TaskPolicy};
use crate::{Bytes, HostId, Nanos};
use serde::Deserialize;

/// Which kind of task fits the free slots.
fn slot_kind(free: FreeSlots) -> Option<SlotKind> {
    match (free.map > 0, free.reduce > 0) {
        (true, true) => Some(SlotKind::Any),
        (true, false) => Some(SlotKind::Map),
        (false, true) => Some(SlotKind::Reduce),
        (false, false) => None,
    }
}

/// The engine task for a pick (a reduce pick takes the job's lowest pending reduce).
fn choice(view: &ClusterView<'_>, pick: TaskPick) -> Option<TaskChoice> {
    match pick {
        TaskPick::Map { job, index } => Some(TaskChoice::Run(TaskId::map(JobId(job.0), index))),
        TaskPick::Reduce { job } => {
            let j = view.job(JobId(job.0))?;
            let r = j.pending_reduces().first().copied()?;
            Some(TaskChoice::Run(TaskId::reduce(j.id(), r)))
        }
    }
}

/// Which of the three algorithms a [`NetAwarePolicy`] runs.
#[derive(Clone, Debug)]
enum Algorithm {
    ShuffleWatcher(ShuffleWatcher),
    Nas(Nas),
    Dawn(Dawn),
}

/// A network-aware policy under the engine.
#[derive(Clone, Debug)]
pub struct NetAwarePolicy {
    name: &'static str,
    algorithm: Algorithm,
    views: ViewBuilder,
    wakeup: Option<Nanos>,
}

impl NetAwarePolicy {
    fn new(name: &'static str, algorithm: Algorithm) -> NetAwarePolicy {
        NetAwarePolicy {
            name,
            algorithm,
            views: ViewBuilder::default(),
            wakeup: None,
        }
    }
}

impl TaskPolicy for NetAwarePolicy {
    fn name(&self) -> &str {
        self.name
    }

    fn on_free_slot(&mut self, now: Nanos, view: &ClusterView<'_>, host: HostId) -> Option<TaskChoice> {
        let slot = slot_kind(view.host(host)?.free())?;
        let with_dag = matches!(self.algorithm, Algorithm::Dawn(_));
        let nv = self.views.build(now, view, host, with_dag);
        let pick = match &mut self.algorithm {
            Algorithm::ShuffleWatcher(sw) => {
                let pick = sw.offer(nv, host, slot);
                self.wakeup = sw.next_wakeup();
                pick
            }
            Algorithm::Nas(nas) => nas.offer(nv, host, slot),
            Algorithm::Dawn(dawn) => {
                let pick = dawn.offer(nv, host, slot);
                self.wakeup = dawn.next_wakeup();
                pick
            }
        }?;
        choice(view, pick)
    }

    fn on_job_arrival(&mut self, now: Nanos, view: &ClusterView<'_>, job: JobId) {
        if let Algorithm::ShuffleWatcher(sw) = &mut self.algorithm {
            if let Some(nv) = self.views.single(now, view, job) {
                sw.on_job_arrival(&nv, key(job));
            }
        }
    }

    fn on_job_finished(&mut self, _now: Nanos, _view: &ClusterView<'_>, job: JobId) {
        self.views.forget(job);
        match &mut self.algorithm {
            Algorithm::ShuffleWatcher(sw) => sw.on_job_finished(key(job)),
            Algorithm::Nas(nas) => nas.on_job_finished(key(job)),
            Algorithm::Dawn(_) => {}
        }
    }

    fn next_wakeup(&self) -> Option<Nanos> {
        self.wakeup
    }

    fn heartbeat(&self) -> Option<Nanos> {
        match &self.algorithm {
            Algorithm::Nas(nas) => Some(nas.config().heartbeat),
            Algorithm::ShuffleWatcher(_) | Algorithm::Dawn(_) => None,
        }
    }
}

/// `[scheduler_params.shufflewatcher]` (and its variants).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct SwParams {
    saturation_threshold: Option<f64>,
    map_completion_threshold: Option<f64>,
    starvation_window: Option<Nanos>,
    /// Relaxed-fairness wait (variants on Delay only).
    relaxed_wait: Option<Nanos>,
}

fn check_fraction(policy: &str, field: &str, v: Option<f64>) -> Result<(), PolicyError> {
    match v {
        Some(x) if !(0.0..=1.0).contains(&x) => Err(PolicyError::Params {
            policy: policy.into(),
            message: format!("`{field}` = {x}: expected a fraction between 0.0 and 1.0"),
        }),
        _ => Ok(()),
    }
}

fn build_sw(
    name: &'static str,
    params: &toml::Table,
    base: ShuffleWatcherConfig,
) -> Result<Box<dyn TaskPolicy>, PolicyError> {
    let p: SwParams = parse_params(name, params)?;
    check_fraction(name, "saturation_threshold", p.saturation_threshold)?;
    check_fraction(name, "map_completion_threshold", p.map_completion_threshold)?;
    let mut c = base;
    c.saturation_threshold = p.saturation_threshold.unwrap_or(c.saturation_threshold);
    c.map_completion_threshold = p.map_completion_threshold.unwrap_or(c.map_completion_threshold);
    c.starvation_window = p.starvation_window.unwrap_or(c.starvation_window);
    match (p.relaxed_wait, &mut c.fairness) {
        (Some(w), Fairness::Relaxed { wait }) => *wait = w,
        (Some(_), Fairness::Strict) => {
            return Err(PolicyError::Params {
                policy: name.into(),
                message: "`relaxed_wait` applies to shufflewatcher-delay only".into(),
            })
        }
        (None, _) => {}
    }
    Ok(Box::new(NetAwarePolicy::new(
        name,
        Algorithm::ShuffleWatcher(ShuffleWatcher::new(c)),
    )))
}

/// ShuffleWatcher on Fair (SW-fair).
pub fn shufflewatcher(params: &toml::Table) -> Result<Box<dyn TaskPolicy>, PolicyError> {
    build_sw("shufflewatcher", params, ShuffleWatcherConfig::default())
}

/// ShuffleWatcher with Delay scheduling's relaxed fairness (SW-relaxed, NAS's SW-delay).
pub fn shufflewatcher_delay(params: &toml::Table) -> Result<Box<dyn TaskPolicy>, PolicyError> {
    let c = ShuffleWatcherConfig {
        fairness: Fairness::Relaxed {
            wait: Nanos::from_millis(5_000),
        },
        ..ShuffleWatcherConfig::default()
    };
    build_sw("shufflewatcher-delay", params, c)
}

/// ShuffleWatcher's NASS alone (Fig. 12/13 ablation).
pub fn sw_nass(params: &toml::Table) -> Result<Box<dyn TaskPolicy>, PolicyError> {
    build_sw(
        "sw-nass",
        params,
        ShuffleWatcherConfig {
            sarp: false,
            samp: false,
            ..Default::default()
        },
    )
}

/// ShuffleWatcher's NASS + SARP (Fig. 12/13 ablation).
pub fn sw_nass_sarp(params: &toml::Table) -> Result<Box<dyn TaskPolicy>, PolicyError> {
    build_sw(
        "sw-nass-sarp",
        params,
        ShuffleWatcherConfig {
            samp: false,
            ..Default::default()
        },
    )
}

/// `[scheduler_params.nas]` (and its variants).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct NasParams {
    congestion_threshold: Option<f64>,
    max_map_skips: Option<u32>,
    max_reduce_skips: Option<u32>,
    light_below: Option<Bytes>,
    heavy_above: Option<Bytes>,
    small_input_below: Option<Bytes>,
    /// The node heartbeat.
    heartbeat: Option<Nanos>,
}

fn build_nas(
    name: &'static str,
    params: &toml::Table,
    base: NasConfig,
) -> Result<Box<dyn TaskPolicy>, PolicyError> {
    let p: NasParams = parse_params(name, params)?;
    check_fraction(name, "congestion_threshold", p.congestion_threshold)?;
    if let Some(h) = p.heartbeat {
        check_positive_duration(name, "heartbeat", h, "1s")?;
    }
    let mut c = base;
    c.heartbeat = p.heartbeat.unwrap_or(c.heartbeat);
    c.congestion_threshold = p.congestion_threshold.unwrap_or(c.congestion_threshold);
    c.max_map_skips = p.max_map_skips.unwrap_or(c.max_map_skips);
    c.max_reduce_skips = p.max_reduce_skips.unwrap_or(c.max_reduce_skips);
    let d = ClassLimits::default();
    c.limits = ClassLimits {
        light_below: p.light_below.unwrap_or(d.light_below),
        heavy_above: p.heavy_above.unwrap_or(d.heavy_above),
        small_input_below: p.small_input_below.unwrap_or(d.small_input_below),
    };
    if c.limits.light_below > c.limits.heavy_above {
        return Err(PolicyError::Params {
            policy: name.into(),
            message: format!(
                "`light_below` ({}) is above `heavy_above` ({}): expected light_below <= heavy_above",
                c.limits.light_below, c.limits.heavy_above
            ),
        });
    }
    Ok(Box::new(NetAwarePolicy::new(name, Algorithm::Nas(Nas::new(c)))))
}

/// NAS (MTS + CA-RTS + CR-RTS).
pub fn nas(params: &toml::Table) -> Result<Box<dyn TaskPolicy>, PolicyError> {
    build_nas("nas", params, NasConfig::default())
}

/// NAS's MTS alone (Fig. 3 ablation).
pub fn nas_mts(params: &toml::Table) -> Result<Box<dyn TaskPolicy>, PolicyError> {
    build_nas(
        "nas-mts",
        params,
        NasConfig {
            ca_rts: false,
            cr_rts: false,
            ..Default::default()
        },
    )
}

/// NAS's MTS + CA-RTS (Fig. 3 ablation).
pub fn nas_mts_ca(params: &toml::Table) -> Result<Box<dyn TaskPolicy>, PolicyError> {
    build_nas(
        "nas-mts-ca",
        params,
        NasConfig {
            cr_rts: false,
            ..Default::default()
        },
    )
}

/// NAS without TrafficThreshold (Fig. 3(g), "w/o TT").
pub fn nas_without_tt(params: &toml::Table) -> Result<Box<dyn TaskPolicy>, PolicyError> {
    build_nas(
        "nas-wo-tt",
        params,
        NasConfig {
            traffic_threshold: false,
            ..Default::default()
        },
    )
}

/// `[scheduler_params.dawn]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct DawnParams {
    saturation_threshold: Option<f64>,
    /// `dawn-strict`'s heartbeat after a declined offer.
    heartbeat: Option<Nanos>,
}

fn build_dawn(
    name: &'static str,
    params: &toml::Table,
    unpreferred: Unpreferred,
) -> Result<Box<dyn TaskPolicy>, PolicyError> {
    let p: DawnParams = parse_params(name, params)?;
    check_fraction(name, "saturation_threshold", p.saturation_threshold)?;
    if let Some(h) = p.heartbeat {
        check_positive_duration(name, "heartbeat", h, "3s")?;
    }
    let defaults = DawnConfig::default();
    let c = DawnConfig {
        saturation_threshold: p.saturation_threshold.unwrap_or(defaults.saturation_threshold),
        unpreferred,
        heartbeat: p.heartbeat.unwrap_or(defaults.heartbeat),
    };
    Ok(Box::new(NetAwarePolicy::new(name, Algorithm::Dawn(Dawn::new(c)))))
}

/// Dawn (a slot no job prefers goes to the Fair order).
pub fn dawn(params: &toml::Table) -> Result<Box<dyn TaskPolicy>, PolicyError> {
    build_dawn("dawn", params, Unpreferred::FairOrder)
}

/// Dawn with Alg. 1 read literally: a slot no job prefers stays idle.
pub fn dawn_strict(params: &toml::Table) -> Result<Box<dyn TaskPolicy>, PolicyError> {
    build_dawn("dawn-strict", params, Unpreferred::Idle)
}
