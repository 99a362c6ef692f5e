//! numa01 and twohalves in a two-node QEMU guest, through `numalab vm`:
//! with kernel.numa_balancing=1 pages migrate and the benchmarks
//! converge; with 0 nothing migrates and they do not converge; bind and
//! inverse-bind put memory and threads where they say. Everything is
//! checked in the records that come back to the host. The runs that need
//! no boot-time setting share one guest (a campaign whose two
//! configurations set `kernel.numa_balancing` in the running guest).
//!
//! These need `numalab vm` (qemu-system-x86, linux-image-amd64): they
//! follow the guest tests of `numalab vm` (FAIL naming the package when
//! something is missing; `NUMALAB_SKIP_VM_TESTS=1` skips them loudly).

use serde_json::Value;
use std::process::{Command, Output};
use std::time::Instant;

mod common;
use common::{guest_lock, guests_enabled, json_records, EXE};

/// `numalab vm` with a 2 x 2-CPU, 2 x 1 GiB guest and the sysctls
/// `KEY=VALUE`, then `numalab run ARGS`; the records that came back.
fn guest_run_with(sysctls: &[&str], args: &[&str]) -> (Output, Vec<Value>) {
    let _g = guest_lock();
    let dir = tempfile::tempdir().unwrap();
    let t = Instant::now();
    let mut cmd = Command::new(EXE);
    cmd.args([
        "vm",
        "--quiet",
        "--timeout",
        "400",
        "--nodes",
        "2",
        "--cpus-per-node",
        "2",
        "--mem-per-node",
        "1G",
    ]);
    for s in sysctls {
        cmd.args(["--sysctl", s]);
    }
    let out = cmd
        .arg("--results")
        .arg(dir.path())
        .args(["--", "run"])
        .args(args)
        .output()
        .expect("running numalab vm");
    eprintln!(
        "numalab vm ({sysctls:?}) -- run {args:?}: {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let recs = json_records(dir.path())
        .into_iter()
        .map(|(_, r)| r)
        .collect();
    (out, recs)
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn metric(r: &Value, name: &str) -> f64 {
    r["metrics"][name]["value"]
        .as_f64()
        .unwrap_or_else(|| panic!("no metric {name}"))
}

fn state(r: &Value) -> &str {
    r["convergence"]["state"]["state"]
        .as_str()
        .unwrap_or("none")
}

/// Bytes on node `ix` at most `limit` in every sample, for every process.
fn memory_on_node(r: &Value, ix: usize) -> Vec<u64> {
    r["series"]["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            s["memory_bytes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m[ix].as_u64().unwrap())
                .sum()
        })
        .collect()
}

fn check_common(o: &Output, recs: &[Value], bench: &str, n: usize) {
    assert!(o.status.success(), "{}", text(o));
    assert_eq!(recs.len(), n, "{}", text(o));
    for r in recs {
        assert_eq!(r["benchmark"], bench);
        assert_eq!(r["outcome"]["status"], "ok", "{r}");
        assert_eq!(r["backend"]["kind"], "guest");
        assert_eq!(
            r["machine"]["topology"]["nodes"].as_array().unwrap().len(),
            2
        );
        for t in r["tasks"].as_array().unwrap() {
            assert_eq!(t["work_done"], t["work_expected"]);
        }
    }
}

/// With NUMA balancing on (and the further `sysctls`): pages migrate,
/// memory reaches node 1, the run converges, the terminal shows it.
fn balancing_on(bench: &str, sysctls: &[&str], args: &[&str]) -> Value {
    let mut all = vec!["kernel.numa_balancing=1"];
    all.extend(sysctls);
    let (o, recs) = guest_run_with(&all, args);
    check_common(&o, &recs, bench, 1);
    let r = &recs[0];
    assert_eq!(r["machine"]["numa_balancing"], "1");
    assert!(metric(r, "numa_pages_migrated") > 0.0, "{}", text(&o));
    // Not converged: say when memory moved, sample by sample, beside the
    // run's output, so a failure under a loaded host can be read.
    assert_eq!(
        state(r),
        "converged",
        "{}\nconvergence: {}\nbytes on node 1 per sample: {:?}",
        text(&o),
        r["convergence"],
        memory_on_node(r, 1)
    );
    assert!(metric(r, "convergence_s") >= metric(r, "started_s"));
    // Memory reached node 1 while the run was observed.
    assert!(
        memory_on_node(r, 1).iter().any(|&b| b > 16 << 20),
        "{}",
        text(&o)
    );
    // The terminal shows one line per run and the summary from the
    // records (the charts are `numalab show`'s).
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("summary, label"), "{out}");
    assert!(out.lines().any(|l| l.starts_with("[1/1]")), "{out}");
    assert!(out.lines().all(|l| l.len() <= 80 || l.starts_with('[')));
    recs.into_iter().next().unwrap()
}

