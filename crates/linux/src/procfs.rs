//! procfs readers: per-task scheduling state, per-process memory per node,
//! and the kernel's NUMA counters.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::Path;

/// The fields numalab uses from `/proc/PID[/task/TID]/stat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskStat {
    pub state: char,
    /// CPU the task last ran on (field 39).
    pub processor: u32,
    /// User and system time in clock ticks (fields 14, 15).
    pub utime_ticks: u64,
    pub stime_ticks: u64,
}

/// The kernel's own scheduling counters of a task, from
/// `/proc/PID[/task/TID]/sched` (CONFIG_SCHED_DEBUG; the NUMA lines need
/// CONFIG_NUMA_BALANCING). Read as a task ends they are its totals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct SchedCounters {
    /// `se.sum_exec_runtime`: time on a CPU, in nanoseconds.
    pub sum_exec_runtime_ns: u64,
    /// `se.nr_migrations`: moves to another CPU.
    pub nr_migrations: u64,
    pub nr_voluntary_switches: u64,
    pub nr_involuntary_switches: u64,
    /// Pages NUMA balancing moved for it.
    pub numa_pages_migrated: Option<u64>,
    /// The node NUMA balancing prefers for it (`None`: none, -1).
    pub numa_preferred_nid: Option<u32>,
    /// Its NUMA hinting faults, as the kernel keeps them (decayed by half
    /// at each scan period: recent faults weigh more).
    pub total_numa_faults: Option<u64>,
}

/// Parse the `name : value` lines of a `sched` file; `None` without the
/// always-present counters (not a sched file).
pub fn parse_sched(text: &str) -> Option<SchedCounters> {
    let mut v: BTreeMap<&str, &str> = BTreeMap::new();
    for l in text.lines() {
        if let Some((k, val)) = l.split_once(':') {
            v.insert(k.trim(), val.trim());
        }
    }
    let int = |k: &str| -> Option<i64> {
        let t = v.get(k)?;
        // Some kernels print counters as `N.000000`.
        t.split('.').next()?.parse().ok()
    };
    let count = |k: &str| int(k).and_then(|n| u64::try_from(n).ok());
    // Milliseconds with six decimals: nanoseconds, exactly.
    let ms = v.get("se.sum_exec_runtime")?;
    let (whole, frac) = ms.split_once('.').unwrap_or((ms, "0"));
    let frac = format!("{frac:0<6}");
    let sum_exec_runtime_ns =
        whole.parse::<u64>().ok()? * 1_000_000 + frac.get(..6)?.parse::<u64>().ok()?;
    Some(SchedCounters {
        sum_exec_runtime_ns,
        nr_migrations: count("se.nr_migrations")?,
        nr_voluntary_switches: count("nr_voluntary_switches")?,
        nr_involuntary_switches: count("nr_involuntary_switches")?,
        numa_pages_migrated: count("numa_pages_migrated"),
        numa_preferred_nid: int("numa_preferred_nid").and_then(|n| u32::try_from(n).ok()),
        total_numa_faults: count("total_numa_faults"),
    })
}

/// A task's scheduling counters; a thread's with `tid`.
pub fn sched_counters(pid: i32, tid: Option<i32>) -> Option<SchedCounters> {
    let path = match tid {
        Some(t) => format!("/proc/{pid}/task/{t}/sched"),
        None => format!("/proc/{pid}/sched"),
    };
    parse_sched(&fs::read_to_string(path).ok()?)
}

/// Parse a stat line. The command name may contain spaces and parentheses,
/// so fields are counted after the last `)`.
pub fn parse_stat(text: &str) -> Option<TaskStat> {
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state): field n is f[n - 3].
    Some(TaskStat {
        state: f.first()?.chars().next()?,
        utime_ticks: f.get(14 - 3)?.parse().ok()?,
        stime_ticks: f.get(15 - 3)?.parse().ok()?,
        processor: f.get(39 - 3)?.parse().ok()?,
    })
}

pub fn task_stat(pid: i32, tid: Option<i32>) -> io::Result<TaskStat> {
    let path = match tid {
        Some(t) => format!("/proc/{pid}/task/{t}/stat"),
        None => format!("/proc/{pid}/stat"),
    };
    let text = fs::read_to_string(&path)?;
    parse_stat(&text).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{path}: unexpected format"),
        )
    })
}

/// Thread ids of a process.
pub fn threads(pid: i32) -> io::Result<Vec<i32>> {
    let mut v: Vec<i32> = fs::read_dir(format!("/proc/{pid}/task"))?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    v.sort_unstable();
    Ok(v)
}

/// Bytes resident on each node id, summed over every mapping of a
/// `numa_maps` file: each `N<node>=<pages>` times that mapping's
/// `kernelpagesize_kB`. This is what `numastat -p` adds up.
pub fn parse_numa_maps(text: &str) -> BTreeMap<u32, u64> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let mut page_kb = 4u64;
        let mut counts: Vec<(u32, u64)> = Vec::new();
        for tok in line.split_whitespace() {
            if let Some(v) = tok.strip_prefix("kernelpagesize_kB=") {
                page_kb = v.parse().unwrap_or(4);
            } else if let Some(rest) = tok.strip_prefix('N') {
                if let Some((n, p)) = rest.split_once('=') {
                    if let (Ok(n), Ok(p)) = (n.parse::<u32>(), p.parse::<u64>()) {
                        counts.push((n, p));
                    }
                }
            }
        }
        for (n, p) in counts {
            *out.entry(n).or_insert(0) += p * page_kb * 1024;
        }
    }
    out
}

