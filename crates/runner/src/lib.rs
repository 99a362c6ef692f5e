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
//!   that run). What was applied is written into every record.
//! - **One record per run, written once.** The backend returns the
//!   record; the runner adds what only it knows (the configuration's
//!   settings and hooks, the sizing notes, how the case was realised) and
//!   writes it atomically before the next run starts. Nothing is derived
//!   across runs here: ratios, positions between bounds and summaries are
//!   the report layer's, computed from the records.
//! - **Progress.** One bar on standard error for the whole invocation,
//!   with an ETA from the runs done and the current run's own progress;
//!   one line per finished run on standard output; at the end a summary
//!   rendered by numalab-report from the records just written.
//! - **Ctrl-C and SIGTERM** set a flag ([`Interrupt`]) that the backend
//!   polls: it kills and reaps every task and returns; the runner keeps
//!   every finished record, restores the settings, says how many runs were
//!   kept and reports [`Outcome::interrupted`].

pub mod backend;
pub mod hooks;
pub mod interrupt;
pub mod interval;

pub use backend::{Backend, Backends, One, RunContext, RunError, SettingsSite};
pub use interrupt::{Interrupt, Interrupted};
pub use interval::Interval;

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
}

/// Everything one invocation runs.
pub struct Plan {
    pub configs: Vec<Configuration>,
    pub cases: Vec<Case>,
    /// Recorded repetitions of every case in every configuration.
    pub runs: u32,
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
    /// How much the runner prints.
    pub output: Output,
    /// Trace every run's scheduling events (`--trace`).
    pub trace: bool,
}

/// One run the runner does: a case of a configuration, recorded or a
/// warm-up.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// Index into [`Plan::configs`].
    pub config: usize,
    /// Index into [`Plan::cases`].
    pub case: usize,
    /// The repetition (from 1; of [`Plan::runs`]), or the warm-up's
    /// number (of [`Plan::warmup`]).
    pub index: u32,
    /// A warm-up: run, shown, not recorded.
    pub warmup: bool,
    /// The campaign cell this run is, written into its record.
    pub campaign: Option<CampaignTag>,
}

