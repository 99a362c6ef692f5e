//! `--trace`: the simulated schedule written by the same exporter as a
//! real traced run (numalab-trace's `export`): a track per CPU grouped by
//! node, a slice per stretch a task ran, migrations as instants, and the
//! record's memory per node and pages migrated as counters, so a
//! simulated and a real schedule open side by side in Perfetto. As
//! Chrome trace-event JSON or, with `--trace-format perfetto`, as ftrace
//! text (sched_switch, sched_migrate_task) for Perfetto's CPU tracks and
//! thread states; the simulator has no wakeup events to give.
//!
//! The same spans, turned into the events a real trace records (forks,
//! names, switches in and out, exits), go through numalab-trace's
//! `analyse`, the function that reads a real run's events: the record's
//! `sched` section (time per CPU and node, migrations by distance, wakeup
//! placements, run-queue delays, the CPUs chosen for new tasks) and its
//! `sched_*` metrics mean the same for a simulated run as for a real one,
//! and `numalab show --sched` prints either.

use crate::engine::{Parent, Span, World};
use numalab_linux::perf::{Event, Switches};
use numalab_record::{RunRecord, SchedTrace};
use numalab_trace::export::{self, Migration, Schedule, Slice, SliceEnd};
use std::collections::BTreeMap;

/// How a simulated run's `sched` section was made, as `method` says it.
pub const METHOD: &str = "simulated: every switch of every task from the simulator's schedule (no waker's CPU: the model has no wakeup events)";

/// The `sched` section of a finished run: its spans as a real trace's
/// events (task n of process p as tid n + 1, pid p + 1: 0 is the idle
/// task), read by the same analysis as a real run's.
pub fn sched(w: &World, spans: &[Span]) -> SchedTrace {
    let mut ev = Vec::with_capacity(3 * w.tasks.len() + 2 * spans.len());
    let id = |n: usize| n as u32 + 1;
    // Creations first: at the same time as a first switch in, the sort
    // (stable) keeps them before it.
    for (i, t) in w.tasks.iter().enumerate() {
        let (tid, pid) = (id(i), id(t.process));
        let (ptid, ppid) = match t.parent {
            Parent::Task(p) => (id(p), id(w.tasks[p].process)),
            Parent::Cpu(_) => (0, 0),
        };
        let cpu = t.cpu as u32;
        let time = t.start_ns;
        ev.push(Event::Fork {
            time,
            cpu,
            pid,
            ppid,
            tid,
            ptid,
        });
        ev.push(Event::Comm {
            time,
            cpu,
            pid,
            tid,
            comm: t.name.clone(),
            exec: t.exec,
        });
    }
    for sp in spans {
        let (tid, pid, cpu) = (id(sp.task), id(w.tasks[sp.task].process), sp.cpu as u32);
        ev.push(Event::SwitchIn {
            time: sp.start,
            cpu,
            pid,
            tid,
        });
        ev.push(Event::SwitchOut {
            time: sp.end,
            cpu,
            pid,
            tid,
            preempted: matches!(sp.end_state, SliceEnd::Preempted | SliceEnd::Running),
            guessed: false,
        });
        if sp.end_state == SliceEnd::Exited {
            ev.push(Event::Exit {
                time: sp.end,
                cpu,
                pid,
                tid,
            });
        }
    }
    let mut t = numalab_trace::analyse(&ev, u32::MAX, 0, &w.m.topology, Switches::TaskTree, None);
    t.method = METHOD.to_string();
    t
}

/// Render the spans of a finished run in `format`.
pub fn render(w: &World, spans: &[Span], rec: &RunRecord, format: export::Format) -> String {
    let mut order: Vec<&Span> = spans.iter().collect();
    order.sort_by_key(|s| (s.start, s.cpu));
    // In ftrace text pid 0 is the idle task: there the simulator's task
    // and process n are n + 1.
    let id = |n: usize| match format {
        export::Format::Chrome => n as u32,
        export::Format::Perfetto => n as u32 + 1,
    };
    let mut s = Schedule::default();
    let mut last: BTreeMap<usize, usize> = BTreeMap::new();
    for sp in order {
        let t = &w.tasks[sp.task];
        if let Some(&from) = last.get(&sp.task) {
            if from != sp.cpu {
                s.migrations.push(Migration {
                    cpu: sp.cpu as u32,
                    at_ns: sp.start,
                    tid: id(sp.task),
                    from_cpu: from as u32,
                });
            }
        }
        last.insert(sp.task, sp.cpu);
        s.slices.push(Slice {
            cpu: sp.cpu as u32,
            tid: id(sp.task),
            pid: id(t.process),
            name: t.name.clone(),
            start_ns: sp.start,
            end_ns: sp.end,
            end: sp.end_state,
        });
    }
    s.counters = export::counters(rec);
    format.render(&w.m.topology, &rec.id, &s)
}
