//! The host's side: send a request over a [`Transport`], collect its
//! answer up to the agent's `exit` frame, and check what came back before
//! anything is written on the host. A backend that drives a machine
//! through the agent (the QEMU guest today) supplies the transport and
//! says how the stream ended in its own words; the rest is here.

use crate::frame::{Frame, Kind};
use crate::request::{Reply, Request};
use numalab_record::RunRecord;
use numalab_runner::RunError;
use std::path::Path;

/// A byte stream to an agent, as frames.
pub trait Transport {
    /// How the stream ended (a guest that stopped, a connection closed).
    type End;
    /// Why a frame could not be sent.
    type SendError: std::fmt::Display;
    /// Send one frame.
    fn send(&mut self, kind: Kind, name: &str, payload: &[u8]) -> Result<(), Self::SendError>;
    /// The next frame, waiting for it; or how the stream ended.
    fn next_frame(&mut self) -> Result<Frame, Self::End>;
}

/// What one request brought back.
#[derive(Debug, Default)]
pub struct Answer {
    pub reply: Option<Reply>,
    /// `record` frames: (file name, contents).
    pub records: Vec<(String, Vec<u8>)>,
    /// `log` frames: (file name, contents).
    pub logs: Vec<(String, Vec<u8>)>,
    /// The `exit` frame's code.
    pub code: i32,
}

/// Why a request has no answer.
#[derive(Debug)]
pub enum Failure<E> {
    /// The request was not sent (the error's text), though the stream
    /// had not ended.
    Send(String),
    /// The stream ended before the `exit` frame.
    Ended(E),
    /// The far side sent an `error` frame (its text).
    Error(String),
}

/// Send `req`, collect the answer up to the agent's `exit` frame;
/// `progress` is told each `progress` frame's fraction.
pub fn request<T: Transport>(
    t: &mut T,
    req: &Request,
    progress: &dyn Fn(f64),
) -> Result<Answer, Failure<T::End>> {
    let json = serde_json::to_vec(req).expect("a request serialises");
    if let Err(e) = t.send(Kind::Request, "-", &json) {
        // The far side may have just ended; say how, if it did.
        return match t.next_frame() {
            Err(end) => Err(Failure::Ended(end)),
            Ok(_) => Err(Failure::Send(e.to_string())),
        };
    }
    let mut a = Answer::default();
    loop {
        let f = t.next_frame().map_err(Failure::Ended)?;
        match f.kind {
            Kind::Reply => {
                a.reply = Some(
                    serde_json::from_slice(&f.payload)
                        .unwrap_or_else(|e| Reply::Error(format!("a reply: {e}"))),
                )
            }
            Kind::Progress => {
                if let Some(v) = std::str::from_utf8(&f.payload)
                    .ok()
                    .and_then(|t| t.trim().parse::<f64>().ok())
                {
                    progress(v.clamp(0.0, 1.0));
                }
            }
            Kind::Record => a.records.push((f.name, f.payload)),
            Kind::Log => a.logs.push((f.name, f.payload)),
            Kind::Exit => {
                let v: serde_json::Value = serde_json::from_slice(&f.payload).unwrap_or_default();
                a.code = v["code"].as_i64().unwrap_or(1) as i32;
                return Ok(a);
            }
            Kind::Error => {
                return Err(Failure::Error(
                    String::from_utf8_lossy(&f.payload).to_string(),
                ))
            }
            _ => {}
        }
    }
}

/// Why a request to the far side's numalab has no value.
#[derive(Debug, thiserror::Error)]
pub enum AnswerError {
    /// It answered with an error (its text).
    #[error("{0}")]
    Refused(String),
    /// It exited without answering.
    #[error("the guest's numalab gave no answer (exit code {0})")]
    NoAnswer(i32),
    /// Its value is not what was asked for.
    #[error("{0}")]
    Decode(serde_json::Error),
}

impl Answer {
    /// The value of a successful answer.
    pub fn value(self) -> Result<serde_json::Value, AnswerError> {
        match self.reply {
            Some(Reply::Ok(v)) => Ok(v),
            Some(Reply::Error(e)) => Err(AnswerError::Refused(e)),
            None => Err(AnswerError::NoAnswer(self.code)),
        }
    }

    /// The value, decoded as `V`.
    pub fn decode<V: serde::de::DeserializeOwned>(self) -> Result<V, AnswerError> {
        serde_json::from_value(self.value()?).map_err(AnswerError::Decode)
    }

