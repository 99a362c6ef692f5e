//! `numalab sim` as a user runs it: the acceptance commands and the
//! error cases.

use std::path::{Path, PathBuf};

mod common;
use common::{assert_one_line_error, numalab_in as numalab, text};

fn records(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    v.retain(|p| p.extension().is_some_and(|e| e == "json"));
    v.sort();
    v
}

#[test]
fn acceptance_numa_test_prints_the_seed_tables_and_writes_records() {
    let dir = tempfile::tempdir().unwrap();
    let o = numalab(
        &[
            "sim",
            "--machine",
            "azusa16",
            "--scheduler",
            "node-affine",
            "numa_test",
            "--tasks",
            "16",
            "--size",
            "1000000",
            "--runs",
            "5",
        ],
        dir.path(),
    );
    let out = text(&o.stdout);
    assert!(o.status.success(), "{out}\n{}", text(&o.stderr));
    // One line per run, as real runs print them.
    assert_eq!(
        out.lines().filter(|l| l.starts_with('[')).count(),
        5,
        "{out}"
    );
    // Seed 001's summary: one row for N=16 over 5 runs.
    let summary = out.split("numa_test summary").nth(1).expect("summary");
    assert!(summary.contains("Tasks AverageUserTime"), "{summary}");
    assert!(
        summary.lines().any(|l| l.starts_with("   16 ")),
        "{summary}"
    );
    assert!(summary.contains("(N=16: 5)"), "{summary}");
    let recs = records(&dir.path().join("numalab-results"));
    assert_eq!(recs.len(), 5);
    let loaded = numalab_record::load_paths(&[dir.path().join("numalab-results")]);
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    // Seed 000's per-task table, from a record, 16 task rows.
    let shown = numalab(&["show", loaded.records[0].0.to_str().unwrap()], dir.path());
    let shown = text(&shown.stdout);
    assert!(
        shown
            .lines()
            .any(|l| l == "Job  node00 node01 node02 node03 | iSched MSched | UserTime(s)"),
        "{shown}"
    );
    for (_, r) in &loaded.records {
        assert_eq!(r.backend.kind(), "sim");
        assert_eq!(r.benchmark, "numa_test");
        assert_eq!(r.tasks.len(), 16);
        for k in ["elapsed_s", "user_s", "sys_s", "avg_user_s", "hackbench_s"] {
            assert!(r.metric(k).is_some(), "missing {k}");
        }
        assert!(r.tasks.iter().all(|t| t.work_done == t.work_expected));
    }
}

#[test]
fn records_validate_against_the_published_schema() {
    let dir = tempfile::tempdir().unwrap();
    let o = numalab(
        &[
            "sim",
            "--machine",
            "ht2",
            "--scheduler",
            "linux",
            "--balancer",
            "autonuma",
            "numa02",
            "--bytes",
            "268435456",
            "--loops",
            "100",
            "--results",
            "out",
        ],
        dir.path(),
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let schema_text = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/record-schema.json"),
    )
    .unwrap();
    let schema: serde_json::Value = serde_json::from_str(&schema_text).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let recs = records(&dir.path().join("out"));
    assert_eq!(recs.len(), 1);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&recs[0]).unwrap()).unwrap();
    assert!(validator.is_valid(&v), "record does not match the schema");
    assert_eq!(v["params"]["placement"], "default");
    assert!(v["series"]["samples"].as_array().unwrap().len() > 1);
}

#[test]
fn same_command_twice_gives_identical_records() {
    // The same command line (it is recorded), in two working directories.
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let args = |d: &str| {
        vec![
            "sim".to_string(),
            "--machine".into(),
            "ht2".into(),
            "--balancer".into(),
            "sampling".into(),
            "--seed".into(),
            "42".into(),
            "numa02_SMT".into(),
            "--bytes".into(),
            "268435456".into(),
            "--loops".into(),
            "50".into(),
            "--results".into(),
            d.into(),
        ]
    };
    for dir in &dirs {
        let a: Vec<String> = args("out");
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let o = numalab(&a, dir.path());
        assert!(o.status.success(), "{}", text(&o.stderr));
    }
    let (a, b) = (
        records(&dirs[0].path().join("out")),
        records(&dirs[1].path().join("out")),
    );
    assert_eq!(a.len(), 1);
    assert_eq!(
        std::fs::read(&a[0]).unwrap(),
        std::fs::read(&b[0]).unwrap(),
        "records differ"
    );
    assert_eq!(a[0].file_name(), b[0].file_name());
}

