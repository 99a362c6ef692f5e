//! `numalab show`: one run, or a directory of runs, as the seeds print
//! them: the per-task residency table (seed 000), the mean(stddev) summary
//! (seed 001), and ASCII charts of memory per node (seed 002), pages
//! migrated and progress over time (seed 004). Everything within 80
//! columns, to paste into an email.

use crate::autonuma::{is_derived_metric, position_text, positions_by_cases};
use crate::compare::MachineSummary;
use crate::dataset::{param_value, Dataset};
use crate::num;
use crate::series::{self, Line, PAGES_MIGRATED};
use crate::table::{wrap, Column, Table, TEXT_WIDTH};
use crate::textplot::Chart;
use numalab_record::{Better, ConvergenceState, RunRecord};
use std::fmt::Write as _;
use std::path::Path;

fn push_wrapped(out: &mut String, text: &str) {
    for l in wrap(text, TEXT_WIDTH) {
        let _ = writeln!(out, "{l}");
    }
}

/// Samples of a record that can make a line (at least two).
fn enough(points: usize) -> bool {
    points >= 2
}

/// One run in full: what ran where, the per-task table, the metrics, and
/// its charts.
pub fn record(r: &RunRecord, path: Option<&Path>) -> String {
    let mut out = String::new();
    let status = if r.outcome.is_ok() { "ok" } else { "FAILED" };
    push_wrapped(
        &mut out,
        &format!(
            "{}, label {}, run {} of {} ({}): {status}",
            r.benchmark,
            r.label,
            r.repetition.index,
            r.repetition.of,
            r.backend.kind()
        ),
    );
    push_wrapped(&mut out, &MachineSummary::of(r).describe());
    let mut started = format!("started {}", r.started_at);
    if let Some(p) = path {
        started.push_str(&format!(", record {}", p.display()));
    }
    push_wrapped(&mut out, &started);
    let params: Vec<String> = r
        .params
        .iter()
        .map(|(k, v)| format!("{k}={}", param_value(v)))
        .collect();
    if !params.is_empty() {
        push_wrapped(&mut out, &format!("params: {}", params.join(" ")));
    }
    if let Some(reason) = &r.outcome.reason {
        push_wrapped(&mut out, &format!("failed: {reason}"));
    }
    out.push('\n');
    if r.tasks.iter().any(|t| t.residency_observed()) {
        out.push_str(&task_table(r));
        out.push('\n');
    } else if let Some(t) = r.tasks.first() {
        push_wrapped(&mut out, &not_observed(&t.residency_method));
        out.push('\n');
    }
    if r.tasks.iter().any(|t| t.kernel.is_some()) {
        out.push_str(&kernel_table(r));
        out.push('\n');
    }
    // Derived metrics older records carry are not the record's to show.
    let metrics: Vec<(&String, &numalab_record::Metric)> = r
        .metrics
        .iter()
        .filter(|(k, _)| !is_derived_metric(k))
        .collect();
    if !metrics.is_empty() {
        let mut t = Table::new(
            "Metrics",
            vec![
                Column::key("metric"),
                Column::right("value"),
                Column::left("unit"),
                Column::left("better"),
            ],
        );
        for (k, m) in metrics {
            t.push(vec![
                k.clone(),
                num::value(m.value),
                m.unit.clone(),
                match m.better {
                    Better::Lower => "lower".into(),
                    Better::Higher => "higher".into(),
                },
            ]);
        }
        out.push_str(&t.to_text());
        out.push('\n');
    }
    if let Some(c) = &r.convergence {
        let state = match &c.state {
            ConvergenceState::Converged { at_s } => format!("converged at {at_s:.2} s"),
            ConvergenceState::NotConverged { within_s } => {
                format!("did not converge within {within_s:.2} s")
            }
            ConvergenceState::Trivial { reason } => format!("trivial ({reason})"),
        };
        push_wrapped(
            &mut out,
            &format!("Convergence: {state} ({})", c.definition),
        );
        out.push('\n');
    }
    for w in &r.warnings {
        push_wrapped(&mut out, &format!("warning: {w}"));
    }
    if !r.warnings.is_empty() {
        out.push('\n');
    }
    out.push_str(&record_charts(r));
    out
}

/// What `show` says for a run none of whose tasks had its node residency
/// observed (a command, the message storm), instead of a table of 0.0%.
fn not_observed(method: &str) -> String {
    let method = method.trim();
    if method.starts_with("not observed") {
        format!("Node residency: {method}")
    } else if method.is_empty() {
        "Node residency: not observed".into()
    } else {
        format!("Node residency: not observed ({method})")
    }
}

