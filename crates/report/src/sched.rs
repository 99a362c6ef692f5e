//! A traced run's exact scheduling facts, the analysis `perf sched`
//! gives for a whole machine, here for the benchmark's tasks and in NUMA
//! terms: time per node and CPU, migrations by distance and node to
//! node, where wakeups landed, the CPUs chosen for new tasks in order,
//! and how those spread over LLCs and SMT siblings.
//!
//! [`figures`] computes them once, as tables and lines; [`text`] prints
//! them within 80 columns (`numalab show --sched`) and the HTML report
//! (`html`) shows the same tables.

use crate::table::{wrap, Column, RowKind, Table};
use numalab_record::{Latency, Relations, RunRecord, SchedTask, SchedTrace};
use numalab_topology::Topology;
use std::collections::BTreeMap;

/// Beyond this many tasks, tasks are listed by command name.
pub const TASK_ROWS: usize = 16;

/// A task's role: its command name without a trailing `-N` (numalab
/// names the tasks it starts `nt-task-3`, `hb-send-12`: their roles are
/// `nt-task` and `hb-send`).
pub fn role(comm: &str) -> &str {
    match comm.rsplit_once('-') {
        Some((r, n)) if !r.is_empty() && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
            r
        }
        _ => comm,
    }
}

/// Beyond this many, the CPUs chosen for new tasks are counted, not
/// listed.
const NEW_TASK_CPUS_SHOWN: usize = 48;

/// What `show --sched` prints and the HTML report shows of one traced
/// record.
#[derive(Debug, Clone)]
pub struct Figures {
    /// What was traced and how: the benchmark, its task and lost-event
    /// counts, the method, a warning when events were lost.
    pub head: Vec<String>,
    /// Time per node, migrations and wakeups of each task (of each
    /// command name beyond [`TASK_ROWS`] tasks).
    pub tasks: Table,
    /// Migrations and wakeups by distance; its legend says how many
    /// wakeups were on an idle CPU, or why that is not known.
    pub distance: Table,
    /// Wakeup latency and run-queue delay of each task (of each command
    /// name beyond [`TASK_ROWS`] tasks), when the trace saw any.
    pub latency: Option<Table>,
    /// Migrations from node to node (with more than one node).
    pub matrix: Option<Table>,
    /// The CPUs chosen for new tasks, in order (None when none was
    /// created).
    pub new_tasks: Option<NewTasks>,
}

