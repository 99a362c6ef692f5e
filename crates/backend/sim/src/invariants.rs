//! Model-level invariants: properties that must hold whatever the
//! parameters, chosen so that the model can neither invent a NUMA effect
//! (equal costs give equal results; a balancer with nothing to gain gains
//! nothing) nor hide one (slower remote memory is never faster, a shared
//! resource never carries more than its bandwidth). Each test names the
//! invariant it checks; docs/simulator.md lists them ("Model invariants
//! (tested)"). Small machines and short runs, so that all of them take a
//! few seconds in release mode.

use crate::engine::{Engine, Parent, TaskState, Work, World};
use crate::machine::{Machine, MachineFile};
use crate::workload::{add_region, add_task};
use crate::{balance, run, sched, PolicySpec, SimConfig, CHUNK_BYTES};
use numalab_bench::autonuma::{Kind, Placement as BindMode};
use numalab_bench::numa_test::Disturb;
use numalab_bench::placement::{CpuSet, SpinParams};
use numalab_bench::Case;
use numalab_record::{Repetition, RunRecord};
use rand_core::SeedableRng;
use std::collections::VecDeque;

const REP: Repetition = Repetition { index: 1, of: 1 };
const TICK_S: f64 = 1e-3;

/// A machine of `nodes` x `cores` x `threads`, memory `local` ns away on
/// the own node and `remote` ns on the others, `bw` GB/s per node ("inf":
/// unlimited), fixed frequency; `extra` is appended (e.g. `[[bus]]`).
fn machine(
    nodes: usize,
    cores: usize,
    threads: usize,
    local: f64,
    remote: f64,
    bw: &str,
    extra: &str,
) -> Machine {
    let lat: Vec<Vec<f64>> = (0..nodes)
        .map(|i| {
            (0..nodes)
                .map(|j| if i == j { local } else { remote })
                .collect()
        })
        .collect();
    let text = format!(
        r#"
name = "inv"
[topology]
nodes = {nodes}
cores_per_node = {cores}
threads_per_core = {threads}
memory_per_node_gib = 4
[memory]
local_latency_ns = {local}
latency_ns = {lat:?}
bandwidth_gbs = {bw}
mlp = 8
[cache]
llc_mib = 1
llc_hit_ns = 10
cross_llc_ns = 60
[cpu]
base_ghz = 2
max_ghz = 2
min_ghz = 2
smt_throughput = 0.6
{extra}
"#
    );
    MachineFile::parse("inv", &text)
        .and_then(|f| f.build("inv"))
        .unwrap_or_else(|e| panic!("{e}"))
}

fn config(m: Machine, sched: &str, bal: &str) -> SimConfig {
    crate::tests::config(m, sched, bal, 1)
}

fn go(m: &Machine, sched: &str, bal: &str, case: &Case) -> RunRecord {
    let cfg = config(m.clone(), sched, bal);
    let r = run(&cfg, case, "x", REP, &mut |_| {}, &|| false)
        .unwrap_or_else(|e| panic!("{sched} {bal} {case:?}: {e}"))
        .record;
    assert!(r.outcome.is_ok(), "{sched} {bal} {case:?}: {:?}", r.outcome);
    r
}

fn metric(r: &RunRecord, k: &str) -> f64 {
    r.metric(k).unwrap_or_else(|| panic!("no metric {k}"))
}

use crate::tests::auto;

fn numa_test(tasks: u32, size: u64) -> Case {
    crate::tests::numa_test(tasks, size, Disturb::None)
}

fn spin(tasks: u32, mcycles: u64) -> Case {
    Case::Spin(SpinParams {
        tasks,
        iterations: (mcycles as f64 * 1e6 / numalab_bench::placement::SPIN_CYCLES_PER_ITERATION)
            as u64,
        set: CpuSet {
            name: "all".into(),
            cpus: None,
        },
    })
}

fn names(l: Vec<(String, String, String)>) -> Vec<String> {
    l.into_iter().map(|(n, _, _)| n).collect()
}

/// `a` and `b` equal within a relative `tol` (and a tick, for times).
fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * a.abs().max(b.abs()) + TICK_S
}

