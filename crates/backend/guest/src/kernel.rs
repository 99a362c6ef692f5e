//! Booting the kernel fast: decompress it once on the host, boot it as
//! PVH.
//!
//! A bzImage decompresses itself before printing anything. Under TCG that
//! step alone (XZ for Debian's kernels) takes 3–8 s of emulated time, more
//! than the rest of the boot. The compressed `vmlinux` is in the bzImage's
//! payload (`payload_offset`/`payload_length` of the x86 boot protocol
//! header, version 2.08+). numalab extracts it, decompresses it with the
//! format's standard tool (`xz`, `zstd`, `gzip`, `lz4`, `bzip2`; no Rust
//! decoder covers the kernel's XZ with its x86 BCJ filter), checks the
//! size the kernel build appended, and caches the result under
//! `$XDG_CACHE_HOME/numalab/vmlinux/` (or `~/.cache/...`). If that ELF has
//! the PVH entry note (`XEN_ELFNOTE_PHYS32_ENTRY`, `CONFIG_PVH=y`, as in
//! Debian's and Ubuntu's kernels), QEMU boots it directly with `-kernel`.
//!
//! Anything unexpected — no tool, an old boot protocol, no PVH note —
//! falls back to booting the bzImage as is, which always works, and says
//! why.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Compression of a bzImage payload, by magic number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Gzip,
    Xz,
    Lzma,
    Zstd,
    Lz4,
    Bzip2,
}

impl Format {
    pub fn detect(data: &[u8]) -> Option<Format> {
        Some(match data {
            [0x1f, 0x8b, ..] => Format::Gzip,
            [0xfd, b'7', b'z', b'X', b'Z', 0, ..] => Format::Xz,
            [0x28, 0xb5, 0x2f, 0xfd, ..] => Format::Zstd,
            [0x02, 0x21, 0x4c, 0x18, ..] => Format::Lz4,
            [b'B', b'Z', b'h', ..] => Format::Bzip2,
            [0x5d, 0x00, 0x00, ..] => Format::Lzma,
            _ => return None,
        })
    }

    /// The decompressing command and the package that provides it.
    pub fn tool(self) -> (&'static [&'static str], &'static str) {
        match self {
            Format::Gzip => (&["gzip", "-dc"], "gzip"),
            Format::Xz => (&["xz", "-dc", "--single-stream"], "xz-utils"),
            Format::Lzma => (&["xz", "--format=lzma", "-dc"], "xz-utils"),
            Format::Zstd => (&["zstd", "-dcq"], "zstd"),
            Format::Lz4 => (&["lz4", "-dc"], "lz4"),
            Format::Bzip2 => (&["bzip2", "-dc"], "bzip2"),
        }
    }
}

/// Why a bzImage's payload was not found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PayloadError {
    #[error("not a bzImage (too short)")]
    TooShort,
    #[error("not a bzImage (no boot protocol header)")]
    NoHeader,
    /// A boot protocol before 2.08.
    #[error("boot protocol {0:#x} has no payload fields (2.08+)")]
    OldProtocol(u16),
    #[error("payload outside the image")]
    OutsideImage,
    #[error("empty payload")]
    Empty,
    #[error("unknown payload compression")]
    UnknownCompression,
}

/// Why a payload was not decompressed.
#[derive(Debug, thiserror::Error)]
pub enum DecompressError {
    /// The tool did not start (its package named).
    #[error("{tool} ({source}; install the {package} package)")]
    Spawn {
        tool: &'static str,
        package: &'static str,
        source: std::io::Error,
    },
    #[error("{tool}: {source}")]
    Wait {
        tool: &'static str,
        source: std::io::Error,
    },
    /// The tool failed (its command line and standard error).
    #[error("{command} failed: {stderr}")]
    Failed { command: String, stderr: String },
    /// Not the size the image says.
    #[error("{tool} gave {got} bytes, the image says {expected}")]
    Size {
        tool: &'static str,
        got: usize,
        expected: u32,
    },
}

