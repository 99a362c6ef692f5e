//! `numalab calibrate`: this machine measured into a machine file the
//! simulator reads, a busy machine refused, a bad output refused before a
//! minute is spent measuring.

mod common;
use common::*;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The figure on a machine file's `key = value` line.
fn value(toml: &str, key: &str) -> f64 {
    toml.lines()
        .find_map(|l| l.strip_prefix(&format!("{key} = ")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {key} in\n{toml}"))
}

/// calibrate's bandwidth sweeps run in a numalab process of their own,
/// as the mem benchmark's, for the time asked; one that fails says so.
#[test]
fn bandwidth_is_measured_in_a_process_of_its_own() {
    use numalab_bench::mem::Op;
    let exe = std::path::Path::new(env!("CARGO_BIN_EXE_numalab"));
    for op in [Op::Read, Op::Memset] {
        let t = Instant::now();
        let bw = numalab_calibrate::memory::bandwidth(
            exe,
            &[0],
            0,
            8 << 20,
            op,
            Duration::from_millis(300),
        )
        .unwrap();
        assert!(bw > 1e8, "{} {bw}", op.name());
        assert!(
            t.elapsed() >= Duration::from_millis(300),
            "{:?}",
            t.elapsed()
        );
    }
    // A first touch in a child of its own reports a rate (how fast is
    // the machine's to say, not a test's).
    let ft = numalab_host::mem::first_touch(exe, 0, 0, 64 << 20).unwrap();
    assert!(ft.is_finite() && ft > 0.0, "first touch {ft} B/s");
    // A node the machine does not have: the child's error, not a figure.
    let e = numalab_calibrate::memory::bandwidth(
        exe,
        &[0],
        4095,
        8 << 20,
        Op::Read,
        Duration::from_millis(30),
    )
    .unwrap_err();
    assert!(e.to_string().contains("without a full report"), "{e}");
}

#[test]
fn calibrate_writes_a_machine_file_the_simulator_runs_on() {
    let d = tempfile::tempdir().unwrap();
    let o = numalab_in(
        &["calibrate", "--force", "--runs", "2", "--output", "me.toml"],
        d.path(),
    );
    assert!(o.status.success(), "{}", show(&o));
    let err = text(&o.stderr);
    assert!(err.contains("numalab calibrate: [1/"), "progress: {err}");
    assert!(
        err.contains("s left)"),
        "an estimate of the time left: {err}"
    );
    assert!(err.contains("wrote me.toml"), "{err}");
    let toml = std::fs::read_to_string(d.path().join("me.toml")).unwrap();
    // Every figure measured, and physical.
    let lat = value(&toml, "local_latency_ns");
    let hit = value(&toml, "llc_hit_ns");
    assert!((1.0..10_000.0).contains(&lat), "{lat}");
    assert!(
        hit > 0.0 && hit <= lat * 1.5,
        "LLC {hit} ns, memory {lat} ns"
    );
    assert!(value(&toml, "bandwidth_gbs") > 0.1);
    assert!(value(&toml, "mlp") >= 1.0);
    assert!((1.0..=1024.0).contains(&value(&toml, "read_mlp")));
    assert!((1.0..=1024.0).contains(&value(&toml, "write_mlp")));
    for k in [
        "spin_ns",
        "randupdt_ns",
        "memset_gbs",
        "msg_us",
        "fork_us",
        "exec_us",
        "process_launch_us",
        "thread_launch_us",
    ] {
        assert!(value(&toml, k) > 0.0, "{k}");
    }
    // A fork is timed in a small process, as forkexec's parent is: in
    // calibrate itself, grown by its buffers, it had cost more than a
    // whole fork+exec+exit of a child, and exec_us fell to its floor.
    let (fork, exec) = (value(&toml, "fork_us"), value(&toml, "exec_us"));
    assert!(exec > 1.0, "fork {fork} us, exec {exec} us (its floor: 1)");
    // A process's start (launch to its first work) contains its launch
    // (fork and execve), and its exit is timed too.
    let (launch, start) = (
        value(&toml, "process_launch_us"),
        value(&toml, "process_start_us"),
    );
    assert!(start > launch, "launch {launch} us, start {start} us");
    assert!(value(&toml, "process_exit_us") > 0.0);
    // ... of a benchmark's own task process, until its thread runs, as
    // the runner waits for it (a bare process started 30 ms sooner in
    // a TCG guest than numalab's tasks did).
    assert!(
        toml.contains("until it says its thread runs"),
        "process_start_us from a benchmark task: {toml}"
    );
    // The user share of a message's and of a child's CPU time, measured.
    for k in ["msg_user_share", "exec_user_share"] {
        let v = value(&toml, k);
        assert!(v > 0.0 && v < 1.0, "{k} = {v}");
    }
    assert!(toml.contains("spread"), "each figure's spread: {toml}");
    // The LLC sysfs reports is the simulated topology's whenever the
    // cache the model gets was measured to be another size.
    let sysfs: f64 = toml
        .split("llc_mib: sysfs gives ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no sysfs LLC: {toml}"));
    if (sysfs - value(&toml, "llc_mib")).abs() > 0.001 {
        assert!(
            (value(&toml, "reported_llc_mib") - sysfs).abs() <= 0.001,
            "{toml}"
        );
    } else {
        assert!(!toml.contains("reported_llc_mib ="), "{toml}");
    }
    // How busy the machine was (over the limit, the file says --force).
    assert!(toml.contains("# Other work while measuring: "), "{toml}");
    // The simulator runs on it, and the record names the machine.
    let o = numalab_in(
        &[
            "sim",
            "spin",
            "--machine",
            "me.toml",
            "--tasks",
            "2",
            "--seconds",
            "0.2",
            "--placement",
            "default",
            "--results",
            "r",
            "--quiet",
        ],
        d.path(),
    );
    assert!(o.status.success(), "{}", show(&o));
    let recs = json_records(&d.path().join("r"));
    assert_eq!(recs.len(), 1);
    let desc = recs[0].1.to_string();
    assert!(desc.contains("calibrated-"), "{desc}");
    // The simulator used the measured costs.
    let spin_ns = recs[0].1["backend"]["details"]["costs"]["spin_ns"]
        .as_f64()
        .unwrap();
    assert!(
        (spin_ns / value(&toml, "spin_ns") - 1.0).abs() < 0.01,
        "{spin_ns}"
    );

    // validate on that file: both sides ran the same cases, and the
    // table pairs them.
    let validate = |more: &[&str]| {
        let mut args = vec![
            "validate",
            "spin",
            "forkexec",
            "--machine",
            "me.toml",
            "--runs",
            "1",
            "--seconds",
            "0.2",
            "--results",
            "v",
            "--quiet",
            "--force",
        ];
        args.extend_from_slice(more);
        let o = numalab_in(&args, d.path());
        assert!(o.status.success(), "{}", show(&o));
        o
    };
    let o = validate(&[]);
    let out = text(&o.stdout);
    let table = &out[out.find("metric ").unwrap_or_else(|| panic!("{out}"))..];
    for needle in [
        "spin  iterations=",
        "forkexec  child_iterations=",
        "  elapsed_s",
        "  cpu_s",
        "within target: ",
        "the machine against its file",
    ] {
        assert!(table.contains(needle), "{needle:?} not in {table}");
    }
    assert!(table.lines().all(|l| l.chars().count() <= 80), "{table}");
    let recs = json_records(&d.path().join("v"));
    assert_eq!(recs.len(), 4, "2 cases x real and sim");
    let labels: std::collections::BTreeSet<String> = recs
        .iter()
        .map(|r| r.1["label"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(labels.into_iter().collect::<Vec<_>>(), ["real", "sim"]);
    // Again: resumed, nothing runs twice, the same table as JSON.
    let o = validate(&["--format", "json"]);
    assert_eq!(json_records(&d.path().join("v")).len(), 4);
    // Standard output is the JSON document alone.
    let out = text(&o.stdout);
    let json: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    // spin is the CPU's reference row: the machine against its file.
    let reference = json["reference"].as_array().unwrap();
    assert!(
        reference
            .iter()
            .any(|r| r["resource"] == "CPU" && r["error"].is_number()),
        "{out}"
    );
    let rows = json["rows"].as_array().unwrap();
    assert!(rows.iter().any(|r| r["benchmark"] == "spin"
        && r["metric"] == "elapsed_s"
        && r["real_runs"] == 1
        && r["sim_runs"] == 1));
    // Without --machine, the file the first validation kept is used
    // again: the same campaign, nothing calibrated or run anew.
    let o = numalab_in(
        &[
            "validate",
            "spin",
            "forkexec",
            "--runs",
            "1",
            "--seconds",
            "0.2",
            "--results",
            "v",
            "--force",
        ],
        d.path(),
    );
    assert!(o.status.success(), "{}", show(&o));
    assert!(
        text(&o.stderr).contains("from an earlier validation"),
        "{}",
        show(&o)
    );
    assert!(!text(&o.stderr).contains("calibrate: ["), "{}", show(&o));
    // Another machine file (calibrated again, say) into the same results:
    // refused in one line before anything there is written; the file
    // that explains its records stays.
    let kept = std::fs::read_to_string(d.path().join("v/machine.toml")).unwrap();
    let other = toml.replacen("\n[costs]\n", "\n[costs]\n# again\n", 1);
    assert_ne!(other, toml);
    std::fs::write(d.path().join("me2.toml"), &other).unwrap();
    let o = numalab_in(
        &[
            "validate",
            "spin",
            "--machine",
            "me2.toml",
            "--runs",
            "1",
            "--seconds",
            "0.2",
            "--results",
            "v",
            "--force",
        ],
        d.path(),
    );
    assert_one_line_error(&o, "holds a validation of another machine file or set");
    assert_eq!(
        std::fs::read_to_string(d.path().join("v/machine.toml")).unwrap(),
        kept
    );
}

/// Two CPU-bound processes per CPU of this machine, killed on drop.
struct Load(Vec<Child>);

impl Drop for Load {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[test]
fn a_busy_machine_is_refused_unless_forced() {
    let cpus = std::thread::available_parallelism().unwrap().get();
    let load = Load(
        (0..2 * cpus)
            .map(|_| {
                Command::new(EXE)
                    .args(["__task", "burst", "100000000000"])
                    .stdout(Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect(),
    );
    std::thread::sleep(Duration::from_millis(300));
    let d = tempfile::tempdir().unwrap();
    let t = Instant::now();
    let o = numalab_in(&["calibrate", "--output", "me.toml"], d.path());
    drop(load);
    assert_one_line_error(&o, "the machine is busy");
    assert!(text(&o.stderr).contains("--force"), "{}", show(&o));
    assert!(t.elapsed() < Duration::from_secs(30), "{:?}", t.elapsed());
    assert!(!d.path().join("me.toml").exists());
}

#[test]
fn bad_calibrate_arguments_are_refused_before_measuring() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir(d.path().join("adir")).unwrap();
    for (args, needle) in [
        (
            vec!["calibrate", "--output", "adir"],
            "--output adir: not a file name",
        ),
        (vec!["calibrate", "--runs", "0"], "--runs"),
        (
            vec!["calibrate", "--output", "/proc/nope/me.toml"],
            "--output /proc/nope/me.toml",
        ),
        (
            vec!["validate", "--machine", "nope.toml"],
            "--machine nope.toml",
        ),
        (vec!["validate", "--guest", "2y1"], "NODESxCPUS_PER_NODE"),
        (vec!["validate", "--seconds", "0"], "between 0.01 and 3600"),
    ] {
        let t = Instant::now();
        let o = numalab_in(&args, d.path());
        assert_one_line_error(&o, needle);
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "{args:?} measured first"
        );
    }
}
