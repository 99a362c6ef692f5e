//! What `numalab run` and `numalab sim` print after all their runs: a
//! summary of the records just written, per benchmark (in the order they
//! ran) and label, in the seeds' style and within 80 columns.
//!
//! * `numa_test`: seed 001's table ([`crate::text::numa_test_summary`]);
//! * numa01, numa01_THREAD_ALLOC, numa02, numa02_SMT, twohalves: a row per
//!   placement and the default placement's position between the bounds
//!   ([`crate::autonuma::summary_table`]);
//! * any other benchmark (spin, hackbench, commands): a row per case,
//!   named by the parameters that vary (`placement=packed cpus=0-3`), with
//!   the successful runs of all, and elapsed, user and sys time (and
//!   hackbench time when recorded) as mean(stddev).
//!
//! Failed runs are counted under each table, with the first reason.
//! Runs of one case whose CPU time is an order of magnitude apart
//! ([`crate::work`]) are warned about on standard error, as every other
//! warning of a run is, so they do not pass silently.

use crate::autonuma;
use crate::dataset::{canonical_json, variant_text, varying_keys};
use crate::num;
use crate::table::{split_cell, wrap, Column, Table, TEXT_WIDTH};
use numalab_record::RunRecord;
use std::collections::BTreeMap;
use std::fmt::Write as _;

fn push_wrapped(out: &mut String, text: &str) {
    for l in wrap(text, TEXT_WIDTH) {
        let _ = writeln!(out, "{l}");
    }
}

/// The summary of one invocation's records: per benchmark (first-seen
/// order) and label (first-seen order), a heading line
/// `numa01 summary, label "default":`, the benchmark's table, and the
/// failed runs. Every line is at most 80 columns. The warnings of
/// [`work_warnings`] go to standard error, `numalab: warning: ...`.
pub fn invocation(records: &[&RunRecord]) -> String {
    for w in work_warnings(records) {
        // A closed stderr drops the warning, never the summary.
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            format!("numalab: warning: {w}\n").as_bytes(),
        );
    }
    let mut benches: Vec<&str> = Vec::new();
    let mut groups: Vec<((&str, &str), Vec<&RunRecord>)> = Vec::new();
    for r in records {
        if !benches.contains(&r.benchmark.as_str()) {
            benches.push(&r.benchmark);
        }
        let key = (r.benchmark.as_str(), r.label.as_str());
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(r),
            None => groups.push((key, vec![r])),
        }
    }
    // Stable: labels keep their first-seen order within a benchmark.
    groups.sort_by_key(|((b, _), _)| benches.iter().position(|x| x == b));
    let mut out = String::new();
    for (i, ((bench, label), recs)) in groups.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        push_wrapped(&mut out, &format!("{bench} summary, label {label:?}:"));
        let ok = recs.iter().filter(|r| r.outcome.is_ok()).count();
        if ok == 0 {
            push_wrapped(&mut out, "no successful runs");
        } else if *bench == "numa_test" {
            out.push_str(&crate::text::numa_test_summary(recs));
        } else if autonuma::summarises(bench) {
            out.push_str(&autonuma::summary_table(recs));
            let one_node = recs.iter().all(|r| {
                r.machine
                    .topology
                    .nodes
                    .iter()
                    .filter(|n| !n.cpus.is_empty())
                    .count()
                    < 2
            });
            if one_node {
                push_wrapped(
                    &mut out,
                    "convergence is trivial on this machine: it has one NUMA node with CPUs",
                );
            }
        } else {
            out.push_str(&generic_table(recs));
        }
        let failed: Vec<&&RunRecord> = recs.iter().filter(|r| !r.outcome.is_ok()).collect();
        if let Some(first) = failed.first() {
            push_wrapped(
                &mut out,
                &format!(
                    "failed: {} of {} runs (first: run {}: {})",
                    failed.len(),
                    recs.len(),
                    first.repetition.index,
                    first
                        .outcome
                        .reason
                        .as_deref()
                        .unwrap_or("no reason recorded")
                ),
            );
        }
    }
    if let Some(t) = commands_relative(records) {
        out.push('\n');
        out.push_str(&t);
    }
    out
}

