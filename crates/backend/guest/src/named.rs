//! Guest kernels by name: `numalab vm --kernel debian-7.3`.
//!
//! A name stands for a Debian kernel series: `debian-7.3` is the newest
//! 7.3.x of trixie-backports for amd64, the first kernel Debian ships with
//! sched_ext (`CONFIG_SCHED_CLASS_EXT=y`). The first use fetches it, once,
//! into `$XDG_CACHE_HOME/numalab/kernels/` (or `~/.cache/...`):
//!
//! 1. **apt, privately.** `apt-get update` and `apt-get download` run with
//!    a configuration of numalab's own (`Dir::Etc::SourceList`,
//!    `SourceParts`, `Dir::State::Lists`, `Dir::Cache::Archives`,
//!    `Dir::State::status`, ... all under `kernels/apt/`): one source,
//!    `deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg]
//!    http://deb.debian.org/debian trixie-backports main`. Nothing is
//!    installed on the host and its own sources and lists are not touched.
//! 2. **Verified by apt.** apt checks the `InRelease` signature against
//!    Debian's archive keyring (bookworm's `debian-archive-keyring` has the
//!    trixie keys) and each `.deb` against the SHA256 of the `Packages`
//!    index that signature covers. numalab turns off every way of skipping
//!    that (`AllowInsecureRepositories`, `AllowDowngradeToInsecure...`,
//!    `AllowUnauthenticated` set false on the command line, which wins over
//!    any configuration file; `update --error-on=any`), checks that the
//!    `InRelease` apt verified is there, and checks each `.deb`'s size and
//!    SHA256 against the `Packages` file itself.
//! 3. **Four packages.** Since 7.x the kernel comes as
//!    `linux-base-VER` (config, modules.builtin), `linux-binary-VER`
//!    (vmlinuz) and `linux-modules-VER` (xz modules, no `modules.dep`),
//!    all under `usr/lib/modules/VER/`; `linux-bpf-dev` of the same
//!    version holds the kernel's `vmlinux.h` (every type of its BTF, the
//!    sched_ext kfuncs among them), what numalab's sched_ext schedulers
//!    are compiled against (crates/scx). They are unpacked with
//!    `dpkg-deb -x` into a fresh `.part-*` directory, `depmod -b` makes
//!    `modules.dep`, the header is put beside the kernel
//!    (`vmlinux-VER.h`), the config is checked for what numalab needs, a
//!    marker (`numalab-kernel.json`) is written last and the directory is
//!    renamed to `kernels/VER` in one step. A fetch cut short (Ctrl-C, a
//!    failed download) leaves at most a `.part-*` directory, which never
//!    counts and is removed by the next fetch.
//!
//! numalab runs as root, so the cache is treated as hostile: the
//! `kernels` directory must be a real directory owned by the user and
//! writable by nobody else, names from the index are checked before they
//! become paths, files are created with `O_EXCL` and never followed
//! through links, and fetches are serialised by a lock.

use numalab_linux::lock;
use std::fs;
use std::io::Read;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A kernel numalab can fetch by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Known {
    /// `debian-7.3`.
    pub name: &'static str,
    /// The Debian suite it comes from.
    pub suite: &'static str,
    /// The upstream series: the newest `SERIES.N` is taken.
    pub series: &'static str,
    /// Debian's ABI suffix after the upstream version: `+deb13`.
    pub debian: &'static str,
    /// The flavour: `amd64` (not `cloud-amd64` or `rt-amd64`).
    pub flavour: &'static str,
}

/// The kernels `--kernel NAME` knows.
pub const KNOWN: [Known; 1] = [Known {
    name: "debian-7.3",
    suite: "trixie-backports",
    series: "7.3",
    debian: "deb13",
    flavour: "amd64",
}];

/// The archive numalab fetches from, and the keyring that verifies it.
pub const MIRROR: &str = "http://deb.debian.org/debian";
pub const KEYRING: &str = "/usr/share/keyrings/debian-archive-keyring.gpg";
/// The marker a complete cache entry has; written last.
pub const MARKER: &str = "numalab-kernel.json";

/// `debian-7.3` (the names, comma-separated, for messages).
pub fn known_names() -> String {
    KNOWN.iter().map(|k| k.name).collect::<Vec<_>>().join(", ")
}

pub fn lookup(name: &str) -> Option<&'static Known> {
    KNOWN.iter().find(|k| k.name == name)
}

/// What `--kernel ARG` means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KernelArg {
    Path(PathBuf),
    Named(&'static Known),
}

/// Why `--kernel NAME` names no kernel.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// The name as escaped.
    #[error("--kernel {0}: control characters in the name")]
    ControlChars(String),
    /// Neither a file nor a known name (the known ones listed).
    #[error("--kernel {0}: no such file, and not a kernel name numalab knows (known: {known}); or give the path of a bzImage", known = known_names())]
    Unknown(String),
}

/// Why a release of a known kernel was not chosen from an index.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChooseError {
    /// No `linux-binary-SERIES.N+DEBIAN-FLAVOUR` package.
    #[error("{name}: no linux-binary-{series}.N+{debian}-{flavour} package in {suite}'s index")]
    NoRelease {
        name: &'static str,
        series: &'static str,
        debian: &'static str,
        flavour: &'static str,
        suite: &'static str,
    },
    #[error("{name}: odd release name {release:?} in the index")]
    OddRelease { name: &'static str, release: String },
    /// One of the four packages is not there at the binary's version.
    #[error("{name}: {package} {version} is not in {suite}'s index (the four packages of {release} must come together)")]
    Incomplete {
        name: &'static str,
        package: String,
        version: String,
        suite: &'static str,
        release: String,
    },
    #[error("{name}: {package}: no valid SHA256 in the index")]
    NoSha256 { name: &'static str, package: String },
}

/// A downloaded `.deb` and what the Packages file `index` lists it as.
#[derive(Debug)]
pub struct Listed {
    pub deb: PathBuf,
    pub index: PathBuf,
    pub package: String,
    pub version: String,
}

/// Why a downloaded `.deb` is refused.
#[derive(Debug, thiserror::Error)]
pub enum DebError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {len} bytes, but {} says {expected} for {} {}", l.deb.display(), l.index.display(), l.package, l.version)]
    Size {
        l: Box<Listed>,
        len: u64,
        expected: u64,
    },
    #[error("{}: SHA256 {got}, but {} says {expected} for {} {}", l.deb.display(), l.index.display(), l.package, l.version)]
    Sha256 {
        l: Box<Listed>,
        got: String,
        expected: String,
    },
}

