//! Memory figures, as Intel's Memory Latency Checker and lmbench measure
//! them: the idle load latency from a CPU of one node to memory of
//! another (a chase of dependent loads through a random cycle of cache
//! lines, so neither the prefetchers nor the out-of-order core can overlap
//! two misses), and the bandwidth of one thread and of all of a node's
//! CPUs reading and zeroing a buffer on their own node.
//!
//! Memory goes where it is asked by the touching thread's policy
//! (`set_mempolicy(MPOL_BIND)` before the first touch, reset after), CPUs
//! by affinity; both are restored before returning. Everything here is
//! safe Rust over `Vec`s: a chase's bounds check is one predictable
//! branch beside a 100-ns miss.

use crate::figure::Figure;
use numalab_bench::mem::Op;
use numalab_host::mem::on_node;
use numalab_linux::numa;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// u64 words per 64-byte cache line.
const LINE_WORDS: usize = 8;

/// Pin the calling thread to `cpus`; returns the affinity to restore.
pub(crate) fn pin(cpus: &[u32]) -> std::io::Result<Vec<u32>> {
    let old = numa::get_affinity(0)?;
    numa::set_affinity(0, cpus)?;
    Ok(old)
}

/// A single random cycle through `lines` cache lines (Sattolo's
/// algorithm: every line is visited before the chase repeats), as the
/// index of each line's successor; deterministic for a given size.
fn cycle(lines: usize) -> Vec<u32> {
    let mut p: Vec<u32> = (0..lines as u32).collect();
    let mut x: u64 = 0x2545_f491_4f6c_dd1d ^ lines as u64;
    for i in (1..lines).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let j = (x % i as u64) as usize;
        p.swap(i, j);
    }
    p
}

/// A pointer-chase buffer of `bytes` on `node`: word `LINE_WORDS * i`
/// holds the word index of line i's successor.
pub struct Chase {
    words: Vec<u64>,
    pub bytes: u64,
}

impl Chase {
    pub fn on(node: u32, bytes: u64) -> std::io::Result<Chase> {
        let lines = ((bytes / 64) as usize).max(2);
        let next = cycle(lines);
        let words = on_node(node, lines * LINE_WORDS, |w| {
            if w % LINE_WORDS == 0 {
                next[w / LINE_WORDS] as u64 * LINE_WORDS as u64
            } else {
                0
            }
        })?;
        Ok(Chase {
            words,
            bytes: (lines * 64) as u64,
        })
    }

    /// Nanoseconds per dependent load, chasing for about `budget` from
    /// the calling thread's CPU.
    pub fn ns_per_load(&self, budget: Duration) -> f64 {
        let w = &self.words;
        let mut i = 0usize;
        // Warm the TLB and caches for the chase's own footprint.
        for _ in 0..(w.len() / LINE_WORDS).min(1 << 20) {
            i = w[i] as usize;
        }
        crate::figure::ns_per_op(budget, || {
            const STEPS: u64 = 1 << 16;
            for _ in 0..STEPS {
                i = w[i] as usize;
            }
            i = std::hint::black_box(i);
            STEPS
        })
    }
}

/// Nanoseconds per dependent load over 1, 2, 4... MiB up to `max_bytes`
/// of `node`'s memory, from the calling thread (pinned by the caller).
pub fn latency_curve(
    node: u32,
    max_bytes: u64,
    budget: Duration,
) -> std::io::Result<Vec<(u64, f64)>> {
    let mut out = Vec::new();
    let mut size = 1u64 << 20;
    while size <= max_bytes {
        let chase = Chase::on(node, size)?;
        out.push((size, chase.ns_per_load(budget)));
        size *= 2;
    }
    Ok(out)
}

