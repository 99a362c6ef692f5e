//! `--trace`: exact scheduling facts of every task of a real run, from
//! perf events on the benchmark's task tree.

mod common;

use common::{file_with_ext, numalab_in, show, text};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// The tests of this file one at a time: each is a measurement, and a
/// message storm beside a time check is load the check did not ask for.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// Seconds of interrupt, softirq and steal time all CPUs have had since
/// boot (/proc/stat's `cpu` line). Where the kernel accounts them apart,
/// they fall inside a task's `sched_switch` intervals but outside its
/// `sum_exec_runtime`, and so outside rusage: on a shared VM the
/// hypervisor's steal alone put one run of a clean-clone CI 7% over.
fn accounted_apart_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap();
    let cpu = stat.lines().next().unwrap();
    let f: Vec<f64> = cpu
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().unwrap())
        .collect();
    let tick = numalab_linux::procfs::clock_ticks() as f64;
    (f[5] + f[6] + f.get(7).copied().unwrap_or(0.0)) / tick
}

fn records(dir: &Path) -> Vec<Value> {
    let mut v: Vec<Value> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap())
        .collect();
    v.sort_by_key(|r| r["repetition"]["index"].as_u64());
    v
}

#[test]
fn every_short_lived_task_of_a_command_is_traced_with_its_cpus_and_lifetime() {
    let _one = serial();
    let dir = tempfile::tempdir().unwrap();
    let apart_before = accounted_apart_s();
    let o = numalab_in(
        &[
            "run",
            "command",
            "--trace",
            "--runs",
            "3",
            "--quiet",
            "--results",
            "r",
            "--",
            "sh",
            "-c",
            "for i in $(seq 500); do /bin/true; done",
        ],
        dir.path(),
    );
    assert!(o.status.success(), "{}", show(&o));
    // The time accounted apart during the whole invocation, plus a tick
    // for /proc/stat's resolution: a bound for any one run's share.
    let tick = 1.0 / numalab_linux::procfs::clock_ticks() as f64;
    let apart = accounted_apart_s() - apart_before + tick;
    let recs = records(&dir.path().join("r"));
    assert_eq!(recs.len(), 3);
    let mut ratios = Vec::new();
    for r in &recs {
        let s = &r["sched"];
        assert_eq!(s["lost_events"], 0, "{}", s["method"]);
        let tasks = s["tasks"].as_array().unwrap();
        let trues: Vec<&Value> = tasks.iter().filter(|t| t["comm"] == "true").collect();
        assert_eq!(trues.len(), 500, "every /bin/true");
        for t in &trues {
            assert!(t["first_cpu"].as_u64().is_some(), "{t}");
            let (f, e) = (
                t["forked_s"].as_f64().unwrap(),
                t["exited_s"].as_f64().unwrap(),
            );
            assert!(t["exec_s"].as_f64().unwrap() >= f && e > f, "{t}");
            assert!(t["run_s"].as_f64().unwrap() > 0.0, "{t}");
            let per_cpu: f64 = t["cpu_s"]
                .as_object()
                .unwrap()
                .values()
                .map(|v| v.as_f64().unwrap())
                .sum();
            assert!((per_cpu - t["run_s"].as_f64().unwrap()).abs() < 1e-6);
        }
        assert!(s["new_task_cpus"].as_array().unwrap().len() + 1 >= 500);
        // On-CPU time from the switches against the tree's user + sys
        // (wait4): within 2% (the median run) where CPU-wide switch
        // records are allowed (root), each run within 5%: a shell that
        // starts commands with vfork (dash) is charged ~20 us per command
        // by the kernel outside its sched_switch intervals, and interrupt
        // time the kernel accounts apart (interrupts, steal) falls inside
        // them: allowed on top, as measured (docs/trace.md).
        // The tree's own records miss a few microseconds around every
        // switch of a millisecond-long process.
        let traced: f64 = tasks.iter().map(|t| t["run_s"].as_f64().unwrap()).sum();
        let m = &r["metrics"];
        let rusage = m["user_s"]["value"].as_f64().unwrap() + m["sys_s"]["value"].as_f64().unwrap();
        let method = s["method"].as_str().unwrap();
        if method.contains("CPU-wide") {
            assert!(
                traced - rusage <= rusage * 0.05 + apart && rusage - traced <= rusage * 0.05,
                "traced {traced} vs user+sys {rusage}, {apart} s accounted apart"
            );
            ratios.push((traced / rusage, apart / rusage));
        } else {
            assert!(
                traced <= rusage * 1.02 && traced >= rusage * 0.75,
                "traced {traced} vs user+sys {rusage} ({method})"
            );
        }
        if unsafe { libc::geteuid() } == 0 {
            assert!(
                method.contains("CPU-wide"),
                "root traces CPU-wide: {method}"
            );
        }
        // The trace and the kernel's own counters of the command's process
        // (/proc/PID/sched, read as it lay dead) tell the same story.
        let main = &r["tasks"][0];
        let has_sched = Path::new("/proc/self/sched").exists();
        if method.contains("CPU-wide") && has_sched {
            let k = &main["kernel"];
            assert!(!k.is_null(), "the command's kernel counters: {main}");
            let t = tasks
                .iter()
                .find(|t| t["tid"] == main["pid"])
                .expect("the command's process is traced");
            let sum = |v: &Value| -> u64 {
                v.as_object()
                    .unwrap()
                    .values()
                    .map(|x| x.as_u64().unwrap())
                    .sum()
            };
            // The kernel counts every move, also one undone before the
            // task ran (woken onto a CPU, pulled back by a balancer); the
            // trace sees runs on another CPU. How many moves are undone is
            // the kernel's business and grows with the machine's load: a
            // clean-clone CI run saw 32 against 38 (16%) for this shell's
            // ~1000 wakeups, so a quarter is allowed, never more seen.
            let (seen, moved) = (sum(&t["migrations"]), k["nr_migrations"].as_u64().unwrap());
            assert!(seen <= moved && moved - seen <= 3.max(moved / 4), "{t} {k}");
            assert_eq!(t["preemptions"], k["nr_involuntary_switches"], "{t} {k}");
            // Every sleep is a voluntary switch, and so is the last one.
            let sleeps = sum(&t["wakeups"]) + 1;
            let vol = k["nr_voluntary_switches"].as_u64().unwrap();
            assert!(
                sleeps.abs_diff(vol) <= 1,
                "{sleeps} sleeps, kernel {vol}: {t} {k}"
            );
        }
        assert!(m["sched_tasks"]["value"].as_f64().unwrap() >= 500.0);
        // The raw events beside the record.
        let f = s["events_file"].as_str().unwrap();
        let events = std::fs::read_to_string(dir.path().join("r").join(f)).unwrap();
        assert!(events.lines().filter(|l| l.contains("\texec\t")).count() >= 500);
    }
    if !ratios.is_empty() {
        ratios.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (median, apart) = ratios[ratios.len() / 2];
        assert!(
            median - 1.0 <= 0.02 + apart && 1.0 - median <= 0.02,
            "traced / user+sys, time accounted apart / user+sys: {ratios:?}"
        );
    }
}

