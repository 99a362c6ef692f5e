//! The run-record types. `docs/record-schema.json` is generated from these
//! (`numalab schema`), and a test keeps the two identical.

use numalab_topology::MachineInfo;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of the record format this numalab writes. Version 3 added
/// `campaign`, version 4 the traced tasks' `wakeup_latency` and
/// `runqueue_delay`; readers accept versions [`MIN_SCHEMA_VERSION`] to
/// this one.
pub const SCHEMA_VERSION: u32 = 4;

/// The oldest record format this numalab still reads (version 2 records
/// are version 3 records without `campaign`).
pub const MIN_SCHEMA_VERSION: u32 = 2;

/// One run of one benchmark under one configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunRecord {
    pub schema_version: u32,
    /// Unique id, also the file name stem.
    pub id: String,
    pub numalab_version: String,
    /// RFC 3339 UTC time the run started.
    pub started_at: String,
    /// Benchmark name (`numa_test`, `numa01`, `twohalves`, ...).
    pub benchmark: String,
    /// Resolved benchmark parameters (sizes actually used, placement, ...).
    pub params: BTreeMap<String, serde_json::Value>,
    /// Configuration label given with `--label` (default `default`).
    pub label: String,
    /// Which repetition this is: `index` of `of`, from 1.
    pub repetition: Repetition,
    pub backend: Backend,
    pub machine: MachineInfo,
    pub outcome: Outcome,
    /// Scalar results by name (`elapsed_s`, `user_s`, ...).
    pub metrics: BTreeMap<String, Metric>,
    /// Processes of the benchmark (memory time series index into this).
    #[serde(default)]
    pub processes: Vec<ProcessInfo>,
    /// Tasks (processes or threads that do the benchmark's work).
    pub tasks: Vec<TaskRecord>,
    pub series: Series,
    #[serde(default)]
    pub convergence: Option<Convergence>,
    #[serde(default)]
    pub warnings: Vec<String>,
    /// What the runner set up for this run's configuration: machine
    /// settings applied (and restored afterwards) and hooks.
    #[serde(default)]
    pub applied: Applied,
    /// The campaign cell this run is, when a campaign plan ran it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub campaign: Option<CampaignTag>,
    /// Exact scheduling facts of every task of the run, from traced
    /// events (`--trace`); absent for sampled runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sched: Option<SchedTrace>,
}

/// What the scheduler did with every task of a traced run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SchedTrace {
    /// How the events were recorded.
    pub method: String,
    /// Records the kernel dropped (a full ring buffer): when not 0, the
    /// facts below miss some switches.
    pub lost_events: u64,
    /// Why wakers' CPUs are unknown, when they are.
    #[serde(default)]
    pub waker_cpu_unavailable: Option<String>,
    /// The raw events, a file beside the record (`<id>.sched.tsv`).
    #[serde(default)]
    pub events_file: Option<String>,
    /// The CPU each new task first ran on, in order of creation (the
    /// sequence of CPUs the kernel chose for new tasks).
    pub new_task_cpus: Vec<u32>,
    /// Migrations of all tasks from node to node: `[from][to]`, positions
    /// as in `machine.topology.nodes` (the diagonal: moves within a node).
    #[serde(default)]
    pub migration_matrix: Vec<Vec<u32>>,
    pub tasks: Vec<SchedTask>,
}

