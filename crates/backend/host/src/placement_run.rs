//! Placement experiments (seed 003): where should a few tasks run? The
//! same work is run on CPU sets derived from the topology
//! ([`numalab_topology::placement`]), or on a list the user gives, as
//! `taskset -c` would restrict it:
//!
//! - `spin`: N processes each spinning through a fixed number of
//!   iterations of a dependent integer chain (pure ALU work: what two SMT
//!   siblings share, what a cache does not help). A task's residency is
//!   measured as numa_test's: it reads its CPU and CPU time every
//!   [`SPIN_CHUNK`] iterations. The run's time is the last task's end.
//! - `hackbench`: the built-in message storm ([`crate::hackbench`]) with
//!   hackbench's parameters (groups, fds, loops, message size); every
//!   process it forks inherits the CPU set. The run's time is the storm's
//!   own, first message to last exit, as hackbench reports it.

use crate::observe::{push_final_sample, Observer};
use crate::pace::Pacer;
use crate::randupdt::Residency;
use crate::run::{node_residency, progress_bar, RunSpec, TaskProcess};
use crate::{Error, Result};
use numalab_bench::metrics::*;
use numalab_bench::placement::{HackbenchParams, SpinParams, SPIN_CHUNK};
use numalab_bench::Case;
use numalab_linux::child::{self, Exit};
use numalab_record::{Outcome, ProcessInfo, RunRecord, TaskRecord};
use numalab_topology::MachineInfo;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Restrict `cmd`'s process (and what it forks) to `cpus` before it execs.
fn with_affinity(cmd: &mut Command, cpus: &Option<Vec<u32>>) {
    let Some(cpus) = cpus.clone() else { return };
    numalab_linux::numa::affinity_before_exec(cmd, cpus);
}

// ----- the spinning task -----

/// What a spinning task reports on its last line.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SpinReport {
    pub initial_cpu: u32,
    pub cpu_time_ns: BTreeMap<u32, u64>,
    pub readings: u64,
    pub iterations: u64,
    /// The chain's last value, so the work cannot be optimised away.
    pub checksum: u64,
}

