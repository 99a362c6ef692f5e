//! Exact scheduling events of a task tree, from `perf_event_open`.
//!
//! A [`Tracer`] attaches to the calling thread with `inherit`, one event
//! per CPU, before the benchmark's tasks are started: every process and
//! thread the thread creates afterwards, and theirs, carries the same
//! events. The event is the software `dummy` event with `task` and `comm`
//! records: each task's fork (parent, time), its execs (new command
//! name) and its exit. That defines the tree.
//!
//! Context switches (with CPU and time, and whether a switch out was a
//! preemption or a sleep) come one of two ways, [`Switches`]:
//!
//! - **CPU-wide** where allowed (root, `CAP_PERFMON`, or
//!   `perf_event_paranoid` <= 0): a second dummy event per CPU, not tied
//!   to a task, whose switch-out records name both the task leaving and
//!   the task coming in, stamped where the scheduler's `sched_switch`
//!   fires. Records of tasks outside the tree are dropped here, as they
//!   are read; nothing of them is kept. Run intervals then match the
//!   kernel's own accounting (`sum_exec_runtime`, hence rusage).
//! - **The tree's own** switch records otherwise. The kernel writes a
//!   task's switch-in after the context switch and none for the final
//!   switch of an exiting task, so every run interval misses a few
//!   microseconds: nothing for CPU-bound tasks, ~10% of the time of
//!   millisecond-long processes.
//!
//! Where `sched_waking` can be opened (tracefs readable, or mountable by
//! root, and the tracepoint permitted: root or `perf_event_paranoid` -1),
//! its samples add, for wakeups done by a task of the tree, the waker's
//! CPU. Everything is read from per-CPU ring buffers by the caller
//! ([`Tracer::drain`], often, from any thread); lost records are counted.

use perf_event_open_sys as sys;
use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{fence, Ordering};

/// One scheduling event of a traced task. Times are CLOCK_MONOTONIC
/// nanoseconds (the perf clock of these events, `use_clockid`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// `tid` started running on `cpu`.
    SwitchIn {
        time: u64,
        cpu: u32,
        pid: u32,
        tid: u32,
    },
    /// `tid` stopped running on `cpu`; `preempted`: it stayed runnable.
    /// `guessed`: the kernel wrote no record of it; it stands at the
    /// next task's switch in, and `preempted` is a guess.
    SwitchOut {
        time: u64,
        cpu: u32,
        pid: u32,
        tid: u32,
        preempted: bool,
        guessed: bool,
    },
    /// `tid` (of process `pid`) was created by `ptid` (of `ppid`).
    Fork {
        time: u64,
        cpu: u32,
        pid: u32,
        ppid: u32,
        tid: u32,
        ptid: u32,
    },
    /// `tid` set its command name; `exec`: by an exec.
    Comm {
        time: u64,
        cpu: u32,
        pid: u32,
        tid: u32,
        comm: String,
        exec: bool,
    },
    Exit {
        time: u64,
        cpu: u32,
        pid: u32,
        tid: u32,
    },
    /// `waker` (on `cpu`) woke `wakee`, which last ran on `prev_cpu`.
    Waking {
        time: u64,
        cpu: u32,
        waker: u32,
        wakee: u32,
        prev_cpu: u32,
    },
    /// The kernel dropped this many records (a ring buffer was full).
    Lost { count: u64 },
}

/// How a [`Tracer`] sees context switches (see the module's text).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Switches {
    CpuWide,
    TaskTree,
}

impl Switches {
    /// How a record's `sched.method` says it.
    pub fn method(self) -> &'static str {
        match self {
            Switches::CpuWide => "perf_event_open: the task tree's forks, execs and exits (inherited dummy event), its context switches from CPU-wide switch records (at sched_switch), sched_waking for wakers' CPUs",
            Switches::TaskTree => "perf_event_open on the task tree only (inherited dummy event: context switches after the switch, none at exit: times of very short tasks understated), sched_waking for wakers' CPUs",
        }
    }
}

/// Why tracing cannot be used here, in one line.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct TraceError(pub String);

/// Ring buffer pages per CPU: 64 MiB over all CPUs, at least 1 MiB and
/// at most 8 MiB each (a power of two, as the kernel wants). A storm of
/// switches (hackbench: a million a second) fills 1 MiB in a few tens of
/// milliseconds when the reader waits for a CPU behind the benchmark.
fn ring_pages(ncpus: usize, page: usize) -> usize {
    let per_cpu = (64 << 20) / ncpus.max(1);
    let pages = (per_cpu / page).clamp((1 << 20) / page, (8 << 20) / page);
    1 << (usize::BITS - 1 - pages.leading_zeros())
}

