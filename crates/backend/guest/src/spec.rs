//! The guest topology as the user types it (`--nodes 2 --cpus-per-node 2
//! --mem-per-node 1G --distances "10,20;20,10" --memory-only-nodes 2`),
//! validated into a [`VmSpec`] that the QEMU command line and the tests'
//! expectations are both derived from.
//!
//! Every error is one line that starts with the flag at fault, so the CLI
//! can print it as is.

use numalab_topology::cpulist;
use std::fmt;

/// Most nodes a guest may have. QEMU allows 128 and Debian's kernel 1024;
/// 64 is far more than a TCG guest on a small host can boot.
pub const MAX_NODES: u32 = 64;
/// Most vCPUs in all. Above 255 the guest needs x2APIC and an IOMMU.
pub const MAX_VCPUS: u32 = 255;
/// Least memory per node. Linux ignores NUMA nodes under 4 MiB outright,
/// and a node must hold its own page tables and per-node structures.
pub const MIN_NODE_BYTES: u64 = 16 << 20;

/// What the user typed, before validation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecInput {
    pub nodes: u32,
    pub cpus_per_node: u32,
    /// `512M`, `1G`, `2048K`.
    pub mem_per_node: String,
    /// `10,20;20,10`: rows separated by `;`, values by `,`.
    pub distances: Option<String>,
    /// Node ids without CPUs, in the kernel's list syntax (`2`, `2-3`).
    pub memory_only_nodes: Option<String>,
}

impl SpecInput {
    /// The default shape, `numalab vm`'s and a campaign's `[guest]`'s:
    /// two nodes of one CPU and 512 MiB each.
    pub const NODES: u32 = 2;
    pub const CPUS_PER_NODE: u32 = 1;
    pub const MEM_PER_NODE: &'static str = "512M";
}

/// One node of the guest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeSpec {
    pub id: u32,
    /// Guest CPU ids on this node (empty for a memory-only node).
    pub cpus: Vec<u32>,
    pub memory_bytes: u64,
}

/// A validated guest topology.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VmSpec {
    pub nodes: Vec<NodeSpec>,
    /// `distances[i][j]` between node ids `i` and `j` (ids are dense, 0..n).
    pub distances: Vec<Vec<u32>>,
    pub cpus_per_node: u32,
    /// The spec in flag form, with sizes and lists as typed; stored in
    /// guest run records as `backend.spec`.
    pub typed: String,
}

/// A spec error: the flag at fault and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError {
    pub flag: &'static str,
    pub msg: String,
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.flag, self.msg)
    }
}

impl std::error::Error for SpecError {}

fn err(flag: &'static str, msg: impl Into<String>) -> SpecError {
    SpecError {
        flag,
        msg: msg.into(),
    }
}

/// Parse a memory size: a whole number with a unit `K`, `M`, `G` or `T`
/// (binary multiples; `Ki`/`KiB`/`KB` spellings accepted). A bare number is
/// refused: QEMU reads it as MiB, most people as bytes. numalab's one size
/// parser ([`numalab_topology::size`]), so `--bytes` and `--mem-per-node`
/// refuse a size in the same words.
pub fn parse_mem_size(text: &str) -> Result<u64, SpecError> {
    numalab_topology::size::parse(text, numalab_topology::size::Bare::Refused)
        .map_err(|m| err("--mem-per-node", m.to_string()))
}

/// Parse `10,20;20,10` into rows. Only the syntax is checked here.
fn parse_matrix(text: &str) -> Result<Vec<Vec<u32>>, SpecError> {
    let f = "--distances";
    let trimmed = text.trim().trim_end_matches(';');
    if trimmed.is_empty() {
        return Err(err(f, "empty matrix (write e.g. \"10,20;20,10\")"));
    }
    trimmed
        .split(';')
        .enumerate()
        .map(|(i, row)| {
            row.split(',')
                .map(|v| {
                    let v = v.trim();
                    v.parse::<u32>().map_err(|_| {
                        err(
                            f,
                            format!("row {} ({}): {v:?} is not a number", i + 1, row.trim()),
                        )
                    })
                })
                .collect()
        })
        .collect()
}

