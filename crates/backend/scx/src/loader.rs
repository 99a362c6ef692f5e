//! `numalab __scx-load SPEC`: load one of numalab's sched_ext schedulers
//! and hold it until SIGINT or SIGTERM.
//!
//! Standard output carries two lines for whoever started it (the
//! runner, or PID 1 in a guest): [`ENABLED_LINE`] once the kernel says
//! the scheduler is enabled, and [`EXIT_LINE`] with its `scx_exit_info`
//! as JSON when it has ended. Exit status: 0 after an unload asked for
//! with SIGINT or SIGTERM, 1 when the kernel ended the scheduler (an
//! error, a stall, SysRq-S), 2 when it could not be loaded; libbpf's and
//! the verifier's messages go to standard error.

use crate::Resolved;
use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use numalab_linux::sched_ext::{self, exit_kind_name, ExitInfo, Status, ENABLED_LINE, EXIT_LINE};
use numalab_linux::volatile;
use std::collections::BTreeMap;
use std::io::Write;
use std::mem::MaybeUninit;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A skeleton libbpf-cargo generated (build.rs), as a module: built on
/// unsafe code (raw pointers into libbpf objects and the maps' mmapped
/// memory), so unsafe code is allowed there.
macro_rules! skeleton {
    ($name:ident, $file:literal) => {
        mod $name {
            #![allow(
                clippy::all,
                non_camel_case_types,
                non_snake_case,
                dead_code,
                unsafe_code
            )]
            include!(concat!(env!("OUT_DIR"), $file));
        }
    };
}

skeleton!(fifo, "/fifo.skel.rs");
skeleton!(node_affine, "/node_affine.skel.rs");
skeleton!(nest, "/nest.skel.rs");

/// The BPF programs' array bounds (`MAX_NODES`, `MAX_CPUS`).
const MAX_NODES: usize = 64;
use crate::MAX_CPUS;

/// What the BPF programs are told of the machine: node of each CPU, CPUs
/// per node, distances, from the one Topology reader.
struct Shape {
    nr_nodes: u32,
    nr_cpus: u32,
    cpu_node: Vec<u32>,
    node_ncpus: Vec<u32>,
    dist: Vec<u8>,
    /// Each CPU's last-level cache; its node's where sysfs says none.
    cpu_llc: Vec<u32>,
}

