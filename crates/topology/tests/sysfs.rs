//! Topology parsing on fixture sysfs trees (see fixtures/make_fixtures.py).

use numalab_topology::{Topology, TopologyError};
use std::path::PathBuf;

fn fixture(name: &str) -> Topology {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    Topology::from_sysfs(&root).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn json_round_trip(t: &Topology) {
    let s = serde_json::to_string(t).unwrap();
    let back: Topology = serde_json::from_str(&s).unwrap();
    assert_eq!(&back, t);
}

#[test]
fn one_node_vm() {
    let t = fixture("vm-1node");
    assert_eq!(t.node_ids(), vec![0]);
    assert_eq!(t.nodes[0].cpus, vec![0, 1]);
    assert_eq!(t.distances, vec![vec![10]]);
    assert!(
        t.nodes[0].memory_bytes > 1 << 30,
        "node memory from meminfo"
    );
    assert!(!t.smt());
    assert_eq!(t.core_count(), 2);
    assert_eq!(t.llcs.len(), 1, "both CPUs share one L3");
    assert_eq!(t.llcs[0].level, 3);
    assert_eq!(t.llcs[0].size_bytes, 32 << 20);
    assert!(t.memory_only_nodes().is_empty());
    json_round_trip(&t);
}

#[test]
fn azusa_four_nodes() {
    let t = fixture("azusa-4node-16cpu");
    assert_eq!(t.node_ids(), vec![0, 1, 2, 3]);
    for n in &t.nodes {
        assert_eq!(n.cpus.len(), 4);
        assert_eq!(n.memory_bytes, 4 << 30);
    }
    assert_eq!(t.node_of_cpu(13), Some(3));
    assert_eq!(t.distance(0, 0), Some(10));
    assert_eq!(t.distance(1, 3), Some(20));
    assert_eq!(t.core_count(), 16);
    assert_eq!(t.llcs.len(), 16, "Itanium L3 is private to each CPU");
    let text = t.render_text();
    assert!(
        text.starts_with("4 nodes, 16 CPUs (16 cores x 1 thread), 16 LLCs"),
        "{text}"
    );
    json_round_trip(&t);
}

#[test]
fn two_socket_smt_with_several_llcs() {
    let t = fixture("2socket-smt-4llc");
    assert_eq!(t.cpus.len(), 32);
    assert_eq!(t.core_count(), 16);
    assert!(t.smt());
    assert_eq!(t.threads_per_core(), 2);
    assert_eq!(t.siblings(3), vec![3, 19]);
    assert_eq!(t.siblings(27), vec![11, 27]);
    assert_eq!(t.node_of_cpu(19), Some(0));
    assert_eq!(t.node_of_cpu(24), Some(1));
    assert_eq!(t.llcs.len(), 4);
    for node in [0, 1] {
        let l = t.llcs_of_node(node);
        assert_eq!(l.len(), 2, "two LLCs on node {node}");
        assert!(l.iter().all(|l| l.cpus.len() == 8));
    }
    // cores are machine-wide: core ids repeat across sockets in sysfs
    assert_ne!(t.cpu(0).unwrap().core, t.cpu(8).unwrap().core);
    assert_eq!(t.cpu(0).unwrap().package, 0);
    assert_eq!(t.cpu(8).unwrap().package, 1);
    assert_eq!(t.distance(0, 1), Some(21));
    assert!(t.render_text().contains("SMT siblings"));
    json_round_trip(&t);
}

#[test]
fn memory_only_node_with_sparse_ids() {
    let t = fixture("memory-only-node");
    assert_eq!(t.node_ids(), vec![0, 1, 3]);
    assert_eq!(t.memory_only_nodes(), vec![3]);
    assert_eq!(t.cpu_nodes().count(), 2);
    assert_eq!(t.node_index(3), Some(2));
    assert_eq!(t.distance(3, 0), Some(30));
    assert_eq!(t.distance(1, 0), Some(20));
    assert_eq!(t.nodes[2].memory_bytes, 32 << 30);
    assert!(t.render_text().contains("(memory only)"));
    json_round_trip(&t);
}

#[test]
fn broken_trees_are_errors_not_panics() {
    let dir = tempfile::tempdir().unwrap();
    // no cpu directory at all
    assert!(matches!(
        Topology::from_sysfs(dir.path()),
        Err(TopologyError::Io { .. })
    ));
    // a distance row with the wrong length
    let root = dir.path();
    let w = |rel: &str, text: &str| {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    w("devices/system/cpu/online", "0-1\n");
    w("devices/system/node/node0/cpulist", "0-1\n");
    w("devices/system/node/node0/distance", "10 20\n");
    let e = Topology::from_sysfs(root).unwrap_err().to_string();
    assert!(e.contains("2 distances for 1 nodes"), "{e}");
    w("devices/system/node/node0/distance", "10\n");
    w("devices/system/node/node0/cpulist", "0-x\n");
    let e = Topology::from_sysfs(root).unwrap_err().to_string();
    assert!(e.contains("cpulist"), "{e}");
    w("devices/system/node/node0/cpulist", "0-1\n");
    let t = Topology::from_sysfs(root).unwrap();
    assert_eq!(t.cpus.len(), 2);
    assert!(t.llcs.is_empty(), "no cache directory: LLCs unknown");
}

#[test]
fn no_numa_kernel_is_one_node() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("devices/system/cpu");
    std::fs::create_dir_all(&p).unwrap();
    std::fs::write(p.join("online"), "0-3\n").unwrap();
    let t = Topology::from_sysfs(dir.path()).unwrap();
    assert_eq!(t.node_ids(), vec![0]);
    assert_eq!(t.nodes[0].cpus, vec![0, 1, 2, 3]);
}

#[test]
fn this_machine_parses() {
    // The host's own sysfs must always parse; what it contains varies.
    let t = Topology::from_sysfs(std::path::Path::new("/sys")).unwrap();
    assert!(!t.cpus.is_empty());
    t.validate().unwrap();
}

#[test]
fn placements_on_the_two_socket_smt_fixture() {
    use numalab_topology::placement::Placement;
    let t = fixture("2socket-smt-4llc");
    let nllc = t.llcs.len();
    let llc_of = |c: u32| t.cpu(c).unwrap().llc.unwrap();
    let core_of = |c: u32| t.cpu(c).unwrap().core;
    // spread: one CPU in each LLC, each on its own core, both nodes used.
    let s = Placement::Spread.cpus(&t, nllc).unwrap().unwrap();
    let mut llcs: Vec<u32> = s.iter().map(|&c| llc_of(c)).collect();
    llcs.sort_unstable();
    llcs.dedup();
    assert_eq!(llcs.len(), nllc, "{s:?}");
    let nodes: std::collections::BTreeSet<u32> =
        s.iter().map(|&c| t.node_of_cpu(c).unwrap()).collect();
    assert_eq!(nodes.len(), 2, "{s:?}");
    // packed: the cores of one LLC first.
    let per_llc = t.cores().len() / nllc;
    let p = Placement::Packed.cpus(&t, per_llc).unwrap().unwrap();
    assert!(p.iter().all(|&c| llc_of(c) == llc_of(p[0])), "{p:?}");
    let mut cores: Vec<u32> = p.iter().map(|&c| core_of(c)).collect();
    cores.dedup();
    assert_eq!(cores.len(), per_llc);
    // packed-smt: whole cores, siblings together.
    let q = Placement::PackedSmt.cpus(&t, 4).unwrap().unwrap();
    let mut qc: Vec<u32> = q.iter().map(|&c| core_of(c)).collect();
    qc.sort_unstable();
    qc.dedup();
    assert_eq!(qc.len(), 2, "{q:?}");
    // the one-node VM has no SMT
    let vm = fixture("vm-1node");
    assert!(Placement::SpreadSmt.cpus(&vm, 2).is_err());
    assert_eq!(Placement::Packed.cpus(&vm, 2).unwrap().unwrap(), vec![0, 1]);
}