impl Plan {
    /// The default order: repetitions outermost, then configurations,
    /// then cases; each case's warm-ups just before its first recorded
    /// run.
    pub fn steps(&self) -> Vec<Step> {
        let mut steps = Vec::new();
        for rep in 1..=self.runs {
            for config in 0..self.configs.len() {
                for case in 0..self.cases.len() {
                    let step = |index, warmup| Step {
                        config,
                        case,
                        index,
                        warmup,
                        campaign: None,
                    };
                    if rep == 1 {
                        steps.extend((1..=self.warmup).map(|w| step(w, true)));
                    }
                    steps.push(step(rep, false));
                }
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
}

/// Check a plan against a backend before anything runs or is written.
pub fn check(plan: &Plan, backend: &dyn Backend) -> Result<(), RunnerError> {
    if plan.cases.is_empty() || plan.configs.is_empty() {
        return Err(RunnerError::Invalid("nothing to run".into()));
    }
    if plan.runs == 0 {
        return Err(RunnerError::Invalid("--runs must be at least 1".into()));
    }
    for c in &plan.configs {
        check_config(c, &backend.settings_site())?;
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
        SettingsSite::ThisMachine => Ok(Settings::Host(knobs::apply(
            &config.knobs,
            Path::new("/"),
            plan.guard.as_ref(),
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
    run_steps(plan, &plan.steps(), &mut One(backend), interrupt)
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
    let keys = numalab_bench::varying_keys(&plan.cases);
    let nconf = plan.configs.len();
    let total = steps.len() as u64;
    let bar = progress::Bar::new(total, plan.output != Output::Quiet);
    let mut out = Outcome::default();
    let mut active: Option<Active> = None;
    let mut set_up = vec![false; nconf];
    let mut error: Option<RunnerError> = None;
    // Warnings already printed: each once per invocation.
    let mut warned = std::collections::BTreeSet::new();
    // The run an interrupt cut short.
    let mut cut_short: Option<String> = None;

    for (n, st) in steps.iter().enumerate() {
        let step = n as u64 + 1;
        let (ci, config) = (st.config, &plan.configs[st.config]);
        let case = &plan.cases[st.case];
        if interrupt.is_set() {
            out.interrupted = true;
            break;
        }
        // Make `config` the active configuration.
        if active.as_ref().map(|a| a.config) != Some(ci) {
            if let Some(a) = active.take() {
                if let Err(e) = a.settings.undo(backends, a.config) {
                    error = Some(e);
                    break;
                }
            }
            let settings = match apply_settings(config, ci, plan, backends) {
                Ok(s) => s,
                Err(e) => {
                    error = Some(e);
                    break;
                }
            };
            if plan.output != Output::Quiet {
                for (k, v) in settings.values() {
                    bar.note(&format!("numalab: {} {k}={v}", label_of(config)));
                }
            }
            active = Some(Active {
                config: ci,
                settings,
            });
            if !set_up[ci] {
                set_up[ci] = true;
                if let Some(cmd) = &config.setup {
                    if let Err(e) = hooks::run("setup", cmd, interrupt) {
                        error = Some(e.into());
                        break;
                    }
                }
            }
        }
        let backend = match backends.get(ci) {
            Ok(b) => b,
            Err(e) => {
                error = Some(e);
                break;
            }
        };
        let applied = record_applied(config, plan.warmup, active.as_ref());
        let title = case.title(&keys);
        let repetition = Repetition {
            index: st.index,
            of: if st.warmup { plan.warmup } else { plan.runs },
        };
        let what = if st.warmup {
            format!("warmup {}/{}", st.index, plan.warmup)
        } else {
            format!("#{}", st.index)
        };
        let head = format!(
            "[{step}/{total}] {}{title} {what}",
            label_prefix(plan, config)
        );
        bar.start(step - 1, &head);
        let progress = |f: f64| bar.within(step - 1, f);
        let ctx = RunContext {
            label: &config.label,
            repetition,
            interval: plan.interval,
            interrupt,
            results: &plan.results,
            progress: &progress,
            trace: plan.trace,
        };
        let result = match &config.prepare {
            Some(cmd) => match hooks::run("prepare", cmd, interrupt) {
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
                out.interrupted = true;
                cut_short = Some(head);
                break;
            }
            Ok(r) => r,
            Err(RunError::Interrupted) => {
                out.interrupted = true;
                cut_short = Some(head);
                break;
            }
            Err(RunError::Failed(e)) => {
                error = Some(RunnerError::Backend { what: head, err: e });
                break;
            }
        };
        bar.done(step);
        if plan.output == Output::Quiet {
            // Every warning counts as printed: only run lines.
            warned.extend(rec.warnings.iter().cloned());
        }
        if st.warmup {
            bar.println(&run_line(&head, &rec, &mut warned));
            continue;
        }
        complete(&mut rec, case, plan, &applied);
        rec.campaign = st.campaign.clone();
        match numalab_record::write_atomic(&plan.results, &rec) {
            Ok(path) => {
                bar.println(&run_line(&head, &rec, &mut warned));
                if plan.output == Output::Verbose {
                    bar.println(&format!("    record: {}", path.display()));
                }
                out.records.push((path, rec));
            }
            Err(e) => {
                error = Some(RunnerError::Results {
                    dir: plan.results.display().to_string(),
                    err: format!("writing the record of {head}: {e}"),
                });
                break;
            }
        }
    }
    bar.finish();
    // Settings back, then the cleanups, whatever happened.
    if let Some(a) = active.take() {
        if let Err(e) = a.settings.undo(backends, a.config) {
            eprintln!("numalab: error: {e}");
            error.get_or_insert(e);
        }
    }
    let cleanup_interrupt = Interrupt::never();
    for (ci, config) in plan.configs.iter().enumerate() {
        if let (true, Some(cmd)) = (set_up[ci], &config.cleanup) {
            if let Err(e) = hooks::run("cleanup", cmd, &cleanup_interrupt) {
                eprintln!("numalab: error: {e}");
                error.get_or_insert(e.into());
            }
        }
    }
    if out.interrupted {
        let during = cut_short
            .map(|h| format!(" during {h}"))
            .unwrap_or_default();
        eprintln!(
            "numalab: interrupted{during}: every task stopped; {} finished run(s) kept in {}",
            out.records.len(),
            plan.results.display()
        );
    }
    if let Some(e) = error {
        if !out.records.is_empty() {
            eprintln!(
                "numalab: {} finished run(s) kept in {}",
                out.records.len(),
                plan.results.display()
            );
        }
        return Err(e);
    }
    Ok(out)
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
        warmup,
        command_line: std::env::args().collect(),
    }
}

/// What only the runner knows, added before the record is written.
fn complete(rec: &mut RunRecord, case: &Case, plan: &Plan, applied: &Applied) {
    rec.applied = applied.clone();
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
    if let Some(h) = m("hackbench_s") {
        if rec.benchmark != "hackbench" {
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
        for l in numalab_report::table::wrap(&format!("    {text}"), 80) {
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

        /// A line on standard error, above the bar.
        pub fn note(&self, line: &str) {
            self.0.suspend(|| eprintln!("{line}"));
        }

        /// A line on standard output, above the bar.
        pub fn println(&self, line: &str) {
            self.0.suspend(|| println!("{line}"));
        }

        pub fn finish(&self) {
            self.0.finish_and_clear();
        }
    }
}
