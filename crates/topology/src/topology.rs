//! The one machine description shared by real runs, guests and the
//! simulator: nodes, last-level caches, cores and CPUs, and the node
//! distance matrix.

use crate::cpulist;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

/// A NUMA node. Ids are the kernel's and may be sparse; a node with no
/// CPUs is memory-only (CXL expanders, tiered memory, emulated nodes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Node {
    pub id: u32,
    pub cpus: Vec<u32>,
    pub memory_bytes: u64,
}

/// A logical CPU (hardware thread).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Cpu {
    pub id: u32,
    pub node: u32,
    pub package: u32,
    /// Machine-wide core index (dense, 0..ncores), shared by SMT siblings.
    pub core: u32,
    /// Index into [`Topology::llcs`], when the cache hierarchy is known.
    pub llc: Option<u32>,
}

/// How two CPUs relate, nearest first ([`Topology::relation`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Relation {
    SameCpu,
    SmtSibling,
    /// Another core under the same last-level cache.
    SameLlc,
    /// Another LLC on the same node.
    SameNode,
    CrossNode,
}

/// A last-level cache and the CPUs that share it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Llc {
    pub id: u32,
    pub level: u8,
    pub size_bytes: u64,
    pub cpus: Vec<u32>,
}

/// A whole machine. Invariants (checked by [`Topology::validate`]): node ids
/// unique and sorted, CPU ids unique and sorted, every CPU on a listed node,
/// `distances` square with one row per node in `nodes` order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Topology {
    pub nodes: Vec<Node>,
    pub cpus: Vec<Cpu>,
    pub llcs: Vec<Llc>,
    /// `distances[i][j]`: SLIT distance from `nodes[i]` to `nodes[j]`
    /// (positions in `nodes`, not ids); 10 means local.
    pub distances: Vec<Vec<u32>>,
}

/// Why a topology could not be read or is inconsistent.
#[derive(Debug, thiserror::Error)]
pub enum TopologyError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {msg}")]
    Parse { path: PathBuf, msg: String },
    #[error("invalid topology: {0}")]
    Invalid(String),
}

fn read(path: &Path) -> Result<String, TopologyError> {
    fs::read_to_string(path).map_err(|source| TopologyError::Io {
        path: path.to_path_buf(),
        source,
    })
}

fn read_opt(path: &Path) -> Option<String> {
    fs::read_to_string(path).ok()
}

fn parse_list(path: &Path, text: &str) -> Result<Vec<u32>, TopologyError> {
    cpulist::parse(text).map_err(|e| TopologyError::Parse {
        path: path.to_path_buf(),
        msg: e.to_string(),
    })
}

fn parse_num<T: std::str::FromStr>(path: &Path, text: &str) -> Result<T, TopologyError> {
    text.trim().parse().map_err(|_| TopologyError::Parse {
        path: path.to_path_buf(),
        msg: format!("expected a number, found {:?}", text.trim()),
    })
}

/// Parse a size such as sysfs writes a cache size (`32768K`, `2M`) or
/// `512` (bytes): [`crate::size::parse`], the one size parser.
pub fn parse_size(text: &str) -> Option<u64> {
    crate::size::parse(text, crate::size::Bare::Bytes).ok()
}

/// Ids of the `prefix<N>` directories under `dir`, sorted.
fn numbered_dirs(dir: &Path, prefix: &str) -> Result<Vec<u32>, TopologyError> {
    let entries = fs::read_dir(dir).map_err(|source| TopologyError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut ids: Vec<u32> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            name.strip_prefix(prefix)?.parse().ok()
        })
        .collect();
    ids.sort_unstable();
    Ok(ids)
}

/// `Node N MemTotal:  123 kB` from a node's meminfo, in bytes.
fn node_meminfo_field(text: &str, field: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let rest = l
            .split_once(':')
            .filter(|(k, _)| k.trim_end().ends_with(field))?
            .1;
        let kb: u64 = rest.split_whitespace().next()?.parse().ok()?;
        Some(kb * 1024)
    })
}

