//! # numalab-runner: one runner for every backend
//!
//! Every `numalab run`, `numalab sim` and (inside the guest) `numalab vm`
//! invocation is the same loop: a [`Plan`] of configurations × cases ×
//! repetitions, run by one [`Backend`]. This crate is that loop, written
//! once:
//!
//! - **Order.** A list of [`Step`]s: by default ([`Plan::steps`])
//!   repetitions outermost; within a repetition every configuration, and
//!   within it every case, in the order given. Drift over time (thermal
//!   state, page cache, other load) then touches every case alike instead
//!   of biasing the ones that ran last. Warm-up runs (`--warmup N`) come
//!   first for each case and are discarded. A campaign (numalab-campaign)
//!   gives its own order (randomised blocks, only the cells still
//!   missing) and tags each step with its cell; the loop is the same.
//! - **Backends.** One backend for every configuration
//!   ([`run`]), or one per configuration from a [`Backends`] pool that
//!   starts and stops them (a campaign's guests and simulated machines).
//! - **Configurations.** A configuration is a label plus what is set up
//!   for it: machine settings ([`numalab_linux::knobs`]: sysctls,
//!   governor, THP, sysfs files) applied when it becomes active and
//!   restored when it stops being active, on success, failure, Ctrl-C or
//!   SIGTERM, and by a guard process when numalab is killed outright;
//!   `--setup` once before its first run, `--cleanup` once after its
//!   last, `--prepare` before every run (untimed; a failing prepare fails
//!   that run), and the service `--setup-bg` kept running while it is
//!   active, started after `--setup` and stopped before its settings are
//!   restored ([`hooks::Service`]). What was applied is written into every
//!   record; what the hooks printed, into the results directory's
//!   `hooks.log` ([`hooks::HookLog`]).
//! - **How many.** `--runs N` ([`Runs::Fixed`]), or `--runs auto`
//!   ([`Runs::Auto`], [`Auto`]): the first round (one run of every case
//!   in every configuration) runs, its time decides how many rounds fit
//!   in the time budget within the bounds, and whole rounds follow, so the
//!   order stays blocked.
//! - **One record per run, written as it ends.** The backend returns the
//!   record; the runner adds what only it knows (the configuration's
//!   settings and hooks, the sizing notes, how the case was realised) and
//!   writes it atomically before the next run starts. With `--runs auto`
//!   the first round's records are written once more when the count is
//!   decided, so that their `repetition.of` is it, as the later ones' is.
//!   Nothing is derived across runs here: ratios, positions between
//!   bounds and summaries are the report layer's, computed from the
//!   records.
//! - **Progress.** One bar on standard error for the whole invocation,
//!   with an ETA from the runs done and the current run's own progress;
//!   one line per finished run on standard output; at the end a summary
//!   rendered by numalab-report from the records just written.
//! - **Ctrl-C and SIGTERM** set a flag ([`Interrupt`]) that the backend
//!   polls: it kills and reaps every task and returns; the runner keeps
//!   every finished record, restores the settings, says how many runs were
//!   kept and reports [`Outcome::interrupted`].
#![forbid(unsafe_code)]

pub mod backend;
pub mod hooks;
pub mod interrupt;
pub mod interval;
pub mod scx;
pub mod sizes;

pub use backend::{Backend, Backends, One, RunContext, RunError, SettingRefused, SettingsSite};
pub use interrupt::{Interrupt, Interrupted};
pub use interval::{Interval, IntervalError};

use numalab_bench::Case;
use numalab_linux::knobs::{self, Knob};
use numalab_record::{Applied, CampaignTag, Repetition, RunRecord};
use std::path::{Path, PathBuf};

/// One configuration: what is compared.
#[derive(Debug, Clone, Default)]
pub struct Configuration {
    pub label: String,
    /// Machine settings applied while this configuration runs.
    pub knobs: Vec<Knob>,
    pub prepare: Option<String>,
    pub setup: Option<String>,
    pub cleanup: Option<String>,
    /// A service started after `setup` and kept running while the
    /// configuration is active (`--setup-bg`).
    pub setup_bg: Option<String>,
    /// Where the hooks run: the benchmark's directory (`run command
    /// --cwd DIR`); numalab's when `None`.
    pub hook_dir: Option<PathBuf>,
    /// The sched_ext scheduler the runs run under (`--scx`,
    /// `--scx-exec`), loaded after `setup` and before the service, and
    /// unloaded when the configuration stops being active.
    pub scx: Option<numalab_linux::sched_ext::Scx>,
}

/// Everything one invocation runs.
pub struct Plan {
    pub configs: Vec<Configuration>,
    pub cases: Vec<Case>,
    /// Recorded repetitions of every case in every configuration.
    pub runs: Runs,
    /// Discarded runs of every case before the recorded ones.
    pub warmup: u32,
    pub interval: Interval,
    pub results: PathBuf,
    /// How the defaults were chosen, one line each (kept in every record's
    /// `backend.details.sizing`).
    pub notes: Vec<String>,
    /// How to start the guard process that restores settings if numalab
    /// is killed (None: no guard, e.g. in tests).
    pub guard: Option<knobs::Guard>,
    /// Wait for another numalab holding a setting (`--wait`) instead of
    /// refusing.
    pub wait: bool,
    /// How much the runner prints.
    pub output: Output,
    /// Trace every run's scheduling events (`--trace`).
    pub trace: bool,
}

/// How many recorded repetitions of every case a plan has.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Runs {
    /// Exactly this many (`--runs N`).
    Fixed(u32),
    /// As many as a time budget allows, within bounds (`--runs auto`).
    Auto(Auto),
}

/// Default `--max-runs` of `--runs auto`: past about 30 runs per side
/// the intervals and the rank test gain little, and drift over a long
/// invocation starts to weigh more than noise.
pub const AUTO_MAX_RUNS: u32 = 30;

/// Default `--max-time` of `--runs auto`, in seconds: hyperfine's 3 s
/// budget is for commands of milliseconds; NUMA benchmarks run for
/// seconds to minutes, so five minutes buys tens of runs of a run of a
/// few seconds, and for runs of a minute or more the minimum decides.
pub const AUTO_MAX_TIME_S: f64 = 300.0;

