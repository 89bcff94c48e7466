//! A directory's entries read through its open descriptor, so nothing
//! between the caller's resolution and the read can change what is read.

use std::ffi::OsString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;

fn check(result: libc::c_long) -> std::io::Result<libc::c_long> {
    if result < 0 { Err(std::io::Error::last_os_error()) } else { Ok(result) }
}

/// The names in a directory (not `.` or `..`).
pub(crate) fn names(dir: &OwnedFd) -> std::io::Result<Vec<OsString>> {
    // SAFETY: fdopendir takes its own duplicate, closed by closedir.
    unsafe {
        let dup = check(libc::fcntl(dir.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 0) as _)? as i32;
        let stream = libc::fdopendir(dup);
        if stream.is_null() {
            let e = std::io::Error::last_os_error();
            libc::close(dup);
            return Err(e);
        }
        let mut found = Vec::new();
        loop {
            let next = libc::readdir(stream);
            if next.is_null() {
                break;
            }
            let name = std::ffi::CStr::from_ptr((*next).d_name.as_ptr()).to_bytes();
            if name != b"." && name != b".." {
                found.push(OsString::from_vec(name.to_vec()));
            }
        }
        libc::closedir(stream);
        found.sort();
        Ok(found)
    }
}