/// The online CPUs under `cpu_dir` (its `online` list, else its `cpu<N>`
/// directories); none is an error.
fn online_cpus(cpu_dir: &Path) -> Result<Vec<u32>, TopologyError> {
    let online_path = cpu_dir.join("online");
    let online = match read_opt(&online_path) {
        Some(t) => parse_list(&online_path, &t)?,
        None => numbered_dirs(cpu_dir, "cpu")?,
    };
    if online.is_empty() {
        return Err(TopologyError::Invalid(format!(
            "no online CPUs under {}",
            cpu_dir.display()
        )));
    }
    Ok(online)
}

/// The nodes under `node_dir` and their distance rows. A kernel without
/// CONFIG_NUMA has no node directory: one node.
fn sysfs_nodes(
    node_dir: &Path,
    online: &[u32],
) -> Result<(Vec<Node>, Vec<Vec<u32>>), TopologyError> {
    let mut nodes = Vec::new();
    let mut distances = Vec::new();
    let node_ids = if node_dir.is_dir() {
        numbered_dirs(node_dir, "node")?
    } else {
        Vec::new()
    };
    if node_ids.is_empty() {
        nodes.push(Node {
            id: 0,
            cpus: online.to_vec(),
            memory_bytes: 0,
        });
        distances.push(vec![10]);
    } else {
        for &id in &node_ids {
            let (node, row) = sysfs_node(node_dir, id, online, node_ids.len())?;
            nodes.push(node);
            distances.push(row);
        }
    }
    Ok((nodes, distances))
}

/// Node `id` under `node_dir` (its online CPUs, its MemTotal) and its row
/// of `nnodes` distances.
fn sysfs_node(
    node_dir: &Path,
    id: u32,
    online: &[u32],
    nnodes: usize,
) -> Result<(Node, Vec<u32>), TopologyError> {
    let d = node_dir.join(format!("node{id}"));
    let cl = d.join("cpulist");
    let cpus: Vec<u32> = parse_list(&cl, &read(&cl)?)?
        .into_iter()
        .filter(|c| online.binary_search(c).is_ok())
        .collect();
    let mi = d.join("meminfo");
    let memory_bytes = read_opt(&mi)
        .and_then(|t| node_meminfo_field(&t, "MemTotal"))
        .unwrap_or(0);
    let dp = d.join("distance");
    let row: Vec<u32> = read(&dp)?
        .split_whitespace()
        .map(|t| parse_num(&dp, t))
        .collect::<Result<_, _>>()?;
    if row.len() != nnodes {
        return Err(TopologyError::Parse {
            path: dp,
            msg: format!("{} distances for {} nodes", row.len(), nnodes),
        });
    }
    Ok((
        Node {
            id,
            cpus,
            memory_bytes,
        },
        row,
    ))
}

/// A topology id read from `path` (`physical_package_id`, `core_id`):
/// `default` when the file is missing, negative ids as 0.
fn topology_id(path: &Path, default: i64) -> Result<u32, TopologyError> {
    Ok(read_opt(path)
        .map(|s| parse_num::<i64>(path, &s))
        .transpose()?
        .unwrap_or(default)
        .max(0) as u32)
}

/// The last-level cache of a CPU from its `cache` directory: the
/// highest-level data or unified cache, as (level, size, online CPUs
/// sharing it); `id` alone shares it when `shared_cpu_list` is missing.
fn last_level_cache(
    cache_dir: &Path,
    id: u32,
    online: &[u32],
) -> Result<Option<(u8, u64, Vec<u32>)>, TopologyError> {
    let mut best: Option<(u8, u64, Vec<u32>)> = None;
    if let Ok(indices) = numbered_dirs(cache_dir, "index") {
        for i in indices {
            let c = cache_dir.join(format!("index{i}"));
            let ty = read_opt(&c.join("type")).unwrap_or_default();
            if ty.trim() == "Instruction" {
                continue;
            }
            let Some(level) = read_opt(&c.join("level")).and_then(|s| s.trim().parse::<u8>().ok())
            else {
                continue;
            };
            let size = read_opt(&c.join("size"))
                .and_then(|s| parse_size(&s))
                .unwrap_or(0);
            let scl = c.join("shared_cpu_list");
            let shared = match read_opt(&scl) {
                Some(s) => parse_list(&scl, &s)?,
                None => vec![id],
            };
            let shared: Vec<u32> = shared
                .into_iter()
                .filter(|c| online.binary_search(c).is_ok())
                .collect();
            if best.as_ref().is_none_or(|b| level > b.0) {
                best = Some((level, size, shared));
            }
        }
    }
    Ok(best)
}