#[test]
fn list_names_presets_schedulers_and_balancers() {
    let dir = tempfile::tempdir().unwrap();
    let o = numalab(&["sim", "--list"], dir.path());
    let out = text(&o.stdout);
    assert!(o.status.success());
    for name in [
        "azusa16",
        "tx7",
        "ht2",
        "epyc7642",
        "genoa2n",
        "rome256",
        "host",
        "node-blind",
        "linux",
        "node-affine",
        "nest",
        "none",
        "autonuma",
        "sampling",
    ] {
        assert!(
            out.lines().any(|l| l.trim_start().starts_with(name)),
            "{name} missing from --list:\n{out}"
        );
    }
    assert!(out.contains("dynamic=false"), "{out}");
}

#[test]
fn trace_file_is_chrome_trace_json_with_a_track_per_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let o = numalab(
        &[
            "sim",
            "--machine",
            "epyc7642",
            "--scheduler",
            "nest",
            "hackbench",
            "--trace",
            "--groups",
            "2",
            "--fds",
            "6",
            "--loops",
            "20",
            "--cpus",
            "0-5",
        ],
        dir.path(),
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    // The trace is beside the record, named after it.
    let rec = &records(&dir.path().join("numalab-results"))[0];
    let trace = rec.with_extension("trace");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(trace).unwrap()).unwrap();
    let evs = v["traceEvents"].as_array().unwrap();
    let tracks = evs.iter().filter(|e| e["name"] == "thread_name").count();
    assert_eq!(tracks, 96);
    let spans: Vec<&serde_json::Value> = evs.iter().filter(|e| e["ph"] == "X").collect();
    assert!(!spans.is_empty());
    // --cpus 0-5: nothing runs elsewhere.
    assert!(spans.iter().all(|s| s["tid"].as_u64().unwrap() < 6));
}

fn machine_file(dir: &Path, name: &str, edit: impl Fn(String) -> String) -> String {
    let base = r#"name = "m"
[topology]
nodes = 2
cores_per_node = 2
memory_per_node_gib = 1
distances = [[10, 20], [20, 10]]
[memory]
local_latency_ns = 100
bandwidth_gbs = 10
[cache]
llc_mib = 8
llc_hit_ns = 10
cross_llc_ns = 50
[cpu]
base_ghz = 2
max_ghz = 2
min_ghz = 2
"#;
    std::fs::write(dir.join(name), edit(base.to_string())).unwrap();
    name.to_string()
}

#[test]
fn invalid_machine_files_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    type Edit = Box<dyn Fn(String) -> String>;
    let cases: Vec<(&str, Edit, &str)> = vec![
        (
            "asym.toml",
            Box::new(|s: String| s.replace("[[10, 20], [20, 10]]", "[[10, 20], [21, 10]]")),
            "machine file asym.toml: distances are asymmetric: d(0,1)=20 but d(1,0)=21",
        ),
        (
            "zero.toml",
            Box::new(|s: String| s.replace("cores_per_node = 2", "cores_per_node = 0")),
            "machine file zero.toml: topology.cores_per_node must be at least 1",
        ),
        (
            "neg.toml",
            Box::new(|s: String| s.replace("local_latency_ns = 100", "local_latency_ns = -3")),
            "machine file neg.toml: memory.local_latency_ns = -3: must be between 1 and 100000 ns",
        ),
        (
            // Ran to the 3600 s simulation limit before the ranges.
            "huge.toml",
            Box::new(|s: String| s.replace("local_latency_ns = 100", "local_latency_ns = 1e308")),
            "machine file huge.toml: memory.local_latency_ns = 1e308: must be between 1 and 100000 ns",
        ),
        (
            "unknown.toml",
            Box::new(|s: String| s.replace("llc_hit_ns = 10", "llc_hit_ns = 10\nl4_mib = 64")),
            "unknown field `l4_mib`",
        ),
    ];
    for (name, edit, needle) in cases {
        let f = machine_file(dir.path(), name, edit);
        let o = numalab(
            &["sim", "--machine", &f, "spin", "--tasks", "1"],
            dir.path(),
        );
        assert_one_line_error(&o, needle);
    }
    // A valid file runs.
    let f = machine_file(dir.path(), "ok.toml", |s| s);
    let o = numalab(
        &[
            "sim",
            "--machine",
            &f,
            "spin",
            "--tasks",
            "2",
            "--iterations",
            "100000000",
            "--placement",
            "default",
        ],
        dir.path(),
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    // One record (beside it, `.numalab/sizes.json` keeps the sizes).
    let written = dir
        .path()
        .join("numalab-results")
        .read_dir()
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".json"))
        })
        .count();
    assert_eq!(written, 1);
}

