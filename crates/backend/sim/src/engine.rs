//! The time-stepped engine: the [`World`] every policy sees and the loop
//! that advances it one scheduler tick at a time.

use crate::machine::{Governor, Machine};
use rand_chacha::ChaCha8Rng;
use rand_core::Rng;
use std::collections::VecDeque;

pub type TaskId = usize;
pub type CpuId = usize;
pub const NO_NODE: u16 = u16::MAX;
/// PELT's half-life: a utilisation sum halves every 32 ms (LOAD_AVG_PERIOD).
pub const PELT_HALF_LIFE_NS: f64 = 32e6;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskState {
    NotStarted,
    Runnable,
    Running,
    Blocked,
    Done,
}

/// Why a CPU is being chosen for a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// A new task: `exec` for a new program (process), else a new thread
    /// or forked child; `parent_cpu` is where its creator runs.
    New { parent_cpu: CpuId, exec: bool },
    /// A blocked task woken by a task running on `waker_cpu` (still
    /// running there as it wakes it). `sync`: the waker says it will sleep
    /// soon (WF_SYNC: a pipe or socket write); never for an exiting waker
    /// (select_task_rq_fair ignores WF_SYNC from a PF_EXITING task).
    Wake { waker_cpu: CpuId, sync: bool },
}

/// Where a task's first touches allocate memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemPolicy {
    /// The node of the CPU the task runs on (Linux's default policy).
    Local,
    /// A fixed node (MPOL_BIND / MPOL_PREFERRED).
    Node(usize),
}

/// What a task's streamed lines are, for how many of them one core keeps
/// in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// Stores (a zeroing): `memory.mlp`.
    Stores,
    /// Loads (a read sweep, numa_test's index and source arrays):
    /// `memory.read_mlp`.
    Loads,
    /// Loads whose lines are written back as they leave (mem's write
    /// sweep): `memory.write_mlp`.
    Updates,
}

impl Stream {
    /// The lines of mem's sweep `op`.
    pub fn of_sweep(op: numalab_bench::mem::Op) -> Stream {
        use numalab_bench::mem::Op;
        match op {
            Op::Read => Stream::Loads,
            Op::Write => Stream::Updates,
            Op::Memset => Stream::Stores,
        }
    }

    /// Lines of this kind one core keeps in flight on `m`.
    pub fn mlp(self, m: &crate::machine::Machine) -> f64 {
        match self {
            Stream::Stores => m.mlp,
            Stream::Loads => m.read_mlp,
            Stream::Updates => m.write_mlp,
        }
    }
}

/// What a task does.
#[derive(Debug, Clone)]
pub enum Work {
    /// Memory and compute work: first touches its `init` chunks, then does
    /// `units` work units, each `cycles` of compute plus `rand_lines`
    /// dependent (latency-bound) and `stream_lines` independent
    /// (bandwidth-bound) cache-line accesses spread over `access`.
    Compute {
        init: VecDeque<usize>,
        init_credit: f64,
        cycles: f64,
        rand_lines: f64,
        stream_lines: f64,
        /// What the streamed lines are: stores, loads or updates in
        /// place, each with its own count in flight.
        stream: Stream,
        /// Lines written back to memory per unit (a read-modify-write's
        /// dirty lines): they load the memory controllers but do not
        /// stall the core (write-backs are posted).
        writeback_lines: f64,
        /// Bytes the random accesses range over (for the LLC hit ratio).
        wss_bytes: f64,
        access: Vec<(usize, f64)>,
    },
    /// A hackbench sender or receiver of message group `group`. A
    /// receiver reads socket `slot`; a sender writes next to socket `slot`.
    Message {
        group: usize,
        sender: bool,
        slot: usize,
        remaining: u64,
        credit: f64,
    },
    /// A shell-like parent (forkexec) that forks short-lived children
    /// (`crate::workload::run_forker`); it blocks while it waits for them.
    Fork(crate::workload::Forker),
}

#[derive(Debug, Clone)]
pub struct Task {
    pub name: String,
    pub process: usize,
    pub state: TaskState,
    /// CPU the task runs on, is queued on, or last ran on.
    pub cpu: CpuId,
    /// Node of the CPU the task first ran on (the seed's iSched).
    pub initial_node: Option<usize>,
    /// Whether the task has been put on a run queue yet.
    pub placed: bool,
    /// Index into [`World::masks`]; `None` = any CPU.
    pub affinity: Option<usize>,
    pub mem_policy: MemPolicy,
    pub exec: bool,
    pub parent: Parent,
    /// A thread (created with CLONE_VM) of a process that already ran:
    /// its parent is a task of the same process, or the process's main
    /// thread is not simulated (the autonuma benchmarks' workers, started
    /// by a main thread that first-touched the buffer and then waits).
    pub clone_vm: bool,
    pub start_ns: u64,
    pub end_ns: Option<u64>,
    /// The run ends when every main task is done.
    pub main: bool,
    pub last_ran: u64,
    pub node_time: Vec<u64>,
    pub user_ns: f64,
    pub sys_ns: f64,
    /// System time booked on the task before it runs (its process's main
    /// thread's first touch, which the model does not run as a task):
    /// counted in the record, not in its runtime for NUMA scanning.
    pub booked_ns: f64,
    /// Kernel work (balancer scans, faults, migrations) still to be paid.
    pub sys_debt: f64,
    /// Cache refill still to be paid after a migration.
    pub cold_debt: f64,
    pub progress: f64,
    pub work_expected: u64,
    pub work: Work,
    pub migrations: u64,
    /// PELT utilisation (0..1) of the task as of `util_at` (ns); it is
    /// part of the utilisation of the CPU the task is attached to.
    pub util: f64,
    pub util_at: u64,
    /// Not runnable before this time (ns): when the event that made it
    /// runnable within a tick happened (a fork, a child's exit).
    pub ready_at: u64,
    /// NUMA balancer's preferred node, visible to schedulers.
    pub preferred_node: Option<usize>,
    /// Cached fraction of accesses per node, valid while the summed
    /// versions of the task's regions equal `frac_key`.
    pub frac: Vec<f64>,
    pub frac_key: u64,
}

#[derive(Debug, Clone, Copy)]
pub enum Parent {
    Cpu(CpuId),
    Task(TaskId),
}

impl Task {
    pub fn is_done(&self) -> bool {
        self.state == TaskState::Done
    }
}

/// A memory region (a process's shared buffer, a thread's slice) made of
/// chunks, each on one node.
#[derive(Debug, Clone)]
pub struct Region {
    pub process: usize,
    pub first: usize,
    pub len: usize,
    pub per_node: Vec<u32>,
    pub touched: u32,
    /// Tasks that access the region.
    pub accessors: Vec<TaskId>,
    /// Chunks made inaccessible by a NUMA scan and not yet faulted.
    pub marked: Vec<u32>,
    /// Bumped whenever a chunk of the region is placed or moved.
    pub version: u64,
    /// Bound by a memory policy (MPOL_BIND): NUMA balancing neither scans
    /// nor migrates it (the kernel's task_numa_work skips a VMA whose
    /// policy is not MPOL_F_MOF, and mpol_misplaced leaves a bound page
    /// where it is).
    pub bound: bool,
}

#[derive(Debug, Clone)]
pub struct Memory {
    pub chunk_bytes: u64,
    /// One record per chunk: everything a hinting fault reads and writes
    /// sits in one 16-byte record, so a fault costs one cache miss, not
    /// one per array (base pages: millions of chunks, faults in random
    /// order).
    pub chunks: Vec<Chunk>,
    pub regions: Vec<Region>,
    pub used: Vec<u64>,
    pub capacity: Vec<u64>,
    pub proc_node: Vec<Vec<u64>>,
}

/// A chunk of memory (a 4 KiB page, or a 2 MiB huge page).
#[derive(Debug, Clone, Copy)]
pub struct Chunk {
    /// Its node, or [`NO_NODE`] before the first touch.
    pub node: u16,
    /// Node and task of the last NUMA fault on it (the page's cpupid, for
    /// the two-reference filter); [`NO_NODE`] / `u32::MAX` when unset.
    pub last_node: u16,
    pub last_task: u32,
    /// The region it belongs to.
    pub region: u32,
    /// Marked PROT_NONE by the NUMA scanner, not yet faulted.
    pub marked: bool,
}

impl Chunk {
    pub fn new(region: u32) -> Chunk {
        Chunk {
            node: NO_NODE,
            last_node: NO_NODE,
            last_task: u32::MAX,
            region,
            marked: false,
        }
    }
}

impl Memory {
    pub fn chunk_pages(&self) -> u64 {
        self.chunk_bytes / 4096
    }

    /// Allocate chunk `c` on `want`, or the nearest node with room.
    pub fn allocate(&mut self, m: &Machine, c: usize, want: usize) {
        debug_assert_eq!(self.chunks[c].node, NO_NODE);
        let mut node = want;
        if self.used[want] >= self.capacity[want] {
            let mut order: Vec<usize> = (0..m.nnodes).collect();
            order.sort_by_key(|&n| (m.distances[want][n], n));
            node = order
                .into_iter()
                .find(|&n| self.used[n] < self.capacity[n])
                .unwrap_or(want);
        }
        self.chunks[c].node = node as u16;
        self.used[node] += 1;
        let r = self.chunks[c].region as usize;
        let reg = &mut self.regions[r];
        reg.per_node[node] += 1;
        reg.touched += 1;
        reg.version += 1;
        self.proc_node[reg.process][node] += 1;
    }

