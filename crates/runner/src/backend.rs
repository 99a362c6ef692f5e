//! The one interface between the runner and whatever runs a case: this
//! machine (numalab-host), a QEMU guest (numalab-guest) or the simulator
//! (numalab-sim). A backend knows how to do one run of a resolved case and
//! turn it into a record; everything around that (order, repetitions,
//! hooks, settings, progress, Ctrl-C, writing) is the runner's.

use crate::interrupt::Interrupt;
use crate::interval::Interval;
use numalab_bench::{Calibration, Case};
use numalab_linux::knobs::Knob;
use numalab_record::{Outcome, Repetition, RunRecord, SCHEMA_VERSION};
use numalab_topology::MachineInfo;
use std::collections::BTreeMap;
use std::path::Path;

/// What one run is told.
pub struct RunContext<'a> {
    pub label: &'a str,
    pub repetition: Repetition,
    /// When to observe the run.
    pub interval: Interval,
    /// Set by Ctrl-C or SIGTERM: stop, kill every task, return
    /// [`RunError::Interrupted`].
    pub interrupt: &'a Interrupt,
    /// The results directory (a backend may put files beside the record,
    /// named after its id: a command's output log).
    pub results: &'a Path,
    /// Report the fraction of this run done so far (0 to 1), for the
    /// progress bar and its ETA.
    pub progress: &'a dyn Fn(f64),
    /// Record the exact scheduling events of the run's tasks (`--trace`);
    /// a backend that cannot fails the run with the reason.
    pub trace: bool,
}

impl RunContext<'_> {
    /// A record for this run with nothing measured yet, as a backend that
    /// runs in real time starts it (its id and start time are now).
    pub fn new_record(&self, case: &Case, machine: &MachineInfo) -> RunRecord {
        let started = chrono::Utc::now();
        let benchmark = case.benchmark();
        RunRecord {
            schema_version: SCHEMA_VERSION,
            id: RunRecord::make_id(&benchmark, self.label, &started, self.repetition.index),
            numalab_version: numalab_record::VERSION.to_string(),
            started_at: started.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            benchmark,
            params: case.params(),
            label: self.label.to_string(),
            repetition: self.repetition,
            backend: numalab_record::Backend::real(),
            machine: machine.clone(),
            outcome: Outcome::ok(),
            metrics: BTreeMap::new(),
            processes: Vec::new(),
            tasks: Vec::new(),
            series: Default::default(),
            convergence: None,
            warnings: Vec::new(),
            applied: Default::default(),
            campaign: None,
            sched: None,
        }
    }
}

/// Where a backend's machine settings take effect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SettingsSite {
    /// This machine: the runner applies them before a configuration's
    /// runs and restores them after (with a guard process for SIGKILL).
    ThisMachine,
    /// The machine the backend runs cases on, which is not this one (a
    /// guest sets its own sysctls): through [`Backend::apply_settings`].
    Backend,
    /// Nowhere; why (the simulator has no sysctls).
    Unsupported(String),
}

/// A machine setting a backend refuses before anything runs
/// ([`Backend::check_settings`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingRefused {
    /// A value the backend does not take for this knob, and those it takes.
    #[error("{knob} {value:?}: {takes}")]
    Value {
        knob: String,
        value: String,
        takes: String,
    },
    /// A knob the backend does not apply at all, and what to do instead.
    #[error("{knob}: {why}")]
    Knob { knob: String, why: String },
}

/// Why a run produced no record.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The user interrupted it; every task was stopped.
    #[error("interrupted")]
    Interrupted,
    /// It could not be run at all (a task could not be started, ...).
    /// A run that ran and failed is a record with a failed outcome.
    #[error("{0}")]
    Failed(String),
}

/// Something that runs cases: the host, a guest, the simulator.
pub trait Backend: Calibration {
    /// `real`, `guest` or `sim`, as records name it.
    fn kind(&self) -> &'static str;

    /// One line on where the runs happen, printed before them.
    fn describe(&self) -> String;

    /// Where machine settings (`--sysctl`, `--governor`, `--thp`,
    /// `--sysfs`) take effect for this backend.
    fn settings_site(&self) -> SettingsSite {
        SettingsSite::ThisMachine
    }

    /// Apply `knobs` to the backend's own machine, undoing the ones of the
    /// previous call (an empty list undoes them all); return each knob's
    /// name with the value read back. Called only when
    /// [`Backend::settings_site`] is [`SettingsSite::Backend`].
    fn apply_settings(&mut self, _knobs: &[Knob]) -> Result<BTreeMap<String, String>, RunError> {
        Err(RunError::Failed(
            "this backend does not apply machine settings itself".into(),
        ))
    }

    /// Whether this backend can apply `knobs` at all (a backend whose
    /// [`Backend::settings_site`] is [`SettingsSite::Backend`] and which
    /// knows before running which it refuses: the simulator models only
    /// `thp`). Checked before anything runs.
    fn check_settings(&self, _knobs: &[Knob]) -> Result<(), SettingRefused> {
        Ok(())
    }

    /// Where a configuration's sched_ext scheduler (`--scx`) runs: on
    /// this machine (the runner loads it), the backend's own machine
    /// ([`Backend::start_scx`]), or nowhere (why).
    fn scx_site(&self) -> SettingsSite {
        SettingsSite::ThisMachine
    }

    /// Load `scx` on the backend's machine and wait until its kernel has
    /// enabled it: what sysfs then says. Called only when
    /// [`Backend::scx_site`] is [`SettingsSite::Backend`].
    fn start_scx(
        &mut self,
        _scx: &numalab_linux::sched_ext::Scx,
    ) -> Result<numalab_linux::sched_ext::Status, RunError> {
        Err(RunError::Failed(
            "this backend does not run sched_ext schedulers itself".into(),
        ))
    }

    /// Why the scheduler [`Backend::start_scx`] loaded no longer runs, if
    /// it does not.
    fn scx_ended(&mut self) -> Option<String> {
        None
    }

    /// Unload the scheduler [`Backend::start_scx`] loaded; how it ended,
    /// where it said.
    fn stop_scx(&mut self) -> Result<Option<numalab_linux::sched_ext::ExitInfo>, RunError> {
        Ok(None)
    }

    /// Why `case` cannot run on this backend, if it cannot (the
    /// simulator cannot run a program), checked before anything runs.
    fn unsupported(&self, _case: &Case) -> Option<String> {
        None
    }

    /// Run `case` once.
    fn run(&mut self, case: &Case, ctx: &RunContext) -> Result<RunRecord, RunError>;

    /// A record for a run that could not start (its prepare hook failed),
    /// tagged as this backend's records are.
    fn failed_record(&self, case: &Case, ctx: &RunContext, reason: &str) -> RunRecord {
        let mut r = ctx.new_record(case, self.machine());
        r.outcome = Outcome::failed(reason);
        r
    }
}

/// The backends of a plan's configurations: each configuration's runs go
/// to the backend `get` returns for it. A pool may start a backend when
/// first asked and stop the previous one (one guest up at a time).
pub trait Backends {
    fn get(&mut self, config: usize) -> Result<&mut dyn Backend, crate::RunnerError>;
}

/// One backend for every configuration.
pub struct One<'a>(pub &'a mut dyn Backend);

impl Backends for One<'_> {
    fn get(&mut self, _config: usize) -> Result<&mut dyn Backend, crate::RunnerError> {
        Ok(&mut *self.0)
    }
}
