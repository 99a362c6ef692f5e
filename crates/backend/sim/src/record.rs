//! Turning a finished simulation into a [`RunRecord`] like a real run's.

use crate::engine::{Engine, TaskState, Work, World};
use crate::workload::Meta;
use crate::SimConfig;
use numalab_bench::metrics::*;
use numalab_record::convergence::{self, Tasks};
use numalab_record::{
    Backend, Convergence, ConvergenceState, MachineInfo, Outcome, ProcessInfo, Repetition,
    RunRecord, Sample, Series, TaskRecord, SCHEMA_VERSION,
};
use std::collections::BTreeMap;

/// Deterministic start time: 2000-01-01T00:00:00Z plus `seed` seconds.
pub fn started_at(seed: u64) -> chrono::DateTime<chrono::Utc> {
    let base = chrono::DateTime::parse_from_rfc3339("2000-01-01T00:00:00Z")
        .expect("valid time")
        .with_timezone(&chrono::Utc);
    base + chrono::Duration::seconds((seed % (1u64 << 32)) as i64)
}

/// A short stable id of the configuration: the first 32 bits of its
/// SHA-256 (the sha2 crate the guest and campaign crates already use).
fn config_hash(s: &str) -> u32 {
    use sha2::Digest;
    let d = sha2::Sha256::digest(s.as_bytes());
    u32::from_be_bytes([d[0], d[1], d[2], d[3]])
}

/// One sample of the series, observing what a real run's observer does:
/// a task's node is that of the CPU it runs on, is queued on or last ran
/// on (`/proc/PID/task/TID/stat`'s processor), unknown before it starts
/// and after it ends (its thread is gone); the memory of a task is the
/// bytes per node of the region it works on, its pages counted exactly
/// (real runs estimate them from evenly spaced pages), untouched chunks
/// on no node.
pub fn sample(w: &World, meta: &Meta) -> Sample {
    let cb = w.mem.chunk_bytes;
    let memory_bytes = (0..meta.processes.len())
        .map(|p| match w.mem.proc_node.get(p) {
            Some(v) => v.iter().map(|c| c * cb).collect(),
            None => vec![0; w.m.nnodes],
        })
        .collect();
    let task_node = meta
        .main_tasks
        .iter()
        .map(|&t| match w.tasks[t].state {
            TaskState::NotStarted | TaskState::Done => None,
            _ => Some(w.m.cpu_node[w.tasks[t].cpu] as u32),
        })
        .collect();
    let task_memory_bytes = meta
        .task_regions
        .iter()
        .map(|&r| {
            w.mem.regions[r]
                .per_node
                .iter()
                .map(|&c| c as u64 * cb)
                .collect()
        })
        .collect();
    let progress = meta
        .main_tasks
        .iter()
        .map(|&t| w.tasks[t].progress.floor() as u64)
        .collect();
    let vmstat = vmstat_counts(w)
        .into_iter()
        .map(|(m, v)| (m.name.to_string(), v as i64))
        .collect();
    Sample {
        t_s: w.now as f64 / 1e9,
        memory_bytes,
        task_node,
        progress,
        vmstat,
        task_memory_bytes,
    }
}

/// Whether every main task has started with its memory placed: it has
/// been put on a CPU and has first-touched what it initialises itself
/// (real runs: every process has placed its memory and started its
/// threads).
pub fn started(w: &World, meta: &Meta) -> bool {
    meta.main_tasks.iter().all(|&t| {
        let task = &w.tasks[t];
        task.state != TaskState::NotStarted
            && match &task.work {
                Work::Compute { init, .. } => init.is_empty(),
                Work::Message { .. } | Work::Fork(_) => true,
            }
    })
}

/// The run's convergence by the same rule, definition and evaluation as
/// real runs of the benchmark (`numalab_record::convergence`).
fn convergence(w: &World, meta: &Meta, samples: &[Sample]) -> Option<Convergence> {
    let rule = meta.convergence?;
    let tasks = Tasks {
        process: meta
            .main_tasks
            .iter()
            .map(|&t| w.tasks[t].process)
            .collect(),
        bytes: meta
            .task_regions
            .iter()
            .map(|&r| w.mem.regions[r].len as u64 * w.mem.chunk_bytes)
            .collect(),
    };
    let started_s = meta.started_ns.map(|n| n as f64 / 1e9);
    convergence::evaluate(rule, &w.m.topology, &tasks, samples, started_s)
}

