//! Machine metadata that every run record carries: what kernel, CPU,
//! memory and NUMA policy knobs a result was measured under. Everything is
//! read from an explicit procfs and sysfs root so it is testable; a value
//! that cannot be read is `None`, never a guess.

use crate::{Topology, TopologyError};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// Where to read from. `Roots::host()` is `/proc` and `/sys`.
#[derive(Debug, Clone)]
pub struct Roots {
    pub proc: PathBuf,
    pub sys: PathBuf,
}

impl Roots {
    pub fn host() -> Roots {
        Roots {
            proc: PathBuf::from("/proc"),
            sys: PathBuf::from("/sys"),
        }
    }
}

/// Metadata of the machine a result was produced on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MachineInfo {
    pub hostname: String,
    /// `uname -r`.
    pub kernel: String,
    /// `uname -v` (build string).
    pub kernel_build: Option<String>,
    pub arch: String,
    pub cpu_model: Option<String>,
    /// Hypervisor vendor when the CPU says it is virtualised.
    pub hypervisor: bool,
    pub memory_total_bytes: Option<u64>,
    pub memory_available_bytes: Option<u64>,
    /// `kernel.numa_balancing` (0 off, 1 on, 2 memory tiering, 3 both).
    pub numa_balancing: Option<String>,
    /// NUMA balancing scan tunables, by name (scan_delay_ms, ...), from
    /// debugfs (`sched/numa_balancing/`) or the older sysctls.
    pub numa_balancing_tunables: BTreeMap<String, String>,
    /// Selected value of `transparent_hugepage/enabled` and `defrag`.
    pub thp_enabled: Option<String>,
    pub thp_defrag: Option<String>,
    /// cpufreq governor of CPU 0, when cpufreq exists.
    pub governor: Option<String>,
    /// `/sys/devices/system/cpu/smt/active`.
    pub smt_active: Option<bool>,
    /// 1, 5 and 15 minute load averages when the probe ran.
    pub loadavg: Option<[f64; 3]>,
    pub topology: Topology,
    /// Kernel and process settings beyond the topology that change
    /// scheduling and placement results.
    #[serde(default)]
    pub tuning: Tuning,
}

/// What else a scheduling or placement result depends on: the kernel's
/// command line and tunables, frequency scaling, and where numalab itself
/// was allowed to run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Tuning {
    /// `/proc/cmdline`.
    pub kernel_cmdline: Option<String>,
    /// `vm.zone_reclaim_mode`.
    pub zone_reclaim_mode: Option<String>,
    /// The scheduler's tunables by name (`migration_cost_ns`,
    /// `nr_migrate`, `base_slice_ns` or `min_granularity_ns`, ...), from
    /// debugfs `sched/` or the older `kernel.sched_*` sysctls.
    pub sched_tunables: BTreeMap<String, String>,
    /// cpufreq driver of CPU 0 (`intel_pstate`, `acpi-cpufreq`,
    /// `amd-pstate-epp`, ...).
    pub cpufreq_driver: Option<String>,
    /// Turbo/boost: `on` or `off` (`cpufreq/boost`, or intel_pstate's
    /// `no_turbo` inverted).
    pub boost: Option<String>,
    /// numalab's cpuset (`/proc/self/cpuset`) and the CPUs and memory
    /// nodes it may use (`Cpus_allowed_list`, `Mems_allowed_list`).
    pub cpuset: Option<String>,
    pub cpus_allowed: Option<String>,
    pub mems_allowed: Option<String>,
    /// Free memory per node id when the probe ran.
    pub node_free_bytes: BTreeMap<u32, u64>,
    /// What could not be read, and why (debugfs not mounted, root only).
    pub unreadable: Vec<String>,
    /// sched_ext, the BPF scheduler class (`CONFIG_SCHED_CLASS_EXT`):
    /// `/sys/kernel/sched_ext/state` (`disabled`, `enabled`, ...) and,
    /// when a BPF scheduler is loaded, its name (`root/ops`):
    /// `enabled scx_rusty`; `unsupported` when the kernel has no
    /// `/sys/kernel/sched_ext`. Absent where `/sys/kernel` could not be
    /// read, and from records made before numalab read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sched_ext: Option<String>,
}