    /// Move chunk `c` to `dst`; false when it is already there or `dst` is full.
    pub fn migrate(&mut self, c: usize, dst: usize) -> bool {
        let ch = &mut self.chunks[c];
        let src = ch.node;
        if src == NO_NODE || src as usize == dst || self.used[dst] >= self.capacity[dst] {
            return false;
        }
        let src = src as usize;
        ch.node = dst as u16;
        let r = ch.region as usize;
        self.used[src] -= 1;
        self.used[dst] += 1;
        let reg = &mut self.regions[r];
        reg.per_node[src] -= 1;
        reg.per_node[dst] += 1;
        reg.version += 1;
        self.proc_node[reg.process][src] -= 1;
        self.proc_node[reg.process][dst] += 1;
        true
    }
}

/// A message group (hackbench): every sender writes its messages to the
/// group's receivers in turn, one socket per receiver. A sender blocks on
/// a full socket, a receiver on its empty one; a write wakes the socket's
/// blocked receiver, a read the senders blocked on that socket.
#[derive(Debug, Clone)]
pub struct MsgGroup {
    /// Messages waiting in each receiver's socket.
    pub pending: Vec<u64>,
    /// Messages a socket holds before a writer blocks.
    pub capacity: u64,
    pub cycles: f64,
    /// Cache lines a message moves between its writer's and its reader's
    /// caches, as a count of serial transfers: the socket's and the
    /// sk_buff's lines the kernel takes one after the other (locks,
    /// reference counts, slab frees: [`crate::workload::MSG_SERIAL_LINES`]),
    /// the payload's and the sk_buff's other lines streamed with the
    /// core's misses in flight (`mlp` at a time).
    pub lines: f64,
    /// Senders blocked on each receiver's full socket.
    pub blocked_senders: Vec<Vec<TaskId>>,
    /// The receiver task of each socket, and whether it is blocked.
    pub receivers: Vec<TaskId>,
    pub receiver_blocked: Vec<bool>,
    /// Members' last CPU per LLC and per CPU (for the cost of moving
    /// message lines: a peer on the same CPU left them in its caches).
    pub llc_members: Vec<u32>,
    pub cpu_members: Vec<u32>,
    pub members: u32,
}

#[derive(Debug, Clone, Default)]
pub struct CpuRq {
    pub curr: Option<TaskId>,
    pub queue: VecDeque<TaskId>,
    pub slice_left: u64,
    /// PELT-style utilisation (0..1) for schedutil, as others see it.
    pub util: f64,
    /// Utilisation of tasks that left (exited or moved away) not yet
    /// taken off `util`: the kernel subtracts a departed task's util_avg
    /// (cfs_rq->removed) at the CPU's next PELT update, which for an idle
    /// CPU is the next blocked-load update or enqueue.
    removed_util: f64,
    pub freq_ghz: f64,
    pub idle_since: u64,
    /// How long the CPU's last idle period ended by a wakeup or fork
    /// lasted (None: not yet in this run): the idle governor's guess of
    /// the next one.
    last_idle_ns: Option<u64>,
    pub busy_at_tick: bool,
    /// The last task that ran on the CPU in this tick.
    ran: Option<TaskId>,
    /// Busy at the tick's start with a task that misses in the cache (it
    /// takes a share of its core's miss buffers; see `run_task`).
    pub mem_at_tick: bool,
    trace_task: Option<TaskId>,
    trace_start: u64,
}

impl CpuRq {
    pub fn nr_running(&self) -> usize {
        self.queue.len() + self.curr.is_some() as usize
    }
    pub fn is_idle(&self) -> bool {
        self.curr.is_none() && self.queue.is_empty()
    }
    /// The PELT update that takes departed tasks' utilisation off.
    fn apply_removed(&mut self) {
        self.util = (self.util - self.removed_util).max(0.0);
        self.removed_util = 0.0;
    }
}

/// Counters that become metrics and vmstat deltas.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    pub pages_migrated: u64,
    pub hint_faults: u64,
    pub hint_faults_local: u64,
    pub pte_updates: u64,
    pub samples: u64,
    pub task_migrations: u64,
    pub numa_task_moves: u64,
    pub numa_swaps: u64,
    /// Longest stretch during which some CPU sat idle while another had a
    /// queued task allowed to run on it.
    pub max_idle_imbalance_ns: u64,
    pub idle_imbalance_ns: u64,
    pub ticks: u64,
}

/// One span of a task on a CPU, for `--trace`.
#[derive(Debug, Clone)]
pub struct Span {
    pub cpu: CpuId,
    pub task: TaskId,
    pub start: u64,
    pub end: u64,
    /// Why it ended: preempted (or moved away while runnable), blocked,
    /// exited, or still running when the run ended.
    pub end_state: numalab_trace::export::SliceEnd,
}

/// Everything a policy can see and change.
pub struct World {
    pub m: Machine,
    pub now: u64,
    pub tick_ns: u64,
    pub tasks: Vec<Task>,
    pub cpus: Vec<CpuRq>,
    pub mem: Memory,
    pub groups: Vec<MsgGroup>,
    /// CPU masks for affinity (`Task::affinity` indexes this).
    pub masks: Vec<Vec<bool>>,
    pub rng: ChaCha8Rng,
    pub stats: Stats,
    pub trace: Option<Vec<Span>>,
    /// Per path (`cpu node * nnodes + memory node`): the contention
    /// factor applied to its memory latency this tick.
    pub contention: Vec<f64>,
    /// Per machine resource (`Machine::resources`): its utilisation
    /// (demand over bandwidth) in the last tick.
    pub resource_rho: Vec<f64>,
    resource_wait: Vec<f64>,
    resource_cap: Vec<f64>,
    /// The (demand, memory-weighted demand) each resource's rho, wait and
    /// cap were last computed from, as bits: a tick with the same demand
    /// as the last (the usual case) keeps them without dividing again.
    resource_load_key: Vec<Option<(u64, u64, u64)>>,
    /// Bytes per ns per path, last tick's and this tick's, and the same
    /// weighted by the share of memory time in the work that made them.
    demand: Vec<f64>,
    demand_next: Vec<f64>,
    demand_mem: Vec<f64>,
    demand_mem_next: Vec<f64>,
    /// The loads among the demand (a controller may serve them at
    /// another rate: `memory.read_bandwidth_gbs`).
    demand_read: Vec<f64>,
    demand_read_next: Vec<f64>,
    /// Busy CPUs per LLC and busy cores per package at the tick's start.
    llc_busy: Vec<u32>,
    pkg_busy_cores: Vec<u32>,
    /// Tasks woken in this run slice, with the wakeup's sync hint.
    wakeups: Vec<(TaskId, bool)>,
    /// Tasks forked in the current run of a task, to be placed at once.
    pub(crate) forked: Vec<TaskId>,
    pelt_decay: f64,
    /// Per task: run_compute's last inputs and results (see [`ComputeMemo`]).
    compute_memo: Vec<ComputeMemo>,
    /// A thread's misses in flight, streamed and random, when `k` other
    /// threads of its core miss too (index `k`): `run_task`'s two
    /// divisions, done once per machine.
    mlp_shares: Vec<(f64, f64)>,
    /// When idle CPUs' blocked utilisation is next brought up to date
    /// (nohz.next_blocked: every LOAD_AVG_PERIOD, 32 ms).
    next_blocked_ns: u64,
    /// The share of this tick a busy CPU runs: 1, or the machine's
    /// `run_at_once` over the busy CPUs when more are busy than can run
    /// at once (a guest's vCPUs on fewer host CPUs).
    run_share: f64,
}

/// How often idle CPUs' blocked load is updated (LOAD_AVG_PERIOD, ms).
const BLOCKED_UPDATE_NS: u64 = 32_000_000;

impl World {
    pub fn new(m: Machine, tick_ns: u64, chunk_bytes: u64, rng: ChaCha8Rng, trace: bool) -> World {
        let nn = m.nnodes;
        let cap: Vec<u64> = m.memory_bytes.iter().map(|b| b / chunk_bytes).collect();
        let cpus = (0..m.ncpus)
            .map(|_| CpuRq {
                freq_ghz: m.base_ghz,
                ..Default::default()
            })
            .collect();
        let pelt_decay = 0.5f64.powf(tick_ns as f64 / PELT_HALF_LIFE_NS);
        let smt_max = m.core_cpus.iter().map(Vec::len).max().unwrap_or(1);
        let mlp_shares = (0..smt_max.max(1))
            .map(|missing| {
                let mlp = m.mlp / (1 + missing) as f64;
                // Random misses overlap as the core allows, shared like mlp.
                (mlp, (m.random_mlp * mlp / m.mlp).max(1.0))
            })
            .collect();
        World {
            now: 0,
            tick_ns,
            tasks: Vec::new(),
            cpus,
            mem: Memory {
                chunk_bytes,
                chunks: Vec::new(),
                regions: Vec::new(),
                used: vec![0; nn],
                capacity: cap,
                proc_node: Vec::new(),
            },
            groups: Vec::new(),
            masks: Vec::new(),
            rng,
            stats: Stats::default(),
            trace: if trace { Some(Vec::new()) } else { None },
            contention: vec![1.0; nn * nn],
            resource_rho: vec![0.0; m.resources.len()],
            resource_wait: vec![0.0; m.resources.len()],
            resource_cap: vec![0.0; m.resources.len()],
            resource_load_key: vec![None; m.resources.len()],
            demand: vec![0.0; nn * nn],
            demand_next: vec![0.0; nn * nn],
            demand_mem: vec![0.0; nn * nn],
            demand_mem_next: vec![0.0; nn * nn],
            demand_read: vec![0.0; nn * nn],
            demand_read_next: vec![0.0; nn * nn],
            llc_busy: vec![0; m.llc_count()],
            pkg_busy_cores: vec![0; m.npackages],
            wakeups: Vec::new(),
            forked: Vec::new(),
            pelt_decay,
            compute_memo: Vec::new(),
            mlp_shares,
            next_blocked_ns: BLOCKED_UPDATE_NS,
            run_share: 1.0,
            m,
        }
    }

