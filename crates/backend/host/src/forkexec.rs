//! `forkexec` on this machine: a shell-like parent forking short-lived
//! programs ([`numalab_bench::forkexec`]).
//!
//! The parent is numalab re-executed as `__forkexec` (the driver); each
//! child is a real `fork` + `execve` of numalab as `__task burst N`,
//! which spins N iterations and exits 0, so every child is a new process
//! placed by the kernel's fork and exec paths, as a configure script's
//! compilers and tools are. The driver waits for any child with
//! `waitpid`, counts the children that exited 0, and reports the mean
//! time from each fork to its reaping.
//!
//! Nothing is left behind: the driver dies with numalab (`PR_SET_PDEATHSIG`
//! SIGKILL, as every task of numalab's), and each child with the driver
//! (the same, set between its fork and its exec, with the check that the
//! driver did not die in between). A child lives a millisecond or so, so
//! killing the driver ends the tree at once; the orphans are reaped by
//! init or the nearest subreaper.

use crate::observe::Observer;
use crate::run::{progress_bar, RunSpec, TaskProcess};
use crate::{Error, Result};
use numalab_bench::forkexec::Params;
use numalab_bench::metrics::*;
use numalab_bench::Case;
use numalab_linux::child;
use numalab_record::{Outcome, ProcessInfo, RunRecord};
use numalab_topology::MachineInfo;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

/// What the driver reports on its last line.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DriverReport {
    /// Children forked, and those that exited 0.
    pub forked: u64,
    pub succeeded: u64,
    /// How the first failed child ended, if one did.
    pub first_failure: Option<String>,
    /// Seconds from the first fork to the last reaping.
    pub elapsed_s: f64,
    /// Mean seconds from a child's fork to its reaping.
    pub mean_latency_s: f64,
}

/// Spin through `n` iterations of the placement experiments' chain.
fn spin(n: u64) -> u64 {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    std::hint::black_box(x)
}

/// `numalab __task burst N`: spin N iterations, exit 0.
pub fn burst_main(args: &[String]) -> i32 {
    let Some(n) = args.first().and_then(|s| s.parse::<u64>().ok()) else {
        numalab_linux::errln!("numalab: internal: usage: __task burst ITERATIONS");
        return 2;
    };
    numalab_linux::child::set_task_name("fe-child");
    spin(n);
    0
}

/// How a child ended, from `waitpid`'s status.
fn describe_status(status: i32) -> Option<String> {
    if libc::WIFEXITED(status) {
        match libc::WEXITSTATUS(status) {
            0 => None,
            c => Some(format!("exit {c}")),
        }
    } else if libc::WIFSIGNALED(status) {
        Some(format!("signal {}", libc::WTERMSIG(status)))
    } else {
        Some(format!("status {status:#x}"))
    }
}

/// The driver's loop; progress lines (children reaped) go to `out`.
fn drive(exe: &Path, p: &Params, out: &mut dyn Write) -> std::io::Result<DriverReport> {
    let start = Instant::now();
    let mut running: BTreeMap<i32, Instant> = BTreeMap::new();
    let mut forked = 0u64;
    let mut succeeded = 0u64;
    let mut reaped = 0u64;
    let mut first_failure = None;
    let mut latency = 0.0;
    let every = (p.children as u64 / 64).max(1);
    loop {
        while forked < p.children as u64 && running.len() < p.jobs as usize {
            spin(p.parent_iterations);
            let mut cmd = Command::new(exe);
            cmd.args(["__task", "burst"])
                .arg(p.child_iterations.to_string())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::inherit());
            child::die_with_parent(&mut cmd);
            let t = Instant::now();
            let c = cmd.spawn()?;
            running.insert(c.id() as i32, t);
            forked += 1;
        }
        if running.is_empty() {
            break;
        }
        let (pid, status) = match child::wait_any() {
            Ok(ended) => ended,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let Some(t) = running.remove(&pid) else {
            continue;
        };
        latency += t.elapsed().as_secs_f64();
        reaped += 1;
        match describe_status(status) {
            None => succeeded += 1,
            Some(why) => {
                first_failure.get_or_insert(format!("child {reaped} ended with {why}"));
            }
        }
        if reaped.is_multiple_of(every) || reaped == p.children as u64 {
            let _ = writeln!(out, "progress {reaped}");
            let _ = out.flush();
        }
    }
    Ok(DriverReport {
        forked,
        succeeded,
        first_failure,
        elapsed_s: start.elapsed().as_secs_f64(),
        mean_latency_s: latency / reaped.max(1) as f64,
    })
}

