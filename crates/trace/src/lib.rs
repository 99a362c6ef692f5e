//! # numalab-trace: what the scheduler did, exactly
//!
//! Sampling says where a task was every so often; it cannot say which CPU
//! the kernel picked at a wakeup, or anything about a task that lives for
//! a millisecond. A traced run (`--trace`, numalab-linux's `perf::Tracer`)
//! has every switch of every task of the benchmark's tree, with its CPU
//! and time, and every fork, exec and exit. This crate turns those events
//! into the record's [`SchedTrace`]:
//!
//! - **time per CPU and per node**, summed from run intervals (switch in
//!   to switch out, or to exit): on-CPU time, the same quantity as the
//!   run's user + system time;
//! - **migrations**: a run on another CPU than the task's last, counted by
//!   how far it moved (an SMT sibling, another core of the LLC, another
//!   LLC of the node, another node: [`numalab_topology::Relation`]);
//! - **wakeup placements**: after a sleep (a switch out that was not a
//!   preemption), the CPU the task woke on relative to the CPU it slept
//!   on, and, when a traced task woke it (`sched_waking`), relative to the
//!   waker's CPU;
//! - **lifetimes** and the **sequence of CPUs chosen for new tasks** (each
//!   task's first CPU, in order of creation), the CPU-selection analysis
//!   of the NEST evaluation (Chaloyard, 2022).
//!
//! The events are sorted by time before analysis: each CPU's ring buffer
//! is in order, the buffers are not in order with each other. Numalab's
//! own process (the observer, the runner) is left out; its children are
//! the benchmark.
//!
//! [`export`] turns the same events into a schedule and writes it as a
//! trace file: Chrome trace-event JSON, or ftrace text ([`systrace`]) for
//! Perfetto's scheduler views.

#![forbid(unsafe_code)]

pub mod export;
pub mod systrace;
#[cfg(test)]
mod systrace_check;

use numalab_linux::perf::{Event, Switches};
use numalab_record::{Better, Latency, Metric, Relations, SchedTask, SchedTrace};
use numalab_topology::{Relation, Topology};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

fn count(r: &mut Relations, rel: Option<Relation>) {
    match rel {
        Some(Relation::SameCpu) => r.same_cpu += 1,
        Some(Relation::SmtSibling) => r.smt_sibling += 1,
        Some(Relation::SameLlc) => r.same_llc += 1,
        Some(Relation::SameNode) => r.same_node += 1,
        Some(Relation::CrossNode) => r.cross_node += 1,
        None => {}
    }
}

#[derive(Default)]
struct Task {
    pid: u32,
    parent: Option<u32>,
    comm: String,
    forked: Option<u64>,
    exec: Option<u64>,
    exit: Option<u64>,
    running: Option<(u32, u64)>,
    last_cpu: Option<u32>,
    sleeping: bool,
    waker_cpu: Option<u32>,
    cpu_ns: BTreeMap<u32, u64>,
    first_cpu: Option<u32>,
    migrations: Relations,
    wakeups: Relations,
    near_waker: Relations,
    preemptions: u32,
    on_idle: u32,
    order: usize,
    /// When a wakeup or a preemption made it runnable, not yet run.
    woken_at: Option<u64>,
    preempted_at: Option<u64>,
    /// A waking while it was still on its CPU, going to sleep: if it
    /// switches out asleep, that waking woke it (try_to_wake_up waits
    /// for the switch to end, `p->on_cpu`, then queues it).
    woken_on_cpu: Option<u64>,
    /// `woken_at` came from `woken_on_cpu`: a waking after the switch
    /// out says the earlier one found it still runnable and replaces it.
    woken_early: bool,
    /// Its last switch out was not recorded and is taken as a
    /// preemption until a waking says it slept.
    unsure: bool,
    wakeup_ns: Vec<u64>,
    runqueue_ns: Vec<u64>,
}

/// Whether `e` is an event of process `pid` (switches, forks, execs,
/// exits of its threads).
pub fn of_process(e: &Event, pid: u32) -> bool {
    match e {
        Event::SwitchIn { pid: p, .. }
        | Event::SwitchOut { pid: p, .. }
        | Event::Comm { pid: p, .. }
        | Event::Exit { pid: p, .. } => *p == pid,
        Event::Fork { pid: p, .. } => *p == pid,
        _ => false,
    }
}

/// The time an event happened.
pub fn time_of(e: &Event) -> u64 {
    match e {
        Event::SwitchIn { time, .. }
        | Event::SwitchOut { time, .. }
        | Event::Fork { time, .. }
        | Event::Comm { time, .. }
        | Event::Exit { time, .. }
        | Event::Waking { time, .. } => *time,
        Event::Lost { .. } => 0,
    }
}

