//! `numalab campaign`: plans checked line by line, every cell run once,
//! resumed after an interrupt without repeating anything, refused when the
//! plan changed meaning, and the guest A/B of the issue: two
//! configurations of one guest, and two guest kernels, on identical work.

mod common;

use common::{assert_one_line_error, numalab_in, show, text};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn campaign(dir: &Path, args: &[&str]) -> Output {
    let mut a = vec!["campaign"];
    a.extend_from_slice(args);
    numalab_in(&a, dir)
}

/// Every record under `dir` (not its hidden state), by path.
fn records(dir: &Path) -> Vec<Value> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    let mut paths: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    for p in paths {
        out.push(serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap());
    }
    out.sort_by(|a, b| {
        a["started_at"]
            .as_str()
            .unwrap()
            .cmp(b["started_at"].as_str().unwrap())
    });
    out
}

fn cell(r: &Value) -> String {
    r["campaign"]["cell"].as_str().unwrap().to_string()
}

const SIM_PLAN: &str = r#"
# Two balancer settings x two benchmarks x 3 repetitions on a simulated machine.
name = "sim-ab"
runs = 3
seed = 7

[[benchmark]]
name = "numa02"
threads = 4
bytes = "32M"
loops = 4

[[benchmark]]
name = "twohalves"
threads = 2
bytes = "32M"
iterations = 4

[[config]]
label = "scan {ms}"
matrix = { ms = [1000, 4000] }
sim = { machine = "azusa16", balancer = "autonuma[scan_period_max_ms={ms}]" }
"#;

#[test]
fn plan_errors_are_one_line_naming_the_line_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let bad: [(&str, &str); 16] = [
        ("[[benchmark]]\nname = \"numa02\"\nthread = 2\n", "bad.toml:3: numa02 has no parameter \"thread\""),
        ("[[benchmark]]\nname = \"numa02\"\nthreads = []\n", "bad.toml:3: threads = []: an empty list"),
        ("runz = 3\n[[benchmark]]\nname = \"numa02\"\n", "bad.toml:1: unknown field `runz`"),
        ("[[benchmark]]\nname = \"numa02\"\n\nbytes = \"-1G\"\n", "bad.toml:2: numa02: invalid value '-1G'"),
        ("[[benchmark]]\nname = \"numa03\"\n", "\"numa03\" is not a benchmark"),
        ("runs = 0\n[[benchmark]]\nname = \"numa02\"\n", "bad.toml:1: runs = 0"),
        ("[[benchmark]]\nname = \"numa02\"\n[[config]]\nlabel = \"a\"\n\nsysctls = {}\n", "bad.toml:6: [[config]] has no key \"sysctls\""),
        ("[[benchmark]]\nname = \"numa02\"\n[[config]]\nlabel = \"a {x}\"\nmatrix = { x = [] }\n", "bad.toml:5: matrix: x = []"),
        ("[[benchmark]]\nname = \"command\"\nargv = [\"true\"]\n[[config]]\nlabel = \"s\"\nsim = { machine = \"azusa16\" }\n", "the simulator cannot run a program"),
        ("[[benchmark]]\nname = \"numa02\"\n[[config]]\nlabel = \"a\"\n[[config]]\nlabel = \"a\"\n", "bad.toml:5: label \"a\" is also the label of the configuration on line 3"),
        ("[[benchmark]]\nname = \"numa02\"\nconfigs = [\"b\"]\n[[config]]\nlabel = \"a\"\n", "bad.toml:2: numa02: configs names \"b\", but no configuration has that label (labels: a)"),
        ("[[benchmark]]\nname = \"numa02\"\nconfigs = \"a\"\n[[config]]\nlabel = \"a\"\n", "bad.toml:3: configs = \"a\": the labels of the configurations it runs under"),
        ("[[benchmark]]\nname = \"numa02\"\nconfigs = [\"a\"]\n[[config]]\nlabel = \"a\"\n[[config]]\nlabel = \"b\"\n", "bad.toml:6: configuration \"b\" runs no benchmark"),
        ("[[benchmark]]\nname = \"numa02\"\nconfigs = []\n[[config]]\nlabel = \"a\"\n", "bad.toml:3: configs = []: the labels of the configurations it runs under"),
        ("[[benchmark]]\nname = \"command\"\nargv = []\n", "bad.toml:3: argv: the program and its arguments, a list of strings"),
        ("[[benchmark]]\nname = \"command\"\nargv = [\"sleep\", 1]\n", "bad.toml:3: argv: the program and its arguments, a list of strings"),
    ];
    for (plan, needle) in bad {
        write(dir.path(), "bad.toml", plan);
        let o = campaign(dir.path(), &["run", "bad.toml"]);
        assert_one_line_error(&o, needle);
        assert!(!dir.path().join("bad-results").exists(), "{plan}");
    }
    // A Slurm executor without sbatch: refused before anything runs.
    write(dir.path(), "ok.toml", SIM_PLAN);
    let o = Command::new(common::EXE)
        .args(["campaign", "run", "ok.toml", "--executor", "slurm"])
        .current_dir(dir.path())
        .env("PATH", "/nonexistent")
        .output()
        .unwrap();
    assert_one_line_error(&o, "sbatch is not on PATH");
    assert!(!dir.path().join("ok-results").exists());
    // A guest configuration on a machine without QEMU.
    write(
        dir.path(),
        "g.toml",
        "[[benchmark]]\nname = \"numa02\"\n[[config]]\nlabel = \"g\"\nguest = { nodes = 2 }\n",
    );
    let o = Command::new(common::EXE)
        .args(["campaign", "run", "g.toml"])
        .current_dir(dir.path())
        .env("PATH", "/nonexistent")
        .output()
        .unwrap();
    assert_one_line_error(
        &o,
        "g.toml:3: configuration \"g\" needs a guest: qemu-system-x86_64 not found",
    );
    assert!(!dir.path().join("g-results").exists());
}