/// Spin through `iterations`, writing `progress K` (chunks done) lines.
pub fn spin(iterations: u64, progress: &mut dyn Write) -> SpinReport {
    let mut res = Residency::start();
    let initial_cpu = res.last_cpu;
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut done = 0;
    let mut chunks = 0u64;
    while done < iterations {
        let n = SPIN_CHUNK.min(iterations - done);
        for _ in 0..n {
            // xorshift64: each step depends on the last.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        x = std::hint::black_box(x);
        done += n;
        chunks += 1;
        res.tick();
        if chunks.is_multiple_of(16) || done == iterations {
            let _ = writeln!(progress, "progress {done}");
            let _ = progress.flush();
        }
    }
    SpinReport {
        initial_cpu,
        cpu_time_ns: res.per_cpu,
        readings: res.readings,
        iterations: done,
        checksum: x,
    }
}

/// Iterations per second of one spinning thread here, measured for
/// about `duration` (the basis of `--seconds`).
pub fn spin_rate(duration: Duration) -> f64 {
    let t0 = Instant::now();
    let mut n = 0u64;
    let mut sink = Vec::new();
    while t0.elapsed() < duration {
        spin(SPIN_CHUNK, &mut sink);
        sink.clear();
        n += SPIN_CHUNK;
    }
    n as f64 / t0.elapsed().as_secs_f64()
}

/// `numalab __task spin ITERATIONS`: progress lines, then `done <json>`.
pub fn spin_main(args: &[String]) -> i32 {
    let Some(iterations) = args.first().and_then(|s| s.parse::<u64>().ok()) else {
        numalab_linux::errln!("numalab: internal: usage: __task spin ITERATIONS");
        return 2;
    };
    numalab_linux::child::set_task_name("spin");
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let r = spin(iterations, &mut out);
    let _ = writeln!(
        out,
        "done {}",
        serde_json::to_string(&r).expect("report serialises")
    );
    0
}

// ----- runs -----

struct Task {
    proc: TaskProcess<SpinReport>,
    pid: i32,
    /// How it ended, and when (seconds from the start).
    exit: Option<(Exit, f64)>,
}

fn spawn_spin(exe: &Path, p: &SpinParams) -> Result<Task> {
    let mut cmd = Command::new(exe);
    cmd.args(["__task", "spin"])
        .arg(p.iterations.to_string())
        .stderr(Stdio::inherit());
    with_affinity(&mut cmd, &p.set.cpus);
    let proc = TaskProcess::spawn(cmd, "progress", "a spinning task")?;
    Ok(Task {
        pid: proc.pid,
        proc,
        exit: None,
    })
}

fn kill_tasks(tasks: &mut [Task]) {
    for t in tasks.iter().filter(|t| t.exit.is_none()) {
        child::signal(t.pid, libc::SIGKILL);
    }
    for t in tasks.iter_mut() {
        if t.exit.is_none() {
            let _ = child::wait4(t.pid, true);
        }
        t.proc.finish();
    }
}

/// Run the spinning tasks once.
pub fn run_spin(
    exe: &Path,
    machine: &MachineInfo,
    p: &SpinParams,
    spec: &RunSpec,
) -> Result<RunRecord> {
    let topo = &machine.topology;
    let mut rec = spec.new_record(&Case::Spin(p.clone()), machine);
    let observer = Observer::start(topo);
    let bar = progress_bar(p.tasks as u64 * p.iterations, spec);
    let start = Instant::now();
    let mut tasks = start_spins(exe, p)?;
    let ids: Vec<(i32, Option<i32>)> = tasks.iter().map(|t| (t.pid, None)).collect();
    let pacer = watch_spins(&mut tasks, &ids, start, &observer, &bar, spec, &mut rec)?;
    rec.series.interval_s = pacer.longest_s();
    let reports: Vec<Option<SpinReport>> = tasks.iter_mut().map(|t| t.proc.finish()).collect();
    let (elapsed, user, sys, failures) = record_spins(&mut rec, topo, p, &tasks, &reports);
    ELAPSED_S.put(&mut rec.metrics, elapsed);
    USER_S.put(&mut rec.metrics, user);
    SYS_S.put(&mut rec.metrics, sys);
    let vm = observer.vmstat_delta();
    let work: Vec<u64> = rec.tasks.iter().map(|t| t.work_done).collect();
    push_final_sample(&mut rec, pacer.enabled(), elapsed, work, &vm);
    crate::vmstat_metrics(&mut rec, &vm);
    if !failures.is_empty() {
        rec.outcome = Outcome::failed(failures.join("; "));
    }
    Ok(rec)
}

/// Start the spinning tasks; those started are killed when one fails to.
fn start_spins(exe: &Path, p: &SpinParams) -> Result<Vec<Task>> {
    let mut tasks: Vec<Task> = Vec::new();
    for _ in 0..p.tasks {
        match spawn_spin(exe, p) {
            Ok(t) => tasks.push(t),
            Err(e) => {
                kill_tasks(&mut tasks);
                return Err(e);
            }
        }
    }
    Ok(tasks)
}

/// Wait for every spinning task to end, showing progress and sampling
/// as paced; returns the pacer.
fn watch_spins(
    tasks: &mut [Task],
    ids: &[(i32, Option<i32>)],
    start: Instant,
    observer: &Observer,
    bar: &crate::run::Progress<'_>,
    spec: &RunSpec,
    rec: &mut RunRecord,
) -> Result<Pacer> {
    let mut pacer = Pacer::new(spec.interval);
    loop {
        let now = start.elapsed().as_secs_f64();
        if spec.interrupt.is_set() {
            kill_tasks(tasks);
            return Err(Error::Interrupted);
        }
        for t in tasks.iter_mut().filter(|t| t.exit.is_none()) {
            if let Some(e) =
                child::wait4(t.pid, false).map_err(|e| Error::io("waiting for a task", e))?
            {
                t.exit = Some((e, start.elapsed().as_secs_f64()));
            }
        }
        let progress: Vec<u64> = tasks.iter().map(|t| t.proc.done()).collect();
        bar.set_position(progress.iter().sum());
        let running = tasks.iter().any(|t| t.exit.is_none());
        if !running {
            break;
        }
        pacer.take(now, || {
            let live: Vec<i32> = tasks
                .iter()
                .map(|t| if t.exit.is_none() { t.pid } else { -1 })
                .collect();
            let mut s = observer.sample(now, &live, ids, progress);
            for (i, t) in tasks.iter().enumerate() {
                if t.exit.is_some() {
                    s.task_node[i] = None;
                }
            }
            rec.series.samples.push(s);
        });
        let live: Vec<i32> = tasks
            .iter()
            .filter(|t| t.exit.is_none())
            .map(|t| t.pid)
            .collect();
        crate::run::wait_for(&live, &pacer, start.elapsed().as_secs_f64(), None);
    }
    Ok(pacer)
}

/// Every spinning task's process and task record, from its exit and its
/// report; returns the run's elapsed, user and system time and the
/// failures.
fn record_spins(
    rec: &mut RunRecord,
    topo: &numalab_topology::Topology,
    p: &SpinParams,
    tasks: &[Task],
    reports: &[Option<SpinReport>],
) -> (f64, f64, f64, Vec<String>) {
    let mut failures = Vec::new();
    let mut elapsed: f64 = 0.0;
    let (mut user, mut sys) = (0.0, 0.0);
    for (i, t) in tasks.iter().enumerate() {
        let (exit, end) = t.exit.expect("every task was waited for");
        elapsed = elapsed.max(end);
        user += exit.user_s;
        sys += exit.sys_s;
        let report = &reports[i];
        let done = report.as_ref().map_or(0, |r| r.iterations);
        if !exit.success() {
            failures.push(format!("task {} ended with {}", i + 1, exit.describe()));
        } else if done != p.iterations {
            failures.push(format!(
                "task {} did {done} of {} iterations",
                i + 1,
                p.iterations
            ));
        }
        let (node_time, main) = match report {
            Some(r) => node_residency(topo, &r.cpu_time_ns),
            None => (Vec::new(), None),
        };
        rec.processes.push(ProcessInfo {
            index: i as u32,
            name: format!("spin task {}", i + 1),
            pid: Some(t.pid),
        });
        rec.tasks.push(TaskRecord {
            id: i as u32 + 1,
            name: format!("spin {}", i + 1),
            pid: Some(t.pid),
            process: Some(i as u32),
            initial_node: report
                .as_ref()
                .and_then(|r| topo.node_of_cpu(r.initial_cpu)),
            main_node: main,
            node_time_s: node_time,
            residency_method: format!(
                "the task reads its CPU (sched_getcpu) and thread CPU time every {SPIN_CHUNK} iterations and charges the time between readings to the CPU seen at the first"
            ),
            residency_samples: report.as_ref().map_or(0, |r| r.readings),
            user_s: exit.user_s,
            sys_s: exit.sys_s,
            work_done: done,
            work_expected: p.iterations,
            exit: exit.describe(),
            kernel: crate::kernel_counters(exit.sched),
        });
    }
    (elapsed, user, sys, failures)
}

/// Run the message storm once.
pub fn run_hackbench(
    exe: &Path,
    machine: &MachineInfo,
    p: &HackbenchParams,
    spec: &RunSpec,
) -> Result<RunRecord> {
    let topo = &machine.topology;
    let (groups, fds) = (p.groups, p.fds);
    let mut rec = spec.new_record(&Case::Hackbench(p.clone()), machine);
    let observer = Observer::start(topo);
    let mut cmd = hackbench_command(exe, p);
    let start = Instant::now();
    let mut c = cmd
        .spawn()
        .map_err(|e| Error::io("starting hackbench", e))?;
    let pid = c.id() as i32;
    let out = c.stdout.take().expect("piped stdout");
    let err = c.stderr.take().expect("piped stderr");
    let reader = read_all(out);
    let err_reader = read_all(err);
    let (exit, ended_s, pacer) = wait_hackbench(pid, start, &observer, spec, &mut rec)?;
    rec.series.interval_s = pacer.longest_s();
    let text = reader.join().unwrap_or_default();
    let errors = err_reader.join().unwrap_or_default();
    let h: Option<f64> = text
        .lines()
        .find_map(|l| l.strip_prefix("H ").and_then(|v| v.trim().parse().ok()));
    rec.processes.push(ProcessInfo {
        index: 0,
        name: format!("hackbench {groups} groups x {fds} fds"),
        pid: Some(pid),
    });
    // No progress: hackbench reports none while it runs.
    let vm = observer.vmstat_delta();
    crate::record_end_only(
        &mut rec,
        crate::EndOnly {
            name: "hackbench".into(),
            pid: Some(pid),
            why: "thousands of short message-passing processes",
            exit: &exit,
            work_done: u64::from(exit.success() && h.is_some()),
            work_expected: 1,
        },
        pacer.enabled(),
        ended_s,
        Vec::new(),
        &vm,
    );
    hackbench_outcome(&mut rec, h, &exit, &errors);
    Ok(rec)
}

/// The storm's command: hackbench's parameters, its output piped, ended
/// with SIGTERM when numalab dies, restricted to the placement's CPUs.
fn hackbench_command(exe: &Path, p: &HackbenchParams) -> Command {
    let (groups, fds, loops, size) = (p.groups, p.fds, p.loops, p.size);
    let mut cmd = Command::new(exe);
    cmd.arg("__hackbench")
        .args([groups, loops, fds, size].map(|v| v.to_string()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SIGTERM: it kills and reaps what it forked, then exits.
    child::die_with_parent_by(&mut cmd, libc::SIGTERM);
    with_affinity(&mut cmd, &p.set.cpus);
    cmd
}

/// A thread reading all of `r` as text.
fn read_all<R: std::io::Read + Send + 'static>(r: R) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut BufReader::new(r), &mut text);
        text
    })
}

