//! # numalab-calibrate: the machine in front of you, as a machine file
//!
//! The simulator is only as good as its machine file, and a preset
//! written from data sheets says nothing about the machine a user is on.
//! `numalab calibrate` measures that machine and writes the file the
//! simulator reads, so `numalab sim --machine me.toml` models *this*
//! machine and `numalab validate` can say how far the model is from its
//! kernel.
//!
//! What is measured, and how (each as the median of several time-boxed
//! runs, with their spread written beside it):
//!
//! - **topology** from sysfs through the one `Topology` type, as the
//!   regular machine the simulator models (`RegularTopology`);
//! - **memory** ([`memory`]): the idle load latency from a CPU of each
//!   node to memory of each node (a chase of dependent loads through a
//!   random cycle of cache lines over a buffer well beyond the LLC, CPU
//!   pinned, memory bound), the LLC hit latency the same way over half
//!   the LLC, the bandwidth of one thread of a node and of all the
//!   machine's CPUs reading and zeroing that node's memory (its
//!   controller's capacity), and the time a cache line takes between two
//!   LLCs. The model's misses in flight per core and its controllers'
//!   bandwidth are found through the model's own equations, so that it
//!   zeroes memory at the rates measured ([`misses_in_flight`],
//!   [`controller_bandwidth`]): the sweep the streaming benchmarks do;
//! - **CPU**: the frequency cpufreq reports (or /proc/cpuinfo), and the
//!   throughput of two SMT siblings against one;
//! - **costs** ([`costs`]): what the simulator's workload models charge
//!   per operation, each measured with the code the host backend runs for
//!   that benchmark: the spin loop, numa_test's update, zeroing in cache,
//!   a hackbench message, fork and exec of numalab's own child, a thread,
//!   and a first touch (page faults and all) of fresh memory.
//!
//! A busy machine spoils every figure, so the CPU time the rest of the
//! machine used over half a second is read first ([`busy`]) and calibrate
//! refuses when it is more than a quarter of a CPU (`--force` measures
//! anyway and says so in the file). The file is checked by parsing it
//! back with the simulator's own reader before it is written.
//!
//! - **interconnect and scheduling** ([`interconnect`]): where a node's
//!   controller saturates (1, 2, 4... threads reading it), each node's
//!   CPUs reading each other node's memory (a `[[bus]]` where that is
//!   well below what latency and the controller allow), all nodes read
//!   at once (`controllers = "single"` when they carry little more than
//!   one), and a context switch and a wakeup (pipe ping-pong, as
//!   lmbench), as comments.
//!
//! Not measured (the file says so): idle states, write bandwidth per
//! node pair.

#![forbid(unsafe_code)]

pub mod busy;
pub mod costs;
pub mod figure;
pub mod interconnect;
pub mod memory;
pub mod validate;

mod toml_out;

use figure::Figure;
use memory::Chase;
use numalab_bench::mem::Op;
use numalab_sim::machine::MachineFile;
use numalab_topology::{MachineInfo, Roots, Topology};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Why calibration did not produce a file.
#[derive(Debug, thiserror::Error)]
pub enum CalibrateError {
    /// The machine is too busy to measure (`--force` overrides).
    #[error("{0}")]
    Busy(String),
    #[error("{0}")]
    Failed(String),
}

fn failed(what: &str) -> impl Fn(std::io::Error) -> CalibrateError + '_ {
    move |e| CalibrateError::Failed(format!("{what}: {e}"))
}

/// Told of each phase as it starts: (phase, its number, how many, seconds
/// left by estimate).
pub type Progress = Box<dyn FnMut(&str, usize, usize, f64)>;

/// What to measure with.
pub struct Options {
    /// numalab's own binary (the hackbench and forkexec children).
    pub exe: PathBuf,
    pub roots: Roots,
    /// Measure even on a busy machine.
    pub force: bool,
    /// Repetitions of each figure.
    pub runs: usize,
    /// Time box of one repetition of a latency or cost.
    pub budget: Duration,
    /// Called with each phase as it starts: (phase, index, count, seconds
    /// left by estimate).
    pub progress: Progress,
}

impl Options {
    pub fn new(exe: PathBuf) -> Options {
        Options {
            exe,
            roots: Roots::host(),
            force: false,
            runs: 5,
            budget: Duration::from_millis(150),
            progress: Box::new(|_, _, _, _| {}),
        }
    }
}

/// The result: the machine file's text and the figures behind it.
pub struct Calibrated {
    pub toml: String,
    pub seconds: f64,
    /// (machine-file key, unit, figure), in file order.
    pub figures: Vec<(String, String, Figure)>,
}

impl Calibrated {
    /// The warning to print when some figures' runs lay far apart (the
    /// same sentence as the file's `Unsteady:` comment), if any did.
    pub fn unsteady(&self) -> Option<String> {
        toml_out::unsteady_line(&self.figures)
    }
}

/// Busy CPUs above which calibrate refuses: a quarter of a CPU.
pub const BUSY_LIMIT_CPUS: f64 = 0.25;

struct Phases<'a> {
    progress: &'a mut Progress,
    planned: Vec<f64>,
    done: usize,
    start: Instant,
}

impl Phases<'_> {
    fn next(&mut self, what: &str) {
        let elapsed = self.start.elapsed().as_secs_f64();
        let planned_done: f64 = self.planned[..self.done].iter().sum();
        let left: f64 = self.planned[self.done..].iter().sum();
        // Scale the plan by how the phases so far kept to it.
        let scale = if planned_done > 0.5 {
            (elapsed / planned_done).clamp(0.5, 20.0)
        } else {
            1.0
        };
        (self.progress)(what, self.done + 1, self.planned.len(), left * scale);
        self.done += 1;
    }
}

/// The facts about the machine that the measuring phases share.
struct Machine<'a> {
    info: MachineInfo,
    topo: Topology,
    roots: &'a Roots,
    /// numalab's own binary (the hackbench and forkexec children).
    exe: &'a Path,
    /// CPUs the rest of the machine used while calibrate looked.
    busy: f64,
    ncpus: usize,
    cpu_nodes: Vec<u32>,
    /// The LLC's size as sysfs gives it (at least 1 MiB).
    llc: u64,
    /// Time box of one repetition.
    b: Duration,
    /// Repetitions of each figure (at least 1).
    runs: usize,
    /// The phases, with their planned seconds, for progress and its ETA.
    plan: Vec<(String, f64)>,
}

