//! The per-operation costs the simulator's workload models charge, each
//! measured with the very code the host backend runs for that benchmark:
//! the spin loop of `spin`, `forkexec` and the placement experiments;
//! numa_test's update; the zeroing of the autonuma benchmarks; a
//! hackbench message; a fork, an exec, a thread.

use crate::figure::{ns_per_op, round3, Figure};
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

/// The time of each `pass N` line numa_test's task writes.
struct PassClock(Vec<Instant>);

impl std::io::Write for PassClock {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if buf.starts_with(b"pass") {
            self.0.push(Instant::now());
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Nanoseconds per numa_test update with its arrays in memory:
/// `elements` per array, four passes timed from the end of the first
/// (the arrays' allocation, first touch and first pass left out) to the
/// end of the last.
pub fn randupdt_memory_ns(elements: usize) -> f64 {
    let mut clock = PassClock(Vec::new());
    randupdt::run_task(elements, 4, 1, &mut clock);
    match (clock.0.first(), clock.0.last(), clock.0.len()) {
        (Some(a), Some(b), n) if n >= 2 => {
            ((*b - *a).as_secs_f64() / ((n - 1) as f64 * elements as f64) * 1e9).max(0.01)
        }
        _ => f64::NAN,
    }
}

/// numa_test's update time (ns) at 1, 2, 4... M elements per array up to
/// `max_elements`, with a task on each of `cpus` at once (as numa_test
/// runs a task per CPU, sharing their cache): the mean of their
/// [`randupdt_memory_ns`].
pub fn update_curve(max_elements: usize, cpus: &[u32]) -> std::io::Result<Vec<(usize, f64)>> {
    let mut out = Vec::new();
    let mut n = 1usize << 20;
    while n <= max_elements {
        let times: Vec<std::io::Result<f64>> = std::thread::scope(|s| {
            let hs: Vec<_> = cpus
                .iter()
                .map(|&c| {
                    s.spawn(move || {
                        numalab_linux::numa::set_affinity(0, &[c])?;
                        Ok(randupdt_memory_ns(n))
                    })
                })
                .collect();
            hs.into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(std::io::Error::other("panicked")))
                })
                .collect()
        });
        let mut sum = 0.0;
        for t in &times {
            sum += t
                .as_ref()
                .map_err(|e| std::io::Error::other(e.to_string()))?;
        }
        out.push((n, sum / cpus.len().max(1) as f64));
        n *= 2;
    }
    Ok(out)
}

/// The cache numa_test's random accesses get, in bytes, through the
/// model's own equation: an update's time is its time in cache plus a
/// miss share of the miss cost, the share the model gives a cache of
/// `c` times `a`'s 8 n bytes with the update's 12 streamed bytes taking
/// their places (`numalab_sim::cache`), so halfway from the time in
/// cache (`cache_ns`) to the time of the curve's largest size (taken as
/// all misses) half the accesses hit: the cache is
/// `cache_for_hit_share(0.5, streamed lines an update)` x 8 n bytes (0.63
/// x 8 n in 64-byte lines; 4 n without streams); `n` log-interpolated
/// between the two sizes that straddle it. `None` when even the smallest
/// is past halfway or the curve does not rise.
pub fn update_cache_bytes(curve: &[(usize, f64)], cache_ns: f64) -> Option<u64> {
    let top = curve.last()?.1;
    if top <= cache_ns * 1.5 {
        return None;
    }
    let mid = (cache_ns + top) / 2.0;
    let i = curve.iter().position(|c| c.1 >= mid)?;
    if i == 0 {
        return None;
    }
    let ((n0, t0), (n1, t1)) = (curve[i - 1], curve[i]);
    let f = ((mid - t0) / (t1 - t0).max(1e-9)).clamp(0.0, 1.0);
    let n = (n0 as f64).ln() + f * ((n1 as f64).ln() - (n0 as f64).ln());
    let c = numalab_sim::cache::cache_for_hit_share(0.5, update_streamed_lines());
    Some((8.0 * c * n.exp()) as u64)
}

