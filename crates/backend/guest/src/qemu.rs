//! Finding QEMU and a kernel, choosing the accelerator, and the QEMU
//! command line.

use crate::spec::VmSpec;
use std::fs;
use std::path::{Path, PathBuf};

pub const QEMU: &str = "qemu-system-x86_64";
/// Debian/Ubuntu package that provides [`QEMU`].
pub const QEMU_PACKAGE: &str = "qemu-system-x86";
/// Debian package that provides a kernel in /boot (Ubuntu: linux-image-generic).
pub const KERNEL_PACKAGE: &str = "linux-image-amd64";

/// `qemu-system-x86_64` is not on `PATH`; the message names the package.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{QEMU} not found on PATH (install the {QEMU_PACKAGE} package: apt-get install {QEMU_PACKAGE})"
)]
pub struct QemuNotFound;

/// Why there is no kernel to boot: none found, or the one given is not
/// a kernel image.
#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    /// No readable `vmlinuz-*` in this directory (normally `/boot`).
    #[error("no readable kernel image {}/vmlinuz-* (install the {KERNEL_PACKAGE} package: apt-get install {KERNEL_PACKAGE}, or pass --kernel PATH)", boot.display())]
    NoneIn { boot: PathBuf },
    /// `--kernel PATH` could not be opened.
    #[error("--kernel {}: {source}", path.display())]
    Open {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("--kernel {}: too short to be a kernel image", path.display())]
    TooShort { path: PathBuf },
    /// No x86 boot protocol header.
    #[error("--kernel {}: not an x86 bzImage kernel (no boot protocol header)", path.display())]
    NotBzImage { path: PathBuf },
}

/// Why KVM cannot be used here.
#[derive(Debug, thiserror::Error)]
pub enum KvmUnusable {
    #[error("the CPU shows no vmx/svm flag (no hardware virtualisation here; nested KVM would hang or fail)")]
    NoVirtFlag,
    /// The device did not open.
    #[error("{}: {source}", dev.display())]
    Open {
        dev: PathBuf,
        source: std::io::Error,
    },
    /// Not API version 12 (-1: the ioctl failed).
    #[error("{}: KVM API version {version}, expected 12", dev.display())]
    ApiVersion { dev: PathBuf, version: i32 },
    #[error("{}: KVM_CREATE_VM failed: {source}", dev.display())]
    CreateVm {
        dev: PathBuf,
        source: std::io::Error,
    },
}

/// `--accel kvm` where KVM is not usable.
#[derive(Debug, thiserror::Error)]
#[error("--accel kvm: KVM is not usable here: {0}; use --accel tcg")]
pub struct KvmRefused(pub KvmUnusable);

/// Why `--append` was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AppendError {
    /// A word that sets the guest's init, its arguments or console.
    #[error("--append: {0:?} is numalab's to set (the guest's init, its arguments and console)")]
    Reserved(String),
    #[error("--append: no newlines or NUL bytes")]
    ControlChar,
}

/// `qemu-system-x86_64` on `PATH`, or an error naming the package.
pub fn find_qemu() -> Result<PathBuf, QemuNotFound> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        let p = dir.join(QEMU);
        if is_executable(&p) {
            return Ok(p);
        }
    }
    Err(QemuNotFound)
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(p)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// Compare kernel versions in the `6.1.0-56-amd64` style: runs of digits
/// numerically, everything else as text.
pub fn version_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    fn parts(s: &str) -> Vec<(u64, String)> {
        let mut out = Vec::new();
        let mut cur = String::new();
        let mut digits = false;
        for c in s.chars() {
            if c.is_ascii_digit() != digits && !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            digits = c.is_ascii_digit();
            cur.push(c);
        }
        if !cur.is_empty() {
            out.push(cur);
        }
        out.into_iter()
            .map(|p| match p.parse::<u64>() {
                Ok(n) => (n, String::new()),
                Err(_) => (0, p),
            })
            .collect()
    }
    parts(a).cmp(&parts(b))
}

/// The newest readable `vmlinuz-*` in `boot` (normally `/boot`).
pub fn find_kernel_in(boot: &Path) -> Result<PathBuf, KernelError> {
    let missing = || KernelError::NoneIn {
        boot: boot.to_path_buf(),
    };
    let entries = fs::read_dir(boot).map_err(|_| missing())?;
    let mut found: Vec<(String, PathBuf)> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let version = name.strip_prefix("vmlinuz-")?.to_string();
            let path = e.path();
            // Readable by us: Ubuntu keeps its kernels 0600 root.
            fs::File::open(&path).ok()?;
            path.is_file().then_some((version, path))
        })
        .collect();
    found.sort_by(|a, b| version_cmp(&a.0, &b.0));
    found.pop().map(|(_, p)| p).ok_or_else(missing)
}