impl<'a> Machine<'a> {
    /// Probes the machine, measures how busy it is and refuses a busy one
    /// unless forced.
    fn probe(
        roots: &'a Roots,
        exe: &'a Path,
        force: bool,
        runs: usize,
        budget: Duration,
    ) -> Result<Machine<'a>, CalibrateError> {
        let info = MachineInfo::probe(roots).map_err(|e| CalibrateError::Failed(e.to_string()))?;
        let topo = info.topology.clone();
        let ncpus = topo.cpus.len();
        let busy = busy::busy_cpus(&roots.proc, Duration::from_millis(500), ncpus)
            .map_err(failed("/proc/stat"))?;
        if busy > BUSY_LIMIT_CPUS && !force {
            return Err(CalibrateError::Busy(format!(
                "the machine is busy: {busy:.2} CPUs of {ncpus} were in use over 0.5 s, which would spoil the figures (limit {BUSY_LIMIT_CPUS}); stop what runs, or measure anyway with --force"
            )));
        }
        let cpu_nodes: Vec<u32> = topo.cpu_nodes().map(|n| n.id).collect();
        let llc = topo.max_llc_bytes().max(1 << 20);
        let mut m = Machine {
            info,
            topo,
            roots,
            exe,
            busy,
            ncpus,
            cpu_nodes,
            llc,
            b: budget,
            runs: runs.max(1),
            plan: Vec::new(),
        };
        m.plan = m.plan();
        Ok(m)
    }

    /// The phases, with their planned seconds, for progress and its ETA.
    fn plan(&self) -> Vec<(String, f64)> {
        let (b, ncpus, cpu_nodes) = (self.b, self.ncpus, &self.cpu_nodes);
        let rb = b.as_secs_f64() * self.runs as f64;
        let n = cpu_nodes.len();
        let mut plan: Vec<(String, f64)> = Vec::new();
        for &j in cpu_nodes {
            plan.push((format!("latency to node {j}'s memory"), 1.0 + n as f64 * rb));
        }
        plan.push((
            "LLC hit latency and the cache a thread gets".into(),
            rb + 0.2 + 9.0 * (b.as_secs_f64() / 2.0 + 0.1),
        ));
        for &j in cpu_nodes {
            plan.push((
                format!("bandwidth on node {j}"),
                5.0 * 3.0 * 2.0 * b.as_secs_f64() + 1.0,
            ));
        }
        plan.push((
            "cache line transfer, SMT, CPUs at once".into(),
            2.0 * rb + 3.0 * 2.0 * b.as_secs_f64(),
        ));
        plan.push(("costs of spin, update, memset".into(), 3.0 * rb + 6.0));
        plan.push((
            "cost of a hackbench message".into(),
            3.0 * 2.0 * 6.0 * b.as_secs_f64(),
        ));
        plan.push(("costs of fork, exec, thread".into(), 3.0 * rb));
        plan.push((
            "saturation, links, switches and wakeups".into(),
            (n * interconnect::counts(ncpus).len() + n * n + 1) as f64 * b.as_secs_f64() + 3.0 * rb,
        ));
        plan
    }

    /// The node's last CPU: CPU 0 takes more of the interrupts.
    fn pick_cpu(&self, node: u32) -> u32 {
        self.topo
            .nodes
            .iter()
            .find(|x| x.id == node)
            .and_then(|x| x.cpus.last().copied())
            .unwrap_or(0)
    }

    /// The first node with CPUs.
    fn node0(&self) -> u32 {
        self.cpu_nodes[0]
    }
}

/// A node's bandwidths (GB/s): one thread of the node, and every CPU of
/// the machine at once.
struct NodeBw {
    node: u32,
    read1: Figure,
    zero1: Figure,
    /// One thread adding one to every word (mem's write sweep).
    update1: Figure,
    read_all: Figure,
    zero_all: Figure,
}

/// The cache a thread gets and its hit latency.
struct Cache {
    /// Dependent loads over 1, 2, 4... MiB: (bytes, ns).
    curve: Vec<(u64, f64)>,
    /// The LLC one thread gets (bytes).
    used: u64,
    hit: Figure,
}

/// The costs of computing in cache, and numa_test's update beyond it.
struct Compute {
    spin: Figure,
    upd: Figure,
    memset: Figure,
    read: Figure,
    write: Figure,
    /// The CPUs of the first LLC (at most 8) that ran the update curve.
    llc_cpus: Vec<u32>,
    /// numa_test's update over 1, 2, 4... M elements: (elements, ns).
    upd_curve: Vec<(usize, f64)>,
    upd_elements: usize,
    upd_memory: Figure,
}

/// The costs of processes and threads.
struct Process {
    msg: Figure,
    msg_user: Figure,
    fork: Figure,
    launch: Figure,
    start: Figure,
    exit: Figure,
    exec: Figure,
    exec_user: Figure,
    thread: Figure,
}

/// The costs of a first touch and of NUMA balancing.
struct Balancing {
    first_touch: Figure,
    /// Each of two processes' rate first touching at once (none with one
    /// CPU).
    first_touch_two: Option<Figure>,
    scan: Figure,
    migrate: Option<Figure>,
}

/// The model's values, found from the figures measured.
struct Model {
    one_thread: f64,
    mlp: f64,
    one_read: f64,
    read_mlp: f64,
    one_update: f64,
    write_mlp: f64,
    llc_model: u64,
    miss: f64,
    random_mlp: f64,
    node_zero: f64,
    node_threads: usize,
    node_read: f64,
    /// What every CPU read of a node's memory at once (the most over the
    /// nodes), and the controller's rate for loads fitted to it, where
    /// they read less than as many times one thread's rate.
    read_all: f64,
    node_loads: Option<f64>,
    /// CPUs that can run at once, when fewer than the machine's.
    run_at_once: Option<usize>,
}

/// Every figure measured, and the model's values derived from them.
struct Measured {
    lat: Vec<Vec<Figure>>,
    local: Figure,
    cache: Cache,
    node_bw: Vec<NodeBw>,
    /// A line's transfer between LLCs, or why the local latency stands
    /// in for it.
    transfer: Transfer,
    smt: Option<Figure>,
    /// CPUs' worth of spinning with every CPU spinning at once.
    at_once: Figure,
    compute: Compute,
    process: Process,
    balancing: Balancing,
    /// Base, maximum and minimum GHz, and where they came from.
    freq: (f64, f64, f64, String),
    model: Model,
    links: interconnect::Measured,
}

/// Measure this machine.
pub fn calibrate(mut o: Options) -> Result<Calibrated, CalibrateError> {
    let start = Instant::now();
    let m = Machine::probe(&o.roots, &o.exe, o.force, o.runs, o.budget)?;
    let mut phases = Phases {
        progress: &mut o.progress,
        planned: m.plan.iter().map(|p| p.1).collect(),
        done: 0,
        start,
    };
    let ms = measure(&m, &mut phases)?;
    let figs = figures(&m, &ms);
    let seconds = start.elapsed().as_secs_f64();
    let t = toml_out::machine_file(&m, &ms, &figs, seconds);
    // The simulator must read what was written.
    readable(&m, &t)?;
    Ok(Calibrated {
        toml: t,
        seconds,
        figures: figs,
    })
}