/// Lines numa_test's update streams (`ix[i]` and `b[i]`, 12 bytes) in the
/// lines of the files calibrate writes (`memory.line_bytes` left out).
pub fn update_streamed_lines() -> f64 {
    numalab_sim::workload::RANDUPDT_STREAM_BYTES / numalab_sim::machine::DEFAULT_LINE_BYTES as f64
}

/// The independent random misses one core overlaps, from numa_test's
/// update in memory (`memory_ns`) and in cache (`cache_ns`): the misses
/// (a `miss` share of the updates) take `latency_ns` each, `mlp` at a
/// time, beside the update's own work and its streamed 12 bytes at
/// `stream_gbs`; at least 1, at most 64.
pub fn random_mlp(
    memory_ns: f64,
    cache_ns: f64,
    miss: f64,
    latency_ns: f64,
    stream_gbs: f64,
) -> f64 {
    let stream_ns = 12.0 / stream_gbs.max(0.01);
    let left = memory_ns - cache_ns - stream_ns;
    if left <= 0.0 {
        return 64.0;
    }
    (miss * latency_ns / left).clamp(1.0, 64.0)
}

/// One core's rate sweeping a buffer that fits its caches as the mem
/// benchmark's `op` does (`numalab_host::mem::sweep`), GB/s.
pub fn sweep_gbs(op: numalab_bench::mem::Op, budget: Duration) -> f64 {
    let mut v = vec![1u64; 32 << 10];
    let ns = ns_per_op(budget, || numalab_host::mem::sweep(&mut v, op));
    1.0 / ns
}

/// One core's zeroing rate in its caches, GB/s (the autonuma benchmarks'
/// memset over a buffer that fits).
pub fn memset_gbs(llc_bytes: u64, budget: Duration) -> f64 {
    let bytes = (256u64 << 10).min(llc_bytes.max(64 << 10));
    autonuma_run::measure_zeroing_bandwidth(1, bytes, llc_bytes, budget) / 1e9
}

/// One storm of [`msg_us`]: a message operation's microseconds, the
/// share of the storm's CPU time the kernel accounted as user time, and
/// its context switches per message operation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Storm {
    pub us: f64,
    pub user_share: f64,
    pub switches: f64,
}

/// One hackbench message's write or read with its share of the wakeup
/// and switch, in microseconds: `numalab __hackbench 1 LOOPS 20 100`
/// (numa_test's group of 20 senders and 20 receivers) with every process
/// on `cpu`, so the time is the sum of the operations: 2 x 20 x 20 x
/// LOOPS of them. With it, the share of that CPU time the kernel
/// accounted as user time (the rest is system time), and the storm's
/// context switches per operation (`getrusage` of the reaped storm).
pub fn msg_us(exe: &Path, cpu: u32, budget: Duration) -> std::io::Result<Storm> {
    const FDS: u64 = 20;
    let mut loops = 10u64;
    loop {
        let before = numalab_linux::child::reaped_children_cpu_s()?;
        let switched = numalab_linux::child::reaped_children_switches()?;
        let h = hackbench_storm(exe, cpu, loops, FDS)?;
        let share = user_share(before)?;
        let ops = (2 * FDS * FDS * loops) as f64;
        let switches = numalab_linux::child::reaped_children_switches()?.saturating_sub(switched);
        // Long enough that starting 40 processes is a small part of it.
        if h >= budget.as_secs_f64() || loops >= 1 << 20 {
            return Ok(Storm {
                us: h / ops * 1e6,
                user_share: share,
                switches: switches as f64 / ops,
            });
        }
        loops = (loops as f64 * (budget.as_secs_f64() / h.max(1e-3)).clamp(2.0, 20.0)) as u64;
    }
}