/// One task (process or thread) of a traced run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SchedTask {
    pub tid: u32,
    /// Its process.
    pub pid: u32,
    /// The task that created it (absent for the first task).
    #[serde(default)]
    pub parent_tid: Option<u32>,
    /// Its last command name.
    pub comm: String,
    /// Seconds from the start of the run: created, last exec, exited.
    #[serde(default)]
    pub forked_s: Option<f64>,
    #[serde(default)]
    pub exec_s: Option<f64>,
    #[serde(default)]
    pub exited_s: Option<f64>,
    /// Seconds on a CPU in all.
    pub run_s: f64,
    /// Seconds on each CPU it ran on (CPU id -> seconds).
    pub cpu_s: BTreeMap<u32, f64>,
    /// Seconds on each node (aligned with `machine.topology.nodes`).
    pub node_s: Vec<f64>,
    /// The CPU it first ran on.
    #[serde(default)]
    pub first_cpu: Option<u32>,
    /// Times it ran on another CPU than last time, by how far it moved.
    pub migrations: Relations,
    /// Wakeups (a run after a sleep): the CPU it woke on relative to the
    /// CPU it last ran on.
    pub wakeups: Relations,
    /// For wakeups by a traced task: the CPU it woke on relative to the
    /// waker's CPU.
    pub woken_near_waker: Relations,
    /// Times it was preempted (switched out while runnable).
    pub preemptions: u32,
    /// Of its `wakeups`, those on a CPU that was idle (the CPU switched
    /// to it from its idle task); absent where the trace does not see
    /// other tasks' switches (not CPU-wide).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub woken_on_idle_cpu: Option<u32>,
    /// Wakeup latency: from a traced task's `sched_waking` of it to its
    /// next switch in (as `perf sched latency` counts a wakeup's delay);
    /// absent when no wakeup of it was seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wakeup_latency: Option<Latency>,
    /// Run-queue delay: from a preemption (switched out while runnable)
    /// to its next switch in; absent when it was never preempted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runqueue_delay: Option<Latency>,
}

/// A distribution of delays, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Latency {
    pub count: u64,
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

impl Latency {
    /// Of delays in nanoseconds (any order); `None` for none. Percentiles
    /// are the nearest rank.
    pub fn of_ns(v: &[u64]) -> Option<Latency> {
        if v.is_empty() {
            return None;
        }
        let mut s = v.to_vec();
        s.sort_unstable();
        let rank = |q: f64| s[((q * s.len() as f64).ceil() as usize).clamp(1, s.len()) - 1];
        let ms = |ns: u64| ns as f64 / 1e6;
        Some(Latency {
            count: s.len() as u64,
            mean_ms: s.iter().map(|&x| x as f64).sum::<f64>() / s.len() as f64 / 1e6,
            p50_ms: ms(rank(0.5)),
            p99_ms: ms(rank(0.99)),
            max_ms: ms(*s.last().expect("not empty")),
        })
    }
}

/// Counts by how two CPUs relate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Relations {
    pub same_cpu: u32,
    pub smt_sibling: u32,
    pub same_llc: u32,
    /// Another LLC of the same node.
    pub same_node: u32,
    pub cross_node: u32,
}

impl Relations {
    pub fn total(&self) -> u32 {
        self.same_cpu + self.smt_sibling + self.same_llc + self.same_node + self.cross_node
    }

    /// Add `other` to these counts.
    pub fn add(&mut self, other: &Relations) {
        self.same_cpu += other.same_cpu;
        self.smt_sibling += other.smt_sibling;
        self.same_llc += other.same_llc;
        self.same_node += other.same_node;
        self.cross_node += other.cross_node;
    }
}

/// Which campaign cell a run is (`numalab campaign`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CampaignTag {
    /// The plan's name.
    pub name: String,
    /// Hash of everything in the plan that gives a cell its meaning
    /// (benchmarks, configurations, warm-ups, interval): a results
    /// directory holds the records of one plan hash only.
    pub plan_hash: String,
    /// The cell's key: the same configuration, case and repetition always
    /// have the same key.
    pub cell: String,
    /// Seed of the campaign's run order.
    pub order_seed: u64,
    /// Set when a Slurm job array task ran the cell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slurm: Option<SlurmTag>,
}

/// The Slurm job that ran a cell (from the job's environment).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SlurmTag {
    /// `SLURM_JOB_ID`.
    pub job_id: String,
    /// `SLURM_ARRAY_JOB_ID` and `SLURM_ARRAY_TASK_ID`.
    #[serde(default)]
    pub array_job_id: Option<String>,
    #[serde(default)]
    pub array_task_id: Option<u32>,
    /// `SLURMD_NODENAME`.
    #[serde(default)]
    pub node: Option<String>,
}

