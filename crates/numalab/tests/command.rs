//! `numalab run command`: any command as a benchmark, its records, its
//! failures, and nothing of it left running after the run or Ctrl-C.

use std::process::{Command, Stdio};

mod common;
use common::{
    alive, assert_one_line_error, children, json_records, numalab_in, text, wait_for_children, EXE,
};

#[test]
fn runs_are_recorded_with_times_and_output_logs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("src")).unwrap();
    std::fs::write(
        d.join("src/configure"),
        "#!/bin/sh\necho checking; sleep 0.2\n",
    )
    .unwrap();
    let o = Command::new("chmod")
        .args(["+x", "src/configure"])
        .current_dir(d)
        .status()
        .unwrap();
    assert!(o.success());
    let o = numalab_in(
        &[
            "run",
            "command",
            "--runs",
            "2",
            "--label",
            "cfs",
            "--cwd",
            "src",
            "--",
            "./configure",
        ],
        d,
    );
    let out = text(&o.stdout);
    assert!(o.status.success(), "{out}\n{}", text(&o.stderr));
    assert!(out.contains("configure summary, label \"cfs\""), "{out}");
    let recs = json_records(&d.join("numalab-results"));
    assert_eq!(recs.len(), 2);
    for (path, r) in &recs {
        assert_eq!(r["benchmark"], "configure");
        assert_eq!(r["label"], "cfs");
        assert_eq!(r["outcome"]["status"], "ok");
        assert_eq!(r["params"]["command"], "./configure");
        let elapsed = r["metrics"]["elapsed_s"]["value"].as_f64().unwrap();
        assert!(elapsed >= 0.2, "{elapsed}");
        assert!(r["metrics"]["user_s"]["value"].as_f64().is_some());
        assert_eq!(r["tasks"][0]["exit"], "exit 0");
        assert_eq!(r["tasks"][0]["work_done"], 1);
        // The output is in a log beside the record.
        let log = path.with_extension("log");
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "checking\n");
    }
    // The records compare like any others.
    let o = numalab_in(&["compare", "numalab-results"], d);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("configure"));
}

#[test]
fn show_says_residency_was_not_observed_and_the_record_says_null() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = numalab_in(&["run", "command", "--", "sh", "-c", "echo hi"], d);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let recs = json_records(&d.join("numalab-results"));
    let (path, r) = &recs[0];
    assert!(r["tasks"][0]["node_time_s"].is_null(), "{r}");
    let o = numalab_in(&["show", path.to_str().unwrap()], d);
    let out = text(&o.stdout);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        out.contains("Node residency: not observed: a command's processes come and go"),
        "{out}"
    );
    assert!(!out.contains("node00") && !out.contains(" 0.0 "), "{out}");
}

#[test]
fn a_failing_command_fails_the_run_with_its_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = numalab_in(
        &[
            "run",
            "command",
            "--",
            "sh",
            "-c",
            "echo broken >&2; exit 3",
        ],
        d,
    );
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(
        err.contains("1 of 1 runs failed") && err.contains("exit 3"),
        "{err}"
    );
    assert!(text(&o.stdout).contains("FAILED"));
    let recs = json_records(&d.join("numalab-results"));
    assert_eq!(recs.len(), 1, "the failed run is recorded");
    let r = &recs[0].1;
    assert_eq!(r["outcome"]["status"], "failed");
    let reason = r["outcome"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("exit 3") && reason.contains("broken"),
        "{reason}"
    );
    assert_eq!(r["tasks"][0]["work_done"], 0);
}

#[test]
fn bad_input_is_a_one_line_error_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cases: [(&[&str], &str); 5] = [
        (&["run", "command"], "PROGRAM"),
        (
            &["run", "command", "--", "no-such-program-here"],
            "not found",
        ),
        (
            &["run", "command", "--name", "numa01", "--", "true"],
            "numa01",
        ),
        (&["run", "command", "--name", "a/b", "--", "true"], "a/b"),
        (
            &["run", "command", "--cwd", "nowhere", "--", "true"],
            "nowhere",
        ),
    ];
    for (args, needle) in cases {
        assert_one_line_error(&numalab_in(args, d), needle);
    }
    assert!(!d.join("numalab-results").exists());
}