/// A machine file's `[costs]` (what `numalab calibrate` writes) reaches
/// the run and its record; a bad cost is a one-line error naming the key.
#[test]
fn machine_file_costs_reach_the_run_and_its_record() {
    let dir = tempfile::tempdir().unwrap();
    let mut runs = Vec::new();
    // The default spin iteration is 6 cycles: 3 ns at this file's 2 GHz.
    for (name, costs) in [("plain", ""), ("slow", "[costs]\nspin_ns = 6\n")] {
        let f = machine_file(dir.path(), &format!("{name}.toml"), |s| s + costs);
        let o = numalab(
            &[
                "sim",
                "--machine",
                &f,
                "spin",
                "--tasks",
                "1",
                "--iterations",
                "200000000",
                "--placement",
                "default",
                "--results",
                name,
            ],
            dir.path(),
        );
        assert!(o.status.success(), "{}", text(&o.stderr));
        let recs = common::json_records(&dir.path().join(name));
        assert_eq!(recs.len(), 1, "{name}");
        runs.push(recs[0].1.clone());
    }
    let elapsed = |r: &serde_json::Value| r["metrics"]["elapsed_s"]["value"].as_f64().unwrap();
    let ratio = elapsed(&runs[1]) / elapsed(&runs[0]);
    assert!((1.9..=2.05).contains(&ratio), "{ratio}");
    let costs = |r: &serde_json::Value| r["backend"]["details"]["costs"].clone();
    assert_eq!(costs(&runs[0])["spin_ns"], 3.0);
    assert_eq!(costs(&runs[1])["spin_ns"], 6.0);
    assert_eq!(costs(&runs[1])["exec_us"], 225.0);
    for (name, costs, needle) in [
        (
            "zero.toml",
            "spin_ns = 0",
            "machine file zero.toml: costs.spin_ns = 0: must be between 0.01 and 1000 ns",
        ),
        (
            "unknown.toml",
            "spin = 1",
            "unknown field `spin`, expected one of `spin_ns`",
        ),
    ] {
        let f = machine_file(dir.path(), name, |s| format!("{s}[costs]\n{costs}\n"));
        let o = numalab(
            &["sim", "--machine", &f, "spin", "--tasks", "1"],
            dir.path(),
        );
        assert_one_line_error(&o, needle);
    }
}