/// Measures every phase in turn and derives the model's values.
fn measure(m: &Machine, phases: &mut Phases) -> Result<Measured, CalibrateError> {
    let (lat, local) = latency(m, phases)?;
    let cache = cache(m, phases, &local)?;
    let node_bw = bandwidth(m, phases)?;
    let (transfer, smt, at_once) = transfer_and_smt(m, phases)?;
    let compute = compute_costs(m, phases)?;
    let process = process_costs(m, phases)?;
    let balancing = balancing_costs(m)?;
    // CPU frequency, as cpufreq or /proc/cpuinfo reports it.
    let freq = frequency(m.roots);
    // Everything into the machine file.
    // Each CPU spinning beside all the others runs at its SMT share and
    // at the all-core frequency where one alone boosts to the maximum.
    let each = smt.as_ref().map_or(1.0, |f| f.value) * (freq.0 / freq.1).clamp(0.01, 1.0);
    let at_once_n = costs::run_at_once(at_once.value, m.topo.cpus.len(), each);
    let model = model(m, &local, &cache, &node_bw, &compute, at_once_n);
    let links = links(m, phases, &lat, &model)?;
    Ok(Measured {
        lat,
        local,
        cache,
        node_bw,
        transfer,
        smt,
        at_once,
        compute,
        process,
        balancing,
        freq,
        model,
        links,
    })
}

/// Measures the idle load latency from each node's CPUs to each node's
/// memory, and the local latency (the matrix's diagonal).
fn latency(m: &Machine, phases: &mut Phases) -> Result<(Vec<Vec<Figure>>, Figure), CalibrateError> {
    let (n, runs, b, llc) = (m.cpu_nodes.len(), m.runs, m.b, m.llc);
    // Memory latency, per node pair.
    let chase_bytes = |node: u32| -> u64 {
        let want = (4 * llc).clamp(64 << 20, 1 << 30);
        let free = numalab_topology::probe::node_free_bytes(&m.roots.sys, node).unwrap_or(want * 4);
        want.min(free / 4).max(8 << 20)
    };
    let mut lat = vec![vec![Figure::of(&[], ""); n]; n];
    for (jx, &j) in m.cpu_nodes.iter().enumerate() {
        phases.next(&m.plan[phases.done].0.clone());
        let bytes = chase_bytes(j);
        let chase = Chase::on(j, bytes).map_err(failed(&format!("a buffer on node {j}")))?;
        for (ix, &i) in m.cpu_nodes.iter().enumerate() {
            let cpu = m.pick_cpu(i);
            let old = memory::pin(&[cpu]).map_err(failed(&format!("pinning to CPU {cpu}")))?;
            let f = memory::repeat(
                runs,
                format!(
                    "dependent loads through a random cycle of 64-byte lines over {} MiB on node {j}, from CPU {cpu} (node {i})",
                    chase.bytes >> 20
                ),
                || Ok(chase.ns_per_load(b)),
            );
            let _ = numalab_linux::numa::set_affinity(0, &old);
            lat[ix][jx] = f.map_err(failed("latency"))?;
        }
    }
    // The local latency: the diagonal's mean, with the largest spread
    // of its figures.
    let local = Figure {
        value: (0..n).map(|i| lat[i][i].value).sum::<f64>() / n as f64,
        spread: (0..n).map(|i| lat[i][i].spread).fold(0.0, f64::max),
        runs,
        how: "the mean of the latency matrix's diagonal (a CPU to its own node's memory)".into(),
    };
    Ok((lat, local))
}

/// Measures the latency curve over growing buffers, the cache a thread
/// really gets, and the LLC hit latency.
fn cache(m: &Machine, phases: &mut Phases, local: &Figure) -> Result<Cache, CalibrateError> {
    let (runs, b, llc) = (m.runs, m.b, m.llc);
    // LLC hit latency.
    phases.next(&m.plan[phases.done].0.clone());
    let node0 = m.node0();
    // The cache a thread really gets (a virtual machine's LLC, as sysfs
    // gives it, is the host's, shared with its other guests): where the
    // latency passes halfway from a hit to memory.
    let llc_curve = {
        let cpu = m.pick_cpu(node0);
        let old = memory::pin(&[cpu]).map_err(failed("pinning"))?;
        let c = memory::latency_curve(node0, llc.clamp(1 << 20, 256 << 20), b / 2);
        let _ = numalab_linux::numa::set_affinity(0, &old);
        c.map_err(failed("the latency curve"))?
    };
    let l2_ns = llc_curve.iter().map(|c| c.1).fold(f64::INFINITY, f64::min);
    let llc_used =
        memory::effective_llc(&llc_curve, l2_ns, local.value).map_or(llc, |e| e.min(llc));
    let hit_bytes = (llc_used / 2).clamp(256 << 10, 32 << 20);
    let hit = {
        let chase = Chase::on(node0, hit_bytes).map_err(failed("an LLC-sized buffer"))?;
        let cpu = m.pick_cpu(node0);
        let old = memory::pin(&[cpu]).map_err(failed("pinning"))?;
        let f = memory::repeat(
            runs,
            format!(
                "dependent loads over {} KiB (half the {} KiB of LLC one thread gets, at most 32 MiB) from CPU {cpu}",
                hit_bytes >> 10,
                llc_used >> 10
            ),
            || Ok(chase.ns_per_load(b)),
        );
        let _ = numalab_linux::numa::set_affinity(0, &old);
        f.map_err(failed("LLC latency"))?
    };
    Ok(Cache {
        curve: llc_curve,
        used: llc_used,
        hit,
    })
}

/// Bytes each of `threads` threads sweeps to measure a node's memory:
/// [`numalab_bench::mem::beyond_caches`], all of them within half the
/// node's `free` bytes as the mem benchmark's default (at least 8 MiB
/// each): in a TCG guest the benchmark zeroed 48 MiB 22-25% faster than
/// 256 MiB, so a smaller cap than the benchmark's would describe other
/// work than the validation set's.
fn sweep_bytes(llc: u64, threads: usize, free: u64) -> u64 {
    numalab_bench::mem::beyond_caches(llc)
        .min(free / 2 / threads.max(1) as u64)
        .max(8 << 20)
}

