//! Sampling what tasks and pages do over time, from procfs: the node each
//! task last ran on, each process's resident memory per node
//! (`/proc/PID/numa_maps`), and the kernel's NUMA counters as deltas.

use numalab_linux::procfs;
use numalab_record::Sample;
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
        }
    }
}