impl VmSpec {
    pub fn parse(input: &SpecInput) -> Result<VmSpec, SpecError> {
        let n = input.nodes;
        if n == 0 {
            return Err(err("--nodes", "must be at least 1"));
        }
        if n > MAX_NODES {
            return Err(err("--nodes", format!("{n} is more than {MAX_NODES}")));
        }
        if input.cpus_per_node == 0 {
            return Err(err(
                "--cpus-per-node",
                "must be at least 1 (use --memory-only-nodes for nodes without CPUs)",
            ));
        }
        let mem = parse_mem_size(&input.mem_per_node)?;
        if mem == 0 {
            return Err(err("--mem-per-node", "must be positive (e.g. 512M or 1G)"));
        }
        if mem < MIN_NODE_BYTES {
            return Err(err(
                "--mem-per-node",
                format!(
                    "{} is less than the {} MiB a guest node needs",
                    input.mem_per_node.trim(),
                    MIN_NODE_BYTES >> 20
                ),
            ));
        }
        if mem % (1 << 20) != 0 {
            return Err(err(
                "--mem-per-node",
                format!("{} is not a whole number of MiB", input.mem_per_node.trim()),
            ));
        }

        let mem_only: Vec<u32> = match &input.memory_only_nodes {
            None => Vec::new(),
            Some(list) => {
                let ids =
                    cpulist::parse(list).map_err(|e| err("--memory-only-nodes", e.to_string()))?;
                if let Some(bad) = ids.iter().find(|&&id| id >= n) {
                    return Err(err(
                        "--memory-only-nodes",
                        format!(
                            "node {bad} does not exist (nodes are 0-{} with --nodes {n})",
                            n - 1
                        ),
                    ));
                }
                ids
            }
        };
        let cpu_nodes = n - mem_only.len() as u32;
        if cpu_nodes == 0 {
            return Err(err(
                "--memory-only-nodes",
                "every node would be memory-only; at least one node needs CPUs",
            ));
        }
        // Linux numbers the nodes that have CPUs first (it reads the SRAT's
        // processor entries before its memory entries), so a memory-only
        // node below a node with CPUs would come out under another id.
        if let Some(bad) = mem_only.iter().find(|&&id| id < cpu_nodes) {
            let want: Vec<u32> = (cpu_nodes..n).collect();
            return Err(err(
                "--memory-only-nodes",
                format!(
                    "node {bad} cannot be memory-only: Linux numbers nodes with CPUs first, so memory-only nodes must be the highest ids (here {})",
                    cpulist::format(&want)
                ),
            ));
        }
        let vcpus = cpu_nodes as u64 * input.cpus_per_node as u64;
        if vcpus > MAX_VCPUS as u64 {
            return Err(err(
                "--cpus-per-node",
                format!(
                    "{cpu_nodes} nodes x {} CPUs is {vcpus} vCPUs, more than {MAX_VCPUS}",
                    input.cpus_per_node
                ),
            ));
        }

        let distances = match &input.distances {
            None => (0..n)
                .map(|i| (0..n).map(|j| if i == j { 10 } else { 20 }).collect())
                .collect(),
            Some(text) => {
                let m = parse_matrix(text)?;
                validate_matrix(&m, n as usize, text)?;
                m
            }
        };

        let mut next_cpu = 0;
        let nodes = (0..n)
            .map(|id| {
                let cpus = if mem_only.contains(&id) {
                    Vec::new()
                } else {
                    let c: Vec<u32> = (next_cpu..next_cpu + input.cpus_per_node).collect();
                    next_cpu += input.cpus_per_node;
                    c
                };
                NodeSpec {
                    id,
                    cpus,
                    memory_bytes: mem,
                }
            })
            .collect();

        let mut typed = format!(
            "--nodes {n} --cpus-per-node {} --mem-per-node {}",
            input.cpus_per_node,
            input.mem_per_node.trim()
        );
        if let Some(d) = &input.distances {
            typed.push_str(&format!(" --distances \"{}\"", d.trim()));
        }
        if input.memory_only_nodes.is_some() {
            typed.push_str(&format!(
                " --memory-only-nodes {}",
                cpulist::format(&mem_only)
            ));
        }
        Ok(VmSpec {
            nodes,
            distances,
            cpus_per_node: input.cpus_per_node,
            typed,
        })
    }

    pub fn vcpus(&self) -> u32 {
        self.nodes.iter().map(|n| n.cpus.len() as u32).sum()
    }

    pub fn total_memory_bytes(&self) -> u64 {
        self.nodes.iter().map(|n| n.memory_bytes).sum()
    }

    /// Nodes that have CPUs, in id order; the i-th is QEMU socket i.
    pub fn cpu_nodes(&self) -> impl Iterator<Item = &NodeSpec> {
        self.nodes.iter().filter(|n| !n.cpus.is_empty())
    }