/// A message's cost from storms that may have run in two modes: on one
/// CPU the kernel either lets a sender write on while its receivers wait
/// (a few switches per hundred operations) or switches to a woken
/// receiver at a third of them or more, each switch dearer than an
/// operation (in a 2-node TCG guest 4.5-5.0 us an operation at
/// 0.020-0.027 switches, 12.7-14.9 us at 0.34-0.44; docs/validation.md).
/// The benchmarks on several CPUs switched at 0.03-0.04 there, so the
/// figure is the median of the storms within twice the fewest switches
/// (and 0.01) an operation; `None` when every storm is among them.
pub fn fewest_switches(storms: &[Storm], how: &str) -> Option<(Figure, Figure)> {
    let fewest = storms
        .iter()
        .map(|s| s.switches)
        .fold(f64::INFINITY, f64::min);
    let limit = 2.0 * fewest + 0.01;
    let (kept, other): (Vec<Storm>, Vec<Storm>) = storms.iter().partition(|s| s.switches <= limit);
    if other.is_empty() || kept.is_empty() {
        return None;
    }
    let range = |v: &[Storm], f: fn(&Storm) -> f64| {
        let (lo, hi) = v
            .iter()
            .map(f)
            .fold((f64::INFINITY, 0.0f64), |(l, h), x| (l.min(x), h.max(x)));
        format!("{} to {}", round3(lo), round3(hi))
    };
    let us: Vec<f64> = kept.iter().map(|s| s.us).collect();
    let shares: Vec<f64> = kept.iter().map(|s| s.user_share).collect();
    let msg = Figure::of(
        &us,
        format!(
            "{how}; the {} of {} storms with the fewest context switches ({} an operation, {} us) where the others switched more ({} an operation, {} us): the benchmarks' runs switch as few",
            kept.len(),
            storms.len(),
            range(&kept, |s| s.switches),
            range(&kept, |s| s.us),
            range(&other, |s| s.switches),
            range(&other, |s| s.us),
        ),
    );
    let user = Figure::of(
        &shares,
        "the same storms: user CPU time over user and system (getrusage of the reaped hackbench)",
    );
    Some((msg, user))
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

/// Microseconds of a fork and exit of a small process (forkexec's parent
/// is one), reaped: `numalab __fork-us`, a fresh numalab that forks for
/// about `budget`. Not of calibrate itself, whose buffers make its own
/// fork many times dearer.
pub fn fork_us(exe: &Path, budget: Duration) -> std::io::Result<f64> {
    let mut cmd = Command::new(exe);
    cmd.arg("__fork-us")
        .arg(budget.as_millis().max(1).to_string())
        .stdin(Stdio::null())
        .stderr(Stdio::inherit());
    numalab_linux::child::die_with_parent(&mut cmd);
    let out = cmd.output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.trim()
        .strip_prefix("fork_us ")
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|v| out.status.success() && *v > 0.0)
        .ok_or_else(|| {
            std::io::Error::other(format!(
                "{} __fork-us: {} ({})",
                exe.display(),
                out.status,
                text.trim()
            ))
        })
}

/// A new benchmark task process's times, in microseconds: its launch
/// (`fork` + `execve`, until `spawn` returns: what a launcher spends per
/// process), its start (from the launch's beginning until it says its
/// threads run: what the runner waits for before a run's work begins)
/// and its exit (from its last word to its reaping). Each the median
/// over about `budget` (one slow start, the binary not yet in the page
/// cache, is not an average's business).
pub struct ProcessTimes {
    pub launch_us: f64,
    pub start_us: f64,
    pub exit_us: f64,
}

/// The plan of the smallest autonuma task: one thread zeroing one page
/// once, bound to `node`. What its process does before its threads run
/// (its plan parsed, its buffer mapped and bound, a thread created and
/// pinned, their ids said) is what every benchmark process of the
/// runner does before its work, less the work's own first touch.
pub fn smallest_task(node: u32) -> String {
    let plan = numalab_bench::autonuma::ProcPlan {
        process: 0,
        bytes: 4096,
        loops: 1,
        shared: false,
        threads: 1,
        process_cpus: None,
        thread_cpus: vec![None],
        memory: numalab_bench::autonuma::MemPlan::Bound { nodes: vec![node] },
        whole_first: false,
    };
    serde_json::to_string(&plan).expect("a plan serialises")
}