/// Measures each node's bandwidth: one thread of the node, and every CPU
/// of the machine at once, reading and zeroing.
fn bandwidth(m: &Machine, phases: &mut Phases) -> Result<Vec<NodeBw>, CalibrateError> {
    let (b, llc) = (m.b, m.llc);
    // Bandwidth, per node: one thread of the node, and every CPU of the
    // machine at once (the most a controller is asked to carry: its
    // capacity, whether or not the node's own CPUs alone can use it up).
    let all_cpus: Vec<u32> = m.topo.cpus.iter().map(|c| c.id).collect();
    let mut node_bw: Vec<NodeBw> = Vec::new();
    for &j in &m.cpu_nodes {
        phases.next(&m.plan[phases.done].0.clone());
        let cpus = all_cpus.clone();
        let free = numalab_topology::probe::node_free_bytes(&m.roots.sys, j).unwrap_or(1 << 32);
        // Each thread its own buffer well beyond the caches, as the mem
        // benchmark and the validation set sweep (at 64 MiB one thread
        // read 17% faster than at 256 MiB here), all within half the
        // node's free memory.
        let one_bytes = sweep_bytes(llc, 1, free);
        let all_bytes = sweep_bytes(llc, cpus.len(), free);
        let bb = b * 2;
        let measure = |cpus: &[u32], bytes: u64, how: Op| {
            memory::repeat(
                3,
                format!(
                    "{} thread{} {} {} MiB each of node {j}'s memory, from CPU{} {}",
                    cpus.len(),
                    if cpus.len() == 1 { "" } else { "s" },
                    match how {
                        Op::Read => "reading",
                        Op::Write => "adding one to every word of",
                        Op::Memset => "zeroing",
                    },
                    bytes >> 20,
                    if cpus.len() == 1 { "" } else { "s" },
                    numalab_topology::cpulist::format(cpus)
                ),
                || memory::bandwidth(m.exe, cpus, j, bytes, how, bb).map(|v| v / 1e9),
            )
            .map_err(failed(&format!("bandwidth on node {j}")))
        };
        let one = [m.pick_cpu(j)];
        let (r1, w1, u1) = (
            measure(&one, one_bytes, Op::Read)?,
            measure(&one, one_bytes, Op::Memset)?,
            measure(&one, one_bytes, Op::Write)?,
        );
        let ra = measure(&cpus, all_bytes, Op::Read)?;
        // In a VM the host decides whether two vCPUs share a CCX, and the
        // CPUs' zeroing rate together moves with it (2x on a 2-vCPU EPYC
        // guest, docs/validation.md "Zeros are written faster"): a line's
        // transfer between the first two CPUs before and after says where
        // they were, in the figure's comment.
        let pair = (cpus.len() >= 2).then(|| (cpus[0], cpus[1]));
        let transfer = || pair.and_then(|(a, c)| memory::line_transfer_ns(a, c, b / 4).ok());
        let before = transfer();
        let mut wa = measure(&cpus, all_bytes, Op::Memset)?;
        if let (Some((a, c)), Some(x), Some(y)) = (pair, before, transfer()) {
            wa.how += &format!(
                "; a cache line from CPU {a} to CPU {c}: {x:.0} ns before, {y:.0} ns after \
                 (in a VM: where the host ran the vCPUs)"
            );
        }
        node_bw.push(NodeBw {
            node: j,
            read1: r1,
            zero1: w1,
            update1: u1,
            read_all: ra,
            zero_all: wa,
        });
    }
    Ok(node_bw)
}

/// The longest cache line transfer taken as measured: more means no
/// round trip ran with both CPUs running at once (a guest's vCPUs on a
/// busy host), and the simulator refuses a `cache.cross_llc_ns` above it.
const TRANSFER_MAX_NS: f64 = 100_000.0;

/// A cache line's transfer between two LLCs: measured, or why the local
/// latency stands in for it (the machine file says which).
#[derive(Debug, Clone, PartialEq)]
enum Transfer {
    Measured(Figure),
    NotMeasured(NoTransfer),
}

/// Why a line's transfer between LLCs was not measured. Its Display is
/// the comment the machine file writes above `cache.cross_llc_ns`.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
enum NoTransfer {
    /// The machine has one LLC: there is no pair to measure.
    #[error("not measured: one LLC on this machine; the local latency stands in")]
    OneLlc,
    /// Every round trip between CPUs `a` and `c` took longer than
    /// [`TRANSFER_MAX_NS`] allows: the two never ran at once.
    #[error(
        "not measured: no round trip between CPU {a} and CPU {c} ran undisturbed \
         (the fastest took {fastest_us:.0} us: the two were never running at once); \
         the local latency stands in"
    )]
    NoUndisturbedRoundTrip { a: u32, c: u32, fastest_us: f64 },
}

/// Measures a cache line's transfer between two LLCs (same node when
/// there are two there), the throughput of two SMT siblings, and how
/// many CPUs' worth of work every CPU spinning at once gets.
fn transfer_and_smt(
    m: &Machine,
    phases: &mut Phases,
) -> Result<(Transfer, Option<Figure>, Figure), CalibrateError> {
    let (runs, b, topo) = (m.runs, m.b, &m.topo);
    // A cache line between two LLCs (same node when there are two there),
    // and SMT.
    phases.next(&m.plan[phases.done].0.clone());
    let llc_pair = llc_pair(topo);
    let transfer = match llc_pair {
        Some((a, c)) => {
            let f = memory::repeat(
                runs,
                format!("half a round trip of one atomic word between CPU {a} and CPU {c}, under different LLCs"),
                || memory::line_transfer_ns(a, c, b),
            )
            .map_err(failed("cache line transfer"))?;
            if f.value <= TRANSFER_MAX_NS {
                Transfer::Measured(f)
            } else {
                let why = NoTransfer::NoUndisturbedRoundTrip {
                    a,
                    c,
                    fastest_us: f.value / 500.0,
                };
                eprintln!("numalab calibrate: cache.cross_llc_ns {why}");
                Transfer::NotMeasured(why)
            }
        }
        None => Transfer::NotMeasured(NoTransfer::OneLlc),
    };
    let smt_pair = topo
        .cpus
        .iter()
        .map(|c| topo.siblings(c.id))
        .find(|s| s.len() >= 2)
        .map(|s| (s[0], s[1]));
    let smt = match smt_pair {
        Some((a, c)) => Some(
            memory::repeat(
                runs,
                format!("spin loop rate on CPU {a} with its sibling CPU {c} spinning, over its rate alone"),
                || costs::smt_throughput(a, c, b),
            )
            .map_err(failed("SMT throughput"))?,
        ),
        None => None,
    };
    let all: Vec<u32> = topo.cpus.iter().map(|c| c.id).collect();
    let at_once = memory::repeat(
        3,
        format!(
            "the spin loop on CPUs {} at once, their rates together over CPU {}'s alone",
            numalab_topology::cpulist::format(&all),
            all.first().copied().unwrap_or(0)
        ),
        || costs::cpus_at_once(&all, b),
    )
    .map_err(failed("CPUs at once"))?;
    Ok((transfer, smt, at_once))
}

