//! Workload models of the suite's benchmarks: what tasks exist, what
//! memory they touch first, and what one unit of their work costs.
//!
//! Costs are counted in cycles (scaled by the modelled core frequency) and
//! cache lines (timed by the machine's latencies, bandwidth and memory-level
//! parallelism). The per-operation cycle counts below are estimates from
//! the benchmarks' source code (instructions per loop iteration); they are
//! stated here, not fitted to any seed's result. They are the defaults of
//! a machine file's `[costs]` table, which replaces them with costs
//! measured on a real machine (`numalab calibrate`): the models read them
//! from the machine ([`crate::costs::Costs`]), never from the constants.

use crate::engine::{
    Chunk, MemPolicy, MsgGroup, Parent, Region, RunOutcome, Task, TaskId, TaskState, Work, World,
};
use numalab_bench::autonuma::{interleave, MemPlan};
use numalab_bench::numa_test::{Disturb, PEAK_FDS, PEAK_GROUPS, PEAK_LOOPS, PEAK_SIZE};
use numalab_bench::Case;
use numalab_record::convergence::Rule;
use std::collections::{BTreeMap, VecDeque};

/// numa_test (randupdt.c): cycles of one `a[ix[i]] += b[i]` update besides
/// its memory accesses: load ix, load b, load a, add, store, loop (about 6
/// instructions at 1 IPC on an in-order core). Estimate.
pub const RANDUPDT_CYCLES_PER_UPDATE: f64 = 6.0;
/// Bytes streamed per update besides the random `a[j]`: `b[i]` (8) + `ix[i]` (4).
pub const RANDUPDT_STREAM_BYTES: f64 = 12.0;
/// memset-style zeroing: bytes stored per cycle by one core (32-byte
/// stores, one per cycle). Estimate.
pub const MEMSET_BYTES_PER_CYCLE: f64 = 32.0;
/// hackbench: cycles of one write() or read() of a small message on a unix
/// socket, with its share of the wakeup and context switch. Order-of-
/// magnitude estimate (a few microseconds on a 2-3 GHz core); unknown.
pub const MSG_CYCLES: f64 = 6000.0;
/// Bytes a unix stream socket buffers before a writer blocks
/// (net.core.wmem_default = 212992) and the kernel's per-message overhead
/// (sk_buff truesize beyond the payload, about 512 bytes).
pub const SOCKET_BUFFER_BYTES: u64 = 212_992;
pub const SKB_OVERHEAD_BYTES: u64 = 512;
/// hackbench: cache lines one write() or read() of a message on a unix
/// stream socket must fetch, one after the other, from the peer's cache
/// (each a locked instruction or a load that the next step depends on),
/// counted in Linux 5.15's net/unix/af_unix.c and the functions it calls:
/// - the writer (unix_stream_sendmsg): the sk_buff head from
///   skbuff_head_cache and its data from kmalloc, both last freed by the
///   reader (SLUB's __slab_free puts a remote free on the slab page's
///   freelist: a cmpxchg on the page the allocator takes back), 2;
///   skb_set_owner_w's refcount_add on its own sk_wmem_alloc, which the
///   reader's sock_wfree decremented, 1; unix_state_lock(other), which
///   the reader took, 1; skb_queue_tail on the reader's
///   sk_receive_queue (lock, list head), 1; sk_data_ready
///   (sock_def_readable: skwq_has_sleeper reads the wait queue the
///   reader sleeps on), 1: six;
/// - the reader (unix_stream_read_generic): unix_state_lock(sk), which
///   the writer took, 1; skb_peek on its sk_receive_queue, 1; the
///   sk_buff the writer filled (len, data, UNIXCB), 1; consume_skb's
///   destructor (unix_destruct_scm, sock_wfree) decrementing the
///   writer's sk_wmem_alloc, 1; kfree_skbmem and skb_free_head freeing
///   both objects into the writer's slab pages (__slab_free), 2: six.
///
/// Lines read or written by one streaming access are not in this count
/// but in [`MSG_STREAMED_LINES`] and the payload's.
pub const MSG_SERIAL_LINES: f64 = 6.0;
/// hackbench: lines of a message besides its payload that one access
/// streams with the core's misses in flight: the sk_buff's other lines
/// (__alloc_skb's memset of the head up to `tail`, about 3 lines of a
/// 224-byte struct sk_buff on x86-64, the skb_shared_info line), the
/// writer storing them and the reader reading them: 3 on average.
pub const MSG_STREAMED_LINES: f64 = 3.0;
/// Time a launcher takes to start one more process (fork + exec) or
/// thread (clone); launches happen one after the other. Estimates.
pub const PROCESS_LAUNCH_NS: u64 = 1_000_000;
pub const THREAD_LAUNCH_NS: u64 = 50_000;
/// Each launch is delayed by a uniformly random extra of up to this much
/// (a few scheduler ticks: the launcher itself competes for a CPU; for a
/// group started after a `sleep`, the timer's slack). Estimate.
pub const LAUNCH_JITTER_NS: u64 = 4_000_000;
/// forkexec: cycles of the parent's `fork` (copying a small shell's page
/// tables and task state) and of a child's `execve` (mapping and
/// dynamically linking a small program) and exit. Order-of-magnitude
/// estimates after lmbench's lat_proc (fork+exit tens of microseconds,
/// fork+execve a few hundred, on current x86 cores); unknown per machine.
pub const FORK_CYCLES: f64 = 150_000.0;
pub const EXEC_CYCLES: f64 = 450_000.0;

