//! Every malformed input a user tried that was not refused cleanly: each
//! is one line naming the flag and saying what is wrong with its value,
//! a non-zero exit, no panic, nothing written.

mod common;
use common::{assert_one_line_error, numalab_in};

/// `numalab ARGS` in an empty directory must fail in one line containing
/// every needle, and write nothing there.
fn refused(args: &[&str], needles: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let o = numalab_in(args, dir.path());
    assert_one_line_error(&o, needles[0]);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    for n in needles {
        assert!(err.contains(n), "{args:?}: {n:?} not in {err:?}");
    }
    let written: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
    assert!(written.is_empty(), "{args:?} wrote {written:?}");
    err
}

#[test]
fn an_empty_cpu_list_is_refused_for_every_benchmark_that_takes_one() {
    for args in [
        &[
            "run",
            "spin",
            "--tasks",
            "1",
            "--iterations",
            "1000",
            "--cpus",
            "",
        ][..],
        &["run", "spin", "--cpus", " "],
        &["run", "hackbench", "--cpus", ""],
        &["sim", "--machine", "ht2", "spin", "--cpus", ""],
    ] {
        refused(args, &["--cpus", "the CPU list is empty"]);
    }
}

#[test]
fn empty_labels_and_labels_with_a_newline_are_refused() {
    for label in ["", " ", "a\nb", "tab\there"] {
        let shown = format!("--label {label:?}");
        for args in [
            &[
                "run",
                "spin",
                "--tasks",
                "1",
                "--iterations",
                "1000",
                "--label",
                label,
            ][..],
            &["run", "command", "--label", label, "--", "true"],
            &["sim", "--machine", "ht2", "spin", "--label", label],
        ] {
            refused(args, &[&shown, "use 1 to 64 letters"]);
        }
    }
}

#[test]
fn negative_values_say_what_is_wrong_with_them() {
    let cases: [(&[&str], &[&str]); 8] = [
        (
            &["run", "numa01", "--bytes", "-1G"],
            &[
                "--bytes",
                "\"-1G\" is not a size: a size cannot be negative",
            ],
        ),
        (
            &["run", "twohalves", "--bytes", "-1G"],
            &["--bytes", "cannot be negative"],
        ),
        (
            &["run", "numa_test", "--tasks", "-1"],
            &[
                "--tasks",
                "\"-1\" is not a task count: a count cannot be negative",
            ],
        ),
        (
            &["run", "numa_test", "--tasks", "2,-1"],
            &["--tasks", "\"-1\" is not a task count"],
        ),
        (
            &["run", "numa02", "--threads", "-2"],
            &["--threads", "cannot be negative"],
        ),
        (
            &["compare", "--noise", "-5", "."],
            &[
                "--noise",
                "\"-5\": the noise threshold is a percentage from 0 to 100",
            ],
        ),
        (
            &["compare", "--alpha", "-0.1", "."],
            &["--alpha", "alpha must be between 0 and 1"],
        ),
        (
            &["sim", "--machine", "ht2", "--seed", "-1", "spin"],
            &["--seed", "\"-1\" is not a seed"],
        ),
    ];
    for (args, needles) in cases {
        refused(args, needles);
    }
}

#[test]
fn a_size_too_large_is_refused_in_the_same_words_everywhere() {
    let words = "\"99999999999G\" is too large (more than 2^64 bytes)";
    for (args, flag) in [
        (&["run", "numa01", "--bytes", "99999999999G"][..], "--bytes"),
        (&["run", "twohalves", "--bytes", "99999999999G"], "--bytes"),
        (
            &[
                "sim",
                "--machine",
                "ht2",
                "numa02",
                "--bytes",
                "99999999999G",
            ],
            "--bytes",
        ),
        (
            &["vm", "--mem-per-node", "99999999999G", "--", "topology"],
            "--mem-per-node",
        ),
    ] {
        refused(args, &[flag, words]);
    }
    // And the other refusals too: one parser, one wording.
    for (args, flag) in [
        (&["run", "numa01", "--bytes", "12Q"][..], "--bytes"),
        (
            &["vm", "--mem-per-node", "12Q", "--", "topology"],
            "--mem-per-node",
        ),
    ] {
        refused(args, &[flag, "\"12Q\" is not a size (e.g. 512M or 3G)"]);
    }
}

#[test]
fn runs_auto_bounds_that_make_no_sense_are_refused() {
    let sim = ["sim", "--machine", "azusa16", "numa02", "--threads", "2"];
    let with =
        |more: &[&'static str]| -> Vec<&'static str> { sim.iter().chain(more).copied().collect() };
    let cases: [(Vec<&str>, &[&str]); 9] = [
        (
            with(&["--runs", "auto", "--min-runs", "0"]),
            &["--min-runs", "0 is not in 1..=10000"],
        ),
        (
            with(&["--runs", "auto", "--max-runs", "-3"]),
            &["--max-runs", "-3"],
        ),
        (
            with(&["--runs", "auto", "--min-runs", "5", "--max-runs", "3"]),
            &["--min-runs 5 is more than --max-runs 3"],
        ),
        (
            with(&["--runs", "3", "--min-runs", "2"]),
            &["--min-runs is for --runs auto, not --runs 3"],
        ),
        (
            with(&["--runs", "3", "--max-runs", "4"]),
            &["--max-runs is for --runs auto, not --runs 3"],
        ),
        // Without --runs, a count (1): the bounds of auto mean nothing.
        (
            with(&["--max-time", "60"]),
            &["--max-time is for --runs auto, not --runs 1"],
        ),
        (
            with(&["--runs", "auto", "--max-time", "-1"]),
            &["--max-time", "a time cannot be negative"],
        ),
        (
            with(&["--runs", "auto", "--max-time", "soon"]),
            &["--max-time", "give a number of seconds, 0 or more"],
        ),
        (
            with(&["--runs", "often"]),
            &["--runs", "give a number of runs from 1 to 10000, or auto"],
        ),
    ];
    for (args, needles) in &cases {
        refused(args, needles);
    }
    // The same flags on this machine, refused before anything runs.
    refused(
        &["run", "numa02", "--runs", "2", "--min-runs", "2"],
        &["--min-runs is for --runs auto, not --runs 2"],
    );
}
