//! One benchmark, one runner, three backends: the same benchmark run on
//! this machine and on a simulated one lands in the same `compare` case,
//! with the same parameters and metric names; the runner's hooks and
//! settings work and are recorded.

mod common;

use common::{assert_one_line_error, numalab_in as numalab, text};
use std::path::Path;

fn records(dir: &Path) -> Vec<numalab_record::RunRecord> {
    let rep = numalab_record::load_paths(&[dir.to_path_buf()]);
    assert!(rep.errors.is_empty(), "{:?}", rep.errors);
    rep.records.into_iter().map(|(_, r)| r).collect()
}

/// Run `args` on the host (label host) and on ht2 (label sim) into `res`.
fn both(d: &Path, res: &str, bench: &[&str]) {
    let mut real = vec!["run"];
    real.extend_from_slice(bench);
    real.extend(["--runs", "2", "--label", "host", "--results", res]);
    let o = numalab(&real, d);
    assert!(o.status.success(), "{real:?}: {}", text(&o.stderr));
    let mut sim = vec!["sim", "--machine", "ht2"];
    sim.extend_from_slice(bench);
    sim.extend(["--runs", "2", "--label", "sim", "--results", res]);
    let o = numalab(&sim, d);
    assert!(o.status.success(), "{sim:?}: {}", text(&o.stderr));
}

#[test]
fn real_and_simulated_runs_of_every_benchmark_share_one_case() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cases: [&[&str]; 7] = [
        &["numa01", "--threads", "1", "--bytes", "16M", "--loops", "2"],
        &["numa02", "--threads", "2", "--bytes", "16M", "--loops", "2"],
        &[
            "numa_test",
            "--tasks",
            "2",
            "--size",
            "50000",
            "--disturb",
            "none",
        ],
        &[
            "twohalves",
            "--threads",
            "1",
            "--bytes",
            "16M",
            "--iterations",
            "2",
        ],
        &[
            "spin",
            "--tasks",
            "1",
            "--iterations",
            "5000000",
            "--placement",
            "default",
        ],
        &[
            "hackbench",
            "--groups",
            "1",
            "--fds",
            "4",
            "--loops",
            "5",
            "--placement",
            "default",
        ],
        &[
            "mem",
            "--op",
            "write",
            "--threads",
            "1",
            "--bytes",
            "16M",
            "--loops",
            "3",
        ],
    ];
    for (i, bench) in cases.iter().enumerate() {
        let res = format!("r{i}");
        both(d, &res, bench);
        let recs = records(&d.join(&res));
        assert_eq!(recs.len(), 4);
        let (real, sim): (Vec<_>, Vec<_>) = recs.iter().partition(|r| r.backend.kind() == "real");
        assert_eq!((real.len(), sim.len()), (2, 2));
        // The same case key, the same metric names.
        assert_eq!(real[0].benchmark, sim[0].benchmark);
        assert_eq!(real[0].params, sim[0].params, "{}", real[0].benchmark);
        let mut names = vec!["elapsed_s", "user_s", "numa_pages_migrated"];
        if real[0].benchmark == "mem" {
            names.extend(["bandwidth_gbs", "thread_bandwidth_min_gbs"]);
            // 16 MiB swept 3 times over the timed part.
            for r in [real[0], sim[0]] {
                let (b, e) = (r.metric("bandwidth_gbs"), r.metric("elapsed_s"));
                let want = 3.0 * (16 << 20) as f64 / e.unwrap() / 1e9;
                assert!((b.unwrap() - want).abs() < 1e-3 * want, "{b:?} {e:?}");
            }
        }
        for m in names {
            assert!(real[0].metric(m).is_some(), "real {m}");
            assert!(sim[0].metric(m).is_some(), "sim {m}");
        }
        for r in &recs {
            for v in r.params.values() {
                assert!(!v.is_array() && !v.is_object(), "{v}");
            }
        }
        let o = numalab(
            // numa_pages_migrated can be 0 in every run: ask for it.
            &[
                "compare",
                &res,
                "--baseline",
                "host",
                "--format",
                "csv",
                "--all-metrics",
            ],
            d,
        );
        let out = text(&o.stdout);
        assert!(o.status.success(), "{}", text(&o.stderr));
        let mut rd = csv::Reader::from_reader(out.as_bytes());
        let head = rd.headers().unwrap().clone();
        let col = |n: &str| head.iter().position(|h| h == n).unwrap();
        let rows: Vec<csv::StringRecord> = rd.records().map(|r| r.unwrap()).collect();
        for m in ["elapsed_s", "user_s", "numa_pages_migrated"] {
            let groups: Vec<&csv::StringRecord> = rows
                .iter()
                .filter(|r| &r[col("kind")] == "group" && &r[col("metric")] == m)
                .collect();
            let cases: std::collections::BTreeSet<&str> =
                groups.iter().map(|r| &r[col("case")]).collect();
            assert_eq!(cases.len(), 1, "{m}: one case\n{out}");
            assert_eq!(groups.len(), 2, "{m}: both labels\n{out}");
            let sim = groups.iter().find(|r| &r[col("label")] == "sim").unwrap();
            assert!(!sim[col("verdict")].is_empty(), "{m}: a verdict\n{out}");
        }
        let text_out = text(&numalab(&["compare", &res, "--baseline", "host"], d).stdout);
        assert!(!text_out.contains("no baseline"), "{text_out}");
    }
}