/// The facts of every task of the tree, from `events` (any order) of a
/// run that started at `start_ns`, leaving out process `numalab_pid`;
/// `switches` says how the switches were recorded (CPU-wide ones include
/// the idle task's switches out, which say a CPU was idle).
pub fn analyse(
    events: &[Event],
    numalab_pid: u32,
    start_ns: u64,
    topo: &Topology,
    switches: Switches,
    waker_cpu_unavailable: Option<String>,
) -> SchedTrace {
    let idle_seen = switches == Switches::CpuWide;
    // CPU -> when its idle task last switched out.
    let mut idle_out: BTreeMap<u32, u64> = BTreeMap::new();
    let mut ev: Vec<&Event> = events.iter().collect();
    ev.sort_by_key(|e| time_of(e));
    let mut tasks: BTreeMap<u32, Task> = BTreeMap::new();
    let mut lost = 0;
    let mut created = 0usize;
    let nn = topo.nodes.len();
    let mut matrix = vec![vec![0u32; nn]; nn];
    let node_ix = |cpu: u32| topo.node_of_cpu(cpu).and_then(|n| topo.node_index(n));
    let mut task = |tasks: &mut BTreeMap<u32, Task>, tid: u32, pid: u32| -> bool {
        if pid == numalab_pid || tid == 0 {
            return false;
        }
        tasks.entry(tid).or_insert_with(|| {
            created += 1;
            Task {
                pid,
                order: created,
                ..Default::default()
            }
        });
        true
    };
    let close = |t: &mut Task, at: u64| {
        if let Some((cpu, since)) = t.running.take() {
            *t.cpu_ns.entry(cpu).or_default() += at.saturating_sub(since);
            t.last_cpu = Some(cpu);
        }
    };
    for e in ev {
        match *e {
            Event::Fork {
                time,
                pid,
                tid,
                ptid,
                ..
            } => {
                if task(&mut tasks, tid, pid) {
                    let t = tasks.get_mut(&tid).expect("just made");
                    t.forked = Some(time);
                    if ptid != 0 {
                        t.parent = Some(ptid);
                    }
                    // A new thread inherits its creator's name.
                    if let Some(name) = tasks.get(&ptid).map(|p| p.comm.clone()) {
                        tasks.get_mut(&tid).expect("made").comm = name;
                    }
                }
            }
            Event::Comm {
                time,
                pid,
                tid,
                ref comm,
                exec,
                ..
            } => {
                if task(&mut tasks, tid, pid) {
                    let t = tasks.get_mut(&tid).expect("made");
                    t.comm = comm.clone();
                    if exec {
                        t.exec = Some(time);
                    }
                }
            }
            Event::SwitchOut {
                time, cpu, tid: 0, ..
            } => {
                idle_out.insert(cpu, time);
            }
            Event::SwitchIn {
                time,
                cpu,
                pid,
                tid,
            } => {
                if task(&mut tasks, tid, pid) {
                    let t = tasks.get_mut(&tid).expect("made");
                    t.first_cpu.get_or_insert(cpu);
                    if let Some(last) = t.last_cpu {
                        if last != cpu {
                            count(&mut t.migrations, topo.relation(last, cpu));
                            if let (Some(a), Some(b)) = (node_ix(last), node_ix(cpu)) {
                                matrix[a][b] += 1;
                            }
                        }
                        if t.sleeping {
                            count(&mut t.wakeups, topo.relation(last, cpu));
                            if idle_out.get(&cpu) == Some(&time) {
                                t.on_idle += 1;
                            }
                        }
                    }
                    if let Some(w) = t.waker_cpu.take() {
                        count(&mut t.near_waker, topo.relation(w, cpu));
                    }
                    let (woken, queued) = (t.woken_at.take(), t.preempted_at.take());
                    if let Some(at) = woken {
                        t.wakeup_ns.push(time.saturating_sub(at));
                    } else if let Some(at) = queued {
                        t.runqueue_ns.push(time.saturating_sub(at));
                    }
                    t.unsure = false;
                    t.sleeping = false;
                    t.woken_on_cpu = None;
                    t.woken_early = false;
                    t.running = Some((cpu, time));
                }
            }
            Event::SwitchOut {
                time,
                cpu,
                pid,
                tid,
                preempted,
                guessed,
            } => {
                if task(&mut tasks, tid, pid) {
                    let t = tasks.get_mut(&tid).expect("made");
                    if t.running.is_none() {
                        // Running since before the trace saw it.
                        t.running = Some((cpu, time));
                    }
                    close(t, time);
                    if preempted {
                        t.preemptions += 1;
                        t.preempted_at = Some(time);
                    }
                    // Woken as it went to sleep: runnable from the switch
                    // out (the later of the two events, so the order the
                    // two CPUs' clocks give them does not matter).
                    if t.woken_on_cpu.take().is_some() && !preempted {
                        t.woken_at = Some(time);
                        t.woken_early = true;
                    }
                    t.sleeping = !preempted;
                    t.unsure = guessed;
                }
            }
            Event::Waking {
                time, cpu, wakee, ..
            } => {
                if let Some(t) = tasks.get_mut(&wakee) {
                    t.waker_cpu = Some(cpu);
                    if t.unsure && t.preempted_at.take().is_some() {
                        // Its switch out was not recorded: a waking says
                        // it went to sleep there (a task switched out
                        // runnable is seldom woken: try_to_wake_up traces
                        // sched_waking only for a task whose state says
                        // it sleeps).
                        t.preemptions = t.preemptions.saturating_sub(1);
                        t.sleeping = true;
                        t.unsure = false;
                    }
                    // The first waking of a sleep counts (a task already
                    // woken and not yet run is woken again for nothing;
                    // so is one preempted, still runnable, as the kernel's
                    // try_to_wake_up finds it on its run queue,
                    // ttwu_runnable).
                    if let Some((on, _)) = t.running {
                        // On its CPU, its state saying it sleeps (else
                        // no sched_waking): woken from another CPU, it
                        // may be switching out there; from its own (an
                        // interrupt, or itself) it is still queued and
                        // keeps running (ttwu_runnable).
                        if on != cpu {
                            t.woken_on_cpu.get_or_insert(time);
                        }
                    } else if t.woken_early || (t.woken_at.is_none() && t.preempted_at.is_none()) {
                        t.woken_at = Some(time);
                        t.woken_early = false;
                    }
                }
            }
            Event::Exit { time, pid, tid, .. } => {
                // Still running: the final switch (when recorded) ends it.
                if let Some(t) = tasks.get_mut(&tid) {
                    if t.pid == pid {
                        t.exit = Some(time);
                    }
                }
            }
            Event::Lost { count } => lost += count,
        }
    }
    // Exited tasks whose final switch was not recorded end at their exit.
    for t in tasks.values_mut() {
        if let Some(at) = t.exit {
            close(t, at);
        }
    }
    let secs = |t: Option<u64>| t.map(|t| t.saturating_sub(start_ns) as f64 / 1e9);
    let mut out: Vec<(usize, SchedTask)> = tasks
        .into_iter()
        .map(|(tid, t)| {
            let mut node_s = vec![0.0; topo.nodes.len()];
            let cpu_s: BTreeMap<u32, f64> = t
                .cpu_ns
                .iter()
                .map(|(&c, &ns)| {
                    if let Some(ix) = topo.node_of_cpu(c).and_then(|n| topo.node_index(n)) {
                        node_s[ix] += ns as f64 / 1e9;
                    }
                    (c, ns as f64 / 1e9)
                })
                .collect();
            let task = SchedTask {
                tid,
                pid: t.pid,
                parent_tid: t.parent,
                comm: t.comm,
                forked_s: secs(t.forked),
                exec_s: secs(t.exec),
                exited_s: secs(t.exit),
                run_s: cpu_s.values().sum(),
                cpu_s,
                node_s,
                first_cpu: t.first_cpu,
                migrations: t.migrations,
                wakeups: t.wakeups,
                woken_near_waker: t.near_waker,
                preemptions: t.preemptions,
                woken_on_idle_cpu: idle_seen.then_some(t.on_idle),
                wakeup_latency: numalab_record::Latency::of_ns(&t.wakeup_ns),
                runqueue_delay: numalab_record::Latency::of_ns(&t.runqueue_ns),
            };
            (t.order, task)
        })
        .collect();
    out.sort_by(|a, b| {
        let key = |t: &SchedTask| t.forked_s.unwrap_or(f64::NEG_INFINITY);
        key(&a.1).total_cmp(&key(&b.1)).then(a.0.cmp(&b.0))
    });
    let tasks: Vec<SchedTask> = out.into_iter().map(|(_, t)| t).collect();
    let new_task_cpus = tasks
        .iter()
        .filter(|t| t.forked_s.is_some())
        .filter_map(|t| t.first_cpu)
        .collect();
    SchedTrace {
        method: switches.method().to_string(),
        lost_events: lost,
        waker_cpu_unavailable,
        events_file: None,
        new_task_cpus,
        migration_matrix: matrix,
        tasks,
    }
}