/// A shell-like parent's state (forkexec): it forks `children` children,
/// at most `jobs` running at once, doing `cycles_per_fork` of its own work
/// (its share of the script plus the fork) before each.
#[derive(Debug, Clone)]
pub struct Forker {
    pub children: u32,
    pub jobs: u32,
    pub cycles_per_fork: f64,
    /// Spin iterations of each child (its exec counted as more).
    pub child_units: u64,
    pub forked: u32,
    pub running: u32,
    pub reaped: u32,
    /// Nanoseconds of work already done toward the next fork.
    pub credit: f64,
    /// Sum over reaped children of fork-to-reaping time (ns).
    pub latency_ns: f64,
}

/// Run the parent `t` for up to `avail` ns from time `at`: fork while
/// fewer than `jobs` children run, then block until one exits (its exit
/// wakes the parent: [`task_exited`]). Forked children go to
/// `w.forked`, which the engine places at once through the scheduler's
/// fork/exec path.
pub(crate) fn run_forker(
    w: &mut World,
    t: TaskId,
    avail: f64,
    freq: f64,
    smt: f64,
    at: u64,
) -> (f64, RunOutcome) {
    let mut left = avail;
    let process = w.tasks[t].process;
    let affinity = w.tasks[t].affinity;
    loop {
        let Work::Fork(f) = &mut w.tasks[t].work else {
            unreachable!()
        };
        if f.reaped == f.children {
            return (avail - left, RunOutcome::Done);
        }
        if f.forked == f.children || f.running == f.jobs {
            // wait(): blocked until a child exits.
            return (avail - left, RunOutcome::Blocked);
        }
        let need = f.cycles_per_fork / freq / smt - f.credit;
        if left < need {
            f.credit += left;
            return (avail, RunOutcome::Continue);
        }
        left -= need;
        f.credit = 0.0;
        f.forked += 1;
        f.running += 1;
        let (k, units) = (f.forked, f.child_units);
        let now = at + (avail - left) as u64;
        let spin = spin_work(w.m.costs.spin_cycles);
        let id = add_task(
            w,
            format!("child {k}"),
            process,
            spin,
            units,
            Parent::Task(t),
            true,
            now,
            false,
        );
        w.tasks[id].affinity = affinity;
        w.tasks[id].ready_at = now;
        w.forked.push(id);
    }
}

/// Task `t` exited on `cpu` at `now`: a forkexec parent reaps it (its
/// times join the parent's, as `wait4` counts a reaped child's) and, if it
/// is waiting, wakes.
pub(crate) fn task_exited(w: &mut World, t: TaskId, now: u64) {
    let Parent::Task(p) = w.tasks[t].parent else {
        return;
    };
    let (mut user, mut sys, born) = (w.tasks[t].user_ns, w.tasks[t].sys_ns, w.tasks[t].start_ns);
    let c = w.m.costs;
    let Work::Fork(f) = &mut w.tasks[p].work else {
        return;
    };
    // The child's exec and the parent's fork ran as spin (user time); of
    // them, the share a machine file measured as system time moves there:
    // the child's exec units' part of its time, and the parent's fork at
    // the frequency its cycles were counted at.
    let kernel = 1.0 - c.exec_user_share;
    if kernel > 0.0 {
        let exec_units = (c.exec_cycles / c.spin_cycles).round();
        let exec_ns = user * exec_units / (f.child_units as f64).max(1.0);
        user -= exec_ns * kernel;
        sys += exec_ns * kernel;
        let fork_ns = c.fork_cycles / w.m.max_ghz * kernel;
        let parent = &mut w.tasks[p];
        let moved = fork_ns.min(parent.user_ns);
        parent.user_ns -= moved;
        parent.sys_ns += moved;
    }
    let Work::Fork(f) = &mut w.tasks[p].work else {
        return;
    };
    f.running -= 1;
    f.reaped += 1;
    f.latency_ns += now.saturating_sub(born) as f64;
    let reaped = f.reaped;
    let parent = &mut w.tasks[p];
    parent.progress = reaped as f64;
    parent.user_ns += user;
    parent.sys_ns += sys;
    if parent.state == TaskState::Blocked {
        parent.ready_at = now;
    }
    // exit_notify's wakeup of the parent is a sync one, but an exiting
    // waker's WF_SYNC is ignored (select_task_rq_fair: PF_EXITING).
    w.wake(p, false);
}

/// Spinning: `cycles` (one iteration of the spin loop) per unit.
pub(crate) fn spin_work(cycles: f64) -> Work {
    Work::Compute {
        init: VecDeque::new(),
        init_credit: 0.0,
        cycles,
        rand_lines: 0.0,
        stream_lines: 0.0,
        stream: crate::engine::Stream::Stores,
        writeback_lines: 0.0,
        wss_bytes: 0.0,
        access: Vec::new(),
    }
}

