//! Per-operation costs of the workload models: what one iteration of the
//! spin loop, one numa_test update, zeroing, one hackbench message, a
//! fork, an exec and a launch cost. A machine file's optional `[costs]`
//! table gives them as a measurement does (`numalab calibrate` measures
//! them on a real machine and writes them there); every key left out
//! keeps the estimate stated beside its constant in [`crate::workload`]
//! (the spin loop's: [`SPIN_CYCLES_PER_ITERATION`]), so a file without
//! `[costs]`, as every preset is, simulates exactly as before.
//!
//! ```toml
//! [costs]
//! spin_ns = 1.8             # one iteration of numalab's spin loop
//! randupdt_ns = 1.8         # compute of one numa_test update (arrays in cache)
//! memset_gbs = 100.0        # one core's zeroing rate in cache, GB/s
//! msg_us = 2.0              # a hackbench message's write() or read(), with
//!                           # its share of the wakeup and context switch
//! fork_us = 50.0            # fork + exit of a small process
//! exec_us = 150.0           # an execve's extra (fork+exec+exit minus fork+exit)
//! msg_user_share = 0.08     # of a message's CPU time, the user part
//!                           # (default 0: all system time)
//! exec_user_share = 0.7     # of a fork's and an exec's CPU time, the user
//!                           # part (the dynamic loader's; default 1)
//! process_launch_us = 1000  # one more process started (fork + exec)
//! thread_launch_us = 50     # one more thread started (clone)
//! first_touch_gbs = 2.0     # a first touch, page faults included, GB/s
//! migrate_us_per_mb = 250   # NUMA balancing: migrating 1 MiB (default of
//!                           # the balancers' migrate_us_per_mb)
//! scan_us_per_gb = 500      # ... changing the protection of 1 GiB
//! read_gbs = 100.0          # one core reading in cache (mem --op read)
//! write_gbs = 50.0          # ... adding one to every word (mem --op write)
//! ```
//!
//! Times measured on a real machine are turned into cycles at the
//! machine's `cpu.max_ghz` (a lone busy core runs at it), so a cost scales
//! with the modelled frequency like every other compute cost.

use crate::workload::{
    EXEC_CYCLES, FORK_CYCLES, MEMSET_BYTES_PER_CYCLE, MSG_CYCLES, PROCESS_LAUNCH_NS,
    RANDUPDT_CYCLES_PER_UPDATE, THREAD_LAUNCH_NS,
};
use numalab_bench::placement::SPIN_CYCLES_PER_ITERATION;
use serde::Deserialize;
use std::collections::BTreeMap;

/// The `[costs]` table as written: every key optional, in the units a
/// measurement gives (ns, GB/s, us).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CostsSpec {
    pub spin_ns: Option<f64>,
    pub randupdt_ns: Option<f64>,
    pub memset_gbs: Option<f64>,
    pub msg_us: Option<f64>,
    pub fork_us: Option<f64>,
    pub exec_us: Option<f64>,
    /// Of a hackbench message's CPU time, the share the kernel accounts
    /// as user time (hackbench's own loop); the rest is system time.
    /// Measured with getrusage by `numalab calibrate`; default 0.
    pub msg_user_share: Option<f64>,
    /// Of forkexec's fork and exec CPU time, the user share (the dynamic
    /// loader's relocations in the child); default 1, as before it was
    /// measured.
    pub exec_user_share: Option<f64>,
    pub process_launch_us: Option<f64>,
    /// A process the runner launches: from the start of its launch to its
    /// first instruction of work (fork, execve, the dynamic loader, the
    /// runtime's start), and from its last thread's end to its reaping
    /// (exit, the address space's teardown, waitpid). Measured by
    /// `numalab calibrate` with a child that stamps the clock at once and
    /// exits; default 0, not modelled (every preset).
    pub process_start_us: Option<f64>,
    pub process_exit_us: Option<f64>,
    pub thread_launch_us: Option<f64>,
    /// The rate of a first touch: one thread zeroing memory it has never
    /// touched, its page faults (the kernel allocating and clearing each
    /// page) included, GB/s. Without it a first touch takes no time.
    pub first_touch_gbs: Option<f64>,
    /// Each process's first-touch rate when two processes first touch at
    /// once (on two nodes where the machine has them, else on two CPUs of
    /// one), GB/s: where page faults of different processes contend (a
    /// TCG guest), below `first_touch_gbs`. Without it, or at
    /// `first_touch_gbs` or above, concurrent first touches do not slow
    /// each other.
    pub first_touch_two_gbs: Option<f64>,
    /// NUMA balancing's costs on this machine: system time to migrate one
    /// MiB between two nodes (`move_pages`), and to change the protection
    /// of one GiB of mapped memory (`mprotect`, as change_prot_numa
    /// does). The defaults of the balancers' `migrate_us_per_mb` and
    /// `scan_us_per_gb`; without them, the balancers' estimates.
    pub migrate_us_per_mb: Option<f64>,
    pub scan_us_per_gb: Option<f64>,
    /// One core's rate reading, and adding one to, a buffer that fits its
    /// caches, GB/s (the mem benchmark's read and write sweeps); without
    /// them, `memset_gbs` serves all three.
    pub read_gbs: Option<f64>,
    pub write_gbs: Option<f64>,
}

