//! Invariants of the simulator, on small machines so they run fast.

use crate::engine::{Engine, Parent, TaskState, Work, World};
use crate::machine::MachineFile;
use crate::workload::{add_region, add_task};
use crate::{balance, run, sched, Machine, PolicySpec, SimConfig, CHUNK_BYTES};
use numalab_bench::autonuma::{Kind, Placement as BindMode};
use numalab_bench::mem::Op;
use numalab_bench::numa_test::Disturb;
use numalab_bench::placement::{CpuSet, HackbenchParams, SpinParams};
use numalab_bench::Case;
use numalab_record::convergence::{self, Capacity, Rule};
use numalab_record::{ConvergenceState, Repetition, Sample};
use rand_core::SeedableRng;
use std::collections::VecDeque;

const REP: Repetition = Repetition { index: 1, of: 1 };

/// 2 nodes x 2 cores x 2 threads, generous bandwidth, fixed frequency.
fn small_machine(smt: u32) -> Machine {
    small_machine_costs(smt, "")
}

/// [`small_machine`] (no SMT) with `gbs` of memory bandwidth per node.
fn small_machine_bandwidth(gbs: f64) -> Machine {
    small_machine_with(1, "", gbs)
}

/// [`small_machine`] with `costs`, the lines of a `[costs]` table.
fn small_machine_costs(smt: u32, costs: &str) -> Machine {
    small_machine_with(smt, costs, 50.0)
}

fn small_machine_with(smt: u32, costs: &str, gbs: f64) -> Machine {
    small_machine_cpu(smt, costs, gbs, "")
}

/// [`small_machine_with`], `cpu` more lines of its `[cpu]` table.
fn small_machine_cpu(smt: u32, costs: &str, gbs: f64, cpu: &str) -> Machine {
    let text = format!(
        r#"
name = "small"
description = "test machine"
[topology]
nodes = 2
cores_per_node = 2
threads_per_core = {smt}
llcs_per_node = 1
memory_per_node_gib = 4
distances = [[10, 20], [20, 10]]
[memory]
local_latency_ns = 100
bandwidth_gbs = {gbs}
mlp = 8
[cache]
llc_mib = 4
llc_hit_ns = 10
cross_llc_ns = 60
[cpu]
base_ghz = 2
max_ghz = 2
min_ghz = 2
smt_throughput = 0.6
{cpu}
[costs]
{costs}
[sources]
"all" = "test values"
"#
    );
    MachineFile::parse("small", &text)
        .unwrap()
        .build("small")
        .unwrap()
}

/// `nodes` x `cores` (no SMT, one LLC per node), 100 ns local memory at
/// 50 GB/s per node, a fixed 2 GHz: the machine of the model's unit tests.
pub(crate) fn nodes_machine(nodes: usize, cores: usize) -> Machine {
    let text = format!(
        r#"
name = "n{nodes}"
[topology]
nodes = {nodes}
cores_per_node = {cores}
memory_per_node_gib = 4
[memory]
local_latency_ns = 100
bandwidth_gbs = 50
[cache]
llc_mib = 4
llc_hit_ns = 10
cross_llc_ns = 60
[cpu]
base_ghz = 2
max_ghz = 2
min_ghz = 2
"#
    );
    MachineFile::parse("n", &text).unwrap().build("n").unwrap()
}

/// An empty world on `m` for a policy's unit test: 1 ms ticks, 4 KiB
/// pages, seed 1, no trace.
pub(crate) fn empty_world(m: &Machine) -> World {
    use rand_core::SeedableRng;
    World::new(
        m.clone(),
        1_000_000,
        4096,
        rand_chacha::ChaCha8Rng::seed_from_u64(1),
        false,
    )
}

/// The record of one run of `case` under `cfg`, as the run returned it.
fn record(cfg: &SimConfig, case: &Case) -> numalab_record::RunRecord {
    run(cfg, case, "x", REP, &mut |_| {}, &|| false)
        .unwrap()
        .record
}

/// A world for `cfg`'s machine and tick, chunks of [`CHUNK_BYTES`], seed
/// 1, no trace: for tests that populate and step an engine themselves.
fn config_world(cfg: &SimConfig) -> World {
    World::new(
        cfg.machine.clone(),
        cfg.tick_us * 1000,
        CHUNK_BYTES,
        rand_chacha::ChaCha8Rng::seed_from_u64(1),
        false,
    )
}

pub(crate) fn config(m: Machine, sched: &str, bal: &str, seed: u64) -> SimConfig {
    let cfg = SimConfig {
        machine: m,
        machine_spec: "small".into(),
        scheduler: PolicySpec::parse(sched).unwrap(),
        balancer: PolicySpec::parse(bal).unwrap(),
        seed,
        tick_us: 1000,
        sample_ms: 500,
        max_sim_s: 600.0,
        trace: false,
        trace_format: Default::default(),
        thp: "always".into(),
    };
    cfg.check().unwrap();
    cfg
}

/// numa02 with a thread per CPU of the 8-CPU small machine.
fn numa02(bytes: u64, loops: u64) -> Case {
    auto(Kind::Numa02, BindMode::Default, 8, bytes, loops)
}

pub(crate) fn auto(kind: Kind, placement: BindMode, threads: u32, bytes: u64, loops: u64) -> Case {
    Case::Autonuma(numalab_bench::autonuma::Params {
        kind,
        placement,
        threads,
        bytes,
        loops,
    })
}

pub(crate) fn numa_test(tasks: u32, size: u64, disturb: Disturb) -> Case {
    Case::NumaTest(numalab_bench::numa_test::Params {
        tasks,
        size,
        passes: numalab_bench::numa_test::PASSES,
        disturb,
        peak_at_s: numalab_bench::numa_test::PEAK_AT_S,
    })
}

fn set(cpus: Option<Vec<u32>>) -> CpuSet {
    CpuSet {
        name: "test".into(),
        cpus,
    }
}

/// `gcycles` x 10^9 cycles of spinning per task.
fn spin(tasks: u32, gcycles: u64, cpus: Option<Vec<u32>>) -> Case {
    Case::Spin(SpinParams {
        tasks,
        iterations: (gcycles as f64 * 1e9 / numalab_bench::placement::SPIN_CYCLES_PER_ITERATION)
            as u64,
        set: set(cpus),
    })
}

/// More CPUs busy than can run at once (a guest's vCPUs on fewer host
/// CPUs): each runs that share of the time and does that share of its
/// work, its CPU time booked whole, as a guest's kernel books it; as many
/// busy as can run at once run at full speed.
#[test]
fn cpus_that_cannot_all_run_at_once_share_their_time() {
    let run = |tasks: u32, cpu: &str| {
        let m = small_machine_cpu(1, "", 50.0, cpu);
        let r = record(&config(m, "linux", "none", 1), &spin(tasks, 1, None));
        (r.metric("elapsed_s").unwrap(), r.metric("user_s").unwrap())
    };
    let (e4, u4) = run(4, "");
    let (e2, u2) = run(4, "run_at_once = 2");
    assert!((e2 / e4 - 2.0).abs() < 0.02, "elapsed {e4} -> {e2}");
    assert!((u2 / u4 - 2.0).abs() < 0.02, "user {u4} -> {u2}");
    let (a, _) = run(2, "");
    let (b, _) = run(2, "run_at_once = 2");
    assert!((b / a - 1.0).abs() < 0.01, "two tasks: {a} -> {b}");
    // More than the machine's CPUs: refused in one line.
    let text = "name = \"x\"\n[topology]\nnodes = 1\ncores_per_node = 2\nmemory_per_node_gib = 1\n\
                [memory]\nlocal_latency_ns = 100\nbandwidth_gbs = 10\n[cache]\nllc_mib = 4\n\
                llc_hit_ns = 10\ncross_llc_ns = 60\n[cpu]\nbase_ghz = 2\nmax_ghz = 2\nmin_ghz = 2\n\
                run_at_once = 3\n[sources]\n\"all\" = \"test\"\n";
    let e = crate::machine::MachineFile::parse("x", text)
        .unwrap()
        .build("x")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("cpu.run_at_once = 3: more than the machine's 2 CPUs"),
        "{e}"
    );
}

fn hackbench(groups: u32, fds: u32, loops: u32, size: u32) -> Case {
    Case::Hackbench(HackbenchParams {
        groups,
        fds,
        loops,
        size,
        ncpus: 1,
        set: set(None),
    })
}

fn json(r: &numalab_record::RunRecord) -> String {
    serde_json::to_string_pretty(r).unwrap()
}

#[test]
fn same_seed_gives_a_byte_identical_record() {
    let b = numa02(512 << 20, 300);
    for bal in ["autonuma", "sampling"] {
        let cfg = config(small_machine(2), "linux", bal, 7);
        let a = run(&cfg, &b, "x", REP, &mut |_| {}, &|| false).unwrap();
        let c = run(&cfg, &b, "x", REP, &mut |_| {}, &|| false).unwrap();
        assert_eq!(json(&a.record), json(&c.record), "{bal}");
        assert!(a.record.check().is_ok());
    }
}

#[test]
fn different_seeds_may_differ() {
    // The RNG decides which task takes a fault and which chunk is sampled:
    // across a few seeds the migration history must not be all the same.
    let b = numa02(512 << 20, 300);
    let histories: Vec<String> = (1..=4)
        .map(|seed| {
            let cfg = config(small_machine(2), "linux", "sampling[rate=200]", seed);
            let r = record(&cfg, &b);
            serde_json::to_string(&r.series.samples).unwrap()
        })
        .collect();
    assert!(
        histories.windows(2).any(|w| w[0] != w[1]),
        "four seeds gave identical series"
    );
}

fn assert_pages_conserved(w: &World) {
    let total_used: u64 = w.mem.used.iter().sum();
    let touched = w
        .mem
        .chunks
        .iter()
        .filter(|ch| ch.node != crate::engine::NO_NODE)
        .count() as u64;
    assert_eq!(
        total_used, touched,
        "used chunks per node vs chunks with a node"
    );
    for n in 0..w.m.nnodes {
        let on_n = w
            .mem
            .chunks
            .iter()
            .filter(|ch| ch.node as usize == n)
            .count() as u64;
        assert_eq!(w.mem.used[n], on_n, "node {n}");
    }
    for r in &w.mem.regions {
        assert_eq!(r.per_node.iter().sum::<u32>(), r.touched);
    }
    let by_proc: u64 = w.mem.proc_node.iter().flatten().sum();
    assert_eq!(by_proc, touched);
}

#[test]
fn pages_are_conserved_while_migrating() {
    for bal in ["autonuma", "sampling"] {
        let mut cfg = config(small_machine(2), "linux", bal, 3);
        // The IBS RFC acts on base pages only (do_numa_access skips
        // compound pages).
        if bal == "sampling" {
            cfg.thp = "never".into();
        }
        let b = numa02(1 << 30, 200);
        let out = run(&cfg, &b, "x", REP, &mut |_| {}, &|| false).unwrap();
        assert!(out.stats.pages_migrated > 0, "{bal} migrated nothing");
        for s in &out.record.series.samples[1..] {
            let sum: u64 = s.memory_bytes.iter().flatten().sum();
            assert_eq!(sum, 1 << 30, "{bal} at {} s", s.t_s);
        }
        // And the world's own bookkeeping, checked at the end of a run.
        let mut w = World::new(
            cfg.machine.clone(),
            1_000_000,
            CHUNK_BYTES,
            rand_chacha::ChaCha8Rng::seed_from_u64(3),
            false,
        );
        let _ = crate::workload::populate(&b, &mut w).unwrap();
        let mut e = Engine::new(
            w,
            sched::build(&cfg.scheduler, &cfg.machine).unwrap(),
            balance::build(&cfg.balancer, &cfg.machine).unwrap(),
        );
        e.run(20_000_000_000, |w| {
            if w.stats.ticks % 997 == 0 {
                assert_pages_conserved(w);
            }
            true
        });
        assert_pages_conserved(&e.w);
    }
}

