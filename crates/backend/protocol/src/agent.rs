//! The agent: how the host runs benchmark cases one at a time on a
//! machine that stays up (a `numalab vm` guest today, whose PID 1 runs
//! [`serve`]), so the runner (repetitions, configurations, progress,
//! Ctrl-C, writing records) stays on the host, as for every other
//! backend. Nothing here knows about QEMU: the frames come in on any
//! [`Read`] and go out through any [`Sender`].
//!
//! The host sends a [`Request`] frame; the guest's PID 1 answers it and
//! ends every answer with an `exit` frame. Machine settings (`Settings`)
//! are applied by PID 1 itself, which keeps what it must restore; `Quit`
//! powers the guest off; every other request runs as a child,
//! `numalab __guest-op REQUEST.json`, so a request that crashes cannot take
//! PID 1 (and the guest) with it. The child speaks on its standard output
//! in lines [`OP_PREFIX`]`<what> <argument>`:
//!
//! - `reply <json>`: the answer (a [`Reply`]);
//! - `progress <fraction>`: how far a run is;
//! - `record <path>` / `log <path>`: files to send to the host.
//!
//! Anything else it prints goes to the host's terminal as it would on the
//! host. PID 1 turns the lines into `reply`, `progress`, `record` and
//! `log` frames and sends the files' contents as soon as the child names
//! them, so a finished run's record is on the host before the next run
//! starts.

#[cfg(test)]
use crate::frame::encode;
use crate::frame::{Kind, Parser};
use crate::request::{Reply, Request};
use numalab_linux::knobs::{self, Knob};
#[cfg(test)]
use std::io::Write;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Command, Stdio};

/// What starts a line of the op child's protocol on its standard output.
pub const OP_PREFIX: &str = "@@op ";

/// A protocol line of the op child.
pub fn op_line(what: &str, arg: &str) -> String {
    format!("{OP_PREFIX}{what} {arg}")
}

/// Where the agent's children write a run's record (and the files
/// beside it) before the agent sends them: the guest's results directory.
pub const RESULTS: &str = "/numalab-results";

/// Where the agent writes a request for its child.
const REQUEST_PATH: &str = "/tmp/numalab-request.json";

/// Frames to the host, shared with the output pumps.
pub trait Sender: Clone + Send + 'static {
    fn send(&self, kind: Kind, name: &str, payload: &[u8]);
}

/// The channel from the host could not be read.
#[derive(Debug, thiserror::Error)]
#[error("reading the channel: {0}")]
pub struct ChannelRead(std::io::Error);

/// numalab did not start in the guest.
#[derive(Debug, thiserror::Error)]
#[error("starting {exe}: {source}")]
pub struct SpawnError {
    exe: String,
    source: std::io::Error,
}

/// Answer requests until `Quit` or until the channel closes.
pub fn serve<S: Sender>(tx: &S, mut rx: impl Read, exe: &str) -> Result<(), ChannelRead> {
    let mut parser = Parser::new();
    let mut applied: Option<knobs::Applied> = None;
    let mut scx: Option<numalab_runner::scx::Loaded> = None;
    let mut buf = vec![0u8; 16 << 10];
    loop {
        let n = rx.read(&mut buf).map_err(ChannelRead)?;
        if n == 0 {
            return Ok(());
        }
        for f in parser.push(&buf[..n]) {
            let f = match f {
                Ok(f) if f.kind == Kind::Request => f,
                Ok(_) => continue,
                Err(e) => {
                    send_reply(tx, &Reply::Error(format!("channel: {e}")));
                    send_exit(tx, 2);
                    continue;
                }
            };
            let req: Request = match serde_json::from_slice(&f.payload) {
                Ok(r) => r,
                Err(e) => {
                    send_reply(tx, &Reply::Error(format!("request: {e}")));
                    send_exit(tx, 2);
                    continue;
                }
            };
            match req {
                Request::Quit => {
                    if let Some(l) = scx.take() {
                        l.stop();
                    }
                    if let Some(a) = applied.take() {
                        let _ = a.restore();
                    }
                    send_exit(tx, 0);
                    return Ok(());
                }
                Request::Settings { knobs: k } => {
                    let reply = settings(&mut applied, &k);
                    send_reply(tx, &reply);
                    send_exit(tx, 0);
                }
                // PID 1 keeps the scheduler's loader, as it keeps the
                // settings: it outlives one request.
                Request::Scx { scx: want } => {
                    let reply = load_scx(&mut scx, want.as_ref(), exe);
                    send_reply(tx, &reply);
                    send_exit(tx, 0);
                }
                Request::ScxStatus => {
                    let why = scx.as_mut().and_then(|l| l.ended());
                    send_reply(tx, &Reply::Ok(serde_json::json!(why)));
                    send_exit(tx, 0);
                }
                _ => {
                    let code = run_child(tx, exe, &f.payload);
                    send_exit(tx, code);
                }
            }
        }
    }
}

