//! The simulator as a backend of the runner: the same resolved cases as
//! the host runs, on a modelled machine, written as the same records.
//! Repetition `r` uses seed `seed + r - 1`, so a repetition is
//! reproducible on its own.

use crate::record::machine_info;
use crate::workload::COMMAND_UNSUPPORTED;
use crate::SimConfig;
use numalab_bench::mem::Op;
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
        self.sweep_bandwidth(Op::Memset, threads, working_set)
    }

    fn zeroing_bandwidth_on(
        &self,
        threads: u32,
        working_set: u64,
        cpu_nodes: &[u32],
        mem_node: u32,
        pinned: bool,
    ) -> f64 {
        self.sweep_bandwidth_on(
            Op::Memset,
            threads,
            working_set,
            cpu_nodes,
            mem_node,
            pinned,
        )
    }

    /// The model's rate for `op`'s sweep, the threads over every node
    /// with CPUs and the memory on the first ([`sweep_rate`]).
    fn sweep_bandwidth(&self, op: Op, threads: u32, working_set: u64) -> f64 {
        let m = &self.cfg.machine;
        let all: Vec<usize> = (0..m.nnodes)
            .filter(|&n| !m.node_cpus[n].is_empty())
            .collect();
        let first = all.first().copied().unwrap_or(0);
        sweep_rate(m, op, threads, working_set, &all, first, false)
    }

    /// The model's rate for `op`'s sweep, placed as mem places it.
    fn sweep_bandwidth_on(
        &self,
        op: Op,
        threads: u32,
        working_set: u64,
        cpu_nodes: &[u32],
        mem_node: u32,
        pinned: bool,
    ) -> f64 {
        let m = &self.cfg.machine;
        let index = |id: u32| m.topology.nodes.iter().position(|n| n.id == id);
        let nodes: Vec<usize> = cpu_nodes.iter().filter_map(|&id| index(id)).collect();
        match (nodes.is_empty(), index(mem_node)) {
            (false, Some(mem)) => sweep_rate(m, op, threads, working_set, &nodes, mem, pinned),
            _ => self.sweep_bandwidth(op, threads, working_set),
        }
    }

    /// Iterations per second of a lone spinner at the maximum frequency
    /// (`costs.spin_ns`).
    fn spin_rate(&self) -> f64 {
        let m = &self.cfg.machine;
        m.max_ghz * 1e9 / m.costs.spin_cycles
    }

    /// `costs.first_touch_gbs` (infinite unless the machine file says).
    fn first_touch_rate(&self) -> f64 {
        self.cfg.machine.costs.first_touch_bytes_per_ns * 1e9
    }
}

/// What `threads` threads sweeping `working_set` bytes as `op` does get
/// on `m`, by the engine's own rules, for sizing runs: the threads spread
/// over `cpu_nodes` as evenly as their CPUs allow (`pinned`: kept there),
/// the memory on `mem_node` (the autonuma benchmarks first touch it on
/// the first node), each line the sweep's compute in cache
/// (`costs.read_gbs`, `write_gbs`, `memset_gbs`) plus a streamed miss
/// (loads overlapping as `memory.read_mlp`, updates as `write_mlp`,
/// stores as `mlp`), a
/// read-modify-write's write-back loading the controllers too, and every
/// controller and bus on the way loaded as the engine loads it from the
/// uncontended demand ([`crate::machine::Resource::load`]). Within the
/// LLC, the threads' compute alone.
pub fn sweep_rate(
    m: &crate::machine::Machine,
    op: Op,
    threads: u32,
    working_set: u64,
    cpu_nodes: &[usize],
    mem_node: usize,
    pinned: bool,
) -> f64 {
    let core = m.max_ghz * m.costs.sweep_bytes_per_cycle(op); // bytes per ns
    let mlp = crate::engine::Stream::of_sweep(op).mlp(m);
    let moved = op.lines_per_line();
    if working_set as f64 <= m.llc_bytes {
        return threads as f64 * core * 1e9;
    }
    let nn = m.nnodes;
    // Threads per node: round-robin over the nodes with CPUs free.
    let mut on = vec![0usize; nn];
    let mut left = threads as usize;
    while left > 0 {
        let before = left;
        for &n in cpu_nodes {
            if left > 0 && on[n] < m.node_cpus[n].len() {
                on[n] += 1;
                left -= 1;
            }
        }
        if left == before {
            // More threads than CPUs: the rest share them, no faster.
            break;
        }
    }
    let line = m.line_bytes;
    let compute = line / core;
    // The loads among the lines moved: a read's all, an update's its
    // load (its write-back the other), a zeroing's none.
    let reads = match op {
        Op::Read => 1.0,
        Op::Write => 1.0 / moved,
        Op::Memset => 0.0,
    };
    // Uncontended: each thread's demand on its path to the memory.
    let (mut demand, mut mem) = (vec![0.0; nn * nn], vec![0.0; nn * nn]);
    let to = mem_node;
    for n in 0..nn {
        let unit0 = compute + m.latency_ns[n][to] / mlp;
        let p = n * nn + to;
        demand[p] = on[n] as f64 * line * moved / unit0;
        mem[p] = demand[p] * (m.latency_ns[n][to] / mlp) / unit0;
    }
    let loads: Vec<(f64, f64)> = m
        .resources
        .iter()
        .map(|r| {
            let (d, x) = r
                .paths
                .iter()
                .fold((0.0, 0.0), |(d, x), &p| (d + demand[p], x + mem[p]));
            if d == 0.0 {
                return (0.0, 0.0);
            }
            let (_, wait, cap) = r.load(d, d * reads, x);
            (wait, cap)
        })
        .collect();
    // Threads free to move share the work as they go: their rates add.
    // Threads pinned per node each do their share: the slowest node's
    // rate at full contention bounds the time from above, the added rates
    // from below (once the fast nodes are done the slow one runs alone,
    // less contended); the estimate takes the middle of the two times.
    let (mut rate, mut slowest) = (0.0, f64::INFINITY);
    for n in (0..nn).filter(|&n| on[n] > 0) {
        let p = n * nn + to;
        let (wait, cap) = m.path_resources[p]
            .iter()
            .fold((0.0, 0.0f64), |(w, c), &i| {
                (w + loads[i].0, c.max(loads[i].1))
            });
        let cont = (1.0 + wait).max(cap);
        let one = line / (compute + m.latency_ns[n][to] * cont / mlp);
        rate += on[n] as f64 * one;
        slowest = slowest.min(one);
    }
    match pinned {
        true => {
            let pinned = on.iter().sum::<usize>() as f64 * slowest;
            2.0 / (1.0 / pinned + 1.0 / rate) * 1e9
        }
        false => rate * 1e9,
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

    fn scx_site(&self) -> SettingsSite {
        SettingsSite::Unsupported(
            "sched_ext schedulers run on real kernels; the simulator's scheduler is chosen with --scheduler".into(),
        )
    }

    fn check_settings(&self, knobs: &[Knob]) -> Result<(), numalab_runner::SettingRefused> {
        crate::check_settings(knobs)
    }

    fn apply_settings(&mut self, knobs: &[Knob]) -> Result<BTreeMap<String, String>, RunError> {
        crate::check_settings(knobs).map_err(|e| RunError::Failed(e.to_string()))?;
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