/// `configs = [...]` on a benchmark: it runs under those configurations
/// only, while the others run everything; a program may then share a plan
/// with a simulated configuration it does not run under.
#[test]
fn a_benchmark_with_configs_runs_under_those_configurations_only() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "only.toml",
        r#"
name = "only"
runs = 2

[[benchmark]]
name = "numa02"
threads = 4
bytes = "32M"
loops = 4
configs = ["linux"]

[[benchmark]]
name = "twohalves"
threads = 2
bytes = "32M"
iterations = 4

[[config]]
label = "linux"
sim = { machine = "azusa16", scheduler = "linux" }

[[config]]
label = "blind"
sim = { machine = "azusa16", scheduler = "node-blind" }
"#,
    );
    let o = campaign(dir.path(), &["status", "only.toml"]);
    assert!(o.status.success(), "{}", show(&o));
    assert!(text(&o.stdout).contains("3 pair(s)"), "{}", show(&o));
    let o = campaign(dir.path(), &["run", "only.toml", "--quiet"]);
    assert!(o.status.success(), "{}", show(&o));
    assert!(
        text(&o.stdout).contains("campaign only: 6 of 6 cells done"),
        "{}",
        show(&o)
    );
    let mut ran: BTreeMap<(String, String), usize> = BTreeMap::new();
    for r in records(&dir.path().join("only-results")) {
        let key = (
            r["label"].as_str().unwrap().to_string(),
            r["benchmark"].as_str().unwrap().to_string(),
        );
        *ran.entry(key).or_default() += 1;
    }
    let want: BTreeMap<(String, String), usize> = [
        (("blind".to_string(), "twohalves".to_string()), 2),
        (("linux".to_string(), "numa02".to_string()), 2),
        (("linux".to_string(), "twohalves".to_string()), 2),
    ]
    .into_iter()
    .collect();
    assert_eq!(ran, want);
    // A program restricted to this machine next to a simulated
    // configuration: accepted (the simulator never runs it).
    write(
        dir.path(),
        "mixed.toml",
        "[[benchmark]]\nname = \"command\"\nargv = [\"true\"]\nconfigs = [\"here\"]\n[[benchmark]]\nname = \"numa02\"\nconfigs = [\"s\"]\n[[config]]\nlabel = \"here\"\n[[config]]\nlabel = \"s\"\nsim = { machine = \"azusa16\" }\n",
    );
    let o = campaign(dir.path(), &["status", "mixed.toml"]);
    assert!(o.status.success(), "{}", show(&o));
    assert!(text(&o.stdout).contains("2 pair(s)"), "{}", show(&o));
}

