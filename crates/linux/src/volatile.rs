//! Memory someone else writes while we read it: a BPF program's maps,
//! mapped into our address space (libbpf's skeletons hand them out as
//! plain Rust references), which the program in the kernel updates
//! behind the compiler's back.
//!
//! [`read`] copies such a value with a volatile load, so every call
//! reads the memory again rather than reusing an earlier load the
//! compiler could assume still holds. It takes a reference, so the
//! memory is known to be live, aligned and a `T` for as long as the call
//! needs it; what it cannot give is a value consistent across fields the
//! other side writes one by one: a protocol between the two (a field
//! written last, then a fence) must say when the rest is complete.

/// A copy of `*r`, loaded with a volatile read.
pub fn read<T: Copy>(r: &T) -> T {
    // SAFETY: a reference is non-null, aligned and points to an
    // initialised `T` for as long as it is borrowed, which covers this
    // call; `T: Copy`, so the bitwise copy owns nothing twice.
    unsafe { std::ptr::read_volatile(r) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq)]
    #[repr(C)]
    struct Rec {
        kind: i32,
        code: i64,
        text: [i8; 4],
    }

    #[test]
    fn copies_a_record_and_its_fields() {
        let mut r = Rec {
            kind: 0,
            code: -3,
            text: [104, 105, 0, 0],
        };
        assert_eq!(read(&r.kind), 0);
        r.kind = 2;
        assert_eq!(read(&r.kind), 2);
        assert_eq!(read(&r), r);
        assert_eq!(read(&r.text), [104, 105, 0, 0]);
        let stats = [1u64, 2, 3, 5, 8, 13, 21, 34];
        assert_eq!(read(&stats)[7], 34);
    }
}