#[test]
fn show_sched_prints_wakeup_placements_and_new_task_cpus_in_80_columns() {
    let _one = serial();
    let dir = tempfile::tempdir().unwrap();
    let o = numalab_in(
        &[
            "run",
            "hackbench",
            "--trace",
            "--groups",
            "2",
            "--fds",
            "4",
            "--loops",
            "50",
            "--placement",
            "default",
            "--quiet",
            "--results",
            "h",
        ],
        dir.path(),
    );
    assert!(o.status.success(), "{}", show(&o));
    let o = numalab_in(&["show", "--sched", "h"], dir.path());
    assert!(o.status.success(), "{}", show(&o));
    let out = text(&o.stdout);
    for l in out.lines() {
        assert!(l.chars().count() <= 80, "{l:?}");
    }
    assert!(out.contains("Migrations and wakeups by distance"), "{out}");
    assert!(out.contains("\nWakeups on an idle CPU: "), "{out}");
    assert!(
        out.contains("CPUs chosen for new tasks, in order: "),
        "{out}"
    );
    assert!(out.contains("traced: 17 tasks"), "{out}");
    // An untraced record says how to get the facts.
    let o = numalab_in(
        &["run", "command", "--quiet", "--results", "u", "--", "true"],
        dir.path(),
    );
    assert!(o.status.success());
    let o = numalab_in(&["show", "--sched", "u"], dir.path());
    assert!(
        text(&o.stdout).contains("not traced (run it with --trace"),
        "{}",
        show(&o)
    );
}

