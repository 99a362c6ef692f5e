//! Sizes chosen once per results directory: A/B across invocations and
//! backends.
//!
//! A benchmark's defaults scale with the machine (loops for a duration,
//! bytes within free memory), measured when an invocation starts, so two
//! invocations of the same benchmark with the same flags (`--label nb0`,
//! then `--label nb1`) would each measure and land in different cases
//! (270 loops against 293), and never meet in one `compare` table; nor
//! would `numalab run numa02` and `numalab sim numa02 --machine me.toml`
//! on this machine's calibrated file (1653 loops against the model's
//! 1632). So the cases an invocation resolved are kept in its results
//! directory (`.numalab/sizes.json`), keyed by the machine's topology
//! (nodes, CPUs, LLCs, distances) and the benchmark's flags, not by
//! backend or host name, and kept with each node's memory: a later
//! invocation with the same key into the same directory, on this
//! machine, a simulated one or another host of the same shape whose
//! nodes each hold within [`MEMORY_TOLERANCE`] of that memory, runs
//! exactly those cases, saying which invocation chose them; `--resize`
//! chooses afresh (and keeps the new sizes). The memory is compared, not
//! keyed: a guest's first node holds less than its others (the kernel's
//! own pages; 458 against 503 MiB in a 2 x 512 MiB guest), which its
//! calibrated file, one size for every node, cannot say. A
//! campaign pins its sizes per plan (`.campaign/plan.lock.json`), once
//! per machine shape in the same way.

use numalab_bench::{Case, Resolved};
use numalab_topology::MachineInfo;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const FILE: &str = ".numalab/sizes.json";

/// How far each node's memory may be from the one sizes were chosen on,
/// as a share of the larger: the defaults take at most half a node's
/// free memory, so work chosen on a node this much larger still fits.
pub const MEMORY_TOLERANCE: f64 = 0.2;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    cases: Vec<Case>,
    notes: Vec<String>,
    /// When the invocation that chose them started (RFC 3339).
    chosen_at: String,
    /// Where: the backend and the machine's name (`real on vm`).
    #[serde(default)]
    chosen_on: String,
    /// Each node's memory on that machine (bytes); empty in files
    /// written before it was kept, whose keys held it.
    #[serde(default)]
    memory: Vec<u64>,
}

/// The entries kept under one key: one per machine memory they were
/// chosen on (a file written before several were kept holds one).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
enum Kept {
    Many(Vec<Entry>),
    One(Entry),
}

impl Kept {
    fn into_vec(self) -> Vec<Entry> {
        match self {
            Kept::Many(v) => v,
            Kept::One(e) => vec![e],
        }
    }
}

/// The key of a benchmark with its flags on a machine: what must match
/// for sizes to be reused. The machine is its topology without the
/// nodes' memory (not its name, its backend or its free memory, which
/// changes between invocations; the memory is compared apart,
/// [`memory`]): the same work wherever the machine has this shape.
pub fn key(machine: &MachineInfo, flags: &str) -> String {
    let mut topo = machine.topology.clone();
    for n in &mut topo.nodes {
        n.memory_bytes = 0;
    }
    let topo = serde_json::to_string(&topo).unwrap_or_default();
    format!("{topo}|{flags}")
}

/// Each node's memory (bytes), as [`recall`] and [`remember`] compare it.
pub fn memory(machine: &MachineInfo) -> Vec<u64> {
    machine
        .topology
        .nodes
        .iter()
        .map(|n| n.memory_bytes)
        .collect()
}

/// Whether two machines have one shape as sizes are reused between them:
/// the same topology but for the nodes' memory, each within
/// [`MEMORY_TOLERANCE`] (a campaign's machines, as [`key`] and
/// [`recall`] do an invocation's).
pub fn same_shape(a: &MachineInfo, b: &MachineInfo) -> bool {
    key(a, "") == key(b, "") && close(&memory(a), &memory(b))
}

/// Whether every node of `a` holds within [`MEMORY_TOLERANCE`] of `b`'s.
fn close(a: &[u64], b: &[u64]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(&x, &y)| {
            let (x, y) = (x as f64, y as f64);
            (x - y).abs() <= MEMORY_TOLERANCE * x.max(y)
        })
}

fn path(results: &Path) -> PathBuf {
    results.join(FILE)
}

fn read(results: &Path) -> BTreeMap<String, Vec<Entry>> {
    std::fs::read_to_string(path(results))
        .ok()
        .and_then(|t| serde_json::from_str::<BTreeMap<String, Kept>>(&t).ok())
        .map(|m| m.into_iter().map(|(k, v)| (k, v.into_vec())).collect())
        .unwrap_or_default()
}

