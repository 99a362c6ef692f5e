//! Any command as a benchmark: `numalab run command -- ./configure`.
//!
//! Seed 003 compares schedulers on configure scripts: thousands of
//! short-lived processes, where what matters is the wall time of the whole
//! tree and how it changes between kernels and schedulers. numalab runs
//! the command as it would run from a shell, repeatedly, and records each
//! run like any other benchmark, so `compare`, `show` and `report` treat
//! configure timings as they treat numa_test.
//!
//! What a run records:
//! - elapsed time, and the user and system time of the command and every
//!   descendant it waited for (`wait4`'s rusage, as `time` reports);
//! - the NUMA counters of `/proc/vmstat` as deltas, over time and in all;
//! - the exit status: anything but exit 0 makes the run `failed`, with the
//!   tail of the command's output in the reason. The output itself goes to
//!   a log file beside the record.
//!
//! Per-task residency is not recorded: the processes of a configure script
//! live for milliseconds, and sampling them would measure the sampler.
//!
//! The command runs in its own process group, and numalab is its
//! subreaper (`PR_SET_CHILD_SUBREAPER`): on Ctrl-C, or when the command
//! exits leaving background processes behind, the whole group and every
//! orphan that was reparented to numalab are killed and reaped, so nothing
//! outlives the run.

use crate::observe::Observer;
use crate::pace::{thread_cpu_s, Pacer};
use crate::run::RunSpec;
use crate::{Error, Result};
use numalab_bench::command::Params;
use numalab_bench::metrics::metric;
use numalab_bench::Case;
use numalab_linux::child::{self, Exit};
use numalab_record::{Outcome, ProcessInfo, RunRecord, TaskRecord};
use numalab_topology::MachineInfo;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Lines of the command's output quoted in a failed run's reason.
const TAIL_LINES: usize = 10;

/// Make numalab the subreaper of its descendants, so the orphans of a
/// command (background jobs, daemons) become its children to reap.
fn become_subreaper() {
    // SAFETY: prctl with integer arguments.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
}

/// Kill the process group `pgid` and every child left to numalab, and
/// reap them. Returns how many processes were still there.
fn kill_leftovers(pgid: i32) -> usize {
    // SAFETY: kill has no memory effects; a negative pid names a group.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
    let mut n = 0;
    for c in children() {
        child::signal(c, libc::SIGKILL);
    }
    // Reap what is ours: the group's processes and reparented orphans.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let mut status = 0;
        // SAFETY: valid pointer to a local.
        let r = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if r > 0 {
            n += 1;
            continue;
        }
        if r < 0 || Instant::now() > deadline {
            break; // ECHILD: nothing left
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    n
}

/// numalab's child processes (of every thread), from procfs.
fn children() -> Vec<i32> {
    let mut out = Vec::new();
    if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
        for t in tasks.flatten() {
            if let Ok(s) = std::fs::read_to_string(t.path().join("children")) {
                out.extend(s.split_whitespace().filter_map(|p| p.parse::<i32>().ok()));
            }
        }
    }
    out
}

/// The last `n` lines of the file at `path`.
fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read(path).unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Run the command once; its output goes to `<record id>.log` in
/// `results`, beside the record (not in the record's parameters, which
/// name the case that runs are grouped by). A failed command is a
/// `failed` record; an interruption is an error ([`Interrupted`]); a
/// command that cannot be started is an error naming it. `on_tick` is
/// called with the elapsed seconds while it runs (for progress).
pub fn run_once(
    machine: &MachineInfo,
    p: &Params,
    spec: &RunSpec,
    mut on_tick: impl FnMut(f64),
) -> Result<RunRecord> {
    let topo = &machine.topology;
    let results = spec.results;
    let mut rec = spec.new_record(&Case::Command(p.clone()), machine);
    let log = &results.join(format!("{}.log", rec.id));
    let out = std::fs::File::create(log)
        .map_err(|e| Error::io(format!("creating the log file {}", log.display()), e))?;
    let err = out
        .try_clone()
        .map_err(|e| Error::io("duplicating the log file", e))?;
    become_subreaper();
    let observer = Observer::start(topo);
    let mut cmd = Command::new(&p.argv[0]);
    cmd.args(&p.argv[1..])
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0);
    if let Some(c) = &p.cwd {
        cmd.current_dir(c);
    }
    child::die_with_parent(&mut cmd);
    let start = Instant::now();
    let c = cmd
        .spawn()
        .map_err(|e| Error::io(format!("starting {}", p.argv[0]), e))?;
    let pid = c.id() as i32;
    // A thread blocks in wait4, so the end is timed exactly, not at the
    // next poll.
    let (tx, ended) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let r = child::wait4(pid, true);
        let _ = tx.send((r, Instant::now()));
    });
    let mut pacer = Pacer::new(spec.interval);
    let (exit, end): (Exit, Instant) = loop {
        let now = start.elapsed().as_secs_f64();
        if spec.interrupt.is_set() {
            kill_leftovers(pid);
            return Err(Error::Interrupted);
        }
        if pacer.due(now) {
            let cpu = thread_cpu_s();
            rec.series
                .samples
                .push(observer.sample(now, &[], &[], Vec::new()));
            pacer.sampled(now, thread_cpu_s() - cpu);
        }
        on_tick(now);
        let mut wait = Duration::from_millis(50);
        if let Some(due) = pacer.until_due(start.elapsed().as_secs_f64()) {
            wait = wait.min(due);
        }
        match ended.recv_timeout(wait) {
            Ok((Ok(Some(e)), at)) => break (e, at),
            Ok((Ok(None), _)) => {
                kill_leftovers(pid);
                return Err(Error::Other(
                    "waiting for the command: wait4 returned no status".into(),
                ));
            }
            Ok((Err(e), _)) => {
                kill_leftovers(pid);
                return Err(Error::io("waiting for the command", e));
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                kill_leftovers(pid);
                return Err(Error::Other("lost the command's waiter thread".into()));
            }
        }
    };
    let elapsed = end.duration_since(start).as_secs_f64();
    rec.series.interval_s = pacer.longest_s();
    let vm = observer.vmstat_delta();
    let left = kill_leftovers(pid);
    if left > 0 {
        rec.warnings.push(format!(
            "the command left {left} process(es) running after it exited; numalab killed them"
        ));
    }

    rec.metrics
        .insert("elapsed_s".into(), metric("elapsed_s", elapsed));
    rec.metrics
        .insert("user_s".into(), metric("user_s", exit.user_s));
    rec.metrics
        .insert("sys_s".into(), metric("sys_s", exit.sys_s));
    crate::vmstat_metrics(&mut rec, &vm);
    rec.processes.push(ProcessInfo {
        index: 0,
        name: p.argv.join(" "),
        pid: Some(pid),
    });
    rec.tasks.push(TaskRecord {
        id: 1,
        name: p.name.clone(),
        pid: Some(pid),
        process: Some(0),
        initial_node: None,
        main_node: None,
        node_time_s: Vec::new(),
        residency_method: "not observed: a command's processes come and go".into(),
        residency_samples: 0,
        user_s: exit.user_s,
        sys_s: exit.sys_s,
        work_done: u64::from(exit.success()),
        work_expected: 1,
        exit: exit.describe(),
    });
    if !exit.success() {
        let t = tail(log, TAIL_LINES);
        rec.outcome = Outcome::failed(if t.is_empty() {
            format!("the command ended with {} (no output)", exit.describe())
        } else {
            format!(
                "the command ended with {}\nthe last lines of its output:\n{t}",
                exit.describe()
            )
        });
    }
    Ok(rec)
}
