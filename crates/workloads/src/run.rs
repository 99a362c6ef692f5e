//! What every benchmark run shares: options, the machine probe, building
//! and writing the record, progress on the terminal.

use numalab_record::{Backend, Outcome, Repetition, RunRecord, SCHEMA_VERSION};
use numalab_topology::MachineInfo;
use std::collections::BTreeMap;

/// How one run is identified and watched.
pub struct RunSpec<'a> {
    pub label: &'a str,
    pub repetition: Repetition,
    /// When to observe.
    pub interval: crate::pace::Interval,
    pub interrupt: &'a crate::Interrupt,
    /// Shown on the progress bar, e.g. `run 2/6 numa_test N=4`.
    pub title: String,
}

/// A record skeleton for one run, filled in by the benchmark.
pub fn new_record(
    benchmark: &str,
    label: &str,
    repetition: Repetition,
    machine: &MachineInfo,
    params: BTreeMap<String, serde_json::Value>,
) -> RunRecord {
    let started = chrono::Utc::now();
    RunRecord {
        schema_version: SCHEMA_VERSION,
        id: RunRecord::make_id(benchmark, label, &started, repetition.index),
        numalab_version: env!("CARGO_PKG_VERSION").to_string(),
        started_at: started.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        benchmark: benchmark.to_string(),
        params,
        label: label.to_string(),
        repetition,
        backend: Backend::Real,
        machine: machine.clone(),
        outcome: Outcome::ok(),
        metrics: BTreeMap::new(),
        processes: Vec::new(),
        tasks: Vec::new(),
        series: Default::default(),
        convergence: None,
        warnings: Vec::new(),
    }
}

/// A progress bar on stderr (hidden when stderr is not a terminal).
pub fn progress_bar(len: u64, msg: String) -> indicatif::ProgressBar {
    let pb = indicatif::ProgressBar::with_draw_target(
        Some(len),
        indicatif::ProgressDrawTarget::stderr(),
    );
    pb.set_style(
        indicatif::ProgressStyle::with_template(
            "{msg} [{elapsed_precise}] {wide_bar} {pos}/{len} ETA {eta}",
        )
        .expect("valid template"),
    );
    pb.set_message(msg);
    pb
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
    let main = node_time
        .iter()
        .enumerate()
        .filter(|(_, &v)| v > 0.0)
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map(|(ix, _)| topo.nodes[ix].id);
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
    ) -> anyhow::Result<TaskProcess<R>> {
        use anyhow::Context;
        use std::io::BufRead;
        use std::sync::atomic::Ordering;
        cmd.stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped());
        numalab_linux::child::die_with_parent(&mut cmd);
        let mut c = cmd.spawn().with_context(|| format!("starting {what}"))?;
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
