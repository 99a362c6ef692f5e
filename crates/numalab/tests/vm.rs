//! `numalab vm`: the guest testbed, tested by booting real QEMU guests.
//!
//! These tests need `qemu-system-x86_64` (Debian package qemu-system-x86)
//! and a readable kernel image `/boot/vmlinuz-*` (linux-image-amd64). When
//! either is missing they FAIL, naming the package: a silently skipped
//! test would hide a broken testbed. `NUMALAB_SKIP_VM_TESTS=1` skips them
//! on purpose, with a loud notice.
//!
//! Guests run one at a time (a lock), kept small (2 vCPUs where the test
//! allows) because TCG on a 2-core host is slow.

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

/// `numalab vm --quiet --timeout 300 --results DIR <vm_args> -- <cmd>`.
fn vm(results: &Path, vm_args: &[&str], cmd: &[&str]) -> Output {
    let t = Instant::now();
    let out = Command::new(EXE)
        .args(["vm", "--quiet", "--timeout", "300", "--results"])
        .arg(results)
        .args(vm_args)
        .arg("--")
        .args(cmd)
        .output()
        .expect("running numalab");
    eprintln!(
        "numalab vm {vm_args:?} -- {cmd:?}: {:.1} s",
        t.elapsed().as_secs_f64()
    );
    out
}

fn metric(r: &Value, name: &str) -> f64 {
    r["metrics"][name]["value"]
        .as_f64()
        .unwrap_or_else(|| panic!("no metric {name} in {}", r["metrics"]))
}

/// The guest's `topology --json` must be the spec: node ids, CPUs per
/// node, memory-only nodes, distances; each node's memory at most what
/// was given and most of it (the kernel keeps some for itself).
fn check_topology(json: &Value, cpus: &[Vec<u64>], dist: &[Vec<u64>], mem_mib: u64) {
    let nodes = json["nodes"].as_array().expect("nodes");
    assert_eq!(nodes.len(), cpus.len(), "{json}");
    for (i, n) in nodes.iter().enumerate() {
        assert_eq!(n["id"], i as u64, "{json}");
        let got: Vec<u64> = n["cpus"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_u64().unwrap())
            .collect();
        assert_eq!(got, cpus[i], "CPUs of node {i}: {json}");
        let mem = n["memory_bytes"].as_u64().unwrap();
        assert!(
            mem <= mem_mib << 20 && mem >= (mem_mib << 20) * 6 / 10,
            "node {i} has {mem} bytes for {mem_mib} MiB given"
        );
    }
    let got: Vec<Vec<u64>> = json["distances"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r.as_array()
                .unwrap()
                .iter()
                .map(|d| d.as_u64().unwrap())
                .collect()
        })
        .collect();
    assert_eq!(got, dist, "distances: {json}");
}

#[test]
fn guest_sees_a_two_node_topology() {
    if !guests_enabled("guest_sees_a_two_node_topology") {
        return;
    }
    let _g = lock();
    let d = tempfile::tempdir().unwrap();
    let out = vm(
        d.path(),
        &[
            "--nodes",
            "2",
            "--cpus-per-node",
            "2",
            "--mem-per-node",
            "512M",
            "--distances",
            "10,20;20,10",
        ],
        &["topology", "--json"],
    );
    assert!(out.status.success(), "{}", text(&out));
    // Standard output is the command's alone: no kernel messages.
    let json: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
    check_topology(
        &json,
        &[vec![0, 1], vec![2, 3]],
        &[vec![10, 20], vec![20, 10]],
        512,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("accelerator") || stderr.contains("guest, kernel"),
        "{stderr}"
    );
}

/// A three-node guest with a memory-only node and asymmetric distances
/// sees exactly that. The same run (not `--quiet`, so it says what it
/// does) shows the working directories: one left by a numalab killed
/// with SIGKILL is removed by the next `numalab vm`; one of a live
/// process is not; --keep-workdir keeps this run's and says where.
#[test]
fn guest_sees_a_three_node_asymmetric_topology_with_a_memory_only_node() {
    if !guests_enabled("guest_sees_a_three_node_asymmetric_topology") {
        return;
    }
    let _g = lock();
    // A pid that is certainly gone: a child that has been reaped.
    let mut c = Command::new("true").spawn().unwrap();
    let dead = c.id();
    c.wait().unwrap();
    let tmp = std::env::temp_dir();
    let stale = tmp.join(format!("numalab-vm-{dead}-test"));
    std::fs::create_dir_all(stale.join("inner")).unwrap();
    std::fs::write(stale.join("inner/initramfs.cpio"), b"x").unwrap();
    let live = tmp.join(format!("numalab-vm-{}-test", std::process::id()));
    std::fs::create_dir_all(&live).unwrap();
    let d = tempfile::tempdir().unwrap();
    let out = Command::new(EXE)
        .args(["vm", "--keep-workdir", "--timeout", "300", "--results"])
        .arg(d.path())
        .args([
            "--nodes",
            "3",
            "--cpus-per-node",
            "1",
            "--mem-per-node",
            "256M",
            "--memory-only-nodes",
            "2",
            "--distances",
            "10,16,32;16,10,24;32,24,10",
        ])
        .args(["--", "topology", "--json"])
        .output()
        .unwrap();
    let live_kept = live.exists();
    let _ = std::fs::remove_dir_all(&live);
    assert!(out.status.success(), "{}", text(&out));
    let json: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
    check_topology(
        &json,
        &[vec![0], vec![1], vec![]],
        &[vec![10, 16, 32], vec![16, 10, 24], vec![32, 24, 10]],
        256,
    );
    assert!(
        live_kept,
        "the working directory of a live process was removed"
    );
    assert!(!stale.exists(), "{} is still there", stale.display());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("removed {}", stale.display())),
        "{err}"
    );
    let kept = err
        .lines()
        .find_map(|l| l.strip_prefix("numalab vm: keeping the working directory "))
        .and_then(|l| l.split(' ').next())
        .unwrap_or_else(|| panic!("no kept directory named: {err}"))
        .to_string();
    assert!(Path::new(&kept).join("initramfs.cpio").is_file(), "{kept}");
    std::fs::remove_dir_all(&kept).unwrap();
}

#[test]
fn a_benchmark_record_comes_back_whole_with_the_guests_metadata() {
    if !guests_enabled("a_benchmark_record_comes_back_whole") {
        return;
    }
    let _g = lock();
    let d = tempfile::tempdir().unwrap();
    let after = d.path().join("from-after-dashdash");
    // --results after -- decides where records land on the host.
    let out = Command::new(EXE)
        .args([
            "vm",
            "--quiet",
            "--timeout",
            "300",
            "--nodes",
            "2",
            "--mem-per-node",
            "256M",
        ])
        .args([
            "--sysctl",
            "kernel.numa_balancing=1",
            "--",
            "run",
            "numa_test",
        ])
        .args([
            "--tasks",
            "2",
            "--size",
            "20000",
            "--disturb",
            "none",
            "--interval",
            "0.5",
        ])
        .arg("--results")
        .arg(&after)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let recs = records(&after);
    assert_eq!(recs.len(), 1, "{}", text(&out));
    let (path, r) = &recs[0];
    // Whole: it loads through the strict reader, and it is the record
    // the guest announced (same id).
    let loaded = numalab_record::load(path);
    assert!(loaded.is_ok(), "{loaded:?}");
    assert!(r["id"]
        .as_str()
        .is_some_and(|id| path.ends_with(format!("{id}.json"))));
    assert_eq!(r["benchmark"], "numa_test");
    assert_eq!(r["outcome"]["status"], "ok");
    assert_eq!(r["tasks"].as_array().unwrap().len(), 2);
    // The guest's metadata: its kernel, its topology, its sysctls.
    let b = &r["backend"];
    assert_eq!(b["kind"], "guest", "{b}");
    assert!(b["accel"] == "tcg" || b["accel"] == "kvm", "{b}");
    assert_eq!(b["spec"], "--nodes 2 --cpus-per-node 1 --mem-per-node 256M");
    assert_eq!(b["sysctls"]["kernel.numa_balancing"], "1");
    let host_kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    assert_eq!(b["host_kernel"], host_kernel.trim());
    let m = &r["machine"];
    assert_eq!(m["hostname"], "numalab-vm");
    assert_eq!(m["numa_balancing"], "1");
    let boot_kernels: Vec<String> = std::fs::read_dir("/boot")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_string_lossy()
                .strip_prefix("vmlinuz-")
                .map(str::to_string)
        })
        .collect();
    assert!(
        boot_kernels.iter().any(|k| m["kernel"] == k.as_str()),
        "{} vs {boot_kernels:?}",
        m["kernel"]
    );
    assert_eq!(m["topology"]["nodes"].as_array().unwrap().len(), 2);
    assert!(r["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w.as_str().unwrap().contains("no remote-access cost")));
    // --quiet: the console went to a log beside the records.
    assert!(after.join("vm-logs").is_dir());
    let leftovers: Vec<_> = std::fs::read_dir(&after)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty());
}

