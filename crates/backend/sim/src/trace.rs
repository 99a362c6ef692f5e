//! `--trace FILE`: the simulated schedule in the Chrome / Perfetto JSON
//! trace event format (one "complete" event per run span, one track per
//! CPU, tracks grouped by node), openable in ui.perfetto.dev or
//! chrome://tracing.

use crate::engine::{Span, World};
use std::fmt::Write as _;

fn esc(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"?\"".into())
}

/// Render the spans of a finished run.
pub fn chrome_json(w: &World, spans: &[Span], title: &str) -> String {
    let mut out = String::with_capacity(64 + spans.len() * 120);
    out.push_str("{\"displayTimeUnit\":\"ms\",\"otherData\":{\"source\":");
    out.push_str(&esc(title));
    out.push_str("},\"traceEvents\":[\n");
    let mut first = true;
    let mut push = |out: &mut String, ev: String| {
        if !first {
            out.push_str(",\n");
        }
        first = false;
        out.push_str(&ev);
    };
    for n in 0..w.m.nnodes {
        push(
            &mut out,
            format!(
                "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{n},\"args\":{{\"name\":\"node {n}\"}}}}"
            ),
        );
    }
    for cpu in 0..w.m.ncpus {
        let n = w.m.cpu_node[cpu];
        push(
            &mut out,
            format!(
                "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{n},\"tid\":{cpu},\"args\":{{\"name\":\"CPU {cpu}\"}}}}"
            ),
        );
        push(
            &mut out,
            format!(
                "{{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":{n},\"tid\":{cpu},\"args\":{{\"sort_index\":{cpu}}}}}"
            ),
        );
    }
    for s in spans {
        let t = &w.tasks[s.task];
        let mut ev = String::new();
        let _ = write!(
            ev,
            "{{\"ph\":\"X\",\"name\":{},\"cat\":\"task\",\"pid\":{},\"tid\":{},\"ts\":{:.3},\"dur\":{:.3},\"args\":{{\"task\":{},\"process\":{}}}}}",
            esc(&t.name),
            w.m.cpu_node[s.cpu],
            s.cpu,
            s.start as f64 / 1e3,
            (s.end - s.start) as f64 / 1e3,
            s.task,
            t.process
        );
        push(&mut out, ev);
    }
    out.push_str("\n]}\n");
    out
}