/// The per-task table: seed 000's layout when it fits 80 columns (up to 6
/// nodes), else the same columns as a table broken into blocks.
pub fn task_table(r: &RunRecord) -> String {
    let nodes = r.machine.topology.node_ids();
    if nodes.len() <= 6 {
        return crate::text::numa_test_task_table(r);
    }
    let mut cols = vec![Column::key("Job")];
    for n in &nodes {
        cols.push(Column::right(&format!("node{n:02}")));
    }
    cols.push(Column::right("iSched"));
    cols.push(Column::right("MSched"));
    cols.push(Column::right("UserTime(s)"));
    let mut t = Table::new("% of running time per node", cols);
    for task in &r.tasks {
        let mut cells = vec![task.id.to_string()];
        if task.residency_observed() {
            cells.extend(task.node_percent().iter().map(|p| format!("{p:.1}")));
        } else {
            cells.extend(nodes.iter().map(|_| "-".to_string()));
        }
        let node = |n: Option<u32>| n.map(|n| n.to_string()).unwrap_or_else(|| "?".into());
        cells.push(node(task.initial_node));
        let star = if task.initial_node != task.main_node {
            "*"
        } else {
            ""
        };
        cells.push(format!("{}{star}", node(task.main_node)));
        cells.push(format!("{:.2}", task.user_s));
        t.push(cells);
    }
    t.legend
        .push("* the task's main node is not the node it started on".into());
    t.to_text()
}

/// The kernel's own counters of each task as it ended (`/proc/PID/sched`).
pub fn kernel_table(r: &RunRecord) -> String {
    let mut t = Table::new(
        "Kernel counters at exit (/proc/PID/sched)",
        vec![
            Column::key("task"),
            Column::right("migrations"),
            Column::right("sleeps"),
            Column::right("preempted"),
            Column::right("NUMA pages"),
            Column::right("pref node"),
            Column::right("NUMA faults"),
        ],
    );
    let opt = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
    for task in &r.tasks {
        let cells = match &task.kernel {
            Some(k) => vec![
                task.id.to_string(),
                k.nr_migrations.to_string(),
                k.nr_voluntary_switches.to_string(),
                k.nr_involuntary_switches.to_string(),
                opt(k.numa_pages_migrated),
                k.numa_preferred_nid.map_or("-".into(), |n| n.to_string()),
                opt(k.total_numa_faults),
            ],
            None => {
                let mut c = vec![task.id.to_string()];
                c.extend((0..6).map(|_| "?".to_string()));
                c
            }
        };
        t.push(cells);
    }
    t.legend.push(
        "sleeps, preempted: voluntary and involuntary switches; NUMA pages: migrated by NUMA balancing; NUMA faults: the kernel's decayed count; ?: not read".into(),
    );
    t.to_text()
}

/// The charts of one run: memory per node, pages migrated, progress.
pub fn record_charts(r: &RunRecord) -> String {
    let mut out = String::new();
    let mut drawn = false;
    for view in series::process_views(r) {
        let who = series::process_name(r, view)
            .map(|w| format!(", {w}"))
            .unwrap_or_default();
        let mem = series::memory_per_node_of(r, view);
        if mem.first().is_some_and(|l| enough(l.points.len())) {
            drawn = true;
            out.push_str(
                &Chart::new(
                    format!("Memory per node vs time{who}"),
                    "Time (s)",
                    "MiB",
                    mem,
                )
                .render(),
            );
            out.push('\n');
        }
        let threads = series::tasks_per_node_of(r, view);
        if series::has_threads(r)
            && r.machine.topology.nodes.len() > 1
            && threads.first().is_some_and(|l| enough(l.points.len()))
        {
            out.push_str(
                &Chart::new(
                    format!("Threads per node vs time{who}"),
                    "Time (s)",
                    "threads",
                    threads,
                )
                .render(),
            );
            out.push('\n');
        }
    }
    if !drawn && !r.series.samples.is_empty() {
        push_wrapped(
            &mut out,
            "Memory per node: fewer than 2 samples, no chart (a longer run or a smaller --interval gives more)",
        );
    }
    match series::vmstat(r, PAGES_MIGRATED) {
        Some(p) if p.iter().all(|(_, y)| *y == 0.0) => {
            push_wrapped(
                &mut out,
                &format!("Pages migrated ({PAGES_MIGRATED}): 0 throughout the run, no chart"),
            );
        }
        Some(p) if enough(p.len()) => {
            out.push_str(
                &Chart::new(
                    format!("Pages migrated vs time ({PAGES_MIGRATED})"),
                    "Time (s)",
                    "pages",
                    vec![Line::new("pages migrated", p)],
                )
                .render(),
            );
            out.push('\n');
        }
        _ => {}
    }
    let prog = series::progress_per_task(r, crate::textplot::SYMBOLS.len());
    if prog.first().is_some_and(|l| enough(l.points.len())) {
        out.push_str(&Chart::new("Progress vs time", "Time (s)", "work units", prog).render());
        out.push('\n');
    }
    out
}

