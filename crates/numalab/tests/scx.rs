//! sched_ext schedulers as configurations (`--scx`, `--scx-exec`), tested
//! in 2-node guests of Debian's 7.3 kernel, which has sched_ext, and
//! refused in one line where there is none (this host, the simulator).
//!
//! The guest tests need numalab built with its BPF schedulers (`cargo
//! test --features numalab/scx`) and the debian-7.3 kernel cached;
//! scripts/test.sh does both and sets `NUMALAB_REQUIRE_SCX=1`, so that
//! either missing fails them instead of skipping them.

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{
    guest_lock as lock, guests_enabled, json_records as records, qemus_of, wait_until, EXE,
};

fn text(o: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Whether the guest tests of `test` can run: guests, the kernel, and a
/// numalab with its schedulers.
fn ready(test: &str) -> bool {
    if !guests_enabled(test) || !common::debian_7_3_cached(test) {
        return false;
    }
    if cfg!(feature = "scx") {
        return true;
    }
    let required =
        std::env::var_os("NUMALAB_REQUIRE_SCX").is_some_and(|v| !v.is_empty() && v != "0");
    assert!(
        !required,
        "numalab was built without its sched_ext schedulers: test with --features numalab/scx"
    );
    eprintln!("\n!!!!! numalab built without --features scx: `{test}` SKIPPED !!!!!\n");
    false
}

/// The guest every test here boots: 2 nodes x 2 CPUs of Debian's 7.3.
const SHAPE: [&str; 8] = [
    "--kernel",
    "debian-7.3",
    "--nodes",
    "2",
    "--cpus-per-node",
    "2",
    "--mem-per-node",
    "512M",
];

fn vm(results: &Path, cmd: &[&str]) -> Output {
    vm_with(results, &[], cmd)
}

/// [`vm`] with more of `numalab vm`'s own flags.
fn vm_with(results: &Path, flags: &[&str], cmd: &[&str]) -> Output {
    let t = Instant::now();
    let run = || {
        Command::new(EXE)
            .args(["vm", "--quiet", "--timeout", "300", "--results"])
            .arg(results)
            .args(SHAPE)
            .args(flags)
            .arg("--")
            .args(cmd)
            .output()
            .expect("running numalab")
    };
    let mut out = run();
    // QEMU's multi-threaded TCG sometimes runs a stale translation of
    // code the kernel is patching (a static key flipped as sched_ext is
    // enabled or disabled, or as tracing starts): the guest dies of
    // `Oops: int3` at a patched site (3 of about 20 guests under sched_ext
    // here on 2026-11-27). That is the emulator's, not the scheduler's:
    // up to two more tries, each said so.
    let panicked = |o: &Output| {
        String::from_utf8_lossy(&o.stdout).contains("kernel panicked")
            || String::from_utf8_lossy(&o.stderr).contains("kernel panicked")
    };
    for _ in 0..2 {
        if out.status.success() || !panicked(&out) || !console(results).contains("Oops: int3") {
            break;
        }
        eprintln!(
            "numalab vm -- {cmd:?}: the guest died of an int3 oops (TCG, code patching); once more"
        );
        std::fs::remove_dir_all(results).unwrap();
        out = run();
    }
    eprintln!("numalab vm -- {cmd:?}: {:.1} s", t.elapsed().as_secs_f64());
    out
}

/// `run spin` of one task for a second, then `more`.
fn one_spin<'a>(more: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec![
        "run",
        "spin",
        "--tasks",
        "1",
        "--seconds",
        "1",
        "--placement",
        "default",
    ];
    v.extend_from_slice(more);
    v
}

/// The guest's kernel log of the one guest run into `results`.
fn console(results: &Path) -> String {
    let dir = results.join("vm-logs");
    let log = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".console.log"))
        .unwrap_or_else(|| panic!("no console log in {}", dir.display()));
    std::fs::read_to_string(log).unwrap()
}