/// What [`Topology::from_sysfs`] gathers CPU by CPU: the machine-wide core
/// indices and the LLCs found so far.
struct CpuReader<'a> {
    cpu_dir: &'a Path,
    online: &'a [u32],
    nodes: &'a [Node],
    core_index: BTreeMap<(u32, u32, u32), u32>,
    llc_by_cpus: BTreeMap<Vec<u32>, u32>,
    llcs: Vec<Llc>,
}

impl CpuReader<'_> {
    /// Online CPU `id`: its node, package, core and last-level cache.
    fn cpu(&mut self, id: u32) -> Result<Cpu, TopologyError> {
        let d = self.cpu_dir.join(format!("cpu{id}"));
        let node = self
            .nodes
            .iter()
            .find(|n| n.cpus.contains(&id))
            .map(|n| n.id)
            .ok_or_else(|| TopologyError::Invalid(format!("CPU {id} is online but on no node")))?;
        let t = d.join("topology");
        let package = topology_id(&t.join("physical_package_id"), 0)?;
        let core = self.core(&t, id, package)?;
        let llc = last_level_cache(&d.join("cache"), id, self.online)?
            .map(|(level, size, shared)| self.llc(level, size, shared));
        Ok(Cpu {
            id,
            node,
            package,
            core,
            llc,
        })
    }

    /// The machine-wide core index of CPU `id` of `package`, from its
    /// `topology` directory `t`.
    fn core(&mut self, t: &Path, id: u32, package: u32) -> Result<u32, TopologyError> {
        let core_id = topology_id(&t.join("core_id"), id as i64)?;
        // Siblings identify the core uniquely even where core_id repeats
        // across dies: key on (package, core_id, lowest sibling).
        let sib_path = t.join("thread_siblings_list");
        let siblings = match read_opt(&sib_path) {
            Some(s) => parse_list(&sib_path, &s)?,
            None => vec![id],
        };
        let first_sibling = siblings
            .iter()
            .copied()
            .find(|s| self.online.binary_search(s).is_ok())
            .unwrap_or(id);
        let next = self.core_index.len() as u32;
        Ok(*self
            .core_index
            .entry((package, core_id, first_sibling))
            .or_insert(next))
    }

    /// The index in `llcs` of the cache shared by `shared`, added if new.
    fn llc(&mut self, level: u8, size: u64, shared: Vec<u32>) -> u32 {
        let next = self.llcs.len() as u32;
        let llcs = &mut self.llcs;
        *self.llc_by_cpus.entry(shared.clone()).or_insert_with(|| {
            llcs.push(Llc {
                id: next,
                level,
                size_bytes: size,
                cpus: shared,
            });
            next
        })
    }
}

impl Topology {
    /// Read the topology of the machine whose sysfs is mounted at `root`
    /// (normally `/sys`; tests pass fixture trees).
    pub fn from_sysfs(root: &Path) -> Result<Topology, TopologyError> {
        let cpu_dir = root.join("devices/system/cpu");
        let node_dir = root.join("devices/system/node");
        let online = online_cpus(&cpu_dir)?;
        let (nodes, distances) = sysfs_nodes(&node_dir, &online)?;

        // CPUs, cores and LLCs.
        let mut reader = CpuReader {
            cpu_dir: &cpu_dir,
            online: &online,
            nodes: &nodes,
            core_index: BTreeMap::new(),
            llc_by_cpus: BTreeMap::new(),
            llcs: Vec::new(),
        };
        let cpus = online
            .iter()
            .map(|&id| reader.cpu(id))
            .collect::<Result<Vec<_>, _>>()?;
        let llcs = reader.llcs;
        let topo = Topology {
            nodes,
            cpus,
            llcs,
            distances,
        };
        topo.validate()?;
        Ok(topo)
    }

