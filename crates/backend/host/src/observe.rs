//! Sampling what tasks and pages do over time, from procfs: the node each
//! task last ran on, each process's resident memory per node
//! (`/proc/PID/numa_maps`, the same source and sum as `numastat -p`), the
//! nodes of the memory regions tasks work on (`move_pages` on evenly spaced
//! pages), and the kernel's NUMA counters as deltas.

use numalab_linux::{numa, procfs};
use numalab_record::{RunRecord, Sample};
use numalab_topology::Topology;
use std::collections::BTreeMap;
use std::path::Path;

pub struct Observer {
    topology: Topology,
    vmstat_start: BTreeMap<String, u64>,
}

impl Observer {
    pub fn start(topology: &Topology) -> Observer {
        Observer {
            topology: topology.clone(),
            vmstat_start: procfs::vmstat(Path::new("/proc")).unwrap_or_default(),
        }
    }

    /// Memory of `pid` per node, aligned with the topology's nodes.
    pub fn memory(&self, pid: i32) -> Vec<u64> {
        let by_id = procfs::numa_maps(pid).unwrap_or_default();
        self.topology
            .nodes
            .iter()
            .map(|n| by_id.get(&n.id).copied().unwrap_or(0))
            .collect()
    }

    /// Node task `tid` of process `pid` last ran on.
    pub fn task_node(&self, pid: i32, tid: Option<i32>) -> Option<u32> {
        let st = procfs::task_stat(pid, tid).ok()?;
        self.topology.node_of_cpu(st.processor)
    }

    pub fn vmstat_delta(&self) -> BTreeMap<String, i64> {
        let now = procfs::vmstat(Path::new("/proc")).unwrap_or_default();
        now.iter()
            .map(|(k, v)| {
                let base = self.vmstat_start.get(k).copied().unwrap_or(0);
                (k.clone(), *v as i64 - base as i64)
            })
            .collect()
    }

    /// One sample: `processes` are pids whose memory is tracked; `tasks`
    /// are (pid, tid) pairs; `progress` is work done per task.
    pub fn sample(
        &self,
        t_s: f64,
        processes: &[i32],
        tasks: &[(i32, Option<i32>)],
        progress: Vec<u64>,
    ) -> Sample {
        Sample {
            t_s,
            memory_bytes: processes.iter().map(|&p| self.memory(p)).collect(),
            task_node: tasks.iter().map(|&(p, t)| self.task_node(p, t)).collect(),
            progress,
            vmstat: self.vmstat_delta(),
            task_memory_bytes: Vec::new(),
        }
    }

    /// Bytes per node (aligned with the topology's nodes) of each memory
    /// region of process `pid`, estimated from the nodes of at most
    /// `budget` evenly spaced pages in all (at least 64 per region, or
    /// every page of a smaller region). Pages not present count nowhere.
    /// A region that cannot be read (the process is gone) gives zeros.
    pub fn regions(&self, pid: i32, regions: &[Region], budget: usize) -> Vec<Vec<u64>> {
        let nodes = self.topology.nodes.len();
        let page = numa::page_size() as u64;
        let per_region = (budget / regions.len().max(1)).max(64);
        let mut addrs: Vec<*const u8> = Vec::new();
        let mut spans = Vec::with_capacity(regions.len());
        for r in regions {
            let pages = r.len.div_ceil(page);
            let k = pages.min(per_region as u64);
            let first = addrs.len();
            for i in 0..k {
                let p = i * pages / k;
                addrs.push((r.addr + p * page) as *const u8);
            }
            spans.push((first, addrs.len()));
        }
        let status = numa::page_nodes(pid, &addrs).unwrap_or_default();
        regions
            .iter()
            .zip(&spans)
            .map(|(r, &(a, b))| {
                let mut out = vec![0u64; nodes];
                let Some(st) = status.get(a..b) else {
                    return out;
                };
                let k = (b - a) as u64;
                for &n in st {
                    if n >= 0 {
                        if let Some(ix) = self.topology.node_index(n as u32) {
                            out[ix] += 1;
                        }
                    }
                }
                for v in out.iter_mut() {
                    *v = (*v * r.len).checked_div(k).unwrap_or(0);
                }
                out
            })
            .collect()
    }
}

/// End `rec`'s series, when the run was observed (`observed`), with a
/// sample taken once every task has ended: at `t_end` (when the last task
/// ended; never before the previous sample), with each task's final work
/// count as `progress` (empty for a benchmark that counts none), so that
/// progress reaches the work done, and the kernel's counters at the end
/// (`vmstat`, the deltas the record's metrics come from). Nothing of the
/// tasks' memory or CPUs can be read once they have exited: `memory_bytes`,
/// `task_node` and `task_memory_bytes` stay empty, so charts of memory
/// end at the last sample that read it and convergence ignores this one.
pub fn push_final_sample(
    rec: &mut RunRecord,
    observed: bool,
    t_end: f64,
    progress: Vec<u64>,
    vmstat: &BTreeMap<String, i64>,
) {
    if !observed {
        return;
    }
    let last = rec.series.samples.last().map_or(0.0, |s| s.t_s);
    rec.series.samples.push(Sample {
        t_s: t_end.max(last),
        memory_bytes: Vec::new(),
        task_node: Vec::new(),
        progress,
        vmstat: vmstat.clone(),
        task_memory_bytes: Vec::new(),
    });
}

/// A memory region of a benchmark process, as the process reported it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Region {
    pub addr: u64,
    pub len: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_of_own_memory_are_resident_where_numa_maps_says() {
        let topo = numalab_topology::Topology::from_sysfs(Path::new("/sys")).unwrap();
        let obs = Observer::start(&topo);
        let len = 8usize << 20;
        let v = vec![1u8; len];
        let untouched = vec![0u8; len]; // calloc'd: not faulted in
        let regions = [
            Region {
                addr: v.as_ptr() as u64,
                len: len as u64,
            },
            Region {
                addr: untouched.as_ptr() as u64,
                len: len as u64,
            },
        ];
        let m = obs.regions(std::process::id() as i32, &regions, 1024);
        let total: u64 = m[0].iter().sum();
        // Estimated from evenly spaced pages: within one sampled page.
        assert!(total.abs_diff(len as u64) <= (len / 512) as u64, "{m:?}");
        assert!(m[1].iter().sum::<u64>() < (len / 4) as u64, "{m:?}");
        // A process that is gone gives zeros, not an error.
        assert_eq!(obs.regions(-1, &regions[..1], 64)[0].iter().sum::<u64>(), 0);
        drop((v, untouched));
    }
}
