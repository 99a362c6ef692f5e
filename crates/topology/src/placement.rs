//! CPU sets for placement experiments, derived from the topology.
//!
//! Seed 003 asks where six tasks should run on an AMD machine whose cores
//! share an L3 in groups of three (a CCX), and compares four `taskset`
//! lists: one core per cluster (`split`), pairs of SMT siblings spread
//! over clusters (`mix`), six cores packed into as few clusters as
//! possible (`same_ccd`) and three cores with both their threads in one
//! cluster (`same_ccx`). The lists were written by hand for that machine.
//! Here they are computed for any machine from its LLC groups, cores and
//! SMT siblings, so the same experiment runs anywhere:
//!
//! | placement | seed 003 | CPUs chosen |
//! |---|---|---|
//! | `spread` | `split` | one thread of a different core each time, LLC groups taken in turn (nodes alternating), so as few tasks as possible share an LLC |
//! | `spread-smt` | `mix` | whole cores (every SMT sibling), LLC groups taken in turn |
//! | `packed` | `same_ccd` | one thread of a different core each time, filling one LLC group before the next |
//! | `packed-smt` | `same_ccx` | whole cores, filling one LLC group before the next |
//! | `default` | (no taskset) | no affinity: the scheduler decides |
//!
//! On Zen 2 (three cores per L3, CPU i and i + 48 siblings) `packed` for
//! six CPUs gives `0-5` and `packed-smt` gives `0,1,2,48,49,50`, the
//! seed's lists; `spread` gives one core per L3 (`0,3,6,9,12,15`) where
//! the seed took one per pair of L3s. A set that the machine cannot give
//! (more CPUs than it has cores, SMT placements without SMT) is an error
//! that says so.

use crate::Topology;
use std::collections::BTreeMap;

/// Why a placement name or a placement's CPU set was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlacementError {
    /// A name that is none of the placements (nor seed 003's).
    #[error("unknown placement {0:?}: use default, spread (split), spread-smt (mix), packed (same_ccd) or packed-smt (same_ccx)")]
    Unknown(String),
    /// Zero CPUs asked.
    #[error("a placement needs at least one CPU")]
    NoCpus,
    /// An SMT placement on a machine with one thread per core.
    #[error("{} needs SMT siblings and this machine has one thread per core", .0.name())]
    NoSmt(Placement),
    /// One core per task, more tasks than cores.
    #[error("{} puts each task on its own core: {asked} CPUs asked, the machine has {cores} cores", .placement.name())]
    TooFewCores {
        placement: Placement,
        asked: usize,
        cores: usize,
    },
    /// More CPUs asked than the machine has.
    #[error("{asked} CPUs asked, the machine has {cpus}")]
    TooFewCpus { asked: usize, cpus: usize },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    Default,
    Spread,
    SpreadSmt,
    Packed,
    PackedSmt,
}

impl Placement {
    pub const ALL: [Placement; 5] = [
        Placement::Default,
        Placement::Spread,
        Placement::SpreadSmt,
        Placement::Packed,
        Placement::PackedSmt,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Placement::Default => "default",
            Placement::Spread => "spread",
            Placement::SpreadSmt => "spread-smt",
            Placement::Packed => "packed",
            Placement::PackedSmt => "packed-smt",
        }
    }

    /// A name, or seed 003's (`split`, `mix`, `same_ccd`, `same_ccx`).
    pub fn parse(s: &str) -> Result<Placement, PlacementError> {
        let p = match s {
            "default" => Placement::Default,
            "spread" | "split" => Placement::Spread,
            "spread-smt" | "mix" => Placement::SpreadSmt,
            "packed" | "same_ccd" | "same-ccd" => Placement::Packed,
            "packed-smt" | "same_ccx" | "same-ccx" => Placement::PackedSmt,
            _ => return Err(PlacementError::Unknown(s.to_string())),
        };
        Ok(p)
    }

    /// The `k` CPUs of this placement on `topo`, sorted; `None` for
    /// `default` (no affinity).
    pub fn cpus(self, topo: &Topology, k: usize) -> Result<Option<Vec<u32>>, PlacementError> {
        if k == 0 {
            return Err(PlacementError::NoCpus);
        }
        let per_node = llc_groups(topo);
        let ncores = topo.core_count();
        let ncpus = topo.cpus.len();
        let smt = matches!(self, Placement::SpreadSmt | Placement::PackedSmt);
        if smt && !topo.smt() {
            return Err(PlacementError::NoSmt(self));
        }
        match self {
            Placement::Default => return Ok(None),
            Placement::Spread | Placement::Packed if k > ncores => {
                return Err(PlacementError::TooFewCores {
                    placement: self,
                    asked: k,
                    cores: ncores,
                })
            }
            _ if k > ncpus => {
                return Err(PlacementError::TooFewCpus {
                    asked: k,
                    cpus: ncpus,
                })
            }
            _ => {}
        }
        // The order in which cores are taken.
        let spread_groups;
        let order: Vec<&Vec<u32>> = match self {
            Placement::Spread | Placement::SpreadSmt => {
                spread_groups = interleaved(&per_node);
                round_robin(&spread_groups)
            }
            _ => per_node.iter().flatten().flatten().collect(),
        };
        let mut out = Vec::with_capacity(k);
        for core in order {
            if out.len() == k {
                break;
            }
            if smt {
                for &c in core.iter().take(k - out.len()) {
                    out.push(c);
                }
            } else {
                out.push(core[0]);
            }
        }
        out.sort_unstable();
        Ok(Some(out))
    }
}

