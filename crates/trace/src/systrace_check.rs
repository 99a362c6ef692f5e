//! A strict reader of ftrace text, for tests only (numalab-trace's unit
//! tests; numalab's tests/trace.rs includes this file by path). Written
//! from the format's definitions, not from numalab's writer:
//!
//! - the line prefix of the kernel's trace output
//!   (kernel/trace/trace_output.c, with `record-tgid`):
//!   `%16s-%-7d (%7d) [%03d] FLAGS %5lu.%06lu: EVENT: ARGS`, the tgid
//!   `-------` when unknown; FLAGS five characters (irqs-off `d`/`X`/`.`,
//!   need-resched, hardirq/softirq, preempt depth, migrate-disable);
//! - the same line tokenised by Perfetto's systrace reader
//!   (src/trace_processor/importers/systrace/systrace_line_tokenizer.cc):
//!   its regular expression, searched as it does (its base::Regex is
//!   ECMAScript, leftmost-first like Rust's regex), must find the same
//!   task name, pid, tgid, CPU, time and event; its parser splits arguments at
//!   spaces and each at `=`, so no value may hold either;
//! - each event's arguments exactly as its `TP_printk` in
//!   include/trace/events/sched.h prints them, every field, in order;
//!   `prev_state` one of the letters the kernel prints (`R`, `R+`, or
//!   `S`, `D`, `T`, `t`, `X`, `Z`, `P`, `I` joined by `|`);
//! - the whole: `# tracer: ` first, comments only before the first event,
//!   a `TASK-PID` column line; times never going back, on any CPU or in
//!   the file; on each CPU the `next` of a switch is the `prev` of the
//!   next switch (pid and comm), a switch's prefix names its prev task
//!   (`<idle>` for pid 0, whose comm is `swapper/CPU`), no task switches
//!   to itself; every `sched_waking` names a task switched in at or after
//!   it.

use regex::Regex;
use std::collections::{BTreeMap, BTreeSet};

/// What a checked trace holds.
#[derive(Debug, Default)]
pub struct Checked {
    pub switches: usize,
    pub wakings: usize,
    pub migrations: usize,
    /// The CPUs with at least one switch.
    pub cpus: BTreeSet<u32>,
    /// Task names by pid (switches' `next_comm`), idle left out.
    pub tasks: BTreeMap<u32, String>,
    /// `prev_state` values by count.
    pub states: BTreeMap<String, usize>,
}

/// Perfetto's tokenizer's expression, as in systrace_line_tokenizer.cc.
const PERFETTO_LINE: &str = r"-(\d+)\s+\(?\s*(\d+|-+)?\)?\s?\[(\d+)\]\s*([a-zA-Z.]{3}[0-9a-f.]{1,2}\s*)?(\d+\.\d+):\s+(\S+):";

/// The kernel's prefix, anchored.
const KERNEL_LINE: &str = r"^ *(?P<task>\S.*)-(?P<pid>\d+) +\( *(?P<tgid>\d+|-------)\) \[(?P<cpu>\d{3,})\] (?P<flags>[dXb.][NnpPBb.][HhsZz.][0-9a-f.][0-9a-f.]) +(?P<sec>\d+)\.(?P<usec>\d{6}): (?P<event>[a-z_]+): (?P<args>.*)$";

const COMM: &str = r"[^\s=]{1,15}";
const STATE: &str = r"R\+?|[SDTtXZPI](?:\|[SDTtXZPI])*";

#[derive(Clone, PartialEq, Debug)]
struct Task {
    pid: u32,
    comm: String,
}

/// Why a trace was refused: the line (from 1; none for the whole file)
/// and what is wrong with it.
#[derive(Debug)]
pub struct Refused {
    pub line: Option<usize>,
    pub why: String,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self.line {
            Some(n) => write!(f, "line {n}: {}", self.why),
            None => f.write_str(&self.why),
        }
    }
}

impl std::error::Error for Refused {}

/// A refusal of line `n`.
fn at(n: usize, why: impl Into<String>) -> Refused {
    Refused {
        line: Some(n),
        why: why.into(),
    }
}

fn num<T: std::str::FromStr>(s: &str, what: &str, n: usize) -> Result<T, Refused> {
    s.parse()
        .map_err(|_| at(n, format!("{what} {s:?} is not a number")))
}

/// Whether `s` is a priority the kernel prints (0..=139).
fn prio_ok(s: &str) -> bool {
    s.parse::<u32>().is_ok_and(|p| p <= 139)
}

/// The expressions a line and each event's arguments must match.
struct Patterns {
    perfetto: Regex,
    kernel: Regex,
    switch: Regex,
    waking: Regex,
    migrate: Regex,
}

