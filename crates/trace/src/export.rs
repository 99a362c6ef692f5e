//! A schedule as Chrome / Perfetto trace-event JSON, the same for a real
//! traced run (`numalab trace export`) and a simulated one (`numalab sim
//! ... --trace`): one track per CPU, the tracks of a node grouped as one
//! "process"; a slice per stretch a task ran on a CPU; wakeups as flows
//! from the waker's CPU to the wakee's next slice; migrations as instants
//! on the CPU a task arrived at; counters for memory per node and pages
//! migrated over time. Opens in ui.perfetto.dev and chrome://tracing.
//! [`Format::Perfetto`] writes the same schedule as ftrace text instead
//! ([`crate::systrace`]).

use crate::time_of;
use numalab_linux::perf::Event;
use numalab_record::RunRecord;
use numalab_topology::Topology;
use serde::Serialize;
use std::collections::BTreeMap;

/// How a stretch on a CPU ended: the task's state as it left the CPU
/// (`sched_switch`'s `prev_state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SliceEnd {
    /// Switched out while runnable (`R+`).
    Preempted,
    /// Switched out to sleep (`S`).
    Slept,
    /// Its final switch, after it exited.
    Exited,
    /// Still running when the trace ended (`R`).
    Running,
}

/// A task on a CPU from `start_ns` to `end_ns`.
#[derive(Debug, Clone, PartialEq)]
pub struct Slice {
    pub cpu: u32,
    pub tid: u32,
    pub pid: u32,
    pub name: String,
    pub start_ns: u64,
    pub end_ns: u64,
    pub end: SliceEnd,
}

/// A wakeup: `waker` on `from_cpu` at `at_ns` woke `wakee`, which had
/// last run on `prev_cpu` and next ran on `to_cpu` from `to_ns`.
#[derive(Debug, Clone, PartialEq)]
pub struct Wakeup {
    pub from_cpu: u32,
    pub at_ns: u64,
    pub to_cpu: u32,
    pub to_ns: u64,
    pub wakee: u32,
    pub waker: u32,
    pub prev_cpu: u32,
}

/// A task arriving on `cpu` from another CPU.
#[derive(Debug, Clone, PartialEq)]
pub struct Migration {
    pub cpu: u32,
    pub at_ns: u64,
    pub tid: u32,
    pub from_cpu: u32,
}

/// A counter track: its name and values over time (several series).
#[derive(Debug, Clone, PartialEq)]
pub struct Counter {
    pub name: String,
    pub points: Vec<(u64, Vec<(String, f64)>)>,
}

/// Everything a trace file shows.
#[derive(Debug, Clone, Default)]
pub struct Schedule {
    pub slices: Vec<Slice>,
    pub wakeups: Vec<Wakeup>,
    pub migrations: Vec<Migration>,
    pub counters: Vec<Counter>,
    /// Every task's process and command name (the last it had), by tid:
    /// wakers that never ran in the trace included.
    pub tasks: BTreeMap<u32, (u32, String)>,
}

/// The schedule of a real run, from its raw events (times in the events'
/// clock, `start_ns` the run's start), with the record's counters.
pub fn from_events(events: &[Event], start_ns: u64, numalab_pid: u32) -> Schedule {
    let mut ev: Vec<&Event> = events.iter().collect();
    ev.sort_by_key(|e| time_of(e));
    let mut b = Builder {
        start_ns,
        ..Builder::default()
    };
    for e in ev {
        match e {
            Event::Fork { pid, tid, ptid, .. } if *pid != numalab_pid => {
                if let Some(n) = b.names.get(ptid).cloned() {
                    b.names.insert(*tid, n);
                }
                b.pids.insert(*tid, *pid);
            }
            Event::Comm { tid, comm, pid, .. } if *pid != numalab_pid => {
                b.names.insert(*tid, comm.clone());
                b.pids.insert(*tid, *pid);
            }
            Event::SwitchIn {
                time,
                cpu,
                pid,
                tid,
            } if *pid != numalab_pid => b.switch_in(*time, *cpu, *pid, *tid),
            Event::SwitchOut {
                time,
                cpu,
                tid,
                pid,
                preempted,
                ..
            } if *pid != numalab_pid => b.switch_out(*time, *cpu, *tid, *preempted),
            Event::Exit { time, tid, .. } => {
                // The final switch, when recorded, ends its last slice.
                b.exited.insert(*tid, *time);
            }
            Event::Waking {
                time,
                cpu,
                wakee,
                waker,
                prev_cpu,
            } => {
                b.waking.insert(*wakee, (*cpu, *time, *waker, *prev_cpu));
            }
            _ => {}
        }
    }
    b.finish()
}

