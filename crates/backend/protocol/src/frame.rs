//! Frames: the byte stream between numalab and the machine it drives.
//! In a `numalab vm` guest the stream is the second serial port
//! (`ttyS1`), which QEMU connects to a Unix socket the host holds; any
//! other byte stream (a pipe, an SSH session's standard input and
//! output) carries the same frames. Mostly guest to host (output,
//! records); the host sends [`Kind::Request`] frames the other way to
//! the agent ([`crate::agent`]).
//!
//! Why a serial port for the guest: Debian's kernel has the 8250 UART
//! built in, while virtio-serial, virtio-vsock and 9p are modules, and
//! the guest may have no modules (an initramfs holding only numalab). A
//! UART needs nothing.
//!
//! A frame is a header line, the payload, and an end line:
//!
//! ```text
//! \n@@NUMALAB v1 <kind> <name> <len> <crc32>\n<len bytes of payload>\n@@END\n
//! ```
//!
//! `kind` is one of [`Kind`]; `name` is `[A-Za-z0-9._-]+` or `-`; `len` is
//! decimal; `crc32` is the IEEE CRC-32 of the payload in 8 hex digits. The
//! guest puts the port in raw mode, so the bytes arrive unchanged; the
//! length and checksum still catch a truncated or damaged frame (a guest
//! that died mid-write, a port that dropped bytes), which the host then
//! reports instead of storing a broken record. Bytes outside frames are
//! ignored, so the parser resynchronises on the next header.

use std::fmt;

const HEADER: &[u8] = b"@@NUMALAB v1 ";
const END: &[u8] = b"\n@@END\n";
/// Largest payload accepted; a record is tens of KiB.
pub const MAX_PAYLOAD: usize = 64 << 20;

