//! Grouping, pairing, verdicts, footnotes and rendering of comparisons,
//! on records built from `example_record`.

use numalab_record::{example_record, Better, Metric, Outcome, RunRecord};
use numalab_report::compare::{labels_name, CompareReport, NoteKind, Role};
use numalab_report::compare_render::{self, Layout};
use numalab_report::{compare, CompareError, CompareOptions, Dataset, DatasetOptions, Key};
use numalab_stats::{TestKind, Verdict};
use std::path::PathBuf;

/// Records of one configuration: `values[i]` is run i's `elapsed_s`;
/// `throughput` (higher is better) is its inverse.
fn runs(label: &str, host: &str, tasks: u64, values: &[f64]) -> Vec<(PathBuf, RunRecord)> {
    values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let mut r = example_record("numa_test", label, i as u32 + 1, *v);
            r.params.insert("tasks".into(), tasks.into());
            r.machine.hostname = host.into();
            r.metrics.insert(
                "throughput".into(),
                Metric::new(1000.0 / v, "ops/s", Better::Higher),
            );
            r.id = format!("{label}-{host}-{tasks}-{i}");
            (PathBuf::from(format!("{}.json", r.id)), r)
        })
        .collect()
}

const BASE: [f64; 6] = [10.0, 10.2, 9.9, 10.1, 10.05, 9.95];

fn scaled(k: f64) -> Vec<f64> {
    BASE.iter().map(|v| v * k).collect()
}

/// `compare` of `ds` with the default options but the baseline `b`.
fn with_baseline(ds: &Dataset, b: &str) -> Result<CompareReport, CompareError> {
    compare(
        ds,
        &CompareOptions {
            baseline: Some(b.into()),
            ..opts()
        },
    )
}

fn opts() -> CompareOptions {
    CompareOptions::default()
}

