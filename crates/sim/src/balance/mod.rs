//! NUMA balancers: what moves memory (and NUMA-motivated task moves).
//! Each is one module implementing [`Balancer`]; the [`REGISTRY`] line is
//! the only other place that names it.

use crate::engine::{Balancer, Scheduler, World};
use crate::machine::Machine;
use crate::params::{Params, PolicySpec};

pub mod autonuma;
pub mod numa;
pub mod sampling;

type Build = fn(&mut Params, &Machine) -> Result<Box<dyn Balancer>, String>;

pub struct Entry {
    pub name: &'static str,
    pub summary: &'static str,
    pub build: Build,
}

pub const REGISTRY: &[Entry] = &[
    Entry {
        name: "none",
        summary: "memory stays where it was first touched",
        build: build_none,
    },
    Entry {
        name: "autonuma",
        summary: "Linux automatic NUMA balancing: runtime-driven PTE scans, hinting faults, two-reference filter, preferred node",
        build: autonuma::build,
    },
    Entry {
        name: "sampling",
        summary: "IBS-like access sampling feeding the same placement logic, with no scanning or fault cost (seed 004)",
        build: sampling::build,
    },
];

pub fn build(spec: &PolicySpec, m: &Machine) -> Result<Box<dyn Balancer>, String> {
    let Some(e) = REGISTRY.iter().find(|e| e.name == spec.name) else {
        let names: Vec<&str> = REGISTRY.iter().map(|e| e.name).collect();
        return Err(format!(
            "unknown balancer {:?} (valid: {})",
            spec.name,
            names.join(", ")
        ));
    };
    let mut p = Params::new(e.name, &spec.args);
    let b = (e.build)(&mut p, m)?;
    p.finish()?;
    Ok(b)
}

pub fn list(m: &Machine) -> Vec<(String, String, String)> {
    REGISTRY
        .iter()
        .map(|e| {
            let mut p = Params::new(e.name, &Default::default());
            let _ = (e.build)(&mut p, m);
            (e.name.to_string(), e.summary.to_string(), p.describe())
        })
        .collect()
}

struct NoBalancer;

impl Balancer for NoBalancer {
    fn tick(&mut self, _w: &mut World, _s: &mut dyn Scheduler) {}
}

fn build_none(_p: &mut Params, _m: &Machine) -> Result<Box<dyn Balancer>, String> {
    Ok(Box::new(NoBalancer))
}