#[test]
fn scans_expand_into_cases_and_names_stay_readable() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = numalab(
        &[
            "sim",
            "--machine",
            "ht2",
            "numa02",
            "--threads",
            "2,4",
            "--bytes",
            "16M",
            "--loops",
            "2",
            "--placement",
            "default,bind,inverse-bind",
        ],
        d,
    );
    let out = text(&o.stdout);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(
        out.lines().filter(|l| l.starts_with('[')).count(),
        6,
        "{out}"
    );
    assert!(out.lines().all(|l| l.len() <= 80), "{out}");
    let recs = records(&d.join("numalab-results"));
    assert_eq!(recs.len(), 6);
    for args in [
        vec!["compare", "numalab-results"],
        vec!["show", "numalab-results"],
    ] {
        let o = numalab(&args, d);
        let out = text(&o.stdout);
        assert!(o.status.success(), "{}", text(&o.stderr));
        // Case names: readable, never JSON.
        let named: Vec<&str> = out.lines().filter(|l| l.contains("placement=")).collect();
        assert!(!named.is_empty(), "{out}");
        for l in named {
            assert!(!l.contains('{') && !l.contains('['), "{args:?}: {l}");
        }
        assert!(out.contains("placement=inverse-bind"), "{out}");
    }
}

#[test]
fn flags_that_cannot_apply_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_one_line_error(
        &numalab(
            &[
                "sim",
                "--machine",
                "ht2",
                "spin",
                "--sysctl",
                "kernel.numa_balancing=1",
            ],
            d,
        ),
        "kernel.numa_balancing: the simulator models no such setting (only thp)",
    );
    assert_one_line_error(
        &numalab(&["run", "spin", "--sysctl", "kernel.no_such_knob=1"], d),
        "kernel.no_such_knob",
    );
    assert_one_line_error(&numalab(&["run", "spin", "--label", ""], d), "--label");
    assert_one_line_error(&numalab(&["run", "spin", "--cpus", ""], d), "--cpus");
    assert!(!d.join("numalab-results").exists(), "nothing written");
}