#[test]
fn node_blind_leaves_no_cpu_idle_beside_a_queue_for_longer_than_a_balance_interval() {
    let cfg = config(small_machine(1), "node-blind", "none", 1);
    for disturb in [Disturb::None, Disturb::Messaging] {
        let b = numa_test(6, 100_000, disturb);
        let out = run(&cfg, &b, "x", REP, &mut |_| {}, &|| false).unwrap();
        // Idle balancing runs every 1 ms; the check is made once per 1 ms tick.
        assert!(
            out.stats.max_idle_imbalance_ns <= 2_000_000,
            "a CPU idled {} ms beside a queue",
            out.stats.max_idle_imbalance_ns as f64 / 1e6
        );
    }
}

/// Elapsed time of one task streaming over 256 MiB of which `remote`
/// chunks (of 128) are on the other node.
fn one_task_time(remote: usize, pattern_random: bool) -> f64 {
    let m = small_machine(1);
    let mut w = World::new(
        m.clone(),
        1_000_000,
        CHUNK_BYTES,
        rand_chacha::ChaCha8Rng::seed_from_u64(1),
        false,
    );
    let r = add_region(&mut w, 0, 256 << 20);
    let first = w.mem.regions[r].first;
    for i in 0..128 {
        let node = if i < remote { 1 } else { 0 };
        w.mem.allocate(&m, first + i, node);
    }
    let bytes = (256u64 << 20) as f64;
    let work = Work::Compute {
        init: VecDeque::new(),
        init_credit: 0.0,
        cycles: bytes / 64.0,
        rand_lines: if pattern_random {
            bytes / 64.0 / 8.0
        } else {
            0.0
        },
        stream_lines: if pattern_random { 0.0 } else { bytes / 64.0 },
        stream: crate::engine::Stream::Stores,
        writeback_lines: 0.0,
        wss_bytes: bytes,
        access: vec![(r, 1.0)],
    };
    let t = add_task(
        &mut w,
        "t".into(),
        0,
        work,
        5,
        Parent::Cpu(0),
        true,
        0,
        true,
    );
    let mask = (0..m.ncpus).map(|c| c == 0).collect();
    w.masks.push(mask);
    w.tasks[t].affinity = Some(0);
    let mut e = Engine::new(
        w,
        sched::build(&PolicySpec::parse("linux").unwrap(), &m).unwrap(),
        balance::build(&PolicySpec::parse("none").unwrap(), &m).unwrap(),
    );
    e.run(600_000_000_000, |_| true);
    assert_eq!(e.w.tasks[t].state, TaskState::Done);
    e.w.tasks[t].end_ns.unwrap() as f64 / 1e9
}

#[test]
fn more_remote_memory_never_makes_a_task_faster() {
    for random in [false, true] {
        let times: Vec<f64> = [0, 16, 32, 64, 96, 128]
            .iter()
            .map(|&r| one_task_time(r, random))
            .collect();
        for w in times.windows(2) {
            assert!(w[1] >= w[0], "random={random}: times {times:?}");
        }
        assert!(times[5] > times[0] * 1.2, "remote is not slower: {times:?}");
    }
}

fn mem(op: Op, threads: u32, cpu_node: u32, mem_node: u32) -> Case {
    Case::Mem(numalab_bench::mem::Params {
        op,
        threads,
        cpu_node,
        mem_node,
        bytes: 16 << 20,
        loops: 4,
    })
}

fn gbs_on(m: Machine, case: &Case) -> (f64, f64) {
    let cfg = config(m, "linux", "none", 1);
    let r = record(&cfg, case);
    assert!(r.outcome.is_ok(), "{:?}", r.outcome);
    let b = r.metric("bandwidth_gbs").unwrap();
    let swept = 16.0 * (1 << 20) as f64 * 4.0 * r.tasks.len() as f64;
    // bandwidth_gbs is the bytes swept over elapsed_s, the timed part.
    let e = r.metric("elapsed_s").unwrap();
    assert!((b - swept / e / 1e9).abs() < 1e-6 * b, "{b} {e}");
    (b, r.metric("thread_bandwidth_min_gbs").unwrap())
}

fn gbs(case: &Case) -> (f64, f64) {
    gbs_on(small_machine(1), case)
}

/// mem on the model: remote memory is slower than local, two threads on
/// separate cores sweep more than one, and a read-modify-write's
/// write-backs cost nothing while the controller has room (they are
/// posted) and bandwidth once it saturates.
#[test]
fn mem_bandwidth_follows_the_memory_model() {
    let (local, _) = gbs(&mem(Op::Read, 1, 0, 0));
    let (remote, _) = gbs(&mem(Op::Read, 1, 0, 1));
    let (write, _) = gbs(&mem(Op::Write, 1, 0, 0));
    let (two, two_min) = gbs(&mem(Op::Read, 2, 0, 0));
    assert!(remote < local * 0.95, "remote {remote} local {local}");
    assert!(
        (write / local - 1.0).abs() < 0.05,
        "write {write} read {local}"
    );
    assert!(two > local * 1.3, "2 threads {two}, 1 thread {local}");
    assert!(two_min > 0.0 && two_min <= two / 2.0 + 1e-9);
    // A controller narrower than one thread's demand: the write-backs
    // take their share of it.
    let (r2, _) = gbs_on(small_machine_bandwidth(2.0), &mem(Op::Read, 2, 0, 0));
    let (w2, _) = gbs_on(small_machine_bandwidth(2.0), &mem(Op::Write, 2, 0, 0));
    assert!(w2 < r2 * 0.8, "saturated: write {w2}, read {r2}");
}

/// Streamed loads overlap as `memory.read_mlp` says, stores as `mlp`: a
/// core that keeps half as many loads in flight reads (and
/// read-modify-writes) memory slower and zeroes it as fast.
#[test]
fn streamed_loads_take_read_mlp_and_stores_mlp() {
    let base = Machine::load("genoa2n").unwrap();
    assert_eq!(base.read_mlp, base.mlp, "absent, read_mlp is mlp");
    let half = Machine::load(&format!("genoa2n[memory.read_mlp={}]", base.mlp / 2.0)).unwrap();
    for op in [Op::Read, Op::Write] {
        let (fast, _) = gbs_on(base.clone(), &mem(op, 1, 0, 0));
        let (slow, _) = gbs_on(half.clone(), &mem(op, 1, 0, 0));
        assert!(
            slow < fast * 0.8,
            "{op:?}: read_mlp halved {slow}, as mlp {fast}"
        );
    }
    let (a, _) = gbs_on(base, &mem(Op::Memset, 1, 0, 0));
    let (b, _) = gbs_on(half, &mem(Op::Memset, 1, 0, 0));
    assert!((a / b - 1.0).abs() < 1e-9, "memset {a} against {b}");
}

/// A controller that carries loads slower than stores
/// (`memory.read_bandwidth_gbs`): every CPU of a node reading its memory
/// at once gets no more than that rate, each line read served in 1 /
/// it; a zeroing's stores are served at `bandwidth_gbs` as before, and
/// a file without the key reads as it always did.
#[test]
fn a_controllers_rate_for_loads_bounds_every_cpu_reading_and_leaves_stores() {
    let big = |op, threads| {
        Case::Mem(numalab_bench::mem::Params {
            op,
            threads,
            cpu_node: 0,
            mem_node: 0,
            bytes: 512 << 20,
            loops: 2,
        })
    };
    let gbs_on = |m: Machine, case: &Case| {
        let r = record(&config(m, "linux", "none", 1), case);
        assert!(r.outcome.is_ok(), "{:?}", r.outcome);
        r.metric("bandwidth_gbs").unwrap()
    };
    let base = Machine::load("genoa2n").unwrap();
    let read = gbs_on(base.clone(), &big(Op::Read, 32));
    let zero = gbs_on(base.clone(), &big(Op::Memset, 32));
    let same = Machine::load(&format!(
        "genoa2n[memory.read_bandwidth_gbs={}]",
        base.bandwidth[0]
    ))
    .unwrap();
    let r = gbs_on(same, &big(Op::Read, 32));
    assert!(
        (r / read - 1.0).abs() < 1e-9,
        "the stores' rate for loads: {r} against {read}"
    );
    let limit = read / 3.0;
    let narrow = Machine::load(&format!("genoa2n[memory.read_bandwidth_gbs={limit}]")).unwrap();
    let r = gbs_on(narrow.clone(), &big(Op::Read, 32));
    assert!(
        r <= limit * 1.02 && r > limit * 0.7,
        "read {r} under a rate for loads of {limit}"
    );
    let z = gbs_on(narrow.clone(), &big(Op::Memset, 32));
    assert!((z / zero - 1.0).abs() < 1e-9, "memset {z} against {zero}");
    // An update's loads queue at the read rate, its write-backs at the
    // stores': slower than before, faster than reads alone would allow
    // for as many lines.
    let w0 = gbs_on(base, &big(Op::Write, 32));
    let w = gbs_on(narrow, &big(Op::Write, 32));
    assert!(
        w < w0 * 0.9,
        "update {w} against {w0} without the rate for loads"
    );
}

/// mem's default loops come from the model's rate for the sweep asked
/// for: on a core that keeps a quarter as many loads in flight as
/// stores, a read's run sized to a second lasts a second, as a memset's
/// does, local or remote, one thread or several (sizing by the zeroing
/// rate had made reads run several times longer than asked).
#[test]
fn mem_is_sized_by_its_own_sweeps_rate() {
    use numalab_bench::Calibration;
    let base = Machine::load("genoa2n").unwrap();
    let m = Machine::load(&format!(
        "genoa2n[memory.read_mlp={},memory.write_mlp={}]",
        base.mlp / 4.0,
        base.mlp / 8.0
    ))
    .unwrap();
    let cfg = config(m, "linux", "none", 1);
    let b = crate::SimBackend::new(cfg.clone());
    let bytes: u64 = 64 << 20;
    let rate = |op, threads, mem_node| {
        b.sweep_bandwidth_on(op, threads, bytes * threads as u64, &[0], mem_node, true)
    };
    assert!(rate(Op::Write, 1, 0) < 0.8 * rate(Op::Read, 1, 0));
    assert!(
        rate(Op::Read, 1, 0) < 0.5 * rate(Op::Memset, 1, 0),
        "read {} memset {}",
        rate(Op::Read, 1, 0),
        rate(Op::Memset, 1, 0)
    );
    for op in Op::ALL {
        for (threads, mem_node) in [(1, 0), (1, 1), (8, 0)] {
            let r = rate(op, threads, mem_node);
            let loops = (r / (bytes * threads as u64) as f64).round().max(1.0) as u64;
            let case = Case::Mem(numalab_bench::mem::Params {
                op,
                threads,
                cpu_node: 0,
                mem_node,
                bytes,
                loops,
            });
            let e = record(&cfg, &case).metric("elapsed_s").unwrap();
            assert!(
                (e - 1.0).abs() < 0.1,
                "{op:?} x{threads} to node {mem_node}: {loops} loops at {r:.3e} B/s took {e} s"
            );
        }
    }
}