    /// A regular machine: `nodes` nodes of `cores_per_node` cores with
    /// `threads_per_core` hardware threads, `llcs_per_node` LLCs per node,
    /// `memory_per_node` bytes, and the given distances (or 10 local / 20
    /// remote). CPU numbering is Linux's usual on x86: first threads of all
    /// cores, then the second threads (cpu i and i + ncores are siblings).
    pub fn regular(
        nodes: u32,
        cores_per_node: u32,
        threads_per_core: u32,
        llcs_per_node: u32,
        llc_bytes: u64,
        memory_per_node: u64,
        distances: Option<Vec<Vec<u32>>>,
    ) -> Result<Topology, TopologyError> {
        if nodes == 0 || cores_per_node == 0 || threads_per_core == 0 || llcs_per_node == 0 {
            return Err(TopologyError::Invalid(
                "nodes, cores per node, threads per core and LLCs per node must be at least 1"
                    .into(),
            ));
        }
        if !cores_per_node.is_multiple_of(llcs_per_node) {
            return Err(TopologyError::Invalid(format!(
                "{cores_per_node} cores per node do not split evenly into {llcs_per_node} LLCs"
            )));
        }
        let ncores = nodes * cores_per_node;
        let cores_per_llc = cores_per_node / llcs_per_node;
        let mut cpus = Vec::new();
        let mut node_cpus = vec![Vec::new(); nodes as usize];
        let mut llc_cpus = vec![Vec::new(); (nodes * llcs_per_node) as usize];
        for t in 0..threads_per_core {
            for core in 0..ncores {
                let id = t * ncores + core;
                let node = core / cores_per_node;
                let llc = core / cores_per_llc;
                node_cpus[node as usize].push(id);
                llc_cpus[llc as usize].push(id);
                cpus.push(Cpu {
                    id,
                    node,
                    package: node,
                    core,
                    llc: Some(llc),
                });
            }
        }
        cpus.sort_by_key(|c| c.id);
        let distances = distances.unwrap_or_else(|| {
            (0..nodes)
                .map(|i| (0..nodes).map(|j| if i == j { 10 } else { 20 }).collect())
                .collect()
        });
        let topo = Topology {
            nodes: node_cpus
                .into_iter()
                .enumerate()
                .map(|(i, mut c)| {
                    c.sort_unstable();
                    Node {
                        id: i as u32,
                        cpus: c,
                        memory_bytes: memory_per_node,
                    }
                })
                .collect(),
            cpus,
            llcs: llc_cpus
                .into_iter()
                .enumerate()
                .map(|(i, mut c)| {
                    c.sort_unstable();
                    Llc {
                        id: i as u32,
                        level: 3,
                        size_bytes: llc_bytes,
                        cpus: c,
                    }
                })
                .collect(),
            distances,
        };
        topo.validate()?;
        Ok(topo)
    }

    /// Check the structural invariants.
    pub fn validate(&self) -> Result<(), TopologyError> {
        let bad = |m: String| Err(TopologyError::Invalid(m));
        if self.nodes.is_empty() {
            return bad("no nodes".into());
        }
        if self.cpus.is_empty() {
            return bad("no CPUs".into());
        }
        if !self.nodes.windows(2).all(|w| w[0].id < w[1].id) {
            return bad("node ids must be unique and sorted".into());
        }
        if !self.cpus.windows(2).all(|w| w[0].id < w[1].id) {
            return bad("CPU ids must be unique and sorted".into());
        }
        let n = self.nodes.len();
        if self.distances.len() != n || self.distances.iter().any(|r| r.len() != n) {
            return bad(format!("distance matrix must be {n}x{n}"));
        }
        for c in &self.cpus {
            let Some(node) = self.nodes.iter().find(|x| x.id == c.node) else {
                return bad(format!("CPU {} is on unknown node {}", c.id, c.node));
            };
            if !node.cpus.contains(&c.id) {
                return bad(format!("node {} does not list CPU {}", node.id, c.id));
            }
            if let Some(l) = c.llc {
                if l as usize >= self.llcs.len() {
                    return bad(format!("CPU {} has unknown LLC {l}", c.id));
                }
            }
        }
        let listed: usize = self.nodes.iter().map(|n| n.cpus.len()).sum();
        if listed != self.cpus.len() {
            return bad("nodes list CPUs that are not in the CPU list".into());
        }
        Ok(())
    }