/// Why numalab's kernel cache directory is refused.
#[derive(Debug, thiserror::Error)]
pub enum RootError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A link, another owner's, or writable by group or others.
    #[error("{}: not a directory of this user's that only it may write (a link, another owner, or group/other write); refusing it as numalab's kernel cache", .0.display())]
    NotOurs(PathBuf),
}

/// Why a named kernel is not in the cache: the cache, the lock, a tool
/// or key missing, apt's index or download, a package, its contents.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// Any of these, for `--kernel NAME`.
    #[error("--kernel {name}: {source}")]
    Named {
        name: &'static str,
        source: Box<FetchError>,
    },
    #[error("--kernel {0}: no cache directory (set HOME or XDG_CACHE_HOME)")]
    NoCache(&'static str),
    #[error(transparent)]
    Root(#[from] RootError),
    #[error(transparent)]
    Lock(#[from] lock::LockError),
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A file one of the packages should have held.
    #[error("{}: {source} (not in {package}?)", path.display())]
    NotInPackage {
        path: PathBuf,
        source: std::io::Error,
        package: &'static str,
    },
    #[error("syncfs {}: {source}", path.display())]
    Syncfs {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Standard error could not be given to a command.
    #[error("{0}")]
    Stderr(std::io::Error),
    /// A command did not start (what it is).
    #[error("{what}: {source}")]
    Start {
        what: String,
        source: std::io::Error,
    },
    /// A command failed: its status and its last lines of standard error.
    #[error("{what} failed ({status}): {last}")]
    Failed {
        what: String,
        status: std::process::ExitStatus,
        last: String,
    },
    #[error("{name}: fetching it needs {tool} (Debian's apt, dpkg and kmod)")]
    NoTool {
        name: &'static str,
        tool: &'static str,
    },
    #[error("{0}: {KEYRING} is missing: install debian-archive-keyring")]
    NoKeyring(&'static str),
    #[error("{name}: apt left no verified InRelease of {suite} in {}: refusing to go on", lists.display())]
    NoInRelease {
        name: &'static str,
        suite: &'static str,
        lists: PathBuf,
    },
    #[error("{name}: no Packages index of {suite} in {}", lists.display())]
    NoPackages {
        name: &'static str,
        suite: &'static str,
        lists: PathBuf,
    },
    #[error(transparent)]
    Choose(#[from] ChooseError),
    /// Not one `.deb` downloaded for a package.
    #[error("{name}: {count} files for {package} in {}, expected one", debs.display())]
    DebCount {
        name: &'static str,
        count: usize,
        package: String,
        debs: PathBuf,
    },
    #[error("{}: not a regular file", .0.display())]
    NotRegular(PathBuf),
    #[error(transparent)]
    Deb(#[from] DebError),
    /// The kernel's config lacks what numalab needs (listed).
    #[error("{name} ({release}): its config lacks {}; not cached", missing.join(", "))]
    ConfigLacks {
        name: &'static str,
        release: String,
        missing: Vec<String>,
    },
    #[error("depmod made no {}", .0.display())]
    NoModulesDep(PathBuf),
    #[error(transparent)]
    Kernel(#[from] crate::qemu::KernelError),
    /// Something not complete is where the release goes.
    #[error("{} is there but is not a complete kernel (no valid {MARKER}): remove it and try again", .0.display())]
    InTheWay(PathBuf),
    #[error("{}: incomplete right after fetching", .0.display())]
    Incomplete(PathBuf),
}

fn io_at(path: &Path) -> impl FnOnce(std::io::Error) -> FetchError {
    let path = path.to_path_buf();
    move |source| FetchError::Io { path, source }
}

/// A known name is a name (write `./debian-7.3` for a file of that
/// name); anything with a `/`, or a file that exists, is a path; the rest
/// is an unknown name, refused in one line that lists the known ones.
pub fn classify(arg: &Path) -> Result<KernelArg, NameError> {
    let s = arg.to_string_lossy();
    if s.chars().any(char::is_control) {
        return Err(NameError::ControlChars(s.escape_debug().to_string()));
    }
    if s.contains('/') {
        return Ok(KernelArg::Path(arg.to_path_buf()));
    }
    if let Some(k) = lookup(&s) {
        return Ok(KernelArg::Named(k));
    }
    if arg.exists() {
        return Ok(KernelArg::Path(arg.to_path_buf()));
    }
    Err(NameError::Unknown(s.into_owned()))
}

/// One stanza of a `Packages` index: the fields numalab uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stanza {
    pub package: String,
    pub version: String,
    pub filename: String,
    pub size: u64,
    pub sha256: String,
}

/// The stanzas of a `Packages` file that have every field numalab needs.
pub fn parse_packages(text: &str) -> Vec<Stanza> {
    let mut out = Vec::new();
    for block in text.split("\n\n") {
        let f = |key: &str| {
            block.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k == key).then(|| v.trim().to_string())
            })
        };
        let (Some(package), Some(version), Some(filename), Some(size), Some(sha256)) = (
            f("Package"),
            f("Version"),
            f("Filename"),
            f("Size").and_then(|s| s.parse().ok()),
            f("SHA256"),
        ) else {
            continue;
        };
        out.push(Stanza {
            package,
            version,
            filename,
            size,
            sha256,
        });
    }
    out
}

/// A kernel release name (`7.3.4+deb13-amd64`) as it may become a
/// directory name: letters, digits and `.+~-` only, not starting with a
/// dot, at most 100 characters.
pub fn valid_release(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 100
        && !s.starts_with('.')
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"+.~-".contains(&b))
}

impl Known {
    /// The patch level of a release of this series and flavour:
    /// `7.3.4+deb13-amd64` -> 4; `7.3.4+deb13-cloud-amd64` -> None.
    pub fn patch_of(&self, release: &str) -> Option<u32> {
        let rest = release.strip_suffix(&format!("+{}-{}", self.debian, self.flavour))?;
        let patch = rest.strip_prefix(self.series)?.strip_prefix('.')?;
        if patch.is_empty() || !patch.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        patch.parse().ok()
    }

    /// linux-base, linux-binary, linux-modules of `release`, and
    /// linux-bpf-dev (one per version, no release in its name).
    fn packages(&self, release: &str) -> [String; 4] {
        let [b, i, m] = ["base", "binary", "modules"].map(|p| format!("linux-{p}-{release}"));
        [b, i, m, BPF_DEV.to_string()]
    }
}

/// The package with the kernel's `vmlinux.h`.
pub const BPF_DEV: &str = "linux-bpf-dev";

/// Where `linux-bpf-dev` puts the header.
const BPF_DEV_HEADER: &str = "usr/include/x86_64-linux-gnu/linux/bpf/vmlinux.h";

/// What to fetch: the release and its four packages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    pub release: String,
    /// linux-base, linux-binary, linux-modules, linux-bpf-dev, in that
    /// order.
    pub packages: Vec<Stanza>,
}

/// The newest release of `k` in an index, with its four packages of one
/// version (the highest, when the index has several).
pub fn choose(k: &Known, stanzas: &[Stanza]) -> Result<Choice, ChooseError> {
    let best = stanzas
        .iter()
        .filter_map(|s| {
            let release = s.package.strip_prefix("linux-binary-")?;
            Some((k.patch_of(release)?, release))
        })
        .max_by_key(|(p, _)| *p)
        .map(|(_, r)| r.to_string())
        .ok_or(ChooseError::NoRelease {
            name: k.name,
            series: k.series,
            debian: k.debian,
            flavour: k.flavour,
            suite: k.suite,
        })?;
    if !valid_release(&best) {
        return Err(ChooseError::OddRelease {
            name: k.name,
            release: best,
        });
    }
    let names = k.packages(&best);
    let binary: Vec<&Stanza> = stanzas.iter().filter(|s| s.package == names[1]).collect();
    let version = binary
        .iter()
        .map(|s| s.version.clone())
        .reduce(|a, b| if version_gt(&b, &a) { b } else { a })
        .expect("the binary package is in the index");
    let mut packages = Vec::new();
    for n in &names {
        let s = stanzas
            .iter()
            .find(|s| &s.package == n && s.version == version)
            .ok_or_else(|| ChooseError::Incomplete {
                name: k.name,
                package: n.clone(),
                version: version.clone(),
                suite: k.suite,
                release: best.clone(),
            })?;
        let hex = s.sha256.len() == 64 && s.sha256.bytes().all(|b| b.is_ascii_hexdigit());
        if !hex {
            return Err(ChooseError::NoSha256 {
                name: k.name,
                package: n.clone(),
            });
        }
        packages.push(s.clone());
    }
    Ok(Choice {
        release: best,
        packages,
    })
}

/// Debian version order, by dpkg itself (`a` newer than `b`).
fn version_gt(a: &str, b: &str) -> bool {
    Command::new("dpkg")
        .args(["--compare-versions", a, "gt", b])
        .status()
        .is_ok_and(|s| s.success())
}

/// The SHA256 of a file, in hex.
pub fn sha256_file(path: &Path) -> Result<String, DebError> {
    use sha2::{Digest, Sha256};
    let io = |source| DebError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut f = fs::File::open(path).map_err(io)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).map_err(io)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// Check a downloaded `.deb` against its stanza of `index` (the Packages
/// file): size, then SHA256. The error is one line naming both files.
pub fn check_deb(deb: &Path, s: &Stanza, index: &Path) -> Result<(), DebError> {
    let len = fs::metadata(deb)
        .map_err(|source| DebError::Io {
            path: deb.to_path_buf(),
            source,
        })?
        .len();
    let listed = || {
        Box::new(Listed {
            deb: deb.to_path_buf(),
            index: index.to_path_buf(),
            package: s.package.clone(),
            version: s.version.clone(),
        })
    };
    if len != s.size {
        return Err(DebError::Size {
            l: listed(),
            len,
            expected: s.size,
        });
    }
    let got = sha256_file(deb)?;
    if !got.eq_ignore_ascii_case(&s.sha256) {
        return Err(DebError::Sha256 {
            l: listed(),
            got,
            expected: s.sha256.clone(),
        });
    }
    Ok(())
}

/// What numalab needs of a guest kernel's config: `=y`, or `=y` or `=m`.
const NEEDS: [(&str, bool); 9] = [
    ("CONFIG_SCHED_CLASS_EXT", false),
    ("CONFIG_DEBUG_INFO_BTF", false),
    ("CONFIG_BPF_JIT", false),
    ("CONFIG_NUMA_BALANCING", false),
    ("CONFIG_VIRTIO_PCI", true),
    ("CONFIG_NET_9P", true),
    ("CONFIG_NET_9P_VIRTIO", true),
    ("CONFIG_9P_FS", true),
    ("CONFIG_OVERLAY_FS", true),
];

/// What a kernel config lacks of [`NEEDS`], as `CONFIG_X=y` or
/// `CONFIG_X (y or m)`; empty when it has everything.
pub fn config_missing(config: &str) -> Vec<String> {
    let value = |name: &str| {
        config.lines().find_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k.trim() == name).then(|| v.trim().to_string())
        })
    };
    NEEDS
        .iter()
        .filter_map(|&(name, module_ok)| {
            let v = value(name);
            let ok = v.as_deref() == Some("y") || (module_ok && v.as_deref() == Some("m"));
            (!ok).then(|| {
                if module_ok {
                    format!("{name} (y or m)")
                } else {
                    format!("{name}=y")
                }
            })
        })
        .collect()
}

