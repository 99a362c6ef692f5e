//! NUMA balancers: what moves memory (and NUMA-motivated task moves).
//! Each is one module implementing [`Balancer`]; the [`REGISTRY`] line is
//! the only other place that names it.

use crate::engine::{Balancer, Scheduler, World};
use crate::machine::Machine;
use crate::params::{Params, PolicySpec};

pub mod autonuma;
pub mod autonuma25;
pub mod numa;
pub mod sampling;

pub type Entry = crate::params::Entry<dyn Balancer>;

pub const REGISTRY: &[Entry] = &[
    Entry {
        name: "none",
        summary: "memory stays where it was first touched",
        build: build_none,
    },
    Entry {
        name: "autonuma",
        summary: "Linux automatic NUMA balancing: runtime-driven PTE scans, hinting faults, should_numa_migrate_memory, preferred node and task_numa_migrate",
        build: autonuma::build,
    },
    Entry {
        name: "sampling",
        summary: "IBS-like access sampling feeding the same placement logic, with no scanning or fault cost (after the IBS patches, LKML 2023)",
        build: sampling::build,
    },
];

/// A migration's system time without a measured one (estimate).
pub const MIGRATE_US_PER_MB_ESTIMATE: f64 = 250.0;

/// The `migrate_us_per_mb` parameter every balancer that moves pages
/// takes: system time to migrate 1 MiB, by default the machine file's
/// measured `costs.migrate_us_per_mb`, else [`MIGRATE_US_PER_MB_ESTIMATE`].
pub(crate) fn migrate_us_per_mb(
    p: &mut Params,
    m: &Machine,
) -> Result<f64, crate::params::ParamError> {
    p.f64(
        "migrate_us_per_mb",
        m.costs
            .migrate_us_per_mb
            .unwrap_or(MIGRATE_US_PER_MB_ESTIMATE),
        "system time to migrate 1 MiB (default: the machine file's costs.migrate_us_per_mb, else an estimate)",
    )
}

pub fn build(
    spec: &PolicySpec,
    m: &Machine,
) -> Result<Box<dyn Balancer>, crate::params::ParamError> {
    crate::params::build_from("balancer", REGISTRY, spec, m)
}

/// `name`, summary and `k=default,...` of each balancer.
pub fn list(m: &Machine) -> Vec<(String, String, String)> {
    crate::params::describe_all(REGISTRY, m)
}

struct NoBalancer;

impl Balancer for NoBalancer {
    fn tick(&mut self, _w: &mut World, _s: &mut dyn Scheduler) {}
}

fn build_none(
    _p: &mut Params,
    _m: &Machine,
) -> Result<Box<dyn Balancer>, crate::params::ParamError> {
    Ok(Box::new(NoBalancer))
}