/// Several commands of one invocation (`run command -- A --vs -- B`),
/// as hyperfine ends: each one's elapsed time over the first's, with a
/// 95% confidence interval (Fieller's, numalab_stats::ratio_ci) where
/// both ran at least twice. `None` unless every record is a command and
/// there are at least two of them.
pub fn commands_relative(records: &[&RunRecord]) -> Option<String> {
    let mut names: Vec<&str> = Vec::new();
    let mut times: Vec<Vec<f64>> = Vec::new();
    for r in records {
        if !r.params.contains_key("command") {
            return None;
        }
        let i = match names.iter().position(|n| *n == r.benchmark) {
            Some(i) => i,
            None => {
                names.push(&r.benchmark);
                times.push(Vec::new());
                names.len() - 1
            }
        };
        if let (true, Some(e)) = (r.outcome.is_ok(), r.metric("elapsed_s")) {
            times[i].push(e);
        }
    }
    if names.len() < 2 || times[0].is_empty() {
        return None;
    }
    let base = &times[0];
    let mut out = String::new();
    push_wrapped(
        &mut out,
        &format!("elapsed relative to {} (the first command):", names[0]),
    );
    let _ = writeln!(
        out,
        "{:<20} {:>4} {:>16} {:>8} {:>17}",
        "command", "runs", "elapsed(s)", "ratio", "95% CI"
    );
    for (name, t) in names.iter().zip(&times) {
        let name = match name.chars().count() > 20 {
            true => format!("{}~", name.chars().take(19).collect::<String>()),
            false => name.to_string(),
        };
        if t.is_empty() {
            let _ = writeln!(out, "{name:<20} {:>4} {:>16}", 0, "-");
            continue;
        }
        let mean = t.iter().sum::<f64>() / t.len() as f64;
        let ratio = mean / (base.iter().sum::<f64>() / base.len() as f64);
        let ci = match numalab_stats::ratio_ci(base, t, 0.95) {
            Ok(e) if e.bounded => format!("[{}, {}]", num::ratio(e.low), num::ratio(e.high)),
            Ok(_) => "[unbounded]".into(),
            Err(_) => "-".into(),
        };
        let sd = (t.len() > 1).then(|| {
            (t.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (t.len() - 1) as f64).sqrt()
        });
        let _ = writeln!(
            out,
            "{name:<20} {:>4} {:>16} {:>8} {:>17}",
            t.len(),
            num::mean_sd(mean, sd),
            num::ratio(ratio),
            ci
        );
    }
    Some(out)
}

/// Per case (benchmark and parameters) and label, in first-seen order:
/// `sh, label "default": CPU time differs more than 10x between runs
/// (...)` when the successful runs did not do the same work
/// ([`crate::work::check`]). A case is named by the parameters that vary
/// between its benchmark's cases.
pub fn work_warnings(records: &[&RunRecord]) -> Vec<String> {
    type Key = (String, String, String);
    let mut groups: Vec<(Key, Vec<&RunRecord>)> = Vec::new();
    for r in records {
        let params = canonical_json(&serde_json::to_value(&r.params).unwrap_or_default());
        let key = (r.benchmark.clone(), r.label.clone(), params);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(r),
            None => groups.push((key, vec![r])),
        }
    }
    let mut out = Vec::new();
    for ((bench, label, _), recs) in &groups {
        let Some(w) = crate::work::check(recs) else {
            continue;
        };
        let maps: Vec<&BTreeMap<String, serde_json::Value>> = groups
            .iter()
            .filter(|((b, _, _), _)| b == bench)
            .map(|(_, rs)| &rs[0].params)
            .collect();
        let variant = variant_text(&recs[0].params, &varying_keys(&maps));
        let case = if variant.is_empty() {
            bench.clone()
        } else {
            format!("{bench} {variant}")
        };
        out.push(format!("{case}, label {label:?}: {}", w.text()));
    }
    out
}

/// A row per case (first-seen order), named by the parameters that vary
/// between the cases, or the benchmark's name when there is one case:
/// runs ok/all, elapsed, user and sys time, and hackbench time when
/// recorded, as mean(stddev) over successful runs.
pub fn generic_table(records: &[&RunRecord]) -> String {
    let Some(first) = records.first() else {
        return String::new();
    };
    let cases = cases_by_params(records);
    let names = case_names(&cases, &first.benchmark);
    let metrics = generic_metrics(records);
    let rows: Vec<Vec<String>> = cases
        .iter()
        .map(|(_, rs)| case_cells(rs, &metrics))
        .collect();
    generic_text(&names, &metrics, rows)
}

