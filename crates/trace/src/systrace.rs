//! A schedule as ftrace text, the format of `/sys/kernel/tracing/trace`,
//! which Perfetto's trace processor reads as a "systrace" trace and shows
//! with its scheduler views: a track per CPU with the tasks that ran on
//! it, a track per thread with its states (running, runnable, sleeping)
//! and, from `sched_waking`, which task woke it.
//!
//! The lines are those of the kernel's tracepoints, as their `TP_printk`
//! strings in include/trace/events/sched.h print them, behind the prefix
//! the kernel's trace output writes with `record-tgid` on:
//!
//! ```text
//!            numalab-4242    (   4242) [001] d..2.     0.001234: sched_switch: prev_comm=numalab prev_pid=4242 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
//! ```
//!
//! - `sched_switch` at every change of the task on a CPU. Time no task
//!   of the trace ran shows as the CPU's idle task (`swapper/N`, pid 0;
//!   `<idle>` in the prefix), whether the CPU was idle or ran tasks the
//!   trace does not have. `prev_state` is `R+` for a task switched out
//!   while runnable (preempted), `S` for one that went to sleep, `Z`
//!   (a process) or `X` (a thread) for the final switch of one that
//!   exited, `R` for one still running when the trace ended.
//! - `sched_waking` where a traced task woke another: on the waker's CPU,
//!   the waker in the prefix; `target_cpu` is the CPU the wakee last ran
//!   on, as the kernel's `task_cpu(p)` at that point.
//! - `sched_migrate_task` before a task runs on another CPU than its
//!   last, on the CPU it arrives at.
//!
//! Priorities are 120 (nice 0; the trace does not have them); the
//! flags field is the nominal `d..2.` (interrupts off, as in the
//! scheduler). Command names are cut to 15 bytes as the kernel's, with
//! spaces and `=` made `_`: Perfetto splits the arguments at spaces and
//! each at `=`. Times are seconds from the run's start, to the
//! microsecond.

use crate::export::{Schedule, Slice, SliceEnd, Wakeup};
use numalab_topology::Topology;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// A command name as the kernel's `comm` (at most 15 bytes) and safe in
/// Perfetto's argument splitting (no spaces, no `=`).
pub fn comm(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        let c = if c.is_whitespace() || c == '=' || c.is_control() {
            '_'
        } else {
            c
        };
        if out.len() + c.len_utf8() > 15 {
            break;
        }
        out.push(c);
    }
    if out.is_empty() {
        out.push_str("<...>");
    }
    out
}

/// A task as the lines name it.
#[derive(Clone)]
struct Who {
    tid: u32,
    tgid: Option<u32>,
    comm: String,
}

impl Who {
    fn idle(cpu: u32) -> Who {
        Who {
            tid: 0,
            tgid: None,
            comm: format!("swapper/{cpu}"),
        }
    }
    fn of(s: &Slice) -> Who {
        Who {
            tid: s.tid,
            tgid: Some(s.pid),
            comm: comm(&s.name),
        }
    }
}

/// `prev_state` of a task leaving a CPU.
fn state(w: &Who, end: SliceEnd) -> &'static str {
    match end {
        SliceEnd::Preempted => "R+",
        SliceEnd::Slept => "S",
        // A thread is reaped as it exits (EXIT_DEAD); a process waits
        // for its parent (EXIT_ZOMBIE).
        SliceEnd::Exited if Some(w.tid) == w.tgid => "Z",
        SliceEnd::Exited => "X",
        SliceEnd::Running => "R",
    }
}

struct Line {
    ns: u64,
    /// Among lines of the same time: wakings, then migrations, then
    /// switches.
    rank: u8,
    seq: usize,
    text: String,
}

fn prefix(out: &mut String, who: &Who, cpu: u32, ns: u64) {
    let task = if who.tid == 0 { "<idle>" } else { &who.comm };
    let tgid = match who.tgid {
        Some(t) if who.tid != 0 => format!("{t:>7}"),
        _ => "-------".to_string(),
    };
    let _ = write!(
        out,
        "{task:>16}-{:<7} ({tgid}) [{cpu:03}] d..2. {:>5}.{:06}: ",
        who.tid,
        ns / 1_000_000_000,
        ns % 1_000_000_000 / 1000
    );
}

