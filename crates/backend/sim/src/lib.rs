//! # numalab-sim: a deterministic NUMA machine simulator
//!
//! The seeds compare schedulers and balancers no stock kernel has (Focht's
//! node-affine scheduler, NEST, IBS-driven balancing), on machines nobody
//! has any more (a 16-CPU Itanium AzusA), and real NUMA latency cannot be
//! measured on a one-node machine or under emulation. This crate runs the
//! suite's benchmarks on a modelled machine under a chosen scheduler and
//! balancer and writes the same [`RunRecord`]s as real runs (backend
//! `sim`), so `compare`, `show` and `report` treat them alike.
//!
//! ## The model: time-stepped at a scheduler tick
//!
//! Time advances in fixed ticks (1 ms by default, Linux's HZ=1000; the
//! record states the tick). Within a tick every CPU runs its current task
//! for the tick's length, or less when the task blocks or ends, in which
//! case the CPU picks its next task within the same tick; wakeups are
//! placed as they happen and a CPU that receives work runs it in the same
//! tick (up to four passes). After the tick the scheduler balances (each
//! policy keeps its own per-CPU timers) and the NUMA balancer scans, takes
//! faults or samples and migrates. We chose a tick over a discrete-event
//! queue for speed and simplicity: the expensive part of this model is the
//! per-task cost of memory accesses, which changes whenever anything on
//! the machine changes (bandwidth contention couples every task to every
//! other); a tick evaluates it once per running task per tick with no
//! event-queue overhead, and the cost per simulated second grows linearly
//! with the number of CPUs. The price is resolution: nothing happens
//! between ticks except inside a CPU's own slice of the tick, so wakeup
//! latencies below a tick and the ordering of events within one are
//! approximated (CPUs run in index order within a pass).
//!
//! ## What is modelled
//!
//! - **Machine** ([`machine`]): nodes, packages, cores, SMT siblings, LLC
//!   groups, memory per node, SLIT distances, idle local and remote
//!   latency (a matrix, or local x distance / 10 as the ACPI SLIT defines
//!   distance), per-node bandwidth (or one memory system for all
//!   nodes), shared buses and links (`[[bus]]`: front-side buses,
//!   interconnects), memory-level parallelism (misses in flight per core,
//!   shared by its busy SMT siblings), LLC size and hit latency, cache-to-cache transfer
//!   cost, the throughput of a thread whose SMT sibling is busy, and core
//!   frequency: the boost limit falls from max to base as more cores of a
//!   package are busy, and under `schedutil` a CPU asks for 1.25 x its
//!   PELT utilisation (32 ms half-life) x that limit, set at each tick's
//!   start. Utilisation is the task's, as in the kernel: a CPU's is the
//!   sum of its tasks' (running, queued or blocked there), it moves with
//!   a task that moves and leaves with one that exits, and a new task
//!   starts with half its CPU's spare capacity (post_init_entity_util_avg).
//!   Also what one operation of the workloads costs ([`costs`]: a spin
//!   iteration, a numa_test update, zeroing, a message, a fork, an exec, a
//!   launch): the file's optional `[costs]`, measured on a real machine by
//!   `numalab calibrate`, or the estimates of [`workload`].
//! - **Processes that fork** (forkexec): a shell-like parent forks
//!   children placed at once through the scheduler's fork/exec path, each
//!   runs once and exits, and its exit wakes the parent; a task made
//!   runnable within a tick cannot start before the moment it was.
//! - **Memory** in pages: 2 MiB transparent huge pages ([`CHUNK_BYTES`])
//!   when the simulated kernel's THP setting is `always` (the default), or
//!   4 KiB base pages ([`BASE_PAGE_BYTES`]) with `madvise` or `never`
//!   (`--thp`, [`SimConfig::thp`]); each page is on one node, allocated at
//!   first touch on the node of the touching CPU (or a bound node),
//!   falling back to the nearest node with room, and is faulted, sampled
//!   and migrated whole. The code calls a page a chunk.
//! - **Work**: a unit of work is cycles of compute (divided by frequency,
//!   and by the SMT factor when the sibling is busy), dependent cache
//!   misses (each paying the access-weighted latency of the task's memory
//!   from its current node) and streamed lines (the same latency divided
//!   by the memory-level parallelism). Random accesses hit the LLC as an
//!   LRU cache lets them: in proportion to the task's share of the LLC
//!   over its working set, less the places its streamed lines take
//!   ([`cache`]).
//!   Latency to a node is multiplied by a contention factor from the
//!   previous tick's demand on every resource the path crosses (the
//!   memory's controller, the buses that carry it): M/M/1 queueing waits
//!   on the line service time, added along the path, and at least the
//!   factor that keeps each resource's throughput within its bandwidth. A task moved to another LLC first pays the
//!   refill of the lines that were hits (its working set up to the LLC
//!   size, at its memory latency over the MLP).
//! - **Message passing** (hackbench): each sender writes to the receivers
//!   of its group in turn, one bounded socket per receiver; a sender
//!   blocks on a full socket, a receiver on its empty one, and a write or
//!   read wakes the peer blocked on that socket through the scheduler's
//!   wakeup path. A message costs cycles plus the transfer of its lines
//!   from the LLCs where the group's members ran.
//! - **Accounting**: per task, time per node, user time (work and cache
//!   refills) and system time (balancer work charged to the task it runs
//!   in: scans, faults, migrations, samples), initial and main node,
//!   progress; per run, memory per process per node over time, each
//!   task's node and the bytes per node of the memory it works on,
//!   vmstat-style counters, and convergence, judged by the same criteria
//!   as real runs of the benchmark (`numalab_record::convergence`) on
//!   those samples.
//!
//! ## What is not modelled
//!
//! Instruction-level behaviour, TLBs and page-walk cost, L1/L2 refill after
//! a migration within an LLC, interconnect links the machine file does
//! not declare as a `[[bus]]`, DRAM bank and row effects, prefetchers,
//! cache coherence traffic other than message lines, thermal limits,
//! C-state exit latency, interrupts, the kernel's own threads, page cache,
//! swapping, mixed page sizes within a run, nice levels, and
//! memory-only (CXL, tiered) nodes: every modelled node has CPUs, and
//! `host` leaves memory-only nodes out.
//!
//! ## Validation: public parameters, never fudge factors
//!
//! Every machine parameter cites its public source in the machine file's
//! `[sources]` table (datasheets, vendor pages, published measurements),
//! and says UNKNOWN where no source was found; the workloads' cycle counts
//! are estimates from the benchmarks' source code unless the machine file
//! gives costs measured on a real machine (`[costs]`). No parameter was tuned
//! to reproduce a seed's number: a parameter tuned to hit a seed figure is
//! a defect. Validation is against the seeds' *findings*, qualitatively
//! and in size where the model allows, with the commands and the measured
//! gaps written in docs/simulator.md (e.g. node-affine E beats node-blind A
//! on total user time on azusa16 at N=16; IBS-like sampling converges
//! twohalves sooner than autonuma; numa02 converges under autonuma on a
//! small 2-node machine).
//!
//! ## Determinism
//!
//! One seeded [`rand_chacha::ChaCha8Rng`] is the only source of randomness
//! (fault and sample draws); no hash-map iteration reaches the output; sim
//! records get `started_at` and `id` from the seed and configuration, so
//! the same command and seed give a byte-identical record.