/// A complete cache entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: &'static str,
    /// `7.3.4+deb13-amd64`.
    pub release: String,
    pub dir: PathBuf,
    pub vmlinuz: PathBuf,
    /// The module tree (`.../usr/lib/modules/RELEASE`, with modules.dep).
    pub modules: PathBuf,
    /// The kernel's `vmlinux.h` (from linux-bpf-dev), `vmlinux-RELEASE.h`.
    pub vmlinux_h: PathBuf,
    /// `linux-binary-7.3.4+deb13-amd64 7.3.4-1~bpo13+1` and the others.
    pub packages: Vec<String>,
    /// What its config lacks of what numalab needs (empty: nothing).
    pub missing: Vec<String>,
}

impl Entry {
    /// One line: `debian-7.3 is 7.3.4+deb13-amd64 (linux-binary-...
    /// 7.3.4-1~bpo13+1, trixie-backports): sched_ext, BTF, ...`.
    pub fn describe(&self, k: &Known) -> String {
        let version = self
            .packages
            .first()
            .and_then(|p| p.split_once(' '))
            .map(|(_, v)| v)
            .unwrap_or("?");
        let config = if self.missing.is_empty() {
            "its config has sched_ext, BTF, the BPF JIT, NUMA balancing, 9p and overlay".to_string()
        } else {
            format!("its config lacks {}", self.missing.join(", "))
        };
        format!(
            "{} is Debian's {} ({version} from {}, cached in {}); {config}",
            self.name,
            self.release,
            k.suite,
            self.dir.display()
        )
    }
}