/// Stagger the start of tasks launched together, with seeded jitter: the
/// run-to-run variation of real launches (and the only randomness of a
/// run without a NUMA balancer).
fn launch_times(w: &mut World, meta: &mut Meta) {
    let mut count: std::collections::BTreeMap<u64, u64> = std::collections::BTreeMap::new();
    // How much later than planned each task's process starts its work
    // (its start, below): a thread's planned start (the autonuma
    // workers': after the first touch) counts from its process's.
    let mut shift = vec![0u64; w.tasks.len()];
    for t in 0..w.tasks.len() {
        let base = w.tasks[t].start_ns;
        let k = count.entry(base).or_insert(0);
        let step = if w.tasks[t].exec {
            w.m.costs.process_launch_ns
        } else {
            w.m.costs.thread_launch_ns
        };
        let jitter = crate::engine::rand_below(&mut w.rng, LAUNCH_JITTER_NS);
        // A process the runner launched (a benchmark task or a main
        // thread; not numa_test's storm, which it launches at a set time)
        // begins its work once started.
        let launched = w.tasks[t].main || meta.creators.contains(&t);
        shift[t] = match w.tasks[t].parent {
            Parent::Cpu(_) if meta.spawn_to_reap && launched => w.m.costs.process_start_ns,
            Parent::Cpu(_) => 0,
            Parent::Task(p) => shift[p],
        };
        w.tasks[t].start_ns = base + *k * step + shift[t] + jitter;
        *k += 1;
        // A thread starts after the thread that creates it.
        if let Parent::Task(p) = w.tasks[t].parent {
            let after = w.tasks[p].start_ns + step;
            w.tasks[t].start_ns = w.tasks[t].start_ns.max(after);
        }
    }
    if let Some(&first) = meta.disturb_tasks.first() {
        meta.disturb_start_ns = meta.disturb_start_ns.min(w.tasks[first].start_ns);
    }
}

/// A creating thread runs (kernel time: its first touch, the clones)
/// until the last thread it creates has started, wherever the launch
/// times put that start.
fn hold_creators(w: &mut World, meta: &Meta) {
    for &c in &meta.creators {
        let start = w.tasks[c].start_ns;
        let last = w
            .tasks
            .iter()
            .filter(|t| matches!(t.parent, Parent::Task(p) if p == c))
            .map(|t| t.start_ns)
            .max()
            .unwrap_or(start);
        // ... and returns from that last clone before it waits.
        let hold = (last.saturating_sub(start) + w.m.costs.thread_launch_ns) as f64;
        if hold > w.tasks[c].sys_debt {
            w.tasks[c].sys_debt = hold;
        }
    }
}

/// What the record needs to know besides the world.
#[derive(Debug, Clone)]
pub struct Meta {
    pub benchmark: String,
    pub params: BTreeMap<String, serde_json::Value>,
    pub processes: Vec<String>,
    /// Tasks that make up the benchmark proper (records' `tasks`).
    pub main_tasks: Vec<usize>,
    /// Disturbance (numa_test's hackbench) tasks and start time.
    pub disturb_tasks: Vec<usize>,
    pub disturb_start_ns: u64,
    /// The convergence criterion real runs of this benchmark are judged
    /// by (`None`: real runs record no convergence, nor does the sim).
    pub convergence: Option<Rule>,
    /// The region each main task works on (its slice, or its process's
    /// shared buffer), as real runs observe it for `task_memory_bytes`;
    /// empty for benchmarks whose real runs do not observe it.
    pub task_regions: Vec<usize>,
    /// When every main task had started with its memory placed (set by
    /// the run; the real runs' `started_s`).
    pub started_ns: Option<u64>,
    /// Bytes all threads zero in the whole run (autonuma benchmarks), or
    /// sweep (mem).
    pub bytes_zeroed: Option<u64>,
    /// When the timed part begins (mem: its barrier, once every thread
    /// has first touched its memory); `elapsed_s` counts from here.
    pub timed_from_ns: u64,
    /// Bytes each main task sweeps in all (mem), for the per-thread
    /// bandwidths.
    pub task_bytes: Option<u64>,
    /// Main threads (not benchmark tasks) that hold their CPU until the
    /// last thread they create has started, then wait for them.
    pub creators: Vec<usize>,
    /// The benchmark's real runs time a run from the runner's launch of
    /// its processes to their reaping (numa_test, the autonuma suite,
    /// spin, hackbench; not forkexec's driver or mem, which time
    /// themselves): each task the runner launches starts its work
    /// `costs.process_start_us` after its launch, and the run ends
    /// `costs.process_exit_us` after its last task (both 0 unless
    /// measured: a guest that pages numalab's binary in over 9p takes
    /// about 0.1 s to start one, docs/validation.md).
    pub spawn_to_reap: bool,
}