    // ----- helpers for policies -----

    pub fn allowed(&self, t: TaskId, cpu: CpuId) -> bool {
        match self.tasks[t].affinity {
            None => true,
            Some(i) => self.masks[i][cpu],
        }
    }

    pub fn node_of(&self, cpu: CpuId) -> usize {
        self.m.cpu_node[cpu]
    }

    pub fn task_node(&self, t: TaskId) -> usize {
        self.m.cpu_node[self.tasks[t].cpu]
    }

    pub fn nr_running(&self, cpu: CpuId) -> usize {
        self.cpus[cpu].nr_running()
    }

    /// Whether `cpu` had work in this tick: busy at its start, or a task
    /// ran on it since. An idle CPU without any was idle all along (it
    /// sits in the idle loop until an interrupt), not one that just ran
    /// out of work.
    pub fn had_work_this_tick(&self, cpu: CpuId) -> bool {
        self.cpus[cpu].busy_at_tick || self.cpus[cpu].ran.is_some()
    }

    /// Runnable tasks on a node.
    pub fn node_nr_running(&self, node: usize) -> usize {
        self.m.node_cpus[node]
            .iter()
            .map(|&c| self.cpus[c].nr_running())
            .sum()
    }

    /// Bytes of the task's accessed memory on each node (weights of its
    /// regions applied).
    pub fn task_memory_nodes(&self, t: TaskId) -> Vec<f64> {
        let mut v = vec![0.0; self.m.nnodes];
        if let Work::Compute { access, .. } = &self.tasks[t].work {
            for &(r, w) in access {
                let reg = &self.mem.regions[r];
                for (n, &c) in reg.per_node.iter().enumerate() {
                    v[n] += w * c as f64 * self.mem.chunk_bytes as f64;
                }
            }
        }
        v
    }

    /// Add kernel work to be charged to `t` as system time.
    pub fn charge_sys(&mut self, t: TaskId, ns: f64) {
        self.tasks[t].sys_debt += ns;
    }

    fn close_span(&mut self, cpu: CpuId, end_state: numalab_trace::export::SliceEnd) {
        if let Some(tr) = self.trace.as_mut() {
            let rq = &mut self.cpus[cpu];
            if let Some(t) = rq.trace_task.take() {
                if self.now > rq.trace_start {
                    tr.push(Span {
                        cpu,
                        task: t,
                        start: rq.trace_start,
                        end: self.now,
                        end_state,
                    });
                }
            }
        }
    }

    fn open_span(&mut self, cpu: CpuId, t: TaskId, at: u64) {
        if self.trace.is_some() {
            let rq = &mut self.cpus[cpu];
            if rq.trace_task != Some(t) {
                if let (Some(old), Some(tr)) = (rq.trace_task, self.trace.as_mut()) {
                    if at > rq.trace_start {
                        tr.push(Span {
                            cpu,
                            task: old,
                            start: rq.trace_start,
                            end: at,
                            end_state: numalab_trace::export::SliceEnd::Preempted,
                        });
                    }
                }
                rq.trace_task = Some(t);
                rq.trace_start = at;
            }
        }
    }

    /// Put a runnable task on `cpu`'s queue (tail). Handles the cost of a
    /// move to another cache and the bookkeeping of message groups.
    pub fn enqueue(&mut self, t: TaskId, cpu: CpuId) {
        let old = self.tasks[t].cpu;
        if self.tasks[t].placed && old != cpu {
            self.note_move(t, old, cpu);
            // The task's utilisation leaves the old CPU and joins the new
            // one (migrate_task_rq_fair: remove_entity_load_avg, then
            // attach_entity_load_avg at the enqueue).
            let u = self.task_util(t);
            self.cpus[old].removed_util += u;
            self.cpus[cpu].util += u;
            self.tasks[t].util = u;
            self.tasks[t].util_at = self.now;
        }
        if !self.tasks[t].placed {
            // A new task starts with half the CPU's spare capacity
            // (post_init_entity_util_avg, on the CPU's utilisation as it
            // stands, departed tasks included), which joins the CPU's.
            let u = ((1.0 - self.cpus[cpu].util) / 2.0).max(0.0);
            self.tasks[t].util = u;
            self.tasks[t].util_at = self.now;
            self.cpus[cpu].util += u;
            self.tasks[t].placed = true;
            if let Work::Message { group, .. } = self.tasks[t].work {
                let g = &mut self.groups[group];
                g.llc_members[self.m.cpu_llc[cpu]] += 1;
                g.cpu_members[cpu] += 1;
                g.members += 1;
            }
        }
        // The enqueue updates the CPU's PELT sums: departed tasks'
        // utilisation comes off now.
        self.cpus[cpu].apply_removed();
        let task = &mut self.tasks[t];
        task.cpu = cpu;
        task.state = TaskState::Runnable;
        self.cpus[cpu].queue.push_back(t);
    }

    fn note_move(&mut self, t: TaskId, from: CpuId, to: CpuId) {
        self.stats.task_migrations += 1;
        self.tasks[t].migrations += 1;
        let (la, lb) = (self.m.cpu_llc[from], self.m.cpu_llc[to]);
        if let Work::Message { group, .. } = self.tasks[t].work {
            let g = &mut self.groups[group];
            g.cpu_members[from] = g.cpu_members[from].saturating_sub(1);
            g.cpu_members[to] += 1;
        }
        if la != lb {
            match self.tasks[t].work {
                Work::Compute { wss_bytes, .. } => {
                    // The lines that were cache hits must be fetched again.
                    let lines = wss_bytes.min(self.m.llc_bytes) / self.m.line_bytes;
                    let lat = self.mean_latency(t, to);
                    self.tasks[t].cold_debt += lines * lat / self.m.mlp;
                }
                Work::Message { group, .. } => {
                    let g = &mut self.groups[group];
                    g.llc_members[la] = g.llc_members[la].saturating_sub(1);
                    g.llc_members[lb] += 1;
                }
                // A shell's few lines: not modelled.
                Work::Fork(_) => {}
            }
        }
    }

    /// Move a runnable or running task to `dst` (used by balancers).
    /// Returns false if the task is not runnable or not allowed there.
    pub fn migrate(&mut self, t: TaskId, dst: CpuId) -> bool {
        let src = self.tasks[t].cpu;
        if src == dst || !self.allowed(t, dst) {
            return false;
        }
        match self.tasks[t].state {
            TaskState::Runnable => {
                let q = &mut self.cpus[src].queue;
                if let Some(i) = q.iter().position(|&x| x == t) {
                    q.remove(i);
                } else {
                    return false;
                }
            }
            TaskState::Running => {
                if self.cpus[src].curr != Some(t) {
                    return false;
                }
                self.cpus[src].curr = None;
                // Moved away while running: it stays runnable.
                self.close_span(src, numalab_trace::export::SliceEnd::Preempted);
                self.cpus[src].idle_since = self.now;
            }
            _ => return false,
        }
        self.enqueue(t, dst);
        true
    }

    /// Task `t`'s utilisation now (decayed since it last ran).
    pub fn task_util(&self, t: TaskId) -> f64 {
        let task = &self.tasks[t];
        let dt = self.now.saturating_sub(task.util_at) as f64;
        task.util * 0.5f64.powf(dt / PELT_HALF_LIFE_NS)
    }

    /// Task `t`, woken or forked onto `cpu`, starts once the CPU has left
    /// its idle state when the machine declares idle states: the deepest
    /// one whose target residency the CPU's previous idle period reached
    /// (the menu governor predicts the next idle period from the recent
    /// ones; one is taken here). A CPU idle since the run began is in the
    /// deepest.
    fn wake_from_idle(&mut self, t: TaskId, cpu: CpuId) {
        if self.m.idle_states.is_empty() || !self.cpus[cpu].is_idle() {
            return;
        }
        let rq = &self.cpus[cpu];
        let predicted = rq.last_idle_ns.map_or(f64::INFINITY, |x| x as f64);
        let woken = self.tasks[t].ready_at.max(rq.idle_since);
        self.cpus[cpu].last_idle_ns = Some(woken - rq.idle_since);
        if let Some(&(exit_ns, _)) = self.m.idle_states.iter().rev().find(|s| s.1 <= predicted) {
            self.tasks[t].ready_at = woken + exit_ns as u64;
        }
    }

