//! Inside one benchmark process (`numalab __task autonuma PLAN_JSON`):
//! map the buffer, place and first-touch it as the plan says, start the
//! threads, and zero memory loop after loop.
//!
//! A loop is one `memset` of the thread's whole slice (numa01: of the
//! whole buffer), as the original's one `bzero` per loop, and nothing else
//! happens between two loops but two cheap readings (`sched_getcpu` and
//! the thread's CPU time, for its residency) and a relaxed store of the
//! loop count. The size of each `memset` call is part of the workload,
//! not a detail: glibc's `memset` is `rep stosb` for anything over 2 KiB,
//! and the CPU streams a long `rep stosb` to memory without reading the
//! lines first, while a short one (here, below about the 32 MiB L3) reads
//! every line into the cache before overwriting it. Zeroing a 64 MiB slice
//! in 4 MiB calls (as this task once did, to read its CPU every 4 MiB)
//! moved twice the memory and took 2.3-3.7x the original's user time
//! (docs/benchmarks.md). So the residency readings are per loop, never
//! within one.
//!
//! What the process says on stdout, one line each, for the parent:
//! - `region R ADDR LEN`: the regions threads work on, after the first touch;
//! - `threads TID...`: the kernel thread id of each worker, in order;
//! - `progress L0 L1 ...`: loops completed per thread, when it changed
//!   (checked every 50 ms, and when the last thread finishes: the process
//!   exits as its work ends, not up to a tick later);
//! - `done JSON`: the [`ProcessReport`], last;
//! - `error MESSAGE`: why it gives up (then it exits 1).

use crate::randupdt::Residency;
use numalab_bench::autonuma::{MemPlan, ProcPlan};
use numalab_linux::clock::Who;
use numalab_linux::mmap::Mapping;
use numalab_linux::numa;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// What each worker thread did.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ThreadReport {
    pub tid: i32,
    pub initial_cpu: u32,
    /// CPU time in nanoseconds charged to each CPU id.
    pub cpu_time_ns: BTreeMap<u32, u64>,
    pub readings: u64,
    pub loops: u64,
    /// Bytes the thread zeroed in its loops (loops x its slice).
    #[serde(default)]
    pub bytes: u64,
    /// Wall time of its loops, from the start signal to the end of the
    /// last one.
    #[serde(default)]
    pub loops_s: f64,
    pub user_s: f64,
    pub sys_s: f64,
    /// Its kernel counters (`/proc/thread-self/sched`) after its last loop.
    #[serde(default)]
    pub sched: Option<numalab_linux::procfs::SchedCounters>,
}

