//! Reading and writing one file as the workload, for the control plane:
//! the workload's permissions apply, parents are made on write, and a
//! write replaces the file whole (written beside it, then renamed).

use std::io::Write;
use std::path::Path;

use base64::Engine as _;
use sluice_protocol::{FileContents, FileRead, FileWrite, RefusalCode};

/// Why a file call was refused.
#[derive(Debug)]
pub struct FileRefusal {
    pub code: RefusalCode,
    pub message: &'static str,
}

fn refusal(code: RefusalCode, message: &'static str) -> FileRefusal {
    FileRefusal { code, message }
}

fn io_refusal(e: &std::io::Error) -> FileRefusal {
    match e.kind() {
        std::io::ErrorKind::NotFound => refusal(RefusalCode::FileNotFound, "no such file"),
        std::io::ErrorKind::PermissionDenied => refusal(RefusalCode::PermissionDenied, "permission denied"),
        _ => refusal(RefusalCode::Internal, "the file could not be used"),
    }
}

/// Runs on the workload's file thread.
pub fn read(request: &FileRead) -> Result<FileContents, FileRefusal> {
    let path = Path::new(&request.path);
    let metadata = std::fs::metadata(path).map_err(|e| io_refusal(&e))?;
    if !metadata.is_file() {
        return Err(refusal(RefusalCode::NotAFile, "not a regular file"));
    }
    if metadata.len() > request.max_bytes {
        return Err(refusal(RefusalCode::FileTooLarge, "the file is over the limit"));
    }
    let mut bytes = Vec::with_capacity(metadata.len() as usize);
    let file = std::fs::File::open(path).map_err(|e| io_refusal(&e))?;
    // It may have grown since: never read past the limit.
    std::io::Read::read_to_end(&mut std::io::Read::take(file, request.max_bytes + 1), &mut bytes)
        .map_err(|e| io_refusal(&e))?;
    if bytes.len() as u64 > request.max_bytes {
        return Err(refusal(RefusalCode::FileTooLarge, "the file is over the limit"));
    }
    Ok(FileContents {
        size_bytes: bytes.len() as u64,
        contents_b64: base64::engine::general_purpose::STANDARD.encode(&bytes),
    })
}

/// Runs on the workload's file thread.
pub fn write(request: &FileWrite) -> Result<(), FileRefusal> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(&request.contents_b64)
        .map_err(|_| refusal(RefusalCode::Invalid, "contentsB64 is not base64"))?;
    let path = Path::new(&request.path);
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(refusal(RefusalCode::NotAFile, "not a regular file"));
    };
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
        return Err(refusal(RefusalCode::NotAFile, "not a regular file"));
    }
    std::fs::create_dir_all(parent).map_err(|e| match e.kind() {
        // A parent that is a file.
        std::io::ErrorKind::AlreadyExists | std::io::ErrorKind::NotADirectory => {
            refusal(RefusalCode::NotAFile, "not a regular file")
        }
        _ => io_refusal(&e),
    })?;
    let tmp = parent.join(format!(".{}.sluice-write", name.to_string_lossy()));
    let result = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(&bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(io_refusal(&e));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_read_written_replaced_and_refused_by_kind() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/c.bin").display().to_string();
        let contents = base64::engine::general_purpose::STANDARD.encode([0u8, 1, 2, 255]);
        write(&FileWrite { path: path.clone(), contents_b64: contents.clone() }).unwrap();
        let read_back = read(&FileRead { path: path.clone(), max_bytes: 10 }).unwrap();
        assert_eq!((read_back.contents_b64, read_back.size_bytes), (contents, 4));
        write(&FileWrite { path: path.clone(), contents_b64: "eA==".into() }).unwrap();
        assert_eq!(read(&FileRead { path: path.clone(), max_bytes: 10 }).unwrap().size_bytes, 1, "replaced");
        assert_eq!(read(&FileRead { path: path.clone(), max_bytes: 0 }).unwrap_err().code, RefusalCode::FileTooLarge);
        let missing = dir.path().join("nope").display().to_string();
        assert_eq!(read(&FileRead { path: missing, max_bytes: 10 }).unwrap_err().code, RefusalCode::FileNotFound);
        let a_dir = dir.path().join("a").display().to_string();
        assert_eq!(read(&FileRead { path: a_dir.clone(), max_bytes: 10 }).unwrap_err().code, RefusalCode::NotAFile);
        let onto_dir = FileWrite { path: a_dir, contents_b64: "eA==".into() };
        assert_eq!(write(&onto_dir).unwrap_err().code, RefusalCode::NotAFile);
        let under_file = FileWrite { path: format!("{path}/x"), contents_b64: "eA==".into() };
        assert_eq!(write(&under_file).unwrap_err().code, RefusalCode::NotAFile);
    }
}