/// Why the kernel is booted compressed rather than as a PVH ELF.
#[derive(Debug, thiserror::Error)]
enum PvhError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Payload(#[from] PayloadError),
    #[error(transparent)]
    Decompress(#[from] DecompressError),
    #[error(transparent)]
    Elf(#[from] crate::elf::ElfError),
    #[error("the kernel has no PVH entry point (CONFIG_PVH)")]
    NoPvhNote,
}

/// The compressed payload of a bzImage and the uncompressed size its
/// build appended (the last four bytes, little-endian).
pub fn payload(image: &[u8]) -> Result<(&[u8], u32, Format), PayloadError> {
    let h = |o: usize, n: usize| image.get(o..o + n).ok_or(PayloadError::TooShort);
    if h(0x202, 4)? != b"HdrS" {
        return Err(PayloadError::NoHeader);
    }
    let version = u16::from_le_bytes(h(0x206, 2)?.try_into().unwrap());
    if version < 0x0208 {
        return Err(PayloadError::OldProtocol(version));
    }
    let setup_sects = match image[0x1f1] {
        0 => 4,
        n => n as usize,
    };
    let offset = u32::from_le_bytes(h(0x248, 4)?.try_into().unwrap()) as usize;
    let length = u32::from_le_bytes(h(0x24c, 4)?.try_into().unwrap()) as usize;
    let start = (setup_sects + 1) * 512 + offset;
    let data = image
        .get(start..start + length)
        .ok_or(PayloadError::OutsideImage)?;
    if data.len() < 8 {
        return Err(PayloadError::Empty);
    }
    let format = Format::detect(data).ok_or(PayloadError::UnknownCompression)?;
    let size = u32::from_le_bytes(data[data.len() - 4..].try_into().unwrap());
    Ok((data, size, format))
}

/// Decompress a payload with its tool, checking the appended size.
pub fn decompress(data: &[u8], size: u32, format: Format) -> Result<Vec<u8>, DecompressError> {
    let (argv, package) = format.tool();
    // gzip carries its own size trailer; the others get one appended by
    // the kernel build, which is not part of the stream.
    let stream = match format {
        Format::Gzip | Format::Xz => data,
        _ => &data[..data.len() - 4],
    };
    let mut child = Command::new(argv[0])
        .args(&argv[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| DecompressError::Spawn {
            tool: argv[0],
            package,
            source,
        })?;
    let mut stdin = child.stdin.take().expect("piped");
    let input = stream.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child
        .wait_with_output()
        .map_err(|source| DecompressError::Wait {
            tool: argv[0],
            source,
        })?;
    let _ = writer.join();
    if !out.status.success() {
        return Err(DecompressError::Failed {
            command: argv.join(" "),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    if out.stdout.len() as u64 != size as u64 {
        return Err(DecompressError::Size {
            tool: argv[0],
            got: out.stdout.len(),
            expected: size,
        });
    }
    Ok(out.stdout)
}

/// Where decompressed kernels are kept between runs.
pub fn cache_dir() -> Option<PathBuf> {
    cache_base().map(|b| b.join("vmlinux"))
}

/// numalab's cache: `$XDG_CACHE_HOME/numalab` or `~/.cache/numalab`.
pub fn cache_base() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(".cache"))
        })?;
    Some(base.join("numalab"))
}

/// What QEMU's `-kernel` gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepared {
    pub image: PathBuf,
    /// Booting the uncompressed ELF through PVH.
    pub pvh: bool,
    /// Why not, when not.
    pub note: Option<String>,
}

/// The image to boot for `bzimage`: its cached PVH ELF when possible (made
/// now if needed, in `cache` or else in `tmp`), else the bzImage itself.
pub fn prepare(bzimage: &Path, cache: Option<&Path>, tmp: &Path) -> Prepared {
    match pvh_image(bzimage, cache, tmp) {
        Ok(image) => Prepared {
            image,
            pvh: true,
            note: None,
        },
        Err(why) => Prepared {
            image: bzimage.to_path_buf(),
            pvh: false,
            note: Some(format!(
                "booting the compressed image, which decompresses itself slowly under TCG: {why}"
            )),
        },
    }
}

fn pvh_image(bzimage: &Path, cache: Option<&Path>, tmp: &Path) -> Result<PathBuf, PvhError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| PvhError::Io { path, source }
    };
    let meta = fs::metadata(bzimage).map_err(io(bzimage))?;
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let name = bzimage
        .file_name()
        .map(|n| numalab_protocol::frame::sanitize_name(&n.to_string_lossy()))
        .unwrap_or_else(|| "kernel".into());
    let key = format!("{name}-{}-{mtime}.elf", meta.len());
    if let Some(c) = cache {
        let p = c.join(&key);
        if p.is_file() {
            return Ok(p);
        }
    }
    let image = fs::read(bzimage).map_err(io(bzimage))?;
    let (data, size, format) = payload(&image)?;
    let elf = decompress(data, size, format)?;
    if !crate::elf::has_pvh_note(&elf)? {
        return Err(PvhError::NoPvhNote);
    }
    // Cache it if we can; otherwise keep it for this run only.
    if let Some(c) = cache {
        if fs::create_dir_all(c).is_ok() {
            if let Ok(mut t) = tempfile::Builder::new().prefix(".vmlinux").tempfile_in(c) {
                if t.write_all(&elf).is_ok() {
                    let p = c.join(&key);
                    if t.persist(&p).is_ok() {
                        prune(c, &name, &key);
                        return Ok(p);
                    }
                }
            }
        }
    }
    let p = tmp.join("vmlinux.elf");
    fs::write(&p, &elf).map_err(io(&p))?;
    Ok(p)
}