fn switch(prev: &Who, prev_state: &str, next: &Who, cpu: u32, ns: u64) -> String {
    let mut s = String::new();
    prefix(&mut s, prev, cpu, ns);
    let _ = write!(
        s,
        "sched_switch: prev_comm={} prev_pid={} prev_prio=120 prev_state={prev_state} ==> next_comm={} next_pid={} next_prio=120",
        prev.comm, prev.tid, next.comm, next.tid
    );
    s
}

/// The `sched_migrate_task` line of `next` arriving on `cpu` from `from`,
/// `prev` in the prefix.
fn migrate(prev: &Who, next: &Who, from: u32, cpu: u32, ns: u64) -> String {
    let mut l = String::new();
    prefix(&mut l, prev, cpu, ns);
    let _ = write!(
        l,
        "sched_migrate_task: comm={} pid={} prio=120 orig_cpu={from} dest_cpu={cpu}",
        next.comm, next.tid
    );
    l
}

/// The `sched_waking` line of `w`, `waker` in the prefix.
fn waking(waker: &Who, wakee: &Who, w: &Wakeup) -> String {
    let mut l = String::new();
    prefix(&mut l, waker, w.from_cpu, w.at_ns);
    let _ = write!(
        l,
        "sched_waking: comm={} pid={} prio=120 target_cpu={:03}",
        wakee.comm, wakee.tid, w.prev_cpu
    );
    l
}

/// The slices of `s` by CPU, every CPU of `topo` included.
fn slices_by_cpu<'a>(topo: &Topology, s: &'a Schedule) -> BTreeMap<u32, Vec<&'a Slice>> {
    let mut by_cpu: BTreeMap<u32, Vec<&Slice>> = BTreeMap::new();
    for c in &topo.cpus {
        by_cpu.entry(c.id).or_default();
    }
    // Pid 0 is the idle task's: a task of that id cannot be told apart.
    for x in s.slices.iter().filter(|x| x.tid != 0) {
        by_cpu.entry(x.cpu).or_default().push(x);
    }
    by_cpu
}

/// The lines of a trace as they are made, with what the wakings need of
/// the switches.
#[derive(Default)]
struct Lines {
    lines: Vec<Line>,
    /// The CPU a task came from, by (CPU, tid, start of its slice).
    migrations: BTreeMap<(u32, u32, u64), u32>,
    /// When each task was switched in, for the wakings.
    runs: BTreeMap<u32, u64>,
    names: BTreeMap<u32, Who>,
}

impl Lines {
    /// Add a line at `ns` of `rank`.
    fn push(&mut self, ns: u64, rank: u8, text: String) {
        let seq = self.lines.len();
        self.lines.push(Line {
            ns,
            rank,
            seq,
            text,
        });
    }

    /// The switches and migrations of `cpu`, whose slices are `slices`.
    fn cpu(&mut self, cpu: u32, slices: &mut [&Slice]) {
        slices.sort_by_key(|x| (x.start_ns, x.end_ns));
        let idle = Who::idle(cpu);
        // The task on the CPU, how and when it leaves.
        let mut cur: Option<(Who, SliceEnd, u64)> = None;
        let mut last = 0u64;
        for x in slices.iter() {
            let start = x.start_ns.max(last);
            let end = x.end_ns.max(start);
            let next = Who::of(x);
            self.names.entry(next.tid).or_insert_with(|| next.clone());
            let mut prev = idle.clone();
            let mut prev_state = "R";
            if let Some((who, how, until)) = cur.take() {
                if until < start || who.tid == next.tid {
                    // It left before this one came (or this is its own
                    // next stretch): the CPU was idle between.
                    let at = until.min(start);
                    self.push(at, 2, switch(&who, state(&who, how), &idle, cpu, at));
                } else {
                    // It ran up to this one (or its end was not seen:
                    // cut at this one's start).
                    prev_state = state(&who, how);
                    prev = who;
                }
            }
            if let Some(&from) = self.migrations.get(&(cpu, x.tid, x.start_ns)) {
                self.push(start, 1, migrate(&prev, &next, from, cpu, start));
            }
            self.push(start, 2, switch(&prev, prev_state, &next, cpu, start));
            let r = self.runs.entry(next.tid).or_insert(start);
            *r = (*r).max(start);
            cur = Some((next, x.end, end));
            last = start;
        }
        if let Some((who, how, until)) = cur {
            self.push(until, 2, switch(&who, state(&who, how), &idle, cpu, until));
        }
    }