#[test]
fn unknown_policies_and_parameters_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            vec!["--scheduler", "cfs"],
            "unknown scheduler \"cfs\" (valid: node-blind, linux, node-affine, nest)",
        ),
        (
            vec!["--scheduler", "node-affine[homenode=2]"],
            "node-affine: unknown parameter \"homenode\" (valid: dynamic, initial",
        ),
        (
            vec!["--scheduler", "node-affine[dynamic=maybe]"],
            "dynamic=\"maybe\" must be true or false",
        ),
        (
            vec!["--balancer", "ibs"],
            "unknown balancer \"ibs\" (valid: none, autonuma, sampling)",
        ),
        (
            vec!["--balancer", "autonuma:scan_size=1"],
            "autonuma: unknown parameter \"scan_size\"",
        ),
        (
            vec!["--machine", "azusa17"],
            "machine file azusa17: no such file and no such preset",
        ),
    ];
    for (extra, needle) in cases {
        let mut args = vec!["sim"];
        if !extra.contains(&"--machine") {
            args.extend(["--machine", "azusa16"]);
        }
        args.extend(extra);
        args.extend(["numa_test", "--tasks", "2"]);
        let o = numalab(&args, dir.path());
        assert_one_line_error(&o, needle);
        assert!(
            !dir.path().join("numalab-results").exists(),
            "results directory created before validation"
        );
    }
    let o = numalab(&["sim", "numa_test"], dir.path());
    assert_one_line_error(&o, "sim needs --machine");
    let o = numalab(
        &[
            "sim",
            "--machine",
            "azusa16",
            "twohalves",
            "--threads",
            "2",
            "--bytes",
            "1073741824",
            "--iterations",
            "3",
        ],
        dir.path(),
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    // A benchmark the simulator cannot run at all: a one-line reason.
    let o = numalab(
        &["sim", "--machine", "ht2", "command", "--", "true"],
        dir.path(),
    );
    assert_one_line_error(&o, "cannot run a program");
}

#[test]
fn compare_works_unchanged_over_sim_records_of_two_schedulers() {
    let dir = tempfile::tempdir().unwrap();
    for (s, l) in [("node-blind", "A"), ("node-affine", "E")] {
        let o = numalab(
            &[
                "sim",
                "--machine",
                "azusa16",
                "--scheduler",
                s,
                "numa_test",
                "--tasks",
                "8",
                "--size",
                "300000",
                "--runs",
                "5",
                "--label",
                l,
                "--results",
                "res",
            ],
            dir.path(),
        );
        assert!(o.status.success(), "{}", text(&o.stderr));
    }
    let loaded = numalab_record::load_paths(&[dir.path().join("res")]);
    assert!(loaded.errors.is_empty());
    assert_eq!(loaded.records.len(), 10);
    let labels: std::collections::BTreeSet<&str> = loaded
        .records
        .iter()
        .map(|(_, r)| r.label.as_str())
        .collect();
    assert_eq!(labels.into_iter().collect::<Vec<_>>(), vec!["A", "E"]);
    // Same benchmark parameters on both sides, as compare requires.
    let params: std::collections::BTreeSet<String> = loaded
        .records
        .iter()
        .map(|(_, r)| serde_json::to_string(&r.params).unwrap())
        .collect();
    assert_eq!(params.len(), 1);
    // `numalab compare` reads sim records like any others.
    let o = numalab(
        &[
            "compare",
            "res",
            "--baseline",
            "A",
            "--metric",
            "user_s",
            "--detailed",
        ],
        dir.path(),
    );
    let out = text(&o.stdout);
    assert!(o.status.success(), "{out}\n{}", text(&o.stderr));
    assert!(out.contains("A  5 runs, sim, baseline"), "{out}");
    let verdict = out
        .lines()
        .find(|l| l.starts_with("numa_test  E ") && l.contains('%'))
        .unwrap_or_else(|| panic!("no verdict row for E:\n{out}"));
    assert!(verdict.contains("better"), "{verdict}");
}