struct Ring {
    fd: OwnedFd,
    base: *mut u8,
    len: usize,
    page: usize,
    /// The sched_waking event writing into this ring, if any.
    _waking: Option<OwnedFd>,
    /// The CPU-wide switch event writing into this ring, if any.
    switches: Option<OwnedFd>,
    /// Its last switch out not yet matched by a switch in.
    last_out: Option<(u32, u32)>,
}

// SAFETY: the mapping is owned by the ring and only touched through
// `&mut self`; nothing in it is tied to a thread.
unsafe impl Send for Ring {}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what `attach` mapped for this ring,
        // once; no pointer into it outlives the ring.
        unsafe {
            libc::munmap(self.base as *mut libc::c_void, self.len);
        }
    }
}

/// Where a `sched_waking` sample keeps its fields.
#[derive(Debug, Clone, Copy)]
struct WakingFormat {
    id: u64,
    pid: usize,
    target_cpu: usize,
}

/// The events of the calling thread's future descendants.
pub struct Tracer {
    rings: Vec<Ring>,
    waking: Option<String>,
    partial: Vec<u8>,
    switches: Switches,
    tree: Tree,
}

/// Which tasks are the tree's, for CPU-wide switch records: every task a
/// fork record names. A switch record may be read before the fork record
/// of its task (they sit in different CPUs' rings), so a record of an
/// unknown task waits two reads before it is dropped. A task's number is
/// forgotten [`EXITED_GRACE_NS`] after its exit, so that a later process
/// given the same number is not taken for it: not at its first switch
/// out after the exit record, which the kernel writes in do_exit before
/// the task may still be preempted or sleep (perf's sched_switch shows
/// `R+` or `S` there, then the final `Z`); forgetting it there lost its
/// last run and its last delay (hackbench's main, 61 ms).
#[derive(Default)]
struct Tree {
    tasks: std::collections::BTreeSet<u32>,
    /// Exit times of tasks still waiting for their final switch.
    exited: BTreeMap<u32, u64>,
    /// Switch records of tasks not (yet) known, with the reads they waited.
    pending: Vec<(u8, Event)>,
}

impl Tree {
    fn learn(&mut self, events: &[Event]) {
        for e in events {
            match *e {
                Event::Fork { tid, .. } => {
                    self.tasks.insert(tid);
                    self.exited.remove(&tid);
                }
                Event::Exit { tid, time, .. } => {
                    self.exited.insert(tid, time);
                }
                _ => {}
            }
        }
    }

    /// Keep the switches of the tree's tasks in `wide` (and those waiting
    /// from earlier reads) into `out`; `last`: nothing more will come.
    fn filter(&mut self, wide: Vec<Event>, out: &mut Vec<Event>, last: bool) {
        let mut all: Vec<(u8, Event)> = std::mem::take(&mut self.pending);
        all.extend(wide.into_iter().map(|e| (0, e)));
        all.sort_by_key(|(_, e)| switch_time(e));
        // The idle task's switch out is kept when a task of the tree
        // comes in at that moment: it says the CPU was idle.
        let mut idle_out: Option<Event> = None;
        for (age, e) in all {
            let (tid, into) = match e {
                Event::SwitchIn { tid, .. } => (tid, true),
                Event::SwitchOut { tid, .. } => (tid, false),
                _ => continue,
            };
            if tid == 0 {
                idle_out = (!into).then_some(e);
                continue;
            }
            let after_idle = idle_out.take();
            if self.tasks.contains(&tid) {
                let exit = self.exited.get(&tid).copied();
                if let Some(exit) = exit {
                    if switch_time(&e) > exit + EXITED_GRACE_NS {
                        self.exited.remove(&tid);
                        self.tasks.remove(&tid);
                        continue;
                    }
                }
                if let Some(idle) = after_idle.filter(|i| into && same_moment(i, &e)) {
                    out.push(idle);
                }
                out.push(e);
            } else if age < 2 && !last {
                if let Some(idle) = after_idle.filter(|i| into && same_moment(i, &e)) {
                    self.pending.push((age + 1, idle));
                }
                self.pending.push((age + 1, e));
            }
        }
    }
}

/// How long after its exit record a task's number is still its own: the
/// final switch comes within microseconds (a task preempted on its way
/// out waits a few ticks at most); the kernel hands numbers out in turn
/// up to pid_max, so a number is not reused that soon.
pub const EXITED_GRACE_NS: u64 = 1_000_000_000;

/// Two switches of one CPU at one time (one record read as both).
fn same_moment(a: &Event, b: &Event) -> bool {
    let at = |e: &Event| match *e {
        Event::SwitchIn { time, cpu, .. } | Event::SwitchOut { time, cpu, .. } => Some((time, cpu)),
        _ => None,
    };
    at(a).is_some() && at(a) == at(b)
}