/// The runs of one set of parameters, with those parameters.
type ParamsCase<'a> = (&'a BTreeMap<String, serde_json::Value>, Vec<&'a RunRecord>);

/// The records grouped by their parameters, in first-seen order.
fn cases_by_params<'a>(records: &[&'a RunRecord]) -> Vec<ParamsCase<'a>> {
    let mut keys: Vec<String> = Vec::new();
    let mut cases: Vec<ParamsCase<'a>> = Vec::new();
    for r in records {
        let key = canonical_json(&serde_json::to_value(&r.params).unwrap_or_default());
        match keys.iter().position(|k| *k == key) {
            Some(i) => cases[i].1.push(r),
            None => {
                keys.push(key);
                cases.push((&r.params, vec![r]));
            }
        }
    }
    cases
}

/// Each case's name: the parameters that vary between the cases, or the
/// benchmark's name when none vary; names that read alike are numbered.
fn case_names(cases: &[ParamsCase], benchmark: &str) -> Vec<String> {
    let maps: Vec<&BTreeMap<String, serde_json::Value>> = cases.iter().map(|(p, _)| *p).collect();
    let vary = varying_keys(&maps);
    let mut names: Vec<String> = cases
        .iter()
        .map(|(p, _)| {
            let v = variant_text(p, &vary);
            if v.is_empty() {
                benchmark.to_string()
            } else {
                v
            }
        })
        .collect();
    // Values that read the same (the string "2" and the number 2) are
    // numbered, so that two rows never look alike.
    for i in 0..names.len() {
        let same: Vec<usize> = (0..names.len()).filter(|&j| names[j] == names[i]).collect();
        if same.len() > 1 {
            for (n, j) in same.into_iter().enumerate() {
                names[j] = format!("{} #{}", names[j], n + 1);
            }
        }
    }
    names
}

/// The table's metrics and their headers: elapsed, user and sys time, or
/// for a bandwidth benchmark the bandwidths; hackbench time when recorded.
fn generic_metrics(records: &[&RunRecord]) -> Vec<(&'static str, &'static str)> {
    let mut metrics = vec![
        ("elapsed_s", "elapsed(s)"),
        ("user_s", "user(s)"),
        ("sys_s", "sys(s)"),
    ];
    // A bandwidth benchmark (mem): the bandwidths in place of CPU times.
    if records
        .iter()
        .any(|r| r.metrics.contains_key("bandwidth_gbs"))
    {
        metrics = vec![
            ("elapsed_s", "elapsed(s)"),
            ("bandwidth_gbs", "GB/s"),
            ("thread_bandwidth_gbs", "GB/s/thread"),
        ];
    }
    if records
        .iter()
        .any(|r| r.metrics.contains_key("hackbench_s"))
    {
        metrics.push(("hackbench_s", "hackbench(s)"));
    }
    metrics
}

/// One case's cells: runs ok/all, then each metric's mean(stddev) over
/// the successful runs (`-` when none recorded it).
fn case_cells(rs: &[&RunRecord], metrics: &[(&str, &str)]) -> Vec<String> {
    let ok: Vec<&&RunRecord> = rs.iter().filter(|r| r.outcome.is_ok()).collect();
    let mut cells = vec![format!("{}/{}", ok.len(), rs.len())];
    for (m, _) in metrics {
        let v: Vec<f64> = ok.iter().filter_map(|r| r.metric(m)).collect();
        cells.push(match numalab_stats::Summary::of(&v) {
            Ok(s) => num::mean_sd(s.mean, s.stddev),
            Err(_) => "-".into(),
        });
    }
    cells
}