fn migrate_probe(balancing: &str, args: &[&str]) -> Value {
    let d = tempfile::tempdir().unwrap();
    let sysctl = format!("kernel.numa_balancing={balancing}");
    let mut cmd = vec!["guest-probe", "migrate", "--mib", "64"];
    cmd.extend_from_slice(args);
    let out = vm(
        d.path(),
        &[
            "--nodes",
            "2",
            "--cpus-per-node",
            "1",
            "--mem-per-node",
            "384M",
            "--sysctl",
            &sysctl,
        ],
        &cmd,
    );
    assert!(out.status.success(), "{}", text(&out));
    eprintln!("{}", String::from_utf8_lossy(&out.stdout));
    let recs = records(d.path());
    assert_eq!(recs.len(), 1, "{}", text(&out));
    let r = recs[0].1.clone();
    assert_eq!(r["backend"]["sysctls"]["kernel.numa_balancing"], balancing);
    assert_eq!(r["machine"]["numa_balancing"], balancing);
    assert_eq!(r["outcome"]["status"], "ok", "{}", r["outcome"]);
    // It did work: every page first touched on node 0, passes made.
    let pages = metric(&r, "pages");
    assert_eq!(pages, 16384.0);
    assert_eq!(metric(&r, "pages_on_from_start"), pages);
    assert!(metric(&r, "passes") >= 1.0);
    r
}

#[test]
fn with_numa_balancing_pages_follow_the_thread_to_node_1() {
    if !guests_enabled("with_numa_balancing_pages_follow_the_thread") {
        return;
    }
    let _g = lock();
    let r = migrate_probe("1", &["--seconds", "60", "--until", "0.9"]);
    let pages = metric(&r, "pages");
    assert!(
        metric(&r, "numa_pages_migrated") >= pages / 2.0,
        "numa_pages_migrated {} for {pages} pages",
        metric(&r, "numa_pages_migrated")
    );
    assert!(
        metric(&r, "pages_on_to_end") > pages / 2.0,
        "only {} of {pages} pages ended on node 1",
        metric(&r, "pages_on_to_end")
    );
    assert!(metric(&r, "numa_hint_faults") > 0.0);
}

#[test]
fn without_numa_balancing_nothing_migrates() {
    if !guests_enabled("without_numa_balancing_nothing_migrates") {
        return;
    }
    let _g = lock();
    let r = migrate_probe("0", &["--seconds", "4"]);
    let pages = metric(&r, "pages");
    assert_eq!(metric(&r, "numa_pages_migrated"), 0.0);
    assert_eq!(metric(&r, "numa_hint_faults"), 0.0);
    assert_eq!(metric(&r, "pages_on_from_end"), pages);
    assert!(metric(&r, "worked_s") >= 4.0);
}