/// Equal costs: with remote memory as fast as local and unlimited
/// bandwidth, where the memory is (bound to the threads' nodes or to the
/// other nodes, threads pinned alike) changes nothing. With a remote
/// penalty the same runs differ: the test has teeth. (`default` pins no
/// thread, so it differs from the bound modes by scheduling, not memory.)
#[test]
fn equal_costs_give_every_bind_mode_the_same_time() {
    let flat = machine(2, 2, 1, 100.0, 100.0, "inf", "");
    let numa = machine(2, 2, 1, 100.0, 200.0, "inf", "");
    for kind in [Kind::Numa01, Kind::Numa01ThreadAlloc, Kind::Numa02] {
        let time = |m: &Machine, p: BindMode| {
            metric(
                &go(m, "linux", "none", &auto(kind, p, 4, 64 << 20, 20)),
                "elapsed_s",
            )
        };
        let (b, i) = (
            time(&flat, BindMode::Bind),
            time(&flat, BindMode::InverseBind),
        );
        assert!(
            close(b, i, 1e-9),
            "{kind:?}: equal costs, but bind takes {b} s and inverse-bind {i} s"
        );
        let (bind, inverse) = (
            time(&numa, BindMode::Bind),
            time(&numa, BindMode::InverseBind),
        );
        assert!(
            inverse > bind * 1.2,
            "{kind:?}: remote 2x local, but bind {bind} s vs inverse-bind {inverse} s"
        );
    }
}

/// Equal costs: numa_test's total user time (the seed's TU) is the same
/// under every scheduler and every balancer when remote memory costs what
/// local memory does; with a remote penalty, node-blind placement costs
/// more than the node-affine one.
#[test]
fn equal_costs_give_every_scheduler_and_balancer_the_same_user_time() {
    let flat = machine(2, 2, 1, 100.0, 100.0, "inf", "");
    let case = numa_test(4, 200_000);
    let mut seen = Vec::new();
    for s in names(sched::list(&flat)) {
        for b in names(balance::list(&flat)) {
            let r = go(&flat, &s, &b, &case);
            seen.push((format!("{s}/{b}"), metric(&r, "user_s")));
        }
    }
    let first = seen[0].1;
    assert!(
        seen.iter().all(|(_, u)| close(*u, first, 1e-3)),
        "equal costs, but total user time differs: {seen:?}"
    );
}

/// No balancer, no migration: under `none` no page moves, nothing is
/// charged as system time, and a process's memory on a node never
/// shrinks, whatever the scheduler.
#[test]
fn without_a_balancer_no_page_ever_moves() {
    let m = machine(2, 2, 2, 100.0, 200.0, "50", "");
    let cases = [
        auto(Kind::Numa01, BindMode::Default, 8, 64 << 20, 10),
        auto(Kind::Numa02, BindMode::Default, 8, 64 << 20, 10),
        auto(Kind::TwoHalves, BindMode::Default, 2, 64 << 20, 5),
        numa_test(10, 100_000),
    ];
    for s in names(sched::list(&m)) {
        for case in &cases {
            let r = go(&m, &s, "none", case);
            let what = format!("{s} {}", r.benchmark);
            assert_eq!(metric(&r, "numa_pages_migrated"), 0.0, "{what}");
            assert_eq!(metric(&r, "sys_s"), 0.0, "{what}");
            for w in r.series.samples.windows(2) {
                for (p, (a, b)) in w[0].memory_bytes.iter().zip(&w[1].memory_bytes).enumerate() {
                    for n in 0..a.len().min(b.len()) {
                        assert!(
                            b[n] >= a[n],
                            "{what}: process {p}'s memory on node {n} fell from {} to {} at {} s",
                            a[n],
                            b[n],
                            w[1].t_s
                        );
                    }
                }
            }
        }
    }
}

