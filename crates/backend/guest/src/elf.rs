//! What a dynamically linked executable needs at run time: its
//! interpreter (`PT_INTERP`, the dynamic loader) and its `DT_NEEDED`
//! libraries, with `DT_RUNPATH`/`DT_RPATH`, resolved the way the loader
//! would on this host; and whether a kernel image has the PVH entry note.
//!
//! The ELF itself is read by goblin (a well-kept parser: program headers,
//! the dynamic section through the load segments' address mapping, notes);
//! what is ours is the loader's search order. Why not `ldd`? `ldd` runs
//! the binary's loader on the binary, its output format is glibc's, not a
//! contract, and a missing `ldd` (musl hosts, minimal containers) would
//! break the testbed for no reason. The search order mirrors ld.so's:
//! `LD_LIBRARY_PATH`, then RUNPATH (or RPATH when there is no RUNPATH),
//! then the multiarch and plain system directories. `/etc/ld.so.cache` is
//! not read; a library found only through it is reported as missing,
//! naming the library.

use goblin::elf::Elf;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// Dynamic-linking facts of one ELF file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DynInfo {
    /// `PT_INTERP`, e.g. `/lib64/ld-linux-x86-64.so.2`.
    pub interp: Option<String>,
    /// `DT_NEEDED` names, in order.
    pub needed: Vec<String>,
    pub runpath: Vec<String>,
    pub rpath: Vec<String>,
}

/// Why bytes are not an ELF file numalab reads.
#[derive(Debug, thiserror::Error)]
pub enum ElfError {
    #[error("not an ELF file")]
    NotElf,
    #[error("not a 64-bit little-endian ELF file")]
    Not64Le,
    /// goblin refused it.
    #[error("not a valid ELF file: {0}")]
    Invalid(goblin::error::Error),
    /// A note header goblin could not read.
    #[error("a note: {0}")]
    Note(goblin::error::Error),
}

/// Why the files an executable needs were not all found.
#[derive(Debug, thiserror::Error)]
pub enum ClosureError {
    /// The executable or a library could not be read.
    #[error("{}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The executable or a library is not an ELF file numalab reads.
    #[error("{}: {source}", path.display())]
    Elf { path: PathBuf, source: ElfError },
    /// A library in none of the directories searched.
    #[error("{} needs {name}, which is in none of {}", file.display(), dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", "))]
    NotFound {
        file: PathBuf,
        name: String,
        dirs: Vec<PathBuf>,
    },
}

/// A 64-bit little-endian ELF file (x86_64 and aarch64 hosts).
fn elf64(bytes: &[u8]) -> Result<Elf<'_>, ElfError> {
    if bytes.len() < 64 || &bytes[..4] != b"\x7fELF" {
        return Err(ElfError::NotElf);
    }
    if bytes[4] != 2 || bytes[5] != 1 {
        return Err(ElfError::Not64Le);
    }
    Elf::parse(bytes).map_err(ElfError::Invalid)
}

/// The interpreter and dynamic entries of an ELF file.
pub fn parse(bytes: &[u8]) -> Result<DynInfo, ElfError> {
    let elf = elf64(bytes)?;
    let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    Ok(DynInfo {
        interp: elf.interpreter.map(str::to_string),
        needed: owned(&elf.libraries),
        runpath: split_paths(&elf.runpaths),
        rpath: split_paths(&elf.rpaths),
    })
}

