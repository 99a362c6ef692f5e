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
            numa_balancing_tunables: numa_balancing_tunables(roots),
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
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