/// A world with `tasks` tasks, each pinned to its CPU, streaming or
/// reading at random `bytes` of memory placed on `mem_node`, with
/// `cycles_per_line` of compute per line. Returns the engine, ready.
fn streamers(
    m: &Machine,
    cpus: &[usize],
    mem_node: usize,
    bytes: u64,
    cycles_per_line: f64,
    random: bool,
) -> Engine {
    let mut w = World::new(
        m.clone(),
        1_000_000,
        CHUNK_BYTES,
        rand_chacha::ChaCha8Rng::seed_from_u64(1),
        false,
    );
    for (i, &cpu) in cpus.iter().enumerate() {
        let r = add_region(&mut w, i, bytes);
        let first = w.mem.regions[r].first;
        for c in 0..w.mem.regions[r].len {
            w.mem.allocate(m, first + c, mem_node);
        }
        let lines = bytes as f64 / m.line_bytes;
        let work = Work::Compute {
            init: VecDeque::new(),
            init_credit: 0.0,
            cycles: lines * cycles_per_line,
            rand_lines: if random { lines } else { 0.0 },
            stream_lines: if random { 0.0 } else { lines },
            stream: crate::engine::Stream::Stores,
            writeback_lines: 0.0,
            wss_bytes: bytes as f64,
            access: vec![(r, 1.0)],
        };
        let t = add_task(
            &mut w,
            format!("t{i}"),
            i,
            work,
            1,
            Parent::Cpu(cpu),
            true,
            0,
            true,
        );
        w.masks.push((0..m.ncpus).map(|c| c == cpu).collect());
        w.tasks[t].affinity = Some(w.masks.len() - 1);
    }
    Engine::new(
        w,
        sched::build(&PolicySpec::parse("linux").unwrap(), m).unwrap(),
        balance::build(&PolicySpec::parse("none").unwrap(), m).unwrap(),
    )
}

/// Run to the end; the elapsed seconds and the largest contention factor
/// seen on any path.
fn finish(mut e: Engine) -> (f64, f64) {
    let mut worst = 1.0f64;
    e.run(600_000_000_000, |w| {
        worst = w.contention.iter().fold(worst, |a, &b| a.max(b));
        true
    });
    assert!(e
        .w
        .tasks
        .iter()
        .filter(|t| t.main)
        .all(|t| t.state == TaskState::Done));
    let end = e.w.tasks.iter().filter_map(|t| t.end_ns).max().unwrap();
    (end as f64 / 1e9, worst)
}

/// Unlimited bandwidth: no contention factor ever leaves 1, and with no
/// compute the elapsed time is proportional to the memory latency (twice
/// the latency, twice the time), streamed or latency-bound, local or
/// remote. With a finite bandwidth the same load is contended.
#[test]
fn unlimited_bandwidth_keeps_contention_at_one_and_time_proportional_to_latency() {
    let bus = "[[bus]]\nname = \"fsb0\"\nbandwidth_gbs = inf\ncpu_nodes = [0]\n";
    for random in [false, true] {
        for node in [0, 1] {
            let what = format!("random={random}, memory on node {node}");
            let m1 = machine(2, 2, 1, 100.0, 170.0, "inf", bus);
            let m2 = machine(2, 2, 1, 200.0, 340.0, "inf", bus);
            let (t1, c1) = finish(streamers(&m1, &[0, 1], node, 64 << 20, 0.0, random));
            let (t2, c2) = finish(streamers(&m2, &[0, 1], node, 64 << 20, 0.0, random));
            assert_eq!((c1, c2), (1.0, 1.0), "{what}: contention");
            assert!(close(t2, 2.0 * t1, 1e-6), "{what}: {t1} s then {t2} s");
            let limited = machine(2, 2, 1, 100.0, 170.0, "1", "");
            let (_, c) = finish(streamers(&limited, &[0, 1], node, 64 << 20, 0.0, random));
            assert!(c > 1.5, "{what}: 1 GB/s, but contention at most {c}");
        }
    }
}