/// Times a benchmark task process's launch, start and exit
/// ([`ProcessTimes`]) over about `budget`, at least three times: the
/// smallest autonuma task ([`smallest_task`], bound to `node`), each of
/// its lines read as the runner reads them, timestamped as they arrive.
pub fn process_us(exe: &Path, node: u32, budget: Duration) -> std::io::Result<ProcessTimes> {
    use std::io::BufRead;
    let plan = smallest_task(node);
    let t0 = Instant::now();
    let (mut launch, mut start, mut exit) = (Vec::new(), Vec::new(), Vec::new());
    while t0.elapsed() < budget || launch.len() < 3 {
        let before = numalab_linux::perf::monotonic_ns();
        let t = Instant::now();
        let mut cmd = Command::new(exe);
        cmd.args(["__task", "autonuma", &plan])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        numalab_linux::child::die_with_parent(&mut cmd);
        let mut c = cmd.spawn()?;
        launch.push(t.elapsed().as_secs_f64() * 1e6);
        let (mut threads, mut last, mut done) = (None, before, false);
        // Reaped whatever the reading gave, so no child outlives an error.
        let out = std::io::BufReader::new(c.stdout.take().expect("piped"));
        let mut read = Ok(());
        for line in out.lines() {
            let now = numalab_linux::perf::monotonic_ns();
            match line {
                Ok(l) => {
                    last = now;
                    threads = threads.or(l.starts_with("threads ").then_some(now));
                    done |= l.starts_with("done ");
                }
                Err(e) => {
                    read = Err(e);
                    break;
                }
            }
        }
        let s = c.wait()?;
        read?;
        let reaped = numalab_linux::perf::monotonic_ns();
        let started = threads.filter(|_| s.success() && done).ok_or_else(|| {
            std::io::Error::other(format!(
                "{} __task autonuma (one page, one thread): {s}, {}",
                exe.display(),
                if done {
                    "its threads never said"
                } else {
                    "no report of its work"
                }
            ))
        })?;
        start.push((started - before) as f64 / 1e3);
        exit.push((reaped - last) as f64 / 1e3);
    }
    let median = |v: &[f64]| Figure::of(v, "").value;
    Ok(ProcessTimes {
        launch_us: median(&launch),
        start_us: median(&start),
        exit_us: median(&exit),
    })
}

/// The user share of the CPU time of the children reaped since
/// `before` (a [`numalab_linux::child::reaped_children_cpu_s`] reading).
fn user_share(before: (f64, f64)) -> std::io::Result<f64> {
    let after = numalab_linux::child::reaped_children_cpu_s()?;
    let (u, s) = (after.0 - before.0, after.1 - before.1);
    if u + s <= 0.0 {
        return Err(std::io::Error::other(
            "the children ran for no CPU time the kernel accounted",
        ));
    }
    Ok(u / (u + s))
}