/// Wait for hackbench to end, sampling as paced: its exit, when it ended
/// (seconds from the start) and the pacer.
fn wait_hackbench(
    pid: i32,
    start: Instant,
    observer: &Observer,
    spec: &RunSpec,
    rec: &mut RunRecord,
) -> Result<(Exit, f64, Pacer)> {
    let mut pacer = Pacer::new(spec.interval);
    let (exit, ended_s) = loop {
        let now = start.elapsed().as_secs_f64();
        if spec.interrupt.is_set() {
            // It kills and reaps its senders and receivers, then exits.
            child::signal(pid, libc::SIGTERM);
            let _ = child::wait4(pid, true);
            return Err(Error::Interrupted);
        }
        if let Some(e) =
            child::wait4(pid, false).map_err(|e| Error::io("waiting for hackbench", e))?
        {
            break (e, now);
        }
        pacer.take(now, || {
            rec.series
                .samples
                .push(observer.sample(now, &[], &[], Vec::new()))
        });
        crate::run::wait_for(&[pid], &pacer, start.elapsed().as_secs_f64(), None);
    };
    Ok((exit, ended_s, pacer))
}

/// The storm's metrics when it succeeded and said its time, else the
/// run failed with how it ended and the last line of its errors.
fn hackbench_outcome(rec: &mut RunRecord, h: Option<f64>, exit: &Exit, errors: &str) {
    match h {
        Some(h) if exit.success() => {
            ELAPSED_S.put(&mut rec.metrics, h);
            HACKBENCH_S.put(&mut rec.metrics, h);
        }
        _ => {
            let why = errors.lines().last().unwrap_or("").trim().to_string();
            rec.outcome = Outcome::failed(format!(
                "hackbench ended with {}{}",
                exit.describe(),
                if why.is_empty() {
                    String::new()
                } else {
                    format!(": {why}")
                }
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spin_does_every_iteration_and_charges_its_time() {
        let mut out = Vec::new();
        let r = spin(5 * SPIN_CHUNK + 7, &mut out);
        assert_eq!(r.iterations, 5 * SPIN_CHUNK + 7);
        assert!(r.readings >= 6);
        assert!(r.cpu_time_ns.values().sum::<u64>() > 0);
        let text = String::from_utf8(out).unwrap();
        assert!(text.ends_with(&format!("progress {}\n", 5 * SPIN_CHUNK + 7)));
        assert!(spin_rate(Duration::from_millis(20)) > 1e6);
    }
}