pub(crate) fn add_region(w: &mut World, process: usize, bytes: u64) -> usize {
    let cb = w.mem.chunk_bytes;
    let len = bytes.div_ceil(cb).max(1) as usize;
    let first = w.mem.chunks.len();
    let r = w.mem.regions.len();
    w.mem
        .chunks
        .extend(std::iter::repeat_n(Chunk::new(r as u32), len));
    while w.mem.proc_node.len() <= process {
        w.mem.proc_node.push(vec![0; w.m.nnodes]);
    }
    w.mem.regions.push(Region {
        process,
        first,
        len,
        per_node: vec![0; w.m.nnodes],
        touched: 0,
        accessors: Vec::new(),
        marked: Vec::new(),
        version: 0,
        bound: false,
    });
    r
}

fn add_mask(w: &mut World, mask: Vec<bool>) -> usize {
    if let Some(i) = w.masks.iter().position(|m| *m == mask) {
        return i;
    }
    w.masks.push(mask);
    w.masks.len() - 1
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn add_task(
    w: &mut World,
    name: String,
    process: usize,
    work: Work,
    expected: u64,
    parent: Parent,
    exec: bool,
    start_ns: u64,
    main: bool,
) -> usize {
    let id = w.tasks.len();
    // Every process has a row of memory per node, even one that never
    // maps any (spinning tasks): balancers index them by process.
    while w.mem.proc_node.len() <= process {
        w.mem.proc_node.push(vec![0; w.m.nnodes]);
    }
    if let Work::Compute { access, .. } = &work {
        for &(r, _) in access {
            w.mem.regions[r].accessors.push(id);
        }
    }
    w.tasks.push(Task {
        name,
        process,
        state: TaskState::NotStarted,
        cpu: 0,
        initial_node: None,
        placed: false,
        affinity: None,
        mem_policy: MemPolicy::Local,
        exec,
        parent,
        clone_vm: matches!(parent, Parent::Task(q) if w.tasks[q].process == process),
        start_ns,
        end_ns: None,
        main,
        last_ran: 0,
        node_time: vec![0; w.m.nnodes],
        user_ns: 0.0,
        sys_ns: 0.0,
        booked_ns: 0.0,
        sys_debt: 0.0,
        cold_debt: 0.0,
        progress: 0.0,
        work_expected: expected,
        work,
        migrations: 0,
        util: 0.0,
        util_at: 0,
        ready_at: 0,
        preferred_node: None,
        frac: Vec::new(),
        frac_key: u64::MAX,
    });
    id
}

fn stream_work(w: &World, r: usize, bytes: f64, init: bool) -> Work {
    let reg = &w.mem.regions[r];
    Work::Compute {
        init: if init {
            (reg.first..reg.first + reg.len).collect()
        } else {
            VecDeque::new()
        },
        init_credit: 0.0,
        cycles: bytes / w.m.costs.memset_bytes_per_cycle,
        rand_lines: 0.0,
        stream_lines: bytes / w.m.line_bytes,
        stream: crate::engine::Stream::Stores,
        writeback_lines: 0.0,
        wss_bytes: bytes,
        access: vec![(r, 1.0)],
    }
}

/// Messaging tasks (hackbench) of `groups` groups; returns their ids.
#[allow(clippy::too_many_arguments)]
fn add_hackbench(
    w: &mut World,
    process: usize,
    groups: u32,
    fds: u32,
    loops: u32,
    size: u32,
    start_ns: u64,
    main: bool,
    affinity: Option<usize>,
) -> Vec<usize> {
    let mut ids = Vec::new();
    let per_socket = (SOCKET_BUFFER_BYTES / (size as u64 + SKB_OVERHEAD_BYTES)).max(1);
    // The socket's and the sk_buff's lines fetched one after the other,
    // then the payload's and the sk_buff's other lines streamed mlp at a
    // time (MsgGroup::lines).
    let streamed = (size as f64 / w.m.line_bytes).ceil() + MSG_STREAMED_LINES;
    let lines = MSG_SERIAL_LINES + streamed / w.m.mlp.max(1.0);
    for g in 0..groups {
        let gi = w.groups.len();
        w.groups.push(MsgGroup {
            pending: vec![0; fds as usize],
            capacity: per_socket,
            cycles: w.m.costs.msg_cycles,
            lines,
            blocked_senders: vec![Vec::new(); fds as usize],
            receivers: Vec::new(),
            receiver_blocked: vec![false; fds as usize],
            llc_members: vec![0; w.m.llc_count()],
            cpu_members: vec![0; w.m.ncpus],
            members: 0,
        });
        let msgs = fds as u64 * loops as u64;
        for (role, sender) in [("receiver", false), ("sender", true)] {
            for i in 0..fds {
                let id = add_task(
                    w,
                    format!("hackbench g{g} {role} {i}"),
                    process,
                    Work::Message {
                        group: gi,
                        sender,
                        // Receivers read their own socket; sender i starts
                        // writing at socket 0 like hackbench's loop.
                        slot: if sender { 0 } else { i as usize },
                        remaining: msgs,
                        credit: 0.0,
                    },
                    msgs,
                    Parent::Cpu(0),
                    false,
                    start_ns,
                    main,
                );
                w.tasks[id].affinity = affinity;
                if !sender {
                    w.groups[gi].receivers.push(id);
                }
                ids.push(id);
            }
        }
    }
    ids
}

/// Why a case cannot be simulated on the machine.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CaseError {
    /// A CPU list naming a CPU the machine does not have.
    #[error("CPU {cpu} is not on this machine (it has CPUs 0-{})", .ncpus - 1)]
    NoSuchCpu { cpu: u32, ncpus: usize },
    /// An external command, which the simulator cannot run.
    #[error("{}", COMMAND_UNSUPPORTED)]
    Command,
    /// numa_test without tasks or elements.
    #[error("numa_test needs at least 1 task and size > 0")]
    EmptyNumaTest,
    /// The benchmark's parameters or placement (numalab-bench's words).
    #[error("{0}")]
    Params(String),
    /// More memory than the machine has.
    #[error("{benchmark} needs {} of memory but machine {machine} has {}", numalab_topology::human_bytes(*.need), numalab_topology::human_bytes(*.have))]
    OutOfMemory {
        benchmark: String,
        need: u64,
        machine: String,
        have: u64,
    },
}