#[test]
fn timeout_stops_the_guest_and_reports_it() {
    if !guests_enabled("timeout_stops_the_guest") {
        return;
    }
    let _g = lock();
    let d = tempfile::tempdir().unwrap();
    let child = Command::new(EXE)
        .args(["vm", "--timeout", "8", "--results"])
        .arg(d.path())
        .args(["--", "guest-probe", "migrate", "--seconds", "600"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last = stderr.lines().last().unwrap_or("");
    assert!(
        last.starts_with("numalab: error: timed out after 8 s"),
        "{}",
        text(&out)
    );
    assert!(
        stderr.contains("lines of the guest console"),
        "{}",
        text(&out)
    );
    assert!(qemus_of(pid).is_empty(), "QEMU outlived numalab");
}

#[test]
fn ctrl_c_and_sigkill_leave_no_qemu_behind() {
    if !guests_enabled("ctrl_c_and_sigkill_leave_no_qemu_behind") {
        return;
    }
    let _g = lock();
    for name in ["SIGINT", "SIGKILL"] {
        let d = tempfile::tempdir().unwrap();
        let mut child = Command::new(EXE)
            .args(["vm", "--quiet", "--results"])
            .arg(d.path())
            .args(["--", "guest-probe", "migrate", "--seconds", "600"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        assert!(
            wait_until(Duration::from_secs(30), || !qemus_of(pid).is_empty()),
            "{name}: no QEMU started"
        );
        std::thread::sleep(Duration::from_secs(2));
        let sig = name.trim_start_matches("SIG");
        let r = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(pid.to_string())
            .status()
            .unwrap();
        assert!(r.success());
        let status = child.wait().unwrap();
        if name == "SIGINT" {
            assert_eq!(status.code(), Some(130), "{name}");
            // Reaped before numalab exited.
            assert!(qemus_of(pid).is_empty(), "{name}: QEMU outlived numalab");
        } else {
            // SIGKILL gives numalab no chance: PR_SET_PDEATHSIG does it.
            assert!(
                wait_until(Duration::from_secs(10), || qemus_of(pid).is_empty()),
                "{name}: QEMU outlived numalab"
            );
        }
    }
}

#[test]
fn a_guest_kernel_panic_ends_the_run_with_the_console_tail() {
    if !guests_enabled("a_guest_kernel_panic_ends_the_run") {
        return;
    }
    let _g = lock();
    let d = tempfile::tempdir().unwrap();
    let out = vm(
        d.path(),
        &[
            "--nodes",
            "2",
            "--mem-per-node",
            "256M",
            "--sysctl",
            "vm.panic_on_oom=2",
            "--sysctl",
            "vm.overcommit_memory=1",
        ],
        &["guest-probe", "migrate", "--mib", "2000"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("numalab: error: the guest kernel panicked: Kernel panic"),
        "{stderr}"
    );
    assert!(stderr.contains("  | "), "no console tail: {stderr}");
    assert!(stderr.contains("console log:"), "{stderr}");
}

/// The guest is a runner backend: each record is on the host as soon as
/// its run ends, so Ctrl-C after the second of three runs keeps two, the
/// last line names the run cut short, and no QEMU is left.
#[test]
fn interrupting_a_guest_campaign_keeps_every_finished_run() {
    if !guests_enabled("interrupting_a_guest_campaign") {
        return;
    }
    let _g = lock();
    let d = tempfile::tempdir().unwrap();
    let res = d.path().join("out");
    let child = Command::new(EXE)
        .args(["vm", "--quiet", "--nodes", "2", "--mem-per-node", "384M"])
        .args(["--results"])
        .arg(&res)
        .args(["--", "run", "twohalves", "--runs", "3", "--duration", "4"])
        .args(["--bytes", "32M", "--threads", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    assert!(
        wait_until(Duration::from_secs(240), || common::count_json(&res) >= 2),
        "two runs did not finish"
    );
    std::thread::sleep(Duration::from_millis(500));
    let r = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(r.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    assert!(qemus_of(pid).is_empty(), "QEMU outlived numalab");
    let recs = records(&res);
    assert_eq!(recs.len(), 2, "{}", text(&out));
    for (_, r) in &recs {
        assert_eq!(r["backend"]["kind"], "guest");
        assert_eq!(r["outcome"]["status"], "ok");
        assert_eq!(r["machine"]["hostname"], "numalab-vm");
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("interrupted during [3/3] twohalves #3")
            && stderr.contains("2 finished run(s) kept"),
        "{}",
        text(&out)
    );
    // One line per run, the warning about emulated timing once.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.matches("twohalves #").count(), 2, "{stdout}");
    assert_eq!(
        stdout.matches("warning: run in a TCG").count(),
        1,
        "{stdout}"
    );
    for l in stdout.lines() {
        assert!(l.chars().count() <= 80, "wider than 80 columns: {l:?}");
    }
}

/// A configuration's settings are applied inside the guest, recorded,
/// and never touch the host; host and guest runs of one case compare in
/// one table.
#[test]
fn guest_settings_apply_in_the_guest_and_runs_compare_with_the_hosts() {
    if !guests_enabled("guest_settings_apply_in_the_guest") {
        return;
    }
    let _g = lock();
    let _s = common::host_sysctl_lock();
    let d = tempfile::tempdir().unwrap();
    let res = d.path().join("out");
    let host_before = std::fs::read_to_string("/proc/sys/kernel/numa_balancing").ok();
    let bench = [
        "numa02",
        "--threads",
        "2",
        "--bytes",
        "16M",
        "--loops",
        "2",
        "--runs",
        "2",
    ];
    let out = Command::new(EXE)
        .args(["vm", "--quiet", "--nodes", "2", "--mem-per-node", "384M"])
        .args(["--", "run"])
        .args(bench)
        .args(["--label", "guest", "--sysctl", "kernel.numa_balancing=0"])
        .arg("--results")
        .arg(&res)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string("/proc/sys/kernel/numa_balancing").ok(),
        host_before,
        "the host's sysctl changed"
    );
    let recs = records(&res);
    assert_eq!(recs.len(), 2, "{}", text(&out));
    for (_, r) in &recs {
        assert_eq!(
            r["applied"]["settings"]["kernel.numa_balancing"], "0",
            "{r}"
        );
        assert_eq!(r["machine"]["numa_balancing"], "0");
        assert_eq!(r["backend"]["kind"], "guest");
        // Sizing notes and case details reach guest records too.
        assert!(
            r["backend"]["details"]["sizing"].is_array(),
            "{}",
            r["backend"]
        );
    }
    let host = Command::new(EXE)
        .arg("run")
        .args(bench)
        .args(["--label", "host", "--interval", "0", "--results"])
        .arg(&res)
        .output()
        .unwrap();
    assert!(host.status.success(), "{}", text(&host));
    let cmp = Command::new(EXE)
        .args(["compare", "--baseline", "host", "--format", "csv"])
        .arg(&res)
        .output()
        .unwrap();
    assert!(cmp.status.success(), "{}", text(&cmp));
    let csv = String::from_utf8_lossy(&cmp.stdout);
    let elapsed: Vec<&str> = csv
        .lines()
        .filter(|l| l.starts_with("group,") && l.contains(",elapsed_s,"))
        .collect();
    assert_eq!(elapsed.len(), 2, "one case, both labels:\n{csv}");
    assert!(elapsed.iter().any(|l| l.contains(",guest,")), "{csv}");
}

/// `--kernel debian-7.3`: Debian's 7.3 from trixie-backports, fetched
/// once into the cache (scripts/test.sh does it, and sets
/// `NUMALAB_REQUIRE_KERNELS=1` so that a missing kernel fails this test
/// instead of skipping it), boots with its own modules, and the record
/// and the summary say which kernel and what of sched_ext.
#[test]
fn a_debian_7_3_guest_has_sched_ext_and_its_record_says_so() {
    if !guests_enabled("a_debian_7_3_guest_has_sched_ext") {
        return;
    }
    if !common::debian_7_3_cached("a_debian_7_3_guest_has_sched_ext") {
        return;
    }
    let _g = lock();
    let d = tempfile::tempdir().unwrap();
    let out = vm(
        d.path(),
        &[
            "--kernel",
            "debian-7.3",
            "--nodes",
            "2",
            "--cpus-per-node",
            "1",
        ],
        &[
            "run",
            "command",
            "--runs",
            "1",
            "--",
            "cat",
            "/sys/kernel/sched_ext/state",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let said = stderr.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        said.contains("guest, kernel 7.3.") && said.contains("+deb13-amd64 (sched_ext disabled)"),
        "{stderr}"
    );
    let recs = records(d.path());
    assert_eq!(recs.len(), 1, "{}", text(&out));
    let r = &recs[0].1;
    let kernel = r["machine"]["kernel"].as_str().unwrap();
    assert!(
        kernel.starts_with("7.3.") && kernel.ends_with("+deb13-amd64"),
        "{kernel}"
    );
    assert_eq!(
        r["machine"]["tuning"]["sched_ext"], "disabled",
        "{}",
        r["machine"]["tuning"]
    );
    assert_eq!(r["backend"]["kind"], "guest");
    assert_eq!(
        r["machine"]["topology"]["nodes"].as_array().unwrap().len(),
        2
    );
    // What the command read in the guest.
    let log = recs[0].0.with_extension("log");
    let log = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(log.contains("disabled"), "{log}");
}

#[test]
fn an_unknown_kernel_name_is_one_line_listing_the_known_ones() {
    let d = tempfile::tempdir().unwrap();
    let o = Command::new(EXE)
        .args(["vm", "--kernel", "debian-9.9", "--", "topology"])
        .current_dir(d.path())
        .output()
        .unwrap();
    let e = one_line_error(&o);
    assert!(
        e.contains("--kernel debian-9.9: no such file, and not a kernel name numalab knows (known: debian-7.3)"),
        "{e}"
    );
    let o = Command::new(EXE)
        .args(["vm", "--kernel", "/boot/nope", "--fetch-only"])
        .output()
        .unwrap();
    let e = one_line_error(&o);
    assert!(e.contains("is a path, not a kernel name"), "{e}");
}

/// The fetch of a named kernel, end to end without the network: a
/// stand-in `apt-get` that "updates" by writing an index and
/// "downloads" by copying `.deb` files made here with dpkg-deb. A `.deb`
/// whose SHA256 is not the index's is refused in one line naming both and
/// leaves no cache entry; an `update` that leaves no verified InRelease
/// is refused; a good fetch makes a complete entry (marker, kernel,
/// modules.dep, the kernel's vmlinux.h) that the next run uses without
/// apt.
#[test]
fn a_named_kernel_fetch_checks_each_deb_and_leaves_nothing_half_made() {
    use std::fmt::Write as _;
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    let rel = "7.3.99+deb13-amd64";
    let version = "7.3.99-1~bpo13+1";
    let debs = d.path().join("debs");
    std::fs::create_dir(&debs).unwrap();
    let mut index = String::new();
    let config = "CONFIG_SCHED_CLASS_EXT=y\nCONFIG_DEBUG_INFO_BTF=y\nCONFIG_BPF_JIT=y\n\
                  CONFIG_NUMA_BALANCING=y\nCONFIG_VIRTIO_PCI=y\nCONFIG_NET_9P=m\n\
                  CONFIG_NET_9P_VIRTIO=m\nCONFIG_9P_FS=m\nCONFIG_OVERLAY_FS=m\n";
    let mut kernel = vec![0u8; 4096];
    kernel[0x202..0x206].copy_from_slice(b"HdrS");
    for part in ["base", "binary", "modules", "bpf-dev"] {
        // linux-bpf-dev has no release in its name.
        let pkg = match part {
            "bpf-dev" => "linux-bpf-dev".to_string(),
            _ => format!("linux-{part}-{rel}"),
        };
        let root = d.path().join(&pkg);
        let m = root.join("usr/lib/modules").join(rel);
        std::fs::create_dir_all(root.join("DEBIAN")).unwrap();
        std::fs::create_dir_all(&m).unwrap();
        std::fs::write(
            root.join("DEBIAN/control"),
            format!(
                "Package: {pkg}\nVersion: {version}\nArchitecture: amd64\n\
                 Maintainer: t <t@example.org>\nDescription: test\n"
            ),
        )
        .unwrap();
        match part {
            "base" => {
                std::fs::write(m.join("config"), config).unwrap();
                std::fs::write(m.join("modules.builtin"), "").unwrap();
            }
            "binary" => std::fs::write(m.join("vmlinuz"), &kernel).unwrap(),
            "bpf-dev" => {
                std::fs::remove_dir_all(root.join("usr/lib")).unwrap();
                let h = root.join("usr/include/x86_64-linux-gnu/linux/bpf");
                std::fs::create_dir_all(&h).unwrap();
                std::fs::write(h.join("vmlinux.h"), "struct task_struct;\n").unwrap();
            }
            _ => std::fs::write(m.join("modules.order"), "").unwrap(),
        }
        let deb = debs.join(format!("{pkg}_{version}_amd64.deb"));
        let o = Command::new("dpkg-deb")
            .args(["--root-owner-group", "-Zgzip", "--build"])
            .arg(&root)
            .arg(&deb)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o));
        let bytes = std::fs::read(&deb).unwrap();
        let sha = Command::new("sha256sum").arg(&deb).output().unwrap();
        let sha = String::from_utf8_lossy(&sha.stdout)
            .split_whitespace()
            .next()
            .unwrap()
            .to_string();
        write!(
            index,
            "Package: {pkg}\nVersion: {version}\nArchitecture: amd64\n\
             Filename: pool/main/l/linux/{pkg}_{version}_amd64.deb\nSize: {}\nSHA256: {sha}\n\n",
            bytes.len()
        )
        .unwrap();
    }
    // The stand-in apt-get: logs its calls; `update` writes the index
    // (and an InRelease unless NO_INRELEASE), `download` copies the debs.
    let bin = d.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let packages = d.path().join("Packages");
    let calls = d.path().join("calls");
    let fake = bin.join("apt-get");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\necho \"$*\" >> {calls}\nlists=\nfor a in \"$@\"; do case \"$a\" in Dir::State::Lists=*) lists=${{a#*=}};; esac; done\n\
             case \"$*\" in\n\
             *' update') [ -z \"$SLOW\" ] || sleep 1\n\
               [ -n \"$NO_INRELEASE\" ] || echo signed > \"$lists/x_dists_trixie-backports_InRelease\"\n\
               cp {packages} \"$lists/x_dists_trixie-backports_main_binary-amd64_Packages\";;\n\
             *' download '*) cp {debs}/*.deb .;;\n\
             esac\n",
            calls = calls.display(),
            packages = packages.display(),
            debs = debs.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let cache = d.path().join("cache");
    let fetch = |extra: &[(&str, &str)]| {
        let mut c = Command::new(EXE);
        c.args(["vm", "--kernel", "debian-7.3", "--fetch-only"])
            .env(
                "PATH",
                format!("{}:/usr/sbin:/usr/bin:/sbin:/bin", bin.display()),
            )
            .env("XDG_CACHE_HOME", &cache);
        for (k, v) in extra {
            c.env(k, v);
        }
        c.output().unwrap()
    };
    let kernels = cache.join("numalab/kernels");
    let entries = || -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(&kernels)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().to_string())
            .filter(|n| n != "apt" && n != ".lock")
            .collect();
        v.sort();
        v
    };

    // A .deb that is not what the index says.
    let bad = {
        // The first package's SHA256 with its first digit changed.
        let at = index.find("SHA256: ").unwrap() + 8;
        let mut b = index.clone();
        let c = if &index[at..at + 1] == "0" { "1" } else { "0" };
        b.replace_range(at..at + 1, c);
        b
    };
    std::fs::write(&packages, &bad).unwrap();
    let o = fetch(&[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let last = String::from_utf8_lossy(&o.stderr)
        .lines()
        .last()
        .unwrap()
        .to_string();
    assert!(
        last.starts_with("numalab: error: --kernel debian-7.3: ")
            && last.contains(&format!("linux-base-{rel}_{version}_amd64.deb: SHA256 "))
            && last.contains("x_dists_trixie-backports_main_binary-amd64_Packages says ")
            && last.contains(&format!("for linux-base-{rel} {version}")),
        "{last}"
    );
    assert!(entries().is_empty(), "{:?}", entries());

    // No verified InRelease: refused before any download.
    std::fs::write(&packages, &index).unwrap();
    for f in std::fs::read_dir(kernels.join("apt/lists"))
        .unwrap()
        .flatten()
    {
        if f.path().is_file() {
            std::fs::remove_file(f.path()).unwrap();
        }
    }
    let o = fetch(&[("NO_INRELEASE", "1")]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("apt left no verified InRelease"),
        "{}",
        text(&o)
    );
    assert!(entries().is_empty(), "{:?}", entries());

    // A good fetch: a complete entry; the next run needs no apt.
    let o = fetch(&[]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(entries(), [rel]);
    let e = kernels.join(rel);
    assert!(e.join("numalab-kernel.json").is_file());
    assert!(e.join(format!("vmlinuz-{rel}")).is_file());
    assert_eq!(
        std::fs::read_to_string(e.join(format!("vmlinux-{rel}.h"))).unwrap(),
        "struct task_struct;\n"
    );
    assert!(!e.join("usr/include").exists());
    assert!(e
        .join("usr/lib/modules")
        .join(rel)
        .join("modules.dep")
        .is_file());
    let said = String::from_utf8_lossy(&o.stderr)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(said.contains("its config has sched_ext"), "{said}");
    let n = std::fs::read_to_string(&calls).unwrap().lines().count();
    let o = fetch(&[]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(std::fs::read_to_string(&calls).unwrap().lines().count(), n);
    // Two at once: one fetches, the other waits for it and uses its
    // entry; apt runs once (an update and a download).
    std::fs::remove_dir_all(&e).unwrap();
    let start = |_| {
        Command::new(EXE)
            .args(["vm", "--kernel", "debian-7.3", "--fetch-only"])
            .env(
                "PATH",
                format!("{}:/usr/sbin:/usr/bin:/sbin:/bin", bin.display()),
            )
            .env("XDG_CACHE_HOME", &cache)
            .env("SLOW", "1")
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let both: Vec<_> = (0..2).map(start).collect();
    let outs: Vec<Output> = both
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    assert!(
        outs.iter().all(|o| o.status.success()),
        "{}",
        text(&outs[0])
    );
    let waited = outs
        .iter()
        .filter(|o| String::from_utf8_lossy(&o.stderr).contains("waiting for another numalab"))
        .count();
    assert_eq!(waited, 1, "{}\n{}", text(&outs[0]), text(&outs[1]));
    assert_eq!(entries(), [rel]);
    assert_eq!(
        std::fs::read_to_string(&calls).unwrap().lines().count(),
        n + 2
    );
    // Every apt call had verification forced on.
    for l in std::fs::read_to_string(&calls).unwrap().lines() {
        assert!(
            l.contains("Acquire::AllowInsecureRepositories=false")
                && l.contains("APT::Get::AllowUnauthenticated=false"),
            "{l}"
        );
    }
}

// ---- No guest needed: argument and environment errors. ----

fn numalab(args: &[&str]) -> Output {
    Command::new(EXE).args(args).output().unwrap()
}

fn one_line_error(o: &Output) -> String {
    assert!(!o.status.success(), "{}", text(o));
    let e = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(e.lines().count(), 1, "not one line: {e}");
    assert!(e.starts_with("numalab: error: "), "{e}");
    e
}

#[test]
fn bad_specs_give_one_line_errors() {
    let e = one_line_error(&numalab(&["vm", "--nodes", "0", "--", "topology"]));
    assert!(e.contains("--nodes: must be at least 1"), "{e}");
    let e = one_line_error(&numalab(&[
        "vm",
        "--nodes",
        "2",
        "--distances",
        "10,20;30,10",
        "--",
        "topology",
    ]));
    assert!(
        e.contains(
            "--distances: row 2 (30,10) makes the matrix asymmetric: d(1,0)=30 but d(0,1)=20"
        ),
        "{e}"
    );
    let e = one_line_error(&numalab(&["vm", "--mem-per-node", "0", "--", "topology"]));
    assert!(e.contains("--mem-per-node"), "{e}");
    let e = one_line_error(&numalab(&["vm", "--mem-per-node", "0M", "--", "topology"]));
    assert!(e.contains("--mem-per-node: must be positive"), "{e}");
    let e = one_line_error(&numalab(&[
        "vm",
        "--nodes",
        "2",
        "--memory-only-nodes",
        "0-1",
        "--",
        "topology",
    ]));
    assert!(e.contains("at least one node needs CPUs"), "{e}");
    let e = one_line_error(&numalab(&["vm", "--sysctl", "nonsense", "--", "topology"]));
    assert!(e.contains("KEY=VALUE"), "{e}");
    let e = one_line_error(&numalab(&["vm", "--", "vm", "--", "topology"]));
    assert!(e.contains("cannot run inside the guest"), "{e}");
    let e = one_line_error(&numalab(&["vm"]));
    assert!(e.contains("required"), "{e}");
    for cmd in [&["topology"][..], &["run", "spin"][..]] {
        let mut a = vec!["vm", "--shell", "--"];
        a.extend_from_slice(cmd);
        let e = one_line_error(&numalab(&a));
        assert!(e.contains("--shell runs an interactive shell"), "{e}");
    }
}

#[test]
fn missing_qemu_and_kernel_name_the_package() {
    let d = tempfile::tempdir().unwrap();
    let o = Command::new(EXE)
        .args(["vm", "--", "topology"])
        .env("PATH", d.path())
        .output()
        .unwrap();
    let e = one_line_error(&o);
    assert!(e.contains("install the qemu-system-x86 package"), "{e}");

    // The default kernel search is unit-tested on an empty /boot; here an
    // explicit one that is not there (QEMU must exist to get this far).
    if std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .any(|p| p.join("qemu-system-x86_64").is_file())
    {
        let e = one_line_error(&numalab(&[
            "vm",
            "--kernel",
            "/nonexistent/vmlinuz",
            "--",
            "topology",
        ]));
        assert!(e.contains("--kernel /nonexistent/vmlinuz"), "{e}");
    }
}

#[test]
fn guest_commands_are_hidden_and_guest_init_refuses_to_run_on_a_host() {
    let help = numalab(&["--help"]);
    let h = String::from_utf8_lossy(&help.stdout);
    assert!(h.contains("vm"), "{h}");
    assert!(
        !h.contains("guest-init") && !h.contains("guest-probe"),
        "{h}"
    );
    // On a host, PID 1 it is not: it must refuse, not power anything off.
    let e = one_line_error(&numalab(&["guest-init"]));
    assert!(e.contains("runs nowhere else"), "{e}");
}

/// Run `numalab vm [--quiet] -- topology` with a stand-in for QEMU whose
/// shell script body is `body` and a kernel image that passes numalab's
/// header check, the silence limit at 2 s: the boot watchdog and the
/// teardown, testable without QEMU. Returns numalab's output, the PIDs
/// the stand-in ran as (each checked to be gone) and the console log
/// (kept under the results directory, with `--quiet` or not: the guest
/// failed).
fn with_a_stalling_qemu(quiet: bool, body: &str) -> (std::process::Output, Vec<u32>, String) {
    let d = tempfile::tempdir().unwrap();
    let bin = d.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let pids = d.path().join("pids");
    let fake = bin.join("qemu-system-x86_64");
    std::fs::write(
        &fake,
        format!("#!/bin/sh\necho $$ >> {}\n{body}\n", pids.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let kernel = d.path().join("vmlinuz-fake");
    let mut img = vec![0u8; 4096];
    img[0x202..0x206].copy_from_slice(b"HdrS");
    std::fs::write(&kernel, img).unwrap();
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let results = d.path().join("results");
    let t = Instant::now();
    let out = Command::new(EXE)
        .arg("vm")
        .args(quiet.then_some("--quiet"))
        .args(["--accel", "tcg", "--kernel"])
        .arg(&kernel)
        .arg("--results")
        .arg(&results)
        .args(["--", "topology"])
        .env("PATH", path)
        .env("NUMALAB_VM_SILENCE_S", "2")
        .output()
        .unwrap();
    assert!(
        t.elapsed() < Duration::from_secs(60),
        "took {:?}",
        t.elapsed()
    );
    let started: Vec<u32> = std::fs::read_to_string(&pids)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    for &p in &started {
        let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
        let alive = stat
            .rsplit_once(')')
            .is_some_and(|(_, r)| !r.trim_start().starts_with('Z'));
        assert!(!alive, "fake QEMU {p} outlived numalab: {stat}");
    }
    let logs: Vec<_> = std::fs::read_dir(results.join("vm-logs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(logs.len(), 1, "one console log for every boot: {logs:?}");
    let log = std::fs::read_to_string(&logs[0]).unwrap();
    (out, started, log)
}

#[test]
fn a_silent_guest_is_stopped_booted_again_then_given_up_on() {
    let (out, started, _) = with_a_stalling_qemu(true, "exec sleep 600");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    // Status lines wrap at 80 columns.
    let said = stderr.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(said.contains("booting again (attempt 2 of 2)"), "{stderr}");
    assert!(
        stderr.lines().last().unwrap().starts_with(
            "numalab: error: the TCG guest printed nothing for 2 s, 2 times, and was stopped"
        ),
        "{stderr}"
    );
    assert_eq!(started.len(), 2, "{started:?}");
}

/// A kernel that prints its first lines and then hangs before init (as a
/// TCG guest on a loaded host did once in CI) is booted again too, and the
/// console log keeps both boots.
#[test]
fn a_guest_whose_boot_stalls_after_its_first_lines_is_booted_again() {
    let (out, started, log) = with_a_stalling_qemu(
        true,
        "echo '[    0.000000] Linux version 6.1.0-fake'\n\
         echo '[    0.000000] printk: bootconsole [uart8250] enabled'\n\
         exec sleep 600",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let said = stderr.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(said.contains("the guest's boot stalled"), "{stderr}");
    assert!(
        said.contains("| [ 0.000000] printk: bootconsole [uart8250] enabled"),
        "{stderr}"
    );
    assert!(said.contains("booting again (attempt 2 of 2)"), "{stderr}");
    assert!(
        said.contains(
            "numalab: error: the TCG guest stalled while booting (nothing on its console for 2 s), 2 times, and was stopped"
        ),
        "{stderr}"
    );
    assert_eq!(started.len(), 2, "{started:?}");
    assert_eq!(log.matches("Linux version 6.1.0-fake").count(), 2, "{log}");
}

/// Without --quiet or --verbose the console is not printed, but a guest
/// that fails prints its last lines, cut to fit 80 columns, and keeps
/// the whole log beside the records, naming it; status lines fit 80
/// columns too (the error line is one line, as every error is).
#[test]
fn a_failed_guest_keeps_its_console_log_and_says_where_within_80_columns() {
    let long = format!(
        "[    0.000000] Linux version 6.1.0-fake {}",
        "x".repeat(150)
    );
    let (out, started, log) = with_a_stalling_qemu(
        false,
        &format!("echo '{long}'\necho '[    0.000001] second line'\nexec sleep 600"),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(started.len(), 2, "{started:?}");
    for l in stderr
        .lines()
        .filter(|l| !l.starts_with("numalab: error: "))
    {
        assert!(
            l.chars().count() <= 80,
            "{} columns: {l}",
            l.chars().count()
        );
    }
    // The whole console of both boots is in the log, the long line whole.
    assert_eq!(log.matches(&long).count(), 2, "{log}");
    let said = stderr.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(said.contains("| [ 0.000001] second line"), "{stderr}");
    let at = said
        .find("full console log: ")
        .unwrap_or_else(|| panic!("no log named: {stderr}"));
    let path = said[at + "full console log: ".len()..]
        .split_whitespace()
        .next()
        .unwrap();
    // (The directory is gone by now: with_a_stalling_qemu read the log.)
    assert!(
        path.contains("/results/vm-logs/") && path.ends_with(".console.log"),
        "{path}"
    );
}

/// A kernel that oopses before init (as Debian's 7.3.4 did once in four
/// TCG boots: `Oops: int3` in `sched_clock_cpu`, "Fatal exception in
/// interrupt") is booted once more, saying so; a second death is the
/// error, and the console log keeps both boots.
#[test]
fn a_kernel_that_dies_before_init_is_booted_once_more() {
    let (out, started, log) = with_a_stalling_qemu(
        false,
        "echo '[    0.000000] Linux version 7.3.4+deb13-amd64-fake'\n\
         echo '[    0.412345] Oops: int3: 0000 [#1] SMP NOPTI'\n\
         echo '[    0.412346] RIP: 0010:sched_clock_cpu+0x1/0x10'\n\
         echo '[    0.412400] Kernel panic - not syncing: Fatal exception in interrupt'\n\
         exit 0",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let said = stderr.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        said.contains(
            "numalab vm: the guest kernel died before its init started (Oops: int3: 0000 [#1] SMP NOPTI; Kernel panic - not syncing: Fatal exception in interrupt); booting again (attempt 2 of 2)"
        ),
        "{stderr}"
    );
    assert_eq!(said.matches("booting again").count(), 1, "{stderr}");
    assert!(
        said.contains(
            "numalab: error: the guest kernel panicked: Kernel panic - not syncing: Fatal exception in interrupt"
        ),
        "{stderr}"
    );
    assert_eq!(started.len(), 2, "{started:?}");
    assert_eq!(log.matches("Oops: int3").count(), 2, "{log}");
}

// ---- The host's filesystem in the guest. ----

/// A C project of ten files and a Makefile in `dir`.
fn c_project(dir: &Path) {
    let mut objs = Vec::new();
    let mut main = String::from("#include <stdio.h>\n");
    for i in 0..9 {
        std::fs::write(
            dir.join(format!("f{i}.c")),
            format!("int f{i}(int x) {{ int s = 0; for (int j = 0; j < x; j++) s += j * {i}; return s; }}\n"),
        )
        .unwrap();
        main.push_str(&format!("int f{i}(int);\n"));
        objs.push(format!("f{i}.o"));
    }
    main.push_str("int main(void) { int s = 0;\n");
    for i in 0..9 {
        main.push_str(&format!("  s += f{i}(10);\n"));
    }
    main.push_str("  printf(\"sum %d\\n\", s); return 0; }\n");
    std::fs::write(dir.join("main.c"), main).unwrap();
    objs.push("main.o".into());
    std::fs::write(
        dir.join("Makefile"),
        format!(
            "prog: {objs}\n\t$(CC) -o $@ $^\n%.o: %.c\n\t$(CC) -O1 -c -o $@ $<\nclean:\n\trm -f prog *.o\n",
            objs = objs.join(" ")
        ),
    )
    .unwrap();
}

/// `run command --runs 3 --prepare 'make clean' -- make -j2` in a 2-node
/// guest builds a project from a shared host directory: three records and
/// their logs on the host, the program built where the host sees it.
#[test]
fn a_shared_c_project_builds_in_the_guest_three_times() {
    if !guests_enabled("a_shared_c_project_builds_in_the_guest") {
        return;
    }
    let _g = lock();
    let d = tempfile::tempdir().unwrap();
    let proj = d.path().join("proj");
    std::fs::create_dir(&proj).unwrap();
    c_project(&proj);
    let res = d.path().join("out");
    let out = Command::new(EXE)
        .current_dir(&proj)
        .args(["vm", "--quiet", "--timeout", "600", "--nodes", "2"])
        .args(["--mem-per-node", "384M", "--share-passthrough", "--share"])
        .arg(&proj)
        .arg("--results")
        .arg(&res)
        .args(["--", "run", "command", "--runs", "3", "--prepare"])
        .args(["make clean", "--", "make", "-j2"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let recs = records(&res);
    assert_eq!(recs.len(), 3, "{}", text(&out));
    for (p, r) in &recs {
        assert_eq!(r["backend"]["kind"], "guest", "{r}");
        assert_eq!(r["outcome"]["status"], "ok", "{r}");
        assert_eq!(r["machine"]["hostname"], "numalab-vm");
        let log = std::fs::read_to_string(p.with_extension("log"))
            .unwrap_or_else(|e| panic!("no log beside {}: {e}", p.display()));
        assert!(log.contains("-o prog"), "{log}");
        assert!(log.contains("main.c"), "{log}");
    }
    // Built in the guest, on the host's disk.
    let run = Command::new(proj.join("prog")).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&run.stdout), "sum 1620\n");
}

/// The guest's root is the host's: its programs run, numalab is on PATH,
/// the working directory is --cwd, and writes stay in the guest.
#[test]
fn the_guest_runs_programs_from_the_hosts_filesystem() {
    if !guests_enabled("the_guest_runs_programs_from_the_hosts_filesystem") {
        return;
    }
    let _g = lock();
    let d = tempfile::tempdir().unwrap();
    let cwd = d.path().join("here");
    std::fs::create_dir(&cwd).unwrap();
    let res = d.path().join("out");
    let script = "test -x /usr/bin/gcc && echo gcc-found; echo cwd=$(pwd); \
                  echo numalab=$(command -v numalab); numalab --version >/dev/null && echo runs; \
                  echo x > /etc/numalab-guest-write && echo wrote; touch written-in-guest";
    let out = vm(
        &res,
        &[
            "--nodes",
            "2",
            "--mem-per-node",
            "384M",
            "--cwd",
            cwd.to_str().unwrap(),
        ],
        &["run", "command", "--", "sh", "-c", script],
    );
    assert!(out.status.success(), "{}", text(&out));
    let recs = records(&res);
    assert_eq!(recs.len(), 1, "{}", text(&out));
    let log = std::fs::read_to_string(recs[0].0.with_extension("log")).unwrap();
    for want in [
        "gcc-found",
        &format!("cwd={}", cwd.canonicalize().unwrap().display()),
        "numalab=/usr/local/bin/numalab",
        "runs",
        "wrote",
    ] {
        assert!(log.contains(want), "{want:?} not in the log: {log}");
    }
    // The host's root is read-only to the guest: writes went to its overlay.
    assert!(!Path::new("/etc/numalab-guest-write").exists());
    assert!(!cwd.join("written-in-guest").exists());
}

#[test]
fn a_missing_module_is_a_one_line_error_naming_it() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("modules.dep"),
        "kernel/drivers/virtio/virtio_pci.ko:\nkernel/net/9p/9pnet.ko:\n",
    )
    .unwrap();
    std::fs::write(d.path().join("modules.builtin"), "").unwrap();
    for f in [
        "kernel/drivers/virtio/virtio_pci.ko",
        "kernel/net/9p/9pnet.ko",
    ] {
        let p = d.path().join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, b"").unwrap();
    }
    let qemu = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .any(|p| p.join("qemu-system-x86_64").is_file());
    if !qemu {
        eprintln!("no QEMU: the module check comes after finding it; skipped");
        return;
    }
    let e = one_line_error(&numalab(&[
        "vm",
        "--modules",
        d.path().to_str().unwrap(),
        "--",
        "topology",
    ]));
    assert!(e.contains("module 9pnet_virtio not found in"), "{e}");
    let e = one_line_error(&numalab(&[
        "vm",
        "--rootfs",
        "initramfs",
        "--share",
        "/tmp",
        "--",
        "topology",
    ]));
    assert!(e.contains("--rootfs host"), "{e}");
}

/// The KVM path: where /dev/kvm is usable a KVM guest boots with the
/// host's filesystem and reports `accel: kvm` in its record; elsewhere
/// `--accel kvm` is a one-line error naming why, and the boot part is
/// skipped with that reason printed.
#[test]
fn a_kvm_guest_runs_where_kvm_is_usable() {
    if !guests_enabled("a_kvm_guest_runs_where_kvm_is_usable") {
        return;
    }
    let _g = lock();
    let d = tempfile::tempdir().unwrap();
    let out = vm(
        d.path(),
        &["--accel", "kvm", "--nodes", "2", "--mem-per-node", "384M"],
        &["run", "command", "--", "sh", "-c", "test -x /usr/bin/gcc"],
    );
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    if let Some(why) = err
        .strip_prefix("numalab: error: --accel kvm: KVM is not usable here: ")
        .map(str::trim_end)
    {
        let e = one_line_error(&out);
        assert!(e.ends_with("; use --accel tcg\n"), "{e}");
        eprintln!("\n!!!!! KVM guest test SKIPPED: KVM is not usable here: {why} !!!!!\n");
        return;
    }
    assert!(out.status.success(), "{}", text(&out));
    let recs = records(d.path());
    assert_eq!(recs.len(), 1, "{}", text(&out));
    assert_eq!(recs[0].1["backend"]["accel"], "kvm", "{}", recs[0].1);
    assert_eq!(recs[0].1["outcome"]["status"], "ok", "{}", recs[0].1);
}

/// `numalab vm --shell`: an interactive shell from the host's filesystem
/// on the guest console, here driven through a pipe: it runs what is
/// typed, sees the guest's topology, and its exit status is numalab's.
#[test]
fn the_shell_runs_what_is_typed_and_exits_with_its_status() {
    if !guests_enabled("the_shell_runs_what_is_typed") {
        return;
    }
    let _g = lock();
    use std::io::{Read, Write};
    let mut child = Command::new(EXE)
        .args(["vm", "--shell", "--timeout", "300", "--nodes", "2"])
        .args(["--mem-per-node", "384M"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut out = child.stdout.take().unwrap();
    let s = seen.clone();
    let reader = std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = out.read(&mut buf) {
            if n == 0 {
                break;
            }
            s.lock().unwrap().extend_from_slice(&buf[..n]);
        }
    });
    let has = |needle: &str| String::from_utf8_lossy(&seen.lock().unwrap()).contains(needle);
    // Typed before the shell reads its terminal, input could be lost.
    assert!(
        wait_until(Duration::from_secs(240), || has("@numalab-vm")),
        "no prompt: {}",
        String::from_utf8_lossy(&seen.lock().unwrap())
    );
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"echo shell-$((6*7)); numalab topology | head -1\nexit 3\n")
        .unwrap();
    let status = child.wait().unwrap();
    reader.join().unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let out = String::from_utf8_lossy(&seen.lock().unwrap()).to_string();
    assert_eq!(status.code(), Some(3), "{out}\n{err}");
    assert!(out.contains("shell-42"), "{out}\n{err}");
    assert!(out.contains("2 nodes, 2 CPUs"), "{out}\n{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// In a 2-node guest, `numastat -p` of a numalab workload's process,
/// taken while it runs, agrees with the memory per node of that run's
/// record to within 1% of the process's memory. Balancing is off, so the
/// pages stay where the bind placement put them.
#[test]
fn numastat_in_the_guest_agrees_with_the_records_memory_per_node() {
    if !guests_enabled("numastat in the guest") {
        return;
    }
    let _g = lock();
    let dir = tempfile::tempdir().unwrap();
    let script = "numalab run numa02 --placement bind --threads 2 --bytes 64M --duration 8 \
                    --interval 0.5 --results /tmp/inner --quiet >/dev/null &
                  nl=$!
                  pid=
                  out=
                  rss() { [ -n \"$pid\" ] && awk '/^RssAnon/ {print $2}' /proc/$pid/status 2>/dev/null; }
                  # Wait (not a fixed sleep: a loaded host delays the start)
                  # for the task and its 64 MiB (anonymous) to be resident,
                  # up to 60 s;
                  # keep numastat's reading only if the task still held its
                  # 64 MiB after it (one taken as the task exits reads its
                  # memory half freed).
                  for i in $(seq 300); do
                    [ -n \"$pid\" ] && [ -d /proc/$pid ] ||
                      pid=$(pgrep -f '^[^ ]*numalab __task autonuma' | head -n 1)
                    r=$(rss)
                    if [ \"${r:-0}\" -ge 65536 ]; then
                      out=$(numastat -p \"$pid\")
                      r=$(rss)
                      [ \"${r:-0}\" -ge 65536 ] && break
                      out=
                    fi
                    sleep 0.2
                  done
                  echo \"numastat of $pid\"
                  echo \"$out\"
                  wait $nl || exit 1
                  echo '@@record'
                  cat /tmp/inner/*.json";
    let o = vm(
        dir.path(),
        &[
            "--nodes",
            "2",
            "--cpus-per-node",
            "1",
            "--mem-per-node",
            "512M",
            "--sysctl",
            "kernel.numa_balancing=0",
        ],
        &[
            "run", "command", "--name", "numastat", "--", "sh", "-c", script,
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let log_path = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "log"))
        .unwrap_or_else(|| panic!("no log: {}", text(&o)));
    let log = std::fs::read_to_string(&log_path).unwrap();
    let (before, record) = log
        .split_once("@@record")
        .unwrap_or_else(|| panic!("{log}"));
    let pid: u64 = before
        .lines()
        .find_map(|l| l.strip_prefix("numastat of "))
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("{log}"));
    let theirs = common::parse_numastat(before);
    let rec: Value = serde_json::from_str(record.trim()).unwrap_or_else(|e| panic!("{e}: {log}"));
    let proc_ix = rec["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pid"].as_u64() == Some(pid))
        .unwrap_or_else(|| panic!("pid {pid} not in {}", rec["processes"]))["index"]
        .as_u64()
        .unwrap() as usize;
    let nodes: Vec<u64> = rec["machine"]["topology"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_u64().unwrap())
        .collect();
    assert_eq!(nodes.len(), 2);
    // The last sample that read the process's memory while it was all
    // mapped: the final one, taken when the tasks have ended, has none,
    // and one taken as the process exits reads it freed, wholly (zeros)
    // or in part (a few MiB of its 64, seen once in the suite).
    let held = |s: &serde_json::Value| -> f64 {
        s["memory_bytes"][proc_ix]
            .as_array()
            .map_or(0.0, |v| v.iter().map(|b| b.as_f64().unwrap_or(0.0)).sum())
    };
    let samples = rec["series"]["samples"].as_array().unwrap();
    let most = samples.iter().map(held).fold(0.0, f64::max);
    let last = samples
        .iter()
        .rev()
        .find(|s| most > 0.0 && held(s) >= 0.9 * most)
        .unwrap_or_else(|| panic!("no sample read memory: {}", rec["series"]));
    let ours: Vec<f64> = last["memory_bytes"][proc_ix]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_f64().unwrap() / (1u64 << 20) as f64)
        .collect();
    let total: f64 = theirs.iter().map(|t| t.1).sum();
    assert!(total >= 64.0, "{theirs:?}");
    // Bind placement: both nodes hold a slice.
    assert!(ours.iter().all(|&mb| mb >= 16.0), "{ours:?}");
    for (id, mb) in &theirs {
        let ix = nodes.iter().position(|n| n == &(*id as u64)).unwrap();
        assert!(
            (ours[ix] - mb).abs() <= 0.01 * total,
            "node {id}: record {:.2} MiB, numastat {mb:.2} MiB (of {total:.2}); {log}",
            ours[ix]
        );
    }
}

/// `--trace` in a 2-node guest: the record comes back with the exact
/// scheduling facts of the guest's tasks and its raw events beside it,
/// and `show --sched` prints the node-to-node migration table.
#[test]
fn a_traced_run_in_a_guest_brings_back_its_events() {
    if !guests_enabled("traced run in a guest") {
        return;
    }
    let _g = lock();
    let dir = tempfile::tempdir().unwrap();
    let o = vm(
        dir.path(),
        &[
            "--nodes",
            "2",
            "--cpus-per-node",
            "1",
            "--mem-per-node",
            "512M",
        ],
        &[
            "run",
            "numa01",
            "--trace",
            "--threads",
            "2",
            "--bytes",
            "64M",
            "--duration",
            "3",
            "--quiet",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let recs = records(dir.path());
    assert_eq!(recs.len(), 1, "{}", text(&o));
    let r = &recs[0].1;
    let s = &r["sched"];
    let tasks = s["tasks"]
        .as_array()
        .unwrap_or_else(|| panic!("{}", r["sched"]));
    // 2 processes of 1 thread each, at least.
    assert!(tasks.len() >= 2, "{s}");
    assert_eq!(s["migration_matrix"].as_array().unwrap().len(), 2);
    let events = dir.path().join(s["events_file"].as_str().unwrap());
    let text_ev = std::fs::read_to_string(&events).unwrap();
    assert!(text_ev.lines().count() > 10);
    let o = Command::new(EXE)
        .args(["show", "--sched"])
        .arg(dir.path())
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("Migrations, node to node"), "{out}");
    assert!(out.contains("Migrations and wakeups by distance"), "{out}");
    // Four threads on two CPUs, one per node: they sleep and wake (the
    // observer's protocol), and the load balancer may move them across
    // nodes or leave two on each CPU for the whole run (a real kernel
    // decides; both happen). The trace must agree with the kernel's own
    // count of the threads' moves: some whenever the kernel counted some
    // (the trace also sees the processes' other tasks, so not the
    // converse).
    let m = &r["metrics"];
    let value = |k: &str| m[k]["value"].as_f64().unwrap_or_else(|| panic!("{k}: {m}"));
    let (traced, cross) = (
        value("sched_migrations"),
        value("sched_migrations_cross_node"),
    );
    assert!(cross <= traced, "{m}");
    if value("kernel_migrations") > 0.0 {
        assert!(traced > 0.0, "{m}");
    }
    assert!(m["sched_wakeups"]["value"].as_f64().unwrap() > 0.0, "{m}");
    assert!(
        s["method"].as_str().unwrap().contains("CPU-wide"),
        "{}",
        s["method"]
    );
    // The schedule as Perfetto reads it: a track per CPU under its node.
    let json_path = dir.path().join("guest.trace.json");
    let o = Command::new(EXE)
        .args(["trace", "export"])
        .arg(&recs[0].0)
        .arg("-o")
        .arg(&json_path)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    let ev = json["traceEvents"].as_array().unwrap();
    let names: Vec<&str> = ev
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "process_name")
        .filter_map(|e| e["args"]["name"].as_str())
        .collect();
    assert!(names.iter().any(|n| n.contains("node 0")), "{names:?}");
    assert!(names.iter().any(|n| n.contains("node 1")), "{names:?}");
    let slice_pids: std::collections::BTreeSet<String> = ev
        .iter()
        .filter(|e| e["ph"] == "X")
        .map(|e| e["pid"].to_string())
        .collect();
    assert_eq!(slice_pids.len(), 2, "slices on both nodes' CPUs");
}

/// A program in the guest attacks the host: it writes a record frame of
/// its own to the channel whose id climbs out of the results directory
/// (the host wrote it four levels up, as root, and it replaced the run's
/// real record), and makes a setuid-root file and a device node in a
/// `--share` directory. The frame is refused with one line naming it, the
/// host writes nothing outside the results directory, and the share holds
/// neither a setuid bit nor a device node.
#[test]
fn a_hostile_guest_program_reaches_nothing_on_the_host() {
    if !guests_enabled("a_hostile_guest_program_reaches_nothing_on_the_host") {
        return;
    }
    let _g = lock();
    let d = tempfile::tempdir().unwrap();
    let share = d.path().join("a/b/c/share");
    std::fs::create_dir_all(&share).unwrap();
    // A valid record to forge from, made here by the simulator.
    let made = Command::new(EXE)
        .current_dir(d.path())
        .args(["sim", "--machine", "azusa16", "numa_test", "--tasks", "2"])
        .args(["--size", "200000", "--runs", "1", "-q", "--results", "made"])
        .output()
        .unwrap();
    assert!(made.status.success(), "{}", text(&made));
    let (_, mut rec) = records(&d.path().join("made")).remove(0);
    rec["id"] = "../../../../outside/escaped".into();
    rec["benchmark"] = "command".into();
    std::fs::write(share.join("forged.json"), rec.to_string()).unwrap();
    let forge = "import sys, zlib\n\
                 p = open(sys.argv[1], 'rb').read()\n\
                 f = b'\\n@@NUMALAB v1 record escaped.json %d %08x\\n' % (len(p), zlib.crc32(p))\n\
                 t = open('/dev/ttyS1', 'wb', buffering=0)\n\
                 t.write(f + p + b'\\n@@END\\n')\n";
    std::fs::write(share.join("forge.py"), forge).unwrap();
    let s = share.display();
    let script = format!(
        "cp /bin/true {s}/suid && chmod 4755 {s}/suid && ls -l {s}/suid; \
         mknod {s}/null c 1 3 && echo mknod-ok; python3 {s}/forge.py {s}/forged.json; echo forged"
    );
    let res = share.join("results");
    let out = vm(
        &res,
        &[
            "--nodes",
            "2",
            "--mem-per-node",
            "384M",
            "--share",
            &share.to_string_lossy(),
        ],
        &["run", "command", "--", "sh", "-c", &script],
    );
    let all = text(&out);
    assert!(
        !out.status.success(),
        "the forged frame fails the run: {all}"
    );
    assert!(all.contains("second record frame"), "{all}");
    for up in [
        d.path().join("outside"),
        share.join("outside"),
        d.path().join("a/outside"),
    ] {
        assert!(!up.exists(), "{} was written: {all}", up.display());
    }
    let escaped: Vec<_> = walk(d.path())
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n == "escaped.json"))
        .collect();
    assert!(escaped.is_empty(), "{escaped:?}");
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    let suid = std::fs::metadata(share.join("suid")).expect("the guest's copy is there");
    assert_eq!(
        suid.permissions().mode() & 0o7000,
        0,
        "no setuid bit on the host"
    );
    if let Ok(m) = std::fs::symlink_metadata(share.join("null")) {
        assert!(
            !m.file_type().is_char_device(),
            "no device node on the host"
        );
    }
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// `numalab vm ... -- calibrate --output FILE`: the guest measures
/// itself, and FILE is written on the host (not in the guest's
/// throwaway root): its 2 nodes, a 2 x 2 latency matrix, and a file the
/// simulator runs on.
#[test]
fn a_guest_calibrates_itself_into_a_machine_file_on_the_host() {
    if !guests_enabled("calibrate in a guest") {
        return;
    }
    let _g = lock();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("guest.toml");
    let o = vm(
        dir.path(),
        &[
            "--nodes",
            "2",
            "--cpus-per-node",
            "1",
            "--mem-per-node",
            "512M",
        ],
        &[
            "calibrate",
            "--force",
            "--runs",
            "1",
            "--output",
            file.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let toml = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
    assert!(toml.contains("nodes = 2\n"), "{toml}");
    let matrix = toml
        .lines()
        .find_map(|l| l.strip_prefix("latency_ns = "))
        .unwrap_or_else(|| panic!("{toml}"));
    let v: Value = serde_json::from_str(matrix).unwrap_or_else(|e| panic!("{e}: {matrix}"));
    assert_eq!(v.as_array().unwrap().len(), 2, "{matrix}");
    assert!(toml.contains("A virtual machine"), "{toml}");
    let o = Command::new(EXE)
        .args(["sim", "spin", "--machine"])
        .arg(&file)
        .args([
            "--tasks",
            "2",
            "--seconds",
            "0.1",
            "--placement",
            "default",
            "--quiet",
        ])
        .arg("--results")
        .arg(dir.path().join("sim"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
}