/// [`Tuning::sched_ext`] read under the sysfs root `sys`.
pub fn sched_ext(sys: &Path) -> Option<String> {
    let dir = sys.join("kernel/sched_ext");
    if !dir.is_dir() {
        return sys.join("kernel").is_dir().then(|| "unsupported".into());
    }
    let state = read_trim(&dir.join("state")).unwrap_or_else(|| "unreadable".into());
    match read_trim(&dir.join("root/ops")).filter(|o| !o.is_empty()) {
        Some(ops) => Some(format!("{state} {ops}")),
        None => Some(state),
    }
}

/// Scheduler tunables: debugfs `sched/<name>` (5.13 on) or the sysctl
/// `kernel.sched_<name>` (before).
const SCHED_TUNABLES: [&str; 8] = [
    "base_slice_ns",
    "latency_ns",
    "min_granularity_ns",
    "wakeup_granularity_ns",
    "migration_cost_ns",
    "nr_migrate",
    "tunable_scaling",
    "preempt",
];

impl Tuning {
    /// Probe at `roots`; `numa_tunables_found` says whether the NUMA
    /// balancing scan tunables were readable (else why is recorded).
    pub fn probe(roots: &Roots, topology: &Topology, numa_tunables_found: bool) -> Tuning {
        let proc = |rel: &str| roots.proc.join(rel);
        let debug = roots.sys.join("kernel/debug");
        let sched = debug.join("sched");
        let mut t = Tuning {
            kernel_cmdline: read_trim(&proc("cmdline")),
            zone_reclaim_mode: read_trim(&proc("sys/vm/zone_reclaim_mode")),
            cpufreq_driver: read_trim(
                &roots
                    .sys
                    .join("devices/system/cpu/cpu0/cpufreq/scaling_driver"),
            ),
            boost: read_trim(&roots.sys.join("devices/system/cpu/cpufreq/boost"))
                .map(|v| if v == "1" { "on" } else { "off" }.to_string())
                .or_else(|| {
                    read_trim(&roots.sys.join("devices/system/cpu/intel_pstate/no_turbo"))
                        .map(|v| if v == "1" { "off" } else { "on" }.to_string())
                }),
            cpuset: read_trim(&proc("self/cpuset")),
            sched_ext: sched_ext(&roots.sys),
            ..Tuning::default()
        };
        let status = fs::read_to_string(proc("self/status")).unwrap_or_default();
        let field = |key: &str| {
            status.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == key).then(|| v.trim().to_string())
            })
        };
        t.cpus_allowed = field("Cpus_allowed_list");
        t.mems_allowed = field("Mems_allowed_list");
        for name in SCHED_TUNABLES {
            let v = read_trim(&sched.join(name))
                .or_else(|| read_trim(&proc(&format!("sys/kernel/sched_{name}"))));
            if let Some(v) = v {
                let v = if name == "preempt" {
                    selected_paren(&v)
                } else {
                    v
                };
                t.sched_tunables.insert(name.to_string(), v);
            }
        }
        for n in &topology.nodes {
            if let Some(b) = node_free_bytes(&roots.sys, n.id) {
                t.node_free_bytes.insert(n.id, b);
            }
        }
        // The debug tunables live in debugfs on current kernels: say why
        // they are missing rather than record nothing.
        if t.sched_tunables.is_empty() || !numa_tunables_found {
            let why = if !debug.exists() {
                format!("{} does not exist", debug.display())
            } else if fs::read_dir(&debug)
                .map(|mut d| d.next().is_none())
                .unwrap_or(false)
            {
                format!(
                    "debugfs is not mounted on {} (as root: mount -t debugfs none {})",
                    debug.display(),
                    debug.display()
                )
            } else if fs::read_dir(&sched).is_err() {
                format!("{} is readable by root only", sched.display())
            } else {
                "this kernel does not have them".to_string()
            };
            let what = match (t.sched_tunables.is_empty(), numa_tunables_found) {
                (true, false) => "scheduler and NUMA-balancing tunables",
                (true, true) => "scheduler tunables",
                _ => "NUMA-balancing tunables",
            };
            t.unreadable.push(format!("{what}: {why}"));
        }
        t
    }
}

/// `none voluntary (full)` -> `full`: the dynamic preemption mode.
fn selected_paren(text: &str) -> String {
    text.split_whitespace()
        .find_map(|w| w.strip_prefix('(').and_then(|w| w.strip_suffix(')')))
        .map(str::to_string)
        .unwrap_or_else(|| text.trim().to_string())
}

fn read_trim(p: &Path) -> Option<String> {
    fs::read_to_string(p).ok().map(|s| s.trim().to_string())
}

