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
//! (nodes, CPUs, LLCs, memory, distances) and the benchmark's flags, not
//! by backend or host name: a later invocation with the same key into
//! the same directory, on this machine, a simulated one or another host
//! of the same shape, runs exactly those cases, saying which invocation
//! chose them; `--resize` chooses afresh (and keeps the new sizes). A
//! campaign pins its sizes per plan (`.campaign/plan.lock.json`), once
//! per machine shape in the same way.

use numalab_bench::{Case, Resolved};
use numalab_topology::MachineInfo;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const FILE: &str = ".numalab/sizes.json";

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
}

/// The key of a benchmark with its flags on a machine: what must match
/// for sizes to be reused. The machine is its topology (not its name,
/// its backend or its free memory, which changes between invocations):
/// the same work wherever the machine has this shape.
pub fn key(machine: &MachineInfo, flags: &str) -> String {
    let topo = serde_json::to_string(&machine.topology).unwrap_or_default();
    format!("{topo}|{flags}")
}

fn path(results: &Path) -> PathBuf {
    results.join(FILE)
}

fn read(results: &Path) -> BTreeMap<String, Entry> {
    std::fs::read_to_string(path(results))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

/// The cases an earlier invocation chose for `key` in `results`, with a
/// note saying so.
pub fn recall(results: &Path, key: &str) -> Option<Resolved> {
    let e = read(results).remove(key)?;
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
/// machine (`real on vm`; atomically; called once the invocation has
/// written a record there, so a refused one leaves none).
pub fn remember(results: &Path, key: &str, resolved: &Resolved, on: &str) -> std::io::Result<()> {
    let chosen_at = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let mut all = read(results);
    all.insert(
        key.to_string(),
        Entry {
            cases: resolved.cases.clone(),
            notes: resolved.notes.clone(),
            chosen_at,
            chosen_on: on.to_string(),
        },
    );
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
        assert!(recall(&r, &k).is_none());
        let resolved = Resolved {
            cases: vec![],
            notes: vec!["loops: 270 for about 20 s".into()],
            warnings: vec![],
        };
        remember(&r, &k, &resolved, "real on h").unwrap();
        let back = recall(&r, &k).unwrap();
        assert_eq!(back.notes[0], "loops: 270 for about 20 s");
        assert!(
            back.notes[1].starts_with("sizes as chosen by the invocation of 20")
                && back.notes[1].contains(" real on h into "),
            "{:?}",
            back.notes
        );
        // Another host, or a simulated machine, of the same shape: the
        // same work (its name is not in the key).
        assert!(recall(&r, &key(&machine("sim:calibrated-h"), "numa02 --threads 2")).is_some());
        // Other flags, or another shape: chosen afresh.
        assert!(recall(&r, &key(&machine("h"), "numa02 --threads 4")).is_none());
        let mut bigger = machine("h");
        bigger.topology.nodes[0].memory_bytes *= 2;
        assert!(recall(&r, &key(&bigger, "numa02 --threads 2")).is_none());
    }

    #[test]
    fn a_damaged_file_is_no_memory() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join(".numalab")).unwrap();
        std::fs::write(d.path().join(FILE), "{not json").unwrap();
        assert!(recall(d.path(), "k").is_none());
    }
}
