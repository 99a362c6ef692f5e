//! # numalab-scx: numalab's policies as sched_ext schedulers
//!
//! The simulator's scheduling policies can be checked against a real
//! kernel only if a real kernel can run them. Since Linux 6.12 it can run
//! a scheduler written in BPF (sched_ext); this crate holds numalab's,
//! written here in BPF C (`bpf/`), and the loader that puts one into the
//! kernel for a configuration's runs.
//!
//! - **What a user names.** `--scx NAME[k=v,...]` with the simulator's
//!   own syntax and parameter checks ([`numalab_sim::params`]): [`parse`]
//!   resolves it once into the canonical name a record keeps and the
//!   values the BPF program is given. [`REGISTRY`] lists them: `fifo`
//!   (one global FIFO queue) is the baseline, `node-affine` and `nest`
//!   are the simulator's policies, read with the simulator's parameters
//!   (`nest` with the simulator's own readers of them).
//! - **Built only when asked.** The BPF programs are compiled by clang
//!   against the guest kernel's own `vmlinux.h` (Debian's linux-bpf-dev,
//!   which `numalab vm --kernel debian-7.3` caches with the kernel) and
//!   turned into Rust skeletons by libbpf-cargo when numalab is built with
//!   feature `scx` (this crate's `bpf`); the default build needs only a
//!   Rust toolchain and says in one line how to get them.
//! - **The loader is a process** (`numalab __scx-load SPEC`,
//!   [`loader`]): it opens the object, sets the parameters, loads and
//!   attaches it through libbpf, prints one line when the kernel says the
//!   scheduler is enabled, and holds the BPF link until SIGINT or SIGTERM.
//!   The kernel unregisters the scheduler when the link closes, so a
//!   loader that dies, SIGKILL included, takes its scheduler with it. How
//!   the scheduler ended (its `scx_exit_info`: kind, reason, message) is
//!   copied out by the program's `ops.exit` and printed as the loader's
//!   last line, with the counters a program keeps (`nest`: the placements
//!   each step of its policy made). The runner starts it, and any other scheduler
//!   (`--scx-exec`), the same way: numalab-linux's `sched_ext` module.
#![deny(unsafe_code)]

use numalab_linux::sched_ext::Scx;
use numalab_sim::params::{ParamError, Params, PolicySpec, SpecError};

#[cfg(feature = "bpf")]
pub mod loader;

/// Whether this build has the BPF schedulers and their loader.
pub const BUILT: bool = cfg!(feature = "bpf");

/// One of numalab's sched_ext schedulers.
pub struct Policy {
    /// As `--scx` names it.
    pub name: &'static str,
    /// The `sched_ext_ops` name it registers (`/sys/kernel/sched_ext/root/ops`).
    pub ops: &'static str,
    pub summary: &'static str,
    /// Its parameters, read and checked.
    pub resolve: fn(&mut Params) -> Result<Resolved, ResolveError>,
}

/// Why a scheduler's parameters are refused.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// The simulator's reader refused one (unknown, not a number, ...).
    #[error(transparent)]
    Param(#[from] ParamError),
    /// `node-affine[dynamic=true]`, which needs NUMA balancing.
    #[error("node-affine: dynamic=true is the simulator's only: NUMA balancing does not run for sched_ext tasks")]
    DynamicHome,
    /// `node-affine[alloc_home=false]`, a memory policy.
    #[error("node-affine: alloc_home=false is the simulator's only: a BPF scheduler sets no memory policy (memory follows first touch, on the homenode)")]
    NoAllocHome,
    /// A `node-affine` bonus the BPF program's milli-units cannot hold.
    #[error("node-affine: parameter bonus={0} must be at most 1000000")]
    BonusTooLarge(f64),
}