fn send_reply<S: Sender>(tx: &S, r: &Reply) {
    let json = serde_json::to_vec(r).expect("a reply serialises");
    tx.send(Kind::Reply, "-", &json);
}

fn send_exit<S: Sender>(tx: &S, code: i32) {
    tx.send(
        Kind::Exit,
        "-",
        serde_json::json!({ "code": code }).to_string().as_bytes(),
    );
}

/// Unload the previous scheduler, load `want`: its status once enabled,
/// or (none wanted) how the previous one ended.
fn load_scx(
    loaded: &mut Option<numalab_runner::scx::Loaded>,
    want: Option<&numalab_linux::sched_ext::Scx>,
    exe: &str,
) -> Reply {
    let exit = loaded.take().and_then(|l| l.stop());
    let Some(want) = want else {
        return Reply::Ok(serde_json::to_value(exit).expect("an exit serialises"));
    };
    let root = numalab_linux::sched_ext::root();
    match numalab_runner::scx::Loaded::start(want, Path::new(exe), &root, None) {
        Ok(l) => {
            let status = serde_json::to_value(&l.status).expect("a status serialises");
            *loaded = Some(l);
            Reply::Ok(status)
        }
        Err(e) => Reply::Error(e.to_string()),
    }
}

/// Undo the previous settings, apply `k`, answer with the values read
/// back.
fn settings(applied: &mut Option<knobs::Applied>, k: &[Knob]) -> Reply {
    if let Some(a) = applied.take() {
        if let Err(e) = a.restore() {
            return Reply::Error(e.to_string());
        }
    }
    if k.is_empty() {
        return Reply::Ok(serde_json::json!({}));
    }
    match knobs::apply(k, Path::new("/"), None) {
        Ok(a) => {
            let values = serde_json::to_value(a.values()).expect("a map serialises");
            *applied = Some(a);
            Reply::Ok(values)
        }
        Err(e) => Reply::Error(e.to_string()),
    }
}

/// Run `numalab __guest-op` for one request; relay its protocol lines as
/// frames and its other output as stdout/stderr frames. Its exit code.
fn run_child<S: Sender>(tx: &S, exe: &str, request: &[u8]) -> i32 {
    if let Err(e) = std::fs::write(REQUEST_PATH, request) {
        send_reply(tx, &Reply::Error(format!("{REQUEST_PATH}: {e}")));
        return 2;
    }
    let mut child = match spawn(exe, &["__guest-op", REQUEST_PATH], None) {
        Ok(c) => c,
        Err(e) => {
            send_reply(tx, &Reply::Error(e.to_string()));
            return 2;
        }
    };
    let pump = pump(child.stderr.take().expect("piped"), Kind::Stderr, tx);
    let out = BufReader::new(child.stdout.take().expect("piped"));
    for line in out.lines().map_while(Result::ok) {
        match line.strip_prefix(OP_PREFIX) {
            Some(rest) => relay(tx, rest),
            None => tx.send(Kind::Stdout, "-", format!("{line}\n").as_bytes()),
        }
    }
    let _ = pump.join();
    match child.wait() {
        Ok(s) => s.code().unwrap_or(128),
        Err(_) => 128,
    }
}

/// numalab in the guest, its output piped: in `cwd`, or else in PID 1's
/// working directory (`/`, or the `--cwd` of a host-filesystem guest).
pub fn spawn<A: AsRef<std::ffi::OsStr>>(
    exe: &str,
    args: &[A],
    cwd: Option<&str>,
) -> Result<std::process::Child, SpawnError> {
    let mut cmd = Command::new(exe);
    if let Some(c) = cwd {
        cmd.current_dir(c);
    }
    cmd.args(args)
        .env("NUMALAB_GUEST", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| SpawnError {
            exe: exe.to_string(),
            source,
        })
}

/// Send what `from` gives as `kind` frames, on a thread, until it ends.
pub fn pump<S: Sender>(
    mut from: impl Read + Send + 'static,
    kind: Kind,
    tx: &S,
) -> std::thread::JoinHandle<()> {
    let tx = tx.clone();
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 16 << 10];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => tx.send(kind, "-", &buf[..n]),
            }
        }
    })
}