#[test]
fn verdicts_with_enough_runs() {
    let mut v = runs("A", "h", 4, &BASE);
    v.extend(runs("B", "h", 4, &scaled(1.10))); // 10% slower
    v.extend(runs("C", "h", 4, &scaled(0.90))); // 10% faster
    v.extend(runs("D", "h", 4, &scaled(1.003))); // within the 1% threshold
    let ds = Dataset::new(v);
    let r = compare(&ds, &opts()).unwrap();
    assert_eq!(r.baseline, "A");
    let t = r.tables.iter().find(|t| t.metric == "elapsed_s").unwrap();
    let verdict = |name: &str| {
        let k = r
            .configurations
            .iter()
            .position(|c| c.name == name)
            .unwrap();
        t.rows
            .iter()
            .find(|x| x.config == k)
            .unwrap()
            .comparison
            .as_ref()
            .map(|c| c.verdict)
    };
    assert_eq!(verdict("A"), None);
    assert_eq!(verdict("B"), Some(Verdict::Worse));
    assert_eq!(verdict("C"), Some(Verdict::Better));
    assert_eq!(verdict("D"), Some(Verdict::WithinNoise));
    // Higher is better for throughput: B is worse there too.
    let t = r.tables.iter().find(|t| t.metric == "throughput").unwrap();
    assert_eq!(t.better, Better::Higher);
    let b = t.rows.iter().find(|x| x.config == 1).unwrap();
    assert_eq!(b.comparison.as_ref().unwrap().verdict, Verdict::Worse);
    // Regressions: B's elapsed_s, user_s and throughput.
    let regs = r.regressions();
    assert_eq!(regs.len(), 3, "{regs:?}");
    assert!(regs.iter().all(|x| x.config == "B"));
    assert!(regs[0]
        .to_string()
        .starts_with("elapsed_s of B in numa_test is worse than A (+10.0%, p="));

    let text = compare_render::to_text(&r, Layout::Full);
    assert!(
        text.lines().all(|l| l.len() <= 80 && l.is_ascii()),
        "{text}"
    );
    assert!(text.contains("elapsed_s (s, lower is better)"), "{text}");
    assert!(
        text.contains("throughput (ops/s, higher is better)"),
        "{text}"
    );
    assert!(text.contains("+10.0%") && text.contains("worse"), "{text}");
    assert!(text.contains("-10.0%") && text.contains("better"), "{text}");
    assert!(text.contains("within noise"), "{text}");
    assert!(text.contains("geomean"), "{text}");
    // D is not significant: "~" in place of the change.
    let d_line = text
        .lines()
        .find(|l| l.contains(" D ") && l.contains("within noise"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(d_line.contains(" ~ "), "{d_line}");
}

#[test]
fn too_few_runs_high_variation_outliers_failed_runs_are_footnotes() {
    let mut v = runs("A", "h", 4, &[10.0, 10.1, 9.9]);
    v.extend(runs("B", "h", 4, &[12.0, 15.0, 9.0]));
    // An outlier among 7 runs of C.
    v.extend(runs(
        "C",
        "h",
        4,
        &[10.0, 10.1, 9.9, 10.05, 9.95, 10.0, 30.0],
    ));
    let mut failed = runs("B", "h", 4, &[1.0]);
    failed[0].1.outcome = Outcome::failed("task 2 was killed by signal 9");
    failed[0].1.id = "B-failed".into();
    v.extend(failed);
    let ds = Dataset::new(v);
    let r = compare(&ds, &opts()).unwrap();
    let kinds: Vec<NoteKind> = r.notes.iter().map(|n| n.kind).collect();
    for k in [
        NoteKind::TooFewRuns,
        NoteKind::HighVariation,
        NoteKind::Outlier,
        NoteKind::FailedRuns,
        NoteKind::Interval,
    ] {
        assert!(kinds.contains(&k), "{k:?} missing: {:#?}", r.notes);
    }
    let text = |k: NoteKind| {
        r.notes
            .iter()
            .filter(|n| n.kind == k)
            .map(|n| n.text.clone())
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(text(NoteKind::TooFewRuns)
        .contains("Mann-Whitney U cannot reach p < 0.05 with 3 vs 3 runs"));
    assert!(text(NoteKind::FailedRuns).contains("B in numa_test: 1 failed run left out of the statistics (first: task 2 was killed by signal 9)"));
    assert!(
        text(NoteKind::Outlier).contains("elapsed_s of run 7 (30.00 s"),
        "{}",
        text(NoteKind::Outlier)
    );
    assert!(text(NoteKind::Outlier).contains("kept in the statistics"));
    // The outlier stays in the statistics.
    let t = r.tables.iter().find(|t| t.metric == "elapsed_s").unwrap();
    let c = t.rows.iter().find(|x| x.config == 2).unwrap();
    assert_eq!(c.n, 7);
    assert_eq!(c.outliers, vec![6]);
    // Too few runs: no verdict, but the ratio and p are still shown.
    let b = t.rows.iter().find(|x| x.config == 1).unwrap();
    let cmp = b.comparison.as_ref().unwrap();
    assert_eq!(cmp.verdict, Verdict::TooFewSamples);
    assert!(cmp.ratio.is_some() && cmp.p_value.is_some());
    assert_eq!(b.n, 3, "the failed run is not counted");
    // Every row references its notes, and the text lists them.
    let out = compare_render::to_text(&r, Layout::Full);
    assert!(out.contains("\nNotes\n[1] "), "{out}");
    assert!(out.contains("too few runs"));
    assert!(out.lines().all(|l| l.len() <= 80), "{out}");
}

#[test]
fn machine_differences_the_labels_do_not_name() {
    let mut v = runs("A", "h", 4, &BASE);
    let mut b = runs("B", "h", 4, &BASE);
    for (_, r) in &mut b {
        r.machine.thp_enabled = Some("always".into());
        r.machine.kernel = "6.5.0".into();
    }
    v.extend(b);
    // A label that names the THP difference.
    let mut c = runs("thp-always", "h", 4, &BASE);
    for (_, r) in &mut c {
        r.machine.thp_enabled = Some("always".into());
    }
    v.extend(c);
    let ds = Dataset::new(v);
    let r = compare(&ds, &opts()).unwrap();
    let diffs: Vec<&str> = r
        .notes
        .iter()
        .filter(|n| n.kind == NoteKind::MachineDiffers)
        .map(|n| n.text.as_str())
        .collect();
    assert_eq!(diffs.len(), 1, "{diffs:?}");
    assert!(diffs[0].contains("B differs from its baseline A in kernel (6.5.0 vs 6.1.0-example), THP (always vs madvise)"), "{}", diffs[0]);
    assert!(labels_name(
        &["A", "5.16"],
        "kernel",
        &["5.16.0-nest", "5.15.0"]
    ));
    assert!(labels_name(
        &["nb0", "numa_balancing=1"],
        "numa_balancing",
        &["0", "1"]
    ));
    assert!(!labels_name(&["A", "B"], "numa_balancing", &["0", "1"]));
}

#[test]
fn mixed_machines_within_a_configuration_are_noted() {
    let mut v = runs("A", "h", 4, &BASE);
    v[0].1.machine.kernel = "6.9.0".into();
    let ds = Dataset::new(v);
    let r = compare(&ds, &opts()).unwrap();
    assert!(r.notes.iter().any(|n| n
        .text
        .contains("the runs of A differ in kernel: 6.1.0-example / 6.9.0")));
}

#[test]
fn tuning_differences_within_a_configuration_and_against_the_baseline_are_noted() {
    let mut v = runs("A", "h", 4, &BASE);
    for (_, r) in &mut v {
        r.machine.tuning.kernel_cmdline = Some("ro quiet".into());
    }
    v[1].1.machine.tuning.zone_reclaim_mode = Some("1".into());
    v[0].1.machine.tuning.zone_reclaim_mode = Some("0".into());
    let mut b = runs("B", "h", 4, &BASE);
    for (_, r) in &mut b {
        r.machine.tuning.kernel_cmdline = Some("ro quiet mitigations=off".into());
        r.machine.tuning.cpus_allowed = Some("0-3".into());
    }
    v.extend(b);
    let ds = Dataset::new(v);
    let r = compare(&ds, &opts()).unwrap();
    let notes: Vec<&str> = r.notes.iter().map(|n| n.text.as_str()).collect();
    assert!(
        notes
            .iter()
            .any(|n| n.contains("the runs of A differ in vm.zone_reclaim_mode: 0 / 1")),
        "{notes:?}"
    );
    let base = notes
        .iter()
        .find(|n| n.contains("B differs from its baseline A"))
        .unwrap_or_else(|| panic!("{notes:?}"));
    assert!(
        base.contains("kernel command line (ro quiet mitigations=off vs ro quiet)"),
        "{base}"
    );
    // Known on one side only: not news.
    assert!(!base.contains("allowed CPUs"), "{base}");
}

#[test]
fn hosts_pair_per_host_and_cross_host_on_request() {
    let mut v = runs("A", "h1", 4, &BASE);
    v.extend(runs("B", "h1", 4, &scaled(1.2)));
    v.extend(runs("A", "h2", 4, &scaled(2.0)));
    v.extend(runs("B", "h2", 4, &scaled(2.0)));
    let ds = Dataset::new(v);
    let r = compare(&ds, &opts()).unwrap();
    let names: Vec<&str> = r.configurations.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, vec!["A@h1", "A@h2", "B@h1", "B@h2"]);
    let t = r.tables.iter().find(|t| t.metric == "elapsed_s").unwrap();
    let row = |n: &str| {
        let k = names.iter().position(|x| *x == n).unwrap();
        t.rows.iter().find(|x| x.config == k).unwrap()
    };
    // Per host: B@h1 against A@h1 (worse), B@h2 against A@h2 (same).
    assert_eq!(row("A@h1").role, Role::Baseline);
    assert_eq!(row("A@h2").role, Role::Baseline);
    assert_eq!(row("B@h1").baseline_config, Some(0));
    assert_eq!(row("B@h2").baseline_config, Some(1));
    assert_eq!(
        row("B@h1").comparison.as_ref().unwrap().verdict,
        Verdict::Worse
    );
    assert_eq!(
        row("B@h2").comparison.as_ref().unwrap().verdict,
        Verdict::WithinNoise
    );

    // Pinning the baseline to one host compares the other host against it.
    let r = with_baseline(&ds, "A@h1").unwrap();
    assert_eq!(r.baseline, "A@h1");
    let t = r.tables.iter().find(|t| t.metric == "elapsed_s").unwrap();
    let a2 = t.rows.iter().find(|x| x.config == 1).unwrap();
    assert_eq!(a2.role, Role::Candidate);
    assert_eq!(a2.baseline_config, Some(0));
    assert_eq!(a2.comparison.as_ref().unwrap().verdict, Verdict::Worse);
    assert!(r.notes.iter().any(|n| n
        .text
        .contains("A@h2 ran on h2 and is compared with A@h1 on h1: across hosts")));
}

#[test]
fn labels_named_after_hosts_compare_across_hosts() {
    let mut v = runs("tux", "tux", 4, &BASE);
    v.extend(runs("penguin", "penguin", 4, &scaled(1.5)));
    let ds = Dataset::new(v);
    let r = with_baseline(&ds, "tux").unwrap();
    let t = r.tables.iter().find(|t| t.metric == "elapsed_s").unwrap();
    let p = t.rows.iter().find(|x| x.role == Role::Candidate).unwrap();
    assert_eq!(p.comparison.as_ref().unwrap().verdict, Verdict::Worse);
    // The host difference is named by the labels: no machine note.
    assert!(
        !r.notes.iter().any(|n| n.kind == NoteKind::MachineDiffers),
        "{:#?}",
        r.notes
    );
}

#[test]
fn baseline_and_metric_errors_name_what_is_there() {
    let mut v = runs("A", "h", 4, &BASE);
    v.extend(runs("B", "h", 4, &BASE));
    let ds = Dataset::new(v);
    let e = with_baseline(&ds, "Z").unwrap_err();
    assert!(matches!(e, CompareError::UnknownBaseline { .. }));
    assert_eq!(
        e.to_string(),
        "no runs labelled \"Z\" to use as the baseline; the labels present are: A, B"
    );
    let e = compare(
        &ds,
        &CompareOptions {
            metrics: vec!["nope".into()],
            ..opts()
        },
    )
    .unwrap_err();
    assert!(e
        .to_string()
        .contains("the metrics present are: elapsed_s, throughput, user_s"));
    // Only the chosen metrics, in the order given.
    let r = compare(
        &ds,
        &CompareOptions {
            metrics: vec!["user_s".into(), "elapsed_s".into()],
            ..opts()
        },
    )
    .unwrap();
    let m: Vec<&str> = r.tables.iter().map(|t| t.metric.as_str()).collect();
    assert_eq!(m, vec!["user_s", "elapsed_s"]);
    // Only failed runs: an error.
    let mut f = runs("A", "h", 4, &[1.0]);
    f[0].1.outcome = Outcome::failed("x");
    let e = compare(&Dataset::new(f), &opts()).unwrap_err();
    assert!(e.to_string().starts_with("none of the 1 run(s) succeeded"));
    // One label under two schedulers is two configurations; an unknown
    // baseline is answered with their names, which `--baseline` takes.
    let mut v = runs("A", "h", 4, &BASE);
    let mut scx = runs("A", "h", 4, &BASE);
    for (i, (p, r)) in scx.iter_mut().enumerate() {
        r.applied.scx = Some(numalab_record::ScxApplied {
            scheduler: "node-affine".into(),
            exec: false,
            ops: "numalab_node_affine".into(),
            enable_seq: 1,
        });
        r.id = format!("scx-{i}");
        *p = PathBuf::from(format!("{}.json", r.id));
    }
    v.extend(scx);
    let ds = Dataset::new(v);
    let e = with_baseline(&ds, "Z").unwrap_err();
    assert_eq!(
        e.to_string(),
        "no configuration \"Z\" to use as the baseline; the configurations present are: A/linux, A/node-affine"
    );
    let r = with_baseline(&ds, "A/node-affine").unwrap();
    assert_eq!(r.baseline, "A/node-affine");
}

#[test]
fn welch_and_noise_threshold_options() {
    let mut v = runs("A", "h", 4, &BASE);
    v.extend(runs("B", "h", 4, &scaled(1.03)));
    let ds = Dataset::new(v);
    let r = compare(
        &ds,
        &CompareOptions {
            test: TestKind::WelchT,
            noise_threshold: 0.05,
            ..opts()
        },
    )
    .unwrap();
    let t = r.tables.iter().find(|t| t.metric == "elapsed_s").unwrap();
    let c = t.rows[1].comparison.as_ref().unwrap();
    assert_eq!(c.test, TestKind::WelchT);
    assert!(c.significant);
    assert_eq!(
        c.verdict,
        Verdict::WithinNoise,
        "3% is below a 5% threshold"
    );
    let text = compare_render::to_text(&r, Layout::Full);
    // Significant, so the change is shown, but within the threshold.
    let b_line = text
        .lines()
        .find(|l| l.contains(" B ") && l.contains("within noise"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(b_line.contains("+3.0%"), "{b_line}");
    assert!(text.contains("Welch's t test"), "{text}");
    assert!(text.contains("5% noise threshold"), "{text}");
}

#[test]
fn several_cases_and_benchmarks_geomean_and_normalised_layout() {
    let mut v = Vec::new();
    for tasks in [4, 16] {
        v.extend(runs("A", "h", tasks, &BASE));
        v.extend(runs(
            "B",
            "h",
            tasks,
            &scaled(if tasks == 4 { 1.1 } else { 1.2 }),
        ));
    }
    let mut other = runs("A", "h", 1, &BASE);
    for (_, r) in &mut other {
        r.benchmark = "twohalves".into();
        r.id = format!("th-{}", r.id);
    }
    v.extend(other);
    let ds = Dataset::new(v);
    let r = compare(&ds, &opts()).unwrap();
    let t = r.tables.iter().find(|t| t.metric == "elapsed_s").unwrap();
    let gb = t.geomean.iter().find(|g| g.config == 1).unwrap();
    assert!((gb.ratio.unwrap() - (1.1f64 * 1.2).sqrt()).abs() < 1e-9);
    assert_eq!(gb.cases, 2);
    let text = compare_render::to_text(&r, Layout::Full);
    assert!(
        text.contains("numa_test tasks=4") && text.contains("numa_test tasks=16"),
        "{text}"
    );
    assert!(text.contains("twohalves"), "{text}");
    assert!(
        text.contains("the baseline A has no runs of this case") || !text.contains("no baseline"),
        "{text}"
    );
    let norm = compare_render::to_text(&r, Layout::Normalized);
    assert!(norm.lines().all(|l| l.len() <= 80), "{norm}");
    let line = norm
        .lines()
        .find(|l| l.starts_with("numa_test tasks=16"))
        .unwrap_or_else(|| panic!("{norm}"));
    assert!(line.contains(" L ") && line.contains("1.200*"), "{line}");
    assert!(norm.contains("Better"), "{norm}");
    let gm = norm.lines().find(|l| l.starts_with("geomean")).unwrap();
    assert!(
        gm.contains(&format!("{:.3}", (1.1f64 * 1.2).sqrt())),
        "{gm}"
    );
}

#[test]
fn markdown_csv_and_json() {
    let mut v = runs("A", "h", 4, &BASE);
    v.extend(runs("B|x", "h", 4, &scaled(1.1)));
    let ds = Dataset::new(v);
    let r = compare(&ds, &opts()).unwrap();

    let md = compare_render::to_markdown(&r, Layout::Full);
    // Every table: header, delimiter row, rows with as many cells.
    let mut in_table = false;
    let mut cells = 0;
    for l in md.lines() {
        if l.starts_with('|') {
            let n = l.replace("\\|", "").matches('|').count();
            if !in_table {
                in_table = true;
                cells = n;
            } else {
                assert_eq!(n, cells, "{l}");
            }
        } else {
            in_table = false;
        }
    }
    assert!(md.contains("| :--- | :--- | ---: |"), "{md}");
    assert!(md.contains("B\\|x"), "{md}");
    assert!(md.contains("### elapsed\\_s (s, lower is better)"), "{md}");

    let csv = compare_render::to_csv(&r).unwrap();
    let mut rd = csv::Reader::from_reader(csv.as_bytes());
    let headers = rd.headers().unwrap().clone();
    assert_eq!(&headers[0], "kind");
    let rows: Vec<csv::StringRecord> = rd.records().map(|x| x.unwrap()).collect();
    assert!(rows.iter().all(|x| x.len() == headers.len()));
    let col = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let b = rows
        .iter()
        .find(|x| {
            &x[col("metric")] == "elapsed_s"
                && &x[col("config")] == "B|x"
                && &x[col("kind")] == "group"
        })
        .unwrap();
    assert_eq!(&b[col("verdict")], "worse");
    assert_eq!(&b[col("baseline")], "A");
    assert!((b[col("ratio")].parse::<f64>().unwrap() - 1.1).abs() < 1e-9);
    assert!(csv.contains("\r\n"), "RFC 4180 line ends");
    assert!(rows.iter().any(|x| &x[col("kind")] == "geomean"));

    let json: serde_json::Value = serde_json::from_str(&compare_render::to_json(&r)).unwrap();
    assert_eq!(json["schema_version"], 1);
    assert_eq!(json["baseline"], "A");
    assert_eq!(json["tables"][0]["metric"], "elapsed_s");
    assert_eq!(
        json["tables"][0]["rows"][1]["comparison"]["verdict"],
        "worse"
    );
    assert_eq!(json["settings"]["test"], "mann_whitney_u");
}

#[test]
fn a_ratio_interval_below_zero_for_nonnegative_values_is_footnoted() {
    // The candidate's mean cannot be told from zero (one run of five is
    // not 0), so Fieller's interval for candidate/baseline reaches below 0,
    // which a ratio of non-negative values cannot be.
    let mut v = runs("A", "h", 4, &[10.0, 11.0, 9.0, 10.0, 10.5]);
    v.extend(runs("B", "h", 4, &[0.0, 0.0, 0.0, 0.0, 5.0]));
    let ds = Dataset::new(v);
    let r = compare(&ds, &opts()).unwrap();
    let t = r.tables.iter().find(|t| t.metric == "elapsed_s").unwrap();
    let b = t.rows.iter().find(|x| x.config == 1).unwrap();
    let ratio = b.comparison.as_ref().unwrap().ratio.unwrap();
    assert!(ratio.bounded && ratio.low < 0.0, "{ratio:?}");
    let notes: Vec<&str> = r
        .notes
        .iter()
        .filter(|n| n.kind == NoteKind::Interval)
        .map(|n| n.text.as_str())
        .collect();
    assert!(
        notes.iter().any(|n| n.contains("reaches below 0")),
        "{notes:?}"
    );
    // A well-determined ratio gets no such note.
    let mut v = runs("A", "h", 4, &BASE);
    v.extend(runs("B", "h", 4, &scaled(1.1)));
    let r = compare(&Dataset::new(v), &opts()).unwrap();
    assert!(r.notes.iter().all(|n| !n.text.contains("reaches below 0")));
}

/// Records of numa01 in one configuration: `bind`, `default` and
/// `inverse-bind` runs with these elapsed times.
fn numa01(label: &str, kernel: &str, times: [f64; 3]) -> Vec<(PathBuf, RunRecord)> {
    let mut v = Vec::new();
    for (p, t) in ["bind", "default", "inverse-bind"].iter().zip(times) {
        for (i, k) in [1.0, 1.01, 0.99, 1.005, 0.995].iter().enumerate() {
            let mut r = example_record("numa01", label, i as u32 + 1, t * k);
            r.params.insert("placement".into(), (*p).into());
            r.params.insert("threads".into(), 4.into());
            r.machine.kernel = kernel.into();
            r.id = format!("{label}-{kernel}-{p}-{i}");
            v.push((PathBuf::from(format!("{}.json", r.id)), r));
        }
    }
    v
}

fn select(group_by: &[&str], filters: &[&str]) -> DatasetOptions {
    DatasetOptions {
        group_by: group_by.iter().map(|k| Key::parse(k)).collect(),
        filters: filters.iter().map(|f| f.parse().unwrap()).collect(),
    }
}

#[test]
fn case_names_from_arrays_and_objects_are_plain_in_every_format() {
    // Older records: parameters holding arrays and objects.
    let mut v = Vec::new();
    for (label, k) in [("A", 1.0), ("B", 1.1)] {
        for (j, cpus) in [
            serde_json::json!([0, 1, 2, 3]),
            serde_json::json!({"node0": [0, 1], "node1": [2, 3]}),
        ]
        .iter()
        .enumerate()
        {
            for (i, (p, mut r)) in runs(label, "h", 4, &scaled(k)).into_iter().enumerate() {
                r.params.insert("cpus".into(), cpus.clone());
                r.params
                    .insert("command".into(), serde_json::json!(["sh", "-c", "x[1]"]));
                r.id = format!("{label}-{j}-{i}");
                v.push((p.with_file_name(format!("{}.json", r.id)), r));
            }
        }
    }
    let ds = Dataset::new(v);
    let r = compare(&ds, &opts()).unwrap();
    let plain = |s: &str| !s.contains('{') && !s.contains('[');
    for c in &r.cases {
        assert!(plain(&c.name) && plain(&c.variant), "{}", c.name);
    }
    let names: Vec<&str> = r.cases.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        vec![
            "numa_test cpus=0,1,2,3",
            "numa_test cpus=node0:0+1,node1:2+3"
        ]
    );

    let text = compare_render::to_text(&r, Layout::Full);
    assert!(!text.contains('{'), "{text}");
    assert!(text.contains("command=sh,-c,x(1)"), "{text}");
    assert!(text.contains("cpus=node0:0+1,node1:2+3"), "{text}");
    assert!(text.lines().all(|l| l.len() <= 80), "{text}");
    let md = compare_render::to_markdown(&r, Layout::Full);
    assert!(!md.contains('{') && !md.contains("cpus=\\["), "{md}");
    let csv = compare_render::to_csv(&r).unwrap();
    let mut rd = csv::Reader::from_reader(csv.as_bytes());
    let headers = rd.headers().unwrap().clone();
    let col = |name: &str| headers.iter().position(|h| h == name).unwrap();
    for row in rd.records() {
        let row = row.unwrap();
        assert!(
            plain(&row[col("case")]) && plain(&row[col("params")]),
            "{row:?}"
        );
    }
    assert!(
        csv.contains("command=sh,-c,x(1) cpus=0,1,2,3 tasks=4"),
        "{csv}"
    );
    let json: serde_json::Value = serde_json::from_str(&compare_render::to_json(&r)).unwrap();
    for c in json["cases"].as_array().unwrap() {
        assert!(plain(c["name"].as_str().unwrap()), "{c}");
        assert!(c.get("params_key").is_none(), "{c}");
    }
    let html = numalab_report::html::report(&ds, &r, &["x".into()]);
    assert!(
        html.contains("<code>numa_test cpus=0,1,2,3</code>"),
        "{html}"
    );
    assert!(!html.contains("cpus=[") && !html.contains("cpus={"));
}

#[test]
fn group_by_a_parameter_compares_its_values_within_one_case() {
    let mut v = numa01("A", "6.1.0", [10.0, 15.0, 20.0]);
    // An older record carries a position_between_bounds of its own: never
    // read, neither as a metric nor as the position.
    v[5].1.metrics.insert(
        "position_between_bounds".into(),
        Metric::new(0.99, "fraction", Better::Lower),
    );
    let ds = Dataset::with_options(v, &select(&["placement"], &[])).unwrap();
    let r = with_baseline(&ds, "default").unwrap();
    assert_eq!(r.baseline, "default");
    assert_eq!(r.group_by, vec!["placement"]);
    let names: Vec<&str> = r.configurations.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, vec!["bind", "default", "inverse-bind"]);
    assert_eq!(r.cases.len(), 1);
    assert_eq!(r.cases[0].name, "numa01");
    assert!(r
        .tables
        .iter()
        .all(|t| t.metric != "position_between_bounds"));
    let t = r.tables.iter().find(|t| t.metric == "elapsed_s").unwrap();
    let verdict = |k: usize| {
        let row = t.rows.iter().find(|x| x.config == k).unwrap();
        (row.role, row.comparison.as_ref().map(|c| c.verdict))
    };
    assert_eq!(verdict(1), (Role::Baseline, None));
    assert_eq!(verdict(0), (Role::Candidate, Some(Verdict::Better)));
    assert_eq!(verdict(2), (Role::Candidate, Some(Verdict::Worse)));
    // position_between_bounds, derived from the elapsed times.
    assert_eq!(r.positions.len(), 1);
    let p = &r.positions[0];
    assert_eq!(p.config, "");
    assert!((p.value.unwrap() - 0.5).abs() < 1e-9, "{p:?}");
    let text = compare_render::to_text(&r, Layout::Full);
    assert!(
        text.contains("Configurations by placement (--group-by)."),
        "{text}"
    );
    assert!(
        text.contains(
            "\n  numa01\n    position_between_bounds (default between bind = 0 and inverse-bind = 1, of\n      mean elapsed_s): 0.50\n"
        ),
        "{text}"
    );
    assert!(text.lines().all(|l| l.len() <= 80), "{text}");

    // Asking for it as a metric says where it is.
    let e = compare(
        &ds,
        &CompareOptions {
            metrics: vec!["position_between_bounds".into()],
            ..opts()
        },
    )
    .unwrap_err();
    assert!(e
        .to_string()
        .contains("derived from the runs' elapsed times"));
    // An unknown configuration lists those present.
    let e = with_baseline(&ds, "A").unwrap_err();
    assert_eq!(
        e.to_string(),
        "no configuration \"A\" to use as the baseline; the configurations present are: bind, default, inverse-bind"
    );
}

#[test]
fn group_by_kernel_and_backend_names_configurations_by_their_values() {
    let mut v = numa01("old", "6.1.0", [10.0, 15.0, 20.0]);
    v.extend(numa01("new", "6.10.0", [10.0, 12.0, 20.0]));
    let ds = Dataset::with_options(v, &select(&["kernel", "backend"], &[])).unwrap();
    let r = with_baseline(&ds, "6.1.0/real").unwrap();
    let names: Vec<&str> = r.configurations.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, vec!["6.1.0/real", "6.10.0/real"]);
    assert_eq!(r.configurations[1].label, "new");
    // The kernel is what the configurations are: no "differs" note.
    assert!(
        !r.notes.iter().any(|n| n.kind == NoteKind::MachineDiffers),
        "{:#?}",
        r.notes
    );
    let t = r.tables.iter().find(|t| t.metric == "elapsed_s").unwrap();
    let d = t
        .rows
        .iter()
        .find(|x| x.config == 1 && r.cases[x.case].name == "numa01 placement=default")
        .unwrap();
    assert_eq!(d.comparison.as_ref().unwrap().verdict, Verdict::Better);
    // One position per configuration, under the last case of the three.
    let pos: Vec<(String, f64)> = r
        .positions
        .iter()
        .map(|p| (p.config.clone(), p.value.unwrap()))
        .collect();
    assert_eq!(pos.len(), 2);
    assert_eq!(pos[0].0, "6.1.0/real");
    assert!((pos[0].1 - 0.5).abs() < 1e-9 && (pos[1].1 - 0.2).abs() < 1e-9);
    let text = compare_render::to_text(&r, Layout::Full);
    let cases = text.split("\nCases\n").nth(1).unwrap();
    assert!(
        cases.starts_with(
            "  numa01 placement=bind\n  numa01 placement=default\n  numa01 placement=inverse-bind\n    numa01: position_between_bounds"
        ),
        "{text}"
    );
    assert!(
        cases.contains("6.1.0/real 0.50, 6.10.0/real 0.20"),
        "{text}"
    );
}

#[test]
fn default_grouping_positions_and_show_directory_view() {
    let mut v = numa01("A", "6.1.0", [10.0, 15.0, 20.0]);
    v.extend(numa01("B", "6.1.0", [10.0, 12.5, 20.0]));
    let ds = Dataset::new(v);
    let r = compare(&ds, &opts()).unwrap();
    let text = compare_render::to_text(&r, Layout::Full);
    assert!(text.contains("A 0.50, B 0.25"), "{text}");
    let shown = numalab_report::show::dataset(&ds);
    assert!(shown.contains("numa01: position_between_bounds"), "{shown}");
    assert!(shown.contains("A 0.50, B 0.25"), "{shown}");
    assert!(shown.lines().all(|l| l.len() <= 80), "{shown}");
}

#[test]
fn filters_select_the_runs_compared() {
    let mut v = numa01("A", "6.1.0", [10.0, 15.0, 20.0]);
    v.extend(numa01("B", "6.1.0", [11.0, 15.0, 20.0]));
    let ds = Dataset::with_options(
        v.clone(),
        &select(&[], &["placement=bind", "placement=default", "label=B"]),
    )
    .unwrap();
    assert_eq!(ds.runs.len(), 10);
    let r = compare(&ds, &opts()).unwrap();
    assert_eq!(
        r.filters,
        vec!["placement=bind", "placement=default", "label=B"]
    );
    let text = compare_render::to_text(&r, Layout::Full);
    assert!(
        text.contains("only runs with placement=bind, placement=default, label=B"),
        "{text}"
    );
    let e = Dataset::with_options(v, &select(&[], &["label=C"])).unwrap_err();
    assert_eq!(
        e.to_string(),
        "--filter label=C keeps no record; the records have label = A, B"
    );
}

#[test]
fn geomean_only_over_cases_every_configuration_has() {
    let mut v = Vec::new();
    for tasks in [4, 16] {
        v.extend(runs("A", "h", tasks, &BASE));
    }
    // B ran tasks=4 only; C ran both, but every tasks=16 run failed.
    v.extend(runs("B", "h", 4, &scaled(1.1)));
    v.extend(runs("C", "h", 4, &scaled(1.2)));
    let mut failed = runs("C", "h", 16, &[1.0, 1.0]);
    for (_, r) in &mut failed {
        r.outcome = Outcome::failed("boom");
    }
    v.extend(failed);
    let ds = Dataset::new(v);
    let r = compare(&ds, &opts()).unwrap();
    let t = r.tables.iter().find(|t| t.metric == "elapsed_s").unwrap();
    for g in &t.geomean {
        assert_eq!((g.cases, g.left_out), (1, 1), "{g:?}");
    }
    // A's geomean is its tasks=4 mean only, not pulled by tasks=16.
    let a = t.geomean.iter().find(|g| g.config == 0).unwrap();
    assert!((a.mean.unwrap() - 10.033333333333333).abs() < 1e-6, "{a:?}");
    let b = t.geomean.iter().find(|g| g.config == 1).unwrap();
    assert!((b.ratio.unwrap() - 1.1).abs() < 1e-9);
    let note = r.note(a.notes[0]).unwrap();
    assert_eq!(
        note.text,
        "elapsed_s: the geomean rows are over the 1 case every configuration has a value in; 1 case left out: numa_test tasks=16 (no runs of B, no value for C)"
    );
    assert!(t.geomean.iter().all(|g| g.notes.contains(&note.id)));
    let text = compare_render::to_text(&r, Layout::Full);
    assert!(
        text.contains("1 case left out: numa_test tasks=16"),
        "{text}"
    );

    // Nothing shared: no geomean, and the note says so.
    let mut v = runs("A", "h", 4, &BASE);
    v.extend(runs("B", "h", 16, &BASE));
    let r = compare(&Dataset::new(v), &opts()).unwrap();
    let t = r.tables.iter().find(|t| t.metric == "elapsed_s").unwrap();
    assert!(t
        .geomean
        .iter()
        .all(|g| g.mean.is_none() && g.ratio.is_none()));
    assert!(r.notes.iter().any(|n| n
        .text
        .starts_with("elapsed_s: no geomean: no case has a value for every configuration")));
}

#[test]
fn runs_that_did_different_work_are_a_footnote() {
    // A build done once, then nothing: each run exited 0.
    let mut v = runs("A", "h", 4, &[0.3, 0.01, 0.01]);
    v.extend(runs("B", "h", 4, &[5.0, 5.1, 4.9]));
    for (i, user) in [0.23, 0.0, 0.0].into_iter().enumerate() {
        let r = &mut v[i].1;
        r.metrics.insert("user_s".into(), Metric::seconds(user));
        r.metrics.insert("sys_s".into(), Metric::seconds(0.0));
    }
    let ds = Dataset::new(v);
    let r = compare(&ds, &opts()).unwrap();
    let notes: Vec<_> = r
        .notes
        .iter()
        .filter(|n| n.kind == NoteKind::WorkDiffers)
        .collect();
    assert_eq!(notes.len(), 1, "{:#?}", r.notes);
    assert_eq!(
        notes[0].text,
        "A in numa_test: CPU time differs more than 10x between runs (run 2: 0.00 s, run 1: 0.23 s): did every run do the same work?"
    );
    // The rows of A's case refer to it; B's do not.
    let t = r.tables.iter().find(|t| t.metric == "elapsed_s").unwrap();
    let a = t.rows.iter().find(|x| x.config == 0).unwrap();
    let b = t.rows.iter().find(|x| x.config == 1).unwrap();
    assert!(a.notes.contains(&notes[0].id), "{:?}", a.notes);
    assert!(!b.notes.contains(&notes[0].id), "{:?}", b.notes);
    let out = compare_render::to_text(&r, Layout::Full);
    assert!(out.contains("did every run do the same work?"), "{out}");
    let json = compare_render::to_json(&r);
    assert!(json.contains("\"work_differs\""), "{json}");
}

/// The HTML report's line under "Comparison" says how to read the tables,
/// whatever the text header looks like: it once took the second line of
/// the text rendering, which is the summary line's continuation when that
/// wraps ("  default", the baseline's label).
#[test]
fn the_line_under_comparison_explains_the_tables_when_the_summary_wraps() {
    let mut v = runs("default", "h", 4, &BASE);
    v.extend(runs("candidate", "h", 4, &scaled(1.10)));
    let ds = Dataset::new(v);
    let r = with_baseline(&ds, "default").unwrap();
    // The text's summary line wraps, and its continuation is a label.
    let text = compare_render::to_text(&r, Layout::Full);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("numalab compare: 12 runs"), "{text}");
    assert_eq!(lines[1], "  default", "{text}");

    let html = numalab_report::html::report(&ds, &r, &["x".into()]);
    let head = "<h2>Comparison</h2><p class=\"meta\">";
    let at = html.find(head).expect("a Comparison section") + head.len();
    let under = &html[at..at + html[at..].find("</p>").unwrap()];
    let want = numalab_report::table::html_escape(&compare_render::explanation(&r, Layout::Full));
    assert_eq!(under, want);
    assert!(
        under.starts_with("Mann-Whitney U test, 95% intervals."),
        "{under}"
    );
}