/// A configuration's settings and hooks, as applied to a run.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Applied {
    /// Machine settings written before the configuration's runs and
    /// restored after them: sysctl name, `governor`, `thp` or sysfs path
    /// -> the value read back after writing.
    #[serde(default)]
    pub settings: BTreeMap<String, String>,
    /// Shell command run before every repetition (untimed).
    #[serde(default)]
    pub prepare: Option<String>,
    /// Shell command run once before the configuration's first run.
    #[serde(default)]
    pub setup: Option<String>,
    /// Shell command run once after the configuration's last run.
    #[serde(default)]
    pub cleanup: Option<String>,
    /// Service (`--setup-bg`): a shell command started after `setup` and
    /// kept running through the configuration's runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup_bg: Option<String>,
    /// The sched_ext scheduler the run ran under (`--scx`,
    /// `--scx-exec`); absent: the kernel's own scheduler.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scx: Option<ScxApplied>,
    /// Discarded runs before the recorded ones, per case.
    #[serde(default)]
    pub warmup: u32,
    /// The numalab command line that ran it, program name first.
    #[serde(default)]
    pub command_line: Vec<String>,
}

/// A sched_ext scheduler, as a run ran under it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScxApplied {
    /// numalab's own as `--scx` named it, canonical (`fifo[slice_ms=5]`),
    /// or the command `--scx-exec` ran.
    pub scheduler: String,
    /// Whether it is a program of the user's (`--scx-exec`).
    #[serde(default)]
    pub exec: bool,
    /// The `sched_ext_ops` name the kernel enabled
    /// (`/sys/kernel/sched_ext/root/ops`).
    pub ops: String,
    /// `/sys/kernel/sched_ext/enable_seq` once it was enabled: runs with
    /// the same value ran under one load of it.
    pub enable_seq: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Repetition {
    pub index: u32,
    pub of: u32,
}

// Read by hand (below), as the derived reader would, but without
// buffering the object first: serde reads an internally tagged enum
// twice, and that was a fifth of reading a record.
/// Where the run happened.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum Backend {
    /// Directly on the machine described by `machine`.
    Real {
        /// How this run realised its case here (CPU lists, sizing notes,
        /// ideal nodes, what measured residency), never part of the case.
        #[serde(default)]
        details: BTreeMap<String, serde_json::Value>,
    },
    /// Inside a `numalab vm` guest; `machine` is the guest's view.
    Guest {
        /// Accelerator QEMU used (`kvm` or `tcg`).
        accel: String,
        /// The topology spec the guest was booted with, as typed.
        spec: String,
        /// Sysctls applied inside the guest before the command.
        sysctls: BTreeMap<String, String>,
        /// The host that ran QEMU.
        host: String,
        host_kernel: String,
        host_cpu_model: Option<String>,
        /// As for `real`: how the run realised its case in the guest.
        #[serde(default)]
        details: BTreeMap<String, serde_json::Value>,
    },
    /// In the simulator; `machine` is the modelled machine.
    Sim {
        machine: String,
        scheduler: String,
        balancer: String,
        seed: u64,
        /// Simulated time step or event count, for reproducibility.
        #[serde(default)]
        details: BTreeMap<String, serde_json::Value>,
    },
}