    /// Position of node `id` in `nodes` (the index used by `distances` and by
    /// per-node vectors in run records).
    pub fn node_index(&self, id: u32) -> Option<usize> {
        self.nodes.iter().position(|n| n.id == id)
    }

    pub fn node_ids(&self) -> Vec<u32> {
        self.nodes.iter().map(|n| n.id).collect()
    }

    pub fn cpu(&self, id: u32) -> Option<&Cpu> {
        self.cpus
            .binary_search_by_key(&id, |c| c.id)
            .ok()
            .map(|i| &self.cpus[i])
    }

    pub fn node_of_cpu(&self, cpu: u32) -> Option<u32> {
        self.cpu(cpu).map(|c| c.node)
    }

    /// Distance between two node ids.
    pub fn distance(&self, a: u32, b: u32) -> Option<u32> {
        Some(self.distances[self.node_index(a)?][self.node_index(b)?])
    }

    /// Nodes that have CPUs.
    pub fn cpu_nodes(&self) -> impl Iterator<Item = &Node> {
        self.nodes.iter().filter(|n| !n.cpus.is_empty())
    }

    /// Nodes with memory and no CPUs.
    pub fn memory_only_nodes(&self) -> Vec<u32> {
        self.nodes
            .iter()
            .filter(|n| n.cpus.is_empty())
            .map(|n| n.id)
            .collect()
    }

    pub fn core_count(&self) -> usize {
        let mut cores: Vec<u32> = self.cpus.iter().map(|c| c.core).collect();
        cores.sort_unstable();
        cores.dedup();
        cores.len()
    }

    /// CPUs of each core, cores in order of their first CPU.
    pub fn cores(&self) -> Vec<Vec<u32>> {
        let mut by_core: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for c in &self.cpus {
            by_core.entry(c.core).or_default().push(c.id);
        }
        let mut v: Vec<Vec<u32>> = by_core.into_values().collect();
        v.sort_by_key(|c| c[0]);
        v
    }

    /// How CPU `b` relates to CPU `a`: the same CPU, an SMT sibling, a
    /// CPU sharing the last-level cache, one on the same node, or one on
    /// another node (`None` if either is unknown).
    pub fn relation(&self, a: u32, b: u32) -> Option<Relation> {
        let (x, y) = (self.cpu(a)?, self.cpu(b)?);
        Some(if a == b {
            Relation::SameCpu
        } else if x.core == y.core {
            Relation::SmtSibling
        } else if x.llc.is_some() && x.llc == y.llc {
            Relation::SameLlc
        } else if x.node == y.node {
            Relation::SameNode
        } else {
            Relation::CrossNode
        })
    }

    /// SMT siblings of `cpu`, itself included.
    pub fn siblings(&self, cpu: u32) -> Vec<u32> {
        match self.cpu(cpu) {
            Some(c) => self
                .cpus
                .iter()
                .filter(|o| o.core == c.core)
                .map(|o| o.id)
                .collect(),
            None => Vec::new(),
        }
    }

    pub fn threads_per_core(&self) -> usize {
        self.cores().iter().map(|c| c.len()).max().unwrap_or(1)
    }

    pub fn smt(&self) -> bool {
        self.threads_per_core() > 1
    }

    /// LLC groups that hold CPUs of `node`.
    pub fn llcs_of_node(&self, node: u32) -> Vec<&Llc> {
        self.llcs
            .iter()
            .filter(|l| l.cpus.iter().any(|c| self.node_of_cpu(*c) == Some(node)))
            .collect()
    }

    /// Largest LLC size in bytes (0 when unknown).
    pub fn max_llc_bytes(&self) -> u64 {
        self.llcs.iter().map(|l| l.size_bytes).max().unwrap_or(0)
    }