/// The table as text: the case column gets what the values leave of 80
/// columns, a longer name continuing on the next lines.
fn generic_text(names: &[String], metrics: &[(&str, &str)], rows: Vec<Vec<String>>) -> String {
    let mut headers = vec!["runs"];
    headers.extend(metrics.iter().map(|(_, h)| *h));
    let values_width: usize = (0..headers.len())
        .map(|i| {
            rows.iter()
                .map(|r| r[i].len())
                .chain(std::iter::once(headers[i].len()))
                .max()
                .unwrap_or(0)
                + 2
        })
        .sum();
    let room = TEXT_WIDTH.saturating_sub(values_width).clamp(12, 34);
    let mut cols = vec![Column::key("case")];
    cols.extend(headers.iter().map(|h| Column::right(h)));
    let mut t = Table::new("", cols);
    for (name, cells) in names.iter().zip(rows) {
        let pieces = if name.chars().count() > room {
            split_cell(name, room)
        } else {
            vec![name.clone()]
        };
        let mut row = vec![pieces[0].clone()];
        row.extend(cells);
        t.push(row);
        for p in &pieces[1..] {
            t.push(vec![p.clone()]);
        }
    }
    t.legend
        .push("mean(stddev) over successful runs; runs: successful/all".into());
    t.to_text()
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_record::{example_record, Metric, Outcome};

    fn rec(bench: &str, label: &str, rep: u32, elapsed: f64) -> RunRecord {
        let mut r = example_record(bench, label, rep, elapsed);
        r.metrics.insert("sys_s".into(), Metric::seconds(0.25));
        r
    }

    fn check(s: &str) {
        for l in s.lines() {
            assert!(l.len() <= 80, "line of {} columns: {l}\n{s}", l.len());
            assert!(!l.contains('{') && !l.contains('['), "{l}\n{s}");
        }
    }

    #[test]
    fn numa_test_and_autonuma_use_the_seed_tables() {
        let mut rs = Vec::new();
        for (i, tasks) in [2u64, 2, 4].into_iter().enumerate() {
            let mut r = rec("numa_test", "A", i as u32 + 1, 10.0 + i as f64);
            r.params.insert("tasks".into(), tasks.into());
            rs.push(r);
        }
        let mut failed = rec("numa_test", "A", 4, 1.0);
        failed.outcome = Outcome::failed("task 2 was killed by signal 9");
        rs.push(failed);
        for (p, e) in [("bind", 10.0), ("default", 15.0), ("inverse-bind", 20.0)] {
            let mut r = rec("numa01", "A", 1, e);
            r.params.insert("placement".into(), p.into());
            rs.push(r);
        }
        let refs: Vec<&RunRecord> = rs.iter().collect();
        let s = invocation(&refs);
        check(&s);
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "numa_test summary, label \"A\":", "{s}");
        assert!(lines[1].starts_with("Tasks AverageUserTime"), "{s}");
        assert!(
            s.contains("failed: 1 of 4 runs (first: run 4: task 2 was killed by signal 9)"),
            "{s}"
        );
        assert!(
            s.contains("\nnuma01 summary, label \"A\":\nplacement "),
            "{s}"
        );
        assert!(s.contains("default lies at 0.50 between bind (0)"), "{s}");
    }

    #[test]
    fn other_benchmarks_get_a_row_per_case() {
        let mut rs = Vec::new();
        for (p, cpus) in [("packed", "0-3"), ("spread", "0-1,4-5")] {
            for rep in 1..=3 {
                let mut r = rec("spin", "quiet", rep, 10.0 + rep as f64);
                r.params.insert("placement".into(), p.into());
                r.params.insert("cpus".into(), cpus.into());
                r.params.insert("tasks".into(), 4.into());
                rs.push(r);
            }
        }
        // An older record's parameters can hold arrays and objects.
        let mut old = rec("spin", "quiet", 1, 12.0);
        old.params
            .insert("placement".into(), serde_json::json!(["x", "y"]));
        old.params.insert(
            "cpus".into(),
            serde_json::json!({"node0": [0, 1], "node1": [2]}),
        );
        old.params.insert("tasks".into(), 4.into());
        old.outcome = Outcome::failed("boom");
        rs.push(old);
        let mut h = rec("hackbench", "quiet", 1, 3.0);
        h.metrics.insert("hackbench_s".into(), Metric::seconds(1.5));
        rs.push(h);
        // The first label of spin comes back after hackbench: still
        // grouped with spin, which ran first.
        let mut other = rec("spin", "busy", 1, 20.0);
        other.params = rs[0].params.clone();
        rs.push(other);
        let mut c = rec("configure", "cfs", 1, 30.0);
        c.params.insert(
            "command".into(),
            serde_json::json!(["sh", "-c", "./configure"]),
        );
        rs.push(c);
        let refs: Vec<&RunRecord> = rs.iter().collect();
        let s = invocation(&refs);
        check(&s);
        let headings: Vec<&str> = s.lines().filter(|l| l.contains(" summary, ")).collect();
        assert_eq!(
            headings,
            vec![
                "spin summary, label \"quiet\":",
                "spin summary, label \"busy\":",
                "hackbench summary, label \"quiet\":",
                "configure summary, label \"cfs\":",
            ],
            "{s}"
        );
        let row = s
            .lines()
            .find(|l| l.starts_with("cpus=0-3 placement=packed"))
            .unwrap_or_else(|| panic!("{s}"));
        assert!(
            row.contains(" 3/3 ") && row.contains("12.00(1.00)"),
            "{row}"
        );
        assert!(row.contains("0.250(0.000)"), "{row}");
        // (wrapped: the name is longer than the room the values leave)
        assert!(
            s.contains("\ncpus=node0:0+1,node1:2          0/1 ")
                && s.contains("\n  placement=x,y\n"),
            "{s}"
        );
        assert!(
            s.contains("failed: 1 of 7 runs (first: run 1: boom)"),
            "{s}"
        );
        let hb = s
            .split("hackbench summary")
            .nth(1)
            .unwrap_or_else(|| panic!("{s}"));
        assert!(hb.contains("hackbench(s)") && hb.contains("1.50(-)"), "{s}");
        let spin = s.split("hackbench summary").next().unwrap();
        assert!(!spin.contains("hackbench(s)"), "{s}");
        // One case: the benchmark's name.
        let cfg = s.split("configure summary").nth(1).unwrap();
        assert!(cfg.lines().any(|l| l.starts_with("configure ")), "{s}");
    }

    #[test]
    fn runs_that_did_different_work_are_warned_about_per_case_and_label() {
        let mut rs = Vec::new();
        for (label, users) in [("A", [0.23, 0.0, 0.0]), ("B", [5.0, 5.5, 4.8])] {
            for (i, u) in users.into_iter().enumerate() {
                for jobs in [1, 2] {
                    let mut r = rec("make", label, i as u32 + 1, 1.0);
                    r.params.insert("jobs".into(), jobs.into());
                    r.metrics.insert("user_s".into(), Metric::seconds(u));
                    r.metrics.insert("sys_s".into(), Metric::seconds(0.0));
                    if label == "B" && jobs == 2 && i == 1 {
                        r.metrics.insert("user_s".into(), Metric::seconds(60.0));
                    }
                    rs.push(r);
                }
            }
        }
        let refs: Vec<&RunRecord> = rs.iter().collect();
        let w = work_warnings(&refs);
        assert_eq!(
            w,
            vec![
                "make jobs=1, label \"A\": CPU time differs more than 10x between runs (run 2: 0.00 s, run 1: 0.23 s): did every run do the same work?",
                "make jobs=2, label \"A\": CPU time differs more than 10x between runs (run 2: 0.00 s, run 1: 0.23 s): did every run do the same work?",
                "make jobs=2, label \"B\": CPU time differs more than 10x between runs (run 3: 4.80 s, run 2: 60.00 s): did every run do the same work?",
            ]
        );
        // Alike runs: nothing to say.
        let alike: Vec<&RunRecord> = rs.iter().filter(|r| r.label == "B").take(2).collect();
        assert!(work_warnings(&alike).is_empty());
    }

    #[test]
    fn long_case_names_wrap_within_80_columns() {
        let mut rs = Vec::new();
        for n in 0..2 {
            let mut r = rec("hackbench", "A", 1, 1000.5);
            r.metrics
                .insert("hackbench_s".into(), Metric::seconds(1234.5));
            r.params.insert(
                "cpus".into(),
                format!("0-3,8-11,16-19,24-27,32-35,40-43,48-51,56-{}", 59 + n).into(),
            );
            r.params.insert("placement".into(), "spread-smt".into());
            rs.push(r);
        }
        let refs: Vec<&RunRecord> = rs.iter().collect();
        let s = invocation(&refs);
        check(&s);
        assert!(s.contains("56-59") && s.contains("56-60"), "{s}");
    }
}
