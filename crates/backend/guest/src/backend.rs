//! The guest as a runner backend: `numalab vm [SHAPE] -- run BENCHMARK`
//! boots one guest, keeps it up, and runs each case in it through the
//! agent ([`numalab_protocol::agent`]), while the runner stays on the
//! host. The requests and the checks of their answers are
//! [`numalab_protocol::client`]'s; here are the guest's session as its
//! transport and how a guest that stopped is described. So a
//! guest campaign has what every other campaign has: the same plan and
//! order, progress with an ETA, one line per run, each record written on
//! the host the moment its run ends (Ctrl-C, a timeout or a guest panic
//! after two of three runs keeps those two), configurations whose
//! settings the guest applies to itself.
//!
//! Sizing defaults are the guest's: its topology, its free memory, its
//! zeroing bandwidth and spin rate, measured inside it, so the default
//! sizes fit the guest as they fit any machine.

use crate::host::{check_results_dir, hello_kernel, host_info, Tag, VmError, VmOptions};
use crate::job::{self, Job};
use crate::session::{debug, describe_exited, End, Launcher, Next, Session};
use numalab_bench::{Calibration, Case};
use numalab_linux::knobs::Knob;
use numalab_protocol::client::{self, Answer, Transport};
use numalab_protocol::frame::{Frame, Kind};
use numalab_protocol::request::{MachineReply, Request};
use numalab_record::RunRecord;
use numalab_runner::{Backend, RunContext, RunError, SettingsSite};
use numalab_topology::MachineInfo;
use std::cell::{OnceCell, RefCell};
use std::collections::BTreeMap;
use std::path::Path;

/// Why a request got no answer.
enum Failure {
    Interrupted,
    Failed(String),
}

impl From<Failure> for RunError {
    fn from(f: Failure) -> RunError {
        match f {
            Failure::Interrupted => RunError::Interrupted,
            Failure::Failed(m) => RunError::Failed(m),
        }
    }
}

/// A booted guest that runs cases.
pub struct GuestBackend {
    link: Link,
    machine: MachineInfo,
    node_free: BTreeMap<u32, u64>,
    spin_rate: OnceCell<f64>,
    first_touch_rate: OnceCell<f64>,
    tag: Tag,
    guest_kernel: String,
    runs: usize,
}

/// The booted guest and the way to it.
struct Link {
    launcher: Launcher,
    session: RefCell<Session>,
    /// Why the guest can no longer run anything (a calibration failed).
    broken: RefCell<Option<String>>,
}

impl GuestBackend {
    /// Boot the guest `opts` describes (its `command` is ignored) and ask
    /// it what machine it is. Records go to `results` (the console log,
    /// with `--quiet`, under it).
    pub fn start(opts: &VmOptions, results: &Path) -> Result<GuestBackend, VmError> {
        check_results_dir(results).map_err(|e| VmError::Failed(e.to_string()))?;
        let job = Job {
            args: Vec::new(),
            sysctls: opts.sysctls.clone(),
            results_dir: job::GUEST_RESULTS.to_string(),
            agent: true,
            modules: Vec::new(),
            hostfs: None,
            shell: None,
        };
        let mut launcher = Launcher::new(&opts.launch_options(results), &job)?;
        let (mut session, first) = launcher.boot()?;
        let mut guest_kernel = String::new();
        let mut next = first.map(Next::Frame);
        // Hello, then the sysctls read back; then the agent listens.
        let sysctls: BTreeMap<String, String> = loop {
            match next.take().unwrap_or_else(|| session.next()) {
                Next::Frame(f) => match f.kind {
                    Kind::Hello => guest_kernel = hello_kernel(&f.payload),
                    Kind::Sysctls => break serde_json::from_slice(&f.payload).unwrap_or_default(),
                    Kind::Error => {
                        let e = String::from_utf8_lossy(&f.payload).to_string();
                        return Err(launcher.report(format!("in the guest: {e}"), &session));
                    }
                    _ => {}
                },
                Next::End(e) => return Err(launcher.describe_end(&e, &session)),
            }
        };
        let tag = Tag {
            accel: launcher.accel,
            spec: opts.spec.typed.clone(),
            sysctls,
            host: host_info(),
        };
        let link = Link {
            launcher,
            session: RefCell::new(session),
            broken: RefCell::new(None),
        };
        let m: MachineReply = match link.request(&Request::Machine, &|_| {}) {
            Ok(a) => a
                .decode()
                .map_err(|e| VmError::Failed(format!("the guest's machine: {e}")))?,
            Err(Failure::Interrupted) => {
                return Err(VmError::Interrupted(
                    "interrupted: the guest was stopped and QEMU reaped".into(),
                ))
            }
            Err(Failure::Failed(m)) => return Err(VmError::Failed(m)),
        };
        Ok(GuestBackend {
            link,
            machine: m.machine,
            node_free: m.node_free,
            spin_rate: OnceCell::new(),
            first_touch_rate: OnceCell::new(),
            tag,
            guest_kernel,
            runs: 0,
        })
    }