/// The cache this thread gets: the largest size of `curve` whose latency
/// is still below halfway from a cache hit (`hit_ns`, the curve's
/// smallest) to memory (`memory_ns`); `None` when even the smallest is
/// past it, or memory is no slower than the cache (an emulated machine).
pub fn effective_llc(curve: &[(u64, f64)], hit_ns: f64, memory_ns: f64) -> Option<u64> {
    if memory_ns <= hit_ns * 1.5 {
        return None;
    }
    let mid = hit_ns + (memory_ns - hit_ns) / 2.0;
    curve
        .iter()
        .take_while(|(_, ns)| *ns < mid)
        .last()
        .map(|(size, _)| *size)
}

/// Bytes per second of `cpus.len()` threads, one pinned to each CPU,
/// each sweeping its own `bytes_each` on `node` for about `budget`: the
/// `mem` benchmark's own sweep in a process of its own, as the benchmark
/// runs it (`exe` is numalab's binary; [`numalab_host::mem`]).
pub fn bandwidth(
    exe: &std::path::Path,
    cpus: &[u32],
    node: u32,
    bytes_each: u64,
    op: Op,
    budget: Duration,
) -> std::io::Result<f64> {
    numalab_host::mem::bandwidth(exe, cpus, node, bytes_each, op, budget)
}

/// What reading the clock twice costs: the least of many back-to-back
/// readings, taken off each timed round trip of [`line_transfer_ns`].
fn clock_ns() -> f64 {
    (0..1000)
        .map(|_| {
            let t = Instant::now();
            t.elapsed().as_nanos() as f64
        })
        .fold(f64::INFINITY, f64::min)
}

/// Nanoseconds for a cache line to go from one CPU to another: two
/// threads pinned to `a` and `b` pass a counter back and forth through
/// one atomic word for about `budget`; half a round trip is one transfer
/// (the fastest round trip, less the clock's own cost).
pub fn line_transfer_ns(a: u32, b: u32, budget: Duration) -> std::io::Result<f64> {
    let word = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicU64::new(0));
    let (w2, s2) = (word.clone(), stop.clone());
    let other = std::thread::spawn(move || -> std::io::Result<()> {
        numa::set_affinity(0, &[b])?;
        // Answer every odd value with the next even one.
        while s2.load(Ordering::Relaxed) == 0 {
            let v = w2.load(Ordering::Acquire);
            if v % 2 == 1 {
                w2.store(v + 1, Ordering::Release);
            } else {
                std::hint::spin_loop();
            }
        }
        Ok(())
    });
    let old = pin(&[a])?;
    let clock = clock_ns();
    let t0 = Instant::now();
    let mut v = 0u64;
    // A round trip that takes a second means the other thread is not
    // running (a starved vCPU): give up rather than hang.
    let give_up = budget * 10;
    // Each round trip timed alone, the fastest kept: whatever else happens
    // (the host descheduling either thread, a guest's vCPUs on a busy
    // host) only adds time, and one undisturbed round trip is the line's
    // own cost, as lmbench keeps the best of its repetitions. Batches of
    // 64 round trips, timed together, had none undisturbed in a 2-vCPU
    // guest on a host with a load of 10 on 2 cores: "transfers" of 7.7 ms.
    let mut fastest = f64::INFINITY;
    loop {
        let t = Instant::now();
        word.store(v + 1, Ordering::Release);
        while word.load(Ordering::Acquire) != v + 2 {
            std::hint::spin_loop();
            if t.elapsed() > give_up {
                stop.store(1, Ordering::Relaxed);
                let _ = other.join();
                let _ = numa::set_affinity(0, &old);
                return Err(std::io::Error::other(format!(
                    "CPU {b} did not answer CPU {a} for {} s",
                    give_up.as_secs()
                )));
            }
        }
        fastest = fastest.min(t.elapsed().as_nanos() as f64);
        v += 2;
        if t0.elapsed() >= budget {
            break;
        }
    }
    // A clock slower than the trip leaves the floor.
    let ns = ((fastest - clock) / 2.0).max(0.1);
    stop.store(1, Ordering::Relaxed);
    other
        .join()
        .map_err(|_| std::io::Error::other("the ping-pong thread panicked"))??;
    numa::set_affinity(0, &old)?;
    Ok(ns)
}

