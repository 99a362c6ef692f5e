//! Is the machine quiet enough to measure? Other work running while
//! `calibrate` measures spoils latencies and bandwidths, so it looks
//! first: the CPU time the rest of the machine used over a short window,
//! from /proc/stat.

use std::path::Path;
use std::time::Duration;

/// Busy and total jiffies since boot, summed over every CPU ("cpu" line).
pub fn parse_stat(text: &str) -> Option<(u64, u64)> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    if v.len() < 5 {
        return None;
    }
    // user nice system idle iowait irq softirq steal (guest time is
    // already inside user and nice).
    let total: u64 = v.iter().take(8).sum();
    let idle = v[3] + v[4];
    Some((total - idle, total))
}

/// CPUs' worth of work the machine did over `window` (2.0: two CPUs
/// fully busy), read from `proc`/stat.
pub fn busy_cpus(proc_root: &Path, window: Duration, ncpus: usize) -> std::io::Result<f64> {
    let read = || -> std::io::Result<(u64, u64)> {
        let t = std::fs::read_to_string(proc_root.join("stat"))?;
        parse_stat(&t).ok_or_else(|| std::io::Error::other("/proc/stat: no cpu line"))
    };
    let (b0, t0) = read()?;
    std::thread::sleep(window);
    let (b1, t1) = read()?;
    let dt = t1.saturating_sub(t0);
    if dt == 0 {
        return Ok(0.0);
    }
    Ok((b1.saturating_sub(b0)) as f64 / dt as f64 * ncpus as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_and_total_from_the_cpu_line() {
        let t = "cpu  100 5 50 800 20 3 2 0 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n";
        assert_eq!(parse_stat(t), Some((160, 980)));
        assert_eq!(parse_stat("intr 1 2\n"), None);
        assert_eq!(parse_stat("cpu  1 x 3 4 5\n"), None);
    }

    #[test]
    fn a_window_of_this_machine_reads() {
        let b = busy_cpus(Path::new("/proc"), Duration::from_millis(50), 2).unwrap();
        assert!((0.0..=2.5).contains(&b), "{b}");
    }
}