/// A counter the baseline never moved (pages migrated under `none`): no
/// ratio exists, so the change reads `from 0` where the test is
/// significant, never `~`, which would say it is not.
#[test]
fn a_change_from_a_zero_baseline_reads_from_0() {
    let with = |label: &str, migrated: &[f64]| {
        let mut v = runs(label, "h", 4, &BASE);
        for ((_, r), m) in v.iter_mut().zip(migrated) {
            r.metrics.insert(
                "numa_pages_migrated".into(),
                Metric::new(*m, "pages", Better::Lower),
            );
        }
        v
    };
    let mut v = with("none", &[0.0; 6]);
    v.extend(with(
        "autonuma",
        &[900.0, 1000.0, 1100.0, 950.0, 1050.0, 1000.0],
    ));
    let mut o = opts();
    o.baseline = Some("none".into());
    let r = compare(&Dataset::new(v), &o).unwrap();
    let text = compare_render::to_text(&r, Layout::Compact);
    let line = text
        .lines()
        .find(|l| l.starts_with("numa_pages_migrated"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("from 0") && line.contains("worse"), "{line}");
    let full = compare_render::to_text(&r, Layout::Full);
    assert!(full.contains("from 0"), "{full}");
}

/// A real run and a simulated one of the same work, both labelled
/// `default` (the default): one table, the real run the one baseline,
/// named in the header; it took `--group-by backend` before.
#[test]
fn one_label_on_two_backends_compares_the_model_with_the_real_run() {
    let mut v = runs("default", "sim:host", 4, &scaled(1.3));
    for (_, r) in &mut v {
        r.backend = numalab_record::Backend::Sim {
            machine: "host".into(),
            scheduler: "linux".into(),
            balancer: "none".into(),
            seed: 1,
            details: Default::default(),
        };
    }
    v.extend(runs("default", "h", 4, &BASE));
    let ds = Dataset::new(v);
    let r = compare(&ds, &opts()).unwrap();
    let names: Vec<&str> = r.configurations.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names.len(), 2, "{names:?}");
    let real = names.iter().position(|n| n.ends_with("/real")).unwrap();
    assert_eq!(r.baseline, names[real]);
    let t = r.tables.iter().find(|t| t.metric == "elapsed_s").unwrap();
    let roles: Vec<Role> = t.rows.iter().map(|x| x.role).collect();
    assert_eq!(roles.iter().filter(|x| **x == Role::Baseline).count(), 1);
    let sim = t.rows.iter().find(|x| x.config != real).unwrap();
    assert_eq!(sim.baseline_config, Some(real));
    assert_eq!(sim.comparison.as_ref().unwrap().verdict, Verdict::Worse);
    let text = compare_render::to_text(&r, Layout::Full);
    assert!(
        text.contains(&format!("baseline {}", names[real])),
        "{text}"
    );
}
