//! # numalab-backends: every backend built in one place
//!
//! The runner runs cases on a [`Backend`]: this machine
//! (numalab-host), the simulator (numalab-sim) or a QEMU guest
//! (numalab-guest, which drives the guest through numalab-protocol).
//! `numalab run`, `numalab sim`, `numalab vm -- run` and a campaign's
//! configurations all need one; before this crate the CLI and the
//! campaign each built them, each with the simulator's defaults and
//! limits. Here they are built by [`start`] from one [`BackendOptions`],
//! and the simulator's defaults and limits are [`SimOptions`]'s alone;
//! a guest's options are numalab-guest's [`VmOptions`], which the CLI's
//! flags and a campaign's `[guest]` table both fill in.
//!
//! Front ends keep their own words: a limit broken is a typed
//! [`SimOptionsError`] that `numalab sim` says with its flag's name and a
//! campaign with its key's.
//!
//! ## Adding a backend
//!
//! A new kind of machine (a remote one over SSH, say) is a crate under
//! `crates/backend/` implementing the runner's `Backend` (and
//! `Calibration`), a variant of [`BackendOptions`] with its options, an
//! arm of [`start`], and the flags or keys that fill the options in. A
//! backend that runs cases on another machine reuses numalab-protocol:
//! its agent and executor run there, its transport carries the frames.
#![forbid(unsafe_code)]

use numalab_guest::VmOptions;
use numalab_runner::{Backend, Interval};
use numalab_sim::{SimBackend, SimConfig, SimError};
use std::ops::RangeInclusive;
use std::path::Path;

/// Which backend to start, with what it needs.
pub enum BackendOptions {
    /// This machine; numalab re-executes itself for some runs.
    Host,
    /// The simulator.
    Sim(SimOptions),
    /// A QEMU guest, booted at start and kept up.
    Guest(Box<VmOptions>),
}

/// The simulator's machine, policies and limits.
#[derive(Debug, Clone, PartialEq)]
pub struct SimOptions {
    /// A preset, `host`, or a machine file, with overrides.
    pub machine: String,
    /// A scheduler and its parameters (`node-affine[dynamic=true]`).
    pub scheduler: String,
    /// A NUMA balancer and its parameters.
    pub balancer: String,
    /// Seed of repetition 1 (repetition r uses seed + r - 1).
    pub seed: u64,
    /// Length of the simulation tick, in [`SimOptions::TICK_US_RANGE`].
    pub tick_us: u64,
    /// A run stops (failed) after this many simulated seconds; positive.
    pub max_sim_s: f64,
    /// The format of a traced run's files.
    pub trace_format: numalab_trace::export::Format,
}

impl SimOptions {
    pub const SCHEDULER: &'static str = "linux";
    pub const BALANCER: &'static str = "none";
    pub const SEED: u64 = 1;
    pub const TICK_US: u64 = 1000;
    pub const TICK_US_RANGE: RangeInclusive<u64> = numalab_sim::TICK_US_RANGE;
    pub const MAX_SIM_S: f64 = 3600.0;

    /// `machine` with every other option at its default.
    pub fn new(machine: &str) -> SimOptions {
        SimOptions {
            machine: machine.to_string(),
            scheduler: Self::SCHEDULER.to_string(),
            balancer: Self::BALANCER.to_string(),
            seed: Self::SEED,
            tick_us: Self::TICK_US,
            max_sim_s: Self::MAX_SIM_S,
            trace_format: numalab_trace::export::Format::default(),
        }
    }

    /// The tick and the run's limit within their ranges.
    pub fn check_limits(&self) -> Result<(), SimOptionsError> {
        if !Self::TICK_US_RANGE.contains(&self.tick_us) {
            return Err(SimOptionsError::TickUs(self.tick_us));
        }
        if !(self.max_sim_s.is_finite() && self.max_sim_s > 0.0) {
            return Err(SimOptionsError::MaxSimS(self.max_sim_s));
        }
        Ok(())
    }

    /// The simulator's configuration, checked, sampling as often as
    /// `interval` asks: the machine and policies first, then the limits,
    /// then the whole.
    pub fn config(&self, interval: Interval) -> Result<SimConfig, SimOptionsError> {
        let mut cfg = SimConfig::new(&self.machine, &self.scheduler, &self.balancer, self.seed)?;
        self.check_limits()?;
        cfg.tick_us = self.tick_us;
        cfg.max_sim_s = self.max_sim_s;
        cfg.trace_format = self.trace_format;
        cfg.sample_ms = numalab_sim::backend::sample_ms(interval);
        cfg.check()?;
        Ok(cfg)
    }

