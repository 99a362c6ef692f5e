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

/// `numalab ... --runs 5 2>&1 | head -1` kept 0 of 5 records: the first
/// write after `head` left panicked. Output nobody reads is dropped; the
/// runs finish and the exit status is the usual one.
#[test]
fn a_closed_pipe_loses_no_run() {
    let d = tempfile::tempdir().unwrap();
    let mut sim = SIM.to_vec();
    sim.extend(["--runs", "5", "--results", "sim"]);
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

const SIM: [&str; 8] = [
    "sim",
    "--machine",
    "azusa16",
    "numa_test",
    "--tasks",
    "2",
    "--size",
    "200000",
];

/// The small simulated numa_test, `runs` times, into `results`.
fn sim_in(dir: &Path, results: &str, runs: &str, extra: &[&str]) -> std::process::Output {
    let mut a: Vec<&str> = SIM.to_vec();
    a.extend_from_slice(&["--runs", runs, "--results", results, "-q"]);
    a.extend_from_slice(extra);
    numalab_in(&a, dir)
}

/// The simulator's ids are predictable, so a link planted at
/// `<id>.trace` overwrote its target. The trace now replaces the link.
#[test]
fn a_planted_link_is_replaced_not_followed() {
    let d = tempfile::tempdir().unwrap();
    let o = sim_in(d.path(), "first", "1", &["--trace"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let name = std::fs::read_dir(d.path().join("first"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| n.ends_with(".trace"))
        .expect("a trace file");
    let victim = d.path().join("victim");
    std::fs::write(&victim, "keep").unwrap();
    let r = d.path().join("second");
    std::fs::create_dir(&r).unwrap();
    std::os::unix::fs::symlink(&victim, r.join(&name)).unwrap();
    let o = sim_in(d.path(), "second", "1", &["--trace"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    let meta = std::fs::symlink_metadata(r.join(&name)).unwrap();
    assert!(meta.is_file(), "the trace is a file of its own");
}

/// `numalab trace export RECORD -o OUT` in `dir`.
fn trace_export(record: &Path, out: &Path, dir: &Path) -> std::process::Output {
    let (r, o) = (record.to_str().unwrap(), out.to_str().unwrap());
    numalab_in(&["trace", "export", r, "-o", o], dir)
}

/// A record whose `sched.events_file` climbed out of its directory made
/// `trace export` open /etc/passwd and print its first line.
#[test]
fn a_stored_path_is_never_followed() {
    let d = tempfile::tempdir().unwrap();
    let o = sim_in(d.path(), "r", "1", &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let (path, mut rec) = json_records(&d.path().join("r")).remove(0);
    rec["sched"] = serde_json::json!({
        "method": "perf", "lost_events": 0, "new_task_cpus": [], "tasks": [],
        "events_file": "../../../../etc/passwd"
    });
    std::fs::write(&path, serde_json::to_string(&rec).unwrap()).unwrap();
    let out = d.path().join("out.json");
    let o = trace_export(&path, &out, d.path());
    assert_one_line_error(&o, "sched.events_file");
    assert!(!text(&o.stderr).contains("root:"), "{}", text(&o.stderr));
    assert!(!out.exists());
    // compare, show and report skip it with the reason.
    for cmd in ["compare", "show", "report"] {
        let o = numalab_in(&[cmd, path.to_str().unwrap()], d.path());
        assert!(!o.status.success(), "{cmd}");
        assert!(
            text(&o.stderr).contains("sched.events_file"),
            "{cmd}: {}",
            text(&o.stderr)
        );
    }
}

/// A plan with `results = "inj\ntouch pwned\n#"` broke out of a comment
/// line of the Slurm batch script. Control characters in any plan string
/// are refused before anything is written or submitted.
#[test]
fn a_newline_in_a_plan_reaches_no_script() {
    let d = tempfile::tempdir().unwrap();
    let plan = d.path().join("plan.toml");
    std::fs::write(
        &plan,
        "name = \"inj\"\nresults = \"inj\\ntouch pwned\\n#\"\n\n[[benchmark]]\nname = \"numa02\"\n\n[[config]]\nlabel = \"a\"\nsim = { machine = \"azusa16\" }\n",
    )
    .unwrap();
    for exec in ["local", "slurm"] {
        let o = numalab_in(
            &["campaign", "run", "plan.toml", "--executor", exec],
            d.path(),
        );
        assert_one_line_error(
            &o,
            "results \"inj\\ntouch pwned\\n#\" holds a control character",
        );
    }
    let left: Vec<_> = std::fs::read_dir(d.path()).unwrap().flatten().collect();
    assert_eq!(left.len(), 1, "only the plan: {left:?}");
}

const SLOW_PLAN: &str = r#"
name = "twice"
runs = 3

[[benchmark]]
name = "numa_test"
tasks = 2
size = 200000

[[config]]
label = "a"
prepare = "sleep 0.5"
sim = { machine = "azusa16" }
"#;

/// Two `campaign run` on one plan at once both ran every cell: six
/// records for `runs = 3`. The second is refused with the first's PID.
#[test]
fn two_campaigns_on_one_plan_run_each_cell_once() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("plan.toml"), SLOW_PLAN).unwrap();
    let mut first = Command::new(EXE)
        .args(["campaign", "run", "plan.toml", "--quiet"])
        .current_dir(d.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the first holds the directory (its lock file names it).
    let busy = d.path().join("twice-results/.campaign/busy.lock");
    let pid = first.id().to_string();
    let t = std::time::Instant::now();
    while std::fs::read_to_string(&busy).unwrap_or_default().trim() != pid {
        assert!(
            t.elapsed().as_secs() < 60,
            "the first campaign never held the directory"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let second = numalab_in(&["campaign", "run", "plan.toml"], d.path());
    assert_one_line_error(&second, &format!("in use by numalab (PID {pid})"));
    let cell = numalab_in(
        &["campaign", "run-cell", "plan.toml", "--cell", "x"],
        d.path(),
    );
    assert!(!cell.status.success());
    assert!(first.wait().unwrap().success());
    assert_eq!(count_json(&d.path().join("twice-results")), 3);
    // Free again: a third run has nothing left to do and says so.
    let third = numalab_in(&["campaign", "run", "plan.toml"], d.path());
    assert!(third.status.success(), "{}", text(&third.stderr));
    assert_eq!(count_json(&d.path().join("twice-results")), 3);
}

/// A lock left by a killed campaign is taken over, and the new holder
/// says so.
#[test]
fn a_lock_left_by_a_killed_campaign_is_taken_over() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("plan.toml"),
        SLOW_PLAN.replace("runs = 3", "runs = 1"),
    )
    .unwrap();
    let state = d.path().join("twice-results/.campaign");
    std::fs::create_dir_all(&state).unwrap();
    std::fs::write(state.join("busy.lock"), "999999999\n").unwrap();
    let o = numalab_in(&["campaign", "run", "plan.toml"], d.path());
    assert!(o.status.success(), "{}", text(&o.stderr));
    // Status lines wrap at 80 columns.
    let said = text(&o.stderr)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        said.contains("taking over from numalab (PID 999999999)"),
        "{said}"
    );
}

/// Bad input that got through, or said too little, and left an empty
/// results directory behind.
#[test]
fn checked_before_anything_is_created() {
    let d = tempfile::tempdir().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (
            &["run", "numa02", "--duration", "0"],
            "must be more than 0 s",
        ),
        (
            &["run", "command", "--", "/nonexistent/prog"],
            "/nonexistent/prog: no such file",
        ),
        (
            &["run", "command", "--", "/etc/passwd"],
            "/etc/passwd: not executable",
        ),
        (
            &[
                "run",
                "command",
                "--sysctl",
                "kernel.numa_balancing=banana",
                "--",
                "true",
            ],
            "\"banana\" is not a whole number",
        ),
        (
            &["run", "command", "--setup", "false", "--", "true"],
            "--setup \"false\" failed",
        ),
        (
            &[
                "run",
                "command",
                "--prepare",
                "true\nrm -rf x",
                "--",
                "true",
            ],
            "--prepare \"true\\nrm -rf x\" holds a control character",
        ),
        (
            &["vm", "--mem-per-node", "1T", "--", "topology"],
            "this machine has available",
        ),
        (&["vm", "--", "no-such-command"], "unrecognized subcommand"),
    ];
    for (args, needle) in cases {
        let o = numalab_in(args, d.path());
        let err = text(&o.stderr);
        assert!(!o.status.success(), "{args:?}");
        assert!(err.contains(needle), "{args:?}: {needle:?} not in {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert_eq!(
            err.lines()
                .filter(|l| l.starts_with("numalab: error"))
                .count(),
            1,
            "{args:?}: {err}"
        );
        let left: Vec<_> = std::fs::read_dir(d.path()).unwrap().flatten().collect();
        assert!(left.is_empty(), "{args:?} left {left:?}");
    }
}

/// A tmpfs of `bytes` mounted on a fresh directory, unmounted on drop.
struct Tmpfs(tempfile::TempDir);

impl Tmpfs {
    /// None (said loudly) when not root: only root mounts.
    fn new(bytes: u64) -> Option<Tmpfs> {
        // SAFETY: geteuid takes nothing.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("\n!!!!! not root: the full-disk test is SKIPPED !!!!!\n");
            return None;
        }
        let d = tempfile::tempdir().unwrap();
        let st = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes}"), "tmpfs"])
            .arg(d.path())
            .status()
            .expect("mount runs");
        assert!(st.success(), "mounting a tmpfs as root");
        Some(Tmpfs(d))
    }

    fn path(&self) -> &Path {
        self.0.path()
    }

    /// Fill it up to `leave` free bytes.
    fn fill(&self, leave: u64) {
        let _ = std::fs::remove_file(self.path().join("filler"));
        // SAFETY: statvfs with a valid path and a zeroed struct.
        let free = unsafe {
            let c = std::ffi::CString::new(self.path().to_str().unwrap()).unwrap();
            let mut s: libc::statvfs = std::mem::zeroed();
            assert_eq!(libc::statvfs(c.as_ptr(), &mut s), 0);
            s.f_bavail * s.f_bsize
        };
        let n = free.saturating_sub(leave) as usize;
        std::fs::write(self.path().join("filler"), vec![b'x'; n]).unwrap();
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).status();
    }
}

/// In `dir`: every side file has its record beside it, and no temporary
/// file is left.
fn side_files_have_records(dir: &Path) {
    let names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    for n in &names {
        assert!(
            !n.starts_with(".numalab-"),
            "a temporary file was left: {n} in {names:?}"
        );
        for suffix in [".log", ".trace", ".sched.tsv"] {
            if let Some(id) = n.strip_suffix(suffix) {
                let rec = dir.join(format!("{id}.json"));
                let text = std::fs::read_to_string(&rec)
                    .unwrap_or_else(|e| panic!("{n} without its record: {e} ({names:?})"));
                serde_json::from_str::<serde_json::Value>(&text).expect("a whole record");
            }
        }
    }
}

/// A full disk left a `.log`, `.trace` or `.sched.tsv` without its
/// record, truncated side files, and 8 KiB of invalid JSON from
/// `trace export -o`.
#[test]
fn a_full_disk_leaves_no_side_file_alone() {
    let Some(t) = Tmpfs::new(2 << 20) else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    // A command whose output is more than the disk holds.
    let o = numalab_in(
        &[
            "run",
            "command",
            "--runs",
            "2",
            "-q",
            "--results",
            t.path().join("cmd").to_str().unwrap(),
            "--",
            "head",
            "-c",
            "3000000",
            "/dev/zero",
        ],
        d.path(),
    );
    assert!(!text(&o.stderr).contains("panicked"), "{}", text(&o.stderr));
    side_files_have_records(&t.path().join("cmd"));
    // A simulated trace (4 KiB) fits in the 8 KiB left, its record
    // (11 KiB) does not: the trace goes with it.
    t.fill(8 << 10);
    let o = sim_in(
        d.path(),
        t.path().join("sim").to_str().unwrap(),
        "2",
        &["--trace"],
    );
    assert!(
        !o.status.success(),
        "the record cannot fit: {}",
        text(&o.stderr)
    );
    assert!(
        text(&o.stderr).contains("No space left on device"),
        "{}",
        text(&o.stderr)
    );
    assert!(!text(&o.stderr).contains("panicked"), "{}", text(&o.stderr));
    side_files_have_records(&t.path().join("sim"));
    // A traced run's export into a full disk: no file at all.
    let traced = numalab_in(
        &[
            "run",
            "command",
            "--trace",
            "-q",
            "--results",
            "tr",
            "--",
            "sh",
            "-c",
            "for i in 1 2 3 4 5 6 7 8; do /bin/true; done",
        ],
        d.path(),
    );
    assert!(traced.status.success(), "{}", text(&traced.stderr));
    let (rec, _) = json_records(&d.path().join("tr")).remove(0);
    t.fill(4 << 10);
    let out = t.path().join("export.json");
    let o = trace_export(&rec, &out, d.path());
    assert!(!o.status.success());
    assert!(!out.exists(), "a partial export was left");
    side_files_have_records(t.path());
}

/// Every subcommand refuses bad input in one line, without a panic and
/// without writing anything; the list is checked against `--help`, so a
/// new subcommand cannot be left out.
#[test]
fn every_subcommand_refuses_bad_input_in_one_line() {
    let cases: &[(&str, &[&str])] = &[
        ("topology", &["topology", "--sysfs", "/nonexistent"]),
        ("run", &["run", "numa02", "--threads", "0"]),
        ("sim", &["sim", "--machine", "nosuch", "numa02"]),
        ("vm", &["vm", "--nodes", "0", "--", "topology"]),
        ("calibrate", &["calibrate", "--output", "/proc/nope/m.toml"]),
        ("validate", &["validate", "--machine", "/nonexistent.toml"]),
        ("campaign", &["campaign", "run", "/nonexistent.toml"]),
        ("reproduce", &["reproduce", "nosuchstudy"]),
        ("schema", &["schema", "extra"]),
        ("compare", &["compare", "/nonexistent"]),
        ("export", &["export", "/nonexistent"]),
        ("show", &["show", "/nonexistent"]),
        ("report", &["report", "/nonexistent", "-o", "x.html"]),
        (
            "trace",
            &["trace", "export", "/nonexistent", "-o", "x.json"],
        ),
        ("completions", &["completions", "nosh"]),
        ("man", &["man", "--dir", "/proc/nope"]),
        ("help", &["help", "nosuch"]),
    ];
    let help = numalab_in(&["--help"], Path::new("/"));
    let listed: Vec<String> = text(&help.stdout)
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        // A command's line; its help's wrapped lines are indented deeper.
        .filter(|l| !l[2..].starts_with(' '))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect();
    assert!(listed.len() > 10, "{listed:?}");
    for c in &listed {
        assert!(
            cases.iter().any(|(n, _)| n == c),
            "no bad-input case for `{c}`"
        );
    }
    let d = tempfile::tempdir().unwrap();
    for (name, args) in cases {
        let o = numalab_in(args, d.path());
        let err = text(&o.stderr);
        assert!(!o.status.success(), "{name}: {err}");
        assert!(!err.contains("panicked"), "{name}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{name}: one line: {err}");
        assert!(err.starts_with("numalab: error: "), "{name}: {err}");
        let left: Vec<_> = std::fs::read_dir(d.path()).unwrap().flatten().collect();
        assert!(left.is_empty(), "{name} left {left:?}");
    }
}

/// Two invocations changing the same sysctl left it changed (10 became
/// 13): the second took the first's value for the original. Now the
/// second is refused with the first's PID, and the machine's value comes
/// back. On this machine's real /proc/sys, as root.
#[test]
fn overlapping_settings_leave_nothing_changed() {
    // SAFETY: geteuid takes nothing.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("\n!!!!! not root: overlapping_settings SKIPPED !!!!!\n");
        return;
    }
    let knob = Path::new("/proc/sys/vm/swappiness");
    let original = std::fs::read_to_string(knob).unwrap();
    let other = if original.trim() == "13" { "14" } else { "13" };
    let d = tempfile::tempdir().unwrap();
    let mut first = Command::new(EXE)
        .args([
            "run",
            "command",
            "-q",
            "--sysctl",
            &format!("vm.swappiness={other}"),
        ])
        .args(["--results", "a", "--", "sleep", "3"])
        .current_dir(d.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t = std::time::Instant::now();
    while std::fs::read_to_string(knob).unwrap().trim() != other {
        assert!(t.elapsed().as_secs() < 30, "the first never set it");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let second = numalab_in(
        &[
            "run",
            "command",
            "--sysctl",
            "vm.swappiness=10",
            "--results",
            "b",
            "--",
            "true",
        ],
        d.path(),
    );
    let err = text(&second.stderr);
    assert!(!second.status.success(), "{err}");
    let said = err.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        said.contains(&format!("held by numalab (PID {})", first.id())),
        "{err}"
    );
    assert_eq!(err.matches("numalab: error").count(), 1, "{err}");
    assert!(first.wait().unwrap().success());
    assert_eq!(std::fs::read_to_string(knob).unwrap(), original);
    assert!(!d.path().join("b").exists());
}