/// The run's id: its start, benchmark, label, repetition, seed and a hash
/// of its configuration, in characters safe for a file name.
fn record_id(
    cfg: &SimConfig,
    meta: &Meta,
    label: &str,
    repetition: Repetition,
    started: &chrono::DateTime<chrono::Utc>,
) -> String {
    let config_text = format!(
        "{}|{}|{}|{}|{:?}|{}|{}",
        cfg.machine_spec,
        cfg.scheduler.canonical(),
        cfg.balancer.canonical(),
        meta.benchmark,
        meta.params,
        cfg.tick_us,
        cfg.sample_ms
    );
    let safe = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    format!(
        "sim-{}-{}-{}-r{}-s{}-{:08x}",
        started.format("%Y%m%dT%H%M%SZ"),
        safe(&meta.benchmark),
        safe(label),
        repetition.index,
        cfg.seed,
        config_hash(&config_text)
    )
}

/// One record per benchmark task: its time per node, CPU time and work.
fn task_records(w: &World, meta: &Meta) -> Vec<TaskRecord> {
    meta.main_tasks
        .iter()
        .enumerate()
        .map(|(i, &t)| {
            let task = &w.tasks[t];
            let node_time_s: Vec<f64> = task.node_time.iter().map(|&n| n as f64 / 1e9).collect();
            let main_node = TaskRecord::main_node_of(&node_time_s, &w.m.topology);
            TaskRecord {
                id: i as u32 + 1,
                name: task.name.clone(),
                pid: None,
                process: Some(task.process as u32),
                initial_node: task
                    .initial_node
                    .and_then(|n| w.m.topology.nodes.get(n).map(|x| x.id)),
                main_node,
                node_time_s,
                residency_method: "simulated: exact per tick".into(),
                residency_samples: w.stats.ticks,
                user_s: task.user_ns / 1e9,
                sys_s: task.sys_ns / 1e9,
                work_done: task.progress.floor() as u64,
                work_expected: task.work_expected,
                exit: if task.is_done() {
                    "exit 0".into()
                } else {
                    "not finished".into()
                },
                kernel: None,
            }
        })
        .collect()
}

/// The benchmark's own metrics (elapsed, CPU time, hackbench's and
/// forkexec's, bandwidth), and the warnings about them.
fn benchmark_metrics(
    w: &World,
    meta: &Meta,
    tasks: &[TaskRecord],
    finished: bool,
) -> (BTreeMap<String, numalab_record::Metric>, Vec<String>) {
    let mut metrics = BTreeMap::new();
    let end = meta
        .main_tasks
        .iter()
        .filter_map(|&t| w.tasks[t].end_ns)
        .max()
        .unwrap_or(w.now);
    // The last process's exit and reaping, where the real runs time them.
    let exiting = if meta.spawn_to_reap {
        w.m.costs.process_exit_ns
    } else {
        0
    };
    let elapsed = (if finished { end + exiting } else { w.now }).saturating_sub(meta.timed_from_ns)
        as f64
        / 1e9;
    ELAPSED_S.put(&mut metrics, elapsed);
    let user: f64 = tasks.iter().map(|t| t.user_s).sum();
    let sys: f64 = tasks.iter().map(|t| t.sys_s).sum();
    USER_S.put(&mut metrics, user);
    SYS_S.put(&mut metrics, sys);
    if meta.benchmark == numalab_bench::numa_test::BENCHMARK.name && !tasks.is_empty() {
        AVG_USER_S.put(&mut metrics, user / tasks.len() as f64);
    }
    let mut warnings = Vec::new();
    if !meta.disturb_tasks.is_empty() {
        let ends: Vec<Option<u64>> = meta
            .disturb_tasks
            .iter()
            .map(|&t| w.tasks[t].end_ns)
            .collect();
        if ends.iter().all(|e| e.is_some()) {
            let h = ends.iter().flatten().max().copied().unwrap_or(0) - meta.disturb_start_ns;
            HACKBENCH_S.put(&mut metrics, h as f64 / 1e9);
        } else {
            warnings.push("the hackbench disturbance had not finished when the benchmark tasks did; hackbench_s omitted".to_string());
        }
    }
    if meta.benchmark == numalab_bench::placement::HACKBENCH.name {
        // The storm's own clock, as hackbench prints it: without its
        // process's start and exit.
        let storm = (if finished { end } else { w.now })
            .saturating_sub(meta.timed_from_ns + w.m.costs.process_start_ns);
        HACKBENCH_S.put(&mut metrics, storm as f64 / 1e9);
    }
    // forkexec: children reaped per second, mean fork-to-reaping time.
    for &t in &meta.main_tasks {
        if let Work::Fork(f) = &w.tasks[t].work {
            if f.reaped > 0 && elapsed > 0.0 {
                CHILDREN_PER_S.put(&mut metrics, f.reaped as f64 / elapsed);
                CHILD_LATENCY_MS.put(&mut metrics, f.latency_ns / f.reaped as f64 / 1e6);
            }
        }
    }
    if let (Some(b), true) = (meta.bytes_zeroed, elapsed > 0.0) {
        BANDWIDTH_GBS.put(&mut metrics, b as f64 / elapsed / 1e9);
    }
    // Each thread's bytes over its own time from the barrier (mem).
    if let Some(b) = meta.task_bytes {
        let per: Vec<f64> = meta
            .main_tasks
            .iter()
            .filter_map(|&t| w.tasks[t].end_ns)
            .map(|e| b as f64 / (e.saturating_sub(meta.timed_from_ns).max(1)) as f64)
            .collect();
        if finished && per.len() == meta.main_tasks.len() && !per.is_empty() {
            let mean = per.iter().sum::<f64>() / per.len() as f64;
            let min = per.iter().copied().fold(f64::INFINITY, f64::min);
            THREAD_BANDWIDTH_GBS.put(&mut metrics, mean);
            THREAD_BANDWIDTH_MIN_GBS.put(&mut metrics, min);
        }
    }
    (metrics, warnings)
}