    /// A run request's answer: its one record, checked to be the run
    /// asked for (`asked`: benchmark, label, repetition), with the log
    /// files beside it written into `results`.
    pub fn run_record(
        self,
        asked: (&str, &str, u32),
        results: &Path,
    ) -> Result<RunRecord, RunError> {
        if let Some(Reply::Error(e)) = self.reply {
            return Err(RunError::Failed(e));
        }
        let rec = answered_record(self.records, self.code, asked)?;
        let id = numalab_record::RecordId::parse(&rec.id)
            .map_err(|e| RunError::Failed(format!("the guest's record frame: {e}")))?;
        for (name, data) in self.logs {
            if !numalab_record::id::is_side_of(&id, &name) {
                return Err(RunError::Failed(format!(
                    "the guest's log frame {name:?} is not a file of record {id}: refused"
                )));
            }
            let p = results.join(&name);
            std::fs::create_dir_all(results)
                .and_then(|_| numalab_record::write_file_atomic(&p, &data))
                .map_err(|e| RunError::Failed(format!("{}: {e}", p.display())))?;
        }
        Ok(rec)
    }
}

/// The one record a run request is answered with, checked to be the run
/// that was asked for: a program on the far side can write frames too, so
/// a record for another benchmark, label or repetition, or a second
/// record, is refused with the frame's name.
fn answered_record(
    records: Vec<(String, Vec<u8>)>,
    code: i32,
    asked: (&str, &str, u32),
) -> Result<RunRecord, RunError> {
    let mut records = records.into_iter();
    let Some((name, data)) = records.next() else {
        return Err(RunError::Failed(format!(
            "the guest's numalab sent no record (exit code {code})"
        )));
    };
    if let Some((second, _)) = records.next() {
        return Err(RunError::Failed(format!(
            "the guest sent a second record frame {second:?} for one run: refused"
        )));
    }
    let rec = numalab_record::parse(Path::new(&name), &String::from_utf8_lossy(&data))
        .map_err(|e| RunError::Failed(format!("the guest's record frame: {e}")))?;
    let got = (
        rec.benchmark.as_str(),
        rec.label.as_str(),
        rec.repetition.index,
    );
    if asked != got {
        return Err(RunError::Failed(format!(
            "the guest's record frame {name:?} is {} {:?} #{}, not the run asked for ({} {:?} #{}): refused",
            got.0, got.1, got.2, asked.0, asked.1, asked.2
        )));
    }
    Ok(rec)
}

#[cfg(test)]
mod frame_tests {
    use super::*;
    use crate::frame::{encode, Parser};
    use std::collections::VecDeque;

    fn frame(id: &str, bench: &str, label: &str, index: u32) -> (String, Vec<u8>) {
        let mut r = numalab_record::example_record(bench, label, index, 1.0);
        r.id = id.to_string();
        (format!("{id}.json"), serde_json::to_vec(&r).unwrap())
    }

    fn refused(r: Result<numalab_record::RunRecord, RunError>, needle: &str) {
        match r {
            Err(RunError::Failed(e)) => assert!(e.contains(needle), "{needle:?} not in {e:?}"),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn the_run_asked_for_is_taken() {
        let r = answered_record(vec![frame("ok-1", "numa02", "a", 2)], 0, ("numa02", "a", 2));
        assert_eq!(r.unwrap().id, "ok-1");
    }

    /// A program in the guest wrote a record frame whose id climbed out
    /// of the results directory; the host wrote it there as root.
    #[test]
    fn a_forged_id_is_refused() {
        let f = frame("../../../../outside/escaped", "numa02", "a", 2);
        refused(answered_record(vec![f], 0, ("numa02", "a", 2)), "record id");
    }

    #[test]
    fn another_run_or_a_second_record_is_refused() {
        let asked = ("numa02", "a", 2);
        refused(
            answered_record(vec![frame("x", "numa01", "a", 2)], 0, asked),
            "not the run asked for",
        );
        refused(
            answered_record(vec![frame("x", "numa02", "b", 2)], 0, asked),
            "not the run asked for",
        );
        refused(
            answered_record(vec![frame("x", "numa02", "a", 3)], 0, asked),
            "not the run asked for",
        );
        let two = vec![frame("x", "numa02", "a", 2), frame("y", "numa02", "a", 2)];
        refused(answered_record(two, 0, asked), "second record");
        refused(answered_record(vec![], 1, asked), "sent no record");
    }

    /// Frames scripted in advance; what was sent is kept.
    struct Script {
        incoming: VecDeque<Frame>,
        sent: Vec<u8>,
        refuse_send: bool,
    }

    impl Script {
        fn new(frames: &[(Kind, &str, &[u8])]) -> Script {
            let mut bytes = Vec::new();
            for (k, n, p) in frames {
                bytes.extend(encode(*k, n, p));
            }
            let incoming = Parser::new()
                .push(&bytes)
                .into_iter()
                .map(|f| f.unwrap())
                .collect();
            Script {
                incoming,
                sent: Vec::new(),
                refuse_send: false,
            }
        }
    }

    impl Transport for Script {
        type End = &'static str;
        type SendError = &'static str;
        fn send(&mut self, kind: Kind, name: &str, payload: &[u8]) -> Result<(), &'static str> {
            if self.refuse_send {
                return Err("broken pipe");
            }
            self.sent.extend(encode(kind, name, payload));
            Ok(())
        }
        fn next_frame(&mut self) -> Result<Frame, &'static str> {
            self.incoming.pop_front().ok_or("gone")
        }
    }