    /// One line for the end: accelerator, kernel, boot time, runs, total.
    pub fn summary(&self) -> String {
        let s = self.link.session.borrow();
        format!(
            "{} guest, kernel {}: up at {}, {} run(s), done in {:.1} s",
            self.tag.accel.as_str(),
            self.guest_kernel,
            s.init_s
                .map(|v| format!("{v:.1} s"))
                .unwrap_or_else(|| "-".into()),
            self.runs,
            s.elapsed_s()
        )
    }

    /// The console log, with `--quiet`.
    pub fn console_log(&self) -> Option<&Path> {
        self.link.launcher.console_log.as_deref()
    }

    fn tagged(&self, mut rec: RunRecord) -> RunRecord {
        self.tag.apply(&mut rec);
        rec
    }
}

impl Link {
    /// Send `req`, collect the answer up to the agent's `exit` frame.
    fn request(&self, req: &Request, progress: &dyn Fn(f64)) -> Result<Answer, Failure> {
        if let Some(why) = self.broken.borrow().as_ref() {
            return Err(Failure::Failed(why.clone()));
        }
        let mut s = self.session.borrow_mut();
        client::request(&mut *s, req, progress).map_err(|f| match f {
            client::Failure::Send(e) => Failure::Failed(e),
            client::Failure::Ended(end) => self.ended(&end, &s),
            client::Failure::Error(e) => Failure::Failed(format!("in the guest: {e}")),
        })
    }

    fn ended(&self, end: &End, s: &Session) -> Failure {
        match end {
            End::Interrupted => Failure::Interrupted,
            End::Exited(_) => Failure::Failed(
                self.launcher
                    .report(
                        format!("the guest stopped ({})", describe_exited(end, s)),
                        s,
                    )
                    .to_string(),
            ),
            _ => Failure::Failed(self.launcher.describe_end(end, s).to_string()),
        }
    }

    /// A calibration figure; a failure is kept and fails the first run.
    fn figure(&self, req: Request) -> f64 {
        let r = self
            .request(&req, &|_| {})
            .map_err(|f| match f {
                Failure::Interrupted => "interrupted".to_string(),
                Failure::Failed(m) => m,
            })
            .and_then(|a| a.value().map_err(|e| e.to_string()))
            .and_then(|v| v.as_f64().ok_or_else(|| format!("not a number: {v}")));
        match r {
            Ok(v) if v > 0.0 => v,
            Ok(v) => {
                self.break_with(format!("calibrating in the guest: {v} is not positive"));
                1.0
            }
            Err(e) => {
                self.break_with(format!("calibrating in the guest: {e}"));
                1.0
            }
        }
    }

    fn break_with(&self, why: String) {
        self.broken.borrow_mut().get_or_insert(why);
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        if debug() {
            self.launcher.keep_tmp();
        }
        self.session.borrow_mut().stop();
    }
}

impl Calibration for GuestBackend {
    fn machine(&self) -> &MachineInfo {
        &self.machine
    }

    fn node_free_bytes(&self, node: u32) -> Option<u64> {
        self.node_free.get(&node).copied()
    }

    fn zeroing_bandwidth(&self, threads: u32, working_set: u64) -> f64 {
        self.link.figure(Request::ZeroingBandwidth {
            threads,
            working_set,
        })
    }

    fn sweep_bandwidth(&self, op: numalab_bench::mem::Op, threads: u32, working_set: u64) -> f64 {
        self.link.figure(Request::SweepBandwidth {
            sweep: op,
            threads,
            working_set,
        })
    }

    fn spin_rate(&self) -> f64 {
        *self
            .spin_rate
            .get_or_init(|| self.link.figure(Request::SpinRate))
    }

    fn first_touch_rate(&self) -> f64 {
        *self
            .first_touch_rate
            .get_or_init(|| self.link.figure(Request::FirstTouchRate))
    }
}

