//! # numalab-linux: the kernel interfaces, directly
//!
//! numalab talks to Linux without libnuma: the NUMA system calls through
//! `libc` (`sched_setaffinity`, `set_mempolicy`, `mbind`, `move_pages`,
//! `getcpu`), procfs by parsing its text, and child processes with
//! `wait4` so every task's user and system time is exact. Each wrapper
//! returns `io::Result` with the syscall's errno; nothing here panics on
//! what the kernel says.
//!
//! Child processes are started with `PR_SET_PDEATHSIG = SIGKILL`, so if
//! numalab dies, even by SIGKILL, no benchmark task outlives it; a user's
//! program, whose descendants numalab did not start, runs under a
//! supervisor that kills its whole tree when numalab ends ([`supervise`]).
//!
//! Machine settings a configuration needs (sysctls, sysfs files, the
//! cpufreq governor, THP) are applied by `knobs` only after every
//! original value is read and handed to a guard process, and are written
//! back on every way out: `restore`, drop, a failed write, and, when
//! numalab is SIGKILLed, by the guard, which sees its stdin pipe close.
//!
//! This is the one crate of numalab with `unsafe` code: every other
//! crate reaches the kernel through the safe wrappers here (memory
//! mappings in [`mmap`], forked workers in [`fork`], terminals in
//! [`tty`], BPF maps the kernel writes as we read them in [`volatile`],
//! ...) and forbids or denies `unsafe` itself. Each `unsafe` block here
//! says why it is sound in a `// SAFETY:` comment, which clippy checks.
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod child;
pub mod clock;
pub mod fd;
pub mod fork;
pub mod fs;
pub mod knobs;
pub mod kvm;
pub mod lock;
pub mod mmap;
pub mod numa;
pub mod out;
pub mod perf;
pub mod process;
pub mod procfs;
pub mod sched_ext;
pub mod shell;
pub mod supervise;
pub mod system;
pub mod tty;
pub mod volatile;