/// The kernel's counters real runs report (task migrations, vmstat's NUMA
/// counters), counted exactly, and convergence.
fn counter_metrics(
    w: &World,
    meta: &Meta,
    conv: &Option<Convergence>,
    metrics: &mut BTreeMap<String, numalab_record::Metric>,
) {
    // CPU changes of the benchmark's tasks, as real runs sum the kernel's
    // se.nr_migrations of the tasks they observe one by one (hackbench's
    // and forkexec's trees are observed as one process there: left out).
    let one_process = [
        numalab_bench::placement::HACKBENCH.name,
        numalab_bench::forkexec::BENCHMARK.name,
    ];
    if !one_process.contains(&meta.benchmark.as_str()) {
        let moves: u64 = meta.main_tasks.iter().map(|&t| w.tasks[t].migrations).sum();
        KERNEL_MIGRATIONS.put(metrics, moves as f64);
        // Every page the model migrates, it migrates for one of the
        // benchmark's tasks (it holds no other memory): the sum of their
        // numa_pages_migrated, as real runs read it of each task.
        KERNEL_NUMA_PAGES_MIGRATED.put(metrics, w.stats.pages_migrated as f64);
    }
    // The vmstat counters real runs report, counted exactly.
    for (m, v) in vmstat_counts(w) {
        m.put(metrics, v as f64);
    }
    if let (Some(_), Some(ns)) = (meta.convergence, meta.started_ns) {
        STARTED_S.put(metrics, ns as f64 / 1e9);
    }
    if let Some(Convergence {
        state: ConvergenceState::Converged { at_s },
        ..
    }) = conv
    {
        CONVERGENCE_S.put(metrics, *at_s);
    }
}

/// The vmstat counters the simulator counts exactly, as real runs
/// report them.
fn vmstat_counts(w: &World) -> [(MetricDef, u64); 4] {
    let s = &w.stats;
    [
        (NUMA_HINT_FAULTS, s.hint_faults),
        (NUMA_HINT_FAULTS_LOCAL, s.hint_faults_local),
        (NUMA_PAGES_MIGRATED, s.pages_migrated),
        (NUMA_PTE_UPDATES, s.pte_updates),
    ]
}