/// Measures the compute costs (spin, update, memset, read and write
/// sweeps, in cache) and numa_test's update over growing arrays.
fn compute_costs(m: &Machine, phases: &mut Phases) -> Result<Compute, CalibrateError> {
    let (runs, b, llc, topo) = (m.runs, m.b, m.llc, &m.topo);
    // Costs.
    phases.next(&m.plan[phases.done].0.clone());
    let spin = costs::repeat(
        runs,
        "numalab's spin loop (xorshift chain), one thread",
        || costs::spin_ns(b),
    );
    let upd = costs::repeat(
        runs,
        "numa_test's update a[ix[i]] += b[i] over 4096 elements (in cache)",
        || costs::randupdt_ns(b),
    );
    let memset = costs::repeat(
        runs,
        "one thread zeroing a buffer that fits its caches",
        || costs::memset_gbs(llc, b),
    );
    let read = costs::repeat(
        runs,
        "one thread reading 256 KiB (the mem benchmark's read sweep), in cache",
        || costs::sweep_gbs(Op::Read, b),
    );
    let write = costs::repeat(
        runs,
        "one thread adding one to every word of 256 KiB (the mem benchmark's write sweep), in cache",
        || costs::sweep_gbs(Op::Write, b),
    );
    // numa_test's update over growing arrays: the cache its random
    // accesses get, and at the largest (a: 256 MiB, or less on a small
    // node) the misses a core overlaps.
    // A task on each CPU of the first LLC at once (at most 8), as
    // numa_test runs them: the cache they get together.
    let node0 = m.node0();
    let llc_cpus: Vec<u32> = topo
        .cpu(m.pick_cpu(node0))
        .and_then(|c| c.llc)
        .and_then(|l| topo.llcs.get(l as usize))
        .map(|l| l.cpus.clone())
        .unwrap_or_else(|| vec![m.pick_cpu(node0)])
        .into_iter()
        .take(8)
        .collect();
    let upd_max = (32usize << 20)
        .min(
            numalab_topology::probe::node_free_bytes(&m.roots.sys, node0).unwrap_or(1 << 32)
                as usize
                / (40 * llc_cpus.len().max(1)),
        )
        .max(1 << 20);
    let upd_curve =
        costs::update_curve(upd_max, &llc_cpus).map_err(failed("numa_test's update"))?;
    let upd_elements = upd_curve.last().map_or(1 << 20, |c| c.0);
    let upd_memory = Figure::of(
        &[upd_curve.last().map_or(f64::NAN, |c| c.1)],
        format!(
            "numa_test's update over {} M elements (a: {} MiB), a task on each of CPUs {} at once, passes 2 to 4",
            upd_elements >> 20,
            (upd_elements * 8) >> 20,
            numalab_topology::cpulist::format(&llc_cpus)
        ),
    );
    Ok(Compute {
        spin,
        upd,
        memset,
        read,
        write,
        llc_cpus,
        upd_curve,
        upd_elements,
        upd_memory,
    })
}

/// Measures the process costs: a hackbench message and its user share,
/// fork, a launch, exec and its user share, and a thread.
fn process_costs(m: &Machine, phases: &mut Phases) -> Result<Process, CalibrateError> {
    let (runs, b, exe) = (m.runs, m.b, m.exe);
    phases.next(&m.plan[phases.done].0.clone());
    let cpu_any = m.pick_cpu(m.node0());
    let mut storms = Vec::new();
    let how = format!("numalab __hackbench 1 LOOPS 20 100 with every process on CPU {cpu_any}: seconds / (2 x 20 x 20 x LOOPS)");
    let all = memory::repeat(3, how.clone(), || {
        let s = costs::msg_us(exe, cpu_any, b * 6)?;
        storms.push(s);
        Ok(s.us)
    })
    .map_err(failed("hackbench"))?;
    let (msg, msg_user) = costs::fewest_switches(&storms, &how).unwrap_or_else(|| {
        let shares: Vec<f64> = storms.iter().map(|s| s.user_share).collect();
        (
            all,
            Figure::of(
                &shares,
                "the same runs: user CPU time over user and system (getrusage of the reaped hackbench)",
            ),
        )
    });
    phases.next(&m.plan[phases.done].0.clone());
    let fork = memory::repeat(
        runs,
        "fork of a fresh numalab (numalab __fork-us), child _exit(0), waitpid".into(),
        || costs::fork_us(exe, b),
    )
    .map_err(failed("fork"))?;
    let (mut launches, mut starts, mut exits) = (Vec::new(), Vec::new(), Vec::new());
    let mut children = Vec::new();
    let mut exec_shares = Vec::new();
    for _ in 0..3 {
        let node = m.cpu_nodes.first().copied().unwrap_or(0);
        let p = costs::process_us(exe, node, b).map_err(failed("starting numalab"))?;
        launches.push(p.launch_us);
        starts.push(p.start_us);
        exits.push(p.exit_us);
        // A fork timed beside each child, so a load that comes or goes
        // between the two phases does not land in the difference (in a
        // CI lane beside a booting guest the forks of the phase above
        // took 2.5 ms, the children after them less, and exec fell to
        // its floor).
        let f = costs::fork_us(exe, b).map_err(failed("fork"))?;
        let (us, share) = costs::forkexec_child_us(exe, b * 2).map_err(failed("forkexec"))?;
        children.push(us - f);
        exec_shares.push(share);
    }
    let exec_user = Figure::of(
        &exec_shares,
        "forkexec's driver and its children: user CPU time over user and system (getrusage of the reaped driver)",
    );
    let launch = Figure::of(
        &launches,
        "spawn of a benchmark task (numalab __task autonuma, one thread zeroing one page) until spawn returns (fork + execve)",
    );
    let start = Figure::of(
        &starts,
        "spawn of the same task until it says its thread runs, as the runner waits for a run's work to begin (fork, execve, loader, runtime, its plan, its buffer bound, its thread created)",
    );
    let exit = Figure::of(
        &exits,
        "the same task from its last word (its report) to its reaping (exit, teardown, waitpid)",
    );
    let exec = Figure::of(
        &children.iter().map(|c| c.max(1.0)).collect::<Vec<_>>(),
        "forkexec's driver (numalab __forkexec N 1 1 1) per child, less a fork and exit timed just before it",
    );
    let thread = costs::repeat(
        runs,
        "std::thread::spawn and join of an empty thread",
        || costs::thread_us(b),
    );
    Ok(Process {
        msg,
        msg_user,
        fork,
        launch,
        start,
        exit,
        exec,
        exec_user,
        thread,
    })
}

/// Measures a first touch of fresh memory and NUMA balancing's own costs:
/// a protection change and a migration between the first two nodes.
fn balancing_costs(m: &Machine) -> Result<Balancing, CalibrateError> {
    let (runs, node0) = (m.runs, m.node0());
    let touch_bytes = (256u64 << 20)
        .min(numalab_topology::probe::node_free_bytes(&m.roots.sys, node0).unwrap_or(1 << 32) / 8)
        .max(16 << 20);
    // In a process of its own, as every benchmark first touches its
    // memory (numalab_host::mem::first_touch).
    let cpu = m.pick_cpu(node0);
    let first_touch = memory::repeat(
        runs,
        format!(
            "one thread writing {} MiB it never touched, bound to node {node0}, from CPU {cpu}, in a process of its own (page faults, THP as set: {})",
            touch_bytes >> 20,
            m.info.thp_enabled.as_deref().unwrap_or("unknown")
        ),
        || {
            numalab_host::mem::first_touch(m.exe, cpu, node0, touch_bytes).map(|r| r / 1e9)
        },
    )
    .map_err(failed("first touch"))?;
    let first_touch_two = match touch_pair(m) {
        Some(pair) => Some(
            memory::repeat(
                runs,
                format!(
                    "each of two processes writing {} MiB it never touched at once, one on CPU {} bound to node {}, one on CPU {} bound to node {} (where page faults contend, each is slower than one alone)",
                    touch_bytes >> 20,
                    pair[0].0,
                    pair[0].1,
                    pair[1].0,
                    pair[1].1
                ),
                || first_touch_at_once(m.exe, pair, touch_bytes),
            )
            .map_err(failed("first touch of two at once"))?,
        ),
        None => None,
    };
    // NUMA balancing's own costs: a protection change (every machine), a
    // migration between the first two nodes (several nodes).
    let scan = memory::repeat(
        runs,
        format!(
            "mprotect(PROT_NONE) of {} MiB of touched memory, per GiB",
            touch_bytes >> 20
        ),
        || costs::scan_us_per_gb(touch_bytes as usize),
    )
    .map_err(failed("mprotect"))?;
    let migrate = match m.cpu_nodes.get(1) {
        Some(&other) => Some(
            memory::repeat(
                runs,
                format!(
                    "move_pages of {} MiB from node {node0} to node {other}, per MiB",
                    touch_bytes >> 21
                ),
                || costs::migrate_us_per_mb(node0, other, (touch_bytes / 2) as usize),
            )
            .map_err(failed("move_pages"))?,
        ),
        None => None,
    };
    Ok(Balancing {
        first_touch,
        first_touch_two,
        scan,
        migrate,
    })
}