/// `--runs auto`: at least `min` rounds (a round is one recorded run of
/// every case in every configuration, in the blocked order), then as many
/// more as fit in `max_time_s` by the first round's time, at most `max`
/// in all. The count is decided once, when the first round has run, so
/// the order stays blocked and every round is whole.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Auto {
    pub min: u32,
    pub max: u32,
    /// Seconds the recorded rounds may take in all, as estimated from the
    /// first (warm-ups, setup and cleanup not counted).
    pub max_time_s: f64,
}

impl Auto {
    /// The bounds from the flags given (`None`: not given). A default
    /// bound yields to the other bound given (`--max-runs 3` alone runs 3);
    /// two bounds given the wrong way round are an error.
    pub fn new(
        min: Option<u32>,
        max: Option<u32>,
        max_time_s: Option<f64>,
    ) -> Result<Auto, RunnerError> {
        let default_min = numalab_stats::AUTO_MIN_RUNS as u32;
        let (min, max) = match (min, max) {
            (Some(a), Some(b)) if a > b => {
                return Err(RunnerError::Invalid(format!(
                    "--min-runs {a} is more than --max-runs {b}"
                )))
            }
            (Some(a), Some(b)) => (a, b),
            (Some(a), None) => (a, a.max(AUTO_MAX_RUNS)),
            (None, Some(b)) => (default_min.min(b), b),
            (None, None) => (default_min, AUTO_MAX_RUNS),
        };
        if min == 0 {
            return Err(RunnerError::Invalid("--min-runs must be at least 1".into()));
        }
        let max_time_s = max_time_s.unwrap_or(AUTO_MAX_TIME_S);
        if !(max_time_s.is_finite() && max_time_s >= 0.0) {
            return Err(RunnerError::Invalid(format!(
                "--max-time {max_time_s}: give seconds, 0 or more"
            )));
        }
        Ok(Auto {
            min,
            max,
            max_time_s,
        })
    }

    /// Rounds in all, once the first took `round_s` seconds: as many as
    /// fit in the time budget at that pace, within the bounds; the
    /// minimum when a run of the first round failed (its time says
    /// nothing of a run's).
    pub fn count(&self, round_s: f64, failed: bool) -> u32 {
        if failed {
            return self.min;
        }
        let fit = if round_s > 0.0 {
            (self.max_time_s / round_s).floor().min(u32::MAX as f64) as u32
        } else {
            u32::MAX
        };
        fit.clamp(self.min, self.max)
    }
}

/// One run the runner does: a case of a configuration, recorded or a
/// warm-up.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// Index into [`Plan::configs`].
    pub config: usize,
    /// Index into [`Plan::cases`].
    pub case: usize,
    /// The repetition (from 1), or the warm-up's number (of
    /// [`Plan::warmup`]).
    pub index: u32,
    /// A warm-up: run, shown, not recorded.
    pub warmup: bool,
    /// The campaign cell this run is, written into its record.
    pub campaign: Option<CampaignTag>,
    /// Trace this run's scheduling events even when the plan does not
    /// trace every run ([`Plan::trace`]): a campaign traces the cells of
    /// the benchmarks and configurations that ask for it.
    pub trace: bool,
}

impl Plan {
    /// The default order: repetitions outermost, then configurations,
    /// then cases; each case's warm-ups just before its first recorded
    /// run. With `--runs auto`, the first round only: [`run_with`] adds
    /// the others once it has run.
    pub fn steps(&self) -> Vec<Step> {
        let rounds = match self.runs {
            Runs::Fixed(n) => n,
            Runs::Auto(_) => 1,
        };
        (1..=rounds).flat_map(|rep| self.round(rep)).collect()
    }

    /// Repetition `rep` of every case in every configuration, in order;
    /// the first round has each case's warm-ups just before its run.
    pub fn round(&self, rep: u32) -> Vec<Step> {
        let mut steps = Vec::new();
        for config in 0..self.configs.len() {
            for case in 0..self.cases.len() {
                let step = |index, warmup| Step {
                    config,
                    case,
                    index,
                    warmup,
                    campaign: None,
                    trace: false,
                };
                if rep == 1 {
                    steps.extend((1..=self.warmup).map(|w| step(w, true)));
                }
                steps.push(step(rep, false));
            }
        }
        steps
    }
}

/// How much the runner prints (`--quiet`, `--verbose`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Output {
    /// One line per run; no progress bar, no warnings or settings lines.
    Quiet,
    /// One line per run, each warning once, the settings applied, a
    /// progress bar on a terminal.
    #[default]
    Normal,
    /// Also each record's path after its run.
    Verbose,
    /// No run lines but a failed run's: a progress bar on a terminal, for
    /// a caller that prints its own summary (`numalab reproduce`).
    Progress,
}

/// How an invocation ended.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Every record written, with its path, in run order.
    pub records: Vec<(PathBuf, RunRecord)>,
    /// The user interrupted it.
    pub interrupted: bool,
}

impl Outcome {
    /// Runs that failed.
    pub fn failed(&self) -> Vec<&RunRecord> {
        self.records
            .iter()
            .map(|(_, r)| r)
            .filter(|r| !r.outcome.is_ok())
            .collect()
    }
}

