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