impl Backend for GuestBackend {
    fn kind(&self) -> &'static str {
        "guest"
    }

    fn describe(&self) -> String {
        let m = &self.machine;
        format!(
            "a {} guest ({}), kernel {}, numa_balancing={}",
            self.tag.accel.as_str().to_uppercase(),
            m.topology.summary(),
            m.kernel,
            m.numa_balancing.as_deref().unwrap_or("n/a")
        )
    }

    fn settings_site(&self) -> SettingsSite {
        SettingsSite::Backend
    }

    fn apply_settings(&mut self, knobs: &[Knob]) -> Result<BTreeMap<String, String>, RunError> {
        let req = Request::Settings {
            knobs: knobs.to_vec(),
        };
        match self.link.request(&req, &|_| {}) {
            Ok(a) => {
                let v = a.value().map_err(|e| RunError::Failed(e.to_string()))?;
                serde_json::from_value(v)
                    .map_err(|e| RunError::Failed(format!("the guest's settings: {e}")))
            }
            // Nothing is left to undo in a guest that is gone.
            Err(_) if knobs.is_empty() => Ok(BTreeMap::new()),
            Err(f) => Err(f.into()),
        }
    }

    fn scx_site(&self) -> SettingsSite {
        SettingsSite::Backend
    }

    fn start_scx(
        &mut self,
        scx: &numalab_linux::sched_ext::Scx,
    ) -> Result<numalab_linux::sched_ext::Status, RunError> {
        let req = Request::Scx {
            scx: Some(scx.clone()),
        };
        let a = self.link.request(&req, &|_| {})?;
        let v = a.value().map_err(|e| RunError::Failed(e.to_string()))?;
        serde_json::from_value(v)
            .map_err(|e| RunError::Failed(format!("the guest's sched_ext status: {e}")))
    }

    fn scx_ended(&mut self) -> Option<String> {
        match self.link.request(&Request::ScxStatus, &|_| {}) {
            Ok(a) => match a.value() {
                Ok(v) => v.as_str().map(str::to_string),
                Err(e) => Some(e.to_string()),
            },
            Err(f) => Some(RunError::from(f).to_string()),
        }
    }

    fn stop_scx(&mut self) -> Result<Option<numalab_linux::sched_ext::ExitInfo>, RunError> {
        // Nothing is left to unload in a guest that was gone before (how
        // it ended has been said), or that Ctrl-C stops.
        let gone_before =
            self.link.session.borrow().has_ended() || self.link.broken.borrow().is_some();
        match self.link.request(&Request::Scx { scx: None }, &|_| {}) {
            Ok(a) => {
                let v = a.value().map_err(|e| RunError::Failed(e.to_string()))?;
                serde_json::from_value(v)
                    .map_err(|e| RunError::Failed(format!("the guest's sched_ext exit: {e}")))
            }
            Err(Failure::Failed(m)) if !gone_before => Err(RunError::Failed(m)),
            Err(_) => Ok(None),
        }
    }

    fn run(&mut self, case: &Case, ctx: &RunContext) -> Result<RunRecord, RunError> {
        let req = Request::Run {
            case: case.clone(),
            label: ctx.label.to_string(),
            repetition: ctx.repetition,
            interval: ctx.interval,
            trace: ctx.trace,
        };
        let answer = self.link.request(&req, ctx.progress)?;
        let benchmark = case.benchmark();
        let asked = (benchmark.as_str(), ctx.label, ctx.repetition.index);
        let rec = answer.run_record(asked, ctx.results)?;
        self.runs += 1;
        Ok(self.tagged(rec))
    }

    fn failed_record(&self, case: &Case, ctx: &RunContext, reason: &str) -> RunRecord {
        let mut r = ctx.new_record(case, &self.machine);
        r.outcome = numalab_record::Outcome::failed(reason);
        self.tagged(r)
    }
}

/// The guest's session carries the protocol's frames: the second serial
/// port, through QEMU's socket.
impl Transport for Session {
    type End = End;
    type SendError = VmError;

    fn send(&mut self, kind: Kind, name: &str, payload: &[u8]) -> Result<(), VmError> {
        Session::send(self, kind, name, payload)
    }

    fn next_frame(&mut self) -> Result<Frame, End> {
        match self.next() {
            Next::Frame(f) => Ok(f),
            Next::End(e) => Err(e),
        }
    }
}