    #[test]
    fn an_answer_is_collected_up_to_its_exit_frame() {
        let (name, rec) = frame("r-1", "numa02", "a", 0);
        let mut t = Script::new(&[
            (Kind::Stdout, "-", b"noise"),
            (Kind::Progress, "-", b"0.25"),
            (Kind::Progress, "-", b"7"),
            (Kind::Record, &name, &rec),
            (Kind::Reply, "-", b"{\"ok\":null}"),
            (Kind::Exit, "-", b"{\"code\":0}"),
            (Kind::Reply, "-", b"{\"ok\":\"the next request's\"}"),
        ]);
        let seen = std::cell::RefCell::new(Vec::new());
        let a = request(&mut t, &Request::SpinRate, &|f| seen.borrow_mut().push(f)).unwrap();
        assert_eq!(*seen.borrow(), [0.25, 1.0]);
        assert_eq!(a.records.len(), 1);
        assert_eq!(a.code, 0);
        assert_eq!(a.reply, Some(Reply::Ok(serde_json::Value::Null)));
        assert_eq!(t.incoming.len(), 1);
        let sent = Parser::new().push(&t.sent);
        let sent = sent[0].as_ref().unwrap();
        assert_eq!(sent.kind, Kind::Request);
        assert_eq!(sent.payload, br#"{"op":"spin_rate"}"#);
    }

    #[test]
    fn an_end_an_error_frame_or_a_failed_send_is_a_failure() {
        let mut t = Script::new(&[(Kind::Progress, "-", b"0.5")]);
        let r = request(&mut t, &Request::Machine, &|_| {});
        assert!(matches!(r, Err(Failure::Ended("gone"))), "{r:?}");
        let mut t = Script::new(&[(Kind::Error, "-", b"no shell")]);
        let r = request(&mut t, &Request::Machine, &|_| {});
        assert!(
            matches!(r, Err(Failure::Error(ref e)) if e == "no shell"),
            "{r:?}"
        );
        let mut t = Script::new(&[(Kind::Stdout, "-", b"still up")]);
        t.refuse_send = true;
        let r = request(&mut t, &Request::Machine, &|_| {});
        assert!(
            matches!(r, Err(Failure::Send(ref e)) if e == "broken pipe"),
            "{r:?}"
        );
        let mut t = Script::new(&[]);
        t.refuse_send = true;
        let r = request(&mut t, &Request::Machine, &|_| {});
        assert!(matches!(r, Err(Failure::Ended("gone"))), "{r:?}");
    }

    #[test]
    fn values_refusals_and_silence() {
        let ok = Answer {
            reply: Some(Reply::Ok(serde_json::json!(2.5))),
            ..Answer::default()
        };
        assert_eq!(ok.decode::<f64>().unwrap(), 2.5);
        let no = Answer {
            reply: Some(Reply::Error("no".into())),
            ..Answer::default()
        };
        assert_eq!(no.value().unwrap_err().to_string(), "no");
        let silent = Answer {
            code: 3,
            ..Answer::default()
        };
        assert_eq!(
            silent.value().unwrap_err().to_string(),
            "the guest's numalab gave no answer (exit code 3)"
        );
        let odd = Answer {
            reply: Some(Reply::Ok(serde_json::json!("x"))),
            ..Answer::default()
        };
        assert!(matches!(odd.decode::<f64>(), Err(AnswerError::Decode(_))));
    }

    #[test]
    fn a_run_writes_its_side_files_and_refuses_strangers() {
        let d = tempfile::tempdir().unwrap();
        let (name, rec) = frame("r-2", "numa02", "a", 1);
        let a = Answer {
            reply: Some(Reply::Ok(serde_json::Value::Null)),
            records: vec![(name.clone(), rec.clone())],
            logs: vec![("r-2.log".into(), b"out".to_vec())],
            code: 0,
        };
        let r = a.run_record(("numa02", "a", 1), d.path()).unwrap();
        assert_eq!(r.id, "r-2");
        assert_eq!(std::fs::read(d.path().join("r-2.log")).unwrap(), b"out");
        let a = Answer {
            records: vec![(name, rec)],
            logs: vec![("other.log".into(), b"x".to_vec())],
            ..Answer::default()
        };
        refused(
            a.run_record(("numa02", "a", 1), d.path()),
            "not a file of record",
        );
        let a = Answer {
            reply: Some(Reply::Error("it crashed".into())),
            ..Answer::default()
        };
        refused(a.run_record(("numa02", "a", 1), d.path()), "it crashed");
    }
}
