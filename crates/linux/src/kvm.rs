//! KVM, as far as asking whether a VM can be created.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const KVM_GET_API_VERSION: libc::c_ulong = 0xAE00;
const KVM_CREATE_VM: libc::c_ulong = 0xAE01;

/// The KVM API version of the KVM device opened as `kvm` (12 on every
/// kernel since 2.6.22), `KVM_GET_API_VERSION`.
pub fn api_version(kvm: &File) -> io::Result<i32> {
    // SAFETY: KVM_GET_API_VERSION takes no argument (0) and only returns
    // a value; the descriptor is borrowed for the call.
    let v = unsafe { libc::ioctl(kvm.as_raw_fd(), KVM_GET_API_VERSION as _, 0) };
    if v < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(v)
}

/// Create a VM on the KVM device opened as `kvm` (`KVM_CREATE_VM`,
/// machine type 0): its descriptor, closed on drop.
pub fn create_vm(kvm: &File) -> io::Result<OwnedFd> {
    // SAFETY: KVM_CREATE_VM takes an integer machine type, not a pointer,
    // and returns a new descriptor; `kvm` is borrowed for the call.
    let vm = unsafe { libc::ioctl(kvm.as_raw_fd(), KVM_CREATE_VM as _, 0) };
    if vm < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a descriptor the kernel just created for us, owned by
    // nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(vm) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_no_kvm() {
        let f = tempfile::tempfile().unwrap();
        assert!(api_version(&f).is_err());
        assert!(create_vm(&f).is_err());
    }
}
