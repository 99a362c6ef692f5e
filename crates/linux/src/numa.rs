//! NUMA system calls.

use std::io;

/// The CPU the calling thread is running on (vDSO/rseq-backed, cheap).
pub fn current_cpu() -> io::Result<u32> {
    // SAFETY: sched_getcpu has no arguments and only returns a value.
    let r = unsafe { libc::sched_getcpu() };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as u32)
    }
}

/// Pin thread `tid` (0 = the caller) to `cpus`.
pub fn set_affinity(tid: i32, cpus: &[u32]) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain data; CPU_ZERO/CPU_SET write within it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_ZERO(&mut set);
        for &c in cpus {
            if (c as usize) >= libc::CPU_SETSIZE as usize {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("CPU {c} out of range"),
                ));
            }
            libc::CPU_SET(c as usize, &mut set);
        }
        if libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The CPUs thread `tid` (0 = the caller) may run on.
pub fn get_affinity(tid: i32) -> io::Result<Vec<u32>> {
    // SAFETY: as above; the kernel fills the set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok((0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .map(|c| c as u32)
            .collect())
    }
}

/// Restrict `cmd`'s process (and what it forks) to `cpus` before it
/// execs; CPUs beyond a CPU set's range are left out.
pub fn affinity_before_exec(cmd: &mut std::process::Command, cpus: Vec<u32>) {
    use std::os::unix::process::CommandExt;
    // SAFETY: sched_setaffinity is async-signal-safe; the closure touches
    // only its own copy of the list (allocated before the fork, only read
    // after it) and a set on the stack, which CPU_SET writes within.
    unsafe {
        cmd.pre_exec(move || {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_ZERO(&mut set);
            for &c in &cpus {
                if (c as usize) < libc::CPU_SETSIZE as usize {
                    libc::CPU_SET(c as usize, &mut set);
                }
            }
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

pub const MPOL_DEFAULT: i32 = 0;
pub const MPOL_PREFERRED: i32 = 1;
pub const MPOL_BIND: i32 = 2;
pub const MPOL_INTERLEAVE: i32 = 3;

const MASK_WORDS: usize = 16; // 1024 nodes

fn nodemask(nodes: &[u32]) -> io::Result<[libc::c_ulong; MASK_WORDS]> {
    let mut mask = [0 as libc::c_ulong; MASK_WORDS];
    let bits = libc::c_ulong::BITS as usize;
    for &n in nodes {
        let n = n as usize;
        if n >= MASK_WORDS * bits {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("node {n} out of range"),
            ));
        }
        mask[n / bits] |= 1 << (n % bits);
    }
    Ok(mask)
}

/// Set the calling thread's memory policy (`MPOL_DEFAULT` with no nodes
/// resets it).
pub fn set_mempolicy(mode: i32, nodes: &[u32]) -> io::Result<()> {
    let mask = nodemask(nodes)?;
    let maxnode = (MASK_WORDS * libc::c_ulong::BITS as usize) as libc::c_ulong;
    let (ptr, max) = if nodes.is_empty() {
        (std::ptr::null(), 0)
    } else {
        (mask.as_ptr(), maxnode)
    };
    // SAFETY: the mask outlives the call; maxnode matches its size in bits.
    let r = unsafe { libc::syscall(libc::SYS_set_mempolicy, mode, ptr, max) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Apply a memory policy to `[addr, addr+len)` (`flags` e.g. MPOL_MF_MOVE).
///
/// # Safety
/// `addr..addr+len` must be a mapping owned by the caller, page aligned.
pub(crate) unsafe fn mbind(
    addr: *mut u8,
    len: usize,
    mode: i32,
    nodes: &[u32],
    flags: u32,
) -> io::Result<()> {
    let mask = nodemask(nodes)?;
    let maxnode = (MASK_WORDS * libc::c_ulong::BITS as usize) as libc::c_ulong;
    let r = libc::syscall(
        libc::SYS_mbind,
        addr,
        len,
        mode,
        mask.as_ptr(),
        maxnode,
        flags,
    );
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

pub const MPOL_MF_MOVE: u32 = 1 << 1;

/// Node of each page in `pages` (addresses) of process `pid` (0 = self),
/// or a negative errno per page (e.g. -ENOENT: not present), via
/// `move_pages` with no target nodes.
pub fn page_nodes(pid: i32, pages: &[*const u8]) -> io::Result<Vec<i32>> {
    let mut status = vec![0i32; pages.len()];
    if pages.is_empty() {
        return Ok(status);
    }
    // SAFETY: pages and status have equal lengths; nodes is NULL (query).
    let r = unsafe {
        libc::syscall(
            libc::SYS_move_pages,
            pid,
            pages.len() as libc::c_ulong,
            pages.as_ptr(),
            std::ptr::null::<i32>(),
            status.as_mut_ptr(),
            0,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(status)
}

/// System page size.
pub fn page_size() -> usize {
    // SAFETY: sysconf is always safe to call.
    let r = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if r > 0 {
        r as usize
    } else {
        4096
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn current_cpu_is_in_affinity() {
        let cpu = current_cpu().unwrap();
        let allowed = get_affinity(0).unwrap();
        assert!(allowed.contains(&cpu), "{cpu} not in {allowed:?}");
    }

    #[test]
    fn mempolicy_round_trip_on_node0() {
        set_mempolicy(MPOL_BIND, &[0]).unwrap();
        let v = vec![1u8; 1 << 20];
        let pages: Vec<*const u8> = (0..v.len())
            .step_by(page_size())
            .map(|i| &v[i] as *const u8)
            .collect();
        let nodes = page_nodes(0, &pages).unwrap();
        set_mempolicy(MPOL_DEFAULT, &[]).unwrap();
        assert!(nodes.iter().all(|&n| n == 0), "{nodes:?}");
        assert!(
            set_mempolicy(MPOL_BIND, &[999]).is_err(),
            "binding to a missing node fails"
        );
    }
}

/// The page-aligned part of `buf`: (start address, length), whole pages
/// only.
fn whole_pages(buf: &[u8]) -> (usize, usize) {
    whole_pages_of(buf.as_ptr() as usize, buf.len())
}

fn whole_pages_of(addr: usize, bytes: usize) -> (usize, usize) {
    let page = page_size();
    let start = addr.next_multiple_of(page);
    let end = (addr + bytes) / page * page;
    (start, end.saturating_sub(start))
}

/// Move the whole pages of `buf` to `node` (`move_pages` of the calling
/// process); returns how many landed there. The kernel checks every
/// address, and the memory stays the caller's, so this is safe.
pub fn move_to_node(buf: &[u8], node: u32) -> io::Result<usize> {
    let page = page_size();
    let (start, len) = whole_pages(buf);
    let pages: Vec<*const u8> = (0..len / page)
        .map(|i| (start + i * page) as *const u8)
        .collect();
    if pages.is_empty() {
        return Ok(0);
    }
    let nodes = vec![node as i32; pages.len()];
    let mut status = vec![0i32; pages.len()];
    // SAFETY: pages, nodes and status have equal lengths; the pages are
    // the caller's own mapped memory (the kernel checks them anyway).
    let r = unsafe {
        libc::syscall(
            libc::SYS_move_pages,
            0,
            pages.len() as libc::c_ulong,
            pages.as_ptr(),
            nodes.as_ptr(),
            status.as_mut_ptr(),
            MPOL_MF_MOVE as libc::c_int,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(status.iter().filter(|&&s| s == node as i32).count())
}

/// Bind the whole pages of `buf` to `node` as the mapping's own policy
/// (`mbind(MPOL_BIND)`, no move): unlike the thread's policy, which
/// NUMA balancing ignores once reset, a VMA bound without `MPOL_F_MOF`
/// is never scanned or migrated by it (`vma_policy_mof`).
pub fn bind_to_node<T>(buf: &[T], node: u32) -> io::Result<()> {
    const MPOL_BIND: i32 = 2;
    let (start, len) = whole_pages_of(buf.as_ptr() as usize, std::mem::size_of_val(buf));
    if len == 0 {
        return Ok(());
    }
    // SAFETY: whole pages inside memory the caller holds; a policy
    // change moves nothing and leaves the contents as they are.
    unsafe { mbind(start as *mut u8, len, MPOL_BIND, &[node], 0) }
}

/// Time taking away all access to the whole pages of `buf` (`mprotect`
/// to `PROT_NONE`, the page-table walk NUMA balancing's change_prot_numa
/// does), then give it back (not timed). Holding `buf` mutably, nothing
/// else of the caller's can touch it in between.
pub fn time_protect_none(buf: &mut [u8]) -> io::Result<std::time::Duration> {
    let (start, len) = whole_pages(buf);
    if len == 0 {
        return Ok(std::time::Duration::ZERO);
    }
    let t0 = std::time::Instant::now();
    // SAFETY: whole pages inside a slice the caller holds mutably; access
    // is restored below before the slice can be used again.
    let r = unsafe { libc::mprotect(start as *mut libc::c_void, len, libc::PROT_NONE) };
    let t = t0.elapsed();
    // SAFETY: as above; the slice was readable and writable.
    let back = unsafe {
        libc::mprotect(
            start as *mut libc::c_void,
            len,
            libc::PROT_READ | libc::PROT_WRITE,
        )
    };
    if r != 0 || back != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(t)
}

#[cfg(test)]
mod page_tests {
    use super::*;

    #[test]
    fn pages_move_and_protections_come_back() {
        let mut v = vec![1u8; 4 << 20];
        let node = page_nodes(0, &[v[4096..].as_ptr()]).unwrap()[0].max(0) as u32;
        let moved = move_to_node(&v, node).unwrap();
        assert!(moved >= (4 << 20) / page_size() - 1, "{moved}");
        bind_to_node(&v, node).unwrap();
        let t = time_protect_none(&mut v).unwrap();
        assert!(t.as_nanos() > 0);
        v[12345] = 7;
        assert_eq!(v[12345], 7, "writable again");
    }
}
