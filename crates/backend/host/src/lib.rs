//! # numalab-host: the seeds' benchmarks, run for real
//!
//! Each benchmark runs its tasks as child processes of numalab (the
//! numalab binary re-executed with a hidden `__task` subcommand), so the
//! kernel schedules them exactly as it would the original programs, and
//! numalab can account every task's CPU time with `wait4`, watch where it
//! runs and where its pages are, and kill it if the user interrupts.
//! [`command`] is the exception: it runs the user's program as it is (a
//! configure script, say), in its own process group, and times the tree.
//!
//! ## Nothing left behind
//!
//! Whatever ends numalab (a run's end, Ctrl-C, SIGTERM, a crash, `kill
//! -9`), no process of a benchmark may outlive it: a leftover spinning
//! task or message storm skews every run after it, on a machine whose
//! point is to be measured. Two mechanisms, one per kind of process:
//!
//! - **numalab's own tasks** (numa_test's, the autonuma processes, spin,
//!   the storm, forkexec's parent and its children) carry `PR_SET_PDEATHSIG`, and each checks right after
//!   setting it that its parent did not die between its `fork` and the
//!   `prctl` (the kernel signals only a later death; a storm worker caught
//!   there ran on forever, found by the tests). These programs are ours:
//!   they fork nothing but their own workers, which carry it too, so one
//!   generation at a time the whole tree dies with numalab. The storm
//!   (`__hackbench`) gets SIGTERM, not SIGKILL, for numalab's death and
//!   for Ctrl-C or a stop from numalab: it kills its workers and reaps
//!   them before it exits, so none is left a zombie for init.
//! - **A user's program** ([`command`]) forks what it likes, and its
//!   grandchildren would be reparented to init. It runs under a
//!   supervisor ([`numalab_linux::supervise`]): a child of numalab that
//!   is the program's parent and the subreaper of its tree, outlives
//!   numalab, and kills the whole tree when the pipe from numalab closes
//!   (numalab died, however) or numalab tells it to stop.
//!
//! Why a supervisor and not a cgroup with `cgroup.kill`: a cgroup only
//! finds the tree; a process must still outlive numalab to kill it, so the
//! supervisor is needed either way. A cgroup also needs a writable,
//! delegated cgroup v2 subtree, which unprivileged users, containers and
//! cgroup v1 machines often lack (a fallback would be needed anyway),
//! while a subreaper works for every user on every kernel numalab runs on
//! and catches every descendant: a double fork or a `setsid` daemon
//! cannot leave it. Why not the supervisor for numalab's own tasks too:
//! numalab reads each task's exact CPU time with `wait4`, which only
//! their parent can; the supervisor would have to relay it, for nothing
//! PDEATHSIG does not already give.
//!
//! A run is only a result if the work was done: every task must exit 0 and
//! report that it completed all its passes or iterations. Anything else
//! makes the run's record `failed` with the reason, and the command exits
//! non-zero (mmtests once ran a benchmark that did no work for four years
//! because nothing checked).
//!
//! This crate is the **host backend** of the runner
//! ([`HostBackend`]): it runs a case resolved by numalab-bench, the
//! same definition the simulator runs, and answers the sizing questions
//! of [`numalab_bench::Calibration`] by measuring this machine (zeroing
//! bandwidth, spin rate, free memory per node). Inside a `numalab vm`
//! guest the same backend runs, and the guest backend retags its records.
#![forbid(unsafe_code)]

pub mod autonuma_run;
pub mod autonuma_task;
pub mod command;
pub mod forkexec;
pub mod hackbench;
pub mod mem;
pub mod numa_test;
pub mod observe;
pub mod pace;
pub mod placement_run;
pub mod randupdt;
pub mod run;
pub mod trace;

use numalab_bench::{Calibration, Case};
use numalab_record::RunRecord;
use numalab_runner::{Backend, RunContext, RunError};
use numalab_topology::{MachineInfo, Roots};
use std::cell::OnceCell;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// Why a run on this machine could not be done.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The user interrupted it; every task was stopped.
    #[error("interrupted")]
    Interrupted,
    #[error("{what}: {err}")]
    Io { what: String, err: std::io::Error },
    /// An autonuma case with nothing to place on this machine.
    #[error(transparent)]
    NoCpuNode(#[from] numalab_bench::autonuma::NoCpuNode),
    #[error("{0}")]
    Other(String),
}

