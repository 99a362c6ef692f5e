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

pub mod convergence;
pub mod id;
pub mod schema;
pub mod store;
/// numalab's version and the commit it was built from, as `--version`
/// prints it and every record's `numalab_version` says:
/// `0.1.0 (abc1234def56)`, `-dirty` when built with uncommitted changes.
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("NUMALAB_COMMIT"), ")");

pub use store::{ensure_writable_dir, parse};

pub use id::{NameError, RecordId};
pub use numalab_topology::MachineInfo;
pub use schema::*;
pub use store::{
    create_new, load, load_paths, remove_side_files, write_atomic, write_file_atomic, LoadReport,
    RecordError, SideFile,
};