impl Patterns {
    /// Compile the expressions.
    fn new() -> Patterns {
        Patterns {
            perfetto: Regex::new(PERFETTO_LINE).unwrap(),
            kernel: Regex::new(KERNEL_LINE).unwrap(),
            switch: Regex::new(&format!(
                r"^prev_comm=(?P<pc>{COMM}) prev_pid=(?P<pp>\d+) prev_prio=(?P<ppr>\d+) prev_state=(?P<st>{STATE}) ==> next_comm=(?P<nc>{COMM}) next_pid=(?P<np>\d+) next_prio=(?P<npr>\d+)$"
            ))
            .unwrap(),
            waking: Regex::new(&format!(
                r"^comm=(?P<c>{COMM}) pid=(?P<p>\d+) prio=(?P<pr>\d+) target_cpu=(?P<t>\d{{3,}})$"
            ))
            .unwrap(),
            migrate: Regex::new(&format!(
                r"^comm=(?P<c>{COMM}) pid=(?P<p>\d+) prio=(?P<pr>\d+) orig_cpu=(?P<o>\d+) dest_cpu=(?P<d>\d+)$"
            ))
            .unwrap(),
        }
    }
}

/// An event line's prefix, read the same by the kernel's format and by
/// Perfetto's tokenizer.
struct Prefix<'a> {
    n: usize,
    pid: u32,
    cpu: u32,
    ns: u64,
    name: &'a str,
    event: &'a str,
    args: &'a str,
}

impl<'a> Prefix<'a> {
    /// Line `l` (number `n`)'s prefix: the kernel's, and Perfetto's
    /// tokenizer reading the same task, pid, tgid, CPU, time and event; its
    /// task name one a kernel has, pid 0 `<idle>` and only it.
    fn read(re: &Patterns, n: usize, l: &'a str) -> Result<Prefix<'a>, Refused> {
        let k = re
            .kernel
            .captures(l)
            .ok_or_else(|| at(n, format!("not a trace line: {l:?}")))?;
        let p = re
            .perfetto
            .captures(l)
            .ok_or_else(|| at(n, format!("Perfetto's tokenizer rejects {l:?}")))?;
        let task = l[..p.get(0).unwrap().start()].trim();
        let same = task == &k["task"]
            && p[1] == k["pid"]
            && p.get(2).map(|m| m.as_str()) == Some(&k["tgid"])
            && p[3] == k["cpu"]
            && p[5] == format!("{}.{}", &k["sec"], &k["usec"])
            && p[6] == k["event"];
        if !same {
            return Err(at(
                n,
                format!(
                    "Perfetto's tokenizer reads it otherwise ({task:?} {} {} {}): {l:?}",
                    &p[1], &p[3], &p[6]
                ),
            ));
        }
        let pid: u32 = num(&k["pid"], "pid", n)?;
        let cpu: u32 = num(&k["cpu"], "cpu", n)?;
        let ns = num::<u64>(&k["sec"], "seconds", n)? * 1_000_000_000
            + num::<u64>(&k["usec"], "microseconds", n)? * 1000;
        let name = k.name("task").unwrap().as_str();
        if name.contains(char::is_whitespace) || name.len() > 15 {
            return Err(at(n, format!("task name {name:?}")));
        }
        if (pid == 0) != (name == "<idle>") {
            return Err(at(n, format!("pid 0 is <idle>, and only it: {l:?}")));
        }
        Ok(Prefix {
            n,
            pid,
            cpu,
            ns,
            name,
            event: k.name("event").unwrap().as_str(),
            args: k.name("args").unwrap().as_str(),
        })
    }
}

/// What the check has seen so far, line by line.
#[derive(Default)]
struct Checker {
    out: Checked,
    in_header: bool,
    columns: bool,
    last_ns: u64,
    cpu_ns: BTreeMap<u32, u64>,
    on_cpu: BTreeMap<u32, Task>,
    wakings: Vec<(usize, u64, u32)>,
    switched_in: BTreeMap<u32, u64>,
}

impl Checker {
    /// Check line `l`, number `n`: a comment of the header, or an event.
    fn line(&mut self, re: &Patterns, n: usize, l: &str) -> Result<(), Refused> {
        if l.starts_with('#') {
            if !self.in_header {
                return Err(at(n, "a comment after the events"));
            }
            self.columns |= l.contains("TASK-PID");
            return Ok(());
        }
        if !self.columns {
            return Err(at(n, "an event before the TASK-PID line"));
        }
        self.in_header = false;
        let p = Prefix::read(re, n, l)?;
        if p.ns < self.last_ns {
            return Err(at(n, "time goes back in the file"));
        }
        self.last_ns = p.ns;
        let cpu = p.cpu;
        if self.cpu_ns.get(&cpu).is_some_and(|&t| p.ns < t) {
            return Err(at(n, format!("time goes back on CPU {cpu}")));
        }
        self.cpu_ns.insert(cpu, p.ns);
        match p.event {
            "sched_switch" => self.switch(re, &p),
            "sched_waking" => self.waking(re, &p),
            "sched_migrate_task" => self.migrate(re, &p),
            other => Err(at(n, format!("unknown event {other:?}"))),
        }
    }