/// Why the machine cannot be told to the BPF programs.
#[derive(Debug, thiserror::Error)]
pub enum ShapeError {
    #[error(transparent)]
    Topology(#[from] numalab_topology::TopologyError),
    /// More nodes or CPUs than the programs' arrays hold.
    #[error("{nodes} nodes and {cpus} CPUs: numalab's sched_ext schedulers take at most {MAX_NODES} and {MAX_CPUS}")]
    TooLarge { nodes: u32, cpus: u32 },
}

/// Why a scheduler could not be loaded, or not held to its end.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The spec (`--scx NAME[k=v,...]`).
    #[error(transparent)]
    Spec(#[from] crate::ScxError),
    /// This kernel has no sched_ext (`why`).
    #[error("{flag}: {why}")]
    Unsupported { flag: String, why: String },
    #[error(transparent)]
    Status(#[from] sched_ext::StatusError),
    /// Another scheduler is loaded (its status).
    #[error("{flag}: a sched_ext scheduler is already loaded ({})", .status.describe())]
    AlreadyLoaded { flag: String, status: Status },
    #[error("signals: {0}")]
    Signals(std::io::Error),
    /// libbpf refused a step (`what`: opening, loading, attaching...).
    #[error("{ops}: {what}: {source}")]
    Bpf {
        ops: String,
        what: &'static str,
        source: libbpf_rs::Error,
    },
    /// The object lacks a map the loader reads or writes.
    #[error("{ops}: no {what} in the object")]
    NoMap { ops: String, what: &'static str },
    #[error("{ops}: {source}")]
    Shape { ops: String, source: ShapeError },
    /// The kernel did not enable it (what was last seen).
    #[error("{ops}: {source}")]
    NotEnabled {
        ops: String,
        source: sched_ext::WaitError,
    },
    #[error("{ops}: no exit record 5 s after unloading")]
    NoExitRecord { ops: String },
}

impl LoadError {
    /// libbpf's refusals of `ops`'s steps.
    fn bpf(ops: &str) -> impl Fn(&'static str, libbpf_rs::Error) -> LoadError + '_ {
        move |what, source| LoadError::Bpf {
            ops: ops.to_string(),
            what,
            source,
        }
    }

    /// The maps `ops`'s object lacks.
    fn no_map(ops: &str) -> impl Fn(&'static str) -> LoadError + '_ {
        move |what| LoadError::NoMap {
            ops: ops.to_string(),
            what,
        }
    }

    /// Why the machine cannot be told to `ops`.
    fn shape(ops: &str) -> impl Fn(ShapeError) -> LoadError + '_ {
        move |source| LoadError::Shape {
            ops: ops.to_string(),
            source,
        }
    }
}

fn shape() -> Result<Shape, ShapeError> {
    let t = numalab_topology::Topology::from_sysfs(Path::new("/sys"))?;
    let nr_nodes = t.nodes.iter().map(|n| n.id + 1).max().unwrap_or(1);
    let nr_cpus = t.cpus.iter().map(|c| c.id + 1).max().unwrap_or(1);
    if nr_nodes as usize > MAX_NODES || nr_cpus as usize > MAX_CPUS {
        return Err(ShapeError::TooLarge {
            nodes: nr_nodes,
            cpus: nr_cpus,
        });
    }
    let mut cpu_node = vec![0u32; MAX_CPUS];
    let mut node_ncpus = vec![0u32; MAX_NODES];
    let mut dist = vec![10u8; MAX_NODES * MAX_NODES];
    let mut cpu_llc = vec![0u32; MAX_CPUS];
    for c in &t.cpus {
        cpu_llc[c.id as usize] = c.llc.unwrap_or(0x10000 + c.node);
    }
    for n in &t.nodes {
        for &c in &n.cpus {
            cpu_node[c as usize] = n.id;
            node_ncpus[n.id as usize] += 1;
        }
    }
    for a in &t.nodes {
        for b in &t.nodes {
            let d = t.distance(a.id, b.id).unwrap_or(10).min(255) as u8;
            dist[a.id as usize * MAX_NODES + b.id as usize] = d;
        }
    }
    Ok(Shape {
        nr_nodes,
        nr_cpus,
        cpu_node,
        node_ncpus,
        dist,
        cpu_llc,
    })
}

/// How long the kernel may take to enable a scheduler (a TCG guest took
/// 1.4 s for scx_simple).
const ENABLE_TIMEOUT: Duration = Duration::from_secs(30);

/// The vmlinux.h the schedulers were compiled against.
pub const VMLINUX_H: &str = env!("NUMALAB_SCX_VMLINUX_H");

/// The process's exit status.
pub fn main(spec: &str) -> i32 {
    match run(spec) {
        Ok(code) => code,
        Err(e) => {
            numalab_linux::errln!("numalab __scx-load: {e}");
            2
        }
    }
}

/// A C string field of the exit record.
fn text(chars: &[i8]) -> String {
    let bytes: Vec<u8> = chars
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Reads an exit record's fields, `kind` first and with a volatile
/// load: the kernel writes it in `ops.exit`, behind our back.
macro_rules! exit_reader {
    ($rec:expr, $ty:ty) => {{
        let rec: &$ty = $rec;
        move || -> Option<ExitInfo> {
            let kind = volatile::read(&rec.kind);
            if kind == 0 {
                return None;
            }
            // `kind` is written last by the program: the rest is complete.
            std::sync::atomic::fence(Ordering::Acquire);
            let r = volatile::read(rec);
            Some(ExitInfo {
                kind: kind as i64,
                kind_name: exit_kind_name(kind as i64),
                code: r.code,
                reason: text(&r.reason),
                msg: text(&r.msg),
                stats: Default::default(),
            })
        }
    }};
}

/// Open a skeleton into `$storage`, set its read-only data with `$set`,
/// load it: the loaded skeleton and the reader of its exit record.
macro_rules! open_load {
    ($builder:expr, $exit_ty:ty, $storage:ident, $fail:ident, $missing:ident, |$r:ident| $set:expr) => {{
        let mut open = $builder
            .open(&mut $storage)
            .map_err(|e| $fail("opening the BPF object", e))?;
        let $r = open
            .maps
            .rodata_data
            .as_deref_mut()
            .ok_or_else(|| $missing(".rodata"))?;
        $set;
        let mut skel = open.load().map_err(|e| $fail("loading", e))?;
        // Taken out of the skeleton, so the reader borrows the mapped
        // .data itself, not the skeleton. libbpf-rs gives it the storage's
        // lifetime, but the skeleton unmaps it when dropped: the readers
        // are used only in `hold`, while the skeleton lives.
        let data = skel
            .maps
            .data_data
            .take()
            .ok_or_else(|| $missing(".data"))?;
        let read = exit_reader!(&data.nl_exit_rec, $exit_ty);
        (skel, read)
    }};
}

/// A scheduler ready to load: its ops name and values, sched_ext's
/// directory and its status before (nothing loaded), and the flag SIGINT
/// and SIGTERM set.
struct Ready {
    ops: String,
    resolved: Resolved,
    root: PathBuf,
    before: Status,
    stop: Arc<AtomicBool>,
}

/// Check the spec, that this kernel has sched_ext and that nothing is
/// loaded; catch SIGINT and SIGTERM.
fn ready(spec: &str) -> Result<Ready, LoadError> {
    let (scx, resolved) = crate::parse(spec)?;
    let ops = scx.expected_ops().unwrap_or_default().to_string();
    let root = sched_ext::root();
    if let Some(why) = sched_ext::unsupported(&root) {
        return Err(LoadError::Unsupported {
            flag: scx.flag(),
            why,
        });
    }
    let before = Status::read(&root)?;
    if before.state != "disabled" {
        return Err(LoadError::AlreadyLoaded {
            flag: scx.flag(),
            status: before,
        });
    }
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone()).map_err(LoadError::Signals)?;
    }
    Ok(Ready {
        ops,
        resolved,
        root,
        before,
        stop,
    })
}

/// Load the scheduler `spec` names and hold it (see [`hold`]). Its exit
/// record and counters are read straight from the skeleton's mmapped
/// `.data` and `.bss` maps while the program runs, with volatile loads
/// (the kernel writes them behind our back): [`volatile::read`].
fn run(spec: &str) -> Result<i32, LoadError> {
    let Ready {
        ops,
        resolved,
        root,
        before,
        stop,
    } = ready(spec)?;
    let (fail, missing) = (LoadError::bpf(&ops), LoadError::no_map(&ops));
    let no_shape = LoadError::shape(&ops);
    match resolved {
        Resolved::Fifo { slice_ns } => {
            let mut storage = MaybeUninit::uninit();
            let (mut skel, read) = open_load!(
                fifo::FifoSkelBuilder::default(),
                fifo::types::nl_exit,
                storage,
                fail,
                missing,
                |r| r.slice_ns = slice_ns
            );
            let link = skel
                .maps
                .fifo_ops
                .attach_struct_ops()
                .map_err(|e| fail("attaching", e))?;
            let links = vec![link];
            hold(
                &root,
                before.enable_seq,
                &ops,
                &stop,
                &read,
                &no_stats,
                links,
            )
        }
        Resolved::NodeAffine {
            initial,
            bonus,
            delay_ns,
            slice_ns,
        } => {
            let m = shape().map_err(no_shape)?;
            let mut storage = MaybeUninit::uninit();
            let (mut skel, read) = open_load!(
                node_affine::NodeAffineSkelBuilder::default(),
                node_affine::types::nl_exit,
                storage,
                fail,
                missing,
                |r| {
                    r.nr_nodes = m.nr_nodes;
                    r.nr_cpus = m.nr_cpus;
                    r.slice_ns = slice_ns;
                    r.delay_ns = delay_ns;
                    r.bonus_milli = (bonus * 1000.0).round() as u64;
                    r.initial = initial;
                    r.cpu_node.copy_from_slice(&m.cpu_node);
                    r.node_ncpus.copy_from_slice(&m.node_ncpus);
                    r.dist.copy_from_slice(&m.dist);
                }
            );
            // Initial placement at exec first, then the scheduler.
            let exec = skel
                .progs
                .na_exec
                .attach()
                .map_err(|e| fail("attaching the exec hook", e))?;
            let link = skel
                .maps
                .node_affine_ops
                .attach_struct_ops()
                .map_err(|e| fail("attaching", e))?;
            let links = vec![link, exec];
            hold(
                &root,
                before.enable_seq,
                &ops,
                &stop,
                &read,
                &no_stats,
                links,
            )
        }
        Resolved::Nest {
            reserve_max,
            compact_ns,
        } => {
            let m = shape().map_err(no_shape)?;
            let mut storage = MaybeUninit::uninit();
            let (mut skel, read) = open_load!(
                nest::NestSkelBuilder::default(),
                nest::types::nl_exit,
                storage,
                fail,
                missing,
                |r| {
                    r.nr_cpus = m.nr_cpus;
                    r.reserve_max = reserve_max;
                    r.compact_ns = compact_ns;
                    r.cpu_llc.copy_from_slice(&m.cpu_llc);
                }
            );
            let link = skel
                .maps
                .nest_ops
                .attach_struct_ops()
                .map_err(|e| fail("attaching", e))?;
            let bss = skel.maps.bss_data.take().ok_or_else(|| missing(".bss"))?;
            let counters: &[u64; 8] = &bss.stats;
            let stats = move || {
                // The program only adds to them.
                let v = volatile::read(counters);
                NEST_STATS
                    .iter()
                    .zip(v)
                    .map(|(n, v)| (n.to_string(), v))
                    .collect()
            };
            hold(
                &root,
                before.enable_seq,
                &ops,
                &stop,
                &read,
                &stats,
                vec![link],
            )
        }
    }
}

/// A scheduler that counts nothing.
fn no_stats() -> BTreeMap<String, u64> {
    BTreeMap::new()
}

/// nest's counters (`stats[]` in bpf/nest.bpf.c, in its order): tasks
/// placed by each step of the policy, then primary cores compacted.
const NEST_STATS: [&str; 8] = [
    "attached",
    "prev",
    "primary",
    "reserve",
    "kernel_idle",
    "kernel_busy",
    "compacted",
    "compacted_at_exit",
];

fn print_exit(e: &ExitInfo) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "{EXIT_LINE}{}",
        serde_json::to_string(e).expect("an exit record serialises")
    );
    let _ = out.flush();
}

/// Wait for the kernel to enable it, say so, hold the link until asked
/// to stop or until the kernel ends the scheduler; print how it ended.
fn hold(
    root: &Path,
    before: u64,
    ops: &str,
    stop: &AtomicBool,
    read: &dyn Fn() -> Option<ExitInfo>,
    stats: &dyn Fn() -> BTreeMap<String, u64>,
    links: Vec<libbpf_rs::Link>,
) -> Result<i32, LoadError> {
    let enabled = sched_ext::wait_enabled(root, before, Some(ops), ENABLE_TIMEOUT, &mut || {
        read().map(|e| format!("the kernel ended it: {}", e.describe()))
    });
    let status = match enabled {
        Ok(s) => s,
        Err(e) => {
            if let Some(x) = read() {
                print_exit(&x);
            }
            return Err(LoadError::NotEnabled {
                ops: ops.to_string(),
                source: e,
            });
        }
    };
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{ENABLED_LINE} {ops} enable_seq={}", status.enable_seq);
        let _ = out.flush();
    }
    while !stop.load(Ordering::Relaxed) {
        if let Some(mut e) = read() {
            e.stats = stats();
            print_exit(&e);
            return Ok(1);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(links);
    // The kernel runs ops.exit as it disables the scheduler.
    let t = Instant::now();
    let mut exit = read();
    while t.elapsed() < Duration::from_secs(5) {
        exit = exit.or_else(read);
        let disabled = Status::read(root).is_ok_and(|s| s.state == "disabled");
        if exit.is_some() && disabled {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    match exit {
        Some(mut e) => {
            e.stats = stats();
            print_exit(&e);
            Ok(0)
        }
        None => Err(LoadError::NoExitRecord {
            ops: ops.to_string(),
        }),
    }
}
