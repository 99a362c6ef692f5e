//! The request executor: `numalab __guest-op REQUEST.json`, the child the
//! agent starts for each request it does not answer itself. The host
//! backend does the work on the machine this runs on, and the answer goes
//! to standard output as protocol lines (`@@op <what> <argument>`): the
//! `reply`, a run's `progress`, the `record` it wrote and the `log` files
//! beside it. Anything else printed is the run's own output.
//!
//! A request that crashes takes only this child with it, never the agent.

use crate::agent::op_line;
use crate::request::{MachineReply, Reply, Request};
use numalab_bench::Calibration;
use numalab_host::HostBackend;
use numalab_record::RunRecord;
use numalab_runner::{Backend, Interrupt, RunContext, RunError};
use std::path::Path;
use std::time::{Duration, Instant};

/// Where the executor writes a run's record: [`crate::agent::RESULTS`].
pub use crate::agent::RESULTS;

/// Why the request file gave no request.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error("usage: __guest-op REQUEST.json")]
    Usage,
    /// The file could not be read (its path as given).
    #[error("{path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("the request: {0}")]
    Decode(serde_json::Error),
}

/// Why the host backend could not start where the executor runs.
#[derive(Debug, thiserror::Error)]
pub enum MachineError {
    /// The executable's own path.
    #[error("the guest's machine: {0}")]
    Exe(std::io::Error),
    #[error("the guest's machine: {0}")]
    Topology(#[from] numalab_topology::TopologyError),
}

/// `numalab __guest-op REQUEST.json`: answer the request in the file
/// named by the first argument, on standard output. The exit code: 0
/// answered (a run that failed is an answer), 2 no request or no machine.
pub fn main(args: &[String]) -> i32 {
    let say = |what: &str, arg: &str| numalab_linux::outln!("{}", op_line(what, arg));
    let req = match read_request(args) {
        Ok(r) => r,
        Err(e) => {
            reply(&say, Reply::Error(e.to_string()));
            return 2;
        }
    };
    let backend = match host_backend() {
        Ok(b) => b,
        Err(e) => {
            reply(&say, Reply::Error(e.to_string()));
            return 2;
        }
    };
    execute(backend, req, Path::new(RESULTS), &say)
}

/// The host backend, numalab being this executable.
fn host_backend() -> Result<HostBackend, MachineError> {
    let exe = std::env::current_exe().map_err(MachineError::Exe)?;
    Ok(HostBackend::new(exe)?)
}

/// Answer `req` with `backend`, a run's record written to `results`;
/// `say(what, argument)` is one protocol line. The exit code.
pub fn execute(
    mut backend: HostBackend,
    req: Request,
    results: &Path,
    say: &dyn Fn(&str, &str),
) -> i32 {
    let value = |v: serde_json::Value| reply(say, Reply::Ok(v));
    match req {
        Request::Machine => value(machine_reply(&backend)),
        Request::ZeroingBandwidth {
            threads,
            working_set,
        } => value(backend.zeroing_bandwidth(threads, working_set).into()),
        Request::SweepBandwidth {
            sweep,
            threads,
            working_set,
        } => value(backend.sweep_bandwidth(sweep, threads, working_set).into()),
        Request::SpinRate => value(backend.spin_rate().into()),
        Request::FirstTouchRate => value(backend.first_touch_rate().into()),
        Request::Run {
            case,
            label,
            repetition,
            interval,
            trace,
        } => {
            let interrupt = Interrupt::never();
            // Progress at most twice a second: the serial line is slow.
            let last = std::cell::Cell::new(Instant::now());
            let progress = |f: f64| {
                if last.get().elapsed() >= Duration::from_millis(500) {
                    last.set(Instant::now());
                    say("progress", &format!("{f:.4}"));
                }
            };
            let ctx = RunContext {
                label: &label,
                repetition,
                interval,
                interrupt: &interrupt,
                results,
                progress: &progress,
                trace,
            };
            reply_run(say, backend.run(&case, &ctx), results);
        }
        Request::Settings { .. } | Request::Scx { .. } | Request::ScxStatus | Request::Quit => {
            reply(
                say,
                Reply::Error("the guest's init answers this itself".into()),
            );
            return 2;
        }
    }
    0
}

/// The request's reply, as a protocol line.
fn reply(say: &dyn Fn(&str, &str), r: Reply) {
    say(
        "reply",
        &serde_json::to_string(&r).expect("a reply serialises"),
    )
}

/// The request in the file named by the first argument.
fn read_request(args: &[String]) -> Result<Request, RequestError> {
    let path = args.first().ok_or(RequestError::Usage)?;
    let bytes = std::fs::read(path).map_err(|source| RequestError::Read {
        path: path.clone(),
        source,
    })?;
    serde_json::from_slice(&bytes).map_err(RequestError::Decode)
}

/// The machine and each node's free memory, as the reply's value.
fn machine_reply(backend: &HostBackend) -> serde_json::Value {
    let machine = backend.machine().clone();
    let node_free = machine
        .topology
        .nodes
        .iter()
        .filter_map(|n| Some((n.id, backend.node_free_bytes(n.id)?)))
        .collect();
    let m = MachineReply { machine, node_free };
    serde_json::to_value(m).expect("a machine serialises")
}

/// A run's answer: its record written to `results` (then its path and
/// the files beside it said) and an empty reply, or the error.
fn reply_run(say: &dyn Fn(&str, &str), run: Result<RunRecord, RunError>, results: &Path) {
    match run {
        Ok(rec) => match numalab_record::write_atomic(results, &rec) {
            Ok(path) => {
                say("record", &path.to_string_lossy());
                // Files beside the record: a command's output, the
                // raw scheduling events.
                for extra in [format!("{}.log", rec.id), format!("{}.sched.tsv", rec.id)] {
                    let f = results.join(extra);
                    if f.exists() {
                        say("log", &f.to_string_lossy());
                    }
                }
                reply(say, Reply::Ok(serde_json::Value::Null));
            }
            Err(e) => {
                numalab_record::remove_side_files(results, &rec.id);
                reply(say, Reply::Error(format!("writing the record: {e}")))
            }
        },
        Err(RunError::Failed(e)) => reply(say, Reply::Error(e)),
        Err(RunError::Interrupted) => reply(say, Reply::Error("interrupted".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    /// The protocol lines said, as `(what, argument)`.
    fn lines() -> RefCell<Vec<(String, String)>> {
        RefCell::new(Vec::new())
    }

    fn the_reply(said: &[(String, String)]) -> Reply {
        let (what, arg) = said.last().expect("a line");
        assert_eq!(what, "reply");
        serde_json::from_str(arg).unwrap()
    }

    #[test]
    fn a_missing_unreadable_or_bad_request_file_is_said_in_one_line() {
        assert_eq!(
            read_request(&[]).unwrap_err().to_string(),
            "usage: __guest-op REQUEST.json"
        );
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("r.json");
        let e = read_request(&[p.display().to_string()]).unwrap_err();
        assert!(
            e.to_string().starts_with(&format!("{}: ", p.display())),
            "{e}"
        );
        std::fs::write(&p, br#"{"op":"reboot"}"#).unwrap();
        let e = read_request(&[p.display().to_string()]).unwrap_err();
        assert!(e.to_string().starts_with("the request: "), "{e}");
        std::fs::write(&p, br#"{"op":"spin_rate"}"#).unwrap();
        assert_eq!(
            read_request(&[p.display().to_string()]).unwrap(),
            Request::SpinRate
        );
    }

    #[test]
    fn what_the_agent_answers_itself_is_refused() {
        let Ok(backend) = host_backend() else { return };
        let said = lines();
        let say = |w: &str, a: &str| said.borrow_mut().push((w.into(), a.into()));
        let d = tempfile::tempdir().unwrap();
        assert_eq!(execute(backend, Request::ScxStatus, d.path(), &say), 2);
        assert_eq!(
            the_reply(&said.borrow()),
            Reply::Error("the guest's init answers this itself".into())
        );
    }

    #[test]
    fn the_machine_is_answered_with_each_nodes_free_memory() {
        let Ok(backend) = host_backend() else { return };
        let nodes = backend.machine().topology.nodes.len();
        let said = lines();
        let say = |w: &str, a: &str| said.borrow_mut().push((w.into(), a.into()));
        let d = tempfile::tempdir().unwrap();
        assert_eq!(execute(backend, Request::Machine, d.path(), &say), 0);
        let Reply::Ok(v) = the_reply(&said.borrow()) else {
            panic!("{:?}", said.borrow())
        };
        let m: MachineReply = serde_json::from_value(v).unwrap();
        assert_eq!(m.machine.topology.nodes.len(), nodes);
        assert!(m.node_free.len() <= nodes);
    }

    #[test]
    fn a_failed_run_is_its_error_and_a_record_is_named_with_its_side_files() {
        let said = lines();
        let say = |w: &str, a: &str| said.borrow_mut().push((w.into(), a.into()));
        let d = tempfile::tempdir().unwrap();
        reply_run(&say, Err(RunError::Failed("no memory".into())), d.path());
        reply_run(&say, Err(RunError::Interrupted), d.path());
        let rec = numalab_record::example_record("numa02", "a", 1, 1.0);
        std::fs::write(d.path().join(format!("{}.log", rec.id)), b"out").unwrap();
        reply_run(&say, Ok(rec.clone()), d.path());
        let said = said.borrow();
        assert_eq!(the_reply(&said[..1]), Reply::Error("no memory".into()));
        assert_eq!(the_reply(&said[..2]), Reply::Error("interrupted".into()));
        assert_eq!(said[2].0, "record");
        assert!(Path::new(&said[2].1).exists());
        assert_eq!(
            said[3],
            (
                "log".to_string(),
                d.path()
                    .join(format!("{}.log", rec.id))
                    .display()
                    .to_string()
            )
        );
        assert_eq!(the_reply(&said[..5]), Reply::Ok(serde_json::Value::Null));
        assert_eq!(said.len(), 5);
    }
}