/// Streamed updates in place overlap as `memory.write_mlp` says (absent,
/// as loads): halving it slows mem's write sweep and neither its read
/// nor its memset.
#[test]
fn streamed_updates_take_write_mlp() {
    let base = Machine::load("genoa2n").unwrap();
    assert_eq!(
        base.write_mlp, base.read_mlp,
        "absent, write_mlp is read_mlp"
    );
    let half = Machine::load(&format!(
        "genoa2n[memory.write_mlp={}]",
        base.read_mlp / 2.0
    ))
    .unwrap();
    let (fast, _) = gbs_on(base.clone(), &mem(Op::Write, 1, 0, 0));
    let (slow, _) = gbs_on(half.clone(), &mem(Op::Write, 1, 0, 0));
    assert!(
        slow < fast * 0.8,
        "write_mlp halved {slow}, as read_mlp {fast}"
    );
    for op in [Op::Read, Op::Memset] {
        let (a, _) = gbs_on(base.clone(), &mem(op, 1, 0, 0));
        let (b, _) = gbs_on(half.clone(), &mem(op, 1, 0, 0));
        assert!((a / b - 1.0).abs() < 1e-9, "{op:?}: {a} against {b}");
    }
}

fn spin_time(cpus: Vec<u32>) -> f64 {
    let cfg = config(small_machine(2), "linux", "none", 1);
    let b = spin(2, 4, Some(cpus));
    record(&cfg, &b).metric("elapsed_s").unwrap()
}

#[test]
fn two_spinning_tasks_on_smt_siblings_are_slower_than_on_separate_cores() {
    let m = small_machine(2);
    assert_eq!(m.core_cpus[0], vec![0, 4]);
    let siblings = spin_time(vec![0, 4]);
    let cores = spin_time(vec![0, 1]);
    assert!(
        siblings > cores * 1.3,
        "siblings {siblings} s vs cores {cores} s"
    );
}

/// Whether every thread of a slice benchmark has >= 90% of its slice on
/// the node it is on and no node runs more threads than it has CPUs:
/// the real runs' criterion, spelt out here from the sample's fields.
fn all_threads_with_their_slices(s: &Sample, slice: u64, cpus_per_node: usize) -> bool {
    let mut per_node = [0usize; 2];
    for (node, mem) in s.task_node.iter().zip(&s.task_memory_bytes) {
        let Some(n) = node else { return false };
        per_node[*n as usize] += 1;
        if (mem[*n as usize] as f64) < 0.9 * slice as f64 {
            return false;
        }
    }
    per_node.iter().all(|&k| k <= cpus_per_node)
}

#[test]
fn numa02_converges_under_autonuma_and_stays_put_without_a_balancer() {
    let b = numa02(1 << 30, 400);
    let slice = (1u64 << 30) / 8;
    let cfg = config(small_machine(2), "linux", "autonuma", 1);
    let r = record(&cfg, &b);
    let at = r.metric("convergence_s").unwrap_or_else(|| {
        panic!("autonuma did not converge: {:?}", r.convergence);
    });
    let started = r.metric("started_s").expect("started_s");
    assert!(at >= started, "converged at {at} s, started at {started} s");
    // Converged at the first sample from the start where every thread
    // runs on the node holding its slice, as real runs decide it.
    let first = r
        .series
        .samples
        .iter()
        .filter(|s| s.t_s >= started)
        .find(|s| all_threads_with_their_slices(s, slice, 4))
        .expect("a converged sample");
    assert_eq!(first.t_s, at);
    let last = r.series.samples.last().unwrap();
    let mem: Vec<u64> = last.memory_bytes[0].clone();
    assert!(mem[1] >= (1 << 30) / 4, "memory at end {mem:?}");

    let cfg = config(small_machine(2), "linux", "none", 1);
    let r = record(&cfg, &b);
    assert!(r.metric("convergence_s").is_none());
    let end = r.series.samples.last().unwrap().t_s;
    assert_eq!(
        r.convergence.as_ref().map(|c| &c.state),
        Some(&ConvergenceState::NotConverged { within_s: end })
    );
    assert_eq!(r.metric("numa_pages_migrated"), Some(0.0));
    for s in &r.series.samples[1..] {
        assert_eq!(s.memory_bytes[0], vec![1 << 30, 0], "at {} s", s.t_s);
    }
}

#[test]
fn samples_observe_tasks_and_their_memory_as_real_runs_do() {
    let b = numa02(1 << 30, 100);
    let cfg = config(small_machine(2), "linux", "autonuma", 1);
    let r = record(&cfg, &b);
    let slice = (1u64 << 30) / 8;
    let started = r.metric("started_s").expect("started_s");
    // A sample at the start, as real runs take one, besides the interval's.
    assert!(r.series.samples.iter().any(|s| s.t_s == started));
    assert!(started > 0.0 && started < 0.5, "started at {started} s");
    for s in &r.series.samples {
        // Every thread's slice, exactly: prefaulted on node 0, then moved.
        assert_eq!(s.task_memory_bytes.len(), 8, "at {} s", s.t_s);
        for m in &s.task_memory_bytes {
            assert_eq!(m.iter().sum::<u64>(), slice, "at {} s", s.t_s);
        }
    }
    // Before a thread starts and after it ends its node is unknown, as
    // for a real thread that does not exist (yet or any more).
    let first = &r.series.samples[0];
    assert!(first.task_node.iter().all(|n| n.is_none()), "{first:?}");
    let last = r.series.samples.last().unwrap();
    assert!(last.task_node.iter().all(|n| n.is_none()), "{last:?}");
    let mid = r.series.samples.iter().find(|s| s.t_s >= started).unwrap();
    assert!(mid.task_node.iter().all(|n| n.is_some()), "{mid:?}");
    // The same definition as real runs of numa02.
    assert_eq!(
        r.convergence.unwrap().definition,
        convergence::definition(Rule::Thread(Capacity::Cpus))
    );
}

#[test]
fn only_benchmarks_real_runs_judge_have_a_convergence() {
    let cfg = config(small_machine(1), "linux", "none", 1);
    for b in [numa_test(2, 100_000, Disturb::None), spin(2, 1, None)] {
        let r = record(&cfg, &b);
        assert!(r.convergence.is_none(), "{}", r.benchmark);
        assert!(r.metric("started_s").is_none(), "{}", r.benchmark);
        assert!(r
            .series
            .samples
            .iter()
            .all(|s| s.task_memory_bytes.is_empty()));
    }
    // On one node it is trivial, with the real runs' reason.
    let one = nodes_machine(1, 2);
    let cfg = config(one, "linux", "autonuma", 1);
    let r = record(
        &cfg,
        &auto(Kind::Numa02, BindMode::Default, 2, 64 << 20, 10),
    );
    match r.convergence.map(|c| c.state) {
        Some(ConvergenceState::Trivial { reason }) => {
            assert!(reason.contains("one NUMA node with CPUs"), "{reason}")
        }
        s => panic!("{s:?}"),
    }
}

/// twohalves with base pages (as seed 004): sampling starts moving the
/// misplaced half first (its first samples come 1 s after the process
/// starts; autonuma's scanner first reaches set 1's half after walking
/// set 0's). Neither convergence nor elapsed time is asserted: on this
/// small machine autonuma's scanner passes over the 2 GiB in 8 s while
/// random samples need about 2.3 per page to have touched 90% of the
/// half, so autonuma finishes first here.
#[test]
fn sampling_migrates_twohalves_pages_before_autonuma() {
    let b = auto(Kind::TwoHalves, BindMode::Default, 2, 2 << 30, 150);
    let first = |bal: &str| {
        let mut cfg = config(small_machine(1), "linux", bal, 1);
        cfg.thp = "never".into();
        let r = record(&cfg, &b);
        assert!(
            r.metric("numa_pages_migrated").unwrap_or(0.0) > 0.0,
            "{bal}"
        );
        r.series
            .samples
            .iter()
            .find(|s| s.vmstat.get("numa_pages_migrated").is_some_and(|&p| p > 0))
            .map(|s| s.t_s)
            .unwrap()
    };
    let (a, s) = (first("autonuma"), first("sampling"));
    assert!(s < a, "first migration: sampling {s} s, autonuma {a} s");
}

/// A machine file's measured balancing costs are the balancers'
/// defaults: a dearer migration is more system time for the same pages.
#[test]
fn the_machine_files_migration_cost_is_the_balancers_default() {
    let b = auto(Kind::TwoHalves, BindMode::Default, 2, 256 << 20, 40);
    let sys_per_page = |costs: &str| {
        let cfg = config(small_machine_costs(1, costs), "linux", "autonuma", 1);
        let r = record(&cfg, &b);
        let pages = r.metric("numa_pages_migrated").unwrap();
        assert!(pages > 0.0, "{costs}");
        // Every page migrated was the benchmark's tasks' own, as real
        // runs read of each task (/proc/PID/sched).
        assert_eq!(r.metric("kernel_numa_pages_migrated"), Some(pages));
        (r.metric("sys_s").unwrap(), pages)
    };
    let (cheap, p1) = sys_per_page("migrate_us_per_mb = 10");
    let (dear, p2) = sys_per_page("migrate_us_per_mb = 100000");
    // 100,000 us a MiB: at least a tenth of a second per MiB moved.
    let mib = p2 * 4096.0 / (1 << 20) as f64;
    assert!(
        dear > cheap + 0.05 * mib,
        "{cheap} s ({p1} pages), {dear} s ({p2})"
    );
}

/// The user time of one undisturbed numa_test run on machine spec `m`
/// under `linux` without balancing.
fn numa_test_user_s(m: &str, tasks: u32, size: u64) -> f64 {
    let cfg = config(Machine::load(m).unwrap(), "linux", "none", 1);
    let r = record(&cfg, &numa_test(tasks, size, Disturb::None));
    r.metric("user_s").unwrap()
}

/// numa_test's random accesses: an out-of-order core overlaps its misses
/// (`memory.random_mlp`), and those that hit in the LLC still wait for it.
#[test]
fn random_misses_overlap_and_llc_hits_cost_their_latency() {
    let user = |m: &str| numa_test_user_s(m, 2, 500_000);
    let in_order = user("genoa2n");
    let overlapped = user("genoa2n[memory.random_mlp=8]");
    assert!(overlapped < in_order * 0.6, "{overlapped} vs {in_order}");
    // All in cache (a 4 GiB LLC): the hits cost the LLC's latency, more
    // with a slower LLC.
    let fast = user("genoa2n[cache.llc_mib=4096,cache.llc_hit_ns=10]");
    let slow = user("genoa2n[cache.llc_mib=4096,cache.llc_hit_ns=40]");
    assert!(slow > fast * 1.2, "{slow} vs {fast}");
}

/// numa_test on an Itanium: a random access over more than the data
/// TLB's reach waits for a page walk (the VHPT walker) first, with
/// probability 1 - reach / range; within the reach, or without a TLB
/// modelled, it does not. 2M elements: a 16 MB `a` against tx7's 2 MiB
/// reach, 7/8 of the updates walk, 11.5 ns each.
#[test]
fn random_accesses_beyond_the_tlb_reach_wait_for_a_page_walk() {
    let user = |m: &str| numa_test_user_s(m, 1, 2_000_000);
    let walks = user("tx7");
    let none = user("tx7[memory.tlb_walk_ns=0]");
    let covered = user("tx7[memory.tlb_reach_mib=64]");
    // 2M updates x 100 passes x 7/8 x 11.5 ns = 2.0 s more.
    let want = 2e6 * 100.0 * 0.875 * 11.5e-9;
    assert!(
        (walks - none - want).abs() < 0.1 * want,
        "{walks} - {none} vs {want}"
    );
    assert!((covered - none).abs() < 0.01 * none, "{covered} vs {none}");
}

