//! `numalab run numa_test` and `numalab topology` as a user runs them.

use std::path::PathBuf;
use std::process::Command;

mod common;
use common::{
    alive, assert_one_line_error, children, numalab_in as numalab, text, wait_for_children,
};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../topology/tests/fixtures")
}

#[test]
fn numa_test_writes_one_valid_record_per_run() {
    let dir = tempfile::tempdir().unwrap();
    let o = numalab(
        &[
            "run",
            "numa_test",
            "--tasks",
            "2,4",
            "--runs",
            "3",
            "--size",
            "200000",
            "--label",
            "A",
        ],
        dir.path(),
    );
    let out = text(&o.stdout);
    assert!(
        o.status.success(),
        "stdout: {out}\nstderr: {}",
        text(&o.stderr)
    );
    // one line per run, then the summary (seed 001's table)
    assert_eq!(
        out.lines().filter(|l| l.starts_with('[')).count(),
        6,
        "{out}"
    );
    assert!(
        out.contains("Tasks AverageUserTime    ElapsedTime  TotalUserTime"),
        "{out}"
    );
    assert!(out.contains("N=2: 3, N=4: 3"), "{out}");
    assert!(
        out.lines()
            .filter(|l| !l.starts_with("record: "))
            .all(|l| l.len() <= 80),
        "80 columns: {out}"
    );

    let rep = numalab_record::load_paths(&[dir.path().join("numalab-results")]);
    assert!(rep.errors.is_empty(), "{:?}", rep.errors);
    assert_eq!(rep.records.len(), 6);
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/record-schema.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let mut per_n = std::collections::BTreeMap::new();
    for (path, r) in &rep.records {
        let raw: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        assert!(
            validator.is_valid(&raw),
            "{} does not match docs/record-schema.json",
            path.display()
        );
        assert!(r.outcome.is_ok(), "{:?}", r.outcome);
        assert_eq!(r.benchmark, "numa_test");
        assert_eq!(r.label, "A");
        assert_eq!(r.backend.kind(), "real");
        let n = r.params["tasks"].as_u64().unwrap();
        *per_n.entry(n).or_insert(0) += 1;
        assert_eq!(r.tasks.len() as u64, n);
        assert_eq!(r.params["size"].as_u64(), Some(200_000));
        for t in &r.tasks {
            assert_eq!(t.work_done, 100, "all passes done");
            assert!(t.user_s > 0.0 || t.residency_samples > 0);
            assert!(
                t.residency_samples >= 100 * (200_000 / 65_536),
                "residency read every chunk"
            );
            assert_eq!(t.node_time_s.len(), r.machine.topology.nodes.len());
            assert!(t.initial_node.is_some() && t.main_node.is_some());
            assert_eq!(t.exit, "exit 0");
        }
        for m in ["elapsed_s", "user_s", "sys_s", "avg_user_s"] {
            assert!(r.metric(m).is_some_and(|v| v >= 0.0), "metric {m}");
        }
        // The last sample, taken when every task had ended: all passes.
        let last = r.series.samples.last().expect("observed");
        assert_eq!(last.progress, vec![100; n as usize]);
        assert!(!r.machine.kernel.is_empty());
    }
    assert_eq!(per_n.into_iter().collect::<Vec<_>>(), vec![(2, 3), (4, 3)]);
}

#[test]
fn the_load_peak_runs_and_is_timed() {
    let dir = tempfile::tempdir().unwrap();
    // A size that keeps one task busy past the 3 s load peak on any machine
    // would make this test slow; instead start the peak early.
    let o = Command::new(env!("CARGO_BIN_EXE_numalab"))
        .args(["run", "numa_test", "--tasks", "1", "--size", "3000000"])
        .env("NUMALAB_NUMA_TEST_PEAK_AT", "0.05")
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let rep = numalab_record::load_paths(&[dir.path().join("numalab-results")]);
    let r = &rep.records[0].1;
    let h = r.metric("hackbench_s").expect("H recorded");
    assert!(h > 0.0);
    assert!(text(&o.stdout).contains(" H "), "{}", text(&o.stdout));
}