/// `$XDG_CACHE_HOME/numalab/kernels` (or `~/.cache/numalab/kernels`).
pub fn cache_root() -> Option<PathBuf> {
    crate::kernel::cache_base().map(|b| b.join("kernels"))
}

/// The marker's contents.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Marker {
    name: String,
    suite: String,
    release: String,
    /// `package version sha256`, one per package.
    packages: Vec<String>,
    fetched_at: String,
}

/// The complete entries of `k` in `root`, newest first.
pub fn cached(k: &'static Known, root: &Path) -> Vec<Entry> {
    let mut found: Vec<(u32, Entry)> = Vec::new();
    let Ok(dir) = fs::read_dir(root) else {
        return Vec::new();
    };
    for e in dir.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        let Some(patch) = k.patch_of(&name).filter(|_| valid_release(&name)) else {
            continue;
        };
        if let Some(entry) = open_entry(k, &e.path(), &name) {
            found.push((patch, entry));
        }
    }
    found.sort_by_key(|(p, _)| std::cmp::Reverse(*p));
    found.into_iter().map(|(_, e)| e).collect()
}

/// An entry if it is complete: a real directory, its marker a regular
/// file naming this release, its kernel and modules.dep there.
fn open_entry(k: &'static Known, dir: &Path, release: &str) -> Option<Entry> {
    let meta = fs::symlink_metadata(dir).ok()?;
    if !meta.is_dir() {
        return None;
    }
    let marker_path = dir.join(MARKER);
    if !fs::symlink_metadata(&marker_path).ok()?.is_file() {
        return None;
    }
    let marker: Marker = serde_json::from_slice(&fs::read(&marker_path).ok()?).ok()?;
    if marker.release != release || marker.name != k.name {
        return None;
    }
    let modules = dir.join("usr/lib/modules").join(release);
    let vmlinuz = dir.join(format!("vmlinuz-{release}"));
    let vmlinux_h = dir.join(format!("vmlinux-{release}.h"));
    if !vmlinuz.is_file() || !modules.join("modules.dep").is_file() || !vmlinux_h.is_file() {
        return None;
    }
    let config = fs::read_to_string(modules.join("config")).unwrap_or_default();
    Some(Entry {
        name: k.name,
        release: release.to_string(),
        dir: dir.to_path_buf(),
        vmlinuz,
        modules,
        vmlinux_h,
        packages: marker
            .packages
            .iter()
            .map(|p| p.rsplit_once(' ').map(|(a, _)| a).unwrap_or(p).to_string())
            .collect(),
        missing: config_missing(&config),
    })
}

/// Make `root` (mode 0700) and check it is ours alone: a real directory
/// (not a link), owned by this user, writable by nobody else.
pub fn check_root(root: &Path) -> Result<(), RootError> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| RootError::Io { path, source }
    };
    if let Some(parent) = root.parent() {
        fs::create_dir_all(parent).map_err(io(parent))?;
    }
    match fs::DirBuilder::new().mode(0o700).create(root) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(io(root)(e)),
    }
    let m = fs::symlink_metadata(root).map_err(io(root))?;
    let me = numalab_linux::process::euid();
    if !m.is_dir() || m.uid() != me || m.mode() & 0o022 != 0 {
        return Err(RootError::NotOurs(root.to_path_buf()));
    }
    Ok(())
}

/// The newest cached entry of `k`, fetched first if there is none.
/// `say` prints a progress line; `apt_output` lets apt's own lines
/// through (to standard error).
pub fn resolve(
    k: &'static Known,
    root: &Path,
    say: &dyn Fn(&str),
    apt_output: bool,
) -> Result<Entry, FetchError> {
    check_root(root)?;
    if let Some(e) = cached(k, root).into_iter().next() {
        return Ok(e);
    }
    let lock_path = root.join(".lock");
    let _lock = match lock::acquire(&lock_path, lock::Mode::Exclusive, false) {
        Ok(l) => l,
        Err(lock::LockError::Held { .. }) => {
            say(&format!(
                "waiting for another numalab that is fetching into {}",
                root.display()
            ));
            lock::acquire(&lock_path, lock::Mode::Exclusive, true)?
        }
        Err(e) => return Err(e.into()),
    };
    if let Some(e) = cached(k, root).into_iter().next() {
        return Ok(e);
    }
    set_aside_stale(k, root, say);
    clean_partial(root);
    fetch(k, root, say, apt_output)
}

/// [`resolve`] in numalab's cache, its lines on standard error as `numalab
/// vm:` status lines, apt's own lines too unless `quiet`; errors name
/// `--kernel NAME`. The fetch says what it does even with `--quiet`: it
/// is a one-off download of about 120 MiB.
pub fn resolve_for_vm(k: &'static Known, quiet: bool) -> Result<Entry, FetchError> {
    let root = cache_root().ok_or(FetchError::NoCache(k.name))?;
    let say = |s: &str| numalab_linux::statusln!("numalab vm: {s}");
    resolve(k, &root, &say, !quiet).map_err(|e| FetchError::Named {
        name: k.name,
        source: Box::new(e),
    })
}

/// Entries an older numalab cached without the kernel's `vmlinux.h`
/// (complete then, not now): renamed to `.part-*` names, so that the
/// fetch that follows removes them and caches the release whole.
fn set_aside_stale(k: &'static Known, root: &Path, say: &dyn Fn(&str)) {
    let Ok(dir) = fs::read_dir(root) else { return };
    for e in dir.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if k.patch_of(&name).is_none() || !valid_release(&name) {
            continue;
        }
        let stale = fs::symlink_metadata(e.path()).is_ok_and(|m| m.is_dir())
            && fs::symlink_metadata(e.path().join(MARKER)).is_ok_and(|m| m.is_file())
            && !e.path().join(format!("vmlinux-{name}.h")).exists();
        if stale && fs::rename(e.path(), root.join(format!(".part-stale-{name}"))).is_ok() {
            say(&format!(
                "{name} was cached by an older numalab without the kernel's vmlinux.h: fetching it again"
            ));
        }
    }
}

/// Remove `.part-*` directories: fetches cut short.
fn clean_partial(root: &Path) {
    let Ok(dir) = fs::read_dir(root) else { return };
    for e in dir.flatten() {
        let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
        if is_dir && e.file_name().to_string_lossy().starts_with(".part-") {
            let _ = fs::remove_dir_all(e.path());
        }
    }
}