/// numa_test's streamed `ix` and `b` take places in the LLC that lines of
/// `a` would have kept (crate::cache, LRU): a lone task with an LLC of
/// half its 16 MB `a` on tx7 (128-byte lines, 12/128 streamed lines an
/// update) misses 53% of its updates, not the 48% a cache share alone
/// gives. Its user time is linear in the miss share between an LLC that
/// holds nothing and one that holds everything (memory without
/// contention: one task, controllers of 100 TB/s).
#[test]
fn streamed_lines_take_llc_places_from_numa_tests_random_accesses() {
    let n = 2_000_000u64;
    let user = |llc_mib: f64| {
        numa_test_user_s(
            &format!("tx7[memory.bandwidth_gbs=100000,cache.llc_mib={llc_mib}]"),
            1,
            n,
        )
    };
    let (none, half, all) = (user(0.01), user(8.0), user(65536.0));
    let c = 8.0 * (1u64 << 20) as f64 / (8.0 * n as f64);
    let miss = 1.0 - crate::cache::random_hit_share(c, 12.0 / 128.0);
    let measured = (half - all) / (none - all);
    assert!(
        (measured - miss).abs() < 0.01,
        "miss share {measured} ({none} / {half} / {all} s), LRU with streams {miss}"
    );
    assert!(measured > (1.0 - c) + 0.04, "{measured} vs {}", 1.0 - c);
}

/// numa_test's update `a[j]=a[j]+b[i]` (randupdt.c) writes the line of
/// `a` it read: each miss of `a` is written back once, so a task moves
/// twice the lines of its misses, plus its streams. On tx7 (3 MiB LLC,
/// 128-byte lines) a 16 MB `a` misses 82% of the time: 13/16 of it is
/// beyond the cache, and its 12/128 streamed lines an update take their
/// places in the rest (crate::cache).
#[test]
fn numa_test_writes_back_every_line_of_a_it_misses() {
    let cfg = config(Machine::load("tx7").unwrap(), "linux", "none", 1);
    let mut w = config_world(&cfg);
    let n = 2_000_000.0;
    let _ = crate::workload::populate(&numa_test(1, n as u64, Disturb::None), &mut w).unwrap();
    let Work::Compute {
        rand_lines,
        writeback_lines,
        ..
    } = w.tasks[0].work
    else {
        panic!("numa_test's task is compute work")
    };
    let miss =
        1.0 - crate::cache::random_hit_share(3.0 * (1 << 20) as f64 / (8.0 * n), 12.0 / 128.0);
    assert!((miss - 0.82).abs() < 0.005, "{miss}");
    assert_eq!(rand_lines, n);
    assert!(
        (writeback_lines - n * miss).abs() < 1e-6 * n,
        "{writeback_lines} write-backs for {n} updates"
    );
}

/// A worker's scan clock is its own runtime (task_tick_numa reads
/// se.sum_exec_runtime): the main thread's first touch, which the model
/// books on the first worker, does not advance it. It had: the worker's
/// first period then ran out before mm->numa_next_scan, and its first
/// scan waited a whole period more.
#[test]
fn a_first_touch_booked_on_a_worker_does_not_advance_its_scan_clock() {
    let b = auto(Kind::Numa01, BindMode::Default, 1, 128 << 20, 400);
    let first = |costs: &str| {
        let mut cfg = config(small_machine_costs(1, costs), "linux", "autonuma", 1);
        cfg.sample_ms = 20;
        let r = record(&cfg, &b);
        r.series
            .samples
            .iter()
            .find(|s| s.vmstat.get("numa_pages_migrated").is_some_and(|&p| p > 0))
            .map(|s| s.t_s)
            .unwrap_or_else(|| panic!("{costs}: nothing migrated"))
    };
    // 128 MiB at 0.2 GB/s: the touch takes 0.67 s before the worker starts.
    let (free, touched) = (first(""), first("first_touch_gbs = 0.2"));
    let later = touched - free;
    assert!((0.5..0.85).contains(&later), "{free} s, {touched} s");
}

#[test]
fn node_affine_beats_node_blind_on_total_user_time() {
    // Seed 000's finding (E vs A), on its machine, at N=16 with a smaller
    // problem so the test stays fast.
    let b = numa_test(16, 300_000, Disturb::Messaging);
    let tu = |s: &str| {
        let cfg = SimConfig::new("azusa16", s, "none", 1).unwrap();
        record(&cfg, &b).metric("user_s").unwrap()
    };
    let (a, e) = (tu("node-blind"), tu("node-affine"));
    assert!(e < a, "node-affine {e} s vs node-blind {a} s");
}

#[test]
fn unknown_policies_and_parameters_are_one_line_errors() {
    let e = SimConfig::new("azusa16", "fifo", "none", 1)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("unknown scheduler \"fifo\" (valid: node-blind, linux, node-affine, nest)"),
        "{e}"
    );
    let e = SimConfig::new("azusa16", "node-affine[dynamik=true]", "none", 1)
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown parameter \"dynamik\""), "{e}");
    assert!(e.contains("dynamic"), "{e}");
    let e = SimConfig::new("azusa16", "linux", "autonuma[scan_size_mb=x]", 1)
        .unwrap_err()
        .to_string();
    assert!(e.contains("scan_size_mb"), "{e}");
    let e = SimConfig::new("azusa16", "linux", "ibs", 1)
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown balancer \"ibs\""), "{e}");
    let cfg = SimConfig::new("tx7", "linux", "none", 1).unwrap();
    let too_big = numa_test(64, 100_000_000, Disturb::None);
    let e = crate::validate(&cfg, &too_big).unwrap_err().to_string();
    assert!(
        e.contains("numa_test needs 119.2 GiB of memory but machine tx7 has 16.0 GiB"),
        "{e}"
    );
    let e = SimConfig::new("nosuch", "linux", "none", 1)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no such file and no such preset"), "{e}");
    assert!(!e.contains('\n'));
}

#[test]
fn extreme_balancer_parameters_end_or_are_refused() {
    // A sampling rate that would leave no time to run is refused.
    let e = SimConfig::new("ht2", "linux", "sampling[rate=1e12]", 1)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("rate=1000000000000 must be between 0 and 1000000"),
        "{e}"
    );
    // A scan window larger than the address space scans to its end once
    // per call (it used to wrap around forever).
    let cfg = config(small_machine(2), "linux", "autonuma[scan_size_mb=1e9]", 1);
    let b = numa02(1 << 30, 400);
    let r = record(&cfg, &b);
    assert!(r.metric("elapsed_s").unwrap() > 0.0);
    assert!(r.metric("numa_pages_migrated").unwrap() > 0.0);
}

#[test]
fn a_run_told_to_stop_ends_with_no_record() {
    let cfg = config(small_machine(2), "linux", "autonuma", 1);
    let b = numa02(1 << 30, 400);
    let asked = std::cell::Cell::new(0);
    let stop = || {
        asked.set(asked.get() + 1);
        asked.get() > 3
    };
    let e = run(&cfg, &b, "x", REP, &mut |_| {}, &stop).err().unwrap();
    assert!(matches!(e, crate::SimError::Interrupted), "{e}");
    assert_eq!(asked.get(), 4);
}

#[test]
fn trace_has_a_track_per_cpu_and_spans_inside_the_run() {
    let mut cfg = config(small_machine(2), "nest", "none", 1);
    cfg.trace = true;
    let b = hackbench(1, 4, 50, 100);
    let out = run(&cfg, &b, "x", REP, &mut |_| {}, &|| false).unwrap();
    let v: serde_json::Value = serde_json::from_str(out.trace.as_deref().unwrap()).unwrap();
    let evs = v["traceEvents"].as_array().unwrap();
    let names = evs.iter().filter(|e| e["name"] == "thread_name").count();
    assert_eq!(names, 8);
    let end_us = out.record.metric("elapsed_s").unwrap() * 1e6 + 1e3;
    let spans: Vec<_> = evs.iter().filter(|e| e["ph"] == "X").collect();
    assert!(!spans.is_empty());
    for s in spans {
        let ts = s["ts"].as_f64().unwrap();
        let dur = s["dur"].as_f64().unwrap();
        assert!(dur > 0.0 && ts >= 0.0 && ts + dur <= end_us, "{s}");
    }
}

/// A traced run's record has the `sched` section a real traced run has,
/// made by the same analysis: every task, its on-CPU time (at most the
/// user + system time the model charged, which also books kernel work
/// done outside the task's runs), the CPUs chosen for new tasks, and
/// run-queue delays from the preemptions.
#[test]
fn a_traced_run_has_the_sched_section_of_a_real_one() {
    let mut cfg = config(small_machine(2), "linux", "none", 1);
    cfg.trace = true;
    let b = hackbench(1, 4, 50, 100);
    let r = record(&cfg, &b);
    let s = r.sched.as_ref().expect("a sched section");
    assert_eq!(s.method, crate::trace::METHOD);
    assert_eq!(s.tasks.len(), r.tasks.len());
    assert_eq!(s.new_task_cpus.len(), r.tasks.len());
    assert!(s
        .tasks
        .iter()
        .all(|t| t.run_s > 0.0 && t.exited_s.is_some()));
    let run_s: f64 = s.tasks.iter().map(|t| t.run_s).sum();
    let charged = r.metric("user_s").unwrap() + r.metric("sys_s").unwrap();
    assert!(
        run_s <= charged * (1.0 + 1e-9) && run_s >= 0.5 * charged,
        "{run_s} {charged}"
    );
    assert_eq!(r.metric("sched_tasks"), Some(r.tasks.len() as f64));
    // Untraced, none.
    cfg.trace = false;
    let r = record(&cfg, &b);
    assert!(r.sched.is_none() && r.metric("sched_tasks").is_none());
}

#[test]
fn hackbench_does_all_its_messages() {
    for s in ["node-blind", "linux", "node-affine", "nest"] {
        let cfg = config(small_machine(2), s, "none", 1);
        let b = hackbench(2, 5, 40, 100);
        let r = record(&cfg, &b);
        assert!(r.outcome.is_ok(), "{s}: {:?}", r.outcome);
        for t in &r.tasks {
            assert_eq!(t.work_done, t.work_expected, "{s}: {}", t.name);
        }
    }
}

/// Every benchmark runs to completion under every scheduler and every
/// balancer the registries list (a spinning task's process has no
/// memory: balancers must cope), on two nodes and on more: 3 (odd), 4
/// and 8 nodes, and a 4-node machine read from a sysfs tree.
#[test]
fn every_benchmark_runs_under_every_scheduler_and_balancer() {
    let fx = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../topology/tests/fixtures/azusa-4node-16cpu");
    for m in [
        small_machine(2),
        nodes_machine(3, 2),
        nodes_machine(4, 1),
        nodes_machine(8, 1),
        Machine::host(&fx).unwrap(),
    ] {
        every_benchmark_on(m);
    }
}