#[test]
fn bad_input_is_one_line_and_non_zero() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_one_line_error(
        &numalab(&["run", "numa_test", "--tasks", "0"], d),
        "at least 1 task",
    );
    assert_one_line_error(&numalab(&["run", "numa_test", "--size", "-5"], d), "--size");
    assert_one_line_error(&numalab(&["run", "numa_test", "--size", "0"], d), "--size");
    assert_one_line_error(
        &numalab(
            &["run", "numa_test", "--tasks", "2", "--size", "900000000000"],
            d,
        ),
        "does not fit",
    );
    assert_one_line_error(&numalab(&["run", "nosuchbench"], d), "nosuchbench");
    assert_one_line_error(&numalab(&["run", "numa_test", "--runs", "0"], d), "--runs");
    assert_one_line_error(
        &numalab(&["run", "numa_test", "--interval", "-1"], d),
        "interval",
    );
    // an unwritable results directory: a path under a regular file
    std::fs::write(d.join("file"), "x").unwrap();
    assert_one_line_error(
        &numalab(
            &[
                "run",
                "numa_test",
                "--size",
                "1000",
                "--results",
                "file/sub",
            ],
            d,
        ),
        "results directory",
    );
    // nothing was written anywhere by the refused runs
    assert!(!d.join("numalab-results").exists());
}

#[test]
fn topology_text_and_json_here_and_on_fixtures() {
    let d = tempfile::tempdir().unwrap();
    let o = numalab(&["topology"], d.path());
    assert!(o.status.success());
    assert!(text(&o.stdout).contains("node distances:"));
    let o = numalab(&["topology", "--json"], d.path());
    let t: numalab_topology::Topology = serde_json::from_slice(&o.stdout).unwrap();
    assert!(!t.cpus.is_empty());
    let o = numalab(&["topology", "--machine"], d.path());
    assert!(o.status.success() && text(&o.stdout).contains("kernel:"));

    for (name, nodes, cpus) in [
        ("vm-1node", 1, 2),
        ("azusa-4node-16cpu", 4, 16),
        ("2socket-smt-4llc", 2, 32),
        ("memory-only-node", 3, 8),
    ] {
        let root = fixtures().join(name);
        let root = root.to_str().unwrap();
        let o = numalab(&["topology", "--sysfs", root], d.path());
        assert!(o.status.success(), "{name}: {}", text(&o.stderr));
        assert!(
            text(&o.stdout).starts_with(&format!("{nodes} node")),
            "{name}"
        );
        let o = numalab(&["topology", "--json", "--sysfs", root], d.path());
        let t: numalab_topology::Topology = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!((t.nodes.len(), t.cpus.len()), (nodes, cpus), "{name}");
    }
    assert_one_line_error(
        &numalab(&["topology", "--sysfs", "/nonexistent"], d.path()),
        "/nonexistent",
    );
}

#[test]
fn a_killed_task_fails_the_run_loudly() {
    let dir = tempfile::tempdir().unwrap();
    let c = Command::new(env!("CARGO_BIN_EXE_numalab"))
        .args([
            "run",
            "numa_test",
            "--tasks",
            "2",
            "--size",
            "4000000",
            "--disturb",
            "none",
        ])
        .current_dir(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let kids = wait_for_children(c.id(), 2);
    unsafe { libc::kill(kids[0] as i32, libc::SIGKILL) };
    let o = c.wait_with_output().unwrap();
    assert!(!o.status.success());
    let err = text(&o.stderr);
    assert!(
        err.contains("1 of 1 runs failed") && err.contains("signal 9 (SIGKILL)"),
        "{err}"
    );
    assert!(text(&o.stdout).contains("FAILED"));
    let rep = numalab_record::load_paths(&[dir.path().join("numalab-results")]);
    assert_eq!(rep.records.len(), 1, "the failed run is recorded");
    let r = &rep.records[0].1;
    assert!(!r.outcome.is_ok());
    assert!(r.outcome.reason.as_deref().unwrap().contains("SIGKILL"));
}

#[test]
fn ctrl_c_stops_every_task_and_keeps_finished_records() {
    let dir = tempfile::tempdir().unwrap();
    // first a tiny run that finishes, then a long one that is interrupted
    let c = Command::new(env!("CARGO_BIN_EXE_numalab"))
        .args(["run", "numa_test", "--tasks", "1,2", "--size", "4000000"])
        .env("NUMALAB_NUMA_TEST_PEAK_AT", "0.2")
        .current_dir(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // wait for the second run (2 tasks + the storm's process)
    let kids = wait_for_children(c.id(), 3);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let mut all = kids.clone();
    for k in &kids {
        all.extend(children(*k)); // the storm's senders and receivers
    }
    unsafe { libc::kill(c.id() as i32, libc::SIGINT) };
    let o = c.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("interrupted"));
    std::thread::sleep(std::time::Duration::from_millis(200));
    let left: Vec<u32> = all.into_iter().filter(|p| alive(*p)).collect();
    assert!(left.is_empty(), "processes outlived numalab: {left:?}");
    let rep = numalab_record::load_paths(&[dir.path().join("numalab-results")]);
    assert_eq!(rep.records.len(), 1, "the finished run's record is kept");
    assert!(rep.errors.is_empty());
}