/// The schedule of a real run as its events are read, and what is known
/// of its tasks so far.
#[derive(Default)]
struct Builder {
    start_ns: u64,
    s: Schedule,
    names: BTreeMap<u32, String>,
    running: BTreeMap<u32, (u32, u32, u64)>, // tid -> (cpu, pid, since)
    last_cpu: BTreeMap<u32, u32>,
    // wakee -> (waker's cpu, at, waker, the wakee's last cpu)
    waking: BTreeMap<u32, (u32, u64, u32, u32)>,
    exited: BTreeMap<u32, u64>,
    pids: BTreeMap<u32, u32>,
}

impl Builder {
    /// A time in the events' clock relative to the run's start.
    fn rel(&self, t: u64) -> u64 {
        t.saturating_sub(self.start_ns)
    }

    /// The slice of `tid`, if it is running, ended at `at` as `how`.
    fn end(&mut self, tid: u32, at: u64, how: SliceEnd) {
        if let Some((cpu, pid, since)) = self.running.remove(&tid) {
            self.s.slices.push(Slice {
                cpu,
                tid,
                pid,
                name: self
                    .names
                    .get(&tid)
                    .cloned()
                    .unwrap_or_else(|| format!("task {tid}")),
                start_ns: self.rel(since),
                end_ns: self.rel(at),
                end: how,
            });
        }
    }

    /// `tid` switched in on `cpu`: a migration if it last ran on another
    /// CPU, the wakeup that led here, and a slice begun.
    fn switch_in(&mut self, time: u64, cpu: u32, pid: u32, tid: u32) {
        if let Some(&from) = self.last_cpu.get(&tid) {
            if from != cpu {
                self.s.migrations.push(Migration {
                    cpu,
                    at_ns: self.rel(time),
                    tid,
                    from_cpu: from,
                });
            }
        }
        if let Some((wcpu, at, waker, prev_cpu)) = self.waking.remove(&tid) {
            self.s.wakeups.push(Wakeup {
                from_cpu: wcpu,
                at_ns: self.rel(at),
                to_cpu: cpu,
                to_ns: self.rel(time),
                wakee: tid,
                waker,
                prev_cpu,
            });
        }
        self.pids.insert(tid, pid);
        self.running.insert(tid, (cpu, pid, time));
    }

    /// `tid` switched out of `cpu`: its slice ended as it left.
    fn switch_out(&mut self, time: u64, cpu: u32, tid: u32, preempted: bool) {
        let how = if self.exited.contains_key(&tid) {
            SliceEnd::Exited
        } else if preempted {
            SliceEnd::Preempted
        } else {
            SliceEnd::Slept
        };
        self.end(tid, time, how);
        self.last_cpu.insert(tid, cpu);
    }

    /// The schedule: the slices of exited tasks still running ended, and
    /// every named task's process and name.
    fn finish(mut self) -> Schedule {
        for (tid, at) in std::mem::take(&mut self.exited) {
            self.end(tid, at, SliceEnd::Exited);
        }
        let names = &self.names;
        self.s.tasks = self
            .pids
            .into_iter()
            .filter_map(|(tid, pid)| Some((tid, (pid, names.get(&tid)?.clone()))))
            .collect();
        self.s
    }
}