/// Remove the cached images of earlier versions of the same kernel file
/// (same name, another size or time: a reinstalled or rebuilt kernel), so
/// the cache holds one image, about 60 MiB, per kernel file.
fn prune(cache: &Path, name: &str, keep: &str) {
    let Ok(entries) = fs::read_dir(cache) else {
        return;
    };
    let prefix = format!("{name}-");
    for e in entries.flatten() {
        let f = e.file_name().to_string_lossy().into_owned();
        let stale = f != keep
            && f.ends_with(".elf")
            && f.strip_prefix(&prefix).is_some_and(|rest| {
                // `<len>-<mtime>.elf`: only digits, so `vmlinuz-6.1` does
                // not prune `vmlinuz-6.1.0-56-amd64`.
                let parts: Vec<&str> = rest.trim_end_matches(".elf").split('-').collect();
                parts.len() == 2 && parts.iter().all(|p| p.bytes().all(|b| b.is_ascii_digit()))
            });
        if stale {
            let _ = fs::remove_file(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake bzImage: boot header, setup sectors, payload.
    fn fake_bzimage(payload: &[u8]) -> Vec<u8> {
        let setup_sects = 3usize;
        let mut img = vec![0u8; (setup_sects + 1) * 512];
        img[0x1f1] = setup_sects as u8;
        img[0x202..0x206].copy_from_slice(b"HdrS");
        img[0x206..0x208].copy_from_slice(&0x020fu16.to_le_bytes());
        let offset = 100u32;
        img[0x248..0x24c].copy_from_slice(&offset.to_le_bytes());
        img[0x24c..0x250].copy_from_slice(&(payload.len() as u32).to_le_bytes());
        img.extend(vec![0u8; offset as usize]);
        img.extend_from_slice(payload);
        img.extend_from_slice(b"trailing code");
        img
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut c = Command::new("gzip")
            .arg("-c")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("gzip (Debian: Essential)");
        c.stdin.take().unwrap().write_all(data).unwrap();
        c.wait_with_output().unwrap().stdout
    }

    #[test]
    fn formats() {
        assert_eq!(
            Format::detect(&[0xfd, b'7', b'z', b'X', b'Z', 0]),
            Some(Format::Xz)
        );
        assert_eq!(
            Format::detect(&[0x28, 0xb5, 0x2f, 0xfd]),
            Some(Format::Zstd)
        );
        assert_eq!(Format::detect(b"\x1f\x8b\x08"), Some(Format::Gzip));
        assert_eq!(Format::detect(b"nope"), None);
        assert_eq!(Format::Xz.tool().1, "xz-utils");
    }

    #[test]
    fn extracts_and_decompresses_and_caches() {
        let elf = crate::elf::tests_support::elf_with_pvh_note(true);
        let img = fake_bzimage(&gzip(&elf));
        let (data, size, format) = payload(&img).unwrap();
        assert_eq!(format, Format::Gzip);
        assert_eq!(size as usize, elf.len());
        assert_eq!(decompress(data, size, format).unwrap(), elf);

        let d = tempfile::tempdir().unwrap();
        let bz = d.path().join("vmlinuz-9.9");
        fs::write(&bz, &img).unwrap();
        let cache = d.path().join("cache");
        let p = prepare(&bz, Some(&cache), d.path());
        assert!(p.pvh, "{p:?}");
        assert!(p.image.starts_with(&cache));
        assert_eq!(fs::read(&p.image).unwrap(), elf);
        // Second time: from the cache.
        assert_eq!(prepare(&bz, Some(&cache), d.path()), p);
        // No cache directory: a file for this run.
        let p2 = prepare(&bz, None, d.path());
        assert_eq!(p2.image, d.path().join("vmlinux.elf"));
        // The kernel file is replaced (another size): the new image is
        // cached and the old one pruned; another kernel's image stays.
        let other = cache.join("vmlinuz-9.9.1-5-1.elf");
        fs::write(&other, b"x").unwrap();
        let mut img2 = img.clone();
        img2.extend_from_slice(&[0u8; 512]);
        fs::write(&bz, &img2).unwrap();
        let p3 = prepare(&bz, Some(&cache), d.path());
        assert!(p3.pvh && p3.image != p.image, "{p3:?}");
        assert!(p3.image.is_file());
        assert!(!p.image.exists(), "stale image kept");
        assert!(other.exists(), "another kernel's image pruned");
    }

    #[test]
    fn falls_back_to_the_bzimage() {
        let d = tempfile::tempdir().unwrap();
        let bz = d.path().join("vmlinuz-no-pvh");
        fs::write(
            &bz,
            fake_bzimage(&gzip(&crate::elf::tests_support::elf_with_pvh_note(false))),
        )
        .unwrap();
        let p = prepare(&bz, None, d.path());
        assert!(!p.pvh);
        assert_eq!(p.image, bz);
        assert!(p.note.unwrap().contains("no PVH entry point"));

        let bad = d.path().join("vmlinuz-bad");
        let mut img = fake_bzimage(b"\x00\x01garbage!");
        img[0x206] = 0x01; // protocol 2.01
        fs::write(&bad, img).unwrap();
        assert!(prepare(&bad, None, d.path()).note.unwrap().contains("2.08"));
        // Corrupt payload: the tool fails, we still boot.
        let corrupt = d.path().join("vmlinuz-corrupt");
        fs::write(&corrupt, fake_bzimage(b"\x1f\x8b\x08\x00garbage-garbage")).unwrap();
        assert!(!prepare(&corrupt, None, d.path()).pvh);
    }
}