#![forbid(unsafe_code)]
// Index loops over CPUs, nodes and chunks read more plainly than zipped
// iterators in the engine's bookkeeping.
#![allow(clippy::needless_range_loop)]

pub mod backend;
pub mod balance;
pub mod cache;
pub mod costs;
pub mod engine;
pub mod machine;
pub mod overrides;
pub mod params;
pub mod record;
pub mod sched;
pub mod trace;
pub mod workload;

#[cfg(test)]
mod invariants;
#[cfg(test)]
mod tests;

pub use backend::SimBackend;
pub use costs::Costs;
pub use engine::{Balancer, Scheduler, World};
pub use machine::{Machine, MachineError};
pub use numalab_bench::Case;
pub use numalab_record::RunRecord;
pub use params::PolicySpec;

use numalab_record::Repetition;
use rand_core::SeedableRng;

/// Memory is modelled in chunks of this size (a transparent huge page)
/// when THP is `always`, the default.
pub const CHUNK_BYTES: u64 = 2 << 20;

/// A base page: the chunk size when THP is `madvise` or `never` (the
/// modelled benchmarks do not madvise, so they get base pages).
pub const BASE_PAGE_BYTES: u64 = 4 << 10;

/// The THP modes of /sys/kernel/mm/transparent_hugepage/enabled.
pub const THP_MODES: [&str; 3] = ["always", "madvise", "never"];