#[test]
fn the_report_of_a_traced_run_has_the_tables_of_show_sched() {
    let _one = serial();
    let dir = tempfile::tempdir().unwrap();
    let o = numalab_in(
        &[
            "run",
            "command",
            "--trace",
            "--quiet",
            "--results",
            "t",
            "--",
            "sh",
            "-c",
            "for i in $(seq 20); do /bin/true; done",
        ],
        dir.path(),
    );
    assert!(o.status.success(), "{}", show(&o));
    let o = numalab_in(
        &["run", "command", "--quiet", "--results", "u", "--", "true"],
        dir.path(),
    );
    assert!(o.status.success(), "{}", show(&o));
    let o = numalab_in(&["report", "t", "u", "-o", "r.html"], dir.path());
    assert!(o.status.success(), "{}", show(&o));
    let html = std::fs::read_to_string(dir.path().join("r.html")).unwrap();
    let start = html
        .find("<section id=\"sched\"><h2>Scheduling (traced)</h2>")
        .unwrap_or_else(|| panic!("no scheduling section: {html}"));
    let sched = &html[start..start + html[start..].find("</section>").unwrap()];
    assert!(html.contains("<a href=\"#sched\">Scheduling (traced)</a>"));
    // The traced run only, with the tables of show --sched.
    assert_eq!(sched.matches("<h3>").count(), 1, "{sched}");
    for h in [
        "Time per node (s), migrations and wakeups",
        "Migrations and wakeups by distance",
    ] {
        assert!(
            sched.contains(&format!("<h4>{h}</h4><div class=\"table-scroll\">")),
            "{h}: {sched}"
        );
    }
    // More than 16 tasks: by command name, as the text does.
    assert!(
        sched.contains("<td>true</td><td class=\"r\">20</td>"),
        "{sched}"
    );
    assert!(sched.contains("grouped by role"), "{sched}");
    assert!(sched.contains("Wakeups on an idle CPU: "), "{sched}");
    assert!(
        sched.contains("CPUs chosen for new tasks, in order: "),
        "{sched}"
    );
    // The same figures as the text: the wakeup table's totals.
    let o = numalab_in(&["show", "--sched", "t"], dir.path());
    assert!(o.status.success(), "{}", show(&o));
    let out = text(&o.stdout);
    let all: Vec<&str> = out
        .lines()
        .find(|l| l.starts_with("all "))
        .unwrap_or_else(|| panic!("{out}"))
        .split_whitespace()
        .collect();
    let row: String = all[1..]
        .iter()
        .map(|n| format!("<td class=\"r\">{n}</td>"))
        .collect();
    assert!(
        sched.contains(&format!("<tr class=\"summary\"><td>all</td>{row}</tr>")),
        "{row} not in {sched}"
    );
    // No traced record, no section.
    let o = numalab_in(&["report", "u", "-o", "u.html"], dir.path());
    assert!(o.status.success(), "{}", show(&o));
    let html = std::fs::read_to_string(dir.path().join("u.html")).unwrap();
    assert!(!html.contains("Scheduling (traced)"));
}