fn every_benchmark_on(m: Machine) {
    let names = |l: Vec<(String, String, String)>| -> Vec<String> {
        l.into_iter().map(|(n, _, _)| n).collect()
    };
    let scheds = names(sched::list(&m));
    let bals = names(balance::list(&m));
    assert!(scheds.len() >= 4 && bals.len() >= 3, "{scheds:?} {bals:?}");
    let mut benches = vec![
        numa_test(3, 50_000, Disturb::Messaging),
        auto(Kind::TwoHalves, BindMode::Default, 2, 16 << 20, 3),
        spin(3, 1, None),
        hackbench(1, 2, 5, 100),
        // A shell forking short children, one and two at a time.
        Case::ForkExec(numalab_bench::forkexec::Params {
            children: 6,
            jobs: 1,
            child_iterations: 100_000,
            parent_iterations: 10_000,
        }),
        Case::ForkExec(numalab_bench::forkexec::Params {
            children: 6,
            jobs: 2,
            child_iterations: 100_000,
            parent_iterations: 10_000,
        }),
        mem(Op::Write, 2, 0, m.topology.node_ids()[m.nnodes - 1]),
    ];
    for variant in [
        Kind::Numa01,
        Kind::Numa01ThreadAlloc,
        Kind::Numa02,
        Kind::Numa02Smt,
    ] {
        for placement in [BindMode::Default, BindMode::Bind, BindMode::InverseBind] {
            benches.push(auto(variant, placement, 2, 8 << 20, 3));
        }
    }
    let n = m.nnodes;
    for s in &scheds {
        for b in &bals {
            let cfg = config(m.clone(), s, b, 1);
            for bench in &benches {
                let r = run(&cfg, bench, "x", REP, &mut |_| {}, &|| false)
                    .unwrap_or_else(|e| panic!("{n} nodes, {s} {b} {bench:?}: {e}"))
                    .record;
                assert!(
                    r.outcome.is_ok(),
                    "{n} nodes, {s} {b} {bench:?}: {:?}",
                    r.outcome
                );
                assert!(!r.tasks.is_empty());
                for t in &r.tasks {
                    assert_eq!(
                        t.work_done, t.work_expected,
                        "{n} nodes, {s} {b} {}",
                        r.benchmark
                    );
                }
            }
        }
    }
}

/// numa01's bind on 4 and 8 nodes, as the original's HARD_BIND: process 0
/// on the first half of the nodes, process 1 on the second, every node
/// running threads; the memory on the process's half (bind) or on the
/// other half (inverse-bind), spread over all of that half's nodes, and
/// kept there under NUMA balancing (MPOL_BIND memory is neither scanned
/// nor migrated). Two nodes too: each half is one node.
#[test]
fn numa01_bind_puts_each_process_on_its_half_of_the_nodes() {
    for n in [2usize, 4, 8] {
        let m = nodes_machine(n, 2);
        let halves = [(0..n / 2).collect::<Vec<_>>(), (n / 2..n).collect()];
        for (placement, memory_half) in [(BindMode::Bind, [0, 1]), (BindMode::InverseBind, [1, 0])]
        {
            for bal in ["none", "autonuma", "sampling"] {
                let what = format!("{n} nodes, {placement:?}, {bal}");
                let cfg = config(m.clone(), "linux", bal, 1);
                // ncpus / 2 threads per process, as numa01's default.
                let b = auto(Kind::Numa01, placement, n as u32, 256 << 20, 20);
                let r = record(&cfg, &b);
                assert!(r.outcome.is_ok(), "{what}: {:?}", r.outcome);
                assert_eq!(r.metric("numa_pages_migrated"), Some(0.0), "{what}");
                if bal == "autonuma" {
                    assert_eq!(r.metric("numa_hint_faults"), Some(0.0), "{what}");
                }
                let mut ran_on = vec![0.0; n];
                for t in &r.tasks {
                    let p = t.process.unwrap() as usize;
                    for (ix, &s) in t.node_time_s.iter().enumerate() {
                        ran_on[ix] += s;
                        assert!(
                            s == 0.0 || halves[p].contains(&ix),
                            "{what}: {} ran {s} s on node {ix}",
                            t.name
                        );
                    }
                }
                assert!(
                    ran_on.iter().all(|&s| s > 0.0),
                    "{what}: a node ran no thread: {ran_on:?}"
                );
                for smp in r
                    .series
                    .samples
                    .iter()
                    .filter(|s| !s.memory_bytes.is_empty())
                {
                    for (p, mem) in smp.memory_bytes.iter().enumerate() {
                        let on = &halves[memory_half[p]];
                        for (ix, &b) in mem.iter().enumerate() {
                            assert_eq!(
                                b > 0,
                                on.contains(&ix),
                                "{what}: process {p} at {} s: {mem:?}",
                                smp.t_s
                            );
                        }
                    }
                }
            }
        }
    }
}

/// The first NUMA scan, and with it the first hinting faults, come
/// scan_delay (1 s) after the process starts, not a second later: the
/// kernel sets mm->numa_next_scan when the process is created
/// (init_numa_balancing), and a task that runs from its start reaches the
/// 1 s of runtime that task_tick_numa waits for at the same moment.
#[test]
fn the_first_numa_scan_comes_one_scan_delay_after_the_start() {
    // A CPU per thread, so that runtime keeps up with time.
    let cfg = config(small_machine(2), "linux", "autonuma", 1);
    for b in [
        numa02(1 << 30, 400),
        auto(Kind::Numa01, BindMode::Default, 2, 256 << 20, 60),
        numa_test(2, 2_000_000, Disturb::None),
    ] {
        let mut w = config_world(&cfg);
        let _ = crate::workload::populate(&b, &mut w).unwrap();
        let mut e = Engine::new(
            w,
            sched::build(&cfg.scheduler, &cfg.machine).unwrap(),
            balance::build(&cfg.balancer, &cfg.machine).unwrap(),
        );
        let (mut scan, mut fault) = (None, None);
        e.run(3_000_000_000, |w| {
            if scan.is_none() && w.stats.pte_updates > 0 {
                scan = Some(w.now);
            }
            if fault.is_none() && w.stats.hint_faults > 0 {
                fault = Some(w.now);
            }
            true
        });
        let start = e.w.tasks.iter().map(|t| t.start_ns).min().unwrap();
        let tick = e.w.tick_ns;
        let scan = scan.expect("a scan within 3 s") - start;
        let fault = fault.expect("a hinting fault within 3 s") - start;
        let what = format!("{b:?}");
        // task_tick_numa waits for the runtime to exceed node_stamp + the
        // period, and sees it at the tick after: up to two ticks late. A
        // thread's node_stamp starts at about two ticks more
        // (init_numa_balancing), and the threads start up to 4 ms apart.
        let late = if matches!(b, Case::Autonuma(_)) {
            4 * tick + 5_000_000
        } else {
            2 * tick
        };
        assert!(
            (1_000_000_000..=1_000_000_000 + late).contains(&scan),
            "{what}: first scan {scan} ns after the start"
        );
        // The marked pages fault on their next access: numa_test's two
        // tasks touch some of their 64 marked chunks every tick on average
        // (2 and 3.4 expected per tick), so within ten ticks all but
        // surely (a miss has odds below e^-20).
        assert!(
            (scan..=scan + 10 * tick).contains(&fault),
            "{what}: first hinting fault {fault} ns after the start, scan at {scan}"
        );
    }
}

/// init_numa_balancing and task_tick_numa: every task's scan period
/// starts at the scan delay (1 s), and only a new process's task (its
/// node_stamp 0) takes task_scan_start after its first period. numa02's
/// workers are threads (CLONE_VM), so until their first
/// update_task_scan_period, after a full pass, the process scans 256 MB
/// per second of runtime: 4 or 5 scans in its first 5.5 s, not a pass over
/// its 4 GiB every 1.6 s at task_scan_min's 100 ms.
#[test]
fn threads_scan_at_the_scan_delay_until_their_first_full_pass() {
    let cfg = config(small_machine(2), "linux", "autonuma", 1);
    let mut w = config_world(&cfg);
    let _ = crate::workload::populate(&numa02(4 << 30, 400), &mut w).unwrap();
    // The workers; the main thread that creates them is the process.
    assert!(w.tasks.iter().filter(|t| t.main).all(|t| t.clone_vm));
    assert!(w.tasks.iter().filter(|t| !t.main).all(|t| !t.clone_vm));
    let mut e = Engine::new(
        w,
        sched::build(&cfg.scheduler, &cfg.machine).unwrap(),
        balance::build(&cfg.balancer, &cfg.machine).unwrap(),
    );
    e.run(5_500_000_000, |_| true);
    let scanned = e.w.stats.pte_updates * 4096;
    let scans = scanned as f64 / (256 << 20) as f64;
    assert!(
        (4.0..=5.0).contains(&scans),
        "{scans} scans of 256 MB in 5.5 s"
    );
}

/// The same with a task that is a process of its own (numa_test): its
/// node_stamp is 0, so after its first second task_tick_numa gives it
/// task_scan_start (task_scan_min: 1000 ms over its 2 GB's eight 256 MB
/// windows, 125 ms) and it scans at that pace: about eight scans by 2 s,
/// where a period left at the scan delay would give one or two.
#[test]
fn a_new_process_scans_at_task_scan_start_after_its_first_period() {
    let cfg = config(small_machine(2), "linux", "autonuma", 1);
    let mut w = config_world(&cfg);
    let _ = crate::workload::populate(&numa_test(1, 100_000_000, Disturb::None), &mut w).unwrap();
    assert!(!w.tasks[0].clone_vm);
    let mut e = Engine::new(
        w,
        sched::build(&cfg.scheduler, &cfg.machine).unwrap(),
        balance::build(&cfg.balancer, &cfg.machine).unwrap(),
    );
    e.run(2_000_000_000, |_| true);
    let scans = (e.w.stats.pte_updates * 4096) as f64 / (256 << 20) as f64;
    assert!(
        (6.0..=8.0).contains(&scans),
        "{scans} scans of 256 MB by 2 s"
    );
}

/// The IBS RFC's do_numa_access skips compound pages: with huge pages
/// sampling takes (and pays for) samples but moves nothing; with base
/// pages it moves the slices. And no sample comes before the RFC's
/// 1 s delay after the process first runs (delay_hw_access_profiling).
#[test]
fn ibs_sampling_skips_huge_pages_and_waits_its_delay() {
    let huge = numa02_with("always", "sampling");
    let base = numa02_with("never", "sampling");
    let migrated = |r: &numalab_record::RunRecord| r.metric("numa_pages_migrated").unwrap_or(0.0);
    assert_eq!(migrated(&huge), 0.0);
    assert!(migrated(&base) > 0.0);
    let first = base
        .series
        .samples
        .iter()
        .find(|s| s.vmstat.get("numa_pages_migrated").is_some_and(|&p| p > 0))
        .map(|s| s.t_s)
        .unwrap();
    assert!(first >= 1.0, "first migration at {first} s");
}

fn numa02_with(thp: &str, balancer: &str) -> numalab_record::RunRecord {
    let mut cfg = config(small_machine(2), "linux", balancer, 1);
    cfg.thp = thp.into();
    cfg.check().unwrap();
    record(&cfg, &numa02(256 << 20, 100))
}

#[test]
fn without_huge_pages_each_4k_page_faults_and_migrates_on_its_own() {
    let huge = numa02_with("always", "autonuma");
    let base = numa02_with("never", "autonuma");
    let m = |r: &numalab_record::RunRecord, k: &str| r.metric(k).unwrap();
    assert_eq!(base.backend.details()["chunk_bytes"], 4096);
    assert_eq!(huge.backend.details()["chunk_bytes"], 2 << 20);
    assert_eq!(base.machine.thp_enabled.as_deref(), Some("never"));
    // Both move the misplaced half of numa02's memory (the same bytes, in
    // 4 KiB pages as numa_pages_migrated counts them)...
    for r in [&huge, &base] {
        assert!(m(r, "numa_pages_migrated") > 0.0);
    }
    // ...but base pages take one hinting fault each, a huge page one for
    // 512 of them: per page migrated, faults are not alike.
    let per =
        |r: &numalab_record::RunRecord| m(r, "numa_hint_faults") / m(r, "numa_pages_migrated");
    assert!(
        per(&base) > 50.0 * per(&huge),
        "faults per page migrated: base {} huge {}",
        per(&base),
        per(&huge)
    );
    // PTE updates count 4 KiB pages either way.
    assert!(m(&base, "numa_pte_updates") > 0.0);
    let e = {
        let mut cfg = config(small_machine(2), "linux", "none", 1);
        cfg.thp = "sometimes".into();
        cfg.check().unwrap_err().to_string()
    };
    assert_eq!(e, "thp \"sometimes\": always, madvise or never");
}