/// Why the runner could not run (not a run's failure: those are records).
#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    #[error("{0}")]
    Invalid(String),
    #[error("results directory {dir}: {err}")]
    Results { dir: String, err: String },
    #[error(transparent)]
    Settings(#[from] knobs::KnobError),
    #[error(transparent)]
    Hook(#[from] hooks::HookError),
    #[error("{what}: {err}")]
    Backend { what: String, err: String },
    #[error("installing the Ctrl-C handler: {0}")]
    Signals(std::io::Error),
    /// A configuration's sched_ext scheduler could not be loaded, or
    /// ended before the runs were done.
    #[error("{0}")]
    Scheduler(String),
}

/// Check a plan against a backend before anything runs or is written.
pub fn check(plan: &Plan, backend: &dyn Backend) -> Result<(), RunnerError> {
    if plan.cases.is_empty() || plan.configs.is_empty() {
        return Err(RunnerError::Invalid("nothing to run".into()));
    }
    match plan.runs {
        Runs::Fixed(0) => return Err(RunnerError::Invalid("--runs must be at least 1".into())),
        Runs::Auto(a) if a.min == 0 || a.min > a.max => {
            return Err(RunnerError::Invalid(format!(
                "--runs auto: --min-runs {} and --max-runs {} make no count",
                a.min, a.max
            )))
        }
        _ => {}
    }
    for c in &plan.configs {
        check_config(c, &backend.settings_site())?;
        if let Some(scx) = &c.scx {
            let why = match backend.scx_site() {
                SettingsSite::Unsupported(why) => Some(why),
                SettingsSite::ThisMachine => {
                    numalab_linux::sched_ext::unsupported(&numalab_linux::sched_ext::root())
                }
                SettingsSite::Backend => None,
            };
            if let Some(why) = why {
                return Err(RunnerError::Invalid(format!("{}: {why}", scx.flag())));
            }
        }
        backend
            .check_settings(&c.knobs)
            .map_err(|e| RunnerError::Invalid(format!("{} {e}", label_of(c))))?;
    }
    for case in &plan.cases {
        if let Some(why) = backend.unsupported(case) {
            return Err(RunnerError::Invalid(why));
        }
    }
    numalab_record::ensure_writable_dir(&plan.results).map_err(|e| RunnerError::Results {
        dir: plan.results.display().to_string(),
        err: e.to_string(),
    })
}

/// Check one configuration's label and settings against where its
/// backend applies settings.
pub fn check_config(c: &Configuration, site: &SettingsSite) -> Result<(), RunnerError> {
    check_label(&c.label)?;
    // A hook is one shell command line: a control character in it is a
    // line break or an escape nobody typed on purpose.
    let scx_exec = match &c.scx {
        Some(numalab_linux::sched_ext::Scx::Exec { cmd }) => Some(cmd.clone()),
        _ => None,
    };
    for (flag, hook) in [
        ("--prepare", &c.prepare),
        ("--setup", &c.setup),
        ("--cleanup", &c.cleanup),
        ("--setup-bg", &c.setup_bg),
        ("--scx-exec", &scx_exec),
    ] {
        if let Some(h) = hook {
            numalab_linux::shell::check(flag, h)
                .map_err(|e| RunnerError::Invalid(e.to_string()))?;
        }
    }
    match (c.knobs.first(), site) {
        (Some(first), SettingsSite::Unsupported(why)) => {
            Err(RunnerError::Invalid(format!("{}: {why}", first.name())))
        }
        // Checked where they are applied, before the first run.
        (_, SettingsSite::Backend) => Ok(()),
        _ => Ok(knobs::check(&c.knobs, Path::new("/"))?),
    }
}

/// A label: a non-empty word of letters, digits, `_ - . + @ :` and
/// spaces, at most 64 characters (it names table columns and files).
pub fn check_label(label: &str) -> Result<(), RunnerError> {
    let ok = !label.trim().is_empty()
        && label.len() <= 64
        && label
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.+@: ".contains(c));
    if ok {
        Ok(())
    } else {
        Err(RunnerError::Invalid(format!(
            "--label {label:?}: use 1 to 64 letters, digits, spaces or _ - . + @ :"
        )))
    }
}

struct Active {
    config: usize,
    settings: Settings,
    /// Its sched_ext scheduler, loaded.
    scx: Option<ActiveScx>,
    /// Its `--setup-bg` service, running.
    service: Option<hooks::Service>,
}

/// A configuration's sched_ext scheduler, where it runs.
enum ActiveScx {
    /// On this machine, run by the runner.
    Here(Box<scx::Loaded>),
    /// On the backend's machine (a guest): what it said once enabled.
    Backend(numalab_linux::sched_ext::Status),
}

impl ActiveScx {
    fn ops(&self) -> &str {
        match self {
            ActiveScx::Here(l) => &l.status.ops,
            ActiveScx::Backend(s) => &s.ops,
        }
    }

    fn enable_seq(&self) -> u64 {
        match self {
            ActiveScx::Here(l) => l.status.enable_seq,
            ActiveScx::Backend(s) => s.enable_seq,
        }
    }
}

impl Active {
    /// Its service stopped, its scheduler unloaded, then its settings
    /// restored.
    fn end(mut self, backends: &mut dyn Backends, output: Output) -> Result<(), RunnerError> {
        if let Some(s) = self.service.take() {
            s.stop(hooks::STOP_GRACE);
        }
        // The settings are restored even if the scheduler could not be
        // unloaded cleanly; the first error is returned after.
        let exit = match self.scx.take() {
            Some(ActiveScx::Here(l)) => Ok(l.stop()),
            Some(ActiveScx::Backend(_)) => backends.get(self.config).and_then(|b| {
                b.stop_scx().map_err(|e| {
                    RunnerError::Scheduler(format!("unloading the sched_ext scheduler: {e}"))
                })
            }),
            None => Ok(None),
        };
        if let Ok(Some(x)) = &exit {
            if x.is_error() {
                numalab_linux::errln!(
                    "numalab: warning: the sched_ext scheduler ended with {}",
                    x.describe()
                );
            }
            // What the policy did (numalab's nest: the tasks each of its
            // steps placed), once per load.
            if !x.stats.is_empty() && output != Output::Quiet {
                numalab_linux::errln!(
                    "numalab: sched_ext scheduler unloaded; it counted {}",
                    x.describe_stats()
                );
            }
        }
        let restored = self.settings.undo(backends, self.config);
        exit.and(restored)
    }

    /// Whether its service and its scheduler still run: the error saying
    /// how one ended.
    /// `backend` is the configuration's.
    fn service_ended(&mut self, backend: &mut dyn Backend) -> Option<RunnerError> {
        if let Some(e) = self.service.as_mut().and_then(|s| s.check().err()) {
            return Some(e.into());
        }
        let why = match self.scx.as_mut()? {
            ActiveScx::Here(l) => l.ended(),
            ActiveScx::Backend(_) => backend.scx_ended(),
        };
        why.map(RunnerError::Scheduler)
    }
}

/// What a configuration's machine settings became.
enum Settings {
    None,
    /// Applied to this machine; restored when dropped or restored.
    Host(knobs::Applied),
    /// Applied by the backend to its own machine: the values read back.
    Backend(std::collections::BTreeMap<String, String>),
}

impl Settings {
    fn values(&self) -> std::collections::BTreeMap<String, String> {
        match self {
            Settings::None => Default::default(),
            Settings::Host(a) => a.values().clone(),
            Settings::Backend(v) => v.clone(),
        }
    }

    /// Undo: restore this machine's files, or ask configuration
    /// `config`'s backend to undo its own.
    fn undo(self, backends: &mut dyn Backends, config: usize) -> Result<(), RunnerError> {
        match self {
            Settings::None => Ok(()),
            Settings::Host(a) => Ok(a.restore()?),
            Settings::Backend(_) => backends
                .get(config)?
                .apply_settings(&[])
                .map(|_| ())
                .map_err(|e| RunnerError::Backend {
                    what: "restoring the settings".into(),
                    err: e.to_string(),
                }),
        }
    }
}

/// Apply a configuration's settings where the backend says they go.
fn apply_settings(
    config: &Configuration,
    ci: usize,
    plan: &Plan,
    backends: &mut dyn Backends,
) -> Result<Settings, RunnerError> {
    if config.knobs.is_empty() {
        return Ok(Settings::None);
    }
    let backend = backends.get(ci)?;
    match backend.settings_site() {
        SettingsSite::ThisMachine => Ok(Settings::Host(knobs::apply_waiting(
            &config.knobs,
            Path::new("/"),
            plan.guard.as_ref(),
            plan.wait,
        )?)),
        SettingsSite::Backend => backend
            .apply_settings(&config.knobs)
            .map(Settings::Backend)
            .map_err(|e| RunnerError::Backend {
                what: format!("applying the settings of {}", label_of(config)),
                err: e.to_string(),
            }),
        SettingsSite::Unsupported(why) => Err(RunnerError::Invalid(why)),
    }
}

/// Run the plan. Per-run lines go to standard output, progress to
/// standard error.
pub fn run(plan: &Plan, backend: &mut dyn Backend) -> Result<Outcome, RunnerError> {
    check(plan, backend)?;
    let interrupt = Interrupt::install().map_err(RunnerError::Signals)?;
    run_with(plan, backend, &interrupt)
}

/// [`run`] with a given interrupt flag (tests set it themselves).
pub fn run_with(
    plan: &Plan,
    backend: &mut dyn Backend,
    interrupt: &Interrupt,
) -> Result<Outcome, RunnerError> {
    let auto = match plan.runs {
        Runs::Auto(a) => Some(a),
        Runs::Fixed(_) => None,
    };
    run_planned(plan, plan.steps(), auto, &mut One(backend), interrupt)
}

/// Run `steps` of `plan` in the order given, each configuration's runs
/// on the backend `backends` gives for it. The caller has checked the
/// plan ([`check`], [`check_config`]).
pub fn run_steps(
    plan: &Plan,
    steps: &[Step],
    backends: &mut dyn Backends,
    interrupt: &Interrupt,
) -> Result<Outcome, RunnerError> {
    run_planned(plan, steps.to_vec(), None, backends, interrupt)
}

/// Where `--runs auto` stands: the first round runs, then the count is
/// decided and the other rounds are added.
struct AutoState {
    auto: Auto,
    /// Steps of the first round (its warm-ups included).
    first_round: usize,
    /// Seconds the first round's recorded runs took, hooks included.
    round_s: f64,
    /// A run of the first round failed.
    failed: bool,
    /// The count, once decided.
    decided: Option<u32>,
}

/// [`run_steps`], and with `auto` the rounds after the first added once
/// the first has run.
fn run_planned(
    plan: &Plan,
    mut steps: Vec<Step>,
    auto: Option<Auto>,
    backends: &mut dyn Backends,
    interrupt: &Interrupt,
) -> Result<Outcome, RunnerError> {
    let mut auto = auto.map(|a| AutoState {
        auto: a,
        first_round: steps.len(),
        round_s: 0.0,
        failed: false,
        decided: None,
    });
    let (planned, total, total_text) = planned_runs(plan, steps.len(), auto.as_ref());
    let mut inv = Invocation {
        plan,
        interrupt,
        keys: numalab_bench::varying_keys(&plan.cases),
        bar: progress::Bar::new(total, plan.output != Output::Quiet),
        hook_log: hooks::HookLog::new(&plan.results),
        out: Outcome::default(),
        active: None,
        set_up: vec![false; plan.configs.len()],
        warned: std::collections::BTreeSet::new(),
        planned,
        total_text,
    };
    let mut error: Option<RunnerError> = None;
    // The run an interrupt cut short.
    let mut cut_short: Option<String> = None;

    let mut n = 0;
    while n < steps.len() {
        let st = steps[n].clone();
        n += 1;
        match inv.step(&st, n as u64, backends) {
            // --runs auto: when the first round has run, decide the count,
            // add the rounds and give the first round's records that count.
            Ok(Some(started)) => {
                let Some(a) = auto.as_mut().filter(|a| a.decided.is_none()) else {
                    continue;
                };
                if let Err(e) = inv.decide_count(a, started, n, &mut steps) {
                    error = Some(e);
                    break;
                }
            }
            Ok(None) => {}
            Err(Stop::Interrupted(head)) => {
                inv.out.interrupted = true;
                cut_short = head;
                break;
            }
            Err(Stop::Failed(e)) => {
                error = Some(e);
                break;
            }
        }
    }
    inv.bar.finish();
    finish(
        plan,
        inv.active,
        &inv.set_up,
        backends,
        &inv.hook_log,
        inv.out,
        cut_short,
        error,
    )
}

/// The runs planned, as each record's `repetition.of` says (with --runs
/// auto the minimum until the count is decided), and the steps in all,
/// with how the run lines show them (with --runs auto a range until the
/// count is decided).
fn planned_runs(plan: &Plan, steps: usize, auto: Option<&AutoState>) -> (u32, u64, String) {
    let per_round = (plan.configs.len() * plan.cases.len()) as u64;
    let planned = match (plan.runs, auto) {
        (_, Some(a)) => a.auto.min,
        (Runs::Fixed(n), None) => n,
        (Runs::Auto(a), None) => a.min,
    };
    let mut total = steps as u64;
    let mut total_text = total.to_string();
    if let Some(a) = auto {
        let first = total;
        let extra = |rounds: u32| first + (rounds as u64).saturating_sub(1) * per_round;
        total = extra(a.auto.min);
        total_text = if a.auto.min == a.auto.max {
            total.to_string()
        } else {
            format!("{total}..{}", extra(a.auto.max))
        };
    }
    (planned, total, total_text)
}

/// Why an invocation stops before its last step.
enum Stop {
    /// The user interrupted it: during the run with this head, if one was
    /// cut short.
    Interrupted(Option<String>),
    Failed(RunnerError),
}

impl From<RunnerError> for Stop {
    fn from(e: RunnerError) -> Stop {
        Stop::Failed(e)
    }
}

/// What an invocation carries from one step to the next.
struct Invocation<'a> {
    plan: &'a Plan,
    interrupt: &'a Interrupt,
    /// The keys the cases differ in, for their titles.
    keys: Vec<String>,
    bar: progress::Bar,
    hook_log: hooks::HookLog,
    out: Outcome,
    active: Option<Active>,
    /// The configurations whose `--setup` has run.
    set_up: Vec<bool>,
    /// Warnings already printed: each once per invocation.
    warned: std::collections::BTreeSet<String>,
    /// The runs planned, as each record's `repetition.of` says: with
    /// --runs auto the minimum until the count is decided.
    planned: u32,
    /// Steps in all, as the run lines show it: with --runs auto a range
    /// until the count is decided.
    total_text: String,
}

