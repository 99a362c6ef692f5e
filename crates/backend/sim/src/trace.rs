//! `--trace`: the simulated schedule written by the same exporter as a
//! real traced run (numalab-trace's `export`): a track per CPU grouped by
//! node, a slice per stretch a task ran, migrations as instants, and the
//! record's memory per node and pages migrated as counters, so a
//! simulated and a real schedule open side by side in Perfetto.

use crate::engine::{Span, World};
use numalab_record::RunRecord;
use numalab_trace::export::{self, Migration, Schedule, Slice};
use std::collections::BTreeMap;

/// Render the spans of a finished run.
pub fn chrome_json(w: &World, spans: &[Span], rec: &RunRecord) -> String {
    let mut order: Vec<&Span> = spans.iter().collect();
    order.sort_by_key(|s| (s.start, s.cpu));
    let mut s = Schedule::default();
    let mut last: BTreeMap<usize, usize> = BTreeMap::new();
    for sp in order {
        let t = &w.tasks[sp.task];
        if let Some(&from) = last.get(&sp.task) {
            if from != sp.cpu {
                s.migrations.push(Migration {
                    cpu: sp.cpu as u32,
                    at_ns: sp.start,
                    tid: sp.task as u32,
                    from_cpu: from as u32,
                });
            }
        }
        last.insert(sp.task, sp.cpu);
        s.slices.push(Slice {
            cpu: sp.cpu as u32,
            tid: sp.task as u32,
            pid: t.process as u32,
            name: t.name.clone(),
            start_ns: sp.start,
            end_ns: sp.end,
        });
    }
    s.counters = export::counters(rec);
    export::chrome_json(&w.m.topology, &rec.id, &s)
}
