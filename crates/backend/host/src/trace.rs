//! `--trace` on this machine: a [`Tracer`] attached to the thread that
//! starts the benchmark's tasks, drained every 10 ms by a thread of its
//! own while the run goes on, and the events turned into the record's
//! exact scheduling facts (numalab-trace) when it ends.

use numalab_linux::perf::{self, Event, Tracer};
use numalab_record::RunRecord;
use numalab_topology::Topology;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Why `--trace` could not trace a run, or keep what it traced.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// Tracing is not allowed here (perf's reason).
    #[error("--trace: {0}")]
    Attach(#[from] perf::TraceError),
    /// The thread that drains the events could not be started.
    #[error("--trace: starting its reader: {0}")]
    StartReader(std::io::Error),
    /// The thread that drains the events panicked.
    #[error("--trace: its reader failed")]
    ReaderFailed,
    /// The raw events could not be written beside the record.
    #[error("--trace: writing {}: {source}", .path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// A traced run in progress.
pub struct Session {
    stop: Arc<AtomicBool>,
    drainer: JoinHandle<(Tracer, Vec<Event>)>,
    start_ns: u64,
    waker: Option<String>,
    switches: perf::Switches,
}

impl Session {
    /// Attach to the calling thread: every task it starts from now on is
    /// traced. The error says why tracing is not allowed here.
    pub fn start(topo: &Topology) -> Result<Session, TraceError> {
        let cpus: Vec<u32> = topo.cpus.iter().map(|c| c.id).collect();
        let mut tracer = Tracer::attach(&cpus)?;
        let waker = tracer.waker_cpu_unavailable().map(str::to_string);
        let switches = tracer.switches();
        let start_ns = perf::monotonic_ns();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let drainer = std::thread::Builder::new()
            .name("numalab-trace".into())
            .spawn(move || {
                let mut events = Vec::new();
                while !flag.load(Ordering::Relaxed) {
                    tracer.drain(&mut events);
                    std::thread::sleep(Duration::from_millis(10));
                }
                (tracer, events)
            })
            .map_err(TraceError::StartReader)?;
        Ok(Session {
            stop,
            drainer,
            start_ns,
            waker,
            switches,
        })
    }

    /// Stop tracing, add the facts and metrics to `rec` and write the raw
    /// events beside it as `<id>.sched.tsv`.
    pub fn finish(
        self,
        rec: &mut RunRecord,
        results: &Path,
        topo: &Topology,
    ) -> Result<(), TraceError> {
        self.stop.store(true, Ordering::Relaxed);
        let (tracer, mut events) = self.drainer.join().map_err(|_| TraceError::ReaderFailed)?;
        tracer.stop(&mut events);
        let mut t = numalab_trace::analyse(
            &events,
            std::process::id(),
            self.start_ns,
            topo,
            self.switches,
            self.waker,
        );
        let name = format!("{}.sched.tsv", rec.id);
        numalab_trace::write_events(
            &results.join(&name),
            &events,
            self.start_ns,
            std::process::id(),
        )
        .map_err(|source| TraceError::Write {
            path: results.join(&name),
            source,
        })?;
        t.events_file = Some(name);
        if t.lost_events > 0 {
            rec.warnings.push(format!(
                "the trace lost {} events (a ring buffer was full): its per-task facts miss some switches",
                t.lost_events
            ));
        }
        for (k, v) in numalab_trace::metrics(&t) {
            rec.metrics.insert(k, v);
        }
        rec.sched = Some(t);
        Ok(())
    }
}
