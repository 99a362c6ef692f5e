//! Helpers shared by the CLI test binaries: running numalab, checking
//! one-line errors, and the conditions and lock of guest tests.
#![allow(dead_code)] // each test binary uses a different subset

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

pub const EXE: &str = env!("CARGO_BIN_EXE_numalab");

/// Run numalab with `args` in `cwd`.
pub fn numalab_in(args: &[&str], cwd: &Path) -> Output {
    Command::new(EXE)
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("numalab runs")
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A usage error: non-zero exit, one line on stderr starting
/// `numalab: error: ` and naming the problem, no panic.
pub fn assert_one_line_error(o: &Output, needle: &str) {
    let err = text(&o.stderr);
    assert!(!o.status.success(), "expected failure, stderr: {err}");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "one line expected: {err:?}"
    );
    assert!(err.starts_with("numalab: error: "), "{err}");
    assert!(err.contains(needle), "{needle:?} not in {err:?}");
    assert!(!err.contains("panicked"), "{err}");
}

/// Every `*.json` file of `dir`, parsed, sorted by path.
pub fn json_records(dir: &Path) -> Vec<(PathBuf, Value)> {
    let mut v: Vec<(PathBuf, Value)> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| {
            let r = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
            (p, r)
        })
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

static GUEST: Mutex<()> = Mutex::new(());

/// Held by a test that changes this host's `kernel.numa_balancing` and by
/// one that checks a guest run left it alone: the test binaries run in
/// two lanes at once (scripts/run-tests.py), and a guest test once read
/// the host's value while a host test had it flipped. An exclusive
/// `flock` on a file in Cargo's own temporary directory for integration
/// tests, released when dropped.
pub struct HostSysctlLock(std::fs::File);

pub fn host_sysctl_lock() -> HostSysctlLock {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("host-sysctl.lock");
    let f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    // SAFETY: flock on a file descriptor this function owns.
    let r = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) };
    assert_eq!(
        r,
        0,
        "flock {}: {}",
        path.display(),
        std::io::Error::last_os_error()
    );
    HostSysctlLock(f)
}

/// Guests run one at a time: TCG on a 2-core host is slow enough.
pub fn guest_lock() -> std::sync::MutexGuard<'static, ()> {
    GUEST.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether guest tests should run: false (with a loud notice) when
/// skipped on purpose with NUMALAB_SKIP_VM_TESTS=1; panics naming the
/// Debian package when QEMU or a kernel image is missing, since a silently
/// skipped test would hide a broken testbed.
pub fn guests_enabled(test: &str) -> bool {
    if std::env::var_os("NUMALAB_SKIP_VM_TESTS").is_some_and(|v| !v.is_empty() && v != "0") {
        eprintln!(
            "\n!!!!! NUMALAB_SKIP_VM_TESTS is set: guest test `{test}` SKIPPED; nothing NUMA is tested in a guest !!!!!\n"
        );
        return false;
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let qemu = std::env::split_paths(&path).any(|d| d.join("qemu-system-x86_64").is_file());
    assert!(
        qemu,
        "guest tests need qemu-system-x86_64: apt-get install qemu-system-x86 \
         (or set NUMALAB_SKIP_VM_TESTS=1 to skip them, loudly)"
    );
    let kernel = std::fs::read_dir("/boot")
        .map(|d| {
            d.flatten().any(|e| {
                e.file_name().to_string_lossy().starts_with("vmlinuz-")
                    && std::fs::File::open(e.path()).is_ok()
            })
        })
        .unwrap_or(false);
    assert!(
        kernel,
        "guest tests need a readable /boot/vmlinuz-*: apt-get install linux-image-amd64 \
         (or set NUMALAB_SKIP_VM_TESTS=1 to skip them, loudly)"
    );
    true
}

/// Child processes of `pid` (of all its threads).
pub fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for t in tasks.flatten() {
            if let Ok(s) = std::fs::read_to_string(t.path().join("children")) {
                out.extend(s.split_whitespace().filter_map(|p| p.parse::<u32>().ok()));
            }
        }
    }
    out
}