/// `numalab __fork-us MILLIS`: forks of this fresh, small process (each
/// child `_exit(0)`, reaped) for about MILLIS ms; prints `fork_us X`, the
/// microseconds of one. A fork's cost grows with the page tables it
/// copies, so `calibrate` measures it here, in a process the size of
/// forkexec's parent, and not in itself (hundreds of MB of buffers had
/// made it 4 ms there, and exec's cost, the rest of a child's, nothing).
pub fn fork_us_main(args: &[String]) -> i32 {
    let Some(ms) = args.first().and_then(|a| a.parse::<u64>().ok()) else {
        numalab_linux::errln!("numalab: internal: usage: __fork-us MILLIS");
        return 2;
    };
    let budget = std::time::Duration::from_millis(ms.max(1));
    let t0 = std::time::Instant::now();
    let mut forks = 0u64;
    while forks == 0 || t0.elapsed() < budget {
        if let Err(e) = numalab_linux::child::fork_exit_wait() {
            numalab_linux::errln!("numalab: fork: {e}");
            return 1;
        }
        forks += 1;
    }
    let us = t0.elapsed().as_secs_f64() * 1e6 / forks as f64;
    println!("fork_us {us}");
    0
}

/// `numalab __forkexec CHILDREN JOBS CHILD_ITERATIONS PARENT_ITERATIONS`:
/// progress lines, then `done <json>`.
pub fn driver_main(args: &[String]) -> i32 {
    let n: Vec<u64> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let (Some(&children), Some(&jobs), Some(&child_iterations), Some(&parent_iterations), 4) =
        (n.first(), n.get(1), n.get(2), n.get(3), n.len())
    else {
        numalab_linux::errln!(
            "numalab: internal: usage: __forkexec CHILDREN JOBS CHILD_ITERATIONS PARENT_ITERATIONS"
        );
        return 2;
    };
    let p = Params {
        children: children.min(u32::MAX as u64) as u32,
        jobs: jobs.min(u32::MAX as u64) as u32,
        child_iterations,
        parent_iterations,
    };
    if let Err(e) = p.check() {
        numalab_linux::errln!("numalab: internal: {e}");
        return 2;
    }
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            numalab_linux::errln!("numalab: forkexec: cannot find numalab's own binary: {e}");
            return 1;
        }
    };
    numalab_linux::child::set_task_name("fe-parent");
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match drive(&exe, &p, &mut out) {
        Ok(r) => {
            let _ = writeln!(
                out,
                "done {}",
                serde_json::to_string(&r).expect("report serialises")
            );
            0
        }
        Err(e) => {
            numalab_linux::errln!("numalab: forkexec: {e}");
            1
        }
    }
}

/// Run the fork/exec workload once.
pub fn run_forkexec(
    exe: &Path,
    machine: &MachineInfo,
    p: &Params,
    spec: &RunSpec,
) -> Result<RunRecord> {
    p.check().map_err(|e| Error::Other(e.to_string()))?;
    let topo = &machine.topology;
    let mut rec = spec.new_record(&Case::ForkExec(p.clone()), machine);
    let observer = Observer::start(topo);
    let bar = progress_bar(p.children as u64, spec);
    let mut cmd = Command::new(exe);
    cmd.arg("__forkexec")
        .args(
            [
                p.children as u64,
                p.jobs as u64,
                p.child_iterations,
                p.parent_iterations,
            ]
            .map(|v| v.to_string()),
        )
        .stderr(Stdio::inherit());
    let start = Instant::now();
    let mut proc: TaskProcess<DriverReport> =
        TaskProcess::spawn(cmd, "progress", "the forkexec parent")?;
    let pid = proc.pid;
    let (exit, ended_s, sampled) = crate::run::wait_sampling(
        &mut proc,
        "the forkexec parent",
        start,
        spec,
        &bar,
        &observer,
        &mut rec,
    )?;
    let report = proc.finish();
    let done = report.as_ref().map_or(0, |r| r.succeeded);
    rec.processes.push(ProcessInfo {
        index: 0,
        name: format!("forkexec parent, {} children", p.children),
        pid: Some(pid),
    });
    // wait4's times include the children the parent reaped.
    let vm = observer.vmstat_delta();
    crate::record_end_only(
        &mut rec,
        crate::EndOnly {
            name: "forkexec parent".into(),
            pid: Some(pid),
            why: "thousands of short-lived processes",
            exit: &exit,
            work_done: done,
            work_expected: p.children as u64,
        },
        sampled,
        ended_s,
        vec![done],
        &vm,
    );
    match report {
        Some(r) if exit.success() && r.succeeded == p.children as u64 => {
            ELAPSED_S.put(&mut rec.metrics, r.elapsed_s);
            if r.elapsed_s > 0.0 {
                CHILDREN_PER_S.put(&mut rec.metrics, r.succeeded as f64 / r.elapsed_s);
            }
            CHILD_LATENCY_MS.put(&mut rec.metrics, r.mean_latency_s * 1e3);
        }
        Some(r) => {
            rec.outcome = Outcome::failed(format!(
                "{} of {} children succeeded{}",
                r.succeeded,
                p.children,
                r.first_failure
                    .map(|f| format!(" ({f})"))
                    .unwrap_or_default()
            ));
        }
        None => {
            rec.outcome = Outcome::failed(format!(
                "the forkexec parent ended with {} without a report",
                exit.describe()
            ));
        }
    }
    Ok(rec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_is_described() {
        assert_eq!(describe_status(0), None);
        assert_eq!(describe_status(3 << 8).as_deref(), Some("exit 3"));
        assert_eq!(describe_status(9).as_deref(), Some("signal 9"));
        assert_ne!(spin(10), spin(11));
    }
}