    /// The simulator as a backend.
    pub fn build(&self, interval: Interval) -> Result<SimBackend, SimOptionsError> {
        Ok(SimBackend::new(self.config(interval)?))
    }
}

/// Why the simulator's options were refused.
#[derive(Debug, thiserror::Error)]
pub enum SimOptionsError {
    /// The machine, the policies or their parameters.
    #[error(transparent)]
    Sim(#[from] SimError),
    /// The tick, outside [`SimOptions::TICK_US_RANGE`].
    #[error(
        "tick_us = {0}: {lo} to {hi}",
        lo = SimOptions::TICK_US_RANGE.start(),
        hi = SimOptions::TICK_US_RANGE.end()
    )]
    TickUs(u64),
    /// The run's limit, not a positive number of seconds.
    #[error("max_sim_s = {0}: a positive number of seconds")]
    MaxSimS(f64),
}

/// Why a backend could not be started.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// numalab's own path, which the host backend re-executes.
    #[error("numalab's path: {0}")]
    Exe(std::io::Error),
    /// This machine's topology.
    #[error(transparent)]
    Host(#[from] numalab_topology::TopologyError),
    /// The simulator's options.
    #[error(transparent)]
    Sim(#[from] SimOptionsError),
    /// The guest did not boot or answer (interrupted, or why).
    #[error(transparent)]
    Guest(#[from] numalab_guest::VmError),
}

/// Start the backend `opts` names. Runs sample as `interval` asks (the
/// simulator samples at it); a guest's records and console log go under
/// `results`.
pub fn start(
    opts: &BackendOptions,
    results: &Path,
    interval: Interval,
) -> Result<Box<dyn Backend>, StartError> {
    Ok(match opts {
        BackendOptions::Host => {
            let exe = std::env::current_exe().map_err(StartError::Exe)?;
            Box::new(numalab_host::HostBackend::new(exe)?)
        }
        BackendOptions::Sim(s) => Box::new(s.build(interval)?),
        BackendOptions::Guest(g) => Box::new(numalab_guest::GuestBackend::start(g, results)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_the_documented_ones() {
        let s = SimOptions::new("azusa16");
        assert_eq!(
            (s.scheduler.as_str(), s.balancer.as_str(), s.seed),
            ("linux", "none", 1)
        );
        assert_eq!((s.tick_us, s.max_sim_s), (1000, 3600.0));
        s.check_limits().unwrap();
    }

    #[test]
    fn limits_are_checked_at_their_edges() {
        let with = |tick_us, max_sim_s| SimOptions {
            tick_us,
            max_sim_s,
            ..SimOptions::new("azusa16")
        };
        with(1, 1e-9).check_limits().unwrap();
        with(100_000, 1.0).check_limits().unwrap();
        for (t, m) in [(0, 1.0), (100_001, 1.0)] {
            let e = with(t, m).check_limits().unwrap_err();
            assert!(matches!(e, SimOptionsError::TickUs(v) if v == t), "{e}");
        }
        for m in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let e = with(1000, m).check_limits().unwrap_err();
            assert!(matches!(e, SimOptionsError::MaxSimS(_)), "{e}");
        }
        assert_eq!(
            with(0, 1.0).check_limits().unwrap_err().to_string(),
            "tick_us = 0: 1 to 100000"
        );
    }

    #[test]
    fn the_machine_is_checked_before_the_limits() {
        let bad = SimOptions {
            tick_us: 0,
            ..SimOptions::new("no-such-preset")
        };
        let e = bad.config(Interval::Auto).unwrap_err();
        assert!(matches!(e, SimOptionsError::Sim(_)), "{e}");
        let bad = SimOptions {
            max_sim_s: 0.0,
            ..SimOptions::new("azusa16")
        };
        let e = bad.config(Interval::Auto).unwrap_err();
        assert!(matches!(e, SimOptionsError::MaxSimS(_)), "{e}");
    }

    #[test]
    fn a_simulator_is_started_with_its_options() {
        let s = SimOptions {
            tick_us: 500,
            seed: 7,
            ..SimOptions::new("azusa16")
        };
        let cfg = s.config(Interval::Auto).unwrap();
        assert_eq!((cfg.tick_us, cfg.seed, cfg.max_sim_s), (500, 7, 3600.0));
        let b = start(
            &BackendOptions::Sim(s),
            Path::new("/nonexistent"),
            Interval::Auto,
        )
        .unwrap();
        assert_eq!(b.kind(), "sim");
    }
}
