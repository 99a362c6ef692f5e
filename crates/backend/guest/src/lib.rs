//! # numalab-guest: a NUMA machine of any shape, on any machine
//!
//! Most machines that build and test numalab have one NUMA node, so nothing
//! NUMA can be checked on them directly. QEMU can give a guest any NUMA
//! topology — nodes, CPUs per node, memory per node, a SLIT distance
//! matrix, memory-only nodes — and a stock distribution kernel inside that
//! guest really schedules across those nodes, really places pages on them
//! and really migrates pages with automatic NUMA balancing. `numalab vm`
//! is how every other feature gets tested on more than one node.
//!
//! ## How a run goes
//!
//! 1. **Spec.** `--nodes/--cpus-per-node/--mem-per-node/--distances/
//!    --memory-only-nodes` become a validated [`VmSpec`]: at least one node
//!    with CPUs, positive sizes, a square symmetric matrix with 10 on the
//!    diagonal and more elsewhere. Errors are one line naming the flag.
//! 2. **Initramfs.** The guest needs only a kernel image. Its userland is
//!    built from this very executable (without its debug sections, when
//!    `objcopy` is there): [`elf`] reads the binary's
//!    `PT_INTERP` and `DT_NEEDED` entries and resolves them as the loader
//!    would, [`cpio`] writes an uncompressed `newc` archive holding
//!    numalab, its loader and libraries at the same paths as on the host,
//!    `/dev/console`, and [`job`]'s `job.json` (the command, the sysctls).
//!    Passing the command in a file avoids quoting it on the kernel command
//!    line.
//! 3. **Kernel.** A bzImage decompresses itself, which under TCG takes
//!    longer than the rest of the boot. [`kernel`] extracts the payload,
//!    decompresses it once on the host with the format's standard tool
//!    (`xz` for Debian's kernels), caches the ELF and has QEMU boot it
//!    through its PVH entry point; without the tool or the PVH note it
//!    boots the bzImage as is and says why. `--kernel debian-7.3` is a
//!    kernel by name ([`named`]): Debian's trixie-backports 7.3.x, with
//!    sched_ext, fetched once by apt under a private configuration
//!    (signature and SHA256 verified), unpacked, depmod'ed and checked
//!    into numalab's cache, and booted with its own module tree.
//! 4. **QEMU.** [`qemu`] builds the command line: one RAM backend and one
//!    `-numa node` per node, one socket per node with CPUs
//!    (`-numa cpu,node-id=N,socket-id=S`), a `-numa dist` per ordered pair,
//!    `-kernel`/`-initrd`, `-no-reboot`, `panic=-1`, `rdinit=` pointing at
//!    numalab and `-- guest-init` as PID 1's arguments.
//! 5. **Guest.** numalab runs as PID 1 ([`guest`]): mounts proc, sysfs,
//!    devtmpfs, debugfs; applies the sysctls and reads them back; runs the
//!    command as a child in `/` with `--results` pointing into the guest;
//!    streams its stdout and stderr to the host; sends every record it
//!    wrote; reports the exit status; powers off with
//!    `reboot(RB_POWER_OFF)`.
//! 6. **Back on the host** ([`host`], `session`): records are parsed and checked, their
//!    `backend` rewritten to `Backend::Guest` (accelerator, the spec as
//!    typed, the sysctls as read back, the host's name, kernel and CPU), a
//!    warning about emulated timing added, and each is written atomically
//!    into the host's results directory. The guest's own view — its kernel,
//!    its topology, its `numa_balancing` — is the record's `machine`, as
//!    the command inside saw it.
//!
//! ## The host's filesystem as the guest's root
//!
//! An initramfs holding only numalab cannot run `make`, a compiler, perf
//! or a user's own program. So, as virtme-ng does, the guest's root is
//! the host's: QEMU exports `/` over virtio-9p read-only ([`qemu::Share`],
//! `security_model=none`, `multidevs=remap`), and PID 1 mounts it
//! (`cache=loose`), lays an overlay over it whose upper and work
//! directories are on a tmpfs (programs can write anywhere; nothing
//! reaches the host), mounts each `--share DIR` read-write (its own 9p
//! export, `cache=mmap`) at its host path over the overlay, moves `/proc`,
//! `/sys` and `/dev` across, binds `/numalab` in (the executable and its
//! job stay where they were), switches root into it (`MS_MOVE` onto `/`
//! and `chroot`: the initramfs cannot be unmounted), links
//! `/usr/local/bin/numalab`, sets `PATH`, and changes to `--cwd` (default:
//! the host's working directory), where the agent's children, and so the
//! runs of `-- run ...`, start; a one-shot numalab command still runs in
//! `/`, so its relative default `numalab-results` is the guest's results
//! directory. The channel's open file survives the switch.
//!
//! Debian's kernel builds virtio-pci, 9p, its netfs and fscache
//! dependencies, and overlayfs as modules, and a module loads only into
//! the kernel it was built for. [`modules`] reads the guest kernel's
//! release from the bzImage header (`kernel_version`), finds
//! `/lib/modules/<release>` (or `--modules DIR`), resolves the
//! dependencies from `modules.dep`, skips what `modules.builtin` lists,
//! copies the `.ko` files (decompressed with `xz`/`zstd`/`gzip` when they
//! are) into the initramfs, and PID 1 loads them in order with
//! `finit_module(2)`. With `--rootfs` left to `auto` a kernel whose
//! modules are not found boots the initramfs only, saying why; with
//! `--rootfs host`, `--share`, `--cwd` or `--modules` that is a one-line
//! error naming the missing module. `--rootfs initramfs` keeps the old,
//! self-contained guest.
//!
//! ## `--shell`
//!
//! `numalab vm --shell` gives QEMU numalab's terminal as the console
//! (standard input and output inherited, QEMU left in numalab's process
//! group so it may read the terminal, no console watching, no timeout
//! unless asked), and PID 1, instead of a command, starts `bash -i` in a
//! new session with `/dev/ttyS0` as its controlling terminal, sized like
//! the host's; the shell's exit status comes back as the `exit` frame.
//!
//! ## The working directory
//!
//! Each `numalab vm` builds its initramfs in `numalab-vm-<pid>-XXXXXX`
//! under the temporary directory and removes it when it ends. A numalab
//! killed by SIGKILL cannot; the next `numalab vm` removes every
//! `numalab-vm-<pid>-*` whose pid no longer exists, and says so.
//! `--keep-workdir` (and `NUMALAB_VM_DEBUG`) keeps this run's.
//!
//! ## The guest as a runner backend
//!
//! `numalab vm ... -- run BENCHMARK` does not run the runner in the
//! guest: [`GuestBackend`] implements the runner's `Backend` trait on the
//! host. It boots one guest whose PID 1 is an agent
//! ([`numalab_protocol::agent`]) instead of
//! a one-shot command, asks it for its machine and calibration figures,
//! then sends it one request per run (the resolved case, label,
//! repetition, interval) and gets the record back as the run ends. So the
//! runner, its progress bar, its Ctrl-C handling and its record writing
//! are the same code for host, guest and simulator, and an interrupted or
//! timed-out guest campaign keeps every run that finished. Configuration
//! settings (`--sysctl` of the runner) are applied by the agent inside the
//! guest. The agent, its requests, the frames and the host's side of a
//! request are numalab-protocol's, which knows nothing of QEMU: this crate
//! is the transport (the serial port, the session) and the boot.
//!
//! ## The channel
//!
//! Debian's kernel has the 8250 UART built in, while virtio-serial and
//! vsock are modules (and an initramfs-only guest has no modules at all).
//! So the channel is the
//! second serial port: QEMU connects the guest's `ttyS1` to a Unix socket
//! and waits for the host to connect before the guest starts, so nothing
//! is lost. The sender (mostly the guest; the host sends requests to the
//! agent) writes frames with a kind, a name, a length and a CRC-32
//! ([`numalab_protocol::frame`]); they are decoded incrementally, so the command's output
//! streams as it is produced, and a frame cut short or damaged is
//! reported instead of stored. The console (`ttyS0`: kernel messages, init's diagnostics) is
//! QEMU's standard output, streamed to the host's standard error, or to a
//! log file with `--quiet`. The command's standard output arrives on the
//! host's standard output untouched by kernel messages, so
//! `numalab vm ... -- topology --json | jq` works.
//!
//! ## Teardown
//!
//! QEMU is spawned with `PR_SET_PDEATHSIG=SIGKILL` (it dies if numalab
//! dies, even by SIGKILL) in a process group of its own (a terminal Ctrl-C
//! reaches numalab, which stops QEMU and reaps it before exiting). A guest
//! that runs past `--timeout` is killed; a guest that panics reboots at
//! once (`panic=-1`, `oops=panic`), which `-no-reboot` turns into QEMU
//! exiting; a "Kernel panic" line on the console is also watched for in
//! case the reboot itself hangs. Every failure prints the last lines of
//! the guest console.
//!
//! ## Accelerator
//!
//! `--accel auto` uses KVM only when the CPU shows vmx/svm, `/dev/kvm`
//! opens, reports API version 12 and can create a VM; otherwise TCG, and
//! it says why. The CPU flag is checked first because nested KVM without
//! hardware support can accept `KVM_CREATE_VM` and then hang the guest. As
//! a last line of defence a booting guest whose console stays silent (30 s
//! under KVM, 60 s under TCG, from its latest line until init's first
//! frame; `earlycon` and the default log level make the kernel print from
//! its first instructions and every second or so after) is stopped, its
//! last lines (or the firmware's debug log) shown, and booted again: with
//! TCG if `auto` had picked KVM, else once more as it was. A kernel that
//! panics before init's first frame (an early oops) is booted once more
//! too.
//!
//! ## Limits: what a guest can and cannot tell you
//!
//! Emulated NUMA nodes are all backed by the host's memory: a "remote"
//! access costs what a local one does, and under TCG every instruction is
//! emulated, 10–100× slower and with different relative costs. So claims
//! about **kernel behaviour** — which node a task runs on, where pages are
//! placed, whether and when they migrate, what the scheduler and NUMA
//! balancing counters say — come from the guest and are real. Claims about
//! **speed** — runtimes, bandwidth, the cost of a remote access — do not,
//! and records from a guest carry a warning saying so. The SLIT distances
//! the guest reports are the ones given, and the kernel uses them for its
//! decisions; no latency follows from them.
//!
//! Other limits: x86_64 guests only (`qemu-system-x86_64`, a bzImage);
//! one thread per core (no SMT); one LLC per node as QEMU models it; the
//! guest has no network or disk, and the host's filesystem is read-only
//! to it except for `--share` directories; records travel at serial-port
//! speed (a few MB/s under TCG), which is ample for records but not for
//! bulk data.
#![forbid(unsafe_code)]

pub mod backend;
pub mod cpio;
pub mod elf;
pub mod guest;
pub mod host;
pub mod initramfs;
pub mod job;
pub mod kernel;
pub mod modules;
pub mod named;
pub mod probe;
pub mod qemu;
mod session;
pub mod spec;

pub use backend::GuestBackend;
pub use host::{fetch_kernel, results_dir, run, GuestExit, Rootfs, VmError, VmOptions, VmReport};
pub use qemu::{Accel, AccelChoice};
pub use spec::{SpecError, SpecInput, VmSpec};