impl Invocation<'_> {
    /// Run step `st`, the `step`th: its record written unless it is a
    /// warm-up. When it was recorded, the time it started.
    fn step(
        &mut self,
        st: &Step,
        step: u64,
        backends: &mut dyn Backends,
    ) -> Result<Option<std::time::Instant>, Stop> {
        let plan = self.plan;
        let (ci, config) = (st.config, &plan.configs[st.config]);
        let case = &plan.cases[st.case];
        if self.interrupt.is_set() {
            return Err(Stop::Interrupted(None));
        }
        // Make `config` the active configuration.
        if self.active.as_ref().map(|a| a.config) != Some(ci) {
            self.make_active(ci, backends)?;
        }
        let backend = backends.get(ci)?;
        // A service that ended stops the invocation before its next run.
        if let Some(e) = self.active.as_mut().and_then(|a| a.service_ended(backend)) {
            return Err(e.into());
        }
        let applied = record_applied(config, plan.warmup, self.active.as_ref());
        let head = self.head(st, step);
        let started = std::time::Instant::now();
        let (mut rec, service_ended) = self.run_case(st, step, &head, backend)?;
        self.bar.done(step);
        if matches!(plan.output, Output::Quiet | Output::Progress) {
            // Every warning counts as printed: only run lines.
            self.warned.extend(rec.warnings.iter().cloned());
        }
        let say_run = plan.output != Output::Progress || !rec.outcome.is_ok();
        if st.warmup {
            if say_run {
                self.bar.println(&run_line(&head, &rec, &mut self.warned));
            }
            return match service_ended {
                Some(e) => Err(e.into()),
                None => Ok(None),
            };
        }
        complete(&mut rec, case, plan, &applied);
        rec.campaign = st.campaign.clone();
        self.write_record(rec, &head, say_run)?;
        if let Some(e) = service_ended {
            return Err(e.into());
        }
        Ok(Some(started))
    }

    /// Make configuration `ci` the active one ([`activate`]), saying the
    /// settings applied.
    fn make_active(&mut self, ci: usize, backends: &mut dyn Backends) -> Result<(), RunnerError> {
        let plan = self.plan;
        let settings = activate(
            ci,
            plan,
            &mut self.active,
            &mut self.set_up,
            backends,
            &self.hook_log,
            self.interrupt,
        )?;
        if !matches!(plan.output, Output::Quiet | Output::Progress) {
            for (k, v) in settings {
                self.bar
                    .note(&format!("numalab: {} {k}={v}", label_of(&plan.configs[ci])));
            }
        }
        Ok(())
    }

    /// The head of step `st`'s run line: `[step/total] label: title what`.
    fn head(&self, st: &Step, step: u64) -> String {
        let plan = self.plan;
        let config = &plan.configs[st.config];
        let title = plan.cases[st.case].title(&self.keys);
        let what = if st.warmup {
            format!("warmup {}/{}", st.index, plan.warmup)
        } else {
            format!("#{}", st.index)
        };
        format!(
            "[{step}/{}] {}{title} {what}",
            self.total_text,
            label_prefix(plan, config)
        )
    }

    /// Run step `st`'s case on `backend`, after the configuration's
    /// `--prepare`: its record, failed if the configuration's service or
    /// scheduler ended during the run, and the error saying how that one
    /// ended.
    fn run_case(
        &mut self,
        st: &Step,
        step: u64,
        head: &str,
        backend: &mut dyn Backend,
    ) -> Result<(RunRecord, Option<RunnerError>), Stop> {
        let plan = self.plan;
        let interrupt = self.interrupt;
        let config = &plan.configs[st.config];
        let case = &plan.cases[st.case];
        let repetition = Repetition {
            index: st.index,
            of: if st.warmup { plan.warmup } else { self.planned },
        };
        self.bar.start(step - 1, head);
        let bar = &self.bar;
        let progress = |f: f64| bar.within(step - 1, f);
        let ctx = RunContext {
            label: &config.label,
            repetition,
            interval: plan.interval,
            interrupt,
            results: &plan.results,
            progress: &progress,
            trace: plan.trace || st.trace,
        };
        let result = match &config.prepare {
            Some(cmd) => match hooks::run(
                "prepare",
                cmd,
                config.hook_dir.as_deref(),
                Some(&self.hook_log),
                interrupt,
            ) {
                Ok(()) => backend.run(case, &ctx),
                Err(hooks::HookError::Interrupted { .. }) => Err(RunError::Interrupted),
                Err(e) => Ok(backend.failed_record(case, &ctx, &e.to_string())),
            },
            None => backend.run(case, &ctx),
        };
        let mut rec = match result {
            // A run that failed while an interrupt arrived was failed by
            // it (Ctrl-C or scancel signal the benchmark's tasks too): an
            // interrupted run, not a result. The signal may reach numalab
            // a moment after its tasks.
            Ok(r) if !r.outcome.is_ok() && interrupted_now(interrupt) => {
                return Err(Stop::Interrupted(Some(head.to_string())));
            }
            Ok(r) => r,
            Err(RunError::Interrupted) => {
                return Err(Stop::Interrupted(Some(head.to_string())));
            }
            Err(RunError::Failed(e)) => {
                return Err(Stop::Failed(RunnerError::Backend {
                    what: head.to_string(),
                    err: e,
                }));
            }
        };
        // A service that ended during the run: the run did not run with
        // it, so it failed, and the invocation stops after its record.
        let service_ended = self.active.as_mut().and_then(|a| a.service_ended(backend));
        if let Some(e) = &service_ended {
            if rec.outcome.is_ok() {
                numalab_record::remove_side_files(&plan.results, &rec.id);
                rec = backend.failed_record(case, &ctx, &e.to_string());
            }
        }
        Ok((rec, service_ended))
    }

    /// Write a recorded run's record and say so (its run line when
    /// `say_run`).
    fn write_record(
        &mut self,
        rec: RunRecord,
        head: &str,
        say_run: bool,
    ) -> Result<(), RunnerError> {
        let plan = self.plan;
        match numalab_record::write_atomic(&plan.results, &rec) {
            Ok(path) => {
                if say_run {
                    self.bar.println(&run_line(head, &rec, &mut self.warned));
                }
                if plan.output == Output::Verbose {
                    self.bar.println(&format!("    record: {}", path.display()));
                }
                self.out.records.push((path, rec));
                self.hook_log.flush();
                Ok(())
            }
            Err(e) => {
                // A side file never stands without its record.
                numalab_record::remove_side_files(&plan.results, &rec.id);
                Err(RunnerError::Results {
                    dir: plan.results.display().to_string(),
                    err: format!("writing the record of {head}: {e}"),
                })
            }
        }
    }

    /// --runs auto, after a recorded run of the first round (`n` steps
    /// done): its time counted; when the first round has run, the count
    /// decided, its rounds added to `steps` and the first round's records
    /// given that count.
    fn decide_count(
        &mut self,
        a: &mut AutoState,
        started: std::time::Instant,
        n: usize,
        steps: &mut Vec<Step>,
    ) -> Result<(), RunnerError> {
        let plan = self.plan;
        a.round_s += started.elapsed().as_secs_f64();
        a.failed |= !self
            .out
            .records
            .last()
            .is_some_and(|(_, r)| r.outcome.is_ok());
        if n < a.first_round {
            return Ok(());
        }
        let count = a.auto.count(a.round_s, a.failed);
        a.decided = Some(count);
        self.planned = count;
        for rep in 2..=count {
            steps.extend(plan.round(rep));
        }
        let total = steps.len() as u64;
        self.total_text = total.to_string();
        self.bar.set_runs(total);
        if !matches!(plan.output, Output::Quiet | Output::Progress) {
            for l in numalab_linux::out::wrap(&auto_line(a, count), 80) {
                self.bar.note(&l);
            }
        }
        set_count(&mut self.out.records, count, &plan.results)
    }
}