/// What a frame carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The guest init is up: JSON with the guest kernel and uptime.
    Hello,
    /// Sysctls applied, as JSON `{"key": "value read back"}`.
    Sysctls,
    /// A chunk of the command's standard output.
    Stdout,
    /// A chunk of the command's standard error.
    Stderr,
    /// A run record file; `name` is its file name.
    Record,
    /// The command ended: JSON `{"code": n}` or `{"signal": n}`.
    Exit,
    /// The guest init failed before or around the command: a message.
    Error,
    /// Host to guest, to the agent ([`crate::agent`]): JSON of a
    /// [`crate::request::Request`].
    Request,
    /// The agent's answer to a request: JSON.
    Reply,
    /// How far the current run is, as a decimal fraction (`0.42`).
    Progress,
    /// A file a run wrote beside its record (a command's output log);
    /// `name` is its file name.
    Log,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Hello => "hello",
            Kind::Sysctls => "sysctls",
            Kind::Stdout => "stdout",
            Kind::Stderr => "stderr",
            Kind::Record => "record",
            Kind::Exit => "exit",
            Kind::Error => "error",
            Kind::Request => "request",
            Kind::Reply => "reply",
            Kind::Progress => "progress",
            Kind::Log => "log",
        }
    }
    pub fn parse(s: &str) -> Option<Kind> {
        Some(match s {
            "hello" => Kind::Hello,
            "sysctls" => Kind::Sysctls,
            "stdout" => Kind::Stdout,
            "stderr" => Kind::Stderr,
            "record" => Kind::Record,
            "exit" => Kind::Exit,
            "error" => Kind::Error,
            "request" => Kind::Request,
            "reply" => Kind::Reply,
            "progress" => Kind::Progress,
            "log" => Kind::Log,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub kind: Kind,
    /// `-` when the kind needs no name.
    pub name: String,
    pub payload: Vec<u8>,
}

/// A frame the parser saw but could not accept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameError(pub String);

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// IEEE 802.3 CRC-32 (the one of zlib, gzip and PNG).
pub fn crc32(data: &[u8]) -> u32 {
    static TABLE: std::sync::OnceLock<[u32; 256]> = std::sync::OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let mut t = [0u32; 256];
        for (i, e) in t.iter_mut().enumerate() {
            let mut c = i as u32;
            for _ in 0..8 {
                c = if c & 1 != 0 {
                    0xEDB8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
            }
            *e = c;
        }
        t
    });
    let mut c = !0u32;
    for &b in data {
        c = table[((c ^ b as u32) & 0xff) as usize] ^ (c >> 8);
    }
    !c
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
}

/// Encode one frame. Panics on a name outside `[A-Za-z0-9._-]` (callers
/// pass fixed names or sanitise with [`sanitize_name`]).
pub fn encode(kind: Kind, name: &str, payload: &[u8]) -> Vec<u8> {
    let name = if name.is_empty() { "-" } else { name };
    assert!(valid_name(name), "bad frame name {name:?}");
    let mut out = Vec::with_capacity(payload.len() + 80);
    out.push(b'\n');
    out.extend_from_slice(HEADER);
    out.extend_from_slice(
        format!(
            "{} {} {} {:08x}\n",
            kind.as_str(),
            name,
            payload.len(),
            crc32(payload)
        )
        .as_bytes(),
    );
    out.extend_from_slice(payload);
    out.extend_from_slice(END);
    out
}

/// A file name reduced to the characters a frame name may hold.
pub fn sanitize_name(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(255)
        .collect();
    if s.is_empty() {
        "-".into()
    } else {
        s
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Incremental decoder: feed it bytes as they arrive, in any chunking.
#[derive(Debug, Default)]
pub struct Parser {
    buf: Vec<u8>,
    /// Bytes seen outside any frame (diagnostic).
    pub noise_bytes: u64,
}

impl Parser {
    pub fn new() -> Parser {
        Parser::default()
    }

    /// Add bytes and return every frame (or broken frame) completed by them.
    pub fn push(&mut self, data: &[u8]) -> Vec<Result<Frame, FrameError>> {
        self.buf.extend_from_slice(data);
        let mut out = Vec::new();
        loop {
            let Some(start) = find(&self.buf, HEADER) else {
                // Keep a tail that may be the start of a header.
                let keep = (HEADER.len() - 1).min(self.buf.len());
                let drop = self.buf.len() - keep;
                self.noise_bytes += drop as u64;
                self.buf.drain(..drop);
                break;
            };
            // The newline before the header belongs to the frame.
            let noise = if start > 0 && self.buf[start - 1] == b'\n' {
                start - 1
            } else {
                start
            };
            self.noise_bytes += noise as u64;
            self.buf.drain(..start);
            let Some(eol) = self.buf.iter().position(|&b| b == b'\n') else {
                if self.buf.len() > 512 {
                    out.push(Err(FrameError("frame header longer than 512 bytes".into())));
                    self.buf.drain(..HEADER.len());
                    continue;
                }
                break;
            };
            let line = String::from_utf8_lossy(&self.buf[HEADER.len()..eol]).to_string();
            let fields: Vec<&str> = line.split(' ').collect();
            let parsed = (|| {
                if fields.len() != 4 {
                    return Err(format!("malformed frame header {line:?}"));
                }
                let kind = Kind::parse(fields[0])
                    .ok_or_else(|| format!("unknown frame kind {:?}", fields[0]))?;
                if !valid_name(fields[1]) {
                    return Err(format!("bad frame name {:?}", fields[1]));
                }
                let len: usize = fields[2]
                    .parse()
                    .map_err(|_| format!("bad frame length {:?}", fields[2]))?;
                if len > MAX_PAYLOAD {
                    return Err(format!("frame of {len} bytes is too large"));
                }
                let crc = u32::from_str_radix(fields[3], 16)
                    .map_err(|_| format!("bad frame checksum {:?}", fields[3]))?;
                Ok((kind, fields[1].to_string(), len, crc))
            })();
            let (kind, name, len, crc) = match parsed {
                Ok(v) => v,
                Err(e) => {
                    out.push(Err(FrameError(e)));
                    self.buf.drain(..HEADER.len());
                    continue;
                }
            };
            let body = eol + 1;
            if self.buf.len() < body + len + END.len() {
                break; // wait for more
            }
            let payload = &self.buf[body..body + len];
            let end_ok = &self.buf[body + len..body + len + END.len()] == END;
            if !end_ok || crc32(payload) != crc {
                out.push(Err(FrameError(format!(
                    "{} frame {name:?} of {len} bytes arrived damaged ({})",
                    kind.as_str(),
                    if end_ok {
                        "checksum mismatch"
                    } else {
                        "no end marker where the length says"
                    }
                ))));
                self.buf.drain(..HEADER.len());
                continue;
            }
            out.push(Ok(Frame {
                kind,
                name,
                payload: payload.to_vec(),
            }));
            self.buf.drain(..body + len + END.len());
        }
        out
    }

    /// Bytes held back waiting for the rest of a frame. Non-zero at the end
    /// of the stream means the last frame was cut off.
    pub fn pending(&self) -> usize {
        if find(&self.buf, HEADER).is_some() {
            self.buf.len()
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_known_value() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn round_trip_in_any_chunking() {
        let mut stream = b"garbage before\r\n".to_vec();
        stream.extend(encode(Kind::Hello, "-", b"{\"kernel\":\"6.1\"}"));
        stream.extend(encode(Kind::Stdout, "", b"line one\nline two\n"));
        stream.extend(b"noise between frames");
        let binary: Vec<u8> = (0..=255u8)
            .chain(b"\n@@END\n@@NUMALAB v1 ".iter().copied())
            .collect();
        stream.extend(encode(Kind::Record, "2026-r1.json", &binary));
        stream.extend(encode(Kind::Exit, "-", b"{\"code\":0}"));
        for chunk in [1, 2, 3, 7, 64, 4096] {
            let mut p = Parser::new();
            let mut frames = Vec::new();
            for c in stream.chunks(chunk) {
                frames.extend(p.push(c));
            }
            let frames: Vec<Frame> = frames.into_iter().map(|f| f.unwrap()).collect();
            assert_eq!(frames.len(), 4, "chunk {chunk}");
            assert_eq!(frames[0].kind, Kind::Hello);
            assert_eq!(frames[1].name, "-");
            assert_eq!(frames[1].payload, b"line one\nline two\n");
            assert_eq!(frames[2].name, "2026-r1.json");
            assert_eq!(frames[2].payload, binary);
            assert_eq!(frames[3].kind, Kind::Exit);
            assert_eq!(p.pending(), 0);
            assert!(p.noise_bytes >= 30);
        }
    }

    #[test]
    fn damaged_frames_are_reported_and_skipped() {
        let mut good = encode(Kind::Record, "a.json", b"{\"x\":1}");
        let mut bad = encode(Kind::Record, "b.json", b"{\"x\":2}");
        let n = bad.len();
        bad[n - 10] ^= 0x01; // flip a payload bit
        let mut stream = bad.clone();
        stream.append(&mut good);
        let mut p = Parser::new();
        let out = p.push(&stream);
        assert_eq!(out.len(), 2);
        assert!(out[0].as_ref().unwrap_err().0.contains("checksum mismatch"));
        assert_eq!(out[1].as_ref().unwrap().name, "a.json");

        // Truncated: the length promises more than arrives.
        let cut = encode(Kind::Record, "c.json", b"0123456789");
        let mut p = Parser::new();
        assert!(p.push(&cut[..cut.len() - 9]).is_empty());
        assert!(p.pending() > 0);

        // A malformed header does not stop the next frame.
        let mut p = Parser::new();
        let mut s = b"\n@@NUMALAB v1 bogus - 1 0\nx".to_vec();
        s.extend(encode(Kind::Exit, "-", b"{}"));
        let out = p.push(&s);
        assert!(out[0].is_err());
        assert_eq!(out[1].as_ref().unwrap().kind, Kind::Exit);
    }

    #[test]
    fn names() {
        assert_eq!(sanitize_name("a b/c.json"), "a_b_c.json");
        assert_eq!(sanitize_name(""), "-");
    }
}