#[test]
fn sim_records_judge_convergence_by_the_real_runs_criteria() {
    // A sim record and a real one of a benchmark must mean the same by
    // "converged": the real runs' rule for it, its definition word for
    // word, the same observables; and none where real runs record none.
    use numalab_bench::autonuma::Kind;
    use numalab_record::convergence::definition;
    let dir = tempfile::tempdir().unwrap();
    let small = ["--bytes", "268435456", "--loops", "10"];
    let runs: [(&str, &[&str]); 6] = [
        ("numa01", &small),
        ("numa01_THREAD_ALLOC", &small),
        ("numa02", &small),
        ("numa02_SMT", &small),
        ("twohalves", &["--bytes", "536870912", "--iterations", "10"]),
        ("numa_test", &["--tasks", "2", "--size", "100000"]),
    ];
    for (bench, args) in runs {
        let out = format!("out-{bench}");
        let mut a = vec!["sim", "--machine", "ht2", "--balancer", "autonuma", bench];
        a.extend_from_slice(args);
        a.extend_from_slice(&["--results", &out]);
        let o = numalab(&a, dir.path());
        assert!(o.status.success(), "{bench}: {}", text(&o.stderr));
        let loaded = numalab_record::load_paths(&[dir.path().join(&out)]);
        assert_eq!(loaded.records.len(), 1, "{bench}");
        let r = &loaded.records[0].1;
        match Kind::from_name(bench) {
            Some(kind) => {
                let c = r.convergence.as_ref().expect("convergence");
                assert_eq!(c.definition, definition(kind.convergence_rule()), "{bench}");
                assert!(r.metric("started_s").is_some(), "{bench}");
                for s in &r.series.samples {
                    assert_eq!(s.task_memory_bytes.len(), r.tasks.len(), "{bench}");
                    assert_eq!(s.task_node.len(), r.tasks.len(), "{bench}");
                }
            }
            None => {
                assert!(r.convergence.is_none(), "{bench}");
                assert!(r
                    .series
                    .samples
                    .iter()
                    .all(|s| s.task_memory_bytes.is_empty()));
            }
        }
    }
}