/// Seed 001's table for a benchmark other than numa_test: one row per
/// case, one column per metric, mean(stddev) over successful runs.
pub fn summary_table(ds: &Dataset, benchmark: &str, config: usize) -> Table {
    let cases: Vec<usize> = (0..ds.cases.len())
        .filter(|&c| ds.cases[c].benchmark == benchmark && ds.group(c, config).is_some())
        .collect();
    let mut metrics: Vec<String> = Vec::new();
    for &c in &cases {
        for r in ds.ok_records(ds.group(c, config).expect("filtered")) {
            for k in r.metrics.keys() {
                if !metrics.contains(k) && !is_derived_metric(k) {
                    metrics.push(k.clone());
                }
            }
        }
    }
    metrics.sort();
    let mut cols = vec![Column::key("case"), Column::right("n")];
    for m in &metrics {
        cols.push(Column::right(m));
    }
    let mut t = Table::new("", cols);
    for &c in &cases {
        let g = ds.group(c, config).expect("filtered");
        let recs = ds.ok_records(g);
        let case = &ds.cases[c];
        let mut cells = vec![
            if case.variant.is_empty() {
                case.benchmark.clone()
            } else {
                case.variant.clone()
            },
            recs.len().to_string(),
        ];
        for m in &metrics {
            let v: Vec<f64> = recs.iter().filter_map(|r| r.metric(m)).collect();
            cells.push(match numalab_stats::Summary::of(&v) {
                Ok(s) => num::mean_sd(s.mean, s.stddev),
                Err(_) => "-".into(),
            });
        }
        t.push(cells);
    }
    t.legend
        .push("mean(stddev) over successful runs; n runs per case".into());
    t
}

/// A directory of runs: per benchmark and configuration the summary table,
/// failed runs, then per case the charts with one line per configuration
/// (its typical run: the median of `elapsed_s`).
pub fn dataset(ds: &Dataset) -> String {
    let cmp = crate::compare(ds, &crate::CompareOptions::default()).ok();
    dataset_with(ds, cmp.as_ref())
}

/// [`dataset`], its figures ([`crate::figures`]) drawn from `cmp` (its
/// baseline and metrics); none without it.
pub fn dataset_with(ds: &Dataset, cmp: Option<&crate::CompareReport>) -> String {
    let mut out = String::new();
    selection_note(&mut out, ds);
    let positions = crate::autonuma::bounds_positions(ds);
    let families = positions_by_cases(&positions);
    let mut benches: Vec<&str> = ds.cases.iter().map(|c| c.benchmark.as_str()).collect();
    benches.dedup();
    for b in &benches {
        for k in 0..ds.configs.len() {
            config_summary(&mut out, ds, b, k);
        }
        // position_between_bounds, derived from the runs above.
        let mine: Vec<&Vec<_>> = families.iter().filter(|ps| ps[0].benchmark == *b).collect();
        for ps in &mine {
            let p = ps[0];
            let name = if p.variant.is_empty() {
                p.benchmark.clone()
            } else {
                format!("{} {}", p.benchmark, p.variant)
            };
            push_wrapped(&mut out, &format!("{name}: {}", position_text(ps)));
        }
        if !mine.is_empty() {
            out.push('\n');
        }
    }
    // The seed-style figures over all runs (crate::figures).
    if let Some(cmp) = cmp {
        out.push_str(&crate::figures::text(&crate::figures::figures(cmp)));
    }
    for (c, case) in ds.cases.iter().enumerate() {
        out.push_str(&case_charts(ds, c, &case.name));
    }
    out
}

