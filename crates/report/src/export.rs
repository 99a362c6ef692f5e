//! Per-run values for other tools: CSV (a spreadsheet, pandas, R) and
//! Go's benchmark format (benchstat).
//!
//! Both have one entry per run and metric, read from records only, in a
//! fixed order (benchmark, case, label, backend, host, repetition, metric;
//! numbers in cases and labels by value, as `compare` orders them) so the
//! same records always export to the same bytes.
//!
//! **CSV**: a header, then one row per run and metric: `id, benchmark,
//! case, label, backend, host, kernel, repetition, status, metric, value,
//! unit`. A failed run has one row with its status and reason in place of
//! a metric, so nothing recorded goes missing from the file.
//!
//! **benchstat**: Go's benchmark data format
//! (golang.org/design/14313-benchmark-format): configuration lines
//! (`label: nb0`, `backend: real`, `host: ...`, `kernel: ...`) before the
//! runs they describe, then one line per successful run:
//! `BenchmarkNuma02/placement=default/threads=2 1 12.3 elapsed_s 20.1
//! user_s ...`: the benchmark (its first letter upper case, as the format
//! asks), the case's parameters as `/key=value` sub-names (benchstat takes
//! them as name keys), one iteration, and each metric with its name as the
//! unit. `benchstat -col label FILE` then puts labels side by side.

use crate::dataset::param_value;
use numalab_record::{RunRecord, Status};
use std::fmt::Write as _;

/// The records in export order: numbers in cases and labels by value
/// (`bytes=2000` before `bytes=16000`, `scan 2000` before `scan 16000`),
/// as `compare` lists them.
fn ordered<'a>(records: &[&'a RunRecord]) -> Vec<&'a RunRecord> {
    use crate::dataset::natural_cmp;
    // The case text made once per record, not once per comparison.
    let mut v: Vec<(String, &RunRecord)> = records.iter().map(|r| (case(r), *r)).collect();
    v.sort_by(|(ca, a), (cb, b)| {
        natural_cmp(&a.benchmark, &b.benchmark)
            .then_with(|| natural_cmp(ca, cb))
            .then_with(|| natural_cmp(&a.label, &b.label))
            .then_with(|| {
                (
                    &a.benchmark,
                    ca,
                    &a.label,
                    a.backend.kind(),
                    &a.machine.hostname,
                    a.repetition.index,
                    &a.id,
                )
                    .cmp(&(
                        &b.benchmark,
                        cb,
                        &b.label,
                        b.backend.kind(),
                        &b.machine.hostname,
                        b.repetition.index,
                        &b.id,
                    ))
            })
    });
    v.into_iter().map(|(_, r)| r).collect()
}

/// The case key as `k=v` pairs separated by spaces.
fn case(r: &RunRecord) -> String {
    crate::dataset::params_text(&r.params)
}

/// CSV, one row per run and metric.
pub fn to_csv(records: &[RunRecord]) -> Result<String, csv::Error> {
    to_csv_of(&records.iter().collect::<Vec<_>>())
}

/// [`to_csv`] of records held elsewhere (a [`crate::Dataset`]'s runs).
pub fn to_csv_of(records: &[&RunRecord]) -> Result<String, csv::Error> {
    let mut w = csv::WriterBuilder::new()
        .terminator(csv::Terminator::CRLF)
        .from_writer(Vec::new());
    w.write_record([
        "id",
        "benchmark",
        "case",
        "label",
        "backend",
        "host",
        "kernel",
        "repetition",
        "status",
        "metric",
        "value",
        "unit",
    ])?;
    for r in ordered(records) {
        let head = [
            r.id.clone(),
            r.benchmark.clone(),
            case(r),
            r.label.clone(),
            r.backend.kind().to_string(),
            r.machine.hostname.clone(),
            r.machine.kernel.clone(),
            r.repetition.index.to_string(),
        ];
        if r.outcome.status == Status::Failed || r.metrics.is_empty() {
            let status = match r.outcome.status {
                Status::Ok => "ok",
                Status::Failed => "failed",
            };
            let reason = r.outcome.reason.clone().unwrap_or_default();
            let mut row = head.to_vec();
            row.extend([status.to_string(), String::new(), String::new(), reason]);
            w.write_record(&row)?;
            continue;
        }
        for (name, m) in &r.metrics {
            let mut row = head.to_vec();
            row.extend([
                "ok".to_string(),
                name.clone(),
                format!("{}", m.value),
                m.unit.clone(),
            ]);
            w.write_record(&row)?;
        }
    }
    let bytes = w.into_inner().map_err(|e| e.into_error())?;
    Ok(String::from_utf8(bytes).expect("CSV of UTF-8 strings is UTF-8"))
}

/// A configuration value on one line, as the benchmark format wants.
fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// A name component without spaces or slashes (the format splits on them).
fn name_part(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_whitespace() || c == '/' {
                '_'
            } else {
                c
            }
        })
        .collect()
}