/// `--placement` gives the simulator the CPU sets `numalab run spin`
/// uses: on the Zen 2 preset, seed 003's lists for same_ccd and same_ccx.
#[test]
fn spin_placements_are_the_real_runs_cpu_sets() {
    let dir = tempfile::tempdir().unwrap();
    let o = numalab(
        &[
            "sim",
            "--machine",
            "epyc7642",
            "spin",
            "--tasks",
            "6",
            "--iterations",
            "100000000",
            "--placement",
            "same_ccd,same_ccx,spread",
        ],
        dir.path(),
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let mut got: Vec<(String, String)> = records(&dir.path().join("numalab-results"))
        .iter()
        .map(|p| {
            let r: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
            (
                r["params"]["placement"].as_str().unwrap().to_string(),
                r["backend"]["details"]["cpus"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            )
        })
        .collect();
    got.sort();
    assert_eq!(
        got,
        vec![
            ("packed".to_string(), "0-5".to_string()),
            ("packed-smt".to_string(), "0-2,48-50".to_string()),
            ("spread".to_string(), "0,3,6,9,12,15".to_string()),
        ]
    );
    assert_one_line_error(
        &numalab(
            &["sim", "--machine", "tx7", "spin", "--placement", "mix"],
            dir.path(),
        ),
        "SMT",
    );
}

/// `--runs auto`: whole rounds of every case, as many as fit in
/// `--max-time` by the first round's time, between `--min-runs` and
/// `--max-runs`; every record says the count decided.
#[test]
fn runs_auto_runs_whole_rounds_within_its_bounds() {
    let run = |more: &[&str]| {
        let dir = tempfile::tempdir().unwrap();
        let mut a = vec![
            "sim",
            "--machine",
            "azusa16",
            "numa02",
            "--threads",
            "1,2",
            "--bytes",
            "16M",
            "--loops",
            "2",
            "--runs",
            "auto",
            "--min-runs",
            "2",
            "--max-runs",
            "4",
        ];
        a.extend_from_slice(more);
        let o = numalab(&a, dir.path());
        assert!(o.status.success(), "{}", text(&o.stderr));
        let loaded = numalab_record::load_paths(&[dir.path().join("numalab-results")]);
        assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
        let mut per_case = std::collections::BTreeMap::<u64, Vec<(u32, u32)>>::new();
        for (_, r) in &loaded.records {
            let threads = r.params["threads"].as_u64().unwrap();
            let rep = (r.repetition.index, r.repetition.of);
            per_case.entry(threads).or_default().push(rep);
        }
        // Run lines: rounds in the blocked order, each whole.
        let out = text(&o.stdout);
        let lines: Vec<String> = out
            .lines()
            .filter(|l| l.starts_with('['))
            .map(String::from)
            .collect();
        (per_case, lines, text(&o.stderr))
    };
    // A simulated round takes well under a second: the default 300 s
    // would allow hundreds, --max-runs stops at 4; with no time at all,
    // --min-runs still runs 2.
    for (more, want) in [(&[][..], 4), (&["--max-time", "0"][..], 2)] {
        let (per_case, lines, err) = run(more);
        assert_eq!(per_case.keys().copied().collect::<Vec<_>>(), [1, 2]);
        let count = per_case[&1].len() as u32;
        assert_eq!(count, want, "{per_case:?}");
        for reps in per_case.values() {
            let mut reps = reps.clone();
            reps.sort();
            let want: Vec<(u32, u32)> = (1..=count).map(|i| (i, count)).collect();
            assert_eq!(reps, want, "{per_case:?}");
        }
        assert_eq!(lines.len(), 2 * count as usize, "{lines:?}");
        for (k, l) in lines.iter().enumerate() {
            let (rep, threads) = (k / 2 + 1, k % 2 + 1);
            assert!(
                l.contains(&format!("threads={threads} #{rep}:")),
                "{lines:?}"
            );
        }
        // The first round shows the range, the rest the count decided.
        let n = 2 * count;
        assert!(lines[0].starts_with("[1/4..8] "), "{lines:?}");
        let last = format!("[{n}/{n}] ");
        assert!(lines[n as usize - 1].starts_with(&last), "{lines:?}");
        let words = err.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            words.contains(&format!("--runs auto: {count} runs of every case")),
            "{err}"
        );
    }
}

/// `numa_test` prints seed 000's per-task table of its last run after
/// the summary; with `--verbose`, of every run; with `--quiet`, none.
#[test]
fn numa_test_prints_the_per_task_table_of_its_last_run() {
    let dir = tempfile::tempdir().unwrap();
    let run = |extra: &[&str]| {
        let mut a = vec![
            "sim",
            "--machine",
            "azusa16",
            "numa_test",
            "--tasks",
            "2",
            "--size",
            "200000",
            "--runs",
            "2",
            "--results",
            "r",
        ];
        a.extend_from_slice(extra);
        let o = numalab(&a, dir.path());
        assert!(o.status.success(), "{}", text(&o.stderr));
        text(&o.stdout)
    };
    let out = run(&[]);
    assert_eq!(
        out.matches("Job  node00 node01 node02 node03").count(),
        1,
        "{out}"
    );
    assert!(out.contains("per task, run 2 of 2 (tasks=2)"), "{out}");
    assert_eq!(run(&["--verbose"]).matches("Job  node00").count(), 2);
    assert_eq!(run(&["--quiet"]).matches("Job  node00").count(), 0);
}

/// `--duration` holds on the simulator within the 20% it promises
/// (issue 27 item 7), where the old sizing was 2-4x off: buses near
/// saturation (azusa16's 2.1 GB/s boards), the two-halves' two nodes, and
/// a 1,024-CPU machine whose numa01 at the original's 3 GiB cannot be cut
/// into loops (1,024 threads zeroing it take 80 s a loop).
#[test]
fn duration_is_kept_within_20_percent_on_simulated_machines() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.toml");
    let n = 32;
    let row = |f: &dyn Fn(usize, usize) -> u32, i: usize| {
        let v: Vec<String> = (0..n).map(|j| f(i, j).to_string()).collect();
        format!("[{}]", v.join(", "))
    };
    let matrix = |f: &dyn Fn(usize, usize) -> u32| {
        let rows: Vec<String> = (0..n).map(|i| row(f, i)).collect();
        format!("[{}]", rows.join(", "))
    };
    let far = |i: usize, j: usize| i / 16 != j / 16;
    let dist = matrix(&|i, j| {
        if i == j {
            10
        } else if far(i, j) {
            32
        } else {
            12
        }
    });
    let lat = matrix(&|i, j| {
        if i == j {
            113
        } else if far(i, j) {
            200
        } else {
            125
        }
    });
    std::fs::write(
        &big,
        format!(
            "name = \"big\"\ndescription = \"32 nodes x 16 cores x 2 threads\"\n\
             [topology]\nnodes = 32\nnodes_per_package = 16\ncores_per_node = 16\n\
             threads_per_core = 2\nllcs_per_node = 4\nmemory_per_node_gib = 64.0\n\
             distances = {dist}\n[memory]\nlocal_latency_ns = 113.0\nlatency_ns = {lat}\n\
             bandwidth_gbs = 40.0\nline_bytes = 64\nmlp = 22\n[cache]\nllc_mib = 16.0\n\
             llc_hit_ns = 10.3\ncross_llc_ns = 100.0\n[cpu]\nbase_ghz = 2.25\nmax_ghz = 3.4\n\
             min_ghz = 1.5\ngovernor = \"performance\"\nsmt_throughput = 0.65\n"
        ),
    )
    .unwrap();
    let big = big.to_str().unwrap().to_string();
    let cases: &[(&str, &str, &str)] = &[
        ("azusa16", "twohalves", "3"),
        ("azusa16", "mem", "3"),
        ("azusa16", "numa02", "3"),
        ("tx7", "numa01", "3"),
        ("ht2", "numa02_SMT", "3"),
        // numa01's shortest run there is two passes of the smallest size
        // (every thread's first pass over the whole buffer, one loop).
        (&big, "numa01", "8"),
    ];
    for (i, &(machine, bench, secs)) in cases.iter().enumerate() {
        let out = dir.path().join(format!("r{i}"));
        let o = numalab(
            &[
                "sim",
                "--machine",
                machine,
                bench,
                "--duration",
                secs,
                "--runs",
                "1",
                "--interval",
                "0",
                "--results",
                out.to_str().unwrap(),
            ],
            dir.path(),
        );
        assert!(o.status.success(), "{machine} {bench}: {}", text(&o.stderr));
        let recs = records(&out);
        assert_eq!(recs.len(), 1, "{machine} {bench}");
        let r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&recs[0]).unwrap()).unwrap();
        let elapsed = r["metrics"]["elapsed_s"]["value"].as_f64().unwrap();
        let want: f64 = secs.parse().unwrap();
        assert!(
            (elapsed / want - 1.0).abs() <= 0.2,
            "{machine} {bench}: --duration {secs} ran {elapsed:.2} s\n{}",
            text(&o.stderr)
        );
    }
}

