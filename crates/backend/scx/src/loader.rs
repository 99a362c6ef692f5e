//! `numalab __scx-load SPEC`: load one of numalab's sched_ext schedulers
//! and hold it until SIGINT or SIGTERM.
//!
//! Standard output carries two lines for whoever started it (the
//! runner, or PID 1 in a guest): [`ENABLED_LINE`] once the kernel says
//! the scheduler is enabled, and [`EXIT_LINE`] with its `scx_exit_info`
//! as JSON when it has ended. Exit status: 0 after an unload asked for
//! with SIGINT or SIGTERM, 1 when the kernel ended the scheduler (an
//! error, a stall, SysRq-S), 2 when it could not be loaded; libbpf's and
//! the verifier's messages go to standard error.

use crate::Resolved;
use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use numalab_linux::sched_ext::{self, exit_kind_name, ExitInfo, Status, ENABLED_LINE, EXIT_LINE};
use std::io::Write;
use std::mem::MaybeUninit;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod fifo {
    #![allow(clippy::all, non_camel_case_types, non_snake_case, dead_code)]
    include!(concat!(env!("OUT_DIR"), "/fifo.skel.rs"));
}

/// How long the kernel may take to enable a scheduler (a TCG guest took
/// 1.4 s for scx_simple).
const ENABLE_TIMEOUT: Duration = Duration::from_secs(30);

/// The vmlinux.h the schedulers were compiled against.
pub const VMLINUX_H: &str = env!("NUMALAB_SCX_VMLINUX_H");

/// The process's exit status.
pub fn main(spec: &str) -> i32 {
    match run(spec) {
        Ok(code) => code,
        Err(e) => {
            numalab_linux::errln!("numalab __scx-load: {e}");
            2
        }
    }
}

/// A C string field of the exit record.
fn text(chars: &[i8]) -> String {
    let bytes: Vec<u8> = chars
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Reads an exit record's fields, `kind` first and with a volatile
/// load: the kernel writes it in `ops.exit`, behind our back.
macro_rules! exit_reader {
    ($rec:expr, $ty:ty) => {{
        let p: *const $ty = $rec;
        move || -> Option<ExitInfo> {
            // SAFETY: `p` points into the skeleton's mmapped .data map,
            // which lives as long as the skeleton, longer than this
            // closure's uses; `kind` is written last by the program.
            let kind = unsafe { std::ptr::read_volatile(std::ptr::addr_of!((*p).kind)) };
            if kind == 0 {
                return None;
            }
            std::sync::atomic::fence(Ordering::Acquire);
            // SAFETY: as above; the fields are complete once `kind` is set.
            let r = unsafe { std::ptr::read_volatile(p) };
            Some(ExitInfo {
                kind: kind as i64,
                kind_name: exit_kind_name(kind as i64),
                code: r.code,
                reason: text(&r.reason),
                msg: text(&r.msg),
            })
        }
    }};
}

fn run(spec: &str) -> Result<i32, String> {
    let (scx, resolved) = crate::parse(spec)?;
    let ops = scx.expected_ops().unwrap_or_default().to_string();
    let root = sched_ext::root();
    if let Some(why) = sched_ext::unsupported(&root) {
        return Err(format!("{}: {why}", scx.flag()));
    }
    let before = Status::read(&root)?;
    if before.state != "disabled" {
        return Err(format!(
            "{}: a sched_ext scheduler is already loaded ({})",
            scx.flag(),
            before.describe()
        ));
    }
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone()).map_err(|e| format!("signals: {e}"))?;
    }
    let fail = |what: &str, e: libbpf_rs::Error| format!("{ops}: {what}: {e}");
    match resolved {
        Resolved::Fifo { slice_ns } => {
            let mut storage = MaybeUninit::uninit();
            let mut open = fifo::FifoSkelBuilder::default()
                .open(&mut storage)
                .map_err(|e| fail("opening the BPF object", e))?;
            open.maps
                .rodata_data
                .as_deref_mut()
                .ok_or_else(|| format!("{ops}: no .rodata in the object"))?
                .slice_ns = slice_ns;
            let mut skel = open.load().map_err(|e| fail("loading", e))?;
            let data = skel
                .maps
                .data_data
                .as_deref()
                .ok_or_else(|| format!("{ops}: no .data in the object"))?;
            let read = exit_reader!(&data.nl_exit_rec, fifo::types::nl_exit);
            let link = skel
                .maps
                .fifo_ops
                .attach_struct_ops()
                .map_err(|e| fail("attaching", e))?;
            hold(&root, before.enable_seq, &ops, &stop, &read, link)
        }
    }
}

fn print_exit(e: &ExitInfo) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "{EXIT_LINE}{}",
        serde_json::to_string(e).expect("an exit record serialises")
    );
    let _ = out.flush();
}

/// Wait for the kernel to enable it, say so, hold the link until asked
/// to stop or until the kernel ends the scheduler; print how it ended.
fn hold(
    root: &Path,
    before: u64,
    ops: &str,
    stop: &AtomicBool,
    read: &dyn Fn() -> Option<ExitInfo>,
    link: libbpf_rs::Link,
) -> Result<i32, String> {
    let enabled = sched_ext::wait_enabled(root, before, Some(ops), ENABLE_TIMEOUT, &mut || {
        read().map(|e| format!("the kernel ended it: {}", e.describe()))
    });
    let status = match enabled {
        Ok(s) => s,
        Err(e) => {
            if let Some(x) = read() {
                print_exit(&x);
            }
            return Err(format!("{ops}: {e}"));
        }
    };
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{ENABLED_LINE} {ops} enable_seq={}", status.enable_seq);
        let _ = out.flush();
    }
    while !stop.load(Ordering::Relaxed) {
        if let Some(e) = read() {
            print_exit(&e);
            return Ok(1);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(link);
    // The kernel runs ops.exit as it disables the scheduler.
    let t = Instant::now();
    let mut exit = read();
    while t.elapsed() < Duration::from_secs(5) {
        exit = exit.or_else(read);
        let disabled = Status::read(root).is_ok_and(|s| s.state == "disabled");
        if exit.is_some() && disabled {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    match exit {
        Some(e) => {
            print_exit(&e);
            Ok(0)
        }
        None => Err(format!("{ops}: no exit record 5 s after unloading")),
    }
}