/// A configuration on this machine and a simulated one of the same shape
/// (`host`: this machine's topology) run the same cases: the simulator
/// takes the sizes this machine chose (its own sizing, from its own
/// speed, would give other loops), so both land in one compare table.
#[test]
fn a_simulated_machine_of_this_shape_runs_the_cases_sized_here() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "twin.toml",
        r#"
name = "twin"
runs = 1

[[benchmark]]
name = "numa02"
threads = 2
bytes = "16M"
duration = 0.5

[[config]]
label = "here"

[[config]]
label = "model"
sim = { machine = "host" }
"#,
    );
    let o = campaign(dir.path(), &["run", "twin.toml", "--quiet"]);
    assert!(o.status.success(), "{}", show(&o));
    let recs = records(&dir.path().join("twin-results"));
    assert_eq!(recs.len(), 2, "{}", show(&o));
    assert_eq!(recs[0]["params"], recs[1]["params"], "one case");
    let lock =
        std::fs::read_to_string(dir.path().join("twin-results/.campaign/plan.lock.json")).unwrap();
    assert!(lock.contains("a machine of the same shape"), "{lock}");
    let o = numalab_in(&["compare", "twin-results", "--format", "json"], dir.path());
    assert!(o.status.success(), "{}", show(&o));
    let j: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["cases"].as_array().unwrap().len(), 1, "{j}");
}

#[test]
fn a_sim_campaign_runs_each_cell_once_in_blocks_and_resumes_only_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "ab.toml", SIM_PLAN);
    let results = dir.path().join("sim-ab-results");
    let o = campaign(dir.path(), &["run", "ab.toml", "--quiet"]);
    assert!(o.status.success(), "{}", show(&o));
    let out = text(&o.stdout);
    assert!(
        out.contains("campaign sim-ab: 12 of 12 cells done, 0 failed, 0 missing"),
        "{out}"
    );
    // The summary compares the two configurations against the first.
    assert!(out.contains("scan 4000 vs scan 1000"), "{out}");
    let recs = records(&results);
    assert_eq!(recs.len(), 12);
    let keys: BTreeSet<String> = recs.iter().map(cell).collect();
    assert_eq!(keys.len(), 12, "every cell once");
    for r in &recs {
        assert_eq!(r["schema_version"], numalab_record::SCHEMA_VERSION);
        assert_eq!(r["campaign"]["name"], "sim-ab");
        assert_eq!(r["campaign"]["order_seed"], 7);
    }
    // Randomised blocks: every repetition 1 before any repetition 2.
    let reps: Vec<u64> = recs
        .iter()
        .map(|r| r["repetition"]["index"].as_u64().unwrap())
        .collect();
    assert!(reps.windows(2).all(|w| w[0] <= w[1]), "{reps:?}");
    // Both configurations ran identical cases (sizes pinned once).
    let mut by_label: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for r in &recs {
        by_label
            .entry(r["label"].as_str().unwrap().to_string())
            .or_default()
            .insert(format!("{} {}", r["benchmark"], r["params"]));
    }
    let sets: Vec<&BTreeSet<String>> = by_label.values().collect();
    assert_eq!(sets.len(), 2);
    assert_eq!(sets[0], sets[1]);
    assert_eq!(sets[0].len(), 2);

    // Lose three records: only those three run again, in the same order.
    let mut lost = Vec::new();
    for p in std::fs::read_dir(&results)
        .unwrap()
        .flatten()
        .map(|e| e.path())
    {
        if p.extension().is_some_and(|x| x == "json") && lost.len() < 3 {
            let r: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
            lost.push(cell(&r));
            std::fs::remove_file(&p).unwrap();
        }
    }
    let st = campaign(dir.path(), &["status", "ab.toml"]);
    let st_out = text(&st.stdout);
    assert!(
        st_out.contains("9 of 12 done, 0 failed, 0 queued, 3 missing"),
        "{st_out}"
    );
    for k in &lost {
        assert!(st_out.contains(&format!("missing  {k}")), "{k}: {st_out}");
    }
    let o = campaign(dir.path(), &["run", "ab.toml", "--quiet"]);
    assert!(o.status.success(), "{}", show(&o));
    assert!(
        text(&o.stderr).contains("running 3 of 12 cells (9 done before)"),
        "{}",
        show(&o)
    );
    let recs = records(&results);
    assert_eq!(recs.len(), 12);
    assert_eq!(recs.iter().map(cell).collect::<BTreeSet<_>>().len(), 12);
    // Nothing left: nothing runs.
    let o = campaign(dir.path(), &["run", "ab.toml", "--quiet"]);
    assert!(o.status.success(), "{}", show(&o));
    assert!(
        text(&o.stderr).contains("all 12 cells done; nothing to run"),
        "{}",
        show(&o)
    );
    assert_eq!(records(&results).len(), 12);

    // More repetitions extend the campaign ...
    let more = SIM_PLAN.replace("runs = 3", "runs = 4");
    write(dir.path(), "ab.toml", &more);
    let o = campaign(dir.path(), &["run", "ab.toml", "--quiet"]);
    assert!(o.status.success(), "{}", show(&o));
    assert!(
        text(&o.stderr).contains("running 4 of 16 cells (12 done before)"),
        "{}",
        show(&o)
    );
    // ... but a change of what a cell means is refused, nothing written.
    let other = more.replace("[1000, 4000]", "[1000, 2000]");
    write(dir.path(), "ab.toml", &other);
    let o = campaign(dir.path(), &["run", "ab.toml"]);
    assert_one_line_error(&o, "holds records of another plan");
    assert_eq!(records(&results).len(), 16);
    // So is a results directory of plain `numalab run` records.
    let plain = dir.path().join("plain");
    let o = numalab_in(
        &[
            "sim",
            "--machine",
            "azusa16",
            "numa02",
            "--threads",
            "2",
            "--bytes",
            "16M",
            "--loops",
            "2",
            "--results",
            "plain",
            "--quiet",
        ],
        dir.path(),
    );
    assert!(o.status.success(), "{}", show(&o));
    write(
        dir.path(),
        "p.toml",
        &SIM_PLAN.replace("name = \"sim-ab\"", "results = \"plain\""),
    );
    let before = std::fs::read_dir(&plain).unwrap().count();
    let o = campaign(dir.path(), &["run", "p.toml"]);
    assert_one_line_error(&o, "holds records that no campaign wrote");
    assert_eq!(std::fs::read_dir(&plain).unwrap().count(), before);
}