/// Microseconds per child of forkexec's own driver (`numalab __forkexec
/// N 1 1 1`: fork, exec of `numalab __task burst 1`, exit, reaping, one
/// child at a time), with N sized to take about `budget`; and the share
/// of the driver's and its children's CPU time that was user time (the
/// dynamic loader's work in the child is; the fork, the execve and the
/// exit are system time).
pub fn forkexec_child_us(exe: &Path, budget: Duration) -> std::io::Result<(f64, f64)> {
    let mut children = 20u64;
    loop {
        let before = numalab_linux::child::reaped_children_cpu_s()?;
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
        let share = user_share(before)?;
        let per = elapsed / children as f64 * 1e6;
        if elapsed >= budget.as_secs_f64() / 2.0 || children >= 100_000 {
            return Ok((per, share));
        }
        children = ((budget.as_secs_f64() / per * 1e6) as u64).clamp(children * 2, 100_000);
    }
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

/// How many CPUs' worth of the spin loop every CPU of `cpus` gets when
/// all spin at once: their rates together over the first one's alone
/// (as many as there are CPUs on a machine that runs them all at once,
/// less with SMT siblings sharing cores, fewer on a guest whose vCPUs
/// outnumber the host CPUs it gets).
pub fn cpus_at_once(cpus: &[u32], budget: Duration) -> std::io::Result<f64> {
    let first = *cpus
        .first()
        .ok_or_else(|| std::io::Error::other("no CPUs"))?;
    let alone = on_cpu(first, move || placement_run::spin_rate(budget))?;
    let together = sum_at_once(cpus, |&c| {
        numalab_linux::numa::set_affinity(0, &[c])?;
        Ok(placement_run::spin_rate(budget))
    })?;
    Ok(together / alone.max(1e-9))
}

/// `f` of every item at once, each on a scoped thread of its own, summed;
/// the first error when one fails.
pub(crate) fn sum_at_once<T: Sync>(
    items: &[T],
    f: impl Fn(&T) -> std::io::Result<f64> + Sync,
) -> std::io::Result<f64> {
    let f = &f;
    let parts: Vec<std::io::Result<f64>> = std::thread::scope(|s| {
        let hs: Vec<_> = items.iter().map(|x| s.spawn(move || f(x))).collect();
        hs.into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(std::io::Error::other("a measuring thread panicked")))
            })
            .collect()
    });
    parts.into_iter().sum()
}