/// With NUMA balancing off: nothing migrates, the run does not converge,
/// and the benchmark's buffers never reach node 1.
fn balancing_off(o: &Output, recs: &[Value], bench: &str) {
    check_common(o, recs, bench, 1);
    let r = &recs[0];
    assert_eq!(r["machine"]["numa_balancing"], "0");
    assert_eq!(metric(r, "numa_pages_migrated"), 0.0, "{}", text(o));
    assert_eq!(state(r), "not_converged", "{}", text(o));
    // Nothing of the benchmark's buffers ever reached node 1: every
    // sampled page of every thread's working memory stayed on node 0.
    // (The processes' whole resident memory is not checked: a varying
    // few MiB of the numalab binary, stacks and page tables live on the
    // node the threads run on.)
    let mut seen = 0;
    for s in r["series"]["samples"].as_array().unwrap() {
        // None in the last sample, taken when the tasks had exited.
        for m in s["task_memory_bytes"].as_array().into_iter().flatten() {
            let m: Vec<u64> = m
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().unwrap())
                .collect();
            if m.iter().sum::<u64>() > 0 {
                assert_eq!(m[1], 0, "buffer pages on node 1: {m:?}\n{}", text(o));
                seen += 1;
            }
        }
    }
    assert!(seen > 0, "no sample of the buffers: {}", text(o));
}

#[test]
fn numa01_with_numa_balancing_migrates_and_converges() {
    if guests_enabled("numa01_with_numa_balancing_migrates_and_converges") {
        // numa01 is the hard case: both processes' memory starts on node
        // 0 and the kernel must first swap threads so that each process
        // has a node, then move its memory. With the kernel's default
        // scan period (it grows to 60 s once most faults are local) the
        // Debian 6.1 guest converged in 5 of 10 runs of 20-28 s and once
        // not within 46 s; with the period bounded at 2 s, 11 of 11 runs
        // converged, the latest at 21.8 s. Documented tunables, recorded
        // with the run, that make the kernel scan and decide twice as
        // often (periods of 0.5 to 1 s, the first scan after 0.5 s):
        // 10 of 10 runs converged, at 1.2 to 13.7 s, in runs of 14-22 s,
        // and 5 of 5 at 1.4 to 15.3 s beside two busy loops; one run of
        // the test suite's did not within 19.5 s, and one of about 30 s
        // did not either (2026-11-28, the suite's two lanes beside it).
        // This one lasts about 40 s (docs/autonuma.md).
        let r = balancing_on(
            "numa01",
            &[
                "kernel.numa_balancing_scan_period_min_ms=500",
                "kernel.numa_balancing_scan_period_max_ms=1000",
                "kernel.numa_balancing_scan_delay_ms=500",
            ],
            &[
                "numa01",
                "--bytes",
                "32M",
                "--duration",
                "60",
                "--interval",
                "0.5",
            ],
        );
        // The record says which tunables were in force.
        let t = &r["machine"]["numa_balancing_tunables"];
        assert_eq!(t["scan_period_min_ms"], "500", "{t}");
        assert_eq!(t["scan_period_max_ms"], "1000", "{t}");
        assert_eq!(t["scan_delay_ms"], "500", "{t}");
    }
}

#[test]
fn twohalves_with_numa_balancing_migrates_and_converges() {
    if guests_enabled("twohalves_with_numa_balancing_migrates_and_converges") {
        // Converged at 1.6 and 1.7 s in runs of 12 s (`--duration 15`,
        // 2026-11-28); `--duration 8` gave runs of 5.6-6.5 s, and once,
        // in a CI lane beside the other, one that moved every page
        // (16907) and was not seen converged before it ended: about 9 s.
        balancing_on(
            "twohalves",
            &[],
            &[
                "twohalves",
                "--bytes",
                "128M",
                "--duration",
                "12",
                "--interval",
                "0.5",
            ],
        );
    }
}

