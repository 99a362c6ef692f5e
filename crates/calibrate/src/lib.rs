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

pub mod busy;
pub mod costs;
pub mod figure;
pub mod interconnect;
pub mod memory;
pub mod validate;

use figure::{round3, Figure};
use memory::Chase;
use numalab_bench::mem::Op;
use numalab_sim::machine::{MachineFile, RegularTopology};
use numalab_topology::{MachineInfo, Roots, Topology};
use std::fmt::Write as _;
use std::path::PathBuf;
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

/// Measure this machine.
pub fn calibrate(mut o: Options) -> Result<Calibrated, CalibrateError> {
    let start = Instant::now();
    let info = MachineInfo::probe(&o.roots).map_err(|e| CalibrateError::Failed(e.to_string()))?;
    let topo = info.topology.clone();
    let ncpus = topo.cpus.len();
    let busy = busy::busy_cpus(&o.roots.proc, Duration::from_millis(500), ncpus)
        .map_err(failed("/proc/stat"))?;
    if busy > BUSY_LIMIT_CPUS && !o.force {
        return Err(CalibrateError::Busy(format!(
            "the machine is busy: {busy:.2} CPUs of {ncpus} were in use over 0.5 s, which would spoil the figures (limit {BUSY_LIMIT_CPUS}); stop what runs, or measure anyway with --force"
        )));
    }
    let cpu_nodes: Vec<u32> = topo.cpu_nodes().map(|n| n.id).collect();
    let llc = topo.max_llc_bytes().max(1 << 20);
    let b = o.budget;
    let runs = o.runs.max(1);
    let rb = b.as_secs_f64() * runs as f64;
    let n = cpu_nodes.len();
    // The phases, with their planned seconds, for progress and its ETA.
    let mut plan: Vec<(String, f64)> = Vec::new();
    for &j in &cpu_nodes {
        plan.push((format!("latency to node {j}'s memory"), 1.0 + n as f64 * rb));
    }
    plan.push((
        "LLC hit latency and the cache a thread gets".into(),
        rb + 0.2 + 9.0 * (b.as_secs_f64() / 2.0 + 0.1),
    ));
    for &j in &cpu_nodes {
        plan.push((
            format!("bandwidth on node {j}"),
            4.0 * 3.0 * 2.0 * b.as_secs_f64() + 1.0,
        ));
    }
    plan.push(("cache line transfer and SMT".into(), 2.0 * rb));
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
    let mut phases = Phases {
        progress: &mut o.progress,
        planned: plan.iter().map(|p| p.1).collect(),
        done: 0,
        start,
    };
    let mut figs: Vec<(String, String, Figure)> = Vec::new();
    let mut put = |key: &str, unit: &str, f: Figure| figs.push((key.into(), unit.into(), f));

    // Memory latency, per node pair.
    let chase_bytes = |node: u32| -> u64 {
        let want = (4 * llc).clamp(64 << 20, 1 << 30);
        let free = numalab_topology::probe::node_free_bytes(&o.roots.sys, node).unwrap_or(want * 4);
        want.min(free / 4).max(8 << 20)
    };
    let pick_cpu = |node: u32| -> u32 {
        // The node's last CPU: CPU 0 takes more of the interrupts.
        topo.nodes
            .iter()
            .find(|x| x.id == node)
            .and_then(|x| x.cpus.last().copied())
            .unwrap_or(0)
    };
    let mut lat = vec![vec![Figure::of(&[], ""); n]; n];
    for (jx, &j) in cpu_nodes.iter().enumerate() {
        phases.next(&plan[phases.done].0.clone());
        let bytes = chase_bytes(j);
        let chase = Chase::on(j, bytes).map_err(failed(&format!("a buffer on node {j}")))?;
        for (ix, &i) in cpu_nodes.iter().enumerate() {
            let cpu = pick_cpu(i);
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

    // LLC hit latency.
    phases.next(&plan[phases.done].0.clone());
    let node0 = cpu_nodes[0];
    // The cache a thread really gets (a virtual machine's LLC, as sysfs
    // gives it, is the host's, shared with its other guests): where the
    // latency passes halfway from a hit to memory.
    let llc_curve = {
        let cpu = pick_cpu(node0);
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
        let cpu = pick_cpu(node0);
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

    // Bandwidth, per node: one thread of the node, and every CPU of the
    // machine at once (the most a controller is asked to carry: its
    // capacity, whether or not the node's own CPUs alone can use it up).
    let all_cpus: Vec<u32> = topo.cpus.iter().map(|c| c.id).collect();
    let mut node_bw: Vec<(u32, Figure, Figure, Figure, Figure)> = Vec::new();
    for &j in &cpu_nodes {
        phases.next(&plan[phases.done].0.clone());
        let cpus = all_cpus.clone();
        let free = numalab_topology::probe::node_free_bytes(&o.roots.sys, j).unwrap_or(1 << 32);
        let one_bytes = (2 * llc).clamp(64 << 20, 512 << 20).min(free / 4);
        let all_bytes = ((2 * llc) / cpus.len().max(1) as u64)
            .max(32 << 20)
            .min(free / 4 / cpus.len().max(1) as u64);
        let bb = b * 2;
        let measure = |cpus: &[u32], bytes: u64, how: Op| {
            memory::repeat(
                3,
                format!(
                    "{} thread{} {} {} MiB each of node {j}'s memory, from CPU{} {}",
                    cpus.len(),
                    if cpus.len() == 1 { "" } else { "s" },
                    if how == Op::Read {
                        "reading"
                    } else {
                        "zeroing"
                    },
                    bytes >> 20,
                    if cpus.len() == 1 { "" } else { "s" },
                    numalab_topology::cpulist::format(cpus)
                ),
                || memory::bandwidth(cpus, j, bytes, how, bb).map(|v| v / 1e9),
            )
            .map_err(failed(&format!("bandwidth on node {j}")))
        };
        let one = [pick_cpu(j)];
        node_bw.push((
            j,
            measure(&one, one_bytes, Op::Read)?,
            measure(&one, one_bytes, Op::Memset)?,
            measure(&cpus, all_bytes, Op::Read)?,
            measure(&cpus, all_bytes, Op::Memset)?,
        ));
    }

    // A cache line between two LLCs (same node when there are two there),
    // and SMT.
    phases.next(&plan[phases.done].0.clone());
    let llc_pair = llc_pair(&topo);
    let transfer = match llc_pair {
        Some((a, c)) => Some(
            memory::repeat(
                runs,
                format!("half a round trip of one atomic word between CPU {a} and CPU {c}, under different LLCs"),
                || memory::line_transfer_ns(a, c, b),
            )
            .map_err(failed("cache line transfer"))?,
        ),
        None => None,
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

    // Costs.
    phases.next(&plan[phases.done].0.clone());
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
    let llc_cpus: Vec<u32> = topo
        .cpu(pick_cpu(node0))
        .and_then(|c| c.llc)
        .and_then(|l| topo.llcs.get(l as usize))
        .map(|l| l.cpus.clone())
        .unwrap_or_else(|| vec![pick_cpu(node0)])
        .into_iter()
        .take(8)
        .collect();
    let upd_max = (32usize << 20)
        .min(
            numalab_topology::probe::node_free_bytes(&o.roots.sys, node0).unwrap_or(1 << 32)
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
    phases.next(&plan[phases.done].0.clone());
    let cpu_any = pick_cpu(node0);
    let mut msg_shares = Vec::new();
    let msg = memory::repeat(
        3,
        format!("numalab __hackbench 1 LOOPS 20 100 with every process on CPU {cpu_any}: seconds / (2 x 20 x 20 x LOOPS)"),
        || {
            let (us, share) = costs::msg_us(&o.exe, cpu_any, b * 6)?;
            msg_shares.push(share);
            Ok(us)
        },
    )
    .map_err(failed("hackbench"))?;
    let msg_user = Figure::of(
        &msg_shares,
        "the same runs: user CPU time over user and system (getrusage of the reaped hackbench)",
    );
    phases.next(&plan[phases.done].0.clone());
    let fork = memory::repeat(
        runs,
        "fork of a fresh numalab (numalab __fork-us), child _exit(0), waitpid".into(),
        || costs::fork_us(&o.exe, b),
    )
    .map_err(failed("fork"))?;
    let mut launches = Vec::new();
    let mut children = Vec::new();
    let mut exec_shares = Vec::new();
    for _ in 0..3 {
        let (l, _) = costs::process_us(&o.exe, b).map_err(failed("starting numalab"))?;
        launches.push(l);
        let (us, share) = costs::forkexec_child_us(&o.exe, b * 2).map_err(failed("forkexec"))?;
        children.push(us);
        exec_shares.push(share);
    }
    let exec_user = Figure::of(
        &exec_shares,
        "forkexec's driver and its children: user CPU time over user and system (getrusage of the reaped driver)",
    );
    let launch = Figure::of(
        &launches,
        "spawn of numalab __task burst 0 until spawn returns (fork + execve)",
    );
    let exec = Figure::of(
        &children
            .iter()
            .map(|c| (c - fork.value).max(1.0))
            .collect::<Vec<_>>(),
        "forkexec's driver (numalab __forkexec N 1 1 1) per child, less a fork and exit",
    );
    let thread = costs::repeat(
        runs,
        "std::thread::spawn and join of an empty thread",
        || costs::thread_us(b),
    );
    let touch_bytes = (256u64 << 20)
        .min(numalab_topology::probe::node_free_bytes(&o.roots.sys, node0).unwrap_or(1 << 32) / 8)
        .max(16 << 20);
    let first_touch = costs::repeat(
        runs,
        &format!(
            "one thread zeroing {} MiB it never touched (page faults, THP as set: {})",
            touch_bytes >> 20,
            info.thp_enabled.as_deref().unwrap_or("unknown")
        ),
        || costs::first_touch_gbs(touch_bytes as usize),
    );
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
    let migrate = match cpu_nodes.get(1) {
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

    // CPU frequency, as cpufreq or /proc/cpuinfo reports it.
    let (base, max, min, freq_how) = frequency(&o.roots);

    // Everything into the machine file.
    let regular = RegularTopology::of(&topo);
    // The model has one bandwidth per controller and one count of misses
    // in flight per core, and the benchmarks that stream memory (the
    // autonuma suite, twohalves) zero it: both come from the memset
    // sweeps, so a simulated zeroing runs at the measured one (reads can
    // differ: faster on hardware, slower under TCG, which emulates loads
    // one by one; the file's comments keep both).
    let one_thread = node_bw
        .iter()
        .map(|x| x.2.value)
        .fold(f64::INFINITY, f64::min);
    let mlp = misses_in_flight(one_thread, memset.value, local.value);
    let one_read = node_bw
        .iter()
        .map(|x| x.1.value)
        .fold(f64::INFINITY, f64::min);
    // The cache in the file: what numa_test's random accesses get (the
    // model uses it for nothing else that the sysfs size would serve
    // better: its streaming benchmarks sweep far beyond either).
    let llc_model = costs::update_cache_bytes(&upd_curve, upd.value)
        .map_or(llc_used, |c| (c * llc_cpus.len() as u64).min(llc));
    let share = llc_model as f64 / llc_cpus.len().max(1) as f64;
    let miss = 1.0 - (share / (8.0 * upd_elements as f64)).min(1.0);
    let random_mlp = costs::random_mlp(upd_memory.value, upd.value, miss, local.value, one_read);
    let node_zero = node_bw.iter().map(|x| x.4.value).fold(0.0, f64::max);
    let node_threads = all_cpus.len().max(1);
    let node_read = controller_bandwidth(node_threads, one_thread, node_zero, local.value);
    phases.next(&plan[phases.done].0.clone());
    let lat_ns: Vec<Vec<f64>> = lat
        .iter()
        .map(|r| r.iter().map(|f| f.value).collect())
        .collect();
    let sweep_bytes = ((2 * llc) / ncpus.max(1) as u64).max(32 << 20).min(
        numalab_topology::probe::node_free_bytes(&o.roots.sys, node0).unwrap_or(1 << 32)
            / 4
            / ncpus.max(1) as u64,
    );
    let links = interconnect::measure(&topo, &lat_ns, mlp, node_read, sweep_bytes, b, runs)
        .map_err(failed("saturation, links and wakeups"))?;

    for (ix, &i) in cpu_nodes.iter().enumerate() {
        for (jx, &j) in cpu_nodes.iter().enumerate() {
            put(
                &format!("memory.latency_ns[{i}][{j}]"),
                "ns",
                lat[ix][jx].clone(),
            );
        }
    }
    put("memory.local_latency_ns", "ns", local.clone());
    for (j, r1, w1, ra, wa) in &node_bw {
        put(&format!("node {j}: 1 thread read"), "GB/s", r1.clone());
        put(&format!("node {j}: 1 thread memset"), "GB/s", w1.clone());
        put(&format!("node {j}: all CPUs read"), "GB/s", ra.clone());
        put(&format!("node {j}: all CPUs memset"), "GB/s", wa.clone());
    }
    put("cache.llc_hit_ns", "ns", hit.clone());
    if let Some(t) = &transfer {
        put("cache.cross_llc_ns", "ns", t.clone());
    }
    if let Some(s) = &smt {
        put("cpu.smt_throughput", "", s.clone());
    }
    put("costs.spin_ns", "ns", spin.clone());
    put("costs.randupdt_ns", "ns", upd.clone());
    put("costs.memset_gbs", "GB/s", memset.clone());
    put("costs.msg_us", "us", msg.clone());
    put("costs.fork_us", "us", fork.clone());
    put("costs.exec_us", "us", exec.clone());
    put("costs.msg_user_share", "", msg_user.clone());
    put("costs.exec_user_share", "", exec_user.clone());
    put("costs.process_launch_us", "us", launch.clone());
    put("costs.thread_launch_us", "us", thread.clone());
    put("costs.first_touch_gbs", "GB/s", first_touch.clone());
    put("costs.scan_us_per_gb", "us", scan.clone());
    put("costs.read_gbs", "GB/s", read.clone());
    put("costs.write_gbs", "GB/s", write.clone());
    if let Some(m) = &migrate {
        put("costs.migrate_us_per_mb", "us", m.clone());
    }

    let seconds = start.elapsed().as_secs_f64();
    let host = &info.hostname;
    let mut t = String::new();
    let c = |t: &mut String, line: &str| {
        let _ = writeln!(t, "# {line}");
    };
    c(
        &mut t,
        &format!(
            "Measured by numalab calibrate {} on {host}, kernel {}, {}, in {seconds:.0} s.",
            env!("CARGO_PKG_VERSION"),
            info.kernel,
            chrono::Utc::now().format("%Y-%m-%d %H:%M UTC")
        ),
    );
    c(
        &mut t,
        &format!(
            "{}; {}.",
            topo.summary(),
            info.cpu_model.as_deref().unwrap_or("CPU model unknown")
        ),
    );
    if info.hypervisor {
        c(
            &mut t,
            "A virtual machine: its figures are those of its virtual CPUs and memory.",
        );
    }
    c(
        &mut t,
        &format!(
            "Other work while measuring: {busy:.2} CPUs busy{}.",
            if busy > BUSY_LIMIT_CPUS {
                " (over the limit; measured with --force: figures may be spoiled)"
            } else {
                ""
            }
        ),
    );
    c(
        &mut t,
        "Each figure: the median of repeated runs; its spread is (max - min) / median.",
    );
    let _ = writeln!(t, "name = {:?}", format!("calibrated-{host}"));
    let _ = writeln!(
        t,
        "description = {:?}",
        format!(
            "{host} as measured by numalab calibrate ({})",
            topo.summary()
        )
    );
    let _ = writeln!(t);
    t.push_str(&regular.toml());
    if topo.nodes.len() != regular.nodes {
        c(
            &mut t,
            &format!(
                "{} memory-only node(s) left out: the simulator's machines are regular.",
                topo.nodes.len() - regular.nodes
            ),
        );
    }
    let _ = writeln!(t, "\n[memory]");
    c(&mut t, &format!("{}: {}", local.how, local.describe("ns")));
    let _ = writeln!(t, "local_latency_ns = {}", round3(local.value));
    for (ix, row) in lat.iter().enumerate() {
        c(
            &mut t,
            &format!(
                "from node {}: {}",
                cpu_nodes[ix],
                row.iter()
                    .map(|f| f.describe("ns"))
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        );
    }
    let _ = writeln!(
        t,
        "latency_ns = [{}]",
        lat.iter()
            .map(|r| format!(
                "[{}]",
                r.iter()
                    .map(|f| format!("{:?}", round3(f.value)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
            .collect::<Vec<_>>()
            .join(", ")
    );
    for (j, r1, w1, ra, wa) in &node_bw {
        c(
            &mut t,
            &format!(
                "node {j}: one thread read {}, memset {}",
                r1.describe("GB/s"),
                w1.describe("GB/s")
            ),
        );
        c(
            &mut t,
            &format!(
                "node {j}: all the machine's CPUs read {}, memset {}",
                ra.describe("GB/s"),
                wa.describe("GB/s")
            ),
        );
    }
    c(&mut t, &format!("bandwidth_gbs: the controller rate at which the simulator's queueing model ({node_threads} threads of {one_thread:.3} GB/s each, M/M/1 waits) carries the {node_zero:.3} GB/s all the machine's CPUs were measured to zero of a node's memory (the sweep the streaming benchmarks do)"));
    let _ = writeln!(t, "bandwidth_gbs = {:?}", round3(node_read));
    c(&mut t, &format!("mlp: the misses in flight with which the simulator's streaming model (a line's zeroing in cache, then its memory time latency / mlp) gives one thread the {:.3} GB/s it zeroed of memory, its zeroing in cache being {:.3} GB/s (Little's law on the memory part)", one_thread, memset.value));
    let _ = writeln!(t, "mlp = {:?}", round3(mlp));
    c(
        &mut t,
        &format!(
            "{}: {}; in cache {}",
            upd_memory.how,
            upd_memory.describe("ns"),
            upd.describe("ns")
        ),
    );
    c(&mut t, &format!("random_mlp: the misses ({:.0}% of the updates, {} ns each) one core overlaps so that an update takes what was measured, beside its work in cache and its 12 streamed bytes at {:.3} GB/s", 100.0 * miss, round3(local.value), one_read));
    let _ = writeln!(t, "random_mlp = {:?}", round3(random_mlp));
    t.push_str(&links.memory_toml());
    let _ = writeln!(t, "\n[cache]");
    c(
        &mut t,
        &format!(
            "dependent loads over 1, 2, 4... MiB (ns): {}",
            llc_curve
                .iter()
                .map(|(s, ns)| format!("{}: {}", s >> 20, round3(*ns)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    );
    c(
        &mut t,
        &format!(
            "numa_test's update over 1, 2, 4... M elements (ns): {}",
            upd_curve
                .iter()
                .map(|(n, ns)| format!("{}: {}", n >> 20, round3(*ns)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    );
    c(
        &mut t,
        &format!(
            "llc_mib: sysfs gives {} MiB; a dependent chase's latency passes halfway from its smallest to memory's past {} MiB; numa_test's update, a task on each of CPUs {} at once, passes halfway from in cache to its largest size where the model's miss share 1 - share / 8n is a half: {} MiB for them all, the cache their random accesses get here",
            round3(llc as f64 / (1u64 << 20) as f64),
            round3(llc_used as f64 / (1u64 << 20) as f64),
            numalab_topology::cpulist::format(&llc_cpus),
            round3(llc_model as f64 / (1u64 << 20) as f64)
        ),
    );
    let _ = writeln!(
        t,
        "llc_mib = {:?}",
        round3(llc_model as f64 / (1u64 << 20) as f64)
    );
    c(&mut t, &hit.describe("ns"));
    let _ = writeln!(t, "llc_hit_ns = {:?}", round3(hit.value));
    match &transfer {
        Some(f) => {
            c(&mut t, &f.describe("ns"));
            let _ = writeln!(t, "cross_llc_ns = {:?}", round3(f.value));
        }
        None => {
            c(
                &mut t,
                "not measured: one LLC on this machine; the local latency stands in",
            );
            let _ = writeln!(t, "cross_llc_ns = {:?}", round3(local.value));
        }
    }
    let _ = writeln!(t, "\n[cpu]");
    c(&mut t, &freq_how);
    let _ = writeln!(
        t,
        "base_ghz = {:?}\nmax_ghz = {:?}\nmin_ghz = {:?}",
        round3(base),
        round3(max),
        round3(min)
    );
    let governor = match info.governor.as_deref() {
        Some("performance") | None => "performance",
        Some(_) => "schedutil",
    };
    c(
        &mut t,
        &format!(
            "cpufreq governor: {}",
            info.governor.as_deref().unwrap_or("none (fixed frequency)")
        ),
    );
    let _ = writeln!(t, "governor = {governor:?}");
    match &smt {
        Some(f) => {
            c(&mut t, &f.describe(""));
            let _ = writeln!(t, "smt_throughput = {:?}", round3(f.value));
        }
        None => c(&mut t, "smt_throughput: no SMT on this machine"),
    }
    let _ = writeln!(t, "\n[costs]");
    t.push_str(&links.costs_comments());
    for (key, unit, f) in [
        ("spin_ns", "ns", &spin),
        ("randupdt_ns", "ns", &upd),
        ("memset_gbs", "GB/s", &memset),
        ("msg_us", "us", &msg),
        ("fork_us", "us", &fork),
        ("exec_us", "us", &exec),
        ("msg_user_share", "", &msg_user),
        ("exec_user_share", "", &exec_user),
        ("process_launch_us", "us", &launch),
        ("thread_launch_us", "us", &thread),
        ("first_touch_gbs", "GB/s", &first_touch),
        ("scan_us_per_gb", "us", &scan),
        ("read_gbs", "GB/s", &read),
        ("write_gbs", "GB/s", &write),
    ]
    .into_iter()
    .chain(migrate.as_ref().map(|m| ("migrate_us_per_mb", "us", m)))
    {
        c(&mut t, &format!("{}: {}", f.how, f.describe(unit)));
        let _ = writeln!(t, "{key} = {:?}", round3(f.value));
    }
    let _ = writeln!(t, "\n[sources]");
    for (key, _, f) in &figs {
        if !f.how.is_empty() && !key.contains(' ') && !key.contains('[') {
            let _ = writeln!(
                t,
                "{key:?} = {:?}",
                format!("numalab calibrate on {host}: {}", f.how)
            );
        }
    }
    let _ = writeln!(
        t,
        "\"topology\" = {:?}",
        format!(
            "numalab calibrate on {host}: /sys/devices/system ({})",
            topo.summary()
        )
    );
    let _ = writeln!(
        t,
        "\"not measured\" = \"idle states, write bandwidth per node pair\""
    );

    // The simulator must read what was written.
    MachineFile::parse("calibrated", &t)
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
    Ok(Calibrated {
        toml: t,
        seconds,
        figures: figs,
    })
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
}