#[test]
fn an_interrupted_campaign_keeps_its_cells_and_the_next_run_finishes_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "sleep.toml",
        "runs = 5\ninterval = 0\n[[benchmark]]\nname = \"command\"\nname_ = 1\n",
    );
    // (a typo'd key is refused)
    let o = campaign(dir.path(), &["run", "sleep.toml"]);
    assert_one_line_error(&o, "command has no parameter \"name_\"");
    write(
        dir.path(),
        "sleep.toml",
        "runs = 5\ninterval = 0\n[[benchmark]]\nname = \"command\"\nargv = [\"sleep\", \"0.6\"]\n",
    );
    let results = dir.path().join("sleep-results");
    let child = Command::new(common::EXE)
        .args(["campaign", "run", "sleep.toml", "--quiet"])
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupt after two cells are recorded.
    let t0 = Instant::now();
    while records(&results).len() < 2 && t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(50));
    }
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", show(&o));
    let kept = records(&results);
    assert!((2..5).contains(&kept.len()), "{}", kept.len());
    assert!(
        text(&o.stderr).contains("run the plan again to finish"),
        "{}",
        show(&o)
    );
    let o = campaign(dir.path(), &["run", "sleep.toml", "--quiet"]);
    assert!(o.status.success(), "{}", show(&o));
    let err = text(&o.stderr);
    assert!(
        err.contains(&format!(
            "running {} of 5 cells ({} done before)",
            5 - kept.len(),
            kept.len()
        )),
        "{err}"
    );
    let all = records(&results);
    assert_eq!(all.len(), 5);
    assert_eq!(all.iter().map(cell).collect::<BTreeSet<_>>().len(), 5);
    // A cell that is done is not run again by run-cell either.
    let k = cell(&all[0]);
    let o = campaign(dir.path(), &["run-cell", "sleep.toml", "--cell", &k]);
    assert!(o.status.success(), "{}", show(&o));
    assert!(text(&o.stdout).contains("is done already"), "{}", show(&o));
    let o = campaign(dir.path(), &["run-cell", "sleep.toml", "--cell", "nope"]);
    assert_one_line_error(&o, "no cell \"nope\"");
    assert_eq!(records(&results).len(), 5);
}