/// Counter tracks from a record's samples: memory per node (MiB, all
/// processes) and pages migrated (from the start).
pub fn counters(r: &RunRecord) -> Vec<Counter> {
    let nodes: Vec<u32> = r.machine.topology.nodes.iter().map(|n| n.id).collect();
    let mut mem = Counter {
        name: "memory per node (MiB)".into(),
        points: Vec::new(),
    };
    let mut mig = Counter {
        name: "pages migrated".into(),
        points: Vec::new(),
    };
    for s in &r.series.samples {
        let t = (s.t_s * 1e9) as u64;
        if !s.memory_bytes.is_empty() {
            let mut per = vec![0u64; nodes.len()];
            for p in &s.memory_bytes {
                for (i, b) in p.iter().enumerate() {
                    if let Some(x) = per.get_mut(i) {
                        *x += b;
                    }
                }
            }
            mem.points.push((
                t,
                per.iter()
                    .zip(&nodes)
                    .map(|(b, n)| (format!("node {n}"), *b as f64 / (1u64 << 20) as f64))
                    .collect(),
            ));
        }
        if let Some(v) = s.vmstat.get("numa_pages_migrated") {
            mig.points.push((t, vec![("pages".into(), *v as f64)]));
        }
    }
    [mem, mig]
        .into_iter()
        .filter(|c| !c.points.is_empty())
        .collect()
}

/// The formats a schedule is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// Chrome trace-event JSON ([`chrome_json`]): slices on a track per
    /// CPU grouped by node, wakeup flows, migration instants, counters.
    #[default]
    Chrome,
    /// ftrace text ([`crate::systrace::systrace`]): Perfetto's CPU
    /// scheduling tracks, thread states and wakeups.
    Perfetto,
}

impl Format {
    /// `s` on `topo` in this format.
    pub fn render(self, topo: &Topology, title: &str, s: &Schedule) -> String {
        match self {
            Format::Chrome => chrome_json(topo, title, s),
            Format::Perfetto => crate::systrace::systrace(topo, title, s),
        }
    }

    /// The extension of the simulator's trace file beside its record.
    pub fn sim_extension(self) -> &'static str {
        match self {
            Format::Chrome => "trace",
            Format::Perfetto => "systrace",
        }
    }
}

/// One trace event, its fields in the order the trace-event format lists
/// them; those a phase does not have are left out.
#[derive(Serialize)]
struct TraceEvent<'a> {
    ph: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    bp: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    s: Option<&'static str>,
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    cat: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<usize>,
    pid: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    tid: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ts: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dur: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    args: Option<Args<'a>>,
}

impl<'a> TraceEvent<'a> {
    fn new(ph: &'static str, name: &'a str, pid: u32) -> TraceEvent<'a> {
        TraceEvent {
            ph,
            bp: None,
            s: None,
            name,
            cat: None,
            id: None,
            pid,
            tid: None,
            ts: None,
            dur: None,
            args: None,
        }
    }
}

/// An event's `args`: named numbers or a name, in the order given.
enum Args<'a> {
    Name(String),
    Numbers(Vec<(&'a str, f64)>),
}

impl Serialize for Args<'_> {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self {
            Args::Name(n) => {
                let mut m = ser.serialize_map(Some(1))?;
                m.serialize_entry("name", n)?;
                m.end()
            }
            Args::Numbers(v) => {
                let mut m = ser.serialize_map(Some(v.len()))?;
                for (k, x) in v {
                    // Whole numbers (ids, CPUs, indices) as integers.
                    if x.fract() == 0.0 && x.abs() < 9.0e15 {
                        m.serialize_entry(k, &(*x as i64))?;
                    } else {
                        m.serialize_entry(k, x)?;
                    }
                }
                m.end()
            }
        }
    }
}