impl Figures {
    /// The tables, in the order text and HTML show them.
    pub fn tables(&self) -> Vec<&Table> {
        [
            Some(&self.tasks),
            Some(&self.distance),
            self.latency.as_ref(),
            self.matrix.as_ref(),
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}

/// The CPUs the kernel chose for new tasks.
#[derive(Debug, Clone)]
pub struct NewTasks {
    /// `CPUs chosen for new tasks, in order: 1 -> 0 -> ...`
    pub order: String,
    /// `over LLCs: ...`, and with SMT `over SMT sides: ...`.
    pub spread: Vec<String>,
}

fn pct(n: u32, of: u32) -> String {
    if of == 0 {
        "-".into()
    } else {
        format!("{:.1}%", 100.0 * n as f64 / of as f64)
    }
}

/// `n (p%)`, or `-` where nothing was counted.
fn count_pct(n: u32, of: u32) -> String {
    if of == 0 {
        "-".into()
    } else {
        format!("{n} ({})", pct(n, of))
    }
}

/// The figures of one record; None when it was not traced.
pub fn figures(r: &RunRecord) -> Option<Figures> {
    let s = r.sched.as_ref()?;
    let topo = &r.machine.topology;
    let node_cols: Vec<String> = topo.nodes.iter().map(|n| format!("node{}", n.id)).collect();
    Some(Figures {
        head: head(r, s),
        tasks: tasks_table(s, topo, &node_cols),
        distance: distance_table(s),
        latency: latency_table(&s.tasks),
        matrix: matrix_table(s, topo, &node_cols),
        new_tasks: new_tasks(s, topo),
    })
}

/// What was traced and how: the benchmark, its task and lost-event
/// counts, the method, and a warning when events were lost.
fn head(r: &RunRecord, s: &SchedTrace) -> Vec<String> {
    let mut head = vec![
        format!(
            "{} #{} (label {}), traced: {} tasks, {} lost events",
            r.benchmark,
            r.repetition.index,
            r.label,
            s.tasks.len(),
            s.lost_events
        ),
        format!("method: {}", s.method),
    ];
    if s.lost_events > 0 {
        head.push("warning: events were lost; the facts below miss some switches".into());
    }
    head
}

/// Time per node, migrations and wakeups of each task, or of each command
/// name beyond [`TASK_ROWS`] tasks.
fn tasks_table(s: &SchedTrace, topo: &Topology, node_cols: &[String]) -> Table {
    let mut cols = vec![
        Column::key("task"),
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
    let mut tasks = Table::new("Time per node (s), migrations and wakeups", cols);
    let row = |name: String, group: &[&SchedTask]| -> Vec<String> {
        let mut mig = Relations::default();
        let mut wake = Relations::default();
        let mut node = vec![0.0; topo.nodes.len()];
        let mut run = 0.0;
        for task in group {
            mig.add(&task.migrations);
            wake.add(&task.wakeups);
            run += task.run_s;
            for (i, v) in task.node_s.iter().enumerate() {
                if let Some(x) = node.get_mut(i) {
                    *x += v;
                }
            }
        }
        let mut cells = vec![name, group.len().to_string(), format!("{run:.3}")];
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
            tasks.push(row(format!("{} {}", task.comm, task.tid), &[task]));
        }
    } else {
        let mut by: BTreeMap<&str, Vec<&SchedTask>> = BTreeMap::new();
        for task in &s.tasks {
            by.entry(role(&task.comm)).or_default().push(task);
        }
        for (comm, group) in by {
            tasks.push(row(comm.to_string(), &group));
        }
        tasks.legend.push(format!(
            "{} tasks, grouped by role (the command name without its -N)",
            s.tasks.len()
        ));
    }
    tasks
}

/// Migrations and wakeups by distance, with the legend that says how many
/// wakeups were on an idle CPU, or why that is not known.
fn distance_table(s: &SchedTrace) -> Table {
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
    let waker = s.waker_cpu_unavailable.is_none();
    let mut cols = vec![
        Column::key("distance"),
        Column::right("migrations"),
        Column::right("wakeups"),
    ];
    if waker {
        cols.push(Column::right("vs waker"));
    }
    let mut distance = Table::new("Migrations and wakeups by distance", cols);
    type Count = fn(&Relations) -> u32;
    let by: [(&str, Count); 5] = [
        ("same CPU", |r| r.same_cpu),
        ("SMT sibling", |r| r.smt_sibling),
        ("same LLC", |r| r.same_llc),
        ("other LLC of the node", |r| r.same_node),
        ("other node", |r| r.cross_node),
    ];
    for (name, f) in by {
        // A migration is to another CPU, never the same one.
        let m = if name == "same CPU" {
            "-".to_string()
        } else {
            count_pct(f(&mig), mig.total())
        };
        let mut cells = vec![name.to_string(), m, count_pct(f(&wake), wake.total())];
        if waker {
            cells.push(count_pct(f(&near), near.total()));
        }
        distance.push(cells);
    }
    let mut cells = vec![
        "all".to_string(),
        mig.total().to_string(),
        wake.total().to_string(),
    ];
    if waker {
        cells.push(near.total().to_string());
    }
    distance.push_kind(cells, RowKind::Summary);
    distance.legend.extend([
        "migrations: a run on another CPU than the task's last, by how far it moved".to_string(),
        "wakeups: the CPU a task woke on vs the CPU it slept on".to_string(),
    ]);
    match &s.waker_cpu_unavailable {
        None => distance
            .legend
            .push("vs waker: wakeups by a traced task, the CPU woken on vs the waker's CPU".into()),
        Some(why) => distance
            .legend
            .push(format!("Wakers' CPUs: not traced ({why})")),
    }
    distance.legend.push(match on_idle {
        Some(n) => format!(
            "Wakeups on an idle CPU: {} of {} ({})",
            n,
            wake.total(),
            pct(n, wake.total())
        ),
        None => "Wakeups on an idle CPU: not known (the trace saw only the tree's switches)".into(),
    });
    distance
}

/// Migrations from node to node (with more than one node and any counted).
fn matrix_table(s: &SchedTrace, topo: &Topology, node_cols: &[String]) -> Option<Table> {
    (!s.migration_matrix.is_empty() && topo.nodes.len() > 1).then(|| {
        let mut cols = vec![Column::key("from \\ to")];
        cols.extend(node_cols.iter().map(|h| Column::right(h)));
        let mut m = Table::new("Migrations, node to node", cols);
        for (i, row) in s.migration_matrix.iter().enumerate() {
            let mut cells = vec![node_cols.get(i).cloned().unwrap_or_default()];
            cells.extend(row.iter().map(|v| v.to_string()));
            m.push(cells);
        }
        m
    })
}

/// The CPUs chosen for new tasks, in order, and their spread over LLCs
/// and SMT sides; None when no task was created.
fn new_tasks(s: &SchedTrace, topo: &Topology) -> Option<NewTasks> {
    (!s.new_task_cpus.is_empty()).then(|| {
        let mut seq: Vec<String> = s
            .new_task_cpus
            .iter()
            .take(NEW_TASK_CPUS_SHOWN)
            .map(|c| c.to_string())
            .collect();
        if s.new_task_cpus.len() > NEW_TASK_CPUS_SHOWN {
            seq.push(format!(
                "... ({} more)",
                s.new_task_cpus.len() - NEW_TASK_CPUS_SHOWN
            ));
        }
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
        let mut spread = vec![format!(
            "over LLCs: {}",
            llc.iter()
                .map(|(k, v)| format!("{k} {v} ({})", pct(*v, n)))
                .collect::<Vec<_>>()
                .join(", ")
        )];
        if topo.smt() {
            spread.push(format!(
                "over SMT sides: {}",
                side.iter()
                    .map(|(k, v)| format!("thread {k} of its core {v} ({})", pct(*v, n)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        NewTasks {
            order: format!("CPUs chosen for new tasks, in order: {}", seq.join(" -> ")),
            spread,
        }
    })
}

/// Wakeup latency and run-queue delay per task, or per command name
/// beyond [`TASK_ROWS`] tasks (counts and worst summed and taken over the
/// group, means weighted by count, p99 the worst task's).
fn latency_table(all: &[SchedTask]) -> Option<Table> {
    if all
        .iter()
        .all(|t| t.wakeup_latency.is_none() && t.runqueue_delay.is_none())
    {
        return None;
    }
    let mut t = Table::new(
        "Wakeup latency and run-queue delay (ms)",
        vec![
            Column::key("task"),
            Column::right("wakeups"),
            Column::right("mean"),
            Column::right("p99"),
            Column::right("max"),
            Column::right("delays"),
            Column::right("mean"),
            Column::right("max"),
        ],
    );
    let cells = |name: String, group: &[&SchedTask]| -> Vec<String> {
        let mut out = vec![name];
        for (get, p99) in [
            (
                (|t: &SchedTask| t.wakeup_latency) as fn(&SchedTask) -> Option<Latency>,
                true,
            ),
            (|t: &SchedTask| t.runqueue_delay, false),
        ] {
            let v: Vec<Latency> = group.iter().filter_map(|t| get(t)).collect();
            let n: u64 = v.iter().map(|l| l.count).sum();
            if n == 0 {
                out.extend(std::iter::repeat_n(
                    "-".to_string(),
                    if p99 { 4 } else { 3 },
                ));
                continue;
            }
            let mean = v.iter().map(|l| l.mean_ms * l.count as f64).sum::<f64>() / n as f64;
            let worst = |f: fn(&Latency) -> f64| v.iter().map(f).fold(0.0, f64::max);
            out.push(n.to_string());
            out.push(format!("{mean:.3}"));
            if p99 {
                out.push(format!("{:.3}", worst(|l| l.p99_ms)));
            }
            out.push(format!("{:.3}", worst(|l| l.max_ms)));
        }
        out
    };
    if all.len() <= TASK_ROWS {
        for task in all {
            t.push(cells(format!("{} {}", task.comm, task.tid), &[task]));
        }
    } else {
        let mut by: BTreeMap<&str, Vec<&SchedTask>> = BTreeMap::new();
        for task in all {
            by.entry(role(&task.comm)).or_default().push(task);
        }
        for (comm, group) in by {
            t.push(cells(comm.to_string(), &group));
        }
    }
    t.legend.extend([
        "wakeups: from a traced task's sched_waking to the switch in (as perf sched latency)"
            .to_string(),
        "delays: from a preemption to the next switch in; p99 of a command name: its worst task's"
            .to_string(),
    ]);
    Some(t)
}

/// The text of one traced record within 80 columns, or why there is none.
pub fn text(r: &RunRecord) -> String {
    let Some(f) = figures(r) else {
        return format!(
            "{} {} #{}: not traced (run it with --trace for exact scheduling facts)\n",
            r.label, r.benchmark, r.repetition.index
        );
    };
    let mut out = String::new();
    let say = |out: &mut String, line: &str| {
        for l in wrap(line, 80) {
            out.push_str(&l);
            out.push('\n');
        }
    };
    for l in &f.head {
        say(&mut out, l);
    }
    out.push('\n');
    for t in f.tables() {
        out.push_str(&t.to_text());
        out.push('\n');
    }
    if let Some(n) = &f.new_tasks {
        say(&mut out, &n.order);
        for l in &n.spread {
            say(&mut out, &format!("  {l}"));
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use numalab_record::{example_record, SchedTrace};

    fn rel(same_cpu: u32, same_llc: u32, cross_node: u32) -> Relations {
        Relations {
            same_cpu,
            same_llc,
            cross_node,
            ..Relations::default()
        }
    }

    fn task(comm: &str, tid: u32) -> SchedTask {
        SchedTask {
            tid,
            pid: tid,
            parent_tid: None,
            comm: comm.into(),
            forked_s: None,
            exec_s: None,
            exited_s: None,
            run_s: 0.5,
            cpu_s: BTreeMap::from([(0, 0.25), (2, 0.25)]),
            node_s: vec![0.25, 0.25],
            first_cpu: Some(0),
            migrations: rel(0, 1, 1),
            wakeups: rel(3, 1, 0),
            woken_near_waker: rel(1, 0, 1),
            preemptions: 0,
            woken_on_idle_cpu: Some(2),
            wakeup_latency: numalab_record::Latency::of_ns(&[100_000, 300_000]),
            runqueue_delay: numalab_record::Latency::of_ns(&[2_000_000]),
        }
    }

    /// A traced record of the example's 2-node machine with `n` tasks.
    pub(crate) fn traced(n: u32) -> RunRecord {
        let mut r = example_record("hackbench", "A", 1, 1.0);
        r.sched = Some(SchedTrace {
            method: "CPU-wide switch records".into(),
            lost_events: 0,
            waker_cpu_unavailable: None,
            events_file: None,
            new_task_cpus: (0..n).map(|i| i % 4).collect(),
            migration_matrix: vec![vec![n, n], vec![n, 0]],
            tasks: (0..n)
                .map(|i| task(if i % 2 == 0 { "sender" } else { "receiver" }, 100 + i))
                .collect(),
        });
        r
    }

    #[test]
    fn distances_are_a_table_with_wakeups_on_idle_cpus_below() {
        let f = figures(&traced(4)).unwrap();
        let t = f.distance.to_text();
        assert!(t.lines().all(|l| l.len() <= 80), "{t}");
        // 4 tasks: 8 migrations (4 same LLC, 4 cross-node), 16 wakeups
        // (12 on the CPU they slept on), 8 by a traced waker.
        let line = |start: &str| -> Vec<String> {
            t.lines()
                .find(|l| l.starts_with(start))
                .unwrap_or_else(|| panic!("{start}: {t}"))
                .split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(String::from)
                .collect()
        };
        assert_eq!(
            line("same CPU"),
            ["same CPU", "-", "12 (75.0%)", "4 (50.0%)"]
        );
        assert_eq!(
            line("same LLC"),
            ["same LLC", "4 (50.0%)", "4 (25.0%)", "0 (0.0%)"]
        );
        assert_eq!(
            line("other node"),
            ["other node", "4 (50.0%)", "0 (0.0%)", "4 (50.0%)"]
        );
        assert_eq!(line("all"), ["all", "8", "16", "8"]);
        assert!(t.contains("Wakeups on an idle CPU: 8 of 16 (50.0%)"), "{t}");
        // Without wakers' CPUs the column goes and the legend says why;
        // without CPU-wide switches, idle CPUs are not known.
        let mut r = traced(4);
        let s = r.sched.as_mut().unwrap();
        s.waker_cpu_unavailable = Some("needs root".into());
        for t in &mut s.tasks {
            t.woken_on_idle_cpu = None;
        }
        let t = figures(&r).unwrap().distance.to_text();
        assert!(!t.contains("vs waker"), "{t}");
        assert!(t.contains("Wakers' CPUs: not traced (needs root)"), "{t}");
        assert!(t.contains("Wakeups on an idle CPU: not known"), "{t}");
    }

    #[test]
    fn many_tasks_are_grouped_by_command_name_in_text_and_html() {
        let few = figures(&traced(TASK_ROWS as u32)).unwrap();
        assert_eq!(few.tasks.rows.len(), TASK_ROWS);
        assert!(few.tasks.legend.is_empty());
        let many = figures(&traced(TASK_ROWS as u32 + 4)).unwrap();
        let names: Vec<&str> = many
            .tasks
            .rows
            .iter()
            .map(|r| r.cells[0].as_str())
            .collect();
        assert_eq!(names, ["receiver", "sender"]);
        assert_eq!(many.tasks.rows[0].cells[1], "10");
        assert_eq!(
            many.tasks.legend,
            ["20 tasks, grouped by role (the command name without its -N)"]
        );
        assert_eq!(role("hb-send-12"), "hb-send");
        assert_eq!(role("nt-task"), "nt-task");
        assert_eq!(role("cc1-"), "cc1-");
        assert_eq!(role("-7"), "-7");
        let text = text(&traced(20));
        assert!(text.contains("20 tasks, grouped by role"), "{text}");
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
        let html = many.tasks.to_html();
        assert!(
            html.contains("<td>receiver</td><td class=\"r\">10</td>"),
            "{html}"
        );
        assert!(html.contains("20 tasks, grouped by role"), "{html}");
        // Latency by command name: 10 tasks of 2 wakeups each, 0.1 and
        // 0.3 ms (mean 0.2), 1 delay of 2 ms each.
        let lat = many.latency.unwrap();
        let recv = &lat.rows[0].cells;
        assert_eq!(
            recv[..8],
            ["receiver", "20", "0.200", "0.300", "0.300", "10", "2.000", "2.000"]
        );
        let one = figures(&traced(2)).unwrap().latency.unwrap();
        assert_eq!(one.rows.len(), 2);
        // Nothing measured: no table.
        let mut r = traced(2);
        for t in &mut r.sched.as_mut().unwrap().tasks {
            t.wakeup_latency = None;
            t.runqueue_delay = None;
        }
        assert!(figures(&r).unwrap().latency.is_none());
    }

    #[test]
    fn the_text_has_every_figure_in_order() {
        let t = text(&traced(60));
        let at = |s: &str| t.find(s).unwrap_or_else(|| panic!("{s}: {t}"));
        assert!(at("hackbench #1 (label A), traced: 60 tasks") < at("method: "));
        assert!(at("method: ") < at("Time per node (s)"));
        assert!(at("Time per node (s)") < at("Migrations and wakeups by distance"));
        assert!(
            at("Migrations and wakeups by distance")
                < at("Wakeup latency and run-queue delay (ms)")
        );
        assert!(at("Wakeup latency and run-queue delay (ms)") < at("Migrations, node to node"));
        assert!(at("Migrations, node to node") < at("CPUs chosen for new tasks, in order: 0 -> 1"));
        assert!(t.contains("... (12 more)"), "{t}");
        assert!(t.contains("\n  over LLCs: "), "{t}");
        let untraced = example_record("x", "A", 1, 1.0);
        assert!(figures(&untraced).is_none());
        assert!(text(&untraced).contains("not traced (run it with --trace"));
    }
}