/// One protocol line of the child, as frames.
fn relay<S: Sender>(tx: &S, line: &str) {
    let (what, arg) = line.split_once(' ').unwrap_or((line, ""));
    match what {
        "reply" => tx.send(Kind::Reply, "-", arg.as_bytes()),
        "progress" => tx.send(Kind::Progress, "-", arg.as_bytes()),
        "record" | "log" => {
            let path = Path::new(arg);
            let name = crate::frame::sanitize_name(
                &path
                    .file_name()
                    .map(|n| n.to_string_lossy().to_string())
                    .unwrap_or_default(),
            );
            match std::fs::read(path) {
                Ok(data) => {
                    let kind = if what == "record" {
                        Kind::Record
                    } else {
                        Kind::Log
                    };
                    tx.send(kind, &name, &data);
                    // Sent: the guest's copy is not needed again.
                    let _ = std::fs::remove_file(path);
                }
                Err(e) => tx.send(
                    Kind::Stderr,
                    "-",
                    format!("numalab-vm: {arg}: {e}\n").as_bytes(),
                ),
            }
        }
        _ => tx.send(
            Kind::Stderr,
            "-",
            format!("numalab-vm: unknown op line {line:?}\n").as_bytes(),
        ),
    }
}

/// Frames collected in memory, for tests.
#[cfg(test)]
#[derive(Clone)]
pub(crate) struct FileSender(pub std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

#[cfg(test)]
impl Sender for FileSender {
    fn send(&self, kind: Kind, name: &str, payload: &[u8]) {
        let mut v = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let _ = v.write_all(&encode(kind, name, payload));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::Frame;

    fn frames(sink: &FileSender) -> Vec<Frame> {
        let data = sink.0.lock().unwrap().clone();
        Parser::new()
            .push(&data)
            .into_iter()
            .map(|f| f.unwrap())
            .collect()
    }

    #[test]
    fn a_bad_request_is_answered_and_the_agent_goes_on_until_quit() {
        let d = tempfile::tempdir().unwrap();
        let input = d.path().join("in");
        let mut bytes = encode(Kind::Request, "-", b"{\"op\":\"nonsense\"}");
        // Settings with nothing to undo and nothing to apply.
        bytes.extend(encode(
            Kind::Request,
            "-",
            br#"{"op":"settings","knobs":[]}"#,
        ));
        bytes.extend(encode(Kind::Request, "-", br#"{"op":"quit"}"#));
        // Never read: the agent stops at quit.
        bytes.extend(encode(Kind::Request, "-", br#"{"op":"spin_rate"}"#));
        std::fs::write(&input, bytes).unwrap();
        let sink = FileSender(Default::default());
        serve(&sink, std::fs::File::open(&input).unwrap(), "/nonexistent").unwrap();
        let f = frames(&sink);
        let kinds: Vec<Kind> = f.iter().map(|f| f.kind).collect();
        assert_eq!(
            kinds,
            [Kind::Reply, Kind::Exit, Kind::Reply, Kind::Exit, Kind::Exit]
        );
        let first: Reply = serde_json::from_slice(&f[0].payload).unwrap();
        assert!(
            matches!(first, Reply::Error(ref m) if m.contains("nonsense")),
            "{first:?}"
        );
        assert_eq!(f[1].payload, br#"{"code":2}"#);
        let second: Reply = serde_json::from_slice(&f[2].payload).unwrap();
        assert_eq!(second, Reply::Ok(serde_json::json!({})));
    }

    #[test]
    fn op_lines_become_frames_and_files_are_sent_then_removed() {
        let d = tempfile::tempdir().unwrap();
        let rec = d.path().join("r1.json");
        std::fs::write(&rec, b"{\"x\":1}").unwrap();
        let sink = FileSender(Default::default());
        relay(&sink, "progress 0.5");
        relay(&sink, &format!("record {}", rec.display()));
        relay(&sink, "reply {\"ok\":1}");
        relay(&sink, "record /nonexistent/r2.json");
        let f = frames(&sink);
        assert_eq!(f[0].kind, Kind::Progress);
        assert_eq!(f[0].payload, b"0.5");
        assert_eq!(f[1].kind, Kind::Record);
        assert_eq!(f[1].name, "r1.json");
        assert_eq!(f[1].payload, b"{\"x\":1}");
        assert!(!rec.exists());
        assert_eq!(f[2].kind, Kind::Reply);
        assert_eq!(f[3].kind, Kind::Stderr);
        assert_eq!(op_line("progress", "1"), "@@op progress 1");
    }
}