/// Go's benchmark format: configuration lines, then a line per run.
pub fn to_benchstat(records: &[RunRecord]) -> String {
    let records: Vec<&RunRecord> = records.iter().collect();
    let mut out = String::new();
    let mut config: Option<[String; 4]> = None;
    for r in ordered(&records) {
        if r.outcome.status != Status::Ok || r.metrics.is_empty() {
            continue;
        }
        let this = [
            one_line(&r.label),
            r.backend.kind().to_string(),
            one_line(&r.machine.hostname),
            one_line(&r.machine.kernel),
        ];
        if config.as_ref() != Some(&this) {
            if config.is_some() {
                out.push('\n');
            }
            for (k, v) in ["label", "backend", "host", "kernel"].iter().zip(&this) {
                let _ = writeln!(out, "{k}: {v}");
            }
            config = Some(this);
        }
        let mut name = String::from("Benchmark");
        let mut chars = r.benchmark.chars();
        if let Some(c) = chars.next() {
            name.extend(c.to_uppercase());
            name.push_str(&name_part(chars.as_str()));
        }
        for (k, v) in &r.params {
            let _ = write!(name, "/{}={}", name_part(k), name_part(&param_value(v)));
        }
        let _ = write!(out, "{name} 1");
        for (metric, m) in &r.metrics {
            let _ = write!(out, " {} {}", m.value, name_part(metric));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_record::example_record;

    fn records() -> Vec<RunRecord> {
        let mut v = vec![
            example_record("numa02", "nb1", 2, 1.5),
            example_record("numa02", "nb0", 1, 2.0),
            example_record("numa02", "nb1", 1, 1.4),
        ];
        let mut failed = example_record("numa02", "nb0", 2, 0.0);
        failed.outcome.status = Status::Failed;
        failed.outcome.reason = Some("task 1 exited with 2".into());
        failed.metrics.clear();
        v.push(failed);
        v
    }

    #[test]
    fn csv_has_a_row_per_run_and_metric_and_one_per_failed_run() {
        let text = to_csv(&records()).unwrap();
        let mut rd = csv::Reader::from_reader(text.as_bytes());
        let rows: Vec<csv::StringRecord> = rd.records().map(|r| r.unwrap()).collect();
        // Three runs with elapsed_s and user_s, and the failed run.
        assert_eq!(rows.len(), 7, "{text}");
        // Ordered by label, then repetition; metrics by name.
        let first = &rows[0];
        assert_eq!(&first[3], "nb0");
        assert_eq!(&first[7], "1");
        assert_eq!(&first[9], "elapsed_s");
        assert_eq!(&first[10], "2");
        assert_eq!(&first[11], "s");
        assert_eq!(&first[2], "tasks=2");
        let failed = rows.iter().find(|r| &r[8] == "failed").unwrap();
        assert_eq!(&failed[11], "task 1 exited with 2");
        assert_eq!(&failed[9], "");
        // The same records in another order export to the same bytes.
        let mut rev = records();
        rev.reverse();
        assert_eq!(to_csv(&rev).unwrap(), text);
    }

    #[test]
    fn benchstat_groups_runs_under_their_configuration() {
        let text = to_benchstat(&records());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "label: nb0");
        assert_eq!(lines[1], "backend: real");
        assert!(lines[2].starts_with("host: "), "{text}");
        assert_eq!(
            lines[4], "BenchmarkNuma02/tasks=2 1 2 elapsed_s 3.8 user_s",
            "{text}"
        );
        // The failed run is left out; nb1's two runs follow their config.
        assert_eq!(lines[5], "");
        assert_eq!(lines[6], "label: nb1");
        assert_eq!(
            text.lines().filter(|l| l.starts_with("Benchmark")).count(),
            3
        );
        // Every benchmark line: name, 1 iteration, value-unit pairs.
        for l in lines.iter().filter(|l| l.starts_with("Benchmark")) {
            let f: Vec<&str> = l.split(' ').collect();
            assert_eq!(f[1], "1");
            assert_eq!(f.len() % 2, 0, "{l}");
            for pair in f[2..].chunks(2) {
                assert!(pair[0].parse::<f64>().is_ok(), "{l}");
            }
        }
    }

    #[test]
    fn numbers_in_cases_and_labels_are_ordered_by_value() {
        let mut v = Vec::new();
        for label in ["scan 16000", "scan 2000", "scan 1000"] {
            for bytes in [16000, 1000, 2000] {
                let mut r = example_record("numa02", label, 1, 1.0);
                r.params.insert("bytes".into(), serde_json::json!(bytes));
                v.push(r);
            }
        }
        let text = to_csv(&v).unwrap();
        let mut rd = csv::Reader::from_reader(text.as_bytes());
        let mut seen: Vec<(String, String)> = Vec::new();
        for row in rd.records().map(|r| r.unwrap()) {
            let x = (row[2].to_string(), row[3].to_string());
            if seen.last() != Some(&x) {
                seen.push(x);
            }
        }
        let cases: Vec<&str> = seen.iter().step_by(3).map(|x| x.0.as_str()).collect();
        assert_eq!(
            cases,
            [
                "bytes=1000 tasks=2",
                "bytes=2000 tasks=2",
                "bytes=16000 tasks=2"
            ],
            "{text}"
        );
        let labels: Vec<&str> = seen[..3].iter().map(|x| x.1.as_str()).collect();
        assert_eq!(labels, ["scan 1000", "scan 2000", "scan 16000"], "{text}");
        let bench = to_benchstat(&v);
        let order: Vec<&str> = bench
            .lines()
            .filter_map(|l| l.strip_prefix("label: "))
            .collect();
        assert_eq!(
            order[..3],
            ["scan 1000", "scan 2000", "scan 16000"],
            "{bench}"
        );
    }

    #[test]
    fn names_and_configuration_lines_stay_on_one_line() {
        let mut r = example_record("numa02", "a b\nc", 1, 1.0);
        r.params
            .insert("cmd".into(), serde_json::json!("make -j2 /x"));
        let text = to_benchstat(&[r]);
        assert!(text.starts_with("label: a b c\n"), "{text}");
        assert!(text.contains("/cmd=make_-j2__x"), "{text}");
    }
}