    pub fn total_memory_bytes(&self) -> u64 {
        self.nodes.iter().map(|n| n.memory_bytes).sum()
    }

    /// One-line summary, e.g. `2 nodes, 8 CPUs (4 cores x 2 threads), 2 LLCs`.
    pub fn summary(&self) -> String {
        let mo = self.memory_only_nodes();
        let mut s = format!(
            "{} node{}, {} CPUs ({} cores x {} thread{}), {} LLC{}",
            self.nodes.len(),
            if self.nodes.len() == 1 { "" } else { "s" },
            self.cpus.len(),
            self.core_count(),
            self.threads_per_core(),
            if self.threads_per_core() == 1 {
                ""
            } else {
                "s"
            },
            self.llcs.len(),
            if self.llcs.len() == 1 { "" } else { "s" },
        );
        if !mo.is_empty() {
            let _ = write!(s, ", memory-only node(s) {}", cpulist::format(&mo));
        }
        s
    }

    /// The human-readable description printed by `numalab topology`.
    pub fn render_text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "{}", self.summary());
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "{:>4}  {:<20} {:>5} {:>5} {:>11}",
            "node", "cpus", "cores", "llcs", "memory"
        );
        for n in &self.nodes {
            let cores: std::collections::BTreeSet<u32> = n
                .cpus
                .iter()
                .filter_map(|c| self.cpu(*c).map(|c| c.core))
                .collect();
            let cpus = if n.cpus.is_empty() {
                "(memory only)".to_string()
            } else {
                cpulist::format(&n.cpus)
            };
            let _ = writeln!(
                s,
                "{:>4}  {:<20} {:>5} {:>5} {:>11}",
                n.id,
                cpus,
                cores.len(),
                self.llcs_of_node(n.id).len(),
                human_bytes(n.memory_bytes)
            );
        }
        let _ = writeln!(s);
        let _ = writeln!(s, "node distances:");
        let _ = write!(s, "{:>5}", "");
        for n in &self.nodes {
            let _ = write!(s, "{:>5}", n.id);
        }
        let _ = writeln!(s);
        for (i, n) in self.nodes.iter().enumerate() {
            let _ = write!(s, "{:>5}", n.id);
            for d in &self.distances[i] {
                let _ = write!(s, "{d:>5}");
            }
            let _ = writeln!(s);
        }
        if !self.llcs.is_empty() {
            let _ = writeln!(s);
            let _ = writeln!(s, "last-level caches:");
            for l in &self.llcs {
                let node = l.cpus.first().and_then(|c| self.node_of_cpu(*c));
                let _ = writeln!(
                    s,
                    "  L{} {:>9}  node {:<3} cpus {}",
                    l.level,
                    human_bytes(l.size_bytes),
                    node.map(|n| n.to_string()).unwrap_or_else(|| "?".into()),
                    cpulist::format(&l.cpus)
                );
            }
        }
        if self.smt() {
            let _ = writeln!(s);
            let _ = writeln!(s, "SMT siblings:");
            for core in self.cores() {
                if core.len() > 1 {
                    let _ = writeln!(s, "  {}", cpulist::format(&core));
                }
            }
        }
        s
    }
}

/// `1.5 GiB`-style sizes for tables.
pub fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("32768K"), Some(32 << 20));
        assert_eq!(parse_size("2M"), Some(2 << 20));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("x"), None);
    }

    #[test]
    fn regular_machine_is_consistent() {
        let t = Topology::regular(2, 4, 2, 2, 8 << 20, 1 << 30, None).unwrap();
        assert_eq!(t.cpus.len(), 16);
        assert_eq!(t.core_count(), 8);
        assert_eq!(t.siblings(0), vec![0, 8]);
        assert_eq!(t.node_of_cpu(9), Some(0));
        assert_eq!(t.node_of_cpu(12), Some(1));
        assert_eq!(t.llcs.len(), 4);
        assert_eq!(t.llcs_of_node(1).len(), 2);
        assert!(Topology::regular(1, 3, 1, 2, 0, 0, None).is_err());
    }
}