/// The bracketed choice of a sysfs selector: `always [madvise] never`.
pub fn selected(text: &str) -> String {
    text.split_whitespace()
        .find_map(|w| w.strip_prefix('[').and_then(|w| w.strip_suffix(']')))
        .map(str::to_string)
        .unwrap_or_else(|| text.trim().to_string())
}

/// A `Key: value kB` field of `/proc/meminfo`, in bytes.
pub fn meminfo_field(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        if k.trim() != key {
            return None;
        }
        let mut it = v.split_whitespace();
        let n: u64 = it.next()?.parse().ok()?;
        Some(match it.next() {
            Some("kB") => n * 1024,
            _ => n,
        })
    })
}

/// Free memory per node id (MemFree of each node's meminfo), for sizing.
pub fn node_free_bytes(sys: &Path, node: u32) -> Option<u64> {
    let text =
        fs::read_to_string(sys.join(format!("devices/system/node/node{node}/meminfo"))).ok()?;
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        if !k.trim_end().ends_with("MemFree") {
            return None;
        }
        Some(v.split_whitespace().next()?.parse::<u64>().ok()? * 1024)
    })
}

/// Tunables of automatic NUMA balancing. Newer kernels keep them in
/// debugfs, older ones (< 5.18) as `kernel.numa_balancing_scan_*` sysctls.
const TUNABLES: [&str; 4] = [
    "scan_delay_ms",
    "scan_period_min_ms",
    "scan_period_max_ms",
    "scan_size_mb",
];

pub fn numa_balancing_tunables(roots: &Roots) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let debugfs = roots.sys.join("kernel/debug/sched/numa_balancing");
    for t in TUNABLES {
        let v = read_trim(&debugfs.join(t))
            .or_else(|| read_trim(&roots.proc.join(format!("sys/kernel/numa_balancing_{t}"))));
        if let Some(v) = v {
            out.insert(t.to_string(), v);
        }
    }
    // Memory tiering knob (kernel.numa_balancing=2), where it exists.
    if let Some(v) = read_trim(&debugfs.join("hot_threshold_ms")) {
        out.insert("hot_threshold_ms".into(), v);
    }
    if let Some(v) = read_trim(
        &roots
            .proc
            .join("sys/kernel/numa_balancing_promote_rate_limit_MBps"),
    ) {
        out.insert("promote_rate_limit_MBps".into(), v);
    }
    out
}

