//! Seed-style text tables.

use numalab_record::RunRecord;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Mean and sample standard deviation (0 for a single value; NaN for
/// none), computed by numalab-stats.
pub fn mean_sd(v: &[f64]) -> (f64, f64) {
    match numalab_stats::Summary::of(v) {
        Ok(s) => (s.mean, s.stddev.unwrap_or(0.0)),
        Err(_) => (f64::NAN, f64::NAN),
    }
}

/// `52.67(3.51)`, seed 001's notation; `9.50(-)` for a single run, which
/// has no standard deviation.
pub fn mean_paren_sd(v: &[f64]) -> String {
    match numalab_stats::Summary::of(v) {
        Ok(s) => match s.stddev {
            Some(sd) => format!("{:.2}({sd:.2})", s.mean),
            None => format!("{:.2}(-)", s.mean),
        },
        Err(_) => "-".into(),
    }
}

/// The per-task table of seed 000: % of running time on each node, the
/// initial and the main node (with `*` where they differ), user time; then
/// the run's totals. A task whose residency was not observed has `-` for
/// every node, never 0.0.
pub fn numa_test_task_table(r: &RunRecord) -> String {
    let mut s = String::new();
    let nodes = r.machine.topology.node_ids();
    let _ = write!(s, "Job  ");
    for n in &nodes {
        let _ = write!(s, "node{n:02} ");
    }
    let _ = writeln!(s, "| iSched MSched | UserTime(s)");
    for t in &r.tasks {
        let _ = write!(s, "{:>3}  ", t.id);
        if t.residency_observed() {
            for p in t.node_percent() {
                let _ = write!(s, " {p:5.1} ");
            }
        } else {
            for _ in &nodes {
                let _ = write!(s, "     - ");
            }
        }
        let fmt_node = |n: Option<u32>| n.map(|n| format!("{n:2}")).unwrap_or_else(|| " ?".into());
        let star = if t.initial_node != t.main_node {
            "*"
        } else {
            " "
        };
        let _ = writeln!(
            s,
            "|   {}    {}   {star}| {:6.2}",
            fmt_node(t.initial_node),
            fmt_node(t.main_node),
            t.user_s
        );
    }
    let m = |k: &str| r.metric(k);
    if let Some(v) = m("avg_user_s") {
        let _ = writeln!(s, "AverageUserTime {v:.2} seconds");
    }
    for (k, name) in [
        ("elapsed_s", "ElapsedTime"),
        ("user_s", "TotalUserTime"),
        ("sys_s", "TotalSysTime"),
        ("hackbench_s", "H (hackbench)"),
    ] {
        if let Some(v) = m(k) {
            let _ = writeln!(s, "{name} {v:.2}");
        }
    }
    s
}

/// Seed 001's table: one row per task count, each column mean(stddev)
/// over the repetitions. Only successful runs count; `n` says how many.
pub fn numa_test_summary(records: &[&RunRecord]) -> String {
    let mut by_n: BTreeMap<u64, Vec<&RunRecord>> = BTreeMap::new();
    for r in records.iter().filter(|r| r.outcome.is_ok()) {
        let n = r.params.get("tasks").and_then(|v| v.as_u64()).unwrap_or(0);
        by_n.entry(n).or_default().push(r);
    }
    // Widths keep the table within 80 columns, as seed 001's.
    let cols = [
        ("avg_user_s", "AverageUserTime", 15),
        ("elapsed_s", "ElapsedTime", 14),
        ("user_s", "TotalUserTime", 14),
        ("sys_s", "TotalSysTime", 13),
        ("hackbench_s", "H", 12),
    ];
    let mut s = String::new();
    let _ = write!(s, "Tasks");
    for (_, name, w) in cols {
        let _ = write!(s, " {name:>w$}");
    }
    let _ = writeln!(s);
    let mut counts = Vec::new();
    for (n, rs) in by_n {
        let _ = write!(s, "{n:>5}");
        counts.push(format!("N={n}: {}", rs.len()));
        for (k, _, w) in cols {
            let v: Vec<f64> = rs.iter().filter_map(|r| r.metric(k)).collect();
            let cell = if v.is_empty() {
                "-".to_string()
            } else {
                mean_paren_sd(&v)
            };
            let _ = write!(s, " {cell:>w$}");
        }
        let _ = writeln!(s);
    }
    let _ = writeln!(
        s,
        "mean(stddev) over successful runs ({})",
        counts.join(", ")
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_record::{example_record, Metric};

    #[test]
    fn mean_and_sd() {
        let (m, sd) = mean_sd(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert_eq!(m, 5.0);
        assert!((sd - 2.138089935299395).abs() < 1e-12);
        assert_eq!(mean_paren_sd(&[1.0]), "1.00(-)");
        assert_eq!(mean_paren_sd(&[]), "-");
    }

    #[test]
    fn task_table_marks_moved_tasks() {
        let mut r = example_record("numa_test", "A", 1, 10.0);
        r.tasks[1].node_time_s = vec![1.0, 3.0];
        r.metrics.insert("avg_user_s".into(), Metric::seconds(9.5));
        let t = numa_test_task_table(&r);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "Job  node00 node01 | iSched MSched | UserTime(s)");
        assert_eq!(lines[1], "  1    50.0   50.0 |    0     0    |  10.00");
        assert_eq!(lines[2], "  2    25.0   75.0 |    0     1   *|  10.00");
        assert!(t.contains("AverageUserTime 9.50 seconds"));
        assert!(t.lines().all(|l| l.len() <= 80));
    }

    #[test]
    fn summary_groups_by_task_count() {
        let mut rs = Vec::new();
        for (i, (n, e)) in [(2, 10.0), (2, 12.0), (4, 20.0)].iter().enumerate() {
            let mut r = example_record("numa_test", "A", i as u32 + 1, *e);
            r.params.insert("tasks".into(), (*n as u64).into());
            rs.push(r);
        }
        let mut failed = example_record("numa_test", "A", 9, 99.0);
        failed.outcome = numalab_record::Outcome::failed("boom");
        rs.push(failed);
        let refs: Vec<&RunRecord> = rs.iter().collect();
        let t = numa_test_summary(&refs);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 4, "{t}");
        assert!(
            lines[1].starts_with("    2 ") && lines[1].contains("11.00(1.41)"),
            "{t}"
        );
        assert!(
            lines[2].starts_with("    4 ") && lines[2].contains("20.00(-)"),
            "{t}"
        );
        assert_eq!(
            lines[3],
            "mean(stddev) over successful runs (N=2: 2, N=4: 1)"
        );
        assert!(t.lines().all(|l| l.len() <= 80));
    }
}