/// Everything that defines a simulated run besides the benchmark.
#[derive(Debug, Clone)]
pub struct SimConfig {
    pub machine: Machine,
    /// How the machine was named on the command line (preset or path).
    pub machine_spec: String,
    pub scheduler: PolicySpec,
    pub balancer: PolicySpec,
    pub seed: u64,
    pub tick_us: u64,
    pub sample_ms: u64,
    /// Give up (run marked failed) after this much simulated time.
    pub max_sim_s: f64,
    pub trace: bool,
    /// The format of the trace `trace` asks for.
    pub trace_format: numalab_trace::export::Format,
    /// The simulated kernel's transparent_hugepage/enabled (`--thp`, a
    /// configuration's `thp`): with `always` anonymous memory is 2 MiB
    /// huge pages, one hinting fault and one migration per 2 MiB; with
    /// `madvise` or `never` (the benchmarks do not madvise) it is 4 KiB
    /// base pages, each faulted, sampled and migrated on its own. By
    /// default the machine file's `kernel.thp` (calibrate writes the
    /// mode it measured under), else `always`.
    pub thp: String,
}

/// A scheduler and a balancer, built.
type Policies = (Box<dyn engine::Scheduler>, Box<dyn engine::Balancer>);

/// Why a simulation could not be configured or run. Every message is one
/// line naming what is wrong; each cause keeps its own error, so a caller
/// can tell a bad machine file from a bad policy or a case too big.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The machine file or preset.
    #[error(transparent)]
    Machine(#[from] machine::MachineError),
    /// A scheduler's or balancer's `NAME[k=v,...]` text.
    #[error("{which} {source}")]
    PolicyText {
        which: &'static str,
        source: params::SpecError,
    },
    /// A scheduler or balancer name or parameter (the message names it).
    #[error(transparent)]
    Policy(#[from] params::ParamError),
    /// `thp` not one of the modes the model knows.
    #[error("thp {0:?}: always, madvise or never")]
    Thp(String),
    /// The tick outside [`TICK_US_RANGE`].
    #[error("tick must be between 1 us and 100 ms")]
    Tick,
    /// The case does not fit the machine (sizes, CPU lists, nodes).
    #[error(transparent)]
    Case(#[from] workload::CaseError),
    /// `stop` said so (Ctrl-C or SIGTERM): no record.
    #[error("interrupted")]
    Interrupted,
}

/// The ticks the engine takes, in microseconds: 1 us to 100 ms.
pub const TICK_US_RANGE: std::ops::RangeInclusive<u64> = 1..=100_000;

impl SimConfig {
    /// A configuration with default tick (1 ms), sampling (1 s) and limit.
    pub fn new(
        machine_spec: &str,
        scheduler: &str,
        balancer: &str,
        seed: u64,
    ) -> Result<SimConfig, SimError> {
        let machine = Machine::load(machine_spec)?;
        let policy = |which: &'static str, text: &str| {
            PolicySpec::parse(text).map_err(|source| SimError::PolicyText { which, source })
        };
        let cfg = SimConfig {
            machine_spec: machine_spec.to_string(),
            scheduler: policy("scheduler", scheduler)?,
            balancer: policy("balancer", balancer)?,
            seed,
            tick_us: 1000,
            sample_ms: 1000,
            max_sim_s: 3600.0,
            trace: false,
            trace_format: numalab_trace::export::Format::Chrome,
            // As the machine was measured (a calibrated file's
            // `kernel.thp`), else a kernel's build default.
            thp: machine.thp.clone().unwrap_or_else(|| "always".into()),
            machine,
        };
        cfg.check()?;
        Ok(cfg)
    }

    /// Build both policies once, so a bad name or parameter fails early.
    pub fn check(&self) -> Result<(), SimError> {
        self.policies()?;
        if !THP_MODES.contains(&self.thp.as_str()) {
            return Err(SimError::Thp(self.thp.clone()));
        }
        if !TICK_US_RANGE.contains(&self.tick_us) {
            return Err(SimError::Tick);
        }
        Ok(())
    }

    /// The size of a modelled page: a huge page when THP is `always`.
    pub fn page_bytes(&self) -> u64 {
        if self.thp == "always" {
            CHUNK_BYTES
        } else {
            BASE_PAGE_BYTES
        }
    }

    /// The scheduler and the balancer, built for the machine.
    fn policies(&self) -> Result<Policies, SimError> {
        // The builders' messages name the policy already.
        let s = sched::build(&self.scheduler, &self.machine)?;
        let b = balance::build(&self.balancer, &self.machine)?;
        Ok((s, b))
    }
}

/// The machine settings the simulator models: only `thp` (its pages).
/// Anything else is refused in one line, naming the knob.
pub fn check_settings(
    knobs: &[numalab_linux::knobs::Knob],
) -> Result<(), numalab_runner::SettingRefused> {
    use numalab_linux::knobs::Knob;
    use numalab_runner::SettingRefused;
    for k in knobs {
        match k {
            Knob::Thp(mode) if THP_MODES.contains(&mode.as_str()) => {}
            Knob::Thp(mode) => {
                return Err(SettingRefused::Value {
                    knob: "thp".into(),
                    value: mode.clone(),
                    takes: "always, madvise or never".into(),
                })
            }
            other => {
                return Err(SettingRefused::Knob {
                    knob: other.name(),
                    why: "the simulator models no such setting (only thp); give its policies parameters instead (--scheduler NAME[k=v], --balancer NAME[k=v])".into(),
                })
            }
        }
    }
    Ok(())
}

/// Check that `case` can run on the configured machine (sizes, CPU
/// lists, node counts) without running it.
pub fn validate(cfg: &SimConfig, case: &Case) -> Result<(), SimError> {
    let rng = rand_chacha::ChaCha8Rng::seed_from_u64(cfg.seed);
    let mut w = World::new(
        cfg.machine.clone(),
        cfg.tick_us * 1000,
        cfg.page_bytes(),
        rng,
        false,
    );
    workload::populate(case, &mut w).map(|_| ())?;
    Ok(())
}

/// The result of one simulated run.
pub struct SimOutput {
    pub record: RunRecord,
    /// The schedule as a trace file in `trace_format` (Chrome/Perfetto
    /// trace JSON by default), when the config asked for it.
    pub trace: Option<String>,
    pub stats: engine::Stats,
    /// Wall-clock seconds the simulation took (not part of the record).
    pub wall_s: f64,
}

/// How often (in ticks) a run asks `stop` whether to give up.
const STOP_CHECK_TICKS: u64 = 64;

/// Run one repetition of `case`. `progress` gets the fraction of the
/// benchmark's work done, every simulated second (for progress bars);
/// `stop` is asked every few ticks and ends the run with
/// [`SimError::Interrupted`] when it returns true. The run's RNG seed is
/// `cfg.seed`.
pub fn run(
    cfg: &SimConfig,
    case: &Case,
    label: &str,
    repetition: Repetition,
    progress: &mut dyn FnMut(f64),
    stop: &dyn Fn() -> bool,
) -> Result<SimOutput, SimError> {
    let started = std::time::Instant::now();
    let (sched, bal) = cfg.policies()?;
    let rng = rand_chacha::ChaCha8Rng::seed_from_u64(cfg.seed);
    let tick_ns = cfg.tick_us * 1000;
    let mut w = World::new(
        cfg.machine.clone(),
        tick_ns,
        cfg.page_bytes(),
        rng,
        cfg.trace,
    );
    let mut meta = workload::populate(case, &mut w)?;
    let mut eng = engine::Engine::new(w, sched, bal);
    let sample_ns = cfg.sample_ms.max(1) * 1_000_000;
    let limit_ns = (cfg.max_sim_s * 1e9) as u64;
    let mut samples = vec![record::sample(&eng.w, &meta)];
    let mut next_sample = sample_ns;
    let mut next_progress = 1_000_000_000u64;
    // As in a real run of the benchmarks with a convergence, a sample is
    // also taken the moment every task has started with its memory
    // placed, and convergence counts from there; and as the real pacer
    // does (numalab_host::pace, `sample_at`), the samples after it come
    // an interval apart from that moment, not on the grid from 0: a real
    // run that started at 0.12 s is sampled at 1.12, 2.12 s, and a
    // simulated one sampled at 1.0, 2.0 s saw a convergence at 1.1 s a
    // whole interval later (2.0 against 1.2 s in the 2-node guest).
    let mut started_ns = None;
    let mut stopped = false;
    eng.run(limit_ns, |w| {
        if w.stats.ticks % STOP_CHECK_TICKS == 0 && stop() {
            stopped = true;
            return false;
        }
        let start = meta.convergence.is_some() && started_ns.is_none() && record::started(w, &meta);
        if start {
            started_ns = Some(w.now);
        }
        if start || w.now >= next_sample {
            samples.push(record::sample(w, &meta));
        }
        if start {
            next_sample = w.now + sample_ns;
        } else if w.now >= next_sample {
            next_sample += sample_ns;
        }
        if w.now >= next_progress {
            let (done, all) = meta.main_tasks.iter().fold((0.0, 0.0), |(d, a), &t| {
                let task = &w.tasks[t];
                (d + task.progress, a + task.work_expected as f64)
            });
            progress(if all > 0.0 { done / all } else { 0.0 });
            next_progress += 1_000_000_000;
        }
        true
    });
    if stopped {
        return Err(SimError::Interrupted);
    }
    if samples.last().map(|s| s.t_s) != Some(eng.w.now as f64 / 1e9) {
        samples.push(record::sample(&eng.w, &meta));
    }
    meta.started_ns = started_ns;
    let finished = eng.finished();
    let mut record = record::build(cfg, &eng, &meta, samples, label, repetition, finished);
    if let Some(spans) = eng.w.trace.as_ref() {
        let t = trace::sched(&eng.w, spans);
        record.metrics.extend(numalab_trace::metrics(&t));
        record.sched = Some(t);
    }
    let trace = eng
        .w
        .trace
        .as_ref()
        .map(|spans| trace::render(&eng.w, spans, &record, cfg.trace_format));
    Ok(SimOutput {
        record,
        trace,
        stats: eng.w.stats.clone(),
        wall_s: started.elapsed().as_secs_f64(),
    })
}

/// `numalab sim --list`: presets, schedulers and balancers, one line each.
pub fn list_text() -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let m = Machine::load("azusa16").expect("preset");
    let _ = writeln!(s, "machines (--machine PRESET, host, or a machine file):");
    for (name, d) in Machine::preset_lines() {
        let _ = writeln!(s, "  {name:<12} {d}");
    }
    let _ = writeln!(s, "\nschedulers (--scheduler NAME[k=v,...]):");
    for (name, d, p) in sched::list(&m) {
        let _ = writeln!(s, "  {name:<12} {d}");
        let _ = writeln!(s, "  {:<12}   [{p}]", "");
    }
    let _ = writeln!(s, "\nbalancers (--balancer NAME[k=v,...]):");
    for (name, d, p) in balance::list(&m) {
        let _ = writeln!(s, "  {name:<12} {d}");
        if !p.is_empty() {
            let _ = writeln!(s, "  {:<12}   [{p}]", "");
        }
    }
    let _ = writeln!(s, "\n{}", numalab_bench::registry::sim_list_text());
    s
}