/// Every descendant of `pid` (children, grandchildren, ...).
fn descendants(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut todo = vec![pid];
    while let Some(p) = todo.pop() {
        for c in children(p) {
            out.push(c);
            todo.push(c);
        }
    }
    out
}

#[test]
fn ctrl_c_kills_the_whole_process_tree() {
    let dir = tempfile::tempdir().unwrap();
    let c = Command::new(EXE)
        .args([
            "run",
            "command",
            "--",
            "sh",
            "-c",
            "sleep 60 & sleep 60; wait",
        ])
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // numalab -> the supervisor -> sh -> two sleeps
    let supervisor = wait_for_children(c.id(), 1)[0];
    let sh = wait_for_children(supervisor, 1)[0];
    wait_for_children(sh, 2);
    let tree = descendants(c.id());
    assert!(tree.len() >= 4, "{tree:?}");
    // SAFETY: signalling our own child.
    unsafe { libc::kill(c.id() as i32, libc::SIGINT) };
    let o = c.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", text(&o.stderr));
    let left: Vec<u32> = tree.into_iter().filter(|p| alive(*p)).collect();
    assert!(left.is_empty(), "processes outlived numalab: {left:?}");
    let written: Vec<_> = std::fs::read_dir(dir.path().join("numalab-results"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(
        written.is_empty(),
        "no record of the unfinished run, and no log without its record: {written:?}"
    );
}

#[test]
fn processes_left_behind_are_killed_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let pidfile = d.join("bg.pid");
    let script = format!("sleep 60 & echo $! > {}; exit 0", pidfile.display());
    let o = numalab_in(
        &["run", "command", "--name", "bg", "--", "sh", "-c", &script],
        d,
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        text(&o.stdout).contains("left 1 process(es) running"),
        "{}",
        text(&o.stdout)
    );
    let bg: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(!alive(bg), "the background sleep outlived the run");
    let recs = json_records(&d.join("numalab-results"));
    assert!(recs[0].1["warnings"][0]
        .as_str()
        .unwrap()
        .contains("left 1 process"));
}

/// A full file system (ENOSPC): the command's output and the record
/// cannot be written; numalab fails in one line and leaves no empty log
/// behind. A tiny full tmpfs is mounted in a user and mount namespace
/// (`unshare -rm`, util-linux), so no privileges are needed.
#[test]
fn a_full_file_system_leaves_no_empty_log() {
    let dir = tempfile::tempdir().unwrap();
    let full = dir.path().join("full");
    std::fs::create_dir(&full).unwrap();
    let script = r#"mount -t tmpfs -o size=64k tmpfs "$FULL" || exit 99
dd if=/dev/zero of="$FULL/fill" bs=4k 2>/dev/null
"$EXE" run command --results "$FULL/res" -- sh -c 'echo hi'
echo "exit $?"
ls -A "$FULL/res""#;
    let o = Command::new("unshare")
        .args(["-rm", "sh", "-c", script])
        .env("FULL", &full)
        .env("EXE", EXE)
        .output()
        .expect("this test needs util-linux's unshare");
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert!(
        o.status.code() != Some(99) && !err.contains("unshare failed"),
        "this test needs user namespaces to mount a tmpfs (unshare -rm): {err}"
    );
    let mut lines = out.lines();
    let exit = lines.next().unwrap_or_default();
    assert!(
        exit != "exit 0" && exit.starts_with("exit "),
        "{out}\n{err}"
    );
    let errors: Vec<&str> = err.lines().filter(|l| l.contains("error")).collect();
    assert_eq!(errors.len(), 1, "{err}");
    assert!(
        errors[0].starts_with("numalab: error: ") && errors[0].contains("No space left on device"),
        "{err}"
    );
    let left: Vec<&str> = lines.collect();
    assert!(
        left.iter()
            .all(|f| !f.ends_with(".log") && !f.ends_with(".json")),
        "no log without its record: {left:?}"
    );
}

/// `make` repeated: the first run builds, the others find nothing to do.
/// Every run exits 0; the summary warns that they did not do the same
/// work.
#[test]
fn runs_that_did_not_do_the_same_work_are_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let script =
        "[ -e built ] && exit 0; i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done; touch built";
    let o = numalab_in(
        &[
            "run", "command", "--name", "make", "--runs", "3", "--", "sh", "-c", script,
        ],
        d,
    );
    let err = text(&o.stderr);
    assert!(o.status.success(), "{err}");
    let recs = json_records(&d.join("numalab-results"));
    let user = |i: usize| recs[i].1["metrics"]["user_s"]["value"].as_f64().unwrap();
    assert!(user(0) > 0.2, "the first run worked: {}", user(0));
    let warned: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("numalab: warning: make, label \"default\": CPU time differs more than 10x between runs (run "))
        .collect();
    assert_eq!(warned.len(), 1, "{err}");
    assert!(
        warned[0].ends_with("did every run do the same work?"),
        "{err}"
    );
    // Runs that did the same work: no warning.
    let o = numalab_in(
        &[
            "run", "command", "--name", "same", "--runs", "2", "--", "sh", "-c", "exit 0",
        ],
        d,
    );
    assert!(
        !text(&o.stderr).contains("did every run"),
        "{}",
        text(&o.stderr)
    );
}