impl CostsSpec {
    /// Each key with its value as written (`costs.KEY`), for range checks.
    pub fn entries(&self) -> [(&'static str, Option<f64>); 18] {
        [
            ("costs.spin_ns", self.spin_ns),
            ("costs.randupdt_ns", self.randupdt_ns),
            ("costs.memset_gbs", self.memset_gbs),
            ("costs.msg_us", self.msg_us),
            ("costs.fork_us", self.fork_us),
            ("costs.exec_us", self.exec_us),
            ("costs.msg_user_share", self.msg_user_share),
            ("costs.exec_user_share", self.exec_user_share),
            ("costs.process_launch_us", self.process_launch_us),
            ("costs.process_start_us", self.process_start_us),
            ("costs.process_exit_us", self.process_exit_us),
            ("costs.thread_launch_us", self.thread_launch_us),
            ("costs.first_touch_gbs", self.first_touch_gbs),
            ("costs.first_touch_two_gbs", self.first_touch_two_gbs),
            ("costs.migrate_us_per_mb", self.migrate_us_per_mb),
            ("costs.scan_us_per_gb", self.scan_us_per_gb),
            ("costs.read_gbs", self.read_gbs),
            ("costs.write_gbs", self.write_gbs),
        ]
    }
}

/// The costs in the units the engine uses: cycles (divided by a CPU's
/// current frequency when spent), bytes per cycle, nanoseconds. Held by
/// the built machine as [`crate::Machine::costs`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Costs {
    /// Cycles of one iteration of the spin loop (`spin`, forkexec's
    /// parent and children). `costs.spin_ns` x `cpu.max_ghz`; default
    /// [`SPIN_CYCLES_PER_ITERATION`].
    pub spin_cycles: f64,
    /// Cycles of one numa_test update besides its memory accesses.
    /// `costs.randupdt_ns` x `cpu.max_ghz`; default
    /// [`RANDUPDT_CYCLES_PER_UPDATE`].
    pub randupdt_cycles: f64,
    /// Bytes one core zeroes per cycle, in cache. `costs.memset_gbs` /
    /// `cpu.max_ghz`; default [`MEMSET_BYTES_PER_CYCLE`].
    pub memset_bytes_per_cycle: f64,
    /// Cycles of one hackbench message's write() or read(). `costs.msg_us`
    /// x 1000 x `cpu.max_ghz`; default [`MSG_CYCLES`].
    pub msg_cycles: f64,
    /// Cycles of forkexec's fork (and the child's exit). `costs.fork_us`
    /// x 1000 x `cpu.max_ghz`; default [`FORK_CYCLES`].
    pub fork_cycles: f64,
    /// Cycles of a child's execve beyond the fork. `costs.exec_us` x 1000
    /// x `cpu.max_ghz`; default [`EXEC_CYCLES`].
    pub exec_cycles: f64,
    /// Of a message's CPU time, the user share (`costs.msg_user_share`;
    /// default 0: all system time, as the kernel spends it).
    pub msg_user_share: f64,
    /// Of a forkexec fork's and exec's CPU time, the user share
    /// (`costs.exec_user_share`; default 1).
    pub exec_user_share: f64,
    /// Nanoseconds between two process launches of one launcher.
    /// `costs.process_launch_us` x 1000; default [`PROCESS_LAUNCH_NS`].
    pub process_launch_ns: u64,
    /// Nanoseconds from a runner's launch of a process to its first work,
    /// and from its last thread's end to its reaping, where the
    /// benchmark's real runs time a run from the launch to the reaping
    /// ([`crate::workload::Meta::spawn_to_reap`]). `costs.process_start_us`
    /// and `costs.process_exit_us` x 1000; default 0.
    pub process_start_ns: u64,
    pub process_exit_ns: u64,
    /// Nanoseconds between two thread launches. `costs.thread_launch_us` x
    /// 1000; default [`THREAD_LAUNCH_NS`].
    pub thread_launch_ns: u64,
    /// Bytes a main thread first-touches per nanosecond (= GB/s), its page
    /// faults included: `costs.first_touch_gbs`; default infinite (a first
    /// touch is not timed, as before it was measured).
    pub first_touch_bytes_per_ns: f64,
    /// How much each further process first touching at once slows one
    /// down: `first_touch_gbs / first_touch_two_gbs - 1` (at least 0);
    /// default 0. With k at once each runs at the one-process rate over
    /// `1 + first_touch_contention x (k - 1)` ([`Costs::first_touch_ns_among`]).
    pub first_touch_contention: f64,
    /// NUMA balancing's migration and protection-change costs, when the
    /// machine file measured them (`costs.migrate_us_per_mb`,
    /// `costs.scan_us_per_gb`): the balancers' defaults.
    pub migrate_us_per_mb: Option<f64>,
    pub scan_us_per_gb: Option<f64>,
    /// Bytes one core reads, and read-modify-writes, per cycle in cache
    /// (`costs.read_gbs`, `costs.write_gbs` / `cpu.max_ghz`), when
    /// measured; else [`Costs::memset_bytes_per_cycle`].
    pub read_bytes_per_cycle: Option<f64>,
    pub write_bytes_per_cycle: Option<f64>,
}

