//! The `mem` benchmark on this machine, and the sweep `numalab calibrate`
//! measures bandwidth with.
//!
//! numalab runs `numalab __task mem PARAMS CPUS`: one process whose
//! threads each pin themselves to their CPU, allocate their buffer under
//! `set_mempolicy(MPOL_BIND, mem_node)` and first touch it, check where a
//! sample of its pages landed (`move_pages` with no target), wait for
//! each other at a barrier, and sweep. The process reports its progress
//! (sweeps done) and at the end the sweep phase's wall time, each
//! thread's own time and the share of sampled pages found on the memory
//! node; numalab turns that and the process's `wait4` times into the
//! record.

use crate::observe::Observer;
use crate::run::{progress_bar, RunSpec, TaskProcess};
use crate::{Error, Result};
use numalab_bench::mem::{Op, Params};
use numalab_bench::metrics::*;
use numalab_bench::Case;
use numalab_linux::numa;
use numalab_record::{Outcome, ProcessInfo, RunRecord};
use numalab_topology::MachineInfo;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

const MPOL_DEFAULT: i32 = 0;
const MPOL_BIND: i32 = 2;

/// A buffer of `words` u64 whose pages are all on `node`: allocated and
/// first touched by the calling thread under `MPOL_BIND`, the thread's
/// policy reset after and the buffer's whole pages bound there as the
/// mapping's own policy, so NUMA balancing neither scans nor migrates
/// them (a reset thread policy alone had let it move a remote buffer
/// home within a second).
pub fn on_node(node: u32, words: usize, fill: impl Fn(usize) -> u64) -> std::io::Result<Vec<u64>> {
    numa::set_mempolicy(MPOL_BIND, &[node])?;
    let v: Vec<u64> = (0..words).map(fill).collect();
    numa::set_mempolicy(MPOL_DEFAULT, &[])?;
    numa::bind_to_node(&v, node)?;
    Ok(v)
}

/// Sweep `v` once as `op` does; returns the bytes of buffer swept.
pub fn sweep(v: &mut [u64], op: Op) -> u64 {
    match op {
        Op::Read => {
            // Four independent sums, so the loads are not serialised by
            // the additions.
            let mut s = [0u64; 4];
            for c in v.chunks_exact(4) {
                s[0] = s[0].wrapping_add(c[0]);
                s[1] = s[1].wrapping_add(c[1]);
                s[2] = s[2].wrapping_add(c[2]);
                s[3] = s[3].wrapping_add(c[3]);
            }
            std::hint::black_box(s);
        }
        Op::Write => {
            for w in v.iter_mut() {
                *w = w.wrapping_add(1);
            }
            std::hint::black_box(&mut *v);
        }
        Op::Memset => {
            // The C library's memset of zeros, as numa01.c's bzero and the
            // autonuma benchmarks' loops (Rust's fill of u64 is a loop of
            // stores; a fill of its bytes is one memset). Zeros, not a
            // pattern: on some machines a whole line of zeros is written
            // twice as fast as any other value (docs/validation.md,
            // "Zeros are written faster"), and calibrate's bandwidth must
            // be the one numa01 and numa02 see.
            numalab_linux::mmap::fill_bytes(v, 0);
            std::hint::black_box(&mut *v);
        }
    }
    (v.len() * 8) as u64
}

/// Aggregate bandwidth of `threads` threads of this process sweeping
/// memory as `op` does, in bytes of buffer per second, measured for
/// about `duration`: the basis of the default loop counts. Each thread
/// sweeps its own buffer, faulted in before timing.
///
/// The buffers add up to the benchmark's `working_set` (distinct bytes it
/// sweeps) when that fits in the last-level cache (`llc_bytes`), so a
/// small run is timed at cache speed, as it will run; otherwise to at
/// least twice the LLC (256 MiB at least, the working set at most), so
/// a large one is timed at memory speed.
pub fn measure_sweep(
    op: Op,
    threads: u32,
    working_set: u64,
    llc_bytes: u64,
    duration: Duration,
) -> f64 {
    let threads = threads.max(1);
    let total = if working_set <= llc_bytes {
        working_set
    } else {
        working_set.min((256u64 << 20).max(2 * llc_bytes))
    };
    let words = ((total / threads as u64).max(64 << 10) / 8) as usize;
    let barrier = Barrier::new(threads as usize);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let barrier = &barrier;
                s.spawn(move || {
                    // Ones, not zeros: every page faulted in now.
                    let mut v = vec![1u64; words];
                    barrier.wait();
                    let t0 = Instant::now();
                    let mut bytes = 0u64;
                    while t0.elapsed() < duration {
                        bytes += sweep(&mut v, op);
                    }
                    bytes as f64 / t0.elapsed().as_secs_f64()
                })
            })
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).sum()
    })
}

