//! `--trace`: the simulated schedule written by the same exporter as a
//! real traced run (numalab-trace's `export`): a track per CPU grouped by
//! node, a slice per stretch a task ran, migrations as instants, and the
//! record's memory per node and pages migrated as counters, so a
//! simulated and a real schedule open side by side in Perfetto. As
//! Chrome trace-event JSON or, with `--trace-format perfetto`, as ftrace
//! text (sched_switch, sched_migrate_task) for Perfetto's CPU tracks and
//! thread states; the simulator has no wakeup events to give.

use crate::engine::{Span, World};
use numalab_record::RunRecord;
use numalab_trace::export::{self, Migration, Schedule, Slice};
use std::collections::BTreeMap;

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
