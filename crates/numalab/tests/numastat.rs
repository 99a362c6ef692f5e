//! The memory per node numalab records agrees with `numastat -p` (from
//! Debian's `numactl` package) to within 1% on a quiescent process.
//!
//! Without numastat this test fails, naming the package, unless
//! `NUMALAB_SKIP_NUMASTAT_TEST=1` is set.

mod common;

use common::parse_numastat;
use numalab_host::observe::{Observer, Region};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

#[test]
fn parses_numastat_output() {
    let text = "\nPer-node process memory usage (in MBs) for PID 42 (numalab)\n                           Node 0          Node 1           Total\n                  --------------- --------------- ---------------\nHuge                         0.00            0.00            0.00\nHeap                         0.02            0.00            0.02\nStack                        0.01            0.00            0.01\nPrivate                     60.10            4.00           64.10\n----------------  --------------- --------------- ---------------\nTotal                       60.13            4.00           64.13\n";
    assert_eq!(parse_numastat(text), vec![(0, 60.13), (1, 4.0)]);
}

#[test]
fn memory_per_node_agrees_with_numastat() {
    let have = Command::new("numastat").arg("-V").output().is_ok();
    if !have {
        if std::env::var("NUMALAB_SKIP_NUMASTAT_TEST").as_deref() == Ok("1") {
            eprintln!("skipped: numastat is not installed (NUMALAB_SKIP_NUMASTAT_TEST=1)");
            return;
        }
        panic!("numastat is not installed: install Debian's `numactl` package (apt-get install numactl), or set NUMALAB_SKIP_NUMASTAT_TEST=1 to skip this test");
    }
    let bytes: u64 = 64 << 20;
    let mut child = Command::new(env!("CARGO_BIN_EXE_numalab"))
        .args(["__task", "hold", &bytes.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let v: Vec<u64> = line
        .strip_prefix("ready ")
        .unwrap_or_else(|| panic!("{line:?}"))
        .split_whitespace()
        .map(|w| w.parse().unwrap())
        .collect();
    let topo = numalab_topology::Topology::from_sysfs(std::path::Path::new("/sys")).unwrap();
    let obs = Observer::start(&topo);
    let ours = obs.memory(pid);
    let out = Command::new("numastat")
        .args(["-p", &pid.to_string()])
        .output()
        .unwrap();
    let theirs = parse_numastat(&String::from_utf8_lossy(&out.stdout));
    let region = obs.regions(
        pid,
        &[Region {
            addr: v[0],
            len: v[1],
        }],
        4096,
    );
    drop(child.stdin.take()); // the holder exits
    let _ = child.wait();

    let total_ours: u64 = ours.iter().sum();
    assert!(total_ours >= bytes, "{ours:?}");
    let total_theirs: f64 = theirs.iter().map(|t| t.1).sum();
    for (id, mb) in &theirs {
        let ix = topo.node_index(*id).unwrap();
        let ours_mb = ours[ix] as f64 / (1u64 << 20) as f64;
        assert!(
            (ours_mb - mb).abs() <= 0.01 * total_theirs.max(1.0),
            "node {id}: numalab {ours_mb:.2} MB, numastat {mb:.2} MB (of {total_theirs:.2})"
        );
    }
    // The held buffer itself, from move_pages on sampled pages.
    let held: u64 = region[0].iter().sum();
    assert!(held.abs_diff(bytes) <= bytes / 100, "{region:?}");
}