impl Default for Costs {
    fn default() -> Self {
        Costs::DEFAULT
    }
}

impl Costs {
    /// Today's estimates, the costs of a machine file without `[costs]`.
    pub const DEFAULT: Costs = Costs {
        spin_cycles: SPIN_CYCLES_PER_ITERATION,
        randupdt_cycles: RANDUPDT_CYCLES_PER_UPDATE,
        memset_bytes_per_cycle: MEMSET_BYTES_PER_CYCLE,
        msg_cycles: MSG_CYCLES,
        fork_cycles: FORK_CYCLES,
        exec_cycles: EXEC_CYCLES,
        msg_user_share: 0.0,
        exec_user_share: 1.0,
        process_launch_ns: PROCESS_LAUNCH_NS,
        process_start_ns: 0,
        process_exit_ns: 0,
        thread_launch_ns: THREAD_LAUNCH_NS,
        first_touch_bytes_per_ns: f64::INFINITY,
        first_touch_contention: 0.0,
        migrate_us_per_mb: None,
        scan_us_per_gb: None,
        read_bytes_per_cycle: None,
        write_bytes_per_cycle: None,
    };

    /// The costs `spec` gives on a machine whose one busy core runs at
    /// `max_ghz`, the defaults where it gives none. The values must have
    /// been checked against their ranges (see the machine file's
    /// `RANGES`).
    pub fn new(spec: &CostsSpec, max_ghz: f64) -> Costs {
        let d = Costs::DEFAULT;
        let us_cycles = |us: f64| us * 1e3 * max_ghz;
        let us_ns = |us: f64| (us * 1e3).round() as u64;
        Costs {
            spin_cycles: spec.spin_ns.map_or(d.spin_cycles, |ns| ns * max_ghz),
            randupdt_cycles: spec
                .randupdt_ns
                .map_or(d.randupdt_cycles, |ns| ns * max_ghz),
            memset_bytes_per_cycle: spec
                .memset_gbs
                .map_or(d.memset_bytes_per_cycle, |gbs| gbs / max_ghz),
            msg_cycles: spec.msg_us.map_or(d.msg_cycles, us_cycles),
            fork_cycles: spec.fork_us.map_or(d.fork_cycles, us_cycles),
            exec_cycles: spec.exec_us.map_or(d.exec_cycles, us_cycles),
            msg_user_share: spec.msg_user_share.unwrap_or(d.msg_user_share),
            exec_user_share: spec.exec_user_share.unwrap_or(d.exec_user_share),
            process_launch_ns: spec.process_launch_us.map_or(d.process_launch_ns, us_ns),
            process_start_ns: spec.process_start_us.map_or(d.process_start_ns, us_ns),
            process_exit_ns: spec.process_exit_us.map_or(d.process_exit_ns, us_ns),
            thread_launch_ns: spec.thread_launch_us.map_or(d.thread_launch_ns, us_ns),
            first_touch_bytes_per_ns: spec.first_touch_gbs.unwrap_or(d.first_touch_bytes_per_ns),
            first_touch_contention: match (spec.first_touch_gbs, spec.first_touch_two_gbs) {
                (Some(one), Some(two)) => (one / two - 1.0).max(0.0),
                _ => d.first_touch_contention,
            },
            migrate_us_per_mb: spec.migrate_us_per_mb,
            scan_us_per_gb: spec.scan_us_per_gb,
            read_bytes_per_cycle: spec.read_gbs.map(|g| g / max_ghz),
            write_bytes_per_cycle: spec.write_gbs.map(|g| g / max_ghz),
        }
    }