/// Make configuration `ci` the active one: the previous one's service
/// stopped and settings restored, then `ci`'s settings applied, its
/// `--setup` run the first time, its `--setup-bg` service started. The
/// settings' values, for the caller to print.
fn activate(
    ci: usize,
    plan: &Plan,
    active: &mut Option<Active>,
    set_up: &mut [bool],
    backends: &mut dyn Backends,
    hook_log: &hooks::HookLog,
    interrupt: &Interrupt,
) -> Result<std::collections::BTreeMap<String, String>, RunnerError> {
    let config = &plan.configs[ci];
    if let Some(a) = active.take() {
        a.end(backends, plan.output)?;
    }
    let settings = apply_settings(config, ci, plan, backends)?;
    let values = settings.values();
    let a = active.insert(Active {
        config: ci,
        settings,
        scx: None,
        service: None,
    });
    if !set_up[ci] {
        set_up[ci] = true;
        if let Some(cmd) = &config.setup {
            hooks::run(
                "setup",
                cmd,
                config.hook_dir.as_deref(),
                Some(hook_log),
                interrupt,
            )?;
        }
    }
    if let Some(want) = &config.scx {
        a.scx = Some(start_scx(want, ci, backends, hook_log)?);
    }
    if let Some(cmd) = &config.setup_bg {
        a.service = Some(hooks::Service::start(
            cmd,
            config.hook_dir.as_deref(),
            Some(hook_log),
        )?);
    }
    Ok(values)
}

