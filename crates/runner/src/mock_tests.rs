//! The runner against a mock backend: which runs it asks for and in what
//! order (configurations, cases, rounds, warm-ups), where the hooks fall
//! between them, and what an interrupt, a failed run and a backend error
//! leave behind. The end-to-end tests (crates/numalab/tests) run the
//! same paths with real benchmarks; these pin the order exactly.

use super::*;
use numalab_bench::{command, Calibration};
use numalab_record::{Better, Metric};
use numalab_topology::MachineInfo;
use std::cell::RefCell;
use std::rc::Rc;

/// What the mock does at its `n`-th run (counted from 1).
#[derive(Clone, Copy, PartialEq)]
enum Act {
    Ok,
    /// A record whose outcome is a failure.
    FailedRecord,
    /// `RunError::Failed`: the backend could not run it at all.
    Error,
    /// Ctrl-C during the run.
    Interrupt,
}

struct Mock {
    machine: MachineInfo,
    /// One line per run asked for: label, benchmark, index/of.
    log: Rc<RefCell<Vec<String>>>,
    acts: Vec<(usize, Act)>,
    calls: usize,
    interrupt: Interrupt,
    /// The sched_ext scheduler "ends" once this many runs are done.
    scx_ends_after: Option<usize>,
    /// Unloading it fails.
    scx_stop_fails: bool,
}

impl Calibration for Mock {
    fn machine(&self) -> &MachineInfo {
        &self.machine
    }
    fn node_free_bytes(&self, _node: u32) -> Option<u64> {
        None
    }
    fn zeroing_bandwidth(&self, _threads: u32, _working_set: u64) -> f64 {
        1e9
    }
    fn spin_rate(&self) -> f64 {
        1e9
    }
    fn first_touch_rate(&self) -> f64 {
        f64::INFINITY
    }
}

impl Backend for Mock {
    fn kind(&self) -> &'static str {
        "mock"
    }
    fn describe(&self) -> String {
        "a mock".into()
    }
    fn settings_site(&self) -> SettingsSite {
        SettingsSite::Backend
    }
    fn apply_settings(
        &mut self,
        knobs: &[Knob],
    ) -> Result<std::collections::BTreeMap<String, String>, RunError> {
        let names: Vec<String> = knobs.iter().map(|k| k.name()).collect();
        self.log
            .borrow_mut()
            .push(format!("settings [{}]", names.join(",")));
        Ok(Default::default())
    }
    fn scx_site(&self) -> SettingsSite {
        SettingsSite::Backend
    }
    fn start_scx(
        &mut self,
        scx: &numalab_linux::sched_ext::Scx,
    ) -> Result<numalab_linux::sched_ext::Status, RunError> {
        self.log
            .borrow_mut()
            .push(format!("scx load {}", scx.name()));
        Ok(numalab_linux::sched_ext::Status {
            state: "enabled".into(),
            ops: "mock_ops".into(),
            enable_seq: 7,
        })
    }
    fn scx_ended(&mut self) -> Option<String> {
        self.scx_ends_after
            .filter(|n| self.calls >= *n)
            .map(|_| "sched_ext scheduler mock_ops ended during the run: ERROR_STALL".into())
    }
    fn stop_scx(&mut self) -> Result<Option<numalab_linux::sched_ext::ExitInfo>, RunError> {
        self.log.borrow_mut().push("scx unload".into());
        if self.scx_stop_fails {
            return Err(RunError::Failed("the guest did not answer".into()));
        }
        Ok(None)
    }
    fn run(&mut self, case: &Case, ctx: &RunContext) -> Result<RunRecord, RunError> {
        self.calls += 1;
        let r = ctx.repetition;
        self.log.borrow_mut().push(format!(
            "run {} {} {}/{}",
            ctx.label,
            case.benchmark(),
            r.index,
            r.of
        ));
        let act = self
            .acts
            .iter()
            .find(|(n, _)| *n == self.calls)
            .map_or(Act::Ok, |(_, a)| *a);
        let mut rec = ctx.new_record(case, &self.machine);
        rec.metrics.insert(
            "elapsed_s".into(),
            Metric::new(self.calls as f64, "s", Better::Lower),
        );
        match act {
            Act::Ok => Ok(rec),
            Act::FailedRecord => Ok(self.failed_record(case, ctx, "it broke")),
            Act::Error => Err(RunError::Failed("the backend is gone".into())),
            Act::Interrupt => {
                self.interrupt.set();
                Err(RunError::Interrupted)
            }
        }
    }
}

struct Setup {
    dir: tempfile::TempDir,
    plan: Plan,
    mock: Mock,
}

fn case(name: &str) -> Case {
    Case::Command(command::Params {
        name: name.into(),
        argv: vec!["true".into()],
        cwd: None,
    })
}