const TRACED_PLAN: &str = r#"
# A host command traced by its benchmark, another by its configuration.
name = "traced"
interval = 0

[[benchmark]]
name = "command"
record_name = "forks"
argv = ["sh", "-c", "for i in 1 2 3; do /bin/true; done"]
trace = true

[[benchmark]]
name = "command"
record_name = "quiet"
argv = ["true"]

[[config]]
label = "plain"

[[config]]
label = "traced"
trace = true
"#;

#[test]
fn trace_in_a_plan_traces_the_cells_that_ask_for_it_and_is_in_the_hash_not_the_keys() {
    if unsafe { libc::geteuid() } != 0 {
        eprintln!(
            "SKIPPED: tracing is allowed only where perf events are (run as root; docs/trace.md)"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "traced.toml", TRACED_PLAN);
    let o = campaign(dir.path(), &["run", "traced.toml", "--quiet"]);
    assert!(o.status.success(), "{}", show(&o));
    let results = dir.path().join("traced-results");
    let recs = records(&results);
    assert_eq!(recs.len(), 4, "{}", show(&o));
    let mut traced = BTreeMap::new();
    for r in &recs {
        let name = format!(
            "{} {}",
            r["label"].as_str().unwrap(),
            r["benchmark"].as_str().unwrap()
        );
        let s = &r["sched"];
        traced.insert(name.clone(), s.is_object());
        if s.is_object() {
            let tasks = s["tasks"].as_array().unwrap();
            assert!(!tasks.is_empty(), "{name}: {s}");
            // Its raw events beside it.
            let events = results.join(s["events_file"].as_str().unwrap());
            assert!(events.is_file(), "{name}: {}", events.display());
            if r["benchmark"] == "forks" {
                let trues = tasks.iter().filter(|t| t["comm"] == "true").count();
                assert_eq!(trues, 3, "{name}: {s}");
            }
        }
    }
    assert_eq!(
        traced,
        BTreeMap::from([
            ("plain forks".to_string(), true),
            ("plain quiet".to_string(), false),
            ("traced forks".to_string(), true),
            ("traced quiet".to_string(), true),
        ])
    );
    // Turning tracing on for more cells changes the plan's meaning: the
    // directory is refused, never resumed into a mix.
    write(
        dir.path(),
        "traced.toml",
        &TRACED_PLAN.replace("argv = [\"true\"]", "argv = [\"true\"]\ntrace = true"),
    );
    let o = campaign(dir.path(), &["run", "traced.toml", "--quiet"]);
    assert_one_line_error(&o, "holds records of another plan");
    assert_eq!(records(&results).len(), 4);
    // The same plan without tracing: another hash, the same cell keys.
    let untraced = TRACED_PLAN
        .replace("name = \"traced\"", "name = \"untraced\"")
        .replace("trace = true\n", "");
    write(dir.path(), "untraced.toml", &untraced);
    let o = campaign(dir.path(), &["run", "untraced.toml", "--quiet"]);
    assert!(o.status.success(), "{}", show(&o));
    let plain = records(&dir.path().join("untraced-results"));
    assert!(plain
        .iter()
        .all(|r| r.get("sched").is_none_or(Value::is_null)));
    let hash = |rs: &[Value]| -> BTreeSet<String> {
        rs.iter()
            .map(|r| r["campaign"]["plan_hash"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(hash(&recs).len(), 1);
    assert_ne!(hash(&recs), hash(&plain));
    assert_eq!(
        recs.iter().map(cell).collect::<BTreeSet<_>>(),
        plain.iter().map(cell).collect::<BTreeSet<_>>()
    );
}

const GUEST_AB: &str = r#"
# numa02 and twohalves with NUMA balancing off and on, in one 2-node guest.
runs = 3
interval = 0.5

[[benchmark]]
name = "numa02"
threads = 2
bytes = "32M"
loops = 3

[[benchmark]]
name = "twohalves"
threads = 1
bytes = "32M"
iterations = 3

[[config]]
label = "balancing {nb}"
matrix = { nb = [0, 1] }
sysctl = { "kernel.numa_balancing" = "{nb}" }
guest = { nodes = 2, cpus_per_node = 1, mem_per_node = "512M", timeout_s = 900 }
"#;

#[test]
fn a_guest_ab_runs_unattended_resumes_after_an_interrupt_and_compares_side_by_side() {
    if !common::guests_enabled("campaign guest A/B") {
        return;
    }
    let _g = common::guest_lock();
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "nb.toml", GUEST_AB);
    let results = dir.path().join("nb-results");
    let child = Command::new(common::EXE)
        .args(["campaign", "run", "nb.toml", "--quiet"])
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while records(&results).len() < 3 && t0.elapsed() < Duration::from_secs(600) {
        std::thread::sleep(Duration::from_millis(100));
    }
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", show(&o));
    let kept = records(&results).len();
    assert!((3..12).contains(&kept), "{kept}");
    let o = campaign(dir.path(), &["run", "nb.toml", "--quiet"]);
    assert!(o.status.success(), "{}", show(&o));
    assert!(
        text(&o.stderr).contains(&format!(
            "running {} of 12 cells ({kept} done before)",
            12 - kept
        )),
        "{}",
        show(&o)
    );
    let recs = records(&results);
    assert_eq!(recs.len(), 12);
    assert_eq!(recs.iter().map(cell).collect::<BTreeSet<_>>().len(), 12);
    for r in &recs {
        assert_eq!(r["backend"]["kind"], "guest");
        let nb = r["applied"]["settings"]["kernel.numa_balancing"]
            .as_str()
            .unwrap();
        assert_eq!(r["label"], format!("balancing {nb}"));
    }
    // Each benchmark with both configurations side by side.
    let out = text(&o.stdout);
    assert!(out.contains("numa02: balancing 1 vs balancing 0"), "{out}");
    assert!(
        out.contains("twohalves: balancing 1 vs balancing 0"),
        "{out}"
    );
    assert!(!out.contains("no baseline"), "{out}");
}

#[test]
fn two_guest_kernels_are_compared_on_identical_sizes() {
    if !common::guests_enabled("campaign two kernels") {
        return;
    }
    let _g = common::guest_lock();
    let dir = tempfile::tempdir().unwrap();
    let kernel = std::fs::read_dir("/boot")
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("vmlinuz-")
        })
        .max()
        .expect("a /boot/vmlinuz-*");
    // A second kernel image: a copy under another name boots as another
    // kernel would (a guest per image), which is what is tested here.
    let copy = dir.path().join("vmlinuz-copy");
    std::fs::copy(&kernel, &copy).unwrap();
    let plan = format!(
        r#"
runs = 1
[[benchmark]]
name = "numa02"
bytes = "32M"
duration = 1

[[config]]
label = "stock"
guest = {{ nodes = 2, kernel = "{}" }}

[[config]]
label = "copy"
guest = {{ nodes = 2, kernel = "vmlinuz-copy" }}
"#,
        kernel.display()
    );
    write(dir.path(), "k.toml", &plan);
    let o = campaign(dir.path(), &["run", "k.toml", "--quiet"]);
    assert!(o.status.success(), "{}", show(&o));
    let recs = records(&dir.path().join("k-results"));
    assert_eq!(recs.len(), 2);
    // The loop count came from one calibration and was pinned for both.
    assert_eq!(recs[0]["params"], recs[1]["params"]);
    let labels: BTreeSet<&str> = recs.iter().map(|r| r["label"].as_str().unwrap()).collect();
    assert_eq!(labels, BTreeSet::from(["copy", "stock"]));
    let lock: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("k-results/.campaign/plan.lock.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(lock["groups"].as_array().unwrap().len(), 1);
    assert_eq!(lock["groups"][0]["resolved_on"], "stock");
}

#[test]
fn the_example_plans_parse_and_the_sim_sweep_runs_its_75_cells() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let dir = tempfile::tempdir().unwrap();
    let mut n = 0;
    // The example campaigns and the reproduce claims' sensitivity sweeps.
    let plans = ["campaigns", "sensitivity"]
        .iter()
        .flat_map(|d| std::fs::read_dir(root.join(d)).unwrap().flatten());
    for e in plans {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "toml") {
            // A copy: results land beside it, in the temporary directory.
            let copy = dir.path().join(p.file_name().unwrap());
            std::fs::copy(&p, &copy).unwrap();
            let plan = std::fs::read_to_string(&p).unwrap();
            assert!(
                plan.starts_with('#'),
                "{}: starts with what it shows",
                p.display()
            );
            let o = campaign(dir.path(), &["status", copy.to_str().unwrap()]);
            assert!(o.status.success(), "{}: {}", p.display(), show(&o));
            assert!(
                text(&o.stdout).contains("nothing has run yet"),
                "{}",
                show(&o)
            );
            n += 1;
        }
    }
    assert!(n >= 9, "{n} example plans");
    let o = campaign(dir.path(), &["run", "sim-sweep.toml", "--quiet"]);
    assert!(o.status.success(), "{}", show(&o));
    let out = text(&o.stdout);
    assert!(
        out.contains("campaign sim-sweep: 75 of 75 cells done"),
        "{out}"
    );
    assert!(out.contains("=== simulated tx7"), "{out}");
    let st = campaign(dir.path(), &["status", "sim-sweep.toml"]);
    assert!(
        text(&st.stdout).contains("75 of 75 done, 0 failed"),
        "{}",
        show(&st)
    );
}