/// The CPU and node of each of two processes first touching at once, as
/// numa01's two processes do: a CPU of each of the first two nodes,
/// each touching its own node's memory; on one node, its first and last
/// CPUs; none with a single CPU.
fn touch_pair(m: &Machine) -> Option<[(u32, u32); 2]> {
    let node0 = m.node0();
    if let Some(&node1) = m.cpu_nodes.get(1) {
        return Some([(m.pick_cpu(node0), node0), (m.pick_cpu(node1), node1)]);
    }
    let cpus = &m.topo.nodes.iter().find(|x| x.id == node0)?.cpus;
    match cpus[..] {
        [first, .., last] => Some([(first, node0), (last, node0)]),
        _ => None,
    }
}

/// Two first touches of `bytes` at once, each in a process of its own
/// (`numalab_host::mem::first_touch`): their mean rate, GB/s.
fn first_touch_at_once(exe: &Path, pair: [(u32, u32); 2], bytes: u64) -> std::io::Result<f64> {
    let (a, b) = std::thread::scope(|s| {
        let other =
            s.spawn(move || numalab_host::mem::first_touch(exe, pair[1].0, pair[1].1, bytes));
        let a = numalab_host::mem::first_touch(exe, pair[0].0, pair[0].1, bytes);
        let b = other
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("a first-touch thread panicked")));
        (a, b)
    });
    Ok((a? + b?) / 2.0 / 1e9)
}

/// Derives the model's values (mlp, random_mlp, the LLC, a controller's
/// bandwidth) from the figures measured.
fn model(
    m: &Machine,
    local: &Figure,
    cache: &Cache,
    node_bw: &[NodeBw],
    cm: &Compute,
    run_at_once: Option<usize>,
) -> Model {
    let (llc, llc_cpus) = (m.llc, &cm.llc_cpus);
    // The model has one bandwidth per controller, and the benchmarks
    // that stream memory (the autonuma suite, twohalves) zero it: it and
    // the stores a core keeps in flight come from the memset sweeps, so a
    // simulated zeroing runs at the measured one. Streamed loads (mem's
    // read and write sweeps, numa_test's index and source arrays) get
    // their own count from the read sweep: here one thread read memory
    // 15-25% slower than it zeroed it, where one count made the model's
    // read faster (its read in cache is); under TCG loads are emulated
    // one by one. One count serves every node, so it comes from the mean
    // of the nodes' one-thread rates, each an estimate of the same
    // figure: their least (as before 2026-11-28) took whichever node
    // measured slowest by chance, and in a TCG guest, where a fresh
    // process sweeps at one of two rates (docs/validation.md), nearly
    // always the lower one.
    let (one_read, one_thread, one_update) = one_thread_rates(node_bw);
    let mlp = misses_in_flight(one_thread, cm.memset.value, local.value);
    let read_mlp = misses_in_flight(one_read, cm.read.value, local.value);
    // A read-modify-write's loads share the core's queues to memory with
    // the lines going back: their own count, from the write sweep.
    let write_mlp = misses_in_flight(one_update, cm.write.value, local.value);
    // The cache in the file: what numa_test's random accesses get (the
    // model uses it for nothing else that the sysfs size would serve
    // better: its streaming benchmarks sweep far beyond either).
    let llc_model = costs::update_cache_bytes(&cm.upd_curve, cm.upd.value)
        .map_or(cache.used, |c| (c * llc_cpus.len() as u64).min(llc));
    let share = llc_model as f64 / llc_cpus.len().max(1) as f64;
    let miss = 1.0
        - numalab_sim::cache::random_hit_share(
            share / (8.0 * cm.upd_elements as f64),
            costs::update_streamed_lines(),
        );
    let random_mlp = costs::random_mlp(
        cm.upd_memory.value,
        cm.upd.value,
        miss,
        local.value,
        one_read,
    );
    let node_zero = node_bw.iter().map(|x| x.zero_all.value).fold(0.0, f64::max);
    // Every CPU zeroed at once, but on a machine that runs fewer at once
    // only those ran at a time: the controller carried that many threads'
    // demand (four vCPUs on two host cores zero as two).
    let node_threads = run_at_once.unwrap_or(m.topo.cpus.len()).max(1);
    let node_read = controller_bandwidth(node_threads, one_thread, node_zero, local.value);
    let read_all = node_bw.iter().map(|x| x.read_all.value).fold(0.0, f64::max);
    let node_loads = read_bandwidth(node_threads, one_read, read_all, local.value);
    Model {
        one_thread,
        mlp,
        one_read,
        read_mlp,
        one_update,
        write_mlp,
        llc_model,
        miss,
        random_mlp,
        node_zero,
        node_threads,
        node_read,
        read_all,
        node_loads,
        run_at_once,
    }
}

/// One thread's read, zeroing and update rates (GB/s) for the model's
/// one count of misses in flight of each: the mean over the nodes.
fn one_thread_rates(node_bw: &[NodeBw]) -> (f64, f64, f64) {
    let n = node_bw.len().max(1) as f64;
    let mean = |f: fn(&NodeBw) -> f64| node_bw.iter().map(f).sum::<f64>() / n;
    (
        mean(|x| x.read1.value),
        mean(|x| x.zero1.value),
        mean(|x| x.update1.value),
    )
}

/// Measures where the controllers saturate, the links between nodes, and
/// a context switch and wakeups, with the model's mlp and controller.
fn links(
    m: &Machine,
    phases: &mut Phases,
    lat: &[Vec<Figure>],
    model: &Model,
) -> Result<interconnect::Measured, CalibrateError> {
    let (llc, ncpus) = (m.llc, m.ncpus);
    phases.next(&m.plan[phases.done].0.clone());
    let lat_ns: Vec<Vec<f64>> = lat
        .iter()
        .map(|r| r.iter().map(|f| f.value).collect())
        .collect();
    let sweep_bytes = sweep_bytes(
        llc,
        ncpus,
        numalab_topology::probe::node_free_bytes(&m.roots.sys, m.node0()).unwrap_or(1 << 32),
    );
    let sweep = interconnect::Sweep {
        exe: m.exe,
        bytes_each: sweep_bytes,
        budget: m.b,
    };
    interconnect::measure(sweep, &m.topo, &lat_ns, model.mlp, model.node_read, m.runs)
        .map_err(failed("saturation, links and wakeups"))
}