/// RUNPATH and RPATH entries are colon-separated lists.
fn split_paths(entries: &[&str]) -> Vec<String> {
    entries
        .iter()
        .flat_map(|e| e.split(':'))
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// `XEN_ELFNOTE_PHYS32_ENTRY`: the 32-bit PVH entry point QEMU boots.
const XEN_ELFNOTE_PHYS32_ENTRY: u32 = 18;

/// Whether an ELF kernel has the PVH entry note (owner `Xen`, type 18) in
/// a `PT_NOTE` segment, which is where QEMU looks for it.
pub fn has_pvh_note(bytes: &[u8]) -> Result<bool, ElfError> {
    let elf = elf64(bytes)?;
    let Some(notes) = elf.iter_note_headers(bytes) else {
        return Ok(false);
    };
    for n in notes {
        let n = n.map_err(ElfError::Note)?;
        if n.n_type == XEN_ELFNOTE_PHYS32_ENTRY && n.name == "Xen" {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Hand-made ELF files for other modules' tests.
#[cfg(test)]
pub mod tests_support {
    /// A minimal ELF64 whose one `PT_NOTE` segment holds a `Linux` note
    /// and, if `pvh`, the Xen PVH entry note.
    pub fn elf_with_pvh_note(pvh: bool) -> Vec<u8> {
        let note = |name: &[u8], kind: u32, desc: &[u8]| {
            let mut v = Vec::new();
            let namez = [name, b"\0"].concat();
            v.extend((namez.len() as u32).to_le_bytes());
            v.extend((desc.len() as u32).to_le_bytes());
            v.extend(kind.to_le_bytes());
            v.extend(&namez);
            v.resize(v.len().div_ceil(4) * 4, 0);
            v.extend(desc);
            v.resize(v.len().div_ceil(4) * 4, 0);
            v
        };
        let mut notes = note(b"Linux", 15, b"6.1.0\0");
        if pvh {
            notes.extend(note(b"Xen", 18, &0x0100_0850u64.to_le_bytes()));
        }
        let phoff = 64usize;
        let notes_off = phoff + 56;
        let mut b = vec![0u8; notes_off];
        b[..4].copy_from_slice(b"\x7fELF");
        b[4] = 2;
        b[5] = 1;
        b[0x20..0x28].copy_from_slice(&(phoff as u64).to_le_bytes());
        b[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
        b[0x38..0x3a].copy_from_slice(&1u16.to_le_bytes());
        b[phoff..phoff + 4].copy_from_slice(&goblin::elf::program_header::PT_NOTE.to_le_bytes());
        b[phoff + 48..phoff + 56].copy_from_slice(&4u64.to_le_bytes());
        b[phoff + 8..phoff + 16].copy_from_slice(&(notes_off as u64).to_le_bytes());
        b[phoff + 32..phoff + 40].copy_from_slice(&(notes.len() as u64).to_le_bytes());
        b.extend(notes);
        b
    }
}

/// ld.so's built-in directories on Debian-style multiarch systems and on
/// others. The guest uses the same loader, so a library placed at the same
/// path in the initramfs is found there without any configuration.
pub fn system_dirs() -> Vec<PathBuf> {
    let triple = format!("{}-linux-gnu", std::env::consts::ARCH);
    [
        format!("/lib/{triple}"),
        format!("/usr/lib/{triple}"),
        "/lib64".into(),
        "/usr/lib64".into(),
        "/lib".into(),
        "/usr/lib".into(),
    ]
    .into_iter()
    .map(PathBuf::from)
    .collect()
}

/// Everything an executable needs to run elsewhere: path in the guest →
/// host file to read it from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Closure {
    pub files: BTreeMap<String, PathBuf>,
    /// Directories holding libraries found outside [`system_dirs`]; the
    /// guest needs them in `LD_LIBRARY_PATH`.
    pub extra_lib_dirs: Vec<String>,
}

/// Resolve the interpreter and the libraries `exe` needs, transitively.
pub fn closure(exe: &Path) -> Result<Closure, ClosureError> {
    let ld_library_path: Vec<String> = std::env::var("LD_LIBRARY_PATH")
        .unwrap_or_default()
        .split(':')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    closure_with(exe, &ld_library_path, &system_dirs())
}

pub fn closure_with(
    exe: &Path,
    ld_library_path: &[String],
    system: &[PathBuf],
) -> Result<Closure, ClosureError> {
    let mut out = Closure::default();
    let read = |p: &Path| {
        fs::read(p).map_err(|source| ClosureError::Read {
            path: p.to_path_buf(),
            source,
        })
    };
    let parse_at = |p: &Path, bytes: &[u8]| {
        parse(bytes).map_err(|source| ClosureError::Elf {
            path: p.to_path_buf(),
            source,
        })
    };
    let bytes = read(exe)?;
    let info = parse_at(exe, &bytes)?;
    if let Some(interp) = &info.interp {
        out.files.insert(interp.clone(), PathBuf::from(interp));
    }
    let mut queue = vec![(exe.to_path_buf(), info)];
    let mut seen_names: Vec<String> = Vec::new();
    while let Some((file, info)) = queue.pop() {
        let origin = file
            .parent()
            .map(|p| p.to_string_lossy().to_string())
            .unwrap_or_default();
        let expand = |d: &String| d.replace("$ORIGIN", &origin).replace("${ORIGIN}", &origin);
        let mut dirs: Vec<PathBuf> = ld_library_path.iter().map(PathBuf::from).collect();
        if info.runpath.is_empty() {
            dirs.extend(info.rpath.iter().map(expand).map(PathBuf::from));
        } else {
            dirs.extend(info.runpath.iter().map(expand).map(PathBuf::from));
        }
        dirs.extend(system.iter().cloned());
        for name in &info.needed {
            if seen_names.contains(name) {
                continue;
            }
            seen_names.push(name.clone());
            let found = if name.contains('/') {
                Some(PathBuf::from(name))
            } else {
                dirs.iter().map(|d| d.join(name)).find(|p| p.is_file())
            };
            let Some(path) = found else {
                return Err(ClosureError::NotFound {
                    file: file.clone(),
                    name: name.clone(),
                    dirs,
                });
            };
            let dir = path
                .parent()
                .map(|d| d.to_string_lossy().to_string())
                .unwrap_or_default();
            if !system.iter().any(|s| s.to_string_lossy() == dir)
                && !out.extra_lib_dirs.contains(&dir)
            {
                out.extra_lib_dirs.push(dir);
            }
            let lib_bytes = read(&path)?;
            let lib_info = parse_at(&path, &lib_bytes)?;
            out.files
                .insert(path.to_string_lossy().to_string(), path.clone());
            queue.push((path, lib_info));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use goblin::elf::dynamic::{DT_NEEDED, DT_NULL, DT_RUNPATH, DT_STRSZ, DT_STRTAB};
    use goblin::elf::program_header::{PT_DYNAMIC, PT_INTERP, PT_LOAD};

    /// A minimal ELF64 with PT_INTERP, PT_LOAD and PT_DYNAMIC, built by hand.
    fn tiny_elf(interp: &str, needed: &[&str], runpath: Option<&str>) -> Vec<u8> {
        let mut strtab = vec![0u8];
        let mut add = |s: &str| {
            let off = strtab.len() as u64;
            strtab.extend_from_slice(s.as_bytes());
            strtab.push(0);
            off
        };
        let needed_offs: Vec<u64> = needed.iter().map(|n| add(n)).collect();
        let runpath_off = runpath.map(&mut add);
        let phoff = 64u64;
        let phnum = 3u64;
        let interp_off = phoff + 56 * phnum;
        let interp_bytes = [interp.as_bytes(), b"\0"].concat();
        let strtab_off = interp_off + interp_bytes.len() as u64;
        let dyn_off = (strtab_off + strtab.len() as u64).div_ceil(8) * 8;
        let mut dynamic: Vec<(u64, u64)> = needed_offs.iter().map(|&o| (DT_NEEDED, o)).collect();
        if let Some(o) = runpath_off {
            dynamic.push((DT_RUNPATH, o));
        }
        let vbase = 0x400000u64;
        dynamic.push((DT_STRTAB, vbase + strtab_off));
        dynamic.push((DT_STRSZ, strtab.len() as u64));
        dynamic.push((DT_NULL, 0));
        let total = dyn_off + 16 * dynamic.len() as u64;

        let mut b = vec![0u8; total as usize];
        b[..4].copy_from_slice(b"\x7fELF");
        b[4] = 2;
        b[5] = 1;
        b[0x20..0x28].copy_from_slice(&phoff.to_le_bytes());
        b[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
        b[0x38..0x3a].copy_from_slice(&(phnum as u16).to_le_bytes());
        let mut ph = |i: u64, kind: u32, off: u64, vaddr: u64, size: u64| {
            let o = (phoff + 56 * i) as usize;
            b[o..o + 4].copy_from_slice(&kind.to_le_bytes());
            b[o + 8..o + 16].copy_from_slice(&off.to_le_bytes());
            b[o + 16..o + 24].copy_from_slice(&vaddr.to_le_bytes());
            b[o + 32..o + 40].copy_from_slice(&size.to_le_bytes());
            b[o + 40..o + 48].copy_from_slice(&size.to_le_bytes());
        };
        ph(
            0,
            PT_INTERP,
            interp_off,
            vbase + interp_off,
            interp_bytes.len() as u64,
        );
        ph(1, PT_LOAD, 0, vbase, total);
        ph(
            2,
            PT_DYNAMIC,
            dyn_off,
            vbase + dyn_off,
            16 * dynamic.len() as u64,
        );
        b[interp_off as usize..strtab_off as usize].copy_from_slice(&interp_bytes);
        b[strtab_off as usize..strtab_off as usize + strtab.len()].copy_from_slice(&strtab);
        for (i, (t, v)) in dynamic.iter().enumerate() {
            let o = dyn_off as usize + 16 * i;
            b[o..o + 8].copy_from_slice(&t.to_le_bytes());
            b[o + 8..o + 16].copy_from_slice(&v.to_le_bytes());
        }
        b
    }

    #[test]
    fn parses_hand_made_elf() {
        let b = tiny_elf(
            "/lib64/ld-x.so.2",
            &["liba.so.1", "libb.so.2"],
            Some("$ORIGIN/../lib"),
        );
        let info = parse(&b).unwrap();
        assert_eq!(info.interp.as_deref(), Some("/lib64/ld-x.so.2"));
        assert_eq!(info.needed, ["liba.so.1", "libb.so.2"]);
        assert_eq!(info.runpath, ["$ORIGIN/../lib"]);
        assert!(parse(b"not elf at all, not at all, not at all, not at all, not at all!").is_err());
    }

    #[test]
    fn resolves_transitively_with_runpath() {
        let d = tempfile::tempdir().unwrap();
        let bin = d.path().join("bin");
        let lib = d.path().join("lib");
        let sys = d.path().join("sys");
        for p in [&bin, &lib, &sys] {
            fs::create_dir(p).unwrap();
        }
        fs::write(
            bin.join("exe"),
            tiny_elf("/lib64/ld.so", &["liba.so"], Some("$ORIGIN/../lib")),
        )
        .unwrap();
        fs::write(lib.join("liba.so"), tiny_elf("", &["libc.so"], None)).unwrap();
        fs::write(sys.join("libc.so"), tiny_elf("", &[], None)).unwrap();
        let c = closure_with(&bin.join("exe"), &[], std::slice::from_ref(&sys)).unwrap();
        let keys: Vec<&String> = c.files.keys().collect();
        assert_eq!(keys.len(), 3, "{keys:?}");
        assert!(c.files.contains_key("/lib64/ld.so"));
        assert!(c
            .files
            .contains_key(&sys.join("libc.so").to_string_lossy().to_string()));
        assert_eq!(
            c.extra_lib_dirs,
            [bin.join("../lib").to_string_lossy().to_string()]
        );

        fs::write(
            bin.join("broken"),
            tiny_elf("/lib64/ld.so", &["libnope.so"], None),
        )
        .unwrap();
        let e = closure_with(&bin.join("broken"), &[], std::slice::from_ref(&sys))
            .unwrap_err()
            .to_string();
        assert!(e.contains("needs libnope.so"), "{e}");
    }

    #[test]
    fn pvh_note() {
        assert!(has_pvh_note(&tests_support::elf_with_pvh_note(true)).unwrap());
        assert!(!has_pvh_note(&tests_support::elf_with_pvh_note(false)).unwrap());
        assert!(has_pvh_note(b"not an elf").is_err());
    }

    #[test]
    fn this_test_binary_resolves() {
        let exe = std::env::current_exe().unwrap();
        let c = closure(&exe).unwrap();
        // A glibc-linked test binary needs at least its loader and libc.
        if parse(&fs::read(&exe).unwrap()).unwrap().interp.is_some() {
            assert!(c.files.keys().any(|k| k.contains("ld-linux")), "{c:?}");
            assert!(c.files.keys().any(|k| k.contains("libc.so")), "{c:?}");
        }
    }
}
