//! numa_test (seed 000): N tasks of random indirect updates run in
//! parallel as separate processes, placed by the kernel's scheduler, with
//! a hackbench-style message storm started `peak_at_s` seconds in. Each
//! task measures where it ran; numalab measures its CPU time (wait4) and
//! the run's elapsed time, and the storm's own elapsed time H.

use crate::observe::{push_final_sample, Observer};
use crate::pace::Pacer;
use crate::randupdt::TaskReport;
use crate::run::{node_residency, progress_bar, Progress, RunSpec, TaskProcess};
use crate::{Error, Result};
use numalab_bench::metrics::*;
use numalab_bench::numa_test::{Disturb, Params, PEAK_GROUPS, PEAK_LOOPS};
use numalab_bench::Case;
use numalab_linux::child::{self, Exit};
use numalab_record::{ProcessInfo, RunRecord, Sample, TaskRecord};
use numalab_topology::{MachineInfo, Topology};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

struct Task {
    proc: TaskProcess<TaskReport>,
    pid: i32,
    exit: Option<Exit>,
}

fn spawn_task(exe: &Path, p: &Params, id: u32) -> Result<Task> {
    let mut cmd = Command::new(exe);
    cmd.args(["__task", "randupdt"])
        .arg(p.size.to_string())
        .arg(id.to_string())
        .arg(p.passes.to_string())
        .stderr(Stdio::inherit());
    let proc = TaskProcess::spawn(cmd, "pass", "a numa_test task")?;
    Ok(Task {
        pid: proc.pid,
        proc,
        exit: None,
    })
}

fn kill_all(tasks: &mut [Task], extra: Option<i32>) {
    for t in tasks.iter().filter(|t| t.exit.is_none()) {
        child::signal(t.pid, libc::SIGKILL);
    }
    if let Some(h) = extra {
        // SIGTERM, not SIGKILL: the storm kills and reaps its senders and
        // receivers before it exits (crate::hackbench).
        child::signal(h, libc::SIGTERM);
        let _ = child::wait4(h, true);
    }
    for t in tasks.iter_mut() {
        if t.exit.is_none() {
            t.exit = child::wait4(t.pid, true).ok().flatten();
        }
        t.proc.finish();
    }
}

/// Run numa_test once. A task failure is recorded in the returned record
/// (status failed, with the reason); an interruption is an error.
pub fn run_once(
    exe: &Path,
    machine: &MachineInfo,
    p: &Params,
    spec: &RunSpec,
) -> Result<RunRecord> {
    let interval = spec.interval;
    let topo = &machine.topology;
    let mut rec = spec.new_record(&Case::NumaTest(p.clone()), machine);
    let observer = Observer::start(topo);
    let bar = progress_bar(p.tasks as u64 * p.passes as u64, spec);

    let start = Instant::now();
    let tasks = start_tasks(exe, p)?;
    let mut run = Running {
        exe,
        p,
        spec,
        tasks,
        start,
        hackbench: None,
        elapsed: 0.0,
    };
    let mut pacer = Pacer::new(interval);
    run.watch(&observer, &bar, &mut pacer, &mut rec.series.samples)?;
    rec.series.interval_s = pacer.longest_s();
    let reports: Vec<Option<TaskReport>> = run.tasks.iter_mut().map(|t| t.proc.finish()).collect();

    let mut failures = Vec::new();
    run.finish_hackbench(&mut rec, &mut failures)?;
    run.record_tasks(&mut rec, topo, &reports, &mut failures);
    record_times(&mut rec, run.elapsed);
    let vm = observer.vmstat_delta();
    let work: Vec<u64> = rec.tasks.iter().map(|t| t.work_done).collect();
    push_final_sample(&mut rec, pacer.enabled(), run.elapsed, work, &vm);
    crate::vmstat_metrics(&mut rec, &vm);
    if !failures.is_empty() {
        rec.outcome = numalab_record::Outcome::failed(failures.join("; "));
    }
    Ok(rec)
}

/// Start the tasks; if one cannot start, kill those that did.
fn start_tasks(exe: &Path, p: &Params) -> Result<Vec<Task>> {
    let mut tasks = Vec::new();
    for id in 1..=p.tasks {
        match spawn_task(exe, p, id) {
            Ok(t) => tasks.push(t),
            Err(e) => {
                kill_all(&mut tasks, None);
                return Err(e);
            }
        }
    }
    Ok(tasks)
}

/// numa_test's tasks while they run: what starts the load peak, the
/// tasks, when they were started, the load peak once started (and when),
/// and when the last task ended (seconds since the start).
struct Running<'a> {
    exe: &'a Path,
    p: &'a Params,
    spec: &'a RunSpec<'a>,
    tasks: Vec<Task>,
    start: Instant,
    hackbench: Option<(std::process::Child, Instant)>,
    elapsed: f64,
}

