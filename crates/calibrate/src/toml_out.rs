//! The machine file's text: calibrate's figures written section by
//! section, each with comments saying how its figures were measured.

use crate::figure::round3;
use crate::{Balancing, Cache, Compute, Figure, Model, Process};
use crate::{Machine, Measured, NodeBw, Transfer, BUSY_LIMIT_CPUS};
use numalab_sim::machine::RegularTopology;
use std::fmt::Write as _;

/// Writes `line` as a comment.
fn c(t: &mut String, line: &str) {
    let _ = writeln!(t, "# {line}");
}

/// Writes the machine file: its header and topology, then [memory],
/// [cache], [cpu], [kernel], [costs] and [sources].
pub(super) fn machine_file(
    m: &Machine,
    ms: &Measured,
    figs: &[(String, String, Figure)],
    seconds: f64,
) -> String {
    let mut t = header(m, seconds, figs);
    t.push_str(&memory(m, ms));
    t.push_str(&cache(m, ms));
    t.push_str(&cpu(m, ms));
    t.push_str(&kernel(m));
    t.push_str(&costs(ms));
    t.push_str(&sources(m, figs));
    t
}

/// Writes the header comments (where, when, how busy, which figures
/// were unsteady), the name, the description and the topology.
fn header(m: &Machine, seconds: f64, figs: &[(String, String, Figure)]) -> String {
    let (info, topo, busy) = (&m.info, &m.topo, m.busy);
    let regular = RegularTopology::of(topo);
    let host = &info.hostname;
    let mut t = String::new();
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
    if let Some(line) = unsteady_line(figs) {
        c(&mut t, &format!("Unsteady: {line}"));
    }
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
    t
}

/// The sentence naming the figures whose runs lay more than
/// [`crate::figure::UNSTEADY`] apart, if any: the file's comment and
/// calibrate's warning.
pub fn unsteady_line(figs: &[(String, String, Figure)]) -> Option<String> {
    let names = crate::figure::unsteady(figs);
    (!names.is_empty()).then(|| {
        format!(
            "{} figure{} varied by more than {:.0}% between runs: {}; the machine's speed moved while it was measured (another tenant's load, or where a virtual machine's CPUs ran), the file holds their medians, and what leans on them may not repeat: calibrate again when the machine holds still.",
            names.len(),
            if names.len() == 1 { "" } else { "s" },
            100.0 * crate::figure::UNSTEADY,
            names.join(", ")
        )
    })
}

/// The [memory] section's comments on each node's bandwidths: one thread
/// and every CPU of the machine, with how the memset of all was measured
/// (in a VM, where the host ran the vCPUs, which that rate moves with).
fn node_bandwidths(t: &mut String, node_bw: &[NodeBw]) {
    for x in node_bw {
        let j = x.node;
        c(
            t,
            &format!(
                "node {j}: one thread read {}, memset {}, write {}",
                x.read1.describe("GB/s"),
                x.zero1.describe("GB/s"),
                x.update1.describe("GB/s")
            ),
        );
        c(
            t,
            &format!(
                "node {j}: all the machine's CPUs read {}, memset {}",
                x.read_all.describe("GB/s"),
                x.zero_all.describe("GB/s")
            ),
        );
        c(t, &format!("node {j}: all CPUs memset: {}", x.zero_all.how));
    }
}