#[test]
fn the_simulator_takes_thp_and_refuses_other_machine_settings_in_one_line() {
    use numalab_linux::knobs::Knob;
    assert!(crate::check_settings(&[Knob::thp("never").unwrap()]).is_ok());
    let e = crate::check_settings(&[Knob::governor("performance").unwrap()])
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("governor: the simulator models no such setting"),
        "{e}"
    );
    assert!(!e.contains('\n'));
}

#[test]
fn ibs_samples_follow_the_memory_access_rate_over_the_period() {
    let samples = |bal: &str| {
        let r = numa02_with("never", bal);
        r.backend.details()["access_samples"].as_f64().unwrap()
    };
    // Periods pinned (update_task_sample_period would adapt them).
    let (p1, p4) = (
        samples("sampling[period=10000,period_min=10000,period_max=10000]"),
        samples("sampling[period=40000,period_min=40000,period_max=40000]"),
    );
    // Four times the period, about a quarter of the samples (the run's
    // timing changes a little with fewer samples).
    assert!(
        p1 > 3.0 * p4 && p1 < 5.0 * p4,
        "period 10000: {p1}, 40000: {p4}"
    );
}

/// numa01 under autonuma on 4 and 8 nodes (two processes, each of
/// ncpus/2 threads sharing 1 GiB) settles as the kernel's placement
/// rules make it (task_numa_migrate: no move that breaks the allowed
/// NUMA imbalance, no swap within a group while a node has room, a
/// grouped task adopting the node it settles on; should_numa_migrate_memory:
/// shared pages move only towards the group's CPU use): almost no task
/// moves to idle CPUs and the memory moved less than 2.5 times its size.
/// The earlier model (any idle CPU of the preferred node, any swap with a
/// gain, shared pages following every two-reference fault) moved tasks
/// 5-53 times and 4-6 times the memory in these runs.
#[test]
fn numa01_settles_under_autonuma_on_four_and_eight_nodes() {
    for n in [4usize, 8] {
        let m = nodes_machine(n, 4);
        let ncpus = m.ncpus;
        let bytes = 1u64 << 30;
        for seed in [1, 2] {
            let cfg = config(m.clone(), "linux", "autonuma", seed);
            let b = auto(
                Kind::Numa01,
                BindMode::Default,
                ncpus as u32 / 2,
                bytes,
                100,
            );
            let out = run(&cfg, &b, "x", REP, &mut |_| {}, &|| false).unwrap();
            assert!(
                out.record.outcome.is_ok(),
                "{n} nodes: {:?}",
                out.record.outcome
            );
            let s = &out.stats;
            let what = format!(
                "{n} nodes, seed {seed}: {} moves, {} swaps, {} pages migrated",
                s.numa_task_moves, s.numa_swaps, s.pages_migrated
            );
            assert!(s.numa_task_moves as usize <= ncpus / 8, "{what}");
            let moved = (s.pages_migrated * 4096) as f64 / (2 * bytes) as f64;
            assert!(
                moved > 0.5 && moved < 2.5,
                "{what}: {moved:.2} x the memory"
            );
        }
    }
}

/// Seed 002's claim on its machine model: numa02 (a thread per CPU of
/// ht2, each on its own slice) converges under autonuma. The earlier
/// placement (swaps whenever the gain was above zero, retried every
/// second) kept moving threads after their slices had followed them.
/// The seed's 800 loops: the threads scan 256 MB a second (their scan
/// period starts at the scan delay), so the 1 GiB is first passed over
/// about 5 s in.
#[test]
fn numa02_converges_under_autonuma_on_ht2() {
    let m = Machine::load("ht2").unwrap();
    let b = auto(
        Kind::Numa02,
        BindMode::Default,
        m.ncpus as u32,
        1 << 30,
        800,
    );
    for seed in [1, 2] {
        let cfg = config(m.clone(), "linux", "autonuma", seed);
        let r = record(&cfg, &b);
        assert!(
            r.metric("convergence_s").is_some(),
            "seed {seed}: {:?}",
            r.convergence
        );
    }
}

/// configure's shape under `linux` on the NEST evaluation's machine: the
/// shell stays on its CPU (an exiting child's wakeup of its parent is not
/// a sync one, so not wake-affine), and its children walk round the L3s
/// (find_idlest_group passes over the L3 a child just left, whose
/// utilisation still counts until that CPU's next PELT update), as the
/// seed's CPU-selection trace shows.
#[test]
fn forkexec_under_linux_keeps_the_shell_and_walks_its_children_round_the_l3s() {
    let m = Machine::load("epyc7642").unwrap();
    let llc = m.cpu_llc.clone();
    let mut cfg = config(m, "linux", "none", 1);
    cfg.trace = true;
    let b = Case::ForkExec(numalab_bench::forkexec::Params {
        children: 12,
        jobs: 1,
        child_iterations: 100_000,
        parent_iterations: 10_000,
    });
    let out = run(&cfg, &b, "x", REP, &mut |_| {}, &|| false).unwrap();
    let v: serde_json::Value = serde_json::from_str(out.trace.as_deref().unwrap()).unwrap();
    let spans: Vec<(String, usize)> = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .map(|e| {
            let name = e["name"].as_str().unwrap().to_string();
            (name, e["tid"].as_u64().unwrap() as usize)
        })
        .collect();
    let shell: Vec<usize> = spans
        .iter()
        .filter(|(n, _)| n.starts_with("forkexec"))
        .map(|s| s.1)
        .collect();
    assert!(shell.len() >= 12, "{spans:?}");
    assert!(
        shell.iter().all(|&c| c == shell[0]),
        "the shell moved: {shell:?}"
    );
    let mut l3s: Vec<usize> = spans
        .iter()
        .filter(|(n, _)| n.starts_with("child"))
        .map(|s| llc[s.1])
        .collect();
    assert_eq!(l3s.len(), 12, "{spans:?}");
    l3s.sort_unstable();
    l3s.dedup();
    assert!(l3s.len() >= 6, "children on the L3s {l3s:?}");
}

/// Idle states: a task woken or forked onto a CPU that sits in a deep
/// state starts one exit latency later; the state is the deepest whose
/// target residency the CPU's previous idle period reached. configure's
/// shape on the NEST machine, 12 children of about 1 ms: under `linux`
/// every child lands on a CPU idle for long (C2) and the shell's CPU idles
/// longer than C2's residency while each child runs, so both pay the
/// 400 us exit: twice per child. Under `nest` the children's core idles
/// only while the shell forks, too short for C2: once per child (the
/// shell's), and for the first few children while the nest forms and its
/// core's previous idle period was long.
#[test]
fn a_wakeup_on_a_cpu_in_a_deep_idle_state_waits_for_its_exit_latency() {
    let elapsed = |sched: &str, idle_states: &str| {
        let spec = format!("epyc7642[cpu.idle_states={idle_states}]");
        let m = Machine::load(&spec).unwrap();
        let cfg = config(m, sched, "none", 1);
        let b = Case::ForkExec(numalab_bench::forkexec::Params {
            children: 12,
            jobs: 1,
            child_iterations: 550_000,
            parent_iterations: 10_000,
        });
        record(&cfg, &b).metric("elapsed_s").unwrap()
    };
    let exit_s = 400e-6;
    for (sched, low, high) in [("linux", 1.95, 2.05), ("nest", 1.0, 1.3)] {
        let delta = elapsed(sched, "[[400,800]]") - elapsed(sched, "[]");
        let exits = delta / (12.0 * exit_s);
        assert!(
            (low..=high).contains(&exits),
            "{sched}: {delta} s more with C2, {exits} exits per child (expected {low}-{high})"
        );
    }
}

/// Elapsed seconds of `case` on the small machine (2 GHz, no SMT) with
/// the `[costs]` lines `costs`, under linux, no balancer.
fn elapsed_with_costs(costs: &str, case: &Case) -> f64 {
    let cfg = config(small_machine_costs(1, costs), "linux", "none", 1);
    let r = record(&cfg, case);
    assert!(r.outcome.is_ok(), "{costs}: {:?}", r.outcome);
    r.metric("elapsed_s").unwrap()
}

/// `costs.spin_ns` is the time of one spin iteration at `max_ghz`: the
/// default's 6 cycles are 3 ns at 2 GHz (the same run to the bit), and
/// twice that takes a CPU-bound spin run twice as long.
#[test]
fn spin_ns_sets_the_time_of_a_spin_iteration() {
    let case = spin(2, 4, Some(vec![0, 1]));
    let default = elapsed_with_costs("", &case);
    assert_eq!(elapsed_with_costs("spin_ns = 3", &case), default);
    let double = elapsed_with_costs("spin_ns = 6", &case);
    let ratio = double / default;
    assert!(
        (1.95..=2.02).contains(&ratio),
        "default {default} s, spin_ns doubled {double} s: {ratio}x"
    );
    // The record says which costs the run was simulated with.
    let cfg = config(small_machine_costs(1, "spin_ns = 6"), "linux", "none", 1);
    let r = record(&cfg, &case);
    let costs = &r.backend.details()["costs"];
    assert_eq!(costs["spin_ns"], 6.0);
    assert_eq!(costs["memset_gbs"], 64.0);
    assert_eq!(costs["fork_us"], 75.0);
    // Sizing asks the model for the spin rate: one iteration per spin_ns.
    use numalab_bench::Calibration;
    let b = crate::SimBackend::new(cfg);
    assert!(
        (b.spin_rate() - 1e9 / 6.0).abs() < 1e-3,
        "{}",
        b.spin_rate()
    );
}

/// `costs.memset_gbs` is one core's zeroing rate in cache: what the
/// model tells sizing a thread zeroes in a working set that fits the
/// LLC, and the compute part of the autonuma benchmarks' zeroing.
#[test]
fn memset_gbs_sets_the_zeroing_rate_in_cache() {
    use numalab_bench::Calibration;
    let zb = |costs: &str, threads: u32, ws: u64| {
        let cfg = config(small_machine_costs(1, costs), "linux", "none", 1);
        crate::SimBackend::new(cfg).zeroing_bandwidth(threads, ws)
    };
    // Default: 32 bytes a cycle at 2 GHz.
    assert_eq!(zb("", 1, 1 << 20), 64e9);
    assert_eq!(zb("memset_gbs = 5", 1, 1 << 20), 5e9);
    assert_eq!(zb("memset_gbs = 5", 3, 1 << 20), 15e9);
    // From memory a line costs its compute plus its share of the misses
    // in flight, as the engine charges it: 64 B / (64 B / 5 GB/s +
    // 100 ns / 8), a little less for the controller's queue.
    let close = |a: f64, b: f64| a <= b && a > 0.99 * b;
    let per_line = 64.0 / 5.0 + 100.0 / 8.0;
    assert!(close(
        zb("memset_gbs = 5", 1, 1 << 30),
        64.0 / per_line * 1e9
    ));
    assert!(close(
        zb("memset_gbs = 500", 1, 1 << 30),
        64.0 / (64.0 / 500.0 + 12.5) * 1e9
    ));
    // Zeroing's compute part: numa02 takes longer with a slower memset.
    let case = auto(Kind::Numa02, BindMode::Default, 4, 4 << 20, 2000);
    let fast = elapsed_with_costs("", &case);
    assert_eq!(elapsed_with_costs("memset_gbs = 64", &case), fast);
    let slow = elapsed_with_costs("memset_gbs = 1", &case);
    assert!(
        slow > fast * 2.5,
        "memset 64 GB/s {fast} s, 1 GB/s {slow} s"
    );
}