    /// Task `tid` as the wakings name it: from the schedule's tasks, else
    /// as its slices named it.
    fn who(&self, s: &Schedule, tid: u32) -> Who {
        if let Some((pid, name)) = s.tasks.get(&tid) {
            return Who {
                tid,
                tgid: Some(*pid),
                comm: comm(name),
            };
        }
        self.names.get(&tid).cloned().unwrap_or(Who {
            tid,
            tgid: None,
            comm: "<...>".into(),
        })
    }

    /// The wakings of `s`, of wakees the trace shows running afterwards.
    fn wakings(&mut self, s: &Schedule) {
        for w in &s.wakeups {
            // Only a wakee the trace shows running afterwards.
            if self.runs.get(&w.wakee).is_none_or(|&t| t < w.at_ns) {
                continue;
            }
            let (waker, wakee) = (self.who(s, w.waker), self.who(s, w.wakee));
            self.push(w.at_ns, 0, waking(&waker, &wakee, w));
        }
    }
}

/// The header of the trace: `# tracer: nop`, the line counts by event and
/// the column lines.
fn header(out: &mut String, title: &str, lines: &[Line], ncpus: usize) {
    let title: String = title
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let n = lines.len();
    out.push_str("# tracer: nop\n#\n");
    let count = |rank: u8| lines.iter().filter(|l| l.rank == rank).count();
    let _ = writeln!(
        out,
        "# numalab: {title}: sched_switch {}, sched_waking {}, sched_migrate_task {}",
        count(2),
        count(0),
        count(1)
    );
    let _ = writeln!(
        out,
        "#\n# entries-in-buffer/entries-written: {n}/{n}   #P:{ncpus}\n#"
    );
    for h in [
        "#                                          _-----=> irqs-off/BH-disabled",
        "#                                         / _----=> need-resched",
        "#                                        | / _---=> hardirq/softirq",
        "#                                        || / _--=> preempt-depth",
        "#                                        ||| / _-=> migrate-disable",
        "#                                        |||| /     delay",
        "#           TASK-PID     TGID     CPU#  |||||  TIMESTAMP  FUNCTION",
        "#              | |         |        |   |||||     |         |",
    ] {
        out.push_str(h);
        out.push('\n');
    }
}