fn cpu_mask(w: &mut World, cpus: &Option<Vec<u32>>) -> Result<Option<usize>, CaseError> {
    match cpus {
        None => Ok(None),
        Some(list) => {
            let mut mask = vec![false; w.m.ncpus];
            for &c in list {
                if c as usize >= w.m.ncpus {
                    return Err(CaseError::NoSuchCpu {
                        cpu: c,
                        ncpus: w.m.ncpus,
                    });
                }
                mask[c as usize] = true;
            }
            Ok(Some(add_mask(w, mask)))
        }
    }
}

/// Node index (in the machine's order) of topology node `id`.
fn node_ix(w: &World, id: u32) -> usize {
    w.m.topology.node_index(id).unwrap_or(0)
}

/// Create the tasks and memory of `case` in `w`: the benchmark's shared
/// definition (numalab-bench), with its costs modelled here.
pub fn populate(case: &Case, w: &mut World) -> Result<Meta, CaseError> {
    let mut meta = Meta {
        benchmark: case.benchmark(),
        params: case.params(),
        processes: Vec::new(),
        main_tasks: Vec::new(),
        disturb_tasks: Vec::new(),
        disturb_start_ns: 0,
        convergence: case.convergence(),
        task_regions: Vec::new(),
        started_ns: None,
        bytes_zeroed: None,
        timed_from_ns: 0,
        task_bytes: None,
        creators: Vec::new(),
        spawn_to_reap: false,
    };
    match case {
        Case::NumaTest(p) => add_numa_test(w, &mut meta, p)?,
        Case::Autonuma(p) => add_autonuma(w, &mut meta, p)?,
        Case::Spin(p) => add_spin(w, &mut meta, p)?,
        Case::Hackbench(p) => add_hackbench_case(w, &mut meta, p)?,
        Case::ForkExec(p) => add_forkexec(w, &mut meta, p)?,
        Case::Mem(p) => add_mem(w, &mut meta, p)?,
        Case::Command(_) => return Err(CaseError::Command),
    }
    let need = w.mem.chunks.len() as u64 * w.mem.chunk_bytes;
    let have: u64 = w.m.memory_bytes.iter().sum();
    if need > have {
        return Err(CaseError::OutOfMemory {
            benchmark: meta.benchmark.clone(),
            need,
            machine: w.m.name.clone(),
            have,
        });
    }
    launch_times(w, &mut meta);
    hold_creators(w, &meta);
    if let Case::Mem(p) = case {
        mem_barrier(w, &mut meta, p);
    }
    Ok(meta)
}

/// numa_test: N tasks of random indirect updates over their own arrays,
/// and the hackbench load peak when it is asked for.
fn add_numa_test(
    w: &mut World,
    meta: &mut Meta,
    p: &numalab_bench::numa_test::Params,
) -> Result<(), CaseError> {
    if p.tasks == 0 || p.size == 0 {
        return Err(CaseError::EmptyNumaTest);
    }
    let n = p.size as f64;
    // randupdt.c's update `a[j]=a[j]+b[i];` writes the line of `a` it
    // read: every miss of `a` brings in a line that leaves the LLC dirty,
    // one write-back per miss in the steady state (counted at a lone
    // task's LLC share, its streamed ix and b taking their places as the
    // engine counts them; write-backs are posted, so they load the buses
    // and controllers, not the core).
    let lone_miss = 1.0
        - crate::cache::random_hit_share(
            w.m.llc_bytes / (8.0 * n),
            RANDUPDT_STREAM_BYTES / w.m.line_bytes,
        );
    meta.spawn_to_reap = true;
    for i in 0..p.tasks as usize {
        let pi = meta.processes.len();
        meta.processes.push(format!("task {}", i + 1));
        // a (8n) + b (8n) + ix (4n) bytes, as randupdt.c allocates.
        let r = add_region(w, pi, p.bytes_per_task());
        let reg = &w.mem.regions[r];
        let work = Work::Compute {
            init: (reg.first..reg.first + reg.len).collect(),
            init_credit: 0.0,
            cycles: n * w.m.costs.randupdt_cycles,
            rand_lines: n,
            stream_lines: n * RANDUPDT_STREAM_BYTES / w.m.line_bytes,
            // ix[i] and b[i], read in order.
            stream: crate::engine::Stream::Loads,
            writeback_lines: n * lone_miss,
            wss_bytes: 8.0 * n,
            access: vec![(r, 1.0)],
        };
        let id = add_task(
            w,
            format!("task {}", i + 1),
            pi,
            work,
            p.passes as u64,
            Parent::Cpu(0),
            true,
            0,
            true,
        );
        meta.main_tasks.push(id);
    }
    if p.disturb == Disturb::Messaging {
        let pi = meta.processes.len();
        meta.processes.push(format!("hackbench {PEAK_GROUPS}"));
        let _ = add_region(w, pi, 1);
        meta.disturb_start_ns = (p.peak_at_s * 1e9) as u64;
        meta.disturb_tasks = add_hackbench(
            w,
            pi,
            PEAK_GROUPS,
            PEAK_FDS,
            PEAK_LOOPS,
            PEAK_SIZE,
            meta.disturb_start_ns,
            false,
            None,
        );
    }
    Ok(())
}