pub fn numa_maps(pid: i32) -> io::Result<BTreeMap<u32, u64>> {
    Ok(parse_numa_maps(&fs::read_to_string(format!(
        "/proc/{pid}/numa_maps"
    ))?))
}

/// The NUMA-related counters of a vmstat file: `numa_*`, `pgmigrate_*`,
/// `pgpromote_*`, `pgdemote_*`.
pub fn parse_vmstat(text: &str) -> BTreeMap<String, u64> {
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(' ')?;
            let numa = k.starts_with("numa_")
                || k.starts_with("pgmigrate_")
                || k.starts_with("pgpromote_")
                || k.starts_with("pgdemote_");
            numa.then(|| Some((k.to_string(), v.trim().parse().ok()?)))?
        })
        .collect()
}

pub fn vmstat(proc_root: &Path) -> io::Result<BTreeMap<String, u64>> {
    Ok(parse_vmstat(&fs::read_to_string(proc_root.join("vmstat"))?))
}

/// Clock ticks per second (`USER_HZ`).
pub fn clock_ticks() -> u64 {
    // SAFETY: sysconf is always safe to call.
    let r = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if r > 0 {
        r as u64
    } else {
        100
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sched_counters_of_a_task() {
        let text = "cat (6210, #threads: 1)
-------------------------------------------------------------------
se.exec_start                                :      25761112.241750
se.sum_exec_runtime                          :             3.500000
se.nr_migrations                             :                    7
nr_switches                                  :                   12
nr_voluntary_switches                        :                   10
nr_involuntary_switches                      :                    2
mm->numa_scan_seq                            :                    3
numa_pages_migrated                          :                  512
numa_preferred_nid                           :                    1
total_numa_faults                            :                  880
current_node=0, numa_group_id=0
numa_faults node=0 task_private=0 task_shared=0 group_private=0 group_shared=0
";
        let c = parse_sched(text).unwrap();
        assert_eq!(
            c,
            SchedCounters {
                sum_exec_runtime_ns: 3_500_000,
                nr_migrations: 7,
                nr_voluntary_switches: 10,
                nr_involuntary_switches: 2,
                numa_pages_migrated: Some(512),
                numa_preferred_nid: Some(1),
                total_numa_faults: Some(880),
            }
        );
        let no_pref = text.replace(
            "numa_preferred_nid                           :                    1",
            "numa_preferred_nid : -1",
        );
        assert_eq!(parse_sched(&no_pref).unwrap().numa_preferred_nid, None);
        assert_eq!(parse_sched("not: a sched file"), None);
        // This very process has one, wherever CONFIG_SCHED_DEBUG is set.
        if std::path::Path::new("/proc/self/sched").exists() {
            assert!(sched_counters(std::process::id() as i32, None).is_some());
        }
    }

    #[test]
    fn stat_with_hostile_comm() {
        let line = "1234 (a) b (c)) R 1 1234 1234 0 -1 4194304 100 0 0 0 250 13 0 0 20 0 1 0 5 1000 10 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0";
        let s = parse_stat(line).unwrap();
        assert_eq!(s.state, 'R');
        assert_eq!(s.utime_ticks, 250);
        assert_eq!(s.stime_ticks, 13);
        assert_eq!(s.processor, 3);
        assert!(parse_stat("1 (x) R 1").is_none());
    }

    #[test]
    fn own_stat_is_readable() {
        let s = task_stat(std::process::id() as i32, None).unwrap();
        assert!(matches!(s.state, 'R' | 'S'));
    }

    #[test]
    fn numa_maps_sums_pages_by_page_size() {
        let text = "\
7f0000000000 default anon=3 dirty=3 N0=2 N1=1 kernelpagesize_kB=4
7f1000000000 bind:1 anon=2 dirty=2 N1=2 kernelpagesize_kB=2048
7f2000000000 default file=/lib/x.so mapped=5 mapmax=3 N0=5 kernelpagesize_kB=4
7f3000000000 default
";
        let m = parse_numa_maps(text);
        assert_eq!(m.get(&0), Some(&(7 * 4096)));
        assert_eq!(m.get(&1), Some(&(4096 + 2 * 2048 * 1024)));
        assert_eq!(m.len(), 2);
    }

    #[test]
    fn vmstat_keeps_numa_counters() {
        let v = parse_vmstat("nr_free_pages 10\nnuma_hit 5\nnuma_pages_migrated 7\npgmigrate_success 7\npgpromote_success 1\n");
        assert_eq!(v.len(), 4);
        assert_eq!(v["numa_pages_migrated"], 7);
        assert!(vmstat(Path::new("/proc")).unwrap().contains_key("numa_hit"));
    }
}