#[test]
fn without_permission_trace_is_a_one_line_error_or_says_what_it_lacks() {
    let _one = serial();
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("SKIPPED: dropping to another user needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let o = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            common::EXE,
        ])
        .args([
            "run",
            "command",
            "--trace",
            "--quiet",
            "--results",
            "r",
            "--",
            "true",
        ])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid").unwrap();
    if o.status.success() {
        // Allowed for one's own tasks (perf_event_paranoid <= 2): the
        // switches are traced; the sched_waking tracepoint is not, and
        // the record says so.
        let r = &records(&dir.path().join("r"))[0];
        let why = r["sched"]["waker_cpu_unavailable"].as_str();
        assert!(why.is_some(), "paranoid {paranoid}: {}", r["sched"]);
    } else {
        common::assert_one_line_error(&o, "--trace: ");
        assert!(
            text(&o.stderr).contains("perf_event_paranoid"),
            "{}",
            show(&o)
        );
    }
}

/// Checks the trace-event JSON as Perfetto reads it: metadata naming a
/// track per CPU under its node, complete slices on those tracks, every
/// flow's start matched by its end, counters with values.
fn check_trace_json(json: &Value, ncpus: usize) -> std::collections::BTreeMap<String, usize> {
    let evs = json["traceEvents"].as_array().expect("traceEvents");
    let mut kinds = std::collections::BTreeMap::new();
    let mut cpus = std::collections::BTreeSet::new();
    let mut flows: std::collections::BTreeMap<u64, (u32, u32)> = Default::default();
    for e in evs {
        let ph = e["ph"].as_str().unwrap();
        *kinds.entry(ph.to_string()).or_default() += 1;
        match ph {
            "M" if e["name"] == "thread_name" => {
                cpus.insert(e["tid"].as_u64().unwrap());
                assert!(e["args"]["name"].as_str().unwrap().starts_with("CPU "));
            }
            "X" => {
                assert!(
                    e["dur"].as_f64().unwrap() >= 0.0 && e["ts"].as_f64().unwrap() >= 0.0,
                    "{e}"
                );
                assert!(
                    cpus.contains(&e["tid"].as_u64().unwrap()),
                    "a slice on a named CPU: {e}"
                );
            }
            "s" => flows.entry(e["id"].as_u64().unwrap()).or_default().0 += 1,
            "f" => flows.entry(e["id"].as_u64().unwrap()).or_default().1 += 1,
            "C" => assert!(!e["args"].as_object().unwrap().is_empty(), "{e}"),
            "i" => assert_eq!(e["s"], "t"),
            "M" => {}
            other => panic!("unexpected phase {other}: {e}"),
        }
    }
    assert_eq!(cpus.len(), ncpus);
    assert!(flows.values().all(|&(s, f)| s == 1 && f == 1), "{flows:?}");
    kinds
}

#[test]
fn trace_export_writes_a_perfetto_trace_of_a_real_run_as_the_simulator_does() {
    let _one = serial();
    let dir = tempfile::tempdir().unwrap();
    let o = numalab_in(
        &[
            "run",
            "numa02",
            "--trace",
            "--threads",
            "2",
            "--bytes",
            "16M",
            "--duration",
            "1",
            "--interval",
            "0.2",
            "--quiet",
            "--results",
            "r",
        ],
        dir.path(),
    );
    assert!(o.status.success(), "{}", show(&o));
    let rec = file_with_ext(&dir.path().join("r"), "json");
    let o = numalab_in(
        &["trace", "export", rec.to_str().unwrap(), "-o", "t.json"],
        dir.path(),
    );
    assert!(o.status.success(), "{}", show(&o));
    let ncpus = std::thread::available_parallelism().unwrap().get();
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("t.json")).unwrap()).unwrap();
    let kinds = check_trace_json(&json, ncpus);
    assert!(kinds["X"] >= 2, "{kinds:?}");
    assert!(
        kinds.get("C").copied().unwrap_or(0) >= 1,
        "memory counters: {kinds:?}"
    );
    // The simulator writes the same format through the same code.
    let o = numalab_in(
        &[
            "sim",
            "--machine",
            "ht2",
            "numa02",
            "--threads",
            "2",
            "--bytes",
            "16M",
            "--loops",
            "4",
            "--trace",
            "--quiet",
            "--results",
            "s",
        ],
        dir.path(),
    );
    assert!(o.status.success(), "{}", show(&o));
    let t = file_with_ext(&dir.path().join("s"), "trace");
    let sim: Value = serde_json::from_str(&std::fs::read_to_string(&t).unwrap()).unwrap();
    let sim_rec: Value =
        serde_json::from_str(&std::fs::read_to_string(t.with_extension("json")).unwrap()).unwrap();
    let sim_cpus = sim_rec["machine"]["topology"]["cpus"]
        .as_array()
        .unwrap()
        .len();
    let kinds = check_trace_json(&sim, sim_cpus);
    assert!(kinds["X"] >= 2 && kinds.contains_key("C"), "{kinds:?}");
    // An untraced record: one line saying so.
    let o = numalab_in(
        &["run", "command", "--quiet", "--results", "u", "--", "true"],
        dir.path(),
    );
    assert!(o.status.success());
    let u = file_with_ext(&dir.path().join("u"), "json");
    let o = numalab_in(
        &["trace", "export", u.to_str().unwrap(), "-o", "x.json"],
        dir.path(),
    );
    common::assert_one_line_error(&o, "the run was not traced (run it with --trace)");
}