/// Load configuration `ci`'s scheduler where its backend says.
fn start_scx(
    want: &numalab_linux::sched_ext::Scx,
    ci: usize,
    backends: &mut dyn Backends,
    hook_log: &hooks::HookLog,
) -> Result<ActiveScx, RunnerError> {
    let backend = backends.get(ci)?;
    match backend.scx_site() {
        SettingsSite::ThisMachine => {
            let exe = match numalab_linux::supervise::exe() {
                Some(e) => e.to_path_buf(),
                None => std::env::current_exe().map_err(|e| {
                    RunnerError::Scheduler(format!("{}: numalab's path: {e}", want.flag()))
                })?,
            };
            let root = numalab_linux::sched_ext::root();
            scx::Loaded::start(want, &exe, &root, Some(hook_log))
                .map(|l| ActiveScx::Here(Box::new(l)))
                .map_err(|e| RunnerError::Scheduler(e.to_string()))
        }
        SettingsSite::Backend => backend
            .start_scx(want)
            .map(ActiveScx::Backend)
            .map_err(|e| RunnerError::Scheduler(e.to_string())),
        SettingsSite::Unsupported(why) => {
            Err(RunnerError::Scheduler(format!("{}: {why}", want.flag())))
        }
    }
}

/// The end of an invocation, however it came: the active configuration's
/// service stopped and settings restored, then the cleanups of every
/// configuration that was set up; what an interrupt or an error kept,
/// said; the outcome, or the first error.
#[allow(clippy::too_many_arguments)]
fn finish(
    plan: &Plan,
    mut active: Option<Active>,
    set_up: &[bool],
    backends: &mut dyn Backends,
    hook_log: &hooks::HookLog,
    out: Outcome,
    cut_short: Option<String>,
    mut error: Option<RunnerError>,
) -> Result<Outcome, RunnerError> {
    // The service stopped and the settings back, then the cleanups,
    // whatever happened.
    if let Some(a) = active.take() {
        if let Err(e) = a.end(backends, plan.output) {
            keep_first(&mut error, e);
        }
    }
    let cleanup_interrupt = Interrupt::never();
    for (ci, config) in plan.configs.iter().enumerate() {
        if let (true, Some(cmd)) = (set_up[ci], &config.cleanup) {
            if let Err(e) = hooks::run(
                "cleanup",
                cmd,
                config.hook_dir.as_deref(),
                Some(hook_log),
                &cleanup_interrupt,
            ) {
                keep_first(&mut error, e.into());
            }
        }
    }
    hook_log.flush();
    if out.interrupted {
        let during = cut_short
            .map(|h| format!(" during {h}"))
            .unwrap_or_default();
        numalab_linux::errln!(
            "numalab: interrupted{during}: every task stopped; {} finished run(s) kept in {}",
            out.records.len(),
            plan.results.display()
        );
    }
    if let Some(e) = error {
        if !out.records.is_empty() {
            numalab_linux::errln!(
                "numalab: {} finished run(s) kept in {}",
                out.records.len(),
                plan.results.display()
            );
        }
        return Err(e);
    }
    Ok(out)
}