/// Run-level figures of a trace, as metrics `compare` takes: counts of
/// tasks, migrations and wakeups, where wakeups landed, and the mean and
/// worst wakeup latency and run-queue delay.
pub fn metrics(t: &SchedTrace) -> BTreeMap<String, Metric> {
    let mut mig = Relations::default();
    let mut wake = Relations::default();
    for task in &t.tasks {
        mig.add(&task.migrations);
        wake.add(&task.wakeups);
    }
    let mut m = BTreeMap::new();
    let n = |v: u32| v as f64;
    m.insert(
        "sched_tasks".into(),
        Metric::new(t.tasks.len() as f64, "tasks", Better::Lower),
    );
    m.insert(
        "sched_migrations".into(),
        Metric::new(n(mig.total()), "migrations", Better::Lower),
    );
    m.insert(
        "sched_migrations_cross_llc".into(),
        Metric::new(
            n(mig.same_node + mig.cross_node),
            "migrations",
            Better::Lower,
        ),
    );
    m.insert(
        "sched_migrations_cross_node".into(),
        Metric::new(n(mig.cross_node), "migrations", Better::Lower),
    );
    m.insert(
        "sched_wakeups".into(),
        Metric::new(n(wake.total()), "wakeups", Better::Lower),
    );
    if wake.total() > 0 {
        let pct = |v: u32| 100.0 * v as f64 / wake.total() as f64;
        m.insert(
            "sched_wakeup_prev_cpu_pct".into(),
            Metric::new(pct(wake.same_cpu), "%", Better::Higher),
        );
        m.insert(
            "sched_wakeup_prev_llc_pct".into(),
            Metric::new(
                pct(wake.same_cpu + wake.smt_sibling + wake.same_llc),
                "%",
                Better::Higher,
            ),
        );
        m.insert(
            "sched_wakeup_cross_node_pct".into(),
            Metric::new(pct(wake.cross_node), "%", Better::Lower),
        );
        let idle: Option<u32> = t
            .tasks
            .iter()
            .filter_map(|t| t.woken_on_idle_cpu)
            .reduce(|a, b| a + b);
        if let Some(n) = idle {
            m.insert(
                "sched_wakeup_idle_cpu_pct".into(),
                Metric::new(pct(n), "%", Better::Higher),
            );
        }
    }
    // Delays over every task: the mean weighted by count, the worst.
    for (name, get) in [
        (
            "sched_wakeup_latency",
            (|t: &SchedTask| t.wakeup_latency) as fn(&SchedTask) -> Option<Latency>,
        ),
        ("sched_runqueue_delay", |t: &SchedTask| t.runqueue_delay),
    ] {
        let all: Vec<Latency> = t.tasks.iter().filter_map(get).collect();
        let count: u64 = all.iter().map(|l| l.count).sum();
        if count > 0 {
            let mean = all.iter().map(|l| l.mean_ms * l.count as f64).sum::<f64>() / count as f64;
            let max = all.iter().map(|l| l.max_ms).fold(0.0, f64::max);
            m.insert(format!("{name}_ms"), Metric::new(mean, "ms", Better::Lower));
            m.insert(
                format!("{name}_max_ms"),
                Metric::new(max, "ms", Better::Lower),
            );
        }
    }
    m.insert(
        "sched_lost_events".into(),
        Metric::new(t.lost_events as f64, "events", Better::Lower),
    );
    m
}