/// Why `--scx NAME[k=v,...]` is refused.
#[derive(Debug, thiserror::Error)]
pub enum ScxError {
    /// Not `NAME[k=v,...]`.
    #[error("--scx {0}")]
    Spec(#[from] SpecError),
    /// Not one of [`REGISTRY`] (`known`).
    #[error("--scx {name}: not one of numalab's sched_ext schedulers ({}); run any other with --scx-exec", .known.join(", "))]
    Unknown {
        name: String,
        known: Vec<&'static str>,
    },
    /// Its parameters.
    #[error("--scx {0}")]
    Params(#[from] ResolveError),
}

/// A scheduler with its parameters, as its BPF program is given them.
#[derive(Debug, Clone, PartialEq)]
pub enum Resolved {
    Fifo {
        slice_ns: u64,
    },
    NodeAffine {
        initial: bool,
        bonus: f64,
        delay_ns: u64,
        slice_ns: u64,
    },
    Nest {
        reserve_max: u32,
        compact_ns: u64,
    },
}

/// numalab's sched_ext schedulers.
pub const REGISTRY: &[Policy] = &[
    Policy {
        name: "fifo",
        ops: "numalab_fifo",
        summary: "one global first-in first-out queue; a waking task takes an idle CPU directly",
        resolve: |p| {
            let ms = p.f64_in("slice_ms", 20.0, (0.05, 1000.0), "longest run before the next task")?;
            Ok(Resolved::Fifo {
                slice_ns: (ms * 1e6).round() as u64,
            })
        },
    },
    Policy {
        name: "node-affine",
        ops: "numalab_node_affine",
        summary: "Focht's homenode scheduler (the simulator's node-affine): a queue per node, distance-delayed steals, tasks sent home",
        resolve: node_affine,
    },
    Policy {
        name: "nest",
        ops: "numalab_nest",
        summary: "NEST (Lawall et al., EuroSys 2022; the simulator's nest): primary and reserve nests of warm cores",
        resolve: nest,
    },
];

/// `node-affine`: the simulator's keys and defaults, read by its own
/// function (`NodeAffineParams::read`), what the BPF version does with
/// each in docs/sched-ext.md.
fn node_affine(p: &mut Params) -> Result<Resolved, ResolveError> {
    // The balance intervals are read (so a spec the simulator takes is
    // taken here too) and have no effect (docs/sched-ext.md).
    let numalab_sim::sched::node_affine::NodeAffineParams {
        dynamic,
        initial,
        alloc_home,
        bonus,
        delay_ms,
        slice_ms,
        ..
    } = numalab_sim::sched::node_affine::NodeAffineParams::read(p)?;
    if dynamic {
        // NUMA balancing, which would tell where a task's memory is,
        // does not run for sched_ext tasks (task_tick_numa is called
        // only from task_tick_fair).
        return Err(ResolveError::DynamicHome);
    }
    if !alloc_home {
        return Err(ResolveError::NoAllocHome);
    }
    if bonus > 1e6 {
        return Err(ResolveError::BonusTooLarge(bonus));
    }
    Ok(Resolved::NodeAffine {
        initial,
        bonus,
        delay_ns: (delay_ms * 1e6).round() as u64,
        slice_ns: (slice_ms * 1e6).max(1e5).round() as u64,
    })
}

/// `nest`: the simulator's own reader of its parameters, then `linux`'s,
/// which the simulator's nest takes for its CFS fallback; here the
/// fallback is the kernel's default idle-CPU choice, so they are accepted
/// (the same spec text runs in both worlds) and have no effect.
fn nest(p: &mut Params) -> Result<Resolved, ResolveError> {
    let n = numalab_sim::sched::nest::NestParams::read(p)?;
    numalab_sim::sched::linux::Tunables::read(p)?;
    Ok(Resolved::Nest {
        reserve_max: n.reserve_max.min(MAX_CPUS) as u32,
        compact_ns: n.compact_ns,
    })
}

/// The BPF programs' bound on CPU ids.
pub const MAX_CPUS: usize = 1024;

/// `--scx NAME[k=v,...]`: the scheduler and its parameters, checked.
pub fn parse(text: &str) -> Result<(Scx, Resolved), ScxError> {
    let spec = PolicySpec::parse(text)?;
    let Some(p) = REGISTRY.iter().find(|p| p.name == spec.name) else {
        return Err(ScxError::Unknown {
            name: spec.name,
            known: REGISTRY.iter().map(|p| p.name).collect(),
        });
    };
    let mut params = Params::new(p.name, &spec.args);
    let r = (p.resolve)(&mut params)?;
    params.finish().map_err(ResolveError::from)?;
    Ok((
        Scx::Own {
            spec: spec.canonical(),
            ops: p.ops.to_string(),
        },
        r,
    ))
}

/// The one line a build without the schedulers gives for `--scx`.
pub fn not_built(flag: &str) -> String {
    format!(
        "{flag}: this numalab was built without its sched_ext schedulers; \
         build it with `cargo build --release --features scx` (needs clang-19, \
         libelf-dev, zlib1g-dev, pkg-config and the kernel's vmlinux.h: \
         `numalab vm --kernel debian-7.3 --fetch-only`), or run one with --scx-exec"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_parameters_as_the_simulator_checks_them() {
        let (scx, r) = parse("fifo").unwrap();
        assert_eq!(
            scx,
            Scx::Own {
                spec: "fifo".into(),
                ops: "numalab_fifo".into()
            }
        );
        assert_eq!(
            r,
            Resolved::Fifo {
                slice_ns: 20_000_000
            }
        );
        let (scx, r) = parse("fifo[slice_ms=5]").unwrap();
        assert_eq!(scx.name(), "fifo[slice_ms=5]");
        assert_eq!(
            r,
            Resolved::Fifo {
                slice_ns: 5_000_000
            }
        );
        assert_eq!(
            parse("fifo:slice_ms=5").unwrap().0.name(),
            "fifo[slice_ms=5]"
        );
        let e = parse("fifo[slice=5]").unwrap_err().to_string();
        assert_eq!(
            e,
            "--scx fifo: unknown parameter \"slice\" (valid: slice_ms)"
        );
        let e = parse("fifo[slice_ms=0]").unwrap_err().to_string();
        assert!(e.contains("slice_ms=0 must be between"), "{e}");
        let e = parse("cfs").unwrap_err().to_string();
        assert!(
            e.contains("not one of numalab's sched_ext schedulers (fifo, node-affine, nest)"),
            "{e}"
        );
        assert!(e.contains("--scx-exec"), "{e}");
        assert!(parse("fifo[slice_ms=1")
            .unwrap_err()
            .to_string()
            .contains("closing"));
        // Every ops name is a valid BPF object name (letters, digits, _ .).
        for p in REGISTRY {
            assert!(p
                .ops
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_.".contains(&b)));
            assert!(p.ops.len() < 64);
        }
        assert!(!not_built("--scx fifo").contains('\n'));
    }

    /// `--scx node-affine[...]` takes exactly the keys and defaults of
    /// the simulator's `--scheduler node-affine[...]`.
    #[test]
    fn node_affine_has_the_simulators_parameters() {
        let m = numalab_sim::machine::Machine::load("ht2").unwrap();
        let sim = numalab_sim::sched::list(&m)
            .into_iter()
            .find(|(n, _, _)| n == "node-affine")
            .unwrap()
            .2;
        let p = REGISTRY.iter().find(|p| p.name == "node-affine").unwrap();
        let mut params = Params::new(p.name, &Default::default());
        (p.resolve)(&mut params).unwrap();
        assert_eq!(params.describe(), sim);
        let (scx, r) = parse("node-affine[delay_ms=4]").unwrap();
        assert_eq!(scx.name(), "node-affine[delay_ms=4]");
        assert_eq!(scx.expected_ops(), Some("numalab_node_affine"));
        assert_eq!(
            r,
            Resolved::NodeAffine {
                initial: true,
                bonus: 1.0,
                delay_ns: 4_000_000,
                slice_ns: 100_000_000
            }
        );
        for bad in ["node-affine[dynamic=true]", "node-affine[alloc_home=false]"] {
            assert!(
                parse(bad)
                    .unwrap_err()
                    .to_string()
                    .contains("the simulator's only"),
                "{bad}"
            );
        }
        // The simulator checks the same text the same way.
        let e = parse("node-affine[delay=4]").unwrap_err().to_string();
        assert!(e.contains("unknown parameter \"delay\""), "{e}");
    }

    /// `--scx nest[...]` takes exactly the keys and defaults of the
    /// simulator's `--scheduler nest[...]`, read by the same functions.
    #[test]
    fn nest_has_the_simulators_parameters() {
        let m = numalab_sim::machine::Machine::load("ht2").unwrap();
        let sim = numalab_sim::sched::list(&m)
            .into_iter()
            .find(|(n, _, _)| n == "nest")
            .unwrap()
            .2;
        let p = REGISTRY.iter().find(|p| p.name == "nest").unwrap();
        let mut params = Params::new(p.name, &Default::default());
        (p.resolve)(&mut params).unwrap();
        assert_eq!(params.describe(), sim);
        let (scx, r) = parse("nest[reserve_max=2,compact_ms=4]").unwrap();
        assert_eq!(scx.name(), "nest[compact_ms=4,reserve_max=2]");
        assert_eq!(scx.expected_ops(), Some("numalab_nest"));
        assert_eq!(
            r,
            Resolved::Nest {
                reserve_max: 2,
                compact_ns: 4_000_000
            }
        );
        assert_eq!(
            parse("nest").unwrap().1,
            Resolved::Nest {
                reserve_max: 5,
                compact_ns: 2_000_000
            }
        );
        assert!(parse("nest[compact_ms=-1]")
            .unwrap_err()
            .to_string()
            .contains("compact_ms=\"-1\" must be a non-negative number"));
        assert!(parse("nest[wake_affine=false]").is_ok());
    }
}