/// The line saying how configurations are grouped (`--group-by`) and
/// which runs are kept (`--filter`), when either is not the default.
fn selection_note(out: &mut String, ds: &Dataset) {
    if !ds.default_grouping() || !ds.filters.is_empty() {
        let mut s = String::new();
        if !ds.default_grouping() {
            s += &format!("Configurations by {} (--group-by)", ds.grouping());
        }
        if !ds.filters.is_empty() {
            if !s.is_empty() {
                s += "; ";
            }
            let f: Vec<String> = ds.filters.iter().map(|f| f.to_string()).collect();
            s += &format!("only runs with {} (--filter)", f.join(", "));
        }
        push_wrapped(out, &format!("{s}."));
        out.push('\n');
    }
}

/// The runs of benchmark `b` under configuration `k`: a heading with the
/// machine and the number of runs, the summary table, the failed runs and
/// the parameters common to the benchmark's runs; nothing when it has
/// none.
fn config_summary(out: &mut String, ds: &Dataset, b: &str, k: usize) {
    let cfg = &ds.configs[k];
    let groups: Vec<_> = ds
        .groups
        .iter()
        .filter(|g| g.config == k && ds.cases[g.case].benchmark == b)
        .collect();
    if groups.is_empty() {
        return;
    }
    let all: Vec<&RunRecord> = groups
        .iter()
        .flat_map(|g| g.ok.iter().chain(g.failed.iter()))
        .map(|&i| &ds.runs[i].record)
        .collect();
    let ok: Vec<&RunRecord> = all.iter().copied().filter(|r| r.outcome.is_ok()).collect();
    let who = if ds.default_grouping() {
        format!("label {} ({}", cfg.label, cfg.backend)
    } else {
        format!(
            "{} {} (label {}, {}",
            ds.grouping(),
            cfg.name,
            cfg.label,
            cfg.backend
        )
    };
    push_wrapped(
        out,
        &format!(
            "{b}, {who}, {}): {} runs",
            MachineSummary::of(all[0]).describe(),
            all.len()
        ),
    );
    if b == "numa_test" {
        out.push_str(&crate::text::numa_test_summary(&ok));
    } else {
        out.push_str(&summary_table(ds, b, k).to_text());
    }
    for r in all.iter().filter(|r| !r.outcome.is_ok()) {
        push_wrapped(
            out,
            &format!(
                "failed: run {} ({}): {}",
                r.repetition.index,
                r.id,
                r.outcome.reason.as_deref().unwrap_or("no reason recorded")
            ),
        );
    }
    let common = ds.common_params(b);
    if !common.is_empty() {
        push_wrapped(out, &format!("params: {}", common.join(" ")));
    }
    out.push('\n');
}

/// Charts of one case with a line per configuration.
fn case_charts(ds: &Dataset, case: usize, name: &str) -> String {
    let mut out = String::new();
    let (typical, short) = typical_runs(ds, case);
    if typical.is_empty() {
        return out;
    }
    migrated_chart(&mut out, name, &typical);
    progress_chart(&mut out, name, &typical);
    for ((_, r), n) in typical.iter().zip(&short) {
        if r.machine.topology.nodes.len() < 2 {
            continue;
        }
        node_charts(&mut out, &format!("{name}, {n}"), r);
    }
    out
}

/// Whether a chart's lines have enough points to be drawn over time.
fn long(ls: &[Line]) -> bool {
    ls.iter().any(|l| enough(l.points.len()))
}

/// Per configuration of a case with a successful run, its typical run
/// named for the charts' legend (`B (median elapsed_s)`), and the same
/// run's short name (`B run 3`).
fn typical_runs(ds: &Dataset, case: usize) -> (Vec<(String, &RunRecord)>, Vec<String>) {
    let mut typical: Vec<(String, &RunRecord)> = Vec::new();
    let mut short: Vec<String> = Vec::new();
    for g in ds.groups.iter().filter(|g| g.case == case) {
        let recs = ds.ok_records(g);
        if let Some((r, why)) = series::typical_run(&recs) {
            let cfg = &ds.configs[g.config].name;
            typical.push((format!("{cfg} ({why})"), r));
            short.push(format!("{cfg} run {}", r.repetition.index));
        }
    }
    (typical, short)
}