/// Cores (each its CPUs, sorted) per LLC group, per node: nodes in id
/// order, groups and cores in order of their first CPU. CPUs without a
/// known LLC are grouped by node.
fn llc_groups(topo: &Topology) -> Vec<Vec<Vec<Vec<u32>>>> {
    // (node, llc or none) -> core -> cpus
    let mut groups: BTreeMap<(u32, Option<u32>), BTreeMap<u32, Vec<u32>>> = BTreeMap::new();
    for c in &topo.cpus {
        groups
            .entry((c.node, c.llc))
            .or_default()
            .entry(c.core)
            .or_default()
            .push(c.id);
    }
    let mut per_node: BTreeMap<u32, Vec<Vec<Vec<u32>>>> = BTreeMap::new();
    for ((node, _), cores) in groups {
        let mut cores: Vec<Vec<u32>> = cores
            .into_values()
            .map(|mut v| {
                v.sort_unstable();
                v
            })
            .collect();
        cores.sort_by_key(|c| c[0]);
        per_node.entry(node).or_default().push(cores);
    }
    let mut out: Vec<Vec<Vec<Vec<u32>>>> = per_node.into_values().collect();
    for g in out.iter_mut() {
        g.sort_by_key(|cores| cores[0][0]);
    }
    out
}

/// The groups with the nodes interleaved: node 0's first group, node 1's
/// first, ..., node 0's second, ...
fn interleaved(per_node: &[Vec<Vec<Vec<u32>>>]) -> Vec<Vec<Vec<u32>>> {
    let depth = per_node.iter().map(Vec::len).max().unwrap_or(0);
    let mut out = Vec::new();
    for i in 0..depth {
        for n in per_node {
            if let Some(g) = n.get(i) {
                out.push(g.clone());
            }
        }
    }
    out
}

/// Cores taken one per group in turn.
fn round_robin(groups: &[Vec<Vec<u32>>]) -> Vec<&Vec<u32>> {
    let mut out = Vec::new();
    let depth = groups.iter().map(Vec::len).max().unwrap_or(0);
    for i in 0..depth {
        for g in groups {
            if let Some(c) = g.get(i) {
                out.push(c);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zen2() -> Topology {
        // EPYC 7642, NPS1: 48 cores x 2 threads, 16 L3s of 3 cores.
        Topology::regular(1, 48, 2, 16, 16 << 20, 256 << 30, None).unwrap()
    }

    fn list(p: Placement, t: &Topology, k: usize) -> String {
        crate::cpulist::format(&p.cpus(t, k).unwrap().unwrap())
    }

    #[test]
    fn seed_003_lists_on_zen2() {
        let t = zen2();
        assert_eq!(list(Placement::Packed, &t, 6), "0-5");
        assert_eq!(list(Placement::PackedSmt, &t, 6), "0-2,48-50");
        assert_eq!(list(Placement::Spread, &t, 6), "0,3,6,9,12,15");
        assert_eq!(list(Placement::SpreadSmt, &t, 6), "0,3,6,48,51,54");
        assert_eq!(Placement::parse("same_ccx").unwrap(), Placement::PackedSmt);
        assert_eq!(Placement::parse("split").unwrap(), Placement::Spread);
        assert_eq!(Placement::Default.cpus(&t, 6).unwrap(), None);
    }

    #[test]
    fn spread_alternates_nodes_and_llcs() {
        // 2 nodes x 4 cores x 2 threads, 2 LLCs per node.
        let t = Topology::regular(2, 4, 2, 2, 8 << 20, 1 << 30, None).unwrap();
        // LLCs: {0,1}, {2,3} on node 0; {4,5}, {6,7} on node 1 (cores).
        assert_eq!(list(Placement::Spread, &t, 4), "0,2,4,6");
        assert_eq!(list(Placement::Spread, &t, 2), "0,4");
        assert_eq!(list(Placement::Packed, &t, 4), "0-3");
        assert_eq!(list(Placement::PackedSmt, &t, 4), "0-1,8-9");
        assert_eq!(list(Placement::SpreadSmt, &t, 4), "0,4,8,12");
    }

    #[test]
    fn impossible_sets_are_errors() {
        let t = Topology::regular(1, 2, 1, 1, 8 << 20, 1 << 30, None).unwrap();
        let e = Placement::SpreadSmt.cpus(&t, 2).unwrap_err().to_string();
        assert!(e.contains("SMT"), "{e}");
        let e = Placement::Spread.cpus(&t, 3).unwrap_err().to_string();
        assert!(e.contains("2 cores"), "{e}");
        assert!(Placement::Packed.cpus(&t, 0).is_err());
        assert!(Placement::parse("sideways").is_err());
        assert_eq!(list(Placement::Spread, &t, 2), "0-1");
    }
}
