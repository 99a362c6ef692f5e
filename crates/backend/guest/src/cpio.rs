//! A writer for the `newc` cpio format, the one the kernel unpacks as an
//! initramfs (Documentation/driver-api/early-userspace/buffer-format.rst).
//!
//! Each entry is a 110-byte ASCII header (`070701` and thirteen 8-digit
//! hex fields), the NUL-terminated name padded to a multiple of four, then
//! the data padded to a multiple of four. The archive ends with an entry
//! named `TRAILER!!!`. Device nodes need no privilege to write: they are
//! just a mode and a device number in the header.

use std::io::{self, Write};

const MAGIC: &str = "070701";
pub const TRAILER: &str = "TRAILER!!!";

pub const S_IFDIR: u32 = 0o040000;
pub const S_IFREG: u32 = 0o100000;
pub const S_IFCHR: u32 = 0o020000;
pub const S_IFLNK: u32 = 0o120000;

/// Streams a newc archive to `W`. Paths are written without a leading `/`
/// (the kernel accepts both; this is what `cpio -H newc` produces).
pub struct CpioWriter<W: Write> {
    out: W,
    written: u64,
    next_ino: u32,
    finished: bool,
}

impl<W: Write> CpioWriter<W> {
    pub fn new(out: W) -> CpioWriter<W> {
        CpioWriter {
            out,
            written: 0,
            next_ino: 1,
            finished: false,
        }
    }

    fn pad(&mut self) -> io::Result<()> {
        let rem = (self.written % 4) as usize;
        if rem != 0 {
            let zeros = [0u8; 4];
            self.out.write_all(&zeros[..4 - rem])?;
            self.written += (4 - rem) as u64;
        }
        Ok(())
    }

    fn header(&mut self, name: &str, mode: u32, size: u64, rdev: (u32, u32)) -> io::Result<()> {
        let name = name.trim_start_matches('/');
        if name.is_empty() || name.contains('\0') {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("bad cpio entry name {name:?}"),
            ));
        }
        let size32 = u32::try_from(size).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{name}: {size} bytes is too large for a newc entry"),
            )
        })?;
        let ino = self.next_ino;
        self.next_ino += 1;
        let nlink = if mode & S_IFDIR == S_IFDIR { 2 } else { 1 };
        let fields = [
            ino,
            mode,
            0, // uid
            0, // gid
            nlink,
            0, // mtime
            size32,
            0, // devmajor
            0, // devminor
            rdev.0,
            rdev.1,
            name.len() as u32 + 1,
            0, // check
        ];
        let mut h = String::with_capacity(110);
        h.push_str(MAGIC);
        for f in fields {
            h.push_str(&format!("{f:08x}"));
        }
        self.out.write_all(h.as_bytes())?;
        self.out.write_all(name.as_bytes())?;
        self.out.write_all(&[0])?;
        self.written += h.len() as u64 + name.len() as u64 + 1;
        self.pad()
    }

    pub fn dir(&mut self, path: &str, perm: u32) -> io::Result<()> {
        self.header(path, S_IFDIR | (perm & 0o7777), 0, (0, 0))
    }

    pub fn file(&mut self, path: &str, perm: u32, data: &[u8]) -> io::Result<()> {
        self.header(path, S_IFREG | (perm & 0o7777), data.len() as u64, (0, 0))?;
        self.out.write_all(data)?;
        self.written += data.len() as u64;
        self.pad()
    }

    pub fn symlink(&mut self, path: &str, target: &str) -> io::Result<()> {
        self.header(path, S_IFLNK | 0o777, target.len() as u64, (0, 0))?;
        self.out.write_all(target.as_bytes())?;
        self.written += target.len() as u64;
        self.pad()
    }

    pub fn char_dev(&mut self, path: &str, perm: u32, major: u32, minor: u32) -> io::Result<()> {
        self.header(path, S_IFCHR | (perm & 0o7777), 0, (major, minor))
    }

    /// Write the trailer and return the inner writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.header(TRAILER, 0, 0, (0, 0))?;
        self.finished = true;
        self.out.flush()?;
        Ok(self.out)
    }

    /// Bytes written so far.
    pub fn len(&self) -> u64 {
        self.written
    }

    pub fn is_empty(&self) -> bool {
        self.written == 0
    }
}

/// One entry read back from an archive (used by the tests).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub mode: u32,
    pub rdev: (u32, u32),
    pub data: Vec<u8>,
}

/// Where a newc archive read back breaks the format (offsets in bytes
/// from its start).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    #[error("truncated header at offset {0}")]
    TruncatedHeader(usize),
    #[error("bad magic at offset {0}")]
    BadMagic(usize),
    /// A header field that is not 8 hex digits (its index, its text, why).
    #[error("field {index} {text:?}: {why}")]
    Field {
        index: usize,
        text: String,
        why: String,
    },
    #[error("bad name at offset {0}")]
    BadName(usize),
    /// A header field or a name that is not UTF-8 (why).
    #[error("{0}")]
    NotUtf8(String),
    #[error("{0}: truncated data")]
    TruncatedData(String),
    #[error("{0}: non-zero name padding")]
    NamePadding(String),
    #[error("truncated data padding")]
    TruncatedPadding,
}