/// Share of up to 64 pages of `v`, spread over it, found on `node`.
fn share_on_node(v: &[u64], node: u32) -> f64 {
    let page = numa::page_size();
    let bytes = v.len() * 8;
    let pages = (bytes / page).max(1);
    let step = pages.div_ceil(64);
    let base = v.as_ptr() as *const u8;
    let ptrs: Vec<*const u8> = (0..pages)
        .step_by(step)
        // Addresses within the slice, for the kernel to look up.
        .map(|i| base.wrapping_add((i * page).min(bytes - 1)))
        .collect();
    match numa::page_nodes(0, &ptrs) {
        Ok(st) if !st.is_empty() => {
            st.iter().filter(|&&n| n == node as i32).count() as f64 / st.len() as f64
        }
        _ => f64::NAN,
    }
}

/// How long the sweeps go on.
#[derive(Debug, Clone, Copy)]
pub enum Until {
    /// Exactly this many sweeps each (the benchmark).
    Loops(u64),
    /// Whole sweeps until this much time has passed (calibrate).
    Budget(Duration),
}

/// What one sweep phase did.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    /// From the barrier (all threads have their memory) to the last end.
    pub elapsed_s: f64,
    /// Each thread's own sweep time.
    pub thread_s: Vec<f64>,
    /// Each thread's bytes swept.
    pub thread_bytes: Vec<u64>,
    /// Share of sampled pages found on the memory node, over all threads.
    pub on_node: f64,
    /// Each thread's allocation and first touch of its buffer (page
    /// faults included), seconds.
    #[serde(default)]
    pub touch_s: Vec<f64>,
}

impl Report {
    pub fn bytes(&self) -> u64 {
        self.thread_bytes.iter().sum()
    }

    /// Bytes per second of all threads together.
    pub fn bandwidth(&self) -> f64 {
        self.bytes() as f64 / self.elapsed_s.max(1e-9)
    }
}