/// Writes the [memory] section: the latencies, the bandwidths and the
/// model's controller bandwidth and misses in flight.
fn memory(m: &Machine, ms: &Measured) -> String {
    let (cpu_nodes, lat, local, node_bw, links) =
        (&m.cpu_nodes, &ms.lat, &ms.local, &ms.node_bw, &ms.links);
    let Compute {
        memset,
        read,
        write,
        upd,
        upd_memory,
        ..
    } = &ms.compute;
    let Model {
        one_thread,
        mlp,
        one_read,
        read_mlp,
        one_update,
        write_mlp,
        miss,
        random_mlp,
        node_zero,
        node_threads,
        node_read,
        read_all,
        node_loads,
        ..
    } = ms.model;
    let mut t = String::new();
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
    node_bandwidths(&mut t, node_bw);
    c(&mut t, &format!("bandwidth_gbs: the controller rate at which the simulator's queueing model ({node_threads} threads of {one_thread:.3} GB/s each, M/M/1 waits) carries the {node_zero:.3} GB/s all the machine's CPUs were measured to zero of a node's memory (the sweep the streaming benchmarks do)"));
    let _ = writeln!(t, "bandwidth_gbs = {:?}", round3(node_read));
    match node_loads {
        Some(r) => {
            c(&mut t, &format!("read_bandwidth_gbs: the controller's rate for loads at which the same model ({node_threads} threads reading {one_read:.3} GB/s each alone) carries the {read_all:.3} GB/s all the machine's CPUs were measured to read of a node's memory (a line read is served in 1 / this, a line written in 1 / bandwidth_gbs, one queue)"));
            let _ = writeln!(t, "read_bandwidth_gbs = {:?}", round3(r));
        }
        None => c(&mut t, &format!("read_bandwidth_gbs: none: all the machine's CPUs read {read_all:.3} GB/s of a node's memory, {node_threads} times one thread's {one_read:.3} or near it (loads scale; the controller serves them at bandwidth_gbs)")),
    }
    c(&mut t, &format!("mlp: the misses in flight with which the simulator's streaming model (a line's zeroing in cache, then its memory time latency / mlp) gives one thread the {:.3} GB/s it zeroed of memory, its zeroing in cache being {:.3} GB/s (Little's law on the memory part)", one_thread, memset.value));
    let _ = writeln!(t, "mlp = {:?}", round3(mlp));
    c(&mut t, &format!("read_mlp: the same for loads: one thread reading {:.3} GB/s of memory, {:.3} GB/s in cache (the mem benchmark's read sweep)", one_read, read.value));
    let _ = writeln!(t, "read_mlp = {:?}", round3(read_mlp));
    c(&mut t, &format!("write_mlp: the same for a read-modify-write, its lines going back beside the loads: one thread adding one to every word of {:.3} GB/s of memory, {:.3} GB/s in cache (the mem benchmark's write sweep)", one_update, write.value));
    let _ = writeln!(t, "write_mlp = {:?}", round3(write_mlp));
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
    t
}

/// Writes the [cache] section: the latency and update curves, the LLC
/// the model gets, its hit latency and a line's transfer between LLCs.
fn cache(m: &Machine, ms: &Measured) -> String {
    let (llc, local, transfer) = (m.llc, &ms.local, &ms.transfer);
    let Cache {
        curve: llc_curve,
        used: llc_used,
        hit,
    } = &ms.cache;
    let (llc_used, llc_model) = (*llc_used, ms.model.llc_model);
    let Compute {
        llc_cpus,
        upd_curve,
        ..
    } = &ms.compute;
    let mut t = String::new();
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
            "llc_mib: sysfs gives {} MiB; a dependent chase's latency passes halfway from its smallest to memory's past {} MiB; numa_test's update, a task on each of CPUs {} at once, passes halfway from in cache to its largest size where the model's miss share is a half (its share of the cache 0.63 x the 8n bytes of a, its streamed ix and b taking their places under LRU): {} MiB for them all, the cache their random accesses get here",
            round3(llc as f64 / (1u64 << 20) as f64),
            round3(llc_used as f64 / (1u64 << 20) as f64),
            numalab_topology::cpulist::format(llc_cpus),
            round3(llc_model as f64 / (1u64 << 20) as f64)
        ),
    );
    let _ = writeln!(
        t,
        "llc_mib = {:?}",
        round3(llc_model as f64 / (1u64 << 20) as f64)
    );
    if llc != llc_model {
        c(
            &mut t,
            "reported_llc_mib: the size sysfs reports (exact), which the simulated topology carries: a benchmark sizes its work by it there as here",
        );
        let _ = writeln!(
            t,
            "reported_llc_mib = {:?}",
            llc as f64 / (1u64 << 20) as f64
        );
    }
    c(&mut t, &hit.describe("ns"));
    let _ = writeln!(t, "llc_hit_ns = {:?}", round3(hit.value));
    match &transfer {
        Transfer::Measured(f) => {
            c(&mut t, &f.describe("ns"));
            let _ = writeln!(t, "cross_llc_ns = {:?}", round3(f.value));
        }
        Transfer::NotMeasured(why) => {
            c(&mut t, &why.to_string());
            let _ = writeln!(t, "cross_llc_ns = {:?}", round3(local.value));
        }
    }
    t
}

