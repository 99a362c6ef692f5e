//! numalab as an attacker and an unlucky user meet it: output nobody
//! reads, names that try to leave the results directory, links planted
//! where numalab writes, scripts fed control characters, two invocations
//! at once, a full disk. Each test reproduces a hole as it was found and
//! fails without its fix (docs/reliability.md).

mod common;
use common::*;
use std::path::Path;
use std::process::{Command, Stdio};

/// numalab with stdout and stderr both pipes whose readers are gone.
fn with_closed_output(args: &[&str], cwd: &Path) -> std::process::ExitStatus {
    let (r1, w1) = std::io::pipe().unwrap();
    let (r2, w2) = std::io::pipe().unwrap();
    drop((r1, r2));
    Command::new(EXE)
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(w1)
        .stderr(w2)
        .status()
        .expect("numalab runs")
}

fn count_json(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
                .count()
        })
        .unwrap_or(0)
}

/// `numalab ... --runs 5 2>&1 | head -1` kept 0 of 5 records: the first
/// write after `head` left panicked. Output nobody reads is dropped; the
/// runs finish and the exit status is the usual one.
#[test]
fn a_closed_pipe_loses_no_run() {
    let d = tempfile::tempdir().unwrap();
    let sim = [
        "sim",
        "--machine",
        "azusa16",
        "numa_test",
        "--tasks",
        "2",
        "--size",
        "200000",
        "--runs",
        "5",
        "--results",
        "sim",
    ];
    let st = with_closed_output(&sim, d.path());
    assert!(st.success(), "sim: {st}");
    assert_eq!(count_json(&d.path().join("sim")), 5);
    let host = [
        "run",
        "command",
        "--runs",
        "5",
        "--results",
        "host",
        "--",
        "true",
    ];
    let st = with_closed_output(&host, d.path());
    assert!(st.success(), "run command: {st}");
    assert_eq!(count_json(&d.path().join("host")), 5);
}