/// The ftrace text of `s` on `topo` (see the module's text).
pub fn systrace(topo: &Topology, title: &str, s: &Schedule) -> String {
    let mut by_cpu = slices_by_cpu(topo, s);
    let mut lines = Lines {
        migrations: s
            .migrations
            .iter()
            .map(|m| ((m.cpu, m.tid, m.at_ns), m.from_cpu))
            .collect(),
        ..Default::default()
    };
    for (&cpu, slices) in &mut by_cpu {
        lines.cpu(cpu, slices);
    }
    lines.wakings(s);
    let mut lines = lines.lines;
    lines.sort_by_key(|l| (l.ns, l.rank, l.seq));
    let mut out =
        String::with_capacity(lines.iter().map(|l| l.text.len() + 1).sum::<usize>() + 1024);
    header(&mut out, title, &lines, by_cpu.len());
    for l in lines {
        out.push_str(&l.text);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::{Migration, Wakeup};
    use crate::systrace_check::check;
    use numalab_topology::{Cpu, Node};

    fn topo(n: u32) -> Topology {
        Topology {
            nodes: vec![Node {
                id: 0,
                cpus: (0..n).collect(),
                memory_bytes: 1 << 30,
            }],
            cpus: (0..n)
                .map(|i| Cpu {
                    id: i,
                    node: 0,
                    package: 0,
                    core: i,
                    llc: None,
                })
                .collect(),
            llcs: Vec::new(),
            distances: vec![vec![10]],
        }
    }

    fn slice(cpu: u32, tid: u32, pid: u32, name: &str, us: (u64, u64), end: SliceEnd) -> Slice {
        Slice {
            cpu,
            tid,
            pid,
            name: name.into(),
            start_ns: us.0 * 1000,
            end_ns: us.1 * 1000,
            end,
        }
    }

    /// A schedule with what real ones have: back-to-back tasks, gaps,
    /// an overlap (a switch out not recorded), a task's two stretches
    /// touching, names with spaces, `=` and more than 15 bytes, a
    /// migration, wakeups (one of a task that never runs again).
    fn schedule() -> Schedule {
        use SliceEnd::*;
        let slices = vec![
            slice(0, 10, 10, "sh", (5, 20), Slept),
            slice(0, 11, 10, "hb-send-1", (20, 30), Preempted),
            slice(0, 11, 10, "hb-send-1", (30, 40), Slept),
            slice(0, 12, 12, "a b=c d-1 [003]", (50, 70), Preempted),
            // starts before the one above ended: cut there
            slice(0, 13, 12, "a-very-long-thread-name", (60, 80), Exited),
            slice(1, 12, 12, "a b=c d-1 [003]", (75, 90), Exited),
            slice(1, 14, 14, "last", (95, 100), Running),
        ];
        let migrations = vec![Migration {
            cpu: 1,
            at_ns: 75_000,
            tid: 12,
            from_cpu: 0,
        }];
        let wakeups = vec![
            Wakeup {
                from_cpu: 0,
                at_ns: 15_000,
                to_cpu: 0,
                to_ns: 20_000,
                wakee: 11,
                waker: 10,
                prev_cpu: 0,
            },
            // the wakee never runs after it: left out
            Wakeup {
                from_cpu: 1,
                at_ns: 91_000,
                to_cpu: 1,
                to_ns: 92_000,
                wakee: 10,
                waker: 99,
                prev_cpu: 0,
            },
        ];
        Schedule {
            slices,
            wakeups,
            migrations,
            counters: Vec::new(),
            tasks: [(10, (10, "sh".to_string()))].into(),
        }
    }

    #[test]
    fn comm_is_the_kernels_and_splits_as_perfetto_does() {
        assert_eq!(comm("a b=c"), "a_b_c");
        assert_eq!(comm("0123456789abcdefgh"), "0123456789abcde");
        assert_eq!(comm("ééééééééé"), "ééééééé"); // 14 bytes, not half a char
        assert_eq!(comm(""), "<...>");
    }

    #[test]
    fn a_schedule_is_ftrace_text_perfettos_reader_takes() {
        let text = systrace(&topo(2), "run 1", &schedule());
        let c = check(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(c.cpus, [0, 1].into());
        assert_eq!(c.wakings, 1, "{text}");
        assert_eq!(c.migrations, 1);
        // in and out of each stretch, back-to-back ones sharing a switch
        assert_eq!(c.switches, 12, "{text}");
        assert_eq!(c.tasks[&12], "a_b_c_d-1_[003]");
        assert_eq!(c.tasks[&13], "a-very-long-thr");
        for (state, n) in [("R+", 2), ("S", 2), ("Z", 1), ("X", 1), ("R", 6)] {
            assert_eq!(c.states.get(state), Some(&n), "{state}: {:?}", c.states);
        }
        assert!(text.starts_with("# tracer: nop\n"));
        assert!(text.contains(
            "              sh-10      (     10) [000] d..2.     0.000015: sched_waking: comm=hb-send-1 pid=11 prio=120 target_cpu=000\n"
        ), "{text}");
        assert!(text.contains(
            "          <idle>-0       (-------) [000] d..2.     0.000005: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=sh next_pid=10 next_prio=120\n"
        ), "{text}");
        // the task's own next stretch: through the idle task
        assert!(text.contains(
            "prev_comm=hb-send-1 prev_pid=11 prev_prio=120 prev_state=R+ ==> next_comm=swapper/0"
        ));
        // cut where the next began
        assert!(text.contains(
            "[000] d..2.     0.000060: sched_switch: prev_comm=a_b_c_d-1_[003] prev_pid=12 prev_prio=120 prev_state=R+ ==> next_comm=a-very-long-thr next_pid=13"
        ), "{text}");
        assert!(text.contains(
            "[001] d..2.     0.000075: sched_migrate_task: comm=a_b_c_d-1_[003] pid=12 prio=120 orig_cpu=0 dest_cpu=1\n"
        ));
        assert!(
            !text.contains("pid=99"),
            "the wakeup of a task that never ran again"
        );
    }

    /// The checker is strict: each of these one-line changes is refused.
    #[test]
    fn the_checker_refuses_a_changed_line() {
        let text = systrace(&topo(2), "run 1", &schedule());
        check(&text).unwrap();
        let first = |pat: &str| text.lines().position(|l| l.contains(pat)).unwrap();
        let edit = |at: usize, f: &dyn Fn(&str) -> String| -> String {
            let mut v: Vec<String> = text.lines().map(String::from).collect();
            v[at] = f(&v[at]);
            v.join("\n") + "\n"
        };
        let sw = first("prev_comm=sh ");
        let e = |f: &dyn Fn(&str) -> String| edit(sw, f);
        let cases: Vec<(&str, String, &str)> = vec![
            (
                "a broken chain",
                e(&|l| l.replace("next_pid=11", "next_pid=12")),
                "CPU 0 ran",
            ),
            (
                "a field left out",
                e(&|l| l.replace("prev_prio=120 ", "")),
                "sched_switch arguments",
            ),
            (
                "an unknown state",
                e(&|l| l.replace("prev_state=S", "prev_state=Q")),
                "sched_switch arguments",
            ),
            (
                "a comm with a space",
                e(&|l| l.replace("prev_comm=sh", "prev_comm=s h")),
                "sched_switch arguments",
            ),
            (
                "a prefix not prev",
                e(&|l| l.replacen("sh-10", "sh-11", 1)),
                "is not prev",
            ),
            (
                "four flags",
                e(&|l| l.replace("d..2.", "d..2")),
                "not a trace line",
            ),
            (
                "time going back",
                e(&|l| l.replace("0.000020", "0.000001")),
                "time goes back",
            ),
            (
                "milliseconds",
                e(&|l| l.replace("0.000020", "0.020")),
                "not a trace line",
            ),
            (
                "an unknown event",
                e(&|l| l.replace("sched_switch:", "sched_swatch:")),
                "unknown event",
            ),
            (
                "no tracer line",
                text.replacen("# tracer: nop\n", "", 1),
                "# tracer",
            ),
            (
                "a waking of a task that never runs",
                edit(first(": sched_waking: "), &|l| {
                    l.replace("pid=11 ", "pid=77 ")
                }),
                "does not run afterwards",
            ),
            (
                "a comment among events",
                e(&|l| format!("# x\n{l}")),
                "a comment after the events",
            ),
        ];
        for (what, t, why) in cases {
            assert_ne!(t, text, "{what}: the edit changed nothing");
            match check(&t) {
                Ok(_) => panic!("{what} was accepted:\n{t}"),
                Err(e) => assert!(e.to_string().contains(why), "{what}: {e}"),
            }
        }
    }

    #[test]
    fn an_empty_schedule_is_a_header() {
        let text = systrace(&topo(1), "x\ny", &Schedule::default());
        let c = check(&text).unwrap();
        assert_eq!((c.switches, c.wakings), (0, 0));
        assert!(text.contains("#P:1"), "{text}");
        assert!(text.contains("# numalab: x y: sched_switch 0,"), "{text}");
    }
}