#[test]
fn hooks_run_in_order_and_are_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let log = d.join("hooks.log");
    let l = log.display();
    let o = numalab(
        &[
            "sim",
            "--machine",
            "ht2",
            "spin",
            "--tasks",
            "1",
            "--iterations",
            "1000000",
            "--placement",
            "default,packed",
            "--runs",
            "2",
            "--warmup",
            "1",
            "--setup",
            &format!("echo setup >> {l}"),
            "--prepare",
            &format!("echo prepare >> {l}"),
            "--cleanup",
            &format!("echo cleanup >> {l}"),
        ],
        d,
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let got = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = got.lines().collect();
    // setup, 2 warm-ups and 4 runs each prepared, cleanup.
    assert_eq!(lines.first(), Some(&"setup"));
    assert_eq!(lines.last(), Some(&"cleanup"));
    assert_eq!(
        lines.iter().filter(|l| **l == "prepare").count(),
        6,
        "{got}"
    );
    let recs = records(&d.join("numalab-results"));
    assert_eq!(recs.len(), 4, "warm-ups are not recorded");
    for r in &recs {
        assert_eq!(r.applied.warmup, 1);
        assert!(r.applied.prepare.as_deref().unwrap().contains("prepare"));
    }
    // A failing prepare fails that run, recorded, and the exit says so.
    let o = numalab(
        &[
            "sim",
            "--machine",
            "ht2",
            "spin",
            "--tasks",
            "1",
            "--iterations",
            "1000000",
            "--placement",
            "default",
            "--prepare",
            "echo no disk in drive; exit 7",
            "--results",
            "bad",
        ],
        d,
    );
    assert!(!o.status.success());
    let err = text(&o.stderr);
    assert!(err.contains("--prepare"), "{err}");
    let recs = records(&d.join("bad"));
    assert_eq!(recs.len(), 1);
    assert!(!recs[0].outcome.is_ok());
    // The failure carries the hook's last output lines, in the record too.
    let why = serde_json::to_string(&recs[0].outcome).unwrap();
    assert!(why.contains("its last output: no disk in drive"), "{why}");
    // The hooks of `run command --cwd DIR` run in DIR, like the command.
    let work = d.join("work");
    std::fs::create_dir(&work).unwrap();
    let o = numalab(
        &[
            "run",
            "command",
            "--cwd",
            "work",
            "--setup",
            "pwd > setup.where",
            "--prepare",
            "pwd > prepare.where",
            "--cleanup",
            "pwd > cleanup.where",
            "--results",
            "cmd",
            "--",
            "true",
        ],
        d,
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    for h in ["setup", "prepare", "cleanup"] {
        let at = std::fs::read_to_string(work.join(format!("{h}.where")));
        let at = at.unwrap_or_else(|e| panic!("--{h} did not run in --cwd: {e}"));
        assert_eq!(
            Path::new(at.trim()).canonicalize().unwrap(),
            work.canonicalize().unwrap()
        );
    }
}

/// Whether `pid` runs (exists and is not a zombie).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit_once(") ")
            .is_some_and(|(_, r)| !r.starts_with('Z'))
    })
}

/// `--setup-bg` starts once, in `--cwd`, before the first run; every
/// run's `--prepare` finds the same service alive; it is stopped after the
/// last run; its output and the hooks' are in RESULTS/hooks.log.
#[test]
fn a_setup_bg_service_lasts_through_the_runs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let work = d.join("work");
    std::fs::create_dir(&work).unwrap();
    let o = numalab(
        &[
            "run",
            "command",
            "--cwd",
            "work",
            "--runs",
            "3",
            "--setup",
            "echo set up > order",
            "--setup-bg",
            "echo service up; cat order > svc.saw; sleep 1000 & echo $! > svc.pid; wait",
            // Waits (at most 20 s) for the service's pid file, then checks
            // its sleep is alive and notes which it was.
            "--prepare",
            "for i in $(seq 200); do [ -s svc.pid ] && break; sleep 0.1; done; \
             kill -0 $(cat svc.pid) && cat svc.pid >> alive",
            "--results",
            "res",
            "--",
            "true",
        ],
        d,
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    // After --setup, in --cwd.
    assert_eq!(
        std::fs::read_to_string(work.join("svc.saw")).unwrap(),
        "set up\n"
    );
    let alive_lines = std::fs::read_to_string(work.join("alive")).unwrap();
    let pids: Vec<&str> = alive_lines.lines().collect();
    assert_eq!(pids.len(), 3, "every run's prepare found it: {alive_lines}");
    assert!(pids.iter().all(|p| *p == pids[0]), "one service: {pids:?}");
    let pid: i32 = pids[0].trim().parse().unwrap();
    assert!(!alive(pid), "the service's sleep outlived numalab");
    let recs = records(&d.join("res"));
    assert_eq!(recs.len(), 3);
    for r in &recs {
        assert!(r.outcome.is_ok());
        let bg = r.applied.setup_bg.as_deref().unwrap();
        assert!(bg.starts_with("echo service up;"), "{bg}");
    }
    let log = std::fs::read_to_string(d.join("res/hooks.log")).unwrap();
    for want in [
        " setup: $ echo set up > order\n",
        " setup: ended: exit status: 0\n",
        " setup-bg: service up\n",
        " prepare: ended: exit status: 0\n",
        " setup-bg: stopped\n",
    ] {
        assert!(log.contains(want), "{want:?} not in {log}");
    }
    assert_eq!(log.matches(" prepare: $ for i").count(), 3, "{log}");
}