/// The chart of pages migrated over time in the typical runs, or the line
/// saying it is 0 throughout; nothing when no run recorded it or the
/// runs are too short.
fn migrated_chart(out: &mut String, name: &str, typical: &[(String, &RunRecord)]) {
    let migrated: Vec<Line> = typical
        .iter()
        .filter_map(|(n, r)| series::vmstat(r, PAGES_MIGRATED).map(|p| Line::new(n.clone(), p)))
        .collect();
    if !migrated.is_empty() {
        if migrated.iter().all(|l| l.points.iter().all(|p| p.1 == 0.0)) {
            push_wrapped(
                out,
                &format!("{name}: pages migrated ({PAGES_MIGRATED}) is 0 throughout every run shown; no chart"),
            );
            out.push('\n');
        } else if long(&migrated) {
            out.push_str(
                &Chart::new(
                    format!("{name}: pages migrated vs time"),
                    "Time (s)",
                    "pages",
                    migrated,
                )
                .render(),
            );
            out.push('\n');
        }
    }
}

/// The chart of the typical runs' progress over time (in % of the work
/// when every run gives it so), or the line saying the runs are too short
/// for charts over time.
fn progress_chart(out: &mut String, name: &str, typical: &[(String, &RunRecord)]) {
    let mut pct = true;
    let progress: Vec<Line> = typical
        .iter()
        .filter_map(|(n, r)| {
            series::progress_total(r).map(|(p, is_pct)| {
                pct &= is_pct;
                Line::new(n.clone(), p)
            })
        })
        .collect();
    if long(&progress) {
        out.push_str(
            &Chart::new(
                format!("{name}: progress vs time"),
                "Time (s)",
                if pct { "% of the work" } else { "work units" },
                progress,
            )
            .render(),
        );
        out.push('\n');
    } else if !progress.is_empty() {
        push_wrapped(
            out,
            &format!("{name}: the runs shown have fewer than 2 samples each, so no charts over time (a longer run or a smaller --interval gives more)"),
        );
        out.push('\n');
    }
}

