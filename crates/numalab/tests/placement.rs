//! `numalab run spin` and `numalab run hackbench`: placement experiments
//! on CPU sets derived from the topology (seed 003).

use std::process::{Command, Stdio};

mod common;
use common::{assert_one_line_error, json_records, numalab_in, text, wait_for_children, EXE};

#[test]
fn spin_runs_every_placement_and_records_each() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = numalab_in(
        &[
            "run",
            "spin",
            "--tasks",
            "1",
            "--iterations",
            "20000000",
            "--placement",
            "default,packed",
            "--runs",
            "2",
        ],
        d,
    );
    let out = text(&o.stdout);
    assert!(o.status.success(), "{out}\n{}", text(&o.stderr));
    assert!(out.contains("spin summary"), "{out}");
    let recs = json_records(&d.join("numalab-results"));
    assert_eq!(recs.len(), 4);
    let placements: Vec<&str> = recs
        .iter()
        .map(|(_, r)| r["params"]["placement"].as_str().unwrap())
        .collect();
    assert_eq!(placements.iter().filter(|p| **p == "packed").count(), 2);
    for (_, r) in &recs {
        assert_eq!(r["benchmark"], "spin");
        assert_eq!(r["outcome"]["status"], "ok");
        // The CPU list is how this machine realised the placement.
        let cpus = r["backend"]["details"]["cpus"].as_str().unwrap();
        if r["params"]["placement"] == "packed" {
            assert_eq!(cpus, "0");
        } else {
            assert_eq!(cpus, "all");
        }
        let t = &r["tasks"][0];
        assert_eq!(t["work_done"], 20000000);
        assert_eq!(t["work_expected"], 20000000);
        // The last sample, taken when the task had ended: all its work.
        let samples = r["series"]["samples"].as_array().unwrap();
        assert_eq!(samples.last().unwrap()["progress"][0], 20000000);
        let on_nodes: f64 = t["node_time_s"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .sum();
        assert!(on_nodes > 0.0, "{t}");
        assert!(r["metrics"]["elapsed_s"]["value"].as_f64().unwrap() > 0.0);
    }
}

/// The CPUs `pid` may run on, from /proc/PID/status.
fn allowed(pid: u32) -> String {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim()
        .to_string()
}

/// Start `numalab ARGS`, wait for `depth` levels of child processes,
/// read the affinity of the deepest, then interrupt it. A task is seen
/// between its fork and its `sched_setaffinity`, so the affinity is read
/// until it is `want` (or 10 s have passed: then what it is, and the
/// caller's assertion fails).
fn affinity_while_running(args: &[&str], depth: usize, want: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let c = Command::new(EXE)
        .args(args)
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pid = c.id();
    for _ in 0..depth {
        pid = wait_for_children(pid, 1)[0];
    }
    let t = std::time::Instant::now();
    let mut a = allowed(pid);
    while a != want && t.elapsed() < std::time::Duration::from_secs(10) {
        std::thread::sleep(std::time::Duration::from_millis(20));
        a = allowed(pid);
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(c.id() as i32, libc::SIGINT) };
    let o = c.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", text(&o.stderr));
    a
}

#[test]
fn the_cpu_set_is_applied_to_tasks_and_to_what_they_fork() {
    let last = {
        let o = numalab_in(&["topology", "--json"], std::path::Path::new("."));
        let t: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        t["cpus"].as_array().unwrap().last().unwrap()["id"]
            .as_u64()
            .unwrap()
    };
    let cpu = last.to_string();
    let spin = affinity_while_running(
        &[
            "run",
            "spin",
            "--tasks",
            "1",
            "--iterations",
            "100000000000",
            "--cpus",
            &cpu,
        ],
        1,
        &cpu,
    );
    assert_eq!(spin, cpu);
    // hackbench's senders and receivers are its children.
    let hb = affinity_while_running(
        &[
            "run",
            "hackbench",
            "--groups",
            "1",
            "--fds",
            "2",
            "--loops",
            "100000000",
            "--cpus",
            &cpu,
        ],
        2,
        &cpu,
    );
    assert_eq!(hb, cpu);
}

#[test]
fn hackbench_records_the_storm() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = numalab_in(
        &[
            "run",
            "hackbench",
            "--groups",
            "2",
            "--fds",
            "5",
            "--loops",
            "20",
            "--size",
            "64",
            "--placement",
            "packed",
        ],
        d,
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let recs = json_records(&d.join("numalab-results"));
    assert_eq!(recs.len(), 1);
    let r = &recs[0].1;
    assert_eq!(r["benchmark"], "hackbench");
    assert_eq!(r["outcome"]["status"], "ok");
    assert_eq!(r["params"]["groups"], 2);
    assert_eq!(r["params"]["fds"], 5);
    assert_eq!(r["params"]["size"], 64);
    assert_eq!(r["params"]["placement"], "packed");
    assert!(r["metrics"]["elapsed_s"]["value"].as_f64().unwrap() > 0.0);
    assert_eq!(r["tasks"][0]["work_done"], 1);
}

#[test]
fn impossible_placements_and_bad_lists_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cases: [(&[&str], &str); 5] = [
        (&["run", "spin", "--placement", "sideways"], "sideways"),
        (&["run", "spin", "--cpus", "0-"], "0-"),
        (&["run", "spin", "--cpus", "4095"], "CPU 4095"),
        (
            &["run", "spin", "--tasks", "4096", "--placement", "spread"],
            "cores",
        ),
        (
            &["run", "hackbench", "--cpus", "0", "--placement", "packed"],
            "--placement",
        ),
    ];
    for (args, needle) in cases {
        assert_one_line_error(&numalab_in(args, d), needle);
    }
    assert!(!d.join("numalab-results").exists());
}