/// Repeat `f` `runs` times into a [`Figure`]; when three or more runs
/// spread beyond [`crate::figure::UNSTEADY`], as many again, once: the
/// median of twice the runs is less often the minority of two modes (a
/// TCG guest's hackbench message came out 6.2 and 8.9 us with spreads of
/// 48% and 29% of three runs, 2026-11-28). The file still names the
/// figure unsteady if the runs together spread as far.
pub fn repeat(
    runs: usize,
    how: String,
    mut f: impl FnMut() -> std::io::Result<f64>,
) -> std::io::Result<Figure> {
    let mut v = Vec::with_capacity(2 * runs);
    for _ in 0..runs {
        v.push(f()?);
    }
    if runs >= 3 && Figure::of(&v, "").spread > crate::figure::UNSTEADY {
        for _ in 0..runs {
            v.push(f()?);
        }
    }
    Ok(Figure::of(&v, how))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Steady runs are taken once; runs that spread beyond UNSTEADY are
    /// taken again as many times, and the figure is their median.
    #[test]
    fn unsteady_runs_are_taken_twice_as_many_times() {
        let calls = |values: Vec<f64>| {
            let mut it = values.into_iter();
            let mut n = 0;
            let f = repeat(3, "x".into(), || {
                n += 1;
                Ok(it.next().unwrap())
            })
            .unwrap();
            (n, f.runs, f.value)
        };
        assert_eq!(calls(vec![1.0, 1.1, 1.05]), (3, 3, 1.05));
        assert_eq!(calls(vec![1.0, 2.0, 1.0, 1.0, 1.1, 1.0]), (6, 6, 1.0));
        // One run alone has no spread to judge.
        let mut n = 0;
        let f = repeat(1, "x".into(), || {
            n += 1;
            Ok(1.0)
        })
        .unwrap();
        assert_eq!((n, f.runs), (1, 1));
    }

    #[test]
    fn the_cycle_visits_every_line_once() {
        for n in [2usize, 3, 64, 1000] {
            let p = cycle(n);
            let mut seen = vec![false; n];
            let mut i = 0;
            for _ in 0..n {
                assert!(!seen[i], "line {i} visited twice of {n}");
                seen[i] = true;
                i = p[i] as usize;
            }
            assert_eq!(i, 0, "back at the start after {n} steps");
            assert!(seen.iter().all(|&s| s));
        }
    }

    #[test]
    fn a_chase_beyond_the_caches_is_slower_than_one_inside_them() {
        let node = 0;
        let small = Chase::on(node, 16 << 10).unwrap();
        let big = Chase::on(node, 256 << 20).unwrap();
        let s = small.ns_per_load(Duration::from_millis(50));
        let b = big.ns_per_load(Duration::from_millis(100));
        assert!(
            s > 0.1 && b > 2.0 * s,
            "16 KiB {s:.2} ns, 256 MiB {b:.2} ns"
        );
    }

    #[test]
    fn the_effective_llc_is_where_latency_passes_halfway_to_memory() {
        let c = [
            (1 << 20, 12.0),
            (2 << 20, 13.0),
            (4 << 20, 40.0),
            (8 << 20, 90.0),
        ];
        // Halfway from 10 to 100 ns: 55; 4 MiB is still below it.
        assert_eq!(effective_llc(&c, 10.0, 100.0), Some(4 << 20));
        assert_eq!(effective_llc(&c, 10.0, 20.0), Some(2 << 20));
        assert_eq!(effective_llc(&c[2..], 10.0, 60.0), None);
        // Memory no slower than the cache: nothing to find.
        assert_eq!(effective_llc(&c, 10.0, 12.0), None);
        let real = latency_curve(0, 2 << 20, Duration::from_millis(5)).unwrap();
        assert_eq!(real.len(), 2);
        assert!(real.iter().all(|(_, ns)| *ns > 0.0));
    }
}