/// A calibrated file says the kernel it was measured under: with
/// `thp = "madvise"` the simulated run has 4 KiB pages (its record's
/// THP and chunk size say so), and with `numa_balancing = 1` a run
/// whose balancer is none says the kernel balanced, one with autonuma
/// does not.
#[test]
fn a_files_kernel_settings_reach_the_simulated_kernel() {
    let dir = tempfile::tempdir().unwrap();
    let f = machine_file(dir.path(), "k.toml", |s| {
        s + "[kernel]\nthp = \"madvise\"\nnuma_balancing = 1\n"
    });
    let said = "k.toml was measured with kernel.numa_balancing on";
    for (balancer, results, says) in [("none", "a", true), ("autonuma", "b", false)] {
        let o = numalab(
            &[
                "sim",
                "--machine",
                &f,
                "--balancer",
                balancer,
                "spin",
                "--tasks",
                "1",
                "--iterations",
                "1000000",
                "--results",
                results,
            ],
            dir.path(),
        );
        assert!(o.status.success(), "{}", text(&o.stderr));
        let err = text(&o.stderr)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(err.contains(said), says, "{balancer}: {err}");
        let recs = common::json_records(&dir.path().join(results));
        assert_eq!(
            recs[0].1["machine"]["thp_enabled"], "madvise",
            "{}",
            recs[0].1
        );
        assert_eq!(
            recs[0].1["backend"]["details"]["chunk_bytes"], 4096,
            "{}",
            recs[0].1
        );
    }
}
