//! The autonuma benchmarks and twohalves run for real on this machine, at
//! small sizes: records, work checks, convergence, placements, errors.

use numalab_record::{ConvergenceState, RunRecord};
use std::path::Path;
use std::process::{Command, Output};

mod common;
use common::{alive, wait_for_children};

fn numalab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_numalab"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("numalab runs")
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn records(dir: &Path) -> Vec<RunRecord> {
    let mut v: Vec<RunRecord> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let p = e.ok()?.path();
            (p.extension()? == "json").then(|| numalab_record::load(&p).unwrap())
        })
        .collect();
    v.sort_by(|a, b| a.started_at.cmp(&b.started_at));
    v
}

fn cpu_nodes(r: &RunRecord) -> usize {
    r.machine
        .topology
        .nodes
        .iter()
        .filter(|n| !n.cpus.is_empty())
        .count()
}

#[test]
fn numa02_runs_twice_and_says_whether_convergence_is_trivial() {
    let dir = tempfile::tempdir().unwrap();
    let res = dir.path().to_str().unwrap();
    let o = numalab(&[
        "run",
        "numa02",
        "--runs",
        "2",
        "--bytes",
        "16M",
        // Long enough for several samples at 0.05 s on any machine: the
        // loops sized to take 0.6 s (a fixed 100 took 0.08 s on a quiet
        // host, two threads zeroing in cache: one sample before the
        // last, and no memory chart).
        "--duration",
        "0.6",
        "--interval",
        "0.05",
        "--results",
        res,
    ]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    assert!(
        err.contains("threads:") && err.contains("memory: 16.0 MiB"),
        "{err}"
    );
    let recs = records(dir.path());
    assert_eq!(recs.len(), 2);
    for r in &recs {
        assert_eq!(r.benchmark, "numa02");
        assert!(r.outcome.is_ok());
        assert_eq!(r.tasks.len(), r.machine.topology.cpus.len());
        assert!(r.tasks.iter().all(|t| t.work_done == t.work_expected
            && Some(t.work_expected) == r.params["loops"].as_u64()));
        assert!(r.metric("elapsed_s").unwrap() > 0.0);
        assert!(r.metrics.contains_key("numa_pages_migrated"));
        // Bandwidth as perf bench numa mem reports it: in all, per thread
        // on average, and the slowest thread's.
        let (total, mean, min) = (
            r.metric("bandwidth_gbs").unwrap(),
            r.metric("thread_bandwidth_gbs").unwrap(),
            r.metric("thread_bandwidth_min_gbs").unwrap(),
        );
        assert!(
            total > 0.0 && min > 0.0 && min <= mean * (1.0 + 1e-9),
            "{:?}",
            r.metrics
        );
        // The last sample is taken when every task has ended: progress
        // there is each task's work done (100%), at the run's end. The
        // tasks are gone by then: their memory was last read before.
        let s = r.series.samples.last().expect("observed");
        let done: Vec<u64> = r.tasks.iter().map(|t| t.work_done).collect();
        assert_eq!(s.progress, done);
        let elapsed = r.metric("elapsed_s").unwrap();
        assert!((s.t_s - elapsed).abs() < 0.1, "{} vs {elapsed}", s.t_s);
        assert!(s.memory_bytes.is_empty() && s.task_memory_bytes.is_empty());
        let before = &r.series.samples[r.series.samples.len() - 2];
        assert!(before.t_s <= s.t_s);
        assert_eq!(before.task_memory_bytes.len(), r.tasks.len());
        assert_eq!(before.progress.len(), r.tasks.len());
        let c = r.convergence.as_ref().expect("convergence");
        if cpu_nodes(r) < 2 {
            assert!(matches!(c.state, ConvergenceState::Trivial { .. }));
        } else {
            assert!(!matches!(c.state, ConvergenceState::Trivial { .. }));
        }
    }
    if cpu_nodes(&recs[0]) < 2 {
        assert!(out.contains("convergence is trivial"), "{out}");
        // Status lines wrap within 80 columns: compare the words.
        let words = err.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(words.contains("convergence is trivial here"), "{err}");
    }
    // One line per run, then the summary from the records.
    assert_eq!(
        out.lines().filter(|l| l.starts_with('[')).count(),
        2,
        "{out}"
    );
    assert!(out.contains("numa02 summary"), "{out}");
    assert!(out.lines().all(|l| l.len() <= 80), "{out}");
    // The charts are the report layer's, from the records.
    let first = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .unwrap();
    let shown = numalab(&["show", first.to_str().unwrap()]);
    assert!(
        text(&shown).0.contains("Memory per node vs time"),
        "{}",
        text(&shown).0
    );
}

/// Without `--interval` the interval is `auto`: at least 1 s between
/// samples, stretched when a sample is expensive; the record says the
/// longest interval used.
#[test]
fn default_interval_is_auto_and_at_least_a_second() {
    let dir = tempfile::tempdir().unwrap();
    let res = dir.path().to_str().unwrap();
    let o = numalab(&[
        "run",
        "numa02",
        "--bytes",
        "8M",
        "--duration",
        "8",
        "--results",
        res,
    ]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    let recs = records(dir.path());
    let r = &recs[0];
    assert!(r.series.interval_s >= 1.0, "{}", r.series.interval_s);
    // Every sample but the last, which is taken when the run ends. From
    // the start sample on, samples are due on a grid of at least 1 s
    // (the pacer keeps the grid when a sample is late): at most one in
    // each second after the start, however late one is taken on a busy
    // machine (a late one followed by a punctual one can be closer than
    // a second).
    let t: Vec<f64> = r.series.samples.iter().map(|s| s.t_s).collect();
    let periodic = &t[1..t.len() - 1];
    assert!(periodic.len() >= 2, "samples at {t:?}");
    let slots: Vec<i64> = periodic
        .iter()
        .map(|x| (x - periodic[0]).floor() as i64)
        .collect();
    assert!(slots.windows(2).all(|w| w[1] > w[0]), "samples at {t:?}");
}

#[test]
fn every_benchmark_and_placement_does_all_its_work() {
    let dir = tempfile::tempdir().unwrap();
    let res = dir.path().to_str().unwrap();
    for (bench, loops_flag) in [
        ("numa01", "--loops"),
        ("numa01_THREAD_ALLOC", "--loops"),
        ("numa02_SMT", "--loops"),
        ("twohalves", "--iterations"),
    ] {
        let o = numalab(&[
            "run",
            bench,
            "--bytes",
            "8M",
            loops_flag,
            // Long enough (about 0.3 s a run here, in cache) that a 0.05 s
            // sampler sees every task's memory even beside a guest's boot
            // (at 300 a bound run had ended before its first such sample).
            "3000",
            "--threads",
            "2",
            "--placement",
            "default,bind,inverse-bind",
            "--interval",
            "0.05",
            "--results",
            res,
        ]);
        let (out, err) = text(&o);
        assert!(o.status.success(), "{bench}: {out}\n{err}");
        assert!(out.contains(&format!("{bench} summary")), "{out}");
    }
    let recs = records(dir.path());
    assert_eq!(recs.len(), 12);
    for r in &recs {
        assert!(r.outcome.is_ok(), "{:?}", r.outcome);
        let threads = match r.benchmark.as_str() {
            "numa01" | "numa01_THREAD_ALLOC" | "twohalves" => 4,
            _ => 2,
        };
        assert_eq!(r.tasks.len(), threads, "{}", r.benchmark);
        assert!(
            r.tasks.iter().all(|t| t.work_done == 3000),
            "{}",
            r.benchmark
        );
        let placement = r.params["placement"].as_str().unwrap();
        if cpu_nodes(r) < 2 && placement != "default" && r.benchmark != "twohalves" {
            assert!(
                r.warnings.iter().any(|w| w.contains("one node")),
                "{:?}",
                r.warnings
            );
        }
        // Bound placements put the memory where the plan says: each
        // task's, in the first sample that saw it (numa01's two processes
        // start and end apart, so on a loaded machine no one sample need
        // see both alive).
        if placement != "default" {
            let bound = |p: usize| -> Vec<u64> {
                match &r.backend.details()["memory_nodes"][p] {
                    serde_json::Value::Array(v) => v.iter().map(|n| n.as_u64().unwrap()).collect(),
                    v => panic!("{v}"),
                }
            };
            for t in 0..r.tasks.len() {
                let m = r
                    .series
                    .samples
                    .iter()
                    .filter_map(|s| s.task_memory_bytes.get(t))
                    .find(|m| !m.is_empty())
                    .unwrap_or_else(|| {
                        panic!(
                            "{} {placement}: task {t}'s memory in no sample of {}",
                            r.benchmark,
                            r.series.samples.len()
                        )
                    });
                // numa01*: the process's whole buffer on its node set;
                // the others (one process): each slice on its node.
                let p = r.tasks[t].process.unwrap_or(0) as usize;
                let nodes = if r.benchmark.starts_with("numa01") {
                    bound(p)
                } else {
                    let want = bound(p);
                    vec![want[t % want.len()]]
                };
                let inside: u64 = nodes
                    .iter()
                    .map(|&n| m[r.machine.topology.node_index(n as u32).unwrap()])
                    .sum();
                let total: u64 = m.iter().sum();
                assert!(
                    total > 0 && inside == total,
                    "{}: {m:?} vs nodes {nodes:?}",
                    r.benchmark
                );
            }
        }
    }
}

#[test]
fn observation_off_records_no_series() {
    let dir = tempfile::tempdir().unwrap();
    let o = numalab(&[
        "run",
        "numa02_SMT",
        "--bytes",
        "4M",
        "--loops",
        "1",
        "--interval",
        "0",
        "--results",
        dir.path().to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{:?}", text(&o));
    let r = &records(dir.path())[0];
    assert!(r.series.samples.is_empty());
    if cpu_nodes(r) >= 2 {
        assert!(r.convergence.is_none());
        assert!(text(&o).0.contains("not observed"));
    }
}

#[test]
fn bad_flags_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let res = dir.path().join("res");
    let res = res.to_str().unwrap();
    std::fs::create_dir(res).unwrap();
    for (args, want) in [
        (vec!["--placement", "sideways"], "not a placement"),
        (vec!["--placement", "bind,bind"], "given twice"),
        (vec!["--bytes", "12Q"], "not a size"),
        (vec!["--bytes", "0"], "more than 0"),
        (vec!["--bytes", "4000G"], "does not fit"),
        (vec!["--threads", "0"], "threads"),
        (vec!["--loops", "0"], "loops"),
        (vec!["--duration", "0"], "must be more than 0 s"),
        (vec!["--duration", "-1"], "must be more than 0 s"),
        (vec!["--loops", "-3"], "loops"),
        (vec!["--bytes", "8K", "--threads", "16"], "less than a page"),
    ] {
        let mut full = vec!["run", "numa02", "--results", res];
        full.extend(args.iter());
        let o = numalab(&full);
        let (out, err) = text(&o);
        assert!(!o.status.success(), "{args:?}: {out}");
        assert_eq!(
            err.lines().filter(|l| l.contains("error")).count(),
            1,
            "{err}"
        );
        let line = err.lines().find(|l| l.contains("error")).unwrap();
        assert!(line.starts_with("numalab: error:"), "{err}");
        assert!(line.contains(want), "{args:?}: {err}");
        assert!(
            std::fs::read_dir(res).unwrap().next().is_none(),
            "{args:?}: nothing written before the options are checked"
        );
    }
}

/// A process that fails is a failed run, with the reason, and a non-zero
/// exit: here a machine description with a second node that this machine
/// does not have, so binding memory there fails.
#[test]
fn a_failing_process_fails_the_run_loudly() {
    use numalab_bench::autonuma::{Kind, Params, Placement};
    use numalab_host::autonuma_run::run_once;
    let mut machine =
        numalab_topology::MachineInfo::probe(&numalab_topology::Roots::host()).unwrap();
    if cpu_nodes_of(&machine.topology) >= 2 {
        return; // a real second node: binding there works
    }
    let cpus: Vec<u32> = machine.topology.cpus.iter().map(|c| c.id).collect();
    let mut fake = numalab_topology::Topology::regular(2, 1, 1, 1, 1 << 20, 1 << 30, None).unwrap();
    // Both fake nodes' CPUs are real CPUs of this machine.
    fake.nodes[0].cpus = vec![cpus[0]];
    fake.nodes[1].cpus = vec![*cpus.last().unwrap()];
    fake.nodes[1].id = 1;
    for c in fake.cpus.iter_mut() {
        c.id = if c.node == 0 {
            cpus[0]
        } else {
            *cpus.last().unwrap()
        };
    }
    machine.topology = fake;
    let params = Params {
        kind: Kind::Numa02,
        placement: Placement::Bind,
        threads: 2,
        bytes: 4 << 20,
        loops: 1,
    };
    let interrupt = numalab_runner::Interrupt::never();
    let dir = tempfile::tempdir().unwrap();
    let spec = numalab_host::run::RunSpec {
        label: "t",
        repetition: numalab_record::Repetition { index: 1, of: 1 },
        interval: numalab_runner::Interval::Off,
        interrupt: &interrupt,
        results: dir.path(),
        progress: &|_| {},
        trace: false,
    };
    let r = run_once(
        Path::new(env!("CARGO_BIN_EXE_numalab")),
        &machine,
        &params,
        &spec,
    )
    .unwrap();
    assert!(!r.outcome.is_ok());
    let reason = r.outcome.reason.unwrap();
    assert!(
        reason.contains("ended with exit 1") && reason.contains("node 1"),
        "{reason}"
    );
}

fn cpu_nodes_of(t: &numalab_topology::Topology) -> usize {
    t.nodes.iter().filter(|n| !n.cpus.is_empty()).count()
}

/// Ctrl-C during a run: every benchmark process is killed and reaped,
/// numalab exits 130 and writes no record of the unfinished run.
#[test]
fn ctrl_c_stops_every_benchmark_process() {
    let dir = tempfile::tempdir().unwrap();
    let res = dir.path().join("res");
    let c = Command::new(env!("CARGO_BIN_EXE_numalab"))
        .args(["run", "numa01", "--bytes", "8M", "--threads", "1"])
        .args(["--loops", "100000000", "--results"])
        .arg(&res)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // numa01 runs two processes.
    let kids = wait_for_children(c.id(), 2);
    std::thread::sleep(std::time::Duration::from_millis(300));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(c.id() as i32, libc::SIGINT) };
    let o = c.wait_with_output().unwrap();
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    std::thread::sleep(std::time::Duration::from_millis(200));
    let left: Vec<u32> = kids.into_iter().filter(|p| alive(*p)).collect();
    assert!(left.is_empty(), "processes outlived numalab: {left:?}");
    let written = std::fs::read_dir(&res)
        .map(|d| d.flatten().count())
        .unwrap_or(0);
    assert_eq!(written, 0, "nothing of the unfinished run is written");
}