/// Check an explicitly given kernel image.
pub fn check_kernel(path: &Path) -> Result<(), KernelError> {
    let path_buf = || path.to_path_buf();
    let mut f = fs::File::open(path).map_err(|source| KernelError::Open {
        path: path_buf(),
        source,
    })?;
    let mut head = [0u8; 0x206];
    use std::io::Read;
    f.read_exact(&mut head)
        .map_err(|_| KernelError::TooShort { path: path_buf() })?;
    // A bzImage has "HdrS" at 0x202 (the x86 boot protocol header).
    if &head[0x202..0x206] != b"HdrS" {
        return Err(KernelError::NotBzImage { path: path_buf() });
    }
    Ok(())
}

/// What the user asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccelChoice {
    Auto,
    Kvm,
    Tcg,
}

impl AccelChoice {
    /// The names `--accel` and a campaign's `accel` take.
    pub const NAMES: [&'static str; 3] = ["auto", "kvm", "tcg"];

    /// The choice `name` (one of [`AccelChoice::NAMES`]) stands for.
    pub fn from_name(name: &str) -> Option<AccelChoice> {
        Some(match name {
            "auto" => AccelChoice::Auto,
            "kvm" => AccelChoice::Kvm,
            "tcg" => AccelChoice::Tcg,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accel {
    Kvm,
    Tcg,
}

impl Accel {
    pub fn as_str(self) -> &'static str {
        match self {
            Accel::Kvm => "kvm",
            Accel::Tcg => "tcg",
        }
    }
}

/// Why KVM can or cannot be used here, from cheap checks that do not run
/// a guest: the CPU's virtualisation flag, `/dev/kvm`, the API version and
/// creating (then closing) an empty VM.
///
/// The CPU flag check comes first on purpose. A nested guest whose host
/// hides vmx/svm may still have a `/dev/kvm` that opens, and on such
/// machines a KVM guest can hang at the first instruction instead of
/// failing; without the flag KVM is never tried.
pub fn kvm_status(cpuinfo: &str, dev: &Path) -> Result<(), KvmUnusable> {
    let flags = cpuinfo
        .lines()
        .find(|l| l.starts_with("flags"))
        .map(|l| l.split_once(':').map(|x| x.1).unwrap_or(""))
        .unwrap_or("");
    let has = |f: &str| flags.split_whitespace().any(|w| w == f);
    if !has("vmx") && !has("svm") {
        return Err(KvmUnusable::NoVirtFlag);
    }
    let kvm = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(dev)
        .map_err(|source| KvmUnusable::Open {
            dev: dev.to_path_buf(),
            source,
        })?;
    let version = numalab_linux::kvm::api_version(&kvm).unwrap_or(-1);
    if version != 12 {
        return Err(KvmUnusable::ApiVersion {
            dev: dev.to_path_buf(),
            version,
        });
    }
    // The VM is closed again at once: it only had to be possible.
    numalab_linux::kvm::create_vm(&kvm)
        .map(drop)
        .map_err(|source| KvmUnusable::CreateVm {
            dev: dev.to_path_buf(),
            source,
        })
}

/// Choose the accelerator. Returns it and a sentence saying why.
pub fn choose_accel(choice: AccelChoice) -> Result<(Accel, String), KvmRefused> {
    let status = || {
        let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        kvm_status(&cpuinfo, Path::new("/dev/kvm"))
    };
    match choice {
        AccelChoice::Tcg => Ok((Accel::Tcg, "requested with --accel tcg".into())),
        AccelChoice::Kvm => match status() {
            Ok(()) => Ok((Accel::Kvm, "requested with --accel kvm".into())),
            Err(why) => Err(KvmRefused(why)),
        },
        AccelChoice::Auto => match status() {
            Ok(()) => Ok((Accel::Kvm, "KVM is usable".into())),
            Err(why) => Ok((Accel::Tcg, format!("KVM not used: {why}"))),
        },
    }
}

/// Everything the QEMU command line depends on.
#[derive(Debug, Clone)]
pub struct Launch<'a> {
    pub spec: &'a VmSpec,
    pub accel: Accel,
    pub kernel: &'a Path,
    pub initrd: &'a Path,
    /// Unix socket QEMU listens on for the guest's second serial port (the
    /// channel); QEMU waits for the host to connect before the guest runs.
    pub channel: &'a Path,
    /// File for the firmware's debug port (SeaBIOS writes its log there).
    pub firmware_log: &'a Path,
    /// Kernel command line.
    pub append: String,
    /// `-name`, so a leftover QEMU can be told apart from others.
    pub name: String,
    /// Host directories exported over virtio-9p.
    pub shares: Vec<Share>,
}

/// A host directory exported to the guest over virtio-9p.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Share {
    /// The guest mounts it by this tag.
    pub tag: String,
    pub path: PathBuf,
    pub readonly: bool,
    /// Pass the guest's modes, owners and special files through to the
    /// host as they are (`security_model=none`); otherwise a writable
    /// share keeps them in extended attributes (`mapped-xattr`), so a
    /// guest cannot make a setuid-root file or a device node on the host.
    pub passthrough: bool,
}

/// The kernel command line. `panic=-1` reboots at once on a panic and
/// `-no-reboot` turns that reboot into QEMU exiting, so a dead guest never
/// lingers; everything after `--` is PID 1's argv.
///
/// `quiet` (for `--shell`, where the console is the terminal) keeps the
/// kernel to warnings; otherwise it prints at its default level, which the
/// boot watchdog relies on: a booting kernel that stops printing is hung.
pub fn kernel_cmdline(ld_library_path: &str, quiet: bool, extra: &str) -> String {
    // earlycon: the kernel prints from its first instructions, so a guest
    // stuck early still shows how far it got.
    let mut s =
        String::from("console=ttyS0,115200 earlycon=uart8250,io,0x3f8,115200 panic=-1 oops=panic");
    // Skip slow probes that a testbed guest does not need.
    s.push_str(" mitigations=off i8042.noaux i8042.nokbd i8042.nopnp");
    s.push_str(" tsc=reliable no_timer_check");
    if quiet {
        s.push_str(" loglevel=4");
    }
    if !extra.trim().is_empty() {
        s.push(' ');
        s.push_str(extra.trim());
    }
    s.push_str(&format!(" rdinit={}", crate::job::GUEST_EXE));
    if !ld_library_path.is_empty() {
        s.push_str(&format!(" LD_LIBRARY_PATH={ld_library_path}"));
    }
    s.push_str(" -- guest-init");
    s
}

/// Check `--append`: nothing that would take init's place or its arguments.
pub fn check_append(extra: &str) -> Result<(), AppendError> {
    for w in extra.split_whitespace() {
        if w == "--"
            || w.starts_with("rdinit=")
            || w.starts_with("init=")
            || w.starts_with("console=")
        {
            return Err(AppendError::Reserved(w.to_string()));
        }
    }
    if extra.contains(['\n', '\0']) {
        return Err(AppendError::ControlChar);
    }
    Ok(())
}

/// QEMU arguments (without the program). One memory backend and one
/// socket per node, so the guest sees each node's CPUs as a package; a
/// memory-only node has a backend and no socket.
pub fn args(l: &Launch) -> Vec<String> {
    let spec = l.spec;
    let mut a: Vec<String> = Vec::new();
    let mut push = |xs: &[&str]| a.extend(xs.iter().map(|s| s.to_string()));
    push(&["-name", &l.name]);
    push(&[
        "-nodefaults",
        "-no-user-config",
        "-display",
        "none",
        "-no-reboot",
    ]);
    match l.accel {
        Accel::Kvm => push(&["-accel", "kvm", "-cpu", "host"]),
        // Multi-threaded TCG: one host thread per vCPU.
        Accel::Tcg => push(&["-accel", "tcg,thread=multi", "-cpu", "qemu64"]),
    }
    let cpu_nodes = spec.cpu_nodes().count();
    push(&[
        "-smp",
        &format!(
            "cpus={},sockets={},cores={},threads=1",
            spec.vcpus(),
            cpu_nodes,
            spec.cpus_per_node
        ),
    ]);
    push(&["-m", &format!("{}M", spec.total_memory_bytes() >> 20)]);
    // Each node's memory backed by the host before the guest boots
    // (`prealloc`): otherwise the first touch of a guest page the guest
    // has never used is also QEMU's, a host page fault and a zeroing, and
    // a benchmark's first run in a fresh guest started its threads 3.6x
    // later than the runs after it (docs/validation.md, 2026-11-28).
    for n in &spec.nodes {
        push(&[
            "-object",
            &format!(
                "memory-backend-ram,id=mem{},size={}M,prealloc=on",
                n.id,
                n.memory_bytes >> 20
            ),
        ]);
        push(&["-numa", &format!("node,nodeid={},memdev=mem{}", n.id, n.id)]);
    }
    for (socket, n) in spec.cpu_nodes().enumerate() {
        push(&["-numa", &format!("cpu,node-id={},socket-id={socket}", n.id)]);
    }
    for i in 0..spec.nodes.len() {
        for j in 0..spec.nodes.len() {
            if i != j {
                push(&[
                    "-numa",
                    &format!("dist,src={i},dst={j},val={}", spec.distances[i][j]),
                ]);
            }
        }
    }
    push(&["-kernel", &l.kernel.to_string_lossy()]);
    push(&["-initrd", &l.initrd.to_string_lossy()]);
    push(&["-append", &l.append]);
    // The host's filesystem: `security_model=none` passes the host's
    // ownership and modes through as they are, which is what a read-only
    // share wants. A writable one would let the guest's root make a
    // setuid-root file or a device node on the host (QEMU runs as the
    // invoking user, root included), so it is `mapped-xattr`: files the
    // guest makes are plain files of mode 0644 (directories 0755) on the
    // host, their guest modes in `user.virtfs.*` attributes, unless the
    // share is `passthrough`. `multidevs=remap` keeps inode numbers
    // unique across the host's mount points.
    for (i, sh) in l.shares.iter().enumerate() {
        let model = if sh.readonly || sh.passthrough {
            "security_model=none"
        } else {
            "security_model=mapped-xattr,fmode=0644,dmode=0755"
        };
        push(&[
            "-fsdev",
            &format!(
                "local,id=fs{i},path={},{model},multidevs=remap{}",
                sh.path.to_string_lossy().replace(',', ",,"),
                if sh.readonly { ",readonly=on" } else { "" }
            ),
        ]);
        push(&[
            "-device",
            &format!("virtio-9p-pci,fsdev=fs{i},mount_tag={}", sh.tag),
        ]);
    }
    // ttyS0: the console, on QEMU's stdout. ttyS1: the channel, a socket
    // QEMU listens on and waits for the host to connect to (so nothing the
    // guest sends is lost), both ways.
    push(&["-chardev", "stdio,id=console,signal=off"]);
    push(&["-serial", "chardev:console"]);
    push(&[
        "-chardev",
        &format!(
            "socket,id=channel,path={},server=on,wait=on",
            l.channel.to_string_lossy().replace(',', ",,")
        ),
    ]);
    push(&["-serial", "chardev:channel"]);
    push(&["-monitor", "none"]);
    push(&[
        "-debugcon",
        &format!("file:{}", l.firmware_log.to_string_lossy()),
    ]);
    push(&["-global", "isa-debugcon.iobase=0x402"]);
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accelerator_and_root_names_stand_for_their_choices() {
        let accels: Vec<_> = AccelChoice::NAMES
            .iter()
            .map(|n| AccelChoice::from_name(n))
            .collect();
        use AccelChoice::*;
        assert_eq!(accels, [Some(Auto), Some(Kvm), Some(Tcg)]);
        assert_eq!(AccelChoice::from_name("KVM"), None);
        let roots: Vec<_> = crate::Rootfs::NAMES
            .iter()
            .map(|n| crate::Rootfs::from_name(n))
            .collect();
        assert_eq!(
            roots,
            [Some(crate::Rootfs::Host), Some(crate::Rootfs::Initramfs)]
        );
        assert_eq!(crate::Rootfs::from_name("auto"), None);
    }
    use crate::spec::{SpecInput, VmSpec};
    use std::cmp::Ordering;

    #[test]
    fn kernel_versions_sort_numerically() {
        assert_eq!(
            version_cmp("6.1.0-56-amd64", "6.1.0-9-amd64"),
            Ordering::Greater
        );
        assert_eq!(
            version_cmp("6.10.0-1-amd64", "6.9.0-1-amd64"),
            Ordering::Greater
        );
        assert_eq!(version_cmp("5.10.0-1", "5.10.0-1"), Ordering::Equal);
    }

    #[test]
    fn newest_readable_kernel() {
        let d = tempfile::tempdir().unwrap();
        let e = find_kernel_in(d.path()).unwrap_err().to_string();
        assert!(e.contains("install the linux-image-amd64 package"), "{e}");
        for v in ["6.1.0-9-amd64", "6.1.0-56-amd64", "5.10.0-30-amd64"] {
            fs::write(d.path().join(format!("vmlinuz-{v}")), b"k").unwrap();
        }
        fs::write(d.path().join("initrd.img-9.9.9"), b"i").unwrap();
        assert_eq!(
            find_kernel_in(d.path()).unwrap(),
            d.path().join("vmlinuz-6.1.0-56-amd64")
        );
        let e = find_kernel_in(&d.path().join("nope"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("linux-image-amd64"));
    }

    #[test]
    fn explicit_kernel_is_checked() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("k");
        fs::write(&p, b"short").unwrap();
        assert!(check_kernel(&p)
            .unwrap_err()
            .to_string()
            .contains("too short"));
        let mut img = vec![0u8; 0x300];
        fs::write(&p, &img).unwrap();
        assert!(check_kernel(&p)
            .unwrap_err()
            .to_string()
            .contains("not an x86 bzImage"));
        img[0x202..0x206].copy_from_slice(b"HdrS");
        fs::write(&p, &img).unwrap();
        check_kernel(&p).unwrap();
        assert!(check_kernel(&d.path().join("missing")).is_err());
    }

    #[test]
    fn no_vmx_means_no_kvm() {
        let e = kvm_status("flags\t: fpu sse2 hypervisor\n", Path::new("/dev/kvm"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("no vmx/svm"), "{e}");
        let e = kvm_status("flags\t: fpu vmx\n", Path::new("/nonexistent/kvm"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("/nonexistent/kvm"), "{e}");
    }

    #[test]
    fn append_cannot_replace_init() {
        check_append("numa_balancing=disable earlycon").unwrap();
        assert!(check_append("rdinit=/bin/sh").is_err());
        assert!(check_append("a -- b").is_err());
        assert!(check_append("console=tty0").is_err());
    }

    #[test]
    fn command_line_describes_the_topology() {
        let spec = VmSpec::parse(&SpecInput {
            nodes: 3,
            cpus_per_node: 2,
            mem_per_node: "256M".into(),
            distances: Some("10,20,30;20,10,25;30,25,10".into()),
            memory_only_nodes: Some("2".into()),
        })
        .unwrap();
        let l = Launch {
            spec: &spec,
            accel: Accel::Tcg,
            kernel: Path::new("/boot/vmlinuz"),
            initrd: Path::new("/tmp/x/initrd"),
            channel: Path::new("/tmp/x/channel"),
            firmware_log: Path::new("/tmp/x/firmware.log"),
            append: kernel_cmdline("", false, ""),
            name: "numalab-vm-1".into(),
            shares: vec![
                Share {
                    tag: "hostroot".into(),
                    path: "/".into(),
                    readonly: true,
                    passthrough: false,
                },
                Share {
                    tag: "share1".into(),
                    path: "/src/a,b".into(),
                    readonly: false,
                    passthrough: false,
                },
            ],
        };
        let a = args(&l).join(" ");
        for want in [
            "-smp cpus=4,sockets=2,cores=2,threads=1",
            "-m 768M",
            "-object memory-backend-ram,id=mem2,size=256M,prealloc=on",
            "-numa node,nodeid=2,memdev=mem2",
            "-numa cpu,node-id=0,socket-id=0",
            "-numa cpu,node-id=1,socket-id=1",
            "-numa dist,src=0,dst=2,val=30",
            "-numa dist,src=2,dst=1,val=25",
            "-accel tcg,thread=multi",
            "-no-reboot",
            "-kernel /boot/vmlinuz -initrd /tmp/x/initrd",
            "-serial chardev:console",
            "socket,id=channel,path=/tmp/x/channel,server=on,wait=on",
            "-debugcon file:/tmp/x/firmware.log",
            "-fsdev local,id=fs0,path=/,security_model=none,multidevs=remap,readonly=on",
            "-device virtio-9p-pci,fsdev=fs0,mount_tag=hostroot",
            "-fsdev local,id=fs1,path=/src/a,,b,security_model=mapped-xattr,fmode=0644,dmode=0755,multidevs=remap -device virtio-9p-pci,fsdev=fs1,mount_tag=share1",
        ] {
            assert!(a.contains(want), "missing {want:?} in {a}");
        }
        assert!(!a.contains("node-id=2,"), "memory-only node got CPUs: {a}");
        let append = &args(&l)[args(&l).iter().position(|x| x == "-append").unwrap() + 1];
        assert!(append.contains("panic=-1"));
        assert!(
            append.ends_with("rdinit=/numalab/numalab -- guest-init"),
            "{append}"
        );
        assert!(kernel_cmdline("/opt/lib", true, "")
            .contains(" LD_LIBRARY_PATH=/opt/lib -- guest-init"));
        let c = kernel_cmdline("", false, " numa_balancing=disable ");
        assert!(c.contains(" numa_balancing=disable rdinit="), "{c}");
        assert!(c.contains("earlycon=uart8250,io,0x3f8"), "{c}");
    }
}