/// Writes the [cpu] section: the frequencies, the governor and SMT.
fn cpu(m: &Machine, ms: &Measured) -> String {
    let (info, smt) = (&m.info, &ms.smt);
    let (base, max, min, freq_how) = &ms.freq;
    let (base, max, min) = (*base, *max, *min);
    let mut t = String::new();
    let _ = writeln!(t, "\n[cpu]");
    c(&mut t, freq_how);
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
    let (f, n) = (&ms.at_once, ms.model.run_at_once);
    c(&mut t, &format!("{}: {}", f.how, f.describe("CPUs' worth")));
    match n {
        Some(n) => {
            c(
                &mut t,
                &format!(
                    "run_at_once: fewer of the {} CPUs run at once than there are (a guest's vCPUs on fewer host CPUs): each runs {n} / busy CPUs of the time when more are busy",
                    m.topo.cpus.len()
                ),
            );
            let _ = writeln!(t, "run_at_once = {n}");
        }
        None => c(&mut t, "run_at_once: every CPU runs at once"),
    }
    t
}

/// Writes the [kernel] section: the transparent_hugepage mode the
/// figures were measured under, which the simulator then runs with (its
/// page size: the benchmarks do not madvise, so 2 MiB pages only with
/// `always`); a comment alone when sysfs did not say.
fn kernel(m: &Machine) -> String {
    let mut t = String::from("\n[kernel]\n");
    let mode = m.info.thp_enabled.as_deref();
    match mode.filter(|s| numalab_sim::THP_MODES.contains(s)) {
        Some(mode) => {
            c(
                &mut t,
                &format!(
                    "transparent_hugepage/enabled while measured: {mode}; the simulator's too (--thp or a configuration's thp sets another): {}",
                    if mode == "always" {
                        "2 MiB pages"
                    } else {
                        "4 KiB pages, as the benchmarks do not madvise"
                    }
                ),
            );
            let _ = writeln!(t, "thp = {mode:?}");
        }
        None => c(
            &mut t,
            &format!(
                "transparent_hugepage/enabled: {} (not a mode the simulator knows; it runs with always)",
                mode.unwrap_or("not in sysfs")
            ),
        ),
    }
    let nb = m
        .info
        .numa_balancing
        .as_deref()
        .and_then(|v| v.trim().parse::<i64>().ok());
    if let Some(nb @ 0..=3) = nb {
        c(
            &mut t,
            "kernel.numa_balancing while measured: the simulator balances as --balancer says (autonuma is the kernel's), and numalab sim says so when this is on and the balancer none",
        );
        let _ = writeln!(t, "numa_balancing = {nb}");
    }
    t
}

/// Writes the [costs] section: the interconnect's comments and each cost
/// with how it was measured.
fn costs(ms: &Measured) -> String {
    let links = &ms.links;
    let Compute {
        spin,
        upd,
        memset,
        read,
        write,
        ..
    } = &ms.compute;
    let Process {
        msg,
        msg_user,
        fork,
        launch,
        start,
        exit,
        exec,
        exec_user,
        thread,
    } = &ms.process;
    let Balancing {
        first_touch,
        first_touch_two,
        scan,
        migrate,
    } = &ms.balancing;
    let mut t = String::new();
    let _ = writeln!(t, "\n[costs]");
    t.push_str(&links.costs_comments());
    for (key, unit, f) in [
        ("spin_ns", "ns", spin),
        ("randupdt_ns", "ns", upd),
        ("memset_gbs", "GB/s", memset),
        ("msg_us", "us", msg),
        ("fork_us", "us", fork),
        ("exec_us", "us", exec),
        ("msg_user_share", "", msg_user),
        ("exec_user_share", "", exec_user),
        ("process_launch_us", "us", launch),
        ("process_start_us", "us", start),
        ("process_exit_us", "us", exit),
        ("thread_launch_us", "us", thread),
        ("first_touch_gbs", "GB/s", first_touch),
        ("scan_us_per_gb", "us", scan),
        ("read_gbs", "GB/s", read),
        ("write_gbs", "GB/s", write),
    ]
    .into_iter()
    .chain(
        first_touch_two
            .as_ref()
            .map(|f| ("first_touch_two_gbs", "GB/s", f)),
    )
    .chain(migrate.as_ref().map(|m| ("migrate_us_per_mb", "us", m)))
    {
        c(&mut t, &format!("{}: {}", f.how, f.describe(unit)));
        let _ = writeln!(t, "{key} = {:?}", round3(f.value));
    }
    t
}

/// Writes the [sources] section: where each figure of the file came from.
fn sources(m: &Machine, figs: &[(String, String, Figure)]) -> String {
    let (host, topo) = (&m.info.hostname, &m.topo);
    let mut t = String::new();
    let _ = writeln!(t, "\n[sources]");
    for (key, _, f) in figs {
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

    t
}