    /// The costs in the `[costs]` table's keys and units at `max_ghz`, as
    /// a record states them (`backend.details.costs`).
    pub fn as_file(&self, max_ghz: f64) -> BTreeMap<&'static str, f64> {
        let mut m = BTreeMap::from([
            ("spin_ns", self.spin_cycles / max_ghz),
            ("randupdt_ns", self.randupdt_cycles / max_ghz),
            ("memset_gbs", self.memset_bytes_per_cycle * max_ghz),
            ("msg_us", self.msg_cycles / max_ghz / 1e3),
            ("fork_us", self.fork_cycles / max_ghz / 1e3),
            ("exec_us", self.exec_cycles / max_ghz / 1e3),
            ("msg_user_share", self.msg_user_share),
            ("exec_user_share", self.exec_user_share),
            ("process_launch_us", self.process_launch_ns as f64 / 1e3),
            ("thread_launch_us", self.thread_launch_ns as f64 / 1e3),
        ]);
        if self.first_touch_bytes_per_ns.is_finite() {
            m.insert("first_touch_gbs", self.first_touch_bytes_per_ns);
            if self.first_touch_contention > 0.0 {
                m.insert(
                    "first_touch_two_gbs",
                    self.first_touch_bytes_per_ns / (1.0 + self.first_touch_contention),
                );
            }
        }
        // Measured only: a record of a preset names no start or exit cost.
        if self.process_start_ns > 0 || self.process_exit_ns > 0 {
            m.insert("process_start_us", self.process_start_ns as f64 / 1e3);
            m.insert("process_exit_us", self.process_exit_ns as f64 / 1e3);
        }
        if let Some(v) = self.migrate_us_per_mb {
            m.insert("migrate_us_per_mb", v);
        }
        if let Some(v) = self.scan_us_per_gb {
            m.insert("scan_us_per_gb", v);
        }
        if let Some(v) = self.read_bytes_per_cycle {
            m.insert("read_gbs", v * max_ghz);
        }
        if let Some(v) = self.write_bytes_per_cycle {
            m.insert("write_gbs", v * max_ghz);
        }
        m
    }

    /// Bytes one core sweeps per cycle in cache, as `op` does.
    pub fn sweep_bytes_per_cycle(&self, op: numalab_bench::mem::Op) -> f64 {
        use numalab_bench::mem::Op;
        match op {
            Op::Read => self.read_bytes_per_cycle,
            Op::Write => self.write_bytes_per_cycle,
            Op::Memset => None,
        }
        .unwrap_or(self.memset_bytes_per_cycle)
    }

    /// Nanoseconds one thread takes to first-touch `bytes`.
    pub fn first_touch_ns(&self, bytes: u64) -> u64 {
        self.first_touch_ns_among(bytes, 1)
    }

    /// Nanoseconds one of `k` processes first touching at once takes to
    /// first-touch `bytes`: the one-process rate slowed by
    /// `first_touch_contention` for each other one.
    pub fn first_touch_ns_among(&self, bytes: u64, k: usize) -> u64 {
        let slow = 1.0 + self.first_touch_contention * k.saturating_sub(1) as f64;
        (bytes as f64 * slow / self.first_touch_bytes_per_ns).round() as u64
    }
}