/// apt's private configuration under `apt`: every directory it reads or
/// writes, and no way around verification.
pub fn apt_options(apt: &Path) -> Vec<String> {
    let p = |rel: &str| apt.join(rel).to_string_lossy().to_string();
    let mut o = vec![
        format!("Dir::Etc::SourceList={}", p("sources.list")),
        format!("Dir::Etc::SourceParts={}", p("sources.list.d")),
        format!("Dir::Etc::Preferences={}", p("preferences")),
        format!("Dir::Etc::PreferencesParts={}", p("preferences.d")),
        format!("Dir::State={}", p("state")),
        format!("Dir::State::Lists={}", p("lists")),
        format!("Dir::State::status={}", p("status")),
        format!("Dir::Cache={}", p("cache")),
        format!("Dir::Cache::Archives={}", p("archives")),
        "Dir::Cache::pkgcache=".into(),
        "Dir::Cache::srcpkgcache=".into(),
        "APT::Architecture=amd64".into(),
        "APT::Architectures=amd64".into(),
        "Acquire::Languages=none".into(),
        // The Packages file stays plain text, for numalab to read.
        "Acquire::GzipIndexes=false".into(),
        "Acquire::AllowInsecureRepositories=false".into(),
        "Acquire::AllowWeakRepositories=false".into(),
        "Acquire::AllowDowngradeToInsecureRepositories=false".into(),
        "APT::Get::AllowUnauthenticated=false".into(),
        "Acquire::Check-Valid-Until=true".into(),
        // The cache is root's; apt's _apt user cannot write there.
        "APT::Sandbox::User=root".into(),
    ];
    for t in [
        "Translations",
        "Contents-deb",
        "DEP-11",
        "DEP-11-icons",
        "DEP-11-icons-small",
    ] {
        o.push(format!(
            "Acquire::IndexTargets::deb::{t}::DefaultEnabled=false"
        ));
    }
    o.into_iter().flat_map(|v| ["-o".to_string(), v]).collect()
}

fn mkdirs(apt: &Path) -> Result<(), FetchError> {
    for d in [
        "lists/partial",
        "archives/partial",
        "sources.list.d",
        "preferences.d",
        "state",
        "cache",
    ] {
        let p = apt.join(d);
        fs::create_dir_all(&p).map_err(io_at(&p))?;
    }
    Ok(())
}

/// Run a command, its output to standard error (or nowhere), one line
/// on failure.
fn run(cmd: &mut Command, what: &str, show: bool) -> Result<(), FetchError> {
    let out = cmd
        .stdin(Stdio::null())
        .stdout(if show {
            Stdio::from(
                std::io::stderr()
                    .as_fd()
                    .try_clone_to_owned()
                    .map_err(FetchError::Stderr)?,
            )
        } else {
            Stdio::null()
        })
        .stderr(Stdio::piped())
        .output()
        .map_err(|source| FetchError::Start {
            what: what.to_string(),
            source,
        })?;
    let err = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        let last: Vec<&str> = err
            .lines()
            .filter(|l| !l.trim().is_empty())
            .rev()
            .take(2)
            .collect();
        return Err(FetchError::Failed {
            what: what.to_string(),
            status: out.status,
            last: last.into_iter().rev().collect::<Vec<_>>().join(" / "),
        });
    }
    if show && !err.trim().is_empty() {
        numalab_linux::errln!("{}", err.trim_end());
    }
    Ok(())
}

fn mib(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64)
}

/// Fetch, verify, unpack, depmod and check `k` into `root`.
fn fetch(
    k: &'static Known,
    root: &Path,
    say: &dyn Fn(&str),
    apt_output: bool,
) -> Result<Entry, FetchError> {
    for tool in ["apt-get", "dpkg-deb", "depmod"] {
        if !std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
            .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/sbin")])
            .any(|d| d.join(tool).is_file())
        {
            return Err(FetchError::NoTool { name: k.name, tool });
        }
    }
    if !Path::new(KEYRING).is_file() {
        return Err(FetchError::NoKeyring(k.name));
    }
    let apt = root.join("apt");
    let opts = apt_options(&apt);
    let index = update_index(k, &apt, &opts, say, apt_output)?;
    let text = fs::read_to_string(&index).map_err(io_at(&index))?;
    let choice = choose(k, &parse_packages(&text))?;
    let part = tempfile::Builder::new()
        .prefix(".part-")
        .tempdir_in(root)
        .map_err(io_at(root))?;
    let tree = download_and_unpack(k, &choice, &index, &opts, part.path(), say, apt_output)?;
    let dest = finish(k, &choice, &tree, root)?;
    drop(part);
    open_entry(k, &dest, &choice.release).ok_or(FetchError::Incomplete(dest))
}

/// `apt-get update` of `k`'s suite with numalab's own sources; the
/// `Packages` file apt verified (refused unless its InRelease is there).
fn update_index(
    k: &Known,
    apt: &Path,
    opts: &[String],
    say: &dyn Fn(&str),
    apt_output: bool,
) -> Result<PathBuf, FetchError> {
    mkdirs(apt)?;
    let sources = format!("deb [signed-by={KEYRING}] {MIRROR} {} main\n", k.suite);
    numalab_record::store::write_file_atomic(&apt.join("sources.list"), sources.as_bytes())
        .map_err(io_at(&apt.join("sources.list")))?;
    let status = apt.join("status");
    if !status.exists() {
        numalab_record::create_new(&status).map_err(io_at(&status))?;
    }
    say(&format!(
        "fetching {}: the {} index of {MIRROR} (apt, verified with {KEYRING})",
        k.name, k.suite
    ));
    let mut update = Command::new("apt-get");
    update.args(opts).args(["-q", "--error-on=any", "update"]);
    run(&mut update, "apt-get update", apt_output)?;

    // What apt verified: the InRelease of the suite and its Packages.
    let lists = apt.join("lists");
    let find = |suffix: &str| -> Option<PathBuf> {
        fs::read_dir(&lists).ok()?.flatten().find_map(|e| {
            let n = e.file_name().to_string_lossy().to_string();
            let regular = e.file_type().is_ok_and(|t| t.is_file());
            (regular && n.ends_with(suffix)).then(|| e.path())
        })
    };
    let suite_tag = format!("_dists_{}", k.suite);
    find(&format!("{suite_tag}_InRelease")).ok_or_else(|| FetchError::NoInRelease {
        name: k.name,
        suite: k.suite,
        lists: lists.clone(),
    })?;
    find(&format!("{suite_tag}_main_binary-amd64_Packages")).ok_or_else(|| FetchError::NoPackages {
        name: k.name,
        suite: k.suite,
        lists: lists.clone(),
    })
}

