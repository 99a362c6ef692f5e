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
//! Per-task residency is not observed: the processes of a configure
//! script live for milliseconds, and sampling them would measure the
//! sampler.
//!
//! The command runs under a supervisor ([`numalab_linux::supervise`]),
//! the subreaper of its whole tree: on Ctrl-C, when the command exits
//! leaving background processes behind, and when numalab dies however it
//! dies (SIGKILL included: the supervisor sees the pipe from numalab
//! close), every process of the tree is killed and reaped, so nothing
//! outlives the run.
//!
//! The log is kept only beside its record: a run that is interrupted or
//! cannot start removes it, and an empty log (a silent command, or a full
//! file system that took none of the output) is not kept either, so no
//! orphan or empty `<id>.log` is left in the results directory.

use crate::observe::Observer;
use crate::pace::Pacer;
use crate::run::RunSpec;
use crate::{Error, Result};
use numalab_bench::command::Params;
use numalab_bench::metrics::*;
use numalab_bench::Case;
use numalab_linux::child::Exit;
use numalab_linux::supervise::{Event, Supervisor};
use numalab_record::{Outcome, ProcessInfo, RunRecord};
use numalab_topology::MachineInfo;
use std::path::Path;
use std::sync::mpsc::RecvTimeoutError;
use std::time::Instant;

/// Lines of the command's output quoted in a failed run's reason.
const TAIL_LINES: usize = 10;

/// The last `n` lines of the file at `path`.
fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read(path).unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Run the command once; its output goes to `<record id>.log` in
/// `results`, beside the record (not in the record's parameters, which
/// name the case that runs are grouped by). `exe` is numalab itself (the
/// supervisor). A failed command is a `failed` record; an interruption is
/// an error ([`Interrupted`]); a command that cannot be started is an
/// error naming it. `on_tick` is called with the elapsed seconds while it
/// runs (for progress).
pub fn run_once(
    exe: &Path,
    machine: &MachineInfo,
    p: &Params,
    spec: &RunSpec,
    mut on_tick: impl FnMut(f64),
) -> Result<RunRecord> {
    let topo = &machine.topology;
    let mut rec = spec.new_record(&Case::Command(p.clone()), machine);
    // Written under a temporary name and renamed to `<id>.log` when the
    // run ends: never through a link planted at that name, and never a
    // partial log under it (dropped early, the temporary file goes).
    let (log_path, log, out) = open_log(&rec, spec)?;
    let observer = Observer::start(topo);
    let start = Instant::now();
    let sup = Supervisor::start(exe, &p.argv, p.cwd.as_deref(), Some(log.temp_path()), out)
        .map_err(|e| Error::io(format!("starting the supervisor of {}", p.argv[0]), e))?;
    let Ended {
        exit,
        elapsed,
        pid,
        pacer,
        sup,
    } = wait_command(sup, start, &observer, p, spec, &mut rec, &mut on_tick)?;
    rec.series.interval_s = pacer.longest_s();
    let vm = observer.vmstat_delta();
    let left = sup
        .finish()
        .map_err(|e| Error::io(format!("the supervisor of {}", p.argv[0]), e))?;
    if left > 0 {
        rec.warnings.push(format!(
            "the command left {left} process(es) running after it exited; numalab killed them"
        ));
    }

    ELAPSED_S.put(&mut rec.metrics, elapsed);
    rec.processes.push(ProcessInfo {
        index: 0,
        name: p.argv.join(" "),
        pid,
    });
    // No progress: a command reports none while it runs.
    crate::record_end_only(
        &mut rec,
        crate::EndOnly {
            name: p.name.clone(),
            pid,
            why: "a command's processes come and go",
            exit: &exit,
            work_done: u64::from(exit.success()),
            work_expected: 1,
        },
        pacer.enabled(),
        elapsed,
        Vec::new(),
        &vm,
    );
    if !exit.success() {
        rec.outcome = failure(&exit, log.temp_path());
    }
    // An empty log is no file at all.
    let empty = log.file().metadata().is_ok_and(|m| m.len() == 0);
    if !empty {
        log.commit()
            .map_err(|e| Error::io(format!("writing the log file {}", log_path.display()), e))?;
    }
    Ok(rec)
}

/// The run's log: its path (`<id>.log` in `results`), the file written
/// under a temporary name, and a handle on it for the command's output.
fn open_log(
    rec: &RunRecord,
    spec: &RunSpec,
) -> Result<(std::path::PathBuf, numalab_record::SideFile, std::fs::File)> {
    let id = numalab_record::RecordId::parse(&rec.id).map_err(|e| Error::Other(e.to_string()))?;
    let log_path = id.side_path(spec.results, ".log");
    let log = numalab_record::SideFile::new(&log_path)
        .map_err(|e| Error::io(format!("creating the log file {}", log_path.display()), e))?;
    let out = log
        .file()
        .try_clone()
        .map_err(|e| Error::io(format!("the log file {}", log_path.display()), e))?;
    Ok((log_path, log, out))
}

/// How the command ended, as its supervisor said, with the supervisor
/// still to finish.
struct Ended {
    exit: Exit,
    elapsed: f64,
    pid: Option<i32>,
    pacer: Pacer,
    sup: Supervisor,
}

/// Wait for the supervisor to say the command ended, sampling as paced
/// and calling `on_tick`; an interruption, or a supervisor that failed or
/// ended first, stops it and is an error.
fn wait_command(
    sup: Supervisor,
    start: Instant,
    observer: &Observer,
    p: &Params,
    spec: &RunSpec,
    rec: &mut RunRecord,
    on_tick: &mut impl FnMut(f64),
) -> Result<Ended> {
    let mut pid = None;
    let mut pacer = Pacer::new(spec.interval);
    let (exit, elapsed): (Exit, f64) = loop {
        let now = start.elapsed().as_secs_f64();
        if spec.interrupt.is_set() {
            let _ = sup.stop();
            return Err(Error::Interrupted);
        }
        pacer.take(now, || {
            rec.series
                .samples
                .push(observer.sample(now, &[], &[], Vec::new()))
        });
        on_tick(now);
        let wait = crate::run::watch_timeout(&pacer, start.elapsed().as_secs_f64(), None);
        match sup.recv_timeout(wait) {
            Ok(Event::Started(p)) => pid = Some(p),
            Ok(Event::Exited { exit, elapsed_s }) => break (exit, elapsed_s),
            Ok(Event::Left(_)) => {}
            Ok(Event::Failed(why)) => {
                let _ = sup.stop();
                return Err(Error::Other(why));
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                let why = match sup.stop() {
                    Err(e) => e.to_string(),
                    Ok(_) => "it ended".into(),
                };
                return Err(Error::Other(format!(
                    "the supervisor of {} ended before the command: {why}",
                    p.argv[0]
                )));
            }
        }
    };
    Ok(Ended {
        exit,
        elapsed,
        pid,
        pacer,
        sup,
    })
}

/// A failed command's outcome: how it ended and the last lines of its
/// output in the log at `log`.
fn failure(exit: &Exit, log: &Path) -> Outcome {
    let t = tail(log, TAIL_LINES);
    Outcome::failed(if t.is_empty() {
        format!("the command ended with {} (no output)", exit.describe())
    } else {
        format!(
            "the command ended with {}\nthe last lines of its output:\n{t}",
            exit.describe()
        )
    })
}