/// `costs.fork_us` and `costs.exec_us`: each of forkexec's children
/// costs the parent one fork and itself one exec, one after the other
/// with one job, so a millisecond more of either adds a millisecond per
/// child.
#[test]
fn fork_us_and_exec_us_set_forkexecs_costs() {
    let case = Case::ForkExec(numalab_bench::forkexec::Params {
        children: 20,
        jobs: 1,
        child_iterations: 100_000,
        parent_iterations: 10_000,
    });
    let base = elapsed_with_costs("fork_us = 100\nexec_us = 100", &case);
    for costs in [
        "fork_us = 1100\nexec_us = 100",
        "fork_us = 100\nexec_us = 1100",
    ] {
        let more = elapsed_with_costs(costs, &case) - base;
        let per_child_ms = more / 20.0 * 1e3;
        assert!(
            (0.95..=1.05).contains(&per_child_ms),
            "{costs:?}: {per_child_ms} ms more per child"
        );
    }
    // Defaults: 150,000 and 450,000 cycles, 75 and 225 us at 2 GHz.
    assert_eq!(
        elapsed_with_costs("fork_us = 75\nexec_us = 225", &case),
        elapsed_with_costs("", &case)
    );
}

/// `costs.msg_us`: a hackbench message's write or read; messages
/// dominate hackbench, so ten times the cost takes several times longer.
#[test]
fn msg_us_sets_the_cost_of_a_hackbench_message() {
    let case = hackbench(1, 4, 200, 100);
    // Default: 6000 cycles, 3 us at 2 GHz.
    let default = elapsed_with_costs("", &case);
    assert_eq!(elapsed_with_costs("msg_us = 3", &case), default);
    let slow = elapsed_with_costs("msg_us = 30", &case);
    assert!(slow > default * 4.0, "3 us {default} s, 30 us {slow} s");
}

/// Zen 2 (epyc7642): a line moves between two CCXs through the IO die,
/// whether they share a CCD or not (AnandTech's Rome review: each CCX
/// communicates with the central IO hub), so CPUs 0 and 3 (two CCXs of
/// CCD 0) are as far apart as CPUs 0 and 6 (CCD 1), and a CCX's own
/// L3 is much nearer: the seed's split (one core per CCD) and numalab's
/// spread (one per CCX) cost their messages alike.
#[test]
fn on_zen2_another_ccx_of_the_ccd_is_as_far_as_another_ccd() {
    let m = Machine::load("epyc7642").unwrap();
    let l = |cpu: usize| m.cpu_llc[cpu];
    assert_eq!((l(0), l(2)), (l(1), l(1)), "CPUs 0-2: one CCX");
    assert_ne!(l(0), l(3));
    let same_ccd = m.transfer_ns(l(0), l(3));
    assert_eq!(same_ccd, m.transfer_ns(l(0), l(6)));
    assert!(same_ccd > 5.0 * m.transfer_ns(l(0), l(1)), "{same_ccd}");
}

/// A hackbench message between two caches fetches the kernel's serial
/// lines one after the other (`MSG_SERIAL_LINES`, counted in
/// af_unix.c, skbuff.c and SLUB: locks, reference counts, slab frees),
/// not two: with the message's own cycles made negligible, hackbench on
/// a CPU of each node takes its ops' share of that many transfers
/// longer than on one CPU, where the lines stay in its caches.
#[test]
fn a_message_between_caches_moves_the_kernels_serial_lines() {
    let on = |cpus: Vec<u32>| {
        let case = Case::Hackbench(HackbenchParams {
            groups: 1,
            fds: 2,
            loops: 2000,
            size: 64,
            ncpus: cpus.len() as u32,
            set: set(Some(cpus)),
        });
        elapsed_with_costs("msg_us = 0.01", &case)
    };
    let (one, two) = (on(vec![0]), on(vec![0, 2]));
    // 2 x 2 x 2000 messages, a write and a read each, shared by the two
    // CPUs: 8000 ops a CPU, each paying its lines times the transfer to
    // the other node (200 ns: 100 ns x distance 20 / 10) weighted by the
    // share of the group's four tasks there (about a half).
    let per_op_ns = (two - one) * 1e9 / 8000.0;
    let lines = per_op_ns / (0.5 * 200.0);
    assert!(
        (5.0..=8.0).contains(&lines),
        "one CPU {one} s, two nodes {two} s: {lines:.2} serial lines an op"
    );
}

/// `costs.process_launch_us` and `thread_launch_us` space the launches
/// of a benchmark's tasks: the last of 4 spinners (processes) starts
/// 3 launches after the first.
#[test]
fn launch_costs_space_the_starts_of_tasks() {
    let case = spin(4, 1, Some(vec![0, 1, 2, 3]));
    let default = elapsed_with_costs("", &case);
    let slow = elapsed_with_costs("process_launch_us = 101000", &case);
    let more = slow - default;
    // 3 launches of 100 ms more, give or take the seeded jitter (same seed).
    assert!((0.29..=0.31).contains(&more), "{more} s more");
    assert_eq!(
        elapsed_with_costs("thread_launch_us = 5000", &case),
        default
    );
    // numa02's workers are threads its main thread creates one after
    // another: the last starts up to 4 launches later, the first one
    // launch after the main thread began (the threads then share the
    // memory differently, so the run ends less than that later).
    let case = auto(Kind::Numa02, BindMode::Default, 4, 4 << 20, 200);
    let default = elapsed_with_costs("", &case);
    let more = elapsed_with_costs("thread_launch_us = 100050", &case) - default;
    assert!((0.1..=0.41).contains(&more), "{more} s more");
    assert_eq!(
        elapsed_with_costs("process_launch_us = 5000", &case),
        default
    );
}

/// `costs.first_touch_gbs`: the main thread's first touch of the buffer
/// takes bytes / rate before the threads start, as system time; without
/// it the threads start at once, as before it was measured.
#[test]
fn first_touch_gbs_times_the_main_threads_first_touch() {
    let case = auto(Kind::Numa02, BindMode::Default, 4, 64 << 20, 20);
    let rec = |costs: &str| {
        let cfg = config(small_machine_costs(1, costs), "linux", "none", 1);
        let r = record(&cfg, &case);
        assert!(r.outcome.is_ok(), "{costs}: {:?}", r.outcome);
        r
    };
    let (before, after) = (rec(""), rec("first_touch_gbs = 0.5"));
    // 64 MiB at 0.5 GB/s: 134 ms.
    let touch = (64u64 << 20) as f64 / 0.5e9;
    let started = |r: &numalab_record::RunRecord| r.metric("started_s").unwrap();
    let moved = started(&after) - started(&before);
    assert!(
        (moved - touch).abs() < 0.005,
        "threads started {moved} s later, the touch takes {touch} s"
    );
    let sys = after.metric("sys_s").unwrap() - before.metric("sys_s").unwrap();
    assert!((sys - touch).abs() < 1e-6, "{sys} s more system time");
    let longer = after.metric("elapsed_s").unwrap() - before.metric("elapsed_s").unwrap();
    assert!((longer - touch).abs() < 0.01, "{longer} s longer");
}

/// `kernel_migrations`: the CPU changes of the benchmark's tasks, as real
/// runs sum each observed task's se.nr_migrations; not for hackbench and
/// forkexec, whose trees real runs observe as one process.
#[test]
fn kernel_migrations_count_the_benchmark_tasks_cpu_changes() {
    // Three spinners on two CPUs: the balancer keeps moving them.
    let cfg = config(small_machine(1), "linux", "none", 1);
    let r = record(&cfg, &spin(3, 4, Some(vec![0, 1])));
    let m = r.metric("kernel_migrations").expect("kernel_migrations");
    assert!(m >= 1.0, "{m}");
    let r = record(&cfg, &hackbench(1, 2, 10, 100));
    assert!(r.metric("kernel_migrations").is_none());
}

/// What a machine file measured of the kernel's accounting: a message's
/// user share (hackbench's own loop; the rest is its system calls) and
/// forkexec's fork and exec user share (the child's dynamic loader). The
/// split moves time between user and system and changes nothing else:
/// the elapsed times and the CPU time are the same.
#[test]
fn measured_user_shares_split_messages_and_process_creation() {
    let times = |costs: &str, case: &Case| {
        let cfg = config(small_machine_costs(1, costs), "linux", "none", 1);
        let r = record(&cfg, case);
        let m = |k: &str| r.metric(k).unwrap();
        (m("elapsed_s"), m("user_s"), m("sys_s"))
    };
    let hb = hackbench(1, 4, 200, 100);
    let (e0, u0, s0) = times("", &hb);
    let (e1, u1, s1) = times("msg_user_share = 0.1", &hb);
    assert_eq!(u0, 0.0, "all system time by default");
    assert_eq!(e0, e1);
    assert!((u1 + s1 - (u0 + s0)).abs() < 1e-6 * s0, "{u1} {s1} {s0}");
    assert!((u1 / (u1 + s1) - 0.1).abs() < 0.01, "{u1} {s1}");

    let fe = Case::ForkExec(numalab_bench::forkexec::Params {
        children: 20,
        jobs: 1,
        child_iterations: 1,
        parent_iterations: 1,
    });
    let (e0, u0, s0) = times("", &fe);
    let (e1, u1, s1) = times("exec_user_share = 0.7", &fe);
    assert_eq!(e0, e1);
    assert!(
        (u1 + s1 - (u0 + s0)).abs() < 1e-6 * u0,
        "{u1} {s1} {u0} {s0}"
    );
    // Nearly all of a tiny child is its fork and exec: about 30% moves.
    let moved = s1 - s0;
    assert!(
        moved > 0.25 * (u0 + s0) && moved < 0.31 * (u0 + s0),
        "{u0} {s0} -> {u1} {s1}"
    );
}

/// An autonuma benchmark's main thread first touches the buffer, then
/// creates the workers one after another while it holds its CPU
/// (wake_up_new_task -> select_task_rq_fair, SD_BALANCE_FORK), then
/// waits. With as many workers as CPUs the last starts beside a busy
/// CPU, and one worker moves to the main thread's CPU once it waits, as
/// the kernel's scheduler trace of numa02 in a 4-node guest shows
/// (docs/validation.md, "Task migrations: where the workers start").
/// Before the main thread ran, every worker started on an idle CPU and
/// none moved.
#[test]
fn the_main_thread_holds_its_cpu_while_it_creates_the_workers() {
    let m = nodes_machine(2, 2);
    let cfg = config(m.clone(), "linux", "none", 1);
    let mut w = config_world(&cfg);
    let case = auto(Kind::Numa02, BindMode::Default, 4, 64 << 20, 400);
    let meta = crate::workload::populate(&case, &mut w).unwrap();
    assert_eq!(meta.creators.len(), 1);
    let main = meta.creators[0];
    let mut e = Engine::new(
        w,
        sched::build(&cfg.scheduler, &cfg.machine).unwrap(),
        balance::build(&cfg.balancer, &cfg.machine).unwrap(),
    );
    // Half a second: the main thread has long waited, no worker is done.
    e.run(500_000_000, |_| true);
    let w = &e.w;
    assert!(meta.main_tasks.iter().all(|&t| !w.tasks[t].is_done()));
    let last_start = meta
        .main_tasks
        .iter()
        .map(|&t| w.tasks[t].start_ns)
        .max()
        .unwrap();
    let main_end = w.tasks[main].end_ns.expect("the main thread waits");
    assert!(
        main_end > last_start,
        "main ended {main_end}, last worker started {last_start}"
    );
    let moves: u64 = meta.main_tasks.iter().map(|&t| w.tasks[t].migrations).sum();
    assert!(moves >= 1, "no worker moved");
    let mut cpus: Vec<usize> = meta.main_tasks.iter().map(|&t| w.tasks[t].cpu).collect();
    cpus.sort_unstable();
    cpus.dedup();
    assert_eq!(
        cpus.len(),
        4,
        "one worker per CPU once the main thread waits"
    );
}