/// The trace-event JSON of `s` on `topo` (Chrome's trace-event format:
/// an object with `traceEvents`, one event per line).
pub fn chrome_json(topo: &Topology, title: &str, s: &Schedule) -> String {
    let mut ev: Vec<TraceEvent> = track_names(topo);
    schedule_events(topo, s, &mut ev);
    counter_events(topo, s, &mut ev);
    write_json(title, &ev)
}

/// Microseconds, to the nanosecond.
fn us(ns: u64) -> Option<f64> {
    Some(ns as f64 / 1e3)
}

/// The metadata events naming and ordering the tracks: a "process" per
/// node, a track per CPU.
fn track_names(topo: &Topology) -> Vec<TraceEvent<'static>> {
    let mut ev: Vec<TraceEvent> = Vec::new();
    for n in &topo.nodes {
        let mut e = TraceEvent::new("M", "process_name", n.id);
        e.args = Some(Args::Name(format!("node {}", n.id)));
        ev.push(e);
        let mut e = TraceEvent::new("M", "process_sort_index", n.id);
        e.args = Some(Args::Numbers(vec![("sort_index", n.id as f64)]));
        ev.push(e);
    }
    for c in &topo.cpus {
        let mut e = TraceEvent::new("M", "thread_name", c.node);
        e.tid = Some(c.id);
        e.args = Some(Args::Name(format!("CPU {}", c.id)));
        ev.push(e);
        let mut e = TraceEvent::new("M", "thread_sort_index", c.node);
        e.tid = Some(c.id);
        e.args = Some(Args::Numbers(vec![("sort_index", c.id as f64)]));
        ev.push(e);
    }
    ev
}

/// The slices, wakeup flows and migration instants of `s`, added to `ev`.
fn schedule_events<'a>(topo: &Topology, s: &'a Schedule, ev: &mut Vec<TraceEvent<'a>>) {
    let node_of = |cpu: u32| topo.node_of_cpu(cpu).unwrap_or(0);
    for x in &s.slices {
        let mut e = TraceEvent::new("X", &x.name, node_of(x.cpu));
        e.cat = Some("task");
        e.tid = Some(x.cpu);
        e.ts = us(x.start_ns);
        e.dur = us(x.end_ns.saturating_sub(x.start_ns));
        e.args = Some(Args::Numbers(vec![
            ("tid", x.tid as f64),
            ("pid", x.pid as f64),
        ]));
        ev.push(e);
    }
    for (i, w) in s.wakeups.iter().enumerate() {
        // A flow from the waker's CPU to the slice the wakee starts.
        let mut e = TraceEvent::new("s", "wakeup", node_of(w.from_cpu));
        e.cat = Some("wakeup");
        e.id = Some(i);
        e.tid = Some(w.from_cpu);
        e.ts = us(w.at_ns);
        ev.push(e);
        let mut e = TraceEvent::new("f", "wakeup", node_of(w.to_cpu));
        e.bp = Some("e");
        e.cat = Some("wakeup");
        e.id = Some(i);
        e.tid = Some(w.to_cpu);
        e.ts = us(w.to_ns);
        e.args = Some(Args::Numbers(vec![("wakee", w.wakee as f64)]));
        ev.push(e);
    }
    for m in &s.migrations {
        let mut e = TraceEvent::new("i", "migration", node_of(m.cpu));
        e.s = Some("t");
        e.cat = Some("migration");
        e.tid = Some(m.cpu);
        e.ts = us(m.at_ns);
        e.args = Some(Args::Numbers(vec![
            ("tid", m.tid as f64),
            ("from_cpu", m.from_cpu as f64),
        ]));
        ev.push(e);
    }
}

