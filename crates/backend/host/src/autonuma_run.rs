//! Running an autonuma benchmark (or twohalves) once: start its processes,
//! watch them at the sampling interval, check that every thread did every
//! loop, and turn it all into a [`RunRecord`] with its convergence.

use crate::autonuma_task::ProcessReport;
use crate::observe::{push_final_sample, Observer, Region};
use crate::pace::Pacer;
use crate::run::{node_residency, progress_bar, Progress, RunSpec};
use crate::{Error, Result};
use numalab_bench::autonuma::{self, Params, Plan};
use numalab_bench::metrics::*;
use numalab_bench::Case;
use numalab_linux::child::{self, Exit};
use numalab_record::{convergence, Outcome, ProcessInfo, RunRecord, Sample, TaskRecord};
use numalab_topology::{MachineInfo, Topology};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// Pages whose node is read with `move_pages` per sample, in all.
pub const PAGE_BUDGET: usize = 8192;

/// How a plan realised the case here, for the record's `backend.details`:
/// where each process's memory went first, the nodes it is bound to (per
/// region, or numa01's node set), and the nodes each thread was meant to
/// run on (bind and inverse-bind).
fn plan_details(plan: &Plan) -> BTreeMap<String, serde_json::Value> {
    let first_touch: Vec<String> = plan
        .procs
        .iter()
        .map(|p| match &p.memory {
            autonuma::MemPlan::FirstTouchThenDefault { node } => {
                format!("node {node}, then default policy")
            }
            autonuma::MemPlan::Bound { nodes } => {
                let mut n = nodes.clone();
                n.dedup();
                format!(
                    "bound to node {}",
                    n.iter()
                        .map(|x| x.to_string())
                        .collect::<Vec<_>>()
                        .join(",")
                )
            }
            autonuma::MemPlan::BoundToSet { nodes } => format!(
                "interleaved over nodes {}, bound to them",
                nodes
                    .iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        })
        .collect();
    let mut m = BTreeMap::new();
    m.insert("first_touch".into(), first_touch.into());
    // Where each process's memory is bound: a node per region, or (numa01*)
    // the node set of the whole buffer.
    let bound: Vec<Option<&Vec<u32>>> = plan
        .procs
        .iter()
        .map(|p| match &p.memory {
            autonuma::MemPlan::Bound { nodes } | autonuma::MemPlan::BoundToSet { nodes } => {
                Some(nodes)
            }
            _ => None,
        })
        .collect();
    if bound.iter().all(|b| b.is_some()) {
        m.insert(
            "memory_nodes".into(),
            serde_json::to_value(&bound).unwrap_or_default(),
        );
    }
    if plan.ideal_nodes.iter().any(|n| n.is_some()) {
        m.insert(
            "thread_nodes".into(),
            serde_json::to_value(&plan.ideal_nodes).unwrap_or_default(),
        );
    }
    m
}

#[derive(Default)]
struct ProcState {
    regions: Vec<Region>,
    tids: Vec<i32>,
    progress: Vec<u64>,
    report: Option<ProcessReport>,
    error: Option<String>,
}

struct Proc {
    pid: i32,
    state: Arc<Mutex<ProcState>>,
    reader: Option<std::thread::JoinHandle<()>>,
    exit: Option<Exit>,
}

/// A process ended: its index, how (None: wait4 failed), when (seconds
/// since the start).
type Ended = (usize, Option<Exit>, f64);

/// What wakes the run loop: a process ended, or one said its threads
/// started (so that the loop sees the moment every process has, not at
/// its next tick: the run's `started_s` and its first sample).
enum Event {
    Ended(Ended),
    Threads,
}

/// Reap process `i` in a thread of its own (a blocking `wait4`), so the
/// exit time is exact and the run loop sleeps instead of polling.
fn waiter(i: usize, pid: i32, start: Instant, tx: mpsc::Sender<Event>) {
    std::thread::spawn(move || {
        let e = child::wait4(pid, true).ok().flatten();
        let _ = tx.send(Event::Ended((i, e, start.elapsed().as_secs_f64())));
    });
}

fn parse_line(line: &str, st: &mut ProcState) {
    let mut words = line.split_whitespace();
    match words.next() {
        Some("region") => {
            let v: Vec<u64> = words.filter_map(|w| w.parse().ok()).collect();
            if let [_, addr, len] = v[..] {
                st.regions.push(Region { addr, len });
            }
        }
        Some("threads") => st.tids = words.filter_map(|w| w.parse().ok()).collect(),
        Some("progress") => st.progress = words.filter_map(|w| w.parse().ok()).collect(),
        Some("done") => {
            st.report = serde_json::from_str(line["done ".len()..].trim()).ok();
        }
        Some("error") => st.error = Some(line["error ".len().min(line.len())..].to_string()),
        _ => {}
    }
}

/// A process's protocol lines into its state until its output ends; a
/// `threads` line also wakes the run loop.
fn read_lines(out: impl std::io::Read, st: &Mutex<ProcState>, tx: &mpsc::Sender<Event>) {
    for line in BufReader::new(out).lines() {
        let Ok(line) = line else { break };
        parse_line(&line, &mut st.lock().expect("state lock"));
        if line.starts_with("threads ") {
            let _ = tx.send(Event::Threads);
        }
    }
}

fn spawn(exe: &Path, plan: &autonuma::ProcPlan, tx: mpsc::Sender<Event>) -> Result<Proc> {
    let mut cmd = Command::new(exe);
    cmd.args(["__task", "autonuma"])
        .arg(serde_json::to_string(plan).expect("plan serialises"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    child::die_with_parent(&mut cmd);
    let mut c = cmd
        .spawn()
        .map_err(|e| Error::io("starting a benchmark process", e))?;
    let state = Arc::new(Mutex::new(ProcState::default()));
    let out = c.stdout.take().expect("piped stdout");
    let st = state.clone();
    let reader = std::thread::spawn(move || read_lines(out, &st, &tx));
    Ok(Proc {
        pid: c.id() as i32,
        state,
        reader: Some(reader),
        exit: None,
    })
}

fn kill_all(procs: &mut [Proc], ended: &mpsc::Receiver<Event>) {
    for p in procs.iter().filter(|p| p.exit.is_none()) {
        child::signal(p.pid, libc::SIGKILL);
    }
    while procs.iter().any(|p| p.exit.is_none()) {
        match ended.recv_timeout(Duration::from_secs(10)) {
            Ok(Event::Ended((i, e, _))) => procs[i].exit = Some(e.unwrap_or(UNKNOWN_EXIT)),
            Ok(Event::Threads) => {}
            Err(_) => break,
        }
    }
    for p in procs.iter_mut() {
        if let Some(r) = p.reader.take() {
            let _ = r.join();
        }
    }
}

const UNKNOWN_EXIT: Exit = Exit {
    code: None,
    signal: None,
    user_s: 0.0,
    sys_s: 0.0,
    sched: None,
};

/// Run the benchmark once. A process failing or doing less than all its
/// loops makes the record `failed` with the reason; an interruption is
/// an error ([`Interrupted`]).
pub fn run_once(
    exe: &Path,
    machine: &MachineInfo,
    p: &Params,
    spec: &RunSpec,
) -> Result<RunRecord> {
    let topo = &machine.topology;
    let plan = p.plan(topo)?;
    let mut rec = spec.new_record(&Case::Autonuma(p.clone()), machine);
    rec.backend.details_mut().extend(plan_details(&plan));
    if let Some(d) = &plan.degenerate {
        rec.warnings.push(d.clone());
    }
    let (task_process, task_slot) = task_order(&plan);
    let ntasks = task_process.len();
    let expected_work = ntasks as u64 * p.loops;
    let observer = Observer::start(topo);
    let bar = progress_bar(expected_work, spec);

    let cpu_at_start = own_cpu_s();
    let start = Instant::now();
    let mut run = Running::start(exe, &plan, start, task_slot)?;
    let mut pacer = Pacer::new(spec.interval);
    let watched = run.watch(&observer, spec, &bar, &mut pacer, &mut rec.series.samples)?;
    rec.series.interval_s = pacer.longest_s();
    run.join_readers();
    let vm = observer.vmstat_delta();
    // What watching cost: numalab's own CPU time during the run (sampling,
    // the 5 ms wait loop, the threads reading the processes' output).
    let observer_cpu = own_cpu_s() - cpu_at_start;

    let (failures, thread_gbs) = run.record_tasks(&mut rec, topo, p, &plan);
    let work: Vec<u64> = rec.tasks.iter().map(|t| t.work_done).collect();
    push_final_sample(&mut rec, pacer.enabled(), watched.elapsed, work, &vm);
    run.record_metrics(&mut rec, p, &vm, &watched, &thread_gbs, observer_cpu);
    let tasks = convergence::Tasks {
        process: task_process,
        bytes: run.task_bytes(),
    };
    record_convergence(&mut rec, p, topo, &tasks, watched.started_s);
    if !failures.is_empty() {
        rec.outcome = Outcome::failed(failures.join("; "));
    }
    Ok(rec)
}

/// The tasks in order, process by process, thread by thread: each task's
/// process, and its (process, thread, region) slot.
fn task_order(plan: &Plan) -> (Vec<usize>, Vec<(usize, usize, usize)>) {
    let mut task_process = Vec::new();
    let mut task_slot = Vec::new();
    for (pi, pp) in plan.procs.iter().enumerate() {
        for t in 0..pp.threads {
            task_process.push(pi);
            task_slot.push((pi, t as usize, pp.region_of_thread(t)));
        }
    }
    (task_process, task_slot)
}

/// What the processes said so far, per process: its regions, thread ids
/// and progress.
type Snap = Vec<(Vec<Region>, Vec<i32>, Vec<u64>)>;

/// What watching the processes found: when the last one ended (seconds
/// since the start), and when every thread had started (None: never).
struct Watched {
    elapsed: f64,
    started_s: Option<f64>,
}

/// The benchmark's processes while they run: their states, the channel
/// their waiters report their ends on, when they were started, each
/// task's (process, thread, region) slot, and the pages whose node is
/// read per process and sample.
struct Running {
    procs: Vec<Proc>,
    ended: mpsc::Receiver<Event>,
    start: Instant,
    task_slot: Vec<(usize, usize, usize)>,
    budget: usize,
}

impl Running {
    /// Start the plan's processes, each reaped by a waiter; if one cannot
    /// start, kill those that did.
    fn start(
        exe: &Path,
        plan: &Plan,
        start: Instant,
        task_slot: Vec<(usize, usize, usize)>,
    ) -> Result<Running> {
        let mut procs: Vec<Proc> = Vec::new();
        let (tx, ended) = mpsc::channel();
        for pp in &plan.procs {
            match spawn(exe, pp, tx.clone()) {
                Ok(x) => {
                    waiter(procs.len(), x.pid, start, tx.clone());
                    procs.push(x);
                }
                Err(e) => {
                    kill_all(&mut procs, &ended);
                    return Err(e);
                }
            }
        }
        drop(tx);
        let budget = PAGE_BUDGET / procs.len().max(1);
        Ok(Running {
            procs,
            ended,
            start,
            task_slot,
            budget,
        })
    }

    /// Watch the processes until every one has ended: note their ends,
    /// move the progress bar and sample when the pacer says (at once when
    /// every thread has started). An interruption kills them all.
    fn watch(
        &mut self,
        observer: &Observer,
        spec: &RunSpec,
        bar: &Progress,
        pacer: &mut Pacer,
        samples: &mut Vec<Sample>,
    ) -> Result<Watched> {
        let mut pending: Vec<Ended> = Vec::new();
        let mut started_s = None;
        let mut elapsed = 0.0;
        loop {
            let now = self.start.elapsed().as_secs_f64();
            if spec.interrupt.is_set() {
                kill_all(&mut self.procs, &self.ended);
                return Err(Error::Interrupted);
            }
            pending.extend(self.ended.try_iter().filter_map(|m| match m {
                Event::Ended(x) => Some(x),
                Event::Threads => None,
            }));
            for (i, e, t) in pending.drain(..) {
                self.procs[i].exit = Some(e.unwrap_or(UNKNOWN_EXIT));
                elapsed = f64::max(elapsed, t);
            }
            let snap = self.snapshot();
            if started_s.is_none() && snap.iter().all(|s| !s.1.is_empty()) {
                // The memory is placed and the threads start: sample now, so
                // every observed run shows the starting placement.
                started_s = Some(now);
                pacer.sample_at(now);
            }
            let progress: Vec<u64> = self
                .task_slot
                .iter()
                .map(|&(pi, t, _)| snap[pi].2.get(t).copied().unwrap_or(0))
                .collect();
            bar.set_position(progress.iter().sum());
            let running = self.procs.iter().any(|x| x.exit.is_none());
            if running {
                pacer.take(now, || {
                    samples.push(self.sample(observer, &snap, now, progress))
                });
            }
            if !running {
                break;
            }
            // Sleep until a process ends, the next sample is due, or a
            // watcher's tick has passed (for Ctrl-C and the progress bar).
            let wait = crate::run::watch_timeout(pacer, self.start.elapsed().as_secs_f64(), None);
            if let Ok(Event::Ended(m)) = self.ended.recv_timeout(wait) {
                pending.push(m);
            }
        }
        Ok(Watched { elapsed, started_s })
    }

    /// What the processes said so far.
    fn snapshot(&self) -> Snap {
        self.procs
            .iter()
            .map(|x| {
                let s = x.state.lock().expect("state lock");
                (s.regions.clone(), s.tids.clone(), s.progress.clone())
            })
            .collect()
    }

    /// One sample at `now`: where the live processes' memory and threads
    /// are, each task's `progress`, and the nodes of each task's region.
    fn sample(&self, observer: &Observer, snap: &Snap, now: f64, progress: Vec<u64>) -> Sample {
        let live: Vec<i32> = self
            .procs
            .iter()
            .map(|x| if x.exit.is_none() { x.pid } else { -1 })
            .collect();
        let ids: Vec<(i32, Option<i32>)> = self
            .task_slot
            .iter()
            .map(|&(pi, t, _)| match snap[pi].1.get(t) {
                Some(&tid) if live[pi] > 0 => (live[pi], Some(tid)),
                _ => (-1, None),
            })
            .collect();
        let mut s = observer.sample(now, &live, &ids, progress);
        let mem: Vec<Vec<Vec<u64>>> = self
            .procs
            .iter()
            .enumerate()
            .map(|(pi, x)| {
                if x.exit.is_none() && !snap[pi].0.is_empty() {
                    observer.regions(x.pid, &snap[pi].0, self.budget)
                } else {
                    Vec::new()
                }
            })
            .collect();
        s.task_memory_bytes = self
            .task_slot
            .iter()
            .map(|&(pi, _, r)| mem[pi].get(r).cloned().unwrap_or_default())
            .collect();
        s
    }

    /// Wait for the threads reading the processes' output to end.
    fn join_readers(&mut self) {
        for x in self.procs.iter_mut() {
            if let Some(r) = x.reader.take() {
                let _ = r.join();
            }
        }
    }

    /// Per-thread results, checked: every process must exit 0 and report
    /// every thread's loops. Records each process and each thread's task,
    /// and returns the failures and each thread's zeroing bandwidth (None
    /// where it did not report one).
    fn record_tasks(
        &self,
        rec: &mut RunRecord,
        topo: &Topology,
        p: &Params,
        plan: &Plan,
    ) -> (Vec<String>, Vec<Option<f64>>) {
        let nodes = topo.nodes.len();
        let mut failures = Vec::new();
        let nprocs = self.procs.len();
        let mut thread_gbs: Vec<Option<f64>> = Vec::new();
        for (pi, x) in self.procs.iter().enumerate() {
            let exit = x.exit.unwrap_or(UNKNOWN_EXIT);
            let st = x.state.lock().expect("state lock");
            let pname = if nprocs > 1 {
                format!("process {pi}")
            } else {
                "the process".to_string()
            };
            if !exit.success() {
                failures.push(format!(
                    "{pname} ended with {}{}",
                    exit.describe(),
                    st.error
                        .as_ref()
                        .map(|e| format!(": {e}"))
                        .unwrap_or_default()
                ));
            } else if st.report.is_none() {
                failures.push(format!("{pname} exited without reporting its work"));
            }
            rec.processes.push(ProcessInfo {
                index: pi as u32,
                name: format!("{} process {pi}", p.kind.name()),
                pid: Some(x.pid),
            });
            let pp = &plan.procs[pi];
            for t in 0..pp.threads as usize {
                let id = rec.tasks.len() as u32 + 1;
                let r = st.report.as_ref().and_then(|r| r.threads.get(t));
                thread_gbs.push(r.and_then(|r| r.bandwidth_gbs()));
                let done = r
                    .map(|r| r.loops)
                    .unwrap_or_else(|| st.progress.get(t).copied().unwrap_or(0));
                if exit.success() && st.report.is_some() && done != p.loops {
                    failures.push(format!(
                        "{pname} thread {t} did {done} of {} loops",
                        p.loops
                    ));
                }
                let (node_time, main) = match r {
                    Some(r) => node_residency(topo, &r.cpu_time_ns),
                    None => (vec![0.0; nodes], None),
                };
                let name = p.kind.task_name(nprocs, p.threads, pi as u32, t as u32);
                rec.tasks.push(TaskRecord {
                    id,
                    name,
                    pid: r.map(|r| r.tid).or_else(|| st.tids.get(t).copied()),
                    process: Some(pi as u32),
                    initial_node: r.and_then(|r| topo.node_of_cpu(r.initial_cpu)),
                    main_node: main,
                    node_time_s: node_time,
                    residency_method: "the thread reads its CPU (sched_getcpu) and thread CPU time after every loop (one memset of its slice) and charges the time between readings to the CPU seen at the first".into(),
                    residency_samples: r.map_or(0, |r| r.readings),
                    user_s: r.map_or(0.0, |r| r.user_s),
                    sys_s: r.map_or(0.0, |r| r.sys_s),
                    work_done: done,
                    work_expected: p.loops,
                    exit: exit.describe(),
                    kernel: crate::kernel_counters(r.and_then(|r| r.sched)),
                });
            }
        }
        (failures, thread_gbs)
    }

    /// The run's metrics: elapsed, user and system time, the vmstat
    /// counters, when the threads started, the bandwidth (in all and per
    /// thread) and what watching cost.
    fn record_metrics(
        &self,
        rec: &mut RunRecord,
        p: &Params,
        vm: &BTreeMap<String, i64>,
        watched: &Watched,
        thread_gbs: &[Option<f64>],
        observer_cpu: f64,
    ) {
        let elapsed = watched.elapsed;
        ELAPSED_S.put(&mut rec.metrics, elapsed);
        let exits = || self.procs.iter().filter_map(|x| x.exit);
        USER_S.put(&mut rec.metrics, exits().map(|e| e.user_s).sum());
        SYS_S.put(&mut rec.metrics, exits().map(|e| e.sys_s).sum());
        crate::vmstat_metrics(rec, vm);
        if let Some(s) = watched.started_s {
            STARTED_S.put(&mut rec.metrics, s);
        }
        if elapsed > 0.0 {
            BANDWIDTH_GBS.put(&mut rec.metrics, p.bytes_zeroed() as f64 / elapsed / 1e9);
        }
        for (m, value) in thread_bandwidth(thread_gbs) {
            m.put(&mut rec.metrics, value);
        }
        OBSERVER_CPU_S.put(&mut rec.metrics, observer_cpu);
    }

    /// Each task's bytes: the length of its region, as its process said.
    fn task_bytes(&self) -> Vec<u64> {
        self.task_slot
            .iter()
            .map(|&(pi, _, r)| {
                let st = self.procs[pi].state.lock().expect("state lock");
                st.regions.get(r).map_or(0, |x| x.len)
            })
            .collect()
    }
}

/// The run's convergence by the benchmark's rule, from its samples, and
/// its time as `convergence_s` when it converged.
fn record_convergence(
    rec: &mut RunRecord,
    p: &Params,
    topo: &Topology,
    tasks: &convergence::Tasks,
    started_s: Option<f64>,
) {
    rec.convergence = convergence::evaluate(
        p.kind.convergence_rule(),
        topo,
        tasks,
        &rec.series.samples,
        started_s,
    );
    if let Some(numalab_record::ConvergenceState::Converged { at_s }) =
        rec.convergence.as_ref().map(|c| &c.state)
    {
        CONVERGENCE_S.put(&mut rec.metrics, *at_s);
    }
}

/// The per-thread bandwidth metrics, as `perf bench numa mem` reports
/// thread speed: the mean of the threads' own GB/s
/// (`thread_bandwidth_gbs`) and the slowest thread's
/// (`thread_bandwidth_min_gbs`). None unless every thread reported one.
pub(crate) fn thread_bandwidth(gbs: &[Option<f64>]) -> Vec<(MetricDef, f64)> {
    let Some(v) = gbs.iter().copied().collect::<Option<Vec<f64>>>() else {
        return Vec::new();
    };
    if v.is_empty() {
        return Vec::new();
    }
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    vec![
        (THREAD_BANDWIDTH_GBS, mean),
        (THREAD_BANDWIDTH_MIN_GBS, min),
    ]
}

/// CPU time (user + system) of this process so far, its threads included.
fn own_cpu_s() -> f64 {
    let (user, sys) =
        numalab_linux::clock::cpu_times(numalab_linux::clock::Who::Process).unwrap_or((0.0, 0.0));
    user + sys
}

/// Bytes per second of a first touch: one thread zeroing `bytes` it has
/// never touched (a fresh mapping), so every page faults and the kernel
/// allocates and clears it first, as the autonuma benchmarks' main thread
/// does before its threads start (with this machine's transparent huge
/// page setting).
pub fn measure_first_touch_rate(bytes: usize) -> f64 {
    let t = Instant::now();
    let mut v: Vec<u8> = Vec::with_capacity(bytes);
    v.resize(bytes, 1);
    let s = t.elapsed().as_secs_f64();
    std::hint::black_box(&v);
    bytes as f64 / s.max(1e-9)
}

/// Aggregate bandwidth of `threads` threads zeroing memory, in bytes per
/// second, measured for about `duration`: the basis of the default loop
/// counts ([`crate::mem::measure_sweep`] of a memset).
pub fn measure_zeroing_bandwidth(
    threads: u32,
    working_set: u64,
    llc_bytes: u64,
    duration: Duration,
) -> f64 {
    crate::mem::measure_sweep(
        numalab_bench::mem::Op::Memset,
        threads,
        working_set,
        llc_bytes,
        duration,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocol_lines() {
        let mut st = ProcState::default();
        parse_line("region 0 4096 8192", &mut st);
        parse_line("threads 11 12", &mut st);
        parse_line("progress 3 4", &mut st);
        parse_line("error binding memory to node 9: Invalid argument", &mut st);
        parse_line("noise", &mut st);
        assert_eq!(
            st.regions,
            vec![Region {
                addr: 4096,
                len: 8192
            }]
        );
        assert_eq!(st.tids, vec![11, 12]);
        assert_eq!(st.progress, vec![3, 4]);
        assert_eq!(
            st.error.as_deref(),
            Some("binding memory to node 9: Invalid argument")
        );
        parse_line(r#"done {"process":0,"threads":[]}"#, &mut st);
        assert_eq!(st.report.unwrap().threads.len(), 0);
    }

    /// The line saying a process's threads started wakes the run loop
    /// (an event on its channel), so the run's start is read at that
    /// moment, not at the loop's next tick (0.103-0.112 s against
    /// 0.131 s for numa01 bound in a 2-node guest, 2026-11-28); the
    /// others only update the state.
    #[test]
    fn a_process_saying_its_threads_started_wakes_the_run_loop() {
        let (tx, rx) = mpsc::channel();
        let st = Mutex::new(ProcState::default());
        read_lines(&b"region 0 4096 8192\nprogress 1\n"[..], &st, &tx);
        assert!(rx.try_recv().is_err(), "no wakeup before the threads");
        read_lines(&b"threads 11 12\nprogress 2\n"[..], &st, &tx);
        assert!(matches!(rx.try_recv(), Ok(Event::Threads)));
        assert!(rx.try_recv().is_err(), "one wakeup");
        let st = st.into_inner().unwrap();
        assert_eq!((st.tids, st.progress), (vec![11, 12], vec![2]));
    }

    #[test]
    fn thread_bandwidth_is_the_mean_and_the_slowest_of_every_thread() {
        assert_eq!(
            thread_bandwidth(&[Some(2.0), Some(4.0), Some(3.0)]),
            vec![(THREAD_BANDWIDTH_GBS, 3.0), (THREAD_BANDWIDTH_MIN_GBS, 2.0)]
        );
        assert!(thread_bandwidth(&[Some(2.0), None]).is_empty());
        assert!(thread_bandwidth(&[]).is_empty());
    }

    #[test]
    fn zeroing_bandwidth_is_measured() {
        assert!(measure_zeroing_bandwidth(1, 1 << 20, 0, Duration::from_millis(50)) > 1e6);
        for op in numalab_bench::mem::Op::ALL {
            let b = crate::mem::measure_sweep(op, 2, 1 << 20, 0, Duration::from_millis(20));
            assert!(b > 1e6, "{op:?}: {b}");
        }
    }
}
