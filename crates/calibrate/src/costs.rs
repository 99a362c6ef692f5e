//! The per-operation costs the simulator's workload models charge, each
//! measured with the very code the host backend runs for that benchmark:
//! the spin loop of `spin`, `forkexec` and the placement experiments;
//! numa_test's update; the zeroing of the autonuma benchmarks; a
//! hackbench message; a fork, an exec, a thread.

use crate::figure::{ns_per_op, Figure};
use numalab_host::{autonuma_run, placement_run, randupdt};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Nanoseconds per iteration of the spin loop (one thread).
pub fn spin_ns(budget: Duration) -> f64 {
    1e9 / placement_run::spin_rate(budget)
}

/// Nanoseconds of numa_test's update `a[ix[i]] += b[i]` with its arrays
/// in the core's caches (4096 elements: 80 KiB in all), so the figure is
/// the update's own work; memory time is the model's to add.
pub fn randupdt_ns(budget: Duration) -> f64 {
    const ELEMENTS: usize = 4096;
    const PASSES: u32 = 64;
    let mut sink = Vec::new();
    ns_per_op(budget, || {
        sink.clear();
        randupdt::run_task(ELEMENTS, PASSES, 1, &mut sink);
        ELEMENTS as u64 * PASSES as u64
    })
}

/// One core's zeroing rate in its caches, GB/s (the autonuma benchmarks'
/// memset over a buffer that fits).
pub fn memset_gbs(llc_bytes: u64, budget: Duration) -> f64 {
    let bytes = (256u64 << 10).min(llc_bytes.max(64 << 10));
    autonuma_run::measure_zeroing_bandwidth(1, bytes, llc_bytes, budget) / 1e9
}

/// One hackbench message's write or read with its share of the wakeup
/// and switch, in microseconds: `numalab __hackbench 1 LOOPS 20 100`
/// (numa_test's group of 20 senders and 20 receivers) with every process
/// on `cpu`, so the time is the sum of the operations: 2 x 20 x 20 x
/// LOOPS of them.
pub fn msg_us(exe: &Path, cpu: u32, budget: Duration) -> std::io::Result<f64> {
    const FDS: u64 = 20;
    let mut loops = 10u64;
    loop {
        let h = hackbench_storm(exe, cpu, loops, FDS)?;
        let per = h / (2 * FDS * FDS * loops) as f64 * 1e6;
        // Long enough that starting 40 processes is a small part of it.
        if h >= budget.as_secs_f64() || loops >= 1 << 20 {
            return Ok(per);
        }
        loops = (loops as f64 * (budget.as_secs_f64() / h.max(1e-3)).clamp(2.0, 20.0)) as u64;
    }
}

/// Seconds of `numalab __hackbench 1 LOOPS FDS 100` with every process
/// on `cpu` (the affinity of the thread that forks it is inherited).
fn hackbench_storm(exe: &Path, cpu: u32, loops: u64, fds: u64) -> std::io::Result<f64> {
    let old = crate::memory::pin(&[cpu])?;
    let mut cmd = Command::new(exe);
    cmd.args(["__hackbench", "1"])
        .arg(loops.to_string())
        .arg(fds.to_string())
        .arg("100")
        .stdin(Stdio::null())
        .stderr(Stdio::inherit());
    // SIGTERM, as the host backend does: hackbench stops its workers on it.
    numalab_linux::child::die_with_parent_by(&mut cmd, numalab_linux::child::SIGTERM);
    let out = cmd.output();
    numalab_linux::numa::set_affinity(0, &old)?;
    let out = out?;
    let text = String::from_utf8_lossy(&out.stdout);
    match text
        .trim()
        .strip_prefix("H ")
        .and_then(|s| s.parse::<f64>().ok())
    {
        Some(h) if out.status.success() => Ok(h),
        _ => Err(std::io::Error::other(format!(
            "{} __hackbench: {} ({})",
            exe.display(),
            out.status,
            text.trim()
        ))),
    }
}