impl ThreadReport {
    /// The thread's zeroing bandwidth in GB/s (`perf bench numa mem`'s
    /// thread speed), if it ran measurably long.
    pub fn bandwidth_gbs(&self) -> Option<f64> {
        (self.loops_s > 0.0).then(|| self.bytes as f64 / self.loops_s / 1e9)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ProcessReport {
    pub process: u32,
    pub threads: Vec<ThreadReport>,
}

fn thread_rusage() -> (f64, f64) {
    numalab_linux::clock::cpu_times(Who::Thread).unwrap_or((0.0, 0.0))
}

fn nodes_text(nodes: &[u32]) -> String {
    nodes
        .iter()
        .map(|n| n.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

fn say(out: &mut impl Write, line: &str) {
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// Why a benchmark process gives up (its `error` line).
#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    #[error("nothing to do: no memory or no threads")]
    NothingToDo,
    #[error("pinning to CPUs {cpus:?}: {source}")]
    PinProcess { cpus: Vec<u32>, source: io::Error },
    #[error("mapping {len} bytes: {source}")]
    Map { len: usize, source: io::Error },
    /// First-touch: binding the buffer to the node that touches it.
    #[error("binding the buffer to node {node}: {source}")]
    BindBuffer { node: u32, source: io::Error },
    #[error("resetting the buffer's policy: {0}")]
    ResetPolicy(io::Error),
    /// A bound plan with a node count other than its regions'.
    #[error("{nodes} nodes for {regions} regions")]
    NodesForRegions { nodes: usize, regions: usize },
    #[error("binding memory to node {node}: {source}")]
    Bind { node: u32, source: io::Error },
    #[error("interleaving memory over nodes {}: {source}", nodes_text(.nodes))]
    Interleave { nodes: Vec<u32>, source: io::Error },
    #[error("binding memory to nodes {}: {source}", nodes_text(.nodes))]
    BindSet { nodes: Vec<u32>, source: io::Error },
    #[error("starting thread {t}: {source}")]
    StartThread { t: usize, source: io::Error },
    #[error("a thread died at start")]
    ThreadDied,
    /// The first thread that could not be pinned.
    #[error("pinning thread {t} to CPUs {cpus:?}: {source}")]
    PinThread {
        t: usize,
        cpus: Option<Vec<u32>>,
        source: io::Error,
    },
    #[error("thread {t} panicked")]
    Panicked { t: usize },
}

/// Run one process of the plan, writing the protocol lines to `out`.
pub fn run_process(plan: &ProcPlan, out: &mut impl Write) -> Result<ProcessReport, TaskError> {
    let page = numa::page_size() as u64;
    let regions = plan.regions(page);
    let len = regions.iter().map(|r| r.0 + r.1).max().unwrap_or(0) as usize;
    if len == 0 || plan.threads == 0 {
        return Err(TaskError::NothingToDo);
    }
    if let Some(cpus) = &plan.process_cpus {
        numa::set_affinity(0, cpus).map_err(|source| TaskError::PinProcess {
            cpus: cpus.clone(),
            source,
        })?;
    }
    let buf =
        Arc::new(Mapping::new_noreserve(len).map_err(|source| TaskError::Map { len, source })?);
    place(&buf, &plan.memory, &regions, len)?;
    for (r, &(off, l)) in regions.iter().enumerate() {
        say(out, &format!("region {r} {} {l}", buf.addr() as u64 + off));
    }

    let n = plan.threads as usize;
    let shared = Shared {
        buf,
        progress: Arc::new((0..n).map(|_| AtomicU64::new(0)).collect()),
        finished: Arc::new(AtomicUsize::new(0)),
        barrier: Arc::new(Barrier::new(n + 1)),
        reporter: std::thread::current(),
    };
    let (tx, rx) = std::sync::mpsc::channel();
    let handles = start_threads(plan, &regions, &shared, tx)?;
    let tids = thread_ids(plan, &rx)?;
    let list: Vec<String> = tids.iter().map(|t| t.to_string()).collect();
    say(out, &format!("threads {}", list.join(" ")));
    shared.barrier.wait();
    report_progress(&shared, out, PROGRESS_TICK);
    let mut threads = Vec::with_capacity(n);
    for (t, h) in handles.into_iter().enumerate() {
        threads.push(h.join().map_err(|_| TaskError::Panicked { t })?);
    }
    Ok(ProcessReport {
        process: plan.process,
        threads,
    })
}

/// Place and first-touch the buffer (`len` bytes, in `regions`) as the
/// plan's memory says.
fn place(
    buf: &Mapping,
    memory: &MemPlan,
    regions: &[(u64, u64)],
    len: usize,
) -> Result<(), TaskError> {
    match memory {
        MemPlan::FirstTouchThenDefault { node } => {
            buf.bind(0, len, numa::MPOL_BIND, &[*node])
                .map_err(|source| TaskError::BindBuffer {
                    node: *node,
                    source,
                })?;
            buf.fill(0, len, 0);
            buf.bind(0, len, numa::MPOL_DEFAULT, &[])
                .map_err(TaskError::ResetPolicy)?;
        }
        MemPlan::Bound { nodes } => {
            if nodes.len() != regions.len() {
                return Err(TaskError::NodesForRegions {
                    nodes: nodes.len(),
                    regions: regions.len(),
                });
            }
            for (&(off, l), node) in regions.iter().zip(nodes) {
                buf.bind(off as usize, l as usize, numa::MPOL_BIND, &[*node])
                    .map_err(|source| TaskError::Bind {
                        node: *node,
                        source,
                    })?;
            }
            buf.fill(0, len, 0);
        }
        MemPlan::BoundToSet { nodes } => {
            // The original's threads first-touch the buffer from CPUs
            // spread over the set; the main thread does it here,
            // interleaved over the set, then binds it there (mbind
            // without MPOL_MF_MOVE leaves the pages where they are).
            buf.bind(0, len, numa::MPOL_INTERLEAVE, nodes)
                .map_err(|source| TaskError::Interleave {
                    nodes: nodes.clone(),
                    source,
                })?;
            buf.fill(0, len, 0);
            buf.bind(0, len, numa::MPOL_BIND, nodes)
                .map_err(|source| TaskError::BindSet {
                    nodes: nodes.clone(),
                    source,
                })?;
        }
    }
    Ok(())
}

/// What a worker thread says when it starts: its index, its kernel thread
/// id, and whether it could be pinned.
type Started = (usize, i32, io::Result<()>);

/// What the process and its worker threads share: the buffer, each
/// thread's loops done, how many threads have finished, the barrier
/// they start at, and the thread that reports their progress (the last
/// to finish wakes it).
#[derive(Clone)]
struct Shared {
    buf: Arc<Mapping>,
    progress: Arc<Vec<AtomicU64>>,
    finished: Arc<AtomicUsize>,
    barrier: Arc<Barrier>,
    reporter: std::thread::Thread,
}

impl Shared {
    /// A thread has finished; the last one wakes the reporter.
    fn finish(&self) {
        if self.finished.fetch_add(1, Ordering::Release) + 1 == self.progress.len() {
            self.reporter.unpark();
        }
    }
}

/// A worker's part in [`Shared::finish`], said when it is dropped: as
/// its work ends, or as a panic unwinds it, so the reporter never waits
/// for a thread that died (its join then says it panicked).
struct Finishing<'a>(&'a Shared);

impl Drop for Finishing<'_> {
    fn drop(&mut self) {
        self.0.finish();
    }
}

/// Start the plan's worker threads, each saying on `tx` that it started.
fn start_threads(
    plan: &ProcPlan,
    regions: &[(u64, u64)],
    shared: &Shared,
    tx: std::sync::mpsc::Sender<Started>,
) -> Result<Vec<std::thread::JoinHandle<ThreadReport>>, TaskError> {
    let n = plan.threads as usize;
    let mut handles = Vec::with_capacity(n);
    for t in 0..n {
        let (shared, tx) = (shared.clone(), tx.clone());
        let (off, l) = regions[plan.region_of_thread(t as u32)];
        let w = Worker {
            t,
            cpus: plan.thread_cpus.get(t).cloned().flatten(),
            off,
            l,
            loops: plan.loops,
            whole: plan.whole_first.then_some(plan.bytes),
        };
        let h = std::thread::Builder::new()
            .name(format!("numalab-w{t}"))
            .spawn(move || w.run(shared, tx))
            .map_err(|source| TaskError::StartThread { t, source })?;
        handles.push(h);
    }
    drop(tx);
    Ok(handles)
}

/// One worker thread's part of the plan: its index, the CPUs it is
/// pinned to (if any), its region (`l` bytes at `off`) and its loops.
struct Worker {
    t: usize,
    cpus: Option<Vec<u32>>,
    off: u64,
    l: u64,
    loops: u64,
    /// Bytes of the whole buffer each thread zeroes once before its loops
    /// (numa01*: [`numalab_bench::autonuma::Kind::whole_first`]).
    whole: Option<u64>,
}

impl Worker {
    /// The worker thread: pin itself, say it started, wait for the others,
    /// then zero its region loop after loop, reading its CPU after each, and
    /// report.
    fn run(self, shared: Shared, tx: std::sync::mpsc::Sender<Started>) -> ThreadReport {
        let Worker {
            t,
            cpus,
            off,
            l,
            loops,
            whole,
        } = self;
        let Shared {
            buf,
            progress,
            barrier,
            ..
        } = &shared;
        numalab_linux::child::set_task_name(&format!("an-thread-{}", t + 1));
        let pinned = match &cpus {
            Some(c) => numa::set_affinity(0, c),
            None => Ok(()),
        };
        let _ = tx.send((t, numalab_linux::process::tid(), pinned));
        // Sent: a thread that dies before saying so then ends the wait
        // for the others' words (TaskError::ThreadDied), not hangs it.
        drop(tx);
        barrier.wait();
        let finishing = Finishing(&shared);
        let t0 = Instant::now();
        let mut res = Residency::start();
        let initial_cpu = res.last_cpu;
        let mut bytes = 0u64;
        if let Some(w) = whole {
            bytes += buf.fill(0, w as usize, 0) as u64;
        }
        for k in 0..loops {
            bytes += buf.fill(off as usize, l as usize, 0) as u64;
            res.tick();
            progress[t].store(k + 1, Ordering::Relaxed);
        }
        let loops_s = t0.elapsed().as_secs_f64();
        let (user_s, sys_s) = thread_rusage();
        let tid = numalab_linux::process::tid();
        let sched = numalab_linux::procfs::sched_counters(std::process::id() as i32, Some(tid));
        drop(finishing);
        ThreadReport {
            tid,
            sched,
            initial_cpu,
            cpu_time_ns: res.per_cpu,
            readings: res.readings,
            loops: progress[t].load(Ordering::Relaxed),
            bytes,
            loops_s,
            user_s,
            sys_s,
        }
    }
}

/// Each worker thread's kernel thread id, as they say when they start;
/// an error if one could not be pinned (the first that said so) or died.
fn thread_ids(
    plan: &ProcPlan,
    rx: &std::sync::mpsc::Receiver<Started>,
) -> Result<Vec<i32>, TaskError> {
    let n = plan.threads as usize;
    let mut tids = vec![0; n];
    let mut pin_error = None;
    for _ in 0..n {
        let (t, tid, pinned) = rx.recv().map_err(|_| TaskError::ThreadDied)?;
        tids[t] = tid;
        if let Err(source) = pinned {
            pin_error.get_or_insert(TaskError::PinThread {
                t,
                cpus: plan.thread_cpus[t].clone(),
                source,
            });
        }
    }
    if let Some(e) = pin_error {
        return Err(e);
    }
    Ok(tids)
}

/// How often the reporter looks at the threads' loops.
const PROGRESS_TICK: Duration = Duration::from_millis(50);

/// Say the threads' loops done whenever they changed (checked every
/// `tick`), until every thread has finished: the last one to finish
/// wakes it ([`Shared::finish`]), so the process ends with its work.
fn report_progress(shared: &Shared, out: &mut impl Write, tick: Duration) {
    let n = shared.progress.len();
    let mut last: Vec<u64> = vec![0; n];
    loop {
        let done = shared.finished.load(Ordering::Acquire) == n;
        let now: Vec<u64> = shared
            .progress
            .iter()
            .map(|p| p.load(Ordering::Relaxed))
            .collect();
        if now != last {
            let s: Vec<String> = now.iter().map(|p| p.to_string()).collect();
            say(out, &format!("progress {}", s.join(" ")));
            last = now;
        }
        if done {
            break;
        }
        std::thread::park_timeout(tick);
    }
}

/// `numalab __task autonuma PLAN_JSON`.
pub fn task_main(args: &[String]) -> i32 {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let plan: ProcPlan = match args.first().map(|a| serde_json::from_str(a)) {
        Some(Ok(p)) => p,
        _ => {
            numalab_linux::errln!("numalab: internal: usage: __task autonuma PLAN_JSON");
            return 2;
        }
    };
    match run_process(&plan, &mut out) {
        Ok(r) => {
            say(
                &mut out,
                &format!(
                    "done {}",
                    serde_json::to_string(&r).expect("report serialises")
                ),
            );
            0
        }
        Err(e) => {
            say(&mut out, &format!("error {e}"));
            1
        }
    }
}

/// `numalab __task hold BYTES`: map and touch BYTES, print
/// `ready ADDR LEN`, then hold the memory, doing nothing, until stdin
/// closes. A quiescent process for checking memory readings.
pub fn hold_main(args: &[String]) -> i32 {
    let Some(bytes) = args
        .first()
        .and_then(|a| numalab_topology::parse_size(a))
        .filter(|&b| b > 0)
    else {
        numalab_linux::errln!("numalab: internal: usage: __task hold BYTES");
        return 2;
    };
    let buf = match Mapping::new_noreserve(bytes as usize) {
        Ok(b) => b,
        Err(e) => {
            numalab_linux::errln!("numalab: hold: mapping {bytes} bytes: {e}");
            return 1;
        }
    };
    buf.fill(0, bytes as usize, 1);
    numalab_linux::outln!("ready {} {bytes}", buf.addr() as u64);
    let _ = std::io::stdout().flush();
    let mut sink = Vec::new();
    let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink);
    drop(buf);
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The last thread to finish wakes the reporter: it says the final
    /// progress and returns then, not at its next look (a 10 s tick here,
    /// over in about the worker's 0.1 s).
    /// What `threads` workers share with this thread as their reporter.
    fn shared(threads: usize) -> Shared {
        Shared {
            buf: Arc::new(Mapping::new_noreserve(4096).unwrap()),
            progress: Arc::new((0..threads).map(|_| AtomicU64::new(0)).collect()),
            finished: Arc::new(AtomicUsize::new(0)),
            barrier: Arc::new(Barrier::new(1)),
            reporter: std::thread::current(),
        }
    }

    #[test]
    fn the_last_thread_to_finish_ends_the_report_at_once() {
        let shared = shared(1);
        let s2 = shared.clone();
        let worker = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            s2.progress[0].store(7, Ordering::Relaxed);
            s2.finish();
        });
        let t0 = Instant::now();
        let mut out = Vec::new();
        report_progress(&shared, &mut out, Duration::from_secs(10));
        let took = t0.elapsed();
        worker.join().unwrap();
        assert!(took < Duration::from_secs(5), "returned after {took:?}");
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().last(), Some("progress 7"), "{text}");
    }

    /// A worker that panics still counts as finished: the report ends
    /// when the others have, and its join says it panicked.
    #[test]
    fn a_panicking_thread_does_not_hold_the_report() {
        let shared = shared(2);
        let (s1, s2) = (shared.clone(), shared.clone());
        let dies = std::thread::spawn(move || {
            let _f = Finishing(&s1);
            std::thread::sleep(Duration::from_millis(50));
            panic!("a worker's bug");
        });
        let lives = std::thread::spawn(move || {
            let _f = Finishing(&s2);
            std::thread::sleep(Duration::from_millis(100));
            s2.progress[1].store(3, Ordering::Relaxed);
        });
        let t0 = Instant::now();
        let mut out = Vec::new();
        report_progress(&shared, &mut out, Duration::from_secs(10));
        let took = t0.elapsed();
        assert!(dies.join().is_err());
        lives.join().unwrap();
        assert!(took < Duration::from_secs(5), "returned after {took:?}");
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().last(), Some("progress 0 3"), "{text}");
    }

    #[test]
    fn a_process_does_every_loop_and_says_so() {
        let cpus = numa::get_affinity(0).unwrap();
        let node = numalab_topology::Topology::from_sysfs(std::path::Path::new("/sys"))
            .unwrap()
            .node_of_cpu(cpus[0])
            .unwrap();
        for (shared, memory) in [
            (true, MemPlan::FirstTouchThenDefault { node }),
            (
                false,
                MemPlan::Bound {
                    nodes: vec![node; 3],
                },
            ),
            (true, MemPlan::BoundToSet { nodes: vec![node] }),
        ] {
            let plan = ProcPlan {
                process: 0,
                bytes: 1 << 20,
                loops: 4,
                shared,
                threads: 3,
                process_cpus: None,
                thread_cpus: vec![Some(vec![cpus[0]]), None, None],
                memory,
                // numa01_THREAD_ALLOC's shape: each thread zeroes the
                // whole buffer once, then its slice loop after loop.
                whole_first: !shared,
            };
            let mut out = Vec::new();
            let r = run_process(&plan, &mut out).unwrap();
            let text = String::from_utf8(out).unwrap();
            assert_eq!(r.threads.len(), 3);
            assert!(r.threads.iter().all(|t| t.loops == 4), "{r:?}");
            // Every loop zeroes the thread's whole region (its slice, or
            // the whole buffer when shared), and is one residency reading;
            // a whole-buffer first pass adds the buffer's bytes once.
            let regions = plan.regions(numa::page_size() as u64);
            for (t, th) in r.threads.iter().enumerate() {
                let (_, len) = regions[plan.region_of_thread(t as u32)];
                let first = if plan.whole_first { 1 << 20 } else { 0 };
                assert_eq!(th.bytes, 4 * len + first, "thread {t}: {r:?}");
                assert_eq!(th.readings, 4, "thread {t}: {r:?}");
                assert!(th.loops_s > 0.0 && th.bandwidth_gbs().unwrap() > 0.0);
            }
            if shared {
                assert_eq!(regions, vec![(0, 1 << 20)]);
            } else {
                assert_eq!(regions.iter().map(|r| r.1).sum::<u64>(), 1 << 20);
            }
            assert_eq!(
                r.threads[0].cpu_time_ns.keys().copied().collect::<Vec<_>>(),
                vec![cpus[0]]
            );
            let regions = text.lines().filter(|l| l.starts_with("region ")).count();
            assert_eq!(regions, if shared { 1 } else { 3 });
            assert!(text.lines().any(|l| l.starts_with("threads ")));
            assert!(text.lines().any(|l| l == "progress 4 4 4"), "{text}");
        }
    }

    #[test]
    fn a_bad_node_is_an_error_not_a_crash() {
        let plan = ProcPlan {
            process: 0,
            bytes: 1 << 20,
            loops: 1,
            shared: true,
            threads: 1,
            process_cpus: None,
            thread_cpus: vec![None],
            memory: MemPlan::Bound { nodes: vec![999] },
            whole_first: false,
        };
        let e = run_process(&plan, &mut Vec::new()).unwrap_err();
        assert!(e.to_string().contains("node 999"), "{e}");
        // (The kernel drops nodes that do not exist from a set, so only a
        // set with none that does is refused.)
        let plan = ProcPlan {
            memory: MemPlan::BoundToSet {
                nodes: vec![998, 999],
            },
            ..plan
        };
        let e = run_process(&plan, &mut Vec::new()).unwrap_err();
        assert!(e.to_string().contains("nodes 998,999"), "{e}");
    }
}
