//! The kernel modules the host filesystem share needs in the guest, taken
//! from the guest kernel's own module tree.
//!
//! Debian's kernels build virtio-pci, 9p and overlayfs as modules, and a
//! module only loads into the kernel it was built for. So the modules come
//! from `/lib/modules/VER` of the guest kernel (VER read from the bzImage's
//! header, else from the `vmlinuz-VER` file name) or from `--modules DIR`
//! for a kernel extracted elsewhere. `modules.dep` gives each module's
//! dependencies, `modules.builtin` says what needs no module at all. The
//! files are copied into the initramfs decompressed (`.ko.xz`, `.ko.zst`,
//! `.ko.gz` through `xz`, `zstd`, `gzip`) and PID 1 loads them in order
//! with `finit_module(2)`.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What the share needs, by module name, in the order they are wanted;
/// dependencies come first when loaded.
pub const NEEDED: [&str; 4] = ["virtio_pci", "9pnet_virtio", "9p", "overlay"];

/// One module to load in the guest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Module {
    /// `9pnet_virtio`.
    pub name: String,
    /// The file in the module tree (maybe compressed).
    pub path: PathBuf,
}

/// The modules to load, dependencies first (built-in ones left out).
#[derive(Debug, Clone)]
pub struct Plan {
    pub dir: PathBuf,
    pub modules: Vec<Module>,
}

/// Canonical module name: `9pnet-virtio.ko.xz` -> `9pnet_virtio`.
fn module_name(file: &str) -> String {
    let base = file.rsplit('/').next().unwrap_or(file);
    let base = base.split(".ko").next().unwrap_or(base);
    base.replace('-', "_")
}

/// The release string of an x86 bzImage (`6.1.0-56-amd64`): the boot
/// protocol header's `kernel_version` pointer.
pub fn kernel_release(image: &Path) -> Option<String> {
    let mut head = vec![0u8; 0x4000];
    let mut f = fs::File::open(image).ok()?;
    let n = f.read(&mut head).ok()?;
    head.truncate(n);
    if head.get(0x202..0x206)? != b"HdrS" {
        return None;
    }
    let ptr = u16::from_le_bytes([head[0x20e], head[0x20f]]) as usize + 0x200;
    let s = head.get(ptr..)?;
    let end = s.iter().position(|&b| b == 0 || b == b' ')?;
    let v = std::str::from_utf8(&s[..end]).ok()?;
    (!v.is_empty()).then(|| v.to_string())
}

/// Why the modules the host filesystem share needs were not found.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// The kernel's release is neither in its header nor in its name.
    #[error("cannot tell the kernel release of {} to find its modules (pass --modules DIR, or --rootfs initramfs)", kernel.display())]
    NoRelease { kernel: PathBuf },
    /// `modules.dep` could not be read.
    #[error("{}: {source} (the guest kernel's modules are needed to share the host's filesystem: install them, pass --modules DIR, or use --rootfs initramfs)", path.display())]
    NoDepFile {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A module neither built in nor in `modules.dep`.
    #[error("module {name} not found in {} (neither built into the kernel nor in modules.dep; the host filesystem share needs it: pass --modules DIR, or use --rootfs initramfs)", dir.display())]
    NotFound { name: String, dir: PathBuf },
    /// In `modules.dep`, not on disk.
    #[error("module {name}: {} is listed in modules.dep but missing", path.display())]
    Missing { name: String, path: PathBuf },
}

/// Why a module file was not read.
#[derive(Debug, thiserror::Error)]
pub enum ReadModuleError {
    #[error("module {name}: {}: {source}", path.display())]
    Read {
        name: String,
        path: PathBuf,
        source: std::io::Error,
    },
    /// Its decompressor did not start.
    #[error("module {name}: decompressing {} with {tool}: {source}", path.display())]
    Spawn {
        name: String,
        path: PathBuf,
        tool: &'static str,
        source: std::io::Error,
    },
    /// Its decompressor failed (its standard error).
    #[error("module {name}: {tool} -dc {} failed: {stderr}", path.display())]
    Decompress {
        name: String,
        path: PathBuf,
        tool: &'static str,
        stderr: String,
    },
}

/// The module tree of `kernel`: `/lib/modules/<release>`.
pub fn default_dir(kernel: &Path) -> Result<PathBuf, PlanError> {
    let release = kernel_release(kernel)
        .or_else(|| {
            kernel
                .file_name()?
                .to_str()?
                .strip_prefix("vmlinuz-")
                .map(str::to_string)
        })
        .ok_or_else(|| PlanError::NoRelease {
            kernel: kernel.to_path_buf(),
        })?;
    Ok(Path::new("/lib/modules").join(release))
}