fn switch_time(e: &Event) -> u64 {
    match e {
        Event::SwitchIn { time, .. } | Event::SwitchOut { time, .. } => *time,
        _ => 0,
    }
}

impl Tracer {
    /// Attach to the calling thread, one event per CPU in `cpus`. Errors
    /// say why tracing is not allowed here.
    pub fn attach(cpus: &[u32]) -> Result<Tracer, TraceError> {
        let page = crate::numa::page_size();
        let (waking, why_not) = match waking_format() {
            Ok(f) => (Some(f), None),
            Err(e) => (None, Some(e)),
        };
        let mut rings = Vec::new();
        let mut waking_ok = waking.is_some();
        let switches = match cpus.first().map(|&c| open_cpu_switches(c)) {
            Some(Ok(_)) => Switches::CpuWide,
            _ => Switches::TaskTree,
        };
        // Smaller rings where the locked-memory limit does not allow
        // these (an unprivileged user), down to 64 KiB.
        let mut pages = ring_pages(cpus.len(), page);
        for &cpu in cpus {
            let fd = open_dummy(cpu, switches == Switches::TaskTree)?;
            let (base, len) = loop {
                let len = (1 + pages) * page;
                // SAFETY: a new shared mapping of the event's ring at an
                // address the kernel chooses; the result is checked below.
                let base = unsafe {
                    libc::mmap(
                        std::ptr::null_mut(),
                        len,
                        libc::PROT_READ | libc::PROT_WRITE,
                        libc::MAP_SHARED,
                        fd.as_raw_fd(),
                        0,
                    )
                };
                if base != libc::MAP_FAILED || pages * page <= 64 << 10 {
                    break (base, len);
                }
                pages /= 2;
            };
            if base == libc::MAP_FAILED {
                return Err(TraceError(format!(
                    "mapping the perf ring buffer of CPU {cpu}: {} (raise /proc/sys/kernel/perf_event_mlock_kb)",
                    io::Error::last_os_error()
                )));
            }
            let mut ring = Ring {
                fd,
                base: base as *mut u8,
                len,
                page,
                _waking: None,
                switches: None,
                last_out: None,
            };
            if switches == Switches::CpuWide {
                let sw = open_cpu_switches(cpu)
                    .and_then(|sw| set_output(&sw, &ring.fd).map(|()| sw))
                    .map_err(|e| {
                        TraceError(format!("CPU-wide switch records on CPU {cpu}: {e}"))
                    })?;
                ring.switches = Some(sw);
            }
            if let (Some(w), true) = (waking, waking_ok) {
                match open_waking(w, cpu, &ring.fd) {
                    Ok(fd) => ring._waking = Some(fd),
                    Err(_) => waking_ok = false,
                }
            }
            rings.push(ring);
        }
        if !waking_ok {
            for r in &mut rings {
                r._waking = None;
            }
        }
        for r in &rings {
            if let Some(w) = &r._waking {
                ioctl(w, sys::bindings::ENABLE)?;
            }
            if let Some(sw) = &r.switches {
                ioctl(sw, sys::bindings::ENABLE)?;
            }
            ioctl(&r.fd, sys::bindings::ENABLE)?;
        }
        let waking_note = match (waking_ok, why_not) {
            (true, _) => None,
            (false, Some(e)) => Some(e.to_string()),
            (false, None) => Some("sched_waking could not be opened".to_string()),
        };
        Ok(Tracer {
            rings,
            waking: waking_note,
            partial: Vec::new(),
            switches,
            tree: Tree::default(),
        })
    }

    /// How this tracer sees context switches.
    pub fn switches(&self) -> Switches {
        self.switches
    }

    /// Why wakers' CPUs are not traced, when they are not.
    pub fn waker_cpu_unavailable(&self) -> Option<&str> {
        self.waking.as_deref()
    }

    /// Read every record written so far.
    pub fn drain(&mut self, out: &mut Vec<Event>) {
        self.read(out, false)
    }

    fn read(&mut self, out: &mut Vec<Event>, last: bool) {
        let from = out.len();
        let mut wide = Vec::new();
        for i in 0..self.rings.len() {
            let waking = self.rings[i]._waking.is_some();
            let wf = if waking { WAKING.get().copied() } else { None };
            let ring = &mut self.rings[i];
            read_ring(ring, &mut self.partial, wf, out, &mut wide);
        }
        self.tree.learn(&out[from..]);
        self.tree.filter(wide, out, last);
    }