/// Read a newc archive back, up to and excluding its trailer. Strict: any
/// deviation from the format (bad magic, bad padding, no trailer) is an
/// error, which is what makes it useful for testing the writer.
pub fn read_all(mut buf: &[u8]) -> Result<Vec<Entry>, ReadError> {
    let mut out = Vec::new();
    let mut offset = 0usize;
    loop {
        if buf.len() < 110 {
            return Err(ReadError::TruncatedHeader(offset));
        }
        if &buf[..6] != MAGIC.as_bytes() {
            return Err(ReadError::BadMagic(offset));
        }
        let field = |i: usize| -> Result<u32, ReadError> {
            let raw = &buf[6 + 8 * i..14 + 8 * i];
            let bad = |why: String| ReadError::Field {
                index: i,
                text: String::from_utf8_lossy(raw).into_owned(),
                why,
            };
            let s = std::str::from_utf8(raw).map_err(|e| ReadError::NotUtf8(e.to_string()))?;
            u32::from_str_radix(s, 16).map_err(|e| bad(e.to_string()))
        };
        let mode = field(1)?;
        let size = field(6)? as usize;
        let rdev = (field(9)?, field(10)?);
        let namesize = field(11)? as usize;
        let name_end = 110 + namesize;
        if buf.len() < name_end || buf[name_end - 1] != 0 {
            return Err(ReadError::BadName(offset));
        }
        let name = String::from_utf8(buf[110..name_end - 1].to_vec())
            .map_err(|e| ReadError::NotUtf8(e.to_string()))?;
        let data_start = name_end.div_ceil(4) * 4;
        let data_end = data_start + size;
        if buf.len() < data_end {
            return Err(ReadError::TruncatedData(name));
        }
        if buf[name_end..data_start].iter().any(|&b| b != 0) {
            return Err(ReadError::NamePadding(name));
        }
        if name == TRAILER {
            return Ok(out);
        }
        out.push(Entry {
            name,
            mode,
            rdev,
            data: buf[data_start..data_end].to_vec(),
        });
        let next = data_end.div_ceil(4) * 4;
        if buf.len() < next {
            return Err(ReadError::TruncatedPadding);
        }
        buf = &buf[next..];
        offset += next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let mut w = CpioWriter::new(Vec::new());
        w.dir("/dev", 0o755).unwrap();
        w.char_dev("/dev/console", 0o600, 5, 1).unwrap();
        w.file("/numalab", 0o755, b"\x7fELF-not-really").unwrap();
        w.file("/etc/empty", 0o644, b"").unwrap();
        w.symlink("/lib64", "lib").unwrap();
        let bytes = w.finish().unwrap();
        assert_eq!(bytes.len() % 4, 0);
        assert!(bytes.starts_with(b"070701"));
        let entries = read_all(&bytes).unwrap();
        let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(
            names,
            ["dev", "dev/console", "numalab", "etc/empty", "lib64"]
        );
        assert_eq!(entries[0].mode, S_IFDIR | 0o755);
        assert_eq!(entries[1].mode, S_IFCHR | 0o600);
        assert_eq!(entries[1].rdev, (5, 1));
        assert_eq!(entries[2].data, b"\x7fELF-not-really");
        assert_eq!(entries[2].mode, S_IFREG | 0o755);
        assert_eq!(entries[4].data, b"lib");
    }

    #[test]
    fn header_layout_matches_newc() {
        let mut w = CpioWriter::new(Vec::new());
        w.file("a", 0o644, b"xyz").unwrap();
        let bytes = w.finish().unwrap();
        // magic, ino 1, mode 0100644, uid, gid, nlink 1, mtime, size 3.
        let h = std::str::from_utf8(&bytes[..110]).unwrap();
        assert_eq!(&h[..6], "070701");
        assert_eq!(&h[6..14], "00000001");
        assert_eq!(&h[14..22], "000081a4");
        assert_eq!(&h[38..46], "00000001");
        assert_eq!(&h[54..62], "00000003");
        assert_eq!(&h[94..102], "00000002"); // namesize "a\0"
                                             // name at 110, padded to 112, data at 112..115, padded to 116.
        assert_eq!(&bytes[110..112], b"a\0");
        assert_eq!(&bytes[112..115], b"xyz");
        assert_eq!(bytes[115], 0);
        assert_eq!(&bytes[116..122], b"070701");
    }

    #[test]
    fn rejects_bad_names() {
        let mut w = CpioWriter::new(Vec::new());
        assert!(w.file("/", 0o644, b"").is_err());
        assert!(w.file("a\0b", 0o644, b"").is_err());
    }
}
