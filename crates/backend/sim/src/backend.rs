//! The simulator as a backend of the runner: the same resolved cases as
//! the host runs, on a modelled machine, written as the same records.
//! Repetition `r` uses seed `seed + r - 1`, so a repetition is
//! reproducible on its own.

use crate::record::machine_info;
use crate::workload::COMMAND_UNSUPPORTED;
use crate::SimConfig;
use numalab_bench::{Calibration, Case};
use numalab_linux::knobs::Knob;
use numalab_record::RunRecord;
use numalab_runner::{Backend, RunContext, RunError, SettingsSite};
use numalab_topology::MachineInfo;
use std::collections::BTreeMap;
use std::path::PathBuf;

pub struct SimBackend {
    cfg: SimConfig,
    /// `cfg.thp` as configured, restored when a configuration's settings
    /// are undone.
    default_thp: String,
    info: MachineInfo,
    /// Seed of the first repetition.
    seed: u64,
    /// Write each run's schedule as a Chrome/Perfetto trace beside its
    /// record (`<id>.trace`, Chrome trace-event JSON, or `<id>.systrace`,
    /// ftrace text, as `cfg.trace_format` says).
    pub trace: bool,
    /// Trace files written, in run order.
    pub traces: Vec<PathBuf>,
}

/// The simulator's sampling period for the runner's `--interval`:
/// sampling costs a simulated run nothing, so `auto` is the base interval.
pub fn sample_ms(interval: numalab_runner::Interval) -> u64 {
    use numalab_runner::interval::{Interval, AUTO_BASE_S};
    match interval {
        Interval::Fixed(s) => (s * 1000.0).round().max(1.0) as u64,
        Interval::Auto => (AUTO_BASE_S * 1000.0) as u64,
        Interval::Off => 3_600_000,
    }
}

impl SimBackend {
    pub fn new(cfg: SimConfig) -> SimBackend {
        SimBackend {
            info: machine_info(&cfg),
            seed: cfg.seed,
            default_thp: cfg.thp.clone(),
            cfg,
            trace: false,
            traces: Vec::new(),
        }
    }

    pub fn config(&self) -> &SimConfig {
        &self.cfg
    }
}

impl Calibration for SimBackend {
    fn machine(&self) -> &MachineInfo {
        &self.info
    }

    fn node_free_bytes(&self, node: u32) -> Option<u64> {
        let ix = self.cfg.machine.topology.node_index(node)?;
        self.cfg.machine.memory_bytes.get(ix).copied()
    }

    /// From the model: each thread zeroes at most the machine's bytes per
    /// cycle (`costs.memset_gbs`; default 32 bytes a cycle) at the maximum
    /// frequency, and from memory at most its misses in flight
    /// per local latency; all together at most one node's bandwidth (the
    /// default placement first touches everything on one node).
    fn zeroing_bandwidth(&self, threads: u32, working_set: u64) -> f64 {
        let m = &self.cfg.machine;
        let core = m.max_ghz * 1e9 * m.costs.memset_bytes_per_cycle;
        if working_set as f64 <= m.llc_bytes {
            return threads as f64 * core;
        }
        let lat = m
            .latency_ns
            .first()
            .and_then(|r| r.first())
            .copied()
            .unwrap_or(100.0);
        let per_thread = core.min(m.mlp * m.line_bytes / lat * 1e9);
        let node_bw = m.bandwidth.first().copied().unwrap_or(1.0) * 1e9;
        (threads as f64 * per_thread).min(node_bw)
    }

    /// Iterations per second of a lone spinner at the maximum frequency
    /// (`costs.spin_ns`).
    fn spin_rate(&self) -> f64 {
        let m = &self.cfg.machine;
        m.max_ghz * 1e9 / m.costs.spin_cycles
    }
}

impl Backend for SimBackend {
    fn kind(&self) -> &'static str {
        "sim"
    }

    fn describe(&self) -> String {
        format!(
            "simulated {} ({}), scheduler {}, balancer {}, seed {}",
            self.cfg.machine.name,
            self.cfg.machine.topology.summary(),
            self.cfg.scheduler.canonical(),
            self.cfg.balancer.canonical(),
            self.seed
        )
    }

    /// The simulated kernel has one setting, `thp`: it decides the size
    /// of the modelled pages (see [`SimConfig::thp`]).
    fn settings_site(&self) -> SettingsSite {
        SettingsSite::Backend
    }

    fn check_settings(&self, knobs: &[Knob]) -> Result<(), String> {
        crate::check_settings(knobs)
    }

    fn apply_settings(&mut self, knobs: &[Knob]) -> Result<BTreeMap<String, String>, RunError> {
        crate::check_settings(knobs).map_err(RunError::Failed)?;
        self.cfg.thp = self.default_thp.clone();
        for k in knobs {
            if let Knob::Thp(mode) = k {
                self.cfg.thp = mode.clone();
            }
        }
        self.info = machine_info(&self.cfg);
        Ok(knobs
            .iter()
            .map(|k| (k.name(), self.cfg.thp.clone()))
            .collect())
    }

    fn unsupported(&self, case: &Case) -> Option<String> {
        match case {
            Case::Command(_) => Some(COMMAND_UNSUPPORTED.into()),
            _ => crate::validate(&self.cfg, case)
                .err()
                .map(|e| e.to_string()),
        }
    }

    fn run(&mut self, case: &Case, ctx: &RunContext) -> Result<RunRecord, RunError> {
        let mut cfg = self.cfg.clone();
        cfg.seed = self.seed.wrapping_add(ctx.repetition.index as u64 - 1);
        cfg.trace = self.trace || ctx.trace;
        let interrupt = ctx.interrupt;
        let mut progress = |fraction: f64| (ctx.progress)(fraction);
        if interrupt.is_set() {
            return Err(RunError::Interrupted);
        }
        let stop = || interrupt.is_set();
        let out = match crate::run(&cfg, case, ctx.label, ctx.repetition, &mut progress, &stop) {
            Ok(out) => out,
            Err(crate::SimError::Interrupted) => return Err(RunError::Interrupted),
            Err(e) => return Err(RunError::Failed(e.to_string())),
        };
        if interrupt.is_set() {
            return Err(RunError::Interrupted);
        }
        let mut rec = out.record;
        if let Some(text) = out.trace {
            let ext = self.cfg.trace_format.sim_extension();
            let path = ctx.results.join(format!("{}.{ext}", rec.id));
            numalab_record::write_file_atomic(&path, text.as_bytes()).map_err(|e| {
                RunError::Failed(format!("writing the trace {}: {e}", path.display()))
            })?;
            rec.backend
                .details_mut()
                .insert("trace".into(), path.display().to_string().into());
            self.traces.push(path);
        }
        Ok(rec)
    }
}