    /// Wake blocked task `t` from the task now running (`sync`: a WF_SYNC
    /// wakeup): it is placed through the scheduler's wakeup path while
    /// the waker is still current.
    pub fn wake(&mut self, t: TaskId, sync: bool) {
        if self.tasks[t].state == TaskState::Blocked {
            self.tasks[t].state = TaskState::Runnable;
            self.wakeups.push((t, sync));
        }
    }

    /// Idle-latency-weighted memory latency of task `t` if it ran on `cpu`.
    pub fn mean_latency(&self, t: TaskId, cpu: CpuId) -> f64 {
        let cn = self.m.cpu_node[cpu];
        let mut total = 0.0;
        let mut wsum = 0.0;
        if let Work::Compute { access, .. } = &self.tasks[t].work {
            for &(r, w) in access {
                let reg = &self.mem.regions[r];
                if reg.touched == 0 {
                    continue;
                }
                let inv = w / reg.touched as f64;
                for (n, &c) in reg.per_node.iter().enumerate() {
                    if c > 0 {
                        total += inv * c as f64 * self.m.latency_ns[cn][n];
                    }
                }
                wsum += w;
            }
        }
        if wsum > 0.0 {
            total / wsum
        } else {
            self.m.latency_ns[cn][cn]
        }
    }

    /// Bytes per nanosecond the task streams into region `r` while running
    /// (approximate, from its last unit time); used by NUMA fault sampling.
    pub fn access_rate(&self, t: TaskId) -> f64 {
        match &self.tasks[t].work {
            Work::Compute {
                rand_lines,
                stream_lines,
                stream,
                cycles,
                init,
                ..
            } => {
                if !init.is_empty() {
                    return 0.0;
                }
                let cpu = self.tasks[t].cpu;
                let l = self.mean_latency(t, cpu);
                let smlp = stream.mlp(&self.m);
                let unit = cycles / self.cpus[cpu].freq_ghz.max(0.1)
                    + rand_lines * l / self.m.random_mlp
                    + stream_lines * l / smlp;
                if unit <= 0.0 {
                    0.0
                } else {
                    (rand_lines + stream_lines) * self.m.line_bytes / unit
                }
            }
            Work::Message { .. } | Work::Fork(_) => 0.0,
        }
    }
}

/// The scheduler interface. Adding a scheduler = one module implementing
/// this and one line in [`crate::sched::REGISTRY`].
pub trait Scheduler {
    /// Choose a CPU for a new or waking task (must be allowed by affinity).
    fn select_cpu(&mut self, w: &mut World, t: TaskId, why: Placement) -> CpuId;
    /// Called once per tick after tasks ran; periodic balancing goes here.
    fn tick(&mut self, w: &mut World);
    /// `cpu` just ran out of work within a tick (it was busy at the
    /// tick's start or ran a task since): it may pull a task. A CPU idle
    /// all along is not asked; it balances at the policy's own timer.
    fn idle(&mut self, _w: &mut World, _cpu: CpuId) {}
    /// Length of the slice a task gets when it starts running on `cpu`.
    fn slice_ns(&self, w: &World, cpu: CpuId) -> u64;
    /// A task finished or blocked (bookkeeping hook).
    fn task_left(&mut self, _w: &mut World, _t: TaskId, _cpu: CpuId) {}
    /// The imbalance_pct of the scheduler's NUMA domain (sd_numa), which
    /// task_numa_migrate halves above 100; `None` without scheduling
    /// domains.
    fn numa_imbalance_pct(&self) -> Option<f64> {
        None
    }
}

/// The NUMA balancer interface (memory placement and NUMA task moves).
pub trait Balancer {
    /// Called once per tick after tasks ran.
    fn tick(&mut self, w: &mut World, sched: &mut dyn Scheduler);
}

/// Pick the first allowed CPU (deterministic fallback).
pub fn first_allowed(w: &World, t: TaskId) -> CpuId {
    (0..w.m.ncpus).find(|&c| w.allowed(t, c)).unwrap_or(0)
}

/// The engine: a world plus its two policies.
pub struct Engine {
    pub w: World,
    pub sched: Box<dyn Scheduler>,
    pub bal: Box<dyn Balancer>,
    max_passes: usize,
    budget: Vec<u64>,
    /// Tasks not started yet, latest start first (popped from the end).
    pending: Vec<TaskId>,
    spawned: usize,
}

impl Engine {
    pub fn new(w: World, sched: Box<dyn Scheduler>, bal: Box<dyn Balancer>) -> Engine {
        Engine {
            w,
            sched,
            bal,
            max_passes: 4,
            budget: Vec::new(),
            pending: Vec::new(),
            spawned: 0,
        }
    }

    /// All main tasks done?
    pub fn finished(&self) -> bool {
        self.w.tasks.iter().filter(|t| t.main).all(|t| t.is_done())
    }

    /// Advance one tick.
    pub fn step(&mut self) {
        let dt = self.w.tick_ns;
        self.spawn_due();
        self.prepare_tick();
        let ncpus = self.w.m.ncpus;
        let mut budget = std::mem::take(&mut self.budget);
        budget.clear();
        budget.resize(ncpus, dt);
        for pass in 0..self.max_passes {
            let mut any = false;
            for cpu in 0..ncpus {
                if budget[cpu] == 0 {
                    continue;
                }
                if pass > 0 && self.w.cpus[cpu].is_idle() {
                    continue;
                }
                let used = self.run_cpu(cpu, budget[cpu]);
                budget[cpu] -= used.min(budget[cpu]);
                if used > 0 {
                    any = true;
                }
                self.place_wakeups(cpu);
            }
            if !any {
                break;
            }
        }
        self.budget = budget;
        self.finish_tick(dt);
        self.w.now += dt;
        self.sched.tick(&mut self.w);
        self.bal.tick(&mut self.w, self.sched.as_mut());
        self.check_idle_imbalance(dt);
        self.w.stats.ticks += 1;
    }

    fn spawn_due(&mut self) {
        if self.pending.len() + self.spawned < self.w.tasks.len() {
            // Tasks added since the last look: rebuild the pending list.
            let mut p: Vec<TaskId> = (0..self.w.tasks.len())
                .filter(|&t| self.w.tasks[t].state == TaskState::NotStarted)
                .collect();
            p.sort_by_key(|&t| {
                (
                    std::cmp::Reverse(self.w.tasks[t].start_ns),
                    std::cmp::Reverse(t),
                )
            });
            self.spawned = self.w.tasks.len() - p.len();
            self.pending = p;
        }
        while let Some(&t) = self.pending.last() {
            let task = &self.w.tasks[t];
            if task.start_ns > self.w.now {
                break;
            }
            self.pending.pop();
            self.spawned += 1;
            let parent_cpu = match task.parent {
                Parent::Cpu(c) => c,
                Parent::Task(p) => self.w.tasks[p].cpu,
            };
            let exec = task.exec;
            let mut cpu =
                self.sched
                    .select_cpu(&mut self.w, t, Placement::New { parent_cpu, exec });
            if !self.w.allowed(t, cpu) {
                cpu = first_allowed(&self.w, t);
            }
            self.w.tasks[t].cpu = cpu;
            self.w.enqueue(t, cpu);
        }
    }