/// The counters of `s`, added to `ev` in a "process" of their own, after
/// the nodes.
fn counter_events<'a>(topo: &Topology, s: &'a Schedule, ev: &mut Vec<TraceEvent<'a>>) {
    let cpid = topo.nodes.iter().map(|n| n.id).max().unwrap_or(0) + 1;
    if !s.counters.is_empty() {
        let mut e = TraceEvent::new("M", "process_name", cpid);
        e.args = Some(Args::Name("memory".into()));
        ev.push(e);
    }
    for c in &s.counters {
        for (t, values) in &c.points {
            let mut e = TraceEvent::new("C", &c.name, cpid);
            e.ts = us(*t);
            e.args = Some(Args::Numbers(
                values.iter().map(|(k, v)| (k.as_str(), *v)).collect(),
            ));
            ev.push(e);
        }
    }
}

/// The file: its opening with `title` as the source, then one event per
/// line.
fn write_json(title: &str, ev: &[TraceEvent]) -> String {
    #[derive(Serialize)]
    struct Other<'a> {
        source: &'a str,
    }
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Head<'a> {
        display_time_unit: &'static str,
        other_data: Other<'a>,
    }
    let head = Head {
        display_time_unit: "ms",
        other_data: Other { source: title },
    };
    // The file's opening, then one event per line. Serialising these
    // types cannot fail (no maps with other keys than strings); a NaN
    // counter value is written as null.
    let mut out = serde_json::to_string(&head).unwrap_or_else(|_| "{".into());
    out.pop(); // its closing brace: traceEvents follows
    out.push_str(",\"traceEvents\":[\n");
    for (i, e) in ev.iter().enumerate() {
        if i > 0 {
            out.push_str(",\n");
        }
        out.push_str(&serde_json::to_string(e).unwrap_or_default());
    }
    out.push_str("\n]}\n");
    out
}

/// A line of a `<id>.sched.tsv` file that is not an event: its number
/// (from 1) and its text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {text:?} is not an event")]
pub struct NotAnEvent {
    pub line: usize,
    pub text: String,
}

/// Parse a `<id>.sched.tsv` file back into events (times relative to the
/// run's start, so `start_ns` is 0 for them).
pub fn read_events(text: &str) -> Result<Vec<Event>, NotAnEvent> {
    let mut out = Vec::new();
    for (i, l) in text.lines().enumerate() {
        if l.starts_with('#') || l.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = l.split('\t').collect();
        let bad = || NotAnEvent {
            line: i + 1,
            text: l.to_string(),
        };
        if f.len() < 7 {
            return Err(bad());
        }
        let num = |s: &str| s.parse::<u64>().map_err(|_| bad());
        let n32 = |s: &str| s.parse::<u32>().map_err(|_| bad());
        if f[2] == "lost" {
            out.push(Event::Lost { count: num(f[5])? });
            continue;
        }
        let time = f[0].parse::<i64>().map_err(|_| bad())?.max(0) as u64;
        let cpu = n32(f[1])?;
        let tid = n32(f[3])?;
        out.push(match f[2] {
            "in" => Event::SwitchIn {
                time,
                cpu,
                pid: n32(f[4])?,
                tid,
            },
            "out" => Event::SwitchOut {
                time,
                cpu,
                pid: n32(f[4])?,
                tid,
                preempted: f[5] != "S",
                guessed: f[5] == "?",
            },
            "fork" => Event::Fork {
                time,
                cpu,
                pid: n32(f[4])?,
                tid,
                ptid: n32(f[5])?,
                ppid: n32(f[6])?,
            },
            "exec" | "comm" => Event::Comm {
                time,
                cpu,
                pid: n32(f[4])?,
                tid,
                comm: f[5].to_string(),
                exec: f[2] == "exec",
            },
            "exit" => Event::Exit {
                time,
                cpu,
                pid: n32(f[4])?,
                tid,
            },
            "waking" => Event::Waking {
                time,
                cpu,
                wakee: tid,
                waker: n32(f[5])?,
                prev_cpu: n32(f[6])?,
            },
            _ => return Err(bad()),
        });
    }
    Ok(out)
}