/// Microseconds of a fork and exit of this process, reaped.
pub fn fork_us(budget: Duration) -> std::io::Result<f64> {
    let mut err = None;
    let ns = ns_per_op(budget, || match numalab_linux::child::fork_exit_wait() {
        Ok(()) => 1,
        Err(e) => {
            err.get_or_insert(e);
            1
        }
    });
    match err {
        Some(e) => Err(e),
        None => Ok(ns / 1e3),
    }
}

/// Microseconds to start numalab as a new process (`fork` + `execve`,
/// until `spawn` returns) and, separately, from fork to reaping of one
/// that exits at once (`numalab __task burst 0`, forkexec's child): the
/// medians over about `budget` (one slow start, its binary not yet in
/// the page cache, is not an average's business).
pub fn process_us(exe: &Path, budget: Duration) -> std::io::Result<(f64, f64)> {
    let t0 = Instant::now();
    let (mut launch, mut whole) = (Vec::new(), Vec::new());
    while t0.elapsed() < budget || launch.len() < 3 {
        let t = Instant::now();
        let mut cmd = Command::new(exe);
        cmd.args(["__task", "burst", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        numalab_linux::child::die_with_parent(&mut cmd);
        let mut c = cmd.spawn()?;
        launch.push(t.elapsed().as_secs_f64() * 1e6);
        let s = c.wait()?;
        whole.push(t.elapsed().as_secs_f64() * 1e6);
        if !s.success() {
            return Err(std::io::Error::other(format!(
                "{} __task burst 0: {s}",
                exe.display()
            )));
        }
    }
    Ok((Figure::of(&launch, "").value, Figure::of(&whole, "").value))
}

/// Microseconds per child of forkexec's own driver (`numalab __forkexec
/// N 1 1 1`: fork, exec of `numalab __task burst 1`, exit, reaping, one
/// child at a time), with N sized to take about `budget`.
pub fn forkexec_child_us(exe: &Path, budget: Duration) -> std::io::Result<f64> {
    let mut children = 20u64;
    loop {
        let mut cmd = Command::new(exe);
        cmd.arg("__forkexec")
            .arg(children.to_string())
            .args(["1", "1", "1"])
            .stdin(Stdio::null())
            .stderr(Stdio::inherit());
        // The driver's children die with it, as it dies with calibrate.
        numalab_linux::child::die_with_parent(&mut cmd);
        let out = cmd.output()?;
        let text = String::from_utf8_lossy(&out.stdout);
        let elapsed = text
            .lines()
            .find_map(|l| l.strip_prefix("done "))
            .and_then(|j| serde_json::from_str::<serde_json::Value>(j).ok())
            .and_then(|v| v["elapsed_s"].as_f64())
            .filter(|_| out.status.success())
            .ok_or_else(|| {
                std::io::Error::other(format!(
                    "{} __forkexec: {} ({})",
                    exe.display(),
                    out.status,
                    text.trim()
                ))
            })?;
        let per = elapsed / children as f64 * 1e6;
        if elapsed >= budget.as_secs_f64() / 2.0 || children >= 100_000 {
            return Ok(per);
        }
        children = ((budget.as_secs_f64() / per * 1e6) as u64).clamp(children * 2, 100_000);
    }
}

/// GB/s of a first touch: one thread zeroing `bytes` it has never
/// touched (a fresh mapping each time), so every page faults and the
/// kernel allocates and clears it first, as the autonuma benchmarks'
/// main thread does before its threads start (with this machine's
/// transparent huge page setting).
pub fn first_touch_gbs(bytes: usize) -> f64 {
    let t = Instant::now();
    let mut v: Vec<u8> = Vec::with_capacity(bytes);
    v.resize(bytes, 1);
    let s = t.elapsed().as_secs_f64();
    std::hint::black_box(&v);
    bytes as f64 / s / 1e9
}

/// Microseconds of system time to change the protection of 1 GiB of
/// touched memory (`mprotect` to `PROT_NONE` over `bytes`: the
/// page-table walk of NUMA balancing's change_prot_numa).
pub fn scan_us_per_gb(bytes: usize) -> std::io::Result<f64> {
    let mut v = vec![1u8; bytes];
    let t = numalab_linux::numa::time_protect_none(&mut v)?;
    Ok(t.as_secs_f64() * 1e6 / (bytes as f64 / (1u64 << 30) as f64))
}

/// Microseconds to migrate 1 MiB of touched memory from node `a` to node
/// `b` (`move_pages`, as NUMA balancing's migrations copy and remap):
/// `bytes` first touched on `a`, moved to `b` and timed.
pub fn migrate_us_per_mb(a: u32, b: u32, bytes: usize) -> std::io::Result<f64> {
    const MPOL_BIND: i32 = 2;
    numalab_linux::numa::set_mempolicy(MPOL_BIND, &[a])?;
    let v = vec![1u8; bytes];
    numalab_linux::numa::set_mempolicy(0, &[])?;
    let t = Instant::now();
    let moved = numalab_linux::numa::move_to_node(&v, b)?;
    let s = t.elapsed().as_secs_f64();
    let page = numalab_linux::numa::page_size();
    if moved * page < bytes / 2 {
        return Err(std::io::Error::other(format!(
            "only {moved} of {} pages moved from node {a} to node {b}",
            bytes / page
        )));
    }
    Ok(s * 1e6 / ((moved * page) as f64 / (1 << 20) as f64))
}

/// Microseconds to start and join a thread that does nothing.
pub fn thread_us(budget: Duration) -> f64 {
    ns_per_op(budget, || {
        let _ = std::thread::spawn(|| {}).join();
        1
    }) / 1e3
}

/// Throughput of a spinning thread whose SMT sibling spins too, as a
/// fraction of its throughput alone (`a` and `b` siblings of one core).
pub fn smt_throughput(a: u32, b: u32, budget: Duration) -> std::io::Result<f64> {
    let alone = on_cpu(a, move || placement_run::spin_rate(budget))?;
    let other = std::thread::spawn(move || on_cpu(b, move || placement_run::spin_rate(budget)));
    let together = on_cpu(a, move || placement_run::spin_rate(budget))?;
    let _ = other.join();
    Ok((together / alone).min(1.0))
}

/// Run `f` on a thread pinned to `cpu`.
fn on_cpu<T: Send + 'static>(
    cpu: u32,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::io::Result<T> {
    std::thread::spawn(move || -> std::io::Result<T> {
        numalab_linux::numa::set_affinity(0, &[cpu])?;
        Ok(f())
    })
    .join()
    .map_err(|_| std::io::Error::other("a measuring thread panicked"))?
}

/// Repeat an infallible measure into a [`Figure`].
pub fn repeat(runs: usize, how: &str, mut f: impl FnMut() -> f64) -> Figure {
    let v: Vec<f64> = (0..runs).map(|_| f()).collect();
    Figure::of(&v, how)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protection_changes_and_migrations_are_timed() {
        let s = scan_us_per_gb(16 << 20).unwrap();
        assert!(s > 0.0 && s.is_finite(), "{s}");
        // Node 0 to node 0: every page is already there, the call still
        // walks them.
        let m = migrate_us_per_mb(0, 0, 8 << 20).unwrap();
        assert!(m > 0.0 && m.is_finite(), "{m}");
    }

    #[test]
    fn costs_are_positive_and_plausible() {
        let b = Duration::from_millis(30);
        let spin = spin_ns(b);
        assert!((0.05..1000.0).contains(&spin), "{spin}");
        let upd = randupdt_ns(b);
        assert!((0.05..1000.0).contains(&upd), "{upd}");
        let ms = memset_gbs(8 << 20, b);
        assert!((0.1..10_000.0).contains(&ms), "{ms}");
        let f = fork_us(b).unwrap();
        assert!((1.0..1e6).contains(&f), "{f}");
        let t = thread_us(b);
        assert!((0.1..1e6).contains(&t), "{t}");
        // Faulting pages in is slower than zeroing them in cache.
        let ft = first_touch_gbs(64 << 20);
        assert!(
            ft > 0.01 && ft < ms * 2.0,
            "first touch {ft} GB/s, memset {ms}"
        );
    }
}
