//! `numalab show --sched`: a traced run's exact scheduling facts as
//! 80-column text, the analysis `perf sched` gives for a whole machine,
//! here for the benchmark's tasks and in NUMA terms: time per node and
//! CPU, migrations by distance and node to node, where wakeups landed,
//! the CPUs chosen for new tasks in order, and how those spread over
//! LLCs and SMT siblings.

use crate::table::{wrap, Column, Table};
use numalab_record::{Relations, RunRecord, SchedTask};
use std::collections::BTreeMap;

/// Beyond this many tasks, tasks are listed by command name.
const TASK_ROWS: usize = 16;

fn pct(n: u32, of: u32) -> String {
    if of == 0 {
        "-".into()
    } else {
        format!("{:.1}%", 100.0 * n as f64 / of as f64)
    }
}

fn relations_line(what: &str, r: &Relations) -> String {
    let t = r.total();
    format!(
        "{what} {t}: same CPU {}, SMT sibling {}, same LLC {}, other LLC of the node {}, other node {}",
        pct(r.same_cpu, t),
        pct(r.smt_sibling, t),
        pct(r.same_llc, t),
        pct(r.same_node, t),
        pct(r.cross_node, t)
    )
}

/// The text of one traced record, or why there is none.
pub fn text(r: &RunRecord) -> String {
    let Some(s) = &r.sched else {
        return format!(
            "{} {} #{}: not traced (run it with --trace for exact scheduling facts)\n",
            r.label, r.benchmark, r.repetition.index
        );
    };
    let topo = &r.machine.topology;
    let mut out = String::new();
    let mut say = |line: &str| {
        for l in wrap(line, 80) {
            out.push_str(&l);
            out.push('\n');
        }
    };
    say(&format!(
        "{} #{} (label {}), traced: {} tasks, {} lost events",
        r.benchmark,
        r.repetition.index,
        r.label,
        s.tasks.len(),
        s.lost_events
    ));
    say(&format!("method: {}", s.method));
    if s.lost_events > 0 {
        say("warning: events were lost; the facts below miss some switches");
    }
    out.push('\n');

    // Per task (or per command name when there are many).
    let node_cols: Vec<String> = topo.nodes.iter().map(|n| format!("node{}", n.id)).collect();
    let mut cols = vec![
        Column::left("task"),
        Column::right("n"),
        Column::right("run s"),
    ];
    cols.extend(node_cols.iter().map(|h| Column::right(h)));
    cols.extend([
        Column::right("migr"),
        Column::right("x-node"),
        Column::right("wakeups"),
        Column::right("prev CPU"),
    ]);
    let mut t = Table::new("Time per node (s), migrations and wakeups", cols);
    let row = |name: String, tasks: &[&SchedTask]| -> Vec<String> {
        let mut mig = Relations::default();
        let mut wake = Relations::default();
        let mut node = vec![0.0; topo.nodes.len()];
        let mut run = 0.0;
        for task in tasks {
            mig.add(&task.migrations);
            wake.add(&task.wakeups);
            run += task.run_s;
            for (i, v) in task.node_s.iter().enumerate() {
                if let Some(x) = node.get_mut(i) {
                    *x += v;
                }
            }
        }
        let mut cells = vec![name, tasks.len().to_string(), format!("{run:.3}")];
        cells.extend(node.iter().map(|v| format!("{v:.3}")));
        cells.extend([
            mig.total().to_string(),
            mig.cross_node.to_string(),
            wake.total().to_string(),
            pct(wake.same_cpu, wake.total()),
        ]);
        cells
    };
    if s.tasks.len() <= TASK_ROWS {
        for task in &s.tasks {
            t.push(row(format!("{} {}", task.comm, task.tid), &[task]));
        }
    } else {
        let mut by: BTreeMap<&str, Vec<&SchedTask>> = BTreeMap::new();
        for task in &s.tasks {
            by.entry(task.comm.as_str()).or_default().push(task);
        }
        for (comm, tasks) in by {
            t.push(row(comm.to_string(), &tasks));
        }
        t.legend
            .push(format!("{} tasks, grouped by command name", s.tasks.len()));
    }
    out.push_str(&t.to_text());
    out.push('\n');

    // Totals by distance.
    let mut mig = Relations::default();
    let mut wake = Relations::default();
    let mut near = Relations::default();
    let mut on_idle: Option<u32> = None;
    for task in &s.tasks {
        mig.add(&task.migrations);
        wake.add(&task.wakeups);
        near.add(&task.woken_near_waker);
        if let Some(n) = task.woken_on_idle_cpu {
            *on_idle.get_or_insert(0) += n;
        }
    }
    let mut say = |line: &str| {
        for l in wrap(line, 80) {
            out.push_str(&l);
            out.push('\n');
        }
    };
    say(&format!(
        "Migrations {}: to an SMT sibling {}, same LLC {}, other LLC of the node {}, other node {}",
        mig.total(),
        mig.smt_sibling,
        mig.same_llc,
        mig.same_node,
        mig.cross_node
    ));
    say(&relations_line(
        "Wakeups, CPU woken on vs CPU slept on:",
        &wake,
    ));
    match on_idle {
        Some(n) => say(&format!(
            "Wakeups on an idle CPU: {} of {} ({})",
            n,
            wake.total(),
            pct(n, wake.total())
        )),
        None => say("Wakeups on an idle CPU: not known (the trace saw only the tree's switches)"),
    }
    match &s.waker_cpu_unavailable {
        None => say(&relations_line(
            "Wakeups by a traced task, CPU woken on vs the waker's CPU:",
            &near,
        )),
        Some(why) => say(&format!("Wakers' CPUs: not traced ({why})")),
    }
    out.push('\n');

    // Node-to-node migrations.
    if !s.migration_matrix.is_empty() && topo.nodes.len() > 1 {
        let mut cols = vec![Column::left("from \\ to")];
        cols.extend(node_cols.iter().map(|h| Column::right(h)));
        let mut m = Table::new("Migrations, node to node", cols);
        for (i, row) in s.migration_matrix.iter().enumerate() {
            let mut cells = vec![node_cols.get(i).cloned().unwrap_or_default()];
            cells.extend(row.iter().map(|v| v.to_string()));
            m.push(cells);
        }
        out.push_str(&m.to_text());
        out.push('\n');
    }

    // CPUs chosen for new tasks.
    if !s.new_task_cpus.is_empty() {
        const SHOWN: usize = 48;
        let mut seq: Vec<String> = s
            .new_task_cpus
            .iter()
            .take(SHOWN)
            .map(|c| c.to_string())
            .collect();
        if s.new_task_cpus.len() > SHOWN {
            seq.push(format!("... ({} more)", s.new_task_cpus.len() - SHOWN));
        }
        let mut say = |line: &str| {
            for l in wrap(line, 80) {
                out.push_str(&l);
                out.push('\n');
            }
        };
        say(&format!(
            "CPUs chosen for new tasks, in order: {}",
            seq.join(" -> ")
        ));
        // Spread over LLCs and SMT sides.
        let n = s.new_task_cpus.len() as u32;
        let mut llc: BTreeMap<String, u32> = BTreeMap::new();
        let mut side: BTreeMap<usize, u32> = BTreeMap::new();
        for &c in &s.new_task_cpus {
            let l = topo
                .cpu(c)
                .and_then(|x| x.llc)
                .map(|l| format!("LLC {l}"))
                .unwrap_or_else(|| "LLC ?".into());
            *llc.entry(l).or_default() += 1;
            let sib = topo.siblings(c);
            let pos = sib.iter().position(|&x| x == c).unwrap_or(0);
            *side.entry(pos).or_default() += 1;
        }
        say(&format!(
            "  over LLCs: {}",
            llc.iter()
                .map(|(k, v)| format!("{k} {v} ({})", pct(*v, n)))
                .collect::<Vec<_>>()
                .join(", ")
        ));
        if topo.smt() {
            say(&format!(
                "  over SMT sides: {}",
                side.iter()
                    .map(|(k, v)| format!("thread {k} of its core {v} ({})", pct(*v, n)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    out
}