/// Every sample after the start has each thread's memory on the node the
/// plan bound it to, and each thread on the node it was pinned to.
fn check_placed(r: &Value) {
    // How the plan was realised on the guest is a backend fact.
    let details = &r["backend"]["details"];
    let bound: Vec<Vec<u64>> = details["memory_nodes"]
        .as_array()
        .unwrap_or_else(|| panic!("memory_nodes: {details}"))
        .iter()
        .map(|m| {
            m.as_array()
                .unwrap_or_else(|| panic!("bound: {m}"))
                .iter()
                .map(|n| n.as_u64().unwrap())
                .collect()
        })
        .collect();
    // The nodes each thread may run on (numa01*: its process's half).
    let run_on: Vec<Vec<u64>> = details["thread_nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            n.as_array()
                .unwrap_or_else(|| panic!("thread nodes: {n}"))
                .iter()
                .map(|n| n.as_u64().unwrap())
                .collect()
        })
        .collect();
    // numa01* bind a process's whole buffer to a node set; the others
    // bind each thread's slice to one node.
    let sets = r["benchmark"].as_str().unwrap().starts_with("numa01");
    let allowed = |p: usize, within: usize| -> Vec<u64> {
        if sets {
            bound[p].clone()
        } else {
            vec![bound[p][within % bound[p].len()]]
        }
    };
    let tasks = r["tasks"].as_array().unwrap();
    let started = metric(r, "started_s");
    let mut checked = 0;
    for s in r["series"]["samples"].as_array().unwrap() {
        if s["t_s"].as_f64().unwrap() < started {
            continue;
        }
        let Some(mem) = s["task_memory_bytes"].as_array() else {
            continue; // the last sample, taken when the tasks had exited
        };
        for (t, task) in tasks.iter().enumerate() {
            let p = task["process"].as_u64().unwrap() as usize;
            let within = t - tasks
                .iter()
                .take_while(|x| x["process"] != task["process"])
                .count();
            let want = allowed(p, within);
            let m: Vec<u64> = mem[t]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().unwrap())
                .collect();
            if m.is_empty() || m.iter().sum::<u64>() == 0 {
                continue; // the process had just exited
            }
            let outside: u64 = (0..m.len())
                .filter(|&n| !want.contains(&(n as u64)))
                .map(|n| m[n])
                .sum();
            assert_eq!(outside, 0, "task {t}: memory {m:?}, bound to {want:?}");
            if let Some(n) = s["task_node"][t].as_u64() {
                assert!(run_on[t].contains(&n), "task {t} ran on node {n}");
            }
            checked += 1;
        }
    }
    assert!(checked > 0, "no sample after the start: {r}");
    // inverse-bind: every thread away from its memory
    if r["params"]["placement"] == "inverse-bind" {
        for (t, task) in tasks.iter().enumerate() {
            let p = task["process"].as_u64().unwrap() as usize;
            let within = t - tasks
                .iter()
                .take_while(|x| x["process"] != task["process"])
                .count();
            let mem = allowed(p, within);
            assert!(run_on[t].iter().all(|n| !mem.contains(n)), "task {t}");
        }
    }
}

/// The plan of the guest that [`balancing_off_and_bind_placements`]
/// shares: configuration `off` (kernel.numa_balancing=0, set in the
/// running guest) runs numa01 and twohalves, `bind` (=1) runs numa01 and
/// numa02 bound and inverse-bound; one 2 x 2-CPU, 2 x 1 GiB guest serves
/// both (a campaign's configurations of one guest shape share a boot).
const PLAN: &str = r#"name = "autonuma"
results = "out"
runs = 1
warmup = 0
order = "sequential"
interval = 0.3

[[benchmark]]
name = "numa01"
bytes = "64M"
duration = 3
configs = ["off"]

[[benchmark]]
name = "twohalves"
bytes = "128M"
duration = 3
configs = ["off"]

[[benchmark]]
name = "numa01"
bytes = "32M"
placement = "bind,inverse-bind"
duration = 2
configs = ["bind"]

[[benchmark]]
name = "numa02"
bytes = "32M"
placement = "bind,inverse-bind"
duration = 2
configs = ["bind"]

[[config]]
label = "off"
sysctl = { "kernel.numa_balancing" = "0" }
guest = { nodes = 2, cpus_per_node = 2, mem_per_node = "1G", timeout_s = 400 }

[[config]]
label = "bind"
sysctl = { "kernel.numa_balancing" = "1" }
guest = { nodes = 2, cpus_per_node = 2, mem_per_node = "1G", timeout_s = 400 }
"#;

/// One guest for the runs that need no boot-time setting (a campaign of
/// [`PLAN`]):
///
/// - numa01 and twohalves with NUMA balancing off migrate nothing and do
///   not converge;
/// - bind and inverse-bind (numa01, numa02) place memory where they say:
///   every sample after the start has each thread's memory on the node
///   the plan bound it to, and each thread on the node it was pinned to.
#[test]
fn balancing_off_and_bind_placements() {
    if !guests_enabled("balancing_off_and_bind_placements") {
        return;
    }
    let _g = guest_lock();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("autonuma.toml"), PLAN).unwrap();
    let t = Instant::now();
    let o = Command::new(EXE)
        .current_dir(dir.path())
        .args(["campaign", "run", "autonuma.toml"])
        .output()
        .expect("running numalab campaign");
    eprintln!("numalab campaign run: {:.1} s", t.elapsed().as_secs_f64());
    let res = dir.path().join("out");
    let boots = std::fs::read_dir(res.join("vm-logs")).map_or(0, |d| d.count());
    // One guest sizes the benchmarks (`campaign run` pins them in a guest
    // of its own), one runs both configurations.
    assert!(boots <= 2, "{boots} guests: {}", text(&o));
    let recs: Vec<Value> = json_records(&res).into_iter().map(|(_, r)| r).collect();
    let of = |label: &str, bench: &str| -> Vec<Value> {
        recs.iter()
            .filter(|r| r["label"] == label && r["benchmark"] == bench)
            .cloned()
            .collect()
    };
    balancing_off(&o, &of("off", "numa01"), "numa01");
    balancing_off(&o, &of("off", "twohalves"), "twohalves");
    for bench in ["numa01", "numa02"] {
        let recs = of("bind", bench);
        check_common(&o, &recs, bench, 2);
        for r in &recs {
            assert_eq!(r["machine"]["numa_balancing"], "1");
            check_placed(r);
        }
    }
}