/// `costs.process_start_us` and `costs.process_exit_us`: where the real
/// runs time a run from the runner's launch to the reaping (numa_test,
/// the autonuma suite, spin, hackbench), each launched process starts
/// its work that much later and the run ends that much after its last
/// task; forkexec's driver and mem time themselves, so theirs do not
/// move, and hackbench's own clock leaves both out. Without the keys
/// (every preset) nothing changes.
#[test]
fn a_launched_process_starts_and_exits_at_its_measured_cost() {
    let (start_us, exit_us) = (40_000.0, 15_000.0);
    // A first touch that takes time: the workers start after it, counted
    // from their process's start.
    let base = small_machine_costs(1, "first_touch_gbs = 1");
    let timed = small_machine_costs(
        1,
        &format!("first_touch_gbs = 1\nprocess_start_us = {start_us}\nprocess_exit_us = {exit_us}"),
    );
    let get = |m: &Machine, case: &Case, metric: &str| {
        record(&config(m.clone(), "linux", "none", 1), case)
            .metric(metric)
            .unwrap_or_else(|| panic!("{metric}"))
    };
    let shift = (start_us + exit_us) / 1e6;
    for case in [
        numa_test(2, 50_000, Disturb::None),
        auto(Kind::Numa02, BindMode::Default, 2, 16 << 20, 3),
        spin(2, 1, None),
        hackbench(1, 2, 5, 100),
    ] {
        let (a, b) = (
            get(&base, &case, "elapsed_s"),
            get(&timed, &case, "elapsed_s"),
        );
        assert!(
            (b - a - shift).abs() < 0.002,
            "{}: {a} s without, {b} s with start and exit",
            case.benchmark()
        );
    }
    let numa02 = auto(Kind::Numa02, BindMode::Default, 2, 16 << 20, 3);
    let (a, b) = (
        get(&base, &numa02, "started_s"),
        get(&timed, &numa02, "started_s"),
    );
    assert!(
        (b - a - start_us / 1e6).abs() < 0.002,
        "numa02's threads start at {a} s without, {b} s with the start"
    );
    let hb = hackbench(1, 2, 5, 100);
    let (a, b) = (
        get(&base, &hb, "hackbench_s"),
        get(&timed, &hb, "hackbench_s"),
    );
    assert!((a - b).abs() < 0.002, "hackbench's own clock: {a} vs {b}");
    for case in [
        Case::ForkExec(numalab_bench::forkexec::Params {
            children: 4,
            jobs: 1,
            child_iterations: 100_000,
            parent_iterations: 10_000,
        }),
        mem(Op::Write, 1, 0, 0),
    ] {
        let (a, b) = (
            get(&base, &case, "elapsed_s"),
            get(&timed, &case, "elapsed_s"),
        );
        assert_eq!(a, b, "{}", case.benchmark());
    }
}

/// numa01 and numa02 on 4 and 8 nodes (issue 24's own machine files):
/// binding is fastest and autonuma is at or below the default placement,
/// but the default placement is the slowest of the three, not between
/// bind and inverse-bind. Its memory is all first touched by the main
/// thread on node 0 (the benchmarks' bzero before the threads start,
/// under the local policy), so every thread zeroes through node 0's one
/// controller, while inverse-bind spreads the same bytes over the other
/// nodes' controllers: remote, but as many controllers wide as bind.
/// Default lands between the two only where a link, not a controller,
/// bounds the remote traffic.
#[test]
fn on_four_and_eight_nodes_the_default_placement_is_bound_by_node_0s_controller() {
    for n in [4usize, 8] {
        let m = nodes_machine(n, 4);
        let threads = m.ncpus as u32;
        for kind in [Kind::Numa01, Kind::Numa02] {
            let t = if kind == Kind::Numa01 {
                threads / 2
            } else {
                threads
            };
            let el = |placement, bal: &str| {
                let cfg = config(m.clone(), "linux", bal, 1);
                record(&cfg, &auto(kind, placement, t, 512 << 20, 40))
                    .metric("elapsed_s")
                    .unwrap()
            };
            let bind = el(BindMode::Bind, "none");
            let default = el(BindMode::Default, "none");
            let inverse = el(BindMode::InverseBind, "none");
            let balanced = el(BindMode::Default, "autonuma");
            let what = format!(
                "{n} nodes, {kind:?}: bind {bind:.2} s, default {default:.2}, inverse-bind {inverse:.2}, default under autonuma {balanced:.2}"
            );
            assert!(bind < inverse && inverse < default, "{what}");
            assert!(balanced <= default, "{what}");
        }
    }
}

/// A calibrated file's `cache.llc_mib` is the cache the model's accesses
/// get, `cache.reported_llc_mib` the size sysfs reports: the topology
/// carries the reported one, so a benchmark sizes its work on the
/// simulated machine as on the real one (numa_test's default size), while
/// the model keeps the measured one.
#[test]
fn the_topology_reports_the_llc_sysfs_gave_and_the_model_uses_the_measured_one() {
    use crate::backend::SimBackend;
    use numalab_bench::numa_test::BYTES_PER_ELEMENT;
    use numalab_bench::Calibration;
    let with = |cache: &str| {
        let text = format!(
            "name = \"c\"\n[topology]\nnodes = 2\ncores_per_node = 2\nmemory_per_node_gib = 4\n\
             [memory]\nlocal_latency_ns = 100\nbandwidth_gbs = 50\n\
             [cache]\n{cache}\nllc_hit_ns = 10\ncross_llc_ns = 60\n\
             [cpu]\nbase_ghz = 2\nmax_ghz = 2\nmin_ghz = 2\n"
        );
        let m = MachineFile::parse("c", &text).unwrap().build("c").unwrap();
        let b = SimBackend::new(config(m.clone(), "linux", "none", 1));
        let size = numalab_bench::sizing::numa_test_elements(b.machine(), 4, BYTES_PER_ELEMENT)
            .unwrap()
            .elements;
        (m, size)
    };
    let (measured, measured_size) = with("llc_mib = 8");
    let (both, both_size) = with("llc_mib = 8\nreported_llc_mib = 16");
    let (sysfs, sysfs_size) = with("llc_mib = 16");
    assert_eq!(both.topology.max_llc_bytes(), 16 << 20);
    assert_eq!(both.llc_bytes, measured.llc_bytes);
    assert_eq!(measured.llc_bytes, (8u64 << 20) as f64);
    assert_eq!(both_size, sysfs_size);
    assert_ne!(both_size, measured_size);
    assert_eq!(sysfs.topology.max_llc_bytes(), 16 << 20);
    let bad = MachineFile::parse(
        "c",
        "name = \"c\"\n[topology]\nnodes = 1\ncores_per_node = 1\nmemory_per_node_gib = 1\n\
         [memory]\nlocal_latency_ns = 100\nbandwidth_gbs = 5\n\
         [cache]\nllc_mib = 1\nreported_llc_mib = 0\nllc_hit_ns = 10\ncross_llc_ns = 60\n\
         [cpu]\nbase_ghz = 2\nmax_ghz = 2\nmin_ghz = 2\n",
    )
    .and_then(|f| f.build("c"));
    assert!(
        bad.as_ref()
            .is_err_and(|e| e.to_string().contains("cache.reported_llc_mib")),
        "{:?}",
        bad.map(|_| ())
    );
}

/// Samples after the one at the threads' start come an interval apart
/// from that start, as the real pacer schedules them (`sample_at` when
/// the benchmark starts): convergence is read on the same grid in both
/// worlds, not a whole interval later in one of them.
#[test]
fn samples_after_the_start_are_an_interval_from_it() {
    let cfg = config(small_machine(1), "linux", "autonuma", 1);
    let r = record(&cfg, &numa02(64 << 20, 200));
    let started = r.metric("started_s").unwrap();
    assert!(started > 0.0, "{started}");
    let t: Vec<f64> = r.series.samples.iter().map(|s| s.t_s).collect();
    let end = *t.last().unwrap();
    let after: Vec<f64> = t
        .iter()
        .copied()
        .filter(|&x| x > started && x < end)
        .collect();
    assert!(after.len() >= 2, "{t:?}");
    let step = cfg.sample_ms as f64 / 1e3;
    for (k, x) in after.iter().enumerate() {
        let want = started + (k + 1) as f64 * step;
        // One tick of slack: a sample is taken at the first tick due.
        assert!(
            (x - want).abs() <= 0.0011,
            "sample {k}: {x} s, wanted {want} ({t:?})"
        );
    }
}

/// A machine file measured under `thp = "madvise"` is simulated with 4 KiB
/// pages, as its kernel ran the benchmarks (they do not madvise); a file
/// that does not say, every preset, with 2 MiB ones.
#[test]
fn the_simulator_takes_the_files_thp_mode() {
    let path = std::env::temp_dir().join(format!("numalab-thp-{}.toml", std::process::id()));
    let text = crate::machine::PRESETS
        .iter()
        .find(|p| p.0 == "azusa16")
        .unwrap()
        .1
        .replace("[sources]", "[kernel]\nthp = \"madvise\"\n\n[sources]");
    std::fs::write(&path, text).unwrap();
    let cfg = SimConfig::new(path.to_str().unwrap(), "linux", "none", 1);
    std::fs::remove_file(&path).unwrap();
    let cfg = cfg.unwrap();
    assert_eq!(cfg.thp, "madvise");
    assert_eq!(cfg.page_bytes(), crate::BASE_PAGE_BYTES);
    let preset = SimConfig::new("azusa16", "linux", "none", 1).unwrap();
    assert_eq!(preset.thp, "always");
    assert_eq!(preset.page_bytes(), crate::CHUNK_BYTES);
}

/// Processes that first touch at once slow each other as the machine
/// file says their page faults contend (`costs.first_touch_two_gbs`):
/// numa01's two processes each take twice their touch at half the rate
/// alone; numa02's one process takes what it took without the key.
#[test]
fn processes_first_touching_at_once_slow_each_other_as_the_file_says() {
    let bytes = 64 << 20;
    let sys = |costs: &str, case: &Case| {
        let cfg = config(small_machine_costs(1, costs), "linux", "none", 1);
        record(&cfg, case).metric("sys_s").unwrap()
    };
    let alone = "first_touch_gbs = 1";
    let contended = "first_touch_gbs = 1\nfirst_touch_two_gbs = 0.5";
    let numa01 = auto(Kind::Numa01, BindMode::Bind, 2, bytes, 3);
    let (a, b) = (sys(alone, &numa01), sys(contended, &numa01));
    // Each process's `bytes` at 1 GB/s, both booked as system time.
    let touches = 2.0 * bytes as f64 / 1e9;
    assert!(
        (b - a - touches).abs() < 0.05 * touches,
        "alone {a} s, at once {b} s, touches {touches} s"
    );
    let numa02 = auto(Kind::Numa02, BindMode::Default, 2, bytes, 3);
    assert_eq!(sys(alone, &numa02), sys(contended, &numa02));
}
