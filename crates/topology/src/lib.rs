//! # numalab-topology: what the machine is
//!
//! Every result numalab produces is only as meaningful as the description
//! of the machine it came from, so this crate owns that description. A
//! [`Topology`] lists NUMA nodes (with the kernel's sparse ids, and
//! memory-only nodes), CPUs with their package, core and last-level cache,
//! and the SLIT distance matrix. The same type describes a real machine
//! (read from sysfs), a QEMU guest (its spec is checked against what the
//! guest kernel reports) and a simulated machine (built from a machine
//! file), so nothing downstream can tell them apart by shape.
//!
//! Parsing always starts from an explicit root directory rather than
//! `/sys` itself. That is what makes the parser testable: the fixture trees
//! under `tests/fixtures/` are copies of the files a kernel exposes on a
//! one-node VM, a 4-node 16-CPU Itanium box like seed 000's NEC Azusa, a
//! 2-socket SMT machine with several LLCs per node, and a machine with a
//! memory-only node.
//!
//! [`placement`] derives the CPU sets of placement experiments (spread,
//! packed, with or without SMT siblings) from the same description.
//!
//! [`size`] is the one parser of sizes (`512M`, `3G`): every size flag
//! and the cache sizes of sysfs.
//!
//! [`MachineInfo`] adds what else shapes a NUMA result: kernel, CPU model,
//! `kernel.numa_balancing` and its scan tunables, THP, governor and SMT.
//! A value that cannot be read is absent, never guessed.

#![forbid(unsafe_code)]

pub mod cpulist;
pub mod placement;
pub mod probe;
pub mod size;
mod topology;

pub use probe::{sched_ext, MachineInfo, Roots, Tuning};
pub use topology::{human_bytes, parse_size, Cpu, Llc, Node, Relation, Topology, TopologyError};