    pub fn memory_only_nodes(&self) -> Vec<u32> {
        self.nodes
            .iter()
            .filter(|n| n.cpus.is_empty())
            .map(|n| n.id)
            .collect()
    }

    /// e.g. `2 nodes x 2 CPUs, 512 MiB per node` (+ memory-only nodes).
    pub fn summary(&self) -> String {
        let mo = self.memory_only_nodes();
        let mut s = format!(
            "{} node{} ({} vCPU{}, {} CPU{} per node), {} per node",
            self.nodes.len(),
            if self.nodes.len() == 1 { "" } else { "s" },
            self.vcpus(),
            if self.vcpus() == 1 { "" } else { "s" },
            self.cpus_per_node,
            if self.cpus_per_node == 1 { "" } else { "s" },
            numalab_topology::human_bytes(self.nodes[0].memory_bytes)
        );
        if !mo.is_empty() {
            s.push_str(&format!(", memory-only node(s) {}", cpulist::format(&mo)));
        }
        s
    }
}

/// Square, 10 on the diagonal, symmetric, larger than 10 elsewhere, and
/// at most 255 (a SLIT entry is one byte).
fn validate_matrix(m: &[Vec<u32>], n: usize, text: &str) -> Result<(), SpecError> {
    let f = "--distances";
    let rows: Vec<&str> = text
        .trim()
        .trim_end_matches(';')
        .split(';')
        .map(str::trim)
        .collect();
    if m.len() != n {
        return Err(err(
            f,
            format!(
                "{} row{} for {n} node{} (need a {n}x{n} matrix, rows separated by ';')",
                m.len(),
                if m.len() == 1 { "" } else { "s" },
                if n == 1 { "" } else { "s" }
            ),
        ));
    }
    for (i, row) in m.iter().enumerate() {
        if row.len() != n {
            return Err(err(
                f,
                format!(
                    "row {} ({}) has {} value{} for {n} nodes",
                    i + 1,
                    rows[i],
                    row.len(),
                    if row.len() == 1 { "" } else { "s" }
                ),
            ));
        }
    }
    for (i, row) in m.iter().enumerate() {
        for (j, &d) in row.iter().enumerate() {
            let at = format!("row {} ({})", i + 1, rows[i]);
            if i == j && d != 10 {
                return Err(err(
                    f,
                    format!("{at}: d({i},{i})={d} but a node's distance to itself must be 10"),
                ));
            }
            if i != j && d <= 10 {
                return Err(err(
                    f,
                    format!("{at}: d({i},{j})={d} must be larger than 10 (10 means local)"),
                ));
            }
            if d > 255 {
                return Err(err(f, format!("{at}: d({i},{j})={d} is more than 255")));
            }
            if j < i && d != m[j][i] {
                return Err(err(
                    f,
                    format!(
                        "{at} makes the matrix asymmetric: d({i},{j})={d} but d({j},{i})={}",
                        m[j][i]
                    ),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(nodes: u32, cpus: u32, mem: &str) -> SpecInput {
        SpecInput {
            nodes,
            cpus_per_node: cpus,
            mem_per_node: mem.into(),
            distances: None,
            memory_only_nodes: None,
        }
    }

    fn parse_err(i: &SpecInput) -> String {
        VmSpec::parse(i).unwrap_err().to_string()
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_mem_size("512M"), Ok(512 << 20));
        assert_eq!(parse_mem_size("1G"), Ok(1 << 30));
        assert_eq!(parse_mem_size("2048K"), Ok(2 << 20));
        assert_eq!(parse_mem_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_mem_size("64mb"), Ok(64 << 20));
        assert!(parse_mem_size("512").unwrap_err().msg.contains("no unit"));
        assert!(parse_mem_size("M").is_err());
        assert_eq!(parse_mem_size("1.5G"), Ok(1536 << 20));
        assert!(parse_mem_size("99999999999999999999G").is_err());
        assert!(parse_mem_size("18000000000000T")
            .unwrap_err()
            .msg
            .contains("too large"));
    }

    #[test]
    fn two_nodes_default_distances() {
        let s = VmSpec::parse(&input(2, 2, "512M")).unwrap();
        assert_eq!(s.vcpus(), 4);
        assert_eq!(s.nodes[0].cpus, vec![0, 1]);
        assert_eq!(s.nodes[1].cpus, vec![2, 3]);
        assert_eq!(s.distances, vec![vec![10, 20], vec![20, 10]]);
        assert_eq!(s.total_memory_bytes(), 1 << 30);
        assert_eq!(s.typed, "--nodes 2 --cpus-per-node 2 --mem-per-node 512M");
    }

    #[test]
    fn memory_only_and_asymmetric_distances() {
        let mut i = input(3, 1, "256M");
        i.distances = Some("10,20,30;20,10,25;30,25,10".into());
        i.memory_only_nodes = Some("2".into());
        let s = VmSpec::parse(&i).unwrap();
        assert_eq!(s.nodes[0].cpus, vec![0]);
        assert_eq!(s.nodes[1].cpus, vec![1]);
        assert!(s.nodes[2].cpus.is_empty());
        assert_eq!(s.memory_only_nodes(), vec![2]);
        assert_eq!(s.vcpus(), 2);
        assert_eq!(s.distances[2][1], 25);
        assert!(s
            .typed
            .ends_with("--distances \"10,20,30;20,10,25;30,25,10\" --memory-only-nodes 2"));
    }

    #[test]
    fn bad_specs_are_one_line_and_name_the_flag() {
        assert_eq!(parse_err(&input(0, 2, "1G")), "--nodes: must be at least 1");
        assert!(parse_err(&input(2, 0, "1G")).starts_with("--cpus-per-node: must be at least 1"));
        assert_eq!(
            parse_err(&input(2, 2, "0")),
            "--mem-per-node: \"0\" has no unit (write e.g. 0M or 0G)"
        );
        assert_eq!(
            parse_err(&input(2, 2, "0M")),
            "--mem-per-node: must be positive (e.g. 512M or 1G)"
        );
        assert!(parse_err(&input(2, 2, "8M")).contains("less than the 16 MiB"));
        assert!(parse_err(&input(2, 2, "16400K")).contains("whole number of MiB"));
        assert!(parse_err(&input(65, 1, "1G")).starts_with("--nodes: 65"));
        assert!(parse_err(&input(2, 200, "1G")).contains("400 vCPUs"));

        let with = |d: &str| {
            let mut i = input(2, 1, "512M");
            i.distances = Some(d.into());
            parse_err(&i)
        };
        assert_eq!(
            with("10,20;30,10"),
            "--distances: row 2 (30,10) makes the matrix asymmetric: d(1,0)=30 but d(0,1)=20"
        );
        assert_eq!(
            with("11,20;20,10"),
            "--distances: row 1 (11,20): d(0,0)=11 but a node's distance to itself must be 10"
        );
        assert_eq!(
            with("10,10;10,10"),
            "--distances: row 1 (10,10): d(0,1)=10 must be larger than 10 (10 means local)"
        );
        assert_eq!(
            with("10,20"),
            "--distances: 1 row for 2 nodes (need a 2x2 matrix, rows separated by ';')"
        );
        assert_eq!(
            with("10,20;20"),
            "--distances: row 2 (20) has 1 value for 2 nodes"
        );
        assert_eq!(
            with("10,x;20,10"),
            "--distances: row 1 (10,x): \"x\" is not a number"
        );
        assert!(with("10,300;300,10").contains("more than 255"));
        assert!(with("").contains("empty matrix"));
        for e in [with("10,20;30,10"), with("10,x;20,10")] {
            assert!(!e.contains('\n'));
        }

        let mo = |list: &str, nodes: u32| {
            let mut i = input(nodes, 1, "512M");
            i.memory_only_nodes = Some(list.into());
            parse_err(&i)
        };
        assert!(mo("0-1", 2).contains("at least one node needs CPUs"));
        assert!(mo("2", 2).contains("node 2 does not exist"));
        assert!(mo("x", 2).starts_with("--memory-only-nodes:"));
        assert_eq!(
            mo("1", 3),
            "--memory-only-nodes: node 1 cannot be memory-only: Linux numbers nodes with CPUs first, so memory-only nodes must be the highest ids (here 2)"
        );
        assert!(mo("0", 4).contains("(here 3)"));
        assert!(VmSpec::parse(&{
            let mut i = input(4, 1, "64M");
            i.memory_only_nodes = Some("2-3".into());
            i
        })
        .is_ok());
    }

    #[test]
    fn trailing_semicolon_is_fine() {
        let mut i = input(2, 1, "512M");
        i.distances = Some(" 10, 15 ; 15, 10 ;".into());
        assert_eq!(VmSpec::parse(&i).unwrap().distances[0][1], 15);
    }
}
