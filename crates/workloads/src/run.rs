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