/// Configurations `labels`, cases `cases`, `runs` runs and `warmup`
/// warm-ups; each hook (when `hooks`) appends its name to the mock's log
/// through a file in the hook directory.
fn setup(labels: &[&str], cases: &[&str], runs: u32, warmup: u32, hooks: bool) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let hook =
        |what: &str, label: &str| hooks.then(|| format!("echo '{what} {label}' >> hooks.txt"));
    let configs = labels
        .iter()
        .map(|l| Configuration {
            label: l.to_string(),
            prepare: hook("prepare", l),
            setup: hook("setup", l),
            cleanup: hook("cleanup", l),
            hook_dir: Some(dir.path().to_path_buf()),
            ..Default::default()
        })
        .collect();
    let plan = Plan {
        configs,
        cases: cases.iter().map(|c| case(c)).collect(),
        runs: Runs::Fixed(runs),
        warmup,
        interval: Interval::Off,
        results: dir.path().join("results"),
        notes: Vec::new(),
        guard: None,
        wait: false,
        output: Output::Quiet,
        trace: false,
    };
    let mock = Mock {
        machine: numalab_record::example_record("x", "x", 1, 1.0).machine,
        log: Rc::new(RefCell::new(Vec::new())),
        acts: Vec::new(),
        calls: 0,
        interrupt: Interrupt::never(),
        scx_ends_after: None,
        scx_stop_fails: false,
    };
    Setup { dir, plan, mock }
}

impl Setup {
    fn run(&mut self) -> Result<super::Outcome, RunnerError> {
        let interrupt = self.mock.interrupt.clone();
        run_with(&self.plan, &mut self.mock, &interrupt)
    }

    /// The runs the backend was asked for, in order.
    fn runs(&self) -> Vec<String> {
        self.mock.log.borrow().clone()
    }

    /// The hooks that ran, in order (each appends a line to a file).
    fn hooks(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.path().join("hooks.txt"))
            .unwrap_or_default()
            .lines()
            .map(String::from)
            .collect()
    }

    fn records(&self) -> usize {
        std::fs::read_dir(&self.plan.results)
            .map(|d| {
                d.flatten()
                    .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
                    .count()
            })
            .unwrap_or(0)
    }
}

/// Round by round: every configuration's cases, in order, each case's
/// warm-ups just before its first run; warm-ups say `i/warmup` and are
/// not recorded.
#[test]
fn runs_interleave_configurations_and_cases_round_by_round() {
    let mut s = setup(&["A", "B"], &["x", "y"], 2, 1, false);
    let out = s.run().unwrap();
    assert_eq!(
        s.runs(),
        [
            "run A x 1/1", // x's warm-up
            "run A x 1/2",
            "run A y 1/1",
            "run A y 1/2",
            "run B x 1/1",
            "run B x 1/2",
            "run B y 1/1",
            "run B y 1/2",
            "run A x 2/2",
            "run A y 2/2",
            "run B x 2/2",
            "run B y 2/2",
        ]
    );
    assert!(!out.interrupted);
    assert_eq!(out.records.len(), 8);
    assert_eq!(s.records(), 8);
    // Records in run order, each with its configuration and repetition.
    let seen: Vec<(String, String, u32)> = out
        .records
        .iter()
        .map(|(_, r)| (r.label.clone(), r.benchmark.clone(), r.repetition.index))
        .collect();
    assert_eq!(seen[0], ("A".into(), "x".into(), 1));
    assert_eq!(seen[4], ("A".into(), "x".into(), 2));
    assert!(out.records.iter().all(|(_, r)| r.repetition.of == 2));
}

/// Setup once per configuration, prepare before every run (warm-ups
/// included), cleanup once per configuration at the end.
#[test]
fn hooks_fall_where_they_should() {
    let mut s = setup(&["A", "B"], &["x"], 2, 1, true);
    s.run().unwrap();
    assert_eq!(
        s.hooks(),
        [
            "setup A",
            "prepare A", // the warm-up's
            "prepare A",
            "setup B",
            "prepare B",
            "prepare B",
            "prepare A",
            "prepare B",
            "cleanup A",
            "cleanup B",
        ]
    );
    assert_eq!(s.runs().len(), 6);
}

/// Ctrl-C during a run: nothing more runs, the finished runs are kept,
/// the interrupted one is not recorded, and the cleanups still run.
#[test]
fn an_interrupt_keeps_the_finished_runs_and_cleans_up() {
    let mut s = setup(&["A", "B"], &["x"], 3, 0, true);
    s.mock.acts = vec![(3, Act::Interrupt)];
    let out = s.run().unwrap();
    assert!(out.interrupted);
    assert_eq!(s.runs().len(), 3);
    assert_eq!(out.records.len(), 2);
    assert_eq!(s.records(), 2);
    let hooks = s.hooks();
    assert_eq!(&hooks[hooks.len() - 2..], ["cleanup A", "cleanup B"]);
}

