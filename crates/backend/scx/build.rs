//! With feature `bpf`: compile each `bpf/NAME.bpf.c` with clang against
//! the kernel's vmlinux.h and generate its Rust skeleton (libbpf-cargo,
//! no bpftool). Without it: nothing, so the default build needs only a
//! Rust toolchain.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    #[cfg(feature = "bpf")]
    bpf::build();
}

#[cfg(feature = "bpf")]
mod bpf {
    use std::path::{Path, PathBuf};
    use std::process::Command;

    /// The schedulers, each `bpf/NAME.bpf.c`.
    const SCHEDULERS: [&str; 3] = ["fifo", "node_affine", "nest"];

    fn fail(msg: &str) -> ! {
        // One line cargo shows as the build script's error.
        eprintln!("numalab-scx: {msg}");
        panic!("numalab-scx: {msg}");
    }

    /// `$NUMALAB_CLANG`, else clang-19, else a clang of version 16 or
    /// later.
    fn clang() -> String {
        if let Ok(c) = std::env::var("NUMALAB_CLANG") {
            return c;
        }
        for c in ["clang-19", "clang"] {
            let Ok(out) = Command::new(c).arg("--version").output() else {
                continue;
            };
            let text = String::from_utf8_lossy(&out.stdout);
            let major: Option<u32> = text
                .split("version ")
                .nth(1)
                .and_then(|v| v.split('.').next())
                .and_then(|v| v.parse().ok());
            if out.status.success() && major.is_some_and(|m| m >= 16) {
                return c.to_string();
            }
        }
        fail("building the sched_ext schedulers needs clang 16 or later: apt-get install clang-19 (or set NUMALAB_CLANG)")
    }

    /// `$NUMALAB_VMLINUX_H`, else the newest kernel numalab cached
    /// (`numalab vm --kernel debian-7.3 --fetch-only` puts its header
    /// there), else a system linux-bpf-dev.
    fn vmlinux_h() -> PathBuf {
        if let Some(p) = std::env::var_os("NUMALAB_VMLINUX_H") {
            return PathBuf::from(p);
        }
        let cache = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")));
        let mut found: Vec<PathBuf> = cache
            .map(|c| c.join("numalab/kernels"))
            .and_then(|k| std::fs::read_dir(k).ok())
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().to_string();
                let h = e.path().join(format!("vmlinux-{name}.h"));
                (!name.starts_with('.') && h.is_file()).then_some(h)
            })
            .collect();
        // Newest release last (7.3.10 after 7.3.9).
        found.sort_by_key(|p| {
            let n = p.to_string_lossy().to_string();
            n.split(|c: char| !c.is_ascii_digit())
                .filter_map(|d| d.parse::<u64>().ok())
                .collect::<Vec<_>>()
        });
        if let Some(h) = found.pop() {
            return h;
        }
        let system = PathBuf::from("/usr/include/x86_64-linux-gnu/linux/bpf/vmlinux.h");
        if system.is_file() {
            return system;
        }
        fail("no vmlinux.h for the sched_ext schedulers: run `numalab vm --kernel debian-7.3 --fetch-only` once (it caches Debian's linux-bpf-dev with the kernel), or set NUMALAB_VMLINUX_H")
    }

    pub fn build() {
        println!("cargo:rerun-if-env-changed=NUMALAB_CLANG");
        println!("cargo:rerun-if-env-changed=NUMALAB_VMLINUX_H");
        println!("cargo:rerun-if-changed=bpf");
        let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
        let header = vmlinux_h();
        println!("cargo:rerun-if-changed={}", header.display());
        let inc = out.join("vmlinux");
        std::fs::create_dir_all(&inc).expect("OUT_DIR is writable");
        if let Err(e) = std::fs::copy(&header, inc.join("vmlinux.h")) {
            fail(&format!("{}: {e}", header.display()));
        }
        println!("cargo:rustc-env=NUMALAB_SCX_VMLINUX_H={}", header.display());
        let clang = clang();
        let manifest =
            PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
        let bpf_dir = manifest.join("bpf");
        for name in SCHEDULERS {
            let src = bpf_dir.join(format!("{name}.bpf.c"));
            let r = libbpf_cargo::SkeletonBuilder::new()
                .source(&src)
                .clang(&clang)
                .clang_args([
                    "-mcpu=v3".into(),
                    // 7.3's vmlinux.h has anonymous struct members of
                    // named types (Microsoft's extension).
                    "-fms-extensions".into(),
                    "-Wno-microsoft-anon-tag".into(),
                    "-Wall".into(),
                    "-Werror".into(),
                    format!("-I{}", bpf_dir.display()),
                    format!("-I{}", inc.display()),
                ])
                .build_and_generate(out.join(format!("{name}.skel.rs")));
            if let Err(e) = r {
                fail(&format!("{}: {e:#}", src.display()));
            }
        }
    }
}