/// Download the four packages of `choice` into `part/debs`, check each
/// against `index`, unpack them into `part/tree` (returned) and remove
/// the `.deb` files.
fn download_and_unpack(
    k: &Known,
    choice: &Choice,
    index: &Path,
    opts: &[String],
    part: &Path,
    say: &dyn Fn(&str),
    apt_output: bool,
) -> Result<PathBuf, FetchError> {
    let total: u64 = choice.packages.iter().map(|s| s.size).sum();
    say(&format!(
        "{} is {} ({} from {}): downloading {}, {} in all",
        k.name,
        choice.release,
        choice.packages[1].version,
        k.suite,
        choice
            .packages
            .iter()
            .map(|s| format!("{} ({})", s.package, mib(s.size)))
            .collect::<Vec<_>>()
            .join(", "),
        mib(total)
    ));

    let debs = part.join("debs");
    fs::create_dir(&debs).map_err(io_at(&debs))?;
    let started = std::time::Instant::now();
    let mut download = Command::new("apt-get");
    download
        .args(opts)
        .args(["-q", "download"])
        .args(
            choice
                .packages
                .iter()
                .map(|s| format!("{}={}", s.package, s.version)),
        )
        .current_dir(&debs);
    run(&mut download, "apt-get download", apt_output)?;
    say(&format!(
        "downloaded {} in {:.1} s; checking each against {}",
        mib(total),
        started.elapsed().as_secs_f64(),
        index.display()
    ));

    let tree = part.join("tree");
    fs::create_dir(&tree).map_err(io_at(&tree))?;
    for s in &choice.packages {
        let prefix = format!("{}_", s.package);
        let mut files: Vec<PathBuf> = fs::read_dir(&debs)
            .map_err(io_at(&debs))?
            .flatten()
            .filter(|e| {
                let n = e.file_name().to_string_lossy().to_string();
                n.starts_with(&prefix) && n.ends_with(".deb")
            })
            .map(|e| e.path())
            .collect();
        let deb = match files.len() {
            1 => files.remove(0),
            n => {
                return Err(FetchError::DebCount {
                    name: k.name,
                    count: n,
                    package: s.package.clone(),
                    debs,
                })
            }
        };
        if !fs::symlink_metadata(&deb).is_ok_and(|m| m.is_file()) {
            return Err(FetchError::NotRegular(deb));
        }
        check_deb(&deb, s, index)?;
        let mut x = Command::new("dpkg-deb");
        x.arg("-x").arg(&deb).arg(&tree);
        run(&mut x, &format!("dpkg-deb -x {}", deb.display()), false)?;
        let _ = fs::remove_file(&deb);
    }
    let _ = fs::remove_dir(&debs);
    Ok(tree)
}

/// Check the unpacked `tree`'s config, make its modules.dep, put the
/// kernel beside it, write the marker last and rename the tree to
/// `root/RELEASE` (returned).
fn finish(k: &Known, choice: &Choice, tree: &Path, root: &Path) -> Result<PathBuf, FetchError> {
    let release = &choice.release;
    let modules = tree.join("usr/lib/modules").join(release);
    let config_path = modules.join("config");
    let config = fs::read_to_string(&config_path).map_err(|source| FetchError::NotInPackage {
        path: config_path.clone(),
        source,
        package: "linux-base",
    })?;
    let missing = config_missing(&config);
    if !missing.is_empty() {
        return Err(FetchError::ConfigLacks {
            name: k.name,
            release: release.clone(),
            missing,
        });
    }
    let mut depmod = Command::new("depmod");
    depmod.arg("-b").arg(tree.join("usr")).arg(release);
    run(&mut depmod, "depmod", false)?;
    if !modules.join("modules.dep").is_file() {
        return Err(FetchError::NoModulesDep(modules.join("modules.dep")));
    }
    // The kernel beside the tree, under a name of its own (the PVH cache
    // keys images by file name).
    let vmlinuz = tree.join(format!("vmlinuz-{release}"));
    fs::rename(modules.join("vmlinuz"), &vmlinuz).map_err(|source| FetchError::NotInPackage {
        path: modules.join("vmlinuz"),
        source,
        package: "linux-binary",
    })?;
    crate::qemu::check_kernel(&vmlinuz)?;
    // The header beside it; linux-bpf-dev's include tree goes.
    let header = tree.join(format!("vmlinux-{release}.h"));
    fs::rename(tree.join(BPF_DEV_HEADER), &header).map_err(|source| FetchError::NotInPackage {
        path: tree.join(BPF_DEV_HEADER),
        source,
        package: BPF_DEV,
    })?;
    let _ = fs::remove_dir_all(tree.join("usr/include"));
    let _ = fs::remove_dir_all(tree.join("usr/share/doc").join(BPF_DEV));

    // The tree on disk before the marker that says it is complete (a
    // power cut after the rename must not leave a complete-looking entry
    // of empty files): one syncfs for the filesystem holding it.
    {
        let d = fs::File::open(tree).map_err(io_at(tree))?;
        numalab_linux::fd::syncfs(&d).map_err(|source| FetchError::Syncfs {
            path: tree.to_path_buf(),
            source,
        })?;
    }
    let marker = Marker {
        name: k.name.to_string(),
        suite: k.suite.to_string(),
        release: release.clone(),
        packages: choice
            .packages
            .iter()
            .map(|s| format!("{} {} {}", s.package, s.version, s.sha256))
            .collect(),
        fetched_at: chrono::Utc::now().to_rfc3339(),
    };
    {
        use std::io::Write;
        let p = tree.join(MARKER);
        let mut f = numalab_record::create_new(&p).map_err(io_at(&p))?;
        f.write_all(
            serde_json::to_string_pretty(&marker)
                .expect("a marker serialises")
                .as_bytes(),
        )
        .and_then(|_| f.sync_all())
        .map_err(io_at(&p))?;
    }
    let dest = root.join(release);
    if fs::symlink_metadata(&dest).is_ok() {
        return Err(FetchError::InTheWay(dest));
    }
    fs::rename(tree, &dest).map_err(io_at(&dest))?;
    let _ = fs::File::open(root).and_then(|d| d.sync_all());
    Ok(dest)
}

#[cfg(test)]
mod tests {
    use super::*;