/// The autonuma suite and twohalves: each process's regions first touched
/// where its plan says, then its threads sweeping them.
fn add_autonuma(
    w: &mut World,
    meta: &mut Meta,
    p: &numalab_bench::autonuma::Params,
) -> Result<(), CaseError> {
    let plan = p
        .plan(&w.m.topology)
        .map_err(|e| CaseError::Params(e.to_string()))?;
    meta.bytes_zeroed = Some(p.bytes_zeroed());
    meta.spawn_to_reap = true;
    let nprocs = plan.procs.len();
    for pp in &plan.procs {
        let pi = meta.processes.len();
        meta.processes
            .push(format!("{} process {}", p.kind.name(), pp.process));
        // Where the first touch puts chunk `k` (counted from the
        // buffer's start) of region `r`.
        let first_node = |w: &World, r: usize, k: u64| match &pp.memory {
            MemPlan::FirstTouchThenDefault { node } => node_ix(w, *node),
            MemPlan::Bound { nodes } => {
                node_ix(w, nodes.get(r).or(nodes.last()).copied().unwrap_or(0))
            }
            MemPlan::BoundToSet { nodes } => node_ix(w, interleave(nodes, k).unwrap_or(0)),
        };
        // The process's regions, first touched before its threads
        // work: the whole buffer (shared), or one slice per thread.
        let page = w.mem.chunk_bytes;
        let slices = pp.regions(page);
        let mut regions = Vec::new();
        let bound = !matches!(pp.memory, MemPlan::FirstTouchThenDefault { .. });
        for (ri, &(off, len)) in slices.iter().enumerate() {
            let r = add_region(w, pi, len);
            w.mem.regions[r].bound = bound;
            let first = w.mem.regions[r].first;
            for i in 0..w.mem.regions[r].len {
                let node = first_node(w, ri, off / page + i as u64);
                w.mem.allocate(&w.m, first + i, node);
            }
            regions.push((r, len));
        }
        // The main thread's first touch, before it starts the
        // threads: its page faults and zeroing, kernel time. The plan's
        // processes start together, so they fault at once, each slowed
        // by the others where the machine's faults contend
        // (`costs.first_touch_two_gbs`).
        let touched: u64 = slices.iter().map(|&(_, len)| len).sum();
        let touch_ns = w.m.costs.first_touch_ns_among(touched, nprocs);
        let process_mask = cpu_mask(w, &pp.process_cpus)?;
        let name = match nprocs {
            1 => "main thread".to_string(),
            _ => format!("process {} main thread", pp.process),
        };
        let main = add_main_thread(w, name, pi, pp.threads, touch_ns, process_mask);
        meta.creators.push(main);
        let mut first_thread = None;
        // numa01*'s threads each zero the whole buffer once before their
        // loops (Kind::whole_first, numa01.c's bzero(p_global, SIZE)):
        // the same bytes as that many more loops over their own region.
        let passes = p.loops + p.kind.whole_first_loops(pp.threads);
        for t in 0..pp.threads {
            let (r, len) = regions[pp.region_of_thread(t)];
            let work = stream_work(w, r, len as f64, false);
            let id = add_task(
                w,
                p.kind.task_name(nprocs, p.threads, pp.process, t),
                pi,
                work,
                passes,
                Parent::Task(main),
                false,
                touch_ns,
                true,
            );
            // The records hold the workers: the main thread's first touch
            // is booked on the first (not its runtime: task_tick_numa).
            if first_thread.is_none() {
                w.tasks[id].sys_ns += touch_ns as f64;
                w.tasks[id].booked_ns += touch_ns as f64;
            }
            first_thread.get_or_insert(id);
            // Every worker is a thread of the main one.
            w.tasks[id].clone_vm = true;
            let mask = match pp.thread_cpus.get(t as usize).cloned().flatten() {
                Some(c) => cpu_mask(w, &Some(c))?,
                None => process_mask,
            };
            w.tasks[id].affinity = mask;
            meta.main_tasks.push(id);
            meta.task_regions.push(r);
        }
    }
    Ok(())
}

