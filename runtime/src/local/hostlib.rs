//! Host programs (the daemon, `setpriv`) run inside an image's root, which
//! may have no libc at all: through the host's own dynamic loader and
//! libraries, mounted read-only at [`HOST_MOUNT`].

use std::path::{Path, PathBuf};

/// Where the host's `/usr`, `/lib` and `/lib64` appear inside an image's root.
pub(super) const HOST_MOUNT: &str = "/run/sluice-host";
/// The host directories mounted there.
pub(super) const HOST_DIRS: &[&str] = &["/usr", "/lib", "/lib64"];

/// How to start a host binary inside an image's root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum HostLoader {
    /// Statically linked: it runs by itself.
    Static,
    /// Through the host's loader (its path inside) and library directories.
    Dynamic { loader: String, library_path: String },
}

impl HostLoader {
    /// For `binary` on this host (its ELF interpreter says which loader).
    pub(super) fn for_binary(binary: &Path) -> std::io::Result<HostLoader> {
        let Some(interpreter) = elf_interpreter(&std::fs::read(binary)?) else { return Ok(HostLoader::Static) };
        let real = std::fs::canonicalize(&interpreter)?;
        let mut dirs: Vec<PathBuf> = Vec::new();
        if let Some(dir) = real.parent() {
            dirs.push(dir.to_path_buf());
            if let Some(triplet) = dir.file_name() {
                dirs.extend([Path::new("/lib").join(triplet), Path::new("/usr/lib").join(triplet)]);
            }
        }
        dirs.extend([PathBuf::from("/lib"), PathBuf::from("/usr/lib")]);
        let mut inside: Vec<String> = Vec::new();
        for dir in dirs.iter().filter(|d| d.is_dir()) {
            let mapped = inside_path(dir);
            if !inside.contains(&mapped) {
                inside.push(mapped);
            }
        }
        Ok(HostLoader::Dynamic { loader: inside_path(&real), library_path: inside.join(":") })
    }

    /// The argv that runs `program` (a path inside the root).
    pub(super) fn argv(&self, program: &str) -> Vec<String> {
        match self {
            HostLoader::Static => vec![program.to_owned()],
            HostLoader::Dynamic { loader, library_path } => {
                vec![loader.clone(), "--library-path".into(), library_path.clone(), program.to_owned()]
            }
        }
    }
}

/// Whether `binary` runs by itself (no ELF interpreter): what a container
/// of any image can run.
pub fn statically_linked(binary: &Path) -> std::io::Result<bool> {
    Ok(elf_interpreter(&std::fs::read(binary)?).is_none())
}

/// A host path as it appears under [`HOST_MOUNT`].
pub(super) fn inside_path(host: &Path) -> String {
    format!("{HOST_MOUNT}{}", host.display())
}

/// The `PT_INTERP` of a 64-bit little-endian ELF file, if it has one.
fn elf_interpreter(elf: &[u8]) -> Option<PathBuf> {
    const PT_INTERP: u32 = 3;
    if elf.get(..6)? != b"\x7fELF\x02\x01" {
        return None;
    }
    let u16_at = |at: usize| Some(u16::from_le_bytes(elf.get(at..at + 2)?.try_into().ok()?));
    let u32_at = |at: usize| Some(u32::from_le_bytes(elf.get(at..at + 4)?.try_into().ok()?));
    let u64_at = |at: usize| Some(u64::from_le_bytes(elf.get(at..at + 8)?.try_into().ok()?));
    let table = u64_at(0x20)? as usize;
    let size = u16_at(0x36)? as usize;
    for index in 0..u16_at(0x38)? as usize {
        let header = table + index * size;
        if u32_at(header)? == PT_INTERP {
            let offset = u64_at(header + 8)? as usize;
            let length = u64_at(header + 32)? as usize;
            let text = elf.get(offset..offset + length)?;
            let text = text.strip_suffix(b"\0").unwrap_or(text);
            return Some(PathBuf::from(std::str::from_utf8(text).ok()?));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dynamic_binary_runs_through_the_hosts_loader_mapped_inside() {
        let loader = HostLoader::for_binary(&std::env::current_exe().unwrap()).unwrap();
        let HostLoader::Dynamic { loader, library_path } = loader else { panic!("the test binary is dynamic") };
        assert!(loader.starts_with(HOST_MOUNT) && loader.contains("ld-"), "{loader}");
        let host_loader = Path::new(loader.strip_prefix(HOST_MOUNT).unwrap());
        assert!(host_loader.is_file());
        assert!(library_path.split(':').all(|d| d.starts_with(HOST_MOUNT)), "{library_path}");
        let argv = HostLoader::Dynamic { loader, library_path }.argv("/run/sluiced");
        assert_eq!((argv[1].as_str(), argv[3].as_str()), ("--library-path", "/run/sluiced"));
        assert_eq!(elf_interpreter(b"#!/bin/sh\n"), None);
        assert_eq!(HostLoader::Static.argv("/x"), vec!["/x".to_owned()]);
    }
}