/// No shared resource carries more than its bandwidth: tasks that would
/// stream faster than a memory controller, a bus, or a single memory
/// system can serve take at least bytes / bandwidth, whatever their mix of
/// compute and memory work (but for the first tick: contention follows
/// the previous tick's demand). And an unlimited bus changes nothing.
#[test]
fn no_resource_carries_more_than_its_bandwidth() {
    let bytes = 64u64 << 20;
    let total = 4.0 * bytes as f64; // 4 tasks, one pass each
    let fsb =
        |gbs: &str| format!("[[bus]]\nname = \"fsb0\"\nbandwidth_gbs = {gbs}\ncpu_nodes = [0]\n");
    let cases: Vec<(&str, Machine, usize, f64)> = vec![
        (
            "controller",
            machine(2, 4, 1, 100.0, 170.0, "2", ""),
            0,
            2.0,
        ),
        (
            "controller, remote",
            machine(2, 4, 1, 100.0, 170.0, "2", ""),
            1,
            2.0,
        ),
        (
            "bus",
            machine(2, 4, 1, 100.0, 170.0, "inf", &fsb("2")),
            1,
            2.0,
        ),
        (
            "single memory system",
            machine(2, 4, 1, 100.0, 170.0, "2\ncontrollers = \"single\"", ""),
            1,
            2.0,
        ),
    ];
    for (what, m, node, gbs) in cases {
        for cycles in [0.0, 10.0, 40.0] {
            let (t, _) = finish(streamers(&m, &[0, 1, 2, 3], node, bytes, cycles, false));
            // Contention follows the previous tick's demand: the first tick
            // runs uncontended (each task its misses in flight per latency).
            let lat = m.latency_ns[0][node];
            let first_tick = 4.0 * 1e6 * m.line_bytes / (cycles / 2.0 + lat / m.mlp);
            let floor = (total - first_tick) / (gbs * 1e9);
            assert!(
                t >= floor * 0.97,
                "{what}, {cycles} cycles per line: {t} s, but {gbs} GB/s needs {floor} s"
            );
        }
    }
    let plain = machine(2, 4, 1, 100.0, 170.0, "2", "");
    let with_bus = machine(2, 4, 1, 100.0, 170.0, "2", &fsb("inf"));
    for node in [0, 1] {
        let a = finish(streamers(&plain, &[0, 1, 2, 3], node, bytes, 5.0, false));
        let b = finish(streamers(&with_bus, &[0, 1, 2, 3], node, bytes, 5.0, false));
        assert_eq!(a, b, "an unlimited bus changed a run");
    }
}

/// SMT siblings share their core's misses in flight: two streaming
/// threads on one core take twice as long as on two cores (no compute,
/// unlimited bandwidth), and a sibling that does not miss in the cache
/// takes no share.
#[test]
fn smt_siblings_share_the_cores_misses_in_flight() {
    let m = machine(1, 2, 2, 100.0, 100.0, "inf", "");
    assert_eq!(m.core_cpus[0], vec![0, 2]);
    let (cores, _) = finish(streamers(&m, &[0, 1], 0, 64 << 20, 0.0, false));
    let (siblings, _) = finish(streamers(&m, &[0, 2], 0, 64 << 20, 0.0, false));
    let (alone, _) = finish(streamers(&m, &[0], 0, 64 << 20, 0.0, false));
    assert!(
        close(cores, alone, 1e-6),
        "two cores {cores} s, alone {alone} s"
    );
    assert!(
        close(siblings, 2.0 * alone, 1e-3),
        "siblings {siblings} s, alone {alone} s"
    );
    // A spinning sibling slows the compute part only.
    let mut e = streamers(&m, &[0], 0, 64 << 20, 0.0, false);
    let spin = crate::workload::spin_work(1e12);
    let t = add_task(
        &mut e.w,
        "spin".into(),
        1,
        spin,
        1,
        Parent::Cpu(2),
        false,
        0,
        false,
    );
    e.w.masks.push((0..m.ncpus).map(|c| c == 2).collect());
    e.w.tasks[t].affinity = Some(e.w.masks.len() - 1);
    let (with_spinner, _) = finish(e);
    assert!(
        close(with_spinner, alone, 1e-6),
        "with a spinning sibling {with_spinner} s, alone {alone} s"
    );
}