/// A failed run is a record like any other and the runs go on; a
/// backend that cannot run stops the invocation with its reason, the
/// finished runs kept and the cleanups run.
#[test]
fn a_failed_run_is_recorded_and_a_backend_error_stops_the_invocation() {
    let mut s = setup(&["A"], &["x", "y"], 2, 0, true);
    s.mock.acts = vec![(2, Act::FailedRecord)];
    let out = s.run().unwrap();
    assert_eq!(out.records.len(), 4);
    let failed = out.failed();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].benchmark, "y");
    assert_eq!(failed[0].outcome.reason.as_deref(), Some("it broke"));

    let mut s = setup(&["A"], &["x", "y"], 2, 0, true);
    s.mock.acts = vec![(3, Act::Error)];
    let e = s.run().unwrap_err().to_string();
    assert!(
        e.contains("the backend is gone") && e.contains("x #2"),
        "{e}"
    );
    assert_eq!(s.runs().len(), 3);
    assert_eq!(s.records(), 2);
    assert_eq!(s.hooks().last().map(String::as_str), Some("cleanup A"));
}

/// A failing --prepare fails that run (a record saying why) without
/// asking the backend, and the other runs go on.
#[test]
fn a_failing_prepare_fails_its_run_only() {
    let mut s = setup(&["A"], &["x"], 3, 0, false);
    s.plan.configs[0].prepare = Some("test ! -e once || exit 7; touch once".into());
    s.plan.configs[0].hook_dir = Some(s.dir.path().to_path_buf());
    let out = s.run().unwrap();
    assert_eq!(out.records.len(), 3);
    assert_eq!(s.runs().len(), 1, "the backend ran only the first");
    let failed = out.failed();
    assert_eq!(failed.len(), 2);
    let why = failed[0].outcome.reason.as_deref().unwrap();
    assert!(why.contains("--prepare") && why.contains("7"), "{why}");
}

fn with_scx(s: &mut Setup, name: &str) {
    for c in &mut s.plan.configs {
        c.scx = Some(numalab_linux::sched_ext::Scx::Own {
            spec: format!("{name}-{}", c.label),
            ops: "mock_ops".into(),
        });
        c.knobs = vec![Knob::parse_sysctl("kernel.numa_balancing=0").unwrap()];
    }
}

/// A configuration's scheduler is loaded after its settings, before its
/// runs, and unloaded before its settings are restored, each time it
/// becomes active; every record names it as the backend enabled it.
#[test]
fn a_scheduler_is_loaded_for_its_configurations_runs_only() {
    let mut s = setup(&["A", "B"], &["x"], 2, 0, false);
    with_scx(&mut s, "fifo");
    let out = s.run().unwrap();
    let want = [
        "settings [kernel.numa_balancing]",
        "scx load fifo-A",
        "run A x 1/2",
        "scx unload",
        "settings []",
        "settings [kernel.numa_balancing]",
        "scx load fifo-B",
        "run B x 1/2",
        "scx unload",
        "settings []",
    ];
    assert_eq!(s.runs()[..10], want);
    assert_eq!(s.runs().len(), 20);
    for (_, r) in &out.records {
        let scx = r.applied.scx.as_ref().unwrap();
        assert_eq!(scx.scheduler, format!("fifo-{}", r.label));
        assert_eq!(
            (scx.ops.as_str(), scx.enable_seq, scx.exec),
            ("mock_ops", 7, false)
        );
    }
}

/// A scheduler that ends during a run fails that run with the reason,
/// stops the invocation, and is still unloaded and the settings
/// restored; an unload that fails does not keep the settings from
/// being restored.
#[test]
fn a_scheduler_that_ends_fails_its_run_and_a_failed_unload_still_restores() {
    let mut s = setup(&["A"], &["x"], 4, 0, false);
    with_scx(&mut s, "fifo");
    s.mock.scx_ends_after = Some(2);
    let e = s.run().unwrap_err();
    assert!(
        e.to_string().contains("ended during the run: ERROR_STALL"),
        "{e}"
    );
    assert_eq!(
        s.runs(),
        [
            "settings [kernel.numa_balancing]",
            "scx load fifo-A",
            "run A x 1/4",
            "run A x 2/4",
            "scx unload",
            "settings []",
        ]
    );
    // The first run's record and the failed second's.
    assert_eq!(s.records(), 2);

    let mut s = setup(&["A"], &["x"], 1, 0, false);
    with_scx(&mut s, "fifo");
    s.mock.scx_stop_fails = true;
    let e = s.run().unwrap_err();
    assert!(
        e.to_string().contains("unloading the sched_ext scheduler"),
        "{e}"
    );
    assert_eq!(s.runs().last().unwrap(), "settings []");
}