/// An autonuma benchmark process's main thread: it first touches the
/// buffer, then creates its `threads` workers one after another and
/// waits for them (pthread_join). It holds its CPU all the while, so the
/// kernel chooses each new thread's CPU with the creator still running
/// there (wake_up_new_task -> select_task_rq_fair, SD_BALANCE_FORK:
/// find_idlest_cpu): with as many workers as CPUs the last one shares a
/// CPU until the main thread sleeps and the load balancer moves one
/// (docs/validation.md, "Task migrations: where the workers start"). Its
/// CPU time is kernel time (page faults, clone); waiting, it is gone.
fn add_main_thread(
    w: &mut World,
    name: String,
    process: usize,
    threads: u32,
    touch_ns: u64,
    mask: Option<usize>,
) -> usize {
    // One unit of one cycle once its kernel work is done: it exits.
    let main = add_task(
        w,
        name,
        process,
        spin_work(1.0),
        1,
        Parent::Cpu(0),
        true,
        0,
        false,
    );
    let creating = f64::from(threads) * w.m.costs.thread_launch_ns as f64;
    w.charge_sys(main, touch_ns as f64 + creating);
    w.tasks[main].affinity = mask;
    main
}

/// spin: tasks spinning on the CPUs of their set.
fn add_spin(
    w: &mut World,
    meta: &mut Meta,
    p: &numalab_bench::placement::SpinParams,
) -> Result<(), CaseError> {
    let mask = cpu_mask(w, &p.set.cpus)?;
    meta.spawn_to_reap = true;
    for i in 0..p.tasks as usize {
        let pi = meta.processes.len();
        meta.processes.push(format!("spin task {}", i + 1));
        let work = spin_work(w.m.costs.spin_cycles);
        let id = add_task(
            w,
            format!("spin {}", i + 1),
            pi,
            work,
            p.iterations.max(1),
            Parent::Cpu(0),
            true,
            0,
            true,
        );
        w.tasks[id].affinity = mask;
        meta.main_tasks.push(id);
    }
    let _ = add_region(w, 0, 1);
    Ok(())
}

/// hackbench: its groups of senders and receivers on the CPUs of their set.
fn add_hackbench_case(
    w: &mut World,
    meta: &mut Meta,
    p: &numalab_bench::placement::HackbenchParams,
) -> Result<(), CaseError> {
    let mask = cpu_mask(w, &p.set.cpus)?;
    meta.processes
        .push(format!("hackbench {} groups x {} fds", p.groups, p.fds));
    meta.spawn_to_reap = true;
    let _ = add_region(w, 0, 1);
    meta.main_tasks = add_hackbench(w, 0, p.groups, p.fds, p.loops, p.size, 0, true, mask);
    Ok(())
}

/// forkexec: one parent forking and reaping its children.
fn add_forkexec(
    w: &mut World,
    meta: &mut Meta,
    p: &numalab_bench::forkexec::Params,
) -> Result<(), CaseError> {
    p.check().map_err(|e| CaseError::Params(e.to_string()))?;
    meta.processes.push("forkexec parent".into());
    let _ = add_region(w, 0, 1);
    let c = w.m.costs;
    let work = Work::Fork(Forker {
        children: p.children,
        jobs: p.jobs,
        cycles_per_fork: p.parent_iterations as f64 * c.spin_cycles + c.fork_cycles,
        child_units: p.child_iterations + (c.exec_cycles / c.spin_cycles).round() as u64,
        forked: 0,
        running: 0,
        reaped: 0,
        credit: 0.0,
        latency_ns: 0.0,
    });
    let id = add_task(
        w,
        "forkexec parent".into(),
        0,
        work,
        p.children as u64,
        Parent::Cpu(0),
        true,
        0,
        true,
    );
    meta.main_tasks.push(id);
    Ok(())
}