    fn prepare_tick(&mut self) {
        let w = &mut self.w;
        for x in w.llc_busy.iter_mut() {
            *x = 0;
        }
        for x in w.pkg_busy_cores.iter_mut() {
            *x = 0;
        }
        let smt = w.m.core_cpus.first().is_some_and(|c| c.len() > 1);
        let mut nbusy = 0usize;
        for cpu in 0..w.m.ncpus {
            let rq = &w.cpus[cpu];
            let busy = !rq.is_idle();
            let mem = smt
                && busy
                && rq
                    .curr
                    .or_else(|| rq.queue.front().copied())
                    .is_some_and(|t| misses_in_cache(&w.tasks[t].work));
            w.cpus[cpu].busy_at_tick = busy;
            w.cpus[cpu].mem_at_tick = mem;
            if busy {
                w.llc_busy[w.m.cpu_llc[cpu]] += 1;
                nbusy += 1;
            }
        }
        if w.m.run_at_once < w.m.ncpus {
            w.run_share = (w.m.run_at_once as f64 / nbusy.max(1) as f64).min(1.0);
        }
        let fixed_freq = w.m.governor == Governor::Performance && w.m.max_ghz == w.m.base_ghz;
        if !fixed_freq {
            for (core, cpus) in w.m.core_cpus.iter().enumerate() {
                if cpus.iter().any(|&c| w.cpus[c].busy_at_tick) {
                    w.pkg_busy_cores[w.m.core_package[core]] += 1;
                }
            }
        }
        // Frequency: the package's boost limit falls linearly from max_ghz
        // (one busy core) to base_ghz (all cores busy); under schedutil a
        // CPU asks for 1.25 x util x limit (kernel/sched/cpufreq_schedutil.c).
        let span = (w.m.cores_per_package.max(2) - 1) as f64;
        // Fixed frequency (no boost, no governor): nothing to compute.
        for cpu in (0..w.m.ncpus).filter(|_| !fixed_freq) {
            let pkg = w.m.cpu_package[cpu];
            let busy = w.pkg_busy_cores[pkg].max(1) as f64;
            let limit = w.m.max_ghz - (w.m.max_ghz - w.m.base_ghz) * (busy - 1.0) / span;
            let f = match w.m.governor {
                Governor::Performance => limit,
                Governor::Schedutil => (1.25 * w.cpus[cpu].util * limit).clamp(w.m.min_ghz, limit),
            };
            w.cpus[cpu].freq_ghz = f;
        }
        // A core runs at the highest frequency any of its threads asks for.
        for cpus in w.m.core_cpus.iter().filter(|c| !fixed_freq && c.len() > 1) {
            let f = cpus.iter().map(|&c| w.cpus[c].freq_ghz).fold(0.0, f64::max);
            for &c in cpus {
                w.cpus[c].freq_ghz = f;
            }
        }
        // Memory contention from last tick's demand (the uncontended
        // rate of the work done). Each resource (memory controller, bus)
        // queues like M/M/1 on its line service time: a wait of
        // svc x rho / (1 - rho), counted in units of its reference
        // latency, with rho capped at 0.95. A path's latency factor adds
        // the waits of every resource it crosses (queues in tandem) and is
        // at least the largest throughput cap among them: the factor f on
        // the memory part of the work that brings the resource's traffic
        // down to its bandwidth. With a share phi of memory time in that
        // work (demand-weighted), the rate falls by 1 - phi + phi x f, so
        // f = (rho - 1 + phi) / phi; for pure memory work, f = rho.
        for (i, r) in w.m.resources.iter().enumerate() {
            let (mut demand, mut mem, mut read) = (0.0, 0.0, 0.0);
            for &p in &r.paths {
                demand += w.demand[p];
                mem += w.demand_mem[p];
                read += w.demand_read[p];
            }
            let key = Some((demand.to_bits(), mem.to_bits(), read.to_bits()));
            if w.resource_load_key[i] == key {
                continue;
            }
            w.resource_load_key[i] = key;
            if demand == 0.0 {
                (w.resource_rho[i], w.resource_wait[i], w.resource_cap[i]) = (0.0, 0.0, 0.0);
                continue;
            }
            (w.resource_rho[i], w.resource_wait[i], w.resource_cap[i]) = r.load(demand, read, mem);
        }
        for (p, res) in w.m.path_resources.iter().enumerate() {
            let (mut wait, mut cap) = (0.0, 0.0f64);
            for &i in res {
                wait += w.resource_wait[i];
                cap = cap.max(w.resource_cap[i]);
            }
            w.contention[p] = (1.0 + wait).max(cap);
            w.demand_next[p] = 0.0;
            w.demand_mem_next[p] = 0.0;
            w.demand_read_next[p] = 0.0;
        }
    }

    fn finish_tick(&mut self, dt: u64) {
        let w = &mut self.w;
        let decay = w.pelt_decay;
        let end = w.now + dt;
        for cpu in 0..w.m.ncpus {
            // A CPU's utilisation is the sum of its tasks' (PELT's cfs_rq
            // util_avg): all of them decay, and the one that ran (the
            // current one, or the last to run in the tick) accrues.
            let busy = w.cpus[cpu].curr.is_some() || w.cpus[cpu].busy_at_tick;
            let owner = w.cpus[cpu]
                .curr
                .or(w.cpus[cpu].ran.take())
                .filter(|&t| !w.tasks[t].is_done() && w.tasks[t].cpu == cpu);
            // Departed tasks' utilisation comes off at the tick of a CPU
            // still busy at its end, and at an idle one's blocked-load
            // update (an idle CPU takes no tick).
            if !w.cpus[cpu].is_idle() || end >= w.next_blocked_ns {
                w.cpus[cpu].apply_removed();
            } else {
                w.cpus[cpu].removed_util *= decay;
            }
            let mut u = w.cpus[cpu].util * decay;
            if let (true, Some(t)) = (busy, owner) {
                u += 1.0 - decay;
                let task = &mut w.tasks[t];
                let since = end.saturating_sub(task.util_at);
                // Usually it ran the tick before: one tick's decay, known.
                let d = if since == w.tick_ns {
                    decay
                } else {
                    0.5f64.powf(since as f64 / PELT_HALF_LIFE_NS)
                };
                task.util = task.util * d + (1.0 - decay);
                task.util_at = end;
            }
            w.cpus[cpu].util = u;
        }
        if end >= w.next_blocked_ns {
            w.next_blocked_ns = end + BLOCKED_UPDATE_NS;
        }
        std::mem::swap(&mut w.demand, &mut w.demand_next);
        std::mem::swap(&mut w.demand_mem, &mut w.demand_mem_next);
        std::mem::swap(&mut w.demand_read, &mut w.demand_read_next);
        let _ = dt;
    }