    /// Stop recording (children created from now on are not traced) and
    /// read what is left.
    pub fn stop(mut self, out: &mut Vec<Event>) {
        for r in &self.rings {
            if let Some(w) = &r._waking {
                let _ = ioctl(w, sys::bindings::DISABLE);
            }
            if let Some(sw) = &r.switches {
                let _ = ioctl(sw, sys::bindings::DISABLE);
            }
            let _ = ioctl(&r.fd, sys::bindings::DISABLE);
        }
        self.read(out, true);
    }
}

static WAKING: std::sync::OnceLock<WakingFormat> = std::sync::OnceLock::new();

fn ioctl(fd: &OwnedFd, req: u32) -> Result<(), TraceError> {
    // SAFETY: the perf ioctls used here (enable, disable) take an integer
    // argument, not a pointer; the descriptor is borrowed for the call.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), req as _, 0) };
    if r < 0 {
        return Err(TraceError(format!(
            "perf ioctl: {}",
            io::Error::last_os_error()
        )));
    }
    Ok(())
}

fn base_attr() -> sys::bindings::perf_event_attr {
    let mut a = sys::bindings::perf_event_attr {
        size: std::mem::size_of::<sys::bindings::perf_event_attr>() as u32,
        sample_type: (sys::bindings::PERF_SAMPLE_TID
            | sys::bindings::PERF_SAMPLE_TIME
            | sys::bindings::PERF_SAMPLE_CPU) as u64,
        ..Default::default()
    };
    a.set_disabled(1);
    a.set_inherit(1);
    a.set_sample_id_all(1);
    a.set_use_clockid(1);
    a.clockid = libc::CLOCK_MONOTONIC;
    a
}