/// The cases an earlier invocation chose for `key` in `results` on a
/// machine whose nodes held about `memory` (within
/// [`MEMORY_TOLERANCE`]), with a note saying so.
pub fn recall(results: &Path, key: &str, memory: &[u64]) -> Option<Resolved> {
    let e = read(results)
        .remove(key)?
        .into_iter()
        .find(|e| close(&e.memory, memory))?;
    let mut notes = e.notes;
    let on = if e.chosen_on.is_empty() {
        String::new()
    } else {
        format!(" {}", e.chosen_on)
    };
    notes.push(format!(
        "sizes as chosen by the invocation of {}{on} into {}: the same work on every machine of this shape (--resize to choose afresh)",
        e.chosen_at,
        results.display()
    ));
    Some(Resolved {
        cases: e.cases,
        notes,
        warnings: Vec::new(),
    })
}

/// Keep `resolved` for `key` in `results`, chosen `on` a backend and
/// machine (`real on vm`) whose nodes hold `memory`, in place of sizes
/// kept for a machine of about that memory (atomically; called once the
/// invocation has written a record there, so a refused one leaves
/// none).
pub fn remember(
    results: &Path,
    key: &str,
    resolved: &Resolved,
    on: &str,
    memory: &[u64],
) -> std::io::Result<()> {
    let chosen_at = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let mut all = read(results);
    let kept = all.entry(key.to_string()).or_default();
    kept.retain(|e| !close(&e.memory, memory));
    kept.push(Entry {
        cases: resolved.cases.clone(),
        notes: resolved.notes.clone(),
        chosen_at,
        chosen_on: on.to_string(),
        memory: memory.to_vec(),
    });
    let text = serde_json::to_vec_pretty(&all).map_err(std::io::Error::other)?;
    numalab_record::write_file_atomic(&path(results), &text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine(host: &str) -> MachineInfo {
        let mut m = numalab_record::example_record("numa02", "a", 1, 1.0).machine;
        m.hostname = host.into();
        m
    }

    #[test]
    fn sizes_come_back_for_the_same_shape_and_flags_only() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path().join("r");
        let k = key(&machine("h"), "numa02 --threads 2");
        let mem = memory(&machine("h"));
        assert!(recall(&r, &k, &mem).is_none());
        let resolved = Resolved {
            cases: vec![],
            notes: vec!["loops: 270 for about 20 s".into()],
            warnings: vec![],
        };
        remember(&r, &k, &resolved, "real on h", &mem).unwrap();
        let back = recall(&r, &k, &mem).unwrap();
        assert_eq!(back.notes[0], "loops: 270 for about 20 s");
        assert!(
            back.notes[1].starts_with("sizes as chosen by the invocation of 20")
                && back.notes[1].contains(" real on h into "),
            "{:?}",
            back.notes
        );
        // Another host, or a simulated machine, of the same shape: the
        // same work (its name is not in the key).
        let sim = machine("sim:calibrated-h");
        assert!(recall(&r, &key(&sim, "numa02 --threads 2"), &memory(&sim)).is_some());
        // Other flags: chosen afresh.
        assert!(recall(&r, &key(&machine("h"), "numa02 --threads 4"), &mem).is_none());
        // A node with a tenth less memory (a guest's first node beside
        // its calibrated file's one size): the same work; twice as much:
        // chosen afresh, and kept beside the first.
        let mut less = machine("h");
        less.topology.nodes[0].memory_bytes -= less.topology.nodes[0].memory_bytes / 10;
        assert_eq!(key(&less, "numa02 --threads 2"), k);
        assert!(recall(&r, &k, &memory(&less)).is_some());
        let mut bigger = machine("h");
        bigger.topology.nodes[0].memory_bytes *= 2;
        assert!(recall(&r, &k, &memory(&bigger)).is_none());
        let other = Resolved {
            cases: vec![],
            notes: vec!["loops: 540".into()],
            warnings: vec![],
        };
        remember(&r, &k, &other, "real on big", &memory(&bigger)).unwrap();
        assert_eq!(
            recall(&r, &k, &memory(&bigger)).unwrap().notes[0],
            "loops: 540"
        );
        assert_eq!(
            recall(&r, &k, &mem).unwrap().notes[0],
            "loops: 270 for about 20 s"
        );
    }

    /// A campaign's machines share sizes as an invocation's do: the same
    /// topology, each node's memory within a fifth.
    #[test]
    fn machines_of_one_shape_may_differ_a_little_in_memory() {
        let (a, mut b) = (machine("h"), machine("sim:calibrated-h"));
        assert!(same_shape(&a, &b));
        b.topology.nodes[0].memory_bytes -= b.topology.nodes[0].memory_bytes / 10;
        assert!(same_shape(&a, &b));
        b.topology.nodes[0].memory_bytes /= 2;
        assert!(!same_shape(&a, &b));
        let mut c = machine("h");
        c.topology.distances[0][1] += 1;
        c.topology.distances[1][0] += 1;
        assert!(!same_shape(&a, &c));
    }

    #[test]
    fn a_damaged_file_is_no_memory() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join(".numalab")).unwrap();
        std::fs::write(d.path().join(FILE), "{not json").unwrap();
        assert!(recall(d.path(), "k", &[]).is_none());
    }
}