/// The simulator's own facts of the run, for the record's backend.
fn details(cfg: &SimConfig, w: &World) -> BTreeMap<String, serde_json::Value> {
    let mut details = BTreeMap::new();
    details.insert("tick_us".into(), serde_json::json!(cfg.tick_us));
    details.insert("ticks".into(), serde_json::json!(w.stats.ticks));
    details.insert("chunk_bytes".into(), serde_json::json!(w.mem.chunk_bytes));
    details.insert("machine_file_name".into(), serde_json::json!(w.m.name));
    // The per-operation costs the run was simulated with, in the machine
    // file's `[costs]` keys and units (the file's, or the defaults).
    details.insert(
        "costs".into(),
        serde_json::json!(w.m.costs.as_file(w.m.max_ghz)),
    );
    details.insert(
        "task_migrations".into(),
        serde_json::json!(w.stats.task_migrations),
    );
    details.insert(
        "numa_task_moves".into(),
        serde_json::json!(w.stats.numa_task_moves),
    );
    details.insert(
        "numa_task_swaps".into(),
        serde_json::json!(w.stats.numa_swaps),
    );
    details.insert("access_samples".into(), serde_json::json!(w.stats.samples));
    details.insert(
        "max_idle_while_imbalanced_ms".into(),
        serde_json::json!(w.stats.max_idle_imbalance_ns as f64 / 1e6),
    );

    details
}

/// The record of a finished (or stopped) simulated run: the same schema,
/// metrics and observables as a real run's.
pub fn build(
    cfg: &SimConfig,
    eng: &Engine,
    meta: &Meta,
    samples: Vec<Sample>,
    label: &str,
    repetition: Repetition,
    finished: bool,
) -> RunRecord {
    let w = &eng.w;
    let started = started_at(cfg.seed);
    let id = record_id(cfg, meta, label, repetition, &started);
    let conv = convergence(w, meta, &samples);
    let tasks = task_records(w, meta);
    let (mut metrics, warnings) = benchmark_metrics(w, meta, &tasks, finished);
    counter_metrics(w, meta, &conv, &mut metrics);
    let outcome = if finished {
        Outcome::ok()
    } else {
        Outcome::failed(format!(
            "simulation stopped at the {:.0} s limit before the benchmark finished",
            cfg.max_sim_s
        ))
    };

    let details = details(cfg, w);
    let machine = machine_info(cfg);

    RunRecord {
        schema_version: SCHEMA_VERSION,
        id,
        numalab_version: numalab_record::VERSION.to_string(),
        started_at: started.to_rfc3339(),
        benchmark: meta.benchmark.clone(),
        params: meta.params.clone(),
        label: label.to_string(),
        repetition,
        backend: Backend::Sim {
            machine: cfg.machine_spec.clone(),
            scheduler: cfg.scheduler.canonical(),
            balancer: cfg.balancer.canonical(),
            seed: cfg.seed,
            details,
        },
        machine,
        outcome,
        metrics,
        processes: meta
            .processes
            .iter()
            .enumerate()
            .map(|(i, n)| ProcessInfo {
                index: i as u32,
                name: n.clone(),
                pid: None,
            })
            .collect(),
        tasks,
        series: Series {
            interval_s: cfg.sample_ms as f64 / 1e3,
            samples,
        },
        convergence: conv,
        warnings,
        applied: Default::default(),
        campaign: None,
        sched: None,
    }
}

/// The modelled machine as a record's `machine` describes it.
pub fn machine_info(cfg: &SimConfig) -> MachineInfo {
    let m = &cfg.machine;
    MachineInfo {
        hostname: format!("sim:{}", m.name),
        kernel: "simulated".into(),
        kernel_build: None,
        arch: "sim".into(),
        cpu_model: Some(m.description.clone()),
        hypervisor: false,
        memory_total_bytes: Some(m.memory_bytes.iter().sum()),
        memory_available_bytes: Some(m.memory_bytes.iter().sum()),
        numa_balancing: Some(
            if cfg.balancer.name == "none" {
                "0"
            } else {
                "1"
            }
            .into(),
        ),
        numa_balancing_tunables: BTreeMap::new(),
        thp_enabled: Some(cfg.thp.clone()),
        thp_defrag: None,
        governor: Some(format!("{:?}", m.governor).to_lowercase()),
        smt_active: Some(m.core_cpus.iter().any(|c| c.len() > 1)),
        loadavg: None,
        topology: m.topology.clone(),
        tuning: Default::default(),
    }
}