/// The first error is returned (and printed by the caller); a later one
/// is printed here, so it is said once.
fn keep_first(error: &mut Option<RunnerError>, e: RunnerError) {
    match error {
        Some(_) => numalab_linux::errln!("numalab: error: {e}"),
        None => *error = Some(e),
    }
}

/// What `--runs auto` decided and why, for a status line.
fn auto_line(a: &AutoState, count: u32) -> String {
    let why = if a.failed {
        "a run of the first round failed, so its time says nothing: the minimum".to_string()
    } else {
        format!(
            "the first round took {:.2} s; --max-time {} s, --min-runs {}, --max-runs {}",
            a.round_s, a.auto.max_time_s, a.auto.min, a.auto.max
        )
    };
    format!("numalab: --runs auto: {count} runs of every case ({why})")
}

/// Give the records written so far (the first round's) the count decided
/// for `--runs auto` as their `repetition.of`, writing each again.
fn set_count(
    records: &mut [(PathBuf, RunRecord)],
    count: u32,
    results: &Path,
) -> Result<(), RunnerError> {
    for (path, rec) in records.iter_mut() {
        if rec.repetition.of == count {
            continue;
        }
        rec.repetition.of = count;
        *path = numalab_record::write_atomic(results, rec).map_err(|e| RunnerError::Results {
            dir: results.display().to_string(),
            err: format!("writing the record {} again: {e}", path.display()),
        })?;
    }
    Ok(())
}