fn perf_open(
    attr: &mut sys::bindings::perf_event_attr,
    pid: i32,
    cpu: u32,
    group: i32,
) -> io::Result<OwnedFd> {
    // SAFETY: `attr` is a valid perf_event_attr whose `size` is its own;
    // the kernel only reads it (and may write its size back).
    let fd = unsafe {
        sys::perf_event_open(
            attr,
            pid,
            cpu as i32,
            group,
            sys::bindings::PERF_FLAG_FD_CLOEXEC as _,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a descriptor the kernel just opened for us, owned by
    // nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The CPU-wide switch records of `cpu` (every task's; filtered by the
/// reader), not inherited: it follows no task.
fn open_cpu_switches(cpu: u32) -> io::Result<OwnedFd> {
    let mut a = base_attr();
    a.type_ = sys::bindings::PERF_TYPE_SOFTWARE;
    a.config = sys::bindings::PERF_COUNT_SW_DUMMY as u64;
    a.set_inherit(0);
    a.set_context_switch(1);
    a.__bindgen_anon_2.wakeup_events = 0;
    perf_open(&mut a, -1, cpu, -1)
}

fn set_output(event: &OwnedFd, ring: &OwnedFd) -> io::Result<()> {
    // SAFETY: PERF_EVENT_IOC_SET_OUTPUT takes a descriptor number as its
    // argument; both descriptors are borrowed for the call.
    let r = unsafe {
        libc::ioctl(
            event.as_raw_fd(),
            sys::bindings::SET_OUTPUT as _,
            ring.as_raw_fd(),
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The tree's event on `cpu`: forks, execs, exits, and its own context
/// switches when `switches`.
fn open_dummy(cpu: u32, switches: bool) -> Result<OwnedFd, TraceError> {
    let mut a = base_attr();
    a.type_ = sys::bindings::PERF_TYPE_SOFTWARE;
    a.config = sys::bindings::PERF_COUNT_SW_DUMMY as u64;
    a.set_context_switch(switches as u64);
    a.set_task(1);
    a.set_comm(1);
    a.set_comm_exec(1);
    a.__bindgen_anon_2.wakeup_events = 0;
    match perf_open(&mut a, 0, cpu, -1) {
        Ok(fd) => Ok(fd),
        Err(e)
            if e.raw_os_error() == Some(libc::EACCES) || e.raw_os_error() == Some(libc::EPERM) =>
        {
            // perf_event_paranoid 2: user-space only.
            a.set_exclude_kernel(1);
            a.set_exclude_hv(1);
            perf_open(&mut a, 0, cpu, -1).map_err(|e2| {
                TraceError(format!(
                    "perf_event_open is not allowed here ({e2}; /proc/sys/kernel/perf_event_paranoid is {}): run as root or lower it",
                    fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
                        .map(|s| s.trim().to_string())
                        .unwrap_or_else(|_| "unreadable".into())
                ))
            })
        }
        Err(e)
            if e.raw_os_error() == Some(libc::ENOSYS) || e.raw_os_error() == Some(libc::ENOENT) =>
        {
            Err(TraceError(format!(
                "this kernel has no perf events ({e}): it needs CONFIG_PERF_EVENTS"
            )))
        }
        Err(e) => Err(TraceError(format!("perf_event_open on CPU {cpu}: {e}"))),
    }
}

fn open_waking(w: WakingFormat, cpu: u32, ring: &OwnedFd) -> io::Result<OwnedFd> {
    let mut a = base_attr();
    a.type_ = sys::bindings::PERF_TYPE_TRACEPOINT;
    a.config = w.id;
    a.sample_type |= sys::bindings::PERF_SAMPLE_RAW as u64;
    a.__bindgen_anon_1.sample_period = 1;
    let fd = perf_open(&mut a, 0, cpu, -1)?;
    set_output(&fd, ring)?;
    Ok(fd)
}

/// Why `sched_waking`'s format could not be read from tracefs.
#[derive(Debug, thiserror::Error)]
enum WakingError {
    #[error("tracefs is not mounted and could not be mounted (sched_waking's id and format are read there)")]
    NoTracefs,
    #[error("sched_waking id {0:?}")]
    BadId(String),
    #[error("sched_waking has no {0} field")]
    NoField(&'static str),
}

/// The tracepoint's id and field offsets, from tracefs; mounted for the
/// moment of reading (and unmounted again) when it is not mounted and
/// numalab may mount it.
fn waking_format() -> Result<WakingFormat, WakingError> {
    if let Some(w) = WAKING.get() {
        return Ok(*w);
    }
    let read = |root: &Path| -> Option<(String, String)> {
        let d = root.join("events/sched/sched_waking");
        Some((
            fs::read_to_string(d.join("id")).ok()?,
            fs::read_to_string(d.join("format")).ok()?,
        ))
    };
    let roots = [
        PathBuf::from("/sys/kernel/tracing"),
        PathBuf::from("/sys/kernel/debug/tracing"),
    ];
    let mut found = roots.iter().find_map(|r| read(r));
    if found.is_none() && crate::process::is_root() {
        let target = std::ffi::CString::new("/sys/kernel/tracing").expect("no NUL");
        let kind = std::ffi::CString::new("tracefs").expect("no NUL");
        // SAFETY: NUL-terminated strings that outlive the call; no data.
        let r = unsafe {
            libc::mount(
                kind.as_ptr(),
                target.as_ptr(),
                kind.as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                std::ptr::null(),
            )
        };
        if r == 0 {
            found = read(&roots[0]);
            // SAFETY: a NUL-terminated path that outlives the call.
            unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) };
        }
    }
    let (id, format) = found.ok_or(WakingError::NoTracefs)?;
    let id: u64 = id.trim().parse().map_err(|_| WakingError::BadId(id))?;
    let offset = |name: &str| -> Option<usize> {
        format.lines().find_map(|l| {
            let l = l.trim();
            let decl = l.strip_prefix("field:")?.split(';').next()?;
            if decl.split_whitespace().last()? != name {
                return None;
            }
            l.split(';')
                .find_map(|p| p.trim().strip_prefix("offset:"))?
                .parse()
                .ok()
        })
    };
    let w = WakingFormat {
        id,
        pid: offset("pid").ok_or(WakingError::NoField("pid"))?,
        target_cpu: offset("target_cpu").ok_or(WakingError::NoField("target_cpu"))?,
    };
    let _ = WAKING.set(w);
    Ok(w)
}

fn u32_at(b: &[u8], o: usize) -> u32 {
    b.get(o..o + 4)
        .map(|s| u32::from_ne_bytes(s.try_into().expect("4 bytes")))
        .unwrap_or(0)
}

fn u64_at(b: &[u8], o: usize) -> u64 {
    b.get(o..o + 8)
        .map(|s| u64::from_ne_bytes(s.try_into().expect("8 bytes")))
        .unwrap_or(0)
}

/// Copy out every complete record between tail and head, then release
/// them to the kernel.
/// CPU-wide switches go to `wide`, for the tree's filter.
fn read_ring(
    ring: &mut Ring,
    buf: &mut Vec<u8>,
    wf: Option<WakingFormat>,
    out: &mut Vec<Event>,
    wide: &mut Vec<Event>,
) {
    let meta = ring.base as *mut sys::bindings::perf_event_mmap_page;
    // SAFETY: the ring's mapping is its metadata page followed by its
    // data pages, `ring.len` bytes in all; the data starts a page in.
    let data = unsafe { ring.base.add(ring.page) };
    let size = (ring.len - ring.page) as u64;
    // SAFETY: the metadata page is mapped for as long as the ring, which
    // `&mut` holds; the kernel writes `data_head`, hence the volatile read.
    let head = unsafe { std::ptr::read_volatile(&(*meta).data_head) };
    fence(Ordering::Acquire);
    // SAFETY: as above; only this reader writes `data_tail`.
    let mut tail = unsafe { std::ptr::read_volatile(&(*meta).data_tail) };
    while tail + 8 <= head {
        let at = |off: u64| (off % size) as usize;
        // The header may wrap like the rest: copy byte by byte.
        let mut hdr = [0u8; 8];
        for (i, b) in hdr.iter_mut().enumerate() {
            // SAFETY: `at` reduces the offset modulo the data's size.
            *b = unsafe { *data.add(at(tail + i as u64)) };
        }
        let kind = u32::from_ne_bytes(hdr[0..4].try_into().expect("4"));
        let misc = u16::from_ne_bytes(hdr[4..6].try_into().expect("2"));
        let len = u16::from_ne_bytes(hdr[6..8].try_into().expect("2")) as u64;
        if len < 8 || tail + len > head {
            break;
        }
        buf.clear();
        let start = at(tail);
        let end = start + len as usize;
        // SAFETY: the record lies in the data pages: [start, end) when it
        // does not wrap, else [start, size) and [0, len - first); the
        // kernel does not overwrite records before `data_tail` moves past.
        unsafe {
            if end <= size as usize {
                buf.extend_from_slice(std::slice::from_raw_parts(data.add(start), len as usize));
            } else {
                let first = size as usize - start;
                buf.extend_from_slice(std::slice::from_raw_parts(data.add(start), first));
                buf.extend_from_slice(std::slice::from_raw_parts(data, len as usize - first));
            }
        }
        if kind == sys::bindings::PERF_RECORD_SWITCH_CPU_WIDE {
            parse_cpu_wide(misc, buf, &mut ring.last_out, wide);
        } else if let Some(e) = parse(kind, misc, buf, wf) {
            out.push(e);
        }
        tail += len;
    }
    fence(Ordering::SeqCst);
    // SAFETY: the metadata page is mapped and writable for as long as the
    // ring; the kernel reads `data_tail`, hence the volatile write.
    unsafe { std::ptr::write_volatile(&mut (*meta).data_tail, tail) };
}

/// A CPU-wide switch record. A switch out names the task coming in, and
/// is read as both; the switch in that follows it on the CPU is then
/// left aside. The kernel does not always write the switch out (seen
/// for a CPU's idle task and for some kernel-side threads): a switch in
/// that follows no matching switch out stands in for it, a few
/// microseconds later, and its task is taken as preempted (the record
/// cannot say), so that no wakeup is invented. `last_out`: the CPU's
/// last switch out not yet matched, as (task leaving, task coming in).
fn parse_cpu_wide(misc: u16, b: &[u8], last_out: &mut Option<(u32, u32)>, wide: &mut Vec<Event>) {
    let misc = misc as u32;
    let Some(s) = b.len().checked_sub(24) else {
        return;
    };
    let (pid, tid, time, cpu) = (
        u32_at(b, s),
        u32_at(b, s + 4),
        u64_at(b, s + 8),
        u32_at(b, s + 16),
    );
    let (other_pid, other_tid) = (u32_at(b, 8), u32_at(b, 12));
    let (out, into, preempted, guessed) = if misc & sys::bindings::PERF_RECORD_MISC_SWITCH_OUT != 0
    {
        *last_out = Some((tid, other_tid));
        (
            (pid, tid),
            (other_pid, other_tid),
            misc & sys::bindings::PERF_RECORD_MISC_SWITCH_OUT_PREEMPT != 0,
            false,
        )
    } else {
        if last_out.take() == Some((other_tid, tid)) {
            return;
        }
        ((other_pid, other_tid), (pid, tid), true, true)
    };
    wide.push(Event::SwitchOut {
        time,
        cpu,
        pid: out.0,
        tid: out.1,
        preempted,
        guessed,
    });
    wide.push(Event::SwitchIn {
        time,
        cpu,
        pid: into.0,
        tid: into.1,
    });
}

/// One record (header included) as an event. Non-sample records end
/// with the sample id: pid, tid (u32 each), time (u64), cpu, res (u32).
fn parse(kind: u32, misc: u16, b: &[u8], wf: Option<WakingFormat>) -> Option<Event> {
    let n = b.len();
    let id = |b: &[u8]| {
        let s = n.checked_sub(24)?;
        Some((
            u32_at(b, s),
            u32_at(b, s + 4),
            u64_at(b, s + 8),
            u32_at(b, s + 16),
        ))
    };
    let misc = misc as u32;
    match kind {
        sys::bindings::PERF_RECORD_SWITCH => {
            let (pid, tid, time, cpu) = id(b)?;
            if misc & sys::bindings::PERF_RECORD_MISC_SWITCH_OUT != 0 {
                Some(Event::SwitchOut {
                    time,
                    cpu,
                    pid,
                    tid,
                    preempted: misc & sys::bindings::PERF_RECORD_MISC_SWITCH_OUT_PREEMPT != 0,
                    guessed: false,
                })
            } else {
                Some(Event::SwitchIn {
                    time,
                    cpu,
                    pid,
                    tid,
                })
            }
        }
        sys::bindings::PERF_RECORD_FORK => {
            let (_, _, _, cpu) = id(b)?;
            Some(Event::Fork {
                pid: u32_at(b, 8),
                ppid: u32_at(b, 12),
                tid: u32_at(b, 16),
                ptid: u32_at(b, 20),
                time: u64_at(b, 24),
                cpu,
            })
        }
        sys::bindings::PERF_RECORD_EXIT => {
            let (_, _, _, cpu) = id(b)?;
            Some(Event::Exit {
                pid: u32_at(b, 8),
                tid: u32_at(b, 16),
                time: u64_at(b, 24),
                cpu,
            })
        }
        sys::bindings::PERF_RECORD_COMM => {
            let (_, _, time, cpu) = id(b)?;
            let name = b.get(16..n.saturating_sub(24))?;
            let end = name.iter().position(|&c| c == 0).unwrap_or(name.len());
            Some(Event::Comm {
                pid: u32_at(b, 8),
                tid: u32_at(b, 12),
                comm: String::from_utf8_lossy(&name[..end]).into_owned(),
                exec: misc & sys::bindings::PERF_RECORD_MISC_COMM_EXEC != 0,
                time,
                cpu,
            })
        }
        sys::bindings::PERF_RECORD_LOST => Some(Event::Lost {
            count: u64_at(b, 16),
        }),
        sys::bindings::PERF_RECORD_SAMPLE => {
            let wf = wf?;
            // tid: pid, tid; time; cpu, res; raw: size, data.
            let waker = u32_at(b, 12);
            let time = u64_at(b, 16);
            let cpu = u32_at(b, 24);
            let raw = b.get(36..)?;
            Some(Event::Waking {
                time,
                cpu,
                waker,
                wakee: u32_at(raw, wf.pid),
                prev_cpu: u32_at(raw, wf.target_cpu),
            })
        }
        _ => None,
    }
}

/// CLOCK_MONOTONIC now, in nanoseconds (the clock of the events).
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CPU-wide switch record as the kernel writes it.
    fn wide(out: bool, other: u32, cur: u32, time: u64, cpu: u32) -> (u16, Vec<u8>) {
        let mut b = Vec::new();
        b.extend_from_slice(&sys::bindings::PERF_RECORD_SWITCH_CPU_WIDE.to_ne_bytes());
        let misc = if out {
            sys::bindings::PERF_RECORD_MISC_SWITCH_OUT as u16
        } else {
            0
        };
        b.extend_from_slice(&misc.to_ne_bytes());
        b.extend_from_slice(&40u16.to_ne_bytes());
        for v in [other, other, cur, cur] {
            b.extend_from_slice(&v.to_ne_bytes());
        }
        b.extend_from_slice(&time.to_ne_bytes());
        b.extend_from_slice(&cpu.to_ne_bytes());
        b.extend_from_slice(&0u32.to_ne_bytes());
        (misc, b)
    }

    fn parse_all(records: &[(u16, Vec<u8>)]) -> Vec<Event> {
        let mut last = None;
        let mut out = Vec::new();
        for (misc, b) in records {
            parse_cpu_wide(*misc, b, &mut last, &mut out);
        }
        out
    }

    #[test]
    fn ring_sizes_scale_with_the_machine() {
        assert_eq!(ring_pages(2, 4096), 2048);
        assert_eq!(ring_pages(16, 4096), 1024);
        assert_eq!(ring_pages(24, 4096), 512);
        assert_eq!(ring_pages(256, 4096), 256);
    }

    #[test]
    fn a_switch_out_is_read_as_both_tasks_and_its_switch_in_is_left_aside() {
        let ev = parse_all(&[wide(true, 7, 5, 100, 1), wide(false, 5, 7, 103, 1)]);
        assert_eq!(
            ev,
            vec![
                Event::SwitchOut {
                    time: 100,
                    cpu: 1,
                    pid: 5,
                    tid: 5,
                    preempted: false,
                    guessed: false,
                },
                Event::SwitchIn {
                    time: 100,
                    cpu: 1,
                    pid: 7,
                    tid: 7
                },
            ]
        );
    }

    #[test]
    fn a_switch_in_without_its_switch_out_stands_in_for_it() {
        // 5 -> 0 is written; 0 -> 7 only as 7's switch in.
        let ev = parse_all(&[
            wide(true, 0, 5, 100, 1),
            wide(false, 0, 7, 250, 1),
            wide(true, 5, 7, 300, 1),
        ]);
        assert_eq!(ev.len(), 6, "{ev:?}");
        assert_eq!(
            ev[3],
            Event::SwitchIn {
                time: 250,
                cpu: 1,
                pid: 7,
                tid: 7
            }
        );
        assert!(matches!(
            ev[2],
            Event::SwitchOut {
                tid: 0,
                time: 250,
                preempted: true,
                guessed: true,
                ..
            }
        ));
    }

    fn fork(tid: u32, time: u64) -> Event {
        Event::Fork {
            time,
            cpu: 0,
            pid: tid,
            ppid: 1,
            tid,
            ptid: 1,
        }
    }

    fn sw(out: bool, tid: u32, time: u64) -> Event {
        if out {
            Event::SwitchOut {
                time,
                cpu: 0,
                pid: tid,
                tid,
                preempted: false,
                guessed: false,
            }
        } else {
            Event::SwitchIn {
                time,
                cpu: 0,
                pid: tid,
                tid,
            }
        }
    }

    #[test]
    fn the_tree_keeps_its_tasks_switches_waits_for_late_forks_and_forgets_the_exited() {
        let mut tree = Tree::default();
        let mut out = Vec::new();
        // 9's switch in is read before its fork record.
        tree.filter(vec![sw(false, 9, 20), sw(false, 4, 21)], &mut out, false);
        assert!(out.is_empty());
        let fresh = vec![
            fork(9, 10),
            Event::Exit {
                time: 50,
                cpu: 0,
                pid: 9,
                tid: 9,
            },
        ];
        tree.learn(&fresh);
        // The idle task leaving for 9 is kept; leaving for 4, not.
        tree.filter(
            vec![
                sw(true, 9, 40),
                sw(true, 0, 45),
                sw(false, 9, 45),
                sw(true, 9, 55),
                sw(true, 0, 60),
                sw(false, 4, 60),
            ],
            &mut out,
            false,
        );
        assert_eq!(
            out,
            vec![
                sw(false, 9, 20),
                sw(true, 9, 40),
                sw(true, 0, 45),
                sw(false, 9, 45),
                sw(true, 9, 55)
            ]
        );
        // Out at 55 after its exit record (at 50), 9 was preempted or
        // slept in do_exit: its last run and final switch are its own.
        out.clear();
        tree.filter(vec![sw(false, 9, 70), sw(true, 9, 80)], &mut out, false);
        assert_eq!(out, vec![sw(false, 9, 70), sw(true, 9, 80)]);
        // The number 9 again, for a process outside the tree, well after
        // the exit; 4 was never the tree's and is gone after two reads.
        out.clear();
        let later = 50 + EXITED_GRACE_NS + 1;
        tree.filter(vec![sw(false, 9, later)], &mut out, false);
        tree.filter(vec![], &mut out, true);
        assert!(out.is_empty(), "{out:?}");
        assert!(tree.pending.is_empty());
    }

    #[test]
    fn a_forked_child_is_traced_from_fork_to_exit() {
        let cpus: Vec<u32> =
            (0..std::thread::available_parallelism().map_or(1, |n| n.get()) as u32).collect();
        let t = match Tracer::attach(&cpus) {
            Ok(t) => t,
            Err(e) => {
                crate::errln!("tracing not allowed here, skipped: {e}");
                return;
            }
        };
        let child = std::process::Command::new("/bin/sh")
            .args(["-c", "i=0; while [ $i -lt 2000 ]; do i=$((i+1)); done"])
            .status()
            .unwrap();
        assert!(child.success());
        let waking = t.waker_cpu_unavailable().map(str::to_string);
        let mut ev = Vec::new();
        t.stop(&mut ev);
        let me = std::process::id();
        let wakings = ev
            .iter()
            .filter(|e| matches!(e, Event::Waking { .. }))
            .count();
        crate::errln!("{} events, {wakings} wakings ({waking:?})", ev.len());
        let fork = ev
            .iter()
            .find_map(|e| match e {
                Event::Fork { pid, ppid, .. } if *ppid == me && *pid != me => Some(*pid),
                _ => None,
            })
            .expect("the child's fork");
        assert!(ev.iter().any(|e| matches!(e, Event::Comm { pid, exec: true, comm, .. } if *pid == fork && comm == "sh")), "{ev:?}");
        assert!(ev
            .iter()
            .any(|e| matches!(e, Event::Exit { pid, .. } if *pid == fork)));
        assert!(ev
            .iter()
            .any(|e| matches!(e, Event::SwitchIn { pid, .. } if *pid == fork)));
    }
}