/// The strict ftrace-text reader of numalab-trace's unit tests (kernel
/// prefix and TP_printk fields, Perfetto's tokenizer, per-CPU switch
/// chains), the same file.
#[path = "../../trace/src/systrace_check.rs"]
#[allow(dead_code)]
mod systrace_check;

/// Run `args` (a traced run into `results`), export its record as
/// `out` in the perfetto format and check it: the record, its path, the
/// trace and what the checker found.
fn run_and_export(
    dir: &Path,
    args: &[&str],
    results: &str,
    out: &str,
) -> (Value, std::path::PathBuf, String, systrace_check::Checked) {
    let o = numalab_in(args, dir);
    assert!(o.status.success(), "{}", show(&o));
    let rec = file_with_ext(&dir.join(results), "json");
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&rec).unwrap()).unwrap();
    let o = numalab_in(
        &[
            "trace",
            "export",
            rec.to_str().unwrap(),
            "-o",
            out,
            "--format",
            "perfetto",
        ],
        dir,
    );
    assert!(o.status.success(), "{}", show(&o));
    let t = std::fs::read_to_string(dir.join(out)).unwrap();
    let c = systrace_check::check(&t).unwrap_or_else(|e| panic!("{e}"));
    (r, rec, t, c)
}

/// `trace export --format perfetto` of a real traced run, and the
/// simulator's `--trace-format perfetto`: ftrace text whose every line
/// the strict reader takes; a changed line it refuses.
#[test]
fn trace_export_format_perfetto_is_ftrace_text_perfettos_reader_takes() {
    let _one = serial();
    let dir = tempfile::tempdir().unwrap();
    let (r, rec, t, c) = run_and_export(
        dir.path(),
        &[
            "run",
            "command",
            "--trace",
            "--quiet",
            "--results",
            "r",
            "--",
            "sh",
            "-c",
            "for i in $(seq 30); do /bin/true; done",
        ],
        "r",
        "t.systrace",
    );
    // Every task of the tree that ran is on a CPU track: the 30 trues
    // and the shell, each switched in and out.
    let trues = c.tasks.values().filter(|n| *n == "true").count();
    assert_eq!(trues, 30, "{:?}", c.tasks);
    assert!(c.tasks.values().any(|n| n == "sh"), "{:?}", c.tasks);
    assert!(c.switches >= 2 * 31, "{}", c.switches);
    // Processes end as zombies; the shell slept on its children.
    assert!(
        c.states.get("Z").copied().unwrap_or(0) >= 30,
        "{:?}",
        c.states
    );
    assert!(c.states.contains_key("S"), "{:?}", c.states);
    // The shell is woken by its exiting children: with the waker's
    // CPU traced (sched_waking could be opened), the wakings are there.
    if r["sched"]["waker_cpu_unavailable"].is_null() {
        assert!(c.wakings >= 1, "{:?}", r["sched"]);
    }
    let ncpus = r["machine"]["topology"]["cpus"].as_array().unwrap().len();
    assert!(!c.cpus.is_empty() && c.cpus.len() <= ncpus);
    assert!(t.contains(&format!("#P:{ncpus}\n")));
    // A line changed: the next switch on its CPU no longer follows.
    let lines: Vec<&str> = t.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.contains("sched_switch: prev_comm=sh "))
        .unwrap();
    let mut bad: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    let next_pid = bad[at]
        .rsplit("next_pid=")
        .next()
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .to_string();
    bad[at] = bad[at].replace(&format!("next_pid={next_pid} "), "next_pid=999999 ");
    let err = systrace_check::check(&(bad.join("\n") + "\n"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&format!("line {}", at + 1)) || err.contains("999999"),
        "{err}"
    );

    // hackbench: its tasks named by role, woken by each other.
    let (r, _, _, c) = run_and_export(
        dir.path(),
        &[
            "run",
            "hackbench",
            "--trace",
            "--groups",
            "1",
            "--fds",
            "4",
            "--loops",
            "500",
            "--quiet",
            "--results",
            "h",
        ],
        "h",
        "h.systrace",
    );
    for role in ["hb-main", "hb-send-", "hb-recv-"] {
        assert!(
            c.tasks.values().any(|n| n.starts_with(role)),
            "{role}: {:?}",
            c.tasks
        );
    }
    if r["sched"]["waker_cpu_unavailable"].is_null() {
        assert!(c.wakings >= 8, "{c:?}");
    }

    // The simulator writes the same format beside its record.
    let o = numalab_in(
        &[
            "sim",
            "--machine",
            "ht2",
            "--trace-format",
            "perfetto",
            "numa02",
            "--threads",
            "2",
            "--bytes",
            "16M",
            "--loops",
            "4",
            "--trace",
            "--quiet",
            "--results",
            "s",
        ],
        dir.path(),
    );
    assert!(o.status.success(), "{}", show(&o));
    let t = std::fs::read_to_string(file_with_ext(&dir.path().join("s"), "systrace")).unwrap();
    let c = systrace_check::check(&t).unwrap_or_else(|e| panic!("{e}"));
    assert!(c.switches >= 4 && !c.cpus.is_empty(), "{c:?}");
    assert_eq!(c.wakings, 0, "the simulator has no wakeup events");
    // A format that is not one: one line saying so.
    let o = numalab_in(
        &[
            "trace",
            "export",
            rec.to_str().unwrap(),
            "-o",
            "x",
            "--format",
            "pb",
        ],
        dir.path(),
    );
    common::assert_one_line_error(&o, "invalid value 'pb' for '--format");
    assert!(!dir.path().join("x").exists());
}