/// CPUs that can run at once, when a machine runs fewer than its
/// `ncpus`: `at_once` CPUs' worth of spinning measured with all of them
/// spinning ([`cpus_at_once`]), each expected at `smt` of its speed
/// alone (its SMT share, times the all-core frequency over the one-core
/// boost: 1 without SMT or boost). `None` when the figure is within 80%
/// of every CPU at that speed: all run at once.
pub fn run_at_once(at_once: f64, ncpus: usize, smt: f64) -> Option<usize> {
    let expected = ncpus as f64 * smt;
    if !(at_once.is_finite() && at_once < 0.8 * expected) {
        return None;
    }
    let n = ((at_once / smt).round() as usize).clamp(1, ncpus);
    (n < ncpus).then_some(n)
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

    /// Storms in two modes: the figure is the median of those with the
    /// fewest switches, as a 2-node TCG guest ran them; storms all in one
    /// mode keep the usual median.
    #[test]
    fn a_message_costs_what_the_storms_with_fewest_switches_took() {
        let s = |us, switches| Storm {
            us,
            user_share: 0.1,
            switches,
        };
        let storms = [
            s(7.245, 0.11),
            s(4.532, 0.02),
            s(12.7, 0.34),
            s(4.95, 0.027),
        ];
        let (msg, user) = fewest_switches(&storms, "x").unwrap();
        assert_eq!(msg.runs, 2);
        assert!(
            (msg.value - (4.532 + 4.95) / 2.0).abs() < 1e-9,
            "{}",
            msg.value
        );
        assert_eq!(user.runs, 2);
        assert!(msg.how.starts_with("x; the 2 of 4 storms"), "{}", msg.how);
        assert!(
            msg.how.contains("0.02 to 0.027 an operation"),
            "{}",
            msg.how
        );
        assert_eq!(
            fewest_switches(&[s(4.5, 0.02), s(4.9, 0.03), s(5.0, 0.045)], "x"),
            None
        );
        // No switches at all: within 0.01 of none is the same mode.
        assert_eq!(fewest_switches(&[s(0.7, 0.0), s(0.75, 0.008)], "x"), None);
    }

    /// A 4-vCPU guest on two host cores spins two CPUs' worth with all
    /// four at once: it runs two at once. A machine that runs all (less
    /// its SMT siblings' sharing, or a little noise) is left alone.
    #[test]
    fn fewer_cpus_than_the_machines_run_at_once_only_when_measured_so() {
        assert_eq!(run_at_once(2.02, 4, 1.0), Some(2));
        assert_eq!(run_at_once(1.1, 2, 1.0), Some(1));
        assert_eq!(run_at_once(3.7, 4, 1.0), None);
        assert_eq!(run_at_once(1.7, 2, 1.0), None);
        // Eight SMT threads at 0.6 each: 4.8 CPUs' worth, all running.
        assert_eq!(run_at_once(4.7, 8, 0.6), None);
        assert_eq!(run_at_once(2.4, 8, 0.6), Some(4));
        assert_eq!(run_at_once(f64::NAN, 4, 1.0), None);
        // Sixteen CPUs boosting to 3.5 GHz alone and 2.0 all at once:
        // 9.1 CPUs' worth is every one of them.
        assert_eq!(run_at_once(9.1, 16, 2.0 / 3.5), None);
        // Measured, it is a positive figure (how large is the machine's
        // to say, and a shared machine's load moves it); no CPUs, an error.
        let x = cpus_at_once(&[0], Duration::from_millis(20)).unwrap();
        assert!(x.is_finite() && x > 0.0, "one CPU against itself: {x}");
        assert!(cpus_at_once(&[], Duration::from_millis(20)).is_err());
    }

    #[test]
    fn the_update_curve_gives_the_cache_through_the_models_equation() {
        // In cache 2 ns, all misses 20 ns: halfway (11 ns) between 2 M
        // (8 ns) and 4 M (14 ns) elements, at half the log step: 2.83 M
        // elements, where half the updates hit: with the 12 streamed
        // bytes in 64-byte lines taking their places the cache is
        // (0.5 + 12/64 ln 2) x 8 x 2.83 M bytes (4 x 2.83 M without them).
        let c = [
            (1 << 20, 4.0),
            (2 << 20, 8.0),
            (4 << 20, 14.0),
            (8 << 20, 20.0),
        ];
        let bytes = update_cache_bytes(&c, 2.0).unwrap() as f64;
        let half = 0.5 + 12.0 / 64.0 * 2f64.ln();
        let want = 8.0 * half * (2.0f64 * (1 << 20) as f64) * 2f64.sqrt();
        assert!((bytes / want - 1.0).abs() < 1e-6, "{bytes} {want}");
        assert_eq!(update_cache_bytes(&c[2..], 2.0), None);
        assert_eq!(update_cache_bytes(&[(1 << 20, 2.5)], 2.0), None);
    }

    #[test]
    fn random_misses_in_flight_follow_from_the_update_times() {
        // 200 ns misses on every update, 2 ns of work, 12 bytes at 12
        // GB/s (1 ns): 13 ns an update is 20 in flight.
        assert!((random_mlp(13.0, 2.0, 1.0, 200.0, 12.0) - 20.0).abs() < 1e-9);
        // Every miss waited for: 1.
        assert_eq!(random_mlp(500.0, 2.0, 1.0, 200.0, 12.0), 1.0);
        assert_eq!(random_mlp(2.5, 2.0, 1.0, 200.0, 12.0), 64.0);
        let ns = randupdt_memory_ns(1 << 16);
        assert!(ns > 0.0 && ns < 1e4, "{ns}");
        let c = update_curve(1 << 20, &[0, 0]).unwrap();
        assert_eq!(c.len(), 1);
        assert!(c[0].1 > 0.0);
    }

    #[test]
    fn a_sweep_in_cache_is_timed_per_byte() {
        for op in numalab_bench::mem::Op::ALL {
            let g = sweep_gbs(op, Duration::from_millis(20));
            assert!(g > 0.1 && g < 10_000.0, "{} {g}", op.name());
        }
    }

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
        let t = thread_us(b);
        assert!((0.1..1e6).contains(&t), "{t}");
    }
}