impl Error {
    pub fn io(what: impl Into<String>, err: std::io::Error) -> Error {
        Error::Io {
            what: what.into(),
            err,
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// A task's kernel counters as the record keeps them.
pub fn kernel_counters(
    c: Option<numalab_linux::procfs::SchedCounters>,
) -> Option<numalab_record::KernelCounters> {
    c.map(|c| numalab_record::KernelCounters {
        run_s: c.sum_exec_runtime_ns as f64 / 1e9,
        nr_migrations: c.nr_migrations,
        nr_voluntary_switches: c.nr_voluntary_switches,
        nr_involuntary_switches: c.nr_involuntary_switches,
        numa_pages_migrated: c.numa_pages_migrated,
        numa_preferred_nid: c.numa_preferred_nid,
        total_numa_faults: c.total_numa_faults,
    })
}

/// Sums of the tasks' kernel counters, as metrics `compare` takes:
/// `kernel_migrations`, `kernel_numa_pages_migrated` (tasks whose
/// counters were read; none when none were).
pub fn kernel_metrics(rec: &mut RunRecord) {
    let read: Vec<&numalab_record::KernelCounters> =
        rec.tasks.iter().filter_map(|t| t.kernel.as_ref()).collect();
    if read.is_empty() {
        return;
    }
    let migrations: u64 = read.iter().map(|k| k.nr_migrations).sum();
    numalab_bench::metrics::KERNEL_MIGRATIONS.put(&mut rec.metrics, migrations as f64);
    let pages: Option<u64> = read.iter().map(|k| k.numa_pages_migrated).sum();
    if let Some(p) = pages {
        numalab_bench::metrics::KERNEL_NUMA_PAGES_MIGRATED.put(&mut rec.metrics, p as f64);
    }
}

/// A process tree observed only when it ends (a command, hackbench,
/// forkexec: its processes come and go too fast to sample), as the run's
/// one task.
pub struct EndOnly<'a> {
    pub name: String,
    pub pid: Option<i32>,
    /// Why where it ran was not observed.
    pub why: &'a str,
    /// What `wait4` said of its top process and the children it reaped.
    pub exit: &'a numalab_linux::child::Exit,
    pub work_done: u64,
    pub work_expected: u64,
}

/// Record `t` as the run's task, its user and system time as the run's
/// metrics, and the run's final sample (`sampled`: observations were on;
/// `progress`: the work counts at `ended_s`, empty when none is counted)
/// and /proc/vmstat counters.
pub fn record_end_only(
    rec: &mut RunRecord,
    t: EndOnly,
    sampled: bool,
    ended_s: f64,
    progress: Vec<u64>,
    vm: &BTreeMap<String, i64>,
) {
    rec.tasks.push(numalab_record::TaskRecord {
        id: 1,
        name: t.name,
        pid: t.pid,
        process: Some(0),
        initial_node: None,
        main_node: None,
        node_time_s: Vec::new(),
        residency_method: format!("not observed: {}", t.why),
        residency_samples: 0,
        user_s: t.exit.user_s,
        sys_s: t.exit.sys_s,
        work_done: t.work_done,
        work_expected: t.work_expected,
        exit: t.exit.describe(),
        kernel: kernel_counters(t.exit.sched),
    });
    numalab_bench::metrics::USER_S.put(&mut rec.metrics, t.exit.user_s);
    numalab_bench::metrics::SYS_S.put(&mut rec.metrics, t.exit.sys_s);
    observe::push_final_sample(rec, sampled, ended_s, progress, vm);
    vmstat_metrics(rec, vm);
}

/// The /proc/vmstat deltas every record carries, by their metric names.
pub fn vmstat_metrics(rec: &mut RunRecord, delta: &BTreeMap<String, i64>) {
    for m in numalab_bench::metrics::VMSTAT {
        if let Some(v) = delta.get(m.name) {
            m.put(&mut rec.metrics, *v as f64);
        }
    }
}

/// Each node's allocation counters (`/sys/devices/system/node/nodeN/numastat`:
/// numa_hit, numa_miss, numa_foreign, interleave_hit, local_node,
/// other_node), by node id; nodes or files that cannot be read are left
/// out.
pub fn node_numastat(topo: &numalab_topology::Topology) -> BTreeMap<u32, BTreeMap<String, u64>> {
    let mut out = BTreeMap::new();
    for n in &topo.nodes {
        let path = format!("/sys/devices/system/node/node{}/numastat", n.id);
        if let Ok(text) = std::fs::read_to_string(path) {
            let m: BTreeMap<String, u64> = text
                .lines()
                .filter_map(|l| {
                    let (k, v) = l.split_once(' ')?;
                    Some((k.to_string(), v.trim().parse().ok()?))
                })
                .collect();
            out.insert(n.id, m);
        }
    }
    out
}

/// The machine-wide numastat counters' change over a run, as metrics
/// (summed over nodes) and per node in `backend.details.numastat`. They
/// count every allocation on the machine, not only the benchmark's.
pub fn numastat_delta(
    rec: &mut RunRecord,
    before: &BTreeMap<u32, BTreeMap<String, u64>>,
    after: &BTreeMap<u32, BTreeMap<String, u64>>,
) {
    let mut per_node = serde_json::Map::new();
    let mut total: BTreeMap<String, u64> = BTreeMap::new();
    for (node, a) in after {
        let Some(b) = before.get(node) else { continue };
        let mut d = serde_json::Map::new();
        for (k, v) in a {
            let delta = v.saturating_sub(*b.get(k).unwrap_or(v));
            d.insert(k.clone(), delta.into());
            *total.entry(k.clone()).or_default() += delta;
        }
        per_node.insert(format!("node{node}"), d.into());
    }
    if per_node.is_empty() {
        return;
    }
    for (k, m) in numalab_bench::metrics::NUMASTAT {
        if let Some(v) = total.get(k) {
            m.put(&mut rec.metrics, *v as f64);
        }
    }
    rec.backend
        .details_mut()
        .insert("numastat".into(), per_node.into());
}

/// Runs cases on this machine.
pub struct HostBackend {
    exe: PathBuf,
    machine: MachineInfo,
    spin_rate: OnceCell<f64>,
    first_touch_rate: OnceCell<f64>,
}

/// Fresh memory a first-touch measure faults in: enough pages to time
/// well (a quarter of a second here), little enough to cost nothing.
const FIRST_TOUCH_BYTES: usize = 256 << 20;

impl HostBackend {
    /// Probe this machine; `exe` is the numalab binary the tasks run as.
    pub fn new(exe: PathBuf) -> std::result::Result<HostBackend, numalab_topology::TopologyError> {
        let machine = MachineInfo::probe(&Roots::host())?;
        Ok(HostBackend {
            exe,
            machine,
            spin_rate: OnceCell::new(),
            first_touch_rate: OnceCell::new(),
        })
    }
}

impl Calibration for HostBackend {
    fn machine(&self) -> &MachineInfo {
        &self.machine
    }

    fn node_free_bytes(&self, node: u32) -> Option<u64> {
        numalab_topology::probe::node_free_bytes(&Roots::host().sys, node)
    }

    fn zeroing_bandwidth(&self, threads: u32, working_set: u64) -> f64 {
        autonuma_run::measure_zeroing_bandwidth(
            threads,
            working_set,
            self.machine.topology.max_llc_bytes(),
            Duration::from_millis(300),
        )
    }

    fn sweep_bandwidth(&self, op: numalab_bench::mem::Op, threads: u32, working_set: u64) -> f64 {
        mem::measure_sweep(
            op,
            threads,
            working_set,
            self.machine.topology.max_llc_bytes(),
            Duration::from_millis(300),
        )
    }

    fn spin_rate(&self) -> f64 {
        *self
            .spin_rate
            .get_or_init(|| placement_run::spin_rate(Duration::from_millis(300)))
    }

    fn first_touch_rate(&self) -> f64 {
        *self
            .first_touch_rate
            .get_or_init(|| autonuma_run::measure_first_touch_rate(FIRST_TOUCH_BYTES))
    }
}

impl Backend for HostBackend {
    fn kind(&self) -> &'static str {
        "real"
    }

    fn describe(&self) -> String {
        let m = &self.machine;
        format!(
            "{} ({}), kernel {}, numa_balancing={}",
            m.hostname,
            m.topology.summary(),
            m.kernel,
            m.numa_balancing.as_deref().unwrap_or("n/a")
        )
    }

    fn run(&mut self, case: &Case, ctx: &RunContext) -> std::result::Result<RunRecord, RunError> {
        let m = &self.machine;
        let traced = match ctx.trace {
            true => Some(
                trace::Session::start(&m.topology).map_err(|e| RunError::Failed(e.to_string()))?,
            ),
            false => None,
        };
        let numastat_before = node_numastat(&m.topology);
        let r = match case {
            Case::NumaTest(p) => numa_test::run_once(&self.exe, m, p, ctx),
            Case::Autonuma(p) => autonuma_run::run_once(&self.exe, m, p, ctx),
            Case::Spin(p) => placement_run::run_spin(&self.exe, m, p, ctx),
            Case::Hackbench(p) => placement_run::run_hackbench(&self.exe, m, p, ctx),
            Case::ForkExec(p) => forkexec::run_forkexec(&self.exe, m, p, ctx),
            Case::Mem(p) => mem::run_mem(&self.exe, m, p, ctx),
            Case::Command(p) => {
                let t0 = std::time::Instant::now();
                command::run_once(&self.exe, m, p, ctx, |_| {
                    // A command's length is unknown: progress shows time.
                    let t = t0.elapsed().as_secs_f64();
                    (ctx.progress)(t / (t + 10.0));
                })
            }
        };
        let r = r.map(|mut rec| {
            numastat_delta(&mut rec, &numastat_before, &node_numastat(&m.topology));
            kernel_metrics(&mut rec);
            rec
        });
        match (r, traced) {
            (Ok(mut rec), Some(t)) => {
                t.finish(&mut rec, ctx.results, &m.topology)
                    .map_err(|e| RunError::Failed(e.to_string()))?;
                Ok(rec)
            }
            (Ok(rec), None) => Ok(rec),
            (Err(Error::Interrupted), _) => Err(RunError::Interrupted),
            (Err(e), _) => Err(RunError::Failed(e.to_string())),
        }
    }
}

/// Set a benchmark task's affinity to what it is, as NEST's users start a
/// workload (its patch makes a task that calls sched_setaffinity with
/// every CPU, and what it forks, NEST's): numalab's sched_ext `nest` then
/// places the benchmark's tasks, and no other task, by its nests
/// (docs/sched-ext.md). sched_ext reports only a changed mask, so the task
/// narrows it to its own CPU first, for two system calls; under every
/// other scheduler the mask ends as it began, and a placement's pinning
/// comes after. A mask that cannot be read or narrowed is left alone; one
/// that cannot be widened again is said on standard error.
fn opt_in_to_nest() {
    let (Ok(all), Ok(cpu)) = (
        numalab_linux::numa::get_affinity(0),
        numalab_linux::numa::current_cpu(),
    ) else {
        return;
    };
    if all.len() > 1 && numalab_linux::numa::set_affinity(0, &[cpu]).is_ok() {
        if let Err(e) = numalab_linux::numa::set_affinity(0, &all) {
            numalab_linux::errln!("numalab: cannot restore a benchmark task's CPUs: {e}");
        }
    }
}

/// Dispatch the hidden subcommands numalab re-executes itself with.
/// Returns the process exit code. A benchmark's own tasks (`__task`,
/// `__hackbench`, `__forkexec`) opt in to NEST first, but forkexec's
/// children (`__task burst`), which inherit it from their driver and
/// whose start is what forkexec times.
pub fn internal_main(args: &[String]) -> i32 {
    let first = args.first().map(String::as_str);
    let burst = args.get(1).map(String::as_str) == Some("burst");
    if matches!(first, Some("__task" | "__hackbench" | "__forkexec")) && !burst {
        opt_in_to_nest();
    }
    match first {
        Some("__task") => match args.get(1).map(String::as_str) {
            Some("randupdt") => randupdt::task_main(&args[2..]),
            Some("autonuma") => autonuma_task::task_main(&args[2..]),
            Some("hold") => autonuma_task::hold_main(&args[2..]),
            Some("spin") => placement_run::spin_main(&args[2..]),
            Some("burst") => forkexec::burst_main(&args[2..]),
            Some("mem") => mem::task_main(&args[2..]),
            other => {
                numalab_linux::errln!("numalab: internal: unknown task {other:?}");
                2
            }
        },
        Some("__hackbench") => hackbench::hackbench_main(&args[1..]),
        Some("__forkexec") => forkexec::driver_main(&args[1..]),
        Some("__fork-us") => forkexec::fork_us_main(&args[1..]),
        Some(numalab_linux::supervise::SUBCOMMAND) => numalab_linux::supervise::main(&args[1..]),
        other => {
            numalab_linux::errln!("numalab: internal: unknown entry {other:?}");
            2
        }
    }
}
