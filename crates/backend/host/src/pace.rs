//! When to take the next sample.
//!
//! A sample is not free: reading `/proc/PID/numa_maps` makes the kernel
//! walk every page-table entry of the process (about 10 ms per 512 MiB of
//! 4 KiB pages), and that CPU time is taken from the benchmark being
//! watched. A fixed one-second interval costs 1% of a CPU or more as soon
//! as a benchmark holds a few GiB, which is the whole overhead budget of a
//! run on a small machine.
//!
//! So the default interval is `auto`: one second, stretched after every
//! sample to [`AUTO_BUDGET_FACTOR`] times the CPU time that sample took
//! (the calling thread's, from `CLOCK_THREAD_CPUTIME_ID`, which other load
//! on the machine does not inflate). Sampling then uses at most 1% of one
//! CPU, whatever the benchmark's size; the interval never shrinks below
//! one second. A number given by the user is used as it is.

use std::time::Duration;

pub use numalab_runner::interval::{Interval, AUTO_BASE_S, AUTO_BUDGET_FACTOR};

/// Schedules samples for one run.
#[derive(Debug, Clone)]
pub struct Pacer {
    mode: Interval,
    current_s: f64,
    longest_s: f64,
    next_s: f64,
}

impl Pacer {
    pub fn new(mode: Interval) -> Pacer {
        let current_s = match mode {
            Interval::Off => 0.0,
            Interval::Fixed(v) => v,
            Interval::Auto => AUTO_BASE_S,
        };
        Pacer {
            mode,
            current_s,
            longest_s: current_s,
            next_s: 0.0,
        }
    }

    pub fn enabled(&self) -> bool {
        self.mode != Interval::Off
    }

    /// Is a sample due at `now` (seconds since the run's start)?
    pub fn due(&self, now: f64) -> bool {
        self.enabled() && now >= self.next_s
    }

    /// Take the next sample at `now` (e.g. when the benchmark starts).
    pub fn sample_at(&mut self, now: f64) {
        self.next_s = now;
    }

    /// If a sample is due at `now`, take it (`sample`, which records it)
    /// timed by this thread's CPU clock, and schedule the next one by what
    /// it cost. The polling loops of every runner sample through this.
    pub fn take(&mut self, now: f64, sample: impl FnOnce()) {
        if !self.due(now) {
            return;
        }
        let cpu = thread_cpu_s();
        sample();
        self.sampled(now, thread_cpu_s() - cpu);
    }

    /// A sample was taken at `now` and cost `cpu_s` seconds of CPU time:
    /// schedule the next one.
    pub fn sampled(&mut self, now: f64, cpu_s: f64) {
        if self.mode == Interval::Auto {
            self.current_s = f64::max(AUTO_BASE_S, AUTO_BUDGET_FACTOR * cpu_s);
            self.longest_s = self.longest_s.max(self.current_s);
        }
        if self.current_s <= 0.0 {
            return;
        }
        while self.next_s <= now {
            self.next_s += self.current_s;
        }
    }

    /// How long to sleep at most from `now` so as not to miss the next
    /// sample; `None` when nothing is observed.
    pub fn until_due(&self, now: f64) -> Option<Duration> {
        self.enabled()
            .then(|| Duration::from_secs_f64((self.next_s - now).max(0.0)))
    }

    /// The longest interval used so far (0 when off): the record's
    /// `series.interval_s`.
    pub fn longest_s(&self) -> f64 {
        self.longest_s
    }
}

/// CPU time of the calling thread, in seconds.
pub fn thread_cpu_s() -> f64 {
    numalab_linux::clock::thread_cpu().as_secs_f64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_auto_off_and_seconds() {
        assert_eq!(Interval::parse("auto"), Ok(Interval::Auto));
        assert_eq!(Interval::parse("0"), Ok(Interval::Off));
        assert_eq!(Interval::parse("0.5"), Ok(Interval::Fixed(0.5)));
        for bad in ["-1", "x", "0.001", "inf", "NaN", ""] {
            assert!(Interval::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn fixed_interval_ignores_cost_and_skips_missed_samples() {
        let mut p = Pacer::new(Interval::Fixed(0.5));
        assert!(p.due(0.0));
        p.sampled(0.0, 10.0);
        assert!(!p.due(0.4));
        assert!(p.due(0.5));
        // Late by two intervals: the next is on the grid after now.
        p.sampled(1.7, 0.0);
        assert!(!p.due(1.9));
        assert!(p.due(2.0));
        assert_eq!(p.longest_s(), 0.5);
    }

    #[test]
    fn auto_stretches_to_a_hundred_times_the_cost_and_comes_back() {
        let mut p = Pacer::new(Interval::Auto);
        p.sampled(0.0, 0.001);
        assert!(p.due(1.0) && !p.due(0.99));
        // A 30 ms sample: the next is 3 s later.
        p.sampled(1.0, 0.030);
        assert!(!p.due(3.9));
        assert!(p.due(4.0));
        // Cheap again: back to the base.
        p.sampled(4.0, 0.002);
        assert!(p.due(5.0));
        assert!((p.longest_s() - 3.0).abs() < 1e-9);
    }

    #[test]
    fn take_samples_only_when_due_and_paces_by_the_cost() {
        let mut p = Pacer::new(Interval::Fixed(0.5));
        let mut taken = Vec::new();
        for now in [0.0, 0.2, 0.5, 0.6, 1.2] {
            p.take(now, || taken.push(now));
        }
        assert_eq!(taken, [0.0, 0.5, 1.2]);
        let mut off = Pacer::new(Interval::Off);
        off.take(0.0, || panic!("off takes no sample"));
    }

    #[test]
    fn off_never_samples() {
        let mut p = Pacer::new(Interval::Off);
        assert!(!p.due(0.0) && !p.due(100.0));
        p.sampled(0.0, 1.0);
        assert_eq!(p.until_due(0.0), None);
        assert_eq!(p.longest_s(), 0.0);
    }

    #[test]
    fn thread_cpu_time_advances_with_work() {
        let a = thread_cpu_s();
        let mut x = 0u64;
        while thread_cpu_s() - a < 0.01 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        assert!(thread_cpu_s() > a, "{x}");
    }
}