/// Per role, the wakeup latency and run-queue delay numalab records for a
/// traced hackbench against what perf recorded of the same run
/// (`perf sched record --switch-events -- numalab run hackbench
/// --trace`), within 10%:
/// count, mean and maximum (issue 27's acceptance). The perf side is
/// `perf sched latency`'s rule applied to `perf script` of the same
/// perf.data: a delay runs from a traced task's `sched_waking` of the
/// task, or from the task's switch-out while runnable, to its next
/// switch in (a switch record where the kernel wrote no sched_switch).
/// (perf 6.1's `perf sched latency` itself reads only
/// `sched_wakeup`, which its `record` no longer takes where the kernel
/// has `sched_waking`: on this 6.18 kernel it saw 1 wakeup of a receiver
/// woken 59 times; docs/trace.md.) Needs perf (scripts/test.sh installs
/// linux-perf and sets NUMALAB_REQUIRE_PERF=1; elsewhere it is skipped
/// when perf is missing).
#[test]
fn wakeup_latency_per_role_agrees_with_perf_within_10_percent() {
    use std::collections::BTreeMap;
    let has_perf = Command::new("perf")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_perf {
        assert!(
            std::env::var("NUMALAB_REQUIRE_PERF").is_err(),
            "perf is missing (install linux-perf)"
        );
        eprintln!("skipped: perf is not installed");
        return;
    }
    let _one = serial();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let exe = env!("CARGO_BIN_EXE_numalab");
    let o = Command::new("perf")
        .args(["sched", "record", "--switch-events", "-m", "64M"])
        .args(["-o", "perf.data", "--", exe])
        .args([
            "run",
            "hackbench",
            "--runs",
            "1",
            "--trace",
            "--placement",
            "default",
        ])
        .args([
            "--groups",
            "2",
            "--fds",
            "10",
            "--loops",
            "200",
            "--results",
            "r",
        ])
        .current_dir(d)
        .output()
        .unwrap();
    let err = text(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(!err.contains("lost"), "perf lost events: {err}");
    let recs = records(&d.join("r"));
    assert_eq!(recs.len(), 1);
    let tasks = recs[0]["sched"]["tasks"].as_array().unwrap();
    let role = |comm: &str| {
        comm.trim_end_matches(|c: char| c.is_ascii_digit())
            .trim_end_matches('-')
            .to_string()
    };
    let ours: BTreeMap<u64, String> = tasks
        .iter()
        .map(|t| {
            (
                t["tid"].as_u64().unwrap(),
                role(t["comm"].as_str().unwrap()),
            )
        })
        .collect();
    let script = Command::new("perf")
        .args([
            "script",
            "-i",
            "perf.data",
            "--ns",
            "--show-switch-events",
            "-F",
            "tid,cpu,time,event,trace",
        ])
        .current_dir(d)
        .output()
        .unwrap();
    assert!(script.status.success(), "{}", text(&script.stderr));
    // Delays in ms per role: (wakeup latencies, run-queue delays).
    let mut perf: BTreeMap<String, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    let (mut woken, mut preempted) = (BTreeMap::new(), BTreeMap::new());
    // Tasks on a CPU (tid -> CPU): a waking of one from its own CPU (or
    // of one preempted, still runnable) wakes nothing, as the kernel's
    // try_to_wake_up returns early for it after tracing sched_waking;
    // counting it made a later run-queue delay a wakeup latency here
    // (perf's side 47 delays where numalab's trace, which skips such
    // wakings, had 57). A waking from another CPU of one still on its
    // CPU may race its switch out there: if that switch out says it
    // slept, the waking woke it, runnable from the switch out (either
    // order of the two, which the two tools' clocks may give
    // differently: 19 such pairs in one run, 0-3 us apart); a waking
    // after that switch out says the earlier one did not.
    let mut running: BTreeMap<u64, u64> = BTreeMap::new();
    let mut on_cpu: BTreeMap<u64, f64> = BTreeMap::new();
    let mut early = std::collections::BTreeSet::new();
    let mut unrecorded = 0;
    let field = |s: &str, k: &str| -> Option<String> {
        let at = s.find(&format!("{k}="))? + k.len() + 1;
        Some(s[at..].split_whitespace().next()?.to_string())
    };
    for line in text(&script.stdout).lines() {
        let mut w = line.split_whitespace();
        let (Some(tid), Some(cpu), Some(ts), Some(ev)) = (w.next(), w.next(), w.next(), w.next())
        else {
            continue;
        };
        let cpu = cpu.trim_matches(|c| c == '[' || c == ']').parse::<u64>();
        let (Ok(tid), Ok(cpu), Ok(ts)) = (
            tid.parse::<u64>(),
            cpu,
            ts.trim_end_matches(':').parse::<f64>(),
        ) else {
            continue;
        };
        // The task a switch brings in.
        let mut incoming = None;
        if ev == "sched:sched_waking:" {
            let pid: u64 = field(line, "pid").unwrap().parse().unwrap();
            if !ours.contains_key(&tid) || !ours.contains_key(&pid) {
                continue;
            }
            if let Some(&on) = running.get(&pid) {
                if on != cpu {
                    on_cpu.entry(pid).or_insert(ts);
                }
            } else if early.remove(&pid)
                || (!woken.contains_key(&pid) && !preempted.contains_key(&pid))
            {
                woken.insert(pid, ts);
            }
        } else if ev == "sched:sched_switch:" {
            let prev: u64 = field(line, "prev_pid").unwrap().parse().unwrap();
            let next: u64 = field(line, "next_pid").unwrap().parse().unwrap();
            running.remove(&prev);
            let runnable = field(line, "prev_state").unwrap().starts_with('R');
            if ours.contains_key(&prev) && runnable {
                preempted.insert(prev, ts);
            }
            if on_cpu.remove(&prev).is_some() && !runnable {
                woken.insert(prev, ts);
                early.insert(prev);
            }
            incoming = Some(next);
        } else if ev == "PERF_RECORD_SWITCH_CPU_WIDE"
            && w.next() == Some("IN")
            && running.get(&tid) != Some(&cpu)
        {
            // The kernel wrote no sched_switch bringing it in (nor the
            // switch out record of the CPU's idle task: the case numalab
            // stands the switch in record in for, docs/trace.md).
            unrecorded += 1;
            incoming = Some(tid);
        }
        let Some(next) = incoming else {
            continue;
        };
        running.insert(next, cpu);
        if let Some(r) = ours.get(&next) {
            let e = perf.entry(r.clone()).or_default();
            if let Some(t) = woken.remove(&next) {
                e.0.push((ts - t) * 1e3);
            } else if let Some(t) = preempted.get(&next) {
                e.1.push((ts - t) * 1e3);
            }
            preempted.remove(&next);
            on_cpu.remove(&next);
            early.remove(&next);
        }
    }
    eprintln!("switches in perf.data without a sched_switch: {unrecorded}");
    // Ours per role: counts, count-weighted means, maxima.
    let stats = |key: &str, r: &str| -> (f64, f64, f64) {
        let (mut n, mut sum, mut max) = (0.0, 0.0, 0.0f64);
        for t in tasks
            .iter()
            .filter(|t| role(t["comm"].as_str().unwrap()) == r)
        {
            if let Some(l) = t.get(key).filter(|l| !l.is_null()) {
                let c = l["count"].as_f64().unwrap();
                n += c;
                sum += c * l["mean_ms"].as_f64().unwrap();
                max = max.max(l["max_ms"].as_f64().unwrap());
            }
        }
        (n, if n > 0.0 { sum / n } else { 0.0 }, max)
    };
    let theirs = |v: &[f64]| {
        let n = v.len() as f64;
        (
            n,
            v.iter().sum::<f64>() / n.max(1.0),
            v.iter().copied().fold(0.0, f64::max),
        )
    };
    let near = |a: f64, b: f64| (a - b).abs() <= 0.1 * b.abs().max(a.abs()) + 0.005;
    let mut checked = 0;
    for (r, (wake, rq)) in &perf {
        for (key, v) in [("wakeup_latency", wake), ("runqueue_delay", rq)] {
            if v.len() < 20 {
                continue;
            }
            let (a, b) = (stats(key, r), theirs(v));
            assert!(
                near(a.0, b.0) && near(a.1, b.1) && near(a.2, b.2),
                "{r} {key}: numalab (count, mean, max ms) {a:?}, perf {b:?}"
            );
            checked += 1;
        }
    }
    // The receivers' and the senders' wakeups at least.
    assert!(checked >= 2, "too few delays to compare: {perf:?}");
    let o = numalab_in(
        &[
            "show",
            "--sched",
            file_with_ext(&d.join("r"), "json").to_str().unwrap(),
        ],
        d,
    );
    let out = text(&o.stdout);
    assert!(
        out.contains("Wakeup latency and run-queue delay (ms)"),
        "{out}"
    );
    assert!(out.lines().any(|l| l.starts_with("hb-recv ")), "{out}");
}