/// The raw events of the tree (not of process `numalab_pid`) as
/// tab-separated text, one per line, times in nanoseconds from the run's
/// start: `t_ns cpu kind tid pid a b`.
pub fn write_events(
    path: &Path,
    events: &[Event],
    start_ns: u64,
    numalab_pid: u32,
) -> std::io::Result<()> {
    let mut ev: Vec<&Event> = events
        .iter()
        .filter(|e| !of_process(e, numalab_pid))
        .collect();
    ev.sort_by_key(|e| time_of(e));
    // Written under a temporary name and renamed into place: never
    // through a link planted at `path`, never a partial file under it.
    let mut f = std::io::BufWriter::new(numalab_record::SideFile::new(path)?);
    writeln!(f, "# numalab sched events: t_ns cpu kind tid pid a b")?;
    let rel = |t: u64| t as i64 - start_ns as i64;
    for e in ev {
        match e {
            Event::SwitchIn {
                time,
                cpu,
                pid,
                tid,
            } => writeln!(f, "{}\t{cpu}\tin\t{tid}\t{pid}\t-\t-", rel(*time))?,
            Event::SwitchOut {
                time,
                cpu,
                pid,
                tid,
                preempted,
                guessed,
            } => writeln!(
                f,
                "{}\t{cpu}\tout\t{tid}\t{pid}\t{}\t-",
                rel(*time),
                match (guessed, preempted) {
                    (true, _) => "?",
                    (false, true) => "R",
                    (false, false) => "S",
                }
            )?,
            Event::Fork {
                time,
                cpu,
                pid,
                tid,
                ptid,
                ppid,
            } => writeln!(
                f,
                "{}\t{cpu}\tfork\t{tid}\t{pid}\t{ptid}\t{ppid}",
                rel(*time)
            )?,
            Event::Comm {
                time,
                cpu,
                pid,
                tid,
                comm,
                exec,
            } => writeln!(
                f,
                "{}\t{cpu}\t{}\t{tid}\t{pid}\t{}\t-",
                rel(*time),
                if *exec { "exec" } else { "comm" },
                comm.replace(['\t', '\n'], " ")
            )?,
            Event::Exit {
                time,
                cpu,
                pid,
                tid,
            } => writeln!(f, "{}\t{cpu}\texit\t{tid}\t{pid}\t-\t-", rel(*time))?,
            Event::Waking {
                time,
                cpu,
                waker,
                wakee,
                prev_cpu,
            } => writeln!(
                f,
                "{}\t{cpu}\twaking\t{wakee}\t-\t{waker}\t{prev_cpu}",
                rel(*time)
            )?,
            Event::Lost { count } => writeln!(f, "-\t-\tlost\t-\t-\t{count}\t-")?,
        }
    }
    f.into_inner()
        .map_err(|e| e.into_error())?
        .commit()
        .map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_topology::{Cpu, Llc, Node};

    /// 2 nodes x 2 cores x 2 threads; one LLC per node.
    fn topo() -> Topology {
        let cpus = (0..8)
            .map(|i| Cpu {
                id: i,
                node: i / 4,
                package: i / 4,
                core: i / 2,
                llc: Some(i / 4),
            })
            .collect();
        Topology {
            nodes: vec![
                Node {
                    id: 0,
                    cpus: vec![0, 1, 2, 3],
                    memory_bytes: 1 << 30,
                },
                Node {
                    id: 1,
                    cpus: vec![4, 5, 6, 7],
                    memory_bytes: 1 << 30,
                },
            ],
            cpus,
            llcs: vec![
                Llc {
                    id: 0,
                    level: 3,
                    size_bytes: 1 << 20,
                    cpus: vec![0, 1, 2, 3],
                },
                Llc {
                    id: 1,
                    level: 3,
                    size_bytes: 1 << 20,
                    cpus: vec![4, 5, 6, 7],
                },
            ],
            distances: vec![vec![10, 20], vec![20, 10]],
        }
    }

    /// A fixture stream: task 20 sleeps and is woken by task 21 a hundred
    /// times, the i-th wakeup waiting i x 10 us for a CPU; the second
    /// waking of one sleep does not restart the clock, a waking of a
    /// running task is no wakeup, and three preemptions wait 2, 4, 6 us.
    #[test]
    fn wakeup_latency_and_runqueue_delay_of_a_fixture_stream() {
        use Event::*;
        let us = 1_000u64;
        let start = 1_000_000 * us;
        let (pid, numalab) = (20, 10);
        let mut ev = vec![
            Fork {
                time: start,
                cpu: 0,
                pid,
                ppid: numalab,
                tid: 20,
                ptid: numalab,
            },
            Fork {
                time: start,
                cpu: 1,
                pid,
                ppid: numalab,
                tid: 21,
                ptid: 20,
            },
            SwitchIn {
                time: start,
                cpu: 1,
                pid,
                tid: 21,
            },
        ];
        let mut t = start + 10 * us;
        for i in 1..=100u64 {
            ev.push(SwitchIn {
                time: t,
                cpu: 0,
                pid,
                tid: 20,
            });
            if i <= 3 {
                // Preempted, back after 2i us: a run-queue delay.
                ev.push(SwitchOut {
                    time: t + us,
                    cpu: 0,
                    pid,
                    tid: 20,
                    preempted: true,
                    guessed: false,
                });
                ev.push(SwitchIn {
                    time: t + us + 2 * i * us,
                    cpu: 0,
                    pid,
                    tid: 20,
                });
                t += 2 * i * us;
            }
            // A waking while it runs is no wakeup.
            ev.push(Waking {
                time: t + 2 * us,
                cpu: 1,
                waker: 21,
                wakee: 20,
                prev_cpu: 0,
            });
            ev.push(SwitchOut {
                time: t + 5 * us,
                cpu: 0,
                pid,
                tid: 20,
                preempted: false,
                guessed: false,
            });
            let woken = t + 100 * us;
            ev.push(Waking {
                time: woken,
                cpu: 1,
                waker: 21,
                wakee: 20,
                prev_cpu: 0,
            });
            // A second waking of the same sleep: the first one counts.
            ev.push(Waking {
                time: woken + i * us / 2,
                cpu: 1,
                waker: 21,
                wakee: 20,
                prev_cpu: 0,
            });
            t = woken + i * 10 * us;
        }
        ev.push(SwitchIn {
            time: t,
            cpu: 0,
            pid,
            tid: 20,
        });
        ev.push(Exit {
            time: t + us,
            cpu: 0,
            pid,
            tid: 20,
        });
        let tr = analyse(&ev, numalab, start, &topo(), Switches::TaskTree, None);
        let a = tr.tasks.iter().find(|x| x.tid == 20).unwrap();
        let w = a.wakeup_latency.unwrap();
        assert_eq!(w.count, 100);
        assert!((w.mean_ms - 0.505).abs() < 1e-9, "{w:?}");
        // Nearest rank: the 50th and the 99th of 100.
        assert!(
            (w.p50_ms - 0.5).abs() < 1e-9 && (w.p99_ms - 0.99).abs() < 1e-9,
            "{w:?}"
        );
        assert!((w.max_ms - 1.0).abs() < 1e-9, "{w:?}");
        let q = a.runqueue_delay.unwrap();
        assert_eq!(q.count, 3);
        assert!(
            (q.mean_ms - 0.004).abs() < 1e-9 && (q.max_ms - 0.006).abs() < 1e-9,
            "{q:?}"
        );
        assert_eq!(a.preemptions, 3);
        assert_eq!(a.wakeups.total(), 100);
        // Switches of the task tree only: whether a CPU was idle is unknown.
        assert_eq!(a.woken_on_idle_cpu, None);
        let m = metrics(&tr);
        assert!((m["sched_wakeup_latency_max_ms"].value - 1.0).abs() < 1e-9);
    }

    /// A waking of a preempted task is none (it is on its run queue).
    /// A switch out the kernel did not record (`guessed`) is taken as a
    /// preemption, unless a waking follows: then the task slept there
    /// and its wait is a wakeup latency from the waking (taken as a
    /// run-queue delay it would be a whole sleep).
    #[test]
    fn a_preempted_tasks_waking_is_none_and_a_waking_tells_a_guessed_switch_out() {
        use Event::*;
        let us = 1_000u64;
        let start = 1_000_000 * us;
        let (pid, numalab) = (20, 10);
        let sw_in = |time| SwitchIn {
            time,
            cpu: 0,
            pid,
            tid: 20,
        };
        let sw_out = |time, preempted, guessed| SwitchOut {
            time,
            cpu: 0,
            pid,
            tid: 20,
            preempted,
            guessed,
        };
        let wake = |time| Waking {
            time,
            cpu: 1,
            waker: 21,
            wakee: 20,
            prev_cpu: 0,
        };
        let fork = |tid, ptid| Fork {
            time: start,
            cpu: 0,
            pid,
            ppid: numalab,
            tid,
            ptid,
        };
        let t = start + 10 * us;
        let ev = vec![
            fork(20, numalab),
            fork(21, 20),
            sw_in(t),
            sw_out(t + us, true, false),
            wake(t + 2 * us),
            sw_in(t + 5 * us),
            sw_out(t + 10 * us, true, true),
            wake(t + 990 * us),
            sw_in(t + 1000 * us),
            sw_out(t + 1010 * us, true, true),
            sw_in(t + 1016 * us),
            Exit {
                time: t + 1040 * us,
                cpu: 0,
                pid,
                tid: 20,
            },
        ];
        let tr = analyse(&ev, numalab, start, &topo(), Switches::TaskTree, None);
        let a = tr.tasks.iter().find(|x| x.tid == 20).unwrap();
        let w = a.wakeup_latency.unwrap();
        assert_eq!(w.count, 1, "{w:?}");
        assert!((w.max_ms - 0.010).abs() < 1e-9, "{w:?}");
        let q = a.runqueue_delay.unwrap();
        assert_eq!(q.count, 2, "{q:?}");
        assert!((q.max_ms - 0.006).abs() < 1e-9, "{q:?}");
        assert_eq!(a.preemptions, 2);
    }

    /// A waking from another CPU of a task still on its CPU races its
    /// switch out: if it switches out asleep, the waking woke it,
    /// runnable from the switch out whichever event the clocks put
    /// first; if it switches out runnable, or the waking came from its
    /// own CPU, the waking found it queued and woke nothing; a waking
    /// after the switch out replaces one that came while it ran.
    #[test]
    fn a_waking_racing_the_switch_out_counts_in_either_order() {
        use Event::*;
        let us = 1_000u64;
        let start = 1_000_000 * us;
        let (pid, numalab) = (20, 10);
        let sw_in = |time| SwitchIn {
            time,
            cpu: 0,
            pid,
            tid: 20,
        };
        let sw_out = |time, preempted| SwitchOut {
            time,
            cpu: 0,
            pid,
            tid: 20,
            preempted,
            guessed: false,
        };
        let wake = |time, cpu| Waking {
            time,
            cpu,
            waker: 21,
            wakee: 20,
            prev_cpu: 0,
        };
        let fork = |tid| Fork {
            time: start,
            cpu: 0,
            pid,
            ppid: numalab,
            tid,
            ptid: if tid == 20 { numalab } else { 20 },
        };
        let t = start + 10 * us;
        let ev = vec![
            fork(20),
            fork(21),
            sw_in(t),
            // Waking first, then the switch out asleep: 7 us from it.
            wake(t + 10 * us, 1),
            sw_out(t + 11 * us, false),
            sw_in(t + 18 * us),
            // Switch out first, then the waking: 5 us from the waking.
            sw_out(t + 30 * us, false),
            wake(t + 31 * us, 1),
            sw_in(t + 36 * us),
            // Woken while running, switched out runnable: a preemption.
            wake(t + 40 * us, 1),
            sw_out(t + 41 * us, true),
            sw_in(t + 43 * us),
            // Woken from its own CPU while running: it kept running; its
            // next sleep is woken 100 us after it fell asleep.
            wake(t + 50 * us, 0),
            sw_out(t + 60 * us, false),
            wake(t + 160 * us, 1),
            sw_in(t + 163 * us),
            // Woken from another CPU while running, but ttwu_runnable
            // won: its next sleep's own waking replaces that one.
            wake(t + 200 * us, 1),
            sw_out(t + 300 * us, false),
            wake(t + 500 * us, 1),
            sw_in(t + 504 * us),
            Exit {
                time: t + 600 * us,
                cpu: 0,
                pid,
                tid: 20,
            },
        ];
        let tr = analyse(&ev, numalab, start, &topo(), Switches::TaskTree, None);
        let a = tr.tasks.iter().find(|x| x.tid == 20).unwrap();
        let w = a.wakeup_latency.unwrap();
        assert_eq!(w.count, 4, "{w:?}");
        assert!((w.max_ms - 0.007).abs() < 1e-9, "{w:?}");
        assert!(
            (w.mean_ms - (7.0 + 5.0 + 3.0 + 4.0) / 4.0 / 1e3).abs() < 1e-9,
            "{w:?}"
        );
        let q = a.runqueue_delay.unwrap();
        assert_eq!(q.count, 1, "{q:?}");
        assert!((q.max_ms - 0.002).abs() < 1e-9, "{q:?}");
    }

    #[test]
    fn times_migrations_wakeups_and_new_task_cpus() {
        use Event::*;
        let ms = 1_000_000u64;
        let start = 1000 * ms;
        let numalab = 10;
        let ev = vec![
            // numalab itself: left out.
            SwitchIn {
                time: start,
                cpu: 0,
                pid: numalab,
                tid: numalab,
            },
            Fork {
                time: start + ms,
                cpu: 0,
                pid: 20,
                ppid: numalab,
                tid: 20,
                ptid: numalab,
            },
            Comm {
                time: start + 2 * ms,
                cpu: 1,
                pid: 20,
                tid: 20,
                comm: "work".into(),
                exec: true,
            },
            // out of order on purpose: sorted by the analysis
            SwitchOut {
                time: start + 5 * ms,
                cpu: 1,
                pid: 20,
                tid: 20,
                preempted: false,
                guessed: false,
            },
            SwitchIn {
                time: start + ms,
                cpu: 1,
                pid: 20,
                tid: 20,
            },
            Waking {
                time: start + 9 * ms,
                cpu: 4,
                waker: 21,
                wakee: 20,
                prev_cpu: 1,
            },
            // woke on its SMT sibling (1 -> 0), 2 ms, an idle CPU
            SwitchOut {
                time: start + 10 * ms,
                cpu: 0,
                pid: 0,
                tid: 0,
                preempted: false,
                guessed: false,
            },
            SwitchIn {
                time: start + 10 * ms,
                cpu: 0,
                pid: 20,
                tid: 20,
            },
            SwitchOut {
                time: start + 12 * ms,
                cpu: 0,
                pid: 20,
                tid: 20,
                preempted: true,
                guessed: false,
            },
            // preempted, then resumed on node 1: a cross-node migration,
            // not a wakeup
            SwitchIn {
                time: start + 13 * ms,
                cpu: 5,
                pid: 20,
                tid: 20,
            },
            Exit {
                time: start + 16 * ms,
                cpu: 5,
                pid: 20,
                tid: 20,
            },
            Fork {
                time: start + 3 * ms,
                cpu: 1,
                pid: 20,
                ppid: numalab,
                tid: 21,
                ptid: 20,
            },
            SwitchIn {
                time: start + 4 * ms,
                cpu: 4,
                pid: 20,
                tid: 21,
            },
            Exit {
                time: start + 9 * ms,
                cpu: 4,
                pid: 20,
                tid: 21,
            },
            // its final switch (CPU-wide records have it): runs to there
            SwitchOut {
                time: start + 9 * ms + ms / 2,
                cpu: 4,
                pid: 20,
                tid: 21,
                preempted: false,
                guessed: false,
            },
            Lost { count: 3 },
        ];
        let t = analyse(&ev, numalab, start, &topo(), Switches::CpuWide, None);
        assert_eq!(t.lost_events, 3);
        assert_eq!(t.tasks.len(), 2);
        let a = &t.tasks[0];
        assert_eq!((a.tid, a.comm.as_str()), (20, "work"));
        assert!((a.run_s - 0.009).abs() < 1e-9, "{}", a.run_s); // 4 + 2 + 3 ms
        assert!((a.cpu_s[&1] - 0.004).abs() < 1e-9);
        assert!((a.node_s[0] - 0.006).abs() < 1e-9 && (a.node_s[1] - 0.003).abs() < 1e-9);
        assert_eq!(a.migrations.smt_sibling, 1);
        assert_eq!(a.migrations.cross_node, 1);
        assert_eq!(a.wakeups.total(), 1);
        assert_eq!(a.wakeups.smt_sibling, 1);
        assert_eq!(a.woken_near_waker.cross_node, 1); // waker on CPU 4
        assert_eq!(a.preemptions, 1);
        assert_eq!(a.woken_on_idle_cpu, Some(1));
        // Woken at 9 ms, on a CPU at 10; preempted at 12, back at 13.
        let w = a.wakeup_latency.unwrap();
        assert_eq!((w.count, w.max_ms), (1, 1.0));
        let q = a.runqueue_delay.unwrap();
        assert_eq!((q.count, q.mean_ms), (1, 1.0));
        assert_eq!(t.tasks[1].wakeup_latency, None);
        assert_eq!(a.forked_s, Some(0.001));
        assert_eq!(a.exited_s, Some(0.016));
        let b = &t.tasks[1];
        assert_eq!((b.tid, b.pid, b.parent_tid), (21, 20, Some(20)));
        assert_eq!(b.comm, "work", "a thread is named as its creator");
        assert!((b.run_s - 0.0055).abs() < 1e-9, "{}", b.run_s);
        assert_eq!(b.exited_s, Some(0.009));
        assert_eq!(t.new_task_cpus, vec![1, 4]);
        assert_eq!(t.migration_matrix, vec![vec![1, 1], vec![0, 0]]);
        let m = metrics(&t);
        assert_eq!(m["sched_migrations"].value, 2.0);
        assert_eq!(m["sched_migrations_cross_node"].value, 1.0);
        assert_eq!(m["sched_wakeup_prev_llc_pct"].value, 100.0);
        assert_eq!(m["sched_wakeup_idle_cpu_pct"].value, 100.0);
        assert_eq!(m["sched_wakeup_latency_ms"].value, 1.0);
        assert_eq!(m["sched_runqueue_delay_max_ms"].value, 1.0);
        let dir = std::env::temp_dir().join(format!("numalab-trace-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("e.tsv");
        write_events(&p, &ev, start, numalab).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        // numalab's own switch is left out.
        assert_eq!(text.lines().count(), ev.len());
        let back = export::read_events(&text).unwrap();
        assert_eq!(back.len(), ev.len() - 1);
        let sched = export::from_events(&back, 0, 0);
        assert_eq!(sched.slices.len(), 4, "{:?}", sched.slices);
        assert_eq!(sched.migrations.len(), 2);
        assert_eq!(sched.wakeups.len(), 1);
        assert_eq!(sched.wakeups[0].from_cpu, 4);
        let json = export::chrome_json(&topo(), "t", &sched);
        assert!(json.contains("\"ph\":\"X\",\"name\":\"work\""), "{json}");
        assert!(json.contains("\"ph\":\"s\"") && json.contains("\"ph\":\"f\""));
        serde_json::from_str::<serde_json::Value>(&json).unwrap();
        // The same schedule as ftrace text: how each stretch ended, the
        // waker's line on its CPU.
        assert_eq!(
            sched.slices.iter().map(|s| s.end).collect::<Vec<_>>(),
            [
                export::SliceEnd::Slept,
                export::SliceEnd::Exited,
                export::SliceEnd::Preempted,
                export::SliceEnd::Exited
            ]
        );
        let ft = systrace::systrace(&topo(), "t", &sched);
        let c = systrace_check::check(&ft).unwrap_or_else(|e| panic!("{e}\n{ft}"));
        assert_eq!((c.wakings, c.migrations, c.switches), (1, 2, 8), "{ft}");
        assert!(ft.contains("            work-21      (     20) [004] d..2.     0.009000: sched_waking: comm=work pid=20 prio=120 target_cpu=001\n"), "{ft}");
        assert!(ft.contains("[004] d..2.     0.009500: sched_switch: prev_comm=work prev_pid=21 prev_prio=120 prev_state=X ==> next_comm=swapper/4"), "{ft}");
        assert!(ft.contains("[005] d..2.     0.016000: sched_switch: prev_comm=work prev_pid=20 prev_prio=120 prev_state=Z ==> next_comm=swapper/5"), "{ft}");
        assert!(text.contains("1000000\t0\tfork\t20\t20\t10\t10"), "{text}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