    const INDEX: &str = "\
Package: linux-binary-7.3.4+deb13-amd64
Source: linux-signed-amd64 (7.3.4+1~bpo13+1)
Version: 7.3.4-1~bpo13+1
Depends: linux-base-7.3.4+deb13-amd64 (= 7.3.4-1~bpo13+1)
Description: Linux 7.3.4 for 64-bit PCs (kernel image)
 The Linux kernel 7.3.4 and modules for use on PCs with AMD64, Intel 64 or
 VIA Nano processors.
Filename: pool/main/l/linux-signed-amd64/linux-binary-7.3.4+deb13-amd64_7.3.4-1~bpo13+1_amd64.deb
Size: 14138336
SHA256: 7e3248d03a84dcdda88c567aa8c4038f2e7795d2dd167b112c56f8901b6f513f

Package: linux-binary-7.3.4+deb13-cloud-amd64
Version: 7.3.4-1~bpo13+1
Filename: pool/main/l/linux-signed-amd64/linux-binary-7.3.4+deb13-cloud-amd64_7.3.4-1~bpo13+1_amd64.deb
Size: 1
SHA256: 0000000000000000000000000000000000000000000000000000000000000000

Package: linux-binary-7.2.12+deb13-amd64
Version: 7.2.12-1~bpo13+1
Filename: pool/main/l/x.deb
Size: 2
SHA256: 1111111111111111111111111111111111111111111111111111111111111111

Package: linux-binary-7.3.10+deb13-rt-amd64
Version: 7.3.10-1~bpo13+1
Filename: pool/main/l/y.deb
Size: 3
SHA256: 2222222222222222222222222222222222222222222222222222222222222222

Package: linux-base-7.3.4+deb13-amd64
Source: linux
Version: 7.3.4-1~bpo13+1
Filename: pool/main/l/linux/linux-base-7.3.4+deb13-amd64_7.3.4-1~bpo13+1_amd64.deb
Size: 1077476
SHA256: 5663505495b5c90be94af42105c7b28629802516779102dac48d5a00cc00fccf

Package: linux-modules-7.3.4+deb13-amd64
Version: 7.3.4-1~bpo13+1
Filename: pool/main/l/linux/linux-modules-7.3.4+deb13-amd64_7.3.4-1~bpo13+1_amd64.deb
Size: 106862204
SHA256: b3ea01922c9f133767a83cf6891c19b3693858ded617bf22d1e34f95382c08ea

Package: linux-bpf-dev
Source: linux
Version: 7.3.4-1~bpo13+1
Filename: pool/main/l/linux/linux-bpf-dev_7.3.4-1~bpo13+1_amd64.deb
Size: 1488768
SHA256: 43a87aabd31d870a3f3d1bad409b0baeba199e126234cbffd603099bc6511e09

Package: linux-bpf-dev
Source: linux
Version: 7.2.12-1~bpo13+1
Filename: pool/main/l/linux/linux-bpf-dev_7.2.12-1~bpo13+1_amd64.deb
Size: 1488000
SHA256: 3333333333333333333333333333333333333333333333333333333333333333

Package: linux-doc
Version: 7.3.4-1~bpo13+1
";

    #[test]
    fn names_and_paths() {
        assert_eq!(
            classify(Path::new("debian-7.3")).unwrap(),
            KernelArg::Named(&KNOWN[0])
        );
        assert_eq!(
            classify(Path::new("./debian-7.3")).unwrap(),
            KernelArg::Path("./debian-7.3".into())
        );
        assert_eq!(
            classify(Path::new("/boot/vmlinuz")).unwrap(),
            KernelArg::Path("/boot/vmlinuz".into())
        );
        let e = classify(Path::new("debian-9.9")).unwrap_err().to_string();
        assert_eq!(
            e,
            "--kernel debian-9.9: no such file, and not a kernel name numalab knows (known: debian-7.3); or give the path of a bzImage"
        );
        let e = classify(Path::new("deb\nian")).unwrap_err().to_string();
        assert!(e.contains("control characters") && !e.contains('\n'), "{e}");
    }

    #[test]
    fn the_packages_index_gives_the_newest_release_and_its_four_packages() {
        let s = parse_packages(INDEX);
        // The stanza without Filename/Size/SHA256 is left out.
        assert_eq!(s.len(), 8);
        assert_eq!(s[0].size, 14138336);
        let c = choose(&KNOWN[0], &s).unwrap();
        assert_eq!(c.release, "7.3.4+deb13-amd64");
        let names: Vec<&str> = c.packages.iter().map(|p| p.package.as_str()).collect();
        assert_eq!(
            names,
            [
                "linux-base-7.3.4+deb13-amd64",
                "linux-binary-7.3.4+deb13-amd64",
                "linux-modules-7.3.4+deb13-amd64",
                "linux-bpf-dev",
            ]
        );
        assert!(c.packages.iter().all(|p| p.version == "7.3.4-1~bpo13+1"));
        assert_eq!(c.packages[3].size, 1488768);
        // linux-bpf-dev of another version only: refused, naming it.
        let other: Vec<Stanza> = s
            .iter()
            .filter(|p| !(p.package == BPF_DEV && p.version.starts_with("7.3.4")))
            .cloned()
            .collect();
        let e = choose(&KNOWN[0], &other).unwrap_err().to_string();
        assert!(e.contains("linux-bpf-dev 7.3.4-1~bpo13+1 is not in"), "{e}");
        // Without the modules: refused, naming it.
        let partial: Vec<Stanza> = s
            .iter()
            .filter(|p| !p.package.starts_with("linux-modules"))
            .cloned()
            .collect();
        let e = choose(&KNOWN[0], &partial).unwrap_err().to_string();
        assert!(e.contains("linux-modules-7.3.4+deb13-amd64"), "{e}");
        // No 7.3 at all.
        let e = choose(&KNOWN[0], &s[2..3]).unwrap_err().to_string();
        assert!(e.contains("no linux-binary-7.3.N+deb13-amd64"), "{e}");
    }

    #[test]
    fn releases() {
        let k = &KNOWN[0];
        assert_eq!(k.patch_of("7.3.4+deb13-amd64"), Some(4));
        assert_eq!(k.patch_of("7.3.12+deb13-amd64"), Some(12));
        assert_eq!(k.patch_of("7.3.4+deb13-cloud-amd64"), None);
        assert_eq!(k.patch_of("7.30.4+deb13-amd64"), None);
        assert_eq!(k.patch_of("7.3.+deb13-amd64"), None);
        assert!(valid_release("7.3.4+deb13-amd64"));
        assert!(!valid_release("../x"));
        assert!(!valid_release(".hidden"));
        assert!(!valid_release("a b"));
    }