impl MachineInfo {
    /// Probe the machine whose procfs and sysfs are at `roots`.
    pub fn probe(roots: &Roots) -> Result<MachineInfo, TopologyError> {
        let topology = Topology::from_sysfs(&roots.sys)?;
        let p = |rel: &str| roots.proc.join(rel);
        let cpuinfo = fs::read_to_string(p("cpuinfo")).unwrap_or_default();
        let field = |key: &str| {
            cpuinfo.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == key).then(|| v.trim().to_string())
            })
        };
        let cpu_model = field("model name")
            .or_else(|| field("cpu model"))
            .or_else(|| field("Model"));
        let hypervisor = field("flags")
            .map(|f| f.split_whitespace().any(|w| w == "hypervisor"))
            .unwrap_or(false);
        let meminfo = fs::read_to_string(p("meminfo")).unwrap_or_default();
        let loadavg = read_trim(&p("loadavg")).and_then(|s| {
            let v: Vec<f64> = s
                .split_whitespace()
                .take(3)
                .filter_map(|x| x.parse().ok())
                .collect();
            (v.len() == 3).then(|| [v[0], v[1], v[2]])
        });
        let thp = roots.sys.join("kernel/mm/transparent_hugepage");
        let numa_balancing_tunables = numa_balancing_tunables(roots);
        let tuning = Tuning::probe(
            roots,
            &topology,
            TUNABLES
                .iter()
                .any(|t| numa_balancing_tunables.contains_key(*t)),
        );
        Ok(MachineInfo {
            hostname: read_trim(&p("sys/kernel/hostname")).unwrap_or_else(|| "unknown".into()),
            kernel: read_trim(&p("sys/kernel/osrelease")).unwrap_or_else(|| "unknown".into()),
            kernel_build: read_trim(&p("sys/kernel/version")),
            arch: std::env::consts::ARCH.to_string(),
            cpu_model,
            hypervisor,
            memory_total_bytes: meminfo_field(&meminfo, "MemTotal"),
            memory_available_bytes: meminfo_field(&meminfo, "MemAvailable"),
            numa_balancing: read_trim(&p("sys/kernel/numa_balancing")),
            numa_balancing_tunables,
            thp_enabled: read_trim(&thp.join("enabled")).map(|s| selected(&s)),
            thp_defrag: read_trim(&thp.join("defrag")).map(|s| selected(&s)),
            governor: read_trim(
                &roots
                    .sys
                    .join("devices/system/cpu/cpu0/cpufreq/scaling_governor"),
            ),
            smt_active: read_trim(&roots.sys.join("devices/system/cpu/smt/active"))
                .map(|s| s == "1"),
            loadavg,
            topology,
            tuning,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tuning_reads_the_tunables_or_says_why_not() {
        let d = tempfile::tempdir().unwrap();
        let proc = d.path().join("proc");
        let sys = d.path().join("sys");
        let w = |p: PathBuf, v: &str| {
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, v).unwrap();
        };
        w(proc.join("cmdline"), "BOOT_IMAGE=/vmlinuz ro quiet\n");
        w(proc.join("sys/vm/zone_reclaim_mode"), "0\n");
        w(
            proc.join("self/status"),
            "Name:\tnumalab\nCpus_allowed_list:\t0-3\nMems_allowed_list:\t0-1\n",
        );
        w(proc.join("self/cpuset"), "/\n");
        w(sys.join("devices/system/cpu/intel_pstate/no_turbo"), "1\n");
        w(
            sys.join("devices/system/cpu/cpu0/cpufreq/scaling_driver"),
            "intel_pstate\n",
        );
        fs::create_dir_all(sys.join("kernel/debug")).unwrap();
        let roots = Roots { proc, sys };
        let topo = Topology::regular(2, 2, 1, 1, 1 << 20, 1 << 30, None).unwrap();
        let t = Tuning::probe(&roots, &topo, false);
        assert_eq!(
            t.kernel_cmdline.as_deref(),
            Some("BOOT_IMAGE=/vmlinuz ro quiet")
        );
        assert_eq!(t.zone_reclaim_mode.as_deref(), Some("0"));
        assert_eq!(t.cpus_allowed.as_deref(), Some("0-3"));
        assert_eq!(t.mems_allowed.as_deref(), Some("0-1"));
        assert_eq!(t.boost.as_deref(), Some("off"));
        assert_eq!(t.cpufreq_driver.as_deref(), Some("intel_pstate"));
        assert!(t.sched_tunables.is_empty());
        assert_eq!(t.unreadable.len(), 1, "{:?}", t.unreadable);
        assert!(
            t.unreadable[0]
                .starts_with("scheduler and NUMA-balancing tunables: debugfs is not mounted"),
            "{:?}",
            t.unreadable
        );
        // Mounted: the values, the preemption mode in parentheses.
        let sched = roots.sys.join("kernel/debug/sched");
        w(sched.join("migration_cost_ns"), "500000\n");
        w(sched.join("preempt"), "none voluntary (full)\n");
        let t = Tuning::probe(&roots, &topo, true);
        assert_eq!(t.sched_tunables["migration_cost_ns"], "500000");
        assert_eq!(t.sched_tunables["preempt"], "full");
        assert!(t.unreadable.is_empty(), "{:?}", t.unreadable);
        // sched_ext: a kernel without it, with it, with a BPF scheduler.
        assert_eq!(t.sched_ext.as_deref(), Some("unsupported"));
        let scx = roots.sys.join("kernel/sched_ext");
        w(scx.join("state"), "disabled\n");
        assert_eq!(sched_ext(&roots.sys).as_deref(), Some("disabled"));
        w(scx.join("state"), "enabled\n");
        w(scx.join("root/ops"), "scx_rusty\n");
        assert_eq!(sched_ext(&roots.sys).as_deref(), Some("enabled scx_rusty"));
        assert_eq!(sched_ext(&d.path().join("nothing")), None);
    }

    #[test]
    fn selector_and_meminfo() {
        assert_eq!(selected("always [madvise] never\n"), "madvise");
        assert_eq!(selected("2"), "2");
        let mi = "MemTotal:       24000000 kB\nMemAvailable:   100 kB\nHugePages_Total: 0\n";
        assert_eq!(meminfo_field(mi, "MemTotal"), Some(24_000_000 * 1024));
        assert_eq!(meminfo_field(mi, "MemAvailable"), Some(102_400));
        assert_eq!(meminfo_field(mi, "HugePages_Total"), Some(0));
        assert_eq!(meminfo_field(mi, "Nope"), None);
    }
}