    /// A `sched_switch`: its arguments, its idle task, its prev the line's
    /// task and the task the CPU ran, its next another task.
    fn switch(&mut self, re: &Patterns, p: &Prefix) -> Result<(), Refused> {
        let (n, cpu, pid, name, args) = (p.n, p.cpu, p.pid, p.name, p.args);
        let a = re
            .switch
            .captures(args)
            .ok_or_else(|| at(n, format!("sched_switch arguments {args:?}")))?;
        if !prio_ok(&a["ppr"]) || !prio_ok(&a["npr"]) {
            return Err(at(n, "a priority out of 0..=139"));
        }
        let prev = Task {
            pid: num(&a["pp"], "prev_pid", n)?,
            comm: a["pc"].to_string(),
        };
        let next = Task {
            pid: num(&a["np"], "next_pid", n)?,
            comm: a["nc"].to_string(),
        };
        for t in [&prev, &next] {
            if t.pid == 0 && t.comm != format!("swapper/{cpu}") {
                return Err(at(n, format!("CPU {cpu}'s idle task is {:?}", t.comm)));
            }
        }
        if prev.pid != pid || (pid != 0 && prev.comm != name) {
            return Err(at(
                n,
                format!("the line's task {name}-{pid} is not prev {:?}", prev),
            ));
        }
        if prev.pid == next.pid {
            return Err(at(n, format!("{} switches to itself", prev.pid)));
        }
        if let Some(cur) = self.on_cpu.get(&cpu) {
            if *cur != prev {
                return Err(at(
                    n,
                    format!("CPU {cpu} ran {cur:?}, this switch has prev {prev:?}"),
                ));
            }
        }
        *self.out.states.entry(a["st"].to_string()).or_default() += 1;
        if next.pid != 0 {
            self.out.tasks.insert(next.pid, next.comm.clone());
            self.switched_in.insert(next.pid, p.ns);
        }
        self.on_cpu.insert(cpu, next);
        self.out.cpus.insert(cpu);
        self.out.switches += 1;
        Ok(())
    }

    /// A `sched_waking`: its arguments, its wakee not the idle task (that
    /// it runs afterwards is checked at the end).
    fn waking(&mut self, re: &Patterns, p: &Prefix) -> Result<(), Refused> {
        let (n, args) = (p.n, p.args);
        let a = re
            .waking
            .captures(args)
            .ok_or_else(|| at(n, format!("sched_waking arguments {args:?}")))?;
        if !prio_ok(&a["pr"]) {
            return Err(at(n, "a priority out of 0..=139"));
        }
        let wakee: u32 = num(&a["p"], "pid", n)?;
        if wakee == 0 {
            return Err(at(n, "a waking of the idle task"));
        }
        self.wakings.push((n, p.ns, wakee));
        self.out.wakings += 1;
        Ok(())
    }

    /// A `sched_migrate_task`: its arguments, to another CPU.
    fn migrate(&mut self, re: &Patterns, p: &Prefix) -> Result<(), Refused> {
        let (n, args) = (p.n, p.args);
        let a = re
            .migrate
            .captures(args)
            .ok_or_else(|| at(n, format!("sched_migrate_task arguments {args:?}")))?;
        if !prio_ok(&a["pr"]) {
            return Err(at(n, "a priority out of 0..=139"));
        }
        if a["o"] == a["d"] {
            return Err(at(n, "a migration to the same CPU"));
        }
        self.out.migrations += 1;
        Ok(())
    }

    /// The whole trace's result: every woken task switched in at or after
    /// its waking.
    fn finish(self) -> Result<Checked, Refused> {
        for (n, ns, wakee) in self.wakings {
            if self.switched_in.get(&wakee).is_none_or(|&t| t < ns) {
                return Err(at(n, format!("woken task {wakee} does not run afterwards")));
            }
        }
        Ok(self.out)
    }
}

/// Check `text` (see the module's text).
pub fn check(text: &str) -> Result<Checked, Refused> {
    let re = Patterns::new();
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l));
    match lines.next() {
        Some((_, l)) if l.starts_with("# tracer: ") => {}
        other => return Err(at(1, format!("{other:?} is not `# tracer: `"))),
    }
    if !text.ends_with('\n') {
        return Err(Refused {
            line: None,
            why: "the last line has no newline".into(),
        });
    }
    let mut c = Checker {
        in_header: true,
        ..Default::default()
    };
    for (n, l) in lines {
        c.line(&re, n, l)?;
    }
    c.finish()
}