/// Configurations that are the same on their machine (only their labels
/// differ, or only NUMA settings on a machine of one node) and benchmarks
/// that resolve to the same case are said in a line each before anything
/// runs; the same case runs once.
#[test]
fn the_same_work_twice_on_a_machine_is_said_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "same.toml",
        r#"
name = "same"
runs = 1

[[benchmark]]
name = "numa02"
threads = 4
bytes = ["32M", "32768K"]
loops = 4

[[config]]
label = "{m} scan {ms}"
matrix = { m = ["azusa16", "epyc7642"], ms = [1000, 4000] }
sim = { machine = "{m}", balancer = "autonuma[scan_period_max_ms={ms}]" }

[[config]]
label = "again"
sim = { machine = "azusa16", balancer = "autonuma[scan_period_max_ms=1000]" }
"#,
    );
    let o = campaign(dir.path(), &["run", "same.toml"]);
    assert!(o.status.success(), "{}", show(&o));
    let err = text(&o.stderr);
    for l in err.lines() {
        assert!(l.chars().count() <= 80, "{l}");
    }
    // Status lines wrap: read each message whole.
    let mut said: Vec<String> = Vec::new();
    for l in err.lines() {
        match l.strip_prefix("  ") {
            Some(more) if !said.is_empty() => {
                let last = said.last_mut().unwrap();
                last.push(' ');
                last.push_str(more);
            }
            _ => said.push(l.to_string()),
        }
    }
    let warnings: Vec<&String> = said.iter().filter(|l| l.contains("are the same")).collect();
    assert_eq!(warnings.len(), 4, "{err}");
    let has = |parts: &[&str]| warnings.iter().any(|w| parts.iter().all(|p| w.contains(p)));
    assert!(
        has(&[
            "on simulated azusa16, configurations \"azusa16 scan 1000\", \"again\" are the same",
            "only in their labels"
        ]),
        "{err}"
    );
    assert!(
        has(&[
            "on simulated epyc7642, configurations \"epyc7642 scan 1000\", \"epyc7642 scan 4000\"",
            "only in NUMA settings, which do nothing on a machine of one node"
        ]),
        "{err}"
    );
    for m in ["azusa16", "epyc7642"] {
        assert!(
            has(&[
                &format!("on simulated {m}, numa02 bytes=32M "),
                " and numa02 bytes=32768K ",
                "are the same case (numa02 ",
                "runs once"
            ]),
            "{err}"
        );
    }
    assert!(!err.contains("\"azusa16 scan 4000\""), "{err}");
    // Before anything runs.
    let first_warning = err.find("are the same").unwrap();
    assert!(first_warning < err.find("running").unwrap(), "{err}");
    // Five configurations, one case: five cells, not ten.
    assert!(
        text(&o.stdout).contains("campaign same: 5 of 5 cells done"),
        "{}",
        show(&o)
    );
    assert_eq!(records(&dir.path().join("same-results")).len(), 5);
    // Resumed, it says so again, and runs nothing.
    let o = campaign(dir.path(), &["run", "same.toml"]);
    assert!(o.status.success(), "{}", show(&o));
    assert!(text(&o.stderr).contains("are the same"), "{}", show(&o));
    assert!(text(&o.stderr).contains("nothing to run"), "{}", show(&o));
}