/// Resolve [`NEEDED`] in the module tree `dir`.
pub fn plan(dir: &Path) -> Result<Plan, PlanError> {
    let dep_file = dir.join("modules.dep");
    let deps_text = fs::read_to_string(&dep_file).map_err(|source| PlanError::NoDepFile {
        path: dep_file.clone(),
        source,
    })?;
    let builtin: BTreeSet<String> = fs::read_to_string(dir.join("modules.builtin"))
        .unwrap_or_default()
        .lines()
        .map(module_name)
        .collect();
    // name -> (path, its dependencies' names)
    let mut deps: BTreeMap<String, (String, Vec<String>)> = BTreeMap::new();
    for line in deps_text.lines() {
        let Some((m, rest)) = line.split_once(':') else {
            continue;
        };
        let d = rest.split_whitespace().map(module_name).collect();
        deps.insert(module_name(m), (m.trim().to_string(), d));
    }
    let mut order: Vec<Module> = Vec::new();
    let mut seen = BTreeSet::new();
    fn visit(
        name: &str,
        dir: &Path,
        deps: &BTreeMap<String, (String, Vec<String>)>,
        builtin: &BTreeSet<String>,
        seen: &mut BTreeSet<String>,
        order: &mut Vec<Module>,
    ) -> Result<(), PlanError> {
        if !seen.insert(name.to_string()) || builtin.contains(name) {
            return Ok(());
        }
        let Some((path, ds)) = deps.get(name) else {
            return Err(PlanError::NotFound {
                name: name.to_string(),
                dir: dir.to_path_buf(),
            });
        };
        for d in ds {
            visit(d, dir, deps, builtin, seen, order)?;
        }
        let p = Path::new(path);
        let full = if p.is_absolute() {
            p.to_path_buf()
        } else {
            dir.join(p)
        };
        if !full.is_file() {
            return Err(PlanError::Missing {
                name: name.to_string(),
                path: full,
            });
        }
        order.push(Module {
            name: name.to_string(),
            path: full,
        });
        Ok(())
    }
    for n in NEEDED {
        visit(n, dir, &deps, &builtin, &mut seen, &mut order)?;
    }
    Ok(Plan {
        dir: dir.to_path_buf(),
        modules: order,
    })
}

/// A module file's contents, decompressed.
pub fn read_module(m: &Module) -> Result<Vec<u8>, ReadModuleError> {
    let p = m.path.to_string_lossy();
    let tool = if p.ends_with(".ko.xz") {
        Some("xz")
    } else if p.ends_with(".ko.zst") {
        Some("zstd")
    } else if p.ends_with(".ko.gz") {
        Some("gzip")
    } else {
        None
    };
    let Some(tool) = tool else {
        return fs::read(&m.path).map_err(|source| ReadModuleError::Read {
            name: m.name.clone(),
            path: m.path.clone(),
            source,
        });
    };
    let out = Command::new(tool)
        .args(["-dc"])
        .arg(&m.path)
        .output()
        .map_err(|source| ReadModuleError::Spawn {
            name: m.name.clone(),
            path: m.path.clone(),
            tool,
            source,
        })?;
    if !out.status.success() {
        return Err(ReadModuleError::Decompress {
            name: m.name.clone(),
            path: m.path.clone(),
            tool,
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(out.stdout)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(dep: &str, builtin: &str) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        fs::write(d.path().join("modules.dep"), dep).unwrap();
        fs::write(d.path().join("modules.builtin"), builtin).unwrap();
        for line in dep.lines() {
            let f = d.path().join(line.split(':').next().unwrap());
            fs::create_dir_all(f.parent().unwrap()).unwrap();
            fs::write(f, b"ko").unwrap();
        }
        d
    }

    #[test]
    fn dependencies_first_builtins_skipped() {
        let d = tree(
            "kernel/fs/netfs/netfs.ko:\n\
             kernel/fs/fscache/fscache.ko: kernel/fs/netfs/netfs.ko\n\
             kernel/fs/9p/9p.ko: kernel/net/9p/9pnet.ko kernel/fs/fscache/fscache.ko kernel/fs/netfs/netfs.ko\n\
             kernel/net/9p/9pnet.ko:\n\
             kernel/net/9p/9pnet_virtio.ko: kernel/net/9p/9pnet.ko\n\
             kernel/fs/overlayfs/overlay.ko.xz:\n",
            "kernel/drivers/virtio/virtio_pci.ko\n",
        );
        let p = plan(d.path()).unwrap();
        let names: Vec<&str> = p.modules.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(
            names,
            ["9pnet", "9pnet_virtio", "netfs", "fscache", "9p", "overlay"]
        );
    }

    #[test]
    fn a_missing_module_is_named() {
        let d = tree("kernel/net/9p/9pnet.ko:\n", "");
        let e = plan(d.path()).unwrap_err().to_string();
        assert!(e.starts_with("module virtio_pci not found in"), "{e}");
        assert!(!e.contains('\n'));
        let e = plan(&d.path().join("nope")).unwrap_err().to_string();
        assert!(e.contains("modules.dep"), "{e}");
    }

    #[test]
    fn release_from_the_image() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("bzImage");
        let mut img = vec![0u8; 0x1000];
        img[0x202..0x206].copy_from_slice(b"HdrS");
        img[0x20e..0x210].copy_from_slice(&0x300u16.to_le_bytes());
        img[0x500..0x500 + 16].copy_from_slice(b"6.1.0-9-amd64 (x");
        fs::write(&p, &img).unwrap();
        assert_eq!(kernel_release(&p).as_deref(), Some("6.1.0-9-amd64"));
        assert_eq!(
            default_dir(&p).unwrap(),
            Path::new("/lib/modules/6.1.0-9-amd64")
        );
        let q = d.path().join("vmlinuz-7.0-x");
        fs::write(&q, b"junk").unwrap();
        assert_eq!(default_dir(&q).unwrap(), Path::new("/lib/modules/7.0-x"));
    }
}