/// More tasks than CPUs: no CPU stays idle beside a queued task it may
/// run for longer than the idle balance interval (2 ms, two ticks), every
/// task gets exactly its work as user time, and the CPU time accounted
/// per node is the task's user and system time.
#[test]
fn more_tasks_than_cpus_keep_every_cpu_busy_and_account_all_time() {
    let m = machine(2, 2, 1, 100.0, 200.0, "50", "");
    for s in names(sched::list(&m)) {
        for case in [spin(7, 200), numa_test(6, 100_000)] {
            let cfg = config(m.clone(), &s, "none");
            let out = run(&cfg, &case, "x", REP, &mut |_| {}, &|| false).unwrap();
            let r = &out.record;
            let what = format!("{s} {}", r.benchmark);
            assert!(
                out.stats.max_idle_imbalance_ns <= 2_000_000,
                "{what}: a CPU idled {} ms beside a queued task",
                out.stats.max_idle_imbalance_ns as f64 / 1e6
            );
            let elapsed = metric(r, "elapsed_s");
            let mut busy = 0.0;
            for t in &r.tasks {
                let on_nodes: f64 = t.node_time_s.iter().sum();
                assert!(
                    (on_nodes - t.user_s - t.sys_s).abs() < 1e-6,
                    "{what}: {} ran {on_nodes} s but has {} s user + {} s system",
                    t.name,
                    t.user_s,
                    t.sys_s
                );
                if matches!(case, Case::Spin(_)) {
                    let want = 200e6 / (m.base_ghz * 1e9);
                    assert!(
                        (t.user_s - want).abs() < 1e-6,
                        "{what}: {} has {} s user time for {want} s of work",
                        t.name,
                        t.user_s
                    );
                }
                busy += on_nodes;
            }
            assert!(busy <= m.ncpus as f64 * elapsed + 1e-6, "{what}");
            // Work-conserving: with 7 equal spinners on 4 CPUs, all CPUs
            // are busy until fewer than 4 tasks are left.
            if matches!(case, Case::Spin(_)) {
                assert!(
                    busy >= m.ncpus as f64 * elapsed * 0.8,
                    "{what}: {busy} CPU-s busy in {elapsed} s on {} CPUs",
                    m.ncpus
                );
            }
        }
    }
}

/// Monotonicity: making remote memory slower never makes a run faster,
/// under any scheduler, for memory first touched on one node (numa01) and
/// for tasks spread over the nodes (numa_test); and the slowest is
/// strictly slower than the fastest.
#[test]
fn slower_remote_memory_never_makes_a_run_faster() {
    let cases = [
        auto(Kind::Numa01, BindMode::Default, 4, 64 << 20, 20),
        numa_test(4, 200_000),
    ];
    for s in ["linux", "node-blind", "node-affine"] {
        for case in &cases {
            let times: Vec<f64> = [100.0, 120.0, 150.0, 200.0, 300.0]
                .iter()
                .map(|&remote| {
                    let m = machine(2, 2, 1, 100.0, remote, "8", "");
                    metric(&go(&m, s, "none", case), "elapsed_s")
                })
                .collect();
            for w in times.windows(2) {
                assert!(w[1] >= w[0], "{s} {case:?}: times {times:?}");
            }
            if matches!(case, Case::Autonuma(_)) {
                assert!(
                    times[4] > times[0] * 1.1,
                    "{s}: remote never hurt: {times:?}"
                );
            }
        }
    }
}

/// One node: a NUMA balancer has nothing to gain and nothing to move. No
/// page or task moves, user time is that of `none`, and the run is longer
/// by at most the balancer's system time. (The kernel does not even
/// enable automatic NUMA balancing on one node: check_numabalancing_enable
/// enables it only when num_online_nodes() > 1.)
#[test]
fn one_node_balancers_change_nothing_but_system_time() {
    let m = machine(1, 4, 1, 100.0, 100.0, "inf", "");
    let cases = [
        auto(Kind::Numa01, BindMode::Default, 4, 64 << 20, 20),
        auto(Kind::Numa02, BindMode::Default, 4, 64 << 20, 20),
        numa_test(4, 200_000),
    ];
    for case in &cases {
        let none = go(&m, "linux", "none", case);
        for b in names(balance::list(&m)).into_iter().filter(|b| b != "none") {
            let r = go(&m, "linux", &b, case);
            let what = format!("{b} {}", r.benchmark);
            assert_eq!(metric(&r, "numa_pages_migrated"), 0.0, "{what}");
            assert!(
                close(metric(&r, "user_s"), metric(&none, "user_s"), 1e-6),
                "{what}: user time {} s vs {} s without a balancer",
                metric(&r, "user_s"),
                metric(&none, "user_s")
            );
            // Tasks share CPUs (numa01: 8 threads on 4), so a CPU's run
            // is longer by the system time of all its tasks: bounded by
            // the sum over every task.
            let sys: f64 = r.tasks.iter().map(|t| t.sys_s).sum();
            let (e, e0) = (metric(&r, "elapsed_s"), metric(&none, "elapsed_s"));
            assert!(
                e >= e0 - TICK_S && e <= e0 + sys + TICK_S,
                "{what}: elapsed {e} s vs {e0} s without a balancer, at most {sys} s of system time"
            );
        }
    }
}
