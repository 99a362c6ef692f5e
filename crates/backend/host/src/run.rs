//! What every benchmark run on this machine shares: progress, residency
//! per node, task processes that report their work.

use std::collections::BTreeMap;

/// How one run is identified and watched: the runner's context.
pub use numalab_runner::RunContext as RunSpec;

/// The run's progress, reported to the runner as the fraction of the
/// run's work units done.
pub struct Progress<'a> {
    len: u64,
    report: &'a dyn Fn(f64),
}

impl Progress<'_> {
    pub fn set_position(&self, done: u64) {
        (self.report)(done as f64 / self.len.max(1) as f64);
    }
}

/// Progress over `len` work units.
pub fn progress_bar<'a>(len: u64, spec: &RunSpec<'a>) -> Progress<'a> {
    Progress {
        len,
        report: spec.progress,
    }
}

/// A task's CPU time per CPU, as its residency readings charged it, turned
/// into seconds per node (aligned with the topology's nodes) and the node
/// it ran on most (the seed's MSched), if any.
pub fn node_residency(
    topo: &numalab_topology::Topology,
    cpu_time_ns: &BTreeMap<u32, u64>,
) -> (Vec<f64>, Option<u32>) {
    let mut node_time = vec![0.0; topo.nodes.len()];
    for (cpu, ns) in cpu_time_ns {
        if let Some(ix) = topo.node_of_cpu(*cpu).and_then(|n| topo.node_index(n)) {
            node_time[ix] += *ns as f64 / 1e9;
        }
    }
    let main = numalab_record::TaskRecord::main_node_of(&node_time, topo);
    (node_time, main)
}

/// A task process that reports on stdout: `<prefix> K` lines with the
/// work done so far, and a last line `done <json>` (its report). A
/// thread reads them as they come.
pub struct TaskProcess<R> {
    pub pid: i32,
    pub progress: std::sync::Arc<std::sync::atomic::AtomicU64>,
    pub report: std::sync::Arc<std::sync::Mutex<Option<R>>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl<R: serde::de::DeserializeOwned + Send + 'static> TaskProcess<R> {
    /// Start `cmd` (stdout is piped here; it dies with numalab).
    pub fn spawn(
        mut cmd: std::process::Command,
        prefix: &'static str,
        what: &str,
    ) -> crate::Result<TaskProcess<R>> {
        use std::io::BufRead;
        use std::sync::atomic::Ordering;
        cmd.stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped());
        numalab_linux::child::die_with_parent(&mut cmd);
        let mut c = cmd
            .spawn()
            .map_err(|e| crate::Error::io(format!("starting {what}"), e))?;
        let progress = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let report = std::sync::Arc::new(std::sync::Mutex::new(None));
        let out = c.stdout.take().expect("piped stdout");
        let (pr, rr) = (progress.clone(), report.clone());
        let reader = std::thread::spawn(move || {
            for line in std::io::BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if let Some(k) = line
                    .strip_prefix(prefix)
                    .and_then(|rest| rest.strip_prefix(' '))
                {
                    if let Ok(k) = k.parse() {
                        pr.store(k, Ordering::Relaxed);
                    }
                } else if let Some(json) = line.strip_prefix("done ") {
                    if let Ok(r) = serde_json::from_str(json) {
                        *rr.lock().expect("report lock") = Some(r);
                    }
                }
            }
        });
        Ok(TaskProcess {
            pid: c.id() as i32,
            progress,
            report,
            reader: Some(reader),
        })
    }

    /// Work done so far, as last reported.
    pub fn done(&self) -> u64 {
        self.progress.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Wait for the output to end (after the process exited) and take the
    /// report.
    pub fn finish(&mut self) -> Option<R> {
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
        self.report.lock().expect("report lock").take()
    }
}

/// How often a watcher wakes with nothing to do: to move the progress
/// bar and to notice Ctrl-C. Between, it sleeps until a watched process
/// exits or a sample is due ([`wait_for`]): a watcher that woke every 5
/// ms took a CPU from the benchmark 200 times a second.
pub const WATCH_TICK: std::time::Duration = std::time::Duration::from_millis(100);

/// Sleep until one of `pids` exits, the pacer's next sample is due (at
/// `now` s into the run), `also` (a further deadline, seconds into the
/// run) comes, or [`WATCH_TICK`] has passed.
pub fn wait_for(pids: &[i32], pacer: &crate::pace::Pacer, now: f64, also: Option<f64>) {
    numalab_linux::child::wait_exit_of(pids, watch_timeout(pacer, now, also));
}

/// How long a watcher may sleep at `now` (seconds into the run): until
/// the pacer's next sample, `also` (a further deadline, seconds into the
/// run), or [`WATCH_TICK`], whichever comes first. Watchers that wait on
/// a channel rather than on pids sleep this long too.
pub fn watch_timeout(
    pacer: &crate::pace::Pacer,
    now: f64,
    also: Option<f64>,
) -> std::time::Duration {
    let mut wait = WATCH_TICK;
    if let Some(due) = pacer.until_due(now) {
        wait = wait.min(due);
    }
    if let Some(at) = also {
        wait = wait.min(std::time::Duration::from_secs_f64((at - now).max(0.0)));
    }
    wait
}

/// Wait for task process `proc` to end, as the host runners of one
/// process do: its progress to the bar at every wakeup ([`wait_for`]), a
/// sample when the pacer says, and on an interrupt the process killed (its children die
/// with it) and [`crate::Error::Interrupted`]. Returns how it ended, when
/// (seconds from `start`), and whether observations were on; the
/// record's interval is set.
pub fn wait_sampling<R: serde::de::DeserializeOwned + Send + 'static>(
    proc: &mut TaskProcess<R>,
    what: &str,
    start: std::time::Instant,
    spec: &RunSpec,
    bar: &Progress,
    observer: &crate::observe::Observer,
    rec: &mut numalab_record::RunRecord,
) -> crate::Result<(numalab_linux::child::Exit, f64, bool)> {
    use numalab_linux::child;
    let pid = proc.pid;
    let mut pacer = crate::pace::Pacer::new(spec.interval);
    let out = loop {
        let now = start.elapsed().as_secs_f64();
        if spec.interrupt.is_set() {
            child::signal(pid, libc::SIGKILL);
            let _ = child::wait4(pid, true);
            proc.finish();
            return Err(crate::Error::Interrupted);
        }
        if let Some(e) = child::wait4(pid, false)
            .map_err(|e| crate::Error::io(format!("waiting for {what}"), e))?
        {
            break (e, now);
        }
        bar.set_position(proc.done());
        pacer.take(now, || {
            rec.series
                .samples
                .push(observer.sample(now, &[], &[], vec![proc.done()]))
        });
        wait_for(&[pid], &pacer, start.elapsed().as_secs_f64(), None);
    };
    rec.series.interval_s = pacer.longest_s();
    Ok((out.0, out.1, pacer.enabled()))
}