impl Running<'_> {
    /// Watch the tasks until every one has ended: reap them, move the
    /// progress bar, sample when the pacer says, and start the load peak
    /// when it is due. An interruption, or an error while watching (a
    /// failed `wait4`, a load peak that cannot start), kills the tasks and
    /// the peak: no task outlives the run.
    fn watch(
        &mut self,
        observer: &Observer,
        bar: &Progress,
        pacer: &mut Pacer,
        samples: &mut Vec<Sample>,
    ) -> Result<()> {
        let r = self.watch_until_done(observer, bar, pacer, samples);
        // An interruption has killed them already (and reaped the peak,
        // whose pid must not be signalled again).
        if matches!(r, Err(ref e) if !matches!(e, Error::Interrupted)) {
            let h = self.hackbench.as_ref().map(|(c, _)| c.id() as i32);
            kill_all(&mut self.tasks, h);
        }
        r
    }

    fn watch_until_done(
        &mut self,
        observer: &Observer,
        bar: &Progress,
        pacer: &mut Pacer,
        samples: &mut Vec<Sample>,
    ) -> Result<()> {
        let pids: Vec<i32> = self.tasks.iter().map(|t| t.pid).collect();
        let task_ids: Vec<(i32, Option<i32>)> = pids.iter().map(|&p| (p, None)).collect();
        loop {
            let now = self.start.elapsed().as_secs_f64();
            if self.spec.interrupt.is_set() {
                let h = self.hackbench.as_ref().map(|(c, _)| c.id() as i32);
                kill_all(&mut self.tasks, h);
                return Err(Error::Interrupted);
            }
            self.reap(now)?;
            let progress: Vec<u64> = self.tasks.iter().map(|t| t.proc.done()).collect();
            bar.set_position(progress.iter().sum());
            let running = self.tasks.iter().any(|t| t.exit.is_none());
            if running {
                pacer.take(now, || {
                    samples.push(self.sample(observer, &task_ids, now, progress))
                });
            }
            if !running {
                break;
            }
            let peak_due = self.p.disturb == Disturb::Messaging && self.hackbench.is_none();
            if peak_due && now >= self.p.peak_at_s {
                self.start_hackbench()?;
            }
            let live: Vec<i32> = self
                .tasks
                .iter()
                .filter(|t| t.exit.is_none())
                .map(|t| t.pid)
                .collect();
            let peak = (peak_due && self.hackbench.is_none()).then_some(self.p.peak_at_s);
            let now = self.start.elapsed().as_secs_f64();
            crate::run::wait_for(&live, pacer, now, peak);
        }
        Ok(())
    }

    /// Note the tasks that ended by `now` (without waiting), and the run's
    /// elapsed time as `now` when one did.
    fn reap(&mut self, now: f64) -> Result<()> {
        for t in self.tasks.iter_mut().filter(|t| t.exit.is_none()) {
            if let Some(e) =
                child::wait4(t.pid, false).map_err(|e| Error::io("waiting for a task", e))?
            {
                t.exit = Some(e);
                self.elapsed = now;
            }
        }
        Ok(())
    }

    /// One sample at `now`: where the live tasks' memory is and where
    /// they run (no node for those that ended), and each task's
    /// `progress`.
    fn sample(
        &self,
        observer: &Observer,
        task_ids: &[(i32, Option<i32>)],
        now: f64,
        progress: Vec<u64>,
    ) -> Sample {
        let live: Vec<i32> = self
            .tasks
            .iter()
            .map(|t| if t.exit.is_none() { t.pid } else { -1 })
            .collect();
        let mut s = observer.sample(now, &live, task_ids, progress);
        for (i, t) in self.tasks.iter().enumerate() {
            if t.exit.is_some() {
                s.task_node[i] = None;
            }
        }
        s
    }

    /// Start the hackbench load peak; if it cannot start, kill the tasks.
    fn start_hackbench(&mut self) -> Result<()> {
        let mut cmd = Command::new(self.exe);
        cmd.arg("__hackbench")
            .arg(PEAK_GROUPS.to_string())
            .arg(PEAK_LOOPS.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        // SIGTERM: it kills and reaps what it forked, then exits.
        child::die_with_parent_by(&mut cmd, libc::SIGTERM);
        match cmd.spawn() {
            Ok(c) => self.hackbench = Some((c, Instant::now())),
            Err(e) => {
                kill_all(&mut self.tasks, None);
                return Err(Error::io("starting the hackbench load peak", e));
            }
        }
        Ok(())
    }

    /// The load peak: wait for it to finish and read H, as the
    /// `hackbench_s` metric or a failure; a warning when the tasks were
    /// done before it was due.
    fn finish_hackbench(&mut self, rec: &mut RunRecord, failures: &mut Vec<String>) -> Result<()> {
        let (p, interrupt) = (self.p, self.spec.interrupt);
        let mut hackbench_skipped_at = None;
        if let Some((mut c, _)) = self.hackbench.take() {
            let pid = c.id() as i32;
            let mut out = String::new();
            if let Some(mut so) = c.stdout.take() {
                use std::io::Read;
                loop {
                    if interrupt.is_set() {
                        child::signal(pid, libc::SIGTERM);
                    }
                    let mut buf = [0u8; 256];
                    match so.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => out.push_str(&String::from_utf8_lossy(&buf[..n])),
                    }
                }
            }
            let exit =
                child::wait4(pid, true).map_err(|e| Error::io("waiting for hackbench", e))?;
            if interrupt.is_set() {
                return Err(Error::Interrupted);
            }
            let h = out
                .lines()
                .find_map(|l| l.strip_prefix("H ")?.trim().parse::<f64>().ok());
            match (exit, h) {
                (Some(e), Some(h)) if e.success() => {
                    HACKBENCH_S.put(&mut rec.metrics, h);
                }
                (e, _) => failures.push(format!(
                    "the hackbench load peak failed ({})",
                    e.map(|e| e.describe())
                        .unwrap_or_else(|| "no exit status".into())
                )),
            }
        } else if p.disturb == Disturb::Messaging {
            hackbench_skipped_at = Some(self.elapsed);
        }
        if let Some(t) = hackbench_skipped_at {
            rec.warnings.push(format!(
                "tasks done at {t:.2} s, before the {:.0} s load peak: no hackbench ran",
                p.peak_at_s
            ));
        }
        Ok(())
    }

    /// Per-task results, checked: every task must exit 0 and report all
    /// passes. Records each task, as a process and a task, and adds to
    /// `failures` what went wrong.
    fn record_tasks(
        &self,
        rec: &mut RunRecord,
        topo: &Topology,
        reports: &[Option<TaskReport>],
        failures: &mut Vec<String>,
    ) {
        let p = self.p;
        for (i, t) in self.tasks.iter().enumerate() {
            let id = i as u32 + 1;
            let exit = t.exit.unwrap_or(Exit {
                sched: None,
                code: None,
                signal: None,
                user_s: 0.0,
                sys_s: 0.0,
            });
            let report = &reports[i];
            let (node_time, main) = match report {
                Some(r) => node_residency(topo, &r.cpu_time_ns),
                None => (Vec::new(), None),
            };
            let initial = report
                .as_ref()
                .and_then(|r| topo.node_of_cpu(r.initial_cpu));
            let readings = report.as_ref().map_or(0, |r| r.readings);
            let done = match report {
                Some(r) => r.passes as u64,
                None => t.proc.done(),
            };
            if !exit.success() {
                failures.push(format!("task {id} ended with {}", exit.describe()));
            } else if report.is_none() {
                failures.push(format!("task {id} exited without reporting its work"));
            } else if done != p.passes as u64 {
                failures.push(format!("task {id} did {done} of {} passes", p.passes));
            }
            rec.processes.push(ProcessInfo {
                index: i as u32,
                name: format!("task {id}"),
                pid: Some(t.pid),
            });
            rec.tasks.push(TaskRecord {
                id,
                name: format!("task {id}"),
                pid: Some(t.pid),
                process: Some(i as u32),
                initial_node: initial,
                main_node: main,
                node_time_s: node_time,
                residency_method: format!(
                    "the task reads its CPU (sched_getcpu) and thread CPU time every {} updates and charges the time between readings to the CPU seen at the first",
                    crate::randupdt::CHUNK
                ),
                residency_samples: readings,
                user_s: exit.user_s,
                sys_s: exit.sys_s,
                work_done: done,
                work_expected: p.passes as u64,
                exit: exit.describe(),
                kernel: crate::kernel_counters(exit.sched),
            });
        }
    }
}

/// The run's times as metrics: elapsed, the tasks' user and system time
/// in all, and their mean user time.
fn record_times(rec: &mut RunRecord, elapsed: f64) {
    let users: Vec<f64> = rec.tasks.iter().map(|t| t.user_s).collect();
    let total_user: f64 = users.iter().sum();
    ELAPSED_S.put(&mut rec.metrics, elapsed);
    USER_S.put(&mut rec.metrics, total_user);
    SYS_S.put(&mut rec.metrics, rec.tasks.iter().map(|t| t.sys_s).sum());
    AVG_USER_S.put(&mut rec.metrics, total_user / users.len().max(1) as f64);
}
