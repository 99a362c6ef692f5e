//! # numalab-record: the one data model
//!
//! Everything numalab measures, on a real machine, inside a QEMU guest or
//! in the simulator, ends as a [`RunRecord`]: one JSON document per run,
//! self-describing and versioned. Everything downstream (`compare`, `show`,
//! `report`) reads only records, which is what lets a simulated run be
//! compared with a real one by the same code.
//!
//! Design rules:
//! - **Self-describing.** A record carries the benchmark and its resolved
//!   parameters (the sizes actually used, not the flags typed), the label,
//!   the backend (real, guest with its emulated topology, or sim with its
//!   policies and seed) and the full [`MachineInfo`], so a directory of
//!   records copied from another host still makes sense.
//! - **Versioned.** [`SCHEMA_VERSION`] is bumped on any incompatible change;
//!   a reader refuses records from a newer schema with a clear error instead
//!   of misreading them. Unknown fields are rejected for the same reason.
//! - **Per-node vectors align with `machine.topology.nodes`.** Node ids may
//!   be sparse, so a value per node is stored at the node's position in
//!   that list, never at its id.
//! - **Atomic.** [`store::write_atomic`] writes a temporary file in the
//!   results directory, syncs it, and renames it into place, so a crash or
//!   Ctrl-C never leaves a truncated record, and a record is written as
//!   soon as its run ends.
//! - **Honest.** A failed run is still recorded (status `failed` with the
//!   reason); downstream tools skip it in statistics but can show it.

#![forbid(unsafe_code)]

pub mod convergence;
pub mod id;
pub mod schema;
pub mod store;
/// numalab's version and the commit it was built from, as `--version`
/// prints it and every record's `numalab_version` says:
/// `0.1.0 (abc1234def56)`, `-dirty` when built with uncommitted changes
/// (as of the last time HEAD moved: see build.rs).
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("NUMALAB_COMMIT"), ")");

pub use store::{ensure_writable_dir, parse};

pub use id::{NameError, RecordId};
pub use numalab_topology::MachineInfo;
pub use schema::*;
pub use store::{
    create_new, load, load_paths, load_paths_with, remove_side_files, write_atomic,
    write_file_atomic, LoadOptions, LoadReport, RecordError, SideFile,
};

#[cfg(test)]
mod version_stamp {
    /// The version stamp is made again only when HEAD moves: its build
    /// script watches files that exist (cargo reruns a script that
    /// watches a missing file on every build, and so rebuilds every crate
    /// that depends on this one) and not git's index (which `git status`
    /// rewrites).
    #[test]
    fn the_stamp_watches_existing_files_and_not_the_index() {
        // The script's output, beside its OUT_DIR.
        let out = std::path::Path::new(env!("OUT_DIR")).join("../output");
        let text = std::fs::read_to_string(&out).unwrap();
        let watched: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("cargo:rerun-if-changed="))
            .collect();
        assert!(watched.contains(&"build.rs"), "{text}");
        for w in &watched {
            assert!(!w.ends_with("/index"), "watches the index: {text}");
            let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(w);
            assert!(p.exists(), "watches {w}, which does not exist: {text}");
        }
        if std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../.git")
            .exists()
        {
            assert!(
                watched.iter().any(|w| w.ends_with("/HEAD")),
                "a checkout, and HEAD is not watched: {text}"
            );
        }
    }
}