/// mem: a thread pinned to each of its CPUs, each with its own buffer
/// bound to the memory node, swept `loops` times (read: a line in per
/// line; write: in and back out; memset: out).
fn add_mem(
    w: &mut World,
    meta: &mut Meta,
    p: &numalab_bench::mem::Params,
) -> Result<(), CaseError> {
    p.check(&w.m.topology)
        .map_err(|e| CaseError::Params(e.to_string()))?;
    let cpus = p
        .cpus(&w.m.topology)
        .map_err(|e| CaseError::Params(e.to_string()))?;
    meta.processes.push(format!("mem, {} threads", p.threads));
    meta.bytes_zeroed = Some(p.bytes_swept());
    meta.task_bytes = Some(p.bytes.saturating_mul(p.loops));
    let mem_node = node_ix(w, p.mem_node);
    let mut first = None;
    for (t, &cpu) in cpus.iter().enumerate() {
        let r = add_region(w, 0, p.bytes);
        w.mem.regions[r].bound = true;
        let reg_first = w.mem.regions[r].first;
        for i in 0..w.mem.regions[r].len {
            w.mem.allocate(&w.m, reg_first + i, mem_node);
        }
        let bytes = p.bytes as f64;
        let work = Work::Compute {
            init: VecDeque::new(),
            init_credit: 0.0,
            cycles: bytes / w.m.costs.sweep_bytes_per_cycle(p.op),
            rand_lines: 0.0,
            stream_lines: bytes / w.m.line_bytes,
            // A read sweep loads its lines, a read-modify-write updates
            // them, memset stores them.
            stream: crate::engine::Stream::of_sweep(p.op),
            // A read-modify-write writes each line back (posted, so it
            // loads the controller without stalling the core).
            writeback_lines: bytes / w.m.line_bytes * (p.op.lines_per_line() - 1.0),
            wss_bytes: bytes,
            access: vec![(r, 1.0)],
        };
        let parent = first.map_or(Parent::Cpu(0), Parent::Task);
        let id = add_task(
            w,
            format!("mem {}", t + 1),
            0,
            work,
            p.loops,
            parent,
            first.is_none(),
            0,
            true,
        );
        w.tasks[id].clone_vm = first.is_some();
        w.tasks[id].affinity = cpu_mask(w, &Some(vec![cpu]))?;
        first.get_or_insert(id);
        meta.main_tasks.push(id);
        meta.task_regions.push(r);
    }
    Ok(())
}

/// mem's barrier: each thread first touches its own buffer once started
/// (its page faults, system time), and all sweep from the moment the
/// last has finished.
fn mem_barrier(w: &mut World, meta: &mut Meta, p: &numalab_bench::mem::Params) {
    let touch_ns = w.m.costs.first_touch_ns(p.bytes);
    let last_start = meta
        .main_tasks
        .iter()
        .map(|&t| w.tasks[t].start_ns)
        .max()
        .unwrap_or(0);
    let barrier = last_start + touch_ns;
    for &t in &meta.main_tasks {
        w.tasks[t].start_ns = barrier;
        w.tasks[t].sys_ns += touch_ns as f64;
    }
    meta.timed_from_ns = barrier;
}

/// Why the simulator refuses `run command`.
pub const COMMAND_UNSUPPORTED: &str =
    "the simulator cannot run a program: `command` runs on this machine (numalab run) or in a guest (numalab vm)";

#[cfg(test)]
mod tests {
    use numalab_bench::forkexec::Params;
    use numalab_bench::Case;
    use numalab_record::Repetition;

    /// Every child runs and is reaped, the parent never runs while it
    /// waits, and no more than `jobs` children run at once.
    #[test]
    fn forkexec_runs_every_child_and_the_parent_waits() {
        for (sched, jobs) in [("linux", 1), ("nest", 1), ("linux", 3), ("nest", 3)] {
            let mut cfg = crate::SimConfig::new("epyc7642", sched, "none", 1).unwrap();
            cfg.trace = true;
            let case = Case::ForkExec(Params {
                children: 40,
                jobs,
                child_iterations: 200_000,
                parent_iterations: 10_000,
            });
            let rep = Repetition { index: 1, of: 1 };
            let out = crate::run(&cfg, &case, "t", rep, &mut |_| {}, &|| false).unwrap();
            let r = &out.record;
            assert!(r.outcome.is_ok(), "{sched} {jobs}");
            assert_eq!(r.tasks.len(), 1);
            assert_eq!(r.tasks[0].work_done, 40, "{sched} {jobs}: children reaped");
            let el = r.metrics["elapsed_s"].value;
            let rate = r.metrics["children_per_s"].value;
            assert!((rate * el - 40.0).abs() < 1e-6);
            assert!(r.metrics["child_latency_ms"].value > 0.0);
            // The parent's user time includes its reaped children's.
            assert!(r.metrics["user_s"].value > 40.0 * 200_000.0 * 6.0 / 3.3e9);
            let trace = out.trace.expect("traced");
            let v: serde_json::Value = serde_json::from_str(&trace).unwrap();
            let spans: Vec<(f64, f64, bool)> = v["traceEvents"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|e| e["ph"] == "X")
                .map(|e| {
                    let ts = e["ts"].as_f64().unwrap();
                    let child = e["name"].as_str().unwrap().starts_with("child");
                    (ts, ts + e["dur"].as_f64().unwrap(), child)
                })
                .collect();
            let children: Vec<_> = spans.iter().filter(|s| s.2).collect();
            let names: std::collections::BTreeSet<&str> = v["traceEvents"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|e| e["ph"] == "X")
                .filter_map(|e| e["name"].as_str())
                .filter(|n| n.starts_with("child"))
                .collect();
            assert_eq!(names.len(), 40, "{sched} {jobs}: every child ran");
            for &(a, b, child) in &spans {
                let mid = (a + b) / 2.0;
                let running = children.iter().filter(|c| c.0 <= mid && mid < c.1).count();
                assert!(
                    running <= jobs as usize,
                    "{sched}: {running} children at once"
                );
                if !child && jobs == 1 {
                    assert_eq!(running, 0, "{sched}: the parent ran while it waited");
                }
            }
        }
    }
}
