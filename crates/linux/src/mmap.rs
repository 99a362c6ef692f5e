//! Anonymous memory mappings: memory a benchmark fills, binds to NUMA
//! nodes and asks the kernel about, page by page.
//!
//! A [`Mapping`] never lends its memory out as a Rust reference while it
//! is shared: threads holding it by `&` only `memset` ranges of it (the
//! C library's, as the original C benchmarks do) or have the kernel act
//! on it (`mbind`, the addresses of its pages for `move_pages`); reading
//! it back, or writing it word by word, needs it `&mut`.

use std::io;
use std::ptr::NonNull;

/// An anonymous private read-write mapping, unmapped on drop.
#[derive(Debug)]
pub struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain memory owned by this value; nothing in it
// is tied to a thread. Shared (`&`) access only writes through `memset`
// or asks the kernel to act on it (see the module's comment and `fill`).
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Map `len` bytes of zeroed memory (`mmap` of `MAP_PRIVATE |
    /// MAP_ANONYMOUS`), the pages allocated on first touch.
    pub fn new(len: usize) -> io::Result<Mapping> {
        Mapping::map(len, 0)
    }

    /// As [`Mapping::new`], without reserving swap space for it
    /// (`MAP_NORESERVE`), as `perf bench numa mem` maps its buffers.
    pub fn new_noreserve(len: usize) -> io::Result<Mapping> {
        Mapping::map(len, libc::MAP_NORESERVE)
    }

    fn map(len: usize, flags: libc::c_int) -> io::Result<Mapping> {
        // SAFETY: a fresh anonymous mapping at an address the kernel
        // chooses, so no existing memory is touched; the result is checked.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | flags,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr = NonNull::new(ptr.cast::<u8>()).ok_or_else(|| io::Error::other("mmap at 0"))?;
        Ok(Mapping { ptr, len })
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it has no bytes (never: the kernel maps none such).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The address of its first byte.
    pub fn addr(&self) -> usize {
        self.ptr.as_ptr() as usize
    }

    /// Ask for base pages only (`madvise(MADV_NOHUGEPAGE)`), so page
    /// counts mean what they say; an error on a kernel without THP.
    pub fn no_huge_pages(&self) -> io::Result<()> {
        // SAFETY: advice on this mapping's own range; it changes how the
        // kernel backs the pages, not their contents.
        let r = unsafe { libc::madvise(self.ptr.as_ptr().cast(), self.len, libc::MADV_NOHUGEPAGE) };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// The range `[off, off + len)` clipped to the mapping: (start, length).
    fn clip(&self, off: usize, len: usize) -> (usize, usize) {
        let end = off.saturating_add(len).min(self.len);
        let a = off.min(end);
        (a, end - a)
    }

    /// Set `[off, off + len)` (clipped to the mapping) to `value` with one
    /// call of the C library's `memset`. Returns the bytes set.
    ///
    /// Threads sharing the mapping may fill overlapping ranges at once,
    /// as the threads of `perf bench numa mem` do: racing stores of bytes
    /// nobody reads while they are shared, made by foreign code, to
    /// memory no Rust reference points into (reading it needs `&mut`).
    pub fn fill(&self, off: usize, len: usize, value: u8) -> usize {
        let (a, n) = self.clip(off, len);
        // SAFETY: [a, a + n) lies within the mapping, which lives as long
        // as `self`; no Rust reference to its bytes exists while it is
        // shared (see above), so a concurrent fill breaks no aliasing.
        unsafe { libc::memset(self.ptr.as_ptr().add(a).cast(), value as libc::c_int, n) };
        n
    }

    /// Apply a memory policy (`mbind`) to `[off, off + len)`, which must
    /// lie within the mapping (an `InvalidInput` error otherwise), page
    /// aligned (the kernel's `EINVAL` otherwise).
    pub fn bind(&self, off: usize, len: usize, mode: i32, nodes: &[u32]) -> io::Result<()> {
        if len == 0 {
            return Ok(());
        }
        if off.checked_add(len).is_none_or(|end| end > self.len) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("bytes {off}..+{len} are beyond a mapping of {}", self.len),
            ));
        }
        // SAFETY: a sub-range of this mapping, checked above; a policy
        // changes where pages live, never their contents.
        unsafe { crate::numa::mbind(self.ptr.as_ptr().add(off), len, mode, nodes, 0) }
    }

    /// The address of each `page`-sized step of the mapping, for
    /// [`crate::numa::page_nodes`].
    pub fn page_addrs(&self, page: usize) -> Vec<*const u8> {
        (0..self.len)
            .step_by(page.max(1))
            .map(|o| self.ptr.as_ptr().wrapping_add(o) as *const u8)
            .collect()
    }

    /// Write `value(i)` to every `step`-th 64-bit word `i` of the mapping,
    /// each a volatile store (not optimised away, not merged).
    pub fn write_words(&mut self, step: usize, value: impl Fn(usize) -> u64) {
        let words = self.ptr.as_ptr().cast::<u64>();
        let n = self.len / 8;
        let mut i = 0;
        while i < n {
            // SAFETY: i < len / 8, so the word lies within the mapping,
            // which is page aligned and so aligned for u64; `&mut self`
            // excludes every other access.
            unsafe { std::ptr::write_volatile(words.add(i), value(i)) };
            i += step.max(1);
        }
    }

    /// Write `value` to the first byte of every `page`-sized step of the
    /// mapping (volatile): every page touched, whatever its size.
    pub fn touch(&mut self, page: usize, value: u8) {
        for o in (0..self.len).step_by(page.max(1)) {
            // SAFETY: o < len, within the mapping; `&mut self` excludes
            // every other access.
            unsafe { std::ptr::write_volatile(self.ptr.as_ptr().add(o), value) };
        }
    }

    /// Its bytes, as they are.
    pub fn to_vec(&mut self) -> Vec<u8> {
        // SAFETY: the whole mapping, readable and initialised (anonymous
        // memory reads as zero until written); `&mut self` excludes any
        // write while the slice lives.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }.to_vec()
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what `map` mapped, once; no reference
        // into it outlives `self`.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

/// Set every byte of `words` to `byte` with one `memset` (a fill of
/// `u64`s is a loop of stores; the benchmarks time the C library's
/// `memset`).
pub fn fill_bytes(words: &mut [u64], byte: u8) {
    // SAFETY: the slice's own pointer and length in bytes; any byte
    // pattern is a valid u64, and `&mut` excludes every other access.
    unsafe { std::ptr::write_bytes(words.as_mut_ptr(), byte, words.len()) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_clips_and_writes_read_back() {
        let page = crate::numa::page_size();
        let mut m = Mapping::new_noreserve(4 * page).unwrap();
        assert_eq!(m.fill(0, 4 * page, 7), 4 * page);
        assert_eq!(m.fill(page, 2 * page, 0), 2 * page);
        assert_eq!(m.fill(3 * page, 2 * page, 0), page);
        assert_eq!(m.fill(5 * page, page, 0), 0);
        let v = m.to_vec();
        assert!(v[..page].iter().all(|&b| b == 7));
        assert!(v[page..].iter().all(|&b| b == 0));
        m.write_words(64, |i| i as u64 + 1);
        m.touch(page, 9);
        let v = m.to_vec();
        assert_eq!(v[0], 9);
        assert_eq!(v[512], 65, "word 64 holds 65");
        assert_eq!(m.page_addrs(page).len(), 4);
        assert_eq!(m.page_addrs(page)[1] as usize, m.addr() + page);
        let mut w = [0u64; 3];
        fill_bytes(&mut w, 0xab);
        assert_eq!(w, [0xabab_abab_abab_abab; 3]);
        assert!(m.bind(0, 8 * page, crate::numa::MPOL_BIND, &[0]).is_err());
        m.bind(0, page, crate::numa::MPOL_DEFAULT, &[]).unwrap();
        let _ = m.no_huge_pages();
    }
}