/// numalab's fifo loaded in the guest for the runs: the kernel enabled
/// it before the first run and unregistered it after the last (its own
/// log lines), every record says so, and the exact trace of the runs is
/// there. Then the same scheduler through `--scx-exec`, the path of any
/// other program (scx_simple, scx_rusty): found by its ops name in sysfs;
/// and in a guest with `--rootfs initramfs`, which has no shell.
#[test]
fn fifo_is_loaded_for_the_runs_and_unloaded_after_them() {
    if !ready("fifo_is_loaded_for_the_runs") {
        return;
    }
    let _g = lock();
    let d = tempfile::tempdir().unwrap();
    let res = d.path().join("own");
    let o = vm(
        &res,
        &[
            "run",
            "spin",
            "--tasks",
            "2",
            "--seconds",
            "1",
            "--placement",
            "default",
            "--runs",
            "2",
            "--trace",
            "--scx",
            "fifo[slice_ms=5]",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let recs = records(&res);
    assert_eq!(recs.len(), 2, "{}", text(&o));
    let mut seqs = Vec::new();
    for (_, r) in &recs {
        assert_eq!(r["outcome"]["status"], "ok", "{r}");
        let scx = &r["applied"]["scx"];
        assert_eq!(scx["scheduler"], "fifo[slice_ms=5]", "{scx}");
        assert_eq!(scx["ops"], "numalab_fifo", "{scx}");
        assert_eq!(scx["exec"], false, "{scx}");
        seqs.push(scx["enable_seq"].as_u64().unwrap());
        // Probed as the run started: the scheduler was running then.
        assert_eq!(r["machine"]["tuning"]["sched_ext"], "enabled numalab_fifo");
        assert!(r["sched"].is_object(), "no trace in {}", r["sched"]);
    }
    assert_eq!(seqs[0], seqs[1], "both runs under one load");
    let log = console(&res);
    let enabled = log
        .find("sched_ext: BPF scheduler \"numalab_fifo\" enabled")
        .unwrap_or_else(|| panic!("never enabled:\n{log}"));
    let disabled = log
        .find("BPF scheduler \"numalab_fifo\" disabled (unregistered from user space)")
        .unwrap_or_else(|| panic!("never unregistered:\n{log}"));
    assert!(enabled < disabled);

    let res = d.path().join("exec");
    let o = vm(&res, &one_spin(&["--scx-exec", "numalab __scx-load fifo"]));
    assert!(o.status.success(), "{}", text(&o));
    let recs = records(&res);
    assert_eq!(recs.len(), 1, "{}", text(&o));
    let scx = &recs[0].1["applied"]["scx"];
    assert_eq!(scx["scheduler"], "numalab __scx-load fifo", "{scx}");
    assert_eq!(scx["exec"], true, "{scx}");
    assert_eq!(scx["ops"], "numalab_fifo", "{scx}");
    assert!(console(&res).contains("disabled (unregistered from user space)"));

    // numalab's own loader needs no shell: a guest whose root is the
    // initramfs, which has none, loads it too.
    let res = d.path().join("initramfs");
    let o = vm_with(
        &res,
        &["--rootfs", "initramfs"],
        &one_spin(&["--scx", "fifo"]),
    );
    assert!(o.status.success(), "{}", text(&o));
    let recs = records(&res);
    assert_eq!(recs.len(), 1, "{}", text(&o));
    assert_eq!(recs[0].1["applied"]["scx"]["ops"], "numalab_fifo");
}

/// numalab's node-affine on the real kernel does what the simulator's
/// does: numa_test's four tasks are homed two per node by initial
/// balancing at exec, and they run on their homenodes (by the exact
/// trace: on average at least 85% of their running time, each at least
/// 65%) through the hackbench peak, where the kernel's own scheduler
/// moves them (in three runs here: averages 56-83%, the least 51-56%).
#[test]
fn node_affine_keeps_numa_tests_tasks_on_their_homenodes() {
    if !ready("node_affine_keeps_numa_tests_tasks_on_their_homenodes") {
        return;
    }
    let _g = lock();
    let d = tempfile::tempdir().unwrap();
    let o = vm(
        d.path(),
        &[
            "run",
            "numa_test",
            "--tasks",
            "4",
            "--size",
            "600000",
            "--trace",
            "--scx",
            "node-affine",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let recs = records(d.path());
    assert_eq!(recs.len(), 1, "{}", text(&o));
    let r = &recs[0].1;
    assert_eq!(r["outcome"]["status"], "ok", "{r}");
    assert_eq!(r["applied"]["scx"]["ops"], "numalab_node_affine");
    assert!(
        r["metrics"]["hackbench_s"]["value"].as_f64().is_some(),
        "no load peak ran"
    );
    let tasks: Vec<&Value> = r["sched"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| {
            t["comm"]
                .as_str()
                .is_some_and(|c| c.starts_with("nt-task-"))
        })
        .collect();
    assert_eq!(tasks.len(), 4, "{}", r["sched"]["tasks"]);
    let mut per_node = [0; 2];
    let mut shares = Vec::new();
    for t in &tasks {
        let s: Vec<f64> = t["node_s"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        let home = if s[0] >= s[1] { 0 } else { 1 };
        per_node[home] += 1;
        let share = s[home] / (s[0] + s[1]);
        assert!(
            share >= 0.65,
            "{} ran {:.0}% on its node: {t}",
            t["comm"],
            share * 100.0
        );
        shares.push(share);
    }
    assert_eq!(per_node, [2, 2], "homes not balanced");
    let mean = shares.iter().sum::<f64>() / shares.len() as f64;
    assert!(
        mean >= 0.85,
        "{:.0}% on their nodes on average",
        mean * 100.0
    );
}

/// numalab's nest on the real kernel places tasks by its own steps (its
/// counters, printed as it is unloaded): forkexec's parent and children,
/// sixty processes one after another, go almost all to nest cores (the
/// attached core, the previous one, a primary or a reserve core) and
/// rarely to the kernel's own choice; every child that exits leaves its
/// core to the reserve (NEST's exit compaction). The trace shows every
/// child run. (How many cores the children used is not checked: in a
/// 4-CPU TCG guest the tracer and the guest's kernel threads keep every
/// core in the nest, and the children's spread was within the range of
/// the kernel's default choice: docs/sched-ext.md.)
#[test]
fn nest_places_forkexecs_children_on_its_nests() {
    if !ready("nest_places_forkexecs_children_on_its_nests") {
        return;
    }
    let _g = lock();
    let d = tempfile::tempdir().unwrap();
    let o = vm(
        d.path(),
        &[
            "run",
            "forkexec",
            "--children",
            "60",
            "--trace",
            "--scx",
            "nest",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let recs = records(d.path());
    assert_eq!(recs.len(), 1, "{}", text(&o));
    let r = &recs[0].1;
    assert_eq!(r["outcome"]["status"], "ok", "{r}");
    assert_eq!(r["applied"]["scx"]["ops"], "numalab_nest");
    let stderr = String::from_utf8_lossy(&o.stderr);
    let counted = stderr
        .lines()
        .find_map(|l| l.split("it counted ").nth(1))
        .unwrap_or_else(|| panic!("no counters: {}", text(&o)));
    let n = |k: &str| -> u64 {
        counted
            .split_whitespace()
            .find_map(|kv| kv.strip_prefix(&format!("{k}=")))
            .unwrap_or_else(|| panic!("no {k} in {counted}"))
            .parse()
            .unwrap()
    };
    let nest = n("attached") + n("prev") + n("primary") + n("reserve");
    let kernel = n("kernel_idle") + n("kernel_busy");
    assert!(
        nest >= 120 && nest >= 9 * kernel,
        "nest placed {nest}, the kernel {kernel}: {counted}"
    );
    assert!(n("compacted_at_exit") >= 30, "{counted}");
    let children: Vec<&Value> = r["sched"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["comm"] == "fe-child")
        .collect();
    assert_eq!(children.len(), 60, "{}", r["sched"]["tasks"]);
    assert!(
        children.iter().all(|t| t["run_s"].as_f64().unwrap() > 0.0),
        "a child never ran"
    );
}

/// The kernel's own example scheduler, scx_simple (built by
/// scripts/build-scx-simple.sh from the kernel's source, path in
/// `$NUMALAB_SCX_SIMPLE`), as any other program: `--scx-exec` loads it
/// for hackbench's traced runs, finds it by its ops name (`simple`) and
/// unloads it after them.
#[test]
fn scx_simple_runs_hackbench_through_scx_exec() {
    if !ready("scx_simple_runs_hackbench_through_scx_exec") {
        return;
    }
    let Some(simple) = std::env::var_os("NUMALAB_SCX_SIMPLE") else {
        assert!(
            !std::env::var_os("NUMALAB_REQUIRE_SCX").is_some_and(|v| !v.is_empty() && v != "0"),
            "NUMALAB_SCX_SIMPLE is not set: scripts/test.sh builds scx_simple with scripts/build-scx-simple.sh"
        );
        eprintln!("\n!!!!! NUMALAB_SCX_SIMPLE not set: scx_simple test SKIPPED !!!!!\n");
        return;
    };
    let simple = simple.to_string_lossy().to_string();
    let _g = lock();
    let d = tempfile::tempdir().unwrap();
    let o = vm(
        d.path(),
        &[
            "run",
            "hackbench",
            "--groups",
            "2",
            "--fds",
            "5",
            "--loops",
            "50",
            "--placement",
            "default",
            "--runs",
            "2",
            "--trace",
            "--scx-exec",
            &simple,
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let recs = records(d.path());
    assert_eq!(recs.len(), 2, "{}", text(&o));
    for (_, r) in &recs {
        assert_eq!(r["outcome"]["status"], "ok", "{r}");
        let scx = &r["applied"]["scx"];
        assert_eq!(scx["ops"], "simple", "{scx}");
        assert_eq!(scx["exec"], true, "{scx}");
        assert_eq!(r["machine"]["tuning"]["sched_ext"], "enabled simple");
        let hb = r["sched"]["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["comm"].as_str().is_some_and(|c| c.starts_with("hb-")))
            .count();
        assert!(hb >= 20, "{hb} hackbench tasks traced");
    }
    let log = console(d.path());
    let on = log
        .find("sched_ext: BPF scheduler \"simple\" enabled")
        .unwrap_or_else(|| panic!("never enabled:\n{log}"));
    let off = log
        .find("BPF scheduler \"simple\" disabled (unregistered from user space)")
        .unwrap_or_else(|| panic!("never unregistered:\n{log}"));
    assert!(on < off);
}

/// A scheduler that goes away during the runs fails the run it was
/// meant to serve, with how it ended, and stops the invocation; the
/// runs before it are kept. A program that never enables one is one
/// line naming the state sysfs showed.
#[test]
fn a_scheduler_that_ends_fails_the_run_and_one_that_never_loads_is_one_line() {
    if !ready("a_scheduler_that_ends_fails_the_run") {
        return;
    }
    let _g = lock();
    let d = tempfile::tempdir().unwrap();
    let res = d.path().join("ends");
    // `timeout` sends SIGTERM to the loader after 6 s: it unloads and
    // says so; the runs take longer than that.
    let o = vm(
        &res,
        &[
            "run",
            "spin",
            "--tasks",
            "1",
            "--seconds",
            "2",
            "--placement",
            "default",
            "--runs",
            "6",
            "--scx-exec",
            "timeout 6 numalab __scx-load fifo",
        ],
    );
    assert!(!o.status.success(), "{}", text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    let said = stderr.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        said.contains("sched_ext scheduler numalab_fifo ended during the run: UNREG"),
        "{}",
        text(&o)
    );
    let recs = records(&res);
    let failed: Vec<&Value> = recs
        .iter()
        .map(|(_, r)| r)
        .filter(|r| r["outcome"]["status"] != "ok")
        .collect();
    assert!(recs.len() < 6, "the invocation went on: {}", text(&o));
    assert!(failed.len() <= 1, "{}", text(&o));

    let res = d.path().join("never");
    let o = vm(
        &res,
        &[
            "run",
            "spin",
            "--tasks",
            "1",
            "--seconds",
            "1",
            "--scx-exec",
            "echo not a scheduler; exit 3",
        ],
    );
    assert!(!o.status.success(), "{}", text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    let line = stderr
        .lines()
        .find(|l| l.contains("--scx-exec"))
        .unwrap_or_else(|| panic!("{}", text(&o)));
    assert!(
        line.contains("it ended before sched_ext was enabled")
            && line.contains("sched_ext is disabled"),
        "{line}"
    );
    assert!(records(&res).is_empty() || !res.exists());
}

/// A guest whose kernel dies as the scheduler is unloaded, after the
/// runs: the run is kept, and numalab fails with one line naming the
/// panic (it was once taken for "nothing left to unload", exit 0, and
/// the unloading's report was silently lost).
#[test]
fn a_guest_that_panics_while_unloading_fails_and_keeps_the_run() {
    if !ready("a_guest_that_panics_while_unloading_fails_and_keeps_the_run") {
        return;
    }
    let _g = lock();
    let d = tempfile::tempdir().unwrap();
    let res = d.path().join("out");
    // Stopped, the shell crashes the kernel (sysrq c).
    let exec = "trap 'echo c > /proc/sysrq-trigger; sleep 30' INT TERM; \
                numalab __scx-load fifo & wait; wait";
    let o = vm(&res, &one_spin(&["--scx-exec", exec]));
    assert!(!o.status.success(), "{}", text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    let line = stderr
        .lines()
        .find(|l| l.contains("unloading the sched_ext scheduler"))
        .unwrap_or_else(|| panic!("{}", text(&o)));
    assert!(
        line.contains("the guest kernel panicked") && line.contains("sysrq triggered crash"),
        "{line}"
    );
    let recs = records(&res);
    assert_eq!(recs.len(), 1, "{}", text(&o));
    assert_eq!(recs[0].1["outcome"]["status"], "ok");
}

/// Ctrl-C during the runs: the finished runs are kept, and nothing is
/// left: the guest, with its kernel and the scheduler loaded in it, is
/// gone with numalab (exit 130, no QEMU). The loader's own unloading on
/// SIGINT is the next test's.
#[test]
fn ctrl_c_keeps_the_runs_and_leaves_no_guest() {
    if !ready("ctrl_c_keeps_the_runs_and_leaves_no_guest") {
        return;
    }
    let _g = lock();
    let d = tempfile::tempdir().unwrap();
    let res = d.path().join("out");
    let start = || {
        Command::new(EXE)
            .args(["vm", "--quiet", "--timeout", "300", "--results"])
            .arg(&res)
            .args(SHAPE)
            .args(["--", "run", "spin", "--tasks", "1", "--seconds", "2"])
            .args(["--placement", "default", "--runs", "8", "--scx", "fifo"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut tries = 0;
    let (child, pid) = loop {
        tries += 1;
        let mut child = start();
        let pid = child.id();
        let mut exited = false;
        let recorded = wait_until(Duration::from_secs(240), || {
            exited = exited || matches!(child.try_wait(), Ok(Some(_)));
            exited || common::count_json(&res) >= 1
        }) && common::count_json(&res) >= 1;
        if recorded {
            break (child, pid);
        }
        // Say what the guest did (a boot that hung, a panic) before failing.
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
        let out = child.wait_with_output().unwrap();
        let log = std::fs::read_dir(res.join("vm-logs"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| std::fs::read_to_string(e.path()).ok())
            .collect::<String>();
        // The emulator's int3 oops (see `vm`): up to two more tries.
        if log.contains("Oops: int3") && tries < 3 {
            eprintln!("ctrl_c: the guest died of an int3 oops (TCG, code patching); once more");
            std::fs::remove_dir_all(&res).unwrap();
            continue;
        }
        let tail: Vec<&str> = log.lines().rev().take(30).collect();
        panic!(
            "no run finished (numalab exited, or 240 s passed): {}\n--- console, last lines\n{}",
            text(&out),
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        );
    };
    let r = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(r.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    assert!(qemus_of(pid).is_empty(), "QEMU outlived numalab");
    assert!(!records(&res).is_empty());
    assert!(console(&res).contains("BPF scheduler \"numalab_fifo\" enabled"));
}

/// The loader itself, in a guest: enabled (its line, and sysfs), then on
/// SIGINT it unregisters the scheduler, prints the kernel's exit record
/// (UNREG, "unregistered from user space") and exits 0, and sched_ext is
/// disabled again.
#[test]
fn the_loader_unloads_on_sigint_and_prints_how_the_scheduler_ended() {
    if !ready("the_loader_unloads_on_sigint") {
        return;
    }
    let _g = lock();
    let d = tempfile::tempdir().unwrap();
    let script = "numalab __scx-load fifo > /tmp/loader.out &
                  p=$!
                  for i in $(seq 200); do
                    grep -q enabled /tmp/loader.out 2>/dev/null && break
                    sleep 0.1
                  done
                  echo \"while: $(cat /sys/kernel/sched_ext/state) $(cat /sys/kernel/sched_ext/root/ops)\"
                  kill -INT $p
                  wait $p
                  echo \"loader exit: $?\"
                  cat /tmp/loader.out
                  echo \"after: $(cat /sys/kernel/sched_ext/state)\"";
    let o = vm(
        d.path(),
        &[
            "run", "command", "--name", "loader", "--", "sh", "-c", script,
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let (path, _) = records(d.path()).pop().expect("a record");
    let log = std::fs::read_to_string(path.with_extension("log")).unwrap();
    assert!(log.contains("while: enabled numalab_fifo"), "{log}");
    assert!(
        log.contains("numalab-scx: enabled numalab_fifo enable_seq=1"),
        "{log}"
    );
    assert!(log.contains("loader exit: 0"), "{log}");
    assert!(log.contains("after: disabled"), "{log}");
    let exit: Value = log
        .lines()
        .find_map(|l| l.strip_prefix("numalab-scx: exit "))
        .map(|j| serde_json::from_str(j).unwrap())
        .unwrap_or_else(|| panic!("no exit line: {log}"));
    assert_eq!(exit["kind_name"], "UNREG", "{exit}");
    assert_eq!(exit["reason"], "unregistered from user space", "{exit}");
}

/// Where there is no sched_ext, `--scx` is one line before anything
/// runs: the simulator (whose scheduler is --scheduler), and a host
/// kernel without it.
#[test]
fn no_sched_ext_is_one_line() {
    let d = tempfile::tempdir().unwrap();
    let o = common::numalab_in(
        &["sim", "--machine", "ht2", "spin", "--scx-exec", "true"],
        d.path(),
    );
    common::assert_one_line_error(&o, "the simulator's scheduler is chosen with --scheduler");
    if !Path::new("/sys/kernel/sched_ext").exists() {
        let o = common::numalab_in(&["run", "spin", "--scx-exec", "true"], d.path());
        common::assert_one_line_error(&o, "has no sched_ext (/sys/kernel/sched_ext missing)");
    }
    let o = common::numalab_in(&["run", "spin", "--scx", "cfs"], d.path());
    common::assert_one_line_error(&o, "not one of numalab's sched_ext schedulers");
    let o = common::numalab_in(&["run", "spin", "--scx-exec", "a\nb"], d.path());
    common::assert_one_line_error(&o, "control character");
    assert!(
        !d.path().join("numalab-results").exists(),
        "nothing written"
    );
}
