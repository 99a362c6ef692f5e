//! `numalab export`: every run's metrics for a spreadsheet or benchstat.

mod common;
use common::*;

/// Two labels of simulated spin runs, two runs each, in `dir/r`.
fn runs(dir: &std::path::Path) {
    for label in ["a", "b"] {
        let o = numalab_in(
            &[
                "sim",
                "spin",
                "--machine",
                "ht2",
                "--tasks",
                "2",
                "--seconds",
                "0.05",
                "--placement",
                "default",
                "--runs",
                "2",
                "--label",
                label,
                "--results",
                "r",
                "--quiet",
            ],
            dir,
        );
        assert!(o.status.success(), "{}", show(&o));
    }
}

#[test]
fn csv_has_a_row_per_run_and_metric() {
    let d = tempfile::tempdir().unwrap();
    runs(d.path());
    let o = numalab_in(&["export", "r"], d.path());
    assert!(o.status.success(), "{}", show(&o));
    let text = text(&o.stdout);
    let mut rd = csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = rd.headers().unwrap().iter().map(str::to_string).collect();
    assert_eq!(header[0], "id");
    assert_eq!(header[9], "metric");
    let rows: Vec<csv::StringRecord> = rd.records().map(|r| r.unwrap()).collect();
    let metrics: usize = json_records(&d.path().join("r"))
        .iter()
        .map(|(_, r)| r["metrics"].as_object().unwrap().len())
        .sum();
    assert_eq!(rows.len(), metrics, "{text}");
    assert!(rows.iter().all(|r| &r[4] == "sim" && &r[8] == "ok"));
    assert_eq!(rows.iter().filter(|r| &r[3] == "a").count(), metrics / 2);
    // -o writes the same bytes to a file.
    let o = numalab_in(&["export", "r", "-o", "runs.csv"], d.path());
    assert!(o.status.success(), "{}", show(&o));
    assert_eq!(
        std::fs::read_to_string(d.path().join("runs.csv")).unwrap(),
        text
    );
}

#[test]
fn benchstat_lines_follow_their_label() {
    let d = tempfile::tempdir().unwrap();
    runs(d.path());
    let o = numalab_in(&["export", "r", "--format", "benchstat"], d.path());
    assert!(o.status.success(), "{}", show(&o));
    let text = text(&o.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "label: a", "{text}");
    assert_eq!(lines[1], "backend: sim", "{text}");
    let benches: Vec<&&str> = lines
        .iter()
        .filter(|l| l.starts_with("Benchmark"))
        .collect();
    assert_eq!(benches.len(), 4, "{text}");
    for l in benches {
        assert!(l.starts_with("BenchmarkSpin/"), "{l}");
        assert!(l.contains("/placement=default"), "{l}");
        assert!(l.contains(" elapsed_s"), "{l}");
    }
    assert!(text.contains("\nlabel: b\n"), "{text}");
}

#[test]
fn nothing_to_export_is_one_line() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir(d.path().join("empty")).unwrap();
    let o = numalab_in(&["export", "empty"], d.path());
    assert_one_line_error(&o, "no records in empty");
    let o = numalab_in(&["export", "r", "--format", "xml"], d.path());
    assert!(!o.status.success());
}