/// Several commands in one invocation, as hyperfine runs them (issue 27
/// item 12): one case each, run in turn in every round, and a closing
/// table of each one's elapsed time over the first's.
#[test]
fn commands_compared_with_vs_run_in_turn_and_print_ratios() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = numalab_in(
        &[
            "run", "command", "--runs", "3", "--name", "fast", "--", "sleep", "0.05", "--vs",
            "--name", "slow", "--", "sleep", "0.3",
        ],
        d,
    );
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert!(o.status.success(), "{out}\n{err}");
    assert!(err.contains("commands: fast, slow, run in turn"), "{err}");
    assert!(
        out.contains("elapsed relative to fast (the first command):"),
        "{out}"
    );
    let row = |name: &str| {
        out.lines()
            .find(|l| l.starts_with(&format!("{name} ")) && l.contains("  3 "))
            .unwrap_or_else(|| panic!("no row for {name}: {out}"))
            .split_whitespace()
            .map(String::from)
            .collect::<Vec<_>>()
    };
    assert_eq!(row("fast")[3], "1.000", "{out}");
    let ratio: f64 = row("slow")[3].parse().unwrap();
    assert!(ratio > 2.0, "sleep 0.3 over sleep 0.05: {ratio}\n{out}");
    assert!(out.lines().all(|l| l.chars().count() <= 80), "{out}");
    // Interleaved: fast and slow alternate, round by round.
    let mut recs = json_records(&d.join("numalab-results"));
    assert_eq!(recs.len(), 6);
    recs.sort_by(|a, b| a.1["started_at"].as_str().cmp(&b.1["started_at"].as_str()));
    let order: Vec<&str> = recs
        .iter()
        .map(|(_, r)| r["benchmark"].as_str().unwrap())
        .collect();
    assert_eq!(order, ["fast", "slow", "fast", "slow", "fast", "slow"]);
    // Two commands may not share a name; a bad second command is named.
    let o = numalab_in(
        &["run", "command", "--", "true", "--vs", "--", "true", "1"],
        d,
    );
    assert_one_line_error(&o, "both named \"true\": give each its own --name");
    let o = numalab_in(&["run", "command", "--", "true", "--vs", "true"], d);
    assert_one_line_error(&o, "command 2: \"true\" after --vs");
}