/// Lists the figures measured as (machine-file key, unit, figure), in
/// file order.
fn figures(m: &Machine, ms: &Measured) -> Vec<(String, String, Figure)> {
    let (lat, cm, p, bal) = (&ms.lat, &ms.compute, &ms.process, &ms.balancing);
    let mut figs: Vec<(String, String, Figure)> = Vec::new();
    let mut put = |key: &str, unit: &str, f: Figure| figs.push((key.into(), unit.into(), f));
    for (ix, &i) in m.cpu_nodes.iter().enumerate() {
        for (jx, &j) in m.cpu_nodes.iter().enumerate() {
            put(
                &format!("memory.latency_ns[{i}][{j}]"),
                "ns",
                lat[ix][jx].clone(),
            );
        }
    }
    put("memory.local_latency_ns", "ns", ms.local.clone());
    for x in &ms.node_bw {
        for (what, f) in [
            ("1 thread read", &x.read1),
            ("1 thread memset", &x.zero1),
            ("1 thread write", &x.update1),
            ("all CPUs read", &x.read_all),
            ("all CPUs memset", &x.zero_all),
        ] {
            put(&format!("node {}: {what}", x.node), "GB/s", f.clone());
        }
    }
    put("cache.llc_hit_ns", "ns", ms.cache.hit.clone());
    if let Transfer::Measured(t) = &ms.transfer {
        put("cache.cross_llc_ns", "ns", t.clone());
    }
    if let Some(s) = &ms.smt {
        put("cpu.smt_throughput", "", s.clone());
    }
    put("cpu: CPUs' worth spinning at once", "", ms.at_once.clone());
    put("costs.spin_ns", "ns", cm.spin.clone());
    put("costs.randupdt_ns", "ns", cm.upd.clone());
    put("costs.memset_gbs", "GB/s", cm.memset.clone());
    put("costs.msg_us", "us", p.msg.clone());
    put("costs.fork_us", "us", p.fork.clone());
    put("costs.exec_us", "us", p.exec.clone());
    put("costs.msg_user_share", "", p.msg_user.clone());
    put("costs.exec_user_share", "", p.exec_user.clone());
    put("costs.process_launch_us", "us", p.launch.clone());
    put("costs.process_start_us", "us", p.start.clone());
    put("costs.process_exit_us", "us", p.exit.clone());
    put("costs.thread_launch_us", "us", p.thread.clone());
    put("costs.first_touch_gbs", "GB/s", bal.first_touch.clone());
    if let Some(two) = &bal.first_touch_two {
        put("costs.first_touch_two_gbs", "GB/s", two.clone());
    }
    put("costs.scan_us_per_gb", "us", bal.scan.clone());
    put("costs.read_gbs", "GB/s", cm.read.clone());
    put("costs.write_gbs", "GB/s", cm.write.clone());
    if let Some(mg) = &bal.migrate {
        put("costs.migrate_us_per_mb", "us", mg.clone());
    }
    figs
}

/// Checks that the simulator reads the machine file written, and says
/// what most likely spoiled it when it does not.
fn readable(m: &Machine, t: &str) -> Result<(), CalibrateError> {
    let (busy, info) = (m.busy, &m.info);
    MachineFile::parse("calibrated", t)
        .and_then(|f| f.build("calibrated"))
        .map_err(|e| {
            CalibrateError::Failed(if busy > BUSY_LIMIT_CPUS || info.hypervisor {
                format!(
                    "a figure is outside what the simulator accepts, most likely spoiled by other work ({busy:.2} CPUs busy{}): {e}; measure again on a quieter machine",
                    if info.hypervisor { ", in a virtual machine whose CPUs the host may deschedule" } else { "" }
                )
            } else {
                format!("a figure is outside what the simulator accepts: {e}")
            })
        })?;
    Ok(())
}

/// The misses in flight per core with which the simulator's streaming
/// model gives one thread the `one` GB/s it was measured to zero of
/// memory: the model charges a line its compute (64 bytes at the in-cache
/// zeroing rate `cache` GB/s) plus its memory time, `latency / mlp`
/// (`engine::run_compute`), so 64 / one = 64 / cache + latency / mlp.
/// When zeroing memory is as fast as zeroing the cache (under TCG, where
/// the emulator is the bottleneck either way) memory adds nothing: the
/// most the model takes, 1024.
pub fn misses_in_flight(one: f64, cache: f64, latency_ns: f64) -> f64 {
    let memory_ns = 64.0 / one - 64.0 / cache;
    if memory_ns.is_nan() || memory_ns <= 0.0 || !latency_ns.is_finite() {
        return 1024.0;
    }
    (latency_ns / memory_ns).clamp(1.0, 1024.0)
}