    fn check_idle_imbalance(&mut self, dt: u64) {
        let w = &mut self.w;
        let idle: Vec<CpuId> = (0..w.m.ncpus).filter(|&c| w.cpus[c].is_idle()).collect();
        let mut bad = false;
        if !idle.is_empty() {
            // Whether an affinity mask allows some idle CPU, once per mask.
            let mut memo: Vec<Option<bool>> = vec![None; w.masks.len()];
            'outer: for busy in 0..w.m.ncpus {
                if w.cpus[busy].nr_running() < 2 {
                    continue;
                }
                for &t in &w.cpus[busy].queue {
                    let ok = match w.tasks[t].affinity {
                        None => true,
                        Some(m) => {
                            *memo[m].get_or_insert_with(|| idle.iter().any(|&c| w.masks[m][c]))
                        }
                    };
                    if ok {
                        bad = true;
                        break 'outer;
                    }
                }
            }
        }
        if bad {
            w.stats.idle_imbalance_ns += dt;
            w.stats.max_idle_imbalance_ns =
                w.stats.max_idle_imbalance_ns.max(w.stats.idle_imbalance_ns);
        } else {
            w.stats.idle_imbalance_ns = 0;
        }
    }

    /// Place the tasks woken by the task running on `waker_cpu`: usually
    /// none, so the test is inlined into the callers and the loop is not.
    #[inline(always)]
    fn place_wakeups(&mut self, waker_cpu: CpuId) {
        if !self.w.wakeups.is_empty() {
            self.place_wakeups_now(waker_cpu);
        }
    }

    #[inline(never)]
    fn place_wakeups_now(&mut self, waker_cpu: CpuId) {
        while let Some((t, sync)) = self.w.wakeups.pop() {
            let mut cpu =
                self.sched
                    .select_cpu(&mut self.w, t, Placement::Wake { waker_cpu, sync });
            if !self.w.allowed(t, cpu) {
                cpu = first_allowed(&self.w, t);
            }
            self.w.wake_from_idle(t, cpu);
            self.w.enqueue(t, cpu);
        }
    }

    /// Place the tasks forked by a task running on `cpu` (the fork and
    /// exec path: `Placement::New`), at once so they run within the tick.
    fn place_forks(&mut self, cpu: CpuId) {
        while !self.w.forked.is_empty() {
            let t = self.w.forked.remove(0);
            let exec = self.w.tasks[t].exec;
            let mut c = self.sched.select_cpu(
                &mut self.w,
                t,
                Placement::New {
                    parent_cpu: cpu,
                    exec,
                },
            );
            if !self.w.allowed(t, c) {
                c = first_allowed(&self.w, t);
            }
            self.w.wake_from_idle(t, c);
            self.w.tasks[t].cpu = c;
            self.w.enqueue(t, c);
            self.spawned += 1;
        }
    }

    /// Run `cpu` for up to `budget` ns; returns the time used.
    fn run_cpu(&mut self, cpu: CpuId, budget: u64) -> u64 {
        let start = self.w.now + (self.w.tick_ns - budget);
        let mut used: u64 = 0;
        let mut idled = false;
        while used < budget {
            if self.w.cpus[cpu].curr.is_none() {
                match self.w.cpus[cpu].queue.pop_front() {
                    Some(t) => {
                        // A task forked or woken later in the tick than
                        // this CPU's time cannot start before that: the
                        // CPU idles until then (or to the tick's end).
                        let ready = self.w.tasks[t].ready_at;
                        if ready > start + used {
                            if ready >= start + budget {
                                self.w.cpus[cpu].queue.push_front(t);
                                used = budget;
                                break;
                            }
                            used = ready - start;
                        }
                        let slice = self.sched.slice_ns(&self.w, cpu);
                        let rq = &mut self.w.cpus[cpu];
                        rq.curr = Some(t);
                        rq.slice_left = slice.max(1);
                        self.w.tasks[t].state = TaskState::Running;
                        if self.w.tasks[t].initial_node.is_none() {
                            self.w.tasks[t].initial_node = Some(self.w.m.cpu_node[cpu]);
                        }
                        self.w.open_span(cpu, t, start + used);
                    }
                    None => {
                        if idled {
                            break;
                        }
                        idled = true;
                        // Idle from now, unless it was idle all along.
                        if self.w.cpus[cpu].busy_at_tick || used > 0 {
                            self.w.cpus[cpu].idle_since = start + used;
                        }
                        // Only a CPU that just ran out of work balances
                        // now (schedule(): 2.5's load_balance(rq, 1),
                        // CFS's newidle_balance); one idle all along waits
                        // for its own timer, the policy's tick().
                        if self.w.had_work_this_tick(cpu) {
                            self.sched.idle(&mut self.w, cpu);
                        }
                        if self.w.cpus[cpu].queue.is_empty() {
                            break;
                        }
                        continue;
                    }
                }
            }
            let t = self.w.cpus[cpu].curr.expect("current task");
            let avail = (budget - used).min(self.w.cpus[cpu].slice_left);
            let (ran, outcome) = self.run_task(cpu, t, avail, start + used);
            used += ran;
            self.w.cpus[cpu].ran = Some(t);
            // Children forked during the run are placed while their
            // parent is still current (wake_up_new_task at fork).
            self.place_forks(cpu);
            let now = start + used;
            if outcome == RunOutcome::Done {
                // exit_notify wakes the parent before the task is gone.
                crate::workload::task_exited(&mut self.w, t, now);
            }
            // The wakeups the task made (a message's receivers, an exiting
            // child's parent) are placed while it is still current:
            // try_to_wake_up runs in the waker's context, so to
            // wake_affine and select_idle_sibling its CPU is busy.
            self.place_wakeups(cpu);
            let rq = &mut self.w.cpus[cpu];
            rq.slice_left = rq.slice_left.saturating_sub(ran);
            self.w.tasks[t].last_ran = now;
            match outcome {
                RunOutcome::Continue => {
                    if self.w.cpus[cpu].slice_left == 0 {
                        if self.w.cpus[cpu].queue.is_empty() {
                            let slice = self.sched.slice_ns(&self.w, cpu);
                            self.w.cpus[cpu].slice_left = slice.max(1);
                        } else {
                            self.w.cpus[cpu].curr = None;
                            self.w.tasks[t].state = TaskState::Runnable;
                            self.w.cpus[cpu].queue.push_back(t);
                        }
                    }
                }
                RunOutcome::Blocked | RunOutcome::Done => {
                    self.w.cpus[cpu].curr = None;
                    if let Some(tr) = self.w.trace.as_mut() {
                        let rq = &mut self.w.cpus[cpu];
                        if rq.trace_task == Some(t) {
                            if now > rq.trace_start {
                                tr.push(Span {
                                    cpu,
                                    task: t,
                                    start: rq.trace_start,
                                    end: now,
                                    end_state: if outcome == RunOutcome::Done {
                                        numalab_trace::export::SliceEnd::Exited
                                    } else {
                                        numalab_trace::export::SliceEnd::Slept
                                    },
                                });
                            }
                            rq.trace_task = None;
                        }
                    }
                    if outcome == RunOutcome::Done {
                        self.w.tasks[t].state = TaskState::Done;
                        self.w.tasks[t].end_ns = Some(now);
                        // An exiting task's utilisation leaves its CPU
                        // (task_dead_fair: remove_entity_load_avg).
                        let u = self.w.task_util(t);
                        self.w.cpus[cpu].removed_util += u;
                        self.w.tasks[t].util = 0.0;
                    } else {
                        self.w.tasks[t].state = TaskState::Blocked;
                    }
                    self.sched.task_left(&mut self.w, t, cpu);
                }
            }
            if ran == 0 && outcome == RunOutcome::Continue {
                break;
            }
        }
        used
    }

    /// Run task `t` on `cpu` for up to `avail` ns. With more CPUs busy
    /// than can run at once, a CPU runs `run_share` of the time: the task
    /// does that share of `avail`'s work in it, and its time is booked
    /// whole (a guest's kernel does not see its vCPU wait for the host:
    /// TCG gives it no steal time).
    fn run_task(&mut self, cpu: CpuId, t: TaskId, avail: u64, at: u64) -> (u64, RunOutcome) {
        let share = self.w.run_share;
        if share >= 1.0 {
            return self.run_task_running(cpu, t, avail, at);
        }
        let task = &self.w.tasks[t];
        let (user0, sys0) = (task.user_ns, task.sys_ns);
        let work = ((avail as f64 * share) as u64).max(1);
        let (did, outcome) = self.run_task_running(cpu, t, work, at);
        let wall = if outcome == RunOutcome::Continue {
            avail
        } else {
            ((did as f64 / share).round() as u64).min(avail)
        };
        let node = self.w.m.cpu_node[cpu];
        let task = &mut self.w.tasks[t];
        task.user_ns = user0 + (task.user_ns - user0) / share;
        task.sys_ns = sys0 + (task.sys_ns - sys0) / share;
        task.node_time[node] += wall.saturating_sub(did);
        (wall, outcome)
    }

    /// Run task `t` on `cpu`, running all the while, for up to `avail` ns.
    fn run_task_running(
        &mut self,
        cpu: CpuId,
        t: TaskId,
        avail: u64,
        at: u64,
    ) -> (u64, RunOutcome) {
        let w = &mut self.w;
        let node = w.m.cpu_node[cpu];
        let mut left = avail as f64;
        // Kernel work first, then the cache refill after a migration.
        {
            let task = &mut w.tasks[t];
            if task.sys_debt > 0.0 {
                let x = task.sys_debt.min(left);
                task.sys_debt -= x;
                task.sys_ns += x;
                left -= x;
            }
            if task.cold_debt > 0.0 && left > 0.0 {
                let x = task.cold_debt.min(left);
                task.cold_debt -= x;
                task.user_ns += x;
                left -= x;
            }
        }
        let freq = w.cpus[cpu].freq_ghz;
        // SMT siblings share the core: a busy sibling slows the compute
        // part, and the core's miss buffers (L1D line fill buffers, `mlp`)
        // are shared by the threads that miss: with k of them each keeps
        // mlp / k lines in flight (Intel's optimization manual: the L1D
        // and its fill buffers are competitively shared between the
        // logical processors, only a few queues are partitioned).
        // (mlp / (1 + missing), and the random misses' share of it, from
        // the table World::new made.)
        let (smt, (mlp, rmlp)) = {
            let core = w.m.cpu_core[cpu];
            let (mut busy, mut missing) = (false, 0usize);
            for &c in &w.m.core_cpus[core] {
                if c != cpu && w.cpus[c].busy_at_tick {
                    busy = true;
                    missing += w.cpus[c].mem_at_tick as usize;
                }
            }
            let smt = if busy { w.m.smt_throughput } else { 1.0 };
            (smt, w.mlp_shares[missing])
        };
        let mut outcome = RunOutcome::Continue;
        if left > 0.0 {
            let (spent, out) = match w.tasks[t].work {
                Work::Compute { .. } => run_compute(w, t, cpu, left, freq, smt, (mlp, rmlp)),
                Work::Message { .. } => run_message(w, t, cpu, left, freq, smt),
                Work::Fork(_) => crate::workload::run_forker(w, t, left, freq, smt, at),
            };
            // A message's write() or read() is a system call: kernel
            // time, as the kernel accounts it (hackbench is ~90% sys),
            // but for the user share a machine file measured.
            if matches!(w.tasks[t].work, Work::Message { .. }) {
                let user = spent * w.m.costs.msg_user_share;
                w.tasks[t].user_ns += user;
                w.tasks[t].sys_ns += spent - user;
            } else {
                w.tasks[t].user_ns += spent;
            }
            left -= spent;
            outcome = out;
        }
        // (Rounded only when needed: `round` is a call into libm.)
        let ran = if outcome == RunOutcome::Continue {
            avail
        } else {
            ((avail as f64 - left).round().max(0.0) as u64).min(avail)
        };
        w.tasks[t].node_time[node] += ran;
        (ran, outcome)
    }

    /// Run until all main tasks are done, `limit_ns` of simulated time
    /// has passed, or `on_tick` returns false (the caller was told to stop).
    pub fn run(&mut self, limit_ns: u64, mut on_tick: impl FnMut(&World) -> bool) {
        while !self.finished() && self.w.now < limit_ns {
            self.step();
            if !on_tick(&self.w) {
                break;
            }
        }
        for cpu in 0..self.w.m.ncpus {
            self.w
                .close_span(cpu, numalab_trace::export::SliceEnd::Running);
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RunOutcome {
    Continue,
    Blocked,
    Done,
}

/// Whether work misses in the cache (and so holds miss buffers).
fn misses_in_cache(work: &Work) -> bool {
    match work {
        Work::Compute {
            init,
            rand_lines,
            stream_lines,
            ..
        } => !init.is_empty() || *rand_lines > 0.0 || *stream_lines > 0.0,
        // A shell forking children computes (its fork and exec costs).
        Work::Message { .. } | Work::Fork(_) => false,
    }
}

/// Compute work: returns (ns spent, outcome). `mlp` is this thread's share
/// of its core's misses in flight.
fn run_compute(
    w: &mut World,
    t: TaskId,
    cpu: CpuId,
    avail: f64,
    freq: f64,
    smt: f64,
    // Misses in flight: streamed, and random independent ones.
    (mlp, rmlp): (f64, f64),
) -> (f64, RunOutcome) {
    let cn = w.m.cpu_node[cpu];
    let Some(left) = first_touches(w, t, cn, avail, mlp) else {
        return (avail, RunOutcome::Continue);
    };
    refresh_access_fractions(w, t);
    // Taken out while the world is borrowed, put back at the end.
    let frac = std::mem::take(&mut w.tasks[t].frac);
    let (l0, lc) = path_latencies(w, cn, &frac);
    if w.compute_memo.len() <= t {
        w.compute_memo
            .resize(w.tasks.len().max(t + 1), ComputeMemo::default());
    }
    let ghz = freq * smt;
    let key = [
        w.llc_busy[w.m.cpu_llc[cpu]] as u64,
        ghz.to_bits(),
        mlp.to_bits(),
        rmlp.to_bits(),
        l0.to_bits(),
        lc.to_bits(),
    ];
    if !w.compute_memo[t].holds(&key) {
        // The hit share changes only with the LLC's busy CPUs (a root to
        // find, crate::cache): kept while they stay the same.
        let old = &w.compute_memo[t];
        let hit = if old.hit_busy == key[0] + 1 {
            old.hit
        } else {
            random_hit_share(w, t, cpu)
        };
        let u = unit_times(w, t, ghz, (mlp, rmlp), (l0, lc), hit);
        w.compute_memo[t] = ComputeMemo {
            valid: true,
            key,
            u,
            hit_busy: key[0] + 1,
            hit,
            ..ComputeMemo::default()
        };
    }
    let memo = &mut w.compute_memo[t];
    let (spent, outcome) = advance(&mut w.tasks[t], left, memo);
    if memo.u.unit0 > 0.0 {
        let (bytes_per_ns, phi, reads) = memo.demand(spent, w.m.line_bytes, w.tick_ns);
        add_demand(w, cn, &frac, bytes_per_ns, (phi, reads));
    }
    w.tasks[t].frac = frac;
    ((avail - left) + spent, outcome)
}

/// The task's first touches of its `init` chunks, each a chunk's lines at
/// local latency over `mlp`, allocating each where its policy says: the
/// time left after them, or None when they took all of `avail`.
fn first_touches(w: &mut World, t: TaskId, cn: usize, avail: f64, mlp: f64) -> Option<f64> {
    let line = w.m.line_bytes;
    let mut left = avail;
    let task_policy = w.tasks[t].mem_policy;
    loop {
        let Work::Compute {
            init, init_credit, ..
        } = &mut w.tasks[t].work
        else {
            unreachable!()
        };
        let Some(&c) = init.front() else { break };
        let lat = w.m.latency_ns[cn][cn];
        let per_chunk = w.mem.chunk_bytes as f64 / line * lat / mlp;
        let need = per_chunk - *init_credit;
        if left < need {
            *init_credit += left;
            return None;
        }
        left -= need;
        *init_credit = 0.0;
        init.pop_front();
        let want = match task_policy {
            MemPolicy::Local => cn,
            MemPolicy::Node(n) => n,
        };
        if w.mem.chunks[c].node == NO_NODE {
            w.mem.allocate(&w.m, c, want);
        }
    }
    Some(left)
}

/// Where the task's accesses go, as a fraction per node of its regions'
/// touched memory weighted by access share (`frac`; empty: nothing
/// touched yet, "local"), recomputed only when one of its regions changed.
fn refresh_access_fractions(w: &mut World, t: TaskId) {
    let nn = w.m.nnodes;
    let Work::Compute { ref access, .. } = w.tasks[t].work else {
        unreachable!()
    };
    let key: u64 = access
        .iter()
        .map(|&(r, _)| w.mem.regions[r].version + 1)
        .sum();
    if w.tasks[t].frac_key == key && w.tasks[t].frac.len() == nn {
        return;
    }
    // The old vector is reused: with base pages, pages move every tick.
    let mut frac = std::mem::take(&mut w.tasks[t].frac);
    frac.clear();
    frac.resize(nn, 0.0);
    let mut wsum = 0.0;
    let Work::Compute { ref access, .. } = w.tasks[t].work else {
        unreachable!()
    };
    for &(r, wt) in access {
        let reg = &w.mem.regions[r];
        if reg.touched == 0 {
            continue;
        }
        let inv = wt / reg.touched as f64;
        for (n, f) in frac.iter_mut().enumerate() {
            *f += inv * reg.per_node[n] as f64;
        }
        wsum += wt;
    }
    if wsum > 0.0 {
        for f in frac.iter_mut() {
            *f /= wsum;
        }
    } else {
        frac.clear();
    }
    w.tasks[t].frac = frac;
    w.tasks[t].frac_key = key;
}

/// The mean memory latency of accesses from node `cn` spread as `frac`
/// says: idle, and with each path's contention this tick.
fn path_latencies(w: &World, cn: usize, frac: &[f64]) -> (f64, f64) {
    let nn = w.m.nnodes;
    let row = cn * nn;
    if frac.is_empty() {
        let l0 = w.m.latency_ns[cn][cn];
        return (l0, l0 * w.contention[row + cn]);
    }
    let (mut l0, mut lc) = (0.0, 0.0);
    let lat = &w.m.latency_ns[cn];
    let cont = &w.contention[row..row + nn];
    for n in 0..nn {
        let l = lat[n] * frac[n];
        l0 += l;
        lc += l * cont[n];
    }
    (l0, lc)
}

/// A work unit's time, contended and idle, and what it asks of memory.
#[derive(Debug, Clone, Copy, Default)]
struct UnitTimes {
    /// Nanoseconds a unit takes with this tick's contention.
    unit: f64,
    /// ... without contention, and its memory part alone.
    unit0: f64,
    mem0: f64,
    /// Lines a unit moves to or from memory (misses, streamed lines and
    /// write-backs), and how many of them are loads (misses, streamed
    /// loads and updates' loads).
    lines: f64,
    reads: f64,
}

/// The share of the task's random accesses that hit its LLC on `cpu`: its
/// share of the LLC over the bytes it reaches at random, less the places
/// its streamed lines take under LRU (crate::cache).
fn random_hit_share(w: &World, t: TaskId, cpu: CpuId) -> f64 {
    let Work::Compute {
        rand_lines,
        stream_lines,
        wss_bytes,
        ..
    } = w.tasks[t].work
    else {
        unreachable!()
    };
    if wss_bytes <= 0.0 || rand_lines <= 0.0 {
        return 0.0;
    }
    let share = w.m.llc_bytes / w.llc_busy[w.m.cpu_llc[cpu]].max(1) as f64;
    crate::cache::random_hit_share(share / wss_bytes, stream_lines / rand_lines)
}

/// The time of one of the task's work units at `ghz` (its CPU's
/// frequency times its SMT throughput), with `(mlp, rmlp)` misses in flight,
/// mean latencies `(l0, lc)` idle and contended, and `hit` of its random
/// accesses hitting its LLC ([`random_hit_share`]).
fn unit_times(
    w: &World,
    t: TaskId,
    ghz: f64,
    (mlp, rmlp): (f64, f64),
    (l0, lc): (f64, f64),
    hit: f64,
) -> UnitTimes {
    let Work::Compute {
        cycles,
        rand_lines,
        stream_lines,
        stream,
        writeback_lines,
        wss_bytes,
        ..
    } = w.tasks[t].work
    else {
        unreachable!()
    };
    let misses = rand_lines * (1.0 - hit);
    // A random access that hits in the LLC still waits for it (an LLC
    // hit, overlapped as the misses are); the work's own cycles were
    // measured with its data in the core's private caches.
    let hits = rand_lines - misses;
    // A random access beyond the data TLB's reach waits for a page walk
    // first (the VHPT walker of an Itanium on a DTLB miss, Intel Itanium
    // Architecture SDM vol. 2, 4.1.5.2 "VHPT Searching"), overlapped as the
    // misses are; every access, hit or miss, translates.
    let reach = w.m.tlb_reach_bytes;
    let walks = if w.m.tlb_walk_ns > 0.0 && wss_bytes > reach {
        rand_lines * (1.0 - reach / wss_bytes)
    } else {
        0.0
    };
    let compute = cycles / ghz + hits * w.m.llc_hit_ns / rmlp + walks * w.m.tlb_walk_ns / rmlp;
    // Streamed loads overlap as the core's load misses do, updates as
    // its loads with their write-backs, stores as its stores (each shared
    // like mlp).
    let smlp = mlp * stream.mlp(&w.m) / w.m.mlp;
    let unit = compute + misses * lc / rmlp + stream_lines * lc / smlp;
    let mem0 = misses * l0 / rmlp + stream_lines * l0 / smlp;
    UnitTimes {
        unit,
        unit0: compute + mem0,
        mem0,
        lines: misses + stream_lines + writeback_lines,
        reads: misses
            + match stream {
                Stream::Stores => 0.0,
                Stream::Loads | Stream::Updates => stream_lines,
            },
    }
}

/// The last inputs and results of run_compute's divisions for one task.
/// A task usually runs a whole tick at the same frequency, LLC share and
/// contention as the tick before, so its unit times, the units a tick
/// buys and its bandwidth demand are the same numbers again: they are
/// taken from here when their inputs are bit for bit the same, and
/// computed as before otherwise (the results are identical either way).
#[derive(Debug, Clone, Copy, Default)]
struct ComputeMemo {
    /// Whether `key` and `u` are set.
    valid: bool,
    /// unit_times' inputs: busy CPUs in the LLC, then the bits of the
    /// frequency times SMT throughput, mlp, rmlp, and the latencies l0
    /// and lc.
    key: [u64; 6],
    u: UnitTimes,
    /// advance: `left / u.unit` for the last `left` (bits; 0 = unset,
    /// never a time a tick hands out as it takes the `unit > 0` path).
    left: u64,
    can: f64,
    /// add_demand: bytes per ns and memory share for the last `spent`.
    spent: Option<u64>,
    bytes_per_ns: f64,
    phi: f64,
    /// The loads' share of those bytes.
    reads: f64,
    /// The hit share of the task's random accesses (`hit`) and one more
    /// than the LLC's busy CPUs it was found for (0: none yet).
    hit_busy: u64,
    hit: f64,
}

impl ComputeMemo {
    /// Whether `u` was computed from inputs `key` (compared word by word,
    /// without a call to memcmp).
    fn holds(&self, key: &[u64; 6]) -> bool {
        let diff = self.key.iter().zip(key).fold(0u64, |d, (a, b)| d | (a ^ b));
        self.valid && diff == 0
    }

    /// The task's bandwidth demand in bytes per ns at its uncontended
    /// rate for `spent` ns of the tick, its share of memory time
    /// (phi = mem0 / unit0, one division) and the loads' share of the
    /// bytes.
    fn demand(&mut self, spent: f64, line_bytes: f64, tick_ns: u64) -> (f64, f64, f64) {
        if self.spent != Some(spent.to_bits()) {
            let u = &self.u;
            let inv_unit0 = 1.0 / u.unit0;
            self.bytes_per_ns = u.lines * line_bytes * inv_unit0 * (spent / tick_ns as f64);
            self.phi = u.mem0 * inv_unit0;
            self.reads = if u.lines > 0.0 {
                u.reads / u.lines
            } else {
                0.0
            };
            self.spent = Some(spent.to_bits());
        }
        (self.bytes_per_ns, self.phi, self.reads)
    }
}

/// Advances the task by as many units of `memo.u.unit` ns as `left`
/// allows, up to its expected work: the time spent, and whether it is
/// done.
fn advance(task: &mut Task, left: f64, memo: &mut ComputeMemo) -> (f64, RunOutcome) {
    let unit = memo.u.unit;
    let expected = task.work_expected as f64;
    let todo = expected - task.progress;
    let can = if unit > 0.0 {
        if memo.left != left.to_bits() || memo.left == 0 {
            memo.left = left.to_bits();
            memo.can = left / unit;
        }
        memo.can
    } else {
        todo
    };
    let (units, spent, outcome) = if can >= todo {
        (todo, todo * unit, RunOutcome::Done)
    } else {
        (can, left, RunOutcome::Continue)
    };
    task.progress += units;
    if outcome == RunOutcome::Done {
        task.progress = expected;
    }
    (spent, outcome)
}

/// The task's bandwidth demand this tick, at its uncontended rate (no
/// feedback loop), on the paths from node `cn` its accesses take.
fn add_demand(w: &mut World, cn: usize, frac: &[f64], bytes_per_ns: f64, (phi, reads): (f64, f64)) {
    let nn = w.m.nnodes;
    let row = cn * nn;
    if frac.is_empty() {
        w.demand_next[row + cn] += bytes_per_ns;
        w.demand_mem_next[row + cn] += bytes_per_ns * phi;
        w.demand_read_next[row + cn] += bytes_per_ns * reads;
    } else {
        for n in 0..nn {
            if frac[n] > 0.0 {
                let d = bytes_per_ns * frac[n];
                w.demand_next[row + n] += d;
                w.demand_mem_next[row + n] += d * phi;
                w.demand_read_next[row + n] += d * reads;
            }
        }
    }
}

/// Message passing: returns (ns spent, outcome).
fn run_message(
    w: &mut World,
    t: TaskId,
    cpu: CpuId,
    avail: f64,
    freq: f64,
    smt: f64,
) -> (f64, RunOutcome) {
    let Work::Message {
        group,
        sender,
        slot,
        remaining,
        credit,
    } = w.tasks[t].work
    else {
        unreachable!()
    };
    let cost = message_cost(w, group, cpu, freq, smt);
    let possible = ((avail + credit) / cost).floor() as u64;
    let want = possible.min(remaining);
    let mut wake = Vec::new();
    let g = &mut w.groups[group];
    let (n, next, stuck) = if sender {
        send(g, t, slot, want, &mut wake)
    } else {
        let (n, stuck) = receive(g, slot, want, &mut wake);
        (n, slot, stuck)
    };
    let rem = remaining - n;
    let outcome = if rem == 0 {
        RunOutcome::Done
    } else if stuck {
        RunOutcome::Blocked
    } else {
        RunOutcome::Continue
    };
    let spent = match outcome {
        // Budget-limited: all of it, keeping the part of a message done.
        RunOutcome::Continue => avail,
        _ => (n as f64 * cost - credit).clamp(0.0, avail),
    };
    let new_credit = if outcome == RunOutcome::Continue {
        avail + credit - n as f64 * cost
    } else {
        0.0
    };
    if let Work::Message {
        remaining,
        credit,
        slot,
        ..
    } = &mut w.tasks[t].work
    {
        *remaining = rem;
        *credit = new_credit.max(0.0);
        if sender {
            *slot = next;
        }
    }
    w.tasks[t].progress = (w.tasks[t].work_expected - rem) as f64;
    // A socket write wakes its reader with WF_SYNC.
    for x in wake {
        w.wake(x, true);
    }
    (spent, outcome)
}

/// The time of one message on `cpu`: its cycles at `freq` (slowed by
/// `smt`), and its lines moved from wherever the group's peers' caches
/// are; a peer on this very CPU left them in its own caches (free here:
/// the measured cost of a message between tasks of one CPU is in
/// `cycles`).
fn message_cost(w: &World, group: usize, cpu: CpuId, freq: f64, smt: f64) -> f64 {
    let llc = w.m.cpu_llc[cpu];
    let g = &w.groups[group];
    let mut xfer = 0.0;
    let members = g.members.max(1) as f64;
    for (l, &k) in g.llc_members.iter().enumerate() {
        let k = if l == llc {
            k.saturating_sub(g.cpu_members[cpu])
        } else {
            k
        };
        if k > 0 {
            xfer += k as f64 / members * w.m.transfer_ns(llc, l);
        }
    }
    g.cycles / freq / smt + g.lines * xfer
}

/// Sender `t` writes up to `want` messages round the group's sockets from
/// `slot`, waking a blocked reader of each, until a socket is full (then
/// it waits on it): messages written, the next socket, whether it blocked.
fn send(
    g: &mut MsgGroup,
    t: TaskId,
    slot: usize,
    want: u64,
    wake: &mut Vec<TaskId>,
) -> (u64, usize, bool) {
    let fds = g.pending.len();
    let (mut n, mut next, mut stuck) = (0u64, slot, false);
    while n < want {
        if g.pending[next] >= g.capacity {
            stuck = true;
            break;
        }
        g.pending[next] += 1;
        if g.receiver_blocked[next] {
            g.receiver_blocked[next] = false;
            wake.push(g.receivers[next]);
        }
        // The next socket round the group (a compare, not a division).
        next += 1;
        if next == fds {
            next = 0;
        }
        n += 1;
    }
    if stuck {
        g.blocked_senders[next].push(t);
    }
    (n, next, stuck)
}

/// The reader of socket `slot` reads up to `want` of its messages, waking
/// the senders blocked on it, and waits when it runs out: messages read,
/// whether it blocked.
fn receive(g: &mut MsgGroup, slot: usize, want: u64, wake: &mut Vec<TaskId>) -> (u64, bool) {
    let n = want.min(g.pending[slot]);
    g.pending[slot] -= n;
    if n > 0 {
        wake.append(&mut g.blocked_senders[slot]);
    }
    let stuck = n < want;
    if stuck {
        g.receiver_blocked[slot] = true;
    }
    (n, stuck)
}

/// Random integer below `n` from the world's one RNG.
pub fn rand_below(rng: &mut ChaCha8Rng, n: u64) -> u64 {
    if n == 0 {
        return 0;
    }
    rng.next_u64() % n
}

/// Uniform float in [0, 1).
pub fn rand_unit(rng: &mut ChaCha8Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The engine asks a CPU to pull only when it just ran out of work
    /// (busy at the tick's start, or a task ran on it since), for every
    /// policy: a CPU idle all along waits for its timer (2.5's idle_tick,
    /// Focht's patch on it, CFS's nohz idle balancer), so numa_test's
    /// first tasks under node-blind start on CPUs 0, 8, 4 and 9, not 0-3.
    #[test]
    fn a_cpu_idle_all_along_pulls_only_at_its_timer() {
        for policy in ["node-blind", "node-affine", "linux", "nest"] {
            let (w, ts, s) = crate::sched::world_with(policy, &[2]);
            let none = crate::params::PolicySpec::parse("none").unwrap();
            let b = crate::balance::build(&none, &w.m).unwrap();
            let mut e = Engine::new(w, s, b);
            let tick = e.w.tick_ns;
            e.run_cpu(1, tick);
            assert_eq!(e.w.tasks[ts[1]].cpu, 0, "{policy}");
            e.w.cpus[1].busy_at_tick = true;
            e.run_cpu(1, tick);
            assert_eq!(e.w.tasks[ts[1]].cpu, 1, "{policy}");
        }
    }
}