impl<'de> Deserialize<'de> for Backend {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Backend, D::Error> {
        use serde::de::Error;
        /// Every variant's fields, each optional; which are required, and
        /// which allowed, depends on `kind`.
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Wire {
            kind: String,
            details: Option<BTreeMap<String, serde_json::Value>>,
            accel: Option<String>,
            spec: Option<String>,
            sysctls: Option<BTreeMap<String, String>>,
            host: Option<String>,
            host_kernel: Option<String>,
            host_cpu_model: Option<String>,
            machine: Option<String>,
            scheduler: Option<String>,
            balancer: Option<String>,
            seed: Option<u64>,
        }
        let w = Wire::deserialize(d)?;
        fn need<T, E: Error>(v: Option<T>, name: &'static str) -> Result<T, E> {
            v.ok_or_else(|| E::missing_field(name))
        }
        let guest = [
            ("accel", w.accel.is_some()),
            ("spec", w.spec.is_some()),
            ("sysctls", w.sysctls.is_some()),
            ("host", w.host.is_some()),
            ("host_kernel", w.host_kernel.is_some()),
            ("host_cpu_model", w.host_cpu_model.is_some()),
        ];
        let sim = [
            ("machine", w.machine.is_some()),
            ("scheduler", w.scheduler.is_some()),
            ("balancer", w.balancer.is_some()),
            ("seed", w.seed.is_some()),
        ];
        let refuse =
            |fields: &[(&'static str, bool)], expected: &'static [&'static str]| match fields
                .iter()
                .find(|(_, present)| *present)
            {
                Some((name, _)) => Err(D::Error::unknown_field(name, expected)),
                None => Ok(()),
            };
        let details = w.details.unwrap_or_default();
        match w.kind.as_str() {
            "real" => {
                refuse(&guest, &["kind", "details"])?;
                refuse(&sim, &["kind", "details"])?;
                Ok(Backend::Real { details })
            }
            "guest" => {
                refuse(
                    &sim,
                    &[
                        "kind",
                        "accel",
                        "spec",
                        "sysctls",
                        "host",
                        "host_kernel",
                        "host_cpu_model",
                        "details",
                    ],
                )?;
                Ok(Backend::Guest {
                    accel: need(w.accel, "accel")?,
                    spec: need(w.spec, "spec")?,
                    sysctls: need(w.sysctls, "sysctls")?,
                    host: need(w.host, "host")?,
                    host_kernel: need(w.host_kernel, "host_kernel")?,
                    host_cpu_model: w.host_cpu_model,
                    details,
                })
            }
            "sim" => {
                refuse(
                    &guest,
                    &[
                        "kind",
                        "machine",
                        "scheduler",
                        "balancer",
                        "seed",
                        "details",
                    ],
                )?;
                Ok(Backend::Sim {
                    machine: need(w.machine, "machine")?,
                    scheduler: need(w.scheduler, "scheduler")?,
                    balancer: need(w.balancer, "balancer")?,
                    seed: need(w.seed, "seed")?,
                    details,
                })
            }
            other => Err(D::Error::unknown_variant(other, &["real", "guest", "sim"])),
        }
    }
}

impl Backend {
    /// A real run with no details yet.
    pub fn real() -> Backend {
        Backend::Real {
            details: BTreeMap::new(),
        }
    }

    /// The backend's facts about this run (sim: its `details`).
    pub fn details_mut(&mut self) -> &mut BTreeMap<String, serde_json::Value> {
        match self {
            Backend::Real { details } => details,
            Backend::Guest { details, .. } => details,
            Backend::Sim { details, .. } => details,
        }
    }

    pub fn details(&self) -> &BTreeMap<String, serde_json::Value> {
        match self {
            Backend::Real { details } => details,
            Backend::Guest { details, .. } => details,
            Backend::Sim { details, .. } => details,
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            Backend::Real { .. } => "real",
            Backend::Guest { .. } => "guest",
            Backend::Sim { .. } => "sim",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Outcome {
    pub status: Status,
    /// Why the run failed, when it did.
    #[serde(default)]
    pub reason: Option<String>,
}

impl Outcome {
    pub fn ok() -> Outcome {
        Outcome {
            status: Status::Ok,
            reason: None,
        }
    }
    pub fn failed(reason: impl Into<String>) -> Outcome {
        Outcome {
            status: Status::Failed,
            reason: Some(reason.into()),
        }
    }
    pub fn is_ok(&self) -> bool {
        self.status == Status::Ok
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Failed,
}

/// Whether a smaller or a larger value of a metric is the better one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    Lower,
    Higher,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Metric {
    pub value: f64,
    /// `s`, `pages`, `faults`, `%`, ...
    pub unit: String,
    pub better: Better,
}

impl Metric {
    pub fn new(value: f64, unit: &str, better: Better) -> Metric {
        Metric {
            value,
            unit: unit.to_string(),
            better,
        }
    }
    pub fn seconds(value: f64) -> Metric {
        Metric::new(value, "s", Better::Lower)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProcessInfo {
    pub index: u32,
    pub name: String,
    #[serde(default)]
    pub pid: Option<i32>,
}

/// One task: a process or thread that does the benchmark's work.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskRecord {
    /// 1-based task number within the run, as in the seed tables.
    pub id: u32,
    pub name: String,
    #[serde(default)]
    pub pid: Option<i32>,
    /// Index into `processes` for threads of a multi-threaded benchmark.
    #[serde(default)]
    pub process: Option<u32>,
    /// Node the task first ran on (the seed's iSched).
    pub initial_node: Option<u32>,
    /// Node it spent most of its running time on (the seed's MSched).
    pub main_node: Option<u32>,
    /// Seconds of running time per node, aligned with `machine.topology.nodes`;
    /// `null` when residency was not observed (a command's processes, the
    /// message storm's), which is empty here: never zeros that read as
    /// "ran nowhere".
    #[serde(with = "per_node_or_null")]
    #[schemars(with = "Option<Vec<f64>>")]
    pub node_time_s: Vec<f64>,
    /// How node residency was observed (e.g. `getcpu every 1024 updates`),
    /// or why it was not (`not observed: ...`).
    pub residency_method: String,
    /// Number of residency observations behind `node_time_s`.
    pub residency_samples: u64,
    pub user_s: f64,
    pub sys_s: f64,
    /// Work units completed and expected (passes, iterations, loops).
    pub work_done: u64,
    pub work_expected: u64,
    /// How the task ended: `exit 0`, `signal 9`, `ok` (thread), ...
    pub exit: String,
    /// The kernel's own counters of the task as it ended
    /// (`/proc/PID/sched`); absent where they could not be read (no
    /// CONFIG_SCHED_DEBUG, a simulated task).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<KernelCounters>,
}

/// A task's counters from `/proc/PID[/task/TID]/sched`, read as it ended.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KernelCounters {
    /// `se.sum_exec_runtime`: seconds on a CPU (its own, not its
    /// children's).
    pub run_s: f64,
    /// `se.nr_migrations`: moves to another CPU.
    pub nr_migrations: u64,
    pub nr_voluntary_switches: u64,
    pub nr_involuntary_switches: u64,
    /// Pages NUMA balancing migrated for it (absent without
    /// CONFIG_NUMA_BALANCING).
    #[serde(default)]
    pub numa_pages_migrated: Option<u64>,
    /// The node NUMA balancing preferred for it at the end (absent: none).
    #[serde(default)]
    pub numa_preferred_nid: Option<u32>,
    /// Its NUMA hinting faults as the kernel keeps them: halved at every
    /// scan period, so recent faults weigh more.
    #[serde(default)]
    pub total_numa_faults: Option<u64>,
}

impl TaskRecord {
    /// The node with the most running time (the seed's MSched), as an id
    /// of `topo.nodes`; ties go to the first node in the topology's
    /// order; `None` when the task never ran.
    pub fn main_node_of(node_time_s: &[f64], topo: &numalab_topology::Topology) -> Option<u32> {
        let mut best: Option<(usize, f64)> = None;
        for (i, &t) in node_time_s.iter().enumerate() {
            let better = match best {
                None => true,
                Some((_, b)) => t > b,
            };
            if t > 0.0 && better {
                best = Some((i, t));
            }
        }
        best.and_then(|(i, _)| topo.nodes.get(i).map(|n| n.id))
    }

    /// Whether the task's node residency was observed. Records from
    /// before `null` was written say "not observed" with zeros and no
    /// residency samples; those are not observed either.
    pub fn residency_observed(&self) -> bool {
        !self.node_time_s.is_empty()
            && (self.residency_samples > 0 || self.node_time_s.iter().any(|&t| t > 0.0))
    }

    /// Percentage of running time on each node (the seed's table).
    pub fn node_percent(&self) -> Vec<f64> {
        let total: f64 = self.node_time_s.iter().sum();
        self.node_time_s
            .iter()
            .map(|t| if total > 0.0 { 100.0 * t / total } else { 0.0 })
            .collect()
    }
}

/// `node_time_s` on disk: the per-node array, or `null` for the empty
/// vector that means "not observed".
mod per_node_or_null {
    use serde::{Deserialize, Deserializer, Serializer};

    #[allow(clippy::ptr_arg)] // serde's `with` hands over the field itself
    pub fn serialize<S: Serializer>(v: &Vec<f64>, s: S) -> Result<S::Ok, S::Error> {
        if v.is_empty() {
            s.serialize_none()
        } else {
            s.serialize_some(v)
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
        Ok(Option::<Vec<f64>>::deserialize(d)?.unwrap_or_default())
    }
}

/// Observations over time. Each sample's vectors may be empty when that
/// observable was not collected by the benchmark.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Series {
    /// Requested sampling interval in seconds (0 when not sampled).
    pub interval_s: f64,
    // Read as `[]` with `store::LoadOptions::skip_samples`.
    #[serde(deserialize_with = "crate::store::samples_or_skip")]
    #[schemars(with = "Vec<Sample>")]
    pub samples: Vec<Sample>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Sample {
    /// Seconds since the run started.
    pub t_s: f64,
    /// Resident bytes per process (outer, as `processes`) per node (inner,
    /// aligned with `machine.topology.nodes`).
    #[serde(default)]
    pub memory_bytes: Vec<Vec<u64>>,
    /// Node each task last ran on (as `tasks`), when known.
    #[serde(default)]
    pub task_node: Vec<Option<u32>>,
    /// Work units done so far per task (as `tasks`).
    #[serde(default)]
    pub progress: Vec<u64>,
    /// NUMA counters of /proc/vmstat as deltas from the run's start.
    #[serde(default)]
    pub vmstat: BTreeMap<String, i64>,
    /// Bytes per node (aligned with `machine.topology.nodes`) of the
    /// memory each task works on (as `tasks`): its own slice, or its
    /// process's whole buffer when the buffer is shared. Real and guest
    /// runs estimate it from the nodes of evenly spaced pages
    /// (`move_pages`), the simulator counts it exactly; an inner vector is
    /// empty while the task's memory is not known yet. Empty when not
    /// collected.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub task_memory_bytes: Vec<Vec<u64>>,
}

/// When, if ever, the workload reached its converged state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Convergence {
    /// The precise criterion used, in words.
    pub definition: String,
    pub state: ConvergenceState,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "state", rename_all = "snake_case", deny_unknown_fields)]
pub enum ConvergenceState {
    /// First reached `at_s` seconds after the start.
    Converged { at_s: f64 },
    /// Not reached within the observed `within_s` seconds.
    NotConverged { within_s: f64 },
    /// Meaningless on this machine (e.g. only one NUMA node).
    Trivial { reason: String },
}

/// Why a record that parsed is not consistent ([`RunRecord::check`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CheckError {
    /// A schema version this numalab does not read.
    #[error("schema version {0} (this numalab reads {MIN_SCHEMA_VERSION} to {SCHEMA_VERSION})")]
    SchemaVersion(u32),
    /// The id, or the name of a file beside the record, is not a safe name.
    #[error(transparent)]
    Name(#[from] crate::id::NameError),
    /// A repetition index or count of 0.
    #[error("repetition {index} of {of}: both count from 1")]
    Repetition { index: u32, of: u32 },
    /// An empty label, or one with control characters.
    #[error("label {0:?} is empty or has control characters")]
    Label(String),
    /// A task's per-node times not aligned with the machine's nodes.
    #[error("task {task} has {times} per-node times for {nodes} nodes")]
    TaskNodeTimes {
        task: u32,
        times: usize,
        nodes: usize,
    },
    /// A sample's memory not aligned with the machine's nodes.
    #[error("sample at {0:.3} s has memory for the wrong number of nodes")]
    SampleNodes(f64),
    /// A sample's task memory not aligned with the machine's nodes.
    #[error("sample at {0:.3} s has task memory for the wrong number of nodes")]
    SampleTaskNodes(f64),
    /// A sample with memory for more processes than the record lists.
    #[error("sample at {0:.3} s has memory for more processes than listed")]
    SampleProcesses(f64),
    /// A metric whose value is NaN or infinite.
    #[error("metric {0} is not a finite number")]
    MetricNotFinite(String),
}

impl RunRecord {
    /// Consistency checks beyond what the types enforce.
    pub fn check(&self) -> Result<(), CheckError> {
        if !(MIN_SCHEMA_VERSION..=SCHEMA_VERSION).contains(&self.schema_version) {
            return Err(CheckError::SchemaVersion(self.schema_version));
        }
        crate::RecordId::parse(&self.id)?;
        if self.repetition.index == 0 || self.repetition.of == 0 {
            return Err(CheckError::Repetition {
                index: self.repetition.index,
                of: self.repetition.of,
            });
        }
        if let Some(name) = self.sched.as_ref().and_then(|s| s.events_file.as_deref()) {
            crate::id::plain_file_name("sched.events_file", name)?;
        }
        // A label names table columns and lines of text: a record whose
        // label is empty or breaks a line would break them (`numalab run`
        // refuses such a `--label`; this catches records made otherwise).
        if self.label.trim().is_empty() || self.label.chars().any(char::is_control) {
            return Err(CheckError::Label(self.label.clone()));
        }
        let nodes = self.machine.topology.nodes.len();
        for t in &self.tasks {
            if !t.node_time_s.is_empty() && t.node_time_s.len() != nodes {
                return Err(CheckError::TaskNodeTimes {
                    task: t.id,
                    times: t.node_time_s.len(),
                    nodes,
                });
            }
        }
        for s in &self.series.samples {
            if s.memory_bytes.iter().any(|m| m.len() != nodes) {
                return Err(CheckError::SampleNodes(s.t_s));
            }
            if s.task_memory_bytes
                .iter()
                .any(|m| !m.is_empty() && m.len() != nodes)
            {
                return Err(CheckError::SampleTaskNodes(s.t_s));
            }
            if s.memory_bytes.len() > self.processes.len().max(1) {
                return Err(CheckError::SampleProcesses(s.t_s));
            }
        }
        for (name, m) in &self.metrics {
            if !m.value.is_finite() {
                return Err(CheckError::MetricNotFinite(name.clone()));
            }
        }
        Ok(())
    }

    /// Metric value by name.
    pub fn metric(&self, name: &str) -> Option<f64> {
        self.metrics.get(name).map(|m| m.value)
    }

    /// A unique, filesystem-safe id for a new record.
    pub fn make_id(
        benchmark: &str,
        label: &str,
        started: &chrono::DateTime<chrono::Utc>,
        index: u32,
    ) -> String {
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
        // Long names are cut so the id stays within RecordId's length.
        let cut = |s: String| s.chars().take(60).collect::<String>();
        format!(
            "{}-{}-{}-r{index}-{}",
            started.format("%Y%m%dT%H%M%S%.3fZ"),
            cut(safe(benchmark)),
            cut(safe(label)),
            std::process::id()
        )
    }
}

/// The JSON Schema of [`RunRecord`], as written to docs/record-schema.json.
pub fn json_schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(RunRecord)).expect("schema serialises")
}

/// A small, valid record for tests and documentation examples.
pub fn example_record(benchmark: &str, label: &str, index: u32, elapsed_s: f64) -> RunRecord {
    let topology = numalab_topology::Topology::regular(2, 2, 1, 1, 32 << 20, 1 << 30, None)
        .expect("valid example topology");
    let started = chrono::DateTime::parse_from_rfc3339("2026-11-22T10:00:00Z")
        .expect("valid time")
        .with_timezone(&chrono::Utc);
    let mut metrics = BTreeMap::new();
    metrics.insert("elapsed_s".to_string(), Metric::seconds(elapsed_s));
    metrics.insert("user_s".to_string(), Metric::seconds(elapsed_s * 1.9));
    RunRecord {
        schema_version: SCHEMA_VERSION,
        id: RunRecord::make_id(benchmark, label, &started, index),
        numalab_version: "0.0.0-example".into(),
        started_at: started.to_rfc3339(),
        benchmark: benchmark.into(),
        params: BTreeMap::from([("tasks".to_string(), serde_json::json!(2))]),
        label: label.into(),
        repetition: Repetition { index, of: 3 },
        backend: Backend::real(),
        machine: MachineInfo {
            hostname: "example".into(),
            kernel: "6.1.0-example".into(),
            kernel_build: None,
            arch: "x86_64".into(),
            cpu_model: Some("Example CPU".into()),
            hypervisor: false,
            memory_total_bytes: Some(2 << 30),
            memory_available_bytes: Some(1 << 30),
            numa_balancing: Some("1".into()),
            numa_balancing_tunables: BTreeMap::new(),
            thp_enabled: Some("madvise".into()),
            thp_defrag: Some("madvise".into()),
            governor: None,
            smt_active: Some(false),
            loadavg: Some([0.0, 0.0, 0.0]),
            topology,
            tuning: Default::default(),
        },
        outcome: Outcome::ok(),
        metrics,
        processes: vec![ProcessInfo {
            index: 0,
            name: "p0".into(),
            pid: Some(100),
        }],
        tasks: (1..=2)
            .map(|i| TaskRecord {
                id: i,
                name: format!("task {i}"),
                pid: Some(100 + i as i32),
                process: None,
                initial_node: Some(0),
                main_node: Some(i - 1),
                node_time_s: vec![elapsed_s / 2.0, elapsed_s / 2.0],
                residency_method: "example".into(),
                residency_samples: 10,
                user_s: elapsed_s,
                sys_s: 0.01,
                work_done: 100,
                work_expected: 100,
                exit: "exit 0".into(),
                kernel: None,
            })
            .collect(),
        series: Series {
            interval_s: 1.0,
            samples: vec![Sample {
                t_s: 0.0,
                memory_bytes: vec![vec![1 << 20, 0]],
                task_node: vec![Some(0), Some(1)],
                progress: vec![0, 0],
                vmstat: BTreeMap::from([("numa_pages_migrated".to_string(), 0)]),
                task_memory_bytes: vec![],
            }],
        },
        convergence: Some(Convergence {
            definition: "example".into(),
            state: ConvergenceState::Converged { at_s: 1.0 },
        }),
        warnings: vec![],
        applied: Applied::default(),
        campaign: None,
        sched: None,
    }
}

#[cfg(test)]
mod latency_tests {
    use super::Latency;

    #[test]
    fn a_latency_has_nearest_rank_percentiles() {
        assert_eq!(Latency::of_ns(&[]), None);
        let v: Vec<u64> = (1..=100).rev().map(|i| i * 1_000_000).collect();
        let l = Latency::of_ns(&v).unwrap();
        assert_eq!(l.count, 100);
        assert_eq!((l.p50_ms, l.p99_ms, l.max_ms), (50.0, 99.0, 100.0));
        assert!((l.mean_ms - 50.5).abs() < 1e-9);
        let one = Latency::of_ns(&[3_000_000]).unwrap();
        assert_eq!((one.p50_ms, one.p99_ms), (3.0, 3.0));
    }
}