    #[test]
    fn a_deb_is_checked_against_its_stanza() {
        let d = tempfile::tempdir().unwrap();
        let deb = d.path().join("linux-base_1_amd64.deb");
        fs::write(&deb, b"hello\n").unwrap();
        let index = d.path().join("Packages");
        let mut s = Stanza {
            package: "linux-base".into(),
            version: "1".into(),
            filename: "pool/x.deb".into(),
            size: 6,
            sha256: "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03".into(),
        };
        check_deb(&deb, &s, &index).unwrap();
        s.sha256 = "0".repeat(64);
        let e = check_deb(&deb, &s, &index).unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "{}: SHA256 5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03, but {} says {} for linux-base 1",
                deb.display(),
                index.display(),
                "0".repeat(64)
            )
        );
        s.size = 7;
        let e = check_deb(&deb, &s, &index).unwrap_err().to_string();
        assert!(e.contains("6 bytes, but") && e.contains("says 7"), "{e}");
    }

    #[test]
    fn the_config_check_names_what_is_missing() {
        let good = "CONFIG_SCHED_CLASS_EXT=y\nCONFIG_DEBUG_INFO_BTF=y\nCONFIG_BPF_JIT=y\n\
                    CONFIG_NUMA_BALANCING=y\nCONFIG_VIRTIO_PCI=y\nCONFIG_NET_9P=m\n\
                    CONFIG_NET_9P_VIRTIO=m\nCONFIG_9P_FS=m\nCONFIG_OVERLAY_FS=m\n";
        assert!(config_missing(good).is_empty());
        let bad = good
            .replace(
                "CONFIG_SCHED_CLASS_EXT=y",
                "# CONFIG_SCHED_CLASS_EXT is not set",
            )
            .replace("CONFIG_BPF_JIT=y", "CONFIG_BPF_JIT=m")
            .replace("CONFIG_9P_FS=m\n", "");
        assert_eq!(
            config_missing(&bad),
            [
                "CONFIG_SCHED_CLASS_EXT=y",
                "CONFIG_BPF_JIT=y",
                "CONFIG_9P_FS (y or m)"
            ]
        );
    }

    /// A fake complete entry in `root`.
    fn fake_entry(root: &Path, release: &str, marker: bool) -> PathBuf {
        let dir = root.join(release);
        let m = dir.join("usr/lib/modules").join(release);
        fs::create_dir_all(&m).unwrap();
        fs::write(m.join("modules.dep"), "").unwrap();
        fs::write(m.join("config"), "CONFIG_SCHED_CLASS_EXT=y\n").unwrap();
        fs::write(dir.join(format!("vmlinuz-{release}")), b"k").unwrap();
        fs::write(dir.join(format!("vmlinux-{release}.h")), b"h").unwrap();
        if marker {
            let mk = Marker {
                name: "debian-7.3".into(),
                suite: "trixie-backports".into(),
                release: release.into(),
                packages: vec![format!("linux-binary-{release} 7.3-1 abc")],
                fetched_at: "now".into(),
            };
            fs::write(dir.join(MARKER), serde_json::to_string(&mk).unwrap()).unwrap();
        }
        dir
    }

    #[test]
    fn only_complete_entries_count_newest_first() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("kernels");
        check_root(&root).unwrap();
        fake_entry(&root, "7.3.4+deb13-amd64", true);
        fake_entry(&root, "7.3.10+deb13-amd64", true);
        // Cut short before its marker; and a leftover partial fetch.
        fake_entry(&root, "7.3.11+deb13-amd64", false);
        fake_entry(&root.join(".part-x"), "7.3.12+deb13-amd64", true);
        let got: Vec<String> = cached(&KNOWN[0], &root)
            .into_iter()
            .map(|e| e.release)
            .collect();
        assert_eq!(got, ["7.3.10+deb13-amd64", "7.3.4+deb13-amd64"]);
        let e = &cached(&KNOWN[0], &root)[0];
        assert_eq!(e.packages, ["linux-binary-7.3.10+deb13-amd64 7.3-1"]);
        assert!(e
            .missing
            .iter()
            .any(|m| m.starts_with("CONFIG_DEBUG_INFO_BTF")));
        assert!(e
            .describe(&KNOWN[0])
            .contains("its config lacks CONFIG_DEBUG_INFO_BTF=y"));
        clean_partial(&root);
        assert!(!root.join(".part-x").exists());
        assert!(root.join("7.3.11+deb13-amd64").exists());
        // Cached by an older numalab, without vmlinux.h: not complete,
        // and set aside (then removed) before the next fetch.
        let old = fake_entry(&root, "7.3.3+deb13-amd64", true);
        fs::remove_file(old.join("vmlinux-7.3.3+deb13-amd64.h")).unwrap();
        assert_eq!(cached(&KNOWN[0], &root).len(), 2);
        let said = std::cell::RefCell::new(Vec::new());
        set_aside_stale(&KNOWN[0], &root, &|s: &str| {
            said.borrow_mut().push(s.to_string())
        });
        clean_partial(&root);
        assert!(!old.exists());
        assert_eq!(said.borrow().len(), 1, "{said:?}");
        assert!(root.join("7.3.10+deb13-amd64").exists());
        assert!(
            root.join("7.3.11+deb13-amd64").exists(),
            "not ours to judge: no marker"
        );
    }

    #[test]
    fn a_hostile_cache_root_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let real = d.path().join("real");
        fs::create_dir(&real).unwrap();
        let link = d.path().join("kernels");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let e = check_root(&link).unwrap_err().to_string();
        assert!(e.contains("refusing it"), "{e}");
        fs::set_permissions(&real, fs::Permissions::from_mode(0o777)).unwrap();
        assert!(check_root(&real).is_err());
        fs::set_permissions(&real, fs::Permissions::from_mode(0o700)).unwrap();
        check_root(&real).unwrap();
    }

    #[test]
    fn apt_cannot_skip_verification() {
        let o = apt_options(Path::new("/c/apt"));
        for want in [
            "Acquire::AllowInsecureRepositories=false",
            "APT::Get::AllowUnauthenticated=false",
            "Acquire::AllowDowngradeToInsecureRepositories=false",
            "Dir::Etc::SourceList=/c/apt/sources.list",
            "Dir::State::status=/c/apt/status",
        ] {
            assert!(o.iter().any(|x| x == want), "{want} not in {o:?}");
        }
        assert!(o.chunks(2).all(|p| p[0] == "-o"));
    }
}