/// Run one sweep phase here: a thread pinned to each of `cpus`, each
/// with its own `bytes` on `node`; `done` counts finished sweeps.
pub fn sweep_threads(
    cpus: &[u32],
    node: u32,
    bytes: u64,
    op: Op,
    until: Until,
    done: &AtomicU64,
    stop: &AtomicBool,
) -> std::io::Result<Report> {
    let barrier = Barrier::new(cpus.len());
    let words = (bytes / 8).max(4) as usize;
    type Done = (Instant, Instant, u64, f64, f64);
    let results: Vec<std::io::Result<Done>> = std::thread::scope(|s| {
        let handles: Vec<_> = cpus
            .iter()
            .enumerate()
            .map(|(i, &cpu)| {
                let barrier = &barrier;
                s.spawn(move || {
                    numalab_linux::child::set_task_name(&format!("mem-{}", i + 1));
                    let prepared = numa::set_affinity(0, &[cpu]).and_then(|_| {
                        let t = Instant::now();
                        on_node(node, words, |w| w as u64).map(|v| (v, t.elapsed().as_secs_f64()))
                    });
                    // Every thread reaches the barrier, failed or not: it
                    // opens when all have their memory.
                    barrier.wait();
                    let (mut v, touch) = prepared?;
                    let t0 = Instant::now();
                    let mut swept = 0u64;
                    let mut k = 0u64;
                    loop {
                        let go_on = match until {
                            Until::Loops(n) => k < n,
                            Until::Budget(d) => t0.elapsed() < d,
                        };
                        if !go_on || stop.load(Ordering::Relaxed) {
                            break;
                        }
                        k += 1;
                        swept += sweep(&mut v, op);
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                    let end = Instant::now();
                    Ok((t0, end, swept, share_on_node(&v, node), touch))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(std::io::Error::other("a sweep thread panicked")))
            })
            .collect()
    });
    let mut r = Report {
        elapsed_s: 0.0,
        thread_s: Vec::new(),
        thread_bytes: Vec::new(),
        on_node: 0.0,
        touch_s: Vec::new(),
    };
    let mut placed = Vec::new();
    let mut spans = Vec::new();
    for x in results {
        let (t0, end, b, p, touch) = x?;
        r.touch_s.push(touch);
        r.thread_s.push((end - t0).as_secs_f64());
        r.thread_bytes.push(b);
        placed.push(p);
        spans.push((t0, end));
    }
    // From the barrier's opening (the first thread's start) to the last end.
    if let (Some(first), Some(last)) = (
        spans.iter().map(|s| s.0).min(),
        spans.iter().map(|s| s.1).max(),
    ) {
        r.elapsed_s = (last - first).as_secs_f64();
    }
    r.on_node = placed.iter().sum::<f64>() / placed.len().max(1) as f64;
    Ok(r)
}

/// Bytes per second of a thread on each of `cpus`, each sweeping its own
/// `bytes_each` on `node` for about `budget` (numalab calibrate), in a
/// process of its own (`exe __task mem PARAMS CPUS SECONDS`) as the mem
/// benchmark and the validation set sweep: a sweep in a fresh process
/// and one in a process that has already swept and freed other buffers
/// are not the same work everywhere (in a TCG guest the fresh process
/// zeroed 256 MiB at 7.6-9.5 GB/s in 7 of 10 runs where calibrate's own
/// process always got 12.6, docs/validation.md).
pub fn bandwidth(
    exe: &Path,
    cpus: &[u32],
    node: u32,
    bytes_each: u64,
    op: Op,
    budget: Duration,
) -> std::io::Result<f64> {
    let r = in_child(exe, cpus, node, bytes_each, op, Until::Budget(budget))?;
    // Each thread's own rate, summed: a thread that got its memory later
    // than the others does not count the wait.
    Ok(r.thread_bytes
        .iter()
        .zip(&r.thread_s)
        .map(|(&b, &s)| b as f64 / s.max(1e-9))
        .sum())
}

/// Bytes per second of one thread on `cpu` allocating and first touching
/// `bytes` bound to `node`, page faults included, in a process of its
/// own as every benchmark first touches its memory (numalab calibrate's
/// `costs.first_touch_gbs`: in a TCG guest the benchmarks' processes
/// spent 0.1-0.3 s of system time on 62-125 MiB where calibrate's own
/// process touched at 2 GB/s).
pub fn first_touch(exe: &Path, cpu: u32, node: u32, bytes: u64) -> std::io::Result<f64> {
    let r = in_child(exe, &[cpu], node, bytes, Op::Read, Until::Loops(0))?;
    match r.touch_s.first() {
        Some(&s) if s > 0.0 => Ok(bytes as f64 / s),
        _ => Err(std::io::Error::other(
            "the mem child reported no first touch",
        )),
    }
}

/// One sweep phase in `exe __task mem PARAMS CPUS [SECONDS]`: a process
/// of its own, as the mem benchmark runs.
fn in_child(
    exe: &Path,
    cpus: &[u32],
    node: u32,
    bytes_each: u64,
    op: Op,
    until: Until,
) -> std::io::Result<Report> {
    let p = Params {
        op,
        threads: cpus.len() as u32,
        // The child reads the CPUs from its argument; the node its CPUs
        // are on is the record's to say, and there is no record here.
        cpu_node: node,
        mem_node: node,
        bytes: bytes_each,
        loops: match until {
            Until::Loops(n) => n,
            Until::Budget(_) => 0,
        },
    };
    let mut cmd = Command::new(exe);
    cmd.args(["__task", "mem"])
        .arg(serde_json::to_string(&p).expect("params serialise"))
        .arg(numalab_topology::cpulist::format(cpus));
    if let Until::Budget(d) = until {
        cmd.arg(format!("{}", d.as_secs_f64()));
    }
    cmd.stderr(Stdio::inherit());
    let what = format!(
        "the mem threads on CPUs {}",
        numalab_topology::cpulist::format(cpus)
    );
    let mut proc: TaskProcess<Report> = TaskProcess::spawn(cmd, "progress", &what)
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    let exit = numalab_linux::child::wait4(proc.pid, true)?
        .ok_or_else(|| std::io::Error::other(format!("{what}: lost")))?;
    match proc.finish() {
        Some(r) if exit.success() && r.thread_bytes.len() == cpus.len() => Ok(r),
        _ => Err(std::io::Error::other(format!(
            "{what} ended with {} without a full report",
            exit.describe()
        ))),
    }
}

/// The sweeps' end in `__task mem`'s arguments: `loops` of the
/// parameters, or the seconds of a third argument (calibrate).
fn task_until(p: &Params, budget: Option<&String>) -> Option<Until> {
    match budget {
        None => Some(Until::Loops(p.loops)),
        Some(s) => {
            let secs: f64 = s.parse().ok()?;
            (secs.is_finite() && secs > 0.0 && secs < 3600.0)
                .then(|| Until::Budget(Duration::from_secs_f64(secs)))
        }
    }
}

/// `numalab __task mem PARAMS_JSON CPU,CPU,... [SECONDS]`: progress lines
/// (sweeps done), then `done <json>` ([`Report`]); with SECONDS, whole
/// sweeps for that long instead of the parameters' `loops`.
pub fn task_main(args: &[String]) -> i32 {
    let parsed = (|| {
        let p: Params = serde_json::from_str(args.first()?).ok()?;
        let cpus = numalab_topology::cpulist::parse(args.get(1)?).ok()?;
        let until = task_until(&p, args.get(2))?;
        (cpus.len() == p.threads as usize && args.len() <= 3).then_some((p, cpus, until))
    })();
    let Some((p, cpus, until)) = parsed else {
        numalab_linux::errln!("numalab: internal: usage: __task mem PARAMS_JSON CPU,... [SECONDS]");
        return 2;
    };
    let done = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let (d2, s2) = (done.clone(), stop.clone());
    let reporter = std::thread::spawn(move || {
        let stdout = std::io::stdout();
        let mut last = u64::MAX;
        while !s2.load(Ordering::Relaxed) {
            let k = d2.load(Ordering::Relaxed);
            if k != last {
                let mut out = stdout.lock();
                let _ = writeln!(out, "progress {k}");
                let _ = out.flush();
                last = k;
            }
            std::thread::park_timeout(Duration::from_millis(50));
        }
    });
    let never = AtomicBool::new(false);
    let r = sweep_threads(&cpus, p.mem_node, p.bytes, p.op, until, &done, &never);
    // Woken, the reporter ends now, not at its next look.
    stop.store(true, Ordering::Relaxed);
    reporter.thread().unpark();
    let _ = reporter.join();
    match r {
        Ok(r) => {
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            let _ = writeln!(out, "progress {}", done.load(Ordering::Relaxed));
            let _ = writeln!(
                out,
                "done {}",
                serde_json::to_string(&r).expect("report serialises")
            );
            0
        }
        Err(e) => {
            numalab_linux::errln!(
                "numalab: mem: {} threads with {} each on node {}: {e}",
                p.threads,
                numalab_topology::human_bytes(p.bytes),
                p.mem_node
            );
            1
        }
    }
}

/// Run the mem benchmark once.
pub fn run_mem(exe: &Path, machine: &MachineInfo, p: &Params, spec: &RunSpec) -> Result<RunRecord> {
    let topo = &machine.topology;
    p.check(topo).map_err(|e| Error::Other(e.to_string()))?;
    let cpus = p.cpus(topo).map_err(|e| Error::Other(e.to_string()))?;
    let mut rec = spec.new_record(&Case::Mem(p.clone()), machine);
    rec.backend.details_mut().insert(
        "thread_cpus".into(),
        numalab_topology::cpulist::format(&cpus).into(),
    );
    let observer = Observer::start(topo);
    let expected = p.threads as u64 * p.loops;
    let bar = progress_bar(expected, spec);
    let mut cmd = Command::new(exe);
    cmd.args(["__task", "mem"])
        .arg(serde_json::to_string(p).expect("params serialise"))
        .arg(
            cpus.iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(","),
        )
        .stderr(Stdio::inherit());
    let start = Instant::now();
    let mut proc: TaskProcess<Report> = TaskProcess::spawn(cmd, "progress", "the mem threads")?;
    let pid = proc.pid;
    let (exit, ended_s, sampled) = crate::run::wait_sampling(
        &mut proc,
        "the mem threads",
        start,
        spec,
        &bar,
        &observer,
        &mut rec,
    )?;
    let report = proc.finish();
    rec.processes.push(ProcessInfo {
        index: 0,
        name: format!("mem, {} threads", p.threads),
        pid: Some(pid),
    });
    let vm = observer.vmstat_delta();
    let done = proc.done();
    crate::record_end_only(
        &mut rec,
        crate::EndOnly {
            name: format!("mem {} x {} threads", p.op.name(), p.threads),
            pid: Some(pid),
            why: "threads pinned to their CPUs, memory bound",
            exit: &exit,
            work_done: done,
            work_expected: expected,
        },
        sampled,
        ended_s,
        vec![done],
        &vm,
    );
    match report {
        Some(r) if exit.success() && r.thread_bytes.len() == p.threads as usize => {
            ELAPSED_S.put(&mut rec.metrics, r.elapsed_s);
            BANDWIDTH_GBS.put(&mut rec.metrics, r.bandwidth() / 1e9);
            let per: Vec<Option<f64>> = r
                .thread_bytes
                .iter()
                .zip(&r.thread_s)
                .map(|(&b, &s)| (s > 0.0).then(|| b as f64 / s / 1e9))
                .collect();
            for (m, value) in crate::autonuma_run::thread_bandwidth(&per) {
                m.put(&mut rec.metrics, value);
            }
            rec.backend
                .details_mut()
                .insert("pages_on_mem_node".into(), r.on_node.into());
            if r.on_node < 0.99 {
                rec.warnings.push(format!(
                    "only {:.0}% of the sampled pages are on node {}: the memory node was short of free memory",
                    r.on_node * 100.0,
                    p.mem_node
                ));
            }
        }
        Some(_) | None => {
            rec.outcome = Outcome::failed(format!(
                "the mem threads ended with {} without a full report",
                exit.describe()
            ));
        }
    }
    Ok(rec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_after_the_cpus_replace_the_loops_and_bad_ones_are_refused() {
        let p = Params {
            op: Op::Read,
            threads: 1,
            cpu_node: 0,
            mem_node: 0,
            bytes: 1 << 20,
            loops: 7,
        };
        assert!(matches!(task_until(&p, None), Some(Until::Loops(7))));
        assert!(matches!(
            task_until(&p, Some(&"0.25".to_string())),
            Some(Until::Budget(d)) if d == Duration::from_millis(250)
        ));
        for bad in ["0", "-1", "NaN", "inf", "x", "1e9", ""] {
            assert!(task_until(&p, Some(&bad.to_string())).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn every_op_sweeps_the_whole_buffer() {
        let mut v = vec![1u64; 1024];
        assert_eq!(sweep(&mut v, Op::Read), 8192);
        assert_eq!(v[5], 1, "a read changes nothing");
        sweep(&mut v, Op::Write);
        assert!(v.iter().all(|&w| w == 2), "a write adds one to every word");
        sweep(&mut v, Op::Memset);
        assert!(v.iter().all(|&w| w == 0), "a memset zeroes every word");
    }

    /// The buffer's mapping carries the bind itself (numa_maps shows
    /// `bind:N` for it), not only the thread's reset policy: NUMA
    /// balancing skips such a VMA (vma_policy_mof) and leaves the
    /// memory where the benchmark put it.
    #[test]
    fn the_buffer_is_bound_as_a_mapping_policy() {
        let v = on_node(0, 4 << 20, |w| w as u64).unwrap();
        let page = numa::page_size();
        let inside = (v.as_ptr() as usize).next_multiple_of(page) + page;
        let maps = std::fs::read_to_string("/proc/self/numa_maps").unwrap();
        // The VMA that starts at or below the buffer's second page and is
        // the last such: numa_maps lists VMAs by start address.
        let line = maps
            .lines()
            .rfind(|l| {
                l.split_whitespace()
                    .next()
                    .and_then(|a| usize::from_str_radix(a, 16).ok())
                    .is_some_and(|a| a <= inside)
            })
            .unwrap();
        assert!(line.contains(" bind:0"), "{line}");
    }

    #[test]
    fn a_phase_counts_each_threads_sweeps() {
        let (done, stop) = (AtomicU64::new(0), AtomicBool::new(false));
        let r =
            sweep_threads(&[0, 0], 0, 1 << 20, Op::Read, Until::Loops(3), &done, &stop).unwrap();
        assert_eq!(done.load(Ordering::Relaxed), 6);
        assert_eq!(r.thread_bytes, vec![3 << 20, 3 << 20]);
        assert!(r.elapsed_s > 0.0 && r.elapsed_s >= r.thread_s[0] * 0.99);
        assert!(r.on_node > 0.99, "{}", r.on_node);
        // A budget sweeps whole buffers until it has passed (calibrate's
        // child; its process is tried by the calibrate tests).
        let budget = Duration::from_millis(20);
        let r = sweep_threads(
            &[0],
            0,
            1 << 20,
            Op::Memset,
            Until::Budget(budget),
            &done,
            &stop,
        )
        .unwrap();
        assert!(r.thread_bytes[0] >= 1 << 20, "{:?}", r.thread_bytes);
        assert!(r.thread_s[0] >= budget.as_secs_f64(), "{:?}", r.thread_s);
    }
}