/// A service that ends before the runs are done fails them, in one line
/// naming --setup-bg, its exit status and its last output.
#[test]
fn a_setup_bg_service_that_ends_fails_the_runs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = numalab(
        &[
            "run",
            "command",
            "--runs",
            "3",
            "--setup-bg",
            "echo no port; exit 3",
            "--prepare",
            "sleep 1",
            "--results",
            "res",
            "--",
            "true",
        ],
        d,
    );
    assert!(!o.status.success());
    let err = text(&o.stderr);
    let line = err
        .lines()
        .find(|l| l.starts_with("numalab: error: "))
        .unwrap_or_else(|| panic!("no error line: {err}"));
    assert_eq!(
        line,
        "numalab: error: --setup-bg \"echo no port; exit 3\" ended before the runs were done (exit 3); its last output: no port",
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    // At most the run it ended in, failed; never three.
    if d.join("res").exists() {
        let recs = records(&d.join("res"));
        assert!(recs.len() <= 1, "{recs:?}");
        assert!(recs.iter().all(|r| !r.outcome.is_ok()));
    }
    // A control character in it is refused before anything runs.
    let o = numalab(
        &[
            "run",
            "command",
            "--setup-bg",
            "sleep 1\nrm x",
            "--",
            "true",
        ],
        d,
    );
    assert_one_line_error(
        &o,
        "--setup-bg \"sleep 1\\nrm x\" holds a control character",
    );
}

/// A sampled run with fewer than 10 samples says so, in the record and
/// under its run line; one with enough does not.
#[test]
fn runs_with_few_samples_warn() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let run = |interval: &str, results: &str| {
        numalab(
            &[
                "sim",
                "--machine",
                "ht2",
                "numa02",
                "--duration",
                "3",
                "--interval",
                interval,
                "--results",
                results,
            ],
            d,
        )
    };
    let o = run("1", "few");
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout) + &text(&o.stderr);
    assert!(
        out.contains("warning: only 6 sample(s), every 1.000 s"),
        "{out}"
    );
    let recs = records(&d.join("few"));
    assert!(
        recs[0].warnings.iter().any(|w| w.contains("fewer than 10")),
        "{:?}",
        recs[0].warnings
    );
    let o = run("0.1", "many");
    assert!(o.status.success(), "{}", text(&o.stderr));
    let recs = records(&d.join("many"));
    assert!(
        !recs[0].warnings.iter().any(|w| w.contains("sample")),
        "{:?}",
        recs[0].warnings
    );
}