/// Whether an interrupt is set, or arrives within 100 ms.
fn interrupted_now(interrupt: &Interrupt) -> bool {
    for _ in 0..10 {
        if interrupt.is_set() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    interrupt.is_set()
}

fn label_of(c: &Configuration) -> String {
    format!("label {:?}:", c.label)
}

fn label_prefix(plan: &Plan, c: &Configuration) -> String {
    if plan.configs.len() > 1 {
        format!("{}: ", c.label)
    } else {
        String::new()
    }
}

fn record_applied(c: &Configuration, warmup: u32, active: Option<&Active>) -> Applied {
    Applied {
        settings: active.map(|a| a.settings.values()).unwrap_or_default(),
        prepare: c.prepare.clone(),
        setup: c.setup.clone(),
        cleanup: c.cleanup.clone(),
        setup_bg: c.setup_bg.clone(),
        scx: c
            .scx
            .as_ref()
            .zip(active.and_then(|a| a.scx.as_ref()))
            .map(|(want, on)| numalab_record::ScxApplied {
                scheduler: want.name().to_string(),
                exec: matches!(want, numalab_linux::sched_ext::Scx::Exec { .. }),
                ops: on.ops().to_string(),
                enable_seq: on.enable_seq(),
            }),
        warmup,
        command_line: std::env::args().collect(),
    }
}

/// What only the runner knows, added before the record is written.
fn complete(rec: &mut RunRecord, case: &Case, plan: &Plan, applied: &Applied) {
    rec.applied = applied.clone();
    if let Some(w) = few_samples(rec) {
        rec.warnings.push(w);
    }
    let details = rec.backend.details_mut();
    for (k, v) in case.details() {
        details.entry(k).or_insert(v);
    }
    if !plan.notes.is_empty() {
        details
            .entry("sizing".into())
            .or_insert_with(|| plan.notes.clone().into());
    }
}

/// A sampled run with fewer samples than this says so: its convergence
/// time and charts over time rest on too few points.
pub const MIN_SAMPLES: usize = 10;

/// Runs shorter than this have no time series to speak of (a spin of
/// 10 ms): no warning for their few samples.
pub const MIN_SERIES_S: f64 = 1.0;

/// The warning of a finished, sampled run of at least [`MIN_SERIES_S`]
/// with fewer than [`MIN_SAMPLES`] samples.
fn few_samples(rec: &RunRecord) -> Option<String> {
    let n = rec.series.samples.len();
    let every = rec.series.interval_s;
    let long = rec.metric("elapsed_s").is_some_and(|e| e >= MIN_SERIES_S);
    (rec.outcome.is_ok() && long && every > 0.0 && n < MIN_SAMPLES).then(|| {
        format!(
            "only {n} sample(s), every {every:.3} s: convergence times and charts over time rest on fewer than {MIN_SAMPLES} (a longer run or a smaller --interval gives more)"
        )
    })
}

/// One line per finished run, within 80 columns: where it stands, its
/// outcome and its main times; a warning not in `warned` yet and a
/// failure's reason follow, wrapped within 80 columns.
pub fn run_line(
    head: &str,
    rec: &RunRecord,
    warned: &mut std::collections::BTreeSet<String>,
) -> String {
    let status = if rec.outcome.is_ok() { "ok" } else { "FAILED" };
    let m = |k: &str| rec.metric(k);
    let mut times = Vec::new();
    if let Some(e) = m("elapsed_s") {
        times.push(format!("{e:.2} s"));
    }
    if let Some(u) = m("user_s") {
        times.push(format!("user {u:.2} s"));
    }
    if let Some(b) =
        m("bandwidth_gbs").filter(|_| rec.benchmark == numalab_bench::mem::BENCHMARK.name)
    {
        times.push(format!("{b:.2} GB/s"));
    }
    if let Some(h) = m("hackbench_s") {
        if rec.benchmark != numalab_bench::placement::HACKBENCH.name {
            times.push(format!("H {h:.2} s"));
        }
    }
    let tail = format!("{status}  {}", times.join("  "));
    let mut s = if head.len() + 2 + tail.len() <= 80 {
        format!("{head}: {tail}")
    } else {
        format!("{head}:\n    {tail}")
    };
    let mut more = |text: String| {
        for l in numalab_linux::out::wrap(&format!("    {text}"), 80) {
            s.push('\n');
            s.push_str(&l);
        }
    };
    for w in &rec.warnings {
        if warned.insert(w.clone()) {
            more(format!("warning: {w}"));
        }
    }
    if let Some(r) = &rec.outcome.reason {
        more(format!("failed: {}", r.lines().next().unwrap_or(r)));
    }
    s
}

mod progress {
    //! The invocation's one progress bar: position in thousandths of a
    //! run, so the ETA counts the current run's own progress.

    use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

    pub struct Bar(ProgressBar);

    impl Bar {
        /// A bar over `runs` runs, drawn on standard error when `shown`
        /// (and standard error is a terminal).
        pub fn new(runs: u64, shown: bool) -> Bar {
            let target = if shown {
                ProgressDrawTarget::stderr()
            } else {
                ProgressDrawTarget::hidden()
            };
            let pb = ProgressBar::with_draw_target(Some(runs.max(1) * 1000), target);
            pb.set_style(
                ProgressStyle::with_template("{wide_msg} {bar:12} {percent:>3}% ETA {eta}")
                    .expect("valid template"),
            );
            Bar(pb)
        }

        pub fn start(&self, done: u64, msg: &str) {
            self.0.set_message(msg.to_string());
            self.0.set_position(done * 1000);
        }

        pub fn within(&self, done: u64, fraction: f64) {
            let f = if fraction.is_finite() {
                fraction.clamp(0.0, 0.999)
            } else {
                0.0
            };
            self.0.set_position(done * 1000 + (f * 1000.0) as u64);
        }

        pub fn done(&self, done: u64) {
            self.0.set_position(done * 1000);
        }

        /// The invocation now has `runs` runs in all.
        pub fn set_runs(&self, runs: u64) {
            self.0.set_length(runs.max(1) * 1000);
        }

        /// A line on standard error, above the bar.
        pub fn note(&self, line: &str) {
            self.0.suspend(|| numalab_linux::errln!("{line}"));
        }

        /// A line on standard output, above the bar.
        pub fn println(&self, line: &str) {
            self.0.suspend(|| numalab_linux::outln!("{line}"));
        }

        pub fn finish(&self) {
            self.0.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod mock_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_bounds_default_yield_and_refuse() {
        let a = Auto::new(None, None, None).unwrap();
        assert_eq!((a.min, a.max, a.max_time_s), (5, 30, 300.0));
        // A default bound yields to the one given.
        let a = Auto::new(None, Some(3), None).unwrap();
        assert_eq!((a.min, a.max), (3, 3));
        let a = Auto::new(Some(40), None, Some(10.0)).unwrap();
        assert_eq!((a.min, a.max, a.max_time_s), (40, 40, 10.0));
        // Two given the wrong way round, or nothing to run.
        let e = Auto::new(Some(5), Some(3), None).unwrap_err().to_string();
        assert_eq!(e, "--min-runs 5 is more than --max-runs 3");
        assert!(Auto::new(Some(0), None, None).is_err());
        assert!(Auto::new(None, None, Some(-1.0)).is_err());
        assert!(Auto::new(None, None, Some(f64::NAN)).is_err());
    }

    #[test]
    fn auto_count_fits_the_budget_within_the_bounds() {
        let a = Auto::new(Some(2), Some(4), Some(10.0)).unwrap();
        assert_eq!(a.count(0.5, false), 4); // 20 fit: the most
        assert_eq!(a.count(3.0, false), 3); // 3 fit in 10 s
        assert_eq!(a.count(3.4, false), 2); // 2.9 fit: rounds are whole
        assert_eq!(a.count(60.0, false), 2); // none fit: the fewest
        assert_eq!(a.count(0.0, false), 4);
        assert_eq!(a.count(0.5, true), 2); // a failed run: the fewest
        let none = Auto::new(Some(2), Some(4), Some(0.0)).unwrap();
        assert_eq!(none.count(0.01, false), 2);
    }

    #[test]
    fn auto_plans_the_first_round_only() {
        let case = numalab_bench::Case::Command(numalab_bench::command::Params {
            name: "x".into(),
            argv: vec!["true".into()],
            cwd: None,
        });
        let mut plan = Plan {
            configs: vec![Configuration::default(); 2],
            cases: vec![case.clone(), case],
            runs: Runs::Auto(Auto::new(None, None, None).unwrap()),
            warmup: 1,
            interval: Interval::Off,
            results: PathBuf::new(),
            notes: Vec::new(),
            guard: None,
            wait: false,
            output: Output::Quiet,
            trace: false,
        };
        let first = plan.steps();
        // Each of the 4 cells: its warm-up, then its first run.
        assert_eq!(first.len(), 8);
        assert!(first.iter().all(|s| s.index == 1));
        assert_eq!(plan.round(2).len(), 4);
        assert!(plan.round(2).iter().all(|s| !s.warmup && s.index == 2));
        plan.runs = Runs::Fixed(3);
        assert_eq!(plan.steps().len(), 4 + 3 * 4);
    }
}