/// Per process of run `r` (or the whole run), the charts of its memory
/// and its threads per node over time, titled `title, process`.
fn node_charts(out: &mut String, title: &str, r: &RunRecord) {
    for view in series::process_views(r) {
        let who = match series::process_name(r, view) {
            Some(w) => format!("{title}, {w}"),
            None => title.to_string(),
        };
        let mem = series::memory_per_node_of(r, view);
        if mem.first().is_some_and(|l| enough(l.points.len())) {
            out.push_str(
                &Chart::new(format!("{who}: memory per node"), "Time (s)", "MiB", mem).render(),
            );
            out.push('\n');
        }
        let threads = series::tasks_per_node_of(r, view);
        if series::has_threads(r) && threads.first().is_some_and(|l| enough(l.points.len())) {
            out.push_str(
                &Chart::new(
                    format!("{who}: threads per node"),
                    "Time (s)",
                    "threads",
                    threads,
                )
                .render(),
            );
            out.push('\n');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_record::{example_record, Outcome, Sample};
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    fn with_series(mut r: RunRecord, speed: u64) -> RunRecord {
        r.series.samples = (0..=20)
            .map(|i| {
                let moved = i.min(10) << 18;
                Sample {
                    t_s: i as f64,
                    memory_bytes: vec![vec![(10u64 << 20) - moved, moved]],
                    task_node: vec![Some(0), Some(1)],
                    progress: vec![(i * speed).min(100), (i * speed / 2).min(100)],
                    vmstat: BTreeMap::from([(
                        PAGES_MIGRATED.to_string(),
                        (i.min(10) * 64 * speed) as i64,
                    )]),
                    ..Default::default()
                }
            })
            .collect();
        r
    }

    #[test]
    fn one_record() {
        let r = with_series(example_record("numa_test", "A", 1, 10.0), 5);
        let s = record(&r, Some(Path::new("x.json")));
        assert!(s.lines().all(|l| l.len() <= 80 && l.is_ascii()), "{s}");
        assert!(
            s.starts_with("numa_test, label A, run 1 of 3 (real): ok\n"),
            "{s}"
        );
        assert!(s.contains("record x.json"));
        assert!(s.contains("Job  node00 node01 | iSched MSched | UserTime(s)"));
        assert!(s.contains("elapsed_s"));
        assert!(s.contains("Memory per node vs time"), "{s}");
        assert!(s.contains("* node0   # node1"), "{s}");
        assert!(s.contains("Pages migrated vs time"), "{s}");
        assert!(s.contains("Progress vs time (work units)"), "{s}");
        assert!(s.contains("* task 1   # task 2"), "{s}");
        assert!(s.contains("Convergence: converged at 1.00 s"));
    }

    #[test]
    fn one_sample_gives_no_chart_but_says_so() {
        let r = example_record("numa_test", "A", 1, 10.0);
        let s = record(&r, None);
        assert!(s.contains("fewer than 2 samples"), "{s}");
        assert!(s.contains("Pages migrated (numa_pages_migrated): 0 throughout"));
        assert!(!s.contains("+---"), "{s}");
    }

    #[test]
    fn unobserved_residency_is_said_never_a_table_of_zeros() {
        // A command's record (null per-node times) and one written before
        // null was (zeros, no residency samples) read the same.
        let mut new = example_record("configure", "A", 1, 10.0);
        new.tasks.truncate(1);
        new.tasks[0].node_time_s = Vec::new();
        new.tasks[0].residency_samples = 0;
        new.tasks[0].residency_method = "not observed: a command's processes come and go".into();
        let mut old = new.clone();
        old.tasks[0].node_time_s = vec![0.0, 0.0];
        for r in [new, old] {
            let s = record(&r, None);
            assert!(
                s.contains("Node residency: not observed: a command's processes come and go"),
                "{s}"
            );
            assert!(!s.contains("node00") && !s.contains(" 0.0 "), "{s}");
        }
        // A task of several that did not report: dashes, not 0.0.
        let mut r = example_record("numa_test", "A", 1, 10.0);
        r.tasks[1].node_time_s = Vec::new();
        let s = record(&r, None);
        let row = s
            .lines()
            .find(|l| l.starts_with("  2  ") && l.contains('|'))
            .unwrap_or_else(|| panic!("{s}"));
        assert!(row.contains("     -      - |"), "{row}");
        r.machine.topology =
            numalab_topology::Topology::regular(8, 1, 1, 1, 1 << 20, 1 << 30, None).unwrap();
        r.tasks[0].node_time_s = vec![1.0; 8];
        let s = task_table(&r);
        let row = s
            .lines()
            .find(|l| l.starts_with("2 "))
            .unwrap_or_else(|| panic!("{s}"));
        assert_eq!(row.matches(" -").count(), 8, "{row}");
        assert!(!row.contains("0.0"), "{row}");
    }

    #[test]
    fn many_nodes_use_the_block_table() {
        let mut r = example_record("numa_test", "A", 1, 10.0);
        r.machine.topology =
            numalab_topology::Topology::regular(8, 1, 1, 1, 1 << 20, 1 << 30, None).unwrap();
        for t in &mut r.tasks {
            t.node_time_s = vec![1.0; 8];
        }
        let s = task_table(&r);
        assert!(s.lines().all(|l| l.len() <= 80), "{s}");
        assert!(s.contains("node07") && s.contains("12.5"), "{s}");
    }

    #[test]
    fn a_directory() {
        let mut v = Vec::new();
        for (label, speed) in [("A", 5), ("B", 10)] {
            for rep in 1..=3 {
                let mut r = with_series(
                    example_record("numa_test", label, rep, 10.0 + rep as f64 * speed as f64),
                    speed,
                );
                r.id = format!("{label}{rep}");
                v.push((PathBuf::from(format!("{label}{rep}.json")), r));
            }
        }
        let mut other = example_record("twohalves", "A", 1, 3.0);
        other.id = "t1".into();
        v.push((PathBuf::from("t1.json"), other));
        let mut failed = example_record("numa_test", "B", 4, 1.0);
        failed.outcome = Outcome::failed("task 2 was killed by signal 9");
        failed.id = "f".into();
        v.push((PathBuf::from("f.json"), failed));
        let ds = Dataset::new(v);
        let s = dataset(&ds);
        assert!(s.lines().all(|l| l.len() <= 80 && l.is_ascii()), "{s}");
        assert!(s.contains("numa_test, label A (real, host example"), "{s}");
        assert!(s.contains("Tasks AverageUserTime"), "{s}");
        assert!(
            s.contains("failed: run 4 (f): task 2 was killed by signal 9"),
            "{s}"
        );
        assert!(s.contains("twohalves, label A"), "{s}");
        assert!(s.contains("numa_test: pages migrated vs time"), "{s}");
        assert!(s.contains("* A (run 2 of 3, the median elapsed_s)"), "{s}");
        assert!(s.contains("# B (run 2 of 3, the median elapsed_s)"), "{s}");
        assert!(
            s.contains("numa_test: progress vs time (% of the work)"),
            "{s}"
        );
        assert!(
            s.contains("numa_test, A run 2: memory per node (MiB)"),
            "{s}"
        );
    }
}