/// As root: a sysctl is applied for the runs, recorded, and restored
/// afterwards, also when numalab is interrupted or killed.
#[test]
fn sysctls_are_restored_after_success_interrupt_and_kill() {
    let key = "kernel.numa_balancing";
    let path = Path::new("/proc/sys/kernel/numa_balancing");
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || !path.exists() {
        eprintln!("skipped: needs root and {}", path.display());
        return;
    }
    let _s = common::host_sysctl_lock();
    let before = std::fs::read_to_string(path).unwrap().trim().to_string();
    if std::fs::write(path, &before).is_err() {
        eprintln!("skipped: {} is not writable here", path.display());
        return;
    }
    let other = if before == "0" { "1" } else { "0" };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let setting = format!("{key}={other}");
    // Success: recorded, restored.
    let o = numalab(
        &[
            "run",
            "spin",
            "--tasks",
            "1",
            "--iterations",
            "2000000",
            "--placement",
            "default",
            "--sysctl",
            &setting,
            "--prepare",
            "sync",
        ],
        d,
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let recs = records(&d.join("numalab-results"));
    assert_eq!(
        recs[0].applied.settings.get(key).map(String::as_str),
        Some(other)
    );
    assert_eq!(
        recs[0].machine.numa_balancing.as_deref(),
        Some(before.as_str()),
        "the machine probe is taken before the settings"
    );
    assert_eq!(std::fs::read_to_string(path).unwrap().trim(), before);
    // Interrupted (SIGINT) and killed (SIGKILL) in the middle of a run.
    for sig in [libc::SIGINT, libc::SIGKILL] {
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_numalab"))
            .args([
                "run",
                "spin",
                "--tasks",
                "1",
                "--iterations",
                "100000000000",
                "--placement",
                "default",
                "--sysctl",
                &setting,
                "--results",
            ])
            .arg(d.join("killed"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while std::fs::read_to_string(path).unwrap().trim() != other {
            assert!(std::time::Instant::now() < deadline, "never applied");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
        // SAFETY: signalling our own child.
        unsafe { libc::kill(pid, sig) };
        let mut child = child;
        let _ = child.wait();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::fs::read_to_string(path).unwrap().trim() != before {
            assert!(
                std::time::Instant::now() < deadline,
                "signal {sig}: {key} was not restored"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

/// Two invocations of one benchmark with the same flags, `--label nb0`
/// then `--label nb1`, into one directory: the second reuses the sizes
/// the first measured for itself (loops for a duration, here), so both
/// land in one case, and so does the simulator on a machine of this
/// shape (`host`: this machine's topology), whose own sizing would
/// differ; `--resize` measures again.
#[test]
fn a_b_across_invocations_and_backends_lands_in_one_case() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let bench = [
        "numa02",
        "--threads",
        "2",
        "--bytes",
        "16M",
        "--duration",
        "0.5",
    ];
    // `numalab CMD numa02 ... EXTRA --runs 1 --results r`: what it said,
    // on one line.
    let invoke = |cmd: &str, extra: &[&str]| -> String {
        let mut a = vec![cmd];
        a.extend_from_slice(&bench);
        a.extend_from_slice(extra);
        a.extend(["--runs", "1", "--results", "r"]);
        let o = numalab(&a, d);
        assert!(o.status.success(), "{a:?}: {}", text(&o.stderr));
        let said = text(&o.stderr);
        said.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    let said = [
        invoke("run", &["--label", "nb0"]),
        invoke("run", &["--label", "nb1"]),
        invoke("sim", &["--machine", "host", "--label", "nb0"]),
    ];
    assert!(!said[0].contains("sizes as chosen"), "{}", said[0]);
    for s in &said[1..] {
        assert!(
            s.contains("sizes as chosen by the invocation of") && s.contains(" real on "),
            "{s}"
        );
    }
    let recs = records(&d.join("r"));
    assert_eq!(recs.len(), 3);
    assert!(recs.iter().any(|r| r.backend.kind() == "sim"));
    assert!(recs.iter().all(|r| r.params == recs[0].params), "one case");
    let o = numalab(&["compare", "r", "--format", "json"], d);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["cases"].as_array().unwrap().len(), 1, "{j}");
    assert_eq!(j["configurations"].as_array().unwrap().len(), 3, "{j}");
    // --resize chooses afresh, and says nothing of the earlier sizes.
    let said = invoke("run", &["--label", "nb2", "--resize"]);
    assert!(!said.contains("sizes as chosen"), "{said}");
}