/// The controller bandwidth (GB/s) with which the simulator's memory
/// model gives `n` threads, each streaming `one` GB/s alone, the `all`
/// GB/s measured together: the model queues a controller like M/M/1 on
/// its line service time (a wait of 64 / B / latency x rho / (1 - rho)
/// loads, rho capped at 0.95) and caps its traffic at B
/// (`engine::prepare_tick`), so a controller of exactly the measured rate
/// would carry less than was measured. Found by bisection on the model's
/// own formula; `all` itself when the threads never reach it.
pub fn controller_bandwidth(n: usize, one: f64, all: f64, latency_ns: f64) -> f64 {
    let demand = n as f64 * one;
    let carried = |b: f64| {
        let rho = demand / b;
        let x = rho.min(0.95);
        let wait = 64.0 / b / latency_ns * x / (1.0 - x);
        demand / (1.0 + wait).max(rho)
    };
    if !(demand > 0.0 && all > 0.0 && latency_ns > 0.0) || carried(1e6) <= all {
        return all.max(f64::MIN_POSITIVE);
    }
    let (mut lo, mut hi) = (all, 1e6);
    for _ in 0..200 {
        let mid = (lo * hi).sqrt();
        if carried(mid) < all {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

/// The controller's rate for loads (GB/s) with which the simulator's
/// memory model gives `n` threads, each reading `one` GB/s alone, the
/// `all` GB/s they were measured to read together: the queueing of
/// [`controller_bandwidth`] on loads alone. `None` where they read at
/// least 95% of `n` times `one` (loads scale: no limit of their own
/// seen, and the controller's one rate stands for them), or there is
/// one thread.
pub fn read_bandwidth(n: usize, one: f64, all: f64, latency_ns: f64) -> Option<f64> {
    let scaled = n as f64 * one * 0.95;
    (n > 1 && one > 0.0 && all > 0.0 && all < scaled)
        .then(|| controller_bandwidth(n, one, all, latency_ns))
}

/// Two CPUs under different LLCs, of one node when a node has two.
fn llc_pair(topo: &Topology) -> Option<(u32, u32)> {
    let first = |l: &numalab_topology::Llc| l.cpus.last().copied();
    for node in topo.cpu_nodes() {
        let ls = topo.llcs_of_node(node.id);
        if ls.len() >= 2 {
            return Some((first(ls[0])?, first(ls[1])?));
        }
    }
    if topo.llcs.len() >= 2 {
        return Some((first(&topo.llcs[0])?, first(&topo.llcs[1])?));
    }
    None
}

/// Base, maximum and minimum GHz, and where they came from.
fn frequency(roots: &Roots) -> (f64, f64, f64, String) {
    let khz = |f: &str| -> Option<f64> {
        let p = roots.sys.join("devices/system/cpu/cpu0/cpufreq").join(f);
        std::fs::read_to_string(p)
            .ok()?
            .trim()
            .parse::<f64>()
            .ok()
            .map(|k| k / 1e6)
    };
    if let (Some(max), Some(min)) = (khz("cpuinfo_max_freq"), khz("cpuinfo_min_freq")) {
        let base = khz("base_frequency").unwrap_or(max);
        return (
            base,
            max,
            min,
            "cpufreq of CPU 0 (cpuinfo_max_freq, cpuinfo_min_freq, base_frequency)".into(),
        );
    }
    let mhz = std::fs::read_to_string(roots.proc.join("cpuinfo"))
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("cpu MHz"))
                .and_then(|l| l.split(':').nth(1))
                .and_then(|v| v.trim().parse::<f64>().ok())
        });
    match mhz {
        Some(m) => (m / 1e3, m / 1e3, m / 1e3, "no cpufreq: /proc/cpuinfo's 'cpu MHz' of CPU 0 as a fixed frequency".into()),
        None => (2.5, 2.5, 2.5, "no cpufreq and no 'cpu MHz': 2.5 GHz assumed (the costs are in time, so it only scales cycles)".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The file's comment and calibrate's warning name the figures whose
    /// runs lay far apart (the two-CPU memset of a VM whose host moved its
    /// CPUs) and nothing when every figure held still.
    #[test]
    fn unsteady_figures_are_named_in_the_file_and_the_warning() {
        let f = |v: &[f64]| Figure::of(v, "how");
        let mut figs = vec![(
            "costs.spin_ns".to_string(),
            "ns".to_string(),
            f(&[1.4, 1.41]),
        )];
        assert_eq!(toml_out::unsteady_line(&figs), None);
        figs.push((
            "node 0: all CPUs memset".into(),
            "GB/s".into(),
            f(&[40.0, 74.0, 100.0]),
        ));
        let line = toml_out::unsteady_line(&figs).unwrap();
        assert!(
            line.starts_with(
                "1 figure varied by more than 25% between runs: node 0: all CPUs memset (81%);"
            ),
            "{line}"
        );
    }

    #[test]
    fn the_controller_carries_what_was_measured_through_the_model() {
        // Two threads of 8 GB/s measured at 14 together, 300 ns latency.
        let b = controller_bandwidth(2, 8.0, 14.0, 300.0);
        assert!(b > 14.0, "{b}");
        let rho: f64 = 16.0 / b;
        let x = rho.min(0.95);
        let carried = 16.0 / (1.0 + 64.0 / b / 300.0 * x / (1.0 - x)).max(rho);
        assert!((carried - 14.0).abs() < 1e-6, "{carried}");
        // Threads that never reach the controller: the measured rate.
        assert_eq!(controller_bandwidth(2, 1.0, 2.5, 300.0), 2.5);
        assert_eq!(controller_bandwidth(0, 1.0, 2.5, 300.0), 2.5);
    }

    /// The rate for loads fitted to every CPU reading at once is the one
    /// at which the simulator's own controller (`Resource::load`, loads
    /// served at `memory.read_bandwidth_gbs`) carries what was measured;
    /// loads that scaled, or one thread, fit none. (This machine in its
    /// host's slow mode: one thread read 31 GB/s, two 42.7.)
    #[test]
    fn the_rate_for_loads_carries_what_every_cpu_read_through_the_model() {
        let r = read_bandwidth(2, 31.0, 42.7, 110.0).unwrap();
        assert!(r > 42.7 && r < 62.0, "{r}");
        let m =
            numalab_sim::machine::Machine::load(&format!("genoa2n[memory.read_bandwidth_gbs={r}]"))
                .unwrap();
        let (_, wait, cap) = m.resources[0].load(62.0, 62.0, 62.0);
        let carried = 62.0 / (1.0 + wait).max(cap);
        assert!((carried - 42.7).abs() < 1e-6, "{carried}");
        // A 2-node TCG guest: 2.18 GB/s alone, 4.29 both: loads scale.
        assert_eq!(read_bandwidth(2, 2.179, 4.29, 212.0), None);
        assert_eq!(read_bandwidth(1, 31.0, 20.0, 110.0), None);
    }

    /// A 2-node TCG guest zeroed 12.9 GB/s with one thread on node 0 and
    /// 9.94 on node 1, the same emulated memory: the model's one count
    /// comes from their mean, not the slower node's.
    #[test]
    fn one_count_of_misses_serves_every_node_from_their_mean() {
        let f = |v: f64| Figure::of(&[v], "");
        let node = |node, r, z, u, ra, za| NodeBw {
            node,
            read1: f(r),
            zero1: f(z),
            update1: f(u),
            read_all: f(ra),
            zero_all: f(za),
        };
        let nodes: Vec<NodeBw> = vec![
            node(0, 2.17, 12.9, 2.0, 4.0, 23.9),
            node(1, 2.1, 9.94, 1.9, 4.0, 18.3),
        ];
        let (read, zero, update) = one_thread_rates(&nodes);
        assert!((read - 2.135).abs() < 1e-9, "{read}");
        assert!((zero - 11.42).abs() < 1e-9, "{zero}");
        assert!((update - 1.95).abs() < 1e-9, "{update}");
    }

    #[test]
    fn misses_in_flight_give_one_thread_its_measured_zeroing_rate() {
        // 8 GB/s from memory, 40 GB/s in cache, 300 ns: 64/8 - 64/40 =
        // 6.4 ns a line of memory time, 300 / 6.4 = 46.9 in flight.
        let m = misses_in_flight(8.0, 40.0, 300.0);
        assert!((m - 300.0 / 6.4).abs() < 1e-9, "{m}");
        let per_line = 64.0 / 40.0 + 300.0 / m;
        assert!((64.0 / per_line - 8.0).abs() < 1e-9);
        // Memory no slower than the cache (TCG): the most the model takes.
        assert_eq!(misses_in_flight(5.0, 4.0, 265.0), 1024.0);
    }

    #[test]
    fn an_unmeasured_transfer_says_why_in_the_machine_files_words() {
        assert_eq!(
            NoTransfer::OneLlc.to_string(),
            "not measured: one LLC on this machine; the local latency stands in"
        );
        let why = NoTransfer::NoUndisturbedRoundTrip {
            a: 3,
            c: 7,
            fastest_us: 15.4,
        };
        assert_eq!(
            why.to_string(),
            "not measured: no round trip between CPU 3 and CPU 7 ran undisturbed \
             (the fastest took 15 us: the two were never running at once); \
             the local latency stands in"
        );
    }
}