/// Is `pid` running (a zombie no longer runs)?
pub fn alive(pid: u32) -> bool {
    // a zombie is as good as gone: it no longer runs
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            !s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(false)
}

/// Wait (up to 30 s) until `pid` has at least `n` children; their pids.
pub fn wait_for_children(pid: u32, n: usize) -> Vec<u32> {
    for _ in 0..3000 {
        let c = children(pid);
        if c.len() >= n {
            return c;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!("{pid} did not start {n} child processes within 30 s");
}

/// Per-node MB from the `Total` row of `numastat -p PID` (its columns are
/// `Node N` ... `Total`; MB there are MiB).
pub fn parse_numastat(text: &str) -> Vec<(u32, f64)> {
    let header = text
        .lines()
        .find(|l| l.trim_start().starts_with("Node "))
        .unwrap_or_else(|| panic!("no header in numastat output:\n{text}"));
    let nodes: Vec<u32> = header
        .split("Node")
        .skip(1)
        .filter_map(|w| w.split_whitespace().next()?.parse().ok())
        .collect();
    let total = text
        .lines()
        .rev()
        .find(|l| l.starts_with("Total"))
        .unwrap_or_else(|| panic!("no Total row:\n{text}"));
    let vals: Vec<f64> = total
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    nodes.into_iter().zip(vals).collect()
}

/// An output's status, stdout and stderr, for assertion messages.
pub fn show(o: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status,
        text(&o.stdout),
        text(&o.stderr)
    )
}

/// The first file of `dir` whose extension is `ext`.
pub fn file_with_ext(dir: &Path, ext: &str) -> PathBuf {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect();
    v.sort();
    v.into_iter()
        .next()
        .unwrap_or_else(|| panic!("no *.{ext} in {}", dir.display()))
}

/// QEMU processes started by the numalab process `pid` (they are named
/// `numalab-vm-<pid>`), zombies excluded.
pub fn qemus_of(pid: u32) -> Vec<u32> {
    let tag = format!("numalab-vm-{pid}\0");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            let cmd = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
            let zombie = stat
                .rsplit_once(')')
                .is_some_and(|(_, r)| r.trim_start().starts_with('Z'));
            !zombie && String::from_utf8_lossy(&cmd).contains(&tag)
        })
        .collect()
}

pub fn wait_until(limit: std::time::Duration, mut f: impl FnMut() -> bool) -> bool {
    let t = std::time::Instant::now();
    while t.elapsed() < limit {
        if f() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    false
}

/// Whether the debian-7.3 kernel is in numalab's cache. scripts/test.sh
/// fetches it and sets `NUMALAB_REQUIRE_KERNELS=1`, so that a missing
/// kernel fails `test` instead of skipping it; elsewhere it is skipped,
/// loudly.
pub fn debian_7_3_cached(test: &str) -> bool {
    use numalab_guest::named;
    let k = named::lookup("debian-7.3").expect("a known name");
    if named::cache_root().is_some_and(|r| !named::cached(k, &r).is_empty()) {
        return true;
    }
    let required =
        std::env::var_os("NUMALAB_REQUIRE_KERNELS").is_some_and(|v| !v.is_empty() && v != "0");
    assert!(
        !required,
        "the debian-7.3 kernel is not in numalab's cache: scripts/test.sh fetches it with \
         `numalab vm --kernel debian-7.3 --fetch-only` (as root)"
    );
    eprintln!(
        "\n!!!!! the debian-7.3 kernel is not cached: `{test}` SKIPPED; \
         fetch it with `numalab vm --kernel debian-7.3 --fetch-only` (scripts/test.sh does) !!!!!\n"
    );
    false
}

/// How many records (`*.json`) are in `dir` so far (0 before it exists).
pub fn count_json(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .map(|r| {
            r.flatten()
                .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
                .count()
        })
        .unwrap_or(0)
}
